//! `/var/lib/cfn-hup/data/metadata_db.json` (STATE-04): the last value seen for every
//! `"<hook>|<path>"`, in the reference's format so that an in-place upgrade does not
//! re-run hooks. Datetimes (`LastUpdatedTimestamp`) are stored as
//! `{"_datetime: special_serialization: not_regular_json_": "\"2017-07-14T02:40:00.123456\""}`
//! (the value is the JSON text of the ISO string, quotes included). Written atomically
//! (a temporary file of its own, synced and renamed over the old one, then the directory
//! synced: [`cfn_host::durable`]) with mode 0600.

use chrono::NaiveDateTime;
use serde_json::{Map, Value};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub const DATETIME_MARKER: &str = "_datetime: special_serialization: not_regular_json_";

/// A value a hook path resolved to.
#[derive(Debug, Clone, PartialEq)]
pub enum StateValue {
    Json(Value),
    DateTime(NaiveDateTime),
}

impl StateValue {
    /// Present in the sense of the trigger rules: anything but a missing value or JSON
    /// `null`. The reference also treated `""`, `0`, `false`, `{}` and `[]` as missing
    /// (BUG-FALSY); cfn-bootstrap does not (see README, Compatibility).
    pub fn is_present(value: Option<&StateValue>) -> bool {
        !matches!(value, None | Some(StateValue::Json(Value::Null)))
    }

    /// How the value is passed to actions in `CFN_OLD_*`/`CFN_NEW_*` (HUP-ACT-01):
    /// strings as they are, datetimes as ISO 8601 without zone (and without a fraction
    /// when it is zero), anything else as compact JSON.
    pub fn env_text(&self) -> String {
        match self {
            StateValue::Json(Value::String(s)) => s.clone(),
            StateValue::Json(other) => cfn_python::json::to_compact(other),
            StateValue::DateTime(dt) => iso(dt),
        }
    }

    pub(crate) fn to_stored(&self) -> Value {
        match self {
            StateValue::Json(v) => v.clone(),
            StateValue::DateTime(dt) => {
                let mut map = Map::new();
                map.insert(DATETIME_MARKER.to_string(), Value::String(Value::String(iso(dt)).to_string()));
                Value::Object(map)
            }
        }
    }

    fn from_stored(value: &Value) -> StateValue {
        if let Value::Object(map) = value
            && map.len() == 1
            && let Some(Value::String(text)) = map.get(DATETIME_MARKER)
            && let Some(dt) = parse_marker(text)
        {
            return StateValue::DateTime(dt);
        }
        StateValue::Json(value.clone())
    }
}

/// Python's `datetime.isoformat()`: microseconds only when non-zero.
pub fn iso(dt: &NaiveDateTime) -> String {
    if dt.and_utc().timestamp_subsec_micros() == 0 {
        dt.format("%Y-%m-%dT%H:%M:%S").to_string()
    } else {
        dt.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
    }
}

fn parse_marker(text: &str) -> Option<NaiveDateTime> {
    let inner: String = serde_json::from_str(text).ok()?;
    NaiveDateTime::parse_from_str(&inner, "%Y-%m-%dT%H:%M:%S%.f").ok()
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("Could not create {path}: {source}")]
    Directory { path: String, source: std::io::Error },
    #[error("Could not write {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// The state file and its entries, in the order they were first stored, and the
/// record of actions started but not ended.
#[derive(Debug)]
pub struct MetadataDb {
    path: PathBuf,
    entries: Map<String, Value>,
    /// Keys whose action started and has not ended: kept in a file of its own beside the
    /// state ([`STARTED_FILE`]), so that an action cut short by a kill, a crash or a stop
    /// is run again even when the value went back to the one stored meanwhile (A → B,
    /// the action for B cut short, then back to A: the state still says A).
    started: Vec<String>,
}

/// `actions_started.json` beside `metadata_db.json`: a JSON list of `"<hook>|<path>"`
/// keys. cfn-bootstrap's own; the reference neither writes nor reads it.
pub const STARTED_FILE: &str = "actions_started.json";

impl MetadataDb {
    /// `<lib>/cfn-hup/data/metadata_db.json`.
    pub fn default_path() -> PathBuf {
        cfn_host::paths::lib_dir().join("cfn-hup/data/metadata_db.json")
    }

    /// Makes the directory (0700) and an empty file (0600) when they are missing, as the
    /// reference does when it starts, before its first pass: a user sees where the state
    /// goes before any hook ran. An existing file is left as it is.
    pub fn create(path: &Path) -> Result<(), StateError> {
        create_dir(path)?;
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                Err(StateError::Write { path: path.display().to_string(), source: e })
            }
            _ => Ok(()),
        }
    }

    /// Loads the file; a missing, empty (as [`create`](Self::create) leaves it) or
    /// unreadable one is an empty state (as in the reference).
    pub fn load(path: &Path) -> MetadataDb {
        let entries = match std::fs::read(path) {
            Ok(bytes) if bytes.trim_ascii().is_empty() => Map::new(),
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(map)) => map,
                _ => {
                    tracing::warn!("Ignoring {}: it is not a JSON object; all hooks start afresh", path.display());
                    Map::new()
                }
            },
            Err(_) => Map::new(),
        };
        let started = std::fs::read(path.with_file_name(STARTED_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Vec<String>>(&bytes).ok())
            .unwrap_or_default();
        MetadataDb { path: path.to_path_buf(), entries, started }
    }

    /// Whether the action for `key` started in an earlier pass and never ended.
    pub fn was_interrupted(&self, key: &str) -> bool {
        self.started.iter().any(|k| k == key)
    }

    /// Records, durably, that the action for `key` starts now.
    pub fn action_started(&mut self, key: &str) -> Result<(), StateError> {
        if self.was_interrupted(key) {
            return Ok(());
        }
        self.started.push(key.to_string());
        self.save_started()
    }

    /// Records that the action for `key` ended (its outcome, stored or not, is final).
    pub fn action_ended(&mut self, key: &str) -> Result<(), StateError> {
        let before = self.started.len();
        self.started.retain(|k| k != key);
        if self.started.len() == before {
            return Ok(());
        }
        self.save_started()
    }

    fn save_started(&self) -> Result<(), StateError> {
        let path = self.path.with_file_name(STARTED_FILE);
        create_dir(&self.path)?;
        let text = Value::Array(self.started.iter().cloned().map(Value::String).collect()).to_string();
        cfn_host::durable::replace(&path, text.as_bytes(), 0o600)
            .map_err(|source| StateError::Write { path: path.display().to_string(), source })
    }

    pub fn key(hook: &str, path: &str) -> String {
        format!("{hook}|{path}")
    }

    pub fn get(&self, key: &str) -> Option<StateValue> {
        self.entries.get(key).map(StateValue::from_stored)
    }

    /// Stores a value (`None` is stored as `null`, as the reference does) and writes the
    /// file when anything changed.
    pub fn set(&mut self, key: &str, value: Option<&StateValue>) -> Result<(), StateError> {
        let stored = value.map(StateValue::to_stored).unwrap_or(Value::Null);
        if self.entries.get(key) == Some(&stored) && self.path.exists() {
            return Ok(());
        }
        self.entries.insert(key.to_string(), stored);
        self.save()
    }

    /// Drops the entries whose key is not in `keep` (hooks removed from the configuration,
    /// or whose path changed) and writes the file when any went; the others keep their
    /// order and values. Returns the dropped keys.
    pub fn retain_keys(&mut self, keep: &std::collections::HashSet<String>) -> Result<Vec<String>, StateError> {
        let before = self.started.len();
        self.started.retain(|k| keep.contains(k));
        if self.started.len() != before {
            self.save_started()?;
        }
        let dropped: Vec<String> = self.entries.keys().filter(|k| !keep.contains(*k)).cloned().collect();
        if dropped.is_empty() {
            return Ok(dropped);
        }
        self.entries.retain(|k, _| keep.contains(k));
        self.save()?;
        Ok(dropped)
    }

    /// The file's text: one line of JSON with Python's `", "`/`": "` separators.
    pub fn to_text(&self) -> String {
        cfn_python::json::to_compact(&Value::Object(self.entries.clone()))
    }

    pub fn save(&self) -> Result<(), StateError> {
        create_dir(&self.path)?;
        cfn_host::durable::replace(&self.path, self.to_text().as_bytes(), 0o600)
            .map_err(|source| StateError::Write { path: self.path.display().to_string(), source })
    }
}

/// The directory of the state file `path`, private (0700), when it is missing.
fn create_dir(path: &Path) -> Result<(), StateError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.is_dir() {
        tracing::debug!("Creating {}", dir.display());
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| StateError::Directory { path: dir.display().to_string(), source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    /// Written by the reference 1.4-31 after a pass (tests/golden/cfn-hup/reference-pass).
    const REFERENCE: &str = r#"{"last|Resources.Instance": {"_datetime: special_serialization: not_regular_json_": "\"2026-11-29T20:47:08.128751\""}, "nested-add|Resources.Instance.Metadata.a.b": null, "init-update|Resources.Instance.Metadata.AWS::CloudFormation::Init": {"config": {"files": {"/tmp/a": {"content": "one"}}}}, "phys|Resources.Instance.PhysicalResourceId": "i-68048c238c78348e7", "zero|Resources.Instance.Metadata.n": 0, "falsy|Resources.Instance.Metadata.f": "", "nested-remove|Resources.Instance.Metadata.c": {"leaf": "x"}}"#;

    #[test]
    fn reads_the_reference_format_and_writes_it_back_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata_db.json");
        std::fs::write(&path, REFERENCE).unwrap();
        let db = MetadataDb::load(&path);
        let dt = NaiveDateTime::parse_from_str("2026-11-29T20:47:08.128751", "%Y-%m-%dT%H:%M:%S%.f").unwrap();
        assert_eq!(db.get("last|Resources.Instance"), Some(StateValue::DateTime(dt)));
        assert_eq!(db.get("nested-add|Resources.Instance.Metadata.a.b"), Some(StateValue::Json(Value::Null)));
        assert_eq!(
            db.get("phys|Resources.Instance.PhysicalResourceId"),
            Some(StateValue::Json(json!("i-68048c238c78348e7")))
        );
        assert_eq!(db.get("zero|Resources.Instance.Metadata.n"), Some(StateValue::Json(json!(0))));
        assert_eq!(db.get("nope"), None);
        assert_eq!(db.to_text(), REFERENCE);
    }

    #[test]
    fn round_trip_atomic_0600_and_datetime_without_fraction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/metadata_db.json");
        let mut db = MetadataDb::load(&path);
        let whole = NaiveDateTime::parse_from_str("2017-07-14T02:40:00", "%Y-%m-%dT%H:%M:%S").unwrap();
        db.set("h|Resources.A", Some(&StateValue::DateTime(whole))).unwrap();
        db.set("h|Resources.A.Metadata", Some(&StateValue::Json(json!({"é": [1, "x"]})))).unwrap();
        db.set("g|Resources.A.Metadata.k", None).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            r#"{"h|Resources.A": {"_datetime: special_serialization: not_regular_json_": "\"2017-07-14T02:40:00\""}, "h|Resources.A.Metadata": {"\u00e9": [1, "x"]}, "g|Resources.A.Metadata.k": null}"#
        );
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        let again = MetadataDb::load(&path);
        assert_eq!(again.get("h|Resources.A"), Some(StateValue::DateTime(whole)));
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file is left");
    }

    #[test]
    fn entries_of_hooks_no_longer_configured_are_dropped_and_the_rest_kept_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata_db.json");
        std::fs::write(&path, REFERENCE).unwrap();
        let mut db = MetadataDb::load(&path);
        let keep: std::collections::HashSet<String> =
            ["last|Resources.Instance", "zero|Resources.Instance.Metadata.n", "new|Resources.Other"]
                .into_iter()
                .map(String::from)
                .collect();
        let mut dropped = db.retain_keys(&keep).unwrap();
        dropped.sort();
        assert_eq!(dropped.len(), 5, "{dropped:?}");
        assert_eq!(dropped[0], "falsy|Resources.Instance.Metadata.f");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"last|Resources.Instance": {"_datetime: special_serialization: not_regular_json_": "\"2026-11-29T20:47:08.128751\""}, "zero|Resources.Instance.Metadata.n": 0}"#
        );
        // Nothing to drop: the file is not rewritten.
        std::fs::write(&path, "{}").unwrap();
        let mut db = MetadataDb::load(&path);
        assert!(db.retain_keys(&keep).unwrap().is_empty());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
    }

    #[test]
    fn corrupt_or_missing_files_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata_db.json");
        assert!(MetadataDb::load(&path).entries.is_empty());
        std::fs::write(&path, "{not json").unwrap();
        assert!(MetadataDb::load(&path).entries.is_empty());
        std::fs::write(&path, "[1]").unwrap();
        assert!(MetadataDb::load(&path).entries.is_empty());
    }

    #[test]
    fn env_text_encodings() {
        let dt = NaiveDateTime::parse_from_str("2017-07-14T02:40:00.5", "%Y-%m-%dT%H:%M:%S%.f").unwrap();
        assert_eq!(StateValue::DateTime(dt).env_text(), "2017-07-14T02:40:00.500000");
        assert_eq!(StateValue::Json(json!("plain")).env_text(), "plain");
        assert_eq!(StateValue::Json(json!({"Leaf": "value1"})).env_text(), r#"{"Leaf": "value1"}"#);
        assert_eq!(StateValue::Json(json!([1, true])).env_text(), "[1, true]");
        assert!(StateValue::is_present(Some(&StateValue::Json(json!("")))));
        assert!(StateValue::is_present(Some(&StateValue::Json(json!(0)))));
        assert!(!StateValue::is_present(Some(&StateValue::Json(Value::Null))));
        assert!(!StateValue::is_present(None));
    }
}
