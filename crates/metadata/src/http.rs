//! One HTTP client for everything but IMDS: proxies chosen per request (NET-02), the
//! trust store of `tls` (NET-01), a connect timeout and a 60 s bound on each attempt
//! (NET-04), and the reference's wire log (`cfn-wire.log`, LOG-06) without secrets.

use crate::proxy::{self, ProxyOptions};
use crate::tls;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Each attempt of an API call, download or signal ends within this bound (NET-04).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Downloads (`HttpClient::stream`) wait this long for the response headers …
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);
/// … and this long for the whole body: a file may be large, so the 60 s bound of API
/// calls does not fit, but a stalled transfer must still end some time (WEAK-timeout).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(3600);

/// A response read in full.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why a request got no HTTP response at all.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct TransportError {
    pub message: String,
    /// A mistake in the configuration (a bad URL, proxy or CA bundle) that no retry
    /// can fix, as opposed to a network failure.
    pub permanent: bool,
}

impl TransportError {
    pub fn new(message: impl Into<String>) -> Self {
        TransportError { message: message.into(), permanent: false }
    }

    pub fn config(message: impl Into<String>) -> Self {
        TransportError { message: message.into(), permanent: true }
    }
}

/// The parts of a URL the client needs, split without a URL crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    pub scheme: String,
    /// `host[:port]` as written in the URL (userinfo removed).
    pub netloc: String,
    pub host: String,
    pub port: Option<u16>,
    /// Path and query, `/` when empty.
    pub path_and_query: String,
}

pub fn split_url(url: &str) -> Result<UrlParts, TransportError> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| TransportError::config(format!("Invalid URL: {url}")))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let netloc = authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_string();
    let (host, port) = match netloc.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(':') => {
            (h.to_string(), Some(p.parse().map_err(|_| TransportError::config(format!("Invalid port in URL: {url}")))?))
        }
        _ => (netloc.clone(), None),
    };
    if host.is_empty() {
        return Err(TransportError::config(format!("Invalid URL (no host): {url}")));
    }
    let path_and_query = if path.starts_with('?') {
        format!("/{path}")
    } else if path.is_empty() {
        "/".into()
    } else {
        path.into()
    };
    Ok(UrlParts { scheme: scheme.to_ascii_lowercase(), netloc, host, port, path_and_query })
}

pub struct HttpClient {
    proxies: ProxyOptions,
    user_agent: String,
    agents: Mutex<HashMap<AgentKey, ureq::Agent>>,
}

/// Agents differ by proxy, by whether they need the trust store, and by kind: API calls
/// (whole-response, 60 s bound, redirects followed) or streams (no redirects followed,
/// download timeouts).
type AgentKey = (Option<String>, bool, bool);

/// A response whose body is still to be read, from `HttpClient::stream`.
pub struct StreamingResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    url: String,
    body: ureq::Body,
}

/// Why copying a streamed body failed: the connection, or the destination.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("{0}")]
    Read(TransportError),
    #[error("{0}")]
    Write(std::io::Error),
}

impl StreamingResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Copies the body into `writer` in 64 KiB pieces, never holding it whole; returns
    /// the number of bytes copied. A connection closed before `Content-Length` bytes
    /// (or before the last chunk) is a read error.
    pub fn copy_to(&mut self, writer: &mut dyn std::io::Write) -> Result<u64, BodyError> {
        use std::io::Read;
        let mut reader = self.body.as_reader();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let n = match reader.read(&mut buffer) {
                Ok(0) => return Ok(total),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(BodyError::Read(TransportError::new(read_reason(&e)))),
            };
            writer.write_all(&buffer[..n]).map_err(BodyError::Write)?;
            total += n as u64;
        }
    }

    /// The first `limit` bytes of the body as text (for error answers), also written to
    /// the wire log as the reference logs failed responses.
    pub fn text(&mut self, limit: u64) -> String {
        use std::io::Read;
        let mut bytes = Vec::new();
        // A broken error body still leaves the status to report: read what arrives.
        let _ = self.body.as_reader().take(limit).read_to_end(&mut bytes);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        tracing::debug!(target: "cfn_wire", "Response error: {text}");
        text
    }

    /// The URL this response answers (as requested; redirects are not followed).
    pub fn url(&self) -> &str {
        &self.url
    }
}

fn read_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::TimedOut => "Read timed out".to_string(),
        std::io::ErrorKind::UnexpectedEof => format!("Connection broken: {e}"),
        _ => e.to_string(),
    }
}

impl HttpClient {
    pub fn new(proxies: ProxyOptions, user_agent: impl Into<String>) -> Self {
        HttpClient { proxies, user_agent: user_agent.into(), agents: Mutex::new(HashMap::new()) }
    }

    /// Sends one request (no retries here) and reads the whole response.
    pub fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        body: Option<&[u8]>,
    ) -> Result<Response, TransportError> {
        let (agent, request) = self.prepare(method, url, headers, false)?;
        let result = match body {
            Some(bytes) => request
                .body(bytes.to_vec())
                .map_err(|e| TransportError::config(e.to_string()))
                .and_then(|r| agent.run(r).map_err(describe)),
            None => request
                .body(())
                .map_err(|e| TransportError::config(e.to_string()))
                .and_then(|r| agent.run(r).map_err(describe)),
        };
        let mut response = result?;
        let status = response.status().as_u16();
        let headers = header_list(&response);
        let body = response.body_mut().with_config().limit(256 * 1024 * 1024).read_to_vec().map_err(describe)?;
        let response = Response { status, headers, body };
        log_wire(url, &response);
        Ok(response)
    }

    /// Sends one request without a body and returns as soon as the status and headers
    /// have arrived; the body is read by the caller (downloads, NET-07: the same proxies
    /// as every other request). Redirects are returned, not followed, so that the caller
    /// decides which credentials the next hop gets. The wire log gets the response line.
    pub fn stream(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<StreamingResponse, TransportError> {
        let (agent, request) = self.prepare(method, url, headers, true)?;
        let request = request.body(()).map_err(|e| TransportError::config(e.to_string()))?;
        let response = agent.run(request).map_err(describe)?;
        let status = response.status().as_u16();
        let headers = header_list(&response);
        log_wire_head(url, status, &headers);
        Ok(StreamingResponse { status, headers, url: url.to_string(), body: response.into_body() })
    }

    /// The agent for `url` (its proxy and trust store) and a request with `headers`.
    fn prepare(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        stream: bool,
    ) -> Result<(ureq::Agent, ureq::http::request::Builder), TransportError> {
        let parts = split_url(url)?;
        let proxy = proxy::choose(&parts.scheme, &parts.host, parts.port, &self.proxies, &|n| std::env::var(n).ok());
        let agent = self.agent_of_kind(proxy, parts.scheme == "https", stream)?;
        let mut request = ureq::http::Request::builder().method(method).uri(url);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        Ok((agent, request))
    }

    fn agent_of_kind(&self, proxy: Option<String>, https: bool, stream: bool) -> Result<ureq::Agent, TransportError> {
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        let key = (proxy, https, stream);
        if let Some(agent) = agents.get(&key) {
            return Ok(agent.clone());
        }
        let proxy = match &key.0 {
            Some(url) => Some(
                ureq::Proxy::new(url)
                    .map_err(|e| TransportError::config(format!("Invalid proxy {}: {e}", redact_userinfo(url))))?,
            ),
            None => None,
        };
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(proxy)
            .user_agent(self.user_agent.as_str())
            .timeout_connect(Some(CONNECT_TIMEOUT));
        config = if stream {
            config.max_redirects(0).timeout_recv_response(Some(RESPONSE_TIMEOUT)).timeout_recv_body(Some(BODY_TIMEOUT))
        } else {
            config.timeout_global(Some(ATTEMPT_TIMEOUT))
        };
        if https {
            // Only HTTPS needs the trust store, so plain-HTTP calls never read it.
            let roots = tls::root_certs().map_err(TransportError::config)?;
            config = config.tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build());
        }
        let agent: ureq::Agent = config.build().into();
        agents.insert(key, agent.clone());
        Ok(agent)
    }
}

/// A response's headers as (name, value) text pairs.
fn header_list<B>(response: &ureq::http::Response<B>) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect()
}

/// A readable one-line reason for a failed request.
fn describe(error: ureq::Error) -> TransportError {
    let message = match &error {
        ureq::Error::Timeout(_) => "Request timed out".to_string(),
        ureq::Error::HostNotFound => "Could not resolve host name".to_string(),
        ureq::Error::Io(e) => e.to_string(),
        other => other.to_string(),
    };
    TransportError::new(message)
}

/// `Response: <status> <url> [headers: {...}]`, and the body of failures, as the
/// reference's wire log has them; signatures and tokens in query strings are masked.
fn log_wire(url: &str, response: &Response) {
    log_wire_head(url, response.status, &response.headers);
    if !response.is_success() {
        tracing::debug!(target: "cfn_wire", "Response error: {}", response.text());
    }
}

fn log_wire_head(url: &str, status: u16, headers: &[(String, String)]) {
    let headers = headers.iter().map(|(n, v)| format!("'{n}': '{v}'")).collect::<Vec<_>>().join(", ");
    tracing::debug!(target: "cfn_wire", "Response: {status} {} [headers: {{{headers}}}]", redact_url(url));
}

const SECRET_QUERY_KEYS: &[&str] =
    &["x-amz-signature", "x-amz-credential", "x-amz-security-token", "signature", "awsaccesskeyid"];

/// An error answer whose body says nothing a client can read (a proxy's HTML page, say):
/// `HTTP <status> <first line of the body>`, the first line cut at 200 characters.
pub fn unreadable_answer(status: u16, text: &str) -> String {
    let snippet: String = text.trim().lines().next().unwrap_or("").chars().take(200).collect();
    format!("HTTP {status} {snippet}").trim_end().into()
}

/// Masks presigned-URL signatures, credentials and tokens, and userinfo.
pub fn redact_url(url: &str) -> String {
    let url = redact_userinfo(url);
    let Some((base, query)) = url.split_once('?') else {
        return url;
    };
    let query = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if SECRET_QUERY_KEYS.contains(&k.to_ascii_lowercase().as_str()) => {
                format!("{k}=REDACTED")
            }
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&");
    format!("{base}?{query}")
}

fn redact_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://REDACTED@{host}{}", &rest[end..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls() {
        let p = split_url("http://127.0.0.1:5000").unwrap();
        assert_eq!(
            (p.scheme.as_str(), p.netloc.as_str(), p.host.as_str(), p.port, p.path_and_query.as_str()),
            ("http", "127.0.0.1:5000", "127.0.0.1", Some(5000), "/")
        );
        let p = split_url("HTTPS://user:pw@cloudformation.us-east-1.amazonaws.com/a/b?x=1").unwrap();
        assert_eq!(
            (p.scheme.as_str(), p.netloc.as_str(), p.port, p.path_and_query.as_str()),
            ("https", "cloudformation.us-east-1.amazonaws.com", None, "/a/b?x=1")
        );
        let p = split_url("http://[::1]:8080/x").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("[::1]", Some(8080)));
        assert!(split_url("not a url").is_err());
        assert!(split_url("http:///path").is_err());
    }

    #[test]
    fn redacts_presigned_queries_and_userinfo() {
        assert_eq!(
            redact_url("https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F1&X-Amz-Signature=abc&x=1"),
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x=1"
        );
        assert_eq!(redact_url("http://u:secret@proxy:3128/"), "http://REDACTED@proxy:3128/");
        assert_eq!(redact_url("http://h/?Action=DescribeStackResource"), "http://h/?Action=DescribeStackResource");
    }
}
