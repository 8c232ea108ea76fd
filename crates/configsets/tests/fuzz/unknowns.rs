//! Issue 23: a template checked without values reports nothing that the same template
//! checked with values could not. Random templates: parameters of each type, with or
//! without a Default; conditions over them; an Init whose files, commands, sources and
//! configSets use Ref, Fn::Sub, Fn::Join, Fn::Select and Fn::If over them and over another
//! resource's attributes. Random values for the parameters without a Default and for the
//! attributes: every finding (code and pointer) of `metadata_for_checks` and the checks is
//! a finding of `metadata` with those values and the checks, when the template has no
//! conditions. With conditions both branches are checked, and a finding of one branch is
//! one of the values that take it: each finding is then looked for with every combination
//! of the values the case is made of (the random ones, and the texts the conditions
//! compare with), and must be found with one of them.
//!
//! The values are never empty: an empty `content` is false where cfn-init tests its truth
//! (E033 needs content and source both true), and an unknown stands for a value that is
//! there. Conditions compare a parameter with a text or with another parameter, which
//! `metadata_for_checks` answers consistently (comparisons of composite values are each
//! answered on their own, which correlated ones could make inconsistent).

use crate::config;
use cfn_configsets::document::InitDocument;
use cfn_linter::init_checks::{self as checks, Requested};
use cfn_template::{Inputs, Template};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// Texts the values are made of: good and bad paths, URLs, base64, Mustache, modes,
/// option-like names, booleans as strings.
const TEXTS: [&str; 12] = [
    "/etc/x",
    "etc/x",
    "https://h/x",
    "s3://b/k",
    "ZGV2Cg==",
    "not base64!",
    "{{#a}}",
    "-x",
    "a",
    "true",
    "9",
    "000644",
];

#[derive(Debug, Clone)]
enum Kind {
    Text,
    Number,
    List,
    Allowed(Vec<String>),
}

#[derive(Debug, Clone)]
struct Parameter {
    kind: Kind,
    default: Option<String>,
}

fn text() -> impl Strategy<Value = String> {
    prop::sample::select(TEXTS.to_vec()).prop_map(String::from)
}

fn parameter() -> impl Strategy<Value = Parameter> {
    let kind = prop_oneof![
        3 => Just(Kind::Text),
        1 => Just(Kind::Number),
        1 => Just(Kind::List),
        2 => prop::collection::btree_set(text(), 1..4).prop_map(|set| Kind::Allowed(set.into_iter().collect())),
    ];
    (kind, prop::option::of(0..3usize), text()).prop_map(|(kind, default, any)| {
        let default = default.map(|i| value_of(&kind, i, &any));
        Parameter { kind, default }
    })
}

/// A value of `kind`, chosen by `i` (and `any`, for text).
fn value_of(kind: &Kind, i: usize, any: &str) -> String {
    match kind {
        Kind::Text => any.to_string(),
        Kind::Number => ["0", "1", "80"][i % 3].to_string(),
        Kind::List => [format!("{any},a"), any.to_string(), "x, y ,z".to_string()][i % 3].clone(),
        Kind::Allowed(values) => values[i % values.len()].clone(),
    }
}

/// An expression giving a string, over parameters `P0..` (`kinds`), conditions `C0..`
/// and the resource `Db`.
fn expression(kinds: Vec<Kind>, conditions: usize) -> impl Strategy<Value = Value> {
    let scalars: Vec<usize> = (0..kinds.len()).filter(|i| !matches!(kinds[*i], Kind::List)).collect();
    let lists: Vec<usize> = (0..kinds.len()).filter(|i| matches!(kinds[*i], Kind::List)).collect();
    let scalar = prop::sample::select(if scalars.is_empty() { vec![usize::MAX] } else { scalars });
    let list = prop::sample::select(if lists.is_empty() { vec![usize::MAX] } else { lists });
    let name = |i: usize| format!("P{i}");
    let leaf = prop_oneof![
        3 => text().prop_map(Value::String),
        3 => scalar.clone().prop_map(move |i| if i == usize::MAX { json!("a") } else { json!({"Ref": name(i)}) }),
        2 => (text(), scalar.clone(), text()).prop_map(move |(a, i, b)| {
            if i == usize::MAX { json!(a) } else { json!({"Fn::Sub": format!("{a}${{P{i}}}{b}")}) }
        }),
        1 => list.clone().prop_map(|i| {
            if i == usize::MAX { json!("a") } else { json!({"Fn::Join": [",", {"Ref": format!("P{i}")}]}) }
        }),
        // Item 0: every list has one, so that no values make the resolution fail (a
        // combination that only resolves with values that fail would prove nothing).
        1 => list.prop_map(|i| {
            if i == usize::MAX { json!("a") } else { json!({"Fn::Select": ["0", {"Ref": format!("P{i}")}]}) }
        }),
        1 => Just(json!({"Ref": "Db"})),
        1 => Just(json!({"Fn::GetAtt": ["Db", "Endpoint.Address"]})),
    ];
    leaf.prop_recursive(2, 8, 2, move |inner| {
        prop_oneof![
            (0..conditions.max(1), inner.clone(), inner.clone()).prop_map(move |(c, a, b)| {
                if conditions == 0 { a } else { json!({"Fn::If": [format!("C{c}"), a, b]}) }
            }),
            (inner.clone(), inner).prop_map(|(a, b)| json!({"Fn::Join": ["", [a, b]]})),
        ]
    })
}

/// A condition over the parameters: one compared with a text or with another.
fn condition(count: usize) -> impl Strategy<Value = Value> {
    let compare = (
        0..count,
        prop_oneof![text().prop_map(Value::String), (0..count).prop_map(|j| json!({"Ref": format!("P{j}")}))],
    )
        .prop_map(|(i, other)| json!({"Fn::Equals": [{"Ref": format!("P{i}")}, other]}));
    prop_oneof![3 => compare.clone(), 1 => compare.prop_map(|c| json!({"Fn::Not": [c]}))]
}

/// A file entry, a command and a source, each from expressions.
fn init(kinds: Vec<Kind>, conditions: usize) -> impl Strategy<Value = Value> {
    let e = || expression(kinds.clone(), conditions);
    let file = (e(), prop::option::of(e()), any::<bool>(), prop::option::of(e()), prop::option::of(e())).prop_map(
        |(content, source, base64, context, mode)| {
            let mut file = Map::new();
            file.insert("content".into(), content);
            if let Some(source) = source {
                file.insert("source".into(), source);
            }
            if base64 {
                file.insert("encoding".into(), json!("base64"));
            }
            if let Some(context) = context {
                file.insert("context".into(), json!({"k": context}));
            }
            if let Some(mode) = mode {
                file.insert("mode".into(), mode);
            }
            Value::Object(file)
        },
    );
    let path = prop::sample::select(vec!["/etc/a", "etc/b"]);
    let set = prop::collection::vec(prop_oneof![3 => Just(json!("config")), 1 => e()], 1..3);
    (path, file, e(), e(), e(), e(), prop::option::of(set)).prop_map(
        |(path, file, command, ignore, source, version, set)| {
            let mut init = json!({"config": {
                "files": {path: file},
                "commands": {"01": {"command": command, "ignoreErrors": ignore}},
                "sources": {"/opt/app": source},
                "packages": {"yum": {"httpd": [version]}},
            }});
            if let Some(set) = set {
                init["configSets"] = json!({"s": set});
            }
            init
        },
    )
}

/// A template; values for its parameters without a Default and for Db's attributes; and
/// for each of those parameters, the values that may decide its conditions.
fn case() -> impl Strategy<Value = (Value, Inputs, Vec<(String, Vec<String>)>)> {
    prop::collection::vec(parameter(), 1..4).prop_flat_map(|parameters| {
        let kinds: Vec<Kind> = parameters.iter().map(|p| p.kind.clone()).collect();
        let count = parameters.len();
        let conditions = prop::collection::vec(condition(count), 0..3);
        let values = prop::collection::vec((0..3usize, text()), count);
        let attributes = (text(), text());
        (
            Just(parameters),
            conditions.prop_flat_map(move |c| (Just(c.clone()), init(kinds.clone(), c.len()))),
            values,
            attributes,
        )
            .prop_map(|(parameters, (conditions, init), values, (reference, address))| {
                let mut declared = Map::new();
                let mut inputs = Inputs::default();
                let mut unset = Vec::new();
                for (i, (parameter, (choice, any))) in parameters.iter().zip(values).enumerate() {
                    let mut declaration = json!({"Type": match parameter.kind {
                        Kind::Text | Kind::Allowed(_) => "String",
                        Kind::Number => "Number",
                        Kind::List => "CommaDelimitedList",
                    }});
                    if let Kind::Allowed(values) = &parameter.kind {
                        declaration["AllowedValues"] = json!(values);
                    }
                    match &parameter.default {
                        Some(default) => declaration["Default"] = json!(default),
                        None => {
                            inputs.parameters.insert(format!("P{i}"), value_of(&parameter.kind, choice, &any));
                            unset.push((i, parameter.kind.clone()));
                        }
                    }
                    declared.insert(format!("P{i}"), declaration);
                }
                inputs.attributes.insert("Db".into(), reference);
                inputs.attributes.insert("Db.Endpoint.Address".into(), address);
                // What a parameter may be compared with: the texts of the conditions, and the
                // other parameters' values, Defaults and AllowedValues.
                let mut compared: BTreeSet<String> = inputs.parameters.values().cloned().collect();
                compared.extend(parameters.iter().filter_map(|p| p.default.clone()));
                for parameter in &parameters {
                    if let Kind::Allowed(values) = &parameter.kind {
                        compared.extend(values.iter().cloned());
                    }
                }
                compared.extend(conditions.iter().filter_map(|c| {
                    let equals = c.get("Fn::Equals").or_else(|| c["Fn::Not"][0].get("Fn::Equals"))?;
                    equals[1].as_str().map(String::from)
                }));
                let lists: BTreeSet<String> = parameters
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| matches!(p.kind, Kind::List))
                    .filter_map(|(i, p)| p.default.clone().or_else(|| inputs.parameters.get(&format!("P{i}")).cloned()))
                    .collect();
                let pools = unset
                    .into_iter()
                    .map(|(i, kind)| {
                        let name = format!("P{i}");
                        let own = inputs.parameters[&name].clone();
                        let pool: Vec<String> = match kind {
                            // And a text none of them is.
                            Kind::Text => compared.iter().cloned().chain(["other".to_string()]).collect(),
                            Kind::Allowed(values) => values,
                            Kind::Number => ["0", "1", "80"]
                                .into_iter()
                                .map(String::from)
                                .chain(compared.iter().filter(|t| t.trim().parse::<f64>().is_ok()).cloned())
                                .collect(),
                            // Its own, another list's (so that two lists may be equal), or
                            // one no other is.
                            Kind::List => lists.iter().cloned().chain([own, "p,q,r".to_string()]).collect(),
                        };
                        (name, pool)
                    })
                    .collect();
                let conditions: Map<String, Value> =
                    conditions.into_iter().enumerate().map(|(i, c)| (format!("C{i}"), c)).collect();
                let template = json!({
                    "Parameters": declared,
                    "Conditions": conditions,
                    "Resources": {
                        "R": {"Type": "AWS::EC2::Instance", "Metadata": {"AWS::CloudFormation::Init": init}},
                        "Db": {"Type": "AWS::RDS::DBInstance"},
                    },
                });
                (template, inputs, pools)
            })
    })
}

/// The code and pointer of each finding of the checks of `metadata`.
fn findings(metadata: &Value) -> BTreeSet<(&'static str, String)> {
    let document = InitDocument::parse(metadata).expect("an Init");
    let found = checks::check(metadata, &document, &Requested::Every { told: false });
    found.into_iter().map(|f| (f.code, f.pointer)).collect()
}

/// Each combination of the values in `pools`, over `inputs`, the first `inputs` itself.
fn combinations(inputs: &Inputs, pools: &[(String, Vec<String>)]) -> Vec<Inputs> {
    let mut out = vec![inputs.clone()];
    for (name, pool) in pools {
        out = out
            .iter()
            .flat_map(|base| {
                pool.iter().map(move |value| {
                    let mut next = base.clone();
                    next.parameters.insert(name.clone(), value.clone());
                    next
                })
            })
            .collect();
    }
    out.insert(0, inputs.clone());
    out
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn an_unknown_never_adds_a_finding((template, inputs, pools) in case()) {
        let text = template.to_string();
        let conditional = template["Conditions"].as_object().is_some_and(|c| !c.is_empty());
        let template = Template::parse("t.json", &text).unwrap();
        let choices = if conditional { combinations(&inputs, &pools) } else { vec![inputs.clone()] };
        let checked = match template.metadata_for_checks("R", &Inputs::default()) {
            Ok(checked) => checked,
            // A resolution error without values is one with them (in a branch: with
            // values that take it).
            Err(e) => {
                let fails = choices.iter().any(|inputs| template.metadata("R", inputs).is_err());
                prop_assert!(fails, "{e} without values only\n{text}");
                return Ok(());
            }
        };
        let mut missing: BTreeSet<(&'static str, String)> = checked.variants.iter().flat_map(findings).collect();
        let mut resolved = 0;
        for inputs in &choices {
            // Values that make the resolution fail (a list's index out of range) prove nothing.
            let Ok(with_values) = template.metadata("R", inputs) else { continue };
            resolved += 1;
            let found = findings(&with_values);
            missing.retain(|finding| !found.contains(finding));
            if missing.is_empty() {
                break;
            }
        }
        prop_assert!(resolved > 0, "no values resolve\n{text}");
        prop_assert!(
            missing.is_empty(),
            "{missing:?} without values, with none of the values {:?}\n{text}\nwithout: {:?}",
            choices.iter().map(|i| &i.parameters).collect::<Vec<_>>(),
            checked.variants
        );
    }
}
