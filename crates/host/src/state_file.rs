//! Reading a state file the tools write themselves (cfn-hup's `activity.json` and pid
//! file) for a report: only a regular file, never waiting on it, never more than a cap.
//!
//! The tools write these files as regular files (a rename into place, or an exclusive
//! create), never as links. Whatever else stands at the path was put there by someone
//! else, and reading it as it comes can hang or never end: a FIFO blocks `open` until a
//! writer comes and `read` until it writes, `/dev/zero` never ends, a link can lead
//! anywhere. So the file is opened with `O_NONBLOCK` (a FIFO's open returns at once) and
//! `O_NOFOLLOW` (a link is refused), checked with `fstat` on the descriptor opened (no
//! race with a rename), and read up to a cap, past which it is refused rather than cut.

use rustix::fs::{FileType, Mode, OFlags};
use std::io::Read;
use std::path::Path;

/// Why a state file was not read. Each says what the file is, so that a message can
/// name the file and what to do with it.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    #[error("it does not exist")]
    Missing,
    #[error("it is a symbolic link, not the regular file the tools write")]
    Link,
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is larger than {cap} bytes, more than the tools ever write there")]
    TooLarge { cap: u64 },
    #[error("{0}")]
    Io(std::io::Error),
}

/// The content of the regular file at `path`, at most `cap` bytes (a larger file is an
/// error, not a prefix). Never blocks on a FIFO or a device, never follows a link.
pub fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, StateFileError> {
    read(path, cap, OFlags::NOFOLLOW)
}

/// [`read_regular`] through links: for a file the user keeps where they like (a profile
/// file of `~/.aws` that links into a dotfiles checkout), still only a regular file.
pub fn read_regular_following(path: &Path, cap: u64) -> Result<Vec<u8>, StateFileError> {
    read(path, cap, OFlags::empty())
}

fn read(path: &Path, cap: u64, links: OFlags) -> Result<Vec<u8>, StateFileError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY | links;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::NOENT => StateFileError::Missing,
        // O_NOFOLLOW on a link: ELOOP.
        rustix::io::Errno::LOOP => StateFileError::Link,
        e => StateFileError::Io(e.into()),
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| StateFileError::Io(e.into()))?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Err(StateFileError::NotRegular(kind_words(kind)));
    }
    if stat.st_size as u64 > cap {
        return Err(StateFileError::TooLarge { cap });
    }
    // The size may grow between fstat and the read: the read itself is capped too.
    let mut content = Vec::with_capacity(stat.st_size as usize);
    std::fs::File::from(fd).take(cap + 1).read_to_end(&mut content).map_err(StateFileError::Io)?;
    if content.len() as u64 > cap {
        return Err(StateFileError::TooLarge { cap });
    }
    Ok(content)
}

fn kind_words(kind: FileType) -> &'static str {
    match kind {
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Directory => "a directory",
        FileType::Socket => "a socket",
        FileType::Symlink => "a symbolic link",
        _ => "of an unknown kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_within_its_cap_and_refuses_a_larger_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read_regular(&file, 5).unwrap(), b"12345");
        assert!(matches!(read_regular(&file, 4), Err(StateFileError::TooLarge { cap: 4 })));
        assert!(matches!(read_regular(&dir.path().join("none"), 4), Err(StateFileError::Missing)));
    }

    #[test]
    fn refuses_a_fifo_a_device_a_directory_and_a_link_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let started = std::time::Instant::now();
        let words = |path: &Path| read_regular(path, 1 << 20).unwrap_err().to_string();
        assert_eq!(words(&fifo), "it is a FIFO, not a regular file");
        assert_eq!(words(Path::new("/dev/zero")), "it is a character device, not a regular file");
        assert_eq!(words(dir.path()), "it is a directory, not a regular file");
        assert_eq!(words(&link), "it is a symbolic link, not the regular file the tools write");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
