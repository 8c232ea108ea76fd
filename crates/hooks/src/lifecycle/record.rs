//! `lifecycle.json` beside `metadata_db.json`: what the lifecycle watcher ran and
//! completed, written durably before and after each step, so that cfn-hup killed at any
//! point resumes where it was: an action that finished is not run again, one that was
//! cut short is run again (after its orphaned process group is ended), a completion
//! not yet sent is sent, one already sent is not sent twice, and a notice that was
//! handled is not handled again.
//!
//! cfn-hup writes this file and only cfn-hup reads it (and `status`): it is read as a
//! regular file of at most [`FILE_CAP`] bytes; one that cannot be read is logged and the
//! watcher starts from nothing (the worst case is an action run again).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Far more than the watcher keeps ([`KEEP`] entries of each kind, each well under a KiB).
pub const FILE_CAP: u64 = 1 << 20;
/// Notices and transitions kept: the newest, by when they were first seen.
pub const KEEP: usize = 64;

/// Where a name came from, as [`Transition::group_from`] and [`Transition::hooks_from`]
/// say it.
pub const FROM_CONFIGURATION: &str = "the configuration";
pub const FROM_TAG: &str = "the instance tag aws:autoscaling:groupName";
pub const FROM_DESCRIBE: &str = "DescribeAutoScalingInstances";
pub const FROM_DESCRIBE_HOOKS: &str = "DescribeLifecycleHooks";

/// `<lib>/cfn-hup/data/lifecycle.json`.
pub fn default_path() -> PathBuf {
    cfn_host::paths::lib_dir().join("cfn-hup/data/lifecycle.json")
}

/// One action of a hook section for a notice or a transition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRun {
    pub started: String,
    /// The action's process group while it runs (its leader's pid), and the leader's
    /// start time in clock ticks since boot: a group left behind by a killed cfn-hup is
    /// ended before the action runs again, and only when it is that same process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
    /// The exit code (minus the signal number), or -1 when the action could not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
}

/// The actions run for one notice or transition, by hook section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handling {
    /// The trigger (`on.asg.terminate`, …).
    pub trigger: String,
    pub first_seen: String,
    #[serde(default)]
    pub actions: BTreeMap<String, ActionRun>,
    /// Every action ran and, for a transition, every lifecycle hook was completed.
    #[serde(default)]
    pub done: bool,
}

/// An Auto Scaling transition of this instance (a launch or a termination).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    #[serde(flatten)]
    pub handling: Handling,
    pub instance: String,
    #[serde(default)]
    pub group: String,
    /// Where the group's name came from: [`FROM_CONFIGURATION`], [`FROM_TAG`] or
    /// [`FROM_DESCRIBE`] (for `status` and `doctor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_from: Option<String>,
    /// The lifecycle hooks to complete.
    #[serde(default)]
    pub hooks: Vec<String>,
    /// Where their names came from: [`FROM_CONFIGURATION`] (`lifecycle-hook=`) or
    /// `DescribeLifecycleHooks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks_from: Option<String>,
    /// Heartbeats that Auto Scaling took (each one restarted the hooks' heartbeat timeout).
    #[serde(default)]
    pub heartbeats: u32,
    /// The last heartbeat or completion that failed, as `<action> <hook>: <error>`;
    /// cleared when a completion succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The completions sent (or found unnecessary): hook → result.
    #[serde(default)]
    pub completed: BTreeMap<String, String>,
    /// When the earliest global timeout of its hooks passes (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Spot, rebalance and maintenance notices by identity.
    #[serde(default)]
    pub notices: BTreeMap<String, Handling>,
    /// Transitions by `<trigger> <instance id>`.
    #[serde(default)]
    pub transitions: BTreeMap<String, Transition>,
    #[serde(skip)]
    path: PathBuf,
}

impl Record {
    /// The record at `path`; empty when there is none or it cannot be read (logged).
    /// The record at `path` as it is, for a reader that is not the watcher (`status`,
    /// `doctor`): `Ok(None)` when there is none, an error in words when it cannot be read.
    pub fn read(path: &Path) -> Result<Option<Record>, String> {
        match cfn_host::state_file::read_regular(path, FILE_CAP) {
            Ok(bytes) => serde_json::from_slice::<Record>(&bytes)
                .map(Some)
                .map_err(|e| format!("{} is not a lifecycle record: {e}", path.display())),
            Err(cfn_host::state_file::StateFileError::Missing) => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// The transition or notice handled last (by when it was first seen).
    pub fn last(&self) -> Option<Last<'_>> {
        let transitions = self.transitions.values().map(|t| (&t.handling.first_seen, Last::Transition(t)));
        let notices = self.notices.values().map(|n| (&n.first_seen, Last::Notice(n)));
        transitions.chain(notices).max_by(|a, b| a.0.cmp(b.0)).map(|(_, last)| last)
    }

    pub fn load(path: &Path) -> Record {
        let mut record = match cfn_host::state_file::read_regular(path, FILE_CAP) {
            Ok(bytes) => serde_json::from_slice::<Record>(&bytes).unwrap_or_else(|e| {
                tracing::error!("Could not read {}: {e}; the lifecycle hooks start from nothing", path.display());
                Record::default()
            }),
            Err(cfn_host::state_file::StateFileError::Missing) => Record::default(),
            Err(e) => {
                tracing::error!("Could not read {}: {e}; the lifecycle hooks start from nothing", path.display());
                Record::default()
            }
        };
        record.path = path.to_path_buf();
        record
    }

    /// Writes the record durably (a crash leaves the old or the new one); a failure is
    /// logged: the watcher goes on, and the next step writes again.
    pub fn save(&mut self) {
        self.prune();
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let written = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).and_then(|()| {
            let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
            cfn_host::durable::replace(&self.path, &text, 0o600)
        });
        if let Err(e) = written {
            tracing::error!("Could not write {}: {e}", self.path.display());
        }
    }

    /// Keeps the newest [`KEEP`] finished entries of each kind (unfinished ones are kept).
    fn prune(&mut self) {
        fn oldest_done<'a>(entries: impl Iterator<Item = (&'a String, &'a Handling)>) -> Vec<String> {
            let mut done: Vec<(&String, &String)> =
                entries.filter(|(_, h)| h.done).map(|(k, h)| (&h.first_seen, k)).collect();
            done.sort();
            let extra = done.len().saturating_sub(KEEP);
            done.into_iter().take(extra).map(|(_, k)| k.clone()).collect()
        }
        for key in oldest_done(self.notices.iter()) {
            self.notices.remove(&key);
        }
        for key in oldest_done(self.transitions.iter().map(|(k, t)| (k, &t.handling))) {
            self.transitions.remove(&key);
        }
    }
}

use std::os::unix::fs::DirBuilderExt;

/// The newest entry of a record.
#[derive(Debug, Clone, Copy)]
pub enum Last<'a> {
    Transition(&'a Transition),
    Notice(&'a Handling),
}

impl Last<'_> {
    pub fn handling(&self) -> &Handling {
        match self {
            Last::Transition(t) => &t.handling,
            Last::Notice(n) => n,
        }
    }
}

/// The key of a transition in [`Record::transitions`].
pub fn transition_key(trigger: super::Trigger, instance: &str) -> String {
    format!("{} {instance}", trigger.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_survives_a_save_and_a_bad_file_is_an_empty_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/lifecycle.json");
        let mut record = Record::load(&path);
        assert_eq!(record, Record { path: path.clone(), ..Default::default() });
        let key = transition_key(super::super::Trigger::AsgTerminate, "i-1");
        let t = record.transitions.entry(key.clone()).or_default();
        t.instance = "i-1".into();
        t.handling
            .actions
            .insert("drain".into(), ActionRun { started: "t".into(), code: Some(0), ..Default::default() });
        t.completed.insert("h".into(), "CONTINUE".into());
        record.save();
        assert_eq!(Record::load(&path).transitions[&key], record.transitions[&key]);
        std::fs::write(&path, "{not json").unwrap();
        assert!(Record::load(&path).transitions.is_empty());
    }

    #[test]
    fn only_the_newest_finished_entries_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut record = Record::load(&dir.path().join("lifecycle.json"));
        for i in 0..KEEP + 5 {
            let handling =
                Handling { first_seen: format!("2026-01-01T00:{i:02}:00Z"), done: true, ..Default::default() };
            record.notices.insert(format!("n{i}"), handling);
        }
        record.notices.insert("open".into(), Handling { first_seen: "2000".into(), ..Default::default() });
        record.save();
        assert_eq!(record.notices.len(), KEEP + 1);
        assert!(record.notices.contains_key("open") && !record.notices.contains_key("n0"));
    }
}
