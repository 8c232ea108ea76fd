//! The instance metadata items the lifecycle watcher polls, and what one notice is.
//!
//! Spot, rebalance and maintenance hooks run once per notice. A notice is identified by
//! its content: the trigger and the item's JSON with its keys sorted (so that the same
//! notice served with its keys in another order is the same), hashed. A Spot notice
//! whose time changes, a new rebalance recommendation (a new `noticeTime`), a new or
//! changed maintenance event is a new notice; the same one seen again after a restart
//! is not. Each maintenance event of the list is a notice of its own; events that are
//! `completed` or `canceled` are not notices.

use super::Trigger;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub const TARGET_LIFECYCLE_STATE: &str = "/latest/meta-data/autoscaling/target-lifecycle-state";
pub const SPOT_INSTANCE_ACTION: &str = "/latest/meta-data/spot/instance-action";
pub const REBALANCE: &str = "/latest/meta-data/events/recommendations/rebalance";
pub const MAINTENANCE: &str = "/latest/meta-data/events/maintenance/scheduled";
pub const GROUP_TAG: &str = "/latest/meta-data/tags/instance/aws:autoscaling:groupName";

/// The most an item may be: AWS's are a few hundred bytes (a maintenance list a few
/// KiB); a larger answer is not one of them and is refused whole.
pub const BODY_LIMIT: usize = 64 * 1024;

/// One notice to run hooks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub trigger: Trigger,
    /// Hex SHA-256 of the trigger and the canonical JSON.
    pub id: String,
    /// The item's JSON (one maintenance event for `on.maintenance`): `CFN_EVENT`.
    pub json: String,
    /// When the notice says it happens (`CFN_EVENT_TIME`).
    pub time: Option<String>,
    /// The same in RFC 3339 when it can be read as a time (`CFN_LIFECYCLE_DEADLINE`,
    /// for a Spot interruption and a maintenance event's start).
    pub deadline: Option<String>,
}

/// The JSON with every object's keys sorted, compact.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// The identity of a notice of `trigger` with content `value`.
pub fn identity(trigger: Trigger, value: &Value) -> String {
    let mut hash = Sha256::new();
    hash.update(trigger.name().as_bytes());
    hash.update([0]);
    hash.update(canonical(value).as_bytes());
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn notice(trigger: Trigger, value: &Value, time_key: &str) -> Notice {
    let time = value.get(time_key).and_then(Value::as_str).map(str::to_string);
    let deadline = match trigger {
        Trigger::Rebalance => None,
        _ => time.as_deref().and_then(rfc3339),
    };
    Notice { trigger, id: identity(trigger, value), json: canonical(value), time, deadline }
}

/// A time as IMDS writes them (`2026-12-05T07:21:00Z`, or a maintenance event's
/// `21 Jan 2019 09:00:43 GMT`) in RFC 3339.
pub fn rfc3339(text: &str) -> Option<String> {
    use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
    let parsed = DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| NaiveDateTime::parse_from_str(text.trim(), "%d %b %Y %H:%M:%S GMT").ok().map(|n| n.and_utc()))?;
    Some(parsed.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// Why an item's answer is not a notice.
fn object(body: &str, what: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(format!("the {what} is not a JSON object")),
        Err(e) => Err(format!("the {what} is not JSON: {e}")),
    }
}

/// `spot/instance-action`: `{"action": "terminate|stop|hibernate", "time": "…Z"}`.
pub fn spot(body: &str) -> Result<Notice, String> {
    let value = object(body, "Spot instance action")?;
    if !value.get("action").is_some_and(Value::is_string) {
        return Err("the Spot instance action has no action".into());
    }
    Ok(notice(Trigger::SpotInterruption, &value, "time"))
}

/// `events/recommendations/rebalance`: `{"noticeTime": "…Z"}`.
pub fn rebalance(body: &str) -> Result<Notice, String> {
    let value = object(body, "rebalance recommendation")?;
    Ok(notice(Trigger::Rebalance, &value, "noticeTime"))
}

/// `events/maintenance/scheduled`: a list of events; one notice per event that is
/// neither completed nor canceled.
pub fn maintenance(body: &str) -> Result<Vec<Notice>, String> {
    let list = match serde_json::from_str::<Value>(body) {
        Ok(Value::Array(list)) => list,
        Ok(_) => return Err("the scheduled maintenance events are not a JSON list".into()),
        Err(e) => return Err(format!("the scheduled maintenance events are not JSON: {e}")),
    };
    let over = |event: &Value| {
        event.get("State").and_then(Value::as_str).is_some_and(|s| matches!(s, "completed" | "canceled"))
    };
    Ok(list
        .iter()
        .filter(|e| e.is_object() && !over(e))
        .map(|e| notice(Trigger::Maintenance, e, "NotBefore"))
        .collect())
}

/// `autoscaling/target-lifecycle-state`: one of the steady states, nothing else.
pub fn target_state(body: &str) -> Result<String, String> {
    let state = body.trim();
    let known = matches!(state, "InService" | "Terminated" | "Detached" | "Standby") || state.starts_with("Warmed:");
    if known && state.len() <= 64 && state.chars().all(|c| c.is_ascii_alphanumeric() || c == ':') {
        Ok(state.to_string())
    } else {
        Err("the target lifecycle state is not one Auto Scaling writes".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_identified_by_their_content_whatever_its_key_order() {
        let a = spot(r#"{"action": "terminate", "time": "2026-12-05T07:21:00Z"}"#).unwrap();
        let b = spot(r#"{"time":"2026-12-05T07:21:00Z","action":"terminate"}"#).unwrap();
        let later = spot(r#"{"action": "terminate", "time": "2026-12-05T07:23:00Z"}"#).unwrap();
        assert_eq!(a.id, b.id);
        assert_ne!(a.id, later.id);
        assert_eq!(
            (a.time.as_deref(), a.deadline.as_deref()),
            (Some("2026-12-05T07:21:00Z"), Some("2026-12-05T07:21:00Z"))
        );
        // The same content under another trigger is another notice.
        let value: Value = serde_json::from_str(&a.json).unwrap();
        assert_ne!(identity(Trigger::Rebalance, &value), a.id);
        let r = rebalance(r#"{"noticeTime": "2026-12-05T07:00:00Z"}"#).unwrap();
        assert_eq!((r.time.as_deref(), r.deadline), (Some("2026-12-05T07:00:00Z"), None));
    }

    #[test]
    fn maintenance_events_are_notices_of_their_own_unless_over() {
        let list = r#"[{"Code": "system-reboot", "EventId": "instance-event-1", "NotBefore": "21 Jan 2019 09:00:43 GMT", "State": "active"},
                       {"Code": "system-reboot", "EventId": "instance-event-2", "State": "completed"},
                       {"Code": "instance-stop", "EventId": "instance-event-3", "State": "canceled"}, 7]"#;
        let notices = maintenance(list).unwrap();
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].deadline.as_deref(), Some("2019-01-21T09:00:43Z"));
        assert!(maintenance("[]").unwrap().is_empty());
        assert!(maintenance("{}").is_err());
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        for body in ["", "junk", "[1]", "\"terminate\"", r#"{"time": "x"}"#] {
            assert!(spot(body).is_err(), "{body}");
        }
        assert!(rebalance("<html>").is_err());
        assert_eq!(target_state("Terminated\n").unwrap(), "Terminated");
        assert_eq!(target_state("Warmed:Running").unwrap(), "Warmed:Running");
        assert!(target_state("Pending:Wait").is_err());
        assert!(target_state("<html>").is_err());
    }
}

/// The notice identity rule: the same content is the same notice whatever the order of
/// its keys; any other content is another notice; nothing read from IMDS panics.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn fields() -> impl Strategy<Value = Vec<(String, String)>> {
        proptest::collection::btree_map("[a-zA-Z]{1,8}", "[ -~]{0,12}", 1..6)
            .prop_map(|m| m.into_iter().collect::<Vec<_>>())
    }

    fn object(fields: &[(String, String)]) -> String {
        let items: Vec<String> =
            fields.iter().map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), Value::from(v.as_str()))).collect();
        format!("{{{}}}", items.join(", "))
    }

    proptest! {
        #[test]
        fn the_order_of_keys_never_makes_another_notice(fields in fields(), seed in any::<u64>()) {
            let mut shuffled = fields.clone();
            fastrand::Rng::with_seed(seed).shuffle(&mut shuffled);
            let a = rebalance(&object(&fields)).unwrap();
            let b = rebalance(&object(&shuffled)).unwrap();
            prop_assert_eq!(&a.id, &b.id);
            prop_assert_eq!(a.json, b.json);
        }

        #[test]
        fn other_content_is_another_notice(fields in fields(), which in any::<prop::sample::Index>(), extra in "[ -~]{1,4}") {
            let mut changed = fields.clone();
            let i = which.index(changed.len());
            changed[i].1.push_str(&extra);
            prop_assert_ne!(rebalance(&object(&fields)).unwrap().id, rebalance(&object(&changed)).unwrap().id);
        }

        #[test]
        fn any_answer_is_read_without_panic(body in ".{0,200}") {
            let _ = spot(&body);
            let _ = rebalance(&body);
            let _ = maintenance(&body);
            let _ = target_state(&body);
            let _ = rfc3339(&body);
        }
    }
}
