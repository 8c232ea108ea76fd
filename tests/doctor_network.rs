//! `cfn-bootstrap doctor`'s credentials, network and clock sections (issue 24) against the
//! emulator, each test in a network namespace of its own where IMDS is at its real address
//! (169.254.169.254:80) when the test starts the emulator's IMDS listener, and nothing
//! outside is reachable: no credential source at all, IMDSv2 token requests that time
//! out, the service's `Date` 10 and 2 minutes off, a proxy that refuses or drops the
//! connection, an endpoint that hangs (the run still ends within its bound), and a
//! healthy set-up. Needs root for the namespaces.

mod common;
use common::*;
use serde_json::{Value, json};
use std::net::TcpListener;
use std::time::Duration;

/// `doctor::RUN_BOUND`: how long a whole run may take, probes included.
const RUN_BOUND: Duration = Duration::from_secs(20);
/// `doctor::PROBE_TIMEOUT`, as the words of a timeout show it.
const PROBE_TIMEOUT_WORDS: &str = "timed out after 3 s";
const INSTANCE_ID: &str = "i-0123456789abcdef0";

/// The emulator with its IMDS listener at the real address (inside the namespace).
fn emulator_on_instance() -> Emulator {
    Emulator::start_at(&["--imds-host", "169.254.169.254", "--imds-port", "80", "--port", "5000"], 5000)
}

/// `cfn-bootstrap doctor --format json` with the sandbox's environment (its links to the
/// binary on PATH and as the install directory, so the install checks are ok), IMDS at its
/// real address, cfn-hup's configuration in the sandbox; `args` are added.
fn doctor(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> (Run, Value) {
    let path = format!("{}:{}", sandbox.path("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut command = sandbox
        .cmd_via(binary(), "cfn-bootstrap")
        .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .env("PATH", path)
        .env("CFN_BOOTSTRAP_BIN_DIR", sandbox.path("bin"))
        .args(["doctor", "--format", "json", "-c"])
        .arg(sandbox.path("etc"))
        .args(args);
    for (name, value) in env {
        command = command.env(name, value);
    }
    // Killed well past its bound: a run that does not end fails its test, not the suite.
    let run = command.run_within(RUN_BOUND * 3);
    let report: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("doctor's JSON does not parse: {e}\n{run}"));
    assert_eq!(report["exit"], json!(run.code), "the JSON's exit is the exit status\n{run}");
    (run, report)
}

/// The check `id` of a report.
fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {report:#}"))
}

/// Asserts a check's verdict and that its `found` (and `fix`, when given) hold the words.
fn assert_check(report: &Value, id: &str, verdict: &str, found: &[&str], fix: &[&str]) {
    let c = check(report, id);
    assert_eq!(c["verdict"], verdict, "{id}: {c:#}\n{report:#}");
    let text = |key: &str| c[key].as_str().unwrap_or_default().to_string();
    for words in found {
        assert!(text("found").contains(words), "{id}'s found lacks {words:?}: {c:#}");
    }
    for words in fix {
        assert!(text("fix").contains(words), "{id}'s fix lacks {words:?}: {c:#}");
    }
}

/// Whether a check is one of the sections this file tests (the others judge the install,
/// cfn-hup's configuration and service, and cfn-init).
fn in_these_sections(check: &Value) -> bool {
    let id = check["id"].as_str().unwrap_or_default();
    ["credentials.", "network.", "clock."].iter().any(|section| id.starts_with(section))
}

/// The ids of this file's sections' checks that are neither ok nor skipped.
fn not_ok_in_these_sections(report: &Value) -> Vec<String> {
    let checks = report["checks"].as_array().unwrap().iter().filter(|c| in_these_sections(c));
    checks.filter(|c| c["verdict"] != "ok" && c["verdict"] != "skipped").map(|c| c["id"].to_string()).collect()
}

fn with_keys(url: &str) -> Vec<&str> {
    vec!["--url", url, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY]
}

/// A port where nothing listens (in the test's own namespace, nothing else binds it).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A listener that accepts connections and never answers, open for the test's life.
fn hanging_listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepting = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in accepting.incoming().flatten() {
            held.push(stream);
        }
    });
    (listener, port)
}

/// A listener that closes every connection as soon as it has accepted it.
fn closing_listener() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            drop(stream);
        }
    });
    port
}

#[test]
fn no_credential_source_at_all_fails_with_what_to_configure() {
    let (run, report) = in_private_network(|| {
        // Nothing listens at 169.254.169.254:80: not an instance.
        let sandbox = Sandbox::new();
        doctor(&sandbox, &["--url", &format!("http://127.0.0.1:{}", closed_port())], &[])
    });
    run.code(1);
    assert_check(
        &report,
        "credentials.source",
        "failed",
        &["no credential source", "the instance metadata service does not answer"],
        &["--credential-file", "--role", "AWS_PROFILE"],
    );
    assert_check(
        &report,
        "credentials.imds",
        "failed",
        &["http://169.254.169.254 does not answer", "Connection refused"],
        &[],
    );
}

#[test]
fn imdsv2_token_requests_that_time_out_name_the_hop_limit() {
    let (run, report, token_calls) = in_private_network(|| {
        let emulator = emulator_on_instance();
        // The token PUT is held longer than any client waits; GETs are answered.
        emulator.post_json(
            "/_emu/faults",
            &json!({"path": "/latest/api/token", "method": "PUT", "delay": 60, "count": -1}),
        );
        let sandbox = Sandbox::new();
        // A proxy that would refuse everything: IMDS is never asked through it.
        let proxy = format!("http://127.0.0.1:{}", closed_port());
        let env = [("HTTP_PROXY", proxy.as_str()), ("NO_PROXY", "127.0.0.1")];
        let (run, report) = doctor(&sandbox, &["--url", &emulator.url], &env);
        let imds = emulator.get_json("/_emu/requests?kind=imds&listener=imds&method=PUT");
        (run, report, imds.as_array().unwrap().len())
    });
    assert!(token_calls >= 1, "the token was asked for at IMDS's address\n{run}");
    assert_check(
        &report,
        "credentials.imdsv2",
        "warning",
        &[PROBE_TIMEOUT_WORDS, "while a plain GET was answered", "metadata hop limit is probably 1", "container"],
        &[&format!(
            "aws ec2 modify-instance-metadata-options --instance-id {INSTANCE_ID} --http-put-response-hop-limit 2"
        )],
    );
    assert_check(&report, "credentials.imds", "ok", &[INSTANCE_ID], &[]);
    assert_check(&report, "network.cloudformation", "ok", &["direct (NO_PROXY excludes it from HTTP_PROXY)"], &[]);
    // The tools still sign with the instance identity, over IMDSv1.
    assert_check(&report, "credentials.source", "ok", &["the instance identity"], &[]);
    assert_eq!(run.code, 2, "only warnings\n{run}");
}

/// doctor against the emulator with its `Date` shifted by `offset` seconds.
fn with_date_offset(offset: i64) -> (Run, Value) {
    in_private_network(move || {
        let emulator = emulator_on_instance();
        emulator.post_json("/_emu/settings", &json!({"date_offset_seconds": offset}));
        let sandbox = Sandbox::new();
        doctor(&sandbox, &with_keys(&emulator.url), &[])
    })
}

#[test]
fn a_date_ten_minutes_off_fails_the_clock() {
    let (run, report) = with_date_offset(600);
    run.code(1);
    assert_check(
        &report,
        "clock.offset",
        "failed",
        &["behind CloudFormation's", "SigV4 rejects requests more than 5 minutes off"],
        &["chrony"],
    );
    let found = check(&report, "clock.offset")["found"].as_str().unwrap();
    // The measure is as precise as a Date header's second and half the round trip
    // (doctor/clock.rs): on a loaded machine that is more than a second.
    let said = found.split(" behind").next().and_then(|s| s.strip_prefix("this host's clock is "));
    let seconds = said.and_then(|s| {
        let (minutes, seconds) = s.strip_suffix(" s")?.split_once(" min ")?;
        Some(minutes.parse::<i64>().ok()? * 60 + seconds.parse::<i64>().ok()?)
    });
    assert!(seconds.is_some_and(|s| (590..=610).contains(&s)), "{found}");
    assert_check(&report, "network.cloudformation", "ok", &[], &[]);
}

#[test]
fn a_date_two_minutes_off_is_a_warning() {
    let (run, report) = with_date_offset(-120);
    assert_check(&report, "clock.offset", "warning", &["ahead of CloudFormation's", "SigV4"], &["chrony"]);
    run.code(2);
}

/// A proxy that answers every request itself: 407, asking for a user and password, with
/// a `Date` ten minutes off (its own clock).
fn proxy_asking_for_authentication() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            use std::io::{Read, Write};
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let date = (chrono::Utc::now() + chrono::TimeDelta::minutes(10)).format("%a, %d %b %Y %H:%M:%S GMT");
            let answer = format!(
                "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"corp\"\r\n\
                 Date: {date}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    port
}

/// Issue 30: a proxy asking for authentication is named as the proxy's answer (not
/// "Unknown"), and its `Date` is not taken for the service's clock.
#[test]
fn a_proxy_asking_for_a_password_is_named_and_its_clock_is_not_the_services() {
    let (run, report, port) = in_private_network(|| {
        let emulator = emulator_on_instance();
        let sandbox = Sandbox::new();
        let port = proxy_asking_for_authentication();
        let proxy = format!("127.0.0.1:{port}");
        let mut args = with_keys(&emulator.url);
        args.extend(["--http-proxy", &proxy, "-s", "stack", "-r", "Resource"]);
        let (run, report) = doctor(&sandbox, &args, &[]);
        (run, report, port)
    });
    run.code(1);
    assert_check(
        &report,
        "network.cloudformation",
        "failed",
        &[&format!("through the proxy 127.0.0.1:{port} (from --http-proxy)"), "407 Proxy Authentication Required"],
        &["give the proxy's user and password in --http-proxy"],
    );
    assert_check(&report, "clock.offset", "skipped", &[&format!("came through the proxy 127.0.0.1:{port}")], &[]);
    assert_check(&report, "api.describe:stack/Resource", "failed", &["the proxy asks for a user and password"], &[]);
}

#[test]
fn a_proxy_that_refuses_to_connect_fails_naming_it() {
    let (refused, dropped, port, closing) = in_private_network(|| {
        let emulator = emulator_on_instance();
        let sandbox = Sandbox::new();
        let port = closed_port();
        let refused = doctor(
            &sandbox,
            &with_keys(&emulator.url),
            &[("HTTP_PROXY", &format!("http://proxyuser:proxysecret@127.0.0.1:{port}"))],
        );
        let closing = closing_listener();
        let mut args = with_keys(&emulator.url);
        let proxy = format!("127.0.0.1:{closing}");
        args.extend(["--http-proxy", &proxy]);
        let dropped = doctor(&sandbox, &args, &[]);
        (refused, dropped, port, closing)
    });
    let (run, report) = refused;
    run.code(1);
    assert_check(
        &report,
        "network.cloudformation",
        "failed",
        &[&format!("the proxy http://REDACTED@127.0.0.1:{port} (from HTTP_PROXY)"), "Connection refused"],
        &[&format!("http://REDACTED@127.0.0.1:{port}"), "HTTP_PROXY"],
    );
    assert!(!run.stdout.contains("proxysecret") && !run.stdout.contains("proxyuser"), "{run}");
    assert_check(&report, "clock.offset", "skipped", &["no answer from CloudFormation"], &[]);

    let (run, report) = dropped;
    run.code(1);
    assert_check(
        &report,
        "network.cloudformation",
        "failed",
        &[&format!("through the proxy 127.0.0.1:{closing} (from --http-proxy)"), "closed without an answer"],
        &[&format!("the proxy 127.0.0.1:{closing} (from --http-proxy)")],
    );
}

#[test]
fn an_endpoint_that_hangs_fails_with_the_timeout_within_the_bound() {
    let (run, report) = in_private_network(|| {
        let (_listener, port) = hanging_listener();
        let sandbox = Sandbox::new();
        doctor(&sandbox, &with_keys(&format!("http://127.0.0.1:{port}")), &[])
    });
    run.code(1);
    assert_check(
        &report,
        "network.cloudformation",
        "failed",
        &["connected", &format!("waiting for an answer {PROBE_TIMEOUT_WORDS}")],
        &["the endpoint accepts connections but does not answer"],
    );
    assert!(run.elapsed < RUN_BOUND, "took {:?}\n{run}", run.elapsed);
}

#[test]
fn every_endpoint_hanging_still_ends_within_the_bound() {
    let (run, report) = in_private_network(|| {
        let (_listener, port) = hanging_listener();
        let sandbox = Sandbox::new();
        let url = format!("http://127.0.0.1:{port}");
        // IMDS, CloudFormation and the proxy all accept and never answer.
        doctor(
            &sandbox,
            &["--url", &url],
            &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url), ("HTTP_PROXY", &format!("127.0.0.1:{port}"))],
        )
    });
    // The bound, and a margin for starting the process on a busy machine.
    assert!(run.elapsed < RUN_BOUND + Duration::from_secs(3), "took {:?}\n{run}", run.elapsed);
    run.code(1);
    for c in report["checks"].as_array().unwrap().iter().filter(|c| in_these_sections(c)) {
        assert_ne!(c["verdict"], "ok", "nothing answers, so nothing is ok: {c:#}\n{run}");
    }
    assert_check(&report, "credentials.imds", "failed", &[PROBE_TIMEOUT_WORDS], &[]);
}

#[test]
fn a_healthy_set_up_is_ok() {
    let (keys, identity, s3_host) = in_private_network(|| {
        let emulator = emulator_on_instance();
        let sandbox = Sandbox::new();
        let keys = doctor(&sandbox, &with_keys(&emulator.url), &[]);

        // cfn-hup's set-up: instance identity, command hooks (SQS), and an S3 source in
        // the metadata cfn-init stored.
        let host = emulator.url.trim_start_matches("http://").to_string();
        let etc = sandbox.path("etc");
        std::fs::write(
            etc.join("cfn-hup.conf"),
            format!("[main]\nstack=doctor-stack\nurl={}\nsqs_url={}\n", emulator.url, emulator.url),
        )
        .unwrap();
        std::fs::write(etc.join("hooks.conf"), "[c]\ntriggers=on.command\npath=deploy\naction=true\n").unwrap();
        let endpoints = sandbox.path("endpoints.json");
        std::fs::write(&endpoints, emulator.s3_endpoints_document()).unwrap();
        let data = sandbox.path("lib/cfn-init/data");
        std::fs::create_dir_all(&data).unwrap();
        let metadata = json!({"AWS::CloudFormation::Init": {"config": {
            "files": {"/tmp/x": {"source": format!("{}/bucket/key", emulator.url)}}}}});
        std::fs::write(data.join("metadata.json"), metadata.to_string()).unwrap();
        let identity = doctor(&sandbox, &[], &[("ENDPOINTS_OVERRIDE", endpoints.to_str().unwrap())]);
        (keys, identity, host)
    });
    let (run, report) = keys;
    run.code(0);
    assert_check(&report, "credentials.source", "ok", &["keys AKID… from --access-key/--secret-key"], &[]);
    assert!(!run.stdout.contains(SECRET_KEY) && !run.stdout.contains(ACCESS_KEY), "{run}");
    assert_check(&report, "network.cloudformation", "ok", &["direct", "connected", "answered HTTP"], &[]);
    assert_check(&report, "clock.offset", "ok", &["agrees"], &[]);

    let (run, report) = identity;
    assert_check(&report, "credentials.source", "ok", &["the instance identity"], &[]);
    assert_check(&report, "credentials.imds", "ok", &[INSTANCE_ID], &[]);
    assert_check(&report, "credentials.imdsv2", "ok", &["token was obtained"], &[]);
    assert_check(&report, "network.cloudformation", "ok", &[], &[]);
    assert_check(&report, &format!("network.s3:{s3_host}"), "ok", &["answered HTTP"], &[]);
    assert_check(&report, "network.sqs", "ok", &["answered HTTP"], &[]);
    assert_check(&report, "clock.offset", "ok", &[], &[]);
    for c in report["checks"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        if ["credentials.", "network.", "clock."].iter().any(|p| id.starts_with(p)) {
            assert_eq!(c["verdict"], "ok", "{c:#}\n{run}");
        }
    }
}

#[test]
fn https_is_checked_with_the_tools_trust_store_directly_and_through_a_tunnel() {
    let (trusted, untrusted, tunnelled, refused, tunnels, tls_port) = in_private_network(|| {
        let sandbox = Sandbox::new();
        let (ca, server_cert, key) = private_ca(sandbox.dir.path());
        let tls_port = free_port();
        let _emulator = Emulator::start_at(
            &[
                "--port",
                "5000",
                "--tls-port",
                &tls_port.to_string(),
                "--tls-cert",
                server_cert.to_str().unwrap(),
                "--tls-key",
                key.to_str().unwrap(),
            ],
            5000,
        );
        let https_url = format!("https://127.0.0.1:{tls_port}");
        let ca_override = [("CA_OVERRIDE", ca.to_str().unwrap())];
        let trusted = doctor(&sandbox, &with_keys(&https_url), &ca_override);
        let untrusted = doctor(&sandbox, &with_keys(&https_url), &[]);
        let proxy = RecordingProxy::with_ssl_ports(&[tls_port]);
        let mut args = with_keys(&https_url);
        args.extend(["--https-proxy", &proxy.url]);
        let tunnelled = doctor(&sandbox, &args, &ca_override);
        // squid's default: CONNECT only to port 443.
        let refusing = RecordingProxy::start();
        let mut args = with_keys(&https_url);
        args.extend(["--https-proxy", &refusing.url]);
        let refused = doctor(&sandbox, &args, &ca_override);
        let tunnels: Vec<String> = proxy.requests().iter().map(|r| format!("{} {}", r.method, r.target)).collect();
        (trusted, untrusted, tunnelled, refused, tunnels, tls_port)
    });
    let (run, report) = trusted;
    run.code(0);
    assert_check(&report, "network.cloudformation", "ok", &["connected", "TLS verified with", "answered HTTP"], &[]);
    assert_check(&report, "clock.offset", "ok", &[], &[]);

    let (run, report) = untrusted;
    run.code(1);
    assert_check(
        &report,
        "network.cloudformation",
        "failed",
        &["the TLS handshake", "invalid peer certificate"],
        &["REQUESTS_CA_BUNDLE", "CA_OVERRIDE"],
    );

    let (run, report) = tunnelled;
    run.code(0);
    assert_check(
        &report,
        "network.cloudformation",
        "ok",
        &["(from --https-proxy)", "tunnel opened", "TLS verified"],
        &[],
    );
    assert_eq!(tunnels, [format!("CONNECT 127.0.0.1:{tls_port}")]);

    let (run, report) = refused;
    run.code(1);
    assert_check(
        &report,
        "network.cloudformation",
        "failed",
        &[&format!("the proxy refused to open a tunnel to 127.0.0.1:{tls_port}: HTTP 403")],
        &[&format!("allow CONNECT to 127.0.0.1:{tls_port}")],
    );
}

#[test]
fn cfn_hup_s_credential_file_and_role_are_checked() {
    let (open_file, file, wrong_role, right_role) = in_private_network(|| {
        let emulator = emulator_on_instance();
        let sandbox = Sandbox::new();
        let conf = sandbox.path("etc/cfn-hup.conf");
        let main = |extra: &str| {
            std::fs::write(&conf, format!("[main]\nstack=doctor-stack\nurl={}\n{extra}", emulator.url)).unwrap()
        };
        let file = sandbox.credential_file(0o640, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
        main(&format!("credential-file={}\n", file.display()));
        let open_file = doctor(&sandbox, &[], &[]);
        main("role=wrong-role\n");
        let wrong_role = doctor(&sandbox, &[], &[]);
        main("role=emulator-role\n");
        let right_role = doctor(&sandbox, &[], &[]);
        (open_file, file, wrong_role, right_role)
    });
    let (run, report) = open_file;
    run.code(1);
    assert_check(
        &report,
        "credentials.source",
        "failed",
        &["Credential file cannot be accessible by group or other"],
        &[&format!("chmod 600 {}", file.display())],
    );

    let (run, report) = wrong_role;
    run.code(1);
    assert_check(&report, "credentials.source", "failed", &["Could not retrieve credentials for role wrong-role"], &[]);
    assert_check(
        &report,
        "credentials.role",
        "failed",
        &["wrong-role is not the instance profile's role (emulator-role)"],
        &["set the role to emulator-role"],
    );

    let (run, report) = right_role;
    assert_check(
        &report,
        "credentials.source",
        "ok",
        &["keys ASIA… from role emulator-role (role in cfn-hup.conf), from the instance metadata service"],
        &[],
    );
    assert_check(&report, "credentials.role", "ok", &["emulator-role is the instance profile's role"], &[]);
    assert!(!run.stdout.contains("ASIAEMULATORROLEKEY1"), "never the whole key id\n{run}");
    // (This cfn-hup has no hooks and does not run: those sections' failures are not this test's.)
    assert_eq!(not_ok_in_these_sections(&report), Vec::<String>::new(), "{run}");
}

/// cfn-hup's set-up in the sandbox: `stack` (which need not exist: these tests are about
/// the credentials), the emulator's url, `extra` `[main]` lines, and an update hook, so
/// that the API section signs a call with the credentials too.
fn hup_with_hook(sandbox: &Sandbox, url: &str, extra: &str) {
    let etc = sandbox.path("etc");
    std::fs::write(etc.join("cfn-hup.conf"), format!("[main]\nstack=doctor-stack\nurl={url}\n{extra}")).unwrap();
    std::fs::write(
        etc.join("hooks.conf"),
        "[watch]\ntriggers=post.update\npath=Resources.Watched.Metadata\naction=true\n",
    )
    .unwrap();
}

/// The bound a whole run is held to, with a margin for starting the process on a busy
/// machine.
fn assert_within_the_bound(run: &Run) {
    assert!(run.elapsed <= RUN_BOUND + Duration::from_secs(3), "took {:?}\n{run}", run.elapsed);
}

/// Issue 31, F5: the API section signed with credentials it resolved again, with no
/// deadline: an IMDS role endpoint that hangs took 123 s.
#[test]
fn a_hanging_imds_role_endpoint_ends_within_the_bound() {
    let (run, report, role_requests) = in_private_network(|| {
        let emulator = emulator_on_instance();
        emulator.post_json(
            "/_emu/faults",
            &json!({"path": "/latest/meta-data/iam/security-credentials/emulator-role", "delay": 300, "count": -1}),
        );
        let sandbox = Sandbox::new();
        hup_with_hook(&sandbox, &emulator.url, "role=emulator-role\n");
        let (run, report) = doctor(&sandbox, &[], &[]);
        let requests = emulator.get_json("/_emu/requests?kind=imds&listener=imds");
        let role_requests = requests
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with("/security-credentials/emulator-role")))
            .count();
        (run, report, role_requests)
    });
    assert_within_the_bound(&run);
    assert!(role_requests >= 1, "the role's credentials were asked for\n{run}");
    assert_check(&report, "credentials.source", "failed", &["resolving credentials did not end within"], &[]);
    assert_check(
        &report,
        "api.describe:Watched",
        "skipped",
        &["not asked: resolving credentials did not end within", "see the credentials checks"],
        &[],
    );
}

/// Issue 31, F5: a container credentials endpoint that hangs took 188 s.
#[test]
fn a_hanging_container_credentials_endpoint_ends_within_the_bound() {
    let (run, report) = in_private_network(|| {
        let emulator = emulator_on_instance();
        let (_listener, port) = hanging_listener();
        let sandbox = Sandbox::new();
        hup_with_hook(&sandbox, &emulator.url, "");
        let uri = format!("http://127.0.0.1:{port}/credentials");
        doctor(&sandbox, &[], &[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &uri)])
    });
    assert_within_the_bound(&run);
    // Given up by doctor, or by the provider's own timeout within doctor's: either way once.
    assert_check(&report, "credentials.source", "failed", &[], &[]);
    assert_check(&report, "api.describe:Watched", "skipped", &["not asked: "], &[]);
}

/// A profile in the sandbox's `~/.aws/config` whose `credential_process` is `command`.
fn profile_with_process(sandbox: &Sandbox, profile: &str, command: &str) -> std::path::PathBuf {
    let aws = sandbox.path(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    let config = aws.join("config");
    std::fs::write(&config, format!("[profile {profile}]\ncredential_process = {command}\n")).unwrap();
    config
}

/// Issue 31, F5: a `credential_process` that sleeps held doctor for as long as it slept.
#[test]
fn a_credential_process_that_sleeps_ends_within_the_bound() {
    let (run, report) = in_private_network(|| {
        let emulator = emulator_on_instance();
        let sandbox = Sandbox::new();
        hup_with_hook(&sandbox, &emulator.url, "");
        profile_with_process(&sandbox, "slow", "/bin/sh -c 'sleep 60'");
        doctor(&sandbox, &[], &[("AWS_PROFILE", "slow")])
    });
    assert_within_the_bound(&run);
    assert_check(&report, "credentials.source", "skipped", &["profile slow", "credential_process"], &[]);
}

/// Issue 31, F6: doctor ran the `credential_process` of `AWS_PROFILE`. It says what would
/// run, and where it is configured, and the checks that need credentials say why they
/// were not made.
#[test]
fn a_credential_process_is_named_and_never_run() {
    let (run, report, marker, config) = in_private_network(|| {
        let emulator = emulator_on_instance();
        let sandbox = Sandbox::new();
        hup_with_hook(&sandbox, &emulator.url, "");
        let marker = sandbox.path("the-process-ran");
        let keys = r#"{"Version": 1, "AccessKeyId": "AKID", "SecretAccessKey": "SECRET"}"#;
        let command = format!("/bin/sh -c 'touch {}; echo {}'", marker.display(), keys.replace('"', "\\\""));
        let config = profile_with_process(&sandbox, "deploy", &command);
        let (run, report) = doctor(&sandbox, &[], &[("AWS_PROFILE", "deploy")]);
        // Looked at before the sandbox goes.
        (run, report, marker.exists(), config)
    });
    assert!(!marker, "the credential_process was run\n{run}");
    let config = config.display().to_string();
    assert_check(
        &report,
        "credentials.source",
        "skipped",
        &["not checked", "profile deploy (AWS_PROFILE)", "credential_process of profile deploy", &config, "not run"],
        &[],
    );
    assert_check(
        &report,
        "api.describe:Watched",
        "skipped",
        &["not asked", "credential_process of profile deploy", "not run"],
        &[],
    );
    assert_check(&report, "hook.path:watch", "skipped", &["credential_process"], &[]);
}

/// Issue 31, "what held": the run's 20 s bound held only as the sum of the probes'
/// bounds (21 s seen). A step no probe bounds — here cfn-init's metadata.json replaced by
/// a FIFO, which blocks its reader — is cut at the bound: the sections not finished are
/// reported as not checked, and the run ends.
#[test]
fn a_section_that_hangs_is_cut_at_the_bound() {
    let (run, report) = in_private_network(|| {
        let sandbox = Sandbox::new();
        let data = sandbox.path("lib/cfn-init/data");
        std::fs::create_dir_all(&data).unwrap();
        let status = std::process::Command::new("mkfifo").arg(data.join("metadata.json")).status().unwrap();
        assert!(status.success());
        doctor(&sandbox, &with_keys(&format!("http://127.0.0.1:{}", closed_port())), &[])
    });
    assert_within_the_bound(&run);
    let unfinished: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"].as_str().unwrap().ends_with(".unfinished"))
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(!unfinished.is_empty(), "{run}");
    assert_check(&report, unfinished[0], "skipped", &["not checked: doctor's run bound of 20 s was reached"], &[]);
    // What ended before the bound is reported as it was found.
    assert_check(&report, "credentials.source", "ok", &["keys AKID… from --access-key/--secret-key"], &[]);
}
