//! `cfn-hup` (SPEC §14): watches stack resources and runs hook actions when they change,
//! and, when command hooks (`triggers=on.command`) exist, listens for CloudFormation
//! commands on its SQS queue and runs their hooks (SPEC §14.7).
//!
//! Three ways to run:
//! * `--no-daemon`: one pass over the update hooks and one receive round of the command
//!   listener, then exit (HUP-RUN-01);
//! * default: a classic daemon (double fork, pid file), for SysV init scripts (HUP-RUN-02);
//! * `-F`/`--foreground`: the same service without detaching, for systemd `Type=simple`
//!   (HUP-RUN-05).
//!
//! In the service modes the command listener runs on a thread of its own, so update
//! hooks keep their cadence.
//!
//! `CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS` replaces the interval (minutes in the
//! configuration) by a number of seconds, and `CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS`
//! the listener's 20 s long poll (0–20). They are test aids only; production never sets them.

use crate::optparse::{Opt, Parser};
use crate::{logging, report};
use cfn_hooks::daemon::{self, Forked, PidFile, Schedule, Signals, Wake};
use cfn_hooks::listener::{self, Listener, ListenerOptions};
use cfn_hooks::listener_thread::ListenerThread;
use cfn_hooks::service::Service;
use cfn_hooks::{Health, HupConfig, MetadataDb, PassOptions, PassReport, config, run_pass};
use cfn_metadata::credentials::CredentialError;
use cfn_metadata::retry::Policy;
use cfn_metadata::{Imds, paths};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const INTERVAL_OVERRIDE: &str = "CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS";
pub const RECEIVE_WAIT_OVERRIDE: &str = "CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS";
/// How long SIGTERM waits for the command listener to finish its round.
const LISTENER_GRACE: Duration = Duration::from_secs(1);
const ALIVE_EVERY: Duration = Duration::from_secs(300);

pub fn parser(prog: &str) -> Parser {
    Parser {
        prog: prog.to_string(),
        usage: "%prog [options]",
        options: vec![
            Opt::value(
                Some('c'),
                "config",
                "config_path",
                "CONFIG_PATH",
                "The configuration directory (default: /etc/cfn)",
            ),
            Opt::flag(None, "no-daemon", "no_daemon", "Do not daemonize"),
            Opt::flag(
                Some('F'),
                "foreground",
                "foreground",
                "Run as a service without detaching (for systemd Type=simple)",
            ),
            Opt::flag(Some('v'), "verbose", "verbose", "Enables verbose logging"),
        ],
        groups: vec![],
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Once,
    Foreground,
    Daemon,
}

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let parser = parser(prog);
    let parsed = match report::parse(&parser, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let mode = match (parsed.flag("no_daemon"), parsed.flag("foreground")) {
        (true, true) => return report::usage_failure(&parser, "--no-daemon and --foreground cannot be used together"),
        (true, false) => Mode::Once,
        (false, true) => Mode::Foreground,
        (false, false) => Mode::Daemon,
    };
    let dir = parsed.text("config_path").map(PathBuf::from).unwrap_or_else(paths::etc_dir);
    let verbose = parsed.flag("verbose");
    // As in the reference: DEBUG while the configuration is read, then INFO or DEBUG.
    logging::init("cfn-hup.log", tracing::Level::DEBUG);
    let config = match config::load(&dir) {
        Ok(config) => config,
        Err(e) => return report::failure(format!("Error: {e}")),
    };
    logging::set_level(report::level(verbose || config.main.verbose));
    let imds = Arc::new(Imds::from_env());
    // The listener id is settled with the configuration, before any pass (SPEC §14.7).
    let listener_id = if config.command_hooks.is_empty() {
        None
    } else {
        match listener::listener_id(&config.main, &imds) {
            Ok(id) => Some(id),
            Err(e) => return report::failure(format!("Error: {e}")),
        }
    };
    match mode {
        Mode::Once => once(&config, imds, listener_id),
        _ => serve(config, imds, mode, verbose, listener_id),
    }
}

/// The listener's options: the long poll (shortened only by the test aid) and the SQS retries.
fn listener_options(sqs_retry: Policy) -> ListenerOptions {
    let wait = std::env::var(RECEIVE_WAIT_OVERRIDE)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map_or(listener::RECEIVE_WAIT_SECONDS, |w| w.min(listener::RECEIVE_WAIT_SECONDS));
    ListenerOptions { receive_wait_seconds: wait, sqs_retry }
}

fn credential_failure(e: &CredentialError) -> ExitCode {
    match e {
        CredentialError::File(reason) => {
            report::failure(format!("Error: Could not retrieve credentials from file:\n\t{reason}"))
        }
        other => report::failure(format!("Error: {other}")),
    }
}

/// `--no-daemon`: one pass with the reference's retries and error lines, then one round
/// of the command listener; exit 0.
fn once(config: &HupConfig, imds: Arc<Imds>, listener_id: Option<String>) -> ExitCode {
    let service = match Service::new(&config.main, imds) {
        Ok(service) => service,
        Err(e) => return credential_failure(&e),
    };
    let client = match service.client() {
        Ok(client) => client,
        Err(e) => return credential_failure(&e),
    };
    let mut db = MetadataDb::load(&MetadataDb::default_path());
    run_pass(
        &config.main.stack,
        &config.hooks,
        &client,
        &mut db,
        &PassOptions { quiet_outages: false, stop: &|| false },
    );
    if let Some(id) = listener_id {
        let mut listener = Listener::new(&config.main, id, service, listener_options(Policy::SQS_SEND));
        if let Err(e) = listener.round(&config.command_hooks) {
            return report::failure(format!("Error: {e}"));
        }
    }
    ExitCode::SUCCESS
}

/// Sleeps like `std::thread::sleep`, but returns early once SIGTERM has arrived.
fn interruptible_sleep(duration: Duration) {
    let deadline = Instant::now() + duration;
    while !daemon::terminate_pending() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Within a daemon pass: three tries (the next pass is a retry too), throttling
/// included — a throttled pass makes the schedule leave out polls instead; sleeps end
/// early on SIGTERM.
const DAEMON_RETRY: Policy = Policy { max_tries: 3, throttled_budget: Duration::ZERO, sleep: interruptible_sleep };
/// The listener's SQS retries in the service: SendMessage's 25 tries, with sleeps that
/// end early on SIGTERM.
const DAEMON_SQS_RETRY: Policy = Policy { sleep: interruptible_sleep, ..Policy::SQS_SEND };

/// Longest interval honoured (a year); the shortest test interval is 50 ms.
const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);
const MIN_TEST_INTERVAL: Duration = Duration::from_millis(50);

fn interval(config: &HupConfig) -> Result<Duration, config::ConfigError> {
    let minutes = config.main.interval_minutes()?;
    if let Some(seconds) = std::env::var(INTERVAL_OVERRIDE).ok().and_then(|v| v.trim().parse::<f64>().ok())
        && let Ok(seconds) = Duration::try_from_secs_f64(seconds)
    {
        return Ok(seconds.clamp(MIN_TEST_INTERVAL, MAX_INTERVAL));
    }
    Ok(Duration::from_secs(minutes.saturating_mul(60)).min(MAX_INTERVAL))
}

fn serve(config: HupConfig, imds: Arc<Imds>, mode: Mode, verbose: bool, listener_id: Option<String>) -> ExitCode {
    let every = match interval(&config) {
        Ok(every) => every,
        Err(e) => return report::failure(format!("Error: {e}")),
    };
    let umask = match config.main.umask() {
        Ok(Some(umask)) => {
            tracing::info!("Setting umask value to: {umask:03o}");
            umask
        }
        Ok(None) => {
            tracing::info!("No umask value specified in config file. Using the default one: 022");
            config::DEFAULT_UMASK
        }
        Err(e) => return report::failure(format!("Error: {e}")),
    };
    let service = match Service::new(&config.main, imds.clone()) {
        Ok(service) => service.with_retry(DAEMON_RETRY),
        Err(e) => return credential_failure(&e),
    };
    // The listener's own client, made before detaching so that errors reach the caller;
    // its thread starts only once the service runs.
    let listener = match listener_id {
        None => None,
        Some(id) => match Service::new(&config.main, imds.clone()) {
            Ok(s) => {
                Some(Listener::new(&config.main, id, s.with_retry(DAEMON_RETRY), listener_options(DAEMON_SQS_RETRY)))
            }
            Err(e) => return credential_failure(&e),
        },
    };
    let pid_path = daemon::default_pid_path();
    let (pid_file, signals) = match mode {
        Mode::Daemon => match daemon::daemonize(umask) {
            Err(e) => return report::failure(format!("Error: {e}")),
            Ok(Forked::Parent(Ok(_))) => return ExitCode::SUCCESS,
            Ok(Forked::Parent(Err(e))) => {
                eprintln!("Error: {e}");
                return ExitCode::FAILURE;
            }
            Ok(Forked::Daemon(startup)) => match PidFile::acquire(&pid_path).and_then(|p| Ok((p, Signals::install()?)))
            {
                Ok(held) => {
                    startup.ready();
                    held
                }
                Err(e) => {
                    tracing::error!("Error: {e}");
                    startup.failed(&e.to_string());
                    return ExitCode::FAILURE;
                }
            },
        },
        _ => {
            daemon::set_umask(umask);
            match PidFile::acquire(&pid_path).and_then(|p| Ok((p, Signals::install()?))) {
                Ok(held) => held,
                Err(e) => return report::failure(format!("Error: {e}")),
            }
        }
    };
    let listener =
        listener.and_then(|l| ListenerThread::spawn(l, config.command_hooks.clone(), daemon::terminate_pending));
    let mut running = Running { config, service, imds, every, verbose, signals, listener };
    running.run();
    tracing::info!("Shutting down cfn-hup");
    if let Some(listener) = running.listener.take() {
        listener.stop(LISTENER_GRACE);
    }
    drop(pid_file);
    ExitCode::SUCCESS
}

struct Running {
    config: HupConfig,
    service: Service,
    imds: Arc<Imds>,
    every: Duration,
    verbose: bool,
    signals: Signals,
    listener: Option<ListenerThread>,
}

fn same_kind(a: &Health, b: &Health) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

impl Running {
    fn run(&mut self) {
        // Failed attempts inside a pass go to DEBUG: outages are reported once per change.
        logging::demote("cfn_metadata::retry");
        tracing::info!(
            "cfn-hup started (pid {}): {} hook(s) on stack {}, checked every {:?}",
            std::process::id(),
            self.config.hooks.len(),
            self.config.main.stack,
            self.every
        );
        let mut db = MetadataDb::load(&MetadataDb::default_path());
        let mut health = Health::Ok;
        let mut throttled_passes = 0u32;
        let mut last_alive: Option<Instant> = None;
        'passes: loop {
            let started = Instant::now();
            let mut schedule = Schedule::new(self.every, started);
            loop {
                if last_alive.is_none_or(|t| t.elapsed() >= ALIVE_EVERY) {
                    tracing::info!("cfn-hup processing is alive.");
                    last_alive = Some(Instant::now());
                }
                let report = self.pass(&mut db);
                let now_health = report.health();
                if !same_kind(&now_health, &health) {
                    match &now_health {
                        Health::Ok => tracing::info!("CloudFormation answers again; polling as usual"),
                        Health::Unavailable(why) => tracing::error!(
                            "CloudFormation is not available: {why}; cfn-hup keeps polling and logs again when this changes"
                        ),
                        Health::Throttled(why) => tracing::warn!(
                            "CloudFormation is throttling requests: {why}; polling less often until it stops"
                        ),
                    }
                }
                throttled_passes =
                    if matches!(now_health, Health::Throttled(_)) { throttled_passes.saturating_add(1) } else { 0 };
                health = now_health;
                if self.signals.terminate_requested() {
                    return;
                }
                let wait = schedule.next_wait(Instant::now(), throttled_passes);
                tracing::debug!("Next pass in {:.3} s", wait.as_secs_f64());
                let deadline = Instant::now() + wait;
                loop {
                    match self.signals.wait(deadline.saturating_duration_since(Instant::now())) {
                        Wake::Terminate => return,
                        Wake::Timeout => break,
                        Wake::Reload => {
                            if self.reload() {
                                // A reloaded configuration gets a pass at once, and a new cadence.
                                continue 'passes;
                            }
                        }
                    }
                }
            }
        }
    }

    fn pass(&self, db: &mut MetadataDb) -> PassReport {
        match self.service.client() {
            Ok(client) => {
                let stop = || self.signals.terminate_requested();
                run_pass(
                    &self.config.main.stack,
                    &self.config.hooks,
                    &client,
                    db,
                    &PassOptions { quiet_outages: true, stop: &stop },
                )
            }
            Err(e) => PassReport { trouble: Some(Health::Unavailable(e.to_string())), ..Default::default() },
        }
    }

    /// Hands the reloaded command hooks to the running listener, or replaces it (`new`
    /// listener), or stops it when no command hook is left. A replaced listener is not
    /// waited for: it ends after its current long poll.
    fn replace_listener(&mut self, new: Option<Listener>, config: &HupConfig) {
        match (new, self.listener.take()) {
            (Some(listener), old) => {
                if let Some(old) = old {
                    old.stop(Duration::ZERO);
                }
                self.listener =
                    ListenerThread::spawn(listener, config.command_hooks.clone(), daemon::terminate_pending);
            }
            (None, Some(old)) if config.command_hooks.is_empty() => old.stop(Duration::ZERO),
            (None, Some(old)) => {
                old.set_hooks(config.command_hooks.clone());
                self.listener = Some(old);
            }
            (None, None) => {}
        }
    }

    /// SIGHUP (HUP-RUN-06): read the configuration directory again; a configuration that
    /// does not load leaves the running one in place.
    fn reload(&mut self) -> bool {
        let dir: &Path = &self.config.dir;
        tracing::info!("Received SIGHUP: reloading the configuration from {}", dir.display());
        let outcome = config::load(dir).map_err(|e| e.to_string()).and_then(|new| {
            let every = interval(&new).map_err(|e| e.to_string())?;
            let umask = new.main.umask().map_err(|e| e.to_string())?;
            let service = if new.main == self.config.main {
                None
            } else {
                Some(Service::new(&new.main, self.imds.clone()).map_err(|e| e.to_string())?.with_retry(DAEMON_RETRY))
            };
            // A new listener when command hooks appear or [main] changed (stack, keys).
            let listener = if new.command_hooks.is_empty() || (new.main == self.config.main && self.listener.is_some())
            {
                None
            } else {
                let id = listener::listener_id(&new.main, &self.imds).map_err(|e| e.to_string())?;
                let service = Service::new(&new.main, self.imds.clone()).map_err(|e| e.to_string())?;
                Some(Listener::new(&new.main, id, service.with_retry(DAEMON_RETRY), listener_options(DAEMON_SQS_RETRY)))
            };
            Ok((new, every, umask, service, listener))
        });
        match outcome {
            Ok((new, every, umask, service, listener)) => {
                if let Some(service) = service {
                    self.service = service;
                }
                self.replace_listener(listener, &new);
                daemon::set_umask(umask.unwrap_or(config::DEFAULT_UMASK));
                logging::set_level(report::level(self.verbose || new.main.verbose));
                tracing::info!("Configuration reloaded: {} hook(s) on stack {}", new.hooks.len(), new.main.stack);
                self.config = new;
                self.every = every;
                true
            }
            Err(e) => {
                tracing::error!("Could not reload the configuration: Error: {e}; keeping the previous one");
                false
            }
        }
    }
}
