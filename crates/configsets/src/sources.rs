//! The `sources` section (INIT-SRC-01..07, SEC-01): each target directory, in sorted
//! order, gets an archive (a URL or a local file) unpacked into it.
//!
//! * Remote locations (`http`, `https`, `ftp`, any case) are downloaded with default
//!   authentication only (INIT-SRC-06) into an anonymous temporary file; `ftp` is refused
//!   with a clear message (the downloader speaks HTTP(S) only).
//! * The format is found from the content, never the name (INIT-SRC-02): tar (plain,
//!   gzip, bzip2, xz, zstd) is tried first, then zip, as the reference does.
//! * Extraction is safe (INIT-SRC-03, SEC-01; the reference had SEC-TRAVERSAL and
//!   SEC-SYMLINK). A first pass reads every member's header and refuses the whole
//!   archive, before anything is written, when a member name is absolute or climbs out of
//!   the target (`..` is resolved component by component), when a symbolic link points
//!   to an absolute path or out of the target, when a symbolic link would replace one
//!   the archive made before it, when a hard link names something out of the target, or
//!   when a member is a device node or a FIFO. The second pass extracts; every path is
//!   resolved on the real file system (existing symbolic links followed, like
//!   `realpath`, but nothing outside the target: an absolute link is followed only when
//!   it names a path under the target) and must stay under the target, so nothing is
//!   ever written through a symbolic link that leads outside, whether the link came from
//!   the archive or was there before. An existing file or link at a member's path is
//!   replaced (never written through), by a temporary file renamed over it, except a
//!   link the archive made, which no later link may replace (reached by another name,
//!   it is only found here).
//! * Links that stay inside one by one can lead outside together: `l -> a/b/../..`
//!   is inside until a later `a -> .` comes (issue 13, item 4). Once the members are
//!   written (or extraction stopped on an error), every link the archive made is
//!   checked again, by its text and on the real tree; one that leads outside is
//!   removed and the archive refused.
//! * Where a member goes is decided by path (above); what is written is written
//!   relative to descriptors ([`under_root`], issue 13, item 5): the target is opened
//!   once, the member's directory is opened from it one component at a time with
//!   `O_NOFOLLOW` (missing ones made with `mkdirat`), the file is created there with
//!   `O_EXCL | O_NOFOLLOW` under a temporary name, given its mode and mtime through its
//!   descriptor and renamed within that directory; hard links are made from the
//!   source's opened directory. A directory swapped for a link in between fails the
//!   member and is never followed. Directory modes and mtimes are set last on the
//!   directory opened again the same way, which must still be the one made.
//! * Killed at any moment (SIGKILL, tests/crash.rs), an extraction leaves every member
//!   path with what was there before or the new member in full: each file, link and
//!   hard link is made under a temporary name and renamed into place. Directories made
//!   so far keep their default modes until a run completes. A temporary file left by
//!   the kill (`.<name>.<pid>.<n>.cfn-tmp`, [`cfn_host::temp_files`]) is removed by the
//!   next run that writes in its directory.
//! * Modes come from the archive without setuid/setgid (dropped with a warning); the
//!   archive's owners are ignored (files belong to the user running cfn-init,
//!   WEAK-owner); tar mtimes are restored. Zip entries without Unix mode bits get
//!   0644/0755 (0444/0555 when marked read-only) instead of the reference's 0000
//!   (BUG-ZIPMODE). Directory modes and mtimes are applied last, deepest first.
//! * GitHub archives (INIT-SRC-04): when the lower-cased location matches the
//!   reference's `^https?://github.com/.*?/(zipball|tarball)/.*$` and every member lies
//!   under one top-level directory, that directory is stripped.
//! * Every target processed counts as changed (INIT-SRC-07), as in the reference.
//! * Archives are bounded ([`limits`]): bytes unpacked, members, header sizes, name
//!   lengths. Tar archives are checked in the first pass, so a refused one writes
//!   nothing; a zip whose members unpack to more than they declare is stopped while
//!   extracting (what was extracted stays, the member being written is removed).

mod limits;
mod under_root;

use crate::document::Item;
use crate::environment::Environment;
use cfn_host::temp_files;
use limits::{Counted, Exceeded, Limits, TarGuard};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use under_root::{Root, io_error};

/// Symbolic links followed while resolving one path before giving up (Linux's limit).
const MAX_LINKS: usize = 40;
/// Memory an xz stream may ask for (KiB); `xz -9` needs about 65 MiB.
const XZ_MEM_LIMIT_KB: u32 = 512 * 1024;

/// Applies the section's sources (target directory → location); returns the target
/// directories that changed. An entry's error stops the section when its turn comes.
pub fn apply(entries: &[Item<String>], env: &Environment<'_>) -> Result<Vec<String>, String> {
    apply_with(entries, env, Limits::default())
}

/// [`apply`] with other limits (tests lower them).
fn apply_with(entries: &[Item<String>], env: &Environment<'_>, limits: Limits) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for entry in entries {
        let target = &entry.key;
        let location = entry.parsed()?;
        let mut file = open_location(location, env)?;
        // Messages name the location without a password or signature (SEC-02).
        let shown = cfn_aws::http::redact_url(location);
        let format = detect(&mut file).map_err(|e| format!("Failed to read {shown}: {e}"))?;
        let format = match format {
            Some(f @ Format::Tar(_)) => {
                tracing::debug!("Treating {shown} as a tarball");
                f
            }
            Some(Format::Zip) => {
                tracing::debug!("Treating {shown} as a zip archive");
                Format::Zip
            }
            None => return Err(format!("Unsupported source file (not zip or tarball): {shown}")),
        };
        let archive = Archive { file, format, location: &shown, target, limits };
        tracing::debug!("Checking to ensure that all archive members fall under path {target}");
        let mut plan = archive.plan()?;
        if is_github_archive(location) {
            tracing::debug!("Attempting to magically strip GitHub parent directory from archive");
            if !strip_top_directory(&mut plan) {
                tracing::debug!("GitHub magic is not possible; archive does not contain exactly one directory");
            }
        }
        archive.check_links(&plan)?;
        tracing::debug!("Expanding {shown} into {target}");
        archive.extract(&plan)?;
        changed.push(target.to_string());
    }
    Ok(changed)
}

/// Whether `location` is downloaded rather than read from disk (the reference's
/// `^(https?|ftp)://`, any case).
pub fn is_remote(location: &str) -> bool {
    let lower = location.get(..8).unwrap_or(location).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("ftp://")
}

/// The reference's GitHub test: the lower-cased location matches
/// `^https?://github.com/.*?/(zipball|tarball)/.*$` (the `.` of `github.com` matches
/// any character but a newline, as a regex dot does, and so does `.*`).
pub fn is_github_archive(location: &str) -> bool {
    let lower = location.to_lowercase();
    let Some(rest) = lower.strip_prefix("http://").or_else(|| lower.strip_prefix("https://")) else {
        return false;
    };
    let mut chars = rest.chars();
    let host_ok = rest.starts_with("github") && {
        chars.by_ref().take(6).for_each(drop);
        chars.next().is_some_and(|c| c != '\n')
    };
    if !host_ok {
        return false;
    }
    let path = chars.as_str();
    let Some(path) = path.strip_prefix("com/") else { return false };
    // `.*$` may end before one final newline; nothing else may be a newline.
    let path = path.strip_suffix('\n').unwrap_or(path);
    if path.contains('\n') {
        return false;
    }
    path.contains("/zipball/") || path.contains("/tarball/")
}

/// The archive as a file positioned anywhere: a downloaded temporary file or the local
/// file itself.
fn open_location(location: &str, env: &Environment<'_>) -> Result<File, String> {
    if is_remote(location) {
        let shown = cfn_aws::http::redact_url(location);
        if location[..3].eq_ignore_ascii_case("ftp") {
            return Err(format!(
                "Failed to retrieve {shown}: ftp:// URLs are not supported by cfn-bootstrap (use http, https or S3)"
            ));
        }
        let mut file = tempfile::tempfile().map_err(|e| format!("Failed to retrieve {shown}: {e}"))?;
        env.fetch.fetch(location, None, &mut file).map_err(|e| format!("Failed to retrieve {shown}: {e}"))?;
        Ok(file)
    } else {
        if !fs::metadata(location).is_ok_and(|m| m.is_file()) {
            return Err(format!("{location} does not exist"));
        }
        File::open(location).map_err(|e| format!("Failed to open {location}: {e}"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    Gzip,
    Bzip2,
    Xz,
    Zstd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Tar(Compression),
    Zip,
}

/// A decompressing reader over the whole file, from its start.
fn decoder<'a>(file: &'a mut File, compression: Compression) -> io::Result<Box<dyn Read + 'a>> {
    file.seek(SeekFrom::Start(0))?;
    let input = BufReader::with_capacity(64 * 1024, file);
    Ok(match compression {
        Compression::None => Box::new(input),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(input)),
        Compression::Xz => Box::new(lzma_rust2::XzReader::new_mem_limit(input, true, XZ_MEM_LIMIT_KB)),
        Compression::Zstd => Box::new(
            ruzstd::decoding::StreamingDecoder::new(input)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
        ),
    })
}

/// Reads until `buf` is full or the input ends; the count read.
fn read_up_to(reader: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The archive's format from its first bytes: a (possibly compressed) tar whose first
/// header block is valid (or all zeros: an empty tar), else a zip with a readable
/// central directory, else `None`.
fn detect(file: &mut File) -> io::Result<Option<Format>> {
    file.seek(SeekFrom::Start(0))?;
    let mut magic = [0u8; 6];
    let n = read_up_to(file, &mut magic)?;
    let compression = match &magic[..n] {
        [0x1f, 0x8b, ..] => Compression::Gzip,
        [b'B', b'Z', b'h', ..] => Compression::Bzip2,
        [0xfd, b'7', b'z', b'X', b'Z', 0] => Compression::Xz,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
        _ => Compression::None,
    };
    let mut block = [0u8; 512];
    let is_tar = match decoder(file, compression) {
        Ok(mut input) => {
            matches!(read_up_to(&mut input, &mut block), Ok(512)) && (header_checksum_ok(&block) || block == [0u8; 512])
        }
        Err(_) => false,
    };
    if is_tar {
        return Ok(Some(Format::Tar(compression)));
    }
    file.seek(SeekFrom::Start(0))?;
    if zip::ZipArchive::new(&mut *file).is_ok() {
        return Ok(Some(Format::Zip));
    }
    Ok(None)
}

/// Whether a tar header block's checksum field matches its content (unsigned or signed
/// byte sum with the field itself counted as spaces, as tar readers accept both).
fn header_checksum_ok(block: &[u8; 512]) -> bool {
    let field = &block[148..156];
    let digits: Vec<u8> =
        field.iter().copied().skip_while(|b| *b == b' ').take_while(|b| (b'0'..=b'7').contains(b)).collect();
    if digits.is_empty() {
        return false;
    }
    let Ok(stored) = u32::from_str_radix(std::str::from_utf8(&digits).unwrap_or("x"), 8) else {
        return false;
    };
    let (mut unsigned, mut signed) = (0u32, 0i32);
    for (i, b) in block.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { *b };
        unsigned += u32::from(b);
        signed += i32::from(b as i8);
    }
    stored == unsigned || i64::from(stored) == i64::from(signed)
}

/// What a member is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    /// Target as stored (relative to the member's directory).
    Symlink(OsString),
    /// Target as normalised components from the archive root.
    Hardlink(Vec<OsString>),
    /// Not extracted (pax global headers, unknown types); logged when `warn`.
    Skip {
        warn: bool,
    },
}

/// One member as the first pass saw it.
#[derive(Debug, Clone)]
struct Member {
    /// The name in the archive, for messages.
    name: String,
    /// Normalised path components under the target (empty: the target itself).
    rel: Vec<OsString>,
    kind: Kind,
    /// Permission bits to apply (setuid/setgid already dropped).
    mode: u32,
    mtime: Option<u64>,
}

struct Archive<'a> {
    file: File,
    format: Format,
    /// The location as messages show it (`http::redact_url`).
    location: &'a str,
    target: &'a str,
    limits: Limits,
}

/// Member-name components made safe: `.` and empty ones dropped, `..` resolved against
/// what came before; `None` when the name is absolute or climbs above its start.
fn normalise(start: &[OsString], name: &[u8]) -> Option<Vec<OsString>> {
    if name.first() == Some(&b'/') {
        return None;
    }
    let mut out = start.to_vec();
    for part in name.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                out.pop()?;
            }
            other => out.push(OsStr::from_bytes(other).to_os_string()),
        }
    }
    Some(out)
}

fn display(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Strips the single top-level directory every member lies under (GitHub archives);
/// false when there is no such directory.
fn strip_top_directory(plan: &mut [Member]) -> bool {
    let mut top: Option<&OsString> = None;
    let mut is_dir = false;
    for m in plan.iter().filter(|m| !matches!(m.kind, Kind::Skip { .. }) && !m.rel.is_empty()) {
        match top {
            None => top = Some(&m.rel[0]),
            Some(t) if *t == m.rel[0] => {}
            Some(_) => return false,
        }
        is_dir |= m.rel.len() > 1 || m.kind == Kind::Dir;
    }
    let Some(top) = top.cloned() else { return false };
    if !is_dir {
        return false;
    }
    for m in plan.iter_mut() {
        if m.rel.len() <= 1 {
            // The top directory itself (and a `./` entry): not extracted.
            m.kind = Kind::Skip { warn: false };
            continue;
        }
        m.rel.remove(0);
        if let Kind::Hardlink(link) = &mut m.kind {
            if link.first() == Some(&top) {
                link.remove(0);
            } else {
                // Outside the stripped tree: nothing left to link to.
                link.insert(0, OsString::from(".."));
            }
        }
    }
    true
}

impl Archive<'_> {
    fn refuse(&self, member: &str, why: impl std::fmt::Display) -> String {
        format!("Refusing to extract {}: {member} {why}", self.location)
    }

    /// The reference's words first (its log line, which people grep for), then ours.
    fn not_sub_path(&self, member: &str) -> String {
        format!("{member} is not a sub-path of {}: refusing to extract {}", self.target, self.location)
    }

    fn replaces_link(&self, member: &str, earlier: &str) -> String {
        self.refuse(member, format!("would replace the symbolic link {earlier} extracted before it"))
    }

    fn read_error(&self, e: impl std::fmt::Display) -> String {
        format!("Failed to read {}: {e}", self.location)
    }

    fn limit(&self, exceeded: &Exceeded) -> String {
        format!("Refusing to extract {}: {exceeded}", self.location)
    }

    /// A read error, or the refusal when it is a limit passed.
    fn stream_error(&self, e: io::Error) -> String {
        match Exceeded::of(&e) {
            Some(x) => self.limit(x),
            None => self.read_error(e),
        }
    }

    /// Refuses the member after `count` members already seen.
    fn count_member(&self, count: usize) -> Result<(), String> {
        if count as u64 >= self.limits.members {
            return Err(self.limit(&Exceeded::Members(self.limits.members)));
        }
        Ok(())
    }

    /// First pass: every member's header, checked; nothing is written.
    fn plan(&self) -> Result<Vec<Member>, String> {
        let mut file = self.file.try_clone().map_err(|e| self.read_error(e))?;
        let mut plan = Vec::new();
        // Bytes of names and link targets held in the plan.
        let mut names = 0;
        match self.format {
            Format::Tar(c) => {
                let input = decoder(&mut file, c).map_err(|e| self.read_error(e))?;
                let (guard, handle) = TarGuard::new(input, self.limits);
                let mut tar = tar::Archive::new(guard);
                for entry in tar.entries().map_err(|e| self.stream_error(e))? {
                    let entry = entry.map_err(|e| self.stream_error(e))?;
                    handle.member_seen(limits::stored_size(&entry));
                    self.count_member(plan.len())?;
                    plan.push(self.tar_member(&entry, &mut names)?);
                }
            }
            Format::Zip => {
                let attrs = file.try_clone().map_err(|e| self.read_error(e))?;
                file.seek(SeekFrom::Start(0)).map_err(|e| self.read_error(e))?;
                // The zip crate reads the whole central directory first; it holds no more
                // records than the archive's bytes can (it checks the declared count
                // against them), so that memory follows the archive's size.
                let mut zip = zip::ZipArchive::new(&mut file).map_err(|e| self.read_error(e))?;
                self.count_member(zip.len().saturating_sub(1))?;
                // What the members declare they unpack to; checked again while
                // extracting, as a zip may lie.
                let mut declared: u64 = 0;
                for i in 0..zip.len() {
                    let entry = zip.by_index_raw(i).map_err(|e| self.read_error(e))?;
                    declared = declared.saturating_add(entry.size());
                    if declared > self.limits.total_bytes {
                        return Err(self.limit(&Exceeded::Total(self.limits.total_bytes)));
                    }
                    plan.push(self.zip_member(&entry, &attrs, &mut names)?);
                }
            }
        }
        Ok(plan)
    }

    fn tar_member<R: Read>(&self, entry: &tar::Entry<'_, R>, names: &mut u64) -> Result<Member, String> {
        use tar::EntryType as T;
        let raw = entry.path_bytes();
        limits::check_name(&self.limits, names, &raw, &raw, "name").map_err(|x| self.limit(&x))?;
        if let Some(link) = entry.link_name_bytes() {
            limits::check_name(&self.limits, names, &raw, &link, "link target").map_err(|x| self.limit(&x))?;
        }
        let name = display(&raw);
        let header = entry.header();
        let etype = header.entry_type();
        let mut kind = match etype {
            T::Regular | T::Continuous | T::GNUSparse if raw.ends_with(b"/") => Kind::Dir,
            T::Regular | T::Continuous | T::GNUSparse => Kind::File,
            T::Directory => Kind::Dir,
            T::Symlink | T::Link => {
                let link = entry.link_name_bytes().map(|l| l.into_owned()).unwrap_or_default();
                if etype == T::Symlink {
                    Kind::Symlink(OsStr::from_bytes(&link).to_os_string())
                } else {
                    let comps = normalise(&[], &link).ok_or_else(|| {
                        self.refuse(&name, format!("is a hard link to {}, outside {}", display(&link), self.target))
                    })?;
                    Kind::Hardlink(comps)
                }
            }
            T::Char => return Err(self.refuse(&name, "is a character device")),
            T::Block => return Err(self.refuse(&name, "is a block device")),
            T::Fifo => return Err(self.refuse(&name, "is a FIFO")),
            T::XGlobalHeader => Kind::Skip { warn: false },
            _ => Kind::Skip { warn: true },
        };
        let rel = match kind {
            Kind::Skip { .. } => Vec::new(),
            _ => normalise(&[], &raw).ok_or_else(|| self.not_sub_path(&name))?,
        };
        if rel.is_empty() && matches!(kind, Kind::File | Kind::Symlink(_) | Kind::Hardlink(_)) {
            return Err(self.refuse(&name, "does not name a file"));
        }
        if let Kind::Skip { warn: true } = kind {
            tracing::warn!("Skipping {name} in {}: unsupported tar member type {:?}", self.location, etype);
            kind = Kind::Skip { warn: false };
        }
        let mode = header.mode().map_err(|e| self.read_error(e))?;
        let mtime = header.mtime().ok();
        Ok(Member { mode: self.safe_mode(&name, mode), name, rel, kind, mtime })
    }

    fn zip_member<R: Read>(
        &self,
        entry: &zip::read::ZipFile<'_, R>,
        attrs: &File,
        names: &mut u64,
    ) -> Result<Member, String> {
        let name = entry.name().to_string();
        limits::check_name(&self.limits, names, name.as_bytes(), name.as_bytes(), "name")
            .map_err(|x| self.limit(&x))?;
        let dir = entry.is_dir();
        let rel = normalise(&[], name.as_bytes()).ok_or_else(|| self.not_sub_path(&name))?;
        if rel.is_empty() && !dir {
            return Err(self.refuse(&name, "does not name a file"));
        }
        let external = zip_external_attributes(entry, attrs);
        let unix = external.map(|a| a >> 16).or_else(|| entry.unix_mode()).unwrap_or(0);
        let mode = if unix & 0o7777 != 0 {
            unix & 0o7777
        } else {
            // No Unix mode (archives made on Windows): the usual defaults, read-only when
            // the DOS read-only attribute says so (BUG-ZIPMODE: the reference used 0000).
            let base = if dir { 0o755 } else { 0o644 };
            if external.is_some_and(|a| a & 1 == 1) { base & !0o222 } else { base }
        };
        // Zip symbolic links are written as regular files holding the link target, as
        // the reference does; nothing is followed.
        let kind = if dir { Kind::Dir } else { Kind::File };
        Ok(Member { mode: self.safe_mode(&name, mode), name, rel, kind, mtime: None })
    }

    /// The permission bits to apply: setuid and setgid are dropped.
    fn safe_mode(&self, name: &str, mode: u32) -> u32 {
        let mode = mode & 0o7777;
        if mode & 0o6000 != 0 {
            tracing::warn!("Dropping the setuid/setgid bits of {name} from {}", self.location);
        }
        mode & 0o1777
    }

    /// Links must stay inside the target, judged on names alone (the second pass checks
    /// the file system again), and a link the archive makes is not replaced by another
    /// of its links: links that stay inside one by one can lead out once a later member
    /// retargets one they go through (issue 13, item 4).
    fn check_links(&self, plan: &[Member]) -> Result<(), String> {
        // The links made so far, by name; a file or hard link at the name replaces one.
        let mut links: HashMap<&[OsString], &str> = HashMap::new();
        for m in plan {
            match &m.kind {
                Kind::File | Kind::Hardlink(_) => {
                    links.remove(&m.rel[..]);
                }
                _ => {}
            }
            if let Kind::Symlink(_) = &m.kind
                && let Some(earlier) = links.insert(&m.rel, &m.name)
            {
                return Err(self.replaces_link(&m.name, earlier));
            }
            match &m.kind {
                Kind::Symlink(link) => {
                    let shown = display(link.as_bytes());
                    if link.as_bytes().first() == Some(&b'/') {
                        return Err(self.refuse(&m.name, format!("is a symbolic link to the absolute path {shown}")));
                    }
                    if normalise(&m.rel[..m.rel.len() - 1], link.as_bytes()).is_none() {
                        return Err(
                            self.refuse(&m.name, format!("is a symbolic link to {shown}, outside {}", self.target))
                        );
                    }
                }
                Kind::Hardlink(link) if link.is_empty() || link.first().is_some_and(|c| c == "..") => {
                    return Err(self.refuse(&m.name, format!("is a hard link outside {}", self.target)));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Second pass: writes the members the plan allows.
    fn extract(&self, plan: &[Member]) -> Result<(), String> {
        let mut writer = Writer::new(self)?;
        let written = self.write_members(&mut writer, plan);
        // Whatever stopped the extraction, no link it made may be left leading outside.
        let links = writer.check_links_made();
        written?;
        links?;
        writer.finish_directories()
    }

    /// Writes the members in archive order.
    fn write_members(&self, writer: &mut Writer<'_, '_>, plan: &[Member]) -> Result<(), String> {
        let mut file = self.file.try_clone().map_err(|e| self.read_error(e))?;
        let changed = || self.read_error("the archive changed while it was being extracted");
        let mut count = 0;
        match self.format {
            Format::Tar(c) => {
                // The same guard as the first pass: the same stream passes the same checks.
                let input = decoder(&mut file, c).map_err(|e| self.read_error(e))?;
                let (guard, handle) = TarGuard::new(input, self.limits);
                let mut tar = tar::Archive::new(guard);
                for (i, entry) in tar.entries().map_err(|e| self.stream_error(e))?.enumerate() {
                    let mut entry = entry.map_err(|e| self.stream_error(e))?;
                    handle.member_seen(limits::stored_size(&entry));
                    let member = plan.get(i).ok_or_else(changed)?;
                    writer.member(i, member, &mut entry)?;
                    count += 1;
                }
            }
            Format::Zip => {
                file.seek(SeekFrom::Start(0)).map_err(|e| self.read_error(e))?;
                let mut zip = zip::ZipArchive::new(&mut file).map_err(|e| self.read_error(e))?;
                let mut used = 0;
                for i in 0..zip.len() {
                    let member = plan.get(i).ok_or_else(changed)?;
                    if !matches!(member.kind, Kind::Skip { .. }) {
                        let entry = zip.by_index(i).map_err(|e| self.read_error(e))?;
                        let mut counted = Counted { inner: entry, used: &mut used, limit: self.limits.total_bytes };
                        writer.member(i, member, &mut counted)?;
                    }
                    count += 1;
                }
            }
        }
        if count != plan.len() {
            return Err(changed());
        }
        Ok(())
    }
}

/// The external attributes of a zip entry, read from its central directory record
/// (the zip crate only offers an interpretation of them).
fn zip_external_attributes<R: Read>(entry: &zip::read::ZipFile<'_, R>, file: &File) -> Option<u32> {
    let mut record = [0u8; 46];
    file.read_exact_at(&mut record, entry.central_header_start()).ok()?;
    if record[..4] != *b"PK\x01\x02" {
        return None;
    }
    Some(u32::from_le_bytes([record[38], record[39], record[40], record[41]]))
}

/// Where a resolved path ended up.
enum Resolved {
    Inside(PathBuf),
    Outside,
}

struct Writer<'a, 'b> {
    archive: &'a Archive<'b>,
    /// The target, canonical.
    root: PathBuf,
    /// The target, opened: everything is written relative to it (issue 13, item 5).
    opened: Root,
    /// The target as named (made absolute): an absolute link may lead into it by this
    /// name too.
    given: PathBuf,
    /// Directories whose mode and mtime are applied at the end.
    dirs: Vec<DirToFinish>,
    /// The symbolic links this archive made, by real path: the member's position in the
    /// archive and its name.
    links: HashMap<PathBuf, (usize, String)>,
    /// Run once a member's place is decided, before it is written: tests swap a
    /// directory for a link there, as another user could.
    #[cfg(test)]
    between: Option<Box<dyn Fn()>>,
}

/// A directory member, finished once everything is written.
struct DirToFinish {
    /// Its real path.
    path: PathBuf,
    /// `(st_dev, st_ino)` when it was made or found: it must still be the same one.
    identity: (u64, u64),
    mode: u32,
    mtime: Option<u64>,
}

/// A link's target as the components to walk.
fn link_components(link: &[u8]) -> Vec<OsString> {
    link.split(|b| *b == b'/').map(|p| OsStr::from_bytes(p).to_os_string()).collect()
}

fn is_link_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

impl<'a, 'b> Writer<'a, 'b> {
    /// Creates the target when missing and opens it.
    fn new(archive: &'a Archive<'b>) -> Result<Writer<'a, 'b>, String> {
        let target = Path::new(archive.target);
        let fail = |e: io::Error| format!("Failed to create {}: {e}", archive.target);
        fs::create_dir_all(target).map_err(fail)?;
        let root = fs::canonicalize(target).map_err(fail)?;
        let given = std::path::absolute(target).map_err(fail)?;
        let opened = Root::open(root.clone()).map_err(fail)?;
        Ok(Writer {
            archive,
            root,
            opened,
            given,
            dirs: Vec::new(),
            links: HashMap::new(),
            #[cfg(test)]
            between: None,
        })
    }

    /// The moment between deciding where a member goes and writing it.
    fn decided(&self) {
        #[cfg(test)]
        if let Some(hook) = &self.between {
            hook();
        }
    }

    /// Removes the link the archive made at `path` (a real path under the root), from
    /// its opened directory.
    fn remove_link(&self, path: &Path) -> io::Result<()> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io::Error::other(format!("{} names no file", path.display())));
        };
        let dir = self.opened.open_dir(parent, false)?;
        rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(io_error)
    }

    /// Resolves `comps` from `start` (a real directory under the root) like `realpath`:
    /// existing symbolic links are followed, missing parts are taken as they are. Nothing
    /// outside the target is looked at: a `..` above it, or an absolute link that does
    /// not name a path under it, is `Outside` at once.
    fn resolve(&self, start: &Path, comps: &[OsString]) -> io::Result<Resolved> {
        let mut todo: VecDeque<OsString> = comps.iter().cloned().collect();
        let mut cur = start.to_path_buf();
        let mut links = 0;
        while let Some(c) = todo.pop_front() {
            if c == ".." {
                if cur == self.root {
                    return Ok(Resolved::Outside);
                }
                cur.pop();
                continue;
            }
            if c.is_empty() || c == "." {
                continue;
            }
            let next = cur.join(&c);
            match fs::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(io::Error::from_raw_os_error(rustix::io::Errno::LOOP.raw_os_error()));
                    }
                    let link = fs::read_link(&next)?;
                    let rest = if link.is_absolute() {
                        // Only the target's own path (canonical or as named) is followed;
                        // a `..` on the way there is not.
                        let Some(rest) = [&self.root, &self.given].iter().find_map(|t| link.strip_prefix(t).ok())
                        else {
                            return Ok(Resolved::Outside);
                        };
                        cur = self.root.clone();
                        rest
                    } else {
                        &link
                    };
                    for p in link_components(rest.as_os_str().as_bytes()).into_iter().rev() {
                        todo.push_front(p);
                    }
                }
                Ok(_) => cur = next,
                // Missing, or under a file: taken as it is, as it could be made later.
                Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => {
                    cur = next;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(if cur.starts_with(&self.root) { Resolved::Inside(cur) } else { Resolved::Outside })
    }

    /// Whether the link the archive made at `path` (a real path under the root) leads
    /// outside the target, by its text from where it stands and on the real tree.
    fn link_leads_outside(&self, path: &Path) -> io::Result<bool> {
        if !fs::symlink_metadata(path)?.file_type().is_symlink() {
            // Replaced by a file or hard link since.
            return Ok(false);
        }
        let link = fs::read_link(path)?;
        let (Some(parent), Ok(rel)) = (path.parent(), path.strip_prefix(&self.root)) else {
            return Ok(true);
        };
        let rel_parent: Vec<OsString> =
            rel.parent().into_iter().flat_map(|p| p.iter()).map(OsStr::to_os_string).collect();
        let bytes = link.as_os_str().as_bytes();
        if bytes.first() == Some(&b'/') || normalise(&rel_parent, bytes).is_none() {
            return Ok(true);
        }
        match self.resolve(parent, &link_components(bytes)) {
            Ok(Resolved::Inside(_)) => Ok(false),
            Ok(Resolved::Outside) => Ok(true),
            // A loop leads nowhere: the kernel cannot follow it either.
            Err(e) if is_link_loop(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Checks every link the archive made once no member can change what it leads to
    /// any more; those that lead outside the target now (a later link retargeted one
    /// they go through) are removed, and the first of them, in archive order, refuses
    /// the archive.
    fn check_links_made(&self) -> Result<(), String> {
        let mut outside: Vec<(usize, &str, &Path, Option<io::Error>)> = Vec::new();
        for (path, (index, name)) in &self.links {
            match self.link_leads_outside(path) {
                Ok(false) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Ok(true) => outside.push((*index, name, path, None)),
                // Not known to stay inside: removed too.
                Err(e) => outside.push((*index, name, path, Some(e))),
            }
        }
        outside.sort_by_key(|(index, ..)| *index);
        let mut first = None;
        for (_, name, path, error) in outside {
            let shown = fs::read_link(path).map(|l| display(l.as_os_str().as_bytes())).unwrap_or_default();
            tracing::debug!("Removing {}, made by {name}: it leads outside {}", path.display(), self.archive.target);
            let message = match (error, self.remove_link(path)) {
                (_, Err(e)) => {
                    let message = format!(
                        "could not remove {}, which may lead outside {}: {e}",
                        path.display(),
                        self.archive.target
                    );
                    // Seen even when an earlier error is the one reported.
                    tracing::warn!("{message}");
                    message
                }
                (Some(e), Ok(())) => format!("{e} (the link was removed)"),
                (None, Ok(())) => {
                    first.get_or_insert_with(|| {
                        self.archive.refuse(
                            name,
                            format!(
                                "is a symbolic link to {shown}, outside {} once the archive is extracted (the link was removed)",
                                self.archive.target
                            ),
                        )
                    });
                    continue;
                }
            };
            first.get_or_insert_with(|| {
                format!(
                    "Failed to extract {name} from {} into {}: {message}",
                    self.archive.location, self.archive.target
                )
            });
        }
        first.map_or(Ok(()), Err)
    }

    fn failed(&self, member: &Member, e: impl std::fmt::Display) -> String {
        format!("Failed to extract {} from {} into {}: {e}", member.name, self.archive.location, self.archive.target)
    }

    fn through_link(&self, member: &Member) -> String {
        self.archive.refuse(
            &member.name,
            format!("would be written through a symbolic link that leads outside {}", self.archive.target),
        )
    }

    /// The real directory a member goes into, created when missing, and opened from the
    /// target without following links.
    fn parent_of(&self, member: &Member) -> Result<(PathBuf, OwnedFd), String> {
        let comps = &member.rel[..member.rel.len() - 1];
        match self.resolve(&self.root, comps).map_err(|e| self.failed(member, e))? {
            Resolved::Outside => Err(self.through_link(member)),
            Resolved::Inside(dir) => {
                self.decided();
                let fd = self.opened.open_dir(&dir, true).map_err(|e| self.failed(member, e))?;
                Ok((dir, fd))
            }
        }
    }

    /// Writes the member at `index` in the archive.
    fn member(&mut self, index: usize, member: &Member, data: &mut dyn Read) -> Result<(), String> {
        match &member.kind {
            Kind::Skip { .. } => Ok(()),
            Kind::Dir => {
                let dir = match self.resolve(&self.root, &member.rel).map_err(|e| self.failed(member, e))? {
                    Resolved::Outside => return Err(self.through_link(member)),
                    Resolved::Inside(dir) => dir,
                };
                if fs::symlink_metadata(&dir).is_ok_and(|meta| !meta.is_dir()) {
                    return Err(self.failed(member, format!("{} exists and is not a directory", dir.display())));
                }
                self.decided();
                let fd = self.opened.open_dir(&dir, true).map_err(|e| self.failed(member, e))?;
                let identity = under_root::identity(&fd).map_err(|e| self.failed(member, e))?;
                self.dirs.push(DirToFinish { path: dir, identity, mode: member.mode, mtime: member.mtime });
                Ok(())
            }
            Kind::File => {
                let (parent, dir) = self.parent_of(member)?;
                let dest = parent.join(member.rel.last().expect("checked non-empty"));
                self.replace(member, &dir, &dest, |dir, tmp| {
                    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                    let mut out = File::from(rustix::fs::openat(dir, tmp, flags, Mode::from_raw_mode(0o600))?);
                    // Locked while it is written, so that no other run's cleaner takes it.
                    temp_files::hold(&out)?;
                    io::copy(data, &mut out)?;
                    // fchmod and futimens: on the file just made, whatever its name leads to.
                    out.set_permissions(fs::Permissions::from_mode(member.mode))?;
                    if let Some(t) = member.mtime {
                        out.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(t))?;
                    }
                    Ok(Some(out))
                })
            }
            Kind::Symlink(link) => {
                let (parent, dir) = self.parent_of(member)?;
                if let Resolved::Outside =
                    self.resolve(&parent, &link_components(link.as_bytes())).map_err(|e| self.failed(member, e))?
                {
                    return Err(self.archive.refuse(
                        &member.name,
                        format!("is a symbolic link to {}, outside {}", display(link.as_bytes()), self.archive.target),
                    ));
                }
                let name = member.rel.last().expect("checked non-empty");
                let dest = parent.join(name);
                // The check of names missed it when the member reaches an earlier link
                // by another name (through a link to its directory).
                if let Some((_, earlier)) = self.links.get(&dest)
                    && rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
                {
                    return Err(self.archive.replaces_link(&member.name, earlier));
                }
                self.replace(
                    member,
                    &dir,
                    &dest,
                    |dir, tmp| Ok(rustix::fs::symlinkat(link, dir, tmp).map(|()| None)?),
                )?;
                self.links.insert(dest, (index, member.name.clone()));
                Ok(())
            }
            Kind::Hardlink(link) => {
                let source = match self.resolve(&self.root, link).map_err(|e| self.failed(member, e))? {
                    Resolved::Outside => {
                        return Err(self
                            .archive
                            .refuse(&member.name, format!("is a hard link outside {}", self.archive.target)));
                    }
                    Resolved::Inside(p) => p,
                };
                // The source is linked from its opened directory: a link there is not
                // followed (linkat without AT_SYMLINK_FOLLOW) and must be a regular file.
                let source_dir = match (source.parent(), source.file_name()) {
                    (Some(parent), Some(name)) => self.opened.open_dir(parent, false).ok().filter(|dir| {
                        rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
                    }),
                    _ => None,
                };
                let (Some(source_dir), Some(source_name)) = (source_dir, source.file_name()) else {
                    return Err(self.failed(
                        member,
                        format!(
                            "the hard link target {} is not a file extracted before it",
                            display(link.join(OsStr::new("/")).as_bytes())
                        ),
                    ));
                };
                let (parent, dir) = self.parent_of(member)?;
                let dest = parent.join(member.rel.last().expect("checked non-empty"));
                self.replace(member, &dir, &dest, |dir, tmp| {
                    Ok(rustix::fs::linkat(&source_dir, source_name, dir, tmp, AtFlags::empty()).map(|()| None)?)
                })
            }
        }
    }

    /// Creates the new entry under a temporary name in the opened directory `dir` (the
    /// one of `dest`) and renames it over `dest`: an existing file or symbolic link is
    /// replaced, never written through. A file `create` wrote comes back open, locked
    /// ([`temp_files::hold`]) until the rename.
    fn replace(
        &self,
        member: &Member,
        dir: &OwnedFd,
        dest: &Path,
        mut create: impl FnMut(&OwnedFd, &OsStr) -> io::Result<Option<File>>,
    ) -> Result<(), String> {
        let name = dest.file_name().expect("a member's path ends in a name");
        if rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
        {
            return Err(self.failed(member, format!("{} is a directory", dest.display())));
        }
        // What a killed extraction left in this directory goes first (once per run).
        temp_files::remove_stale(dir.as_fd());
        let mut made = None;
        let result = temp_files::create_beside(name, |tmp| {
            let outcome = create(dir, tmp);
            // Made (perhaps in part) unless the name was taken: removed below on failure.
            if !matches!(&outcome, Err(e) if e.kind() == io::ErrorKind::AlreadyExists) {
                made = Some(tmp.to_os_string());
            }
            outcome
        })
        .and_then(|(tmp, _held)| rustix::fs::renameat(dir, &tmp, dir, name).map_err(io_error));
        if let Err(e) = result {
            if let Some(tmp) = made {
                let _ = rustix::fs::unlinkat(dir, &tmp, AtFlags::empty());
            }
            return Err(match Exceeded::of(&e) {
                Some(x) => self.archive.limit(x),
                None => self.failed(member, e),
            });
        }
        Ok(())
    }

    /// Directory modes and mtimes, deepest first (so that a read-only directory does
    /// not stop its own members from being written, and mtimes stay as archived). Each
    /// directory is opened again from the target without following links and must be
    /// the one the archive made or found: its mode is set on the descriptor.
    fn finish_directories(&mut self) -> Result<(), String> {
        self.dirs.sort_by(|a, b| b.path.cmp(&a.path));
        for dir in &self.dirs {
            let fail = |e: io::Error| format!("Failed to set the mode of {}: {e}", dir.path.display());
            let fd = self.opened.open_dir(&dir.path, false).map_err(fail)?;
            if under_root::identity(&fd).map_err(fail)? != dir.identity {
                return Err(fail(io::Error::other("it was replaced during the extraction")));
            }
            under_root::set_dir_mode_and_time(&fd, dir.mode, dir.mtime).map_err(fail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Sections;
    use crate::environment::{Fetch, Fetched};
    use std::collections::HashMap;
    use std::io::Write;
    use std::os::unix::ffi::OsStringExt;
    use std::os::unix::fs::MetadataExt;

    const MTIME: u64 = 1_600_000_000;

    /// Serves bodies by URL and records what was asked.
    #[derive(Default)]
    struct FakeFetch {
        bodies: HashMap<String, Vec<u8>>,
        asked: std::sync::Mutex<Vec<(String, Option<String>)>>,
    }

    impl Fetch for FakeFetch {
        fn fetch(&self, url: &str, authentication: Option<&str>, dest: &mut File) -> Result<Fetched, String> {
            self.asked.lock().unwrap().push((url.to_string(), authentication.map(str::to_string)));
            let body = self.bodies.get(url).ok_or("HTTP Error 404 : Not Found")?;
            dest.write_all(body).map(|()| Fetched::default()).map_err(|e| e.to_string())
        }
    }

    #[derive(Clone, Copy)]
    enum E<'a> {
        File(&'a str, &'a [u8], u32),
        Dir(&'a str, u32),
        Sym(&'a str, &'a str),
        Hard(&'a str, &'a str),
        Fifo(&'a str),
        Char(&'a str),
        /// A pax global header (GitHub puts the commit id in one).
        Global(&'a [u8]),
    }

    /// A tar written header by header, with names stored as given (even unsafe ones).
    fn tar_bytes(entries: &[E<'_>]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for e in entries {
            let mut h = tar::Header::new_gnu();
            let (name, data, mode, etype, link): (&str, &[u8], u32, tar::EntryType, &str) = match e {
                E::File(n, d, m) => (n, d, *m, tar::EntryType::Regular, ""),
                E::Dir(n, m) => (n, b"", *m, tar::EntryType::Directory, ""),
                E::Sym(n, l) => (n, b"", 0o777, tar::EntryType::Symlink, l),
                E::Hard(n, l) => (n, b"", 0o644, tar::EntryType::Link, l),
                E::Fifo(n) => (n, b"", 0o644, tar::EntryType::Fifo, ""),
                E::Char(n) => (n, b"", 0o644, tar::EntryType::Char, ""),
                E::Global(d) => ("pax_global_header", d, 0o666, tar::EntryType::XGlobalHeader, ""),
            };
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            h.set_mode(mode);
            h.set_mtime(MTIME);
            h.set_entry_type(etype);
            h.set_size(data.len() as u64);
            h.set_cksum();
            builder.append(&h, data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn bzip(data: &[u8]) -> Vec<u8> {
        let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut enc = lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6)).unwrap();
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    /// Name, content (None: a directory), mode (None: no Unix mode, as archives made on Windows).
    type ZipEntry<'a> = (&'a str, Option<&'a [u8]>, Option<u32>);

    fn zip_bytes(entries: &[ZipEntry<'_>]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        for (name, data, mode) in entries {
            let mut opts =
                zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
            opts = opts.unix_permissions(mode.unwrap_or(0o644));
            match data {
                Some(d) => {
                    w.start_file(*name, opts).unwrap();
                    w.write_all(d).unwrap();
                }
                None => w.add_directory(*name, opts).unwrap(),
            }
        }
        let mut bytes = w.finish().unwrap().into_inner();
        // Entries without a mode: "made by" MS-DOS, external attributes 0 (or the DOS
        // directory bit), as Windows tools write them.
        let mut i = 0;
        let mut index = 0;
        while i + 46 <= bytes.len() {
            if bytes[i..i + 4] == *b"PK\x01\x02" {
                if entries[index].2.is_none() {
                    bytes[i + 5] = 0;
                    let attr: u32 = if entries[index].1.is_none() { 0x10 } else { 0 };
                    bytes[i + 38..i + 42].copy_from_slice(&attr.to_le_bytes());
                }
                index += 1;
                i += 46;
            } else {
                i += 1;
            }
        }
        bytes
    }

    struct T {
        dir: tempfile::TempDir,
        fetch: FakeFetch,
        limits: Limits,
    }

    impl T {
        fn new() -> T {
            let t = T { dir: tempfile::tempdir().unwrap(), fetch: FakeFetch::default(), limits: Limits::default() };
            fs::create_dir(t.p("outside")).unwrap();
            t
        }
        fn p(&self, rel: &str) -> String {
            self.dir.path().join(rel).display().to_string()
        }
        fn archive(&self, name: &str, bytes: &[u8]) -> String {
            let path = self.p(name);
            fs::write(&path, bytes).unwrap();
            path
        }
        /// Applies `{target: location}` entries.
        fn apply(&self, entries: &[(&str, &str)]) -> Result<Vec<String>, String> {
            let items: Vec<Item<String>> = entries
                .iter()
                .map(|(t, l)| Item { key: self.p(t), pointer: String::new(), spec: Ok(l.to_string()) })
                .collect();
            apply_with(&items, &Environment { fetch: &self.fetch }, self.limits)
        }
        fn read(&self, rel: &str) -> String {
            fs::read_to_string(self.p(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
        }
        fn mode(&self, rel: &str) -> u32 {
            fs::symlink_metadata(self.p(rel)).unwrap().mode() & 0o7777
        }
        fn exists(&self, rel: &str) -> bool {
            fs::symlink_metadata(self.p(rel)).is_ok()
        }
        /// Everything under `outside/` (must stay empty) and whether the target exists.
        fn assert_outside_untouched(&self) {
            let found: Vec<_> = fs::read_dir(self.p("outside")).unwrap().map(|e| e.unwrap().path()).collect();
            assert!(found.is_empty(), "written outside the target: {found:?}");
        }
    }

    fn sample_tar() -> Vec<u8> {
        tar_bytes(&[
            E::Dir("app/", 0o750),
            E::File("app/run.sh", b"#!/bin/sh\necho hi\n", 0o755),
            E::File("app/conf/settings.ini", b"a=1\n", 0o640),
            E::Sym("app/current", "conf"),
            E::Hard("app/run-again.sh", "app/run.sh"),
        ])
    }

    fn assert_sample(t: &T, target: &str) {
        assert_eq!(t.read(&format!("{target}/app/run.sh")), "#!/bin/sh\necho hi\n");
        assert_eq!(t.mode(&format!("{target}/app/run.sh")), 0o755);
        assert_eq!(t.read(&format!("{target}/app/conf/settings.ini")), "a=1\n");
        assert_eq!(t.mode(&format!("{target}/app/conf/settings.ini")), 0o640);
        assert_eq!(t.mode(&format!("{target}/app")), 0o750);
        assert_eq!(fs::read_link(t.p(&format!("{target}/app/current"))).unwrap(), Path::new("conf"));
        assert_eq!(t.read(&format!("{target}/app/current/settings.ini")), "a=1\n");
        let run = fs::metadata(t.p(&format!("{target}/app/run.sh"))).unwrap();
        let again = fs::metadata(t.p(&format!("{target}/app/run-again.sh"))).unwrap();
        assert_eq!(run.ino(), again.ino(), "hard link");
        assert_eq!(run.mtime() as u64, MTIME);
        assert_eq!(fs::metadata(t.p(&format!("{target}/app"))).unwrap().mtime() as u64, MTIME);
        // Owned by whoever runs the tests, not by the archive's uid/gid (0 here).
        // SAFETY: getuid cannot fail.
        assert_eq!(run.uid(), rustix::process::getuid().as_raw());
    }

    #[test]
    fn every_tar_compression_is_detected_by_content_and_extracted() {
        let t = T::new();
        let tar = sample_tar();
        // Names say nothing: each is called `.zip` on purpose.
        let cases =
            [("plain", tar.clone()), ("gz", gzip(&tar)), ("bz2", bzip(&tar)), ("xz", xz(&tar)), ("zst", zstd(&tar))];
        for (kind, bytes) in cases {
            let loc = t.archive(&format!("{kind}.zip"), &bytes);
            let changed = t.apply(&[(kind, &loc)]).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(changed, vec![t.p(kind)]);
            assert_sample(&t, kind);
            assert_eq!(detect(&mut File::open(&loc).unwrap()).unwrap().map(|f| f != Format::Zip), Some(true));
        }
    }

    #[test]
    fn zips_are_extracted_with_their_modes_and_windows_zips_get_usual_modes() {
        let t = T::new();
        let bytes = zip_bytes(&[
            ("bin/", None, Some(0o700)),
            ("bin/tool", Some(b"tool"), Some(0o750)),
            ("win/", None, None),
            ("win/readme.txt", Some(b"from windows"), None),
        ]);
        let loc = t.archive("a.tar.gz", &bytes);
        assert_eq!(t.apply(&[("z", &loc)]).unwrap(), vec![t.p("z")]);
        assert_eq!(t.read("z/bin/tool"), "tool");
        assert_eq!(t.mode("z/bin/tool"), 0o750);
        assert_eq!(t.mode("z/bin"), 0o700);
        assert_eq!(t.read("z/win/readme.txt"), "from windows");
        assert_eq!(t.mode("z/win/readme.txt"), 0o644, "BUG-ZIPMODE fixed");
        assert_eq!(t.mode("z/win"), 0o755);
    }

    #[test]
    fn existing_files_are_overwritten_and_others_kept() {
        let t = T::new();
        fs::create_dir_all(t.p("dest/app")).unwrap();
        fs::write(t.p("dest/app/run.sh"), "old").unwrap();
        fs::write(t.p("dest/keep.txt"), "mine").unwrap();
        let loc = t.archive("a.tgz", &gzip(&sample_tar()));
        t.apply(&[("dest", &loc)]).unwrap();
        assert_sample(&t, "dest");
        assert_eq!(t.read("dest/keep.txt"), "mine");
        // A second run over the same tree works too (links and files replaced).
        t.apply(&[("dest", &loc)]).unwrap();
        assert_sample(&t, "dest");
    }

    #[test]
    fn missing_and_unsupported_locations_fail_like_the_reference() {
        let t = T::new();
        let missing = t.p("nope.tgz");
        assert_eq!(t.apply(&[("d", &missing)]), Err(format!("{missing} does not exist")));
        let dir = t.p("outside");
        assert_eq!(t.apply(&[("d", &dir)]), Err(format!("{dir} does not exist")));
        for (name, bytes) in
            [("empty", &b""[..]), ("text", b"just some text\n"), ("badgz", &[0x1f, 0x8b, 8, 0, 1, 2, 3])]
        {
            let loc = t.archive(name, bytes);
            assert_eq!(t.apply(&[("d", &loc)]), Err(format!("Unsupported source file (not zip or tarball): {loc}")));
        }
        let target = t.p("d");
        let config = serde_json::json!({"sources": {&target: 3}});
        let sources = Sections::parse("cfg", "", config.as_object().unwrap()).sources;
        let err = apply(sources.entries(), &Environment { fetch: &t.fetch }).unwrap_err();
        assert_eq!(err, format!("config cfg, sources {target}: must be a string, not a number"));
    }

    #[test]
    fn truncated_or_corrupt_archives_fail_without_panicking() {
        let t = T::new();
        let tar = sample_tar();
        let gz = gzip(&tar);
        for (i, bytes) in
            [gz[..gz.len() / 2].to_vec(), tar[..700].to_vec(), bzip(&tar)[..60].to_vec(), xz(&tar)[..80].to_vec()]
                .iter()
                .enumerate()
        {
            let loc = t.archive(&format!("broken{i}"), bytes);
            let err = t.apply(&[("d", &loc)]).unwrap_err();
            assert!(err.starts_with(&format!("Failed to read {loc}: ")) || err.starts_with("Unsupported"), "{err}");
        }
        let mut zip = zip_bytes(&[("a.txt", Some(&[7u8; 5000][..]), Some(0o644))]);
        zip[40] ^= 0xff; // inside the compressed data
        let loc = t.archive("broken.zip", &zip);
        assert!(t.apply(&[("d", &loc)]).is_err());
    }

    #[test]
    fn remote_sources_use_default_authentication_and_report_download_errors() {
        let mut t = T::new();
        let url = "https://bucket.s3.amazonaws.com/app.tgz";
        t.fetch.bodies.insert(url.into(), gzip(&sample_tar()));
        t.apply(&[("web", url)]).unwrap();
        assert_sample(&t, "web");
        assert_eq!(t.fetch.asked.lock().unwrap().as_slice(), &[(url.to_string(), None)]);
        let missing = "HTTP://example.com/missing.tgz";
        assert_eq!(
            t.apply(&[("d", missing)]),
            Err(format!("Failed to retrieve {missing}: HTTP Error 404 : Not Found"))
        );
        let ftp = "FTP://example.com/a.tgz";
        let err = t.apply(&[("d", ftp)]).unwrap_err();
        assert!(err.starts_with(&format!("Failed to retrieve {ftp}: ftp:// URLs are not supported")), "{err}");
        assert_eq!(t.fetch.asked.lock().unwrap().len(), 2, "ftp is not attempted");
    }

    #[test]
    fn github_locations_are_recognised_like_the_reference() {
        for yes in [
            "https://github.com/owner/repo/tarball/main",
            "HTTP://GitHub.com/owner/repo/zipball/v1.0",
            "https://github.com//tarball/x",
            "https://githubXcom/o/r/tarball/x",
        ] {
            assert!(is_github_archive(yes), "{yes}");
        }
        for no in [
            "https://api.github.com/repos/o/r/tarball/main",
            "https://codeload.github.com/o/r/tar.gz/main",
            "https://github.com/o/r/archive/main.tar.gz",
            "ftp://github.com/o/r/tarball/main",
            "https://github.com/o/r/tarball",
            "https://github.com/o/r\n/tarball/x",
            "/tmp/github.com/o/tarball/x",
        ] {
            assert!(!is_github_archive(no), "{no}");
        }
    }

    #[test]
    fn github_archives_lose_their_single_top_directory() {
        let mut t = T::new();
        let tarball = tar_bytes(&[
            E::Global(b"52 comment=0123456789abcdef0123456789abcdef01234567\n"),
            E::Dir("owner-repo-abc123/", 0o775),
            E::File("owner-repo-abc123/README", b"readme", 0o644),
            E::Dir("owner-repo-abc123/src/", 0o755),
            E::File("owner-repo-abc123/src/main.rs", b"fn main() {}", 0o644),
            E::Hard("owner-repo-abc123/README.again", "owner-repo-abc123/README"),
        ]);
        let url = "https://github.com/owner/repo/tarball/main";
        t.fetch.bodies.insert(url.into(), gzip(&tarball));
        let zipball = zip_bytes(&[
            ("owner-repo-abc123/", None, Some(0o755)),
            ("owner-repo-abc123/a.txt", Some(b"a"), Some(0o644)),
        ]);
        let zurl = "https://github.com/owner/repo/zipball/main";
        t.fetch.bodies.insert(zurl.into(), zipball.clone());
        // Not GitHub: extracted as is.
        let other = "https://example.com/owner/repo/tarball/main";
        t.fetch.bodies.insert(other.into(), gzip(&tarball));
        t.apply(&[("gh", url), ("ghz", zurl), ("plain", other)]).unwrap();
        assert_eq!(t.read("gh/README"), "readme");
        assert_eq!(t.read("gh/README.again"), "readme");
        assert_eq!(t.read("gh/src/main.rs"), "fn main() {}");
        assert!(!t.exists("gh/owner-repo-abc123"));
        assert!(!t.exists("gh/pax_global_header"));
        assert_eq!(t.read("ghz/a.txt"), "a");
        assert_eq!(t.read("plain/owner-repo-abc123/README"), "readme");
        // Two top-level entries: nothing stripped.
        let two = "https://github.com/o/two/tarball/x";
        t.fetch.bodies.insert(two.into(), tar_bytes(&[E::File("a/x", b"1", 0o644), E::File("b/y", b"2", 0o644)]));
        t.apply(&[("two", two)]).unwrap();
        assert_eq!(t.read("two/a/x"), "1");
        // A single top-level file is not a directory to strip.
        let single = "https://github.com/o/one/tarball/x";
        t.fetch.bodies.insert(single.into(), tar_bytes(&[E::File("only", b"1", 0o644)]));
        t.apply(&[("one", single)]).unwrap();
        assert_eq!(t.read("one/only"), "1");
    }

    /// The message refusing `loc` for `expected`: a path escape in the reference's words
    /// first, every other refusal after "Refusing to extract".
    fn refusal(loc: &str, expected: &str) -> String {
        if expected.contains(" is not a sub-path of ") {
            format!("{expected}: refusing to extract {loc}")
        } else {
            format!("Refusing to extract {loc}: {expected}")
        }
    }

    /// Runs an archive that must be refused: the error names the archive and the member,
    /// and nothing at all was written (the check happens before extraction) unless
    /// `partial` (refusals found on the file system during extraction).
    fn refused(t: &T, bytes: &[u8], expected: &str, partial: bool) {
        let loc = t.archive("evil.tar", bytes);
        let target = t.p("dest");
        let err = t.apply(&[("dest", &loc)]).unwrap_err();
        let expected = expected.replace("{T}", &target);
        assert_eq!(err, refusal(&loc, &expected));
        t.assert_outside_untouched();
        if !partial {
            assert!(!t.exists("dest/good.txt"), "validated before writing anything");
        }
    }

    #[test]
    fn traversal_and_absolute_names_are_refused_before_anything_is_written() {
        let t = T::new();
        let outside = t.p("outside/x");
        for (name, zip_too) in [("../outside/x", true), ("a/../../outside/x", true), ("./../outside/x", true)] {
            let bytes = tar_bytes(&[E::File("good.txt", b"ok", 0o644), E::File(name, b"evil", 0o644)]);
            refused(&t, &bytes, &format!("{name} is not a sub-path of {{T}}"), false);
            if zip_too {
                let zip = zip_bytes(&[("good.txt", Some(b"ok"), Some(0o644)), (name, Some(b"evil"), Some(0o644))]);
                refused(&t, &zip, &format!("{name} is not a sub-path of {{T}}"), false);
            }
        }
        // Absolute names are refused, even ones that point into the target.
        let inside = format!("{}/y", t.p("dest"));
        for name in [outside.as_str(), inside.as_str()] {
            let bytes = tar_bytes(&[E::File("good.txt", b"ok", 0o644), E::File(name, b"evil", 0o644)]);
            refused(&t, &bytes, &format!("{name} is not a sub-path of {{T}}"), false);
        }
        // BUG-TRAVERSAL: a sibling whose name starts with the target's name.
        let sibling = tar_bytes(&[E::File("../dest2/x", b"evil", 0o644)]);
        refused(&t, &sibling, "../dest2/x is not a sub-path of {T}", false);
        assert!(!t.exists("dest2"));
        // Harmless `..` inside the tree is fine.
        let ok = tar_bytes(&[E::File("a/../b.txt", b"fine", 0o644)]);
        let loc = t.archive("ok.tar", &ok);
        t.apply(&[("fine", &loc)]).unwrap();
        assert_eq!(t.read("fine/b.txt"), "fine");
    }

    #[test]
    fn links_out_of_the_target_are_refused() {
        let t = T::new();
        let cases: Vec<(Vec<E<'_>>, String)> = vec![
            (vec![E::Sym("l", "/etc")], "l is a symbolic link to the absolute path /etc".into()),
            (vec![E::Sym("l", "../outside")], "l is a symbolic link to ../outside, outside {T}".into()),
            (vec![E::Sym("a/b/l", "../../..")], "a/b/l is a symbolic link to ../../.., outside {T}".into()),
            (vec![E::Hard("h", "../outside/x")], "h is a hard link to ../outside/x, outside {T}".into()),
            (vec![E::Hard("h", "/etc/passwd")], "h is a hard link to /etc/passwd, outside {T}".into()),
            // BUG-SYMLINK: a link, then a file "through" it.
            (
                vec![E::Sym("l", "../outside"), E::File("l/x", b"evil", 0o644)],
                "l is a symbolic link to ../outside, outside {T}".into(),
            ),
        ];
        for (entries, expected) in cases {
            let mut all = vec![E::File("good.txt", b"ok", 0o644)];
            all.extend(entries);
            refused(&t, &tar_bytes(&all), &expected, false);
        }
    }

    #[test]
    fn links_that_only_escape_on_the_file_system_are_refused_during_extraction() {
        let t = T::new();
        // `q -> .` and `p -> q/..`: inside by name, the parent of the target on disk.
        let bytes = tar_bytes(&[E::Sym("q", "."), E::Sym("p", "q/.."), E::File("p/outside/x", b"evil", 0o644)]);
        refused(&t, &bytes, "p is a symbolic link to q/.., outside {T}", true);
        fs::remove_dir_all(t.p("dest")).unwrap();
        // A link already in the target that leads outside is not followed.
        fs::create_dir_all(t.p("dest")).unwrap();
        std::os::unix::fs::symlink(t.p("outside"), t.p("dest/pre")).unwrap();
        let bytes = tar_bytes(&[E::File("pre/x", b"evil", 0o644)]);
        refused(&t, &bytes, "pre/x would be written through a symbolic link that leads outside {T}", true);
        let bytes = tar_bytes(&[E::Dir("pre/sub/", 0o755)]);
        refused(&t, &bytes, "pre/sub/ would be written through a symbolic link that leads outside {T}", true);
        // A link at a file's own path is replaced, not written through.
        fs::write(t.p("outside/victim"), "precious").unwrap();
        std::os::unix::fs::symlink(t.p("outside/victim"), t.p("dest/file")).unwrap();
        let loc = t.archive("replace.tar", &tar_bytes(&[E::File("file", b"new", 0o600)]));
        t.apply(&[("dest", &loc)]).unwrap();
        assert_eq!(t.read("outside/victim"), "precious");
        assert_eq!(t.read("dest/file"), "new");
        assert!(fs::symlink_metadata(t.p("dest/file")).unwrap().is_file());
        // A link inside the target that stays inside is followed.
        fs::create_dir_all(t.p("dest/real")).unwrap();
        std::os::unix::fs::symlink("real", t.p("dest/alias")).unwrap();
        let loc = t.archive("inside.tar", &tar_bytes(&[E::File("alias/y", b"y", 0o644)]));
        t.apply(&[("dest", &loc)]).unwrap();
        assert_eq!(t.read("dest/real/y"), "y");
    }

    /// Everything under the temporary directory but the target (`dest`): path, kind,
    /// mode, content or link text, link count. Compared before and after a hostile
    /// archive: nothing outside the target may be created or changed.
    fn outside_state(t: &T) -> Vec<(PathBuf, String, u32, Vec<u8>, u64)> {
        outside_state_of(t, "dest")
    }

    fn outside_state_of(t: &T, target: &str) -> Vec<(PathBuf, String, u32, Vec<u8>, u64)> {
        fn walk(dir: &Path, skip: &Path, out: &mut Vec<(PathBuf, String, u32, Vec<u8>, u64)>) {
            let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
            entries.sort();
            for path in entries {
                if path == skip {
                    continue;
                }
                let meta = fs::symlink_metadata(&path).unwrap();
                let (kind, content) = if meta.is_symlink() {
                    ("link", fs::read_link(&path).unwrap().into_os_string().into_vec())
                } else if meta.is_dir() {
                    ("dir", Vec::new())
                } else {
                    ("file", fs::read(&path).unwrap())
                };
                // A directory's link count follows its subdirectories (the target's parent).
                let nlink = if meta.is_dir() { 0 } else { meta.nlink() };
                out.push((path.clone(), kind.into(), meta.mode(), content, nlink));
                if meta.is_dir() {
                    walk(&path, skip, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(t.dir.path(), Path::new(&t.p(target)), &mut out);
        out
    }

    /// Every symbolic link under the target that the kernel can follow ends inside it.
    fn assert_no_link_leads_outside(t: &T) {
        assert_links_inside(&t.p("dest"), "");
    }

    fn assert_links_inside(target: &str, context: &str) {
        let Ok(root) = fs::canonicalize(target) else { return };
        let mut todo = vec![root.clone()];
        while let Some(dir) = todo.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let meta = fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    todo.push(path);
                } else if meta.is_symlink()
                    && let Ok(real) = fs::canonicalize(&path)
                {
                    assert!(real.starts_with(&root), "{} leads to {} {context}", path.display(), real.display());
                }
            }
        }
    }

    /// Runs a hostile archive into `dest`: refused with `expected`, nothing outside the
    /// target created or changed, no link left leading outside; when `before`, nothing
    /// was extracted at all.
    fn refused_hostile(t: &T, name: &str, bytes: &[u8], expected: &str, before: bool) {
        let state = outside_state(t);
        let loc = t.archive(name, bytes);
        let err = t.apply(&[("dest", &loc)]).unwrap_err();
        let expected = expected.replace("{T}", &t.p("dest"));
        assert_eq!(err, refusal(&loc, &expected));
        // The archive itself is new; everything else is as it was.
        let mut after = outside_state(t);
        after.retain(|e| e.0 != Path::new(&loc));
        let mut state = state;
        state.retain(|e| e.0 != Path::new(&loc));
        assert_eq!(after, state, "changed outside the target");
        assert_no_link_leads_outside(t);
        if before {
            assert!(!t.exists("dest") || fs::read_dir(t.p("dest")).unwrap().next().is_none(), "nothing extracted");
        }
        let _ = fs::remove_dir_all(t.p("dest"));
    }

    /// Issue 13, item 4 (INIT-SRC-03): `d -> e` then `d -> .` would leave
    /// `l -> d/d/d/d/../../../..` four levels above the target; a link the archive made
    /// is never replaced by another, so the archive is refused before anything is written.
    #[test]
    fn a_link_is_not_replaced_by_a_later_link() {
        let t = T::new();
        let chain = [E::Dir("e/d/d/d/", 0o755), E::Sym("d", "e"), E::Sym("l", "d/d/d/d/../../../.."), E::Sym("d", ".")];
        let expected = "d would replace the symbolic link d extracted before it";
        refused_hostile(&t, "chain.tar", &tar_bytes(&chain), expected, true);
        refused_hostile(&t, "chain.tgz", &gzip(&tar_bytes(&chain)), expected, true);
        // With writes through the link that would lead outside afterwards.
        let mut through = chain.to_vec();
        through.push(E::File("l/outside/x", b"evil", 0o644));
        through.push(E::Dir("l/outside/sub/", 0o755));
        refused_hostile(&t, "through.tar", &tar_bytes(&through), expected, true);
        // The same link reached by another name (`q -> .`, then `q/d`): found while
        // extracting; what was extracted stays, but no link leads outside.
        let alias = [
            E::Dir("e/d/d/d/", 0o755),
            E::Sym("d", "e"),
            E::Sym("l", "d/d/d/d/../../../.."),
            E::Sym("q", "."),
            E::Sym("q/d", "."),
            E::File("l/outside/x", b"evil", 0o644),
        ];
        refused_hostile(
            &t,
            "alias.tar",
            &tar_bytes(&alias),
            "q/d would replace the symbolic link d extracted before it",
            false,
        );
        // A link replaced by a file, then by a link again, and a second run over links
        // the last run made: nothing the archive made is replaced by a link twice.
        let fine = [E::Sym("a", "x"), E::File("a", b"file", 0o644), E::Sym("a", "y"), E::Sym("b", "a")];
        let loc = t.archive("fine.tar", &tar_bytes(&fine));
        t.apply(&[("dest", &loc)]).unwrap();
        t.apply(&[("dest", &loc)]).unwrap();
        assert_eq!(fs::read_link(t.p("dest/a")).unwrap(), Path::new("y"));
        assert_eq!(fs::read_link(t.p("dest/b")).unwrap(), Path::new("a"));
    }

    /// Issue 13, item 4: `l -> a/b/../..` stays inside until `a -> .` comes; the links the
    /// archive made are checked again at the end and one that leads outside is removed.
    #[test]
    fn links_that_lead_outside_once_extracted_are_removed_and_the_archive_refused() {
        let t = T::new();
        let late = [E::Dir("b/", 0o755), E::Sym("l", "a/b/../.."), E::Sym("a", "."), E::File("f", b"f", 0o644)];
        refused_hostile(
            &t,
            "late.tar",
            &tar_bytes(&late),
            "l is a symbolic link to a/b/../.., outside {T} once the archive is extracted (the link was removed)",
            false,
        );
        // Deeper in the tree, and the link's own directory reached through a link.
        let deep = [E::Dir("x/y/b/", 0o755), E::Sym("x/y/l", "a/b/../../../.."), E::Sym("x/y/a", ".")];
        refused_hostile(
            &t,
            "deep.tar",
            &tar_bytes(&deep),
            "x/y/l is a symbolic link to a/b/../../../.., outside {T} once the archive is extracted (the link was removed)",
            false,
        );
        // Written through on the way: refused at that member, and the link still removed.
        let through =
            [E::Dir("b/", 0o755), E::Sym("l", "a/b/../.."), E::Sym("a", "."), E::File("l/outside/x", b"evil", 0o644)];
        refused_hostile(
            &t,
            "through.tar",
            &tar_bytes(&through),
            "l/outside/x would be written through a symbolic link that leads outside {T}",
            false,
        );
        assert!(!t.exists("dest/l"));
    }

    /// Issue 13, item 4: a member is never written through a link the archive made that
    /// leads outside, alone (`d -> /abs`, `d -> ../outside`) or combined.
    #[test]
    fn members_are_never_written_or_hard_linked_through_an_archive_link() {
        let t = T::new();
        let outside = t.p("outside");
        fs::write(t.p("outside/secret"), "secret").unwrap();
        let cases: Vec<(Vec<E<'_>>, String)> = vec![
            (
                vec![E::Sym("d", &outside), E::File("d/passwd", b"evil", 0o644)],
                format!("d is a symbolic link to the absolute path {outside}"),
            ),
            (
                vec![E::Sym("d", &outside), E::Dir("d/sub/", 0o755)],
                format!("d is a symbolic link to the absolute path {outside}"),
            ),
            (
                vec![E::Sym("d", "../outside"), E::Hard("d/passwd", "good.txt")],
                "d is a symbolic link to ../outside, outside {T}".into(),
            ),
            (vec![E::Hard("h", "../outside/secret")], "h is a hard link to ../outside/secret, outside {T}".into()),
        ];
        for (entries, expected) in cases {
            let mut all = vec![E::File("good.txt", b"ok", 0o644)];
            all.extend(entries);
            refused_hostile(&t, "evil.tar", &tar_bytes(&all), &expected, true);
        }
        // A hard link through a link that only leads outside once retargeted.
        let hard = [
            E::Dir("b/", 0o755),
            E::Sym("l", "a/b/../.."),
            E::Sym("a", "."),
            E::Hard("h", "l/outside/secret"),
            E::Sym("s", "l/outside/secret"),
        ];
        refused_hostile(&t, "hard.tar", &tar_bytes(&hard), "h is a hard link outside {T}", false);
        assert_eq!(fs::metadata(t.p("outside/secret")).unwrap().nlink(), 1);
        // A symbolic link through it is refused too.
        let sym = [E::Dir("b/", 0o755), E::Sym("l", "a/b/../.."), E::Sym("a", "."), E::Sym("s", "l/outside/secret")];
        refused_hostile(
            &t,
            "sym.tar",
            &tar_bytes(&sym),
            "s is a symbolic link to l/outside/secret, outside {T}",
            false,
        );
        // Zip symbolic links are written as plain files (as the reference does), so
        // nothing goes through them.
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        w.add_symlink("d", &outside, zip::write::SimpleFileOptions::default()).unwrap();
        w.start_file("d/passwd", zip::write::SimpleFileOptions::default()).unwrap();
        w.write_all(b"evil").unwrap();
        let state = outside_state(&t);
        let loc = t.archive("links.zip", &w.finish().unwrap().into_inner());
        let err = t.apply(&[("dest", &loc)]).unwrap_err();
        assert!(err.starts_with(&format!("Failed to extract d/passwd from {loc} into {}: ", t.p("dest"))), "{err}");
        assert!(fs::symlink_metadata(t.p("dest/d")).unwrap().is_file());
        assert_eq!(t.read("dest/d"), outside);
        let mut after = outside_state(&t);
        after.retain(|e| e.0 != Path::new(&loc));
        assert_eq!(after, state);
    }

    /// An absolute link already in the target that names a path under it is followed;
    /// nothing outside the target is followed to find out.
    #[test]
    fn absolute_links_into_the_target_are_followed_by_its_own_path_only() {
        let t = T::new();
        fs::create_dir_all(t.p("dest/real")).unwrap();
        std::os::unix::fs::symlink(t.p("dest/real"), t.p("dest/abs")).unwrap();
        std::os::unix::fs::symlink(format!("{}/../dest/real", t.p("dest")), t.p("dest/dotdot")).unwrap();
        let loc = t.archive("abs.tar", &tar_bytes(&[E::File("abs/y", b"y", 0o644)]));
        t.apply(&[("dest", &loc)]).unwrap();
        assert_eq!(t.read("dest/real/y"), "y");
        let loc = t.archive("dotdot.tar", &tar_bytes(&[E::File("dotdot/z", b"z", 0o644)]));
        let err = t.apply(&[("dest", &loc)]).unwrap_err();
        assert_eq!(
            err,
            format!(
                "Refusing to extract {loc}: dotdot/z would be written through a symbolic link that leads outside {}",
                t.p("dest")
            )
        );
        assert!(!t.exists("dest/real/z"));
    }

    /// Issue 13, item 4, sampled: random tarballs of directories, files, hard links and
    /// symbolic links over three short names, the links' targets a few names then `..`s
    /// (each one inside the target by its text), so that links retarget and go through
    /// each other, then members written through them. Whatever the outcome, nothing
    /// outside the target is created or changed and no link in the target leads outside
    /// it. The target lies six levels down so that an escape stays in the temporary
    /// directory.
    #[test]
    fn random_link_archives_never_reach_outside() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let t = T::new();
        let deep = "1/2/3/4/5/dest";
        fs::create_dir_all(t.p("1/2/3/4/5")).unwrap();
        fs::write(t.p("outside/secret"), "secret").unwrap();
        let words = ["a", "b", "c", "l"];
        let (mut replaced, mut late, mut through) = (0, 0, 0);
        for round in 0..2000 {
            let mut names: Vec<(String, String, char)> = Vec::new();
            for _ in 0..3 + next(8) {
                let depth = 1 + next(4) / 3;
                let name: Vec<&str> = (0..depth).map(|_| words[next(4) as usize]).collect();
                let name = name.join("/");
                let entry = match next(32) {
                    0..=3 => (format!("{name}/"), String::new(), 'd'),
                    4 => (name, String::new(), 'f'),
                    5 => (name, format!("{}/outside/secret", words[next(4) as usize]), 'h'),
                    6..=13 => (name, ".".into(), 's'),
                    _ => {
                        let down = next(4);
                        let mut target: Vec<&str> = (0..down).map(|_| words[next(4) as usize]).collect();
                        target.extend(std::iter::repeat_n("..", next(down + depth) as usize));
                        let target = if target.is_empty() { ".".into() } else { target.join("/") };
                        (name, target, 's')
                    }
                };
                // Mostly one link per name and none where a directory is: those are
                // refused before the links can go through each other.
                let taken = names.iter().any(|(n, _, k)| {
                    (*k == 's' && *n == entry.0)
                        || n.trim_end_matches('/').starts_with(&format!("{}/", entry.0))
                        || n.as_str() == format!("{}/", entry.0)
                });
                if entry.2 == 's' && taken && next(8) != 0 {
                    continue;
                }
                names.push(entry);
            }
            if next(2) == 0 {
                names.push(("l/outside/x".into(), String::new(), 'f'));
            }
            let entries: Vec<E<'_>> = names
                .iter()
                .map(|(n, l, k)| match k {
                    'd' => E::Dir(n, 0o755),
                    'f' => E::File(n, b"x", 0o644),
                    'h' => E::Hard(n, l),
                    _ => E::Sym(n, l),
                })
                .collect();
            let state = outside_state_of(&t, deep);
            let loc = t.archive("random.tar", &tar_bytes(&entries));
            let result = t.apply(&[(deep, &loc)]);
            if let Err(e) = &result {
                replaced += usize::from(e.contains("would replace the symbolic link"));
                late += usize::from(e.contains("once the archive is extracted"));
                through += usize::from(e.contains("would be written through") || e.contains("is a hard link outside"));
            }
            let mut after = outside_state_of(&t, deep);
            after.retain(|e| e.0 != Path::new(&loc));
            let mut state = state;
            state.retain(|e| e.0 != Path::new(&loc));
            assert_eq!(after, state, "round {round}: {names:?} → {result:?}");
            assert_links_inside(&t.p(deep), &format!("round {round}: {names:?} → {result:?}"));
            let _ = fs::remove_dir_all(t.p(deep));
        }
        // The sample reaches every kind of refusal.
        assert!(replaced > 10 && late > 10 && through > 3, "{replaced} {late} {through}");
    }

    #[test]
    fn device_nodes_and_fifos_are_refused() {
        let t = T::new();
        let fifo = tar_bytes(&[E::File("good.txt", b"ok", 0o644), E::Fifo("pipe")]);
        refused(&t, &fifo, "pipe is a FIFO", false);
        let dev = tar_bytes(&[E::File("good.txt", b"ok", 0o644), E::Char("null")]);
        refused(&t, &dev, "null is a character device", false);
    }

    #[test]
    fn setuid_and_setgid_bits_are_dropped_and_sticky_kept() {
        let t = T::new();
        let bytes = tar_bytes(&[E::Dir("tmp/", 0o1777), E::File("tool", b"x", 0o6755)]);
        let loc = t.archive("suid.tar", &bytes);
        t.apply(&[("d", &loc)]).unwrap();
        assert_eq!(t.mode("d/tool"), 0o755);
        assert_eq!(t.mode("d/tmp"), 0o1777);
    }

    #[test]
    fn read_only_directories_still_receive_their_members() {
        let t = T::new();
        let bytes = tar_bytes(&[E::Dir("ro/", 0o555), E::File("ro/f", b"f", 0o444)]);
        let loc = t.archive("ro.tar", &bytes);
        t.apply(&[("d", &loc)]).unwrap();
        assert_eq!(t.read("d/ro/f"), "f");
        assert_eq!(t.mode("d/ro"), 0o555);
        // Let the temp dir be removed.
        fs::set_permissions(t.p("d/ro"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn an_empty_tar_is_a_tarball_with_nothing_in_it() {
        let t = T::new();
        let loc = t.archive("empty.tar", &[0u8; 1024]);
        assert_eq!(t.apply(&[("d", &loc)]).unwrap(), vec![t.p("d")]);
        assert!(t.exists("d"));
    }

    #[test]
    fn targets_are_processed_and_reported_in_the_order_given() {
        let t = T::new();
        let loc = t.archive("a.tgz", &gzip(&sample_tar()));
        let changed = t.apply(&[("a", &loc), ("b", &loc)]).unwrap();
        assert_eq!(changed, vec![t.p("a"), t.p("b")]);
    }

    #[test]
    fn damaged_archives_never_panic_nor_write_outside() {
        let t = T::new();
        let tar = sample_tar();
        let zip = zip_bytes(&[("a/", None, Some(0o755)), ("a/b.txt", Some(&[b'x'; 3000][..]), Some(0o644))]);
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (kind, bytes) in [
            ("tar", tar.clone()),
            ("gz", gzip(&tar)),
            ("bz2", bzip(&tar)),
            ("xz", xz(&tar)),
            ("zst", zstd(&tar)),
            ("zip", zip),
        ] {
            for round in 0..40 {
                let mut damaged = bytes.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % damaged.len();
                    damaged[at] = next() as u8;
                }
                if round % 5 == 0 {
                    damaged.truncate((next() as usize) % damaged.len());
                }
                let loc = t.archive(&format!("{kind}-{round}"), &damaged);
                let _ = t.apply(&[(&format!("d/{kind}-{round}"), &loc)]);
                t.assert_outside_untouched();
            }
        }
    }

    #[test]
    fn tar_header_checksums() {
        let tar = sample_tar();
        let mut block = [0u8; 512];
        block.copy_from_slice(&tar[..512]);
        assert!(header_checksum_ok(&block));
        block[0] ^= 1;
        assert!(!header_checksum_ok(&block));
        assert!(!header_checksum_ok(&[0u8; 512]));
    }

    /// One header block of `kind` declaring `size` bytes, then `data` (which may be far
    /// shorter than declared: the refusal must come from the declared size alone).
    fn header_then(kind: tar::EntryType, size: u64, data: &[u8]) -> Vec<u8> {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_cksum();
        let mut out = h.as_bytes().to_vec();
        out.extend_from_slice(data);
        out
    }

    /// Runs an archive refused for a limit: the message names the archive and the limit,
    /// and nothing at all was written.
    fn over_limit(t: &T, name: &str, bytes: &[u8], expected: &str) {
        let loc = t.archive(name, bytes);
        let err = t.apply(&[("dest", &loc)]).unwrap_err();
        assert_eq!(err, format!("Refusing to extract {loc}: {expected}"));
        assert!(!t.exists("dest/good.txt"), "checked before writing anything");
        t.assert_outside_untouched();
    }

    #[test]
    fn oversized_extension_headers_are_refused_from_their_declared_size() {
        let t = T::new();
        let good = tar_bytes(&[E::File("good.txt", b"ok", 0o644)]);
        // 4 GiB (octal size field) and 1 TiB (base-256): only 1 KiB of it is there, so
        // reading it (as the tar crate would) ends in "unexpected EOF", not this refusal.
        for (kind, shown) in [
            (tar::EntryType::GNULongName, "GNU long name"),
            (tar::EntryType::GNULongLink, "GNU long link name"),
            (tar::EntryType::XHeader, "PAX extended"),
            (tar::EntryType::XGlobalHeader, "PAX global"),
        ] {
            for size in [4u64 << 30, 1 << 40] {
                let mut bytes = good.clone();
                bytes.truncate(bytes.len() - 1024); // drop the end-of-archive blocks
                bytes.extend(header_then(kind, size, &[b'a'; 1024]));
                let expected = format!("a {shown} header of {size} bytes is larger than the limit of 1 MiB");
                over_limit(&t, "big.tgz", &gzip(&bytes), &expected);
                // The first member too.
                over_limit(&t, "first.tar", &header_then(kind, size, &[b'a'; 1024]), &expected);
            }
        }
        // Headers in front of one member add up: three of 1000 bytes pass a 1 KiB limit
        // each, but not the 4 KiB allowed in front of one member.
        let mut t = T::new();
        t.limits.header_bytes = 1024;
        let mut bytes = Vec::new();
        for kind in [tar::EntryType::GNULongName, tar::EntryType::GNULongLink, tar::EntryType::XHeader] {
            let mut data = vec![b'a'; 1000];
            data.resize(1024, 0);
            bytes.extend(header_then(kind, 1000, &data));
        }
        bytes.extend(tar_bytes(&[E::File("x", b"x", 0o644)]));
        over_limit(&t, "run.tar", &bytes, "the headers in front of one member are larger than the limit of 4 KiB");
    }

    #[test]
    fn names_longer_than_path_max_are_refused() {
        let t = T::new();
        let long = format!("{}f", "d/".repeat(2500));
        let mut builder = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        builder.append_data(&mut h, "good.txt", &b"ok"[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        builder.append_data(&mut h, &long, &b"x"[..]).unwrap();
        let bytes = builder.into_inner().unwrap();
        let shown = format!("{}…", &long[..64]);
        over_limit(&t, "long.tar", &bytes, &format!("{shown} has a name of 5001 bytes, longer than the limit of 4096"));
        // A PAX path, and a symbolic link's target, just the same.
        let mut builder = tar::Builder::new(Vec::new());
        builder.append_pax_extensions([("path", long.as_bytes())]).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_size(1);
        h.set_mode(0o644);
        h.set_path("short").unwrap();
        h.set_cksum();
        builder.append(&h, &b"x"[..]).unwrap();
        over_limit(
            &t,
            "pax.tar",
            &builder.into_inner().unwrap(),
            &format!("{shown} has a name of 5001 bytes, longer than the limit of 4096"),
        );
        let mut builder = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_mode(0o777);
        h.set_size(0);
        builder.append_link(&mut h, "l", &long).unwrap();
        over_limit(
            &t,
            "link.tar",
            &builder.into_inner().unwrap(),
            "l has a link target of 5001 bytes, longer than the limit of 4096",
        );
        let zip = zip_bytes(&[("good.txt", Some(b"ok"), None), (&long, Some(b"x"), None)]);
        over_limit(&t, "long.zip", &zip, &format!("{shown} has a name of 5001 bytes, longer than the limit of 4096"));
        // All names together.
        let mut t = T::new();
        t.limits.name_bytes = 100;
        let names: Vec<String> = (0..10).map(|i| format!("file-number-{i:02}")).collect();
        let entries: Vec<E<'_>> = names.iter().map(|n| E::File(n, b"", 0o644)).collect();
        over_limit(
            &t,
            "names.tar",
            &tar_bytes(&entries),
            "its member names add up to more than 100 bytes, the limit for one archive",
        );
    }

    #[test]
    fn archives_with_more_members_than_the_limit_are_refused() {
        let mut t = T::new();
        t.limits.members = 3;
        let three = [E::File("a", b"a", 0o644), E::File("b", b"b", 0o644), E::Dir("c/", 0o755)];
        let loc = t.archive("three.tar", &tar_bytes(&three));
        t.apply(&[("ok", &loc)]).unwrap();
        assert_eq!(t.read("ok/b"), "b");
        let four =
            [E::File("good.txt", b"ok", 0o644), E::File("b", b"b", 0o644), E::Dir("c/", 0o755), E::Dir("d/", 0o755)];
        let expected = "it holds more than 3 members, the limit for one archive";
        over_limit(&t, "four.tgz", &gzip(&tar_bytes(&four)), expected);
        let zip = zip_bytes(&[
            ("good.txt", Some(b"ok"), None),
            ("b", Some(b"b"), None),
            ("c/", None, None),
            ("d/", None, None),
        ]);
        over_limit(&t, "four.zip", &zip, expected);
    }

    #[test]
    fn archives_that_unpack_past_the_total_are_refused() {
        let mut t = T::new();
        t.limits.total_bytes = 64 * 1024;
        let zeros = vec![0u8; 1 << 20];
        let tar = tar_bytes(&[E::File("good.txt", b"ok", 0o644), E::File("zeros", &zeros, 0o644)]);
        let expected = "it unpacks to more than 64 KiB, the limit for one archive";
        for (name, bytes) in [("bomb.tgz", gzip(&tar)), ("bomb.tbz", bzip(&tar)), ("bomb.txz", xz(&tar))] {
            assert!(bytes.len() < 16 * 1024, "{name} is compressed");
            over_limit(&t, name, &bytes, expected);
        }
        // Skipped members count too (the stream is unpacked to find what follows).
        let skipped = tar_bytes(&[E::File("good.txt", b"ok", 0o644), E::Global(&zeros)]);
        over_limit(&t, "global.tgz", &gzip(&skipped), expected);
        let zip = zip_bytes(&[("good.txt", Some(b"ok"), None), ("zeros", Some(&zeros), None)]);
        assert!(zip.len() < 16 * 1024);
        over_limit(&t, "bomb.zip", &zip, expected);
        // Just under the limit: fine.
        let fits = tar_bytes(&[E::File("f", &zeros[..32 * 1024], 0o644)]);
        let loc = t.archive("fits.tgz", &gzip(&fits));
        t.apply(&[("ok", &loc)]).unwrap();
        assert_eq!(fs::metadata(t.p("ok/f")).unwrap().len(), 32 * 1024);
    }

    #[test]
    fn limit_refusals_of_downloaded_archives_redact_the_url() {
        let mut t = T::new();
        t.limits.members = 1;
        let url = "https://user:pw@bucket.s3.amazonaws.com/app.tgz?X-Amz-Credential=AKIA&X-Amz-Signature=abc123";
        t.fetch.bodies.insert(url.into(), gzip(&sample_tar()));
        let err = t.apply(&[("d", url)]).unwrap_err();
        assert_eq!(
            err,
            format!(
                "Refusing to extract {}: it holds more than 1 members, the limit for one archive",
                cfn_aws::http::redact_url(url)
            )
        );
        assert!(!err.contains("abc123") && !err.contains(":pw@"), "{err}");
    }

    /// An archive read through the internal API, member by member (issue 13, item 5).
    fn bare_archive<'a>(t: &T, target: &'a str) -> Archive<'a> {
        let file = File::open(t.archive("bare.tar", &tar_bytes(&[]))).unwrap();
        Archive {
            file,
            format: Format::Tar(Compression::None),
            location: "bare.tar",
            target,
            limits: Limits::default(),
        }
    }

    fn bare_member(name: &str, kind: Kind, mode: u32) -> Member {
        Member { name: name.into(), rel: normalise(&[], name.as_bytes()).unwrap(), kind, mode, mtime: Some(MTIME) }
    }

    /// Another user swaps `dest/d` for a link to `outside` (keeping the directory as
    /// `dest/moved`).
    fn swap_for_link(dest: &str, outside: &str) {
        fs::rename(format!("{dest}/d"), format!("{dest}/moved")).unwrap();
        std::os::unix::fs::symlink(outside, format!("{dest}/d")).unwrap();
    }

    /// Issue 13, item 5: a directory of the target swapped for a link to outside between
    /// deciding where a member goes and writing it is not followed, whatever the member.
    #[test]
    fn a_directory_swapped_for_a_link_mid_extraction_is_never_written_through() {
        let cases: [(&str, Kind); 4] = [
            ("d/f", Kind::File),
            ("d/sub", Kind::Dir),
            ("d/l", Kind::Symlink("../x".into())),
            ("d/h", Kind::Hardlink(vec!["x".into()])),
        ];
        for (name, kind) in cases {
            let t = T::new();
            let target = t.p("dest");
            let archive = bare_archive(&t, &target);
            let mut w = Writer::new(&archive).unwrap();
            w.member(0, &bare_member("d", Kind::Dir, 0o755), &mut io::empty()).unwrap();
            w.member(1, &bare_member("d/a", Kind::File, 0o644), &mut &b"a"[..]).unwrap();
            w.member(2, &bare_member("x", Kind::File, 0o644), &mut &b"x"[..]).unwrap();
            // Decided on the real tree (d is a directory), then swapped before writing.
            let (swapped, outside) = (std::cell::Cell::new(false), t.p("outside"));
            let dest = target.clone();
            w.between = Some(Box::new(move || {
                if !swapped.replace(true) {
                    swap_for_link(&dest, &outside);
                }
            }));
            let err = w.member(3, &bare_member(name, kind, 0o644), &mut &b"secret"[..]).unwrap_err();
            w.between = None;
            assert_eq!(
                err,
                format!(
                    "Failed to extract {name} from bare.tar into {target}: {} became a symbolic link during the extraction",
                    t.p("dest/d")
                ),
                "{name}"
            );
            t.assert_outside_untouched();
            assert_eq!(t.read("dest/moved/a"), "a", "{name}");
            assert_eq!(fs::read_dir(t.p("dest/moved")).unwrap().count(), 1, "{name}");
        }
    }

    /// Issue 13, item 5: the final mode and mtime of a directory are set on the
    /// directory the archive made, never through a link that took its place; a file
    /// member replacing a link to an outside file leaves that file's mode alone.
    #[test]
    fn final_modes_never_follow_a_link() {
        let t = T::new();
        fs::write(t.p("outside/victim"), "v").unwrap();
        fs::set_permissions(t.p("outside/victim"), fs::Permissions::from_mode(0o600)).unwrap();
        fs::set_permissions(t.p("outside"), fs::Permissions::from_mode(0o755)).unwrap();
        let outside_mtime = fs::metadata(t.p("outside")).unwrap().mtime();
        fs::create_dir(t.p("dest")).unwrap();
        std::os::unix::fs::symlink(t.p("outside/victim"), t.p("dest/f")).unwrap();
        let target = t.p("dest");
        let archive = bare_archive(&t, &target);
        let mut w = Writer::new(&archive).unwrap();
        w.member(0, &bare_member("d", Kind::Dir, 0o777), &mut io::empty()).unwrap();
        w.member(1, &bare_member("f", Kind::File, 0o777), &mut &b"new"[..]).unwrap();
        swap_for_link(&target, &t.p("outside"));
        let err = w.finish_directories().unwrap_err();
        assert_eq!(
            err,
            format!(
                "Failed to set the mode of {}: {} became a symbolic link during the extraction",
                t.p("dest/d"),
                t.p("dest/d")
            )
        );
        assert_eq!(t.mode("outside"), 0o755);
        assert_eq!(fs::metadata(t.p("outside")).unwrap().mtime(), outside_mtime);
        assert_eq!(t.mode("outside/victim"), 0o600);
        assert_eq!(t.read("outside/victim"), "v");
        assert!(fs::symlink_metadata(t.p("dest/f")).unwrap().is_file());
        assert_eq!((t.read("dest/f"), t.mode("dest/f")), ("new".to_string(), 0o777));

        // A directory swapped for another directory is not the one the archive made.
        fs::remove_file(t.p("dest/d")).unwrap();
        fs::create_dir(t.p("dest/d")).unwrap();
        fs::set_permissions(t.p("dest/d"), fs::Permissions::from_mode(0o700)).unwrap();
        let err = w.finish_directories().unwrap_err();
        assert!(err.ends_with(": it was replaced during the extraction"), "{err}");
        assert_eq!(t.mode("dest/d"), 0o700);

        // Left as they were, the modes and mtimes are set.
        fs::remove_dir(t.p("dest/d")).unwrap();
        fs::rename(t.p("dest/moved"), t.p("dest/d")).unwrap();
        w.finish_directories().unwrap();
        assert_eq!(t.mode("dest/d"), 0o777);
        assert_eq!(fs::metadata(t.p("dest/d")).unwrap().mtime() as u64, MTIME);
    }
}
