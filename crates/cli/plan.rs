//! `cfn-bootstrap plan`: what cfn-init would do on this host with the same input, config
//! by config, changing nothing (no file, package, user, state file or log line).
//!
//! Exit codes, as `terraform plan -detailed-exitcode` has them: 0 nothing would change,
//! 2 something would, 1 an error — a usage error too, since 2 already means changes.

use crate::init::{self, DownloadFetch, INIT_KEY};
use cfn_aws::Imds;
use cfn_configsets::plan::{self, Options};
use cfn_configsets::{BuildError, Environment};
use cfn_linter::template_input::{self as render, TEMPLATE};
use cfn_optparse::options;
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
        .args(options::stack_args())
        .arg(
            Arg::new("configsets")
                .short('c')
                .long("configsets")
                .value_name("CONFIGSETS")
                .help("configSets to plan (default: \"default\")"),
        )
        .args(options::api_args())
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
            let source = match cfn_metadata::source::choose(&file, text("stack_name"), text("logical_resource_id")) {
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
