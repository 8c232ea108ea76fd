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
    /// The instance profile's role, found when Auto Scaling is first called with no
    /// keys configured (the instance identity signs no Auto Scaling call).
    instance_role: std::sync::OnceLock<RefreshingRole>,
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
            instance_role: std::sync::OnceLock::new(),
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

impl Service {
    /// An Auto Scaling client for `region` with current keys: those configured, else
    /// the instance profile's role (lifecycle hooks, issue 32).
    pub fn autoscaling(&self, region: &str) -> Result<cfn_aws::autoscaling::AutoScaling, CredentialError> {
        let credentials = match &self.auth {
            Auth::Role(role) => role.credentials(&self.imds)?,
            Auth::Chosen(source) => match source.signer()? {
                Signer::SigV4(credentials) => credentials,
                Signer::InstanceIdentity => self.instance_role()?.credentials(&self.imds)?,
            },
        };
        Ok(cfn_aws::autoscaling::AutoScaling::new(region, &credentials, self.http.clone()))
    }

    fn instance_role(&self) -> Result<&RefreshingRole, CredentialError> {
        if let Some(role) = self.instance_role.get() {
            return Ok(role);
        }
        let name = self
            .imds
            .instance_profile_role()
            .map_err(|source| CredentialError::Role { role: "of the instance profile".into(), source })?;
        Ok(self.instance_role.get_or_init(|| RefreshingRole::new(&name)))
    }
}

/// Proxies come from the environment, as in the reference.
fn http_client() -> HttpClient {
    HttpClient::new(ProxyOptions::default(), cfn_aws::api_user_agent())
}
