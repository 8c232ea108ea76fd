//! Values and intrinsic functions nested deeply, in JSON and in YAML, with chains of
//! conditions (issue 22, point 3): reading and resolving recurse, so they stop at a
//! checked depth with the limit's error, never a stack overflow; functions that make
//! more than they are given (`Fn::Base64`, `Fn::Sub` using a variable twice) stop at the
//! budget instead of doubling at every level.

use crate::{budget, config, values_and_depth, with_main_stack};
use cfn_template::{ErrorKind, Inputs, MAX_DEPTH, Template};
use proptest::prelude::*;

/// One level around a value `X`, as JSON text, and the levels it adds.
const LEVELS: &[(&str, usize)] = &[
    ("[X]", 1),
    ("{\"k\": X}", 1),
    ("{\"Fn::Base64\": X}", 1),
    ("{\"Fn::Select\": [0, [X]]}", 3),
    ("{\"Fn::If\": [\"C0\", X, \"n\"]}", 2),
    ("{\"Fn::Sub\": [\"${v}${v}\", {\"v\": X}]}", 3),
    ("{\"Fn::Join\": [\"-\", [X]]}", 3),
];

/// Size units as the crate counts them: a value 1, each string and key its length, and
/// 1 more per key.
fn units(value: &serde_json::Value) -> usize {
    let mut total = 0;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        total += 1;
        match value {
            serde_json::Value::String(s) => total += s.len(),
            serde_json::Value::Array(items) => pending.extend(items),
            serde_json::Value::Object(entries) => {
                total += entries.keys().map(|k| k.len() + 1).sum::<usize>();
                pending.extend(entries.values());
            }
            _ => {}
        }
    }
    total
}

/// The template: R's Metadata is `x` inside `levels` (innermost last), and the
/// condition C0 is `conditions` conditions chained, each inside `nots` Fn::Not.
fn template(levels: &[usize], conditions: usize, nots: usize) -> String {
    let mut value = "\"x\"".to_string();
    for level in levels.iter().rev() {
        value = LEVELS[*level].0.replace('X', &value);
    }
    let mut defined = Vec::new();
    for c in 0..conditions.max(1) {
        let mut condition = if c + 1 < conditions {
            format!("{{\"Condition\": \"C{}\"}}", c + 1)
        } else {
            "{\"Fn::Equals\": [\"a\", \"a\"]}".to_string()
        };
        for _ in 0..nots {
            condition = format!("{{\"Fn::Not\": [{condition}]}}");
        }
        defined.push(format!("\"C{c}\": {condition}"));
    }
    format!(
        "{{\"Conditions\": {{{}}}, \"Resources\": {{\"R\": {{\"Type\": \"T\", \"Metadata\": {{\"m\": {value}}}}}}}}}",
        defined.join(", ")
    )
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn deep_values_functions_and_conditions_stop_at_the_checked_limits(
        levels in prop::collection::vec(0..LEVELS.len(), 0..140),
        conditions in 0usize..80,
        nots in 0usize..70,
        as_yaml in any::<bool>(),
    ) {
        let json = template(&levels, conditions, nots);
        // A comment first makes it YAML (flow style) to the reader, not JSON.
        let text = if as_yaml { format!("# YAML\n{json}") } else { json };
        // The Metadata value's levels, under the template's, Resources', R's and Metadata's.
        let depth = 4 + levels.iter().map(|l| LEVELS[*l].1).sum::<usize>();
        let condition_depth = 4 + 2 * nots;
        let limit = budget(text.len());
        let checked = text.clone();
        let outcome = with_main_stack(move || {
            let template = Template::parse("t", &checked)?;
            let (_, depth) = values_and_depth(template.value());
            Ok::<_, cfn_template::Error>((depth, template.metadata("R", &Inputs::default())))
        });
        match outcome {
            Ok((read_depth, metadata)) => {
                prop_assert!(depth.max(condition_depth) <= MAX_DEPTH, "read {} levels", depth);
                prop_assert_eq!(read_depth, depth.max(condition_depth));
                match metadata {
                    Ok(value) => {
                        prop_assert!(values_and_depth(&value).1 <= MAX_DEPTH);
                        prop_assert!(units(&value) <= limit, "{} units", units(&value));
                    }
                    // A list where a string is needed is the template's error; the rest are limits.
                    Err(e) => prop_assert!(matches!(e.kind, ErrorKind::Template | ErrorKind::Limit), "{}", e),
                }
            }
            Err(e) => {
                prop_assert_eq!(&e.kind, &ErrorKind::Limit, "{}", e);
                prop_assert!(depth.max(condition_depth) > MAX_DEPTH - 1, "refused at {} levels: {}", depth, e);
                prop_assert!(e.to_string().contains(&format!("nested more than {MAX_DEPTH} deep")), "{}", e);
            }
        }
    }
}
