//! Reaching CloudFormation for cfn-hup (HUP-CONF-01, CRED-06): `role` (refreshing
//! instance-profile credentials) takes precedence over `credential-file`; with neither,
//! a source the environment names (a profile, web identity, a container endpoint; its
//! keys are refreshed before they expire), else the instance identity signs requests.

use crate::config::MainConfig;
use cfn_aws::credentials::{self, CredentialError, RefreshingRole};
use cfn_aws::http::HttpClient;
use cfn_aws::retry::Policy;
use cfn_aws::{CloudFormation, Imds, ProxyOptions, Signer};
use std::sync::Arc;
use std::time::Duration;

enum Auth {
    Chosen(credentials::Source),
    Role(RefreshingRole),
}

pub struct Service {
    endpoint: String,
    region: String,
    http: Arc<HttpClient>,
    imds: Arc<Imds>,
    auth: Auth,
    retry: Policy,
}

impl Service {
    /// Resolves credentials now, so that a configuration that cannot work is reported
    /// before cfn-hup detaches.
    pub fn new(main: &MainConfig, imds: Arc<Imds>) -> Result<Service, CredentialError> {
        let auth = if let Some(role) = &main.role {
            let role = RefreshingRole::new(role);
            role.credentials(&imds)?;
            Auth::Role(role)
        } else {
            let options = credentials::CredentialOptions {
                credential_file: main.credential_file.clone(),
                region: Some(main.region.clone()),
                ..Default::default()
            };
            let source = credentials::choose(&options, &imds)?;
            source.signer()?;
            Auth::Chosen(source)
        };
        cfn_aws::log_client_endpoint(&main.region, main.url.as_deref());
        let endpoint = cfn_aws::endpoint::cloudformation_url(&main.region, main.url.as_deref());
        Ok(Service {
            endpoint,
            region: main.region.clone(),
            http: Arc::new(http_client()),
            imds,
            auth,
            retry: Policy::API,
        })
    }

    /// Bounds each attempt of each call by `limit` instead of the usual 60 s (a test aid).
    pub fn with_attempt_timeout(mut self, limit: Duration) -> Service {
        self.http = Arc::new(http_client().with_attempt_timeout(limit));
        self
    }

    /// The retry policy of each call (the daemon retries less within a pass: the next
    /// pass is a retry too).
    pub fn with_retry(mut self, retry: Policy) -> Service {
        self.retry = retry;
        self
    }

    /// A client with current credentials (role credentials refreshed when due).
    pub fn client(&self) -> Result<CloudFormation, CredentialError> {
        let signer = match &self.auth {
            Auth::Chosen(source) => source.signer()?,
            Auth::Role(role) => Signer::SigV4(role.credentials(&self.imds)?),
        };
        Ok(CloudFormation::new(self.endpoint.clone(), &self.region, signer, self.http.clone(), self.imds.clone())
            .with_retry(self.retry))
    }
}

/// Proxies come from the environment, as in the reference.
fn http_client() -> HttpClient {
    HttpClient::new(ProxyOptions::default(), cfn_aws::api_user_agent())
}
