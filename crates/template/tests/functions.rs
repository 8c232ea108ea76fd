//! Each intrinsic function, resolved through the public API as `render` calls it.

use cfn_template::{ErrorKind, Inputs, Missing, Template};
use serde_json::{Value, json};

/// The Metadata of `R` in a YAML template made of `sections` and R's `metadata`.
fn render_with(sections: &str, metadata: &str, inputs: &Inputs) -> Result<Value, cfn_template::Error> {
    let text = format!(
        "{sections}\nResources:\n  R:\n    Type: AWS::EC2::Instance\n    Metadata:\n{}\n  Db:\n    Type: AWS::RDS::DBInstance\n",
        metadata.lines().map(|l| format!("      {l}")).collect::<Vec<_>>().join("\n")
    );
    Template::parse("t.yaml", &text).unwrap_or_else(|e| panic!("{e}\n{text}")).metadata("R", inputs)
}

fn render(sections: &str, metadata: &str) -> Value {
    render_with(sections, metadata, &Inputs::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn error(sections: &str, metadata: &str) -> cfn_template::Error {
    render_with(sections, metadata, &Inputs::default()).expect_err("an error")
}

const PARAMETERS: &str = "Parameters:\n  Name: {Type: String, Default: web}\n  \
    Envs: {Type: CommaDelimitedList, Default: 'dev, test,prod'}\n  Port: {Type: Number, Default: 8080}\n  \
    Password: {Type: String, NoEcho: true, Default: s3cret}";

#[test]
fn ref_gives_parameters_pseudo_parameters_and_given_resource_values() {
    let mut inputs = Inputs { region: "cn-north-1".into(), stack_name: "site".into(), ..Inputs::default() };
    inputs.attributes.insert("Db".into(), "db-123".into());
    let v = render_with(
        PARAMETERS,
        "a: !Ref Name\nb: !Ref Envs\nc: !Ref Port\nd: !Ref Password\ne: !Ref AWS::Region\nf: !Ref AWS::StackName\n\
         g: !Ref AWS::Partition\nh: !Ref AWS::URLSuffix\ni: !Ref AWS::AccountId\nj: !Ref AWS::StackId\nk: !Ref Db",
        &inputs,
    )
    .unwrap();
    assert_eq!(
        v,
        json!({"a": "web", "b": ["dev", "test", "prod"], "c": "8080", "d": "s3cret", "e": "cn-north-1", "f": "site",
               "g": "aws-cn", "h": "amazonaws.com.cn", "i": "123456789012",
               "j": "arn:aws-cn:cloudformation:cn-north-1:123456789012:stack/site/00000000-0000-0000-0000-000000000000",
               "k": "db-123"})
    );
}

#[test]
fn no_value_removes_the_key_or_the_list_item() {
    let v = render(
        "Conditions:\n  Never: !Equals [a, b]",
        "keep: 1\ngone: !Ref AWS::NoValue\nlist: [a, !If [Never, b, !Ref AWS::NoValue], c]\nif: !If [Never, x, !Ref AWS::NoValue]",
    );
    assert_eq!(v, json!({"keep": 1, "list": ["a", "c"]}));
}

#[test]
fn sub_string_form_with_parameters_pseudo_parameters_attributes_and_literals() {
    let mut inputs = Inputs::default();
    inputs.attributes.insert("Db.Endpoint.Address".into(), "db.example".into());
    let v = render_with(
        PARAMETERS,
        "a: !Sub 'http://${Db.Endpoint.Address}:${Port}/${Name}/${AWS::Region} ${!Literal} ${!Db.Arn} $${Name}'",
        &inputs,
    )
    .unwrap();
    assert_eq!(v, json!({"a": "http://db.example:8080/web/us-east-1 ${Literal} ${Db.Arn} $web"}));
}

#[test]
fn sub_list_form_variables_take_precedence_and_may_be_functions() {
    let v = render(
        PARAMETERS,
        "a: !Sub\n  - '${Name}-${Host}-${AWS::StackName}-${!Host}'\n  - Name: given\n    Host: !Join ['.', [a, b]]",
    );
    assert_eq!(v, json!({"a": "given-a.b-stack-${Host}"}));
}

#[test]
fn sub_cannot_insert_a_list() {
    let e = error(PARAMETERS, "a: !Sub '${Envs}'");
    assert!(e.message.contains("${Envs} is a list"), "{e}");
}

#[test]
fn join_select_split() {
    let v = render(
        PARAMETERS,
        "a: !Join [', ', !Ref Envs]\nb: !Select [1, !Ref Envs]\nc: !Select ['2', !Split ['/', 'x/y/z']]\n\
         d: !Split [',', 'a,,b']\ne: !Join ['', []]",
    );
    assert_eq!(v, json!({"a": "dev, test, prod", "b": "test", "c": "z", "d": ["a", "", "b"], "e": ""}));
    assert!(error(PARAMETERS, "a: !Select [3, !Ref Envs]").message.contains("out of the list's 3 items"));
    assert!(error("", "a: !Join ['', [a, 1]]").message.contains("joins strings, not a number"));
}

#[test]
fn conditions_equals_and_or_not_and_condition() {
    let conditions = "Parameters:\n  Env: {Type: String, Default: prod}\n  Count: {Type: Number, Default: 1}\n\
        Conditions:\n  Prod: !Equals [!Ref Env, prod]\n  One: !Equals [!Ref Count, 1]\n  \
        Both: !And [!Condition Prod, !Condition One]\n  Either: !Or [!Not [!Condition Prod], !Equals [a, b]]\n  \
        Nested: !Not [!Or [!Condition Either, !Condition Both]]";
    let v = render(
        conditions,
        "prod: !If [Prod, yes, no]\none: !If [One, yes, no]\nboth: !If [Both, yes, no]\n\
         either: !If [Either, yes, no]\nnested: !If [Nested, yes, no]",
    );
    assert_eq!(v, json!({"prod": true, "one": true, "both": true, "either": false, "nested": false}));
}

#[test]
fn a_condition_cycle_and_an_unknown_condition_are_errors() {
    let e = error("Conditions:\n  A: !Condition B\n  B: !Not [!Condition A]", "a: !If [A, x, y]");
    assert!(e.message.contains("depends on itself"), "{e}");
    let chain: String = (0..100).map(|i| format!("\n  C{i}: !Not [!Condition C{}]", i + 1)).collect();
    let e = error(&format!("Conditions:{chain}\n  C100: !Equals [a, a]"), "a: !If [C0, x, y]");
    assert!(e.message.contains("more than 64 deep"), "{e}");
    let e = error("", "a: !If [Missing, x, y]");
    assert!(e.message.contains("no condition named Missing"), "{e}");
}

#[test]
fn the_unchosen_branch_of_if_is_not_resolved() {
    // Db's Ref has no value given; the branch that would need it is not taken.
    let v = render("Conditions:\n  Never: !Equals [a, b]", "a: !If [Never, !Ref Db, fallback]");
    assert_eq!(v, json!({"a": "fallback"}));
}

#[test]
fn find_in_map_with_keys_from_functions() {
    let mappings = "Mappings:\n  Arch:\n    us-east-1: {HVM64: ami-1, List: [a, b]}\n";
    let v = render(mappings, "a: !FindInMap [Arch, !Ref AWS::Region, HVM64]\nb: !FindInMap [Arch, us-east-1, List]");
    assert_eq!(v, json!({"a": "ami-1", "b": ["a", "b"]}));
    let e = error(mappings, "a: !FindInMap [Arch, eu-west-1, HVM64]");
    assert!(e.message.contains("the mapping Arch has no key eu-west-1"), "{e}");
}

#[test]
fn base64_get_azs_import_value_and_cidr() {
    let mut inputs = Inputs { region: "eu-west-1".into(), ..Inputs::default() };
    inputs.exports.insert("net-VpcId".into(), "vpc-1".into());
    let v = render_with(
        "",
        "a: !Base64 'hello ${x}'\nb: !GetAZs ''\nc: !GetAZs us-west-2\nd: !ImportValue net-VpcId\n\
         e: !Cidr [10.0.0.0/16, 2, 8]\nf: !Select [0, !GetAZs {Ref: 'AWS::Region'}]",
        &inputs,
    )
    .unwrap();
    assert_eq!(
        v,
        json!({"a": "aGVsbG8gJHt4fQ==", "b": ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
               "c": ["us-west-2a", "us-west-2b", "us-west-2c"], "d": "vpc-1",
               "e": ["10.0.0.0/24", "10.0.1.0/24"], "f": "eu-west-1a"})
    );
    inputs.availability_zones = Some(vec!["eu-west-1b".into()]);
    assert_eq!(render_with("", "b: !GetAZs ''", &inputs).unwrap(), json!({"b": ["eu-west-1b"]}));
}

#[test]
fn get_att_both_forms() {
    let mut inputs = Inputs::default();
    inputs.attributes.insert("Db.Endpoint.Port".into(), "5432".into());
    let v = render_with(
        "",
        "a: !GetAtt Db.Endpoint.Port\nb: {'Fn::GetAtt': [Db, Endpoint.Port]}\nc: !GetAtt [Db, !Sub 'Endpoint.Port']",
        &inputs,
    )
    .unwrap();
    assert_eq!(v, json!({"a": "5432", "b": "5432", "c": "5432"}));
}

#[test]
fn missing_values_are_errors_naming_the_expression_and_where_it_is() {
    let e = error("", "files:\n  /etc/app.conf:\n    content: !Sub 'db=${Db.Endpoint.Address}'");
    assert_eq!(e.kind, ErrorKind::Missing(Missing::Attribute("Db.Endpoint.Address".into())));
    assert_eq!(
        e.to_string(),
        "t.yaml:8:20: R (/Resources/R/Metadata/files/~1etc~1app.conf/content): \
         no value given for the attribute Db.Endpoint.Address in {\"Fn::Sub\":\"db=${Db.Endpoint.Address}\"}"
    );
    let e = error("", "a: !Ref Db");
    assert_eq!(e.kind, ErrorKind::Missing(Missing::Attribute("Db".into())));
    let e = error("", "a: !ImportValue shared-Vpc");
    assert_eq!(e.kind, ErrorKind::Missing(Missing::Export("shared-Vpc".into())));
    let e = error("", "a: !Ref Nothing");
    assert!(e.message.contains("Nothing is not a parameter"), "{e}");
    let e = error("", "a: !GetAtt Nothing.Arn");
    assert!(e.message.contains("not a resource of the template"), "{e}");
    let e = error("", "a: {'Fn::Length': [1]}");
    assert!(e.message.contains("Fn::Length is not supported"), "{e}");
    let e = error("", "a: !Equals [a, a]");
    assert!(e.message.contains("condition function"), "{e}");
}

#[test]
fn json_errors_have_positions_too() {
    let text = r#"{
  "Resources": {
    "R": {
      "Type": "AWS::EC2::Instance",
      "Metadata": {"a": {"Fn::GetAtt": ["Db", "Arn"]}}
    },
    "Db": {"Type": "AWS::RDS::DBInstance"}
  }
}"#;
    let e = Template::parse("t.json", text).unwrap().metadata("R", &Inputs::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.json:5:25: R (/Resources/R/Metadata/a): no value given for the attribute Db.Arn in {\"Fn::GetAtt\":[\"Db\",\"Arn\"]}"
    );
    let e = Template::parse("bad.json", "{\n  \"Resources\": [\n}").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert!(e.to_string().starts_with("bad.json:3:1: not JSON"), "{e}");
}

#[test]
fn resources_conditions_and_shapes() {
    let text = "Conditions:\n  Never: !Equals [a, b]\nResources:\n  A:\n    Type: T\n    Metadata:\n      \
        AWS::CloudFormation::Init: {config: {}}\n  B:\n    Type: T\n    Condition: Never\n    Metadata: {x: 1}\n  \
        C:\n    Type: T\n";
    let template = Template::parse("t.yaml", text).unwrap();
    assert_eq!(template.resources_with_init(), ["A"]);
    let e = template.metadata("B", &Inputs::default()).unwrap_err();
    assert!(e.message.contains("its condition Never is false"), "{e}");
    let e = template.metadata("C", &Inputs::default()).unwrap_err();
    assert!(e.message.contains("has no Metadata"), "{e}");
    let e = template.metadata("D", &Inputs::default()).unwrap_err();
    assert!(e.message.contains("no resource named D in the template (its resources: A, B, C)"), "{e}");
    assert!(Template::parse("t.yaml", "Resources: {}\n").unwrap_err().message.contains("At least one Resources"));
    assert!(Template::parse("t.yaml", "- a\n").is_err());
}
