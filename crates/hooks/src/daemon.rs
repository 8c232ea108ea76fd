//! Running as a service (HUP-RUN-02..06, STATE-06): the pid file with stale-pid
//! detection, the classic double-fork daemon and the polling schedule (fixed cadence
//! with jitter, throttling back-off). Signals are in [`crate::signals`].

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cfn-hup is already running (pid {pid}, pid file {path})")]
    AlreadyRunning { pid: i32, path: String },
    #[error("Could not create the pid file {path}: {source}")]
    PidFile { path: String, source: std::io::Error },
    #[error("Could not {what}: {source}")]
    System { what: &'static str, source: std::io::Error },
    #[error("{0}")]
    Startup(String),
    /// A programming error, reported instead of a daemon that hangs: the runtime must
    /// be built after the fork, in the daemon.
    #[error("Could not detach: the I/O runtime was started before the fork")]
    RuntimeStarted,
}

fn os_error(what: &'static str) -> DaemonError {
    DaemonError::System { what, source: std::io::Error::last_os_error() }
}

/// `/var/run/cfn-hup.pid` (or under `CFN_BOOTSTRAP_RUN_DIR`), held while the service runs.
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
    pid: i32,
}

pub fn default_pid_path() -> PathBuf {
    cfn_host::paths::run_dir().join("cfn-hup.pid")
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

impl PidFile {
    /// Creates the pid file exclusively with this process's pid. A file naming a live
    /// process refuses the start; a file naming no live process (or no pid at all) is
    /// stale and replaced.
    pub fn acquire(path: &Path) -> Result<PidFile, DaemonError> {
        let pid = std::process::id() as i32;
        let shown = path.display().to_string();
        for _ in 0..5 {
            match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(path) {
                Ok(mut file) => {
                    file.write_all(format!("{pid}\n").as_bytes())
                        .and_then(|_| file.sync_all())
                        .map_err(|source| DaemonError::PidFile { path: shown.clone(), source })?;
                    return Ok(PidFile { path: path.to_path_buf(), pid });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let text = std::fs::read_to_string(path).unwrap_or_default();
                    match text.trim().parse::<i32>() {
                        Ok(other) if other != pid && process_alive(other) => {
                            return Err(DaemonError::AlreadyRunning { pid: other, path: shown });
                        }
                        _ => {
                            tracing::warn!(
                                "Removing stale pid file {shown} (it names {:?}, which is not a running process)",
                                text.trim()
                            );
                            let _ = std::fs::remove_file(path);
                        }
                    }
                }
                Err(source) => return Err(DaemonError::PidFile { path: shown, source }),
            }
        }
        Err(DaemonError::PidFile { path: shown, source: std::io::Error::other("it keeps reappearing") })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // Only remove the file if it is still ours.
        if std::fs::read_to_string(&self.path).is_ok_and(|t| t.trim() == self.pid.to_string()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Which side of [`daemonize`] the caller is on.
pub enum Forked {
    /// The original process: `Ok` once the daemon reported that it is running,
    /// otherwise the daemon's start-up error.
    Parent(Result<i32, DaemonError>),
    /// The detached daemon; it must call [`StartupReport::ready`] or `failed`.
    Daemon(StartupReport),
}

/// The daemon's end of the start-up pipe.
pub struct StartupReport {
    pipe: Option<std::fs::File>,
}

impl StartupReport {
    /// Tells the waiting parent that start-up succeeded (pid file written).
    pub fn ready(mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            let _ = pipe.write_all(format!("OK {}", std::process::id()).as_bytes());
        }
    }

    pub fn failed(mut self, message: &str) {
        if let Some(mut pipe) = self.pipe.take() {
            let _ = pipe.write_all(format!("ERR {message}").as_bytes());
        }
    }
}

fn pipe_pair() -> Result<(std::fs::File, std::fs::File), DaemonError> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors that we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_error("create a pipe"));
    }
    // SAFETY: fresh descriptors owned by nobody else.
    unsafe { Ok((std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1]))) }
}

/// The classic double fork: the parent waits until the daemon has started (or failed);
/// the daemon runs in a new session, in `/`, with `umask`, and stdin/stdout/stderr on
/// `/dev/null`. Call it while the process has a single thread and before the tokio
/// runtime is built (the daemon builds it).
pub fn daemonize(umask: u32) -> Result<Forked, DaemonError> {
    if cfn_aws::runtime::is_built() {
        return Err(DaemonError::RuntimeStarted);
    }
    let (mut reader, writer) = pipe_pair()?;
    // SAFETY: single-threaded at this point (documented requirement).
    match unsafe { libc::fork() } {
        -1 => Err(os_error("fork")),
        0 => {
            drop(reader);
            // SAFETY: plain system calls in the child.
            unsafe {
                if libc::setsid() == -1 {
                    libc::_exit(1);
                }
                match libc::fork() {
                    -1 => libc::_exit(1),
                    0 => {}
                    _ => libc::_exit(0),
                }
                libc::umask(umask as libc::mode_t);
            }
            std::env::set_current_dir("/").map_err(|source| DaemonError::System { what: "chdir /", source })?;
            redirect_stdio()?;
            Ok(Forked::Daemon(StartupReport { pipe: Some(writer) }))
        }
        child => {
            drop(writer);
            let mut status = 0;
            // SAFETY: reaping our own first child.
            unsafe { libc::waitpid(child, &mut status, 0) };
            let mut answer = String::new();
            let _ = reader.read_to_string(&mut answer);
            let result = if let Some(pid) = answer.strip_prefix("OK ") {
                Ok(pid.trim().parse().unwrap_or(0))
            } else if let Some(message) = answer.strip_prefix("ERR ") {
                Err(DaemonError::Startup(message.to_string()))
            } else {
                Err(DaemonError::Startup("cfn-hup stopped while starting; see cfn-hup.log".to_string()))
            };
            Ok(Forked::Parent(result))
        }
    }
}

fn redirect_stdio() -> Result<(), DaemonError> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|source| DaemonError::System { what: "open /dev/null", source })?;
    for fd in 0..3 {
        // SAFETY: duplicating an open descriptor onto the standard ones.
        if unsafe { libc::dup2(null.as_raw_fd(), fd) } == -1 {
            return Err(os_error("redirect standard streams"));
        }
    }
    Ok(())
}

/// Sets the process umask (foreground mode; the daemon sets it while detaching).
pub fn set_umask(umask: u32) {
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(umask as libc::mode_t) };
}

/// The polling cadence: passes are due every `interval` from the first one (no drift),
/// each moved by a random jitter so that a fleet does not poll in lockstep, and spaced
/// out further while CloudFormation throttles.
#[derive(Debug, Clone)]
pub struct Schedule {
    interval: Duration,
    jitter: Duration,
    next_due: Instant,
}

/// The largest jitter: ±30 s, as the 2.0 line documents, but never more than a
/// quarter of the interval (relevant only for the test interval).
pub fn max_jitter(interval: Duration) -> Duration {
    Duration::from_secs(30).min(interval / 4)
}

impl Schedule {
    /// `first_pass` is when the first (immediate) pass started.
    pub fn new(interval: Duration, first_pass: Instant) -> Schedule {
        Schedule { interval, jitter: max_jitter(interval), next_due: first_pass }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How long to sleep after a pass. After `throttled_passes` consecutive throttled
    /// passes, 1, 3 or 7 slots are left out (at most 8× the interval between polls).
    pub fn next_wait(&mut self, now: Instant, throttled_passes: u32) -> Duration {
        let slots = 1u32 << throttled_passes.min(3);
        self.next_due += self.interval;
        // A pass that overran its slot: keep the cadence, skip the missed slots.
        while self.next_due + self.jitter <= now {
            self.next_due += self.interval;
        }
        // Throttled: leave out slots after the next one, however long the pass took.
        self.next_due += self.interval * (slots - 1);
        let offset = self.jitter.mul_f64(fastrand::f64() * 2.0);
        (self.next_due + offset).saturating_duration_since(now + self.jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_file_exclusive_stale_replaced_live_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfn-hup.pid");
        let held = PidFile::acquire(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{}\n", std::process::id()));
        drop(held);
        assert!(!path.exists(), "released on drop");

        // A live process (pid 1 always exists) refuses the start.
        std::fs::write(&path, "1\n").unwrap();
        let e = PidFile::acquire(&path).unwrap_err();
        assert_eq!(e.to_string(), format!("cfn-hup is already running (pid 1, pid file {})", path.display()));

        // A dead pid or garbage is stale.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        for stale in [format!("{dead}\n"), "garbage".to_string(), String::new()] {
            std::fs::write(&path, &stale).unwrap();
            let held = PidFile::acquire(&path).unwrap();
            assert_eq!(std::fs::read_to_string(held.path()).unwrap(), format!("{}\n", std::process::id()));
        }
    }

    #[test]
    fn schedule_keeps_cadence_with_bounded_jitter_and_backs_off() {
        let interval = Duration::from_secs(60);
        assert_eq!(max_jitter(Duration::from_secs(15 * 60)), Duration::from_secs(30));
        assert_eq!(max_jitter(interval), Duration::from_secs(15));
        let start = Instant::now();
        let mut s = Schedule::new(interval, start);
        // A pass that took 10 s: the next one is still due 60 s after the first, ± jitter.
        for k in 1..=20u32 {
            let now = start + interval * (k - 1) + Duration::from_secs(10);
            let wait = s.next_wait(now, 0);
            let at = now + wait;
            let due = start + interval * k;
            assert!(at + Duration::from_secs(15) >= due && at <= due + Duration::from_secs(15), "pass {k}");
        }
        let mut jitters = std::collections::HashSet::new();
        let mut s = Schedule::new(interval, start);
        for k in 1..=10u32 {
            jitters.insert(s.next_wait(start + interval * (k - 1), 0).as_millis());
        }
        assert!(jitters.len() > 5, "the jitter varies: {jitters:?}");
        // Throttled: 2, 4, 8, 8 intervals.
        let mut s = Schedule::new(interval, start);
        let (mut now, mut due) = (start, start);
        for (streak, slots) in [(1, 2), (2, 4), (3, 8), (4, 8)] {
            due += interval * slots;
            now += s.next_wait(now, streak);
            assert!(now + Duration::from_secs(15) >= due && now <= due + Duration::from_secs(15), "streak {streak}");
        }
        // An overrun pass skips the missed slots instead of running back to back.
        let mut s = Schedule::new(interval, start);
        let wait = s.next_wait(start + Duration::from_secs(200), 0);
        assert!(wait <= Duration::from_secs(55) && wait >= Duration::from_secs(25), "{wait:?}");
        // …but a long throttled pass still leaves out its slots.
        let wait = s.next_wait(start + Duration::from_secs(450), 2);
        assert!(wait >= Duration::from_secs(3 * 60 - 15), "{wait:?}");
    }
}
