//! Archive extraction (`sources`, INIT-SRC-03, SEC-01, issue 13 items 4-6) of random tar
//! and zip trees: files, directories, symbolic and hard links, `.`/`..` components,
//! absolute names, long names (GNU long-name headers), devices, and links retargeted by
//! later members, extracted into `sandbox/target` that may already hold links and a
//! hard link leading to `sandbox/outside`, next to sentinel files.
//!
//! The invariant: nothing outside the target is created or changed (names, types, link
//! targets, contents, modes, owners, mtimes of the whole sandbox are compared with a
//! snapshot, walked without following links); no link the archive made leads outside
//! the target and no file the archive made shares an inode with one outside; the
//! target is still a directory; extraction succeeds or fails with a message naming the
//! archive or the target.

use crate::config;
use cfn_configsets::document::Item;
use cfn_configsets::environment::{Environment, Fetch, Fetched};
use cfn_configsets::sources;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Component, Path, PathBuf};

/// Stands for the sandbox's absolute path in generated names and link targets.
const SANDBOX: &str = "@SANDBOX@";

#[derive(Debug, Clone)]
enum Member {
    File { name: String, data: Vec<u8>, mode: u32 },
    Dir { name: String, mode: u32 },
    Symlink { name: String, target: String },
    Hardlink { name: String, target: String },
    Fifo { name: String },
}

#[derive(Debug, Clone, Copy)]
enum Format {
    Tar,
    TarGz,
    Zip,
}

/// What stands in the target before extraction (links planted by another user).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Planted {
    /// `target/a -> ../outside`
    RelativeLinkOut,
    /// `target/b -> <sandbox>/outside`
    AbsoluteLinkOut,
    /// `target/h`, a hard link of `outside/secret`
    HardLinkOut,
    /// `target/t -> <sandbox>/target`
    AbsoluteLinkIn,
    /// `target/d/` with a file in it
    Directory,
}

fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        16 => prop::sample::select(vec!["a", "b", "d", "e", "l", "h", "t", "x"]).prop_map(String::from),
        2 => prop::sample::select(vec![".", ""]).prop_map(String::from),
        1 => Just("..".to_string()),
        1 => prop::sample::select(vec!["outside", "secret", "target", "é", " ", "-"]).prop_map(String::from),
        1 => (1usize..=255).prop_map(|n| "L".repeat(n)),
    ]
}

/// A member name or link target: relative components, or absolute (into the sandbox or
/// anywhere).
fn path_text() -> impl Strategy<Value = String> {
    let relative = prop::collection::vec(component(), 1..5).prop_map(|c| c.join("/")).boxed();
    prop_oneof![
        24 => relative.clone(),
        1 => relative.clone().prop_map(|r| format!("./{r}")),
        1 => relative.clone().prop_map(|r| format!("{r}/")),
        1 => relative.clone().prop_map(|r| format!("{SANDBOX}/outside/{r}")),
        1 => relative.prop_map(|r| format!("{SANDBOX}/target/{r}")),
        1 => prop::sample::select(vec![
            "/", "/etc/passwd", "..", "../outside", "../outside/secret", "../../", "d/d/d/d/../../../..",
            "@SANDBOX@/outside", "@SANDBOX@/outside/secret", "@SANDBOX@/target",
        ]).prop_map(String::from),
    ]
}

fn member() -> impl Strategy<Value = Member> {
    let mode = prop_oneof![Just(0o644u32), Just(0o755), Just(0o4755), Just(0o000), Just(0o1777), 0u32..0o7777];
    prop_oneof![
        4 => (path_text(), prop::collection::vec(any::<u8>(), 0..64), mode.clone())
            .prop_map(|(name, data, mode)| Member::File { name, data, mode }),
        3 => (path_text(), mode).prop_map(|(name, mode)| Member::Dir { name, mode }),
        4 => (path_text(), path_text()).prop_map(|(name, target)| Member::Symlink { name, target }),
        2 => (path_text(), path_text()).prop_map(|(name, target)| Member::Hardlink { name, target }),
        1 => path_text().prop_map(|name| Member::Fifo { name }),
    ]
}

/// The links of issue 13 item 4, each harmless alone, with a later member retargeting
/// one they go through; random members around them.
fn retargeted_links() -> impl Strategy<Value = Vec<Member>> {
    let dir = |name: &str| Member::Dir { name: name.into(), mode: 0o755 };
    let link = |name: &str, target: &str| Member::Symlink { name: name.into(), target: target.into() };
    let file = |name: &str| Member::File { name: name.into(), data: b"through the link".to_vec(), mode: 0o644 };
    let core = vec![
        dir("e/d/d/d"),
        link("d", "e"),
        link("l", "d/d/d/d/../../../.."),
        // What replaces `d` before it is linked again: nothing, a file, a hard link.
        file("d"),
        Member::Hardlink { name: "d".into(), target: "e/d/d/d".into() },
        link("d", "."),
        file("l/outside/secret"),
        file("l/outside/new"),
    ];
    (prop::sample::subsequence(core, 3..=8), prop::collection::vec(member(), 0..4), any::<prop::sample::Index>())
        .prop_map(|(mut members, extra, at)| {
            let at = at.index(members.len() + 1);
            members.splice(at..at, extra);
            members
        })
}

fn archive() -> impl Strategy<Value = (Format, Vec<Member>)> {
    let format = prop_oneof![3 => Just(Format::Tar), 1 => Just(Format::TarGz), 2 => Just(Format::Zip)];
    let members = prop_oneof![3 => prop::collection::vec(member(), 0..10), 1 => retargeted_links()];
    (format, members)
}

/// A tar written header by header: names stored as given (unsafe ones too), GNU
/// long-name and long-link headers for names over 100 bytes.
fn tar_bytes(members: &[Member], sandbox: &str) -> Vec<u8> {
    use tar::{EntryType, Header};
    let mut builder = tar::Builder::new(Vec::new());
    let long = |builder: &mut tar::Builder<Vec<u8>>, kind: EntryType, text: &[u8]| {
        let mut h = Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_entry_type(kind);
        h.set_mode(0o644);
        h.set_size(text.len() as u64 + 1);
        h.set_cksum();
        builder.append(&h, [text, b"\0"].concat().as_slice()).unwrap();
    };
    for m in members {
        let (name, data, mode, kind, link): (&str, &[u8], u32, EntryType, &str) = match m {
            Member::File { name, data, mode } => (name, data, *mode, EntryType::Regular, ""),
            Member::Dir { name, mode } => (name, b"", *mode, EntryType::Directory, ""),
            Member::Symlink { name, target } => (name, b"", 0o777, EntryType::Symlink, target),
            Member::Hardlink { name, target } => (name, b"", 0o644, EntryType::Link, target),
            Member::Fifo { name } => (name, b"", 0o644, EntryType::Fifo, ""),
        };
        let (name, link) = (name.replace(SANDBOX, sandbox), link.replace(SANDBOX, sandbox));
        if name.len() > 100 {
            long(&mut builder, EntryType::GNULongName, name.as_bytes());
        }
        if link.len() > 100 {
            long(&mut builder, EntryType::GNULongLink, link.as_bytes());
        }
        let mut h = Header::new_gnu();
        let n = name.len().min(100);
        h.as_old_mut().name[..n].copy_from_slice(&name.as_bytes()[..n]);
        let l = link.len().min(100);
        h.as_old_mut().linkname[..l].copy_from_slice(&link.as_bytes()[..l]);
        h.set_mode(mode);
        h.set_mtime(1_600_000_000);
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_cksum();
        builder.append(&h, data).unwrap();
    }
    builder.into_inner().unwrap()
}

/// A zip of the same members (names unchanged; links as zip symbolic links; a name
/// used twice, which the zip writer refuses, only once; FIFOs left out).
fn zip_bytes(members: &[Member], sandbox: &str) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut used = BTreeSet::new();
    for m in members {
        let options = SimpleFileOptions::default();
        let name = match m {
            Member::File { name, .. }
            | Member::Symlink { name, .. }
            | Member::Hardlink { name, .. }
            | Member::Dir { name, .. } => name,
            Member::Fifo { .. } => continue,
        };
        let name = name.replace(SANDBOX, sandbox);
        let key =
            if matches!(m, Member::Dir { .. }) && !name.ends_with('/') { format!("{name}/") } else { name.clone() };
        if !used.insert(key) {
            continue;
        }
        match m {
            Member::File { data, mode, .. } => {
                zip.start_file(name, options.unix_permissions(*mode)).unwrap();
                zip.write_all(data).unwrap();
            }
            Member::Dir { mode, .. } => zip.add_directory(name, options.unix_permissions(*mode)).unwrap(),
            Member::Symlink { target, .. } | Member::Hardlink { target, .. } => {
                zip.add_symlink(name, target.replace(SANDBOX, sandbox), options).unwrap()
            }
            Member::Fifo { .. } => unreachable!("skipped above"),
        }
    }
    zip.finish().unwrap().into_inner()
}

/// Downloads are not part of this test: sources are local files.
struct NoDownloads;

impl Fetch for NoDownloads {
    fn fetch(&self, url: &str, _: Option<&str>, _: &mut File) -> Result<Fetched, String> {
        Err(format!("{url} is not fetched in this test"))
    }
}

/// What a path in the sandbox is, as far as the invariant cares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    kind: Kind,
    mode: u32,
    owner: (u32, u32),
    mtime: (i64, i64),
    inode: (u64, u64),
}

/// Everything under `root` except what lies under `skip`, walked without following
/// links.
fn snapshot(root: &Path, skip: &Path) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let kind = if meta.file_type().is_symlink() {
            Kind::Link(fs::read_link(&path).unwrap())
        } else if meta.is_dir() {
            if path != skip {
                todo.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            }
            Kind::Dir
        } else if meta.is_file() {
            Kind::File(fs::read(&path).unwrap())
        } else {
            Kind::Other
        };
        let node = Node {
            kind,
            mode: meta.mode(),
            owner: (meta.uid(), meta.gid()),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            inode: (meta.dev(), meta.ino()),
        };
        out.insert(path, node);
    }
    out
}

/// A path's components as link resolution walks them (`/` for the root).
fn parts(path: &Path) -> Vec<std::ffi::OsString> {
    path.components()
        .map(|c| match c {
            Component::RootDir => "/".into(),
            other => other.as_os_str().to_os_string(),
        })
        .collect()
}

/// Where the link at `link` leads, resolved as the kernel would (links followed, at
/// most 40), missing parts taken as they are; `None` for a loop, which leads nowhere.
fn resolve_link(link: &Path) -> Option<PathBuf> {
    let mut cur = link.parent().unwrap().to_path_buf();
    let mut pending: std::collections::VecDeque<_> = parts(&fs::read_link(link).unwrap()).into();
    let mut followed = 0;
    while let Some(c) = pending.pop_front() {
        match c.to_str() {
            Some("/") => cur = PathBuf::from("/"),
            Some(".") => {}
            Some("..") => {
                cur.pop();
            }
            _ => {
                let next = cur.join(&c);
                match fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        followed += 1;
                        if followed > 40 {
                            return None;
                        }
                        for part in parts(&fs::read_link(&next).unwrap()).into_iter().rev() {
                            pending.push_front(part);
                        }
                    }
                    _ => cur = next,
                }
            }
        }
    }
    Some(cur)
}

/// The sandbox: `target/` (with what is planted in it) and `outside/` with sentinels.
fn make_sandbox(sandbox: &Path, planted: &BTreeSet<Planted>) -> BTreeMap<PathBuf, PathBuf> {
    let (target, outside) = (sandbox.join("target"), sandbox.join("outside"));
    fs::create_dir_all(outside.join("dir")).unwrap();
    fs::create_dir_all(&target).unwrap();
    fs::write(outside.join("secret"), b"sentinel: must not change").unwrap();
    fs::set_permissions(outside.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(outside.join("dir/file"), b"another sentinel").unwrap();
    symlink("secret", outside.join("link")).unwrap();
    fs::write(sandbox.join("beside-target"), b"sentinel next to the target").unwrap();
    let mut links = BTreeMap::new();
    for p in planted {
        match p {
            Planted::RelativeLinkOut => {
                symlink("../outside", target.join("a")).unwrap();
                links.insert(target.join("a"), PathBuf::from("../outside"));
            }
            Planted::AbsoluteLinkOut => {
                symlink(&outside, target.join("b")).unwrap();
                links.insert(target.join("b"), outside.clone());
            }
            Planted::HardLinkOut => fs::hard_link(outside.join("secret"), target.join("h")).unwrap(),
            Planted::AbsoluteLinkIn => {
                symlink(&target, target.join("t")).unwrap();
                links.insert(target.join("t"), target.clone());
            }
            Planted::Directory => {
                fs::create_dir(target.join("d")).unwrap();
                fs::write(target.join("d/f"), b"was here").unwrap();
            }
        }
    }
    links
}

/// What another user left in the target before extraction.
fn planted() -> impl Strategy<Value = BTreeSet<Planted>> {
    let one = prop::sample::select(vec![
        Planted::RelativeLinkOut,
        Planted::AbsoluteLinkOut,
        Planted::HardLinkOut,
        Planted::AbsoluteLinkIn,
        Planted::Directory,
    ]);
    prop::collection::btree_set(one, 0..5)
}

proptest! {
    #![proptest_config(config(160))]

    /// Nothing outside the target is created or changed, whatever the archive holds.
    #[test]
    fn nothing_outside_the_target_changes((format, members) in archive(), planted in planted()) {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let sandbox = base.join("sandbox");
        let target = sandbox.join("target");
        let planted_links = make_sandbox(&sandbox, &planted);
        let bytes = match format {
            Format::Tar => tar_bytes(&members, sandbox.to_str().unwrap()),
            Format::TarGz => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&tar_bytes(&members, sandbox.to_str().unwrap())).unwrap();
                gz.finish().unwrap()
            }
            Format::Zip => zip_bytes(&members, sandbox.to_str().unwrap()),
        };
        let archive = base.join("archive");
        fs::write(&archive, &bytes).unwrap();
        let before = snapshot(&sandbox, &target);
        let outside_inodes: BTreeMap<(u64, u64), PathBuf> = before
            .iter()
            .filter(|(p, n)| !p.starts_with(&target) && matches!(n.kind, Kind::File(_)))
            .map(|(p, n)| (n.inode, p.clone()))
            .collect();

        let secret_inode = before[&sandbox.join("outside/secret")].inode;
        let target_text = target.to_str().unwrap().to_string();
        let entry = Item { key: target_text.clone(), pointer: String::new(), spec: Ok(archive.to_str().unwrap().into()) };
        let result = sources::apply(&[entry], &Environment { fetch: &NoDownloads });

        let after = snapshot(&sandbox, &target);
        let outside = |map: &BTreeMap<PathBuf, Node>| -> BTreeMap<PathBuf, Node> {
            map.iter().filter(|(p, _)| !p.starts_with(&target) || **p == target).map(|(p, n)| {
                // The target's own mode, times and link count may change; its kind may not.
                let mut n = n.clone();
                if *p == target { n.mode &= 0o170000; n.mtime = (0, 0); }
                (p.clone(), n)
            }).collect()
        };
        prop_assert_eq!(outside(&before), outside(&after), "outside the target changed: {:?}", result);
        prop_assert!(fs::symlink_metadata(&target).unwrap().is_dir());

        for (path, node) in snapshot(&target, Path::new("")) {
            match &node.kind {
                Kind::Link(text) if planted_links.get(&path) == Some(text) => {}
                Kind::Link(text) => {
                    if let Some(end) = resolve_link(&path) {
                        let shown = (path.display(), text.display(), end.display());
                        prop_assert!(end.starts_with(&target), "{} -> {} leads to {}", shown.0, shown.1, shown.2);
                    }
                }
                // The planted hard link, and links the archive made to it, are not the
                // archive's doing.
                Kind::File(_) if !(planted.contains(&Planted::HardLinkOut) && node.inode == secret_inode) => {
                    let outside = outside_inodes.get(&node.inode);
                    prop_assert!(outside.is_none(), "{} is a hard link of {:?}", path.display(), outside);
                }
                _ => {}
            }
        }
        if let Err(message) = result {
            prop_assert!(message.contains(archive.to_str().unwrap()) || message.contains(&target_text), "{message}");
        }
    }
}
