//! What a template's user data and cfn-hup files ask of the template: the cfn-init,
//! cfn-signal and cfn-hup calls in the UserData of instances, launch templates and launch
//! configurations, and the hooks written by Init's `files` (`/etc/cfn/cfn-hup.conf`,
//! `/etc/cfn/hooks.conf`, `/etc/cfn/hooks.d/*`), checked against the template's
//! resources: the resource cfn-init reads has Init and the configSets asked for
//! (INIT-CS-01), the resource cfn-signal signals waits for signals (SIG-01), a hook's path
//! names a resource and a key of its Metadata (HUP-PATH-01).
//!
//! Options are read with the tools' own optparse tables, so `-c a,b`, `--configsets=a,b`
//! and unambiguous prefixes mean what they mean to the tools. A value a stack gives
//! (`${AWS::StackName}`) or that the shell expands (`$X`, `$(...)`) is not judged, except
//! the pseudo parameters that are this stack's own.

use super::lifecycle;
use super::lines::Lines;
use super::shell::{self, Call, Word};
use super::{Located, MAX_PER_PLACE};
use crate::init_checks::{Finding, Platform, Severity, Target};
use cfn_hooks::ini::Ini;
use cfn_hooks::lifecycle::Trigger;
use cfn_hooks::path::{HookPath, Target as HookTarget};
use cfn_optparse::{Outcome, Parsed, Parser};
use cfn_template::Template;
use cfn_template::user_data::{self, Text, escape};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

const INIT: &str = "AWS::CloudFormation::Init";

/// Whether a value the template leaves unknown (a parameter, another resource's
/// attribute, a function not evaluated) could put whole lines into a cfn-hup file: then
/// what cfn-hup would read of it is not judged. Pseudo parameters never hold a newline.
fn may_hold_lines(text: &Text) -> bool {
    text.text.match_indices("${").any(|(at, _)| !text.text[at + 2..].starts_with("AWS::"))
}

/// cfn-hup's own configuration file, on Linux or Windows.
fn is_main_config(path: &str) -> bool {
    path == "/etc/cfn/cfn-hup.conf" || path.to_ascii_lowercase().replace('/', "\\") == "c:\\cfn\\cfn-hup.conf"
}

/// The files cfn-hup reads its set-up from: under /etc/cfn on Linux, `c:\\cfn` on Windows.
fn is_hup_file(path: &str) -> bool {
    let windows = path.to_ascii_lowercase().replace('/', "\\");
    path == "/etc/cfn/cfn-hup.conf"
        || path == "/etc/cfn/hooks.conf"
        || path.starts_with("/etc/cfn/hooks.d/")
        || windows == "c:\\cfn\\cfn-hup.conf"
        || windows == "c:\\cfn\\hooks.conf"
        || windows.starts_with("c:\\cfn\\hooks.d\\")
}

/// The findings, each with its template line and column, and what was found (the calls
/// and the configSets they name), for `--format json`; an error when flattening the texts
/// takes the template over its work bound.
pub fn check(template: &Template, source: &str) -> Result<(Vec<Located>, Value), cfn_template::Error> {
    let mut checker = Checker {
        template,
        lines: Lines::new(source),
        findings: Vec::new(),
        found: Vec::new(),
        per_place: HashMap::new(),
        candidates: HashMap::new(),
    };
    let mut reader = user_data::Reader::new(template, source);
    for script in reader.scripts()? {
        let calls = shell::calls(&script.script.text);
        for call in calls {
            checker.call(&call, &script.script, &script.pointer, &script.resource);
        }
    }
    for (resource, config, path, pointer, value) in hup_files(template) {
        // Only text: a mapping as content is JSON, not a cfn-hup file.
        let is_text = value.is_string()
            || value
                .as_object()
                .is_some_and(|m| m.len() == 1 && (m.contains_key("Fn::Sub") || m.contains_key("Fn::Join")));
        if !is_text {
            continue;
        }
        let text = reader.flatten(&resource, value, &pointer)?;
        checker.hup_file(&resource, &config, &path, &pointer, &text);
    }
    Ok((checker.findings, Value::Array(checker.found)))
}

/// For each resource, the configSets the cfn-init calls of the user data (and of the
/// hooks' actions) run on it, from the calls [`check`] found; a resource no call names is
/// absent.
pub fn configsets_named(found: &Value) -> BTreeMap<String, Vec<String>> {
    let mut named: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Each name once, in the order first named (a set to tell, as a call may name thousands).
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for call in found.as_array().into_iter().flatten() {
        let (Some(resource), Some(sets)) = (call["resource"].as_str(), call["configsets"].as_array()) else { continue };
        if unknown(resource) {
            continue;
        }
        let list = named.entry(resource.to_string()).or_default();
        for set in sets.iter().filter_map(Value::as_str) {
            if seen.insert((resource, set)) {
                list.push(set.to_string());
            }
        }
    }
    named
}

/// Every hook file in every config of every resource's Init: (resource, config, file
/// path, pointer of its content, content).
fn hup_files(template: &Template) -> Vec<(String, String, String, String, &Value)> {
    let mut found = Vec::new();
    let resources = template.value().get("Resources").and_then(Value::as_object);
    for (name, resource) in resources.into_iter().flatten() {
        let Some(init) = resource.pointer(&format!("/Metadata/{INIT}")).and_then(Value::as_object) else { continue };
        for (config, body) in init {
            let Some(files) = body.get("files").and_then(Value::as_object) else { continue };
            for (path, file) in files.iter().filter(|(path, _)| is_hup_file(path)) {
                let Some(content) = file.get("content") else { continue };
                let pointer = format!(
                    "/Resources/{}/Metadata/{INIT}/{}/files/{}/content",
                    escape(name),
                    escape(config),
                    escape(path)
                );
                found.push((name.clone(), config.clone(), path.clone(), pointer, content));
            }
        }
    }
    found
}

/// The system each resource's Init runs on, as the cfn-init calls naming it say:
/// `cfn-init.exe` is Windows's, any other Linux's (Windows when both are found).
pub fn platforms(found: &Value) -> HashMap<String, Platform> {
    let mut platforms = HashMap::new();
    for call in found.as_array().into_iter().flatten() {
        let Some(resource) = call["resource"].as_str().filter(|r| !unknown(r)) else { continue };
        let platform = if call["windows"] == true { Platform::Windows } else { Platform::Linux };
        let known = platforms.entry(resource.to_string()).or_insert(platform);
        if platform == Platform::Windows {
            *known = platform;
        }
    }
    platforms
}

/// A value the template or the shell gives only at run time: `${…}`, `$X`, `` `…` ``,
/// and a Windows script's `%ERRORLEVEL%`.
fn unknown(value: &str) -> bool {
    value.contains('$') || value.contains('`') || value.matches('%').count() >= 2
}

/// `us-east-1`, `us-gov-west-1`, `us-isob-east-1`: `^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d+$`.
fn plausible_region(region: &str) -> bool {
    let parts: Vec<&str> = region.split('-').collect();
    let letters = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase());
    let n = parts.len();
    let partition_ok = match n {
        3 => true,
        4 => parts[1] == "gov" || (parts[1].starts_with("iso") && letters(parts[1])),
        _ => false,
    };
    partition_ok
        && parts[0].len() == 2
        && letters(parts[0])
        && letters(parts[n - 2])
        && !parts[n - 1].is_empty()
        && parts[n - 1].bytes().all(|b| b.is_ascii_digit())
}

struct Checker<'a> {
    template: &'a Template,
    /// The template's text by line.
    lines: Lines<'a>,
    findings: Vec<Located>,
    found: Vec<Value>,
    /// How many findings of each code each template line has, and the rightmost column
    /// of those placed: past [`MAX_PER_PLACE`] they are only counted when shown, so their
    /// column is not searched for (a search per finding along one long line was
    /// quadratic); they take that column, which sorts them after the ones shown.
    per_place: HashMap<(usize, &'static str), (usize, usize)>,
    /// The resources of each kind, listed once for the help of every finding naming them.
    candidates: HashMap<Candidates, String>,
}

/// The resources a help line suggests instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Candidates {
    WithInit,
    WithCreationPolicy,
}

/// The most names a help line lists: a template may define thousands, and each finding
/// repeating them all made the output grow with findings times names.
const MAX_LISTED: usize = 10;

/// `a, b, c`, or the first [`MAX_LISTED`] and how many more; `none` for no name.
fn listed<'n>(names: impl IntoIterator<Item = &'n str>) -> String {
    let mut names = names.into_iter();
    let shown: Vec<&str> = names.by_ref().take(MAX_LISTED).collect();
    let more = names.count();
    match (shown.is_empty(), more) {
        (true, _) => "none".to_string(),
        (false, 0) => shown.join(", "),
        (false, more) => format!("{}, … and {more} more", shown.join(", ")),
    }
}

/// Where a finding about a script is: the text, the byte offset of the word it is about,
/// the text to put the caret under, and the pointer of the value that wrote the text.
struct Place<'a> {
    text: &'a Text,
    offset: usize,
    needle: &'a str,
    pointer: &'a str,
}

impl Checker<'_> {
    fn resource(&self, name: &str) -> Option<&Map<String, Value>> {
        self.template.value().get("Resources")?.get(name)?.as_object()
    }

    /// The resources of a kind, as a help line lists them (worked out once per kind).
    fn resource_names(&mut self, kind: Candidates) -> String {
        let template = self.template;
        self.candidates
            .entry(kind)
            .or_insert_with(|| {
                let resources = template.value().get("Resources").and_then(Value::as_object);
                listed(
                    resources
                        .into_iter()
                        .flatten()
                        .filter(|(_, r)| {
                            r.as_object().is_some_and(|r| match kind {
                                Candidates::WithInit => r.get("Metadata").and_then(|m| m.get(INIT)).is_some(),
                                Candidates::WithCreationPolicy => r.contains_key("CreationPolicy"),
                            })
                        })
                        .map(|(n, _)| n.as_str()),
                )
            })
            .clone()
    }

    fn push(&mut self, severity: Severity, code: &'static str, place: &Place, message: String, help: Option<String>) {
        // A quoted word starts at its quote, which may be in the piece before its text:
        // looked for a little way on only, not along the whole rest of the text.
        let after = place.text.text.get(place.offset..).unwrap_or("");
        let mut near = (4096 + place.needle.len()).min(after.len());
        while !after.is_char_boundary(near) {
            near -= 1;
        }
        let skip = after[..near].find(place.needle).filter(|n| !place.needle.is_empty() && *n < 4096).unwrap_or(0);
        let offset = place.offset + skip;
        let line = place.text.line_of(offset);
        let position = line.map(|line| {
            let (count, rightmost) = self.per_place.entry((line, code)).or_insert((0, 0));
            *count += 1;
            if *count > MAX_PER_PLACE {
                return (line, *rightmost);
            }
            let source_line = self.lines.line(line);
            // Under the word when the template line shows it, else under the line's text.
            let column = match source_line.find(place.needle).filter(|_| !place.needle.is_empty()) {
                Some(byte) => source_line[..byte].chars().count() + 1,
                None => source_line.chars().take_while(|c| c.is_whitespace()).count() + 1,
            };
            *rightmost = column.max(*rightmost);
            (line, column)
        });
        let finding =
            Finding { severity, code, message, pointer: place.pointer.to_string(), target: Target::Value, help };
        self.findings.push((finding, position));
    }

    /// The word holding an option's value (the last one given, as optparse keeps it).
    fn word_of<'w>(call: &'w Call, value: &str) -> Option<&'w Word> {
        call.arguments
            .iter()
            .rev()
            .find(|w| w.text == value || w.text.ends_with(&format!("={value}")))
            .or_else(|| call.arguments.iter().rev().find(|w| w.text.ends_with(value)))
    }

    fn call(&mut self, call: &Call, text: &Text, pointer: &str, within: &str) {
        let parser: Parser = match call.tool {
            "cfn-init" => cfn_optparse::tables::init("cfn-init"),
            "cfn-signal" => cfn_optparse::tables::signal("cfn-signal"),
            _ => cfn_optparse::tables::hup("cfn-hup"),
        };
        // `-e $?` is always a number: the exit status of the command before.
        let arguments: Vec<String> =
            call.arguments.iter().map(|w| if w.text == "$?" { "0".to_string() } else { w.text.clone() }).collect();
        let whole = Place { text, offset: call.at, needle: call.tool, pointer };
        let parsed = match parser.parse(&arguments) {
            Outcome::Run(parsed) => parsed,
            Outcome::Help(_) => return,
            Outcome::Error(message) => {
                // A shell expansion may hold several words, or none: only a literal line is judged.
                let expanded = arguments.iter().any(|a| unknown(&strip_placeholders(a)));
                if !expanded {
                    let reason = message.lines().last().unwrap_or("").to_string();
                    self.push(
                        Severity::Error,
                        "E063",
                        &whole,
                        format!("{} would refuse this command line: {reason}", call.tool),
                        None,
                    );
                }
                return;
            }
        };
        self.stack_and_region(call, &parsed, text, pointer);
        match call.tool {
            "cfn-init" => self.init_call(call, &parsed, text, pointer, within),
            "cfn-signal" => self.signal_call(call, &parsed, text, pointer),
            _ => {}
        }
    }

    fn stack_and_region(&mut self, call: &Call, parsed: &Parsed, text: &Text, pointer: &str) {
        if let Some(stack) = parsed.text("stack_name") {
            let offset = Self::word_of(call, &stack).map_or(call.at, |w| w.start);
            self.stack(&stack, &Place { text, offset, needle: &stack, pointer });
        }
        if let Some(region) = parsed.text("region") {
            let offset = Self::word_of(call, &region).map_or(call.at, |w| w.start);
            self.region(&region, &Place { text, offset, needle: &region, pointer });
        }
    }

    fn stack(&mut self, stack: &str, place: &Place) {
        if stack == "${AWS::StackName}" || stack == "${AWS::StackId}" || unknown(stack) {
            return;
        }
        self.push(
            Severity::Warning,
            "W060",
            place,
            format!("the stack {stack} is not this stack: this template's resources are read from its own stack"),
            Some("use ${AWS::StackName} (or {\"Ref\": \"AWS::StackName\"})".into()),
        );
    }

    fn region(&mut self, region: &str, place: &Place) {
        if region == "${AWS::Region}" || unknown(region) || plausible_region(region) {
            return;
        }
        self.push(
            Severity::Warning,
            "W061",
            place,
            format!("{region} is not a region name"),
            Some("use ${AWS::Region} (or {\"Ref\": \"AWS::Region\"})".into()),
        );
    }

    /// The resource named at `place` exists, or a finding naming the candidates.
    fn existing(&mut self, name: &str, place: &Place, what: &str) -> bool {
        if self.resource(name).is_some() {
            return true;
        }
        let candidates = self.resource_names(Candidates::WithInit);
        self.push(
            Severity::Error,
            "E060",
            place,
            format!("{what} names the resource {name}, which this template does not define"),
            Some(format!("resources with {INIT}: {candidates}")),
        );
        false
    }

    fn init_call(&mut self, call: &Call, parsed: &Parsed, text: &Text, pointer: &str, within: &str) {
        let Some(resource) = parsed.text("logical_resource_id") else { return };
        let requested = cfn_configsets::configsets::requested(parsed.text("configsets").as_deref());
        let given = parsed.text("configsets").is_some();
        let line = text.line_of(call.at);
        self.found.push(json!({
            "in": within,
            "tool": call.tool,
            "line": line,
            "resource": resource,
            "configsets": requested,
            "windows": call.windows,
        }));
        if unknown(&resource) {
            return;
        }
        let offset = Self::word_of(call, &resource).map_or(call.at, |w| w.start);
        let place = Place { text, offset, needle: &resource, pointer };
        if !self.existing(&resource, &place, "cfn-init --resource") {
            return;
        }
        let Some(init) = self.resource(&resource).and_then(|r| r.get("Metadata")?.get(INIT)).cloned() else {
            let candidates = self.resource_names(Candidates::WithInit);
            self.push(
                Severity::Error,
                "E061",
                &place,
                format!("cfn-init --resource {resource}: the resource has no {INIT} in its Metadata"),
                Some(format!("resources with {INIT}: {candidates}")),
            );
            return;
        };
        let defined: Option<Vec<String>> = match init.get("configSets") {
            // No configSets: cfn-init runs the config named `config` as the set `default`.
            None => Some(vec!["default".to_string()]),
            Some(Value::Object(sets)) => Some(sets.keys().cloned().collect()),
            // An intrinsic function: which names it gives is known only to a stack.
            Some(_) => None,
        };
        let Some(defined) = defined else { return };
        let (known, help): (HashSet<&str>, String) =
            (defined.iter().map(String::as_str).collect(), listed(defined.iter().map(String::as_str)));
        for name in requested.iter().filter(|n| !unknown(n)) {
            if known.contains(name.as_str()) {
                continue;
            }
            let (offset, needle) = match given {
                true => (Self::word_of(call, name).map_or(call.at, |w| w.start), name.as_str()),
                false => (call.at, call.tool),
            };
            let how = if given { "--configsets" } else { "without --configsets, the configSet" };
            self.push(
                Severity::Error,
                "E062",
                &Place { text, offset, needle, pointer },
                format!("cfn-init {how} {name}: the {INIT} of {resource} has no configSet named {name}"),
                Some(format!("its configSets: {help}")),
            );
        }
    }

    fn signal_call(&mut self, call: &Call, parsed: &Parsed, text: &Text, pointer: &str) {
        if let Some(resource) = parsed.text("logical_resource_id") {
            if unknown(&resource) {
                return;
            }
            let offset = Self::word_of(call, &resource).map_or(call.at, |w| w.start);
            let place = Place { text, offset, needle: &resource, pointer };
            if !self.existing(&resource, &place, "cfn-signal --resource") {
                return;
            }
            let waits = self.resource(&resource).is_some_and(|r| {
                r.contains_key("CreationPolicy")
                    || r.get("UpdatePolicy").is_some_and(|p| p.to_string().contains("WaitOnResourceSignals"))
            });
            if !waits {
                let candidates = self.resource_names(Candidates::WithCreationPolicy);
                self.push(
                    Severity::Error,
                    "E064",
                    &place,
                    format!(
                        "cfn-signal --resource {resource}: the resource has no CreationPolicy, so CloudFormation refuses its signals"
                    ),
                    Some(format!("resources with a CreationPolicy: {candidates}")),
                );
            }
            return;
        }
        let Some(url) = parsed.positionals.first() else { return };
        let Some(name) = url.strip_prefix("${").and_then(|u| u.strip_suffix('}')) else { return };
        let Some(kind) = self.resource(name).map(|r| r.get("Type").and_then(Value::as_str).unwrap_or("").to_string())
        else {
            return;
        };
        if kind != "AWS::CloudFormation::WaitConditionHandle" {
            let offset = Self::word_of(call, url).map_or(call.at, |w| w.start);
            self.push(
                Severity::Error,
                "E065",
                &Place { text, offset, needle: name, pointer },
                format!(
                    "cfn-signal's URL is the Ref of {name}, a {kind}, not an AWS::CloudFormation::WaitConditionHandle"
                ),
                None,
            );
        }
    }

    /// A cfn-hup file: its `[main]` stack and region, each hook's path, and the cfn-init
    /// calls of each hook's action.
    fn hup_file(&mut self, resource: &str, _config: &str, path: &str, pointer: &str, text: &Text) {
        let mut ini = Ini::new();
        let lines = key_lines(&text.text);
        let at = |section: &str, key: &str| lines.get(&(section.to_string(), key.to_string())).copied().unwrap_or(0);
        if let Err(e) = ini.read_str(&text.text, path) {
            if !may_hold_lines(text) {
                let place = Place { text, offset: 0, needle: "", pointer };
                let message = e.to_string().replace('\n', " ");
                self.push(Severity::Error, "E066", &place, format!("cfn-hup cannot read {path}: {message}"), None);
            }
            return;
        }
        if is_main_config(path) {
            self.main_config(path, pointer, text, &ini);
        }
        for section in ini.sections() {
            let value = |key: &str| ini.get(&section, key).ok().flatten();
            if section == "main" {
                if let Some(stack) = value("stack") {
                    let offset = at(&section, "stack");
                    self.stack(&stack, &Place { text, offset, needle: &stack, pointer });
                }
                if let Some(region) = value("region") {
                    let offset = at(&section, "region");
                    self.region(&region, &Place { text, offset, needle: &region, pointer });
                }
                continue;
            }
            if let Some(triggers) = value("triggers") {
                let list: Vec<String> = triggers.split(',').map(|t| t.trim().to_string()).collect();
                if let Ok(Some(triggers)) = cfn_hooks::lifecycle::hook::triggers_of(&list) {
                    let section = LifecycleSection {
                        name: &section,
                        triggers,
                        timeout: value("timeout").and_then(|t| t.trim().parse().ok()),
                        pinned: value("lifecycle-hook").map(|h| h.trim().to_string()),
                    };
                    let offset = at(section.name, "triggers");
                    self.lifecycle_section(resource, &section, &Place { text, offset, needle: "on.asg.", pointer });
                }
            }
            if let Some(hook_path) = value("path") {
                let offset = at(&section, "path");
                self.hook_path(&hook_path, &Place { text, offset, needle: hook_path.trim(), pointer });
            }
            if let Some(action) = value("action") {
                let start = at(&section, "action");
                // The action's words are placed in the file's text by the action's line: a
                // value starts on its key's line, so only that far is searched (searching
                // to the end of the file for each hook was quadratic in hooks).
                let line_end = text.text[start..].find('\n').map_or(text.text.len(), |n| start + n);
                let mut end = (line_end + action.len()).min(text.text.len());
                while !text.text.is_char_boundary(end) {
                    end += 1;
                }
                let window = &text.text[start..end];
                let shift = window.find(action.as_str()).map_or(start, |n| start + n);
                for mut call in shell::calls(&action) {
                    call.at += shift;
                    for word in &mut call.arguments {
                        word.start += shift;
                    }
                    let within = format!("{resource} {path}");
                    self.call(&call, text, pointer, &within);
                }
            }
        }
    }

    /// What cfn-hup refuses at start-up in its cfn-hup.conf, through its own reader: no
    /// `stack` in `[main]` (say, a file joined into one line: `[main] stack=… region=…`
    /// is a section header followed by nothing cfn-hup reads), or a service value it
    /// refuses. Only where no unknown could be a line of its own ([`may_hold_lines`]).
    fn main_config(&mut self, path: &str, pointer: &str, text: &Text, ini: &Ini) {
        if may_hold_lines(text) {
            return;
        }
        let refused = cfn_hooks::config::main_of(ini, path.into()).and_then(|main| main.service_values());
        if let Err(e) = refused {
            let place = Place { text, offset: 0, needle: "", pointer };
            let help = match e {
                cfn_hooks::config::ConfigError::NoStack => {
                    "give [main] a stack= line; each setting on a line of its own"
                }
                _ => "correct the value, or leave the key out for cfn-hup's default",
            };
            self.push(Severity::Error, "E066", &place, format!("cfn-hup refuses {path}: {e}"), Some(help.into()));
        }
    }

    /// An `on.asg.*` section against the groups that launch `resource` (issue 32).
    fn lifecycle_section(&mut self, resource: &str, section: &LifecycleSection, place: &Place) {
        let template = self.template.value();
        let launch = lifecycle::launch(template, resource);
        let name = section.name;
        let asg: Vec<Trigger> = section.triggers.iter().copied().filter(|t| t.is_asg()).collect();
        for trigger in &asg {
            let transition = if *trigger == Trigger::AsgLaunch { lifecycle::LAUNCHING } else { lifecycle::TERMINATING };
            for (group, hooks) in &launch.groups {
                let unknown = launch.unknown || hooks.iter().any(|h| h.transition.is_none());
                let of: Vec<&lifecycle::Hook> =
                    hooks.iter().filter(|h| h.transition.as_deref() == Some(transition)).collect();
                if of.is_empty() {
                    if !unknown {
                        let what = if *trigger == Trigger::AsgLaunch {
                            "the instance is put in service without waiting for it"
                        } else {
                            "the instance is terminated without waiting for it: nothing is drained"
                        };
                        self.push(
                            Severity::Error,
                            "E068",
                            place,
                            format!(
                                "hook [{name}] runs on {}, but group {group}, which launches {resource}, has no \
                                 lifecycle hook of {transition}: {what}",
                                trigger.name()
                            ),
                            Some(format!(
                                "add an AWS::AutoScaling::LifecycleHook with AutoScalingGroupName !Ref {group} and \
                                 LifecycleTransition {transition}"
                            )),
                        );
                    }
                    continue;
                }
                if let Some(pinned) = &section.pinned
                    && !unknown
                    && of.iter().all(|h| h.name.is_some())
                    && !of.iter().any(|h| h.name.as_deref() == Some(pinned))
                {
                    let has = listed(of.iter().filter_map(|h| h.name.as_deref()));
                    self.push(
                        Severity::Error,
                        "E069",
                        place,
                        format!(
                            "hook [{name}] sets lifecycle-hook={pinned}, but group {group} defines no lifecycle hook \
                             {pinned} of {transition}: its completion fails and the group waits out its timeout"
                        ),
                        Some(format!("its lifecycle hooks of {transition}: {has}")),
                    );
                }
                let relevant = of.iter().filter(|h| section.pinned.is_none() || h.name == section.pinned);
                let shortest = relevant.filter_map(|h| h.global_timeout).min();
                if let (Some(timeout), Some(global)) = (section.timeout, shortest)
                    && timeout > global
                {
                    self.push(
                        Severity::Warning,
                        "W063",
                        place,
                        format!(
                            "hook [{name}] has timeout={timeout}, longer than the global timeout of group {group}'s \
                             lifecycle hook of {transition} ({global} s: 100 × HeartbeatTimeout, at most 172800): \
                             Auto Scaling goes on at {global} s and cfn-hup ends the action then"
                        ),
                        Some(format!("lower timeout to {global} or less, or raise the hook's HeartbeatTimeout")),
                    );
                }
            }
        }
        if asg.is_empty() || launch.groups.is_empty() || self.hup_has_keys() {
            return;
        }
        if let Some(role) = lifecycle::role_lacking_completion(template, resource) {
            self.push(
                Severity::Warning,
                "W064",
                place,
                format!(
                    "hook [{name}] completes a lifecycle action, but the instance role {role} (the instance profile \
                     of {resource}) is not allowed autoscaling:CompleteLifecycleAction: the completion fails and the \
                     group waits out the hook's timeout"
                ),
                Some(format!(
                    "allow autoscaling:CompleteLifecycleAction and autoscaling:RecordLifecycleActionHeartbeat (and \
                     autoscaling:DescribeAutoScalingInstances, autoscaling:DescribeLifecycleHooks) to {role}"
                )),
            );
        }
    }

    /// Whether an Init writes a cfn-hup.conf with a credential-file: cfn-hup then signs
    /// with those keys, not the instance role's.
    fn hup_has_keys(&self) -> bool {
        hup_files(self.template).iter().any(|(_, _, path, _, content)| {
            path.ends_with("cfn-hup.conf") && content.to_string().contains("credential-file")
        })
    }

    fn hook_path(&mut self, path: &str, place: &Place) {
        let hook = match HookPath::parse(path) {
            Ok(hook) => hook,
            Err(e) => {
                self.push(Severity::Error, "E066", place, format!("cfn-hup refuses this hook: {e}"), None);
                return;
            }
        };
        if unknown(&hook.logical_id) || !self.existing(&hook.logical_id, place, "the hook's path") {
            return;
        }
        let HookTarget::Metadata(sub_path) = &hook.target else { return };
        let Some(metadata) = self.resource(&hook.logical_id).and_then(|r| r.get("Metadata")).cloned() else {
            self.push(
                Severity::Error,
                "E067",
                place,
                format!("the hook's path {path}: {} has no Metadata, so the hook never fires", hook.logical_id),
                None,
            );
            return;
        };
        let Some(sub_path) = sub_path else { return };
        let mut value = &metadata;
        let mut walked: Vec<String> = Vec::new();
        for key in cfn_metadata::keypath::split(sub_path) {
            if is_function(value) {
                return;
            }
            let next = match value {
                Value::Object(map) => map.get(&key),
                Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            let Some(next) = next else {
                let at =
                    if walked.is_empty() { "Metadata".to_string() } else { format!("Metadata.{}", walked.join(".")) };
                let keys = value.as_object().filter(|m| !m.is_empty()).map(|m| listed(m.keys().map(String::as_str)));
                self.push(
                    Severity::Error,
                    "E067",
                    place,
                    format!(
                        "the hook's path {path}: {}.{at} has no key {key}, so the hook never fires",
                        hook.logical_id
                    ),
                    keys.map(|k| format!("its keys: {k}")),
                );
                return;
            };
            walked.push(key);
            value = next;
        }
    }
}

/// What an `on.asg.*` hook section says.
struct LifecycleSection<'a> {
    name: &'a str,
    triggers: Vec<Trigger>,
    timeout: Option<u64>,
    pinned: Option<String>,
}

/// An intrinsic function (`{"Ref": …}`, `{"Fn::If": …}`): its value is a stack's to give.
fn is_function(value: &Value) -> bool {
    value.as_object().is_some_and(|m| m.len() == 1 && m.keys().all(|k| k == "Ref" || k.starts_with("Fn::")))
}

/// `${Name}` placeholders taken out of `text`, to tell what else the shell would expand.
fn strip_placeholders(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else { break };
        out.push_str(&rest[..start]);
        out.push('x');
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// Where each `key=` line of an INI text starts, by (section, key in lower case).
fn key_lines(text: &str) -> HashMap<(String, String), usize> {
    let mut found = HashMap::new();
    let mut section = String::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if let Some(name) = trimmed.strip_prefix('[').and_then(|l| l.split(']').next()) {
            section = name.to_string();
        } else if !line.starts_with(char::is_whitespace)
            && let Some(split) = trimmed.find(['=', ':'])
        {
            found.entry((section.clone(), trimmed[..split].trim().to_lowercase())).or_insert(offset);
        }
        offset += line.len();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each finding's code and line.
    type Codes = Vec<(&'static str, usize)>;

    fn run(source: &str) -> (Codes, BTreeMap<String, Vec<String>>) {
        let template = Template::parse("t.yaml", source).unwrap();
        let (findings, found) = check(&template, source).unwrap();
        let codes = findings.iter().map(|(f, at)| (f.code, at.map_or(0, |p| p.0))).collect();
        (codes, configsets_named(&found))
    }

    /// A launch configuration whose user data runs cfn-init on itself and signals its group.
    fn group(creation_policy: &str, signalled: &str) -> String {
        format!(
            "Resources:\n  Group:\n    Type: AWS::AutoScaling::AutoScalingGroup\n{creation_policy}    Properties:\n      LaunchConfigurationName: !Ref Config\n  Config:\n    Type: AWS::AutoScaling::LaunchConfiguration\n    Metadata:\n      AWS::CloudFormation::Init:\n        configSets:\n          setup: [a]\n          other: [a]\n        a: {{}}\n    Properties:\n      UserData:\n        Fn::Base64: !Sub |\n          #!/bin/bash\n          /opt/aws/bin/cfn-init -s ${{AWS::StackName}} -r Config --configsets setup,other --region ${{AWS::Region}}\n          /opt/aws/bin/cfn-signal -e $? --stack ${{AWS::StackName}} --resource {signalled} --region ${{AWS::Region}}\n"
        )
    }

    #[test]
    fn a_launch_configuration_signals_its_group_and_names_its_configsets() {
        let policy = "    CreationPolicy:\n      ResourceSignal:\n        Count: 2\n";
        let (findings, named) = run(&group(policy, "Group"));
        assert_eq!(findings, vec![]);
        assert_eq!(named, BTreeMap::from([("Config".to_string(), vec!["setup".to_string(), "other".to_string()])]));
        // Rolling updates that wait for signals take them too.
        let update = "    UpdatePolicy:\n      AutoScalingRollingUpdate:\n        WaitOnResourceSignals: true\n";
        assert_eq!(run(&group(update, "Group")).0, vec![]);
        // Neither: the signal is refused; and the launch configuration itself never waits.
        let at_signal = |source: &str| source[..source.find("cfn-signal").unwrap()].matches('\n').count() + 1;
        let source = group("", "Group");
        assert_eq!(run(&source).0, vec![("E064", at_signal(&source))]);
        let source = group(policy, "Config");
        assert_eq!(run(&source).0, vec![("E064", at_signal(&source))]);
    }

    #[test]
    fn values_a_stack_or_the_shell_gives_are_not_judged() {
        let source = "Parameters:\n  Sets: {Type: String}\nResources:\n  I:\n    Type: AWS::EC2::Instance\n    Metadata:\n      AWS::CloudFormation::Init:\n        configSets: {a: [c]}\n        c: {}\n    Properties:\n      UserData:\n        Fn::Base64: !Sub |\n          R=I\n          cfn-init -s $STACK -r $R -c ${Sets} --region $(region)\n          cfn-init -s ${AWS::StackId} -r I -c a --region eu-west-3\n          cfn-init -r I -c a --bogus\n          cfn-init -r I --bogus $X\n";
        let (findings, named) = run(source);
        assert_eq!(findings, vec![("E063", 16)]);
        // The call on `-r $R` names a resource only the shell knows: it is not counted.
        assert_eq!(named, BTreeMap::from([("I".to_string(), vec!["a".to_string()])]));
    }

    proptest::proptest! {
        /// Any script of the tools' words, in a block scalar: no panic, and every finding
        /// on a line of the script.
        #[test]
        fn any_script_is_checked_without_panic(
            lines in proptest::collection::vec(proptest::collection::vec(
                "(cfn-init|cfn-signal|cfn-hup|/opt/aws/bin/cfn-init|-r|-s|-c|-e|--resource|--stack|--region|--configsets=a,b|-ca|--url|I|H|Nope|a|b,Nope|\\$\\{AWS::Region\\}|\\$\\{H\\}|\\$X|'|\"|;|&&|\\\\|#|\\$\\(|\\)|us-east-1|x-y)",
                0..10,
            ), 1..8),
        ) {
            let script: Vec<String> = lines.iter().map(|words| format!("          {}", words.join(" "))).collect();
            let source = format!(
                "Resources:\n  H:\n    Type: AWS::CloudFormation::WaitConditionHandle\n  I:\n    Type: AWS::EC2::Instance\n    CreationPolicy: {{}}\n    Metadata:\n      AWS::CloudFormation::Init:\n        configSets: {{a: [c]}}\n        c: {{}}\n    Properties:\n      UserData:\n        Fn::Base64: !Sub |\n{}\n",
                script.join("\n")
            );
            let Ok(template) = Template::parse("t.yaml", &source) else { return Ok(()) };
            let (findings, _) = check(&template, &source).unwrap();
            for (_, at) in findings {
                let (line, _) = at.expect("a place");
                proptest::prop_assert!((14..14 + lines.len()).contains(&line), "line {line}\n{source}");
            }
        }
    }

    #[test]
    fn region_names() {
        for good in ["us-east-1", "eu-central-2", "us-gov-west-1", "us-isob-east-1", "ap-southeast-10"] {
            assert!(plausible_region(good), "{good}");
        }
        for bad in ["us-east", "useast-1", "US-EAST-1", "us-east-1a", "", "us--1", "eu-x-y-z-1"] {
            assert!(!plausible_region(bad), "{bad}");
        }
    }

    #[test]
    fn placeholders_are_not_shell_expansions() {
        assert!(!unknown(&strip_placeholders("${AWS::StackName}")));
        assert!(unknown(&strip_placeholders("${A}$B")));
        assert_eq!(strip_placeholders("a${X}b${Y"), "axb${Y");
    }

    #[test]
    fn key_lines_by_section() {
        let lines = key_lines("[main]\nstack=a\n[h]\n  cont=x\nPath = y\n");
        assert_eq!(
            lines,
            HashMap::from([
                (("main".to_string(), "stack".to_string()), 7),
                (("h".to_string(), "path".to_string()), 28)
            ])
        );
    }
}
