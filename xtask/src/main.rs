//! Project tasks: `cargo xtask test` (everything the tests need, then all tests),
//! `cargo xtask demo` (the main job, end to end, against the local AWS emulator), and
//! the longer checks and measurements the tests run a short version of (see `USAGE`).

mod arm64;
mod bench;
mod crash;
mod demo;
mod dist;
mod emulator;
mod fleet;
mod fuzz;
mod instance;
mod soak;
mod systemd_root;
mod testroot;

use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

const USAGE: &str = "usage: cargo xtask <task>
  test [cargo test args...]
  demo
  bench [--vs PREFIX] [--runs N] [--quick]
  dist [--skip-aarch64]
  crash [--kills N] [--seed S]
  fleet [--agents N] [--hours H] [--throttled-minutes M] [--seed S]
  fuzz [--minutes M] [--only NAME,...]
  soak [--minutes M]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("demo") => demo::run(),
        Some("bench") => bench::run(&args[1..]),
        Some("dist") => dist::run(&args[1..]),
        Some("crash") => crash::run(&args[1..]),
        Some("fleet") => fleet::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Fails with a clear message when a program the tests need is missing.
fn require(program: &str, why: &str) -> Result<()> {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false);
    if !found {
        bail!("`{program}` is not installed; the tests need it for {why}");
    }
    Ok(())
}

/// Installs the emulator, starts one shared instance, and runs every test once.
fn test(extra: &[String]) -> Result<ExitCode> {
    require("ip", "private network namespaces (Debian package iproute2)")?;
    require("unshare", "private mount namespaces (util-linux)")?;
    require("openssl", "test certificates")?;
    require("strace", "the start-up cost tests (Debian package strace)")?;
    let python = emulator::ensure_venv()?;
    // The isolated Debian root of tests/init_system.rs (built once, then cached).
    let rootfs = testroot::ensure()?;
    // The systemd root of tests/systemd.rs, made from it (built once, then cached).
    let systemd_rootfs = rootfs.as_deref().map(systemd_root::ensure).transpose()?;
    // The x86_64 and aarch64 release artifacts for tests/dist.rs, tests/container.rs and
    // the arm64 pass below (cached release builds).
    let dist = dist::for_tests()?;
    // The container image's tests build and run it with podman (runc: crun fails here).
    dist::install_missing(&[("podman", "podman"), ("runc", "runc")])?;

    // One build for all test binaries, before the emulator starts.
    let status = cargo().current_dir(workspace()).args(["build", "--workspace", "--tests", "--bins"]).status()?;
    if !status.success() {
        bail!("the build failed");
    }
    let emulator = emulator::Emulator::start(&python, &emulator::test_arguments())?;
    eprintln!("xtask: shared emulator at {}", emulator.url);
    let envs = [
        ("CFN_TEST_EMULATOR", emulator.url.clone().into()),
        ("CFN_TEST_PYTHON", python.into_os_string()),
        ("CFN_TEST_DIST", dist.clone().into_os_string()),
    ];
    let rootfs = rootfs.iter().map(|r| ("CFN_TEST_ROOTFS", r.clone().into_os_string()));
    let systemd_rootfs = systemd_rootfs.iter().map(|r| ("CFN_TEST_SYSTEMD_ROOTFS", r.clone().into_os_string()));
    let envs: Vec<(&str, std::ffi::OsString)> = envs.into_iter().chain(rootfs).chain(systemd_rootfs).collect();
    let all = cargo_test(&[&["--workspace".to_string()], extra].concat(), &envs)?;
    // The aarch64 binary on the subset that arm64.rs names, under qemu-user; not when the
    // run was narrowed to some tests.
    let aarch64 = if extra.is_empty() {
        let binary = ("CFN_TEST_BINARY", arm64::binary(&dist).into_os_string());
        let envs: Vec<_> = envs.iter().cloned().chain([binary, ("CFN_TEST_RUNNER", arm64::RUNNER.into())]).collect();
        eprintln!("xtask: the aarch64 binary under {} on tests {}", arm64::RUNNER, arm64::TESTS.join(", "));
        Some(cargo_test(&arm64::test_arguments(), &envs)?)
    } else {
        None
    };
    drop(emulator);
    match &aarch64 {
        Some(arm) => println!(
            "tests: {} passed, {} failed (of which the aarch64 binary under qemu-user: {} passed, {} failed)",
            all.passed + arm.passed,
            all.failed + arm.failed,
            arm.passed,
            arm.failed
        ),
        None => println!("tests: {} passed, {} failed", all.passed, all.failed),
    }
    let success = all.success && aarch64.is_none_or(|arm| arm.success);
    Ok(if success { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

struct TestCounts {
    passed: u64,
    failed: u64,
    success: bool,
}

/// `cargo test ARGS` with `envs`, its output passed through, the per-binary results added up.
fn cargo_test(args: &[String], envs: &[(&str, std::ffi::OsString)]) -> Result<TestCounts> {
    let mut child = cargo()
        .current_dir(workspace())
        .arg("test")
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .spawn()
        .context("run cargo test")?;
    let (mut passed, mut failed) = (0u64, 0u64);
    for line in BufReader::new(child.stdout.take().expect("piped stdout")).lines() {
        let line = line?;
        println!("{line}");
        if let Some(result) = line.strip_prefix("test result: ") {
            passed += count_before(result, " passed");
            failed += count_before(result, " failed");
        }
    }
    Ok(TestCounts { passed, failed, success: child.wait()?.success() })
}

/// The number just before `label` in `ok. 8 passed; 0 failed; …`.
fn count_before(text: &str, label: &str) -> u64 {
    text.find(label).and_then(|end| text[..end].rsplit([' ', '.']).next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}
