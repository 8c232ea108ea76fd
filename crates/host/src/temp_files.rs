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
//! directory: one `readdir` per directory and run. A name goes only when nothing says
//! its writer is still at work (issue 22, item 9):
//! * its writer holds no lock on it. A writer takes an open-file-description lock
//!   ([`hold`]) on the temporary file it creates and keeps it until the file is renamed
//!   or removed; the kernel drops it when the writer dies. A lock holds across PID
//!   namespaces, where a pid does not: on a volume shared between containers, a writer
//!   in another container has a pid that means nothing here (no such process, or
//!   another one), and its file is kept because it is locked;
//! * and its pid names no running process here (no `/proc/<pid>`, or a zombie), which
//!   keeps what cannot carry a lock — a symbolic link, a hard link to a finished file,
//!   the previous file on its way to `.bak` — for as long as a writer of this namespace
//!   runs; those stand under a temporary name only between two system calls;
//! * and it belongs to the user this process runs as: someone else's file is theirs.
//!
//! Only regular files and symbolic links are removed; a regular file only while it is
//! locked by the cleaner, after checking that the name still leads to the file locked.
//! A file that cannot be locked at all (a file system without locks) is kept.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
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

/// Marks `file`, just created under a temporary name, as being written: an
/// open-file-description lock that lasts until every descriptor of this opening is
/// closed (the writer keeps one until the rename), or the writer dies. Fails with
/// `AlreadyExists`, so that [`create_beside`] moves on to the next name, when a cleaner
/// took the file in the instant between its creation and this lock (it holds the lock,
/// or has already removed the file). Where the file system has no locks, the file stays
/// unlocked: [`remove_stale`] keeps what it cannot lock.
pub fn hold(file: &impl AsFd) -> io::Result<()> {
    match ofd_lock(file.as_fd(), libc::F_WRLCK as libc::c_short) {
        Ok(()) => {}
        Err(e) if is_held(&e) => return Err(taken()),
        Err(_) => return Ok(()),
    }
    // The cleaner removed it before the lock: this file has no name any more.
    if rustix::fs::fstat(file)?.st_nlink == 0 {
        return Err(taken());
    }
    Ok(())
}

fn taken() -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, "the temporary file was taken by a cleaner")
}

/// Whether a lock failed because another opening holds one.
fn is_held(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES))
}

/// A non-blocking open-file-description lock (`F_OFD_SETLK`) of the whole file.
/// rustix's `fcntl_lock` takes process-associated locks (`F_SETLK`): those do not
/// conflict within one process (a cfn-hup thread would not see another's file) and go
/// when the process closes any descriptor of the file; open-file-description locks
/// belong to the opening, like `flock`, and are still `fcntl` locks, which network file
/// systems carry between hosts.
fn ofd_lock(fd: BorrowedFd<'_>, kind: libc::c_short) -> io::Result<()> {
    // SAFETY: an all-zero `flock` is valid (l_start 0 and l_len 0 are the whole file,
    // l_pid must be 0 for open-file-description locks).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: the descriptor is open for the call and `lock` outlives it.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLK, &lock) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
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
        Err(_) => !crate::process_identity::pid_exists(pid as u32),
    }
}

/// Removes the temporary files their writers left (module comment: unlocked, of a pid
/// that names no process here, ours) from the directory `dir`, the first time this
/// process asks for that directory; returns how many went. Errors are ignored: a
/// leftover only takes room.
pub fn remove_stale(dir: BorrowedFd<'_>) -> usize {
    let Ok(st) = rustix::fs::fstat(dir) else { return 0 };
    {
        let mut cleaned = CLEANED.lock().unwrap_or_else(|e| e.into_inner());
        if !cleaned.get_or_insert_with(HashSet::new).insert((st.st_dev, st.st_ino)) {
            return 0;
        }
    }
    let Ok(names) = crate::dir_names::of_fd(dir) else { return 0 };
    let euid = rustix::process::geteuid().as_raw();
    names.iter().filter(|name| maker(name.as_bytes()).is_some_and(gone) && remove_abandoned(dir, name, euid)).count()
}

/// Removes `name` from `dir` when it is ours and no writer holds it (module comment).
fn remove_abandoned(dir: BorrowedFd<'_>, name: &OsStr, euid: u32) -> bool {
    let Ok(found) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else { return false };
    if found.st_uid != euid {
        return false;
    }
    let unlink = || rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok();
    match FileType::from_raw_mode(found.st_mode) {
        // A link cannot be opened to be locked; its pid decided.
        FileType::Symlink => unlink(),
        FileType::RegularFile => {
            // Read-only and non-blocking: nothing is written, no FIFO put there since
            // is waited on, and the descriptor must still be the file found.
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
            let Ok(fd) = rustix::fs::openat(dir, name, flags, Mode::empty()) else { return false };
            let same = |st: &rustix::fs::Stat| (st.st_dev, st.st_ino) == (found.st_dev, found.st_ino);
            if !rustix::fs::fstat(&fd).is_ok_and(|st| same(&st)) {
                return false;
            }
            // A shared lock: it fails while the writer holds its exclusive one, and
            // until it is released (with `fd`) no writer can take the file ([`hold`]).
            if ofd_lock(fd.as_fd(), libc::F_RDLCK as libc::c_short).is_err() {
                return false;
            }
            // The name must still lead to the file locked: an unlink removes a name,
            // not a file.
            rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| same(&st)) && unlink()
        }
        _ => false,
    }
}

/// Forgets `dir` as cleaned, for tests: other tests of the same process clean
/// directories they then delete, and a new directory may be given the same inode.
#[cfg(test)]
pub(crate) fn forget_cleaned(dir: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let st = std::fs::metadata(dir).unwrap();
    if let Some(cleaned) = CLEANED.lock().unwrap().as_mut() {
        cleaned.remove(&(st.dev(), st.ino()));
    }
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

    /// `dir` opened, and forgotten as cleaned (see [`forget_cleaned`]).
    fn fresh(dir: &std::path::Path) -> std::fs::File {
        forget_cleaned(dir);
        std::fs::File::open(dir).unwrap()
    }

    #[test]
    fn a_locked_file_is_kept_whatever_its_pid_says_and_goes_once_released() {
        // A writer in another PID namespace: its pid names no process here.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!(".a.{}.0.cfn-tmp", dead_pid()));
        let writer = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).unwrap();
        hold(&writer).unwrap();
        assert_eq!(remove_stale(fresh(dir.path()).as_fd()), 0);
        assert!(path.exists(), "a live writer's file is kept");
        drop(writer);
        assert_eq!(remove_stale(fresh(dir.path()).as_fd()), 1);
        assert!(!path.exists(), "an abandoned file goes");
    }

    #[test]
    fn a_writer_does_not_take_a_file_a_cleaner_holds_or_has_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".b.1.0.cfn-tmp");
        let writer = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).unwrap();
        let cleaner = std::fs::File::open(&path).unwrap();
        ofd_lock(cleaner.as_fd(), libc::F_RDLCK as libc::c_short).unwrap();
        assert_eq!(hold(&writer).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        // The cleaner removed it and let go: the writer's file has no name.
        std::fs::remove_file(&path).unwrap();
        drop(cleaner);
        assert_eq!(hold(&writer).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
    }

    #[test]
    fn links_go_by_their_pid_and_directories_and_other_users_files_stay() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let ours = std::process::id();
        let p = |name: String| dir.path().join(name);
        std::os::unix::fs::symlink("target", p(format!(".l.{dead}.0.cfn-tmp"))).unwrap();
        std::os::unix::fs::symlink("target", p(format!(".l.{ours}.0.cfn-tmp"))).unwrap();
        std::fs::create_dir(p(format!(".d.{dead}.0.cfn-tmp"))).unwrap();
        let theirs = p(format!(".t.{dead}.0.cfn-tmp"));
        std::fs::write(&theirs, "").unwrap();
        let root = rustix::process::geteuid().is_root();
        if root {
            std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
        }
        assert_eq!(remove_stale(fresh(dir.path()).as_fd()), if root { 1 } else { 2 });
        assert!(std::fs::symlink_metadata(p(format!(".l.{dead}.0.cfn-tmp"))).is_err());
        assert!(std::fs::symlink_metadata(p(format!(".l.{ours}.0.cfn-tmp"))).is_ok());
        assert!(p(format!(".d.{dead}.0.cfn-tmp")).is_dir());
        assert_eq!(theirs.exists(), root, "another user's file stays");
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
        let handle = fresh(dir.path());
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
