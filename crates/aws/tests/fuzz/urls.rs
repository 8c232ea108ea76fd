//! URLs: S3 URL parsing (EP-04, EP-05), endpoints (EP-01..03, EP-06), redaction (SEC-02,
//! LOG-08). Nothing panics on any text; every S3 URL form gives back its bucket, key and
//! region; a URL holding a password or a presigned signature never shows it once
//! redacted, alone or inside a message.

use crate::config;
use cfn_aws::endpoint::{self, Endpoints};
use cfn_aws::http::{redact_url, redact_urls_in, split_url};
use cfn_aws::presigned::decode_url;
use cfn_aws::s3url::{self, S3Location};
use proptest::prelude::*;

/// Text that looks like URLs, or does not.
fn url_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            "http://",
            "https://",
            "HTTPS://",
            "ftp://",
            "s3://",
            "://",
            "@",
            ":",
            "/",
            "?",
            "#",
            "&",
            "=",
            "%",
            "%2F",
            "%zz",
            "\\",
            "[",
            "]",
            ".",
            "..",
            "s3",
            "s3-",
            "amazonaws.com",
            "amazonaws.com.cn",
            "us-east-1",
            "dualstack",
            "accelerate",
            "bucket",
            "key",
            "X-Amz-Signature=",
            "Signature=",
            "token=",
            "user:pw@",
            " ",
            "'",
            "\"",
            "\n",
        ])
        .prop_map(String::from),
        "[a-z0-9-]{1,6}",
        "\\PC{1,4}",
    ];
    prop::collection::vec(piece, 0..16).prop_map(|p| p.concat())
}

/// An endpoints document: the reference's format with odd entries, or any text.
fn endpoints_text() -> impl Strategy<Value = String> {
    let entry = ("\\PC{0,8}", prop_oneof!["[a-z0-9.-]{0,20}", Just(String::new()), "\\PC{0,6}"], any::<bool>())
        .prop_map(
            |(region, host, default)| serde_json::json!({"Region": region, "Hostname": host, "Default": default}),
        );
    prop_oneof![
        3 => prop::collection::vec(entry, 0..4).prop_map(|e| {
            serde_json::json!({"Services": {"AmazonS3": {"Endpoints": e.clone()}, "AmazonSQS": {"Endpoints": e}}})
                .to_string()
        }),
        1 => "\\PC{0,40}",
    ]
}

/// Regions of every partition, and names that only look like regions.
fn region() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "us-east-1",
            "us-west-2",
            "eu-central-1",
            "ap-southeast-3",
            "cn-north-1",
            "cn-northwest-1",
            "us-gov-west-1",
            "us-iso-east-1",
            "us-isob-east-1",
            "eu-isoe-west-1",
            "us-isof-south-1",
            "eusc-de-east-1",
        ])
        .prop_map(String::from),
        "[a-z]{2,4}(-[a-z]{2,9}){1,2}-[0-9]{1,2}",
    ]
}

/// An S3 object key as bytes of any kind, and its percent-encoded path (nothing but
/// unreserved characters and `/` left as they are; no `.` or `..` segments, which URL
/// parsing resolves away).
fn key() -> impl Strategy<Value = (String, String)> {
    let segment = "\\PC{1,8}".prop_filter("not a dot segment", |s: &String| s != "." && s != "..");
    prop::collection::vec(segment, 0..4).prop_map(|segments| {
        let key = segments.join("/");
        let encoded = segments
            .iter()
            .map(|s| {
                s.bytes()
                    .map(|b| match b {
                        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'~' => (b as char).to_string(),
                        _ => format!("%{b:02X}"),
                    })
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("/");
        (key, encoded)
    })
}

/// A bucket name as S3 allows it (no `xn--` prefix, which is also an invalid IDN label).
fn bucket() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9-]{1,20}[a-z0-9]".prop_filter("S3 refuses the xn-- prefix", |b| !b.starts_with("xn--"))
}

/// A URL holding a secret, and the secret: the password (or the user name, as tokens
/// are given) of its userinfo, or the value of a credential query parameter.
fn url_with_secret() -> impl Strategy<Value = (String, String)> {
    let secret = "[A-Za-z0-9]{12,20}";
    let user = prop_oneof![Just(String::new()), "[a-z]{1,6}"];
    // What RFC 3986 allows in a password, `@` too (the last one ends the userinfo).
    let password = "[!$&'()*+,;=:@%A-Za-z0-9._~-]{0,6}";
    let param = prop::sample::select(vec![
        "X-Amz-Signature",
        "x-amz-signature",
        "X-Amz-Credential",
        "X-Amz-Security-Token",
        "Signature",
        "AWSAccessKeyId",
        "sig",
        "token",
        "access_token",
        "X-Goog-Signature",
    ]);
    let pairs = || prop::collection::vec("[a-z]{1,4}=[a-z0-9%]{0,4}", 0..3);
    let host = prop_oneof!["[a-z]{1,8}(\\.[a-z]{2,4}){0,2}", Just("b.s3.us-east-1.amazonaws.com".to_string())];
    let path = "(/[a-zA-Z0-9._@~-]{0,8}){0,3}";
    let fragment = prop::option::of("[a-z]{0,5}");
    (secret, user, password, any::<bool>(), param, pairs(), pairs(), host, path, fragment).prop_map(
        |(secret, user, password, in_userinfo, param, before, after, host, path, fragment)| {
            let url = if in_userinfo {
                let userinfo = if user.is_empty() { secret.clone() } else { format!("{user}:{password}{secret}") };
                let query = if before.is_empty() { String::new() } else { format!("?{}", before.join("&")) };
                format!("https://{userinfo}@{host}{path}{query}")
            } else {
                let pairs = [before, vec![format!("{param}={secret}")], after].concat();
                format!("https://{host}{path}?{}", pairs.join("&"))
            };
            let url = match fragment {
                Some(f) => format!("{url}#{f}"),
                None => url,
            };
            (url, secret)
        },
    )
}

/// The text around a URL in the messages and command lines that show one.
fn frame() -> impl Strategy<Value = (&'static str, &'static str)> {
    prop::sample::select(vec![
        ("", ""),
        ("Failed to retrieve ", ": HTTP Error 403 : Forbidden"),
        ("['", "']"),
        ("[\"", "\"]"),
        ("(", ")"),
        ("rpm -U --quiet ", " /a.rpm"),
        ("<", ">"),
        ("`", "`."),
        ("see ", ", then"),
    ])
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Path,
    VirtualHosted,
    Dash,
    DualStack,
    Global,
}

proptest! {
    #![proptest_config(config(1024))]

    /// No text makes URL parsing, endpoint building or redaction panic; redaction is
    /// idempotent and keeps text without `://` or `?` as it is.
    #[test]
    fn any_text_never_panics(text in url_text(), document in endpoints_text(), region in "\\PC{0,12}") {
        let endpoints = Endpoints::parse(&document).unwrap_or_else(|_| Endpoints::builtin());
        let _ = s3url::parse(&text, &endpoints);
        let _ = s3url::parse(&text, &Endpoints::builtin());
        let _ = s3url::percent_decode(&text);
        let _ = split_url(&text);
        let _ = decode_url(&text);
        let _ = endpoint::cloudformation_url(&region, Some(&text));
        let _ = endpoint::cloudformation_url(&region, None);
        let _ = endpoints.sqs_url(&region);
        let once = redact_url(&text);
        prop_assert_eq!(redact_url(&once), once.clone());
        if !text.contains("://") && !text.contains('?') {
            prop_assert_eq!(once, text.clone());
        }
        let once = redact_urls_in(&text);
        prop_assert_eq!(redact_urls_in(&once), once);
    }

    /// Every form of S3 URL gives back its bucket, its key (decoded) and its region.
    #[test]
    fn s3_urls_give_back_bucket_key_and_region(
        bucket in bucket(),
        dotted in any::<bool>(),
        (key, encoded) in key(),
        region in region(),
        https in any::<bool>(),
        style in prop::sample::select(vec![
            Style::Path, Style::VirtualHosted, Style::Dash, Style::DualStack, Style::Global,
        ]),
        query in prop::option::of("[a-z]{1,5}=[a-z0-9]{0,5}"),
    ) {
        let bucket = if dotted { format!("{bucket}.example") } else { bucket };
        let suffix = endpoint::dns_suffix(&region);
        let (host, path, region) = match style {
            Style::Path => (format!("s3.{region}.{suffix}"), format!("/{bucket}/{encoded}"), region),
            Style::VirtualHosted => (format!("{bucket}.s3.{region}.{suffix}"), format!("/{encoded}"), region),
            Style::Dash => (format!("{bucket}.s3-{region}.{suffix}"), format!("/{encoded}"), region),
            Style::DualStack => (format!("{bucket}.s3.dualstack.{region}.{suffix}"), format!("/{encoded}"), region),
            Style::Global => {
                ("s3.amazonaws.com".to_string(), format!("/{bucket}/{encoded}"), s3url::GLOBAL_REGION.to_string())
            }
        };
        let scheme = if https { "https" } else { "http" };
        let query = query.map(|q| format!("?{q}")).unwrap_or_default();
        let url = format!("{scheme}://{host}{path}{query}");
        let want = S3Location { bucket, key, region };
        prop_assert_eq!(s3url::parse(&url, &Endpoints::builtin()), Some(want), "{}", url);
    }

    /// A password in the userinfo or a credential in the query never survives
    /// redaction, alone or in the messages and command lines URLs are shown in.
    #[test]
    fn redaction_never_lets_a_secret_through((url, secret) in url_with_secret(), frame in frame()) {
        let redacted = redact_url(&url);
        prop_assert!(!redacted.contains(&secret), "{} -> {}", url, redacted);
        let message = format!("{}{url}{}", frame.0, frame.1);
        let redacted = redact_urls_in(&message);
        prop_assert!(!redacted.contains(&secret), "{} -> {}", message, redacted);
    }
}
