//! The errors of AWS API calls in the reference's terms, for CloudFormation and SQS
//! alike: an error answer is `<Code>: <Message>` with its HTTP status and whose fault it
//! was (API-07), an answer without a readable error is `Unknown: HTTP <status> …`, no
//! answer at all is `Could not reach <endpoint>: …`; the retry verdict follows from
//! that (NET-03).
//!
//! An error answer need not come from the service: a proxy or a load balancer on the way
//! answers in a format of its own (JSON, HTML). Its code and message are read from XML
//! or JSON alike ([`stated`]), and a 4xx is final whatever its body ([`Verdict::of_remote`]).

use crate::http::{self, TransportError};
use crate::imds::ImdsError;
use crate::retry::Verdict;
use crate::xml;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::Value;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An error answer from the service, shown as `<Code>: <Message>`.
    #[error("{code}: {message}")]
    Remote { status: u16, code: String, message: String, sender_fault: bool },
    #[error("Could not reach {endpoint}: {source}")]
    Transport { endpoint: String, source: TransportError },
    /// Only CloudFormation calls are signed with the instance identity.
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

impl crate::retry::AttemptError for Error {
    fn is_connection_failure(&self) -> bool {
        matches!(self, Error::Transport { source, .. } if source.is_connection_failure())
    }
}

/// Where an error answer says whose fault it was.
#[derive(Debug, Clone, Copy)]
pub enum Faults {
    /// awsQuery (CloudFormation): `<Type>Sender</Type>` in the XML body; the SDK reads
    /// Code and Message but not Type. No Type: not the caller's.
    InBody,
    /// awsJson with query compatibility (SQS): `x-amzn-query-error: <Code>;<Sender|Receiver>`.
    /// No header: a 4xx is the caller's.
    InHeader,
}

/// An SDK error as ours; `endpoint` is shown redacted by the caller's choice.
pub fn from_sdk<E>(action: &str, endpoint: &str, faults: Faults, error: SdkError<E, HttpResponse>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    if let Some(imds) = find_cause::<ImdsError>(&error) {
        return Error::Identity(imds.clone());
    }
    let transport = |source| Error::Transport { endpoint: endpoint.to_string(), source };
    match &error {
        SdkError::DispatchFailure(failure) => {
            let connector = failure.as_connector_error();
            match connector.and_then(|c| find_cause::<TransportError>(c)) {
                Some(source) => transport(source.clone()),
                None if failure.is_timeout() => transport(TransportError::new("Request timed out")),
                None => transport(TransportError::new(match connector {
                    Some(c) => http::innermost(c),
                    None => http::innermost(&error),
                })),
            }
        }
        SdkError::TimeoutError(_) => transport(TransportError::new("Request timed out")),
        SdkError::ServiceError(service) => {
            answer_error(action, service.raw(), service.err().code(), service.err().message(), faults, &error)
        }
        SdkError::ResponseError(response) => answer_error(action, response.raw(), None, None, faults, &error),
        // The request could not be built: a bad endpoint (`$AWS_ENDPOINT_URL_SQS`) or parameter.
        _ => transport(TransportError::config(http::innermost(&error))),
    }
}

/// The first error of type `T` in `error`'s chain of causes.
fn find_cause<'a, T: std::error::Error + 'static>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a T> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// An answer that the SDK could not turn into the operation's output.
fn answer_error(
    action: &str,
    raw: &HttpResponse,
    code: Option<&str>,
    message: Option<&str>,
    faults: Faults,
    error: &(dyn std::error::Error + 'static),
) -> Error {
    let status = raw.status().as_u16();
    let text = raw.body().bytes().map(String::from_utf8_lossy).unwrap_or_default();
    if (200..300).contains(&status) {
        return Error::Malformed {
            action: action.into(),
            reason: format!("unreadable answer: {}", http::innermost(error)),
        };
    }
    let query_error = raw.headers().get("x-amzn-query-error");
    let sdk = Stated { code: code.map(str::to_string), message: message.map(str::to_string), kind: None };
    remote(status, &text, sdk, faults, query_error)
}

/// An error answer as [`Error::Remote`]: the code and message the SDK read (`sdk`), else
/// those the body states in any format ([`stated`]); `Unknown` and the status and first
/// line of the body when it states none.
pub(crate) fn remote(status: u16, text: &str, sdk: Stated, faults: Faults, query_error: Option<&str>) -> Error {
    let body = stated(text);
    let sender_fault = match faults {
        Faults::InBody => body.kind.as_deref() == Some("Sender"),
        Faults::InHeader => match query_error.and_then(|v| v.split_once(';')) {
            Some((_, fault)) => fault == "Sender",
            None => (400..500).contains(&status),
        },
    };
    match sdk.code.or(body.code).filter(|c| !c.is_empty()) {
        Some(code) => Error::Remote {
            status,
            message: sdk.message.or(body.message).map(|m| one_line(&m)).unwrap_or_default(),
            sender_fault,
            code: one_line(&code),
        },
        None => Error::Remote {
            status,
            code: "Unknown".into(),
            message: http::unreadable_answer(status, text),
            sender_fault: false,
        },
    }
}

/// What an error answer says about itself.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Stated {
    pub code: Option<String>,
    pub message: Option<String>,
    /// `Type`: whose fault, `Sender` or `Receiver`.
    pub kind: Option<String>,
}

/// The code, message and type an error body states, in whichever format it is: XML
/// (awsQuery's `<ErrorResponse><Error>`, S3's `<Error>`), the query API's JSON
/// (`{"Error": {"Code", "Message", "Type"}}`, the reference's format), or a flat JSON
/// object (`{"code" | "Code" | "__type", "message" | "Message"}`, as awsJson services
/// and the proxies and gateways that imitate them answer).
pub(crate) fn stated(text: &str) -> Stated {
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text) {
        let inner = object.get("Error").and_then(Value::as_object).unwrap_or(&object);
        let field = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| inner.get(*n).and_then(Value::as_str))
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        // awsJson's `__type` may carry the shape's namespace: `com.amazonaws.sqs#QueueDoesNotExist`.
        let code = field(&["Code", "code", "__type"]).map(|c| c.rsplit('#').next().unwrap_or_default().to_string());
        return Stated { code, message: field(&["Message", "message"]), kind: field(&["Type"]) };
    }
    Stated {
        code: xml::element(text, "Code"),
        message: xml::element(text, "Message"),
        kind: xml::element(text, "Type"),
    }
}

/// A code or message from an answer, as one line of at most 1000 characters: whoever
/// answered (a proxy, say) chose it, and it is printed and logged as it is.
fn one_line(text: &str) -> String {
    let line: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(1000).collect();
    line.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(status: u16, body: &str, query_error: Option<&str>) -> HttpResponse {
        let mut raw = HttpResponse::new(
            aws_smithy_runtime_api::http::StatusCode::try_from(status).unwrap(),
            aws_smithy_types::body::SdkBody::from(body.to_string()),
        );
        if let Some(value) = query_error {
            raw.headers_mut().insert("x-amzn-query-error", value.to_string());
        }
        raw
    }

    #[test]
    fn query_error_answers_keep_code_message_and_type() {
        let e = TransportError::new("x");
        let xml = |kind: &str, code: &str| {
            format!(
                "<ErrorResponse xmlns=\"http://cloudformation.amazonaws.com/doc/2010-05-15/\"><Error><Type>{kind}</Type>\
                 <Code>{code}</Code><Message>Stack a &amp; b does not exist</Message></Error><RequestId>r</RequestId></ErrorResponse>"
            )
        };
        let answer = |status, body: &str, code, message| {
            answer_error("A", &raw(status, body, None), code, message, Faults::InBody, &e)
        };
        let missing = answer(400, &xml("Sender", "ValidationError"), None, None);
        assert_eq!(missing.to_string(), "ValidationError: Stack a & b does not exist");
        assert_eq!(missing.verdict(), Verdict::Terminal);
        let throttled = answer(400, &xml("Sender", "Throttling"), Some("Throttling"), Some("Rate"));
        assert_eq!((throttled.to_string().as_str(), throttled.verdict()), ("Throttling: Rate", Verdict::Throttled));
        let internal = answer(500, &xml("Receiver", "InternalFailure"), None, None);
        assert_eq!(internal.verdict(), Verdict::Retriable);
        let unreadable = answer(502, "<html>Bad Gateway</html>\nmore", None, None);
        assert_eq!(unreadable.to_string(), "Unknown: HTTP 502 <html>Bad Gateway</html>");
        assert_eq!(unreadable.verdict(), Verdict::Retriable);
        let garbled = answer(200, "not xml", None, None);
        assert_eq!(garbled.verdict(), Verdict::Terminal);
        assert!(garbled.to_string().starts_with("Unexpected answer to A: "), "{garbled}");
    }

    #[test]
    fn faults_come_from_the_query_error_header() {
        let body = "<html>Bad Gateway</html>\nmore";
        let fault = |status, header| match remote(status, body, Stated::default(), Faults::InHeader, header) {
            Error::Remote { sender_fault, .. } => sender_fault,
            other => panic!("{other}"),
        };
        let sdk = |code: &str| Stated { code: Some(code.into()), ..Stated::default() };
        let with_code = |status, header| match remote(status, body, sdk("C"), Faults::InHeader, header) {
            Error::Remote { sender_fault, .. } => sender_fault,
            other => panic!("{other}"),
        };
        assert!(with_code(400, Some("AWS.SimpleQueueService.NonExistentQueue;Sender")));
        assert!(!with_code(400, Some("InternalError;Receiver")));
        assert!(with_code(400, None));
        assert!(!with_code(500, None));
        assert!(!fault(502, None));
        let e = TransportError::new("x");
        let unreadable = answer_error("A", &raw(502, body, None), None, None, Faults::InHeader, &e);
        assert_eq!(unreadable.to_string(), "Unknown: HTTP 502 <html>Bad Gateway</html>");
        assert_eq!(unreadable.verdict(), Verdict::Retriable);
        let gone = Error::Remote {
            status: 400,
            code: "AWS.SimpleQueueService.NonExistentQueue".into(),
            message: "The specified queue does not exist.".into(),
            sender_fault: true,
        };
        assert_eq!(gone.verdict(), Verdict::Terminal);
        let throttled = Error::Remote {
            status: 403,
            code: "InvalidClientTokenId".into(),
            message: String::new(),
            sender_fault: true,
        };
        assert_eq!(throttled.verdict(), Verdict::Throttled);
    }

    #[test]
    fn answers_that_are_not_the_services_state_their_code_in_json_or_xml() {
        let e = TransportError::new("x");
        let answer = |status, body: &str| answer_error("A", &raw(status, body, None), None, None, Faults::InBody, &e);
        // The query API's JSON, as a proxy imitating CloudFormation answers.
        let trap =
            answer(403, r#"{"Error": {"Code": "ProxyTrap", "Message": "refused by the proxy", "Type": "Sender"}}"#);
        assert_eq!((trap.to_string().as_str(), trap.verdict()), ("ProxyTrap: refused by the proxy", Verdict::Terminal));
        // Flat JSON (awsJson, gateways), without a type: a 4xx is final all the same.
        let flat = answer(403, r#"{"code": "Forbidden", "message": "blocked\nby policy\u001b[31m"}"#);
        assert_eq!(
            (flat.to_string().as_str(), flat.verdict()),
            ("Forbidden: blocked by policy [31m", Verdict::Terminal)
        );
        let typed = answer(400, r#"{"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "gone"}"#);
        assert_eq!(typed.to_string(), "QueueDoesNotExist: gone");
        // HTML: the status and the first line; final for a 4xx, retried for a 5xx.
        let html = answer(403, "<html><body>Access denied by the proxy</body></html>\n<p>more</p>");
        assert_eq!(html.to_string(), "Unknown: HTTP 403 <html><body>Access denied by the proxy</body></html>");
        assert_eq!(html.verdict(), Verdict::Terminal);
        assert_eq!(answer(502, "<html>Bad Gateway</html>").verdict(), Verdict::Retriable);
        // Throttling stays throttling, and a timeout is retried, whatever the body says.
        assert_eq!(answer(429, "<html>Too Many Requests</html>").verdict(), Verdict::Throttled);
        assert_eq!(answer(408, "{}").verdict(), Verdict::Retriable);
        let receiver = answer(400, r#"{"Error": {"Code": "Odd", "Message": "m", "Type": "Receiver"}}"#);
        assert_eq!(receiver.verdict(), Verdict::Terminal);
    }

    #[test]
    fn stated_reads_xml_and_json() {
        let xml = "<ErrorResponse><Error><Type>Sender</Type><Code>C</Code><Message>a &amp; b</Message></Error></ErrorResponse>";
        let expected = Stated { code: Some("C".into()), message: Some("a & b".into()), kind: Some("Sender".into()) };
        assert_eq!(stated(xml), expected);
        assert_eq!(stated(r#"{"Error": {"Code": "C", "Message": "a & b", "Type": "Sender"}}"#), expected);
        assert_eq!(stated(r#"{"Code": "C", "Message": "a & b", "Type": "Sender"}"#), expected);
        for nothing in ["", "[]", r#""text""#, r#"{"Error": "Forbidden"}"#, "<html>x</html>", "Forbidden"] {
            assert_eq!(stated(nothing).code, None, "{nothing}");
        }
    }
}
