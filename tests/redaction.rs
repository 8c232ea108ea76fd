//! URLs with a password or a presigned signature never reach the logs or stderr as
//! written (SEC-02, LOG-08): cfn-init's download errors for `files` and `sources`, and
//! any line a command prints, show the URL with `REDACTED` in their place and otherwise
//! keep the reference's wording. The rpm tool's lines are in tests/init_system.rs.

mod common;
use common::*;
use serde_json::{Value, json};

const PASSWORD: &str = "s3cretpw";
const SIGNATURE: &str = "SIGsecret123";
const TOKEN: &str = "TOKsecret456";
const KEY_ID: &str = "AKIDREDACTME";

/// A presigned-style URL on `netloc` with userinfo, and how messages must show it.
fn secret_url(netloc: &str, path: &str) -> (String, String) {
    let query = |credential: &str, signature: &str, token: &str| {
        format!(
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={credential}&X-Amz-Expires=300\
             &X-Amz-Signature={signature}&X-Amz-Security-Token={token}"
        )
    };
    let credential = format!("{KEY_ID}%2F20260101%2Fus-east-1%2Fs3%2Faws4_request");
    (
        format!("http://alice:{PASSWORD}@{netloc}{path}?{}", query(&credential, SIGNATURE, TOKEN)),
        format!("http://REDACTED@{netloc}{path}?{}", query("REDACTED", "REDACTED", "REDACTED")),
    )
}

/// A server that refuses every request with `403 denied` (terminal, so no retries and
/// no back-off sleeps; a 404 would be retried five times); it records what it was asked.
fn refusing_server() -> (String, Heads) {
    let (address, heads) = serve_recorded("127.0.0.1", |_, _| {
        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\nConnection: close\r\n\r\ndenied".to_vec()
    });
    (address.to_string(), heads)
}

fn cfn_init(sandbox: &Sandbox, config: Value) -> Run {
    let file = sandbox.path(&format!("{}.json", unique("metadata")));
    std::fs::write(&file, json!({"AWS::CloudFormation::Init": {"config": config}}).to_string()).unwrap();
    sandbox.cmd("cfn-init").arg("-v").arg(&file).run()
}

/// Every log the run left, and its stdout and stderr, hold none of the secrets.
fn assert_no_secret(sandbox: &Sandbox, run: &Run) {
    let mut texts = vec![("stdout", run.stdout.clone()), ("stderr", run.stderr.clone())];
    for name in ["cfn-init.log", "cfn-init-cmd.log", "cfn-wire.log"] {
        texts.push((name, std::fs::read_to_string(sandbox.path("log").join(name)).unwrap_or_default()));
    }
    for (name, text) in texts {
        for secret in [PASSWORD, SIGNATURE, TOKEN, KEY_ID] {
            assert!(!text.contains(secret), "{secret} reached {name}:\n{text}");
        }
    }
}

#[test]
fn a_files_download_error_shows_the_url_redacted() {
    let (netloc, heads) = refusing_server();
    let (url, shown) = secret_url(&netloc, "/private/app.conf");
    let sandbox = Sandbox::new();
    let target = sandbox.path("app.conf").display().to_string();
    let run = cfn_init(&sandbox, json!({"files": {&target: {"source": url}}}));
    let error = format!("Failed to retrieve {shown}: HTTP Error 403 : denied");
    run.code(1).stderr_is(&format!("Error occurred during build: {error}\n"));
    let log = sandbox.log("cfn-init.log");
    assert!(log.contains(&format!("[DEBUG] Retrieving contents from {shown}\n")), "{log}");
    assert!(log.contains(&format!("[ERROR] Error encountered during build of config: {error}\n")), "{log}");
    let wire = sandbox.log("cfn-wire.log");
    assert!(wire.contains(&format!("[DEBUG] Response: 403 {shown} [headers: {{")), "{wire}");
    assert_no_secret(&sandbox, &run);
    // The request itself carried the signature: only what is shown is redacted.
    let heads = heads.lock().unwrap().clone();
    assert!(heads.len() == 1 && heads[0].contains(&format!("X-Amz-Signature={SIGNATURE}")), "{heads:?}");
    assert!(!sandbox.path("app.conf").exists());
}

#[test]
fn a_sources_download_error_shows_the_url_redacted() {
    let (netloc, heads) = refusing_server();
    let (url, shown) = secret_url(&netloc, "/releases/app.tgz");
    let sandbox = Sandbox::new();
    let target = sandbox.path("app").display().to_string();
    let run = cfn_init(&sandbox, json!({"sources": {&target: url}}));
    let error = format!("Failed to retrieve {shown}: HTTP Error 403 : denied");
    run.code(1).stderr_is(&format!("Error occurred during build: {error}\n"));
    let log = sandbox.log("cfn-init.log");
    assert!(
        log.contains(&format!("[ERROR] HTTP Error 403 : denied: Retrieving {shown} failed (attempt 1)\n")),
        "{log}"
    );
    assert!(log.contains(&format!("[ERROR] Error encountered during build of config: {error}\n")), "{log}");
    assert_no_secret(&sandbox, &run);
    assert_eq!(heads.lock().unwrap().len(), 1);
    assert!(!sandbox.path("app").exists());
}

#[test]
fn urls_a_command_prints_are_redacted_in_the_command_log() {
    let (url, shown) = secret_url("downloads.example", "/x.bin");
    let sandbox = Sandbox::new();
    // The command fails, so its output is also quoted in cfn-init.log and on stderr.
    let command = format!("echo 'fetching {url} now'; exit 3");
    let run = cfn_init(&sandbox, json!({"commands": {"fetch": {"command": command}}}));
    run.code(1);
    assert_no_secret(&sandbox, &run);
    let cmd_log = sandbox.log("cfn-init-cmd.log");
    assert!(cmd_log.contains(&format!("\tfetching {shown} now\n")), "{cmd_log}");
}

#[test]
fn a_refused_handle_url_is_shown_redacted() {
    // `HTTPS://` is refused, as by the reference (case-sensitive), but it is still a
    // presigned URL: SIG-05's message shows it redacted.
    let (url, shown) = secret_url("waitcondition.example", "/arn%3Aaws%3Acloudformation/h");
    let url = url.replacen("http://", "HTTPS://", 1);
    let shown = shown.replacen("http://", "HTTPS://", 1);
    let sandbox = Sandbox::new();
    let run = sandbox.cmd("cfn-signal").args(["-i", "x", &url]).run();
    run.code(1).stderr_is(&format!("Error: Invalid WaitConditionHandle URL specified: {shown}\n"));
    assert_no_secret(&sandbox, &run);
    let run = sandbox.cmd("cfn-send-cmd-event").arg(format!("--event-handle={url}")).run();
    run.code(1).stderr_is(&format!("Error: Invalid EventHandle URL specified: {shown}\n"));
    assert_no_secret(&sandbox, &run);
}
