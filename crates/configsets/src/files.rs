//! The `files` section (INIT-FILES-01..14): each file in path order, written atomically.
//!
//! The new content goes to a temporary file in the target's directory, gets its owner
//! and mode there, and is renamed over the target: a failure at any point leaves the
//! previous file untouched and no partial file behind (the reference truncated in
//! place, BUG-PARTIAL). The previous version is kept as `<path>.bak` (an older one moves
//! to `.bak2` meanwhile, as in the reference) by a hard link, so the path never goes
//! missing; a previous directory (or a file that cannot be hard-linked) is exchanged
//! with the new file in one `renameat2(RENAME_EXCHANGE)` and then moved to `.bak`.
//!
//! So a run killed at any moment (SIGKILL, tests/crash.rs) leaves every target with its
//! old or its new content in full, and every `.bak`/`.bak2` with a whole previous
//! version. What it can leave is a temporary file, hidden and named after its target
//! (`.<name>.<pid>.<n>.cfn-tmp`, [`cfn_host::temp_files`]); the next run removes those
//! of processes that no longer exist from each directory it writes in.
//!
//! Durability: one `syncfs` per file system at the end of the section makes the new
//! files and the renames durable together (`durable::sync_filesystems`). Measured here
//! (`cargo xtask bench`, workload 2), an fdatasync per file costs 0.7–4 ms a file under
//! load, against 0.3–0.4 ms a file for the whole section's single sync, so per-file
//! syncs would dominate every run.

use crate::document::Item;
use crate::durable;
use crate::environment::Environment;
use crate::model::{Content, FileSpec};
use crate::parent_dir::{Entry, LastParent, ParentDir};
use base64::Engine;
use cfn_host::{temp_files, users};
use rustix::io::Errno;
use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Seek, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Applies the section's files; returns the paths that changed (INIT-FILES-12). What
/// was written, also before a failure, is on disk when it returns.
pub fn apply(entries: &[Item<FileSpec>], env: &Environment<'_>) -> Result<Vec<String>, String> {
    let umask = process_umask();
    let mut changed = Vec::new();
    let mut dirs = SectionDirs::default();
    let mut result = Ok(());
    for entry in entries {
        let outcome = match &entry.spec {
            Ok(spec) => write_file(spec, env, umask, &mut dirs),
            Err(e) => Err(e.0.clone()),
        };
        match outcome {
            Ok(true) => changed.push(entry.key.clone()),
            Ok(false) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    durable::sync_filesystems(&dirs.written);
    result.map(|()| changed)
}

/// The directories a section writes in: the one open now, and one for each file system
/// it wrote in (to be made durable at the end).
#[derive(Default)]
struct SectionDirs {
    last: LastParent,
    written: durable::Written,
}

impl SectionDirs {
    /// The opened directory that holds `path`, and the name in it. A directory met for
    /// the first time is rid of a killed run's leftovers and remembered to be synced.
    fn open(&mut self, path: &Path) -> Result<(&ParentDir, OsString), String> {
        let (dir, name, fresh) = self.last.open(path).map_err(|e| e.to_string())?;
        if fresh {
            temp_files::remove_stale(dir.as_fd());
            if !self.written.iter().any(|(dev, ..)| *dev == dir.dev) {
                // Without a readable handle the file system goes unsynced, as it did
                // when the directory could not be opened by its path.
                if let Ok(handle) = cfn_host::dir_names::reopen(dir.as_fd()) {
                    self.written.push((dir.dev, dir.path.clone(), handle));
                }
            }
        }
        Ok((dir, name))
    }
}

/// The process umask (read without changing it for longer than the call).
pub(crate) fn process_umask() -> u32 {
    use rustix::fs::Mode;
    // umask cannot fail; it is set straight back. Nothing else runs meanwhile.
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.as_raw_mode()
}

fn with_suffix(name: &OsStr, suffix: &str) -> OsString {
    let mut s = name.to_os_string();
    s.push(suffix);
    s
}

fn moved(from: &Path, to: &Path) {
    tracing::debug!("Moving {} to {}", from.display(), to.display());
}

/// What was at the path before, and how it was set aside.
struct Previous {
    entry: Entry,
    /// A previous regular file, open, for change detection: its content is compared
    /// with the new one in pieces, never read whole.
    file: Option<fs::File>,
    had_bak: bool,
}

/// The `.bak`/`.bak2` dance (INIT-FILES-10), undone on failure (INIT-FILES-11), all
/// within the opened parent directory.
struct Backup<'a> {
    dir: &'a ParentDir,
    name: OsString,
    bak: OsString,
    bak2: OsString,
    previous: Option<Previous>,
    /// The previous entry could not be hard-linked as `.bak` (a directory, or a file
    /// system without hard links): it moves there when the new entry takes its place.
    set_aside: bool,
}

impl<'a> Backup<'a> {
    fn take(dir: &'a ParentDir, name: &OsStr) -> Result<Backup<'a>, String> {
        let bak = with_suffix(name, ".bak");
        let bak2 = with_suffix(name, ".bak2");
        let (path, bak_path, bak2_path) = (dir.show(name), dir.show(&bak), dir.show(&bak2));
        let mut backup = Backup { dir, name: name.into(), bak, bak2, previous: None, set_aside: false };
        let Ok(entry) = dir.entry(name) else {
            return Ok(backup);
        };
        tracing::debug!("{} already exists", path.display());
        let file = if entry.is_file() { open_same_file(dir, name, &entry) } else { None };
        let had_bak = dir.exists(&backup.bak);
        if had_bak {
            dir.remove_any(&backup.bak2);
            moved(&bak_path, &bak2_path);
            dir.rename(&backup.bak, &backup.bak2)
                .map_err(|e| format!("Could not rename {}: {e}", bak_path.display()))?;
        }
        moved(&path, &bak_path);
        // A hard link keeps the file in place until the new one is renamed over it; a
        // directory is moved aside only when the new entry replaces it ([`Self::install`]).
        backup.set_aside = entry.is_dir() || dir.hard_link(name, &backup.bak).is_err();
        backup.previous = Some(Previous { entry, file, had_bak });
        Ok(backup)
    }

    /// Puts the new entry (`temp`) at the path. A previous entry that is set aside is
    /// exchanged with it in one step (`renameat2(RENAME_EXCHANGE)`) and then moved to
    /// `.bak`, so that the path never goes missing, not even when the run is killed in
    /// between; only a file system without the exchange has the path empty for a moment.
    fn install(&self, temp: Temp<'_>) -> Result<(), String> {
        if !self.set_aside {
            return temp.install(&self.name);
        }
        let dir = self.dir;
        let path = dir.show(&self.name);
        match dir.exchange(&temp.name, &self.name) {
            Ok(()) => {
                // The previous entry is at the temporary name now.
                let previous = temp.keep();
                dir.rename(&previous, &self.bak).map_err(|e| {
                    format!("Could not rename {} (the previous {}): {e}", dir.show(&previous).display(), path.display())
                })
            }
            Err(e) if matches!(Errno::from_io_error(&e), Some(Errno::INVAL | Errno::NOSYS)) => {
                dir.rename(&self.name, &self.bak).map_err(|e| format!("Could not rename {}: {e}", path.display()))?;
                temp.install(&self.name).inspect_err(|_| {
                    let _ = dir.rename(&self.bak, &self.name);
                })
            }
            Err(e) => Err(format!("Could not rename {}: {e}", temp.path().display())),
        }
    }

    /// Puts everything back as it was (before [`Self::install`]).
    fn restore(&self) {
        let Some(previous) = &self.previous else { return };
        let dir = self.dir;
        if !self.set_aside {
            moved(&dir.show(&self.bak), &dir.show(&self.name));
            let _ = dir.remove_file(&self.bak);
        }
        if previous.had_bak {
            moved(&dir.show(&self.bak2), &dir.show(&self.bak));
            let _ = dir.rename(&self.bak2, &self.bak);
        }
    }

    /// After success: an unchanged file keeps the older backup as `.bak`.
    fn finish(&self, changed: bool) {
        let dir = self.dir;
        if !dir.exists(&self.bak2) {
            return;
        }
        if changed || self.same_file(&self.bak2, &self.bak) {
            // Both names can be one file: a run killed after it linked `.bak` to the file
            // left `.bak` as the file itself, which this run moved to `.bak2` before
            // linking `.bak` again. A rename between two links to one file does nothing.
            dir.remove_any(&self.bak2);
        } else {
            moved(&dir.show(&self.bak2), &dir.show(&self.bak));
            let _ = dir.rename(&self.bak2, &self.bak);
        }
    }

    fn same_file(&self, a: &OsStr, b: &OsStr) -> bool {
        match (self.dir.entry(a), self.dir.entry(b)) {
            (Ok(a), Ok(b)) => a.dev == b.dev && a.ino == b.ino,
            _ => false,
        }
    }
}

/// The regular file `name` opened for reading, if it is still the one `entry`
/// describes (not a link or a FIFO put there since: neither is followed or waited on).
pub(crate) fn open_same_file(dir: &ParentDir, name: &OsStr, entry: &Entry) -> Option<fs::File> {
    let file = dir.open_read(name).ok()?;
    let now = file.metadata().ok()?;
    (now.is_file() && now.dev() == entry.dev && now.ino() == entry.ino).then_some(file)
}

/// Whether `old` (the previous file) and `new` hold the same bytes: their sizes first,
/// then their contents in pieces, so that neither is ever held whole.
fn same_content(old: &fs::File, old_len: u64, mut new: impl Read, new_len: u64) -> std::io::Result<bool> {
    if old_len != new_len {
        return Ok(false);
    }
    let mut old = old;
    old.rewind()?;
    let (mut a, mut b) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = read_full(&mut old, &mut a)?;
        let m = read_full(&mut new, &mut b)?;
        if a[..n] != b[..m] {
            return Ok(false);
        }
        if n < a.len() {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the input ends; returns how much was read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A temporary file or link beside the target, removed unless it was renamed into place.
/// Its name ([`temp_files`]) tells a killed run's leftover, which the next run removes.
struct Temp<'a> {
    dir: &'a ParentDir,
    name: OsString,
    kept: bool,
    /// The file written, open (and so locked, [`temp_files::hold`]) until it is renamed
    /// into place or removed.
    held: Option<fs::File>,
}

impl<'a> Temp<'a> {
    /// Makes the temporary entry with `make` (which must not reuse a taken name) under
    /// the first free temporary name for `target`.
    fn create<T>(
        dir: &'a ParentDir,
        target: &OsStr,
        make: impl FnMut(&OsStr) -> std::io::Result<T>,
    ) -> std::io::Result<(Temp<'a>, T)> {
        let (name, made) = temp_files::create_beside(target, make)?;
        Ok((Temp { dir, name, kept: false, held: None }, made))
    }

    fn path(&self) -> PathBuf {
        self.dir.show(&self.name)
    }

    fn install(mut self, target: &OsStr) -> Result<(), String> {
        self.dir.rename(&self.name, target).map_err(|e| format!("Could not rename {}: {e}", self.path().display()))?;
        self.kept = true;
        Ok(())
    }

    /// Leaves the entry at the temporary name (the caller moves it); returns the name.
    fn keep(mut self) -> OsString {
        self.kept = true;
        std::mem::take(&mut self.name)
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = self.dir.remove_file(&self.name);
        }
    }
}

/// Writes one file; returns whether it changed.
fn write_file(spec: &FileSpec, env: &Environment<'_>, umask: u32, dirs: &mut SectionDirs) -> Result<bool, String> {
    let path = Path::new(&spec.path);
    if !path.is_absolute() {
        return Err(format!("File specified with non-absolute path: {}", spec.path));
    }
    if spec.is_symlink() {
        return write_symlink(spec, path, dirs);
    }
    let (dir, name) = dirs.open(path)?;
    let backup = Backup::take(dir, &name)?;
    let result = write_regular(spec, dir, &name, env, umask, backup.previous.as_ref())
        .and_then(|(temp, changed)| backup.install(temp).map(|()| changed));
    match result {
        Ok(changed) => {
            backup.finish(changed);
            Ok(changed)
        }
        Err(e) => {
            backup.restore();
            Err(e)
        }
    }
}

/// Writes the new content to a temporary file beside the target, with its owner and
/// mode; returns it with whether the content changed.
fn write_regular<'a>(
    spec: &FileSpec,
    dir: &'a ParentDir,
    name: &OsStr,
    env: &Environment<'_>,
    umask: u32,
    previous: Option<&Previous>,
) -> Result<(Temp<'a>, bool), String> {
    tracing::debug!("Writing content to {}", spec.path);
    // Locked while it is written, so that no other run's cleaner takes it (temp_files).
    let (mut temp, mut file) = Temp::create(dir, name, |temp| {
        dir.create_new(temp, 0o600).and_then(|file| temp_files::hold(&file).map(|()| file))
    })
    .map_err(|e| format!("Could not write {}: {e}", spec.path))?;
    let written: Option<Vec<u8>> = match &spec.content {
        Some(content) => {
            let bytes = inline_content(spec, content)?;
            file.write_all(&bytes).map_err(|e| format!("Could not write {}: {e}", spec.path))?;
            Some(bytes)
        }
        None => match &spec.source {
            Some(url) => {
                // The URL may carry a password or a presigned signature (SEC-02).
                let shown = cfn_aws::http::redact_url(url);
                tracing::debug!("Retrieving contents from {shown}");
                env.fetch
                    .fetch(url, spec.authentication.as_deref(), &mut file)
                    .map_err(|reason| format!("Failed to retrieve {shown}: {reason}"))?;
                if let Some(context) = &spec.context {
                    let mut text = String::new();
                    file.rewind()
                        .and_then(|_| file.read_to_string(&mut text))
                        .map_err(|e| format!("Failed to retrieve {shown}: {e}"))?;
                    let rendered = render(&text, context, &spec.path)?;
                    file.set_len(0)
                        .and_then(|_| file.rewind())
                        .and_then(|_| file.write_all(rendered.as_bytes()))
                        .map_err(|e| format!("Could not write {}: {e}", spec.path))?;
                }
                None
            }
            None => return Err("File specified without source or content".into()),
        },
    };

    // Never a link's mode (issue 13, item 2): only a regular file's.
    let previous_mode = previous.filter(|p| p.entry.is_file()).map(|p| p.entry.mode);
    let mode = mode_for(spec, previous_mode, umask);
    // Ownership is applied first: chown clears setuid/setgid bits.
    let (uid, gid) = owner_ids(spec)?;
    let keep_owner = spec.owner.is_none() && spec.group.is_none();
    let (uid, gid) = match previous {
        // An addition: a rewritten file keeps its owner unless told otherwise (the
        // reference handed it to root, WEAK-owner) — only a regular file's, and only in
        // a directory that only root can write; anywhere else another user could have
        // put it there to be handed the new content (issue 13, item 2).
        Some(p) if keep_owner && p.entry.is_file() && dir.root_only => (Some(p.entry.uid), Some(p.entry.gid)),
        _ => (uid, gid),
    };
    if uid.is_some() || gid.is_some() {
        std::os::unix::fs::fchown(&file, uid, gid)
            .map_err(|e| format!("Could not change the owner of {}: {e}", spec.path))?;
    }
    file.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(|e| format!("Could not set the mode of {}: {e}", spec.path))?;

    // INIT-FILES-10: whether the content changed decides what `.bak` keeps. A file
    // that cannot be compared counts as changed.
    let changed = match previous.map(|p| (&p.entry, &p.file)) {
        Some((entry, Some(old))) if entry.is_file() => {
            let old_len = old.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
            let same = match &written {
                Some(bytes) => same_content(old, old_len, bytes.as_slice(), bytes.len() as u64),
                None => {
                    file.metadata().and_then(|m| file.rewind().and_then(|_| same_content(old, old_len, &file, m.len())))
                }
            };
            !same.unwrap_or(false)
        }
        _ => true,
    };
    // The lock goes when the file is renamed into place or removed.
    temp.held = Some(file);
    Ok((temp, changed))
}

/// The permission bits a written file gets: the metadata's mode, else those of the
/// regular file it replaces, else the default for new files under `umask`.
pub(crate) fn mode_for(spec: &FileSpec, previous_mode: Option<u32>, umask: u32) -> u32 {
    match (spec.mode, previous_mode) {
        (Some(mode), _) => {
            tracing::debug!("Setting mode for {} to {}", spec.path, shown_mode(spec));
            mode & 0o7777
        }
        (None, Some(mode)) => {
            tracing::debug!(
                "No mode specified for {}. Setting permissions of the existing file: {}.",
                spec.path,
                py_oct(mode)
            );
            mode
        }
        (None, None) => {
            let mode = (0o666 & !umask) & 0o775;
            tracing::debug!(
                "No mode specified for {}. The file will be created with the mode: {}",
                spec.path,
                py_oct(mode)
            );
            mode
        }
    }
}

/// The bytes of inline content: base64, JSON, a template, or the text itself.
pub(crate) fn inline_content(spec: &FileSpec, content: &Content) -> Result<Vec<u8>, String> {
    match content {
        Content::Json(value) => {
            if !cfn_python::truth::is_truthy(value) {
                // `false`, `0`, `{}` and `[]` count as no content, as in the reference.
                return Err("File specified without source or content".into());
            }
            tracing::debug!("Content will be serialized as a JSON structure");
            Ok(cfn_python::json::to_compact(value).into_bytes())
        }
        Content::Text(text) if spec.base64 => {
            tracing::debug!("Decoding base64 content");
            decode_base64(text)
        }
        Content::Text(text) => match &spec.context {
            Some(context) => render(text, context, &spec.path).map(String::into_bytes),
            None => Ok(text.clone().into_bytes()),
        },
    }
}

/// base64 content decoded as the reference's decoder does: characters outside the
/// alphabet are skipped; only a wrong length or padding is an error.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let cleaned: String = text.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')).collect();
    base64::engine::general_purpose::STANDARD.decode(cleaned).map_err(|_| format!("Malformed base64: {text}"))
}

/// The template rendered; a limit that stops it is reported with the file's path, since
/// the template itself is fine and only this file's rendering is refused.
pub(crate) fn render(template: &str, context: &Value, path: &str) -> Result<String, String> {
    tracing::debug!("Rendering as Mustache template");
    crate::mustache::render(template, context).map_err(|e| {
        if e.is_limit() {
            format!("Failed to render content as a Mustache template: {path}: {e}")
        } else {
            format!("Failed to render content as a Mustache template: {e}")
        }
    })
}

/// The ids for `owner` and `group`, logged as the reference logs them (-1 = unchanged).
pub(crate) fn owner_ids(spec: &FileSpec) -> Result<(Option<u32>, Option<u32>), String> {
    let uid = match &spec.owner {
        Some(name) => Some(users::user(name).ok_or_else(|| format!("{name} is not a valid user name"))?.uid),
        None => None,
    };
    let gid = match &spec.group {
        Some(name) => Some(users::group_id(name).ok_or_else(|| format!("{name} is not a valid group name"))?),
        None => None,
    };
    if uid.is_some() || gid.is_some() {
        let show = |id: Option<u32>| id.map_or("-1".to_string(), |i| i.to_string());
        tracing::debug!("Setting owner {} and group {} for {}", show(uid), show(gid), spec.path);
    }
    Ok((uid, gid))
}

/// Python 2's `oct()`: a leading 0, no 0o.
fn py_oct(mode: u32) -> String {
    if mode == 0 { "0".into() } else { format!("0{mode:o}") }
}

/// The mode as the metadata wrote it, for the log.
fn shown_mode(spec: &FileSpec) -> String {
    spec.mode_text.clone().unwrap_or_else(|| format!("{:06o}", spec.mode.unwrap_or(0)))
}

/// A symbolic link's target: its content (INIT-FILES-08).
pub(crate) fn symlink_target(spec: &FileSpec) -> Result<String, String> {
    match &spec.content {
        Some(Content::Text(t)) if !t.is_empty() => Ok(t.clone()),
        _ => Err("Symbolic link specified without a destination".into()),
    }
}

/// Whether `path` already leads to `target`'s file, so the link is left alone.
pub(crate) fn symlink_in_place(path: &Path, target: &str) -> bool {
    matches!(
        (fs::metadata(path), fs::metadata(target)),
        (Ok(existing), Ok(wanted)) if fs::symlink_metadata(path).is_ok()
            && existing.dev() == wanted.dev()
            && existing.ino() == wanted.ino()
    )
}

/// A symbolic link (mode `120xxx`, INIT-FILES-08): the content is the target.
fn write_symlink(spec: &FileSpec, path: &Path, dirs: &mut SectionDirs) -> Result<bool, String> {
    let target = symlink_target(spec)?;
    if symlink_in_place(path, &target) {
        tracing::info!("Symbolic link {} already exists", spec.path);
        return Ok(false);
    }
    if spec.mode.is_some() && fs::metadata(path.parent().unwrap_or(Path::new("/")).join(&target)).is_err() {
        // The mode is set through the link; with nothing there, fail before changing
        // anything (the reference created the link, then failed).
        return Err(format!(
            "Could not set the mode of {target} through the link {}: No such file or directory",
            spec.path
        ));
    }
    let (dir, name) = dirs.open(path)?;
    let backup = Backup::take(dir, &name)?;
    tracing::debug!("{} is specified as a symbolic link to {target}", spec.path);
    let result = (|| {
        let (temp, ()) = Temp::create(dir, &name, |temp| dir.symlink(OsStr::new(&target), temp))
            .map_err(|e| format!("Could not create {}: {e}", spec.path))?;
        if spec.mode.is_some() {
            tracing::debug!("Setting mode for {} to {}", spec.path, shown_mode(spec));
        }
        let (uid, gid) = owner_ids(spec)?;
        if uid.is_some() || gid.is_some() {
            dir.chown_nofollow(&temp.name, uid, gid)
                .map_err(|e| format!("Could not change the owner of {}: {e}", spec.path))?;
        }
        backup.install(temp)
    })();
    if let Err(e) = result {
        backup.restore();
        return Err(e);
    }
    backup.finish(true);
    // The mode applies to the link's target, as AWS documents (the link's own mode
    // cannot be set on Linux).
    if let Some(mode) = spec.mode {
        dir.chmod_follow(&name, mode & 0o7777).map_err(|e| {
            format!("Could not set the mode of {} through the link {}: {}", target, spec.path, cfn_python::strerror(&e))
        })?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parent_dir::open_parent;

    fn old_file(content: &[u8]) -> (tempfile::TempDir, fs::File) {
        let temp = tempfile::tempdir().unwrap();
        fs::write(temp.path().join("old"), content).unwrap();
        let (dir, name) = open_parent(&temp.path().join("old")).unwrap();
        let entry = dir.entry(&name).unwrap();
        let file = open_same_file(&dir, &name, &entry).unwrap();
        (temp, file)
    }

    fn same(old: &[u8], new: &[u8]) -> bool {
        let (_temp, file) = old_file(old);
        same_content(&file, old.len() as u64, new, new.len() as u64).unwrap()
    }

    /// A run killed after it linked `.bak` to the file leaves `.bak` as the file itself:
    /// the next run moves it to `.bak2` and links `.bak` again, so both name one file.
    /// An unchanged file then leaves no `.bak2` behind (tests/crash.rs found it).
    #[test]
    fn a_bak2_that_is_the_bak_itself_goes_when_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "same").unwrap();
        std::fs::hard_link(&path, dir.path().join("f.bak")).unwrap();
        let (parent, name) = open_parent(&path).unwrap();
        Backup::take(&parent, &name).unwrap().finish(false);
        assert!(!dir.path().join("f.bak2").exists());
        assert_eq!(std::fs::read_to_string(dir.path().join("f.bak")).unwrap(), "same");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "same");
    }

    #[test]
    fn contents_are_compared_in_pieces() {
        // Larger than a piece, and not a multiple of it.
        let big: Vec<u8> = (0..3 * 64 * 1024 + 17).map(|i| (i % 251) as u8).collect();
        assert!(same(&big, &big));
        let mut last_differs = big.clone();
        *last_differs.last_mut().unwrap() ^= 1;
        assert!(!same(&big, &last_differs));
        let mut first_differs = big.clone();
        first_differs[0] ^= 1;
        assert!(!same(&big, &first_differs));
        assert!(!same(&big, &big[..big.len() - 1]));
        assert!(same(b"", b""));
        assert!(!same(b"", b"x"));
        // Exactly one piece.
        let piece = vec![7u8; 64 * 1024];
        assert!(same(&piece, &piece));
    }

    #[test]
    fn sizes_decide_without_reading() {
        // A reader that fails shows that nothing was read when the sizes differ.
        struct Unreadable;
        impl Read for Unreadable {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("read"))
            }
        }
        let (_temp, file) = old_file(b"abc");
        assert!(!same_content(&file, 3, Unreadable, 4).unwrap());
        assert!(same_content(&file, 3, Unreadable, 3).is_err());
    }

    #[test]
    fn a_link_or_a_replaced_file_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let (a, link) = (dir.path().join("a"), dir.path().join("link"));
        fs::write(&a, "a").unwrap();
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let (parent, _) = open_parent(&a).unwrap();
        let link_entry = parent.entry(OsStr::new("link")).unwrap();
        assert!(open_same_file(&parent, OsStr::new("link"), &link_entry).is_none());
        let a_entry = parent.entry(OsStr::new("a")).unwrap();
        assert!(open_same_file(&parent, OsStr::new("a"), &a_entry).is_some());
        // The old file stays linked elsewhere, so its inode number cannot be reused.
        fs::hard_link(&a, dir.path().join("old")).unwrap();
        fs::write(dir.path().join("b"), "b").unwrap();
        fs::rename(dir.path().join("b"), &a).unwrap();
        assert!(open_same_file(&parent, OsStr::new("a"), &a_entry).is_none());
    }

    #[test]
    fn a_section_keeps_one_directory_per_file_system_to_sync() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir_in("/dev/shm").unwrap());
        let mut dirs = SectionDirs::default();
        dirs.open(&a.path().join("one/f")).unwrap();
        dirs.open(&a.path().join("two/f")).unwrap();
        assert_eq!(dirs.written.len(), 1, "one file system so far");
        dirs.open(&b.path().join("f")).unwrap();
        let devs: Vec<u64> = dirs.written.iter().map(|(dev, ..)| *dev).collect();
        let dev_of = |p: &Path| fs::metadata(p).unwrap().dev();
        let mut expected = vec![dev_of(a.path()), dev_of(b.path())];
        expected.dedup();
        assert_eq!(devs, expected);
        durable::sync_filesystems(&dirs.written);
    }
}
