//! `cfn-hup` (SPEC §14): watches stack resources and runs hook actions when they change,
//! and, when command hooks (`triggers=on.command`) exist, listens for CloudFormation
//! commands on its SQS queue and runs their hooks (SPEC §14.7).
//!
//! Three ways to run:
//! * `--no-daemon`: one pass over the update hooks and one receive round of the command
//!   listener, then exit (HUP-RUN-01);
//! * default: a classic daemon (double fork, pid file), for SysV init scripts (HUP-RUN-02);
//! * `-F`/`--foreground`: the same service without detaching, for systemd `Type=notify`
//!   (HUP-RUN-05; it tells systemd when it is ready: `cfn_hooks::readiness`).
//!
//! The service itself (passes, the command listener, signals) is
//! `cfn_hooks::service_loop`: tasks on the process's one current-thread runtime, which
//! the daemon builds only after it has forked.
//!
//! `CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS` replaces the interval (minutes in the
//! configuration) by a number of seconds, `CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS`
//! the listener's 20 s long poll (0–20), and `CFN_BOOTSTRAP_HUP_ATTEMPT_TIMEOUT_SECONDS`
//! the 60 s bound on each attempt of the service's AWS calls (a time-compressed soak
//! meets timeouts too), and `CFN_BOOTSTRAP_HUP_HEARTBEAT_FLOOR_SECONDS` the 30 s that
//! lifecycle heartbeats are at least apart (at least 1 s; a drain longer than a
//! few-second heartbeat timeout). They are test aids only; production never sets them.

use crate::{logging, report};
use cfn_aws::Imds;
use cfn_aws::credentials::CredentialError;
use cfn_hooks::daemon::{self, Forked};
use cfn_hooks::listener;
use cfn_hooks::service_loop::{self, ServiceError, Settings};
use cfn_hooks::{HupConfig, config};
use cfn_host::paths;
pub use cfn_optparse::tables::hup as parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub const INTERVAL_OVERRIDE: &str = "CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS";
pub const RECEIVE_WAIT_OVERRIDE: &str = "CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS";
pub const ATTEMPT_TIMEOUT_OVERRIDE: &str = "CFN_BOOTSTRAP_HUP_ATTEMPT_TIMEOUT_SECONDS";
pub const HEARTBEAT_FLOOR_OVERRIDE: &str = "CFN_BOOTSTRAP_HUP_HEARTBEAT_FLOOR_SECONDS";

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
    // As in the reference: DEBUG while the configuration is read and the client and the
    // state file are made (their DEBUG lines are in every cfn-hup.log), then INFO or DEBUG.
    logging::init("cfn-hup.log", tracing::Level::DEBUG);
    let config = match config::load(&dir) {
        Ok(config) => config,
        Err(e) => {
            if matches!(e, config::ConfigError::Path(_)) {
                // The reference made its client and state file before it met the path,
                // and logged them first (issue 33); the path is refused before any hook
                // runs here (HUP-CONF-03).
                if let Ok(main) = config::load_main(&dir) {
                    cfn_aws::log_client_endpoint(&main.region, main.url.as_deref());
                }
                service_loop::create_state_file();
            }
            return report::failure(format!("Error: {e}"));
        }
    };
    let level = report::level(verbose || config.main.verbose);
    let configured = move || logging::set_level(level);
    let imds = Arc::new(Imds::from_env());
    let settings = settings();
    match mode {
        Mode::Once => match service_loop::once(&config, imds, &settings, configured) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => report::failure(message(&e)),
        },
        _ => serve(config, imds, settings, mode, verbose, configured),
    }
}

/// The test aids, read from the environment.
fn settings() -> Settings {
    let receive_wait_seconds = std::env::var(RECEIVE_WAIT_OVERRIDE)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(listener::RECEIVE_WAIT_SECONDS);
    Settings {
        interval_override: seconds(INTERVAL_OVERRIDE),
        receive_wait_seconds,
        // Not below 100 ms: no attempt could succeed, however near the service.
        attempt_timeout: seconds(ATTEMPT_TIMEOUT_OVERRIDE).map(|limit| limit.max(Duration::from_millis(100))),
        // Not below a second: heartbeats must never become a flood.
        heartbeat_floor: seconds(HEARTBEAT_FLOOR_OVERRIDE).map(|floor| floor.max(Duration::from_secs(1))),
    }
}

/// A duration in (fractional) seconds from the environment variable `name`.
fn seconds(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
}

/// The message of an error that stops cfn-hup, as the reference words it.
fn message(error: &ServiceError) -> String {
    match error {
        ServiceError::Credentials(CredentialError::File(reason)) => {
            format!("Error: Could not retrieve credentials from file:\n\t{reason}")
        }
        other => format!("Error: {other}"),
    }
}

fn serve(
    config: HupConfig,
    imds: Arc<Imds>,
    settings: Settings,
    mode: Mode,
    verbose: bool,
    configured: impl FnOnce(),
) -> ExitCode {
    // The configuration is checked before detaching (SPEC §14.6); what needs the network
    // (credentials, the listener id) is resolved by the daemon, which reports it.
    let checked = service_loop::interval(&config, &settings)
        .and_then(|_| service_loop::max_backoff(&config))
        .and_then(|_| config.main.lifecycle_interval());
    if let Err(e) = checked {
        return report::failure(format!("Error: {e}"));
    }
    let umask = match service_loop::umask(&config) {
        Ok(umask) => umask,
        Err(e) => return report::failure(format!("Error: {e}")),
    };
    let pid_path = daemon::default_pid_path();
    let start =
        || service_loop::prepare(config, imds, settings, configured).and_then(|p| service_loop::start(p, &pid_path));
    let started = match mode {
        Mode::Daemon => match daemon::daemonize(umask) {
            Err(e) => return report::failure(format!("Error: {e}")),
            Ok(Forked::Parent(Ok(_))) => return ExitCode::SUCCESS,
            Ok(Forked::Parent(Err(e))) => {
                eprintln!("Error: {e}");
                return ExitCode::FAILURE;
            }
            Ok(Forked::Daemon(startup)) => match start() {
                Ok(started) => {
                    startup.ready();
                    started
                }
                Err(e) => {
                    let message = message(&e);
                    tracing::error!("{message}");
                    startup.failed(message.strip_prefix("Error: ").unwrap_or(&message));
                    return ExitCode::FAILURE;
                }
            },
        },
        _ => {
            daemon::set_umask(umask);
            match start() {
                Ok(started) => started,
                Err(e) => return report::failure(message(&e)),
            }
        }
    };
    // Failed attempts inside a pass go to DEBUG: outages are reported once per change.
    logging::demote("cfn_aws::retry");
    started.run(Box::new(move |main| logging::set_level(report::level(verbose || main.verbose))));
    ExitCode::SUCCESS
}
