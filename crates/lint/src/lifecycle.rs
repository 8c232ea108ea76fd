//! What an `on.asg.*` hook written by Init needs of the template (issue 32): a lifecycle
//! hook of its transition on the Auto Scaling group that launches the instance (E068),
//! a `lifecycle-hook=` the group defines (E069), an action `timeout=` within the hook's
//! global timeout (W063), and an instance role allowed to complete the lifecycle action
//! (W064).
//!
//! Only what the template states is judged. A value it cannot know (a parameter, an
//! import, a name CloudFormation generates, a managed policy of the account) is unknown,
//! and an unknown that could make a finding false means no finding.

use serde_json::{Map, Value};

pub const LAUNCHING: &str = "autoscaling:EC2_INSTANCE_LAUNCHING";
pub const TERMINATING: &str = "autoscaling:EC2_INSTANCE_TERMINATING";

/// A lifecycle hook the template defines on a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// `None`: not known (a parameter, or a name CloudFormation generates).
    pub name: Option<String>,
    pub transition: Option<String>,
    /// Seconds; `None` when not known.
    pub global_timeout: Option<u64>,
}

/// The groups that launch `resource` and what the template says of their hooks.
#[derive(Debug, Default)]
pub struct Launch {
    /// Group logical ids, each with its hooks.
    pub groups: Vec<(String, Vec<Hook>)>,
    /// Something the template cannot tell could add a group or a hook (a group whose
    /// launch configuration or template is not a resource of the template, a
    /// LifecycleHook whose group is not known).
    pub unknown: bool,
}

fn resources(template: &Value) -> impl Iterator<Item = (&String, &Map<String, Value>)> {
    template
        .get("Resources")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(n, r)| Some((n, r.as_object()?)))
}

fn type_of(resource: &Map<String, Value>) -> &str {
    resource.get("Type").and_then(Value::as_str).unwrap_or_default()
}

fn properties(resource: &Map<String, Value>) -> Option<&Map<String, Value>> {
    resource.get("Properties").and_then(Value::as_object)
}

/// The logical id a `Ref` or `Fn::GetAtt` value names.
fn names_resource(value: &Value) -> Option<&str> {
    let map = value.as_object().filter(|m| m.len() == 1)?;
    if let Some(name) = map.get("Ref").and_then(Value::as_str) {
        return Some(name);
    }
    match map.get("Fn::GetAtt")? {
        Value::Array(parts) => parts.first()?.as_str(),
        Value::String(text) => text.split('.').next(),
        _ => None,
    }
}

/// Whether a resource of the template named by `value` is `id`: `Some(false)` when it
/// names another resource or is a literal, `None` when it is something else (a
/// parameter, an import) the template cannot tell.
fn refers_to(template: &Value, value: &Value, id: &str) -> Option<bool> {
    match names_resource(value) {
        Some(name) if name == id => Some(true),
        Some(name) if template.pointer(&format!("/Resources/{}", escape(name))).is_some() => Some(false),
        _ if value.is_string() => Some(false),
        _ => None,
    }
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The launch template specification values of a group.
fn launch_specs(group: &Map<String, Value>) -> Vec<&Value> {
    let mut specs = Vec::new();
    let templates = [
        group.get("LaunchTemplate"),
        group.pointer_map("/MixedInstancesPolicy/LaunchTemplate/LaunchTemplateSpecification"),
    ];
    for spec in templates.into_iter().flatten() {
        for key in ["LaunchTemplateId", "LaunchTemplateName"] {
            if let Some(value) = spec.get(key) {
                specs.push(value);
            }
        }
    }
    if let Some(config) = group.get("LaunchConfigurationName") {
        specs.push(config);
    }
    specs
}

trait PointerMap {
    fn pointer_map(&self, pointer: &str) -> Option<&Value>;
}

impl PointerMap for Map<String, Value> {
    fn pointer_map(&self, pointer: &str) -> Option<&Value> {
        let mut parts = pointer.trim_start_matches('/').split('/');
        let first = self.get(parts.next()?)?;
        parts.try_fold(first, |value, part| value.get(part))
    }
}

/// A whole number of seconds, or `None` when the template does not say it.
fn seconds(value: Option<&Value>) -> Option<Option<u64>> {
    match value {
        None => Some(None),
        Some(Value::Number(n)) => n.as_u64().map(Some),
        Some(Value::String(s)) => s.trim().parse().ok().map(Some),
        Some(_) => None,
    }
}

fn hook_of(props: &Map<String, Value>, name: Option<&Value>) -> Hook {
    let heartbeat = seconds(props.get("HeartbeatTimeout"));
    Hook {
        name: name.and_then(Value::as_str).map(str::to_string),
        transition: props.get("LifecycleTransition").and_then(Value::as_str).map(str::to_string),
        global_timeout: heartbeat.map(|h| (100 * h.unwrap_or(3600)).min(172_800)),
    }
}

/// The groups that launch `resource` (a launch template or launch configuration).
pub fn launch(template: &Value, resource: &str) -> Launch {
    let mut found = Launch::default();
    for (id, group) in resources(template).filter(|(_, r)| type_of(r) == "AWS::AutoScaling::AutoScalingGroup") {
        let Some(props) = properties(group) else {
            found.unknown = true;
            continue;
        };
        let specs = launch_specs(props);
        let judged: Vec<Option<bool>> = specs.iter().map(|v| refers_to(template, v, resource)).collect();
        if judged.contains(&None) || specs.is_empty() {
            found.unknown = true;
        }
        if !judged.contains(&Some(true)) {
            continue;
        }
        let mut hooks = Vec::new();
        match props.get("LifecycleHookSpecificationList") {
            None => {}
            Some(Value::Array(list)) => {
                for spec in list {
                    match spec.as_object() {
                        Some(spec) => hooks.push(hook_of(spec, spec.get("LifecycleHookName"))),
                        None => found.unknown = true,
                    }
                }
            }
            Some(_) => found.unknown = true,
        }
        let literal_name = props.get("AutoScalingGroupName").and_then(Value::as_str);
        for (_, hook) in resources(template).filter(|(_, r)| type_of(r) == "AWS::AutoScaling::LifecycleHook") {
            let Some(hook_props) = properties(hook) else { continue };
            let Some(of) = hook_props.get("AutoScalingGroupName") else { continue };
            let mine = match (refers_to(template, of, id), of.as_str()) {
                (_, Some(name)) => Some(literal_name == Some(name)),
                (judged, None) => judged,
            };
            match mine {
                Some(true) => hooks.push(hook_of(hook_props, hook_props.get("LifecycleHookName"))),
                Some(false) => {}
                None => found.unknown = true,
            }
        }
        found.groups.push((id.clone(), hooks));
    }
    found
}

/// The IAM actions that allow completing a lifecycle action.
fn allows(pattern: &str) -> bool {
    glob(&pattern.to_ascii_lowercase(), "autoscaling:completelifecycleaction")
}

fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern.len() == text.len() && pattern.chars().zip(text.chars()).all(|(p, t)| p == '?' || p == t),
        Some((head, rest)) => {
            head.len() <= text.len()
                && glob(head, &text[..head.len()])
                && (head.len()..=text.len()).any(|i| glob(rest, &text[i..]))
        }
    }
}

/// Whether a policy document allows completing: `None` when it cannot be told.
fn document_allows(document: &Value) -> Option<bool> {
    let statements = match document.get("Statement")? {
        Value::Array(list) => list.iter().collect::<Vec<_>>(),
        single @ Value::Object(_) => vec![single],
        _ => return None,
    };
    let mut unknown = false;
    for statement in statements {
        let Some(statement) = statement.as_object() else {
            unknown = true;
            continue;
        };
        match statement.get("Effect").and_then(Value::as_str) {
            Some("Allow") => {}
            Some(_) => continue,
            None => {
                unknown = true;
                continue;
            }
        }
        if statement.contains_key("NotAction") {
            unknown = true;
            continue;
        }
        let actions: Vec<&Value> = match statement.get("Action") {
            Some(Value::Array(list)) => list.iter().collect(),
            Some(other) => vec![other],
            None => continue,
        };
        for action in actions {
            match action.as_str() {
                Some(text) if allows(text) => return Some(true),
                Some(_) => {}
                None => unknown = true,
            }
        }
    }
    (!unknown).then_some(false)
}

/// Whether the instance role of `resource` (a launch template or configuration) lacks
/// autoscaling:CompleteLifecycleAction: `Some(role)` only when the template tells it
/// all (the profile, its roles and every policy attached to them).
pub fn role_lacking_completion(template: &Value, resource: &str) -> Option<String> {
    let launcher = template.pointer(&format!("/Resources/{}", escape(resource)))?.as_object()?;
    let props = properties(launcher)?;
    let profile = match type_of(launcher) {
        "AWS::EC2::LaunchTemplate" => {
            let spec = props.get("LaunchTemplateData")?.get("IamInstanceProfile")?;
            names_resource(spec.get("Arn").or_else(|| spec.get("Name"))?)?
        }
        "AWS::AutoScaling::LaunchConfiguration" => names_resource(props.get("IamInstanceProfile")?)?,
        _ => return None,
    };
    let profile = template.pointer(&format!("/Resources/{}", escape(profile)))?.as_object()?;
    if type_of(profile) != "AWS::IAM::InstanceProfile" {
        return None;
    }
    let roles = properties(profile)?.get("Roles")?.as_array()?;
    let mut names = Vec::new();
    for role in roles {
        let name = names_resource(role)?;
        let resource = template.pointer(&format!("/Resources/{}", escape(name)))?.as_object()?;
        if type_of(resource) != "AWS::IAM::Role" {
            return None;
        }
        names.push((name, resource));
    }
    // A list the template gives whole, or `None` when a function gives it.
    let list = |props: Option<&Map<String, Value>>, key: &str| -> Option<Vec<Value>> {
        match props.and_then(|p| p.get(key)) {
            None => Some(Vec::new()),
            Some(Value::Array(items)) => Some(items.clone()),
            Some(_) => None,
        }
    };
    for (name, role) in &names {
        let role_props = properties(role);
        for policy in list(role_props, "Policies")? {
            if document_allows(policy.get("PolicyDocument")?)? {
                return None;
            }
        }
        for arn in &list(role_props, "ManagedPolicyArns")? {
            // A managed policy of the template is read; any other may allow anything.
            let managed = names_resource(arn)
                .and_then(|n| template.pointer(&format!("/Resources/{}", escape(n))))
                .and_then(Value::as_object)
                .filter(|r| type_of(r) == "AWS::IAM::ManagedPolicy")?;
            if document_allows(properties(managed)?.get("PolicyDocument")?)? {
                return None;
            }
        }
        for (_, policy) in
            resources(template).filter(|(_, r)| matches!(type_of(r), "AWS::IAM::Policy" | "AWS::IAM::ManagedPolicy"))
        {
            let policy_props = properties(policy)?;
            let Some(attached) = policy_props.get("Roles") else { continue };
            let attached = attached.as_array()?;
            let mut mine = false;
            for role in attached {
                match (names_resource(role), role.as_str()) {
                    (Some(n), _) if n == *name => mine = true,
                    (Some(_), _) => {}
                    // A role named by its name: this one's name may be it.
                    _ => return None,
                }
            }
            if mine && document_allows(policy_props.get("PolicyDocument")?)? {
                return None;
            }
        }
    }
    names.first().map(|(name, _)| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iam_actions_match_as_iam_matches_them() {
        for yes in [
            "autoscaling:CompleteLifecycleAction",
            "autoscaling:*",
            "*",
            "AutoScaling:Complete*",
            "autoscaling:?ompleteLifecycleAction",
        ] {
            assert!(allows(yes), "{yes}");
        }
        for no in ["autoscaling:Describe*", "ec2:*", "autoscaling:CompleteLifecycle", "s3:*Complete*"] {
            assert!(!allows(no), "{no}");
        }
    }
}
