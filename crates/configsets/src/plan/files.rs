//! Files a build would create or change, with a unified diff of their content. The
//! content is made as the build makes it (`files::inline_content`, a fetched `source`
//! rendered when it has a `context`) and compared with what is at the path now; the mode
//! and owner as the build would set them (`files::mode_for`, `files::owner_ids`).
//!
//! Each path is walked as the build walks it (`parent_dir::look_parent`, creating
//! nothing): a link in a directory of the path that the build would refuse stops the
//! plan with the build's own error, and the old content is read only from the file the
//! build would replace (never through a link).
//!
//! A fetched file goes into memory (a memfd), never to disk. Content that came with
//! credentials, or of a file that not every user could read along its whole path, is
//! never shown ([`withheld`]); binary or large content is summarised by its size.

use super::{Item, Pending};
use crate::document;
use crate::environment::Environment;
use crate::files::{
    inline_content, mode_for, open_same_file, owner_ids, process_umask, render, symlink_in_place, symlink_target,
};
use crate::model::FileSpec;
use crate::parent_dir::{Closed, Looked, look_parent};
use std::fs::File;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

/// Content larger than this is summarised by its size, not diffed.
const MAX_SHOWN: usize = 256 * 1024;

/// Returns the paths whose content a build would change (its change record).
pub(super) fn plan(
    entries: &[document::Item<FileSpec>],
    env: &Environment<'_>,
    pending: &Pending,
    items: &mut Vec<Item>,
) -> Result<Vec<String>, String> {
    let umask = process_umask();
    let mut changed = Vec::new();
    for entry in entries {
        let (path, spec) = (&entry.key, entry.parsed()?);
        if !Path::new(&spec.path).is_absolute() {
            return Err(format!("File specified with non-absolute path: {}", spec.path));
        }
        let item = if spec.is_symlink() { plan_link(spec)? } else { plan_file(spec, env, umask, pending)? };
        if let Some((item, content_changed)) = item {
            items.push(item);
            if content_changed {
                changed.push(path.to_string());
            }
        }
    }
    Ok(changed)
}

/// A link that does not lead to its target yet.
fn plan_link(spec: &FileSpec) -> Result<Option<(Item, bool)>, String> {
    let target = symlink_target(spec)?;
    let path = Path::new(&spec.path);
    if symlink_in_place(path, &target) {
        return Ok(None);
    }
    // Its directory reached as the build reaches it: a link the build refuses stops here.
    let (looked, _, name) = look_parent(path).map_err(|e| e.to_string())?;
    let exists = matches!(&looked, Looked::Found(dir) if dir.exists(&name));
    let verb = if exists { "replace" } else { "create" };
    Ok(Some((Item::change("files", format!("{verb} {} as a link to {target}", spec.path)), true)))
}

/// A regular file: its content, mode and owner against what is there.
fn plan_file(
    spec: &FileSpec,
    env: &Environment<'_>,
    umask: u32,
    pending: &Pending,
) -> Result<Option<(Item, bool)>, String> {
    let path = &spec.path;
    // The directory is reached as the build reaches it (`parent_dir`), before anything is
    // fetched: a link the build refuses stops the plan as it stops the build, and what is
    // there is never looked at through it.
    let (looked, closed, name) = look_parent(Path::new(path)).map_err(|e| e.to_string())?;
    let (new, with_credentials) = content(spec, env)?;
    let (way, existing) = match &looked {
        Looked::Found(dir) => (Way::Existing(closed), dir.entry(&name).ok()),
        Looked::Missing(missing) => {
            (Way::Created { closed, missing: missing.clone(), mode: CREATED_DIR_MODE & !umask }, None)
        }
    };
    // The previous regular file, opened as the build opens it: never through a link, a
    // FIFO not waited on.
    let current = match (&looked, existing) {
        (Looked::Found(dir), Some(entry)) if entry.is_file() => {
            let file = open_same_file(dir, &name, &entry).ok_or_else(|| format!("Could not read {path}"))?;
            Some((entry, file))
        }
        _ => None,
    };
    let old_mode = current.as_ref().map(|(entry, _)| entry.mode);
    let mode = mode_for(spec, old_mode, umask);
    let reason = withheld(with_credentials, &way, old_mode, mode);
    let reason = reason.as_deref();
    // An owner or group that the build creates above has no id yet.
    let new_owner = spec.owner.as_ref().filter(|o| pending.users.contains(o.as_str()));
    let new_group = spec.group.as_ref().filter(|g| pending.groups.contains(g.as_str()));
    let ids = if new_owner.is_some() || new_group.is_some() {
        let known = FileSpec {
            owner: spec.owner.clone().filter(|_| new_owner.is_none()),
            group: spec.group.clone().filter(|_| new_group.is_none()),
            ..spec.clone()
        };
        owner_ids(&known)?
    } else {
        owner_ids(spec)?
    };

    let Some((meta, mut file)) = current else {
        let what = match existing {
            None => "create",
            Some(entry) if entry.is_dir() => "replace the directory",
            Some(entry) if entry.is_symlink() => "replace the link",
            Some(_) => "replace",
        };
        let mut item = Item::change("files", format!("{what} {path} (mode {mode:04o}{})", owner_text(spec)));
        item.detail = shown_change(path, None, &new, reason);
        return Ok(Some((item, true)));
    };

    let old_len = file.metadata().map_err(|e| read_error(path, &e))?.len();
    // Of the new content's size, the current content is read to compare (else it differs unread).
    let old = if old_len == new.len() as u64 { Some(read_all(&mut file, path)?) } else { None };
    let content_changed = old.as_deref() != Some(new.as_slice());
    let mut parts = Vec::new();
    if content_changed {
        parts.push("content".to_string());
    }
    let old_mode = meta.mode;
    if old_mode != mode {
        parts.push(format!("mode {old_mode:04o} -> {mode:04o}"));
    }
    if let Some(owner) = new_owner {
        parts.push(format!("owner {owner} (created above)"));
    }
    if let Some(group) = new_group {
        parts.push(format!("group {group} (created above)"));
    }
    if let Some(uid) = ids.0.filter(|uid| *uid != meta.uid) {
        parts.push(format!("owner {} -> {uid}", meta.uid));
    }
    if let Some(gid) = ids.1.filter(|gid| *gid != meta.gid) {
        parts.push(format!("group {} -> {gid}", meta.gid));
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let mut item = Item::change("files", format!("change {path}: {}", parts.join(", ")));
    if content_changed {
        let old = match old {
            Some(old) => old,
            None => read_all(&mut file, path)?,
        };
        item.detail = shown_change(path, Some(&old), &new, reason);
    }
    Ok(Some((item, content_changed)))
}

fn owner_text(spec: &FileSpec) -> String {
    let mut text = String::new();
    if let Some(owner) = &spec.owner {
        text.push_str(&format!(", owner {owner}"));
    }
    if let Some(group) = &spec.group {
        text.push_str(&format!(", group {group}"));
    }
    text
}

/// The bytes the build would write, and whether they came with credentials: an
/// authentication block went with a request (named by the file or chosen by default),
/// or the URL itself carries a password or a presigned signature.
fn content(spec: &FileSpec, env: &Environment<'_>) -> Result<(Vec<u8>, bool), String> {
    if let Some(content) = &spec.content {
        return inline_content(spec, content).map(|bytes| (bytes, false));
    }
    let Some(url) = &spec.source else { return Err("File specified without source or content".into()) };
    let shown = cfn_aws::http::redact_url(url);
    let fd = rustix::fs::memfd_create("cfn-plan", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(|e| format!("Failed to retrieve {shown}: {e}"))?;
    let mut file = File::from(fd);
    let fetched = env
        .fetch
        .fetch(url, spec.authentication.as_deref(), &mut file)
        .map_err(|reason| format!("Failed to retrieve {shown}: {reason}"))?;
    let with_credentials = fetched.with_credentials || shown != *url;
    let mut bytes = Vec::new();
    file.rewind().and_then(|_| file.read_to_end(&mut bytes)).map_err(|e| format!("Failed to retrieve {shown}: {e}"))?;
    match &spec.context {
        Some(context) => {
            let text = String::from_utf8(bytes).map_err(|e| format!("Failed to retrieve {shown}: {e}"))?;
            render(&text, context, &spec.path).map(|text| (text.into_bytes(), with_credentials))
        }
        None => Ok((bytes, with_credentials)),
    }
}

/// The mode `parent_dir` creates a missing directory with, before the umask.
const CREATED_DIR_MODE: u32 = 0o777;

/// What a user without privileges meets on the way to a file, as `parent_dir` walks it.
#[derive(Debug)]
enum Way {
    /// Every directory exists; the first one that others may not search, if any.
    Existing(Option<Closed>),
    /// `missing` does not exist: the build creates it, and what is below it, with
    /// `mode`; `closed` is met before it.
    Created { closed: Option<Closed>, missing: PathBuf, mode: u32 },
}

/// Why a file's content, old and new, is not shown, when it is not (issue 22, item 4;
/// issue 31, F7). Decided here and nowhere else. `plan` reads as root and prints to a
/// terminal, a CI log or a ticket, where it must show no more than anyone on the host
/// could read, so it never shows:
/// * content that came with credentials (`with_credentials`): they stand for an access
///   the reader of the plan need not have, whether the file named the block or it was
///   chosen by default (`uris`, `buckets`, a role);
/// * the old or the new content of a file that is not world-readable before or after
///   the build: its mode says who may read it, and a plan run as root must not widen
///   that (a root-only file now, a file the metadata makes private);
/// * the content of a file that a user cannot reach (`way`): a directory on its path,
///   from `/` and along the links the build follows, that others may not search (a
///   0644 `.npmrc` in root's 0700 home, a `.pypirc` under a 0750 home), now or as the build would
///   create it.
///
/// What is shown instead ([`shown_change`]): that the content changes, its size and the
/// first 12 hex digits of its SHA-256, enough to tell versions apart.
fn withheld(with_credentials: bool, way: &Way, old_mode: Option<u32>, new_mode: u32) -> Option<String> {
    const WORLD_READABLE: u32 = 0o004;
    const WORLD_SEARCHABLE: u32 = 0o001;
    if with_credentials {
        return Some("fetched with credentials".to_string());
    }
    if new_mode & WORLD_READABLE == 0 {
        return Some(format!("the file would not be world-readable (mode {new_mode:04o})"));
    }
    if let Some(mode) = old_mode.filter(|mode| mode & WORLD_READABLE == 0) {
        return Some(format!("the file is not world-readable now (mode {mode:04o})"));
    }
    match way {
        Way::Existing(Some(closed)) | Way::Created { closed: Some(closed), .. } => Some(format!(
            "the directory {} is not searchable by every user (mode {:04o})",
            closed.path.display(),
            closed.mode
        )),
        Way::Created { missing, mode, .. } if mode & WORLD_SEARCHABLE == 0 => Some(format!(
            "the directory {} would be created not searchable by every user (mode {mode:04o})",
            missing.display()
        )),
        Way::Existing(None) | Way::Created { .. } => None,
    }
}

fn read_error(path: &str, e: &std::io::Error) -> String {
    format!("Could not read {path}: {}", cfn_python::strerror(e))
}

/// The whole content of the opened file, from its start.
fn read_all(file: &mut File, path: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.rewind().and_then(|_| file.read_to_end(&mut bytes)).map_err(|e| read_error(path, &e))?;
    Ok(bytes)
}

/// The content change as diff lines, or one line saying why it is not shown.
fn shown_change(path: &str, old: Option<&[u8]>, new: &[u8], withheld: Option<&str>) -> Vec<String> {
    if let Some(reason) = withheld {
        let size_and_digest = |bytes: &[u8]| format!("{} bytes, sha256 {}", bytes.len(), short_digest(bytes));
        let change = match old {
            Some(old) => format!("{} -> {}", size_and_digest(old), size_and_digest(new)),
            None => size_and_digest(new),
        };
        return vec![format!("(content withheld: {reason}; {change})")];
    }
    let old_len = old.map_or(0, <[u8]>::len);
    let (Some(old_text), Some(new_text)) = (shown_text(old.unwrap_or_default()), shown_text(new)) else {
        return vec![format!("(binary or large content: {old_len} bytes -> {} bytes)", new.len())];
    };
    let old_name = if old.is_some() { path } else { "/dev/null" };
    similar::TextDiff::from_lines(old_text, new_text)
        .unified_diff()
        .context_radius(3)
        .header(old_name, path)
        .to_string()
        .lines()
        .map(String::from)
        .collect()
}

/// The first 12 hex digits of the SHA-256 of `bytes`.
fn short_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// Text that a diff can show: UTF-8 without NULs, not too large.
fn shown_text(bytes: &[u8]) -> Option<&str> {
    if bytes.len() > MAX_SHOWN || bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_are_unified_and_binary_or_hidden_content_is_summarised() {
        let lines = shown_change("/etc/a", Some(b"one\ntwo\n"), b"one\nthree\n", None);
        assert_eq!(lines, ["--- /etc/a", "+++ /etc/a", "@@ -1,2 +1,2 @@", " one", "-two", "+three"]);
        let lines = shown_change("/etc/a", None, b"new\n", None);
        assert_eq!(lines, ["--- /dev/null", "+++ /etc/a", "@@ -0,0 +1 @@", "+new"]);
        assert_eq!(
            shown_change("/bin/x", Some(b"\x7fELF\0"), b"\x7fELF\0\x01", None),
            ["(binary or large content: 5 bytes -> 6 bytes)"]
        );
        // sha256("old") = cba06b57…, sha256("new") = 11507a0e…
        assert_eq!(
            shown_change("/etc/secret", Some(b"old"), b"new", Some("fetched with credentials")),
            [
                "(content withheld: fetched with credentials; 3 bytes, sha256 cba06b5736fa -> 3 bytes, sha256 11507a0e2f5e)"
            ]
        );
        let big = vec![b'a'; MAX_SHOWN + 1];
        assert_eq!(shown_change("/a", None, &big, None).len(), 1);
    }

    #[test]
    fn content_is_withheld_when_it_came_with_credentials_or_is_not_world_readable() {
        let open = Way::Existing(None);
        assert_eq!(withheld(false, &open, None, 0o644), None);
        assert_eq!(withheld(false, &open, Some(0o604), 0o644), None);
        assert_eq!(withheld(true, &open, Some(0o644), 0o644).as_deref(), Some("fetched with credentials"));
        assert_eq!(
            withheld(false, &open, None, 0o640).as_deref(),
            Some("the file would not be world-readable (mode 0640)")
        );
        assert_eq!(
            withheld(false, &open, Some(0o600), 0o644).as_deref(),
            Some("the file is not world-readable now (mode 0600)")
        );
    }

    #[test]
    fn content_is_withheld_when_a_directory_on_the_way_is_closed_to_others() {
        let root = || Some(Closed { path: "/root".into(), mode: 0o700 });
        let closed = "the directory /root is not searchable by every user (mode 0700)";
        assert_eq!(withheld(false, &Way::Existing(root()), Some(0o644), 0o644).as_deref(), Some(closed));
        let created = |closed, mode| Way::Created { closed, missing: "/srv/new".into(), mode };
        assert_eq!(withheld(false, &created(root(), 0o755), None, 0o644).as_deref(), Some(closed));
        assert_eq!(withheld(false, &created(None, 0o755), None, 0o644), None);
        // Created under a umask of 077: nobody else may search it.
        assert_eq!(
            withheld(false, &created(None, 0o700), None, 0o644).as_deref(),
            Some("the directory /srv/new would be created not searchable by every user (mode 0700)")
        );
        // Others may search with `x` alone; `r` alone is not enough.
        assert_eq!(withheld(false, &created(None, 0o711), None, 0o644), None);
        assert_eq!(
            withheld(false, &created(None, 0o774), None, 0o644).as_deref().map(|r| r.contains("0774")),
            Some(true)
        );
    }

    /// Whatever the modes along a path, content is shown exactly when every user could
    /// read the file: each directory from `/` searchable by others, the file readable by
    /// them (the oracle asks the file system for each ancestor's mode by path).
    mod readable_along_the_path {
        use super::*;
        use proptest::prelude::*;
        use std::os::unix::fs::{MetadataExt, PermissionsExt};

        /// Whether every user may search each directory above `path` and read it.
        fn readable_by_everyone(path: &Path, file_mode: u32, missing_mode: Option<u32>) -> bool {
            let dirs_open = path
                .ancestors()
                .skip(1)
                .filter_map(|dir| std::fs::metadata(dir).ok())
                .all(|meta| meta.mode() & 0o001 != 0);
            dirs_open && file_mode & 0o004 != 0 && missing_mode.is_none_or(|mode| mode & 0o001 != 0)
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
            #[test]
            fn content_is_shown_only_when_every_directory_lets_everyone_through(
                // The owner keeps rwx so that the walk works without privileges too.
                dir_modes in proptest::collection::vec(0o700u32..0o1000, 1..6),
                missing in 0usize..3,
                file_mode in 0o600u32..0o700,
                umask in 0u32..0o100,
            ) {
                let temp = tempfile::tempdir().unwrap();
                std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
                let mut dir = temp.path().to_path_buf();
                let mut made = Vec::new();
                for (i, _) in dir_modes.iter().enumerate() {
                    dir.push(format!("d{i}"));
                    std::fs::create_dir(&dir).unwrap();
                    made.push(dir.clone());
                }
                for extra in 0..missing {
                    dir.push(format!("missing{extra}"));
                }
                let file = dir.join("f");
                if missing == 0 {
                    std::fs::write(&file, "old").unwrap();
                    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(file_mode)).unwrap();
                }
                for (made, mode) in made.iter().zip(&dir_modes).rev() {
                    std::fs::set_permissions(made, std::fs::Permissions::from_mode(*mode)).unwrap();
                }

                let (looked, closed, _) = look_parent(&file).unwrap();
                let (way, old_mode, missing_mode) = match looked {
                    Looked::Found(_) => (Way::Existing(closed), Some(file_mode), None),
                    Looked::Missing(missing) => {
                        let mode = CREATED_DIR_MODE & !umask;
                        (Way::Created { closed, missing, mode }, None, Some(mode))
                    }
                };
                prop_assert_eq!(missing_mode.is_some(), missing > 0);
                let shown = withheld(false, &way, old_mode, file_mode).is_none();
                prop_assert_eq!(shown, readable_by_everyone(&file, file_mode, missing_mode), "{:?}", way);
                // Looking created nothing.
                prop_assert_eq!(missing == 0, file.parent().unwrap().exists());
            }
        }
    }
}
