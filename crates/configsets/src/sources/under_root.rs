//! The target of one archive, opened once, and the directories under it reached from
//! that descriptor one component at a time without following links (issue 13, item 5).
//!
//! The extraction decides where a member goes on the real tree (links followed as
//! `realpath` would, nothing outside the target); what it writes is then written
//! relative to a directory opened here. A directory on the way that became a symbolic
//! link since (a user who can write the target swapped it) is not followed: the member
//! fails, naming it, and nothing is written where the link leads. Modes and times are
//! set on opened descriptors (`fchmod`, `futimens`), never through a path.

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

/// `O_PATH`: search permission is all a directory needs to be the base of `*at` calls.
/// A link opened with `O_DIRECTORY | O_NOFOLLOW` fails (`ENOTDIR` or `ELOOP`).
const DIR_FLAGS: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
/// Times a directory is created again when it disappears before it could be opened.
const MAX_RETRIES: u32 = 5;

pub(super) fn io_error(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// The target, opened.
pub(super) struct Root {
    fd: OwnedFd,
    /// Its canonical path: every real path the extraction works with starts with it.
    pub(super) path: PathBuf,
}

impl Root {
    /// Opens the target at its canonical path (which holds no link).
    pub(super) fn open(path: PathBuf) -> io::Result<Root> {
        let fd = rustix::fs::openat(rustix::fs::CWD, &path, DIR_FLAGS, Mode::empty()).map_err(io_error)?;
        Ok(Root { fd, path })
    }

    /// Opens the directory at `real` (a path under the target), walking from the target
    /// without following any link; missing directories are created (mode 0777 less the
    /// umask, as `create_dir_all` did) when `create`.
    pub(super) fn open_dir(&self, real: &Path, create: bool) -> io::Result<OwnedFd> {
        let rel = real
            .strip_prefix(&self.path)
            .map_err(|_| io::Error::other(format!("{} is not under {}", real.display(), self.path.display())))?;
        let mut dir = rustix::fs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty()).map_err(io_error)?;
        let mut shown = self.path.clone();
        let count = rel.components().count();
        for (i, component) in rel.components().enumerate() {
            let Component::Normal(name) = component else {
                return Err(io::Error::other(format!("{} is not a plain path", real.display())));
            };
            shown.push(name);
            let mut retries = 0;
            dir = loop {
                match rustix::fs::openat(&dir, name, DIR_FLAGS, Mode::empty()) {
                    Ok(next) => break next,
                    Err(Errno::NOENT) if create && retries < MAX_RETRIES => {
                        retries += 1;
                        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                            Ok(()) | Err(Errno::EXIST) => {}
                            Err(e) => return Err(io_error(e)),
                        }
                    }
                    Err(e @ (Errno::LOOP | Errno::NOTDIR)) => {
                        let link = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
                            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
                        if link {
                            return Err(io::Error::other(format!(
                                "{} became a symbolic link during the extraction",
                                shown.display()
                            )));
                        }
                        // `create_dir_all` said so of a file where the directory goes:
                        // messages stay as they were.
                        if create && e == Errno::NOTDIR && i + 1 == count {
                            return Err(io_error(Errno::EXIST));
                        }
                        return Err(io_error(e));
                    }
                    Err(e) => return Err(io_error(e)),
                }
            };
        }
        Ok(dir)
    }
}

/// `(st_dev, st_ino)` of an opened file.
pub(super) fn identity(fd: impl AsFd) -> io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(fd).map_err(io_error)?;
    Ok((st.st_dev, st.st_ino))
}

/// Sets the mode and (when given) the mtime of the opened directory `dir` itself.
pub(super) fn set_dir_mode_and_time(dir: &OwnedFd, mode: u32, mtime: Option<u64>) -> io::Result<()> {
    let when = mtime.map(|t| SystemTime::UNIX_EPOCH + Duration::from_secs(t));
    let read = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, ".", read, Mode::empty()) {
        Ok(handle) => {
            let handle = File::from(handle);
            handle.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
            if let Some(when) = when {
                handle.set_modified(when)?;
            }
            Ok(())
        }
        // Not readable by a user other than root (0311, or a mode set earlier in this
        // run): `fchmod` does not take an `O_PATH` descriptor, but the descriptor's
        // /proc entry names exactly its directory, never what a path leads to now.
        Err(Errno::ACCESS) => {
            let proc = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
            rustix::fs::chmodat(rustix::fs::CWD, &proc, Mode::from_raw_mode(mode), AtFlags::empty())
                .map_err(io_error)?;
            if let Some(t) = mtime {
                let omit = Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_OMIT };
                let times =
                    Timestamps { last_access: omit, last_modification: Timespec { tv_sec: t as i64, tv_nsec: 0 } };
                rustix::fs::utimensat(rustix::fs::CWD, &proc, &times, AtFlags::empty()).map_err(io_error)?;
            }
            Ok(())
        }
        Err(e) => Err(io_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;

    fn root() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::open(std::fs::canonicalize(dir.path()).unwrap()).unwrap();
        (dir, root)
    }

    #[test]
    fn missing_directories_are_created_and_errors_read_as_create_dir_all_gave_them() {
        let (_dir, root) = root();
        let deep = root.path.join("a/b/c");
        let fd = root.open_dir(&deep, true).unwrap();
        assert_eq!(identity(&fd).unwrap().1, std::fs::metadata(&deep).unwrap().ino());
        assert!(root.open_dir(&root.path.join("missing"), false).is_err());
        assert!(!root.path.join("missing").exists());
        std::fs::write(root.path.join("file"), "x").unwrap();
        for rel in ["file", "file/sub"] {
            let path = root.path.join(rel);
            let ours = root.open_dir(&path, true).err().unwrap().to_string();
            let std = std::fs::create_dir_all(&path).err().unwrap().to_string();
            assert_eq!(ours, std, "{rel}");
        }
        let err = root.open_dir(Path::new("/etc"), true).err().unwrap().to_string();
        assert!(err.starts_with("/etc is not under "), "{err}");
    }

    #[test]
    fn links_on_the_way_are_named_and_not_followed() {
        let (_dir, root) = root();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path.join("real")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.path.join("l")).unwrap();
        std::os::unix::fs::symlink("real", root.path.join("inside")).unwrap();
        for rel in ["l", "l/sub", "inside/sub"] {
            let err = root.open_dir(&root.path.join(rel), true).err().unwrap().to_string();
            let link = root.path.join(rel.split('/').next().unwrap());
            assert_eq!(err, format!("{} became a symbolic link during the extraction", link.display()));
        }
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(root.path.join("real")).unwrap().count(), 0);
    }

    #[test]
    fn modes_and_times_are_set_on_the_opened_directory() {
        let (_dir, root) = root();
        let fd = root.open_dir(&root.path.join("d"), true).unwrap();
        // Moved away after opening: the directory itself changes, not what is at its name.
        std::fs::rename(root.path.join("d"), root.path.join("moved")).unwrap();
        std::fs::create_dir(root.path.join("d")).unwrap();
        set_dir_mode_and_time(&fd, 0o705, Some(1_600_000_000)).unwrap();
        let moved = std::fs::metadata(root.path.join("moved")).unwrap();
        assert_eq!((moved.permissions().mode() & 0o7777, moved.mtime()), (0o705, 1_600_000_000));
        assert_ne!(std::fs::metadata(root.path.join("d")).unwrap().permissions().mode() & 0o7777, 0o705);
    }

    const CHILD: &str = "CFN_TEST_UNDER_ROOT_DIR";

    /// A user other than root cannot open an unreadable directory for `fchmod`; its
    /// mode is set through the descriptor's /proc entry. Run as root, the test runs
    /// itself again as `nobody` (uid 65534) in a directory that user owns.
    #[test]
    fn unreadable_directories_get_their_mode_as_another_user_too() {
        let name = "sources::under_root::tests::unreadable_directories_get_their_mode_as_another_user_too";
        // Made unreadable first, then given its mode and mtime.
        let make = |base: PathBuf| {
            let root = Root::open(base).unwrap();
            let fd = root.open_dir(&root.path.join("d"), true).unwrap();
            set_dir_mode_and_time(&fd, 0o311, None).unwrap();
            set_dir_mode_and_time(&fd, 0o700, Some(1_500_000_000)).unwrap();
        };
        if let Some(base) = std::env::var_os(CHILD) {
            return make(base.into());
        }
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&base, Some(65534), Some(65534)).unwrap();
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads=1"])
                .env(CHILD, &base)
                .uid(65534)
                .gid(65534)
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
        } else {
            make(base.clone());
        }
        let made = std::fs::metadata(base.join("d")).unwrap();
        assert_eq!((made.permissions().mode() & 0o7777, made.mtime()), (0o700, 1_500_000_000));
    }
}
