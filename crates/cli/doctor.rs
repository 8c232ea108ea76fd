//! `cfn-bootstrap doctor`: a read-only checklist of everything cfn-init, cfn-signal and
//! cfn-hup depend on on this host (the install, cfn-hup's configuration and service, the
//! credentials, the network, the clock, the API and cfn-init's last run), each check
//! with a stable id, a verdict, what it found and what to do.
//!
//! It writes nothing and runs no hook action or command. Each network probe has its own
//! short timeout, and the whole run stops probing at [`Context::deadline`], so it ends in
//! bounded time even when every endpoint hangs. Exit 0 all ok, 1 any check failed, 2 only
//! warnings.

mod api;
mod check;
mod clock;
mod credentials;
mod hup_config;
mod init;
mod install;
mod network;
mod probe;
mod service;
mod setup;

pub use check::{Check, Verdict};

use crate::options;
use cfn_aws::ApiOptions;
use clap::{Arg, ArgMatches, Command, ValueHint};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How long the whole run may take, probes included.
pub const RUN_BOUND: Duration = Duration::from_secs(20);
/// How long one network probe (a connect, a TLS handshake, one request) may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What the checks are given: the options as cfn-init and cfn-hup would have them.
pub struct Context {
    /// cfn-hup's configuration directory (`-c`, default `/etc/cfn`).
    pub conf_dir: PathBuf,
    /// `--stack`/`--resource`: a cfn-init set-up to check without cfn-hup.
    pub stack: Option<String>,
    pub resource: Option<String>,
    /// The options given on the command line (credentials, proxies, region, url), as
    /// cfn-init reads them; cfn-hup's own come from its configuration.
    pub api: ApiOptions,
    /// Whether `--region` was given (otherwise cfn-hup.conf's region, then the default).
    pub region_given: bool,
    /// Probes are not started after this instant.
    pub deadline: Instant,
    /// The DescribeStackResource answers of this run: one call per resource.
    pub described: api::Cache,
}

impl Context {
    /// The time a probe may take now: its own timeout, or what is left of the run.
    pub fn probe_timeout(&self) -> Option<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| left.min(PROBE_TIMEOUT))
    }
}

/// A group of checks, run in this order.
type Section = fn(&Context) -> Vec<Check>;

const SECTIONS: &[Section] = &[
    install::checks,
    hup_config::checks,
    service::checks,
    credentials::checks,
    network::checks,
    clock::checks,
    api::checks,
    init::checks,
];

pub fn command() -> Command {
    Command::new("doctor")
        .about("Check everything the tools depend on here, read-only, and say what to fix")
        .long_about(
            "Check, without changing anything, everything cfn-init, cfn-signal and cfn-hup depend on on\n\
             this host: the install, cfn-hup's configuration, hooks and service, the credentials, the\n\
             network and proxies, the clock, the CloudFormation API and cfn-init's last run. Each check\n\
             prints a stable id, a verdict (ok, warning, failed, skipped), what it found and what to do.\n\n\
             Exit status: 0 all ok, 1 a check failed, 2 only warnings (and a wrong command line).",
        )
        .arg(
            Arg::new("config")
                .short('c')
                .long("config")
                .value_name("CONFIG_DIR")
                .value_hint(ValueHint::DirPath)
                .help("cfn-hup's configuration directory (default: /etc/cfn)"),
        )
        .args(options::stack_args())
        .args(options::api_args())
        .arg(options::format_arg(&["text", "json"], "text, or json for tools"))
}

pub fn run(matches: &ArgMatches) -> ExitCode {
    let started = Instant::now();
    let text = |id: &str| matches.get_one::<String>(id).cloned();
    let context = Context {
        conf_dir: text("config").map_or_else(cfn_host::paths::etc_dir, PathBuf::from),
        stack: text("stack_name"),
        resource: text("logical_resource_id"),
        api: options::api_options_from(text),
        region_given: text("region").is_some(),
        deadline: started + RUN_BOUND,
        described: api::Cache::default(),
    };
    let checks: Vec<Check> = SECTIONS.iter().flat_map(|section| section(&context)).collect();
    let out = match matches.get_one::<String>("format").map(String::as_str) {
        Some("json") => format!(
            "{:#}\n",
            serde_json::json!({
                "checks": checks.iter().map(Check::to_json).collect::<Vec<_>>(),
                "exit": check::exit_code(&checks),
            })
        ),
        // What the checks found quotes files, hook names and answers: no terminal control
        // in them reaches the terminal.
        _ => crate::terminal_text::shown(&check::as_text(&checks)).into_owned(),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(out.as_bytes()).and_then(|_| stdout.flush()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::from(check::exit_code(&checks))
}
