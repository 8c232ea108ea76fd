//! `Template::metadata_for_checks`: what a linter has no value for is an unknown, and
//! conditions over unknowns are tried both ways.

use cfn_template::unknown::{self, marker};
use cfn_template::{Checked, Inputs, MAX_VARIANTS, Template};
use serde_json::{Value, json};

/// The Metadata variants of `R` in a YAML template of `sections` and R's `metadata`.
fn check_with(sections: &str, metadata: &str, inputs: &Inputs) -> Result<Checked, cfn_template::Error> {
    let text = format!(
        "{sections}\nResources:\n  R:\n    Type: AWS::EC2::Instance\n    Metadata:\n{}\n  Db:\n    Type: AWS::RDS::DBInstance\n",
        metadata.lines().map(|l| format!("      {l}")).collect::<Vec<_>>().join("\n")
    );
    Template::parse("t.yaml", &text).unwrap_or_else(|e| panic!("{e}\n{text}")).metadata_for_checks("R", inputs)
}

fn variants(sections: &str, metadata: &str) -> Vec<Value> {
    let checked = check_with(sections, metadata, &Inputs::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(checked.complete);
    checked.variants
}

const PARAMETERS: &str = "Parameters:\n  Dir: {Type: String}\n  Subnets: {Type: 'List<AWS::EC2::Subnet::Id>'}\n  \
    Env: {Type: String, AllowedValues: [dev, test, prod]}\n  Port: {Type: Number, Default: 80}\n  Idx: {Type: Number}\n  \
    Ami: {Type: 'AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>', Default: /ami}";

#[test]
fn parameters_attributes_and_exports_without_values_are_unknowns_kept_in_place() {
    let v = variants(
        PARAMETERS,
        "a: !Sub '/var/www/${Dir}/x'\nb: !Ref Subnets\nc: !Select [1, !Ref Subnets]\nd: !Join [',', !Ref Subnets]\n\
         e: !Ref Port\nf: !Ref Db\ng: !GetAtt Db.Endpoint.Address\nh: !ImportValue Shared\ni: !Base64 {Ref: Dir}\n\
         j: !Split [',', !Ref Dir]\nk: !Ref Ami\nl: !Select [!Ref Idx, [x, y]]\nm: !Select [1, [x, y]]",
    );
    assert_eq!(
        v,
        [json!({
            "a": format!("/var/www/{}/x", marker("Dir")), "b": unknown::list("Subnets"), "c": marker("Subnets[]"),
            "d": marker("Subnets[]"), "e": "80", "f": marker("Db"), "g": marker("Db.Endpoint.Address"),
            "h": marker("Shared"), "i": marker("Fn::Base64"), "j": unknown::list("Fn::Split"), "k": marker("Ami"),
            "l": marker("Fn::Select"), "m": "y",
        })]
    );
    // A value given is used; render still requires every value.
    let inputs = Inputs { parameters: [("Dir".to_string(), "site".to_string())].into(), ..Inputs::default() };
    let checked = check_with(PARAMETERS, "a: !Sub '/var/www/${Dir}/x'", &inputs).unwrap();
    assert_eq!(checked.variants, [json!({"a": "/var/www/site/x"})]);
    let text = "Parameters:\n  Dir: {Type: String}\nResources:\n  R: {Type: X, Metadata: {a: !Ref Dir}}\n";
    assert!(Template::parse("t.yaml", text).unwrap().metadata("R", &Inputs::default()).is_err());
}

#[test]
fn a_condition_over_an_unknown_gives_both_branches() {
    let sections = format!("{PARAMETERS}\nConditions:\n  Deep: !Equals [!Ref Dir, deep]\n");
    let v = variants(&sections, "a: !If [Deep, /deep, relative]");
    assert_eq!(v, [json!({"a": "/deep"}), json!({"a": "relative"})]);
}

#[test]
fn conditions_over_one_parameter_agree_with_each_other_and_its_allowed_values() {
    let sections = format!(
        "{PARAMETERS}\nConditions:\n  Dev: !Equals [!Ref Env, dev]\n  Test: !Equals [test, !Ref Env]\n  \
         Prod: !Equals [!Ref Env, prod]\n  Other: !Equals [!Ref Env, staging]\n"
    );
    let v = variants(&sections, "a: [!If [Dev, d, '-'], !If [Test, t, '-'], !If [Prod, p, '-'], !If [Other, o, '-']]");
    // Exactly one of the three allowed values, never two at once, never staging.
    assert_eq!(
        v,
        [json!({"a": ["d", "-", "-", "-"]}), json!({"a": ["-", "t", "-", "-"]}), json!({"a": ["-", "-", "p", "-"]})]
    );
}

#[test]
fn known_parts_that_differ_decide_a_comparison() {
    let sections = format!("{PARAMETERS}\nConditions:\n  C: !Equals [!Sub 'a-${{Dir}}', b-x]\n");
    assert_eq!(variants(&sections, "a: !If [C, same, other]"), [json!({"a": "other"})]);
}

#[test]
fn a_resource_condition_over_an_unknown_is_checked_when_it_may_hold() {
    let text = "Parameters:\n  Dir: {Type: String}\nConditions:\n  C: !Equals [!Ref Dir, x]\n\
                Resources:\n  R: {Type: X, Condition: C, Metadata: {a: !Ref Dir}}\n";
    let checked = Template::parse("t.yaml", text).unwrap().metadata_for_checks("R", &Inputs::default()).unwrap();
    assert_eq!(checked.variants, [json!({"a": marker("Dir")})]);
}

#[test]
fn a_resource_under_a_false_condition_is_checked_as_when_created() {
    // Issue 30: a launch configuration created only for some parameters is ordinary.
    let text = "Parameters:\n  Env: {Type: String, Default: dev}\nConditions:\n  Prod: !Equals [!Ref Env, prod]\n\
                Resources:\n  R: {Type: X, Condition: Prod, Metadata: {a: !Ref Env}}\n  \
                S: {Type: X, Condition: Missing, Metadata: {}}\n";
    let template = Template::parse("t.yaml", text).unwrap();
    assert_eq!(template.metadata_for_checks("R", &Inputs::default()).unwrap().variants, [json!({"a": "dev"})]);
    let e = template.metadata_for_checks("S", &Inputs::default()).unwrap_err();
    assert!(e.message.contains("there is no condition named Missing"), "{e}");
    // What a stack would get stays what CloudFormation does: no such resource.
    assert!(template.metadata("R", &Inputs::default()).is_err());
}

#[test]
fn an_unknown_function_is_an_unknown_value_to_the_checks() {
    let v = variants(
        "",
        "a: !Length [1, 2]\nb: {'Fn::Transform': {Name: 'AWS::Include', Parameters: {Location: s3://b/k}}}",
    );
    assert_eq!(v, [json!({"a": marker("Fn::Length"), "b": marker("Fn::Transform")})]);
    let text = "Resources:\n  R: {Type: X, Metadata: {a: !Length [1]}}\n";
    let e = Template::parse("t.yaml", text).unwrap().metadata("R", &Inputs::default()).unwrap_err();
    assert!(e.message.contains("Fn::Length is not supported"), "{e}");
}

#[test]
fn combinations_are_bounded() {
    let mut sections = String::from("Parameters:\n");
    let mut conditions = String::from("Conditions:\n");
    let mut metadata = String::new();
    for i in 0..8 {
        sections.push_str(&format!("  P{i}: {{Type: String}}\n"));
        conditions.push_str(&format!("  C{i}: !Equals [!Ref P{i}, x]\n"));
        metadata.push_str(&format!("a{i}: !If [C{i}, y, n]\n"));
    }
    let checked = check_with(&format!("{sections}{conditions}"), &metadata, &Inputs::default()).unwrap();
    assert!(!checked.complete);
    assert_eq!(checked.variants.len(), MAX_VARIANTS);
}

#[test]
fn parameters_compared_with_each_other_agree_with_their_values() {
    let sections = "Parameters:\n  A: {Type: String, AllowedValues: [a, b]}\n  T: {Type: String}\n\
        Conditions:\n  TisC: !Equals [!Ref T, c]\n  Same: !Equals [!Ref A, !Ref T]\n";
    // Whichever is asked first, T = c and A = T never hold together (A is a or b).
    for metadata in ["x: !If [TisC, !If [Same, both, one], other]", "x: !If [Same, !If [TisC, both, one], other]"] {
        let values: Vec<Value> = variants(sections, metadata).into_iter().map(|v| v["x"].clone()).collect();
        assert!(!values.contains(&json!("both")), "{metadata}: {values:?}");
        assert!(values.contains(&json!("one")) && values.contains(&json!("other")), "{metadata}: {values:?}");
    }
}
