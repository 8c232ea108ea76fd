//! cfn-init's run records: one JSON file per run in `/var/lib/cfn-init/runs/`, readable
//! by root only (the error and the output tail of a failed command may hold secrets, as
//! the logs may). A run writes its record when it starts (running, with its process),
//! when a config starts a second or more after the last write (where a long run is),
//! and when it ends; each write replaces the whole file
//! atomically (`cfn_host::durable::replace_unsynced`), so a reader never finds half of one; a
//! record a power loss left empty is skipped. They are not synced: two syncs per write
//! cost more than a short run.
//!
//! One file per run rather than one file of history: runs may overlap (cfn-hup's
//! actions run cfn-init beside a manual one), and a file only its run writes loses no
//! other run's record. The names sort as the runs started (`<UTC start>-<pid>.json`);
//! each new run keeps the [`HISTORY`] newest, so the directory stays a few dozen KiB.

use cfn_host::process_identity::ProcessIdentity;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The records kept: the boot's run and the updates since, enough to see a pattern.
pub const HISTORY: usize = 10;
/// The lines of a failed command's output kept in the record.
pub const OUTPUT_TAIL_LINES: usize = 20;
/// The characters of each such line kept.
pub const OUTPUT_LINE_CHARS: usize = 400;

/// `<lib>/cfn-init/runs`.
pub fn runs_dir() -> PathBuf {
    cfn_host::paths::lib_dir().join("cfn-init/runs")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Running,
    Ok,
    Failed,
}

/// One run of cfn-init.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `Running` until the run ends; a run killed meanwhile stays `Running` here, and
    /// its reader finds its process gone ([`RunRecord::is_alive`]).
    pub outcome: Outcome,
    pub pid: u32,
    pub boot_id: Option<String>,
    pub start_ticks: Option<u64>,
    /// RFC 3339, UTC.
    pub started: String,
    pub ended: Option<String>,
    pub seconds: Option<f64>,
    pub source: Source,
    pub configsets: Vec<String>,
    /// In the order they ran.
    pub configs: Vec<ConfigRun>,
    pub failure: Option<Failure>,
    pub exit_code: Option<i32>,
}

/// Where the metadata came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    File { path: String },
    Stdin,
    Stack { stack: String, resource: String, region: String, url: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRun {
    pub configset: String,
    pub config: String,
    pub outcome: Outcome,
    pub seconds: Option<f64>,
    /// The sections the config specifies, in the order they ran.
    pub sections: Vec<SectionRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionRun {
    pub section: String,
    pub outcome: Outcome,
    pub seconds: Option<f64>,
}

/// Why a run failed: where, the error cfn-init reported, and the last lines of the
/// output of the command that ran last in the failing section, if one did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub configset: Option<String>,
    pub config: Option<String>,
    pub section: Option<String>,
    pub error: String,
    pub output_tail: Vec<String>,
}

impl RunRecord {
    /// A record of this process's run, starting now.
    pub fn starting(source: Source, configsets: Vec<String>) -> RunRecord {
        let me = ProcessIdentity::current();
        RunRecord {
            outcome: Outcome::Running,
            pid: me.pid,
            boot_id: me.boot_id,
            start_ticks: me.start_ticks,
            started: timestamp(chrono::Utc::now()),
            ended: None,
            seconds: None,
            source,
            configsets,
            configs: Vec::new(),
            failure: None,
            exit_code: None,
        }
    }

    /// The file name: its start (UTC, to the microsecond, sorting as runs started) and pid.
    pub fn file_name(&self) -> String {
        let compact: String = self.started.chars().filter(char::is_ascii_alphanumeric).collect();
        format!("{compact}-{}.json", self.pid)
    }

    /// Whether the process that writes this record still runs.
    pub fn is_alive(&self) -> bool {
        ProcessIdentity { pid: self.pid, boot_id: self.boot_id.clone(), start_ticks: self.start_ticks }.is_running()
    }
}

/// RFC 3339 with microseconds, UTC: `2026-12-01T21:50:03.123456Z`.
pub fn timestamp(time: chrono::DateTime<chrono::Utc>) -> String {
    time.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Writes `record` into `dir` (made 0700 when missing), replacing its earlier version.
pub fn write(dir: &Path, record: &RunRecord) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let mut text = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
    text.push(b'\n');
    cfn_host::durable::replace_unsynced(&dir.join(record.file_name()), &text, 0o600)
}

/// The names of the records in `dir`, newest first; none when there is no `dir`.
fn names(dir: &Path) -> std::io::Result<Vec<String>> {
    let entries = match cfn_host::dir_names::of_path(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names: Vec<String> =
        entries.into_iter().filter_map(|n| n.into_string().ok()).filter(|n| is_record_name(n)).collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    Ok(names)
}

/// `<8 digits>T<12 digits>Z-<pid>.json`, as [`RunRecord::file_name`] makes them: not
/// the hidden temporary file of a write in progress, nor anyone else's file.
fn is_record_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some((time, pid)) = name.strip_suffix(".json").and_then(|n| n.split_once('-')) else { return false };
    let Some((date, clock)) = time.strip_suffix('Z').and_then(|t| t.split_once('T')) else { return false };
    date.len() == 8 && digits(date) && clock.len() == 12 && digits(clock) && digits(pid)
}

/// Removes all but the `keep` newest records; errors are ignored (a record too many
/// only takes room).
pub fn prune(dir: &Path, keep: usize) {
    for name in names(dir).unwrap_or_default().into_iter().skip(keep) {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

/// The records in `dir`, newest first; files that are not records are left out. An
/// error is a directory that cannot be read (not root, say): not the same as no run.
pub fn history(dir: &Path) -> std::io::Result<Vec<RunRecord>> {
    Ok(names(dir)?
        .into_iter()
        .filter_map(|name| std::fs::read(dir.join(name)).ok())
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect())
}

/// The state of cfn-init, from its newest record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    NotRun,
    Running,
    Done,
    Failed,
    Interrupted,
}

impl State {
    pub fn of(last: Option<&RunRecord>) -> State {
        match last {
            None => State::NotRun,
            Some(r) if r.outcome == Outcome::Running && r.is_alive() => State::Running,
            Some(r) if r.outcome == Outcome::Running => State::Interrupted,
            Some(r) if r.outcome == Outcome::Ok => State::Done,
            Some(_) => State::Failed,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            State::NotRun => "not run",
            State::Running => "running",
            State::Done => "done",
            State::Failed => "failed",
            State::Interrupted => "interrupted",
        }
    }

    /// `cfn-bootstrap status`'s exit code for this state.
    pub fn exit_code(self) -> u8 {
        match self {
            State::Done => 0,
            State::Failed | State::Interrupted => 1,
            State::Running | State::NotRun => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn records_are_private_listed_newest_first_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let mut records = Vec::new();
        for (i, started) in
            ["2026-12-01T10:00:00.000001Z", "2026-12-01T09:00:00.000000Z", "2026-12-02T00:00:00.500000Z"]
                .iter()
                .enumerate()
        {
            let mut record = RunRecord::starting(Source::File { path: format!("/m{i}.json") }, vec!["default".into()]);
            record.started = started.to_string();
            write(&runs, &record).unwrap();
            records.push(record);
        }
        assert_eq!(std::fs::metadata(&runs).unwrap().permissions().mode() & 0o777, 0o700);
        let file = runs.join(records[0].file_name());
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(records[0].file_name().starts_with("20261201T100000000001Z-"), "{}", records[0].file_name());
        std::fs::write(runs.join(".x.json.1.0.cfn-tmp"), "half").unwrap();
        std::fs::write(runs.join("zzz.json"), "not a record").unwrap();
        std::fs::write(runs.join("20261203T000000000000Z-1.json"), "not JSON").unwrap();
        let listed = history(&runs).unwrap();
        assert_eq!(listed, vec![records[2].clone(), records[0].clone(), records[1].clone()]);
        prune(&runs, 3);
        // The unreadable record counts as the newest; the oldest went, the foreign file stays.
        assert_eq!(history(&runs).unwrap(), vec![records[2].clone(), records[0].clone()]);
        assert_eq!(history(&dir.path().join("none")).unwrap(), vec![]);
        assert!(history(&runs.join("zzz.json")).is_err(), "not a directory");
        assert!(runs.join("zzz.json").exists() && runs.join(".x.json.1.0.cfn-tmp").exists());
    }

    #[test]
    fn a_record_of_this_process_is_alive_and_of_an_ended_one_not() {
        let record = RunRecord::starting(Source::Stdin, vec![]);
        assert!(record.is_alive());
        assert!(!RunRecord { start_ticks: record.start_ticks.map(|t| t + 1), ..record }.is_alive());
    }
}
