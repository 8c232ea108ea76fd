//! Proxies (NET-02, CLI-COMMON-06, IMDS-03) and the trust-store override (NET-01).

mod common;
use common::*;
use serde_json::json;

fn stack(emulator: &Emulator) -> String {
    emulator.create_stack(&unique("net"), &instance_template(&json!({"k": "v"})))
}

#[test]
fn command_line_proxy_carries_the_api_call() {
    let emulator = Emulator::shared();
    let stack = stack(&emulator);
    let proxy = RecordingProxy::start();
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-get-metadata")
        .args(["-s", &stack, "-r", "Instance", "-k", "k", "--http-proxy", &proxy.url])
        // The command line wins over NO_PROXY, as in the reference.
        .env("NO_PROXY", "127.0.0.1")
        .with_keys(&emulator)
        .run()
        .code(0)
        .stdout_is("v\n");
    let emulator_netloc = emulator.url.trim_start_matches("http://").to_string();
    assert_eq!(proxy.targets(), [emulator_netloc]);
    // The proxy refuses CONNECT to ports that are not its SSL ports, as squid does by
    // default: a plain-http call goes in absolute form, never through a tunnel (NET-02).
    let request = &proxy.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, format!("{}/", emulator.url), "{request:?}");
}

#[test]
fn no_proxy_names_match_on_a_dot_boundary() {
    let emulator = Emulator::shared();
    let stack = stack(&emulator);
    let proxy = RecordingProxy::start();
    let sandbox = Sandbox::new();
    // The same emulator by name, so that NO_PROXY compares names.
    let by_name = emulator.url.replace("127.0.0.1", "localhost");
    let get = |no_proxy: &str| {
        sandbox
            .cmd("cfn-get-metadata")
            .args(["-s", &stack, "-r", "Instance", "-k", "k", "--url", &by_name])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .env("http_proxy", &proxy.url)
            .env("NO_PROXY", no_proxy)
            .run()
    };
    for (no_proxy, proxied) in
        [("calhost", true), ("host", true), ("localhost", false), (".localhost", false), ("*.localhost", false)]
    {
        let before = proxy.targets().len();
        get(no_proxy).code(0).stdout_is("v\n");
        assert_eq!(proxy.targets().len() - before, usize::from(proxied), "NO_PROXY={no_proxy}");
    }
}

#[test]
fn environment_proxy_is_used_unless_no_proxy_covers_the_host() {
    let emulator = Emulator::shared();
    let stack = stack(&emulator);
    let proxy = RecordingProxy::start();
    let sandbox = Sandbox::new();
    let get = |no_proxy: &str| {
        sandbox
            .cmd("cfn-get-metadata")
            .args(["-s", &stack, "-r", "Instance", "-k", "k"])
            .env("http_proxy", &proxy.url)
            .env("NO_PROXY", no_proxy)
            .with_keys(&emulator)
            .run()
    };
    get("example.com").code(0).stdout_is("v\n");
    assert_eq!(proxy.targets().len(), 1);
    get("127.0.0.0/8").code(0).stdout_is("v\n");
    get("example.com, 127.0.0.1").code(0).stdout_is("v\n");
    assert_eq!(proxy.targets().len(), 1, "NO_PROXY must bypass the proxy: {:?}", proxy.targets());
}

#[test]
fn instance_metadata_never_goes_through_a_proxy() {
    let emulator = Emulator::shared();
    let stack = stack(&emulator);
    let proxy = RecordingProxy::start();
    let sandbox = Sandbox::new();
    // No credentials: the tool asks IMDS (here the emulator's, by the SDK variable)
    // for the instance identity; the proxy must see only the CloudFormation call.
    sandbox
        .cmd("cfn-get-metadata")
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url)
        .env("HTTP_PROXY", &proxy.url)
        .args(["-s", &stack, "-r", "Instance", "-k", "k", "--url", &emulator.url])
        .run()
        .code(0)
        .stdout_is("v\n");
    assert_eq!(proxy.targets().len(), 1, "{:?}", proxy.targets());
    // The call was signed with the instance identity, which only IMDS gave (other tests
    // ask the shared emulator's IMDS too, so its journal alone would prove nothing).
    let calls: Vec<_> =
        emulator.requests_for(&stack).into_iter().filter(|r| r["action"] == "DescribeStackResource").collect();
    assert!(!calls.is_empty() && calls.iter().all(|r| r["auth_scheme"] == "CFN_V1"), "{calls:#?}");
}

#[test]
fn an_unreadable_ca_bundle_is_reported() {
    let sandbox = Sandbox::new();
    sandbox
        .cmd("cfn-get-metadata")
        .env("REQUESTS_CA_BUNDLE", sandbox.path("missing.pem"))
        .args(["-s", "s", "-r", "r", "--access-key", "a", "--secret-key", "b", "--url", "https://127.0.0.1:1/"])
        .run()
        .code(1)
        .stderr_has(&format!("Could not read CA bundle {}", sandbox.path("missing.pem").display()));
}

#[test]
fn https_endpoints_are_verified_against_the_configured_authorities() {
    let sandbox = Sandbox::new();
    let (cert, server_cert, key) = private_ca(sandbox.dir.path());
    let tls_port = free_port().to_string();
    let emulator = Emulator::start(&[
        "--tls-port",
        &tls_port,
        "--tls-cert",
        server_cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let https_url = format!("https://127.0.0.1:{tls_port}");
    let stack = unique("tls");
    emulator.create_stack(&stack, &instance_template(&json!({"k": "v"})));
    let get = || {
        sandbox.cmd("cfn-get-metadata").args([
            "-s",
            &stack,
            "-r",
            "Instance",
            "-k",
            "k",
            "--url",
            &https_url,
            "--access-key",
            ACCESS_KEY,
            "--secret-key",
            SECRET_KEY,
        ])
    };

    // CA_OVERRIDE names a bundle that exists (NET-01).
    get().env("CA_OVERRIDE", &cert).run().code(0).stdout_is("v\n");
    // /etc/cfn/ca-override.pem when present.
    std::fs::copy(&cert, sandbox.path("etc/ca-override.pem")).unwrap();
    get().run().code(0).stdout_is("v\n");
    std::fs::remove_file(sandbox.path("etc/ca-override.pem")).unwrap();
    // REQUESTS_CA_BUNDLE wins over CA_OVERRIDE.
    get().env("REQUESTS_CA_BUNDLE", &cert).env("CA_OVERRIDE", "/nonexistent").run().code(0).stdout_is("v\n");
    // Through a proxy, HTTPS goes in a CONNECT tunnel; a proxy that refuses the tunnel
    // fails the call with its answer.
    let proxy = RecordingProxy::with_ssl_ports(&[tls_port.parse().unwrap()]);
    get().env("CA_OVERRIDE", &cert).args(["--https-proxy", &proxy.url]).run().code(0).stdout_is("v\n");
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        (requests[0].method.as_str(), requests[0].target.as_str()),
        ("CONNECT", &*format!("127.0.0.1:{tls_port}"))
    );
    let refusing = RecordingProxy::start();
    let refused = get().env("CA_OVERRIDE", &cert).args(["--https-proxy", &refusing.url]).run();
    refused.code(1).stdout_is("");
    assert!(refused.stderr.starts_with(&format!("Could not reach {https_url}/: ")), "{refused}");
    assert!(refusing.requests()[0].refused);
    // Without it, the private CA is not trusted: verification is always on.
    let refused = get().env("SSL_CERT_FILE", "/nonexistent").run();
    refused.code(1).stdout_is("");
    assert!(refused.stderr.starts_with(&format!("Could not reach {https_url}/: ")), "{refused}");
    assert!(
        refused.stderr.to_lowercase().contains("certificate") || refused.stderr.contains("UnknownIssuer"),
        "{refused}"
    );
}

/// A proxy that refuses every request with `status` and `body` (of `content_type`), and
/// records the head of each.
fn refusing_proxy(status: &'static str, content_type: &'static str, body: &'static str) -> (String, Heads) {
    let (address, heads) = serve_recorded("127.0.0.1", move |_, _| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    });
    (format!("http://{address}"), heads)
}

#[test]
fn a_proxy_refusing_the_call_is_reported_by_its_code_and_message_at_once() {
    // API-07, NET-03: a 4xx that is not throttling is final whatever its body. The code
    // and message are read from JSON as from XML (the reference reads the JSON form);
    // an HTML page gives the status and its first line. The endpoint is a closed port on
    // loopback: only the proxy answers.
    let json_body =
        r#"{"Error": {"Code": "ProxyTrap", "Message": "refused by the proxy at the gateway", "Type": "Sender"}}"#;
    let html_body = "<html><head><title>403 Forbidden</title></head>\n<body>Access denied</body></html>";
    let cases = [
        (json_body, "application/json", "ProxyTrap: refused by the proxy at the gateway\n"),
        (html_body, "text/html", "Unknown: HTTP 403 <html><head><title>403 Forbidden</title></head>\n"),
    ];
    for (body, content_type, message) in cases {
        // cfn-get-metadata (DescribeStackResource, through the SDK).
        let (proxy, heads) = refusing_proxy("403 Forbidden", content_type, body);
        let sandbox = Sandbox::new();
        let run = sandbox
            .cmd("cfn-get-metadata")
            .args(["-s", "st", "-r", "Instance", "--url", "http://127.0.0.1:1", "--http-proxy", &proxy])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .run();
        run.code(1).stdout_is("").stderr_is(message);
        assert_eq!(heads.lock().unwrap().len(), 1, "retried\n{run}");
        assert!(run.elapsed < std::time::Duration::from_secs(5), "{run}");

        // cfn-elect-cmd-leader (ElectCommandLeader, the query API's JSON).
        let (proxy, heads) = refusing_proxy("403 Forbidden", content_type, body);
        let run = sandbox
            .cmd("cfn-elect-cmd-leader")
            .args(["-s", "st", "-c", "deploy", "-i", "inv-1", "-l", "listener-1", "--url", "http://127.0.0.1:1"])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .env("HTTP_PROXY", &proxy)
            .run();
        run.stderr_has(message.trim_end());
        assert_ne!(run.code, 0, "{run}");
        assert_eq!(heads.lock().unwrap().len(), 1, "retried\n{run}");
        assert!(run.elapsed < std::time::Duration::from_secs(5), "{run}");
    }
}
