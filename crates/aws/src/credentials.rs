//! Where the keys for signing come from (CRED-01, CRED-02, CRED-05, CRED-07, CRED-08).
//!
//! The command-line tools look, in this order, at `--credential-file`, `--role` and the
//! `--access-key`/`--secret-key` pair. Environment keys are never picked up implicitly:
//! that would silently switch an instance from instance-identity signing to SigV4 and
//! change the scope of what it may read; `CFN_BOOTSTRAP_ENV_CREDENTIALS=1` opts in.
//! Then come the sources the environment names explicitly (`provided`: an
//! `AWS_PROFILE`, IRSA web identity, container credentials): the pod or task is who is
//! calling, even on an instance. Last, with no access key on an EC2 instance, requests
//! are signed with the instance identity (CRED-03), which is how most instances call
//! cfn-init.

use crate::http::HttpClient;
use crate::imds::{Imds, ImdsError};
pub use crate::keys::Credentials;
use crate::proxy::ProxyOptions;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod profile_process;
pub mod provided;
use provided::KeyCache;
pub use provided::{ProvidedCredentials, SdkSource};

/// The credential options every tool but cfn-hup shares (CLI-COMMON-05).
#[derive(Debug, Default, Clone)]
pub struct CredentialOptions {
    pub credential_file: Option<PathBuf>,
    pub role: Option<String>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    /// `--region`, when given: where STS and SSO are called for the SDK sources (else
    /// `AWS_REGION`, `AWS_DEFAULT_REGION`, us-east-1).
    pub region: Option<String>,
    /// `--http-proxy`/`--https-proxy`, for the SDK sources' requests (STS, SSO; never the
    /// container credential endpoint, which is on the host).
    pub proxies: ProxyOptions,
    /// Refuse a source that would run a program (a profile's `credential_process`):
    /// [`CredentialError::WouldRunProcess`] instead. For reports, which run nothing.
    pub refuse_processes: bool,
}

/// How requests to CloudFormation are signed.
#[derive(Debug, Clone)]
pub enum Signer {
    SigV4(Credentials),
    /// `Authorization: CFN_V1 …` from the instance identity document (CRED-03).
    InstanceIdentity,
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// Printed by the tools as `Error retrieving credentials from file:\n\t<reason>`.
    #[error("{0}")]
    File(#[from] CredentialFileError),
    #[error("Could not retrieve credentials for role {role} from the instance metadata service: {source}")]
    Role { role: String, source: ImdsError },
    /// A source the environment named (a profile, web identity, a container endpoint)
    /// failed; `from` names it. Never carries keys or tokens (SEC-02).
    #[error("Could not retrieve credentials from {from}: {reason}")]
    Provider { from: String, reason: String },
    /// [`CredentialOptions::refuse_processes`]: the profile chosen would run its
    /// `credential_process` (that of `profile`, configured in `file`).
    #[error(
        "the credentials of profile {named} (AWS_PROFILE) come from a program: the credential_process of profile \
         {profile} in {file}; it was not run"
    )]
    WouldRunProcess { named: String, profile: String, file: String },
    #[error(
        "In order to sign requests, 169.254.169.254 must be accessible or valid credentials must be set. \
         Please ensure your proxy environment variables allow access to 169.254.169.254 (NO_PROXY) or that \
         your credentials have a valid access key and secret key."
    )]
    NoCredentials,
}

/// The reasons a credential file is refused, worded as the reference words them.
#[derive(Debug, thiserror::Error)]
pub enum CredentialFileError {
    #[error("Credential file was not found at {0}")]
    NotFound(String),
    #[error("Credential file cannot be accessible by group or other. Please chmod 600 the credential file.")]
    TooOpen,
    #[error("Credential file must contain the keys 'AWSAccessKeyId' and 'AWSSecretKey'")]
    MissingKeys,
    #[error("Could not read credential file {path}: {source}")]
    Unreadable { path: String, source: std::io::Error },
}

/// Reads a credential file (CRED-02): `AWSAccessKeyId=` and `AWSSecretKey=` lines, the
/// last occurrence winning, no other syntax; refused when group or other has any bit.
pub fn read_credential_file(path: &Path) -> Result<Credentials, CredentialFileError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|_| CredentialFileError::NotFound(shown.clone()))?;
    if !meta.is_file() {
        return Err(CredentialFileError::NotFound(shown));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(CredentialFileError::TooOpen);
    }
    let text = std::fs::read(path).map_err(|source| CredentialFileError::Unreadable { path: shown, source })?;
    let text = String::from_utf8_lossy(&text);
    let (mut access_key, mut secret_key) = (None, None);
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("AWSAccessKeyId=") {
            access_key = Some(v.to_string());
        } else if let Some(v) = line.strip_prefix("AWSSecretKey=") {
            secret_key = Some(v.to_string());
        }
    }
    match (access_key, secret_key) {
        (Some(ak), Some(sk)) => Ok(Credentials { access_key: ak, secret_key: sk, session_token: None }),
        _ => Err(CredentialFileError::MissingKeys),
    }
}

/// Where signing keys come from: fixed (or instance identity), or a provider whose
/// temporary keys are fetched again when they are about to expire.
#[derive(Debug)]
pub enum Source {
    Fixed(Signer),
    Provided(ProvidedCredentials),
}

impl Source {
    /// How to sign now: for a provider, a snapshot of its current keys.
    pub fn signer(&self) -> Result<Signer, CredentialError> {
        match self {
            Source::Fixed(signer) => Ok(signer.clone()),
            Source::Provided(provided) => Ok(Signer::SigV4(provided.credentials()?)),
        }
    }
}

/// Decides how to sign (README, "Credentials"): the reference's precedence (CRED-01) —
/// file, then role, then keys (then environment keys when opted in); then a source the
/// environment names (profile, web identity, container); no access key on EC2 means
/// instance identity; otherwise both keys are needed.
pub fn resolve(options: &CredentialOptions, imds: &Imds) -> Result<Signer, CredentialError> {
    choose(options, imds)?.signer()
}

/// [`resolve`], keeping a provider for callers that sign again later (cfn-hup). Builds
/// no provider and reads no profile unless the precedence reaches it.
pub fn choose(options: &CredentialOptions, imds: &Imds) -> Result<Source, CredentialError> {
    let (access_key, secret_key, token) = if let Some(path) = &options.credential_file {
        let c = read_credential_file(path)?;
        (Some(c.access_key), Some(c.secret_key), None)
    } else if let Some(role) = &options.role {
        let c = imds.role_credentials(role).map_err(|source| CredentialError::Role { role: role.clone(), source })?;
        (Some(c.access_key), Some(c.secret_key), c.session_token)
    } else if options.access_key.is_some() || options.secret_key.is_some() {
        (options.access_key.clone(), options.secret_key.clone(), None)
    } else if env_credentials_opted_in() {
        (env_nonempty("AWS_ACCESS_KEY_ID"), env_nonempty("AWS_SECRET_ACCESS_KEY"), env_nonempty("AWS_SESSION_TOKEN"))
    } else {
        (None, None, None)
    };

    if access_key.is_none()
        && let Some(source) = SdkSource::from_env(&|name| std::env::var(name).ok())
    {
        let region = options
            .region
            .clone()
            .or_else(|| env_nonempty("AWS_REGION"))
            .or_else(|| env_nonempty("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".to_string());
        if options.refuse_processes
            && let SdkSource::Profile(named) = &source
        {
            refuse_process(named)?;
        }
        tracing::debug!("Using credentials from {source}");
        let user_agent = crate::api_user_agent();
        let http = match source {
            // The container credential endpoint is on the host (loopback, 169.254.170.2,
            // EKS Pod Identity's 169.254.170.23 and fd00:ec2::23): like IMDS, never proxied.
            SdkSource::Container { .. } => HttpClient::host_local(user_agent),
            _ => HttpClient::new(options.proxies.clone(), user_agent),
        };
        return Ok(Source::Provided(ProvidedCredentials::new(source, &region, Arc::new(http))));
    }

    match (access_key, secret_key) {
        // A secret key without an access key is ignored, as the reference does.
        (None, _) if imds.instance_id().is_some() => Ok(Source::Fixed(Signer::InstanceIdentity)),
        (Some(ak), Some(sk)) => {
            Ok(Source::Fixed(Signer::SigV4(Credentials { access_key: ak, secret_key: sk, session_token: token })))
        }
        _ => Err(CredentialError::NoCredentials),
    }
}

/// [`CredentialOptions::refuse_processes`] for the profile `named`: an error when
/// resolving it would run a program, or when its files cannot be checked.
fn refuse_process(named: &str) -> Result<(), CredentialError> {
    match profile_process::find(named, &|name| std::env::var(name).ok()) {
        Ok(None) => Ok(()),
        Ok(Some(found)) => Err(CredentialError::WouldRunProcess {
            named: named.to_string(),
            profile: found.profile,
            file: found.file.display().to_string(),
        }),
        Err(unchecked) => Err(CredentialError::Provider {
            from: SdkSource::Profile(named.to_string()).to_string(),
            reason: format!("cannot read {}: {}", unchecked.file.display(), unchecked.reason),
        }),
    }
}

fn env_credentials_opted_in() -> bool {
    std::env::var("CFN_BOOTSTRAP_ENV_CREDENTIALS").is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Role credentials kept by a long-running process and refreshed before they expire
/// (CRED-06, SPEC §3.5): fetched on first use, fetched again once fewer than two hours
/// remain; when a refresh fails while the old keys are still valid, the old keys are
/// used and the refresh is tried again on the next use. Key, secret and token always
/// come from one answer (WEAK-race fixed).
pub struct RefreshingRole {
    role: String,
    cache: KeyCache,
}

/// How long before `Expiration` role credentials are refreshed.
pub const ROLE_REFRESH_MARGIN: chrono::TimeDelta = chrono::TimeDelta::hours(2);

impl RefreshingRole {
    pub fn new(role: &str) -> RefreshingRole {
        RefreshingRole { role: role.to_string(), cache: KeyCache::default() }
    }

    pub fn role(&self) -> &str {
        &self.role
    }

    /// Valid credentials, from IMDS when a refresh is due.
    pub fn credentials(&self, imds: &Imds) -> Result<Credentials, CredentialError> {
        self.credentials_at(chrono::Utc::now(), || imds.role_credentials_expiring(&self.role))
    }

    /// [`Self::credentials`] with the clock and the IMDS call given (for tests).
    pub fn credentials_at(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        fetch: impl FnOnce() -> Result<(Credentials, Option<chrono::DateTime<chrono::Utc>>), ImdsError>,
    ) -> Result<Credentials, CredentialError> {
        self.cache.get(now, ROLE_REFRESH_MARGIN, || {
            let (credentials, expiry) =
                fetch().map_err(|source| CredentialError::Role { role: self.role.clone(), source })?;
            // The same words as credentials from elsewhere (provided.rs), never `Some(…)`.
            match expiry {
                Some(at) => {
                    tracing::debug!("Retrieved credentials for role {}, expiring {}", self.role, at.to_rfc3339())
                }
                None => tracing::debug!("Retrieved credentials for role {}, not expiring", self.role),
            }
            Ok((credentials, expiry))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(mode: u32, text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        f
    }

    #[test]
    fn reads_keys_last_occurrence_wins_and_lines_are_trimmed() {
        let f = file_with(0o600, "AWSAccessKeyId=first\n  AWSAccessKeyId=AKID  \n# comment\nAWSSecretKey=se=cret\n");
        let c = read_credential_file(f.path()).unwrap();
        assert_eq!(c.access_key, "AKID");
        assert_eq!(c.secret_key, "se=cret");
        assert_eq!(c.session_token, None);
    }

    #[test]
    fn refuses_with_the_reference_messages() {
        let open = file_with(0o644, "AWSAccessKeyId=a\nAWSSecretKey=b\n");
        let group_read = file_with(0o640, "AWSAccessKeyId=a\nAWSSecretKey=b\n");
        let other_exec = file_with(0o601, "AWSAccessKeyId=a\nAWSSecretKey=b\n");
        let spaced = file_with(0o600, "AWSAccessKeyId = a\nAWSSecretKey=b\n");
        let cases = [
            (
                open.path().to_path_buf(),
                "Credential file cannot be accessible by group or other. Please chmod 600 the credential file.",
            ),
            (
                group_read.path().to_path_buf(),
                "Credential file cannot be accessible by group or other. Please chmod 600 the credential file.",
            ),
            (
                other_exec.path().to_path_buf(),
                "Credential file cannot be accessible by group or other. Please chmod 600 the credential file.",
            ),
            (spaced.path().to_path_buf(), "Credential file must contain the keys 'AWSAccessKeyId' and 'AWSSecretKey'"),
            (PathBuf::from("/nonexistent/creds"), "Credential file was not found at /nonexistent/creds"),
            (PathBuf::from("/tmp"), "Credential file was not found at /tmp"),
        ];
        for (path, message) in cases {
            let err = read_credential_file(&path).unwrap_err();
            assert_eq!(err.to_string(), message, "file {}", path.display());
        }
    }

    #[test]
    fn debug_never_shows_secrets() {
        let c = Credentials::new("AKID", "SECRETVALUE", Some("TOKENVALUE".into()));
        let shown = format!("{c:?} {:?}", Signer::SigV4(c.clone()));
        assert!(shown.contains("AKID"));
        assert!(!shown.contains("SECRETVALUE") && !shown.contains("TOKENVALUE"), "{shown}");
    }
    #[test]
    fn role_credentials_refresh_two_hours_before_expiry_and_survive_a_failed_refresh() {
        use chrono::{TimeDelta, TimeZone, Utc};
        let t0 = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
        let role = RefreshingRole::new("r");
        let keys = |n: u32| Credentials::new(&format!("AK{n}"), "s", Some(format!("t{n}")));
        let fetches = std::cell::Cell::new(0);
        let fetch = |n: u32, valid_for: TimeDelta, at: chrono::DateTime<Utc>| {
            fetches.set(fetches.get() + 1);
            Ok((keys(n), Some(at + valid_for)))
        };
        assert_eq!(role.credentials_at(t0, || fetch(1, TimeDelta::hours(6), t0)).unwrap(), keys(1));
        // Still more than two hours left: no IMDS call.
        let t1 = t0 + TimeDelta::hours(3);
        assert_eq!(role.credentials_at(t1, || fetch(9, TimeDelta::hours(6), t1)).unwrap(), keys(1));
        assert_eq!(fetches.get(), 1);
        // Within two hours of expiry: refreshed.
        let t2 = t0 + TimeDelta::hours(4) + TimeDelta::minutes(1);
        assert_eq!(role.credentials_at(t2, || fetch(2, TimeDelta::hours(6), t2)).unwrap(), keys(2));
        assert_eq!(fetches.get(), 2);
        // A failed refresh keeps still-valid keys, then fails once they have expired.
        let down = || Err(ImdsError::Failed { path: "p".into(), reason: "down".into() });
        let t3 = t2 + TimeDelta::hours(5);
        assert_eq!(role.credentials_at(t3, down).unwrap(), keys(2));
        let t4 = t2 + TimeDelta::hours(7);
        assert!(matches!(role.credentials_at(t4, down), Err(CredentialError::Role { .. })));
        let fresh = RefreshingRole::new("r");
        assert!(fresh.credentials_at(t0, down).is_err());
    }
}
