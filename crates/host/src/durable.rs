//! Replacing a state file so that a crash or a power loss leaves either the old or the
//! new content, never half of one, and so that two writers never share a temporary file
//! (issue 13, item 14; STATE-01, STATE-04, STATE-05): the new content goes to a
//! temporary file with a name of its own (pid and a per-process counter, created with
//! `O_EXCL`), which is synced, renamed over the target, and then the directory is
//! synced so that the rename itself survives.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary files of one process (threads, a replaced listener).
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name beside `target` that no other writer uses: `.<name>.<pid>.<n>.tmp`.
pub fn temp_path(target: &Path) -> PathBuf {
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Replaces `target` with `content` (file mode `mode`, before the umask) durably. The
/// directory must exist. On failure the temporary file is removed and `target` is
/// unchanged (unless only the directory's sync failed: then the new content is in place
/// but may not survive a power loss).
pub fn replace(target: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // A leftover of a crashed process with a reused pid is not ours to truncate: try
    // the next name.
    let (temp, mut file) = loop {
        let temp = temp_path(target);
        match std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&temp) {
            Ok(file) => break (temp, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let written = file.write_all(content).and_then(|_| file.sync_all()).and_then(|_| std::fs::rename(&temp, target));
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    sync_dir(dir)
}

/// Makes the directory's entries (a rename, a new file) durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn temp_names_are_unique_within_the_process_and_across_threads() {
        let target = Path::new("/x/data/commands_run.json");
        let names: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> =
                (0..4).map(|_| s.spawn(|| (0..250).map(|_| temp_path(target)).collect::<Vec<_>>())).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let unique: HashSet<&PathBuf> = names.iter().collect();
        assert_eq!(unique.len(), 1000);
        let prefix = format!(".commands_run.json.{}.", std::process::id());
        for name in &names {
            assert_eq!(name.parent(), Some(Path::new("/x/data")));
            let file = name.file_name().unwrap().to_str().unwrap();
            assert!(file.starts_with(&prefix) && file.ends_with(".tmp"), "{file}");
        }
    }

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
    fn an_existing_file_with_the_next_name_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("state.json");
        // Whatever sits at the names the counter hands out next (a crashed process's
        // leftovers with a reused pid) is neither truncated nor renamed.
        let next = COUNTER.load(Ordering::Relaxed);
        let squatted: Vec<PathBuf> =
            (next..next + 20).map(|n| dir.path().join(format!(".state.json.{}.{n}.tmp", std::process::id()))).collect();
        for name in &squatted {
            std::fs::write(name, "someone else's").unwrap();
        }
        replace(&target, b"mine", 0o600).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"mine");
        for name in &squatted {
            assert_eq!(std::fs::read(name).unwrap(), b"someone else's");
        }
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
