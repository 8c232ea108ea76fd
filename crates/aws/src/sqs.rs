//! SQS over the query protocol, API version 2012-11-05 (API-06): the `SendMessage` that
//! cfn-send-cmd-result and cfn-hup use to return a command's result (CMDT-02, HUP-CMD-03),
//! POSTed form-encoded, and the `ReceiveMessage` (long poll) and `DeleteMessage` of
//! cfn-hup's command listener (HUP-CMD-01), sent as GET with the parameters in the query
//! string, as the reference does. Requests go to the queue URL as given (EP-06: no
//! rewriting to legacy host names), signed with SigV4 for service `sqs` (CRED-04),
//! answered in XML, and retried by the reference's rules for SQS errors (NET-03).
//!
//! The signing region is the one set with [`Sqs::with_region`] (cfn-hup's `[main]
//! region`), else it comes from the queue URL (`sqs.<region>.amazonaws.com`,
//! `<region>.queue.amazonaws.com`, `queue.amazonaws.com` = us-east-1). The reference
//! always signed for us-east-1 (BUG-SQSREGION), which fails for queues elsewhere; only
//! a URL that names no region (a private endpoint, a test server) still gets us-east-1.

use crate::credentials::Credentials;
use crate::http::{self, HttpClient, TransportError};
use crate::retry::{self, Policy, Verdict};
use crate::sigv4;
use crate::xml;
use chrono::Utc;
use std::sync::Arc;

pub const API_VERSION: &str = "2012-11-05";
/// The region signed for when the queue URL names none (the reference's only region).
pub const FALLBACK_REGION: &str = "us-east-1";

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An error answer, shown as `<Code>: <Message>`.
    #[error("{code}: {message}")]
    Remote { status: u16, code: String, message: String, sender_fault: bool },
    #[error("Could not reach {endpoint}: {source}")]
    Transport { endpoint: String, source: TransportError },
    #[error("Unexpected answer to {action}: {reason}")]
    Malformed { action: String, reason: String },
}

impl Error {
    /// As for CloudFormation (SPEC §5.4, SQS extractor).
    pub fn verdict(&self) -> Verdict {
        match self {
            Error::Remote { status, code, sender_fault, .. } => Verdict::of_remote(*status, code, *sender_fault),
            Error::Transport { source, .. } if source.permanent => Verdict::Terminal,
            Error::Transport { .. } => Verdict::Retriable,
            Error::Malformed { .. } => Verdict::Terminal,
        }
    }
}

/// The region a queue URL belongs to, when its host names one.
pub fn queue_region(queue_url: &str) -> Option<String> {
    let host = http::split_url(queue_url).ok()?.host.to_ascii_lowercase();
    let labels: Vec<&str> = host.split('.').collect();
    if host == "queue.amazonaws.com" {
        return Some("us-east-1".into());
    }
    let after_sqs = labels.iter().position(|l| *l == "sqs").and_then(|i| labels.get(i + 1));
    let before_queue = labels.iter().position(|l| *l == "queue").filter(|i| *i > 0).map(|i| labels[i - 1]);
    after_sqs.copied().or(before_queue).filter(|l| is_region(l)).map(str::to_string)
}

/// `us-east-1`, `ap-southeast-2`, `us-gov-west-1`, `cn-north-1`: letters, dashes, a number.
fn is_region(label: &str) -> bool {
    let mut parts = label.split('-');
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    first.len() == 2
        && first.bytes().all(|b| b.is_ascii_lowercase())
        && rest.len() >= 2
        && rest.last().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && rest[..rest.len() - 1].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
}

/// A message taken from a queue by ReceiveMessage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub message_id: String,
    pub receipt_handle: String,
    pub body: String,
}

/// An SQS client for one set of keys (a listener's temporary credentials).
pub struct Sqs {
    credentials: Credentials,
    http: Arc<HttpClient>,
    retry: Policy,
    region: Option<String>,
}

impl Sqs {
    /// `http` may be shared (cfn-hup's listener makes a client per set of credentials).
    pub fn new(credentials: Credentials, http: impl Into<Arc<HttpClient>>) -> Self {
        Sqs { credentials, http: http.into(), retry: Policy::SQS_SEND, region: None }
    }

    pub fn with_retry(mut self, retry: Policy) -> Self {
        self.retry = retry;
        self
    }

    /// Signs for `region` whatever the queue URL says (cfn-hup signs for its `[main] region`).
    pub fn with_region(mut self, region: &str) -> Self {
        self.region = Some(region.to_string());
        self
    }

    /// ReceiveMessage: waits up to `wait_seconds` for at most one message (SPEC §7.2).
    /// One attempt: the caller's next round is the retry.
    pub fn receive_message(&self, queue_url: &str, wait_seconds: u32) -> Result<Option<Message>, Error> {
        let action = "ReceiveMessage";
        let query = vec![
            ("Action".to_string(), action.to_string()),
            ("Version".to_string(), API_VERSION.to_string()),
            ("MaxNumberOfMessages".to_string(), "1".to_string()),
            ("AttributeName.1".to_string(), "All".to_string()),
            ("WaitTimeSeconds".to_string(), wait_seconds.to_string()),
        ];
        let answer = self.attempt("GET", action, queue_url, &query)?;
        let Some(start) = answer.find("<Message>") else {
            return Ok(None);
        };
        let message = &answer[start..];
        let field = |name: &str| {
            xml::element(message, name)
                .ok_or_else(|| Error::Malformed { action: action.into(), reason: format!("the message has no {name}") })
        };
        Ok(Some(Message {
            message_id: field("MessageId")?,
            receipt_handle: field("ReceiptHandle")?,
            body: field("Body")?,
        }))
    }

    /// DeleteMessage: removes a received message for good.
    pub fn delete_message(&self, queue_url: &str, receipt_handle: &str) -> Result<(), Error> {
        let action = "DeleteMessage";
        let query = vec![
            ("Action".to_string(), action.to_string()),
            ("Version".to_string(), API_VERSION.to_string()),
            ("ReceiptHandle".to_string(), receipt_handle.to_string()),
        ];
        retry::run(&self.retry, action, || self.attempt("GET", action, queue_url, &query), Error::verdict).map(drop)
    }

    /// SendMessage: puts `body` on the queue; returns the new message's id.
    pub fn send_message(&self, queue_url: &str, body: &str) -> Result<String, Error> {
        let action = "SendMessage";
        let form = vec![
            ("Action".to_string(), action.to_string()),
            ("MessageBody".to_string(), body.to_string()),
            ("Version".to_string(), API_VERSION.to_string()),
        ];
        let answer =
            retry::run(&self.retry, action, || self.attempt("POST", action, queue_url, &form), Error::verdict)?;
        xml::element(&answer, "MessageId")
            .ok_or_else(|| Error::Malformed { action: action.into(), reason: "no MessageId in the answer".into() })
    }

    /// One signed request to the queue: `params` as the POST form or the GET query
    /// string. The answer's text on success.
    fn attempt(
        &self,
        method: &str,
        action: &str,
        queue_url: &str,
        params: &[(String, String)],
    ) -> Result<String, Error> {
        let endpoint = http::redact_url(queue_url);
        let transport = |source| Error::Transport { endpoint: endpoint.clone(), source };
        let parts = http::split_url(queue_url).map_err(transport)?;
        let (path, query) = match parts.path_and_query.split_once('?') {
            Some((path, query)) => (path.to_string(), query.to_string()),
            None => (parts.path_and_query.clone(), String::new()),
        };
        if !query.is_empty() {
            let reason = "a queue URL has no query string".to_string();
            return Err(Error::Transport { endpoint, source: TransportError::config(reason) });
        }
        let encoded = sigv4::canonical_query(params);
        let (url, payload, query) = if method == "GET" {
            (format!("{queue_url}?{encoded}"), String::new(), params)
        } else {
            (queue_url.to_string(), encoded, &[][..])
        };
        let region =
            self.region.clone().or_else(|| queue_region(queue_url)).unwrap_or_else(|| FALLBACK_REGION.to_string());
        let mut headers: Vec<(&str, String)> = vec![("Accept", "application/xml".into())];
        if method == "POST" {
            headers.push(("Content-Type", "application/x-www-form-urlencoded".into()));
        }
        let request = sigv4::Request {
            method,
            host: &parts.netloc,
            path: &path,
            query,
            headers: &headers,
            payload: payload.as_bytes(),
        };
        let signed =
            sigv4::sign(&request, &self.credentials, &sigv4::Scope { region: &region, service: "sqs" }, Utc::now());
        headers.extend(signed);
        headers.push(("Host", parts.netloc.clone()));
        tracing::debug!("Calling {action} at {endpoint} (signed for {region})");
        let body = (method == "POST").then_some(payload.as_bytes());
        let response = self.http.send(method, &url, &headers, body).map_err(transport)?;
        let text = response.text();
        if response.is_success() {
            return Ok(text);
        }
        Err(remote_error(response.status, &text))
    }
}

/// SQS's XML error (`<ErrorResponse><Error><Type/><Code/><Message/></Error>`); an
/// unreadable body is a retriable `Unknown` error, as in the reference.
fn remote_error(status: u16, text: &str) -> Error {
    match xml::element(text, "Code") {
        Some(code) => Error::Remote {
            status,
            code,
            message: xml::element(text, "Message").unwrap_or_default(),
            sender_fault: xml::element(text, "Type").as_deref() == Some("Sender"),
        },
        None => Error::Remote {
            status,
            code: "Unknown".into(),
            message: http::unreadable_answer(status, text),
            sender_fault: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_come_from_the_queue_url() {
        let cases = [
            ("https://sqs.eu-west-1.amazonaws.com/123/q", Some("eu-west-1")),
            ("https://eu-west-1.queue.amazonaws.com/123/q", Some("eu-west-1")),
            ("https://queue.amazonaws.com/123/q", Some("us-east-1")),
            ("https://sqs.cn-north-1.amazonaws.com.cn/123/q", Some("cn-north-1")),
            ("https://sqs.us-gov-west-1.amazonaws.com/123/q", Some("us-gov-west-1")),
            ("https://SQS.AP-SOUTHEAST-2.amazonaws.com/1/q", Some("ap-southeast-2")),
            ("https://vpce-1a2b.sqs.us-west-2.vpce.amazonaws.com/1/q", Some("us-west-2")),
            ("http://127.0.0.1:5000/123456789012/q", None),
            ("https://sqs.amazonaws.com/1/q", None),
            ("not a url", None),
        ];
        for (url, region) in cases {
            assert_eq!(queue_region(url).as_deref(), region, "{url}");
        }
    }

    #[test]
    fn xml_errors_map_to_code_and_message() {
        let body = r#"<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>The queue &quot;q&quot; does not exist.</Message></Error><RequestId>r</RequestId></ErrorResponse>"#;
        let e = remote_error(400, body);
        assert_eq!(e.to_string(), r#"AWS.SimpleQueueService.NonExistentQueue: The queue "q" does not exist."#);
        assert_eq!(e.verdict(), Verdict::Terminal);
        let throttled = remote_error(403, "<Error><Type>Sender</Type><Code>InvalidClientTokenId</Code></Error>");
        assert_eq!(throttled.verdict(), Verdict::Throttled);
        let server = remote_error(500, "<Error><Type>Receiver</Type><Code>InternalError</Code></Error>");
        assert_eq!(server.verdict(), Verdict::Retriable);
        let unreadable = remote_error(502, "<html>Bad Gateway</html>\nmore");
        assert_eq!(unreadable.to_string(), "Unknown: HTTP 502 <html>Bad Gateway</html>");
        assert_eq!(unreadable.verdict(), Verdict::Retriable);
    }
}
