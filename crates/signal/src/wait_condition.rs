//! Signalling a WaitConditionHandle (SIG-05..07, SIG-09): the handle is a presigned
//! URL; the signal is an HTTP PUT of a small JSON document to it, retried by the
//! reference's generic HTTP rules.

use crate::Status;
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use cfn_metadata::http::{self, HttpClient, TransportError};
use cfn_metadata::pyjson;
use cfn_metadata::retry::{self, Policy, Verdict};

/// The reason sent with a FAILURE signal when none was given (SIG-06).
pub const DEFAULT_FAILURE_REASON: &str = "Configuration failed.";

/// The longest part of an error answer shown to the user; S3 errors are a few hundred
/// bytes, but a proxy's HTML error page should not flood a terminal or a log line.
const MAX_ERROR_BODY_CHARS: usize = 1000;

/// SIG-05: neither a URL nor the base64 encoding of one. Shows the argument as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid WaitConditionHandle URL specified: {0}")]
pub struct InvalidHandleUrl(pub String);

fn is_http_url(text: &str) -> bool {
    // Case-sensitive, as the reference matches it: `HTTPS://…` is not taken as a URL.
    text.starts_with("http://") || text.starts_with("https://")
}

/// SIG-05: the handle URL from the command-line argument — used as it is when it starts
/// with `http://` or `https://`, otherwise base64-decoded (leniently, like Python's
/// decoder: characters outside the alphabet and missing padding are ignored) and then
/// required to be such a URL.
pub fn handle_url(argument: &str) -> Result<String, InvalidHandleUrl> {
    if is_http_url(argument) {
        return Ok(argument.to_string());
    }
    let invalid = || InvalidHandleUrl(argument.to_string());
    let alphabet: String = argument.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/')).collect();
    let lenient = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let decoded = lenient.decode(alphabet.as_bytes()).map_err(|_| invalid())?;
    let url = String::from_utf8(decoded).map_err(|_| invalid())?;
    if is_http_url(&url) { Ok(url) } else { Err(invalid()) }
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

/// Why a WaitConditionHandle signal was not delivered. Shown after
/// `Error signaling CloudFormation: `, always on one line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SignalError {
    /// An HTTP error answer, shown as the reference shows it
    /// (`[Errno 403] HTTP Error 403 : <body>`) so that scripts matching it still work;
    /// the body is folded onto one line and shortened.
    #[error("[Errno {status}] HTTP Error {status} :{}", spaced(body))]
    Http { status: u16, body: String },
    /// No answer at all; `endpoint` is the URL's scheme and host only, because the
    /// rest of a presigned URL is a credential.
    #[error("Could not reach {endpoint}: {source}")]
    Transport { endpoint: String, source: TransportError },
}

/// ` body`, or nothing for an empty body (no trailing space).
fn spaced(body: &str) -> String {
    if body.is_empty() { String::new() } else { format!(" {body}") }
}

impl SignalError {
    /// SIG-09 with the generic rules of SPEC §5.4.
    pub fn verdict(&self) -> Verdict {
        match self {
            SignalError::Http { status, .. } => http_verdict(*status),
            SignalError::Transport { source, .. } if source.permanent => Verdict::Terminal,
            SignalError::Transport { .. } => Verdict::Retriable,
        }
    }
}

/// The reference's generic HTTP classification (SPEC §5.4): 503 is "slow down" and
/// keeps being retried within the throttling budget; any other status below 500 is
/// the caller's mistake and final, except 404 and 408, which can be transient (an S3
/// object not visible yet, a timeout); 500 and above are retried.
pub fn http_verdict(status: u16) -> Verdict {
    match status {
        503 => Verdict::Throttled,
        404 | 408 => Verdict::Retriable,
        s if s < 500 => Verdict::Terminal,
        _ => Verdict::Retriable,
    }
}

/// An error body on one line: lines trimmed and joined by a space, then shortened.
fn one_line(text: &str) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let cleaned: String = joined.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if cleaned.chars().count() > MAX_ERROR_BODY_CHARS {
        let cut: String = cleaned.chars().take(MAX_ERROR_BODY_CHARS).collect();
        format!("{cut}...")
    } else {
        cleaned
    }
}

/// Sends `signal` to the handle `url` (SIG-06, SIG-09): a PUT with an empty
/// `Content-Type` header — the presigned URL was signed for an empty content type, so
/// any other value (or a client's default) would break its signature — retried with
/// `policy` (the reference's 5 tries with back-off; 4xx final; 503 bounded by the
/// throttling budget; every attempt bounded by the client's timeout).
pub fn send(http: &HttpClient, url: &str, signal: &WaitConditionSignal, policy: &Policy) -> Result<(), SignalError> {
    let endpoint = match http::split_url(url) {
        Ok(parts) => format!("{}://{}", parts.scheme, parts.netloc),
        Err(source) => return Err(SignalError::Transport { endpoint: "the WaitConditionHandle URL".into(), source }),
    };
    let body = signal.body();
    let headers = [("Content-Type", String::new())];
    tracing::debug!(
        "Signaling WaitConditionHandle {} with unique ID {} and status {}",
        http::redact_url(url),
        signal.unique_id,
        signal.status
    );
    retry::run(
        policy,
        "WaitConditionHandle signal",
        || {
            let response = http
                .send("PUT", url, &headers, Some(body.as_bytes()))
                .map_err(|source| SignalError::Transport { endpoint: endpoint.clone(), source })?;
            if response.is_success() {
                Ok(())
            } else {
                Err(SignalError::Http { status: response.status, body: one_line(&response.text()) })
            }
        },
        SignalError::verdict,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

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

    #[test]
    fn http_statuses_are_classified_like_the_reference() {
        assert_eq!(http_verdict(503), Verdict::Throttled);
        for status in [400, 401, 403, 405, 409, 410, 412, 429, 301, 302] {
            assert_eq!(http_verdict(status), Verdict::Terminal, "{status}");
        }
        for status in [404, 408, 500, 502, 504, 599] {
            assert_eq!(http_verdict(status), Verdict::Retriable, "{status}");
        }
        let refused = SignalError::Transport { endpoint: "http://h".into(), source: TransportError::new("refused") };
        assert_eq!(refused.verdict(), Verdict::Retriable);
        let bad_ca = SignalError::Transport { endpoint: "https://h".into(), source: TransportError::config("bad CA") };
        assert_eq!(bad_ca.verdict(), Verdict::Terminal);
    }

    #[test]
    fn errors_read_on_one_line() {
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>\r\n  <Message>Access Denied</Message></Error>\n";
        let error = SignalError::Http { status: 403, body: one_line(body) };
        assert_eq!(
            error.to_string(),
            "[Errno 403] HTTP Error 403 : <?xml version=\"1.0\" encoding=\"UTF-8\"?> <Error><Code>AccessDenied</Code> <Message>Access Denied</Message></Error>"
        );
        assert_eq!(SignalError::Http { status: 500, body: one_line("") }.to_string(), "[Errno 500] HTTP Error 500 :");
        let long = one_line(&"x".repeat(5000));
        assert_eq!(long.len(), MAX_ERROR_BODY_CHARS + 3);
        assert!(!one_line("a\tb\u{7}c").contains(|c: char| c.is_control()));
        let transport = SignalError::Transport {
            endpoint: "http://127.0.0.1:9".into(),
            source: TransportError::new("Connection refused (os error 111)"),
        };
        assert_eq!(transport.to_string(), "Could not reach http://127.0.0.1:9: Connection refused (os error 111)");
    }

    /// A server answering each request with the next status of `statuses`, recording
    /// the raw request heads and bodies.
    fn serve(statuses: Vec<u16>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for (stream, status) in listener.incoming().zip(statuses) {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if let Some((name, value)) = line.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                record.lock().unwrap().push(format!("{head}{}", String::from_utf8_lossy(&body)));
                let answer = format!("<Error>{status}</Error>");
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        (url, seen)
    }

    fn quick() -> Policy {
        fn no_sleep(_: Duration) {}
        Policy { max_tries: 5, throttled_budget: Duration::from_secs(60), sleep: no_sleep }
    }

    fn client() -> HttpClient {
        HttpClient::new(cfn_metadata::ProxyOptions::default(), "test")
    }

    #[test]
    fn the_put_has_an_empty_content_type_and_the_reference_body() {
        let (url, seen) = serve(vec![200]);
        let signal = WaitConditionSignal::new(Status::Success, "done", "d", "i-1");
        send(&client(), &format!("{url}/wch?Signature=s"), &signal, &quick()).unwrap();
        let requests = seen.lock().unwrap();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert!(request.starts_with("PUT /wch?Signature=s HTTP/1.1\r\n"), "{request}");
        let content_types: Vec<&str> =
            request.lines().filter(|l| l.to_ascii_lowercase().starts_with("content-type:")).collect();
        assert_eq!(content_types.len(), 1, "{request}");
        assert_eq!(content_types[0].split_once(':').unwrap().1.trim(), "", "{request}");
        assert!(request.ends_with(&format!("\r\n\r\n{}", signal.body())), "{request}");
    }

    #[test]
    fn client_errors_are_final_and_server_errors_are_retried() {
        let signal = WaitConditionSignal::new(Status::Success, "", "", "id");
        let (url, seen) = serve(vec![403]);
        let error = send(&client(), &url, &signal, &quick()).unwrap_err();
        assert_eq!(error.to_string(), "[Errno 403] HTTP Error 403 : <Error>403</Error>");
        assert_eq!(seen.lock().unwrap().len(), 1);

        let (url, seen) = serve(vec![500, 404, 503, 200]);
        send(&client(), &url, &signal, &quick()).unwrap();
        assert_eq!(seen.lock().unwrap().len(), 4);

        let (url, seen) = serve(vec![502; 5]);
        let error = send(&client(), &url, &signal, &quick()).unwrap_err();
        assert_eq!(error.to_string(), "[Errno 502] HTTP Error 502 : <Error>502</Error>");
        assert_eq!(seen.lock().unwrap().len(), 5);
    }

    #[test]
    fn a_url_the_client_cannot_use_is_not_retried() {
        let signal = WaitConditionSignal::new(Status::Success, "", "", "id");
        let error = send(&client(), "http://", &signal, &quick()).unwrap_err();
        assert_eq!(error.verdict(), Verdict::Terminal, "{error}");
    }
}
