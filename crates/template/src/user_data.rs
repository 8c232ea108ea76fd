//! The text a template gives an instance without resolving it: the user data of
//! `AWS::EC2::Instance`, `AWS::EC2::LaunchTemplate` and
//! `AWS::AutoScaling::LaunchConfiguration`, and the content of Init's files, with
//! `Fn::Sub` and `Fn::Join` flattened into one text.
//!
//! Nothing is resolved: a value only a stack knows stays a placeholder that can be told
//! from text, `${Name}` for `Ref` and the variables of `Fn::Sub` (`{"Ref": "AWS::Region"}`
//! and `${AWS::Region}` both give `${AWS::Region}`), `${Resource.Attribute}` for
//! `Fn::GetAtt`, `${Fn::If}` and the like for the other functions. Each piece of text
//! keeps the template line it came from, so that a finding about a script line can point
//! at the line of the template that wrote it: line N of a YAML block scalar (`|`) is
//! template line start + 1 + N, a `Fn::Join` item is at its own position, a JSON string
//! is on the line of its opening quote.

use crate::Template;
use crate::limits::MAX_DEPTH;
use base64::Engine;
use serde_json::Value;

/// The most bytes one flattened text may hold: `Fn::Sub` variables repeat their value,
/// and nested, repeat it again; real user data is a few kilobytes (EC2 takes 16 KiB).
pub const MAX_TEXT: usize = 1 << 20;

/// A flattened text and where each piece of it is in the template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text {
    pub text: String,
    pieces: Vec<Piece>,
    /// The byte offset of each newline of `text`, so that a line is found by a binary
    /// search, not by counting (one count per finding made validate quadratic).
    newlines: Vec<usize>,
    /// Cut at [`MAX_TEXT`].
    pub truncated: bool,
}

/// A piece of text starting at byte `start` of the flattened text, from template line
/// `line`; in a block scalar each newline is one more template line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    start: usize,
    line: usize,
    block: bool,
}

impl Text {
    /// The template line of byte `offset` of the text.
    pub fn line_of(&self, offset: usize) -> Option<usize> {
        let index = self.pieces.partition_point(|p| p.start <= offset).checked_sub(1)?;
        let piece = self.pieces[index];
        let end = offset.min(self.text.len());
        let newlines_before = |at: usize| self.newlines.partition_point(|&n| n < at);
        Some(match piece.block {
            true => piece.line + newlines_before(end).saturating_sub(newlines_before(piece.start)),
            false => piece.line,
        })
    }

    fn push(&mut self, text: &str, line: Option<usize>, block: bool) {
        if text.is_empty() || self.truncated {
            return;
        }
        let room = MAX_TEXT.saturating_sub(self.text.len());
        let text = match text.len() > room {
            true => {
                self.truncated = true;
                let mut cut = room;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                &text[..cut]
            }
            false => text,
        };
        if let Some(line) = line {
            self.pieces.push(Piece { start: self.text.len(), line, block });
        }
        let start = self.text.len();
        self.newlines.extend(text.match_indices('\n').map(|(at, _)| start + at));
        self.text.push_str(text);
    }
}

/// The user data of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserData {
    pub resource: String,
    /// The JSON pointer of the UserData value.
    pub pointer: String,
    pub script: Text,
}

/// Where each resource type keeps its user data.
const USER_DATA: &[(&str, &str)] = &[
    ("AWS::EC2::Instance", "/Properties/UserData"),
    ("AWS::EC2::LaunchTemplate", "/Properties/LaunchTemplateData/UserData"),
    ("AWS::AutoScaling::LaunchConfiguration", "/Properties/UserData"),
];

/// The user data of every instance, launch template and launch configuration, in
/// template order; `source` is the text the template was parsed from.
pub fn scripts(template: &Template, source: &str) -> Vec<UserData> {
    let Some(resources) = template.value().get("Resources").and_then(Value::as_object) else { return Vec::new() };
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    for (name, resource) in resources {
        let kind = resource.get("Type").and_then(Value::as_str).unwrap_or("");
        let Some((_, within)) = USER_DATA.iter().find(|(t, _)| *t == kind) else { continue };
        let Some(value) = resource.pointer(within) else { continue };
        let pointer = format!("/Resources/{}{within}", escape(name));
        let mut flattener = Flattener { template, lines: &lines, out: Text::default() };
        match value.as_object().and_then(|m| m.get("Fn::Base64")) {
            Some(inner) => flattener.value(inner, &format!("{pointer}/Fn::Base64"), 0),
            // Already encoded: its text, when it is base64 of UTF-8.
            None => {
                let decoded = value.as_str().and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
                let Some(text) = decoded.and_then(|bytes| String::from_utf8(bytes).ok()) else { continue };
                let line = template.position(&pointer).map(|p| p.line);
                flattener.out.push(&text, line, false);
            }
        }
        found.push(UserData { resource: name.clone(), pointer, script: flattener.out });
    }
    found
}

/// `value` (a string, `Fn::Sub`, `Fn::Join`, …) at `pointer` flattened into one text.
pub fn flatten(template: &Template, source: &str, value: &Value, pointer: &str) -> Text {
    let lines: Vec<&str> = source.lines().collect();
    let mut flattener = Flattener { template, lines: &lines, out: Text::default() };
    flattener.value(value, pointer, 0);
    flattener.out
}

/// A JSON pointer segment (RFC 6901).
pub fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

struct Flattener<'a> {
    template: &'a Template,
    /// The template's text by line, to tell a block scalar.
    lines: &'a [&'a str],
    out: Text,
}

impl Flattener<'_> {
    /// The template line the string `text` at `pointer` starts on, and whether it is a
    /// YAML block scalar, whose lines are template lines. The YAML reader places a block
    /// scalar at its first non-blank character (at its tag, when it has one): the
    /// indicator `|` or `>` ends the line before its first line.
    fn start(&self, pointer: &str, text: &str) -> (Option<usize>, bool) {
        let Some(position) = self.template.position(pointer) else { return (None, false) };
        let line_text = |line: usize| self.lines.get(line.wrapping_sub(1)).copied().unwrap_or("");
        let rest: String = line_text(position.line).chars().skip(position.column.saturating_sub(1)).collect();
        if let Some(tagged) = rest.strip_prefix('!') {
            let after = tagged.trim_start_matches(|c: char| !c.is_whitespace()).trim_start();
            return match after.starts_with('|') || after.starts_with('>') {
                true => (Some(position.line + 1), true),
                false => (Some(position.line), false),
            };
        }
        if rest.starts_with('"') || rest.starts_with('\'') {
            return (Some(position.line), false);
        }
        let blank = text.chars().take_while(|&c| c == '\n').count();
        let first = position.line.saturating_sub(blank);
        let indicator = line_text(first.wrapping_sub(1));
        let indicator = indicator.split(" #").next().unwrap_or("").trim_end();
        let indicator = indicator.trim_end_matches(|c: char| c.is_ascii_digit() || c == '+' || c == '-');
        match first > 1 && (indicator.ends_with('|') || indicator.ends_with('>')) {
            true => (Some(first), true),
            false => (Some(position.line), false),
        }
    }

    fn placeholder(&mut self, name: &str, pointer: &str) {
        let line = self.template.position(pointer).map(|p| p.line);
        self.out.push(&format!("${{{name}}}"), line, false);
    }

    fn value(&mut self, value: &Value, pointer: &str, depth: usize) {
        if depth > MAX_DEPTH || self.out.truncated {
            return;
        }
        match value {
            Value::String(text) => {
                let (line, block) = self.start(pointer, text);
                self.out.push(text, line, block);
            }
            Value::Number(n) => self.placeholder_free(&n.to_string(), pointer),
            Value::Bool(b) => self.placeholder_free(&b.to_string(), pointer),
            Value::Object(map) if map.len() == 1 => {
                let (key, argument) = map.iter().next().expect("one entry");
                let at = format!("{pointer}/{}", escape(key));
                match (key.as_str(), argument) {
                    ("Ref", Value::String(name)) => self.placeholder(name, pointer),
                    ("Fn::GetAtt", Value::Array(parts)) => {
                        let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                        self.placeholder(&parts.join("."), pointer)
                    }
                    ("Fn::GetAtt", Value::String(name)) => self.placeholder(name, pointer),
                    ("Fn::Sub", Value::String(text)) => self.sub(text, &at, None, depth),
                    ("Fn::Sub", Value::Array(items)) if items.len() == 2 => match (&items[0], &items[1]) {
                        (Value::String(text), Value::Object(variables)) => {
                            self.sub(text, &format!("{at}/0"), Some((variables, &format!("{at}/1"))), depth)
                        }
                        _ => self.placeholder(key, pointer),
                    },
                    ("Fn::Join", Value::Array(items)) if items.len() == 2 => match (&items[0], &items[1]) {
                        (Value::String(delimiter), Value::Array(parts)) => {
                            for (i, part) in parts.iter().enumerate() {
                                if i > 0 {
                                    let (line, _) = self.start(&format!("{at}/0"), delimiter);
                                    self.out.push(delimiter, line, false);
                                }
                                self.value(part, &format!("{at}/1/{i}"), depth + 1);
                            }
                        }
                        _ => self.placeholder(key, pointer),
                    },
                    _ => self.placeholder(key, pointer),
                }
            }
            _ => self.placeholder("?", pointer),
        }
    }

    fn placeholder_free(&mut self, text: &str, pointer: &str) {
        let line = self.template.position(pointer).map(|p| p.line);
        self.out.push(text, line, false);
    }

    /// `Fn::Sub`'s string at `pointer`: its text, its variables given a value by
    /// `variables` (a literal, or flattened in turn) or left as `${Name}`.
    fn sub(
        &mut self,
        text: &str,
        pointer: &str,
        variables: Option<(&serde_json::Map<String, Value>, &str)>,
        depth: usize,
    ) {
        let (start, block) = self.start(pointer, text);
        let mut newlines = 0;
        for part in crate::sub::parts(text) {
            match part {
                crate::sub::Part::Text(text) => {
                    self.out.push(text, start.map(|line| line + if block { newlines } else { 0 }), block);
                    newlines += text.matches('\n').count();
                }
                crate::sub::Part::Variable(name) => match variables.and_then(|(map, at)| Some((map.get(name)?, at))) {
                    Some((value, at)) => self.value(value, &format!("{at}/{}", escape(name)), depth + 1),
                    None => {
                        let line = start.map(|line| line + if block { newlines } else { 0 });
                        self.out.push(&format!("${{{name}}}"), line, false);
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(source: &str) -> Text {
        let template = Template::parse("t", source).unwrap();
        scripts(&template, source).remove(0).script
    }

    /// The template line of the first occurrence of `needle` in the flattened text.
    fn line(text: &Text, needle: &str) -> usize {
        text.line_of(text.text.find(needle).unwrap()).unwrap()
    }

    #[test]
    fn a_block_scalar_sub_keeps_each_line_and_its_template_line() {
        let source = "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData: !Base64\n        Fn::Sub: |\n          #!/bin/bash\n          cfn-init -s ${AWS::StackName} -r I\n          cfn-signal -e $? --region ${AWS::Region}\n";
        let text = first(source);
        assert_eq!(
            text.text,
            "#!/bin/bash\ncfn-init -s ${AWS::StackName} -r I\ncfn-signal -e $? --region ${AWS::Region}\n"
        );
        assert_eq!(line(&text, "#!/bin/bash"), 7);
        assert_eq!(line(&text, "-r I"), 8);
        assert_eq!(line(&text, "--region"), 9);
    }

    #[test]
    fn the_short_form_sub_block_is_read_too() {
        let source = "Resources:\n  I:\n    Type: AWS::AutoScaling::LaunchConfiguration\n    Properties:\n      UserData:\n        Fn::Base64: !Sub |\n          a\n          b ${X}\n";
        let text = first(source);
        assert_eq!(text.text, "a\nb ${X}\n");
        assert_eq!(line(&text, "b "), 8);
        assert_eq!(line(&text, "${X}"), 8);
    }

    #[test]
    fn join_items_are_at_their_own_lines_and_refs_are_placeholders() {
        let source = "Resources:\n  I:\n    Type: AWS::EC2::LaunchTemplate\n    Properties:\n      LaunchTemplateData:\n        UserData: !Base64\n          Fn::Join:\n            - ''\n            - - \"cfn-init -s \"\n              - !Ref AWS::StackName\n              - \" -r I --region \"\n              - Ref: AWS::Region\n              - !GetAtt [Db, Endpoint.Address]\n              - !Sub ' ${Handle} ${!Literal}'\n";
        let text = first(source);
        assert_eq!(
            text.text,
            "cfn-init -s ${AWS::StackName} -r I --region ${AWS::Region}${Db.Endpoint.Address} ${Handle} ${Literal}"
        );
        assert_eq!(line(&text, "cfn-init"), 9);
        assert_eq!(line(&text, "${AWS::StackName}"), 10);
        assert_eq!(line(&text, "-r I"), 11);
        assert_eq!(line(&text, "${AWS::Region}"), 12);
        assert_eq!(line(&text, "${Handle}"), 14);
    }

    #[test]
    fn json_strings_are_on_the_line_of_their_quote_and_sub_variables_are_given_values() {
        let source = "{\"Resources\": {\"I\": {\"Type\": \"AWS::EC2::Instance\", \"Properties\": {\n\"UserData\": {\"Fn::Base64\": {\"Fn::Sub\": [\n\"a\\nb ${Set} ${Other}\\n\",\n{\"Set\": \"full\", \"Other\": {\"Fn::Join\": [\",\", [\"x\", {\"Ref\": \"P\"}]]}}]}}}}}}";
        let text = first(source);
        assert_eq!(text.text, "a\nb full x,${P}\n");
        assert_eq!(line(&text, "b "), 3);
        assert_eq!(line(&text, "full"), 4);
    }

    #[test]
    fn other_functions_are_placeholders_and_encoded_user_data_is_decoded() {
        let source = "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData: !Base64\n        Fn::If: [C, a, b]\n  J:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData: IyEvYmluL3NoCmNmbi1pbml0\n  K:\n    Type: AWS::S3::Bucket\n";
        let template = Template::parse("t", source).unwrap();
        let found = scripts(&template, source);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].script.text, "${Fn::If}");
        assert_eq!(found[1].script.text, "#!/bin/sh\ncfn-init");
        assert_eq!(found[1].pointer, "/Resources/J/Properties/UserData");
        assert_eq!(found[1].script.line_of(11), Some(10));
    }

    /// A user-data value: strings, Refs, GetAtts and other functions, in Subs and Joins.
    fn user_data_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        use serde_json::json;
        let leaf = prop_oneof![
            "[a-z \\n$#{}!'\"|-]{0,12}".prop_map(Value::from),
            "(AWS::Region|X|Y)".prop_map(|name| json!({"Ref": name})),
            Just(json!({"Fn::GetAtt": ["A", "B"]})),
            Just(json!({"Fn::If": ["C", "a", "b"]})),
            any::<i32>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                ("[a-z ]{0,3}", prop::collection::vec(inner.clone(), 0..6))
                    .prop_map(|(delimiter, items)| json!({"Fn::Join": [delimiter, items]})),
                "[a-z$\\n {}!]{0,20}".prop_map(|text| json!({"Fn::Sub": text})),
                ("[a-z${}X\\n]{0,20}", inner.clone()).prop_map(|(text, x)| json!({"Fn::Sub": [text, {"X": x}]})),
                prop::collection::vec(inner, 0..3).prop_map(Value::from),
            ]
        })
    }

    proptest::proptest! {
        /// Never a panic, and every piece on a line of the template, written compact or
        /// one value a line.
        #[test]
        fn flattening_never_panics_and_stays_in_the_template(value in user_data_value(), pretty: bool) {
            let template = serde_json::json!({"Resources": {"I": {"Type": "AWS::EC2::Instance", "Properties": {"UserData": {"Fn::Base64": value}}}}});
            let source = match pretty {
                true => serde_json::to_string_pretty(&template).unwrap(),
                false => serde_json::to_string(&template).unwrap(),
            };
            let parsed = Template::parse("t", &source).unwrap();
            let lines = source.lines().count();
            for script in scripts(&parsed, &source) {
                proptest::prop_assert!(script.script.text.len() <= MAX_TEXT);
                for offset in 0..script.script.text.len() {
                    if let Some(line) = script.script.line_of(offset) {
                        proptest::prop_assert!((1..=lines).contains(&line), "line {line} of {lines}");
                    }
                }
            }
        }
    }

    #[test]
    fn repeated_variables_are_cut_at_the_bound() {
        // Each level repeats the one below 16 times: 16^6 copies of "x" if nothing stopped it.
        let mut variables = String::from("{\"V0\": \"xxxxxxxxxxxxxxxx\"}");
        for level in 1..6 {
            let below = format!("${{V{}}}", level - 1).repeat(16);
            variables = format!("{{\"V{level}\": {{\"Fn::Sub\": [\"{below}\", {variables}]}}}}");
        }
        let source = format!(
            "{{\"Resources\": {{\"I\": {{\"Type\": \"AWS::EC2::Instance\", \"Properties\": {{\"UserData\": {{\"Fn::Base64\": {{\"Fn::Sub\": [\"${{V5}}\", {variables}]}}}}}}}}}}}}"
        );
        let text = first(&source);
        assert!(text.truncated);
        assert_eq!(text.text.len(), MAX_TEXT);
    }
}
