//! The `commands` section (INIT-CMD-01..11): commands in name order, each with an
//! optional `test` gate, its output merged and written to `cfn-init-cmd.log` as it
//! arrives and to the main log at DEBUG; a failure stops the build unless
//! `ignoreErrors` is set.

use crate::cmd_log::{banner, cmd_log, cmd_log_output};
use crate::document::{CommandEntry, Item};
use crate::model::{self, CommandSpec};
use cfn_host::CommandLine;
use cfn_host::process::{self, Environment, Finished, Invocation};
use cfn_host::users::{self, User};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// Runs the commands and returns the names of those that ran (for the change record).
pub fn apply(config: &str, entries: &[Item<CommandEntry>]) -> Result<Vec<String>, String> {
    let mut ran = Vec::new();
    for entry in entries {
        let name = &entry.key;
        tracing::debug!("Running command {name}");
        let spec = match &entry.spec {
            Ok(CommandEntry::Spec(spec)) => spec.clone(),
            Ok(CommandEntry::Deferred(attributes)) => {
                let attributes = with_defaults(config, name, attributes)?;
                if attributes.get("command").is_none_or(Value::is_null) {
                    tracing::error!("No command specified for {name}");
                }
                model::command_spec(config, name, &attributes).map_err(|e| e.0)?
            }
            Err(e) => {
                if model::is_missing_command(e) {
                    tracing::error!("No command specified for {name}");
                }
                return Err(e.0.clone());
            }
        };
        if run_one(&spec)? {
            ran.push(spec.name);
        }
    }
    Ok(ran)
}

/// Runs one command (after its test); returns whether it counts as executed.
fn run_one(spec: &CommandSpec) -> Result<bool, String> {
    let name = &spec.name;
    let setting = Setting::of(spec)?;
    if !test_passes(spec, &setting)? {
        return Ok(false);
    }
    let finished = logged_run(&format!("Command {name}"), &setting.invocation(spec, &spec.command), name)?;
    if finished.code == 0 {
        tracing::info!("Command {name} succeeded");
        tracing::debug!("Command {name} output: {}", finished.text());
        return Ok(true);
    }
    tracing::error!("Command {name} ({}) failed", spec.command.shown());
    tracing::debug!("Command {name} output: {}", finished.text());
    if spec.ignore_errors {
        tracing::info!("ignoreErrors set to true, continuing build");
        return Ok(true);
    }
    Err(format!("Command {name} failed"))
}

/// Where and as whom a command and its test run.
pub(crate) struct Setting {
    runas: Option<User>,
    cwd: Option<PathBuf>,
}

impl Setting {
    pub(crate) fn of(spec: &CommandSpec) -> Result<Setting, String> {
        Ok(Setting { runas: runas_user(spec.runas.as_deref())?, cwd: spec.cwd.as_deref().map(expand_home) })
    }

    fn invocation<'a>(&'a self, spec: &'a CommandSpec, command: &'a CommandLine) -> Invocation<'a> {
        Invocation {
            command,
            env: spec.env.as_deref().map_or(Environment::Inherit, Environment::Replace),
            cwd: self.cwd.as_deref(),
            runas: self.runas.as_ref(),
        }
    }
}

/// Runs the command's `test`, if it has one: whether the command itself is to run.
pub(crate) fn test_passes(spec: &CommandSpec, setting: &Setting) -> Result<bool, String> {
    let name = &spec.name;
    let Some(test) = &spec.test else {
        tracing::debug!("No test for command {name}");
        return Ok(true);
    };
    tracing::debug!("Running test for command {name}");
    let finished = logged_run(&format!("Test for Command {name}"), &setting.invocation(spec, test), name)?;
    tracing::debug!("Test command output: {}", finished.text());
    if finished.code != 0 {
        tracing::info!("Test failed with code {}", finished.code);
        return Ok(false);
    }
    tracing::debug!("Test for command {name} passed");
    Ok(true)
}

/// The `runas` user, who must exist.
fn runas_user(name: Option<&str>) -> Result<Option<User>, String> {
    match name {
        Some(user) => Ok(Some(users::user(user).ok_or_else(|| format!("{user} is not a valid user name"))?)),
        None => Ok(None),
    }
}

/// Runs a command with the command log's banners around its output (LOG-05).
fn logged_run(title: &str, invocation: &Invocation<'_>, name: &str) -> Result<Finished, String> {
    cmd_log(&"=".repeat(60));
    cmd_log(title);
    if let Some(dir) = invocation.cwd.filter(|d| !d.is_dir()) {
        return Err(format!("Could not run command {name}: working directory {} does not exist", dir.display()));
    }
    let mut any_output = false;
    let finished = process::run(invocation, |line| {
        if !any_output {
            cmd_log(&banner("Command Output", '-'));
            any_output = true;
        }
        cmd_log_output(line);
    })
    .map_err(|e| format!("Could not run command {name}: {}", cfn_python::strerror(&e)))?;
    if any_output {
        cmd_log(&"-".repeat(60));
    }
    if finished.code == 0 {
        cmd_log("Completed successfully.");
    } else {
        tracing::error!(target: "cfn_cmd", "Exited with error code {}", finished.code);
    }
    Ok(finished)
}

/// `cwd` with a leading `~` or `~user` expanded, as Python's `expanduser` does.
fn expand_home(cwd: &str) -> PathBuf {
    let Some(rest) = cwd.strip_prefix('~') else { return PathBuf::from(cwd) };
    let (user, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let home = if user.is_empty() {
        // Python's: $HOME, else the passwd entry of the real uid.
        let from_passwd = || users::user_by_id(rustix::process::getuid().as_raw()).map(|u| u.home);
        std::env::var_os("HOME").map(PathBuf::from).or_else(from_passwd)
    } else {
        users::user(user).map(|u| u.home)
    };
    match home {
        Some(home) => PathBuf::from(format!("{}{tail}", home.display())),
        None => PathBuf::from(cwd),
    }
}

/// The undocumented `defaults` attribute (INIT-CMD-10): a command whose output is a
/// JSON object of default attributes; the command's own attributes win, `env` maps are
/// merged.
///
/// The script runs as the command's own `runas` user when it names one, through the same
/// set-up as the command and its test (an addition: the reference ran it as root). A
/// `runas` that only the defaults supply cannot apply to the script that supplies it.
pub(crate) fn with_defaults(
    config: &str,
    name: &str,
    attributes: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let Some(defaults) = attributes.get("defaults").filter(|d| !d.is_null()) else { return Ok(attributes.clone()) };
    let failed = || format!("Defaults script for command {name} failed");
    tracing::debug!("Generating defaults for command {name}");
    let command = match defaults {
        Value::String(s) => CommandLine::Shell(s.clone()),
        Value::Array(items) => {
            let argv = items.iter().map(|i| i.as_str().map(str::to_string)).collect::<Option<Vec<_>>>();
            CommandLine::Argv(argv.filter(|a| !a.is_empty()).ok_or_else(failed)?)
        }
        _ => return Err(failed()),
    };
    let runas = runas_user(model::command_runas(config, name, attributes).map_err(|e| e.0)?.as_deref())?;
    let invocation = Invocation { command: &command, env: Environment::Inherit, cwd: None, runas: runas.as_ref() };
    // Its stdout is the JSON; stderr only explains a failure.
    let output = process::run_captured(&invocation).map_err(|_| failed())?;
    tracing::debug!("Defaults script for {name} output: {}", output.stdout.text());
    if output.code != 0 {
        tracing::error!("Defaults script failed for {name}: {}", output.stderr.text());
        return Err(failed());
    }
    // The JSON is parsed whole: an object too large for the kept head and tail of a
    // command's output (far beyond any set of command attributes) is refused.
    let Some(stdout) = output.stdout.whole() else {
        tracing::error!(
            "Defaults script for {name} printed {} bytes, too many to be its defaults",
            output.stdout.total_len()
        );
        return Err(failed());
    };
    let Ok(Value::Object(mut merged)) = serde_json::from_slice::<Value>(&stdout) else { return Err(failed()) };
    for (key, value) in attributes {
        match (key.as_str(), merged.get_mut(key), value) {
            ("env", Some(Value::Object(base)), Value::Object(own)) => {
                for (k, v) in own {
                    base.insert(k.clone(), v.clone());
                }
            }
            _ => {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_expansion() {
        let root_home = users::user("root").unwrap().home;
        assert_eq!(expand_home("~root/x"), root_home.join("x"));
        assert_eq!(expand_home("/plain"), PathBuf::from("/plain"));
        assert_eq!(expand_home("~no-such-user-x/y"), PathBuf::from("~no-such-user-x/y"));
    }

    #[test]
    fn defaults_merge_under_explicit_attributes() {
        let attrs = serde_json::json!({
            "defaults": "echo '{\"command\": \"from-defaults\", \"cwd\": \"/tmp\", \"env\": {\"A\": \"1\", \"B\": \"2\"}}'",
            "command": "mine",
            "env": {"B": "3"}
        });
        let merged = with_defaults("c", "x", attrs.as_object().unwrap()).unwrap();
        assert_eq!(merged["command"], "mine");
        assert_eq!(merged["cwd"], "/tmp");
        assert_eq!(merged["env"], serde_json::json!({"A": "1", "B": "3"}));
        let bad = serde_json::json!({"defaults": "exit 1", "command": "x"});
        assert_eq!(
            with_defaults("c", "x", bad.as_object().unwrap()).unwrap_err(),
            "Defaults script for command x failed"
        );
    }
}
