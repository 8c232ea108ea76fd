//! cfn-init through its link, with file paths under a private temporary root
//! (INIT-CLI-*, INIT-CS-*, INIT-FILES-*, INIT-CMD-*, STATE-01..03, LOG-05).

mod common;
use common::*;
use serde_json::{Value, json};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A sandbox with a `root/` directory the test's files live under.
struct Host {
    sandbox: Sandbox,
}

impl Host {
    fn new() -> Host {
        let sandbox = Sandbox::new();
        std::fs::create_dir(sandbox.path("root")).unwrap();
        Host { sandbox }
    }

    /// An absolute path under the root.
    fn p(&self, rel: &str) -> String {
        self.sandbox.path("root").join(rel).display().to_string()
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

    /// Runs `cfn-init -v <metadata file> <args…>`.
    fn init(&self, metadata: &Value, args: &[&str]) -> Run {
        let file = self.sandbox.path(&format!("{}.json", unique("metadata")));
        std::fs::write(&file, metadata.to_string()).unwrap();
        self.sandbox.cmd("cfn-init").arg("-v").args(args).arg(&file).run()
    }

    /// The build of a config holding `sections`.
    fn config(&self, sections: Value) -> Run {
        self.init(&json!({"AWS::CloudFormation::Init": {"config": sections}}), &[])
    }

    fn log(&self) -> String {
        self.sandbox.log("cfn-init.log")
    }

    fn cmd_log(&self) -> String {
        self.sandbox.log("cfn-init-cmd.log")
    }
}

/// The log lines without their timestamp (and pid), for comparing with the reference.
fn messages(log: &str) -> Vec<String> {
    log.lines()
        .map(|l| {
            let rest = l.get(24..).unwrap_or(l);
            match rest.strip_prefix('P') {
                Some(p) => p.split_once(' ').map(|(_, r)| r.to_string()).unwrap_or_default(),
                None => rest.to_string(),
            }
        })
        .collect()
}

fn build_error(message: &str) -> String {
    format!("Error occurred during build: {message}\n")
}

// ---------------------------------------------------------------------------
// configSets (INIT-CS-01..06)
// ---------------------------------------------------------------------------

fn trace_command(host: &Host, label: &str) -> Value {
    json!({"commands": {"t": {"command": format!("echo {label} >> {}", host.p("trace"))}}})
}

#[test]
fn without_configsets_only_config_runs() {
    let host = Host::new();
    let metadata = json!({"AWS::CloudFormation::Init": {"config": trace_command(&host, "config"), "other": trace_command(&host, "other")}});
    host.init(&metadata, &[]).code(0).stdout_is("").stderr_is("");
    assert_eq!(host.read("trace"), "config\n");
    host.init(&metadata, &["-c", "default"]).code(0);
    assert_eq!(host.read("trace"), "config\nconfig\n");
    host.init(&metadata, &["-c", "other"]).code(1).stderr_is(&build_error("Error: no ConfigSet named other exists"));
    // No `config` key at all: an empty config, success.
    host.init(&json!({"AWS::CloudFormation::Init": {"other": {}}}), &[]).code(0).stderr_is("");
}

#[test]
fn configsets_resolve_strings_lists_nesting_references_and_duplicates() {
    let host = Host::new();
    let metadata = json!({"AWS::CloudFormation::Init": {
        "configSets": {
            "one": "c1",
            "nested": [["c1", ["c2"]]],
            "default": [{"ConfigSet": "one"}, "c3", {"ConfigSet": "nested"}]
        },
        "c1": trace_command(&host, "c1"), "c2": trace_command(&host, "c2"), "c3": trace_command(&host, "c3"),
        "config": trace_command(&host, "never")
    }});
    host.init(&metadata, &[]).code(0).stderr_is("");
    assert_eq!(host.read("trace"), "c1\nc3\nc1\nc2\n");
    std::fs::remove_file(host.p("trace")).unwrap();
    // -c: in order, repeated sets run again, spaces around names are ignored.
    host.init(&metadata, &["-c", "nested, one,nested"]).code(0).stderr_is("");
    assert_eq!(host.read("trace"), "c1\nc2\nc1\nc1\nc2\n");
    let log = messages(&host.log());
    assert!(log.contains(&"[INFO] Running configSets: nested, one, nested".to_string()), "{log:#?}");
}

#[test]
fn configset_errors_use_the_reference_messages() {
    let host = Host::new();
    let cases = [
        (json!({"configSets": ["x"]}), "configSets should be a mapping of name to list"),
        (
            json!({"configSets": {"default": [{"Other": "x"}]}}),
            "Config definitions must be either a config name or a reference in the format {'ConfigSet':<config set name>}",
        ),
        (
            json!({"configSets": {"default": [{"ConfigSet": "zz"}]}}),
            "Configuration set zz was referenced but not defined",
        ),
        (json!({"configSets": {"default": ["nope"]}}), "No configuration found with name: nope"),
        (
            json!({"configSets": {"default": [{"ConfigSet": "a"}], "a": [{"ConfigSet": "default"}]}}),
            "No configSets exist without references; this creates a circular dependency and is not allowed",
        ),
        (
            json!({"configSets": {"ok": ["c"], "a": [{"ConfigSet": "b"}], "b": [{"ConfigSet": "a"}]}, "c": {}}),
            "At least one circular dependency detected; this is not allowed. Culprits: a, b",
        ),
        (
            json!({"configSets": {"default": ["c"]}, "c": ["not", "an", "object"]}),
            "config c: must be an object, not a list",
        ),
    ];
    for (init, message) in cases {
        let mut init = init.clone();
        init["marker"] = trace_command(&host, "ran");
        let run = host.init(&json!({"AWS::CloudFormation::Init": init}), &[]);
        run.code(1).stdout_is("").stderr_is(&build_error(message));
        let log = messages(&host.log());
        assert!(log.contains(&format!("[ERROR] Unhandled exception during build: {message}")), "{log:#?}");
        assert!(log.contains(&"[ERROR] -----------------------BUILD FAILED!------------------------".to_string()));
    }
    assert!(!host.exists("trace"), "nothing may run when the configSets are invalid");
    // An invalid configSet fails the build even when it is not requested.
    let init = json!({"configSets": {"good": ["c"], "bad": ["missing"]}, "c": trace_command(&host, "c")});
    host.init(&json!({"AWS::CloudFormation::Init": init}), &["-c", "good"])
        .code(1)
        .stderr_is(&build_error("No configuration found with name: missing"));
    assert!(!host.exists("trace"));
}

#[test]
fn the_first_failure_stops_everything_after_it() {
    let host = Host::new();
    let metadata = json!({"AWS::CloudFormation::Init": {
        "configSets": {"default": ["c1", "c2", "c3"], "later": ["c3"]},
        "c1": trace_command(&host, "c1"),
        "c2": {"commands": {"fail": {"command": "exit 7"}}},
        "c3": trace_command(&host, "c3"),
    }});
    host.init(&metadata, &["-c", "default,later"]).code(1).stderr_is(&build_error("Command fail failed"));
    assert_eq!(host.read("trace"), "c1\n");
    let log = messages(&host.log());
    assert!(log.contains(&"[ERROR] Error encountered during build of c2: Command fail failed".to_string()), "{log:#?}");
}

// ---------------------------------------------------------------------------
// Metadata sources and the Init key (INIT-CLI-02..09)
// ---------------------------------------------------------------------------

#[test]
fn source_selection_errors_match_the_reference() {
    let host = Host::new();
    let golden = |case: &str| read(&golden_dir().join("cfn-init").join(format!("{case}.stderr")));
    for (case, args) in [("no-source", &[][..]), ("stack-only", &["-s", "x"][..]), ("resource-only", &["-r", "x"][..])]
    {
        host.sandbox.cmd("cfn-init").args(args).run().code(1).stdout_is("").stderr_is(&golden(case));
    }
    let file = host.sandbox.path("m.json");
    std::fs::write(&file, "{}").unwrap();
    let both = host.sandbox.cmd("cfn-init").arg(&file).args(["-s", "x"]).run();
    both.code(1).stderr_is(&golden("file-and-stack"));
    let two = host.sandbox.cmd("cfn-init").arg(&file).arg(&file).run();
    two.code(1).stderr_is(&golden("two-files"));
}

#[test]
fn files_and_stdin_are_read_with_clear_errors() {
    let host = Host::new();
    let missing = host.sandbox.path("nope.json");
    host.sandbox
        .cmd("cfn-init")
        .arg(&missing)
        .run()
        .code(1)
        .stdout_is("")
        .stderr_is(&format!("Could not read {}: No such file or directory\n", missing.display()));
    let bad = host.sandbox.path("bad.json");
    std::fs::write(&bad, "{\"a\": ").unwrap();
    let run = host.sandbox.cmd("cfn-init").arg(&bad).run();
    run.code(1).stdout_is("");
    assert!(run.stderr.starts_with(&format!("Error decoding JSON from {}: EOF while parsing", bad.display())), "{run}");
    let run = host.sandbox.cmd("cfn-init").arg("-").stdin(b"[1, ").run();
    run.code(1);
    assert!(run.stderr.starts_with("Error decoding JSON from stdin: "), "{run}");
    // A read-only metadata file is fine (the reference opened it read-write).
    let readonly = host.sandbox.path("ro.json");
    std::fs::write(&readonly, json!({"AWS::CloudFormation::Init": {"config": {}}}).to_string()).unwrap();
    std::fs::set_permissions(&readonly, std::fs::Permissions::from_mode(0o400)).unwrap();
    host.sandbox.cmd("cfn-init").arg(&readonly).run().code(0).stderr_is("");
}

#[test]
fn metadata_without_init_is_reported_and_succeeds() {
    let host = Host::new();
    let file = host.sandbox.path("noinit.json");
    for metadata in [json!({"Other": 1}), json!({"AWS::CloudFormation::Init": {}}), json!([1])] {
        std::fs::write(&file, metadata.to_string()).unwrap();
        host.sandbox
            .cmd("cfn-init")
            .arg(&file)
            .run()
            .code(0)
            .stdout_is("")
            .stderr_is(&format!("Could not find 'AWS::CloudFormation::Init' key in {}.\n", file.display()));
    }
    host.sandbox
        .cmd("cfn-init")
        .arg("-")
        .stdin(b"{\"x\": 1}")
        .run()
        .code(0)
        .stderr_is("Could not find 'AWS::CloudFormation::Init' key in stdin input.\n");
}

#[test]
fn stdin_metadata_runs() {
    let host = Host::new();
    let metadata =
        json!({"AWS::CloudFormation::Init": {"config": {"files": {host.p("s.txt"): {"content": "from stdin"}}}}});
    host.sandbox.cmd("cfn-init").arg("-").stdin(metadata.to_string().as_bytes()).run().code(0).stderr_is("");
    assert_eq!(host.read("s.txt"), "from stdin");
}

#[test]
fn metadata_from_a_stack_runs_and_is_stored_privately() {
    let emulator = Emulator::shared();
    let host = Host::new();
    let init = json!({
        "configSets": {"default": ["c"]},
        "c": {"files": {host.p("stack.txt"): {"content": {"Fn::Join": ["-", ["from", {"Ref": "AWS::StackName"}]]}}}}
    });
    let stack = emulator.create_stack(&unique("init"), &instance_template(&json!({"AWS::CloudFormation::Init": init})));
    host.sandbox
        .cmd("cfn-init")
        .args(["-s", &stack, "-r", "Instance"])
        .with_keys(&emulator)
        .run()
        .code(0)
        .stderr_is("");
    assert_eq!(host.read("stack.txt"), format!("from-{stack}"));
    // STATE-01..03: the state directory is private, metadata.json is 0600 and pretty.
    let state = host.sandbox.path("lib/cfn-init");
    assert_eq!(std::fs::metadata(&state).unwrap().permissions().mode() & 0o777, 0o700);
    let stored = state.join("data/metadata.json");
    assert_eq!(std::fs::metadata(&stored).unwrap().permissions().mode() & 0o777, 0o600);
    let text = read(&stored);
    assert!(text.starts_with("{\n    \"AWS::CloudFormation::Init\": {\n        \"configSets\""), "{text}");
    // The same metadata again leaves the identical private copy alone; a loosened mode
    // gets a fresh private copy and the state directory is made private again.
    use std::os::unix::fs::MetadataExt;
    let inode = |path: &std::path::Path| std::fs::metadata(path).unwrap().ino();
    let run_again = || host.sandbox.cmd("cfn-init").args(["-s", &stack, "-r", "Instance"]).with_keys(&emulator).run();
    let first = inode(&stored);
    run_again().code(0);
    assert_eq!(inode(&stored), first, "an identical metadata.json was rewritten");
    std::fs::set_permissions(&stored, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    run_again().code(0);
    assert_ne!(inode(&stored), first, "a world-readable metadata.json was kept");
    assert_eq!(std::fs::metadata(&stored).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&state).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(read(&stored), text);

    host.sandbox
        .cmd("cfn-init")
        .args(["-s", &stack, "-r", "Bare"])
        .with_keys(&emulator)
        .run()
        .code(1)
        .stderr_is("Error: Bare does not specify any metadata\n");
    let plain = emulator.create_stack(&unique("noinit"), &instance_template(&json!({"k": "v"})));
    host.sandbox
        .cmd("cfn-init")
        .args(["-s", &plain, "-r", "Instance"])
        .with_keys(&emulator)
        .run()
        .code(0)
        .stderr_is("Could not find 'AWS::CloudFormation::Init' key in metadata for Instance.\n");

    // Beside the copy, the stack resource it came from (cfn-hup's first baseline, issue 13
    // item 16): the last stack run, with the digest of the copy; a file source removes it.
    let record_path = state.join("data/metadata_source.json");
    assert_eq!(std::fs::metadata(&record_path).unwrap().permissions().mode() & 0o777, 0o600);
    let record: serde_json::Value = serde_json::from_str(&read(&record_path)).unwrap();
    assert_eq!(
        (record["stack"].as_str(), record["region"].as_str(), record["logical_id"].as_str()),
        (Some(plain.as_str()), Some("us-east-1"), Some("Instance"))
    );
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(read(&stored)).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(record["metadata_sha256"].as_str(), Some(digest.as_str()));
    let file = host.sandbox.path("plain.json");
    std::fs::write(&file, r#"{"k": "file"}"#).unwrap();
    host.sandbox.cmd("cfn-init").arg(&file).run().code(0);
    assert!(read(&stored).contains("\"file\""));
    assert!(!record_path.exists(), "a copy from a file names no stack resource");
}

// ---------------------------------------------------------------------------
// files (INIT-FILES-01..14)
// ---------------------------------------------------------------------------

#[test]
fn content_kinds_are_written_exactly() {
    let host = Host::new();
    host.config(json!({"files": {
        host.p("plain.txt"): {"content": "line1\nline2 caf\u{e9}\n"},
        host.p("sub/dir/nested.txt"): {"content": "deep"},
        host.p("data.json"): {"content": {"zeta": 1, "alpha": {"b": [1, 2.5, "x\u{e9}", true, false]}, "mid": "\u{20ac}\n\"q\""}},
        host.p("list.json"): {"content": ["a", 1]},
        host.p("bin"): {"content": "aGVs\n bG8=\n", "encoding": "base64"},
        host.p("empty"): {"content": ""},
    }}))
    .code(0)
    .stderr_is("");
    assert_eq!(host.read("plain.txt"), "line1\nline2 caf\u{e9}\n");
    assert_eq!(host.read("sub/dir/nested.txt"), "deep");
    // Compact JSON with Python's separators, ASCII escapes and document order.
    assert_eq!(
        host.read("data.json"),
        r#"{"zeta": 1, "alpha": {"b": [1, 2.5, "x\u00e9", true, false]}, "mid": "\u20ac\n\"q\""}"#
    );
    assert_eq!(host.read("list.json"), r#"["a", 1]"#);
    assert_eq!(host.read("bin"), "hello");
    assert_eq!(host.read("empty"), "");
    assert_eq!(host.mode("plain.txt"), 0o644);
}

#[test]
fn modes_owners_and_groups() {
    let host = Host::new();
    host.config(json!({"files": {
        host.p("m600"): {"content": "a", "mode": "000600"},
        host.p("m4755"): {"content": "b", "mode": "4755", "owner": "nobody"},
        host.p("num"): {"content": "c", "mode": 640},
        host.p("owned"): {"content": "d", "owner": "nobody", "group": "nogroup"},
        host.p("grouped"): {"content": "e", "group": "nogroup"},
    }}))
    .code(0)
    .stderr_is("");
    assert_eq!(host.mode("m600"), 0o600);
    // The mode is applied after the owner, so setuid survives.
    assert_eq!(host.mode("m4755"), 0o4755);
    assert_eq!(host.mode("num"), 0o640);
    let nobody = std::fs::metadata(host.p("owned")).unwrap();
    assert_eq!((nobody.uid(), nobody.gid()), (65534, 65534));
    assert_eq!(std::fs::metadata(host.p("grouped")).unwrap().uid(), 0);
    let log = messages(&host.log());
    assert!(log.contains(&format!("[DEBUG] Setting owner 65534 and group 65534 for {}", host.p("owned"))), "{log:#?}");
    assert!(log.contains(&format!("[DEBUG] Setting owner -1 and group 65534 for {}", host.p("grouped"))), "{log:#?}");
    assert!(log.contains(&format!("[DEBUG] Setting mode for {} to 000600", host.p("m600"))), "{log:#?}");

    // A rewrite without mode or owner keeps both (the reference kept the mode only).
    std::fs::set_permissions(host.p("owned"), std::fs::Permissions::from_mode(0o640)).unwrap();
    host.config(json!({"files": {host.p("owned"): {"content": "new"}}})).code(0);
    let meta = std::fs::metadata(host.p("owned")).unwrap();
    assert_eq!((meta.uid(), meta.gid(), meta.permissions().mode() & 0o7777), (65534, 65534, 0o640));
}

#[test]
fn bad_file_attributes_fail_precisely_and_leave_nothing_behind() {
    let host = Host::new();
    std::fs::write(host.p("existing"), "old\n").unwrap();
    let cases = [
        (json!({"rel/path": {"content": "x"}}), "File specified with non-absolute path: rel/path".to_string()),
        (json!({host.p("n"): {"source": null}}), "File specified without source or content".into()),
        (json!({host.p("n"): {"content": false}}), "File specified without source or content".into()),
        (json!({host.p("existing"): {"content": "abc", "encoding": "base64"}}), "Malformed base64: abc".into()),
        (
            json!({host.p("existing"): {"content": "x", "owner": "no-such-user"}}),
            "no-such-user is not a valid user name".into(),
        ),
        (
            json!({host.p("n"): {"content": "x", "group": "no-such-group"}}),
            "no-such-group is not a valid group name".into(),
        ),
        (
            json!({host.p("n"): {"content": "x", "mode": "rw-r--r--"}}),
            format!("config config, files {}: mode must be an octal string like \"000644\"", host.p("n")),
        ),
        (
            json!({host.p("n"): "just a string"}),
            format!("config config, files {}: must be an object, not a string", host.p("n")),
        ),
        (json!({host.p("l"): {"mode": "120777"}}), "Symbolic link specified without a destination".into()),
        (
            json!({host.p("existing/child"): {"content": "x"}}),
            format!("Parent directory {} exists and is a file", host.p("existing")),
        ),
    ];
    for (files, message) in cases {
        host.config(json!({"files": files})).code(1).stdout_is("").stderr_is(&build_error(&message));
        assert_eq!(host.read("existing"), "old\n", "{message}");
        assert!(!host.exists("n") && !host.exists("l"), "{message}: a file was left behind");
        assert!(!host.exists("existing.bak"), "{message}: the backup was not put back");
        let leftovers: Vec<_> = std::fs::read_dir(host.p("")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 1, "{message}: {leftovers:?}");
    }
}

/// `nobody` (uid 65534) plays the user who can write its home directory; the links
/// it plants are owned by it (lchown, as a link it made itself would be).
const NOBODY: u32 = 65534;

fn chown_link(path: &str, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
}

/// A home directory `nobody` owns and can write, as `/home/ec2-user` is its user's.
fn user_home(host: &Host, rel: &str) {
    std::fs::create_dir_all(host.p(rel)).unwrap();
    std::os::unix::fs::chown(host.p(rel), Some(NOBODY), Some(NOBODY)).unwrap();
}

/// Issue 13, item 1 (INIT-FILES-01): `~/.ssh` replaced by a link to root's directory
/// is not followed when its user owns the link; the same link owned by root is.
#[test]
fn a_directory_link_owned_by_a_user_is_refused_and_one_owned_by_root_followed() {
    let host = Host::new();
    user_home(&host, "home/u");
    std::fs::create_dir(host.p("rootssh")).unwrap();
    std::fs::set_permissions(host.p("rootssh"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(host.p("rootssh"), host.p("home/u/.ssh")).unwrap();
    chown_link(&host.p("home/u/.ssh"), NOBODY);
    let keys = host.p("home/u/.ssh/authorized_keys");
    let files = json!({"files": {keys.clone(): {"content": "ssh-ed25519 AAAA admin\n", "mode": "000600"}}});
    let message =
        format!("Refusing to write {keys}: {} is a symbolic link owned by nobody (uid 65534)", host.p("home/u/.ssh"));
    host.config(files.clone()).code(1).stdout_is("").stderr_is(&build_error(&message));
    assert!(messages(&host.log()).contains(&format!("[ERROR] Error encountered during build of config: {message}")));
    assert_eq!(std::fs::read_dir(host.p("rootssh")).unwrap().count(), 0, "something was written through the link");

    // Owned by root, the same link is followed, as before.
    chown_link(&host.p("home/u/.ssh"), 0);
    host.config(files).code(0).stderr_is("");
    assert_eq!(host.read("rootssh/authorized_keys"), "ssh-ed25519 AAAA admin\n");
    let meta = std::fs::symlink_metadata(host.p("rootssh/authorized_keys")).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (0, 0o600));

    // A user's link further up the path, and one leading to a missing directory, too.
    user_home(&host, "home/v");
    std::os::unix::fs::symlink(host.p("rootssh"), host.p("home/v/deep")).unwrap();
    chown_link(&host.p("home/v/deep"), NOBODY);
    let nested = host.p("home/v/deep/new/dir/file");
    host.config(json!({"files": {nested.clone(): {"content": "x"}}})).code(1).stderr_is(&build_error(&format!(
        "Refusing to write {nested}: {} is a symbolic link owned by nobody (uid 65534)",
        host.p("home/v/deep")
    )));
    assert!(!host.exists("rootssh/new"), "a parent was created through the link");
}

/// Issue 13, item 2 (INIT-FILES-07, INIT-FILES-09): a link planted at a new file's path,
/// dangling or not, gives the file neither its owner nor its mode; the link's target
/// is left alone.
#[test]
fn a_planted_link_at_the_path_gives_neither_owner_nor_mode() {
    let host = Host::new();
    user_home(&host, "home/u");
    std::os::unix::fs::symlink(host.p("home/u/nowhere"), host.p("home/u/secret")).unwrap();
    chown_link(&host.p("home/u/secret"), NOBODY);
    std::fs::write(host.p("home/u/bait"), "bait").unwrap();
    std::os::unix::fs::chown(host.p("home/u/bait"), Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(host.p("home/u/bait"), std::fs::Permissions::from_mode(0o666)).unwrap();
    std::os::unix::fs::symlink(host.p("home/u/bait"), host.p("home/u/config")).unwrap();
    chown_link(&host.p("home/u/config"), NOBODY);
    host.config(json!({"files": {
        host.p("home/u/secret"): {"content": "s3cr3t", "mode": "000600"},
        host.p("home/u/config"): {"content": "c"},
        host.p("home/u/given"): {"content": "g", "owner": "nobody"},
    }}))
    .code(0)
    .stderr_is("");
    for (rel, content, mode) in [("home/u/secret", "s3cr3t", 0o600), ("home/u/config", "c", 0o644)] {
        let meta = std::fs::symlink_metadata(host.p(rel)).unwrap();
        assert!(meta.file_type().is_file(), "{rel} is not a regular file");
        assert_eq!((meta.uid(), meta.gid(), meta.mode() & 0o7777), (0, 0, mode), "{rel}");
        assert_eq!(host.read(rel), content);
    }
    assert!(!host.exists("home/u/nowhere"), "written through the dangling link");
    assert_eq!(host.read("home/u/bait"), "bait");
    assert_eq!(host.mode("home/u/bait"), 0o666);
    // The owner the metadata gives still applies.
    assert_eq!(std::fs::metadata(host.p("home/u/given")).unwrap().uid(), NOBODY);
}

/// Issue 13, item 2 (WEAK-owner): a rewritten regular file keeps its owner only in a
/// directory that only root can write; elsewhere it goes to root (its mode is kept,
/// INIT-FILES-07).
#[test]
fn a_previous_owner_is_kept_only_in_a_directory_only_root_can_write() {
    let host = Host::new();
    user_home(&host, "home/u");
    std::fs::create_dir(host.p("shared")).unwrap();
    std::fs::set_permissions(host.p("shared"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::create_dir(host.p("etc")).unwrap();
    for rel in ["home/u/rc", "shared/rc", "etc/rc"] {
        std::fs::write(host.p(rel), "old").unwrap();
        std::os::unix::fs::chown(host.p(rel), Some(NOBODY), Some(NOBODY)).unwrap();
        std::fs::set_permissions(host.p(rel), std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    host.config(json!({"files": {
        host.p("home/u/rc"): {"content": "new"},
        host.p("shared/rc"): {"content": "new"},
        host.p("etc/rc"): {"content": "new"},
    }}))
    .code(0)
    .stderr_is("");
    for (rel, uid) in [("home/u/rc", 0), ("shared/rc", 0), ("etc/rc", NOBODY)] {
        let meta = std::fs::metadata(host.p(rel)).unwrap();
        assert_eq!((meta.uid(), meta.gid(), meta.mode() & 0o7777), (uid, uid, 0o640), "{rel}");
        assert_eq!(host.read(rel), "new");
    }
}

#[test]
fn backups_rotate_like_the_reference() {
    let host = Host::new();
    let write = |content: &str| {
        host.config(json!({"files": {host.p("f"): {"content": content}}})).code(0);
    };
    write("v1");
    assert!(!host.exists("f.bak"));
    write("v2");
    assert_eq!((host.read("f"), host.read("f.bak")), ("v2".into(), "v1".into()));
    write("v3");
    assert_eq!((host.read("f"), host.read("f.bak")), ("v3".into(), "v2".into()));
    assert!(!host.exists("f.bak2"));
    // The same content again: .bak keeps the older version.
    write("v3");
    assert_eq!((host.read("f"), host.read("f.bak")), ("v3".into(), "v2".into()));
    assert!(!host.exists("f.bak2"));
    let log = messages(&host.log());
    let f = host.p("f");
    let expected = [
        format!("[DEBUG] {f} already exists"),
        format!("[DEBUG] Moving {f}.bak to {f}.bak2"),
        format!("[DEBUG] Moving {f} to {f}.bak"),
        format!("[DEBUG] Writing content to {f}"),
    ];
    let start = log.iter().rposition(|l| *l == expected[0]).expect("backup lines");
    assert_eq!(&log[start..start + 4], &expected, "{log:#?}");
    // A directory in the way is moved aside whole.
    std::fs::create_dir_all(host.p("d/inner")).unwrap();
    host.config(json!({"files": {host.p("d"): {"content": "file now"}}})).code(0);
    assert_eq!(host.read("d"), "file now");
    assert!(Path::new(&host.p("d.bak/inner")).is_dir());
}

#[test]
fn large_files_are_compared_by_size_then_content() {
    // INIT-FILES-10: an unchanged file keeps the older `.bak`; a changed one (even of the
    // same size, differing in one byte past the first megabyte) becomes the `.bak`.
    // Inline content and downloads alike, 3 MB each.
    let size = 3_000_000;
    let version = |byte: u8| {
        let mut v: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
        v[1_500_000] = byte;
        v
    };
    let (v1, v2, v3) = (version(b'1'), version(b'2'), version(b'3'));
    let host = Host::new();
    let text = |v: &[u8]| String::from_utf8(v.to_vec()).unwrap();
    let write = |v: &[u8]| {
        host.config(json!({"files": {host.p("f"): {"content": text(v)}}})).code(0);
    };
    let read = |rel: &str| std::fs::read(host.p(rel)).unwrap();
    write(&v1);
    write(&v2);
    assert!(read("f") == v2 && read("f.bak") == v1);
    write(&v2);
    assert!(read("f") == v2 && read("f.bak") == v1, "unchanged: .bak keeps the older version");
    write(&v3);
    assert!(read("f") == v3 && read("f.bak") == v2, "changed at the same size");
    assert!(!host.exists("f.bak2"));

    let bodies = [v1.clone(), v2.clone(), v2.clone(), v3.clone()];
    let (address, _) = serve_recorded("127.0.0.1", move |n, _| {
        let body = &bodies[n.min(3)];
        let mut answer =
            format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        answer.extend_from_slice(body);
        answer
    });
    let url = format!("http://{address}/file");
    let download = || {
        host.config(json!({"files": {host.p("dl"): {"source": url}}})).code(0);
    };
    download();
    download();
    assert!(read("dl") == v2 && read("dl.bak") == v1);
    download();
    assert!(read("dl") == v2 && read("dl.bak") == v1, "unchanged download: .bak keeps the older version");
    download();
    assert!(read("dl") == v3 && read("dl.bak") == v2, "changed download at the same size");
}

#[test]
fn symbolic_links() {
    let host = Host::new();
    std::fs::write(host.p("target"), "t").unwrap();
    let link = json!({"files": {host.p("link"): {"content": host.p("target"), "mode": "120644"}}});
    host.config(link.clone()).code(0).stderr_is("");
    assert_eq!(std::fs::read_link(host.p("link")).unwrap(), PathBuf::from(host.p("target")));
    // The mode applies to the target, as AWS documents.
    assert_eq!(host.mode("target"), 0o644);
    host.config(link.clone()).code(0);
    assert!(messages(&host.log()).contains(&format!("[INFO] Symbolic link {} already exists", host.p("link"))));
    // A regular file is replaced by the link and kept as .bak.
    std::fs::write(host.p("regular"), "was a file").unwrap();
    host.config(json!({"files": {host.p("regular"): {"content": "target", "mode": "120777"}}})).code(0);
    assert_eq!(std::fs::read_link(host.p("regular")).unwrap(), PathBuf::from("target"));
    assert_eq!(host.read("regular.bak"), "was a file");
}

#[test]
fn mustache_templates_render_with_their_context() {
    let host = Host::new();
    host.config(json!({"files": {
        host.p("t.txt"): {
            "content": "a={{a}} b={{{a}}} c={{& a}} missing=[{{nope}}] {{#items}}<{{name}}>{{/items}}{{^none}}!{{/none}} {{o.k}}",
            "context": {"a": "<&>\"'", "items": [{"name": "i1"}, {"name": "i2"}], "o": {"k": "dotted"}}
        },
        host.p("no-context.txt"): {"content": "{{a}} stays"},
        host.p("json.json"): {"content": {"k": "{{v}}"}, "context": {"v": "x"}},
    }}))
    .code(0)
    .stderr_is("");
    assert_eq!(host.read("t.txt"), "a=&lt;&amp;&gt;&quot;&#x27; b=<&>\"' c=<&>\"' missing=[] <i1><i2>! dotted");
    assert_eq!(host.read("no-context.txt"), "{{a}} stays");
    // JSON content is not a template, as in the reference.
    assert_eq!(host.read("json.json"), r#"{"k": "{{v}}"}"#);
    // A mismatched end tag fails, as in pystache (an unclosed section does not).
    host.config(json!({"files": {host.p("bad"): {"content": "{{#a}}x{{/b}}", "context": {}}}})).code(1);
    assert!(!host.exists("bad"));
}

/// cfn-init on `metadata` under `timeout`, so that a template that never finishes fails
/// the test instead of hanging it.
fn init_bounded(host: &Host, metadata: &Value) -> Run {
    let file = host.sandbox.path(&format!("{}.json", unique("metadata")));
    std::fs::write(&file, metadata.to_string()).unwrap();
    host.sandbox
        .cmd_via("timeout", "cfn-init")
        .args(["--signal=KILL", "120"])
        .args(binary_argv(host.sandbox.path("bin").join("cfn-init")))
        .arg("-v")
        .arg(&file)
        .run()
}

#[test]
fn runaway_templates_fail_their_file_quickly_and_write_nothing() {
    // Twenty nested sections over ten items are 10^20 passes with no output (pystache
    // never finishes). The rendering budget stops them (INIT-FILES-06); the file fails
    // like any other (INIT-CLI-08: message on stderr and in the log, exit 1) and nothing
    // is written (INIT-FILES-11).
    use std::io::{Read, Write};
    let template = format!("{}x{}", "{{#l}}".repeat(20), "{{/l}}".repeat(20));
    let context = json!({"l": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]});
    let limit = "rendering needs more than 50000000 steps (section passes, text runs, tags and name look-ups)";
    let message = |path: &str| format!("Failed to render content as a Mustache template: {path}: {limit}");

    // Inline content over an existing file: the file keeps its content and no .bak stays.
    let host = Host::new();
    std::fs::write(host.p("app.conf"), "previous\n").unwrap();
    let metadata = json!({"AWS::CloudFormation::Init": {"config": {
        "files": {host.p("app.conf"): {"content": template, "context": context}},
        "commands": {"after": {"command": format!("touch {}", host.p("after"))}}
    }}});
    let run = init_bounded(&host, &metadata);
    run.code(1).stdout_is("").stderr_is(&build_error(&message(&host.p("app.conf"))));
    // The budget takes about a second in a debug build and several on a loaded machine;
    // the bound only tells finishing apart from never finishing.
    assert!(run.elapsed < std::time::Duration::from_secs(60), "{run}");
    assert_eq!(host.read("app.conf"), "previous\n");
    assert!(!host.exists("app.conf.bak") && !host.exists("after"));
    let log = messages(&host.log());
    let error = format!("[ERROR] Error encountered during build of config: {}", message(&host.p("app.conf")));
    assert!(log.contains(&error), "{log:#?}");

    // The same template downloaded from `source`, for a new file: no file is created.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/template", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let response =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{template}", template.len());
            let _ = stream.write_all(response.as_bytes());
        }
    });
    let metadata = json!({"AWS::CloudFormation::Init": {"config": {"files": {
        host.p("new.conf"): {"source": url, "context": context}
    }}}});
    let run = init_bounded(&host, &metadata);
    run.code(1).stderr_is(&build_error(&message(&host.p("new.conf"))));
    assert!(run.elapsed < std::time::Duration::from_secs(60), "{run}");
    let mut left: Vec<_> = std::fs::read_dir(host.p("")).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["app.conf"], "nothing but the earlier file");
}

// ---------------------------------------------------------------------------
// commands (INIT-CMD-01..11, LOG-05)
// ---------------------------------------------------------------------------

#[test]
fn commands_run_in_name_order_with_their_attributes() {
    let host = Host::new();
    let out = host.p("out");
    std::fs::create_dir(host.p("work")).unwrap();
    host.config(json!({"commands": {
        "10_second": {"command": format!("echo 10 >> {out}")},
        "2_third": {"command": format!("echo 2 >> {out}")},
        "01_first": {"command": format!("echo 01 >> {out}")},
        "a_argv": {"command": ["sh", "-c", format!("printf '%s|' \"$0\" \"$1\" >> {out}"), "one arg", "*"]},
        "b_env": {"command": format!("echo \"[$ONLY][${{HOME-}}]\" >> {out}; /usr/bin/env | grep -c '^PATH=' >> {out}; true"), "env": {"ONLY": "set"}},
        "c_cwd": {"command": format!("pwd >> {out}"), "cwd": host.p("work")},
        "d_home": {"command": format!("pwd >> {out}"), "cwd": "~"},
        "e_test_fails": {"command": format!("echo never >> {out}"), "test": "exit 3"},
        "f_test_passes": {"command": format!("echo tested >> {out}"), "test": ["test", "-d", "/"]},
        "g_wait": {"command": format!("echo waited >> {out}"), "waitAfterCompletion": "forever"},
    }}))
    .code(0)
    .stderr_is("");
    let home = host.sandbox.dir.path().display().to_string();
    assert_eq!(
        host.read("out"),
        format!("01\n10\n2\none arg|*|[set][]\n0\n{}\n{home}\ntested\nwaited\n", host.p("work"))
    );
    let log = messages(&host.log());
    assert!(log.contains(&"[INFO] Test failed with code 3".to_string()), "{log:#?}");
    assert!(log.contains(&"[DEBUG] Test for command f_test_passes passed".to_string()), "{log:#?}");
}

/// INIT-CMD-04: with no `HOME`, `~` is the home the passwd database gives the user
/// cfn-init runs as (Python's `expanduser`), looked up by its uid.
#[test]
fn a_home_cwd_without_home_is_the_users_passwd_home() {
    let host = Host::new();
    let out = host.p("out");
    let metadata = json!({"AWS::CloudFormation::Init": {"config": {"commands": {
        "home": {"command": format!("pwd >> {out}"), "cwd": "~"},
    }}}});
    let file = host.sandbox.path("metadata.json");
    std::fs::write(&file, metadata.to_string()).unwrap();
    host.sandbox.cmd("cfn-init").env_remove("HOME").arg(&file).run().code(0);
    let uid = std::fs::metadata("/proc/self").unwrap().uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let home = passwd.lines().map(|l| l.split(':').collect::<Vec<_>>()).find(|f| f.get(2) == Some(&uid.as_str()));
    let home = home.and_then(|f| f.get(5).map(|h| h.to_string())).expect("the test's user is in /etc/passwd");
    assert_eq!(host.read("out"), format!("{home}\n"));
}

#[test]
fn failures_ignore_errors_and_output_logging() {
    let host = Host::new();
    let run = host.config(json!({"commands": {
        "1": {"command": "echo out; echo err >&2; exit 2", "ignoreErrors": "true"},
        "2": {"command": "printf 'ok\\n\\377\\376\\n'"},
        "3": {"command": "echo about to fail; exit 5"},
        "4": {"command": format!("touch {}", host.p("never"))},
    }}));
    run.code(1).stdout_is("").stderr_is(&build_error("Command 3 failed"));
    assert!(!host.exists("never"));
    let log = messages(&host.log());
    for line in [
        "[ERROR] Command 1 (echo out; echo err >&2; exit 2) failed",
        "[DEBUG] Command 1 output: out",
        "[INFO] ignoreErrors set to true, continuing build",
        "[INFO] Command 2 succeeded",
        "[DEBUG] Command 2 output: ok",
        "[ERROR] Command 3 (echo about to fail; exit 5) failed",
        "[ERROR] Error encountered during build of config: Command 3 failed",
        "[ERROR] Unhandled exception during build: Command 3 failed",
    ] {
        assert!(log.contains(&line.to_string()), "missing {line:?} in {log:#?}");
    }
    let cmd_log = messages(&host.cmd_log());
    let command_1: Vec<&str> =
        cmd_log.iter().map(String::as_str).skip_while(|l| *l != "[INFO] Command 1").take(7).collect();
    assert_eq!(
        command_1,
        [
            "[INFO] Command 1",
            "[INFO] -----------------------Command Output-----------------------",
            "[INFO] \tout",
            "[INFO] \terr",
            "[INFO] ------------------------------------------------------------",
            "[ERROR] Exited with error code 2",
            "[INFO] ============================================================",
        ]
    );
    // Non-UTF-8 output is logged lossily and never fails a successful command.
    assert!(cmd_log.contains(&"[INFO] \t\u{fffd}\u{fffd}".to_string()), "{cmd_log:#?}");
    assert!(cmd_log.starts_with(&[
        "[INFO] ************************************************************".to_string(),
        "[INFO] ConfigSet default".to_string(),
        "[INFO] ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++".to_string(),
        "[INFO] Config config".to_string(),
    ]));
}

#[test]
fn large_output_is_logged_whole_in_the_command_log_and_bounded_in_the_main_log() {
    // INIT-CMD-08, LOG-05: a 3 MB line without a newline, then 20,000 short lines (the
    // command log stays under its 5 MiB rotation). The command log holds all of it, as
    // it arrived; the main log's DEBUG line keeps only the first and last 64 KiB.
    let host = Host::new();
    let command = "head -c 3000000 /dev/zero | tr '\\0' x; seq 1 20000";
    host.config(json!({"commands": {"big": {"command": command}}})).code(0).stdout_is("").stderr_is("");
    let cmd_log = messages(&host.cmd_log());
    let output: Vec<&str> = cmd_log
        .iter()
        .map(String::as_str)
        .skip_while(|l| !l.ends_with("Command Output-----------------------"))
        .skip(1)
        .take_while(|l| !l.ends_with("-----------------------------------"))
        .collect();
    assert_eq!(output.len(), 20000);
    assert_eq!(output[0].len(), "[INFO] \t".len() + 3_000_000 + 1);
    assert!(output[0].starts_with("[INFO] \txxxx") && output[0].ends_with("xxx1"));
    for (i, line) in output.iter().enumerate().skip(1) {
        assert_eq!(*line, format!("[INFO] \t{}", i + 1));
    }
    assert_eq!(cmd_log.last().map(String::as_str), Some("[INFO] Completed successfully."));

    let log = host.log();
    assert!(log.len() < 200_000, "cfn-init.log has {} bytes", log.len());
    let total = 3_000_000 + (1..=20000).map(|i: u32| i.to_string().len() + 1).sum::<usize>();
    let head = format!("[DEBUG] Command big output: {}", "x".repeat(65536));
    assert!(messages(&log).contains(&head));
    assert!(log.contains(&format!("\n[... {} bytes of output left out ...]\n", total - 2 * 65536)));
    assert!(log.contains("\n19999\n20000\n"));
}

#[test]
fn command_errors_are_clear() {
    let host = Host::new();
    host.config(json!({"commands": {"a": {"cwd": "/"}}}))
        .code(1)
        .stderr_is(&build_error("a does not specify the 'command' attribute, which is required"));
    host.config(json!({"commands": {"a": {"command": ["/nonexistent/program"]}}}))
        .code(1)
        .stderr_is(&build_error("Could not run command a: No such file or directory"));
    host.config(json!({"commands": {"a": {"command": "true", "cwd": host.p("missing")}}})).code(1).stderr_is(
        &build_error(&format!("Could not run command a: working directory {} does not exist", host.p("missing"))),
    );
    host.config(json!({"commands": {"a": {"command": "true", "runas": "no-such-user"}}}))
        .code(1)
        .stderr_is(&build_error("no-such-user is not a valid user name"));
}

#[test]
fn runas_runs_as_that_user_with_the_whole_command() {
    let host = Host::new();
    std::fs::set_permissions(host.p(""), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(host.sandbox.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = host.p("who");
    host.config(json!({"commands": {
        "a": {"command": format!("echo $(id -u):$(id -g) $HOME >> {out}"), "runas": "nobody"},
        "b": {"command": ["sh", "-c", format!("echo multi word >> {out}")], "runas": "nobody"},
    }}))
    .code(0)
    .stderr_is("");
    let nobody_home = std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("nobody:"))
        .and_then(|l| l.split(':').nth(5).map(str::to_string))
        .unwrap();
    assert_eq!(host.read("who"), format!("65534:65534 {nobody_home}\nmulti word\n"));
}

/// Gives the command's process a controlling terminal (a new pseudo-terminal), as when an
/// operator runs cfn-init from a shell. The returned master side must stay open while the
/// command runs.
fn with_controlling_terminal(mut command: TestCommand) -> (TestCommand, std::fs::File) {
    use std::os::fd::FromRawFd;
    use std::os::unix::process::CommandExt;
    // SAFETY: plain libc calls on a descriptor this function owns; the name buffer is
    // NUL-terminated by ptsname_r.
    let (master, slave) = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        assert!(libc::grantpt(fd) == 0 && libc::unlockpt(fd) == 0, "{}", std::io::Error::last_os_error());
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        (std::fs::File::from_raw_fd(fd), std::ffi::CStr::from_ptr(name.as_ptr()).to_owned())
    };
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::open(slave.as_ptr(), libc::O_RDWR);
            if fd < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(fd);
            Ok(())
        });
    }
    (command, master)
}

/// The `key=value` words a probe printed, from the log line `<prefix>: <words>`.
fn probe_words(log: &str, prefix: &str) -> std::collections::HashMap<String, String> {
    let line = messages(log)
        .into_iter()
        .find_map(|l| l.strip_prefix(&format!("[DEBUG] {prefix}: ")).map(str::to_string))
        .unwrap_or_else(|| panic!("no {prefix:?} line in\n{log}"));
    line.split_whitespace().filter_map(|w| w.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A `runas` command, its test and its `defaults` script start in a session of their own,
/// without root's controlling terminal; commands without `runas` keep cfn-init's
/// (INIT-CMD-09, INIT-CMD-10).
#[test]
fn runas_commands_start_in_a_session_of_their_own_without_a_terminal() {
    let host = Host::new();
    // Its uid, session, controlling terminal (0: none) and its parent's (cfn-init's)
    // session, from /proc/<pid>/stat: pid (comm) state ppid pgrp session tty_nr …
    let probe = "read -r _ _ _ ppid _ sid tty _ < /proc/$$/stat; read -r _ _ _ _ _ psid _ < /proc/$ppid/stat; \
                 echo \"uid=$(id -u) sid=$sid tty=$tty parent_sid=$psid\"";
    let (command, _terminal) = with_controlling_terminal(host.sandbox.cmd("cfn-init"));
    let file = host.sandbox.path("metadata.json");
    std::fs::write(
        &file,
        json!({"AWS::CloudFormation::Init": {"config": {"commands": {
            "a_root": {"command": probe},
            "b_user": {"command": probe, "runas": "nobody"},
            "c_test": {"command": "true", "test": format!("{probe} >&2; false"), "runas": "nobody"},
            "d_defaults": {
                "defaults": format!("printf '{{\"env\": {{\"PROBE\": \"%s\"}}}}' \"$({probe})\""),
                "command": "echo \"$PROBE\"",
                "runas": "nobody"
            }
        }}}})
        .to_string(),
    )
    .unwrap();
    command.arg("-v").arg(&file).run().code(0).stderr_is("");
    let log = host.log();
    let nobody = std::process::Command::new("id").args(["-u", "nobody"]).output().unwrap();
    let nobody = String::from_utf8(nobody.stdout).unwrap().trim().to_string();

    // Without runas: root, in cfn-init's session, on its terminal (so the terminal is real).
    let root = probe_words(&log, "Command a_root output");
    assert_eq!(root["uid"], "0", "{root:?}");
    assert_eq!(root["sid"], root["parent_sid"], "{root:?}");
    assert_ne!(root["tty"], "0", "cfn-init had no controlling terminal: {root:?}");
    // With runas: the user, a session of its own, no controlling terminal.
    for prefix in ["Command b_user output", "Test command output", "Command d_defaults output"] {
        let user = probe_words(&log, prefix);
        assert_eq!(user["uid"], nobody, "{prefix}: {user:?}");
        assert_ne!(user["sid"], user["parent_sid"], "{prefix}: {user:?}");
        assert_ne!(user["sid"], root["sid"], "{prefix}: {user:?}");
        assert_eq!(user["tty"], "0", "{prefix}: {user:?}");
    }
}

// ---------------------------------------------------------------------------
// Atomicity (INIT-FILES-11, INIT-FILES-13)
// ---------------------------------------------------------------------------

#[test]
fn files_written_before_a_failing_command_stay_with_their_backup() {
    let host = Host::new();
    std::fs::write(host.p("conf"), "previous\n").unwrap();
    host.config(json!({
        "files": {host.p("conf"): {"content": "new\n"}},
        "commands": {"fail": {"command": "exit 1"}}
    }))
    .code(1);
    // As in the reference: the files section completed; .bak holds the previous content.
    assert_eq!(host.read("conf"), "new\n");
    assert_eq!(host.read("conf.bak"), "previous\n");
}

#[test]
fn a_download_that_fails_half_way_leaves_the_previous_file() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/file", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            // Promise 1000 bytes, send 10, hang up.
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial...");
        }
    });
    let host = Host::new();
    std::fs::write(host.p("dl"), "previous\n").unwrap();
    let run = host.config(json!({"files": {host.p("dl"): {"source": url}, host.p("fresh"): {"source": url}}}));
    run.code(1);
    assert!(run.stderr.starts_with(&format!("Error occurred during build: Failed to retrieve {url}: ")), "{run}");
    assert_eq!(host.read("dl"), "previous\n");
    assert!(!host.exists("dl.bak") && !host.exists("fresh"));
    let leftovers: Vec<_> = std::fs::read_dir(host.p("")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

// ---------------------------------------------------------------------------
// Downloads with AWS::CloudFormation::Authentication (INIT-FILES-05, INIT-AUTH-*)
// ---------------------------------------------------------------------------

/// cfn-init with the emulator registered as an S3 endpoint, as an
/// `endpoints-override.json` would.
fn init_with_s3(host: &Host, emulator: &Emulator, metadata: &Value, imds: Option<&str>) -> Run {
    let endpoints = host.sandbox.path("endpoints.json");
    std::fs::write(&endpoints, emulator.s3_endpoints_document()).unwrap();
    let file = host.sandbox.path(&format!("{}.json", unique("metadata")));
    std::fs::write(&file, metadata.to_string()).unwrap();
    let mut cmd = host.sandbox.cmd("cfn-init").arg("-v").arg(&file).env("ENDPOINTS_OVERRIDE", &endpoints);
    if let Some(url) = imds {
        cmd = cmd.env("AWS_EC2_METADATA_SERVICE_ENDPOINT", url);
    }
    cmd.run()
}

#[test]
fn sources_from_s3_are_signed_with_static_keys_or_a_role() {
    let emulator = Emulator::shared();
    let host = Host::new();
    let (bucket, url) = emulator.s3_object("app/config.txt", b"hello {{name}}\n");
    let (_, plain_url) = emulator.s3_object("plain.txt", b"plain body");
    let metadata = json!({
        "AWS::CloudFormation::Authentication": {
            "keys": {"type": "S3", "accessKeyId": ACCESS_KEY, "secretKey": SECRET_KEY, "buckets": [bucket]},
            "role": {"type": "s3", "roleName": "emulator-role"}
        },
        "AWS::CloudFormation::Init": {"config": {"files": {
            host.p("by-bucket.txt"): {"source": url},
            host.p("templated.txt"): {"source": url, "context": {"name": "world"}},
            host.p("by-role.txt"): {"source": plain_url, "authentication": "role"}
        }}}
    });
    init_with_s3(&host, &emulator, &metadata, Some(&emulator.url)).code(0).stderr_is("");
    assert_eq!(host.read("by-bucket.txt"), "hello {{name}}\n");
    assert_eq!(host.read("templated.txt"), "hello world\n");
    assert_eq!(host.read("by-role.txt"), "plain body");
    // The emulator validated every signature; the role's requests carried its token.
    let gets: Vec<Value> = emulator
        .get_json("/_emu/requests?kind=other")
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "GET" && r["path"].as_str().is_some_and(|p| p.ends_with(".txt")))
        .filter(|r| r["path"].as_str().unwrap().contains(&bucket) || r["path"].as_str().unwrap().ends_with("plain.txt"))
        .cloned()
        .collect();
    assert!(gets.iter().all(|r| r["auth_scheme"] == "AWS4-HMAC-SHA256" && r["status"] == 200), "{gets:#?}");

    // Wrong keys: the download fails after one attempt (403 is terminal) and no file is written.
    let wrong = json!({
        "AWS::CloudFormation::Authentication": {"keys": {"type": "S3", "accessKeyId": ACCESS_KEY, "secretKey": "wrong", "buckets": bucket}},
        "AWS::CloudFormation::Init": {"config": {"files": {host.p("denied.txt"): {"source": url}}}}
    });
    let run = init_with_s3(&host, &emulator, &wrong, None);
    run.code(1);
    assert!(
        run.stderr.starts_with(&format!("Error occurred during build: Failed to retrieve {url}: HTTP Error 403 : ")),
        "{run}"
    );
    assert!(!host.exists("denied.txt"));
}

#[test]
fn basic_authentication_is_sent_to_the_uris_it_names() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let netloc = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut authorized = false;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                // "user:s3cret" in base64.
                authorized |= line.trim() == "Authorization: Basic dXNlcjpzM2NyZXQ="
                    || line.trim() == "authorization: Basic dXNlcjpzM2NyZXQ=";
            }
            let mut stream = stream;
            let answer: &[u8] = if authorized {
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret"
            } else {
                b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope"
            };
            let _ = stream.write_all(answer);
        }
    });
    let host = Host::new();
    let url = format!("http://{netloc}/protected");
    let metadata = |uris: Value| {
        json!({
            "AWS::CloudFormation::Authentication": {"web": {"type": "basic", "username": "user", "password": "s3cret", "uris": uris}},
            "AWS::CloudFormation::Init": {"config": {"files": {host.p("fetched"): {"source": url}}}}
        })
    };
    host.init(&metadata(json!([netloc])), &[]).code(0).stderr_is("");
    assert_eq!(host.read("fetched"), "secret");
    // The documented prefix form matches too.
    std::fs::remove_file(host.p("fetched")).unwrap();
    host.init(&metadata(json!([format!("http://{netloc}/")])), &[]).code(0);
    assert_eq!(host.read("fetched"), "secret");
    // Another host: no credentials, so the server refuses (401 is terminal).
    std::fs::remove_file(host.p("fetched")).unwrap();
    let run = host.init(&metadata(json!(["example.com"])), &[]);
    run.code(1).stderr_is(&build_error(&format!("Failed to retrieve {url}: HTTP Error 401 : nope")));
    assert!(!host.exists("fetched"));
    assert!(!host.log().contains("s3cret"), "the password reached the log");
}

#[test]
fn configset_errors_come_from_stack_metadata_too() {
    let emulator = Emulator::shared();
    let host = Host::new();
    let init = json!({"configSets": {"default": [{"ConfigSet": "missing"}]}});
    let stack =
        emulator.create_stack(&unique("badsets"), &instance_template(&json!({"AWS::CloudFormation::Init": init})));
    host.sandbox
        .cmd("cfn-init")
        .args(["-s", &stack, "-r", "Instance", "-c", "default"])
        .with_keys(&emulator)
        .run()
        .code(1)
        .stdout_is("")
        .stderr_is(&build_error("Configuration set missing was referenced but not defined"));
}

#[test]
fn the_state_directory_is_made_private_at_start_even_when_the_run_fails() {
    // STATE-01: as the reference's work log does, /var/lib/cfn-init (0700) exists before
    // anything can fail: a missing file, a credential error, a stack error.
    let emulator = Emulator::shared();
    let runs: Vec<(&str, Vec<String>)> = vec![
        ("missing file", vec!["/nonexistent/metadata.json".into()]),
        (
            "credential error",
            vec!["-s".into(), "s".into(), "-r".into(), "R".into(), "-f".into(), "/nonexistent/creds".into()],
        ),
        (
            "stack error",
            vec![
                "-s".into(),
                unique("no-such-stack"),
                "-r".into(),
                "Instance".into(),
                "--url".into(),
                emulator.url.clone(),
                "--access-key".into(),
                ACCESS_KEY.into(),
                "--secret-key".into(),
                SECRET_KEY.into(),
            ],
        ),
    ];
    for (what, args) in runs {
        let sandbox = Sandbox::new();
        let run = sandbox.cmd("cfn-init").args(&args).run();
        run.code(1);
        let state = sandbox.path("lib/cfn-init");
        let meta = std::fs::metadata(&state).unwrap_or_else(|e| panic!("{what}: no {}: {e}", state.display()));
        assert!(meta.is_dir(), "{what}");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700, "{what}");
        assert!(!state.join("data").exists(), "{what}: data/ is made only with metadata to store");
    }
}

/// AWS::CloudFormation::Authentication's warnings come after the build's first two lines,
/// where the reference logs them (SPEC §10.10, §8.3; issue 33), in the order Python 2.7's
/// dict gives the blocks (`alpha` before `zeta`, whatever the document's order).
#[test]
fn authentication_warnings_follow_the_reboot_trigger_line() {
    let host = Host::new();
    let text = format!(
        r#"{{"AWS::CloudFormation::Init": {{"config": {}}},
            "AWS::CloudFormation::Authentication": {{"zeta": {{"type": "kerberos"}}, "alpha": {{"type": "S3"}}}}}}"#,
        trace_command(&host, "config")
    );
    let file = host.sandbox.path("auth-order.json");
    std::fs::write(&file, text).unwrap();
    host.sandbox.cmd("cfn-init").arg("-v").arg(&file).run().code(0);
    let log = messages(&host.log());
    assert_eq!(
        log[..4],
        [
            "[INFO] -----------------------Starting build-----------------------",
            "[DEBUG] Not setting a reboot trigger as scheduling support is not available",
            r#"[WARNING] S3 auth requires either "accessKeyId" and "secretKey" or "roleName""#,
            "[WARNING] Unrecognized authentication type: kerberos",
        ],
        "{log:#?}"
    );
}
