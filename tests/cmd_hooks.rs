//! The command-hook helpers end to end against the emulator (SPEC §15):
//! cfn-elect-cmd-leader (CMDT-01, API-05), cfn-send-cmd-result (CMDT-02, API-06, with
//! the BUG-SQSREGION fix) and cfn-send-cmd-event (CMDT-03, with the BUG-EVENTNULL fix):
//! what reaches the services, the exit codes and messages, the defaults taken from the
//! environment cfn-hup gives a hook action, and the validation errors the reference
//! printed (tests/golden/reference-1.4-31).

mod common;
use common::*;
use serde_json::{Value, json};

/// The session token sent with the test keys (the emulator checks tokens only for the
/// keys it issued itself, so any value passes; the journal shows it was sent).
const TOKEN: &str = "test-session-token";

fn golden(tool: &str, case: &str, stream: &str) -> String {
    read(&golden_dir().join(tool).join(format!("{case}.{stream}")))
}

fn golden_exit(tool: &str, case: &str) -> i32 {
    golden(tool, case, "exit").trim().parse().unwrap()
}

/// The help a tool prints after a validation error: the recorded one, without its
/// first line (`Error: …`).
fn help_after_error(tool: &str, case: &str) -> String {
    golden(tool, case, "stderr").split_once('\n').unwrap().1.to_string()
}

fn journal(emulator: &Emulator, query: &str) -> Vec<Value> {
    emulator.get_json(&format!("/_emu/requests?{query}")).as_array().unwrap().clone()
}

fn result_body(status: &str, data: &str, message: &str) -> Value {
    json!({"DispatcherId": "disp-1", "CommandName": "deploy", "ListenerId": "i-listener",
           "InvocationId": "inv-1", "Data": data, "Message": message, "Status": status})
}

const RESULT_IDS: [&str; 8] = ["-d", "disp-1", "-c", "deploy", "-i", "inv-1", "-l", "i-listener"];

fn result_keys() -> [&'static str; 6] {
    ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, "--token", TOKEN]
}

/// cfn-send-cmd-result with its SQS endpoint moved to the emulator by the AWS SDKs'
/// standard variable: requests go to the endpoint, the queue URL is a parameter.
fn send_result(sandbox: &Sandbox, emulator: &Emulator) -> TestCommand {
    sandbox.cmd("cfn-send-cmd-result").env("AWS_ENDPOINT_URL_SQS", &emulator.url)
}

/// The SendMessage requests the emulator received for a queue (by its path).
fn sends_to(emulator: &Emulator, queue: &str) -> Vec<Value> {
    journal(emulator, "action=SendMessage").into_iter().filter(|r| r["queue"] == queue).collect()
}

// ---------------------------------------------------------------------------
// cfn-elect-cmd-leader
// ---------------------------------------------------------------------------

fn stack(emulator: &Emulator) -> String {
    emulator.create_stack(&unique("cmd"), &instance_template(&json!({})))
}

/// The ElectCommandLeader requests the emulator received for one stack.
fn elections(emulator: &Emulator, stack: &str) -> Vec<Value> {
    emulator.requests_for(stack).into_iter().filter(|r| r["action"] == "ElectCommandLeader").collect()
}

fn elect(sandbox: &Sandbox, emulator: &Emulator, stack: &str, invocation: &str, listener: &str) -> Run {
    sandbox
        .cmd("cfn-elect-cmd-leader")
        .args(["-s", stack, "-c", "deploy", "-i", invocation, "-l", listener])
        .with_keys(emulator)
        .run()
}

#[test]
fn the_first_listener_to_ask_leads_and_the_others_exit_5() {
    let emulator = Emulator::shared();
    let stack = stack(&emulator);
    let sandbox = Sandbox::new();
    elect(&sandbox, &emulator, &stack, "inv-1", "listener-a").code(0).stdout_is("").stderr_is("");
    elect(&sandbox, &emulator, &stack, "inv-1", "listener-b").code(5).stdout_is("").stderr_is("");
    elect(&sandbox, &emulator, &stack, "inv-1", "listener-a").code(0).stdout_is("").stderr_is("");
    // Another invocation has its own leader.
    elect(&sandbox, &emulator, &stack, "inv-2", "listener-b").code(0).stdout_is("").stderr_is("");
    elect(&sandbox, &emulator, &stack, "inv-2", "listener-a").code(5);

    let requests = elections(&emulator, &stack);
    assert_eq!(requests.len(), 5, "{requests:#?}");
    let first = &requests[0];
    assert_eq!(
        first["query"],
        json!({"Action": "ElectCommandLeader", "ContentType": "JSON", "StackName": stack,
               "CommandName": "deploy", "InvocationId": "inv-1", "ListenerId": "listener-a"}),
        "API-05 parameters, no Version"
    );
    assert_eq!((&first["method"], &first["auth_scheme"]), (&json!("GET"), &json!("AWS4-HMAC-SHA256")));
    assert!(first["user_agent"].as_str().unwrap().starts_with("CfnTools/"), "{first}");
}

#[test]
fn the_ids_come_from_the_hook_environment_and_options_win() {
    let emulator = Emulator::shared();
    let stack = stack(&emulator);
    let sandbox = Sandbox::new();
    let hook_env = |cmd: TestCommand| {
        cmd.env("STACK_NAME", &stack)
            .env("CMD_NAME", "deploy")
            .env("INVOCATION_ID", "inv-env")
            .env("LISTENER_ID", "listener-env")
            .with_keys(&emulator)
    };
    hook_env(sandbox.cmd("cfn-elect-cmd-leader")).run().code(0).stderr_is("");
    hook_env(sandbox.cmd("cfn-elect-cmd-leader")).args(["-l", "listener-opt"]).run().code(5).stderr_is("");
    let sent: Vec<Value> = elections(&emulator, &stack)
        .into_iter()
        .map(|r| json!([r["query"]["InvocationId"], r["query"]["ListenerId"]]))
        .collect();
    assert_eq!(sent, [json!(["inv-env", "listener-env"]), json!(["inv-env", "listener-opt"])]);
}

#[test]
fn each_id_is_required_with_the_reference_message() {
    let sandbox = Sandbox::new();
    let tool = "cfn-elect-cmd-leader";
    for (case, args) in [
        ("no-args", &[][..]),
        ("only-stack", &["-s", "s"][..]),
        ("missing-listener", &["-s", "s", "-c", "c", "-i", "i"][..]),
    ] {
        let run = sandbox.cmd(tool).args(args).run();
        run.code(golden_exit(tool, case)).stdout_is("").stderr_is(&golden(tool, case, "stderr"));
    }
    // The same checks apply to ids from the environment; an empty value is missing.
    let run = sandbox.cmd(tool).env("STACK_NAME", "s").env("CMD_NAME", "c").env("INVOCATION_ID", "").run();
    run.code(1)
        .stdout_is("")
        .stderr_is(&format!("Error: You must specify InvocationId\n{}", help_after_error(tool, "no-args")));
    // Nothing was logged: the logs open only once the ids are complete.
    assert_eq!(sandbox.log("cfn-init.log"), "");
}

#[test]
fn instance_identity_callers_send_no_listener_id() {
    let emulator = Emulator::shared();
    let stack = stack(&emulator);
    let instance_id = {
        let mut r = ureq::get(&format!("{}/latest/meta-data/instance-id", emulator.url)).call().unwrap();
        r.body_mut().read_to_string().unwrap()
    };
    let sandbox = Sandbox::new();
    let on_instance = |invocation: &str| {
        sandbox
            .cmd("cfn-elect-cmd-leader")
            .args(["-s", &stack, "-c", "deploy", "-i", invocation, "-l", &instance_id, "--url", &emulator.url])
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url)
            .run()
    };
    // The service takes the listener id from the instance identity.
    on_instance("inv-1").code(0).stdout_is("").stderr_is("");
    // Another listener got there first.
    elect(&sandbox, &emulator, &stack, "inv-2", "listener-other").code(0);
    on_instance("inv-2").code(5).stdout_is("").stderr_is("");

    let identity: Vec<Value> = elections(&emulator, &stack)
        .into_iter()
        .filter(|r| r["auth_scheme"] == "CFN_V1")
        .map(|r| r["query"].clone())
        .collect();
    assert_eq!(identity.len(), 2);
    for query in identity {
        assert!(query.get("ListenerId").is_none(), "CFN_V1 mode leaves ListenerId out: {query}");
        assert_eq!(query["CommandName"], "deploy");
    }
    let leaders = emulator.get_json("/_emu/leaders");
    let of_stack: Vec<&Value> = leaders
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["StackId"].as_str().unwrap().contains(&format!("/{stack}/")))
        .map(|l| &l["ListenerId"])
        .collect();
    assert_eq!(of_stack, [&json!(instance_id), &json!("listener-other")]);
}

#[test]
fn service_errors_exit_1_with_the_message() {
    let emulator = Emulator::shared();
    let sandbox = Sandbox::new();
    let missing = unique("no-such-stack");
    let run = elect(&sandbox, &emulator, &missing, "inv-1", "listener-a");
    run.code(1).stdout_is("").stderr_is(&format!("ValidationError: Stack with id {missing} does not exist\n"));
    // A Sender fault is final: one request.
    assert_eq!(elections(&emulator, &missing).len(), 1);

    // A server fault is retried.
    let stack = stack(&emulator);
    emulator.post_json(
        "/_emu/faults",
        &json!([{"action": "ElectCommandLeader", "stack": stack, "status": 500,
                 "code": "InternalFailure", "message": "boom", "type": "Receiver"}]),
    );
    elect(&sandbox, &emulator, &stack, "inv-1", "listener-a").code(0).stderr_is("");
    let statuses: Vec<Value> = elections(&emulator, &stack).iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!(500), json!(200)]);
    assert!(sandbox.log("cfn-init.log").contains("InternalFailure: boom: ElectCommandLeader failed (attempt 1)"));
}

// ---------------------------------------------------------------------------
// cfn-send-cmd-result
// ---------------------------------------------------------------------------

#[test]
fn a_result_reaches_the_queue_as_the_reference_wrote_it() {
    let emulator = Emulator::shared();
    let queue = create_queue(&emulator, "us-east-1");
    let queue_url = format!("{}{queue}", emulator.url);
    let sandbox = Sandbox::new();
    send_result(&sandbox, &emulator)
        .args(RESULT_IDS)
        .args(["-q", &queue_url])
        .args(result_keys())
        .args(["all", "good  here"])
        .run()
        .code(0)
        .stdout_is("")
        .stderr_is("");
    assert_eq!(received(&emulator, "us-east-1", &queue), [result_body("SUCCESS", "all good  here", "")]);

    // The SDK's SQS protocol (AWS JSON 1.0): the queue URL is a parameter of a POST to
    // the endpoint, signed with the keys and their session token.
    let sends = sends_to(&emulator, &queue);
    assert_eq!(sends.len(), 1, "{sends:#?}");
    let send = &sends[0];
    assert_eq!((&send["method"], &send["path"]), (&json!("POST"), &json!("/")));
    assert_eq!(send["target"], "AmazonSQS.SendMessage");
    assert_eq!(send["json"]["QueueUrl"], queue_url);
    assert_eq!(send["content_type"], "application/x-amz-json-1.0");
    assert_eq!((&send["auth_scheme"], &send["security_token"]), (&json!("AWS4-HMAC-SHA256"), &json!(true)));
    assert_eq!(send["status"], 200);
    // SEC-02: the secret key and the token appear in no log.
    for log in ["cfn-init.log", "cfn-wire.log"] {
        let text = sandbox.log(log);
        assert!(!text.contains(SECRET_KEY) && !text.contains(TOKEN), "{log}:\n{text}");
    }
}

#[test]
fn the_exit_code_decides_before_the_success_flag() {
    let emulator = Emulator::shared();
    let queue = create_queue(&emulator, "us-east-1");
    let queue_url = format!("{}{queue}", emulator.url);
    let sandbox = Sandbox::new();
    for flags in [&["-e", "3", "-s", "true"][..], &["-s", "false"][..], &["-e", "0", "-s", "false"][..]] {
        send_result(&sandbox, &emulator)
            .args(RESULT_IDS)
            .args(["-q", &queue_url])
            .args(result_keys())
            .args(flags)
            .args(["it", "broke"])
            .run()
            .code(0)
            .stderr_is("");
    }
    let mut bodies = received(&emulator, "us-east-1", &queue);
    bodies.sort_by_key(|b| b["Status"].to_string());
    let mut expected = vec![
        result_body("FAILURE", "", "it broke"),
        result_body("FAILURE", "", "it broke"),
        result_body("SUCCESS", "it broke", ""),
    ];
    expected.sort_by_key(|b| b["Status"].to_string());
    assert_eq!(bodies, expected);
}

#[test]
fn a_hook_action_needs_no_options() {
    let emulator = Emulator::shared();
    let queue = create_queue(&emulator, "us-east-1");
    let sandbox = Sandbox::new();
    send_result(&sandbox, &emulator)
        .env("DISPATCHER_ID", "disp-1")
        .env("CMD_NAME", "deploy")
        .env("INVOCATION_ID", "inv-1")
        .env("LISTENER_ID", "i-listener")
        .env("RESULT_QUEUE", format!("{}{queue}", emulator.url))
        .env("RESULT_ACCESS_KEY", ACCESS_KEY)
        .env("RESULT_SECRET_KEY", SECRET_KEY)
        .env("RESULT_SESSION_TOKEN", TOKEN)
        .arg("done")
        .run()
        .code(0)
        .stdout_is("")
        .stderr_is("");
    assert_eq!(received(&emulator, "us-east-1", &queue), [result_body("SUCCESS", "done", "")]);
}

#[test]
fn missing_ids_and_keys_are_refused_with_the_reference_messages() {
    let sandbox = Sandbox::new();
    let tool = "cfn-send-cmd-result";
    let ids = ["-d", "d", "-c", "c", "-i", "i", "-l", "l", "-q", "http://127.0.0.1:9/q"];
    let cases: [(&str, Vec<&str>); 3] = [
        ("no-args", vec![]),
        ("ids-no-creds", ids.to_vec()),
        ("ids-missing-token", [&ids[..], &["--access-key", "a", "--secret-key", "b"]].concat()),
    ];
    for (case, args) in cases {
        let run = sandbox.cmd(tool).args(&args).run();
        run.code(golden_exit(tool, case)).stdout_is("").stderr_is(&golden(tool, case, "stderr"));
    }
    let help = help_after_error(tool, "no-args");
    let run = sandbox.cmd(tool).args(&ids[..8]).run();
    run.code(1).stdout_is("").stderr_is(&format!("Error: You must specify QueueUrl\n{help}"));
    // Keys from the environment count, a missing secret key does not.
    let run = sandbox.cmd(tool).args(ids).env("RESULT_ACCESS_KEY", "a").env("RESULT_SESSION_TOKEN", "t").run();
    run.code(1)
        .stdout_is("")
        .stderr_is(&format!("Error: You must specify a token and an access key/secret key pair\n{help}"));
    assert_eq!(sandbox.log("cfn-init.log"), "");
}

#[test]
fn send_failures_are_reported_and_server_errors_retried() {
    let emulator = Emulator::shared();
    let sandbox = Sandbox::new();
    let send = |queue_url: &str| {
        send_result(&sandbox, &emulator).args(RESULT_IDS).args(["-q", queue_url]).args(result_keys()).arg("x").run()
    };
    // A queue that does not exist: a Sender fault, final at once. The code is the one SQS
    // has always answered with (`x-amzn-query-error` carries it in the JSON protocol).
    let gone = format!("/123456789012/{}", unique("gone"));
    send(&format!("{}{gone}", emulator.url)).code(1).stdout_is("").stderr_is(
        "Error: Could not send command result: AWS.SimpleQueueService.NonExistentQueue: \
         The specified queue does not exist.\n",
    );
    assert_eq!(sends_to(&emulator, &gone).len(), 1);

    // A server error is retried.
    let queue = create_queue(&emulator, "us-east-1");
    emulator.post_json(
        "/_emu/faults",
        &json!([{"path": queue, "method": "POST", "status": 500, "content_type": "application/x-amz-json-1.0",
                 "body": r#"{"__type": "InternalError", "message": "boom"}"#}]),
    );
    send(&format!("{}{queue}", emulator.url)).code(0).stderr_is("");
    let statuses: Vec<Value> = sends_to(&emulator, &queue).iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!(500), json!(200)]);
    assert_eq!(received(&emulator, "us-east-1", &queue), [result_body("SUCCESS", "x", "")]);
    assert!(sandbox.log("cfn-init.log").contains("InternalError: boom: SendMessage failed (attempt 1)"));

    // An answer that is not SQS's is an `Unknown` error, retried like a server error.
    let queue = create_queue(&emulator, "us-east-1");
    emulator.post_json("/_emu/faults", &json!([{"path": queue, "status": 502, "body": "<html>Bad Gateway</html>"}]));
    send(&format!("{}{queue}", emulator.url)).code(0).stderr_is("");
    let log = sandbox.log("cfn-init.log");
    assert!(log.contains("Unknown: HTTP 502 <html>Bad Gateway</html>: SendMessage failed (attempt 1)"), "{log}");
}

#[test]
fn results_are_signed_for_the_queue_region_and_sent_to_its_endpoint() {
    // BUG-SQSREGION fixed: the reference signed for us-east-1 whatever the queue's
    // region. The emulator files a message under the region of its signature, so the
    // message is found in eu-west-1 only if it was signed for eu-west-1.
    let emulator = Emulator::shared();
    let queue = create_queue(&emulator, "eu-west-1");
    let queue_url = format!("https://sqs.eu-west-1.amazonaws.com{queue}");
    let sandbox = Sandbox::new();
    send_result(&sandbox, &emulator)
        .args(RESULT_IDS)
        .args(["-q", &queue_url])
        .args(result_keys())
        .arg("far away")
        .run()
        .code(0)
        .stdout_is("")
        .stderr_is("");
    assert_eq!(received(&emulator, "eu-west-1", &queue), [result_body("SUCCESS", "far away", "")]);
    let sends = sends_to(&emulator, &queue);
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0]["json"]["QueueUrl"], queue_url, "the queue URL is passed as given (EP-06)");
    assert_eq!(sends[0]["host"], emulator.url.trim_start_matches("http://"));
}

/// A queue URL naming another host never receives the request (a command message may
/// name any URL as its result queue): the result goes to the endpoint, and the log says
/// where it went.
#[test]
fn a_queue_url_on_another_host_gets_no_request() {
    let emulator = Emulator::shared();
    let queue = create_queue(&emulator, "us-east-1");
    // Records every request it gets; it must get none.
    let elsewhere = RecordingProxy::start();
    let queue_url = format!("{}{queue}", elsewhere.url);
    let sandbox = Sandbox::new();
    send_result(&sandbox, &emulator)
        .args(RESULT_IDS)
        .args(["-q", &queue_url])
        .args(result_keys())
        .arg("kept home")
        .run()
        .code(0)
        .stdout_is("")
        .stderr_is("");
    assert!(elsewhere.requests().is_empty(), "the queue URL's host got {:?}", elsewhere.requests());
    // The queue is named by its path; the endpoint answers for its own queues.
    assert_eq!(received(&emulator, "us-east-1", &queue), [result_body("SUCCESS", "kept home", "")]);
    let log = sandbox.log("cfn-init.log");
    let line = format!("Queue {queue_url} is not on {}: sending to {}", emulator.url, emulator.url);
    assert!(log.contains(&line), "{line}\n{log}");
}

// ---------------------------------------------------------------------------
// cfn-send-cmd-event
// ---------------------------------------------------------------------------

fn events_at(emulator: &Emulator, path: &str) -> Vec<Value> {
    let all = emulator.get_json("/_emu/events");
    all.as_array().unwrap().iter().filter(|e| e["path"] == path).cloned().collect()
}

const EVENT_IDS: [&str; 8] = ["-d", "disp-1", "-c", "deploy", "-i", "inv-1", "-l", "i-listener"];

#[test]
fn an_event_is_put_to_the_handle() {
    let emulator = Emulator::shared();
    let path = format!("/_events/{}-h", unique("ev"));
    let handle = format!("{}{path}?X-Amz-Signature=SIGsecret123", emulator.url);
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-send-cmd-event")
        .args(["--event-handle", &handle])
        .args(EVENT_IDS)
        .args(["-e", "ev1", "-t", "2020-01-02T03:04:05", "hello", "world"])
        .run()
        .code(0)
        .stderr_is("")
        .stdout_is("Command Event with id ev1 sent successfully.\n");
    let events = events_at(&emulator, &path);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(
        events[0]["body"],
        r#"{"EventId": "ev1", "DispatcherId": "disp-1", "CommandName": "deploy", "ListenerId": "i-listener", "InvocationId": "inv-1", "EventTimestamp": "2020-01-02T03:04:05", "Message": "hello world"}"#
    );
    assert_eq!(events[0]["query"], "X-Amz-Signature=SIGsecret123");
    // An empty Content-Type (the handle is presigned for none).
    assert!(events[0]["content_type"].as_str().unwrap_or("").is_empty(), "{}", events[0]);
    assert!(!sandbox.log("cfn-wire.log").contains("SIGsecret123"), "the handle's signature is not logged");
}

#[test]
fn a_hook_action_gets_a_random_id_and_the_current_time() {
    use base64::Engine;
    let emulator = Emulator::shared();
    let path = format!("/_events/{}-h", unique("ev"));
    let handle = base64::engine::general_purpose::STANDARD.encode(format!("{}{path}", emulator.url));
    let before = chrono::Utc::now().naive_utc();
    let sandbox = Sandbox::new();
    let run = sandbox
        .cmd("cfn-send-cmd-event")
        .env("EVENT_HANDLE", &handle)
        .env("DISPATCHER_ID", "disp-1")
        .env("CMD_NAME", "deploy")
        .env("INVOCATION_ID", "inv-1")
        .env("LISTENER_ID", "i-listener")
        .arg("step 1")
        .run();
    run.code(0).stderr_is("");
    let after = chrono::Utc::now().naive_utc();
    let id = run
        .stdout
        .strip_prefix("Command Event with id ")
        .and_then(|rest| rest.strip_suffix(" sent successfully.\n"))
        .unwrap_or_else(|| panic!("{run}"));
    let hex: Vec<char> = id.chars().filter(|c| *c != '-').collect();
    assert!(id.len() == 36 && hex.len() == 32 && hex.iter().all(|c| c.is_ascii_hexdigit()), "UUID: {id}");
    assert_eq!((hex[12], id.as_bytes()[8], id.as_bytes()[23]), ('4', b'-', b'-'), "version 4: {id}");

    let events = events_at(&emulator, &path);
    assert_eq!(events.len(), 1);
    let body: Value = serde_json::from_str(events[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["EventId"], id);
    assert_eq!((&body["DispatcherId"], &body["Message"]), (&json!("disp-1"), &json!("step 1")));
    let stamp = body["EventTimestamp"].as_str().unwrap();
    let time = chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%dT%H:%M:%S%.6f")
        .unwrap_or_else(|e| panic!("{stamp}: {e}"));
    assert_eq!(stamp.len(), "2026-11-29T18:40:17.441914".len(), "{stamp}");
    assert!(before <= time && time <= after, "{before} <= {time} <= {after}");
}

#[test]
fn bad_or_missing_handles_and_ids_are_refused() {
    let sandbox = Sandbox::new();
    let tool = "cfn-send-cmd-event";
    let help = help_after_error(tool, "handle-ok-no-ids");
    // BUG-EVENTNULL fixed: the reference crashed with a traceback here.
    sandbox
        .cmd(tool)
        .args(EVENT_IDS)
        .run()
        .code(1)
        .stdout_is("")
        .stderr_is(&format!("Error: You must specify an EventHandle\n{help}"));
    sandbox
        .cmd(tool)
        .env("EVENT_HANDLE", "")
        .run()
        .code(1)
        .stderr_is(&format!("Error: You must specify an EventHandle\n{help}"));
    // The reference crashed decoding this one; it is refused like any non-URL.
    sandbox
        .cmd(tool)
        .args(["--event-handle", "notaurl"])
        .run()
        .code(1)
        .stdout_is("")
        .stderr_is("Error: Invalid EventHandle URL specified: notaurl\n");
    for (case, args) in [
        ("handle-base64-nonurl", &["--event-handle", "Zm9vYmFy"][..]),
        ("handle-ok-no-ids", &["--event-handle", "http://127.0.0.1:9/e"][..]),
    ] {
        let run = sandbox.cmd(tool).args(args).run();
        run.code(golden_exit(tool, case)).stdout_is("").stderr_is(&golden(tool, case, "stderr"));
    }
    let run = sandbox.cmd(tool).env("EVENT_HANDLE", "http://127.0.0.1:9/e").args(&EVENT_IDS[..6]).run();
    run.code(1).stdout_is("").stderr_is(&format!("Error: You must specify ListenerId\n{help}"));
    assert_eq!(sandbox.log("cfn-init.log"), "");
}

#[test]
fn put_failures_are_reported_and_server_errors_retried() {
    let emulator = Emulator::shared();
    let sandbox = Sandbox::new();
    let send = |path: &str| {
        sandbox
            .cmd("cfn-send-cmd-event")
            .args(["--event-handle", &format!("{}{path}", emulator.url)])
            .args(EVENT_IDS)
            .args(["-e", "ev9"])
            .run()
    };
    let denied = format!("/_events/{}-h", unique("denied"));
    emulator.post_json("/_emu/faults", &json!([{"path": denied, "status": 403, "body": "<Error>denied</Error>"}]));
    send(&denied)
        .code(1)
        .stdout_is("")
        .stderr_is("Error sending Command Event: [Errno 403] HTTP Error 403 : <Error>denied</Error>\n");
    assert_eq!(journal(&emulator, "kind=event").iter().filter(|r| r["path"] == denied.as_str()).count(), 1);
    assert!(events_at(&emulator, &denied).is_empty());

    let flaky = format!("/_events/{}-h", unique("flaky"));
    emulator.post_json("/_emu/faults", &json!([{"path": flaky, "status": 502, "body": "bad gateway"}]));
    send(&flaky).code(0).stderr_is("").stdout_is("Command Event with id ev9 sent successfully.\n");
    let statuses: Vec<Value> = journal(&emulator, "kind=event")
        .iter()
        .filter(|r| r["path"] == flaky.as_str())
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(502), json!(200)]);
    assert_eq!(events_at(&emulator, &flaky).len(), 1);
}

/// The reference sends SQS's query protocol (ReceiveMessage and DeleteMessage as signed
/// GETs, SendMessage as a form POST, XML answers) to the queue URL with a slash added
/// (`/<account>/<queue>/`); real SQS answers both spellings of the path (API-06). The
/// emulator does too, so reference runs against it stay comparable.
#[test]
fn the_emulator_answers_the_query_protocol_on_the_queue_path_with_or_without_a_slash() {
    use cfn_aws::sigv4;
    let emulator = Emulator::shared();
    let queue = create_queue(&emulator, "us-east-1");
    for path in [queue.clone(), format!("{queue}/")] {
        sqs_post(&emulator, "us-east-1", &path, &[("Action", "SendMessage"), ("MessageBody", "hello")]);
        let get = |params: &[(&str, &str)]| {
            let host = emulator.url.trim_start_matches("http://").to_string();
            let query: Vec<(String, String)> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let request =
                sigv4::Request { method: "GET", host: &host, path: &path, query: &query, headers: &[], payload: b"" };
            let credentials = cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None);
            let scope = sigv4::Scope { region: "us-east-1", service: "sqs" };
            let mut headers = sigv4::sign(&request, &credentials, &scope, chrono::Utc::now());
            headers.push(("Host", host.clone()));
            let url = format!("{}{path}?{}", emulator.url, sigv4::canonical_query(&query));
            let http = cfn_aws::http::HttpClient::new(cfn_aws::ProxyOptions::default(), "tests");
            let response = http.send("GET", &url, &headers, None).unwrap();
            assert!(response.is_success(), "{path} {params:?}: {} {}", response.status, response.text());
            response.text()
        };
        let answer = get(&[
            ("Action", "ReceiveMessage"),
            ("Version", "2012-11-05"),
            ("MaxNumberOfMessages", "1"),
            ("AttributeName.1", "All"),
            ("WaitTimeSeconds", "0"),
        ]);
        assert_eq!(xml_texts(&answer, "Body"), ["hello"], "{path}: {answer}");
        let handle = xml_texts(&answer, "ReceiptHandle").pop().unwrap();
        get(&[("Action", "DeleteMessage"), ("Version", "2012-11-05"), ("ReceiptHandle", &handle)]);
        // Deleted, not merely in flight.
        let attributes =
            sqs_post(&emulator, "us-east-1", &path, &[("Action", "GetQueueAttributes"), ("AttributeName.1", "All")]);
        let at = attributes.find("<Name>ApproximateNumberOfMessagesNotVisible</Name>").unwrap();
        assert_eq!(xml_texts(&attributes[at..], "Value")[0], "0", "{path}: {attributes}");
    }
}
