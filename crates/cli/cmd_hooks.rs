//! The command-hook helpers (SPEC §15), which cfn-hup's command hooks call from their
//! actions; each reads its ids from the options or from the environment variables
//! cfn-hup sets for the action (`STACK_NAME`, `CMD_NAME`, `INVOCATION_ID`,
//! `LISTENER_ID`, `DISPATCHER_ID`, `RESULT_QUEUE`, `RESULT_*` keys, `EVENT_HANDLE`):
//!
//! * `cfn-elect-cmd-leader` (CMDT-01, `leader`): ElectCommandLeader; exit 0 when this
//!   listener leads, 5 when another one does, 1 on error;
//! * `cfn-send-cmd-result` (CMDT-02, `result`): the result as an SQS message, signed
//!   for the queue's own region (BUG-SQSREGION fixed);
//! * `cfn-send-cmd-event` (CMDT-03, `event`): an event PUT to the presigned event
//!   handle; a missing handle is an error message, not a crash (BUG-EVENTNULL fixed).
//!
//! The API calls and message formats are in the metadata crate (`cfn`, `sqs`,
//! `command`); these modules read the command line and word the outcome.

mod event;
mod leader;
mod result;

use crate::report;
use cfn_optparse::{Parsed, Parser};
use std::process::ExitCode;

pub use event::main as send_event;
pub use event::parser as send_event_parser;
pub use leader::main as elect_leader;
pub use leader::parser as elect_leader_parser;
pub use result::main as send_result;
pub use result::parser as send_result_parser;

/// An id from its option, else from its environment variable; empty counts as absent.
/// `Err` is the reference's `Error: You must specify <name>` with the help, exit 1.
fn required(parser: &Parser, parsed: &Parsed, dest: &str, env: &str, name: &str) -> Result<String, ExitCode> {
    match option_or_env(parsed, dest, env) {
        Some(value) => Ok(value),
        None => Err(report::usage_failure(parser, &format!("You must specify {name}"))),
    }
}

/// An option's value, else its environment variable's, as the reference's option
/// defaults come from the environment; empty counts as absent.
fn option_or_env(parsed: &Parsed, dest: &str, env: &str) -> Option<String> {
    parsed.text(dest).or_else(|| std::env::var(env).ok()).filter(|v| !v.is_empty())
}

/// The ids every command message carries, in the reference's order of checking.
fn command_ids(parser: &Parser, parsed: &Parsed) -> Result<cfn_hooks::command_result::CommandIds, ExitCode> {
    Ok(cfn_hooks::command_result::CommandIds {
        dispatcher_id: required(parser, parsed, "dispatcher_id", "DISPATCHER_ID", "DispatcherId")?,
        command_name: required(parser, parsed, "command_name", "CMD_NAME", "CommandName")?,
        invocation_id: required(parser, parsed, "invocation_id", "INVOCATION_ID", "InvocationId")?,
        listener_id: required(parser, parsed, "listener_id", "LISTENER_ID", "ListenerId")?,
    })
}
