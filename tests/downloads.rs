//! cfn-init's downloads through `cfn_aws::Downloader` (INIT-FILES-05, INIT-AUTH-01..07,
//! NET-07, SEC-04): against the emulator's S3 (path-style, SigV4 validated with the test
//! keys and the IMDS role's keys) and against small local HTTP servers written here.
//!
//! The emulator's address is made an S3 endpoint with an endpoints document naming it,
//! the way an `endpoints-override.json` would.

mod common;

use cfn_aws::auth::Authentication;
use cfn_aws::endpoint::Endpoints;
use cfn_aws::http::HttpClient;
use cfn_aws::retry::{Policy, Verdict};
use cfn_aws::{DownloadError, Downloader, Imds, ProxyOptions};
use common::{ACCESS_KEY, Emulator, RecordingProxy, SECRET_KEY};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

fn no_sleep(_: Duration) {}

/// Five tries like production, without the back-off sleeps.
const FAST: Policy = Policy { max_tries: 5, throttled_budget: Duration::ZERO, sleep: no_sleep };

fn host_of(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// An endpoints document in which these `host:port`s are S3 (us-east-1).
fn s3_endpoints(hosts: &[&str]) -> Endpoints {
    let entries: Vec<Value> = hosts.iter().map(|h| json!({"Region": "us-east-1", "Hostname": h})).collect();
    Endpoints::parse(&json!({"Services": {"AmazonS3": {"Endpoints": entries}}}).to_string()).unwrap()
}

fn no_imds() -> Arc<Imds> {
    Arc::new(Imds::new("http://127.0.0.1:1", true, Policy::IMDS))
}

fn downloader(auth: Value, endpoints: Endpoints, imds: Arc<Imds>, proxies: ProxyOptions) -> Downloader {
    let http = Arc::new(HttpClient::new(proxies, cfn_aws::api_user_agent()));
    Downloader::new(http, imds, Authentication::parse(&auth), endpoints).with_retry(FAST)
}

/// Downloads into a temp file that already holds junk, and returns what it ends with.
fn fetch(d: &Downloader, url: &str, name: Option<&str>) -> Result<(Vec<u8>, cfn_aws::DownloadInfo), DownloadError> {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(b"junk that must disappear").unwrap();
    let info = d.download_to(url, name, &mut file)?;
    let mut bytes = Vec::new();
    file.rewind_and_read(&mut bytes);
    Ok((bytes, info))
}

trait ReadAll {
    fn rewind_and_read(&mut self, out: &mut Vec<u8>);
}

impl ReadAll for std::fs::File {
    fn rewind_and_read(&mut self, out: &mut Vec<u8>) {
        use std::io::Seek;
        self.seek(std::io::SeekFrom::Start(0)).unwrap();
        self.read_to_end(out).unwrap();
    }
}

/// Journal entries of requests to a path.
fn requests_to(emulator: &Emulator, path: &str) -> Vec<Value> {
    let all = emulator.get_json("/_emu/requests");
    all.as_array().unwrap().iter().filter(|r| r["path"] == path).cloned().collect()
}

fn keys_block(secret: &str, buckets: Value) -> Value {
    json!({"type": "S3", "accessKeyId": ACCESS_KEY, "secretKey": secret, "buckets": buckets})
}

#[test]
fn static_keys_download_and_wrong_keys_fail_after_one_attempt() {
    let emulator = Emulator::shared();
    let (bucket, url) = emulator.s3_object("dir/hello.txt", b"hello from s3\n");
    let endpoints = s3_endpoints(&[&host_of(&emulator.url)]);

    let good = downloader(
        json!({"Keys": keys_block(SECRET_KEY, json!(bucket))}),
        endpoints.clone(),
        no_imds(),
        ProxyOptions::default(),
    );
    let (bytes, info) = fetch(&good, &url, None).unwrap();
    assert_eq!(bytes, b"hello from s3\n");
    assert_eq!(info.auth.as_deref(), Some("Keys"));
    assert_eq!(info.s3.as_ref().map(|l| l.bucket.as_str()), Some(bucket.as_str()));
    assert_eq!(info.md5, "cf74de355f44269ca4f70099d922ff8a"); // md5("hello from s3\n")
    let path = format!("/{bucket}/dir/hello.txt");
    let journal = requests_to(&emulator, &path);
    assert_eq!(journal.last().unwrap()["auth_scheme"], "AWS4-HMAC-SHA256", "{journal:?}");

    let bad = downloader(
        json!({"Keys": keys_block("wrong/secret", json!([bucket]))}),
        endpoints,
        no_imds(),
        ProxyOptions::default(),
    );
    let before = requests_to(&emulator, &path).len();
    let err = fetch(&bad, &url, None).unwrap_err();
    assert_eq!(err.verdict(), Verdict::Terminal);
    let reason = err.to_string();
    assert!(reason.starts_with("HTTP Error 403 : <Error><Code>SignatureDoesNotMatch</Code>"), "{reason}");
    assert_eq!(requests_to(&emulator, &path).len(), before + 1, "a 403 is not retried");
}

#[test]
fn missing_objects_are_retried_five_times() {
    let emulator = Emulator::shared();
    let (bucket, _) = emulator.s3_object("present", b"x");
    let url = format!("{}/{bucket}/absent", emulator.url);
    let d = downloader(
        json!({"Keys": keys_block(SECRET_KEY, json!(bucket))}),
        s3_endpoints(&[&host_of(&emulator.url)]),
        no_imds(),
        ProxyOptions::default(),
    );
    let err = fetch(&d, &url, None).unwrap_err();
    assert!(err.to_string().starts_with("HTTP Error 404 : <Error><Code>NoSuchKey</Code>"), "{err}");
    assert_eq!(requests_to(&emulator, &format!("/{bucket}/absent")).len(), 5);
}

#[test]
fn role_credentials_come_from_imds_once() {
    // A private emulator: the IMDS journal must hold only this test's requests.
    let emulator = Emulator::start(&[]);
    let (bucket, url) = emulator.s3_object("role.txt", b"signed with the role\n");
    let imds = Arc::new(Imds::new(&emulator.url, false, Policy::IMDS));
    let d = downloader(
        json!({"Role": {"type": "s3", "roleName": "emulator-role", "buckets": [bucket]}}),
        s3_endpoints(&[&host_of(&emulator.url)]),
        imds,
        ProxyOptions::default(),
    );
    for _ in 0..3 {
        let (bytes, info) = fetch(&d, &url, None).unwrap();
        assert_eq!(bytes, b"signed with the role\n");
        assert_eq!(info.auth.as_deref(), Some("Role"));
    }
    let gets = requests_to(&emulator, "/latest/meta-data/iam/security-credentials/emulator-role");
    assert_eq!(gets.len(), 1, "role credentials are cached: {gets:?}");
    let downloads: Vec<Value> =
        requests_to(&emulator, &format!("/{bucket}/role.txt")).into_iter().filter(|r| r["method"] == "GET").collect();
    assert_eq!(downloads.len(), 3);
    assert!(downloads.iter().all(|r| r["security_token"] == true && r["auth_scheme"] == "AWS4-HMAC-SHA256"));
}

/// SPEC §10.10: the reference keeps an S3 block whose `roleName` is there, whatever it
/// holds; one written as a list (`roleName: [Role]`) signs nothing: the download it
/// would sign fails naming the block, without asking IMDS for a role called `["…"]`.
#[test]
fn a_role_name_given_as_a_list_is_kept_and_its_downloads_fail_naming_it() {
    let emulator = Emulator::start(&[]);
    let (bucket, url) = emulator.s3_object("listed.txt", b"never sent\n");
    let imds = Arc::new(Imds::new(&emulator.url, false, Policy::IMDS));
    let d = downloader(
        json!({"Listed": {"type": "s3", "roleName": ["emulator-role"], "buckets": [bucket]}}),
        s3_endpoints(&[&host_of(&emulator.url)]),
        imds,
        ProxyOptions::default(),
    );
    let err = fetch(&d, &url, None).unwrap_err().to_string();
    assert!(err.contains("Listed") && err.contains("roleName is a list, not text: it cannot sign"), "{err}");
    assert!(requests_to(&emulator, "/latest/meta-data/iam/security-credentials").is_empty());
    let gets = requests_to(&emulator, &format!("/{bucket}/listed.txt")).into_iter().filter(|r| r["method"] == "GET");
    assert_eq!(gets.count(), 0, "nothing unsigned is sent");
}

#[test]
fn a_named_block_wins_over_the_bucket_default_and_unknown_names_fall_back() {
    let emulator = Emulator::shared();
    let (bucket, url) = emulator.s3_object("named", b"named block\n");
    let d = downloader(
        json!({
            "Good": keys_block(SECRET_KEY, json!([])),
            "Bad": keys_block("wrong/secret", json!(bucket)),
        }),
        s3_endpoints(&[&host_of(&emulator.url)]),
        no_imds(),
        ProxyOptions::default(),
    );
    let (bytes, info) = fetch(&d, &url, Some("Good")).unwrap();
    assert_eq!((bytes.as_slice(), info.auth.as_deref()), (&b"named block\n"[..], Some("Good")));
    // By default the bucket's block is used, and an unknown name means the default.
    for name in [None, Some("Missing")] {
        let err = fetch(&d, &url, name).unwrap_err();
        assert!(err.to_string().starts_with("HTTP Error 403 :"), "{name:?}: {err}");
    }
}

/// What a local server saw: one request head per connection.
type Seen = common::Heads;

/// A one-request-per-connection HTTP server on loopback; `answer(n, head)` gives the raw
/// bytes for the `n`th request (0-based) and the connection is closed after them.
fn serve(answer: impl Fn(usize, &str) -> Vec<u8> + Send + 'static) -> (String, Seen) {
    let (address, seen) = common::serve_recorded("127.0.0.1", answer);
    (format!("http://{address}"), seen)
}

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn authorization(head: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("authorization").then(|| v.trim().to_string())
    })
}

const MD5_HELLO: &str = "5d41402abc4b2a76b9719d911017c592"; // md5("hello")
const MD5_OTHER: &str = "795f3202b17cb6bc3d4b771d8c6c9eaf"; // md5("other")

#[test]
fn an_etag_mismatch_is_retried_and_a_match_accepted() {
    // The server is an S3 endpoint (endpoints document): its ETags are checked.
    let (url, seen) = serve(|n, _| {
        let etag = if n == 0 { format!("\"{MD5_OTHER}\"") } else { format!("\"{MD5_HELLO}\"") };
        response("200 OK", &[("ETag", &etag)], b"hello")
    });
    let d = downloader(json!({}), s3_endpoints(&[&host_of(&url)]), no_imds(), ProxyOptions::default());
    let (bytes, info) = fetch(&d, &format!("{url}/bucket/key"), None).unwrap();
    assert_eq!(bytes, b"hello");
    assert_eq!(info.md5, MD5_HELLO);
    assert_eq!(seen.lock().unwrap().len(), 2, "the mismatch was retried");

    let (url, seen) = serve(|_, _| response("200 OK", &[("ETag", &format!("\"{MD5_OTHER}\""))], b"hello"));
    let d = downloader(json!({}), s3_endpoints(&[&host_of(&url)]), no_imds(), ProxyOptions::default());
    let err = fetch(&d, &format!("{url}/bucket/key"), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("Checksum mismatch: the ETag is {MD5_OTHER} but the MD5 of the body is {MD5_HELLO}")
    );
    assert_eq!(seen.lock().unwrap().len(), 5);

    // Not an S3 URL: the ETag means nothing.
    let (url, _) = serve(|_, _| response("200 OK", &[("ETag", &format!("\"{MD5_OTHER}\""))], b"hello"));
    let d = downloader(json!({}), Endpoints::builtin(), no_imds(), ProxyOptions::default());
    assert_eq!(fetch(&d, &format!("{url}/file"), None).unwrap().0, b"hello");
}

#[test]
fn basic_auth_goes_only_to_the_uris_it_names() {
    let expected = "Basic dXNlcjpwYXNz"; // user:pass
    let answer = move |_: usize, head: &str| {
        if authorization(head).as_deref() == Some(expected) {
            response("200 OK", &[], b"secret page")
        } else {
            response("401 Unauthorized", &[], b"who are you?\nsecond line")
        }
    };
    let (url, seen) = serve(answer);
    let (other_url, other_seen) = serve(answer);
    let d = downloader(
        json!({
            "ByHost": {"type": "basic", "username": "user", "password": "pass", "uris": host_of(&url)},
            "ByPrefix": {"type": "BASIC", "username": "user", "password": "pass", "uris": [format!("{other_url}/private")]},
            "Named": {"type": "basic", "username": "user", "password": "pass"},
        }),
        Endpoints::builtin(),
        no_imds(),
        ProxyOptions::default(),
    );
    // The reference's bare host[:port] form, as a default.
    let (bytes, info) = fetch(&d, &format!("{url}/any/file"), None).unwrap();
    assert_eq!((bytes.as_slice(), info.auth.as_deref()), (&b"secret page"[..], Some("ByHost")));
    // The documented URL-prefix form, on a path boundary.
    assert_eq!(fetch(&d, &format!("{other_url}/private/f"), None).unwrap().1.auth.as_deref(), Some("ByPrefix"));
    let err = fetch(&d, &format!("{other_url}/privately"), None).unwrap_err();
    assert_eq!(err.to_string(), "HTTP Error 401 : who are you? second line");
    assert_eq!(err.verdict(), Verdict::Terminal);
    // A named block with uris is not sent elsewhere; one without uris goes to the
    // source's host, over plain HTTP too, as the reference sends it (INIT-AUTH-05).
    assert!(fetch(&d, &format!("{other_url}/public"), Some("ByHost")).is_err());
    assert_eq!(fetch(&d, &format!("{other_url}/public"), Some("Named")).unwrap().1.auth.as_deref(), Some("Named"));
    let sent: Vec<Option<String>> = other_seen.lock().unwrap().iter().map(|h| authorization(h)).collect();
    assert_eq!(sent, [Some(expected.to_string()), None, None, Some(expected.to_string())]);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn s3_credentials_never_go_to_other_hosts() {
    let (url, seen) = serve(|_, _| response("200 OK", &[], b"public"));
    let d = downloader(
        json!({"Keys": keys_block(SECRET_KEY, json!(["bucket"]))}),
        Endpoints::builtin(),
        no_imds(),
        ProxyOptions::default(),
    );
    // Named and by bucket-looking path: neither applies to a host that is not S3.
    assert_eq!(fetch(&d, &format!("{url}/bucket/key"), Some("Keys")).unwrap().1.auth, None);
    assert_eq!(fetch(&d, &format!("{url}/bucket/key"), None).unwrap().1.auth, None);
    assert!(seen.lock().unwrap().iter().all(|h| authorization(h).is_none()));
}

#[test]
fn a_redirect_to_s3_from_a_source_without_credentials_stays_unsigned() {
    // SEC-04: the first hop had no credentials, so the S3 hop gains none, even for a
    // bucket a block lists; the private object is refused (403, not retried).
    let emulator = Emulator::shared();
    let (bucket, s3_url) = emulator.s3_object("moved.txt", b"moved here\n");
    let target = s3_url.clone();
    let (url, seen) = serve(move |_, _| response("307 Temporary Redirect", &[("Location", &target)], b""));
    let d = downloader(
        json!({"Keys": keys_block(SECRET_KEY, json!(bucket))}),
        s3_endpoints(&[&host_of(&emulator.url)]),
        no_imds(),
        ProxyOptions::default(),
    );
    let err = fetch(&d, &format!("{url}/somewhere"), None).unwrap_err();
    assert!(matches!(err, DownloadError::Http { status: 403, .. }), "{err}");
    assert!(authorization(&seen.lock().unwrap()[0]).is_none());
    let gets: Vec<Value> =
        requests_to(&emulator, &format!("/{bucket}/moved.txt")).into_iter().filter(|r| r["method"] == "GET").collect();
    assert_eq!(gets.len(), 1, "{gets:?}");
    assert!(gets[0]["auth_scheme"].is_null() && gets[0]["status"] == 403, "{:#}", gets[0]);
}

#[test]
fn a_body_cut_short_is_retried_and_the_file_holds_only_the_full_body() {
    let full: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let body = full.clone();
    let (url, seen) = serve(move |n, _| {
        let mut answer = response("200 OK", &[], &body);
        if n == 0 {
            // Headers promise 100000 bytes; the connection closes after a third.
            let head_len = answer.len() - body.len();
            answer.truncate(head_len + 33_333);
        }
        answer
    });
    let d = downloader(json!({}), Endpoints::builtin(), no_imds(), ProxyOptions::default());
    let (bytes, info) = fetch(&d, &format!("{url}/big.bin"), None).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(info.bytes, full.len() as u64);
    assert!(bytes == full, "the file holds {} bytes, not exactly the full body", bytes.len());
}

#[test]
fn command_line_proxies_apply_to_downloads() {
    let proxy = RecordingProxy::start();
    let (url, seen) = serve(|_, _| response("200 OK", &[], b"via proxy"));
    let proxies = ProxyOptions { http_proxy: Some(proxy.url.clone()), https_proxy: None };
    let d = downloader(json!({}), Endpoints::builtin(), no_imds(), proxies);
    assert_eq!(fetch(&d, &format!("{url}/f"), None).unwrap().0, b"via proxy");
    assert_eq!(proxy.targets(), [host_of(&url)]);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn a_wrong_region_answer_is_signed_again_for_the_bucket_region() {
    // S3 names the bucket's region when a URL without one was signed for us-east-1.
    let (url, seen) = serve(|_, head| {
        let auth = authorization(head).unwrap_or_default();
        if auth.contains("/eu-west-1/s3/aws4_request") {
            response("200 OK", &[], b"from eu-west-1")
        } else {
            let body = b"<?xml version=\"1.0\"?>\n<Error><Code>AuthorizationHeaderMalformed</Code><Region>eu-west-1</Region></Error>";
            response("400 Bad Request", &[("Content-Type", "application/xml")], body)
        }
    });
    let d = downloader(
        json!({"Keys": keys_block(SECRET_KEY, json!("bucket"))}),
        s3_endpoints(&[&host_of(&url)]),
        no_imds(),
        ProxyOptions::default(),
    );
    let (bytes, _) = fetch(&d, &format!("{url}/bucket/key"), None).unwrap();
    assert_eq!(bytes, b"from eu-west-1");
    let scopes: Vec<bool> =
        seen.lock().unwrap().iter().map(|h| authorization(h).unwrap().contains("/us-east-1/s3/")).collect();
    assert_eq!(scopes, [true, false]);
}
