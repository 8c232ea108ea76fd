//! `cfn-send-cmd-event` (CMDT-03): PUTs a progress event of a running command to the
//! command's presigned event handle (`--event-handle` or `EVENT_HANDLE`, a URL or its
//! base64 encoding), with the generic HTTP retry rules. Prints
//! `Command Event with id <id> sent successfully.` on success.
//!
//! BUG-EVENTNULL fixed: without a handle the reference crashed with a traceback; here it
//! is `Error: You must specify an EventHandle` with the help, exit 1. A handle that is
//! neither a URL nor base64 is refused with the reference's "Invalid EventHandle URL"
//! message instead of a decoding traceback.

use super::{command_ids, option_or_env};
use crate::{logging, report};
use cfn_aws::http::{self, HttpClient};
use cfn_aws::presigned;
use cfn_aws::retry::Policy;
use cfn_hooks::command_result::{self as command, CommandEvent};
use cfn_optparse::options;
pub use cfn_optparse::tables::send_event as parser;
use std::io::Write;
use std::process::ExitCode;
use tracing::Level;

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let parser = parser(prog);
    let parsed = match report::parse(&parser, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    // As in the reference, the handle is checked before the ids.
    let Some(handle) = option_or_env(&parsed, "event_handle", "EVENT_HANDLE") else {
        return report::usage_failure(&parser, "You must specify an EventHandle");
    };
    let url = match presigned::decode_url(&handle) {
        Ok(url) => url,
        Err(decoded) => {
            return report::failure(format!(
                "Error: Invalid EventHandle URL specified: {}",
                http::redact_url(&decoded)
            ));
        }
    };
    let ids = match command_ids(&parser, &parsed) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    // LOG-07: always DEBUG, like cfn-signal.
    logging::init("cfn-init.log", Level::DEBUG);
    let event = CommandEvent {
        ids,
        event_id: parsed.text("event_id").filter(|id| !id.is_empty()).unwrap_or_else(command::random_uuid),
        timestamp: parsed
            .text("event_timestamp")
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| command::utc_timestamp(chrono::Utc::now())),
        message: parsed.positionals.join(" "),
    };
    // NET-02: --http-proxy/--https-proxy over the environment's proxies.
    let http = HttpClient::new(options::api_options(&parsed).proxies, cfn_aws::api_user_agent());
    if let Err(e) = command::send_event(&http, &url, &event, &Policy::API) {
        return report::failure(format!("Error sending Command Event: {e}"));
    }
    let message = format!("Command Event with id {} sent successfully.", event.event_id);
    tracing::info!("{message}");
    let mut stdout = std::io::stdout().lock();
    // The event is delivered either way; a closed stdout only loses the message.
    if writeln!(stdout, "{message}").and_then(|_| stdout.flush()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
