//! `cargo xtask bench [--vs "COMMAND PREFIX"] [--runs N] [--quick]`: speed, memory and
//! footprint of the release binary on a fixed set of workloads (issue 8), optionally
//! interleaved with another implementation of the same tools, with the issue's targets
//! checked. Prints a table and writes `target/bench/report.json`.
//!
//! `--only 1,4`: only the workloads with these ids (1, 2-base, 2a, 2b, 2c, 3a, 3b, 4, 5, 6,
//! 6-lifecycle, lifecycle-latency, render, validate, validate-template, hostile).
//!
//! `6-lifecycle` is workload 6's idle daemon without and with lifecycle hooks, and
//! `lifecycle-latency` the time from an instance metadata item changing to the lifecycle
//! action starting (bench/lifecycle.rs); ours alone.
//!
//! `render` is `cfn-bootstrap render` of the seed template (the end-to-end scenario's),
//! `validate` is `cfn-bootstrap validate` of the seed metadata (the scenario stack's, in
//! tests/validate): ours alone, the reference has no such commands (target: under 5 ms wall).
//! `validate-template` is `cfn-bootstrap validate -t` of a 1,100-line template with 10
//! resources with Init and parameters without values (tests/templates/large_init.yaml),
//! every resource and configSet, each condition over an unknown both ways (target: under
//! 20 ms wall).
//!
//! `hostile` is `validate -t` of each hostile template of issue 31 (bench/hostile.rs): the
//! F1 Fn::Sub nest, F2's one-line Fn::Join, F3's configSet list, F4's `%(` value, F12's
//! sections and keys, F13's 1 MiB of calls; ours alone (target: each under 1 s wall).
//!
//! `--hup-minutes M`: only the cfn-hup daemon (workload 6), its polls phase lasting M
//! minutes (a poll a second) to show its memory stays flat; it works in
//! `target/bench-hup`, so it can run beside an ordinary `cargo xtask bench`.
//!
//! Every workload runs as whole processes: wall time from spawn to reap, CPU time
//! (user+sys) and peak resident memory from the child's `wait4` rusage (which includes
//! the children it reaped, e.g. the shells of cfn-init's commands). Warm-up runs first,
//! then N repetitions, alternating which implementation goes first.
//!
//! The process floor (issue 16, `process_floor`): workloads 1, 2b and 3a also run a
//! minimal program that does only the work the workload needs, and the glibc build of
//! ours beside the static one that ships; the report gives each build's ratio to the
//! floor (target: <= 1.1x wall, <= 1.2x CPU).
//!
//! `--vs PREFIX`: the other implementation's tool is PREFIX followed by the tool name.
//! PREFIX is split on whitespace into words (no shell quoting); when it ends with
//! whitespace the tool name is one more argument (`--vs "cfn-bootstrap "` runs
//! `cfn-bootstrap cfn-init …`), otherwise it is appended to the last word
//! (`--vs /tmp/ref/bin/` runs `/tmp/ref/bin/cfn-init …`; `--vs "python2 /opt/ref/bin/"`
//! runs `python2 /opt/ref/bin/cfn-init …`).
//!
//! Both implementations get the same environment: `HTTP(S)_PROXY` = the emulator (the
//! Python reference fetches instance metadata through the environment proxy, so the
//! emulator answers its IMDS requests as it answers ours through
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT`), `NO_PROXY=127.0.0.1,localhost`, `LANG=C.UTF-8`,
//! `TZ=UTC`. As root the benchmark runs in a private mount namespace with tmpfs on
//! `/var/log`, `/var/lib` and `/run`, so both write their logs, state and pid files at the
//! real paths without touching the host; otherwise ours is pointed at `target/bench/state`
//! with `CFN_BOOTSTRAP_{LOG,LIB,RUN}_DIR` (another implementation then needs root).

mod cfn_lint;
mod floor;
mod footprint;
mod hostile;
mod hup;
mod lifecycle;
mod measure;
mod process_floor;

use crate::emulator::{self, Emulator};
use crate::{cargo, workspace};
use anyhow::{Result, bail};
use measure::{Sample, Summary, r3};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

const ACCESS_KEY: &str = "AKIDTESTKEY";
const SECRET_KEY: &str = "test/secret/key";
const STACK: &str = "cfn-bench";
const RESOURCE: &str = "Server";
const TOOLS: [&str; 4] = ["cfn-init", "cfn-get-metadata", "cfn-signal", "cfn-hup"];
const MIB: f64 = 1024.0 * 1024.0;
/// Pause after cleaning a workload's output (and before each floor batch).
pub const SETTLE: Duration = Duration::from_millis(100);

pub const USAGE: &str =
    "cargo xtask bench [--vs \"COMMAND PREFIX\"] [--runs N] [--quick] [--only ID,ID...] [--hup-minutes M]";

/// The workloads' ids, for `--only`.
const WORKLOAD_IDS: [&str; 17] = [
    "1",
    "2-base",
    "2a",
    "2b",
    "2c",
    "3a",
    "3b",
    "4",
    "5",
    "6",
    "6-lifecycle",
    "lifecycle-latency",
    "validate-corpus",
    "render",
    "validate",
    "validate-template",
    "hostile",
];
/// `cfn-bootstrap validate`'s input: the seed metadata.
const SEED_METADATA: &str = "tests/validate/seed-metadata.json";
/// `cfn-bootstrap validate -t`'s input: a large template without its parameters' values.
const LARGE_TEMPLATE: &str = "tests/templates/large_init.yaml";

struct Options {
    vs: Option<String>,
    runs: usize,
    quick: bool,
    hup_minutes: Option<u64>,
    /// Only these workloads (all when empty).
    only: Vec<String>,
}

impl Options {
    fn runs_workload(&self, id: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == id || (o == "hostile" && id.starts_with("hostile-")))
    }
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options { vs: None, runs: 0, quick: false, hup_minutes: None, only: Vec::new() };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--vs" => options.vs = Some(it.next().cloned().ok_or_else(|| anyhow::anyhow!("--vs needs a prefix"))?),
            "--runs" => {
                let n = it.next().ok_or_else(|| anyhow::anyhow!("--runs needs a number"))?;
                options.runs = n.parse().map_err(|_| anyhow::anyhow!("--runs: not a number: {n}"))?;
                if options.runs == 0 {
                    bail!("--runs must be at least 1");
                }
            }
            "--quick" => options.quick = true,
            "--only" => {
                let ids = it.next().ok_or_else(|| anyhow::anyhow!("--only needs workload ids"))?;
                for id in ids.split(',') {
                    if !WORKLOAD_IDS.contains(&id) {
                        bail!("--only: no workload {id:?} (the workloads: {})", WORKLOAD_IDS.join(", "));
                    }
                    options.only.push(id.to_string());
                }
            }
            "--hup-minutes" => {
                let m = it.next().ok_or_else(|| anyhow::anyhow!("--hup-minutes needs a number"))?;
                match m.parse() {
                    Ok(m) if m >= 1 => options.hup_minutes = Some(m),
                    _ => bail!("--hup-minutes: not a whole number of minutes, at least 1: {m}"),
                }
                options.only = vec!["6".into()];
            }
            other => bail!("unknown argument {other}\nusage: {USAGE}"),
        }
    }
    if options.vs.as_deref().is_some_and(|p| p.trim().is_empty()) {
        bail!("--vs needs a non-empty prefix");
    }
    if options.runs == 0 {
        options.runs = if options.quick { 5 } else { 20 };
    }
    Ok(options)
}

enum Kind {
    Ours {
        bin_dir: PathBuf,
    },
    Other {
        words: Vec<String>,
        separate: bool,
    },
    /// The process floor: runs a workload's `floor` arguments instead of the tool.
    Floor {
        program: PathBuf,
    },
}

pub struct Implementation {
    label: &'static str,
    kind: Kind,
}

impl Implementation {
    fn other(prefix: &str) -> Implementation {
        let words = prefix.split_whitespace().map(String::from).collect();
        let separate = prefix.ends_with(char::is_whitespace);
        Implementation { label: "other", kind: Kind::Other { words, separate } }
    }

    /// The program and leading arguments that run `tool`.
    fn argv(&self, tool: &str) -> Vec<String> {
        match &self.kind {
            Kind::Ours { bin_dir } => vec![bin_dir.join(tool).display().to_string()],
            Kind::Floor { program } => vec![program.display().to_string()],
            Kind::Other { words, separate: true } => words.iter().cloned().chain([tool.to_string()]).collect(),
            Kind::Other { words, separate: false } => {
                let mut argv = words.clone();
                if let Some(last) = argv.last_mut() {
                    last.push_str(tool);
                }
                argv
            }
        }
    }
}

pub struct Context {
    url: String,
    work: PathBuf,
    out: PathBuf,
    state: PathBuf,
    namespaced: bool,
}

impl Context {
    fn command(&self, imp: &Implementation, tool: &str) -> Command {
        let argv = imp.argv(tool);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).env_clear().current_dir(&self.work);
        for (key, value) in self.environment() {
            cmd.env(key, value);
        }
        cmd
    }

    fn environment(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()),
            ("HOME".into(), std::env::var("HOME").unwrap_or_else(|_| "/root".into())),
            ("LANG".into(), "C.UTF-8".into()),
            ("TZ".into(), "UTC".into()),
            ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
            ("no_proxy".into(), "127.0.0.1,localhost".into()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT".into(), self.url.clone()),
        ];
        for key in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
            env.push((key.into(), self.url.clone()));
        }
        if !self.namespaced {
            for (key, dir) in
                [("CFN_BOOTSTRAP_LOG_DIR", "log"), ("CFN_BOOTSTRAP_LIB_DIR", "lib"), ("CFN_BOOTSTRAP_RUN_DIR", "run")]
            {
                env.push((key.into(), self.state.join(dir).display().to_string()));
            }
        }
        env
    }

    fn out_path(&self, id: &str, imp: &Implementation) -> PathBuf {
        self.out.join(format!("{id}-{}", imp.label))
    }

    /// Where the implementation writes cfn-hup's pid file.
    fn run_dir(&self, imp: &Implementation) -> PathBuf {
        match imp.kind {
            Kind::Ours { .. } if !self.namespaced => self.state.join("run"),
            _ => PathBuf::from("/var/run"),
        }
    }
}

/// As root: a private mount namespace with tmpfs on /var/log, /var/lib and /run.
/// Must run while the process is single-threaded.
fn private_system_dirs() -> Result<bool> {
    // SAFETY: plain syscalls with valid NUL-terminated strings.
    unsafe {
        if libc::geteuid() != 0 {
            return Ok(false);
        }
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            eprintln!(
                "bench: no private mount namespace ({}); using target/bench/state",
                std::io::Error::last_os_error()
            );
            return Ok(false);
        }
        let none = c"none";
        if libc::mount(
            none.as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            bail!("make mounts private: {}", std::io::Error::last_os_error());
        }
        for dir in [c"/var/log", c"/var/lib", c"/run"] {
            if libc::mount(c"tmpfs".as_ptr(), dir.as_ptr(), c"tmpfs".as_ptr(), 0, c"mode=0755".as_ptr().cast()) != 0 {
                bail!("mount tmpfs on {dir:?}: {}", std::io::Error::last_os_error());
            }
        }
    }
    Ok(true)
}

struct Workload {
    id: &'static str,
    title: String,
    tool: &'static str,
    args: Vec<String>,
    runs: usize,
    warmup: usize,
    /// Removed (then the file system synced, then [`SETTLE`]) before every run, outside
    /// the measurement.
    clean: Option<PathBuf>,
    /// The process floor's arguments, for the workloads that have a floor (issue 16);
    /// those also run the glibc build beside the static one.
    floor: Option<Vec<String>>,
    /// The exit codes of a run that did its work (`validate` exits 1 on findings).
    exits: &'static [i32],
}

struct Outcome {
    workload: Workload,
    results: Vec<(&'static str, Result<Summary, String>)>,
}

impl Outcome {
    fn summary(&self, label: &str) -> Option<&Summary> {
        self.results.iter().find(|(l, _)| *l == label).and_then(|(_, r)| r.as_ref().ok())
    }
}

fn clean(dir: &Option<PathBuf>) -> Result<()> {
    if let Some(dir) = dir {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        if let Some(parent) = dir.parent() {
            measure::syncfs(parent)?;
        }
        // Let the journal commit settle, so every run starts from the same state.
        std::thread::sleep(SETTLE);
    }
    Ok(())
}

/// Runs one workload for every implementation, interleaved; `between` runs after each
/// repetition (with `false` after a warm-up), e.g. to interleave the file-system floor.
fn run_workload(
    ctx: &Context,
    w: Workload,
    impls: &[&Implementation],
    between: &mut dyn FnMut(bool) -> Result<()>,
) -> Outcome {
    let mut samples: Vec<Vec<Sample>> = impls.iter().map(|_| Vec::new()).collect();
    let mut errors: Vec<Option<String>> = impls.iter().map(|_| None).collect();
    let mut once = |i: usize| {
        if errors[i].is_some() {
            return None;
        }
        let imp = &impls[i];
        let mut cmd = ctx.command(imp, w.tool);
        match (&imp.kind, &w.floor) {
            (Kind::Floor { .. }, Some(floor)) => cmd.args(floor),
            _ => cmd.args(&w.args),
        };
        let result = clean(&w.clean).and_then(|_| measure::run_exiting(&mut cmd, &ctx.out_path(w.id, imp), w.exits));
        match result {
            Ok(sample) => Some(sample),
            Err(e) => {
                errors[i] = Some(format!("{e:#}"));
                None
            }
        }
    };
    eprint!("bench: {} {} ", w.id, w.title);
    let mut between_error = None;
    let mut between = |keep: bool| {
        if between_error.is_none()
            && let Err(e) = between(keep)
        {
            between_error = Some(format!("{e:#}"));
        }
    };
    for _ in 0..w.warmup {
        for i in 0..impls.len() {
            once(i);
        }
        between(false);
    }
    for rep in 0..w.runs {
        let order: Vec<usize> =
            if rep % 2 == 0 { (0..impls.len()).collect() } else { (0..impls.len()).rev().collect() };
        for i in order {
            if let Some(sample) = once(i) {
                samples[i].push(sample);
            }
        }
        between(true);
        eprint!(".");
    }
    eprintln!();
    if let Some(e) = between_error {
        eprintln!("bench: {}: {e}", w.id);
    }
    let _ = clean(&w.clean);
    let results = impls
        .iter()
        .enumerate()
        .map(|(i, imp)| {
            let result = match &errors[i] {
                Some(e) => Err(e.clone()),
                None => Ok(Summary::of(&samples[i])),
            };
            if let Err(e) = &result {
                eprintln!("bench: {} failed for {}: {e}", w.id, imp.label);
            }
            (imp.label, result)
        })
        .collect();
    Outcome { workload: w, results }
}

/// Workload 1's configuration (also the stack's metadata for workload 4).
fn small_config(dir: &Path) -> Value {
    let d = dir.display();
    json!({"config": {
        "files": {
            format!("{d}/app.conf"): {"content": "listen 8080\nworkers 4\n", "mode": "000644"},
            format!("{d}/settings.json"): {"content": {"name": "bench", "replicas": 3}, "mode": "000640"},
            format!("{d}/index.html"): {
                "content": "<h1>Hello {{name}}</h1><p>{{#items}}{{.}} {{/items}}</p>\n",
                "context": {"name": "World", "items": ["a", "b", "c"]}, "mode": "000644"}
        },
        "commands": {
            "01_echo": {"command": "echo hello"},
            "02_true": {"command": "true"}
        }
    }})
}

/// What workload 1 must do, for the process floor: its files as cfn-init writes them
/// (the Mustache rendered, the JSON serialised as Python does) and its commands.
fn small_config_floor(dir: &Path) -> Vec<String> {
    let files = [
        ("app.conf", "644", "listen 8080\nworkers 4\n"),
        ("settings.json", "640", r#"{"name": "bench", "replicas": 3}"#),
        ("index.html", "644", "<h1>Hello World</h1><p>a b c </p>\n"),
    ];
    process_floor::init_args(dir, &files, &["echo hello", "true"])
}

/// The content of file `{}` in workload 2 (and of the floor program's files).
const FILE_BODY: &str = "file {}: the quick brown fox jumps over the lazy dog; 0123456789abcdef\n";

fn file_body(i: usize) -> String {
    FILE_BODY.replace("{}", &i.to_string())
}

fn many_config(dir: &Path, files: usize, commands: usize) -> Value {
    let mut f = serde_json::Map::new();
    for i in 0..files {
        f.insert(format!("{}/f{i:04}.txt", dir.display()), json!({"content": file_body(i), "mode": "000644"}));
    }
    let mut c = serde_json::Map::new();
    for i in 0..commands {
        c.insert(format!("c{i:03}"), json!({"command": "true"}));
    }
    json!({"config": {"files": f, "commands": c}})
}

fn init_metadata(config: Value) -> Value {
    json!({"AWS::CloudFormation::Init": config})
}

fn create_stack(url: &str, w1_dir: &Path) -> Result<()> {
    let template = json!({
        "Resources": {
            RESOURCE: {
                "Type": "AWS::EC2::Instance",
                "Metadata": init_metadata(small_config(w1_dir)),
                "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}
            }
        }
    });
    let client = cfn_aws::client_with_keys(url, "us-east-1", cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None));
    client.call("CreateStack", &[("StackName", STACK), ("TemplateBody", &template.to_string())], true)?;
    Ok(())
}

fn build(args: &[&str]) -> Result<()> {
    eprintln!("bench: cargo {}", args.join(" "));
    let status = cargo().current_dir(workspace()).args(args).status()?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}

fn musl_installed() -> bool {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().ok();
    sysroot.is_some_and(|o| {
        Path::new(String::from_utf8_lossy(&o.stdout).trim()).join("lib/rustlib/x86_64-unknown-linux-musl").is_dir()
    })
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub fn run(args: &[String]) -> Result<ExitCode> {
    let options = parse(args)?;
    // First, while single-threaded.
    let namespaced = private_system_dirs()?;
    let root = workspace();
    let bench = root.join(if options.hup_minutes.is_some() { "target/bench-hup" } else { "target/bench" });
    let ctx_dirs = ["bin", "work", "out", "state/log", "state/lib", "state/run"];
    let _ = std::fs::remove_dir_all(bench.join("work"));
    let _ = std::fs::remove_dir_all(bench.join("state"));
    for dir in ctx_dirs {
        std::fs::create_dir_all(bench.join(dir))?;
    }
    let load_before = load_average();

    build(&["build", "--release", "--bin", "cfn-bootstrap"])?;
    let release = crate::dist::target_dir().join("release/cfn-bootstrap");
    let musl = if options.quick {
        None
    } else if musl_installed() {
        build(&["build", "--release", "--bin", "cfn-bootstrap", "--target", "x86_64-unknown-linux-musl"])?;
        Some(crate::dist::target_dir().join("x86_64-unknown-linux-musl/release/cfn-bootstrap"))
    } else {
        None
    };
    // The workloads run the binary that ships: the static musl build when it exists
    // (it also starts faster, with no dynamic loader), else the glibc release build.
    let measured = musl.clone().unwrap_or_else(|| release.clone());
    eprintln!("bench: measuring {}", measured.display());
    for tool in TOOLS {
        let link = bench.join("bin").join(tool);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&measured, &link)?;
    }
    // `cfn-bootstrap` itself, for its own subcommands.
    let link = bench.join("bin/cfn-bootstrap");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&measured, &link)?;
    let mut impls = vec![Implementation { label: "ours", kind: Kind::Ours { bin_dir: bench.join("bin") } }];
    // Beside the floor (issue 16), the glibc build runs too when the static one is "ours".
    let mut floor_impls = Vec::new();
    if musl.is_some() {
        let glibc_bin = bench.join("bin-glibc");
        std::fs::create_dir_all(&glibc_bin)?;
        for tool in TOOLS {
            let link = glibc_bin.join(tool);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&release, &link)?;
        }
        floor_impls.push(Implementation { label: "glibc", kind: Kind::Ours { bin_dir: glibc_bin } });
    }
    let floor_target = musl.as_ref().map(|_| "x86_64-unknown-linux-musl");
    let floor_program = process_floor::compile(&bench, FILE_BODY, floor_target)?;
    floor_impls.push(Implementation { label: "floor", kind: Kind::Floor { program: floor_program } });
    if let Some(prefix) = &options.vs {
        impls.push(Implementation::other(prefix));
        if !namespaced {
            eprintln!("bench: warning: not root, so the other implementation writes to the real /var/log and /var/lib");
        }
    }

    // Let the builds' writes reach the disk before anything is timed.
    measure::syncfs(&bench)?;
    std::thread::sleep(Duration::from_secs(2));

    let python = emulator::python()?;
    let mut emulator_args = emulator::test_arguments();
    emulator_args.push("--accept-all-signals".into());
    let emulator = Emulator::start(&python, &emulator_args)?;
    eprintln!("bench: emulator at {}", emulator.url);
    let ctx = Context {
        url: emulator.url.clone(),
        work: bench.join("work"),
        out: bench.join("out"),
        state: bench.join("state"),
        namespaced,
    };

    // Inputs.
    let w1_dir = ctx.work.join("w1");
    let w2_dir = ctx.work.join("w2");
    create_stack(&ctx.url, &w1_dir)?;
    let write_json = |name: &str, value: Value| -> Result<String> {
        let path = ctx.work.join(name);
        std::fs::write(&path, serde_json::to_string_pretty(&value)?)?;
        Ok(path.display().to_string())
    };
    let w1_file = write_json("w1.json", init_metadata(small_config(&w1_dir)))?;
    let w2_base = write_json("w2-base.json", init_metadata(json!({"config": {}})))?;
    let w2a_file = write_json("w2a.json", init_metadata(many_config(&w2_dir, 200, 50)))?;
    let w2b_file = write_json("w2b.json", init_metadata(many_config(&w2_dir, 1000, 0)))?;
    let w2c_file = write_json("w2c.json", init_metadata(many_config(&w2_dir, 0, 50)))?;
    let seed_template = write_json(
        "seed-template.json",
        crate::demo::scenario::template(crate::demo::scenario::FIRST_PAGE, crate::instance::Init::Shell),
    )?;

    let n = options.runs;
    let heavy = (n / 4).max(if options.quick { 2 } else { 3 });
    let warmup = if options.quick { 1 } else { 2 };
    let keys: Vec<String> =
        ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY].iter().map(|s| s.to_string()).collect();
    let api = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["-s", STACK, "-r", RESOURCE, "--region", "us-east-1", "--url", &ctx.url]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let with_keys = |mut args: Vec<String>| {
        args.extend(keys.iter().cloned());
        args
    };
    let mut workloads = vec![
        Workload {
            id: "1",
            title: "cfn-init FILE: 3 files (1 Mustache), 2 commands".into(),
            tool: "cfn-init",
            args: vec![w1_file.clone()],
            runs: n,
            warmup,
            clean: Some(w1_dir.clone()),
            floor: Some(small_config_floor(&w1_dir)),
            exits: &[0],
        },
        Workload {
            id: "2-base",
            title: "cfn-init FILE: empty config (baseline)".into(),
            tool: "cfn-init",
            args: vec![w2_base],
            runs: n,
            warmup,
            clean: None,
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "2a",
            title: "cfn-init FILE: 200 files + 50 commands".into(),
            tool: "cfn-init",
            args: vec![w2a_file],
            runs: heavy,
            warmup: 1,
            clean: Some(w2_dir.clone()),
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "2b",
            title: "cfn-init FILE: 1,000 files".into(),
            tool: "cfn-init",
            args: vec![w2b_file],
            runs: heavy,
            warmup: 1,
            clean: Some(w2_dir.clone()),
            floor: Some(vec!["files".into(), w2_dir.display().to_string(), "1000".into()]),
            exits: &[0],
        },
        Workload {
            id: "2c",
            title: "cfn-init FILE: 50 commands".into(),
            tool: "cfn-init",
            args: vec![w2c_file],
            runs: heavy,
            warmup: 1,
            clean: None,
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "3a",
            title: "cfn-get-metadata, access keys".into(),
            tool: "cfn-get-metadata",
            args: with_keys(api(&[])),
            runs: n,
            warmup,
            clean: None,
            floor: Some(process_floor::describe_args(&ctx.url, STACK, RESOURCE, (ACCESS_KEY, SECRET_KEY))?),
            exits: &[0],
        },
        Workload {
            id: "3b",
            title: "cfn-get-metadata, instance identity".into(),
            tool: "cfn-get-metadata",
            args: api(&[]),
            runs: n,
            warmup,
            clean: None,
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "4",
            title: "cfn-init -s -r (workload 1's config), access keys".into(),
            tool: "cfn-init",
            args: with_keys(api(&[])),
            runs: n,
            warmup,
            clean: Some(w1_dir.clone()),
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "5",
            title: "cfn-signal -e 0 --stack --resource, access keys".into(),
            tool: "cfn-signal",
            args: with_keys(vec![
                "-e".into(),
                "0".into(),
                "--stack".into(),
                STACK.into(),
                "--resource".into(),
                RESOURCE.into(),
                "--region".into(),
                "us-east-1".into(),
                "--url".into(),
                ctx.url.clone(),
            ]),
            runs: n,
            warmup,
            clean: None,
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "render",
            title: "cfn-bootstrap render -t (the seed template) -r".into(),
            tool: "cfn-bootstrap",
            args: vec![
                "render".into(),
                "-t".into(),
                seed_template,
                "-r".into(),
                crate::demo::scenario::RESOURCE.into(),
            ],
            runs: n,
            warmup,
            clean: None,
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "validate",
            title: "cfn-bootstrap validate FILE: the seed metadata".into(),
            tool: "cfn-bootstrap",
            args: ["validate", "-c", "create,update", &root.join(SEED_METADATA).display().to_string()]
                .map(String::from)
                .into(),
            runs: n,
            warmup,
            clean: None,
            floor: None,
            exits: &[0],
        },
        Workload {
            id: "validate-template",
            title: "cfn-bootstrap validate -t: 10 resources with Init, no parameter values".into(),
            tool: "cfn-bootstrap",
            args: ["validate", "-t", &root.join(LARGE_TEMPLATE).display().to_string()].map(String::from).into(),
            runs: n,
            warmup,
            clean: None,
            floor: None,
            exits: &[0],
        },
    ];
    let corpus = cfn_lint::corpus()?;
    workloads.push(Workload {
        id: "validate-corpus",
        title: format!("cfn-bootstrap validate -t: the {} real templates of tests/corpus in one process", corpus.len()),
        tool: "cfn-bootstrap",
        args: ["validate", "-t"]
            .into_iter()
            .map(String::from)
            .chain(corpus.iter().map(|f| f.display().to_string()))
            .collect(),
        runs: n,
        warmup,
        clean: None,
        floor: None,
        // Reviewed true errors in some of them (tests/corpus/expected.tsv) exit 1.
        exits: &[0, 1],
    });
    let hostile_dir = ctx.work.join("hostile");
    std::fs::create_dir_all(&hostile_dir)?;
    for h in hostile::all() {
        let path = hostile_dir.join(format!("{}.json", h.id));
        std::fs::write(&path, &h.text)?;
        workloads.push(Workload {
            id: h.id,
            title: format!("validate -t, {} bytes: {}", h.text.len(), h.title),
            tool: "cfn-bootstrap",
            args: vec!["validate".into(), "-t".into(), path.display().to_string()],
            // Each takes what an ordinary template of its size takes: a few runs show it.
            runs: n.min(5),
            warmup: 1,
            clean: None,
            floor: None,
            // Findings (F3's unknown configSets, F13's missing resources) exit 1.
            exits: &[0, 1],
        });
    }
    workloads.retain(|w| options.runs_workload(w.id));
    let floor_program = floor::compile(&bench, FILE_BODY)?;
    let mut floor_samples = floor::Samples::new(&floor_program, &ctx.work.join("floor"), &ctx.out.join("floor"), 1000);
    let mut outcomes = Vec::new();
    for w in workloads {
        // The floor is measured between the repetitions of workload 2b.
        let with_floor = w.id == "2b";
        let mut between = |keep: bool| if with_floor { floor_samples.batch(keep) } else { Ok(()) };
        // Ours first, then the glibc build and the floor where the workload has one.
        let mut these: Vec<&Implementation> = impls.iter().take(1).collect();
        if w.floor.is_some() {
            these.extend(floor_impls.iter());
        }
        // The other implementations have no `cfn-bootstrap` subcommands.
        if w.tool != "cfn-bootstrap" {
            these.extend(impls.iter().skip(1));
        }
        outcomes.push(run_workload(&ctx, w, &these, &mut between));
    }
    let floor = floor_samples.finish();

    let hup_settings = hup::Settings {
        polls: if options.quick { 5 } else { 20 },
        idle_window: Duration::from_secs(if options.quick { 6 } else { 20 }),
        polls_for: options.hup_minutes.map(|m| Duration::from_secs(m * 60)),
    };
    let mut hup_results = Vec::new();
    for imp in impls.iter().filter(|_| options.runs_workload("6")) {
        eprintln!("bench: 6 cfn-hup daemon ({})", imp.label);
        hup_results.push((imp.label, hup::measure(&ctx, imp, &hup_settings)));
    }
    let lifecycle_settings = lifecycle::Settings {
        idle_window: Duration::from_secs(if options.quick { 20 } else { 60 }),
        // A run takes about a second; a termination restarts the daemon.
        spot_runs: n,
        terminate_runs: (n / 4).max(3),
    };
    let lifecycle_results = json!({
        "idle": options.runs_workload("6-lifecycle").then(|| {
            eprintln!("bench: 6-lifecycle cfn-hup idle, without and with lifecycle hooks (ours)");
            lifecycle::idle_measure(&ctx, &impls[0], &lifecycle_settings)
        }),
        "latency": options.runs_workload("lifecycle-latency").then(|| {
            eprintln!("bench: lifecycle-latency, metadata change to action start (ours)");
            lifecycle::latency(&ctx, &impls[0], &lifecycle_settings)
        }),
    });
    drop(emulator);
    // cfn-lint on the same files, beside `validate-corpus` (a few runs: seconds each).
    let cfn_lint = options.runs_workload("validate-corpus").then(|| {
        eprintln!("bench: validate-corpus, cfn-lint on the same templates");
        cfn_lint::measure(&ctx.out, &corpus, n.min(3))
    });

    let ours_footprint = footprint::ours(&release, musl.as_deref(), &bench);
    let other_footprint = impls.get(1).map(|imp| {
        let paths: Vec<PathBuf> = TOOLS
            .iter()
            .map(|t| imp.argv(t))
            .flat_map(|argv| argv.into_iter().filter(|w| w.starts_with('/')).map(PathBuf::from))
            .collect();
        footprint::other(&paths).unwrap_or_else(|e| json!({"error": format!("{e:#}")}))
    });

    let report = Report {
        options: &options,
        outcomes: &outcomes,
        floor: &floor,
        hup: &hup_results,
        lifecycle: &lifecycle_results,
    };
    let derived = report.derived();
    let footprint = json!({"ours": ours_footprint, "other": other_footprint});
    let targets = report.targets(&derived, &footprint);
    let text = report.table(&derived, &footprint, &targets);
    println!("{text}");
    if let Some(lint) = &cfn_lint {
        let ours = report.median("validate-corpus", impls[0].label, |s| s.wall.median);
        let ours_rss = report.median("validate-corpus", impls[0].label, |s| s.rss_kib.median);
        let theirs = lint["summary"]["wall_ms"]["median"].as_f64().unwrap_or(f64::NAN);
        let theirs_rss = lint["summary"]["maxrss_kib"]["median"].as_f64().unwrap_or(f64::NAN);
        println!(
            "validate-corpus: ours {ours:.1} ms wall, {:.1} MiB peak; {} on the same {} templates {theirs:.0} ms, \
             {:.1} MiB ({:.0}x the time)",
            ours_rss / 1024.0,
            lint["version"].as_str().unwrap_or("?"),
            lint["files"],
            theirs_rss / 1024.0,
            theirs / ours
        );
    }
    let load_after = load_average();
    println!("load average before/after: {load_before} / {load_after} (2 cores; other work on the machine adds noise)");

    let json = json!({
        "version": 1,
        "command": std::iter::once("cargo xtask bench".to_string()).chain(args.iter().cloned()).collect::<Vec<_>>().join(" "),
        "host": {
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
            "root": namespaced,
            "private_mount_namespace": namespaced,
            "load_average_before": load_before,
            "load_average_after": load_after,
        },
        "options": {"runs": options.runs, "heavy_runs": heavy, "warmup": warmup, "quick": options.quick,
                    "hup_minutes": options.hup_minutes, "only": options.only,
                    "vs": options.vs, "vs_convention": "PREFIX split on whitespace; the tool name is appended to the \
                    last word, or is a separate argument when PREFIX ends with whitespace"},
        "implementations": impls.iter().map(|imp| json!({"label": imp.label, "cfn_init_argv": imp.argv("cfn-init")})).collect::<Vec<_>>(),
        "workloads": outcomes.iter().map(|o| report.workload_json(o)).collect::<Vec<_>>(),
        "derived": derived,
        "floor": floor.json(),
        "hup": hup_results.iter().map(|(l, v)| (l.to_string(), v.clone())).collect::<serde_json::Map<_, _>>(),
        "lifecycle": lifecycle_results,
        "cfn_lint": cfn_lint,
        "footprint": footprint,
        "targets": targets,
    });
    let path = bench.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&json)? + "\n")?;
    println!("report: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

struct Report<'a> {
    options: &'a Options,
    outcomes: &'a [Outcome],
    floor: &'a floor::Floor,
    hup: &'a [(&'static str, Value)],
    lifecycle: &'a Value,
}

/// theirs / ours; infinite when ours measured 0, NaN when either is missing.
fn ratio(theirs: f64, ours: f64) -> f64 {
    if theirs.is_nan() || ours.is_nan() {
        f64::NAN
    } else if ours > 0.0 {
        theirs / ours
    } else {
        f64::INFINITY
    }
}

fn fmt_num(x: f64) -> String {
    if x.is_infinite() {
        "inf".into()
    } else if x.is_nan() {
        "-".into()
    } else if x.abs() < 1.0 {
        format!("{x:.3}")
    } else if x.abs() < 10.0 {
        format!("{x:.2}")
    } else if x.abs() < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn fmt_ratio(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else if x.is_infinite() {
        "inf".into()
    } else if x >= 1.0 {
        format!("{}x", fmt_num(x))
    } else {
        format!("1/{}", fmt_num(1.0 / x))
    }
}

impl Report<'_> {
    fn outcome(&self, id: &str) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.workload.id == id)
    }

    fn median(&self, id: &str, label: &str, pick: fn(&Summary) -> f64) -> f64 {
        self.outcome(id).and_then(|o| o.summary(label)).map_or(f64::NAN, pick)
    }

    fn workload_json(&self, o: &Outcome) -> Value {
        let mut results = serde_json::Map::new();
        for (label, result) in &o.results {
            results.insert(
                label.to_string(),
                match result {
                    Ok(s) => s.json(o.workload.warmup),
                    Err(e) => json!({"error": e}),
                },
            );
        }
        let ratios = match (o.summary("ours"), o.summary("other")) {
            (Some(a), Some(b)) => json!({
                "wall": r3(ratio(b.wall.median, a.wall.median)),
                "cpu": r3(ratio(b.cpu.median, a.cpu.median)),
                "maxrss": r3(ratio(b.rss_kib.median, a.rss_kib.median)),
            }),
            _ => Value::Null,
        };
        let mut over_floor = serde_json::Map::new();
        for label in ["ours", "glibc"] {
            if let (Some(a), Some(f)) = (o.summary(label), o.summary("floor")) {
                over_floor.insert(
                    label.into(),
                    json!({"wall": r3(a.wall.median / f.wall.median), "cpu": r3(a.cpu.median / f.cpu.median)}),
                );
            }
        }
        json!({"id": o.workload.id, "title": o.workload.title, "tool": o.workload.tool, "args": o.workload.args,
               "floor_args": o.workload.floor, "results": results, "ratios_other_over_ours": ratios,
               "ratios_over_floor": over_floor})
    }

    /// Per-file and per-command costs (from the differences to the empty config) and the
    /// file-system floor.
    fn derived(&self) -> Value {
        let floor_syncfs = self.floor.per_file_wall(floor::Sync::SyncfsPerBatch);
        let mut out = serde_json::Map::new();
        for label in ["ours", "other"] {
            let wall = |id| self.median(id, label, |s| s.wall.median);
            let cpu = |id| self.median(id, label, |s| s.cpu.median);
            let (base_w, b_w, c_w) = (wall("2-base"), wall("2b"), wall("2c"));
            if !base_w.is_finite() || !b_w.is_finite() {
                continue;
            }
            let (base_c, b_c, c_c) = (cpu("2-base"), cpu("2b"), cpu("2c"));
            let file_w = (b_w - base_w) / 1000.0;
            let file_c = (b_c - base_c) / 1000.0;
            let cmd_w = (c_w - base_w) / 50.0;
            let cmd_c = (c_c - base_c) / 50.0;
            out.insert(
                label.into(),
                json!({
                    "per_file_wall_ms": r3(file_w), "per_file_cpu_ms": r3(file_c),
                    "per_command_wall_ms": r3(cmd_w), "per_command_cpu_ms": r3(cmd_c),
                    "per_file_over_floor": r3(file_w / floor_syncfs),
                    "method": "per file = (2b - 2-base) / 1000; per command = (2c - 2-base) / 50; medians",
                }),
            );
        }
        Value::Object(out)
    }

    fn targets(&self, derived: &Value, footprint: &Value) -> Vec<Value> {
        let vs = self.options.vs.is_some();
        let mut targets = Vec::new();
        // Ratios need the other implementation; the floor and the size do not.
        let mut check = |id: &str, description: &str, want: &str, value: f64, pass: bool| {
            let needs_vs = !matches!(
                id,
                "w2-floor"
                    | "w6-flat"
                    | "w7-size"
                    | "render-wall"
                    | "validate-wall"
                    | "validate-template-wall"
                    | "lifecycle-latency"
            ) && !id.starts_with("floor-")
                && !id.starts_with("hostile-");
            let status = match (!value.is_nan(), pass) {
                (false, _) if needs_vs && !vs => "n/a (needs --vs)",
                (false, _) => "n/a",
                (true, true) => "PASS",
                (true, false) => "FAIL",
            };
            targets.push(
                json!({"id": id, "description": description, "want": want, "value": if value.is_infinite() { json!("inf") } else { r3(value) }, "status": status}),
            );
        };
        let w = |id, f: fn(&Summary) -> f64| ratio(self.median(id, "other", f), self.median(id, "ours", f));
        let wall1 = w("1", |s| s.wall.median);
        check("w1-wall", "workload 1: wall time, other / ours", ">= 30x", wall1, wall1 >= 30.0);
        let cpu1 = w("1", |s| s.cpu.median);
        check("w1-cpu", "workload 1: CPU time, other / ours", ">= 40x", cpu1, cpu1 >= 40.0);
        let rss1 = w("1", |s| s.rss_kib.median);
        check("w1-rss", "workload 1: peak RSS, other / ours", ">= 5x", rss1, rss1 >= 5.0);
        let over = derived["ours"]["per_file_over_floor"].as_f64().unwrap_or(f64::NAN);
        check("w2-floor", "workload 2: per-file wall time / file-system floor", "<= 2x", over, over <= 2.0);
        let cpu3a = w("3a", |s| s.cpu.median);
        check("w3-cpu-keys", "workload 3 (keys): CPU time, other / ours", ">= 20x", cpu3a, cpu3a >= 20.0);
        let cpu3b = w("3b", |s| s.cpu.median);
        check("w3-cpu-identity", "workload 3 (identity): CPU time, other / ours", ">= 20x", cpu3b, cpu3b >= 20.0);
        // Issue 16: each tool build against the process floor, medians of the same run.
        for (id, what) in [("1", "workload 1"), ("2b", "workload 2b"), ("3a", "workload 3a")] {
            for label in ["ours", "glibc"] {
                let over = |f: fn(&Summary) -> f64| self.median(id, label, f) / self.median(id, "floor", f);
                let build = if label == "ours" { "shipped" } else { "glibc" };
                let wall = over(|s| s.wall.median);
                check(
                    &format!("floor-{id}-wall-{label}"),
                    &format!("{what}: wall, {build} / floor"),
                    "<= 1.1x",
                    wall,
                    wall <= 1.1,
                );
                let cpu = over(|s| s.cpu.median);
                check(
                    &format!("floor-{id}-cpu-{label}"),
                    &format!("{what}: CPU, {build} / floor"),
                    "<= 1.2x",
                    cpu,
                    cpu <= 1.2,
                );
            }
        }
        let hup = |label: &str, phase: &str, key: &str| {
            self.hup.iter().find(|(l, _)| *l == label).and_then(|(_, v)| v[phase][key].as_f64()).unwrap_or(f64::NAN)
        };
        let hup_rss = ratio(hup("other", "idle", "rss_kib"), hup("ours", "idle", "rss_kib"));
        check("w6-rss", "cfn-hup: resident memory, other / ours", ">= 5x", hup_rss, hup_rss >= 5.0);
        let hup_cpu =
            ratio(hup("other", "idle", "cpu_ms_per_idle_minute"), hup("ours", "idle", "cpu_ms_per_idle_minute"));
        check("w6-cpu", "cfn-hup: CPU per idle minute, other / ours", ">= 50x", hup_cpu, hup_cpu >= 50.0);
        let growth =
            hup("ours", "polls", "rss_kib_after_last_poll") / hup("ours", "polls", "rss_kib_after_middle_poll");
        check("w6-flat", "cfn-hup (ours): RSS after the last poll / the middle one", "<= 1.02", growth, growth <= 1.02);
        let latency = &self.lifecycle["latency"];
        let worst = ["spot", "terminate"]
            .iter()
            .map(|k| latency[k]["max_ms"].as_f64().unwrap_or(f64::NAN))
            .fold(f64::NAN, f64::max);
        let limit = lifecycle::INTERVAL_S * 1000.0 + 100.0;
        check(
            "lifecycle-latency",
            "cfn-hup: metadata change to lifecycle action start, worst, ms",
            &format!("<= {limit} ms"),
            worst,
            worst <= limit,
        );
        let render = self.median("render", "ours", |s| s.wall.median);
        check(
            "render-wall",
            "cfn-bootstrap render of the seed template: wall time, ms",
            "< 5 ms",
            render,
            render < 5.0,
        );
        let validate = self.median("validate", "ours", |s| s.wall.median);
        check(
            "validate-wall",
            "cfn-bootstrap validate of the seed metadata: wall, ms",
            "< 5 ms",
            validate,
            validate < 5.0,
        );
        let large = self.median("validate-template", "ours", |s| s.wall.median);
        check(
            "validate-template-wall",
            "cfn-bootstrap validate -t of a 1,100-line template, 10 resources with Init: wall, ms",
            "< 20 ms",
            large,
            large < 20.0,
        );
        for h in hostile::all() {
            let wall = self.median(h.id, "ours", |s| s.wall.median);
            let id = format!("{}-wall", h.id);
            check(&id, &format!("validate -t of the {} template: wall, ms", h.id), "< 1000 ms", wall, wall < 1000.0);
        }
        let bytes =
            footprint["ours"]["musl"]["bytes"].as_f64().or_else(|| footprint["ours"]["release"]["bytes"].as_f64());
        let mib = bytes.map_or(f64::NAN, |b| b / MIB);
        check("w7-size", "one static binary, MiB", "< 10 MiB", mib, mib < 10.0);
        targets
    }

    /// The lifecycle workloads' lines (6-lifecycle, lifecycle-latency), when they ran.
    fn lifecycle_table(&self, t: &mut String) {
        use std::fmt::Write as _;
        let idle = &self.lifecycle["idle"];
        if !idle.is_null() {
            let _ = writeln!(t, "\n6-lifecycle cfn-hup idle, without and with lifecycle hooks (ours)");
            if let Some(e) = idle["error"].as_str() {
                let _ = writeln!(t, "  ERROR {e}");
            }
            for (key, what) in [
                ("without_lifecycle_hooks", "without lifecycle hooks"),
                ("with_lifecycle_hooks", "with 5 lifecycle hooks (4 items polled every 5 s)"),
            ] {
                let v = &idle[key];
                if let Some(e) = v["error"].as_str() {
                    let _ = writeln!(t, "  {what}: ERROR {e}");
                    continue;
                }
                let n = |k: &str| fmt_num(v[k].as_f64().unwrap_or(f64::NAN));
                let _ = writeln!(
                    t,
                    "  {what:<50} {} ms CPU per idle minute ({} s window), RSS {} KiB (peak {} KiB)",
                    n("cpu_ms_per_idle_minute"),
                    n("window_s"),
                    n("rss_kib"),
                    n("hwm_kib")
                );
            }
        }
        let latency = &self.lifecycle["latency"];
        if !latency.is_null() {
            let _ = writeln!(
                t,
                "\nlifecycle-latency metadata change to action start, lifecycle-interval={} s (ours)",
                latency["lifecycle_interval_s"]
            );
            for (key, what) in
                [("spot", "Spot notice (POST /_emu/imds)"), ("terminate", "termination (+ 2 Auto Scaling calls)")]
            {
                let v = &latency[key];
                if let Some(e) = v["error"].as_str() {
                    let _ = writeln!(t, "  {what}: ERROR {e}");
                    continue;
                }
                let runs: Vec<String> = v["latency_ms"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|l| format!("{:.0}", l.as_f64().unwrap_or(f64::NAN)))
                    .collect();
                let _ = writeln!(
                    t,
                    "  {what:<40} median {} ms, max {} ms over {} runs [{}]",
                    fmt_num(v["median_ms"].as_f64().unwrap_or(f64::NAN)),
                    fmt_num(v["max_ms"].as_f64().unwrap_or(f64::NAN)),
                    v["runs"],
                    runs.join(", ")
                );
            }
        }
    }

    fn table(&self, derived: &Value, footprint: &Value, targets: &[Value]) -> String {
        use std::fmt::Write;
        let mut t = String::new();
        let vs = self.options.vs.is_some();
        let _ = writeln!(t, "\ncfn-bootstrap benchmarks: median [p10-p90]; wall and CPU in ms, peak RSS in MiB");
        let _ = writeln!(
            t,
            "{:<52} {:<6} {:>5}  {:<22} {:<22} {:<16}",
            "workload", "impl", "runs", "wall ms", "cpu ms", "max RSS MiB"
        );
        let spread = |s: &measure::Stats, scale: f64| {
            format!("{} [{}-{}]", fmt_num(s.median / scale), fmt_num(s.p10 / scale), fmt_num(s.p90 / scale))
        };
        for o in self.outcomes {
            let mut first = true;
            for (label, result) in &o.results {
                let name = if first { format!("{} {}", o.workload.id, o.workload.title) } else { String::new() };
                first = false;
                match result {
                    Ok(s) => {
                        let _ = writeln!(
                            t,
                            "{:<52} {:<6} {:>5}  {:<22} {:<22} {:<16}",
                            name,
                            label,
                            s.runs,
                            spread(&s.wall, 1.0),
                            spread(&s.cpu, 1.0),
                            spread(&s.rss_kib, 1024.0)
                        );
                    }
                    Err(e) => {
                        let _ = writeln!(t, "{name:<52} {label:<6} ERROR: {e}");
                    }
                }
            }
            for label in ["ours", "glibc"] {
                if let (Some(a), Some(f)) = (o.summary(label), o.summary("floor")) {
                    let _ = writeln!(
                        t,
                        "{:<52} {:<6} {:>5}  {:<22} {:<22}",
                        "",
                        if label == "ours" { "/floor" } else { "g/flr" },
                        "",
                        format!("{}x", fmt_num(a.wall.median / f.wall.median)),
                        format!("{}x", fmt_num(a.cpu.median / f.cpu.median)),
                    );
                }
            }
            if let (Some(a), Some(b)) = (o.summary("ours"), o.summary("other")) {
                let _ = writeln!(
                    t,
                    "{:<52} {:<6} {:>5}  {:<22} {:<22} {:<16}",
                    "",
                    "ratio",
                    "",
                    fmt_ratio(ratio(b.wall.median, a.wall.median)),
                    fmt_ratio(ratio(b.cpu.median, a.cpu.median)),
                    fmt_ratio(ratio(b.rss_kib.median, a.rss_kib.median))
                );
            }
        }

        let _ =
            writeln!(t, "\nworkload 2, derived (medians; per file = (2b - base)/1000, per command = (2c - base)/50)");
        for label in ["ours", "other"] {
            let d = &derived[label];
            if d.is_null() {
                continue;
            }
            let f = |k: &str| fmt_num(d[k].as_f64().unwrap_or(f64::NAN));
            let _ = writeln!(
                t,
                "  {label:<6} per file {} ms wall, {} ms CPU; per command {} ms wall, {} ms CPU; per file / floor {}",
                f("per_file_wall_ms"),
                f("per_file_cpu_ms"),
                f("per_command_wall_ms"),
                f("per_command_cpu_ms"),
                fmt_ratio(d["per_file_over_floor"].as_f64().unwrap_or(f64::NAN))
            );
        }
        let _ = writeln!(
            t,
            "  file-system floor, {} files the way cfn-init writes them, per file ({} batches):",
            self.floor.files, self.floor.reps
        );
        for (sync, wall, cpu) in &self.floor.results {
            let _ = writeln!(
                t,
                "    {:<17} {} ms wall [{}-{}], {} ms CPU",
                sync.key(),
                fmt_num(wall.median),
                fmt_num(wall.p10),
                fmt_num(wall.p90),
                fmt_num(cpu.median)
            );
        }

        let _ = writeln!(t, "\n6 cfn-hup daemon");
        for (label, v) in self.hup {
            if v["available"] == json!(false) {
                let _ = writeln!(t, "  {label:<6} cfn-hup not available: {}", v["reason"].as_str().unwrap_or("?"));
                continue;
            }
            let n = |phase: &str, k: &str| fmt_num(v[phase][k].as_f64().unwrap_or(f64::NAN));
            let one = &v["no_daemon_one_pass"];
            let _ = writeln!(
                t,
                "  {label:<6} --no-daemon one pass: {} ms wall, {} ms CPU, {} MiB peak",
                fmt_num(one["wall_ms"].as_f64().unwrap_or(f64::NAN)),
                fmt_num(one["cpu_ms"].as_f64().unwrap_or(f64::NAN)),
                fmt_num(one["maxrss_kib"].as_f64().unwrap_or(f64::NAN) / 1024.0)
            );
            if let Some(e) = v["idle"]["error"].as_str() {
                let _ = writeln!(t, "         idle: ERROR {e}");
            } else {
                let _ = writeln!(
                    t,
                    "         idle ({} s after the first poll): {} ms CPU per idle minute, RSS {} KiB (peak {} KiB)",
                    n("idle", "window_s"),
                    n("idle", "cpu_ms_per_idle_minute"),
                    n("idle", "rss_kib"),
                    n("idle", "hwm_kib")
                );
            }
            if let Some(e) = v["polls"]["error"].as_str() {
                let _ = writeln!(t, "         polls: ERROR {e}");
            } else {
                let _ = writeln!(
                    t,
                    "         {} polls at 1 s: {} ms CPU per poll, RSS {} KiB after the first, {} after the middle, {} after the last{}",
                    v["polls"]["polls"],
                    n("polls", "cpu_ms_per_poll"),
                    n("polls", "rss_kib_after_first_poll"),
                    n("polls", "rss_kib_after_middle_poll"),
                    n("polls", "rss_kib_after_last_poll"),
                    v["polls"]["note"].as_str().map(|s| format!(" ({s})")).unwrap_or_default()
                );
                let minutes = v["polls"]["rss_kib_by_minute"].as_array().map_or(&[][..], Vec::as_slice);
                if minutes.len() > 2 {
                    // Every tenth minute (and the last) of a long run.
                    let shown: Vec<String> = minutes
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| i % 10 == 0 || *i == minutes.len() - 1)
                        .map(|(_, m)| format!("{} min {} KiB", m[0], fmt_num(m[1].as_f64().unwrap_or(f64::NAN))))
                        .collect();
                    let _ = writeln!(
                        t,
                        "         RSS over {} s: {}; highest {} KiB",
                        n("polls", "seconds"),
                        shown.join(", "),
                        n("polls", "rss_kib_max")
                    );
                }
            }
        }

        self.lifecycle_table(&mut t);

        let _ = writeln!(t, "\n7 footprint");
        let ours = &footprint["ours"];
        let mib = |v: &Value| {
            v.as_f64().map_or("-".to_string(), |b| {
                if b < 1024.0 * 100.0 { format!("{:.1} KiB", b / 1024.0) } else { format!("{:.2} MiB", b / MIB) }
            })
        };
        let _ = writeln!(
            t,
            "  ours   release {} (profile strip=true; `strip` again: {}), static: {}",
            mib(&ours["release"]["bytes"]),
            mib(&ours["release_stripped_bytes"]),
            ours["release"]["static"]
        );
        if !ours["musl"].is_null() {
            let _ = writeln!(t, "         musl    {}, static: {}", mib(&ours["musl"]["bytes"]), ours["musl"]["static"]);
        }
        let other = &footprint["other"];
        if !other.is_null() {
            let _ = writeln!(t, "  other  {} installed:", mib(&other["bytes"]));
            for part in other["parts"].as_array().into_iter().flatten() {
                let _ = writeln!(t, "           {:>12}  {}", mib(&part["bytes"]), part["path"].as_str().unwrap_or(""));
            }
        }

        let _ = writeln!(t, "\ntargets (issues 8 and 16){}", if vs { "" } else { "; ratios to the other need --vs" });
        for target in targets {
            let _ = writeln!(
                t,
                "  {:<16} {:<62} want {:<9} got {}",
                target["status"].as_str().unwrap_or(""),
                target["description"].as_str().unwrap_or(""),
                target["want"].as_str().unwrap_or(""),
                target["value"].as_f64().map_or_else(|| target["value"].as_str().unwrap_or("-").to_string(), fmt_num),
            );
        }
        t
    }
}
