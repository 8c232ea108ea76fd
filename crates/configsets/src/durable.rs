//! Making written files durable without making the build wait for the disk
//! (INIT-FILES-13).
//!
//! A files section ends by handing the directories it wrote to a `BackgroundSync`,
//! which runs one `syncfs` per file system on its own thread while the build goes on
//! (commands, services, the next config). The build waits for it before it reports its
//! outcome, so everything is on disk when cfn-init exits, as before; only the wait
//! overlaps with work that does not depend on it (a command reads the new files from
//! the page cache either way). One sync is in flight at a time: starting another
//! first waits for the previous one.
//!
//! Measured with `cargo xtask bench` (workload 1): the sync of a 3-file section took
//! 1–2 ms of the run's wall time when the build waited for it.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::thread::JoinHandle;

/// Syncs run on a thread with a small stack: they only make system calls.
const STACK_BYTES: usize = 64 * 1024;

#[derive(Default)]
pub struct BackgroundSync {
    pending: Option<JoinHandle<()>>,
}

impl BackgroundSync {
    pub fn new() -> BackgroundSync {
        BackgroundSync::default()
    }

    /// Starts syncing the file systems that hold `dirs`.
    pub fn start(&mut self, dirs: BTreeSet<PathBuf>) {
        self.wait();
        if dirs.is_empty() {
            return;
        }
        let job = dirs.clone();
        let spawned = std::thread::Builder::new()
            .name("syncfs".into())
            .stack_size(STACK_BYTES)
            .spawn(move || sync_filesystems(&job));
        match spawned {
            Ok(handle) => self.pending = Some(handle),
            // No thread to be had: sync here and now.
            Err(_) => sync_filesystems(&dirs),
        }
    }

    /// Waits until the sync in flight, if any, has finished.
    pub fn wait(&mut self) {
        if let Some(handle) = self.pending.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for BackgroundSync {
    fn drop(&mut self) {
        self.wait();
    }
}

/// One `syncfs` per file system among `dirs`: the files' data and the renames.
fn sync_filesystems(dirs: &BTreeSet<PathBuf>) {
    let mut seen = Vec::new();
    for dir in dirs {
        let Ok(handle) = File::open(dir) else { continue };
        let Ok(meta) = handle.metadata() else { continue };
        if seen.contains(&meta.dev()) {
            continue;
        }
        seen.push(meta.dev());
        // SAFETY: a valid open descriptor.
        if unsafe { libc::syncfs(handle.as_raw_fd()) } != 0 {
            tracing::warn!("Could not sync the file system of {}: {}", dir.display(), std::io::Error::last_os_error());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncs_in_the_background_and_waits_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        let mut sync = BackgroundSync::new();
        sync.start(BTreeSet::from([dir.path().to_path_buf(), dir.path().join("missing")]));
        assert!(sync.pending.is_some());
        sync.start(BTreeSet::from([dir.path().to_path_buf()]));
        sync.wait();
        assert!(sync.pending.is_none());
        sync.start(BTreeSet::new());
        assert!(sync.pending.is_none());
    }
}
