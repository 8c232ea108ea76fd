//! The steps of one network probe, each bounded by a deadline: name resolution, a TCP
//! connect (to the host, or to a proxy with a `CONNECT` tunnel for https), a TLS handshake
//! with the trust store the tools load, and one plain HTTP exchange of which at most
//! [`MAX_HEAD`] bytes of status line and headers and [`MAX_BODY`] bytes of body are read.
//!
//! The tools' own HTTP stack retries and waits up to a minute; doctor must say which step
//! fails and give up after a few seconds, so it takes the steps one by one here, with the
//! tools' proxy decision (`cfn_aws::proxy`) and TLS settings (`cfn_aws::tls`).

use base64::Engine;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most of an answer's status line and headers that is read.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most of an answer's body that is read (IMDS answers are a few hundred bytes).
pub const MAX_BODY: usize = 4 * 1024;

/// Why a step failed: its words, and whether it ran out of time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub timed_out: bool,
}

impl Failure {
    fn new(message: impl Into<String>) -> Failure {
        Failure { message: message.into(), timed_out: false }
    }

    fn timeout(what: &str, limit: Duration) -> Failure {
        Failure { message: format!("{what} timed out after {}", seconds(limit)), timed_out: true }
    }
}

/// `3 s`, `0.5 s`: how a duration is shown.
pub fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
}

/// A host and port to reach, from a URL (`http`/`https` only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// Without IPv6 brackets.
    pub host: String,
    pub port: u16,
}

impl Target {
    pub fn of_url(url: &str) -> Result<Target, String> {
        let parts = cfn_aws::http::split_url(url).map_err(|e| e.to_string())?;
        let https = match parts.scheme.as_str() {
            "https" => true,
            "http" => false,
            other => return Err(format!("unsupported URL scheme {other}")),
        };
        let host = parts.host.trim_start_matches('[').trim_end_matches(']').to_string();
        Ok(Target { https, port: parts.port.unwrap_or(if https { 443 } else { 80 }), host })
    }

    /// `host:port` as a request line or `Host` header names it (IPv6 in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Resolves `host` with the system resolver on a thread of its own, waiting at most
/// `limit`: `getaddrinfo` has no timeout of its own, so a resolver that hangs is left
/// behind on its thread (the process ends soon after).
pub fn resolve(host: &str, port: u16, limit: Duration) -> Result<Vec<SocketAddr>, Failure> {
    let (send, receive) = std::sync::mpsc::channel();
    let name = host.to_string();
    std::thread::spawn(move || {
        let _ = send.send((name.as_str(), port).to_socket_addrs().map(Iterator::collect::<Vec<_>>));
    });
    match receive.recv_timeout(limit) {
        Ok(Ok(addresses)) if !addresses.is_empty() => Ok(addresses),
        Ok(Ok(_)) => Err(Failure::new(format!("{host} has no address"))),
        Ok(Err(e)) => Err(Failure::new(format!("{host} does not resolve: {e}"))),
        Err(_) => Err(Failure::timeout(&format!("resolving {host}"), limit)),
    }
}

/// Connects to the first of `addresses` that accepts, within `deadline`.
pub fn connect(addresses: &[SocketAddr], deadline: Instant, limit: Duration) -> Result<TcpStream, Failure> {
    let mut last = Failure::new("no address to connect to");
    for address in addresses {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Failure::timeout(&format!("connecting to {address}"), limit));
        }
        match TcpStream::connect_timeout(address, left) {
            Ok(stream) => return Ok(stream),
            Err(e) if is_timeout(&e) => last = Failure::timeout(&format!("connecting to {address}"), limit),
            Err(e) => last = Failure::new(format!("connecting to {address}: {}", io_reason(&e))),
        }
    }
    Err(last)
}

/// A connection: a TCP stream, or TLS over one (over a tunnel, over TLS to a proxy…).
pub trait Conn: Read + Write + Send {}
impl<T: Read + Write + Send> Conn for T {}

/// An open connection and the socket under it, whose timeouts bound every read and write.
pub struct Link {
    pub conn: Box<dyn Conn>,
    socket: TcpStream,
}

impl Link {
    pub fn plain(socket: TcpStream) -> Result<Link, Failure> {
        let conn = socket.try_clone().map_err(|e| Failure::new(io_reason(&e)))?;
        Ok(Link { conn: Box::new(conn), socket })
    }

    fn bound(&self, deadline: Instant) -> bool {
        bound(&self.socket, deadline)
    }

    /// A TLS handshake with `host` over this connection, with the tools' trust store.
    pub fn tls(
        self,
        host: &str,
        config: Arc<rustls::ClientConfig>,
        deadline: Instant,
        limit: Duration,
    ) -> Result<Link, Failure> {
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| Failure::new(format!("{host} is not a valid TLS server name: {e}")))?;
        let session = rustls::ClientConnection::new(config, name).map_err(|e| Failure::new(format!("TLS: {e}")))?;
        let Link { conn, socket } = self;
        let mut stream = rustls::StreamOwned::new(session, conn);
        while stream.conn.is_handshaking() {
            if !bound(&socket, deadline) {
                return Err(Failure::timeout("the TLS handshake", limit));
            }
            match stream.conn.complete_io(&mut stream.sock) {
                Ok(_) => {}
                Err(e) if is_timeout(&e) => return Err(Failure::timeout("the TLS handshake", limit)),
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                    return Err(Failure::new("the TLS handshake: the server closed the connection"));
                }
                Err(e) => return Err(Failure::new(format!("the TLS handshake: {}", io_reason(&e)))),
            }
        }
        Ok(Link { conn: Box::new(stream), socket })
    }
}

/// Sets the socket's timeouts to what is left before `deadline`; false when nothing is.
fn bound(socket: &TcpStream, deadline: Instant) -> bool {
    let left = deadline.saturating_duration_since(Instant::now());
    !left.is_zero() && socket.set_read_timeout(Some(left)).is_ok() && socket.set_write_timeout(Some(left)).is_ok()
}

/// The start of an HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The first [`MAX_BODY`] bytes of the body (with `Connection: close`, up to its end).
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Sends `request` (a whole HTTP/1.1 request with `Connection: close`) and reads the
/// answer's head and the start of its body before `deadline`. `what` names the step in
/// the words of a timeout.
pub fn exchange(
    link: &mut Link,
    request: &[u8],
    deadline: Instant,
    limit: Duration,
    what: &str,
) -> Result<Answer, Failure> {
    let timed_out = || Failure::timeout(what, limit);
    if !link.bound(deadline) {
        return Err(timed_out());
    }
    link.conn.write_all(request).and_then(|_| link.conn.flush()).map_err(|e| match () {
        _ if is_timeout(&e) => timed_out(),
        _ if is_closed(&e) => Failure::new("the connection was closed without an answer"),
        _ => Failure::new(format!("sending the request: {}", io_reason(&e))),
    })?;
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    let (status, headers, head_len) = loop {
        let mut slots = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut slots);
        match parsed.parse(&received) {
            Ok(httparse::Status::Complete(len)) => {
                let headers = parsed
                    .headers
                    .iter()
                    .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
                    .collect::<Vec<_>>();
                break (parsed.code.unwrap_or(0), headers, len);
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(Failure::new(format!("the answer is not HTTP: {e}"))),
        }
        if received.len() > MAX_HEAD {
            return Err(Failure::new(format!("the answer's headers are longer than {MAX_HEAD} bytes")));
        }
        match read_some(link, &mut chunk, deadline) {
            Ok(0) if received.is_empty() => return Err(Failure::new("the connection was closed without an answer")),
            Ok(0) => return Err(Failure::new("the connection was closed in the middle of the answer")),
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(e) if is_timeout(&e) => return Err(timed_out()),
            Err(e) if is_closed(&e) && received.is_empty() => {
                return Err(Failure::new("the connection was closed without an answer"));
            }
            Err(e) => return Err(Failure::new(format!("reading the answer: {}", io_reason(&e)))),
        }
    };
    let mut body = received.split_off(head_len);
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    let wanted = length.unwrap_or(MAX_BODY).min(MAX_BODY);
    // The body matters only for short answers (IMDS); a slow one is cut at the deadline.
    while body.len() < wanted {
        match read_some(link, &mut chunk, deadline) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(wanted);
    Ok(Answer { status, headers, body })
}

fn read_some(link: &mut Link, buffer: &mut [u8], deadline: Instant) -> std::io::Result<usize> {
    if !link.bound(deadline) {
        return Err(ErrorKind::TimedOut.into());
    }
    link.conn.read(buffer)
}

/// A proxy as the tools take it, `[scheme://][user:password@]host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub target: Target,
    /// `Proxy-Authorization` for a proxy with a user.
    authorization: Option<String>,
    /// The proxy without user and password, as it may be shown.
    pub shown: String,
}

impl Proxy {
    pub fn parse(proxy: &str) -> Result<Proxy, String> {
        let with_scheme = if proxy.contains("://") { proxy.to_string() } else { format!("http://{proxy}") };
        // Shown as it was given, without user and password.
        let redacted = cfn_aws::http::redact_url(&with_scheme);
        let shown = if proxy.contains("://") { redacted } else { redacted.trim_start_matches("http://").to_string() };
        let url = cfn_aws::http::parse_url(&with_scheme).map_err(|e| e.to_string())?;
        let target = Target::of_url(&with_scheme).map_err(|e| format!("proxy {shown}: {e}"))?;
        let authorization = (!url.username().is_empty()).then(|| {
            let user = cfn_aws::s3url::percent_decode(url.username());
            let password = cfn_aws::s3url::percent_decode(url.password().unwrap_or_default());
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
        });
        Ok(Proxy { target, authorization, shown })
    }

    /// The header line the requests through it carry, if any.
    pub fn authorization_line(&self) -> String {
        self.authorization.as_ref().map(|a| format!("Proxy-Authorization: {a}\r\n")).unwrap_or_default()
    }

    /// Opens a `CONNECT` tunnel to `to` over `link` (a connection to this proxy).
    pub fn tunnel(&self, link: &mut Link, to: &Target, deadline: Instant, limit: Duration) -> Result<(), Failure> {
        let authority = to.authority();
        let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{}\r\n", self.authorization_line());
        // The tunnel's answer has no body: read the head only, byte-exact.
        let answer = exchange_head_only(link, request.as_bytes(), deadline, limit)?;
        match answer {
            200..=299 => Ok(()),
            407 => Err(Failure::new("the proxy wants a user and password (407 Proxy Authentication Required)")),
            code => Err(Failure::new(format!("the proxy refused to open a tunnel to {authority}: HTTP {code}"))),
        }
    }
}

/// Reads a `CONNECT` answer's head one byte at a time, so that nothing of the tunnelled
/// stream that follows is consumed.
fn exchange_head_only(link: &mut Link, request: &[u8], deadline: Instant, limit: Duration) -> Result<u16, Failure> {
    let what = "the proxy's answer to CONNECT";
    if !link.bound(deadline) {
        return Err(Failure::timeout(what, limit));
    }
    link.conn.write_all(request).map_err(|e| match is_closed(&e) {
        true => Failure::new("the proxy closed the connection without an answer"),
        false => Failure::new(format!("sending CONNECT: {}", io_reason(&e))),
    })?;
    let mut received = Vec::new();
    let mut byte = [0u8; 1];
    while !received.ends_with(b"\r\n\r\n") {
        if received.len() > MAX_HEAD {
            return Err(Failure::new(format!("the proxy's answer is longer than {MAX_HEAD} bytes")));
        }
        match read_some(link, &mut byte, deadline) {
            Ok(0) => return Err(Failure::new("the proxy closed the connection without an answer")),
            Ok(_) => received.push(byte[0]),
            Err(e) if is_timeout(&e) => return Err(Failure::timeout(what, limit)),
            Err(e) if is_closed(&e) => return Err(Failure::new("the proxy closed the connection without an answer")),
            Err(e) => return Err(Failure::new(format!("reading the proxy's answer: {}", io_reason(&e)))),
        }
    }
    let mut slots = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut slots);
    match parsed.parse(&received) {
        Ok(httparse::Status::Complete(_)) => Ok(parsed.code.unwrap_or(0)),
        _ => Err(Failure::new("the proxy's answer to CONNECT is not HTTP")),
    }
}

/// The peer closed or reset the connection (which of the two depends on timing).
fn is_closed(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof
    )
}

pub fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
}

/// An I/O error in the system's words, without Rust's `(os error N)` suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(_) => cfn_python::strerror(e),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_proxies_parse_as_the_tools_take_them() {
        assert_eq!(
            Target::of_url("https://cloudformation.us-east-1.amazonaws.com/").unwrap(),
            Target { https: true, host: "cloudformation.us-east-1.amazonaws.com".into(), port: 443 }
        );
        assert_eq!(Target::of_url("http://[::1]:5000").unwrap().authority(), "[::1]:5000");
        assert!(Target::of_url("ftp://x/").is_err());
        let proxy = Proxy::parse("user:p%40ss@proxy.internal:3128").unwrap();
        assert_eq!(proxy.target, Target { https: false, host: "proxy.internal".into(), port: 3128 });
        assert_eq!(proxy.shown, "REDACTED@proxy.internal:3128");
        assert_eq!(Proxy::parse("http://u:p@proxy:8080").unwrap().shown, "http://REDACTED@proxy:8080");
        assert_eq!(proxy.authorization_line(), "Proxy-Authorization: Basic dXNlcjpwQHNz\r\n");
        assert_eq!(Proxy::parse("http://proxy:8080").unwrap().authorization_line(), "");
    }

    #[test]
    fn durations_are_shown_in_seconds() {
        assert_eq!(seconds(Duration::from_secs(3)), "3 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }
}
