//! `cfn-bootstrap doctor`: a read-only checklist of everything cfn-init, cfn-signal and
//! cfn-hup depend on on this host (the install, cfn-hup's configuration and service, the
//! credentials, the network, the clock, the API and cfn-init's last run), each check
//! with a stable id, a verdict, what it found and what to do.
//!
//! It writes nothing and runs no hook action or command, nor a profile's
//! `credential_process` (it says what would run instead). Each network probe has its own
//! short timeout, credentials are resolved once per run within the run's bound, and the
//! whole run stops probing at [`Context::deadline`]; the sections run on a thread of their
//! own, and what has not finished by [`RUN_BOUND`] is reported as not checked, so the run
//! ends within its bound whatever hangs. Exit 0 all ok, 1 any check failed, 2 only
//! warnings.

mod api;
mod check;
mod clock;
mod credentials;
mod hup_config;
mod init;
mod install;
mod lifecycle;
mod network;
mod probe;
mod service;
mod setup;

pub use check::{Check, Verdict};

use cfn_aws::{ApiOptions, Imds};
use cfn_optparse::options;
use clap::{Arg, ArgMatches, Command, ValueHint};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the whole run may take, probes included.
pub const RUN_BOUND: Duration = Duration::from_secs(20);
/// Probes are not started later than this before [`RUN_BOUND`]; the sections that have
/// not reported by then are cut, leaving the rest of it to print the report.
const PROBES_END_BEFORE_BOUND: Duration = Duration::from_secs(1);
const SECTIONS_END_BEFORE_BOUND: Duration = Duration::from_millis(500);
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
    /// The run's one IMDS client: what it learns (the instance id, the identity
    /// document) is asked once.
    pub imds: Arc<Imds>,
    /// The credentials resolved in this run: once per set of options.
    pub attempts: credentials::Attempts,
}

impl Context {
    /// The time a probe may take now: its own timeout, or what is left of the run.
    pub fn probe_timeout(&self) -> Option<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| left.min(PROBE_TIMEOUT))
    }
}

/// A group of checks, run in this order, with the area its checks' ids start with.
type Section = (&'static str, fn(&Context) -> Vec<Check>);

const SECTIONS: &[Section] = &[
    ("install", install::checks),
    ("hup", hup_config::checks),
    ("service", service::checks),
    ("credentials", credentials::checks),
    ("network", network::checks),
    ("clock", clock::checks),
    ("api", api::checks),
    ("init", init::checks),
    ("lifecycle", lifecycle::checks),
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

/// The checks of every section, in order. The sections run on a thread of their own:
/// each probe is bounded, but a step that is not (a credential provider's own retries, a
/// file system that hangs) must not hold the report past `cut`. A section that has not
/// reported by then is one skipped check saying so; the thread ends with the process.
fn run_sections(context: Context, cut: Instant) -> Vec<Check> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for (_, section) in SECTIONS {
            if send.send(section(&context)).is_err() {
                return;
            }
        }
    });
    let mut checks = Vec::new();
    let mut cut_off = false;
    for (area, _) in SECTIONS {
        // Once one section is cut, the later ones are too: the thread reports in order.
        let left = cut.saturating_duration_since(Instant::now());
        match receive.recv_timeout(left).ok().filter(|_| !cut_off) {
            Some(section) => checks.extend(section),
            None => {
                cut_off = true;
                checks.push(Check::skipped(
                    format!("{area}.unfinished"),
                    format!("not checked: doctor's run bound of {} s was reached", RUN_BOUND.as_secs()),
                ));
            }
        }
    }
    checks
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
        deadline: started + RUN_BOUND - PROBES_END_BEFORE_BOUND,
        described: api::Cache::default(),
        imds: Arc::new(Imds::from_env()),
        attempts: credentials::Attempts::default(),
    };
    let checks = run_sections(context, started + RUN_BOUND - SECTIONS_END_BEFORE_BOUND);
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
        _ => cfn_host::terminal_text::shown(&check::as_text(&checks)).into_owned(),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(out.as_bytes()).and_then(|_| stdout.flush()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::from(check::exit_code(&checks))
}
