//! `cfn-signal` (SPEC §12): its command line is in place; signalling lands with the
//! signal crate.

use crate::optparse::{Group, Kind, Opt, Parser};
use crate::{options, report};
use std::process::ExitCode;

pub fn parser(prog: &str) -> Parser {
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
                    options::url(None),
                    options::region(),
                ],
            },
        ],
    }
}

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    match report::parse(&parser(prog), args) {
        Ok(_) => report::not_implemented(prog),
        Err(code) => code,
    }
}
