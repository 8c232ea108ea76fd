//! Property-based fuzzing of what the AWS layer reads from users and servers (issue 13,
//! "Fuzzing"): S3 and other URLs, their redaction, the endpoints document, and the
//! credential file.
//!
//! Plain `cargo test` runs a bounded number of cases per property; `cargo xtask fuzz`
//! runs many more through `PROPTEST_CASES`. A failing input is kept by proptest under
//! `proptest-regressions/` and replayed first by every later run.

mod credential_file;
mod urls;

use proptest::prelude::*;

/// `ci_cases` cases per property, or `PROPTEST_CASES` when it is set.
pub fn config(ci_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = ci_cases;
    }
    config
}
