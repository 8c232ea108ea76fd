//! The process floor (issue 16): for workloads 1, 2b and 3a, a minimal program that
//! does only the work the workload needs, run as one more implementation, interleaved
//! with the tools and measured the same way (a whole process, spawn to reap).
//!
//! - `init DIR (NAME MODE CONTENT)... -- COMMAND...` (workload 1): each file through a
//!   temporary file beside it (O_EXCL, 0600), fchmod, rename; one `syncfs`; then each
//!   command by `/bin/sh -c`, its output captured, in order.
//! - `files DIR N` (workload 2b): N files written the same way, one `syncfs`.
//! - `http ADDR REQUEST` (workload 3a): one connection, the request as given, the
//!   response body (by its Content-Length) to stdout. The request is signed by the
//!   benchmark before the run (SigV4 is a few microseconds of SHA-256, below this
//!   workload's noise).
//!
//! It is compiled with `rustc -O`, std only, for the target the shipped binary is built
//! for (static musl when installed), so the ratio counts the work the tool does beyond
//! the floor, not a difference in how the two are linked.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

const PROGRAM: &str = r#"
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
unsafe extern "C" { fn syncfs(fd: i32) -> i32; }

fn write_file(path: &Path, mode: u32, content: &[u8], n: usize) {
    let name = path.file_name().unwrap().to_str().unwrap();
    let temp = path.with_file_name(format!(".{name}.floor-{}-{n}", std::process::id()));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp).unwrap();
    file.write_all(content).unwrap();
    file.set_permissions(std::fs::Permissions::from_mode(mode)).unwrap();
    drop(file);
    std::fs::rename(&temp, path).unwrap();
}

fn sync(dir: &Path) {
    let handle = std::fs::File::open(dir).unwrap();
    assert_eq!(unsafe { syncfs(handle.as_raw_fd()) }, 0);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args[0].as_str() {
        "init" => {
            let dir = Path::new(&args[1]);
            std::fs::create_dir_all(dir).unwrap();
            let split = args.iter().position(|a| a == "--").unwrap();
            for (n, file) in args[2..split].chunks(3).enumerate() {
                let mode = u32::from_str_radix(&file[1], 8).unwrap();
                write_file(&dir.join(&file[0]), mode, file[2].as_bytes(), n);
            }
            sync(dir);
            for command in &args[split + 1..] {
                let output = std::process::Command::new("/bin/sh").arg("-c").arg(command).output().unwrap();
                assert!(output.status.success());
            }
        }
        "files" => {
            let dir = Path::new(&args[1]);
            std::fs::create_dir_all(dir).unwrap();
            let count: usize = args[2].parse().unwrap();
            for i in 0..count {
                write_file(&dir.join(format!("f{i:04}.txt")), 0o644, format!(BODY, i).as_bytes(), i);
            }
            sync(dir);
        }
        "http" => {
            // The answer ends where its Content-Length says (the server may keep the
            // connection open a while, as it does for the tools).
            let mut stream = std::net::TcpStream::connect(&args[1]).unwrap();
            stream.write_all(args[2].as_bytes()).unwrap();
            let (mut response, mut chunk) = (Vec::new(), [0u8; 16384]);
            loop {
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0, "the connection closed early");
                response.extend_from_slice(&chunk[..n]);
                let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
                let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
                let length: usize = head.split("content-length:").nth(1).unwrap().trim().split('\r').next().unwrap().trim().parse().unwrap();
                if response.len() >= end + 4 + length {
                    assert!(head.starts_with("http/1.1 200"), "{head}");
                    std::io::stdout().write_all(&response[end + 4..end + 4 + length]).unwrap();
                    break;
                }
            }
        }
        other => panic!("unknown mode {other}"),
    }
}
"#;

/// Compiles the floor into `scratch` for `target` (the host when `None`), with `body`
/// as the content pattern of workload 2b's files (`{}` = the file's index).
pub fn compile(scratch: &Path, body: &str, target: Option<&str>) -> Result<PathBuf> {
    let source = scratch.join("process-floor.rs");
    let binary = scratch.join("process-floor");
    std::fs::write(&source, PROGRAM.replace("BODY", &format!("{body:?}")))?;
    let mut rustc = std::process::Command::new("rustc");
    rustc.args(["-O", "--edition", "2024", "-C", "panic=abort", "-o"]).arg(&binary).arg(&source);
    if let Some(target) = target {
        rustc.args(["--target", target]);
    }
    if !rustc.status().context("run rustc")?.success() {
        bail!("compiling the process floor failed");
    }
    Ok(binary)
}

/// The arguments for workload 1: its files as they are written (Mustache already
/// rendered, JSON already serialised) and its commands.
pub fn init_args(dir: &Path, files: &[(&str, &str, &str)], commands: &[&str]) -> Vec<String> {
    let mut args = vec!["init".to_string(), dir.display().to_string()];
    for (name, mode, content) in files {
        args.extend([name.to_string(), mode.to_string(), content.to_string()]);
    }
    args.push("--".into());
    args.extend(commands.iter().map(|c| c.to_string()));
    args
}

/// The arguments for workload 3a: the DescribeStackResource request the reference
/// sends (GET, query parameters, JSON answer), signed with `keys` now.
pub fn describe_args(url: &str, stack: &str, resource: &str, keys: (&str, &str)) -> Result<Vec<String>> {
    use cfn_aws::sigv4;
    let host = url.strip_prefix("http://").context("the emulator's URL is not http://")?.trim_end_matches('/');
    let query: Vec<(String, String)> = [
        ("Action", "DescribeStackResource"),
        ("LogicalResourceId", resource),
        ("StackName", stack),
        ("ContentType", "JSON"),
        ("Version", "2010-05-15"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let headers = [("Accept", "application/json".to_string())];
    let request = sigv4::Request { method: "GET", host, path: "/", query: &query, headers: &headers, payload: b"" };
    let credentials = cfn_aws::keys::Credentials::new(keys.0, keys.1, None);
    let scope = sigv4::Scope { region: "us-east-1", service: "cloudformation" };
    let signed = sigv4::try_sign(&request, &credentials, &scope, chrono::Utc::now())?;
    let mut raw =
        format!("GET /?{} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n", sigv4::canonical_query(&query));
    for (name, value) in signed {
        raw.push_str(&format!("{name}: {value}\r\n"));
    }
    raw.push_str("\r\n");
    Ok(vec!["http".into(), host.to_string(), raw])
}
