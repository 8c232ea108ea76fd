//! What cfn-init last ran with, kept for cfn-hup's baseline (issue 13, item 16).
//!
//! `<lib>/cfn-init/data/metadata.json` holds the metadata only, in the reference's format
//! (STATE-01): it does not say which stack or resource it came from. So cfn-init also
//! writes `metadata_source.json` beside it, naming the stack, region and logical id it
//! read the metadata from, with the SHA-256 of the `metadata.json` text it belongs to.
//! A copy that the record does not describe — written by the reference, by cfn-init
//! reading a file or stdin, or by a run that stopped between the two writes — does not
//! match the digest, so it is never attributed to a resource.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// cfn-init's copy of the metadata (STATE-01).
pub const METADATA_FILE: &str = "metadata.json";
/// Where that copy came from.
pub const SOURCE_FILE: &str = "metadata_source.json";

/// The stack resource cfn-init read its metadata from, as it was asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `--stack` as given: a name or an ARN.
    pub stack: String,
    /// The region cfn-init used (`--region`, default us-east-1).
    pub region: String,
    pub logical_id: String,
}

impl Origin {
    /// True when this is the resource `logical_id` of `stack` in `region` (a stack name
    /// matches the ARN of a stack of that name; two ARNs must be equal).
    pub fn is(&self, stack: &str, region: &str, logical_id: &str) -> bool {
        self.region == region && self.logical_id == logical_id && same_stack(&self.stack, stack)
    }
}

/// `name`, `arn:<partition>:cloudformation:<region>:<account>:stack/<name>/<id>`.
fn same_stack(a: &str, b: &str) -> bool {
    fn name_in_arn(s: &str) -> Option<&str> {
        let parts: Vec<&str> = s.strip_prefix("arn:")?.splitn(5, ':').collect();
        let [_partition, "cloudformation", _region, _account, resource] = parts[..] else {
            return None;
        };
        resource.strip_prefix("stack/")?.split('/').next()
    }
    a == b
        || match (name_in_arn(a), name_in_arn(b)) {
            (Some(name), None) => name == b,
            (None, Some(name)) => name == a,
            _ => false,
        }
}

fn digest(text: &[u8]) -> String {
    Sha256::digest(text).iter().map(|b| format!("{b:02x}")).collect()
}

/// Records where the metadata cfn-init has just stored as `metadata.json` (its text is
/// `stored`) came from, or removes the record when it came from a file or stdin.
/// Written to a temporary file renamed over the old one, 0600. A record that is lost or
/// torn by a crash only leaves cfn-hup without the baseline (it no longer matches).
pub fn record(data: &Path, origin: Option<&Origin>, stored: &str) -> std::io::Result<()> {
    let target = data.join(SOURCE_FILE);
    let Some(origin) = origin else {
        return match std::fs::remove_file(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    };
    let mut map = Map::new();
    map.insert("stack".into(), Value::String(origin.stack.clone()));
    map.insert("region".into(), Value::String(origin.region.clone()));
    map.insert("logical_id".into(), Value::String(origin.logical_id.clone()));
    map.insert("metadata_sha256".into(), Value::String(digest(stored.as_bytes())));
    let text = Value::Object(map).to_string();
    if std::fs::read(&target).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    // Synced like metadata.json, which it describes (issue 13, item 14).
    cfn_host::durable::replace(&target, text.as_bytes(), 0o600)
}

/// cfn-init's copy of the metadata with the resource it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub origin: Origin,
    pub metadata: Value,
}

/// Why there is no usable copy.
#[derive(Debug, thiserror::Error)]
pub enum AppliedError {
    #[error("{0} does not exist")]
    Missing(PathBuf),
    #[error("{0} names no stack resource (cfn-init read a file or stdin, or is older)")]
    NoRecord(PathBuf),
    #[error("Could not read {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("{metadata} was not written with {record}; its resource is unknown")]
    Mismatch { metadata: PathBuf, record: PathBuf },
}

/// Reads `metadata.json` and its record from cfn-init's `data` directory.
pub fn read(data: &Path) -> Result<Applied, AppliedError> {
    let metadata_path = data.join(METADATA_FILE);
    let record_path = data.join(SOURCE_FILE);
    let unreadable = |path: &Path, reason: String| AppliedError::Unreadable { path: path.to_path_buf(), reason };
    let text = match std::fs::read(&metadata_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(AppliedError::Missing(metadata_path)),
        Err(e) => return Err(unreadable(&metadata_path, cfn_python::strerror(&e))),
    };
    let record: Value = match std::fs::read(&record_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| unreadable(&record_path, e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(AppliedError::NoRecord(record_path)),
        Err(e) => return Err(unreadable(&record_path, cfn_python::strerror(&e))),
    };
    let field = |name: &str| record.get(name).and_then(Value::as_str).map(str::to_string);
    let (Some(stack), Some(region), Some(logical_id), Some(sha256)) =
        (field("stack"), field("region"), field("logical_id"), field("metadata_sha256"))
    else {
        return Err(unreadable(&record_path, "a field is missing".into()));
    };
    if sha256 != digest(&text) {
        return Err(AppliedError::Mismatch { metadata: metadata_path, record: record_path });
    }
    let metadata = serde_json::from_slice(&text).map_err(|e| unreadable(&metadata_path, e.to_string()))?;
    Ok(Applied { origin: Origin { stack, region, logical_id }, metadata })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    fn origin(stack: &str) -> Origin {
        Origin { stack: stack.into(), region: "us-east-1".into(), logical_id: "Instance".into() }
    }

    #[test]
    fn a_recorded_copy_is_read_back_and_a_foreign_one_is_not_attributed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        assert!(matches!(read(data), Err(AppliedError::Missing(_))));
        let text = cfn_python::json::to_pretty(&json!({"a": {"b": [1, "x"]}}));
        std::fs::write(data.join(METADATA_FILE), &text).unwrap();
        assert!(matches!(read(data), Err(AppliedError::NoRecord(_))), "the reference's copy names no resource");

        record(data, Some(&origin("s")), &text).unwrap();
        let mode = std::fs::metadata(data.join(SOURCE_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let applied = read(data).unwrap();
        assert_eq!(applied, Applied { origin: origin("s"), metadata: json!({"a": {"b": [1, "x"]}}) });

        // metadata.json replaced without the record (the reference, or a crash between writes).
        std::fs::write(data.join(METADATA_FILE), "{}").unwrap();
        let e = read(data).unwrap_err();
        assert!(matches!(e, AppliedError::Mismatch { .. }), "{e}");
        assert!(e.to_string().ends_with("; its resource is unknown"), "{e}");

        // A file or stdin source forgets the record.
        record(data, None, "{}").unwrap();
        assert!(!data.join(SOURCE_FILE).exists());
        record(data, None, "{}").unwrap();
        std::fs::write(data.join(SOURCE_FILE), "{\"stack\": 1}").unwrap();
        assert!(matches!(read(data), Err(AppliedError::Unreadable { .. })));
    }

    #[test]
    fn the_origin_matches_by_stack_name_or_arn_region_and_logical_id() {
        let arn = "arn:aws:cloudformation:us-east-1:123456789012:stack/web/5b9f1e70-0000-11ee-9f2a-0a1b2c3d4e5f";
        assert!(origin("web").is("web", "us-east-1", "Instance"));
        assert!(origin("web").is(arn, "us-east-1", "Instance"));
        assert!(origin(arn).is("web", "us-east-1", "Instance"));
        assert!(origin(arn).is(arn, "us-east-1", "Instance"));
        assert!(!origin(arn).is(&arn.replace("5b9f", "6c0a"), "us-east-1", "Instance"), "another stack of that name");
        assert!(!origin("web").is("web2", "us-east-1", "Instance"));
        assert!(!origin("web").is("web", "eu-west-1", "Instance"));
        assert!(!origin("web").is("web", "us-east-1", "instance"), "logical ids are case-sensitive");
        assert!(!origin("arn:aws:s3:::stack/web").is("web", "us-east-1", "Instance"));
    }
}
