//! The CloudFormation query API as the reference speaks it (API-01..05, API-07):
//! GET requests with the parameters in the query string and `ContentType=JSON`, answers
//! in JSON, errors as `{"Error": {"Code", "Message", "Type"}}`. One small client serves
//! every action the tools need, including the listener and command actions that no SDK
//! models; requests are signed with SigV4 or the instance identity (CRED-03, CRED-04),
//! and retried by the reference's rules (NET-03).

use crate::credentials::{Credentials, Signer};
use crate::http::{self, HttpClient, TransportError};
use crate::imds::{Imds, ImdsError};
use crate::retry::{self, Policy, Verdict};
use crate::sigv4;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::sync::Arc;

const API_VERSION: &str = "2010-05-15";

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An error answer from the service, shown as `<Code>: <Message>`.
    #[error("{code}: {message}")]
    Remote { status: u16, code: String, message: String, sender_fault: bool },
    #[error("Could not reach {endpoint}: {source}")]
    Transport { endpoint: String, source: TransportError },
    #[error("Could not sign the request with the instance identity: {0}")]
    Identity(#[from] ImdsError),
    #[error("Unexpected answer to {action}: {reason}")]
    Malformed { action: String, reason: String },
}

impl Error {
    /// The reference's classification (NET-03); a lost connection is retried too.
    pub fn verdict(&self) -> Verdict {
        match self {
            Error::Remote { status, code, sender_fault, .. } => Verdict::of_remote(*status, code, *sender_fault),
            Error::Transport { source, .. } if source.permanent => Verdict::Terminal,
            Error::Transport { .. } => Verdict::Retriable,
            Error::Identity(ImdsError::Failed { .. }) => Verdict::Retriable,
            Error::Identity(_) | Error::Malformed { .. } => Verdict::Terminal,
        }
    }
}

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
}

impl CloudFormation {
    pub fn new(endpoint: String, region: &str, signer: Signer, http: Arc<HttpClient>, imds: Arc<Imds>) -> Self {
        CloudFormation { endpoint, region: region.to_string(), signer, http, imds, retry: Policy::API }
    }

    pub fn with_retry(mut self, retry: Policy) -> Self {
        self.retry = retry;
        self
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// DescribeStackResource (API-01).
    pub fn describe_stack_resource(&self, stack: &str, logical_id: &str) -> Result<StackResourceDetail, Error> {
        let action = "DescribeStackResource";
        let answer = self.call(action, &[("StackName", stack), ("LogicalResourceId", logical_id)], true)?;
        parse_detail(action, &answer)
    }

    /// SignalResource (API-02).
    pub fn signal_resource(&self, stack: &str, logical_id: &str, unique_id: &str, status: &str) -> Result<(), Error> {
        self.call(
            "SignalResource",
            &[("StackName", stack), ("LogicalResourceId", logical_id), ("UniqueId", unique_id), ("Status", status)],
            true,
        )
        .map(drop)
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
        let mut params = vec![("StackName", stack), ("CommandName", command), ("InvocationId", invocation)];
        if matches!(self.signer, Signer::SigV4(_)) {
            params.push(("ListenerId", listener));
        }
        let answer = self.call(action, &params, false)?;
        answer
            .pointer("/ElectCommandLeaderResponse/ElectCommandLeaderResult/ListenerId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Error::Malformed { action: action.into(), reason: "no ListenerId in the answer".into() })
    }

    /// RegisterListener (API-03): the SQS queue on which this listener receives commands.
    pub fn register_listener(&self, stack: &str, listener: &str) -> Result<String, Error> {
        let action = "RegisterListener";
        let answer = self.call(action, &self.listener_params(stack, listener), false)?;
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
        let answer = self.call(action, &self.listener_params(stack, listener), false)?;
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
        let mut query: Vec<(String, String)> =
            vec![("Action".into(), action.into()), ("ContentType".into(), "JSON".into())];
        if with_version {
            query.push(("Version".into(), API_VERSION.into()));
        }
        query.extend(params.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        retry::run(&self.retry, action, || self.attempt(action, &query), Error::verdict)
    }

    fn attempt(&self, action: &str, query: &[(String, String)]) -> Result<Value, Error> {
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
        tracing::debug!("Calling {action} at {}", http::redact_url(&self.endpoint));
        let response = self.http.send("GET", &url, &headers, None).map_err(transport)?;
        let body: Option<Value> = serde_json::from_slice(&response.body).ok();
        if response.is_success() {
            return body
                .ok_or_else(|| Error::Malformed { action: action.into(), reason: "the answer is not JSON".into() });
        }
        Err(remote_error(response.status, body.as_ref(), &response.text()))
    }
}

/// API-07: `{"Error": {"Code", "Message", "Type"}}`; an unreadable error body is a
/// retriable `Unknown` error, as in the reference.
fn remote_error(status: u16, body: Option<&Value>, text: &str) -> Error {
    let error = body.and_then(|b| b.get("Error"));
    let field = |name: &str| error.and_then(|e| e.get(name)).and_then(Value::as_str).map(str::to_string);
    match field("Code") {
        Some(code) => Error::Remote {
            status,
            code,
            message: field("Message").unwrap_or_default(),
            sender_fault: field("Type").as_deref() == Some("Sender"),
        },
        None => Error::Remote {
            status,
            code: "Unknown".into(),
            message: http::unreadable_answer(status, text),
            sender_fault: false,
        },
    }
}

fn parse_detail(action: &str, answer: &Value) -> Result<StackResourceDetail, Error> {
    let malformed = |reason: String| Error::Malformed { action: action.into(), reason };
    let detail = answer
        .pointer("/DescribeStackResourceResponse/DescribeStackResourceResult/StackResourceDetail")
        .ok_or_else(|| malformed("no StackResourceDetail".into()))?;
    let text = |name: &str| detail.get(name).and_then(Value::as_str).map(str::to_string);
    let required = |name: &str| text(name).ok_or_else(|| malformed(format!("StackResourceDetail has no {name}")));
    let timestamp = detail
        .get("LastUpdatedTimestamp")
        .and_then(Value::as_f64)
        .and_then(|secs| DateTime::from_timestamp_micros((secs * 1e6).round() as i64))
        .ok_or_else(|| malformed("StackResourceDetail has no LastUpdatedTimestamp".into()))?;
    let metadata = match text("Metadata").filter(|m| !m.trim().is_empty()) {
        Some(m) => Some(
            serde_json::from_str(&m)
                .map_err(|e| malformed(format!("the resource's Metadata is not valid JSON: {e}")))?,
        ),
        None => None,
    };
    Ok(StackResourceDetail {
        logical_resource_id: required("LogicalResourceId")?,
        physical_resource_id: text("PhysicalResourceId"),
        resource_type: required("ResourceType")?,
        resource_status: required("ResourceStatus")?,
        last_updated: timestamp,
        metadata,
        stack_id: text("StackId"),
        stack_name: text("StackName"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_bodies_map_to_code_and_message() {
        let body = json!({"Error": {"Code": "ValidationError", "Message": "Stack x does not exist", "Type": "Sender"}});
        let e = remote_error(400, Some(&body), "");
        assert_eq!(e.to_string(), "ValidationError: Stack x does not exist");
        assert_eq!(e.verdict(), Verdict::Terminal);
    }

    #[test]
    fn classification_follows_the_reference() {
        let remote = |status, code: &str, kind: &str| {
            remote_error(status, Some(&json!({"Error": {"Code": code, "Message": "m", "Type": kind}})), "").verdict()
        };
        assert_eq!(remote(400, "Throttling", "Sender"), Verdict::Throttled);
        assert_eq!(remote(403, "InvalidClientTokenId", "Sender"), Verdict::Throttled);
        assert_eq!(remote(403, "InvalidAccessKeyId", "Sender"), Verdict::Throttled);
        assert_eq!(remote(503, "ServiceUnavailable", "Receiver"), Verdict::Throttled);
        assert_eq!(remote(403, "SignatureDoesNotMatch", "Sender"), Verdict::Terminal);
        assert_eq!(remote(500, "InternalFailure", "Receiver"), Verdict::Retriable);
        let unreadable = remote_error(502, None, "<html>Bad Gateway</html>\nmore");
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

    #[test]
    fn parses_stack_resource_detail() {
        let answer = json!({"DescribeStackResourceResponse": {"DescribeStackResourceResult": {"StackResourceDetail": {
            "LogicalResourceId": "Instance", "PhysicalResourceId": "i-1", "ResourceType": "AWS::EC2::Instance",
            "ResourceStatus": "CREATE_COMPLETE", "LastUpdatedTimestamp": 1.5e9,
            "Metadata": "{\"b\": 1, \"a\": {}}", "StackName": "s"}}}});
        let d = parse_detail("DescribeStackResource", &answer).unwrap();
        assert_eq!(d.logical_resource_id, "Instance");
        assert_eq!(d.last_updated.timestamp(), 1_500_000_000);
        assert_eq!(serde_json::to_string(d.metadata.as_ref().unwrap()).unwrap(), r#"{"b":1,"a":{}}"#);

        let mut no_metadata = answer.clone();
        no_metadata
            .pointer_mut("/DescribeStackResourceResponse/DescribeStackResourceResult/StackResourceDetail")
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove("Metadata");
        assert_eq!(parse_detail("DescribeStackResource", &no_metadata).unwrap().metadata, None);

        let mut bad = answer.clone();
        *bad.pointer_mut("/DescribeStackResourceResponse/DescribeStackResourceResult/StackResourceDetail/Metadata")
            .unwrap() = json!("{nope");
        assert!(
            parse_detail("DescribeStackResource", &bad).unwrap_err().to_string().contains("Metadata is not valid JSON")
        );
    }
}
