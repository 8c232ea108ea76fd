//! One HTTP client for everything but IMDS: proxies chosen per request (NET-02), the
//! trust store of `tls` (NET-01), a connect timeout and a 60 s bound on each attempt
//! (NET-04), and the reference's wire log (`cfn-wire.log`, LOG-06) without secrets.

use crate::proxy::{self, ProxyOptions};
use crate::runtime::block_on_within;
use crate::tls;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

    /// A refused, reset or unresolvable connection: what Python's requests raises as
    /// `ConnectionError`; not a timeout (its `Timeout`s), a configuration mistake or an
    /// answer too large.
    pub fn is_connection_failure(&self) -> bool {
        !self.permanent && !self.message.ends_with("timed out") && !self.message.starts_with("The answer is larger")
    }
}

/// The parts of a URL the client needs, from the one URL parser (`url::Url`) that also
/// decides where a request is sent: credentials are chosen for the host a request
/// really goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    pub scheme: String,
    /// `host[:port]` (userinfo removed; the port only when it is not the scheme's default).
    pub netloc: String,
    pub host: String,
    pub port: Option<u16>,
    /// Path and query, `/` when empty.
    pub path_and_query: String,
}

/// Parses `url` as the HTTP client will send it (WHATWG rules: `#` ends the authority,
/// so `http://a#@b/` goes to `a`).
pub fn parse_url(url: &str) -> Result<url::Url, TransportError> {
    // WHATWG parsing would read `http:///path` as the host `path`: refuse the typo.
    let no_host = || TransportError::config(format!("Invalid URL (no host): {}", redact_url(url)));
    if url.trim().split_once("://").is_some_and(|(_, rest)| rest.starts_with('/')) {
        return Err(no_host());
    }
    let parsed = url::Url::parse(url.trim()).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => TransportError::config(format!("Invalid URL: {}", redact_url(url))),
        url::ParseError::EmptyHost => no_host(),
        other => TransportError::config(format!("Invalid URL {}: {other}", redact_url(url))),
    })?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(no_host());
    }
    Ok(parsed)
}

pub fn split_url(url: &str) -> Result<UrlParts, TransportError> {
    Ok(parts_of(&parse_url(url)?))
}

/// The scheme of `url` (`http`, `https`, …), when it parses.
pub fn scheme_of(url: &str) -> Option<String> {
    split_url(url).ok().map(|p| p.scheme)
}

pub fn parts_of(url: &url::Url) -> UrlParts {
    let host = url.host_str().unwrap_or_default().to_string();
    let port = url.port();
    let netloc = match port {
        Some(p) => format!("{host}:{p}"),
        None => host.clone(),
    };
    let path_and_query = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    UrlParts { scheme: url.scheme().to_string(), netloc, host, port, path_and_query }
}

pub struct HttpClient {
    proxies: ProxyOptions,
    /// Never proxied, whatever the options and the environment say: a host-local
    /// service (the container credential endpoint), like IMDS.
    host_local: bool,
    user_agent: String,
    clients: Mutex<HashMap<ClientKey, reqwest::Client>>,
    /// The bound on each API attempt: `ATTEMPT_TIMEOUT`, shorter only as a test aid.
    attempt_timeout: Duration,
}

/// Clients differ by proxy, by whether they need the trust store, and by whether they
/// refuse link-local addresses (redirect hops). None follows redirects: API calls must
/// not (a redirect would carry a signed request elsewhere), and downloads follow them
/// hop by hop, choosing each hop's credentials themselves.
type ClientKey = (Option<String>, bool, bool);

/// Whether a request is the one asked for or one a redirect led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    First,
    Redirected,
}

/// Link-local addresses (169.254.0.0/16, fe80::/10) hold the instance metadata service
/// (169.254.169.254, and fd00:ec2::254 on IPv6-only instances): a server must not be
/// able to send our request there by a redirect (SEC-04).
pub fn is_link_local(ip: IpAddr) -> bool {
    const IMDS_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            v6 == IMDS_V6
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_link_local())
        }
    }
}

fn is_link_local_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(v4)) => is_link_local(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => is_link_local(IpAddr::V6(v6)),
        _ => false,
    }
}

/// The addresses a name resolved to, less the link-local ones; an error when none is left.
fn without_link_local(host: &str, found: impl IntoIterator<Item = SocketAddr>) -> Result<Vec<SocketAddr>, String> {
    let allowed: Vec<SocketAddr> = found.into_iter().filter(|a| !is_link_local(a.ip())).collect();
    if allowed.is_empty() {
        return Err(format!("{host} resolves to a link-local address; a redirect may not lead there"));
    }
    Ok(allowed)
}

/// Name resolution for redirect hops: a name that resolves to link-local addresses
/// only is refused, and link-local answers are never connected to.
struct NoLinkLocal;

impl reqwest::dns::Resolve for NoLinkLocal {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed = without_link_local(&host, found)?;
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A response whose body is still to be read, from `HttpClient::stream`.
pub struct StreamingResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    url: String,
    body: reqwest::Response,
    body_deadline: Instant,
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

    /// Copies the body into `writer` piece by piece as it arrives, never holding it
    /// whole; returns the number of bytes copied. A connection closed before
    /// `Content-Length` bytes (or before the last chunk) is a read error.
    pub fn copy_to(&mut self, writer: &mut dyn std::io::Write) -> Result<u64, BodyError> {
        let mut total = 0u64;
        while let Some(chunk) = self.next_chunk().map_err(BodyError::Read)? {
            writer.write_all(&chunk).map_err(BodyError::Write)?;
            total += chunk.len() as u64;
        }
        Ok(total)
    }

    fn next_chunk(&mut self) -> Result<Option<bytes::Bytes>, TransportError> {
        let left = self.body_deadline.saturating_duration_since(Instant::now());
        block_on_within(left, self.body.chunk())
            .ok_or_else(|| TransportError::new("Read timed out"))?
            .map_err(|e| TransportError::new(read_reason(e)))
    }

    /// The first `limit` bytes of the body as text (for error answers), also written to
    /// the wire log as the reference logs failed responses.
    pub fn text(&mut self, limit: u64) -> String {
        let mut bytes = Vec::new();
        // A broken error body still leaves the status to report: keep what arrived.
        while (bytes.len() as u64) < limit {
            match self.next_chunk() {
                Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        bytes.truncate(limit as usize);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        tracing::debug!(target: "cfn_wire", "Response error: {text}");
        text
    }

    /// The URL this response answers (as requested; redirects are not followed).
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Why reading a body failed, in the words of the innermost error.
fn read_reason(e: reqwest::Error) -> String {
    if e.is_timeout() {
        return "Read timed out".to_string();
    }
    // The caller names the URL (redacted); reqwest's own copy is the full one.
    format!("Connection broken: {}", innermost(&e.without_url()))
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("proxies", &self.proxies)
            .field("host_local", &self.host_local)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    pub fn new(proxies: ProxyOptions, user_agent: impl Into<String>) -> Self {
        HttpClient {
            proxies,
            host_local: false,
            user_agent: user_agent.into(),
            clients: Mutex::new(HashMap::new()),
            attempt_timeout: ATTEMPT_TIMEOUT,
        }
    }

    /// A client for a service on the host itself (the container credential endpoint of
    /// ECS and EKS Pod Identity): never proxied, neither by `--http-proxy` nor by
    /// `HTTP_PROXY`. A proxy would see the authorization token and the keys, and could
    /// answer with keys of its own choosing.
    pub fn host_local(user_agent: impl Into<String>) -> Self {
        HttpClient { host_local: true, ..HttpClient::new(ProxyOptions::default(), user_agent) }
    }

    /// Bounds each attempt by `limit` instead of `ATTEMPT_TIMEOUT` (a test aid: a soak
    /// whose interval is compressed to seconds needs its timeouts compressed too).
    pub fn with_attempt_timeout(mut self, limit: Duration) -> Self {
        self.attempt_timeout = limit;
        self
    }

    /// How long one attempt of an API call may take.
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }

    /// Sends one request (no retries here, no redirects followed) and reads the whole
    /// response within the attempt timeout.
    pub fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        body: Option<&[u8]>,
    ) -> Result<Response, TransportError> {
        let request = self.prepare(method, url, headers, Hop::First)?;
        let request = match body {
            Some(bytes) => request.body(bytes.to_vec()),
            None => request,
        };
        block_on_within(self.attempt_timeout, exchange(url, request))
            .unwrap_or_else(|| Err(TransportError::new("Request timed out")))
    }

    /// [`HttpClient::send`] for async callers (the AWS SDK's clients): the same proxies,
    /// trust store and wire log; the caller bounds the time.
    pub async fn send_async(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<Response, TransportError> {
        let request = self.prepare(method, url, headers, Hop::First)?.body(body);
        exchange(url, request).await
    }

    /// Sends one request without a body and returns as soon as the status and headers
    /// have arrived; the body is read by the caller (downloads, NET-07: the same proxies
    /// as every other request). Redirects are returned, not followed, so that the caller
    /// decides which credentials the next hop gets. The wire log gets the response line.
    ///
    /// A request that follows a redirect (`hop` is `Hop::Redirected`) may not go to a
    /// link-local address, where the instance metadata service answers: not by an
    /// address in the URL, not by a name that resolves there.
    pub fn stream(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        hop: Hop,
    ) -> Result<StreamingResponse, TransportError> {
        let request = self.prepare(method, url, headers, hop)?;
        let response = block_on_within(RESPONSE_TIMEOUT, request.send())
            .ok_or_else(|| TransportError::new("Request timed out"))?
            .map_err(describe)?;
        let status = response.status().as_u16();
        let headers = header_list(response.headers());
        log_wire_head(url, status, &headers);
        let body_deadline = Instant::now() + BODY_TIMEOUT;
        Ok(StreamingResponse { status, headers, url: url.to_string(), body: response, body_deadline })
    }

    /// A request to `url` on the client for its proxy and trust store, with `headers`.
    fn prepare(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        hop: Hop,
    ) -> Result<reqwest::RequestBuilder, TransportError> {
        let parsed = parse_url(url)?;
        let scheme = parsed.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(TransportError::config(format!("Unsupported URL scheme {scheme}")));
        }
        let guarded = hop == Hop::Redirected;
        if guarded && is_link_local_host(&parsed) {
            return Err(TransportError::config(format!(
                "Refusing to follow a redirect to a link-local address: {}",
                redact_url(url)
            )));
        }
        let host = parsed.host_str().unwrap_or_default();
        // Link-local services (the ECS and EKS Pod Identity credential endpoints,
        // 169.254.170.2 and 169.254.170.23) live on the host itself, like IMDS: never proxied.
        let proxy = if self.host_local || is_link_local_host(&parsed) {
            None
        } else {
            proxy::choose(scheme, host, parsed.port(), &self.proxies, &|n| std::env::var(n).ok())
        };
        let client = self.client_of_kind((proxy, scheme == "https", guarded))?;
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| TransportError::config(format!("Invalid HTTP method {method}")))?;
        let mut request = client.request(method, parsed);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        Ok(request)
    }

    fn client_of_kind(&self, key: ClientKey) -> Result<reqwest::Client, TransportError> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let (_, https, guarded) = key;
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        // Only HTTPS needs the trust store, so plain-HTTP calls never read it.
        let tls =
            if https { (*tls::https_config().map_err(TransportError::config)?).clone() } else { tls::plain_config() };
        let mut builder = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .user_agent(self.user_agent.as_str())
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            // Proxies are chosen per request by `proxy::choose`, never by reqwest itself.
            .no_proxy();
        if let Some(url) = &key.0 {
            builder = builder.proxy(reqwest_proxy(url)?);
        }
        if guarded {
            builder = builder.dns_resolver(Arc::new(NoLinkLocal));
        }
        let client = builder.build().map_err(|e| TransportError::config(format!("HTTP client: {}", innermost(&e))))?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// Sends `request` and reads its whole answer, logged to the wire log as `url`'s.
async fn exchange(url: &str, request: reqwest::RequestBuilder) -> Result<Response, TransportError> {
    let mut response = request.send().await.map_err(describe)?;
    let status = response.status().as_u16();
    let headers = header_list(response.headers());
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| TransportError::new(read_reason(e)))? {
        if body.len() + chunk.len() > MAX_WHOLE_BODY {
            return Err(TransportError::new(format!("The answer is larger than {MAX_WHOLE_BODY} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    let response = Response { status, headers, body };
    log_wire(url, &response);
    Ok(response)
}

/// A proxy given as `[scheme://][user:password@]host:port` (the scheme defaults to
/// `http`), for reqwest: requests to `http://` URLs go to it in absolute form, requests
/// to `https://` URLs through a CONNECT tunnel, with basic `Proxy-Authorization` when
/// it has a user (NET-02).
fn reqwest_proxy(proxy: &str) -> Result<reqwest::Proxy, TransportError> {
    let with_scheme = if proxy.contains("://") { proxy.to_string() } else { format!("http://{proxy}") };
    // Redacted with its scheme, so that `user:password@host:port` is recognised too;
    // shown as it was given.
    let shown = redact_url(&with_scheme);
    let shown = if proxy.contains("://") { shown.as_str() } else { shown.trim_start_matches("http://") }.to_string();
    let invalid = |reason: String| TransportError::config(format!("Invalid proxy {shown}: {reason}"));
    let url = url::Url::parse(&with_scheme).map_err(|e| invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("expected [http://][user:password@]host:port".into()));
    }
    reqwest::Proxy::all(url).map_err(|e| invalid(e.to_string()))
}

/// A whole response body (API answers, error pages) is never kept beyond this.
const MAX_WHOLE_BODY: usize = 256 * 1024 * 1024;

/// A response's headers as (name, value) text pairs.
fn header_list(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers.iter().map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}

/// The message of the innermost cause: `Connection refused (os error 111)` rather
/// than reqwest's `error sending request for url (…)`.
pub(crate) fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// A readable one-line reason for a failed request.
fn describe(error: reqwest::Error) -> TransportError {
    if error.is_timeout() {
        return TransportError::new("Request timed out");
    }
    // An error without a cause shows reqwest's own copy of the URL, unredacted; the
    // caller names the URL itself.
    let error = error.without_url();
    let reason = innermost(&error);
    if reason.contains("failed to lookup address") || reason.contains("Name or service not known") {
        return TransportError::new("Could not resolve host name");
    }
    if error.is_builder() {
        return TransportError::config(reason);
    }
    TransportError::new(reason)
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

/// An error answer whose body says nothing a client can read (a proxy's HTML page, say):
/// `HTTP <status> <first line of the body>`, the first line cut at 200 characters.
pub fn unreadable_answer(status: u16, text: &str) -> String {
    let snippet: String = text.trim().lines().next().unwrap_or("").chars().take(200).collect();
    format!("HTTP {status} {snippet}").trim_end().into()
}

/// Query parameters whose values are credentials: S3's presigned URLs (SigV4 and
/// SigV2), and the same idea elsewhere (Google Cloud Storage signed URLs, Azure SAS
/// `sig`, GitHub's `token` for private raw files, OAuth's `access_token`).
const SECRET_QUERY_KEYS: &[&str] = &[
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "signature",
    "awsaccesskeyid",
    "x-goog-signature",
    "x-goog-credential",
    "sig",
    "token",
    "access_token",
];

/// A URL as it may be shown in a log line, an error or on stderr (SEC-02, LOG-08): the
/// userinfo (`user:password@`) becomes `REDACTED@` and the values of credential query
/// parameters (see `SECRET_QUERY_KEYS`) become `REDACTED`; the rest is kept as written,
/// so the message still says which URL failed. Text that is not a URL comes back
/// unchanged (unless it has a `?` query with such a parameter).
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
    // Where the HTTP client (WHATWG rules) ends the authority, so that what is masked is
    // exactly what would have been sent as credentials.
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://REDACTED@{host}{}", &rest[end..]),
        None => url.to_string(),
    }
}

/// Free text (a tool's command line or output) with every URL in it passed through
/// [`redact_url`]. A URL starts at its scheme (`name://`) and ends at white space, a
/// quote or `<`/`>`, as URLs appear in command lines, Python list reprs and messages;
/// punctuation that ends a sentence or a clause (`url: reason`, `(url)`) is not part of
/// it. Text already redacted comes back unchanged.
pub fn redact_urls_in(text: &str) -> String {
    let bytes = text.as_bytes();
    let is_scheme_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.');
    let is_end = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>');
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut search) = (0, 0);
    while let Some(found) = text[search..].find("://") {
        let separator = search + found;
        let mut start = separator;
        while start > copied && is_scheme_byte(bytes[start - 1]) {
            start -= 1;
        }
        // A scheme starts with a letter.
        while start < separator && !bytes[start].is_ascii_alphabetic() {
            start += 1;
        }
        if start == separator {
            search = separator + 3;
            continue;
        }
        let mut end = text[separator..].find(is_end).map_or(text.len(), |i| separator + i);
        // A password may hold a quote or `<`/`>` (the URL parser takes them): when an `@`
        // further on still lies in the authority, the URL runs past the quote to it.
        let authority = &text[separator + 3..];
        let authority =
            &authority[..authority.find(|c: char| c.is_whitespace() || "/?#\\".contains(c)).unwrap_or(authority.len())];
        if let Some(at) = authority.rfind('@').map(|i| separator + 3 + i)
            && at > end
        {
            end = text[at..].find(is_end).map_or(text.len(), |i| at + i);
        }
        while end > separator + 3 && matches!(bytes[end - 1], b'.' | b',' | b':' | b';' | b'!' | b'?' | b')') {
            end -= 1;
        }
        out.push_str(&text[copied..start]);
        out.push_str(&redact_url(&text[start..end]));
        (copied, search) = (end, end);
    }
    out.push_str(&text[copied..]);
    out
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
    fn the_authority_ends_where_the_http_client_ends_it() {
        // `#` ends the authority: this request goes to other-host, not good-host.
        let p = split_url("http://other-host:8080#@good-host/x").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("other-host", Some(8080)));
        let p = split_url("http://good-host\\@other-host/x").unwrap();
        assert_eq!(p.host, "good-host");
        let p = split_url("http://u:p@GOOD-host:80/a?b").unwrap();
        assert_eq!((p.netloc.as_str(), p.path_and_query.as_str()), ("good-host", "/a?b"));
    }

    #[test]
    fn link_local_addresses_are_recognised() {
        for ip in ["169.254.169.254", "169.254.0.1", "fe80::1", "fd00:ec2::254", "::ffff:169.254.169.254"] {
            assert!(is_link_local(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["127.0.0.1", "10.0.0.1", "fd00:ec2::253", "::1", "170.254.169.254"] {
            assert!(!is_link_local(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn names_that_resolve_to_link_local_addresses_are_refused() {
        let addr = |s: &str| -> SocketAddr { s.parse().unwrap() };
        let err = without_link_local("evil.example", [addr("169.254.169.254:0"), addr("[fd00:ec2::254]:0")]);
        assert_eq!(err.unwrap_err(), "evil.example resolves to a link-local address; a redirect may not lead there");
        let mixed = without_link_local("mixed.example", [addr("169.254.169.254:0"), addr("192.0.2.7:0")]);
        assert_eq!(mixed.unwrap(), [addr("192.0.2.7:0")]);
    }

    #[test]
    fn redacts_presigned_queries_and_userinfo() {
        assert_eq!(
            redact_url("https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F1&X-Amz-Signature=abc&x=1"),
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x=1"
        );
        assert_eq!(redact_url("http://u:secret@proxy:3128/"), "http://REDACTED@proxy:3128/");
        assert_eq!(redact_url("http://h/?Action=DescribeStackResource"), "http://h/?Action=DescribeStackResource");
        assert_eq!(
            redact_url(
                "https://u:p@b.s3.amazonaws.com/k?AWSAccessKeyId=AK&Expires=1&Signature=s%2B&x-amz-security-token=t"
            ),
            "https://REDACTED@b.s3.amazonaws.com/k?AWSAccessKeyId=REDACTED&Expires=1&Signature=REDACTED&x-amz-security-token=REDACTED"
        );
        assert_eq!(redact_url("https://ghp_token@github.com/o/r"), "https://REDACTED@github.com/o/r");
        // The authority ends where the HTTP client ends it: an `@` after `#`, `\\` or `/`
        // is not userinfo, and the host shown is the one the request goes to.
        assert_eq!(redact_url("http://other-host#@good-host/x"), "http://other-host#@good-host/x");
        assert_eq!(redact_url("https://registry.example/@scope/pkg"), "https://registry.example/@scope/pkg");
        // Paths and plain words pass unchanged.
        for text in ["/srv/app.tgz", "notaurl", "", "http:///path", "rpm -U /a.rpm"] {
            assert_eq!(redact_url(text), text);
        }
    }

    #[test]
    fn redacts_every_url_in_free_text() {
        assert_eq!(
            redact_urls_in("rpm -U --quiet /a.rpm http://u:pw@h/b.rpm?X-Amz-Signature=sig1 https://h/c.rpm"),
            "rpm -U --quiet /a.rpm http://REDACTED@h/b.rpm?X-Amz-Signature=REDACTED https://h/c.rpm"
        );
        assert_eq!(
            redact_urls_in("['http://u:pw@h/a.rpm', \"https://h/b?Signature=s\"]"),
            "['http://REDACTED@h/a.rpm', \"https://h/b?Signature=REDACTED\"]"
        );
        assert_eq!(
            redact_urls_in("error: skipping https://u:pw@h/x.rpm?sig=abc - transfer failed"),
            "error: skipping https://REDACTED@h/x.rpm?sig=REDACTED - transfer failed"
        );
        assert_eq!(redact_urls_in("(x+https://u:p@h/)"), "(x+https://REDACTED@h/)");
        // A quote in the password does not end the URL early (found by fuzzing).
        assert_eq!(redact_urls_in("https://a:'pw@h/x"), "https://REDACTED@h/x");
        assert_eq!(redact_urls_in("[\"https://a:p'w@h/x.rpm\", '/b.rpm']"), "[\"https://REDACTED@h/x.rpm\", '/b.rpm']");
        assert_eq!(redact_urls_in("<http://u:p>w@h> <http://h/>"), "<http://REDACTED@h> <http://h/>");
        let message = "Failed to retrieve http://u:p@h/x?a=1&Signature=s: HTTP Error 403. See http://h/?token=t.";
        let redacted = "Failed to retrieve http://REDACTED@h/x?a=1&Signature=REDACTED: HTTP Error 403. \
                        See http://h/?token=REDACTED.";
        assert_eq!(redact_urls_in(message), redacted);
        assert_eq!(redact_urls_in(redacted), redacted);
        for text in ["no urls here", "a ://b c", "12://x", "", "é://ü", "Ünïcödé https://h/ok?a=b ✓"] {
            assert_eq!(redact_urls_in(text), text);
        }
    }

    #[test]
    fn invalid_urls_and_proxies_are_shown_redacted() {
        let message = |url: &str| parse_url(url).unwrap_err().message;
        assert_eq!(message("http:///p?Signature=s"), "Invalid URL (no host): http:///p?Signature=REDACTED");
        assert_eq!(message("nohost?token=t"), "Invalid URL: nohost?token=REDACTED");
        assert_eq!(message("http://u:pw@h:99999/"), "Invalid URL http://REDACTED@h:99999/: invalid port number");
        let proxy = |p: &str| reqwest_proxy(p).unwrap_err().message;
        assert_eq!(proxy("u:pw@h:99999"), "Invalid proxy REDACTED@h:99999: invalid port number");
        assert_eq!(proxy("http://u:pw@h:99999"), "Invalid proxy http://REDACTED@h:99999: invalid port number");
    }
}
