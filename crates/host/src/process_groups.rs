//! Commands that run as process groups of their own, registered while they run so that a
//! stopping service can signal each command together with everything it started (cfn-hup
//! terminates its running actions on SIGTERM).
//!
//! A group is signalled only while it is registered, and it stays registered only while
//! its leader is not reaped: [`crate::process`] removes the entry once the leader has
//! exited (`waitid` with `WNOWAIT`) and before it reaps it. An unreaped leader keeps its
//! pid, so `kill(-pid, …)` can never reach a process that was given a recycled pid.

use rustix::process::{Pid, Signal};
use std::sync::{Mutex, MutexGuard};

/// A registered command: the leader's pid (which is also its process group's id) and
/// what the command is, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub pid: u32,
    pub label: String,
}

#[derive(Default)]
struct State {
    running: Vec<Group>,
    /// Set once [`ProcessGroups::signal_all`] was called: no command starts any more.
    stopping: bool,
}

#[derive(Default)]
pub struct ProcessGroups {
    state: Mutex<State>,
}

impl ProcessGroups {
    pub const fn new() -> ProcessGroups {
        ProcessGroups { state: Mutex::new(State { running: Vec::new(), stopping: false }) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a command (`spawn`) and registers it under `label`, holding the lock
    /// throughout: a command is either refused because the groups are stopping, or it
    /// is registered before [`signal_all`](Self::signal_all) can look, never missed.
    pub(crate) fn start(
        &self,
        label: &str,
        spawn: impl FnOnce() -> std::io::Result<std::process::Child>,
    ) -> std::io::Result<std::process::Child> {
        let mut state = self.lock();
        if state.stopping {
            return Err(std::io::Error::other("the service is stopping"));
        }
        let child = spawn()?;
        state.running.push(Group { pid: child.id(), label: label.to_string() });
        Ok(child)
    }

    /// Forgets a command whose leader has exited and is about to be reaped.
    pub(crate) fn remove(&self, pid: u32) {
        self.lock().running.retain(|g| g.pid != pid);
    }

    /// Sends `signal` to the process group of every registered command and refuses to
    /// start any command from now on. Returns the groups signalled (a group whose
    /// processes have all exited is not an error).
    pub fn signal_all(&self, signal: Signal) -> Vec<Group> {
        let mut state = self.lock();
        state.stopping = true;
        for group in &state.running {
            // The leader is registered, hence not reaped: its pid is still its own and
            // names its group.
            if let Some(pid) = i32::try_from(group.pid).ok().and_then(Pid::from_raw) {
                let _ = rustix::process::kill_process_group(pid, signal);
            }
        }
        state.running.clone()
    }

    /// Sends `signal` to the process group of the commands registered under `label`
    /// (an action past its own time limit), without stopping the others or refusing new
    /// ones. Returns the groups signalled.
    pub fn signal_labelled(&self, label: &str, signal: Signal) -> Vec<Group> {
        let state = self.lock();
        let chosen: Vec<Group> = state.running.iter().filter(|g| g.label == label).cloned().collect();
        for group in &chosen {
            // Registered, hence not reaped: the pid still names its group.
            if let Some(pid) = i32::try_from(group.pid).ok().and_then(Pid::from_raw) {
                let _ = rustix::process::kill_process_group(pid, signal);
            }
        }
        chosen
    }

    /// The commands running now.
    pub fn running(&self) -> Vec<Group> {
        self.lock().running.clone()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().running.is_empty()
    }
}
