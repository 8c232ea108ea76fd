//! cfn-hup's configuration, read as cfn-hup reads it (`cfn_hooks::config`): the `[main]`
//! keys and the credential file's mode and owner, every hook file and the files of
//! `hooks.d` that are skipped and why, and each hook's triggers, `runas` user and the
//! program its action starts.

use super::{Check, Context};
use cfn_hooks::config::{self, ConfigError, HupConfig, MainConfig};
use cfn_hooks::ini::{Ini, IniError};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The triggers of update hooks.
const UPDATE_TRIGGERS: &[&str] = &["post.add", "post.update", "post.remove"];

pub fn main_file(ctx: &Context) -> PathBuf {
    ctx.conf_dir.join("cfn-hup.conf")
}

/// cfn-hup's whole configuration, when it is there and valid.
pub fn config(ctx: &Context) -> Option<HupConfig> {
    config::load(&ctx.conf_dir).ok()
}

pub fn checks(ctx: &Context) -> Vec<Check> {
    let file = main_file(ctx);
    if !file.is_file() {
        let why = match &ctx.stack {
            Some(stack) => format!("no {}: cfn-hup is not set up here (checking stack {stack} only)", file.display()),
            None => format!(
                "no {}: cfn-hup is not set up here (give --stack and --resource to check cfn-init)",
                file.display()
            ),
        };
        return vec![Check::skipped("hup.config", why)];
    }
    let main = match config::load_main(&ctx.conf_dir) {
        Ok(main) => main,
        // The daemon's words (ConfigParser's) do not say which key: only `verbose` is a
        // boolean that stops it.
        Err(e @ ConfigError::NotBoolean(_)) => {
            return vec![Check::failed(
                "hup.config",
                format!("{e}: the value of verbose in [main] of {} is not a boolean", file.display()),
                format!("set verbose=true or verbose=false in {}", file.display()),
            )];
        }
        Err(e) => {
            return vec![Check::failed(
                "hup.config",
                shown_error(&e, &[file.as_path()]),
                format!("correct {}", file.display()),
            )];
        }
    };
    let mut checks = vec![Check::ok(
        "hup.config",
        format!(
            "{}: stack {}, region {}, {}",
            file.display(),
            main.stack,
            main.region,
            // The URL may carry a user and password: shown as every URL is (SEC-02).
            main.url.as_deref().map_or_else(
                || "the region's endpoint".to_string(),
                |u| format!("url {}", cfn_aws::http::redact_url(u))
            )
        ),
    )];
    checks.push(match main.interval_minutes() {
        Ok(minutes) => Check::ok("hup.interval", format!("a pass every {minutes} minute(s)")),
        Err(e) => Check::failed(
            "hup.interval",
            e.to_string(),
            format!("set interval to a whole number of minutes in {}", file.display()),
        ),
    });
    // The other values the daemon checks before it starts, by the daemon's own readers: a
    // value it refuses means cfn-hup never starts (issue 30).
    checks.push(match main.umask() {
        Ok(Some(umask)) => Check::ok("hup.umask", format!("umask {umask:03o}")),
        Ok(None) => Check::ok("hup.umask", format!("umask {:03o} (the default)", config::DEFAULT_UMASK)),
        Err(e) => Check::failed(
            "hup.umask",
            format!("{e}: cfn-hup refuses to start"),
            format!("set umask to an octal value such as 022 in {}", file.display()),
        ),
    });
    checks.push(match main.max_backoff_minutes() {
        Ok(minutes) => {
            Check::ok("hup.max-backoff", format!("a failing action is retried at least every {minutes} minute(s)"))
        }
        Err(e) => Check::failed(
            "hup.max-backoff",
            format!("{e}: cfn-hup refuses to start"),
            format!("set max-backoff to a whole number of minutes in {}", file.display()),
        ),
    });
    checks.push(credentials(&main));
    checks.extend(hook_files(ctx));
    checks
}

/// `role` or `credential-file`: the file must exist and be private to its owner, root or
/// the user cfn-hup runs as.
fn credentials(main: &MainConfig) -> Check {
    let id = "hup.credentials";
    if let Some(role) = &main.role {
        let ignored =
            main.credential_file.as_ref().map(|f| format!(" ({} is not used)", f.display())).unwrap_or_default();
        return Check::ok(id, format!("role {role}: the instance profile's credentials{ignored}"));
    }
    let Some(file) = &main.credential_file else {
        return Check::ok(id, "no role or credential-file: the usual credential sources, then the instance identity");
    };
    let meta = match std::fs::metadata(file) {
        Ok(meta) => meta,
        Err(e) => {
            return Check::failed(
                id,
                format!("credential-file {}: {}", file.display(), cfn_python::strerror(&e)),
                "create it (AWSAccessKeyId=…, AWSSecretKey=…, mode 0600) or correct credential-file",
            );
        }
    };
    let mode = meta.mode() & 0o777;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != 0 && meta.uid() != me {
        let owner = cfn_host::users::user_name(meta.uid()).unwrap_or_else(|| meta.uid().to_string());
        return Check::failed(
            id,
            format!("credential-file {} is owned by {owner}, not root or the user cfn-hup runs as", file.display()),
            format!("chown root {}", file.display()),
        );
    }
    if mode & 0o077 != 0 {
        let who = match (mode & 0o070 != 0, mode & 0o007 != 0) {
            (true, true) => "its group and others",
            (true, false) => "its group",
            _ => "others",
        };
        return Check::failed(
            id,
            format!("credential-file {} is open to {who} (mode {mode:04o})", file.display()),
            format!("chmod 600 {}", file.display()),
        );
    }
    match cfn_aws::credentials::read_credential_file(file) {
        Ok(_) => Check::ok(id, format!("credential-file {} (mode {mode:04o})", file.display())),
        Err(e) => Check::failed(
            id,
            format!("credential-file {}: {e}", file.display()),
            "write AWSAccessKeyId=… and AWSSecretKey=… lines into it",
        ),
    }
}

/// Every hook file (each must parse), the files of `hooks.d` left out, then the hooks.
fn hook_files(ctx: &Context) -> Vec<Check> {
    let dir = &ctx.conf_dir;
    let mut checks = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir.join("hooks.d")) {
        let entries: Vec<_> = entries.flatten().collect();
        // A link to nothing is no file to cfn-hup, which skips it without a word.
        let mut dangling: Vec<_> = entries
            .iter()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()) && !e.path().exists())
            .map(|e| e.path())
            .collect();
        dangling.sort();
        for link in dangling {
            let name = link.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let target = std::fs::read_link(&link).map(|t| t.display().to_string()).unwrap_or_default();
            checks.push(Check::failed(
                format!("hup.skipped:{name}"),
                format!("hooks.d/{name} is a link to {target}, which does not exist: cfn-hup skips it, with its hooks"),
                format!("restore {target}, or point {} at the hook file", link.display()),
            ));
        }
        let mut names: Vec<_> = entries.iter().filter(|e| e.path().is_file()).map(|e| e.file_name()).collect();
        names.sort();
        for name in names.into_iter().filter(|n| config::is_left_beside(n)) {
            let name = name.to_string_lossy();
            checks.push(Check::ok(
                format!("hup.skipped:{name}"),
                format!("hooks.d/{name} skipped: {} (cfn-hup does not read it)", left_beside_kind(&name)),
            ));
        }
    }
    let files = config::hook_files(dir);
    for file in &files {
        let shown = file.strip_prefix(dir).unwrap_or(file).display().to_string();
        let parsed = Ini::new().read_file(file);
        checks.push(match parsed {
            Ok(Ok(())) => Check::ok(format!("hup.hook_file:{shown}"), format!("{} parses", file.display())),
            Ok(Err(e)) => {
                let e = ConfigError::Ini(e);
                Check::failed(
                    format!("hup.hook_file:{shown}"),
                    shown_error(&e, &[file.as_path()]),
                    format!("correct {}", file.display()),
                )
            }
            Err(e) => Check::failed(
                format!("hup.hook_file:{shown}"),
                format!("could not read {}: {}", file.display(), cfn_python::strerror(&e)),
                format!("make {} readable by root", file.display()),
            ),
        });
    }
    let hooks = match config::read_hooks(dir) {
        Ok(hooks) => hooks,
        Err(e @ ConfigError::NoHookFiles(_)) => {
            checks.push(Check::warning(
                "hup.hooks",
                e.to_string(),
                format!("add hooks to {}/hooks.conf", dir.display()),
            ));
            return checks;
        }
        Err(e) => {
            let read: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
            checks.push(Check::failed("hup.hooks", shown_error(&e, &read), "correct the hook files"));
            return checks;
        }
    };
    // Each section cfn-hup leaves out, where it is and why (its log says only which key).
    for dropped in &hooks.dropped {
        let at = dropped.place.as_ref().map_or_else(String::new, |p| format!("{}:{}: ", p.file, p.line));
        let file = dropped.place.as_ref().map_or("the hook files", |p| p.file.as_str());
        let why = dropped.hint.as_ref().map_or_else(String::new, |hint| format!("; {hint}"));
        checks.push(Check::failed(
            format!("hook.dropped:{}", dropped.name),
            format!(
                "{at}hook {} has no {}: cfn-hup leaves it out (\"No {} specified for hook {}\"){why}",
                dropped.name, dropped.missing, dropped.missing, dropped.name
            ),
            format!("set {}= in [{}] of {file}, at the start of its line", dropped.missing, dropped.name),
        ));
    }
    if hooks.update.is_empty() && hooks.command.is_empty() && hooks.lifecycle.is_empty() {
        let e = ConfigError::NoValidHooks;
        checks.push(Check::failed(
            "hup.hooks",
            format!("{e}: cfn-hup does not start"),
            "correct the hooks named above",
        ));
        return checks;
    }
    let mut found = format!("{} update hook(s), {} command hook(s)", hooks.update.len(), hooks.command.len());
    if !hooks.lifecycle.is_empty() {
        found.push_str(&format!(", {} lifecycle hook(s)", hooks.lifecycle.len()));
    }
    checks.push(Check::ok("hup.hooks", found));
    let path = std::env::var_os("PATH").unwrap_or_default();
    for hook in &hooks.update {
        let known: Vec<&str> =
            hook.triggers.iter().map(String::as_str).filter(|t| UPDATE_TRIGGERS.contains(t)).collect();
        let id = format!("hook.triggers:{}", hook.name);
        checks.push(if known.is_empty() {
            Check::warning(
                id,
                format!("no known trigger ({}): its action never runs", hook.triggers.join(",")),
                format!("set triggers to some of {} in hook {}", UPDATE_TRIGGERS.join(","), hook.name),
            )
        } else {
            Check::ok(id, format!("{} on {}", known.join(","), hook.path.text))
        });
        checks.extend(runs(&hook.name, hook.runas.as_deref(), &hook.action, &path));
    }
    for hook in &hooks.command {
        checks.push(Check::ok(format!("hook.triggers:{}", hook.name), format!("on.command {}", hook.command)));
        checks.extend(runs(&hook.name, hook.runas.as_deref(), &hook.action, &path));
    }
    for hook in &hooks.lifecycle {
        let triggers: Vec<&str> = hook.triggers.iter().map(|t| t.name()).collect();
        checks.push(Check::ok(format!("hook.triggers:{}", hook.name), triggers.join(",")));
        checks.extend(runs(&hook.name, hook.runas.as_deref(), &hook.action, &path));
    }
    checks
}

/// A configuration error as doctor shows it. The reader's errors quote the line they
/// stopped at; that line is shown only from a file anyone may read anyway — owned by root
/// and readable by all (what a link leads to, since cfn-hup reads hook files through
/// links, as it reads every regular file of `hooks.d`). A hook file linked to a
/// root-only file (a shadow file) must not have its first line printed by doctor.
fn shown_error(error: &ConfigError, files: &[&Path]) -> String {
    let withheld = |file: &str| format!("(the line is not shown: {file} is not owned by root and readable by all)");
    match error {
        ConfigError::Ini(IniError::MissingSectionHeader { file, line, .. }) if !quotable(Path::new(file)) => {
            format!("File contains no section headers: file {file}, line {line} {}", withheld(file))
        }
        ConfigError::Ini(IniError::Parse { file, line, .. }) if !quotable(Path::new(file)) => {
            format!("File contains parsing errors: {file}, line {line} {}", withheld(file))
        }
        // A substitution's reason quotes the value, and does not say which file it is in.
        ConfigError::Ini(IniError::Interpolation { section, key, .. }) if !files.iter().all(|file| quotable(file)) => {
            format!(
                "Bad value substitution: section [{section}], option {key} (the value is not shown: a file read is \
                 not owned by root and readable by all)"
            )
        }
        _ => error.to_string(),
    }
}

/// Whether lines of `file` may be quoted: it is owned by root and readable by others.
fn quotable(file: &Path) -> bool {
    std::fs::metadata(file).is_ok_and(|meta| meta.uid() == 0 && meta.mode() & 0o004 != 0)
}

/// Why `is_left_beside` leaves a name out, in words.
fn left_beside_kind(name: &str) -> &'static str {
    if name.ends_with(".cfn-tmp") {
        "a temporary file"
    } else if name.starts_with('.') {
        "a hidden file"
    } else if name.ends_with(".bak") || name.ends_with(".bak2") || name.ends_with('~') {
        "a backup file"
    } else if name.ends_with(".swp") {
        "an editor's swap file"
    } else {
        "a package manager's copy"
    }
}

/// The hook's `runas` user exists, and the program its action starts is there.
fn runs(hook: &str, runas: Option<&str>, action: &str, path: &std::ffi::OsStr) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(user) = runas {
        let id = format!("hook.runas:{hook}");
        checks.push(match cfn_host::users::user(user) {
            Some(found) => Check::ok(id, format!("runas {user} (uid {})", found.uid)),
            None => Check::failed(
                id,
                format!("runas user {user} does not exist"),
                format!("create the user {user}, or change runas in hook {hook}"),
            ),
        });
    }
    let id = format!("hook.action:{hook}");
    let Some(program) = first_word(action) else {
        checks.push(Check::failed(id, "the action is empty", format!("set action in hook {hook}")));
        return checks;
    };
    checks.push(if SHELL_WORDS.contains(&program.as_str()) {
        Check::ok(id, format!("{program}: a shell built-in"))
    } else if program.contains('/') {
        match executable(Path::new(&program)) {
            Ok(()) => startable(id, &program, Path::new(&program), format!("{program} is executable")),
            Err(why) => {
                Check::failed(id, format!("{program} {why}"), format!("install it, or correct action in hook {hook}"))
            }
        }
    } else {
        match super::install::find_on_path(&program, path) {
            Some(found) => startable(id, &program, &found, format!("{program} is {}", found.display())),
            None => Check::failed(
                id,
                format!("{program} is not on PATH"),
                format!("install it, or give its full path in action of hook {hook}"),
            ),
        }
    });
    checks
}

/// Words the shell runs itself.
const SHELL_WORDS: &[&str] = &[
    ".", ":", "[", "cd", "echo", "eval", "exec", "exit", "export", "false", "if", "printf", "set", "test", "true",
    "umask", "{", "(",
];

/// The program an action (a `/bin/sh -c` command line) starts: its first word after any
/// `NAME=value` assignments, unquoted.
fn first_word(action: &str) -> Option<String> {
    action
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .find(|w| !is_assignment(w))
        .map(str::to_string)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !name.as_bytes()[0].is_ascii_digit()
    })
}

/// A script whose `#!` line ends in a carriage return (a file saved with Windows line
/// endings): the kernel looks for an interpreter whose name ends in `\r` and the action
/// fails with "No such file or directory" though the file is there. Only the first line
/// is read (at most 256 bytes), and nothing of it is shown.
fn startable(id: String, program: &str, file: &Path, ok: String) -> Check {
    use std::io::Read;
    let mut head = [0u8; 256];
    let read = std::fs::File::open(file).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let first_line = head[..read].split(|b| *b == b'\n').next().unwrap_or_default();
    if first_line.starts_with(b"#!") && first_line.ends_with(b"\r") && read > first_line.len() {
        return Check::failed(
            id,
            format!(
                "{program} is a script whose #! line ends with a Windows line ending (\\r): it cannot start \
                 (\"No such file or directory\")"
            ),
            format!("convert it to Unix line endings: sed -i 's/\\r$//' {}", file.display()),
        );
    }
    Check::ok(id, ok)
}

fn executable(file: &Path) -> Result<(), &'static str> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(file) {
        Err(_) => Err("does not exist"),
        Ok(m) if !m.is_file() => Err("is not a file"),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err("is not executable"),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_credential_file_is_judged_by_its_mode_and_its_keys() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("creds");
        std::fs::write(
            dir.path().join("cfn-hup.conf"),
            format!("[main]\nstack=s\ncredential-file={}\n", creds.display()),
        )
        .unwrap();
        let judged = || credentials(&config::load_main(dir.path()).unwrap());
        assert!(judged().found.ends_with(": No such file or directory"), "{}", judged().found);
        std::fs::write(&creds, "AWSAccessKeyId=a\n").unwrap();
        std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o604)).unwrap();
        assert_eq!(judged().found, format!("credential-file {} is open to others (mode 0604)", creds.display()));
        std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).unwrap();
        let missing = judged();
        assert_eq!(missing.verdict, super::super::Verdict::Failed);
        assert!(
            missing.found.ends_with("must contain the keys 'AWSAccessKeyId' and 'AWSSecretKey'"),
            "{}",
            missing.found
        );
        std::fs::write(&creds, "AWSAccessKeyId=a\nAWSSecretKey=b\n").unwrap();
        assert_eq!(judged().verdict, super::super::Verdict::Ok);
    }

    #[test]
    fn a_script_with_a_windows_line_ending_after_its_shebang_cannot_start() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("drain.sh");
        let judged = |text: &str| {
            std::fs::write(&script, text).unwrap();
            startable("hook.action:h".into(), "drain.sh", &script, "fine".into())
        };
        let crlf = judged("#!/bin/sh\r\necho hi\r\n");
        assert_eq!(crlf.verdict, super::super::Verdict::Failed);
        assert!(crlf.found.contains("Windows line ending"), "{}", crlf.found);
        assert!(crlf.fix.unwrap().starts_with("convert it to Unix line endings: sed -i"));
        assert_eq!(judged("#!/bin/sh\necho hi\r\n").verdict, super::super::Verdict::Ok);
        assert_eq!(judged("\x7fELF\r\n").verdict, super::super::Verdict::Ok);
    }

    #[test]
    fn the_program_of_an_action_is_its_first_word_after_assignments() {
        assert_eq!(first_word("  /opt/aws/bin/cfn-init -v --stack s").as_deref(), Some("/opt/aws/bin/cfn-init"));
        assert_eq!(first_word("A=1 B_2=x 'systemctl' restart").as_deref(), Some("systemctl"));
        assert_eq!(first_word("   "), None);
        assert!(!is_assignment("--opt=1") && !is_assignment("1A=2") && is_assignment("_x="));
        assert_eq!(left_beside_kind("restart.conf.bak"), "a backup file");
        assert_eq!(left_beside_kind(".a.conf.1.0.cfn-tmp"), "a temporary file");
        assert_eq!(left_beside_kind("a.conf.rpmsave"), "a package manager's copy");
    }
}
