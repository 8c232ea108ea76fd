//! `cfn-hup` (SPEC §14): its command line is in place; the daemon lands with the
//! hooks crate.

use crate::optparse::{Opt, Parser};
use crate::report;
use std::process::ExitCode;

pub fn parser(prog: &str) -> Parser {
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
            Opt::flag(Some('v'), "verbose", "verbose", "Enables verbose logging"),
        ],
        groups: vec![],
    }
}

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    match report::parse(&parser(prog), args) {
        Ok(_) => report::not_implemented(prog),
        Err(code) => code,
    }
}
