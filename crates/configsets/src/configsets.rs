//! configSet resolution (INIT-CS-01..06): every configSet is checked and flattened into
//! the list of config names it runs, before anything runs.
//!
//! A configSet entry is a config name, a `{"ConfigSet": "<name>"}` reference to another
//! configSet, or a (nested) list of those. References are resolved in dependency order;
//! duplicates are kept, so a config listed twice runs twice.

use crate::model::ModelError;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// configSet name → the config names it runs, in order.
pub type ConfigSets = Vec<(String, Vec<String>)>;

/// The most config runs all configSets together may expand to. A reference repeats
/// everything the set it names runs, so forty sets that each name the one before twice
/// would expand to 2^40 runs and exhaust memory before anything runs; real templates
/// run a few dozen.
pub const MAX_CONFIG_RUNS: usize = 100_000;

const NOT_A_MAPPING: &str = "configSets should be a mapping of name to list";
const BAD_ENTRY: &str =
    "Config definitions must be either a config name or a reference in the format {'ConfigSet':<config set name>}";

enum Entry {
    Config(String),
    Reference(String),
}

/// Resolves the configSets of an `AWS::CloudFormation::Init` object.
pub fn resolve(init: &Map<String, Value>) -> Result<ConfigSets, ModelError> {
    let definitions = match init.get("configSets") {
        // No configSets: one virtual set `default` running the config named `config`.
        None => return Ok(vec![("default".to_string(), vec!["config".to_string()])]),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(ModelError(NOT_A_MAPPING.into())),
    };

    let mut entries: Vec<(String, Vec<Entry>)> = Vec::new();
    for (name, definition) in definitions {
        let mut flat = Vec::new();
        flatten(definition, &mut flat)?;
        entries.push((name.clone(), flat));
    }
    for (_, flat) in &entries {
        for entry in flat {
            match entry {
                Entry::Reference(r) if !definitions.contains_key(r) => {
                    return Err(ModelError(format!("Configuration set {r} was referenced but not defined")));
                }
                Entry::Config(c) if !init.contains_key(c) => {
                    return Err(ModelError(format!("No configuration found with name: {c}")));
                }
                _ => {}
            }
        }
    }

    // Kahn's algorithm over the references.
    let references = |flat: &[Entry]| -> HashSet<String> {
        flat.iter().filter_map(|e| if let Entry::Reference(r) = e { Some(r.clone()) } else { None }).collect()
    };
    if entries.iter().all(|(_, flat)| !references(flat).is_empty()) {
        return Err(ModelError(
            "No configSets exist without references; this creates a circular dependency and is not allowed".into(),
        ));
    }
    let mut resolved: HashMap<String, Vec<String>> = HashMap::new();
    let mut total_runs = 0usize;
    loop {
        let ready: Vec<usize> = (0..entries.len())
            .filter(|&i| !resolved.contains_key(&entries[i].0))
            .filter(|&i| references(&entries[i].1).iter().all(|r| resolved.contains_key(r)))
            .collect();
        if ready.is_empty() {
            break;
        }
        for i in ready {
            // Counted before anything is copied.
            let runs = entries[i].1.iter().fold(0usize, |sum, entry| match entry {
                Entry::Config(_) => sum.saturating_add(1),
                Entry::Reference(r) => sum.saturating_add(resolved[r].len()),
            });
            total_runs = total_runs.saturating_add(runs);
            if total_runs > MAX_CONFIG_RUNS {
                return Err(ModelError(format!(
                    "The configSets run more than {MAX_CONFIG_RUNS} configs in all (configSet {} alone runs {runs}); \
                     this is not allowed",
                    entries[i].0
                )));
            }
            let configs = entries[i]
                .1
                .iter()
                .flat_map(|entry| match entry {
                    Entry::Config(c) => vec![c.clone()],
                    Entry::Reference(r) => resolved[r].clone(),
                })
                .collect();
            resolved.insert(entries[i].0.clone(), configs);
        }
    }
    let culprits: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).filter(|n| !resolved.contains_key(*n)).collect();
    if !culprits.is_empty() {
        return Err(ModelError(format!(
            "At least one circular dependency detected; this is not allowed. Culprits: {}",
            culprits.join(", ")
        )));
    }
    Ok(entries
        .into_iter()
        .map(|(name, _)| {
            let configs = resolved.remove(&name).unwrap_or_default();
            (name, configs)
        })
        .collect())
}

fn flatten(value: &Value, out: &mut Vec<Entry>) -> Result<(), ModelError> {
    match value {
        Value::String(name) => out.push(Entry::Config(name.clone())),
        Value::Array(items) => {
            for item in items {
                flatten(item, out)?;
            }
        }
        Value::Object(map) => match map.get("ConfigSet") {
            Some(Value::String(name)) => out.push(Entry::Reference(name.clone())),
            _ => return Err(ModelError(BAD_ENTRY.into())),
        },
        _ => return Err(ModelError(BAD_ENTRY.into())),
    }
    Ok(())
}

/// The configSets to run, from `-c`: names split on commas and trimmed (an improvement:
/// the reference kept the spaces of `"a, b"` and then found no configSet " b"); an
/// absent or blank option means `default`.
pub fn requested(option: Option<&str>) -> Vec<String> {
    match option.map(str::trim).filter(|o| !o.is_empty()) {
        None => vec!["default".to_string()],
        Some(list) => list.split(',').map(|n| n.trim().to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(init: Value) -> Result<ConfigSets, String> {
        resolve(init.as_object().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn without_configsets_default_runs_config() {
        assert_eq!(run(json!({"config": {}})), Ok(vec![("default".into(), vec!["config".into()])]));
        assert_eq!(run(json!({})), Ok(vec![("default".into(), vec!["config".into()])]));
    }

    #[test]
    fn strings_lists_nesting_references_and_duplicates() {
        let init = json!({
            "configSets": {
                "one": "c1",
                "nested": [["c1", ["c2"]], "c1"],
                "ref": [{"ConfigSet": "one"}, "c2", {"ConfigSet": "nested"}],
                "default": {"ConfigSet": "ref"}
            },
            "c1": {}, "c2": {}
        });
        let sets = run(init).unwrap();
        let get = |n: &str| sets.iter().find(|(k, _)| k == n).unwrap().1.clone();
        assert_eq!(get("one"), ["c1"]);
        assert_eq!(get("nested"), ["c1", "c2", "c1"]);
        assert_eq!(get("ref"), ["c1", "c2", "c1", "c2", "c1"]);
        assert_eq!(get("default"), get("ref"));
        // Document order is kept.
        assert_eq!(sets.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["one", "nested", "ref", "default"]);
    }

    #[test]
    fn errors_use_the_reference_messages() {
        let cases = [
            (json!({"configSets": ["a"]}), "configSets should be a mapping of name to list"),
            (
                json!({"configSets": {}}),
                "No configSets exist without references; this creates a circular dependency and is not allowed",
            ),
            (json!({"configSets": {"a": [1]}}), BAD_ENTRY),
            (json!({"configSets": {"a": [{"Other": "x"}]}}), BAD_ENTRY),
            (
                json!({"configSets": {"a": [{"ConfigSet": "zz"}]}}),
                "Configuration set zz was referenced but not defined",
            ),
            (json!({"configSets": {"a": ["nope"]}}), "No configuration found with name: nope"),
            (
                json!({"configSets": {"a": [{"ConfigSet": "b"}], "b": [{"ConfigSet": "a"}]}}),
                "No configSets exist without references; this creates a circular dependency and is not allowed",
            ),
            (
                json!({"configSets": {"a": ["x"], "c": [{"ConfigSet": "b"}], "b": [{"ConfigSet": "c"}]}, "x": {}}),
                "At least one circular dependency detected; this is not allowed. Culprits: c, b",
            ),
        ];
        for (init, message) in cases {
            assert_eq!(run(init.clone()), Err(message.to_string()), "{init}");
        }
    }

    /// Sets that each name the one before twice double at every step: refused once the
    /// runs pass the bound, before they are built (INIT-CS-06: duplicates are kept).
    #[test]
    fn doubling_references_are_bounded() {
        let chain = |n: usize| {
            let mut sets = Map::new();
            sets.insert("s0".into(), json!(["c", "c"]));
            for i in 1..n {
                let previous = json!({"ConfigSet": format!("s{}", i - 1)});
                sets.insert(format!("s{i}"), json!([previous, previous]));
            }
            json!({"configSets": sets, "c": {}})
        };
        // 2 + 4 + … + 2^15 = 65,534 runs: allowed.
        let sets = run(chain(15)).unwrap();
        assert_eq!(sets.last().unwrap().1.len(), 1 << 15);
        let started = std::time::Instant::now();
        assert_eq!(
            run(chain(64)),
            Err("The configSets run more than 100000 configs in all (configSet s15 alone runs 65536); \
                 this is not allowed"
                .into())
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// References repeat what they name, so chains of sets that name the previous one
    /// several times grow exponentially: resolution still ends at once, with the runs or
    /// with the bound's message (it never builds more than the bound). Every chain length
    /// and fan-out up to the bound and well past it, exhaustively (each case may build up
    /// to 100,000 names, too slow to draw at random by the million).
    #[test]
    fn repeated_references_are_bounded() {
        for fan_out in 1usize..4 {
            for length in 1usize..80 {
                let mut sets = Map::new();
                sets.insert("s0".into(), json!(vec!["c"; fan_out]));
                for i in 1..length {
                    sets.insert(format!("s{i}"), json!(vec![json!({"ConfigSet": format!("s{}", i - 1)}); fan_out]));
                }
                let init = json!({"configSets": sets, "c": {}});
                let total: f64 = (1..=length).map(|i| (fan_out as f64).powi(i as i32)).sum();
                match resolve(init.as_object().unwrap()) {
                    Ok(resolved) => {
                        assert!(total <= MAX_CONFIG_RUNS as f64, "{length} × {fan_out}");
                        assert_eq!(resolved.iter().map(|(_, c)| c.len()).sum::<usize>() as f64, total);
                    }
                    Err(e) => {
                        assert!(total > MAX_CONFIG_RUNS as f64, "{length} × {fan_out}: {e}");
                        assert!(e.0.starts_with("The configSets run more than 100000 configs in all"), "{e}");
                    }
                }
            }
        }
    }

    #[test]
    fn requested_names_are_trimmed() {
        assert_eq!(requested(None), ["default"]);
        assert_eq!(requested(Some("")), ["default"]);
        assert_eq!(requested(Some("a, b")), ["a", "b"]);
        assert_eq!(requested(Some(" ")), ["default"]);
        // An empty name stays, and fails as "no ConfigSet named  exists" when its turn comes.
        assert_eq!(requested(Some("a,,b ")), ["a", "", "b"]);
    }
}
