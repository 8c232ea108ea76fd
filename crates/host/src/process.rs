//! Running a command the way cfn-init and cfn-hup run them: a string through
//! `/bin/sh -c`, a list as argv; optionally a replaced environment, a working
//! directory, and another user; stdout and stderr merged into one stream that is handed
//! over line by line as it arrives, of which only a bounded head and tail are kept
//! (see [`crate::output`]).
//!
//! Another user (`runas`) is switched to directly — groups, gid, then uid — instead of
//! through `su user -c …` as the reference did, which broke multi-word commands
//! (BUG-RUNAS) and refused users with a `nologin` shell.

use crate::CommandLine;
use crate::output::{KeptOutput, LineSplitter};
use crate::process_groups::ProcessGroups;
use crate::users::{self, User};
use rustix::process::{Gid, Uid};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};

pub struct Invocation<'a> {
    pub command: &'a CommandLine,
    pub env: Environment<'a>,
    pub cwd: Option<&'a Path>,
    pub runas: Option<&'a User>,
}

/// A command run as a process group of its own (it and everything it starts), registered
/// in `groups` under `label` while it runs, so that it can be signalled as a whole.
#[derive(Clone, Copy)]
pub struct InGroup<'a> {
    pub groups: &'a ProcessGroups,
    pub label: &'a str,
}

/// The environment a command runs with.
#[derive(Clone, Copy)]
pub enum Environment<'a> {
    /// This process's own.
    Inherit,
    /// Only these variables (not even `PATH` is inherited).
    Replace(&'a [(String, String)]),
    /// This process's own with these set on top. The inherited part is never read
    /// into strings here, so variables that are not UTF-8 pass through unchanged.
    Override(&'a [(String, String)]),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The exit code, or minus the signal number that killed the process.
    pub code: i32,
    /// The start and end of the merged output.
    pub output: KeptOutput,
}

impl Finished {
    /// The kept output as text (see [`KeptOutput::text`]).
    pub fn text(&self) -> String {
        self.output.text()
    }
}

/// How a command ended when its two output streams were kept apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The exit code, or minus the signal number that killed the process.
    pub code: i32,
    pub stdout: KeptOutput,
    pub stderr: KeptOutput,
}

/// Runs the command to completion with stdout and stderr captured separately (cfn-hup's
/// command hooks report them in different result fields), each kept as a bounded head
/// and tail.
pub fn run_captured(invocation: &Invocation<'_>) -> std::io::Result<Captured> {
    run_captured_with(invocation, None)
}

/// [`run_captured`] as a process group of its own (see [`InGroup`]).
pub fn run_captured_in_group(invocation: &Invocation<'_>, group: InGroup<'_>) -> std::io::Result<Captured> {
    run_captured_with(invocation, Some(group))
}

fn run_captured_with(invocation: &Invocation<'_>, group: Option<InGroup<'_>>) -> std::io::Result<Captured> {
    let mut command = build(invocation);
    let (stdout_reader, stdout_writer) = std::io::pipe()?;
    let (stderr_reader, stderr_writer) = std::io::pipe()?;
    command.stdin(Stdio::null()).stdout(stdout_writer).stderr(stderr_writer);
    let mut child = spawn(&mut command, invocation, group)?;
    // The parent's copies of the write ends must be closed, or the reads never end.
    drop(command);
    // Both pipes are drained at once: a child that fills one while the other is read
    // would otherwise wait forever.
    let stderr = std::thread::spawn(move || read_kept(stderr_reader, |_| {}));
    let stdout = read_kept(stdout_reader, |_| {});
    let stderr = stderr.join().unwrap_or_else(|_| Err(std::io::Error::other("stderr reader stopped")));
    let status = wait(&mut child, group)?;
    let code = status.code().unwrap_or_else(|| -status.signal().unwrap_or(0));
    Ok(Captured { code, stdout: stdout?, stderr: stderr? })
}

/// Reads a pipe to its end, handing the bytes to `on_chunk` as they come and keeping
/// their head and tail.
fn read_kept(mut reader: impl Read, mut on_chunk: impl FnMut(&[u8])) -> std::io::Result<KeptOutput> {
    let mut kept = KeptOutput::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(kept),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        kept.push(&chunk[..n]);
        on_chunk(&chunk[..n]);
    }
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
    match invocation.env {
        Environment::Inherit => {}
        Environment::Replace(vars) => {
            command.env_clear();
            command.envs(vars.iter().map(|(k, v)| (k, v)));
        }
        Environment::Override(vars) => {
            command.envs(vars.iter().map(|(k, v)| (k, v)));
        }
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
/// end) as it is produced; a line is held only until its end.
pub fn run(invocation: &Invocation<'_>, on_line: impl FnMut(&[u8])) -> std::io::Result<Finished> {
    run_with(invocation, None, on_line)
}

/// [`run`] as a process group of its own (see [`InGroup`]).
pub fn run_in_group(
    invocation: &Invocation<'_>,
    group: InGroup<'_>,
    on_line: impl FnMut(&[u8]),
) -> std::io::Result<Finished> {
    run_with(invocation, Some(group), on_line)
}

fn run_with(
    invocation: &Invocation<'_>,
    group: Option<InGroup<'_>>,
    mut on_line: impl FnMut(&[u8]),
) -> std::io::Result<Finished> {
    let mut command = build(invocation);
    let (reader, writer) = std::io::pipe()?;
    command.stdin(Stdio::null()).stdout(writer.try_clone()?).stderr(writer);
    let mut child = spawn(&mut command, invocation, group)?;
    // The parent's copies of the write end must be closed, or the read never ends.
    drop(command);

    let mut lines = LineSplitter::new();
    let output = read_kept(reader, |chunk| lines.feed(chunk, &mut on_line));
    lines.finish(&mut on_line);
    // The child is waited for even when reading failed, so that it does not linger.
    let status = wait(&mut child, group)?;
    let output = output?;
    let code = status.code().unwrap_or_else(|| -status.signal().unwrap_or(0));
    Ok(Finished { code, output })
}

/// Starts the command; in a group, as the leader of a group of its own and registered.
fn spawn(command: &mut Command, invocation: &Invocation<'_>, group: Option<InGroup<'_>>) -> std::io::Result<Child> {
    let Some(group) = group else {
        return command.spawn();
    };
    // A `runas` child already leads a group of its own: it calls setsid, which fails
    // in the leader of a process group (see `switch_user`).
    if invocation.runas.is_none() {
        command.process_group(0);
    }
    group.groups.start(group.label, || command.spawn())
}

/// Waits for the child to exit and reaps it. In a group, the registration ends between
/// the two, while the exited leader still holds its pid (see [`ProcessGroups`]).
fn wait(child: &mut Child, group: Option<InGroup<'_>>) -> std::io::Result<ExitStatus> {
    if let Some(group) = group {
        // waitid fails only for a pid that is not our child; `child.wait` then says why.
        let _ = wait_unreaped(child.id());
        group.groups.remove(child.id());
    }
    child.wait()
}

/// Blocks until the child `pid` has exited, leaving it to be reaped.
fn wait_unreaped(pid: u32) -> std::io::Result<()> {
    use rustix::process::{Pid, WaitId, WaitIdOptions};
    let pid = i32::try_from(pid).ok().and_then(Pid::from_raw).ok_or(std::io::ErrorKind::InvalidInput)?;
    loop {
        match rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Makes the child run as `user`: a session of its own, its groups, gid and uid, and the
/// `HOME`, `USER`, `LOGNAME` and `SHELL` that `su` would set.
///
/// The new session (setsid) detaches the child from root's controlling terminal, so the
/// user's program cannot open `/dev/tty` or push input into root's terminal (TIOCSTI), as
/// it could under the reference's `su user -c …`. It also makes the child the leader of
/// a process group of its own; the command must therefore not also be given a process
/// group (`process_group`), which the standard library sets before this runs and which
/// makes setsid fail. Every command that runs as another user (cfn-init's commands, their
/// tests and `defaults` scripts, cfn-hup's hook actions) is set up here.
fn switch_user(command: &mut Command, user: &User) {
    use rustix::thread::{set_thread_gid, set_thread_groups, set_thread_uid};
    let groups: Vec<Gid> = users::group_list(user).into_iter().map(Gid::from_raw).collect();
    let (uid, gid) = (Uid::from_raw(user.uid), Gid::from_raw(user.gid));
    command.env("HOME", &user.home).env("USER", &user.name).env("LOGNAME", &user.name);
    if !user.shell.is_empty() {
        command.env("SHELL", &user.shell);
    }
    // SAFETY: between fork and exec only system calls run, with no allocation or lock:
    // `groups` was built before the fork. rustix's calls set the credentials of the
    // calling thread only (the kernel's view, not POSIX's process-wide one); the forked
    // child has that one thread, so they are the process's.
    unsafe {
        command.pre_exec(move || {
            // Session first, while still root; then groups and gid, then the uid that
            // gives up the right to change them.
            rustix::process::setsid()?;
            set_thread_groups(&groups)?;
            set_thread_gid(gid)?;
            set_thread_uid(uid)?;
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::KEEP;
    use rustix::process::Signal;

    fn run_collect(invocation: &Invocation<'_>) -> (Finished, Vec<String>) {
        let mut lines = Vec::new();
        let finished = run(invocation, |l| lines.push(String::from_utf8_lossy(l).into_owned())).unwrap();
        (finished, lines)
    }

    #[test]
    fn shell_and_argv_with_merged_output() {
        let shell = CommandLine::Shell("echo out; echo err >&2; printf tail; exit 3".into());
        let (f, lines) =
            run_collect(&Invocation { command: &shell, env: Environment::Inherit, cwd: None, runas: None });
        assert_eq!(f.code, 3);
        assert_eq!(lines, ["out", "err", "tail"]);
        assert_eq!(f.text(), "out\nerr\ntail");
        let argv = CommandLine::Argv(vec!["printf".into(), "%s|".into(), "a b".into(), "c".into()]);
        let (f, _) = run_collect(&Invocation { command: &argv, env: Environment::Inherit, cwd: None, runas: None });
        assert_eq!((f.code, f.text().as_str()), (0, "a b|c|"));
    }

    #[test]
    fn captured_keeps_the_streams_apart() {
        let shell = CommandLine::Shell("echo out; echo err >&2; echo more; exit 4".into());
        let c =
            run_captured(&Invocation { command: &shell, env: Environment::Inherit, cwd: None, runas: None }).unwrap();
        assert_eq!(c.code, 4);
        assert_eq!(
            (c.stdout.whole().unwrap(), c.stderr.whole().unwrap()),
            (b"out\nmore\n".to_vec(), b"err\n".to_vec())
        );
    }

    #[test]
    fn captured_streams_are_bounded_and_drained_together() {
        // 4 MB on stderr before anything on stdout: with only stdout read, the child
        // would block on a full stderr pipe.
        let shell = CommandLine::Shell("head -c 4000000 /dev/zero >&2; echo out; head -c 3000000 /dev/zero".into());
        let c =
            run_captured(&Invocation { command: &shell, env: Environment::Inherit, cwd: None, runas: None }).unwrap();
        assert_eq!(c.code, 0);
        assert_eq!((c.stderr.total_len(), c.stdout.total_len()), (4_000_000, 3_000_004));
        assert!(c.stdout.text().starts_with("out\n\0"));
        assert!(c.stderr.text().len() < 2 * KEEP + 100 && c.stdout.text().len() < 2 * KEEP + 100);
    }

    /// Runs a command printing `bytes` zero bytes and no newline; returns the time it
    /// took, after checking what was handed over and kept.
    fn timed_output_without_newline(bytes: usize) -> std::time::Duration {
        let cmd = CommandLine::Shell(format!("head -c {bytes} /dev/zero"));
        let started = std::time::Instant::now();
        let mut lines = Vec::new();
        let f = run(&Invocation { command: &cmd, env: Environment::Inherit, cwd: None, runas: None }, |l| {
            lines.push(l.len())
        })
        .unwrap();
        let took = started.elapsed();
        assert_eq!((f.code, lines.as_slice()), (0, &[bytes][..]));
        assert_eq!(f.output.total_len(), bytes as u64);
        // Only the head and tail are kept, with the marker between them.
        let text = f.text();
        assert!(text.len() <= 2 * KEEP + 64, "kept {} bytes", text.len());
        assert!(text.contains(&format!("[... {} bytes of output left out ...]", bytes - 2 * KEEP)));
        took
    }

    #[test]
    fn output_without_newline_takes_linear_time_and_bounded_memory() {
        // The old splitter searched the carried-over line again after every 8 KiB
        // read: 10 times the output took 100 times as long (50 MB: hours). Linear, it
        // takes about 10 times as long; 40 leaves room for a busy machine.
        let small = timed_output_without_newline(5_000_000);
        let large = timed_output_without_newline(50_000_000);
        let floor = std::time::Duration::from_millis(50);
        assert!(large <= small.max(floor) * 40, "5 MB took {small:?}, 50 MB took {large:?}");
    }

    #[test]
    fn env_replaces_and_cwd_applies() {
        let vars = vec![("ONLY".to_string(), "this".to_string())];
        let cmd = CommandLine::Shell("pwd; /usr/bin/env".into());
        let (f, lines) = run_collect(&Invocation {
            command: &cmd,
            env: Environment::Replace(&vars),
            cwd: Some(Path::new("/tmp")),
            runas: None,
        });
        assert_eq!(f.code, 0);
        assert_eq!(lines[0], "/tmp");
        assert!(lines.contains(&"ONLY=this".to_string()), "{lines:?}");
        assert!(!lines.iter().any(|l| l.starts_with("PATH=") || l.starts_with("HOME=")), "inherited: {lines:?}");
    }

    #[test]
    fn non_utf8_output_is_kept_lossily() {
        let cmd = CommandLine::Shell("printf 'a\\377b\\n'".into());
        let (f, _) = run_collect(&Invocation { command: &cmd, env: Environment::Inherit, cwd: None, runas: None });
        assert_eq!(f.output.whole().unwrap(), b"a\xffb\n");
        assert_eq!(f.text(), "a\u{fffd}b\n");
    }

    #[test]
    fn signals_are_negative_codes() {
        let cmd = CommandLine::Shell("kill -9 $$".into());
        let (f, _) = run_collect(&Invocation { command: &cmd, env: Environment::Inherit, cwd: None, runas: None });
        assert_eq!(f.code, -9);
    }

    #[test]
    fn missing_programs_and_directories_are_errors() {
        let cmd = CommandLine::Argv(vec!["/nonexistent/program".into()]);
        assert!(run(&Invocation { command: &cmd, env: Environment::Inherit, cwd: None, runas: None }, |_| {}).is_err());
        let cmd = CommandLine::Shell("true".into());
        assert!(
            run(
                &Invocation {
                    command: &cmd,
                    env: Environment::Inherit,
                    cwd: Some(Path::new("/nonexistent")),
                    runas: None
                },
                |_| {}
            )
            .is_err()
        );
    }

    /// The process group id of `pid` (field 5 of /proc/PID/stat).
    fn pgid(pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')').next()?.split_whitespace().nth(2)?.parse().ok()
    }

    /// Runs `script` and then a `sleep` in a group on a thread; returns the thread and
    /// the pids of the shell and of its `sleep`.
    fn start_in_group(
        groups: &'static ProcessGroups,
        script: String,
        runas: Option<User>,
        dir: &Path,
    ) -> (std::thread::JoinHandle<Finished>, u32, u32) {
        let pids = dir.join("pids");
        let script = format!("{script}; sleep 300 & echo $$ $! > {}.tmp; mv {0}.tmp {0}; wait", pids.display());
        let worker = std::thread::spawn(move || {
            let cmd = CommandLine::Shell(script);
            let invocation = Invocation { command: &cmd, env: Environment::Inherit, cwd: None, runas: runas.as_ref() };
            run_in_group(&invocation, InGroup { groups, label: "the test" }, |_| {}).unwrap()
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let text = loop {
            if let Ok(text) = std::fs::read_to_string(&pids) {
                break text;
            }
            assert!(std::time::Instant::now() < deadline, "the script did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut pids = text.split_whitespace().map(|p| p.parse::<u32>().unwrap());
        (worker, pids.next().unwrap(), pids.next().unwrap())
    }

    /// Whether `pid` is gone within a second (a zombie counts as gone: a process's
    /// pipes close a moment before it becomes one).
    fn gone(pid: u32) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            let dead = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map_or(true, |s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) == Some("Z"));
            if dead || std::time::Instant::now() > deadline {
                return dead;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Issue 13, item 12: a command in a group leads a group of its own, is registered
    /// while it runs, and a signal to the group reaches what it started; once stopping,
    /// no command starts.
    #[test]
    fn a_group_is_registered_while_it_runs_and_signalled_whole() {
        static GROUPS: ProcessGroups = ProcessGroups::new();
        let dir = tempfile_dir();
        let (worker, shell, sleep) = start_in_group(&GROUPS, "true".into(), None, &dir);
        assert_eq!(pgid(shell), Some(shell), "the command leads its own group");
        assert_eq!(pgid(sleep), Some(shell), "what it starts is in that group");
        assert_eq!(GROUPS.running(), [crate::process_groups::Group { pid: shell, label: "the test".into() }]);
        let signalled = GROUPS.signal_all(Signal::TERM);
        assert_eq!(signalled.len(), 1);
        let finished = worker.join().unwrap();
        assert_eq!(finished.code, -Signal::TERM.as_raw());
        assert!(gone(sleep), "the group's other process got the signal too");
        assert!(GROUPS.is_empty(), "an ended command is no longer registered");
        let cmd = CommandLine::Shell("true".into());
        let invocation = Invocation { command: &cmd, env: Environment::Inherit, cwd: None, runas: None };
        let refused = run_in_group(&invocation, InGroup { groups: &GROUPS, label: "late" }, |_| {});
        assert!(refused.is_err(), "nothing starts once the groups are stopping");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A `runas` command in a group: its session (setsid) is its group, which a second
    /// process group setting would have made fail; SIGKILL reaches a command that
    /// ignores SIGTERM, with its children.
    #[test]
    fn a_runas_command_in_a_group_leads_its_session_and_sigkill_ends_it() {
        static GROUPS: ProcessGroups = ProcessGroups::new();
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let root = users::user("root").unwrap();
        let dir = tempfile_dir();
        let (worker, shell, sleep) = start_in_group(&GROUPS, "trap '' TERM".into(), Some(root), &dir);
        assert_eq!(pgid(shell), Some(shell));
        assert_eq!(pgid(sleep), Some(shell));
        GROUPS.signal_all(Signal::TERM);
        assert!(!gone(shell) && GROUPS.running().len() == 1, "the shell ignores SIGTERM");
        GROUPS.signal_all(Signal::KILL);
        assert_eq!(worker.join().unwrap().code, -Signal::KILL.as_raw());
        assert!(gone(sleep));
        assert!(GROUPS.is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A fresh directory under the system's temporary directory.
    fn tempfile_dir() -> std::path::PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cfn-host-groups-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
