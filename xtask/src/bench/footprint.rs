//! Workload 7: what each implementation puts on disk.

use anyhow::Result;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Size in bytes of a file, or of everything under a directory (symlinks not followed,
/// each inode counted once).
pub fn size_of(path: &Path) -> u64 {
    fn walk(path: &Path, seen: &mut BTreeSet<(u64, u64)>) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
        if !seen.insert((meta.dev(), meta.ino())) {
            return 0;
        }
        if meta.is_dir() {
            std::fs::read_dir(path).map(|entries| entries.flatten().map(|e| walk(&e.path(), seen)).sum()).unwrap_or(0)
        } else {
            meta.len()
        }
    }
    walk(path, &mut BTreeSet::new())
}

/// Whether an ELF file has no program interpreter (statically linked, possibly static-pie).
pub fn is_static_elf(path: &Path) -> Option<bool> {
    let data = std::fs::read(path).ok()?;
    if data.len() < 64 || &data[..4] != b"\x7fELF" || data[4] != 2 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([data[o], data[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(data[0x20..0x28].try_into().ok()?) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    for i in 0..phnum {
        let at = phoff + i * phentsize;
        let kind = u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?);
        if kind == 3 {
            return Some(false); // PT_INTERP
        }
    }
    Some(true)
}

/// Our binary: the release build (the profile strips it), a `strip`ped copy as a check,
/// and the static musl build when available.
pub fn ours(release: &Path, musl: Option<&Path>, scratch: &Path) -> Value {
    let stripped = scratch.join("cfn-bootstrap.stripped");
    let strip_size = std::fs::copy(release, &stripped)
        .ok()
        .and_then(|_| std::process::Command::new("strip").arg(&stripped).status().ok())
        .filter(|s| s.success())
        .map(|_| size_of(&stripped));
    let mut out = json!({
        "release": {"path": release.display().to_string(), "bytes": size_of(release),
                    "static": is_static_elf(release)},
        "release_stripped_bytes": strip_size,
    });
    if let Some(musl) = musl {
        out["musl"] =
            json!({"path": musl.display().to_string(), "bytes": size_of(musl), "static": is_static_elf(musl)});
    }
    out
}

/// Another implementation's installed size, from its command prefix: the directory or
/// file the prefix names, and every absolute path its tools mention when they are
/// scripts (a wrapper's PYTHONPATH entries and interpreter, an interpreter's whole
/// installation when it lives in `<root>/bin/`), each counted once.
pub fn other(tool_paths: &[PathBuf]) -> Result<Value> {
    let mut roots: BTreeSet<PathBuf> = BTreeSet::new();
    for tool in tool_paths {
        let Ok(real) = std::fs::canonicalize(tool) else { continue };
        roots.insert(real.clone());
        let Ok(bytes) = std::fs::read(&real) else { continue };
        if bytes.starts_with(b"\x7fELF") {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]).into_owned();
        for word in text.split(|c: char| c.is_whitespace() || matches!(c, ':' | '=' | '"' | '\'' | ';')) {
            if !word.starts_with('/') || word.len() < 2 {
                continue;
            }
            let Ok(path) = std::fs::canonicalize(word) else { continue };
            // An interpreter or script in <root>/bin: its whole installation.
            let root = match path.parent() {
                Some(dir) if path.is_file() && dir.file_name().is_some_and(|n| n == "bin") => {
                    dir.parent().map(Path::to_path_buf).unwrap_or(path.clone())
                }
                _ => path,
            };
            if root != Path::new("/") && root != Path::new("/usr") && root != Path::new("/bin") {
                roots.insert(root);
            }
        }
    }
    // Drop paths inside another counted path.
    let all: Vec<PathBuf> = roots.iter().cloned().collect();
    let kept: Vec<PathBuf> = all.iter().filter(|p| !all.iter().any(|q| q != *p && p.starts_with(q))).cloned().collect();
    let parts: Vec<Value> =
        kept.iter().map(|p| json!({"path": p.display().to_string(), "bytes": size_of(p)})).collect();
    let total: u64 = kept.iter().map(|p| size_of(p)).sum();
    Ok(json!({"bytes": total, "parts": parts}))
}
