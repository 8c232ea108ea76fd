//! cfn-hup's lifecycle hooks end to end (issue 32): Auto Scaling launch and terminate
//! hooks completed exactly once with heartbeats, Spot/rebalance/maintenance notices run
//! once across restarts, bad metadata tolerated, and `cfn-bootstrap lifecycle complete`.
//! Each test runs in a network namespace of its own, where the emulator serves IMDS at
//! 169.254.169.254:80 and Auto Scaling at 127.0.0.1:5000 (needs root). The tests wait
//! for effects with deadlines and assert only on what they caused: the emulator's Auto
//! Scaling journal, the files the actions write, the log.

mod common;
use common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const INSTANCE: &str = "i-0123456789abcdef0";
const ENDPOINT: &str = "http://127.0.0.1:5000";
/// Generous: a loaded 2-core machine runs several emulators and builds at once.
const LONG: Duration = Duration::from_secs(90);

/// The metadata item of Auto Scaling's transitions.
const STATE_ITEM: &str = "autoscaling/target-lifecycle-state";

/// An instance: the emulator, a sandbox with cfn-hup's configuration, the running cfn-hup.
struct Instance {
    emulator: Emulator,
    sandbox: Sandbox,
    dir: PathBuf,
    hup: Option<Child>,
}

impl Instance {
    /// Must be called inside [`in_private_network`].
    fn new(hooks: &str) -> Instance {
        let emulator =
            Emulator::start_at(&["--imds-host", "169.254.169.254", "--imds-port", "80", "--port", "5000"], 5000);
        let sandbox = Sandbox::new();
        // Where `status` looks for the hooks too (CFN_BOOTSTRAP_ETC_DIR).
        let dir = sandbox.path("etc");
        std::fs::create_dir_all(dir.join("hooks.d")).unwrap();
        let creds =
            sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
        let main = format!(
            "[main]\nstack=lifecycle\ncredential-file={}\nurl={ENDPOINT}\nlifecycle-interval=1\n",
            creds.display()
        );
        std::fs::write(dir.join("cfn-hup.conf"), main).unwrap();
        std::fs::write(
            dir.join("hooks.d/lifecycle.conf"),
            hooks.replace("MARKS", &sandbox.path("marks").display().to_string()),
        )
        .unwrap();
        Instance { emulator, sandbox, dir, hup: None }
    }

    /// The group `web` with `hooks`, the instance in service in it.
    fn group(&self, hooks: Value) {
        self.emulator
            .post_json("/_emu/autoscaling/groups", &json!({"name": "web", "hooks": hooks, "instances": [INSTANCE]}));
    }

    /// The group `web` with `hooks`, and the instance launching into it.
    fn launch(&self, hooks: Value) {
        self.emulator.post_json("/_emu/autoscaling/groups", &json!({"name": "web", "hooks": hooks}));
        self.emulator.post_json("/_emu/autoscaling/launch", &json!({"instance": INSTANCE, "group": "web"}));
    }

    fn cmd(&self, tool: &str) -> TestCommand {
        self.sandbox
            .cmd(tool)
            .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .env("AWS_ENDPOINT_URL_AUTO_SCALING", ENDPOINT)
            .env("CFN_BOOTSTRAP_HUP_HEARTBEAT_FLOOR_SECONDS", "1")
    }

    /// `cfn-bootstrap` itself, with the environment of [`Self::cmd`].
    fn bootstrap(&self) -> TestCommand {
        let argv = binary_argv(binary());
        self.sandbox
            .cmd_via(&argv[0], "cfn-bootstrap")
            .args(&argv[1..])
            .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .env("AWS_ENDPOINT_URL_AUTO_SCALING", ENDPOINT)
    }

    fn start(&mut self) {
        let mut cmd = self.cmd("cfn-hup").arg("-c").arg(&self.dir).arg("-F");
        cmd.cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        self.hup = Some(cmd.cmd.spawn().expect("start cfn-hup -F"));
        let before = self.log().matches("Lifecycle watcher started").count();
        self.wait("the lifecycle watcher to start", || {
            self.log().matches("Lifecycle watcher started").count() > before
        });
    }

    fn signal(&mut self, sig: i32) -> std::process::ExitStatus {
        let mut child = self.hup.take().expect("cfn-hup runs");
        // SAFETY: signalling the cfn-hup this test started.
        unsafe { libc::kill(child.id() as i32, sig) };
        child.wait().unwrap()
    }

    fn log(&self) -> String {
        self.sandbox.log("cfn-hup.log")
    }

    fn marks(&self) -> Vec<String> {
        std::fs::read_to_string(self.sandbox.path("marks")).unwrap_or_default().lines().map(str::to_string).collect()
    }

    fn journal(&self) -> Value {
        self.emulator.get_json("/_emu/autoscaling")
    }

    fn completions(&self) -> Vec<Value> {
        self.journal()["completions"].as_array().cloned().unwrap_or_default()
    }

    fn heartbeats(&self) -> usize {
        self.journal()["heartbeats"].as_array().map_or(0, Vec::len)
    }

    /// Waits until cfn-hup has polled the metadata item ending in `item` `rounds` more
    /// times: whatever it would do again, it has had its chances to (a condition on what
    /// it did, not a pause).
    fn wait_polls(&self, item: &str, rounds: usize) {
        let requests = |since: u64| self.emulator.get_json(&format!("/_emu/requests?kind=imds&since={since}"));
        let since = requests(0).as_array().and_then(|all| all.last()).and_then(|r| r["seq"].as_u64()).unwrap_or(0);
        let polls = || {
            let all = requests(since);
            all.as_array()
                .map_or(0, |all| all.iter().filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with(item))).count())
        };
        self.wait(&format!("{rounds} more polls of {item}"), || polls() >= rounds);
    }

    fn wait_completions(&self, n: usize) -> Vec<Value> {
        self.wait(&format!("{n} completion(s)"), || self.completions().len() >= n);
        self.completions()
    }

    /// Waits for `condition`; on failure shows what the instance did.
    fn wait(&self, what: &str, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + LONG;
        while !condition() {
            if Instant::now() > deadline {
                panic!(
                    "timed out after {LONG:?} waiting for {what}\nmarks: {:?}\njournal: {:#}\n{}",
                    self.marks(),
                    self.journal(),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(mut child) = self.hup.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A hook section whose action appends its lifecycle environment to MARKS, then runs `then`.
fn recorder(name: &str, trigger: &str, then: &str, extra: &str) -> String {
    format!(
        "[{name}]\ntriggers={trigger}\n{extra}action=echo \"{name} $CFN_LIFECYCLE_EVENT $CFN_INSTANCE_ID \
         $CFN_AUTOSCALING_GROUP $CFN_LIFECYCLE_HOOK $CFN_LIFECYCLE_DEADLINE\" >> MARKS; {then}\n"
    )
}

fn api_completions(all: &[Value]) -> Vec<(String, String, String)> {
    all.iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (text("hook"), text("result"), text("source"))
        })
        .collect()
}

#[test]
fn terminate_runs_the_drain_once_keeps_it_alive_with_heartbeats_and_continues() {
    let (marks, completions, heartbeats, log) = in_private_network(|| {
        let mut instance = Instance::new(&recorder("drain", "on.asg.terminate", "sleep 9", ""));
        // Heartbeats every 2 s (half of 4 s) keep a 9 s drain alive; without them the
        // hook would time out (ABANDON, source "timeout").
        instance.group(json!([{"name": "drain-hook", "transition": "terminating", "heartbeat_timeout": 4}]));
        instance.start();
        let started = Instant::now();
        instance.emulator.post_json("/_emu/autoscaling/terminate", &json!({"instance": INSTANCE}));
        instance.wait_completions(1);
        assert!(started.elapsed() >= Duration::from_secs(9), "completed before the drain ended");
        // A few more polls: nothing runs or completes again.
        instance.wait_polls(STATE_ITEM, 3);
        (instance.marks(), instance.completions(), instance.heartbeats(), instance.log())
    });
    assert_eq!(api_completions(&completions), [("drain-hook".into(), "CONTINUE".into(), "api".into())], "{log}");
    assert_eq!(marks.len(), 1, "{marks:?}");
    let words: Vec<&str> = marks[0].split(' ').collect();
    assert_eq!(&words[..5], ["drain", "on.asg.terminate", INSTANCE, "web", "drain-hook"], "{marks:?}");
    assert!(chrono::DateTime::parse_from_rfc3339(words[5]).is_ok(), "{marks:?}");
    assert!(heartbeats >= 2, "{heartbeats} heartbeats\n{log}");
}

#[test]
fn every_hook_of_the_transition_is_completed_once() {
    let (completions, marks, log) = in_private_network(|| {
        let mut instance = Instance::new(&recorder("drain", "on.asg.terminate", "true", ""));
        instance.group(json!([
            {"name": "deregister", "transition": "terminating", "heartbeat_timeout": 300},
            {"name": "backup", "transition": "terminating", "heartbeat_timeout": 300},
            {"name": "ready", "transition": "launching", "heartbeat_timeout": 300},
        ]));
        instance.start();
        instance.emulator.post_json("/_emu/autoscaling/terminate", &json!({"instance": INSTANCE}));
        instance.wait_completions(2);
        instance.wait_polls(STATE_ITEM, 3);
        (instance.completions(), instance.marks(), instance.log())
    });
    assert_eq!(
        api_completions(&completions),
        [("deregister".into(), "CONTINUE".into(), "api".into()), ("backup".into(), "CONTINUE".into(), "api".into())],
        "{log}"
    );
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert!(marks[0].contains(" web deregister,backup "), "{marks:?}");
}

#[test]
fn a_failing_action_completes_with_its_on_failure_result() {
    let completions = in_private_network(|| {
        let mut instance = Instance::new(&recorder("drain", "on.asg.terminate", "exit 3", "on-failure=abandon\n"));
        instance.group(json!([{"name": "drain-hook", "transition": "terminating", "heartbeat_timeout": 300}]));
        instance.start();
        instance.emulator.post_json("/_emu/autoscaling/terminate", &json!({"instance": INSTANCE}));
        instance.wait_completions(1)
    });
    assert_eq!(api_completions(&completions), [("drain-hook".into(), "ABANDON".into(), "api".into())]);
}

#[test]
fn an_action_past_its_timeout_is_killed_and_completes_with_the_failure_result() {
    let (completions, marks, log) = in_private_network(|| {
        // The default on-failure of a launch hook is ABANDON.
        let mut instance =
            Instance::new(&recorder("ready", "on.asg.launch", "sleep 60; echo late >> MARKS", "timeout=2\n"));
        instance.start();
        let started = Instant::now();
        instance.launch(json!([{"name": "ready-hook", "transition": "launching", "heartbeat_timeout": 300}]));
        let completions = instance.wait_completions(1);
        assert!(started.elapsed() < Duration::from_secs(60));
        (completions, instance.marks(), instance.log())
    });
    assert_eq!(api_completions(&completions[..1]), [("ready-hook".into(), "ABANDON".into(), "api".into())], "{log}");
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert!(log.contains("ran past its time limit of 2 s; killed it"), "{log}");
}

#[test]
fn launch_hooks_complete_with_continue() {
    let (completions, marks) = in_private_network(|| {
        let mut instance = Instance::new(&recorder("ready", "on.asg.launch", "true", ""));
        instance.start();
        instance.launch(json!([{"name": "ready-hook", "transition": "launching", "heartbeat_timeout": 300}]));
        let completions = instance.wait_completions(1);
        instance.wait_polls(STATE_ITEM, 3);
        (completions, instance.marks())
    });
    assert_eq!(api_completions(&completions), [("ready-hook".into(), "CONTINUE".into(), "api".into())]);
    assert_eq!(marks.len(), 1);
    assert!(marks[0].starts_with(&format!("ready on.asg.launch {INSTANCE} web ready-hook ")), "{marks:?}");
}

#[test]
fn an_instance_already_past_the_wait_state_runs_nothing_and_logs_no_error() {
    let (marks, completions, log) = in_private_network(|| {
        let mut instance = Instance::new(&recorder("drain", "on.asg.terminate", "true", ""));
        // No terminate hook: Terminating goes straight on to Terminated.
        instance.group(json!([]));
        instance
            .emulator
            .post_json("/_emu/autoscaling/target-state", &json!({"instance": INSTANCE, "state": "Terminated"}));
        instance.start();
        instance.wait("the watcher to find the instance past the wait state", || {
            instance.log().contains("not Terminating:Wait")
        });
        instance.wait_polls(STATE_ITEM, 2);
        (instance.marks(), instance.completions(), instance.log())
    });
    assert!(marks.is_empty() && completions.is_empty(), "{marks:?} {completions:?}");
    assert!(!log.contains(" ERROR "), "{log}");
}

#[test]
fn cfn_hup_killed_mid_drain_resumes_completes_once_and_does_not_rerun_a_finished_action() {
    let (marks, completions, heartbeats_after, log) = in_private_network(|| {
        let hooks = format!(
            "{}{}",
            recorder("first", "on.asg.terminate", "true", ""),
            recorder("second", "on.asg.terminate", "touch MARKS.running; sleep 8", "")
        );
        let mut instance = Instance::new(&hooks);
        instance.group(json!([{"name": "drain-hook", "transition": "terminating", "heartbeat_timeout": 4}]));
        instance.start();
        instance.emulator.post_json("/_emu/autoscaling/terminate", &json!({"instance": INSTANCE}));
        let running = instance.sandbox.path("marks.running");
        instance.wait("the second action to run", || running.exists());
        instance.signal(libc::SIGKILL);
        let before = instance.heartbeats();
        instance.start();
        let completions = instance.wait_completions(1);
        instance.wait_polls(STATE_ITEM, 2);
        (instance.marks(), completions, instance.heartbeats() - before, instance.log())
    });
    assert_eq!(api_completions(&completions), [("drain-hook".into(), "CONTINUE".into(), "api".into())], "{log}");
    let first = marks.iter().filter(|m| m.starts_with("first ")).count();
    assert_eq!(first, 1, "the finished action ran again: {marks:?}");
    assert!(heartbeats_after >= 1, "no heartbeat after the restart\n{log}");
}

#[test]
fn sigterm_mid_drain_finishes_the_drain_and_completes_before_exit() {
    let (status, completions, marks, log) = in_private_network(|| {
        let mut instance = Instance::new(&recorder(
            "drain",
            "on.asg.terminate",
            "touch MARKS.running; sleep 4; echo drained >> MARKS",
            "",
        ));
        instance.group(json!([{"name": "drain-hook", "transition": "terminating", "heartbeat_timeout": 300}]));
        instance.start();
        instance.emulator.post_json("/_emu/autoscaling/terminate", &json!({"instance": INSTANCE}));
        let running = instance.sandbox.path("marks.running");
        instance.wait("the drain to run", || running.exists());
        let status = instance.signal(libc::SIGTERM);
        // Completed by the time cfn-hup has exited: no waiting here.
        (status, instance.completions(), instance.marks(), instance.log())
    });
    assert!(status.success(), "{status:?}\n{log}");
    assert_eq!(api_completions(&completions), [("drain-hook".into(), "CONTINUE".into(), "api".into())], "{log}");
    assert!(marks.iter().any(|m| m == "drained"), "{marks:?}");
}

#[test]
fn spot_rebalance_and_maintenance_notices_run_once_across_restarts_and_a_new_notice_again() {
    let (marks, log) = in_private_network(|| {
        let hooks = [
            recorder("spot", "on.spot.interruption", "echo \"spot-event $CFN_EVENT_TIME\" >> MARKS", ""),
            recorder("rebalance", "on.rebalance", "true", ""),
            recorder("maintenance", "on.maintenance", "true", ""),
        ]
        .concat();
        let mut instance = Instance::new(&hooks);
        // Every field given: the emulator fills missing ones with times of its own, which
        // would make the same event, posted again, another notice.
        let event = |n: u32| {
            json!({"Code": "system-reboot", "Description": "scheduled reboot", "EventId": format!("instance-event-{n}"),
                   "NotBefore": "21 Jan 2030 09:00:43 GMT", "NotAfter": "28 Jan 2030 09:00:43 GMT", "State": "active"})
        };
        instance.start();
        instance.emulator.post_json(
            "/_emu/imds",
            &json!({
                "spot_instance_action": {"action": "terminate"},
                "rebalance_recommendation": {},
                "maintenance_events": [event(1)],
            }),
        );
        let count = |marks: &[String], name: &str| marks.iter().filter(|m| m.starts_with(&format!("{name} "))).count();
        instance.wait("each notice's hook", || {
            let marks = instance.marks();
            ["spot", "rebalance", "maintenance"].iter().all(|n| count(&marks, n) == 1)
        });
        instance.signal(libc::SIGTERM);
        instance.start();
        // Several polls after the restart: nothing runs again.
        instance.wait_polls("events/maintenance/scheduled", 4);
        let after_restart = instance.marks();
        assert!(
            ["spot", "rebalance", "maintenance"].iter().all(|n| count(&after_restart, n) == 1),
            "{after_restart:?}"
        );
        // A new maintenance event is a new notice.
        instance.emulator.post_json("/_emu/imds", &json!({"maintenance_events": [event(1), event(2)]}));
        instance.wait("the new maintenance event's hook", || count(&instance.marks(), "maintenance") == 2);
        (instance.marks(), instance.log())
    });
    let spot_time = marks.iter().find_map(|m| m.strip_prefix("spot-event ")).unwrap_or_default();
    assert!(spot_time.ends_with('Z') && spot_time.len() >= 20, "{marks:?}\n{log}");
}

#[test]
fn bad_metadata_is_logged_and_polling_goes_on() {
    let (marks, log) = in_private_network(|| {
        let mut instance = Instance::new(&recorder("spot", "on.spot.interruption", "true", ""));
        let spot = "/latest/meta-data/spot/instance-action";
        let rule = |instance: &Instance, rule: Value| drop(instance.emulator.post_json("/_emu/faults", &rule));
        rule(&instance, json!({"path": spot, "status": 200, "body": "<html>not json</html>", "count": 2}));
        instance.start();
        instance.wait("garbage to be logged", || instance.log().contains("is not JSON"));
        let rule = |rule_: Value| drop(instance.emulator.post_json("/_emu/faults", &rule_));
        rule(json!({"path": spot, "status": 200, "body_size": 1_048_576, "count": 2}));
        rule(json!({"path": spot, "status": 500, "count": 3}));
        rule(json!({"path": spot, "hang": 5, "count": 1}));
        instance.emulator.post_json("/_emu/imds", &json!({"spot_instance_action": {"action": "stop"}}));
        instance.wait("the notice to run once the item answers", || instance.marks().len() == 1);
        (instance.marks(), instance.log())
    });
    assert_eq!(marks.len(), 1);
    assert!(log.contains("larger than 65536 bytes"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn auto_scaling_throttling_is_retried() {
    let (completions, statuses, log) = in_private_network(|| {
        let mut instance = Instance::new(&recorder("ready", "on.asg.launch", "true", ""));
        instance.emulator.post_json(
            "/_emu/faults",
            &json!({"service": "autoscaling", "action": "CompleteLifecycleAction", "count": 2}),
        );
        instance.start();
        instance.launch(json!([{"name": "ready-hook", "transition": "launching", "heartbeat_timeout": 300}]));
        let completions = instance.wait_completions(1);
        let requests = instance.emulator.get_json("/_emu/requests?kind=autoscaling");
        let statuses: Vec<u64> = requests
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["action"] == "CompleteLifecycleAction")
            .map(|r| r["status"].as_u64().unwrap_or_default())
            .collect();
        (completions, statuses, instance.log())
    });
    assert_eq!(api_completions(&completions), [("ready-hook".into(), "CONTINUE".into(), "api".into())], "{log}");
    assert_eq!(statuses, [400, 400, 200], "{log}");
}

#[test]
fn lifecycle_complete_maps_exit_codes_to_continue_and_abandon() {
    let (runs, completions) = in_private_network(|| {
        let instance = Instance::new(&recorder("unused", "on.rebalance", "true", ""));
        let complete = |code: &str| {
            instance.launch(json!([{"name": "ready-hook", "transition": "launching", "heartbeat_timeout": 300}]));
            instance
                .bootstrap()
                .args(["lifecycle", "complete", "-e", code, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                .run()
        };
        let ok = complete("0");
        // Nothing waits any more: counted as done, said on stderr.
        let again = instance
            .bootstrap()
            .args(["lifecycle", "complete", "--result", "continue", "--hook", "ready-hook", "--group", "web"])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .run();
        let failed = complete("1");
        (vec![ok, again, failed], instance.completions())
    });
    for run in &runs {
        run.code(0);
    }
    runs[1].stderr_is(&format!(
        "No lifecycle action of hook ready-hook waits on {INSTANCE} any more; nothing to complete\n"
    ));
    let results: Vec<String> = api_completions(&completions).into_iter().map(|c| c.1).collect();
    assert_eq!(results, ["CONTINUE", "ABANDON"]);
}

#[test]
fn lifecycle_complete_without_a_waiting_action_fails_with_a_message() {
    let run = in_private_network(|| {
        let instance = Instance::new(&recorder("unused", "on.rebalance", "true", ""));
        instance.group(json!([{"name": "ready-hook", "transition": "launching", "heartbeat_timeout": 300}]));
        instance
            .bootstrap()
            .args(["lifecycle", "complete", "-e", "0", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .run()
    });
    run.code(1).stderr_is(&format!("Error: instance {INSTANCE} is InService: no lifecycle action waits on it\n"));
}

/// `doctor`'s lifecycle checks, by id: (verdict, found, fix).
fn lifecycle_checks(instance: &Instance) -> std::collections::BTreeMap<String, (String, String, String)> {
    let run = instance.bootstrap().args(["doctor", "--format", "json", "-c"]).arg(&instance.dir).run();
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON: {e}\n{run}"));
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"].as_str().unwrap_or_default().starts_with("lifecycle."))
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (text("id"), (text("verdict"), text("found"), text("fix")))
        })
        .collect()
}

#[test]
fn status_and_doctor_show_the_hooks_the_group_and_the_last_event() {
    let (denied, before, status, text, after, heartbeats) = in_private_network(|| {
        let hooks = format!(
            "{}[ready]\ntriggers=on.asg.launch\naction=true\nlifecycle-hook=not-there\n",
            recorder("drain", "on.asg.terminate", "sleep 3", "timeout=600\n")
        );
        let mut instance = Instance::new(&hooks);
        instance.group(json!([{"name": "drain-hook", "transition": "terminating", "heartbeat_timeout": 4}]));
        instance.emulator.post_json(
            "/_emu/faults",
            &json!({"service": "autoscaling", "action": "DescribeLifecycleHooks", "code": "AccessDenied",
                    "message": "User is not authorized to perform: autoscaling:DescribeLifecycleHooks", "status": 403}),
        );
        let denied = lifecycle_checks(&instance);
        let before = lifecycle_checks(&instance);
        instance.start();
        instance.emulator.post_json("/_emu/autoscaling/terminate", &json!({"instance": INSTANCE}));
        instance.wait_completions(1);
        let status_json = || -> Value {
            let run = instance.bootstrap().args(["status", "--format", "json"]).run();
            serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON: {e}\n{run}"))
        };
        instance.wait("status to show the transition done", || {
            status_json()["lifecycle"]["last"]["transition"]["done"] == json!(true)
        });
        let status = status_json();
        let text = instance.bootstrap().arg("status").run().stdout;
        let after = lifecycle_checks(&instance);
        (denied, before, status, text, after, instance.heartbeats())
    });
    let check = |checks: &std::collections::BTreeMap<String, (String, String, String)>, id: &str| {
        checks.get(id).cloned().unwrap_or_else(|| panic!("no check {id}: {checks:#?}"))
    };
    // AccessDenied names the IAM action to allow.
    let (verdict, found, fix) = check(&denied, "lifecycle.hooks");
    assert_eq!(verdict, "failed", "{denied:#?}");
    assert!(found.contains("AccessDenied") && fix.contains("allow autoscaling:DescribeLifecycleHooks"), "{fix}");
    // Before any transition: the items answer, the group is found, the pinned hook is not there.
    let (verdict, found, _) = check(&before, "lifecycle.imds:autoscaling/target-lifecycle-state");
    assert_eq!((verdict.as_str(), found.as_str()), ("ok", "answers 404: no notice"));
    assert_eq!(check(&before, "lifecycle.imds:spot/instance-action").0, "skipped");
    let (verdict, found, _) = check(&before, "lifecycle.group");
    assert_eq!(verdict, "ok");
    assert!(found.contains("group web (from DescribeAutoScalingInstances)"), "{found}");
    let (verdict, found, _) = check(&before, "lifecycle.hooks:on.asg.terminate");
    assert_eq!(verdict, "ok");
    assert!(found.contains("drain-hook (heartbeat timeout 4 s"), "{found}");
    let (verdict, found, _) = check(&before, "lifecycle.hooks:on.asg.launch");
    assert_eq!(verdict, "warning");
    assert!(found.contains("no lifecycle hook of autoscaling:EC2_INSTANCE_LAUNCHING"), "{found}");
    let (verdict, found, fix) = check(&before, "lifecycle.pinned:ready");
    assert_eq!(verdict, "failed");
    assert!(
        found.contains("lifecycle-hook=not-there in ") && found.contains("hooks.d/lifecycle.conf, section [ready]")
    );
    assert!(found.contains("(it has: none)") && fix.contains("section [ready]"), "{found}");
    assert_eq!(check(&before, "lifecycle.last"), ("ok".into(), "no event handled yet".into(), String::new()));
    // After the drain: what cfn-hup found and did, from its record.
    let lifecycle = &status["lifecycle"];
    assert_eq!(lifecycle["hooks"][0]["section"], "drain", "{lifecycle:#}");
    assert_eq!(lifecycle["hooks"][0]["timeout"], 600);
    assert_eq!(lifecycle["hooks"][0]["on_failure"], "continue");
    assert_eq!(lifecycle["hooks"][1]["lifecycle_hook"], "not-there");
    assert_eq!(lifecycle["found"]["group"], "web");
    assert_eq!(lifecycle["found"]["group_from"], "DescribeAutoScalingInstances");
    assert_eq!(lifecycle["found"]["lifecycle_hooks"], json!(["drain-hook"]));
    assert_eq!(lifecycle["found"]["lifecycle_hooks_from"], "DescribeLifecycleHooks");
    let last = &lifecycle["last"];
    assert_eq!(last["result"], json!({"drain-hook": "CONTINUE"}));
    assert_eq!(last["transition"]["actions"]["drain"]["code"], 0);
    assert!(heartbeats >= 1);
    assert_eq!(last["transition"]["heartbeats"], heartbeats, "{last:#}");
    for line in [
        "lifecycle hooks: 2 configured",
        "[drain] on.asg.terminate: action echo",
        "timeout 600 s, on-failure continue",
        "lifecycle-hook not-there (pinned)",
        "lifecycle: group web (from DescribeAutoScalingInstances); lifecycle hooks drain-hook (from DescribeLifecycleHooks)",
        &format!("lifecycle: last event on.asg.terminate of {INSTANCE}"),
        "action [drain]: exit 0",
        &format!("heartbeats: {heartbeats}"),
        "lifecycle hook drain-hook: CONTINUE",
    ] {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }
    let (verdict, found, _) = check(&after, "lifecycle.last");
    assert_eq!(verdict, "ok");
    assert!(found.contains("on.asg.terminate seen ") && found.contains("completed: drain-hook CONTINUE"), "{found}");
    assert_eq!(check(&after, "lifecycle.imds:autoscaling/target-lifecycle-state").1, "answers Terminated");
}
