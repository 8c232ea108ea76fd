//! CloudFormation endpoints by region and partition (EP-01, EP-02, CLI-COMMON-07).

/// The DNS suffix of the partition a region belongs to.
pub fn dns_suffix(region: &str) -> &'static str {
    let r = region.to_ascii_lowercase();
    if r.starts_with("cn-") {
        "amazonaws.com.cn"
    } else if r.starts_with("us-isob-") {
        "sc2s.sgov.gov"
    } else if r.starts_with("us-iso-") {
        "c2s.ic.gov"
    } else if r.starts_with("eu-isoe-") {
        "cloud.adc-e.uk"
    } else if r.starts_with("us-isof-") {
        "csp.hci.ic.gov"
    } else if r.starts_with("eusc-") {
        "amazonaws.eu"
    } else {
        // The commercial and GovCloud partitions share the suffix.
        "amazonaws.com"
    }
}

/// The endpoint to call: `--url` verbatim when given, else the regional endpoint. A
/// trailing `/` is added because requests go to the endpoint's root path.
pub fn cloudformation_url(region: &str, url: Option<&str>) -> String {
    let base = match url.map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) => u.to_string(),
        None => format!("https://cloudformation.{region}.{}", dns_suffix(region)),
    };
    if base.ends_with('/') { base } else { format!("{base}/") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regional_endpoints() {
        let cases = [
            ("us-east-1", "https://cloudformation.us-east-1.amazonaws.com/"),
            ("eu-west-3", "https://cloudformation.eu-west-3.amazonaws.com/"),
            ("cn-north-1", "https://cloudformation.cn-north-1.amazonaws.com.cn/"),
            ("cn-northwest-1", "https://cloudformation.cn-northwest-1.amazonaws.com.cn/"),
            ("us-gov-west-1", "https://cloudformation.us-gov-west-1.amazonaws.com/"),
            ("us-iso-east-1", "https://cloudformation.us-iso-east-1.c2s.ic.gov/"),
            ("us-isob-east-1", "https://cloudformation.us-isob-east-1.sc2s.sgov.gov/"),
            ("eusc-de-east-1", "https://cloudformation.eusc-de-east-1.amazonaws.eu/"),
        ];
        for (region, url) in cases {
            assert_eq!(cloudformation_url(region, None), url, "region {region}");
        }
    }

    #[test]
    fn url_option_is_used_verbatim_with_a_trailing_slash() {
        assert_eq!(cloudformation_url("us-east-1", Some("http://127.0.0.1:5000")), "http://127.0.0.1:5000/");
        assert_eq!(cloudformation_url("cn-north-1", Some("https://x.example/api/")), "https://x.example/api/");
        assert_eq!(cloudformation_url("us-east-1", Some("")), "https://cloudformation.us-east-1.amazonaws.com/");
    }
}
