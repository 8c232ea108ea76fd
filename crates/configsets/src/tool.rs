//! Running the system tools that packages, groups, users and services use: always as
//! argv (never through a shell), with output merged. Commands that change the system
//! are written to `cfn-init-cmd.log` with the banners `commands` uses (LOG-05); queries
//! only go to the main log at DEBUG when asked.

use crate::cmd_log::{banner, cmd_log, cmd_log_output};
use cfn_host::CommandLine;
use cfn_host::process::{self, Environment, Invocation};

/// What a tool printed (stdout and stderr merged) and its exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub code: i32,
    pub text: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

/// The reference's `ToolError` text: `<message> (return code <rc>)`, or the message
/// alone when the code is 0 or unknown.
pub fn tool_error(message: impl std::fmt::Display, code: i32) -> String {
    if code != 0 { format!("{message} (return code {code})") } else { message.to_string() }
}

fn to_strings(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|s| s.to_string()).collect()
}

fn spawn(argv: Vec<String>, env: &[(&str, &str)], mut on_line: impl FnMut(&[u8])) -> Result<Output, String> {
    let program = argv[0].clone();
    let added: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let command = CommandLine::Argv(argv);
    let invocation = Invocation { command: &command, env: Environment::Override(&added), cwd: None, runas: None };
    let finished = process::run(&invocation, &mut on_line)
        .map_err(|e| format!("Could not run {program}: {}", cfn_python::strerror(&e)))?;
    Ok(Output { code: finished.code, text: finished.text() })
}

/// Runs a query (nothing is written to the command log).
pub fn query(argv: &[&str]) -> Result<Output, String> {
    spawn(to_strings(argv), &[], |_| {})
}

/// Runs a query with only its standard output kept (stderr is discarded), for tools
/// whose output is parsed.
pub fn query_stdout(argv: &[&str]) -> Result<Output, String> {
    query_streams(argv).map(|(stdout, _)| stdout)
}

/// Runs a query with its standard output (to parse) and standard error (to log) kept
/// apart.
pub fn query_streams(argv: &[&str]) -> Result<(Output, String), String> {
    let output = std::process::Command::new(argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("Could not run {}: {}", argv[0], cfn_python::strerror(&e)))?;
    let stdout =
        Output { code: output.status.code().unwrap_or(-1), text: String::from_utf8_lossy(&output.stdout).into_owned() };
    Ok((stdout, String::from_utf8_lossy(&output.stderr).into_owned()))
}

/// Runs a command that changes the system, with its output in the command log under
/// `title`. `env` is added to the inherited environment.
pub fn logged(title: &str, argv: Vec<String>, env: &[(&str, &str)]) -> Result<Output, String> {
    cmd_log(&"=".repeat(60));
    cmd_log(title);
    let mut any_output = false;
    let result = spawn(argv, env, |line| {
        if !any_output {
            cmd_log(&banner("Command Output", '-'));
            any_output = true;
        }
        cmd_log_output(line);
    });
    if any_output {
        cmd_log(&"-".repeat(60));
    }
    match &result {
        Ok(out) if out.ok() => cmd_log("Completed successfully."),
        Ok(out) => tracing::error!(target: "cfn_cmd", "Exited with error code {}", out.code),
        Err(e) => tracing::error!(target: "cfn_cmd", "{e}"),
    }
    result
}

/// A list of strings as Python 3 prints it: `['a', 'b']`.
pub fn py_list<S: AsRef<str>>(items: &[S]) -> String {
    format!("[{}]", items.iter().map(|s| cfn_python::repr::short_str_repr(s.as_ref())).collect::<Vec<_>>().join(", "))
}

/// Package names, versions and locations from metadata go to tools as argv; one that
/// starts with `-` would be read as an option (SEC-ARGINJ), so it is refused.
pub fn refuse_option_like(manager: &str, what: &str, value: &str) -> Result<(), String> {
    if value.starts_with('-') {
        return Err(format!("Refusing {manager} {what} {value}: it must not start with '-'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_errors_and_lists() {
        assert_eq!(tool_error("Could not create apt cache", 100), "Could not create apt cache (return code 100)");
        assert_eq!(tool_error("x", 0), "x");
        assert_eq!(py_list(&["a=1", "b"]), "['a=1', 'b']");
        assert_eq!(py_list::<&str>(&[]), "[]");
        assert!(refuse_option_like("apt", "package", "-oDebug::x=1").unwrap_err().contains("must not start"));
        assert!(refuse_option_like("apt", "package", "curl").is_ok());
    }

    #[test]
    fn env_is_added_to_the_inherited_one() {
        let out = logged(
            "t",
            vec!["/bin/sh".into(), "-c".into(), "echo $EXTRA_X; echo ${PATH:+has-path}".into()],
            &[("EXTRA_X", "yes")],
        )
        .unwrap();
        assert_eq!(out.text, "yes\nhas-path\n");
        assert!(query(&["/nonexistent/tool"]).is_err());
        assert_eq!(
            query_stdout(&["/bin/sh", "-c", "echo out; echo err >&2; exit 3"]).unwrap(),
            Output { code: 3, text: "out\n".into() }
        );
    }
}
