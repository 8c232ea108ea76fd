//! `cfn-bootstrap doctor` (issue 24) on a host set up in a sandbox, each test in a network
//! namespace of its own with its own emulator: a healthy host is all ok (exit 0), a
//! stored value equal to the stack's is a warning (exit 2), and each fault — a hook path
//! naming a missing resource or key, a credential file open to its group, a stale pid
//! file, cfn-init's last run failed — fails its own check with words saying what to do
//! (exit 1). Doctor writes nothing: a snapshot of every file it could touch is the same
//! after its run.

mod common;
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

/// `doctor::RUN_BOUND`, and a margin for starting the process on a busy machine.
const RUN_BOUND: Duration = Duration::from_secs(20);
const MARGIN: Duration = Duration::from_secs(3);

/// A stack with an instance (cfn-init's resource, running `command`) and a resource a
/// hook watches.
fn template(command: &str, version: &str) -> Value {
    json!({
        "Resources": {
            "Instance": {
                "Type": "AWS::EC2::Instance",
                "Metadata": {"AWS::CloudFormation::Init": {"config": {"commands": {"01": {"command": command}}}}},
                "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}
            },
            "Watched": {"Type": "AWS::CloudFormation::WaitConditionHandle", "Metadata": {"app": {"version": version}}}
        }
    })
}

/// A host: the sandbox (tool links, state, logs, run directory), cfn-hup's configuration
/// with keys in a credential file, a stack, and the processes it started.
struct Host {
    sandbox: Sandbox,
    emulator: Emulator,
    stack: String,
    conf: PathBuf,
    creds: PathBuf,
    children: Vec<Child>,
}

impl Host {
    fn new(command: &str) -> Host {
        let emulator = Emulator::start(&[]);
        let sandbox = Sandbox::new();
        let stack = emulator.create_stack(&unique("doctor"), &template(command, "1"));
        let conf = sandbox.path("conf");
        std::fs::create_dir_all(conf.join("hooks.d")).unwrap();
        let creds =
            sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
        let main = format!("[main]\nstack={stack}\ncredential-file={}\nurl={}\n", creds.display(), emulator.url);
        std::fs::write(conf.join("cfn-hup.conf"), main).unwrap();
        let host = Host { sandbox, emulator, stack, conf, creds, children: Vec::new() };
        host.hooks("Resources.Watched.Metadata.app.version");
        host
    }

    fn hooks(&self, path: &str) {
        let text = format!(
            "[watch]\ntriggers=post.update\npath={path}\naction=/bin/true\n\
             [watch-app]\ntriggers=post.update\npath=Resources.Watched.Metadata.app\naction=true\nrunas=root\n"
        );
        std::fs::write(self.conf.join("hooks.conf"), text).unwrap();
    }

    fn cfn_init(&self) -> Run {
        self.sandbox.cmd("cfn-init").args(["-s", &self.stack, "-r", "Instance"]).with_keys(&self.emulator).run()
    }

    /// A process that passes for a running cfn-hup (its name is cfn-hup), and the pid
    /// file naming it: for the tests about something else.
    fn pretend_cfn_hup_runs(&mut self) {
        let sleep = ["/bin/sleep", "/usr/bin/sleep"].into_iter().find(|p| Path::new(p).exists()).unwrap();
        let link = self.sandbox.path("cfn-hup");
        std::os::unix::fs::symlink(sleep, &link).unwrap();
        let child = std::process::Command::new(&link).arg("600").spawn().unwrap();
        // Until the child has exec'd, /proc shows the test's own command line, and doctor
        // would rightly call the pid file stale (seen on a loaded machine).
        let cmdline = format!("/proc/{}/cmdline", child.id());
        wait_until(Duration::from_secs(30), "the pretend cfn-hup to start", || {
            std::fs::read(&cmdline).is_ok_and(|c| c.split(|b| *b == 0).next().is_some_and(|a| a.ends_with(b"cfn-hup")))
        });
        std::fs::write(self.sandbox.path("run/cfn-hup.pid"), format!("{}\n", child.id())).unwrap();
        self.children.push(child);
    }

    /// The real cfn-hup in the foreground, with an interval far longer than the test: it
    /// makes its first pass and then waits.
    fn start_cfn_hup(&mut self) {
        let mut cmd = self.sandbox.cmd("cfn-hup").args(["-F", "-c"]).arg(&self.conf);
        cmd = cmd.env("CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS", "3600");
        cmd.cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        self.children.push(cmd.cmd.spawn().expect("start cfn-hup -F"));
        let activity = self.sandbox.path("lib/cfn-hup/data/activity.json");
        wait_until(Duration::from_secs(30), "cfn-hup's first pass", || {
            std::fs::read(&activity)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|a| !a["last_pass"].is_null())
        });
    }

    fn doctor(&self, args: &[&str]) -> Run {
        let path = format!("{}:{}", self.sandbox.path("bin").display(), std::env::var("PATH").unwrap_or_default());
        self.sandbox
            .cmd_via(binary(), "cfn-bootstrap")
            .arg("doctor")
            .arg("-c")
            .arg(&self.conf)
            .args(args)
            .env("PATH", path)
            .env("CFN_BOOTSTRAP_BIN_DIR", self.sandbox.path("bin"))
            // Killed well past its bound: a run that does not end fails its test.
            .run_within(RUN_BOUND * 3)
    }

    /// The JSON checklist, by id.
    fn checks(&self) -> (Run, BTreeMap<String, Value>) {
        let run = self.doctor(&["--format", "json"]);
        let json: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
        let checks =
            json["checks"].as_array().unwrap().iter().map(|c| (c["id"].as_str().unwrap().to_string(), c.clone()));
        let checks: BTreeMap<String, Value> = checks.collect();
        assert_eq!(json["exit"], run.code, "{}", run.stdout);
        (run, checks)
    }

    fn describes(&self) -> Vec<String> {
        let requests = self.emulator.requests_for(&self.stack);
        requests
            .iter()
            .filter(|r| r["form"]["Action"] == "DescribeStackResource")
            .map(|r| r["form"]["LogicalResourceId"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The ids whose verdict is `verdict`.
fn with_verdict<'a>(checks: &'a BTreeMap<String, Value>, verdict: &str) -> Vec<&'a str> {
    checks.iter().filter(|(_, c)| c["verdict"] == verdict).map(|(id, _)| id.as_str()).collect()
}

fn check<'a>(checks: &'a BTreeMap<String, Value>, id: &str) -> &'a Value {
    checks.get(id).unwrap_or_else(|| panic!("no check {id} in {checks:#?}"))
}

/// Every file and directory under `root`: its size, modification time and mode.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut all = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        all.insert(path.clone(), (meta.len(), meta.modified().unwrap(), meta.mode()));
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    all
}

/// A healthy host: cfn-init ran, cfn-hup runs and has made its pass. Its stored value
/// equals the stack's (a warning, exit 2); once the stack changes, every check is ok or
/// skipped (exit 0), with one DescribeStackResource per resource, and nothing written.
#[test]
fn a_healthy_host_is_all_ok_and_a_stored_value_equal_to_the_stacks_is_up_to_date() {
    let (stored_equal, healthy, text, describes, before, after) = in_private_network(|| {
        let mut host = Host::new("true");
        host.cfn_init().code(0);
        // A backup beside a hook file: reported as skipped, not an error.
        std::fs::write(host.conf.join("hooks.d/restart.conf.bak"), "[old]\ntriggers=x\n").unwrap();
        host.start_cfn_hup();
        let (run, stored_equal) = host.checks();
        run.code(0);
        host.emulator.update_stack(&host.stack, &template("true", "2"));
        let root = host.sandbox.dir.path().to_path_buf();
        let before = snapshot(&root);
        let asked = host.describes().len();
        let (run, healthy) = host.checks();
        let describes = host.describes()[asked..].to_vec();
        let after = snapshot(&root);
        run.code(0).stderr_is("");
        let text = host.doctor(&[]);
        text.code(0);
        (stored_equal, healthy, text.stdout.clone(), describes, before, after)
    });
    // Up to date is healthy: exit 0, said as information (issue 30).
    let up_to_date = check(&stored_equal, "hook.path:watch");
    assert_eq!(up_to_date["verdict"], "ok", "{up_to_date}");
    assert_eq!(
        up_to_date["found"],
        "Resources.Watched.Metadata.app.version: up to date: the stored value equals the stack's; the hook runs \
         when the stack's value changes"
    );
    assert_eq!(with_verdict(&stored_equal, "warning"), Vec::<&str>::new());
    assert_eq!(with_verdict(&stored_equal, "failed"), Vec::<&str>::new());

    assert_eq!(with_verdict(&healthy, "warning"), Vec::<&str>::new(), "{healthy:#?}");
    assert_eq!(with_verdict(&healthy, "failed"), Vec::<&str>::new(), "{healthy:#?}");
    for id in [
        "install.version",
        "install.path:cfn-init",
        "install.link:cfn-send-cmd-event",
        "hup.config",
        "hup.credentials",
        "hup.skipped:restart.conf.bak",
        "hook.triggers:watch",
        "hook.runas:watch-app",
        "hook.action:watch",
        "service.process",
        "service.last_pass",
        "api.describe:Watched",
        "hook.path:watch",
        "init.last_run",
        "init.state",
        "init.metadata",
    ] {
        assert_eq!(check(&healthy, id)["verdict"], "ok", "{id}: {:#}", check(&healthy, id));
    }
    assert_eq!(
        check(&healthy, "hup.skipped:restart.conf.bak")["found"],
        "hooks.d/restart.conf.bak skipped: a backup file (cfn-hup does not read it)"
    );
    assert!(check(&healthy, "hook.path:watch")["found"].as_str().unwrap().contains("differs from the one stored"));
    // Two hooks on Watched and cfn-init's Instance: one call each.
    let mut describes = describes;
    describes.sort();
    assert_eq!(describes, ["Instance", "Watched"]);
    assert_eq!(before, after, "doctor wrote nothing");
    println!("{text}");
    // The keys come from the credential file: the instance metadata service is not used.
    assert_eq!(with_verdict(&healthy, "skipped"), ["credentials.imds", "credentials.imdsv2"]);
    assert!(text.ends_with(&format!("{} ok, 0 warning(s), 0 failed, 2 skipped\n", with_verdict(&healthy, "ok").len())));
}

/// The checklist of a host whose one hook watches `path` (cfn-hup running).
fn checks_with_hook_path(path: &str) -> (Run, BTreeMap<String, Value>) {
    let path = path.to_string();
    in_private_network(move || {
        let mut host = Host::new("true");
        host.hooks(&path);
        host.pretend_cfn_hup_runs();
        host.checks()
    })
}

#[test]
fn a_hook_path_naming_a_resource_not_in_the_stack_fails() {
    let (run, checks) = checks_with_hook_path("Resources.Nowhere.Metadata.app");
    run.code(1);
    assert_eq!(with_verdict(&checks, "failed"), ["api.describe:Nowhere", "hook.path:watch"]);
    let path = check(&checks, "hook.path:watch");
    assert!(
        path["found"]
            .as_str()
            .unwrap()
            .starts_with("the path names a resource that is not in the stack: Resources.Nowhere.Metadata.app"),
        "{path}"
    );
    assert!(path["fix"].as_str().unwrap().contains("correct path in hook watch"), "{path}");
}

#[test]
fn a_hook_path_ending_in_a_key_that_does_not_exist_fails() {
    let (run, checks) = checks_with_hook_path("Resources.Watched.Metadata.app.nope");
    run.code(1);
    assert_eq!(with_verdict(&checks, "failed"), ["hook.path:watch"]);
    assert_eq!(
        check(&checks, "hook.path:watch")["found"],
        "the path ends in a key that does not exist: Resources.Watched.Metadata.app.nope (no key nope)"
    );
    assert_eq!(check(&checks, "api.describe:Watched")["verdict"], "ok");
}

#[test]
fn a_credential_file_readable_by_its_group_fails_with_the_chmod_to_fix_it() {
    let (run, checks, creds) = in_private_network(|| {
        let mut host = Host::new("true");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&host.creds, std::fs::Permissions::from_mode(0o640)).unwrap();
        host.pretend_cfn_hup_runs();
        let (run, checks) = host.checks();
        (run, checks, host.creds.clone())
    });
    run.code(1);
    let creds_check = check(&checks, "hup.credentials");
    assert_eq!(creds_check["verdict"], "failed");
    assert_eq!(
        creds_check["found"],
        format!("credential-file {} is open to its group (mode 0640)", creds.display()).as_str()
    );
    assert_eq!(creds_check["fix"], format!("chmod 600 {}", creds.display()).as_str());
    // The credentials section says the same from its side: the file yields no keys.
    assert_eq!(with_verdict(&checks, "failed"), ["credentials.source", "hup.credentials"]);
    // The API is not asked with credentials cfn-hup would refuse.
    let api = check(&checks, "api.describe:Watched");
    assert_eq!(api["verdict"], "skipped");
    assert!(api["found"].as_str().unwrap().starts_with("not asked: no credentials ("), "{api}");
    assert_eq!(check(&checks, "hook.path:watch")["verdict"], "skipped");
}

#[test]
fn a_stale_pid_file_fails_with_its_removal_as_the_fix() {
    let (run, checks, pid_file, pid) = in_private_network(|| {
        let host = Host::new("true");
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        gone.wait().unwrap();
        let pid_file = host.sandbox.path("run/cfn-hup.pid");
        std::fs::write(&pid_file, format!("{pid}\n")).unwrap();
        let (run, checks) = host.checks();
        (run, checks, pid_file, pid)
    });
    run.code(1);
    let process = check(&checks, "service.process");
    assert_eq!(process["verdict"], "failed");
    assert_eq!(process["found"], format!("stale pid file {}: process {pid} is gone", pid_file.display()).as_str());
    assert!(process["fix"].as_str().unwrap().starts_with(&format!("rm {}, then start cfn-hup", pid_file.display())));
    assert_eq!(with_verdict(&checks, "failed"), ["service.process"]);
}

#[test]
fn cfn_inits_failed_last_run_fails_with_its_error_and_status_long_as_the_fix() {
    let (run, checks, text) = in_private_network(|| {
        let mut host = Host::new("exit 3");
        host.cfn_init().code(1);
        host.pretend_cfn_hup_runs();
        let (run, checks) = host.checks();
        (run, checks, host.doctor(&[]).stdout.clone())
    });
    run.code(1);
    let last = check(&checks, "init.last_run");
    assert_eq!(last["verdict"], "failed");
    let found = last["found"].as_str().unwrap();
    assert!(found.starts_with("cfn-init's last run (") && found.contains("failed: Command 01 failed"), "{found}");
    assert_eq!(last["fix"], "cfn-bootstrap status --long");
    assert_eq!(with_verdict(&checks, "failed"), ["init.last_run"]);
    // What cfn-init stored is still the stack's metadata.
    assert_eq!(check(&checks, "init.metadata")["verdict"], "ok");
    assert!(text.contains("fix: cfn-bootstrap status --long\n"), "{text}");
}

/// `--stack`/`--resource` and keys: cfn-init's set-up without cfn-hup. The API check and
/// the comparison of cfn-init's stored metadata share one DescribeStackResource.
#[test]
fn a_cfn_init_set_up_is_checked_from_the_command_line_with_one_call() {
    let (run, checks, describes, conf) = in_private_network(|| {
        let host = Host::new("true");
        host.cfn_init().code(0);
        std::fs::remove_file(host.conf.join("cfn-hup.conf")).unwrap();
        let asked = host.describes().len();
        let run = host.doctor(&[
            "--format",
            "json",
            "--stack",
            &host.stack,
            "--resource",
            "Instance",
            "--url",
            &host.emulator.url,
            "--access-key",
            ACCESS_KEY,
            "--secret-key",
            SECRET_KEY,
        ]);
        let json: Value = serde_json::from_str(&run.stdout).unwrap();
        let checks: BTreeMap<String, Value> = json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].as_str().unwrap().to_string(), c.clone()))
            .collect();
        (run, checks, host.describes()[asked..].to_vec(), host.conf.clone())
    });
    run.code(0);
    assert_eq!(check(&checks, "hup.config")["verdict"], "skipped");
    assert_eq!(
        check(&checks, "hup.config")["found"],
        format!("no {}/cfn-hup.conf: cfn-hup is not set up here (checking stack {} only)", conf.display(), {
            let id = checks.keys().find(|k| k.starts_with("api.describe:")).unwrap();
            id.trim_start_matches("api.describe:").trim_end_matches("/Instance").to_string()
        })
        .as_str()
    );
    assert_eq!(check(&checks, "service.process")["verdict"], "skipped");
    let api = checks.iter().find(|(k, _)| k.starts_with("api.describe:")).unwrap().1;
    assert_eq!(api["verdict"], "ok", "{api}");
    assert_eq!(check(&checks, "init.metadata")["verdict"], "ok");
    assert_eq!(describes, ["Instance"], "one call for the API check and cfn-init's metadata");
}

/// The API's errors, each said with what to do: a wrong secret key, AccessDenied,
/// throttling (a warning), a stack that does not exist, and an answer that never comes
/// (the call ends at the probe's bound).
#[test]
fn api_errors_are_said_with_what_to_do_and_a_hanging_call_is_bounded() {
    let runs = in_private_network(|| {
        let host = Host::new("true");
        std::fs::remove_file(host.conf.join("cfn-hup.conf")).unwrap();
        let doctor = |stack: &str, secret: &str| {
            let run = host.doctor(&[
                "--format",
                "json",
                "--stack",
                stack,
                "--resource",
                "Instance",
                "--url",
                &host.emulator.url,
                "--access-key",
                ACCESS_KEY,
                "--secret-key",
                secret,
            ]);
            let json: Value = serde_json::from_str(&run.stdout).unwrap();
            let api =
                json["checks"].as_array().unwrap().iter().find(|c| c["id"] == format!("api.describe:{stack}/Instance"));
            (run.code, run.elapsed, api.unwrap().clone())
        };
        let fault = |code: &str, status: u16, message: &str, delay: u64| {
            let rule = json!([{"action": "DescribeStackResource", "stack": host.stack, "code": code, "status": status,
                               "message": message, "delay": delay}]);
            host.emulator.post_json("/_emu/faults", &rule);
        };
        let mut runs = vec![doctor(&host.stack, "wrong/secret")];
        fault("AccessDenied", 403, "User: arn:aws:iam::123456789012:user/x is not authorized", 0);
        runs.push(doctor(&host.stack, SECRET_KEY));
        fault("Throttling", 400, "Rate exceeded", 0);
        runs.push(doctor(&host.stack, SECRET_KEY));
        runs.push(doctor("no-such-stack", SECRET_KEY));
        fault("Throttling", 400, "Rate exceeded", 30);
        runs.push(doctor(&host.stack, SECRET_KEY));
        runs
    });
    let said = |i: usize| {
        (
            runs[i].0,
            runs[i].2["verdict"].as_str().unwrap(),
            runs[i].2["found"].as_str().unwrap(),
            runs[i].2["fix"].as_str().unwrap(),
        )
    };
    let (code, verdict, found, fix) = said(0);
    assert_eq!((code, verdict), (1, "failed"));
    assert!(
        found.starts_with("SignatureDoesNotMatch: ")
            && found.ends_with("(the secret key is wrong, or the clock is off)"),
        "{found}"
    );
    assert!(fix.contains("clock"), "{fix}");
    let (code, verdict, found, fix) = said(1);
    assert_eq!((code, verdict), (1, "failed"));
    assert!(found.starts_with("AccessDenied: User: arn:aws:iam::123456789012:user/x is not authorized"), "{found}");
    assert!(fix.starts_with("allow cloudformation:DescribeStackResource on stack doctor-"), "{fix}");
    let (code, verdict, found, fix) = said(2);
    assert_eq!((code, verdict, found), (2, "warning", "Throttling: Rate exceeded (throttled)"));
    assert!(fix.starts_with("wait a few minutes"), "{fix}");
    let (code, verdict, found, fix) = said(3);
    assert_eq!((code, verdict), (1, "failed"));
    assert!(found.starts_with("ValidationError: Stack 'no-such-stack' does not exist"), "{found}");
    assert_eq!(fix, "correct the stack name or the region (cfn-hup.conf, or --stack and --region)");
    let (code, verdict, found, fix) = said(4);
    assert_eq!((code, verdict), (1, "failed"));
    assert!(found.starts_with("Could not reach "), "{found}");
    assert!(fix.starts_with("see the network checks"), "{fix}");
    assert!(runs[4].1 < Duration::from_secs(10), "bounded by the probe's timeout: {:?}", runs[4].1);
}

/// The classic trap: a leftover Python cfn-init earlier on PATH, named with its
/// interpreter line; a link missing from the install directory, with the `ln -s` to
/// make it.
#[test]
fn a_python_cfn_init_earlier_on_path_fails_and_a_missing_link_says_how_to_make_it() {
    let (run, checks, sandbox_dir) = in_private_network(|| {
        let sandbox = Sandbox::new();
        let old = sandbox.path("old-bin");
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join("cfn-init"), "#!/usr/bin/python\nimport cfnbootstrap\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(old.join("cfn-init"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_file(sandbox.path("bin/cfn-signal")).unwrap();
        let path = format!("{}:{}:{}", old.display(), sandbox.path("bin").display(), std::env::var("PATH").unwrap());
        let run = sandbox
            .cmd_via(binary(), "cfn-bootstrap")
            .args(["doctor", "--format", "json", "-c"])
            .arg(sandbox.path("no-conf"))
            .env("PATH", path)
            .env("CFN_BOOTSTRAP_BIN_DIR", sandbox.path("bin"))
            .run();
        let json: Value = serde_json::from_str(&run.stdout).unwrap();
        let checks: BTreeMap<String, Value> = json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].as_str().unwrap().to_string(), c.clone()))
            .collect();
        (run, checks, sandbox.dir.path().to_path_buf())
    });
    run.code(1);
    let me = std::fs::canonicalize(binary()).unwrap();
    let trap = check(&checks, "install.path:cfn-init");
    assert_eq!(trap["verdict"], "failed");
    assert_eq!(
        trap["found"],
        format!(
            "PATH finds {}/old-bin/cfn-init first: a '#!/usr/bin/python' script, not this binary ({})",
            sandbox_dir.display(),
            me.display()
        )
        .as_str()
    );
    let link = check(&checks, "install.link:cfn-signal");
    assert_eq!(link["verdict"], "warning");
    assert_eq!(link["fix"], format!("ln -s {} {}/bin/cfn-signal", me.display(), sandbox_dir.display()).as_str());
    assert_eq!(check(&checks, "install.path:cfn-signal")["verdict"], "warning", "not on PATH at all");
    // (No credentials are set up here: only the install's failures are this test's.)
    let install_failed: Vec<&str> =
        with_verdict(&checks, "failed").into_iter().filter(|id| id.starts_with("install.")).collect();
    assert_eq!(install_failed, ["install.path:cfn-init"]);
}

/// A hook whose action fails: the service's checks say since when, and the pass that
/// failed; warnings only (exit 2).
#[test]
fn a_failing_hook_action_is_reported_with_since_when() {
    let (run, checks) = in_private_network(|| {
        let mut host = Host::new("true");
        let text = "[fails]\ntriggers=post.add\npath=Resources.Watched.Metadata.app\naction=exit 4\n";
        std::fs::write(host.conf.join("hooks.conf"), text).unwrap();
        host.start_cfn_hup();
        host.checks()
    });
    run.code(2);
    let hook = check(&checks, "service.hook:fails");
    assert_eq!(hook["verdict"], "warning");
    let found = hook["found"].as_str().unwrap();
    assert!(found.starts_with("the action of fails has failed 1 time(s) in a row since 20"), "{found}");
    assert!(found.ends_with(": exit 4; next try at the next pass"), "{found}");
    let pass = check(&checks, "service.last_pass");
    assert_eq!(pass["verdict"], "warning");
    assert!(pass["found"].as_str().unwrap().ends_with("1 action(s) run, 1 failed: actions failed"), "{pass}");
    assert_eq!(
        check(&checks, "service.last_error")["found"].as_str().unwrap().split_once(": ").unwrap().1,
        "Action for fails exited with 4"
    );
    assert_eq!(with_verdict(&checks, "failed"), Vec::<&str>::new());
}

/// Issue 31, F8: the `hup.config` line showed cfn-hup.conf's `url` with its password.
#[test]
fn the_password_of_cfn_hups_url_is_never_shown() {
    let (text, json) = in_private_network(|| {
        let host = Host::new("true");
        let url = host.emulator.url.replace("http://", "http://hupuser:hup-password-31@");
        let main = format!("[main]\nstack={}\ncredential-file={}\nurl={url}\n", host.stack, host.creds.display());
        std::fs::write(host.conf.join("cfn-hup.conf"), main).unwrap();
        (host.doctor(&[]), host.checks())
    });
    for run in [&text, &json.0] {
        assert!(!run.stdout.contains("hup-password-31") && !run.stderr.contains("hup-password-31"), "{run}");
    }
    let config = check(&json.1, "hup.config")["found"].as_str().unwrap().to_string();
    assert!(config.contains("url http://REDACTED@127.0.0.1:"), "{config}");
}

/// Makes a FIFO at `path` (its directory made).
fn fifo_at(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("run mkfifo");
    assert!(status.success());
}

/// Issue 31, F10: a FIFO in place of activity.json or of the pid file held doctor
/// forever, and activity.json linked to /dev/zero was read until memory ran out. Each is
/// refused at once, naming the file.
#[test]
fn a_fifo_or_an_endless_file_in_place_of_cfn_hups_state_is_refused_naming_it() {
    let (fifos, zero, activity, pid_file) = in_private_network(|| {
        let host = Host::new("true");
        let activity = host.sandbox.path("lib/cfn-hup/data/activity.json");
        let pid_file = host.sandbox.path("run/cfn-hup.pid");
        fifo_at(&activity);
        fifo_at(&pid_file);
        let fifos = host.checks();
        std::fs::remove_file(&activity).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &activity).unwrap();
        let zero = host.checks();
        (fifos, zero, activity, pid_file)
    });
    let (run, checks) = fifos;
    assert!(run.elapsed < RUN_BOUND + MARGIN, "took {:?}\n{run}", run.elapsed);
    let process = check(&checks, "service.process");
    assert_eq!(process["verdict"], "failed");
    assert_eq!(
        process["found"],
        format!("cannot read the pid file {}: it is a FIFO, not a regular file", pid_file.display()).as_str()
    );
    let pass = check(&checks, "service.last_pass");
    assert_eq!(pass["verdict"], "failed");
    assert_eq!(pass["found"], format!("cannot read {}: it is a FIFO, not a regular file", activity.display()).as_str());
    assert!(pass["fix"].as_str().unwrap().starts_with(&format!("rm {}", activity.display())), "{pass}");

    let (run, checks) = zero;
    assert!(run.elapsed < RUN_BOUND + MARGIN, "took {:?}\n{run}", run.elapsed);
    let pass = check(&checks, "service.last_pass");
    assert_eq!(
        pass["found"],
        format!("cannot read {}: it is a symbolic link, not the regular file the tools write", activity.display())
            .as_str()
    );
}

/// Issue 31, F11: a hook file in hooks.d linked to a root-only file had that file's first
/// line printed (a shadow file's hash, twice). cfn-hup reads hook files through links,
/// and so does doctor; it never quotes a line of a file that is not root's and readable
/// by all.
#[test]
fn a_hook_file_linked_to_a_private_file_is_never_quoted() {
    use std::os::unix::fs::PermissionsExt;
    let (text, json, linked) = in_private_network(|| {
        let host = Host::new("true");
        let private = host.sandbox.path("shadow");
        std::fs::write(&private, "root:$6$private-salt-31$private-hash-31:19000:0:99999:7:::\n").unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
        let linked = host.conf.join("hooks.d/shadow.conf");
        std::os::unix::fs::symlink(&private, &linked).unwrap();
        (host.doctor(&[]), host.checks(), linked)
    });
    for run in [&text, &json.0] {
        for secret in ["private-hash-31", "private-salt-31", "root:$6$"] {
            assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret), "{secret} shown\n{run}");
        }
    }
    let file = check(&json.1, "hup.hook_file:hooks.d/shadow.conf");
    assert_eq!(file["verdict"], "failed");
    assert_eq!(
        file["found"],
        format!(
            "File contains no section headers: file {0}, line 1 (the line is not shown: {0} is not owned by root \
             and readable by all)",
            linked.display()
        )
        .as_str()
    );
    assert_eq!(check(&json.1, "hup.hooks")["verdict"], "failed");
}

/// Hook files an attacker made large (issue 31, F4 and F12): 1 MB of `%(` with no `)s`
/// after them in an action (117 s before: each `%(` searched the rest of the value), and
/// 1 MB of empty sections before the hooks, and a hook with 1 MB of keys (past 120 s:
/// each header and key was found by walking those before it). Each doctor run ends at
/// once with the verdicts it gave before: the bad value fails `hup.hooks` naming it,
/// the large files parse and their hooks are checked.
#[test]
fn hook_files_of_a_megabyte_of_references_sections_or_keys_are_checked_at_once() {
    // Some 5 s in a debug build, where hashing is slow and doctor reads the hook files
    // four times; a tenth of that in a release build.
    let bound = Duration::from_secs(30);
    let results = in_private_network(move || {
        let host = Host::new("true");
        let file = host.conf.join("hooks.conf");
        let hooks = "[watch]\ntriggers=post.update\npath=Resources.Watched.Metadata.app.version\naction=/bin/true\n";
        let timed = |text: String| {
            std::fs::write(&file, text).unwrap();
            let started = std::time::Instant::now();
            let (run, checks) = host.checks();
            (run.code, started.elapsed(), checks)
        };
        let soup = "%(x) ".repeat(200_000);
        let sections: String = (0..125_000).map(|n| format!("[s{n}]\n")).collect();
        let keys: String = (0..120_000).map(|n| format!("k{n}=v\n")).collect();
        assert!(soup.len() >= 1_000_000 && sections.len() > 1_000_000 && keys.len() > 1_000_000);
        let soup = timed(format!("{hooks}[soup]\ntriggers=post.add\npath=Resources.Watched.Metadata\naction={soup}\n"));
        let sections = timed(format!("{sections}{hooks}"));
        let keys = timed(format!("[watch]\n{keys}{}", hooks.trim_start_matches("[watch]\n")));
        (file, [soup, sections, keys])
    });
    let (file, [soup, sections, keys]) = results;
    for (what, (_, took, _)) in [("soup", &soup), ("sections", &sections), ("keys", &keys)] {
        assert!(took < &bound, "{what}: {took:?}");
    }
    let (code, _, checks) = soup;
    assert_eq!(code, 1);
    assert_eq!(check(&checks, "hup.hook_file:hooks.conf")["verdict"], "ok");
    let hooks = check(&checks, "hup.hooks");
    assert_eq!(hooks["verdict"], "failed", "{hooks}");
    assert_eq!(
        hooks["found"],
        format!(
            "Bad value substitution: section [soup], option action in {}: the value expands to more than 65536 bytes",
            file.display()
        )
    );
    for (code, _, checks) in [sections, keys] {
        assert_eq!(check(&checks, "hup.hook_file:hooks.conf")["verdict"], "ok");
        assert_eq!(check(&checks, "hup.hooks")["found"], "1 update hook(s), 0 command hook(s)");
        assert_eq!(check(&checks, "hook.action:watch")["found"], "/bin/true is executable");
        assert_eq!(check(&checks, "hook.triggers:watch")["verdict"], "ok");
        assert_eq!(code, 1);
        assert!(with_verdict(&checks, "failed").contains(&"service.process"), "cfn-hup is not running");
    }
}

/// Terminal controls in a hook's section name and in cfn-hup's activity record are shown
/// escaped in doctor's checklist (issue 31, F9).
#[test]
fn terminal_controls_in_hook_names_and_cfn_hups_record_are_shown_escaped() {
    use common::terminal::*;
    let run = in_private_network(|| {
        let mut host = Host::new("true");
        let hook =
            format!("[w{HOSTILE}]\ntriggers=post.update\npath=Resources.Watched.Metadata.app\naction=/bin/true\n");
        std::fs::write(host.conf.join("hooks.conf"), hook).unwrap();
        let activity = host.sandbox.path("lib/cfn-hup/data/activity.json");
        std::fs::create_dir_all(activity.parent().unwrap()).unwrap();
        std::fs::write(&activity, hostile_activity().to_string()).unwrap();
        host.pretend_cfn_hup_runs();
        host.doctor(&[])
    });
    assert_no_terminal_controls(&run.stdout, "doctor's stdout");
    assert_no_terminal_controls(&run.stderr, "doctor's stderr");
    run.stdout_has(&format!("hook.triggers:w{HOSTILE_SHOWN} "));
    run.stdout_has(&format!("last pass 2026-01-01T00:00:00.000Z{HOSTILE_SHOWN} "));
    run.stdout_has(&format!("service.hook:hook{HOSTILE_SHOWN} "));
}

/// A broken set-up of doctor's catalogue (issue 30 point 4): what breaks it, drawn from
/// what people report ("cfn-hup not working", "cfn-init failed"), and what doctor must
/// say: the check, its verdict, words of what it found (the file, the key) and of the fix.
struct Breakage {
    name: &'static str,
    /// Changes the healthy host (its files under `conf`, beside it in the sandbox).
    breaks: fn(&Host),
    id: &'static str,
    verdict: &'static str,
    found: &'static str,
    fix: &'static str,
}

fn main_with(host: &Host, extra: &str) {
    main_for(host, &host.stack, &host.emulator.url, extra);
}

/// cfn-hup.conf for `stack` at `url`, with the host's credential file.
fn main_for(host: &Host, stack: &str, url: &str, extra: &str) {
    let main = format!("[main]\nstack={stack}\ncredential-file={}\nurl={url}\n{extra}", host.creds.display());
    std::fs::write(host.conf.join("cfn-hup.conf"), main).unwrap();
}

fn hooks_with(host: &Host, text: &str) {
    std::fs::write(host.conf.join("hooks.conf"), text).unwrap();
}

fn script_hook(host: &Host, script: &str) {
    let file = host.sandbox.path("drain.sh");
    std::fs::write(&file, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    hooks_with(
        host,
        &format!(
            "[watch]\ntriggers=post.update\npath=Resources.Watched.Metadata.app.version\naction={}\n",
            file.display()
        ),
    );
}

fn creds_with(host: &Host, text: &str, mode: u32) {
    std::fs::write(&host.creds, text).unwrap();
    std::os::unix::fs::chown(&host.creds, Some(0), Some(0)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&host.creds, std::fs::Permissions::from_mode(mode)).unwrap();
}

const HOOK: &str = "[watch]\ntriggers=post.update\npath=Resources.Watched.Metadata.app.version\naction=/bin/true\n";

const CATALOGUE: &[Breakage] = &[
    Breakage {
        name: "umask in hex",
        breaks: |h| main_with(h, "umask=0x27\n"),
        id: "hup.umask",
        verdict: "failed",
        found: "Invalid octal value specified for umask",
        fix: "set umask to an octal value",
    },
    Breakage {
        name: "max-backoff in words",
        breaks: |h| main_with(h, "max-backoff=soon\n"),
        id: "hup.max-backoff",
        verdict: "failed",
        found: "max-backoff",
        fix: "set max-backoff to a whole number of minutes",
    },
    Breakage {
        name: "interval of zero",
        breaks: |h| main_with(h, "interval=0\n"),
        id: "hup.interval",
        verdict: "failed",
        found: "interval",
        fix: "set interval to a whole number of minutes",
    },
    Breakage {
        name: "verbose that is no boolean",
        breaks: |h| main_with(h, "verbose=maybe\n"),
        id: "hup.config",
        verdict: "failed",
        found: "the value of verbose in [main]",
        fix: "set verbose=true or verbose=false",
    },
    Breakage {
        name: "no stack",
        breaks: |h| std::fs::write(h.conf.join("cfn-hup.conf"), "[main]\nregion=us-east-1\n").unwrap(),
        id: "hup.config",
        verdict: "failed",
        found: "stack",
        fix: "cfn-hup.conf",
    },
    Breakage {
        name: "a stack name that does not exist",
        breaks: |h| main_for(h, "no-such-stack", &h.emulator.url, ""),
        id: "api.describe:Watched",
        verdict: "failed",
        found: "does not exist",
        fix: "correct the stack name or the region",
    },
    Breakage {
        name: "an endpoint that refuses connections",
        breaks: |h| main_for(h, &h.stack, "http://127.0.0.1:9", ""),
        id: "network.cloudformation",
        verdict: "failed",
        found: "Connection refused",
        fix: "check routes, security groups and network ACLs",
    },
    Breakage {
        name: "a credential file others can read",
        breaks: |h| creds_with(h, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"), 0o644),
        id: "hup.credentials",
        verdict: "failed",
        found: "is open to",
        fix: "chmod 600",
    },
    Breakage {
        name: "a credential file without the secret key",
        breaks: |h| creds_with(h, &format!("AWSAccessKeyId={ACCESS_KEY}\n"), 0o600),
        id: "hup.credentials",
        verdict: "failed",
        found: "AWSSecretKey",
        fix: "AWSSecretKey=",
    },
    Breakage {
        name: "a credential file that is not there",
        breaks: |h| std::fs::remove_file(&h.creds).unwrap(),
        id: "hup.credentials",
        verdict: "failed",
        found: "No such file or directory",
        fix: "create it",
    },
    Breakage {
        name: "a wrong secret key",
        breaks: |h| creds_with(h, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey=wrong{SECRET_KEY}\n"), 0o600),
        id: "api.describe:Watched",
        verdict: "failed",
        found: "SignatureDoesNotMatch",
        fix: "secret key",
    },
    Breakage {
        name: "a hook line without `=`",
        breaks: |h| hooks_with(h, &format!("{HOOK}just words\n")),
        id: "hup.hook_file:hooks.conf",
        verdict: "failed",
        found: "File contains parsing errors",
        fix: "hooks.conf",
    },
    Breakage {
        name: "a hook file without a section header",
        breaks: |h| hooks_with(h, "triggers=post.update\n"),
        id: "hup.hook_file:hooks.conf",
        verdict: "failed",
        found: "no section headers",
        fix: "hooks.conf",
    },
    Breakage {
        name: "a misspelt trigger",
        breaks: |h| hooks_with(h, &HOOK.replace("post.update", "post.updat")),
        id: "hook.triggers:watch",
        verdict: "warning",
        found: "no known trigger (post.updat)",
        fix: "set triggers",
    },
    Breakage {
        name: "a runas user that does not exist",
        breaks: |h| hooks_with(h, &format!("{HOOK}runas=nosuchuser\n")),
        id: "hook.runas:watch",
        verdict: "failed",
        found: "runas user nosuchuser does not exist",
        fix: "create the user nosuchuser",
    },
    Breakage {
        name: "an action program that is not installed",
        breaks: |h| hooks_with(h, &HOOK.replace("/bin/true", "/opt/missing/restart-app")),
        id: "hook.action:watch",
        verdict: "failed",
        found: "/opt/missing/restart-app does not exist",
        fix: "correct action in hook watch",
    },
    Breakage {
        name: "an action program not on PATH",
        breaks: |h| hooks_with(h, &HOOK.replace("/bin/true", "no-such-program --now")),
        id: "hook.action:watch",
        verdict: "failed",
        found: "no-such-program is not on PATH",
        fix: "give its full path",
    },
    Breakage {
        name: "an action script that is not executable",
        breaks: |h| {
            script_hook(h, "#!/bin/sh\ntrue\n");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(h.sandbox.path("drain.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
        },
        id: "hook.action:watch",
        verdict: "failed",
        found: "is not executable",
        fix: "install it, or correct action in hook watch",
    },
    Breakage {
        name: "an action script saved with Windows line endings",
        breaks: |h| script_hook(h, "#!/bin/sh\r\ntrue\r\n"),
        id: "hook.action:watch",
        verdict: "failed",
        found: "Windows line ending",
        fix: "sed -i",
    },
    Breakage {
        name: "a hook path to a resource the stack lacks",
        breaks: |h| hooks_with(h, &HOOK.replace("Resources.Watched", "Resources.Nowhere")),
        id: "hook.path:watch",
        verdict: "failed",
        found: "the path names a resource that is not in the stack",
        fix: "correct path in hook watch",
    },
    Breakage {
        name: "a hook path to a key the metadata lacks",
        breaks: |h| hooks_with(h, &HOOK.replace("app.version", "app.nope")),
        id: "hook.path:watch",
        verdict: "failed",
        found: "no key nope",
        fix: "correct path in hook watch",
    },
    Breakage {
        name: "a hook path cfn-hup does not support",
        breaks: |h| {
            hooks_with(h, &HOOK.replace("Resources.Watched.Metadata.app.version", "Resources.Watched.Properties"))
        },
        id: "hup.hooks",
        verdict: "failed",
        found: "Properties",
        fix: "correct the hook files",
    },
    Breakage {
        name: "two command hooks for one command",
        breaks: |h| {
            hooks_with(
                h,
                "[a]\ntriggers=on.command\npath=restart\naction=/bin/true\n[b]\ntriggers=on.command\npath=restart\naction=/bin/true\n",
            )
        },
        id: "hup.hooks",
        verdict: "failed",
        found: "restart",
        fix: "correct the hook files",
    },
    Breakage {
        name: "a misspelt action key",
        breaks: |h| hooks_with(h, &HOOK.replace("action=", "acton=")),
        id: "hook.dropped:watch",
        verdict: "failed",
        found: "hooks.conf:1: hook watch has no action: cfn-hup leaves it out",
        fix: "set action= in [watch]",
    },
    Breakage {
        name: "an indented action line, read as part of the path",
        breaks: |h| hooks_with(h, &HOOK.replace("action=", "  action=")),
        id: "hook.dropped:watch",
        verdict: "failed",
        found: "the line setting action is indented, so it continues the value of path (line 3)",
        fix: "at the start of its line",
    },
    Breakage {
        name: "every hook left out",
        breaks: |h| hooks_with(h, &HOOK.replace("triggers=", "trigger=")),
        id: "hup.hooks",
        verdict: "failed",
        found: "No valid hooks found",
        fix: "correct the hooks named above",
    },
    Breakage {
        name: "a hooks.d link to a file that is gone",
        breaks: |h| {
            std::os::unix::fs::symlink("/nonexistent/reloader.conf", h.conf.join("hooks.d/reloader.conf")).unwrap()
        },
        id: "hup.skipped:reloader.conf",
        verdict: "failed",
        found: "is a link to /nonexistent/reloader.conf, which does not exist: cfn-hup skips it",
        fix: "restore /nonexistent/reloader.conf",
    },
    Breakage {
        name: "cfn-hup's stored values cut short",
        breaks: |h| {
            let db = h.sandbox.path("lib/cfn-hup/data/metadata_db.json");
            std::fs::create_dir_all(db.parent().unwrap()).unwrap();
            std::fs::write(db, "{\"watch|Resources.Watched.Metadata.app.version\": \"1").unwrap();
        },
        id: "service.metadata_db",
        verdict: "failed",
        found: "metadata_db.json is damaged or cut short",
        fix: "restore it from a backup",
    },
    Breakage {
        name: "an interval with a unit",
        breaks: |h| main_with(h, "interval=5m\n"),
        id: "hup.interval",
        verdict: "failed",
        found: "whole number of minutes",
        fix: "set interval to a whole number of minutes",
    },
    Breakage {
        name: "a max-backoff of zero",
        breaks: |h| main_with(h, "max-backoff=0\n"),
        id: "hup.max-backoff",
        verdict: "failed",
        found: "max-backoff",
        fix: "set max-backoff",
    },
    Breakage {
        name: "a umask that is not octal",
        breaks: |h| main_with(h, "umask=999\n"),
        id: "hup.umask",
        verdict: "failed",
        found: "Invalid octal value specified for umask",
        fix: "set umask",
    },
    Breakage {
        name: "a url with a misspelt scheme",
        breaks: |h| main_for(h, &h.stack, "htp://127.0.0.1:9", ""),
        id: "network.cloudformation",
        verdict: "failed",
        found: "htp://127.0.0.1:9",
        fix: "correct the URL",
    },
    Breakage {
        name: "an empty action",
        breaks: |h| hooks_with(h, &HOOK.replace("action=/bin/true", "action=")),
        id: "hook.action:watch",
        verdict: "failed",
        found: "the action is empty",
        fix: "set action in hook watch",
    },
    Breakage {
        name: "a credential file owned by another user",
        breaks: |h| std::os::unix::fs::chown(&h.creds, Some(65534), None).unwrap(),
        id: "hup.credentials",
        verdict: "failed",
        found: "not root or the user cfn-hup runs as",
        fix: "chown root",
    },
    Breakage {
        name: "a hook path with a doubled dot",
        breaks: |h| hooks_with(h, &HOOK.replace("Resources.Watched", "Resources..Watched")),
        id: "hup.hooks",
        verdict: "failed",
        found: "Resources..Watched",
        fix: "correct the hook files",
    },
    Breakage {
        name: "only a backup left in hooks.d",
        breaks: |h| {
            std::fs::remove_file(h.conf.join("hooks.conf")).unwrap();
            std::fs::write(h.conf.join("hooks.d/reloader.conf.bak"), HOOK).unwrap();
        },
        id: "hup.hooks",
        verdict: "warning",
        found: "No hook configurations found",
        fix: "add hooks to",
    },
    Breakage {
        name: "an access key AWS does not know",
        breaks: |h| creds_with(h, &format!("AWSAccessKeyId=AKIDNOTKNOWN\nAWSSecretKey={SECRET_KEY}\n"), 0o600),
        id: "api.describe:Watched",
        verdict: "failed",
        found: "the access key is not known to AWS",
        fix: "correct the access key",
    },
    Breakage {
        name: "a pid file naming another program",
        breaks: |h| std::fs::write(h.sandbox.path("run/cfn-hup.pid"), "1\n").unwrap(),
        id: "service.process",
        verdict: "failed",
        found: "process 1 is not cfn-hup",
        fix: "rm ",
    },
    Breakage {
        name: "cfn-hup.conf without its [main] header",
        breaks: |h| std::fs::write(h.conf.join("cfn-hup.conf"), format!("stack={}\n", h.stack)).unwrap(),
        id: "hup.config",
        verdict: "failed",
        found: "no section headers",
        fix: "cfn-hup.conf",
    },
    Breakage {
        name: "a stale pid file",
        breaks: |h| std::fs::write(h.sandbox.path("run/cfn-hup.pid"), "999999\n").unwrap(),
        id: "service.process",
        verdict: "failed",
        found: "stale pid file",
        fix: "rm ",
    },
];

/// Issue 30 point 4: each broken set-up of the catalogue makes doctor exit non-zero
/// naming the culprit and the fix, and the healthy host it was made from exits 0.
#[test]
fn each_breakage_of_the_catalogue_is_named_with_its_fix() {
    let failures = in_private_network(|| {
        let mut host = Host::new("true");
        host.pretend_cfn_hup_runs();
        let healthy = |host: &Host| {
            main_with(host, "");
            hooks_with(host, HOOK);
            creds_with(host, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"), 0o600);
            let _ = std::fs::remove_file(host.sandbox.path("lib/cfn-hup/data/metadata_db.json"));
            for entry in std::fs::read_dir(host.conf.join("hooks.d")).unwrap() {
                std::fs::remove_file(entry.unwrap().path()).unwrap();
            }
        };
        let pid_file = std::fs::read(host.sandbox.path("run/cfn-hup.pid")).unwrap();
        let mut failures = Vec::new();
        for breakage in CATALOGUE {
            healthy(&host);
            std::fs::write(host.sandbox.path("run/cfn-hup.pid"), &pid_file).unwrap();
            let (run, checks) = host.checks();
            if run.code != 0 {
                failures.push(format!("{}: the healthy host exits {}: {:?}", breakage.name, run.code, not_ok(&checks)));
                continue;
            }
            (breakage.breaks)(&host);
            let (run, checks) = host.checks();
            let Some(found) = checks.get(breakage.id) else {
                failures.push(format!("{}: no check {} in {:?}", breakage.name, breakage.id, not_ok(&checks)));
                continue;
            };
            let text = |key: &str| found[key].as_str().unwrap_or_default().to_string();
            if run.code == 0
                || found["verdict"] != breakage.verdict
                || !text("found").contains(breakage.found)
                || !text("fix").contains(breakage.fix)
            {
                failures.push(format!("{}: exit {}, {} {found}", breakage.name, run.code, breakage.id));
            }
        }
        failures
    });
    assert!(CATALOGUE.len() >= 40);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checks that are neither ok nor skipped, for a failure's message.
fn not_ok(checks: &BTreeMap<String, Value>) -> Vec<String> {
    checks
        .iter()
        .filter(|(_, c)| c["verdict"] != "ok" && c["verdict"] != "skipped")
        .map(|(id, c)| format!("{id}: {}", c["found"]))
        .collect()
}

/// Issue 30: the running cfn-hup against its files. A hook file changed after cfn-hup
/// read its configuration is not in use yet: a warning with the reload that picks it up;
/// after the reload (SIGHUP), it is.
#[test]
fn a_hook_file_changed_after_cfn_hup_read_it_asks_for_a_reload() {
    let (before, changed, reloaded) = in_private_network(|| {
        let mut host = Host::new("true");
        host.start_cfn_hup();
        let (_, before) = host.checks();
        // Changed a minute from now: after the reading whatever the clock's granularity.
        let hooks = host.conf.join("hooks.conf");
        std::fs::write(&hooks, HOOK.replace("/bin/true", "/bin/echo changed")).unwrap();
        let later = std::time::SystemTime::now() + Duration::from_secs(60);
        std::fs::File::options().write(true).open(&hooks).unwrap().set_modified(later).unwrap();
        let (_, changed) = host.checks();
        let pid = std::fs::read_to_string(host.sandbox.path("run/cfn-hup.pid")).unwrap().trim().parse::<i32>().unwrap();
        let activity = host.sandbox.path("lib/cfn-hup/data/activity.json");
        let read_at = || {
            let text = std::fs::read(&activity).unwrap_or_default();
            serde_json::from_slice::<Value>(&text).ok().map(|a| a["config_read"]["time"].clone())
        };
        let first = read_at();
        // Reloaded after the file's time: the reading is the file's as it is now.
        std::fs::File::options().write(true).open(&hooks).unwrap().set_modified(std::time::SystemTime::now()).unwrap();
        unsafe { libc::kill(pid, libc::SIGHUP) };
        wait_until(Duration::from_secs(30), "cfn-hup to record its reload", || {
            read_at().is_some_and(|read| read.is_string() && Some(&read) != first.as_ref())
        });
        let (_, reloaded) = host.checks();
        (before, changed, reloaded)
    });
    assert_eq!(check(&before, "service.config")["verdict"], "ok", "{:?}", check(&before, "service.config"));
    let changed = check(&changed, "service.config");
    assert_eq!(changed["verdict"], "warning", "{changed}");
    assert!(changed["found"].as_str().unwrap().contains("hooks.conf ("), "{changed}");
    assert!(changed["fix"].as_str().unwrap().starts_with("reload it: systemctl reload cfn-hup"), "{changed}");
    assert_eq!(check(&reloaded, "service.config")["verdict"], "ok", "{:?}", check(&reloaded, "service.config"));
}
