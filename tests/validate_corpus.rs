//! Issue 30 point 1: `validate -t` on real templates nobody here wrote
//! (tests/corpus: public templates with AWS::CloudFormation::Init, their source, commit
//! and licence in index.tsv). Every template that deploys validates with exit 0 (unless
//! its errors are reviewed true ones), and every finding on any of them is in
//! tests/corpus/expected.tsv with the reason it is true: a new false finding, or a
//! reviewed one that went away, fails the test. And the
//! property that an unknown only ever skips a check, on these templates: each finding
//! made without parameter values is made with some values.

mod common;
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn corpus() -> PathBuf {
    workspace().join("tests/corpus")
}

/// A row of index.tsv.
struct Entry {
    file: String,
    repo: String,
    licence: String,
    deploys: bool,
}

fn entries() -> Vec<Entry> {
    let index = read(&corpus().join("index.tsv"));
    let mut lines = index.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let (file, repo, licence, deploys) = (column("file"), column("repo"), column("licence"), column("deploys"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let cells: Vec<&str> = line.split('\t').collect();
            Entry {
                file: cells[file].to_string(),
                repo: cells[repo].to_string(),
                licence: cells[licence].to_string(),
                deploys: cells[deploys] == "yes",
            }
        })
        .collect()
}

/// The reviewed findings: (file, code, pointer) → why it is true.
fn expected() -> BTreeMap<(String, String, String), String> {
    read(&corpus().join("expected.tsv"))
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let cells: Vec<&str> = line.splitn(4, '\t').collect();
            assert_eq!(cells.len(), 4, "expected.tsv: file, code, pointer, reason: {line}");
            assert!(!cells[3].trim().is_empty(), "expected.tsv: a finding without its reason: {line}");
            ((cells[0].to_string(), cells[1].to_string(), cells[2].to_string()), cells[3].to_string())
        })
        .collect()
}

fn template(file: &str) -> String {
    corpus().join("templates").join(file).display().to_string()
}

/// The (code, pointer) of each finding of one template's JSON report.
fn findings(report: &Value) -> BTreeSet<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap().to_string(), f["pointer"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn the_corpus_is_what_its_index_says_and_every_repository_has_its_licence() {
    let entries = entries();
    let listed: BTreeSet<&str> = entries.iter().map(|e| e.file.as_str()).collect();
    let present: BTreeSet<String> = std::fs::read_dir(corpus().join("templates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, present.iter().map(String::as_str).collect(), "index.tsv and templates/ differ");
    let permissive = ["Apache-2.0", "MIT", "MIT-0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "CC0-1.0", "Unlicense"];
    for entry in &entries {
        assert!(permissive.contains(&entry.licence.as_str()), "{}: licence {}", entry.file, entry.licence);
        // The repository's own text when it has its own copyright line, else the standard
        // text of its licence (tests/corpus/licenses/README.md).
        let own = corpus().join("licenses").join(format!("{}.txt", entry.repo.replace('/', "__")));
        let standard = corpus().join("licenses").join(format!("{}.txt", entry.licence));
        assert!(own.is_file() || standard.is_file(), "{}: no licence text {}", entry.file, own.display());
        assert!(read(&PathBuf::from(template(&entry.file))).contains("AWS::CloudFormation::Init"), "{}", entry.file);
    }
    let repos: BTreeSet<&str> = entries.iter().map(|e| e.repo.as_str()).collect();
    println!("corpus: {} templates from {} repositories", entries.len(), repos.len());
}

#[test]
fn every_deploying_template_validates_and_every_finding_is_reviewed() {
    let sandbox = Sandbox::with_bootstrap();
    let entries = entries();
    let expected = expected();
    // One process for the whole corpus, as a repository's pre-commit hook runs it.
    let paths: Vec<String> = entries.iter().map(|e| template(&e.file)).collect();
    let run = sandbox.cmd("cfn-bootstrap").args(["validate", "--format", "json", "-t"]).args(&paths).run();
    let reports: Vec<Value> = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{run}"));
    assert_eq!(reports.len(), entries.len(), "{run}");
    let mut failures = Vec::new();
    let mut seen = BTreeSet::new();
    let mut clean = 0;
    let mut with_true_errors = 0;
    for (entry, report) in entries.iter().zip(&reports) {
        assert!(report["source"].as_str().unwrap().ends_with(&entry.file), "{report}");
        let found = findings(report);
        // A template that deploys exits 0, unless its errors are reviewed true ones (a
        // cfn-hup hook naming a resource the template lacks: the stack deploys, the hook
        // never fires); those are counted apart.
        if entry.deploys && report["errors"].as_u64() != Some(0) {
            let errors = report["findings"].as_array().unwrap().iter().filter(|f| f["severity"] == "error");
            let reviewed = errors.clone().all(|f| {
                let key =
                    (entry.file.clone(), f["code"].as_str().unwrap().into(), f["pointer"].as_str().unwrap().into());
                expected.contains_key(&key)
            });
            if reviewed {
                with_true_errors += 1;
            } else {
                failures.push(format!("{}: deploys, and validate reports {} error(s)", entry.file, report["errors"]));
            }
        }
        clean += usize::from(found.is_empty());
        for (code, pointer) in found {
            let key = (entry.file.clone(), code, pointer);
            if !expected.contains_key(&key) {
                let finding = report["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["code"] == key.1.as_str() && f["pointer"] == key.2.as_str())
                    .map(|f| format!("{}:{}: {}", f["line"], f["column"], f["message"]))
                    .unwrap_or_default();
                failures.push(format!("{}\t{}\t{}\t(not reviewed: {finding})", key.0, key.1, key.2));
            }
            seen.insert(key);
        }
    }
    for key in expected.keys().filter(|k| !seen.contains(*k)) {
        failures.push(format!("expected.tsv lists a finding validate no longer makes: {key:?}"));
    }
    println!(
        "corpus: {clean} of {} templates without any finding; {with_true_errors} deploying templates with a reviewed true error",
        entries.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A small deterministic generator (no flakes: the same values every run).
struct Lcg(u64);

impl Lcg {
    fn pick<'a>(&mut self, items: &'a [String]) -> &'a String {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        &items[(self.0 >> 33) as usize % items.len()]
    }
}

/// Each parameter's candidate values: its AllowedValues, else its Default, the texts the
/// template's Conditions compare with, and a plain value of its type.
fn candidates(template: &Value) -> BTreeMap<String, Vec<String>> {
    let mut texts: BTreeSet<String> = BTreeSet::new();
    let mut pending: Vec<&Value> = template.get("Conditions").into_iter().collect();
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => {
                texts.insert(text.clone());
            }
            Value::Array(items) => pending.extend(items),
            Value::Object(entries) => pending.extend(entries.values()),
            _ => {}
        }
    }
    let parameters = template.get("Parameters").and_then(Value::as_object).into_iter().flatten();
    parameters
        .map(|(name, declaration)| {
            let kind = declaration.get("Type").and_then(Value::as_str).unwrap_or("String");
            let allowed: Vec<String> = declaration
                .get("AllowedValues")
                .and_then(Value::as_array)
                .map(|values| values.iter().filter_map(scalar).collect())
                .unwrap_or_default();
            let values = if !allowed.is_empty() {
                allowed
            } else {
                let plain = if kind == "Number" || kind == "List<Number>" { "8" } else { "value-1" };
                // A Number takes only numbers: another text is refused (E004), which checks nothing.
                let fits = |t: &&String| !t.contains(',') && (plain != "8" || t.parse::<f64>().is_ok());
                let mut values: Vec<String> = texts.iter().filter(fits).cloned().collect();
                values.extend(declaration.get("Default").and_then(scalar));
                values.push(plain.to_string());
                values
            };
            (name.clone(), values)
        })
        .collect()
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Runs per template: with values drawn from [`candidates`].
const ASSIGNMENTS: usize = 6;

#[test]
fn findings_without_values_are_made_with_some_values() {
    let sandbox = Sandbox::with_bootstrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut unjudged = Vec::new();
    for entry in entries() {
        let path = template(&entry.file);
        let validate = |values: &[(String, String)]| {
            let mut command = sandbox.cmd("cfn-bootstrap");
            command = command.args(["validate", "--format", "json", "-t", &path]);
            for (name, value) in values {
                command = command.args(["-p", &format!("{name}={value}")]);
            }
            let run = command.run();
            serde_json::from_str::<Value>(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{run}"))
        };
        let without = findings(&validate(&[]));
        if without.is_empty() {
            continue;
        }
        let Ok(parsed) = cfn_template::Template::parse(&path, &read(&PathBuf::from(&path))) else { continue };
        let candidates = candidates(parsed.value());
        if candidates.is_empty() {
            continue;
        }
        checked += 1;
        let mut generator = Lcg(entry.file.len() as u64);
        let mut with = BTreeSet::new();
        let mut accepted = 0;
        for round in 0..ASSIGNMENTS {
            // First the Defaults (each parameter's, else its first candidate), then draws.
            let values: Vec<(String, String)> = candidates
                .iter()
                .map(|(name, values)| {
                    let default = parsed.value()["Parameters"][name.as_str()].get("Default").and_then(scalar);
                    let value = match (round, default) {
                        (0, Some(default)) => default,
                        (0, None) => values[0].clone(),
                        _ => generator.pick(values).clone(),
                    };
                    (name.clone(), value)
                })
                .collect();
            // E004 with values is the values' fault (a value its pattern refuses): nothing
            // is checked with them, so they neither make nor miss a finding.
            let found = findings(&validate(&values));
            if found.iter().any(|(code, _)| code == "E004") && !without.iter().any(|(code, _)| code == "E004") {
                continue;
            }
            accepted += 1;
            with.extend(found);
        }
        if accepted == 0 {
            unjudged.push(entry.file.clone());
            continue;
        }
        for (code, pointer) in without.difference(&with) {
            if code != "E004" {
                failures.push(format!("{}: {code} at {pointer} is made without values, never with them", entry.file));
            }
        }
    }
    println!("corpus: {checked} templates with findings and parameters checked with {ASSIGNMENTS} sets of values");
    if !unjudged.is_empty() {
        println!("corpus: no set of values drawn fits the parameters of {unjudged:?}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
