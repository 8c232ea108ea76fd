//! Running as a service (HUP-RUN-02..06, STATE-06): the pid file, locked while the
//! service runs (a stale one is replaced), the classic double-fork daemon and the
//! polling schedule (fixed cadence with jitter, throttling back-off). Signals are in
//! [`crate::signals`].

use rustix::io::Errno;
use std::io::{Read, Seek, Write};
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

/// `/var/run/cfn-hup.pid` (or under `CFN_BOOTSTRAP_RUN_DIR`), held while the service
/// runs: the file stays open with an exclusive `fcntl` write lock on it for the
/// service's lifetime (issue 13, item 14). The lock, not the file's existence or its
/// text, says that a cfn-hup runs: the kernel drops it when the process ends, however
/// it ends, so a leftover file is never mistaken for a running service, and a file
/// whose text was changed by hand does not let a second service start.
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
    /// Open for the service's lifetime: closing it (or any other descriptor of the
    /// file in this process) releases the lock.
    file: std::fs::File,
}

/// The most of a pid file that is read: a pid and a newline are a few bytes; more is not
/// a pid file of cfn-hup's.
pub const PID_FILE_CAP: u64 = 64;

pub fn default_pid_path() -> PathBuf {
    cfn_host::paths::run_dir().join("cfn-hup.pid")
}

fn process_alive(pid: i32) -> bool {
    u32::try_from(pid).is_ok_and(cfn_host::process_identity::pid_exists)
}

/// Whether `pid` is a cfn-hup: the program or its script (the reference runs as
/// `python … cfn-hup`) is named cfn-hup.
pub fn is_cfn_hup(pid: i32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    cmdline.split(|b| *b == 0).take(2).any(|arg| arg.rsplit(|b| *b == b'/').next() == Some(b"cfn-hup"))
}

/// Takes the write lock (a whole-file `fcntl` lock) without waiting. `Err(Some(pid))`:
/// another process holds it (`Some(0)` when its pid is not visible here, e.g. from
/// another pid namespace).
fn try_lock(file: &std::fs::File) -> Result<(), Option<i32>> {
    use rustix::fs::FlockOperation;
    use rustix::process::{Flock, FlockType};
    match rustix::fs::fcntl_lock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => return Ok(()),
        Err(Errno::AGAIN | Errno::ACCESS) => {}
        Err(error) => {
            // Locks not supported here (an unusual file system): fall back to the text.
            tracing::warn!("Could not lock the pid file: {error}; relying on the pid it names");
            return Ok(());
        }
    }
    // F_GETLK names the conflicting lock's holder.
    match rustix::process::fcntl_getlk(file, &Flock::from(FlockType::WriteLock)) {
        Ok(Some(holder)) => Err(Some(holder.pid.map_or(0, |pid| pid.as_raw_nonzero().get()))),
        _ => Err(Some(0)),
    }
}

/// A cfn-hup that still holds the lock on a pid file which was deleted from `path` (by
/// hand, with a new file put in its place): its pid. Found through `/proc/locks` and
/// the holder's open files, which name a deleted file `<path> (deleted)`.
fn holder_of_deleted(path: &Path) -> Option<i32> {
    let dir = std::fs::canonicalize(path.parent().filter(|d| !d.as_os_str().is_empty())?).ok()?;
    let wanted = format!("{} (deleted)", dir.join(path.file_name()?).display());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let me = std::process::id() as i32;
    // "1: POSIX  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; lines with "->" are waiters.
    let holders = locks.lines().filter_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&"POSIX") && fields.get(3) == Some(&"WRITE"))
            .then(|| fields.get(4)?.parse::<i32>().ok())?
    });
    holders.filter(|pid| *pid != me && is_cfn_hup(*pid)).find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == wanted.as_str()))
        })
    })
}

fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl PidFile {
    /// Opens (or creates) the pid file, locks it and writes this process's pid into it.
    /// A lock held by another process refuses the start, naming the holder. A file
    /// nobody holds is stale and replaced — unless it names a running cfn-hup, which
    /// holds no lock because it predates it (the reference, during an upgrade).
    pub fn acquire(path: &Path) -> Result<PidFile, DaemonError> {
        let pid = std::process::id() as i32;
        let shown = path.display().to_string();
        let pid_file_error = |source| DaemonError::PidFile { path: shown.clone(), source };
        for _ in 0..5 {
            // Not truncated: the holder's pid stays readable while the lock is tried.
            // Non-blocking and not through a link: whatever else stands there (a FIFO, a
            // device) is refused below instead of holding the start.
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
                .open(path)
                .map_err(pid_file_error)?;
            if !file.metadata().map_err(pid_file_error)?.is_file() {
                return Err(pid_file_error(std::io::Error::other("it is not a regular file")));
            }
            let mut text = String::new();
            let _ = (&mut file).take(PID_FILE_CAP).read_to_string(&mut text);
            let named = text.trim().parse::<i32>().ok();
            if let Err(holder) = try_lock(&file) {
                let pid = holder.filter(|p| *p > 0).or(named).unwrap_or(0);
                return Err(DaemonError::AlreadyRunning { pid, path: shown });
            }
            // The holder removes the file before it lets go: a lock on a file that is
            // no longer at `path` proves nothing. Try again with the one there now.
            if !same_file(&file, path) {
                continue;
            }
            // The file nobody holds may have been put there by hand, over the running
            // service's own.
            if let Some(holder) = holder_of_deleted(path) {
                return Err(DaemonError::AlreadyRunning { pid: holder, path: shown });
            }
            // Read again under the lock: a previous holder may have written since.
            text.clear();
            let _ = file
                .seek(std::io::SeekFrom::Start(0))
                .and_then(|_| (&mut file).take(PID_FILE_CAP).read_to_string(&mut text));
            if !text.trim().is_empty() {
                match text.trim().parse::<i32>() {
                    Ok(other) if other != pid && process_alive(other) && is_cfn_hup(other) => {
                        return Err(DaemonError::AlreadyRunning { pid: other, path: shown });
                    }
                    _ => tracing::warn!(
                        "Removing stale pid file {shown} (it names {}, which is not a running process)",
                        cfn_python::repr::short_str_repr(text.trim())
                    ),
                }
            }
            file.set_len(0)
                .and_then(|_| file.seek(std::io::SeekFrom::Start(0)))
                .and_then(|_| file.write_all(format!("{pid}\n").as_bytes()))
                .and_then(|_| file.sync_all())
                .map_err(pid_file_error)?;
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = cfn_host::durable::sync_dir(dir);
            }
            return Ok(PidFile { path: path.to_path_buf(), file });
        }
        Err(DaemonError::PidFile { path: shown, source: std::io::Error::other("it keeps being replaced") })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // Removed while still locked, and only when it is still ours (not replaced by
        // hand): a second service waiting on the lock then sees that its file is gone.
        if same_file(&self.file, &self.path) {
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
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| DaemonError::System { what: "create a pipe", source: e.into() })?;
    Ok((reader.into(), writer.into()))
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
    // fork and _exit stay on libc: rustix has no fork for programs (only the runtime's
    // kernel_fork, which skips the C library's own bookkeeping), and _exit ends the
    // intermediate child without running this process's exit handlers or flushing
    // buffers it shares with the parent.
    // SAFETY: single-threaded at this point (documented requirement).
    match unsafe { libc::fork() } {
        -1 => Err(os_error("fork")),
        0 => {
            drop(reader);
            if rustix::process::setsid().is_err() {
                // SAFETY: ends this child at once; see above.
                unsafe { libc::_exit(1) };
            }
            // SAFETY: still single-threaded; the intermediate child only exits.
            match unsafe { libc::fork() } {
                // SAFETY: as above.
                -1 => unsafe { libc::_exit(1) },
                0 => {}
                // SAFETY: as above.
                _ => unsafe { libc::_exit(0) },
            }
            set_umask(umask);
            std::env::set_current_dir("/").map_err(|source| DaemonError::System { what: "chdir /", source })?;
            redirect_stdio()?;
            Ok(Forked::Daemon(StartupReport { pipe: Some(writer) }))
        }
        child => {
            drop(writer);
            // Reaping our own first child, which exits as soon as it has forked.
            if let Some(child) = rustix::process::Pid::from_raw(child) {
                let _ = rustix::process::waitpid(Some(child), rustix::process::WaitOptions::empty());
            }
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
    rustix::stdio::dup2_stdin(&null)
        .and_then(|()| rustix::stdio::dup2_stdout(&null))
        .and_then(|()| rustix::stdio::dup2_stderr(&null))
        .map_err(|e| DaemonError::System { what: "redirect standard streams", source: e.into() })
}

/// Sets the process umask (foreground mode; the daemon sets it while detaching).
pub fn set_umask(umask: u32) {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(umask));
}

/// The polling cadence (HUP-RUN-03): the first pass at once, then passes every
/// `interval` on a fixed cadence (no drift), each moved by a random jitter, and spaced
/// out further while CloudFormation throttles.
///
/// The cadence starts at a random phase: the first periodic pass comes at a random point
/// of the first interval, and the later ones keep that phase. Instances started together
/// (an Auto Scaling group boots its instances within a minute or two) would otherwise
/// poll in lockstep for as long as they run: a fixed cadence does not drift apart as the
/// reference's did (it waited a full interval after each pass ended), and a jitter of
/// ±30 s cannot spread passes that start within two minutes over fifteen. With random
/// phases a fleet's polls are spread evenly over the interval from the second pass on
/// (`cargo xtask fleet` measures it), and the first periodic pass comes no later than it
/// did (one interval after the first pass, ± the jitter).
#[derive(Debug, Clone)]
pub struct Schedule {
    interval: Duration,
    jitter: Duration,
    /// The next slot of the cadence not taken yet.
    next_slot: Instant,
    /// Consecutive throttled passes.
    throttled_passes: u32,
}

/// The largest jitter: ±30 s, as the 2.0 line documents, but never more than a
/// quarter of the interval (relevant only for the test interval).
pub fn max_jitter(interval: Duration) -> Duration {
    Duration::from_secs(30).min(interval / 4)
}

impl Schedule {
    /// `first_pass` is when the first (immediate) pass started.
    pub fn new(interval: Duration, first_pass: Instant) -> Schedule {
        Schedule::with_phase(interval, first_pass, interval.mul_f64(fastrand::f64()))
    }

    /// The first periodic slot `phase` after the first pass.
    fn with_phase(interval: Duration, first_pass: Instant, phase: Duration) -> Schedule {
        Schedule { interval, jitter: max_jitter(interval), next_slot: first_pass + phase, throttled_passes: 0 }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How long to sleep after a pass that ended at `now`. After 1, 2 or 3 (and more)
    /// consecutive throttled passes, 1, 3 or 7 slots are left out (at most 8× the
    /// interval between polls).
    pub fn next_wait(&mut self, now: Instant, throttled: bool) -> Duration {
        self.throttled_passes = if throttled { self.throttled_passes.saturating_add(1) } else { 0 };
        // A pass that overran its slot: keep the cadence, skip the missed slots.
        while self.next_slot + self.jitter <= now {
            self.next_slot += self.interval;
        }
        // Throttled: leave out slots after the next one, however long the pass took.
        let slot = self.next_slot + self.interval * ((1u32 << self.throttled_passes.min(3)) - 1);
        self.next_slot = slot + self.interval;
        let offset = self.jitter.mul_f64(fastrand::f64() * 2.0);
        (slot + offset).saturating_duration_since(now + self.jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A lock held by another process is tested end to end (tests/hup.rs): fcntl locks
    // do not conflict within one process.
    #[test]
    fn pid_file_written_removed_on_drop_and_stale_files_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfn-hup.pid");
        let held = PidFile::acquire(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{}\n", std::process::id()));
        drop(held);
        assert!(!path.exists(), "released on drop");

        // Nobody holds these: a dead pid, a live process that is not a cfn-hup (pid 1),
        // garbage, nothing; a longer text is replaced entirely.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        for stale in [format!("{dead}\n"), "1\n".to_string(), "garbage and more garbage".to_string(), String::new()] {
            std::fs::write(&path, &stale).unwrap();
            let held = PidFile::acquire(&path).unwrap();
            assert_eq!(std::fs::read_to_string(held.path()).unwrap(), format!("{}\n", std::process::id()));
        }
    }

    #[test]
    fn a_pid_file_replaced_by_hand_is_left_to_whoever_replaced_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfn-hup.pid");
        let held = PidFile::acquire(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "4242\n").unwrap();
        drop(held);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "4242\n");
    }

    #[test]
    fn only_a_process_named_cfn_hup_counts_as_one() {
        assert!(!is_cfn_hup(std::process::id() as i32));
        assert!(!is_cfn_hup(-1));
    }

    #[test]
    fn schedule_keeps_cadence_with_bounded_jitter_and_backs_off() {
        let interval = Duration::from_secs(60);
        assert_eq!(max_jitter(Duration::from_secs(15 * 60)), Duration::from_secs(30));
        assert_eq!(max_jitter(interval), Duration::from_secs(15));
        let start = Instant::now();
        let within_jitter =
            |at: Instant, due: Instant| at + Duration::from_secs(15) >= due && at <= due + Duration::from_secs(15);
        // Passes that take 10 s: pass k is still due 20 s + (k − 1) intervals after the
        // first, ± jitter.
        let phase = Duration::from_secs(20);
        let mut s = Schedule::with_phase(interval, start, phase);
        let mut slot = start + phase;
        let mut now = start + Duration::from_secs(10);
        for k in 1..=20u32 {
            let at = now + s.next_wait(now, false);
            assert!(within_jitter(at, slot), "pass {k}");
            slot += interval;
            now = at + Duration::from_secs(10);
        }
        let mut jitters = std::collections::HashSet::new();
        let mut s = Schedule::with_phase(interval, start, interval);
        for k in 1..=10u32 {
            jitters.insert(s.next_wait(start + interval * (k - 1), false).as_millis());
        }
        assert!(jitters.len() > 5, "the jitter varies: {jitters:?}");
        // Throttled: 2, 4, 8, 8 intervals; then the cadence again.
        let mut s = Schedule::with_phase(interval, start, interval);
        let (mut now, mut due) = (start, start);
        for (throttled, slots) in [(true, 2), (true, 4), (true, 8), (true, 8), (false, 1), (false, 1)] {
            due += interval * slots;
            now += s.next_wait(now, throttled);
            assert!(within_jitter(now, due), "{slots} slots");
        }
        // An overrun pass skips the missed slots instead of running back to back.
        let mut s = Schedule::with_phase(interval, start, interval);
        let wait = s.next_wait(start + Duration::from_secs(200), false);
        assert!(wait <= Duration::from_secs(55) && wait >= Duration::from_secs(25), "{wait:?}");
        // …but a long throttled pass still leaves out its slot (the next is at 480 s).
        let wait = s.next_wait(start + Duration::from_secs(450), true);
        assert!(wait >= Duration::from_secs(540 - 450 - 15), "{wait:?}");
    }

    /// The first periodic pass comes at a random point of the first interval (never
    /// later than one interval and the jitter), so that instances started together do
    /// not poll together.
    #[test]
    fn the_cadence_starts_at_a_random_phase() {
        let interval = Duration::from_secs(900);
        let start = Instant::now();
        let mut per_minute = [0u32; 16];
        for _ in 0..3000 {
            let wait = Schedule::new(interval, start).next_wait(start, false);
            assert!(wait <= interval + Duration::from_secs(30), "{wait:?}");
            per_minute[(wait.as_secs() / 60) as usize] += 1;
        }
        // 200 a minute on average (the 16th minute holds only the jitter's overhang).
        for (minute, count) in per_minute[..15].iter().enumerate() {
            assert!((120..=280).contains(count), "minute {minute}: {per_minute:?}");
        }
    }
}
