//! `cfn-bootstrap plan` (issue 14, item 3): what cfn-init would change, changing nothing.
//!
//! In a sandbox (files, commands, inputs, errors, exit codes), against the emulator (a
//! stack resource's metadata; content got with credentials, or of a file that is not
//! world-readable, never shown: issue 22, item 4; nor of a file under a directory closed
//! to other users, and no link followed that cfn-init would refuse: issue 31, F7), and
//! as root in
//! the Debian test root (packages, groups, users, services; the root's upper layer is
//! snapshotted around each plan to show that nothing changed; after a real cfn-init run
//! the plan says nothing would change).

mod common;

use common::debian_root::{Overlay, rootfs};
use common::{ACCESS_KEY, Emulator, Run, SECRET_KEY, Sandbox, binary, instance_template, unique};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A sandbox every user may search, as `/etc` or `/srv` are. A temporary directory is
/// 0700, and `plan` withholds the content of whatever is below a directory that not every
/// user may search (issue 31, F7).
fn open_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    set_mode(sandbox.dir.path(), 0o755);
    sandbox
}

fn set_mode(path: impl AsRef<Path>, mode: u32) {
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

fn plan(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.cmd_via(binary(), "cfn-bootstrap plan").arg("plan").args(args).run()
}

/// The digest `plan` shows of content it withholds: the first 12 hex digits of SHA-256.
fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)[..6].iter().map(|b| format!("{b:02x}")).collect()
}

fn metadata_file(sandbox: &Sandbox, init: Value) -> String {
    let path = sandbox.path(&format!("{}.json", unique("metadata")));
    std::fs::write(&path, json!({"AWS::CloudFormation::Init": init}).to_string()).unwrap();
    path.display().to_string()
}

/// What a plan must leave as it was: one entry of a directory tree.
#[derive(Debug, PartialEq)]
struct Entry {
    kind: String,
    mode: u32,
    owner: (u32, u32),
    modified: (i64, i64),
    /// A file's content, a link's target.
    content: Vec<u8>,
}

/// Every entry under `dir`, by path.
fn snapshot(dir: &Path) -> BTreeMap<String, Entry> {
    let mut found = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let content = if meta.is_file() {
            std::fs::read(&path).unwrap()
        } else if meta.file_type().is_symlink() {
            std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes()
        } else {
            Vec::new()
        };
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
        let entry = Entry {
            kind: format!("{:?}", meta.file_type()),
            mode: meta.mode(),
            owner: (meta.uid(), meta.gid()),
            modified: (meta.mtime(), meta.mtime_nsec()),
            content,
        };
        found.insert(path.strip_prefix(dir).unwrap().display().to_string(), entry);
    }
    found
}

fn assert_unchanged(before: &BTreeMap<String, Entry>, dir: &Path) {
    let after = snapshot(dir);
    let added: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let removed: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    assert!(added.is_empty() && removed.is_empty(), "plan added {added:?} and removed {removed:?}");
    for (path, was) in before {
        assert_eq!(was, &after[path], "plan changed {path}");
    }
}

// ---------------------------------------------------------------------------
// Files and commands in a sandbox
// ---------------------------------------------------------------------------

#[test]
fn files_show_a_unified_diff_and_nothing_is_written() {
    let sandbox = open_sandbox();
    let root = sandbox.path("root");
    std::fs::create_dir(&root).unwrap();
    let p = |name: &str| root.join(name).display().to_string();
    std::fs::write(p("app.conf"), "port=80\nname=web\n").unwrap();
    std::fs::write(p("same.txt"), "unchanged\n").unwrap();
    set_mode(p("same.txt"), 0o640);
    std::fs::write(p("tool.bin"), b"\x7fELF\0\x01").unwrap();
    let file = metadata_file(
        &sandbox,
        json!({"config": {
            "files": {
                p("app.conf"): {"content": "port=8080\nname=web\n"},
                p("same.txt"): {"content": "unchanged\n", "mode": "000640"},
                p("new/dir/created.txt"): {"content": "hello {{who}}\n", "context": {"who": "world"}, "mode": "000644"},
                p("tool.bin"): {"content": "f0VMRgACAw==", "encoding": "base64"},
                p("link"): {"content": p("same.txt"), "mode": "120777"}
            },
            "commands": {
                "01-always": {"command": format!("echo ran >> {}", p("ran.txt"))},
                "02-gated": {"command": ["touch", p("gated")], "test": format!("test ! -e {}", p("same.txt"))}
            }
        }}),
    );
    let before = snapshot(sandbox.dir.path());
    let run = plan(&sandbox, &[&file]);
    run.code(2).stderr_is("");
    let out = &run.stdout;
    // INIT-FILES-10: the content as the build would write it, against what is there.
    let diff = format!(
        "~ files: change {0}: content\n      --- {0}\n      +++ {0}\n      @@ -1,2 +1,2 @@\n      -port=80\n      +port=8080\n       name=web\n",
        p("app.conf")
    );
    assert!(out.contains(&diff), "{run}");
    // A Mustache template rendered (INIT-FILES-06), a new file from /dev/null.
    let created = format!(
        "~ files: create {0} (mode 0644)\n      --- /dev/null\n      +++ {0}\n      @@ -0,0 +1 @@\n      +hello world\n",
        p("new/dir/created.txt")
    );
    assert!(out.contains(&created), "{run}");
    assert!(
        out.contains(&format!(
            "~ files: change {}: content\n      (binary or large content: 6 bytes -> 7 bytes)\n",
            p("tool.bin")
        )),
        "{run}"
    );
    assert!(out.contains(&format!("~ files: create {} as a link to {}\n", p("link"), p("same.txt"))), "{run}");
    assert!(!out.contains("same.txt:"), "an unchanged file is not listed\n{run}");
    // Commands: one that always runs; a test is not run unless asked.
    assert!(out.contains(&format!("~ commands: run 01-always: echo ran >> {}\n", p("ran.txt"))), "{run}");
    assert!(out.contains("~ commands: run 02-gated if its test passes (test not run without --run-tests: "), "{run}");
    assert!(out.ends_with("6 changes.\n"), "{run}");
    assert_unchanged(&before, sandbox.dir.path());

    // With --run-tests the gated command is skipped: its test fails.
    let run = plan(&sandbox, &["--run-tests", &file]);
    run.code(2).stdout_has("  commands: skip 02-gated: its test fails\n").stdout_has("5 changes.\n");
    assert_unchanged(&before, sandbox.dir.path());
}

#[test]
fn after_cfn_init_ran_nothing_would_change() {
    let sandbox = Sandbox::new();
    let target = sandbox.path("app.conf").display().to_string();
    let marker = sandbox.path("migrated").display().to_string();
    let file = metadata_file(
        &sandbox,
        json!({"config": {
            "files": {&target: {"content": "port=8080\n", "mode": "000600"}},
            "commands": {"migrate": {"command": ["touch", &marker], "test": format!("test ! -e {marker}")}}
        }}),
    );
    plan(&sandbox, &["--run-tests", &file]).code(2).stdout_has("~ commands: run migrate (its test passes): ");
    sandbox.cmd("cfn-init").arg(&file).run().code(0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "port=8080\n");
    plan(&sandbox, &["--run-tests", &file]).code(0).stderr_is("").stdout_is(
        "configSet default, config config:\n  commands: skip migrate: its test fails\nNothing would change.\n",
    );
    // A mode changed by hand is a change again (INIT-FILES-09).
    set_mode(&target, 0o644);
    plan(&sandbox, &["--run-tests", &file])
        .code(2)
        .stdout_has(&format!("~ files: change {target}: mode 0644 -> 0600\n"));
}

#[test]
fn configsets_are_planned_in_order_and_stdin_is_read() {
    let sandbox = Sandbox::new();
    let a = sandbox.path("a.txt").display().to_string();
    let b = sandbox.path("b.txt").display().to_string();
    let doc = json!({"AWS::CloudFormation::Init": {
        "configSets": {"first": ["one"], "both": [{"ConfigSet": "first"}, "two"]},
        "one": {"files": {&a: {"content": "a"}}},
        "two": {"files": {&b: {"content": "b"}}}
    }});
    let run =
        sandbox.cmd_via(binary(), "plan -").args(["plan", "-c", "both", "-"]).stdin(doc.to_string().as_bytes()).run();
    run.code(2).stderr_is("");
    let one = run.stdout.find("configSet both, config one:\n~ files: create").unwrap_or_else(|| panic!("{run}"));
    let two = run.stdout.find("configSet both, config two:\n~ files: create").unwrap_or_else(|| panic!("{run}"));
    assert!(one < two, "{run}");
    // No Init key: cfn-init does nothing, so nothing would change.
    let run = sandbox.cmd_via(binary(), "plan -").args(["plan", "-"]).stdin(b"{\"other\": 1}").run();
    run.code(0).stdout_is("No 'AWS::CloudFormation::Init' key: nothing would change.\n");
}

#[test]
fn bad_input_is_an_error_with_exit_1() {
    let sandbox = Sandbox::new();
    let missing = sandbox.path("missing.json").display().to_string();
    plan(&sandbox, &[&missing]).code(1).stdout_is("").stderr_has(&format!("Could not read {missing}"));
    let bad = sandbox.path("bad.json");
    std::fs::write(&bad, "{\"AWS::CloudFormation::Init\": ").unwrap();
    plan(&sandbox, &[bad.to_str().unwrap()]).code(1).stdout_is("").stderr_has("Error decoding JSON");
    let file = metadata_file(&sandbox, json!({"config": {"files": {"/tmp/x": {"content": "x"}}}}));
    plan(&sandbox, &["-c", "nope", &file])
        .code(1)
        .stderr_is("cfn-bootstrap plan: cfn-init would fail: Error: no ConfigSet named nope exists\n")
        .stdout_is("cfn-init would stop here: Error: no ConfigSet named nope exists\n");
    // An error in a config stops the plan there, as it would stop the build.
    let file = metadata_file(&sandbox, json!({"config": {"files": {"relative/x": {"content": "x"}}}}));
    plan(&sandbox, &[&file])
        .code(1)
        .stderr_has("cfn-init would fail: File specified with non-absolute path: relative/x")
        .stdout_is("configSet default, config config:\n  nothing to do\ncfn-init would stop here: File specified with non-absolute path: relative/x\n");
    // A package entry the build would refuse stops the plan, even under a manager whose
    // installed packages the plan does not ask about.
    let file = metadata_file(&sandbox, json!({"config": {"packages": {"rpm": {"a": 1}}}}));
    plan(&sandbox, &[&file]).code(1).stderr_is(
        "cfn-bootstrap plan: cfn-init would fail: config config, packages rpm a: a location must be a string, not a number\n",
    );
    let file =
        metadata_file(&sandbox, json!({"config": {"commands": {"c": {"command": "true", "runas": "no-such-user-x"}}}}));
    plan(&sandbox, &[&file])
        .code(1)
        .stderr_is("cfn-bootstrap plan: cfn-init would fail: no-such-user-x is not a valid user name\n");
    // The exit codes are documented in the help (and so in the manual page).
    plan(&sandbox, &["--help"])
        .code(0)
        .stdout_has("Exit status: 0 nothing would change, 2 something would, 1 an error");
    // Usage errors are 1 too: 2 means "something would change".
    plan(&sandbox, &["--bogus"]).code(1).stderr_has("unexpected argument '--bogus'");
    plan(&sandbox, &[&file, "-s", "stack", "-r", "Instance"])
        .code(1)
        .stderr_is("cfn-bootstrap plan: You cannot specify more than one input source for metadata\n");
    plan(&sandbox, &["-s", "stack"]).code(1).stderr_has("You must specify both a stack name and logical resource id");
    plan(&sandbox, &[]).code(1).stderr_has("You must specify an input source for metadata");
    // Nothing was logged: no cfn-init.log, no state directory.
    assert_eq!(std::fs::read_dir(sandbox.path("log")).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(sandbox.path("lib")).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------
// A stack resource's metadata, from the emulator
// ---------------------------------------------------------------------------

#[test]
fn a_stack_resource_is_planned_and_authenticated_content_is_never_shown() {
    let emulator = Emulator::shared();
    let sandbox = open_sandbox();
    let stack_file = sandbox.path("stack.txt").display().to_string();
    let secret_file = sandbox.path("secret.txt").display().to_string();
    std::fs::write(&stack_file, "old\n").unwrap();
    std::fs::write(&secret_file, "old secret\n").unwrap();
    let (bucket, url) = emulator.s3_object("secret.txt", b"new secret s3cr3t-body\n");
    let metadata = json!({
        "AWS::CloudFormation::Authentication": {
            "keys": {"type": "S3", "accessKeyId": ACCESS_KEY, "secretKey": SECRET_KEY, "buckets": [bucket]}
        },
        "AWS::CloudFormation::Init": {"config": {"files": {
            &stack_file: {"content": {"Fn::Join": ["-", ["from", {"Ref": "AWS::StackName"}, "\n"]]}},
            &secret_file: {"source": url, "authentication": "keys"}
        }}}
    });
    let stack = emulator.create_stack(&unique("plan"), &instance_template(&metadata));
    let endpoints = sandbox.path("endpoints.json");
    std::fs::write(&endpoints, emulator.s3_endpoints_document()).unwrap();
    let before = snapshot(sandbox.dir.path());
    let run = sandbox
        .cmd_via(binary(), "cfn-bootstrap plan")
        .args(["plan", "-s", &stack, "-r", "Instance"])
        .with_keys(&emulator)
        .env("ENDPOINTS_OVERRIDE", &endpoints)
        .run();
    run.code(2).stderr_is("");
    assert!(run.stdout.contains(&format!("      -old\n      +from-{stack}-\n")), "{run}");
    assert!(
        run.stdout.contains(&format!(
            "~ files: change {secret_file}: content\n      (content withheld: fetched with credentials; 11 bytes, sha256 {} -> 23 bytes, sha256 {})\n",
            digest(b"old secret\n"),
            digest(b"new secret s3cr3t-body\n")
        )),
        "{run}"
    );
    assert!(!run.stdout.contains("s3cr3t-body") && !run.stdout.contains("old secret"), "{run}");
    assert_unchanged(&before, sandbox.dir.path());
    // The metadata came from DescribeStackResource, signed with the keys given; the
    // object was fetched signed (the emulator checks signatures).
    let described: Vec<Value> =
        emulator.requests_for(&stack).into_iter().filter(|r| r["action"] == "DescribeStackResource").collect();
    assert_eq!(described.len(), 1, "{described:#?}");
    let gets: Vec<Value> = emulator
        .get_json("/_emu/requests?kind=other")
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "GET" && r["path"].as_str().is_some_and(|p| p.contains(&bucket)))
        .cloned()
        .collect();
    assert!(!gets.is_empty() && gets.iter().all(|r| r["auth_scheme"] == "AWS4-HMAC-SHA256" && r["status"] == 200));
}

/// Issue 22, item 4: what came with credentials chosen by default (basic by `uris`, S3
/// by `buckets`: the files name no `authentication`), and the old or new content of a
/// file that is not world-readable, is never printed: only that it changes, its size
/// and a short digest.
#[test]
fn content_got_with_credentials_or_not_world_readable_is_withheld() {
    let emulator = Emulator::shared();
    let sandbox = open_sandbox();
    let expected = "Basic dXNlcjpwYXNz"; // user:pass
    let (address, heads) = common::serve_recorded("127.0.0.1", move |_, head| {
        let authorized = head.lines().any(|l| l.eq_ignore_ascii_case(&format!("authorization: {expected}")));
        let (status, body) = if authorized { ("200 OK", "basic-s3cr3t page\n") } else { ("401 Unauthorized", "no") };
        format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes()
    });
    let (bucket, url) = emulator.s3_object(&unique("bucket-secret"), b"bucket-s3cr3t body\n");
    let p = |name: &str| sandbox.path(name).display().to_string();
    std::fs::write(p("basic.txt"), "public old\n").unwrap();
    set_mode(p("basic.txt"), 0o644);
    std::fs::write(p("root-only.txt"), "root-only old s3cr3t\n").unwrap();
    set_mode(p("root-only.txt"), 0o600);
    let metadata = sandbox.path("metadata.json");
    let document = json!({
        "AWS::CloudFormation::Authentication": {
            "web": {"type": "basic", "username": "user", "password": "pass", "uris": [format!("http://{address}")]},
            "keys": {"type": "S3", "accessKeyId": ACCESS_KEY, "secretKey": SECRET_KEY, "buckets": [bucket]}
        },
        "AWS::CloudFormation::Init": {"config": {"files": {
            p("basic.txt"): {"source": format!("http://{address}/page"), "mode": "000644"},
            p("bucket.txt"): {"source": url, "mode": "000644"},
            p("private.txt"): {"content": "private-s3cr3t token\n", "mode": "000600"},
            p("root-only.txt"): {"content": "now public\n", "mode": "000644"},
            p("public.txt"): {"content": "public\n", "mode": "000644"}
        }}}
    });
    std::fs::write(&metadata, document.to_string()).unwrap();
    let endpoints = sandbox.path("endpoints.json");
    std::fs::write(&endpoints, emulator.s3_endpoints_document()).unwrap();
    let before = snapshot(sandbox.dir.path());
    let run = plan_env(&sandbox, &[metadata.to_str().unwrap()], &endpoints);
    run.code(2).stderr_is("");
    let withheld = |what: &str, reason: &str, change: String| {
        format!("~ files: {what}\n      (content withheld: {reason}; {change})\n")
    };
    for line in [
        withheld(
            &format!("change {}: content", p("basic.txt")),
            "fetched with credentials",
            format!("{} -> {}", sized(b"public old\n"), sized(b"basic-s3cr3t page\n")),
        ),
        withheld(
            &format!("create {} (mode 0644)", p("bucket.txt")),
            "fetched with credentials",
            sized(b"bucket-s3cr3t body\n"),
        ),
        withheld(
            &format!("create {} (mode 0600)", p("private.txt")),
            "the file would not be world-readable (mode 0600)",
            sized(b"private-s3cr3t token\n"),
        ),
        withheld(
            &format!("change {}: content, mode 0600 -> 0644", p("root-only.txt")),
            "the file is not world-readable now (mode 0600)",
            format!("{} -> {}", sized(b"root-only old s3cr3t\n"), sized(b"now public\n")),
        ),
    ] {
        assert!(run.stdout.contains(&line), "missing:\n{line}\n{run}");
    }
    assert!(!run.stdout.contains("s3cr3t"), "{run}");
    // A world-readable file with content of its own is still shown.
    assert!(run.stdout.contains("      +public\n"), "{run}");
    // The credentials were chosen by default and went with the requests.
    assert!(heads.lock().unwrap().iter().any(|h| h.contains(expected)));
    let signed = emulator
        .get_json("/_emu/requests?kind=other")
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["path"].as_str().is_some_and(|p| p.contains(&bucket)) && r["auth_scheme"] == "AWS4-HMAC-SHA256");
    assert!(signed);
    assert_unchanged(&before, sandbox.dir.path());
}

/// The content shown in place of what is withheld: its sizes and short digests.
fn sized(bytes: &[u8]) -> String {
    format!("{} bytes, sha256 {}", bytes.len(), digest(bytes))
}

/// Issue 31, F7: a file readable by everyone by its own mode is not when a directory on
/// its path is closed to them (`/root` is 0700, a home 0750): its content, old and new,
/// is withheld, naming that directory. Under directories everyone may search, the diff
/// is still shown.
#[test]
fn content_under_a_directory_closed_to_other_users_is_withheld() {
    let sandbox = open_sandbox();
    let p = |name: &str| sandbox.path(name).display().to_string();
    std::fs::create_dir(p("root")).unwrap();
    set_mode(p("root"), 0o700);
    std::fs::write(p("root/.npmrc"), "//registry.example/:_authToken=npm-s3cr3t\n").unwrap();
    set_mode(p("root/.npmrc"), 0o644);
    std::fs::create_dir_all(p("home/u/.config/pip")).unwrap();
    set_mode(p("home"), 0o755);
    set_mode(p("home/u"), 0o750);
    set_mode(p("home/u/.config"), 0o755);
    set_mode(p("home/u/.config/pip"), 0o755);
    std::fs::write(p("home/u/.config/pip/pip.conf"), "index-url = https://u:pip-s3cr3t@pypi.example/\n").unwrap();
    set_mode(p("home/u/.config/pip/pip.conf"), 0o644);
    std::fs::create_dir(p("srv")).unwrap();
    set_mode(p("srv"), 0o755);
    std::fs::write(p("srv/app.conf"), "port=80\n").unwrap();
    set_mode(p("srv/app.conf"), 0o644);
    let file = metadata_file(
        &sandbox,
        json!({"config": {"files": {
            p("root/.npmrc"): {"content": "registry=https://new-s3cr3t.example/\n", "mode": "000644"},
            p("home/u/.config/pip/pip.conf"): {"content": "[global]\n", "mode": "000644"},
            p("home/u/.config/new/token"): {"content": "new-s3cr3t\n", "mode": "000644"},
            p("srv/app.conf"): {"content": "port=8080\n", "mode": "000644"}
        }}}),
    );
    let before = snapshot(sandbox.dir.path());
    let run = plan(&sandbox, &[&file]);
    run.code(2).stderr_is("");
    let closed =
        |dir: &str, mode: &str| format!("the directory {} is not searchable by every user (mode {mode})", p(dir));
    for line in [
        format!(
            "~ files: change {}: content\n      (content withheld: {}; {} -> {})\n",
            p("root/.npmrc"),
            closed("root", "0700"),
            sized(b"//registry.example/:_authToken=npm-s3cr3t\n"),
            sized(b"registry=https://new-s3cr3t.example/\n")
        ),
        format!(
            "~ files: change {}: content\n      (content withheld: {}; {} -> {})\n",
            p("home/u/.config/pip/pip.conf"),
            closed("home/u", "0750"),
            sized(b"index-url = https://u:pip-s3cr3t@pypi.example/\n"),
            sized(b"[global]\n")
        ),
        // A file the build would create there is no more readable by everyone.
        format!(
            "~ files: create {} (mode 0644)\n      (content withheld: {}; {})\n",
            p("home/u/.config/new/token"),
            closed("home/u", "0750"),
            sized(b"new-s3cr3t\n")
        ),
        // Under directories open to everyone: the diff, as before.
        format!(
            "~ files: change {0}: content\n      --- {0}\n      +++ {0}\n      @@ -1 +1 @@\n      -port=80\n      +port=8080\n",
            p("srv/app.conf")
        ),
    ] {
        assert!(run.stdout.contains(&line), "missing:\n{line}\n{run}");
    }
    assert!(!run.stdout.contains("s3cr3t"), "{run}");
    assert!(run.stdout.ends_with("4 changes.\n"), "{run}");
    assert_unchanged(&before, sandbox.dir.path());
}

/// Issue 31, F7: a link a user planted in a directory of the path (`~/.aws` pointing at
/// a root-only directory) is not followed by `plan` any more than by cfn-init: the plan
/// stops with cfn-init's own refusal, and nothing of the link's target is shown. Owned by
/// root, the link is followed as the build follows it, and the target's directory is
/// what a user would have to pass: closed to others, its content is withheld.
#[test]
fn a_link_planted_by_a_user_in_a_parent_directory_is_refused_as_cfn_init_refuses_it() {
    const NOBODY: u32 = 65534;
    let sandbox = open_sandbox();
    let p = |name: &str| sandbox.path(name).display().to_string();
    std::fs::create_dir(p("rootonly")).unwrap();
    set_mode(p("rootonly"), 0o700);
    std::fs::write(p("rootonly/credentials"), "aws_secret_access_key = link-s3cr3t\n").unwrap();
    set_mode(p("rootonly/credentials"), 0o644);
    std::fs::create_dir_all(p("home/v")).unwrap();
    set_mode(p("home"), 0o755);
    std::os::unix::fs::chown(p("home/v"), Some(NOBODY), Some(NOBODY)).unwrap();
    std::os::unix::fs::symlink(p("rootonly"), p("home/v/.aws")).unwrap();
    std::os::unix::fs::lchown(p("home/v/.aws"), Some(NOBODY), Some(NOBODY)).unwrap();
    let target = p("home/v/.aws/credentials");
    let file =
        metadata_file(&sandbox, json!({"config": {"files": {&target: {"content": "[default]\n", "mode": "000644"}}}}));
    let refusal =
        format!("Refusing to write {target}: {} is a symbolic link owned by nobody (uid 65534)", p("home/v/.aws"));

    let before = snapshot(sandbox.dir.path());
    let run = plan(&sandbox, &[&file]);
    run.code(1).stderr_is(&format!("cfn-bootstrap plan: cfn-init would fail: {refusal}\n")).stdout_is(&format!(
        "configSet default, config config:\n  nothing to do\ncfn-init would stop here: {refusal}\n"
    ));
    assert_unchanged(&before, sandbox.dir.path());
    // A link to be made there is refused the same way.
    let link = p("home/v/.aws/config");
    let links =
        metadata_file(&sandbox, json!({"config": {"files": {&link: {"content": "/etc/hosts", "mode": "120777"}}}}));
    plan(&sandbox, &[&links]).code(1).stdout_has(&format!(
        "cfn-init would stop here: Refusing to write {link}: {} is a symbolic link owned by nobody (uid 65534)\n",
        p("home/v/.aws")
    ));
    // cfn-init refuses it with the same words.
    sandbox.cmd("cfn-init").arg(&file).run().code(1).stderr_has(&refusal);
    assert_eq!(std::fs::read_to_string(p("rootonly/credentials")).unwrap(), "aws_secret_access_key = link-s3cr3t\n");

    // Owned by root, the link is followed; what it leads to is closed to others.
    std::os::unix::fs::lchown(p("home/v/.aws"), Some(0), Some(0)).unwrap();
    let run = plan(&sandbox, &[&file]);
    run.code(2).stderr_is("").stdout_has(&format!(
        "~ files: change {target}: content\n      (content withheld: the directory {} is not searchable by every user (mode 0700); {} -> {})\n",
        p("rootonly"),
        sized(b"aws_secret_access_key = link-s3cr3t\n"),
        sized(b"[default]\n")
    ));
    assert!(!run.stdout.contains("s3cr3t"), "{run}");
}

fn plan_env(sandbox: &Sandbox, args: &[&str], endpoints: &Path) -> Run {
    sandbox.cmd_via(binary(), "cfn-bootstrap plan").arg("plan").args(args).env("ENDPOINTS_OVERRIDE", endpoints).run()
}

// ---------------------------------------------------------------------------
// Packages, groups, users and services in the Debian test root
// ---------------------------------------------------------------------------

/// A SysV init script whose status is its pid file's process (tests/init_system.rs).
const INIT_SCRIPT: &str = r#"#!/bin/sh
### BEGIN INIT INFO
# Provides:          cfntest
# Required-Start:    $local_fs
# Required-Stop:     $local_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: cfn-bootstrap test service
### END INIT INFO
PIDFILE=/run/cfntest.pid
running() { [ -f $PIDFILE ] && kill -0 "$(cat $PIDFILE)" 2>/dev/null; }
case "$1" in
  start) running || { sleep 100000 >/dev/null 2>&1 </dev/null & echo $! > $PIDFILE; } ;;
  stop) if running; then kill "$(cat $PIDFILE)"; fi; rm -f $PIDFILE ;;
  restart) "$0" stop; "$0" start ;;
  status) if running; then echo running; exit 0; else echo stopped; exit 3; fi ;;
  *) exit 2 ;;
esac
"#;

#[test]
fn in_the_debian_root_plan_changes_nothing_and_cfn_init_then_leaves_nothing_to_do() {
    let o = Overlay::new(rootfs()).with_cfn_init();
    o.put("/etc/init.d/cfntest", INIT_SCRIPT, 0o755);
    o.put("/etc/cfntest.conf", "port=80\n", 0o644);
    o.metadata(
        "m",
        json!({"config": {
            "packages": {"apt": {"cfn-tiny": "1.0-1", "hello": ""}, "dpkg": {"ignored": ""}},
            "groups": {"cfnweb": {"gid": "4501"}, "root": {}},
            "users": {"cfnapp": {"uid": "4601", "groups": ["cfnweb"], "homeDir": "/srv/cfnapp"}},
            "files": {"/etc/cfntest.conf": {"content": "port=8080\n", "owner": "cfnapp", "group": "cfnweb"}},
            "commands": {"seed": {"command": "touch /var/lib/seeded", "test": "test ! -e /var/lib/seeded"}},
            "services": {"sysvinit": {"cfntest": {
                "enabled": "true", "ensureRunning": "true",
                "files": ["/etc/cfntest.conf"], "packages": {"apt": ["cfn-tiny"]}
            }}}
        }}),
    );
    // The binary as `cfn-bootstrap` (a link: its name picks the command); the service
    // installed but disabled (stop links only).
    let setup = o.run(
        "ln -s /opt/aws/bin/cfn-init /usr/local/bin/cfn-bootstrap\n\
         update-rc.d cfntest defaults >/dev/null; update-rc.d cfntest disable >/dev/null 2>&1\n",
    );
    assert_eq!(setup.code, 0, "{}", setup.out);
    let upper = o.upper().to_path_buf();

    let before = snapshot(&upper);
    let ran = o.run("rc=0; cfn-bootstrap plan /tmp/m.json || rc=$?; echo \"plan exit $rc\"\n");
    assert_unchanged(&before, &upper);
    let out = &ran.out;
    assert!(out.contains("plan exit 2"), "{out}");
    let expected = [
        "configSet default, config config:",
        "  packages dpkg: unsupported package manager dpkg, ignored",
        "~ packages apt: install cfn-tiny=1.0-1 (not installed)",
        "~ packages apt: install hello (not installed)",
        "~ groups: create group cfnweb: /usr/sbin/groupadd -r -g 4501 cfnweb",
        "~ users: create user cfnapp, in the groups created above (cfnweb)",
        "~ files: change /etc/cfntest.conf: content, owner cfnapp (created above), group cfnweb (created above)",
        "      --- /etc/cfntest.conf",
        "      +++ /etc/cfntest.conf",
        "      @@ -1 +1 @@",
        "      -port=80",
        "      +port=8080",
        "~ commands: run seed if its test passes (test not run without --run-tests: test ! -e /var/lib/seeded): touch /var/lib/seeded",
        "~ services sysvinit: enable cfntest",
        "~ services sysvinit: restart cfntest, since these change: files /etc/cfntest.conf, packages apt cfn-tiny",
        "8 changes.",
    ]
    .join("\n");
    assert!(out.contains(&expected), "{out}");

    // The real run, then the plan again: nothing left to do.
    let ran = o.run(
        "/opt/aws/bin/cfn-init /tmp/m.json; echo \"init exit $?\"\n\
         /etc/init.d/cfntest status; id cfnapp; stat -c '%U:%G %a' /etc/cfntest.conf\n",
    );
    assert!(ran.out.contains("init exit 0\nrunning\n"), "{}", ran.out);
    assert!(ran.out.contains("uid=4601(cfnapp)") && ran.out.contains("cfnapp:cfnweb 644"), "{}", ran.out);
    let before = snapshot(&upper);
    let ran = o.run(
        "/etc/init.d/cfntest start\n\
         rc=0; cfn-bootstrap plan --run-tests /tmp/m.json || rc=$?; echo \"again exit $rc\"\n",
    );
    let again = [
        "configSet default, config config:",
        "  packages dpkg: unsupported package manager dpkg, ignored",
        "  commands: skip seed: its test fails",
        "Nothing would change.",
        "again exit 0",
    ]
    .join("\n");
    assert!(ran.out.contains(&again), "{}", ran.out);
    assert_unchanged(&before, &upper);

    // A user changed by hand and a stopped service are planned back.
    let ran = o.run(
        "usermod -d /elsewhere cfnapp\n\
         rc=0; cfn-bootstrap plan --run-tests /tmp/m.json || rc=$?; echo \"drift exit $rc\"\n",
    );
    assert!(ran.out.contains("~ users: change user cfnapp: /usr/sbin/usermod -d /srv/cfnapp cfnapp\n"), "{}", ran.out);
    assert!(ran.out.contains("~ services sysvinit: start cfntest (not running)\n"), "{}", ran.out);
    assert!(ran.out.contains("drift exit 2"), "{}", ran.out);
}

#[test]
fn systemd_units_are_planned_from_systemctl_s_answers() {
    let o = Overlay::new(rootfs()).with_cfn_init();
    o.put(
        "/etc/systemd/system/cfnunit.service",
        "[Unit]\nDescription=cfn test unit\n[Service]\nExecStart=/bin/sleep 1000\n[Install]\nWantedBy=multi-user.target\n",
        0o644,
    );
    o.metadata(
        "m",
        json!({"config": {
            "files": {"/etc/cfnunit.conf": {"content": "x\n"}},
            "services": {"systemd": {"cfnunit": {"enabled": true, "ensureRunning": true, "files": ["/etc/cfnunit.conf"]}}}
        }}),
    );
    let setup = o.run("ln -s /opt/aws/bin/cfn-init /usr/local/bin/cfn-bootstrap\n");
    assert_eq!(setup.code, 0, "{}", setup.out);
    let plan = "rc=0; cfn-bootstrap plan /tmp/m.json || rc=$?; echo \"exit $rc\"\n";

    let before = snapshot(o.upper());
    let ran = o.run(plan);
    assert_unchanged(&before, o.upper());
    let expected = [
        "~ files: create /etc/cfnunit.conf (mode 0644)",
        "      --- /dev/null",
        "      +++ /etc/cfnunit.conf",
        "      @@ -0,0 +1 @@",
        "      +x",
        "~ services systemd: enable cfnunit",
        "~ services systemd: restart cfnunit, since these change: files /etc/cfnunit.conf",
        "3 changes.",
        "exit 2",
    ]
    .join("\n");
    assert!(ran.out.contains(&expected), "{}", ran.out);

    // Enabled and written by hand: only the start is left (no systemd runs in the root,
    // so systemctl reports the unit inactive).
    let done = o.run("systemctl enable cfnunit 2>/dev/null; printf 'x\\n' > /etc/cfnunit.conf\n");
    assert_eq!(done.code, 0, "{}", done.out);
    let before = snapshot(o.upper());
    let ran = o.run(plan);
    assert_unchanged(&before, o.upper());
    let expected =
        "configSet default, config config:\n~ services systemd: start cfnunit (not running)\n1 change.\nexit 2\n";
    assert!(ran.out.ends_with(expected), "{}", ran.out);
}

#[test]
fn a_template_resource_is_planned_as_render_resolves_it() {
    let sandbox = open_sandbox();
    let target = sandbox.path("site.conf").display().to_string();
    let template = sandbox.path("site.yaml");
    std::fs::write(
        &template,
        format!(
            "Parameters:\n  Port:\n    Type: Number\n    Default: 80\nResources:\n  Web:\n    Type: AWS::EC2::Instance\n    \
             Metadata:\n      AWS::CloudFormation::Init:\n        config:\n          files:\n            {target}:\n              \
             content: !Sub 'port=${{Port}} region=${{AWS::Region}}'\n"
        ),
    )
    .unwrap();
    let template = template.display().to_string();
    let before = snapshot(sandbox.dir.path());
    plan(&sandbox, &["-t", &template, "-r", "Web", "-p", "Port=8080", "--region", "eu-west-1"])
        .code(2)
        .stdout_has(&format!("~ files: create {target}"))
        .stdout_has("+port=8080 region=eu-west-1\n");
    assert_unchanged(&before, sandbox.dir.path());
    // -t needs -r; it cannot be combined with another source; what render cannot
    // resolve is an error naming it.
    plan(&sandbox, &["-t", &template]).code(1).stderr_has("-t needs -r RESOURCE");
    plan(&sandbox, &["-t", &template, "-s", "stack", "-r", "Web"]).code(1).stderr_has("cannot be used with");
    plan(&sandbox, &["-t", &template, "-r", "Nope"]).code(1).stderr_has("Nope");
}

/// The harness's check of what users read (tests/common, issue 22, item 11) tells Rust's
/// `Debug` text from the reference's Python text.
#[test]
fn the_harness_tells_rust_debug_text_from_python_text() {
    use common::rust_debug_text;
    for rust in [
        "expiring Some(2026-01-01T00:00:00Z)",
        "got Ok(())",
        "x: Err(e)",
        "expiring None",
        "uid: None, gid: 0",
        "(None)",
    ] {
        assert!(rust_debug_text(&format!("first line\n{rust}\n")).is_some(), "{rust}");
    }
    for python in [
        "RemoteError: [Errno None] ('Connection aborted.', error(111, 'Connection refused'))",
        "[1, 'a', True, None, 1.5, {'k': None}, [None]]",
        "None of the commands ran",
        "[DEBUG] Action for hook output: <None>",
        "NoneType",
        "handleSome(x) isOk(1)",
    ] {
        assert_eq!(rust_debug_text(python), None, "{python}");
    }
}
