//! Credential-less calls on an "instance": inside a private network namespace the
//! emulator serves IMDS at 169.254.169.254:80, and cfn-get-metadata signs with the
//! instance identity (CRED-03, IMDS-01..03). Needs root for the namespace.

mod common;
use common::*;
use serde_json::json;

fn run_on_instance(imds_v2_required: bool) -> (Run, serde_json::Value, serde_json::Value) {
    in_private_network(move || {
        let mut args = vec!["--imds-host", "169.254.169.254", "--imds-port", "80", "--port", "5000"];
        if imds_v2_required {
            args.push("--imds-v2-required");
        }
        let emulator = Emulator::start_at(&args, 5000);
        let stack = emulator.create_stack("instance-stack", &instance_template(&json!({"app": {"greeting": "hello"}})));
        let sandbox = Sandbox::new();
        let run = sandbox
            .cmd("cfn-get-metadata")
            // The real address: no override, as on an EC2 instance.
            .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            // An environment proxy must not be used for IMDS (IMDS-03); NO_PROXY keeps
            // the emulator's own endpoint direct.
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1")
            .args(["-s", &stack, "-r", "Instance", "-k", "app.greeting", "--url", &emulator.url])
            .run();
        (run, json!(emulator.requests_for(&stack)), emulator.get_json("/_emu/requests?kind=imds"))
    })
}

fn assert_identity_signed(run: &Run, requests: &serde_json::Value) {
    run.code(0).stdout_is("hello\n").stderr_is("");
    let describe = requests.as_array().unwrap().iter().find(|r| r["action"] == "DescribeStackResource").unwrap();
    assert_eq!(describe["auth_scheme"], "CFN_V1", "{describe}");
    // Through aws-sdk-cloudformation (a POST form) with the instance-identity auth scheme:
    // the header holds the instance's document, and nothing of SigV4 is sent.
    assert_eq!((&describe["method"], &describe["form"]["Action"]), (&json!("POST"), &json!("DescribeStackResource")));
    assert_eq!(describe["identity_instance"], "i-0123456789abcdef0", "{describe}");
    assert_eq!((&describe["amz_date"], &describe["security_token"]), (&json!(false), &json!(false)), "{describe}");
}

#[test]
fn signs_with_the_instance_identity_when_no_credentials_are_given() {
    let (run, requests, imds) = run_on_instance(false);
    assert_identity_signed(&run, &requests);
    let paths: Vec<&str> = imds.as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"/latest/meta-data/instance-id"), "{paths:?}");
    assert!(paths.contains(&"/latest/dynamic/instance-identity/document"), "{paths:?}");
    assert!(paths.contains(&"/latest/dynamic/instance-identity/signature"), "{paths:?}");
    // IMDSv2 is used when offered: every GET carries the session token.
    assert!(imds.as_array().unwrap().iter().filter(|r| r["method"] == "GET").all(|r| r["token"] == true), "{imds:#}");
}

#[test]
fn works_when_the_instance_requires_imdsv2() {
    let (run, requests, imds) = run_on_instance(true);
    assert_identity_signed(&run, &requests);
    let token_calls: Vec<_> = imds.as_array().unwrap().iter().filter(|r| r["path"] == "/latest/api/token").collect();
    assert_eq!(token_calls.len(), 1, "one token per process: {imds:#}");
    assert_eq!(token_calls[0]["method"], "PUT");
    assert_eq!(token_calls[0]["token_ttl"], "21600");
}

#[test]
fn falls_back_to_imdsv1_when_the_token_call_is_refused() {
    let (run, requests, imds) = in_private_network(|| {
        let emulator =
            Emulator::start_at(&["--imds-host", "169.254.169.254", "--imds-port", "80", "--port", "5000"], 5000);
        emulator.post_json(
            "/_emu/faults",
            &json!({"path": "/latest/api/token", "method": "PUT", "status": 403, "count": -1}),
        );
        let stack = emulator.create_stack("v1-stack", &instance_template(&json!({"app": {"greeting": "hello"}})));
        let sandbox = Sandbox::new();
        let run = sandbox
            .cmd("cfn-get-metadata")
            .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .args(["-s", &stack, "-r", "Instance", "-k", "app.greeting", "--url", &emulator.url])
            .run();
        (run, json!(emulator.requests_for(&stack)), emulator.get_json("/_emu/requests?kind=imds"))
    });
    assert_identity_signed(&run, &requests);
    assert!(imds.as_array().unwrap().iter().filter(|r| r["method"] == "GET").all(|r| r["token"] == false), "{imds:#}");
}

#[test]
fn instance_identity_calls_are_retried_and_an_identity_failure_is_reported() {
    let (retried, after_retry, broken, after_broken) = in_private_network(|| {
        let emulator =
            Emulator::start_at(&["--imds-host", "169.254.169.254", "--imds-port", "80", "--port", "5000"], 5000);
        let stack = emulator.create_stack("retry-stack", &instance_template(&json!({"app": {"greeting": "hello"}})));
        let get = || {
            Sandbox::new()
                .cmd("cfn-get-metadata")
                .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                .args(["-s", &stack, "-r", "Instance", "-k", "app.greeting", "--url", &emulator.url])
                .run()
        };
        // NET-03: a throttled answer is retried by our policy (the SDK's own retries are off),
        // and every attempt carries the instance identity.
        emulator.post_json(
            "/_emu/faults",
            &json!({"action": "DescribeStackResource", "stack": stack, "status": 400, "code": "Throttling", "message": "Rate exceeded", "type": "Sender", "count": 1}),
        );
        let retried = get();
        let after_retry = json!(emulator.requests_for(&stack));
        // An instance whose identity cannot be read: a terminal error, reported as such,
        // and nothing is sent to CloudFormation.
        emulator.post_json(
            "/_emu/faults",
            &json!({"path": "/latest/dynamic/instance-identity/signature", "status": 404, "count": -1}),
        );
        let broken = get();
        (retried, after_retry, broken, json!(emulator.requests_for(&stack)))
    });
    retried.code(0).stdout_is("hello\n").stderr_is("");
    let attempts: Vec<_> =
        after_retry.as_array().unwrap().iter().filter(|r| r["action"] == "DescribeStackResource").collect();
    assert_eq!(attempts.iter().map(|r| r["status"].as_u64().unwrap()).collect::<Vec<_>>(), [400, 200], "{attempts:#?}");
    assert!(attempts.iter().all(|r| r["auth_scheme"] == "CFN_V1" && r["method"] == "POST"), "{attempts:#?}");

    broken.code(1).stdout_is("");
    assert_eq!(
        broken.stderr,
        "Could not sign the request with the instance identity: \
         /latest/dynamic/instance-identity/signature was not found in the instance metadata\n",
        "{broken}"
    );
    assert_eq!(after_broken.as_array().unwrap().len(), after_retry.as_array().unwrap().len(), "{after_broken:#}");
}
