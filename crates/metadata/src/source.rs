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
    /// `line` and `column` are 1-based (0 when the text ended early).
    #[error("Error decoding JSON from {origin}: {reason}")]
    Json { origin: String, reason: String, line: usize, column: usize },
}

/// Metadata as read: the value, and the JSON text it was parsed from when it came from a
/// file or standard input (what positions in messages refer to).
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub value: Value,
    pub text: Option<String>,
}

/// Exactly one source: a stack resource, a file, or `-` for stdin (INIT-CLI-02).
pub fn choose(
    positionals: &[String],
    stack: Option<String>,
    resource: Option<String>,
) -> Result<MetadataSource, &'static str> {
    let positionals: Vec<&String> = positionals.iter().filter(|p| !p.is_empty()).collect();
    let stack = stack.filter(|s| !s.is_empty());
    let resource = resource.filter(|s| !s.is_empty());
    if positionals.len() > 1 || (!positionals.is_empty() && (stack.is_some() || resource.is_some())) {
        return Err("You cannot specify more than one input source for metadata");
    }
    if let Some(file) = positionals.first() {
        return Ok(if *file == "-" { MetadataSource::Stdin } else { MetadataSource::File(file.into()) });
    }
    match (stack, resource) {
        (Some(stack), Some(logical_id)) => Ok(MetadataSource::Stack { stack, logical_id }),
        (None, None) => {
            Err("You must specify an input source for metadata: a stack name and logical resource id, or a file")
        }
        _ => Err("You must specify both a stack name and logical resource id"),
    }
}

/// Fetches the metadata from `source`. `cloudformation` is needed only for a stack.
pub fn fetch(source: &MetadataSource, cloudformation: Option<&CloudFormation>) -> Result<Value, SourceError> {
    fetch_with_text(source, cloudformation).map(|fetched| fetched.value)
}

/// [`fetch`], keeping the text of a file or of standard input.
pub fn fetch_with_text(
    source: &MetadataSource,
    cloudformation: Option<&CloudFormation>,
) -> Result<Fetched, SourceError> {
    let (bytes, origin) = match source {
        MetadataSource::Stack { stack, logical_id } => {
            let client = cloudformation.expect("a stack source needs a CloudFormation client");
            let detail = client.describe_stack_resource(stack, logical_id)?;
            let value = detail.metadata.ok_or_else(|| SourceError::NoMetadata(logical_id.clone()))?;
            return Ok(Fetched { value, text: None });
        }
        MetadataSource::File(path) => {
            let shown = path.display().to_string();
            let file = std::fs::File::open(path)
                .map_err(|e| SourceError::Io { path: shown.clone(), reason: cfn_python::strerror(&e) })?;
            (read_all(file, &shown)?, shown)
        }
        MetadataSource::Stdin => (read_all(std::io::stdin().lock(), "standard input")?, "stdin".to_string()),
    };
    let value = parse(&bytes, &origin)?;
    Ok(Fetched { value, text: String::from_utf8(bytes).ok() })
}

/// Reads a metadata file, opened read-only (the reference opened it read-write, so a
/// read-only file failed for non-root users).
pub fn read_file(path: &Path) -> Result<Value, SourceError> {
    fetch(&MetadataSource::File(path.to_path_buf()), None)
}

fn read_all(mut reader: impl Read, shown: &str) -> Result<Vec<u8>, SourceError> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| SourceError::Io { path: shown.to_string(), reason: cfn_python::strerror(&e) })?;
    Ok(bytes)
}

fn parse(bytes: &[u8], origin: &str) -> Result<Value, SourceError> {
    serde_json::from_slice(bytes).map_err(|e| SourceError::Json {
        origin: origin.to_string(),
        reason: e.to_string(),
        line: e.line(),
        column: e.column(),
    })
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
