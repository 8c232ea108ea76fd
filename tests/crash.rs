//! Crash consistency (issue 13): cfn-init and cfn-hup are killed with SIGKILL at random
//! moments while they write, and what they leave is checked after every kill.
//!
//! * `files`: a files section of 300 files, 16 B to 16 KiB, most of them replacing the
//!   previous run's (INIT-FILES-10, -11, -13): every target holds its old or its new
//!   content in full, never missing; a `.bak` or `.bak2` holds a whole earlier version;
//!   nothing but those and the run's temporary files is in the directories. A last,
//!   unkilled run leaves every file new, its `.bak` the version before, and no
//!   temporary file (the killed runs' ones are removed).
//! * `sources`: a tar of 120 members (directories, files, links, hard links) extracted
//!   over the previous run's (INIT-SRC-03): every member path holds what it held or the
//!   new member in full, and nothing is made outside the target.
//! * `hup`: cfn-hup passes where 13 hooks fire, one running cfn-init against the stack,
//!   and two commands arrive (STATE-01, STATE-04, STATE-05): `metadata_db.json`,
//!   `commands_run.json`, cfn-init's `metadata.json` and its origin record always parse,
//!   and the next, unkilled pass stores exactly the stack's values. Its sandbox is on
//!   the disk, where the state files' syncs take time for kills to land in.
//! * a live writer in another PID namespace (issue 22, item 9): a cfn-init on a volume
//!   shared with another container keeps its temporary file while another cfn-init
//!   cleans up leftovers in the same directory, and completes.
//!
//! Kill moments are drawn uniformly over the length of an unkilled run (the median of
//! the last ones: measured first, then every eighth run is left to finish, and must
//! succeed), so they land all along the run; the whole process group is killed
//! (cfn-hup with the action and cfn-init it runs). A run that ended before its kill is
//! not counted. The files and sources scenarios run on a tmpfs (`Sandbox::in_memory`):
//! what a kill leaves is the same, and cfn-init's `syncfs` does not wait for the disk.
//!
//! By default the three tests make 210 kills (`cargo test --test crash`). `CFN_CRASH_KILLS`
//! asks for a total shared among them (`cargo xtask crash --kills N`), and `CFN_CRASH_SEED`
//! repeats the kill moments of a run (each test prints its seed). Each test prints one
//! line, `crash <scenario>: …`, and fails listing the violations it found.

mod common;
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Killing at random moments
// ---------------------------------------------------------------------------

/// xorshift64*: enough to spread kill moments, and repeatable from its seed.
struct Rng(u64);

impl Rng {
    fn new(scenario: &str) -> (Rng, u64) {
        let seed = std::env::var("CFN_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
            now.as_nanos() as u64 ^ ((std::process::id() as u64) << 32)
        });
        // Each scenario draws its own sequence from the seed.
        let mixed = scenario.bytes().fold(seed, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        (Rng(mixed | 1), seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A moment in `[0, window)`.
    fn moment(&mut self, window: Duration) -> Duration {
        let micros = window.as_micros().max(1) as u64;
        Duration::from_micros(self.next() % micros)
    }
}

/// How many kills a scenario makes: its share (percent) of `CFN_CRASH_KILLS`, else its
/// part of the default run.
fn kills_wanted(share_percent: usize, default: usize) -> usize {
    match std::env::var("CFN_CRASH_KILLS").ok().and_then(|n| n.parse::<usize>().ok()) {
        Some(total) => (total * share_percent).div_ceil(100),
        None => default,
    }
}

/// Starts `cmd` in a process group of its own and kills the group with SIGKILL after
/// `delay`; true when that kill ended it (false: it had exited already).
fn run_and_kill(mut cmd: Command, delay: Duration) -> bool {
    cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start the tool");
    std::thread::sleep(delay);
    // SAFETY: signals the group led by our own child, which is not reaped yet (so its
    // pid cannot have been reused).
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let status = child.wait().unwrap();
    status.signal() == Some(libc::SIGKILL)
}

/// Unkilled runs measured before the kills.
const MEASURED: u64 = 5;
/// One run in this many is left to finish and timed.
const CALIBRATION: usize = 8;

/// The kill window: the median length of unkilled runs (on a busy machine one run can
/// take several times as long as the others).
fn median(runs: &[Duration]) -> Duration {
    let mut runs = runs.to_vec();
    runs.sort();
    runs.get(runs.len() / 2).copied().unwrap_or(Duration::from_millis(50))
}

/// What one scenario did and found.
struct Tally {
    scenario: &'static str,
    seed: u64,
    runs: usize,
    kills: usize,
    /// Kills that left some targets new and some old (the rest landed before the first
    /// write or after the last).
    mid_write: usize,
    leftovers: usize,
    violations: Vec<String>,
    started: Instant,
}

impl Tally {
    fn new(scenario: &'static str, seed: u64) -> Tally {
        Tally {
            scenario,
            seed,
            runs: 0,
            kills: 0,
            mid_write: 0,
            leftovers: 0,
            violations: Vec::new(),
            started: Instant::now(),
        }
    }

    fn violation(&mut self, what: String) {
        self.violations.push(format!("after kill {}: {what}", self.kills));
    }

    /// Kills until `wanted` runs were killed; `before` prepares run `n` (from 0) and
    /// returns its command, `after` checks what the run left. The kill window is the
    /// median length of the last unkilled runs: `measured` at first, then every
    /// [`CALIBRATION`]th run is left to finish (it must succeed) and timed, so that the
    /// window follows the machine's load.
    fn kill_runs(
        &mut self,
        wanted: usize,
        mut measured: Vec<Duration>,
        rng: &mut Rng,
        before: impl Fn(usize) -> Command,
        mut after: impl FnMut(&mut Tally, usize),
    ) {
        // A bound in case runs keep ending before their kill.
        while self.kills < wanted && self.runs < wanted * 4 {
            let run = self.runs;
            self.runs += 1;
            if run % CALIBRATION == CALIBRATION - 1 {
                let mut cmd = before(run);
                let started = Instant::now();
                let out = cmd.stdin(Stdio::null()).output().unwrap();
                measured.push(started.elapsed());
                if !out.status.success() {
                    self.violation(format!("run {run} failed: {}", String::from_utf8_lossy(&out.stderr)));
                }
            } else if run_and_kill(before(run), rng.moment(median(&measured[measured.len().saturating_sub(5)..]))) {
                self.kills += 1;
            }
            after(self, run);
        }
        if self.kills < wanted {
            self.violations.push(format!("only {} of {wanted} runs could be killed before they ended", self.kills));
        }
    }

    /// Prints the scenario's line and fails on any violation.
    fn finish(self) {
        println!(
            "crash {}: {} kills in {} runs, {} of them mid-write, {} temporary files seen after kills, {} violations, {:.1} s (seed {})",
            self.scenario,
            self.kills,
            self.runs,
            self.mid_write,
            self.leftovers,
            self.violations.len(),
            self.started.elapsed().as_secs_f64(),
            self.seed
        );
        assert!(
            self.violations.is_empty(),
            "crash {}: {} violations (seed {}):\n{}",
            self.scenario,
            self.violations.len(),
            self.seed,
            self.violations.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

/// Whether `name` is a temporary name the tools give a file on its way to `target`
/// (`.<target>.<pid>.<n>.cfn-tmp`).
fn is_temp_of(name: &str, target: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".cfn-tmp")) else { return false };
    let Some(rest) = rest.strip_prefix(target).and_then(|r| r.strip_prefix('.')) else { return false };
    let parts: Vec<&str> = rest.split('.').collect();
    parts.len() == 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A generation's content for `key`: a first line naming both, then a line made of
/// them repeated up to `size` bytes (ASCII: it travels in JSON). A torn write is short;
/// a mix of two generations differs from both.
fn content(key: &str, generation: u64, size: usize) -> Vec<u8> {
    let mut bytes = format!("{key} {generation}\n").into_bytes();
    let line = format!("{}\n", format!("{generation} {key} ").repeat(8));
    while bytes.len() < size {
        let take = line.len().min(size - bytes.len());
        bytes.extend_from_slice(&line.as_bytes()[..take]);
    }
    bytes
}

/// The generation whose full content `bytes` is, for `key` (None: partial or foreign).
fn generation_of(key: &str, bytes: &[u8], size_of: impl Fn(u64) -> usize) -> Option<u64> {
    let first = bytes.split(|b| *b == b'\n').next()?;
    let generation: u64 = std::str::from_utf8(first).ok()?.strip_prefix(key)?.strip_prefix(' ')?.parse().ok()?;
    (content(key, generation, size_of(generation)) == bytes).then_some(generation)
}

// ---------------------------------------------------------------------------
// A files section
// ---------------------------------------------------------------------------

const FILE_DIRS: usize = 3;
const FILES: usize = 300;
/// Mostly small files, as configuration is: the run's time goes to writing them rather
/// than to reading the metadata that carries them.
const SIZES: [usize; 5] = [16, 300, 1024, 4096, 16_384];

/// Every fourth file keeps its content from run to run (the unchanged-file `.bak` rule).
fn unchanging(i: usize) -> bool {
    i % 4 == 3
}

fn file_rel(i: usize) -> String {
    format!("d{}/f{i:03}", i % FILE_DIRS)
}

/// File `i`'s content at run `generation` (generation 0 for an unchanging file).
fn file_generation(i: usize, generation: u64) -> u64 {
    if unchanging(i) { 0 } else { generation }
}

fn file_content(i: usize, generation: u64) -> Vec<u8> {
    content(&format!("f{i:03}"), file_generation(i, generation), SIZES[i % SIZES.len()])
}

struct FilesSetUp {
    sandbox: Sandbox,
}

impl FilesSetUp {
    fn root(&self) -> PathBuf {
        self.sandbox.path("root")
    }

    /// cfn-init with the files section of `generation`.
    fn command(&self, generation: u64) -> Command {
        let files: serde_json::Map<String, Value> = (0..FILES)
            .map(|i| {
                let path = self.root().join(file_rel(i)).display().to_string();
                (path, json!({"content": String::from_utf8(file_content(i, generation)).unwrap()}))
            })
            .collect();
        let metadata = json!({"AWS::CloudFormation::Init": {"config": {"files": files}}});
        let file = self.sandbox.path("metadata.json");
        std::fs::write(&file, metadata.to_string()).unwrap();
        self.sandbox.cmd("cfn-init").arg(&file).cmd
    }

    fn run(&self, generation: u64) -> Duration {
        let mut cmd = self.command(generation);
        let started = Instant::now();
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "cfn-init failed: {}", String::from_utf8_lossy(&out.stderr));
        started.elapsed()
    }

    fn generation_at(&self, path: &Path, i: usize) -> Option<u64> {
        let size = SIZES[i % SIZES.len()];
        std::fs::read(path).ok().and_then(|bytes| generation_of(&format!("f{i:03}"), &bytes, |_| size))
    }

    /// Checks what a run of `generation` left when files held `before`; returns what
    /// they hold now. Temporary files found are counted in `tally`.
    fn check(&self, tally: &mut Tally, generation: u64, before: &[u64]) -> Vec<u64> {
        let mut now = before.to_vec();
        let (mut old, mut new_seen) = (false, false);
        for (i, held) in now.iter_mut().enumerate() {
            let path = self.root().join(file_rel(i));
            let new = file_generation(i, generation);
            match (std::fs::symlink_metadata(&path), self.generation_at(&path, i)) {
                (Err(e), _) => tally.violation(format!("{} is missing ({e})", path.display())),
                (Ok(meta), _) if !meta.is_file() => tally.violation(format!("{} is not a file", path.display())),
                (Ok(_), Some(g)) if g == before[i] || g == new => {
                    *held = g;
                    if !unchanging(i) {
                        (old, new_seen) = (old || g != new, new_seen || g == new);
                    }
                }
                (Ok(meta), found) => tally.violation(format!(
                    "{} holds {found:?} ({} bytes), neither the old {} nor the new {new} in full",
                    path.display(),
                    meta.len(),
                    before[i]
                )),
            }
            for suffix in [".bak", ".bak2"] {
                let backup = PathBuf::from(format!("{}{suffix}", path.display()));
                if std::fs::symlink_metadata(&backup).is_err() {
                    continue;
                }
                match self.generation_at(&backup, i) {
                    Some(g) if g < new || (unchanging(i) && g == 0) => {}
                    found => tally.violation(format!(
                        "{} holds {found:?}, not a whole earlier version (run {generation})",
                        backup.display()
                    )),
                }
            }
        }
        if names_in(&self.root()) != (0..FILE_DIRS).map(|d| format!("d{d}")).collect::<Vec<_>>() {
            tally.violation(format!("{} holds {:?}", self.root().display(), names_in(&self.root())));
        }
        if old && new_seen {
            tally.mid_write += 1;
        }
        for d in 0..FILE_DIRS {
            let dir = self.root().join(format!("d{d}"));
            for name in names_in(&dir) {
                let known = (0..FILES).filter(|i| i % FILE_DIRS == d).map(|i| format!("f{i:03}")).any(|f| {
                    name == f || name == format!("{f}.bak") || name == format!("{f}.bak2") || is_temp_of(&name, &f)
                });
                if !known {
                    tally.violation(format!("{} is there", dir.join(&name).display()));
                } else if name.ends_with(".cfn-tmp") {
                    tally.leftovers += 1;
                }
            }
        }
        now
    }
}

#[test]
fn a_files_section_killed_at_random_moments_leaves_old_or_new_files_in_full() {
    let (mut rng, seed) = Rng::new("files");
    let mut tally = Tally::new("files", seed);
    let setup = FilesSetUp { sandbox: Sandbox::in_memory() };
    std::fs::create_dir(setup.root()).unwrap();
    // Unkilled: generation 0 creates the files, the next ones replace them (measured).
    setup.run(0);
    let measured = (1..=MEASURED).map(|generation| setup.run(generation)).collect();
    let mut held: Vec<u64> = (0..FILES).map(|i| file_generation(i, MEASURED)).collect();
    // Run n writes generation MEASURED + 1 + n.
    let generation = |run: usize| MEASURED + 1 + run as u64;
    tally.kill_runs(
        kills_wanted(40, 90),
        measured,
        &mut rng,
        |run| setup.command(generation(run)),
        |tally, run| held = setup.check(tally, generation(run), &held),
    );
    // The next run completes: every file new, `.bak` the version before, no `.bak2`, and
    // no temporary file left (those of the killed runs are removed).
    let generation = generation(tally.runs);
    setup.run(generation);
    let before = held.clone();
    let mut leftovers = Tally::new("files", seed);
    held = setup.check(&mut leftovers, generation, &before);
    tally.violations.extend(leftovers.violations);
    if leftovers.leftovers > 0 {
        tally.violation(format!("{} temporary files are left after a completed run", leftovers.leftovers));
    }
    for i in 0..FILES {
        let path = setup.root().join(file_rel(i));
        if held[i] != file_generation(i, generation) {
            tally.violation(format!("{} is not the last run's after it completed", path.display()));
        }
        let bak = setup.generation_at(Path::new(&format!("{}.bak", path.display())), i);
        if !unchanging(i) && bak != Some(before[i]) {
            tally.violation(format!("{}.bak holds {bak:?}, not the version before ({})", path.display(), before[i]));
        }
        if Path::new(&format!("{}.bak2", path.display())).exists() {
            tally.violation(format!("{}.bak2 is left after a completed run", path.display()));
        }
    }
    tally.finish();
}

// ---------------------------------------------------------------------------
// A sources extraction
// ---------------------------------------------------------------------------

const SOURCE_DIRS: usize = 6;

/// What a member path holds.
#[derive(Debug, Clone, PartialEq)]
enum Held {
    Missing,
    Dir,
    /// A file's content, by generation.
    File(u64),
    Link(String),
    /// Anything else: never right.
    Other(String),
}

/// A member of the archive of one generation.
enum Member {
    Dir,
    File(usize),
    Link(String),
    /// A hard link to the file member named.
    Hard(String),
}

/// The archive's members by path: in each `s<k>/`, files of every size, a `sub/`
/// directory with more, a link whose target changes with the generation, and a hard
/// link to one of the files.
fn members(generation: u64) -> Vec<(String, Member)> {
    let mut all = Vec::new();
    for k in 0..SOURCE_DIRS {
        all.push((format!("s{k}"), Member::Dir));
        for j in 0..8 {
            all.push((format!("s{k}/f{j}"), Member::File(SIZES[(j + k) % SIZES.len()])));
        }
        all.push((format!("s{k}/sub"), Member::Dir));
        for j in 0..8 {
            all.push((format!("s{k}/sub/g{j}"), Member::File(SIZES[j % 3])));
        }
        all.push((format!("s{k}/link"), Member::Link(format!("f{}", generation % 3))));
        all.push((format!("s{k}/hard"), Member::Hard(format!("s{k}/f2"))));
    }
    all
}

fn member_size(rel: &str, generation: u64) -> usize {
    members(generation)
        .into_iter()
        .find_map(|(path, member)| match member {
            Member::File(size) if path == rel => Some(size),
            _ => None,
        })
        .unwrap_or(0)
}

fn archive(generation: u64) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, member) in members(generation) {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(1_600_000_000);
        match member {
            Member::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, format!("{path}/"), std::io::empty()).unwrap();
            }
            Member::File(size) => {
                let bytes = content(&path, generation, size);
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(bytes.len() as u64);
                builder.append_data(&mut header, &path, bytes.as_slice()).unwrap();
            }
            Member::Link(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                header.set_mode(0o777);
                builder.append_link(&mut header, &path, &target).unwrap();
            }
            Member::Hard(target) => {
                header.set_entry_type(tar::EntryType::Link);
                header.set_size(0);
                header.set_mode(0o644);
                builder.append_link(&mut header, &path, &target).unwrap();
            }
        }
    }
    builder.into_inner().unwrap()
}

/// What a member of `generation` looks like once extracted (a hard link: its source's
/// content).
fn extracted(member: &Member, generation: u64) -> Held {
    match member {
        Member::Dir => Held::Dir,
        Member::File(_) | Member::Hard(_) => Held::File(generation),
        Member::Link(target) => Held::Link(target.clone()),
    }
}

struct SourcesSetUp {
    sandbox: Sandbox,
}

impl SourcesSetUp {
    fn target(&self) -> PathBuf {
        self.sandbox.path("root/target")
    }

    fn command(&self, generation: u64) -> Command {
        let location = self.sandbox.path("archive.tar");
        std::fs::write(&location, archive(generation)).unwrap();
        let metadata = json!({"AWS::CloudFormation::Init": {"config": {"sources": {
            self.target().display().to_string(): location.display().to_string()
        }}}});
        let file = self.sandbox.path("metadata.json");
        std::fs::write(&file, metadata.to_string()).unwrap();
        self.sandbox.cmd("cfn-init").arg(&file).cmd
    }

    fn run(&self, generation: u64) -> Duration {
        let mut cmd = self.command(generation);
        let started = Instant::now();
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "cfn-init failed: {}", String::from_utf8_lossy(&out.stderr));
        started.elapsed()
    }

    fn held(&self, rel: &str) -> Held {
        let path = self.target().join(rel);
        let Ok(meta) = std::fs::symlink_metadata(&path) else { return Held::Missing };
        if meta.is_dir() {
            Held::Dir
        } else if meta.file_type().is_symlink() {
            Held::Link(std::fs::read_link(&path).unwrap().display().to_string())
        } else if meta.is_file() {
            // A hard link holds its source's content.
            let key = if rel.ends_with("/hard") { rel.replace("/hard", "/f2") } else { rel.to_string() };
            let bytes = std::fs::read(&path).unwrap_or_default();
            match generation_of(&key, &bytes, |g| member_size(&key, g)) {
                Some(g) => Held::File(g),
                None => Held::Other(format!("a file of {} bytes that is no whole member", bytes.len())),
            }
        } else {
            Held::Other(format!("{:?}", meta.file_type()))
        }
    }

    /// Checks what an extraction of `generation` left when member paths held `before`;
    /// returns what they hold now.
    fn check(&self, tally: &mut Tally, generation: u64, before: &BTreeMap<String, Held>) -> BTreeMap<String, Held> {
        let mut now = BTreeMap::new();
        let (mut old_seen, mut new_seen) = (false, false);
        for (rel, member) in members(generation) {
            let held = self.held(&rel);
            let old = before.get(&rel).cloned().unwrap_or(Held::Missing);
            let new = extracted(&member, generation);
            if held != old && held != new {
                tally.violation(format!("{rel} holds {held:?}, neither the old {old:?} nor the new {new:?}"));
            }
            if matches!(member, Member::File(_)) {
                (old_seen, new_seen) = (old_seen || held != new, new_seen || held == new);
            }
            now.insert(rel, held);
        }
        if old_seen && new_seen {
            tally.mid_write += 1;
        }
        // Nothing outside the target; inside, only members and temporary files.
        if names_in(&self.sandbox.path("root")) != ["target"] {
            tally.violation(format!("beside the target: {:?}", names_in(&self.sandbox.path("root"))));
        }
        let mut dirs = vec![String::new()];
        while let Some(dir) = dirs.pop() {
            for name in names_in(&self.target().join(&dir)) {
                let rel = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
                match now.get(&rel) {
                    Some(Held::Dir) => dirs.push(rel),
                    Some(_) => {}
                    None if now.keys().any(|m| {
                        let (parent, base) = m.rsplit_once('/').unwrap_or(("", m));
                        parent == dir && is_temp_of(&name, base)
                    }) =>
                    {
                        tally.leftovers += 1
                    }
                    None => tally.violation(format!("{rel} is not a member of the archive")),
                }
            }
        }
        now
    }
}

#[test]
fn a_sources_extraction_killed_at_random_moments_leaves_old_or_new_members_in_full() {
    let (mut rng, seed) = Rng::new("sources");
    let mut tally = Tally::new("sources", seed);
    let setup = SourcesSetUp { sandbox: Sandbox::in_memory() };
    std::fs::create_dir(setup.sandbox.path("root")).unwrap();
    setup.run(0);
    let measured = (1..=MEASURED).map(|generation| setup.run(generation)).collect();
    let mut held = setup.check(&mut tally, MEASURED, &BTreeMap::new());
    // Run n extracts generation MEASURED + 1 + n.
    let generation = |run: usize| MEASURED + 1 + run as u64;
    tally.kill_runs(
        kills_wanted(35, 70),
        measured,
        &mut rng,
        |run| setup.command(generation(run)),
        |tally, run| held = setup.check(tally, generation(run), &held),
    );
    let generation = generation(tally.runs);
    setup.run(generation);
    let mut last = Tally::new("sources", seed);
    held = setup.check(&mut last, generation, &held);
    tally.violations.extend(last.violations);
    if last.leftovers > 0 {
        tally.violation(format!("{} temporary files are left after a completed run", last.leftovers));
    }
    for (rel, member) in members(generation) {
        let want = extracted(&member, generation);
        if held[&rel] != want {
            tally.violation(format!("{rel} holds {:?} after a completed run, not {want:?}", held[&rel]));
        }
    }
    tally.finish();
}

// ---------------------------------------------------------------------------
// cfn-hup's state
// ---------------------------------------------------------------------------

const HOOKS: usize = 12;

const REGION: &str = "us-east-1";
/// The command the command hook answers.
const COMMAND: &str = "crash-command";

/// A stack whose metadata changes everywhere a hook looks at each update, and cfn-hup
/// watching it: a hook per key (action `true`), one that runs cfn-init against the
/// stack when its Init changes, and a command hook, whose commands arrive on the
/// listener's queue (`commands_run.json`).
struct HupSetUp {
    sandbox: Sandbox,
    emulator: Emulator,
    stack: String,
    /// The listener's queue and the result queue, as paths on the emulator.
    queue: String,
    results: String,
}

impl HupSetUp {
    fn new() -> HupSetUp {
        let sandbox = Sandbox::new();
        let emulator = Emulator::shared();
        let stack = emulator.create_stack(&unique("crash-hup"), &instance_template(&HupSetUp::metadata(&sandbox, 0)));
        let conf = sandbox.path("conf");
        std::fs::create_dir_all(&conf).unwrap();
        let creds =
            sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
        let url = &emulator.url;
        std::fs::write(
            conf.join("cfn-hup.conf"),
            format!("[main]\nstack={stack}\ncredential-file={}\nurl={url}\n", creds.display()),
        )
        .unwrap();
        let mut hooks = format!(
            "[init]\ntriggers=post.update\npath=Resources.Instance.Metadata.AWS::CloudFormation::Init\n\
             action={} -s {stack} -r Instance --url {url} --access-key {ACCESS_KEY} --secret-key {SECRET_KEY}\n",
            sandbox.path("bin/cfn-init").display()
        );
        for i in 0..HOOKS {
            hooks.push_str(&format!(
                "[k{i}]\ntriggers=post.update\npath=Resources.Instance.Metadata.k{i}\naction=true\n"
            ));
        }
        hooks.push_str(&format!("[command]\ntriggers=on.command\npath={COMMAND}\naction=true\n"));
        std::fs::write(conf.join("hooks.conf"), hooks).unwrap();
        let results = create_queue(&emulator, REGION);
        let mut setup = HupSetUp { sandbox, emulator, stack, queue: String::new(), results };
        // The first pass registers the listener and records the baseline.
        setup.run().unwrap();
        let listeners = setup.emulator.get_json("/_emu/listeners");
        let mine = listeners
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["StackId"].as_str().unwrap_or_default().contains(&format!("/{}/", setup.stack)))
            .unwrap_or_else(|| panic!("no listener registered for {}: {listeners}", setup.stack));
        let url = mine["QueueUrl"].as_str().unwrap();
        setup.queue = url.strip_prefix(&setup.emulator.url).unwrap_or_else(|| panic!("queue URL {url}")).into();
        setup
    }

    /// Puts `count` commands on the listener's queue, in the SNS-style envelope.
    fn send_commands(&self, count: usize) {
        let expiration = chrono::Utc::now().timestamp_millis() + 3_600_000;
        for _ in 0..count {
            let command = json!({"DispatcherId": "crash", "CommandName": COMMAND, "InvocationId": unique("invocation"),
                                 "Expiration": expiration, "ResultQueue": format!("{}{}", self.emulator.url, self.results)});
            let body = json!({"Type": "Notification", "MessageId": unique("sns"), "TopicArn": "arn:aws:sns:us-east-1:1:t",
                              "Message": command.to_string()});
            sqs_post(
                &self.emulator,
                REGION,
                &self.queue,
                &[("Action", "SendMessage"), ("MessageBody", &body.to_string())],
            );
        }
    }

    fn metadata(sandbox: &Sandbox, generation: u64) -> Value {
        let mut metadata = serde_json::Map::new();
        let app = sandbox.path("app.conf").display().to_string();
        metadata.insert(
            "AWS::CloudFormation::Init".into(),
            json!({"config": {"files": {app: {"content": format!("generation {generation}\n")}}}}),
        );
        for i in 0..HOOKS {
            metadata.insert(format!("k{i}"), json!(format!("generation {generation} value {i}")));
        }
        Value::Object(metadata)
    }

    /// Updates the stack to `generation` and waits until the update completed.
    fn update(&self, generation: u64) {
        let template = instance_template(&HupSetUp::metadata(&self.sandbox, generation)).to_string();
        self.emulator
            .call("UpdateStack", &[("StackName", &self.stack), ("TemplateBody", &template)])
            .unwrap_or_else(|e| panic!("UpdateStack: {e}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = self.emulator.call("DescribeStacks", &[("StackName", &self.stack)]).ok().and_then(|v| {
                v.pointer("/DescribeStacksResponse/DescribeStacksResult/Stacks/0/StackStatus")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
            if status.is_some_and(|s| !s.ends_with("_IN_PROGRESS")) {
                return;
            }
            assert!(Instant::now() < deadline, "the update to generation {generation} did not complete");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One `--no-daemon` pass and one receive round (no long poll; SQS requests go to
    /// the emulator).
    fn command(&self) -> Command {
        let cmd = self.sandbox.cmd("cfn-hup").arg("-c").arg(self.sandbox.path("conf")).arg("--no-daemon");
        cmd.env("AWS_ENDPOINT_URL_SQS", &self.emulator.url).env("CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS", "0").cmd
    }

    /// An unkilled pass: how long it took, or why it failed.
    fn run(&self) -> Result<Duration, String> {
        let mut cmd = self.command();
        let started = Instant::now();
        let out = cmd.output().unwrap();
        if !out.status.success() {
            return Err(format!(
                "cfn-hup failed: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                self.sandbox.log("cfn-hup.log")
            ));
        }
        Ok(started.elapsed())
    }

    fn state_files(&self) -> [PathBuf; 4] {
        [
            self.sandbox.path("lib/cfn-hup/data/metadata_db.json"),
            self.sandbox.path("lib/cfn-init/data/metadata.json"),
            self.sandbox.path("lib/cfn-init/data/metadata_source.json"),
            self.sandbox.path("lib/cfn-hup/data/commands_run.json"),
        ]
    }

    fn temporary_files(&self) -> Vec<String> {
        ["lib/cfn-hup/data", "lib/cfn-init/data"]
            .iter()
            .flat_map(|dir| names_in(&self.sandbox.path(dir)))
            .filter(|name| name.ends_with(".cfn-tmp"))
            .collect()
    }

    /// Every state file there is parses as a JSON object; returns them.
    fn check_parse(&self, tally: &mut Tally) -> [Option<Value>; 4] {
        // The record of actions started and not ended: a list of hook keys.
        let started = self.sandbox.path("lib/cfn-hup/data/actions_started.json");
        if let Ok(bytes) = std::fs::read(&started)
            && !matches!(serde_json::from_slice::<Value>(&bytes), Ok(Value::Array(_)))
        {
            tally.violation(format!("{} does not parse as a list", started.display()));
        }
        // The records `cfn-bootstrap status` reads (cfn-hup's activity, the runs of the
        // cfn-init its hook runs): whole, whenever either was killed.
        let runs = self.sandbox.path("lib/cfn-init/runs");
        let records = names_in(&runs).into_iter().filter(|n| n.ends_with(".json")).map(|n| runs.join(n));
        for path in records.chain([self.sandbox.path("lib/cfn-hup/data/activity.json")]) {
            if let Ok(bytes) = std::fs::read(&path)
                && !matches!(serde_json::from_slice::<Value>(&bytes), Ok(Value::Object(_)))
            {
                tally.violation(format!("{} does not parse as an object", path.display()));
            }
        }
        self.state_files().map(|path| {
            let bytes = std::fs::read(&path).ok()?;
            // cfn-hup makes metadata_db.json empty at start, as the reference does: no state.
            if bytes.is_empty() && path.ends_with("metadata_db.json") {
                return Some(Value::Object(serde_json::Map::new()));
            }
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(value @ Value::Object(_)) => Some(value),
                other => {
                    tally.violation(format!("{} does not parse as an object: {other:?}", path.display()));
                    None
                }
            }
        })
    }

    /// The hook state that a pass over `generation` stores.
    fn db_of(&self, generation: u64) -> Value {
        let metadata = HupSetUp::metadata(&self.sandbox, generation);
        let mut db = serde_json::Map::new();
        db.insert(
            "init|Resources.Instance.Metadata.AWS::CloudFormation::Init".into(),
            metadata["AWS::CloudFormation::Init"].clone(),
        );
        for i in 0..HOOKS {
            db.insert(format!("k{i}|Resources.Instance.Metadata.k{i}"), metadata[format!("k{i}")].clone());
        }
        Value::Object(db)
    }

    /// Runs the next pass to its end; then the state holds exactly `generation`'s values.
    fn run_to_the_end(&self, tally: &mut Tally, generation: u64) {
        if let Err(e) = self.run() {
            return tally.violation(e);
        }
        let [db, applied, origin, commands_run] = self.check_parse(tally);
        if db != Some(self.db_of(generation)) {
            tally.violation(format!(
                "after a completed pass over generation {generation}, metadata_db.json holds {db:?}"
            ));
        }
        let metadata = HupSetUp::metadata(&self.sandbox, generation);
        if applied.as_ref() != Some(&metadata) {
            tally.violation(format!(
                "after a completed pass over generation {generation}, metadata.json holds {applied:?}"
            ));
        }
        if origin.as_ref().and_then(|o| o["stack"].as_str()) != Some(self.stack.as_str()) {
            tally.violation(format!("after a completed pass, the origin record is {origin:?}"));
        }
        if commands_run.as_ref().is_none_or(|c| !c["by_id"].is_object() || !c["by_day"].is_object()) {
            tally.violation(format!("after a completed pass, commands_run.json is {commands_run:?}"));
        }
        if std::fs::read_to_string(self.sandbox.path("app.conf")).ok() != Some(format!("generation {generation}\n")) {
            tally.violation(format!("after a completed pass over generation {generation}, app.conf is not its"));
        }
    }
}

#[test]
fn cfn_hup_killed_at_random_moments_leaves_state_that_parses_and_a_next_pass_that_works() {
    let (mut rng, seed) = Rng::new("hup");
    let mut tally = Tally::new("hup", seed);
    let setup = HupSetUp::new();
    // After each update a pass fires every hook and two commands arrive.
    let measured = (1..=MEASURED)
        .map(|generation| {
            setup.update(generation);
            setup.send_commands(2);
            setup.run().unwrap()
        })
        .collect();
    setup.run_to_the_end(&mut tally, MEASURED);
    // Run n is over generation MEASURED + 1 + n.
    let generation = |run: usize| MEASURED + 1 + run as u64;
    tally.kill_runs(
        kills_wanted(25, 50),
        measured,
        &mut rng,
        |run| {
            setup.update(generation(run));
            setup.send_commands(2);
            setup.command()
        },
        |tally, run| {
            tally.leftovers += setup.temporary_files().len();
            let [db, ..] = setup.check_parse(tally);
            // Killed between its first and its last state write.
            let stored = db.as_ref().and_then(Value::as_object).map_or(0, |db| {
                let want = setup.db_of(generation(run));
                db.iter().filter(|(key, value)| want.get(key.as_str()) == Some(value)).count()
            });
            if stored > 0 && stored < HOOKS + 1 {
                tally.mid_write += 1;
            }
            // After every fourth run, the next pass is run to its end and checked.
            if run % 4 == 3 {
                setup.run_to_the_end(tally, generation(run));
            }
        },
    );
    // A last update and pass write both state directories: no temporary file is left.
    let last = generation(tally.runs);
    setup.update(last);
    setup.send_commands(2);
    setup.run_to_the_end(&mut tally, last);
    let temps = setup.temporary_files();
    if !temps.is_empty() {
        tally.violation(format!("temporary files left after a completed pass: {temps:?}"));
    }
    tally.finish();
}

// ---------------------------------------------------------------------------
// A live writer in another PID namespace (issue 22, item 9)
// ---------------------------------------------------------------------------

/// A pid no process has here, nor the one after it (searched from the top: pids are
/// handed out upwards, so they stay free for the length of a test).
fn free_pid_here() -> u32 {
    let max: u32 = read(Path::new("/proc/sys/kernel/pid_max")).trim().parse().unwrap();
    let free = |pid: u32| !Path::new(&format!("/proc/{pid}")).exists();
    (max / 2..max - 1).rev().find(|pid| free(*pid) && free(pid + 1)).expect("a free pid")
}

/// Serves one download: the head and half of `body`, then the rest once `release`
/// says so. Returns the URL.
fn stalled_download(body: Vec<u8>, release: std::sync::mpsc::Receiver<()>) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/download", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            line.clear();
        }
        let half = body.len() / 2;
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
        let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body[..half]));
        let _ = stream.flush();
        let _ = release.recv();
        let _ = stream.write_all(&body[half..]);
    });
    url
}

/// Two containers share a volume: cfn-init in one (here: a PID namespace of its own,
/// whose pids mean nothing in this one) is downloading a file into its temporary file
/// when cfn-init in the other writes in the same directory and cleans up leftovers
/// there. The writer's file is locked, so it is kept whatever its pid says here, and the
/// writer completes; before, a temporary file whose pid had no process here was taken
/// for a leftover and removed under the writer, whose rename then failed.
#[test]
fn a_live_writer_in_another_pid_namespace_keeps_its_temporary_file() {
    let sandbox = Sandbox::new();
    let shared = sandbox.path("shared");
    std::fs::create_dir(&shared).unwrap();
    let body: Vec<u8> = (0..256 * 1024).map(|i| b'a' + (i % 26) as u8).collect();
    let (release, released) = std::sync::mpsc::channel();
    let url = stalled_download(body.clone(), released);
    let target = shared.join("download.bin");
    let writer_metadata = sandbox.path("writer.json");
    let doc = json!({"AWS::CloudFormation::Init": {"config": {"files": {target.to_str().unwrap(): {"source": url}}}}});
    std::fs::write(&writer_metadata, doc.to_string()).unwrap();
    let other = shared.join("other.txt");
    let other_metadata = sandbox.path("other.json");
    let doc =
        json!({"AWS::CloudFormation::Init": {"config": {"files": {other.to_str().unwrap(): {"content": "other\n"}}}}});
    std::fs::write(&other_metadata, doc.to_string()).unwrap();

    // The writer's pid in its namespace is one no process has here.
    let last = free_pid_here();
    let script = format!("echo {last} > /proc/sys/kernel/ns_last_pid && \"$@\"; exit $?");
    let mut writer = sandbox
        .cmd_via("unshare", "cfn-init in a PID namespace of its own")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script, "sh"])
        .arg(sandbox.path("bin/cfn-init"))
        .arg(&writer_metadata)
        .cmd;
    let writer = writer.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("unshare (these tests need root)");
    let temp = || names_in(&shared).into_iter().find(|name| is_temp_of(name, "download.bin"));
    wait_until(Duration::from_secs(60), "the writer's temporary file", || temp().is_some());
    let temp = temp().unwrap();
    let pid: u32 = temp.rsplit('.').nth(2).unwrap().parse().unwrap();
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{temp}: pid {pid} is not free here");

    // cfn-init of the other container writes beside it: its clean-up sees the file.
    sandbox.cmd("cfn-init").arg(&other_metadata).run().code(0).stderr_is("");
    assert_eq!(read(&other), "other\n");
    assert!(names_in(&shared).contains(&temp), "the live writer's {temp} was removed: {:?}", names_in(&shared));

    release.send(()).unwrap();
    let out = writer.wait_with_output().unwrap();
    let shown = format!(
        "exit {:?}\nstdout: {}\nstderr: {}\nlog: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        sandbox.log("cfn-init.log")
    );
    assert!(out.status.success(), "the writer failed\n{shown}");
    assert!(std::fs::read(&target).unwrap() == body, "{} is not the download\n{shown}", target.display());
    assert!(!names_in(&shared).iter().any(|name| name.ends_with(".cfn-tmp")), "{:?}", names_in(&shared));
}
