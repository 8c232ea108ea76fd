//! Property-based fuzzing of the renderer (issue 13, "Fuzzing"; INIT-FILES-06): arbitrary
//! templates and contexts never panic and always end within the step budget; text
//! without tags renders to itself; names render their values, escaped or raw.
//!
//! Plain `cargo test` runs a bounded number of cases; `cargo xtask fuzz` many more
//! through `PROPTEST_CASES`. Failing inputs are kept under `proptest-regressions/`.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// `ci_cases` cases per property, or `PROPTEST_CASES` when it is set.
fn config(ci_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = ci_cases;
    }
    config
}

/// A small budget, so that runaway templates are cut short in microseconds.
const BUDGET: u64 = 20_000;

/// Pieces templates are made of: delimiters, sigils, tags, names, line ends, odd
/// characters.
const FRAGMENTS: &[&str] = &[
    "{{",
    "}}",
    "{",
    "}",
    "{{{",
    "}}}",
    "#",
    "^",
    "/",
    "!",
    "&",
    ">",
    "=",
    " ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "a",
    "b",
    "l",
    "o",
    ".",
    "a.b",
    "<%",
    "%>",
    "|",
    "é",
    "\u{a0}",
    "\u{2028}",
    "\u{1c}",
    "😀",
    "{{#a}}",
    "{{/a}}",
    "{{^a}}",
    "{{#l}}",
    "{{/l}}",
    "{{x}}",
    "{{{x}}}",
    "{{&x}}",
    "{{.}}",
    "{{! c }}",
    "{{=<% %>=}}",
    "<%={{ }}=%>",
    "{{= | | =}}",
    "{{>p}}",
    "{{ }}",
    "{{#o}}",
    "{{/o}}",
    "{{o.k}}",
    "{{l}}",
    "<%x%>",
    "<%#a%>",
    "<%/a%>",
    "{{=",
    "=}}",
    "'",
    "\"",
    "<",
    "{{#.}}",
    "{{/.}}",
    "{{#l}}{{#l}}{{#l}}",
    "{{/l}}{{/l}}{{/l}}",
];

fn template() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => prop::sample::select(FRAGMENTS).prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

/// Contexts with the names the fragments use, holding values of every kind; lists make
/// sections loop.
fn context() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    let names = prop::sample::select(vec!["a", "b", "l", "o", "x", "k", "."]).prop_map(String::from);
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((names.clone(), inner), 0..6).prop_map(|p| Value::Object(p.into_iter().collect())),
        ]
    })
}

/// Python 3's `html.escape`.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#x27;")
}

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Escaped(String),
    Triple(String),
    Ampersand(String),
}

/// Text without braces, or a name (some not in the context) in one of the three tags.
fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        "[^{}]{0,10}".prop_map(Piece::Text),
        "[a-f]{1,3}".prop_map(Piece::Escaped),
        "[a-f]{1,3}".prop_map(Piece::Triple),
        "[a-f]{1,3}".prop_map(Piece::Ampersand),
    ]
}

proptest! {
    #![proptest_config(config(1024))]

    /// Any template with any context renders or fails with a one-line error, and stops
    /// at the step budget; what renders within a small budget renders the same within
    /// the full one.
    #[test]
    fn any_template_ends_within_the_budget(template in template(), context in context()) {
        let started = std::time::Instant::now();
        let result = render_within(&template, &context, BUDGET);
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        match result {
            Ok(out) => prop_assert_eq!(Ok(out), render(&template, &context)),
            Err(MustacheError::TooManySteps { max }) => prop_assert_eq!(max, BUDGET),
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }

    /// Text without an opening delimiter is not a template: it renders to itself.
    #[test]
    fn text_without_tags_renders_to_itself(text in "\\PC*", context in context()) {
        prop_assume!(!text.contains("{{"));
        prop_assert_eq!(render(&text, &context), Ok(text));
    }

    /// Names render their string values, escaped by `{{x}}` and raw by `{{{x}}}` and
    /// `{{&x}}`; missing names render as nothing.
    #[test]
    fn names_render_their_values(
        pieces in prop::collection::vec(piece(), 0..12),
        values in prop::collection::btree_map("[a-c]{1,3}", "\\PC{0,8}", 0..6),
    ) {
        let value = |name: &str| values.get(name).cloned().unwrap_or_default();
        let (mut template, mut expected) = (String::new(), String::new());
        for piece in &pieces {
            match piece {
                Piece::Text(t) => {
                    template.push_str(t);
                    expected.push_str(t);
                }
                Piece::Escaped(n) => {
                    template.push_str(&format!("{{{{{n}}}}}"));
                    expected.push_str(&escape(&value(n)));
                }
                Piece::Triple(n) => {
                    template.push_str(&format!("{{{{{{{n}}}}}}}"));
                    expected.push_str(&value(n));
                }
                Piece::Ampersand(n) => {
                    template.push_str(&format!("{{{{& {n} }}}}"));
                    expected.push_str(&value(n));
                }
            }
        }
        prop_assert_eq!(render(&template, &json!(values)), Ok(expected));
    }
}
