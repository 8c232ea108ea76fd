//! Part 3 of `cargo xtask demo`: a rolling replacement with Auto Scaling lifecycle hooks
//! (issue 32), as any user.
//!
//! One emulator holds the Auto Scaling group `web` (a launch hook `ready`, a terminate hook
//! `drain`) and serves each of the two instances its own instance metadata on a port of its
//! own (`--imds-instance`), so the old and the new instance each run the real cfn-init and
//! `cfn-hup -F` with `AWS_EC2_METADATA_SERVICE_ENDPOINT` pointing at their metadata; their
//! files live under `demo/rolling/<instance>/`. The new instance launches (Pending:Wait),
//! cfn-init writes its page and cfn-hup's configuration, its `on.asg.launch` hook completes
//! CONTINUE once the page answers; then the old instance is terminated and its
//! `on.asg.terminate` drain runs longer than the hook's heartbeat timeout, kept alive by
//! cfn-hup's heartbeats, until cfn-hup completes it and the group terminates the instance.
//! The timeline comes from the emulator's Auto Scaling journal and the actions' own marks.

use super::{Phases, short_path, step};
use crate::emulator::Emulator;
use crate::workspace;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ACCESS_KEY: &str = "AKIDDEMO";
const SECRET_KEY: &str = "demo/secret";
const STACK: &str = "demo-rolling";
const GROUP: &str = "web";
const OLD: &str = "i-0000000000000old1";
const NEW: &str = "i-0000000000000new2";
/// The drain's length, and the terminate hook's heartbeat timeout it outlasts.
const DRAIN_SECONDS: u64 = 7;
const HEARTBEAT_TIMEOUT: u64 = 4;
const DEADLINE: Duration = Duration::from_secs(60);

/// One instance: its directory, its metadata port, its web server's port, its cfn-hup.
struct Instance {
    id: &'static str,
    dir: PathBuf,
    imds_port: u16,
    web_port: u16,
    hup: Option<Child>,
}

impl Instance {
    fn new(id: &'static str, root: &Path) -> Result<Instance> {
        let dir = root.join(id);
        for sub in ["log", "lib", "run", "www"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        Ok(Instance { id, dir, imds_port: free_port()?, web_port: free_port()?, hup: None })
    }

    /// A tool run as on this instance: its metadata, its log and state directories.
    fn tool(&self, bin: &Path, name: &str, url: &str) -> Command {
        let mut cmd = Command::new(bin.join(name));
        cmd.env("CFN_BOOTSTRAP_LOG_DIR", self.dir.join("log"))
            .env("CFN_BOOTSTRAP_LIB_DIR", self.dir.join("lib"))
            .env("CFN_BOOTSTRAP_RUN_DIR", self.dir.join("run"))
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", format!("http://127.0.0.1:{}", self.imds_port))
            .env("AWS_ENDPOINT_URL_AUTO_SCALING", url)
            // Test-only: heartbeats may be 1 s apart instead of at least 30 s, so that a
            // 4 s heartbeat timeout (AWS's minimum is 30 s) is kept alive in a short demo.
            .env("CFN_BOOTSTRAP_HUP_HEARTBEAT_FLOOR_SECONDS", "1");
        cmd
    }

    /// cfn-init with this instance's configSet, signed with its instance identity.
    fn cfn_init(&self, bin: &Path, url: &str) -> Result<()> {
        let args = ["-s", STACK, "-r", "LaunchTemplate", "-c", self.id, "--region", "us-east-1", "--url", url];
        println!("$ [{}] cfn-init {}", self.id, args.join(" "));
        let out = self.tool(bin, "cfn-init", url).args(args).output().context("run cfn-init")?;
        for line in String::from_utf8_lossy(&out.stdout).lines().chain(String::from_utf8_lossy(&out.stderr).lines()) {
            println!("    | {line}");
        }
        if !out.status.success() {
            bail!("cfn-init on {} failed ({}); see {}", self.id, out.status, short_path(&self.dir.join("log")));
        }
        Ok(())
    }

    /// `cfn-hup -F` with the configuration cfn-init wrote; returns once its lifecycle
    /// watcher has started.
    fn start_hup(&mut self, bin: &Path, url: &str) -> Result<()> {
        let conf = self.dir.join("etc/cfn");
        println!("$ [{}] cfn-hup -F -c {}", self.id, short_path(&conf));
        let child = self
            .tool(bin, "cfn-hup", url)
            .arg("-F")
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start cfn-hup -F")?;
        self.hup = Some(child);
        let log = self.dir.join("log/cfn-hup.log");
        wait_for(&format!("cfn-hup's lifecycle watcher on {}", self.id), || {
            Ok(std::fs::read_to_string(&log).unwrap_or_default().contains("Lifecycle watcher started"))
        })
    }

    /// SIGTERM to cfn-hup, as `systemctl stop` would send.
    fn stop_hup(&mut self) {
        if let Some(mut child) = self.hup.take() {
            // SAFETY: signalling the cfn-hup this demo started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The marks the actions wrote: (epoch seconds, text).
    fn marks(&self) -> Vec<(f64, String)> {
        std::fs::read_to_string(self.dir.join("marks"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (time, text) = line.split_once(' ')?;
                Some((time.parse().ok()?, format!("{:<20} {text}", self.id)))
            })
            .collect()
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

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn wait_for(what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + DEADLINE;
    while !done()? {
        if Instant::now() > deadline {
            bail!("timed out after {DEADLINE:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The Init of the group's launch template: per instance (they share this machine's file
/// system, so each has its configSet writing under its own directory) the page, cfn-hup's
/// configuration and credentials, and the lifecycle hooks: `ready` waits for the page to
/// answer, `drain` outlasts the heartbeat timeout.
fn init(url: &str, instances: &[&Instance]) -> Value {
    let mut configs = serde_json::Map::new();
    let mut sets = serde_json::Map::new();
    for instance in instances {
        let dir = instance.dir.display().to_string();
        let marks = format!("{dir}/marks");
        let hooks = format!(
            "[ready]\ntriggers=on.asg.launch\ntimeout=30\n\
             action=until curl -fsS -o /dev/null http://127.0.0.1:{port}/; do sleep 0.2; done; \
             echo \"$(date +%s.%N) on.asg.launch action: the page answers ($CFN_LIFECYCLE_HOOK)\" >> {marks}\n\
             \n[drain]\ntriggers=on.asg.terminate\ntimeout=60\n\
             action=echo \"$(date +%s.%N) on.asg.terminate action: draining for {DRAIN_SECONDS} s ($CFN_LIFECYCLE_HOOK, \
             deadline $CFN_LIFECYCLE_DEADLINE)\" >> {marks}; sleep {DRAIN_SECONDS}; \
             echo \"$(date +%s.%N) on.asg.terminate action: drained\" >> {marks}\n",
            port = instance.web_port,
        );
        let config = json!({"files": {
            format!("{dir}/www/index.html"): {
                "content": "<h1>Hello World</h1>\n<p>{{instance}} of group {{group}}</p>\n",
                "context": {"instance": instance.id, "group": GROUP},
                "mode": "000644"
            },
            format!("{dir}/etc/cfn/cfn-hup.conf"): {
                "content": format!("[main]\nstack={STACK}\nregion=us-east-1\nurl={url}\n\
                                    credential-file={dir}/etc/cfn/credentials\nlifecycle-interval=1\n"),
                "mode": "000400"
            },
            format!("{dir}/etc/cfn/credentials"): {
                "content": format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"),
                "mode": "000400"
            },
            format!("{dir}/etc/cfn/hooks.d/lifecycle.conf"): {"content": hooks, "mode": "000400"}
        }});
        configs.insert(instance.id.to_string(), config);
        sets.insert(instance.id.to_string(), json!([instance.id]));
    }
    configs.insert("configSets".into(), Value::Object(sets));
    Value::Object(configs)
}

/// The instance's web server: serves `www/index.html`, 404 until cfn-init wrote it.
struct WebServer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WebServer {
    fn start(port: u16, www: PathBuf) -> Result<WebServer> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let answer = match std::fs::read(www.join("index.html")) {
                    Ok(page) => [
                        format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n", page.len())
                            .into_bytes(),
                        page,
                    ]
                    .concat(),
                    Err(_) => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
                };
                let _ = stream.write_all(&answer);
            }
        });
        Ok(WebServer { stop, thread: Some(thread) })
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn post(url: &str, path: &str, body: Value) -> Result<Value> {
    let mut response = ureq::post(&format!("{url}{path}"))
        .send(body.to_string().as_bytes())
        .with_context(|| format!("POST {path}"))?;
    Ok(serde_json::from_str(&response.body_mut().read_to_string()?)?)
}

fn journal(url: &str) -> Result<Value> {
    let mut response = ureq::get(&format!("{url}/_emu/autoscaling")).call()?;
    Ok(serde_json::from_str(&response.body_mut().read_to_string()?)?)
}

fn state(journal: &Value, instance: &str) -> String {
    journal["instances"][instance]["state"].as_str().unwrap_or("(unknown)").to_string()
}

/// Part 3; `bin` holds the links to the binary part 1 made.
pub fn run(bin: &Path, python: &Path, phases: &mut Phases) -> Result<()> {
    if crate::require("curl", "").is_err() {
        println!("    Skipped: the launch hook's readiness check uses curl, which is not installed.");
        return Ok(());
    }
    println!(
        "    Group `{GROUP}`: launch hook `ready`, terminate hook `drain` (HeartbeatTimeout {HEARTBEAT_TIMEOUT} s, below\n    \
         AWS's minimum of 30 s; the test-only CFN_BOOTSTRAP_HUP_HEARTBEAT_FLOOR_SECONDS=1 lets cfn-hup send\n    \
         heartbeats at half of it instead of at least 30 s apart). Each instance has its own instance\n    \
         metadata (an emulator port of its own, through AWS_EC2_METADATA_SERVICE_ENDPOINT) and its files\n    \
         under demo/rolling/<instance>/; both run the real cfn-init and cfn-hup -F."
    );
    phases.start();
    let root = workspace().join("demo/rolling");
    let _ = std::fs::remove_dir_all(&root);
    let mut old = Instance::new(OLD, &root)?;
    let mut new = Instance::new(NEW, &root)?;
    let mut arguments = vec!["--validate-sigv4".into(), "--credentials".into(), format!("{ACCESS_KEY}:{SECRET_KEY}")];
    for instance in [&old, &new] {
        arguments.push("--imds-instance".into());
        arguments.push(format!("{}={}", instance.imds_port, instance.id));
    }
    let emulator = Emulator::start(&python.to_path_buf(), &arguments)?;
    let url = emulator.url.clone();
    phases.done("the emulator's start");

    let template = json!({"Resources": {"LaunchTemplate": {
        "Type": "AWS::EC2::LaunchTemplate",
        "Metadata": {"AWS::CloudFormation::Init": init(&url, &[&old, &new])},
        "Properties": {"LaunchTemplateData": {"ImageId": "ami-12345678"}}
    }}});
    let client = cfn_aws::client_with_keys(&url, "us-east-1", cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None));
    client.call("CreateStack", &[("StackName", STACK), ("TemplateBody", &template.to_string())], true)?;
    post(
        &url,
        "/_emu/autoscaling/groups",
        json!({"name": GROUP, "instances": [OLD], "hooks": [
            {"name": "ready", "transition": "launching", "heartbeat_timeout": 60, "default_result": "ABANDON"},
            {"name": "drain", "transition": "terminating", "heartbeat_timeout": HEARTBEAT_TIMEOUT,
             "default_result": "ABANDON"}]}),
    )?;
    println!("    stack {STACK} (its LaunchTemplate carries the Init); group {GROUP} with {OLD} in service");

    step(&format!("The old instance {OLD}, in service: set up as at its launch, cfn-hup running"));
    let _old_web = WebServer::start(old.web_port, old.dir.join("www"))?;
    old.cfn_init(bin, &url)?;
    old.start_hup(bin, &url)?;
    phases.done("the old instance");

    let mut events: Vec<(f64, String)> = Vec::new();
    step(&format!("Scaling out: {NEW} launches and waits in Pending:Wait"));
    let t0 = now();
    let launched = post(&url, "/_emu/autoscaling/launch", json!({"instance": NEW, "group": GROUP}))?;
    println!("    {NEW}: {}", launched["state"].as_str().unwrap_or("?"));
    let _new_web = WebServer::start(new.web_port, new.dir.join("www"))?;
    new.cfn_init(bin, &url)?;
    events.push((now(), format!("{NEW:<20} cfn-init done (page, cfn-hup.conf, hooks.d)")));
    events.push((now(), format!("{NEW:<20} cfn-hup -F starts")));
    new.start_hup(bin, &url)?;
    wait_for("the launch hook's completion", || Ok(state(&journal(&url)?, NEW) == "InService"))?;
    println!("    {NEW}: InService");

    step(&format!("Scaling in: {OLD} is terminated; its drain outlasts the {HEARTBEAT_TIMEOUT} s heartbeat timeout"));
    let terminating = post(&url, "/_emu/autoscaling/terminate", json!({"instance": OLD}))?;
    println!("    {OLD}: {}", terminating["state"].as_str().unwrap_or("?"));
    wait_for("the old instance's termination", || Ok(state(&journal(&url)?, OLD) == "Terminated"))?;
    println!("    {OLD}: Terminated");
    let journal = journal(&url)?;
    old.stop_hup();
    new.stop_hup();
    drop(emulator);
    phases.done("the rolling replacement");

    step("What happened, from the emulator's Auto Scaling journal and the actions' marks");
    for instance in [OLD, NEW] {
        for entry in journal["instances"][instance]["history"].as_array().into_iter().flatten() {
            events.push((
                entry["time"].as_f64().unwrap_or(0.0),
                format!("{instance:<20} {}", entry["state"].as_str().unwrap_or("?")),
            ));
        }
    }
    for beat in journal["heartbeats"].as_array().into_iter().flatten() {
        events.push((
            beat["time"].as_f64().unwrap_or(0.0),
            format!(
                "{:<20} RecordLifecycleActionHeartbeat {} (times out {:.1} s later)",
                beat["instance"].as_str().unwrap_or("?"),
                beat["hook"].as_str().unwrap_or("?"),
                beat["heartbeat_deadline"].as_f64().unwrap_or(0.0) - beat["time"].as_f64().unwrap_or(0.0)
            ),
        ));
    }
    let completions = journal["completions"].as_array().cloned().unwrap_or_default();
    for c in &completions {
        events.push((
            c["time"].as_f64().unwrap_or(0.0),
            format!(
                "{:<20} CompleteLifecycleAction {} {} (from: {})",
                c["instance"].as_str().unwrap_or("?"),
                c["hook"].as_str().unwrap_or("?"),
                c["result"].as_str().unwrap_or("?"),
                c["source"].as_str().unwrap_or("?")
            ),
        ));
    }
    events.extend(new.marks());
    events.extend(old.marks());
    events.retain(|(time, _)| *time >= t0 - 0.001);
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (time, what) in &events {
        println!("    +{:>6.2} s  {what}", time - t0);
    }

    let done: Vec<(String, String, String, String)> = completions
        .iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (text("instance"), text("hook"), text("result"), text("source"))
        })
        .collect();
    let want = [(NEW, "ready"), (OLD, "drain")]
        .map(|(i, h)| (i.to_string(), h.to_string(), "CONTINUE".to_string(), "api".to_string()));
    let drain_beats = journal["heartbeats"].as_array().map_or(0, |b| b.iter().filter(|b| b["hook"] == "drain").count());
    let ok = done == want && drain_beats >= 2 && state(&journal, NEW) == "InService";
    println!(
        "\n{} {} heartbeats kept the {DRAIN_SECONDS} s drain alive past the {HEARTBEAT_TIMEOUT} s heartbeat timeout; \
         each hook was completed once, CONTINUE, by cfn-hup.",
        if ok { "Done." } else { "Something went wrong: see the logs." },
        drain_beats
    );
    println!("Where to look:");
    for instance in [&old, &new] {
        println!("    {:<20} {}", instance.id, short_path(&instance.dir.join("log/cfn-hup.log")));
    }
    println!("    {:<20} {}", "cfn-hup's record", short_path(&old.dir.join("lib/cfn-hup/data/lifecycle.json")));
    if !ok {
        bail!("the rolling replacement did not end as expected: completions {done:?}, {drain_beats} drain heartbeats");
    }
    Ok(())
}
