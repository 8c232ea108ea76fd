//! Static checks of a parsed [`InitDocument`]: everything cfn-init would refuse, found
//! without running anything, and what works but is suspect. Each finding has a stable
//! code (documented in the README), the JSON pointer it is about, and the text cfn-init
//! prints where it has one.
//!
//! Metadata resolved from a template without every value holds *unknowns*
//! ([`cfn_template::unknown`]). A check that needs a value (a URL's scheme, base64, a
//! Mustache template, a mode, an authentication's name, …) skips a value holding one and
//! says so in [`Checked::skipped`]; what the known part of a value decides is still
//! checked (`s3://${Bucket}/key` is an s3 URL whatever the bucket). An unknown never
//! produces a finding that some value could not produce.

use cfn_aws::auth::{AuthBlock, Authentication, S3Auth, S3Keys};
use cfn_configsets::configsets::ConfigSets;
use cfn_configsets::document::{
    CommandEntry, InitDocument, Item, ManagerPackages, SERVICE_MANAGERS, Section, Sections,
};
use cfn_configsets::locations::pointer_step;
use cfn_configsets::model::{Content, FileSpec, ModelError};
use cfn_configsets::tool::refuse_option_like;
use cfn_template::unknown;
use serde_json::Value;
use std::collections::HashSet;

/// The system an Init is for, which decides what an absolute path is and which package
/// and service managers cfn-init has (AWS ships one cfn-init for Linux and one for
/// Windows; the Windows one has `msi` and `windows` services, and Windows paths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    Windows,
}

impl Platform {
    /// What the Init itself says: a file or source at a drive or UNC path makes it
    /// Windows's, one at a `/` path Linux's; with neither, `msi` packages or `windows`
    /// services make it Windows's. (The user data's `cfn-init.exe` says so too; the
    /// caller knows that.)
    pub fn of(document: &InitDocument) -> Platform {
        let sections: Vec<&Sections> =
            document.configs.iter().filter_map(|config| config.sections.as_ref().ok()).collect();
        let paths = || {
            sections.iter().flat_map(|s| {
                let files = s.files.entries().iter().map(|file| file.key.as_str());
                files.chain(s.sources.entries().iter().map(|source| source.key.as_str()))
            })
        };
        if paths().any(is_windows_path) {
            return Platform::Windows;
        }
        let windows_only = sections.iter().any(|s| {
            s.packages.entries().iter().any(|m| matches!(m.spec, Ok(ManagerPackages::Msi { listed: true })))
                || s.services.entries().iter().any(|m| m.key == "windows")
        });
        if windows_only && !paths().any(|path| path.starts_with('/')) { Platform::Windows } else { Platform::Linux }
    }

    /// Whether cfn-init on this system takes `path` as absolute (Linux: it starts with
    /// `/`; Windows: Python's `ntpath.isabs`, a drive's root, a UNC path, or a root
    /// without a drive).
    pub fn is_absolute(self, path: &str) -> bool {
        match self {
            Platform::Linux => path.starts_with('/'),
            Platform::Windows => {
                let rest = match path.as_bytes() {
                    [drive, b':', ..] if drive.is_ascii_alphabetic() => &path[2..],
                    _ => path,
                };
                rest.starts_with(['/', '\\'])
            }
        }
    }
}

/// A drive path (`c:\cfn`, `C:/cfn`) or a UNC path (`\\server\share`).
fn is_windows_path(path: &str) -> bool {
    matches!(path.as_bytes(), [drive, b':', b'\\' | b'/', ..] if drive.is_ascii_alphabetic())
        || path.starts_with("\\\\")
}

/// Which configSets to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    /// Those `-c` names: each must exist (E011).
    Given(Vec<String>),
    /// Every configSet the metadata defines (the implicit `default` running `config` when
    /// it defines none). `told`: whether something says which configSets cfn-init is run
    /// with; when nothing does, configSets without `default` are a warning (W008), as
    /// cfn-init without `--configsets` would fail.
    Every { told: bool },
}

impl Requested {
    /// From `-c`: the names it lists, or every configSet when it is absent or blank.
    pub fn from_option(option: Option<&str>) -> Requested {
        match option.map(str::trim).filter(|o| !o.is_empty()) {
            Some(list) => Requested::Given(cfn_configsets::configsets::requested(Some(list))),
            None => Requested::Every { told: false },
        }
    }
}

/// A check that did not run because the value it needs is not known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Skipped {
    pub code: &'static str,
    pub pointer: String,
    /// The unknowns in the value, by name.
    pub unknowns: Vec<String>,
}

/// What the checks found, and which they skipped for want of values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
}

/// The checks whose findings depend on values inside the entry they point at (a model
/// error: a mode, an owner, a version; a configSet's entries). Such a finding at a value
/// holding an unknown is skipped: another value might not have it.
const NEEDS_VALUES: [&str; 5] = ["E010", "E012", "E020", "E021", "E051"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// What a finding points at: the key that names a value, or the value itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    Key,
    Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Finding {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub pointer: String,
    pub target: Target,
    pub help: Option<String>,
}

/// Every code, its short name and what it means (the README's table says the same).
pub const RULES: &[(&str, &str, &str)] = &[
    ("E001", "invalid-json", "The metadata is not valid JSON"),
    ("E002", "duplicate-key", "An object gives the same key twice; all but the last are lost"),
    ("E003", "no-init", "There is no usable AWS::CloudFormation::Init"),
    ("E004", "unusable-template", "The template does not parse, or a resource's Metadata does not resolve"),
    ("E010", "bad-configsets", "configSets is malformed, names a missing config or set, or is circular"),
    ("E011", "unknown-configset", "A configSet asked for with -c does not exist"),
    ("E012", "bad-config", "A config is not an object"),
    ("E020", "bad-section", "A section is not an object"),
    ("E021", "bad-entry", "An entry has the wrong shape or type"),
    ("E030", "relative-path", "A file's path is not absolute (on the instance's system: Linux or Windows)"),
    ("E031", "no-content", "A file has neither content nor source"),
    ("E032", "symlink-without-target", "A symbolic link (mode 120xxx) has no content naming its target"),
    ("E033", "content-and-source", "A file has both content and source"),
    ("E034", "bad-base64", "base64 content does not decode"),
    ("E035", "bad-mustache", "Mustache content does not parse"),
    (
        "E036",
        "unknown-authentication",
        "An authentication name that no block defines, and no block matches the URL: fetched without credentials",
    ),
    ("E037", "bad-url", "A source URL cfn-init cannot fetch"),
    ("E040", "no-command", "A command without `command`"),
    ("E050", "windows-only", "msi packages or windows services in an Init for Linux, refused there"),
    ("E051", "option-like", "A name or version starting with '-', refused"),
    ("E060", "unknown-resource", "The user data or a cfn-hup hook names a resource the template does not define"),
    ("E061", "resource-without-init", "cfn-init --resource names a resource without AWS::CloudFormation::Init"),
    (
        "E062",
        "unknown-configset-in-user-data",
        "cfn-init in the user data asks for a configSet the resource does not define",
    ),
    ("E063", "refused-command-line", "A cfn-init, cfn-signal or cfn-hup command line the tool would refuse"),
    ("E064", "signal-without-creation-policy", "cfn-signal --resource names a resource that waits for no signal"),
    ("E065", "signal-url-not-a-handle", "cfn-signal's URL is the Ref of a resource that is not a WaitConditionHandle"),
    ("E066", "unreadable-hook", "A cfn-hup file cfn-hup cannot read or will not start with, or a hook path it refuses"),
    ("E067", "hook-path-missing-key", "A hook's path names a Metadata key the resource does not have"),
    (
        "E068",
        "asg-hook-without-lifecycle-hook",
        "An on.asg.* cfn-hup hook, and the group launching the instance has no lifecycle hook of that transition",
    ),
    (
        "E069",
        "unknown-pinned-lifecycle-hook",
        "A cfn-hup hook's lifecycle-hook= names a hook the group does not define for that transition",
    ),
    ("W060", "other-stack", "A --stack or cfn-hup stack that is not this template's stack"),
    ("W061", "implausible-region", "A --region or cfn-hup region that is not a region name"),
    ("W062", "empty-init", "AWS::CloudFormation::Init is empty: cfn-init does nothing and exits 0"),
    (
        "W063",
        "lifecycle-timeout-past-global",
        "An on.asg.* hook's timeout= is longer than its lifecycle hook's global timeout",
    ),
    (
        "W064",
        "lifecycle-completion-not-allowed",
        "The instance role is not allowed autoscaling:CompleteLifecycleAction that an on.asg.* hook needs",
    ),
    ("W001", "unknown-key", "A key cfn-init ignores"),
    ("W002", "unknown-package-manager", "A package manager cfn-init skips"),
    ("W003", "unknown-service-manager", "A service manager cfn-init skips"),
    ("W004", "test-not-string", "A command's test that is not a string"),
    (
        "W005",
        "string-boolean",
        "ignoreErrors as a string that reads as false though it is not false, no, n, 0 or empty (\"on\", \"2\")",
    ),
    ("W006", "basic-auth-over-http", "A basic authentication block used over plain http"),
    ("W007", "dropped-authentication", "An authentication block cfn-init drops"),
    ("W008", "no-default-configset", "configSets without default, and nothing says which cfn-init runs"),
    (
        "W009",
        "authentication-fallback",
        "An authentication name that no block defines, where cfn-init falls back to a block matching the URL",
    ),
    ("W010", "no-echo-in-init", "A NoEcho parameter's value written into Init: the metadata is not secret"),
    ("W011", "service-list-as-string", "A service's files, commands, … given as a string instead of a list"),
    (
        "W012",
        "unusable-authentication",
        "An S3 authentication block cfn-init keeps but cannot sign with (keys that are not text)",
    ),
];

const CONFIG_KEYS: [&str; 7] = ["packages", "groups", "users", "sources", "files", "commands", "services"];
const FILE_KEYS: [&str; 8] = ["content", "source", "encoding", "group", "owner", "mode", "authentication", "context"];
const COMMAND_KEYS: [&str; 8] =
    ["command", "env", "cwd", "test", "ignoreErrors", "waitAfterCompletion", "runas", "defaults"];
const SERVICE_KEYS: [&str; 8] =
    ["enabled", "ensureRunning", "files", "sources", "packages", "commands", "groups", "users"];
const USER_KEYS: [&str; 3] = ["groups", "uid", "homeDir"];
const GROUP_KEYS: [&str; 1] = ["gid"];
const AUTH_KEYS: [&str; 10] = [
    "type",
    "accessKeyId",
    "secretKey",
    "sessionToken",
    "token",
    "roleName",
    "buckets",
    "username",
    "password",
    "uris",
];

struct Checker<'a> {
    metadata: &'a Value,
    document: &'a InitDocument,
    platform: Platform,
    findings: Vec<Finding>,
    skipped: Vec<Skipped>,
}

impl Checker<'_> {
    /// Adds a finding; returns it, for a help line.
    fn push(
        &mut self,
        severity: Severity,
        code: &'static str,
        pointer: &str,
        target: Target,
        message: String,
    ) -> &mut Finding {
        let finding = Finding { severity, code, message, pointer: pointer.to_string(), target, help: None };
        self.findings.push(finding);
        let last = self.findings.len() - 1;
        &mut self.findings[last]
    }

    fn error(&mut self, code: &'static str, pointer: &str, message: impl Into<String>) -> &mut Finding {
        self.push(Severity::Error, code, pointer, Target::Value, message.into())
    }

    fn warning(&mut self, code: &'static str, pointer: &str, message: impl Into<String>) -> &mut Finding {
        self.push(Severity::Warning, code, pointer, Target::Key, message.into())
    }

    fn raw(&self, pointer: &str) -> Option<&Value> {
        self.metadata.pointer(pointer)
    }

    /// Whether `value` (at `pointer`) holds an unknown; if so the check `code` is
    /// recorded as skipped.
    fn skips(&mut self, code: &'static str, pointer: &str, value: &str) -> bool {
        if !unknown::in_text(value) {
            return false;
        }
        let unknowns = unknown::names(&Value::String(value.to_string()));
        self.skipped.push(Skipped { code, pointer: pointer.to_string(), unknowns });
        true
    }

    /// Keys of the object at `pointer` that are not in `known`.
    fn unknown_keys(&mut self, pointer: &str, known: &[&str], what: &str) {
        let Some(Value::Object(map)) = self.raw(pointer) else { return };
        let unknown: Vec<String> = map.keys().filter(|k| !known.contains(&k.as_str())).cloned().collect();
        for key in unknown {
            self.warning("W001", &format!("{pointer}/{}", pointer_step(&key)), format!("unknown {what} key {key}"))
                .help = Some(format!("cfn-init ignores it; the keys are: {}", known.join(", ")));
        }
    }
}

fn with_help(finding: &mut Finding, help: impl Into<String>) {
    finding.help = Some(help.into());
}

/// Checks the document parsed from `metadata`, for the configSets `requested`.
pub fn check(metadata: &Value, document: &InitDocument, requested: &Requested) -> Vec<Finding> {
    check_all(metadata, document, requested).findings
}

/// [`check`], and the checks skipped for want of values, for the system the Init says
/// it is for ([`Platform::of`]).
pub fn check_all(metadata: &Value, document: &InitDocument, requested: &Requested) -> Checked {
    check_on(metadata, document, requested, Platform::of(document))
}

/// [`check_all`] for an Init run on `platform`.
pub fn check_on(metadata: &Value, document: &InitDocument, requested: &Requested, platform: Platform) -> Checked {
    let mut checker = Checker { metadata, document, platform, findings: Vec::new(), skipped: Vec::new() };
    run_checks(&mut checker, requested);
    let Checker { mut findings, mut skipped, .. } = checker;
    findings.retain(|finding| {
        let value = metadata.pointer(&finding.pointer).filter(|v| unknown::in_value(v));
        match value {
            Some(value) if NEEDS_VALUES.contains(&finding.code) => {
                let unknowns = unknown::names(value);
                skipped.push(Skipped { code: finding.code, pointer: finding.pointer.clone(), unknowns });
                false
            }
            _ => true,
        }
    });
    if let Ok(sets) = &document.config_sets {
        name_configsets(metadata, document, sets, &mut findings);
    }
    Checked { findings, skipped }
}

/// When the Init defines configSets, each finding in a config says which configSets run
/// it (or that none does: cfn-init never runs it).
/// Without configSets cfn-init runs `config` alone (INIT-CS-01): a finding in any other
/// key (a `Comment` string beside `config`) is one in a config it never runs.
fn name_configsets(metadata: &Value, document: &InitDocument, sets: &ConfigSets, findings: &mut Vec<Finding>) {
    let declared = metadata.pointer(&format!("{}/configSets", document.pointer)).is_some();
    for config in &document.configs {
        if !declared && config.name == "config" {
            continue;
        }
        let running: Vec<&str> =
            sets.iter().filter(|(_, configs)| configs.contains(&config.name)).map(|(set, _)| set.as_str()).collect();
        let note = match running.as_slice() {
            [] if !declared => " (not run: without configSets cfn-init runs only config)".to_string(),
            [] => " (in no configSet: cfn-init never runs it)".to_string(),
            [one] => format!(" (configSet {one})"),
            many => format!(" (configSets {})", many.join(", ")),
        };
        let within = format!("{}/", config.pointer);
        // A key no configSet runs that is not even an object (a `Comment` string) is not
        // configuration at all: cfn-init never looks at it, and nor does this.
        if running.is_empty() {
            findings.retain(|f| !(f.code == "E012" && f.pointer == config.pointer));
        }
        for finding in findings.iter_mut() {
            if finding.pointer == config.pointer || finding.pointer.starts_with(&within) {
                finding.message.push_str(&note);
                // What cfn-init never runs it never refuses: a warning about dead
                // configuration, not an error (issue 30: a config only an `Fn::If` in the
                // configSets lists, whose file's source is a parameter's empty Default).
                if running.is_empty() {
                    finding.severity = Severity::Warning;
                }
            }
        }
    }
}

fn run_checks(checker: &mut Checker<'_>, requested: &Requested) {
    let document = checker.document;
    match &document.config_sets {
        Ok(sets) => check_requested(checker, sets, requested),
        Err(ModelError(message)) => {
            let pointer = format!("{}/configSets", document.pointer);
            checker.error("E010", &pointer, message.clone());
        }
    }
    for config in &document.configs {
        match &config.sections {
            Ok(sections) => {
                checker.unknown_keys(&config.pointer, &CONFIG_KEYS, "section");
                check_sections(checker, sections);
            }
            Err(ModelError(message)) => {
                checker.error("E012", &config.pointer, message.clone());
            }
        }
    }
    for block in &document.authentication {
        checker.unknown_keys(&block.pointer, &AUTH_KEYS, "authentication");
        match &block.spec {
            Err(ModelError(message)) => {
                let help = "cfn-init drops this block; a file naming it fails".to_string();
                with_help(checker.warning("W007", &block.pointer, message.clone()), help);
            }
            Ok(AuthBlock::S3(S3Auth { keys: S3Keys::Unusable(why), .. })) => {
                let message = format!("{why}, not text: cfn-init keeps this block, and every download it signs fails");
                let help = "give the role's name (or each key) as a string, not a list".to_string();
                with_help(checker.warning("W012", &block.pointer, message), help);
            }
            Ok(_) => {}
        }
    }
}

fn check_requested(checker: &mut Checker<'_>, sets: &ConfigSets, requested: &Requested) {
    let pointer = format!("{}/configSets", checker.document.pointer);
    let requested = match requested {
        Requested::Given(names) => names,
        Requested::Every { told: true } => return,
        Requested::Every { told: false } => {
            let explicit = checker.raw(&pointer).is_some();
            if explicit && !sets.iter().any(|(set, _)| set == "default") {
                let known: Vec<&str> = sets.iter().map(|(set, _)| set.as_str()).collect();
                let message = "cfn-init without --configsets would fail here: no configSet named default exists";
                let help = format!("run cfn-init with --configsets naming some of: {}", known.join(", "));
                with_help(checker.warning("W008", &pointer, message), help);
            }
            return;
        }
    };
    for name in requested {
        if !sets.iter().any(|(set, _)| set == name) {
            let pointer = format!("{}/configSets", checker.document.pointer);
            let known: Vec<&str> = sets.iter().map(|(set, _)| set.as_str()).collect();
            let finding = checker.error("E011", &pointer, format!("Error: no ConfigSet named {name} exists"));
            with_help(finding, format!("the configSets are: {}", known.join(", ")));
        }
    }
}

/// A section's own error, and each entry's, as cfn-init would report them.
fn entry_errors<T>(checker: &mut Checker<'_>, section: &Section<T>) {
    match &section.items {
        Err(ModelError(message)) => {
            checker.error("E020", &section.pointer, message.clone());
        }
        Ok(items) => {
            for item in items {
                if let Err(error @ ModelError(message)) = &item.spec {
                    if cfn_configsets::model::is_missing_command(error) {
                        let finding = checker.error("E040", &item.pointer, message.clone());
                        with_help(finding, "add \"command\": a string for the shell, or a list of arguments");
                    } else {
                        checker.error("E021", &item.pointer, message.clone());
                    }
                }
            }
        }
    }
}

fn check_sections(checker: &mut Checker<'_>, sections: &Sections) {
    check_packages(checker, &sections.packages);
    entry_errors(checker, &sections.groups);
    for group in sections.groups.entries() {
        checker.unknown_keys(&group.pointer, &GROUP_KEYS, "group");
        option_like(checker, &group.pointer, "groups", "group name", &group.key);
    }
    entry_errors(checker, &sections.users);
    for user in sections.users.entries() {
        checker.unknown_keys(&user.pointer, &USER_KEYS, "user");
        option_like(checker, &user.pointer, "users", "user name", &user.key);
    }
    entry_errors(checker, &sections.sources);
    for source in sections.sources.entries() {
        if let Ok(location) = &source.spec {
            check_source_location(checker, &source.pointer, location);
        }
    }
    entry_errors(checker, &sections.files);
    for file in sections.files.entries() {
        checker.unknown_keys(&file.pointer, &FILE_KEYS, "file");
        if let Ok(spec) = &file.spec {
            check_file(checker, &file.pointer, spec);
        }
    }
    entry_errors(checker, &sections.commands);
    for command in sections.commands.entries() {
        check_command(checker, command);
    }
    check_services(checker, &sections.services);
}

fn option_like(checker: &mut Checker<'_>, pointer: &str, section: &str, what: &str, value: &str) {
    if let Err(message) = refuse_option_like(section, what, value) {
        checker.push(Severity::Error, "E051", pointer, Target::Key, message);
    }
}

fn check_packages(checker: &mut Checker<'_>, section: &Section<ManagerPackages>) {
    entry_errors(checker, section);
    for manager in section.entries() {
        match &manager.spec {
            Ok(ManagerPackages::Named(packages)) => {
                for package in packages {
                    let pointer = format!("{}/{}", manager.pointer, pointer_step(&package.name));
                    if let Err(message) = cfn_configsets::packages::check_package(&manager.key, package) {
                        checker.push(Severity::Error, "E051", &pointer, Target::Key, message);
                    }
                }
            }
            Ok(ManagerPackages::Rpm(entries)) => {
                for entry in entries {
                    let pointer = format!("{}/{}", manager.pointer, pointer_step(&entry.label));
                    for location in &entry.locations {
                        option_like(checker, &pointer, "rpm", "location", location);
                    }
                }
            }
            Ok(ManagerPackages::Msi { listed: true }) if checker.platform == Platform::Linux => {
                checker.error("E050", &manager.pointer, "MSI support is only available under Windows");
            }
            Ok(ManagerPackages::Unsupported) => {
                let finding =
                    checker.warning("W002", &manager.pointer, format!("Unsupported package manager: {}", manager.key));
                with_help(finding, "cfn-init skips it; the managers are: apt, yum, dnf, zypper, python, rubygems, rpm");
            }
            Ok(ManagerPackages::Msi { .. }) | Err(_) => {}
        }
    }
}

fn check_services(checker: &mut Checker<'_>, section: &Section<Vec<Item<cfn_configsets::document::ServiceSpec>>>) {
    entry_errors(checker, section);
    for manager in section.entries() {
        let Ok(services) = &manager.spec else { continue };
        if !SERVICE_MANAGERS.contains(&manager.key.as_str()) {
            let finding =
                checker.warning("W003", &manager.pointer, format!("Unsupported service manager: {}", manager.key));
            with_help(finding, "cfn-init skips it; the managers are: sysvinit, systemd");
            continue;
        }
        if manager.key == "windows" && !services.is_empty() && checker.platform == Platform::Linux {
            let finding = checker.error("E050", &manager.pointer, "Cannot modify windows services without pywin32");
            with_help(finding, "windows services need the Windows cfn-init (cfn-init.exe) on a Windows instance");
        }
        for service in services {
            match &service.spec {
                Ok(_) => {
                    checker.unknown_keys(&service.pointer, &SERVICE_KEYS, "service");
                    lists_as_strings(checker, &service.pointer, &service.key);
                }
                Err(ModelError(message)) => {
                    checker.error("E021", &service.pointer, message.clone());
                }
            }
        }
    }
}

/// A service's `files`, `commands`, … given as one string (W011): AWS's cfn-init takes
/// each of its characters as a name, so nothing it means ever restarts the service; this
/// cfn-init takes the string as one name (docs/compatibility.md).
fn lists_as_strings(checker: &mut Checker<'_>, pointer: &str, service: &str) {
    let mut strings: Vec<(String, String)> = ["files", "sources", "commands", "groups", "users"]
        .iter()
        .map(|key| (format!("{pointer}/{key}"), key.to_string()))
        .collect();
    if let Some(Value::Object(managers)) = checker.raw(&format!("{pointer}/packages")) {
        for manager in managers.keys() {
            strings.push((format!("{pointer}/packages/{}", pointer_step(manager)), format!("packages/{manager}")));
        }
    }
    for (at, key) in strings {
        let Some(Value::String(name)) = checker.raw(&at).cloned() else { continue };
        let message = format!(
            "the {key} of service {service} is the string \"{name}\": AWS's cfn-init takes each character as a name, so a change to {name} never restarts {service}; this one takes it as one name"
        );
        let finding = checker.warning("W011", &at, message);
        finding.target = Target::Value;
        with_help(finding, format!("write a list: [\"{name}\"]"));
    }
}

fn check_file(checker: &mut Checker<'_>, pointer: &str, spec: &FileSpec) {
    if !checker.platform.is_absolute(&spec.path) {
        let message = format!("File specified with non-absolute path: {}", spec.path);
        let help = match checker.platform {
            Platform::Linux => format!("use an absolute path: /{}", spec.path),
            Platform::Windows => format!("use an absolute path with its drive: c:\\{}", spec.path),
        };
        with_help(checker.push(Severity::Error, "E030", pointer, Target::Key, message), help);
    }
    let raw_content = checker.raw(&format!("{pointer}/content")).filter(|c| cfn_python::truth::is_truthy(c));
    if spec.is_symlink() {
        if !matches!(&spec.content, Some(Content::Text(t)) if !t.is_empty()) {
            let finding = checker.error("E032", pointer, "Symbolic link specified without a destination");
            with_help(finding, "give the link's target as \"content\"");
        }
        return;
    }
    match (&spec.content, &spec.source) {
        (None, None) => {
            let finding = checker.error("E031", pointer, "File specified without source or content");
            with_help(finding, "add \"content\" or \"source\"");
        }
        (Some(Content::Json(value)), None) if !cfn_python::truth::is_truthy(value) => {
            checker.error("E031", &format!("{pointer}/content"), "File specified without source or content");
        }
        (Some(_), Some(_)) if raw_content.is_some() => {
            let finding = checker.error(
                "E033",
                &format!("{pointer}/source"),
                format!(
                    "{} has both content and source; cfn-init writes the content and ignores the source",
                    spec.path
                ),
            );
            with_help(finding, "remove one of them");
        }
        _ => {}
    }
    if let Some(Content::Text(text)) = &spec.content {
        // Decoding or parsing needs the whole text (a Mustache template's errors are its
        // text's: the context's values are only inserted).
        let code = if spec.base64 { "E034" } else { "E035" };
        if (spec.context.is_some() || spec.base64) && checker.skips(code, &format!("{pointer}/content"), text) {
            return check_source(checker, pointer, spec);
        }
        if spec.base64 {
            if cfn_configsets::files::decode_base64(text).is_err() {
                let pointer = format!("{pointer}/content");
                let finding = checker.error("E034", &pointer, format!("Malformed base64: {text}"));
                with_help(finding, "check the padding and length, or remove \"encoding\"");
            }
        } else if let Some(context) = &spec.context
            && let Err(e) = cfn_configsets::mustache::render(text, context)
            && !e.is_limit()
        {
            let message = format!("Failed to render content as a Mustache template: {e}");
            checker.error("E035", &format!("{pointer}/content"), message);
        }
    }
    check_source(checker, pointer, spec);
}

fn check_source(checker: &mut Checker<'_>, pointer: &str, spec: &FileSpec) {
    if let Some(source) = &spec.source {
        check_url(checker, &format!("{pointer}/source"), source, false);
        if let Some(name) = &spec.authentication {
            check_authentication(checker, pointer, name, source);
        }
    }
}

/// A `sources` location: a URL cfn-init downloads, or a local archive.
fn check_source_location(checker: &mut Checker<'_>, pointer: &str, location: &str) {
    if cfn_configsets::sources::is_remote(location) || location.contains("://") {
        check_url(checker, pointer, location, true);
    }
}

/// A URL the downloader accepts: http or https (S3 objects by their https URL). Its
/// scheme is what decides: a URL whose scheme is not known is skipped.
fn check_url(checker: &mut Checker<'_>, pointer: &str, url: &str, archive: bool) {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    let decided = match &scheme {
        Some(scheme) => !unknown::in_text(scheme),
        // No "://" in the known text: an unknown may hold it.
        None => !unknown::in_text(url),
    };
    if !decided {
        checker.skips("E037", pointer, url);
        return;
    }
    let help = match scheme.as_deref() {
        Some("http" | "https") => return,
        Some("s3") => {
            let rest = &url[5..];
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            format!("use the object's https URL: https://{bucket}.s3.amazonaws.com/{key}")
        }
        _ => "use an http:// or https:// URL".to_string(),
    };
    let shown = cfn_aws::http::redact_url(url);
    let message = match scheme.as_deref() {
        Some("ftp") if archive => format!(
            "Failed to retrieve {shown}: ftp:// URLs are not supported by cfn-bootstrap (use http, https or S3)"
        ),
        Some(scheme) => format!("Failed to retrieve {shown}: Unsupported URL scheme {scheme}"),
        None => format!("Failed to retrieve {shown}: Invalid URL: no scheme"),
    };
    with_help(checker.error("E037", pointer, message), help);
}

fn check_authentication(checker: &mut Checker<'_>, pointer: &str, name: &str, source: &str) {
    let pointer = format!("{pointer}/authentication");
    if checker.skips("E036", &pointer, name) {
        return;
    }
    match checker.document.authentication(name).map(|block| &block.spec) {
        None => unknown_authentication(checker, &pointer, name, source),
        Some(Ok(AuthBlock::Basic(_))) if source.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://")) => {
            let message = format!("authentication {name} sends a password over plain http");
            let finding = checker.warning("W006", &pointer, message);
            finding.target = Target::Value;
            with_help(finding, "use an https:// URL");
        }
        Some(_) => {}
    }
}

/// A file naming an authentication block that does not exist: cfn-init falls back to
/// the default choice (INIT-AUTH-05): a block that matches the URL is used all the same
/// (W009, typically `S3auth` for `S3Auth`); with none, the file is fetched without
/// credentials (E036: the object the name was for is private).
fn unknown_authentication(checker: &mut Checker<'_>, pointer: &str, name: &str, source: &str) {
    let blocks =
        Authentication::parse(checker.metadata.get(cfn_configsets::document::AUTH_KEY).unwrap_or(&Value::Null));
    let s3 = cfn_aws::s3url::parse(source, &cfn_aws::endpoint::Endpoints::builtin());
    let message = format!("authentication {name} is not defined in AWS::CloudFormation::Authentication");
    if let Some(fallback) = blocks.select(source, s3.as_ref(), None, "") {
        let message = format!("{message}; cfn-init falls back to the block {} that matches the URL", fallback.name());
        let finding = checker.warning("W009", pointer, message);
        finding.target = Target::Value;
        return with_help(finding, format!("name the block as it is spelt: {}", fallback.name()));
    }
    if checker.skips("E036", pointer, source) {
        return;
    }
    let known: Vec<&str> = checker.document.authentication.iter().map(|b| b.key.as_str()).collect();
    let help = if known.is_empty() {
        "define it under AWS::CloudFormation::Authentication".to_string()
    } else {
        format!("the blocks are: {}", known.join(", "))
    };
    let message = format!("{message}, and no block matches the URL: cfn-init fetches it without credentials");
    with_help(checker.error("E036", pointer, message), help);
}

/// Where NoEcho parameters' values are written into Init (W010): in a file, a command,
/// its environment, … Each of `secrets` (parameter names) is found by its unknown,
/// which checking gives a NoEcho parameter instead of its Default
/// ([`cfn_template::Template::no_echo_parameters`]); one finding per parameter and entry.
pub fn secrets_in_init(metadata: &Value, secrets: &[&str]) -> Vec<Finding> {
    let Some(init) = metadata.get(cfn_configsets::document::INIT_KEY) else { return Vec::new() };
    if secrets.is_empty() {
        return Vec::new();
    }
    let markers: Vec<(&str, String)> = secrets.iter().map(|name| (*name, unknown::marker(name))).collect();
    let mut findings: Vec<Finding> = Vec::new();
    // (secret, its entry's first path components) already reported: a set, not a search
    // of the findings per string.
    let mut reported: HashSet<(usize, Vec<String>)> = HashSet::new();
    // Each value with its pointer and the first path components below Init (config,
    // section, entry, one more): what names the entry; deeper ones are not kept.
    let mut pending =
        vec![(format!("/{}", pointer_step(cfn_configsets::document::INIT_KEY)), Vec::<String>::new(), init)];
    while let Some((pointer, path, value)) = pending.pop() {
        let below = |step: String| {
            let mut path = path.clone();
            if path.len() < 4 {
                path.push(step);
            }
            path
        };
        match value {
            Value::String(text) if unknown::in_text(text) => {
                for (index, (name, marker)) in markers.iter().enumerate() {
                    if !text.contains(marker.as_str()) || !reported.insert((index, path[..path.len().min(3)].to_vec()))
                    {
                        continue;
                    }
                    let message = format!(
                        "the NoEcho parameter {name} is written into {}: its value is plain text in the stack's metadata, which anyone allowed cloudformation:DescribeStackResource reads, and cfn-init stores the metadata on the instance",
                        describe_entry(&path)
                    );
                    let help = "fetch the secret on the instance with its role (Secrets Manager, SSM Parameter Store SecureString) instead of passing it through Init";
                    findings.push(Finding {
                        severity: Severity::Warning,
                        code: "W010",
                        message,
                        pointer: pointer.clone(),
                        target: Target::Value,
                        help: Some(help.to_string()),
                    });
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    pending.push((format!("{pointer}/{i}"), below(i.to_string()), item));
                }
            }
            // configSets name configs, not content.
            Value::Object(entries) => {
                for (key, item) in entries.iter().rev().filter(|(key, _)| !(path.is_empty() && *key == "configSets")) {
                    pending.push((format!("{pointer}/{}", pointer_step(key)), below(key.clone()), item));
                }
            }
            _ => {}
        }
    }
    findings
}

/// "the file /etc/x", "the environment of command 01", … for a path under Init
/// (config, section, entry, …).
fn describe_entry(path: &[String]) -> String {
    let (Some(section), Some(entry)) = (path.get(1), path.get(2)) else {
        return "the Init".to_string();
    };
    let what = match section.as_str() {
        "files" => "file",
        "commands" => "command",
        "sources" => "source",
        "services" => "services of",
        "packages" => "packages of",
        "users" => "user",
        "groups" => "group",
        other => other,
    };
    let within = match (section.as_str(), path.get(3).map(String::as_str)) {
        ("commands", Some("env")) => "the environment of ",
        ("files", Some("context")) => "the Mustache context of ",
        _ => "",
    };
    format!("{within}the {what} {entry}")
}

fn check_command(checker: &mut Checker<'_>, command: &Item<CommandEntry>) {
    let pointer = &command.pointer;
    checker.unknown_keys(pointer, &COMMAND_KEYS, "command");
    if let Some(test) = checker.raw(&format!("{pointer}/test"))
        && !test.is_string()
        && !test.is_null()
    {
        let message = format!("the test of command {} is not a string", command.key);
        let finding = checker.warning("W004", &format!("{pointer}/test"), message);
        finding.target = Target::Value;
        with_help(finding, "give the test as one shell command string");
    }
    let ignore_errors = format!("{pointer}/ignoreErrors");
    if let Some(Value::String(text)) = checker.raw(&ignore_errors)
        && checker.skips("W005", &ignore_errors, &text.clone())
    {
        return;
    }
    // cfn-init reads a string as true when it is true, yes, y or 1 (trimmed, any case;
    // SPEC 10.11): "false" and "true" mean what they say, and are not worth a word. A
    // string that is none of those nor an obvious false ("on", "2") is false, which its
    // author may not have meant.
    if let Some(value @ Value::String(text)) = checker.raw(&ignore_errors)
        && !cfn_python::truth::is_true(value)
        && !matches!(text.trim().to_ascii_lowercase().as_str(), "" | "false" | "no" | "n" | "0")
    {
        let message = format!(
            "ignoreErrors is the string \"{text}\", which cfn-init reads as false (only true, yes, y and 1 are true)"
        );
        let finding = checker.warning("W005", &format!("{pointer}/ignoreErrors"), message);
        finding.target = Target::Value;
        with_help(finding, "write the boolean true or false without quotes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfn_configsets::document::INIT_KEY;
    use serde_json::json;

    fn findings(init: Value) -> Vec<(&'static str, String, String)> {
        let metadata = json!({ INIT_KEY: init });
        let document = InitDocument::parse(&metadata).unwrap();
        check(&metadata, &document, &Requested::Given(vec!["default".to_string()]))
            .into_iter()
            .map(|f| (f.code, f.pointer, f.message))
            .collect()
    }

    #[test]
    fn a_clean_config_has_no_findings() {
        let init = json!({"config": {
            "packages": {"apt": {"nginx": []}},
            "files": {"/etc/a": {"content": "x", "mode": "000644"}},
            "commands": {"01": {"command": "true", "ignoreErrors": false}},
            "services": {"sysvinit": {"nginx": {"enabled": true, "files": ["/etc/a"]}}}
        }});
        assert_eq!(findings(init), []);
    }

    fn checked(init: Value, requested: Requested) -> Checked {
        let metadata = json!({ INIT_KEY: init });
        let document = InitDocument::parse(&metadata).unwrap();
        check_all(&metadata, &document, &requested)
    }

    #[test]
    fn every_configset_unless_told_each_finding_naming_the_sets_that_run_it() {
        let init = json!({
            "configSets": {"create": ["a", "b"], "update": ["b"]},
            "a": {"files": {"x": {"content": "1"}}},
            "b": {"files": {"y": {"content": "2"}}},
            "c": {"files": {"z": {"content": "3"}}},
        });
        let found = checked(init.clone(), Requested::Every { told: false }).findings;
        let messages: Vec<(&str, &str)> = found.iter().map(|f| (f.code, f.message.as_str())).collect();
        assert_eq!(
            messages,
            [
                ("W008", "cfn-init without --configsets would fail here: no configSet named default exists"),
                ("E030", "File specified with non-absolute path: x (configSet create)"),
                ("E030", "File specified with non-absolute path: y (configSets create, update)"),
                ("E030", "File specified with non-absolute path: z (in no configSet: cfn-init never runs it)"),
            ]
        );
        assert_eq!(found[0].pointer, format!("/{INIT_KEY}/configSets"));
        // What no configSet runs, cfn-init never refuses: a warning.
        let severities: Vec<Severity> = found.iter().map(|f| f.severity).collect();
        assert_eq!(severities, [Severity::Warning, Severity::Error, Severity::Error, Severity::Warning]);
        // Told: no warning; -c: each named set must exist, as before.
        let told = checked(init.clone(), Requested::Every { told: true }).findings;
        assert!(told.iter().all(|f| f.code == "E030") && told.len() == 3);
        let given = checked(init, Requested::Given(vec!["update".into(), "nope".into()])).findings;
        assert_eq!(given.iter().filter(|f| f.code == "E011").count(), 1);
        assert!(given.iter().all(|f| f.code != "W008"));
        // Without configSets (the implicit default) nothing changes.
        let plain = checked(json!({"config": {"files": {"x": {"content": "1"}}}}), Requested::Every { told: false });
        assert_eq!(plain.findings.len(), 1);
        assert_eq!(plain.findings[0].message, "File specified with non-absolute path: x");
        // Without configSets only config runs: a comment string beside it is nothing, and
        // a finding in another object is one in configuration cfn-init never runs.
        let init = json!({"Comment": "web server", "config": {}, "other": {"files": {"x": {"content": "1"}}}});
        let found: Vec<(&str, Severity, String)> = checked(init, Requested::Every { told: false })
            .findings
            .into_iter()
            .map(|f| (f.code, f.severity, f.message))
            .collect();
        let message =
            "File specified with non-absolute path: x (not run: without configSets cfn-init runs only config)";
        assert_eq!(found, [("E030", Severity::Warning, message.to_string())]);
    }

    #[test]
    fn checks_that_need_a_value_skip_an_unknown_and_what_the_known_part_decides_is_checked() {
        let u = |name: &str| unknown::marker(name);
        let init = json!({"config": {
            "sources": {"/a": format!("{}://h/x", u("Proto")), "/b": format!("s3://{}/k", u("Bucket"))},
            "files": {
                "/c": {"content": u("Data"), "encoding": "base64"},
                "/d": {"content": "{{/a}}", "context": {"a": u("A")}},
                "/e": {"content": "x", "mode": u("Mode")},
                "/f": {"source": format!("https://{}/f", u("Host")), "authentication": u("Auth")},
            },
            "commands": {"01": {"command": "true", "ignoreErrors": u("Ignore")}},
        }});
        let Checked { findings, skipped } = checked(init, Requested::Every { told: false });
        let found: Vec<(&str, &str)> = findings.iter().map(|f| (f.code, f.pointer.as_str())).collect();
        let init = format!("/{INIT_KEY}/config");
        assert_eq!(
            found,
            [("E037", format!("{init}/sources/~1b").as_str()), ("E035", format!("{init}/files/~1d/content").as_str())]
        );
        let skipped: Vec<(&str, Vec<String>)> = skipped.into_iter().map(|s| (s.code, s.unknowns)).collect();
        assert_eq!(
            skipped,
            [
                ("E037", vec!["Proto".to_string()]),
                ("E034", vec!["Data".to_string()]),
                ("E036", vec!["Auth".to_string()]),
                ("W005", vec!["Ignore".to_string()]),
                ("E021", vec!["Mode".to_string()]),
            ]
        );
    }

    #[test]
    fn windows_inits_are_checked_with_windows_rules() {
        // Issue 30: c:\\cfn\\cfn-hup.conf is absolute on the instance it is for.
        let init = json!({"config": {
            "files": {"c:\\cfn\\cfn-hup.conf": {"content": "x"}, "C:/cfn/a": {"content": "x"},
                      "\\\\server\\share\\b": {"content": "x"}, "cfn\\relative": {"content": "x"}},
            "packages": {"msi": {"app": "https://example.com/app.msi"}},
            "services": {"windows": {"cfn-hup": {"enabled": "true"}}}
        }});
        let metadata = json!({ INIT_KEY: init });
        let document = InitDocument::parse(&metadata).unwrap();
        assert_eq!(Platform::of(&document), Platform::Windows);
        let found = check(&metadata, &document, &Requested::Every { told: true });
        let found: Vec<(&str, &str)> = found.iter().map(|f| (f.code, f.message.as_str())).collect();
        assert_eq!(found, [("E030", "File specified with non-absolute path: cfn\\relative")]);
        // The same Init judged for Linux: the drive paths are relative, msi and windows refused.
        let linux = check_on(&metadata, &document, &Requested::Every { told: true }, Platform::Linux).findings;
        let codes: Vec<&str> = linux.iter().map(|f| f.code).collect();
        assert_eq!(codes, ["E050", "E030", "E030", "E030", "E030", "E050"]);
        assert!(Platform::Windows.is_absolute("\\temp") && Platform::Windows.is_absolute("/x"));
        assert!(!Platform::Windows.is_absolute("c:temp") && !Platform::Linux.is_absolute("c:\\x"));
        let linux_init = json!({ INIT_KEY: {"config": {"files": {"/etc/a": {"content": "x"}}}} });
        assert_eq!(Platform::of(&InitDocument::parse(&linux_init).unwrap()), Platform::Linux);
    }

    #[test]
    fn an_undefined_authentication_name_falls_back_to_a_matching_block() {
        let metadata = json!({
            INIT_KEY: {"config": {"files": {
                "/a": {"source": "https://bucket.s3.amazonaws.com/a", "authentication": "S3auth"},
                "/b": {"source": "https://other.s3.amazonaws.com/b", "authentication": "S3auth"},
                "/c": {"source": "https://example.com/c", "authentication": "web"},
            }}},
            "AWS::CloudFormation::Authentication": {
                "S3Auth": {"type": "S3", "buckets": ["bucket"], "roleName": "r"},
                "Web": {"type": "basic", "uris": ["https://example.com/"], "username": "u", "password": "p"},
            }
        });
        let document = InitDocument::parse(&metadata).unwrap();
        let found = check(&metadata, &document, &Requested::Every { told: true });
        let found: Vec<(&str, Severity, &str)> =
            found.iter().map(|f| (f.code, f.severity, f.pointer.as_str())).collect();
        let files = format!("/{INIT_KEY}/config/files");
        assert_eq!(
            found,
            [
                ("W009", Severity::Warning, format!("{files}/~1a/authentication").as_str()),
                ("E036", Severity::Error, format!("{files}/~1b/authentication").as_str()),
                ("W009", Severity::Warning, format!("{files}/~1c/authentication").as_str()),
            ]
        );
    }

    #[test]
    fn no_echo_parameters_written_into_init_are_named_once_per_entry() {
        let secret = unknown::marker("DbPassword");
        let metadata = json!({ INIT_KEY: {
            "configSets": {"default": ["config"]},
            "config": {
                "files": {"/etc/db.conf": {"content": format!("user=app\npassword={secret}\nagain={secret}\n")}},
                "commands": {"01": {"command": "setup", "env": {"PW": secret}}},
            }
        }});
        let found = secrets_in_init(&metadata, &["DbPassword", "Other"]);
        let found: Vec<(&str, &str)> = found.iter().map(|f| (f.code, f.pointer.as_str())).collect();
        let config = format!("/{INIT_KEY}/config");
        assert_eq!(
            found,
            [
                ("W010", format!("{config}/files/~1etc~1db.conf/content").as_str()),
                ("W010", format!("{config}/commands/01/env/PW").as_str())
            ]
        );
        let messages: Vec<String> =
            secrets_in_init(&metadata, &["DbPassword"]).into_iter().map(|f| f.message).collect();
        assert!(messages[0].contains("into the file /etc/db.conf"), "{}", messages[0]);
        assert!(messages[1].contains("into the environment of the command 01"), "{}", messages[1]);
        assert!(secrets_in_init(&metadata, &[]).is_empty());
    }

    #[test]
    fn a_service_list_given_as_a_string_is_a_warning() {
        let init = json!({"config": {"services": {"sysvinit": {"nginx": {
            "files": "/etc/nginx/nginx.conf", "commands": ["ok"], "packages": {"yum": "nginx"}
        }}}}});
        let found = findings(init);
        let codes: Vec<(&str, &str)> = found.iter().map(|(c, p, _)| (*c, p.as_str())).collect();
        let nginx = format!("/{INIT_KEY}/config/services/sysvinit/nginx");
        assert_eq!(
            codes,
            [("W011", format!("{nginx}/files").as_str()), ("W011", format!("{nginx}/packages/yum").as_str())]
        );
    }

    #[test]
    fn a_string_ignore_errors_is_a_warning_only_when_it_reads_false_unexpectedly() {
        let with = |value: &str| json!({"config": {"commands": {"01": {"command": "true", "ignoreErrors": value}}}});
        for quiet in ["true", "false", " TRUE ", "yes", "no", "0", "1", ""] {
            assert_eq!(findings(with(quiet)), [], "{quiet:?}");
        }
        for loud in ["on", "2", "enabled"] {
            let found = findings(with(loud));
            assert_eq!(found.len(), 1, "{loud:?}");
            assert!(found[0].2.contains("reads as false"), "{}", found[0].2);
        }
    }

    #[test]
    fn every_rule_is_listed_once() {
        let mut codes: Vec<&str> = RULES.iter().map(|r| r.0).collect();
        codes.dedup();
        assert_eq!(codes.len(), RULES.len());
    }
}
