//! The CloudFormation API (API-01..05, API-07), retried by the reference's rules (NET-03)
//! and signed with SigV4 or the instance identity (CRED-03, CRED-04).
//!
//! DescribeStackResource and SignalResource go through `aws-sdk-cloudformation` (the
//! awsQuery protocol: a POST form, an XML answer), over our HTTP stack (`sdk_http`),
//! built from explicit configuration: no configuration files, no SDK retries or
//! timeouts (`retry::run` and `http::ATTEMPT_TIMEOUT` bound every call), and for the
//! instance identity an auth scheme of our own (`cfn_v1_auth`). The listener and
//! command actions are not in the service's public model: they, and anything else a
//! caller names, use the query API as the reference speaks it (`CloudFormation::call`:
//! GET, the parameters in the query string, `ContentType=JSON`, answers in JSON, errors as
//! `{"Error": {"Code", "Message", "Type"}}`).

use crate::api_error::{self, Faults};
use crate::cfn_v1_auth;
use crate::credentials::{Credentials, Signer};
use crate::endpoint::FixedEndpoint;
use crate::http::{self, HttpClient};
use crate::imds::Imds;
use crate::retry::{self, Policy};
use crate::{runtime, sdk_http, sigv4};
use aws_sdk_cloudformation::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_cloudformation::config::retry::{ReconnectMode, RetryConfig};
use aws_sdk_cloudformation::config::timeout::TimeoutConfig;
use aws_sdk_cloudformation::config::{
    BehaviorVersion, ConfigBag, IdentityCache, Intercept, Region, RuntimeComponents, StalledStreamProtectionConfig,
};
use aws_sdk_cloudformation::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::sync::{Arc, OnceLock};

pub use crate::api_error::Error;

const API_VERSION: &str = "2010-05-15";

/// `StackResourceDetail` of DescribeStackResource.
#[derive(Debug, Clone, PartialEq)]
pub struct StackResourceDetail {
    pub logical_resource_id: String,
    pub physical_resource_id: Option<String>,
    pub resource_type: String,
    pub resource_status: String,
    pub last_updated: DateTime<Utc>,
    /// The resource's metadata, parsed; `None` when it has none.
    pub metadata: Option<Value>,
    pub stack_id: Option<String>,
    pub stack_name: Option<String>,
}

/// The answer of GetListenerCredentials.
#[derive(Debug, Clone, PartialEq)]
pub struct ListenerCredentials {
    pub credentials: Credentials,
    pub expiration: DateTime<Utc>,
}

pub struct CloudFormation {
    endpoint: String,
    region: String,
    signer: Signer,
    http: Arc<HttpClient>,
    imds: Arc<Imds>,
    retry: Policy,
    /// The SDK's client, built on the first call that needs it.
    sdk: OnceLock<aws_sdk_cloudformation::Client>,
}

impl CloudFormation {
    pub fn new(endpoint: String, region: &str, signer: Signer, http: Arc<HttpClient>, imds: Arc<Imds>) -> Self {
        CloudFormation {
            endpoint,
            region: region.to_string(),
            signer,
            http,
            imds,
            retry: Policy::API,
            sdk: OnceLock::new(),
        }
    }

    pub fn with_retry(mut self, retry: Policy) -> Self {
        self.retry = retry;
        self
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// DescribeStackResource (API-01), through the SDK.
    pub fn describe_stack_resource(&self, stack: &str, logical_id: &str) -> Result<StackResourceDetail, Error> {
        let action = "DescribeStackResource";
        let described = format!("Describing resource {logical_id} in stack {stack}");
        let output = self.sdk_call(action, &described, || {
            self.sdk().describe_stack_resource().stack_name(stack).logical_resource_id(logical_id).send()
        })?;
        let detail = output
            .stack_resource_detail()
            .ok_or_else(|| Error::Malformed { action: action.into(), reason: "no StackResourceDetail".into() })?;
        detail_of(action, detail)
    }

    /// SignalResource (API-02), through the SDK. `status` is sent as given (the service
    /// refuses what is neither SUCCESS nor FAILURE).
    pub fn signal_resource(&self, stack: &str, logical_id: &str, unique_id: &str, status: &str) -> Result<(), Error> {
        let described =
            format!("Signaling resource {logical_id} in stack {stack} with unique ID {unique_id} and status {status}");
        let status = aws_sdk_cloudformation::types::ResourceSignalStatus::from(status);
        self.sdk_call("SignalResource", &described, || {
            self.sdk()
                .signal_resource()
                .stack_name(stack)
                .logical_resource_id(logical_id)
                .unique_id(unique_id)
                .status(status.clone())
                .send()
        })
        .map(drop)
    }

    /// One SDK operation under the reference's retry policy: `send` makes one attempt,
    /// after `described` is logged (the reference's line before each attempt).
    fn sdk_call<T, E, F>(&self, action: &str, described: &str, send: impl Fn() -> F) -> Result<T, Error>
    where
        F: std::future::Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let endpoint = http::redact_url(&self.endpoint);
        // A malformed `--url` is a configuration mistake, worded as for every request.
        http::split_url(&self.endpoint).map_err(|source| Error::Transport { endpoint: endpoint.clone(), source })?;
        retry::run(
            &self.retry,
            action,
            || {
                if matches!(self.signer, Signer::InstanceIdentity) {
                    // Read (once, blocking) here, where blocking is allowed: the SDK's auth
                    // scheme then finds the header kept by `Imds`.
                    self.imds.identity_authorization()?;
                }
                tracing::debug!("{described}");
                runtime::block_on(send()).map_err(|e| api_error::from_sdk(action, &endpoint, Faults::InBody, e))
            },
            Error::verdict,
        )
    }

    /// The SDK's client: region, endpoint and HTTP client given explicitly (nothing read
    /// from the environment or files, no trust store loaded for an http endpoint), one
    /// attempt per call, signed with the snapshot of keys or the instance identity.
    fn sdk(&self) -> &aws_sdk_cloudformation::Client {
        self.sdk.get_or_init(|| {
            let mut config = aws_sdk_cloudformation::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(Region::new(self.region.clone()))
                .http_client(sdk_http::client(self.http.clone()))
                // One attempt; and no "connection poisoning" after a 5xx: the SDK cannot
                // reach our HTTP stack's connections (it would only log an error), and
                // reqwest drops a connection that failed.
                .retry_config(RetryConfig::disabled().with_reconnect_mode(ReconnectMode::ReuseAllConnections))
                .timeout_config(TimeoutConfig::disabled())
                .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
                // Keys are a snapshot and the instance identity is kept by `Imds`.
                .identity_cache(IdentityCache::no_cache())
                .interceptor(OurUserAgent);
            config.set_endpoint_resolver(Some(FixedEndpoint::shared(&self.endpoint)));
            config = match &self.signer {
                Signer::SigV4(credentials) => config.credentials_provider(aws_credential_types::Credentials::new(
                    credentials.access_key.clone(),
                    credentials.secret_key.clone(),
                    credentials.session_token.clone(),
                    None,
                    "cfn-bootstrap",
                )),
                Signer::InstanceIdentity => config
                    .push_auth_scheme(cfn_v1_auth::InstanceIdentityScheme::new(self.imds.clone()))
                    .auth_scheme_resolver(cfn_v1_auth::OnlyInstanceIdentity),
            };
            aws_sdk_cloudformation::Client::from_conf(config.build())
        })
    }

    /// ElectCommandLeader (API-05): which listener runs a singleton command invocation.
    /// The service answers with the leader's listener id. Signed with the instance
    /// identity, the request leaves out `ListenerId`, which the service derives from
    /// the identity, as the reference does.
    pub fn elect_command_leader(
        &self,
        stack: &str,
        command: &str,
        invocation: &str,
        listener: &str,
    ) -> Result<String, Error> {
        let action = "ElectCommandLeader";
        // The query is sorted when it is signed and sent, so the order here is free.
        let mut params = self.listener_params(stack, listener);
        params.extend([("CommandName", command), ("InvocationId", invocation)]);
        let described = format!(
            "Attempting to elect '{listener}' as leader for stack: {stack}, command: {command}, invocation: {invocation}"
        );
        let answer = self.call_described(action, &described, &params, false)?;
        answer
            .pointer("/ElectCommandLeaderResponse/ElectCommandLeaderResult/ListenerId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Error::Malformed { action: action.into(), reason: "no ListenerId in the answer".into() })
    }

    /// RegisterListener (API-03): the SQS queue on which this listener receives commands.
    pub fn register_listener(&self, stack: &str, listener: &str) -> Result<String, Error> {
        let action = "RegisterListener";
        let described = format!("Registering listener {listener} for stack {stack}");
        let answer = self.call_described(action, &described, &self.listener_params(stack, listener), false)?;
        answer
            .pointer("/RegisterListenerResponse/RegisterListenerResult/QueueUrl")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Error::Malformed { action: action.into(), reason: "no QueueUrl in the answer".into() })
    }

    /// GetListenerCredentials (API-04): temporary keys for the listener's queue and for
    /// the results it sends; `Expiration` is in epoch seconds.
    pub fn get_listener_credentials(&self, stack: &str, listener: &str) -> Result<ListenerCredentials, Error> {
        let action = "GetListenerCredentials";
        let described = format!("Get listener credentials for listener {listener} in stack {stack}");
        let answer = self.call_described(action, &described, &self.listener_params(stack, listener), false)?;
        let malformed =
            |what: &str| Error::Malformed { action: action.into(), reason: format!("no {what} in the answer") };
        let credentials = answer
            .pointer("/GetListenerCredentialsResponse/GetListenerCredentialsResult/Credentials")
            .ok_or_else(|| malformed("Credentials"))?;
        let text = |name: &str| {
            credentials.get(name).and_then(Value::as_str).map(str::to_string).ok_or_else(|| malformed(name))
        };
        let expiration = credentials
            .get("Expiration")
            .and_then(|v| v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())))
            .and_then(|secs| DateTime::from_timestamp_micros((secs * 1e6).round() as i64))
            .ok_or_else(|| malformed("Expiration"))?;
        Ok(ListenerCredentials {
            credentials: Credentials::new(
                &text("AccessKeyId")?,
                &text("SecretAccessKey")?,
                Some(text("SessionToken")?),
            ),
            expiration,
        })
    }

    /// `StackName` and, unless signing with the instance identity (from which the service
    /// derives it), `ListenerId`.
    fn listener_params<'a>(&self, stack: &'a str, listener: &'a str) -> Vec<(&'a str, &'a str)> {
        let mut params = vec![("StackName", stack)];
        if matches!(self.signer, Signer::SigV4(_)) {
            params.push(("ListenerId", listener));
        }
        params
    }

    /// Calls an action with retries and returns the decoded JSON answer. The reference
    /// sends `Version` only with DescribeStackResource and SignalResource.
    pub fn call(&self, action: &str, params: &[(&str, &str)], with_version: bool) -> Result<Value, Error> {
        let described = format!("Calling {action} at {}", http::redact_url(&self.endpoint));
        self.call_described(action, &described, params, with_version)
    }

    /// [`call`](Self::call), logging `described` before each attempt (the reference's
    /// line for the actions it makes).
    fn call_described(
        &self,
        action: &str,
        described: &str,
        params: &[(&str, &str)],
        with_version: bool,
    ) -> Result<Value, Error> {
        let mut query: Vec<(String, String)> =
            vec![("Action".into(), action.into()), ("ContentType".into(), "JSON".into())];
        if with_version {
            query.push(("Version".into(), API_VERSION.into()));
        }
        query.extend(params.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        retry::run(&self.retry, action, || self.attempt(action, described, &query), Error::verdict)
    }

    fn attempt(&self, action: &str, described: &str, query: &[(String, String)]) -> Result<Value, Error> {
        let transport = |source| Error::Transport { endpoint: http::redact_url(&self.endpoint), source };
        let parts = http::split_url(&self.endpoint).map_err(transport)?;
        let url = format!("{}?{}", self.endpoint, sigv4::canonical_query(query));
        let mut headers: Vec<(&str, String)> = vec![("Accept", "application/json".into())];
        match &self.signer {
            Signer::SigV4(credentials) => {
                let request = sigv4::Request {
                    method: "GET",
                    host: &parts.netloc,
                    path: parts.path_and_query.split('?').next().unwrap_or("/"),
                    query,
                    headers: &headers,
                    payload: b"",
                };
                let scope = sigv4::Scope { region: &self.region, service: "cloudformation" };
                let signed = sigv4::sign(&request, credentials, &scope, Utc::now());
                headers.extend(signed);
            }
            Signer::InstanceIdentity => headers.push(("Authorization", self.imds.identity_authorization()?)),
        }
        headers.push(("Host", parts.netloc.clone()));
        tracing::debug!("{described}");
        let response = self.http.send("GET", &url, &headers, None).map_err(transport)?;
        if response.is_success() {
            return serde_json::from_slice(&response.body)
                .map_err(|_| Error::Malformed { action: action.into(), reason: "the answer is not JSON".into() });
        }
        Err(remote_error(response.status, &response.text()))
    }
}

/// NET-06: API calls carry the `CfnTools/` user agent of our HTTP client, not the SDK's.
/// Removed after signing (SigV4 never signs `User-Agent`), so that the client's own applies.
#[derive(Debug)]
pub(crate) struct OurUserAgent;

impl Intercept for OurUserAgent {
    fn name(&self) -> &'static str {
        "OurUserAgent"
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        context.request_mut().headers_mut().remove("user-agent");
        Ok(())
    }
}

/// The SDK's `StackResourceDetail` in ours: the timestamp to the nanosecond the answer
/// gave, the metadata parsed in document order.
fn detail_of(
    action: &str,
    detail: &aws_sdk_cloudformation::types::StackResourceDetail,
) -> Result<StackResourceDetail, Error> {
    let malformed = |reason: String| Error::Malformed { action: action.into(), reason };
    let required = |value: Option<&str>, name: &str| {
        value.map(str::to_string).ok_or_else(|| malformed(format!("StackResourceDetail has no {name}")))
    };
    let last_updated = detail
        .last_updated_timestamp()
        .and_then(|t| DateTime::from_timestamp(t.secs(), t.subsec_nanos()))
        .ok_or_else(|| malformed("StackResourceDetail has no LastUpdatedTimestamp".into()))?;
    Ok(StackResourceDetail {
        logical_resource_id: required(detail.logical_resource_id(), "LogicalResourceId")?,
        physical_resource_id: detail.physical_resource_id().map(str::to_string),
        resource_type: required(detail.resource_type(), "ResourceType")?,
        resource_status: required(detail.resource_status().map(|s| s.as_str()), "ResourceStatus")?,
        last_updated,
        metadata: parse_metadata(action, detail.metadata())?,
        stack_id: detail.stack_id().map(str::to_string),
        stack_name: detail.stack_name().map(str::to_string),
    })
}

/// The resource's `Metadata` string as JSON, `None` when empty or absent.
fn parse_metadata(action: &str, text: Option<&str>) -> Result<Option<Value>, Error> {
    match text.filter(|m| !m.trim().is_empty()) {
        Some(m) => serde_json::from_str(m).map(Some).map_err(|e| Error::Malformed {
            action: action.into(),
            reason: format!("the resource's Metadata is not valid JSON: {e}"),
        }),
        None => Ok(None),
    }
}

/// API-07: `{"Error": {"Code", "Message", "Type"}}`, or whatever else an answer on the
/// way states (`api_error::stated`); an unreadable error body is an `Unknown` error.
fn remote_error(status: u16, text: &str) -> Error {
    api_error::remote(status, text, api_error::Stated::default(), Faults::InBody, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::TransportError;
    use crate::retry::Verdict;
    use serde_json::json;

    #[test]
    fn error_bodies_map_to_code_and_message() {
        let body = json!({"Error": {"Code": "ValidationError", "Message": "Stack x does not exist", "Type": "Sender"}});
        let e = remote_error(400, &body.to_string());
        assert_eq!(e.to_string(), "ValidationError: Stack x does not exist");
        assert_eq!(e.verdict(), Verdict::Terminal);
    }

    #[test]
    fn classification_follows_the_reference() {
        let remote = |status, code: &str, kind: &str| {
            remote_error(status, &json!({"Error": {"Code": code, "Message": "m", "Type": kind}}).to_string()).verdict()
        };
        assert_eq!(remote(400, "Throttling", "Sender"), Verdict::Throttled);
        assert_eq!(remote(403, "InvalidClientTokenId", "Sender"), Verdict::Throttled);
        assert_eq!(remote(403, "InvalidAccessKeyId", "Sender"), Verdict::Throttled);
        assert_eq!(remote(503, "ServiceUnavailable", "Receiver"), Verdict::Throttled);
        assert_eq!(remote(403, "SignatureDoesNotMatch", "Sender"), Verdict::Terminal);
        assert_eq!(remote(500, "InternalFailure", "Receiver"), Verdict::Retriable);
        let unreadable = remote_error(502, "<html>Bad Gateway</html>\nmore");
        assert_eq!(unreadable.to_string(), "Unknown: HTTP 502 <html>Bad Gateway</html>");
        assert_eq!(unreadable.verdict(), Verdict::Retriable);
        let transport = Error::Transport { endpoint: "x".into(), source: TransportError::new("refused") };
        assert_eq!(transport.verdict(), Verdict::Retriable);
        let misconfigured = Error::Transport { endpoint: "x".into(), source: TransportError::config("bad CA bundle") };
        assert_eq!(misconfigured.verdict(), Verdict::Terminal);
    }

    #[test]
    fn listener_params_leave_out_the_id_for_instance_identity() {
        let http = Arc::new(HttpClient::new(Default::default(), "t"));
        let imds = Arc::new(Imds::new("http://127.0.0.1:1", true, Policy::IMDS));
        let v4 = CloudFormation::new(
            "http://x".into(),
            "us-east-1",
            Signer::SigV4(Credentials::new("a", "b", None)),
            http.clone(),
            imds.clone(),
        );
        assert_eq!(v4.listener_params("s", "l"), [("StackName", "s"), ("ListenerId", "l")]);
        let v1 = CloudFormation::new("http://x".into(), "us-east-1", Signer::InstanceIdentity, http, imds);
        assert_eq!(v1.listener_params("s", "l"), [("StackName", "s")]);
    }

    /// NET-04: each attempt ends at the client's attempt timeout, through the SDK
    /// (DescribeStackResource) and the query API alike, and is retried as a timeout.
    #[test]
    fn an_attempt_ends_at_the_attempt_timeout_and_is_retried() {
        use std::time::{Duration, Instant};
        // Accepts connections and never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", silent.local_addr().unwrap());
        let held = Arc::new(std::sync::Mutex::new(Vec::new()));
        let holder = held.clone();
        std::thread::spawn(move || {
            for stream in silent.incoming().flatten() {
                holder.lock().unwrap().push(stream);
            }
        });
        let limit = Duration::from_millis(300);
        let http = Arc::new(HttpClient::new(Default::default(), "t").with_attempt_timeout(limit));
        let imds = Arc::new(Imds::new("http://127.0.0.1:1", true, Policy::IMDS));
        let signer = Signer::SigV4(Credentials::new("a", "b", None));
        let no_sleep = Policy { max_tries: 2, throttled_budget: Duration::ZERO, sleep: |_| {} };
        let cfn = CloudFormation::new(endpoint, "us-east-1", signer, http, imds).with_retry(no_sleep);

        let started = Instant::now();
        let error = cfn.describe_stack_resource("s", "r").unwrap_err();
        let elapsed = started.elapsed();
        assert!(error.to_string().contains("Request timed out"), "{error}");
        assert!(elapsed >= limit * 2 && elapsed < limit * 2 + Duration::from_secs(2), "{elapsed:?}");
        let error = cfn.call("ElectCommandLeader", &[("StackName", "s")], false).unwrap_err();
        assert!(error.to_string().contains("Request timed out"), "{error}");
        assert!(started.elapsed() < limit * 4 + Duration::from_secs(3), "{:?}", started.elapsed());
        assert_eq!(held.lock().unwrap().len(), 4, "two attempts per call, each on a connection of its own");
    }

    #[test]
    fn converts_the_sdk_detail() {
        use aws_sdk_cloudformation::types::{ResourceStatus, StackResourceDetail as Sdk};
        let sdk = Sdk::builder()
            .logical_resource_id("Instance")
            .physical_resource_id("i-1")
            .resource_type("AWS::EC2::Instance")
            .resource_status(ResourceStatus::CreateComplete)
            .last_updated_timestamp(aws_smithy_types::DateTime::from_secs_and_nanos(1_500_000_000, 123_000_000))
            .metadata("{\"b\": 1, \"a\": {}}")
            .stack_name("s")
            .build();
        let d = detail_of("DescribeStackResource", &sdk).unwrap();
        assert_eq!(d.logical_resource_id, "Instance");
        assert_eq!(d.resource_status, "CREATE_COMPLETE");
        assert_eq!(d.last_updated.timestamp_millis(), 1_500_000_000_123);
        assert_eq!(serde_json::to_string(d.metadata.as_ref().unwrap()).unwrap(), r#"{"b":1,"a":{}}"#);

        let no_metadata = Sdk::builder()
            .logical_resource_id("Instance")
            .resource_type("T")
            .resource_status(ResourceStatus::CreateComplete)
            .last_updated_timestamp(aws_smithy_types::DateTime::from_secs(1))
            .build();
        assert_eq!(detail_of("DescribeStackResource", &no_metadata).unwrap().metadata, None);
        let no_type = Sdk::builder()
            .logical_resource_id("Instance")
            .resource_status(ResourceStatus::CreateComplete)
            .last_updated_timestamp(aws_smithy_types::DateTime::from_secs(1))
            .build();
        assert_eq!(
            detail_of("DescribeStackResource", &no_type).unwrap_err().to_string(),
            "Unexpected answer to DescribeStackResource: StackResourceDetail has no ResourceType"
        );
        assert!(
            parse_metadata("DescribeStackResource", Some("{nope"))
                .unwrap_err()
                .to_string()
                .contains("Metadata is not valid JSON")
        );
    }
}
