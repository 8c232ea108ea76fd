//! rpm (INIT-PKG-04, INIT-PKG-05) and the RPM version comparison yum, dnf and zypper
//! use (INIT-PKG-11).
//!
//! Each location (a path or a URL rpm understands) is queried with `rpm -qp`; one
//! already installed (`rpm -q --quiet name-version-release`) is skipped; the rest are
//! installed together with `rpm -U --quiet --nosignature --replacepkgs`. A location
//! that cannot be queried is an error: the reference treated it as installed and
//! skipped it silently (BUG-RPMSKIP).

use crate::model::kind;
use crate::tool::{self, py_list, tool_error};
use cfn_aws::http;
use serde_json::Value;
use std::cmp::Ordering;

/// A label (the key in the metadata) and its locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpmEntry {
    pub label: String,
    pub locations: Vec<String>,
}

pub fn parse_locations(config: &str, value: &Value) -> Result<Vec<RpmEntry>, String> {
    let map = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Object(map) => map,
        other => return Err(format!("config {config}: packages rpm must be an object, not {}", kind(other))),
    };
    let mut entries = Vec::new();
    for (label, spec) in map {
        let bad =
            |v: &Value| format!("config {config}, packages rpm {label}: a location must be a string, not {}", kind(v));
        let locations = match spec {
            Value::Null => vec![String::new()],
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => {
                items.iter().map(|i| i.as_str().map(str::to_string).ok_or_else(|| bad(i))).collect::<Result<_, _>>()?
            }
            other => return Err(bad(other)),
        };
        entries.push(RpmEntry { label: label.clone(), locations });
    }
    Ok(entries)
}

const QUERY_FORMAT: &str = "%{NAME}|%{VERSION}-%{RELEASE}";

/// `rpm -qp` of a package file: its name and version-release.
pub fn query_file_argv(location: &str) -> Vec<String> {
    ["rpm", "-qp", "--queryformat", QUERY_FORMAT, "--nosignature", location].map(String::from).into()
}

/// `rpm -qa` of an installed package name (used by yum, dnf and zypper).
pub fn query_installed_argv(name: &str) -> Vec<String> {
    ["rpm", "-qa", "--queryformat", QUERY_FORMAT, "--nosignature", name].map(String::from).into()
}

pub fn is_installed_argv(name_version: &str) -> Vec<String> {
    ["rpm", "-q", "--quiet", name_version].map(String::from).into()
}

pub fn install_argv(locations: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = ["rpm", "-U", "--quiet", "--nosignature", "--replacepkgs"].map(String::from).into();
    argv.extend(locations.iter().cloned());
    argv
}

/// Splits `name|version-release` as printed with [`QUERY_FORMAT`].
pub fn parse_query(output: &str) -> Option<(String, String)> {
    let (name, version) = output.trim().split_once('|')?;
    (!name.is_empty()).then(|| (name.to_string(), version.to_string()))
}

/// The installed `VERSION-RELEASE` of `name`, if any.
pub fn installed_version(name: &str) -> Result<Option<String>, String> {
    tracing::debug!("Querying for version of package {name}");
    let out = run_logged(&query_installed_argv(name))?;
    if !out.ok() {
        return Ok(None);
    }
    Ok(parse_query(&out.text).map(|(_, v)| v))
}

fn run(argv: &[String]) -> Result<tool::Output, String> {
    tool::query_stdout(&argv.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A query whose standard output and standard error are both logged, as the reference
/// logs them (tests/golden/cfn-init-system/yum).
fn run_logged(argv: &[String]) -> Result<tool::Output, String> {
    let (out, stderr) = tool::query_streams(&argv.iter().map(String::as_str).collect::<Vec<_>>())?;
    tracing::debug!("RPM stdout: {}", out.text);
    tracing::debug!("RPM stderr: {stderr}");
    Ok(out)
}

/// Tokens of one part: maximal runs of ASCII letters or digits.
fn tokens(part: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = part.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let digit = bytes[i].is_ascii_digit();
        if !bytes[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphanumeric() && bytes[i].is_ascii_digit() == digit {
            i += 1;
        }
        out.push(&part[start..i]);
    }
    out
}

fn compare_numeric(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The reference's RPM version comparison (SPEC §10.3.1): `VERSION[-RELEASE]`, split
/// once at the first `-`; token by token, numbers compare as integers, a number is
/// newer than letters, letters compare as strings; with all shared tokens equal, more
/// tokens is newer. `None` (not installed) is older than anything but `None`.
pub fn compare_versions(first: Option<&str>, second: Option<&str>) -> Ordering {
    let fields = |v: Option<&str>| -> Vec<String> {
        match v {
            None | Some("") => Vec::new(),
            Some(v) => match v.split_once('-') {
                Some((a, b)) => vec![a.to_string(), b.to_string()],
                None => vec![v.to_string()],
            },
        }
    };
    let (first, second) = (fields(first), fields(second));
    for i in 0..2 {
        let a = first.get(i).map(|s| tokens(s)).unwrap_or_default();
        let b = second.get(i).map(|s| tokens(s)).unwrap_or_default();
        for (x, y) in a.iter().zip(b.iter()) {
            let (xd, yd) = (x.as_bytes()[0].is_ascii_digit(), y.as_bytes()[0].is_ascii_digit());
            let ord = match (xd, yd) {
                (true, true) => compare_numeric(x, y),
                (true, false) => return Ordering::Greater,
                (false, true) => return Ordering::Less,
                (false, false) => x.cmp(y),
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        if a.len() != b.len() {
            return a.len().cmp(&b.len());
        }
    }
    Ordering::Equal
}

/// The newest of `versions` by [`compare_versions`]; empty entries never win.
pub fn max_version(versions: &[String]) -> Option<String> {
    let mut max: Option<&str> = None;
    for v in versions {
        if compare_versions(max, Some(v)) == Ordering::Less {
            max = Some(v);
        }
    }
    max.map(str::to_string)
}

pub fn apply(entries: &[RpmEntry]) -> Result<Vec<String>, String> {
    if entries.is_empty() {
        tracing::debug!("No packages installed for RPM");
        return Ok(Vec::new());
    }
    let mut locations = Vec::new();
    let mut changed = Vec::new();
    for entry in entries {
        let mut wanted = Vec::new();
        for location in &entry.locations {
            if location.is_empty() {
                tracing::warn!("RPM specified with no location");
                continue;
            }
            tool::refuse_option_like("rpm", "location", location)?;
            // A URL location may carry a password or a presigned signature (SEC-02).
            let shown = http::redact_url(location);
            tracing::debug!("Querying for version of package {shown}");
            let query = run(&query_file_argv(location))?;
            tracing::debug!("RPM stdout: {}", query.text);
            let Some((name, version)) = query.ok().then(|| parse_query(&query.text)).flatten() else {
                tracing::error!("Could not determine package contained by rpm at {shown}");
                return Err(tool_error(format!("Could not determine package contained by rpm at {shown}"), query.code));
            };
            let spec = if version.is_empty() { name } else { format!("{name}-{version}") };
            if run(&is_installed_argv(&spec))?.ok() {
                tracing::debug!("Skipping RPM at {shown} as it is already installed");
                continue;
            }
            wanted.push(location.clone());
        }
        if !wanted.is_empty() {
            locations.extend(wanted);
            changed.push(entry.label.clone());
        }
    }
    if locations.is_empty() {
        tracing::info!("All RPMs were already installed");
        return Ok(Vec::new());
    }
    let shown: Vec<String> = locations.iter().map(|l| http::redact_url(l)).collect();
    tracing::debug!("Installing {} via RPM", py_list(&shown));
    let argv = install_argv(&locations);
    let result = tool::logged(&install_argv(&shown).join(" "), argv, &[])?;
    if !result.ok() {
        tracing::error!("RPM failed. Output: {}", result.text);
        return Err(tool_error("Could not successfully install rpm packages", result.code));
    }
    tracing::debug!("RPM output: {}", result.text);
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    fn cmp(a: &str, b: &str) -> Ordering {
        compare_versions(Some(a), Some(b))
    }

    #[test]
    fn rpm_version_comparison() {
        assert_eq!(cmp("1.0", "1.0"), Equal);
        assert_eq!(cmp("1.10", "1.9"), Greater);
        assert_eq!(cmp("1.0", "1.0.1"), Less);
        assert_eq!(cmp("2.0-1", "2.0-2"), Less);
        assert_eq!(cmp("2.0-10", "2.0-9"), Greater);
        assert_eq!(cmp("2.0", "2.0-1"), Less);
        assert_eq!(cmp("1.0a", "1.0"), Greater);
        assert_eq!(cmp("1.0a", "1.0b"), Less);
        assert_eq!(cmp("1.a", "1.1"), Less);
        assert_eq!(cmp("1.1", "1.a"), Greater);
        assert_eq!(cmp("1_0", "1.0"), Equal);
        assert_eq!(cmp("007", "7"), Equal);
        assert_eq!(cmp("1.0-1.el7", "1.0-1.el8"), Less);
        assert_eq!(cmp("99999999999999999999.1", "99999999999999999999.0"), Greater);
        assert_eq!(cmp("2.4.6-1.amzn2", "2.4.6-1.amzn2"), Equal);
        assert_eq!(compare_versions(None, Some("0")), Less);
        assert_eq!(compare_versions(Some("0"), None), Greater);
        assert_eq!(compare_versions(None, None), Equal);
        // Only the first `-` splits: the rest belongs to the release.
        assert_eq!(cmp("1-2-3", "1-2-4"), Less);
    }

    #[test]
    fn max_of_a_list() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(max_version(&v(&["1.2", "1.10", "1.9"])), Some("1.10".into()));
        assert_eq!(max_version(&v(&["", "1.0"])), Some("1.0".into()));
        assert_eq!(max_version(&v(&[""])), None);
        assert_eq!(max_version(&v(&[])), None);
    }

    #[test]
    fn argv_forms() {
        assert_eq!(
            query_file_argv("/tmp/x.rpm"),
            ["rpm", "-qp", "--queryformat", "%{NAME}|%{VERSION}-%{RELEASE}", "--nosignature", "/tmp/x.rpm"]
        );
        assert_eq!(
            query_installed_argv("httpd"),
            ["rpm", "-qa", "--queryformat", "%{NAME}|%{VERSION}-%{RELEASE}", "--nosignature", "httpd"]
        );
        assert_eq!(is_installed_argv("tiny-1.0-1"), ["rpm", "-q", "--quiet", "tiny-1.0-1"]);
        assert_eq!(
            install_argv(&["/a.rpm".into(), "http://h/b.rpm".into()]),
            ["rpm", "-U", "--quiet", "--nosignature", "--replacepkgs", "/a.rpm", "http://h/b.rpm"]
        );
        assert_eq!(parse_query("tiny|1.0-1"), Some(("tiny".into(), "1.0-1".into())));
        assert_eq!(parse_query("error: open failed"), None);
    }

    #[test]
    fn locations() {
        let e = parse_locations("c", &serde_json::json!({"a": "/x.rpm", "b": ["/y.rpm", ""], "c": null})).unwrap();
        assert_eq!(e[1].locations, ["/y.rpm", ""]);
        assert_eq!(e[2].locations, [""]);
        assert!(parse_locations("c", &serde_json::json!({"a": 1})).is_err());
    }

    #[test]
    fn unreadable_location_is_an_error() {
        // INIT-PKG-05: the reference skipped it silently. Without rpm installed the
        // query itself fails to run, which is an error too.
        let dir = tempfile::tempdir().unwrap();
        let bogus = dir.path().join("not-an.rpm");
        std::fs::write(&bogus, b"not an rpm").unwrap();
        let entry = RpmEntry { label: "x".into(), locations: vec![bogus.display().to_string()] };
        let err = apply(&[entry]).unwrap_err();
        assert!(err.contains("rpm"), "{err}");
        let entry = RpmEntry { label: "x".into(), locations: vec!["--eval=x".into()] };
        assert!(apply(&[entry]).unwrap_err().contains("must not start with '-'"));
    }
}
