//! The `commands` section (INIT-CMD-01..11): commands in name order, each with an
//! optional `test` gate, its output merged and written to `cfn-init-cmd.log` as it
//! arrives and to the main log at DEBUG; a failure stops the build unless
//! `ignoreErrors` is set.

use crate::cmd_log::{banner, cmd_log};
use crate::model::{self, CommandSpec};
use cfn_host::process::{self, Finished, Invocation};
use cfn_host::users::{self, User};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// Runs the commands and returns the names of those that ran (for the change record).
pub fn apply(config: &str, entries: &[(&String, &Value)]) -> Result<Vec<String>, String> {
    let mut ran = Vec::new();
    for (name, value) in entries {
        tracing::debug!("Running command {name}");
        let attributes = model::command_attributes(config, name, value).map_err(|e| e.0)?;
        let attributes = with_defaults(name, attributes)?;
        if attributes.get("command").is_none_or(Value::is_null) {
            tracing::error!("No command specified for {name}");
        }
        let spec = model::command_spec(config, name, &attributes).map_err(|e| e.0)?;
        if run_one(&spec)? {
            ran.push(spec.name);
        }
    }
    Ok(ran)
}

/// Runs one command (after its test); returns whether it counts as executed.
fn run_one(spec: &CommandSpec) -> Result<bool, String> {
    let name = &spec.name;
    let runas = match &spec.runas {
        Some(user) => Some(users::user(user).ok_or_else(|| format!("{user} is not a valid user name"))?),
        None => None,
    };
    let cwd = spec.cwd.as_deref().map(expand_home);
    let invocation =
        |command| Invocation { command, env: spec.env.as_deref(), cwd: cwd.as_deref(), runas: runas.as_ref() };

    if let Some(test) = &spec.test {
        tracing::debug!("Running test for command {name}");
        let finished = logged_run(&format!("Test for Command {name}"), &invocation(test), name)?;
        tracing::debug!("Test command output: {}", finished.text());
        if finished.code != 0 {
            tracing::info!("Test failed with code {}", finished.code);
            return Ok(false);
        }
        tracing::debug!("Test for command {name} passed");
    } else {
        tracing::debug!("No test for command {name}");
    }

    let finished = logged_run(&format!("Command {name}"), &invocation(&spec.command), name)?;
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
        cmd_log(&format!("\t{}", String::from_utf8_lossy(line)));
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
        std::env::var_os("HOME").map(PathBuf::from).or_else(|| current_user().map(|u| u.home))
    } else {
        users::user(user).map(|u| u.home)
    };
    match home {
        Some(home) => PathBuf::from(format!("{}{tail}", home.display())),
        None => PathBuf::from(cwd),
    }
}

fn current_user() -> Option<User> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    // SAFETY: getpwuid returns a pointer to static storage or null; read immediately.
    let name = unsafe {
        let pw = libc::getpwuid(uid);
        if pw.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr((*pw).pw_name).to_string_lossy().into_owned()
    };
    users::user(&name)
}

/// The undocumented `defaults` attribute (INIT-CMD-10): a command whose output is a
/// JSON object of default attributes; the command's own attributes win, `env` maps are
/// merged.
fn with_defaults(name: &str, attributes: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let Some(defaults) = attributes.get("defaults").filter(|d| !d.is_null()) else { return Ok(attributes.clone()) };
    let failed = || format!("Defaults script for command {name} failed");
    tracing::debug!("Generating defaults for command {name}");
    let mut command = match defaults {
        Value::String(s) => {
            let mut c = std::process::Command::new("/bin/sh");
            c.arg("-c").arg(s);
            c
        }
        Value::Array(items) => {
            let argv = items.iter().map(|i| i.as_str()).collect::<Option<Vec<_>>>().filter(|a| !a.is_empty());
            let argv = argv.ok_or_else(failed)?;
            let mut c = std::process::Command::new(argv[0]);
            c.args(&argv[1..]);
            c
        }
        _ => return Err(failed()),
    };
    // Its stdout is the JSON; stderr only explains a failure.
    let output = command.stdin(std::process::Stdio::null()).output().map_err(|_| failed())?;
    tracing::debug!("Defaults script for {name} output: {}", String::from_utf8_lossy(&output.stdout));
    if !output.status.success() {
        tracing::error!("Defaults script failed for {name}: {}", String::from_utf8_lossy(&output.stderr));
        return Err(failed());
    }
    let finished = Finished { code: 0, output: output.stdout };
    let Ok(Value::Object(mut merged)) = serde_json::from_slice::<Value>(&finished.output) else { return Err(failed()) };
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
        let merged = with_defaults("x", attrs.as_object().unwrap()).unwrap();
        assert_eq!(merged["command"], "mine");
        assert_eq!(merged["cwd"], "/tmp");
        assert_eq!(merged["env"], serde_json::json!({"A": "1", "B": "3"}));
        let bad = serde_json::json!({"defaults": "exit 1", "command": "x"});
        assert_eq!(with_defaults("x", bad.as_object().unwrap()).unwrap_err(), "Defaults script for command x failed");
    }
}
