//! Where credentials go when a download is redirected (SEC-04, INIT-AUTH-05, INIT-AUTH-07):
//! cfn-init through its link, against small recording servers on loopback (and, for the
//! metadata address, in a private network namespace).
//!
//! One URL parser decides both where a request is sent and which credentials it gets,
//! every hop chooses its credentials afresh, nothing is sent with credentials after a
//! redirect from HTTPS to plain HTTP, and no redirect may lead to a link-local address.

mod common;
use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::sync::{Arc, Mutex};

const PASSWORD: &str = "s3cret-password";
/// `user:s3cret-password` in base64.
const BASIC: &str = "Basic dXNlcjpzM2NyZXQtcGFzc3dvcmQ=";

/// A server on `ip` that records each request's head and answers with `answer(head)`.
fn serve_on(ip: &str, answer: impl Fn(&str) -> String + Send + 'static) -> (u16, Heads) {
    let (address, heads) = serve_recorded(ip, move |_, head| answer(head).into_bytes());
    (address.port(), heads)
}

fn ok(body: &str) -> String {
    format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len())
}

fn redirect(location: &str) -> String {
    format!("HTTP/1.1 302 Found\r\nConnection: close\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n")
}

fn authorization(head: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("authorization").then(|| v.trim().to_string())
    })
}

/// cfn-init writing `file` from `url` with the basic block `web` for `uris`.
fn fetch(sandbox: &Sandbox, url: &str, uris: Value) -> Run {
    let target = sandbox.path("root/fetched");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let metadata = json!({
        "AWS::CloudFormation::Authentication": {
            "web": {"type": "basic", "username": "user", "password": PASSWORD, "uris": uris}
        },
        "AWS::CloudFormation::Init": {"config": {"files": {target.display().to_string(): {"source": url, "authentication": "web"}}}}
    });
    let file = sandbox.path("metadata.json");
    std::fs::write(&file, metadata.to_string()).unwrap();
    sandbox.cmd("cfn-init").arg("-v").arg(&file).run()
}

#[test]
fn credentials_never_follow_a_redirect_to_the_host_hidden_behind_a_fragment() {
    // The other host's URL ends its authority at `#`: everything after it, including
    // `@good-host`, is the fragment. A parser that takes the host after the last `@`
    // would choose good-host's credentials for a request that goes to other-host.
    let (other_port, other_heads) = serve_on("127.0.0.1", |_| ok("from the other host"));
    let good = Arc::new(Mutex::new(0u16));
    let good_port_for_answer = good.clone();
    let (good_port, good_heads) = serve_on("127.0.0.1", move |_| {
        let me = *good_port_for_answer.lock().unwrap();
        redirect(&format!("http://localhost:{other_port}#@127.0.0.1:{me}/x"))
    });
    *good.lock().unwrap() = good_port;

    let sandbox = Sandbox::new();
    let run =
        fetch(&sandbox, &format!("http://127.0.0.1:{good_port}/start"), json!([format!("127.0.0.1:{good_port}")]));
    run.code(0);
    assert_eq!(std::fs::read_to_string(sandbox.path("root/fetched")).unwrap(), "from the other host");
    let good_heads = good_heads.lock().unwrap().clone();
    assert_eq!(good_heads.len(), 1);
    assert_eq!(authorization(&good_heads[0]).as_deref(), Some(BASIC), "the named block applies to its own host");
    let other_heads = other_heads.lock().unwrap().clone();
    assert_eq!(other_heads.len(), 1, "{other_heads:?}");
    assert!(other_heads[0].starts_with("GET / HTTP/1.1"), "{other_heads:?}");
    assert_eq!(authorization(&other_heads[0]), None, "credentials reached the other host: {other_heads:?}");
    assert!(!sandbox.log("cfn-init.log").contains(PASSWORD));
}

#[test]
fn each_hop_chooses_its_credentials_afresh() {
    // Both hosts are covered by the block: each hop gets the credentials because its
    // own URL is covered, not because the first one was.
    let (second_port, second_heads) = serve_on("127.0.0.1", |_| ok("second"));
    let (first_port, first_heads) =
        serve_on("127.0.0.1", move |_| redirect(&format!("http://127.0.0.1:{second_port}/b")));
    let sandbox = Sandbox::new();
    let url = format!("http://127.0.0.1:{first_port}/a");
    fetch(&sandbox, &url, json!([format!("127.0.0.1:{first_port}"), format!("127.0.0.1:{second_port}")])).code(0);
    assert_eq!(authorization(&first_heads.lock().unwrap()[0]).as_deref(), Some(BASIC));
    assert_eq!(authorization(&second_heads.lock().unwrap()[0]).as_deref(), Some(BASIC));

    // Only the first covered: the second hop gets nothing.
    let (second_port, second_heads) = serve_on("127.0.0.1", |_| ok("second"));
    let (first_port, _) = serve_on("127.0.0.1", move |_| redirect(&format!("http://127.0.0.1:{second_port}/b")));
    let url = format!("http://127.0.0.1:{first_port}/a");
    fetch(&sandbox, &url, json!([format!("127.0.0.1:{first_port}")])).code(0);
    assert_eq!(authorization(&second_heads.lock().unwrap()[0]), None);
}

#[test]
fn a_named_block_goes_over_plain_http_with_a_warning_and_only_to_the_source_host() {
    // INIT-AUTH-05: the block the file names is used for a plain-HTTP source, as the
    // reference does; the log says plainly that the password travels unencrypted.
    let (other_port, other_heads) = serve_on("127.0.0.1", |_| ok("from the other host"));
    let (port, heads) = serve_on("127.0.0.1", move |head| {
        if authorization(head).as_deref() != Some(BASIC) {
            return "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".to_string();
        }
        if head.starts_with("GET /moved ") {
            redirect(&format!("http://localhost:{other_port}/elsewhere"))
        } else {
            ok("protected")
        }
    });
    let sandbox = Sandbox::new();
    let metadata = |path: &str| {
        json!({
            "AWS::CloudFormation::Authentication": {
                "web": {"type": "basic", "username": "user", "password": PASSWORD},
                "scoped": {"type": "basic", "username": "user", "password": PASSWORD, "uris": ["other.example"]}
            },
            "AWS::CloudFormation::Init": {"config": {"files": {
                sandbox.path("root/named").display().to_string(): {"source": format!("http://127.0.0.1:{port}/{path}"), "authentication": "web"}
            }}}
        })
    };
    std::fs::create_dir_all(sandbox.path("root")).unwrap();
    std::fs::write(sandbox.path("metadata.json"), metadata("file").to_string()).unwrap();
    sandbox.cmd("cfn-init").arg(sandbox.path("metadata.json")).run().code(0);
    assert_eq!(std::fs::read_to_string(sandbox.path("root/named")).unwrap(), "protected");
    assert_eq!(authorization(&heads.lock().unwrap()[0]).as_deref(), Some(BASIC));
    let log = sandbox.log("cfn-init.log");
    let warning = format!(
        "[WARNING] Authentication web sends the password of user user unencrypted over plain HTTP to http://127.0.0.1:{port}/file: anyone on the network path can read it; use an https:// URL"
    );
    assert!(log.contains(&warning), "{log}");
    assert!(!log.contains(PASSWORD), "{log}");

    // A redirect to another host: that hop gets nothing (the per-hop choice).
    std::fs::write(sandbox.path("metadata.json"), metadata("moved").to_string()).unwrap();
    sandbox.cmd("cfn-init").arg(sandbox.path("metadata.json")).run().code(0);
    assert_eq!(std::fs::read_to_string(sandbox.path("root/named")).unwrap(), "from the other host");
    let other = other_heads.lock().unwrap().clone();
    assert_eq!(other.len(), 1);
    assert_eq!(authorization(&other[0]), None, "credentials followed the redirect: {other:?}");

    // A named block with uris keeps its host restriction: not sent, the server refuses.
    let scoped = metadata("file").to_string().replace(r#""authentication":"web""#, r#""authentication":"scoped""#);
    std::fs::write(sandbox.path("metadata.json"), scoped).unwrap();
    sandbox.cmd("cfn-init").arg(sandbox.path("metadata.json")).run().code(1);
    let last = heads.lock().unwrap().last().cloned().unwrap();
    assert_eq!(authorization(&last), None, "{last}");
}

#[test]
fn nothing_is_sent_with_credentials_after_a_redirect_from_https_to_http() {
    let sandbox = Sandbox::new();
    let (ca, cert, key) = private_ca(sandbox.dir.path());
    let (plain_port, plain_heads) = serve_on("127.0.0.1", |_| ok("over plain http"));
    let tls = TlsRedirector::start(&cert, &key, &format!("http://127.0.0.1:{plain_port}/after"));
    let https_url = format!("https://127.0.0.1:{}/before", tls.port);
    // The block covers both hosts; the downgrade alone withholds the credentials.
    let uris = json!([format!("127.0.0.1:{}", tls.port), format!("127.0.0.1:{plain_port}")]);
    let target = sandbox.path("root/fetched");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let metadata = json!({
        "AWS::CloudFormation::Authentication": {"web": {"type": "basic", "username": "user", "password": PASSWORD, "uris": uris}},
        "AWS::CloudFormation::Init": {"config": {"files": {target.display().to_string(): {"source": https_url, "authentication": "web"}}}}
    });
    std::fs::write(sandbox.path("metadata.json"), metadata.to_string()).unwrap();
    sandbox.cmd("cfn-init").arg("-v").arg(sandbox.path("metadata.json")).env("CA_OVERRIDE", &ca).run().code(0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "over plain http");
    assert_eq!(tls.authorizations(), [Some(BASIC.to_string())], "the HTTPS hop is covered");
    let plain = plain_heads.lock().unwrap().clone();
    assert_eq!(plain.len(), 1);
    assert_eq!(authorization(&plain[0]), None, "credentials sent after the downgrade: {plain:?}");
    assert!(sandbox.log("cfn-init.log").contains("Redirect from HTTPS to plain HTTP"));
}

#[test]
fn a_redirect_to_the_instance_metadata_address_is_refused_without_a_request() {
    in_private_network(|| {
        // The metadata address exists in this namespace and records what reaches it.
        let (imds_port, imds_heads) = serve_on("169.254.169.254", |_| ok("role credentials"));
        let location = format!("http://169.254.169.254:{imds_port}/latest/meta-data/iam/security-credentials/");
        let (port, _) = serve_on("127.0.0.1", move |_| redirect(&location));
        let sandbox = Sandbox::new();
        let url = format!("http://127.0.0.1:{port}/file");
        let run = fetch(&sandbox, &url, json!(["example.com"]));
        run.code(1).stderr_is(&format!(
            "Error occurred during build: Failed to retrieve {url}: Refusing to follow a redirect to a link-local address: http://169.254.169.254:{imds_port}/latest/meta-data/iam/security-credentials/\n"
        ));
        assert!(imds_heads.lock().unwrap().is_empty(), "a request reached the metadata address");
        assert!(!sandbox.path("root/fetched").exists());
    });
}

/// cfn-init writing `file` from `url` without naming a block, with the emulator and
/// `more_s3` (`host:port`s) registered as S3 endpoints and `blocks` as the
/// authentication.
fn fetch_with_s3(sandbox: &Sandbox, emulator: &Emulator, more_s3: &[String], url: &str, blocks: Value) -> Run {
    let target = sandbox.path("root/fetched");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let mut hosts = vec![emulator.url.trim_start_matches("http://").to_string()];
    hosts.extend(more_s3.iter().cloned());
    let entries: Vec<Value> = hosts.iter().map(|h| json!({"Region": "us-east-1", "Hostname": h})).collect();
    let endpoints = sandbox.path("endpoints.json");
    std::fs::write(&endpoints, json!({"Services": {"AmazonS3": {"Endpoints": entries}}}).to_string()).unwrap();
    let metadata = json!({
        "AWS::CloudFormation::Authentication": blocks,
        "AWS::CloudFormation::Init": {"config": {"files": {target.display().to_string(): {"source": url}}}}
    });
    std::fs::write(sandbox.path("metadata.json"), metadata.to_string()).unwrap();
    sandbox.cmd("cfn-init").arg("-v").arg(sandbox.path("metadata.json")).env("ENDPOINTS_OVERRIDE", &endpoints).run()
}

fn s3_block(buckets: &[&str]) -> Value {
    json!({"type": "S3", "accessKeyId": ACCESS_KEY, "secretKey": SECRET_KEY, "buckets": buckets})
}

/// The emulator's journal of GETs of `path`: (signed with SigV4, status).
fn s3_gets(emulator: &Emulator, path: &str) -> Vec<(bool, u64)> {
    let all = emulator.get_json("/_emu/requests");
    all.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "GET" && r["path"] == path)
        .map(|r| (r["auth_scheme"] == "AWS4-HMAC-SHA256", r["status"].as_u64().unwrap_or(0)))
        .collect()
}

#[test]
fn a_source_without_credentials_never_gains_them_by_a_redirect_to_s3() {
    // SEC-04: a server that asks for no credentials redirects to a private object in a
    // bucket an S3 block lists. The hop is not signed, S3 refuses it, nothing is written
    // (the reference refuses with 403 as well).
    let emulator = Emulator::shared();
    let (bucket, object_url) = emulator.s3_object("private.txt", b"private object\n");
    let location = object_url.clone();
    let (port, heads) = serve_on("127.0.0.1", move |_| redirect(&location));
    let sandbox = Sandbox::new();
    let url = format!("http://127.0.0.1:{port}/public");
    let run = fetch_with_s3(&sandbox, &emulator, &[], &url, json!({"keys": s3_block(&[&bucket])}));
    run.code(1).stderr_has(&format!("Failed to retrieve {url}: HTTP Error 403 : "));
    assert!(!sandbox.path("root/fetched").exists(), "the private object was written\n{run}");
    assert_eq!(heads.lock().unwrap().len(), 1);
    assert_eq!(s3_gets(&emulator, &format!("/{bucket}/private.txt")), [(false, 403)], "{run}");
}

#[test]
fn an_s3_redirect_is_signed_only_by_the_block_that_signed_the_first_request() {
    // INIT-AUTH-07: an S3 URL that redirects to another S3 URL the same block covers is
    // signed again there (a bucket answering from another endpoint)…
    let emulator = Emulator::shared();
    let (bucket, object_url) = emulator.s3_object("moved.txt", b"moved here\n");
    let location = object_url.clone();
    let (port, heads) = serve_on("127.0.0.1", move |_| redirect(&location));
    let front = format!("127.0.0.1:{port}");
    let sandbox = Sandbox::new();
    let url = format!("http://{front}/{bucket}/moved.txt");
    let blocks = json!({"keys": s3_block(&[&bucket])});
    fetch_with_s3(&sandbox, &emulator, std::slice::from_ref(&front), &url, blocks).code(0);
    assert_eq!(std::fs::read_to_string(sandbox.path("root/fetched")).unwrap(), "moved here\n");
    let first = heads.lock().unwrap()[0].clone();
    assert!(authorization(&first).is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 ")), "{first}");
    assert_eq!(s3_gets(&emulator, &format!("/{bucket}/moved.txt")), [(true, 200)]);

    // …but a hop to a bucket only another block lists gets nothing: that block never
    // authenticated this request.
    let (other, _) = emulator.s3_object("other.txt", b"other\n");
    let location = format!("{}/{other}/other.txt", emulator.url);
    let (port, _) = serve_on("127.0.0.1", move |_| redirect(&location));
    let front = format!("127.0.0.1:{port}");
    let url = format!("http://{front}/{bucket}/start.txt");
    let blocks = json!({"first": s3_block(&[&bucket]), "second": s3_block(&[&other])});
    let run = fetch_with_s3(&sandbox, &emulator, std::slice::from_ref(&front), &url, blocks);
    run.code(1).stderr_has(&format!("Failed to retrieve {url}: HTTP Error 403 : "));
    assert_eq!(s3_gets(&emulator, &format!("/{other}/other.txt")), [(false, 403)], "{run}");
}

/// An HTTPS server (Python's ssl module, from the emulator's environment) that answers
/// every request with a redirect to `location` and records the Authorization headers.
struct TlsRedirector {
    port: u16,
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl TlsRedirector {
    fn start(cert: &std::path::Path, key: &std::path::Path, location: &str) -> TlsRedirector {
        let port = free_port();
        let log = cert.with_file_name(format!("redirector-{port}.log"));
        let script = r#"
import http.server, ssl, sys
cert, key, port, location, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write(repr(self.headers.get("Authorization")) + "\n")
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", port), H)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print("ready", flush=True)
server.serve_forever()
"#;
        let mut child = std::process::Command::new(emulator_python())
            .args(["-c", script])
            .arg(cert)
            .arg(key)
            .arg(port.to_string())
            .arg(location)
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the TLS redirector");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
        assert_eq!(ready.trim(), "ready");
        TlsRedirector { port, child, log }
    }

    fn authorizations(&self) -> Vec<Option<String>> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().map(|l| if l == "None" { None } else { Some(l.trim_matches('\'').to_string()) }).collect()
    }
}

impl Drop for TlsRedirector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
