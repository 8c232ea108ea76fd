//! The `cfn-bootstrap` command itself, parsed by clap: `--list`, `--version`, `--help`,
//! a subcommand per tool (full name, and the short name as an alias), `completions` and
//! `man`.
//!
//! A tool subcommand takes every following argument untouched and hands it to the
//! tool's own optparse-exact parser, so `cfn-bootstrap cfn-init --help` prints the
//! reference's help and `cfn-bootstrap init -s x` is `cfn-init -s x`.

use crate::{TOOLS, Tool, completions, init, lifecycle, manpages, plan, render, status};
use cfn_doctor as doctor;
use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};
use clap_complete::Shell;
use std::io::Write;
use std::process::ExitCode;

const ARGS: &str = "args";

/// The command as it is parsed: the tools' subcommands pass their arguments through.
pub fn command() -> Command {
    with_tools(TOOLS.iter().map(pass_through))
}

/// The command as completions describe it: each tool subcommand with the options of its
/// optparse table.
pub fn described_command() -> Command {
    with_tools(TOOLS.iter().map(|tool| completions::tool_command(tool).visible_alias(tool.short_name())))
}

fn with_tools(tools: impl Iterator<Item = Command>) -> Command {
    Command::new("cfn-bootstrap")
        .bin_name("cfn-bootstrap")
        .version(cfn_aws::VERSION)
        .about("AWS CloudFormation helper scripts as one binary")
        .after_help(
            "Each tool takes the options of AWS's script: cfn-bootstrap TOOL --help.\n\
             Installed as a link named after a tool (e.g. /opt/aws/bin/cfn-init), the binary runs that tool.",
        )
        .arg_required_else_help(true)
        .args_conflicts_with_subcommands(true)
        // clap's `help TOOL` would describe the pass-through subcommand, not the tool:
        // ours (below) prints the tool's own help.
        .disable_help_subcommand(true)
        .arg(Arg::new("list").long("list").action(ArgAction::SetTrue).help("List the tools, one per line"))
        .subcommands(tools)
        .subcommand(
            Command::new("help").about("Print this help, or the help of a tool or subcommand").arg(
                Arg::new("command").value_name("COMMAND").value_parser(
                    TOOLS
                        .iter()
                        .flat_map(|t| [t.name, t.short_name()])
                        .chain(["completions", "doctor", "lifecycle", "man", "plan", "render", "status", "validate"])
                        .collect::<Vec<_>>(),
                ),
            ),
        )
        .subcommand(
            Command::new("completions")
                .about("Print a shell completion script for cfn-bootstrap and the tools")
                .long_about(
                    "Print a shell completion script.\n\n\
                     Without COMMAND: one script for cfn-bootstrap and every tool name, to be sourced\n\
                     (e.g. `source <(cfn-bootstrap completions bash)`).\n\
                     With COMMAND: that command's script alone, for a completion directory\n\
                     (bash-completion's completions/cfn-init, zsh's _cfn-init, fish's cfn-init.fish).",
                )
                .arg(Arg::new("shell").required(true).value_name("SHELL").value_parser(value_parser!(Shell)))
                .arg(
                    Arg::new("command")
                        .value_name("COMMAND")
                        .value_parser(
                            std::iter::once("cfn-bootstrap").chain(TOOLS.iter().map(|t| t.name)).collect::<Vec<_>>(),
                        )
                        .help("Only this command's script"),
                ),
        )
        .subcommand(
            Command::new("man")
                .about("Print a manual page, or write them all into a directory")
                .long_about(
                    "Print the manual page (roff, section 1) of cfn-bootstrap, one of its subcommands\n\
                     (cfn-bootstrap-completions) or a tool (cfn-init), e.g. `cfn-bootstrap man cfn-init | man -l -`;\n\
                     with --dir, write every page into DIR as NAME.1 (e.g. /usr/share/man/man1).",
                )
                // The names are checked when the page is looked up: they are made from
                // this command, so listing them here would build it within itself.
                .arg(Arg::new("name").value_name("NAME").help("The page's name (default: cfn-bootstrap)"))
                .arg(
                    Arg::new("dir")
                        .long("dir")
                        .value_name("DIR")
                        .value_hint(clap::ValueHint::DirPath)
                        .conflicts_with("name")
                        .help("Write every page into DIR"),
                ),
        )
        .subcommand(doctor::command())
        .subcommand(lifecycle::command())
        .subcommand(plan::command())
        .subcommand(render::command())
        .subcommand(status::command())
        .subcommand(cfn_linter::command())
}

/// A tool's subcommand for parsing: everything after it is the tool's, `--help` included.
fn pass_through(tool: &Tool) -> Command {
    Command::new(tool.name)
        .visible_alias(tool.short_name())
        .about(tool.about)
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(Arg::new(ARGS).value_name("OPTIONS").num_args(0..).allow_hyphen_values(true).trailing_var_arg(true))
}

/// Runs `cfn-bootstrap` with its full argv (the program name first).
pub fn main(argv: &[String]) -> ExitCode {
    let matches = match command().try_get_matches_from(argv) {
        Ok(matches) => matches,
        Err(error) => {
            // Help and version go to stdout with 0, usage errors to stderr with 2.
            let _ = error.print();
            // plan's exit 2 means "changes": its usage errors are 1.
            if error.use_stderr() && argv.get(1).is_some_and(|a| a == "plan") {
                return ExitCode::from(plan::ERROR);
            }
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    run(&matches, argv)
}

fn run(matches: &ArgMatches, argv: &[String]) -> ExitCode {
    match matches.subcommand() {
        Some(("completions", sub)) => {
            let Some(shell) = sub.get_one::<Shell>("shell").copied() else { return ExitCode::from(2) };
            let only = sub.get_one::<String>("command").map(String::as_str);
            let mut stdout = std::io::stdout().lock();
            match completions::write(shell, only, &mut stdout) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Some(("man", sub)) => man(sub.get_one::<String>("name").map(String::as_str), sub.get_one::<String>("dir")),
        Some(("doctor", sub)) => doctor::run(sub),
        Some(("lifecycle", sub)) => lifecycle::run(sub),
        Some(("status", sub)) => status::run(sub),
        Some(("help", sub)) => help(sub.get_one::<String>("command").map(String::as_str)),
        Some(("plan", sub)) => plan::run(sub),
        Some(("render", sub)) => render::run(sub),
        Some(("validate", sub)) => cfn_linter::run(sub, init::read_for_validate),
        Some((name, _)) => match TOOLS.iter().find(|t| t.name == name) {
            Some(tool) => (tool.main)(tool.name, tool_args(tool, argv)),
            None => ExitCode::from(2),
        },
        None if matches.get_flag("list") => {
            // Written, not `println!`ed: a closed pipe is exit 1, not a panic.
            let names: String = TOOLS.iter().map(|t| format!("{}\n", t.name)).collect();
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(names.as_bytes()).and_then(|_| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        None => ExitCode::from(2),
    }
}

/// The arguments after the tool's subcommand, exactly as given. They are taken from argv,
/// not from clap's values, because clap drops a leading `--`, which ends the tool's
/// options (`cfn-bootstrap cfn-init -- --help` reads a file named `--help`). The
/// subcommand is the first argument naming the tool: `cfn-bootstrap`'s own options take
/// no values and cannot be combined with a subcommand.
fn tool_args<'a>(tool: &Tool, argv: &'a [String]) -> &'a [String] {
    let position = argv.iter().skip(1).position(|a| a == tool.name || a == tool.short_name());
    position.map_or(&[], |i| &argv[i + 2..])
}

/// `cfn-bootstrap man [NAME]` prints a page; `--dir DIR` writes them all and lists them.
fn man(name: Option<&str>, dir: Option<&String>) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    if let Some(dir) = dir {
        return match manpages::write_all(std::path::Path::new(dir)) {
            Ok(written) => {
                let list: String = written.iter().map(|p| format!("{}\n", p.display())).collect();
                if stdout.write_all(list.as_bytes()).is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
            }
            Err(e) => {
                eprintln!("cfn-bootstrap man: could not write the pages into {dir}: {}", cfn_python::strerror(&e));
                ExitCode::FAILURE
            }
        };
    }
    let name = name.unwrap_or("cfn-bootstrap");
    let Some(page) = manpages::page(name) else {
        eprintln!("cfn-bootstrap man: no manual page named {name}; the pages are: {}", manpages::names().join(", "));
        return ExitCode::from(2);
    };
    match stdout.write_all(&page).and_then(|_| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// `cfn-bootstrap help [COMMAND]`: a tool's own help (as `TOOL --help` prints it), or
/// clap's help of `cfn-bootstrap` or `completions`.
fn help(name: Option<&str>) -> ExitCode {
    if let Some(tool) = name.and_then(|n| TOOLS.iter().find(|t| t.name == n || t.short_name() == n)) {
        return (tool.main)(tool.name, &["--help".to_string()]);
    }
    let mut command = command();
    // Built, so a subcommand's usage line reads `cfn-bootstrap completions …`.
    command.build();
    let printed = match name.and_then(|n| command.find_subcommand_mut(n)) {
        Some(sub) => sub.print_long_help(),
        None => command.print_long_help(),
    };
    if printed.is_err() { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        std::iter::once("cfn-bootstrap").chain(args.iter().copied()).map(String::from).collect()
    }

    #[test]
    fn the_command_is_valid() {
        command().debug_assert();
    }

    #[test]
    fn tool_arguments_are_everything_after_the_subcommand() {
        let tool = &TOOLS[0];
        assert_eq!(tool_args(tool, &argv(&["init", "--", "-s", "init"])), &argv(&["--", "-s", "init"])[1..]);
        assert_eq!(tool_args(tool, &argv(&["cfn-init"])), Vec::<String>::new());
        let matches = command().try_get_matches_from(argv(&["init", "--", "--help"])).unwrap();
        assert_eq!(matches.subcommand_name(), Some("cfn-init"));
    }
}
