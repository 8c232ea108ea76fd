//! The end-to-end scenario of issue 7, shared by `cargo xtask demo` and tests/scenario.rs
//! (which includes this file with `#[path]`).
//!
//! A stack holds an EC2 instance whose `AWS::CloudFormation::Init` has the configSets
//! `create` = [nginx, cfn-hup] and `update` = [nginx], and a CreationPolicy (1 signal,
//! PT5M). The "instance" is an overlay of the cached Debian root (xtask/src/testroot.rs)
//! in private mount, PID and network namespaces; cfn-bootstrap is installed into it from
//! the .deb with `dpkg -i`, as a user would. The emulator runs in a second private
//! network namespace, connected to the instance's by a veth pair (10.200.0.1 ↔
//! 10.200.0.2, addresses that exist only inside these two namespaces): it serves
//! CloudFormation over HTTPS on port 443 and IMDS at 169.254.169.254:80 (routed through
//! the veth). In the instance, `/etc/hosts` names 10.200.0.1
//! `cloudformation.us-east-1.amazonaws.com` and `/etc/cfn/ca-override.pem` holds the private
//! CA of the emulator's certificate, so the user data runs unchanged, with no `--url`
//! and no credentials (instance identity).
//!
//! Steps: create the stack; the instance fetches its user data from IMDS and runs it as
//! root (output in `/var/log/cloud-init-output.log`, as cloud-init does); nginx serves
//! the Hello World page on the instance's loopback, the stack is CREATE_COMPLETE, the
//! cfn-hup service runs; UpdateStack changes the page; cfn-hup notices within one
//! interval and runs cfn-init once, the page changes.
//!
//! The same runs on systemd (`Init::Systemd`, the systemd root of
//! xtask/src/systemd_root.rs): systemd is PID 1 of the instance, the template's services
//! say `systemd` where they said `sysvinit` (the user data is the same), and cfn-hup runs
//! as the .deb's unit. Then the unit itself is checked: `systemctl reload` re-reads the
//! configuration, `systemctl stop` ends it, and its lines are in the journal.
//!
//! The one test aid: cfn-hup gets `CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS`, so it polls every
//! few seconds instead of once a minute (`interval=1` in cfn-hup.conf): exported by
//! `/etc/default/cfn-hup` (read by the shipped SysV script), or set by a drop-in of the
//! unit on systemd.
//!
//! Teardown is by construction (xtask/src/instance.rs): the instance's PID namespace dies
//! with its init; both network namespaces disappear with their last process, taking the
//! veth pair with them. The emulator is killed at the end or when this process dies.
#![allow(dead_code)]

use crate::instance::{Init, Instance, Layers, die_with_parent};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const STACK: &str = "hello-world";
pub const RESOURCE: &str = "WebServerInstance";
pub const REGION: &str = "us-east-1";
pub const FIRST_PAGE: &str = "<title>Hello World</title><h1>Hello World</h1>";
pub const SECOND_PAGE: &str = "<title>Hello Update</title><h1>Updated by cfn-hup</h1>";
pub const HOOK: &str = "cfn-auto-reloader-hook";
const ENDPOINT_HOST: &str = "cloudformation.us-east-1.amazonaws.com";
const AWS_ADDRESS: &str = "10.200.0.1";
const INSTANCE_ADDRESS: &str = "10.200.0.2";
const IMDS_ADDRESS: &str = "169.254.169.254";
/// Where, inside the instance, the .deb is put before the user data installs it.
const INSTANCE_DOWNLOADS: &str = "/var/cache/cfn-bootstrap";
const CONTROL_PORT: u16 = 5000;
const ACCESS_KEY: &str = "AKIDSCENARIO";
const SECRET_KEY: &str = "scenario/secret";
/// A second hook written before `systemctl reload cfn-hup` (it never runs: no update).
const RELOAD_HOOK: &str = "/etc/cfn/hooks.d/after-reload.conf";

/// What the scenario needs from its caller.
pub struct Config {
    /// The cached Debian root, or the systemd root for `Init::Systemd` (never modified:
    /// overlaid).
    pub rootfs: PathBuf,
    /// What runs as the instance's PID 1, and so which service manager the template names.
    pub init: Init,
    /// The cfn-bootstrap .deb of `cargo xtask dist`.
    pub deb: PathBuf,
    /// The emulator's Python and script.
    pub python: PathBuf,
    pub emulator_script: PathBuf,
    /// Scratch directory, emptied first; keeps the instance's changed files (`upper/`),
    /// the emulator's log and the certificates afterwards.
    pub work: PathBuf,
    /// cfn-hup's polling interval in the instance (the test aid above).
    pub hup_interval: Duration,
}

/// What happened, for the test's assertions (the demo prints it as it goes).
#[derive(Debug, Default)]
pub struct Outcome {
    pub user_data: String,
    pub user_data_exit: i32,
    pub cloud_init_output: String,
    pub first_page: String,
    pub stack_status: String,
    pub signals: Value,
    /// SysV: `service cfn-hup status`, the pid file and the process's command line.
    /// systemd: `systemctl is-enabled` and `is-active` of cfn-hup and nginx, cfn-hup's
    /// main PID and its command line.
    pub hup_service: String,
    pub second_page: String,
    /// From UpdateStack to the new page being served.
    pub page_changed_after: Duration,
    /// Every distinct page seen while waiting, in order.
    pub pages_seen: Vec<String>,
    pub stack_status_after_update: String,
    pub cfn_init_log: String,
    pub cfn_init_cmd_log: String,
    pub cfn_hup_log: String,
    /// systemd only: the main PID before and after `systemctl reload cfn-hup`, and what
    /// cfn-hup.log got meanwhile.
    pub reload: String,
    pub reload_log: String,
    /// systemd only: how long `systemctl stop cfn-hup` took, and the unit afterwards
    /// (`is-active`, `Result`, the main process's exit status).
    pub stop_took: Duration,
    pub stopped: String,
    /// systemd only: `journalctl -u cfn-hup`.
    pub journal: String,
    pub timings: Vec<(&'static str, Duration)>,
    pub total: Duration,
}

/// Prints a step title.
fn step(title: &str) {
    println!("\n==> {title}");
}

fn note(text: &str) {
    for line in text.lines() {
        println!("    {line}");
    }
}

fn quote(name: &str, text: &str) {
    println!("    {name}:");
    for line in text.lines() {
        println!("    | {line}");
    }
}

/// Runs the whole scenario (needs root). Everything is torn down before it returns.
pub fn run(config: Config) -> Result<Outcome> {
    // /proc/self belongs to the effective user.
    let euid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self")?);
    if euid != 0 {
        bail!("the scenario needs root (mount, PID and network namespaces, chroot)");
    }
    // The emulator's namespace belongs to one thread: everything happens on it.
    std::thread::Builder::new()
        .name("scenario".into())
        .spawn(move || in_emulator_namespace(&config))
        .context("start the scenario thread")?
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

fn in_emulator_namespace(config: &Config) -> Result<Outcome> {
    let started = Instant::now();
    let mut out = Outcome::default();
    let mut lap = Instant::now();
    let mut timing = |out: &mut Outcome, name: &'static str| {
        out.timings.push((name, lap.elapsed()));
        lap = Instant::now();
    };

    step("Preparing the instance's root: an overlay of the cached Debian root");
    // SAFETY: unshare affects only this thread, which owns nothing shared yet.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        bail!("unshare(CLONE_NEWNET): {}", std::io::Error::last_os_error());
    }
    run_ok(Command::new("ip").args(["link", "set", "lo", "up"]))?;
    run_ok(Command::new("ip").args(["addr", "add", &format!("{IMDS_ADDRESS}/32"), "dev", "lo"]))?;

    let work = &config.work;
    if work.exists() {
        std::fs::remove_dir_all(work).with_context(|| format!("empty {}", work.display()))?;
    }
    let layers = Layers::under(&config.rootfs, work)?;
    let upper = layers.upper.clone();
    let tls = work.join("tls");
    std::fs::create_dir_all(&tls)?;
    certificates(&tls)?;
    let put = |path: &str, content: &[u8], mode: u32| layers.put(path, content, mode);
    put(
        "/etc/hosts",
        format!(
            "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
             {AWS_ADDRESS}\t{ENDPOINT_HOST}\n"
        )
        .as_bytes(),
        0o644,
    )?;
    put("/etc/cfn/ca-override.pem", &std::fs::read(tls.join("ca.pem"))?, 0o644)?;
    let interval = config.hup_interval.as_secs_f64();
    match config.init {
        Init::Shell => put(
            "/etc/default/cfn-hup",
            format!(
                "# Test aid (cfn-bootstrap scenario): poll every few seconds, not every interval= minutes.\n\
                 export CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS={interval}\n"
            )
            .as_bytes(),
            0o644,
        )?,
        Init::Systemd => put(
            "/etc/systemd/system/cfn-hup.service.d/scenario.conf",
            format!(
                "# Test aid (cfn-bootstrap scenario): poll every few seconds, not every interval= minutes.\n\
                 [Service]\nEnvironment=CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS={interval}\n"
            )
            .as_bytes(),
            0o644,
        )?,
    }
    let deb_name = config.deb.file_name().and_then(|n| n.to_str()).unwrap_or("cfn-bootstrap.deb").to_string();
    let deb = format!("{INSTANCE_DOWNLOADS}/{deb_name}");
    put(&deb, &std::fs::read(&config.deb).context("read the .deb")?, 0o644)?;
    note(&format!("lower (read-only): {}", config.rootfs.display()));
    note(&format!("upper (what the instance changes): {}", upper.display()));
    note(&format!("/etc/hosts: {AWS_ADDRESS} {ENDPOINT_HOST}; /etc/cfn/ca-override.pem: the emulator's private CA"));

    step("Starting the AWS emulator in its own network namespace");
    let emulator = EmulatorProcess::start(config, &tls)?;
    note(&format!(
        "CloudFormation: https://{ENDPOINT_HOST} ({AWS_ADDRESS}:443, TLS); IMDS: http://{IMDS_ADDRESS}/ ; log: {}",
        emulator.log.display()
    ));
    timing(&mut out, "emulator ready");

    step(&format!("Creating stack {STACK}: {RESOURCE} with a CreationPolicy (1 signal, PT5M)"));
    let client =
        cfn_aws::client_with_keys(&emulator.url, REGION, cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None));
    let template = template(FIRST_PAGE, config.init);
    client
        .call("CreateStack", &[("StackName", STACK), ("TemplateBody", &template.to_string())], true)
        .map_err(|e| anyhow::anyhow!("CreateStack: {e}"))?;
    note(&format!("{STACK}: {}", emulator.stack_status()?));
    out.user_data = user_data();
    emulator.post("/_emu/imds", &json!({ "user_data": out.user_data }))?;
    note("user data (from the template's Fn::Sub, served by IMDS):");
    quote("/latest/user-data", &out.user_data);

    step(&format!(
        "Booting the instance: private mount, PID and network namespaces, chroot into the overlay, {}",
        match config.init {
            Init::Shell => "a shell as init",
            Init::Systemd => "systemd as init",
        }
    ));
    let instance = Instance::boot(&layers, config.init, &[])?;
    note(&format!("init of the instance: host pid {}", instance.pid1));
    connect(instance.pid1)?;
    note(&format!(
        "veth {AWS_ADDRESS}/24 (emulator) <-> {INSTANCE_ADDRESS}/24 (instance); {IMDS_ADDRESS} via {AWS_ADDRESS}"
    ));
    timing(&mut out, "instance booted");

    step("Installing cfn-bootstrap from its .deb (dpkg -i), as in an AMI build");
    let (code, text) = instance.exec(&format!("dpkg -i {deb} && ls -l /opt/aws/bin"))?;
    quote(&format!("dpkg -i {deb}"), &text);
    if code != 0 {
        bail!("dpkg -i failed with {code}");
    }
    timing(&mut out, "package installed");

    step("Running the user data as root (no credentials: the instance identity signs the calls)");
    let (code, _) = instance.exec(
        "mkdir -p /var/lib/cloud/instance\n\
         exec 3<>/dev/tcp/169.254.169.254/80\n\
         printf 'GET /latest/user-data HTTP/1.0\\r\\nHost: 169.254.169.254\\r\\n\\r\\n' >&3\n\
         sed '1,/^\\r$/d' <&3 > /var/lib/cloud/instance/user-data.txt\n\
         chmod 700 /var/lib/cloud/instance/user-data.txt\n\
         cd / && /var/lib/cloud/instance/user-data.txt > /var/log/cloud-init-output.log 2>&1",
    )?;
    out.user_data_exit = code;
    out.cloud_init_output = read_upper(&upper, "/var/log/cloud-init-output.log");
    quote("/var/log/cloud-init-output.log", &out.cloud_init_output);
    note(&format!("exit code {code}"));
    timing(&mut out, "user data");
    if code != 0 {
        let log = read_upper(&upper, "/var/log/cfn-init-cmd.log");
        let tail: Vec<&str> = log.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
        quote("cfn-init-cmd.log (end)", &tail.join("\n"));
        bail!(
            "the user data failed with exit code {code}:\n{}\n(see {})",
            out.cloud_init_output.trim_end(),
            upper.join("var/log").display()
        );
    }

    step("nginx serves the page on the instance's loopback");
    out.first_page = http_get_in(instance.pid1, 80, "/")?;
    quote("GET http://127.0.0.1/", &out.first_page);

    step("The stack is complete");
    out.stack_status = wait_for(Duration::from_secs(20), || {
        let status = emulator.stack_status()?;
        Ok((status != "CREATE_IN_PROGRESS").then_some(status))
    })
    .unwrap_or_else(|_| emulator.stack_status().unwrap_or_default());
    out.signals = emulator.get("/_emu/signals")?;
    note(&format!("{STACK}: {}", out.stack_status));
    note(&format!("signals received: {}", out.signals));

    let (_, text) = match config.init {
        Init::Shell => {
            step("The cfn-hup service runs (SysV script, pid file, process)");
            instance.exec(
                "service cfn-hup status; pid=$(cat /var/run/cfn-hup.pid); echo \"pid file: $pid\"; \
                 [ -z \"$pid\" ] || echo \"process: $(tr '\\0' ' ' < /proc/$pid/cmdline)\"; \
                 ls /etc/rc2.d | grep -e cfn-hup -e nginx",
            )?
        }
        Init::Systemd => {
            step("The cfn-hup service runs (the .deb's unit, enabled and active)");
            instance.exec(
                "for unit in cfn-hup nginx; do echo \"$unit: $(systemctl is-enabled $unit) $(systemctl is-active $unit)\"; done; \
                 pid=$(systemctl show -p MainPID --value cfn-hup); echo \"main pid: $pid\"; \
                 [ \"$pid\" = 0 ] || echo \"process: $(tr '\\0' ' ' < /proc/$pid/cmdline)\"; \
                 echo \"unit: $(systemctl show -p FragmentPath --value cfn-hup)\"",
            )?
        }
    };
    out.hup_service = text;
    quote("service cfn-hup status", &out.hup_service);
    timing(&mut out, "checks after create");

    step("Waiting for cfn-hup to record the current metadata (its first pass after CREATE_COMPLETE)");
    let db = upper.join("var/lib/cfn-hup/data/metadata_db.json");
    wait_for(Duration::from_secs(30) + 3 * config.hup_interval, || {
        Ok(std::fs::read_to_string(&db).ok().filter(|t| t.contains(HOOK)).map(|_| ()))
    })
    .context("cfn-hup never stored the state of its hook")?;
    quote(&db.display().to_string(), &std::fs::read_to_string(&db).unwrap_or_default());
    timing(&mut out, "cfn-hup seeded");

    step("UpdateStack: index.html says something else");
    client
        .call(
            "UpdateStack",
            &[("StackName", STACK), ("TemplateBody", &self::template(SECOND_PAGE, config.init).to_string())],
            true,
        )
        .map_err(|e| anyhow::anyhow!("UpdateStack: {e}"))?;
    let updated = Instant::now();
    out.stack_status_after_update = emulator.stack_status()?;
    note(&format!("{STACK}: {}", out.stack_status_after_update));

    step(&format!("Waiting for the page to change (cfn-hup polls every {:?})", config.hup_interval));
    let mut last = out.first_page.clone();
    out.pages_seen.push(last.clone());
    let deadline = updated + Duration::from_secs(60) + 3 * config.hup_interval;
    loop {
        let page = http_get_in(instance.pid1, 80, "/").unwrap_or_else(|e| format!("(no answer: {e})"));
        if page != last {
            out.pages_seen.push(page.clone());
            last = page.clone();
        }
        if page.contains(SECOND_PAGE) {
            out.page_changed_after = updated.elapsed();
            break;
        }
        if Instant::now() > deadline {
            bail!("the page did not change within {:?}; pages seen: {:?}", deadline - updated, out.pages_seen);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    note(&format!("changed {:.1} s after UpdateStack", out.page_changed_after.as_secs_f64()));
    timing(&mut out, "page changed");
    // Two more polls: the action must not run again.
    std::thread::sleep(2 * config.hup_interval + Duration::from_millis(500));
    out.second_page = http_get_in(instance.pid1, 80, "/")?;
    quote("GET http://127.0.0.1/", &out.second_page);
    timing(&mut out, "two more polls");

    step("The logs tell the story (in the overlay's upper layer)");
    out.cfn_init_log = read_upper(&upper, "/var/log/cfn-init.log");
    out.cfn_init_cmd_log = read_upper(&upper, "/var/log/cfn-init-cmd.log");
    out.cfn_hup_log = read_upper(&upper, "/var/log/cfn-hup.log");
    for log in ["cfn-hup.log", "cfn-init.log", "cfn-init-cmd.log", "cloud-init-output.log"] {
        note(&upper.join("var/log").join(log).display().to_string());
    }
    quote("cfn-hup.log", &out.cfn_hup_log);
    let actions = out.cfn_hup_log.matches(&format!("Running action for {HOOK}")).count();
    note(&format!("cfn-hup ran its action {actions} time(s)"));

    if config.init == Init::Systemd {
        the_unit(&instance, &layers, &mut out)?;
        timing(&mut out, "the unit's reload and stop");
    }

    step("Tearing down: the instance's PID namespace, the emulator, both network namespaces");
    drop(instance);
    drop(emulator);
    out.total = started.elapsed();
    note(&format!("scenario wall time: {:.1} s", out.total.as_secs_f64()));
    Ok(out)
}

/// systemd only: `systemctl reload cfn-hup` re-reads the configuration (a second hook
/// file written just before, so the reloaded configuration has one hook more) in the same
/// process; `systemctl stop cfn-hup` ends it; its lines are in the journal.
fn the_unit(instance: &Instance, layers: &Layers, out: &mut Outcome) -> Result<()> {
    step("systemctl reload cfn-hup: the configuration is read again (SIGHUP), same process");
    let before = layers.read("/var/log/cfn-hup.log").len();
    let (code, text) = instance.exec(&format!(
        "echo \"main pid before: $(systemctl show -p MainPID --value cfn-hup)\"; \
         printf '[after-reload]\\ntriggers=post.update\\npath=Resources.{RESOURCE}.Metadata.Other\\naction=/bin/true\\n' > {RELOAD_HOOK}; \
         systemctl reload cfn-hup; echo \"main pid after: $(systemctl show -p MainPID --value cfn-hup)\""
    ))?;
    if code != 0 {
        bail!("systemctl reload cfn-hup failed with {code}: {text}");
    }
    // ExecReload only sends the signal: the reload is done when cfn-hup logs it.
    let reloaded = wait_for(Duration::from_secs(20), || {
        let log = layers.read("/var/log/cfn-hup.log");
        let new = log.get(before..).unwrap_or_default().to_string();
        Ok(new.contains("Configuration reloaded").then_some(new))
    })
    .context("cfn-hup did not log its reload")?;
    out.reload = text;
    out.reload_log = reloaded;
    quote("systemctl reload cfn-hup", &out.reload);
    quote("cfn-hup.log (new lines)", &out.reload_log);

    step("systemctl stop cfn-hup: it ends cleanly within seconds");
    let started = Instant::now();
    let (code, text) = instance.exec("systemctl stop cfn-hup")?;
    out.stop_took = started.elapsed();
    if code != 0 {
        bail!("systemctl stop cfn-hup failed with {code}: {text}");
    }
    let (_, stopped) = instance.exec(
        "echo \"is-active: $(systemctl is-active cfn-hup)\"; \
         systemctl show -p Result -p ExecMainCode -p ExecMainStatus cfn-hup",
    )?;
    out.stopped = stopped;
    note(&format!("stopped in {:.1} s", out.stop_took.as_secs_f64()));
    quote("systemctl show cfn-hup", &out.stopped);

    step("Its lines are in the journal");
    let (_, journal) = instance.exec("journalctl --no-pager -o cat -u cfn-hup")?;
    out.journal = journal;
    let tail: Vec<&str> = out.journal.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    quote("journalctl -u cfn-hup (end)", &tail.join("\n"));
    Ok(())
}

/// The stack's template: the users' playbook, with apt instead of amazon-linux-extras, and
/// services of the manager `init` implies.
pub fn template(page: &str, init: Init) -> Value {
    let manager = match init {
        Init::Shell => "sysvinit",
        Init::Systemd => "systemd",
    };
    let init = json!({
        "configSets": {"create": ["nginx", "cfn-hup"], "update": ["nginx"]},
        "nginx": {
            "packages": {"apt": {"nginx": []}},
            "files": {"/var/www/html/index.html": {
                "content": page, "mode": "000644", "owner": "root", "group": "root"
            }},
            "services": {manager: {"nginx": {
                "enabled": "true", "ensureRunning": "true", "files": ["/var/www/html/index.html"]
            }}}
        },
        "cfn-hup": {
            "files": {
                "/etc/cfn/cfn-hup.conf": {
                    "content": {"Fn::Join": ["", [
                        "[main]\n",
                        "stack=", {"Ref": "AWS::StackId"}, "\n",
                        "region=", {"Ref": "AWS::Region"}, "\n",
                        "interval=1\n",
                        "verbose=true\n"
                    ]]},
                    "mode": "000400", "owner": "root", "group": "root"
                },
                "/etc/cfn/hooks.d/cfn-auto-reloader.conf": {
                    "content": {"Fn::Join": ["", [
                        "[cfn-auto-reloader-hook]\n",
                        "triggers=post.update\n",
                        "path=Resources.", RESOURCE, ".Metadata.AWS::CloudFormation::Init\n",
                        "action=/opt/aws/bin/cfn-init -v --region ", {"Ref": "AWS::Region"},
                        " --stack ", {"Ref": "AWS::StackName"},
                        " --resource ", RESOURCE, " --configsets update\n",
                        "runas=root\n"
                    ]]},
                    "mode": "000400", "owner": "root", "group": "root"
                }
            },
            "services": {manager: {"cfn-hup": {
                "enabled": "true", "ensureRunning": "true",
                "files": ["/etc/cfn/cfn-hup.conf", "/etc/cfn/hooks.d/cfn-auto-reloader.conf"]
            }}}
        }
    });
    json!({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {
            RESOURCE: {
                "Type": "AWS::EC2::Instance",
                "CreationPolicy": {"ResourceSignal": {"Count": 1, "Timeout": "PT5M"}},
                "Metadata": {"AWS::CloudFormation::Init": init},
                "Properties": {
                    "ImageId": "ami-12345678",
                    "InstanceType": "t3.micro",
                    "UserData": {"Fn::Base64": {"Fn::Sub": USER_DATA}}
                }
            }
        }
    })
}

/// The user data, as the template's `Fn::Sub` renders it: the usual block, with Debian's
/// package manager instead of `amazon-linux-extras`.
pub fn user_data() -> String {
    USER_DATA.replace("${AWS::Region}", REGION).replace("${AWS::StackName}", STACK)
}

const USER_DATA: &str = "#!/bin/bash -xe
apt-get -q update
/opt/aws/bin/cfn-init -v --region ${AWS::Region} --stack ${AWS::StackName} --resource WebServerInstance --configsets create
/opt/aws/bin/cfn-signal -e $? --region ${AWS::Region} --stack ${AWS::StackName} --resource WebServerInstance
";

fn read_upper(upper: &Path, path: &str) -> String {
    std::fs::read_to_string(upper.join(path.trim_start_matches('/'))).unwrap_or_default()
}

fn run_ok(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("run {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Polls `check` every 100 ms until it gives a value or `timeout` passes.
fn wait_for<T>(timeout: Duration, mut check: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check()? {
            return Ok(value);
        }
        if Instant::now() > deadline {
            bail!("gave up after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A private CA and the endpoint's certificate signed by it (EC P-256, two days).
fn certificates(dir: &Path) -> Result<()> {
    std::fs::write(
        dir.join("server.ext"),
        format!(
            "subjectAltName=DNS:{ENDPOINT_HOST}\nbasicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        ),
    )?;
    let script = format!(
        "set -e\n\
         openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
           -keyout ca.key -out ca.pem -subj '/CN=cfn-bootstrap scenario CA' \
           -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign\n\
         openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
           -keyout server.key -out server.csr -subj '/CN={ENDPOINT_HOST}'\n\
         openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
           -extfile server.ext -out server.pem\n"
    );
    run_ok(Command::new("sh").arg("-c").arg(script).current_dir(dir))
}

struct EmulatorProcess {
    child: Child,
    url: String,
    log: PathBuf,
}

impl EmulatorProcess {
    fn start(config: &Config, tls: &Path) -> Result<EmulatorProcess> {
        let log = config.work.join("emulator.log");
        let log_file = File::create(&log)?;
        let mut cmd = Command::new(&config.python);
        cmd.arg(&config.emulator_script)
            .args(["--host", "0.0.0.0", "--port", &CONTROL_PORT.to_string()])
            .args(["--tls-port", "443"])
            .arg("--tls-cert")
            .arg(tls.join("server.pem"))
            .arg("--tls-key")
            .arg(tls.join("server.key"))
            .args(["--imds-host", IMDS_ADDRESS, "--imds-port", "80", "--region", REGION])
            .args(["--validate-sigv4", "--credentials", &format!("{ACCESS_KEY}:{SECRET_KEY}")])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        die_with_parent(&mut cmd);
        let child = cmd.spawn().context("start the emulator")?;
        let emulator = EmulatorProcess { child, url: format!("http://127.0.0.1:{CONTROL_PORT}"), log };
        wait_for(Duration::from_secs(60), || Ok(emulator.get("/_emu/state").ok()))
            .with_context(|| format!("the emulator did not start; see {}", emulator.log.display()))?;
        Ok(emulator)
    }

    fn get(&self, path: &str) -> Result<Value> {
        let mut response = ureq::get(&format!("{}{path}", self.url)).call()?;
        Ok(serde_json::from_str(&response.body_mut().read_to_string()?)?)
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        let mut response = ureq::post(&format!("{}{path}", self.url)).send(body.to_string().as_bytes())?;
        Ok(serde_json::from_str(&response.body_mut().read_to_string()?)?)
    }

    fn stack_status(&self) -> Result<String> {
        let state = self.get("/_emu/state")?;
        let status = state
            .as_object()
            .and_then(|stacks| stacks.iter().find(|(id, _)| id.contains(&format!(":stack/{STACK}/"))))
            .and_then(|(_, stack)| stack["StackStatus"].as_str())
            .unwrap_or("(no such stack)");
        Ok(status.to_string())
    }
}

impl Drop for EmulatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The veth pair between this (the emulator's) namespace and the instance's.
fn connect(pid1: i32) -> Result<()> {
    let pid = pid1.to_string();
    run_ok(Command::new("ip").args(["link", "add", "cfn-aws", "type", "veth", "peer", "name", "eth0", "netns", &pid]))?;
    run_ok(Command::new("ip").args(["addr", "add", &format!("{AWS_ADDRESS}/24"), "dev", "cfn-aws"]))?;
    run_ok(Command::new("ip").args(["link", "set", "cfn-aws", "up"]))?;
    let inside =
        |args: &[&str]| run_ok(Command::new("nsenter").args(["--target", &pid, "--net", "--", "ip"]).args(args));
    inside(&["addr", "add", &format!("{INSTANCE_ADDRESS}/24"), "dev", "eth0"])?;
    inside(&["link", "set", "eth0", "up"])?;
    inside(&["route", "add", &format!("{IMDS_ADDRESS}/32"), "via", AWS_ADDRESS, "dev", "eth0"])?;
    Ok(())
}

/// `GET path` on 127.0.0.1:`port` inside the instance's network namespace; the body.
fn http_get_in(pid1: i32, port: u16, path: &str) -> Result<String> {
    let netns = File::open(format!("/proc/{pid1}/ns/net"))?;
    let path = path.to_string();
    std::thread::spawn(move || -> Result<String> {
        use std::os::fd::AsRawFd;
        // SAFETY: setns on this short-lived thread only.
        if unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            bail!("setns: {}", std::io::Error::last_os_error());
        }
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        if !head.starts_with("HTTP/1.1 200") {
            bail!("{}", head.lines().next().unwrap_or("no answer"));
        }
        Ok(body.to_string())
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}
