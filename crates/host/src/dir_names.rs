//! The names in a directory, read with getdents64 into a buffer of our own.
//!
//! std's `read_dir` goes through libc's `DIR`, which musl allocates and frees with its
//! own allocator: an `mmap` and a `munmap` for each listing. cfn-init lists a few
//! directories on every run (leftover temporary files, its run records), so these
//! listings are part of its start-up cost.

use rustix::fs::{Dir, Mode, OFlags};
use std::ffi::OsString;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

const FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

/// The directory `dir` refers to, opened again for reading: an `O_PATH` descriptor can be
/// neither listed nor synced, and a descriptor of its own leaves `dir`'s position alone.
pub fn reopen(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(dir, c".", FLAGS, Mode::empty())?)
}

/// The names in the directory `dir` refers to (which may be an `O_PATH` descriptor),
/// `.` and `..` left out.
pub fn of_fd(dir: BorrowedFd<'_>) -> io::Result<Vec<OsString>> {
    names(reopen(dir)?)
}

/// The names in the directory at `path`, `.` and `..` left out.
pub fn of_path(path: &Path) -> io::Result<Vec<OsString>> {
    names(rustix::fs::open(path, FLAGS, Mode::empty())?)
}

fn names(fd: OwnedFd) -> io::Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in Dir::new(fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsString::from_vec(name.to_vec()));
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn lists_a_directory_by_path_and_by_o_path_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let want: Vec<String> = (0..300).map(|i| format!("file-{i:03}-{}", "x".repeat(40))).collect();
        for name in &want {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let sorted = |names: Vec<OsString>| {
            let mut names: Vec<String> = names.into_iter().map(|n| n.into_string().unwrap()).collect();
            names.sort();
            names
        };
        let mut expected = want.clone();
        expected.push("sub".into());
        assert_eq!(sorted(of_path(dir.path()).unwrap()), expected);
        let handle = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::PATH.bits() as i32)
            .open(dir.path())
            .unwrap();
        assert_eq!(sorted(of_fd(handle.as_fd()).unwrap()), expected);
        let missing = of_path(&dir.path().join("none")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let not_a_dir = of_path(&dir.path().join(&want[0])).unwrap_err();
        assert_eq!(not_a_dir.raw_os_error(), Some(rustix::io::Errno::NOTDIR.raw_os_error()));
    }
}
