//! `cfn-bootstrap render` (issue 14, item 2): a template resource's Metadata with its
//! intrinsic functions resolved, printed as cfn-get-metadata prints it.
//!
//! - JSON templates and their YAML twins render byte for byte the same
//!   (tests/templates: two modelled on AWS's sample templates, and the seed template).
//! - Against the emulator: for the seed template and the corpus in tests/templates/corpus
//!   (together every function render resolves), render's output is what cfn-get-metadata
//!   prints after CreateStack with the same parameters. Where moto departs from
//!   CloudFormation's documentation, the test asserts the documented value at that place,
//!   names moto's value, and compares everything else.
//! - `cfn-bootstrap render … | cfn-init -` writes a template's file under a temporary root.
//! - Bad input: exit 1 with the expression and its line; usage errors exit 2.

mod common;

#[path = "../xtask/src/instance.rs"]
mod instance;
#[path = "../xtask/src/scenario.rs"]
mod scenario;

use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn templates() -> PathBuf {
    workspace().join("tests/templates")
}

fn render(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.cmd_via(binary(), "cfn-bootstrap").arg("render").args(args).run()
}

/// The seed template (the end-to-end scenario's), as JSON text.
fn seed_template() -> String {
    serde_json::to_string_pretty(&scenario::template(scenario::FIRST_PAGE, instance::Init::Shell)).unwrap()
}

#[test]
fn json_and_yaml_twins_render_byte_for_byte_the_same() {
    let sandbox = Sandbox::new();
    let seed = sandbox.path("seed.json");
    std::fs::write(&seed, seed_template()).unwrap();
    let twins: [(PathBuf, PathBuf, &str, &str); 3] = [
        (
            templates().join("lamp_single_instance.json"),
            templates().join("lamp_single_instance.yaml"),
            "WebServerInstance",
            "Connected to MyDatabase in eu-west-1",
        ),
        (
            templates().join("wordpress_single_instance.json"),
            templates().join("wordpress_single_instance.yaml"),
            "WebServer",
            "sed -i \\\"s/'password_here'/'wppass123'/g\\\" wp-config.php",
        ),
        (seed, templates().join("seed.yaml"), scenario::RESOURCE, "stack=arn:aws:cloudformation:eu-west-1:"),
    ];
    for (json_file, yaml_file, resource, expected) in &twins {
        let args = |file: &Path| {
            vec![
                "-t".to_string(),
                file.display().to_string(),
                "-r".into(),
                resource.to_string(),
                "--region".into(),
                "eu-west-1".into(),
            ]
        };
        let from_json = render(&sandbox, &args(json_file).iter().map(String::as_str).collect::<Vec<_>>());
        from_json.code(0).stderr_is("").stdout_has(expected);
        let from_yaml = render(&sandbox, &args(yaml_file).iter().map(String::as_str).collect::<Vec<_>>());
        from_yaml.code(0).stderr_is("");
        assert_eq!(from_json.stdout, from_yaml.stdout, "{} and {} differ", json_file.display(), yaml_file.display());
    }
}

/// A place where moto's resolver departs from CloudFormation's documentation.
struct Divergence {
    pointer: &'static str,
    documented: Value,
    moto: Value,
    why: &'static str,
}

struct Case {
    path: PathBuf,
    /// The file the stack is created from, when not `file` itself: moto's YAML loader
    /// cannot read a short-form tag on a mapping (`!Base64` over `Fn::Sub:`) or `!GetAtt`
    /// in its list form, so such a YAML template's stack is created from its JSON twin
    /// (written by an independent converter, PyYAML with the tags as cfn-flip reads them).
    stack_file: Option<PathBuf>,
    resource: &'static str,
    parameters: &'static [(&'static str, &'static str)],
    divergences: Vec<Divergence>,
}

/// A template of tests/templates.
fn case(file: &str, resource: &'static str, parameters: &'static [(&'static str, &'static str)]) -> Case {
    Case { path: templates().join(file), stack_file: None, resource, parameters, divergences: Vec::new() }
}

/// The corpus: every function render resolves is used by at least one of them.
fn corpus() -> Vec<Case> {
    vec![
        Case {
            stack_file: Some(templates().join("lamp_single_instance.json")),
            ..case(
                "lamp_single_instance.yaml",
                "WebServerInstance",
                &[("DBPassword", "given-pass"), ("DBName", "shopdb")],
            )
        },
        case("wordpress_single_instance.json", "WebServer", &[("InstanceType", "t2.micro")]),
        case("corpus/sub_forms.yaml", "App", &[("AppName", "billing")]),
        case("corpus/conditions.yaml", "Host", &[]),
        case(
            "corpus/conditions_flipped.yaml",
            "Host",
            &[("Env", "dev"), ("Monitoring", "disabled"), ("Size", "small")],
        ),
        case("corpus/no_value.yaml", "Web", &[]),
        case("corpus/find_in_map.yaml", "Worker", &[("Tier", "small")]),
        case("corpus/select_split_join.yaml", "Client", &[]),
        case("corpus/base64.yaml", "Collector", &[("Token", "abc=def")]),
        case("corpus/get_azs.yaml", "Balancer", &[]),
        case("corpus/import_value.yaml", "Service", &[]),
        // moto's loader reads `!GetAtt [Bucket, Arn]` as YAML nodes, not names.
        Case {
            stack_file: Some(templates().join("corpus/get_att.json")),
            ..case("corpus/get_att.yaml", "Worker", &[])
        },
        case("corpus/wait_handle.yaml", "Server", &[]),
        case("corpus/nested_functions.json", "Gateway", &[]),
        case("corpus/nested_functions.json", "Gateway", &[("Endpoint", "api.internal:8080"), ("Stage", "gamma")]),
        Case {
            divergences: vec![
                Divergence {
                    pointer: "/network/documented",
                    documented: json!([
                        "192.168.0.0/27",
                        "192.168.0.32/27",
                        "192.168.0.64/27",
                        "192.168.0.96/27",
                        "192.168.0.128/27",
                        "192.168.0.160/27"
                    ]),
                    moto: json!({"Fn::Cidr": ["192.168.0.0/24", 6, 5]}),
                    why: "the Fn::Cidr page's own example; moto does not implement Fn::Cidr and returns it as written",
                },
                Divergence {
                    pointer: "/network/from_parameter",
                    documented: json!(["10.20.0.0/24", "10.20.1.0/24", "10.20.2.0/24", "10.20.3.0/24"]),
                    moto: json!({"Fn::Cidr": ["10.20.0.0/16", 4, 8]}),
                    why: "moto does not implement Fn::Cidr (it resolves the arguments only)",
                },
            ],
            ..case("corpus/cidr.yaml", "Router", &[])
        },
        Case {
            divergences: vec![
                Divergence {
                    pointer: "/AWS::CloudFormation::Init/config/commands/install/command",
                    documented: json!("apt-get install -y nginx git curl"),
                    moto: json!("apt-get install -y n g i n x ,   g i t , c u r l"),
                    why: "a CommaDelimitedList is a list of strings, each space-trimmed; moto leaves the \
                          Default unsplit, so Fn::Join joins its characters",
                },
                Divergence {
                    pointer: "/AWS::CloudFormation::Init/config/files/~1etc~1admins/content",
                    documented: json!("alice\nbob"),
                    moto: json!("alice\n bob"),
                    why: "each member of a CommaDelimitedList is space-trimmed; moto splits without trimming",
                },
            ],
            ..case("corpus/comma_delimited_list.yaml", "Box", &[("Admins", "alice, bob")])
        },
        Case {
            divergences: vec![Divergence {
                pointer: "/server/threads",
                documented: json!("4"),
                moto: json!(4),
                why: "a Number parameter's value becomes a string when Ref uses it; moto makes a given value a number",
            }],
            ..case("corpus/number_parameter.yaml", "Server", &[("Threads", "4")])
        },
    ]
}

/// A stack created on the emulator, and what render needs to know of it.
struct Created {
    stack: String,
    stack_id: String,
    /// `--attribute` values, from the Outputs whose Description names the attribute.
    attributes: Vec<String>,
}

fn create(emulator: &Emulator, body: &str, parameters: &[(&str, &str)]) -> Created {
    let stack = unique("render");
    let mut params = vec![("StackName".to_string(), stack.clone()), ("TemplateBody".to_string(), body.to_string())];
    for (i, (key, value)) in parameters.iter().enumerate() {
        params.push((format!("Parameters.member.{}.ParameterKey", i + 1), key.to_string()));
        params.push((format!("Parameters.member.{}.ParameterValue", i + 1), value.to_string()));
    }
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let created = emulator.call("CreateStack", &params).unwrap_or_else(|e| panic!("CreateStack {stack}: {e}"));
    let stack_id = created.pointer("/CreateStackResponse/CreateStackResult/StackId").and_then(Value::as_str);
    let stack_id = stack_id.unwrap_or_else(|| panic!("no StackId in {created}")).to_string();
    let described = emulator.call("DescribeStacks", &[("StackName", &stack)]).unwrap();
    let outputs = described.pointer("/DescribeStacksResponse/DescribeStacksResult/Stacks/0/Outputs");
    let attributes = outputs
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| Some(format!("{}={}", o["Description"].as_str()?, o["OutputValue"].as_str()?)))
        .collect();
    Created { stack, stack_id, attributes }
}

#[test]
fn render_matches_what_the_emulator_resolves_after_create_stack() {
    let emulator = Emulator::shared();
    let sandbox = Sandbox::new();
    // The exports import_value.yaml reads, from a stack of their own.
    let exporter = std::fs::read_to_string(templates().join("corpus/exporter.yaml")).unwrap();
    let exporter = create(&emulator, &exporter, &[]);
    let exports = emulator.call("ListExports", &[]).unwrap();
    let exports: Vec<String> = exports
        .pointer("/ListExportsResponse/ListExportsResult/Exports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e["Name"].as_str().is_some_and(|n| n.starts_with(&format!("{}-", exporter.stack))))
        .map(|e| format!("{}={}", e["Name"].as_str().unwrap(), e["Value"].as_str().unwrap()))
        .collect();
    assert_eq!(exports.len(), 2, "the exporter's two exports: {exports:?}");
    let seed = sandbox.path("seed.json");
    std::fs::write(&seed, seed_template()).unwrap();

    let mut cases = corpus();
    cases.push(Case { path: seed, ..case("", scenario::RESOURCE, &[]) });
    let mut functions = std::collections::BTreeSet::new();
    for case in &cases {
        let path = &case.path;
        let file = path.display().to_string();
        let body = std::fs::read_to_string(path).unwrap();
        let parsed = cfn_template::Template::parse(&file, &body).unwrap();
        collect_functions(parsed.value(), &mut functions);
        let body = match &case.stack_file {
            Some(twin) => std::fs::read_to_string(twin).unwrap(),
            None => body,
        };
        let mut parameters: Vec<(&str, &str)> = case.parameters.to_vec();
        if path.ends_with("corpus/import_value.yaml") {
            parameters.push(("NetworkStack", &exporter.stack));
        }
        let created = create(&emulator, &body, &parameters);
        let from_stack = sandbox
            .cmd("cfn-get-metadata")
            .args(["-s", &created.stack, "-r", case.resource])
            .with_keys(&emulator)
            .run();
        from_stack.code(0);

        let mut args = vec![
            "-t".to_string(),
            file.clone(),
            "-r".into(),
            case.resource.into(),
            "--region".into(),
            "us-east-1".into(),
            "--stack-name".into(),
            created.stack.clone(),
            "--stack-id".into(),
            created.stack_id.clone(),
            // The account's zones are an input; the emulator's account has a to d.
            "--availability-zones".into(),
            "us-east-1a,us-east-1b,us-east-1c,us-east-1d".into(),
        ];
        for (key, value) in &parameters {
            args.extend(["-p".to_string(), format!("{key}={value}")]);
        }
        for attribute in &created.attributes {
            args.extend(["--attribute".to_string(), attribute.clone()]);
        }
        for export in &exports {
            args.extend(["--import-value".to_string(), export.clone()]);
        }
        let rendered = render(&sandbox, &args.iter().map(String::as_str).collect::<Vec<_>>());
        rendered.code(0).stderr_is("");

        if case.divergences.is_empty() {
            assert_eq!(rendered.stdout, from_stack.stdout, "{} {:?}: render differs from the stack", file, parameters);
            continue;
        }
        let mut expected: Value = serde_json::from_str(&from_stack.stdout).unwrap();
        for d in &case.divergences {
            let at = expected.pointer_mut(d.pointer).unwrap_or_else(|| panic!("{file}: no {}", d.pointer));
            assert_eq!(*at, d.moto, "{file}: moto's value at {} changed ({})", d.pointer, d.why);
            *at = d.documented.clone();
        }
        let expected = format!("{}\n", cfn_python::json::to_pretty(&expected));
        assert_eq!(rendered.stdout, expected, "{file}: render differs from the documented result");
    }
    // Every function (and short form) render resolves is in the corpus.
    for function in [
        "Ref",
        "Fn::Sub",
        "Fn::GetAtt",
        "Fn::Join",
        "Fn::Select",
        "Fn::Split",
        "Fn::If",
        "Fn::Equals",
        "Fn::And",
        "Fn::Or",
        "Fn::Not",
        "Condition",
        "Fn::FindInMap",
        "Fn::Base64",
        "Fn::GetAZs",
        "Fn::ImportValue",
        "Fn::Cidr",
        "AWS::NoValue",
        "${!",
    ] {
        assert!(functions.contains(function), "no template of the corpus uses {function}");
    }
    assert!(cases.len() >= 16, "the seed template and at least 15 more");
}

/// The intrinsic functions a template uses (in its long form, as the template crate reads
/// it), `AWS::NoValue` and `${!` literals of Fn::Sub.
fn collect_functions(value: &Value, found: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(entries) => {
            for (key, item) in entries {
                if entries.len() == 1 && (key == "Ref" || key == "Condition" || key.starts_with("Fn::")) {
                    found.insert(key.clone());
                }
                if key == "Ref" && item == "AWS::NoValue" {
                    found.insert("AWS::NoValue".into());
                }
                if key == "Fn::Sub" && item.to_string().contains("${!") {
                    found.insert("${!".into());
                }
                collect_functions(item, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_functions(item, found)),
        _ => {}
    }
}

#[test]
fn rendered_metadata_piped_into_cfn_init_writes_the_file() {
    let sandbox = Sandbox::new();
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("etc/app.conf");
    let template = sandbox.path("app.yaml");
    std::fs::write(
        &template,
        format!(
            "Parameters:\n  Greeting: {{Type: String, Default: hello}}\nResources:\n  App:\n    \
             Type: AWS::EC2::Instance\n    Metadata:\n      AWS::CloudFormation::Init:\n        config:\n          \
             files:\n            {}:\n              content: !Sub '${{Greeting}} from ${{AWS::StackName}} in ${{AWS::Region}}'\n              \
             mode: '000640'\n",
            target.display()
        ),
    )
    .unwrap();
    let rendered = render(
        &sandbox,
        &["-t", template.to_str().unwrap(), "-r", "App", "-p", "Greeting=hi", "--stack-name", "local"],
    );
    rendered.code(0).stderr_is("");
    sandbox.cmd("cfn-init").arg("-").stdin(rendered.stdout.as_bytes()).run().code(0).stderr_is("");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi from local in us-east-1");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777, 0o640);
}

#[test]
fn unresolvable_templates_exit_1_naming_the_expression_and_its_line() {
    let sandbox = Sandbox::new();
    let template = sandbox.path("db.yaml");
    std::fs::write(
        &template,
        "Parameters:\n  Name: {Type: String}\nResources:\n  Db:\n    Type: AWS::RDS::DBInstance\n  App:\n    \
         Type: AWS::EC2::Instance\n    Metadata:\n      url: !Sub 'postgres://${Db.Endpoint.Address}/app'\n",
    )
    .unwrap();
    let file = template.to_str().unwrap();
    render(&sandbox, &["-t", file, "-r", "App", "-p", "Name=x"]).code(1).stdout_is("").stderr_is(&format!(
        "cfn-bootstrap render: {file}:9:12: App (/Resources/App/Metadata/url): no value given for the attribute \
         Db.Endpoint.Address in {{\"Fn::Sub\":\"postgres://${{Db.Endpoint.Address}}/app\"}}\n\
         help: give it with --attribute Db.Endpoint.Address=VALUE\n"
    ));
    render(&sandbox, &["-t", file, "-r", "App"]).code(1).stderr_is(&format!(
        "cfn-bootstrap render: {file}:2:9: App (/Parameters/Name): Parameters: [Name] must have values\n\
         help: give it with -p Name=VALUE\n"
    ));
    render(&sandbox, &["-t", file, "-r", "App", "-p", "Name=x", "--attribute", "Db.Endpoint.Address=db.local"])
        .code(0)
        .stdout_is("{\n    \"url\": \"postgres://db.local/app\"\n}\n");
    render(&sandbox, &["-t", file, "-r", "Nope", "-p", "Name=x"])
        .code(1)
        .stderr_has("Nope: no resource named Nope in the template (its resources: Db, App)");
    // Any `!Name` is the function Fn::Name (issue 30); one CloudFormation does not have
    // is refused where it is used, naming it.
    std::fs::write(&template, "Resources:\n  App: {Type: T, Metadata: !Reff x}\n").unwrap();
    render(&sandbox, &["-t", file, "-r", "App"])
        .code(1)
        .stderr_has(&format!("{file}:2:28: App (/Resources/App/Metadata): Fn::Reff is not supported"));
    std::fs::write(&template, "Resources:\n  App: {Type: T, Metadata: !Re-ff x}\n").unwrap();
    render(&sandbox, &["-t", file, "-r", "App"])
        .code(1)
        .stderr_has(&format!("{file}:2:28: not YAML: unknown tag !Re-ff"));
    render(&sandbox, &["-t", "/nonexistent/t.yaml", "-r", "App"])
        .code(1)
        .stderr_is("cfn-bootstrap render: cannot read /nonexistent/t.yaml: No such file or directory\n");
}

#[test]
fn usage_errors_exit_2() {
    let sandbox = Sandbox::new();
    render(&sandbox, &["-r", "App"]).code(2).stdout_is("").stderr_has("--template <FILE>");
    render(&sandbox, &["-t", "x.yaml"]).code(2).stderr_has("--resource <RESOURCE>");
    render(&sandbox, &["-t", "x.yaml", "-r", "A", "-p", "NoEquals"]).code(2).stderr_has("expected KEY=VALUE");
    render(&sandbox, &["-t", "x.yaml", "-r", "A", "--bogus"]).code(2).stderr_has("--bogus");
}

#[test]
fn the_template_can_come_from_standard_input() {
    let sandbox = Sandbox::new();
    sandbox
        .cmd_via(binary(), "cfn-bootstrap")
        .args(["render", "-t", "-", "-r", "A"])
        .stdin(b"{\"Resources\": {\"A\": {\"Type\": \"T\", \"Metadata\": {\"r\": {\"Ref\": \"AWS::Region\"}}}}}")
        .run()
        .code(0)
        .stdout_is("{\n    \"r\": \"us-east-1\"\n}\n");
}

/// `render ARGS` with the address space bounded to 256 MiB (prlimit), so that a template
/// that made render allocate gigabytes fails here instead of loading the machine.
fn render_bounded(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.cmd_via("prlimit", "cfn-bootstrap").arg("--as=268435456").arg(binary()).arg("render").args(args).run()
}

/// A template of tests/templates/limits, as an argument.
fn limits_template(name: &str) -> String {
    templates().join("limits").join(name).display().to_string()
}

#[test]
fn a_yaml_alias_bomb_exits_1_at_the_copy_limit_within_bounded_memory() {
    // Issue 22 point 2: 644 bytes whose aliases expand to 10^9 strings grew render to
    // 3.9 GB and an allocation abort (exit 134). The copies stop at the first alias of
    // the anchor `f` (line 11), where they would pass 2^20 values and characters.
    let sandbox = Sandbox::new();
    let file = limits_template("alias_bomb.yaml");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 644);
    render_bounded(&sandbox, &["-t", &file, "-r", "R"]).code(1).stdout_is("").stderr_is(&format!(
        "cfn-bootstrap render: {file}:11:14: anchors and aliases copy more than 1048576 values and characters \
         (the limit for a 644-byte template: 16 per byte, at least 1048576, at most 4194304)\n"
    ));
}

#[test]
fn chained_aliases_exit_1_at_the_depth_limit_without_overflowing_the_stack() {
    // Issue 22 point 3: forty anchors, each 120 levels around an alias to the previous,
    // overflowed the stack (exit 134). Depth is counted with the alias expanded: the
    // first alias (line 7) already takes the value past 128 levels.
    let sandbox = Sandbox::new();
    let file = limits_template("chained_aliases.yaml");
    render_bounded(&sandbox, &["-t", &file, "-r", "R"]).code(1).stdout_is("").stderr_is(&format!(
        "cfn-bootstrap render: {file}:7:135: values are nested more than 128 deep with this alias expanded \
         (each collection and short-form tag is a level)\n"
    ));
}

#[test]
fn deep_json_nested_functions_and_growing_functions_stop_at_their_limits() {
    let sandbox = Sandbox::new();
    let file = sandbox.path("t.json");
    let path = file.to_str().unwrap();
    let with_metadata =
        |metadata: &str| format!("{{\"Resources\": {{\"R\": {{\"Type\": \"T\", \"Metadata\": {metadata}}}}}}}");
    // JSON 300 levels deep: serde_json's bound, reported as the template's limit.
    std::fs::write(&file, with_metadata(&format!("{}{}", "[".repeat(300), "]".repeat(300)))).unwrap();
    render_bounded(&sandbox, &["-t", path, "-r", "R"])
        .code(1)
        .stderr_has(&format!("cfn-bootstrap render: {path}:1:"))
        .stderr_has(": values are nested more than 128 deep (each collection and short-form tag is a level)\n");
    // Fn::Base64 nested 120 deep grows by a third at every level: 10^15 bytes unbounded.
    let mut base64 = "\"x\"".to_string();
    for _ in 0..120 {
        base64 = format!("{{\"Fn::Base64\": {base64}}}");
    }
    std::fs::write(&file, with_metadata(&format!("{{\"m\": {base64}}}"))).unwrap();
    render_bounded(&sandbox, &["-t", path, "-r", "R"])
        .code(1)
        .stdout_is("")
        .stderr_has("resolving makes more than 1048576 values and characters (the limit for a ");
    // Fn::Sub using its variable twice, nested 40 deep: 2^40 characters unbounded.
    let mut sub = "\"x\"".to_string();
    for _ in 0..40 {
        sub = format!("{{\"Fn::Sub\": [\"${{v}}${{v}}\", {{\"v\": {sub}}}]}}");
    }
    std::fs::write(&file, with_metadata(&format!("{{\"m\": {sub}}}"))).unwrap();
    render_bounded(&sandbox, &["-t", path, "-r", "R"])
        .code(1)
        .stderr_has("/Resources/R/Metadata/m/Fn::Sub/1/v/Fn::Sub/1/v/")
        .stderr_has("resolving makes more than 1048576 values and characters");
    // 63 conditions that each hold 122 levels of Fn::Not and name the next: each within
    // the depth a value may have, together 3843 levels of recursion, which overflowed the
    // stack. The resolver counts its own depth across conditions.
    let mut conditions = Vec::new();
    for c in 0..63 {
        let mut condition = format!("{{\"Condition\": \"C{}\"}}", c + 1);
        for _ in 0..61 {
            condition = format!("{{\"Fn::Not\": [{condition}]}}");
        }
        conditions.push(format!("\"C{c}\": {condition}"));
    }
    conditions.push("\"C63\": {\"Fn::Equals\": [\"a\", \"a\"]}".into());
    std::fs::write(
        &file,
        format!(
            "{{\"Conditions\": {{{}}}, \"Resources\": {{\"R\": {{\"Type\": \"T\", \"Metadata\": {{\"m\": \
             {{\"Fn::If\": [\"C0\", \"yes\", \"no\"]}}}}}}}}}}",
            conditions.join(", ")
        ),
    )
    .unwrap();
    render_bounded(&sandbox, &["-t", path, "-r", "R"])
        .code(1)
        .stderr_has("expressions, with the conditions they evaluate, are nested more than 256 deep");
}

#[test]
fn cidr_follows_cloudformations_argument_rules() {
    // Issue 22 point 7: `!Cidr ['::/0', 1, 128]` overflowed a shift (a panic in a debug
    // build). By CloudFormation's rules it is valid: 128 subnet bits, within the block's
    // 128 host bits, make one subnet, the block itself.
    let sandbox = Sandbox::new();
    let file = sandbox.path("cidr.yaml");
    let path = file.to_str().unwrap();
    let cidr = |arguments: &str| {
        std::fs::write(&file, format!("Resources:\n  R:\n    Type: T\n    Metadata:\n      c: !Cidr {arguments}\n"))
            .unwrap();
        render(&sandbox, &["-t", path, "-r", "R"])
    };
    cidr("['::/0', 1, 128]").code(0).stderr_is("").stdout_is("{\n    \"c\": [\n        \"::/0\"\n    ]\n}\n");
    cidr("['::/0', 2, 127]").code(0).stdout_is("{\n    \"c\": [\n        \"::/1\",\n        \"8000::/1\"\n    ]\n}\n");
    cidr("['::/0', 1, 129]").code(1).stdout_is("").stderr_is(&format!(
        "cfn-bootstrap render: {path}:5:10: R (/Resources/R/Metadata/c): the subnet bits must be 1 to 128 for ::/0, \
         not 129 in {{\"Fn::Cidr\":[\"::/0\",1,129]}}\n"
    ));
    cidr("['10.0.0.0/24', 257, 1]").code(1).stderr_has("the count must be 1 to 256, not 257");
    cidr("['10.0.0.0/24', 1, 9]").code(1).stderr_has("9 subnet bits are more than the 8 host bits of 10.0.0.0/24");
    cidr("['10.0.0.0/30', 3, 1]").code(1).stderr_has("10.0.0.0/30 holds only 2 subnets of /31, not 3");
}

#[test]
fn long_keys_nested_deep_keep_positions_in_proportion_to_the_template() {
    // Where each value is was kept by whole JSON pointer: 110 keys of 1000 characters
    // around 5000 numbers made 5000 pointers of 110 kB each, half a gigabyte for a
    // 120 kB template. Positions are a tree of keys now, each key held once.
    let sandbox = Sandbox::new();
    let file = sandbox.path("keys.yaml");
    let mut value = format!("[{}]", vec!["7"; 5000].join(","));
    for level in 0..110 {
        value = format!("{{k{level}{}: {value}}}", "x".repeat(1000));
    }
    std::fs::write(&file, format!("Resources:\n  R:\n    Type: T\n    Metadata:\n      deep: {value}\n")).unwrap();
    let rendered = render_bounded(&sandbox, &["-t", file.to_str().unwrap(), "-r", "R"]);
    rendered.code(0).stderr_is("");
    assert_eq!(rendered.stdout.matches(" 7").count(), 5000, "{}", &rendered.stdout[..200]);
}
