//! `cfn-bootstrap`: AWS CloudFormation's helper scripts as one multicall binary
//! (CLI-COMMON-01). The tool is chosen by the name the binary is called by
//! (`/opt/aws/bin/cfn-init` → cfn-init), or by the first argument
//! (`cfn-bootstrap cfn-init …`, also `cfn-bootstrap init …`).

mod cmd_hooks;
mod get_metadata;
mod hup;
mod init;
mod logging;
mod options;
mod optparse;
mod report;
mod signal;

use std::process::ExitCode;

struct Tool {
    name: &'static str,
    main: fn(&str, &[String]) -> ExitCode,
}

const TOOLS: &[Tool] = &[
    Tool { name: "cfn-init", main: init::main },
    Tool { name: "cfn-signal", main: signal::main },
    Tool { name: "cfn-hup", main: hup::main },
    Tool { name: "cfn-get-metadata", main: get_metadata::main },
    Tool { name: "cfn-elect-cmd-leader", main: cmd_hooks::elect_leader },
    Tool { name: "cfn-send-cmd-result", main: cmd_hooks::send_result },
    Tool { name: "cfn-send-cmd-event", main: cmd_hooks::send_event },
];

fn find_tool(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name || t.name.strip_prefix("cfn-") == Some(name))
}

/// The file name the binary was called by, without a directory or `.exe`.
fn invoked_name(argv0: &str) -> &str {
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    base.strip_suffix(".exe").unwrap_or(base)
}

fn usage() -> String {
    let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    format!(
        "Usage: cfn-bootstrap <tool> [options]\n       cfn-bootstrap --list | --version\n\n\
         Tools: {}\nInstalled as a link named after a tool (e.g. /opt/aws/bin/cfn-init), it runs that tool.\n",
        names.join(", ")
    )
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let argv0 = argv.first().map(String::as_str).unwrap_or("cfn-bootstrap");
    let name = invoked_name(argv0);
    if let Some(tool) = TOOLS.iter().find(|t| t.name == name) {
        return (tool.main)(name, &argv[1..]);
    }
    match argv.get(1).map(String::as_str) {
        Some("--list") => {
            for tool in TOOLS {
                println!("{}", tool.name);
            }
            ExitCode::SUCCESS
        }
        Some("--version" | "-V") => {
            println!("cfn-bootstrap {}", cfn_metadata::VERSION);
            ExitCode::SUCCESS
        }
        Some("--help" | "-h") => {
            print!("{}", usage());
            ExitCode::SUCCESS
        }
        Some(arg) => match find_tool(arg) {
            Some(tool) => (tool.main)(tool.name, &argv[2..]),
            None => {
                eprint!("cfn-bootstrap: unknown tool '{arg}'\n\n{}", usage());
                ExitCode::from(2)
            }
        },
        None => {
            eprint!("{}", usage());
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_come_from_the_file_name() {
        assert_eq!(invoked_name("/opt/aws/bin/cfn-init"), "cfn-init");
        assert_eq!(invoked_name("cfn-signal.exe"), "cfn-signal");
        assert_eq!(invoked_name("./cfn-bootstrap"), "cfn-bootstrap");
        assert_eq!(find_tool("init").map(|t| t.name), Some("cfn-init"));
        assert_eq!(find_tool("cfn-get-metadata").map(|t| t.name), Some("cfn-get-metadata"));
        assert!(find_tool("bogus").is_none());
    }
}
