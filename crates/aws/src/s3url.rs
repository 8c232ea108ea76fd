//! Which download URLs are S3 objects, and of which bucket and region (EP-04, EP-05).
//!
//! cfn-init needs this to decide whether an `S3` authentication block applies, to sign
//! the request with SigV4 for the right region, and to check the body against the ETag.
//! The reference recognised the endpoints document's hostnames and two regular
//! expressions; this parser also understands the forms it got wrong or missed
//! (BUG-S3CN): virtual-hosted `.amazonaws.com.cn` (the reference took the key for the
//! bucket), Transfer Acceleration (the reference took `accelerate` for a region),
//! dual-stack, FIPS and access points, in every partition, case-insensitively.
//!
//! Region of the hostnames that carry none (`s3.amazonaws.com`, `bucket.s3.amazonaws.com`,
//! `s3-external-1`, the endpoints document's entries, and `s3-accelerate`): the global
//! and legacy names are us-east-1 endpoints, and accelerate endpoints accept a
//! us-east-1 signature for us-east-1 buckets. For buckets elsewhere S3 answers with the
//! bucket's real region (`x-amz-bucket-region`), and the downloader signs again with it
//! — what the AWS SDKs do, and what replaces the reference's SigV2 fallback (SEC-SIGV2).

use crate::endpoint::Endpoints;
use crate::http::split_url;

/// The region used to sign requests to hostnames that name none.
pub const GLOBAL_REGION: &str = "us-east-1";

/// An S3 object a URL points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    /// The object key, percent-decoded (may be empty).
    pub key: String,
    /// The region to sign for.
    pub region: String,
}

/// DNS suffixes of the partitions S3 lives in (the same list as `endpoint::dns_suffix`).
const SUFFIXES: &[&str] = &[
    "amazonaws.com.cn",
    "amazonaws.com",
    "c2s.ic.gov",
    "sc2s.sgov.gov",
    "cloud.adc-e.uk",
    "csp.hci.ic.gov",
    "amazonaws.eu",
];

/// The S3 object `url` names, or `None` when it is not an S3 URL (any scheme but
/// `http`/`https`, another host, no bucket).
pub fn parse(url: &str, endpoints: &Endpoints) -> Option<S3Location> {
    let parts = split_url(url).ok()?;
    if parts.scheme != "http" && parts.scheme != "https" {
        return None;
    }
    let netloc = parts.netloc.to_ascii_lowercase();
    let host = parts.host.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    let path = parts.path_and_query.split(['?', '#']).next().unwrap_or("/");

    // 1. The endpoints document's hostnames (rule 1 of the reference), matched on a
    // label boundary so that `evils3.amazonaws.com` is not `s3.amazonaws.com`.
    for entry in &endpoints.s3 {
        let name = entry.hostname.to_ascii_lowercase();
        for candidate in [netloc.as_str(), host] {
            if candidate == name {
                return path_style(path, &entry.region);
            }
            if let Some(bucket) = candidate.strip_suffix(&name).and_then(|b| b.strip_suffix('.')) {
                return virtual_hosted(bucket, path, &entry.region);
            }
        }
    }

    // 2. The AWS naming patterns, in every partition.
    let prefix = SUFFIXES.iter().find_map(|s| host.strip_suffix(s).and_then(|p| p.strip_suffix('.')))?;
    let labels: Vec<&str> = prefix.split('.').collect();
    for (i, label) in labels.iter().enumerate() {
        let Some(region) = endpoint_region(label, &labels[i + 1..]) else {
            continue;
        };
        return if i == 0 { path_style(path, &region) } else { virtual_hosted(&labels[..i].join("."), path, &region) };
    }
    None
}

/// The signing region when `service` followed by `rest` is an S3 endpoint name, e.g.
/// `s3` + `[dualstack, eu-west-1]`.
fn endpoint_region(service: &str, rest: &[&str]) -> Option<String> {
    let region_only = |rest: &[&str]| match rest {
        [region] | ["dualstack", region] if is_region(region) => Some(region.to_string()),
        _ => None,
    };
    match service {
        // s3.amazonaws.com, s3.<region>, s3.dualstack.<region>
        "s3" if rest.is_empty() => Some(GLOBAL_REGION.into()),
        "s3" | "s3-fips" | "s3-accesspoint" | "s3-accesspoint-fips" => region_only(rest),
        // Transfer Acceleration has no region in its name (see the module comment).
        "s3-accelerate" => matches!(rest, [] | ["dualstack"]).then(|| GLOBAL_REGION.into()),
        "s3-external-1" | "s3-external-2" if rest.is_empty() => Some(GLOBAL_REGION.into()),
        // Legacy dash form: s3-<region>.amazonaws.com
        _ => {
            let region = service.strip_prefix("s3-")?;
            (rest.is_empty() && is_region(region)).then(|| region.to_string())
        }
    }
}

/// `us-east-1`, `us-gov-west-1`, `cn-north-1`, `us-isob-east-1`, `eusc-de-east-1`:
/// letters, at least one `-word`, and a number at the end.
fn is_region(s: &str) -> bool {
    let words: Vec<&str> = s.split('-').collect();
    let Some((last, init)) = words.split_last() else {
        return false;
    };
    init.len() >= 2
        && (2..=4).contains(&init[0].len())
        && init.iter().all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()))
        && !last.is_empty()
        && last.bytes().all(|b| b.is_ascii_digit())
}

fn path_style(path: &str, region: &str) -> Option<S3Location> {
    let rest = path.trim_start_matches('/');
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    let bucket = percent_decode(bucket);
    if bucket.is_empty() {
        return None;
    }
    Some(S3Location { bucket, key: percent_decode(key), region: region.into() })
}

fn virtual_hosted(bucket: &str, path: &str, region: &str) -> Option<S3Location> {
    if bucket.is_empty() {
        return None;
    }
    let key = path.strip_prefix('/').unwrap_or(path);
    Some(S3Location { bucket: bucket.into(), key: percent_decode(key), region: region.into() })
}

/// Decodes `%XX` escapes; malformed escapes stay as written, invalid UTF-8 is replaced.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// URL → (region, bucket, key), or not S3.
    type Case = (&'static str, Option<(&'static str, &'static str, &'static str)>);

    fn check(url: &str) -> Option<(String, String, String)> {
        parse(url, &Endpoints::builtin()).map(|l| (l.region, l.bucket, l.key))
    }

    #[test]
    fn spec_table_with_corrected_answers() {
        // SPEC §4.3's observed table, our answers (differences marked).
        let cases: &[Case] = &[
            ("https://s3.amazonaws.com/bucket/key", Some(("us-east-1", "bucket", "key"))),
            ("https://bucket.s3.amazonaws.com/key", Some(("us-east-1", "bucket", "key"))),
            ("http://s3.amazonaws.com/bucket/key", Some(("us-east-1", "bucket", "key"))),
            ("https://s3-us-west-2.amazonaws.com/bucket/key", Some(("us-west-2", "bucket", "key"))),
            ("https://s3.us-west-2.amazonaws.com/bucket/key", Some(("us-west-2", "bucket", "key"))),
            ("https://bucket.s3.us-west-2.amazonaws.com/key", Some(("us-west-2", "bucket", "key"))),
            ("https://bucket.s3-us-west-2.amazonaws.com/key", Some(("us-west-2", "bucket", "key"))),
            ("https://my.dotted.bucket.s3.eu-west-1.amazonaws.com/k", Some(("eu-west-1", "my.dotted.bucket", "k"))),
            ("https://s3.cn-north-1.amazonaws.com.cn/bucket/key", Some(("cn-north-1", "bucket", "key"))),
            // BUG-S3CN: the reference took "key" for the bucket.
            ("https://bucket.s3.cn-north-1.amazonaws.com.cn/key", Some(("cn-north-1", "bucket", "key"))),
            // The reference took "accelerate" for the region.
            ("https://bucket.s3-accelerate.amazonaws.com/k", Some(("us-east-1", "bucket", "k"))),
            // The reference did not recognise dual-stack.
            ("https://bucket.s3.dualstack.us-east-1.amazonaws.com/k", Some(("us-east-1", "bucket", "k"))),
            ("https://Bucket.S3.amazonaws.com/k", Some(("us-east-1", "bucket", "k"))),
        ];
        for (url, expected) in cases {
            let expected = expected.map(|(r, b, k)| (r.to_string(), b.to_string(), k.to_string()));
            assert_eq!(check(url), expected, "{url}");
        }
    }

    #[test]
    fn more_forms() {
        let cases: &[Case] = &[
            ("https://bucket.s3-accelerate.dualstack.amazonaws.com/a/b", Some(("us-east-1", "bucket", "a/b"))),
            ("https://s3.dualstack.eu-central-1.amazonaws.com/b/k", Some(("eu-central-1", "b", "k"))),
            ("https://b.s3.dualstack.eu-central-1.amazonaws.com/k", Some(("eu-central-1", "b", "k"))),
            ("https://s3-fips.us-gov-west-1.amazonaws.com/b/k", Some(("us-gov-west-1", "b", "k"))),
            ("https://b.s3-fips.us-east-2.amazonaws.com/k", Some(("us-east-2", "b", "k"))),
            ("https://b.s3-fips.dualstack.us-east-2.amazonaws.com/k", Some(("us-east-2", "b", "k"))),
            ("https://s3-external-1.amazonaws.com/b/k", Some(("us-east-1", "b", "k"))),
            ("https://b.s3-external-1.amazonaws.com/k", Some(("us-east-1", "b", "k"))),
            ("https://s3.cn-northwest-1.amazonaws.com.cn/b/k", Some(("cn-northwest-1", "b", "k"))),
            ("https://b.s3.us-iso-east-1.c2s.ic.gov/k", Some(("us-iso-east-1", "b", "k"))),
            ("https://b.s3.eusc-de-east-1.amazonaws.eu/k", Some(("eusc-de-east-1", "b", "k"))),
            (
                "https://ap-111122223333.s3-accesspoint.us-west-2.amazonaws.com/k",
                Some(("us-west-2", "ap-111122223333", "k")),
            ),
            // Bucket names that look like endpoint labels.
            ("https://my.s3.bucket.s3.eu-west-1.amazonaws.com/k", Some(("eu-west-1", "my.s3.bucket", "k"))),
            ("https://s3.s3.amazonaws.com/k", Some(("us-east-1", "s3", "k"))),
            ("https://s3.us-west-2.s3.us-west-2.amazonaws.com/k", Some(("us-west-2", "s3.us-west-2", "k"))),
            // Ports, case, trailing dots, escapes, queries.
            (
                "HTTPS://S3.EU-WEST-1.AMAZONAWS.COM:443/Bucket/Key%20One?versionId=1",
                Some(("eu-west-1", "Bucket", "Key One")),
            ),
            ("https://b.s3.amazonaws.com./k", Some(("us-east-1", "b", "k"))),
            ("https://b.s3.amazonaws.com", Some(("us-east-1", "b", ""))),
            // Not S3.
            ("https://s3.amazonaws.com/", None),
            ("https://s3.amazonaws.com", None),
            ("https://evils3.amazonaws.com/b/k", None),
            ("https://s3.amazonaws.com.evil.example/b/k", None),
            ("https://b.s3-website-us-east-1.amazonaws.com/k", None),
            ("https://b.s3-website.us-east-1.amazonaws.com/k", None),
            ("https://s3.dualstack.amazonaws.com/b/k", None),
            ("https://b.s3.notaregion.amazonaws.com/k", None),
            ("https://example.com/b/k", None),
            ("ftp://s3.amazonaws.com/b/k", None),
            ("https://cloudformation.us-east-1.amazonaws.com/", None),
            ("not a url", None),
        ];
        for (url, expected) in cases {
            let expected = expected.map(|(r, b, k)| (r.to_string(), b.to_string(), k.to_string()));
            assert_eq!(check(url), expected, "{url}");
        }
    }

    #[test]
    fn endpoints_document_entries_with_ports() {
        let e = Endpoints::parse(
            r#"{"Services": {"AmazonS3": {"Endpoints": [{"Region": "eu-west-3", "Hostname": "127.0.0.1:5000"},
                {"Region": "us-west-1", "Hostname": "objects.example.internal"}]}}}"#,
        )
        .unwrap();
        let got = |u: &str| parse(u, &e).map(|l| (l.region, l.bucket, l.key));
        assert_eq!(got("http://127.0.0.1:5000/b/k/x"), Some(("eu-west-3".into(), "b".into(), "k/x".into())));
        assert_eq!(got("http://127.0.0.1:5001/b/k"), None);
        assert_eq!(
            got("https://OBJECTS.example.internal:8443/b/k"),
            Some(("us-west-1".into(), "b".into(), "k".into()))
        );
        assert_eq!(got("https://b.objects.example.internal/k"), Some(("us-west-1".into(), "b".into(), "k".into())));
        // An override document replaces the built-in one, but the AWS patterns still apply.
        assert_eq!(got("https://b.s3.us-west-2.amazonaws.com/k"), Some(("us-west-2".into(), "b".into(), "k".into())));
    }

    #[test]
    fn regions() {
        for r in ["us-east-1", "us-gov-west-1", "cn-north-1", "us-isob-east-1", "eusc-de-east-1", "ap-southeast-5"] {
            assert!(is_region(r), "{r}");
        }
        for r in ["accelerate", "external-1", "dualstack", "us-east", "u-east-1", "us--1", "us-east-x", "", "-1"] {
            assert!(!is_region(r), "{r}");
        }
    }

    #[test]
    fn percent_decoding_never_panics() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }
}
