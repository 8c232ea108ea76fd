//! The end-to-end scenario (issue 7): unchanged user data in a real Debian root, against
//! the emulator serving CloudFormation (HTTPS, at its real name) and IMDS (at
//! 169.254.169.254), with cfn-bootstrap installed from its .deb. The scenario itself
//! lives in xtask/src/scenario.rs, shared with `cargo xtask demo`; this test runs it and
//! checks what happened: nginx serves Hello World, the stack is CREATE_COMPLETE, the
//! cfn-hup service runs, and after UpdateStack the page changes within one cfn-hup
//! interval, with exactly one action, as the logs tell in the reference's formats.
//!
//! The same scenario runs once more with systemd as the instance's init (the systemd
//! root): the same user data, `services: systemd` in the template, cfn-hup as the .deb's
//! unit; then the unit is reloaded and stopped with systemctl, and its journal read.
//!
//! Needs root, the isolated Debian root v3 (with nginx in its local repository), the
//! systemd root and the .deb: `cargo xtask test` provides them (`CFN_TEST_ROOTFS`,
//! `CFN_TEST_SYSTEMD_ROOTFS`, `CFN_TEST_DIST`); without them the tests fail and say so.

mod common;

#[path = "../xtask/src/instance.rs"]
mod instance;
#[path = "../xtask/src/scenario.rs"]
mod scenario;

use instance::Init;

use std::path::PathBuf;
use std::time::Duration;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const INTERVAL: Duration = Duration::from_secs(2);

/// The x86_64 .deb of `cargo xtask dist`.
fn deb() -> PathBuf {
    let dist = common::dist_dir();
    let deb = dist.join(format!("cfn-bootstrap_{VERSION}-1_amd64.deb"));
    assert!(deb.is_file(), "{} is missing", deb.display());
    deb
}

/// The messages of a log in the reference's format (`YYYY-MM-DD HH:MM:SS,mmm [LEVEL] msg`),
/// checking the format of every line that starts a record.
fn messages(name: &str, log: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in log.lines() {
        let b = line.as_bytes();
        let stamped = b.len() > 24
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b' '
            && b[13] == b':'
            && b[16] == b':'
            && b[19] == b','
            && b[23] == b' '
            && line[..23].bytes().filter(u8::is_ascii_digit).count() == 17;
        if stamped {
            // cfn-init-cmd.log adds the process: `… P1234 [INFO] …`.
            let mut message = &line[24..];
            if let Some((pid, rest)) = message.split_once(' ')
                && pid.len() > 1
                && pid.starts_with('P')
                && pid[1..].bytes().all(|b| b.is_ascii_digit())
            {
                message = rest;
            }
            assert!(
                ["[DEBUG] ", "[INFO] ", "[WARNING] ", "[ERROR] "].iter().any(|l| message.starts_with(l)),
                "{name}: not the reference's format: {line}"
            );
            out.push(message.to_string());
        } else {
            // A continuation line of a multi-line message.
            assert!(!out.is_empty(), "{name}: the first line is not in the reference's format: {line}");
            out.push(line.to_string());
        }
    }
    out
}

fn count(messages: &[String], line: &str) -> usize {
    messages.iter().filter(|m| *m == line).count()
}

#[test]
fn hello_world_with_unchanged_user_data_then_cfn_hup_applies_an_update_once() {
    let (out, context, dir) = run(Init::Shell, common::debian_root::rootfs());
    let hup = &out.hup_service;
    let pid = hup.lines().find_map(|l| l.strip_prefix("pid file: ")).unwrap_or_default().trim().to_string();
    assert!(!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()), "{hup}\n{context}");
    assert!(hup.contains(&format!("cfn-hup (pid {pid}) is running...")), "{hup}");
    assert!(hup.contains("process: /opt/aws/bin/cfn-hup -c /etc/cfn"), "{hup}");
    for link in ["cfn-hup", "nginx"] {
        assert!(hup.lines().any(|l| l.starts_with('S') && l.ends_with(link)), "{link} not enabled:\n{hup}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// INIT-SVC-05, HUP-RUN-05, HUP-RUN-06: the scenario with systemd as init, then the
/// .deb's cfn-hup unit reloaded and stopped with systemctl.
#[test]
fn on_systemd_the_same_user_data_works_and_the_cfn_hup_unit_reloads_stops_and_logs_to_the_journal() {
    let (out, context, dir) = run(Init::Systemd, common::systemd_root::rootfs());
    let hup = &out.hup_service;
    // Enabled and started by cfn-init's `services: systemd` (enable, then start).
    assert!(hup.contains("cfn-hup: enabled active\n"), "{hup}\n{context}");
    assert!(hup.contains("nginx: enabled active\n"), "{hup}\n{context}");
    assert!(hup.contains("unit: /lib/systemd/system/cfn-hup.service\n"), "the .deb's unit: {hup}");
    assert!(hup.contains("process: /opt/aws/bin/cfn-hup --foreground \n"), "{hup}");
    let pid =
        |label: &str| out.reload.lines().find_map(|l| l.strip_prefix(label)).unwrap_or_default().trim().to_string();

    // Reload: the same process read its configuration again, and has the new hook.
    let before = pid("main pid before: ");
    assert!(!before.is_empty() && before != "0", "{}", out.reload);
    assert_eq!(pid("main pid after: "), before, "{}", out.reload);
    let reload = messages("cfn-hup.log (reload)", &out.reload_log);
    assert!(
        reload.iter().any(|m| m.starts_with("[INFO] Received SIGHUP: reloading the configuration from /etc/cfn")),
        "{}",
        out.reload
    );
    assert!(
        reload.iter().any(|m| m.starts_with("[INFO] Configuration reloaded: 2 hook(s) on stack ")),
        "{}",
        out.reload
    );

    // Stop: within seconds (TimeoutStopSec is 90 s), cleanly (SIGTERM handled, exit 0).
    assert!(out.stop_took < std::time::Duration::from_secs(5), "stop took {:?}", out.stop_took);
    for line in ["is-active: inactive", "Result=success", "ExecMainCode=1", "ExecMainStatus=0"] {
        assert!(out.stopped.lines().any(|l| l == line), "{line}: {}", out.stopped);
    }

    // The journal has cfn-hup's own lines, from start to stop.
    let hook = scenario::HOOK;
    for line in [
        format!("[INFO] Data has changed from previous state; action for {hook} will be run"),
        "[INFO] Received SIGHUP: reloading the configuration from /etc/cfn".to_string(),
    ] {
        assert!(out.journal.lines().any(|l| l.get(24..) == Some(line.as_str())), "{line}\n{}", out.journal);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs the scenario on `rootfs` with `init`, checks what both inits have in common, and
/// returns the outcome, the logs to show on failure and the run's directory.
fn run(init: Init, rootfs: PathBuf) -> (scenario::Outcome, String, PathBuf) {
    // A directory of its own (runs may overlap), kept when the test fails.
    let base = common::workspace().join("target/testroot/runs");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::Builder::new().prefix("scenario-").tempdir_in(&base).unwrap().keep();
    let config = scenario::Config {
        rootfs,
        init,
        deb: deb(),
        python: common::emulator_python(),
        emulator_script: common::workspace().join("tests/emulator/moto_cfn_server.py"),
        work: dir.join("scenario"),
        hup_interval: INTERVAL,
    };
    let out = scenario::run(config)
        .unwrap_or_else(|e| panic!("the scenario failed: {e:#}\n(its files are kept in {})", dir.display()));
    let context = format!(
        "(the instance's files are kept in {})\n--- cloud-init-output.log ---\n{}\n--- cfn-init.log ---\n{}\n--- cfn-hup.log ---\n{}\n--- cfn-init-cmd.log ---\n{}",
        dir.display(),
        out.cloud_init_output,
        out.cfn_init_log,
        out.cfn_hup_log,
        out.cfn_init_cmd_log
    );

    // The user data: cfn-init, then cfn-signal with its exit code; no --url, no keys.
    assert_eq!(out.user_data_exit, 0, "user data failed\n{context}");
    assert!(!out.user_data.contains("--url") && !out.user_data.contains("--access-key"));
    assert!(out.cloud_init_output.contains("+ /opt/aws/bin/cfn-signal -e 0 --region us-east-1"), "{context}");

    // Created: the page, the stack, the signal, the services.
    assert_eq!(out.first_page, scenario::FIRST_PAGE, "{context}");
    assert_eq!(out.stack_status, "CREATE_COMPLETE", "signals: {}\n{context}", out.signals);
    let signals = out.signals.as_array().expect("a list of signals");
    assert_eq!(signals.len(), 1, "{}", out.signals);
    assert!(out.signals.to_string().contains("SUCCESS"), "{}", out.signals);
    // Updated: the page changed within one interval of cfn-hup (plus the action's own
    // time) and stays changed.
    assert_eq!(out.stack_status_after_update, "UPDATE_COMPLETE");
    assert_eq!(out.second_page, scenario::SECOND_PAGE, "{context}");
    // nginx is restarted (stop, start): it may refuse a connection in between, but it
    // serves only these two pages, in this order.
    let served: Vec<&String> = out.pages_seen.iter().filter(|p| !p.starts_with("(no answer")).collect();
    assert_eq!(served, [scenario::FIRST_PAGE, scenario::SECOND_PAGE], "{:?}\n{context}", out.pages_seen);
    assert!(
        out.page_changed_after < INTERVAL * 2 + Duration::from_secs(10),
        "the page took {:?} to change\n{context}",
        out.page_changed_after
    );

    // The logs, in the reference's formats, tell the story: exactly one action.
    let hup_log = messages("cfn-hup.log", &out.cfn_hup_log);
    let hook = scenario::HOOK;
    assert_eq!(
        count(&hup_log, &format!("[INFO] Data has changed from previous state; action for {hook} will be run")),
        1,
        "{context}"
    );
    assert_eq!(count(&hup_log, &format!("[INFO] Running action for {hook}")), 1, "{context}");
    assert!(!hup_log.iter().any(|m| m.starts_with("[ERROR]") || m.starts_with("[WARNING]")), "{context}");

    let init_log = messages("cfn-init.log", &out.cfn_init_log);
    for (line, times) in [
        ("[INFO] Running configSets: create", 1),
        ("[INFO] Running configSet create", 1),
        ("[INFO] Running configSets: update", 1),
        ("[INFO] Running configSet update", 1),
        ("[INFO] Running config nginx", 2),
        ("[INFO] Running config cfn-hup", 1),
        ("[INFO] ConfigSets completed", 2),
    ] {
        assert_eq!(count(&init_log, line), times, "{line:?} in cfn-init.log\n{context}");
    }
    assert!(!init_log.iter().any(|m| m.starts_with("[ERROR]")), "{context}");
    messages("cfn-init-cmd.log", &out.cfn_init_cmd_log);

    let total: f64 = out.total.as_secs_f64();
    eprintln!("scenario wall time: {total:.1} s; phases: {:?}", out.timings);
    assert!(out.total < Duration::from_secs(120), "the scenario took {total:.0} s");
    (out, context, dir)
}
