//! Running one lifecycle hook's action: through `/bin/sh -c` like every cfn-hup action,
//! as `runas` when given, with the lifecycle variables added to cfn-hup's environment,
//! as a process group of its own registered in [`ACTIONS`] — not in the service's
//! groups, which SIGTERM stops: a drain that is under way when cfn-hup is asked to stop
//! is finished (and its lifecycle hooks completed) before cfn-hup exits. An action still
//! running at its time limit is killed (its whole group) and counts as failed.

use super::LifecycleHook;
use cfn_host::CommandLine;
use cfn_host::process::{self, Environment, InGroup, Invocation};
use cfn_host::process_groups::ProcessGroups;
use rustix::process::Signal;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The lifecycle actions running now.
pub static ACTIONS: ProcessGroups = ProcessGroups::new();

/// How an action ended: its exit code (minus the signal number), or why it did not run.
pub type Ran = Result<i32, String>;

/// The label of a hook section's action among [`ACTIONS`] (one at a time per section).
fn label(hook: &LifecycleHook) -> String {
    format!("lifecycle hook {}", hook.name)
}

/// Runs the action of `hook` with `env`, killed after `limit`. `started` is told the
/// action's process group (its leader's pid) once it runs, so that it can be recorded.
pub fn run(
    hook: &LifecycleHook,
    env: &[(String, String)],
    limit: Option<Duration>,
    started: impl FnOnce(u32) + Send,
) -> Ran {
    let user = match &hook.runas {
        None => None,
        Some(name) => match cfn_host::users::user(name) {
            Some(user) => Some(user),
            None => return Err(format!("cannot run: user {name} does not exist")),
        },
    };
    let command = CommandLine::Shell(hook.action.clone());
    let invocation = Invocation { command: &command, env: Environment::Override(env), cwd: None, runas: user.as_ref() };
    let label = label(hook);
    let (done, finished) = mpsc::channel::<()>();
    let ran = std::thread::scope(|scope| {
        let label = label.as_str();
        scope.spawn(move || watch(label, limit, finished, started));
        let ran = process::run_in_group(&invocation, InGroup { groups: &ACTIONS, label }, |line| {
            tracing::info!("{}: {}", hook.name, String::from_utf8_lossy(line));
        });
        drop(done);
        ran
    });
    match ran {
        Ok(finished) => Ok(finished.code),
        Err(e) => Err(format!("could not be started: {e}")),
    }
}

/// While the action runs: tells `started` its pid, and kills its group at `limit`.
fn watch(label: &str, limit: Option<Duration>, finished: mpsc::Receiver<()>, started: impl FnOnce(u32) + Send) {
    let begun = Instant::now();
    let mut started = Some(started);
    // The action registers as it spawns; its pid is looked for briefly.
    while started.is_some() && begun.elapsed() < Duration::from_secs(5) {
        if let Some(group) = ACTIONS.running().into_iter().find(|g| g.label == label) {
            if let Some(tell) = started.take() {
                tell(group.pid);
            }
            break;
        }
        if finished.recv_timeout(Duration::from_millis(5)) != Err(mpsc::RecvTimeoutError::Timeout) {
            return;
        }
    }
    let Some(limit) = limit else {
        let _ = finished.recv();
        return;
    };
    let left = limit.saturating_sub(begun.elapsed());
    if finished.recv_timeout(left) == Err(mpsc::RecvTimeoutError::Timeout) {
        for group in ACTIONS.signal_labelled(label, Signal::KILL) {
            tracing::error!(
                "The action for {} (pid {}) ran past its time limit of {} s; killed it",
                label.trim_start_matches("lifecycle hook "),
                group.pid,
                limit.as_secs()
            );
        }
    }
}

/// The start time of process `pid` in clock ticks since boot (`/proc/<pid>/stat`,
/// field 22): with the pid, what identifies one process across pid reuse.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which ends with the last `)`; field 22 is the 20th.
    // A zombie has exited: it is no process to end.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// Ends the process group that a killed cfn-hup left running for an action that is
/// about to run again: only when `pid` is still the process that was recorded.
pub fn end_orphan(pid: u32, ticks: u64) {
    if start_ticks(pid) != Some(ticks) {
        return;
    }
    let Some(id) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return };
    tracing::warn!("The action left running by a previous cfn-hup (pid {pid}) is ended before it runs again");
    let _ = rustix::process::kill_process_group(id, Signal::KILL);
    let deadline = Instant::now() + Duration::from_secs(5);
    while start_ticks(pid) == Some(ticks) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}
