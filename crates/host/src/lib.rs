//! Effects on the host that cfn-init and cfn-hup share: running commands (shell or
//! argv, a replaced environment, a working directory, another user, merged output)
//! and looking up users and groups and the host's name.

pub mod hostname;
pub mod process;
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
            CommandLine::Argv(argv) => format!("[{}]", argv.iter().map(|a| py_repr(a)).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// Python's `repr()` of a string: single quotes unless the text holds one and no
/// double quote; backslashes and control characters escaped.
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::from(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}
