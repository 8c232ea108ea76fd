//! cfn-init's `sources` section through the cfn-init link (INIT-SRC-01..07, SEC-01):
//! archives of every format from local files, S3 (default authentication) and a
//! GitHub-style URL served through a local proxy, and the refusals of unsafe archives.
//! Expected log lines and messages are the reference's (tests/golden/cfn-init-sources).

mod common;
use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex};

const MTIME: u64 = 1_600_000_000;

/// A sandbox with `root/` (targets) and `outside/` (must stay empty).
struct Host {
    sandbox: Sandbox,
}

impl Host {
    fn new() -> Host {
        let sandbox = Sandbox::new();
        std::fs::create_dir(sandbox.path("root")).unwrap();
        std::fs::create_dir(sandbox.path("outside")).unwrap();
        Host { sandbox }
    }

    fn p(&self, rel: &str) -> String {
        self.sandbox.path(rel).display().to_string()
    }

    fn write(&self, rel: &str, bytes: &[u8]) -> String {
        std::fs::write(self.p(rel), bytes).unwrap();
        self.p(rel)
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.p(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.p(rel)).is_ok()
    }

    fn mode(&self, rel: &str) -> u32 {
        std::fs::symlink_metadata(self.p(rel)).unwrap().permissions().mode() & 0o7777
    }

    fn metadata_file(&self, metadata: &Value) -> String {
        let file = self.p(&format!("{}.json", unique("metadata")));
        std::fs::write(&file, metadata.to_string()).unwrap();
        file
    }

    /// `cfn-init -v` of a config with this `sources` section.
    fn sources(&self, sources: Value) -> Run {
        let file = self.metadata_file(&json!({"AWS::CloudFormation::Init": {"config": {"sources": sources}}}));
        self.sandbox.cmd("cfn-init").arg("-v").arg(file).run()
    }

    fn log(&self) -> String {
        self.sandbox.log("cfn-init.log")
    }

    fn assert_outside_empty(&self) {
        let found: Vec<_> = std::fs::read_dir(self.p("outside")).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(found.is_empty(), "written outside the target: {found:?}");
    }
}

enum E<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str, u32),
    Sym(&'a str, &'a str),
    Hard(&'a str, &'a str),
    Fifo(&'a str),
    Block(&'a str),
}

/// A tar written header by header; names and link targets are stored as given.
fn tar_bytes(entries: &[E<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        let (name, data, mode, etype, link): (&str, &[u8], u32, tar::EntryType, &str) = match e {
            E::File(n, d, m) => (n, d, *m, tar::EntryType::Regular, ""),
            E::Dir(n, m) => (n, b"", *m, tar::EntryType::Directory, ""),
            E::Sym(n, l) => (n, b"", 0o777, tar::EntryType::Symlink, l),
            E::Hard(n, l) => (n, b"", 0o644, tar::EntryType::Link, l),
            E::Fifo(n) => (n, b"", 0o644, tar::EntryType::Fifo, ""),
            E::Block(n) => (n, b"", 0o644, tar::EntryType::Block, ""),
        };
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        h.set_mode(mode);
        h.set_mtime(MTIME);
        h.set_uid(4242);
        h.set_gid(4242);
        h.set_entry_type(etype);
        h.set_size(data.len() as u64);
        h.set_cksum();
        builder.append(&h, data).unwrap();
    }
    builder.into_inner().unwrap()
}

fn app_tar() -> Vec<u8> {
    tar_bytes(&[
        E::Dir("app/", 0o750),
        E::File("app/run.sh", b"#!/bin/sh\necho hi\n", 0o755),
        E::File("app/conf/settings.ini", b"a=1\n", 0o640),
        E::Sym("app/current", "conf"),
        E::Hard("app/run-again.sh", "app/run.sh"),
        E::File("app/suid", b"x", 0o4755),
    ])
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn bzip(data: &[u8]) -> Vec<u8> {
    let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut enc = lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6)).unwrap();
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

fn app_zip() -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = |mode| {
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(mode)
    };
    w.add_directory("app/", opts(0o750)).unwrap();
    w.start_file("app/run.sh", opts(0o755)).unwrap();
    w.write_all(b"#!/bin/sh\necho hi\n").unwrap();
    w.start_file("app/conf/settings.ini", opts(0o640)).unwrap();
    w.write_all(b"a=1\n").unwrap();
    w.finish().unwrap().into_inner()
}

fn zip_with(name: &str) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
    w.write_all(b"evil").unwrap();
    w.finish().unwrap().into_inner()
}

fn assert_app(host: &Host, target: &str, links: bool) {
    assert_eq!(host.read(&format!("{target}/app/run.sh")), "#!/bin/sh\necho hi\n");
    assert_eq!(host.mode(&format!("{target}/app/run.sh")), 0o755);
    assert_eq!(host.read(&format!("{target}/app/conf/settings.ini")), "a=1\n");
    assert_eq!(host.mode(&format!("{target}/app/conf/settings.ini")), 0o640);
    assert_eq!(host.mode(&format!("{target}/app")), 0o750);
    if links {
        assert_eq!(std::fs::read_link(host.p(&format!("{target}/app/current"))).unwrap(), Path::new("conf"));
        let a = std::fs::metadata(host.p(&format!("{target}/app/run.sh"))).unwrap();
        let b = std::fs::metadata(host.p(&format!("{target}/app/run-again.sh"))).unwrap();
        assert_eq!(a.ino(), b.ino());
        assert_eq!(a.mtime() as u64, MTIME);
        // setuid dropped; archive owner 4242 not applied (WEAK-owner fixed).
        assert_eq!(host.mode(&format!("{target}/app/suid")), 0o755);
        // SAFETY: getuid cannot fail.
        assert_eq!(a.uid(), unsafe { libc::getuid() });
    }
}

#[test]
fn local_archives_of_every_format_are_detected_by_content_and_extracted() {
    let host = Host::new();
    let tar = app_tar();
    // Every file is called `.bin`: the format comes from the content.
    let formats: [(&str, Vec<u8>, bool); 6] = [
        ("tar", tar.clone(), true),
        ("tgz", gzip(&tar), true),
        ("tbz2", bzip(&tar), true),
        ("txz", xz(&tar), true),
        ("tzst", zstd(&tar), true),
        ("zip", app_zip(), false),
    ];
    let mut sources = serde_json::Map::new();
    for (kind, bytes, _) in &formats {
        let loc = host.write(&format!("{kind}.bin"), bytes);
        sources.insert(host.p(&format!("root/{kind}")), Value::String(loc));
    }
    // An existing file is overwritten, one not in the archive is kept.
    std::fs::create_dir_all(host.p("root/tgz/app")).unwrap();
    std::fs::write(host.p("root/tgz/app/run.sh"), "old").unwrap();
    std::fs::write(host.p("root/tgz/keep.txt"), "mine").unwrap();
    host.sources(Value::Object(sources)).code(0).stderr_is("");
    for (kind, _, links) in &formats {
        assert_app(&host, &format!("root/{kind}"), *links);
    }
    assert_eq!(host.read("root/tgz/keep.txt"), "mine");
    let log = host.log();
    let tgz = host.p("tgz.bin");
    let target = host.p("root/tgz");
    for line in [
        format!("[DEBUG] Treating {tgz} as a tarball\n"),
        format!("[DEBUG] Checking to ensure that all archive members fall under path {target}\n"),
        format!("[DEBUG] Expanding {tgz} into {target}\n"),
        format!("[DEBUG] Treating {} as a zip archive\n", host.p("zip.bin")),
    ] {
        assert!(log.contains(&line), "missing {line:?} in\n{log}");
    }
}

#[test]
fn a_relative_target_is_relative_to_the_working_directory() {
    let host = Host::new();
    let loc = host.write("app.tgz", &gzip(&app_tar()));
    let file = host.metadata_file(&json!({"AWS::CloudFormation::Init": {"config": {"sources": {"rel/dest": loc}}}}));
    let mut cmd = host.sandbox.cmd("cfn-init").arg("-v").arg(file);
    cmd.cmd.current_dir(host.p("root"));
    cmd.run().code(0).stderr_is("");
    assert_app(&host, "root/rel/dest", true);
}

#[test]
fn missing_unsupported_and_ftp_locations_fail_with_the_reference_messages() {
    let host = Host::new();
    let missing = host.p("nope.tgz");
    host.sources(json!({host.p("root/d"): missing}))
        .code(1)
        .stderr_is(&format!("Error occurred during build: {missing} does not exist\n"));
    let dir = host.p("outside");
    host.sources(json!({host.p("root/d"): dir}))
        .code(1)
        .stderr_is(&format!("Error occurred during build: {dir} does not exist\n"));
    let text = host.write("text.tgz", b"just text\n");
    host.sources(json!({host.p("root/d"): text}))
        .code(1)
        .stderr_is(&format!("Error occurred during build: Unsupported source file (not zip or tarball): {text}\n"));
    let run = host.sources(json!({host.p("root/d"): "ftp://127.0.0.1:1/a.tgz"}));
    run.code(1).stderr_has(
        "Error occurred during build: Failed to retrieve ftp://127.0.0.1:1/a.tgz: ftp:// URLs are not supported",
    );
    assert!(!host.exists("root/d"));
}

/// An entry that is not a location stops the section at its turn: the targets before it
/// (in name order) are extracted, the ones after it are not (INIT-SRC-01, INIT-CS-07).
#[test]
fn a_target_without_a_location_fails_at_its_turn_after_the_targets_before_it() {
    let host = Host::new();
    let loc = host.write("app.tgz", &gzip(&app_tar()));
    let bad = host.p("root/b");
    host.sources(json!({host.p("root/c"): &loc, &bad: 5, host.p("root/a"): &loc})).code(1).stderr_is(&format!(
        "Error occurred during build: config config, sources {bad}: must be a string, not a number\n"
    ));
    assert_app(&host, "root/a", true);
    assert!(!host.exists("root/b") && !host.exists("root/c"));
}

/// Runs an archive that must be refused: exit 1, the error names the archive and the
/// member, nothing is written outside, and (`before`) nothing at all was extracted.
fn refused(host: &Host, name: &str, bytes: &[u8], expected: &str, before: bool) {
    let loc = host.write(name, bytes);
    let target = host.p("root/dest");
    let run = host.sources(json!({&target: loc}));
    let expected = expected.replace("{T}", &target);
    let message = if expected.contains(" is not a sub-path of ") {
        format!("{expected}: refusing to extract {loc}")
    } else {
        format!("Refusing to extract {loc}: {expected}")
    };
    run.code(1).stderr_is(&format!("Error occurred during build: {message}\n"));
    host.assert_outside_empty();
    if before {
        assert!(!host.exists("root/dest/good.txt"), "{run}");
    }
    assert!(!host.exists("dest2"));
}

#[test]
fn unsafe_archives_are_refused_and_nothing_is_written_outside() {
    let host = Host::new();
    let cases: Vec<(Vec<E<'_>>, &str)> = vec![
        (vec![E::File("../outside/x", b"evil", 0o644)], "../outside/x is not a sub-path of {T}"),
        // BUG-TRAVERSAL: the reference's character-prefix check let this one through.
        (vec![E::File("../dest2/x", b"evil", 0o644)], "../dest2/x is not a sub-path of {T}"),
        (vec![E::File("a/../../outside/x", b"evil", 0o644)], "a/../../outside/x is not a sub-path of {T}"),
        (vec![E::Sym("l", "/etc")], "l is a symbolic link to the absolute path /etc"),
        (vec![E::Sym("l", "../outside")], "l is a symbolic link to ../outside, outside {T}"),
        // BUG-SYMLINK: a link out, then a file through it.
        (
            vec![E::Sym("l", "../../outside"), E::File("l/x", b"evil", 0o644)],
            "l is a symbolic link to ../../outside, outside {T}",
        ),
        (vec![E::Hard("h", "../outside/x")], "h is a hard link to ../outside/x, outside {T}"),
        (vec![E::Fifo("pipe")], "pipe is a FIFO"),
        (vec![E::Block("disk")], "disk is a block device"),
    ];
    for (entries, expected) in cases {
        let mut all = vec![E::File("good.txt", b"ok", 0o644)];
        all.extend(entries);
        refused(&host, "evil.tar", &gzip(&tar_bytes(&all)), expected, true);
    }
    let absolute = format!("{}/abs.txt", host.p("outside"));
    refused(
        &host,
        "abs.tar",
        &tar_bytes(&[E::File("good.txt", b"ok", 0o644), E::File(&absolute, b"evil", 0o644)]),
        &format!("{absolute} is not a sub-path of {{T}}"),
        true,
    );
    refused(&host, "evil.zip", &zip_with("../outside/z"), "../outside/z is not a sub-path of {T}", true);
    // A link that only leads out on disk (`q -> .`, `p -> q/..`) is refused while extracting.
    refused(
        &host,
        "chain.tar",
        &tar_bytes(&[E::Sym("q", "."), E::Sym("p", "q/.."), E::File("p/outside/x", b"evil", 0o644)]),
        "p is a symbolic link to q/.., outside {T}",
        false,
    );
    // A link already in the target that leads out is never written through.
    std::os::unix::fs::symlink(host.p("outside"), host.p("root/dest/pre")).unwrap();
    refused(
        &host,
        "pre.tar",
        &tar_bytes(&[E::File("pre/x", b"evil", 0o644)]),
        "pre/x would be written through a symbolic link that leads outside {T}",
        false,
    );
}

#[test]
fn sources_from_s3_use_the_bucket_default_authentication() {
    let emulator = Emulator::shared();
    let host = Host::new();
    let (bucket, url) = emulator.s3_object("releases/app.tar.gz", &gzip(&app_tar()));
    let metadata = json!({
        "AWS::CloudFormation::Authentication": {
            "keys": {"type": "S3", "accessKeyId": ACCESS_KEY, "secretKey": SECRET_KEY, "buckets": [bucket]}
        },
        "AWS::CloudFormation::Init": {"config": {"sources": {host.p("root/s3"): url}}}
    });
    let endpoints = host.p("endpoints.json");
    std::fs::write(&endpoints, emulator.s3_endpoints_document()).unwrap();
    let file = host.metadata_file(&metadata);
    let run = host.sandbox.cmd("cfn-init").arg("-v").arg(&file).env("ENDPOINTS_OVERRIDE", &endpoints).run();
    run.code(0).stderr_is("");
    assert_app(&host, "root/s3", true);
    let gets: Vec<Value> = emulator
        .get_json("/_emu/requests?kind=other")
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "GET" && r["path"].as_str().is_some_and(|p| p.contains(&bucket)))
        .cloned()
        .collect();
    assert!(
        !gets.is_empty() && gets.iter().all(|r| r["auth_scheme"] == "AWS4-HMAC-SHA256" && r["status"] == 200),
        "{gets:#?}"
    );

    // Without the authentication block the bucket refuses the anonymous request.
    let anonymous = json!({"AWS::CloudFormation::Init": {"config": {"sources": {host.p("root/anon"): url}}}});
    let file = host.metadata_file(&anonymous);
    let run = host.sandbox.cmd("cfn-init").arg("-v").arg(&file).env("ENDPOINTS_OVERRIDE", &endpoints).run();
    run.code(1);
    assert!(
        run.stderr.starts_with(&format!("Error occurred during build: Failed to retrieve {url}: HTTP Error 403")),
        "{run}"
    );
}

/// Reads a request head: the request target and the Host header.
fn read_head(reader: &mut BufReader<std::net::TcpStream>) -> Option<(String, String, String)> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut host = String::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("host")
        {
            host = value.trim().to_string();
        }
    }
    let mut parts = line.split_whitespace();
    Some((parts.next()?.to_string(), parts.next()?.to_string(), host))
}

/// An HTTP proxy that answers every request itself (after a CONNECT, on the tunnel):
/// GitHub-style archive URLs with the archive, anything else with 403. Records the
/// URLs asked for.
fn github_proxy(tarball: Vec<u8>, zipball: Vec<u8>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let mut reader = BufReader::new(client.try_clone().unwrap());
            let mut client = client;
            let Some((mut method, mut target, mut host)) = read_head(&mut reader) else { continue };
            if method == "CONNECT" {
                let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                let Some(head) = read_head(&mut reader) else { continue };
                (method, target, host) = head;
            }
            let full = if target.starts_with('/') { format!("http://{host}{target}") } else { target };
            log.lock().unwrap().push(format!("{method} {full}"));
            let body = if full.contains("/tarball/") {
                Some(&tarball)
            } else if full.contains("/zipball/") {
                Some(&zipball)
            } else {
                None
            };
            let head = match body {
                Some(b) => format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", b.len()),
                None => "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
            };
            let _ = client.write_all(head.as_bytes());
            if let Some(b) = body {
                let _ = client.write_all(b);
            }
        }
    });
    (url, seen)
}

#[test]
fn github_archives_lose_their_top_directory_when_fetched_from_github_com() {
    let host = Host::new();
    let tarball = gzip(&tar_bytes(&[
        E::Dir("owner-repo-abc123/", 0o775),
        E::File("owner-repo-abc123/README", b"readme\n", 0o644),
        E::File("owner-repo-abc123/src/main.c", b"int main(){}\n", 0o644),
    ]));
    let zipball = {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        w.add_directory("owner-repo-abc123/", zip::write::SimpleFileOptions::default()).unwrap();
        w.start_file("owner-repo-abc123/a.txt", zip::write::SimpleFileOptions::default()).unwrap();
        w.write_all(b"a\n").unwrap();
        w.finish().unwrap().into_inner()
    };
    let (proxy, seen) = github_proxy(tarball, zipball);
    // The reference keys on the host name github.com: the proxy stands in for it.
    let tar_url = "http://github.com/owner/repo/tarball/main";
    let zip_url = "http://GitHub.com/owner/repo/zipball/v1";
    let not_github = "http://example.com/owner/repo/tarball/main";
    let file = host.metadata_file(&json!({"AWS::CloudFormation::Init": {"config": {"sources": {
        host.p("root/gh"): tar_url,
        host.p("root/ghz"): zip_url,
        host.p("root/plain"): not_github,
    }}}}));
    let run = host.sandbox.cmd("cfn-init").arg("-v").arg(&file).env("HTTP_PROXY", &proxy).run();
    run.code(0).stderr_is("");
    assert_eq!(host.read("root/gh/README"), "readme\n");
    assert_eq!(host.read("root/gh/src/main.c"), "int main(){}\n");
    assert!(!host.exists("root/gh/owner-repo-abc123"));
    assert_eq!(host.read("root/ghz/a.txt"), "a\n");
    assert_eq!(host.read("root/plain/owner-repo-abc123/README"), "readme\n");
    let log = host.log();
    assert!(log.contains("[DEBUG] Attempting to magically strip GitHub parent directory from archive\n"), "{log}");
    assert_eq!(log.matches("Attempting to magically strip").count(), 2, "{log}");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|t| t.ends_with("github.com/owner/repo/tarball/main")), "{seen:?}");
}

#[test]
fn download_failures_name_the_url() {
    let host = Host::new();
    let (proxy, _) = github_proxy(Vec::new(), Vec::new());
    let url = "http://example.com/denied.tgz";
    let file =
        host.metadata_file(&json!({"AWS::CloudFormation::Init": {"config": {"sources": {host.p("root/d"): url}}}}));
    let run = host.sandbox.cmd("cfn-init").arg("-v").arg(&file).env("HTTP_PROXY", &proxy).run();
    run.code(1);
    assert!(
        run.stderr.starts_with(&format!("Error occurred during build: Failed to retrieve {url}: HTTP Error 403")),
        "{run}"
    );
    assert!(!host.exists("root/d"));
}

/// A loopback HTTP server that answers every request with `body`.
fn serve(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let mut reader = BufReader::new(client.try_clone().unwrap());
            let mut client = client;
            if read_head(&mut reader).is_none() {
                continue;
            }
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = client.write_all(head.as_bytes());
            let _ = client.write_all(&body);
        }
    });
    url
}

/// Issue 13, item 6 (INIT-SRC-03): a downloaded gzip whose GNU long-name header declares
/// 4 GiB is refused from that header alone (the tar crate would read it whole into
/// memory), with the reference's exit code, the URL redacted, and nothing extracted.
#[test]
fn an_archive_past_a_limit_is_refused_with_the_limit_named() {
    let host = Host::new();
    let mut long_name = tar::Header::new_gnu();
    long_name.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
    long_name.set_mode(0o644);
    long_name.set_entry_type(tar::EntryType::GNULongName);
    long_name.set_size(4 << 30);
    long_name.set_cksum();
    let mut tar = tar_bytes(&[E::File("good.txt", b"ok", 0o644)]);
    tar.truncate(tar.len() - 1024);
    tar.extend_from_slice(long_name.as_bytes());
    tar.extend_from_slice(&[b'a'; 64 * 1024]);
    let url = format!("{}/app.tgz?X-Amz-Signature=0123secret", serve(gzip(&tar)));
    let run = host.sources(json!({host.p("root/d"): url}));
    let shown = url.replace("0123secret", "REDACTED");
    let message = format!(
        "Refusing to extract {shown}: a GNU long name header of 4294967296 bytes is larger than the limit of 1 MiB"
    );
    run.code(1).stderr_is(&format!("Error occurred during build: {message}\n"));
    assert!(host.log().contains(&message), "{}", host.log());
    assert!(!host.exists("root/d"), "nothing extracted");
    host.assert_outside_empty();
}

/// Issue 13, item 4 (INIT-SRC-03): links that stay inside the target one by one but lead
/// out together, in downloaded tarballs. A link the archive made is not replaced by
/// another (the issue's `d -> e`, `l -> d/d/d/d/../../../..`, `d -> .`: refused before
/// anything is written); a link that leads out only once a later link exists is found
/// at the end and removed, and nothing is written through it on the way.
#[test]
fn links_that_lead_outside_together_are_refused() {
    let host = Host::new();
    let target = host.p("root/dest");
    let cases: [(&str, Vec<E<'_>>, String); 3] = [
        (
            "chain.tgz",
            vec![
                E::Dir("e/d/d/d/", 0o755),
                E::Sym("d", "e"),
                E::Sym("l", "d/d/d/d/../../../.."),
                E::Sym("d", "."),
                E::File("l/outside/x", b"evil", 0o644),
            ],
            "d would replace the symbolic link d extracted before it".into(),
        ),
        (
            "late.tgz",
            vec![E::Dir("b/", 0o755), E::Sym("l", "a/a/b/../../.."), E::Sym("a", "."), E::File("f", b"f", 0o644)],
            format!(
                "l is a symbolic link to a/a/b/../../.., outside {target} once the archive is extracted (the link was removed)"
            ),
        ),
        (
            "through.tgz",
            vec![
                E::Dir("b/", 0o755),
                E::Sym("l", "a/a/b/../../.."),
                E::Sym("a", "."),
                E::File("l/outside/x", b"evil", 0o644),
            ],
            format!("l/outside/x would be written through a symbolic link that leads outside {target}"),
        ),
    ];
    for (name, entries, expected) in cases {
        let url = format!("{}/{name}", serve(gzip(&tar_bytes(&entries))));
        let run = host.sources(json!({&target: url}));
        let message = format!("Refusing to extract {url}: {expected}");
        run.code(1).stderr_is(&format!("Error occurred during build: {message}\n"));
        assert!(host.log().contains(&message), "{}", host.log());
        host.assert_outside_empty();
        assert!(!host.exists("root/dest/l"), "{name}: the link is gone");
        if name == "chain.tgz" {
            assert!(!host.exists("root/dest"), "nothing extracted");
        } else {
            assert_eq!(std::fs::read_link(host.p("root/dest/a")).unwrap(), Path::new("."));
        }
        let _ = std::fs::remove_dir_all(host.p("root/dest"));
    }
}
