//! The hostile templates of issue 31 (SECURITY.md: "a template handed to `validate -t`"
//! is written by strangers), made here at the sizes the issue reproduced its findings
//! with, for `cargo xtask bench --only hostile`: each is `cfn-bootstrap validate -t` of
//! one template, whose time and peak memory must stay those of an ordinary template of
//! its size. The black-box tests assert a generous bound on the same shapes; the figures
//! are here.

use serde_json::{Value, json};

/// One generated template: the workload's id, what it holds, and its text.
pub struct Hostile {
    pub id: &'static str,
    pub title: &'static str,
    pub text: String,
}

/// An instance with an empty Init whose user data is `user_data`, and `files` written
/// by Init (for the cfn-hup files validate reads with cfn-hup's INI reader).
fn instance(user_data: Value, files: Value) -> String {
    json!({"Resources": {"I": {
        "Type": "AWS::EC2::Instance",
        "Metadata": {"AWS::CloudFormation::Init": {"config": {"files": files}}},
        "Properties": {"ImageId": "ami-12345678", "UserData": {"Fn::Base64": user_data}},
    }}})
    .to_string()
}

/// A hooks file written by Init, holding `text` after a valid hook's keys.
fn hooks_file(text: String) -> Value {
    json!({"/etc/cfn/hooks.d/h.conf": {"content": text}})
}

pub fn all() -> Vec<Hostile> {
    vec![
        Hostile {
            id: "hostile-f1",
            title: "F1: Fn::Sub variables used 16 times each, 8 levels deep, ending in \"\"",
            text: {
                let uses = "${V}".repeat(16);
                let mut value = json!("");
                for _ in 0..8 {
                    value = json!({"Fn::Sub": [uses, {"V": value}]});
                }
                instance(value, json!({}))
            },
        },
        Hostile {
            id: "hostile-f2",
            title: "F2: one line, Fn::Join of 100,000 empty strings (300 KB)",
            text: instance(json!({"Fn::Join": ["", vec![""; 100_000]]}), json!({})),
        },
        Hostile {
            id: "hostile-f3",
            title: "F3: one line, cfn-init -c with 20,000 unknown configSets (129 KB)",
            text: {
                let sets: Vec<String> = (0..20_000).map(|i| format!("n{i}")).collect();
                instance(
                    json!(format!("#!/bin/bash\n/opt/aws/bin/cfn-init -s S -r I -c {}\n", sets.join(","))),
                    json!({}),
                )
            },
        },
        Hostile {
            id: "hostile-f4",
            title: "F4: a hooks.d value of 1 MB of `%(x) `, no `)s` after any `%(`",
            text: instance(
                json!("#!/bin/bash\n"),
                hooks_file(format!(
                    "[h]\ntriggers=post.update\npath=Resources.I.Metadata\naction={}\n",
                    "%(x) ".repeat(200_000)
                )),
            ),
        },
        Hostile {
            id: "hostile-f12-sections",
            title: "F12: a hooks.d file of 1 MB of empty sections",
            text: instance(json!("#!/bin/bash\n"), hooks_file((0..100_000).map(|i| format!("[s{i}]\n")).collect())),
        },
        Hostile {
            id: "hostile-f12-keys",
            title: "F12: a hooks.d section with 1 MB of keys",
            text: instance(
                json!("#!/bin/bash\n"),
                hooks_file(format!("[h]\n{}", (0..100_000).map(|i| format!("k{i}=v\n")).collect::<String>())),
            ),
        },
        Hostile {
            id: "hostile-f13",
            title: "F13: 1 MiB of user data, a cfn-init -r call to a missing resource a line",
            text: {
                let mut script = String::from("#!/bin/bash\n");
                let mut i = 0;
                while script.len() < 1 << 20 {
                    script.push_str(&format!("/opt/aws/bin/cfn-init -s S -r Nope{i}\n"));
                    i += 1;
                }
                instance(json!(script), json!({}))
            },
        },
    ]
}
