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
mod suite;
mod systemd_root;
mod testroot;

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <task>
  test [--repeat N] [cargo test args...]
  demo [--rolling]
  bench [--vs PREFIX] [--runs N] [--quick]
  dist [--skip-aarch64]
  crash [--kills N] [--seed S]
  fleet [--agents N] [--hours H] [--throttled-minutes M] [--seed S]
  fuzz [--minutes M] [--only NAME,...]
  soak [--minutes M]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => suite::run(&args[1..]),
        Some("demo") => demo::run(&args[1..]),
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

/// Cargo, without the variables `cargo run` set for this program (`CARGO_MANIFEST_DIR`,
/// `CARGO_PKG_NAME`, ...): build scripts that watch them (ring's does) would otherwise see
/// them change between `cargo xtask` and the builds it starts, and every such build would
/// compile them again, and all that depends on them (minutes on two cores).
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let set_by_cargo_run = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
            || ["CARGO_PRIMARY_PACKAGE", "OUT_DIR"].contains(&name);
        if set_by_cargo_run {
            cmd.env_remove(name);
        }
    }
    cmd
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

/// The number just before `label` in `ok. 8 passed; 0 failed; …`.
fn count_before(text: &str, label: &str) -> u64 {
    text.find(label).and_then(|end| text[..end].rsplit([' ', '.']).next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}
