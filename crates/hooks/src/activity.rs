//! `/var/lib/cfn-hup/data/activity.json`: what cfn-hup did lately, for
//! `cfn-bootstrap status` and `doctor` — its last pass (when, how it went), its last
//! error, its last [`HOOK_RUNS`] hook actions (which hook, when, exit code, how long), and
//! the update hooks whose action is failing ([`FailingHook`]: how many tries, since when,
//! the next try; the service's back-off, [`crate::backoff`], keeps its state here).
//! cfn-bootstrap's own file; the reference has none.
//!
//! Written once per pass, by the pass's own thread after the pass, and after each
//! command hook's action by the listener's round; replaced whole and durably like the
//! other state files, readable by root only (an error may name a resource or a path).

use crate::runner::PassReport;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The hook actions kept, newest last.
pub const HOOK_RUNS: usize = 20;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub last_pass: Option<Pass>,
    pub last_error: Option<ErrorSeen>,
    pub hook_runs: Vec<HookRun>,
    /// The update hooks whose action failed at its last try, as the service (daemon or
    /// foreground mode) left them after its last pass; empty in files written before
    /// this list existed.
    #[serde(default)]
    pub failing_hooks: Vec<FailingHook>,
    /// When the running service (daemon or foreground) last read its configuration, at
    /// its start or a reload: what `doctor` compares the files' changes with.
    #[serde(default)]
    pub config_read: Option<ConfigRead>,
}

/// The service's last reading of its configuration directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRead {
    /// RFC 3339 UTC.
    pub time: String,
    /// The process that read it.
    pub pid: u32,
}

/// An update hook whose action failed at its last try (for the value the hook's path
/// has now), in daemon and foreground modes: its action is tried again until it
/// succeeds or the value changes, at every pass for the first
/// [`FREE_TRIES`](crate::backoff::FREE_TRIES) tries, then 2, 4, 8, … intervals apart
/// up to `max-backoff` ([`crate::backoff`]). `--no-daemon` neither adds nor removes
/// entries. Times are RFC 3339 UTC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailingHook {
    /// The hook's name (its section in the hook files).
    pub hook: String,
    /// The hook's path, e.g. `Resources.Instance.Metadata.AWS::CloudFormation::Init`.
    pub path: String,
    /// Failed tries in a row for the current value (1, 2, …).
    pub tries: u32,
    /// When the first of those tries started.
    pub since: String,
    /// When the last try started.
    pub last_try: String,
    /// How the last try failed: `exit 3`, or why the action could not run.
    pub last_error: String,
    /// Passes still to leave out before the next try (0: the next pass tries again).
    pub passes_to_skip: u32,
    /// When the next try is due, as reckoned at the last try: the last try's end plus
    /// `passes_to_skip + 1` intervals (a new value is tried at the next pass instead).
    pub next_try: String,
    /// SHA-256 (hex) of the value the action failed for, as `metadata_db.json` stores
    /// values: another value ends the back-off. The value itself is not kept here: it
    /// may hold secrets and this file is shown by `status`.
    pub value_sha256: String,
}

/// The key of a failing hook's entries in the state files: `<hook>|<path>`.
pub fn hook_key(hook: &FailingHook) -> String {
    crate::MetadataDb::key(&hook.hook, &hook.path)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pass {
    /// When it ended, RFC 3339 UTC.
    pub time: String,
    /// `ok`, `actions failed`, `unavailable` or `throttled`.
    pub outcome: String,
    pub actions_run: usize,
    pub actions_failed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorSeen {
    pub time: String,
    pub message: String,
}

/// One hook action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRun {
    pub hook: String,
    /// When it started, RFC 3339 UTC.
    pub started: String,
    /// Its exit code; `None` when it could not be started (then `error` says why).
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub seconds: f64,
}

impl HookRun {
    pub fn new(hook: &str, started: String, took: Duration, ran: &Result<i32, String>) -> HookRun {
        HookRun {
            hook: hook.to_string(),
            started,
            exit_code: ran.as_ref().ok().copied(),
            error: ran.as_ref().err().cloned(),
            seconds: (took.as_secs_f64() * 1000.0).round() / 1000.0,
        }
    }
}

/// Now, RFC 3339 with milliseconds, UTC.
pub fn now() -> String {
    time(chrono::Utc::now())
}

/// A time as this file writes it: RFC 3339 with milliseconds, UTC.
pub fn time(time: chrono::DateTime<chrono::Utc>) -> String {
    time.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// `<lib>/cfn-hup/data/activity.json`.
pub fn default_path() -> PathBuf {
    cfn_host::paths::lib_dir().join("cfn-hup/data/activity.json")
}

/// The most `activity.json` may hold. cfn-hup writes at most [`HOOK_RUNS`] hook runs and
/// one entry per failing hook, each well under a KiB: the file stays in the tens of KiB.
/// A cap hundreds of times that leaves room for any real file, and bounds what a report
/// reads when something else stands at the path (`/dev/zero`).
pub const FILE_CAP: u64 = 4 << 20;

/// Why the activity file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ActivityError {
    #[error("cannot read {path}: {source}")]
    Unreadable { path: String, source: cfn_host::state_file::StateFileError },
    #[error("cannot read {path}: it is not cfn-hup's activity record ({reason})")]
    Invalid { path: String, reason: String },
}

/// The activity recorded at `path`: `None` when there is no file. Read as a state file
/// (`cfn_host::state_file`): only a regular file, never waiting, at most [`FILE_CAP`].
pub fn read(path: &Path) -> Result<Option<Activity>, ActivityError> {
    use cfn_host::state_file::{StateFileError, read_regular};
    let shown = || path.display().to_string();
    let bytes = match read_regular(path, FILE_CAP) {
        Ok(bytes) => bytes,
        Err(StateFileError::Missing) => return Ok(None),
        Err(source) => return Err(ActivityError::Unreadable { path: shown(), source }),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ActivityError::Invalid { path: shown(), reason: e.to_string() })
}

/// The activity recorded at `path`; none when there is no (readable) file.
pub fn load(path: &Path) -> Option<Activity> {
    read(path).ok().flatten()
}

impl Activity {
    /// Adds a pass's report.
    pub fn add(&mut self, report: &PassReport) {
        let time = now();
        let outcome = match report.health() {
            crate::Health::Unavailable(_) => "unavailable",
            crate::Health::Throttled(_) => "throttled",
            crate::Health::Ok if report.actions_failed > 0 => "actions failed",
            crate::Health::Ok => "ok",
        };
        self.last_pass = Some(Pass {
            time: time.clone(),
            outcome: outcome.to_string(),
            actions_run: report.actions_run,
            actions_failed: report.actions_failed,
        });
        if let Some(message) = &report.last_error {
            self.last_error = Some(ErrorSeen { time, message: message.clone() });
        }
        self.hook_runs.extend(report.hook_runs.iter().cloned());
        if let Some(failing) = &report.failing_hooks {
            self.failing_hooks = failing.clone();
        }
        self.keep_bounded();
    }

    fn keep_bounded(&mut self) {
        let excess = self.hook_runs.len().saturating_sub(HOOK_RUNS);
        self.hook_runs.drain(..excess);
    }
}

/// Records that this process has just read its configuration (started, or reloaded).
pub fn record_config_read(path: &Path, read_at: chrono::DateTime<chrono::Utc>) {
    update(path, |activity| {
        activity.config_read = Some(ConfigRead { time: time(read_at), pid: std::process::id() });
    });
}

/// Adds a pass's report to the file at `path` (its directory made 0700 when missing).
pub fn record(path: &Path, report: &PassReport) {
    update(path, |activity| activity.add(report));
}

/// Adds the run of a command hook's action (the command listener's rounds run beside
/// the passes).
pub fn record_hook_run(path: &Path, run: HookRun) {
    update(path, |activity| {
        let failed = match (run.exit_code, &run.error) {
            (Some(0), _) => None,
            (Some(code), _) => Some(format!("Action for {} exited with {code}", run.hook)),
            (None, error) => Some(format!("Action for {} {}", run.hook, error.as_deref().unwrap_or("did not run"))),
        };
        if let Some(message) = failed {
            activity.last_error = Some(ErrorSeen { time: now(), message });
        }
        activity.hook_runs.push(run);
        activity.keep_bounded();
    });
}

/// Reads, changes and writes the file, one writer of this process at a time (the pass
/// and the listener's round run on threads of their own). A failure is logged at DEBUG:
/// the record is an aid, and the pass went as it went.
fn update(path: &Path, change: impl FnOnce(&mut Activity)) {
    static WRITER: Mutex<()> = Mutex::new(());
    let _one_at_a_time = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let mut activity = load(path).unwrap_or_default();
    change(&mut activity);
    let written = create_dir(path).map_err(|e| e.to_string()).and_then(|()| {
        let text = serde_json::to_vec_pretty(&activity).map_err(|e| e.to_string())?;
        cfn_host::durable::replace(path, &text, 0o600).map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        tracing::debug!("Could not record cfn-hup's activity in {}: {e}", path.display());
    }
}

/// The file's directory, made 0700 when missing — silently: the state's own directory
/// is logged when made, and this file adds no log line.
fn create_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match path.parent().filter(|d| !d.is_dir()) {
        Some(dir) => std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn passes_errors_and_a_bounded_list_of_hook_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/activity.json");
        let run = |hook: &str, ran: Result<i32, String>| HookRun::new(hook, now(), Duration::from_millis(1500), &ran);
        let failing = PassReport {
            actions_run: 2,
            actions_failed: 1,
            hook_runs: vec![run("a", Ok(0)), run("b", Ok(3))],
            last_error: Some("Action for b exited with 3".into()),
            ..Default::default()
        };
        record(&path, &failing);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let activity = load(&path).unwrap();
        assert_eq!(activity.last_pass.as_ref().unwrap().outcome, "actions failed");
        assert_eq!(activity.last_error.as_ref().unwrap().message, "Action for b exited with 3");
        assert_eq!(activity.hook_runs[1].exit_code, Some(3));
        assert_eq!(activity.hook_runs[1].seconds, 1.5);

        // A quiet pass keeps the last error; the hook runs stay bounded, newest last.
        for i in 0..HOOK_RUNS {
            let report =
                PassReport { hook_runs: vec![run(&format!("h{i}"), Err("no user".into()))], ..Default::default() };
            record(&path, &report);
        }
        let activity = load(&path).unwrap();
        assert_eq!(activity.last_pass.as_ref().unwrap().outcome, "ok");
        assert_eq!(activity.last_error.as_ref().unwrap().message, "Action for b exited with 3");
        assert_eq!(activity.hook_runs.len(), HOOK_RUNS);
        assert_eq!(activity.hook_runs.last().unwrap().hook, format!("h{}", HOOK_RUNS - 1));
        assert_eq!(activity.hook_runs.last().unwrap().error.as_deref(), Some("no user"));

        // A command hook's run: added, and its failure is the last error.
        record_hook_run(&path, run("command", Ok(2)));
        let activity = load(&path).unwrap();
        assert_eq!(activity.hook_runs.len(), HOOK_RUNS);
        assert_eq!(activity.hook_runs.last().unwrap().exit_code, Some(2));
        assert_eq!(activity.last_error.as_ref().unwrap().message, "Action for command exited with 2");
        assert_eq!(activity.last_pass.as_ref().unwrap().outcome, "ok", "not a pass");
    }
}
