//! cfn-get-metadata against the emulator with SigV4 validation on (GETMD-01..05,
//! CRED-01..04, API-01, API-07, NET-03).

mod common;
use common::*;
use serde_json::json;

// (CloudFormation, like the emulator, drops null values from templates, so none here;
// the key-path unit tests cover null.)
fn metadata() -> serde_json::Value {
    json!({
        "AWS::CloudFormation::Init": {"config": {"files": {"/tmp/x": {"content": "hi"}}}},
        "app": {
            "nested": {"leaf": "value"},
            "dot.ted": "escaped",
            "list": ["first", {"second": 2}],
            "empty": "", "zero": 0, "no": false, "obj": {}, "arr": [],
            "text": "line one\nline two",
            "unicode": "caf\u{e9} \u{1F600}"
        }
    })
}

fn stack_with_metadata(emulator: &Emulator) -> String {
    emulator.create_stack(&unique("gm"), &instance_template(&metadata()))
}

#[test]
fn prints_the_whole_metadata_as_pretty_json_in_document_order() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    let sandbox = Sandbox::new();
    let run = sandbox.cmd("cfn-get-metadata").args(["-s", &stack, "-r", "Instance"]).with_keys(&emulator).run();
    run.code(0).stderr_is("");
    let expected = format!("{}\n", cfn_python::json::to_pretty(&metadata()));
    run.stdout_is(&expected);
    assert!(run.stdout.starts_with("{\n    \"AWS::CloudFormation::Init\": {\n        \"config\""), "{run}");
    assert!(run.stdout.contains(r#""unicode": "caf\u00e9 \ud83d\ude00""#), "{run}");
    // The request went through aws-sdk-cloudformation: the awsQuery protocol (a POST form,
    // an XML answer), SigV4 (validated by the emulator), our user agent (NET-06).
    let requests = emulator.requests_for(&stack);
    let describe =
        requests.iter().find(|r| r["action"] == "DescribeStackResource").expect("a DescribeStackResource request");
    assert_eq!(describe["method"], "POST");
    assert_eq!(describe["status"], 200);
    assert_eq!(describe["auth_scheme"], "AWS4-HMAC-SHA256");
    assert_eq!(describe["form"]["Action"], "DescribeStackResource", "{describe}");
    assert_eq!(describe["form"]["Version"], "2010-05-15");
    assert_eq!(describe["form"]["StackName"], stack.as_str());
    assert_eq!(describe["form"]["LogicalResourceId"], "Instance");
    assert!(describe["form"].get("ContentType").is_none() && describe["query"].get("Action").is_none(), "{describe}");
    assert!(describe["user_agent"].as_str().unwrap().starts_with("CfnTools/"), "{describe}");
}

#[test]
fn key_paths_find_nested_escaped_indexed_and_falsy_values() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    let sandbox = Sandbox::new();
    let cases: &[(&str, &str)] = &[
        ("app.nested.leaf", "value\n"),
        (r"app.dot\.ted", "escaped\n"),
        ("app.nested", "{\n    \"leaf\": \"value\"\n}\n"),
        ("app.list.0", "first\n"),
        ("app.list.1.second", "2\n"),
        ("app.empty", "\n"),
        ("app.zero", "0\n"),
        ("app.no", "false\n"),
        ("app.obj", "{}\n"),
        ("app.arr", "[]\n"),
        ("app.text", "line one\nline two\n"),
        ("app.unicode", "caf\u{e9} \u{1F600}\n"),
    ];
    for (key, expected) in cases {
        sandbox
            .cmd("cfn-get-metadata")
            .args(["-s", &stack, "-r", "Instance", "-k", key])
            .with_keys(&emulator)
            .run()
            .code(0)
            .stdout_is(expected)
            .stderr_is("");
    }
}

#[test]
fn missing_things_are_reported_with_the_reference_messages() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    let sandbox = Sandbox::new();
    let get = |args: &[&str]| sandbox.cmd("cfn-get-metadata").args(args).with_keys(&emulator).run();

    get(&["-s", &stack, "-r", "Instance", "-k", "app.missing"])
        .code(1)
        .stdout_is("")
        .stderr_is("Error: app.missing is not present in the metadata for Instance\n");
    get(&["-s", &stack, "-r", "Instance", "-k", "app.list.7"])
        .code(1)
        .stderr_is("Error: app.list.7 is not present in the metadata for Instance\n");
    get(&["-s", &stack, "-r", "Bare"]).code(1).stdout_is("").stderr_is("Error: Bare does not specify any metadata\n");
    get(&["-s", &stack, "-r", "Missing"])
        .code(1)
        .stdout_is("")
        .stderr_is(&format!("ValidationError: Resource Missing does not exist for stack {stack}\n"));
    let nostack = unique("nostack");
    get(&["-s", &nostack, "-r", "Instance"])
        .code(1)
        .stdout_is("")
        .stderr_is(&format!("ValidationError: Stack '{nostack}' does not exist\n"));
    // A Sender fault is terminal: exactly one request.
    assert_eq!(emulator.requests_for(&nostack).len(), 1);
}

#[test]
fn a_wrong_secret_is_refused_and_not_retried() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-get-metadata")
        .args([
            "-s",
            &stack,
            "-r",
            "Instance",
            "--url",
            &emulator.url,
            "--access-key",
            ACCESS_KEY,
            "--secret-key",
            "wrong",
        ])
        .run()
        .code(1)
        .stdout_is("")
        .stderr_is(
            "SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided. \
             Check your AWS Secret Access Key and signing method. Consult the service documentation for details.\n",
        );
    assert_eq!(emulator.requests_for(&stack).iter().filter(|r| r["action"] == "DescribeStackResource").count(), 1);
}

#[test]
fn credential_files_are_read_and_checked() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    let sandbox = Sandbox::new();
    let keys = format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n");
    let get = |file: &std::path::Path| {
        sandbox
            .cmd("cfn-get-metadata")
            .args(["-s", &stack, "-r", "Instance", "-k", "app.nested.leaf", "--url", &emulator.url, "-f"])
            .arg(file)
            .run()
    };
    get(&sandbox.credential_file(0o600, &keys)).code(0).stdout_is("value\n");
    get(&sandbox.credential_file(0o644, &keys)).code(1).stdout_is("").stderr_is(
        "Error retrieving credentials from file:\n\tCredential file cannot be accessible by group or other. Please chmod 600 the credential file.\n",
    );
    get(&sandbox.credential_file(0o600, "AWSAccessKeyId=x\n")).code(1).stderr_is(
        "Error retrieving credentials from file:\n\tCredential file must contain the keys 'AWSAccessKeyId' and 'AWSSecretKey'\n",
    );
    let missing = sandbox.path("no-such-file");
    get(&missing).code(1).stderr_is(&format!(
        "Error retrieving credentials from file:\n\tCredential file was not found at {}\n",
        missing.display()
    ));
    // The file wins over keys on the command line (CRED-01).
    sandbox
        .cmd("cfn-get-metadata")
        .args([
            "-s",
            &stack,
            "-r",
            "Instance",
            "-k",
            "app.zero",
            "--url",
            &emulator.url,
            "--access-key",
            "bogus",
            "--secret-key",
            "bogus",
            "-f",
        ])
        .arg(sandbox.credential_file(0o600, &keys))
        .run()
        .code(0)
        .stdout_is("0\n");
}

#[test]
fn no_credentials_off_ec2_fails_fast_with_the_reference_message() {
    let sandbox = Sandbox::new();
    let run = sandbox.cmd("cfn-get-metadata").args(["-s", "s", "-r", "r", "--url", "http://127.0.0.1:1"]).run();
    run.code(1).stdout_is("").stderr_is(
        "In order to sign requests, 169.254.169.254 must be accessible or valid credentials must be set. \
         Please ensure your proxy environment variables allow access to 169.254.169.254 (NO_PROXY) or that \
         your credentials have a valid access key and secret key.\n",
    );
    assert!(run.elapsed.as_secs() < 5, "took {:?}\n{run}", run.elapsed);
}

#[test]
fn throttling_and_server_errors_are_retried_until_success() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    emulator.post_json(
        "/_emu/faults",
        &json!([
            {"action": "DescribeStackResource", "stack": stack, "status": 400, "code": "Throttling", "message": "Rate exceeded", "type": "Sender", "count": 1},
            {"action": "DescribeStackResource", "stack": stack, "status": 500, "code": "InternalFailure", "message": "oops", "type": "Receiver", "count": 1},
            {"action": "DescribeStackResource", "stack": stack, "status": 502, "body": "<html>Bad Gateway</html>", "count": 1}
        ]),
    );
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-get-metadata")
        .args(["-s", &stack, "-r", "Instance", "-k", "app.nested.leaf", "-v"])
        .with_keys(&emulator)
        .run()
        .code(0)
        .stdout_is("value\n")
        .stderr_is("");
    let attempts: Vec<_> =
        emulator.requests_for(&stack).into_iter().filter(|r| r["action"] == "DescribeStackResource").collect();
    assert_eq!(attempts.len(), 4, "{attempts:#?}");
    assert_eq!(attempts.iter().map(|r| r["status"].as_u64().unwrap()).collect::<Vec<_>>(), [400, 500, 502, 200]);
    let log = sandbox.log("cfn-init.log");
    assert!(log.contains("[ERROR] Throttling: Rate exceeded: DescribeStackResource failed (attempt 1)"), "{log}");
    assert!(log.contains("[DEBUG] Sleeping for "), "{log}");
}

#[test]
fn a_sender_fault_is_not_retried() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    emulator.post_json(
        "/_emu/faults",
        &json!({"action": "DescribeStackResource", "stack": stack, "status": 400, "code": "AccessDenied", "message": "not allowed", "type": "Sender", "count": 1}),
    );
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-get-metadata")
        .args(["-s", &stack, "-r", "Instance"])
        .with_keys(&emulator)
        .run()
        .code(1)
        .stdout_is("")
        .stderr_is("AccessDenied: not allowed\n");
    assert_eq!(emulator.requests_for(&stack).iter().filter(|r| r["action"] == "DescribeStackResource").count(), 1);
}

#[test]
fn an_unreachable_endpoint_is_retried_five_times_then_reported() {
    let sandbox = Sandbox::new();
    let port = free_port();
    let run = sandbox
        .cmd("cfn-get-metadata")
        .args([
            "-s",
            "s",
            "-r",
            "r",
            "--url",
            &format!("http://127.0.0.1:{port}"),
            "--access-key",
            "a",
            "--secret-key",
            "b",
        ])
        .run();
    run.code(1).stdout_is("");
    assert!(run.stderr.starts_with(&format!("Could not reach http://127.0.0.1:{port}/: ")), "{run}");
    assert!(run.stderr.contains("Connection refused"), "{run}");
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
    assert_eq!(sandbox.log("cfn-init.log").matches("DescribeStackResource failed (attempt").count(), 5);
}

#[test]
fn malformed_metadata_is_a_clear_error() {
    // The emulator passes metadata through; a resource whose metadata is a plain
    // string is valid JSON, so corrupt it with a fault body (the service's XML answer)
    // instead.
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    let body = "<DescribeStackResourceResponse xmlns=\"http://cloudformation.amazonaws.com/doc/2010-05-15/\">\
        <DescribeStackResourceResult><StackResourceDetail><LogicalResourceId>Instance</LogicalResourceId>\
        <ResourceType>AWS::EC2::Instance</ResourceType><ResourceStatus>CREATE_COMPLETE</ResourceStatus>\
        <LastUpdatedTimestamp>2023-11-14T22:13:20.000Z</LastUpdatedTimestamp><Metadata>{not json</Metadata>\
        </StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>";
    emulator.post_json(
        "/_emu/faults",
        &json!({"action": "DescribeStackResource", "stack": stack, "status": 200, "body": body, "content_type": "text/xml", "count": 1}),
    );
    let sandbox = Sandbox::new();
    let run = sandbox.cmd("cfn-get-metadata").args(["-s", &stack, "-r", "Instance"]).with_keys(&emulator).run();
    run.code(1).stdout_is("");
    assert!(
        run.stderr.starts_with("Unexpected answer to DescribeStackResource: the resource's Metadata is not valid JSON"),
        "{run}"
    );
    assert_eq!(run.stderr.lines().count(), 1, "{run}");
}

#[test]
fn non_object_metadata_is_printed_and_has_no_keys() {
    let emulator = Emulator::shared();
    let stack = emulator.create_stack(&unique("gm-list"), &instance_template(&json!(["a", 1])));
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-get-metadata")
        .args(["-s", &stack, "-r", "Instance"])
        .with_keys(&emulator)
        .run()
        .code(0)
        .stdout_is("[\n    \"a\",\n    1\n]\n");
    sandbox
        .cmd("cfn-get-metadata")
        .args(["-s", &stack, "-r", "Instance", "-k", "a"])
        .with_keys(&emulator)
        .run()
        .code(1)
        .stderr_is("Error: a is not present in the metadata for Instance\n");
}

#[test]
fn role_credentials_come_from_instance_metadata() {
    let emulator = Emulator::shared();
    let stack = stack_with_metadata(&emulator);
    let sandbox = Sandbox::new();
    let get = |role: &str| {
        sandbox
            .cmd("cfn-get-metadata")
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url)
            .args(["-s", &stack, "-r", "Instance", "-k", "app.zero", "--url", &emulator.url, "--role", role])
            .run()
    };
    get("emulator-role").code(0).stdout_is("0\n");
    let describe: Vec<_> =
        emulator.requests_for(&stack).into_iter().filter(|r| r["action"] == "DescribeStackResource").collect();
    assert_eq!(describe.len(), 1);
    assert_eq!(describe[0]["auth_scheme"], "AWS4-HMAC-SHA256", "{describe:?}");
    assert_eq!(describe[0]["security_token"], true, "role credentials carry a session token: {describe:?}");

    get("no-such-role").code(1).stdout_is("").stderr_is(
        "Could not retrieve credentials for role no-such-role from the instance metadata service: \
         /latest/meta-data/iam/security-credentials/no-such-role was not found in the instance metadata\n",
    );
}
