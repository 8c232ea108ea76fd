//! `cfn-bootstrap`: AWS CloudFormation's helper scripts as one multicall binary
//! (CLI-COMMON-01). The tool is chosen by the name the binary is called by
//! (`/opt/aws/bin/cfn-init` → cfn-init), or by the `cfn-bootstrap` command's
//! subcommand (`cfn-bootstrap cfn-init …`, also `cfn-bootstrap init …`).
//!
//! The name is checked first and runs the tool without building the clap command, so a
//! tool's start-up does not pay for it; only `cfn-bootstrap` itself is parsed by clap
//! (`bootstrap`). The tools keep their optparse-exact parsers (`optparse`).

mod bootstrap;
mod cmd_hooks;
mod completions;
mod get_metadata;
mod hup;
mod init;
mod lifecycle;
mod logging;
mod manpages;
mod plan;
mod render;
mod report;
mod run_recorder;
mod signal;
mod status;

use std::process::ExitCode;

/// The static musl build allocates with dlmalloc. musl's own allocator hands memory back
/// to the kernel as soon as a group of blocks is free: an `mmap`, page faults and a
/// `munmap` each time, about a tenth of a cfn-init run's CPU. dlmalloc keeps freed
/// memory until 2 MiB of it sit unused (then trims), so a short run maps its heap once.
/// The glibc build keeps glibc's allocator, which already works this way.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

pub struct Tool {
    pub name: &'static str,
    /// One line for `cfn-bootstrap --help`.
    pub about: &'static str,
    pub main: fn(&str, &[String]) -> ExitCode,
    /// The tool's option table, which its `main` parses with; completions describe it.
    pub parser: fn(&str) -> cfn_optparse::Parser,
}

impl Tool {
    /// The name without `cfn-`, which `cfn-bootstrap` accepts too (`init`).
    pub fn short_name(&self) -> &'static str {
        self.name.strip_prefix("cfn-").unwrap_or(self.name)
    }
}

pub const TOOLS: &[Tool] = &[
    Tool {
        name: "cfn-init",
        about: "Run the configSets of AWS::CloudFormation::Init",
        main: init::main,
        parser: init::parser,
    },
    Tool {
        name: "cfn-signal",
        about: "Signal a CreationPolicy or a WaitConditionHandle",
        main: signal::main,
        parser: signal::parser,
    },
    Tool { name: "cfn-hup", about: "Run hooks on metadata changes and commands", main: hup::main, parser: hup::parser },
    Tool {
        name: "cfn-get-metadata",
        about: "Print a resource's metadata, or one value in it",
        main: get_metadata::main,
        parser: get_metadata::parser,
    },
    Tool {
        name: "cfn-elect-cmd-leader",
        about: "Elect the listener that runs a command",
        main: cmd_hooks::elect_leader,
        parser: cmd_hooks::elect_leader_parser,
    },
    Tool {
        name: "cfn-send-cmd-result",
        about: "Send a command's result",
        main: cmd_hooks::send_result,
        parser: cmd_hooks::send_result_parser,
    },
    Tool {
        name: "cfn-send-cmd-event",
        about: "Send a command's event",
        main: cmd_hooks::send_event,
        parser: cmd_hooks::send_event_parser,
    },
];

/// The file name the binary was called by, without a directory or `.exe`.
fn invoked_name(argv0: &str) -> &str {
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    base.strip_suffix(".exe").unwrap_or(base)
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let argv0 = argv.first().map(String::as_str).unwrap_or("cfn-bootstrap");
    let name = invoked_name(argv0);
    if let Some(tool) = TOOLS.iter().find(|t| t.name == name) {
        return (tool.main)(name, &argv[1..]);
    }
    bootstrap::main(&argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_come_from_the_file_name() {
        assert_eq!(invoked_name("/opt/aws/bin/cfn-init"), "cfn-init");
        assert_eq!(invoked_name("cfn-signal.exe"), "cfn-signal");
        assert_eq!(invoked_name("./cfn-bootstrap"), "cfn-bootstrap");
    }

    #[test]
    fn every_tool_parses_with_its_own_table() {
        let tables: Vec<&str> = cfn_optparse::tables::TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(TOOLS.iter().map(|t| t.name).collect::<Vec<_>>(), tables);
        for tool in TOOLS {
            let table = cfn_optparse::tables::of(tool.name).unwrap();
            assert_eq!(format!("{:?}", (tool.parser)(tool.name).options), format!("{:?}", table.options));
        }
    }

    #[test]
    fn every_tool_has_a_distinct_short_name() {
        let mut names: Vec<&str> = TOOLS.iter().flat_map(|t| [t.name, t.short_name()]).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len() * 2);
        assert_eq!(TOOLS[0].short_name(), "init");
    }
}
