//! Whether resolving a profile's credentials would run a program: its own
//! `credential_process`, or that of a profile its `source_profile` chain leads to. A
//! report (`cfn-bootstrap doctor`) must never run one: it says so instead
//! ([`super::CredentialOptions::refuse_processes`]).
//!
//! The files are the SDK's: `AWS_CONFIG_FILE` (else `~/.aws/config`), whose sections are
//! `[profile NAME]` and `[default]`, and `AWS_SHARED_CREDENTIALS_FILE` (else
//! `~/.aws/credentials`), whose sections are `[NAME]`. The reading errs on the side of
//! finding a process: a bare `[NAME]` in the config file (which the SDK ignores) counts
//! too, and keys are matched without regard to case.

use std::path::{Path, PathBuf};

/// The most a profile file may hold here: real ones are a few KiB.
const FILE_CAP: u64 = 1 << 20;
/// How many `source_profile` steps are followed (the SDK refuses loops; so does this).
const CHAIN_LIMIT: usize = 32;

/// A program resolving `profile` would run, and where it is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessFound {
    /// The profile whose `credential_process` it is (the one named, or one its chain reaches).
    pub profile: String,
    pub file: PathBuf,
}

/// Why a profile could not be checked: a profile file that is there but cannot be read
/// as a regular file within its cap. Resolving would have to read it; a report does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    pub file: PathBuf,
    pub reason: String,
}

/// The SDK's two profile files, with `env` giving the variables (`HOME` for `~`).
pub fn profile_files(env: &dyn Fn(&str) -> Option<String>) -> [(PathBuf, Kind); 2] {
    let home = env("HOME").unwrap_or_default();
    let path = |variable: &str, default: &str| {
        let given = env(variable).filter(|v| !v.is_empty()).unwrap_or_else(|| format!("~/{default}"));
        match given.strip_prefix("~/") {
            Some(rest) => Path::new(&home).join(rest),
            None => PathBuf::from(given),
        }
    };
    [
        (path("AWS_CONFIG_FILE", ".aws/config"), Kind::Config),
        (path("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"), Kind::Credentials),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Config,
    Credentials,
}

/// The process resolving `profile` would run, if any.
pub fn find(profile: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<ProcessFound>, Unchecked> {
    let mut files = Vec::new();
    for (path, kind) in profile_files(env) {
        match cfn_host::state_file::read_regular_following(&path, FILE_CAP) {
            Ok(bytes) => files.push((path, kind, String::from_utf8_lossy(&bytes).into_owned())),
            Err(cfn_host::state_file::StateFileError::Missing) => {}
            Err(e) => return Err(Unchecked { file: path, reason: e.to_string() }),
        }
    }
    let mut seen: Vec<String> = Vec::new();
    let mut current = profile.to_string();
    while seen.len() < CHAIN_LIMIT && !seen.contains(&current) {
        let mut source = None;
        for (path, kind, text) in &files {
            let keys = keys_of(text, *kind, &current);
            if keys.iter().any(|(k, _)| k == "credential_process") {
                return Ok(Some(ProcessFound { profile: current, file: path.clone() }));
            }
            if let Some((_, v)) = keys.iter().rev().find(|(k, _)| k == "source_profile") {
                source = Some(v.clone());
            }
        }
        seen.push(current);
        match source {
            Some(next) => current = next,
            None => break,
        }
    }
    Ok(None)
}

/// The keys (lower case) and values of `profile`'s sections in one file.
fn keys_of(text: &str, kind: Kind, profile: &str) -> Vec<(String, String)> {
    let mut keys = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.starts_with(';') || trimmed.is_empty() {
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[') {
            let name = header.split(']').next().unwrap_or_default().trim();
            inside = names(name, kind).is_some_and(|n| n == profile);
            continue;
        }
        if inside
            && !line.starts_with([' ', '\t'])
            && let Some((key, value)) = trimmed.split_once('=')
        {
            keys.push((key.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    keys
}

/// The profile a section header names, in a file of `kind`.
fn names(header: &str, kind: Kind) -> Option<&str> {
    match kind {
        Kind::Credentials => Some(header),
        Kind::Config => match header.strip_prefix("profile") {
            Some(rest) if rest.starts_with([' ', '\t']) => Some(rest.trim()),
            _ => Some(header),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_for(dir: &Path) -> impl Fn(&str) -> Option<String> + use<> {
        let home = dir.display().to_string();
        move |name| (name == "HOME").then(|| home.clone())
    }

    #[test]
    fn a_process_is_found_in_the_profile_or_along_its_source_profile_chain() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".aws")).unwrap();
        let config = dir.path().join(".aws/config");
        std::fs::write(
            &config,
            "[default]\nregion=us-east-1\n[profile direct]\nCredential_Process = /bin/run-me\n\
             [profile chained]\nrole_arn=arn:aws:iam::1:role/r\nsource_profile=direct\n\
             [profile keys]\naws_access_key_id=AKID\n[profile loop]\nsource_profile=loop\n",
        )
        .unwrap();
        let env = env_for(dir.path());
        let found = |p: &str| find(p, &env).unwrap();
        assert_eq!(found("direct"), Some(ProcessFound { profile: "direct".into(), file: config.clone() }));
        assert_eq!(found("chained"), Some(ProcessFound { profile: "direct".into(), file: config.clone() }));
        assert_eq!(found("keys"), None);
        assert_eq!(found("loop"), None);
        assert_eq!(found("absent"), None);
        std::fs::write(dir.path().join(".aws/credentials"), "[keys]\ncredential_process=/bin/other\n").unwrap();
        assert_eq!(found("keys").unwrap().file, dir.path().join(".aws/credentials"));
    }

    #[test]
    fn a_profile_file_that_is_not_a_regular_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let env = move |name: &str| (name == "AWS_CONFIG_FILE").then(|| "/dev/zero".to_string());
        let unchecked = find("p", &env).unwrap_err();
        assert_eq!(unchecked.file, PathBuf::from("/dev/zero"));
        drop(dir);
    }
}
