//! `commands_run.json` (STATE-05, SPEC §11.2): the commands this listener has completed,
//! so that a message delivered again (SQS delivers at least once) does not run the
//! action twice. The format is the reference's, so that the file survives an upgrade:
//! `{"by_day": {"YYYY-MM-DDT00:00:00": ["<id>", …]}, "by_id": {"<id>": true}}`. Days older
//! than two days are dropped on every write, which keeps the file (and memory) bounded.

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const DAY_FORMAT: &str = "%Y-%m-%dT00:00:00";
const KEEP: TimeDelta = TimeDelta::days(2);

#[derive(Debug)]
pub struct CommandsRun {
    path: PathBuf,
    /// Completed ids by the day they completed on (the key as written in the file).
    by_day: BTreeMap<String, Vec<String>>,
}

impl CommandsRun {
    /// `<lib>/cfn-hup/data/commands_run.json`.
    pub fn default_path() -> PathBuf {
        cfn_host::paths::lib_dir().join("cfn-hup/data/commands_run.json")
    }

    /// Loads the file. A missing file is an empty record; a corrupt one is deleted and the
    /// record starts empty, as in the reference.
    pub fn load(path: &Path) -> CommandsRun {
        let mut record = CommandsRun { path: path.to_path_buf(), by_day: BTreeMap::new() };
        let Ok(bytes) = std::fs::read(path) else {
            return record;
        };
        match parse(&bytes) {
            Some(by_day) => record.by_day = by_day,
            None => {
                tracing::error!("{} is corrupt; deleting it and starting with no commands run", path.display());
                if let Err(e) = std::fs::remove_file(path) {
                    tracing::error!("Could not delete {}: {e}", path.display());
                }
            }
        }
        record
    }

    pub fn contains(&self, id: &str) -> bool {
        self.by_day.values().any(|ids| ids.iter().any(|i| i == id))
    }

    pub fn len(&self) -> usize {
        self.by_day.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records `id` as completed `now`, drops days older than two days and writes the file.
    pub fn record(&mut self, id: &str, now: DateTime<Utc>) -> std::io::Result<()> {
        if !self.contains(id) {
            self.by_day.entry(now.format(DAY_FORMAT).to_string()).or_default().push(id.to_string());
        }
        self.prune(now);
        self.save()
    }

    /// Drops the days that began more than two days before `now` (and unreadable days).
    pub fn prune(&mut self, now: DateTime<Utc>) {
        let cutoff = now.naive_utc() - KEEP;
        self.by_day.retain(|day, _| NaiveDateTime::parse_from_str(day, "%Y-%m-%dT%H:%M:%S").is_ok_and(|d| d >= cutoff));
    }

    /// The file's text, with Python's `json.dumps` separators.
    pub fn to_text(&self) -> String {
        let mut by_id = Map::new();
        let mut by_day = Map::new();
        for (day, ids) in &self.by_day {
            for id in ids {
                by_id.insert(id.clone(), Value::Bool(true));
            }
            by_day.insert(day.clone(), Value::Array(ids.iter().cloned().map(Value::String).collect()));
        }
        // `by_day` first, as the reference wrote it (tests/golden/cmd-hooks).
        let mut document = Map::new();
        document.insert("by_day".into(), Value::Object(by_day));
        document.insert("by_id".into(), Value::Object(by_id));
        cfn_python::json::to_compact(&Value::Object(document))
    }

    /// Written through a temporary file of its own and a rename, both synced, so a crash
    /// never leaves half a file and two writers never share a temporary file.
    fn save(&self) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        if !dir.is_dir() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        // 0666 less the umask, as `File::create` and the reference's `open` make it.
        cfn_host::durable::replace(&self.path, self.to_text().as_bytes(), 0o666)
    }
}

/// The days of a file's text; `None` when it is not the expected document.
fn parse(bytes: &[u8]) -> Option<BTreeMap<String, Vec<String>>> {
    let document: Value = serde_json::from_slice(bytes).ok()?;
    document.get("by_id")?.as_object()?;
    let days = document.get("by_day")?.as_object()?;
    let mut by_day = BTreeMap::new();
    for (day, ids) in days {
        let ids = ids.as_array()?.iter().map(|i| i.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()?;
        by_day.insert(day.clone(), ids);
    }
    Some(by_day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(day: u32, hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, hour, 0, 0).unwrap()
    }

    #[test]
    fn records_in_the_reference_format_and_prunes_after_two_days() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/commands_run.json");
        let mut run = CommandsRun::load(&path);
        assert!(run.is_empty());
        run.record("d|c|1", at(26, 10)).unwrap();
        run.record("d|c|2", at(27, 9)).unwrap();
        run.record("d|c|2", at(27, 11)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"by_day": {"2026-11-26T00:00:00": ["d|c|1"], "2026-11-27T00:00:00": ["d|c|2"]}, "by_id": {"d|c|1": true, "d|c|2": true}}"#
        );
        // The 26th began more than two days before the 28th at 01:00: dropped.
        run.record("d|c|3", at(28, 1)).unwrap();
        let reloaded = CommandsRun::load(&path);
        assert!(!reloaded.contains("d|c|1") && reloaded.contains("d|c|2") && reloaded.contains("d|c|3"));
        assert_eq!(reloaded.len(), 2);
        assert_eq!(
            reloaded.to_text(),
            r#"{"by_day": {"2026-11-27T00:00:00": ["d|c|2"], "2026-11-28T00:00:00": ["d|c|3"]}, "by_id": {"d|c|2": true, "d|c|3": true}}"#
        );
    }

    #[test]
    fn a_corrupt_file_is_deleted_and_the_record_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("commands_run.json");
        for corrupt in ["{not json", r#"{"by_day": {}}"#, r#"{"by_id": {}, "by_day": {"x": [1]}}"#] {
            std::fs::write(&path, corrupt).unwrap();
            let run = CommandsRun::load(&path);
            assert!(run.is_empty(), "{corrupt}");
            assert!(!path.exists(), "{corrupt} must be deleted");
        }
        // The reference's own file reads back.
        std::fs::write(&path, r#"{"by_id": {"a|b|c": true}, "by_day": {"2026-11-29T00:00:00": ["a|b|c"]}}"#).unwrap();
        assert!(CommandsRun::load(&path).contains("a|b|c"));
    }
}
