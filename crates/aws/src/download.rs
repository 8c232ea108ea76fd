//! Downloads for cfn-init's `files` `source` and `sources` archives (INIT-FILES-05,
//! INIT-AUTH-01..07, NET-07).
//!
//! One `Downloader` per run: the shared `HttpClient` (so `--http-proxy`/`--https-proxy`
//! apply, unlike the reference), IMDS for `roleName` blocks, the parsed
//! `AWS::CloudFormation::Authentication` and the endpoints document. Each download:
//! * streams the body into the destination file (truncated and rewound before every
//!   attempt, so a retried download never leaves a mix of two attempts);
//! * is retried with the reference's generic rules (SPEC §5.4): 503 throttled, 404, 408,
//!   other 5xx, connection failures and checksum mismatches retriable, any other status
//!   terminal; 5 tries;
//! * signs S3 requests with SigV4 only (service `s3`, region from the URL, session
//!   token header) — never SigV2 (SEC-SIGV2). When S3 says the bucket is in another
//!   region (a URL without one, Transfer Acceleration), the request is signed again for
//!   that region;
//! * follows redirects itself: a hop may carry credentials only from the block that
//!   authenticated the first request, where `Authentication::select` still gives that
//!   block for it (SEC-04) — so a redirect from one S3 URL to another is signed again
//!   (INIT-AUTH-07), and a request that started without credentials never gains them;
//! * checks the MD5 of the body against the ETag when the final URL is S3, the ETag is
//!   a plain MD5 (no `-`, i.e. not multipart) and the object is not SSE-KMS/SSE-C.

use crate::auth::{Authentication, S3Keys, Selected};
use crate::credentials::Credentials;
use crate::endpoint::Endpoints;
use crate::http::{self, BodyError, Hop, HttpClient, TransportError};
use crate::imds::Imds;
use crate::retry::{self, Policy, Verdict};
use crate::s3url::{self, S3Location};
use crate::sigv4;
use crate::xml;
use base64::Engine;
use chrono::{DateTime, Utc};
use md5::{Digest, Md5};
use std::collections::HashMap;
use std::io::{Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

/// Redirect hops followed within one attempt.
const MAX_REDIRECTS: usize = 10;
/// How much of an error answer is read for the message.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;
/// Role credentials are fetched again this long before they expire.
const ROLE_REFRESH_MARGIN: chrono::Duration = chrono::Duration::minutes(5);

/// What a finished download was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadInfo {
    /// The URL the body came from, after redirects.
    pub final_url: String,
    pub bytes: u64,
    /// Hex MD5 of the body.
    pub md5: String,
    pub etag: Option<String>,
    /// The S3 object, when the final URL is one.
    pub s3: Option<S3Location>,
    /// The authentication block used for the final request.
    pub auth: Option<String>,
    /// Whether an authentication block went with any request of it, the final one or
    /// one that was redirected (content got with credentials is not shown by `plan`).
    pub authenticated: bool,
}

/// Why a download failed. `Display` is the reason only; cfn-init prints
/// `Failed to retrieve <url>: <reason>`.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// An HTTP error answer; `body` is its text on one line.
    #[error("HTTP Error {status} : {body}")]
    Http { status: u16, body: String },
    #[error("{0}")]
    Transport(TransportError),
    #[error("Checksum mismatch: the ETag is {etag} but the MD5 of the body is {md5}")]
    Checksum { etag: String, md5: String },
    #[error("Could not get credentials of authentication {name}: {reason}")]
    Credentials { name: String, reason: String },
    #[error("Exceeded {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    #[error("Could not write the downloaded data: {0}")]
    Write(std::io::Error),
}

impl DownloadError {
    /// The reference's generic extractor (SPEC §5.4), plus: configuration mistakes,
    /// credential failures (IMDS retried already) and local write errors are terminal.
    pub fn verdict(&self) -> Verdict {
        match self {
            DownloadError::Http { status: 503, .. } => Verdict::Throttled,
            DownloadError::Http { status, .. } if *status >= 500 || *status == 404 || *status == 408 => {
                Verdict::Retriable
            }
            DownloadError::Http { .. } => Verdict::Terminal,
            DownloadError::Transport(e) if e.permanent => Verdict::Terminal,
            DownloadError::Transport(_) | DownloadError::Checksum { .. } => Verdict::Retriable,
            DownloadError::Credentials { .. } | DownloadError::TooManyRedirects | DownloadError::Write(_) => {
                Verdict::Terminal
            }
        }
    }
}

impl crate::retry::AttemptError for DownloadError {
    fn is_connection_failure(&self) -> bool {
        matches!(self, DownloadError::Transport(e) if e.is_connection_failure())
    }
}

struct CachedRole {
    credentials: Credentials,
    refresh_at: DateTime<Utc>,
}

pub struct Downloader {
    http: Arc<HttpClient>,
    imds: Arc<Imds>,
    auth: Authentication,
    endpoints: Endpoints,
    retry: Policy,
    roles: Mutex<HashMap<String, CachedRole>>,
}

/// One request, ready to send.
struct Prepared {
    url: String,
    headers: Vec<(&'static str, String)>,
    /// The region the request was signed for, when it was signed for S3.
    signed_region: Option<String>,
    auth: Option<String>,
}

impl Downloader {
    /// `endpoints` is normally `Endpoints::load()`; its S3 hostnames are S3 URLs too.
    pub fn new(http: Arc<HttpClient>, imds: Arc<Imds>, auth: Authentication, endpoints: Endpoints) -> Self {
        Downloader { http, imds, auth, endpoints, retry: Policy::API, roles: Mutex::new(HashMap::new()) }
    }

    pub fn with_retry(mut self, retry: Policy) -> Self {
        self.retry = retry;
        self
    }

    pub fn authentication(&self) -> &Authentication {
        &self.auth
    }

    /// Downloads `url` into `dest` (truncated first), with the named authentication
    /// block if it applies (`files`), else default authentication (`sources` pass `None`).
    pub fn download_to(
        &self,
        url: &str,
        auth_name: Option<&str>,
        dest: &mut std::fs::File,
    ) -> Result<DownloadInfo, DownloadError> {
        retry::run(
            &self.retry,
            &format!("Retrieving {}", http::redact_url(url)),
            || self.attempt(url, auth_name, dest),
            DownloadError::verdict,
        )
    }

    fn attempt(&self, url: &str, named: Option<&str>, dest: &mut std::fs::File) -> Result<DownloadInfo, DownloadError> {
        dest.set_len(0).map_err(DownloadError::Write)?;
        dest.seek(SeekFrom::Start(0)).map_err(DownloadError::Write)?;
        let source = http::split_url(url).map_err(DownloadError::Transport)?;
        if source.scheme != "http" && source.scheme != "https" {
            // No retry can fix this (an `ftp://` source, a typo).
            return Err(DownloadError::Transport(TransportError::config(format!(
                "Unsupported URL scheme {}",
                source.scheme
            ))));
        }
        let source_host = source.host;
        let mut current = strip_fragment(url).to_string();
        let mut region_fix: Option<String> = None;
        let mut hop = Hop::First;
        // Once a redirect has left HTTPS for plain HTTP, no later hop gets credentials.
        let mut downgraded = false;
        // The block that authenticated the first request: the only one a redirect hop may
        // use, and only where it still applies (an S3 → S3 redirect is signed again). A
        // request that started without credentials never gains them: a server without
        // authentication must not get a private object fetched with our keys by
        // redirecting to it.
        let mut first_block: Option<String> = None;
        let mut authenticated = false;
        for _ in 0..=MAX_REDIRECTS {
            let s3 = s3url::parse(&current, &self.endpoints);
            let selected = self
                .auth
                .select(&current, s3.as_ref(), named, &source_host)
                .filter(|s| !downgraded && (hop == Hop::First || first_block.as_deref() == Some(s.name())));
            let prepared = self.prepare(&current, s3.as_ref(), selected, region_fix.as_deref())?;
            if hop == Hop::First {
                first_block = prepared.auth.clone();
            }
            authenticated |= prepared.auth.is_some();
            let mut response =
                self.http.stream("GET", &prepared.url, &prepared.headers, hop).map_err(DownloadError::Transport)?;

            if (300..400).contains(&response.status)
                && let Some(location) = response.header("Location").map(str::to_string)
            {
                let next = resolve(&current, &location);
                if http::scheme_of(&current).as_deref() == Some("https")
                    && http::scheme_of(&next).as_deref() == Some("http")
                {
                    tracing::info!(
                        "Redirect from HTTPS to plain HTTP ({}); no credentials are sent from here on",
                        http::redact_url(&next)
                    );
                    downgraded = true;
                }
                hop = Hop::Redirected;
                if s3url::parse(&next, &self.endpoints).is_some() {
                    tracing::info!("Handling redirect to S3 location: {}", http::redact_url(&next));
                } else {
                    tracing::debug!("Following redirect to {}", http::redact_url(&next));
                }
                current = next;
                region_fix = None;
                continue;
            }
            if !response.is_success() {
                let status = response.status;
                let bucket_region = response.header("x-amz-bucket-region").map(str::to_string);
                let text = response.text(ERROR_BODY_LIMIT);
                // S3 names the bucket's region when a signature is for the wrong one
                // (a URL without a region, Transfer Acceleration): sign again, once.
                if let (Some(signed), Some(location)) = (&prepared.signed_region, &s3) {
                    let right = bucket_region.or_else(|| xml::element(&text, "Region"));
                    if status == 400
                        && region_fix.is_none()
                        && let Some(right) = right.filter(|r| r != signed && !r.is_empty())
                    {
                        tracing::info!(
                            "S3 bucket {} is in {right}; signing the request for that region",
                            location.bucket
                        );
                        region_fix = Some(right);
                        continue;
                    }
                }
                return Err(DownloadError::Http { status, body: one_line(&text) });
            }

            let mut writer = Md5Writer { inner: &mut *dest, md5: Md5::new() };
            let bytes = response.copy_to(&mut writer).map_err(|e| match e {
                BodyError::Read(e) => DownloadError::Transport(e),
                BodyError::Write(e) => DownloadError::Write(e),
            })?;
            let md5 = sigv4::hex(&writer.md5.finalize());
            dest.flush().map_err(DownloadError::Write)?;
            let etag = response.header("ETag").map(str::to_string);
            if s3.is_some() {
                check_etag(&response.headers, &md5)?;
            }
            tracing::debug!("Retrieved {} ({bytes} bytes)", http::redact_url(&current));
            return Ok(DownloadInfo { final_url: current, bytes, md5, etag, s3, auth: prepared.auth, authenticated });
        }
        Err(DownloadError::TooManyRedirects)
    }

    /// The URL to request and the headers, signed for the chosen credentials.
    fn prepare(
        &self,
        url: &str,
        s3: Option<&S3Location>,
        selected: Option<Selected<'_>>,
        region_fix: Option<&str>,
    ) -> Result<Prepared, DownloadError> {
        let plain =
            |auth: Option<String>, headers| Prepared { url: url.to_string(), headers, signed_region: None, auth };
        match (selected, s3) {
            (None, _) => Ok(plain(None, Vec::new())),
            (Some(Selected::Basic { name, auth }), _) => {
                tracing::debug!("Using basic authentication {name} for {}", http::redact_url(url));
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", auth.username, auth.password));
                Ok(plain(Some(name.to_string()), vec![("Authorization", format!("Basic {token}"))]))
            }
            (Some(Selected::S3 { name, auth }), Some(location)) => {
                if is_presigned(url) {
                    // A second signature would make S3 refuse the request.
                    tracing::debug!("{} is presigned; not signing it with {name}", http::redact_url(url));
                    return Ok(plain(None, Vec::new()));
                }
                let credentials = match &auth.keys {
                    S3Keys::Static(c) => c.clone(),
                    S3Keys::Role(role) => self
                        .role_credentials(role)
                        .map_err(|reason| DownloadError::Credentials { name: name.to_string(), reason })?,
                    S3Keys::Unusable(why) => {
                        let reason = format!("{why}, not text: it cannot sign");
                        return Err(DownloadError::Credentials { name: name.to_string(), reason });
                    }
                };
                let region = region_fix.unwrap_or(&location.region).to_string();
                tracing::debug!("Signing {} with S3 authentication {name} for {region}", http::redact_url(url));
                let target = S3Target::new(url).map_err(DownloadError::Transport)?;
                let request = sigv4::Request {
                    method: "GET",
                    host: &target.netloc,
                    path: &target.path,
                    query: &target.query,
                    headers: &[],
                    payload: b"",
                };
                let scope = sigv4::Scope { region: &region, service: "s3" };
                let mut headers = sigv4::sign(&request, &credentials, &scope, Utc::now());
                headers.push(("Host", target.netloc.clone()));
                Ok(Prepared { url: target.url(), headers, signed_region: Some(region), auth: Some(name.to_string()) })
            }
            // `select` gives S3 blocks only for S3 URLs.
            (Some(Selected::S3 { .. }), None) => Ok(plain(None, Vec::new())),
        }
    }

    /// Role credentials from IMDS, cached until five minutes before they expire
    /// (INIT-AUTH-02; the reference fetched them for every request, PERF-IMDS).
    fn role_credentials(&self, role: &str) -> Result<Credentials, String> {
        // IAM role names are [\w+=,.@-]; anything else must not reach the IMDS path.
        if role.is_empty() || !role.bytes().all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b)) {
            return Err(format!("'{}' is not a valid IAM role name", role.escape_debug()));
        }
        let mut cache = self.roles.lock().unwrap_or_else(|e| e.into_inner());
        let now = Utc::now();
        if let Some(cached) = cache.get(role).filter(|c| c.refresh_at > now) {
            return Ok(cached.credentials.clone());
        }
        let text =
            self.imds.get(&format!("/latest/meta-data/iam/security-credentials/{role}")).map_err(|e| e.to_string())?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("the instance metadata answer is not JSON: {e}"))?;
        let field = |name: &str| doc.get(name).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(access_key), Some(secret_key)) = (field("AccessKeyId"), field("SecretAccessKey")) else {
            return Err("the instance metadata answer has no AccessKeyId/SecretAccessKey".into());
        };
        let credentials = Credentials { access_key, secret_key, session_token: field("Token") };
        // Without a readable expiry, ask again in five minutes.
        let refresh_at = field("Expiration")
            .and_then(|e| DateTime::parse_from_rfc3339(&e).ok())
            .map(|e| e.with_timezone(&Utc) - ROLE_REFRESH_MARGIN)
            .unwrap_or(now + ROLE_REFRESH_MARGIN);
        cache.insert(role.to_string(), CachedRole { credentials: credentials.clone(), refresh_at });
        Ok(credentials)
    }
}

/// An S3 URL in the form it is signed and sent: lower-case host without a default
/// port, each path segment decoded and encoded again the way SigV4 canonicalises it
/// (so that what is signed is exactly what is sent), the query sorted and encoded.
struct S3Target {
    scheme: String,
    netloc: String,
    path: String,
    query: Vec<(String, String)>,
}

impl S3Target {
    fn new(url: &str) -> Result<S3Target, TransportError> {
        let parts = http::split_url(strip_fragment(url))?;
        let host = parts.host.to_ascii_lowercase();
        let host = host.trim_end_matches('.');
        let netloc = match (parts.scheme.as_str(), parts.port) {
            ("https", Some(443)) | ("http", Some(80)) | (_, None) => host.to_string(),
            (_, Some(port)) => format!("{host}:{port}"),
        };
        let (path, query) = parts.path_and_query.split_once('?').unwrap_or((&parts.path_and_query, ""));
        let path = path.split('/').map(|s| sigv4::encode(&s3url::percent_decode(s))).collect::<Vec<_>>().join("/");
        let query = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (s3url::percent_decode(k), s3url::percent_decode(v))
            })
            .collect();
        Ok(S3Target { scheme: parts.scheme, netloc, path, query })
    }

    fn url(&self) -> String {
        let query = sigv4::canonical_query(&self.query);
        let sep = if query.is_empty() { "" } else { "?" };
        format!("{}://{}{}{sep}{query}", self.scheme, self.netloc, self.path)
    }
}

fn strip_fragment(url: &str) -> &str {
    url.split_once('#').map_or(url, |(u, _)| u)
}

/// Whether the URL carries its own signature (SigV4 or SigV2 presigned).
fn is_presigned(url: &str) -> bool {
    let Some((_, query)) = strip_fragment(url).split_once('?') else {
        return false;
    };
    query.split('&').any(|p| {
        let key = p.split_once('=').map_or(p, |(k, _)| k).to_ascii_lowercase();
        matches!(key.as_str(), "x-amz-signature" | "signature")
    })
}

/// The URL a `Location` header points to, relative to `base`, by the same URL parser
/// that sends the request (the fragment dropped).
fn resolve(base: &str, location: &str) -> String {
    let location = location.trim();
    let joined = match url::Url::parse(base) {
        Ok(base) => base.join(location),
        Err(_) => url::Url::parse(location),
    };
    match joined {
        Ok(mut url) => {
            url.set_fragment(None);
            url.to_string()
        }
        // Unparseable: the request fails with the parser's reason, naming it.
        Err(_) => location.to_string(),
    }
}

/// The ETag rule (INIT-FILES-05): only a plain-MD5 ETag of an object that is not
/// encrypted with KMS or a customer key says anything about the body.
fn check_etag(headers: &[(String, String)], md5: &str) -> Result<(), DownloadError> {
    let header = |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim());
    let Some(raw) = header("ETag") else {
        return Ok(());
    };
    let etag = raw.trim_start_matches("W/").trim_matches('"');
    let kms = header("x-amz-server-side-encryption").is_some_and(|v| v.to_ascii_lowercase().starts_with("aws:kms"));
    let customer_key = header("x-amz-server-side-encryption-customer-algorithm").is_some();
    if etag.contains('-') || kms || customer_key {
        return Ok(());
    }
    if etag.len() != 32 || !etag.bytes().all(|b| b.is_ascii_hexdigit()) {
        tracing::debug!("ETag {raw} is not an MD5 digest; not checking the body against it");
        return Ok(());
    }
    if etag.eq_ignore_ascii_case(md5) {
        Ok(())
    } else {
        Err(DownloadError::Checksum { etag: etag.to_string(), md5: md5.to_string() })
    }
}

/// An error body on one line: no XML declaration, whitespace collapsed, at most 512
/// characters (the reference printed the whole body).
fn one_line(text: &str) -> String {
    let text = text.trim_start();
    let text = match text.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or(rest, |(_, after)| after),
        None => text,
    };
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = joined.chars().take(512).collect();
    if joined.chars().count() > 512 {
        out.push_str("...");
    }
    out
}

/// Writes through to the file and hashes what was written.
struct Md5Writer<'a> {
    inner: &'a mut std::fs::File,
    md5: Md5,
}

impl Write for Md5Writer<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.md5.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    const MD5_HELLO: &str = "5d41402abc4b2a76b9719d911017c592"; // md5("hello")

    #[test]
    fn etag_rules() {
        let ok = |h: &[(&str, &str)]| check_etag(&headers(h), MD5_HELLO).is_ok();
        assert!(ok(&[("ETag", "\"5d41402abc4b2a76b9719d911017c592\"")]));
        assert!(ok(&[("etag", "\"5D41402ABC4B2A76B9719D911017C592\"")]));
        assert!(ok(&[]));
        assert!(!ok(&[("ETag", "\"00000000000000000000000000000000\"")]));
        // Multipart, KMS, customer keys, and ETags that are not digests are not checked.
        assert!(ok(&[("ETag", "\"00000000000000000000000000000000-3\"")]));
        assert!(ok(&[("ETag", "\"00000000000000000000000000000000\""), ("x-amz-server-side-encryption", "aws:kms")]));
        assert!(ok(&[
            ("ETag", "\"00000000000000000000000000000000\""),
            ("x-amz-server-side-encryption", "aws:kms:dsse")
        ]));
        assert!(!ok(&[("ETag", "\"00000000000000000000000000000000\""), ("x-amz-server-side-encryption", "AES256")]));
        assert!(ok(&[
            ("ETag", "\"00000000000000000000000000000000\""),
            ("x-amz-server-side-encryption-customer-algorithm", "AES256")
        ]));
        assert!(ok(&[("ETag", "W/\"abc\"")]));
        let err = check_etag(&headers(&[("ETag", "\"00000000000000000000000000000000\"")]), MD5_HELLO).unwrap_err();
        assert_eq!(err.verdict(), Verdict::Retriable);
        assert_eq!(
            err.to_string(),
            "Checksum mismatch: the ETag is 00000000000000000000000000000000 but the MD5 of the body is 5d41402abc4b2a76b9719d911017c592"
        );
    }

    #[test]
    fn verdicts_follow_the_generic_extractor() {
        let http = |status| DownloadError::Http { status, body: String::new() }.verdict();
        assert_eq!(http(503), Verdict::Throttled);
        for s in [404, 408, 500, 502, 504] {
            assert_eq!(http(s), Verdict::Retriable, "{s}");
        }
        for s in [400, 401, 403, 301, 410] {
            assert_eq!(http(s), Verdict::Terminal, "{s}");
        }
        assert_eq!(DownloadError::Transport(TransportError::new("reset")).verdict(), Verdict::Retriable);
        assert_eq!(DownloadError::Transport(TransportError::config("bad url")).verdict(), Verdict::Terminal);
    }

    #[test]
    fn unsupported_urls_fail_at_once_without_a_request() {
        let http = Arc::new(HttpClient::new(Default::default(), "test"));
        let imds = Arc::new(Imds::new("http://127.0.0.1:1", true, Policy::IMDS));
        let fail_on_retry =
            Policy { max_tries: 5, throttled_budget: std::time::Duration::ZERO, sleep: |_| panic!("retried") };
        let d = Downloader::new(http, imds, Authentication::default(), Endpoints::builtin()).with_retry(fail_on_retry);
        let mut file = tempfile::tempfile().unwrap();
        for (url, reason) in [
            ("ftp://example.com/f", "Unsupported URL scheme ftp"),
            ("no scheme", "Invalid URL: no scheme"),
            ("http:///path", "Invalid URL (no host): http:///path"),
        ] {
            let err = d.download_to(url, None, &mut file).unwrap_err();
            assert_eq!(err.to_string(), reason);
        }
    }

    #[test]
    fn error_reasons_are_one_readable_line() {
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>\n  <Message>Access Denied</Message></Error>";
        let e = DownloadError::Http { status: 403, body: one_line(body) };
        assert_eq!(
            e.to_string(),
            "HTTP Error 403 : <Error><Code>AccessDenied</Code> <Message>Access Denied</Message></Error>"
        );
        assert_eq!(one_line(""), "");
        assert!(one_line(&"x".repeat(2000)).ends_with("..."));
    }

    #[test]
    fn s3_targets_are_sent_as_signed() {
        let t = S3Target::new("https://B.S3.EU-WEST-1.amazonaws.com:443/dir/a%20b+c!.txt?versionId=x%2By&acl#frag")
            .unwrap();
        assert_eq!(t.netloc, "b.s3.eu-west-1.amazonaws.com");
        assert_eq!(t.path, "/dir/a%20b%2Bc%21.txt");
        assert_eq!(t.url(), "https://b.s3.eu-west-1.amazonaws.com/dir/a%20b%2Bc%21.txt?acl=&versionId=x%2By");
        let t = S3Target::new("http://127.0.0.1:5000/bucket/key").unwrap();
        assert_eq!(t.url(), "http://127.0.0.1:5000/bucket/key");
        assert_eq!(S3Target::new("http://h:80/b/").unwrap().url(), "http://h/b/");
    }

    #[test]
    fn redirects_resolve_and_presigned_urls_are_recognised() {
        assert_eq!(resolve("https://a/b/c?x", "https://d/e"), "https://d/e");
        assert_eq!(resolve("https://a/b/c?x", "http://other-host:8080#@good-host/x"), "http://other-host:8080/");
        assert_eq!(resolve("https://a/b/c", "../d?q#f"), "https://a/d?q");
        assert_eq!(resolve("https://a:1/b/c", "/e"), "https://a:1/e");
        assert_eq!(resolve("https://a/b/c", "//d/e"), "https://d/e");
        assert_eq!(resolve("https://a/b/c", "e"), "https://a/b/e");
        assert!(is_presigned("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=a&X-Amz-Signature=s"));
        assert!(is_presigned("https://b.s3.amazonaws.com/k?AWSAccessKeyId=a&Signature=s&Expires=1"));
        assert!(!is_presigned("https://b.s3.amazonaws.com/k?versionId=1"));
        assert!(!is_presigned("https://b.s3.amazonaws.com/k"));
    }
}
