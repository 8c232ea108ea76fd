//! The cfn-hup service: whether it runs (its pid file and process, the systemd unit
//! where systemd runs), and from its `activity.json` its last pass against its interval,
//! its last error and the hooks whose action keeps failing.

use super::{Check, Context, hup_config};
use cfn_hooks::activity::{self, Activity, HookRun};
use cfn_hooks::daemon;
use cfn_host::state_file::{StateFileError, read_regular};
use std::path::Path;

/// How much later than two intervals a pass may end before the service counts as
/// stalled (a pass takes time, and the schedule is jittered).
const SLACK: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

pub fn checks(ctx: &Context) -> Vec<Check> {
    let Ok(main) = cfn_hooks::config::load_main(&ctx.conf_dir) else {
        return vec![Check::skipped(
            "service.process",
            format!("cfn-hup is not configured ({} is missing or invalid)", hup_config::main_file(ctx).display()),
        )];
    };
    let mut checks = Vec::new();
    let (running, pid) = process(&daemon::default_pid_path());
    let is_running = running.verdict == super::Verdict::Ok;
    checks.push(running);
    if Path::new("/run/systemd/system").is_dir() {
        checks.push(unit(is_running));
    }
    let interval = main.interval_minutes().unwrap_or(cfn_hooks::config::DEFAULT_INTERVAL_MINUTES);
    let file = activity::default_path();
    match activity::read(&file) {
        Ok(None) => checks.push(Check::skipped(
            "service.last_pass",
            format!("cfn-hup has recorded no pass ({} does not exist)", file.display()),
        )),
        Ok(Some(activity)) => {
            checks.extend(judge(&activity, interval, chrono::Utc::now()));
            if let Some(pid) = pid {
                checks.push(files_read(&ctx.conf_dir, &activity, pid));
            }
        }
        Err(e) => checks.push(Check::failed(
            "service.last_pass",
            e.to_string(),
            format!("rm {} (cfn-hup writes it again after its next pass)", file.display()),
        )),
    }
    checks.push(metadata_db(&cfn_hooks::MetadataDb::default_path()));
    checks
}

/// The most of cfn-hup's stored values doctor reads (a hook's value is a resource's
/// metadata, 1 MiB at most in a stack; a host has a few hooks).
const METADATA_DB_CAP: u64 = 64 << 20;

/// cfn-hup's record of the values its hooks have seen. One that is not a JSON object
/// (cut short by a full disk, edited by hand) is ignored by cfn-hup, which then takes
/// every hook as new: said here, with the file's name, as cfn-hup only logs it.
fn metadata_db(path: &Path) -> Check {
    let id = "service.metadata_db";
    let bytes = match read_regular(path, METADATA_DB_CAP) {
        Ok(bytes) => bytes,
        Err(StateFileError::Missing) => {
            return Check::ok(id, format!("{} does not exist yet: no value stored", path.display()));
        }
        Err(e) => {
            return Check::failed(
                id,
                format!("cannot read {}: {e}", path.display()),
                format!("rm {} (cfn-hup then takes every hook as new)", path.display()),
            );
        }
    };
    if bytes.trim_ascii().is_empty() {
        return Check::ok(id, format!("{} is empty: no value stored", path.display()));
    }
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(values)) => {
            Check::ok(id, format!("{}: {} stored value(s)", path.display(), values.len()))
        }
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                Ok(_) => "a JSON value that is not an object".to_string(),
            };
            Check::failed(
                id,
                format!(
                    "{} is damaged or cut short ({why}): cfn-hup ignores it and takes every hook as new, so \
                     post.add actions run again and no post.update fires for a change made meanwhile",
                    path.display()
                ),
                format!(
                    "restore it from a backup, or rm {} to start afresh on purpose (then check the hooks' actions ran)",
                    path.display()
                ),
            )
        }
    }
}

/// Whether the running cfn-hup has read the configuration files as they are: one changed
/// after it last read them (at its start or a reload) is not in use until a reload.
fn files_read(dir: &Path, activity: &Activity, pid: i32) -> Check {
    let id = "service.config";
    let Some(read) = activity.config_read.as_ref().filter(|r| i64::from(r.pid) == i64::from(pid)) else {
        return Check::skipped(id, format!("cfn-hup (pid {pid}) has not recorded when it read its configuration"));
    };
    let Some(read_at) = chrono::DateTime::parse_from_rfc3339(&read.time).ok().map(|t| t.to_utc()) else {
        return Check::skipped(id, "the time cfn-hup read its configuration is unreadable");
    };
    let mut files = vec![dir.join("cfn-hup.conf")];
    files.extend(cfn_hooks::config::hook_files(dir));
    // Changed after the reading: by their modification time (through links, as read).
    let mut changed: Vec<(String, chrono::DateTime<chrono::Utc>)> = files
        .iter()
        .filter_map(|file| {
            let modified = std::fs::metadata(file).and_then(|m| m.modified()).ok()?;
            let modified = chrono::DateTime::<chrono::Utc>::from(modified);
            let shown = file.strip_prefix(dir).unwrap_or(file).display().to_string();
            // The reading's time is recorded to the millisecond: so is the change compared.
            let to_millis = |t: chrono::DateTime<chrono::Utc>| t.timestamp_millis();
            (to_millis(modified) > to_millis(read_at)).then_some((shown, modified))
        })
        .collect();
    changed.sort();
    if changed.is_empty() {
        return Check::ok(id, format!("cfn-hup read its configuration at {}; no file of it changed since", read.time));
    }
    let names: Vec<String> =
        changed.iter().map(|(name, at)| format!("{name} ({})", cfn_hooks::activity::time(*at))).collect();
    Check::warning(
        id,
        format!(
            "changed after cfn-hup (pid {pid}) read its configuration at {}: {}; the running cfn-hup does not use them yet",
            read.time,
            names.join(", ")
        ),
        format!("reload it: systemctl reload cfn-hup (or kill -HUP {pid})"),
    )
}

/// The pid file names a running cfn-hup: the check, and the pid when it runs.
fn process(pid_file: &Path) -> (Check, Option<i32>) {
    let check = running_process(pid_file);
    let pid = (check.verdict == super::Verdict::Ok)
        .then(|| read_regular(pid_file, daemon::PID_FILE_CAP).ok())
        .flatten()
        .and_then(|bytes| String::from_utf8_lossy(&bytes).trim().parse().ok());
    (check, pid)
}

fn running_process(pid_file: &Path) -> Check {
    let id = "service.process";
    let start = "start cfn-hup (systemctl start cfn-hup, or service cfn-hup start)";
    // Read as a state file: a FIFO or a device there must not hang the report.
    let text = match read_regular(pid_file, daemon::PID_FILE_CAP) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(StateFileError::Missing) => {
            return Check::failed(id, format!("cfn-hup is not running (no pid file {})", pid_file.display()), start);
        }
        Err(e) => {
            return Check::failed(
                id,
                format!("cannot read the pid file {}: {e}", pid_file.display()),
                format!("rm {}, then {start}", pid_file.display()),
            );
        }
    };
    let stale = |what: String| {
        Check::failed(
            id,
            format!("stale pid file {}: {what}", pid_file.display()),
            format!("rm {}, then {start}", pid_file.display()),
        )
    };
    let Ok(pid) = text.trim().parse::<i32>() else {
        return stale("it names no process".to_string());
    };
    if !u32::try_from(pid).is_ok_and(cfn_host::process_identity::pid_exists) {
        return stale(format!("process {pid} is gone"));
    }
    if !daemon::is_cfn_hup(pid) {
        return stale(format!("process {pid} is not cfn-hup"));
    }
    Check::ok(id, format!("cfn-hup is running (pid {pid}, pid file {})", pid_file.display()))
}

/// `systemctl is-active cfn-hup`, read-only.
fn unit(process_runs: bool) -> Check {
    let id = "service.unit";
    let state = match std::process::Command::new("systemctl").args(["is-active", "cfn-hup"]).output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        Err(e) => return Check::skipped(id, format!("could not run systemctl: {}", cfn_python::strerror(&e))),
    };
    match state.as_str() {
        "active" => Check::ok(id, "the cfn-hup unit is active"),
        "failed" => {
            Check::failed(id, "the cfn-hup unit failed", "read journalctl -u cfn-hup, then systemctl restart cfn-hup")
        }
        _ if process_runs => Check::ok(id, format!("the cfn-hup unit is {state}; cfn-hup runs outside systemd")),
        _ => Check::warning(id, format!("the cfn-hup unit is {state}"), "systemctl enable --now cfn-hup"),
    }
}

/// The last pass against the interval, the last error, and the hooks failing now.
fn judge(activity: &Activity, interval_minutes: u64, now: chrono::DateTime<chrono::Utc>) -> Vec<Check> {
    let mut checks = Vec::new();
    let when = |text: &str| chrono::DateTime::parse_from_rfc3339(text).ok().map(|t| t.to_utc());
    let interval = chrono::TimeDelta::minutes(interval_minutes.min(1 << 20) as i64);
    match &activity.last_pass {
        None => checks.push(Check::skipped("service.last_pass", "cfn-hup has recorded no pass yet")),
        Some(pass) => {
            let id = "service.last_pass";
            let age = when(&pass.time).map(|t| now - t);
            let found = format!(
                "last pass {} ({}), {} action(s) run, {} failed",
                pass.time,
                age.map_or_else(|| "at an unreadable time".to_string(), ago),
                pass.actions_run,
                pass.actions_failed
            );
            checks.push(match age {
                Some(age) if age > interval * 2 + SLACK => Check::failed(
                    id,
                    format!("{found}: stalled, no pass for more than two intervals of {interval_minutes} minute(s)"),
                    "read cfn-hup.log, then restart cfn-hup",
                ),
                _ if pass.outcome == "ok" => Check::ok(id, found),
                _ => Check::warning(
                    id,
                    format!("{found}: {}", pass.outcome),
                    "read cfn-hup.log and `cfn-bootstrap status --long`",
                ),
            });
        }
    }
    if let Some(error) = &activity.last_error {
        let id = "service.last_error";
        let earlier = activity.last_pass.as_ref().is_some_and(|p| p.outcome == "ok" && p.time > error.time);
        checks.push(if earlier {
            Check::ok(
                id,
                format!("last error at {} (passes went well since): {}", error.time, one_line(&error.message, 300)),
            )
        } else {
            Check::warning(
                id,
                format!("at {}: {}", error.time, one_line(&error.message, 300)),
                "read cfn-hup.log around that time",
            )
        });
    }
    // The service's back-off record says most (tries, next try); a hook failing only in
    // `--no-daemon` runs has its streak in the run history alone.
    for failing in &activity.failing_hooks {
        let hook = &failing.hook;
        checks.push(Check::warning(
            format!("service.hook:{hook}"),
            format!(
                "the action of {hook} has failed {} time(s) in a row since {}: {}; next try at {}",
                failing.tries,
                failing.since,
                one_line(&failing.last_error, 300),
                if failing.passes_to_skip == 0 { "the next pass".to_string() } else { failing.next_try.clone() }
            ),
            format!("run the action of {hook} by hand to see why; cfn-hup.log has its output"),
        ));
    }
    let backing_off = |hook: &str| activity.failing_hooks.iter().any(|f| f.hook == hook);
    for (hook, streak) in failing_hooks(&activity.hook_runs).into_iter().filter(|(hook, _)| !backing_off(hook)) {
        let last = streak.last().expect("a streak has a run");
        let how = match (last.exit_code, &last.error) {
            (Some(code), _) => format!("exit code {code}"),
            (None, error) => one_line(error.as_deref().unwrap_or("did not run"), 300),
        };
        checks.push(Check::warning(
            format!("service.hook:{hook}"),
            format!(
                "the action of {hook} has failed {} time(s) in a row since {}: {how}",
                streak.len(),
                streak[0].started
            ),
            format!("run the action of {hook} by hand to see why; cfn-hup.log has its output"),
        ));
    }
    checks
}

/// Each hook whose last run failed, with its failed runs since its last success (oldest
/// first).
fn failing_hooks(runs: &[HookRun]) -> Vec<(String, Vec<&HookRun>)> {
    let mut hooks: Vec<String> = Vec::new();
    for run in runs {
        if !hooks.contains(&run.hook) {
            hooks.push(run.hook.clone());
        }
    }
    hooks
        .into_iter()
        .filter_map(|hook| {
            let mine: Vec<&HookRun> = runs.iter().filter(|r| r.hook == hook).collect();
            let failing = mine.iter().rev().take_while(|r| r.exit_code != Some(0)).count();
            (failing > 0).then(|| (hook, mine[mine.len() - failing..].to_vec()))
        })
        .collect()
}

/// Text from a record (an error, a command's output) as one printable line of at most
/// `max` characters: it is shown on a terminal as it is.
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.chars().filter(|c| !c.is_control()).take(max).collect::<String>().trim().to_string()
}

fn ago(age: chrono::TimeDelta) -> String {
    match age.num_seconds() {
        s if s < 0 => "in the future: check the clock".to_string(),
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s => format!("{} h ago", s / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfn_hooks::activity::{ErrorSeen, Pass};

    fn run(hook: &str, started: &str, exit_code: Option<i32>) -> HookRun {
        HookRun { hook: hook.into(), started: started.into(), exit_code, error: None, seconds: 0.1 }
    }

    #[test]
    fn a_pass_older_than_two_intervals_is_stalled_and_failing_hooks_say_since_when() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").unwrap().to_utc();
        let activity = Activity {
            last_pass: Some(Pass {
                time: "2026-12-03T11:20:00.000Z".into(),
                outcome: "actions failed".into(),
                actions_run: 1,
                actions_failed: 1,
            }),
            last_error: Some(ErrorSeen {
                time: "2026-12-03T11:20:00.000Z".into(),
                message: "Action for b exited with 3".into(),
            }),
            hook_runs: vec![
                run("a", "t1", Some(1)),
                run("b", "t2", Some(3)),
                run("a", "t3", Some(0)),
                run("b", "t4", Some(3)),
            ],
            ..Activity::default()
        };
        let checks = judge(&activity, 15, now);
        let ids: Vec<(&str, super::super::Verdict)> = checks.iter().map(|c| (c.id.as_str(), c.verdict)).collect();
        use super::super::Verdict::*;
        assert_eq!(ids, [("service.last_pass", Failed), ("service.last_error", Warning), ("service.hook:b", Warning)]);
        assert!(checks[0].found.contains("40 min ago") && checks[0].found.contains("stalled"), "{}", checks[0].found);
        assert!(checks[2].found.contains("failed 2 time(s) in a row since t2: exit code 3"), "{}", checks[2].found);
        assert_eq!(judge(&activity, 30, now)[0].verdict, Warning, "within two intervals: only its outcome");
    }

    #[test]
    fn a_hook_backing_off_says_its_tries_and_its_next_try() {
        use cfn_hooks::activity::FailingHook;
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").unwrap().to_utc();
        let failing = |passes_to_skip| FailingHook {
            hook: "b".into(),
            path: "Resources.R.Metadata".into(),
            tries: 4,
            since: "2026-12-03T11:00:00Z".into(),
            last_try: "2026-12-03T11:45:00Z".into(),
            last_error: "exit 3".into(),
            passes_to_skip,
            next_try: "2026-12-03T12:45:00Z".into(),
            value_sha256: "0".repeat(64),
        };
        let activity = Activity {
            hook_runs: vec![run("b", "t1", Some(3)), run("c", "t2", Some(1))],
            failing_hooks: vec![failing(2)],
            ..Activity::default()
        };
        let checks: Vec<Check> =
            judge(&activity, 15, now).into_iter().filter(|c| c.id.starts_with("service.hook:")).collect();
        let hooks: Vec<&str> = checks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(hooks, ["service.hook:b", "service.hook:c"], "b once, from its back-off record");
        assert_eq!(
            checks[0].found,
            "the action of b has failed 4 time(s) in a row since 2026-12-03T11:00:00Z: exit 3; next try at 2026-12-03T12:45:00Z"
        );
        let soon = Activity { failing_hooks: vec![failing(0)], ..Activity::default() };
        let said = judge(&soon, 15, now).into_iter().find(|c| c.id == "service.hook:b").unwrap();
        assert!(said.found.ends_with("next try at the next pass"), "{}", said.found);
    }
}
