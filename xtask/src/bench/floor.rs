//! The file system's own cost of writing files the way cfn-init does
//! (crates/configsets/src/files.rs): per file a look for a previous version, a check of
//! the parent, a new temporary file beside the target (O_EXCL, mode 0600), the content,
//! fchmod, close, rename over the target; at the end one `syncfs` and an fsync of the
//! directory (what cfn-init does for a section of more than 16 files). Two variants show
//! what the batching buys: an fdatasync of every file before its rename (what cfn-init
//! does for small sections, and the usual "atomic write" recipe) and no sync at all.
//!
//! The floor runs interleaved with workload 2b, so both see the same disk and load.

use super::measure::{self, Stats};
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

#[derive(Clone, Copy, PartialEq)]
pub enum Sync {
    SyncfsPerBatch,
    FdatasyncPerFile,
    None,
}

impl Sync {
    pub const ALL: [Sync; 3] = [Sync::SyncfsPerBatch, Sync::FdatasyncPerFile, Sync::None];

    pub fn key(self) -> &'static str {
        match self {
            Sync::SyncfsPerBatch => "syncfs_per_batch",
            Sync::FdatasyncPerFile => "fdatasync_per_file",
            Sync::None => "no_sync",
        }
    }
}

/// Per-file wall and CPU time (ms) of each variant over `reps` batches of `count` files.
pub struct Floor {
    pub files: usize,
    pub reps: usize,
    pub results: Vec<(Sync, Stats, Stats)>,
}

impl Floor {
    pub fn per_file_wall(&self, sync: Sync) -> f64 {
        self.results.iter().find(|(s, ..)| *s == sync).map_or(f64::NAN, |(_, wall, _)| wall.median)
    }

    pub fn json(&self) -> Value {
        let mut variants = serde_json::Map::new();
        for (sync, wall, cpu) in &self.results {
            variants.insert(sync.key().into(), json!({"per_file_wall_ms": wall.json(), "per_file_cpu_ms": cpu.json()}));
        }
        json!({"files": self.files, "batches": self.reps, "method": "per file: stat target, stat dir, temp file beside \
               the target (O_EXCL, 0600), write, fchmod 0644, [fdatasync], close, rename; at the end [syncfs] + fsync \
               of the directory; timed inside a minimal rustc -O program, interleaved with workload 2b", "variants": variants})
    }
}

/// The minimal program: `fs-floor DIR COUNT MODE` writes COUNT files into the empty
/// directory DIR and prints the wall and CPU nanoseconds of the writes (and the sync).
/// Compiled with `rustc -O`, std only, so nothing but the file system is measured.
const PROGRAM: &str = r#"
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
unsafe extern "C" { fn syncfs(fd: i32) -> i32; }
fn cpu_ns() -> u128 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0)
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::Path::new(&args[1]);
    let count: usize = args[2].parse().unwrap();
    let mode = args[3].as_str();
    let pid = std::process::id();
    let bodies: Vec<Vec<u8>> = (0..count).map(|i| format!(BODY, i).into_bytes()).collect();
    let (cpu0, start) = (cpu_ns(), std::time::Instant::now());
    for (i, body) in bodies.iter().enumerate() {
        let target = dir.join(format!("f{i:04}.txt"));
        let _ = std::fs::symlink_metadata(&target);
        let _ = std::fs::metadata(dir);
        let temp = dir.join(format!(".f{i:04}.txt.floor-{pid}-{i}"));
        let mut file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).mode(0o600)
            .open(&temp).unwrap();
        file.write_all(body).unwrap();
        file.set_permissions(std::fs::Permissions::from_mode(0o644)).unwrap();
        if mode == "fdatasync_per_file" { file.sync_data().unwrap(); }
        drop(file);
        std::fs::rename(&temp, &target).unwrap();
    }
    let handle = std::fs::File::open(dir).unwrap();
    if mode == "syncfs_per_batch" {
        use std::os::fd::AsRawFd;
        assert_eq!(unsafe { syncfs(handle.as_raw_fd()) }, 0);
    }
    if mode != "no_sync" { handle.sync_all().unwrap(); }
    println!("{} {}", start.elapsed().as_nanos(), cpu_ns() - cpu0);
}
"#;

/// Compiles the minimal program into `scratch`, with `body` as the content pattern
/// (`{}` = the file's index).
pub fn compile(scratch: &Path, body: &str) -> Result<std::path::PathBuf> {
    let source = scratch.join("fs-floor.rs");
    let binary = scratch.join("fs-floor");
    std::fs::write(&source, PROGRAM.replace("BODY", &format!("{body:?}")))?;
    let status = std::process::Command::new("rustc")
        .args(["-O", "--edition", "2024", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .context("run rustc")?;
    if !status.success() {
        anyhow::bail!("compiling the file-system floor program failed");
    }
    Ok(binary)
}

/// Samples of every variant, one batch of each per call of [`Samples::batch`].
pub struct Samples {
    program: std::path::PathBuf,
    dir: std::path::PathBuf,
    out: std::path::PathBuf,
    count: usize,
    taken: Vec<(Sync, Vec<f64>, Vec<f64>)>,
}

impl Samples {
    pub fn new(program: &Path, dir: &Path, out: &Path, count: usize) -> Samples {
        let taken = Sync::ALL.iter().map(|s| (*s, vec![], vec![])).collect();
        Samples { program: program.into(), dir: dir.into(), out: out.into(), count, taken }
    }

    /// One batch of each variant in a fresh directory (removed and synced beforehand,
    /// outside the measurement); a warm-up batch is not kept.
    pub fn batch(&mut self, keep: bool) -> Result<()> {
        for (sync, walls, cpus) in self.taken.iter_mut() {
            let _ = fs::remove_dir_all(&self.dir);
            fs::create_dir_all(&self.dir)?;
            measure::syncfs(&self.dir)?;
            std::thread::sleep(super::SETTLE);
            let mut cmd = std::process::Command::new(&self.program);
            cmd.arg(&self.dir).arg(self.count.to_string()).arg(sync.key());
            measure::run(&mut cmd, &self.out)?;
            let printed = fs::read_to_string(self.out.with_extension("stdout"))?;
            let mut numbers = printed.split_whitespace().map(|n| n.parse::<f64>().unwrap_or(f64::NAN));
            let (wall_ns, cpu_ns) = (numbers.next().unwrap_or(f64::NAN), numbers.next().unwrap_or(f64::NAN));
            if keep {
                walls.push(wall_ns / 1e6 / self.count as f64);
                cpus.push(cpu_ns / 1e6 / self.count as f64);
            }
        }
        let _ = fs::remove_dir_all(&self.dir);
        Ok(())
    }

    pub fn finish(self) -> Floor {
        let reps = self.taken.first().map_or(0, |(_, w, _)| w.len());
        let results = self.taken.into_iter().map(|(s, w, c)| (s, Stats::of(&w), Stats::of(&c))).collect();
        Floor { files: self.count, reps, results }
    }
}
