//! `cfn-bootstrap validate`: reads metadata as cfn-init does (a file, `-`, or a stack
//! resource with cfn-init's credential options, or a template's resource rendered as
//! `cfn-bootstrap render` renders it), parses its AWS::CloudFormation::Init once, and reports what cfn-init would refuse and what is suspect, like a compiler:
//! `FILE:LINE:COL: error[CODE]: message`, the line with a caret, and a help line; or as
//! JSON or SARIF 2.1.0. Nothing is run. Exit 0 without errors, 1 with errors (or when the
//! metadata could not be read), 2 for a usage error.
//!
//! The rules, by where they look: `init_checks` (the Init itself, and the catalogue of
//! every code), `user_data` with `shell` (the tools' calls in user data and hook
//! actions), `lifecycle` (cfn-hup's lifecycle hooks against the template's Auto Scaling
//! hooks). `template_input` reads a template and its values from the command line.

pub mod init_checks;
mod lifecycle;
mod lines;
mod shell;
pub mod template_input;
mod user_data;

use cfn_aws::ApiOptions;
use cfn_configsets::document::InitDocument;
use cfn_configsets::locations::{Position, SourceMap};
use cfn_host::terminal_text;
use cfn_metadata::source::{self, Fetched, MetadataSource};
use cfn_optparse::options;
use cfn_template::{Template, unknown};
use clap::{Arg, ArgAction, ArgMatches, Command, ValueHint};
use init_checks::{Checked, Finding, Platform, RULES, Requested, Severity, Skipped, Target};
use lines::Lines;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use template_input::{self as render, TEMPLATE};

/// What reading metadata as cfn-init reads it (a file, `-`, or a stack resource) gave:
/// the front door reads it with cfn-init's own code and credential checks.
pub enum Read {
    Metadata(Fetched),
    /// The text is not JSON: why, and where (1-based).
    NotJson {
        reason: String,
        line: usize,
        column: usize,
    },
    /// cfn-init's own error, already printed as cfn-init prints it: its exit code.
    Failed(ExitCode),
}

/// Options whose id is their optparse `dest`, so `options::api_options_from` reads them
/// as it reads cfn-init's.
pub fn command() -> Command {
    let value = |id: &'static str, long: &'static str, name: &'static str, help: &'static str| {
        Arg::new(id).long(long).value_name(name).help(help)
    };
    let command = Command::new("validate")
        .about("Check metadata for everything cfn-init would refuse, without running anything")
        .long_about(
            "Check a resource's metadata for everything cfn-init would refuse, and for what works but is\n\
             suspect, without running anything. The metadata comes from a file, from standard input (-),\n\
             from a stack resource (-s STACK -r RESOURCE, with cfn-init's credential options), or from a\n\
             template (-t FILE, JSON or YAML: the Metadata of -r RESOURCE, or of every resource with\n\
             AWS::CloudFormation::Init, resolved as `cfn-bootstrap render` resolves it). A template needs no\n\
             values: a parameter without one (no -p, no Default), another resource's Ref or attribute, or an\n\
             export is any value of its type; the checks that need it skip it (-v says which), and a condition\n\
             over it is checked both ways. Without -c every configSet is checked.\n\n\
             Each finding reads FILE:LINE:COL: error[CODE]: message, with the line and a caret under the\n\
             place, and a help line when there is a fix; --format json or sarif (SARIF 2.1.0) for tools.\n\
             Exit status: 0 no errors (warnings allowed), 1 errors or unreadable metadata, 2 usage.",
        )
        .arg(
            Arg::new("file")
                .value_name("FILE")
                .value_hint(ValueHint::FilePath)
                .help("A metadata file, or - for standard input"),
        )
        .arg(
            // Several templates at once (`-t a.yaml b.yaml`, as pre-commit passes them).
            render::template_arg().num_args(1..).action(ArgAction::Append).conflicts_with_all(["file", "stack_name"]),
        )
        .args(options::stack_args())
        .arg(
            value("configsets", "configsets", "CONFIGSETS", "The configSets cfn-init would run (default: every one)")
                .short('c'),
        )
        .arg(
            Arg::new("verbose")
                .short('v')
                .long("verbose")
                .action(ArgAction::SetTrue)
                .help("Say on standard error which checks were skipped for want of a value"),
        )
        .args(options::api_args())
        .arg(options::format_arg(&["text", "json", "sarif"], "How findings are printed"));
    render::with_template_values(command)
}

/// Metadata to check: its JSON text when there is one (a file, standard input), and
/// how it is named in findings.
pub struct Input {
    pub name: String,
    /// The file's path, for SARIF's artifact location (none for standard input or a stack).
    pub uri: Option<String>,
    pub value: Value,
    pub text: Option<String>,
    /// The template `text` is, when the metadata was rendered from one: findings are
    /// placed by its positions.
    pub template: Option<Template>,
    /// What the template's user data and cfn-hup files ask for (the calls found).
    pub found: Option<Value>,
    /// How many resources with Init a template's were checked in (for the summary line).
    pub resources: Option<usize>,
}

/// Runs `validate`; `read` reads a file's or a stack resource's metadata as cfn-init does.
pub fn run(matches: &ArgMatches, read: impl FnOnce(&MetadataSource, &ApiOptions) -> Read) -> ExitCode {
    let text = |id: &str| matches.get_one::<String>(id).cloned();
    if let Some(paths) = matches.get_many::<String>(TEMPLATE) {
        return validate_templates(matches, &paths.map(String::as_str).collect::<Vec<_>>());
    }
    let positionals: Vec<String> = text("file").into_iter().collect();
    let source = match source::choose(&positionals, text("stack_name"), text("logical_resource_id")) {
        Ok(source) => source,
        Err(message) => {
            complain(message);
            return ExitCode::from(2);
        }
    };
    let uri = match &source {
        MetadataSource::File(path) => Some(path.display().to_string()),
        _ => None,
    };
    let name = match &source {
        MetadataSource::Stack { stack, logical_id } => format!("stack {stack} resource {logical_id}"),
        MetadataSource::File(path) => path.display().to_string(),
        MetadataSource::Stdin => "<stdin>".to_string(),
    };
    let api = options::api_options_from(text);
    let findings = match read(&source, &api) {
        Read::Metadata(fetched) => {
            let requested = Requested::from_option(text("configsets").as_deref());
            let input = Input {
                name,
                uri,
                value: fetched.value,
                text: fetched.text,
                template: None,
                found: None,
                resources: None,
            };
            let checked = validate(&input, &requested);
            verbose(matches, &checked.skipped);
            return report(&input, &checked.findings, format(matches));
        }
        Read::NotJson { reason, line, column } => {
            // Shown against the file's text when it can be read again (not standard input).
            let text = match &source {
                MetadataSource::File(path) => std::fs::read_to_string(path).ok(),
                _ => None,
            };
            let input = Input { name, uri, value: Value::Null, text, template: None, found: None, resources: None };
            let finding = Finding {
                severity: Severity::Error,
                code: "E001",
                message: format!("invalid JSON: {}", reason.split(" at line ").next().unwrap_or(&reason)),
                pointer: String::new(),
                target: Target::Value,
                help: None,
            };
            (input, vec![(finding, Some((line.max(1), column.max(1))))])
        }
        Read::Failed(code) => return code,
    };
    let (input, findings) = findings;
    print(&input, &findings, format(matches))
}

/// A line on standard error; what it quotes of the input is shown safe for a terminal.
fn complain(message: &str) {
    eprintln!("cfn-bootstrap validate: {}", terminal_text::shown(message));
}

fn format(matches: &ArgMatches) -> &str {
    matches.get_one::<String>("format").map_or("text", String::as_str)
}

/// Every finding of `input`: duplicate keys, then the checks of its Init.
pub fn validate(input: &Input, requested: &Requested) -> Checked {
    let mut checked = check_init(&input.value, requested, None);
    let mut findings = input.text.as_deref().map(duplicates).unwrap_or_default();
    findings.append(&mut checked.findings);
    Checked { findings, ..checked }
}

/// With -v: each check skipped for want of a value, on standard error.
fn verbose(matches: &ArgMatches, skipped: &[Skipped]) {
    if !matches.get_flag("verbose") {
        return;
    }
    for skip in skipped {
        let names: Vec<String> = skip.unknowns.iter().map(|n| n.trim_end_matches("[]").to_string()).collect();
        complain(&format!(
            "{}: skipped {} ({}): it needs the value of {}",
            unknown::display(&skip.pointer),
            skip.code,
            rule(skip.code).1,
            names.join(", ")
        ));
    }
}

/// The keys given twice in a JSON text: all but the last are lost.
fn duplicates(text: &str) -> Vec<Finding> {
    let Some(map) = SourceMap::index(text) else { return Vec::new() };
    map.duplicates()
        .iter()
        .map(|duplicate| {
            let key = duplicate.pointer.rsplit('/').next().unwrap_or("").replace("~1", "/").replace("~0", "~");
            Finding {
                severity: Severity::Error,
                code: "E002",
                message: format!("duplicate key {key}: the value given at line {} is lost", duplicate.first.line),
                pointer: duplicate.pointer.clone(),
                target: Target::Key,
                help: Some("give each key once; merge the two values".into()),
            }
        })
        .collect()
}

/// The checks of the Init in `metadata`, for `platform` when something outside the Init
/// says which (the user data's `cfn-init.exe`), else for the one the Init says.
fn check_init(metadata: &Value, requested: &Requested, platform: Option<Platform>) -> Checked {
    let only = |finding: Finding| Checked { findings: vec![finding], skipped: Vec::new() };
    // An empty Init is not truthy: cfn-init says it found none and exits 0 (INIT-CLI-07).
    if metadata.get("AWS::CloudFormation::Init").is_some_and(|init| init.as_object().is_some_and(|m| m.is_empty())) {
        return only(Finding {
            severity: Severity::Warning,
            code: "W062",
            message: "AWS::CloudFormation::Init is empty: cfn-init finds nothing to run and exits 0".into(),
            pointer: "/AWS::CloudFormation::Init".into(),
            target: Target::Value,
            help: None,
        });
    }
    match InitDocument::parse(metadata) {
        Ok(document) => {
            let platform = platform.unwrap_or_else(|| Platform::of(&document));
            init_checks::check_on(metadata, &document, requested, platform)
        }
        Err(e) => only(Finding {
            severity: Severity::Error,
            code: "E003",
            message: e.to_string(),
            pointer: String::new(),
            target: Target::Value,
            help: Some("cfn-init has nothing to run without an AWS::CloudFormation::Init object".into()),
        }),
    }
}

/// `-t`: the Metadata of `-r`, or of every resource with Init, rendered and checked; the
/// findings point into the template (`/Resources/<R>/Metadata/...`), and a JSON
/// template's duplicate keys are found wherever they are. What stops a check (a template
/// that does not parse, Metadata that does not resolve) is a finding too (E004), in
/// every format; only a file that cannot be read is not.
fn validate_template(matches: &ArgMatches, path: &str) -> Result<(Input, Vec<Located>), ExitCode> {
    let text = |id: &str| matches.get_one::<String>(id).cloned();
    let source = match render::read_source(path) {
        Ok(source) => source,
        Err(message) => {
            complain(&message);
            return Err(ExitCode::FAILURE);
        }
    };
    let mut input = Input {
        name: path.to_string(),
        uri: (path != "-").then(|| path.to_string()),
        value: Value::Null,
        text: None,
        template: None,
        found: None,
        resources: Some(0),
    };
    let template = match Template::parse(path, &source) {
        Ok(template) => template,
        Err(error) => {
            let position = error.position.map(|p| (p.line, p.column));
            let finding = stopped(&error, String::new());
            input.text = Some(source);
            return Ok((input, vec![(finding, position)]));
        }
    };
    let verbose_on = matches.get_flag("verbose");
    let chosen = text("logical_resource_id");
    let resources: Vec<String> = match &chosen {
        Some(resource) => vec![resource.clone()],
        None => template.resources_with_init().into_iter().map(String::from).collect(),
    };
    // A template without Init has nothing for those checks, which is no error for a linter
    // run on every template of a repository; its user data is still read.
    let inputs = render::inputs(matches, text("region"));
    let mut findings = duplicates(&source);
    let (from_user_data, found) = match user_data::check(&template, &source) {
        Ok(checked) => checked,
        Err(error) => {
            findings.push(stopped(&error, String::new()));
            (Vec::new(), Value::Array(Vec::new()))
        }
    };
    let named = user_data::configsets_named(&found);
    let platforms = user_data::platforms(&found);
    let no_echo = template.no_echo_parameters();
    let mut skipped = Vec::new();
    // What is already reported, to tell a repeat in a set, not by a search of the list
    // (quadratic in the findings).
    let mut seen: HashSet<Finding> = findings.iter().cloned().collect();
    let mut seen_skips: HashSet<Skipped> = HashSet::new();
    for resource in &resources {
        let condition = template.value().pointer(&format!("/Resources/{}/Condition", pointer_step(resource)));
        if let Some(Value::String(condition)) = condition
            && (verbose_on || chosen.is_some())
        {
            complain(&format!(
                "note: {resource} is created only when its condition {condition} is true; it is checked as when created"
            ));
        }
        let checked = match template.metadata_for_checks(resource, &inputs) {
            Ok(checked) => checked,
            Err(error) => {
                findings.push(stopped(&error, format!("/Resources/{}", pointer_step(resource))));
                continue;
            }
        };
        if !checked.complete && verbose_on {
            complain(&format!(
                "{resource}: its conditions have more than {} combinations of values; the first {0} were checked",
                cfn_template::MAX_VARIANTS
            ));
        }
        let requested = requested_for(text("configsets").as_deref(), named.contains_key(resource));
        let platform = platforms.get(resource).copied();
        let within = format!("/Resources/{}/Metadata", pointer_step(resource));
        // Each combination of the conditions left undecided is checked; a finding of
        // several is reported once.
        for metadata in &checked.variants {
            let Checked { findings: mut found, skipped: skips } = check_init(metadata, &requested, platform);
            found.extend(init_checks::secrets_in_init(metadata, &no_echo));
            for finding in found {
                let finding = Finding { pointer: format!("{within}{}", finding.pointer), ..finding };
                if seen.insert(finding.clone()) {
                    findings.push(finding);
                }
            }
            for skip in skips {
                let skip = Skipped { pointer: format!("{within}{}", skip.pointer), ..skip };
                if seen_skips.insert(skip.clone()) {
                    skipped.push(skip);
                }
            }
        }
    }
    verbose(matches, &skipped);
    let input = Input {
        text: Some(source),
        template: Some(template),
        found: Some(found),
        resources: Some(resources.len()),
        ..input
    };
    let located = locate(&input, &findings, from_user_data);
    Ok((input, located))
}

/// A JSON pointer's step for a name (`~` and `/` escaped).
fn pointer_step(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// What stopped a template's check, as a finding (E004) at the error's place (else at
/// `pointer`), naming the resource it was in.
fn stopped(error: &cfn_template::Error, pointer: String) -> Finding {
    let message = match &error.resource {
        Some(resource) => format!("{resource}: {}", error.message),
        None => error.message.clone(),
    };
    let pointer = error.pointer.clone().unwrap_or(pointer);
    Finding { severity: Severity::Error, code: "E004", message, pointer, target: Target::Value, help: None }
}

/// Which configSets `-t` checks in a resource: those `-c` names, or every one; `told`
/// when the template's user data (or a hook's action) names the configSets cfn-init runs
/// it with, so that "cfn-init without --configsets would fail" is not said (W008).
fn requested_for(configsets: Option<&str>, told: bool) -> Requested {
    match Requested::from_option(configsets) {
        Requested::Every { .. } => Requested::Every { told },
        given => given,
    }
}

/// `-t` with one template or several: each checked, printed as one document (a JSON
/// array, one SARIF run), and the exit status of the worst.
fn validate_templates(matches: &ArgMatches, paths: &[&str]) -> ExitCode {
    let format = format(matches);
    if let [path] = paths {
        return match validate_template(matches, path) {
            Ok((input, located)) => print(&input, &located, format),
            Err(code) => code,
        };
    }
    let mut failed = false;
    let mut checked = Vec::new();
    for path in paths {
        match validate_template(matches, path) {
            Ok(one) => checked.push(one),
            Err(_) => failed = true,
        }
    }
    let checked: Vec<(Input, Vec<Located>)> = checked.into_iter().map(|(i, f)| (i, shown(&f))).collect();
    let written = write_out(|out| match format {
        "json" => write_json(out, &Value::Array(checked.iter().map(|(i, f)| as_json(i, f)).collect())),
        "sarif" => {
            let mut documents = checked.iter().map(|(i, f)| as_sarif(i, f));
            let mut first = documents.next().unwrap_or_else(|| as_sarif(&Input::empty(), &[]));
            for document in documents {
                let results = document["runs"][0]["results"].as_array().cloned().unwrap_or_default();
                if let Some(all) = first["runs"][0]["results"].as_array_mut() {
                    all.extend(results);
                }
            }
            write_json(out, &first)
        }
        _ => checked.iter().try_for_each(|(i, f)| write_text(out, i, f)),
    });
    if written.is_err() {
        return ExitCode::FAILURE;
    }
    let errors = checked.iter().any(|(_, f)| f.iter().any(|(f, _)| f.severity == Severity::Error));
    if failed || errors { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

impl Input {
    fn empty() -> Input {
        Input {
            name: String::new(),
            uri: None,
            value: Value::Null,
            text: None,
            template: None,
            found: None,
            resources: None,
        }
    }
}

fn report(input: &Input, findings: &[Finding], format: &str) -> ExitCode {
    print(input, &locate(input, findings, Vec::new()), format)
}

/// Each finding with its line and column, `placed` ones (whose place is already known)
/// among them, in the order of the text.
fn locate(input: &Input, findings: &[Finding], placed: Vec<Located>) -> Vec<Located> {
    let map = input.text.as_deref().and_then(SourceMap::index);
    let mut located: Vec<(Finding, Option<(usize, usize)>)> = findings
        .iter()
        .map(|f| {
            // A template knows where its values are, YAML too; a JSON text's map also
            // knows where its keys are.
            let in_template = input.template.as_ref().and_then(|t| match f.target {
                Target::Key => t.key_position(&f.pointer),
                Target::Value => t.position(&f.pointer),
            });
            let position = in_template.map(|p| (p.line, p.column)).or_else(|| {
                let in_text = map.as_ref().and_then(|m| match f.target {
                    Target::Key => m.key(&f.pointer),
                    Target::Value => m.value(&f.pointer),
                });
                in_text.map(|Position { line, column, .. }| (line, column))
            });
            (f.clone(), position)
        })
        .collect();
    located.extend(placed);
    // In the order of the text, as a compiler reports (stable: without positions, as found).
    located.sort_by_key(|(_, position)| position.unwrap_or((usize::MAX, usize::MAX)));
    located
}

type Located = (Finding, Option<(usize, usize)>);

fn print(input: &Input, findings: &[Located], format: &str) -> ExitCode {
    let findings = &shown(findings);
    let written = write_out(|out| match format {
        "json" => write_json(out, &as_json(input, findings)),
        "sarif" => write_json(out, &as_sarif(input, findings)),
        _ => write_text(out, input, findings),
    });
    if written.is_err() {
        return ExitCode::FAILURE;
    }
    if findings.iter().any(|(f, _)| f.severity == Severity::Error) { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Standard output, buffered, to `write` findings to as they are formatted (one string
/// of the whole output once took gigabytes), and flushed.
fn write_out(write: impl FnOnce(&mut BufWriter<io::StdoutLock<'static>>) -> io::Result<()>) -> io::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    write(&mut out)?;
    out.flush()
}

/// A JSON document, pretty, and a newline.
fn write_json(out: &mut impl Write, value: &Value) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    out.write_all(b"\n")
}

/// The most findings of one code shown at one place (a line, or a pointer when there is
/// no line); the rest are counted: one command line naming thousands of unknown
/// configSets is one mistake, not thousands of screens.
pub const MAX_PER_PLACE: usize = 5;

/// The findings shown, in order, each with how many more like it are not shown (on the
/// last one shown of its place). Every format shows the same ones; the totals of errors
/// and warnings still count them all.
fn capped(findings: &[Located]) -> Vec<(&Located, usize)> {
    fn place((finding, position): &Located) -> (Option<usize>, &str, &'static str) {
        let pointer = if position.is_none() { finding.pointer.as_str() } else { "" };
        (position.map(|p| p.0), pointer, finding.code)
    }
    let mut totals: HashMap<_, usize> = HashMap::new();
    for located in findings {
        *totals.entry(place(located)).or_default() += 1;
    }
    let mut seen: HashMap<_, usize> = HashMap::new();
    findings
        .iter()
        .filter_map(|located| {
            let key = place(located);
            let n = seen.entry(key).or_default();
            *n += 1;
            match *n {
                n if n < MAX_PER_PLACE => Some((located, 0)),
                n if n == MAX_PER_PLACE => Some((located, totals[&key] - MAX_PER_PLACE)),
                _ => None,
            }
        })
        .collect()
}

/// The findings as they are shown: an unknown as `${NAME}`.
fn shown(findings: &[Located]) -> Vec<Located> {
    findings
        .iter()
        .map(|(f, position)| {
            let message = unknown::display(&f.message);
            let help = f.help.as_deref().map(unknown::display);
            (Finding { message, help, pointer: unknown::display(&f.pointer), ..f.clone() }, *position)
        })
        .collect()
}

fn count(findings: &[Located], severity: Severity) -> usize {
    findings.iter().filter(|(f, _)| f.severity == severity).count()
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

/// The most characters of a line quoted under a finding: a compact JSON template is one
/// line, and quoting all of it for each finding made the output grow with the square of
/// the input.
const QUOTED: usize = 160;

/// The part of `line` quoted under a finding at `column` (1-based, in characters): all
/// of it when short, else [`QUOTED`] characters around the column with `…` where it is
/// cut; and the characters before the column in the part quoted, `…` included.
fn quoted(line: &str, column: usize) -> (String, String) {
    let at = column.saturating_sub(1);
    let start = at.saturating_sub(QUOTED / 2);
    let mut chars = line.chars().skip(start);
    let mut part: String = chars.by_ref().take(QUOTED).collect();
    let cut_after = chars.next().is_some();
    let mut before: String = part.chars().take(at - start).collect();
    if start > 0 {
        part.insert(0, '…');
        before.insert(0, ' ');
    }
    if cut_after {
        part.push('…');
    }
    (part, before)
}

/// The compiler-like form, written as it is formatted; what the input gives is shown safe
/// for a terminal ([`terminal_text`]).
pub fn write_text(out: &mut impl Write, input: &Input, findings: &[Located]) -> io::Result<()> {
    let lines = input.text.as_deref().map(Lines::new);
    let mut write = |text: &str| terminal_text::write(out, text);
    for ((finding, position), more) in capped(findings) {
        let head = format!("{}[{}]: {}", finding.severity.as_str(), finding.code, finding.message);
        let mut indent = "  ".to_string();
        match position {
            Some((line, column)) => {
                write(&format!("{}:{line}:{column}: {head}\n", input.name))?;
                if let Some(lines) = &lines {
                    let (source, before) = quoted(lines.line(*line), *column);
                    let width = line.to_string().len();
                    // The caret's indent copies the line's tabs so it stands under the place.
                    let caret: String = before.chars().map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
                    write(&format!("{:width$} |\n{line} | {source}\n{:width$} | {caret}^\n", "", ""))?;
                    indent = format!("{:width$} ", "");
                }
            }
            None => {
                let at = if finding.pointer.is_empty() { String::new() } else { format!(" (at {})", finding.pointer) };
                write(&format!("{}: {head}{at}\n", input.name))?;
            }
        }
        if let Some(help) = &finding.help {
            write(&format!("{indent}= help: {help}\n"))?;
        }
        if more > 0 {
            write(&format!("{indent}= … and {more} more like this\n"))?;
        }
    }
    let (errors, warnings) = (count(findings, Severity::Error), count(findings, Severity::Warning));
    let checked = match input.resources {
        Some(n) => format!(" in {} with AWS::CloudFormation::Init", plural(n, "resource")),
        None => String::new(),
    };
    write(&format!("{}: {}, {}{checked}\n", input.name, plural(errors, "error"), plural(warnings, "warning")))
}

fn as_json(input: &Input, findings: &[Located]) -> Value {
    let mut value = json!({
        "source": input.name,
        "errors": count(findings, Severity::Error),
        "warnings": count(findings, Severity::Warning),
        "findings": capped(findings).into_iter().map(|((f, position), more)| {
            let mut finding = json!({
                "severity": f.severity.as_str(),
                "code": f.code,
                "rule": rule(f.code).1,
                "message": f.message,
                "pointer": f.pointer,
                "line": position.map(|p| p.0),
                "column": position.map(|p| p.1),
                "help": f.help,
            });
            if more > 0 {
                finding["more_like_this"] = json!(more);
            }
            finding
        }).collect::<Vec<_>>(),
    });
    if let Some(found) = &input.found {
        value["user_data"] = found.clone();
    }
    value
}

fn rule(code: &str) -> (&'static str, &'static str, &'static str) {
    RULES.iter().copied().find(|r| r.0 == code).unwrap_or(("", "", ""))
}

/// SARIF 2.1.0: one run, every rule described, each result with its file region (when
/// the metadata came from a file) and its JSON pointer as a logical location.
fn as_sarif(input: &Input, findings: &[Located]) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, name, description)| json!({"id": id, "name": name, "shortDescription": {"text": description}}))
        .collect();
    let results: Vec<Value> = capped(findings)
        .into_iter()
        .map(|((f, position), more)| {
            let mut location = json!({"logicalLocations": [{"fullyQualifiedName": f.pointer, "kind": "object"}]});
            if let (Some((line, column)), Some(uri)) = (position, &input.uri) {
                location["physicalLocation"] = json!({
                    "artifactLocation": {"uri": uri},
                    "region": {"startLine": line, "startColumn": column},
                });
            }
            let text = match &f.help {
                Some(help) => format!("{} (help: {help})", f.message),
                None => f.message.clone(),
            };
            let mut result = json!({
                "ruleId": f.code,
                "ruleIndex": RULES.iter().position(|r| r.0 == f.code),
                "level": f.severity.as_str(),
                "message": {"text": text},
                "locations": [location],
            });
            if more > 0 {
                // A result's property bag (SARIF 2.1.0 §3.8) holds what SARIF has no field for.
                result["properties"] = json!({"moreLikeThis": more});
            }
            result
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cfn-bootstrap validate",
                "version": cfn_aws::VERSION,
                "rules": rules,
            }},
            "results": results,
        }],
    })
}
