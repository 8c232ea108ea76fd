//! `cargo xtask demo`: the tools doing their job against the local AWS emulator.
//!
//! 1. As any user: the tools against the emulator, logs and links under `demo/`.
//! 2. As root only: the end-to-end scenario of tests/scenario.rs (xtask/src/scenario.rs):
//!    unchanged user data in an isolated Debian root with cfn-bootstrap installed from
//!    its .deb, nginx serving Hello World, cfn-hup applying a stack update. Without root
//!    the demo says so and goes on with part 3. The .deb holds the binary part 1 built
//!    (no release build); the root is the test root when `cargo xtask test` made it,
//!    else a smaller one made for the demo once (testroot::ensure_for_demo).
//!
//! 3. As any user: a rolling replacement with Auto Scaling lifecycle hooks (xtask/src/rolling.rs):
//!    a new instance launches and its launch hook completes once its page answers; the old
//!    one's drain, kept alive by heartbeats, ends in its termination. `--rolling` runs only
//!    this part (after the build).
//!
//! Each phase's time is printed as it ends, and all of them at the end.

use crate::emulator::{self, Emulator};
use crate::{cargo, dist, testroot, workspace};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[path = "rolling.rs"]
mod rolling;
#[path = "scenario.rs"]
pub mod scenario;

const ACCESS_KEY: &str = "AKIDDEMO";
const SECRET_KEY: &str = "demo/secret";
const STACK: &str = "demo-stack";

pub fn run(args: &[String]) -> Result<ExitCode> {
    let rolling_only = match args {
        [] => false,
        [only] if only == "--rolling" => true,
        _ => bail!("usage: cargo xtask demo [--rolling]"),
    };
    // The clock starts when the user's `cargo xtask demo` did: on a fresh clone, cargo
    // builds xtask itself (and most of the dependencies with it) before this runs.
    let before = cargo_ran_for().unwrap_or_default();
    let started = Instant::now().checked_sub(before).unwrap_or_else(Instant::now);
    let mut phases = Phases::default();
    phases.lines.push(("  cargo building xtask, before the demo began".into(), before));
    if rolling_only {
        let venv = meanwhile(emulator::python);
        build(&mut phases)?;
        let python = finish(venv, "the emulator's Python environment")?;
        part3(&python, &mut phases)?;
        phases.total("the whole demo", started);
        phases.print();
        return Ok(ExitCode::SUCCESS);
    }
    let root = testroot::running_as_root()?;
    if !root {
        println!(
            "Note: part 2 of the demo, the end-to-end scenario (nginx and cfn-hup in an isolated Debian root),\n\
             needs root for its mount, PID and network namespaces. Running parts 1 and 3 only, which need no\n\
             root; run `sudo -E cargo xtask demo` (or as root) for all three."
        );
    }
    // What takes long the first time without needing the CPU the build needs (downloads,
    // unpacking) is made meanwhile: the emulator's Python environment and, for part 2,
    // the Debian root.
    let venv = meanwhile(emulator::python);
    let rootfs = root.then(|| meanwhile(testroot::ensure_for_demo));
    step("Part 1: the tools against the local emulator (no root needed)");
    let (binary, python) = tools(&mut phases, venv)?;
    phases.total("part 1", started);
    if let Some(rootfs) = rootfs {
        let part2 = Instant::now();
        step("Part 2: the end-to-end scenario, as root");
        end_to_end(&binary, python.clone(), rootfs, &mut phases)?;
        phases.total("part 2", part2);
    }
    part3(&python, &mut phases)?;
    phases.total("the whole demo", started);
    phases.print();
    Ok(ExitCode::SUCCESS)
}

/// Part 3, the rolling replacement, with the binary part 1 (or the build) linked in demo/bin.
fn part3(python: &Path, phases: &mut Phases) -> Result<()> {
    let started = Instant::now();
    step("Part 3: a rolling replacement with Auto Scaling lifecycle hooks (no root needed)");
    rolling::run(&workspace().join("demo/bin"), python, phases)?;
    phases.total("part 3", started);
    Ok(())
}

/// How long the parent process (the `cargo` of `cargo xtask demo`) has been running, from
/// its start time in `/proc` (clock ticks since boot) and the system's uptime.
fn cargo_ran_for() -> Option<Duration> {
    let fields_after_name = |stat: &str| -> Vec<String> {
        let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        rest.split_whitespace().map(String::from).collect()
    };
    let own = fields_after_name(&std::fs::read_to_string("/proc/self/stat").ok()?);
    // After the name: state (field 3) is [0], ppid (field 4) is [1], starttime (field 22) is [19].
    let parent = std::fs::read_to_string(format!("/proc/{}/stat", own.get(1)?)).ok()?;
    let started_ticks: f64 = fields_after_name(&parent).get(19)?.parse().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime").ok()?.split_whitespace().next()?.parse().ok()?;
    let seconds = uptime - started_ticks / ticks_per_second;
    (ticks_per_second > 0.0 && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// How long each phase took, printed at the end.
#[derive(Default)]
struct Phases {
    lines: Vec<(String, Duration)>,
    lap: Option<Instant>,
}

impl Phases {
    /// Ends the phase that began at the last call (or at the first).
    fn done(&mut self, what: &str) {
        let now = Instant::now();
        let took = now - self.lap.unwrap_or(now);
        self.lap = Some(now);
        println!("    ({what}: {:.1} s)", took.as_secs_f64());
        self.lines.push((format!("  {what}"), took));
    }

    fn start(&mut self) {
        self.lap = Some(Instant::now());
    }

    fn total(&mut self, what: &str, since: Instant) {
        self.lines.push((what.to_string(), since.elapsed()));
    }

    fn print(&self) {
        println!("\nTimes:");
        for (what, took) in &self.lines {
            println!("    {what:<44} {:>6.1} s", took.as_secs_f64());
        }
    }
}

/// Part 2: the scenario of tests/scenario.rs, narrated, with the binary part 1 built.
fn end_to_end(binary: &Path, python: PathBuf, rootfs: Background<PathBuf>, phases: &mut Phases) -> Result<()> {
    for (program, why) in
        [("ip", "iproute2"), ("unshare", "util-linux"), ("nsenter", "util-linux"), ("openssl", "openssl")]
    {
        crate::require(program, &format!("the scenario (Debian package {why})"))?;
    }
    phases.start();
    let rootfs = finish(rootfs, "the Debian root")?;
    println!("    isolated Debian root: {}", short_path(&rootfs));
    phases.done("waiting for the Debian root (made once, during part 1)");
    let deb = if runs_in(&rootfs, binary)? {
        println!("    building the .deb of the binary part 1 built");
        dist::deb_of(binary, &dist::target_dir().join("demo-dist"))?
    } else {
        // A build linked against a newer C library than Debian 12's cannot run there.
        println!(
            "    {} does not run in Debian 12: building the static release binary and its .deb",
            short_path(binary)
        );
        let dist_dir = dist::build(&[dist::X86_64], &dist::target_dir().join("demo-dist"))?;
        dist_dir.join(format!("cfn-bootstrap_{}-1_amd64.deb", env!("CARGO_PKG_VERSION")))
    };
    println!("    {}", short_path(&deb));
    phases.done("the .deb");
    let work = workspace().join("demo/instance");
    let out = scenario::run(scenario::Config {
        rootfs,
        init: crate::instance::Init::Shell,
        deb,
        python,
        emulator_script: workspace().join("tests/emulator/moto_cfn_server.py"),
        work: work.clone(),
        hup_interval: Duration::from_secs(2),
    })?;
    phases.done("the scenario");
    let ok = out.user_data_exit == 0
        && out.first_page == scenario::FIRST_PAGE
        && out.stack_status == "CREATE_COMPLETE"
        && out.second_page == scenario::SECOND_PAGE
        && out.cfn_hup_log.matches(&format!("Running action for {}", scenario::HOOK)).count() == 1;
    println!(
        "\n{} Scenario wall time {:.1} s (the page changed {:.1} s after UpdateStack).",
        if ok { "Done." } else { "Something went wrong: see the logs." },
        out.total.as_secs_f64(),
        out.page_changed_after.as_secs_f64()
    );
    println!("Where to look (the instance's changed files are kept; everything else is gone):");
    for (what, path) in [
        ("user data output", "upper/var/log/cloud-init-output.log"),
        ("cfn-init", "upper/var/log/cfn-init.log"),
        ("commands run by cfn-init", "upper/var/log/cfn-init-cmd.log"),
        ("cfn-hup", "upper/var/log/cfn-hup.log"),
        ("cfn-hup state", "upper/var/lib/cfn-hup/data/metadata_db.json"),
        ("cfn-init metadata", "upper/var/lib/cfn-init/data/metadata.json"),
        ("emulator", "emulator.log"),
    ] {
        println!("    {what:<26} {}", short_path(&work.join(path)));
    }
    if !ok {
        bail!("the scenario did not end as expected");
    }
    Ok(())
}

/// Whether `binary` runs inside `root` (`--version`): a copy of it in a private /tmp
/// of the root, in a private mount namespace (the cached root is not changed).
fn runs_in(root: &Path, binary: &Path) -> Result<bool> {
    let scratch = tempfile_dir()?;
    std::fs::copy(binary, scratch.join("cfn-bootstrap"))?;
    let status = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$SCRATCH" "$ROOT/tmp" && exec chroot "$ROOT" /tmp/cfn-bootstrap --version"#)
        .env("ROOT", root)
        .env("SCRATCH", &scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("run unshare/chroot")?;
    std::fs::remove_dir_all(&scratch)?;
    Ok(status.success())
}

/// An empty directory under target/ for `runs_in`.
fn tempfile_dir() -> Result<PathBuf> {
    let dir = dist::target_dir().join(format!("demo-check-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Work started on a thread of its own.
type Background<T> = std::thread::JoinHandle<Result<T>>;

/// Runs `work` on a thread at the lowest CPU priority, and so the programs it starts
/// (pip, debootstrap, dpkg inherit it): they fill the time the build waits on the disk or
/// the network, and leave the CPU to the build, which part 1 waits for.
fn meanwhile<T: Send + 'static>(work: fn() -> Result<T>) -> Background<T> {
    std::thread::spawn(move || {
        // SAFETY: setpriority with `who` 0 changes this thread's nice value only (Linux
        // keeps one per thread); it reads and writes no memory of ours.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
        work()
    })
}

fn finish<T>(work: Background<T>, what: &str) -> Result<T> {
    work.join().unwrap_or_else(|_| bail!("making {what} panicked"))
}

/// Builds the binary (debug) and makes `demo/` afresh with the tools' links in `demo/bin`.
fn build(phases: &mut Phases) -> Result<PathBuf> {
    step("Building cfn-bootstrap");
    phases.start();
    let status = cargo().current_dir(workspace()).args(["build", "--bin", "cfn-bootstrap"]).status()?;
    if !status.success() {
        bail!("the build failed");
    }
    let binary = dist::target_dir().join("debug/cfn-bootstrap");
    phases.done("the build");

    let demo = workspace().join("demo");
    let _ = std::fs::remove_dir_all(&demo);
    for dir in ["bin", "log", "lib"] {
        std::fs::create_dir_all(demo.join(dir))?;
    }
    for tool in ["cfn-init", "cfn-signal", "cfn-hup", "cfn-get-metadata"] {
        std::os::unix::fs::symlink(&binary, demo.join("bin").join(tool))?;
    }
    println!("    links to the one binary: {}/bin/cfn-*", demo.display());
    Ok(binary)
}

/// Part 1; returns the binary it built and the emulator's Python.
fn tools(phases: &mut Phases, venv: Background<PathBuf>) -> Result<(PathBuf, PathBuf)> {
    let binary = build(phases)?;
    let demo = workspace().join("demo");

    step("Starting the local AWS emulator (CloudFormation + instance metadata, SigV4 checked)");
    let python = finish(venv, "the emulator's Python environment")?;
    let emulator = Emulator::start(
        &python,
        &["--validate-sigv4".into(), "--credentials".into(), format!("{ACCESS_KEY}:{SECRET_KEY}")],
    )?;
    println!("    listening at {}", emulator.url);
    phases.done("the emulator's start (and its Python environment, made once during the build)");

    step(&format!("Creating stack {STACK} with an instance whose metadata holds AWS::CloudFormation::Init"));
    create_stack(&emulator.url, &demo)?;

    let tool = |name: &str| {
        let mut cmd = Command::new(demo.join("bin").join(name));
        cmd.env("CFN_BOOTSTRAP_LOG_DIR", demo.join("log"))
            .env("CFN_BOOTSTRAP_LIB_DIR", demo.join("lib"))
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1");
        cmd
    };
    let keys = ["--url", &emulator.url, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY];

    step("cfn-get-metadata with access keys: the whole metadata");
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "WebServer"]).args(keys))?;

    step("cfn-get-metadata -k: one value by its dotted path");
    show(
        tool("cfn-get-metadata")
            .args(["-s", STACK, "-r", "WebServer", "-k", "AWS::CloudFormation::Init.config.files"])
            .args(keys),
    )?;
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "WebServer", "-k", "App.listeners.0.port"]).args(keys))?;

    step("cfn-get-metadata with no credentials, as on an EC2 instance (signed with the instance identity)");
    show(tool("cfn-get-metadata").env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url).args([
        "-s",
        STACK,
        "-r",
        "WebServer",
        "-k",
        "App.greeting",
        "--url",
        &emulator.url,
    ]))?;

    step("cfn-init: the `demo` configSet writes a templated page and runs two commands (instance identity)");
    show(tool("cfn-init").env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url).args([
        "-v",
        "-s",
        STACK,
        "-r",
        "WebServer",
        "-c",
        "demo",
        "--url",
        &emulator.url,
    ]))?;
    let page = demo.join("www/index.html");
    println!("    {}:", short_path(&page));
    for line in std::fs::read_to_string(&page).unwrap_or_default().lines() {
        println!("    | {line}");
    }
    println!("    {}:", short_path(&demo.join("log/cfn-init-cmd.log")));
    for line in std::fs::read_to_string(demo.join("log/cfn-init-cmd.log")).unwrap_or_default().lines() {
        println!("    | {line}");
    }

    step("Errors look like the reference's");
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "WebServer", "-k", "App.nope"]).args(keys))?;
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "Nothing"]).args(keys))?;

    step("The log, in the reference's format");
    let log = demo.join("log/cfn-init.log");
    println!("    {}:", log.display());
    for line in std::fs::read_to_string(&log).unwrap_or_default().lines() {
        println!("    | {line}");
    }
    drop(emulator);
    phases.done("the tools");
    println!("\nDone. Links, logs and state are under {}; the emulator has stopped.", demo.display());
    Ok((binary, python))
}

fn step(title: &str) {
    println!("\n==> {title}");
}

fn show(cmd: &mut Command) -> Result<()> {
    let shown: Vec<String> = std::iter::once(short_path(Path::new(cmd.get_program())))
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect();
    println!("$ {}", shown.join(" "));
    let out = cmd.output().with_context(|| format!("run {}", shown[0]))?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        println!("(stderr) {line}");
    }
    println!("(exit code {})", out.status.code().unwrap_or(-1));
    Ok(())
}

fn short_path(path: &Path) -> String {
    path.strip_prefix(workspace()).map(|p| p.display().to_string()).unwrap_or_else(|_| path.display().to_string())
}

fn create_stack(url: &str, demo: &Path) -> Result<()> {
    let www = demo.join("www").display().to_string();
    let template = json!({
        "Resources": {
            "WebServer": {
                "Type": "AWS::EC2::Instance",
                "Metadata": {
                    "AWS::CloudFormation::Init": {
                        "configSets": {"default": ["config"], "demo": ["site"]},
                        "site": {
                            "files": {
                                format!("{www}/index.html"): {
                                    "content": "<title>{{title}}</title><h1>{{title}}</h1>\n<p>Stack {{stack}}</p>\n",
                                    "context": {"title": "Hello World", "stack": {"Ref": "AWS::StackName"}},
                                    "mode": "000644"
                                }
                            },
                            "commands": {
                                "01_count": {"command": format!("wc -c {www}/index.html")},
                                "02_skip": {"command": "echo never", "test": format!("test ! -e {www}/index.html")}
                            }
                        },
                        "config": {
                            "packages": {"apt": {"nginx": []}},
                            "files": {"/var/www/html/index.html": {
                                "content": "<title>Hello World</title><h1>Hello World</h1>", "mode": "000644"}},
                            "services": {"sysvinit": {"nginx": {"enabled": "true", "ensureRunning": "true"}}}
                        }
                    },
                    "App": {
                        "greeting": {"Fn::Join": [" ", ["hello from", {"Ref": "AWS::StackName"}]]},
                        "listeners": [{"port": 80}, {"port": 443}]
                    }
                },
                "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}
            },
            "Nothing": {"Type": "AWS::CloudFormation::WaitConditionHandle"}
        }
    });
    let client = cfn_aws::client_with_keys(url, "us-east-1", cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None));
    client.call("CreateStack", &[("StackName", STACK), ("TemplateBody", &template.to_string())], true)?;
    println!("    {STACK}: CREATE_COMPLETE");
    Ok(())
}
