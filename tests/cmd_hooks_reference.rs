//! cfn-hup's command hooks compared with what the reference did on the same cases
//! (tests/golden/cmd-hooks; SPEC §14.7, §11.2, §15): HUP-CMD-01 (registration and listener
//! credentials), HUP-CMD-02 (expiry, de-duplication through `commands_run.json`, unparsable
//! messages), HUP-CMD-03 (the action's environment and the result message, its
//! 1024-character rules), HUP-CMD-04 (singleton leader election), STATE-05 (the file's
//! format), CMDT-01 (cfn-elect-cmd-leader makes another listener the leader first), CMDT-02
//! and CMDT-03 (cfn-send-cmd-result's message and cfn-send-cmd-event's event, sent from an
//! action). The reference's SQS calls (API-06) are in the golden `requests` files; ours
//! differ on purpose, as the deliberate differences in the project README's Compatibility
//! section say.
//!
//! Each case is one `cfn-hup -v --no-daemon` that receives one message, as recorded. It
//! runs in a private network where the emulator listens on the recording's port and
//! answers IMDS at its real address, so queue URLs and the listener id (the instance id)
//! are the recorded ones. Only what must differ is normalised: times, the keys the
//! emulator hands out, receipt handles, the listener queue's name and the work directory.

mod common;
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const PORT: u16 = 5055;
const REGION: &str = "us-east-1";
const STACK: &str = "cmdref";
const RESULTS: &str = "cmdref-results";
/// The variables a command's action gets from cfn-hup (HUP-CMD-03).
const COMMAND_VARIABLES: &[&str] = &[
    "CMD_DATA",
    "CMD_NAME",
    "DISPATCHER_ID",
    "EVENT_HANDLE",
    "INVOCATION_ID",
    "LISTENER_ID",
    "RESULT_ACCESS_KEY",
    "RESULT_QUEUE",
    "RESULT_SECRET_KEY",
    "RESULT_SESSION_TOKEN",
    "STACK_NAME",
];

fn golden() -> PathBuf {
    workspace().join("tests/golden/cmd-hooks")
}

/// What one run did, in the golden files' terms.
#[derive(Debug, Default, PartialEq)]
struct Outcome {
    exit: String,
    results: String,
    /// The command events PUT to the emulator's event handles: path, query, Content-Type, body.
    events: Vec<Value>,
    queue: String,
    /// `commands_run.json` as JSON: the reference's `by_id` is in Python 2's hash order.
    commands_run: Option<Value>,
    /// The command variables of the action's environment, normalised.
    action_env: Option<BTreeMap<String, String>>,
    /// Any other variable the action got that its cfn-hup was not given (none).
    added_variables: Vec<String>,
    /// The CloudFormation actions called, in order.
    cloudformation: Vec<String>,
}

/// The reference's outcome of `case`, from the golden files.
fn recorded(case: &str) -> (Outcome, String) {
    let dir = golden().join("reference").join(case);
    let file = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let requests = file("requests").unwrap();
    let cloudformation = requests
        .lines()
        .filter_map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            (parts[1] == "/").then(|| parts[2].to_string())
        })
        .collect();
    let outcome = Outcome {
        exit: file("exit").unwrap(),
        results: file("results").unwrap(),
        events: file("events").unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect(),
        queue: file("queue").unwrap(),
        commands_run: file("commands_run.json").map(|t| serde_json::from_str(&t).unwrap()),
        action_env: file("action.env").map(|env| command_variables(&env)),
        added_variables: added_variables(&file("action.env").unwrap_or_default(), &|name| {
            ["HOME", "LANG", "PATH", "PWD", "PYTHONPATH", "SHLVL", "TZ", "_"].contains(&name)
        }),
        cloudformation,
    };
    (outcome, file("cfn-hup.log").unwrap())
}

/// The variables of `env | sort` output that are neither command variables nor `given`
/// to cfn-hup (or set by the shell).
fn added_variables(env: &str, given: &dyn Fn(&str) -> bool) -> Vec<String> {
    env.lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .filter(|k| !COMMAND_VARIABLES.contains(k) && !given(k))
        .map(str::to_string)
        .collect()
}

fn command_variables(env: &str) -> BTreeMap<String, String> {
    env.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| COMMAND_VARIABLES.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Placeholders for what differs from run to run (tests/golden/cmd-hooks/README.md).
fn normalise(text: &str, work: &Path) -> String {
    let token = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    // The sandbox's lib directory stands for /var/lib.
    let text = text.replace(&format!("{}/lib/", work.display()), "/var/lib/");
    let text = text.replace(&work.display().to_string(), "{W}");
    let text = mask(&text, "ASIALISTENER", |c| c.is_ascii_hexdigit(), "{ACCESS_KEY}", false);
    let text = mask(&text, "ListenerSessionToken//", token, "{SESSION_TOKEN}", false);
    let text = mask(&text, "RESULT_SECRET_KEY=", token, "{SECRET_KEY}", true);
    let text =
        mask(&text, "cfn-listener-cmdref-i-0123456789abcdef0-", |c| c.is_ascii_hexdigit(), "{LISTENER_QUEUE}", false);
    let text = mask(&text, "Deleting ", |c| c != ' ', "{RECEIPT_HANDLE}", true);
    let text = mask(&text, "refresh in ", |c| c.is_ascii_digit() || c == '.', "{SECONDS}", true);
    let text = mask_days(&text);
    text.split_inclusive('\n').map(mask_time).collect()
}

/// Replaces `prefix` and the run of `allowed` characters after it by `placeholder`
/// (keeping the prefix when asked).
fn mask(text: &str, prefix: &str, allowed: impl Fn(char) -> bool, placeholder: &str, keep_prefix: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        if keep_prefix {
            out.push_str(prefix);
        }
        out.push_str(placeholder);
        let after = &rest[at + prefix.len()..];
        rest = after.trim_start_matches(&allowed);
    }
    out.push_str(rest);
    out
}

/// `YYYY-MM-DDT00:00:00` (the days of `commands_run.json`) to `{DAY}`.
fn mask_days(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("T00:00:00") {
        let date = at.checked_sub(10).map(|start| &rest[start..at]);
        if date.is_some_and(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok()) {
            out.push_str(&rest[..at - 10]);
            out.push_str("{DAY}");
        } else {
            out.push_str(&rest[..at + 9]);
        }
        rest = &rest[at + 9..];
    }
    out.push_str(rest);
    out
}

/// A log line's `YYYY-MM-DD HH:MM:SS,mmm` to `{TIME}`.
fn mask_time(line: &str) -> String {
    match line.get(..23) {
        Some(time) if chrono::NaiveDateTime::parse_from_str(time, "%Y-%m-%d %H:%M:%S,%3f").is_ok() => {
            format!("{{TIME}}{}", &line[23..])
        }
        _ => line.to_string(),
    }
}

struct Harness {
    sandbox: Sandbox,
    emulator: Emulator,
    listener_queue: Option<String>,
}

impl Harness {
    fn new() -> Harness {
        let emulator = Emulator::start_at(
            &["--port", &PORT.to_string(), "--imds-host", "169.254.169.254", "--imds-port", "80"],
            PORT,
        );
        let template = json!({"Resources": {"Instance": {"Type": "AWS::EC2::Instance",
            "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}}}});
        emulator.create_stack(STACK, &template);
        sqs_post(&emulator, REGION, "/", &[("Action", "CreateQueue"), ("QueueName", RESULTS)]);
        let sandbox = Sandbox::new();
        let work = sandbox.dir.path().display().to_string();
        let creds =
            sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
        std::fs::rename(creds, sandbox.path("creds")).unwrap();
        let conf = sandbox.path("conf");
        std::fs::create_dir(&conf).unwrap();
        let fill = |name: &str| read(&golden().join(name)).replace("{W}", &work).replace("{URL}", &emulator.url);
        std::fs::write(conf.join("cfn-hup.conf"), fill("cfn-hup.conf")).unwrap();
        std::fs::write(conf.join("hooks.conf"), fill("hooks.conf")).unwrap();
        Harness { sandbox, emulator, listener_queue: None }
    }

    fn tool(&self, name: &str) -> TestCommand {
        // The environment the recording gave the reference; IMDS at its real address. A
        // queue URL never chooses where ours sends a signed request (crates/aws/src/sqs.rs):
        // cfn-send-cmd-result, run by an action, learns the SQS endpoint from the SDKs'
        // variable, which cfn-hup passes on.
        let path = format!("/usr/sbin:/usr/bin:/sbin:/bin:{}", self.sandbox.path("bin").display());
        self.sandbox
            .cmd(name)
            .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .env("AWS_ENDPOINT_URL_SQS", &self.emulator.url)
            .env("PATH", path)
            .env("HOME", self.sandbox.dir.path())
            .env("TZ", "UTC")
    }

    fn run_case(&mut self, case: &Value) -> (Outcome, String) {
        let _ = std::fs::remove_file(self.sandbox.path("action.env"));
        let _ = std::fs::remove_file(self.sandbox.path("log/cfn-hup.log"));
        if let Some(other) = case["other_leader"].as_str() {
            let command = &case["command"];
            self.tool("cfn-elect-cmd-leader")
                .args(["-s", STACK, "-c", command["CommandName"].as_str().unwrap()])
                .args(["-i", command["InvocationId"].as_str().unwrap(), "-l", other, "-u", &self.emulator.url])
                .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                .run()
                .code(0);
        }
        if let Some(queue) = &self.listener_queue {
            let body = match case["raw_body"].as_str() {
                Some(raw) => raw.to_string(),
                None => {
                    let mut command = case["command"].clone();
                    command["ResultQueue"] = format!("{}/123456789012/{RESULTS}", self.emulator.url).into();
                    // The recording's envelope (Python's json.dumps of the same fields).
                    format!(
                        "{{\"Type\": \"Notification\", \"MessageId\": \"00000000-0000-0000-0000-000000000001\", \
                         \"TopicArn\": \"arn:aws:sns:us-east-1:123456789012:commands\", \"Message\": {}}}",
                        serde_json::to_string(&python_dumps(&command)).unwrap()
                    )
                }
            };
            sqs_post(&self.emulator, REGION, queue, &[("Action", "SendMessage"), ("MessageBody", &body)]);
        }
        let seen = self.emulator.get_json("/_emu/requests").as_array().unwrap().len();
        let events_seen = self.emulator.get_json("/_emu/events").as_array().unwrap().len();
        let run = self
            .tool("cfn-hup")
            .args(["-v", "-c"])
            .arg(self.sandbox.path("conf"))
            .arg("--no-daemon")
            .env("CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS", "1")
            .run();
        if self.listener_queue.is_none() {
            let listeners = self.emulator.get_json("/_emu/listeners");
            let url = listeners[0]["QueueUrl"].as_str().unwrap_or_else(|| panic!("no listener: {listeners}\n{run}"));
            self.listener_queue = Some(url.strip_prefix(&self.emulator.url).unwrap().to_string());
        }
        let work = self.sandbox.dir.path();
        let requests = self.emulator.get_json("/_emu/requests");
        let cloudformation = requests.as_array().unwrap()[seen..]
            .iter()
            .filter(|r| r["kind"] == "cloudformation" && r["user_agent"].as_str().is_some_and(|a| !a.contains("tests")))
            .map(|r| r["action"].as_str().unwrap().to_string())
            .collect();
        let action_env = std::fs::read_to_string(self.sandbox.path("action.env")).ok();
        let outcome = Outcome {
            exit: format!("{}\n", run.code),
            results: self.drain_results().iter().map(|b| format!("{b}\n")).collect(),
            events: self.emulator.get_json("/_emu/events").as_array().unwrap()[events_seen..]
                .iter()
                .map(|e| json!({"path": e["path"], "query": e["query"], "content_type": e["content_type"], "body": e["body"]}))
                .collect(),
            queue: self.queue_counts(),
            commands_run: std::fs::read_to_string(self.sandbox.path("lib/cfn-hup/data/commands_run.json"))
                .ok()
                .map(|t| serde_json::from_str(&normalise(&t, work)).unwrap()),
            action_env: action_env.as_deref().map(|env| command_variables(&normalise(env, work))),
            added_variables: added_variables(action_env.as_deref().unwrap_or_default(), &|name| {
                name.starts_with("CFN_BOOTSTRAP_")
                    || ["AWS_ENDPOINT_URL_SQS", "HOME", "LANG", "PATH", "PWD", "SHLVL", "TZ", "_"].contains(&name)
            }),
            cloudformation,
        };
        (outcome, normalise(&self.sandbox.log("cfn-hup.log"), work))
    }

    fn drain_results(&self) -> Vec<String> {
        let path = format!("/123456789012/{RESULTS}");
        let mut bodies = Vec::new();
        loop {
            let answer = sqs_post(
                &self.emulator,
                REGION,
                &path,
                &[("Action", "ReceiveMessage"), ("MaxNumberOfMessages", "10"), ("WaitTimeSeconds", "0")],
            );
            let handles = xml_texts(&answer, "ReceiptHandle");
            if handles.is_empty() {
                return bodies;
            }
            bodies.extend(xml_texts(&answer, "Body"));
            for handle in handles {
                sqs_post(&self.emulator, REGION, &path, &[("Action", "DeleteMessage"), ("ReceiptHandle", &handle)]);
            }
        }
    }

    fn queue_counts(&self) -> String {
        let queue = self.listener_queue.as_deref().unwrap();
        let answer =
            sqs_post(&self.emulator, REGION, queue, &[("Action", "GetQueueAttributes"), ("AttributeName.1", "All")]);
        let attribute = |name: &str| {
            let at = answer.find(&format!("<Name>{name}</Name>")).unwrap_or_else(|| panic!("{name} in {answer}"));
            xml_texts(&answer[at..], "Value")[0].clone()
        };
        format!(
            "visible {} in-flight {}\n",
            attribute("ApproximateNumberOfMessages"),
            attribute("ApproximateNumberOfMessagesNotVisible")
        )
    }
}

/// The command as the recording's `json.dumps` wrote it: keys as given, `", "` and `": "`.
fn python_dumps(command: &Value) -> String {
    let fields: Vec<String> =
        command.as_object().unwrap().iter().map(|(k, v)| format!("{}: {}", Value::String(k.clone()), v)).collect();
    format!("{{{}}}", fields.join(", "))
}

/// The reference's log with the presigned URLs' signatures redacted, as ours logs them
/// (LOG-08).
fn redacted(log: &str) -> String {
    log.replace("X-Amz-Signature=abc", "X-Amz-Signature=REDACTED")
}

/// Log records that only ours writes: where a signed SQS request goes (a queue URL does not
/// choose it), the action's stderr, and a command no hook handles.
fn ours_only(record: &str) -> bool {
    record.starts_with("[DEBUG] SQS calls for ")
        || record.starts_with("[DEBUG] No hook for command ")
        || (record.starts_with("[DEBUG] Action for ") && record.contains(" stderr: "))
}

/// Records both write, worded alike only up to here: the environment (ours masks the
/// secrets and shows only the command's variables), an unparsable message (ours gives the
/// reason on the line, the reference a traceback; ours shows no MD5 or attributes).
const SAME_START: &[&str] = &[
    "[DEBUG] Action environment: ",
    "[ERROR] Received invalid message",
    "[INFO] Invalid message, deleting: Message[MessageId:",
];

/// A log's records (a line with its continuation lines) without the time stamp, each cut
/// to its [`SAME_START`] prefix, without the records only one side writes.
fn comparable(log: &str, only_here: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut records: Vec<String> = Vec::new();
    for line in log.split_inclusive('\n') {
        match line.strip_prefix("{TIME} ") {
            Some(start) => records.push(start.to_string()),
            None => records.last_mut().expect("a log starts with a time stamp").push_str(line),
        }
    }
    let mut kept = Vec::new();
    for record in &records {
        if !only_here(record) {
            let prefix = SAME_START.iter().find(|p| record.starts_with(**p));
            kept.push(prefix.map_or_else(|| record.clone(), |p| format!("{p}…")));
        }
    }
    kept
}

#[test]
fn command_hooks_do_what_the_reference_did() {
    let cases: Vec<Value> = serde_json::from_str(&read(&golden().join("cases.json"))).unwrap();
    let runs = in_private_network(move || {
        let mut harness = Harness::new();
        cases
            .iter()
            .map(|case| (case["name"].as_str().unwrap().to_string(), harness.run_case(case)))
            .collect::<Vec<_>>()
    });
    let mut differences = Vec::new();
    for (case, (ours, our_log)) in &runs {
        let (theirs, their_log) = recorded(case);
        if ours != &theirs {
            differences.push(format!("{case}:\n  ours:      {ours:?}\n  reference: {theirs:?}"));
        }
        // Every reference line, in order (issue 33).
        let scenario = format!("cmd-hooks/{case}/cfn-hup.log");
        differences.extend(reference_lines::failures(
            &scenario,
            &reference_lines::lines(our_log),
            &reference_lines::lines(&their_log),
        ));
        let (our_records, their_records) =
            (comparable(our_log, &ours_only), comparable(&redacted(&their_log), &|_| false));
        if our_records != their_records {
            differences.push(format!(
                "{case}: the log differs\n--- ours\n{}--- reference\n{}",
                our_records.concat(),
                their_records.concat()
            ));
        }
    }
    println!("{}", reference_lines::tally());
    let unused = reference_lines::unused(|scenario| scenario.is_empty() || scenario.starts_with("cmd-hooks/"));
    assert!(unused.is_empty(), "NOT_KEPT entries that excuse no line any more:\n{}", unused.join("\n"));
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
