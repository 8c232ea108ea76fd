//! Option groups several tools share (CLI-COMMON-05..07), and their translation into
//! the metadata crate's request options.

use crate::optparse::{Group, Opt, Parsed};
use cfn_aws::{ApiOptions, CredentialOptions, ProxyOptions};
use std::path::PathBuf;

pub const DEFAULT_REGION: &str = "us-east-1";

pub fn stack() -> Opt {
    Opt::value(Some('s'), "stack", "stack_name", "STACK_NAME", "A CloudFormation stack")
}

pub fn resource() -> Opt {
    Opt::value(
        Some('r'),
        "resource",
        "logical_resource_id",
        "LOGICAL_RESOURCE_ID",
        "A CloudFormation logical resource ID",
    )
}

pub fn url(short: Option<char>) -> Opt {
    Opt::value(
        short,
        "url",
        "cfn_url",
        "ENDPOINT",
        "The CloudFormation service URL. The endpoint URL must match the region option. Use of this parameter is discouraged.",
    )
}

pub fn region() -> Opt {
    Opt::value(None, "region", "region", "REGION", "The CloudFormation region. Default: us-east-1.")
}

pub fn verbose() -> Opt {
    Opt::flag(Some('v'), "verbose", "verbose", "Enables verbose logging")
}

pub fn access_key() -> Opt {
    Opt::value(None, "access-key", "access_key", "ACCESS_KEY", "An AWS Access Key")
}

pub fn secret_key() -> Opt {
    Opt::value(None, "secret-key", "secret_key", "SECRET_KEY", "An AWS Secret Key")
}

pub fn credentials_group() -> Group {
    Group {
        title: "AWS Credentials",
        description: Some("Options for specifying AWS Account Credentials."),
        options: vec![
            Opt::value(
                Some('f'),
                "credential-file",
                "credential_file",
                "CREDENTIAL_FILE",
                "A credential file, readable only by the owner, with keys 'AWSAccessKeyId' and 'AWSSecretKey'",
            ),
            Opt::value(None, "role", "iam_role", "IAM_ROLE", "An IAM Role"),
            access_key(),
            secret_key(),
        ],
    }
}

pub fn proxy_group() -> Group {
    Group {
        title: "Proxy",
        description: Some("Options for specifying proxies. Format: [scheme://][user:password@]host:port"),
        options: vec![
            Opt::value(None, "http-proxy", "http_proxy", "HTTP_PROXY", "A (non-SSL) HTTP proxy"),
            Opt::value(None, "https-proxy", "https_proxy", "HTTPS_PROXY", "An HTTPS proxy"),
        ],
    }
}

/// Everything needed to reach CloudFormation, from the parsed shared options.
pub fn api_options(parsed: &Parsed) -> ApiOptions {
    api_options_from(|dest| parsed.text(dest))
}

/// [`api_options`] from any parser: `text` gives an option's value by its optparse
/// `dest` (`credential_file`, `iam_role`, `cfn_url`, …).
pub fn api_options_from(text: impl Fn(&str) -> Option<String>) -> ApiOptions {
    let proxies = || ProxyOptions { http_proxy: text("http_proxy"), https_proxy: text("https_proxy") };
    ApiOptions {
        credentials: CredentialOptions {
            credential_file: text("credential_file").map(PathBuf::from),
            role: text("iam_role"),
            access_key: text("access_key"),
            secret_key: text("secret_key"),
            region: text("region"),
            proxies: proxies(),
        },
        proxies: proxies(),
        region: text("region").unwrap_or_else(|| DEFAULT_REGION.to_string()),
        url: text("cfn_url"),
    }
}
