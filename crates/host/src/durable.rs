//! Replacing a state file so that a crash or a power loss leaves either the old or the
//! new content, never half of one, and so that two writers never share a temporary file
//! (issue 13, item 14; STATE-01, STATE-04, STATE-05): the new content goes to a
//! temporary file with a name of its own ([`crate::temp_files`]: pid and a per-process
//! counter, created with `O_EXCL`), which is synced, renamed over the target, and then
//! the directory is synced so that the rename itself survives.

use crate::temp_files;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Replaces `target` with `content` (file mode `mode`, before the umask) durably. The
/// directory must exist. On failure the temporary file is removed and `target` is
/// unchanged (unless only the directory's sync failed: then the new content is in place
/// but may not survive a power loss). Temporary files that killed writers left in the
/// directory are removed the first time a process writes there ([`temp_files`]).
pub fn replace(target: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    write_and_rename(target, content, mode, true)
}

/// As [`replace`] without the syncs, for records whose loss costs little (cfn-init's run
/// records, which `cfn-bootstrap status` reads): a reader still never sees half a file,
/// but a power loss may leave the old content, or an empty file, which readers skip.
/// Two syncs per write would cost more than a short cfn-init run itself.
pub fn replace_unsynced(target: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    write_and_rename(target, content, mode, false)
}

fn write_and_rename(target: &Path, content: &[u8], mode: u32, sync: bool) -> std::io::Result<()> {
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name =
        target.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", target.display())))?;
    let dir_handle = File::open(dir)?;
    temp_files::remove_stale(dir_handle.as_fd());
    // A leftover of a crashed process with a reused pid is not ours to truncate: the
    // next name is tried.
    // Locked until it is renamed or removed, so that no other process's cleaner takes it.
    let (temp, mut file) = temp_files::create_beside(name, |temp| {
        let file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(dir.join(temp))?;
        temp_files::hold(&file).map(|()| file)
    })?;
    let temp = dir.join(temp);
    let written = file
        .write_all(content)
        .and_then(|_| if sync { file.sync_all() } else { Ok(()) })
        .and_then(|_| std::fs::rename(&temp, target));
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    if sync { dir_handle.sync_all() } else { Ok(()) }
}

/// Makes the directory's entries (a rename, a new file) durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_the_content_with_the_mode_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("metadata_db.json");
        std::fs::write(&target, "old").unwrap();
        replace(&target, b"{\"new\": 1}", 0o600).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"{\"new\": 1}");
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left");
    }

    #[test]
    fn unsynced_replaces_the_same_way() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("run.json");
        replace_unsynced(&target, b"first", 0o600).unwrap();
        replace_unsynced(&target, b"second", 0o600).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"second");
        assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left");
    }

    #[test]
    fn leftovers_of_killed_writers_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("state.json");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let live = std::os::unix::process::parent_id();
        let killed = dir.path().join(format!(".state.json.{dead}.0.cfn-tmp"));
        let running = dir.path().join(format!(".state.json.{live}.0.cfn-tmp"));
        std::fs::write(&killed, "half").unwrap();
        std::fs::write(&running, "someone else's").unwrap();
        // Another test of this process may have cleaned a directory with this inode.
        temp_files::forget_cleaned(dir.path());
        replace(&target, b"mine", 0o600).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"mine");
        assert!(!killed.exists());
        assert_eq!(std::fs::read(&running).unwrap(), b"someone else's");
    }

    #[test]
    fn a_failed_rename_removes_the_temporary_file_and_keeps_the_target() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty directory: the rename fails.
        let target = dir.path().join("busy");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("inside"), "x").unwrap();
        assert!(replace(&target, b"new", 0o600).is_err());
        assert!(target.join("inside").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "the temporary file is removed");
        // A missing directory is an error, not a panic.
        assert!(replace(&dir.path().join("missing/x.json"), b"new", 0o600).is_err());
    }
}
