//! `cargo xtask fuzz [--minutes M] [--only NAME,…]`: the property-based fuzz tests (issue
//! 13, "Fuzzing") with many more cases than plain `cargo test` runs, for about M minutes
//! (default 10) shared equally by the targets.
//!
//! Each target is one filter over one test binary. It is run again and again with
//! `PROPTEST_CASES` set; the number of cases grows while runs stay short, so that the
//! target's share of the time is used without overrunning it much. proptest picks a new
//! random seed at every run. A property that fails is shrunk by proptest to a minimal
//! input, which it writes to the `proptest-regressions/` file beside the test: commit
//! it, and plain `cargo test` replays it first from then on.
//!
//! The closing table gives, per target, the runs, the cases run (cases per property ×
//! properties that passed; a failing property's cases are not counted) and the failures.

use crate::{cargo, count_before, workspace};
use anyhow::{Context, Result, bail};
use std::process::{ExitCode, Stdio};
use std::time::Instant;

struct Target {
    name: &'static str,
    package: &'static str,
    /// Which test binary of the package (`--test fuzz`, `--lib`, `--bin …`).
    binary: &'static [&'static str],
    /// The test-name filter that selects the target's properties.
    filter: &'static str,
}

const TARGETS: &[Target] = &[
    Target {
        name: "metadata-model",
        package: "cfn-configsets",
        binary: &["--test", "fuzz"],
        filter: "metadata_model::",
    },
    Target {
        name: "configsets",
        package: "cfn-configsets",
        binary: &["--test", "fuzz"],
        filter: "configset_resolution::",
    },
    Target { name: "ini", package: "cfn-hooks", binary: &["--test", "fuzz"], filter: "ini::" },
    Target { name: "mustache", package: "cfn-configsets", binary: &["--lib"], filter: "mustache::fuzz::" },
    Target { name: "urls", package: "cfn-aws", binary: &["--test", "fuzz"], filter: "urls::" },
    Target { name: "optparse", package: "cfn-optparse", binary: &["--lib"], filter: "fuzz::" },
    Target { name: "credential-file", package: "cfn-aws", binary: &["--test", "fuzz"], filter: "credential_file::" },
    Target { name: "archives", package: "cfn-configsets", binary: &["--test", "fuzz"], filter: "archives::" },
    Target { name: "validation", package: "cfn-configsets", binary: &["--test", "fuzz"], filter: "validation::" },
    Target { name: "interpolation", package: "cfn-hooks", binary: &["--test", "fuzz"], filter: "interpolation::" },
    Target { name: "command-messages", package: "cfn-hooks", binary: &["--test", "fuzz"], filter: "command_message::" },
    Target { name: "template-aliases", package: "cfn-template", binary: &["--test", "fuzz"], filter: "aliases::" },
    Target { name: "template-nesting", package: "cfn-template", binary: &["--test", "fuzz"], filter: "nesting::" },
];

/// Cases per property in a target's first run.
const FIRST_CASES: u64 = 500;
/// A run is kept about this long, so that the share of time is not overrun by much.
const RUN_SECONDS: f64 = 30.0;

#[derive(Default)]
struct Tally {
    runs: u64,
    cases: u64,
    failures: u64,
    seconds: f64,
}

pub fn run(args: &[String]) -> Result<ExitCode> {
    let mut minutes = 10.0;
    let mut only: Option<Vec<String>> = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--minutes" => {
                minutes = rest.next().context("--minutes needs a number")?.parse().context("--minutes")?;
            }
            "--only" => only = Some(rest.next().context("--only needs names")?.split(',').map(String::from).collect()),
            other => bail!("fuzz: unknown argument {other}"),
        }
    }
    let targets: Vec<&Target> =
        TARGETS.iter().filter(|t| only.as_ref().is_none_or(|o| o.iter().any(|n| n == t.name))).collect();
    if targets.is_empty() {
        bail!("no such target; the targets are {}", TARGETS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "));
    }

    // Every test binary built once, before the clock starts.
    for target in &targets {
        let status = cargo()
            .current_dir(workspace())
            .args(["test", "--no-run", "-q", "-p", target.package])
            .args(target.binary)
            .status()?;
        if !status.success() {
            bail!("building the tests of {} failed", target.package);
        }
    }

    let share = minutes * 60.0 / targets.len() as f64;
    let mut tallies = Vec::new();
    for target in &targets {
        let tally = fuzz_target(target, share)?;
        println!(
            "fuzz: {}: {} cases in {} runs, {} failures, {:.0} s",
            target.name, tally.cases, tally.runs, tally.failures, tally.seconds
        );
        tallies.push(tally);
    }

    println!("\n{:<16} {:>6} {:>12} {:>9} {:>9}", "target", "runs", "cases", "failures", "seconds");
    for (target, t) in targets.iter().zip(&tallies) {
        println!("{:<16} {:>6} {:>12} {:>9} {:>9.0}", target.name, t.runs, t.cases, t.failures, t.seconds);
    }
    let failures: u64 = tallies.iter().map(|t| t.failures).sum();
    if failures > 0 {
        println!(
            "\n{failures} failures; their minimal inputs are in proptest-regressions/ beside the tests: commit them"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs one target for about `share` seconds.
fn fuzz_target(target: &Target, share: f64) -> Result<Tally> {
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut cases = FIRST_CASES;
    while started.elapsed().as_secs_f64() < share {
        let run_started = Instant::now();
        let output = cargo()
            .current_dir(workspace())
            .args(["test", "-q", "-p", target.package])
            .args(target.binary)
            .args(["--", target.filter])
            .env("PROPTEST_CASES", cases.to_string())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("run the {} fuzz tests", target.name))?;
        let seconds = run_started.elapsed().as_secs_f64();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let (mut passed, mut failed) = (0, 0);
        for line in stdout.lines() {
            if let Some(result) = line.strip_prefix("test result: ") {
                passed += count_before(result, " passed");
                failed += count_before(result, " failed");
            }
        }
        if passed + failed == 0 {
            print!("{stdout}");
            bail!("the {} fuzz tests ran no test (filter {:?})", target.name, target.filter);
        }
        if failed > 0 || !output.status.success() {
            // The failing properties, their minimal inputs and where proptest kept them.
            print!("{stdout}");
        }
        tally.runs += 1;
        tally.cases += cases * passed;
        tally.failures += failed;
        tally.seconds += seconds;
        // Grow toward runs of RUN_SECONDS, without passing what is left of the share.
        let per_case = seconds / cases as f64;
        let left = share - started.elapsed().as_secs_f64();
        let wanted = (RUN_SECONDS.min(left.max(0.0)) / per_case.max(1e-9)) as u64;
        cases = wanted.clamp(1, cases.saturating_mul(4));
    }
    Ok(tally)
}
