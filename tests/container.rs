//! The container image, built from the context `cargo xtask dist` writes (`container/`:
//! the `FROM scratch` Containerfile and one root per architecture) and run with podman:
//! what the image holds, every link's `--help` (CLI-COMMON-01, -04), and cfn-get-metadata
//! and cfn-signal inside it (a WaitConditionHandle URL, SIG-06; SignalResource, SIG-08)
//! against the emulator on this host's loopback (`--network host`), with keys and with
//! an ECS-style credential endpoint (README "Credentials"; its session token travels
//! with the signature, CRED-04). The arm64 image is built and run too, its binary under
//! qemu-user.
//!
//! podman keeps everything under `target/podman/` (see [`Podman`]); it and `runc` are
//! Debian packages `cargo xtask test` installs. Without them, or without root, the tests
//! fail and say so.

mod common;
use common::waiting::*;
use common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// podman with its storage, configuration and state under `target/podman/`. Debian's
/// podman 4.3 works here with `runc` (crun fails on this kernel), cgroupfs, the vfs
/// storage driver, and no default ulimits (they fail to apply here). It still writes a
/// few files in fixed places whatever it is told (`/run/containers`, `/run/runc`,
/// `/var/lib/containers/cache`): each podman command runs in a private mount namespace
/// with empty file systems there, so the machine keeps none of it.
struct Podman {
    dir: PathBuf,
}

/// Mounts the empty file systems, then runs the command it is given.
const PRIVATE_STATE: &str = "mount -t tmpfs podman-run /run && mount -t tmpfs podman-var-lib /var/lib && exec \"$@\"";

impl Podman {
    /// The one podman of this test process, with storage left by an earlier run removed.
    fn get() -> &'static Podman {
        static PODMAN: OnceLock<Podman> = OnceLock::new();
        PODMAN.get_or_init(|| {
            // SAFETY: geteuid cannot fail.
            assert_eq!(unsafe { libc::geteuid() }, 0, "podman runs containers as root here (these tests need root)");
            let found = Command::new("podman").arg("--version").output();
            assert!(
                found.is_ok_and(|o| o.status.success()),
                "podman is not installed: `cargo xtask test` installs it (Debian packages podman and runc)"
            );
            let dir = workspace().join("target/podman");
            if dir.exists() {
                std::fs::remove_dir_all(&dir).expect("remove the podman state of an earlier run");
            }
            for sub in ["tmp", "config", "data", "xdg"] {
                std::fs::create_dir_all(dir.join(sub)).unwrap();
            }
            let conf = format!(
                "[containers]\ndefault_ulimits = []\n\n\
                 [engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"none\"\n\
                 tmp_dir = \"{dir}/tmp\"\n\n\
                 [network]\nnetwork_config_dir = \"{dir}/networks\"\n",
                dir = dir.display()
            );
            std::fs::write(dir.join("containers.conf"), conf).unwrap();
            std::fs::write(dir.join("registries.conf"), "unqualified-search-registries = []\n").unwrap();
            Podman { dir }
        })
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("unshare");
        cmd.args(["--mount", "--propagation", "private", "--", "sh", "-c", PRIVATE_STATE, "sh", "podman"])
            .arg("--root")
            .arg(self.dir.join("storage"))
            .arg("--runroot")
            .arg(self.dir.join("run"))
            .args(["--storage-driver", "vfs"])
            // podman's own warnings about this machine are not asserted on (the container's
            // streams are read from its log, see `Image::run_with`); errors still show.
            .arg("--log-level=error")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into()))
            .env("HOME", &self.dir)
            .env("TMPDIR", self.dir.join("tmp"))
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("XDG_DATA_HOME", self.dir.join("data"))
            .env("XDG_RUNTIME_DIR", self.dir.join("xdg"))
            .env("CONTAINERS_CONF", self.dir.join("containers.conf"))
            .env("CONTAINERS_REGISTRIES_CONF", self.dir.join("registries.conf"));
        cmd
    }

    /// Runs podman with `args`; fails the test with its output when it fails.
    fn ok(&self, args: &[&str]) -> Output {
        let output = self.cmd().args(args).output().expect("run podman");
        assert!(output.status.success(), "{}", shown(&format!("podman {}", args.join(" ")), &output));
        output
    }
}

fn shown(what: &str, output: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// An image built from the dist context for one architecture (`amd64`, `arm64`).
struct Image {
    arch: &'static str,
    tag: String,
}

/// The dist context: `container/` of `CFN_TEST_DIST` (`cargo xtask test` builds both
/// architectures there).
fn context() -> PathBuf {
    dist_dir().join("container")
}

/// The dist context's root for `arch`, or a failure saying in one line which command
/// builds it. `cargo test --test container` alone builds only the x86_64 artifacts (see
/// `common::dist_dir`): the arm64 ones need the aarch64 cross build `cargo xtask test`
/// makes.
fn arch_root(arch: &str) -> PathBuf {
    let root = context().join(format!("rootfs-{arch}"));
    assert!(
        root.join("opt/aws/bin/cfn-bootstrap").is_file(),
        "the {arch} artifacts are not built ({} is missing): run `cargo xtask test`, which builds them, \
         or point CFN_TEST_DIST at the output of `cargo xtask dist` (without --skip-aarch64)",
        root.display()
    );
    root
}

impl Image {
    /// Built once per test process, as `podman build --platform linux/<arch>` of the context.
    fn get(arch: &'static str) -> &'static Image {
        static AMD64: OnceLock<Image> = OnceLock::new();
        static ARM64: OnceLock<Image> = OnceLock::new();
        let cell = if arch == "amd64" { &AMD64 } else { &ARM64 };
        cell.get_or_init(|| {
            arch_root(arch);
            let tag = format!("localhost/cfn-bootstrap-test:{arch}");
            let context = context();
            let platform = format!("linux/{arch}");
            Podman::get().ok(&["build", "--quiet", "--platform", &platform, "-t", &tag, &context.to_string_lossy()]);
            Image { arch, tag }
        })
    }

    /// `podman image inspect` of the image.
    fn inspect(&self) -> Value {
        let output = Podman::get().ok(&["image", "inspect", &self.tag]);
        let all: Value = serde_json::from_slice(&output.stdout).unwrap();
        all[0].clone()
    }

    /// Every entry of the image's file system as `podman export` writes it (type, mode,
    /// owner, path and link target, e.g. `l 0777 0:0 opt/aws/bin/cfn-init -> cfn-bootstrap`)
    /// and the bytes of its `/opt/aws/bin/cfn-bootstrap`.
    fn files(&self) -> (Vec<String>, Vec<u8>) {
        let podman = Podman::get();
        let created = podman.ok(&["create", &self.tag]);
        let container = String::from_utf8_lossy(&created.stdout).trim().to_string();
        let exported = podman.ok(&["export", &container]);
        podman.ok(&["rm", &container]);
        let mut archive = tar::Archive::new(exported.stdout.as_slice());
        let mut binary = Vec::new();
        let mut files: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let header = entry.header();
                let kind = match header.entry_type() {
                    tar::EntryType::Directory => "d",
                    tar::EntryType::Symlink => "l",
                    tar::EntryType::Regular => "f",
                    other => panic!("unexpected entry {:?} of type {other:?}", entry.path()),
                };
                let path = entry.path().unwrap().display().to_string();
                let link = entry.link_name().unwrap().map(|l| format!(" -> {}", l.display())).unwrap_or_default();
                let (uid, gid) = (header.uid().unwrap(), header.gid().unwrap());
                let mode = header.mode().unwrap() & 0o7777;
                if path == "opt/aws/bin/cfn-bootstrap" {
                    std::io::Read::read_to_end(&mut entry, &mut binary).unwrap();
                }
                format!("{kind} {:04o} {uid}:{gid} {}{link}", mode, path.trim_end_matches('/'))
            })
            .collect();
        files.sort();
        (files, binary)
    }

    /// `podman run --rm --network host IMAGE args…` with `env` added to the image's.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_with(None, args, env)
    }

    /// [`Image::run`] with `entrypoint` (a link, say) in place of the image's. No tool in
    /// the image is to reach a real instance metadata service on this host's network:
    /// IMDS points at a closed port. On arm64 the binary runs under qemu-aarch64-static:
    /// through the kernel's binfmt handler when one is registered (with the F flag, so it
    /// works inside the container), else mounted into the container and started as the
    /// entrypoint, with the image's entrypoint (and command) as its arguments.
    fn run_with(&self, entrypoint: Option<&str>, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Podman::get().cmd();
        cmd.args(["run", "--rm", "--network", "host", "--platform", &format!("linux/{}", self.arch)]);
        // The container's own streams go to a log file conmon writes (the k8s-file
        // format tags each line with its stream), so that what the tool printed is kept
        // apart from what podman says of itself on its stderr: podman warns there about
        // this machine (a read-only cgroup controller, say), which is not the tool's output.
        let logs = tempfile::tempdir().expect("a folder for the container's log");
        let log = logs.path().join("container.log");
        cmd.arg("--log-driver").arg("k8s-file").arg("--log-opt").arg(format!("path={}", log.display()));
        cmd.args(["--env", "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:1"]);
        for (name, value) in env {
            cmd.arg("--env").arg(format!("{name}={value}"));
        }
        if self.arch == "arm64" && !binfmt_runs_aarch64() {
            let qemu = which("qemu-aarch64-static").expect("qemu-aarch64-static (Debian package qemu-user-static)");
            cmd.arg("--volume").arg(format!("{}:/qemu-aarch64-static:ro", qemu.display()));
            cmd.args(["--entrypoint", "/qemu-aarch64-static", &self.tag]);
            cmd.arg(entrypoint.unwrap_or("/opt/aws/bin/cfn-bootstrap"));
            if entrypoint.is_none() && args.is_empty() {
                cmd.arg("--help");
            }
        } else {
            if let Some(entrypoint) = entrypoint {
                cmd.args(["--entrypoint", entrypoint]);
            }
            cmd.arg(&self.tag);
        }
        cmd.args(args);
        let podman = cmd.output().expect("run podman");
        container_output(podman, &log)
    }
}

/// What the container itself wrote, read back from its k8s-file log: each line is
/// `TIME STREAM TAG TEXT`, TAG `F` for a whole line and `P` for a part that continues
/// (or ends the output without a newline). When podman could not run the container,
/// podman's own output is what there is to show, so it is kept in stderr after a marker.
fn container_output(podman: Output, log: &std::path::Path) -> Output {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let text = std::fs::read(log).unwrap_or_default();
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut fields = line.splitn(4, |b| *b == b' ');
        let (_time, stream, tag, content) = (fields.next(), fields.next(), fields.next(), fields.next().unwrap_or(b""));
        let out = match stream {
            Some(b"stdout") => &mut stdout,
            Some(b"stderr") => &mut stderr,
            _ => panic!("{}: not a k8s-file log line: {}", log.display(), String::from_utf8_lossy(line)),
        };
        out.extend_from_slice(content);
        if tag == Some(b"F") {
            out.push(b'\n');
        }
    }
    if !podman.status.success() {
        stderr.extend_from_slice(b"--- podman's own stderr\n");
        stderr.extend_from_slice(&podman.stderr);
    }
    Output { status: podman.status, stdout, stderr }
}

/// Whether the kernel runs aarch64 binaries by itself: a `qemu-aarch64` binfmt_misc
/// handler that is enabled and opened at registration (flag F), so that it also works
/// in a container whose root has no qemu.
fn binfmt_runs_aarch64() -> bool {
    std::fs::read_to_string("/proc/sys/fs/binfmt_misc/qemu-aarch64").is_ok_and(|h| {
        h.lines().next() == Some("enabled") && h.lines().any(|l| l.starts_with("flags:") && l.contains('F'))
    })
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The image's whole file system: the binary, its seven links, and the empty
/// directories the tools write to (`/tmp`, `/var/log`, `/var/lib`, `/etc/cfn`).
fn expected_files() -> Vec<String> {
    let dirs = ["etc", "etc/cfn", "opt", "opt/aws", "opt/aws/bin", "var", "var/lib", "var/log"];
    let mut files: Vec<String> = dirs
        .iter()
        .map(|d| format!("d 0755 0:0 {d}"))
        .chain(["d 1777 0:0 tmp".to_string(), "f 0755 0:0 opt/aws/bin/cfn-bootstrap".to_string()])
        .chain(TOOLS.iter().map(|t| format!("l 0777 0:0 opt/aws/bin/{t} -> cfn-bootstrap")))
        .collect();
    files.sort();
    files
}

/// Checks what the image is: its architecture, entrypoint, one layer and its files, and
/// that its binary is the one in the dist context's root.
fn assert_image_is_the_context(image: &Image) {
    let config = image.inspect();
    assert_eq!(config["Architecture"], image.arch, "{config:#}");
    assert_eq!(config["Os"], "linux", "{config:#}");
    assert_eq!(config["Config"]["Entrypoint"], json!(["/opt/aws/bin/cfn-bootstrap"]), "{config:#}");
    assert_eq!(config["Config"]["Cmd"], json!(["--help"]), "{config:#}");
    assert_eq!(config["Config"]["Env"], json!(["PATH=/opt/aws/bin"]), "{config:#}");
    assert_eq!(config["RootFS"]["Layers"].as_array().map(Vec::len), Some(1), "one layer: {config:#}");
    let (files, binary) = image.files();
    assert_eq!(files, expected_files());
    let built = context().join(format!("rootfs-{}/opt/aws/bin/cfn-bootstrap", image.arch));
    assert!(binary == std::fs::read(&built).unwrap(), "the image's binary is not {}", built.display());
}

/// `IMAGE` alone prints the multicall help; each link, as the entrypoint, prints its
/// tool's help: the same bytes as the binary in the dist root prints natively (for arm64
/// the x86_64 one: the help does not depend on the architecture).
fn assert_help_works(image: &Image) {
    let native = context().join("rootfs-amd64/opt/aws/bin");
    let default = image.run(&[], &[]);
    assert!(default.status.success(), "{}", shown("podman run IMAGE", &default));
    let expected = Command::new(native.join("cfn-bootstrap")).arg("--help").output().unwrap();
    assert!(stdout(&expected).contains("Usage: cfn-bootstrap"), "{}", shown("cfn-bootstrap --help", &expected));
    assert_eq!(stdout(&default), stdout(&expected), "podman run IMAGE");
    for tool in TOOLS {
        let link = format!("/opt/aws/bin/{tool}");
        let help = image.run_with(Some(&link), &["--help"], &[]);
        let what = format!("podman run --entrypoint /opt/aws/bin/{tool} IMAGE --help");
        assert!(help.status.success(), "{}", shown(&what, &help));
        assert!(stdout(&help).starts_with(&format!("Usage: {tool} ")), "{}", shown(&what, &help));
        let expected = Command::new(native.join(tool)).arg("--help").output().unwrap();
        assert_eq!(stdout(&help), stdout(&expected), "{what}");
    }
}

/// A stack whose instance has `{"app": {"greeting": "hello from the stack"}}` as metadata.
fn greeting_stack(emulator: &Emulator) -> String {
    let metadata = json!({"app": {"greeting": "hello from the stack"}});
    emulator.create_stack(&unique("image"), &instance_template(&metadata))
}

/// The DescribeStackResource requests the emulator received for `stack`.
fn describes(emulator: &Emulator, stack: &str) -> Vec<Value> {
    emulator.requests_for(stack).into_iter().filter(|r| r["action"] == "DescribeStackResource").collect()
}

/// `cfn-get-metadata` in the image with keys on its command line reads the stack.
fn assert_get_metadata_with_keys(image: &Image, emulator: &Emulator) {
    let stack = greeting_stack(emulator);
    let args = ["cfn-get-metadata", "-s", &stack, "-r", "Instance", "-k", "app.greeting", "--url", &emulator.url];
    let run = image.run(&[&args[..], &["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY]].concat(), &[]);
    assert!(run.status.success(), "{}", shown("cfn-get-metadata in the image", &run));
    assert_eq!(stdout(&run), "hello from the stack\n", "{}", shown("cfn-get-metadata in the image", &run));
    let requests = describes(emulator, &stack);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(
        (&requests[0]["auth_scheme"], &requests[0]["access_key"], &requests[0]["status"]),
        (&json!("AWS4-HMAC-SHA256"), &json!(ACCESS_KEY), &json!(200)),
        "{:#}",
        requests[0]
    );
}

/// The session token the credential endpoint hands out with the test keys.
const ENDPOINT_TOKEN: &str = "ContainerSessionTOKEN//image";
/// What the container is given to present to the endpoint.
const ENDPOINT_AUTHORIZATION: &str = "task-authorization-token";

/// An ECS-style credential endpoint on loopback (the host's, which `--network host`
/// shares): every GET gets the test keys with a session token, expiring in six hours.
fn credential_endpoint() -> (String, Heads) {
    let (address, heads) = serve_recorded("127.0.0.1", |_, _| {
        let expiration = (chrono::Utc::now() + chrono::TimeDelta::hours(6)).format("%Y-%m-%dT%H:%M:%SZ");
        let body = json!({"AccessKeyId": ACCESS_KEY, "SecretAccessKey": SECRET_KEY, "Token": ENDPOINT_TOKEN,
                          "Expiration": expiration.to_string(), "RoleArn": "arn:aws:iam::123456789012:role/task"})
        .to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    });
    (format!("http://{address}/v1/credentials"), heads)
}

/// The environment ECS gives a task that has a role (the full-URI form).
fn task_environment(endpoint: &str) -> [(&'static str, String); 2] {
    [
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.to_string()),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", ENDPOINT_AUTHORIZATION.to_string()),
    ]
}

/// The endpoint was asked once, with the container's authorization token.
fn assert_endpoint_asked_once(heads: &Heads) {
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:#?}");
    assert!(heads[0].starts_with("GET /v1/credentials HTTP/1.1\r\n"), "{}", heads[0]);
    let authorization = heads[0]
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find_map(|(name, value)| name.eq_ignore_ascii_case("authorization").then_some(value.trim()));
    assert_eq!(authorization, Some(ENDPOINT_AUTHORIZATION), "{}", heads[0]);
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'a str, &'a str)> {
    env.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

#[test]
fn the_image_holds_only_the_binary_its_links_and_the_directories_it_writes() {
    assert_image_is_the_context(Image::get("amd64"));
}

#[test]
fn every_link_prints_its_help_in_the_image() {
    assert_help_works(Image::get("amd64"));
}

#[test]
fn get_metadata_in_the_image_reads_the_stack_with_keys() {
    assert_get_metadata_with_keys(Image::get("amd64"), &Emulator::shared());
}

#[test]
fn get_metadata_in_the_image_signs_with_keys_from_a_container_credential_endpoint() {
    let (image, emulator) = (Image::get("amd64"), Emulator::shared());
    let stack = greeting_stack(&emulator);
    let (endpoint, heads) = credential_endpoint();
    let env = task_environment(&endpoint);
    let args = ["cfn-get-metadata", "-s", &stack, "-r", "Instance", "-k", "app", "--url", &emulator.url];
    let run = image.run(&args, &env_refs(&env));
    assert!(run.status.success(), "{}", shown("cfn-get-metadata in the image", &run));
    assert_eq!(
        stdout(&run),
        "{\n    \"greeting\": \"hello from the stack\"\n}\n",
        "{}",
        shown("cfn-get-metadata", &run)
    );
    assert_endpoint_asked_once(&heads);
    let requests = describes(&emulator, &stack);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(
        (&requests[0]["access_key"], &requests[0]["security_token"], &requests[0]["status"]),
        (&json!(ACCESS_KEY), &json!(true), &json!(200)),
        "{:#}",
        requests[0]
    );
}

/// cfn-signal in the image completes a WaitCondition through its handle URL (no
/// credentials: the URL is presigned), with the body the reference sends (SIG-06).
fn assert_handle_signal(image: &Image, emulator: &Emulator) {
    let stack = create_waiting_stack(emulator, &unique("image-wch"), &wait_condition_template());
    let handle = output(emulator, &stack, "HandleUrl");
    let run = image.run(&["cfn-signal", "-d", "from the image", "-i", "container-1", "-r", "done", &handle], &[]);
    assert!(run.status.success(), "{}", shown("cfn-signal <handle URL> in the image", &run));
    assert_eq!(stdout(&run), "CloudFormation signaled successfully with SUCCESS.\n", "{}", shown("cfn-signal", &run));
    assert_eq!(stack_status(emulator, &stack), "CREATE_COMPLETE");
    let signals = signals_for(emulator, &stack);
    assert_eq!(signals.len(), 1, "{signals:#?}");
    assert_eq!(
        signals[0]["raw"],
        r#"{"Status": "SUCCESS", "Reason": "done", "Data": "from the image", "UniqueId": "container-1"}"#
    );
    assert_eq!(signals[0]["accepted"], true, "{:#}", signals[0]);
    let puts = handle_puts(emulator, &handle);
    assert_eq!(puts.len(), 1, "{puts:#?}");
    assert_eq!((&puts[0]["method"], &puts[0]["status"]), (&json!("PUT"), &json!(200)), "{:#}", puts[0]);
}

#[test]
fn signal_in_the_image_completes_a_wait_condition_through_its_handle_url() {
    assert_handle_signal(Image::get("amd64"), &Emulator::shared());
}

#[test]
fn signal_in_the_image_signals_a_resource_with_keys_from_a_container_credential_endpoint() {
    let (image, emulator) = (Image::get("amd64"), Emulator::shared());
    let stack = create_waiting_stack(&emulator, &unique("image-sig"), &creation_policy_template());
    let (endpoint, heads) = credential_endpoint();
    let env = task_environment(&endpoint);
    let args = [
        "cfn-signal",
        "-e",
        "0",
        "--stack",
        &stack,
        "--resource",
        "Instance",
        "-i",
        "container-1",
        "--url",
        &emulator.url,
    ];
    let run = image.run(&args, &env_refs(&env));
    assert!(run.status.success(), "{}", shown("cfn-signal --stack --resource in the image", &run));
    // SIG-08: silent on success.
    assert_eq!((stdout(&run), String::from_utf8_lossy(&run.stderr).into_owned()), (String::new(), String::new()));
    assert_endpoint_asked_once(&heads);
    assert_eq!(stack_status(&emulator, &stack), "CREATE_COMPLETE");
    let signals = signals_for(&emulator, &stack);
    assert_eq!(signals.len(), 1, "{signals:#?}");
    assert_eq!(
        (&signals[0]["via"], &signals[0]["LogicalResourceId"], &signals[0]["UniqueId"], &signals[0]["Status"]),
        (&json!("SignalResource"), &json!("Instance"), &json!("container-1"), &json!("SUCCESS"))
    );
    let requests = signal_requests(&emulator, &stack);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(
        (&requests[0]["access_key"], &requests[0]["security_token"], &requests[0]["status"]),
        (&json!(ACCESS_KEY), &json!(true), &json!(200)),
        "{:#}",
        requests[0]
    );
}

#[test]
fn the_arm64_image_is_built_from_the_same_context_and_its_binary_runs() {
    let image = Image::get("arm64");
    eprintln!(
        "arm64 image: its binary runs under qemu-aarch64-static {}",
        if binfmt_runs_aarch64() { "through binfmt_misc" } else { "mounted into the container as its entrypoint" }
    );
    assert_image_is_the_context(image);
    assert_help_works(image);
    let emulator = Emulator::shared();
    assert_get_metadata_with_keys(image, &emulator);
    assert_handle_signal(image, &emulator);
}

/// The binary in the arm64 root is an aarch64 one (a check of the context itself, so
/// that an arm64 image with an x86_64 binary in it cannot pass above).
#[test]
fn the_arm64_root_holds_an_aarch64_binary() {
    let binary = arch_root("arm64").join("opt/aws/bin/cfn-bootstrap");
    let elf = std::fs::read(&binary).unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    assert_eq!(&elf[..4], b"\x7fELF", "{} is not an ELF file", binary.display());
    // e_machine, little-endian at offset 18: 183 is EM_AARCH64.
    assert_eq!(u16::from_le_bytes([elf[18], elf[19]]), 183, "{} is not an aarch64 binary", binary.display());
}
