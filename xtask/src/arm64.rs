//! The aarch64 release binary (the one the arm64 packages and image ship) on a subset of
//! the black-box tests, under qemu-user: the command line of every tool
//! (tests/cli_golden.rs), cfn-get-metadata against the emulator (tests/get_metadata.rs)
//! and cfn-init from a file (tests/init.rs), all but two slow tests (`LEFT_OUT`). The
//! tests take the binary from `CFN_TEST_BINARY` and start it through `CFN_TEST_RUNNER`,
//! which keeps each link's name as the program's `argv[0]` (tests/common `binary_argv`),
//! so no binfmt_misc handler, which would change the machine, is needed.

use std::path::{Path, PathBuf};

/// The test files of the subset (`cargo test --test NAME`).
pub const TESTS: [&str; 3] = ["cli_golden", "get_metadata", "init"];

/// Left out of the aarch64 pass (they run natively in the main one): they wait out
/// real back-off delays, about a minute, and exercise the retry schedule, which has no
/// code that differs between architectures.
const LEFT_OUT: [&str; 2] = [
    "throttling_and_server_errors_are_retried_until_success",
    "an_unreachable_endpoint_is_retried_five_times_then_reported",
];

pub const RUNNER: &str = "qemu-aarch64-static";

/// The aarch64 binary in the artifacts `dist::for_tests` made.
pub fn binary(dist: &Path) -> PathBuf {
    dist.join("container/rootfs-arm64/opt/aws/bin/cfn-bootstrap")
}

/// `cargo test` arguments for the subset.
pub fn test_arguments() -> Vec<String> {
    let tests = TESTS.iter().flat_map(|t| ["--test", t]);
    let skips = LEFT_OUT.iter().flat_map(|t| ["--skip", t]);
    tests.chain(["--", "--exact"]).chain(skips).map(String::from).collect()
}
