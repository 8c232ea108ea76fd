//! The black-box test harness: runs the real binary through `cfn-*` links in a private
//! sandbox directory, talks to the AWS emulator, and prints everything a failure needs
//! to be understood (command, exit code, stdout, stderr, logs).
#![allow(dead_code)]

pub mod debian_root;
pub mod reference_lines;
pub mod systemd_root;
pub mod terminal;
pub mod waiting;

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ACCESS_KEY: &str = "AKIDTESTKEY";
pub const SECRET_KEY: &str = "test/secret/key";

pub const TOOLS: &[&str] = &[
    "cfn-init",
    "cfn-signal",
    "cfn-hup",
    "cfn-get-metadata",
    "cfn-elect-cmd-leader",
    "cfn-send-cmd-result",
    "cfn-send-cmd-event",
];

/// The manual pages of `cfn-bootstrap` and its own subcommands (the tools' pages are
/// named after them).
pub const BOOTSTRAP_PAGES: &[&str] = &[
    "cfn-bootstrap",
    "cfn-bootstrap-help",
    "cfn-bootstrap-completions",
    "cfn-bootstrap-man",
    "cfn-bootstrap-doctor",
    "cfn-bootstrap-lifecycle",
    "cfn-bootstrap-plan",
    "cfn-bootstrap-render",
    "cfn-bootstrap-status",
    "cfn-bootstrap-validate",
];

/// The binary under test: cargo's build, or `CFN_TEST_BINARY` (another build of it: the
/// aarch64 release binary, run through `CFN_TEST_RUNNER`).
pub fn binary() -> PathBuf {
    std::env::var_os("CFN_TEST_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cfn-bootstrap")))
}

/// The command line that runs `program` (the binary or one of its links): `program`, or
/// with `CFN_TEST_RUNNER` set (`qemu-aarch64-static` for the aarch64 binary, where no
/// binfmt handler runs it by itself) that runner and `program`. qemu-user keeps the
/// link's name as `argv[0]`, so the multicall dispatch sees what it sees natively.
pub fn binary_argv(program: impl AsRef<std::ffi::OsStr>) -> Vec<std::ffi::OsString> {
    let runner = std::env::var_os("CFN_TEST_RUNNER").filter(|r| !r.is_empty());
    runner.into_iter().chain([program.as_ref().to_os_string()]).collect()
}

/// A command running `program` as [`binary_argv`] says.
pub fn binary_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let argv = binary_argv(program);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    cmd
}

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn golden_dir() -> PathBuf {
    workspace().join("tests/golden/reference-1.4-31")
}

/// A unique name for stacks and files, so tests can share one emulator.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A directory with the tool links and the log/state directories the tools write to.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox::at(tempfile::tempdir().expect("temp dir"))
    }

    /// A sandbox on a tmpfs (/dev/shm, when there is one), for tests that run cfn-init
    /// hundreds of times: its files section ends with a `syncfs`, which on a disk takes
    /// as long as whatever other processes have left to write, not what the test wrote.
    pub fn in_memory() -> Sandbox {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() };
        Sandbox::at(dir.expect("temp dir"))
    }

    fn at(dir: tempfile::TempDir) -> Sandbox {
        for sub in ["bin", "log", "lib", "etc", "run"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        for tool in TOOLS {
            std::os::unix::fs::symlink(binary(), dir.path().join("bin").join(tool)).unwrap();
        }
        Sandbox { dir }
    }

    /// A sandbox whose `bin/cfn-bootstrap` is the binary under its own name too.
    pub fn with_bootstrap() -> Sandbox {
        let sandbox = Sandbox::new();
        std::os::unix::fs::symlink(binary(), sandbox.path("bin/cfn-bootstrap")).unwrap();
        sandbox
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// A command running `tool` through its link, with a clean environment: no proxies,
    /// no AWS variables, logs in the sandbox, and IMDS pointed at a closed port so that
    /// no test ever reaches a real metadata service.
    pub fn cmd(&self, tool: &str) -> TestCommand {
        self.command(binary_command(self.path("bin").join(tool)), tool)
    }

    /// `program` (a tracer, say) with the environment `cmd(tool)` gets; the tool's path
    /// is the caller's argument.
    pub fn cmd_via(&self, program: impl AsRef<std::ffi::OsStr>, tool: &str) -> TestCommand {
        self.command(Command::new(program), tool)
    }

    fn command(&self, mut cmd: Command, tool: &str) -> TestCommand {
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))
            .env("LANG", "C.UTF-8")
            .env("HOME", self.dir.path())
            .env("CFN_BOOTSTRAP_LOG_DIR", self.path("log"))
            .env("CFN_BOOTSTRAP_LIB_DIR", self.path("lib"))
            .env("CFN_BOOTSTRAP_ETC_DIR", self.path("etc"))
            .env("CFN_BOOTSTRAP_RUN_DIR", self.path("run"))
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1");
        TestCommand { cmd, shown: tool.to_string(), stdin: None, logs: Some(self.path("log")) }
    }

    /// A log file's text, checked for Rust `Debug` text ([`assert_no_rust_debug`]).
    pub fn log(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.path("log").join(name)).unwrap_or_default();
        assert_no_rust_debug(&text, &format!("the log {name}"));
        text
    }

    /// Writes a credential file with the given mode.
    pub fn credential_file(&self, mode: u32, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(&unique("creds"));
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }
}

pub struct TestCommand {
    pub cmd: Command,
    shown: String,
    stdin: Option<Vec<u8>>,
    logs: Option<PathBuf>,
}

impl TestCommand {
    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Self {
        self.shown.push(' ');
        self.shown.push_str(&arg.as_ref().to_string_lossy());
        self.cmd.arg(arg);
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(mut self, args: I) -> Self {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: &str) -> Self {
        self.cmd.env_remove(key);
        self
    }

    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// `--url`, keys for the emulator.
    pub fn with_keys(self, emulator: &Emulator) -> Self {
        self.args(["--url", &emulator.url, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
    }

    /// [`Self::run`] for a command that may never end (a report reading a FIFO): killed
    /// after `limit`, which its `Run` then shows (`code` -1, `elapsed` the limit).
    pub fn run_within(mut self, limit: Duration) -> Run {
        self.cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = self.cmd.spawn().unwrap_or_else(|e| panic!("cannot run {}: {e}", self.shown));
        let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let stdout = drain(Box::new(child.stdout.take().unwrap()));
        let stderr = drain(Box::new(child.stderr.take().unwrap()));
        let mut status = None;
        wait_until(limit + Duration::from_secs(5), &format!("{} to end or be killed", self.shown), || {
            status = child.try_wait().unwrap();
            if status.is_none() && started.elapsed() >= limit {
                let _ = child.kill();
            }
            status.is_some()
        });
        Run {
            command: self.shown,
            code: status.and_then(|s| s.code()).unwrap_or(-1),
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
            elapsed: started.elapsed(),
            logs: self.logs,
        }
    }

    pub fn run(mut self) -> Run {
        self.cmd.stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = self.cmd.spawn().unwrap_or_else(|e| panic!("cannot run {}: {e}", self.shown));
        if let Some(bytes) = &self.stdin {
            let mut stdin = child.stdin.take().unwrap();
            let _ = stdin.write_all(bytes);
        }
        let out = child.wait_with_output().unwrap();
        let run = Run {
            command: self.shown,
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            elapsed: started.elapsed(),
            logs: self.logs,
        };
        // Every black-box test checks what users read (RULES, issue 22, item 11).
        assert_no_rust_debug(&run.stdout, &format!("the stdout of {}", run.command));
        assert_no_rust_debug(&run.stderr, &format!("the stderr of {}", run.command));
        if let Some(dir) = &run.logs {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    assert_no_rust_debug(&text, &format!("{} after {}", entry.path().display(), run.command));
                }
            }
        }
        run
    }
}

/// Rust `Debug` text in `text`: the first line holding one, with the form found.
///
/// The rule: `Some(`, `Ok(` and `Err(` after anything but a letter, digit or `_` are
/// Rust's (Python prints none of them). `None` is Python's word too, and the reference's
/// text keeps it, so a whole-word `None` counts only where Python does not print it:
/// not `[Errno None]` (the reference's IOError text, SPEC §2: `[Errno <code or None>]`),
/// not `<None>` (cfn-hup's empty action output, tests/golden/cmd-hooks),
/// not an item of a Python repr (`{'k': None}`, `[1, None]`, `(None, 2)`: a Mustache
/// list renders so), and not English (`None of them`: a space and a letter follow).
/// What is left is Rust's: `expiring None`, `uid: None,`, `(None)`. (Rust's `[None,
/// None]` looks like Python's and passes; one `Some(` beside it does not.)
pub fn rust_debug_text(text: &str) -> Option<(&'static str, &str)> {
    let word_char = |c: char| c.is_alphanumeric() || c == '_';
    for line in text.lines() {
        for form in ["Some(", "Ok(", "Err("] {
            let found = line.match_indices(form).any(|(i, _)| !line[..i].chars().next_back().is_some_and(word_char));
            if found {
                return Some((form, line));
            }
        }
        for (i, _) in line.match_indices("None") {
            let (before, after) = (&line[..i], &line[i + 4..]);
            if before.chars().next_back().is_some_and(word_char) || after.chars().next().is_some_and(word_char) {
                continue;
            }
            let next = after.chars().next();
            let python = before.ends_with("Errno ")
                || (before.ends_with('<') && next == Some('>'))
                || before.ends_with("': ")
                || (before.ends_with(", ") && next.is_some_and(|c| ",)]}".contains(c)))
                || (before.ends_with('[') && next.is_some_and(|c| ",]".contains(c)))
                || (before.ends_with('(') && next == Some(','));
            let english = after.strip_prefix(' ').is_some_and(|rest| rest.starts_with(char::is_alphabetic));
            if !python && !english {
                return Some(("None", line));
            }
        }
    }
    None
}

/// Fails naming the Rust `Debug` text found in `text` and where it was (`what`).
pub fn assert_no_rust_debug(text: &str, what: &str) {
    if let Some((form, line)) = rust_debug_text(text) {
        panic!("Rust Debug text {form:?} in {what}, which users read:\n{line}\n--- all of it ---\n{text}");
    }
}

/// The result of one run, with assertions that explain themselves.
pub struct Run {
    pub command: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    logs: Option<PathBuf>,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "command: {}\nexit code: {}\nelapsed: {:?}", self.command, self.code, self.elapsed)?;
        writeln!(f, "--- stdout ---\n{}--- stderr ---\n{}", self.stdout, self.stderr)?;
        if let Some(dir) = &self.logs {
            for name in ["cfn-init.log", "cfn-hup.log", "cfn-wire.log"] {
                if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
                    writeln!(f, "--- {name} ---\n{text}")?;
                }
            }
        }
        Ok(())
    }
}

impl Run {
    pub fn code(&self, expected: i32) -> &Self {
        assert_eq!(self.code, expected, "unexpected exit code\n{self}");
        self
    }
    pub fn stdout_is(&self, expected: &str) -> &Self {
        assert_eq!(self.stdout, expected, "unexpected stdout\n{self}");
        self
    }
    pub fn stderr_is(&self, expected: &str) -> &Self {
        assert_eq!(self.stderr, expected, "unexpected stderr\n{self}");
        self
    }
    pub fn stderr_has(&self, part: &str) -> &Self {
        assert!(self.stderr.contains(part), "stderr lacks {part:?}\n{self}");
        self
    }
    pub fn stdout_has(&self, part: &str) -> &Self {
        assert!(self.stdout.contains(part), "stdout lacks {part:?}\n{self}");
        self
    }
}

/// The emulator's Python: `CFN_TEST_PYTHON`, else the venv `cargo xtask test` makes.
pub fn emulator_python() -> PathBuf {
    let python = std::env::var_os("CFN_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/emulator-venv/bin/python"));
    assert!(python.exists(), "{} is missing: run `cargo xtask test`, which installs the emulator", python.display());
    python
}

/// How long an emulator may take to answer after it was started. It answers in about 3 s
/// on an idle machine, but moto's imports are seconds of CPU: on a loaded 2-core machine
/// (a build beside the tests, several tests starting emulators of their own at once)
/// 30 s was seen to pass. A deadline, not a wait: a ready emulator is used at once.
const EMULATOR_START: Duration = Duration::from_secs(120);

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The local AWS emulator (tests/emulator). `Emulator::shared()` uses the one
/// `cargo xtask test` started (`CFN_TEST_EMULATOR`), else starts one for the test.
pub struct Emulator {
    pub url: String,
    child: Option<Child>,
}

impl Emulator {
    pub fn shared() -> Emulator {
        match std::env::var("CFN_TEST_EMULATOR") {
            Ok(url) if !url.is_empty() => Emulator { url: url.trim_end_matches('/').to_string(), child: None },
            _ => Emulator::start(&[]),
        }
    }

    /// A private emulator with SigV4 validation on and the test keys; `extra` adds options.
    ///
    /// Its port is one the kernel had free a moment before; another test may be handed the
    /// same one meanwhile, and then the emulator that binds second exits while the first
    /// answers its requests. So each emulator is started with a token of its own
    /// (`--ident`), and is ready only when the emulator at its port answers with that
    /// token; one that lost its port is started again on another.
    pub fn start(extra: &[&str]) -> Emulator {
        for _ in 0..5 {
            let port = free_port();
            let mut args = vec!["--port".to_string(), port.to_string()];
            args.extend(extra.iter().map(|s| s.to_string()));
            if let Some(emulator) = Emulator::launch(&args, port) {
                return emulator;
            }
        }
        panic!("no emulator could keep a port of its own in 5 tries");
    }

    /// An emulator on a given port (inside a private network namespace, where ports are
    /// free by construction); `args` must include `--port <port>`.
    pub fn start_at(args: &[&str], port: u16) -> Emulator {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Emulator::launch(&args, port).unwrap_or_else(|| panic!("the emulator could not listen on port {port}"))
    }

    /// The emulator started with `args`, once it answers at `port`; none when it exited
    /// first (its port was taken).
    fn launch(args: &[String], port: u16) -> Option<Emulator> {
        let ident = unique("emulator");
        let log = std::fs::File::create(std::env::temp_dir().join(format!("{ident}.log"))).unwrap();
        let child = Command::new(emulator_python())
            .arg(workspace().join("tests/emulator/moto_cfn_server.py"))
            .args(["--validate-sigv4", "--credentials"])
            .arg(format!("{ACCESS_KEY}:{SECRET_KEY}"))
            .args(["--ident", &ident])
            .args(args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the emulator");
        let mut emulator = Emulator { url: format!("http://127.0.0.1:{port}"), child: Some(child) };
        let deadline = Instant::now() + EMULATOR_START;
        while Instant::now() < deadline {
            if emulator.child.as_mut().is_some_and(|c| c.try_wait().is_ok_and(|status| status.is_some())) {
                emulator.child = None;
                return None;
            }
            let answered = ureq::get(&format!("{}/_emu/ident", emulator.url))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok())
                .and_then(|body| serde_json::from_str::<serde_json::Value>(&body).ok());
            if answered.is_some_and(|a| a["ident"] == ident.as_str()) {
                return Some(emulator);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the emulator at {} did not start within {EMULATOR_START:?}", emulator.url);
    }

    pub fn wait_ready(&self) {
        let deadline = Instant::now() + EMULATOR_START;
        while Instant::now() < deadline {
            if ureq::get(&format!("{}/_emu/state", self.url)).call().is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the emulator at {} did not start within {EMULATOR_START:?}", self.url);
    }

    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let mut r = ureq::get(&format!("{}{path}", self.url)).call().unwrap();
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
    }

    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        let mut r = ureq::post(&format!("{}{path}", self.url)).send(body.to_string().as_bytes()).unwrap();
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
    }

    /// The CloudFormation requests the emulator received for one stack.
    pub fn requests_for(&self, stack: &str) -> Vec<serde_json::Value> {
        let all = self.get_json("/_emu/requests?kind=cloudformation");
        all.as_array()
            .unwrap()
            .iter()
            .filter(|r| r["query"]["StackName"] == stack || r["form"]["StackName"] == stack)
            .cloned()
            .collect()
    }

    fn client(&self) -> cfn_aws::CloudFormation {
        cfn_aws::client_with_keys(&self.url, "us-east-1", cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None))
    }

    /// Creates a stack from a JSON template and returns its name.
    pub fn create_stack(&self, name: &str, template: &serde_json::Value) -> String {
        self.client()
            .call("CreateStack", &[("StackName", name), ("TemplateBody", &template.to_string())], true)
            .unwrap_or_else(|e| panic!("CreateStack {name}: {e}"));
        name.to_string()
    }

    /// A SigV4-signed S3 request to the emulator with the test keys (test set-up only).
    pub fn s3_request(&self, method: &str, path: &str, body: &[u8]) -> u16 {
        use cfn_aws::sigv4;
        let http = cfn_aws::http::HttpClient::new(cfn_aws::ProxyOptions::default(), "tests");
        let host = self.url.trim_start_matches("http://").to_string();
        let request = sigv4::Request { method, host: &host, path, query: &[], headers: &[], payload: body };
        let credentials = cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None);
        let scope = sigv4::Scope { region: "us-east-1", service: "s3" };
        let mut headers = sigv4::sign(&request, &credentials, &scope, chrono::Utc::now());
        headers.push(("Host", host.clone()));
        let response = http.send(method, &format!("{}{path}", self.url), &headers, Some(body)).unwrap();
        assert!(response.is_success(), "{method} {path}: {} {}", response.status, response.text());
        response.status
    }

    /// A new bucket holding `key` = `body`; returns the bucket and the object's URL.
    pub fn s3_object(&self, key: &str, body: &[u8]) -> (String, String) {
        let bucket = unique("dl").to_ascii_lowercase();
        self.s3_request("PUT", &format!("/{bucket}"), b"");
        self.s3_request("PUT", &format!("/{bucket}/{key}"), body);
        (bucket.clone(), format!("{}/{bucket}/{key}", self.url))
    }

    /// An endpoints document (as `ENDPOINTS_OVERRIDE` takes it) that makes this
    /// emulator an S3 endpoint.
    pub fn s3_endpoints_document(&self) -> String {
        let host = self.url.trim_start_matches("http://");
        serde_json::json!({"Services": {"AmazonS3": {"Endpoints": [{"Region": "us-east-1", "Hostname": host}]}}})
            .to_string()
    }

    pub fn call(&self, action: &str, params: &[(&str, &str)]) -> Result<serde_json::Value, cfn_aws::cfn::Error> {
        self.client().call(action, params, true)
    }

    /// Updates a stack to `template` and waits until the update is over.
    pub fn update_stack(&self, name: &str, template: &serde_json::Value) {
        let template = template.to_string();
        self.call("UpdateStack", &[("StackName", name), ("TemplateBody", &template)])
            .unwrap_or_else(|e| panic!("UpdateStack {name}: {e}"));
        wait_until(Duration::from_secs(20), "the update to complete", || {
            let status = self.call("DescribeStacks", &[("StackName", name)]).ok().and_then(|v| {
                v.pointer("/DescribeStacksResponse/DescribeStacksResult/Stacks/0/StackStatus")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
            });
            status.is_some_and(|s| !s.ends_with("_IN_PROGRESS"))
        });
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A template with one instance carrying `metadata`, and a resource without metadata.
pub fn instance_template(metadata: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "Resources": {
            "Instance": {
                "Type": "AWS::EC2::Instance",
                "Metadata": metadata,
                "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}
            },
            "Bare": {"Type": "AWS::CloudFormation::WaitConditionHandle"}
        }
    })
}

/// Runs `body` on a thread of its own inside a new network namespace where loopback is
/// up and 169.254.169.254 is a local address: processes it starts (the emulator, the
/// tools) see IMDS at its real address and nothing else. Needs root.
pub fn in_private_network<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        // SAFETY: unshare affects only this thread, which owns nothing shared yet.
        let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "unshare(CLONE_NEWNET) failed (these tests need root): {}", std::io::Error::last_os_error());
        for args in [&["link", "set", "lo", "up"][..], &["addr", "add", "169.254.169.254/32", "dev", "lo"][..]] {
            let status = Command::new("ip").args(args).status().expect("run ip (iproute2)");
            assert!(status.success(), "ip {args:?} failed");
        }
        body()
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Polls `condition` every 50 ms until it holds; fails the test after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if condition() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out after {timeout:?} waiting for {what}");
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A forward proxy on loopback that behaves like squid's default configuration and
/// records what it was asked: `http://` requests arrive in absolute form and are
/// forwarded; `CONNECT` tunnels are opened only to the ports given as SSL ports (squid
/// refuses CONNECT to any other port, port 80 included, with 403).
pub struct RecordingProxy {
    pub url: String,
    /// The request line and headers of each request, in arrival order.
    requests: std::sync::Arc<std::sync::Mutex<Vec<ProxyRequest>>>,
}

#[derive(Debug, Clone)]
pub struct ProxyRequest {
    pub method: String,
    /// `host:port` for CONNECT, the absolute URL otherwise.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub refused: bool,
}

impl ProxyRequest {
    /// The `host:port` the request was for.
    pub fn netloc(&self) -> String {
        match self.target.split_once("://") {
            Some((_, rest)) => rest.split('/').next().unwrap_or("").to_string(),
            None => self.target.clone(),
        }
    }
}

impl RecordingProxy {
    /// A proxy that tunnels no port (no test server listens on 443).
    pub fn start() -> RecordingProxy {
        Self::with_ssl_ports(&[])
    }

    pub fn with_ssl_ports(ssl_ports: &[u16]) -> RecordingProxy {
        use std::io::{BufRead, BufReader};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = requests.clone();
        let ssl_ports = ssl_ports.to_vec();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let seen = seen.clone();
                let ssl_ports = ssl_ports.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(client.try_clone().unwrap());
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).is_err() {
                        return;
                    }
                    let mut headers = Vec::new();
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                            break;
                        }
                        if let Some((n, v)) = header.trim_end().split_once(':') {
                            headers.push((n.trim().to_string(), v.trim().to_string()));
                        }
                    }
                    let mut words = request_line.split_whitespace();
                    let method = words.next().unwrap_or("").to_string();
                    let target = words.next().unwrap_or("").to_string();
                    let mut record = ProxyRequest {
                        method: method.clone(),
                        target: target.clone(),
                        headers: headers.clone(),
                        refused: false,
                    };
                    let mut client = client;
                    let upstream_at = record.netloc();
                    if method == "CONNECT" {
                        let port = target.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).unwrap_or(0);
                        if !ssl_ports.contains(&port) {
                            record.refused = true;
                            seen.lock().unwrap().push(record);
                            let _ = client
                                .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                            return;
                        }
                    }
                    seen.lock().unwrap().push(record);
                    let Ok(mut upstream) = std::net::TcpStream::connect(&upstream_at) else {
                        let _ = client
                            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        return;
                    };
                    if method == "CONNECT" {
                        let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    } else {
                        // Forward in origin form, one request per connection.
                        let path = target
                            .split_once("://")
                            .map(|(_, rest)| rest.find('/').map_or("/", |i| &rest[i..]))
                            .unwrap_or("/");
                        let mut head = format!("{method} {path} HTTP/1.1\r\n");
                        for (n, v) in &headers {
                            let lower = n.to_ascii_lowercase();
                            if !lower.starts_with("proxy-") && lower != "connection" {
                                head.push_str(&format!("{n}: {v}\r\n"));
                            }
                        }
                        head.push_str("Connection: close\r\n\r\n");
                        if upstream.write_all(head.as_bytes()).is_err() {
                            return;
                        }
                    }
                    let (mut up_read, mut up_write) = (upstream.try_clone().unwrap(), upstream);
                    let mut client_write = client.try_clone().unwrap();
                    let relay = std::thread::spawn(move || {
                        let _ = std::io::copy(&mut up_read, &mut client_write);
                        let _ = client_write.shutdown(std::net::Shutdown::Both);
                    });
                    let _ = std::io::copy(&mut reader, &mut up_write);
                    let _ = relay.join();
                });
            }
        });
        RecordingProxy { url, requests }
    }

    /// The `host:port` of each request it carried or refused.
    pub fn targets(&self) -> Vec<String> {
        self.requests().iter().map(ProxyRequest::netloc).collect()
    }

    pub fn requests(&self) -> Vec<ProxyRequest> {
        self.requests.lock().unwrap().clone()
    }
}

/// The folder of x86_64 release artifacts (`cargo xtask dist`): `CFN_TEST_DIST` when
/// `cargo xtask test` built them, else built once here with its own target directory
/// (`target/dist-test`, so it never waits for the outer cargo's lock).
pub fn dist_dir() -> &'static Path {
    static DIST: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIST.get_or_init(|| {
        if let Some(dir) = std::env::var_os("CFN_TEST_DIST") {
            return PathBuf::from(dir);
        }
        let target = workspace().join("target/dist-test");
        eprintln!("building the artifacts: cargo xtask dist --skip-aarch64 (CARGO_TARGET_DIR={})", target.display());
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(workspace())
            .args(["run", "--quiet", "-p", "xtask", "--", "dist", "--skip-aarch64"])
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("run cargo xtask dist");
        assert!(status.success(), "cargo xtask dist --skip-aarch64 failed");
        target.join("dist")
    })
}

// ---------------------------------------------------------------------------
// SQS from the test side (result queues of the command feature)
// ---------------------------------------------------------------------------

/// An SQS query-protocol POST to the emulator, signed with the test keys for `region`;
/// `host` is the Host header the signature covers. Returns the XML answer.
pub fn sqs_post(emulator: &Emulator, region: &str, path: &str, form: &[(&str, &str)]) -> String {
    use cfn_aws::sigv4;
    let host = emulator.url.trim_start_matches("http://").to_string();
    let pairs: Vec<(String, String)> = form.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let body = sigv4::canonical_query(&pairs);
    let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded".to_string())];
    let request =
        sigv4::Request { method: "POST", host: &host, path, query: &[], headers: &headers, payload: body.as_bytes() };
    let credentials = cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None);
    headers.extend(sigv4::sign(&request, &credentials, &sigv4::Scope { region, service: "sqs" }, chrono::Utc::now()));
    headers.push(("Host", host));
    let http = cfn_aws::http::HttpClient::new(cfn_aws::ProxyOptions::default(), "tests");
    let response = http.send("POST", &format!("{}{path}", emulator.url), &headers, Some(body.as_bytes())).unwrap();
    assert!(response.is_success(), "SQS {form:?}: {} {}", response.status, response.text());
    response.text()
}

pub fn xml_texts(xml: &str, name: &str) -> Vec<String> {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    xml.split(open.as_str())
        .skip(1)
        .map(|rest| rest.split(close.as_str()).next().unwrap())
        .map(|t| t.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
        .collect()
}

/// A new queue in `region`; returns its path (`/<account>/<name>`).
pub fn create_queue(emulator: &Emulator, region: &str) -> String {
    // The suffix keeps one queue's path from being a prefix of another's (fault rules
    // match path prefixes).
    let name = format!("{}-q", unique("results"));
    let answer = sqs_post(emulator, region, "/", &[("Action", "CreateQueue"), ("QueueName", &name)]);
    let url = xml_texts(&answer, "QueueUrl").pop().unwrap_or_else(|| panic!("no QueueUrl in {answer}"));
    url.split_once(&emulator.url).map(|(_, path)| path.to_string()).unwrap_or_else(|| panic!("queue URL {url}"))
}

/// The bodies of the messages waiting on a queue, as JSON.
pub fn received(emulator: &Emulator, region: &str, queue_path: &str) -> Vec<serde_json::Value> {
    let answer = sqs_post(
        emulator,
        region,
        queue_path,
        &[("Action", "ReceiveMessage"), ("MaxNumberOfMessages", "10"), ("Version", "2012-11-05")],
    );
    xml_texts(&answer, "Body").iter().map(|b| serde_json::from_str(b).unwrap_or_else(|e| panic!("{b}: {e}"))).collect()
}

/// A private CA and a server certificate for 127.0.0.1 it signed, made with openssl.
/// Returns (CA certificate, server certificate, server key).
pub fn private_ca(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let path = |name: &str| dir.join(name);
    let openssl = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .current_dir(dir)
            .args(args)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run openssl");
        assert!(status.success(), "openssl {args:?} failed");
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(path("ext.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        "-out",
        "server.pem",
    ]);
    (path("ca.pem"), path("server.pem"), path("server.key"))
}

/// The heads (request line and headers) of the requests a test server received.
pub type Heads = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// An HTTP server on `ip` (any port) that records the head of each request and answers
/// it with `answer(n, head)`, `n` counting requests from 0.
pub fn serve_recorded(
    ip: &str,
    answer: impl Fn(usize, &str) -> Vec<u8> + Send + 'static,
) -> (std::net::SocketAddr, Heads) {
    use std::io::{BufRead, BufReader};
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let address = listener.local_addr().unwrap();
    let heads: Heads = Default::default();
    let record = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let n = {
                let mut heads = record.lock().unwrap();
                heads.push(head.clone());
                heads.len() - 1
            };
            let mut stream = stream;
            let _ = stream.write_all(&answer(n, &head));
            let _ = stream.flush();
        }
    });
    (address, heads)
}
