//! `AWS::CloudFormation::Authentication` (INIT-AUTH-01..05, INIT-AUTH-08, SEC-04): the
//! credentials cfn-init may use for `files` `source` and `sources` downloads, and which
//! of them a given URL gets.
//!
//! Blocks are `name → {"type": "S3" | "basic", …}` (type case-insensitive):
//! * S3: `accessKeyId` + `secretKey` (+ `sessionToken`, or `token`, for temporary keys —
//!   the reference had no session token), or `roleName` (instance-profile credentials
//!   from IMDS); `buckets`, a string or a list, makes the block the default for those
//!   buckets.
//! * basic: `username`, `password`; `uris`, a string or a list, makes the block the
//!   default for those URLs.
//!
//! Where credentials may go (SEC-04), decided here and nowhere else:
//! * An S3 block only ever signs requests to S3 URLs (`s3url::parse`), with SigV4. A
//!   signature does not disclose the secret key, so plain-HTTP S3 URLs are signed too,
//!   as the reference and the AWS SDKs do.
//! * A basic block's password is readable by anyone who sees the request, so it is sent
//!   only to a URL one of its `uris` covers — an explicit choice of the template author,
//!   who then also chose the scheme — or, for a block a file names that has no `uris`
//!   at all, to the host of the file's own `source` URL (not to another host a redirect
//!   leads to). A named block is used over plain HTTP as the reference does (INIT-AUTH-05:
//!   the template asked for it), with a warning that the password crosses the network
//!   in clear.
//! * A named block that does not apply to the URL is not used; default matching decides
//!   instead (with a warning), so credentials never leak to a host they were not meant
//!   for. The reference sent a named block to any host (SEC-BASIC).
//! * Secrets never reach a log line: every type holding one has a redacting `Debug`.

use crate::credentials::Credentials;
use crate::http::{scheme_of, split_url};
use crate::s3url::S3Location;
use serde_json::Value;
use std::fmt;

/// The parsed `AWS::CloudFormation::Authentication` object, in document order.
#[derive(Debug, Clone, Default)]
pub struct Authentication {
    blocks: Vec<(String, AuthBlock)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthBlock {
    S3(S3Auth),
    Basic(BasicAuth),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Auth {
    pub keys: S3Keys,
    /// Buckets this block is the default for.
    pub buckets: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum S3Keys {
    /// `accessKeyId`/`secretKey` (+ optional `sessionToken`/`token`); `Credentials`'
    /// `Debug` redacts the secret and the token.
    Static(Credentials),
    /// `roleName`: instance-profile credentials from IMDS.
    Role(String),
    /// Keys given, but not as text (`roleName: [Role]`): cfn-init keeps such a block, as
    /// the reference does (it tests only that the keys are there), and a download it
    /// would sign fails, naming why.
    Unusable(String),
}

#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    pub username: String,
    pub password: String,
    /// URLs (or bare `host[:port]`s) this block is the default for.
    pub uris: Vec<String>,
}

// The password must never reach a log line, not even through `{:?}` (SEC-02).
impl fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("uris", &self.uris)
            .finish()
    }
}

/// The credentials chosen for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selected<'a> {
    S3 { name: &'a str, auth: &'a S3Auth },
    Basic { name: &'a str, auth: &'a BasicAuth },
}

impl Selected<'_> {
    pub fn name(&self) -> &str {
        match self {
            Selected::S3 { name, .. } | Selected::Basic { name, .. } => name,
        }
    }
}

/// A string or a list of strings (`buckets`, `uris`); anything else counts as absent.
fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    }
}

impl Authentication {
    /// Parses the object; blocks that cannot be used are dropped with the reference's
    /// warnings (INIT-AUTH-08). Anything that is not an object means no blocks.
    pub fn parse(value: &Value) -> Authentication {
        let Some(object) = value.as_object() else {
            if !value.is_null() {
                tracing::warn!("AWS::CloudFormation::Authentication must be an object; ignoring it");
            }
            return Authentication::default();
        };
        let entries: Vec<(&String, &Value)> = object.iter().collect();
        let names: Vec<&str> = entries.iter().map(|(name, _)| name.as_str()).collect();
        let mut blocks = Vec::new();
        // Read in the order the reference meets the blocks, Python 2.7's dict order, so
        // that the warnings come in its order; the blocks are then used in the
        // document's order, as before.
        for index in cfn_python::py2::dict_order(&names) {
            let (name, block) = entries[index];
            let text = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_string);
            let kind = match block.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let parsed = match kind.to_ascii_lowercase().as_str() {
                "s3" => {
                    let given = |key: &str| block.get(key).is_some();
                    let not_text = |key: &str| {
                        block
                            .get(key)
                            .filter(|v| !v.is_string())
                            .map(|v| format!("{key} is {}", cfn_python::json::kind(v)))
                    };
                    // The reference's test: the keys are there, whatever they hold.
                    let keys = if given("accessKeyId") && given("secretKey") {
                        match (text("accessKeyId"), text("secretKey")) {
                            (Some(ak), Some(sk)) => {
                                let token = text("sessionToken").or_else(|| text("token")).filter(|t| !t.is_empty());
                                Some(S3Keys::Static(Credentials::new(&ak, &sk, token)))
                            }
                            _ => not_text("accessKeyId").or_else(|| not_text("secretKey")).map(S3Keys::Unusable),
                        }
                    } else if given("roleName") {
                        Some(
                            text("roleName").map_or_else(
                                || S3Keys::Unusable(not_text("roleName").unwrap_or_default()),
                                S3Keys::Role,
                            ),
                        )
                    } else {
                        None
                    };
                    match keys {
                        Some(keys) => AuthBlock::S3(S3Auth { keys, buckets: string_list(block.get("buckets")) }),
                        None => {
                            tracing::warn!(r#"S3 auth requires either "accessKeyId" and "secretKey" or "roleName""#);
                            continue;
                        }
                    }
                }
                "basic" => match (text("username"), text("password")) {
                    (Some(username), Some(password)) => {
                        AuthBlock::Basic(BasicAuth { username, password, uris: string_list(block.get("uris")) })
                    }
                    _ => {
                        tracing::warn!(r#"Basic auth requires "username" and "password""#);
                        continue;
                    }
                },
                _ => {
                    tracing::warn!("Unrecognized authentication type: {kind}");
                    continue;
                }
            };
            blocks.push((index, name.clone(), parsed));
        }
        blocks.sort_by_key(|(index, _, _)| *index);
        Authentication { blocks: blocks.into_iter().map(|(_, name, parsed)| (name, parsed)).collect() }
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&AuthBlock> {
        self.blocks.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().map(|(n, _)| n.as_str())
    }

    /// The credentials a request to `url` gets (INIT-AUTH-05, SEC-04). `s3` is what
    /// `s3url::parse` says about the URL; `named` is the file's `authentication`;
    /// `source_host` is the host of the URL the file names, which differs from `url`'s
    /// after a redirect.
    ///
    /// A named block is used when it exists and applies to the URL (module comment);
    /// otherwise the defaults decide: an S3 block listing the bucket (for S3 URLs), else
    /// the first basic block whose `uris` cover the URL. The reference tried basic first
    /// and let an S3 signature overwrite it, which comes to the same answer.
    pub fn select(
        &self,
        url: &str,
        s3: Option<&S3Location>,
        named: Option<&str>,
        source_host: &str,
    ) -> Option<Selected<'_>> {
        if let Some(name) = named {
            match self.blocks.iter().find(|(n, _)| n == name) {
                None => tracing::warn!(
                    "Authentication {name} not found in AWS::CloudFormation::Authentication; using default authentication"
                ),
                Some((name, AuthBlock::S3(auth))) => {
                    if s3.is_some() {
                        return Some(Selected::S3 { name, auth });
                    }
                    tracing::warn!(
                        "Authentication {name} is for S3, and {} is not an S3 URL; using default authentication",
                        crate::http::redact_url(url)
                    );
                }
                Some((name, AuthBlock::Basic(auth))) => {
                    if auth.covers(url) || (auth.uris.is_empty() && same_host(url, source_host)) {
                        if scheme_of(url).as_deref() == Some("http") {
                            tracing::warn!(
                                "Authentication {name} sends the password of user {} unencrypted over plain HTTP to {}: anyone on the network path can read it; use an https:// URL",
                                auth.username,
                                crate::http::redact_url(url)
                            );
                        }
                        return Some(Selected::Basic { name, auth });
                    }
                    tracing::warn!(
                        "Authentication {name} does not apply to {} (it is sent only to its uris, or without uris only to the source's host); using default authentication",
                        crate::http::redact_url(url)
                    );
                }
            }
        }
        if let Some(location) = s3 {
            let by_bucket = self.blocks.iter().find_map(|(name, block)| match block {
                AuthBlock::S3(auth) if auth.buckets.iter().any(|b| b.eq_ignore_ascii_case(&location.bucket)) => {
                    Some(Selected::S3 { name, auth })
                }
                _ => None,
            });
            if by_bucket.is_some() {
                return by_bucket;
            }
        }
        self.blocks.iter().find_map(|(name, block)| match block {
            AuthBlock::Basic(auth) if auth.covers(url) => Some(Selected::Basic { name, auth }),
            _ => None,
        })
    }
}

/// Whether `url` goes to exactly `host` (case-insensitive), over HTTP or HTTPS.
fn same_host(url: &str, host: &str) -> bool {
    split_url(url).is_ok_and(|p| matches!(p.scheme.as_str(), "http" | "https") && p.host.eq_ignore_ascii_case(host))
}

impl BasicAuth {
    /// Whether one of `uris` covers `url` (INIT-AUTH-04, BUG-BASICURI):
    /// * `host` or `host:port` — the reference's form: the URL's `host[:port]` equals it
    ///   (case-insensitive), any scheme and path;
    /// * `scheme://host[:port][/path]` — the documented form: the URL starts with it, on a
    ///   path boundary (`https://h/app` covers `https://h/app` and `https://h/app/x`, not
    ///   `https://h/apple`), scheme and host case-insensitive, the path case-sensitive;
    /// * `host[:port]/path` (the AWS documentation's `example.com/test`) — the same, for
    ///   any scheme.
    pub fn covers(&self, url: &str) -> bool {
        let Ok(parts) = split_url(url) else {
            return false;
        };
        let netloc = parts.netloc.to_ascii_lowercase();
        let path = parts.path_and_query.as_str();
        self.uris.iter().any(|uri| {
            let uri = uri.trim();
            let (scheme, rest) = match uri.split_once("://") {
                Some((s, r)) => (Some(s.to_ascii_lowercase()), r),
                None => (None, uri),
            };
            if scheme.as_ref().is_some_and(|s| *s != parts.scheme) {
                return false;
            }
            let (authority, prefix) = match rest.find(['/', '?']) {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            };
            // Userinfo in a `uris` entry is not part of the match.
            let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_ascii_lowercase();
            if authority.is_empty() || authority != netloc {
                return false;
            }
            path_has_prefix(path, prefix)
        })
    }
}

fn path_has_prefix(path: &str, prefix: &str) -> bool {
    if prefix.is_empty() || prefix == "/" {
        return true;
    }
    match path.strip_prefix(prefix) {
        Some(rest) => prefix.ends_with(['/', '?']) || rest.is_empty() || rest.starts_with(['/', '?', '#']),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s3(bucket: &str) -> S3Location {
        S3Location { bucket: bucket.into(), key: "k".into(), region: "us-east-1".into() }
    }

    fn sample() -> Authentication {
        Authentication::parse(&json!({
            "Keys": {"type": "S3", "accessKeyId": "AKID", "secretKey": "SECRET1", "buckets": "keyed"},
            "Role": {"type": "s3", "roleName": "my-role", "buckets": ["roled", "other"]},
            "Temp": {"type": "S3", "accessKeyId": "ASIA", "secretKey": "SECRET2", "sessionToken": "TOKEN1"},
            "Web": {"type": "Basic", "username": "u", "password": "PASSWORD1", "uris": ["example.com", "https://docs.example.org/private"]},
            "Named": {"type": "basic", "username": "n", "password": "PASSWORD2"},
            "Ftp": {"type": "ftp"},
            "Half": {"type": "S3", "accessKeyId": "AKID"},
            "Listed": {"type": "S3", "roleName": ["my-role"], "buckets": "listed"},
            "NoPassword": {"type": "basic", "username": "x"}
        }))
    }

    #[test]
    fn parses_blocks_and_drops_unusable_ones() {
        let auth = sample();
        assert_eq!(auth.names().collect::<Vec<_>>(), ["Keys", "Role", "Temp", "Web", "Named", "Listed"]);
        // Kept, as the reference keeps it; what it holds says why it cannot sign.
        match auth.get("Listed") {
            Some(AuthBlock::S3(S3Auth { keys: S3Keys::Unusable(why), buckets })) => {
                assert_eq!(
                    (why.as_str(), buckets.as_slice()),
                    ("roleName is a list", ["listed".to_string()].as_slice())
                );
            }
            other => panic!("{other:?}"),
        }
        match auth.get("Temp") {
            Some(AuthBlock::S3(S3Auth { keys: S3Keys::Static(c), buckets })) => {
                assert_eq!((c.access_key.as_str(), c.session_token.as_deref()), ("ASIA", Some("TOKEN1")));
                assert!(buckets.is_empty());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            auth.get("Role"),
            Some(&AuthBlock::S3(S3Auth {
                keys: S3Keys::Role("my-role".into()),
                buckets: vec!["roled".into(), "other".into()]
            }))
        );
        let alt =
            Authentication::parse(&json!({"A": {"type": "S3", "accessKeyId": "a", "secretKey": "s", "token": "t"}}));
        assert!(
            matches!(alt.get("A"), Some(AuthBlock::S3(S3Auth { keys: S3Keys::Static(c), .. })) if c.session_token.as_deref() == Some("t"))
        );
        assert!(Authentication::parse(&json!("nope")).is_empty());
        assert!(Authentication::parse(&json!({"x": "not an object"})).is_empty());
    }

    #[test]
    fn debug_output_has_no_secrets() {
        let shown = format!("{:?}", sample());
        for secret in ["SECRET1", "SECRET2", "TOKEN1", "PASSWORD1", "PASSWORD2"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("AKID") && shown.contains("my-role"));
    }

    #[test]
    fn uris_match_by_host_and_by_prefix() {
        let b = |uris: &[&str]| BasicAuth {
            username: "u".into(),
            password: "p".into(),
            uris: uris.iter().map(|s| s.to_string()).collect(),
        };
        let cases: &[(&[&str], &str, bool)] = &[
            (&["example.com"], "http://example.com/any/path", true),
            (&["example.com"], "https://EXAMPLE.com/x", true),
            (&["example.com"], "https://example.com:8443/x", false),
            (&["example.com:8443"], "https://example.com:8443/x", true),
            (&["example.com"], "https://www.example.com/x", false),
            (&["example.com"], "https://example.com.evil.org/x", false),
            (&["example.com/test"], "https://example.com/test", true),
            (&["example.com/test"], "http://example.com/test/file.zip", true),
            (&["example.com/test"], "https://example.com/testing", false),
            (&["example.com/test/"], "https://example.com/test/a", true),
            (&["https://example.com/test"], "https://example.com/test/a?x=1", true),
            (&["https://example.com/test"], "http://example.com/test/a", false),
            (&["HTTPS://Example.com/test"], "https://example.com/test", true),
            (&["https://example.com/Test"], "https://example.com/test", false),
            (&["https://example.com"], "https://example.com/anything", true),
            (&["https://example.com/"], "https://example.com/anything", true),
            (&["https://user@example.com/a"], "https://example.com/a", true),
            (&[""], "https://example.com/", false),
            (&["https://"], "https://example.com/", false),
            (&["example.com"], "not a url", false),
        ];
        for (uris, url, expected) in cases {
            assert_eq!(b(uris).covers(url), *expected, "uris {uris:?} url {url}");
        }
    }

    #[test]
    fn selection_rules() {
        let auth = sample();
        let pick = |url: &str, loc: Option<S3Location>, named: Option<&str>| {
            let host = split_url(url).map(|p| p.host).unwrap_or_default();
            auth.select(url, loc.as_ref(), named, &host).map(|s| s.name().to_string())
        };
        // Defaults: S3 by bucket, basic by uris.
        assert_eq!(pick("https://keyed.s3.amazonaws.com/k", Some(s3("keyed")), None), Some("Keys".into()));
        assert_eq!(pick("https://s3.amazonaws.com/other/k", Some(s3("other")), None), Some("Role".into()));
        assert_eq!(pick("https://s3.amazonaws.com/nobody/k", Some(s3("nobody")), None), None);
        assert_eq!(pick("http://example.com/f", None, None), Some("Web".into()));
        assert_eq!(pick("https://docs.example.org/private/f", None, None), Some("Web".into()));
        assert_eq!(pick("https://docs.example.org/public/f", None, None), None);
        // A named block wins where it applies.
        assert_eq!(pick("https://s3.amazonaws.com/keyed/k", Some(s3("keyed")), Some("Temp")), Some("Temp".into()));
        assert_eq!(pick("https://files.example.net/f", None, Some("Named")), Some("Named".into()));
        // Unknown name: defaults.
        assert_eq!(pick("https://s3.amazonaws.com/keyed/k", Some(s3("keyed")), Some("Missing")), Some("Keys".into()));
        // SEC-04: an S3 block never goes to a non-S3 URL; a basic block with uris only
        // where they match. A named basic block goes over plain HTTP too, as the
        // reference sends it (INIT-AUTH-05), with a warning.
        assert_eq!(pick("https://files.example.net/f", None, Some("Keys")), None);
        assert_eq!(pick("http://files.example.net/f", None, Some("Named")), Some("Named".into()));
        assert_eq!(pick("https://files.example.net/f", None, Some("Web")), None);
        assert_eq!(pick("ftp://files.example.net/f", None, Some("Named")), None);
        // After a redirect the named block without uris stays with the source's host.
        assert_eq!(auth.select("https://elsewhere.example/f", None, Some("Named"), "files.example.net"), None);
        // A basic block named for an S3 URL its uris do not cover is not sent there.
        assert_eq!(pick("https://s3.amazonaws.com/x/k", Some(s3("x")), Some("Web")), None);
    }
}
