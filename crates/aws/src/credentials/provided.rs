//! Credential sources the reference lacks, through aws-config's providers: a named
//! profile (`AWS_PROFILE`: keys, SSO, `credential_process`, roles), IRSA web identity
//! (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, STS AssumeRoleWithWebIdentity) and
//! container credentials (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`/`_FULL_URI`, which
//! covers ECS task roles and EKS Pod Identity).
//!
//! A source is consulted only when the environment names it, so a run with explicit keys
//! or on an instance builds no provider and reads no profile (the budget of a one-call
//! tool). Every provider sends through our one HTTP stack (`sdk_http`): no provider
//! builds its own HTTPS client or loads the native trust store.

use super::{CredentialError, Credentials};
use crate::http::HttpClient;
use crate::runtime::block_on;
use aws_config::ecs::EcsCredentialsProvider;
use aws_config::profile::ProfileFileCredentialsProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::web_identity_token::WebIdentityTokenCredentialsProvider;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_types::region::Region;
use chrono::{DateTime, TimeDelta, Utc};
use std::fmt;
use std::sync::{Arc, Mutex};

/// A source the environment names, in the order they are tried (the AWS SDKs' order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkSource {
    /// `AWS_PROFILE`, set explicitly: that profile of `~/.aws/config`/`credentials`.
    Profile(String),
    /// `AWS_WEB_IDENTITY_TOKEN_FILE` (with `AWS_ROLE_ARN`): an EKS pod's IRSA role.
    WebIdentity,
    /// `AWS_CONTAINER_CREDENTIALS_FULL_URI` (`full`) or `_RELATIVE_URI`: an ECS task role
    /// or EKS Pod Identity.
    Container { full: bool },
}

impl SdkSource {
    /// The first source `env` names, if any. Empty values name nothing.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<SdkSource> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(profile) = set("AWS_PROFILE") {
            return Some(SdkSource::Profile(profile.trim().to_string()));
        }
        if set("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
            return Some(SdkSource::WebIdentity);
        }
        if set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some() {
            return Some(SdkSource::Container { full: false });
        }
        if set("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some() {
            return Some(SdkSource::Container { full: true });
        }
        None
    }
}

/// How errors name the source: `Could not retrieve credentials from <this>: <reason>`.
impl fmt::Display for SdkSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SdkSource::Profile(name) => write!(f, "profile {name} (AWS_PROFILE)"),
            SdkSource::WebIdentity => f.write_str("web identity (AWS_WEB_IDENTITY_TOKEN_FILE)"),
            SdkSource::Container { full: true } => {
                f.write_str("the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI)")
            }
            SdkSource::Container { full: false } => {
                f.write_str("the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)")
            }
        }
    }
}

/// How long before they expire provided keys are fetched again. Container and web
/// identity keys live an hour or more; five minutes leaves room for a pass of cfn-hup.
pub const PROVIDED_REFRESH_MARGIN: TimeDelta = TimeDelta::minutes(5);

/// Keys from one SDK provider, cached and refreshed before they expire: a long-running
/// cfn-hup takes a fresh snapshot each pass, a one-call tool takes one.
pub struct ProvidedCredentials {
    source: SdkSource,
    provider: SharedCredentialsProvider,
    cache: KeyCache,
}

impl fmt::Debug for ProvidedCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProvidedCredentials").field("source", &self.source).finish_non_exhaustive()
    }
}

impl ProvidedCredentials {
    /// The provider for `source`; STS and SSO calls go to `region` (or the endpoint
    /// `AWS_ENDPOINT_URL_STS`/`AWS_ENDPOINT_URL` names). Nothing is read or sent yet.
    pub fn new(source: SdkSource, region: &str, http: Arc<HttpClient>) -> ProvidedCredentials {
        let conf = ProviderConfig::without_region()
            .with_http_client(crate::sdk_http::client(http))
            .with_region(Some(Region::new(region.to_string())));
        let provider = match &source {
            SdkSource::Profile(name) => SharedCredentialsProvider::new(
                ProfileFileCredentialsProvider::builder().configure(&conf).profile_name(name).build(),
            ),
            SdkSource::WebIdentity => {
                SharedCredentialsProvider::new(WebIdentityTokenCredentialsProvider::builder().configure(&conf).build())
            }
            SdkSource::Container { .. } => {
                SharedCredentialsProvider::new(EcsCredentialsProvider::builder().configure(&conf).build())
            }
        };
        ProvidedCredentials { source, provider, cache: KeyCache::default() }
    }

    pub fn source(&self) -> &SdkSource {
        &self.source
    }

    /// Valid keys: the cached ones, or fresh ones from the provider when they are due.
    /// Must not be called from inside the runtime (cfn-hup's passes run on blocking threads).
    pub fn credentials(&self) -> Result<Credentials, CredentialError> {
        self.cache.get(Utc::now(), PROVIDED_REFRESH_MARGIN, || self.fetch())
    }

    /// The causes of a provider's failure, one line. The SDK's messages name files, URIs
    /// and STS error codes, never keys or tokens (SEC-02). Its "file not found" does not
    /// say which file, so a token file that cannot be read is named here.
    fn reason(&self, error: &(dyn std::error::Error + 'static)) -> String {
        let token_file = match self.source {
            SdkSource::Container { .. } => "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            SdkSource::WebIdentity => "AWS_WEB_IDENTITY_TOKEN_FILE",
            SdkSource::Profile(_) => return chain(error),
        };
        match std::env::var(token_file).map(|path| (std::fs::metadata(&path), path)) {
            Ok((Err(e), path)) => format!("cannot read the token file {path} ({token_file}): {e}"),
            _ => chain(error),
        }
    }

    fn fetch(&self) -> Result<(Credentials, Option<DateTime<Utc>>), CredentialError> {
        let provided = block_on(self.provider.provide_credentials())
            .map_err(|e| CredentialError::Provider { from: self.source.to_string(), reason: self.reason(&e) })?;
        let credentials = Credentials::new(
            provided.access_key_id(),
            provided.secret_access_key(),
            provided.session_token().map(str::to_string),
        );
        let expiry = provided.expiry().map(DateTime::<Utc>::from);
        match expiry {
            Some(at) => tracing::debug!("Retrieved credentials from {}, expiring {}", self.source, at.to_rfc3339()),
            None => tracing::debug!("Retrieved credentials from {}, not expiring", self.source),
        }
        Ok((credentials, expiry))
    }
}

/// `outer: inner: innermost`, leaving out a cause whose text its parent already shows
/// and the SDK's generic wrappers.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    const GENERIC: &[&str] = &["an error occurred while loading credentials", "unexpected credentials error"];
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        if !GENERIC.contains(&text.as_str()) && !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    if parts.is_empty() { error.to_string() } else { parts.join(": ") }
}

/// The last keys and their expiry; shared by the refreshing sources (CRED-06 and the
/// SDK sources): fetched on first use and once fewer than `margin` remain; a failed
/// refresh keeps keys that are still valid and is tried again on the next use.
#[derive(Default)]
pub(super) struct KeyCache {
    current: Mutex<Option<(Credentials, Option<DateTime<Utc>>)>>,
}

impl KeyCache {
    pub(super) fn get<E: fmt::Display>(
        &self,
        now: DateTime<Utc>,
        margin: TimeDelta,
        fetch: impl FnOnce() -> Result<(Credentials, Option<DateTime<Utc>>), E>,
    ) -> Result<Credentials, E> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((credentials, expiry)) = current.as_ref()
            && expiry.is_none_or(|e| e - margin >= now)
        {
            return Ok(credentials.clone());
        }
        match fetch() {
            Ok((credentials, expiry)) => {
                *current = Some((credentials.clone(), expiry));
                Ok(credentials)
            }
            Err(error) => match current.as_ref() {
                Some((credentials, Some(expiry))) if *expiry > now => {
                    tracing::warn!("Exception while refreshing credentials; will refresh on next access: {error}");
                    Ok(credentials.clone())
                }
                _ => Err(error),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_environment_names_profile_then_web_identity_then_container() {
        let all = env_of(&[
            ("AWS_PROFILE", "dev"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/t"),
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1/c"),
        ]);
        assert_eq!(SdkSource::from_env(&all), Some(SdkSource::Profile("dev".into())));
        let pod = env_of(&[("AWS_WEB_IDENTITY_TOKEN_FILE", "/t"), ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/c")]);
        assert_eq!(SdkSource::from_env(&pod), Some(SdkSource::WebIdentity));
        let task = env_of(&[("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/c"), ("AWS_PROFILE", " ")]);
        assert_eq!(SdkSource::from_env(&task), Some(SdkSource::Container { full: false }));
        let pod_identity = env_of(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.23/v1/credentials")]);
        assert_eq!(SdkSource::from_env(&pod_identity), Some(SdkSource::Container { full: true }));
        assert_eq!(SdkSource::from_env(&env_of(&[("AWS_ROLE_ARN", "arn")])), None);
    }

    #[test]
    fn provided_keys_are_cached_until_the_margin_and_kept_when_a_refresh_fails() {
        use chrono::TimeZone;
        let t0 = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
        let cache = KeyCache::default();
        let keys = |n: u32| Credentials::new(&format!("AK{n}"), "s", Some(format!("t{n}")));
        let hour = |n: u32| Ok::<_, String>((keys(n), Some(t0 + TimeDelta::hours(1))));
        assert_eq!(cache.get(t0, PROVIDED_REFRESH_MARGIN, || hour(1)).unwrap(), keys(1));
        let t1 = t0 + TimeDelta::minutes(54);
        assert_eq!(cache.get(t1, PROVIDED_REFRESH_MARGIN, || hour(9)).unwrap(), keys(1));
        let t2 = t0 + TimeDelta::minutes(56);
        let down = || Err::<(Credentials, Option<DateTime<Utc>>), _>("down".to_string());
        assert_eq!(cache.get(t2, PROVIDED_REFRESH_MARGIN, down).unwrap(), keys(1));
        let later = || Ok::<_, String>((keys(2), Some(t0 + TimeDelta::hours(2))));
        assert_eq!(cache.get(t2, PROVIDED_REFRESH_MARGIN, later).unwrap(), keys(2));
        let t3 = t0 + TimeDelta::hours(3);
        assert_eq!(cache.get(t3, PROVIDED_REFRESH_MARGIN, down).unwrap_err(), "down");
    }
}
