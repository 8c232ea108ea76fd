//! Running a command the way cfn-init and cfn-hup run them: a string through
//! `/bin/sh -c`, a list as argv; optionally a replaced environment, a working
//! directory, and another user; stdout and stderr merged into one stream that is handed
//! over line by line as it arrives and also kept whole.
//!
//! Another user (`runas`) is switched to directly — groups, gid, then uid — instead of
//! through `su user -c …` as the reference did, which broke multi-word commands
//! (BUG-RUNAS) and refused users with a `nologin` shell.

use crate::CommandLine;
use crate::users::{self, User};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};

pub struct Invocation<'a> {
    pub command: &'a CommandLine,
    /// `Some` replaces the whole environment (not even `PATH` is inherited).
    pub env: Option<&'a [(String, String)]>,
    pub cwd: Option<&'a Path>,
    pub runas: Option<&'a User>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The exit code, or minus the signal number that killed the process.
    pub code: i32,
    pub output: Vec<u8>,
}

impl Finished {
    /// The output as text; bytes that are not UTF-8 are replaced, never an error
    /// (the reference failed the build on them, BUG-UTF8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }
}

/// How a command ended when its two output streams were kept apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The exit code, or minus the signal number that killed the process.
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Runs the command to completion with stdout and stderr captured separately (cfn-hup's
/// command hooks report them in different result fields).
pub fn run_captured(invocation: &Invocation<'_>) -> std::io::Result<Captured> {
    let mut command = build(invocation);
    command.stdin(Stdio::null());
    let output = command.output()?;
    let code = output.status.code().unwrap_or_else(|| -output.status.signal().unwrap_or(0));
    Ok(Captured { code, stdout: output.stdout, stderr: output.stderr })
}

/// The command line, environment, directory and user of an invocation.
fn build(invocation: &Invocation<'_>) -> Command {
    let mut command = match invocation.command {
        CommandLine::Shell(script) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(script);
            c
        }
        CommandLine::Argv(argv) => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    if let Some(vars) = invocation.env {
        command.env_clear();
        command.envs(vars.iter().map(|(k, v)| (k, v)));
    }
    if let Some(cwd) = invocation.cwd {
        command.current_dir(cwd);
    }
    if let Some(user) = invocation.runas {
        switch_user(&mut command, user);
    }
    command
}

/// Runs the command to completion. `on_line` sees each output line (without its line
/// end) as it is produced.
pub fn run(invocation: &Invocation<'_>, mut on_line: impl FnMut(&[u8])) -> std::io::Result<Finished> {
    let mut command = build(invocation);
    let (mut reader, writer) = std::io::pipe()?;
    command.stdin(Stdio::null()).stdout(writer.try_clone()?).stderr(writer);
    let mut child = command.spawn()?;
    // The parent's copies of the write end must be closed, or the read never ends.
    drop(command);

    let mut output = Vec::new();
    let mut line_start = 0;
    let mut chunk = [0u8; 8192];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        output.extend_from_slice(&chunk[..n]);
        while let Some(pos) = output[line_start..].iter().position(|b| *b == b'\n') {
            on_line(&output[line_start..line_start + pos]);
            line_start += pos + 1;
        }
    }
    if line_start < output.len() {
        on_line(&output[line_start..]);
    }
    let status = child.wait()?;
    let code = status.code().unwrap_or_else(|| -status.signal().unwrap_or(0));
    Ok(Finished { code, output })
}

/// Makes the child run as `user`: its groups, gid and uid, and the `HOME`, `USER`,
/// `LOGNAME` and `SHELL` that `su` would set.
fn switch_user(command: &mut Command, user: &User) {
    let groups = users::group_list(user);
    let (uid, gid) = (user.uid, user.gid);
    command.env("HOME", &user.home).env("USER", &user.name).env("LOGNAME", &user.name);
    if !user.shell.is_empty() {
        command.env("SHELL", &user.shell);
    }
    // SAFETY: only async-signal-safe calls between fork and exec; `groups` was built
    // before the fork.
    unsafe {
        command.pre_exec(move || {
            if libc::setgroups(groups.len() as _, groups.as_ptr()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_collect(invocation: &Invocation<'_>) -> (Finished, Vec<String>) {
        let mut lines = Vec::new();
        let finished = run(invocation, |l| lines.push(String::from_utf8_lossy(l).into_owned())).unwrap();
        (finished, lines)
    }

    #[test]
    fn shell_and_argv_with_merged_output() {
        let shell = CommandLine::Shell("echo out; echo err >&2; printf tail; exit 3".into());
        let (f, lines) = run_collect(&Invocation { command: &shell, env: None, cwd: None, runas: None });
        assert_eq!(f.code, 3);
        assert_eq!(lines, ["out", "err", "tail"]);
        assert_eq!(f.text(), "out\nerr\ntail");
        let argv = CommandLine::Argv(vec!["printf".into(), "%s|".into(), "a b".into(), "c".into()]);
        let (f, _) = run_collect(&Invocation { command: &argv, env: None, cwd: None, runas: None });
        assert_eq!((f.code, f.text().as_str()), (0, "a b|c|"));
    }

    #[test]
    fn captured_keeps_the_streams_apart() {
        let shell = CommandLine::Shell("echo out; echo err >&2; echo more; exit 4".into());
        let c = run_captured(&Invocation { command: &shell, env: None, cwd: None, runas: None }).unwrap();
        assert_eq!((c.code, c.stdout.as_slice(), c.stderr.as_slice()), (4, &b"out\nmore\n"[..], &b"err\n"[..]));
    }

    #[test]
    fn env_replaces_and_cwd_applies() {
        let vars = vec![("ONLY".to_string(), "this".to_string())];
        let cmd = CommandLine::Shell("pwd; /usr/bin/env".into());
        let (f, lines) =
            run_collect(&Invocation { command: &cmd, env: Some(&vars), cwd: Some(Path::new("/tmp")), runas: None });
        assert_eq!(f.code, 0);
        assert_eq!(lines[0], "/tmp");
        assert!(lines.contains(&"ONLY=this".to_string()), "{lines:?}");
        assert!(!lines.iter().any(|l| l.starts_with("PATH=") || l.starts_with("HOME=")), "inherited: {lines:?}");
    }

    #[test]
    fn non_utf8_output_is_kept_lossily() {
        let cmd = CommandLine::Shell("printf 'a\\377b\\n'".into());
        let (f, _) = run_collect(&Invocation { command: &cmd, env: None, cwd: None, runas: None });
        assert_eq!(f.output, b"a\xffb\n");
        assert_eq!(f.text(), "a\u{fffd}b\n");
    }

    #[test]
    fn signals_are_negative_codes() {
        let cmd = CommandLine::Shell("kill -9 $$".into());
        let (f, _) = run_collect(&Invocation { command: &cmd, env: None, cwd: None, runas: None });
        assert_eq!(f.code, -9);
    }

    #[test]
    fn missing_programs_and_directories_are_errors() {
        let cmd = CommandLine::Argv(vec!["/nonexistent/program".into()]);
        assert!(run(&Invocation { command: &cmd, env: None, cwd: None, runas: None }, |_| {}).is_err());
        let cmd = CommandLine::Shell("true".into());
        assert!(
            run(&Invocation { command: &cmd, env: None, cwd: Some(Path::new("/nonexistent")), runas: None }, |_| {})
                .is_err()
        );
    }
}
