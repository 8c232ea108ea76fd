//! Change detection for one hook (HUP-DET-01, HUP-ACT-01): the value a path resolves to
//! in a `StackResourceDetail`, the trigger decision, and the action's environment.

use crate::config::Hook;
use crate::path::Target;
use crate::state::StateValue;
use cfn_aws::StackResourceDetail;
use serde_json::Value;

/// What to do about one hook in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// `post.add`: there was no value and now there is.
    Add,
    /// `post.remove`: there was a value and now there is none.
    Remove,
    /// `post.update`: both present and different (deep equality).
    Update,
    /// The action for this hook started in an earlier pass and never ended (cfn-hup was
    /// stopped, killed or crashed while it ran): it runs again for the current value.
    Rerun,
    /// Nothing to run: the new value is recorded.
    NoChange,
}

impl Decision {
    /// The reference's INFO line announcing the action.
    pub fn reason(&self, hook: &Hook) -> Option<String> {
        match self {
            Decision::Add => Some(format!("Previous state not found; action for {} will be run", hook.name)),
            Decision::Remove => {
                Some(format!("Path {} was removed; action for {} will be run", hook.path.text, hook.name))
            }
            Decision::Update => {
                Some(format!("Data has changed from previous state; action for {} will be run", hook.name))
            }
            Decision::Rerun => {
                Some(format!("The action for {} was cut short in an earlier pass; it will be run again", hook.name))
            }
            Decision::NoChange => None,
        }
    }
}

/// [`decide`] for a hook whose action was cut short: with no change to act on, the
/// action runs again when a trigger still applies to the current value (an update or an
/// add while there is a value, a remove while there is none).
pub fn decide_after_interruption(hook: &Hook, old: Option<&StateValue>, new: Option<&StateValue>) -> Decision {
    match decide(hook, old, new) {
        Decision::NoChange => {
            let applies = if StateValue::is_present(new) {
                hook.has_trigger("post.update") || hook.has_trigger("post.add")
            } else {
                hook.has_trigger("post.remove")
            };
            if applies { Decision::Rerun } else { Decision::NoChange }
        }
        decision => decision,
    }
}

/// The reference's rules, first match wins. "Present" is anything but missing or `null`
/// (BUG-FALSY fixed: `""`, `0`, `false`, `{}`, `[]` are values).
pub fn decide(hook: &Hook, old: Option<&StateValue>, new: Option<&StateValue>) -> Decision {
    let (had, has) = (StateValue::is_present(old), StateValue::is_present(new));
    if hook.has_trigger("post.add") && !had && has {
        Decision::Add
    } else if hook.has_trigger("post.remove") && had && !has {
        Decision::Remove
    } else if hook.has_trigger("post.update") && had && has && old != new {
        Decision::Update
    } else {
        Decision::NoChange
    }
}

/// The value the hook's path has in `detail` (SPEC §14.5 step 4).
pub fn resolve(hook: &Hook, detail: &StackResourceDetail, stack: &str) -> Option<StateValue> {
    match &hook.path.target {
        Target::Metadata(sub) => {
            let Some(metadata) = &detail.metadata else {
                tracing::warn!("No metadata for {} in {stack}", hook.path.logical_id);
                return None;
            };
            metadata_value(metadata, sub.as_deref())
        }
        _ if detail.resource_status == "DELETE_COMPLETE" => None,
        Target::PhysicalResourceId => detail.physical_resource_id.clone().map(|id| StateValue::Json(Value::String(id))),
        Target::LastUpdated => Some(StateValue::DateTime(detail.last_updated.naive_utc())),
    }
}

/// The value at a metadata sub-path (the whole metadata without one).
pub fn metadata_value(metadata: &Value, sub: Option<&str>) -> Option<StateValue> {
    match sub {
        None => Some(StateValue::Json(metadata.clone())),
        Some(sub) => lookup(metadata, sub).map(|v| StateValue::Json(v.clone())),
    }
}

/// `cfn_metadata::keypath::lookup`, logging which component was missing as the
/// reference does (`No value at path a.b (missing index: a)`).
fn lookup<'a>(root: &'a Value, sub: &str) -> Option<&'a Value> {
    let mut value = root;
    for key in cfn_metadata::keypath::split(sub) {
        let next = match value {
            Value::Object(map) => map.get(key.as_str()),
            Value::Array(items) if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) => {
                key.parse::<usize>().ok().and_then(|i| items.get(i))
            }
            _ => None,
        };
        match next {
            Some(v) => value = v,
            None => {
                tracing::debug!("No value at path {sub} (missing index: {key})");
                return None;
            }
        }
    }
    Some(value)
}

/// `CFN_OLD_<KEY>` (when there was a value) and `CFN_NEW_<KEY>` (when there is one).
pub fn action_env(hook: &Hook, old: Option<&StateValue>, new: Option<&StateValue>) -> Vec<(String, String)> {
    let key = hook.path.env_key();
    let mut vars = Vec::new();
    if let Some(old) = old.filter(|v| StateValue::is_present(Some(v))) {
        vars.push((format!("CFN_OLD_{key}"), old.env_text()));
    }
    if let Some(new) = new.filter(|v| StateValue::is_present(Some(v))) {
        vars.push((format!("CFN_NEW_{key}"), new.env_text()));
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::HookPath;
    use chrono::{DateTime, Utc};
    use serde_json::json;

    fn hook(triggers: &str, path: &str) -> Hook {
        Hook {
            name: "h".into(),
            triggers: triggers.split(',').map(String::from).collect(),
            path: HookPath::parse(path).unwrap(),
            action: "true".into(),
            runas: None,
        }
    }

    fn j(v: Value) -> Option<StateValue> {
        Some(StateValue::Json(v))
    }

    #[test]
    fn trigger_rules_first_match_wins() {
        use Decision::*;
        let all = hook("post.add,post.update,post.remove", "Resources.A.Metadata");
        let cases: &[(&Hook, Option<StateValue>, Option<StateValue>, Decision)] = &[
            (&all, None, j(json!("x")), Add),
            (&all, j(Value::Null), j(json!("x")), Add),
            (&all, j(json!("x")), None, Remove),
            (&all, j(json!("x")), j(Value::Null), Remove),
            (&all, j(json!({"a": 1})), j(json!({"a": 2})), Update),
            (&all, j(json!({"a": 1, "b": 2})), j(json!({"b": 2, "a": 1})), NoChange),
            (&all, None, None, NoChange),
            // BUG-FALSY fixed: falsy values are values.
            (&all, None, j(json!("")), Add),
            (&all, j(json!(0)), j(json!(5)), Update),
            (&all, j(json!(false)), None, Remove),
        ];
        for (h, old, new, expected) in cases {
            assert_eq!(decide(h, old.as_ref(), new.as_ref()), *expected, "{old:?} -> {new:?}");
        }
        // First run: a post.update-only hook records a baseline; post.add fires.
        let update = hook("post.update", "Resources.A.Metadata");
        assert_eq!(decide(&update, None, j(json!("x")).as_ref()), NoChange);
        assert_eq!(decide(&update, j(json!("x")).as_ref(), None), NoChange);
        let add = hook("post.add", "Resources.A.Metadata");
        assert_eq!(decide(&add, j(json!("x")).as_ref(), j(json!("y")).as_ref()), NoChange);
        let unknown = hook("on.whatever", "Resources.A.Metadata");
        assert_eq!(decide(&unknown, None, j(json!("x")).as_ref()), NoChange);
    }

    fn detail(metadata: Option<Value>, status: &str) -> StackResourceDetail {
        StackResourceDetail {
            logical_resource_id: "A".into(),
            physical_resource_id: Some("i-1".into()),
            resource_type: "AWS::EC2::Instance".into(),
            resource_status: status.into(),
            last_updated: DateTime::<Utc>::from_timestamp(1_500_000_000, 0).unwrap(),
            metadata,
            stack_id: None,
            stack_name: None,
        }
    }

    #[test]
    fn values_by_path_kind() {
        let d = detail(Some(json!({"a": {"b": ["x", {"c": 0}]}, "k.dot": 1})), "UPDATE_COMPLETE");
        let at = |p: &str| resolve(&hook("post.add", p), &d, "s");
        assert_eq!(at("Resources.A.Metadata.a.b.1.c"), j(json!(0)));
        assert_eq!(at("Resources.A.Metadata.k\\.dot"), j(json!(1)));
        assert_eq!(at("Resources.A.Metadata.a.missing"), None);
        assert_eq!(at("Resources.A.Metadata"), j(d.metadata.clone().unwrap()));
        assert_eq!(at("Resources.A.PhysicalResourceId"), j(json!("i-1")));
        let last = at("Resources.A").unwrap();
        assert_eq!(last.env_text(), "2017-07-14T02:40:00");
        let gone = detail(Some(json!({})), "DELETE_COMPLETE");
        assert_eq!(resolve(&hook("post.add", "Resources.A.PhysicalResourceId"), &gone, "s"), None);
        assert_eq!(resolve(&hook("post.add", "Resources.A"), &gone, "s"), None);
        let bare = detail(None, "CREATE_COMPLETE");
        assert_eq!(resolve(&hook("post.add", "Resources.A.Metadata.x"), &bare, "s"), None);
    }

    #[test]
    fn environment_names_and_encodings() {
        let h = hook("post.update", "Resources.A.Metadata.x");
        let env = action_env(&h, j(json!({"Leaf": "value1"})).as_ref(), j(json!("plain")).as_ref());
        assert_eq!(
            env,
            [
                ("CFN_OLD_METADATA".to_string(), r#"{"Leaf": "value1"}"#.to_string()),
                ("CFN_NEW_METADATA".to_string(), "plain".to_string())
            ]
        );
        let h = hook("post.add", "Resources.A.PhysicalResourceId");
        assert_eq!(
            action_env(&h, None, j(json!("i-2")).as_ref()),
            [("CFN_NEW_PHYSICAL_RESOURCE_ID".into(), "i-2".into())]
        );
        let h = hook("post.remove", "Resources.A");
        assert_eq!(action_env(&h, j(json!("")).as_ref(), None), [("CFN_OLD_LAST_UPDATED".into(), String::new())]);
    }
}
