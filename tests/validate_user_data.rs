//! `cfn-bootstrap validate -t` reading the user data (issue 23, point 3): on AWS's own
//! sample templates (tests/templates/aws-samples, vendored unchanged), the cfn-init,
//! cfn-signal and cfn-hup set-ups are found and checked, with no false error; a mistake
//! injected into a copy is found with its code at the template line that holds it (the
//! line computed here from the edited text). Also several templates in one run, and the
//! commands the CI documents give (docs/validate-in-ci.md, .pre-commit-hooks.yaml).

mod common;
use common::*;
use serde_json::Value;
use std::time::Duration;

const SAMPLES: &str = "tests/templates/aws-samples";

fn sample(name: &str) -> String {
    std::fs::read_to_string(workspace().join(SAMPLES).join(name)).unwrap()
}

/// `validate -t FILE --format json` on `text` written as `name` in a sandbox.
fn validate(name: &str, text: &str) -> (Run, Value) {
    let sandbox = Sandbox::with_bootstrap();
    let file = sandbox.path(name);
    std::fs::write(&file, text).unwrap();
    let command = sandbox.cmd("cfn-bootstrap").arg("validate").arg("-t").arg(&file);
    let run = command.arg("--format").arg("json").run();
    let json: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e})\n{run}"));
    (run, json)
}

/// Line and column (1-based, in characters) where `marker` first occurs in `text` (after
/// `after`, when given).
fn place_of(text: &str, after: &str, marker: &str) -> (u64, u64) {
    let from = text.find(after).unwrap_or_else(|| panic!("{after:?} is not in the text"));
    let offset = from + text[from..].find(marker).unwrap_or_else(|| panic!("{marker:?} is not in the text"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line as u64, column as u64)
}

/// The findings of `json` that are errors, as (code, line, column, message).
fn errors(json: &Value) -> Vec<(String, u64, u64, String)> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            let text = |k: &str| f[k].as_str().unwrap_or("").to_string();
            (text("code"), f["line"].as_u64().unwrap_or(0), f["column"].as_u64().unwrap_or(0), text("message"))
        })
        .collect()
}

/// `text` with `from` replaced once, after `after`: the edit must apply.
fn edit(text: &str, after: &str, from: &str, to: &str) -> String {
    let start = text.find(after).unwrap_or_else(|| panic!("{after:?} is not in the text"));
    let at = start + text[start..].find(from).unwrap_or_else(|| panic!("{from:?} is not in the text"));
    format!("{}{to}{}", &text[..at], &text[at + from.len()..])
}

#[test]
fn the_samples_give_no_false_error() {
    for name in ["RHEL9_cfn-hup.yaml", "ec2_with_waitcondition_template.yaml"] {
        let (run, json) = validate(name, &sample(name));
        assert_eq!(errors(&json), vec![], "{name}\n{run}");
        run.code(0);
    }
    // AWS's InstanceWithCfnInit has one real mistake: its hook watches
    // Resources.LaunchConfig, a resource the template does not define (its instance is
    // `Instance`), so cfn-hup never reruns cfn-init. That is the only error.
    for name in ["InstanceWithCfnInit.yaml", "InstanceWithCfnInit.json"] {
        let text = sample(name);
        let (run, json) = validate(name, &text);
        let (line, column) = place_of(&text, "cfn-auto-reloader-hook", "Resources.LaunchConfig");
        let found = errors(&json);
        assert_eq!(found.len(), 1, "{name}\n{run}");
        assert_eq!((found[0].0.as_str(), found[0].1, found[0].2), ("E060", line, column), "{name}\n{run}");
        assert!(found[0].3.contains("names the resource LaunchConfig"), "{name}\n{run}");
        run.code(1);
    }
}

#[test]
fn the_configsets_the_user_data_runs_are_found() {
    let text = sample("RHEL9_cfn-hup.yaml");
    let (run, json) = validate("RHEL9_cfn-hup.yaml", &text);
    let (line, _) = place_of(&text, "UserData", "--configsets full_install");
    let (hook_line, _) = place_of(&text, "cfn-auto-reloader-hook", "action=");
    let calls: Vec<(String, String, u64, Value)> = json["user_data"]
        .as_array()
        .unwrap_or_else(|| panic!("no user_data\n{run}"))
        .iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (text("in"), text("resource"), c["line"].as_u64().unwrap_or(0), c["configsets"].clone())
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            ("EC2Instance".into(), "EC2Instance".into(), line, serde_json::json!(["full_install"])),
            (
                "EC2Instance /etc/cfn/hooks.d/cfn-auto-reloader.conf".into(),
                "EC2Instance".into(),
                hook_line,
                serde_json::json!(["full_install"])
            ),
        ],
        "{run}"
    );
    // A Join's items: the call is at the line of its first item, and without -c it runs `default`.
    let text = sample("ec2_with_waitcondition_template.yaml");
    let (run, json) = validate("ec2_with_waitcondition_template.yaml", &text);
    let (line, _) = place_of(&text, "UserData", "/usr/local/bin/cfn-init");
    let call = &json["user_data"][0];
    assert_eq!(
        (&call["resource"], &call["line"], &call["configsets"]),
        (&"KWOSInstance".into(), &line.into(), &serde_json::json!(["default"])),
        "{run}"
    );
}

#[test]
fn a_misspelt_configset_in_the_user_data_is_found_at_its_line() {
    // A double-quoted Fn::Sub string: every script line is on the template line of the string.
    let text = edit(&sample("RHEL9_cfn-hup.yaml"), "UserData", "--configsets full_install", "--configsets full_instal");
    let (run, json) = validate("RHEL9_cfn-hup.yaml", &text);
    let (line, column) = place_of(&text, "UserData", "full_instal ");
    let found = errors(&json);
    assert_eq!(found.len(), 1, "{run}");
    assert_eq!((found[0].0.as_str(), found[0].1, found[0].2), ("E062", line, column), "{run}");
    assert!(found[0].3.contains("no configSet named full_instal"), "{run}");
    run.code(1);

    // A block scalar: script line N is template line start + N.
    let call = "/opt/aws/bin/cfn-init -v --stack ${AWS::StackName} --resource Instance --configsets defualt --region ${AWS::Region}\n          ";
    let text = edit(
        &sample("InstanceWithCfnInit.yaml"),
        "UserData",
        "/opt/aws/bin/cfn-signal",
        &format!("{call}/opt/aws/bin/cfn-signal"),
    );
    let (run, json) = validate("InstanceWithCfnInit.yaml", &text);
    let (line, column) = place_of(&text, "UserData", "defualt");
    let found = errors(&json);
    assert!(found.iter().any(|f| (f.0.as_str(), f.1, f.2) == ("E062", line, column)), "{run}");
}

#[test]
fn a_resource_the_template_lacks_is_found_at_the_join_item() {
    let text = edit(&sample("ec2_with_waitcondition_template.yaml"), "UserData", "-r KWOSInstance", "-r KWOSInstanse");
    let (run, json) = validate("ec2_with_waitcondition_template.yaml", &text);
    let (line, column) = place_of(&text, "UserData", "KWOSInstanse");
    let found = errors(&json);
    assert_eq!(found.len(), 1, "{run}");
    assert_eq!((found[0].0.as_str(), found[0].1, found[0].2), ("E060", line, column), "{run}");
    assert!(found[0].3.contains("cfn-init --resource names the resource KWOSInstanse"), "{run}");
    run.code(1);
}

#[test]
fn a_hook_path_to_a_missing_key_is_found_at_its_line() {
    let text = edit(&sample("RHEL9_cfn-hup.yaml"), "path=", "AWS::CloudFormation::Init", "AWS::CloudFormation::Inti");
    let (run, json) = validate("RHEL9_cfn-hup.yaml", &text);
    let (line, column) = place_of(&text, "cfn-auto-reloader-hook", "Resources.EC2Instance");
    let found = errors(&json);
    assert_eq!(found.len(), 1, "{run}");
    assert_eq!((found[0].0.as_str(), found[0].1, found[0].2), ("E067", line, column), "{run}");
    assert!(found[0].3.contains("has no key AWS::CloudFormation::Inti"), "{run}");
}

#[test]
fn a_signal_nothing_waits_for_is_found_at_its_line() {
    // The instance no longer waits for its signal.
    let text = edit(
        &sample("InstanceWithCfnInit.yaml"),
        "Instance:",
        "    CreationPolicy:\n      ResourceSignal:\n        Timeout: PT5M\n",
        "",
    );
    let (run, json) = validate("InstanceWithCfnInit.yaml", &text);
    let (line, column) = place_of(&text, "UserData", "Instance --region");
    let found = errors(&json);
    assert!(
        found
            .iter()
            .any(|f| (f.0.as_str(), f.1, f.2) == ("E064", line, column) && f.3.contains("has no CreationPolicy")),
        "{run}"
    );
    // The wait-condition URL is the Ref of a security group, not of a handle.
    let text = edit(
        &sample("ec2_with_waitcondition_template.yaml"),
        "All done",
        "!Ref KWOSWaitHandle",
        "!Ref KWOSSecurityGroup",
    );
    let (run, json) = validate("ec2_with_waitcondition_template.yaml", &text);
    let (line, column) = place_of(&text, "All done", "KWOSSecurityGroup");
    let found = errors(&json);
    assert_eq!(found.len(), 1, "{run}");
    assert_eq!((found[0].0.as_str(), found[0].1, found[0].2), ("E065", line, column), "{run}");
}

#[test]
fn stack_and_region_that_are_not_this_stacks_are_warned_about() {
    let text =
        edit(&sample("RHEL9_cfn-hup.yaml"), "UserData", "--region ${AWS::Region} \\n", "--region us-east-one \\n");
    let text = edit(&text, "[main]", "stack=${AWS::StackId}", "stack=other-stack");
    let (run, json) = validate("RHEL9_cfn-hup.yaml", &text);
    let warnings: Vec<(String, u64)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "warning")
        .map(|f| (f["code"].as_str().unwrap().to_string(), f["line"].as_u64().unwrap()))
        .collect();
    let (region_line, _) = place_of(&text, "UserData", "us-east-one");
    let (stack_line, _) = place_of(&text, "[main]", "stack=other-stack");
    assert_eq!(warnings, vec![("W060".to_string(), stack_line), ("W061".to_string(), region_line)], "{run}");
    run.code(0);
}

/// HUP-CONF-01/03 through cfn-hup's own reader: a cfn-hup.conf cfn-hup refuses to start
/// with (no `stack` in `[main]`, as when the lines were joined with spaces; an interval
/// it refuses) is an error at the file; one whose text a parameter writes is not judged.
#[test]
fn a_cfn_hup_conf_cfn_hup_refuses_is_an_error() {
    let sample = sample("RHEL9_cfn-hup.yaml");
    let joined = edit(&sample, "[main]", "[main]\n                stack=", "[main] stack=");
    let no_interval =
        edit(&sample, "[main]", "region=${AWS::Region}", "region=${AWS::Region}\n                interval=0");
    for (text, message) in [
        (&joined, "cfn-hup refuses /etc/cfn/cfn-hup.conf: [main] section must contain stack option"),
        (&no_interval, "cfn-hup refuses /etc/cfn/cfn-hup.conf: Invalid interval (must be 1 minute or greater): 0"),
    ] {
        let (run, json) = validate("RHEL9_cfn-hup.yaml", text);
        let found = errors(&json);
        assert_eq!(found.len(), 1, "{run}");
        let (line, _) = place_of(text, "/etc/cfn/cfn-hup.conf:", "[main]");
        assert_eq!((found[0].0.as_str(), found[0].1, found[0].3.as_str()), ("E066", line, message), "{run}");
        run.code(1);
    }
    // A parameter's value could be the stack line itself: nothing is claimed.
    let unknown = edit(&sample, "[main]", "stack=${AWS::StackId}", "${KeyName}");
    let (run, json) = validate("RHEL9_cfn-hup.yaml", &unknown);
    assert!(errors(&json).is_empty(), "{run}");
}

#[test]
fn several_templates_in_one_run() {
    let sandbox = Sandbox::with_bootstrap();
    // The sample with its hook watching its own instance, and the sample as it is.
    let good = sandbox.path("good.yaml");
    std::fs::write(&good, edit(&sample("InstanceWithCfnInit.yaml"), "path=", "LaunchConfig", "Instance")).unwrap();
    let bad = workspace().join(SAMPLES).join("InstanceWithCfnInit.yaml");
    let run = |format: &str| {
        let command = sandbox.cmd("cfn-bootstrap").arg("validate").arg("--format").arg(format);
        command.arg("-t").arg(&good).arg(&bad).run()
    };
    let text = run("text");
    text.code(1).stdout_has(&format!("{}: 0 errors, 0 warnings", good.display()));
    text.stdout_has(&format!("{}: 1 error, 0 warnings", bad.display()));
    let sarif = run("sarif");
    let document: Value = serde_json::from_str(&sarif.stdout).unwrap();
    let results = document["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif}");
    assert_eq!(results[0]["ruleId"], "E060");
    assert_eq!(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], bad.display().to_string());
    let json = run("json");
    let documents: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(documents.as_array().map(Vec::len), Some(2), "{json}");
    // Each alone: exit 0 for the good one.
    sandbox.cmd("cfn-bootstrap").arg("validate").arg("-t").arg(&good).run().code(0);
}

/// The `cfn-bootstrap validate` command lines of the fenced blocks of `markdown`, as a
/// shell or a CI job runs them (`run: …`, `- …`).
fn documented_commands(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let command = line.trim().trim_start_matches("- ").trim_start_matches("run: ");
        if fenced && command.starts_with("cfn-bootstrap validate") {
            found.push(command.to_string());
        }
    }
    found
}

/// The value of `key:` in the hook definition (one hook, flat keys).
fn hook_value(hooks: &str, key: &str) -> String {
    let prefix = format!("{key}: ");
    let line = hooks.lines().map(|l| l.trim().trim_start_matches("- ")).find(|l| l.starts_with(&prefix));
    line.unwrap_or_else(|| panic!("no {key} in .pre-commit-hooks.yaml")).trim_start_matches(&prefix).to_string()
}

#[test]
fn the_ci_documents_commands_pass_on_a_clean_template_and_fail_on_a_mistake() {
    let guide = std::fs::read_to_string(workspace().join("docs/validate-in-ci.md")).unwrap();
    let commands = documented_commands(&guide);
    assert_eq!(commands.len(), 3, "the page's command lines: {commands:?}");
    let hooks = std::fs::read_to_string(workspace().join(".pre-commit-hooks.yaml")).unwrap();
    assert_eq!(hook_value(&hooks, "id"), "cfn-bootstrap-validate");
    assert_eq!(hook_value(&hooks, "pass_filenames"), "true");
    // pre-commit runs the entry's words with the file names after them, without a shell.
    let entry = hook_value(&hooks, "entry");
    let pattern = hook_value(&hooks, "files");

    let sandbox = Sandbox::with_bootstrap();
    let root = sandbox.path("repo");
    std::fs::create_dir_all(root.join("templates")).unwrap();
    let fixed = |name: &str| edit(&sample(name), "path=", "LaunchConfig", "Instance");
    std::fs::write(root.join("templates/web.yaml"), fixed("InstanceWithCfnInit.yaml")).unwrap();
    std::fs::write(root.join("templates/db.json"), fixed("InstanceWithCfnInit.json")).unwrap();
    let path = format!("{}:/usr/bin:/bin", sandbox.path("bin").display());
    let shell = |command: &str| {
        let script = format!("cd '{}' && {command}", root.display());
        sandbox.cmd_via("/bin/sh", "sh").arg("-c").arg(script).env("PATH", &path).run()
    };
    let hook = |files: &[&str]| {
        let words: Vec<&str> = entry.split_whitespace().collect();
        let command = sandbox.cmd(words[0]).args(&words[1..]).args(files.iter().map(|f| root.join(f)));
        command.run()
    };
    // pre-commit's `files` is a Python regular expression, searched in each staged path.
    let matches = |file: &str| {
        let check = "import re, sys; sys.exit(0 if re.search(sys.argv[1], sys.argv[2]) else 1)";
        let status =
            std::process::Command::new(emulator_python()).args(["-c", check, &pattern, file]).status().unwrap();
        status.success()
    };
    for file in ["templates/web.yaml", "templates/db.json", "infra/cloudformation/app.yml", "cfn/x.template"] {
        assert!(matches(file), "{pattern} does not take {file}");
    }
    for file in [".github/workflows/ci.yaml", "docker-compose.yml", "package.json"] {
        assert!(!matches(file), "{pattern} takes {file}, which is not a template");
    }

    for command in &commands {
        shell(command).code(0);
    }
    hook(&["templates/web.yaml", "templates/db.json"]).code(0);
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(root.join("validate.sarif")).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"], serde_json::json!([]));

    // A mistake in one template: every one of them fails, and the SARIF names its place.
    let bad = sample("InstanceWithCfnInit.yaml");
    std::fs::write(root.join("templates/bad.yaml"), &bad).unwrap();
    for command in &commands[1..] {
        shell(command).code(1);
    }
    hook(&["templates/web.yaml", "templates/bad.yaml"]).code(1).stdout_has("error[E060]");
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(root.join("validate.sarif")).unwrap()).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    let (line, _) = place_of(&bad, "cfn-auto-reloader-hook", "Resources.LaunchConfig");
    assert_eq!(result["ruleId"], "E060");
    assert_eq!(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "templates/bad.yaml");
    assert_eq!(result["locations"][0]["physicalLocation"]["region"]["startLine"], line);
}

/// `validate -t FILE` run under `timeout`, so that a run past every bound ends the test
/// (exit 124) rather than holding it for hours.
fn validate_bounded(sandbox: &Sandbox, file: &str) -> Run {
    sandbox
        .cmd_via("timeout", "cfn-bootstrap")
        .args(["--kill-after=5", "60"])
        .arg(sandbox.path("bin/cfn-bootstrap"))
        .args(["validate", "-t", file])
        .run()
}

/// `validate -t FILE` (a template with user data and no Init) ends well in time with
/// nothing to report.
fn assert_clean_in_time(sandbox: &Sandbox, file: &str) {
    let run = validate_bounded(sandbox, file);
    run.code(0)
        .stderr_is("")
        .stdout_is(&format!("{file}: 0 errors, 0 warnings in 0 resources with AWS::CloudFormation::Init\n"));
    assert!(run.elapsed < Duration::from_secs(10), "{run}");
}

/// Issue 31 F1: a 956-byte template whose user data is 8 levels of `Fn::Sub`, each using
/// the next level's variable 16 times, the last one "". Each use flattened its value
/// again, 16^8 times the innermost: hours. Each variable's value is now flattened once
/// and copied at its other uses, so the text (empty) is complete: nothing is cut.
#[test]
fn variables_used_many_times_nested_are_read_in_time() {
    let sandbox = Sandbox::with_bootstrap();
    let file = workspace().join("tests/templates/limits/user_data_nested_subs.json").display().to_string();
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 956);
    assert_clean_in_time(&sandbox, &file);
}

/// Issue 31 F2: one line of JSON, 300 KB, whose user data is a `Fn::Join` of 100,000
/// empty strings: each string and each delimiter copied the rest of the line to tell a
/// YAML block scalar, quadratic (108 s). The line is now read where the value is, and
/// the delimiter placed once.
#[test]
fn a_long_join_on_one_line_is_read_in_time() {
    let sandbox = Sandbox::with_bootstrap();
    let file = workspace().join("tests/templates/limits/user_data_long_join.json").display().to_string();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.len() > 300_000 && text.lines().count() == 1 && text.matches(r#""""#).count() > 100_000);
    assert_clean_in_time(&sandbox, &file);
}

/// The texts of one template share one work bound: 64 instances whose user data each
/// makes the 1 MiB a text may hold, from 1.5 KB, would be 64 MiB of scripts to read
/// from 100 KB. Exit 1 naming the file, the place and resource where the bound was
/// reached, and the bound; nothing on standard output.
#[test]
fn the_user_data_of_a_template_is_read_within_its_work_bound() {
    let sandbox = Sandbox::with_bootstrap();
    let mut value = serde_json::json!("xxxxxxxxxxxxxxxx");
    for level in 0..5 {
        let name = format!("V{level}");
        value = serde_json::json!({"Fn::Sub": [format!("${{{name}}}").repeat(16), {name: value}]});
    }
    let instance = serde_json::json!({"Type": "AWS::EC2::Instance", "Properties": {"UserData": {"Fn::Base64": value}}});
    let resources: serde_json::Map<String, Value> = (0..64).map(|n| (format!("I{n:02}"), instance.clone())).collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "Resources": resources })).unwrap();
    let path = sandbox.path("many.json");
    std::fs::write(&path, &text).unwrap();
    let file = path.display().to_string();
    let (line, column) = place_of(&text, r#""I03""#, r#""Fn::Base64": {"#);
    let run = validate_bounded(&sandbox, &file);
    // A finding (E004), as every stop of a template's check is (issue 30).
    run.code(1).stderr_is("").stdout_has(&format!(
        "{file}:{line}:{}: error[E004]: I03: flattening the \
         user data and cfn-hup files of the template takes more than 4194304 steps (the limit for a {}-byte \
         template: 32 per byte, at least 4194304, at most 67108864)\n",
        column + r#""Fn::Base64": "#.len() as u64,
        text.len()
    ));
    assert!(run.elapsed < Duration::from_secs(10), "{run}");
}

/// `validate -t` on a template whose hook files (`hooks.d/0.conf`, …) hold `contents` (block
/// scalars), and how long it took.
fn validate_hook_files(contents: &[String]) -> (Run, Value, std::time::Duration, String) {
    let files: String = contents
        .iter()
        .enumerate()
        .map(|(n, content)| {
            let indented: String = content.lines().map(|l| format!("                {l}\n")).collect();
            format!("            /etc/cfn/hooks.d/{n}.conf:\n              content: |\n{indented}")
        })
        .collect();
    let text = format!(
        "Resources:\n  Instance:\n    Type: AWS::EC2::Instance\n    Metadata:\n      AWS::CloudFormation::Init:\n        config:\n          files:\n{files}    Properties:\n      ImageId: ami-12345678\n      InstanceType: t3.micro\n"
    );
    let started = std::time::Instant::now();
    let (run, json) = validate("big.yaml", &text);
    (run, json, started.elapsed(), text)
}

/// Hook files an attacker made large (issue 31, F4 and F12), each under the 1 MiB that
/// `validate` reads of a file: four files (as many as the resolver's bound lets one
/// template hold) whose action is 1 MB of `%(` with no `)s` after them (each `%(`
/// searched the rest of the value: 7 s a file), 0.9 MB of empty sections
/// and a hook with 0.9 MB of keys (each header and key was found by walking those before
/// it: past a minute). Each is checked at once, and the hook after them still is: its
/// path to a missing key is found at its line.
#[test]
fn hook_files_of_a_megabyte_of_references_sections_or_keys_are_checked_at_once() {
    let last = "[last]\ntriggers=post.update\npath=Resources.Instance.Metadata.nope\naction=true\n";
    let soup = "%(x) ".repeat(200_000);
    let soup = format!("[soup]\ntriggers=post.update\npath=Resources.Instance.Metadata\naction={soup}\n");
    let sections: String = (0..100_000).map(|n| format!("[s{n}]\n")).collect();
    let keys: String = (0..100_000).map(|n| format!("k{n}=v\n")).collect();
    for content in [&soup, &sections, &keys] {
        assert!((880_000..1_048_576 - 1000).contains(&content.len()), "{}", content.len());
    }
    let mut soups = vec![soup; 4];
    soups.push(last.to_string());
    let keys = format!("[last]\n{keys}{}", last.trim_start_matches("[last]\n"));
    for (what, contents) in [("soups", soups), ("sections", vec![format!("{sections}{last}")]), ("keys", vec![keys])] {
        let (run, json, took, text) = validate_hook_files(&contents);
        assert!(took < std::time::Duration::from_secs(10), "{what}: {took:?}");
        let (line, column) = place_of(&text, "[last]", "Resources.Instance.Metadata.nope");
        let found = errors(&json);
        assert_eq!(found.len(), 1, "{what}: {found:?}");
        assert_eq!((found[0].0.as_str(), found[0].1, found[0].2), ("E067", line, column), "{what}");
        assert!(found[0].3.contains("has no key nope"), "{what}: {}", found[0].3);
        run.code(1);
    }
}

/// `validate -t FILE [args]` on `text` written as `name` in a sandbox.
fn validate_with(name: &str, text: &str, args: &[&str]) -> Run {
    let sandbox = Sandbox::with_bootstrap();
    let file = sandbox.path(name);
    std::fs::write(&file, text).unwrap();
    sandbox.cmd("cfn-bootstrap").arg("validate").arg("-t").arg(&file).args(args).run()
}

/// A compact JSON template (one line) whose user data runs `cfn-init -r I -c n0,n1,…`
/// with `names` configSets I does not define: 5000 names are 29 KB (issue 31, F3).
fn unknown_configsets(names: usize) -> String {
    let list: Vec<String> = (0..names).map(|i| format!("n{i}")).collect();
    let script = format!("#!/bin/bash\ncfn-init -r I -c {}\n", list.join(","));
    serde_json::json!({"Resources": {"I": {
        "Type": "AWS::EC2::Instance",
        "Metadata": {"AWS::CloudFormation::Init": {"configSets": {"a": ["c"]}, "c": {}}},
        "Properties": {"UserData": {"Fn::Base64": script}},
    }}})
    .to_string()
}

/// A YAML template whose user data is about 1 MiB of `cfn-init -r NopeN` lines, each
/// naming a resource the template lacks: one finding per line (issue 31, F13).
fn missing_resources(bytes: usize) -> String {
    let mut script = String::new();
    for i in 0.. {
        if script.len() >= bytes {
            break;
        }
        script.push_str(&format!("          cfn-init -r Nope{i}\n"));
    }
    format!(
        "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData:\n        Fn::Base64: |\n{script}"
    )
}

/// Thousands of unknown configSets on one line (29 KB and 129 KB, which gave 217 MB of
/// text and an abort): the text output stays linear in the input and quick, five
/// findings of the place are shown and the rest counted, the line quoted around the
/// place; JSON and SARIF show the same five and the same count.
#[test]
fn thousands_of_findings_on_one_line_give_output_linear_in_the_input() {
    for names in [5_000, 20_000] {
        let template = unknown_configsets(names);
        let run = validate_with("t.json", &template, &[]);
        let (out, into) = (run.stdout.len(), template.len());
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(out <= 20 * into, "{out} bytes of output for {into} of input");
        assert!(run.elapsed < std::time::Duration::from_secs(20), "took {:?}", run.elapsed);
        assert_eq!(run.stdout.matches("error[E062]").count(), 5, "{}", &run.stdout[..out.min(10_000)]);
        run.stdout_has(&format!("  = … and {} more like this\n", names - 5));
        run.stdout_has(&format!(": {names} errors, 0 warnings in 1 resource"));
        // The line is quoted around the place, cut with `…` on both sides.
        let quoted = run.stdout.lines().find(|l| l.starts_with("1 | ")).unwrap();
        assert!(quoted.chars().count() < 200 && quoted.ends_with('…'), "{quoted}");

        let (run, json) = validate("t.json", &template);
        run.code(1);
        let findings = json["findings"].as_array().unwrap();
        assert_eq!((json["errors"].as_u64(), findings.len()), (Some(names as u64), 5));
        assert_eq!(findings[4]["more_like_this"], names - 5);
        assert!(findings[..4].iter().all(|f| f.get("more_like_this").is_none()));

        let run = validate_with("t.json", &template, &["--format", "sarif"]);
        run.code(1);
        let sarif: Value = serde_json::from_str(&run.stdout).unwrap();
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 5);
        assert_eq!(results[4]["properties"]["moreLikeThis"], names - 5);
    }
}

/// 1 MiB of `cfn-init -r NopeN` lines, a finding on each (9 s before: each one counted
/// lines from the top): well under a generous bound.
#[test]
fn a_finding_on_each_of_a_mebibyte_of_lines_is_quick() {
    let template = missing_resources(1 << 20);
    let run = validate_with("t.yaml", &template, &["--format", "json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    let lines = template.lines().count() as u64 - 6;
    assert_eq!(json["errors"].as_u64(), Some(lines));
    let last = json["findings"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["code"].as_str(), last["line"].as_u64()), (Some("E060"), Some(lines + 6)));
    assert!(run.elapsed < std::time::Duration::from_secs(10), "took {:?}", run.elapsed);
}

/// Terminal controls in a template's resource names are shown escaped: in a cfn-init
/// call's finding on standard output, and in the error naming the template's resources on
/// standard error (issue 31, F9).
#[test]
fn terminal_controls_in_a_template_are_shown_escaped() {
    use common::terminal::*;
    let script = format!("#!/bin/bash\ncfn-init -r 'Nope{HOSTILE}'\ncfn-init -r I -c '{HOSTILE}'\n");
    let template = serde_json::json!({"Resources": {
        "I": {
            "Type": "AWS::EC2::Instance",
            "Metadata": {"AWS::CloudFormation::Init": {"config": {}}},
            "Properties": {"UserData": {"Fn::Base64": script}},
        },
        format!("R{HOSTILE}"): {"Type": "AWS::CloudFormation::WaitConditionHandle"},
    }})
    .to_string();
    let run = validate_with("t.json", &template, &[]);
    assert_eq!(run.code, 1, "{run}");
    assert_no_terminal_controls(&run.stdout, "validate's stdout");
    assert_no_terminal_controls(&run.stderr, "validate's stderr");
    run.stdout_has(&format!("names the resource Nope{HOSTILE_SHOWN}, which"));
    run.stdout_has(&format!("has no configSet named {HOSTILE_SHOWN}\n"));
    let run = validate_with("t.json", &template, &["-r", "Missing"]);
    assert_eq!(run.code, 1, "{run}");
    assert_no_terminal_controls(&run.stdout, "validate's stdout");
    run.stdout_has(&format!("R{HOSTILE_SHOWN}"));
}
