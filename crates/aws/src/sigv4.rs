//! AWS Signature Version 4 for header-signed requests (CRED-04), computed by the
//! `aws-sigv4` crate (the AWS SDK's own signer).
//!
//! The reference signs CloudFormation calls as GET requests with the parameters in the
//! query string and `Accept`, `Host` and `X-Amz-Date` in the signed headers; this module
//! does exactly that, and is general enough for the S3 requests of downloads. It describes
//! a request the way its callers build it (host, encoded path, unencoded query pairs) and
//! returns the headers to add, so callers that send requests without the SDK (the
//! CloudFormation actions the public model lacks, S3 downloads) share one signer with it.

use crate::credentials::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings, UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use chrono::{DateTime, Utc};
use std::time::SystemTime;

/// What gets signed: everything the server will see that SigV4 covers.
pub struct Request<'a> {
    pub method: &'a str,
    /// `host[:port]` exactly as it goes into the `Host` header.
    pub host: &'a str,
    /// The URL path, already percent-encoded as it is sent (`/` when empty).
    pub path: &'a str,
    /// Query parameters, not yet encoded.
    pub query: &'a [(String, String)],
    /// Headers to sign in addition to `host`, `x-amz-date` and the token header.
    pub headers: &'a [(&'a str, String)],
    pub payload: &'a [u8],
}

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("{0}")]
    Params(#[from] v4::signing_params::BuildError),
    #[error("{0}")]
    Request(#[from] aws_sigv4::http_request::SigningError),
}

/// Where and for whom the signature is valid.
pub struct Scope<'a> {
    pub region: &'a str,
    pub service: &'a str,
}

/// Headers to add to the request: `X-Amz-Date`, `X-Amz-Security-Token` (with a session
/// token), `X-Amz-Content-Sha256` (for S3) and `Authorization`.
///
/// A request the signer cannot describe (a header value with control characters, say a
/// corrupt session token) gets no `Authorization`: the error is logged and the service
/// refuses the request with its own message, as it would any unsigned one. Callers that
/// can report the error themselves use [`try_sign`].
pub fn sign(
    request: &Request<'_>,
    credentials: &Credentials,
    scope: &Scope<'_>,
    now: DateTime<Utc>,
) -> Vec<(&'static str, String)> {
    match try_sign(request, credentials, scope, now) {
        Ok(headers) => headers,
        Err(e) => {
            tracing::error!("Could not sign the {} request to {}: {e}", scope.service, request.host);
            vec![("X-Amz-Date", now.format("%Y%m%dT%H%M%SZ").to_string())]
        }
    }
}

/// [`sign`], with the signer's error when the request cannot be signed.
pub fn try_sign(
    request: &Request<'_>,
    credentials: &Credentials,
    scope: &Scope<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<(&'static str, String)>, SignError> {
    let identity = aws_credential_types::Credentials::new(
        &credentials.access_key,
        &credentials.secret_key,
        credentials.session_token.clone(),
        None,
        "cfn-bootstrap",
    )
    .into();
    let mut settings = SigningSettings::default();
    if scope.service == "s3" {
        // S3 signs the path as sent, unnormalised, and wants the payload hash as a header.
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    }
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(scope.region)
        .name(scope.service)
        .time(SystemTime::from(now))
        .settings(settings)
        .build()?
        .into();
    let path = if request.path.is_empty() { "/" } else { request.path };
    let query = canonical_query(request.query);
    let uri = if query.is_empty() { path.to_string() } else { format!("{path}?{query}") };
    let headers = request
        .headers
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .chain(std::iter::once(("host", request.host)));
    let signable = SignableRequest::new(request.method, uri, headers, SignableBody::Bytes(request.payload))?;
    let (instructions, _signature) = aws_sigv4::http_request::sign(signable, &params)?.into_parts();
    let signed: Vec<(&str, &str)> = instructions.headers().collect();
    let value = |name: &str| signed.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.to_string());
    // The order and spelling callers and their logs have always seen.
    let mut added = Vec::with_capacity(4);
    for name in ["X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256", "Authorization"] {
        if let Some(v) = value(name) {
            added.push((name, v));
        }
    }
    Ok(added)
}

/// Percent-encodes everything but the RFC 3986 unreserved characters, as SigV4 and
/// the query strings we send both require.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The query string as sent and as signed: encoded pairs sorted by key, then value.
pub fn canonical_query(query: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = query.iter().map(|(k, v)| (encode(k), encode(v))).collect();
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn example_credentials() -> Credentials {
        Credentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None)
    }

    fn authorization(added: &[(&str, String)]) -> String {
        added.iter().find(|(n, _)| *n == "Authorization").unwrap().1.clone()
    }

    #[test]
    fn signing_key_matches_aws_documentation() {
        let day = Utc.with_ymd_and_hms(2015, 8, 30, 12, 36, 0).unwrap();
        let key = v4::generate_signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            SystemTime::from(day),
            "us-east-1",
            "iam",
        );
        assert_eq!(hex(key.as_ref()), "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
    }

    #[test]
    fn signature_matches_aws_documentation_example() {
        // The ListUsers example of the SigV4 documentation.
        let query =
            vec![("Action".to_string(), "ListUsers".to_string()), ("Version".to_string(), "2010-05-08".to_string())];
        let headers = [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8".to_string())];
        let request = Request {
            method: "GET",
            host: "iam.amazonaws.com",
            path: "/",
            query: &query,
            headers: &headers,
            payload: b"",
        };
        let now = Utc.with_ymd_and_hms(2015, 8, 30, 12, 36, 0).unwrap();
        let added = sign(&request, &example_credentials(), &Scope { region: "us-east-1", service: "iam" }, now);
        assert_eq!(
            authorization(&added),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
        assert_eq!(added[0], ("X-Amz-Date", "20150830T123600Z".to_string()));
        assert_eq!(added.len(), 2, "no token, no payload header outside S3: {added:?}");
    }

    #[test]
    fn s3_signature_matches_aws_documentation_example() {
        // The GET Object example of S3's "Signature Calculations for the Authorization
        // Header": the path as sent, the payload hash as a signed header.
        let credentials = Credentials::new("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", None);
        let headers = [("Range", "bytes=0-9".to_string())];
        let request = Request {
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/test.txt",
            query: &[],
            headers: &headers,
            payload: b"",
        };
        let now = Utc.with_ymd_and_hms(2013, 5, 24, 0, 0, 0).unwrap();
        let added = sign(&request, &credentials, &Scope { region: "us-east-1", service: "s3" }, now);
        assert_eq!(
            authorization(&added),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
        assert!(added.contains(&(
            "X-Amz-Content-Sha256",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".to_string()
        )));
    }

    #[test]
    fn session_token_is_sent_and_signed() {
        let creds = Credentials::new("AK", "SK", Some("TOKEN".into()));
        let request = Request { method: "GET", host: "h", path: "/", query: &[], headers: &[], payload: b"" };
        let added = sign(&request, &creds, &Scope { region: "r", service: "cloudformation" }, Utc::now());
        assert!(added.contains(&("X-Amz-Security-Token", "TOKEN".to_string())));
        let auth = authorization(&added);
        assert!(auth.contains("SignedHeaders=host;x-amz-date;x-amz-security-token,"), "{auth}");
    }

    #[test]
    fn an_unsignable_request_is_an_error_not_a_panic() {
        let creds = Credentials::new("AK", "SK", Some("bad\ntoken".into()));
        let request = Request { method: "GET", host: "h", path: "/", query: &[], headers: &[], payload: b"" };
        let scope = Scope { region: "r", service: "sqs" };
        assert!(try_sign(&request, &creds, &scope, Utc::now()).is_err());
        let added = sign(&request, &creds, &scope, Utc::now());
        assert!(added.iter().all(|(n, _)| *n != "Authorization"), "{added:?}");
    }

    #[test]
    fn query_encoding_is_rfc3986() {
        let q = vec![("b".to_string(), "a b/c~".to_string()), ("a".to_string(), "é&=".to_string())];
        assert_eq!(canonical_query(&q), "a=%C3%A9%26%3D&b=a%20b%2Fc~");
    }
}
