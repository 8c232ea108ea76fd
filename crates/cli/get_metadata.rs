//! `cfn-get-metadata` (GETMD-01..05): prints a resource's metadata, or one value in it.

use crate::{logging, report};
use cfn_aws::Imds;
use cfn_metadata::{keypath, source};
use cfn_optparse::options;
pub use cfn_optparse::tables::get_metadata as parser;
use cfn_python::json as pyjson;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let parser = parser(prog);
    let parsed = match report::parse(&parser, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    // As in the reference, a missing option is reported before the logs are opened.
    let (stack, logical_id) = match (parsed.text("stack_name"), parsed.text("logical_resource_id")) {
        (Some(s), Some(r)) if !s.is_empty() && !r.is_empty() => (s, r),
        _ => {
            return report::usage_failure(&parser, "You must specify both a stack name and logical resource id");
        }
    };
    logging::init("cfn-init.log", report::level(parsed.flag("verbose")));
    let client = match cfn_aws::cloudformation_client(&options::api_options(&parsed), Arc::new(Imds::from_env())) {
        Ok(client) => client,
        Err(e) => return report::credential_failure(&e),
    };
    let metadata = match client.describe_stack_resource(&stack, &logical_id) {
        Ok(detail) => detail.metadata,
        Err(e) => return report::failure(&e),
    };
    let Some(metadata) = metadata else {
        return report::failure(format!("Error: {}", source::SourceError::NoMetadata(logical_id)));
    };
    let value = match parsed.text("key") {
        None => &metadata,
        Some(key) => match keypath::lookup(&metadata, &key) {
            Some(value) => value,
            None => {
                return report::failure(format!("Error: {key} is not present in the metadata for {logical_id}"));
            }
        },
    };
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        other => pyjson::to_pretty(other),
    };
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{text}").and_then(|_| stdout.flush()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
