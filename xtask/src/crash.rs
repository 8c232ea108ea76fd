//! `cargo xtask crash [--kills N] [--seed S]`: the crash-consistency tests (tests/crash.rs)
//! with N SIGKILLs in all (default 1,000) shared among their three scenarios — a files
//! section, a sources extraction, cfn-hup's state writes — against a shared emulator.
//! Prints the kills and violations of each scenario and their totals.

use crate::{cargo, emulator, workspace};
use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader};
use std::process::{ExitCode, Stdio};

pub fn run(args: &[String]) -> Result<ExitCode> {
    let mut kills: u64 = 1000;
    let mut seed = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| rest.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--kills" => kills = value("--kills")?.parse().context("--kills takes a number")?,
            "--seed" => seed = Some(value("--seed")?.parse::<u64>().context("--seed takes a number")?),
            other => bail!("unknown argument {other:?} (crash takes --kills N and --seed S)"),
        }
    }
    let python = emulator::ensure_venv()?;
    let status = cargo().current_dir(workspace()).args(["build", "--bins", "--test", "crash"]).status()?;
    if !status.success() {
        bail!("the build failed");
    }
    let emulator = emulator::Emulator::start(&python, &emulator::test_arguments())?;
    let mut command = cargo();
    command
        .current_dir(workspace())
        .args(["test", "--test", "crash", "--", "--nocapture"])
        .env("CFN_CRASH_KILLS", kills.to_string())
        .env("CFN_TEST_EMULATOR", &emulator.url)
        .env("CFN_TEST_PYTHON", &python)
        .stdout(Stdio::piped());
    if let Some(seed) = seed {
        command.env("CFN_CRASH_SEED", seed.to_string());
    }
    let mut child = command.spawn().context("run cargo test")?;
    // Pass the output through and keep each scenario's line: `crash <scenario>: <k> kills
    // in <r> runs, …, <v> violations, …`.
    let mut scenarios = Vec::new();
    for line in BufReader::new(child.stdout.take().expect("piped stdout")).lines() {
        let line = line?;
        println!("{line}");
        if let Some(found) = scenario_line(&line) {
            scenarios.push(found);
        }
    }
    let status = child.wait()?;
    drop(emulator);
    let (total_kills, total_violations): (u64, u64) =
        scenarios.iter().fold((0, 0), |(k, v), (_, kills, violations)| (k + kills, v + violations));
    println!();
    for (name, kills, violations) in &scenarios {
        println!("crash: {name:<8} {kills:>6} kills  {violations} violations");
    }
    println!("crash: {:<8} {total_kills:>6} kills  {total_violations} violations (asked for {kills})", "total");
    if scenarios.len() < 3 {
        println!("crash: only {} of the 3 scenarios reported", scenarios.len());
    }
    Ok(if status.success() && scenarios.len() == 3 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `(scenario, kills, violations)` from a test's closing line.
fn scenario_line(line: &str) -> Option<(String, u64, u64)> {
    let (name, rest) = line.strip_prefix("crash ")?.split_once(": ")?;
    let number_before = |label: &str| -> Option<u64> {
        let end = rest.find(label)?;
        rest[..end].rsplit(' ').next()?.parse().ok()
    };
    Some((name.to_string(), number_before(" kills")?, number_before(" violations")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_scenario_lines() {
        let line =
            "crash files: 400 kills in 431 runs, 57 temporary files left by kills, 2 violations, 20.3 s (seed 9)";
        assert_eq!(scenario_line(line), Some(("files".into(), 400, 2)));
        assert_eq!(scenario_line("test crash ... ok"), None);
    }
}
