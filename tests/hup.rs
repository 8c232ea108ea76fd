//! cfn-hup end to end against the emulator (SPEC §14, §11.2): configuration and its
//! errors, hook paths and triggers, actions and their environment, `runas`, the state
//! file (including one written by the reference), and the service modes — daemon with
//! pid file, SIGHUP reload and SIGTERM, foreground, the polling cadence and how outages
//! are logged. Daemons use `CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS` (a test aid) for a short
//! interval and are killed by a guard even when a test fails.

mod common;
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const INTERVAL_VAR: &str = "CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS";

/// A cfn-hup set-up: sandbox, configuration directory, a stack, and a file actions append to.
struct Hup {
    sandbox: Sandbox,
    emulator: Emulator,
    stack: String,
    dir: PathBuf,
    creds: PathBuf,
}

impl Hup {
    fn new(metadata: &Value) -> Hup {
        Hup::with_template(&instance_template(metadata))
    }

    fn with_template(template: &Value) -> Hup {
        Hup::on(Emulator::shared(), template)
    }

    fn on(emulator: Emulator, template: &Value) -> Hup {
        Hup::built(emulator, |_| template.clone())
    }

    /// A stack whose template names paths in the sandbox.
    fn built(emulator: Emulator, template: impl FnOnce(&Sandbox) -> Value) -> Hup {
        let sandbox = Sandbox::new();
        let stack = emulator.create_stack(&unique("hup"), &template(&sandbox));
        let dir = sandbox.path("conf");
        std::fs::create_dir_all(dir.join("hooks.d")).unwrap();
        let creds =
            sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
        let hup = Hup { sandbox, emulator, stack, dir, creds };
        hup.main_conf("");
        hup
    }

    fn main_conf(&self, extra: &str) {
        let text = format!(
            "[main]\nstack={}\ncredential-file={}\nurl={}\n{extra}",
            self.stack,
            self.creds.display(),
            self.emulator.url
        );
        std::fs::write(self.dir.join("cfn-hup.conf"), text).unwrap();
    }

    fn hooks(&self, text: &str) {
        std::fs::write(self.dir.join("hooks.conf"), text).unwrap();
    }

    /// An action that appends `<tag>` and the CFN_* environment to the marks file.
    fn recorder(&self, tag: &str) -> String {
        let marks = self.marks_path();
        format!("echo \"{tag} $(env | grep -e ^CFN_OLD_ -e ^CFN_NEW_ | sort | tr '\\n' ' ')\" >> {}", marks.display())
    }

    fn marks_path(&self) -> PathBuf {
        self.sandbox.path("marks")
    }

    fn marks(&self) -> Vec<String> {
        std::fs::read_to_string(self.marks_path())
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    fn cmd(&self) -> TestCommand {
        self.sandbox.cmd("cfn-hup").arg("-c").arg(&self.dir)
    }

    fn once(&self) -> Run {
        let run = self.cmd().arg("--no-daemon").run();
        run.code(0);
        run
    }

    fn update(&self, metadata: &Value) {
        self.update_template(&instance_template(metadata));
    }

    fn update_template(&self, template: &Value) {
        self.emulator.update_stack(&self.stack, template);
    }

    fn log(&self) -> String {
        self.sandbox.log("cfn-hup.log")
    }

    fn db_path(&self) -> PathBuf {
        self.sandbox.path("lib/cfn-hup/data/metadata_db.json")
    }

    fn pid_path(&self) -> PathBuf {
        self.sandbox.path("run/cfn-hup.pid")
    }

    fn describe_calls(&self) -> Vec<Value> {
        self.emulator
            .requests_for(&self.stack)
            .into_iter()
            .filter(|r| {
                r["query"]["Action"] == "DescribeStackResource" || r["form"]["Action"] == "DescribeStackResource"
            })
            .collect()
    }
}

fn log_lines_without_time(log: &str) -> Vec<String> {
    let stamped = |l: &str| l.len() > 24 && l.as_bytes()[4] == b'-' && l.as_bytes()[23] == b' ';
    log.lines().map(|l| if stamped(l) { l[24..].to_string() } else { l.to_string() }).collect()
}

fn pid_alive(pid: i32) -> bool {
    // A zombie (exited, not yet reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) != Some("Z"))
}

/// Kills every cfn-hup a test started, on success and on failure alike: the pid named
/// in the pid file when it is dropped, and the pids registered with it.
struct Reaper {
    pid_file: PathBuf,
    pids: std::cell::RefCell<Vec<i32>>,
    children: std::cell::RefCell<Vec<Child>>,
}

impl Reaper {
    fn new(pid_file: &Path) -> Reaper {
        Reaper { pid_file: pid_file.to_path_buf(), pids: Default::default(), children: Default::default() }
    }
    fn watch(&self, pid: i32) {
        self.pids.borrow_mut().push(pid);
    }
    fn adopt(&self, child: Child) -> i32 {
        let pid = child.id() as i32;
        self.children.borrow_mut().push(child);
        pid
    }
    fn wait_child(&self, pid: i32, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            for child in self.children.borrow_mut().iter_mut() {
                if child.id() as i32 == pid
                    && let Ok(Some(status)) = child.try_wait()
                {
                    return Some(status);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        let mut pids = self.pids.borrow().clone();
        if let Ok(text) = std::fs::read_to_string(&self.pid_file)
            && let Ok(pid) = text.trim().parse::<i32>()
        {
            pids.push(pid);
        }
        for pid in pids {
            if pid > 1 && pid != std::process::id() as i32 {
                // SAFETY: killing a process this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        for child in self.children.borrow_mut().iter_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The pid of a process that has exited and been reaped (for stale pid files).
fn exited_pid() -> u32 {
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    pid
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: signalling a process this test started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

/// Starts cfn-hup in the foreground (`-F`) with a short interval, owned by the reaper.
fn start_foreground(hup: &Hup, reaper: &Reaper, interval: &str, extra: &[&str]) -> i32 {
    let mut cmd = hup.cmd().arg("-F").args(extra).env(INTERVAL_VAR, interval);
    cmd.cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    reaper.adopt(cmd.cmd.spawn().expect("start cfn-hup -F"))
}

// ---------------------------------------------------------------------------------------

/// The seed workflow: a post.update hook on the Init metadata runs cfn-init with the
/// `update` configSet, exactly once per change; a restarted daemon does not re-run it
/// (HUP-DET-01, HUP-DET-03, HUP-ACT-01, HUP-RUN-01).
#[test]
fn seed_workflow_runs_cfn_init_once_per_change_and_survives_a_restart() {
    let metadata = |content: &str, target: &Path| {
        json!({"AWS::CloudFormation::Init": {
            "configSets": {"update": ["write"]},
            "write": {"files": {target.to_str().unwrap(): {"content": content}}}
        }})
    };
    let hup = Hup::new(&json!({}));
    let target = hup.sandbox.path("app.conf");
    hup.update(&metadata("version 1", &target));
    let cfn_init = format!(
        "{} -s {} -r Instance --url {} --access-key {ACCESS_KEY} --secret-key {SECRET_KEY} --configsets update",
        hup.sandbox.path("bin/cfn-init").display(),
        hup.stack,
        hup.emulator.url
    );
    hup.hooks(&format!(
        "[cfn-auto-reloader-hook]\ntriggers=post.update\npath=Resources.Instance.Metadata.AWS::CloudFormation::Init\naction={} && {}\nrunas=root\n",
        hup.recorder("reload"),
        cfn_init
    ));

    hup.once();
    assert!(hup.marks().is_empty(), "the first pass only records the baseline: {:?}", hup.marks());
    assert!(!target.exists());
    hup.once();
    assert!(hup.marks().is_empty(), "no change, no action");

    hup.update(&metadata("version 2", &target));
    let run = hup.once();
    let marks = hup.marks();
    assert_eq!(marks.len(), 1, "{marks:?}\n{run}");
    assert!(marks[0].contains(r#"CFN_NEW_METADATA={"configSets": {"update": ["write"]}"#), "{marks:?}");
    assert!(
        marks[0].contains(r#""content": "version 1"}}}} "#.trim_end()) && marks[0].contains("CFN_OLD_METADATA="),
        "{marks:?}"
    );
    assert_eq!(read(&target), "version 2");
    let log = log_lines_without_time(&hup.log());
    for line in [
        "[INFO] Data has changed from previous state; action for cfn-auto-reloader-hook will be run",
        "[INFO] Running action for cfn-auto-reloader-hook",
    ] {
        assert!(log.iter().any(|l| l == line), "missing {line:?} in\n{}", hup.log());
    }
    hup.once();
    assert_eq!(hup.marks().len(), 1, "a pass with no change runs nothing");

    // A daemon started afterwards reads the state and does not run the action again.
    let reaper = Reaper::new(&hup.pid_path());
    let pid = start_foreground(&hup, &reaper, "0.3", &[]);
    wait_until(Duration::from_secs(20), "three daemon passes", || {
        hup.log().matches("[INFO] cfn-hup started").count() == 1 && hup.describe_calls().len() >= 8
    });
    signal(pid, libc::SIGTERM);
    assert!(reaper.wait_child(pid, Duration::from_secs(10)).is_some_and(|s| s.success()));
    assert_eq!(hup.marks().len(), 1, "{:?}", hup.marks());
}

/// A failing action leaves the state alone and runs again next pass, then is recorded
/// once it succeeds (HUP-DET-03).
#[test]
fn a_failing_action_is_retried_next_pass_and_then_recorded() {
    let hup = Hup::new(&json!({"app": {"port": 80}}));
    let gate = hup.sandbox.path("gate");
    hup.hooks(&format!(
        "[flaky]\ntriggers=post.add\npath=Resources.Instance.Metadata.app.port\naction=test -e {} || {{ echo not yet; exit 3; }}; {}\n",
        gate.display(),
        hup.recorder("flaky")
    ));
    hup.cmd().args(["--no-daemon", "-v"]).run().code(0);
    let log = log_lines_without_time(&hup.log());
    assert!(
        log.contains(&"[WARNING] Action for flaky exited with 3; will retry on next iteration".to_string()),
        "{}",
        hup.log()
    );
    assert!(log.contains(&"[DEBUG] Action for flaky output: not yet".to_string()), "{}", hup.log());
    let db = std::fs::read_to_string(hup.db_path()).unwrap_or_default();
    assert!(!db.contains("flaky|"), "no state after a failure: {db}");

    hup.once();
    assert!(hup.marks().is_empty());
    assert_eq!(hup.log().matches("exited with 3").count(), 2, "retried on the next pass");

    std::fs::write(&gate, "").unwrap();
    hup.once();
    assert_eq!(hup.marks(), ["flaky CFN_NEW_METADATA=80"]);
    hup.once();
    assert_eq!(hup.marks().len(), 1, "recorded after success");
    let db: Value = serde_json::from_str(&read(&hup.db_path())).unwrap();
    assert_eq!(db["flaky|Resources.Instance.Metadata.app.port"], json!(80));
}

/// cfn-hup's activity record (issue 14, item 4): each pass, the last error and each hook
/// run (its exit code and time), in `data/activity.json` (0600), as `cfn-bootstrap
/// status` shows them — from `--no-daemon` and from the service's passes.
#[test]
fn passes_errors_and_hook_runs_are_recorded_for_status() {
    use std::os::unix::fs::PermissionsExt;
    let hup = Hup::new(&json!({"app": {"port": 80}}));
    let gate = hup.sandbox.path("gate");
    hup.hooks(&format!(
        "[flaky]\ntriggers=post.add,post.update\npath=Resources.Instance.Metadata.app.port\naction=test -e {} || exit 3; {}\n",
        gate.display(),
        hup.recorder("flaky")
    ));
    let status = || hup.sandbox.cmd_via(binary(), "cfn-bootstrap").arg("status");
    let activity = || -> Value {
        let run = status().args(["--format", "json"]).run();
        let json: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{run}"));
        json["cfn_hup"].clone()
    };
    hup.once();
    std::fs::write(&gate, "").unwrap();
    hup.once();
    let path = hup.sandbox.path("lib/cfn-hup/data/activity.json");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let recorded = activity();
    assert_eq!(recorded, serde_json::from_str::<Value>(&read(&path)).unwrap());
    assert_eq!(recorded["last_pass"]["outcome"], "ok", "{recorded:#}");
    assert_eq!(recorded["last_pass"]["actions_run"], 1);
    assert_eq!(recorded["last_error"]["message"], "Action for flaky exited with 3");
    let runs = recorded["hook_runs"].as_array().unwrap();
    let exits: Vec<(&str, i64)> =
        runs.iter().map(|r| (r["hook"].as_str().unwrap(), r["exit_code"].as_i64().unwrap())).collect();
    assert_eq!(exits, [("flaky", 3), ("flaky", 0)]);
    assert!(runs.iter().all(|r| r["seconds"].as_f64().is_some_and(|s| (0.0..10.0).contains(&s))), "{runs:?}");
    assert!(runs[0]["started"].as_str() < runs[1]["started"].as_str());

    // cfn-init never ran here: status says so (exit 2) and shows cfn-hup's activity.
    let run = status().run();
    run.code(2)
        .stdout_has("status: not run\n")
        .stdout_has("cfn-hup: last pass ")
        .stdout_has(": ok (1 action(s) run, 0 failed)\n");
    run.stdout_has(": Action for flaky exited with 3\n");
    let long = status().arg("--long").run();
    long.stdout_has("cfn-hup hook runs (newest last):\n").stdout_has(" flaky: exit 3\n").stdout_has(" flaky: exit 0\n");

    // The service's passes record too.
    let reaper = Reaper::new(&hup.pid_path());
    let pid = start_foreground(&hup, &reaper, "0.2", &[]);
    hup.update(&json!({"app": {"port": 81}}));
    wait_until(Duration::from_secs(20), "the service's hook run recorded", || {
        activity()["hook_runs"].as_array().is_some_and(|runs| runs.len() == 3)
    });
    signal(pid, libc::SIGTERM);
    assert!(reaper.wait_child(pid, Duration::from_secs(10)).is_some_and(|s| s.success()));
    assert_eq!(activity()["hook_runs"][2]["exit_code"], 0);
    assert_eq!(hup.marks().len(), 2, "{:?}", hup.marks());
}

/// The pass numbers at which a back-off test's action ran, with the value it ran for:
/// the action writes `<pass> <value>`, the pass being cfn-hup's own count — one more
/// than the "Next pass in" lines its log has while the pass runs.
fn runs_by_pass(hup: &Hup) -> Vec<(usize, String)> {
    hup.marks()
        .iter()
        .map(|l| {
            let (pass, value) = l.split_once(' ').unwrap_or_else(|| panic!("{l:?}"));
            (pass.parse().unwrap_or_else(|_| panic!("{l:?}")), value.to_string())
        })
        .collect()
}

fn passes_done(hup: &Hup) -> usize {
    hup.log().matches("[DEBUG] Next pass in ").count()
}

/// A hook whose action always fails, writing the pass it runs at and its value.
fn always_failing(hup: &Hup) {
    hup.hooks(&format!(
        "[stuck]\ntriggers=post.add,post.update\npath=Resources.Instance.Metadata.v\n\
         action=echo \"$(( $(grep -c 'Next pass in' {log}) + 1 )) $CFN_NEW_METADATA\" >> {marks}; exit 1\n",
        log = hup.sandbox.path("log/cfn-hup.log").display(),
        marks = hup.marks_path().display()
    ));
}

fn activity_of(hup: &Hup) -> Value {
    let run = hup.sandbox.cmd_via(binary(), "cfn-bootstrap").args(["status", "--format", "json"]).run();
    let json: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{run}"));
    json["cfn_hup"].clone()
}

/// An action that keeps failing for one value is tried at the first three passes, then
/// 2, 4, 8 … intervals apart (a deliberate difference: the reference tries at every
/// pass); the log says when the next try is due; a new value runs at the very next pass,
/// with a series of its own; `status` shows the failing hook (text, --long, JSON); a
/// restart keeps the back-off and says so.
#[test]
fn an_action_failing_for_one_value_backs_off_and_a_new_value_runs_at_once() {
    let hup = Hup::new(&json!({"v": "A"}));
    always_failing(&hup);
    let reaper = Reaper::new(&hup.pid_path());
    let pid = start_foreground(&hup, &reaper, "0.2", &["-v"]);
    wait_until(Duration::from_secs(60), "20 passes", || passes_done(&hup) >= 20);
    let at_a: Vec<usize> = runs_by_pass(&hup).iter().filter(|(_, v)| v == "A").map(|(p, _)| *p).collect();
    assert_eq!(at_a, [1, 2, 3, 5, 9, 17], "{}", hup.log());
    let log = log_lines_without_time(&hup.log());
    let warnings: Vec<&String> =
        log.iter().filter(|l| l.starts_with("[WARNING] Action for stuck exited with 1")).collect();
    assert_eq!(warnings[0], "[WARNING] Action for stuck exited with 1; will retry on next iteration");
    assert_eq!(warnings[1], warnings[0]);
    for (line, tries, wait) in
        [(warnings[2], 3, "0.4 seconds"), (warnings[3], 4, "0.8 seconds"), (warnings[4], 5, "2 seconds")]
    {
        let prefix = format!("[WARNING] Action for stuck exited with 1; failed {tries} times in a row; next try at ");
        let time = line.strip_prefix(&prefix).and_then(|rest| rest.strip_suffix(&format!(", in {wait}")));
        assert!(time.is_some_and(|t| t.len() == 19 && t.as_bytes()[10] == b' '), "{line}");
    }

    // A new value while backing off (the next try for A is at pass 33): its action runs
    // at the first pass that reads it — one running during the update, or the next one
    // after it.
    let before = passes_done(&hup);
    hup.update(&json!({"v": "B"}));
    let after = passes_done(&hup);
    wait_until(Duration::from_secs(20), "the action for B", || runs_by_pass(&hup).iter().any(|(_, v)| v == "B"));
    let first_b = runs_by_pass(&hup).iter().find(|(_, v)| v == "B").unwrap().0;
    assert!(
        (before + 1..=after + 2).contains(&first_b),
        "B ran at pass {first_b}; {before} passes were done before the update, {after} after it"
    );
    assert!(hup.log().contains(
        "[INFO] The value of Resources.Instance.Metadata.v changed while its action was backing off; it runs at once"
    ));
    // Its own series: three passes in a row, then 2 intervals.
    wait_until(Duration::from_secs(30), "5 more passes", || passes_done(&hup) >= first_b + 5);
    signal(pid, libc::SIGTERM);
    assert!(reaper.wait_child(pid, Duration::from_secs(10)).is_some_and(|s| s.success()));
    let at_b: Vec<usize> = runs_by_pass(&hup).iter().filter(|(_, v)| v == "B").map(|(p, _)| *p).collect();
    assert_eq!(at_b[..4], [first_b, first_b + 1, first_b + 2, first_b + 4], "{at_b:?}");
    assert!(at_b.len() == 4 || at_b[4] == first_b + 8, "{at_b:?}");
    assert_eq!(runs_by_pass(&hup).iter().filter(|(_, v)| v == "A").count(), 6, "A is not tried again");

    // status: the hook, its tries, since when, its next try.
    let activity = activity_of(&hup);
    let failing = &activity["failing_hooks"];
    assert_eq!(failing.as_array().map(Vec::len), Some(1), "{failing:#}");
    let hook = &failing[0];
    assert_eq!((hook["hook"].as_str(), hook["path"].as_str()), (Some("stuck"), Some("Resources.Instance.Metadata.v")));
    let tries = tries_of_b(&hup, &activity);
    assert_eq!(hook["tries"].as_u64(), Some(tries as u64), "{hook:#}");
    assert_eq!(hook["last_error"], "exit 1");
    assert!(
        hook["since"].as_str() < hook["last_try"].as_str() && hook["last_try"].as_str() < hook["next_try"].as_str()
    );
    assert_eq!(hook["value_sha256"].as_str().map(str::len), Some(64));
    let skip = hook["passes_to_skip"].as_u64().unwrap();
    let status = || hup.sandbox.cmd_via(binary(), "cfn-bootstrap").arg("status");
    let next = if skip == 0 {
        "at the next pass".to_string()
    } else {
        format!(
            "about {} (after {skip} pass{} left out)",
            hook["next_try"].as_str().unwrap(),
            if skip == 1 { "" } else { "es" }
        )
    };
    status().run().stdout_has(&format!(
        "cfn-hup: hook stuck failing: {tries} tries in a row since {}, last exit 1; next try {next}\n",
        hook["since"].as_str().unwrap()
    ));
    status().arg("--long").run()
        .stdout_has("\ncfn-hup failing hooks (a new value is tried at the next pass):\n  stuck (Resources.Instance.Metadata.v)\n")
        .stdout_has(&format!("    tries:    {tries} tries in a row since {}\n", hook["since"].as_str().unwrap()))
        .stdout_has(&format!("    last try: {}: exit 1\n", hook["last_try"].as_str().unwrap()))
        .stdout_has(&format!("    next try: {next}\n"));

    // A restart keeps the tries (and the time of the next try), and says so.
    let pid = start_foreground(&hup, &reaper, "0.2", &["-v"]);
    wait_until(Duration::from_secs(30), "one more try for B, recorded", || {
        activity_of(&hup)["failing_hooks"][0]["tries"].as_u64().is_some_and(|t| t > tries as u64)
    });
    signal(pid, libc::SIGTERM);
    assert!(reaper.wait_child(pid, Duration::from_secs(10)).is_some_and(|s| s.success()));
    assert!(
        hup.log().contains(&format!("[INFO] Action for stuck failed {tries} times in a row before cfn-hup started; ")),
        "{}",
        hup.log()
    );
    let activity = activity_of(&hup);
    let tried = tries_of_b(&hup, &activity);
    assert!(tried > tries, "not reset by the restart");
    assert_eq!(activity["failing_hooks"][0]["tries"].as_u64(), Some(tried as u64), "{activity:#}");
}

/// The tries of B the back-off counts: every run of the action for B, but one that
/// SIGTERM cut short (its mark written, its exit not 1), which is no try.
fn tries_of_b(hup: &Hup, activity: &Value) -> usize {
    let runs = runs_by_pass(hup).iter().filter(|(_, v)| v == "B").count();
    let last_exit = activity["hook_runs"].as_array().and_then(|r| r.last()).map(|r| r["exit_code"].clone());
    if last_exit == Some(json!(1)) { runs } else { runs - 1 }
}

/// `--no-daemon` runs a due action at every call, however often it failed before (as
/// the reference does), and leaves the service's record of failing hooks alone; it does
/// not check `max-backoff`, which only the service uses.
#[test]
fn without_a_daemon_each_call_runs_the_failing_action() {
    let hup = Hup::new(&json!({"v": "A"}));
    always_failing(&hup);
    hup.main_conf("max-backoff=0\n");
    for _ in 0..4 {
        hup.once();
    }
    assert_eq!(hup.marks().len(), 4, "{:?}", hup.marks());
    assert_eq!(hup.log().matches("[WARNING] Action for stuck exited with 1; will retry on next iteration").count(), 4);
    assert!(!hup.log().contains("times in a row"), "{}", hup.log());
    assert_eq!(activity_of(&hup)["failing_hooks"], json!([]));
}

/// post.add and post.remove on nested paths; every path kind and its variable
/// (HUP-DET-01, HUP-ACT-01, HUP-PATH-01); falsy values count as values (BUG-FALSY fixed).
#[test]
fn post_add_and_post_remove_on_nested_paths_with_their_environment() {
    let hup = Hup::new(&json!({"config": {"old": {"leaf": "x"}, "flag": ""}}));
    hup.hooks(&format!(
        "[added]\ntriggers=post.add\npath=Resources.Instance.Metadata.config.new.leaf\naction={}\n\n\
         [removed]\ntriggers=post.remove\npath=Resources.Instance.Metadata.config.old\naction={}\n\n\
         [flag]\ntriggers=post.add,post.update\npath=Resources.Instance.Metadata.config.flag\naction={}\n\n\
         [physical]\ntriggers=post.add\npath=resources.Instance.physicalresourceid\naction={}\n\n\
         [updated]\ntriggers=post.update\npath=Resources.Instance\naction={}\n",
        hup.recorder("added"),
        hup.recorder("removed"),
        hup.recorder("flag"),
        hup.recorder("physical"),
        hup.recorder("updated"),
    ));
    hup.once();
    let first = hup.marks();
    assert_eq!(first.len(), 2, "{first:?}");
    assert_eq!(first[0], "flag CFN_NEW_METADATA=", "an empty string is a value");
    assert!(first[1].starts_with("physical CFN_NEW_PHYSICAL_RESOURCE_ID=i-"), "{first:?}");

    hup.update(&json!({"config": {"new": {"leaf": "y"}, "flag": "on"}}));
    hup.once();
    let marks = hup.marks();
    assert_eq!(marks.len(), 6, "{marks:?}");
    assert_eq!(marks[2], "added CFN_NEW_METADATA=y");
    assert_eq!(marks[3], r#"removed CFN_OLD_METADATA={"leaf": "x"}"#);
    assert_eq!(marks[4], "flag CFN_NEW_METADATA=on CFN_OLD_METADATA=");
    // The update changed the resource, so its LastUpdatedTimestamp moved: ISO 8601, no zone.
    let updated: Vec<&str> = marks[5].split(' ').collect();
    assert_eq!(updated.len(), 3, "{marks:?}");
    for (part, name) in updated[1..].iter().zip(["CFN_NEW_LAST_UPDATED=", "CFN_OLD_LAST_UPDATED="]) {
        let value = part.strip_prefix(name).unwrap_or_else(|| panic!("{name} in {marks:?}"));
        assert!(chrono::NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S%.f").is_ok(), "{value}");
    }
    let log = log_lines_without_time(&hup.log());
    assert!(log.contains(&"[INFO] Previous state not found; action for added will be run".to_string()));
    assert!(log.contains(
        &"[INFO] Path Resources.Instance.Metadata.config.old was removed; action for removed will be run".to_string()
    ));
    hup.once();
    assert_eq!(hup.marks().len(), 6);
}

/// An environment variable that is not UTF-8 reaches the action byte for byte, beside
/// the CFN_* variables cfn-hup adds (it used to make cfn-hup panic when it copied its
/// environment into strings).
#[test]
fn a_variable_that_is_not_utf8_passes_through_to_the_action() {
    use std::os::unix::ffi::OsStrExt;
    let hup = Hup::new(&json!({"config": {"flag": "on"}}));
    let marks = hup.marks_path();
    hup.hooks(&format!(
        "[raw]\ntriggers=post.add\npath=Resources.Instance.Metadata.config.flag\n\
         action=printf '%s|%s' \"$CFN_RAW\" \"$CFN_NEW_METADATA\" > {}\n",
        marks.display()
    ));
    let raw = std::ffi::OsStr::from_bytes(b"caf\xe9\xff");
    let run = hup.cmd().arg("--no-daemon").env("CFN_RAW", raw).run();
    run.code(0);
    assert_eq!(std::fs::read(&marks).unwrap(), b"caf\xe9\xff|on", "{}", hup.log());
}

/// A state file written by the reference 1.4-31 (tests/golden/cfn-hup/reference-pass) is
/// read — unchanged values do not fire, the datetime marker is understood — and
/// rewritten in the same format, atomically, 0600 (STATE-04).
#[test]
fn a_state_file_written_by_the_reference_is_read_and_kept_in_its_format() {
    use std::os::unix::fs::PermissionsExt;
    let golden = workspace().join("tests/golden/cfn-hup/reference-pass");
    // The metadata the reference saw on its first pass.
    let hup = Hup::new(&json!({
        "AWS::CloudFormation::Init": {"config": {"files": {"/tmp/a": {"content": "one"}}}},
        "c": {"leaf": "x"}, "f": "", "n": 0
    }));
    std::fs::create_dir_all(hup.db_path().parent().unwrap()).unwrap();
    std::fs::copy(golden.join("pass1.metadata_db.json"), hup.db_path()).unwrap();
    hup.hooks(&format!(
        "[init-update]\ntriggers=post.update\npath=Resources.Instance.Metadata.AWS::CloudFormation::Init\naction={}\n\
         [nested-remove]\ntriggers=post.remove\npath=Resources.Instance.Metadata.c\naction={}\n\
         [falsy]\ntriggers=post.add,post.update\npath=Resources.Instance.Metadata.f\naction={}\n\
         [zero]\ntriggers=post.add,post.update,post.remove\npath=Resources.Instance.Metadata.n\naction={}\n\
         [phys]\ntriggers=post.add,post.update\npath=Resources.Instance.PhysicalResourceId\naction={}\n\
         [last]\ntriggers=post.add,post.update\npath=Resources.Instance\naction={}\n",
        hup.recorder("init-update"),
        hup.recorder("nested-remove"),
        hup.recorder("falsy"),
        hup.recorder("zero"),
        hup.recorder("phys"),
        hup.recorder("last"),
    ));
    hup.once();
    let marks = hup.marks();
    // Same metadata: nothing fires. The emulator's instance has another id and time.
    assert_eq!(marks.len(), 2, "{marks:?}");
    assert!(marks[0].starts_with("phys CFN_NEW_PHYSICAL_RESOURCE_ID=i-"), "{marks:?}");
    assert!(marks[0].ends_with("CFN_OLD_PHYSICAL_RESOURCE_ID=i-68048c238c78348e7"), "{marks:?}");
    assert!(marks[1].starts_with("last CFN_NEW_LAST_UPDATED=20"), "{marks:?}");
    assert!(marks[1].ends_with("CFN_OLD_LAST_UPDATED=2026-11-29T20:47:08.128751"), "{marks:?}");

    let text = read(&hup.db_path());
    let db: Value = serde_json::from_str(&text).unwrap();
    let marker = db["last|Resources.Instance"]["_datetime: special_serialization: not_regular_json_"].as_str().unwrap();
    assert!(marker.starts_with("\"20") && marker.ends_with('"') && marker.len() >= 21, "{marker}");
    // The reference kept the entries of hooks it no longer had; they are dropped (issue
    // 13, item 14), the others keep the reference's order.
    assert!(db.get("nested-add|Resources.Instance.Metadata.a.b").is_none(), "{text}");
    assert_eq!(db.as_object().unwrap().len(), 6, "{text}");
    assert!(
        text.starts_with(
            r#"{"last|Resources.Instance": {"_datetime: special_serialization: not_regular_json_": "\"20"#
        ),
        "{text}"
    );
    assert_eq!(std::fs::metadata(hup.db_path()).unwrap().permissions().mode() & 0o777, 0o600);
}

/// A hook removed from the configuration loses its entry in metadata_db.json at the next
/// pass; the remaining hooks' entries are unchanged (issue 13, item 14; STATE-04).
#[test]
fn the_state_of_a_removed_hook_is_dropped_at_the_next_pass() {
    let hup = Hup::new(&json!({"k": "v", "m": "w"}));
    let kept = "[kept]\ntriggers=post.update\npath=Resources.Instance.Metadata.k\naction=true\n";
    hup.hooks(&format!("{kept}[gone]\ntriggers=post.update\npath=Resources.Instance.Metadata.m\naction=true\n"));
    hup.once();
    assert_eq!(
        read(&hup.db_path()),
        r#"{"kept|Resources.Instance.Metadata.k": "v", "gone|Resources.Instance.Metadata.m": "w"}"#
    );
    assert!(!hup.log().contains("Dropped the state"), "{}", hup.log());
    hup.hooks(kept);
    hup.once();
    assert_eq!(read(&hup.db_path()), r#"{"kept|Resources.Instance.Metadata.k": "v"}"#);
    assert!(
        hup.log()
            .contains("[INFO] Dropped the state of hooks no longer configured: gone|Resources.Instance.Metadata.m\n"),
        "{}",
        hup.log()
    );
}

/// One DescribeStackResource per resource per pass; a resource in progress is left for
/// a later pass (HUP-DET-02).
#[test]
fn one_call_per_resource_per_pass_and_resources_in_progress_wait() {
    let template = json!({"Resources": {
        "Instance": {"Type": "AWS::EC2::Instance", "Metadata": {"a": 1, "b": 2},
                     "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}},
        "Waiting": {"Type": "AWS::EC2::Instance", "Metadata": {"w": "v"},
                    "CreationPolicy": {"ResourceSignal": {"Count": 1, "Timeout": "PT30M"}},
                    "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}}
    }});
    let hup = Hup::with_template(&template);
    hup.hooks(&format!(
        "[a]\ntriggers=post.add\npath=Resources.Instance.Metadata.a\naction={}\n\
         [b]\ntriggers=post.add\npath=Resources.Instance.Metadata.b\naction={}\n\
         [whole]\ntriggers=post.add\npath=Resources.Instance.Metadata\naction={}\n\
         [w]\ntriggers=post.add\npath=Resources.Waiting.Metadata.w\naction={}\n",
        hup.recorder("a"),
        hup.recorder("b"),
        hup.recorder("whole"),
        hup.recorder("w"),
    ));
    hup.cmd().args(["--no-daemon", "-v"]).run().code(0);
    let calls = hup.describe_calls();
    let ids: Vec<&str> = calls.iter().filter_map(|c| c["form"]["LogicalResourceId"].as_str()).collect();
    assert_eq!(ids, ["Instance", "Waiting"], "one call per resource");
    assert_eq!(
        hup.marks().iter().map(|m| m.split(' ').next().unwrap().to_string()).collect::<Vec<_>>(),
        ["a", "b", "whole"]
    );
    assert!(
        hup.log().contains("Resource Waiting is CREATE_IN_PROGRESS; hook w will be checked on the next pass"),
        "{}",
        hup.log()
    );

    hup.emulator
        .call(
            "SignalResource",
            &[("StackName", &hup.stack), ("LogicalResourceId", "Waiting"), ("UniqueId", "i-1"), ("Status", "SUCCESS")],
        )
        .unwrap();
    wait_until(Duration::from_secs(10), "the resource to complete", || {
        hup.emulator
            .call("DescribeStackResource", &[("StackName", &hup.stack), ("LogicalResourceId", "Waiting")])
            .is_ok_and(|v| v.to_string().contains("CREATE_COMPLETE"))
    });
    let before = hup.describe_calls().len();
    hup.once();
    assert_eq!(hup.marks().last().map(String::as_str), Some("w CFN_NEW_METADATA=v"));
    assert_eq!(hup.describe_calls().len() - before, 2);
}

/// The instance's template of the missed-update scenario: `Instance` waits for its
/// signal (CreationPolicy), so cfn-hup's first passes skip it (HUP-DET-02).
fn waiting_template(metadata: &Value) -> Value {
    json!({"Resources": {"Instance": {
        "Type": "AWS::EC2::Instance", "Metadata": metadata,
        "CreationPolicy": {"ResourceSignal": {"Count": 1, "Timeout": "PT30M"}},
        "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}
    }}})
}

/// A missed update (issue 13, item 16): cfn-init builds the instance while its resource
/// waits for the signal, `prepare` runs, cfn-hup's first pass skips the resource, the
/// signal completes it and an UpdateStack lands before cfn-hup's next pass. Returns the
/// set-up after two more passes, and the file cfn-init writes.
fn missed_update(prepare: impl FnOnce(&Hup, &Value)) -> (Hup, PathBuf) {
    let metadata = |content: &str, target: &Path| json!({"AWS::CloudFormation::Init": {"config": {"files": {target.to_str().unwrap(): {"content": content}}}}});
    let hup =
        Hup::built(Emulator::shared(), |sandbox| waiting_template(&metadata("version 1", &sandbox.path("app.conf"))));
    let target = hup.sandbox.path("app.conf");
    prepare(&hup, &metadata("version 1", &target));
    let cfn_init = format!(
        "{} -s {} -r Instance --url {} --access-key {ACCESS_KEY} --secret-key {SECRET_KEY}",
        hup.sandbox.path("bin/cfn-init").display(),
        hup.stack,
        hup.emulator.url
    );
    hup.hooks(&format!(
        "[cfn-auto-reloader-hook]\ntriggers=post.update\npath=Resources.Instance.Metadata.AWS::CloudFormation::Init\naction={} && {}\n",
        hup.recorder("reload"),
        cfn_init
    ));
    hup.cmd().args(["--no-daemon", "-v"]).run().code(0);
    assert!(
        hup.log().contains("Resource Instance is CREATE_IN_PROGRESS; hook cfn-auto-reloader-hook will be checked"),
        "{}",
        hup.log()
    );
    assert!(!hup.db_path().exists() || !read(&hup.db_path()).contains("cfn-auto-reloader-hook"));

    hup.emulator
        .call(
            "SignalResource",
            &[("StackName", &hup.stack), ("LogicalResourceId", "Instance"), ("UniqueId", "i-1"), ("Status", "SUCCESS")],
        )
        .unwrap();
    hup.update_template(&waiting_template(&metadata("version 2", &target)));
    hup.cmd().args(["--no-daemon", "-v"]).run().code(0);
    hup.cmd().args(["--no-daemon", "-v"]).run().code(0);
    (hup, target)
}

const BASELINE_LINE: &str =
    "[INFO] No previous state for cfn-auto-reloader-hook; using the metadata cfn-init last applied as the baseline";

/// cfn-init ran for the resource the hook watches: its copy is the hook's first
/// baseline, so the update fires exactly once, with the old metadata in CFN_OLD_METADATA.
#[test]
fn an_update_before_the_first_completed_pass_fires_once_against_what_cfn_init_applied() {
    let (hup, target) = missed_update(|hup, _| {
        let cfn_init = hup.sandbox.cmd("cfn-init").args(["-s", &hup.stack, "-r", "Instance"]).with_keys(&hup.emulator);
        cfn_init.run().code(0).stderr_is("");
        assert_eq!(read(&hup.sandbox.path("app.conf")), "version 1");
        let record = hup.sandbox.path("lib/cfn-init/data/metadata_source.json");
        let record: Value = serde_json::from_str(&read(&record)).unwrap();
        assert_eq!(
            (record["stack"].as_str(), record["logical_id"].as_str()),
            (Some(hup.stack.as_str()), Some("Instance"))
        );
    });
    let marks = hup.marks();
    assert_eq!(marks.len(), 1, "{marks:?}\n{}", hup.log());
    assert!(
        marks[0].contains(r#"CFN_OLD_METADATA={"config": {"files": {"#)
            && marks[0].contains(r#""content": "version 1"}"#),
        "{marks:?}"
    );
    assert!(marks[0].contains(r#""content": "version 2"}"#), "{marks:?}");
    assert_eq!(read(&target), "version 2", "the action ran cfn-init with the new metadata");
    let log = log_lines_without_time(&hup.log());
    for line in
        [BASELINE_LINE, "[INFO] Data has changed from previous state; action for cfn-auto-reloader-hook will be run"]
    {
        assert_eq!(log.iter().filter(|l| *l == line).count(), 1, "{line:?} once in\n{}", hup.log());
    }
}

/// Without cfn-init's copy, or with one that names no stack resource (cfn-init read a
/// file), the first completed pass records the updated metadata as the baseline and the
/// update does not fire — the reference's behaviour (HUP-DET-01).
#[test]
fn without_a_copy_cfn_init_made_from_the_resource_the_first_pass_only_records_the_baseline() {
    let (hup, target) = missed_update(|_, _| {});
    assert!(!hup.sandbox.path("lib/cfn-init/data/metadata.json").exists());
    assert_eq!(hup.marks(), Vec::<String>::new(), "{}", hup.log());
    assert!(!target.exists());
    assert!(!hup.log().contains("cfn-init last applied"), "{}", hup.log());
    let db: Value = serde_json::from_str(&read(&hup.db_path())).unwrap();
    let stored = db["cfn-auto-reloader-hook|Resources.Instance.Metadata.AWS::CloudFormation::Init"].to_string();
    assert!(stored.contains("version 2"), "{stored}");

    let (hup, _) = missed_update(|hup, v1| {
        let file = hup.sandbox.path("v1.json");
        std::fs::write(&file, v1.to_string()).unwrap();
        hup.sandbox.cmd("cfn-init").arg(&file).run().code(0);
        assert!(hup.sandbox.path("lib/cfn-init/data/metadata.json").exists());
        assert!(!hup.sandbox.path("lib/cfn-init/data/metadata_source.json").exists());
    });
    assert_eq!(hup.marks(), Vec::<String>::new(), "{}", hup.log());
    assert!(
        hup.log().contains("[DEBUG] No baseline from cfn-init:") && hup.log().contains("names no stack resource"),
        "{}",
        hup.log()
    );
}

/// `runas` switches to the user directly: uid, gid, HOME — and a nologin shell does not
/// matter (HUP-ACT-02).
#[test]
fn runas_runs_the_action_as_that_user() {
    let hup = Hup::new(&json!({"k": "v"}));
    let expected = |flag: &str| {
        let out = std::process::Command::new("id").args([flag, "nobody"]).output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    hup.hooks("[who]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction=echo \"uid=$(id -u) gid=$(id -g) home=$HOME\" 'two  words'\nrunas=nobody\n");
    hup.cmd().args(["--no-daemon", "-v"]).run().code(0);
    let home = std::process::Command::new("sh").args(["-c", "getent passwd nobody | cut -d: -f6"]).output().unwrap();
    let home = String::from_utf8(home.stdout).unwrap().trim().to_string();
    let line =
        format!("[DEBUG] Action for who output: uid={} gid={} home={home} two  words", expected("-u"), expected("-g"));
    assert!(log_lines_without_time(&hup.log()).contains(&line), "missing {line:?} in\n{}", hup.log());

    hup.hooks("[ghost]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction=true\nrunas=no-such-user-here\n");
    hup.once();
    assert!(
        hup.log().contains("[ERROR] Action for ghost cannot run: user no-such-user-here does not exist"),
        "{}",
        hup.log()
    );
}

/// A `runas` action starts in a session of its own with no controlling terminal, through
/// the same set-up as cfn-init's `runas` commands; an action without `runas` stays in
/// cfn-hup's session (HUP-ACT-02).
#[test]
fn a_runas_action_starts_in_a_session_of_its_own() {
    let hup = Hup::new(&json!({"k": "v"}));
    // Session, controlling terminal (0: none) and the parent's (cfn-hup's) session, from
    // /proc/<pid>/stat: pid (comm) state ppid pgrp session tty_nr …
    let probe = "read -r _ _ _ ppid _ sid tty _ < /proc/$$/stat; read -r _ _ _ _ _ psid _ < /proc/$ppid/stat; \
                 echo \"uid=$(id -u) sid=$sid tty=$tty parent_sid=$psid\"";
    let hook = |name: &str, runas: &str| {
        format!("[{name}]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={probe}\n{runas}")
    };
    hup.hooks(&format!("{}\n{}", hook("as-root", ""), hook("as-user", "runas=nobody\n")));
    hup.cmd().args(["--no-daemon", "-v"]).run().code(0);
    let log = hup.log();
    let words = |name: &str| -> std::collections::HashMap<String, String> {
        let prefix = format!("[DEBUG] Action for {name} output: ");
        let line = log_lines_without_time(&log)
            .into_iter()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
            .unwrap_or_else(|| panic!("no {prefix:?} in\n{log}"));
        line.split_whitespace().filter_map(|w| w.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect()
    };
    let (root, user) = (words("as-root"), words("as-user"));
    assert_eq!((root["uid"].as_str(), &root["sid"]), ("0", &root["parent_sid"]), "{root:?}");
    assert_ne!(user["uid"], "0", "{user:?}");
    assert_ne!(user["sid"], user["parent_sid"], "{user:?}");
    assert_eq!(user["tty"], "0", "{user:?}");
}

/// A hook file as users write them, read as ConfigParser reads it (HUP-CONF-02): CRLF
/// line ends, a multi-line action with a comment line inside it and a `\` at the end of a
/// line (kept for the shell, not joined by the reader), `%%` and `%(name)s` from `[DEFAULT]`.
#[test]
fn a_multi_line_action_with_comments_crlf_and_interpolation_runs_as_written() {
    let hup = Hup::new(&json!({"k": "v"}));
    let text = format!(
        "[DEFAULT]\nmarks = {}\n\n[Multi]\nTriggers: post.add\npath=Resources.Instance.Metadata.k\n\
         action=printf '%%s|' one \\\n    two >> %(marks)s\n# a comment line does not end the action\n\n\
         \techo three >> %(marks)s\n",
        hup.marks_path().display()
    );
    hup.hooks(&text.replace('\n', "\r\n"));
    hup.once();
    assert_eq!(hup.marks(), ["one|two|three"], "{}", hup.log());
}

/// Hooks missing a key are skipped with the reference's ERROR line; none left is the
/// reference's fatal error, now on stderr too (HUP-HOOK-01..02, HUP-CONF-03).
#[test]
fn invalid_hooks_are_skipped_and_no_valid_hooks_is_an_error() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(
        "[nopath]\ntriggers=post.add\naction=true\n[noaction]\ntriggers=post.add\npath=Resources.Instance.Metadata\n",
    );
    std::fs::write(
        hup.dir.join("hooks.d/late"),
        format!("[good]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n", hup.recorder("good")),
    )
    .unwrap();
    hup.once();
    assert_eq!(hup.marks(), ["good CFN_NEW_METADATA=v"], "a file in hooks.d with any name but a backup's is read");
    let log = log_lines_without_time(&hup.log());
    assert!(log.contains(&"[ERROR] No path specified for hook nopath".to_string()), "{}", hup.log());
    assert!(log.contains(&"[ERROR] No action specified for hook noaction".to_string()), "{}", hup.log());

    std::fs::remove_file(hup.dir.join("hooks.d/late")).unwrap();
    let run = hup.cmd().arg("--no-daemon").run();
    run.code(1).stdout_is("").stderr_is("Error: No valid hooks found\n");
    assert!(hup.log().ends_with("[ERROR] Error: No valid hooks found\n"), "{}", hup.log());
}

/// cfn-init keeps `app.conf.bak` beside an updated `hooks.d/app.conf`, editors and
/// package managers leave their copies, and a killed writer its temporary file: read in
/// name order after `app.conf`, their old `action` and `runas` would win. Only the file
/// an operator means is read; each skipped file is logged once (SEC-HOOKSD, a deliberate
/// difference from the reference, which reads them all).
#[test]
fn backups_and_temporary_files_in_hooks_d_are_not_read() {
    let hup = Hup::new(&json!({"k": "v"}));
    let hook =
        |action: &str| format!("[app]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={action}\n");
    std::fs::write(hup.dir.join("hooks.d/app.conf"), hook(&hup.recorder("new"))).unwrap();
    let left = [
        "app.conf.bak",
        "app.conf.bak2",
        "app.conf~",
        ".app.conf.swp",
        "app.conf.dpkg-old",
        "app.conf.dpkg-new",
        "app.conf.dpkg-dist",
        "app.conf.rpmnew",
        "app.conf.rpmsave",
        ".app.conf.4242.0.cfn-tmp",
    ];
    for name in left {
        let old = format!("{}\nrunas=no-such-user-cfn\n", hook(&hup.recorder(name)));
        std::fs::write(hup.dir.join("hooks.d").join(name), old).unwrap();
    }
    hup.once();
    assert_eq!(hup.marks(), ["new CFN_NEW_METADATA=v"], "{}", hup.log());
    let log = log_lines_without_time(&hup.log());
    for name in left {
        let skipped = format!(
            "[INFO] Skipping {}: a hidden, backup or temporary file is not a hook file",
            hup.dir.join("hooks.d").join(name).display()
        );
        assert_eq!(log.iter().filter(|l| **l == skipped).count(), 1, "{skipped}\n{}", hup.log());
    }
}

/// 2 KB of `%(name)s` references, each level repeating the one below 25 times, as many
/// levels deep as ConfigParser follows, would expand to some 10¹³ bytes: the value stops at its bound with a
/// configuration error naming the option and the file, logged and on stderr, exit 1
/// (HUP-CONF-02, HUP-CONF-03). The run is held to 1 GiB of address space, so that a
/// cfn-hup without the bound fails here instead of taking the machine's memory.
#[test]
fn an_interpolation_bomb_is_a_configuration_error_naming_the_option_and_the_file() {
    use std::os::unix::process::CommandExt;
    let hup = Hup::new(&json!({"k": "v"}));
    let mut text = String::from("[DEFAULT]\nx0 = aaaaaaaa\n");
    for level in 1..=9 {
        text.push_str(&format!("x{level} = {}\n", format!("%(x{})s", level - 1).repeat(25)));
    }
    text.push_str("[bomb]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction=echo %(x9)s\n");
    assert!(text.len() < 2048, "{}", text.len());
    hup.hooks(&text);
    let mut command = hup.cmd().arg("--no-daemon");
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        command.cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let run = command.run();
    let error = format!(
        "Error: Bad value substitution: section [bomb], option action in {}: the value expands to more than 65536 bytes",
        hup.dir.join("hooks.conf").display()
    );
    run.code(1).stdout_is("").stderr_is(&format!("{error}\n"));
    assert!(hup.log().ends_with(&format!("[ERROR] {error}\n")), "{}", hup.log());
    assert!(hup.marks().is_empty());
}

/// The generous bound on reading a hostile configuration: it takes some 50 ms.
const HOSTILE_READ_BOUND: Duration = Duration::from_secs(10);

/// `cfn-hup --no-daemon` on a configuration, and how long it took.
fn timed_once(hup: &Hup) -> (Run, Duration) {
    let started = Instant::now();
    let run = hup.cmd().arg("--no-daemon").run();
    (run, started.elapsed())
}

/// A value of 1 MB of `%(` with no `)s` after any of them, alone and in ten sections
/// (issue 31, F4): each `%(` made the interpolation search the rest of the value for `)s`
/// again (26 s). One pass now: the value stops at its bound with the same configuration
/// error as before, at once.
#[test]
fn a_megabyte_of_unclosed_references_is_refused_at_once() {
    let hup = Hup::new(&json!({"k": "v"}));
    let soup = "%(x) ".repeat(200_000);
    hup.hooks(&format!("[soup]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={soup}\n"));
    let (run, took) = timed_once(&hup);
    let error = format!(
        "Error: Bad value substitution: section [soup], option action in {}: the value expands to more than 65536 bytes",
        hup.dir.join("hooks.conf").display()
    );
    run.code(1).stdout_is("").stderr_is(&format!("{error}\n"));
    assert!(took < HOSTILE_READ_BOUND, "{took:?}");
    assert!(hup.log().ends_with(&format!("[ERROR] {error}\n")), "{}", hup.log());
    assert!(hup.marks().is_empty());
    // Ten sections of it: the first stops cfn-hup, as before.
    let sections: String = (0..10)
        .map(|n| format!("[soup{n}]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={soup}\n"))
        .collect();
    hup.hooks(&sections);
    let (run, took) = timed_once(&hup);
    run.code(1).stdout_is("").stderr_is(&format!("{}\n", error.replace("[soup]", "[soup0]")));
    assert!(took < HOSTILE_READ_BOUND, "{took:?}");
    assert!(hup.marks().is_empty());
}

/// One long value whose references expand to nothing (`%(e)s` 100,000 times, 500 KB),
/// referred to by each of 4,000 hooks: one pass each, but each read searched it again
/// (issue 31, F4's amplification: the 1,000-hook file took 13 s). All the reads together
/// search a bounded amount of text (4 MiB and 8 bytes per byte of the files): cfn-hup
/// stops at once with a configuration error naming the option.
#[test]
fn a_long_value_that_every_hook_refers_to_is_searched_within_a_bound() {
    let hup = Hup::new(&json!({"k": "v"}));
    let hooks: String = (0..4000)
        .map(|n| format!("[h{n}]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction=true\nrunas=%(big)s\n"))
        .collect();
    let text = format!("[DEFAULT]\ne=\nbig={}\n{hooks}", "%(e)s".repeat(100_000));
    hup.hooks(&text);
    let (run, took) = timed_once(&hup);
    let limit = 4 * 1024 * 1024 + 8 * text.len();
    let tail = format!(
        ", option runas in {}: the values read so far made their references search more than {limit} bytes of text in all\n",
        hup.dir.join("hooks.conf").display()
    );
    run.code(1).stdout_is("");
    assert!(
        run.stderr.starts_with("Error: Bad value substitution: section [h") && run.stderr.ends_with(&tail),
        "{run}"
    );
    assert!(took < HOSTILE_READ_BOUND, "{took:?}");
    assert!(hup.marks().is_empty());
}

/// 1 MB of empty sections before a hook, and a hook with 1 MB of keys (issue 31, F12):
/// each header and key was looked up by walking all those before it (minutes). Indexed
/// now: every empty section is skipped with its ERROR line, the hooks run, at once.
#[test]
fn a_megabyte_of_sections_or_of_keys_is_read_at_once() {
    let hup = Hup::new(&json!({"k": "v"}));
    let sections = 125_000;
    let mut text: String = (0..sections).map(|n| format!("[s{n}]\n")).collect();
    assert!(text.len() > 1_000_000, "{}", text.len());
    text.push_str(&format!(
        "[last]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("last")
    ));
    hup.hooks(&text);
    let (run, took) = timed_once(&hup);
    run.code(0);
    assert!(took < HOSTILE_READ_BOUND, "{took:?}");
    assert_eq!(hup.marks(), ["last CFN_NEW_METADATA=v"]);
    // (The log is rotated on the way: its current file holds the last of these lines.)
    let log = hup.log();
    assert!(log.contains(&format!("[ERROR] No triggers specified for hook s{}\n", sections - 1)));

    let keys: String = (0..120_000).map(|n| format!("k{n}=v\n")).collect();
    assert!(keys.len() > 1_000_000, "{}", keys.len());
    // The last of two values of a key wins, as before; the keys before it do not matter.
    hup.hooks(&format!(
        "[many]\naction=false\n{keys}triggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("many")
    ));
    let (run, took) = timed_once(&hup);
    run.code(0);
    assert!(took < HOSTILE_READ_BOUND, "{took:?}");
    assert_eq!(hup.marks(), ["last CFN_NEW_METADATA=v", "many CFN_NEW_METADATA=v"]);
}

/// As the reference: `data/` (0700) and an empty `metadata_db.json` (0600) are made
/// before an unsupported hook path stops cfn-hup, which still exits 1 with the
/// reference's message (STATE-04, HUP-PATH-01).
#[test]
fn the_state_file_is_made_before_an_unsupported_path_stops_cfn_hup() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks("[h1]\ntriggers=post.add\npath=Outputs.X\naction=true\n");
    let run = hup.cmd().arg("--no-daemon").run();
    let error = "Error: Unsupported path: only changes to Resources are supported (path: Outputs.X)";
    run.code(1).stdout_is("").stderr_is(&format!("{error}\n"));
    assert!(hup.log().ends_with(&format!("[ERROR] {error}\n")), "{}", hup.log());
    let mode = |path: &Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions());
    assert_eq!(std::fs::read(hup.db_path()).unwrap(), b"", "{}", hup.log());
    assert_eq!(mode(&hup.db_path()) & 0o7777, 0o600);
    assert_eq!(mode(hup.db_path().parent().unwrap()) & 0o7777, 0o700);
}

/// Every configuration error: the reference's message in cfn-hup.log, and now also on
/// stderr, exit 1 (HUP-CONF-01..03, HUP-PATH-01). Messages the reference recorded are
/// compared with its logs (tests/golden/reference-1.4-31/cfn-hup).
#[test]
fn configuration_errors_are_logged_and_printed_with_exit_1() {
    let golden_line = |case: &str| {
        let text = read(&golden_dir().join(format!("cfn-hup/{case}.cfn-hup.log")));
        log_lines_without_time(&text).last().unwrap().clone()
    };
    let sandbox = Sandbox::new();
    let conf = |files: &[(&str, &str)]| {
        let dir = sandbox.path(&unique("conf"));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::create_dir_all(dir.join(name).parent().unwrap()).unwrap();
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    };
    const MAIN: &str = "[main]\nstack=s\nurl=http://127.0.0.1:9\n";
    const HOOK: &str = "[h1]\ntriggers=post.update\npath=Resources.R.Metadata\naction=true\n";
    let empty = conf(&[]);
    let cases: Vec<(PathBuf, Vec<&str>, String)> = vec![
        (PathBuf::from("/nonexistent"), vec![], golden_line("config-nonexistent-no-daemon")),
        (empty.clone(), vec![], format!("[ERROR] Error: Could not find main configuration at {}/cfn-hup.conf", empty.display())),
        (conf(&[("cfn-hup.conf", "[main]\nregion=x\n"), ("hooks.conf", HOOK)]), vec![], golden_line("config-no-stack")),
        (conf(&[("cfn-hup.conf", "[main]\nstack=s\nverbose=maybe\n"), ("hooks.conf", HOOK)]), vec![], "[ERROR] Error: Not a boolean: maybe".into()),
        (conf(&[("cfn-hup.conf", MAIN), ("hooks.conf", "[h1]\ntriggers=post.add\npath=Outputs.X\naction=true\n")]), vec![],
            "[ERROR] Error: Unsupported path: only changes to Resources are supported (path: Outputs.X)".into()),
        (conf(&[("cfn-hup.conf", MAIN), ("hooks.conf", "[h1]\ntriggers=post.add\npath=Resources.X.Properties\naction=true\n")]), vec![],
            "[ERROR] Error: Unsupported path: only Metadata or PhysicalResourceId can be specified after LogicalResourceId (path: Resources.X.Properties)".into()),
        (conf(&[("cfn-hup.conf", MAIN), ("hooks.conf", "[h1]\ntriggers=post.add\npath=Resources\naction=true\n")]), vec![],
            "[ERROR] Error: Unsupported path: paths must be in the form Resources.<LogicalResourceId>(.Metadata|PhysicalResourceId)(.<optional Metadata subkey>). Input: Resources".into()),
        (conf(&[("cfn-hup.conf", "[main]\nstack=s\ncredential-file=/nonexistent/creds\n"), ("hooks.conf", HOOK)]), vec![],
            "\tCredential file was not found at /nonexistent/creds".into()),
        (conf(&[("cfn-hup.conf", &format!("{MAIN}interval=0\n")), ("hooks.conf", HOOK)]), vec!["-F"],
            "[ERROR] Error: Invalid interval (must be 1 minute or greater): 0".into()),
        (conf(&[("cfn-hup.conf", &format!("{MAIN}umask=0999\n")), ("hooks.conf", HOOK)]), vec![],
            "[ERROR] Error: Invalid octal value specified for umask in config file: invalid literal for int() with base 8: '00999'".into()),
    ];
    let hooks_dir = conf(&[("cfn-hup.conf", MAIN)]);
    let mut cases = cases;
    let backoff_dir = conf(&[("cfn-hup.conf", &format!("{MAIN}max-backoff=0\n")), ("hooks.conf", HOOK)]);
    cases.push((
        backoff_dir.clone(),
        vec!["-F"],
        format!(
            "[ERROR] Error: Invalid max-backoff in {}/cfn-hup.conf (must be a whole number of minutes, 1 or greater): 0",
            backoff_dir.display()
        ),
    ));
    cases.push((
        hooks_dir.clone(),
        vec![],
        format!("[ERROR] Error: No hook configurations found at {0}/hooks.conf or {0}/hooks.d.", hooks_dir.display()),
    ));
    assert_eq!(
        golden_line("config-nonexistent-no-daemon"),
        "[ERROR] Error: Could not find configuration at /nonexistent"
    );
    let both = sandbox.cmd("cfn-hup").args(["--no-daemon", "-F"]).run();
    both.code(1).stdout_is("");
    assert!(
        both.stderr
            .starts_with("Error: --no-daemon and --foreground cannot be used together\nUsage: cfn-hup [options]\n"),
        "{both}"
    );
    for (dir, extra, expected) in cases {
        let log = sandbox.path("log/cfn-hup.log");
        let _ = std::fs::remove_file(&log);
        let no_daemon = extra.is_empty() && !expected.contains("umask");
        let mut cmd = sandbox.cmd("cfn-hup").arg("-c").arg(&dir).args(&extra);
        if no_daemon {
            cmd = cmd.arg("--no-daemon");
        }
        let run = cmd.env(INTERVAL_VAR, "").run();
        run.code(1).stdout_is("");
        let printed = expected.strip_prefix("[ERROR] ").unwrap_or(&expected);
        assert!(run.stderr.ends_with(&format!("{printed}\n")), "stderr should end with {printed:?}\n{run}");
        let lines = log_lines_without_time(&read(&log));
        assert_eq!(lines.last(), Some(&expected), "{run}");
        assert!(!sandbox.path("run/cfn-hup.pid").exists());
        // The recorded situations: every line of the reference's log (issue 33).
        for case in ["config-nonexistent-no-daemon", "config-no-stack"] {
            if expected == golden_line(case) {
                let theirs = log_lines_without_time(&read(&golden_dir().join(format!("cfn-hup/{case}.cfn-hup.log"))));
                reference_lines::assert_keeps_reference_lines(
                    &format!("reference-1.4-31/cfn-hup/{case}"),
                    &lines,
                    &theirs,
                );
            }
        }
    }
}

/// Daemon mode: detaches (new session, cwd /, umask, stdio closed), writes the pid file
/// before the launcher returns 0, refuses a second instance, reloads on SIGHUP (a new hook
/// is picked up), and stops on SIGTERM removing the pid file (HUP-RUN-02, -04, -06, STATE-06).
#[test]
fn daemon_pid_file_second_instance_sighup_reload_and_sigterm() {
    let hup = Hup::new(&json!({"k": "v", "later": "x"}));
    hup.main_conf("umask=027\n");
    hup.hooks(&format!(
        "[first]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("first")
    ));
    let reaper = Reaper::new(&hup.pid_path());
    let started = hup.cmd().env(INTERVAL_VAR, "30").run();
    started.code(0).stdout_is("").stderr_is("");
    let pid: i32 = read(&hup.pid_path()).strip_suffix('\n').unwrap().parse().unwrap();
    reaper.watch(pid);
    assert!(pid_alive(pid));
    assert_eq!(std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(), PathBuf::from("/"));
    let status = read(Path::new(&format!("/proc/{pid}/status")));
    assert!(status.lines().any(|l| l == "Umask:\t0027"), "{status}");
    let stat = read(Path::new(&format!("/proc/{pid}/stat")));
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    // SAFETY: getsid(0) only reads this process's session id.
    let our_session = unsafe { libc::getsid(0) };
    assert_ne!(fields[3], our_session.to_string().as_str(), "a session of its own: {stat}");
    assert_ne!(fields[3], pid.to_string().as_str(), "not a session leader after the second fork: {stat}");
    assert_eq!(std::fs::read_link(format!("/proc/{pid}/fd/0")).unwrap(), PathBuf::from("/dev/null"));
    wait_until(Duration::from_secs(20), "the first pass", || hup.marks().len() == 1);
    assert_eq!(hup.marks(), ["first CFN_NEW_METADATA=v"]);
    // The umask line comes after the client's and the state directory's, as in the
    // reference (SPEC §14.6, issue 33).
    let lines = log_lines_without_time(&hup.log());
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix));
    let umask_at = at("[INFO] Setting umask value to: 027").unwrap_or_else(|| panic!("{lines:#?}"));
    let client_at = at("[DEBUG] CloudFormation client initialized with endpoint ");
    assert!(client_at.is_some_and(|c| c < umask_at), "{lines:#?}");
    assert!(at("[DEBUG] Creating ").is_none_or(|c| c < umask_at), "{lines:#?}");

    // A second instance is refused, in daemon and in foreground mode.
    let message = format!("Error: cfn-hup is already running (pid {pid}, pid file {})\n", hup.pid_path().display());
    hup.cmd().env(INTERVAL_VAR, "30").run().code(1).stderr_is(&message);
    hup.cmd().arg("-F").env(INTERVAL_VAR, "30").run().code(1).stderr_is(&message);
    assert_eq!(read(&hup.pid_path()), format!("{pid}\n"));
    // The lock, not the text, says who runs (issue 13, item 14): a pid file made stale
    // by hand (a dead pid, or nothing) still refuses a second instance, which names the
    // lock's holder; the first keeps running with its file.
    let dead = exited_pid();
    for by_hand in [format!("{dead}\n"), String::new()] {
        std::fs::write(hup.pid_path(), &by_hand).unwrap();
        hup.cmd().env(INTERVAL_VAR, "30").run().code(1).stderr_is(&message);
        hup.cmd().arg("-F").env(INTERVAL_VAR, "30").run().code(1).stderr_is(&message);
        assert_eq!(read(&hup.pid_path()), by_hand, "the refused instance leaves the file alone");
    }
    std::fs::write(hup.pid_path(), format!("{pid}\n")).unwrap();
    assert!(pid_alive(pid));

    // SIGHUP: the new hook in hooks.d is picked up at once (the interval is 30 s).
    std::fs::write(
        hup.dir.join("hooks.d/second"),
        format!(
            "[second]\ntriggers=post.add\npath=Resources.Instance.Metadata.later\naction={}\n",
            hup.recorder("second")
        ),
    )
    .unwrap();
    signal(pid, libc::SIGHUP);
    wait_until(Duration::from_secs(20), "the reloaded hook to run", || hup.marks().len() == 2);
    assert_eq!(hup.marks()[1], "second CFN_NEW_METADATA=x");
    assert!(hup.log().contains("[INFO] Configuration reloaded: 2 hook(s)"), "{}", hup.log());

    // A broken configuration on SIGHUP keeps the running one.
    std::fs::write(hup.dir.join("hooks.d/broken"), "no header\n").unwrap();
    signal(pid, libc::SIGHUP);
    wait_until(Duration::from_secs(10), "the failed reload", || {
        hup.log().contains("Could not reload the configuration")
    });
    assert!(pid_alive(pid));

    signal(pid, libc::SIGTERM);
    wait_until(Duration::from_secs(10), "the daemon to stop", || !pid_alive(pid));
    assert!(!hup.pid_path().exists(), "the pid file is removed");
    assert!(hup.log().ends_with("[INFO] Shutting down cfn-hup\n"), "{}", hup.log());
}

/// A pid file left behind by a dead process does not block the start (HUP-RUN-06).
#[test]
fn a_stale_pid_file_is_replaced() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(&format!("[h]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n", hup.recorder("h")));
    let dead = exited_pid();
    std::fs::write(hup.pid_path(), format!("{dead}\n")).unwrap();
    let reaper = Reaper::new(&hup.pid_path());
    let started = Instant::now();
    hup.cmd().env(INTERVAL_VAR, "30").run().code(0);
    assert!(started.elapsed() < Duration::from_secs(10), "no 300 s wait for the old pid file");
    let pid: i32 = read(&hup.pid_path()).trim().parse().unwrap();
    reaper.watch(pid);
    assert_ne!(pid, dead as i32);
    wait_until(Duration::from_secs(20), "the first pass", || hup.marks().len() == 1);
    assert!(
        hup.log().contains(&format!("[WARNING] Removing stale pid file {}", hup.pid_path().display())),
        "{}",
        hup.log()
    );
    signal(pid, libc::SIGTERM);
    wait_until(Duration::from_secs(10), "the daemon to stop", || !pid_alive(pid));
}

/// A pid file deleted and written anew by hand while the service runs: a second instance
/// still finds the service by its lock on the deleted file and is refused; the service
/// leaves the new file alone when it stops, and a later start replaces it (issue 13,
/// item 14; HUP-RUN-06).
#[test]
fn a_pid_file_replaced_by_hand_does_not_let_a_second_daemon_start() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(&format!("[h]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n", hup.recorder("h")));
    let reaper = Reaper::new(&hup.pid_path());
    hup.cmd().env(INTERVAL_VAR, "30").run().code(0);
    let pid: i32 = read(&hup.pid_path()).trim().parse().unwrap();
    reaper.watch(pid);
    let dead = exited_pid();
    std::fs::remove_file(hup.pid_path()).unwrap();
    std::fs::write(hup.pid_path(), format!("{dead}\n")).unwrap();
    let message = format!("Error: cfn-hup is already running (pid {pid}, pid file {})\n", hup.pid_path().display());
    hup.cmd().env(INTERVAL_VAR, "30").run().code(1).stderr_is(&message);
    hup.cmd().arg("-F").env(INTERVAL_VAR, "30").run().code(1).stderr_is(&message);
    assert_eq!(read(&hup.pid_path()), format!("{dead}\n"));
    signal(pid, libc::SIGTERM);
    wait_until(Duration::from_secs(10), "the daemon to stop", || !pid_alive(pid));
    assert_eq!(read(&hup.pid_path()), format!("{dead}\n"), "not the service's file: left alone");
    hup.cmd().env(INTERVAL_VAR, "30").run().code(0);
    let next: i32 = read(&hup.pid_path()).trim().parse().unwrap();
    reaper.watch(next);
    assert_ne!(next, pid);
    signal(next, libc::SIGTERM);
    wait_until(Duration::from_secs(10), "the daemon to stop", || !pid_alive(next));
    assert!(!hup.pid_path().exists(), "the pid file is removed");
}

/// Daemons started together against a stale pid file: exactly one runs, the others are
/// refused with the message and exit 1 (issue 13, item 14: removing a stale file let two
/// start). The lock is taken on the file as it is, never on one that was removed.
#[test]
fn daemons_started_together_over_a_stale_pid_file_leave_exactly_one_running() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(&format!("[h]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n", hup.recorder("h")));
    let dead = exited_pid();
    std::fs::write(hup.pid_path(), format!("{dead}\n")).unwrap();
    let reaper = Reaper::new(&hup.pid_path());
    let commands: Vec<TestCommand> = (0..4).map(|_| hup.cmd().env(INTERVAL_VAR, "30")).collect();
    let runs: Vec<Run> = std::thread::scope(|s| {
        let started: Vec<_> = commands.into_iter().map(|c| s.spawn(move || c.run())).collect();
        started.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let pid: i32 = read(&hup.pid_path()).trim().parse().unwrap();
    reaper.watch(pid);
    assert!(pid_alive(pid));
    let message = format!("Error: cfn-hup is already running (pid {pid}, pid file {})\n", hup.pid_path().display());
    let started = runs.iter().filter(|r| r.code == 0).count();
    assert_eq!(started, 1, "exactly one daemon starts:\n{}", runs.iter().map(|r| r.to_string()).collect::<String>());
    for refused in runs.iter().filter(|r| r.code != 0) {
        refused.code(1).stderr_is(&message);
    }
    wait_until(Duration::from_secs(20), "the first pass", || hup.marks().len() == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(hup.marks().len(), 1, "one daemon, one action");
    signal(pid, libc::SIGTERM);
    wait_until(Duration::from_secs(10), "the daemon to stop", || !pid_alive(pid));
    assert!(!hup.pid_path().exists(), "the pid file is removed");
}

/// Foreground mode for systemd: the first pass at once, then a fixed cadence (at a
/// random phase) with a little jitter (HUP-RUN-03, HUP-RUN-05); SIGTERM ends it with status 0.
#[test]
fn foreground_mode_polls_at_the_interval_with_jitter() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(&format!(
        "[h]\ntriggers=post.update\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("h")
    ));
    let reaper = Reaper::new(&hup.pid_path());
    let launched = Instant::now();
    let pid = start_foreground(&hup, &reaper, "1", &[]);
    wait_until(Duration::from_secs(20), "the first pass", || !hup.describe_calls().is_empty());
    assert!(launched.elapsed() < Duration::from_secs(5), "the first pass runs at once");
    assert_eq!(read(&hup.pid_path()), format!("{pid}\n"), "foreground mode holds the pid file too");
    wait_until(Duration::from_secs(30), "six passes", || hup.describe_calls().len() >= 6);
    signal(pid, libc::SIGTERM);
    let status = reaper.wait_child(pid, Duration::from_secs(10)).expect("cfn-hup -F stops on SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(!hup.pid_path().exists());

    let times: Vec<f64> = hup.describe_calls().iter().map(|c| c["time"].as_f64().unwrap()).collect();
    // The cadence starts at a random point of the first interval, so pass 1 comes within
    // one interval and a quarter second of jitter (+ latency); from it, pass k is due
    // k − 1 seconds later, ± the jitter of both.
    assert!(times[1] - times[0] < 1.4, "pass 1 at {:.3} s: {times:?}", times[1] - times[0]);
    for (k, t) in times.iter().enumerate().skip(2).take(4) {
        let offset = t - times[1] - (k - 1) as f64;
        assert!((-0.55..0.7).contains(&offset), "pass {k} at {:.3} s after pass 1: {times:?}", t - times[1]);
    }
    let gaps: Vec<i64> = times.windows(2).map(|w| ((w[1] - w[0]) * 1000.0) as i64).collect();
    assert!(gaps.iter().any(|g| (g - gaps[0]).abs() > 10), "jitter moves the passes: {gaps:?}");
    assert!(hup.log().contains("[INFO] cfn-hup processing is alive."));
}

/// An outage is logged once when it starts and once when it ends, not on every poll;
/// the individual failed attempts are DEBUG lines.
#[test]
fn an_outage_is_logged_once_per_change_of_state() {
    let hup = Hup::on(Emulator::start(&[]), &instance_template(&json!({"k": "v"})));
    hup.hooks(&format!(
        "[h]\ntriggers=post.update\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("h")
    ));
    // Two passes' worth of server errors (three tries each), then service again.
    hup.emulator.post_json(
        "/_emu/faults",
        &json!([{"action": "DescribeStackResource", "status": 500, "code": "InternalFailure", "message": "boom", "type": "Receiver", "count": 6}]),
    );
    let reaper = Reaper::new(&hup.pid_path());
    let pid = start_foreground(&hup, &reaper, "0.5", &[]);
    wait_until(Duration::from_secs(40), "recovery", || hup.log().contains("CloudFormation answers again"));
    wait_until(Duration::from_secs(10), "two more passes", || hup.describe_calls().len() >= 9);
    signal(pid, libc::SIGTERM);
    reaper.wait_child(pid, Duration::from_secs(10)).expect("stops");
    let log = hup.log();
    assert_eq!(log.matches("[ERROR]").count(), 1, "{log}");
    assert_eq!(log.matches("[ERROR] CloudFormation is not available: InternalFailure: boom").count(), 1, "{log}");
    assert_eq!(log.matches("[INFO] CloudFormation answers again").count(), 1, "{log}");
}

/// The SysV script in dist/init.d drives the daemon through its pid file: start, status,
/// reload (SIGHUP), stop.
#[test]
fn the_sysv_init_script_starts_reloads_and_stops_the_daemon() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(&format!("[h]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n", hup.recorder("h")));
    let reaper = Reaper::new(&hup.pid_path());
    let script = workspace().join("dist/init.d/cfn-hup");
    let run = |verb: &str| {
        let mut cmd = hup.sandbox.cmd("cfn-hup");
        // The script instead of the link, with the sandbox's environment (its log, lib
        // and run directories) so that nothing reaches the real /var.
        let sandboxed: Vec<(std::ffi::OsString, std::ffi::OsString)> =
            cmd.cmd.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
        cmd.cmd = std::process::Command::new(&script);
        cmd.cmd.env_clear().envs(sandboxed);
        cmd.cmd
            .env("CFN_HUP", hup.sandbox.path("bin/cfn-hup"))
            .env("CONFIG_DIR", &hup.dir)
            .env("PIDFILE", hup.pid_path())
            .env(INTERVAL_VAR, "30");
        cmd.arg(verb).run()
    };
    run("status").code(3).stdout_is("cfn-hup is stopped\n");
    run("start").code(0).stdout_is("Starting cfn-hup: OK\n");
    let pid: i32 = read(&hup.pid_path()).trim().parse().unwrap();
    reaper.watch(pid);
    run("status").code(0).stdout_is(&format!("cfn-hup (pid {pid}) is running...\n"));
    run("start").code(0).stdout_is(&format!("cfn-hup is already running (pid {pid})\n"));
    wait_until(Duration::from_secs(20), "the first pass", || hup.marks().len() == 1);
    run("reload").code(0).stdout_is("Reloading cfn-hup: OK\n");
    wait_until(Duration::from_secs(10), "the reload", || hup.log().contains("Configuration reloaded"));
    run("stop").code(0).stdout_is("Stopping cfn-hup: OK\n");
    assert!(!pid_alive(pid) && !hup.pid_path().exists());
    run("status").code(3);
}

/// `role=` signs with instance-profile credentials, fetched once and kept until two hours
/// before they expire (CRED-06; the emulator's expire in 6 h), and takes precedence over
/// `credential-file`; with neither, requests carry the instance identity (CFN_V1).
#[test]
fn role_credentials_are_kept_between_passes_and_instance_identity_is_the_default() {
    let hup = Hup::on(Emulator::start(&[]), &instance_template(&json!({"k": "v"})));
    hup.hooks(&format!(
        "[h]\ntriggers=post.update\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("h")
    ));
    std::fs::write(
        hup.dir.join("cfn-hup.conf"),
        format!(
            "[main]\nstack={}\nurl={}\nrole=emulator-role\ncredential-file=/nonexistent/ignored\n",
            hup.stack, hup.emulator.url
        ),
    )
    .unwrap();
    let reaper = Reaper::new(&hup.pid_path());
    let mut cmd =
        // Verbose: the role's credentials are logged, their expiry in words (the harness
        // checks the log for Rust Debug text at the next run).
        hup.cmd().args(["-F", "-v"]).env(INTERVAL_VAR, "0.3").env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &hup.emulator.url);
    cmd.cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let pid = reaper.adopt(cmd.cmd.spawn().unwrap());
    wait_until(Duration::from_secs(20), "four passes", || hup.describe_calls().len() >= 4);
    signal(pid, libc::SIGTERM);
    reaper.wait_child(pid, Duration::from_secs(10)).expect("stops");
    for call in hup.describe_calls() {
        assert_eq!(call["auth_scheme"], "AWS4-HMAC-SHA256", "{call}");
        assert_eq!(call["security_token"], true, "{call}");
        assert_eq!(call["status"], 200, "{call}");
    }
    let role_fetches = hup
        .emulator
        .get_json("/_emu/requests?kind=imds")
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"] == "/latest/meta-data/iam/security-credentials/emulator-role")
        .count();
    assert_eq!(role_fetches, 1, "credentials valid for hours are not fetched again every pass");

    // No credentials at all: the instance identity signs.
    std::fs::write(hup.dir.join("cfn-hup.conf"), format!("[main]\nstack={}\nurl={}\n", hup.stack, hup.emulator.url))
        .unwrap();
    hup.cmd().arg("--no-daemon").env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &hup.emulator.url).run().code(0);
    let last = hup.describe_calls().pop().unwrap();
    assert_eq!((last["auth_scheme"].as_str(), last["status"].as_i64()), (Some("CFN_V1"), Some(200)), "{last}");
    // …and off EC2 that is the reference's error, on stderr too.
    hup.cmd().arg("--no-daemon").run().code(1).stderr_has(
        "Error: In order to sign requests, 169.254.169.254 must be accessible or valid credentials must be set.",
    );
}

/// Throttling answers make the service poll less often (2×, then 4× the interval) and
/// are reported once; normal polling resumes when they stop.
#[test]
fn throttling_makes_the_daemon_back_off() {
    let hup = Hup::on(Emulator::start(&[]), &instance_template(&json!({"k": "v"})));
    hup.hooks(&format!(
        "[h]\ntriggers=post.update\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("h")
    ));
    // Two passes' worth (three tries each) of throttling.
    hup.emulator.post_json("/_emu/faults", &json!([{"action": "DescribeStackResource", "count": 6}]));
    let reaper = Reaper::new(&hup.pid_path());
    let pid = start_foreground(&hup, &reaper, "1", &["-v"]);
    wait_until(Duration::from_secs(60), "recovery", || hup.log().contains("CloudFormation answers again"));
    wait_until(Duration::from_secs(10), "one more pass", || hup.log().matches("Next pass in").count() >= 4);
    signal(pid, libc::SIGTERM);
    reaper.wait_child(pid, Duration::from_secs(10)).expect("stops");
    let log = hup.log();
    let waits: Vec<f64> = log
        .lines()
        .filter_map(|l| l.split("Next pass in ").nth(1))
        .map(|w| w.trim_end_matches(" s").parse().unwrap())
        .collect();
    // Interval 1 s, jitter ±0.25 s: after a throttled pass the next slot is left out, after
    // two the next three (so at least 1 and 3 intervals less twice the jitter); then the
    // normal cadence (at most one interval plus twice the jitter, and a little latency).
    assert!(waits[0] >= 0.5, "{waits:?}\n{log}");
    assert!(waits[1] >= 2.5, "{waits:?}\n{log}");
    assert!(waits[2] <= 1.6, "{waits:?}\n{log}");
    assert_eq!(
        log.matches("[WARNING] CloudFormation is throttling requests: Throttling: Rate exceeded").count(),
        1,
        "{log}"
    );
    assert_eq!(log.matches("[INFO] CloudFormation answers again").count(), 1, "{log}");
}

/// Context switches of every thread of `pid` so far, and how many threads it has.
fn switches_and_threads(pid: i32) -> (u64, usize) {
    let mut switches = 0;
    let mut threads = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        threads += 1;
        for line in status.lines() {
            if let Some(n) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                switches += n.trim().parse::<u64>().unwrap();
            }
        }
    }
    (switches, threads)
}

/// Between passes the service waits on its timer and its signals, nothing else: its one
/// thread does not wake up (0 CPU while idle), and SIGTERM ends it at once with the log
/// line and without the pid file (HUP-RUN-04).
#[test]
fn an_idle_service_does_not_wake_up_and_stops_at_once_on_sigterm() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(&format!(
        "[h]\ntriggers=post.update\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("h")
    ));
    let reaper = Reaper::new(&hup.pid_path());
    // The second pass comes at a random point of the first interval: with a day's
    // interval, within the test's few seconds only once in thousands of runs.
    let pid = start_foreground(&hup, &reaper, "86400", &["-v"]);
    wait_until(Duration::from_secs(20), "the first pass", || hup.log().contains("Next pass in"));
    // The pass's thread has ended: one thread is left, and it sleeps.
    wait_until(Duration::from_secs(5), "the pass's thread to end", || switches_and_threads(pid).1 == 1);
    let (before, _) = switches_and_threads(pid);
    std::thread::sleep(Duration::from_secs(3));
    let (after, threads) = switches_and_threads(pid);
    assert_eq!(threads, 1);
    assert!(after - before <= 2, "{} wake-ups in 3 s of idling", after - before);

    signal(pid, libc::SIGTERM);
    let stopping = Instant::now();
    let status = reaper.wait_child(pid, Duration::from_secs(10)).expect("stops on SIGTERM");
    // Generous for a loaded machine; without the prompt stop it would be the day-long interval.
    assert!(stopping.elapsed() < Duration::from_secs(10), "stopped after {:?}", stopping.elapsed());
    assert!(status.success(), "{status:?}");
    assert!(!hup.pid_path().exists());
    assert!(hup.log().ends_with("[INFO] Shutting down cfn-hup\n"), "{}", hup.log());
    assert_eq!(hup.describe_calls().len(), 1);
}

/// Starts the service with an update hook `slow` whose action runs `prefix`, then a
/// `sleep 300` in the background and waits for it, and a hook after it; returns the
/// pids of the action's shell and of its `sleep` once both run.
fn start_with_a_long_action(hup: &Hup, reaper: &Reaper, prefix: &str) -> (i32, i32, i32) {
    let pids = hup.sandbox.path("action.pids");
    hup.hooks(&format!(
        "[slow]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\n\
         action={prefix}sleep 300 & echo $$ $! > {0}.tmp; mv {0}.tmp {0}; wait\n\
         [next]\ntriggers=post.add\npath=Resources.Instance.Metadata.other\naction={1}\n",
        pids.display(),
        hup.recorder("next")
    ));
    let pid = start_foreground(hup, reaper, "3600", &[]);
    wait_until(Duration::from_secs(20), "the long action to start", || pids.exists());
    let text = read(&pids);
    let mut numbers = text.split_whitespace().map(|n| n.parse::<i32>().unwrap());
    let (shell, sleep) = (numbers.next().unwrap(), numbers.next().unwrap());
    reaper.watch(sleep);
    assert!(pid_alive(shell) && pid_alive(sleep));
    (pid, shell, sleep)
}

/// SIGTERM during an action (issue 13, item 12; HUP-RUN-04): the action's process group
/// gets SIGTERM — the action and the `sleep` it started end — the hooks after it do not
/// run, its state is not stored (it runs again next time), and cfn-hup stops at once,
/// exit 0, pid file removed, the stop logged.
#[test]
fn sigterm_during_an_action_terminates_its_process_group_and_stops_at_once() {
    let hup = Hup::new(&json!({"k": "v", "other": "w"}));
    let reaper = Reaper::new(&hup.pid_path());
    let (pid, shell, sleep) = start_with_a_long_action(&hup, &reaper, "");
    signal(pid, libc::SIGTERM);
    let stopping = Instant::now();
    let status = reaper.wait_child(pid, Duration::from_secs(15)).expect("stops during the action");
    // Generous for a loaded machine; waiting for the action would take its 300 s.
    assert!(stopping.elapsed() < Duration::from_secs(10), "stopped after {:?}", stopping.elapsed());
    assert!(status.success(), "{status:?}");
    assert!(!pid_alive(shell) && !pid_alive(sleep), "the action's processes are gone");
    assert!(!hup.pid_path().exists());
    assert!(hup.marks().is_empty(), "the next hook did not run: {:?}", hup.marks());
    assert!(
        !hup.db_path().exists() || !read(&hup.db_path()).contains("slow|"),
        "the stopped action's state is not stored"
    );
    let log = log_lines_without_time(&hup.log());
    let at = |line: &str| log.iter().position(|l| l == line).unwrap_or_else(|| panic!("no {line:?} in {log:#?}"));
    let requested = at("[INFO] Stop requested: cfn-hup stops once the running pass ends");
    let shutting = at("[INFO] Shutting down cfn-hup");
    let terminating = at(&format!("[INFO] Stopping: terminating the action for slow (pid {shell})"));
    assert!(requested < shutting && shutting < terminating, "{log:#?}");
    assert!(
        log.iter().any(|l| l == "[WARNING] Action for slow exited with -15; will retry on next iteration"),
        "{log:#?}"
    );
    assert!(!log.iter().any(|l| l.contains("killing it")), "{log:#?}");
}

/// An action that ignores SIGTERM (its shell and its `sleep`) is killed with its group
/// after the 5 s grace period (issue 13, item 12), and cfn-hup stops right after.
#[test]
fn an_action_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let hup = Hup::new(&json!({"k": "v", "other": "w"}));
    let reaper = Reaper::new(&hup.pid_path());
    let (pid, shell, sleep) = start_with_a_long_action(&hup, &reaper, "trap '' TERM; ");
    signal(pid, libc::SIGTERM);
    let stopping = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    assert!(pid_alive(pid) && pid_alive(shell) && pid_alive(sleep), "within the grace period the action still runs");
    let status = reaper.wait_child(pid, Duration::from_secs(15)).expect("stops after the grace period");
    let took = stopping.elapsed();
    assert!(took >= Duration::from_millis(4900) && took < Duration::from_secs(8), "stopped after {took:?}");
    assert!(status.success(), "{status:?}");
    assert!(!pid_alive(shell) && !pid_alive(sleep), "the action's processes are gone");
    assert!(!hup.pid_path().exists());
    assert!(hup.marks().is_empty(), "the next hook did not run: {:?}", hup.marks());
    let log = log_lines_without_time(&hup.log());
    let at = |line: &str| log.iter().position(|l| l == line).unwrap_or_else(|| panic!("no {line:?} in {log:#?}"));
    let terminating = at(&format!("[INFO] Stopping: terminating the action for slow (pid {shell})"));
    let killing = at(&format!(
        "[WARNING] Stopping: the action for slow (pid {shell}) is still running 5 s after SIGTERM; killing it"
    ));
    assert!(terminating < killing, "{log:#?}");
    assert!(
        log.iter().any(|l| l == "[WARNING] Action for slow exited with -9; will retry on next iteration"),
        "{log:#?}"
    );
}

/// Credentials are resolved by the daemon after it detached (the I/O runtime must not
/// exist before the fork); what fails there still reaches the launcher: the same message
/// on stderr as in the foreground, exit 1, logged, no pid file (HUP-RUN-02).
#[test]
fn a_credential_error_found_by_the_daemon_reaches_the_launcher() {
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks(&format!("[h]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n", hup.recorder("h")));
    std::fs::write(
        hup.dir.join("cfn-hup.conf"),
        format!("[main]\nstack={}\nurl={}\ncredential-file=/nonexistent/creds\n", hup.stack, hup.emulator.url),
    )
    .unwrap();
    let reaper = Reaper::new(&hup.pid_path());
    let expected =
        "Error: Could not retrieve credentials from file:\n\tCredential file was not found at /nonexistent/creds\n";
    for extra in [&[][..], &["-F"][..]] {
        let _ = std::fs::remove_file(hup.sandbox.path("log/cfn-hup.log"));
        let run = hup.cmd().args(extra).env(INTERVAL_VAR, "30").run();
        run.code(1).stdout_is("").stderr_is(expected);
        assert!(!hup.pid_path().exists(), "{run}");
        let lines = log_lines_without_time(&hup.log());
        assert_eq!(lines.last().map(String::as_str), Some("\tCredential file was not found at /nonexistent/creds"));
        assert!(lines.iter().any(|l| l == "[ERROR] Error: Could not retrieve credentials from file:"), "{lines:?}");
    }
    drop(reaper);
    assert!(hup.marks().is_empty());
}

/// cfn-hup killed while an action runs (SIGKILL, a crash, a power loss), and the value
/// back where it was before the restart (A → B, the action for B cut short, then A
/// again): the stored state still says A, yet the action runs again, for A, so the host
/// does not stay half-way to B; once it has ended, it does not run again (issue 13,
/// crash consistency; HUP-DET-02 otherwise unchanged).
#[test]
fn an_action_cut_short_by_a_kill_runs_again_after_the_restart() {
    use std::os::unix::process::CommandExt;
    let hup = Hup::new(&json!({"v": "A"}));
    let started = hup.sandbox.path("started");
    hup.hooks(&format!(
        "[h]\ntriggers=post.update\npath=Resources.Instance.Metadata.v\n\
         action=echo \"run $CFN_NEW_METADATA\" >> {marks}; \
         if [ \"$CFN_NEW_METADATA\" = B ]; then touch {started}; sleep 300; fi\n",
        marks = hup.marks_path().display(),
        started = started.display()
    ));
    hup.once();
    assert!(hup.marks().is_empty(), "the first pass only records A");

    hup.update(&json!({"v": "B"}));
    // In --no-daemon the action stays in cfn-hup's process group: a group of its own
    // for this cfn-hup is killed whole, as a power loss would end them all.
    let mut child = hup.cmd().arg("--no-daemon").cmd.process_group(0).spawn().unwrap();
    wait_until(Duration::from_secs(20), "the action for B to start", || started.exists());
    // SAFETY: signalling the process group this test made.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) }, 0);
    child.wait().unwrap();
    assert_eq!(hup.marks(), ["run B"]);

    hup.update(&json!({"v": "A"}));
    hup.once();
    assert_eq!(hup.marks(), ["run B", "run A"], "the cut-short action runs again for the current value");
    assert!(
        hup.log().contains("[INFO] The action for h was cut short in an earlier pass; it will be run again"),
        "{}",
        hup.log()
    );
    let started_record = hup.sandbox.path("lib/cfn-hup/data/actions_started.json");
    assert_eq!(read(&started_record), "[]");
    hup.once();
    assert_eq!(hup.marks(), ["run B", "run A"], "ended: it does not run again");
}

#[test]
fn the_state_file_is_made_empty_at_start_and_read_as_no_state() {
    // STATE-04, as the reference: the private data directory and an empty
    // metadata_db.json exist from the start, even when the first pass stores nothing.
    let hup = Hup::new(&json!({"k": "v"}));
    hup.hooks("[missing]\ntriggers=post.add\npath=Resources.Missing.Metadata\naction=true\n");
    hup.once();
    let dir = hup.db_path().parent().unwrap().to_path_buf();
    let mode = |path: &Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions());
    assert_eq!(mode(&dir) & 0o7777, 0o700);
    assert_eq!(mode(&hup.db_path()) & 0o7777, 0o600);
    assert_eq!(std::fs::read(hup.db_path()).unwrap(), b"", "the pass stored nothing, the file stays empty");
    let log = hup.log();
    let initialized =
        log.find(&format!("[DEBUG] CloudFormation client initialized with endpoint {}\n", hup.emulator.url));
    let creating = log.find(&format!("[DEBUG] Creating {}\n", dir.display()));
    assert!(initialized.is_some() && creating.is_some() && initialized < creating, "{log}");
    // Without -v these two DEBUG lines are there all the same, as in the reference's
    // logs: they are written while the configuration is read; the pass logs at INFO.
    assert!(!log.contains("[DEBUG] Describing resource"), "{log}");

    // The empty file is no state: a post.add hook fires, without a warning about it.
    hup.hooks(&format!(
        "[add]\ntriggers=post.add\npath=Resources.Instance.Metadata.k\naction={}\n",
        hup.recorder("add")
    ));
    hup.cmd().args(["-v", "--no-daemon"]).run().code(0);
    assert_eq!(hup.marks(), ["add CFN_NEW_METADATA=v"]);
    assert!(!hup.log().contains("Ignoring"), "{}", hup.log());
    // The action printed nothing: the reference's words for that.
    assert!(hup.log().contains("[DEBUG] Action for add output: <None>\n"), "{}", hup.log());
    assert_eq!(read(&hup.db_path()), r#"{"add|Resources.Instance.Metadata.k": "v"}"#);
}

/// The reference's four recorded passes (tests/golden/cfn-hup/reference-pass: the same
/// hooks, the same metadata before and after a metadata-only update), run again through
/// our cfn-hup; cfn-hup.log is compared line for line once times, the endpoint, the
/// stack name and the state directory are put back as recorded (LOG-02, HUP-DETECT-*).
/// The only lines that differ are those of BUG-FALSY, fixed on purpose: `""` and `0`
/// are values, so they are added in pass 1 and updated in pass 3.
#[test]
fn a_pass_logs_what_the_reference_logs_except_where_falsy_values_are_fixed() {
    let v1 = json!({"AWS::CloudFormation::Init": {"config": {"files": {"/tmp/a": {"content": "one"}}}}, "c": {"leaf": "x"}, "f": "", "n": 0});
    let v2 = json!({"AWS::CloudFormation::Init": {"config": {"files": {"/tmp/a": {"content": "two"}}}}, "a": {"b": "added"}, "f": "now", "n": 5});
    let hup = Hup::new(&v1);
    let hooks = [
        ("init-update", "post.update", "Resources.Instance.Metadata.AWS::CloudFormation::Init"),
        ("nested-add", "post.add", "Resources.Instance.Metadata.a.b"),
        ("nested-remove", "post.remove", "Resources.Instance.Metadata.c"),
        ("phys", "post.add,post.update", "Resources.Instance.PhysicalResourceId"),
        ("last", "post.add,post.update", "Resources.Instance"),
        ("falsy", "post.add,post.update", "Resources.Instance.Metadata.f"),
        ("zero", "post.add,post.update,post.remove", "Resources.Instance.Metadata.n"),
    ];
    let mut conf: String = hooks
        .iter()
        .map(|(name, triggers, path)| {
            format!("[{name}]\ntriggers={triggers}\npath={path}\naction=echo output of {name}\n\n")
        })
        .collect();
    conf.push_str(
        "[failing]\ntriggers=post.add\npath=Resources.Instance.Metadata.c.leaf\naction=echo failing out; exit 3\n",
    );
    hup.hooks(&conf);
    let golden = workspace().join("tests/golden/cfn-hup/reference-pass");
    let state_dir = hup.db_path().parent().unwrap().display().to_string();
    let added_on_purpose = |name: &str| {
        vec![
            format!("[INFO] Previous state not found; action for {name} will be run"),
            format!("[INFO] Running action for {name}"),
            format!("[DEBUG] Action for {name} output: output of {name}"),
            String::new(),
        ]
    };
    let mut identical = 0;
    for pass in 1..=4 {
        if pass == 3 {
            hup.update(&v2);
        }
        let _ = std::fs::remove_file(hup.sandbox.path("log/cfn-hup.log"));
        hup.cmd().args(["-v", "--no-daemon"]).run().code(0);
        let ours: Vec<String> = log_lines_without_time(&hup.log())
            .into_iter()
            .map(|l| {
                l.replace(&hup.emulator.url, "http://127.0.0.1:5055")
                    .replace(&format!("stack {}", hup.stack), "stack hupref")
                    .replace(&state_dir, "/var/lib/cfn-hup/data")
            })
            .collect();
        let reference = log_lines_without_time(&read(&golden.join(format!("pass{pass}.cfn-hup.log"))));
        if ours == reference {
            identical += 1;
        }
        reference_lines::assert_keeps_reference_lines(
            &format!("cfn-hup/reference-pass/pass{pass}.cfn-hup.log"),
            &ours,
            &reference,
        );
        // What BUG-FALSY changes, line for line.
        let mut expected = reference.clone();
        let at = |lines: &[String], line: &str| lines.iter().position(|l| l == line).unwrap();
        match pass {
            1 => {
                for name in ["falsy", "zero"] {
                    let path = hooks.iter().find(|h| h.0 == name).unwrap().2;
                    let i = at(&expected, &format!("[DEBUG] No change in path {path} for hook {name}"));
                    expected.splice(i..=i, added_on_purpose(name));
                }
            }
            3 => {
                for name in ["falsy", "zero"] {
                    let i = at(&expected, &format!("[INFO] Previous state not found; action for {name} will be run"));
                    expected[i] = format!("[INFO] Data has changed from previous state; action for {name} will be run");
                }
            }
            _ => {}
        }
        assert_eq!(ours, expected, "pass {pass}\n{}", hup.log());
    }
    println!(
        "cfn-hup.log byte-identical to the reference's: {identical} of 4 passes (1 and 3 differ by BUG-FALSY only)"
    );
    let unused = reference_lines::unused(|scenario| scenario.starts_with("cfn-hup/reference-pass/"));
    assert!(unused.is_empty(), "NOT_KEPT entries that excuse no line any more:\n{unused:?}");
}
