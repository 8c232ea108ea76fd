//! `cfn-bootstrap plan`: what cfn-init would do on this host with the same input, config
//! by config, changing nothing (no file, package, user, state file or log line).
//!
//! Exit codes, as `terraform plan -detailed-exitcode` has them: 0 nothing would change,
//! 2 something would, 1 an error — a usage error too, since 2 already means changes.

use crate::init::{self, DownloadFetch, INIT_KEY};
use crate::options;
use crate::render::{self, TEMPLATE};
use cfn_aws::Imds;
use cfn_configsets::plan::{self, Options};
use cfn_configsets::{BuildError, Environment};
use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// Nothing would change.
const UNCHANGED: u8 = 0;
/// An error: bad input, an unreadable source, a build that would fail, a usage error.
pub const ERROR: u8 = 1;
/// Something would change.
const CHANGES: u8 = 2;

/// One option that takes a value; its id is cfn-init's optparse `dest`, so the shared
/// option translation (`options::api_options_from`) reads it.
fn value(id: &'static str, short: Option<char>, long: &'static str, name: &'static str, help: &'static str) -> Arg {
    let arg = Arg::new(id).long(long).value_name(name).help(help);
    match short {
        Some(c) => arg.short(c),
        None => arg,
    }
}

pub fn command() -> Command {
    let command = Command::new("plan")
        .about("Show what cfn-init would change on this host, changing nothing")
        .long_about(
            "Show what cfn-init would do on this host with the same input, config by config, changing nothing: \
             packages to install or upgrade, groups and users to create or change, sources to fetch and \
             extract, files to create or change (with a unified diff), commands that would run, and services \
             to enable, start or restart and why. No file, package, user, state file or log line is written.\n\n\
             The input is cfn-init's (a file, - or -s STACK -r RESOURCE), or a template resource's Metadata \
             (-t FILE -r RESOURCE, resolved as `cfn-bootstrap render` resolves it).\n\n\
             Exit status: 0 nothing would change, 2 something would, 1 an error (usage errors included).",
        )
        .arg(Arg::new("file").value_name("FILE").help("A metadata file, or - for standard input"))
        .arg(render::template_arg().conflicts_with_all(["file", "stack_name"]))
        .arg(value("stack_name", Some('s'), "stack", "STACK_NAME", "A CloudFormation stack"))
        .arg(value("logical_resource_id", Some('r'), "resource", "LOGICAL_RESOURCE_ID", "A logical resource ID"))
        .arg(value("configsets", Some('c'), "configsets", "CONFIGSETS", "configSets to plan (default: \"default\")"))
        .arg(value("region", None, "region", "REGION", "The CloudFormation region. Default: us-east-1."))
        .arg(value("cfn_url", Some('u'), "url", "ENDPOINT", "The CloudFormation service URL"))
        .arg(value("credential_file", Some('f'), "credential-file", "CREDENTIAL_FILE", "A credential file"))
        .arg(value("iam_role", None, "role", "IAM_ROLE", "An IAM Role"))
        .arg(value("access_key", None, "access-key", "ACCESS_KEY", "An AWS Access Key"))
        .arg(value("secret_key", None, "secret-key", "SECRET_KEY", "An AWS Secret Key"))
        .arg(value("http_proxy", None, "http-proxy", "HTTP_PROXY", "A (non-SSL) HTTP proxy"))
        .arg(value("https_proxy", None, "https-proxy", "HTTPS_PROXY", "An HTTPS proxy"))
        .arg(
            Arg::new("run_tests")
                .long("run-tests")
                .action(ArgAction::SetTrue)
                .help("Run commands' tests (and defaults scripts) to know whether they would run"),
        );
    render::with_template_values(command)
}

pub fn run(matches: &ArgMatches) -> ExitCode {
    let text = |id: &str| matches.get_one::<String>(id).cloned();
    let api = options::api_options_from(text);
    let imds = Arc::new(Imds::from_env());
    let metadata = match text(TEMPLATE) {
        Some(path) => match from_template(matches, &path) {
            Ok(metadata) => metadata,
            Err(message) => return error(&message),
        },
        None => {
            let file: Vec<String> = text("file").into_iter().collect();
            let source = match init::choose_source(&file, text("stack_name"), text("logical_resource_id")) {
                Ok(source) => source,
                Err(message) => return error(message),
            };
            match init::read_metadata(&source, &api, &imds) {
                Ok(metadata) => metadata,
                Err(_) => return ExitCode::from(ERROR),
            }
        }
    };
    let init = match metadata.get(INIT_KEY) {
        Some(init) if cfn_python::truth::is_truthy(init) => init,
        // cfn-init does nothing then either.
        _ => return print(&format!("No '{INIT_KEY}' key: nothing would change.\n"), UNCHANGED),
    };
    let Some(init) = init.as_object() else {
        let message = format!("{INIT_KEY} must be an object, not {}", cfn_configsets::model::kind(init));
        return error(&message);
    };
    let downloads = match DownloadFetch::new(&api, imds, &metadata) {
        Ok(downloads) => downloads,
        Err(_) => return ExitCode::from(ERROR),
    };
    let requested = cfn_configsets::configsets::requested(text("configsets").as_deref());
    let options = Options { run_tests: matches.get_flag("run_tests") };
    let plan = plan::plan(init, &requested, &Environment { fetch: &downloads }, options);
    let code = match (&plan.stopped, plan.changes()) {
        (Some(BuildError { message, .. }), _) => {
            eprintln!("cfn-bootstrap plan: cfn-init would fail: {}", cfn_aws::http::redact_urls_in(message));
            ERROR
        }
        (None, 0) => UNCHANGED,
        (None, _) => CHANGES,
    };
    print(&plan.to_string(), code)
}

/// The Metadata of `-r` in the template at `path`, resolved as `render` resolves it.
fn from_template(matches: &ArgMatches, path: &str) -> Result<Value, String> {
    let text = |id: &str| matches.get_one::<String>(id).cloned();
    let resource = text("logical_resource_id").ok_or("-t needs -r RESOURCE, the resource whose Metadata is planned")?;
    let template = render::read_template(path)?;
    render::metadata(&template, &resource, &render::inputs(matches, text("region")))
}

fn error(message: &str) -> ExitCode {
    eprintln!("cfn-bootstrap plan: {}", cfn_aws::http::redact_urls_in(message));
    ExitCode::from(ERROR)
}

/// Writes the plan; a closed pipe is an error, not a panic.
fn print(text: &str, code: u8) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Ok(()) => ExitCode::from(code),
        Err(_) => ExitCode::from(ERROR),
    }
}
