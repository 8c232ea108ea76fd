//! Which process wrote a record, told apart from any later process with the same pid:
//! the pid, the boot it ran in and its start time (clock ticks after boot, field 22 of
//! `/proc/<pid>/stat`). A pid is reused, and a reboot replays the same start-up, so the
//! pid alone would take a killed cfn-init for a live one.

/// A process, as recorded by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// `/proc/sys/kernel/random/boot_id`, when there is one.
    pub boot_id: Option<String>,
    /// Clock ticks after boot when it started, when `/proc` says.
    pub start_ticks: Option<u64>,
}

impl ProcessIdentity {
    /// This process.
    pub fn current() -> ProcessIdentity {
        let pid = std::process::id();
        ProcessIdentity { pid, boot_id: boot_id(), start_ticks: stat(pid).and_then(|s| s.start_ticks) }
    }

    /// Whether this process still runs: same boot, a process with this pid that started
    /// at the same tick and is not a zombie. Without `/proc`, whether the pid exists.
    pub fn is_running(&self) -> bool {
        if self.boot_id.is_some() && boot_id().is_some() && self.boot_id != boot_id() {
            return false;
        }
        match stat(self.pid) {
            Some(now) => !now.ended && (self.start_ticks.is_none() || self.start_ticks == now.start_ticks),
            None if std::path::Path::new("/proc/self/stat").exists() => false,
            None => pid_exists(self.pid),
        }
    }
}

/// Whether a process with this pid exists (signal 0: checked, not sent). One that
/// belongs to another user exists too (`EPERM`).
pub fn pid_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    matches!(rustix::process::test_kill_process(pid), Ok(()) | Err(rustix::io::Errno::PERM))
}

struct Stat {
    /// A zombie (or dead) process has ended; only its entry is left.
    ended: bool,
    start_ticks: Option<u64>,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // `<pid> (<comm>) <state> <ppid> …`: the name may hold anything, the fields follow
    // the last parenthesis; the start time is the 20th field after the name.
    let end = text.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(text.get(end + 2..)?).ok()?;
    let mut fields = rest.split(' ');
    let state = fields.next()?;
    let start_ticks = fields.nth(18).and_then(|f| f.parse().ok());
    Some(Stat { ended: matches!(state, "Z" | "X"), start_ticks })
}

fn boot_id() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(text.trim().to_string()).filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_an_ended_one_or_a_reused_pid_does_not() {
        let me = ProcessIdentity::current();
        assert!(me.start_ticks.is_some(), "/proc gives the start time");
        assert!(me.is_running());
        // The same pid, started at another time: a later process that reused the pid.
        assert!(!ProcessIdentity { start_ticks: me.start_ticks.map(|t| t + 1), ..me.clone() }.is_running());
        assert!(!ProcessIdentity { boot_id: Some("another boot".into()), ..me.clone() }.is_running());

        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let identity =
            ProcessIdentity { pid: child.id(), boot_id: boot_id(), start_ticks: stat(child.id()).unwrap().start_ticks };
        assert!(identity.is_running());
        child.kill().unwrap();
        // Killed and not reaped: a zombie, which has ended.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while identity.is_running() {
            assert!(std::time::Instant::now() < deadline, "the killed child still runs");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.wait().unwrap();
        assert!(!identity.is_running());
    }

    #[test]
    fn a_pid_exists_while_its_process_is_not_reaped() {
        assert!(pid_exists(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        assert!(pid_exists(child.id()), "a zombie still holds its pid");
        child.wait().unwrap();
        assert!(!pid_exists(0) && !pid_exists(u32::MAX), "never a process");
    }
}
