//! `cargo xtask soak [--minutes M]`: the cfn-hup soak of tests/hup_soak.rs, run for M
//! minutes (default 10) instead of the single round of the normal suite: the real
//! service against the emulator's errors, throttling, timeouts and flapping faults, with
//! the stack's metadata updated again and again. The test checks that every change runs
//! its hook once, that retries are bounded and jittered and that memory stays flat; its
//! figures are printed and written to `target/soak/report.json`, the service's log to
//! `target/soak/cfn-hup.log`.
//!
//! Needs root: the service signs with the instance identity, so the soak runs in a
//! private network namespace where the emulator answers at IMDS's real address.

use crate::{cargo, emulator, require, workspace};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::ExitCode;

pub const USAGE: &str = "soak [--minutes M]";
const DEFAULT_MINUTES: f64 = 10.0;

pub fn run(args: &[String]) -> Result<ExitCode> {
    let minutes = match args {
        [] => DEFAULT_MINUTES,
        [flag, value] if flag == "--minutes" => value
            .parse::<f64>()
            .ok()
            .filter(|m| *m > 0.0)
            .with_context(|| format!("--minutes {value}: not a number of minutes"))?,
        _ => bail!("usage: cargo xtask {USAGE}"),
    };
    require("ip", "the soak's private network namespace (Debian package iproute2)")?;
    // As in the tests: the Python `CFN_TEST_PYTHON` names, else the venv made here.
    let python = match std::env::var_os("CFN_TEST_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => emulator::ensure_venv()?,
    };
    let report = workspace().join("target/soak/report.json");
    std::fs::create_dir_all(report.parent().expect("a file in a directory"))?;
    let _ = std::fs::remove_file(&report);
    eprintln!("xtask: soaking cfn-hup for {minutes} minute(s)");
    let status = cargo()
        .current_dir(workspace())
        .args(["test", "--test", "hup_soak", "--", "--nocapture"])
        .env("CFN_SOAK_SECONDS", (minutes * 60.0).to_string())
        .env("CFN_SOAK_REPORT", &report)
        .env("CFN_TEST_PYTHON", &python)
        .status()
        .context("run cargo test")?;
    if !status.success() {
        bail!("the soak failed (its output is above)");
    }
    eprintln!("xtask: the figures are in {}", report.display());
    Ok(ExitCode::SUCCESS)
}
