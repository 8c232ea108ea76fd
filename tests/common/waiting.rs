//! Stacks that wait for a signal (a CreationPolicy, a WaitCondition on a handle) and
//! what the emulator received for them: the signal journal, the requests, the stack's
//! status and outputs.

use super::{ACCESS_KEY, Emulator, SECRET_KEY};
use serde_json::{Value, json};

const INSTANCE_PROPERTIES: &str = r#"{"ImageId": "ami-12345678", "InstanceType": "t3.micro"}"#;

/// An instance that keeps its stack in CREATE_IN_PROGRESS until it is signalled once.
pub fn creation_policy_template() -> Value {
    json!({"Resources": {"Instance": {
        "Type": "AWS::EC2::Instance",
        "CreationPolicy": {"ResourceSignal": {"Count": 1, "Timeout": "PT30M"}},
        "Properties": serde_json::from_str::<Value>(INSTANCE_PROPERTIES).unwrap()
    }}})
}

/// A WaitCondition on a handle, with the handle URL and the condition's data as outputs.
pub fn wait_condition_template() -> Value {
    json!({
        "Resources": {
            "Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"},
            "Wait": {"Type": "AWS::CloudFormation::WaitCondition",
                     "Properties": {"Handle": {"Ref": "Handle"}, "Timeout": "1800", "Count": "1"}}
        },
        "Outputs": {
            "HandleUrl": {"Value": {"Ref": "Handle"}},
            "Data": {"Value": {"Fn::GetAtt": ["Wait", "Data"]}}
        }
    })
}

/// CreateStack with an XML answer, as boto3 gets it. The emulator starts holding a
/// stack for its CreationPolicy and WaitCondition resources only when it finds the new
/// stack's id in an XML answer; `Emulator::create_stack` asks for JSON, which would
/// leave every stack CREATE_COMPLETE at once.
pub fn create_waiting_stack(emulator: &Emulator, name: &str, template: &Value) -> String {
    use cfn_aws::sigv4;
    let query: Vec<(String, String)> = [
        ("Action", "CreateStack".to_string()),
        ("StackName", name.to_string()),
        ("TemplateBody", template.to_string()),
        ("Version", "2010-05-15".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let host = emulator.url.trim_start_matches("http://");
    let request = sigv4::Request { method: "GET", host, path: "/", query: &query, headers: &[], payload: b"" };
    let signed = sigv4::sign(
        &request,
        &cfn_aws::Credentials::new(ACCESS_KEY, SECRET_KEY, None),
        &sigv4::Scope { region: "us-east-1", service: "cloudformation" },
        chrono::Utc::now(),
    );
    let mut call = ureq::get(&format!("{}/?{}", emulator.url, sigv4::canonical_query(&query)));
    for (header, value) in signed {
        call = call.header(header, value);
    }
    let mut answer = call.call().unwrap_or_else(|e| panic!("CreateStack {name}: {e}"));
    let text = answer.body_mut().read_to_string().unwrap();
    assert!(text.contains("<StackId>"), "CreateStack {name}: {text}");
    assert_eq!(stack_status(emulator, name), "CREATE_IN_PROGRESS", "the emulator does not hold {name}");
    name.to_string()
}

pub fn describe_stack(emulator: &Emulator, stack: &str) -> Value {
    let answer = emulator.call("DescribeStacks", &[("StackName", stack)]).unwrap();
    answer
        .pointer("/DescribeStacksResponse/DescribeStacksResult/Stacks/0")
        .cloned()
        .unwrap_or_else(|| panic!("no stack in {answer}"))
}

pub fn stack_status(emulator: &Emulator, stack: &str) -> String {
    describe_stack(emulator, stack)["StackStatus"].as_str().unwrap().to_string()
}

pub fn output(emulator: &Emulator, stack: &str, key: &str) -> String {
    let description = describe_stack(emulator, stack);
    let outputs = description["Outputs"].as_array().unwrap_or_else(|| panic!("no outputs: {description}"));
    let found = outputs.iter().find(|o| o["OutputKey"] == key).unwrap_or_else(|| panic!("no {key}: {description}"));
    found["OutputValue"].as_str().unwrap().to_string()
}

/// The emulator's journal of signals for one stack (both kinds).
pub fn signals_for(emulator: &Emulator, stack: &str) -> Vec<Value> {
    let all = emulator.get_json("/_emu/signals");
    all.as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["StackName"] == stack || s["StackId"].as_str().is_some_and(|id| id.contains(&format!("/{stack}/")))
        })
        .cloned()
        .collect()
}

pub fn signal_requests(emulator: &Emulator, stack: &str) -> Vec<Value> {
    emulator.requests_for(stack).into_iter().filter(|r| r["action"] == "SignalResource").collect()
}

/// The journaled PUTs to one handle URL (the path identifies the handle).
pub fn handle_puts(emulator: &Emulator, url: &str) -> Vec<Value> {
    let path = url.split_once("/_waitcondition/").map(|(_, rest)| rest.split('?').next().unwrap()).unwrap();
    let all = emulator.get_json("/_emu/requests?kind=waitcondition");
    all.as_array().unwrap().iter().filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with(path))).cloned().collect()
}
