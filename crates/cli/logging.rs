//! The reference's log files (LOG-01..04, LOG-07, LOG-08), written from `tracing` events.
//!
//! * the main log (`cfn-init.log`, shared by every tool but cfn-hup, or `cfn-hup.log`):
//!   `YYYY-MM-DD HH:MM:SS,mmm [LEVEL] message`, local time, at INFO or DEBUG;
//! * `cfn-init-cmd.log` (events with target `cfn_cmd`): `… P<pid> [LEVEL] message`;
//! * `cfn-wire.log` (events with target `cfn_wire`): HTTP response summaries.
//!
//! Files are appended to, rotated at 5 MiB keeping 5 backups, and never group- or
//! world-writable. A new log file is created 0600 (the reference's were 0644): URLs,
//! command output and secrets end up in logs. An existing one keeps its mode, and a
//! rotated one passes its mode on, so a log an administrator opened up stays open.
//! Every line has the URLs in it redacted (`http::redact_urls_in`), whoever wrote it:
//! cfn-init's own messages, a package tool's or a command's output (SEC-02, LOG-08).
//! If the main log cannot be opened the tool says so on stderr and logs there instead;
//! the command and wire logs are then dropped, as in the reference.
//! When stderr is systemd's journal (a service's output, `JOURNAL_STREAM` naming the
//! stderr stream) the main log's lines go to the journal too, so `journalctl -u cfn-hup`
//! shows them; a tool whose stderr is anything else (a pipe, a terminal) never writes
//! them there, even when it inherited `JOURNAL_STREAM`.

use cfn_aws::http;
use cfn_host::paths;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

pub const MAX_BYTES: u64 = 5 * 1024 * 1024;
pub const BACKUPS: u32 = 5;

pub const CMD_TARGET: &str = "cfn_cmd";
pub const WIRE_TARGET: &str = "cfn_wire";

/// The AWS SDK's own events (`aws_smithy_runtime`, `aws_sdk_*`, …: interceptors, phases,
/// retry checkpoints, endpoint rules, some sixty lines per call) describe its
/// orchestration, not what the tools do: their callsites are switched off so that they
/// cost nothing. aws-config's credential providers are the exception: what they say
/// ("failed to load base credentials", …) is kept as DEBUG detail under our own error
/// line, which already names the credential source and the reason.
fn is_sdk_target(target: &str) -> bool {
    target.starts_with("aws_") && !is_credential_provider(target)
}

fn is_credential_provider(target: &str) -> bool {
    target.starts_with("aws_config")
}

/// The HTTP stack's own events ("connecting to …"): wire detail, which the reference
/// never writes to its main log, so they go to the wire log.
fn is_transport_target(target: &str) -> bool {
    target.starts_with("hyper")
}

/// Events no log keeps, switched off at their callsites: the SDK's (above), and the
/// HTTP stack's TRACE events, its internals in Rust's `Debug` notation
/// (`Http::connect; scheme=Some("http"), …`), which a log people read must not show.
fn is_ignored(meta: &tracing::Metadata<'_>) -> bool {
    is_sdk_target(meta.target()) || (is_transport_target(meta.target()) && *meta.level() == Level::TRACE)
}

/// A log file rotated like Python's `RotatingFileHandler(maxBytes=5 MiB, backupCount=5)`.
pub struct RotatingFile {
    path: PathBuf,
    file: File,
    size: u64,
}

impl RotatingFile {
    pub fn open(path: &Path) -> std::io::Result<RotatingFile> {
        let file = OpenOptions::new().append(true).create(true).mode(0o600).open(path)?;
        // LOG-08: whatever the umask or an older file said, no group/other write.
        let meta = file.metadata()?;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o022 != 0 {
            let _ = file.set_permissions(std::fs::Permissions::from_mode(mode & !0o022));
        }
        Ok(RotatingFile { path: path.to_path_buf(), file, size: meta.len() })
    }

    pub fn write_line(&mut self, line: &str) {
        let bytes = line.as_bytes();
        if self.size > 0 && self.size + bytes.len() as u64 >= MAX_BYTES {
            self.rotate();
        }
        if self.file.write_all(bytes).is_ok() {
            self.size += bytes.len() as u64;
        }
    }

    fn rotate(&mut self) {
        let mode = self.file.metadata().map(|m| m.permissions().mode() & 0o7777);
        let numbered = |n: u32| PathBuf::from(format!("{}.{n}", self.path.display()));
        for n in (1..BACKUPS).rev() {
            if numbered(n).exists() {
                let _ = std::fs::rename(numbered(n), numbered(n + 1));
            }
        }
        let _ = std::fs::rename(&self.path, numbered(1));
        if let Ok(reopened) = RotatingFile::open(&self.path) {
            // The new file is the same log: it keeps the mode the old one had.
            if let Ok(mode) = mode {
                let _ = reopened.file.set_permissions(std::fs::Permissions::from_mode(mode & !0o022));
            }
            *self = reopened;
        }
    }
}

enum MainSink {
    File(RotatingFile),
    /// The file, and each line to stderr (the journal).
    FileAndJournal(RotatingFile),
    Stderr,
}

/// Where a formatted line goes.
trait WriteLine {
    fn write_line(&mut self, line: &str);
}

impl WriteLine for RotatingFile {
    fn write_line(&mut self, line: &str) {
        RotatingFile::write_line(self, line);
    }
}

impl WriteLine for MainSink {
    fn write_line(&mut self, line: &str) {
        match self {
            MainSink::File(file) => file.write_line(line),
            MainSink::FileAndJournal(file) => {
                file.write_line(line);
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
            MainSink::Stderr => {
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
        }
    }
}

/// A log and the buffer its lines are formatted in. The buffer is reused, so an event
/// costs no allocation (musl's allocator would map and unmap a page for each one).
struct Sink<W> {
    out: W,
    line: String,
}

impl<W: WriteLine> Sink<W> {
    fn new(out: W) -> Mutex<Sink<W>> {
        Mutex::new(Sink { out, line: String::with_capacity(256) })
    }
}

/// Formats `event` as `<time>[ P<pid>] [LEVEL] message` and writes it to `sink`.
fn emit<W: WriteLine>(sink: &Mutex<Sink<W>>, with_pid: bool, level: &Level, event: &Event<'_>) {
    use std::fmt::Write as _;
    let mut guard = sink.lock().unwrap_or_else(|e| e.into_inner());
    let Sink { out, line } = &mut *guard;
    line.clear();
    write_timestamp(line);
    if with_pid {
        let _ = write!(line, " P{}", std::process::id());
    }
    let _ = write!(line, " [{}] ", level_name(level));
    event.record(&mut Message(line));
    // Only a line with a URL in it costs a second pass and an allocation.
    if line.contains("://") {
        let redacted = http::redact_urls_in(line);
        if redacted != *line {
            line.clear();
            line.push_str(&redacted);
        }
    }
    line.push('\n');
    out.write_line(line);
    // One very long line (a command's output without line ends) does not keep its
    // buffer for the rest of the run.
    if line.capacity() > 64 * 1024 {
        *line = String::with_capacity(256);
    }
}

pub struct FileLayer {
    level: Level,
    main: Mutex<Sink<MainSink>>,
    cmd: Option<Mutex<Sink<RotatingFile>>>,
    wire: Option<Mutex<Sink<RotatingFile>>>,
}

/// The main log's level as changed after start-up (`set_level`); 0 = as `init` said.
static LEVEL_OVERRIDE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
/// Targets whose events go to the main log at DEBUG whatever their level (`demote`).
static DEMOTED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn level_code(level: Level) -> u8 {
    match level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        _ => 5,
    }
}

fn code_level(code: u8) -> Option<Level> {
    Some(match code {
        1 => Level::ERROR,
        2 => Level::WARN,
        3 => Level::INFO,
        4 => Level::DEBUG,
        5 => Level::TRACE,
        _ => return None,
    })
}

/// Changes the main log's level after `init` (cfn-hup: DEBUG while reading its
/// configuration, then INFO or DEBUG; a reload may change it again).
pub fn set_level(level: Level) {
    LEVEL_OVERRIDE.store(level_code(level), std::sync::atomic::Ordering::Relaxed);
}

/// Writes the events of targets starting with `prefix` at DEBUG (cfn-hup's daemon
/// reports service outages once per change instead of every failed attempt).
pub fn demote(prefix: &'static str) {
    DEMOTED.lock().unwrap_or_else(|e| e.into_inner()).push(prefix);
}

/// Opens the logs of a tool and installs them as the process's `tracing` subscriber.
/// `main_name` is `cfn-init.log` or `cfn-hup.log`.
pub fn init(main_name: &str, level: Level) {
    init_with(main_name, level, tracing_subscriber::layer::Identity::new());
}

/// [`init`], with `extra` also told every event (cfn-init's run record).
pub fn init_with<L>(main_name: &str, level: Level, extra: L)
where
    L: Layer<tracing_subscriber::layer::Layered<FileLayer, tracing_subscriber::Registry>> + Send + Sync + 'static,
{
    let dir = paths::log_dir();
    let main_path = dir.join(main_name);
    let (main, side_logs) = match RotatingFile::open(&main_path) {
        Ok(file) if stderr_is_journal() => (MainSink::FileAndJournal(file), true),
        Ok(file) => (MainSink::File(file), true),
        Err(_) => {
            eprintln!("Could not open {} for logging.  Using stderr instead.", main_path.display());
            (MainSink::Stderr, false)
        }
    };
    let side = |name: &str| side_logs.then(|| RotatingFile::open(&dir.join(name)).ok().map(Sink::new)).flatten();
    let layer = FileLayer { level, main: Sink::new(main), cmd: side("cfn-init-cmd.log"), wire: side("cfn-wire.log") };
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer).with(extra));
}

/// Whether stderr is the journal stream systemd connected (`JOURNAL_STREAM` is
/// `<device>:<inode>` of it, as systemd.exec(5) says to check).
fn stderr_is_journal() -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else { return false };
    // stat(2) of the descriptor, a socket included.
    let Ok(stderr) = std::fs::metadata("/proc/self/fd/2") else { return false };
    stream.to_str() == Some(&format!("{}:{}", stderr.dev(), stderr.ino()))
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARNING",
        Level::INFO => "INFO",
        _ => "DEBUG",
    }
}

/// Local time as Python's logging writes it: `YYYY-MM-DD HH:MM:SS,mmm`.
fn write_timestamp(line: &mut String) {
    use chrono::{Datelike, Timelike};
    use std::fmt::Write as _;
    let now = chrono::Local::now();
    let _ = write!(
        line,
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}",
        now.year(),
        now.month(),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        // A leap second's nanoseconds run past 1e9; Python never shows it.
        (now.nanosecond() / 1_000_000).min(999)
    );
}

/// Appends an event's `message` field to a line.
struct Message<'a>(&'a mut String);

impl Visit for Message<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            use std::fmt::Write as _;
            let _ = write!(self.0, "{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for FileLayer {
    fn register_callsite(&self, meta: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        if is_ignored(meta) { tracing::subscriber::Interest::never() } else { tracing::subscriber::Interest::always() }
    }

    fn enabled(&self, meta: &tracing::Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        !is_ignored(meta)
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        if is_ignored(meta) {
            return;
        }
        let demoted = is_credential_provider(meta.target()) || {
            let list = DEMOTED.lock().unwrap_or_else(|e| e.into_inner());
            !list.is_empty() && list.iter().any(|p| meta.target().starts_with(p))
        };
        let event_level = if demoted { Level::DEBUG } else { *meta.level() };
        let max_level = code_level(LEVEL_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed)).unwrap_or(self.level);
        // Nothing is formatted for an event that no log keeps.
        match meta.target() {
            CMD_TARGET => {
                if let Some(cmd) = &self.cmd {
                    emit(cmd, true, &event_level, event);
                }
            }
            // The engine's progress, for the run record only.
            cfn_configsets::progress::TARGET => {}
            target if target == WIRE_TARGET || is_transport_target(target) => {
                if let Some(wire) = &self.wire {
                    emit(wire, false, &event_level, event);
                }
            }
            _ if event_level <= max_level => emit(&self.main, false, &event_level, event),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_at_five_mebibytes_keeping_five_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let mut log = RotatingFile::open(&path).unwrap();
        let line = "x".repeat(1023) + "\n";
        // Enough for seven rotations.
        for _ in 0..(7 * 5 * 1024 + 10) {
            log.write_line(&line);
        }
        for n in 1..=5 {
            let backup = dir.path().join(format!("x.log.{n}"));
            let len = std::fs::metadata(&backup).unwrap().len();
            assert!(len < MAX_BYTES && len > MAX_BYTES - 2048, "backup {n} has {len} bytes");
        }
        assert!(!dir.path().join("x.log.6").exists());
        assert!(std::fs::metadata(&path).unwrap().len() < MAX_BYTES);
    }

    #[test]
    fn removes_group_and_other_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("y.log");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let mut log = RotatingFile::open(&path).unwrap();
        log.write_line("new\n");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\nnew\n");
    }

    #[test]
    fn new_logs_are_private_and_existing_ones_keep_their_mode_through_rotation() {
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh.log");
        RotatingFile::open(&fresh).unwrap().write_line("x\n");
        assert_eq!(mode(&fresh), 0o600);

        let shared = dir.path().join("shared.log");
        std::fs::write(&shared, "old\n").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut log = RotatingFile::open(&shared).unwrap();
        assert_eq!(mode(&shared), 0o644);
        let line = "x".repeat(1023) + "\n";
        for _ in 0..(5 * 1024 + 10) {
            log.write_line(&line);
        }
        assert!(dir.path().join("shared.log.1").exists());
        assert_eq!(mode(&shared), 0o644, "the file after rotation keeps the log's mode");

        let mut private = RotatingFile::open(&fresh).unwrap();
        for _ in 0..(5 * 1024 + 10) {
            private.write_line(&line);
        }
        assert!(dir.path().join("fresh.log.1").exists());
        assert_eq!(mode(&fresh), 0o600);
    }
}
