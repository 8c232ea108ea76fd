//! `cfn-signal` (SIG-01..09): tells CloudFormation that an instance is ready (or not),
//! either through a WaitConditionHandle URL or with SignalResource for a resource with
//! a CreationPolicy. The signalling itself is in the cfn-signal crate; this module reads
//! the command line, picks the mode and words the outcome as the reference does.

use crate::{logging, report};
use cfn_aws::Imds;
use cfn_aws::http::HttpClient;
use cfn_aws::retry::Policy;
use cfn_optparse::options;
pub use cfn_optparse::tables::signal as parser;
use cfn_optparse::{Parsed, Parser};
use cfn_signal::{Status, WaitConditionSignal};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use tracing::Level;

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let parser = parser(prog);
    let parsed = match report::parse(&parser, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let status = Status::from_options(parsed.int("exit_code"), parsed.text("success").as_deref());
    // LOG-07: cfn-signal always logs at DEBUG. As in the reference, the log is opened
    // before the mode is checked.
    logging::init("cfn-init.log", Level::DEBUG);

    // SIG-04: a non-empty first argument is a handle URL (further arguments are
    // ignored); otherwise `--resource`, even empty, selects SignalResource.
    let handle = parsed.positionals.first().filter(|arg| !arg.is_empty());
    match (handle, parsed.text("logical_resource_id")) {
        (Some(_), Some(_)) => {
            report::failure("Error: Cannot specify both a WaitConditionHandle URL and a logical resource id")
        }
        (Some(argument), None) => signal_handle(&parsed, argument, status),
        (None, Some(logical_id)) => signal_resource(&parser, &parsed, &logical_id, status),
        (None, None) => report::usage_failure(&parser, "No WaitConditionHandle URL or logical resource id specified"),
    }
}

/// SIG-02: `--id`, else the instance id, else the host name — looked up only now that
/// a signal is really being sent.
fn unique_id(parsed: &Parsed, imds: &Imds) -> String {
    parsed.text("id").unwrap_or_else(|| cfn_signal::default_unique_id(imds))
}

/// WaitConditionHandle mode (SIG-05..07, SIG-09).
fn signal_handle(parsed: &Parsed, argument: &str, status: Status) -> ExitCode {
    let url = match cfn_signal::handle_url(argument) {
        Ok(url) => url,
        Err(e) => return report::failure(format!("Error: {e}")),
    };
    let signal = WaitConditionSignal::new(
        status,
        &parsed.text("reason").unwrap_or_default(),
        &parsed.text("data").unwrap_or_default(),
        &unique_id(parsed, &Imds::from_env()),
    );
    // NET-02: --http-proxy/--https-proxy over the environment's proxies, as for API calls.
    let http = HttpClient::new(options::api_options(parsed).proxies, cfn_aws::api_user_agent());
    if let Err(e) = cfn_signal::send(&http, &url, &signal, &Policy::API) {
        return report::failure(format!("Error signaling CloudFormation: {e}"));
    }
    let message = format!("CloudFormation signaled successfully with {status}.");
    tracing::info!("{message}");
    let mut stdout = std::io::stdout().lock();
    // The signal is delivered either way; a closed stdout only loses the message.
    if writeln!(stdout, "{message}").and_then(|_| stdout.flush()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// SignalResource mode (SIG-08): silent on success, `<Code>: <Message>` on error.
fn signal_resource(parser: &Parser, parsed: &Parsed, logical_id: &str, status: Status) -> ExitCode {
    let Some(stack) = parsed.text("stack_name").filter(|s| !s.is_empty()) else {
        return report::usage_failure(parser, "You must specify a stack name when signaling a resource");
    };
    let imds = Arc::new(Imds::from_env());
    let client = match cfn_aws::cloudformation_client(&options::api_options(parsed), imds.clone()) {
        Ok(client) => client,
        Err(e) => return report::credential_failure(&e),
    };
    match cfn_signal::signal_resource(&client, &stack, logical_id, &unique_id(parsed, &imds), status) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report::failure(e),
    }
}
