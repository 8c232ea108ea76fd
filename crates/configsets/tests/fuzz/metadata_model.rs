//! The typed model of a config's sections, parsed from arbitrary JSON: every entry gives
//! a model or an error that names it, never a panic (INIT-CS-07, INIT-FILES-*,
//! INIT-CMD-*, INIT-USR-01, INIT-GRP-01, INIT-PKG-01, INIT-SVC-03); well-formed entries
//! keep what they say.

use crate::{config, json, object, word};
use cfn_configsets::changes::ChangeRecord;
use cfn_configsets::document::{CommandEntry, Item, Section, Sections};
use cfn_configsets::model::{self, CommandLine, Content};
use cfn_configsets::{configsets, services};
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

/// Parses one config the way the engine does (`Sections::parse`); returns the errors of
/// its sections and entries.
fn parse_config(name: &str, config: &Map<String, Value>) -> Vec<(String, String)> {
    let sections = Sections::parse(name, "", config);
    let mut errors = Vec::new();
    errors.extend(section_errors("packages", &sections.packages));
    let managers = sections.packages.entries();
    let listed = config.get("packages").and_then(Value::as_object).map_or(0, Map::len);
    assert_eq!(managers.len(), listed, "every manager keeps its place in the order");
    errors.extend(sorted_section_errors("groups", &sections.groups));
    errors.extend(sorted_section_errors("users", &sections.users));
    errors.extend(sorted_section_errors("sources", &sections.sources));
    errors.extend(sorted_section_errors("files", &sections.files));
    for file in sections.files.entries() {
        if let Ok(spec) = &file.spec {
            assert_eq!(spec.path, file.key);
        }
    }
    errors.extend(sorted_section_errors("commands", &sections.commands));
    for command in sections.commands.entries() {
        if let Ok(CommandEntry::Spec(spec)) = &command.spec {
            assert_eq!(spec.name, command.key);
        }
    }
    errors.extend(section_errors("services", &sections.services));
    let changes =
        ChangeRecord { files: sections.files.entries().iter().map(|f| f.key.clone()).collect(), ..Default::default() };
    for manager in sections.services.entries() {
        // A manager's own error is among the section's.
        let Ok(listed) = &manager.spec else { continue };
        errors.extend(item_errors(listed));
        for service in listed.iter().filter_map(|s| s.spec.as_ref().ok()) {
            services::restart_required(&service.depends_on, &changes);
        }
    }
    errors
}

/// The section's error, or its entries' errors, each with the name of what is at fault.
fn section_errors<T>(name: &str, section: &Section<T>) -> Vec<(String, String)> {
    match &section.items {
        Err(e) => vec![(name.to_string(), e.0.clone())],
        Ok(items) => item_errors(items),
    }
}

fn item_errors<T>(items: &[Item<T>]) -> Vec<(String, String)> {
    items.iter().filter_map(|i| i.spec.as_ref().err().map(|e| (i.key.clone(), e.0.clone()))).collect()
}

/// [`section_errors`] of a section whose entries run in name order.
fn sorted_section_errors<T>(name: &str, section: &Section<T>) -> Vec<(String, String)> {
    let keys: Vec<&String> = section.entries().iter().map(|i| &i.key).collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{name} entries are sorted by name");
    section_errors(name, section)
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
