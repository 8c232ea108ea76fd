//! Property-based fuzzing of what cfn-init reads from the metadata and from archives
//! (issue 13, "Fuzzing"): the model of AWS::CloudFormation::Init, configSet resolution
//! and archive extraction. Mustache has its own, beside the renderer.
//!
//! Plain `cargo test` runs a bounded number of cases per property; `cargo xtask fuzz`
//! runs many more through `PROPTEST_CASES`. A failing input is kept by proptest under
//! `proptest-regressions/` and replayed first by every later run.

mod archives;
mod configset_resolution;
mod metadata_model;
mod unknowns;
mod validation;

use proptest::prelude::*;
use serde_json::{Map, Value};

/// `ci_cases` cases per property, or `PROPTEST_CASES` when it is set.
pub fn config(ci_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = ci_cases;
    }
    config
}

/// Short strings that metadata keys and values are made of, odd ones included.
pub fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9]{0,6}",
        1 => Just(String::new()),
        1 => "[ -~]{0,8}",
        1 => "\\PC{0,6}",
        1 => prop::sample::select(vec!["/", "..", "-x", "true", "0", "000644", "120777", " yes ", "\n"])
            .prop_map(String::from),
    ]
}

/// Any JSON value, nested a few levels deep.
pub fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(|n| Value::from(n % 1000)),
        any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()).prop_map(Value::from),
        word().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((word(), inner), 0..6).prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// A JSON object from key/value pairs (later keys win, as in a JSON document).
pub fn object(pairs: Vec<(String, Value)>) -> Map<String, Value> {
    pairs.into_iter().collect()
}
