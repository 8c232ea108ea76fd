//! AWS Signature Version 4 for header-signed requests (CRED-04).
//!
//! The reference signs CloudFormation calls as GET requests with the parameters in the
//! query string and `Accept`, `Host` and `X-Amz-Date` in the signed headers; this module
//! does exactly that, and is general enough for the S3 and SQS requests other tools make.

use crate::credentials::Credentials;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

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

/// Where and for whom the signature is valid.
pub struct Scope<'a> {
    pub region: &'a str,
    pub service: &'a str,
}

/// Headers to add to the request: `X-Amz-Date`, `X-Amz-Security-Token` (with a session
/// token), `X-Amz-Content-Sha256` (for S3) and `Authorization`.
pub fn sign(
    request: &Request<'_>,
    credentials: &Credentials,
    scope: &Scope<'_>,
    now: DateTime<Utc>,
) -> Vec<(&'static str, String)> {
    let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
    let date = &amz_date[..8];
    let payload_hash = hex(&Sha256::digest(request.payload));

    let mut added: Vec<(&'static str, String)> = vec![("X-Amz-Date", amz_date.clone())];
    if let Some(token) = &credentials.session_token {
        added.push(("X-Amz-Security-Token", token.clone()));
    }
    if scope.service == "s3" {
        added.push(("X-Amz-Content-Sha256", payload_hash.clone()));
    }

    let mut signed: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), canonical_header_value(value)))
        .chain(std::iter::once(("host".to_string(), request.host.to_string())))
        .chain(added.iter().map(|(name, value)| (name.to_ascii_lowercase(), value.clone())))
        .collect();
    signed.sort();
    let signed_names = signed.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(";");
    let canonical_headers: String = signed.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();

    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        request.method,
        canonical_path(request.path, scope.service != "s3"),
        canonical_query(request.query),
        canonical_headers,
        signed_names,
        payload_hash
    );
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let key = signing_key(&credentials.secret_key, date, scope.region, scope.service);
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    added.push((
        "Authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed_names}, Signature={signature}",
            credentials.access_key
        ),
    ));
    added
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

fn canonical_path(path: &str, encode_twice: bool) -> String {
    if path.is_empty() {
        return "/".to_string();
    }
    if !encode_twice {
        return path.to_string();
    }
    path.split('/').map(encode).collect::<Vec<_>>().join("/")
}

fn canonical_header_value(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> Vec<u8> {
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    hmac(&k_service, b"aws4_request")
}

pub(crate) fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
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

    #[test]
    fn signing_key_matches_aws_documentation() {
        let key = signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1", "iam");
        assert_eq!(hex(&key), "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
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
        let auth = &added.iter().find(|(n, _)| *n == "Authorization").unwrap().1;
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
        assert!(added.contains(&("X-Amz-Date", "20150830T123600Z".to_string())));
    }

    #[test]
    fn session_token_is_sent_and_signed() {
        let creds = Credentials::new("AK", "SK", Some("TOKEN".into()));
        let request = Request { method: "GET", host: "h", path: "/", query: &[], headers: &[], payload: b"" };
        let added = sign(&request, &creds, &Scope { region: "r", service: "cloudformation" }, Utc::now());
        assert!(added.contains(&("X-Amz-Security-Token", "TOKEN".to_string())));
        let auth = &added.iter().find(|(n, _)| *n == "Authorization").unwrap().1;
        assert!(auth.contains("SignedHeaders=host;x-amz-date;x-amz-security-token,"), "{auth}");
    }

    #[test]
    fn query_encoding_is_rfc3986() {
        let q = vec![("b".to_string(), "a b/c~".to_string()), ("a".to_string(), "é&=".to_string())];
        assert_eq!(canonical_query(&q), "a=%C3%A9%26%3D&b=a%20b%2Fc~");
    }
}
