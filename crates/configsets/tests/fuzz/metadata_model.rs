//! The typed model of a config's sections, parsed from arbitrary JSON: every entry gives
//! a model or an error that names it, never a panic (INIT-CS-07, INIT-FILES-*,
//! INIT-CMD-*, INIT-USR-01, INIT-GRP-01, INIT-PKG-01, INIT-SVC-03); well-formed entries
//! keep what they say.

use crate::{config, json, object, word};
use cfn_configsets::changes::ChangeRecord;
use cfn_configsets::model::{self, CommandLine, Content};
use cfn_configsets::packages::{self, rpm};
use cfn_configsets::{configsets, groups, services, users};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const SECTIONS: &[&str] = &["packages", "groups", "users", "sources", "files", "commands", "services"];
const FILE_KEYS: &[&str] = &["content", "source", "encoding", "mode", "owner", "group", "authentication", "context"];
const COMMAND_KEYS: &[&str] = &["command", "env", "cwd", "test", "ignoreErrors", "runas", "waitAfterCompletion"];
const MANAGERS: &[&str] = &["apt", "yum", "dnf", "rpm", "python", "rubygems", "zypper", "msi", "dpkg", "Other"];

/// An entry's attributes: the keys its section reads, with any values, or any JSON.
fn attributes(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec((prop::sample::select(keys).prop_map(String::from), json()), 0..6)
            .prop_map(|pairs| Value::Object(object(pairs))),
        1 => json(),
    ]
}

/// A section: entries shaped like the section's (names odd ones too), or any JSON.
fn section(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let names = prop_oneof![word(), prop::sample::select(MANAGERS).prop_map(String::from)];
    prop_oneof![
        4 => prop::collection::vec((names, attributes(keys)), 0..5).prop_map(|pairs| Value::Object(object(pairs))),
        1 => json(),
    ]
}

/// A config: any of its sections, each shaped like itself or arbitrary.
pub fn config_value() -> impl Strategy<Value = Map<String, Value>> {
    let sections = prop::collection::vec(
        prop_oneof![
            (Just("files"), section(FILE_KEYS)),
            (Just("commands"), section(COMMAND_KEYS)),
            (Just("users"), section(&["groups", "uid", "homeDir"])),
            (Just("groups"), section(&["gid"])),
            (Just("packages"), section(MANAGERS)),
            (Just("services"), section(&["sysvinit", "systemd", "windows", "upstart"])),
            (
                Just("sources"),
                prop::collection::vec((word(), prop_oneof![word().prop_map(Value::String), json()]), 0..4)
                    .prop_map(|pairs| Value::Object(object(pairs)))
            ),
            (prop::sample::select(SECTIONS), json()),
        ],
        0..6,
    );
    sections.prop_map(|pairs| pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Parses one config the way the engine does, section by section; returns the errors.
fn parse_config(name: &str, config: &Map<String, Value>) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    let mut fail = |item: &str, e: String| errors.push((item.to_string(), e));
    for section in SECTIONS {
        let entries = match model::sorted_entries(name, section, config.get(*section)) {
            Ok(entries) => entries,
            Err(e) => {
                fail(section, e.0);
                continue;
            }
        };
        let keys: Vec<&String> = entries.iter().map(|(k, _)| *k).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{section} entries are sorted by name");
        for (item, value) in &entries {
            let result = match *section {
                "files" => {
                    model::file_spec(name, item, value).map(|spec| assert_eq!(spec.path, **item)).map_err(|e| e.0)
                }
                "commands" => model::command_attributes(name, item, value)
                    .and_then(|attrs| model::command_spec(name, item, attrs))
                    .map(|spec| assert_eq!(spec.name, **item))
                    .map_err(|e| e.0),
                "users" => users::user_spec(name, item, value).map(drop),
                "groups" => groups::id_text(name, "groups", item, "gid", value.get("gid")).map(drop),
                "packages" if *item == "rpm" => rpm::parse_locations(name, value).map(drop),
                "packages" => packages::parse_packages(name, item, value).map(drop),
                "services" => {
                    if let Some(services) = value.as_object() {
                        for properties in services.values().filter_map(Value::as_object) {
                            let changes = ChangeRecord {
                                files: keys.iter().map(|k| k.to_string()).collect(),
                                ..Default::default()
                            };
                            services::restart_required(properties, &changes);
                        }
                    }
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = result {
                fail(item, e);
            }
        }
        if *section == "packages" {
            let order = packages::manager_order(keys.iter().copied());
            assert_eq!(order.len(), keys.len(), "every manager keeps its place in the order");
        }
    }
    errors
}

/// `ignoreErrors` values and what they mean (SPEC §10.11).
fn ignore_errors() -> impl Strategy<Value = (Value, bool)> {
    prop::sample::select(vec![
        (json!(true), true),
        (json!("yes"), true),
        (json!(" TRUE "), true),
        (json!(1), true),
        (json!("y"), true),
        (json!(false), false),
        (json!("on"), false),
        (json!(0), false),
        (json!("2"), false),
        (Value::Null, false),
    ])
}

proptest! {
    #![proptest_config(config(256))]

    /// Any config parses section by section into the model or into errors that name the
    /// entry or section at fault, on one line or more but never empty.
    #[test]
    fn any_config_gives_a_model_or_errors_naming_their_place(config in config_value()) {
        for (item, error) in parse_config("webserver", &config) {
            prop_assert!(!error.is_empty());
            prop_assert!(error.contains(&item) || error.contains("webserver"), "{error:?} does not name {item:?}");
        }
    }

    /// Any `AWS::CloudFormation::Init` object resolves or fails with a message.
    #[test]
    fn any_init_object_resolves_or_fails(
        init in prop::collection::vec((word(), json()), 0..6),
        sets in prop::option::of(json()),
    ) {
        let mut init = object(init);
        if let Some(sets) = sets {
            init.insert("configSets".into(), sets);
        }
        match configsets::resolve(&init) {
            Ok(sets) => prop_assert!(!sets.is_empty()),
            Err(e) => prop_assert!(!e.0.is_empty()),
        }
    }

    /// A mode the metadata writes as an octal string (or as a number whose digits are
    /// octal) is the mode the model holds (INIT-FILES-07, INIT-FILES-14); anything else
    /// that parses is an octal mode no larger than `177777`.
    #[test]
    fn modes_round_trip(
        mode in 0u32..=0o177777,
        padded in any::<bool>(),
        as_number in any::<bool>(),
        text in word(),
    ) {
        let octal = if padded { format!("{mode:06o}") } else { format!("{mode:o}") };
        // JSON numbers have no leading zeros: `644` stands for `000644`.
        let value = if as_number { serde_json::from_str(&format!("{mode:o}")).unwrap() } else { Value::String(octal) };
        prop_assert_eq!(model::parse_mode(&value), Some(mode));
        if let Some(parsed) = model::parse_mode(&Value::String(text.clone())) {
            prop_assert!(parsed <= 0o177777);
            prop_assert!(text.trim().bytes().all(|b| (b'0'..=b'7').contains(&b)), "{text:?}");
        }
    }

    /// A well-formed `files` entry keeps its path, content, mode, owner and group.
    #[test]
    fn well_formed_files_keep_their_fields(
        path in "/[a-z]{1,8}(/[a-z.]{1,8}){0,3}",
        content in "\\PC{0,40}",
        mode in 0u32..=0o7777,
        owner in "[a-z]{1,8}",
        group in "[a-z]{1,8}",
        base64 in any::<bool>(),
        context in prop::option::of(json()),
    ) {
        let mut attrs = json!({"content": content, "mode": format!("{mode:06o}"), "owner": owner, "group": group});
        if base64 {
            attrs["encoding"] = json!("base64");
        }
        if let Some(context) = &context {
            attrs["context"] = context.clone();
        }
        let spec = model::file_spec("c", &path, &attrs).expect("a well-formed entry parses");
        prop_assert_eq!(&spec.path, &path);
        prop_assert_eq!(spec.content, Some(Content::Text(content)));
        prop_assert_eq!(spec.mode, Some(mode));
        prop_assert_eq!(spec.owner, Some(owner));
        prop_assert_eq!(spec.group, Some(group));
        prop_assert_eq!(spec.base64, base64);
        // `"context": null` is no context, as in the reference.
        prop_assert_eq!(spec.context, context.filter(|c| !c.is_null()));
    }

    /// A well-formed command keeps its command line, environment, directory, test and
    /// `ignoreErrors` (INIT-CMD-02..06, INIT-BOOL-01).
    #[test]
    fn well_formed_commands_keep_their_fields(
        shell in prop::option::of("\\PC{1,30}"),
        argv in prop::collection::vec("\\PC{0,10}", 1..5),
        env in prop::collection::btree_map("[A-Z_]{1,6}", "\\PC{0,10}", 0..4),
        cwd in prop::option::of("/[a-z]{1,8}"),
        test in prop::option::of("\\PC{1,20}"),
        ignore in ignore_errors(),
    ) {
        let command = match &shell {
            Some(s) => json!(s),
            None => json!(argv),
        };
        let attrs = json!({"command": command, "env": env, "cwd": cwd, "test": test, "ignoreErrors": ignore.0});
        let spec = model::command_spec("c", "01_run", attrs.as_object().unwrap()).expect("a well-formed command");
        let expected = match shell {
            Some(s) => CommandLine::Shell(s),
            None => CommandLine::Argv(argv),
        };
        prop_assert_eq!(spec.command, expected);
        let env: Vec<(String, String)> = env.into_iter().collect();
        prop_assert_eq!(spec.env, (!env.is_empty()).then_some(env));
        prop_assert_eq!(spec.cwd, cwd);
        prop_assert_eq!(spec.test, test.map(CommandLine::Shell));
        prop_assert_eq!(spec.ignore_errors, ignore.1);
    }
}
