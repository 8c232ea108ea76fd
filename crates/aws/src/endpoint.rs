//! CloudFormation endpoints by region and partition (EP-01, EP-02, CLI-COMMON-07).

use aws_smithy_runtime_api::client::endpoint::{
    EndpointFuture, EndpointResolverParams, ResolveEndpoint, SharedEndpointResolver,
};
use aws_smithy_types::endpoint::Endpoint;

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

/// The endpoint as the user named it (`--url`, trimmed) or else the regional endpoint:
/// what the reference's logs show.
pub fn cloudformation_endpoint(region: &str, url: Option<&str>) -> String {
    match url.map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) => u.to_string(),
        None => format!("https://cloudformation.{region}.{}", dns_suffix(region)),
    }
}

/// The endpoint to call: [`cloudformation_endpoint`] with a trailing `/`, because
/// requests go to the endpoint's root path.
pub fn cloudformation_url(region: &str, url: Option<&str>) -> String {
    let base = cloudformation_endpoint(region, url);
    if base.ends_with('/') { base } else { format!("{base}/") }
}

/// The SQS endpoint of a region in its partition (EP-06).
pub fn sqs_url(region: &str) -> String {
    format!("https://sqs.{region}.{}", dns_suffix(region))
}

/// An SDK endpoint resolver that always answers one URL: our tools always know the
/// endpoint (from `--url`, the region, or the configuration), so the SDK's endpoint
/// rules, which would only hand that URL back, are not evaluated. (The SDK still parses
/// its partitions table when a client is built; no public setting avoids that.)
#[derive(Debug)]
pub struct FixedEndpoint(pub String);

impl FixedEndpoint {
    /// The resolver in the form the SDK clients' configuration takes.
    pub fn shared(url: impl Into<String>) -> SharedEndpointResolver {
        SharedEndpointResolver::new(FixedEndpoint(url.into()))
    }
}

impl ResolveEndpoint for FixedEndpoint {
    fn resolve_endpoint<'a>(&'a self, _: &'a EndpointResolverParams) -> EndpointFuture<'a> {
        EndpointFuture::ready(Ok(Endpoint::builder().url(self.0.clone()).build()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_endpoint_answers_its_url_whatever_the_parameters() {
        let resolver = FixedEndpoint::shared("http://127.0.0.1:8000/");
        let params = EndpointResolverParams::new(());
        let endpoint = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(resolver.resolve_endpoint(&params))
            .unwrap();
        assert_eq!(endpoint.url(), "http://127.0.0.1:8000/");
    }

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
        // What the logs show: the URL as given, the regional one without a slash.
        assert_eq!(cloudformation_endpoint("us-east-1", Some(" http://127.0.0.1:5000 ")), "http://127.0.0.1:5000");
        assert_eq!(cloudformation_endpoint("cn-north-1", None), "https://cloudformation.cn-north-1.amazonaws.com.cn");
    }
}

/// The endpoints document of S3 and SQS hostnames (EP-03, EP-06): built in, or replaced
/// whole by `$ENDPOINTS_OVERRIDE` or `/etc/cfn/endpoints-override.json` when that file
/// exists, in the reference's format:
/// `{"Services": {"AmazonS3": {"Endpoints": [{"Region", "Hostname", "Default"}]}, "AmazonSQS": …}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub s3: Vec<ServiceEndpoint>,
    pub sqs: Vec<ServiceEndpoint>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceEndpoint {
    pub region: String,
    pub hostname: String,
    pub default: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("Invalid endpoints document {path}: {reason}")]
pub struct EndpointsError {
    pub path: String,
    pub reason: String,
}

impl Endpoints {
    /// The legacy global S3 hostnames, all in us-east-1; SQS uses the regional
    /// `sqs.<region>` names unless a document lists others.
    pub fn builtin() -> Endpoints {
        let s3 = |hostname: &str, default| ServiceEndpoint {
            region: "us-east-1".into(),
            hostname: hostname.into(),
            default,
        };
        Endpoints {
            s3: vec![
                s3("s3.amazonaws.com", true),
                s3("s3-external-1.amazonaws.com", false),
                s3("s3-external-2.amazonaws.com", false),
            ],
            sqs: Vec::new(),
        }
    }

    /// The document in force: an override file when one exists, else the built-in one.
    pub fn load() -> Result<Endpoints, EndpointsError> {
        let from_env = std::env::var_os("ENDPOINTS_OVERRIDE").map(std::path::PathBuf::from).filter(|p| p.is_file());
        let from_etc = Some(cfn_host::paths::etc_dir().join("endpoints-override.json")).filter(|p| p.is_file());
        match from_env.or(from_etc) {
            Some(path) => {
                let shown = path.display().to_string();
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| EndpointsError { path: shown.clone(), reason: cfn_python::strerror(&e) })?;
                Endpoints::parse(&text).map_err(|reason| EndpointsError { path: shown, reason })
            }
            None => Ok(Endpoints::builtin()),
        }
    }

    pub fn parse(text: &str) -> Result<Endpoints, String> {
        let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let service = |name: &str| -> Result<Vec<ServiceEndpoint>, String> {
            let Some(list) = doc.pointer(&format!("/Services/{name}/Endpoints")) else {
                return Ok(Vec::new());
            };
            let list = list.as_array().ok_or_else(|| format!("Services.{name}.Endpoints must be a list"))?;
            list.iter()
                .map(|e| {
                    let field = |k: &str| e.get(k).and_then(|v| v.as_str()).map(str::to_string);
                    match (field("Region"), field("Hostname")) {
                        (Some(region), Some(hostname)) => Ok(ServiceEndpoint {
                            region,
                            hostname,
                            default: e.get("Default").and_then(|v| v.as_bool()).unwrap_or(false),
                        }),
                        _ => Err(format!("every Services.{name}.Endpoints entry needs Region and Hostname")),
                    }
                })
                .collect()
        };
        Ok(Endpoints { s3: service("AmazonS3")?, sqs: service("AmazonSQS")? })
    }

    /// The SQS endpoint of a region: the document's hostname if it lists one, else
    /// `https://sqs.<region>.<partition suffix>`.
    pub fn sqs_url(&self, region: &str) -> String {
        match self.sqs.iter().find(|e| e.region == region) {
            Some(e) => format!("https://{}", e.hostname),
            None => sqs_url(region),
        }
    }
}

#[cfg(test)]
mod endpoints_tests {
    use super::*;

    #[test]
    fn builtin_document_and_sqs_defaults() {
        let e = Endpoints::builtin();
        assert_eq!(
            e.s3.iter().filter(|x| x.default).map(|x| x.hostname.as_str()).collect::<Vec<_>>(),
            ["s3.amazonaws.com"]
        );
        assert_eq!(e.sqs_url("eu-west-1"), "https://sqs.eu-west-1.amazonaws.com");
        assert_eq!(e.sqs_url("cn-north-1"), "https://sqs.cn-north-1.amazonaws.com.cn");
    }

    #[test]
    fn an_override_document_replaces_everything() {
        let e = Endpoints::parse(
            r#"{"Services": {"AmazonSQS": {"Endpoints": [{"Region": "us-east-1", "Hostname": "queue.amazonaws.com"}]}}}"#,
        )
        .unwrap();
        assert!(e.s3.is_empty());
        assert_eq!(e.sqs_url("us-east-1"), "https://queue.amazonaws.com");
        assert_eq!(e.sqs_url("us-west-2"), "https://sqs.us-west-2.amazonaws.com");
        assert!(Endpoints::parse("{nope").is_err());
        assert!(Endpoints::parse(r#"{"Services": {"AmazonS3": {"Endpoints": [{"Region": "x"}]}}}"#).is_err());
    }
}
