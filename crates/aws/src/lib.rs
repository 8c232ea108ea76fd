//! AWS access for the cfn-* tools: credentials and signing, the instance metadata
//! service, the CloudFormation, SQS and Auto Scaling clients with the reference's retry rules, the one
//! HTTP stack (proxies, trust store, the SDK's HTTP client), and downloads with the
//! AWS::CloudFormation::Authentication blocks that choose their credentials.
//!
//! Libraries never print; they return typed errors and emit `tracing` events that the
//! binary writes to the reference's log files.

pub mod api_error;
pub mod auth;
pub mod autoscaling;
pub mod cfn;
pub mod cfn_v1_auth;
pub mod credentials;
pub mod download;
pub mod endpoint;
pub mod http;
pub mod imds;
pub mod keys;
pub mod presigned;
pub mod proxy;
pub mod retry;
pub mod runtime;
pub mod s3url;
pub mod sdk_http;
pub mod sigv4;
pub mod sqs;
pub mod tls;
mod xml;

use std::sync::Arc;

pub use auth::Authentication;
pub use cfn::{CloudFormation, StackResourceDetail};
pub use credentials::{CredentialError, CredentialOptions, Credentials, Signer};
pub use download::{DownloadError, DownloadInfo, Downloader};
pub use imds::Imds;
pub use proxy::ProxyOptions;

/// The version this build reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `User-Agent` of AWS API calls (NET-06): the reference's `CfnTools/` prefix.
pub fn api_user_agent() -> String {
    format!("CfnTools/{VERSION} ({}-{}) cfn-bootstrap-rust", std::env::consts::OS, std::env::consts::ARCH)
}

/// What the command line says about reaching CloudFormation.
#[derive(Debug, Clone, Default)]
pub struct ApiOptions {
    pub credentials: CredentialOptions,
    pub proxies: ProxyOptions,
    pub region: String,
    pub url: Option<String>,
}

/// Resolves credentials and builds the client (CRED-01, EP-01, CLI-COMMON-07).
pub fn cloudformation_client(options: &ApiOptions, imds: Arc<Imds>) -> Result<CloudFormation, CredentialError> {
    client_over(options, imds, http::HttpClient::new(options.proxies.clone(), api_user_agent()))
}

/// [`cloudformation_client`] whose every attempt ends after `limit`: a probe's bound
/// (`cfn-bootstrap doctor`), not the usual 60 s.
pub fn cloudformation_client_within(
    options: &ApiOptions,
    imds: Arc<Imds>,
    limit: std::time::Duration,
) -> Result<CloudFormation, CredentialError> {
    let http = http::HttpClient::new(options.proxies.clone(), api_user_agent()).with_attempt_timeout(limit);
    client_over(options, imds, http)
}

fn client_over(
    options: &ApiOptions,
    imds: Arc<Imds>,
    http: http::HttpClient,
) -> Result<CloudFormation, CredentialError> {
    let signer = credentials::resolve(&options.credentials, &imds)?;
    let http = Arc::new(http);
    log_client_endpoint(&options.region, options.url.as_deref());
    let endpoint = endpoint::cloudformation_url(&options.region, options.url.as_deref());
    Ok(CloudFormation::new(endpoint, &options.region, signer, http, imds))
}

/// The reference's line when a tool has made its CloudFormation client (LOG-02).
pub fn log_client_endpoint(region: &str, url: Option<&str>) {
    let endpoint = http::redact_url(&endpoint::cloudformation_endpoint(region, url));
    tracing::debug!("CloudFormation client initialized with endpoint {endpoint}");
}

/// A client signing with fixed keys and no instance metadata at all: for tools and
/// tests that manage stacks rather than run on an instance.
pub fn client_with_keys(url: &str, region: &str, credentials: Credentials) -> CloudFormation {
    let http = Arc::new(http::HttpClient::new(ProxyOptions::default(), api_user_agent()));
    let imds = Arc::new(Imds::new("http://127.0.0.1:1", true, retry::Policy::IMDS));
    CloudFormation::new(endpoint::cloudformation_url(region, Some(url)), region, Signer::SigV4(credentials), http, imds)
}
