//! Each tool's option table: what its `main` parses its command line with, what
//! `cfn-bootstrap validate` reads the tools' calls in user data and hook actions with,
//! and what the completions and the fuzzing of the parser describe. One table per tool,
//! so the three never disagree.

use crate::options;
use crate::{Group, Kind, Opt, Parser};

/// A tool's name and its option table.
pub struct Table {
    pub name: &'static str,
    pub parser: fn(&str) -> Parser,
}

/// Every tool of the multicall binary, in the order `cfn-bootstrap --help` lists them.
pub const TOOLS: &[Table] = &[
    Table { name: "cfn-init", parser: init },
    Table { name: "cfn-signal", parser: signal },
    Table { name: "cfn-hup", parser: hup },
    Table { name: "cfn-get-metadata", parser: get_metadata },
    Table { name: "cfn-elect-cmd-leader", parser: elect_leader },
    Table { name: "cfn-send-cmd-result", parser: send_result },
    Table { name: "cfn-send-cmd-event", parser: send_event },
];

/// The table of the tool called `name`, if it is one of [`TOOLS`].
pub fn of(name: &str) -> Option<Parser> {
    TOOLS.iter().find(|t| t.name == name).map(|t| (t.parser)(name))
}

pub fn init(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options]\n  or:  %prog [options] <filename>\n  or:  cat <filename> | %prog [options] -",
        options: vec![
            options::stack(),
            options::resource(),
            Opt::value(
                Some('c'),
                "configsets",
                "configsets",
                "CONFIGSETS",
                "An optional list of configSets (default: \"default\")",
            ),
            options::url(Some('u')),
            options::region(),
            options::verbose(),
        ],
        groups: vec![options::credentials_group(), options::proxy_group()],
    }
}

pub fn signal(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options] [WaitConditionHandle URL]",
        options: vec![
            Opt::value(
                Some('s'),
                "success",
                "success",
                "SUCCESS",
                "If true, signal success to CloudFormation; if false, signal failure. Default: true",
            )
            .with_kind(Kind::Choice(&["true", "false"])),
            Opt::value(Some('i'), "id", "id", "ID", "A unique ID to send with the signal"),
            Opt::value(
                Some('e'),
                "exit-code",
                "exit_code",
                "EXIT_CODE",
                "Derive success or failure from specified exit code",
            )
            .with_kind(Kind::Int),
        ],
        groups: vec![
            options::credentials_group(),
            options::proxy_group(),
            Group {
                title: "WaitConditionHandle Signal Options",
                description: None,
                options: vec![
                    Opt::value(Some('r'), "reason", "reason", "REASON", "The reason for success/failure"),
                    Opt::value(Some('d'), "data", "data", "DATA", "Data to include with the WaitCondition signal"),
                ],
            },
            Group {
                title: "Resource Signal Options",
                description: None,
                options: vec![
                    Opt::value(None, "stack", "stack_name", "STACK_NAME", "A CloudFormation stack"),
                    Opt::value(
                        None,
                        "resource",
                        "logical_resource_id",
                        "LOGICAL_RESOURCE_ID",
                        "A CloudFormation logical resource ID",
                    ),
                    // SIG-01: `-u` as the 2.0 documentation shows it (1.4 had only --url).
                    options::url(Some('u')),
                    options::region(),
                ],
            },
        ],
    }
}

pub fn hup(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options]",
        options: vec![
            Opt::value(
                Some('c'),
                "config",
                "config_path",
                "CONFIG_PATH",
                "The configuration directory (default: /etc/cfn)",
            ),
            Opt::flag(None, "no-daemon", "no_daemon", "Do not daemonize"),
            Opt::flag(
                Some('F'),
                "foreground",
                "foreground",
                "Run as a service without detaching (for systemd Type=notify)",
            ),
            Opt::flag(Some('v'), "verbose", "verbose", "Enables verbose logging"),
        ],
        groups: vec![],
    }
}

pub fn get_metadata(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options]",
        options: vec![
            options::stack(),
            options::resource(),
            Opt::value(
                Some('k'),
                "key",
                "key",
                "KEY",
                "Retrieve the value at <key> in the Metadata object; must be in dotted object notation (parent.child.leaf)",
            ),
            options::url(Some('u')),
            options::region(),
            options::verbose(),
        ],
        groups: vec![options::credentials_group(), options::proxy_group()],
    }
}

pub fn elect_leader(prog: &str) -> Parser {
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

pub fn send_result(prog: &str) -> Parser {
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

pub fn send_event(prog: &str) -> Parser {
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

// The command-hook helpers' ids (SPEC §15).
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
