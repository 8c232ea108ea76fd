//! cfn-hup's configuration directory (HUP-CONF-01..03, HUP-HOOK-01..02): `cfn-hup.conf`
//! with its `[main]` section, and the hooks of `hooks.conf` plus the regular files in
//! `hooks.d/` but backups and temporary files (read in name order, later files overriding
//! earlier values): update hooks,
//! and command hooks (`triggers=on.command`, SPEC §14.7) whose `path` names the command.

use crate::ini::{Ini, IniError};
use crate::lifecycle::{self, LifecycleHook};
use crate::path::{HookPath, PathError};
use std::path::{Path, PathBuf};

pub const DEFAULT_REGION: &str = "us-east-1";
pub const DEFAULT_INTERVAL_MINUTES: u64 = 15;
pub const DEFAULT_UMASK: u32 = 0o022;
pub const DEFAULT_LIFECYCLE_INTERVAL_SECONDS: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("Could not find configuration at {0}")]
    NoDirectory(String),
    #[error("Could not find main configuration at {0}")]
    NoMainFile(String),
    #[error("[main] section must contain stack option")]
    NoStack,
    #[error("No hook configurations found at {0}/hooks.conf or {0}/hooks.d.")]
    NoHookFiles(String),
    #[error("No valid hooks found")]
    NoValidHooks,
    #[error("{0}")]
    Ini(#[from] IniError),
    #[error("{0}")]
    Path(#[from] PathError),
    #[error("Could not read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    /// ConfigParser's boolean words only (`1/yes/true/on`, `0/no/false/off`).
    #[error("Not a boolean: {0}")]
    NotBoolean(String),
    #[error("Invalid interval (must be 1 minute or greater): {0}")]
    IntervalTooShort(String),
    #[error("Invalid interval (must be a whole number of minutes): {0}")]
    IntervalNotInteger(String),
    #[error("Invalid max-backoff in {file} (must be a whole number of minutes, 1 or greater): {value}")]
    MaxBackoff { file: String, value: String },
    #[error("Invalid octal value specified for umask in config file: {0}")]
    Umask(String),
    #[error("Multiple hooks for the same command ({0})")]
    DuplicateCommand(String),
    /// A bad value of a key of a lifecycle hook (issue 32).
    #[error("{0}")]
    LifecycleKey(#[from] crate::lifecycle::hook::KeyError),
    #[error("Invalid triggers in {file}, section [{section}]: {reason}")]
    MixedTriggers { file: String, section: String, reason: String },
    #[error("Invalid lifecycle-interval in {file} (must be a whole number of seconds from 1 to 3600): {value}")]
    LifecycleInterval { file: String, value: String },
}

/// The `[main]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct MainConfig {
    pub stack: String,
    /// Takes precedence over `credential_file` (unlike the other tools' options).
    pub role: Option<String>,
    pub credential_file: Option<PathBuf>,
    pub region: String,
    pub url: Option<String>,
    /// The SQS endpoint of the command listener (HUP-CONF-01); wins over
    /// `$AWS_ENDPOINT_URL_SQS`. Without either, the region's endpoint.
    pub sqs_url: Option<String>,
    pub verbose: bool,
    /// `multi-threaded` (SPEC §10.11 booleans, default true). The listener handles one
    /// message at a time either way; the value only chooses the reference's log line.
    pub multi_threaded: bool,
    interval: Option<String>,
    umask: Option<String>,
    max_backoff: Option<String>,
    lifecycle_interval: Option<String>,
    /// `cfn-hup.conf`, named by the errors of the values checked only when used.
    file: PathBuf,
}

impl MainConfig {
    /// Every value only the service modes check (interval, max-backoff,
    /// lifecycle-interval, umask): any one refused stops the daemon at start-up.
    pub fn service_values(&self) -> Result<(), ConfigError> {
        self.interval_minutes()?;
        self.max_backoff_minutes()?;
        self.lifecycle_interval()?;
        self.umask().map(|_| ())
    }

    /// The polling interval in minutes (default 15, at least 1). Only daemon and
    /// foreground modes use it, so only they validate it.
    pub fn interval_minutes(&self) -> Result<u64, ConfigError> {
        let Some(text) = self.interval.as_deref() else {
            return Ok(DEFAULT_INTERVAL_MINUTES);
        };
        let value: i64 = text.trim().parse().map_err(|_| ConfigError::IntervalNotInteger(text.to_string()))?;
        if value < 1 {
            return Err(ConfigError::IntervalTooShort(text.to_string()));
        }
        Ok(value as u64)
    }

    /// `max-backoff`: the longest wait, in minutes, between two tries of an action that
    /// keeps failing for one value (default 60; at least 1; see [`crate::backoff`]).
    /// Checked, like the interval, only in daemon and foreground modes, which use it.
    pub fn max_backoff_minutes(&self) -> Result<u64, ConfigError> {
        let Some(text) = self.max_backoff.as_deref() else {
            return Ok(crate::backoff::DEFAULT_MAX_BACKOFF_MINUTES);
        };
        let invalid = || ConfigError::MaxBackoff { file: self.file.display().to_string(), value: text.to_string() };
        match text.trim().parse::<u64>() {
            Ok(minutes) if minutes >= 1 => Ok(minutes),
            _ => Err(invalid()),
        }
    }

    /// `lifecycle-interval`: how often, in seconds, the instance metadata's lifecycle
    /// items are polled when a lifecycle hook is configured (default 5, as AWS advises
    /// for Spot notices; 1 to 3600). Checked, like the interval, in the service modes.
    pub fn lifecycle_interval(&self) -> Result<std::time::Duration, ConfigError> {
        let Some(text) = self.lifecycle_interval.as_deref() else {
            return Ok(std::time::Duration::from_secs(DEFAULT_LIFECYCLE_INTERVAL_SECONDS));
        };
        match text.trim().parse::<u64>() {
            Ok(seconds) if (1..=3600).contains(&seconds) => Ok(std::time::Duration::from_secs(seconds)),
            _ => Err(ConfigError::LifecycleInterval { file: self.file.display().to_string(), value: text.to_string() }),
        }
    }

    /// The daemon's umask: `None` when the file sets none (then 022 applies). The value is
    /// always read as octal, as the reference did (`22` is 022).
    pub fn umask(&self) -> Result<Option<u32>, ConfigError> {
        let Some(text) = self.umask.as_deref() else {
            return Ok(None);
        };
        let prefixed = format!("0{}", text.trim());
        let digits = prefixed.strip_prefix("0o").or_else(|| prefixed.strip_prefix("0O")).unwrap_or(&prefixed);
        let digits = digits.trim_start_matches('0');
        let value = if digits.is_empty() {
            Some(0)
        } else if digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            u32::from_str_radix(digits, 8).ok()
        } else {
            None
        };
        match value {
            Some(v) if v <= 0o777 => Ok(Some(v)),
            Some(_) => Err(ConfigError::Umask(format!("{text} is greater than 0777"))),
            None => Err(ConfigError::Umask(format!("invalid literal for int() with base 8: '{prefixed}'"))),
        }
    }
}

/// A command hook: runs `action` when a command named `command` arrives (SPEC §14.7).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandHook {
    pub name: String,
    /// The hook's `path`: the command name it answers.
    pub command: String,
    pub action: String,
    pub runas: Option<String>,
    /// Only the listener that CloudFormation elects runs the command.
    pub singleton: bool,
    /// Whether the action's outcome is sent to the command's result queue.
    pub send_result: bool,
}

/// The reference's bool-ish values (SPEC §10.11): `true`, `yes`, `y` or `1`, trimmed and
/// in any case; everything else is false.
pub fn is_true(text: &str) -> bool {
    matches!(text.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "y" | "1")
}

/// An update hook.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub name: String,
    pub triggers: Vec<String>,
    pub path: HookPath,
    pub action: String,
    pub runas: Option<String>,
}

impl Hook {
    pub fn has_trigger(&self, trigger: &str) -> bool {
        self.triggers.iter().any(|t| t == trigger)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct HupConfig {
    pub dir: PathBuf,
    pub main: MainConfig,
    pub hooks: Vec<Hook>,
    pub command_hooks: Vec<CommandHook>,
    pub lifecycle_hooks: Vec<LifecycleHook>,
}

/// The hooks of the hook files, by kind.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hooks {
    pub update: Vec<Hook>,
    pub command: Vec<CommandHook>,
    pub lifecycle: Vec<LifecycleHook>,
    /// The sections cfn-hup leaves out, each with the reference's ERROR line logged.
    pub dropped: Vec<DroppedHook>,
}

/// A hook section cfn-hup leaves out for want of a key, where it is, and what the file
/// says instead when that explains it (issue 30: doctor names the file, the line and the
/// reason, where cfn-hup's log has only `No action specified for hook h`).
#[derive(Debug, Clone, PartialEq)]
pub struct DroppedHook {
    pub name: String,
    pub place: Option<crate::ini::Place>,
    /// The key it lacks: `triggers`, `path` or `action`.
    pub missing: &'static str,
    /// A misspelt key, or an indented line that continued another key's value.
    pub hint: Option<String>,
}

/// The keys a hook section may have (update, command and lifecycle hooks).
const HOOK_KEYS: &[&str] = &[
    "triggers",
    "path",
    "action",
    "runas",
    "singleton",
    "send_result",
    "timeout",
    "on-failure",
    "lifecycle-hook",
    "autoscaling-group",
];

impl DroppedHook {
    fn of(ini: &Ini, name: &str, missing: &'static str) -> DroppedHook {
        tracing::error!("No {missing} specified for hook {name}");
        DroppedHook {
            name: name.to_string(),
            place: ini.section_place(name),
            missing,
            hint: why_missing(ini, name, missing),
        }
    }
}

/// What in the section explains a missing key: a key cfn-hup does not know that is one
/// or two letters from it (`acton`), or a value whose continuation line sets it (an
/// indented `action=` line is part of the value before it, as ConfigParser reads it).
fn why_missing(ini: &Ini, name: &str, missing: &str) -> Option<String> {
    let entries = ini.entries(name);
    for (key, _, place) in &entries {
        if !HOOK_KEYS.contains(&key.as_str()) && edit_distance(key, missing) <= 2 {
            return Some(format!("line {} sets {key}, which cfn-hup does not know: {missing} misspelt?", place.line));
        }
    }
    for (key, value, place) in &entries {
        let continued = value
            .lines()
            .skip(1)
            .any(|line| line.strip_prefix(missing).is_some_and(|rest| rest.trim_start().starts_with(['=', ':'])));
        if continued {
            return Some(format!(
                "the line setting {missing} is indented, so it continues the value of {key} (line {}) instead",
                place.line
            ));
        }
    }
    None
}

/// Levenshtein distance, for names of a few letters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            previous = here;
        }
    }
    row[b.len()]
}

/// ConfigParser's `getboolean`.
pub fn parse_bool(text: &str) -> Result<bool, ConfigError> {
    match text.trim().to_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Ok(true),
        "0" | "no" | "false" | "off" => Ok(false),
        _ => Err(ConfigError::NotBoolean(text.to_string())),
    }
}

/// Reads `<dir>/cfn-hup.conf`.
pub fn load_main(dir: &Path) -> Result<MainConfig, ConfigError> {
    if !dir.is_dir() {
        return Err(ConfigError::NoDirectory(dir.display().to_string()));
    }
    let file = dir.join("cfn-hup.conf");
    if !file.is_file() {
        return Err(ConfigError::NoMainFile(file.display().to_string()));
    }
    let mut ini = Ini::new();
    ini.read_file(&file).map_err(|source| ConfigError::Read { path: file.display().to_string(), source })??;
    main_of(&ini, file)
}

/// The `[main]` settings of a cfn-hup.conf already read (`file` names it in errors): what
/// cfn-hup itself refuses at start-up, which `validate` reports for a cfn-hup.conf an Init
/// writes.
pub fn main_of(ini: &Ini, file: PathBuf) -> Result<MainConfig, ConfigError> {
    let get = |key: &str| -> Result<Option<String>, ConfigError> { Ok(ini.get("main", key)?) };
    let nonempty = |key: &str| -> Result<Option<String>, ConfigError> { Ok(get(key)?.filter(|v| !v.is_empty())) };
    let stack = nonempty("stack")?.ok_or(ConfigError::NoStack)?;
    let verbose = match get("verbose")? {
        Some(v) => parse_bool(&v)?,
        None => false,
    };
    Ok(MainConfig {
        stack,
        role: nonempty("role")?,
        credential_file: nonempty("credential-file")?.map(PathBuf::from),
        region: nonempty("region")?.unwrap_or_else(|| DEFAULT_REGION.to_string()),
        url: nonempty("url")?,
        sqs_url: nonempty("sqs_url")?,
        verbose,
        multi_threaded: get("multi-threaded")?
            .is_none_or(|v| cfn_python::truth::is_true(&serde_json::Value::String(v))),
        interval: get("interval")?,
        umask: get("umask")?,
        max_backoff: get("max-backoff")?,
        lifecycle_interval: get("lifecycle-interval")?,
        file,
    })
}

/// The hook files: `<dir>/hooks.conf`, then every regular file of `<dir>/hooks.d` by name
/// that an operator means as a hook file (see [`is_left_beside`]). Each file skipped is
/// logged once per reading.
pub fn hook_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let main = dir.join("hooks.conf");
    if main.is_file() {
        files.push(main);
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("hooks.d")) {
        let mut more: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
        more.sort();
        more.retain(|path| {
            let skipped = path.file_name().is_some_and(is_left_beside);
            if skipped {
                tracing::info!("Skipping {}: a hidden, backup or temporary file is not a hook file", path.display());
            }
            !skipped
        });
        files.extend(more);
    }
    files
}

/// Endings of the copies that editors, package managers and cfn-init leave beside a file
/// they change: cfn-init keeps `app.conf.bak` beside an updated `app.conf`, and since
/// later files win, the backup's old values would override the update (SEC-HOOKSD; the
/// reference reads them all, a deliberate difference).
const LEFT_BESIDE_ENDINGS: &[&str] =
    &[".bak", ".bak2", "~", ".swp", ".dpkg-old", ".dpkg-new", ".dpkg-dist", ".rpmnew", ".rpmsave", ".cfn-tmp"];

/// A name in `hooks.d` that is no operator's hook file: hidden (which includes the
/// temporary names of `cfn_host::temp_files`, `.<target>.<pid>.<n>.cfn-tmp`), or with
/// one of [`LEFT_BESIDE_ENDINGS`].
pub fn is_left_beside(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.starts_with(b".") || LEFT_BESIDE_ENDINGS.iter().any(|ending| name.ends_with(ending.as_bytes()))
}

/// Reads the hooks. Hooks missing a key are skipped with the reference's ERROR line; an
/// invalid update-hook path and two command hooks for one command are fatal (HUP-PATH-01).
pub fn load_hooks(dir: &Path) -> Result<Hooks, ConfigError> {
    let hooks = read_hooks(dir)?;
    if hooks.update.is_empty() && hooks.command.is_empty() && hooks.lifecycle.is_empty() {
        return Err(ConfigError::NoValidHooks);
    }
    Ok(hooks)
}

/// [`load_hooks`] without its last check: the hooks read and the sections left out, even
/// when none is left (what `doctor` shows).
pub fn read_hooks(dir: &Path) -> Result<Hooks, ConfigError> {
    let files = hook_files(dir);
    if files.is_empty() {
        return Err(ConfigError::NoHookFiles(dir.display().to_string()));
    }
    let mut ini = Ini::new();
    for file in &files {
        ini.read_file(file).map_err(|source| ConfigError::Read { path: file.display().to_string(), source })??;
    }
    let mut hooks = Hooks::default();
    // The commands of the command hooks so far: one set, not a walk of the list per hook.
    let mut commands = std::collections::HashSet::new();
    for name in ini.sections() {
        let Some(triggers) = ini.get(&name, "triggers")? else {
            hooks.dropped.push(DroppedHook::of(&ini, &name, "triggers"));
            continue;
        };
        let triggers: Vec<String> = triggers.split(',').map(|t| t.trim().to_string()).collect();
        // Lifecycle hooks (issue 32) watch the instance, not a path.
        match lifecycle::hook::triggers_of(&triggers) {
            Ok(None) => {}
            Ok(Some(lifecycle_triggers)) => {
                let Some(action) = ini.get(&name, "action")? else {
                    hooks.dropped.push(DroppedHook::of(&ini, &name, "action"));
                    continue;
                };
                let runas = ini.get(&name, "runas")?.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
                hooks.lifecycle.push(lifecycle::hook::read(&ini, &name, lifecycle_triggers, action, runas)?);
                continue;
            }
            Err(reason) => {
                let file = ini.file_of(&name, "triggers").unwrap_or_default();
                return Err(ConfigError::MixedTriggers { file, section: name, reason });
            }
        }
        let Some(path) = ini.get(&name, "path")? else {
            hooks.dropped.push(DroppedHook::of(&ini, &name, "path"));
            continue;
        };
        let Some(action) = ini.get(&name, "action")? else {
            hooks.dropped.push(DroppedHook::of(&ini, &name, "action"));
            continue;
        };
        let runas = ini.get(&name, "runas")?.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
        if triggers == ["on.command"] {
            let command = path.trim().to_string();
            if !commands.insert(command.clone()) {
                return Err(ConfigError::DuplicateCommand(command));
            }
            let singleton = ini.get(&name, "singleton")?.is_some_and(|v| is_true(&v));
            let send_result = ini.get(&name, "send_result")?.is_none_or(|v| is_true(&v));
            hooks.command.push(CommandHook { name, command, action, runas, singleton, send_result });
            continue;
        }
        hooks.update.push(Hook { path: HookPath::parse(&path)?, name, triggers, action, runas });
    }
    Ok(hooks)
}

/// The whole configuration directory, checked in the reference's order.
pub fn load(dir: &Path) -> Result<HupConfig, ConfigError> {
    let main = load_main(dir)?;
    let hooks = load_hooks(dir)?;
    Ok(HupConfig {
        dir: dir.to_path_buf(),
        main,
        hooks: hooks.update,
        command_hooks: hooks.command,
        lifecycle_hooks: hooks.lifecycle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    const HOOK: &str = "[h]\ntriggers=post.update\npath=Resources.A.Metadata\naction=true\n";

    #[test]
    fn a_section_left_out_is_named_with_its_place_and_why() {
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\n"),
            ("hooks.conf", "[typo]\ntriggers=post.update\npath=Resources.A.Metadata\nacton=true\n"),
            (
                "hooks.d/b.conf",
                "[indented]\ntriggers=post.update\npath=Resources.A.Metadata\n  action=true\n[bare]\npath=x\n",
            ),
        ]);
        let hooks = read_hooks(d.path()).unwrap();
        let dropped: Vec<(&str, &str, usize, Option<&str>)> = hooks
            .dropped
            .iter()
            .map(|h| (h.name.as_str(), h.missing, h.place.as_ref().unwrap().line, h.hint.as_deref()))
            .collect();
        assert_eq!(
            dropped,
            [
                ("typo", "action", 1, Some("line 4 sets acton, which cfn-hup does not know: action misspelt?")),
                (
                    "indented",
                    "action",
                    1,
                    Some("the line setting action is indented, so it continues the value of path (line 3) instead")
                ),
                ("bare", "triggers", 5, None),
            ]
        );
        assert!(hooks.dropped[1].place.as_ref().unwrap().file.ends_with("hooks.d/b.conf"));
        assert!(matches!(load_hooks(d.path()), Err(ConfigError::NoValidHooks)));
        assert_eq!(edit_distance("acton", "action"), 1);
        assert_eq!(edit_distance("", "path"), 4);
    }

    #[test]
    fn main_keys_defaults_and_validation() {
        let d = dir_with(&[("cfn-hup.conf", "[main]\nstack=s\n"), ("hooks.conf", HOOK)]);
        let c = load(d.path()).unwrap();
        assert_eq!(c.main.stack, "s");
        assert_eq!(c.main.region, "us-east-1");
        assert_eq!((c.main.interval_minutes().unwrap(), c.main.umask().unwrap(), c.main.verbose), (15, None, false));

        let main = |extra: &str| {
            let d = dir_with(&[("cfn-hup.conf", &format!("[main]\nstack=s\n{extra}"))]);
            load_main(d.path())
        };
        let m = main("interval=1\numask=027\nverbose=On\nrole=r\ncredential-file=/c\nregion=eu-west-1\nurl=http://x\n")
            .unwrap();
        assert_eq!((m.interval_minutes().unwrap(), m.umask().unwrap(), m.verbose), (1, Some(0o027), true));
        assert_eq!(
            (m.role.as_deref(), m.region.as_str(), m.url.as_deref()),
            (Some("r"), "eu-west-1", Some("http://x"))
        );
        assert_eq!(main("umask=22").unwrap().umask().unwrap(), Some(0o022));
        assert_eq!(main("umask=0").unwrap().umask().unwrap(), Some(0));
        assert_eq!(
            main("umask=0999").unwrap().umask().unwrap_err().to_string(),
            "Invalid octal value specified for umask in config file: invalid literal for int() with base 8: '00999'"
        );
        assert!(main("umask=1777").unwrap().umask().is_err());
        assert_eq!(
            main("interval=0").unwrap().interval_minutes().unwrap_err().to_string(),
            "Invalid interval (must be 1 minute or greater): 0"
        );
        assert!(main("interval=1.5").unwrap().interval_minutes().is_err());
        assert_eq!(main("verbose=maybe").unwrap_err().to_string(), "Not a boolean: maybe");
        assert_eq!(main("").unwrap().max_backoff_minutes().unwrap(), 60);
        assert_eq!(main("MAX-BACKOFF = 240 ").unwrap().max_backoff_minutes().unwrap(), 240);
        for bad in ["0", "-5", "1.5", "an hour", ""] {
            let d = dir_with(&[("cfn-hup.conf", &format!("[main]\nstack=s\nmax-backoff={bad}\n"))]);
            assert_eq!(
                load_main(d.path()).unwrap().max_backoff_minutes().unwrap_err().to_string(),
                format!(
                    "Invalid max-backoff in {}/cfn-hup.conf (must be a whole number of minutes, 1 or greater): {bad}",
                    d.path().display()
                )
            );
        }
        assert_eq!(main("region=").unwrap().region, "us-east-1");
    }

    #[test]
    fn directory_and_main_file_errors() {
        assert_eq!(
            load(Path::new("/nonexistent")).unwrap_err().to_string(),
            "Could not find configuration at /nonexistent"
        );
        let d = dir_with(&[]);
        assert_eq!(
            load(d.path()).unwrap_err().to_string(),
            format!("Could not find main configuration at {}/cfn-hup.conf", d.path().display())
        );
        let d = dir_with(&[("cfn-hup.conf", "[main]\nregion=x\n")]);
        assert_eq!(load(d.path()).unwrap_err().to_string(), "[main] section must contain stack option");
        let d = dir_with(&[("cfn-hup.conf", "[other]\nstack=x\n")]);
        assert_eq!(load(d.path()).unwrap_err().to_string(), "[main] section must contain stack option");
        let d = dir_with(&[("cfn-hup.conf", "[main]\nstack=x\n")]);
        let shown = d.path().display();
        assert_eq!(
            load(d.path()).unwrap_err().to_string(),
            format!("No hook configurations found at {shown}/hooks.conf or {shown}/hooks.d.")
        );
    }

    #[test]
    fn hooks_d_overrides_hooks_conf_and_every_file_counts() {
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\n"),
            ("hooks.conf", "[h]\ntriggers=post.update\npath=Resources.A.Metadata\naction=old\n"),
            ("hooks.d/b.conf", "[h]\naction=new\nrunas= nobody \n"),
            ("hooks.d/a", "[g]\ntriggers= post.add , post.remove\npath=Resources.B.PhysicalResourceId\naction=g\n"),
        ]);
        std::fs::create_dir(d.path().join("hooks.d/subdir")).unwrap();
        let c = load(d.path()).unwrap();
        let names: Vec<&str> = c.hooks.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["h", "g"]);
        assert_eq!((c.hooks[0].action.as_str(), c.hooks[0].runas.as_deref()), ("new", Some("nobody")));
        assert_eq!(c.hooks[1].triggers, ["post.add", "post.remove"]);
        assert!(c.hooks[1].has_trigger("post.remove") && !c.hooks[1].has_trigger("post.update"));
        // Backups and temporary files beside a hook file are not read (SEC-HOOKSD).
        for left in
            ["b.conf.bak", "b.conf~", ".b.conf.swp", ".b.conf.1234.0.cfn-tmp", "b.conf.rpmsave", "b.conf.dpkg-old"]
        {
            std::fs::write(d.path().join("hooks.d").join(left), "[h]\naction=old\nrunas=root\n").unwrap();
        }
        let c = load(d.path()).unwrap();
        assert_eq!((c.hooks[0].action.as_str(), c.hooks[0].runas.as_deref()), ("new", Some("nobody")));
        // hooks.d alone is enough.
        let d = dir_with(&[("cfn-hup.conf", "[main]\nstack=s\n"), ("hooks.d/x", HOOK)]);
        assert_eq!(load(d.path()).unwrap().hooks.len(), 1);
    }

    #[test]
    fn command_hooks_are_read_with_their_flags() {
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\n"),
            (
                "hooks.conf",
                "[a]\ntriggers=on.command\npath= deploy \naction=run it\nrunas=nobody\nsingleton=Yes\n\
                 [b]\ntriggers= on.command\npath=other\naction=x\nsend_result=false\nsingleton=nope\n\
                 [c]\ntriggers=on.command,post.add\npath=Resources.A\naction=u\n",
            ),
        ]);
        let c = load(d.path()).unwrap();
        assert_eq!(
            c.command_hooks,
            [
                CommandHook {
                    name: "a".into(),
                    command: "deploy".into(),
                    action: "run it".into(),
                    runas: Some("nobody".into()),
                    singleton: true,
                    send_result: true
                },
                CommandHook {
                    name: "b".into(),
                    command: "other".into(),
                    action: "x".into(),
                    runas: None,
                    singleton: false,
                    send_result: false
                },
            ]
        );
        // Only triggers of exactly `on.command` make a command hook.
        assert_eq!(c.hooks.len(), 1);
        // Command hooks alone are valid hooks.
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\n"),
            ("hooks.conf", "[a]\ntriggers=on.command\npath=x\naction=y\n"),
        ]);
        let c = load(d.path()).unwrap();
        assert_eq!((c.hooks.len(), c.command_hooks.len()), (0, 1));
    }

    #[test]
    fn lifecycle_hooks_need_no_path_and_their_keys_are_checked() {
        use crate::lifecycle::{LifecycleResult, Trigger};
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\nlifecycle-interval=2\n"),
            (
                "hooks.d/drain.conf",
                "[drain]\ntriggers=on.asg.terminate\naction=drain.sh\ntimeout=600\nrunas=nobody\n\
                 [ready]\ntriggers=on.asg.launch\naction=check\non-failure=CONTINUE\nlifecycle-hook=ready-hook\n\
                 autoscaling-group= web \n[spot]\ntriggers=on.spot.interruption, on.rebalance,on.maintenance\naction=x\n",
            ),
        ]);
        let c = load(d.path()).unwrap();
        assert!(c.hooks.is_empty() && c.command_hooks.is_empty());
        assert_eq!(c.main.lifecycle_interval().unwrap(), std::time::Duration::from_secs(2));
        let [drain, ready, spot] = &c.lifecycle_hooks[..] else { panic!("{:?}", c.lifecycle_hooks) };
        assert_eq!(
            (drain.triggers.as_slice(), drain.timeout),
            (&[Trigger::AsgTerminate][..], Some(std::time::Duration::from_secs(600)))
        );
        assert_eq!(drain.on_failure_for(Trigger::AsgTerminate), LifecycleResult::Continue);
        assert_eq!(drain.runas.as_deref(), Some("nobody"));
        assert_eq!(ready.on_failure_for(Trigger::AsgLaunch), LifecycleResult::Continue);
        assert_eq!(
            (ready.lifecycle_hook.as_deref(), ready.autoscaling_group.as_deref()),
            (Some("ready-hook"), Some("web"))
        );
        assert_eq!(spot.triggers, [Trigger::SpotInterruption, Trigger::Rebalance, Trigger::Maintenance]);
        assert_eq!(Trigger::AsgLaunch.default_on_failure(), LifecycleResult::Abandon);

        let file = d.path().join("hooks.d/drain.conf");
        let refused = |hook: &str| {
            std::fs::write(&file, hook).unwrap();
            load(d.path()).unwrap_err().to_string()
        };
        let shown = file.display();
        assert_eq!(
            refused("[d]\ntriggers=on.asg.terminate\naction=x\ntimeout=0\n"),
            format!("Invalid timeout in {shown}, section [d] (must be a whole number of seconds from 1 to 172800): 0")
        );
        assert_eq!(
            refused("[d]\ntriggers=on.asg.terminate\naction=x\non-failure=retry\n"),
            format!("Invalid on-failure in {shown}, section [d] (must be continue or abandon): retry")
        );
        assert_eq!(
            refused("[d]\ntriggers=on.rebalance\naction=x\non-failure=abandon\n"),
            format!(
                "Invalid on-failure in {shown}, section [d] (only on.asg.launch and on.asg.terminate hooks complete): abandon"
            )
        );
        assert!(
            refused("[d]\ntriggers=on.maintenance\naction=x\nlifecycle-hook=h\n")
                .starts_with("Invalid lifecycle-hook in")
        );
        assert!(
            refused("[d]\ntriggers=on.asg.launch\naction=x\nautoscaling-group=\n")
                .starts_with("Invalid autoscaling-group in")
        );
        assert_eq!(
            refused("[d]\ntriggers=on.asg.launch,post.update\npath=Resources.A\naction=x\n"),
            format!("Invalid triggers in {shown}, section [d]: post.update cannot be combined with lifecycle triggers")
        );
        // A lifecycle hook with no action is skipped like any other.
        assert_eq!(refused("[d]\ntriggers=on.asg.launch\n"), "No valid hooks found");
        for bad in ["0", "3601", "1.5", "soon"] {
            let d = dir_with(&[("cfn-hup.conf", &format!("[main]\nstack=s\nlifecycle-interval={bad}\n"))]);
            assert_eq!(
                load_main(d.path()).unwrap().lifecycle_interval().unwrap_err().to_string(),
                format!(
                    "Invalid lifecycle-interval in {}/cfn-hup.conf (must be a whole number of seconds from 1 to 3600): {bad}",
                    d.path().display()
                )
            );
        }
        let d = dir_with(&[("cfn-hup.conf", "[main]\nstack=s\n")]);
        assert_eq!(load_main(d.path()).unwrap().lifecycle_interval().unwrap(), std::time::Duration::from_secs(5));
    }

    #[test]
    fn invalid_hooks_are_skipped_and_bad_paths_are_fatal() {
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\n"),
            (
                "hooks.conf",
                "[a]\npath=Resources.A\naction=x\n[b]\ntriggers=post.add\naction=x\n[c]\ntriggers=x\npath=Resources.A\n",
            ),
        ]);
        assert_eq!(load(d.path()).unwrap_err().to_string(), "No valid hooks found");
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\n"),
            ("hooks.conf", "[a]\ntriggers=post.add\npath=Stack.A\naction=x\n"),
        ]);
        assert_eq!(
            load(d.path()).unwrap_err().to_string(),
            "Unsupported path: only changes to Resources are supported (path: Stack.A)"
        );
        let d = dir_with(&[
            ("cfn-hup.conf", "[main]\nstack=s\n"),
            (
                "hooks.conf",
                "[a]\ntriggers=on.command\npath=deploy\naction=x\n[b]\ntriggers=on.command\npath= deploy\naction=y\n",
            ),
        ]);
        assert_eq!(load(d.path()).unwrap_err().to_string(), "Multiple hooks for the same command (deploy)");
        let d = dir_with(&[("cfn-hup.conf", "[main]\nstack=s\n"), ("hooks.conf", "triggers=x\n")]);
        assert!(load(d.path()).unwrap_err().to_string().starts_with("File contains no section headers."));
    }
}
