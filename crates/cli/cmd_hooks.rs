//! The command-hook helpers `cfn-elect-cmd-leader`, `cfn-send-cmd-result` and
//! `cfn-send-cmd-event` (SPEC §15): command lines in place, behaviour not built yet.

use crate::optparse::{Kind, Opt, Parser};
use crate::{options, report};
use std::process::ExitCode;

fn command_name() -> Opt {
    Opt::value(Some('c'), "command-name", "command_name", "COMMAND_NAME", "The command name")
}
fn invocation_id() -> Opt {
    Opt::value(Some('i'), "invocation-id", "invocation_id", "INVOCATION_ID", "The invocation ID")
}
fn listener_id() -> Opt {
    Opt::value(Some('l'), "listener-id", "listener_id", "LISTENER_ID", "The listener ID")
}
fn dispatcher_id() -> Opt {
    Opt::value(Some('d'), "dispatcher-id", "dispatcher_id", "DISPATCHER_ID", "The dispatcher ID")
}

pub fn elect_leader_parser(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options]",
        options: vec![
            options::stack(),
            command_name(),
            invocation_id(),
            listener_id(),
            options::url(Some('u')),
            options::region(),
            options::verbose(),
        ],
        groups: vec![options::credentials_group(), options::proxy_group()],
    }
}

pub fn send_result_parser(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options] [Command Result Data]",
        options: vec![
            options::access_key(),
            options::secret_key(),
            Opt::value(None, "token", "security_token", "SECURITY_TOKEN", "An AWS Session Token"),
            Opt::value(
                Some('q'),
                "queue-url",
                "queue_url",
                "QUEUE_URL",
                "SQS Queue URL for storing the command result",
            ),
            dispatcher_id(),
            command_name(),
            invocation_id(),
            listener_id(),
            Opt::value(
                Some('s'),
                "success",
                "success",
                "SUCCESS",
                "If true, signal success; if false, signal failure. Default: true",
            )
            .with_kind(Kind::Choice(&["true", "false"])),
            Opt::value(
                Some('e'),
                "exit-code",
                "exit_code",
                "EXIT_CODE",
                "Derive success or failure from specified exit code. Note: This takes precedence over the success flag",
            )
            .with_kind(Kind::Int),
        ],
        groups: vec![options::proxy_group()],
    }
}

pub fn send_event_parser(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options] [Command Event Message]",
        options: vec![
            Opt::value(None, "event-handle", "event_handle", "EVENT_HANDLE", "Event Handle URL"),
            Opt::value(
                Some('e'),
                "event-id",
                "event_id",
                "EVENT_ID",
                "An id that uniquely identifies the event for this command and listener",
            ),
            Opt::value(
                Some('t'),
                "event-timestamp",
                "event_timestamp",
                "EVENT_TIMESTAMP",
                "The time the event occurred, in ISO 8601 form",
            ),
            dispatcher_id(),
            command_name(),
            invocation_id(),
            listener_id(),
        ],
        groups: vec![options::proxy_group()],
    }
}

fn run(parser: Parser, args: &[String]) -> ExitCode {
    match report::parse(&parser, args) {
        Ok(_) => report::not_implemented(&parser.prog),
        Err(code) => code,
    }
}

pub fn elect_leader(prog: &str, args: &[String]) -> ExitCode {
    run(elect_leader_parser(prog), args)
}

pub fn send_result(prog: &str, args: &[String]) -> ExitCode {
    run(send_result_parser(prog), args)
}

pub fn send_event(prog: &str, args: &[String]) -> ExitCode {
    run(send_event_parser(prog), args)
}
