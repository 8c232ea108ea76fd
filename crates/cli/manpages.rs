//! Manual pages (section 1), rendered by clap_mangen from the commands the help and the
//! completions are made of: a tool's page from its optparse table (through
//! `completions::tool_command`), `cfn-bootstrap`'s and its subcommands' from the clap
//! command. Only what an option table cannot hold — what a tool does, its exit status,
//! its files — is written here, once per tool.

use crate::{TOOLS, Tool, bootstrap, completions};
use clap::Command;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What a page says beyond the options.
struct Extra {
    description: &'static str,
    /// `(status, meaning)` pairs.
    exit: &'static [(&'static str, &'static str)],
    files: &'static [(&'static str, &'static str)],
}

const USAGE_ERROR: (&str, &str) = ("2", "The options could not be parsed (the message names the option).");

fn extra(name: &str) -> Extra {
    match name {
        "cfn-init" => Extra {
            description: "Reads the AWS::CloudFormation::Init metadata of a stack resource (or of a file, \
                or of standard input with -) and applies the configSets it is asked for: packages, groups, \
                users, sources, files, commands and services, in that order within each config.",
            exit: &[
                ("0", "Every config was applied, or the metadata has no AWS::CloudFormation::Init key."),
                ("1", "An error; the message is on standard error and in cfn-init.log."),
                USAGE_ERROR,
            ],
            files: &[
                ("/var/log/cfn-init.log", "what cfn-init did (mode 0600 when created)"),
                ("/var/log/cfn-init-cmd.log", "each command and package tool run, with its output"),
                ("/var/lib/cfn-init/data/metadata.json", "the metadata of the last run (mode 0600)"),
                ("/var/lib/cfn-init/runs", "a record of each of the last 10 runs (cfn-bootstrap status)"),
            ],
        },
        "cfn-signal" => Extra {
            description: "Signals success or failure to a resource's CreationPolicy or UpdatePolicy \
                (SignalResource, with -s and -r) or to a WaitConditionHandle URL.",
            exit: &[("0", "The signal was sent."), ("1", "An error; the message is on standard error."), USAGE_ERROR],
            files: &[("/var/log/cfn-init.log", "the signal sent and any error")],
        },
        "cfn-hup" => Extra {
            description: "Polls a stack's metadata and runs the actions of the hooks whose path changed \
                (update hooks), and runs the commands sent to command hooks. It runs as a daemon unless \
                --no-daemon (one pass) or --foreground is given.",
            exit: &[
                ("0", "The daemon started, or the single pass ended."),
                ("1", "An error in the configuration or at start; the message is on standard error."),
                USAGE_ERROR,
            ],
            files: &[
                ("/etc/cfn/cfn-hup.conf", "the main configuration ([main]: stack, region, interval, ...)"),
                ("/etc/cfn/hooks.conf", "hooks; more in /etc/cfn/hooks.d/*.conf"),
                ("/var/log/cfn-hup.log", "what cfn-hup did"),
                ("/var/run/cfn-hup.pid", "the daemon's process id, locked while it runs"),
                ("/var/lib/cfn-hup/data/metadata_db.json", "the last value seen at each hook's path"),
                ("/var/lib/cfn-hup/data/commands_run.json", "the command messages already run"),
                ("/var/lib/cfn-hup/data/activity.json", "its last pass, last error and last hook runs"),
            ],
        },
        "cfn-get-metadata" => Extra {
            description: "Prints a stack resource's metadata as JSON, or the value at one dotted key path \
                in it (-k).",
            exit: &[
                ("0", "The metadata (or the value) was printed."),
                ("1", "An error, including a key that is not there; the message is on standard error."),
                USAGE_ERROR,
            ],
            files: &[("/var/log/cfn-init.log", "errors and, with -v, the calls made")],
        },
        "cfn-elect-cmd-leader" => Extra {
            description: "Asks CloudFormation which listener runs a command sent to a command hook; meant \
                for a hook's action, which finds the command's ids in its environment.",
            exit: &[
                ("0", "This listener is the leader."),
                ("5", "Another listener is the leader."),
                ("1", "An error; the message is on standard error."),
                USAGE_ERROR,
            ],
            files: &[],
        },
        "cfn-send-cmd-result" => Extra {
            description: "Sends a command's result to the queue the command message names; meant for a \
                command hook's action.",
            exit: &[("0", "The result was sent."), ("1", "An error; the message is on standard error."), USAGE_ERROR],
            files: &[],
        },
        "cfn-send-cmd-event" => Extra {
            description: "Sends a command's event to its event handle; meant for a command hook's action.",
            exit: &[("0", "The event was sent."), ("1", "An error; the message is on standard error."), USAGE_ERROR],
            files: &[],
        },
        "cfn-bootstrap-lifecycle" => Extra {
            description: "",
            exit: &[
                ("0", "The lifecycle action was completed, or none waited any more."),
                ("1", "It could not be completed; the message is on standard error."),
                ("2", "The command line could not be parsed."),
            ],
            files: &[],
        },
        "cfn-bootstrap-status" => Extra {
            description: "",
            exit: &[
                ("0", "cfn-init's last run succeeded."),
                (
                    "1",
                    "It failed, or was interrupted: its process ended without recording an outcome; or its records \
                     cannot be read (the message is on standard error).",
                ),
                ("2", "It is running, never ran, or --wait timed out; or the command line could not be parsed."),
            ],
            files: &[
                ("/var/lib/cfn-init/runs", "cfn-init's records of its last 10 runs, one JSON file each"),
                ("/var/lib/cfn-hup/data/activity.json", "cfn-hup's last pass, last error and last hook runs"),
            ],
        },
        "cfn-bootstrap" => Extra {
            description: "With a tool's subcommand (cfn-bootstrap init ...) the exit status is the tool's own \
                (see its page).",
            exit: &[
                ("0", "Success."),
                ("1", "An error; the message is on standard error."),
                ("2", "The command line could not be parsed."),
            ],
            files: &[],
        },
        "cfn-bootstrap-plan" => Extra {
            description: "Takes cfn-init's inputs and prints, per config, what cfn-init would change on this \
                host. Nothing is changed: no file, package, user, state file or log line.",
            exit: &[
                ("0", "Nothing would change."),
                ("2", "Something would change."),
                ("1", "An error (bad input, a build that would fail, or options that could not be parsed)."),
            ],
            files: &[],
        },
        "cfn-bootstrap-render" => Extra {
            description: "",
            exit: &[
                ("0", "The Metadata was printed."),
                (
                    "1",
                    "The template cannot be read, parsed or resolved (the message names the expression and its line).",
                ),
                USAGE_ERROR,
            ],
            files: &[],
        },
        _ => Extra {
            description: "",
            exit: &[("0", "Success."), ("1", "An error; the message is on standard error."), USAGE_ERROR],
            files: &[],
        },
    }
}

/// The name of every page: `cfn-bootstrap`, one per subcommand of its own
/// (`cfn-bootstrap-completions`), one per tool.
pub fn names() -> Vec<String> {
    let mut names = vec!["cfn-bootstrap".to_string()];
    names.extend(own_subcommands().map(|sub| format!("cfn-bootstrap-{}", sub.get_name())));
    names.extend(TOOLS.iter().map(|tool| tool.name.to_string()));
    names
}

/// `cfn-bootstrap`'s subcommands other than the tools (which have pages of their own).
fn own_subcommands() -> impl Iterator<Item = Command> {
    bootstrap::command()
        .get_subcommands()
        .filter(|sub| !is_tool(sub.get_name()))
        .cloned()
        .collect::<Vec<_>>()
        .into_iter()
}

fn is_tool(name: &str) -> bool {
    TOOLS.iter().any(|t| t.name == name)
}

/// The page named `name`, in roff; `None` for a name that has none.
pub fn page(name: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let rendered = if let Some(tool) = TOOLS.iter().find(|t| t.name == name) {
        tool_page(tool, &mut out)
    } else if name == "cfn-bootstrap" {
        // Tools are listed by their own pages' names; the other subcommands by theirs.
        let subcommands = bootstrap::command()
            .get_subcommands()
            .map(|sub| {
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                let (names, page) = if is_tool(sub.get_name()) {
                    let aliases = sub.get_visible_aliases().map(|a| format!(", {a}")).collect::<String>();
                    (format!("{}{aliases}", sub.get_name()), sub.get_name().to_string())
                } else {
                    (sub.get_name().to_string(), format!("cfn-bootstrap-{}", sub.get_name()))
                };
                (names, format!("{about}: {page}(1)"))
            })
            .collect::<Vec<_>>();
        let command = bootstrap::command();
        let extra = extra(name);
        let after_help = command.get_after_help().map(|a| a.to_string()).unwrap_or_default();
        let description = format!("{after_help}\n\n{}", extra.description);
        render(command, &description, &extra, &subcommands, &see_also_tools(), &mut out)
    } else {
        let sub = name.strip_prefix("cfn-bootstrap-")?;
        let command = own_subcommands().find(|c| c.get_name() == sub)?;
        let description = command.get_long_about().map(|a| a.to_string()).unwrap_or_default();
        // The page's title and synopsis name the command as it is typed.
        let command = command.display_name(name.to_string()).bin_name(format!("cfn-bootstrap {sub}"));
        render(command, &description, &extra(name), &[], &["cfn-bootstrap".to_string()], &mut out)
    };
    // Writing into a Vec cannot fail.
    rendered.ok()?;
    Some(out)
}

fn tool_page(tool: &Tool, out: &mut Vec<u8>) -> io::Result<()> {
    let extra = extra(tool.name);
    // One paragraph per form of the usage line, as the tool's --help shows them.
    let usage = (tool.parser)(tool.name).usage.replace("%prog", tool.name);
    let forms: Vec<&str> = usage.lines().map(str::trim).collect();
    let description = format!("{}\n\nUsage: {}", extra.description, forms.join("\n\n"));
    let see_also = std::iter::once("cfn-bootstrap".to_string())
        .chain(TOOLS.iter().filter(|t| t.name != tool.name).map(|t| t.name.to_string()))
        .collect::<Vec<_>>();
    render(completions::tool_command(tool), &description, &extra, &[], &see_also, out)
}

fn see_also_tools() -> Vec<String> {
    TOOLS.iter().map(|t| t.name.to_string()).collect()
}

/// Title, name, synopsis and options come from the command; the description, the
/// subcommand list and the sections after them are written from what is given here.
fn render(
    command: Command,
    description: &str,
    extra: &Extra,
    subcommands: &[(String, String)],
    see_also: &[String],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let has_options = command.get_arguments().any(|a| !a.is_hide_set());
    let mut command = command.long_about(description.to_string());
    if command.get_version().is_none() {
        // For the VERSION section only: tools and subcommands have no --version.
        command = command.version(cfn_aws::VERSION).disable_version_flag(true);
    }
    // An empty date would leave the .TH argument out and shift the ones after it.
    let man = Man::new(command).date(" ").source(format!("cfn-bootstrap {}", cfn_aws::VERSION)).manual("User Commands");
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if has_options {
        man.render_options_section(out)?;
    }
    let mut roff = Roff::default();
    if !subcommands.is_empty() {
        roff.control("SH", ["SUBCOMMANDS"]);
        for (name, about) in subcommands {
            roff.control("TP", []).text([bold(name.as_str())]).text([roman(about.as_str())]);
        }
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (status, meaning) in extra.exit {
        roff.control("TP", []).text([bold(*status)]).text([roman(*meaning)]);
    }
    if !extra.files.is_empty() {
        roff.control("SH", ["FILES"]);
        for (path, what) in extra.files {
            roff.control("TP", []).text([bold(*path)]).text([roman(*what)]);
        }
    }
    roff.control("SH", ["SEE ALSO"]);
    let refs: Vec<String> = see_also.iter().map(|name| format!("{name}(1)")).collect();
    roff.text([roman(refs.join(", "))]);
    roff.to_writer(out)?;
    man.render_version_section(out)
}

/// Writes every page into `dir` as `NAME.1`, returning the paths written.
pub fn write_all(dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for name in names() {
        let Some(text) = page(&name) else { continue };
        let path = dir.join(format!("{name}.1"));
        let mut file = std::fs::File::create(&path)?;
        file.write_all(&text)?;
        written.push(path);
    }
    Ok(written)
}
