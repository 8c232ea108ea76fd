//! Effects on the host that cfn-init and cfn-hup share: running commands (shell or
//! argv, a replaced environment, a working directory, another user, merged output)
//! and, for a service, signalling the ones still running as whole process groups;
//! looking up users and groups and the host's name; replacing files through temporary
//! names and state files durably.

pub mod dir_names;
pub mod durable;
pub mod hostname;
pub mod output;
pub mod paths;
pub mod process;
pub mod process_groups;
pub mod process_identity;
pub mod state_file;
pub mod temp_files;
pub mod terminal_text;
pub mod users;

pub use hostname::fqdn;

/// A command line: a string runs through `/bin/sh -c`, a list is run directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    Shell(String),
    Argv(Vec<String>),
}

impl CommandLine {
    /// How the reference shows the command in `Command <name> (<command>) failed`: the
    /// string itself, or the list as Python prints it.
    pub fn shown(&self) -> String {
        match self {
            CommandLine::Shell(s) => s.clone(),
            CommandLine::Argv(argv) => {
                format!("[{}]", argv.iter().map(|a| cfn_python::repr::short_str_repr(a)).collect::<Vec<_>>().join(", "))
            }
        }
    }
}
