//! `cargo xtask test [--repeat N] [cargo test args...]`: everything the tests need, one
//! build, then the whole suite (every test of the workspace, then the aarch64 binary on
//! the subset arm64.rs names), `N` times (once by default), each run against a fresh
//! emulator. Every test binary runs even when an earlier one failed (`--no-fail-fast`);
//! the end says each run's counts and time and the failed tests by name, so that flaky
//! tests show up as names failing in some runs only.

use crate::{arm64, cargo, dist, emulator, require, systemd_root, testroot, workspace};
use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

pub fn run(args: &[String]) -> Result<ExitCode> {
    let (repeat, extra) = match args {
        [flag, n, rest @ ..] if flag == "--repeat" => {
            let n: u32 = n.parse().ok().filter(|n| *n > 0).with_context(|| format!("--repeat {n}: not a count"))?;
            (n, rest)
        }
        [flag] if flag == "--repeat" => bail!("--repeat needs a count: cargo xtask test --repeat 5"),
        _ => (1, args),
    };
    let started = Instant::now();
    let setup = set_up()?;
    eprintln!("xtask: set-up and build took {}", seconds(started.elapsed()));

    let mut runs = Vec::new();
    for n in 1..=repeat {
        if repeat > 1 {
            eprintln!("xtask: run {n} of {repeat}");
        }
        let run = run_once(&setup, extra)?;
        if repeat > 1 {
            println!("run {n} of {repeat}: {}", run.summary());
        }
        runs.push(run);
    }
    if repeat > 1 {
        report(&runs);
    } else {
        println!("{}", runs[0].summary());
    }
    Ok(if runs.iter().all(|r| r.success) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What the runs share: the emulator's Python and the test environment.
struct Setup {
    python: std::path::PathBuf,
    dist: std::path::PathBuf,
    envs: Vec<(&'static str, OsString)>,
}

/// Installs and builds what the tests need (cached after the first time), then every
/// test binary, once.
fn set_up() -> Result<Setup> {
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
    // the arm64 pass (cached release builds).
    let dist = dist::for_tests()?;
    // The container image's tests build and run it with podman (runc: crun fails here).
    dist::install_missing(&[("podman", "podman"), ("runc", "runc")])?;

    // One build for all test binaries, before any emulator starts.
    let status = cargo().current_dir(workspace()).args(["build", "--workspace", "--tests", "--bins"]).status()?;
    if !status.success() {
        bail!("the build failed");
    }
    let mut envs = vec![("CFN_TEST_PYTHON", python.clone().into_os_string()), ("CFN_TEST_DIST", dist.clone().into())];
    envs.extend(rootfs.map(|r| ("CFN_TEST_ROOTFS", r.into_os_string())));
    envs.extend(systemd_rootfs.map(|r| ("CFN_TEST_SYSTEMD_ROOTFS", r.into_os_string())));
    Ok(Setup { python, dist, envs })
}

/// One run of the suite against a fresh shared emulator.
fn run_once(setup: &Setup, extra: &[String]) -> Result<Counts> {
    let started = Instant::now();
    let emulator = emulator::Emulator::start(&setup.python, &emulator::test_arguments())?;
    eprintln!("xtask: shared emulator at {}", emulator.url);
    let mut envs = setup.envs.clone();
    envs.push(("CFN_TEST_EMULATOR", emulator.url.clone().into()));
    let mut all = cargo_test(&[&["--workspace".to_string()], extra].concat(), &envs)?;
    // The aarch64 binary on the subset that arm64.rs names, under qemu-user; not when the
    // run was narrowed to some tests.
    if extra.is_empty() {
        let binary = ("CFN_TEST_BINARY", arm64::binary(&setup.dist).into_os_string());
        envs.extend([binary, ("CFN_TEST_RUNNER", arm64::RUNNER.into())]);
        eprintln!("xtask: the aarch64 binary under {} on tests {}", arm64::RUNNER, arm64::TESTS.join(", "));
        let arm = cargo_test(&arm64::test_arguments(), &envs)?;
        all.add_arm64(arm);
    }
    drop(emulator);
    all.took = started.elapsed();
    Ok(all)
}

/// What one run (or one `cargo test` of it) found.
#[derive(Default)]
struct Counts {
    passed: u64,
    failed: u64,
    /// `file::test` (or `crate::module::test` for unit tests) of each failed test.
    failures: Vec<String>,
    /// The aarch64 pass's share of `passed` and `failed`.
    arm64: Option<(u64, u64)>,
    success: bool,
    took: Duration,
}

impl Counts {
    fn add_arm64(&mut self, arm: Counts) {
        self.passed += arm.passed;
        self.failed += arm.failed;
        self.failures.extend(arm.failures.into_iter().map(|name| format!("{name} (aarch64)")));
        self.arm64 = Some((arm.passed, arm.failed));
        self.success &= arm.success;
    }

    fn summary(&self) -> String {
        let mut line = format!("tests: {} passed, {} failed", self.passed, self.failed);
        if let Some((passed, failed)) = self.arm64 {
            line.push_str(&format!(" (of which the aarch64 binary under qemu-user: {passed} passed, {failed} failed)"));
        }
        line.push_str(&format!(" in {}", seconds(self.took)));
        if !self.success && self.failures.is_empty() {
            line.push_str("; cargo test failed (a build error or a test binary that crashed: see above)");
        }
        for name in &self.failures {
            line.push_str(&format!("\n    FAILED {name}"));
        }
        line
    }
}

/// The end of `--repeat N`: each run's line, then each test that failed and in how many runs.
fn report(runs: &[Counts]) {
    println!("\n{} runs of the suite:", runs.len());
    for (n, run) in runs.iter().enumerate() {
        println!("run {}: {}", n + 1, run.summary());
    }
    let mut failed: Vec<(&String, usize)> = Vec::new();
    for name in runs.iter().flat_map(|r| &r.failures) {
        match failed.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => failed.push((name, 1)),
        }
    }
    if failed.is_empty() {
        println!("no test failed in any run");
    }
    for (name, count) in failed {
        println!("{name} failed in {count} of {} runs", runs.len());
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.0} s", d.as_secs_f64())
}

/// `cargo test --no-fail-fast ARGS` with `envs`, its output passed through, the results
/// of each test binary added up and the failed tests named.
fn cargo_test(args: &[String], envs: &[(&str, OsString)]) -> Result<Counts> {
    // One pipe for both streams, so that cargo's `Running tests/x.rs` (stderr) comes
    // before the results of that binary (stdout).
    let (reader, writer) = std::io::pipe().context("a pipe for cargo test")?;
    let mut child = cargo()
        .current_dir(workspace())
        .args(["test", "--no-fail-fast"])
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .stdin(Stdio::null())
        .spawn()
        .context("run cargo test")?;
    // Lines come through a thread, so that a process a test left behind holding the pipe
    // cannot keep this waiting once cargo has ended.
    let (lines, from_cargo) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Lossy: a test may print bytes that are not UTF-8.
        for line in BufReader::new(reader).split(b'\n') {
            let line = line.map(|l| String::from_utf8_lossy(&l).trim_end_matches('\r').to_string());
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut counts = Counts::default();
    let mut binary = String::new();
    let mut ended = None;
    loop {
        let line = match from_cargo.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => line?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                // What cargo wrote before it ended has arrived well within a second.
                if ended.is_none() && child.try_wait()?.is_some() {
                    ended = Some(Instant::now());
                }
                if ended.is_some_and(|at| at.elapsed() > Duration::from_secs(2)) {
                    break;
                }
                continue;
            }
        };
        println!("{line}");
        if let Some(name) = test_binary(&line) {
            binary = name;
        } else if let Some(result) = line.strip_prefix("test result: ") {
            counts.passed += crate::count_before(result, " passed");
            counts.failed += crate::count_before(result, " failed");
        } else if let Some(test) = failed_test(&line) {
            counts.failures.push(format!("{binary}::{test}"));
        }
    }
    counts.success = child.wait()?.success();
    Ok(counts)
}

/// The test binary cargo starts on this line: `hup` for `Running tests/hup.rs (…)`, the
/// crate for `Running unittests src/lib.rs (target/debug/deps/cfn_aws-…)` and
/// `Doc-tests cfn_aws`.
fn test_binary(line: &str) -> Option<String> {
    let line = line.trim_start();
    if let Some(krate) = line.strip_prefix("Doc-tests ") {
        return Some(format!("{krate} (doc)"));
    }
    let running = line.strip_prefix("Running ")?;
    if let Some(file) = running.strip_prefix("tests/").and_then(|r| r.split(".rs").next()) {
        return Some(file.to_string());
    }
    // unittests: the file name of the executable, without its hash.
    let executable = running.rsplit_once('(')?.1.trim_end_matches(')');
    let name = executable.rsplit('/').next()?;
    Some(name.rsplit_once('-').map_or(name, |(krate, _)| krate).to_string())
}

/// The test a `test NAME ... FAILED` line names.
fn failed_test(line: &str) -> Option<&str> {
    line.strip_prefix("test ")?.strip_suffix(" ... FAILED")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_cargos_lines() {
        assert_eq!(
            test_binary("     Running tests/hup_commands.rs (target/debug/deps/hup_commands-0a1b)"),
            Some("hup_commands".into())
        );
        assert_eq!(
            test_binary("     Running unittests src/lib.rs (target/debug/deps/cfn_aws-6dcb422d034328a7)"),
            Some("cfn_aws".into())
        );
        assert_eq!(test_binary("   Doc-tests cfn_init"), Some("cfn_init (doc)".into()));
        assert_eq!(test_binary("running 3 tests"), None);
        assert_eq!(failed_test("test a::b ... FAILED"), Some("a::b"));
        assert_eq!(failed_test("test src/lib.rs - f (line 3) ... FAILED"), Some("src/lib.rs - f (line 3)"));
        assert_eq!(failed_test("test a::b ... ok"), None);
    }
}
