//! What a run does not do: cfn-init from a file never builds the I/O runtime or reads
//! a trust store, and a plain-http API call reads no certificate. These are what keep a
//! one-shot tool's start-up cheap (issue budgets; measured by `cargo xtask bench`),
//! checked here on the system calls with strace.

mod common;
use common::*;
use serde_json::json;

/// The traced calls of one run: `(program, arguments…)` under `strace -f`.
fn traced(sandbox: &Sandbox, tool: &str, args: &[&str]) -> (Run, String) {
    let trace = sandbox.path(&format!("{}.strace", unique("trace")));
    let run = sandbox
        .cmd_via("strace", tool)
        .args(["-f", "-qq", "-e", "trace=epoll_create1,openat,open", "-o"])
        .arg(&trace)
        .arg(sandbox.path("bin").join(tool))
        .args(args)
        .run();
    let text = std::fs::read_to_string(&trace).unwrap_or_else(|e| panic!("no strace output ({e}): {run}"));
    (run, text)
}

fn certificate_files(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|l| l.contains("open") && (l.contains(".pem") || l.contains(".crt") || l.contains("/etc/ssl")))
        .collect()
}

#[test]
fn cfn_init_from_a_file_builds_no_runtime_and_reads_no_trust_store() {
    let sandbox = Sandbox::new();
    let target = sandbox.path("out.txt");
    let metadata =
        json!({"AWS::CloudFormation::Init": {"config": {"files": {target.display().to_string(): {"content": "x"}}}}});
    let file = sandbox.path("metadata.json");
    std::fs::write(&file, metadata.to_string()).unwrap();
    let (run, trace) = traced(&sandbox, "cfn-init", &[file.to_str().unwrap()]);
    run.code(0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
    assert!(!trace.contains("epoll_create1"), "cfn-init built an I/O runtime:\n{trace}");
    assert_eq!(certificate_files(&trace), Vec::<&str>::new());
}

#[test]
fn a_plain_http_api_call_reads_no_certificate_and_no_aws_profile() {
    let emulator = Emulator::shared();
    let stack = emulator.create_stack(&unique("cost"), &instance_template(&json!({"k": "v"})));
    let sandbox = Sandbox::new();
    let (run, trace) = traced(
        &sandbox,
        "cfn-get-metadata",
        &[
            "-s",
            &stack,
            "-r",
            "Instance",
            "-k",
            "k",
            "--url",
            &emulator.url,
            "--access-key",
            ACCESS_KEY,
            "--secret-key",
            SECRET_KEY,
        ],
    );
    run.code(0).stdout_is("v\n");
    assert!(trace.contains("epoll_create1"), "the call needs the runtime:\n{trace}");
    assert_eq!(certificate_files(&trace), Vec::<&str>::new());
    let profiles: Vec<&str> = trace.lines().filter(|l| l.contains("/.aws/")).collect();
    assert_eq!(profiles, Vec::<&str>::new(), "explicit keys need no profile");
}
