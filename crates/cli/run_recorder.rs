//! Keeps cfn-init's run record ([`cfn_configsets::run_record`]) as the run goes. It listens to
//! the `tracing` events the run emits anyway: the engine's progress events (a config or
//! a section starts, a config ends: `cfn_configsets::progress`), the command log's
//! lines (the output of the command that failed) and ERROR lines (what a run that
//! failed before its build said). So the record adds no log line and the engine knows
//! nothing of it.

use cfn_configsets::progress;
use cfn_configsets::run_record::{self, ConfigRun, Failure, Outcome, RunRecord, SectionRun, Source};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// How long after the record was last written a config's start writes it again. Each
/// write is a file created and renamed: a run of quick configs writes its record twice,
/// when it starts and when it ends, while a long one also records
/// where it is, which says where a run killed by a reboot or SIGKILL stopped.
const SAVE_PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The record of this run, once it has started.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Option<Active>>>);

struct Active {
    dir: PathBuf,
    record: RunRecord,
    started: Instant,
    config_started: Instant,
    section_started: Instant,
    last_saved: Instant,
    /// The output of the command running or last run in the current section.
    output_tail: VecDeque<String>,
    /// The last ERROR line of the main log.
    last_error: Option<String>,
}

impl Active {
    fn save(&mut self) {
        self.last_saved = Instant::now();
        if let Err(e) = run_record::write(&self.dir, &self.record) {
            // Not an error of the run: DEBUG detail, so the log of a run with a full
            // disk reads as it always did.
            tracing::debug!("Could not write the run record in {}: {e}", self.dir.display());
        }
    }

    fn current_config(&mut self) -> Option<&mut ConfigRun> {
        self.record.configs.last_mut().filter(|c| c.outcome == Outcome::Running)
    }

    /// Ends the section running in the current config, if any.
    fn end_section(&mut self, outcome: Outcome) {
        let seconds = seconds_since(self.section_started);
        if let Some(section) =
            self.current_config().and_then(|c| c.sections.last_mut()).filter(|s| s.outcome == Outcome::Running)
        {
            section.outcome = outcome;
            section.seconds = Some(seconds);
        }
    }

    fn on_progress(&mut self, fields: &Fields) {
        let now = Instant::now();
        match fields.kind.as_deref() {
            Some(progress::CONFIG_STARTED) => {
                self.record.configs.push(ConfigRun {
                    configset: fields.set.clone().unwrap_or_default(),
                    config: fields.config.clone().unwrap_or_default(),
                    outcome: Outcome::Running,
                    seconds: None,
                    sections: Vec::new(),
                });
                self.config_started = now;
                self.output_tail.clear();
                if self.last_saved.elapsed() >= SAVE_PROGRESS_AFTER {
                    self.save();
                }
            }
            Some(progress::SECTION_STARTED) => {
                self.end_section(Outcome::Ok);
                self.section_started = now;
                self.output_tail.clear();
                if let (true, Some(section), Some(config)) = (fields.present, &fields.section, self.current_config()) {
                    config.sections.push(SectionRun {
                        section: section.clone(),
                        outcome: Outcome::Running,
                        seconds: None,
                    });
                }
            }
            Some(progress::CONFIG_ENDED) => {
                let outcome = if fields.ok { Outcome::Ok } else { Outcome::Failed };
                self.end_section(outcome);
                let seconds = seconds_since(self.config_started);
                if let Some(config) = self.current_config() {
                    config.outcome = outcome;
                    config.seconds = Some(seconds);
                }
            }
            _ => {}
        }
    }

    fn on_command_log(&mut self, message: &str) {
        // Each command's run in the command log starts with a line of `=`.
        if message.len() == 60 && message.bytes().all(|b| b == b'=') {
            self.output_tail.clear();
        } else if let Some(line) = message.strip_prefix('\t') {
            if self.output_tail.len() == run_record::OUTPUT_TAIL_LINES {
                self.output_tail.pop_front();
            }
            // The same redaction as the logs' (SEC-02), before the line is cut: a URL cut
            // short could hide the password it still shows.
            let redacted = cfn_aws::http::redact_urls_in(line);
            self.output_tail.push_back(redacted.chars().take(run_record::OUTPUT_LINE_CHARS).collect());
        }
    }

    /// Where the run failed: the config that failed and its failed section.
    fn failure(&self, error: String) -> Failure {
        let config = self.record.configs.last().filter(|c| c.outcome == Outcome::Failed);
        Failure {
            configset: config.map(|c| c.configset.clone()),
            config: config.map(|c| c.config.clone()),
            section: config
                .and_then(|c| c.sections.last())
                .filter(|s| s.outcome == Outcome::Failed)
                .map(|s| s.section.clone()),
            error: cfn_aws::http::redact_urls_in(&error),
            output_tail: self.output_tail.iter().cloned().collect(),
        }
    }
}

fn seconds_since(start: Instant) -> f64 {
    // Milliseconds are what a reader compares.
    (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0
}

impl Recorder {
    fn lock(&self) -> MutexGuard<'_, Option<Active>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The layer that feeds the record from the run's events.
    pub fn layer(&self) -> RecorderLayer {
        RecorderLayer(self.clone())
    }

    /// The run starts: its record is written (running), older ones beyond the history
    /// removed.
    pub fn start(&self, source: Source, configsets: Vec<String>) {
        let record = RunRecord::starting(source, configsets);
        let now = Instant::now();
        let mut active = Active {
            dir: run_record::runs_dir(),
            record,
            started: now,
            config_started: now,
            section_started: now,
            last_saved: now,
            output_tail: VecDeque::new(),
            last_error: None,
        };
        active.save();
        run_record::prune(&active.dir, run_record::HISTORY);
        *self.lock() = Some(active);
    }

    /// The build failed with `message` (the text after `Error occurred during build: `).
    pub fn build_failed(&self, message: &str) {
        if let Some(active) = self.lock().as_mut() {
            active.record.failure = Some(active.failure(message.to_string()));
        }
    }

    /// The run ends with `exit_code`; its record is written a last time.
    pub fn finish(&self, exit_code: i32) {
        let mut guard = self.lock();
        let Some(active) = guard.as_mut() else { return };
        if exit_code != 0 && active.record.failure.is_none() {
            let error = active.last_error.clone().unwrap_or_else(|| format!("cfn-init exited with {exit_code}"));
            active.record.failure = Some(active.failure(error));
        }
        let record = &mut active.record;
        record.outcome = if exit_code == 0 { Outcome::Ok } else { Outcome::Failed };
        record.exit_code = Some(exit_code);
        record.ended = Some(run_record::timestamp(chrono::Utc::now()));
        record.seconds = Some(seconds_since(active.started));
        active.save();
    }
}

pub struct RecorderLayer(Recorder);

impl<S: Subscriber> Layer<S> for RecorderLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let target = meta.target();
        let interesting =
            target == progress::TARGET || target == crate::logging::CMD_TARGET || *meta.level() == Level::ERROR;
        if !interesting {
            return;
        }
        let mut guard = self.0.lock();
        let Some(active) = guard.as_mut() else { return };
        let mut fields = Fields::default();
        event.record(&mut fields);
        match target {
            progress::TARGET => active.on_progress(&fields),
            crate::logging::CMD_TARGET => active.on_command_log(&fields.message),
            _ => active.last_error = Some(fields.message),
        }
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    kind: Option<String>,
    set: Option<String>,
    config: Option<String>,
    section: Option<String>,
    present: bool,
    ok: bool,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "message" => {
                self.message = value.to_string();
                return;
            }
            "kind" => &mut self.kind,
            "set" => &mut self.set,
            "config" => &mut self.config,
            "section" => &mut self.section,
            _ => return,
        };
        *slot = Some(value.to_string());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        match field.name() {
            "present" => self.present = value,
            "ok" => self.ok = value,
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}
