//! configSet resolution over random graphs of configSets (INIT-CS-01..06): references to
//! other sets, cycles, missing names and malformed entries. Resolution always ends, and
//! its answer is the one a separate, recursive reading of SPEC §10.1 gives: the first
//! malformed entry, the first unknown name, no set without references, the sets caught
//! in or behind a cycle, or each set's configs in order with duplicates kept.

use crate::config;
use cfn_configsets::configsets;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

const SETS: &[&str] = &["default", "a", "b", "c", "d", "e"];
const CONFIGS: &[&str] = &["config", "c1", "c2"];
const BAD_ENTRY: &str =
    "Config definitions must be either a config name or a reference in the format {'ConfigSet':<config set name>}";

/// One entry of a configSet definition, as the generator builds it.
#[derive(Debug, Clone)]
enum Entry {
    Config(String),
    Reference(String),
    /// A number, or an object without a string `ConfigSet`.
    Bad(Value),
    List(Vec<Entry>),
}

impl Entry {
    /// The same entry with every name defined and nothing malformed (malformed entries
    /// and unknown names would otherwise end most cases early).
    fn cleaned(&self, sets: &[&str]) -> Entry {
        match self {
            Entry::Config(_) | Entry::Bad(_) if sets.is_empty() => Entry::Config("c1".into()),
            Entry::Config(name) if name == "missing" => Entry::Config("c2".into()),
            Entry::Config(name) => Entry::Config(name.clone()),
            Entry::Reference(name) if sets.contains(&name.as_str()) => Entry::Reference(name.clone()),
            Entry::Reference(name) => Entry::Reference(sets[name.len() % sets.len()].to_string()),
            Entry::Bad(_) => Entry::Config("config".into()),
            Entry::List(items) => Entry::List(items.iter().map(|i| i.cleaned(sets)).collect()),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Entry::Config(name) => json!(name),
            Entry::Reference(name) => json!({"ConfigSet": name, "ignored": 1}),
            Entry::Bad(value) => value.clone(),
            Entry::List(items) => Value::Array(items.iter().map(Entry::to_json).collect()),
        }
    }

    /// The config names and references in order, or `None` when one entry is malformed.
    fn flat(&self, out: &mut Vec<Flat>) -> Option<()> {
        match self {
            Entry::Config(name) => out.push(Flat::Config(name.clone())),
            Entry::Reference(name) => out.push(Flat::Reference(name.clone())),
            Entry::Bad(_) => return None,
            Entry::List(items) => items.iter().try_for_each(|item| item.flat(out))?,
        }
        Some(())
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Flat {
    Config(String),
    Reference(String),
}

fn entry() -> impl Strategy<Value = Entry> {
    // Names include ones that are not defined (`zz`, `missing`).
    let leaf = prop_oneof![
        6 => prop::sample::select([CONFIGS, &["missing"]].concat()).prop_map(|n| Entry::Config(n.into())),
        5 => prop::sample::select([SETS, &["zz"]].concat()).prop_map(|n| Entry::Reference(n.into())),
        1 => prop::sample::select(vec![
            json!(1), json!(null), json!({"Other": "a"}), json!({"ConfigSet": 1}), json!(true),
        ])
        .prop_map(Entry::Bad),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| prop::collection::vec(inner, 0..4).prop_map(Entry::List))
}

/// Defined sets (document order, each name once) and whether `config`-like keys exist.
fn graph() -> impl Strategy<Value = Vec<(String, Entry)>> {
    prop::sample::subsequence(SETS, 0..=SETS.len())
        .prop_shuffle()
        .prop_flat_map(|names| {
            let n = names.len();
            (Just(names), prop::collection::vec(entry(), n))
        })
        .prop_map(|(names, entries)| names.into_iter().map(String::from).zip(entries).collect())
}

/// Graphs with every name defined and nothing malformed: what is left to find is
/// cycles, sets without references, and the order of the runs.
fn clean_graph() -> impl Strategy<Value = Vec<(String, Entry)>> {
    graph().prop_map(|sets| {
        let names: Vec<&str> = sets.iter().map(|(n, _)| n.as_str()).collect();
        sets.iter().map(|(n, e)| (n.clone(), e.cleaned(&names))).collect()
    })
}

/// What SPEC §10.1 says resolving `sets` gives, read recursively.
fn expected(sets: &[(String, Entry)], init: &Map<String, Value>) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut flat = Vec::new();
    for (_, entry) in sets {
        let mut list = Vec::new();
        entry.flat(&mut list).ok_or_else(|| BAD_ENTRY.to_string())?;
        flat.push(list);
    }
    let defined = |name: &str| sets.iter().any(|(n, _)| n == name);
    for list in &flat {
        for item in list {
            match item {
                Flat::Reference(r) if !defined(r) => {
                    return Err(format!("Configuration set {r} was referenced but not defined"));
                }
                Flat::Config(c) if !init.contains_key(c) => {
                    return Err(format!("No configuration found with name: {c}"));
                }
                _ => {}
            }
        }
    }
    if flat.iter().all(|list| list.iter().any(|i| matches!(i, Flat::Reference(_)))) {
        return Err(
            "No configSets exist without references; this creates a circular dependency and is not allowed".into()
        );
    }
    let index: HashMap<&str, usize> = sets.iter().enumerate().map(|(i, (n, _))| (n.as_str(), i)).collect();
    // A set resolves when nothing it reaches lies on a cycle: depth-first, with the sets
    // on the current path marked.
    fn expand(
        i: usize,
        flat: &[Vec<Flat>],
        index: &HashMap<&str, usize>,
        on_path: &mut Vec<bool>,
        done: &mut HashMap<usize, Option<Vec<String>>>,
    ) -> Option<Vec<String>> {
        if let Some(known) = done.get(&i) {
            return known.clone();
        }
        if on_path[i] {
            return None;
        }
        on_path[i] = true;
        let mut out = Some(Vec::new());
        for item in &flat[i] {
            let part = match item {
                Flat::Config(c) => Some(vec![c.clone()]),
                Flat::Reference(r) => expand(index[r.as_str()], flat, index, on_path, done),
            };
            out = match (out, part) {
                (Some(mut list), Some(part)) => {
                    list.extend(part);
                    Some(list)
                }
                _ => None,
            };
        }
        on_path[i] = false;
        done.insert(i, out.clone());
        out
    }
    let mut done = HashMap::new();
    let results: Vec<Option<Vec<String>>> =
        (0..sets.len()).map(|i| expand(i, &flat, &index, &mut vec![false; sets.len()], &mut done)).collect();
    let culprits: Vec<&str> =
        sets.iter().zip(&results).filter(|(_, r)| r.is_none()).map(|((n, _), _)| n.as_str()).collect();
    if !culprits.is_empty() {
        return Err(format!(
            "At least one circular dependency detected; this is not allowed. Culprits: {}",
            culprits.join(", ")
        ));
    }
    Ok(sets.iter().zip(results).map(|((n, _), r)| (n.clone(), r.unwrap_or_default())).collect())
}

proptest! {
    #![proptest_config(config(2048))]

    /// Resolution ends and agrees with the recursive reading of the SPEC.
    #[test]
    fn resolution_agrees_with_the_spec(
        (sets, has_configs) in prop_oneof![
            (graph(), prop::sample::subsequence(CONFIGS, 0..=CONFIGS.len())),
            (clean_graph(), Just(CONFIGS.to_vec())),
        ],
    ) {
        let mut init: Map<String, Value> = has_configs.iter().map(|c| (c.to_string(), json!({}))).collect();
        let definitions = sets.iter().map(|(n, e)| (n.clone(), e.to_json())).collect();
        init.insert("configSets".into(), Value::Object(definitions));
        let got = configsets::resolve(&init).map_err(|e| e.0);
        let want = expected(&sets, &init);
        match (&got, &want) {
            // The culprits' order is not part of the message's contract (SPEC §10.1).
            (Err(g), Err(w)) if w.contains("Culprits: ") => {
                let names = |m: &str| {
                    let list = m.rsplit("Culprits: ").next().unwrap();
                    let mut v: Vec<String> = list.split(", ").map(String::from).collect();
                    v.sort();
                    v
                };
                prop_assert!(g.contains("Culprits: "), "{g}");
                prop_assert_eq!(names(g), names(w));
            }
            _ => prop_assert_eq!(got, want),
        }
    }

    /// Without `configSets`, `default` runs `config`, whatever else is there (INIT-CS-01).
    #[test]
    fn without_configsets_default_runs_config(keys in prop::collection::vec("[a-zA-Z]{0,8}", 0..5)) {
        let init: Map<String, Value> = keys.into_iter().filter(|k| k != "configSets").map(|k| (k, json!({}))).collect();
        prop_assert_eq!(configsets::resolve(&init), Ok(vec![("default".to_string(), vec!["config".to_string()])]));
    }

}
