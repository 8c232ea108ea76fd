//! Every line the reference logs, in its order (issue 33): people's log parsers and
//! alarms read cfn-init.log, cfn-init-cmd.log and cfn-hup.log, so for each golden
//! scenario our log must hold each line the reference's log holds, in the reference's
//! order. Ours may write more lines, and a line may be the reference's text followed by
//! `: <reason>`.
//!
//! The callers normalise both logs first (times, pids, temporary roots, retry sleeps)
//! as they already did. Python tracebacks are skipped here: a Python artefact the port
//! never writes (tests/golden/README.md, docs/compatibility.md).
//!
//! The lines deliberately not written are [`NOT_KEPT`], one table, each with the reason
//! docs/compatibility.md gives.

/// What happens to a reference line that [`NOT_KEPT`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instead {
    /// Not written at all (or in words that are not the reference's).
    Dropped,
    /// Written, but not at the reference's place: it must still be somewhere in our log.
    Moved,
}

/// A reference line the port deliberately does not keep as it is.
#[derive(Debug, Clone, Copy)]
pub struct NotKept {
    /// The scenario it applies to (`<golden dir>/<case>`, as the caller names it), or
    /// `""` for every scenario.
    pub scenario: &'static str,
    /// The lines' messages (the text after `[LEVEL] `; the whole line for continuation
    /// lines): each is the message, or the start of one (not when empty).
    pub messages: &'static [&'static str],
    pub instead: Instead,
    pub why: &'static str,
}

use Instead::*;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The lines of a `sources` build the reference went on with after extracting an archive
/// this port refuses (BUG-TRAVERSAL, BUG-SYMLINK).
const AFTER_A_REFUSED_ARCHIVE: &[&str] = &[
    "Expanding {ROOT}/",
    "No files specified",
    "No commands specified",
    "No services specified",
    "ConfigSets completed",
    "Not clearing reboot trigger",
    "-----------------------Build complete-----------------------",
];

/// Reference lines not kept, with why (the reasons docs/compatibility.md gives).
pub const NOT_KEPT: &[NotKept] = &[
    // cfn-init (tests/golden/cfn-init, replayed by tests/init_reference.rs): the cases of
    // its DEVIATIONS whose behaviour or message differs on purpose, with its reasons.
    NotKept {
        scenario: "cfn-init/cs-number-entry/cfn-init.log",
        messages: &["Unhandled exception during build: 'int' object is not iterable"],
        instead: Dropped,
        why: "clear message instead of \"'int' object is not iterable\"",
    },
    NotKept {
        scenario: "cfn-init/cs-c-untrimmed/cfn-init.log",
        messages: &[
            "Running configSets: a,  b",
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: Error: no ConfigSet named  b exists",
        ],
        instead: Dropped,
        why: "\"a, b\" runs a then b instead of failing on \" b\"",
    },
    NotKept {
        scenario: "cfn-init/cs-config-is-list/cfn-init.log",
        messages: &["Unhandled exception during build: 'list' object has no attribute 'get'"],
        instead: Dropped,
        why: "clear message instead of an AttributeError",
    },
    NotKept {
        scenario: "cfn-init/cs-config-is-string/cfn-init.log",
        messages: &["Unhandled exception during build: 'unicode' object has no attribute 'get'"],
        instead: Dropped,
        why: "clear message instead of an AttributeError",
    },
    NotKept {
        scenario: "cfn-init/cs-config-is-null/cfn-init.log",
        messages: &["Unhandled exception during build: 'NoneType' object has no attribute 'get'"],
        instead: Dropped,
        why: "clear message instead of an AttributeError",
    },
    NotKept {
        scenario: "cfn-init/f-empty-content/cfn-init.log",
        messages: &[
            "Error encountered during build of config: File specified without source or content",
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: File specified without source or content",
        ],
        instead: Dropped,
        why: "empty string content creates an empty file (WEAK-empty, INIT-FILES-14)",
    },
    NotKept {
        scenario: "cfn-init/f-mode-numeric/cfn-init.log",
        messages: &[
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: int() can't convert non-string with explicit base",
        ],
        instead: Dropped,
        why: "a numeric mode is read as octal digits (INIT-FILES-14)",
    },
    NotKept {
        scenario: "cfn-init/f-mode-abc/cfn-init.log",
        messages: &["Unhandled exception during build: invalid literal for int() with base 8: 'abc'"],
        instead: Dropped,
        why: "clear message naming config, file and the mode format",
    },
    NotKept {
        scenario: "cfn-init/f-mode-8/cfn-init.log",
        messages: &["Unhandled exception during build: invalid literal for int() with base 8: '000648'"],
        instead: Dropped,
        why: "clear message naming config, file and the mode format",
    },
    NotKept {
        scenario: "cfn-init/f-symlink-dangling/cfn-init.log",
        messages: &[
            "{ROOT}/f-symlink-dangling/dangling is specified as a symbolic link to {ROOT}/f-symlink-dangling/nowhere",
            "Setting mode for {ROOT}/f-symlink-dangling/dangling to 120644",
            "Unhandled exception during build: [Errno 2] No such file or directory: '{ROOT}/f-symlink-dangling/dangling'",
        ],
        instead: Dropped,
        why: "the dangling link is refused before it is created",
    },
    NotKept {
        scenario: "cfn-init/f-symlink-dangling-existing/cfn-init.log",
        messages: &[
            "Unhandled exception during build: [Errno 2] No such file or directory: '{ROOT}/f-symlink-dangling-existing/nowhere'",
        ],
        instead: Dropped,
        why: "clear message instead of Python's OSError text",
    },
    NotKept {
        scenario: "cfn-init/f-mustache-mismatched/cfn-init.log",
        messages: &[
            "Error encountered during build of config: Failed to render content as a Mustache template: Section end tag mismatch: b != a",
            "Unhandled exception during build: Failed to render content as a Mustache template: Section end tag mismatch: b != a",
        ],
        instead: Dropped,
        why: "our template error text, and no partial file",
    },
    NotKept {
        scenario: "cfn-init/f-source-closed-port/cfn-init.log",
        messages: &[
            "Error encountered during build of config: Failed to retrieve http://127.0.0.1:9/x: ('Connection aborted.', error(111, 'Connection refused'))",
            "Unhandled exception during build: Failed to retrieve http://127.0.0.1:9/x: ('Connection aborted.', error(111, 'Connection refused'))",
        ],
        instead: Dropped,
        why: "connection errors in one readable line; no partial file",
    },
    NotKept {
        scenario: "cfn-init/f-second-file-fails/cfn-init.log",
        messages: &[
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: int() can't convert non-string with explicit base",
        ],
        instead: Dropped,
        why: "a numeric mode is read as octal digits (INIT-FILES-14)",
    },
    NotKept {
        scenario: "cfn-init/f-fail-mode-existing/cfn-init.log",
        messages: &[
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: int() can't convert non-string with explicit base",
        ],
        instead: Dropped,
        why: "a numeric mode is read as octal digits (INIT-FILES-14)",
    },
    NotKept {
        scenario: "cfn-init/c-list-fails/cfn-init.log",
        messages: &["Command a ([u'sh', u'-c', u'echo \\xe9-free; exit 4', u'x']) failed"],
        instead: Dropped,
        why: "argv shown without Python 2's u'' and \\x escapes; non-ASCII output logged",
    },
    NotKept {
        scenario: "cfn-init/c-env-notpath/cfn-init-cmd.log",
        messages: &[
            "\tHTTPS_PROXY=http://127.0.0.1:8119",
            "\tNO_PROXY=127.0.0.1,localhost",
            "\tHTTP_PROXY=http://127.0.0.1:8119",
            "\tPYTHONPATH=/tmp/ref/src:/tmp/ref/lib",
            "\tTZ=UTC",
        ],
        instead: Dropped,
        why: "env {} inherits the environment, which differs in tests",
    },
    NotKept {
        scenario: "cfn-init/c-env-notpath/cfn-init.log",
        messages: &[
            "Command a output: HTTPS_PROXY=http://127.0.0.1:8119",
            "HOME=/root",
            "NO_PROXY=127.0.0.1,localhost",
            "HTTP_PROXY=http://127.0.0.1:8119",
            "PYTHONPATH=/tmp/ref/src:/tmp/ref/lib",
            "TZ=UTC",
        ],
        instead: Dropped,
        why: "env {} inherits the environment, which differs in tests",
    },
    NotKept {
        scenario: "cfn-init/c-no-env/cfn-init-cmd.log",
        messages: &[
            "\tHTTPS_PROXY=http://127.0.0.1:8119",
            "\tHTTP_PROXY=http://127.0.0.1:8119",
            "\tNO_PROXY=127.0.0.1,localhost",
            "\tPYTHONPATH=/tmp/ref/src:/tmp/ref/lib",
            "\tTZ=UTC",
        ],
        instead: Dropped,
        why: "the command prints the inherited environment, which differs in tests",
    },
    NotKept {
        scenario: "cfn-init/c-no-env/cfn-init.log",
        messages: &[
            "Command a output: HOME=/root",
            "HTTPS_PROXY=http://127.0.0.1:8119",
            "HTTP_PROXY=http://127.0.0.1:8119",
            "NO_PROXY=127.0.0.1,localhost",
            "PYTHONPATH=/tmp/ref/src:/tmp/ref/lib",
            "TZ=UTC",
        ],
        instead: Dropped,
        why: "the command prints the inherited environment, which differs in tests",
    },
    NotKept {
        scenario: "cfn-init/c-cwd-missing/cfn-init.log",
        messages: &[
            "Unhandled exception during build: [Errno 2] No such file or directory: '{ROOT}/c-cwd-missing/nope'",
        ],
        instead: Dropped,
        why: "clear message instead of Python's OSError text",
    },
    NotKept {
        scenario: "cfn-init/c-non-utf8/cfn-init.log",
        messages: &[
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: 'utf8' codec can't decode byte 0xff in position 3: invalid start byte",
        ],
        instead: Dropped,
        why: "non-UTF-8 output is logged lossily; the build goes on",
    },
    NotKept {
        scenario: "cfn-init/c-non-utf8-test/cfn-init.log",
        messages: &[
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: 'utf8' codec can't decode byte 0xff in position 0: invalid start byte",
        ],
        instead: Dropped,
        why: "non-UTF-8 test output is logged lossily; the build goes on",
    },
    NotKept {
        scenario: "cfn-init/c-empty-list-command/cfn-init-cmd.log",
        messages: &["============================================================", "Command a"],
        instead: Dropped,
        why: "an empty command list is a model error, before the command starts",
    },
    NotKept {
        scenario: "cfn-init/c-empty-list-command/cfn-init.log",
        messages: &["No test for command a", "Unhandled exception during build: list index out of range"],
        instead: Dropped,
        why: "an empty command list is a model error, before the command starts",
    },
    NotKept {
        scenario: "cfn-init/c-nonexistent-program/cfn-init.log",
        messages: &["Unhandled exception during build: [Errno 2] No such file or directory"],
        instead: Dropped,
        why: "clear message instead of Python's OSError text",
    },
    NotKept {
        scenario: "cfn-init/c-runas-nobody/cfn-init-cmd.log",
        messages: &[
            "\tsu: option requires an argument -- 'u'",
            "\tTry 'su --help' for more information.",
            "Exited with error code 1",
            "\tThis account is currently not available.",
        ],
        instead: Dropped,
        why: "multi-word commands work and nologin users can run commands",
    },
    NotKept {
        scenario: "cfn-init/c-runas-nobody/cfn-init.log",
        messages: &[
            "Command a (id -u) failed",
            "Command a output: su: option requires an argument -- 'u'",
            "Try 'su --help' for more information.",
            "ignoreErrors set to true, continuing build",
            "Command b (echo hello world) failed",
            "Command b output: This account is currently not available.",
            "Error encountered during build of config: Command b failed",
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: Command b failed",
        ],
        instead: Dropped,
        why: "multi-word commands work and nologin users can run commands",
    },
    NotKept {
        scenario: "cfn-init/c-runas-root-string/cfn-init-cmd.log",
        messages: &[
            "\t",
            "\tsu: option requires an argument -- 'u'",
            "\tTry 'su --help' for more information.",
            "Exited with error code 1",
        ],
        instead: Dropped,
        why: "the whole command runs, not only its first word",
    },
    NotKept {
        scenario: "cfn-init/c-runas-root-string/cfn-init.log",
        messages: &[
            "Command a output: ",
            "Command b (id -u) failed",
            "Command b output: su: option requires an argument -- 'u'",
            "Try 'su --help' for more information.",
            "Error encountered during build of config: Command b failed",
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: Command b failed",
        ],
        instead: Dropped,
        why: "the whole command runs, not only its first word",
    },
    NotKept {
        scenario: "cfn-init/c-runas-root-list/cfn-init-cmd.log",
        messages: &[
            "-----------------------Command Output-----------------------",
            "\thello",
            "\tworld",
            "------------------------------------------------------------",
            "Completed successfully.",
        ],
        instead: Dropped,
        why: "a list is an argv for the user, as without runas",
    },
    NotKept {
        scenario: "cfn-init/c-runas-root-list/cfn-init.log",
        messages: &[
            "Command a succeeded",
            "Command a output: hello",
            "world",
            "",
            "No services specified",
            "ConfigSets completed",
            "Not clearing reboot trigger as scheduling support is not available",
            "-----------------------Build complete-----------------------",
        ],
        instead: Dropped,
        why: "a list is an argv for the user, as without runas",
    },
    NotKept {
        scenario: "cfn-init/c-runas-unknown/cfn-init-cmd.log",
        messages: &[
            "============================================================",
            "Command a",
            "-----------------------Command Output-----------------------",
            "\tsu: user no-such-user does not exist or the user entry does not contain all the required fields",
            "------------------------------------------------------------",
            "Exited with error code 1",
        ],
        instead: Dropped,
        why: "an unknown user is reported before the command starts",
    },
    NotKept {
        scenario: "cfn-init/c-runas-unknown/cfn-init.log",
        messages: &[
            "No test for command a",
            "Command a (true) failed",
            "Command a output: su: user no-such-user does not exist or the user entry does not contain all the required fields",
            "",
            "Error encountered during build of config: Command a failed",
            "Unhandled exception during build: Command a failed",
        ],
        instead: Dropped,
        why: "an unknown user is reported before the command starts",
    },
    NotKept {
        scenario: "cfn-init/c-env-non-string/cfn-init.log",
        messages: &[
            "-----------------------BUILD FAILED!------------------------",
            "Unhandled exception during build: execve() arg 3 contains a non-string value",
        ],
        instead: Dropped,
        why: "numbers in env are passed as text instead of crashing",
    },
    // cfn-hup (tests/golden/cfn-hup/reference-pass, replayed by tests/hup.rs): BUG-FALSY.
    NotKept {
        scenario: "cfn-hup/reference-pass/pass1.cfn-hup.log",
        messages: &[
            "No change in path Resources.Instance.Metadata.f for hook falsy",
            "No change in path Resources.Instance.Metadata.n for hook zero",
        ],
        instead: Dropped,
        why: "a path whose value is false, 0 or empty is data: its hook runs on the first pass (BUG-FALSY)",
    },
    NotKept {
        scenario: "cfn-hup/reference-pass/pass3.cfn-hup.log",
        messages: &["Previous state not found; action for falsy", "Previous state not found; action for zero"],
        instead: Dropped,
        why: "a path whose value is false, 0 or empty is data, so there is a previous state (BUG-FALSY)",
    },
    // A hook path cfn-hup does not support (tests/golden/cfn-hup/path-error, replayed by
    // tests/logs.rs): the reference ran the hooks before it and met the path on its turn.
    NotKept {
        scenario: "cfn-hup/path-error",
        messages: &[
            "Describing resource R in stack s",
            "ConnectionError",
            "Sleeping for ",
            "Exception caught while running hook h1",
        ],
        instead: Dropped,
        why: "every hook path is checked when the configuration is read, so an unsupported one stops cfn-hup \
              before any hook runs (HUP-CONF-03, WEAK-hup-errors)",
    },
    // The recorded configuration errors (tests/golden/reference-1.4-31/cfn-hup, replayed
    // by tests/logs.rs).
    NotKept {
        scenario: "reference-1.4-31/cfn-hup/config-badverbose",
        messages: &["CloudFormation client initialized with endpoint", "Creating /var/lib/cfn-hup/data"],
        instead: Dropped,
        why: "an invalid `verbose` is a configuration error found when cfn-hup.conf is read, before the client \
              and the state directory are made; the reference made both, then died with a Python traceback \
              (HUP-CONF-03)",
    },
    // The recorded apt runs (tests/golden/cfn-init-system/apt, replayed by
    // tests/init_system.rs) whose pinned version apt does not have as written.
    NotKept {
        scenario: "cfn-init-system/apt/prefix",
        messages: &[
            "cfn-tiny=1.0 will not be installed as it is already present",
            "All APT packages were already installed",
            "No groups specified",
            "No users specified",
            "No sources specified",
            "No files specified",
            "No commands specified",
            "No services specified",
            "ConfigSets completed",
            "Not clearing reboot trigger as scheduling support is not available",
            "-----------------------Build complete-----------------------",
        ],
        instead: Dropped,
        why: "apt needs the exact version: cfn-tiny=1.0 is not taken as installed when 1.0-1 is, and the build \
              fails there with `APT does not have cfn-tiny=1.0 available for installation` (INIT-PKG-07, \
              BUG-APTPREFIX)",
    },
    NotKept {
        scenario: "cfn-init-system/apt/missing-version",
        messages: &[
            "Attempting to install ['cfn-tiny=3.0'] via APT",
            "apt-get failed. Output:",
            "Error encountered during build of config: Could not successfully install APT packages (return code 100)",
            "Unhandled exception during build: Could not successfully install APT packages (return code 100)",
        ],
        instead: Dropped,
        why: "a version apt does not know fails before apt-get runs, with `APT does not have cfn-tiny=3.0 \
              available for installation` (INIT-PKG-07)",
    },
    // Managers the reference did not support (tests/golden/cfn-init-system/unsupported,
    // replayed by tests/init_system.rs).
    NotKept {
        scenario: "cfn-init-system/unsupported/managers",
        messages: &[
            "Unsupported package manager: zypper",
            "No groups specified",
            "No users specified",
            "No sources specified",
            "No files specified",
            "No commands specified",
            "Unsupported service manager: systemd",
            "Unsupported service manager: upstart",
            "ConfigSets completed",
            "Not clearing reboot trigger",
            "-----------------------Build complete-----------------------",
        ],
        instead: Dropped,
        why: "zypper is supported (INIT-PKG-10): its package is installed with zypper, and the build fails \
              there when the host has none; the lines of the build the reference went on with are not written",
    },
    // sources (tests/golden/cfn-init-sources, replayed by tests/init_sources_reference.rs).
    NotKept {
        scenario: "cfn-init-sources/s-github-tarball/cfn-init.log",
        messages: &["Creating temporary tar from {TMPDIR}/"],
        instead: Dropped,
        why: "the GitHub top directory is stripped while extracting: no temporary directory and tar are made",
    },
    NotKept {
        scenario: "cfn-init-sources/s-github-zipball/cfn-init.log",
        messages: &["Creating temporary tar from {TMPDIR}/"],
        instead: Dropped,
        why: "the GitHub top directory is stripped while extracting: no temporary directory and tar are made",
    },
    NotKept {
        scenario: "cfn-init-sources/s-traversal-prefix/cfn-init.log",
        messages: AFTER_A_REFUSED_ARCHIVE,
        instead: Dropped,
        why: "a member that escapes into a sibling whose name starts with the target's (../dest2/x) is refused: \\
              the build fails there (BUG-TRAVERSAL)",
    },
    NotKept {
        scenario: "cfn-init-sources/s-symlink-escape/cfn-init.log",
        messages: AFTER_A_REFUSED_ARCHIVE,
        instead: Dropped,
        why: "a symbolic link member leading out of the target is refused: the build fails there (BUG-SYMLINK)",
    },
    // Command hooks (tests/golden/cmd-hooks, replayed by tests/cmd_hooks_reference.rs).
    NotKept {
        scenario: "",
        messages: &["Action environment: {"],
        instead: Dropped,
        why: "the line shows only the command's variables, with RESULT_SECRET_KEY and RESULT_SESSION_TOKEN \
              masked; the reference logs its whole environment with both in clear (WEAK-secrets)",
    },
    NotKept {
        scenario: "cmd-hooks/success/cfn-hup.log",
        messages: &["Processing message: ", "Command message: "],
        instead: Dropped,
        why: "written with the presigned EventHandle's signature redacted (LOG-08)",
    },
    NotKept {
        scenario: "cmd-hooks/action-sends-event/cfn-hup.log",
        messages: &["Processing message: ", "Command message: "],
        instead: Dropped,
        why: "written with the presigned EventHandle's signature redacted (LOG-08)",
    },
    NotKept {
        scenario: "cmd-hooks/invalid-message/cfn-hup.log",
        messages: &["Invalid message, deleting: Message[MessageId:"],
        instead: Dropped,
        why: "written without the MD5 and the SQS attributes (a Python 2 dict repr); the reason is on the \
              ERROR line before it instead of a traceback",
    },
];

/// The message of a log line: the text after its `[LEVEL] ` (after time and pid).
fn message(line: &str) -> &str {
    for level in ["[DEBUG] ", "[INFO] ", "[WARNING] ", "[ERROR] ", "[CRITICAL] "] {
        if let Some(at) = line.find(level)
            && line[..at].split(' ').count() <= 4
        {
            return &line[at + level.len()..];
        }
    }
    line
}

/// The lines without Python tracebacks: `Traceback (most recent call last):`, the
/// indented frames, and the exception that ends it with the lines of its message (up
/// to the next log record).
fn without_tracebacks(lines: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_traceback = false;
    let mut in_exception = false;
    for line in lines {
        let record = message(line).len() < line.len();
        if line.starts_with("Traceback (most recent call last):") {
            in_traceback = true;
        } else if in_traceback {
            in_traceback = line.starts_with("  ");
            in_exception = !in_traceback;
        } else if in_exception && !record {
            // The exception's message goes on.
        } else {
            in_exception = false;
            out.push(line.as_str());
        }
    }
    out
}

/// Whether our line keeps the reference's: the same, or the same then `: <reason>`.
fn keeps(ours: &str, theirs: &str) -> bool {
    ours == theirs || ours.strip_prefix(theirs).is_some_and(|rest| rest.starts_with(": "))
}

/// What the check found: each reference line missing or out of order, and the
/// table's entries that were needed, as (entry, message) indices.
#[derive(Debug, Default)]
pub struct Check {
    pub failures: Vec<String>,
    pub excused: Vec<(usize, usize)>,
}

/// Checks that `ours` holds every line of `theirs` in order (see the module's doc),
/// excusing the lines `table` names for `scenario`.
pub fn check(scenario: &str, ours: &[String], theirs: &[String], table: &'static [NotKept]) -> Check {
    let ours_all = without_tracebacks(ours);
    let mut result = Check::default();
    let mut at = 0; // our lines before `at` are used up
    for (n, line) in without_tracebacks(theirs).into_iter().enumerate() {
        if let Some(found) = ours_all[at..].iter().position(|o| keeps(o, line)) {
            at += found + 1;
            continue;
        }
        // The message itself if the entry lists it, else one it starts with.
        let text = message(line);
        let names = |messages: &[&str]| {
            let starts = |m: &&str| !m.is_empty() && text.starts_with(m);
            messages.iter().position(|m| *m == text).or_else(|| messages.iter().position(starts))
        };
        let entry = table.iter().enumerate().find_map(|(i, e)| {
            let applies = e.scenario.is_empty() || e.scenario == scenario;
            applies.then(|| names(e.messages).map(|m| (i, m))).flatten()
        });
        match entry {
            Some((i, m)) if table[i].instead == Dropped || ours_all.iter().any(|o| keeps(o, line)) => {
                if !result.excused.contains(&(i, m)) {
                    result.excused.push((i, m));
                }
            }
            _ => {
                let how = if ours_all.iter().any(|o| keeps(o, line)) { "out of order" } else { "missing" };
                result.failures.push(format!("reference line {} {how}: {line}", n + 1));
            }
        }
    }
    result
}

/// How many log files [`failures`] checked, and how many of them needed [`NOT_KEPT`].
static CHECKED: AtomicUsize = AtomicUsize::new(0);
static EXCUSED: AtomicUsize = AtomicUsize::new(0);
/// The (entry, message) pairs of [`NOT_KEPT`] that excused a line.
static USED: Mutex<BTreeSet<(usize, usize)>> = Mutex::new(BTreeSet::new());

/// Each line of the reference's log `theirs` missing from ours or out of order that
/// [`NOT_KEPT`] does not name (empty: every line kept).
pub fn failures(scenario: &str, ours: &[String], theirs: &[String]) -> Vec<String> {
    let result = check(scenario, ours, theirs, NOT_KEPT);
    CHECKED.fetch_add(1, Ordering::Relaxed);
    if !result.excused.is_empty() {
        EXCUSED.fetch_add(1, Ordering::Relaxed);
    }
    USED.lock().unwrap_or_else(|e| e.into_inner()).extend(result.excused);
    result.failures.iter().map(|f| format!("{scenario}: {f}")).collect()
}

/// Fails when a line of the reference's log `theirs` is missing from ours or out of
/// order, unless [`NOT_KEPT`] names it.
pub fn assert_keeps_reference_lines(scenario: &str, ours: &[String], theirs: &[String]) {
    let failures = failures(scenario, ours, theirs);
    assert!(
        failures.is_empty(),
        "the reference's log lines are not all kept in order\n{}\n--- ours\n{}\n--- reference\n{}",
        failures.join("\n"),
        ours.join("\n"),
        theirs.join("\n")
    );
}

/// `log files checked: N, of which M kept only with NOT_KEPT entries`, for the tests'
/// output and docs/testing.md.
pub fn tally() -> String {
    let (checked, excused) = (CHECKED.load(Ordering::Relaxed), EXCUSED.load(Ordering::Relaxed));
    format!("reference log files checked line by line: {checked}, of which {excused} with a NOT_KEPT entry")
}

/// The [`NOT_KEPT`] messages of the scenarios `mine` selects that excused no line: a
/// test that has checked all its scenarios asserts there are none, so that the table
/// stays true.
pub fn unused(mine: impl Fn(&str) -> bool) -> Vec<String> {
    let used = USED.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    for (i, entry) in NOT_KEPT.iter().enumerate().filter(|(_, e)| mine(e.scenario)) {
        for (m, text) in entry.messages.iter().enumerate() {
            if !used.contains(&(i, m)) {
                out.push(format!("{:?}: {text:?}", entry.scenario));
            }
        }
    }
    out
}

/// `YYYY-MM-DD HH:MM:SS,mmm` → `{TIME}`, `P<pid>` → `P{PID}`, the root → `{ROOT}`,
/// retry sleeps → `{SECS}`; Python tracebacks (which we never print) are dropped.
pub fn normalise(text: &str, root: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_traceback = false;
    for line in text.replace(root, "{ROOT}").lines() {
        if line.starts_with("Traceback (most recent call last):") {
            in_traceback = true;
            continue;
        }
        if in_traceback {
            if !line.starts_with("  ") {
                in_traceback = false; // the exception line ends the traceback
            }
            continue;
        }
        let mut line = line.to_string();
        let b = line.as_bytes();
        if b.len() >= 23 && b[4] == b'-' && b[10] == b' ' && b[19] == b',' {
            line = format!("{{TIME}}{}", &line[23..]);
        }
        if let Some(rest) = line.strip_prefix("{TIME} P")
            && let Some((_, tail)) = rest.split_once(' ')
        {
            line = format!("{{TIME}} P{{PID}} {tail}");
        }
        if let Some(start) = line.find("Sleeping for ")
            && let Some(end) = line.find(" seconds before retrying")
        {
            line = format!("{}Sleeping for {{SECS}}{}", &line[..start], &line[end..]);
        }
        out.push(line);
    }
    out
}

/// The lines of `log` (a log file's text, already normalised).
pub fn lines(log: &str) -> Vec<String> {
    log.lines().map(str::to_string).collect()
}
