//! The isolated Debian root of the system tests (built and cached by `cargo xtask test`,
//! xtask/src/testroot.rs): each test overlays it (overlayfs in a private mount
//! namespace, so the cache never changes) and runs one shell script with `chroot`
//! inside private mount, PID and network namespaces.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The cached root. These tests need root and the root `cargo xtask test` builds; they
/// fail with that explanation otherwise, never skip.
pub fn rootfs() -> PathBuf {
    rootfs_marked(".cfn-testroot-v3")
}

/// The cached root with the package managers of RPM distributions, pip3 and gem, and
/// their local sources (xtask/src/testroot/package_managers.rs).
pub fn rootfs_with_package_managers() -> PathBuf {
    rootfs_marked(".cfn-testroot-v4")
}

/// The cached root, which must carry `marker` (the version of its contents).
fn rootfs_marked(marker: &str) -> PathBuf {
    // SAFETY: geteuid cannot fail.
    let is_root = unsafe { libc::geteuid() } == 0;
    assert!(is_root, "this test needs root (mount, PID and network namespaces)");
    let root = std::env::var_os("CFN_TEST_ROOTFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::workspace().join("target/testroot/bookworm"));
    assert!(
        root.join(marker).is_file(),
        "{} is not a usable test root: run `cargo xtask test`, which builds it",
        root.display()
    );
    root
}

/// One overlay of the cached root: files can be put in before the run, and the logs
/// and changed files are read from the upper layer afterwards.
pub struct Overlay {
    _dir: tempfile::TempDir,
    lower: PathBuf,
    upper: PathBuf,
    work: PathBuf,
    merged: PathBuf,
    /// Bind-mount the binary under test at /opt/aws/bin/cfn-init.
    with_cfn_init: bool,
}

pub struct Ran {
    pub code: i32,
    pub out: String,
}

impl Overlay {
    pub fn new(lower: PathBuf) -> Overlay {
        let base = super::workspace().join("target/testroot/runs");
        std::fs::create_dir_all(&base).unwrap();
        let dir = tempfile::tempdir_in(base).unwrap();
        let [upper, work, merged] = ["upper", "work", "merged"].map(|d| dir.path().join(d));
        for d in [&upper, &work, &merged] {
            std::fs::create_dir_all(d).unwrap();
        }
        Overlay { lower, upper, work, merged, _dir: dir, with_cfn_init: false }
    }

    /// Makes the binary under test `/opt/aws/bin/cfn-init` in the root.
    pub fn with_cfn_init(mut self) -> Overlay {
        self.put("/opt/aws/bin/cfn-init", "", 0o755);
        self.with_cfn_init = true;
        self
    }

    /// Writes a file into the root before the run.
    pub fn put(&self, path: &str, content: &str, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        let target = self.upper.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, content).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Metadata for cfn-init at `/tmp/<name>.json`.
    pub fn metadata(&self, name: &str, init: serde_json::Value) {
        let doc = serde_json::json!({ "AWS::CloudFormation::Init": init });
        self.put(&format!("/tmp/{name}.json"), &doc.to_string(), 0o644);
    }

    /// Copies a host file or directory into the root's `/tmp/<name>`.
    pub fn copy_in(&self, name: &str, from: &Path) {
        let tmp = self.upper.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let status = Command::new("cp").arg("-a").arg(from).arg(tmp.join(name)).status().unwrap();
        assert!(status.success(), "copy {} into the root", from.display());
    }

    /// Copies the contents of a host directory into the root, paths kept.
    pub fn copy_tree_in(&self, dir: &Path) {
        let status =
            Command::new("cp").arg("-a").arg(format!("{}/.", dir.display())).arg(&self.upper).status().unwrap();
        assert!(status.success(), "copy {} into the root", dir.display());
    }

    /// The overlay's upper layer: everything the runs created or changed in the root.
    pub fn upper(&self) -> &Path {
        &self.upper
    }

    /// A file the run left in the root (from the upper layer).
    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.upper.join(path.trim_start_matches('/'))).unwrap_or_default()
    }

    /// Runs `script` with `/bin/sh -e` inside the root, in private mount, PID and
    /// network namespaces. Its stdout and stderr are merged.
    pub fn run(&self, script: &str) -> Ran {
        let outside = r#"
set -e
mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$UPPER,workdir=$WORK" "$MERGED"
mount -t proc proc "$MERGED/proc"
mount --bind /dev "$MERGED/dev"
mount -t tmpfs tmpfs "$MERGED/run"
[ -z "$BINARY" ] || mount --bind "$BINARY" "$MERGED/opt/aws/bin/cfn-init"
exec chroot "$MERGED" /usr/bin/env -i PATH="$CHROOT_PATH" HOME=/root LANG=C.UTF-8 TZ=UTC /bin/sh -ec "$SCRIPT"
"#;
        let binary = if self.with_cfn_init { super::binary() } else { PathBuf::new() };
        let output = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "--pid", "--fork", "--net", "sh", "-c", outside])
            .env("LOWER", &self.lower)
            .env("UPPER", &self.upper)
            .env("WORK", &self.work)
            .env("MERGED", &self.merged)
            .env("BINARY", binary)
            .env("CHROOT_PATH", PATH)
            .env("SCRIPT", format!("exec 2>&1\n{script}"))
            .output()
            .expect("run unshare");
        let out = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        Ran { code: output.status.code().unwrap_or(-1), out }
    }
}

/// The messages of a cfn-init log, without timestamps.
pub fn messages(log: &str) -> Vec<String> {
    log.lines().map(|l| l.get(24..).unwrap_or(l).to_string()).collect()
}

/// Whether a cfn-init log holds exactly this message.
pub fn has(log: &str, line: &str) -> bool {
    messages(log).iter().any(|m| m == line)
}

/// A script step that runs cfn-init on `/tmp/<name>.json`, prints `<name> exit <code>`
/// and its output, then moves the log to `/tmp/<name>.log` (so each run's log can be
/// read on its own) and appends the command log to `/tmp/cmd.log`.
pub fn cfn_init(name: &str) -> String {
    format!(
        "rc=0; /opt/aws/bin/cfn-init -v /tmp/{name}.json > /tmp/{name}.out 2>&1 || rc=$?\n\
         echo \"{name} exit $rc\"; cat /tmp/{name}.out\n\
         mv /var/log/cfn-init.log /tmp/{name}.log; cat /var/log/cfn-init-cmd.log >> /tmp/cmd.log; rm -f /var/log/cfn-init-cmd.log\n"
    )
}

/// A log's messages without timestamps, tracebacks and tool output (the lines that
/// follow an `Output:` message), with Python 2 list reprs (`[u'a']`) written as
/// Python 3 prints them, as this port does.
pub fn normalized(log: &str) -> Vec<String> {
    let stamped = |l: &str| l.len() > 24 && l.as_bytes()[4] == b'-' && l.as_bytes()[19] == b',';
    log.lines()
        .filter(|l| stamped(l))
        .map(|l| {
            let m = l[24..].replace("[u'", "['").replace(", u'", ", '");
            match m.find("output: ").or_else(|| m.find("Output: ")) {
                Some(i) => m[..i + 7].to_string(),
                None => m,
            }
        })
        .collect()
}

/// Runs the recorded case `tests/golden/cfn-init-system/<case>` (its metadata, files and
/// script) with this port in an overlay of `root` and returns the overlay and the
/// script's output.
pub fn replay(root: PathBuf, case: &str) -> (Overlay, String) {
    let dir = super::workspace().join("tests/golden/cfn-init-system").join(format!("{case}.in"));
    let o = Overlay::new(root).with_cfn_init();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            o.put(&format!("/tmp/cases/{name}"), &std::fs::read_to_string(&path).unwrap(), 0o644);
        }
    }
    let files = dir.join("files");
    if files.is_dir() {
        o.copy_tree_in(&files);
    }
    let run = r#"run() {
  rc=0; /opt/aws/bin/cfn-init -v "/tmp/cases/$1.json" > "/tmp/out/$1.stdout" 2> "/tmp/out/$1.stderr" || rc=$?
  echo "$rc" > "/tmp/out/$1.exit"
  mv /var/log/cfn-init.log "/tmp/out/$1.cfn-init.log" 2>/dev/null || true
  mv /var/log/cfn-init-cmd.log "/tmp/out/$1.cfn-init-cmd.log" 2>/dev/null || true
  rm -rf /var/lib/cfn-init
  echo "== after $1 (exit $rc)"
}
mkdir -p /tmp/out
"#;
    let script = std::fs::read_to_string(dir.join("script.sh")).unwrap();
    let ran = o.run(&format!("{run}{script}"));
    (o, ran.out)
}

pub fn golden(case: &str, file: &str) -> String {
    let path = super::workspace().join("tests/golden/cfn-init-system").join(case).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every line of the reference's logs of one recorded run is in ours, in order (issue
/// 33; `common::reference_lines`): the main log, and the command log without the
/// package managers' and services' own output (its tab-indented lines), which is
/// theirs and holds times of its own.
pub fn keeps_reference_lines(o: &Overlay, case: &str, run: &str) {
    let ours = normalized(&o.read(&format!("/tmp/out/{run}.cfn-init.log")));
    let theirs = normalized(&golden(case, &format!("{run}.cfn-init.log")));
    super::reference_lines::assert_keeps_reference_lines(&format!("cfn-init-system/{case}/{run}"), &ours, &theirs);
    keeps_reference_command_lines(o, case, run);
}

/// The command log's part of [`keeps_reference_lines`].
pub fn keeps_reference_command_lines(o: &Overlay, case: &str, run: &str) {
    let ours = command_lines(&o.read(&format!("/tmp/out/{run}.cfn-init-cmd.log")));
    let theirs = command_lines(&golden(case, &format!("{run}.cfn-init-cmd.log")));
    let scenario = format!("cfn-init-system/{case}/{run}.cfn-init-cmd.log");
    super::reference_lines::assert_keeps_reference_lines(&scenario, &ours, &theirs);
}

/// A command log's messages (`[LEVEL] text`) without times, pids and the commands' own
/// output.
fn command_lines(log: &str) -> Vec<String> {
    normalized(log)
        .into_iter()
        .map(|line| match line.split_once(' ') {
            Some((pid, rest)) if pid.starts_with('P') && pid[1..].bytes().all(|b| b.is_ascii_digit()) => {
                rest.to_string()
            }
            _ => line,
        })
        .filter(|line| !line.split_once("] ").is_some_and(|(_, message)| message.starts_with('\t')))
        .collect()
}

/// Compares one recorded run: exit code, stdout, stderr and the main log.
pub fn same_run(o: &Overlay, case: &str, run: &str) {
    keeps_reference_lines(o, case, run);
    for file in ["exit", "stdout", "stderr"] {
        let (ours, theirs) = (o.read(&format!("/tmp/out/{run}.{file}")), golden(case, &format!("{run}.{file}")));
        assert_eq!(ours, theirs, "{case}/{run}.{file}");
    }
    let ours = normalized(&o.read(&format!("/tmp/out/{run}.cfn-init.log")));
    let theirs = normalized(&golden(case, &format!("{run}.cfn-init.log")));
    assert_eq!(ours, theirs, "{case}/{run}.cfn-init.log");
}
