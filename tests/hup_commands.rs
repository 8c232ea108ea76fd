//! cfn-hup's command hooks end to end against the emulator (SPEC §14.7, §11.2; HUP-CMD-01..04,
//! API-03, API-04, STATE-05): registration and listener credentials, a command message put
//! on the listener's queue in the SNS-style envelope, the action's environment, the result
//! read back from the result queue, de-duplication through `commands_run.json`, expiry,
//! unknown commands, singleton leader election, `send_result=false`, the duplicate-hook
//! error, secrets kept out of the log, and the listener inside the service.
//!
//! `CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS` (a test aid) shortens the 20 s long poll.

mod common;
use common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

const WAIT_VAR: &str = "CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS";
const REGION: &str = "us-east-1";
/// How soon cfn-hup must stop on SIGTERM: generous for a loaded machine, and still far
/// below what a stop that waited would take (a 20 s long poll, a 300 s action, the
/// 3,600 s interval).
const STOPS_PROMPTLY: Duration = Duration::from_secs(10);

/// A stack, a cfn-hup configuration with command hooks, the listener's queue (found after
/// a first run registered it) and a result queue.
struct Commands {
    sandbox: Sandbox,
    emulator: Emulator,
    stack: String,
    dir: PathBuf,
    listener_id: String,
    /// The listener's queue, as a path on the emulator.
    queue: String,
    results: String,
}

impl Commands {
    /// `hooks` is the first hooks.conf; tests that need sandbox paths in their actions
    /// pass "" (a placeholder command hook) and write their hooks afterwards.
    fn new(hooks: &str) -> Commands {
        let emulator = Emulator::shared();
        let sandbox = Sandbox::new();
        let stack = emulator.create_stack(&unique("cmds"), &instance_template(&json!({})));
        let dir = sandbox.path("conf");
        std::fs::create_dir_all(&dir).unwrap();
        let creds =
            sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
        std::fs::write(
            dir.join("cfn-hup.conf"),
            format!("[main]\nstack={stack}\ncredential-file={}\nurl={}\n", creds.display(), emulator.url),
        )
        .unwrap();
        let hooks = if hooks.is_empty() { hook("placeholder", "placeholder", "true", "") } else { hooks.to_string() };
        std::fs::write(dir.join("hooks.conf"), hooks).unwrap();
        let results = create_queue(&emulator, REGION);
        let mut commands =
            Commands { sandbox, emulator, stack, dir, listener_id: String::new(), queue: String::new(), results };
        // The first run registers the listener (an empty queue: nothing runs).
        commands.cmd().arg("--no-daemon").env(WAIT_VAR, "0").run().code(0);
        let listeners = commands.emulator.get_json("/_emu/listeners");
        let mine = listeners
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["StackId"].as_str().unwrap().contains(&format!("/{}/", commands.stack)))
            .unwrap_or_else(|| panic!("no listener registered for {}: {listeners}\n{}", commands.stack, commands.log()))
            .clone();
        commands.listener_id = mine["ListenerId"].as_str().unwrap().to_string();
        let url = mine["QueueUrl"].as_str().unwrap();
        commands.queue = url.strip_prefix(&commands.emulator.url).unwrap_or_else(|| panic!("queue URL {url}")).into();
        commands
    }

    /// cfn-hup with its SQS endpoint moved to the emulator by the AWS SDKs' standard
    /// variable (SQS requests go to the region's endpoint, not to the queue URL's host).
    fn cmd(&self) -> TestCommand {
        self.sandbox.cmd("cfn-hup").arg("-c").arg(&self.dir).arg("-v").env("AWS_ENDPOINT_URL_SQS", &self.emulator.url)
    }

    /// `cfn-hup -F` in the background, its long poll `wait` seconds; killed when the
    /// guard goes.
    fn service(&self, wait: &str) -> Service {
        let mut cmd = self.cmd().arg("-F").env(WAIT_VAR, wait).env("CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS", "3600");
        cmd.cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        Service(cmd.cmd.spawn().expect("start cfn-hup -F"))
    }

    /// One `--no-daemon` run (one receive round).
    fn once(&self) -> Run {
        let run = self.cmd().arg("--no-daemon").env(WAIT_VAR, "1").run();
        run.code(0);
        run
    }

    fn result_queue_url(&self) -> String {
        format!("{}{}", self.emulator.url, self.results)
    }

    /// The command document; `extra` adds or replaces fields.
    fn command(&self, name: &str, invocation: &str, extra: Value) -> Value {
        let in_an_hour = chrono::Utc::now().timestamp_millis() + 3_600_000;
        let mut command = json!({"DispatcherId": "disp-1", "CommandName": name, "InvocationId": invocation,
                                 "Expiration": in_an_hour, "ResultQueue": self.result_queue_url()});
        command.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        command
    }

    /// Puts a command on the listener's queue in the SNS-style envelope.
    fn send(&self, command: &Value) {
        let body = json!({"Type": "Notification", "MessageId": unique("sns"), "TopicArn": "arn:aws:sns:us-east-1:1:t",
                          "Message": command.to_string()})
        .to_string();
        sqs_post(&self.emulator, REGION, &self.queue, &[("Action", "SendMessage"), ("MessageBody", &body)]);
    }

    /// (visible, in flight) messages on the listener's queue.
    fn queue_counts(&self) -> (u64, u64) {
        let answer = sqs_post(
            &self.emulator,
            REGION,
            &self.queue,
            &[("Action", "GetQueueAttributes"), ("AttributeName.1", "All")],
        );
        let attribute = |name: &str| {
            let at = answer.find(&format!("<Name>{name}</Name>")).unwrap_or_else(|| panic!("{name} in {answer}"));
            xml_texts(&answer[at..], "Value")[0].parse::<u64>().unwrap()
        };
        (attribute("ApproximateNumberOfMessages"), attribute("ApproximateNumberOfMessagesNotVisible"))
    }

    /// Waits until the listener is in a long poll: a ReceiveMessage on its queue that the
    /// emulator has not answered yet.
    fn wait_for_a_long_poll(&self, deadline: Instant) {
        loop {
            let receives = self.emulator.get_json("/_emu/requests?action=ReceiveMessage");
            if receives.as_array().unwrap().iter().any(|r| r["queue"] == self.queue.as_str() && r["status"].is_null()) {
                return;
            }
            assert!(Instant::now() < deadline, "the listener is not in a long poll:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn results(&self) -> Vec<Value> {
        received(&self.emulator, REGION, &self.results)
    }

    fn log(&self) -> String {
        self.sandbox.log("cfn-hup.log")
    }

    fn commands_run_path(&self) -> PathBuf {
        self.sandbox.path("lib/cfn-hup/data/commands_run.json")
    }

    fn commands_run(&self) -> Value {
        serde_json::from_str(&read(&self.commands_run_path())).unwrap()
    }

    fn marks_path(&self) -> PathBuf {
        self.sandbox.path("marks")
    }

    fn marks(&self) -> Vec<String> {
        std::fs::read_to_string(self.marks_path()).unwrap_or_default().lines().map(str::to_string).collect()
    }
}

fn hook(name: &str, command: &str, action: &str, extra: &str) -> String {
    format!("[{name}]\ntriggers=on.command\npath={command}\naction={action}\n{extra}")
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%dT00:00:00").to_string()
}

#[test]
fn a_command_runs_with_its_environment_and_the_result_reaches_the_result_queue() {
    let setup = Commands::new("");
    let env_file = setup.sandbox.path("action-env");
    let action = format!(
        "echo \"$CMD_NAME|$CMD_DATA|$INVOCATION_ID|$DISPATCHER_ID|$STACK_NAME|$LISTENER_ID|$EVENT_HANDLE\"; \
         echo \"$RESULT_QUEUE\"; env | grep ^RESULT_ | sort > {}; echo oops >&2; echo",
        env_file.display()
    );
    std::fs::write(setup.dir.join("hooks.conf"), hook("deploy-hook", "deploy", &action, "")).unwrap();
    let handle = format!("{}/_events/h?X-Amz-Signature=abc", setup.emulator.url);
    setup.send(&setup.command("deploy", "inv-1", json!({"Data": "some data", "EventHandle": handle})));
    let run = setup.once();

    let expected_data = format!(
        "deploy|some data|inv-1|disp-1|{}|{}|{handle}\n{}",
        setup.stack,
        setup.listener_id,
        setup.result_queue_url()
    );
    assert_eq!(
        setup.results(),
        [json!({"DispatcherId": "disp-1", "InvocationId": "inv-1", "CommandName": "deploy", "Status": "SUCCESS",
                "ListenerId": setup.listener_id, "Data": expected_data})],
        "{run}"
    );
    // The action got the listener credentials, which also signed the listener's SQS calls.
    let env = read(&env_file);
    let value = |name: &str| {
        env.lines().find_map(|l| l.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("{name}: {env}"))
    };
    assert!(value("RESULT_ACCESS_KEY").starts_with("ASIALISTENER"), "{env}");
    let (secret, token) = (value("RESULT_SECRET_KEY"), value("RESULT_SESSION_TOKEN"));
    assert!(!secret.is_empty() && !token.is_empty(), "{env}");
    // Completed: the message is gone and the id recorded.
    assert_eq!(setup.queue_counts(), (0, 0));
    assert_eq!(setup.commands_run()["by_id"], json!({"disp-1|deploy|inv-1": true}));

    // The wire: RegisterListener and GetListenerCredentials with ListenerId and without
    // Version (API-03, API-04); ReceiveMessage through the SDK (AWS JSON 1.0, a POST to
    // the endpoint with the queue URL as a parameter), signed with a session token.
    let journal = setup.emulator.get_json("/_emu/requests");
    let entries = journal.as_array().unwrap();
    let register = entries
        .iter()
        .find(|r| r["action"] == "RegisterListener" && r["query"]["StackName"] == setup.stack.as_str())
        .unwrap();
    assert_eq!(
        register["query"],
        json!({"Action": "RegisterListener", "ContentType": "JSON", "StackName": setup.stack,
               "ListenerId": setup.listener_id})
    );
    assert!(entries.iter().any(|r| r["action"] == "GetListenerCredentials"
        && r["query"]["StackName"] == setup.stack.as_str()
        && r["query"]["ListenerId"] == setup.listener_id.as_str()
        && r["query"].get("Version").is_none()));
    let receive = entries
        .iter()
        .rev()
        .find(|r| r["action"] == "ReceiveMessage" && r["queue"] == setup.queue.as_str())
        .unwrap_or_else(|| panic!("no ReceiveMessage on {}", setup.queue));
    assert_eq!((&receive["method"], &receive["security_token"]), (&json!("POST"), &json!(true)), "{receive}");
    assert_eq!(receive["auth_scheme"], "AWS4-HMAC-SHA256");
    assert_eq!(receive["json"]["QueueUrl"], format!("{}{}", setup.emulator.url, setup.queue));
    assert_eq!(receive["json"]["MaxNumberOfMessages"], 1);
    assert_eq!(receive["json"]["MessageSystemAttributeNames"], json!(["All"]));
    assert_eq!(receive["json"]["WaitTimeSeconds"], 1, "the last round's long poll");

    // WEAK-secrets fixed: the environment is logged, the listener secrets are not.
    let log = setup.log();
    assert!(log.contains("Action environment: {") && log.contains(r#""RESULT_SECRET_KEY": "<redacted>""#), "{log}");
    assert!(log.contains(r#""CMD_NAME": "deploy""#), "{log}");
    assert!(!log.contains(secret) && !log.contains(token), "the log holds a listener secret:\n{log}");
    let wire = setup.sandbox.log("cfn-wire.log");
    assert!(!wire.contains(secret) && !wire.contains(token), "the wire log holds a listener secret:\n{wire}");
    let shown_env = log.lines().find(|l| l.contains("Action environment: {")).unwrap();
    assert!(shown_env.contains("X-Amz-Signature=REDACTED") && !shown_env.contains("=abc"), "{shown_env}");
}

/// A command message may name any URL as its result queue (issue #13, item 15): the
/// result goes to the SQS endpoint of the listener's region (here the emulator, through
/// `AWS_ENDPOINT_URL_SQS`) with that URL as a parameter, and the host the URL names gets
/// no request, so never the listener's credentials. The log says where the result went.
/// A cfn-hup service started by a test, killed when the test ends however it ends.
struct Service(std::process::Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_result_queue_on_another_host_gets_no_request() {
    let setup = Commands::new(&hook("h", "deploy", "echo done", ""));
    let elsewhere = RecordingProxy::start();
    let result_queue = format!("{}{}", elsewhere.url, setup.results);
    setup.send(&setup.command("deploy", "inv-far", json!({"ResultQueue": result_queue})));
    let run = setup.once();
    assert!(elsewhere.requests().is_empty(), "the result queue's host got {:?}\n{run}", elsewhere.requests());
    let results = setup.results();
    assert_eq!(results.len(), 1, "{results:?}\n{run}");
    assert_eq!((&results[0]["InvocationId"], &results[0]["Status"]), (&json!("inv-far"), &json!("SUCCESS")));
    let log = setup.log();
    let line = format!("Queue {result_queue} is not on {}: sending to {}", setup.emulator.url, setup.emulator.url);
    assert!(log.contains(&line), "{line}\n{log}");
    assert!(
        log.contains(&format!("\"InvocationId\": \"inv-far\", \"Data\": \"done\"}} to queue {result_queue}\n")),
        "{log}"
    );
    assert_eq!(setup.queue_counts(), (0, 0));
}

/// Without `AWS_ENDPOINT_URL_SQS` the listener calls the SQS endpoint of its region over
/// https, whatever host its queue URL names (here the emulator's): a recording proxy sees
/// the CONNECT to `sqs.us-east-1.amazonaws.com:443` (and refuses it, so nothing leaves
/// the machine), and the queue's host gets no SQS request.
#[test]
fn without_the_override_the_listener_calls_its_regions_endpoint() {
    let setup = Commands::new("");
    let proxy = RecordingProxy::start();
    let since =
        setup.emulator.get_json("/_emu/requests").as_array().unwrap().last().map_or(0, |r| r["seq"].as_u64().unwrap());
    let run = setup
        .sandbox
        .cmd("cfn-hup")
        .arg("-c")
        .arg(&setup.dir)
        .arg("-v")
        .arg("--no-daemon")
        .env(WAIT_VAR, "1")
        .env("HTTPS_PROXY", &proxy.url)
        .run();
    run.code(0);
    assert_eq!(proxy.targets(), ["sqs.us-east-1.amazonaws.com:443"], "{run}");
    // Only requests on this test's queue: other tests call SQS on the shared emulator
    // meanwhile (the JSON protocol names the queue in its body, the query protocol in
    // its path).
    let sqs_calls: Vec<Value> = setup
        .emulator
        .get_json(&format!("/_emu/requests?since={since}"))
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["queue"] == setup.queue.as_str()
                || r["path"].as_str().is_some_and(|p| p.trim_end_matches('/') == setup.queue)
        })
        .cloned()
        .collect();
    assert!(sqs_calls.is_empty(), "{sqs_calls:#?}");
    assert!(setup.log().contains("Could not receive commands from"), "{}", setup.log());
}

/// `sqs_url` in `[main]` (HUP-CONF-01) moves the listener's SQS endpoint, without the
/// environment variable.
#[test]
fn sqs_url_in_the_main_section_moves_the_sqs_endpoint() {
    let setup = Commands::new(&hook("h", "deploy", "echo by sqs_url", ""));
    let conf = setup.dir.join("cfn-hup.conf");
    let main = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(&conf, format!("{main}sqs_url={}\n", setup.emulator.url)).unwrap();
    setup.send(&setup.command("deploy", "inv-sqs-url", json!({})));
    let run =
        setup.sandbox.cmd("cfn-hup").arg("-c").arg(&setup.dir).arg("-v").arg("--no-daemon").env(WAIT_VAR, "1").run();
    run.code(0);
    let results = setup.results();
    assert_eq!(results.len(), 1, "{results:?}\n{run}\n{}", setup.log());
    assert_eq!((&results[0]["InvocationId"], &results[0]["Status"]), (&json!("inv-sqs-url"), &json!("SUCCESS")));
    assert_eq!(setup.queue_counts(), (0, 0), "the message was received and deleted through sqs_url");
}

#[test]
fn failures_and_long_output_follow_the_1024_character_rules() {
    let action = "if [ \"$CMD_DATA\" = fail ]; then head -c 600 /dev/zero | tr '\\0' e >&2; \
                  head -c 600 /dev/zero | tr '\\0' f >&2; printf '  \\n' >&2; echo ignored; exit 3; \
                  else head -c 1100 /dev/zero | tr '\\0' o; fi";
    let setup = Commands::new(&hook("h", "deploy", action, ""));
    setup.send(&setup.command("deploy", "inv-fail", json!({"Data": "fail"})));
    setup.once();
    setup.send(&setup.command("deploy", "inv-long", json!({"Data": "long"})));
    setup.once();
    let mut results = setup.results();
    results.sort_by_key(|r| r["InvocationId"].as_str().unwrap().to_string());
    let message = format!("{}...{}", "e".repeat(500), "f".repeat(500));
    assert_eq!(
        results,
        [
            json!({"DispatcherId": "disp-1", "InvocationId": "inv-fail", "CommandName": "deploy",
                   "Status": "FAILURE", "ListenerId": setup.listener_id, "Message": message}),
            json!({"DispatcherId": "disp-1", "InvocationId": "inv-long", "CommandName": "deploy",
                   "Status": "FAILURE", "ListenerId": setup.listener_id,
                   "Message": format!("Result data was longer than 1024 bytes. Started with: {}", "o".repeat(100))}),
        ]
    );
    assert_eq!(setup.queue_counts(), (0, 0), "a failed action still completes the command");
    // cfn-hup's activity record (`cfn-bootstrap status`) has both runs, and the failure.
    let activity: Value = serde_json::from_str(&read(&setup.sandbox.path("lib/cfn-hup/data/activity.json"))).unwrap();
    let exits: Vec<(&str, i64)> = activity["hook_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["hook"].as_str().unwrap(), r["exit_code"].as_i64().unwrap()))
        .collect();
    assert_eq!(exits, [("h", 3), ("h", 0)]);
    assert_eq!(activity["last_error"]["message"], "Action for h exited with 3");
}

#[test]
fn a_repeated_command_runs_once_across_runs_and_commands_run_json_keeps_the_reference_format() {
    let setup = Commands::new("");
    let marks = setup.marks_path();
    std::fs::write(setup.dir.join("hooks.conf"), hook("h", "deploy", &format!("echo ran >> {}", marks.display()), ""))
        .unwrap();
    // A corrupt state file is deleted and the record starts empty.
    std::fs::create_dir_all(setup.commands_run_path().parent().unwrap()).unwrap();
    std::fs::write(setup.commands_run_path(), "{corrupt").unwrap();
    let command = setup.command("deploy", "inv-dup", json!({}));
    setup.send(&command);
    setup.send(&command);
    let first = setup.once();
    assert!(setup.log().contains("commands_run.json is corrupt; deleting it"), "{first}");
    setup.once();
    assert_eq!(setup.marks(), ["ran"], "SQS delivered the command twice; it ran once");
    assert_eq!(setup.results().len(), 1);
    assert_eq!(setup.queue_counts(), (0, 0), "the repeated message is deleted");
    assert_eq!(
        read(&setup.commands_run_path()),
        format!(
            r#"{{"by_day": {{"{}": ["disp-1|deploy|inv-dup"]}}, "by_id": {{"disp-1|deploy|inv-dup": true}}}}"#,
            today()
        )
    );
    // A file written days ago loses its old days on the next write; today's entries stay.
    std::fs::write(
        setup.commands_run_path(),
        r#"{"by_id": {"old|deploy|1": true}, "by_day": {"2020-01-01T00:00:00": ["old|deploy|1"]}}"#,
    )
    .unwrap();
    setup.send(&setup.command("deploy", "inv-new", json!({})));
    setup.once();
    assert_eq!(
        setup.commands_run(),
        json!({"by_id": {"disp-1|deploy|inv-new": true}, "by_day": {today(): ["disp-1|deploy|inv-new"]}})
    );
}

#[test]
fn an_expired_command_is_deleted_without_running() {
    let setup = Commands::new("");
    let marks = setup.marks_path();
    std::fs::write(setup.dir.join("hooks.conf"), hook("h", "deploy", &format!("echo ran >> {}", marks.display()), ""))
        .unwrap();
    let past = chrono::Utc::now().timestamp_millis() - 60_000;
    setup.send(&setup.command("deploy", "inv-old", json!({"Expiration": past})));
    setup.once();
    assert!(setup.marks().is_empty());
    assert_eq!(setup.results(), Vec::<Value>::new());
    assert_eq!(setup.queue_counts(), (0, 0));
    assert!(!setup.commands_run_path().exists(), "an expired command is not recorded");
    // The reference's line: "for stack" names the dispatcher.
    assert!(
        setup.log().contains("[INFO] Invocation inv-old of command deploy for stack disp-1 expired at "),
        "{}",
        setup.log()
    );
}

#[test]
fn an_unknown_command_counts_as_completed() {
    let setup = Commands::new(&hook("h", "deploy", "echo should-not-run", ""));
    setup.send(&setup.command("other", "inv-x", json!({})));
    setup.once();
    assert_eq!(setup.results(), Vec::<Value>::new());
    assert_eq!(setup.queue_counts(), (0, 0));
    assert_eq!(setup.commands_run()["by_id"], json!({"disp-1|other|inv-x": true}));
}

#[test]
fn a_singleton_command_runs_only_on_the_elected_leader() {
    let setup = Commands::new("");
    let marks = setup.marks_path();
    let action = format!("echo \"$INVOCATION_ID\" >> {}", marks.display());
    std::fs::write(setup.dir.join("hooks.conf"), hook("h", "deploy", &action, "singleton=true\n")).unwrap();
    // Another listener already leads inv-b.
    setup
        .emulator
        .call(
            "ElectCommandLeader",
            &[
                ("StackName", &setup.stack),
                ("CommandName", "deploy"),
                ("InvocationId", "inv-b"),
                ("ListenerId", "other"),
            ],
        )
        .unwrap();
    setup.send(&setup.command("deploy", "inv-a", json!({})));
    setup.once();
    setup.send(&setup.command("deploy", "inv-b", json!({})));
    setup.once();
    assert_eq!(setup.marks(), ["inv-a"], "only the leader runs a singleton command");
    let results = setup.results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["InvocationId"], "inv-a");
    assert_eq!(setup.queue_counts(), (0, 0));
    let by_id = setup.commands_run()["by_id"].clone();
    assert_eq!(by_id, json!({"disp-1|deploy|inv-a": true, "disp-1|deploy|inv-b": true}));
    let elections: Vec<Value> = setup
        .emulator
        .requests_for(&setup.stack)
        .into_iter()
        .filter(|r| r["action"] == "ElectCommandLeader" && r["query"]["ListenerId"] == setup.listener_id.as_str())
        .collect();
    assert_eq!(elections.len(), 2, "{elections:#?}");
}

#[test]
fn send_result_false_runs_the_action_without_a_result() {
    let setup = Commands::new("");
    let marks = setup.marks_path();
    let action = format!("echo ran >> {}", marks.display());
    std::fs::write(setup.dir.join("hooks.conf"), hook("h", "deploy", &action, "send_result=false\n")).unwrap();
    setup.send(&setup.command("deploy", "inv-quiet", json!({})));
    setup.once();
    assert_eq!(setup.marks(), ["ran"]);
    assert_eq!(setup.results(), Vec::<Value>::new());
    assert_eq!(setup.queue_counts(), (0, 0));
    assert_eq!(setup.commands_run()["by_id"], json!({"disp-1|deploy|inv-quiet": true}));
}

#[test]
fn two_hooks_for_one_command_are_a_configuration_error() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path("conf");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cfn-hup.conf"), "[main]\nstack=s\n").unwrap();
    std::fs::write(dir.join("hooks.conf"), format!("{}{}", hook("a", "deploy", "x", ""), hook("b", "deploy", "y", "")))
        .unwrap();
    sandbox.cmd("cfn-hup").arg("-c").arg(&dir).arg("--no-daemon").run().code(1).stdout_is("");
    assert!(
        sandbox.log("cfn-hup.log").contains("Error: Multiple hooks for the same command (deploy)"),
        "{}",
        sandbox.log("cfn-hup.log")
    );
}

/// Signing with the instance identity off EC2 leaves the listener without an id.
#[test]
fn without_credentials_off_ec2_there_is_no_listener_id() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path("conf");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cfn-hup.conf"), "[main]\nstack=s\nurl=http://127.0.0.1:1\n").unwrap();
    std::fs::write(dir.join("hooks.conf"), hook("a", "deploy", "x", "")).unwrap();
    sandbox
        .cmd("cfn-hup")
        .arg("-c")
        .arg(&dir)
        .arg("--no-daemon")
        .run()
        .code(1)
        .stdout_is("")
        .stderr_is("Error: Could not retrieve instance id\n");
}

/// In the service the listener runs beside the update hooks and SIGTERM still stops
/// cfn-hup promptly (HUP-RUN-02 with command hooks).
#[test]
fn the_service_runs_commands_and_stops_promptly_on_sigterm() {
    let setup = Commands::new("");
    let marks = setup.marks_path();
    std::fs::write(setup.dir.join("hooks.conf"), hook("h", "deploy", &format!("echo ran >> {}", marks.display()), ""))
        .unwrap();
    let mut guard = setup.service("2");
    setup.send(&setup.command("deploy", "inv-svc-1", json!({})));
    setup.send(&setup.command("deploy", "inv-svc-2", json!({})));
    // Results are collected as they arrive: a receive hides what it returned.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut results = Vec::new();
    while results.len() < 2 || setup.marks().len() < 2 {
        assert!(Instant::now() < deadline, "the service did not run both commands:\n{}", setup.log());
        results.extend(setup.results());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(setup.marks(), ["ran", "ran"]);
    // SAFETY: signalling the process this test started.
    assert_eq!(unsafe { libc::kill(guard.0.id() as i32, libc::SIGTERM) }, 0);
    let stopped = Instant::now();
    let status = loop {
        if let Some(status) = guard.0.try_wait().unwrap() {
            break status;
        }
        assert!(stopped.elapsed() < STOPS_PROMPTLY, "cfn-hup did not stop after SIGTERM:\n{}", setup.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(setup.log().contains("Shutting down cfn-hup"));
}

/// SIGHUP while the listener waits in its 20 s long poll: the command that poll returns
/// runs the reloaded hook's action; SIGTERM during the next long poll still stops the
/// service within the listener's one-second grace (HUP-RUN-04, HUP-RUN-06).
#[test]
fn a_reload_during_the_long_poll_applies_to_the_next_command_and_sigterm_does_not_wait_for_the_poll() {
    let setup = Commands::new("");
    let marks = setup.marks_path();
    let write_hook = |word: &str| {
        std::fs::write(
            setup.dir.join("hooks.conf"),
            hook("h", "deploy", &format!("echo {word} >> {}", marks.display()), "send_result=false\n"),
        )
        .unwrap()
    };
    write_hook("old");
    let mut guard = setup.service("20");
    let pid = guard.0.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !setup.log().contains("Command listener") {
        assert!(Instant::now() < deadline, "the listener did not start:\n{}", setup.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Inside the first long poll.
    setup.wait_for_a_long_poll(deadline);
    write_hook("new");
    // SAFETY: signalling the process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    while !setup.log().contains("Configuration reloaded") {
        assert!(Instant::now() < deadline, "no reload:\n{}", setup.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    setup.send(&setup.command("deploy", "inv-reload-1", json!({})));
    while setup.marks().is_empty() {
        assert!(Instant::now() < deadline, "the command did not run:\n{}", setup.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(setup.marks(), ["new"], "{}", setup.log());
    // The next long poll has begun (nothing is on the queue) when SIGTERM arrives.
    setup.wait_for_a_long_poll(deadline);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let stopped = Instant::now();
    let status = loop {
        if let Some(status) = guard.0.try_wait().unwrap() {
            break status;
        }
        assert!(stopped.elapsed() < STOPS_PROMPTLY, "cfn-hup waited for the long poll:\n{}", setup.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(setup.log().contains("[INFO] Shutting down cfn-hup\n"), "{}", setup.log());
}

/// SIGTERM while a command's action runs (issue 13, item 12; HUP-RUN-04): the action's
/// process group gets SIGTERM — the action and the `sleep` it started end — and cfn-hup
/// stops within seconds, exit 0, the stop logged.
#[test]
fn sigterm_terminates_a_running_command_action_and_what_it_started() {
    let setup = Commands::new("");
    let pids = setup.sandbox.path("action.pids");
    let action = format!("sleep 300 & echo $$ $! > {0}.tmp; mv {0}.tmp {0}; wait", pids.display());
    std::fs::write(setup.dir.join("hooks.conf"), hook("long", "deploy", &action, "send_result=false\n")).unwrap();
    let mut guard = setup.service("2");
    setup.send(&setup.command("deploy", "inv-long-1", json!({})));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pids.exists() {
        assert!(Instant::now() < deadline, "the action did not start:\n{}", setup.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = read(&pids);
    let numbers: Vec<i32> = text.split_whitespace().map(|n| n.parse().unwrap()).collect();
    let alive = |pid: i32| {
        // A zombie (exited, not yet reaped) counts as gone.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) != Some("Z"))
    };
    assert!(numbers.iter().all(|&pid| alive(pid)), "{numbers:?}");
    // SAFETY: signalling the process this test started.
    assert_eq!(unsafe { libc::kill(guard.0.id() as i32, libc::SIGTERM) }, 0);
    let stopped = Instant::now();
    let status = loop {
        if let Some(status) = guard.0.try_wait().unwrap() {
            break status;
        }
        assert!(stopped.elapsed() < STOPS_PROMPTLY, "cfn-hup did not stop after SIGTERM:\n{}", setup.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    let gone = || numbers.iter().all(|&pid| !alive(pid));
    while !gone() {
        if stopped.elapsed() > Duration::from_secs(6) {
            for &pid in &numbers {
                // SAFETY: cleaning up the processes this test's action started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            panic!("the action's processes still ran: {numbers:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = setup.log();
    assert!(log.contains(&format!("[INFO] Stopping: terminating the action for long (pid {})\n", numbers[0])), "{log}");
    assert!(log.contains("[WARNING] Action for long exited with -15\n"), "{log}");
}

/// SIGHUP with a changed `[main]` while a command's action runs (issue 13, item 14): the
/// new listener starts only once the old one has ended its round — at the action's end
/// the log still shows one listener started — and it starts from what the old one
/// recorded in commands_run.json, so the same command delivered again does not run twice.
#[test]
fn a_listener_replaced_on_sighup_starts_after_the_old_round_and_keeps_its_record() {
    let setup = Commands::new("");
    let marks = setup.marks_path();
    let log = setup.sandbox.path("log/cfn-hup.log");
    let action = format!(
        "echo start >> {m}; sleep 2; echo listeners=$(grep -c 'Command listener .* started' {l}) >> {m}",
        m = marks.display(),
        l = log.display()
    );
    std::fs::write(setup.dir.join("hooks.conf"), hook("h", "deploy", &action, "send_result=false\n")).unwrap();
    let guard = setup.service("1");
    let pid = guard.0.id() as i32;
    let started =
        |log: &str| log.lines().filter(|l| l.contains("Command listener ") && l.ends_with(" started")).count();
    let deadline = Instant::now() + Duration::from_secs(30);
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        while !done() {
            assert!(Instant::now() < deadline, "{what}:\n{}", setup.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("the listener did not start", &|| started(&setup.log()) == 1);
    let command = setup.command("deploy", "inv-handover-1", json!({}));
    setup.send(&command);
    wait_for("the action did not start", &|| setup.marks() == ["start"]);
    let mut conf = read(&setup.dir.join("cfn-hup.conf"));
    conf.push_str("interval=30\n");
    std::fs::write(setup.dir.join("cfn-hup.conf"), conf).unwrap();
    // SAFETY: signalling the process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    wait_for("no reload", &|| setup.log().contains("Configuration reloaded"));
    wait_for("the action did not end", &|| setup.marks().len() == 2);
    assert_eq!(setup.marks()[1], "listeners=1", "the new listener started during the old one's round");
    wait_for("the new listener did not start", &|| started(&setup.log()) == 2);
    setup.send(&command);
    wait_for("the repeated message was not seen", &|| setup.log().contains("[INFO] Already ran disp-1|deploy|"));
    assert_eq!(setup.marks().len(), 2, "{}", setup.log());
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    drop(guard);
}

/// A command whose action cannot start — its `runas` user does not exist, or its `Data`
/// holds a NUL, which no environment variable can carry — would not start the next time
/// either: it is recorded as failed (a FAILURE result saying why, when the hook sends
/// results), recorded as run and deleted, instead of coming back every round until it
/// expires (HUP-CMD-03).
#[test]
fn a_command_whose_action_cannot_start_is_a_failure_and_is_deleted() {
    let setup = Commands::new(
        &[
            hook("nouser", "deploy", "echo should-not-run", "runas=no-such-user-cfn\n"),
            hook("quiet", "refresh", "echo should-not-run", "send_result=false\n"),
        ]
        .concat(),
    );
    setup.send(&setup.command("deploy", "inv-nouser", json!({})));
    setup.once();
    setup.send(&setup.command("refresh", "inv-nul", json!({"Data": "a\u{0}b"})));
    setup.once();
    let results = setup.results();
    assert_eq!(
        results,
        [json!({"DispatcherId": "disp-1", "InvocationId": "inv-nouser", "CommandName": "deploy",
                "Status": "FAILURE", "ListenerId": setup.listener_id,
                "Message": "Action for nouser cannot run: user no-such-user-cfn does not exist"})],
        "{}",
        setup.log()
    );
    assert_eq!(setup.queue_counts(), (0, 0), "both messages are deleted\n{}", setup.log());
    assert_eq!(
        setup.commands_run()["by_id"],
        json!({"disp-1|deploy|inv-nouser": true, "disp-1|refresh|inv-nul": true})
    );
    let log = setup.log();
    assert!(log.contains("[ERROR] Action for quiet could not be started: "), "{log}");
    assert!(!log.contains("should-not-run"), "{log}");
}

/// The lines about a command's result show URLs redacted like every other line
/// (SEC-02, LOG-08): the action's output at DEBUG, the environment, the result sent, and
/// the ERROR line when the result queue does not take it — also a result queue whose
/// password holds a space, where the log's redaction of free text ends the URL early.
#[test]
fn result_queue_urls_and_action_output_are_logged_redacted() {
    const PASSWORD: &str = "s3cretpw";
    const SIGNATURE: &str = "SIGsecret123";
    let secret_url = |host: &str| format!("http://alice:{PASSWORD}@{host}/q?X-Amz-Signature={SIGNATURE}");
    let printed = secret_url("example.invalid");
    let setup = Commands::new(&hook("h", "deploy", &format!("echo 'fetched {printed}'; echo 'err {printed}' >&2"), ""));
    // A password with a space: where free text is redacted, a URL ends at white space.
    let result_queue = format!("http://alice:{PASSWORD} x@127.0.0.1:1/q?X-Amz-Signature={SIGNATURE}");
    setup.send(&setup.command("deploy", "inv-secret", json!({"ResultQueue": result_queue})));
    setup.cmd().arg("--no-daemon").env(WAIT_VAR, "1").run().code(0);
    let log = setup.log();
    let shown = |host: &str| format!("http://REDACTED@{host}/q?X-Amz-Signature=REDACTED");
    assert!(log.contains(&format!("[DEBUG] Action for h output: fetched {}\n", shown("example.invalid"))), "{log}");
    assert!(log.contains(&format!("[DEBUG] Action for h stderr: err {}\n", shown("example.invalid"))), "{log}");
    assert!(
        log.contains(&format!(
            "[ERROR] Could not send the result of disp-1|deploy|inv-secret to {}: ",
            shown("127.0.0.1:1")
        )),
        "{log}"
    );
    // The reference's `Processing message: {…}` line: the URL redacted whole (issue 33).
    let queue = format!("u'{}'", shown("127.0.0.1:1"));
    assert!(log.lines().any(|l| l.contains("[DEBUG] Processing message: {") && l.contains(&queue)), "{log}");
    assert!(!log.contains(PASSWORD) && !log.contains(SIGNATURE), "{log}");
}
