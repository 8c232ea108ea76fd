//! Option groups several tools share (CLI-COMMON-05..07), and their translation into
//! the metadata crate's request options.

use crate::{Group, Opt, Parsed};
use cfn_aws::{ApiOptions, CredentialOptions, ProxyOptions};
use std::path::PathBuf;

pub const DEFAULT_REGION: &str = "us-east-1";

/// A clap option taking a value, for the `cfn-bootstrap` subcommands; `id` is cfn-init's
/// optparse `dest`, so [`api_options_from`] reads it.
fn clap_value(id: &'static str, long: &'static str, name: &'static str, help: &'static str) -> clap::Arg {
    clap::Arg::new(id).long(long).value_name(name).help(help)
}

/// `-s STACK -r RESOURCE`, for the subcommands that read a stack resource as cfn-init
/// does (validate, plan, doctor).
pub fn stack_args() -> [clap::Arg; 2] {
    [
        clap_value("stack_name", "stack", "STACK_NAME", "A CloudFormation stack").short('s'),
        clap_value("logical_resource_id", "resource", "LOGICAL_RESOURCE_ID", "A CloudFormation logical resource ID")
            .short('r'),
    ]
}

/// cfn-init's endpoint, credential and proxy options, for the same subcommands.
pub fn api_args() -> [clap::Arg; 8] {
    [
        clap_value("cfn_url", "url", "ENDPOINT", "The CloudFormation service URL").short('u'),
        clap_value("region", "region", "REGION", "The CloudFormation region. Default: us-east-1."),
        clap_value("credential_file", "credential-file", "CREDENTIAL_FILE", "A credential file, as cfn-init takes it")
            .short('f')
            .value_hint(clap::ValueHint::FilePath),
        clap_value("iam_role", "role", "IAM_ROLE", "An IAM Role"),
        clap_value("access_key", "access-key", "ACCESS_KEY", "An AWS Access Key"),
        clap_value("secret_key", "secret-key", "SECRET_KEY", "An AWS Secret Key"),
        clap_value("http_proxy", "http-proxy", "HTTP_PROXY", "A (non-SSL) HTTP proxy"),
        clap_value("https_proxy", "https-proxy", "HTTPS_PROXY", "An HTTPS proxy"),
    ]
}

/// `--format`: how a subcommand prints, `text` unless told.
pub fn format_arg(formats: &'static [&'static str], help: &'static str) -> clap::Arg {
    clap::Arg::new("format")
        .long("format")
        .value_name("FORMAT")
        .value_parser(formats.to_vec())
        .default_value("text")
        .help(help)
}

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
            refuse_processes: false,
        },
        proxies: proxies(),
        region: text("region").unwrap_or_else(|| DEFAULT_REGION.to_string()),
        url: text("cfn_url"),
    }
}
