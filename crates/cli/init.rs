//! `cfn-init` (SPEC §9–10): its command line is in place; the build engine lands with
//! the configsets crate.

use crate::optparse::{Opt, Parser};
use crate::{options, report};
use std::process::ExitCode;

pub fn parser(prog: &str) -> Parser {
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

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    match report::parse(&parser(prog), args) {
        Ok(_) => report::not_implemented(prog),
        Err(code) => code,
    }
}
