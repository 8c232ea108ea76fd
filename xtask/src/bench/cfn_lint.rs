//! cfn-lint beside `validate -t` on the same templates (issue 30): the real-world corpus
//! (tests/corpus/templates) in one process each, cfn-lint pinned in an environment of
//! the bench's own (`target/bench-cfn-lint-venv`, cfn-lint-requirements.txt). The
//! workload `validate-corpus` measures ours with the others; this measures cfn-lint the
//! same way, so that the two stand side by side in the report.

use super::measure::{self, Summary};
use crate::{emulator, workspace};
use anyhow::Result;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The corpus, in name order.
pub fn corpus() -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workspace().join("tests/corpus/templates"))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    Ok(files)
}

/// cfn-lint on `files`, `runs` times (after one run to warm the page cache and Python's
/// bytecode): its summary and version, as report JSON.
pub fn measure(out: &Path, files: &[PathBuf], runs: usize) -> Value {
    match run(out, files, runs) {
        Ok((summary, version)) => json!({"version": version, "files": files.len(), "summary": summary.json(1)}),
        Err(e) => json!({"error": format!("{e:#}")}),
    }
}

fn run(out: &Path, files: &[PathBuf], runs: usize) -> Result<(Summary, String)> {
    let requirements = workspace().join("xtask/src/bench/cfn-lint-requirements.txt");
    let python = emulator::venv("target/bench-cfn-lint-venv", &requirements, "cfn-lint for the bench")?;
    let lint = python.with_file_name("cfn-lint");
    let version = Command::new(&lint).arg("--version").output()?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    // cfn-lint's exit code is a bit mask of what it found (2 errors, 4 warnings, 8
    // informational); anything else is a failure of the run.
    let exits: Vec<i32> = (0..16).filter(|c| c % 2 == 0).collect();
    let mut samples = Vec::new();
    for i in 0..=runs {
        let mut cmd = Command::new(&lint);
        cmd.args(files);
        let sample = measure::run_exiting(&mut cmd, &out.join(format!("cfn-lint-corpus-{i}")), &exits)?;
        if i > 0 {
            samples.push(sample);
        }
    }
    Ok((Summary::of(&samples), version))
}
