//! `cfn-bootstrap status`: what cfn-init's last run did (from its run records,
//! [`cfn_configsets::run_record`]) and what cfn-hup did lately (`cfn_hooks::activity`; its
//! lifecycle hooks: [`lifecycle`]), as a summary, in full (`--long`: each config and section with how long it took, the
//! failed command's output, the earlier runs, cfn-hup's hook runs) or as JSON; `--wait`
//! waits for a running cfn-init to end.
//!
//! The exit code is cfn-init's: 0 its last run succeeded, 1 it failed or was
//! interrupted (its record says running but its process is gone), or its records
//! cannot be read; 2 it is running or never ran (and `--wait` that timed out).
//! cfn-hup's activity is shown, never judged.

mod lifecycle;

use cfn_configsets::run_record::{self, Outcome, RunRecord, Source, State};
use cfn_hooks::activity::{self, Activity, FailingHook};
use cfn_host::terminal_text;
use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};
use serde_json::json;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How often `--wait` looks at the record again.
const POLL: Duration = Duration::from_millis(100);

pub fn command() -> Command {
    Command::new("status")
        .about("Show what cfn-init's last run did and what cfn-hup did lately")
        .long_about(
            "Show what cfn-init's last run did (from its records in /var/lib/cfn-init/runs) and\n\
             what cfn-hup did lately (/var/lib/cfn-hup/data/activity.json).\n\n\
             Exit status: 0 cfn-init's last run succeeded; 1 it failed, or was interrupted (its\n\
             process ended without recording an outcome), or its records cannot be read; 2 it is\n\
             running, never ran, or --wait timed out, or the command line is wrong.",
        )
        .arg(
            Arg::new("long")
                .long("long")
                .short('l')
                .action(ArgAction::SetTrue)
                .help("Also each config and section with how long it took, the failed command's output, earlier runs and cfn-hup's hook runs"),
        )
        .arg(cfn_optparse::options::format_arg(&["text", "json"], "text, or json for tools (always everything)"))
        .arg(
            Arg::new("wait")
                .long("wait")
                .value_name("SECONDS")
                .num_args(0..=1)
                .require_equals(true)
                .value_parser(value_parser!(u64))
                .help("Wait for a running cfn-init to end (at most SECONDS; exit 2 if it still runs)"),
        )
}

pub fn run(matches: &ArgMatches) -> ExitCode {
    let runs_dir = run_record::runs_dir();
    let read = || {
        run_record::history(&runs_dir).map_err(|e| {
            eprintln!("cfn-bootstrap status: cannot read {}: {}", runs_dir.display(), cfn_python::strerror(&e));
            ExitCode::FAILURE
        })
    };
    let mut history = match read() {
        Ok(history) => history,
        Err(code) => return code,
    };
    if matches.value_source("wait").is_some() {
        let deadline = matches.get_one::<u64>("wait").map(|s| Instant::now() + Duration::from_secs(*s));
        while State::of(history.first()) == State::Running && deadline.is_none_or(|d| Instant::now() < d) {
            std::thread::sleep(POLL);
            history = match read() {
                Ok(history) => history,
                Err(code) => return code,
            };
        }
    }
    let state = State::of(history.first());
    // cfn-hup's part is an aid: a file that cannot be read is said, and the rest shown.
    let hup = activity::read(&activity::default_path()).unwrap_or_else(|e| {
        eprintln!("cfn-bootstrap status: {e}");
        None
    });
    // The lifecycle hooks, when any is configured or recorded (issue 32).
    let lifecycle = lifecycle::Lifecycle::read(&cfn_host::paths::etc_dir(), &lifecycle::record_path());
    let text = if matches.get_one::<String>("format").is_some_and(|f| f == "json") {
        let json = json!({
            "status": state.name(),
            "exit_code": state.exit_code(),
            "cfn_init": history.first(),
            "history": history,
            "cfn_hup": hup,
            "lifecycle": lifecycle.as_ref().map(lifecycle::Lifecycle::to_json),
        });
        format!("{}\n", serde_json::to_string_pretty(&json).unwrap_or_default())
    } else {
        let mut text = summary(state, history.first(), &runs_dir);
        if let Some(hup) = &hup {
            text.push_str(&hup_summary(hup));
        }
        if let Some(lifecycle) = &lifecycle {
            text.push_str(&lifecycle.text());
        }
        if matches.get_flag("long") {
            text.push_str(&long(history.first(), &history, hup.as_ref()));
        }
        // Hook names, errors, sources and command output are data: no terminal control
        // in them reaches the terminal.
        terminal_text::shown(&text).into_owned()
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Ok(()) => ExitCode::from(state.exit_code()),
        Err(_) => ExitCode::FAILURE,
    }
}

fn source_text(source: &Source) -> String {
    match source {
        Source::File { path } => format!("file {path}"),
        Source::Stdin => "stdin".to_string(),
        Source::Stack { stack, resource, region, url } => {
            let url = url.as_deref().map(|u| format!(" via {u}")).unwrap_or_default();
            format!("stack {stack}, resource {resource}, region {region}{url}")
        }
    }
}

/// `12.345 s`, or `-` while unknown.
fn seconds(s: Option<f64>) -> String {
    s.map_or_else(|| "-".to_string(), |s| format!("{s:.3} s"))
}

/// Where a run is or was: its last config and section.
fn position(record: &RunRecord) -> Option<String> {
    let config = record.configs.last()?;
    let section = config.sections.last().filter(|s| s.outcome == Outcome::Running);
    let section = section.map(|s| format!(", section {}", s.section)).unwrap_or_default();
    Some(format!("config {} (configSet {}){section}", config.config, config.configset))
}

fn summary(state: State, last: Option<&RunRecord>, runs_dir: &std::path::Path) -> String {
    let mut out = format!("status: {}\n", state.name());
    let Some(r) = last else {
        let _ = writeln!(out, "cfn-init: no run recorded in {}", runs_dir.display());
        return out;
    };
    let configsets = r.configsets.join(", ");
    let from = source_text(&r.source);
    match state {
        State::Running | State::Interrupted => {
            let verb = if state == State::Running { "running since" } else { "interrupted: started" };
            let _ =
                writeln!(out, "cfn-init: {verb} {} (pid {}), from {from}, configSets {configsets}", r.started, r.pid);
            if let Some(at) = position(r) {
                let _ = writeln!(out, "{}: {at}", if state == State::Running { "now in" } else { "last in" });
            }
            if state == State::Interrupted {
                let _ = writeln!(out, "its process ended without recording an outcome (killed, or the host went down)");
            }
        }
        _ => {
            let exit = r.exit_code.map_or_else(|| "-".to_string(), |c| c.to_string());
            let _ = writeln!(
                out,
                "cfn-init: ran {} for {}, from {from}, configSets {configsets}, exit {exit}",
                r.started,
                seconds(r.seconds)
            );
        }
    }
    if let Some(failure) = &r.failure {
        let mut at = Vec::new();
        if let Some(config) = &failure.config {
            at.push(format!("config {config}"));
        }
        if let Some(section) = &failure.section {
            at.push(format!("section {section}"));
        }
        let at = if at.is_empty() { String::new() } else { format!(" in {}", at.join(", ")) };
        let _ = writeln!(out, "failed{at}: {}", failure.error);
    }
    out
}

fn hup_summary(hup: &Activity) -> String {
    let mut out = String::new();
    if let Some(pass) = &hup.last_pass {
        let _ = writeln!(
            out,
            "cfn-hup: last pass {}: {} ({} action(s) run, {} failed)",
            pass.time, pass.outcome, pass.actions_run, pass.actions_failed
        );
    }
    if let Some(error) = &hup.last_error {
        let _ = writeln!(out, "cfn-hup: last error {}: {}", error.time, error.message);
    }
    for hook in &hup.failing_hooks {
        let _ = writeln!(
            out,
            "cfn-hup: hook {} failing: {} since {}, last {}; next try {}",
            hook.hook,
            tries(hook),
            hook.since,
            hook.last_error,
            next_try(hook)
        );
    }
    out
}

/// `1 try` / `4 tries in a row`.
fn tries(hook: &FailingHook) -> String {
    match hook.tries {
        1 => "1 try".to_string(),
        n => format!("{n} tries in a row"),
    }
}

/// When a failing hook's action is tried again: at the next pass, or after the passes
/// its back-off leaves out.
fn next_try(hook: &FailingHook) -> String {
    match hook.passes_to_skip {
        0 => "at the next pass".to_string(),
        1 => format!("about {} (after 1 pass left out)", hook.next_try),
        n => format!("about {} (after {n} passes left out)", hook.next_try),
    }
}

fn long(last: Option<&RunRecord>, history: &[RunRecord], hup: Option<&Activity>) -> String {
    let mut out = String::new();
    if let Some(r) = last {
        let _ = writeln!(out, "\ncfn-init run (pid {}):", r.pid);
        let _ = writeln!(out, "  started: {}", r.started);
        let _ = writeln!(out, "  ended:   {}", r.ended.as_deref().unwrap_or("-"));
        let _ = writeln!(out, "  took:    {}", seconds(r.seconds));
        let _ = writeln!(out, "  source:  {}", source_text(&r.source));
        let _ = writeln!(out, "  configSets: {}", r.configsets.join(", "));
        if !r.configs.is_empty() {
            let _ = writeln!(out, "\n  {:>10}  {:<8} config / section", "took", "outcome");
            for config in &r.configs {
                let _ = writeln!(
                    out,
                    "  {:>10}  {:<8} {} (configSet {})",
                    seconds(config.seconds),
                    outcome_name(config.outcome),
                    config.config,
                    config.configset
                );
                for section in &config.sections {
                    let _ = writeln!(
                        out,
                        "  {:>10}  {:<8}   {}",
                        seconds(section.seconds),
                        outcome_name(section.outcome),
                        section.section
                    );
                }
            }
        }
        if let Some(failure) = r.failure.as_ref().filter(|f| !f.output_tail.is_empty()) {
            let _ = writeln!(out, "\n  output of the failed command (last {} lines):", failure.output_tail.len());
            for line in &failure.output_tail {
                let _ = writeln!(out, "    | {line}");
            }
        }
    }
    if history.len() > 1 {
        let _ = writeln!(out, "\nearlier runs:");
        for r in &history[1..] {
            let state = State::of(Some(r));
            let _ = writeln!(
                out,
                "  {}  {:<11} {:>10}  {}",
                r.started,
                state.name(),
                seconds(r.seconds),
                source_text(&r.source)
            );
        }
    }
    if let Some(hup) = hup.filter(|h| !h.failing_hooks.is_empty()) {
        let _ = writeln!(out, "\ncfn-hup failing hooks (a new value is tried at the next pass):");
        for hook in &hup.failing_hooks {
            let _ = writeln!(out, "  {} ({})", hook.hook, hook.path);
            let _ = writeln!(out, "    tries:    {} since {}", tries(hook), hook.since);
            let _ = writeln!(out, "    last try: {}: {}", hook.last_try, hook.last_error);
            let _ = writeln!(out, "    next try: {}", next_try(hook));
        }
    }
    if let Some(hup) = hup.filter(|h| !h.hook_runs.is_empty()) {
        let _ = writeln!(out, "\ncfn-hup hook runs (newest last):");
        for run in &hup.hook_runs {
            let exit = match (run.exit_code, &run.error) {
                (Some(code), _) => format!("exit {code}"),
                (None, Some(error)) => error.clone(),
                (None, None) => "-".to_string(),
            };
            let _ = writeln!(out, "  {}  {:>10}  {}: {exit}", run.started, seconds(Some(run.seconds)), run.hook);
        }
    }
    out
}

fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Running => "running",
        Outcome::Ok => "ok",
        Outcome::Failed => "failed",
    }
}
