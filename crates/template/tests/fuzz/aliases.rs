//! YAML anchors and aliases (issue 22, points 2 and 3): templates of anchored values that
//! alias earlier ones, inside nesting, read into a value within the bounds or fail with
//! the limit's error naming the file, the line and the limit; never a panic, a stack
//! overflow or an allocation past the bound. A model of each template says how large
//! and how deep it is with its aliases expanded, so the bounds are checked both ways:
//! over them is an error, well within them is a value.

use crate::{budget, config, values_and_depth, with_main_stack};
use cfn_template::{ErrorKind, Inputs, MAX_DEPTH, Template};
use proptest::prelude::*;

/// What a value is wrapped in: `[…]`, `{k: …}` or `!Select [0, …]`.
#[derive(Debug, Clone, Copy)]
enum Wrapper {
    Sequence,
    Mapping,
    Select,
}

impl Wrapper {
    /// The levels and values the wrapper adds (`!Select [0, x]` is `{"Fn::Select": [0, x]}`).
    fn levels_and_values(self) -> (u64, u64) {
        match self {
            Wrapper::Sequence | Wrapper::Mapping => (1, 1),
            Wrapper::Select => (2, 3),
        }
    }
}

/// One anchored value: `aN: &aN <wrappers>[items]`, each item a string or an alias to
/// an earlier anchor.
#[derive(Debug, Clone)]
struct Definition {
    wrappers: Vec<Wrapper>,
    /// `None` is the string `x`; `Some(n)` an alias to anchor `n % index` (an earlier one).
    items: Vec<Option<u8>>,
}

fn definition() -> impl Strategy<Value = Definition> {
    let wrapper = prop_oneof![
        3 => Just(Wrapper::Sequence),
        2 => Just(Wrapper::Mapping),
        1 => Just(Wrapper::Select),
    ];
    let wrappers = prop_oneof![
        3 => prop::collection::vec(wrapper.clone(), 0..4),
        1 => prop::collection::vec(wrapper, 0..70),
    ];
    let items = prop::collection::vec(prop::option::weighted(0.7, any::<u8>()), 1..11);
    (wrappers, items).prop_map(|(wrappers, items)| Definition { wrappers, items })
}

/// The template's text.
fn text(definitions: &[Definition]) -> String {
    let mut text = String::from("Resources:\n  R:\n    Type: AWS::EC2::Instance\n    Metadata:\n");
    for (index, definition) in definitions.iter().enumerate() {
        let items: Vec<String> = definition
            .items
            .iter()
            .map(|item| match item {
                Some(n) if index > 0 => format!("*a{}", usize::from(*n) % index),
                _ => "x".to_string(),
            })
            .collect();
        let mut value = format!("[{}]", items.join(", "));
        for wrapper in definition.wrappers.iter().rev() {
            value = match wrapper {
                Wrapper::Sequence => format!("[{value}]"),
                Wrapper::Mapping => format!("{{k: {value}}}"),
                Wrapper::Select => format!("!Select [0, {value}]"),
            };
        }
        text.push_str(&format!("      a{index}: &a{index} {value}\n"));
    }
    text
}

/// What the model says of a template: the height of its deepest definition with the
/// aliases expanded, and the values anchors and aliases copy (each anchored value once,
/// and each alias's value again).
fn model(definitions: &[Definition]) -> (u64, u64) {
    let mut heights: Vec<u64> = Vec::new();
    let mut values: Vec<u64> = Vec::new();
    let mut copied: u64 = 0;
    for (index, definition) in definitions.iter().enumerate() {
        let (mut height, mut count) = (0u64, 1u64);
        for item in &definition.items {
            match item {
                Some(n) if index > 0 => {
                    let target = usize::from(*n) % index;
                    height = height.max(heights[target]);
                    count = count.saturating_add(values[target]);
                    copied = copied.saturating_add(values[target]);
                }
                _ => count += 1,
            }
        }
        height += 1;
        for wrapper in &definition.wrappers {
            let (levels, more) = wrapper.levels_and_values();
            height += levels;
            count = count.saturating_add(more);
        }
        copied = copied.saturating_add(count);
        heights.push(height);
        values.push(count);
    }
    (heights.into_iter().max().unwrap_or(0), copied)
}

/// The levels around each definition's value: the template, Resources, R, Metadata.
const AROUND: u64 = 4;

/// A size unit per value at least, and at most this many (`{k: …}` is 3, a `!Select`
/// wrapper 14 for its 3 values, the string `x` 2).
const UNITS_PER_VALUE: u64 = 5;

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn aliases_expand_within_the_bounds_or_fail_naming_the_limit(
        definitions in prop::collection::vec(definition(), 1..10)
    ) {
        let text = text(&definitions);
        let (height, copied) = model(&definitions);
        let limit = budget(text.len()) as u64;
        let too_deep = AROUND + height > MAX_DEPTH as u64;
        let too_large = copied > limit;
        let well_within = !too_deep && copied.saturating_mul(UNITS_PER_VALUE) <= limit;
        let lines = text.lines().count();
        let checked = text.clone();
        let outcome = with_main_stack(move || {
            let template = Template::parse("t.yaml", &checked)?;
            let (values, depth) = values_and_depth(template.value());
            let metadata = template.metadata("R", &Inputs::default());
            Ok::<_, cfn_template::Error>((values, depth, metadata))
        });
        match outcome {
            Ok((values, depth, metadata)) => {
                prop_assert!(!too_deep && !too_large, "read although over a bound: {}", text);
                prop_assert!(depth <= MAX_DEPTH, "{} levels", depth);
                // Everything in Metadata is an anchored value, copied once within the budget.
                prop_assert!(values as u64 <= limit + 8, "{} values", values);
                match metadata {
                    Ok(value) => prop_assert!(values_and_depth(&value).1 <= MAX_DEPTH),
                    // `!Select [0, {k: …}]` is not a list; resolving may reach its own budget.
                    Err(e) => prop_assert!(matches!(e.kind, ErrorKind::Template | ErrorKind::Limit), "{}", e),
                }
            }
            Err(e) => {
                prop_assert_eq!(&e.kind, &ErrorKind::Limit, "{}", e);
                prop_assert!(!well_within, "refused although well within the bounds: {}\n{}", e, text);
                let message = e.to_string();
                let limit_named = message.contains(&format!("more than {MAX_DEPTH} deep"))
                    || message.contains(&format!("more than {limit} values and characters"));
                prop_assert!(limit_named, "{}", message);
                let line = e.position.map(|p| p.line).unwrap_or(0);
                prop_assert!(message.starts_with(&format!("t.yaml:{line}:")) && (5..=lines).contains(&line), "{}", message);
            }
        }
    }
}

#[test]
fn the_model_counts_the_issues_templates() {
    // Nine anchors, each ten aliases of the previous: 10^9 strings.
    let bomb: Vec<Definition> = (0..9)
        .map(|i| Definition { wrappers: vec![], items: vec![if i == 0 { None } else { Some(i - 1) }; 10] })
        .collect();
    let (height, copied) = model(&bomb);
    assert_eq!(height, 9);
    assert!(copied > 1_000_000_000);
    let error = Template::parse("t.yaml", &text(&bomb)).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Limit);
    // Forty anchors, each 120 levels around the previous.
    let chain: Vec<Definition> = (0..40)
        .map(|i| Definition {
            wrappers: vec![Wrapper::Sequence; 119],
            items: vec![if i == 0 { None } else { Some(i - 1) }],
        })
        .collect();
    assert_eq!(model(&chain).0, 40 * 120);
    let error = Template::parse("t.yaml", &text(&chain)).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Limit);
    assert_eq!(error.position.unwrap().line, 6);
}
