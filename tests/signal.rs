//! cfn-signal end to end against the emulator (SIG-01..09, API-02): SignalResource for a
//! CreationPolicy with keys and with the instance identity, WaitConditionHandle URLs
//! (plain, base64, tampered, retried, proxied), the typical user-data line, and the
//! reference's messages for every way it can go wrong.

mod common;
use common::waiting::*;
use common::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// What `hostname -f` says, or `hostname` where the name has no canonical form: the
/// default `--id` off EC2 (SIG-02).
fn host_fqdn() -> String {
    let ask = |args: &[&str]| {
        let out = std::process::Command::new("hostname").args(args).output().expect("run hostname");
        out.status.success().then(|| String::from_utf8(out.stdout).unwrap().trim().to_string())
    };
    ask(&["-f"]).filter(|name| !name.is_empty()).or_else(|| ask(&[])).expect("hostname prints this host's name")
}

/// `text` in base64, as coreutils writes it (an independent encoder).
fn base64(text: &str) -> String {
    let mut child = std::process::Command::new("base64")
        .arg("-w0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run base64");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// The recorded reference output of a cfn-signal case, without Python's logging
/// warning, and with the one documented help difference (`-u`, SIG-01) applied.
fn golden_stderr(case: &str) -> String {
    let text: String = read(&golden_dir().join("cfn-signal").join(format!("{case}.stderr")))
        .lines()
        .filter(|line| !line.starts_with("No handlers could be found for logger"))
        .map(|line| format!("{line}\n"))
        .collect();
    let url_1_4 = "    --url=ENDPOINT      The CloudFormation service URL. The endpoint URL must\n";
    let url_with_u = "    -u ENDPOINT, --url=ENDPOINT\n                        The CloudFormation service URL. The endpoint URL must\n";
    if text.contains("\nOptions:\n") {
        assert_eq!(text.matches(url_1_4).count(), 1, "{text}");
        text.replacen(url_1_4, url_with_u, 1)
    } else {
        text
    }
}

/// A TCP relay in front of the emulator that keeps the raw bytes clients send, to see
/// headers exactly as they travel (the emulator's journal cannot tell an empty
/// `Content-Type` from a missing one).
struct WireTap {
    url: String,
    sent: Arc<Mutex<Vec<u8>>>,
}

impl WireTap {
    fn start(upstream: &str) -> WireTap {
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let sent = Arc::new(Mutex::new(Vec::new()));
        let record = sent.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (record, upstream) = (record.clone(), upstream.clone());
                std::thread::spawn(move || {
                    let Ok(server) = TcpStream::connect(&upstream) else { return };
                    let (mut from_server, mut to_client) = (server.try_clone().unwrap(), client.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from_server, &mut to_client);
                    });
                    let (mut from_client, mut to_server) = (client, server);
                    let mut buf = [0u8; 16384];
                    loop {
                        let n = match from_client.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        // Recorded before it is relayed: once the client has its
                        // answer, its request is in `sent`.
                        record.lock().unwrap().extend_from_slice(&buf[..n]);
                        if to_server.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        WireTap { url, sent }
    }

    fn sent(&self) -> String {
        String::from_utf8_lossy(&self.sent.lock().unwrap()).into_owned()
    }
}

// ---------------------------------------------------------------------------------
// SignalResource (SIG-08, API-02)
// ---------------------------------------------------------------------------------

#[test]
fn exit_code_zero_completes_a_creation_policy_with_keys() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("sig-ok"), &creation_policy_template());
    assert_eq!(stack_status(&emulator, &stack), "CREATE_IN_PROGRESS");

    let sandbox = Sandbox::new();
    let run = sandbox
        .cmd("cfn-signal")
        .args(["-e", "0", "--stack", &stack, "--resource", "Instance", "-i", "web-1"])
        .with_keys(&emulator)
        .run();
    // SIG-08: silent on success.
    run.code(0).stdout_is("").stderr_is("");
    eprintln!("resource-mode signal with keys took {:?}", run.elapsed);

    assert_eq!(stack_status(&emulator, &stack), "CREATE_COMPLETE");
    let signals = signals_for(&emulator, &stack);
    assert_eq!(signals.len(), 1, "{signals:#?}");
    assert_eq!(
        (&signals[0]["via"], &signals[0]["LogicalResourceId"], &signals[0]["UniqueId"], &signals[0]["Status"]),
        (&json!("SignalResource"), &json!("Instance"), &json!("web-1"), &json!("SUCCESS"))
    );
    assert_eq!(signals[0]["accepted"], true);
    // API-02 on the wire: through aws-sdk-cloudformation (awsQuery: a POST form),
    // SigV4-signed (the emulator validated it), one attempt.
    let requests = signal_requests(&emulator, &stack);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0]["auth_scheme"], "AWS4-HMAC-SHA256");
    assert_eq!(requests[0]["status"], 200);
    assert_eq!(requests[0]["method"], "POST");
    let form = &requests[0]["form"];
    assert_eq!(
        (&form["Action"], &form["Version"], &form["LogicalResourceId"], &form["UniqueId"], &form["Status"]),
        (&json!("SignalResource"), &json!("2010-05-15"), &json!("Instance"), &json!("web-1"), &json!("SUCCESS"))
    );
    // LOG-07: the tool log is at DEBUG and tells what was sent.
    let log = sandbox.log("cfn-init.log");
    assert!(
        log.contains(&format!(
            "[DEBUG] Signaling resource Instance in stack {stack} with unique ID web-1 and status SUCCESS"
        )),
        "{log}"
    );
}

#[test]
fn a_failing_exit_code_rolls_the_stack_back_and_the_id_defaults_to_the_host_name() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("sig-fail"), &creation_policy_template());
    let sandbox = Sandbox::new();
    // `-u` is the short form of `--url` (SIG-01, 2.0 documentation); no `--id`: off EC2
    // the default is the host's name (SIG-02), found without waiting for IMDS.
    let run = sandbox
        .cmd("cfn-signal")
        .args(["-e", "1", "--stack", &stack, "--resource", "Instance", "-u", &emulator.url])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .run();
    run.code(0).stdout_is("").stderr_is("");
    assert!(run.elapsed.as_secs() < 5, "{run}");

    assert_eq!(stack_status(&emulator, &stack), "ROLLBACK_COMPLETE");
    let signals = signals_for(&emulator, &stack);
    assert_eq!(signals.len(), 1, "{signals:#?}");
    assert_eq!(signals[0]["Status"], "FAILURE");
    assert_eq!(signals[0]["UniqueId"], host_fqdn());
}

#[test]
fn status_comes_from_the_exit_code_then_from_success() {
    // SIG-03 on the wire; `--accept-all-signals` lets one stack take every signal.
    let emulator = Emulator::start(&["--accept-all-signals"]);
    let stack = emulator.create_stack(&unique("sig-status"), &instance_template(&json!({})));
    let sandbox = Sandbox::new();
    let cases: &[(&[&str], &str)] = &[
        (&[], "SUCCESS"),
        (&["-s", "true"], "SUCCESS"),
        (&["-s", "false"], "FAILURE"),
        (&["-e", "0"], "SUCCESS"),
        (&["-e", "2", "-s", "true"], "FAILURE"),
        (&["--exit-code=-1"], "FAILURE"),
        // The reference sends FAILURE here although its documentation says -e wins;
        // kept deliberately (README, Compatibility).
        (&["-e", "0", "-s", "false"], "FAILURE"),
    ];
    for (i, (args, expected)) in cases.iter().enumerate() {
        let id = format!("case-{i}");
        sandbox
            .cmd("cfn-signal")
            .args(*args)
            .args(["--stack", &stack, "--resource", "Instance", "--id", &id])
            .with_keys(&emulator)
            .run()
            .code(0)
            .stderr_is("");
        let signals = signals_for(&emulator, &stack);
        let sent = signals.iter().find(|s| s["UniqueId"] == id.as_str()).unwrap_or_else(|| panic!("{signals:#?}"));
        assert_eq!(sent["Status"], *expected, "cfn-signal {args:?}");
    }
}

#[test]
fn a_signal_to_a_completed_stack_is_refused_once() {
    let emulator = Emulator::shared();
    // No CreationPolicy: the stack is CREATE_COMPLETE at once.
    let stack = emulator.create_stack(&unique("sig-done"), &instance_template(&json!({})));
    let sandbox = Sandbox::new();
    let run = sandbox
        .cmd("cfn-signal")
        .args(["--stack", &stack, "--resource", "Instance", "-i", "x"])
        .with_keys(&emulator)
        .run();
    run.code(1).stdout_is("");
    let stack_id = describe_stack(&emulator, &stack)["StackId"].as_str().unwrap().to_string();
    run.stderr_is(&format!("ValidationError: Stack {stack_id} is in CREATE_COMPLETE state and cannot be signaled\n"));
    // A Sender fault is final (NET-03): one request.
    assert_eq!(signal_requests(&emulator, &stack).len(), 1);
}

#[test]
fn throttled_signal_resource_calls_are_retried() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("sig-throttle"), &creation_policy_template());
    emulator.post_json("/_emu/faults", &json!({"action": "SignalResource", "stack": stack, "count": 1}));
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-signal")
        .args(["--stack", &stack, "--resource", "Instance", "-i", "x"])
        .with_keys(&emulator)
        .run()
        .code(0)
        .stderr_is("");
    let statuses: Vec<Value> = signal_requests(&emulator, &stack).iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!(400), json!(200)]);
    assert_eq!(stack_status(&emulator, &stack), "CREATE_COMPLETE");
}

#[test]
fn an_unreachable_endpoint_is_retried_then_reported_on_one_line() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let run = sandbox
        .cmd("cfn-signal")
        .args(["--stack", "s", "--resource", "r", "--url", &format!("http://127.0.0.1:{port}")])
        .args(["--access-key", "a", "--secret-key", "b"])
        .run();
    run.code(1).stdout_is("");
    assert!(run.stderr.starts_with(&format!("Could not reach http://127.0.0.1:{port}/: ")), "{run}");
    assert!(run.stderr.contains("Connection refused"), "{run}");
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
    assert_eq!(sandbox.log("cfn-init.log").matches("SignalResource failed (attempt").count(), 5);
}

#[test]
fn no_credentials_off_ec2_is_the_reference_error() {
    let sandbox = Sandbox::new();
    let run = sandbox.cmd("cfn-signal").args(["--stack", "s", "--resource", "r", "--url", "http://127.0.0.1:9"]).run();
    run.code(1).stdout_is("").stderr_has("In order to sign requests, 169.254.169.254 must be accessible");
    assert!(run.elapsed.as_secs() < 5, "{run}");
}

// ---------------------------------------------------------------------------------
// Mode selection and validation (SIG-04, SIG-05): the reference's words, byte for byte
// ---------------------------------------------------------------------------------

#[test]
fn mode_errors_match_the_reference_and_never_touch_imds() {
    // IMDS is the emulator's, so its journal shows whether anything asked for the
    // instance id (the reference did, even for --help).
    let emulator = Emulator::start(&[]);
    let sandbox = Sandbox::new();
    let cases: &[(&str, &[&str])] = &[
        ("no-url-no-resource", &[]),
        ("stack-only", &["--stack", "s"]),
        ("resource-without-stack", &["--resource", "r"]),
        ("url-and-resource", &["--resource", "r", "http://127.0.0.1:9/x"]),
        ("invalid-wch-url", &["notaurl"]),
        ("invalid-wch-url-base64-nonurl", &["Zm9vYmFy"]),
    ];
    for (case, args) in cases {
        sandbox
            .cmd("cfn-signal")
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url)
            .args(*args)
            .run()
            .code(1)
            .stdout_is("")
            .stderr_is(&golden_stderr(case));
    }
    // An empty stack name is no stack name; an empty first argument is no URL.
    sandbox
        .cmd("cfn-signal")
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url)
        .args(["--stack", "", "--resource", "r"])
        .run()
        .code(1)
        .stderr_is(&golden_stderr("resource-without-stack"));
    sandbox
        .cmd("cfn-signal")
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url)
        .args(["", "http://127.0.0.1:9/x"])
        .run()
        .code(1)
        .stderr_is(&golden_stderr("no-url-no-resource"));
    for args in [&["--help"][..], &["-e", "abc"][..], &["--bogus"][..]] {
        let run = sandbox.cmd("cfn-signal").env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url).args(args).run();
        assert!(run.code == 0 || run.code == 2, "{run}");
    }
    let imds = emulator.get_json("/_emu/requests?kind=imds");
    assert_eq!(imds, json!([]), "no IMDS request for help, parse or mode errors");
}

// ---------------------------------------------------------------------------------
// WaitConditionHandle (SIG-05..07, SIG-09)
// ---------------------------------------------------------------------------------

#[test]
fn a_handle_signal_completes_the_wait_condition_with_its_data() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("wch-ok"), &wait_condition_template());
    assert_eq!(stack_status(&emulator, &stack), "CREATE_IN_PROGRESS");
    let handle = output(&emulator, &stack, "HandleUrl");
    assert!(handle.starts_with(&format!("{}/_waitcondition/", emulator.url)), "{handle}");

    // Through a relay that keeps the raw request; the URL's signature does not cover
    // the host, so the relayed URL is still valid.
    let tap = WireTap::start(&emulator.url);
    let relayed = handle.replacen(&emulator.url, &tap.url, 1);
    let sandbox = Sandbox::new();
    let run = sandbox.cmd("cfn-signal").args(["-d", "the data", "-i", "web-1", "-r", "all good", &relayed]).run();
    run.code(0).stdout_is("CloudFormation signaled successfully with SUCCESS.\n").stderr_is("");
    eprintln!("WaitConditionHandle signal took {:?}", run.elapsed);

    assert_eq!(stack_status(&emulator, &stack), "CREATE_COMPLETE");
    let data: Value = serde_json::from_str(&output(&emulator, &stack, "Data")).unwrap();
    assert_eq!(data, json!({"web-1": "the data"}));

    // SIG-06: the body exactly as the reference writes it.
    let signals = signals_for(&emulator, &stack);
    assert_eq!(signals.len(), 1, "{signals:#?}");
    assert_eq!(
        signals[0]["raw"],
        r#"{"Status": "SUCCESS", "Reason": "all good", "Data": "the data", "UniqueId": "web-1"}"#
    );
    assert_eq!(signals[0]["accepted"], true);
    // SIG-06: a PUT with a Content-Type header that is present and empty.
    let puts = handle_puts(&emulator, &handle);
    assert_eq!(puts.len(), 1, "{puts:#?}");
    assert_eq!(
        (&puts[0]["method"], &puts[0]["content_type"], &puts[0]["status"]),
        (&json!("PUT"), &Value::Null, &json!(200))
    );
    let wire = tap.sent();
    let head = wire.split("\r\n\r\n").next().unwrap();
    assert!(head.starts_with("PUT /_waitcondition/"), "{wire}");
    let content_types: Vec<&str> =
        head.lines().filter(|l| l.to_ascii_lowercase().starts_with("content-type:")).collect();
    assert_eq!(content_types.len(), 1, "{head}");
    assert_eq!(content_types[0].split_once(':').unwrap().1.trim(), "", "{head}");
    assert!(!head.to_ascii_lowercase().contains("authorization:"), "{head}");
    // The log never holds the URL's signature (SEC-02).
    let signature = handle.split("Signature=").nth(1).unwrap();
    assert!(!sandbox.log("cfn-init.log").contains(signature), "{}", sandbox.log("cfn-init.log"));
}

#[test]
fn a_base64_handle_url_works_and_a_failure_gets_the_default_reason() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("wch-b64"), &wait_condition_template());
    let handle = output(&emulator, &stack, "HandleUrl");
    let encoded = base64(&handle);
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-signal")
        .args(["-e", "1", "-i", "web-2", &encoded])
        .run()
        .code(0)
        .stdout_is("CloudFormation signaled successfully with FAILURE.\n")
        .stderr_is("");
    let signals = signals_for(&emulator, &stack);
    assert_eq!(signals.len(), 1, "{signals:#?}");
    assert_eq!(
        signals[0]["raw"],
        r#"{"Status": "FAILURE", "Reason": "Configuration failed.", "Data": "", "UniqueId": "web-2"}"#
    );
    assert_eq!(stack_status(&emulator, &stack), "ROLLBACK_COMPLETE");
}

#[test]
fn a_tampered_handle_url_fails_with_the_reference_message() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("wch-bad"), &wait_condition_template());
    let handle = output(&emulator, &stack, "HandleUrl");
    let (base, signature) = handle.split_once("Signature=").unwrap();
    let tampered = format!("{base}Signature={}", signature.chars().rev().collect::<String>());
    let sandbox = Sandbox::new();
    let run = sandbox.cmd("cfn-signal").args(["-i", "x", &tampered]).run();
    run.code(1).stdout_is("");
    // The reference's shape (`[Errno 403] HTTP Error 403 : <body>`), on one line.
    assert!(run.stderr.starts_with("Error signaling CloudFormation: [Errno 403] HTTP Error 403 : <?xml"), "{run}");
    run.stderr_has("<Code>SignatureDoesNotMatch</Code>");
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
    // 4xx is final (SIG-09): one PUT, and the stack still waits.
    assert_eq!(handle_puts(&emulator, &handle).len(), 1);
    assert_eq!(stack_status(&emulator, &stack), "CREATE_IN_PROGRESS");
}

#[test]
fn server_errors_on_the_handle_are_retried() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("wch-retry"), &wait_condition_template());
    let handle = output(&emulator, &stack, "HandleUrl");
    let path = handle.split_once(&emulator.url).unwrap().1.split('?').next().unwrap().to_string();
    emulator.post_json(
        "/_emu/faults",
        &json!([{"path": path, "status": 500, "body": "<Error>boom</Error>"},
                {"path": path, "status": 503, "body": "<Error>slow down</Error>"}]),
    );
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-signal")
        .args(["-i", "x", &handle])
        .run()
        .code(0)
        .stdout_is("CloudFormation signaled successfully with SUCCESS.\n");
    let statuses: Vec<Value> = handle_puts(&emulator, &handle).iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!(500), json!(503), json!(200)]);
    assert_eq!(stack_status(&emulator, &stack), "CREATE_COMPLETE");
    let log = sandbox.log("cfn-init.log");
    assert!(
        log.contains("[Errno 500] HTTP Error 500 : <Error>boom</Error>: WaitConditionHandle signal failed (attempt 1)"),
        "{log}"
    );
}

#[test]
fn an_unreachable_handle_is_retried_then_reported() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let run = sandbox.cmd("cfn-signal").args(["-i", "x", &format!("http://127.0.0.1:{port}/wch?Signature=s")]).run();
    run.code(1).stdout_is("");
    assert!(
        run.stderr.starts_with(&format!("Error signaling CloudFormation: Could not reach http://127.0.0.1:{port}: ")),
        "{run}"
    );
    run.stderr_has("Connection refused");
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
    assert_eq!(sandbox.log("cfn-init.log").matches("WaitConditionHandle signal failed (attempt").count(), 5);
}

#[test]
fn the_handle_put_uses_the_command_line_and_environment_proxies() {
    let emulator = Emulator::shared();
    let stack = create_waiting_stack(&emulator, &unique("wch-proxy"), &wait_condition_template());
    let handle = output(&emulator, &stack, "HandleUrl");
    let netloc = emulator.url.trim_start_matches("http://").to_string();
    let sandbox = Sandbox::new();

    let cli = RecordingProxy::start();
    sandbox
        .cmd("cfn-signal")
        .args(["-i", "via-cli", "--http-proxy", &cli.url, &handle])
        .run()
        .code(0)
        .stdout_is("CloudFormation signaled successfully with SUCCESS.\n");
    assert_eq!(cli.targets(), std::slice::from_ref(&netloc));
    // A proxy that refuses CONNECT to plain-http ports still carries the PUT: it goes
    // in absolute form (NET-02).
    let put = &cli.requests()[0];
    assert_eq!(put.method, "PUT");
    assert!(put.target.starts_with(&format!("{}/", emulator.url)), "{put:?}");

    // The handle keeps answering 200 after the condition completed, so it can take
    // a second signal through the environment's proxy.
    let env = RecordingProxy::start();
    sandbox
        .cmd("cfn-signal")
        .env("http_proxy", &env.url)
        .args(["-i", "via-env", &handle])
        .run()
        .code(0)
        .stdout_is("CloudFormation signaled successfully with SUCCESS.\n");
    assert_eq!(env.targets(), [netloc]);
    let ids: Vec<Value> = signals_for(&emulator, &stack).iter().map(|s| s["UniqueId"].clone()).collect();
    assert_eq!(ids, [json!("via-cli"), json!("via-env")]);
}

// ---------------------------------------------------------------------------------
// On an "instance": IMDS at 169.254.169.254, no credentials (CRED-03, SIG-02)
// ---------------------------------------------------------------------------------

struct InstanceRuns {
    plain: Run,
    after_false: Run,
    after_true: Run,
    instance_id: String,
    statuses: [String; 3],
    signals: [Vec<Value>; 3],
    requests: Vec<Value>,
}

#[test]
fn on_an_instance_signals_use_the_instance_identity_and_the_user_data_line_works() {
    let runs = in_private_network(|| {
        let emulator =
            Emulator::start_at(&["--imds-host", "169.254.169.254", "--imds-port", "80", "--port", "5000"], 5000);
        let stacks = ["plain", "after-false", "after-true"]
            .map(|name| create_waiting_stack(&emulator, &format!("instance-{name}"), &creation_policy_template()));
        let sandbox = Sandbox::new();
        std::os::unix::fs::symlink("/bin/sh", sandbox.path("bin/sh")).unwrap();
        let on_instance = |tool: &str| {
            sandbox
                .cmd(tool)
                // The real IMDS address, as on EC2; no credentials at all.
                .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                .env("PATH", format!("{}:/usr/bin:/bin", sandbox.path("bin").display()))
        };
        let plain = on_instance("cfn-signal")
            .args(["-e", "0", "--stack", &stacks[0], "--resource", "Instance", "--url", &emulator.url])
            .run();
        // The line user-data scripts carry, run by a shell after a failing and after a
        // succeeding command (`--url` only because the service is the emulator).
        let user_data = |command: &str, stack: &str| {
            let script = format!(
                "{command}\ncfn-signal -e $? --stack {stack} --resource Instance --region us-east-1 --url {}",
                emulator.url
            );
            on_instance("sh").args(["-c", &script]).run()
        };
        let after_false = user_data("false", &stacks[1]);
        let after_true = user_data("true", &stacks[2]);
        let mut answer = ureq::get(&format!("{}/latest/meta-data/instance-id", emulator.url)).call().unwrap();
        let instance_id = answer.body_mut().read_to_string().unwrap();
        InstanceRuns {
            plain,
            after_false,
            after_true,
            instance_id,
            statuses: stacks.clone().map(|s| stack_status(&emulator, &s)),
            signals: stacks.clone().map(|s| signals_for(&emulator, &s)),
            requests: emulator.get_json("/_emu/requests?kind=cloudformation").as_array().unwrap().clone(),
        }
    });
    for run in [&runs.plain, &runs.after_false, &runs.after_true] {
        run.code(0).stdout_is("").stderr_is("");
    }
    assert_eq!(runs.statuses, ["CREATE_COMPLETE", "ROLLBACK_COMPLETE", "CREATE_COMPLETE"]);
    let sent: Vec<(Value, Value)> =
        runs.signals.iter().flatten().map(|s| (s["Status"].clone(), s["UniqueId"].clone())).collect();
    let id = json!(runs.instance_id);
    assert_eq!(
        sent,
        [(json!("SUCCESS"), id.clone()), (json!("FAILURE"), id.clone()), (json!("SUCCESS"), id)],
        "the default --id on EC2 is the instance id"
    );
    let schemes: Vec<&Value> =
        runs.requests.iter().filter(|r| r["action"] == "SignalResource").map(|r| &r["auth_scheme"]).collect();
    assert_eq!(schemes, [&json!("CFN_V1"); 3]);
}
