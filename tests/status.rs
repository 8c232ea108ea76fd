//! `cfn-bootstrap status` (issue 14, item 4) over cfn-init's run records: never ran, a
//! run that succeeded, one that failed (its command, error and output shown), one that
//! is running (and `--wait`), one killed mid-run (interrupted), the bounded history,
//! the records' modes and the JSON form. cfn-hup's records are tested in `hup.rs`.

mod common;
use common::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A sandbox to run cfn-init and `cfn-bootstrap status` in.
struct Host {
    sandbox: Sandbox,
}

impl Host {
    fn new() -> Host {
        Host { sandbox: Sandbox::new() }
    }

    fn metadata_file(&self, init: Value) -> PathBuf {
        let file = self.sandbox.path(&format!("{}.json", unique("metadata")));
        std::fs::write(&file, json!({"AWS::CloudFormation::Init": init}).to_string()).unwrap();
        file
    }

    fn init(&self, init: Value) -> Run {
        self.sandbox.cmd("cfn-init").arg(self.metadata_file(init)).run()
    }

    /// cfn-init started in the background.
    fn spawn_init(&self, init: Value) -> Child {
        let mut command = self.sandbox.cmd("cfn-init").arg(self.metadata_file(init)).cmd;
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
    }

    fn status(&self, args: &[&str]) -> Run {
        self.sandbox.cmd_via(binary(), "cfn-bootstrap").arg("status").args(args).run()
    }

    fn json(&self) -> Value {
        let run = self.status(&["--format", "json"]);
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON: {e}\n{run}"))
    }

    fn runs_dir(&self) -> PathBuf {
        self.sandbox.path("lib/cfn-init/runs")
    }

    fn records(&self) -> Vec<PathBuf> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.runs_dir()).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        names
    }

    /// A config `prepare` that takes over a second (so that the next config's start is
    /// recorded), then a config `wait` whose command waits until the file `name` in the
    /// sandbox exists.
    fn gate(&self, name: &str) -> (PathBuf, Value) {
        let gate = self.sandbox.path(name);
        let command = format!("echo waiting; while [ ! -e {} ]; do sleep 0.02; done", gate.display());
        let init = json!({
            "configSets": {"default": ["prepare", "wait"]},
            "prepare": {"commands": {"slow": {"command": "sleep 1.2"}}},
            "wait": {"commands": {"wait": {"command": command}}}
        });
        (gate, init)
    }

    /// Until the record says the run is in config `wait`.
    fn wait_running(&self) {
        wait_until(Duration::from_secs(20), "cfn-init's record says running in config wait", || {
            self.status(&[]).stdout.contains("now in: config wait (configSet default)\n")
        });
    }
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn never_ran_is_exit_2() {
    let host = Host::new();
    host.status(&[]).code(2).stderr_is("").stdout_has("status: not run\n").stdout_has("cfn-init: no run recorded in ");
    let json = host.json();
    assert_eq!(json["status"], "not run");
    assert_eq!(json["exit_code"], 2);
    assert_eq!(json["cfn_init"], Value::Null);
    assert_eq!(json["cfn_hup"], Value::Null);
    // Nothing to wait for: at once.
    let started = Instant::now();
    host.status(&["--wait"]).code(2);
    assert!(started.elapsed() < Duration::from_secs(5));
    host.status(&["--wait=soon"]).code(2).stdout_is("").stderr_has("invalid value 'soon'");
    host.status(&["--format", "xml"]).code(2).stderr_has("invalid value 'xml'");
    // Records that cannot be read are not "never ran".
    std::fs::create_dir_all(host.sandbox.path("lib/cfn-init")).unwrap();
    std::fs::write(host.runs_dir(), "").unwrap();
    host.status(&[])
        .code(1)
        .stdout_is("")
        .stderr_is(&format!("cfn-bootstrap status: cannot read {}: Not a directory\n", host.runs_dir().display()));
}

#[test]
fn a_successful_run_is_recorded_privately_with_each_config_and_section() {
    let host = Host::new();
    let target = host.sandbox.path("app.conf");
    let init = json!({
        "configSets": {"default": ["setup", "app"]},
        "setup": {"files": {target.to_str().unwrap(): {"content": "x"}}, "commands": {"a": {"command": "true"}}},
        "app": {"commands": {"slow": {"command": "sleep 0.3"}}}
    });
    let file = host.metadata_file(init);
    host.sandbox.cmd("cfn-init").arg(&file).run().code(0);

    let run = host.status(&[]);
    run.code(0).stderr_is("").stdout_has("status: done\n");
    run.stdout_has(&format!("from file {}, configSets default, exit 0\n", file.display()));
    let long = host.status(&["--long"]);
    long.code(0);
    for line in [
        "ok       setup (configSet default)",
        "ok         files",
        "ok         commands",
        "ok       app (configSet default)",
    ] {
        long.stdout_has(line);
    }
    assert!(!long.stdout.contains("packages"), "a section the config lacks is not listed\n{long}");

    let records = host.records();
    assert_eq!(records.len(), 1);
    assert_eq!(mode(&records[0]), 0o600);
    assert_eq!(mode(&host.runs_dir()), 0o700);

    let json = host.json();
    assert_eq!(json["status"], "done");
    assert_eq!(json["exit_code"], 0);
    let record = &json["cfn_init"];
    assert_eq!(record, &serde_json::from_str::<Value>(&read(&records[0])).unwrap(), "the record as stored");
    assert_eq!(record["outcome"], "ok");
    assert_eq!(record["exit_code"], 0);
    assert_eq!(record["source"], json!({"kind": "file", "path": file.to_str().unwrap()}));
    assert_eq!(record["configsets"], json!(["default"]));
    assert_eq!(record["failure"], Value::Null);
    let configs = record["configs"].as_array().unwrap();
    let names: Vec<(&str, &str)> =
        configs.iter().map(|c| (c["configset"].as_str().unwrap(), c["config"].as_str().unwrap())).collect();
    assert_eq!(names, [("default", "setup"), ("default", "app")]);
    let sections: Vec<&str> =
        configs[0]["sections"].as_array().unwrap().iter().map(|s| s["section"].as_str().unwrap()).collect();
    assert_eq!(sections, ["files", "commands"]);
    // The timings are the run's: the sleeping command's section took its 0.3 s, and
    // everything fits in the run's time.
    let slow = configs[1]["sections"][0]["seconds"].as_f64().unwrap();
    assert!((0.3..5.0).contains(&slow), "{slow}");
    let total = record["seconds"].as_f64().unwrap();
    assert!(total >= configs[1]["seconds"].as_f64().unwrap() && total >= slow, "{record}");
    assert_eq!(record["pid"].as_u64().map(|_| ()), Some(()));
    assert!(record["started"].as_str().unwrap() < record["ended"].as_str().unwrap());
}

#[test]
fn a_failed_run_shows_the_command_its_error_and_the_end_of_its_output() {
    let host = Host::new();
    // The last line is cut at 400 characters, inside its URL's password.
    let output = "for i in $(seq 1 30); do echo line $i; done; echo see https://user:pw@example.com/x; \
                  printf '%0380d https://user:secretpw@example.com/x\\n' 0; exit 3";
    let init = json!({
        "configSets": {"default": ["first", "second"]},
        "first": {"commands": {"ok": {"command": "echo fine"}}},
        "second": {"files": {"/dev/null/never": {"content": "x"}}}
    });
    host.init(init).code(1);
    host.status(&[]).code(1).stdout_has("status: failed\n").stdout_has("failed in config second, section files: ");

    host.init(json!({"config": {"commands": {"01_ok": {"command": "echo fine"}, "02_fails": {"command": output}}}}))
        .code(1)
        .stderr_is("Error occurred during build: Command 02_fails failed\n");
    let run = host.status(&[]);
    run.code(1)
        .stdout_has("status: failed\n")
        .stdout_has("failed in config config, section commands: Command 02_fails failed\n");
    assert!(!run.stdout.contains("line 30"), "the output is for --long\n{run}");
    let long = host.status(&["--long"]);
    long.code(1).stdout_has("output of the failed command (last 20 lines):\n");
    // The last lines, the URL's credentials redacted as in the logs (SEC-02).
    long.stdout_has("    | line 13\n")
        .stdout_has("    | line 30\n")
        .stdout_has("    | see https://REDACTED@example.com/x\n");
    assert!(!long.stdout.contains("| line 12\n") && !long.stdout.contains("pw@"), "{long}");
    assert!(!long.stdout.contains("secret"), "{long}");
    long.stdout_has("earlier runs:\n");

    let json = host.json();
    assert_eq!(json["status"], "failed");
    assert_eq!(json["exit_code"], 1);
    let failure = &json["cfn_init"]["failure"];
    assert_eq!(failure["config"], "config");
    assert_eq!(failure["configset"], "default");
    assert_eq!(failure["section"], "commands");
    assert_eq!(failure["error"], "Command 02_fails failed");
    let tail = failure["output_tail"].as_array().unwrap();
    assert_eq!(tail.len(), 20);
    assert_eq!(tail[18], "see https://REDACTED@example.com/x");
    assert_eq!(tail[19], format!("{} https://REDACTED@ex", "0".repeat(380)));
    assert_eq!(json["cfn_init"]["configs"][0]["sections"][0]["outcome"], "failed");
    assert_eq!(json["history"].as_array().unwrap().len(), 2);
    assert_eq!(json["history"][1]["failure"]["section"], "files");

    // A run that fails before its build: the error it printed.
    host.sandbox.cmd("cfn-init").arg(host.sandbox.path("missing.json")).run().code(1);
    let json = host.json();
    assert_eq!(json["status"], "failed");
    let error = json["cfn_init"]["failure"]["error"].as_str().unwrap();
    assert!(error.contains("missing.json"), "{error}");
    assert_eq!(json["cfn_init"]["failure"]["config"], Value::Null);
}

#[test]
fn a_running_cfn_init_is_running_and_wait_returns_when_it_ends_or_times_out() {
    let host = Host::new();
    let (gate, init) = host.gate("go");
    let mut child = host.spawn_init(init);
    host.wait_running();
    let run = host.status(&[]);
    run.code(2).stdout_has("cfn-init: running since ").stdout_has(&format!("(pid {})", child.id()));
    run.stdout_has("status: running\n");
    assert_eq!(host.json()["status"], "running");

    let timed_out = host.status(&["--wait=1"]);
    timed_out.code(2).stdout_has("status: running\n");
    assert!(timed_out.elapsed >= Duration::from_secs(1) && timed_out.elapsed < Duration::from_secs(10), "{timed_out}");

    let waiter = std::thread::spawn({
        let status = host.sandbox.cmd_via(binary(), "cfn-bootstrap").args(["status", "--wait"]);
        move || status.run()
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiter.is_finished(), "--wait returned while cfn-init runs");
    std::fs::write(&gate, "").unwrap();
    let waited = waiter.join().unwrap();
    waited.code(0).stdout_has("status: done\n");
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_cfn_init_killed_mid_run_is_interrupted() {
    let host = Host::new();
    let (_gate, init) = host.gate("never");
    let mut child = host.spawn_init(init);
    host.wait_running();
    child.kill().unwrap();
    child.wait().unwrap();
    let run = host.status(&[]);
    run.code(1).stdout_has("status: interrupted\n").stdout_has("last in: config wait (configSet default)\n");
    let started = Instant::now();
    host.status(&["--wait"]).code(1);
    assert!(started.elapsed() < Duration::from_secs(5), "nothing to wait for");
    let json = host.json();
    assert_eq!(json["status"], "interrupted");
    assert_eq!(json["cfn_init"]["outcome"], "running", "the record as the killed run left it");
    // The next run is the last.
    host.init(json!({"config": {}})).code(0);
    host.status(&[]).code(0).stdout_has("status: done\n");
    host.status(&["--long"]).stdout_has(" interrupted ");
}

#[test]
fn only_the_last_ten_runs_are_kept() {
    let host = Host::new();
    for _ in 0..12 {
        host.init(json!({"config": {}})).code(0);
    }
    let records = host.records();
    assert_eq!(records.len(), 10, "{records:?}");
    let json = host.json();
    let history = json["history"].as_array().unwrap();
    assert_eq!(history.len(), 10);
    assert!(history.windows(2).all(|w| w[0]["started"].as_str() > w[1]["started"].as_str()), "newest first");
}

#[test]
fn the_source_is_recorded_for_stdin_and_for_a_stack_resource() {
    let host = Host::new();
    let metadata = json!({"AWS::CloudFormation::Init": {"config": {}}}).to_string();
    host.sandbox.cmd("cfn-init").arg("-").stdin(metadata.as_bytes()).run().code(0);
    assert_eq!(host.json()["cfn_init"]["source"], json!({"kind": "stdin"}));
    host.status(&[]).code(0).stdout_has(", from stdin, configSets default, exit 0\n");

    let emulator = Emulator::shared();
    let stack = emulator
        .create_stack(&unique("status"), &instance_template(&json!({"AWS::CloudFormation::Init": {"one": {}}})));
    host.sandbox
        .cmd("cfn-init")
        .args(["-s", &stack, "-r", "Instance", "--region", "us-east-1", "-c", "one"])
        .with_keys(&emulator)
        .run()
        .code(1);
    let json = host.json();
    let record = &json["cfn_init"];
    assert_eq!(
        record["source"],
        json!({"kind": "stack", "stack": stack, "resource": "Instance", "region": "us-east-1", "url": emulator.url})
    );
    assert_eq!(record["configsets"], json!(["one"]));
    assert_eq!(record["failure"]["error"], "Error: no ConfigSet named one exists");
    host.status(&[]).code(1).stdout_has(&format!(
        ", from stack {stack}, resource Instance, region us-east-1 via {}, configSets one, exit 1\n",
        emulator.url
    ));
}

/// Issue 31, F10: a FIFO in place of cfn-hup's activity.json held `status` forever, and
/// the file linked to /dev/zero was read until memory ran out. Either is refused at once
/// with a message naming the file; cfn-init's part is still shown, with its exit status.
#[test]
fn a_fifo_or_an_endless_file_in_place_of_cfn_hups_activity_is_refused_naming_it() {
    let host = Host::new();
    let activity = host.sandbox.path("lib/cfn-hup/data/activity.json");
    std::fs::create_dir_all(activity.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo").arg(&activity).status().expect("run mkfifo");
    assert!(status.success());
    let status = |args: &[&str]| {
        host.sandbox.cmd_via(binary(), "cfn-bootstrap").arg("status").args(args).run_within(Duration::from_secs(30))
    };
    for args in [&[][..], &["--long"][..]] {
        let run = status(args);
        assert!(run.elapsed < Duration::from_secs(5), "took {:?}\n{run}", run.elapsed);
        run.code(2).stdout_has("status: not run\n").stderr_is(&format!(
            "cfn-bootstrap status: cannot read {}: it is a FIFO, not a regular file\n",
            activity.display()
        ));
    }
    std::fs::remove_file(&activity).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &activity).unwrap();
    let run = status(&["--format", "json"]);
    assert!(run.elapsed < Duration::from_secs(5), "took {:?}\n{run}", run.elapsed);
    let json: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON: {e}\n{run}"));
    assert_eq!(json["cfn_hup"], Value::Null);
    run.code(2).stderr_is(&format!(
        "cfn-bootstrap status: cannot read {}: it is a symbolic link, not the regular file the tools write\n",
        activity.display()
    ));
}

/// Terminal controls in what status shows from its records — cfn-hup's activity record
/// (hook names, errors, times) and a failed command's output — are shown escaped, in the
/// summary and with --long (issue 31, F9); the JSON form keeps the data as it is.
#[test]
fn terminal_controls_in_the_records_are_shown_escaped() {
    use common::terminal::*;
    let host = Host::new();
    let command = "printf 'out\\033[2J\\033]0;owned\\007\\n'; exit 3";
    host.init(json!({"config": {"commands": {"01": {"command": command}}}})).code(1);
    let activity = host.sandbox.path("lib/cfn-hup/data/activity.json");
    std::fs::create_dir_all(activity.parent().unwrap()).unwrap();
    std::fs::write(&activity, hostile_activity().to_string()).unwrap();
    for args in [&[][..], &["--long"]] {
        let run = host.status(args);
        run.code(1);
        assert_no_terminal_controls(&run.stdout, &format!("status {args:?}, stdout"));
        assert_no_terminal_controls(&run.stderr, &format!("status {args:?}, stderr"));
        run.stdout_has(&format!("cfn-hup: hook hook{HOSTILE_SHOWN} failing"));
        run.stdout_has(&format!("cfn-hup: last error 2026-01-01T00:00:00.000Z{HOSTILE_SHOWN}: boom{HOSTILE_SHOWN}\n"));
    }
    let long = host.status(&["--long"]);
    long.stdout_has("    | out\\x1b[2J\\x1b]0;owned\\x07\n");
    long.stdout_has(&format!(" ran{HOSTILE_SHOWN}: error{HOSTILE_SHOWN}\n"));
    assert_eq!(host.json()["cfn_hup"]["failing_hooks"][0]["hook"], format!("hook{HOSTILE}"));
}
