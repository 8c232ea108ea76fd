//! The reference's recorded `sources` runs (tests/golden/cfn-init-sources, 20 cases)
//! replayed through our cfn-init: the same archives, made by the recorder itself, from
//! the same local server (the GitHub-looking URLs through it as the HTTP proxy), then
//! the exit code and every line of the reference's cfn-init.log, in its order (issue 33,
//! `common::reference_lines`). What lands on disk, and where we differ on purpose
//! (BUG-TRAVERSAL, BUG-SYMLINK, BUG-ZIPMODE), is asserted by tests/init_sources.rs.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The port the recorder's server had; the logs name it.
const RECORDED_PORT: &str = "8137";
/// The recorder's root, which the recording shows as `{ROOT}`.
const RECORDED_ROOT: &str = "/tmp/cfnsrc-golden";

fn golden() -> PathBuf {
    workspace().join("tests/golden/cfn-init-sources")
}

fn recorder() -> PathBuf {
    golden().join("record.py")
}

/// The recorder's server (`record.py --serve`) on a free loopback port; stopped on drop
/// by closing its stdin.
struct ArchiveServer {
    child: Child,
    port: String,
}

impl ArchiveServer {
    fn start() -> ArchiveServer {
        let mut child = Command::new("python3")
            .arg(recorder())
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the recorder's server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().to_string();
        assert!(port.parse::<u16>().is_ok(), "the server printed {line:?} instead of its port");
        ArchiveServer { child, port }
    }
}

impl Drop for ArchiveServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        if self.child.wait().is_err() {
            let _ = self.child.kill();
        }
    }
}

/// Our run of one case: (exit code, stderr, cfn-init.log), with the case's root and the
/// server's port written as the recording has them.
fn replay(case: &str, server: &ArchiveServer) -> (String, String, Vec<String>) {
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path().display().to_string();
    let to_ours = |text: &str| text.replace("{ROOT}", &root).replace(RECORDED_PORT, &server.port);
    // The recorder made its archives for its own root, which absolute members still name.
    let to_recorded = |text: &str| {
        text.replace(&root, "{ROOT}").replace(RECORDED_ROOT, "{ROOT}").replace(&server.port, RECORDED_PORT)
    };
    let expected = golden().join(case);
    let work = root_dir.path().join(case);
    std::fs::create_dir(&work).unwrap();
    let setup = expected.join("setup.sh");
    if setup.exists() {
        let status = Command::new("bash")
            .arg("-c")
            .arg(to_ours(&read(&setup)))
            .env("SOURCES_RECORD", recorder())
            .current_dir(&work)
            .status()
            .unwrap();
        assert!(status.success(), "the setup of {case} failed");
    }
    std::fs::write(root_dir.path().join(format!("{case}.json")), to_ours(&read(&expected.join("metadata.json"))))
        .unwrap();
    let argv: Vec<String> = serde_json::from_str(&to_ours(&read(&expected.join("argv")))).unwrap();
    let sandbox = Sandbox::new();
    let proxy = format!("http://127.0.0.1:{}", server.port);
    let mut command = sandbox
        .cmd("cfn-init")
        .args(&argv[1..])
        .env("HTTP_PROXY", &proxy)
        .env("HTTPS_PROXY", &proxy)
        .env("NO_PROXY", "127.0.0.1,localhost");
    command.cmd.current_dir(&work);
    let run = command.run();
    let log = reference_lines::normalise(&to_recorded(&sandbox.log("cfn-init.log")), "{ROOT}");
    (format!("{}\n", run.code), to_recorded(&run.stderr), log)
}

/// The cases whose exit code differs on purpose: the reference extracted an archive
/// that writes outside its target (exit 0); we refuse it (exit 1). The lines of the
/// build that went on are in `reference_lines::NOT_KEPT`.
const EXIT_DIFFERS: &[(&str, &str)] = &[("s-traversal-prefix", "BUG-TRAVERSAL"), ("s-symlink-escape", "BUG-SYMLINK")];

/// The names of the recorded cases, from cases.tsv.
fn cases() -> Vec<String> {
    read(&golden().join("cases.tsv")).lines().skip(1).map(|l| l.split('\t').next().unwrap().to_string()).collect()
}

#[test]
fn every_recorded_sources_run_keeps_the_reference_exit_code_and_log_lines() {
    let server = ArchiveServer::start();
    let cases = cases();
    assert_eq!(cases.len(), 20, "the recorded sources cases");
    let mut failures = Vec::new();
    for case in &cases {
        let (exit, stderr, ours) = replay(case, &server);
        let expected = golden().join(case);
        if let Some((_, why)) = EXIT_DIFFERS.iter().find(|(name, _)| name == case) {
            if exit != "1\n" || read(&expected.join("exit")) != "0\n" {
                failures
                    .push(format!("{case}: exit {exit:?}: expected 1 where the reference gave 0 ({why})\n{stderr}"));
            }
        } else if exit != read(&expected.join("exit")) {
            failures.push(format!("{case}: exit {exit:?}, the reference {:?}\n{stderr}", read(&expected.join("exit"))));
        }
        // The reference logs the random directory of its GitHub stripping; the
        // recording has `{TMPDIR}` there.
        let theirs = reference_lines::normalise(&read(&expected.join("cfn-init.log")), "{ROOT}");
        let missing = reference_lines::failures(&format!("cfn-init-sources/{case}/cfn-init.log"), &ours, &theirs);
        if !missing.is_empty() {
            failures.push(format!(
                "{}\n--- ours\n{}\n--- reference\n{}",
                missing.join("\n"),
                ours.join("\n"),
                theirs.join("\n")
            ));
        }
    }
    println!("{}", reference_lines::tally());
    let unused = reference_lines::unused(|scenario| scenario.starts_with("cfn-init-sources/"));
    assert!(unused.is_empty(), "NOT_KEPT entries that excuse no line any more:\n{}", unused.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
