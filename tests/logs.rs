//! The log files: reference paths and line formats (LOG-01, LOG-02), the stderr
//! fallback (LOG-04), `-v` (LOG-07), permissions and no secrets (LOG-08, SEC-02): new
//! log files are 0600 (the reference's were 0644), existing ones keep their mode.

mod common;
use common::*;
use serde_json::json;

/// `YYYY-MM-DD HH:MM:SS,mmm [LEVEL] ` at the start of a line.
fn has_reference_prefix(line: &str) -> bool {
    let b = line.as_bytes();
    let digits = |range: std::ops::Range<usize>| range.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    let level_ok =
        ["[DEBUG] ", "[INFO] ", "[WARNING] ", "[ERROR] "].iter().any(|l| line[24.min(line.len())..].starts_with(l));
    b.len() > 26
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b' '
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b','
        && digits(20..23)
        && b[23] == b' '
        && level_ok
}

#[test]
fn logs_go_to_var_log_in_the_reference_format() {
    // The production default, /var/log, in a private mount namespace with a tmpfs on it.
    let emulator = Emulator::shared();
    let stack = emulator.create_stack(&unique("logs"), &instance_template(&json!({"k": "v"})));
    let script = format!(
        "mount -t tmpfs tmpfs /var/log && \
         {bin} cfn-get-metadata -v -s {stack} -r Instance -k k --url {url} --access-key {ak} --secret-key '{sk}' && \
         {bin} cfn-get-metadata -s {stack} -r Missing --url {url} --access-key {ak} --secret-key '{sk}'; \
         cd /var/log && for f in cfn-init.log cfn-wire.log cfn-init-cmd.log; do echo \"== $f $(stat -c %a $f)\"; cat $f; done",
        bin = binary().display(),
        url = emulator.url,
        ak = ACCESS_KEY,
        sk = SECRET_KEY,
    );
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env_remove("CFN_BOOTSTRAP_LOG_DIR")
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1")
        .output()
        .expect("run unshare (needs root)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let section = |name: &str| {
        let start = text.find(&format!("== {name} ")).unwrap_or_else(|| panic!("no {name} in\n{text}"));
        let rest = &text[start..];
        let end = rest[3..].find("== ").map(|i| i + 3).unwrap_or(rest.len());
        rest[..end].to_string()
    };
    let main = section("cfn-init.log");
    assert!(main.starts_with("== cfn-init.log 600\nv\n") || main.starts_with("== cfn-init.log 600\n"), "{text}");
    let lines: Vec<&str> = main.lines().skip(1).collect();
    assert!(!lines.is_empty(), "{text}");
    assert!(lines.iter().all(|l| has_reference_prefix(l)), "{text}");
    assert!(
        main.contains(&format!("[ERROR] ValidationError: Resource Missing does not exist for stack {stack}")),
        "{text}"
    );
    // `-v` shows the tools' DEBUG lines, not the AWS SDK's own (its orchestration phases).
    assert!(main.contains(&format!("[DEBUG] Describing resource Instance in stack {stack}\n")), "{text}");
    assert!(!main.contains("phase") && !main.contains("attempt #") && !main.contains("endpoint Endpoint"), "{text}");
    let wire = section("cfn-wire.log");
    assert!(wire.starts_with("== cfn-wire.log 600\n"), "{text}");
    // The SDK's awsQuery requests are POSTs to the endpoint: the parameters are in the
    // body, so the logged URL is the endpoint's.
    assert!(wire.contains(&format!("[DEBUG] Response: 200 {}/ [headers: {{", emulator.url)), "{text}");
    assert!(wire.contains(&format!("[DEBUG] Response: 400 {}/ [headers: {{", emulator.url)), "{text}");
    assert!(wire.contains("[DEBUG] Response error: <ErrorResponse"), "{text}");
    assert!(section("cfn-init-cmd.log").starts_with("== cfn-init-cmd.log 600\n"), "{text}");
    assert!(!text.contains(SECRET_KEY), "a secret reached a log:\n{text}");
}

fn log_modes(sandbox: &Sandbox) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut modes: Vec<(String, u32)> = std::fs::read_dir(sandbox.path("log"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().permissions().mode() & 0o777))
        .collect();
    modes.sort();
    modes
}

#[test]
fn new_log_files_are_private_and_existing_ones_keep_their_mode() {
    use std::os::unix::fs::PermissionsExt;
    let owned = |v: &[(&str, u32)]| v.iter().map(|(n, m)| (n.to_string(), *m)).collect::<Vec<_>>();
    let init = |sandbox: &Sandbox| {
        let file = sandbox.path("metadata.json");
        std::fs::write(&file, json!({"AWS::CloudFormation::Init": {"config": {}}}).to_string()).unwrap();
        sandbox.cmd("cfn-init").arg(&file).run().code(0).stderr_is("");
    };
    // A fresh log directory: every file cfn-init and cfn-hup create is 0600, whatever
    // the umask would have allowed.
    let fresh = Sandbox::new();
    init(&fresh);
    fresh.cmd("cfn-hup").arg("--no-daemon").run().code(1);
    assert_eq!(
        log_modes(&fresh),
        owned(&[("cfn-hup.log", 0o600), ("cfn-init-cmd.log", 0o600), ("cfn-init.log", 0o600), ("cfn-wire.log", 0o600)])
    );
    assert!(fresh.log("cfn-hup.log").contains("[ERROR] Error: Could not find main configuration"));

    // Files an administrator made readable (for a log shipper, say) stay as they are;
    // only group/other write is ever taken away (SPEC §8.1).
    let existing = Sandbox::new();
    for (name, mode) in [("cfn-init.log", 0o644), ("cfn-wire.log", 0o640), ("cfn-init-cmd.log", 0o664)] {
        let path = existing.path("log").join(name);
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    init(&existing);
    assert_eq!(
        log_modes(&existing),
        owned(&[("cfn-init-cmd.log", 0o644), ("cfn-init.log", 0o644), ("cfn-wire.log", 0o640)])
    );
    assert!(existing.log("cfn-init.log").contains("[INFO] -----------------------Starting build"));
}

#[test]
fn an_unwritable_log_directory_falls_back_to_stderr() {
    let emulator = Emulator::shared();
    let sandbox = Sandbox::new();
    let run = sandbox
        .cmd("cfn-get-metadata")
        .env("CFN_BOOTSTRAP_LOG_DIR", "/nonexistent/logs")
        .args(["-s", &unique("nostack"), "-r", "Instance"])
        .with_keys(&emulator)
        .run();
    run.code(1);
    let mut lines = run.stderr.lines();
    assert_eq!(
        lines.next(),
        Some("Could not open /nonexistent/logs/cfn-init.log for logging.  Using stderr instead."),
        "{run}"
    );
    // The log lines themselves now go to stderr, in the reference format.
    let logged: Vec<&str> = lines.clone().filter(|l| has_reference_prefix(l)).collect();
    assert!(logged.iter().any(|l| l.contains("[ERROR] ValidationError: Stack")), "{run}");
    assert!(run.stderr.ends_with("does not exist\n"), "{run}");
}

#[test]
fn verbose_switches_the_main_log_to_debug() {
    let emulator = Emulator::shared();
    let stack = emulator.create_stack(&unique("verbose"), &instance_template(&json!({"k": "v"})));
    let quiet = Sandbox::new();
    quiet.cmd("cfn-get-metadata").args(["-s", &stack, "-r", "Instance"]).with_keys(&emulator).run().code(0);
    assert!(!quiet.log("cfn-init.log").contains("[DEBUG]"), "{}", quiet.log("cfn-init.log"));
    // The reference's DEBUG lines for the client and each DescribeStackResource attempt
    // (LOG-02): the endpoint as given, without a slash added.
    for tool in ["cfn-get-metadata", "cfn-init"] {
        let verbose = Sandbox::new();
        verbose.cmd(tool).args(["-v", "-s", &stack, "-r", "Instance"]).with_keys(&emulator).run().code(0);
        let log = verbose.log("cfn-init.log");
        let lines: Vec<&str> = log.lines().filter_map(|l| l.get(24..)).collect();
        let expected = [
            format!("[DEBUG] CloudFormation client initialized with endpoint {}", emulator.url),
            format!("[DEBUG] Describing resource Instance in stack {stack}"),
        ];
        assert_eq!(&lines[..2], &expected[..], "{tool}: {log}");
    }
}

#[test]
fn missing_options_are_reported_before_logs_are_created() {
    let sandbox = Sandbox::new();
    sandbox.cmd("cfn-get-metadata").arg("-s").arg("x").run().code(1);
    assert!(std::fs::read_dir(sandbox.path("log")).unwrap().next().is_none(), "logs were created");
}

/// The recording in tests/golden/reference-stack (see its README.md): what the reference
/// logged reading a stack with `-v`, and what it left in /var/lib, also when it failed.
fn reference_stack(name: &str) -> String {
    read(&workspace().join("tests/golden/reference-stack").join(name))
}

/// `path type mode [size]` of everything under `dir`, as the recording lists /var/lib
/// (a directory's size depends on the file system and is left out).
/// cfn-bootstrap's own records for `cfn-bootstrap status` (tested in `status.rs` and
/// `hup.rs`), which the reference does not write: left out of the comparison.
const OWN_RECORDS: &[&str] = &["./cfn-init/runs", "./cfn-hup/data/activity.json"];

fn state_listing(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            let rel = format!("./{}", entry.path().strip_prefix(dir).unwrap().display());
            if OWN_RECORDS.contains(&rel.as_str()) {
                continue;
            }
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                out.push(format!("{rel} directory {mode:o}"));
                pending.push(entry.path());
            } else {
                let kind = if meta.len() == 0 { "regular empty file" } else { "regular file" };
                out.push(format!("{rel} {kind} {mode:o} {}", meta.len()));
            }
        }
    }
    out.sort();
    out
}

fn recorded_listing(name: &str) -> Vec<String> {
    reference_stack(name)
        .lines()
        .map(|l| if l.contains(" directory ") { l.rsplit_once(' ').unwrap().0.to_string() } else { l.to_string() })
        .collect()
}

#[test]
fn reading_a_stack_logs_and_leaves_what_the_reference_does() {
    // LOG-02, STATE-01, STATE-04: the same stack and commands as the recording.
    let emulator = Emulator::shared();
    let sandbox = Sandbox::new();
    let files = sandbox.path("files");
    std::fs::create_dir(&files).unwrap();
    let file = files.join("f.txt").display().to_string();
    let metadata = json!({"AWS::CloudFormation::Init": {"config": {"files": {file.clone(): {"content": "from the stack\n"}}}}, "k": "v"});
    let stack = emulator.create_stack(&unique("refstack"), &instance_template(&metadata));
    let creds = sandbox.credential_file(0o600, &format!("AWSAccessKeyId={ACCESS_KEY}\nAWSSecretKey={SECRET_KEY}\n"));
    let as_recorded = |log: &str| -> Vec<String> {
        log.lines()
            .map(|l| {
                let l = if l.len() > 24 && l.as_bytes()[23] == b' ' { &l[24..] } else { l };
                let l = match l.split_once(' ') {
                    Some((pid, rest)) if pid.starts_with('P') && pid[1..].bytes().all(|b| b.is_ascii_digit()) => rest,
                    _ => l,
                };
                l.replace(&emulator.url, "http://127.0.0.1:5055")
                    .replace(&format!("stack {stack}"), "stack refstack")
                    .replace(&files.display().to_string(), "{W}/files")
            })
            .collect()
    };
    let args = ["-v", "-s", &stack, "-r", "Instance", "-u", &emulator.url, "-f", &creds.display().to_string()];
    for (tool, case) in [("cfn-get-metadata", "get-metadata-verbose"), ("cfn-init", "init-verbose")] {
        let _ = std::fs::remove_file(sandbox.path("log/cfn-init.log"));
        let _ = std::fs::remove_file(sandbox.path("log/cfn-init-cmd.log"));
        sandbox.cmd(tool).args(args).run().code(0);
        for log in ["cfn-init.log", "cfn-init-cmd.log"] {
            let recorded = workspace().join("tests/golden/reference-stack").join(format!("{case}.{log}"));
            if recorded.exists() {
                let (ours, theirs) = (as_recorded(&sandbox.log(log)), as_recorded(&read(&recorded)));
                reference_lines::assert_keeps_reference_lines(&format!("reference-stack/{case}.{log}"), &ours, &theirs);
                assert_eq!(ours, theirs, "{tool}: {log}");
            }
        }
    }
    assert_eq!(read(std::path::Path::new(&file)), "from the stack\n");

    // Early failures leave the private state directory all the same.
    for (case, args) in [
        ("init-missing-file", vec!["-v".to_string(), "/nonexistent/metadata.json".to_string()]),
        (
            "init-credential-error",
            vec![
                "-s".into(),
                stack.clone(),
                "-r".into(),
                "Instance".into(),
                "-u".into(),
                emulator.url.clone(),
                "-f".into(),
                "/nonexistent/creds".into(),
            ],
        ),
    ] {
        let sandbox = Sandbox::new();
        sandbox.cmd("cfn-init").args(&args).run().code(1);
        assert_eq!(state_listing(&sandbox.path("lib")), recorded_listing(&format!("{case}.var-lib")), "{case}");
    }

    // cfn-hup's first pass fails: the client and state lines, the empty state file.
    let sandbox = Sandbox::new();
    let conf = sandbox.path("conf");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(
        conf.join("cfn-hup.conf"),
        format!("[main]\nstack={stack}\ncredential-file={}\nurl={}\n", creds.display(), emulator.url),
    )
    .unwrap();
    std::fs::write(
        conf.join("hooks.conf"),
        "[missing]\ntriggers=post.add\npath=Resources.Missing.Metadata\naction=echo ran\n",
    )
    .unwrap();
    sandbox.cmd("cfn-hup").arg("-c").arg(&conf).arg("--no-daemon").run().code(0);
    assert_eq!(state_listing(&sandbox.path("lib")), recorded_listing("hup-failing-pass.var-lib"));
    let ours = as_recorded(&sandbox.log("cfn-hup.log"))
        .into_iter()
        .map(|l| l.replace(&sandbox.path("lib").display().to_string(), "/var/lib"))
        .collect::<Vec<_>>();
    let reference = as_recorded(&reference_stack("hup-failing-pass.cfn-hup.log"));
    reference_lines::assert_keeps_reference_lines("reference-stack/hup-failing-pass.cfn-hup.log", &ours, &reference);
    // The two lines before the pass are the reference's; the failure is one line instead
    // of a Python traceback (a deliberate difference).
    assert_eq!(ours[..2], reference[..2], "{ours:#?}");
    assert_eq!(
        ours.last().map(String::as_str),
        Some(
            "[ERROR] Exception caught while running hook missing: ValidationError: Resource Missing does not exist for stack refstack"
        )
    );
}

// The checker of every reference line (tests/common/reference_lines.rs), shown to fail.
use common::reference_lines::{Instead::*, NotKept, check};

fn owned_lines(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

const TABLE: &[NotKept] = &[
    NotKept { scenario: "", messages: &["Refreshing"], instead: Dropped, why: "test" },
    NotKept { scenario: "only/this", messages: &["Moved line"], instead: Moved, why: "test" },
];

#[test]
fn reference_line_checker_the_same_lines_with_additions_and_reasons_pass() {
    let theirs = owned_lines(&["{TIME} [INFO] a", "{TIME} [DEBUG] b", "{TIME} [INFO] c"]);
    let ours = owned_lines(&["{TIME} [INFO] a", "{TIME} [INFO] extra", "{TIME} [DEBUG] b: why", "{TIME} [INFO] c"]);
    let result = check("x", &ours, &theirs, TABLE);
    assert!(result.failures.is_empty(), "{:?}", result.failures);
}

#[test]
fn reference_line_checker_a_missing_line_fails() {
    let theirs = owned_lines(&["{TIME} [INFO] a", "{TIME} [DEBUG] b", "{TIME} [INFO] c"]);
    let ours = owned_lines(&["{TIME} [INFO] a", "{TIME} [INFO] c"]);
    assert_eq!(check("x", &ours, &theirs, TABLE).failures, ["reference line 2 missing: {TIME} [DEBUG] b"]);
    // A text that only starts like the reference's is not it.
    let ours = owned_lines(&["{TIME} [INFO] a", "{TIME} [DEBUG] bb", "{TIME} [INFO] c"]);
    assert_eq!(check("x", &ours, &theirs, TABLE).failures, ["reference line 2 missing: {TIME} [DEBUG] b"]);
}

#[test]
fn reference_line_checker_swapped_lines_fail() {
    let theirs = owned_lines(&["{TIME} [INFO] a", "{TIME} [DEBUG] b", "{TIME} [INFO] c"]);
    let ours = owned_lines(&["{TIME} [DEBUG] b", "{TIME} [INFO] a", "{TIME} [INFO] c"]);
    assert_eq!(check("x", &ours, &theirs, TABLE).failures, ["reference line 2 out of order: {TIME} [DEBUG] b"]);
}

#[test]
fn reference_line_checker_the_table_excuses_only_what_it_names() {
    let theirs =
        owned_lines(&["{TIME} [INFO] a", "{TIME} [INFO] Refreshing x", "{TIME} [INFO] Moved line", "{TIME} [INFO] c"]);
    let ours = owned_lines(&["{TIME} [INFO] Moved line", "{TIME} [INFO] a", "{TIME} [INFO] c"]);
    let result = check("only/this", &ours, &theirs, TABLE);
    assert!(result.failures.is_empty(), "{:?}", result.failures);
    assert_eq!(result.excused, [(0, 0), (1, 0)]);
    // Another scenario: the moved line is not excused.
    assert_eq!(
        check("other", &ours, &theirs, TABLE).failures,
        ["reference line 3 out of order: {TIME} [INFO] Moved line"]
    );
    // A moved line must still be written.
    let ours = owned_lines(&["{TIME} [INFO] a", "{TIME} [INFO] c"]);
    assert_eq!(
        check("only/this", &ours, &theirs, TABLE).failures,
        ["reference line 3 missing: {TIME} [INFO] Moved line"]
    );
}

#[test]
fn reference_line_checker_tracebacks_are_skipped() {
    let theirs = owned_lines(&[
        "{TIME} [ERROR] e",
        "Traceback (most recent call last):",
        "  File \"x\", line 1, in f",
        "KeyError: 'k'",
        "{TIME} [INFO] c",
    ]);
    let ours = owned_lines(&["{TIME} [ERROR] e", "{TIME} [INFO] c"]);
    assert!(check("x", &ours, &theirs, TABLE).failures.is_empty());
}

/// The reference's log with times dropped (tracebacks are skipped by the checker).
fn without_times(log: &str) -> Vec<String> {
    log.lines()
        .map(|l| if l.len() > 24 && l.as_bytes()[23] == b' ' { l[24..].to_string() } else { l.to_string() })
        .collect()
}

/// No credentials off EC2 (IMDS unreachable): the reference's lines stay, each with the
/// reason after it (SPEC §6; issue 33). The recorded runs (tests/golden/reference-1.4-31)
/// met an IMDS that refused; one that does not answer at all is tried once here, where
/// the reference tried ten times (SPEC §6: no multi-minute stall), so each attempt's
/// `ConnectionError` line comes once, and `Exception retrieving InstanceId` after it.
#[test]
fn without_credentials_off_ec2_the_reference_lines_are_kept_with_reasons() {
    let sandbox = Sandbox::new();
    sandbox.cmd("cfn-get-metadata").args(["-s", "s", "-r", "r", "-u", "http://127.0.0.1:9"]).run().code(1);
    let ours = without_times(&sandbox.log("cfn-init.log"));
    let theirs = without_times(&read(&golden_dir().join("cfn-get-metadata/no-credentials-not-ec2.cfn-init.log")));
    reference_lines::assert_keeps_reference_lines(
        "reference-1.4-31/cfn-get-metadata/no-credentials-not-ec2",
        &ours,
        &theirs,
    );
    assert!(
        ours.iter()
            .any(|l| l
                .starts_with("[ERROR] ConnectionError: IMDS GET /latest/meta-data/instance-id failed (attempt 1): ")),
        "{ours:#?}"
    );

    let conf = sandbox.path("hup-nocreds");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(conf.join("cfn-hup.conf"), "[main]\nstack=s\nurl=http://127.0.0.1:9\n").unwrap();
    std::fs::write(
        conf.join("hooks.conf"),
        "[h1]\ntriggers=post.update\npath=Resources.R.Metadata\naction=echo changed\n",
    )
    .unwrap();
    sandbox.cmd("cfn-hup").arg("-c").arg(&conf).arg("--no-daemon").run().code(1);
    let ours = without_times(&sandbox.log("cfn-hup.log"));
    let theirs = without_times(&read(&golden_dir().join("cfn-hup/config-nocreds.cfn-hup.log")));
    reference_lines::assert_keeps_reference_lines("reference-1.4-31/cfn-hup/config-nocreds", &ours, &theirs);
}

/// An unsupported hook path (HUP-PATH-01), recorded from the reference in
/// tests/golden/cfn-hup/path-error: the reference logged its client's line and made its
/// state directory before it met the path, and so does cfn-hup here (issue 33); the
/// hooks the reference ran before it are not run (the path is refused when the
/// configuration is read), and the table says so.
#[test]
fn an_unsupported_hook_path_keeps_the_reference_lines_before_it() {
    let sandbox = Sandbox::new();
    let conf = sandbox.path("hup-badpath");
    std::fs::create_dir_all(conf.join("hooks.d")).unwrap();
    let creds = sandbox.path("creds");
    std::fs::write(&creds, "AWSAccessKeyId=AKIDEXAMPLE\nAWSSecretKey=secretkeyexample\n").unwrap();
    std::fs::set_permissions(&creds, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::write(
        conf.join("cfn-hup.conf"),
        format!("[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file={}\n", creds.display()),
    )
    .unwrap();
    std::fs::write(
        conf.join("hooks.conf"),
        "[h1]\ntriggers=post.update\npath=Resources.R.Metadata\naction=echo changed\n",
    )
    .unwrap();
    std::fs::write(conf.join("hooks.d/two.conf"), "[h2]\ntriggers=post.update\npath=Outputs.R\naction=echo changed\n")
        .unwrap();
    sandbox.cmd("cfn-hup").arg("-v").arg("-c").arg(&conf).arg("--no-daemon").run().code(1);
    let lib = sandbox.path("lib").display().to_string();
    let ours: Vec<String> =
        without_times(&sandbox.log("cfn-hup.log")).into_iter().map(|l| l.replace(&lib, "/var/lib")).collect();
    let theirs = without_times(&read(&workspace().join("tests/golden/cfn-hup/path-error/cfn-hup.log")));
    reference_lines::assert_keeps_reference_lines("cfn-hup/path-error", &ours, &theirs);
    assert!(
        ours.last().is_some_and(
            |l| l == "[ERROR] Error: Unsupported path: only changes to Resources are supported (path: Outputs.R)"
        ),
        "{ours:#?}"
    );
    let unused = reference_lines::unused(|scenario| scenario == "cfn-hup/path-error");
    assert!(unused.is_empty(), "NOT_KEPT entries that excuse no line: {unused:#?}");
}

/// The recorded cfn-hup configuration cases (tests/golden/reference-1.4-31/cfn-hup, made by
/// tests/golden/record-reference.sh): each replayed with the same files, its log checked
/// line by line against the reference's (issue 33). `fixtures` holds the recording's
/// `/tmp/ref/scratch` (and its credential files); the state and configuration directories
/// are the sandbox's, named as the reference's in our lines before the check.
fn replay_hup_case(case: &str, args: &[&str]) {
    let sandbox = Sandbox::new();
    let fixtures = sandbox.path("fixtures");
    let hook = "[h1]\ntriggers=post.update\npath=Resources.R.Metadata\naction=echo changed\n";
    let main = |extra: &str| {
        format!(
            "[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file={}/creds-0600-ok\n{extra}",
            fixtures.display()
        )
    };
    let files: Vec<(String, String)> = vec![
        ("creds-0600-ok".into(), "AWSAccessKeyId=a\nAWSSecretKey=b\n".into()),
        ("hup-empty/.keep".into(), String::new()),
        ("hup-nostack/cfn-hup.conf".into(), "[main]\nregion=us-east-1\n".into()),
        ("hup-nohooks/cfn-hup.conf".into(), "[main]\nstack=s\nurl=http://127.0.0.1:9\n".into()),
        ("hup-noaction/cfn-hup.conf".into(), main("")),
        ("hup-noaction/hooks.conf".into(), "[h1]\ntriggers=post.update\npath=Resources.R.Metadata\n".into()),
        ("hup-badumask/cfn-hup.conf".into(), main("umask=999\n")),
        ("hup-badumask/hooks.conf".into(), hook.into()),
        (
            "hup-badcreds/cfn-hup.conf".into(),
            format!(
                "[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file={}/nonexistent-creds\n",
                fixtures.display()
            ),
        ),
        ("hup-badcreds/hooks.conf".into(), hook.into()),
        ("hup-deadurl/cfn-hup.conf".into(), main("")),
        ("hup-deadurl/hooks.conf".into(), hook.into()),
        ("hup-badverbose/cfn-hup.conf".into(), main("verbose=maybe\n")),
        ("hup-badverbose/hooks.conf".into(), hook.into()),
    ];
    for (name, text) in &files {
        let path = fixtures.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    std::fs::set_permissions(fixtures.join("creds-0600-ok"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .unwrap();
    // The default directory (`CFN_BOOTSTRAP_ETC_DIR`, the sandbox's `etc`) is missing, as
    // `/etc/cfn` was where the reference was recorded.
    std::fs::remove_dir(sandbox.path("etc")).unwrap();
    let args: Vec<String> = args.iter().map(|a| a.replace("$SCRATCH", &fixtures.display().to_string())).collect();
    let run = sandbox.cmd("cfn-hup").args(&args).run();
    let reference_exit: i32 = read(&golden_dir().join(format!("cfn-hup/{case}.exit"))).trim().parse().unwrap();
    let named = [
        (fixtures.display().to_string(), "/tmp/ref/scratch".to_string()),
        (sandbox.path("lib").display().to_string(), "/var/lib".to_string()),
        (sandbox.path("etc").display().to_string(), "/etc/cfn".to_string()),
    ];
    let ours: Vec<String> = without_times(&sandbox.log("cfn-hup.log"))
        .into_iter()
        .map(|l| without_sleep(&named.iter().fold(l, |l, (from, to)| l.replace(from.as_str(), to))))
        .collect();
    let theirs: Vec<String> = without_times(&read(&golden_dir().join(format!("cfn-hup/{case}.cfn-hup.log"))))
        .iter()
        .map(|l| without_sleep(l))
        .collect();
    reference_lines::assert_keeps_reference_lines(&format!("reference-1.4-31/cfn-hup/{case}"), &ours, &theirs);
    // Where the reference failed, so does cfn-hup; where it went on (an invalid umask),
    // cfn-hup may stop (docs/compatibility.md, cfn-hup configuration errors on stderr).
    assert!(reference_exit == 0 || run.code != 0, "{case}: the reference exited {reference_exit}\n{run}");
}

/// A retry's pause is random: `Sleeping for … seconds before retrying`.
fn without_sleep(line: &str) -> String {
    match line.strip_prefix("[DEBUG] Sleeping for ") {
        Some(rest) if rest.ends_with(" seconds before retrying") => {
            "[DEBUG] Sleeping for … seconds before retrying".to_string()
        }
        _ => line.to_string(),
    }
}

#[test]
fn the_recorded_cfn_hup_configuration_errors_keep_the_reference_lines() {
    let cases: [(&str, &[&str]); 11] = [
        ("unique-prefix-no-daemon", &["--n", "-c", "$SCRATCH/hup-empty"]),
        ("config-nonexistent-no-daemon", &["-c", "/nonexistent", "--no-daemon"]),
        ("config-nonexistent-daemon", &["-c", "/nonexistent"]),
        ("config-no-conf-file", &["-c", "$SCRATCH/hup-empty", "--no-daemon"]),
        ("config-no-stack", &["-c", "$SCRATCH/hup-nostack", "--no-daemon"]),
        ("config-no-hooks", &["-c", "$SCRATCH/hup-nohooks", "--no-daemon"]),
        ("default-config-dir", &["--no-daemon"]),
        ("config-noaction", &["-c", "$SCRATCH/hup-noaction", "--no-daemon"]),
        ("config-badumask", &["-c", "$SCRATCH/hup-badumask", "--no-daemon"]),
        ("config-badcreds", &["-c", "$SCRATCH/hup-badcreds", "--no-daemon"]),
        ("config-badverbose", &["-c", "$SCRATCH/hup-badverbose", "--no-daemon"]),
    ];
    for (case, args) in cases {
        replay_hup_case(case, args);
    }
    let unused = reference_lines::unused(|scenario| scenario.starts_with("reference-1.4-31/cfn-hup/config-badverbose"));
    assert!(unused.is_empty(), "NOT_KEPT entries that excuse no line: {unused:#?}");
}

/// The two recorded passes against an endpoint that refuses connections (each a few
/// seconds of retries, so a test of their own).
#[test]
fn the_recorded_cfn_hup_pass_against_a_dead_endpoint_keeps_the_reference_lines() {
    replay_hup_case("config-deadurl", &["-c", "$SCRATCH/hup-deadurl", "--no-daemon"]);
}

#[test]
fn the_recorded_verbose_cfn_hup_pass_against_a_dead_endpoint_keeps_the_reference_lines() {
    replay_hup_case("config-deadurl-verbose", &["-v", "-c", "$SCRATCH/hup-deadurl", "--no-daemon"]);
}

/// The other tools' recorded runs with a log (tests/golden/reference-1.4-31: cfn-init
/// from a file, and every tool against an endpoint that refuses connections), replayed
/// with the recording's argv and files: every reference line of cfn-init.log and
/// cfn-init-cmd.log is kept, in order (issue 33). The runs against the dead endpoint are
/// seconds of retries each, so they run at once, each in a sandbox of its own.
#[test]
fn the_other_tools_recorded_logs_keep_the_reference_lines() {
    let cases: [ToolCase; 11] = [
        ("cfn-init", "file-ok", &["$SCRATCH/ok.json"], &[]),
        ("cfn-init", "file-ok-verbose", &["-v", "$SCRATCH/ok.json"], &[]),
        ("cfn-init", "file-command-fails", &["$SCRATCH/fail.json"], &[]),
        ("cfn-init", "file-missing-configset", &["-c", "nope", "$SCRATCH/ok.json"], &[]),
        (
            "cfn-init",
            "dead-endpoint",
            &["-s", "s", "-r", "r", "-u", "http://127.0.0.1:9", "--access-key", "a", "--secret-key", "b"],
            &[],
        ),
        (
            "cfn-get-metadata",
            "dead-endpoint",
            &["-s", "s", "-r", "r", "-u", "http://127.0.0.1:9", "--access-key", "a", "--secret-key", "b"],
            &[],
        ),
        (
            "cfn-get-metadata",
            "dead-endpoint-credfile",
            &["-s", "s", "-r", "r", "-u", "http://127.0.0.1:9", "-f", "$SCRATCH/creds-0600-ok"],
            &[],
        ),
        ("cfn-signal", "wch-dead-endpoint", &["-i", "myid", "http://127.0.0.1:9/wch"], &[]),
        (
            "cfn-signal",
            "resource-dead-endpoint",
            &[
                "--stack",
                "s",
                "--resource",
                "r",
                "--url",
                "http://127.0.0.1:9",
                "--access-key",
                "a",
                "--secret-key",
                "b",
            ],
            &[],
        ),
        (
            "cfn-send-cmd-event",
            "dead-endpoint",
            &[
                "--event-handle",
                "http://127.0.0.1:9/e",
                "-d",
                "d",
                "-c",
                "c",
                "-i",
                "i",
                "-l",
                "l",
                "-e",
                "ev1",
                "-t",
                "2020-01-02T03:04:05",
                "hello",
                "world",
            ],
            &[],
        ),
        (
            "cfn-elect-cmd-leader",
            "env-ids-dead-endpoint",
            &["-u", "http://127.0.0.1:9", "--access-key", "a", "--secret-key", "b"],
            &[("STACK_NAME", "s"), ("CMD_NAME", "c"), ("INVOCATION_ID", "i"), ("LISTENER_ID", "l")],
        ),
    ];
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(tool, case, args, env)| std::thread::spawn(move || replay_tool_case(tool, case, args, env)))
        .collect();
    let failures: Vec<String> = runs.into_iter().flat_map(|run| run.join().unwrap()).collect();
    println!("{}", reference_lines::tally());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A recorded run: the tool, the case, its arguments and its environment.
type ToolCase = (&'static str, &'static str, &'static [&'static str], &'static [(&'static str, &'static str)]);

/// One recorded run of `tool`: the reference-lines failures of its logs.
fn replay_tool_case(tool: &str, case: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let sandbox = Sandbox::new();
    // `out` is missing, as it was: cfn-init makes it (and says so).
    let scratch = sandbox.path("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let ok = format!(
        "{{\"AWS::CloudFormation::Init\": {{\"config\": {{\"files\": {{\"{}/out/f.txt\": {{\"content\": \"hello file\\n\"}}}}, \
         \"commands\": {{\"01echo\": {{\"command\": \"echo hello from command\", \"test\": \"true\"}}}}}}}}}}",
        scratch.display()
    );
    let fail = "{\"AWS::CloudFormation::Init\": {\"config\": {\"commands\": {\"01fail\": {\"command\": \"echo about to fail; exit 3\"}}}}}";
    std::fs::write(scratch.join("ok.json"), ok).unwrap();
    std::fs::write(scratch.join("fail.json"), fail).unwrap();
    std::fs::write(scratch.join("creds-0600-ok"), "AWSAccessKeyId=a\nAWSSecretKey=b\n").unwrap();
    std::fs::set_permissions(scratch.join("creds-0600-ok"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .unwrap();
    let args: Vec<String> = args.iter().map(|a| a.replace("$SCRATCH", &scratch.display().to_string())).collect();
    let mut command = sandbox.cmd(tool).args(&args);
    for (name, value) in env {
        command = command.env(name, value);
    }
    command.run();
    // The recording's host was named localhost: cfn-signal's unique ID off EC2 is the host's name.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
    let unique_id = (format!("with unique ID {host} and"), "with unique ID localhost and");
    let named = |line: String| {
        let line = line.replace(&scratch.display().to_string(), "/tmp/ref/scratch").replace(&unique_id.0, unique_id.1);
        without_sleep(&line)
    };
    let mut failures = Vec::new();
    for log in ["cfn-init.log", "cfn-init-cmd.log"] {
        let recorded = golden_dir().join(format!("{tool}/{case}.{log}"));
        let Ok(theirs) = std::fs::read_to_string(&recorded) else { continue };
        let theirs: Vec<String> = without_times(&theirs).into_iter().map(named).collect();
        let ours: Vec<String> = without_times(&sandbox.log(log)).into_iter().map(named).collect();
        // The command log's lines carry the process's pid after the time.
        let without_pid = |lines: Vec<String>| -> Vec<String> {
            lines
                .into_iter()
                .map(|l| match l.split_once(' ') {
                    Some((pid, rest)) if pid.starts_with('P') && pid[1..].bytes().all(|b| b.is_ascii_digit()) => {
                        rest.to_string()
                    }
                    _ => l,
                })
                .collect()
        };
        let (ours, theirs) = (without_pid(ours), without_pid(theirs));
        failures.extend(reference_lines::failures(&format!("reference-1.4-31/{tool}/{case}.{log}"), &ours, &theirs));
    }
    failures
}
