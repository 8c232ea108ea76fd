//! The credential sources the reference lacks, end to end (README "Credentials"): an ECS-style
//! container endpoint (full URI with a token file, relative URI), IRSA web identity through the
//! emulator's STS, a profile file with keys and with `credential_process`; and the order
//! of all sources (CRED-01, CRED-03, CRED-08): explicit options beat everything, a source the
//! environment names beats the instance identity. No IMDS answers unless a test says so
//! (the sandbox points it at a closed port).

mod common;
use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// Keys the container endpoint hands out, which the emulator accepts.
const TASK_KEY: &str = "ASIATASKROLEKEY";
const TASK_SECRET: &str = "task/secret/VALUE";
const TASK_TOKEN: &str = "TaskSessionTOKEN//xyz";
/// Keys of a profile (static keys and credential_process).
const PROFILE_KEY: &str = "AKIDPROFILEKEY";
const PROFILE_SECRET: &str = "profile/secret/VALUE";
const PROCESS_KEY: &str = "ASIAPROCESSKEY";
const PROCESS_SECRET: &str = "process/secret/VALUE";
const PROCESS_TOKEN: &str = "ProcessSessionTOKEN//abc";
/// What an EKS pod's projected token file holds.
const POD_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.pod-web-identity-TOKEN.sig";

fn emulator_args() -> Vec<String> {
    [
        format!("{TASK_KEY}:{TASK_SECRET}:{TASK_TOKEN}"),
        format!("{PROFILE_KEY}:{PROFILE_SECRET}"),
        format!("{PROCESS_KEY}:{PROCESS_SECRET}:{PROCESS_TOKEN}"),
    ]
    .into_iter()
    .flat_map(|c| ["--credentials".to_string(), c])
    .collect()
}

fn emulator() -> Emulator {
    let args = emulator_args();
    Emulator::start(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The path and `Authorization` header of one request to the credential endpoint.
type Seen = (String, Option<String>);

/// An ECS/EKS-style credential endpoint: answers every GET with the task keys (or with
/// `status` and an error body) and records the path and `Authorization` of each request.
struct CredentialEndpoint {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl CredentialEndpoint {
    fn start(listener: TcpListener, status: u16) -> CredentialEndpoint {
        CredentialEndpoint::issuing(listener, status, chrono::TimeDelta::hours(6))
    }

    /// An endpoint whose keys expire `valid_for` after each answer.
    fn issuing(listener: TcpListener, status: u16, valid_for: chrono::TimeDelta) -> CredentialEndpoint {
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut authorization = None;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    if let Some((n, v)) = header.trim_end().split_once(':')
                        && n.eq_ignore_ascii_case("authorization")
                    {
                        authorization = Some(v.trim().to_string());
                    }
                }
                record.lock().unwrap().push((path, authorization));
                let expiration = (chrono::Utc::now() + valid_for).format("%Y-%m-%dT%H:%M:%SZ");
                let body = if status == 200 {
                    json!({"AccessKeyId": TASK_KEY, "SecretAccessKey": TASK_SECRET, "Token": TASK_TOKEN,
                           "Expiration": expiration.to_string(), "RoleArn": "arn:aws:iam::123456789012:role/task"})
                    .to_string()
                } else {
                    json!({"code": "AccessDenied", "message": "the task has no role"}).to_string()
                };
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        CredentialEndpoint { url, seen }
    }

    fn on_loopback(status: u16) -> CredentialEndpoint {
        CredentialEndpoint::start(TcpListener::bind("127.0.0.1:0").unwrap(), status)
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn stack_on(emulator: &Emulator) -> String {
    emulator.create_stack(&unique("creds"), &instance_template(&json!({"app": {"greeting": "hello"}})))
}

/// `cfn-get-metadata` for the stack's greeting, without credential options.
fn get_greeting(sandbox: &Sandbox, emulator: &Emulator, stack: &str) -> TestCommand {
    sandbox.cmd("cfn-get-metadata").args(["-s", stack, "-r", "Instance", "-k", "app.greeting", "--url", &emulator.url])
}

/// The DescribeStackResource requests the emulator received for `stack`.
fn describes(emulator: &Emulator, stack: &str) -> Vec<Value> {
    emulator.requests_for(stack).into_iter().filter(|r| r["action"] == "DescribeStackResource").collect()
}

/// The one DescribeStackResource was signed with SigV4 by `access_key`, with a session
/// token when the keys are temporary.
fn assert_signed_by(emulator: &Emulator, stack: &str, access_key: &str, token: bool) {
    let requests = describes(emulator, stack);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0]["auth_scheme"], "AWS4-HMAC-SHA256", "{:#}", requests[0]);
    assert_eq!(requests[0]["access_key"], access_key, "{:#}", requests[0]);
    assert_eq!(requests[0]["security_token"], token, "{:#}", requests[0]);
    assert_eq!(requests[0]["status"], 200, "{:#}", requests[0]);
}

/// Nothing secret in what the user sees or the logs keep (SEC-02).
fn assert_no_secrets(run: &Run, sandbox: &Sandbox) {
    let logs: String = ["cfn-wire.log", "cfn-init.log", "cfn-hup.log"].iter().map(|l| sandbox.log(l)).collect();
    let shown = format!("{}{}{logs}", run.stdout, run.stderr);
    for secret in [TASK_SECRET, TASK_TOKEN, POD_TOKEN, PROFILE_SECRET, PROCESS_SECRET, PROCESS_TOKEN] {
        assert!(!shown.contains(secret), "{secret} was shown\n{run}");
    }
}

fn write_file(sandbox: &Sandbox, name: &str, text: &str) -> String {
    let path = sandbox.path(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn container_credentials_from_a_full_uri_with_a_token_file() {
    // EKS Pod Identity's form: a full URI and a token file the agent checks.
    let emulator = emulator();
    let stack = stack_on(&emulator);
    let endpoint = CredentialEndpoint::on_loopback(200);
    let sandbox = Sandbox::new();
    let token_file = write_file(&sandbox, "pod-identity-token", "pod-identity-token-value");
    let run = get_greeting(&sandbox, &emulator, &stack)
        .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/v1/credentials", endpoint.url))
        .env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", &token_file)
        .run();
    run.code(0).stdout_is("hello\n").stderr_is("");
    assert_eq!(
        endpoint.requests(),
        vec![("/v1/credentials".to_string(), Some("pod-identity-token-value".to_string()))]
    );
    assert_signed_by(&emulator, &stack, TASK_KEY, true);
    assert_no_secrets(&run, &sandbox);
}

#[test]
fn container_credentials_from_a_relative_uri_at_the_ecs_address() {
    // ECS's form: the path is resolved against http://169.254.170.2, which this private
    // network namespace puts on loopback.
    let (run, requests, journal) = in_private_network(|| {
        let status = std::process::Command::new("ip").args(["addr", "add", "169.254.170.2/32", "dev", "lo"]).status();
        assert!(status.unwrap().success());
        let endpoint = CredentialEndpoint::start(TcpListener::bind("169.254.170.2:80").unwrap(), 200);
        let mut args = vec!["--port", "5000"];
        let extra = emulator_args();
        args.extend(extra.iter().map(String::as_str));
        let emulator = Emulator::start_at(&args, 5000);
        let stack = stack_on(&emulator);
        let sandbox = Sandbox::new();
        // The credential endpoint is on the host, like IMDS: a proxy never sees it.
        let proxy = RecordingProxy::start();
        let run = get_greeting(&sandbox, &emulator, &stack)
            .env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/4f1c-task")
            .env("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ecs-agent-token")
            .env("HTTP_PROXY", &proxy.url)
            .env("NO_PROXY", "127.0.0.1")
            .run();
        assert_no_secrets(&run, &sandbox);
        assert_eq!(proxy.targets(), Vec::<String>::new());
        (run, endpoint.requests(), describes(&emulator, &stack))
    });
    run.code(0).stdout_is("hello\n").stderr_is("");
    assert_eq!(requests, vec![("/v2/credentials/4f1c-task".to_string(), Some("ecs-agent-token".to_string()))]);
    assert_eq!(journal.len(), 1, "{journal:#?}");
    assert_eq!(journal[0]["access_key"], TASK_KEY);
    assert_eq!(journal[0]["security_token"], true);
}

/// Keys a hostile proxy would hand out in place of the task's.
const PROXY_KEY: &str = "ASIAPROXYCHOSENKEY";

/// A proxy that must never see a credential request: it records the head of each
/// request and answers every one with keys of its own choosing, as a proxy on the path
/// could (issue: the next API call was signed with the proxy's key).
fn proxy_trap() -> (String, Heads) {
    let (address, heads) = serve_recorded("127.0.0.1", |_, _| {
        let body = json!({"AccessKeyId": PROXY_KEY, "SecretAccessKey": "proxy/secret", "Token": "proxy-token",
                          "Expiration": (chrono::Utc::now() + chrono::TimeDelta::hours(6)).format("%Y-%m-%dT%H:%M:%SZ").to_string()})
        .to_string();
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
            .into_bytes()
    });
    (format!("http://{address}"), heads)
}

#[test]
fn the_container_credential_endpoint_on_loopback_is_never_proxied() {
    // CRED-08: the endpoint is on the host, like IMDS. `NO_PROXY` covers the emulator
    // only (its port), so nothing but the rule keeps the credential request from the proxy.
    let emulator = emulator();
    let emulator_port = emulator.url.rsplit_once(':').unwrap().1.to_string();
    for host in ["127.0.0.1", "localhost"] {
        let stack = stack_on(&emulator);
        let endpoint = CredentialEndpoint::on_loopback(200);
        let port = endpoint.url.rsplit_once(':').unwrap().1.to_string();
        let (trap, trapped) = proxy_trap();
        let sandbox = Sandbox::new();
        let run = get_greeting(&sandbox, &emulator, &stack)
            .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("http://{host}:{port}/v1/credentials"))
            .env("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-identity-token-value")
            .env("HTTP_PROXY", &trap)
            .env("NO_PROXY", format!("127.0.0.1:{emulator_port}"))
            .run();
        assert_eq!(trapped.lock().unwrap().clone(), Vec::<String>::new(), "the proxy saw a request for {host}\n{run}");
        run.code(0).stdout_is("hello\n").stderr_is("");
        assert_eq!(
            endpoint.requests(),
            vec![("/v1/credentials".to_string(), Some("pod-identity-token-value".to_string()))],
            "{host}"
        );
        assert_signed_by(&emulator, &stack, TASK_KEY, true);
    }
}

#[test]
fn eks_pod_identity_addresses_are_never_proxied() {
    // EKS Pod Identity's agent answers at 169.254.170.23 and fd00:ec2::23: this private
    // network namespace puts both on loopback. The emulator is covered by `NO_PROXY`;
    // the agent's addresses are not.
    let results = in_private_network(|| {
        for args in [&["169.254.170.23/32", "dev", "lo"][..], &["fd00:ec2::23/128", "dev", "lo", "nodad"][..]] {
            let status = std::process::Command::new("ip").args(["addr", "add"]).args(args).status();
            assert!(status.unwrap().success(), "ip addr add {args:?}");
        }
        let mut args = vec!["--port", "5000"];
        let extra = emulator_args();
        args.extend(extra.iter().map(String::as_str));
        let emulator = Emulator::start_at(&args, 5000);
        let mut results = Vec::new();
        for (bind, uri_host) in [("169.254.170.23:80", "169.254.170.23"), ("[fd00:ec2::23]:80", "[fd00:ec2::23]")] {
            let endpoint = CredentialEndpoint::start(TcpListener::bind(bind).unwrap(), 200);
            let stack = stack_on(&emulator);
            let (trap, trapped) = proxy_trap();
            let sandbox = Sandbox::new();
            let run = get_greeting(&sandbox, &emulator, &stack)
                .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("http://{uri_host}/v1/credentials"))
                .env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", write_file(&sandbox, "token", "eks-pod-token"))
                .env("HTTP_PROXY", &trap)
                .env("NO_PROXY", "127.0.0.1")
                .run();
            let trapped = trapped.lock().unwrap().clone();
            results.push((uri_host, run, trapped, endpoint.requests(), describes(&emulator, &stack)));
        }
        results
    });
    for (host, run, trapped, requests, journal) in results {
        assert_eq!(trapped, Vec::<String>::new(), "the proxy saw a request for {host}\n{run}");
        run.code(0).stdout_is("hello\n").stderr_is("");
        assert_eq!(requests, vec![("/v1/credentials".to_string(), Some("eks-pod-token".to_string()))], "{host}");
        assert_eq!(journal.len(), 1, "{journal:#?}");
        assert_eq!(journal[0]["access_key"], TASK_KEY, "{host}");
    }
}

/// The environment of an EKS pod with an IRSA role, STS at the emulator.
fn web_identity(cmd: TestCommand, sandbox: &Sandbox, emulator: &Emulator) -> TestCommand {
    let token_file = write_file(sandbox, "irsa-token", POD_TOKEN);
    cmd.env("AWS_WEB_IDENTITY_TOKEN_FILE", token_file)
        .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/pod-role")
        .env("AWS_ROLE_SESSION_NAME", "pod-session")
        .env("AWS_ENDPOINT_URL_STS", &emulator.url)
}

/// The keys the emulator's STS issued for AssumeRoleWithWebIdentity, checking the call.
fn sts_issued_key(emulator: &Emulator) -> String {
    let calls = emulator.get_json("/_emu/requests?action=AssumeRoleWithWebIdentity");
    let calls = calls.as_array().unwrap();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["form"]["RoleArn"], "arn:aws:iam::123456789012:role/pod-role");
    assert_eq!(calls[0]["form"]["RoleSessionName"], "pod-session");
    assert_eq!(calls[0]["form"]["WebIdentityToken"], POD_TOKEN);
    assert_eq!(calls[0]["status"], 200);
    // The key that signed the CloudFormation call is one the emulator's STS knows and
    // no other source had.
    let all = emulator.get_json("/_emu/requests?kind=cloudformation");
    let key = all.as_array().unwrap().last().unwrap()["access_key"].as_str().unwrap().to_string();
    assert!(![ACCESS_KEY, TASK_KEY, PROFILE_KEY, PROCESS_KEY].contains(&key.as_str()), "{key}");
    key
}

#[test]
fn web_identity_through_sts_assume_role_with_web_identity() {
    let emulator = emulator();
    let stack = stack_on(&emulator);
    let sandbox = Sandbox::new();
    let run = web_identity(get_greeting(&sandbox, &emulator, &stack), &sandbox, &emulator).run();
    run.code(0).stdout_is("hello\n").stderr_is("");
    let key = sts_issued_key(&emulator);
    assert_signed_by(&emulator, &stack, &key, true);
    assert_no_secrets(&run, &sandbox);
}

/// `~/.aws/config` and `~/.aws/credentials` in the sandbox: a profile with keys, one with
/// `credential_process`, one whose process fails.
fn profile_files(sandbox: &Sandbox) -> (String, String) {
    let process = write_file(
        sandbox,
        "credential-process.sh",
        &format!(
            "#!/bin/sh\nprintf '%s' '{}'\n",
            json!({"Version": 1, "AccessKeyId": PROCESS_KEY, "SecretAccessKey": PROCESS_SECRET,
                   "SessionToken": PROCESS_TOKEN,
                   "Expiration": (chrono::Utc::now() + chrono::TimeDelta::hours(1)).to_rfc3339()})
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&process, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = write_file(
        sandbox,
        "aws-config",
        &format!(
            "[profile builder]\ncredential_process = {process}\n\n[profile broken]\ncredential_process = /bin/false\n"
        ),
    );
    let credentials = write_file(
        sandbox,
        "aws-credentials",
        &format!("[deploy]\naws_access_key_id = {PROFILE_KEY}\naws_secret_access_key = {PROFILE_SECRET}\n"),
    );
    (config, credentials)
}

fn with_profiles(cmd: TestCommand, files: &(String, String), profile: &str) -> TestCommand {
    cmd.env("AWS_CONFIG_FILE", &files.0).env("AWS_SHARED_CREDENTIALS_FILE", &files.1).env("AWS_PROFILE", profile)
}

#[test]
fn a_named_profile_with_keys_and_with_credential_process() {
    let emulator = emulator();
    let sandbox = Sandbox::new();
    let files = profile_files(&sandbox);
    for (profile, key, token) in [("deploy", PROFILE_KEY, false), ("builder", PROCESS_KEY, true)] {
        let stack = stack_on(&emulator);
        let run = with_profiles(get_greeting(&sandbox, &emulator, &stack), &files, profile).run();
        run.code(0).stdout_is("hello\n").stderr_is("");
        assert_signed_by(&emulator, &stack, key, token);
        assert_no_secrets(&run, &sandbox);
    }
}

#[test]
fn a_source_that_fails_is_named_with_its_reason() {
    let emulator = emulator();
    // STS refuses the pod's token (the second case).
    emulator.post_json(
        "/_emu/faults",
        &json!({"path": "/", "method": "POST", "status": 400, "content_type": "text/xml",
                "body": "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>\
                         <Message>Incorrect token audience</Message></Error><RequestId>r</RequestId></ErrorResponse>"}),
    );
    let stack = stack_on(&emulator);
    let sandbox = Sandbox::new();
    let files = profile_files(&sandbox);
    let refused = CredentialEndpoint::on_loopback(403);
    let cases: Vec<(TestCommand, &str, &str)> = vec![
        (
            get_greeting(&sandbox, &emulator, &stack)
                .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("http://127.0.0.1:{}/creds", free_port())),
            "Could not retrieve credentials from the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI): ",
            "onnection refused",
        ),
        (
            web_identity(get_greeting(&sandbox, &emulator, &stack), &sandbox, &emulator),
            "Could not retrieve credentials from web identity (AWS_WEB_IDENTITY_TOKEN_FILE): ",
            "InvalidIdentityToken",
        ),
        (
            get_greeting(&sandbox, &emulator, &stack)
                .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/creds", refused.url))
                .env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", sandbox.path("no-such-token-file")),
            "Could not retrieve credentials from the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI): ",
            "no-such-token-file",
        ),
        (
            get_greeting(&sandbox, &emulator, &stack).env("AWS_CONTAINER_CREDENTIALS_FULL_URI", &refused.url),
            "Could not retrieve credentials from the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI): ",
            "403",
        ),
        (
            web_identity(get_greeting(&sandbox, &emulator, &stack), &sandbox, &emulator)
                .env("AWS_WEB_IDENTITY_TOKEN_FILE", sandbox.path("no-such-irsa-token")),
            "Could not retrieve credentials from web identity (AWS_WEB_IDENTITY_TOKEN_FILE): ",
            "no-such-irsa-token",
        ),
        (
            with_profiles(get_greeting(&sandbox, &emulator, &stack), &files, "nosuch"),
            "Could not retrieve credentials from profile nosuch (AWS_PROFILE): ",
            "nosuch",
        ),
        (
            with_profiles(get_greeting(&sandbox, &emulator, &stack), &files, "broken"),
            "Could not retrieve credentials from profile broken (AWS_PROFILE): ",
            "external process exited with code exit status: 1",
        ),
    ];
    for (cmd, prefix, reason) in cases {
        let run = cmd.run();
        run.code(1).stdout_is("");
        assert!(run.stderr.starts_with(prefix), "stderr should start with {prefix:?}\n{run}");
        assert_eq!(run.stderr.lines().count(), 1, "one line\n{run}");
        run.stderr_has(reason);
        assert_no_secrets(&run, &sandbox);
    }
    assert!(describes(&emulator, &stack).is_empty(), "no call without credentials");
    // The SDK's own narrative stays at DEBUG: the error line says it all.
    let log = sandbox.log("cfn-init.log");
    assert!(!log.contains("[WARNING]") && !log.contains("[INFO]"), "{log}");
}

#[test]
fn explicit_options_beat_every_source_the_environment_names() {
    let emulator = emulator();
    let endpoint = CredentialEndpoint::on_loopback(200);
    let sandbox = Sandbox::new();
    let files = profile_files(&sandbox);
    let everything = |cmd: TestCommand| {
        web_identity(with_profiles(cmd, &files, "deploy"), &sandbox, &emulator)
            .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/creds", endpoint.url))
    };
    // Keys on the command line.
    let stack = stack_on(&emulator);
    let run = everything(get_greeting(&sandbox, &emulator, &stack))
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .run();
    run.code(0).stdout_is("hello\n");
    assert_signed_by(&emulator, &stack, ACCESS_KEY, false);
    // A credential file.
    let stack = stack_on(&emulator);
    let file = sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
    let run = everything(get_greeting(&sandbox, &emulator, &stack)).arg("--credential-file").arg(&file).run();
    run.code(0).stdout_is("hello\n");
    assert_signed_by(&emulator, &stack, ACCESS_KEY, false);
    // Environment keys, opted in (CRED-08).
    let stack = stack_on(&emulator);
    let run = everything(get_greeting(&sandbox, &emulator, &stack))
        .env("CFN_BOOTSTRAP_ENV_CREDENTIALS", "1")
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .run();
    run.code(0).stdout_is("hello\n");
    assert_signed_by(&emulator, &stack, ACCESS_KEY, false);
    // Neither the container endpoint nor STS was asked.
    assert!(endpoint.requests().is_empty(), "{:?}", endpoint.requests());
    assert!(emulator.get_json("/_emu/requests?action=AssumeRoleWithWebIdentity").as_array().unwrap().is_empty());
    // An explicit AWS_PROFILE comes before web identity and the container.
    let stack = stack_on(&emulator);
    let run = everything(get_greeting(&sandbox, &emulator, &stack)).run();
    run.code(0).stdout_is("hello\n");
    assert_signed_by(&emulator, &stack, PROFILE_KEY, false);
    // Web identity before the container, as in the AWS SDKs.
    let stack = stack_on(&emulator);
    let run = everything(get_greeting(&sandbox, &emulator, &stack)).env_remove("AWS_PROFILE").run();
    run.code(0).stdout_is("hello\n");
    let key = sts_issued_key(&emulator);
    assert_signed_by(&emulator, &stack, &key, true);
    assert!(endpoint.requests().is_empty(), "{:?}", endpoint.requests());
}

#[test]
fn on_an_instance_the_container_or_pod_identity_wins_over_the_instance_identity() {
    let results = in_private_network(|| {
        let mut args = vec!["--imds-host", "169.254.169.254", "--imds-port", "80", "--port", "5000"];
        let extra = emulator_args();
        args.extend(extra.iter().map(String::as_str));
        let emulator = Emulator::start_at(&args, 5000);
        let endpoint = CredentialEndpoint::on_loopback(200);
        let sandbox = Sandbox::new();
        let on_instance =
            |stack: &str| get_greeting(&sandbox, &emulator, stack).env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT");
        let mut results = Vec::new();
        // Nothing named: the instance identity (CRED-03); environment keys are not used
        // unless opted in (CRED-08).
        let stack = stack_on(&emulator);
        let run =
            on_instance(&stack).env("AWS_ACCESS_KEY_ID", ACCESS_KEY).env("AWS_SECRET_ACCESS_KEY", SECRET_KEY).run();
        results.push((run, describes(&emulator, &stack)));
        // The task's container credentials.
        let stack = stack_on(&emulator);
        let run =
            on_instance(&stack).env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/creds", endpoint.url)).run();
        results.push((run, describes(&emulator, &stack)));
        // The pod's web identity.
        let stack = stack_on(&emulator);
        let run = web_identity(on_instance(&stack), &sandbox, &emulator).run();
        let key = sts_issued_key(&emulator);
        results.push((run, describes(&emulator, &stack)));
        (results, key)
    });
    let (results, sts_key) = results;
    let expected =
        [("CFN_V1", None), ("AWS4-HMAC-SHA256", Some(TASK_KEY)), ("AWS4-HMAC-SHA256", Some(sts_key.as_str()))];
    for ((run, requests), (scheme, key)) in results.iter().zip(expected) {
        run.code(0).stdout_is("hello\n").stderr_is("");
        assert_eq!(requests.len(), 1, "{requests:#?}");
        assert_eq!(requests[0]["auth_scheme"], scheme, "{run}\n{:#}", requests[0]);
        assert_eq!(requests[0]["access_key"].as_str(), key, "{:#}", requests[0]);
    }
}

#[test]
fn cfn_signal_signals_a_resource_with_container_credentials() {
    let mut args = vec!["--accept-all-signals"];
    let extra = emulator_args();
    args.extend(extra.iter().map(String::as_str));
    let emulator = Emulator::start(&args);
    let stack = stack_on(&emulator);
    let endpoint = CredentialEndpoint::on_loopback(200);
    let sandbox = Sandbox::new();
    let token_file = write_file(&sandbox, "token", "agent-token");
    let run = sandbox
        .cmd("cfn-signal")
        .args(["-e", "0", "--stack", &stack, "--resource", "Instance", "--id", "node-1", "--url", &emulator.url])
        .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/v1/credentials", endpoint.url))
        .env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", &token_file)
        .run();
    run.code(0).stderr_is("");
    let signals: Vec<Value> =
        emulator.requests_for(&stack).into_iter().filter(|r| r["action"] == "SignalResource").collect();
    assert_eq!(signals.len(), 1, "{signals:#?}");
    assert_eq!(signals[0]["access_key"], TASK_KEY);
    assert_eq!(signals[0]["security_token"], true);
    assert_eq!(signals[0]["status"], 200);
    assert_eq!(signals[0]["query"]["UniqueId"].as_str().or(signals[0]["form"]["UniqueId"].as_str()), Some("node-1"));
    assert_no_secrets(&run, &sandbox);
}

/// cfn-hup in the foreground with the task's credentials: keys valid for hours are fetched
/// once; keys about to expire (within five minutes) are fetched again before a pass.
#[test]
fn cfn_hup_keeps_container_credentials_and_refreshes_them_before_they_expire() {
    let emulator = emulator();
    for (valid_for, fetches_per_pass) in [(chrono::TimeDelta::hours(6), false), (chrono::TimeDelta::minutes(4), true)] {
        let stack = stack_on(&emulator);
        let endpoint = CredentialEndpoint::issuing(TcpListener::bind("127.0.0.1:0").unwrap(), 200, valid_for);
        let sandbox = Sandbox::new();
        let conf = sandbox.path("conf");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("cfn-hup.conf"), format!("[main]\nstack={stack}\nurl={}\n", emulator.url)).unwrap();
        std::fs::write(
            conf.join("hooks.conf"),
            "[h]\ntriggers=post.update\npath=Resources.Instance.Metadata.app\naction=true\n",
        )
        .unwrap();
        let mut cmd = sandbox
            .cmd("cfn-hup")
            .arg("-c")
            .arg(&conf)
            .arg("-F")
            .env("CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS", "0.3")
            .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/creds", endpoint.url));
        cmd.cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.cmd.spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while describes(&emulator, &stack).len() < 4 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // SAFETY: kill(2) on the child this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let _ = child.wait();
        let calls = describes(&emulator, &stack);
        assert!(calls.len() >= 4, "four passes: {calls:#?}\n{}", sandbox.log("cfn-hup.log"));
        for call in &calls {
            assert_eq!((call["access_key"].as_str(), call["status"].as_i64()), (Some(TASK_KEY), Some(200)), "{call}");
        }
        let fetched = endpoint.requests().len();
        if fetches_per_pass {
            assert!(fetched >= calls.len(), "fetched {fetched} times for {} passes", calls.len());
        } else {
            assert_eq!(fetched, 1, "keys valid for hours are fetched once");
        }
    }
}

/// Off EC2, a command listener signing with the task's keys is known by the host's name,
/// as with `credential-file` (SPEC §14.7).
#[test]
fn cfn_hup_command_listener_off_ec2_with_container_credentials() {
    let emulator = emulator();
    let stack = stack_on(&emulator);
    let endpoint = CredentialEndpoint::on_loopback(200);
    let sandbox = Sandbox::new();
    let conf = sandbox.path("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("cfn-hup.conf"), format!("[main]\nstack={stack}\nurl={}\n", emulator.url)).unwrap();
    std::fs::write(conf.join("hooks.conf"), "[c]\ntriggers=on.command\npath=deploy\naction=true\n").unwrap();
    let run = sandbox
        .cmd("cfn-hup")
        .arg("-c")
        .arg(&conf)
        .arg("--no-daemon")
        .env("CFN_BOOTSTRAP_HUP_RECEIVE_WAIT_SECONDS", "0")
        .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/creds", endpoint.url))
        .run();
    run.code(0).stderr_is("");
    let listeners = emulator.get_json("/_emu/listeners");
    let mine: Vec<&Value> = listeners
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["StackId"].as_str().unwrap().contains(&format!("/{stack}/")))
        .collect();
    assert_eq!(mine.len(), 1, "{listeners:#}");
    let id = mine[0]["ListenerId"].as_str().unwrap();
    assert!(!id.is_empty() && !id.starts_with("i-"), "the host's name: {id}");
    let registrations = emulator.get_json("/_emu/requests?action=RegisterListener");
    let signed: Vec<&Value> = registrations
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["query"]["StackName"] == stack.as_str() || r["form"]["StackName"] == stack.as_str())
        .collect();
    assert!(!signed.is_empty() && signed.iter().all(|r| r["access_key"] == TASK_KEY), "{registrations:#}");
}

/// Two tests once got the same free port: the second emulator could not bind it and
/// exited, and both tests talked to the first, each seeing the other's fault rules. An
/// emulator is ready only when the one at its port answers with its own token.
#[test]
fn an_emulator_that_cannot_have_its_port_is_not_taken_for_the_one_that_holds_it() {
    let first = emulator();
    let port: u16 = first.url.rsplit(':').next().unwrap().parse().unwrap();
    let second = std::panic::catch_unwind(|| Emulator::start_at(&["--port", &port.to_string()], port));
    let message = second.err().and_then(|e| e.downcast_ref::<String>().cloned()).unwrap_or_default();
    assert_eq!(message, format!("the emulator could not listen on port {port}"));
    // A private one started meanwhile gets a port of its own.
    let third = emulator();
    assert_ne!(third.url, first.url);
}
