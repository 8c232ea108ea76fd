//! `cfn-bootstrap validate` (issue 14, item 1): every check with a bad input, its
//! message, the place it points at (found here by searching the text, independently of
//! the parser's source map) and the exit status; the output formats; the inputs cfn-init
//! takes (a file, `-`, a stack resource through the emulator); a clean seed metadata.

mod common;
use common::*;
use serde_json::Value;

const INIT: &str = "AWS::CloudFormation::Init";

/// `validate FILE [args]` on `text` written to `metadata.json`.
fn validate_text(sandbox: &Sandbox, text: &str, args: &[&str]) -> (Run, String) {
    let file = sandbox.path("metadata.json");
    std::fs::write(&file, text).unwrap();
    let file = file.display().to_string();
    let run = sandbox.cmd("cfn-bootstrap").arg("validate").arg(&file).args(args).run();
    (run, file)
}

/// Line and column (1-based, in characters) where `marker` first occurs in `text`.
fn place_of(text: &str, marker: &str) -> (usize, usize) {
    let offset = text.find(marker).unwrap_or_else(|| panic!("{marker:?} is not in the text"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// One check: the metadata, the arguments, where the finding points, what it says.
struct Case {
    code: &'static str,
    text: String,
    args: &'static [&'static str],
    marker: &'static str,
    message: &'static str,
    help: Option<&'static str>,
}

/// Metadata whose Init has one config `config` (run by the default configSet).
fn config(body: &str) -> String {
    format!("{{\n  \"{INIT}\": {{\n    \"config\": {{\n{body}\n    }}\n  }}\n}}\n")
}

fn case(code: &'static str, text: String, marker: &'static str, message: &'static str) -> Case {
    Case { code, text, args: &[], marker, message, help: None }
}

fn cases() -> Vec<Case> {
    let files = |entries: &str| config(&format!("      \"files\": {{\n{entries}\n      }}"));
    let commands = |entries: &str| config(&format!("      \"commands\": {{\n{entries}\n      }}"));
    vec![
        case("E001", "{\"a\": 1,,}".into(), ",}", "invalid JSON: key must be a string"),
        case(
            "E002",
            config("      \"files\": {\"/a\": {\"content\": \"x\"}},\n      \"files\": {}"),
            "\"files\": {}",
            "duplicate key files: the value given at line 4 is lost",
        ),
        case("E003", "{\"Other\": {}}".into(), "{", "Could not find 'AWS::CloudFormation::Init' key"),
        case(
            "E010",
            format!(
                "{{\"{INIT}\": {{\n  \"configSets\": {{\"default\": [\"config\", \"gone\"]}},\n  \"config\": {{}}}}}}"
            ),
            "{\"default\"",
            "No configuration found with name: gone",
        ),
        case(
            "E010",
            format!(
                "{{\"{INIT}\": {{\n  \"configSets\": {{\"a\": [\"c\"], \"x\": [{{\"ConfigSet\": \"y\"}}], \
                 \"y\": [{{\"ConfigSet\": \"x\"}}]}},\n  \"c\": {{}}}}}}"
            ),
            "{\"a\"",
            "At least one circular dependency detected; this is not allowed. Culprits: x, y",
        ),
        Case {
            args: &["-c", "deploy"],
            help: Some("the configSets are: default"),
            ..case("E011", config(""), "{\n    \"config\"", "Error: no ConfigSet named deploy exists")
        },
        case(
            "E012",
            format!("{{\"{INIT}\": {{\n  \"config\": 5}}}}"),
            "5}",
            "config config: must be an object, not a number",
        ),
        case(
            "E020",
            config("      \"files\": [\"/etc/a\"]"),
            "[\"/etc/a\"]",
            "config config: files must be an object, not a list",
        ),
        case(
            "E021",
            files("        \"/etc/a\": {\"content\": \"x\", \"mode\": \"rw-r--r--\"}"),
            "{\"content\"",
            "config config, files /etc/a: mode must be an octal string like \"000644\"",
        ),
        Case {
            help: Some("use an absolute path: /etc/motd"),
            ..case(
                "E030",
                files("        \"etc/motd\": {\"content\": \"hi\"}"),
                "\"etc/motd\"",
                "File specified with non-absolute path: etc/motd",
            )
        },
        case(
            "E031",
            files("        \"/etc/a\": {\"mode\": \"000644\"}"),
            "{\"mode\"",
            "File specified without source or content",
        ),
        case(
            "E032",
            files("        \"/etc/link\": {\"mode\": \"120777\"}"),
            "{\"mode\"",
            "Symbolic link specified without a destination",
        ),
        case(
            "E033",
            files("        \"/etc/a\": {\"content\": \"x\",\n          \"source\": \"https://example.com/a\"}"),
            "\"https://example.com/a\"",
            "/etc/a has both content and source; cfn-init writes the content and ignores the source",
        ),
        case(
            "E034",
            files("        \"/etc/a\": {\"encoding\": \"base64\", \"content\": \"abc\"}"),
            "\"abc\"",
            "Malformed base64: abc",
        ),
        case(
            "E035",
            files("        \"/etc/a\": {\"context\": {}, \"content\": \"{{/done}}\"}"),
            "\"{{/done}}\"",
            "Failed to render content as a Mustache template: closing tag {{/done}} at 1:1 has no open section",
        ),
        case(
            "E036",
            files("        \"/etc/a\": {\"source\": \"https://example.com/a\", \"authentication\": \"web\"}"),
            "\"web\"",
            "authentication web is not defined in AWS::CloudFormation::Authentication, and no block matches the URL: \
             cfn-init fetches it without credentials",
        ),
        Case {
            help: Some("use the object's https URL: https://my-bucket.s3.amazonaws.com/app.conf"),
            ..case(
                "E037",
                files("        \"/etc/a\": {\"source\": \"s3://my-bucket/app.conf\"}"),
                "\"s3://",
                "Failed to retrieve s3://my-bucket/app.conf: Unsupported URL scheme s3",
            )
        },
        case(
            "E037",
            config("      \"sources\": {\"/opt/app\": \"ftp://example.com/app.tgz\"}"),
            "\"ftp://",
            "Failed to retrieve ftp://example.com/app.tgz: ftp:// URLs are not supported by cfn-bootstrap (use http, https or S3)",
        ),
        case(
            "E040",
            commands("        \"01_migrate\": {\"cwd\": \"/srv\"}"),
            "{\"cwd\"",
            "01_migrate does not specify the 'command' attribute, which is required",
        ),
        case(
            "E050",
            // An Init for Linux (its files are at Linux paths) asking for an msi.
            config(
                "      \"packages\": {\"msi\": {\"app\": \"https://example.com/app.msi\"}},\n      \"files\": {\"/etc/a\": {\"content\": \"x\"}}",
            ),
            "{\"app\"",
            "MSI support is only available under Windows",
        ),
        case(
            "E051",
            config("      \"packages\": {\"apt\": {\"-oDebug::X=1\": []}}"),
            "\"-oDebug",
            "Refusing apt package name -oDebug::X=1: it must not start with '-'",
        ),
        case(
            "W001",
            files("        \"/etc/a\": {\"content\": \"x\", \"mdoe\": \"000644\"}"),
            "\"mdoe\"",
            "unknown file key mdoe",
        ),
        case(
            "W002",
            config("      \"packages\": {\"brew\": {\"jq\": []}}"),
            "\"brew\"",
            "Unsupported package manager: brew",
        ),
        case(
            "W003",
            config("      \"services\": {\"upstart\": {\"nginx\": {}}}"),
            "\"upstart\"",
            "Unsupported service manager: upstart",
        ),
        case(
            "W004",
            commands("        \"01\": {\"command\": \"make\", \"test\": [\"test\", \"-e\", \"/x\"]}"),
            "[\"test\"",
            "the test of command 01 is not a string",
        ),
        case(
            "W005",
            commands("        \"01\": {\"command\": \"make\", \"ignoreErrors\": \"on\"}"),
            "\"on\"",
            "ignoreErrors is the string \"on\", which cfn-init reads as false (only true, yes, y and 1 are true)",
        ),
        case(
            "W006",
            format!(
                "{{\"AWS::CloudFormation::Authentication\": {{\"web\": {{\"type\": \"basic\", \"username\": \"u\", \
                 \"password\": \"p\"}}}},\n{}",
                &files("        \"/etc/a\": {\"source\": \"http://example.com/a\", \"authentication\": \"web\"}")[1..]
            ),
            "\"web\"}",
            "authentication web sends a password over plain http",
        ),
        case(
            "W007",
            format!(
                "{{\"AWS::CloudFormation::Authentication\": {{\n  \"sso\": {{\"type\": \"oauth\"}}}},\n{}",
                &config("")[1..]
            ),
            "\"sso\"",
            "Unrecognized authentication type: oauth",
        ),
        case(
            "W009",
            format!(
                "{{\"AWS::CloudFormation::Authentication\": {{\"S3Auth\": {{\"type\": \"S3\", \"buckets\": [\"b\"], \
                 \"roleName\": \"r\"}}}},\n{}",
                &files(
                    "        \"/etc/a\": {\"source\": \"https://b.s3.amazonaws.com/a\", \"authentication\": \"S3auth\"}"
                )[1..]
            ),
            "\"S3auth\"",
            "authentication S3auth is not defined in AWS::CloudFormation::Authentication; cfn-init falls back to the \
             block S3Auth that matches the URL",
        ),
        case(
            "W011",
            config("      \"services\": {\"sysvinit\": {\"nginx\": {\"files\": \"/etc/nginx.conf\"}}}"),
            "\"/etc/nginx.conf\"",
            "the files of service nginx is the string \"/etc/nginx.conf\": AWS's cfn-init takes each character as a \
             name, so a change to /etc/nginx.conf never restarts nginx; this one takes it as one name",
        ),
    ]
}

/// SPEC §10: each check, on a file, points at its place with the message cfn-init would
/// print; errors exit 1, warnings alone 0.
#[test]
fn each_check_reports_its_message_place_and_exit_status() {
    let sandbox = Sandbox::with_bootstrap();
    for case in cases() {
        let (run, file) = validate_text(&sandbox, &case.text, case.args);
        let (line, column) = place_of(&case.text, case.marker);
        let severity = if case.code.starts_with('E') { "error" } else { "warning" };
        let head = format!("{file}:{line}:{column}: {severity}[{}]: {}\n", case.code, case.message);
        assert!(run.stdout.contains(&head), "{}: expected\n{head}in\n{run}", case.code);
        // The offending line, quoted, and a caret under the column.
        let quoted = case.text.lines().nth(line - 1).unwrap();
        let gutter = " ".repeat(line.to_string().len());
        let caret = format!("{line} | {quoted}\n{gutter} | {}^\n", " ".repeat(column - 1));
        assert!(run.stdout.contains(&caret), "{}: no caret\n{caret}in\n{run}", case.code);
        if let Some(help) = case.help {
            assert!(run.stdout.contains(&format!("{gutter} = help: {help}\n")), "{}: no help\n{run}", case.code);
        }
        run.code(if severity == "error" { 1 } else { 0 }).stderr_is("");
    }
}

/// The seed metadata (the scenario's stack, as cfn-get-metadata prints it) is clean.
#[test]
fn the_seed_metadata_validates_clean() {
    let sandbox = Sandbox::with_bootstrap();
    let seed = workspace().join("tests/validate/seed-metadata.json").display().to_string();
    sandbox
        .cmd("cfn-bootstrap")
        .args(["validate", "-c", "create,update", &seed])
        .run()
        .code(0)
        .stdout_is(&format!("{seed}: 0 errors, 0 warnings\n"))
        .stderr_is("");
}

/// INIT-CLI-02: `-` reads standard input, named `<stdin>` in findings.
#[test]
fn standard_input_is_read_with_positions() {
    let sandbox = Sandbox::with_bootstrap();
    let text = config("      \"files\": {\"tmp/x\": {\"content\": \"x\"}}");
    let run = sandbox.cmd("cfn-bootstrap").args(["validate", "-"]).stdin(text.as_bytes()).run();
    run.code(1).stdout_has("<stdin>:4:17: error[E030]: File specified with non-absolute path: tmp/x\n");
}

/// A stack resource through the emulator: cfn-init's options and credentials; findings
/// name the resource and the JSON pointer (there is no file to point into).
#[test]
fn a_stack_resource_is_read_with_cfn_init_options() {
    let emulator = Emulator::shared();
    let sandbox = Sandbox::with_bootstrap();
    let metadata: Value =
        serde_json::from_str(&config("\"files\": {\"/etc/a\": {\"content\": \"x\", \"mode\": \"9\"}}")).unwrap();
    let stack = emulator.create_stack(&unique("validate"), &instance_template(&metadata));
    let run =
        sandbox.cmd("cfn-bootstrap").args(["validate", "-s", &stack, "-r", "Instance"]).with_keys(&emulator).run();
    run.code(1).stderr_is("").stdout_has(&format!(
        "stack {stack} resource Instance: error[E021]: config config, files /etc/a: mode must be an octal string \
         like \"000644\" (at /{INIT}/config/files/~1etc~1a)\n"
    ));
    let seed: Value =
        serde_json::from_slice(&std::fs::read(workspace().join("tests/validate/seed-metadata.json")).unwrap()).unwrap();
    let stack = emulator.create_stack(&unique("validate"), &instance_template(&seed));
    let args = ["validate", "-s", &stack, "-r", "Instance", "-c", "create"];
    sandbox.cmd("cfn-bootstrap").args(args).with_keys(&emulator).run().code(0).stdout_has("0 errors, 0 warnings");
    // A resource without metadata is reported as cfn-init reports it.
    let args = ["validate", "-s", &stack, "-r", "Bare"];
    sandbox
        .cmd("cfn-bootstrap")
        .args(args)
        .with_keys(&emulator)
        .run()
        .code(1)
        .stderr_is("Error: Bare does not specify any metadata\n");
}

/// Usage errors exit 2: no source, two sources, half a stack resource, a bad format.
#[test]
fn usage_errors_exit_2() {
    let sandbox = Sandbox::with_bootstrap();
    let validate = |args: &[&str]| sandbox.cmd("cfn-bootstrap").arg("validate").args(args).run();
    validate(&[]).code(2).stdout_is("").stderr_has("You must specify an input source for metadata");
    validate(&["a.json", "-s", "s", "-r", "r"]).code(2).stderr_has("more than one input source");
    validate(&["-s", "s"]).code(2).stderr_has("You must specify both a stack name and logical resource id");
    validate(&["--format", "xml", "a.json"]).code(2).stderr_has("invalid value 'xml'");
    // An unreadable file is an error, not a usage error.
    validate(&["/nonexistent/metadata.json"])
        .code(1)
        .stderr_is("Could not read /nonexistent/metadata.json: No such file or directory\n");
}

fn bad_metadata() -> String {
    config(
        "      \"files\": {\"etc/a\": {\"content\": \"x\"}},\n      \"commands\": {\"01\": {\"command\": \"x\", \"ignoreErrors\": \"on\"}}",
    )
}

#[test]
fn json_output_lists_findings_with_places() {
    let sandbox = Sandbox::with_bootstrap();
    let (run, file) = validate_text(&sandbox, &bad_metadata(), &["--format", "json"]);
    run.code(1);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (out["source"].as_str(), out["errors"].as_u64(), out["warnings"].as_u64()),
        (Some(&*file), Some(1), Some(1))
    );
    let first = &out["findings"][0];
    assert_eq!(first["code"], "E030");
    assert_eq!(first["rule"], "relative-path");
    assert_eq!(first["pointer"], format!("/{INIT}/config/files/etc~1a"));
    assert_eq!((first["line"].as_u64(), first["column"].as_u64()), (Some(4), Some(17)));
    assert_eq!(first["help"], "use an absolute path: /etc/a");
    assert_eq!(out["findings"][1]["severity"], "warning");
    assert_eq!(out["findings"][1]["code"], "W005");
}

/// The SARIF 2.1.0 shape code-scanning UIs require: version and schema, one run whose
/// driver describes every rule, results that name a described rule (and its index), a
/// level SARIF knows, a message, and a region of the artifact with 1-based positions.
#[test]
fn sarif_output_has_the_2_1_0_shape() {
    let sandbox = Sandbox::with_bootstrap();
    let (run, file) = validate_text(&sandbox, &bad_metadata(), &["--format", "sarif"]);
    run.code(1);
    let sarif: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(sarif["$schema"].as_str().unwrap().ends_with("sarif-2.1.0.json"));
    let runs = sarif["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert!(!driver["name"].as_str().unwrap().is_empty());
    let rules: Vec<&str> = driver["rules"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    for rule in driver["rules"].as_array().unwrap() {
        assert!(!rule["shortDescription"]["text"].as_str().unwrap().is_empty(), "{rule}");
    }
    let results = runs[0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for result in results {
        let id = result["ruleId"].as_str().unwrap();
        assert_eq!(rules[result["ruleIndex"].as_u64().unwrap() as usize], id);
        assert!(["error", "warning", "note", "none"].contains(&result["level"].as_str().unwrap()));
        assert!(!result["message"]["text"].as_str().unwrap().is_empty());
        let physical = &result["locations"][0]["physicalLocation"];
        assert_eq!(physical["artifactLocation"]["uri"], file.as_str());
        assert!(physical["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(physical["region"]["startColumn"].as_u64().unwrap() >= 1);
        assert!(result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].as_str().unwrap().starts_with('/'));
    }
    assert_eq!(results[0]["ruleId"], "E030");
    assert_eq!(results[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 4);
}

/// validate is a subcommand like the others: its help, its manual page.
#[test]
fn validate_has_help_and_a_manual_page() {
    let sandbox = Sandbox::with_bootstrap();
    sandbox
        .cmd("cfn-bootstrap")
        .args(["help", "validate"])
        .run()
        .code(0)
        .stdout_has("Usage: cfn-bootstrap validate [OPTIONS] [FILE]")
        .stdout_has("--credential-file");
    sandbox
        .cmd("cfn-bootstrap")
        .args(["man", "cfn-bootstrap-validate"])
        .run()
        .code(0)
        .stdout_has(".TH cfn-bootstrap-validate 1");
}

/// A YAML template: one resource with a bad Init (a relative path, under a `!Sub`), one
/// without Init, one with a good Init that needs a parameter.
const TEMPLATE_YAML: &str = "\
Parameters:
  Site:
    Type: String
Resources:
  Web:
    Type: AWS::EC2::Instance
    Metadata:
      AWS::CloudFormation::Init:
        config:
          files:
            etc/site.conf:
              content: !Sub 'name=${Site}'
  Bucket:
    Type: AWS::S3::Bucket
  Worker:
    Type: AWS::EC2::Instance
    Metadata:
      AWS::CloudFormation::Init:
        config:
          commands:
            greet:
              command: !Join [' ', [echo, !Ref Site]]
";

#[test]
fn a_template_is_rendered_and_its_findings_point_into_it() {
    let sandbox = Sandbox::with_bootstrap();
    let path = sandbox.path("site.yaml");
    std::fs::write(&path, TEMPLATE_YAML).unwrap();
    let path = path.display().to_string();
    let validate = |args: &[&str]| sandbox.cmd("cfn-bootstrap").arg("validate").arg("-t").arg(&path).args(args).run();

    // Every resource with Init: Web's relative path, placed at its key in the YAML, whose
    // line is shown.
    let (line, column) = place_of(TEMPLATE_YAML, "etc/site.conf:");
    validate(&["-p", "Site=example"])
        .code(1)
        .stdout_has(&format!(
            "{path}:{line}:{column}: error[E030]: File specified with non-absolute path: etc/site.conf"
        ))
        .stdout_has(&format!("{line} |             etc/site.conf:\n"))
        .stdout_has(&format!("{path}: 1 error, 0 warnings"));

    // One resource: Worker's Init is fine.
    validate(&["-p", "Site=example", "-r", "Worker"]).code(0).stdout_has(&format!("{path}: 0 errors, 0 warnings"));
    // JSON output names the template pointer.
    let json = validate(&["-p", "Site=example", "-r", "Web", "--format", "json"]);
    json.code(1);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        report["findings"][0]["pointer"],
        "/Resources/Web/Metadata/AWS::CloudFormation::Init/config/files/etc~1site.conf"
    );

    // Without -p, Site is unknown: the same findings, and the summary counts both resources.
    validate(&[])
        .code(1)
        .stderr_is("")
        .stdout_has(&format!("{path}:{line}:{column}: error[E030]"))
        .stdout_has(&format!("{path}: 1 error, 0 warnings in 2 resources with AWS::CloudFormation::Init\n"));
    // A resource without Init, and options that conflict.
    // What stops a resource's check is a finding, in every format (issue 30).
    validate(&["-p", "Site=x", "-r", "Bucket"])
        .code(1)
        .stderr_is("")
        .stdout_has("error[E004]: Bucket: the resource has no Metadata");
    let json = validate(&["-p", "Site=x", "-r", "Bucket", "--format", "json"]);
    json.code(1);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!((report["findings"][0]["code"].as_str(), report["errors"].as_u64()), (Some("E004"), Some(1)));
    validate(&["-s", "stack"]).code(2).stderr_has("cannot be used with");
    let none = sandbox.path("none.yaml");
    std::fs::write(&none, "Resources:\n  Bucket:\n    Type: AWS::S3::Bucket\n").unwrap();
    // Nothing to check is no error for a linter run on every template of a repository.
    sandbox.cmd("cfn-bootstrap").args(["validate", "-t", &none.display().to_string()]).run().code(0).stdout_is(
        &format!("{}: 0 errors, 0 warnings in 0 resources with AWS::CloudFormation::Init\n", none.display()),
    );
}

#[test]
fn a_json_template_s_duplicate_keys_are_found_anywhere_in_it() {
    let sandbox = Sandbox::with_bootstrap();
    let text = r#"{
  "Resources": {
    "Web": {
      "Type": "AWS::EC2::Instance",
      "Properties": {"InstanceType": "t3.micro", "InstanceType": "t3.large"},
      "Metadata": {"AWS::CloudFormation::Init": {"config": {"commands": {"a": {"command": "true"}}}}}
    }
  }
}
"#;
    let path = sandbox.path("site.json");
    std::fs::write(&path, text).unwrap();
    let path = path.display().to_string();
    let (line, column) = place_of(text, r#""InstanceType": "t3.large""#);
    sandbox
        .cmd("cfn-bootstrap")
        .args(["validate", "-t", &path])
        .run()
        .code(1)
        .stdout_has(&format!("{path}:{line}:{column}: error[E002]: duplicate key InstanceType"));
}

#[test]
fn validate_t_stops_an_alias_bomb_and_chained_aliases_at_their_limits() {
    // Issue 22 points 2 and 3: `validate -t` reads templates as render does; these two
    // ended in an allocation abort and a stack overflow (exit 134). Bounded to 256 MiB of
    // address space, each is exit 1 naming the file, the line of the alias and the limit.
    let sandbox = Sandbox::with_bootstrap();
    let limits = workspace().join("tests/templates/limits");
    let validate = |file: &str| {
        sandbox
            .cmd_via("prlimit", "cfn-bootstrap")
            .arg("--as=268435456")
            .arg(sandbox.path("bin/cfn-bootstrap"))
            .args(["validate", "-t", file])
            .run()
    };
    let bomb = limits.join("alias_bomb.yaml").display().to_string();
    // A template that does not load is a finding (E004), as every stop is (issue 30).
    validate(&bomb).code(1).stderr_is("").stdout_has(&format!(
        "{bomb}:11:14: error[E004]: anchors and aliases copy more than 1048576 values and characters \
         (the limit for a 644-byte template: 16 per byte, at least 1048576, at most 4194304)\n"
    ));
    let chain = limits.join("chained_aliases.yaml").display().to_string();
    validate(&chain).code(1).stderr_is("").stdout_has(&format!(
        "{chain}:7:135: error[E004]: values are nested more than 128 deep with this alias expanded \
         (each collection and short-form tag is a level)\n"
    ));
}

/// Issue 23: a template whose parameters have no values (no Default, no -p), whose
/// configSets have no `default`, and whose resources refer to one another.
const UNKNOWNS_YAML: &str = "\
Parameters:
  KeyName:
    Type: AWS::EC2::KeyPair::KeyName
  Bucket:
    Type: String
  Proto:
    Type: String
  Env:
    Type: String
    AllowedValues: [dev, prod]
  Pkgs:
    Type: CommaDelimitedList
Conditions:
  IsProd: !Equals [!Ref Env, prod]
Resources:
  Web:
    Type: AWS::EC2::Instance
    Metadata:
      AWS::CloudFormation::Init:
        configSets:
          create: [install]
          update: [install, tune]
        install:
          sources:
            /opt/app: !Sub '${Proto}://${Bucket}/app.tar.gz'
            /opt/lib: !Sub 's3://${Bucket}/lib.tar.gz'
          files:
            /etc/key:
              content: !Ref KeyName
            /etc/db:
              content: !GetAtt Db.Endpoint.Address
            /etc/pkgs:
              content: !Join [',', !Ref Pkgs]
        tune:
          files:
            /etc/tune:
              content: !If [IsProd, 'not base64!', 'ZGV2Cg==']
              encoding: base64
    Properties:
      KeyName: !Ref KeyName
  Db:
    Type: AWS::RDS::DBInstance
";

/// Writes `text` as a template in the sandbox; its path.
fn template_file(sandbox: &Sandbox, name: &str, text: &str) -> String {
    let path = sandbox.path(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Issue 23 point 1: AWS-style templates with required parameters validate without -p
/// (and without -c): 0 errors.
#[test]
fn templates_with_required_parameters_validate_without_values() {
    let sandbox = Sandbox::with_bootstrap();
    // AWS's samples write their NoEcho database passwords (and user) into files and
    // commands: W010 for each parameter and entry, nothing else.
    for (name, no_echo) in [
        ("seed.yaml", 0),
        ("lamp_single_instance.yaml", 6),
        ("lamp_single_instance.json", 6),
        ("wordpress_single_instance.yaml", 4),
        ("wordpress_single_instance.json", 4),
    ] {
        let path = workspace().join("tests/templates").join(name).display().to_string();
        let run = sandbox.cmd("cfn-bootstrap").args(["validate", "-t", &path]).run();
        // Their user data runs cfn-init with --configsets: no W008 (cfn-init without
        // --configsets would fail) since something tells which configSets run.
        let summary = format!("{path}: 0 errors, {no_echo} warnings in 1 resource with AWS::CloudFormation::Init\n");
        run.code(0).stderr_is("").stdout_has(&summary);
        assert_eq!(run.stdout.matches("warning[W010]: the NoEcho parameter DB").count(), no_echo, "{run}");
        assert_eq!(run.stdout.matches("warning[").count(), no_echo, "{run}");
    }
}

/// Issue 23 points 1 and 2: unknowns never hide a real mistake: the s3:// URL (whatever
/// the bucket), the base64 that does not decode in the prod branch of a condition over an
/// unknown parameter; the checks that need a value skip it and say so at -v; -p narrows.
#[test]
fn unknowns_keep_real_mistakes_and_skip_what_needs_a_value() {
    let sandbox = Sandbox::with_bootstrap();
    let path = template_file(&sandbox, "unknowns.yaml", UNKNOWNS_YAML);
    let validate = |args: &[&str]| sandbox.cmd("cfn-bootstrap").args(["validate", "-t", &path]).args(args).run();

    let run = validate(&[]);
    run.code(1).stderr_is("");
    // A partly known URL: its scheme is known.
    let (line, column) = place_of(UNKNOWNS_YAML, "!Sub 's3://");
    let e037 = format!(
        "{path}:{line}:{column}: error[E037]: Failed to retrieve s3://${{Bucket}}/lib.tar.gz: Unsupported URL scheme s3 \
         (configSets create, update)\n"
    );
    assert!(run.stdout.contains(&e037), "{run}");
    // The mistake in one branch of Fn::If over Env, found without a value for Env.
    let (line, column) = place_of(UNKNOWNS_YAML, "!If [IsProd");
    let e034 = format!("{path}:{line}:{column}: error[E034]: Malformed base64: not base64! (configSet update)\n");
    assert!(run.stdout.contains(&e034), "{run}");
    assert!(run.stdout.contains("warning[W008]"), "{run}");
    assert!(run.stdout.contains(&format!("{path}: 2 errors, 1 warning in 1 resource with ")), "{run}");
    // The URL whose scheme is unknown is skipped, and -v says so.
    assert!(!run.stdout.contains("/opt/app"), "{run}");
    validate(&["-v"]).code(1).stderr_is(
        "cfn-bootstrap validate: /Resources/Web/Metadata/AWS::CloudFormation::Init/install/sources/~1opt~1app: \
         skipped E037 (bad-url): it needs the value of Proto, Bucket\n",
    );

    // -p narrows: Env=dev takes the branch whose base64 decodes.
    let run = validate(&["-p", "Env=dev", "-p", "Proto=https"]);
    run.code(1);
    assert!(!run.stdout.contains("E034"), "{run}");
    assert!(run.stdout.contains(&e037), "{run}");
    validate(&["-p", "Env=prod"]).code(1).stdout_has(&e034);
    // A value not allowed is still refused.
    validate(&["-p", "Env=test"])
        .code(1)
        .stderr_is("")
        .stdout_has("error[E004]: Web: Parameter 'Env' must be one of AllowedValues (given: \"test\")");
}

/// Issue 23 point 2: without -c every configSet is checked, W008 on configSets without
/// default; with -c, as before: the named ones must exist, no W008.
#[test]
fn every_configset_unless_told_and_c_as_before() {
    let sandbox = Sandbox::with_bootstrap();
    let path = template_file(&sandbox, "unknowns.yaml", UNKNOWNS_YAML);
    let validate = |args: &[&str]| sandbox.cmd("cfn-bootstrap").args(["validate", "-t", &path]).args(args).run();
    let (line, column) = place_of(UNKNOWNS_YAML, "configSets:");
    validate(&["-p", "Env=dev", "-p", "Proto=https", "-p", "Bucket=b"])
        .code(1)
        .stdout_has(&format!(
            "{path}:{line}:{column}: warning[W008]: cfn-init without --configsets would fail here: \
             no configSet named default exists\n"
        ))
        .stdout_has("= help: run cfn-init with --configsets naming some of: create, update\n");
    let run = validate(&["-c", "create,update"]);
    run.code(1);
    assert!(!run.stdout.contains("W008") && !run.stdout.contains("E011"), "{run}");
    validate(&["-c", "create,nope"])
        .code(1)
        .stdout_has("error[E011]: Error: no ConfigSet named nope exists\n")
        .stdout_has("= help: the configSets are: create, update\n");
    // A metadata file: the same (no -c, every configSet).
    let metadata = "{\"AWS::CloudFormation::Init\": {\"configSets\": {\"a\": [\"c\"]}, \"c\": {\"files\": {\"x\": {\"content\": \"y\"}}}}}";
    let (run, file) = validate_text(&sandbox, metadata, &[]);
    run.code(1)
        .stdout_has(&format!("{file}:1:32: warning[W008]"))
        .stdout_has("error[E030]: File specified with non-absolute path: x (configSet a)\n");
}

/// Issue 23 point 4: --format sarif of a template keeps the 2.1.0 shape, with a result
/// for each finding placed in the template.
#[test]
fn sarif_of_a_template_with_findings_has_the_2_1_0_shape() {
    let sandbox = Sandbox::with_bootstrap();
    let path = template_file(&sandbox, "unknowns.yaml", UNKNOWNS_YAML);
    let run = sandbox.cmd("cfn-bootstrap").args(["validate", "-t", &path, "--format", "sarif"]).run();
    run.code(1).stderr_is("");
    let sarif: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let driver = &sarif["runs"][0]["tool"]["driver"];
    let rules: Vec<&str> = driver["rules"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let mut ids: Vec<&str> = results.iter().map(|r| r["ruleId"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["E034", "E037", "W008"]);
    for result in results {
        let id = result["ruleId"].as_str().unwrap();
        assert_eq!(rules[result["ruleIndex"].as_u64().unwrap() as usize], id);
        assert!(["error", "warning"].contains(&result["level"].as_str().unwrap()));
        let physical = &result["locations"][0]["physicalLocation"];
        assert_eq!(physical["artifactLocation"]["uri"], path.as_str());
        assert!(physical["region"]["startLine"].as_u64().unwrap() > 1);
        let pointer = result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].as_str().unwrap();
        assert!(pointer.starts_with("/Resources/Web/Metadata/"), "{pointer}");
    }
}

/// The benchmark's template (`cargo xtask bench`, workload validate-template): 10 resources
/// with Init, parameters without values, conditions over them: clean.
#[test]
fn the_large_benchmark_template_validates_clean() {
    let sandbox = Sandbox::with_bootstrap();
    let path = workspace().join("tests/templates/large_init.yaml").display().to_string();
    sandbox
        .cmd("cfn-bootstrap")
        .args(["validate", "-t", &path])
        .run()
        .code(0)
        .stderr_is("")
        .stdout_has(&format!("{path}: 0 errors, 10 warnings in 10 resources with AWS::CloudFormation::Init\n"))
        .stdout_has("warning[W010]: the NoEcho parameter DBPassword is written into the file /srv/web1/app/config.php");
}

/// A template whose Init has `files` files with relative paths: one finding each.
fn relative_files(files: usize) -> String {
    let files: serde_json::Map<String, Value> =
        (0..files).map(|i| (format!("rel{i}"), serde_json::json!({"content": "x"}))).collect();
    serde_json::json!({"Resources": {"I": {
        "Type": "AWS::EC2::Instance",
        "Metadata": {INIT: {"config": {"files": files}}},
    }}})
    .to_string()
}

/// 40,000 findings in a template's Init (2 MB): each is told from the ones already
/// reported in constant time, not by a search of the list (a minute before), issue 31 F13.
#[test]
fn tens_of_thousands_of_init_findings_are_quick() {
    let sandbox = Sandbox::with_bootstrap();
    let file = template_file(&sandbox, "t.json", &relative_files(40_000));
    let run = sandbox.cmd("cfn-bootstrap").args(["validate", "--format", "json", "-t", &file]).run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["errors"], 40_000);
    assert!(run.elapsed < std::time::Duration::from_secs(15), "took {:?}", run.elapsed);
}

/// Issue 30 point 2: a Windows instance's Init (seen from `cfn-init.exe` in its user data
/// and its `c:\cfn` paths) is judged with Windows rules; Rules functions, a resource under
/// a false condition and a NoEcho parameter in a file do not stop the check; the
/// `cfn-init.exe` call is checked like any other.
const WINDOWS_YAML: &str = r#"Parameters:
  AdminPassword: {Type: String, NoEcho: true, Default: hunter2}
  Env: {Type: String, Default: dev}
Conditions:
  Prod: !Equals [!Ref Env, prod]
Rules:
  KnownEnv:
    Assertions:
      - Assert: !Contains [[dev, prod], !Ref Env]
        AssertDescription: !Sub "Env is ${Env}"
      - Assert: !EachMemberIn [!ValueOfAll ['AWS::EC2::Subnet::Id', VpcId], !RefAll 'AWS::EC2::VPC::Id']
Resources:
  Server:
    Type: AWS::EC2::Instance
    Condition: Prod
    Metadata:
      AWS::CloudFormation::Init:
        config:
          files:
            'c:\cfn\cfn-hup.conf':
              content: !Sub "[main]\nstack=${AWS::StackId}\nregion=${AWS::Region}\n"
            'c:\cfn\hooks.d\cfn-auto-reloader.conf':
              content: !Sub "[cfn-auto-reloader-hook]\ntriggers=post.update\npath=Resources.Server.Metadata.AWS::CloudFormation::Init\naction=cfn-init.exe -v -s ${AWS::StackId} -r Server --region ${AWS::Region}\n"
            'c:\setup\admin.txt':
              content: !Sub "password=${AdminPassword}"
          commands:
            1-install:
              command: !Join ['', ['powershell.exe -Command "Install-WindowsFeature Web-Server"']]
              waitAfterCompletion: '0'
          services:
            windows:
              cfn-hup:
                enabled: 'true'
                ensureRunning: 'true'
                files: ['c:\cfn\cfn-hup.conf', 'c:\cfn\hooks.d\cfn-auto-reloader.conf']
    Properties:
      UserData: !Base64
        Fn::Sub: |
          <script>
          cfn-init.exe -v -s ${AWS::StackId} -r Server -c nosuchset --region ${AWS::Region}
          cfn-signal.exe -e %ERRORLEVEL% --stack ${AWS::StackId} --resource Server --region ${AWS::Region}
          </script>
    CreationPolicy: {ResourceSignal: {Timeout: PT30M}}
"#;

#[test]
fn a_windows_template_with_rules_and_conditions_is_checked_with_windows_rules() {
    let sandbox = Sandbox::with_bootstrap();
    let path = template_file(&sandbox, "windows.yaml", WINDOWS_YAML);
    let validate = |args: &[&str]| sandbox.cmd("cfn-bootstrap").args(["validate", "-t", &path]).args(args).run();
    let run = validate(&["--format", "json"]);
    run.code(1).stderr_is("");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    // The configSet the call asks for, and the password written into a file: nothing
    // about paths, windows services or the Rules.
    assert_eq!(codes, ["W010", "E062"], "{run}");
    assert!(
        report["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("AdminPassword is written into the file c:\\setup\\admin.txt")
    );
    assert!(report["findings"][1]["message"].as_str().unwrap().contains("no configSet named nosuchset"));
    // -r naming the conditional resource: a note, the same findings.
    validate(&["-r", "Server"])
        .code(1)
        .stderr_is("cfn-bootstrap validate: note: Server is created only when its condition Prod is true; it is checked as when created\n")
        .stdout_has("error[E062]");
    // The same Init called as Linux's cfn-init: the c:\ paths are not absolute there.
    let linux = WINDOWS_YAML.replace("cfn-init.exe", "/opt/aws/bin/cfn-init").replace("c:\\", "cfn\\");
    let path = template_file(&sandbox, "linux.yaml", &linux);
    let run = sandbox.cmd("cfn-bootstrap").args(["validate", "-t", &path]).run();
    run.code(1).stdout_has("error[E030]: File specified with non-absolute path: cfn\\setup\\admin.txt");
    run.stdout_has("error[E050]: Cannot modify windows services without pywin32");
}
