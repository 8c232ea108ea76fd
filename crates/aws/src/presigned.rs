//! PUTs to presigned URLs: the WaitConditionHandle of cfn-signal (SIG-05..07, SIG-09)
//! and the event handle of cfn-send-cmd-event (CMDT-03). Both take the URL plain or
//! base64-encoded, PUT a small JSON document with an empty `Content-Type`, and retry by
//! the reference's generic HTTP rules (SPEC §5.4).

use crate::http::{self, HttpClient, TransportError};
use crate::retry::{self, Policy, Verdict};
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The longest part of an error answer shown to the user; S3 errors are a few hundred
/// bytes, but a proxy's HTML error page should not flood a terminal or a log line.
pub const MAX_ERROR_BODY_CHARS: usize = 1000;

fn is_http_url(text: &str) -> bool {
    // Case-sensitive, as the reference matches it: `HTTPS://…` is not taken as a URL.
    text.starts_with("http://") || text.starts_with("https://")
}

/// The URL a handle argument stands for: the argument itself when it starts with
/// `http://` or `https://`, otherwise its base64 decoding (lenient like Python's
/// decoder: characters outside the alphabet and missing padding are ignored). `Err`
/// carries what the argument decodes to (the argument itself when it does not decode to
/// text), for the tools' "Invalid … URL specified" messages.
pub fn decode_url(argument: &str) -> Result<String, String> {
    if is_http_url(argument) {
        return Ok(argument.to_string());
    }
    let alphabet: String = argument.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/')).collect();
    let lenient = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let decoded = lenient.decode(alphabet.as_bytes()).map_err(|_| argument.to_string())?;
    let text = String::from_utf8(decoded).map_err(|_| argument.to_string())?;
    if is_http_url(&text) { Ok(text) } else { Err(text) }
}

/// Why a PUT was not delivered; always one line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PutError {
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

impl crate::retry::AttemptError for PutError {
    fn is_connection_failure(&self) -> bool {
        matches!(self, PutError::Transport { source, .. } if source.is_connection_failure())
    }
}

/// ` body`, or nothing for an empty body (no trailing space).
fn spaced(body: &str) -> String {
    if body.is_empty() { String::new() } else { format!(" {body}") }
}

impl PutError {
    /// The generic rules of SPEC §5.4.
    pub fn verdict(&self) -> Verdict {
        match self {
            PutError::Http { status, .. } => http_verdict(*status),
            PutError::Transport { source, .. } if source.permanent => Verdict::Terminal,
            PutError::Transport { .. } => Verdict::Retriable,
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
pub fn one_line(text: &str) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let cleaned: String = joined.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if cleaned.chars().count() > MAX_ERROR_BODY_CHARS {
        let cut: String = cleaned.chars().take(MAX_ERROR_BODY_CHARS).collect();
        format!("{cut}...")
    } else {
        cleaned
    }
}

/// PUTs `body` to `url` with an empty `Content-Type` header — a presigned URL is signed
/// for an empty content type, so any other value (or a client's default) would break
/// its signature — retried with `policy`. `what` names the request in the log.
pub fn put(http: &HttpClient, url: &str, body: &str, policy: &Policy, what: &str) -> Result<(), PutError> {
    let endpoint = match http::split_url(url) {
        Ok(parts) => format!("{}://{}", parts.scheme, parts.netloc),
        Err(source) => return Err(PutError::Transport { endpoint: format!("the {what} URL"), source }),
    };
    let headers = [("Content-Type", String::new())];
    retry::run(
        policy,
        what,
        || {
            let response = http
                .send("PUT", url, &headers, Some(body.as_bytes()))
                .map_err(|source| PutError::Transport { endpoint: endpoint.clone(), source })?;
            if response.is_success() {
                Ok(())
            } else {
                Err(PutError::Http { status: response.status, body: one_line(&response.text()) })
            }
        },
        PutError::verdict,
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
        assert_eq!(decode_url(url).unwrap(), url);
        let encoded = base64::engine::general_purpose::STANDARD.encode(url);
        assert_eq!(decode_url(&encoded).unwrap(), url);
        let wrapped = format!("{}\n{}", &encoded[..20], &encoded[20..]);
        assert_eq!(decode_url(&wrapped).unwrap(), url);
        assert_eq!(decode_url(encoded.trim_end_matches('=')).unwrap(), url);
        // What the argument decodes to is reported; undecodable arguments as given.
        assert_eq!(decode_url("Zm9vYmFy").unwrap_err(), "foobar");
        assert_eq!(decode_url("ftp://host/x").unwrap_err(), "ftp://host/x");
        assert_eq!(decode_url("/////w==").unwrap_err(), "/////w==");
        assert_eq!(decode_url("").unwrap_err(), "");
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
        let refused = PutError::Transport { endpoint: "http://h".into(), source: TransportError::new("refused") };
        assert_eq!(refused.verdict(), Verdict::Retriable);
        let bad_ca = PutError::Transport { endpoint: "https://h".into(), source: TransportError::config("bad CA") };
        assert_eq!(bad_ca.verdict(), Verdict::Terminal);
    }

    #[test]
    fn errors_read_on_one_line() {
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>\r\n  <Message>Access Denied</Message></Error>\n";
        let error = PutError::Http { status: 403, body: one_line(body) };
        assert_eq!(
            error.to_string(),
            "[Errno 403] HTTP Error 403 : <?xml version=\"1.0\" encoding=\"UTF-8\"?> <Error><Code>AccessDenied</Code> <Message>Access Denied</Message></Error>"
        );
        assert_eq!(PutError::Http { status: 500, body: one_line("") }.to_string(), "[Errno 500] HTTP Error 500 :");
        let long = one_line(&"x".repeat(5000));
        assert_eq!(long.len(), MAX_ERROR_BODY_CHARS + 3);
        assert!(!one_line("a\tb\u{7}c").contains(|c: char| c.is_control()));
        let transport = PutError::Transport {
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
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap();
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
        HttpClient::new(crate::ProxyOptions::default(), "test")
    }

    #[test]
    fn the_put_has_an_empty_content_type_and_the_body() {
        let (url, seen) = serve(vec![200]);
        put(&client(), &format!("{url}/h?Signature=s"), r#"{"a": 1}"#, &quick(), "test PUT").unwrap();
        let requests = seen.lock().unwrap();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert!(request.starts_with("PUT /h?Signature=s HTTP/1.1\r\n"), "{request}");
        let content_types: Vec<&str> =
            request.lines().filter(|l| l.to_ascii_lowercase().starts_with("content-type:")).collect();
        assert_eq!(content_types.len(), 1, "{request}");
        assert_eq!(content_types[0].split_once(':').unwrap().1.trim(), "", "{request}");
        assert!(request.ends_with("\r\n\r\n{\"a\": 1}"), "{request}");
    }

    #[test]
    fn client_errors_are_final_and_server_errors_are_retried() {
        let (url, seen) = serve(vec![403]);
        let error = put(&client(), &url, "{}", &quick(), "test PUT").unwrap_err();
        assert_eq!(error.to_string(), "[Errno 403] HTTP Error 403 : <Error>403</Error>");
        assert_eq!(seen.lock().unwrap().len(), 1);

        let (url, seen) = serve(vec![500, 404, 503, 200]);
        put(&client(), &url, "{}", &quick(), "test PUT").unwrap();
        assert_eq!(seen.lock().unwrap().len(), 4);

        let (url, seen) = serve(vec![502; 5]);
        let error = put(&client(), &url, "{}", &quick(), "test PUT").unwrap_err();
        assert_eq!(error.to_string(), "[Errno 502] HTTP Error 502 : <Error>502</Error>");
        assert_eq!(seen.lock().unwrap().len(), 5);
    }

    #[test]
    fn a_url_the_client_cannot_use_is_not_retried() {
        let error = put(&client(), "http://", "{}", &quick(), "test PUT").unwrap_err();
        assert_eq!(error.verdict(), Verdict::Terminal, "{error}");
    }
}
