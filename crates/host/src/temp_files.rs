//! The temporary names a file is written under before it is renamed over its target
//! (cfn-init's `files` and `sources`, the state files of [`crate::durable`]), and the
//! removal of those a killed process left behind.
//!
//! A name is `.<target>.<pid>.<n>.cfn-tmp`: hidden, beside its target, recognisable by
//! its suffix, and distinct between processes (pid) and within one (a counter). A pid
//! is reused after a crash (a reboot replays the same start-up), so a name may still be
//! taken by a leftover: [`create_beside`] then moves on to the next counter value rather
//! than failing or touching the leftover.
//!
//! Leftovers are removed by [`remove_stale`] the first time a process writes into a
//! directory: one `readdir` per directory and run. Only names whose process has ended
//! go (no `/proc/<pid>`, or a zombie): a cfn-init or cfn-hup running beside this one
//! keeps its files, and this process's own names are never taken for leftovers.

use rustix::fs::AtFlags;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Ends every temporary name.
const SUFFIX: &[u8] = b".cfn-tmp";
/// Bytes of the target's name kept in a temporary name, so that it stays within the
/// 255 bytes a file name may have (pid and counter take at most 31 more).
const TARGET_KEPT: usize = 200;
/// Names tried before giving up on finding a free one.
const TRIES: u32 = 1000;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Directories (`st_dev`, `st_ino`) this process has cleaned already.
static CLEANED: Mutex<Option<HashSet<(u64, u64)>>> = Mutex::new(None);

/// A temporary name beside `target` (a file name, not a path) no other writer uses.
pub fn temp_name(target: &OsStr) -> OsString {
    let kept = &target.as_bytes()[..target.len().min(TARGET_KEPT)];
    let mut name = Vec::with_capacity(kept.len() + 40);
    name.push(b'.');
    name.extend_from_slice(kept);
    name.extend_from_slice(format!(".{}.{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)).as_bytes());
    name.extend_from_slice(SUFFIX);
    OsString::from_vec(name)
}

/// Runs `create` (an `O_EXCL` create, `symlinkat`, `linkat`: anything that fails with
/// `EEXIST` on a taken name) with temporary names for `target` until one is free;
/// returns the name used and what `create` gave.
pub fn create_beside<T>(target: &OsStr, mut create: impl FnMut(&OsStr) -> io::Result<T>) -> io::Result<(OsString, T)> {
    let mut last = None;
    for _ in 0..TRIES {
        let name = temp_name(target);
        match create(&name) {
            Ok(made) => return Ok((name, made)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// The pid in a temporary name, when `name` is one.
fn maker(name: &[u8]) -> Option<i32> {
    let rest = name.strip_prefix(b".")?.strip_suffix(SUFFIX)?;
    let mut parts = rest.rsplitn(3, |b| *b == b'.');
    let counter = parts.next()?;
    let pid = parts.next()?;
    let target = parts.next()?;
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if target.is_empty() || !digits(counter) || !digits(pid) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// Whether the process with this pid has ended: there is none, or only its zombie (a
/// killed cfn-init's parent died with it, and whoever inherits it may reap it late).
fn gone(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    match std::fs::read(format!("/proc/{pid}/stat")) {
        // `<pid> (<comm>) <state> …`: the name may hold anything, the state follows the
        // last parenthesis.
        Ok(stat) => stat
            .iter()
            .rposition(|b| *b == b')')
            .and_then(|end| stat.get(end + 2))
            .is_some_and(|state| matches!(state, b'Z' | b'X')),
        Err(e) if e.kind() == io::ErrorKind::NotFound => true,
        // No /proc to read: a process that cannot be signalled does not exist.
        Err(_) => {
            // SAFETY: signal 0 only checks that the process exists.
            let signalled = unsafe { libc::kill(pid, 0) };
            signalled != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        }
    }
}

/// Removes the temporary files of processes that no longer run from the directory
/// `dir`, the first time this process asks for that directory; returns how many went.
/// Errors are ignored: a leftover only takes room.
/// Forgets that this process cleaned `dir` (tests only): tests of one process clean
/// directories they then delete, and a later test's directory may get the same inode.
#[cfg(test)]
pub(crate) fn forget_cleaned(dir: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let st = std::fs::metadata(dir).unwrap();
    if let Some(cleaned) = CLEANED.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        cleaned.remove(&(st.dev(), st.ino()));
    }
}

pub fn remove_stale(dir: BorrowedFd<'_>) -> usize {
    let Ok(st) = rustix::fs::fstat(dir) else { return 0 };
    {
        let mut cleaned = CLEANED.lock().unwrap_or_else(|e| e.into_inner());
        if !cleaned.get_or_insert_with(HashSet::new).insert((st.st_dev, st.st_ino)) {
            return 0;
        }
    }
    let Ok(names) = crate::dir_names::of_fd(dir) else { return 0 };
    let mut removed = 0;
    for name in names {
        if maker(name.as_bytes()).is_some_and(gone)
            && rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::empty()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A pid no process has: a child that has exited and been reaped.
    fn dead_pid() -> i32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        pid
    }

    #[test]
    fn names_are_recognised_with_their_pid_and_nothing_else_is() {
        let name = temp_name(OsStr::new("app.conf"));
        let text = name.to_str().unwrap();
        assert!(text.starts_with(".app.conf.") && text.ends_with(".cfn-tmp"), "{text}");
        assert_eq!(maker(name.as_bytes()), Some(std::process::id() as i32));
        assert_ne!(temp_name(OsStr::new("app.conf")), name);
        assert_eq!(maker(b".a.b.12.3.cfn-tmp"), Some(12));
        for other in [
            &b"app.conf"[..],
            b".app.conf",
            b"app.12.3.cfn-tmp",
            b"..12.3.cfn-tmp",
            b".a.x.3.cfn-tmp",
            b".a.12..cfn-tmp",
            b".a.12.3.tmp",
            b".12.3.cfn-tmp",
        ] {
            assert_eq!(maker(other), None, "{}", String::from_utf8_lossy(other));
        }
        // A long name still makes a name a file system accepts.
        let long = OsString::from("x".repeat(255));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(temp_name(&long)), "").unwrap();
    }

    #[test]
    fn a_taken_name_is_skipped_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let next = COUNTER.load(Ordering::Relaxed);
        let taken: Vec<_> =
            (next..next + 5).map(|n| dir.path().join(format!(".t.{}.{n}.cfn-tmp", std::process::id()))).collect();
        for path in &taken {
            std::fs::write(path, "theirs").unwrap();
        }
        let (name, ()) = create_beside(OsStr::new("t"), |name| {
            std::fs::OpenOptions::new().write(true).create_new(true).open(dir.path().join(name)).map(drop)
        })
        .unwrap();
        assert!(!taken.contains(&dir.path().join(&name)));
        for path in &taken {
            assert_eq!(std::fs::read(path).unwrap(), b"theirs");
        }
        let failed = create_beside(OsStr::new("t"), |_| Err::<(), _>(io::Error::other("no")));
        assert_eq!(failed.err().unwrap().to_string(), "no");
    }

    #[test]
    fn a_zombie_has_ended_and_a_running_process_has_not() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Not reaped yet: a zombie once it has exited.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !gone(pid) {
            assert!(std::time::Instant::now() < deadline, "{pid} never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(std::fs::metadata(format!("/proc/{pid}")).is_ok(), "still there, as a zombie");
        drop(child);
        assert!(!gone(std::process::id() as i32));
        assert!(!gone(0) && !gone(-1));
    }

    #[test]
    fn leftovers_of_ended_processes_go_once_per_directory() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let ours = std::process::id();
        let parent = std::os::unix::process::parent_id();
        for name in [
            format!(".a.{dead}.0.cfn-tmp"),
            format!(".b.{dead}.7.cfn-tmp"),
            format!(".a.{ours}.0.cfn-tmp"),
            format!(".a.{parent}.0.cfn-tmp"),
            "a".to_string(),
            format!("a.{dead}.0.cfn-tmp"),
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let handle = std::fs::File::open(dir.path()).unwrap();
        forget_cleaned(dir.path());
        assert_eq!(remove_stale(handle.as_fd()), 2);
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        let mut want = vec![
            format!(".a.{ours}.0.cfn-tmp"),
            format!(".a.{parent}.0.cfn-tmp"),
            "a".into(),
            format!("a.{dead}.0.cfn-tmp"),
        ];
        want.sort();
        assert_eq!(left, want);
        // Once per directory and process.
        std::fs::write(dir.path().join(format!(".c.{dead}.1.cfn-tmp")), "").unwrap();
        assert_eq!(remove_stale(handle.as_fd()), 0);
    }
}
