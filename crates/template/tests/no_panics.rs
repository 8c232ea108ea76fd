//! Whatever the text, parsing and rendering give a value or an error, never a panic.

use cfn_template::{Inputs, Template};
use proptest::prelude::*;

/// Pieces of CloudFormation YAML, so the generated texts get past the parser often.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "Resources:\n",
        "  R:\n",
        "    Metadata:\n",
        "      a: ",
        "!Ref ",
        "!Sub ",
        "!GetAtt ",
        "!If ",
        "!Select ",
        "!Split ",
        "!Join ",
        "!FindInMap ",
        "!Cidr ",
        "!Equals ",
        "!Not ",
        "!Condition ",
        "!Base64 ",
        "!GetAZs ",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "'${X}'",
        "'${!Y}'",
        "R.Arn",
        "AWS::NoValue",
        "AWS::Region",
        "C",
        "0",
        "-1",
        "10.0.0.0/8",
        "\n",
        "Conditions:\n",
        "  C: ",
        "Parameters:\n",
        "  X: {Type: CommaDelimitedList, Default: 'a,b'}\n",
        "Mappings:\n",
        "  M: {k: {v: x}}\n",
        "&a ",
        "*a ",
        "~",
        "0x",
        "1.5",
        "'",
        "\"",
    ])
}

proptest! {
    #[test]
    fn yaml_pieces_never_panic(pieces in prop::collection::vec(piece(), 0..40)) {
        let text: String = pieces.concat();
        if let Ok(template) = Template::parse("t.yaml", &text) {
            let _ = template.metadata("R", &Inputs::default());
            let _ = template.resources_with_init();
        }
    }

    #[test]
    fn any_text_never_panics(text in "\\PC{0,200}") {
        if let Ok(template) = Template::parse("t", &text) {
            let _ = template.metadata("R", &Inputs::default());
        }
    }
}
