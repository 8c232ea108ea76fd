//! Property-based fuzzing of what `cfn-bootstrap render`, `validate -t` and `plan -t`
//! read from a template (issue 13, "Fuzzing"; issue 22): YAML anchors and aliases, and
//! values and intrinsic functions nested deeply, in YAML and in JSON. Whatever the
//! template, reading and resolving it give a value or an error, never a panic or a
//! stack overflow, and what they build stays within the bounds proportional to the
//! template's size (counted in values and characters, not time, so nothing can flake).
//!
//! Plain `cargo test` runs a bounded number of cases per property; `cargo xtask fuzz`
//! runs many more through `PROPTEST_CASES`. A failing input is kept by proptest under
//! `proptest-regressions/` and replayed first by every later run.

mod aliases;
mod nesting;

use proptest::prelude::*;

/// `ci_cases` cases per property, or `PROPTEST_CASES` when it is set.
pub fn config(ci_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = ci_cases;
    }
    config
}

/// What anchors and aliases may copy, and resolving may make, for a text of `length`.
pub fn budget(length: usize) -> usize {
    length.saturating_mul(cfn_template::BUDGET_PER_BYTE).clamp(cfn_template::BUDGET_MIN, cfn_template::BUDGET_MAX)
}

/// How many values a JSON value holds, and how deep it nests (a scalar is 0 deep);
/// walked with a stack of its own.
pub fn values_and_depth(value: &serde_json::Value) -> (usize, usize) {
    let (mut values, mut deepest) = (0, 0);
    let mut pending = vec![(value, 0)];
    while let Some((value, depth)) = pending.pop() {
        values += 1;
        deepest = deepest.max(depth);
        match value {
            serde_json::Value::Array(items) => pending.extend(items.iter().map(|item| (item, depth + 1))),
            serde_json::Value::Object(entries) => pending.extend(entries.values().map(|item| (item, depth + 1))),
            _ => {}
        }
        if matches!(value, serde_json::Value::Array(_) | serde_json::Value::Object(_)) {
            deepest = deepest.max(depth + 1);
        }
    }
    (values, deepest)
}

/// Runs `check` on a thread with the stack the binary's main thread has (8 MiB), not
/// the 2 MiB of a test's thread: the bounds are chosen for the binary, and a debug
/// build's frames are large.
pub fn with_main_stack<T: Send + 'static>(check: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(check)
        .expect("a thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
