//! Where metadata comes from: a stack resource, a local file or standard input
//! (INIT-CLI-02..04, INIT-CLI-09).

use cfn_aws::cfn::{self, CloudFormation};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataSource {
    Stack { stack: String, logical_id: String },
    File(PathBuf),
    Stdin,
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Api(#[from] cfn::Error),
    /// Printed by the tools as `Error: <LogicalId> does not specify any metadata`.
    #[error("{0} does not specify any metadata")]
    NoMetadata(String),
    #[error("Could not read {path}: {reason}")]
    Io { path: String, reason: String },
    #[error("Error decoding JSON from {origin}: {reason}")]
    Json { origin: String, reason: String },
}

/// Fetches the metadata from `source`. `cloudformation` is needed only for a stack.
pub fn fetch(source: &MetadataSource, cloudformation: Option<&CloudFormation>) -> Result<Value, SourceError> {
    match source {
        MetadataSource::Stack { stack, logical_id } => {
            let client = cloudformation.expect("a stack source needs a CloudFormation client");
            let detail = client.describe_stack_resource(stack, logical_id)?;
            detail.metadata.ok_or_else(|| SourceError::NoMetadata(logical_id.clone()))
        }
        MetadataSource::File(path) => read_file(path),
        MetadataSource::Stdin => parse(&read_all(std::io::stdin().lock(), "standard input")?, "stdin"),
    }
}

/// Reads a metadata file, opened read-only (the reference opened it read-write, so a
/// read-only file failed for non-root users).
pub fn read_file(path: &Path) -> Result<Value, SourceError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| SourceError::Io { path: shown.clone(), reason: cfn_python::strerror(&e) })?;
    parse(&read_all(file, &shown)?, &shown)
}

fn read_all(mut reader: impl Read, shown: &str) -> Result<Vec<u8>, SourceError> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| SourceError::Io { path: shown.to_string(), reason: cfn_python::strerror(&e) })?;
    Ok(bytes)
}

fn parse(bytes: &[u8], origin: &str) -> Result<Value, SourceError> {
    serde_json::from_slice(bytes).map_err(|e| SourceError::Json { origin: origin.to_string(), reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_files_and_reports_errors_clearly() {
        let mut good = tempfile::NamedTempFile::new().unwrap();
        good.write_all(br#"{"a": 1}"#).unwrap();
        assert_eq!(read_file(good.path()).unwrap(), serde_json::json!({"a": 1}));

        let mut bad = tempfile::NamedTempFile::new().unwrap();
        bad.write_all(b"{\"a\": ").unwrap();
        let e = read_file(bad.path()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("Error decoding JSON from {}: EOF while parsing", bad.path().display())), "{e}");

        let e = read_file(Path::new("/nonexistent/metadata.json")).unwrap_err().to_string();
        assert_eq!(e, "Could not read /nonexistent/metadata.json: No such file or directory");
    }
}
