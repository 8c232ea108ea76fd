//! Signalling a WaitConditionHandle (SIG-05..07, SIG-09): the handle is a presigned
//! URL; the signal is an HTTP PUT of a small JSON document to it, retried by the
//! reference's generic HTTP rules. The PUT itself (empty `Content-Type`, retries) is
//! `cfn_aws::presigned::put`, tested there; here, the handle and the body.

use crate::Status;
use cfn_aws::http::{self, HttpClient};
use cfn_aws::presigned;
use cfn_aws::retry::Policy;
use cfn_python::json as pyjson;

pub use cfn_aws::presigned::{PutError as SignalError, http_verdict};

/// The reason sent with a FAILURE signal when none was given (SIG-06).
pub const DEFAULT_FAILURE_REASON: &str = "Configuration failed.";

/// SIG-05: neither a URL nor the base64 encoding of one. Shows the argument as given,
/// less any password or signature (`HTTPS://…` is refused, as the reference refused it,
/// but is still a presigned URL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid WaitConditionHandle URL specified: {}", http::redact_url(.0))]
pub struct InvalidHandleUrl(pub String);

/// SIG-05: the handle URL from the command-line argument — used as it is when it starts
/// with `http://` or `https://`, otherwise base64-decoded (leniently, like Python's
/// decoder) and then required to be such a URL.
pub fn handle_url(argument: &str) -> Result<String, InvalidHandleUrl> {
    presigned::decode_url(argument).map_err(|_| InvalidHandleUrl(argument.to_string()))
}

/// What a WaitConditionHandle signal carries (SIG-06).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitConditionSignal {
    pub status: Status,
    pub reason: String,
    pub data: String,
    pub unique_id: String,
}

impl WaitConditionSignal {
    /// A FAILURE without a reason gets `Configuration failed.`, as in the reference.
    pub fn new(status: Status, reason: &str, data: &str, unique_id: &str) -> Self {
        let reason = if reason.is_empty() && status == Status::Failure { DEFAULT_FAILURE_REASON } else { reason };
        WaitConditionSignal { status, reason: reason.into(), data: data.into(), unique_id: unique_id.into() }
    }

    /// The PUT body exactly as the reference writes it (recorded in
    /// tests/golden/reference-1.4-31/cfn-signal/wire-*.request): keys in the order
    /// Status, Reason, Data, UniqueId, `", "` and `": "` separators, non-ASCII escaped.
    pub fn body(&self) -> String {
        let mut document = serde_json::Map::new();
        document.insert("Status".into(), self.status.as_str().into());
        document.insert("Reason".into(), self.reason.clone().into());
        document.insert("Data".into(), self.data.clone().into());
        document.insert("UniqueId".into(), self.unique_id.clone().into());
        pyjson::to_compact(&serde_json::Value::Object(document))
    }
}

/// Sends `signal` to the handle `url` (SIG-06, SIG-09): a PUT with an empty
/// `Content-Type` header, retried with `policy` (the reference's 5 tries with back-off;
/// 4xx final; 503 bounded by the throttling budget; every attempt bounded by the
/// client's timeout).
pub fn send(http: &HttpClient, url: &str, signal: &WaitConditionSignal, policy: &Policy) -> Result<(), SignalError> {
    tracing::debug!(
        "Signaling WaitConditionHandle {} with unique ID {} and status {}",
        http::redact_url(url),
        signal.unique_id,
        signal.status
    );
    presigned::put(http, url, &signal.body(), policy, "WaitConditionHandle signal")
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn urls_are_taken_plain_or_base64_encoded() {
        let url = "https://cloudformation-waitcondition-us-east-1.s3.amazonaws.com/arn%3Aaws/x?Signature=a%2Bb";
        assert_eq!(handle_url(url).unwrap(), url);
        assert_eq!(handle_url("http://127.0.0.1:9/x").unwrap(), "http://127.0.0.1:9/x");
        let encoded = base64::engine::general_purpose::STANDARD.encode(url);
        assert_eq!(handle_url(&encoded).unwrap(), url);
        // Python's decoder skips characters outside the alphabet (line breaks of
        // `base64` output) and does not insist on padding.
        let wrapped = format!("{}\n{}", &encoded[..20], &encoded[20..]);
        assert_eq!(handle_url(&wrapped).unwrap(), url);
        assert_eq!(handle_url(encoded.trim_end_matches('=')).unwrap(), url);
    }

    #[test]
    fn anything_else_is_refused_with_the_reference_message() {
        // `Zm9vYmFy` is base64 for "foobar": decodable, but not a URL.
        for bad in ["notaurl", "Zm9vYmFy", "", "ftp://host/x", "HTTPS://host/x", "//host/x", "\u{e9}\u{e9}"] {
            let error = handle_url(bad).unwrap_err();
            assert_eq!(error.to_string(), format!("Invalid WaitConditionHandle URL specified: {bad}"));
        }
        // Decodes to bytes that are not text.
        assert!(handle_url("/////w==").is_err());
        assert_eq!(
            handle_url("HTTPS://u:pw@h/x?Signature=s1g").unwrap_err().to_string(),
            "Invalid WaitConditionHandle URL specified: HTTPS://REDACTED@h/x?Signature=REDACTED"
        );
    }

    #[test]
    fn the_body_is_written_like_the_reference() {
        let failure = WaitConditionSignal::new(Status::Failure, "", "some data", "myid");
        assert_eq!(
            failure.body(),
            r#"{"Status": "FAILURE", "Reason": "Configuration failed.", "Data": "some data", "UniqueId": "myid"}"#
        );
        let success = WaitConditionSignal::new(Status::Success, "", "", "myid");
        assert_eq!(success.body(), r#"{"Status": "SUCCESS", "Reason": "", "Data": "", "UniqueId": "myid"}"#);
        let escaped = WaitConditionSignal::new(Status::Failure, "why", "a \"q\"\n", "id \u{e9}");
        assert_eq!(
            escaped.body(),
            r#"{"Status": "FAILURE", "Reason": "why", "Data": "a \"q\"\n", "UniqueId": "id \u00e9"}"#
        );
    }

    /// The body the reference sent for the same options (tests/golden/README.md).
    #[test]
    fn the_body_matches_the_recorded_reference_requests() {
        let golden =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/reference-1.4-31/cfn-signal");
        let cases = [
            ("wire-failure-default-reason", WaitConditionSignal::new(Status::Failure, "", "some data", "myid")),
            (
                "wire-exit0-success-false",
                WaitConditionSignal::new(Status::from_options(Some(0), Some("false")), "why", "", "id \u{e9}"),
            ),
            ("wire-base64-url", WaitConditionSignal::new(Status::Success, "", "", "myid")),
        ];
        for (case, signal) in cases {
            let request = std::fs::read_to_string(golden.join(format!("{case}.request"))).unwrap();
            let (head, body) = request.split_once("\r\n\r\n").unwrap();
            assert_eq!(body, signal.body(), "{case}");
            assert!(format!("{head}\r\n").contains("\r\nContent-Type: \r\n"), "{case}: {head}");
        }
    }
}
