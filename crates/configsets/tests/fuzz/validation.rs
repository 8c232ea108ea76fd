//! The typed document, its static checks and the source map, on arbitrary metadata:
//! parsing and checking never panic, every finding points into the metadata, and every
//! JSON pointer of a printed document maps to where its value's text starts.

use crate::metadata_model::config_value;
use crate::{config, json, word};
use cfn_configsets::document::{AUTH_KEY, INIT_KEY, InitDocument};
use cfn_configsets::locations::{SourceMap, pointer_step};
use cfn_linter::init_checks as checks;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Metadata: an Init of arbitrary configs (and sometimes configSets), and sometimes
/// authentication blocks.
fn metadata() -> impl Strategy<Value = Value> {
    let configs = prop::collection::vec((word(), config_value().prop_map(Value::Object)), 0..4);
    let sets = prop::option::of(json());
    let auth = prop::option::of(json());
    (configs, sets, auth).prop_map(|(configs, sets, auth)| {
        let mut init: Map<String, Value> = configs.into_iter().collect();
        if let Some(sets) = sets {
            init.insert("configSets".into(), sets);
        }
        let mut metadata = Map::new();
        metadata.insert(INIT_KEY.into(), Value::Object(init));
        if let Some(auth) = auth {
            metadata.insert(AUTH_KEY.into(), auth);
        }
        Value::Object(metadata)
    })
}

/// Every pointer in `value`, with the value it names.
fn pointers<'a>(value: &'a Value, pointer: String, out: &mut Vec<(String, &'a Value)>) {
    out.push((pointer.clone(), value));
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                pointers(child, format!("{pointer}/{}", pointer_step(key)), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointers(child, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn findings_point_into_the_metadata(metadata in metadata()) {
        if let Ok(document) = InitDocument::parse(&metadata) {
            for finding in checks::check(&metadata, &document, &checks::Requested::Given(vec!["default".to_string()])) {
                // The value itself, or (for one that is missing) what should hold it.
                let parent = &finding.pointer[..finding.pointer.rfind('/').unwrap_or(0)];
                prop_assert!(
                    metadata.pointer(&finding.pointer).is_some() || metadata.pointer(parent).is_some(),
                    "{finding:?}"
                );
                prop_assert!(!finding.message.is_empty());
            }
        }
    }

    #[test]
    fn every_pointer_maps_to_its_value_in_the_text(metadata in metadata(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&metadata) } else { serde_json::to_string(&metadata) };
        let text = text.unwrap();
        let map = SourceMap::index(&text).unwrap();
        prop_assert!(map.duplicates().is_empty());
        let mut all = Vec::new();
        pointers(&metadata, String::new(), &mut all);
        for (pointer, value) in all {
            let position = map.value(&pointer).unwrap();
            let rest = &text[position.offset..];
            let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            prop_assert_eq!(values.next().unwrap().unwrap(), value.clone(), "{}", pointer);
            let line = map.line_text(position.line);
            prop_assert_eq!(line.chars().nth(position.column - 1), rest.chars().next(), "{}", pointer);
        }
    }
}
