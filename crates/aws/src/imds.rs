//! The EC2 instance metadata service (IMDS-01..04).
//!
//! IMDSv2 first (a session token from `PUT /latest/api/token`), falling back to IMDSv1
//! when the token call is refused or times out — instances that require v2 (the default
//! on current AMIs) then still work. Requests never go through a proxy, use short
//! timeouts, and a host where nothing answers at all is recognised as "not EC2" after
//! one attempt instead of the reference's minutes of retries. `AWS_EC2_METADATA_SERVICE_ENDPOINT`
//! moves the service (as in the AWS SDKs) and `AWS_EC2_METADATA_DISABLED=true` turns it off.

use crate::http::innermost;
use crate::keys::Credentials;
use crate::retry::{self, Policy, Verdict};
use crate::runtime::block_on;
use base64::Engine;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

const DEFAULT_ENDPOINT: &str = "http://169.254.169.254";
const TOKEN_TTL_SECONDS: &str = "21600";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, thiserror::Error)]
pub enum ImdsError {
    #[error("the instance metadata service is not reachable (not running on EC2?)")]
    Unreachable,
    #[error("the instance metadata service is disabled by AWS_EC2_METADATA_DISABLED")]
    Disabled,
    #[error("{path} was not found in the instance metadata")]
    NotFound { path: String },
    #[error("instance metadata request for {path} failed: {reason}")]
    Failed { path: String, reason: String },
}

impl crate::retry::AttemptError for ImdsError {
    /// Nothing answered: the reference's requests raised `ConnectionError`.
    fn is_connection_failure(&self) -> bool {
        matches!(self, ImdsError::Unreachable)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reachability {
    Unknown,
    Reachable,
    Unreachable,
}

#[derive(Debug)]
struct Session {
    reachability: Reachability,
    /// `None` before the first token call; `Some(None)` when v1 is used.
    token: Option<Option<String>>,
    instance_id: Option<Option<String>>,
    identity_header: Option<String>,
}

pub struct Imds {
    endpoint: String,
    disabled: bool,
    /// Built on the first request: most runs never ask IMDS anything.
    client: OnceLock<reqwest::Client>,
    retry: Policy,
    session: Mutex<Session>,
}

/// The keys of an `iam/security-credentials/<role>` answer.
fn parse_role_document(path: &str, text: &str) -> Result<Credentials, ImdsError> {
    let failed = |reason: &str| ImdsError::Failed { path: path.to_string(), reason: reason.to_string() };
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| failed(&format!("invalid JSON: {e}")))?;
    let field = |name: &str| doc.get(name).and_then(|v| v.as_str()).map(str::to_string);
    match (field("AccessKeyId"), field("SecretAccessKey")) {
        (Some(ak), Some(sk)) => Ok(Credentials { access_key: ak, secret_key: sk, session_token: field("Token") }),
        _ => Err(failed("the answer has no AccessKeyId/SecretAccessKey")),
    }
}

/// One HTTP exchange with IMDS, before interpretation.
enum Outcome {
    Status(u16, String),
    Timeout,
    NoConnection(String),
}

impl Outcome {
    /// A failed exchange in words.
    fn describe(error: &reqwest::Error) -> String {
        if error.is_timeout() { "timed out".to_string() } else { innermost(error) }
    }
}

impl Default for Imds {
    fn default() -> Self {
        Self::from_env()
    }
}

impl Imds {
    /// The service at `AWS_EC2_METADATA_SERVICE_ENDPOINT`, else at 169.254.169.254.
    pub fn from_env() -> Self {
        let endpoint = std::env::var("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let disabled = std::env::var("AWS_EC2_METADATA_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
        Self::new(&endpoint, disabled, Policy::IMDS)
    }

    pub fn new(endpoint: &str, disabled: bool, retry: Policy) -> Self {
        Imds {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            disabled,
            client: OnceLock::new(),
            retry,
            session: Mutex::new(Session {
                reachability: Reachability::Unknown,
                token: None,
                instance_id: None,
                identity_header: None,
            }),
        }
    }

    /// The service's base URL (`http://169.254.169.254` unless moved), for diagnostics.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Whether `AWS_EC2_METADATA_DISABLED` turned the service off.
    pub fn is_disabled(&self) -> bool {
        self.disabled
    }

    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The instance id, or `None` off EC2; asked once per process (IMDS-01).
    pub fn instance_id(&self) -> Option<String> {
        if let Some(cached) = self.session().instance_id.clone() {
            return cached;
        }
        let id = match self.get("/latest/meta-data/instance-id") {
            Ok(id) => Some(id.trim().to_string()).filter(|s| !s.is_empty()),
            Err(e @ ImdsError::Disabled) => {
                tracing::debug!("Could not retrieve the instance id: {e}");
                None
            }
            // The reference's line (SPEC §6), with the reason.
            Err(e) => {
                tracing::error!("Exception retrieving InstanceId: {e}");
                None
            }
        };
        self.session().instance_id = Some(id.clone());
        id
    }

    /// The `Authorization` value for instance-identity signing (CRED-03):
    /// `CFN_V1 <base64(document)>:<signature without newlines>`. The document and its
    /// signature do not change during the instance's life, so they are fetched once.
    pub fn identity_authorization(&self) -> Result<String, ImdsError> {
        if let Some(header) = self.session().identity_header.clone() {
            return Ok(header);
        }
        let document = self.get("/latest/dynamic/instance-identity/document")?;
        let signature = self.get("/latest/dynamic/instance-identity/signature")?;
        let header = format!(
            "CFN_V1 {}:{}",
            base64::engine::general_purpose::STANDARD.encode(document.trim_end()),
            signature.replace('\n', "")
        );
        self.session().identity_header = Some(header.clone());
        Ok(header)
    }

    /// The header of [`Self::identity_authorization`] if it was fetched already: what
    /// async code (the SDK's auth scheme) may read without a blocking call.
    pub fn cached_identity_authorization(&self) -> Option<String> {
        self.session().identity_header.clone()
    }

    /// Credentials of an instance-profile role, by name (CRED-05).
    pub fn role_credentials(&self, role: &str) -> Result<Credentials, ImdsError> {
        let path = format!("/latest/meta-data/iam/security-credentials/{role}");
        let text = self.get(&path)?;
        parse_role_document(&path, &text)
    }

    /// The name of the instance profile's role (the first line of
    /// `iam/security-credentials/`): whose keys sign calls that the instance identity
    /// cannot sign (Auto Scaling).
    pub fn instance_profile_role(&self) -> Result<String, ImdsError> {
        let path = "/latest/meta-data/iam/security-credentials/";
        let text = self.get(path)?;
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
            .ok_or_else(|| ImdsError::NotFound { path: path.to_string() })
    }

    /// Role credentials with their `Expiration` (`%Y-%m-%dT%H:%M:%SZ`, UTC), for callers
    /// that keep them and must refresh them in time (cfn-hup, CRED-06).
    pub fn role_credentials_expiring(
        &self,
        role: &str,
    ) -> Result<(Credentials, Option<chrono::DateTime<chrono::Utc>>), ImdsError> {
        let path = format!("/latest/meta-data/iam/security-credentials/{role}");
        let text = self.get(&path)?;
        let credentials = parse_role_document(&path, &text)?;
        let expiration = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|doc| doc.get("Expiration").and_then(|v| v.as_str()).map(str::to_string))
            .and_then(|e| chrono::NaiveDateTime::parse_from_str(&e, "%Y-%m-%dT%H:%M:%SZ").ok())
            .map(|naive| naive.and_utc());
        Ok((credentials, expiration))
    }

    /// GET a metadata path (e.g. `/latest/meta-data/instance-id`) as text.
    pub fn get(&self, path: &str) -> Result<String, ImdsError> {
        if self.disabled {
            return Err(ImdsError::Disabled);
        }
        if self.session().reachability == Reachability::Unreachable {
            return Err(ImdsError::Unreachable);
        }
        retry::run(
            &self.retry,
            &format!("IMDS GET {path}"),
            || self.attempt(path),
            |e| match e {
                ImdsError::Failed { .. } if self.session().reachability == Reachability::Reachable => {
                    Verdict::Retriable
                }
                _ => Verdict::Terminal,
            },
        )
    }

    /// One GET of `path` for a caller that polls it (cfn-hup's lifecycle watcher): one
    /// attempt (the next poll is the retry), an answer of at most `limit` bytes (a larger
    /// one is an error, not a prefix), 404 as `None`. Unlike [`Self::get`], a service
    /// that did not answer is not written off: a poll that timed out says nothing of the
    /// next one.
    pub fn poll(&self, path: &str, limit: usize) -> Result<Option<String>, ImdsError> {
        if self.disabled {
            return Err(ImdsError::Disabled);
        }
        let failed = |reason: String| ImdsError::Failed { path: path.to_string(), reason };
        let token = match self.token() {
            Ok(token) => token,
            Err(_) => {
                // Nothing answered the token call: ask again on the next poll.
                self.session().token = None;
                return Err(failed("no answer".into()));
            }
        };
        let mut request = self.client().get(format!("{}{path}", self.endpoint));
        if let Some(token) = &token {
            request = request.header("X-aws-ec2-metadata-token", token);
        }
        let answer = block_on(async {
            let mut response = request.send().await.map_err(|e| Outcome::describe(&e))?;
            let status = response.status().as_u16();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| Outcome::describe(&e))? {
                if body.len() + chunk.len() > limit {
                    return Err(format!("the answer is larger than {limit} bytes"));
                }
                body.extend_from_slice(&chunk);
            }
            Ok((status, body))
        });
        match answer.map_err(failed)? {
            (200, body) => String::from_utf8(body).map(Some).map_err(|_| failed("the answer is not UTF-8".into())),
            (404, _) => Ok(None),
            (401, _) => {
                self.session().token = None;
                Err(failed("401 Unauthorized".into()))
            }
            (status, _) => Err(failed(format!("HTTP {status}"))),
        }
    }

    fn client(&self) -> &reqwest::Client {
        self.client.get_or_init(|| {
            reqwest::Client::builder()
                .use_preconfigured_tls(crate::tls::plain_config())
                .no_proxy() // IMDS-03: never through a proxy
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(CONNECT_TIMEOUT)
                .timeout(REQUEST_TIMEOUT)
                .user_agent(concat!("cfn-bootstrap/", env!("CARGO_PKG_VERSION")))
                .build()
                // Building fails only without TLS settings, which plain_config always gives.
                .unwrap_or_else(|e| unreachable!("IMDS client: {e}"))
        })
    }

    fn attempt(&self, path: &str) -> Result<String, ImdsError> {
        let token = self.token()?;
        let url = format!("{}{path}", self.endpoint);
        let mut request = self.client().get(&url);
        if let Some(token) = &token {
            request = request.header("X-aws-ec2-metadata-token", token);
        }
        match self.exchange(request) {
            Outcome::Status(200, body) => Ok(body),
            Outcome::Status(404, _) => Err(ImdsError::NotFound { path: path.to_string() }),
            Outcome::Status(401, _) => {
                // The token expired or v1 is not allowed: get a new token next attempt.
                self.session().token = None;
                Err(ImdsError::Failed { path: path.to_string(), reason: "401 Unauthorized".into() })
            }
            Outcome::Status(code, _) => {
                Err(ImdsError::Failed { path: path.to_string(), reason: format!("HTTP {code}") })
            }
            Outcome::Timeout => Err(ImdsError::Failed { path: path.to_string(), reason: "timed out".into() }),
            Outcome::NoConnection(reason) => Err(ImdsError::Failed { path: path.to_string(), reason }),
        }
    }

    /// The v2 session token, `None` for v1. Errors only when nothing answers at all.
    fn token(&self) -> Result<Option<String>, ImdsError> {
        if let Some(token) = self.session().token.clone() {
            return Ok(token);
        }
        let url = format!("{}/latest/api/token", self.endpoint);
        let outcome =
            self.exchange(self.client().put(&url).header("X-aws-ec2-metadata-token-ttl-seconds", TOKEN_TTL_SECONDS));
        let token = match outcome {
            Outcome::Status(200, body) if !body.trim().is_empty() => Some(body.trim().to_string()),
            // Refused (403/404/405…) or dropped by the hop limit: use IMDSv1.
            Outcome::Status(..) | Outcome::Timeout => None,
            Outcome::NoConnection(_) => return Err(ImdsError::Unreachable),
        };
        self.session().token = Some(token.clone());
        Ok(token)
    }

    /// Performs one exchange and records whether the service answered at all.
    fn exchange(&self, request: reqwest::RequestBuilder) -> Outcome {
        let outcome = block_on(async {
            let response = match request.send().await {
                Ok(response) => response,
                Err(e) if e.is_timeout() => return Outcome::Timeout,
                Err(e) => return Outcome::NoConnection(innermost(&e)),
            };
            let status = response.status().as_u16();
            match response.text().await {
                Ok(body) => Outcome::Status(status, body),
                Err(e) if e.is_timeout() => Outcome::Timeout,
                Err(e) => Outcome::NoConnection(innermost(&e)),
            }
        });
        let mut session = self.session();
        match (&outcome, session.reachability) {
            (Outcome::Status(..), _) => session.reachability = Reachability::Reachable,
            // Nothing answered the very first request: this is not an EC2 instance
            // (or IMDS is blocked). Do not spend minutes retrying (IMDS-04).
            (Outcome::NoConnection(_) | Outcome::Timeout, Reachability::Unknown) => {
                session.reachability = Reachability::Unreachable
            }
            _ => {}
        }
        outcome
    }
}
