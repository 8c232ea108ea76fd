//! The messages of CloudFormation's command feature that the hook helpers send
//! (SPEC §15): a command's result, put on the dispatcher's SQS queue by
//! cfn-send-cmd-result (CMDT-02), and a progress event, PUT to the command's presigned
//! event handle by cfn-send-cmd-event (CMDT-03). Bodies are JSON written as Python's
//! `json.dumps` writes them, keys in the reference's order.

use cfn_aws::http::{self, HttpClient};
use cfn_aws::presigned::{self, PutError};
use cfn_aws::retry::Policy;
use cfn_python::json as pyjson;
use serde_json::{Map, Value};

/// Who a message is about: the ids every command message carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandIds {
    pub dispatcher_id: String,
    pub command_name: String,
    pub listener_id: String,
    pub invocation_id: String,
}

impl CommandIds {
    fn into_document(self) -> Map<String, Value> {
        let mut document = Map::new();
        document.insert("DispatcherId".into(), self.dispatcher_id.into());
        document.insert("CommandName".into(), self.command_name.into());
        document.insert("ListenerId".into(), self.listener_id.into());
        document.insert("InvocationId".into(), self.invocation_id.into());
        document
    }
}

/// A command's outcome (CMDT-02): on success the text goes to `Data`, on failure to
/// `Message`, and the other field is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandResult {
    pub ids: CommandIds,
    pub success: bool,
    pub text: String,
}

impl CommandResult {
    /// `-e/--exit-code` decides when given (success iff 0), else `-s/--success`.
    pub fn succeeded(exit_code: Option<i64>, success: Option<&str>) -> bool {
        match exit_code {
            Some(code) => code == 0,
            None => success.is_none_or(|s| s == "true"),
        }
    }

    /// `{Status, DispatcherId, CommandName, ListenerId, InvocationId, Message, Data}`: the
    /// order the reference's `json.dumps` wrote (tests/golden/cmd-hooks, `action-reports`).
    pub fn body(&self) -> String {
        let (data, message) = if self.success { (self.text.as_str(), "") } else { ("", self.text.as_str()) };
        let mut document = Map::new();
        document.insert("Status".into(), if self.success { "SUCCESS" } else { "FAILURE" }.into());
        document.extend(self.ids.clone().into_document());
        document.insert("Message".into(), message.into());
        document.insert("Data".into(), data.into());
        pyjson::to_compact(&Value::Object(document))
    }
}

/// A progress event of a running command (CMDT-03).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEvent {
    pub ids: CommandIds,
    pub event_id: String,
    pub timestamp: String,
    pub message: String,
}

impl CommandEvent {
    /// `{EventId, DispatcherId, CommandName, ListenerId, InvocationId, EventTimestamp,
    /// Message}`: the order the reference's `json.dumps` wrote (tests/golden/cmd-hooks,
    /// `action-sends-event`).
    pub fn body(&self) -> String {
        let mut document = Map::new();
        document.insert("EventId".into(), self.event_id.clone().into());
        document.extend(self.ids.clone().into_document());
        document.insert("EventTimestamp".into(), self.timestamp.clone().into());
        document.insert("Message".into(), self.message.clone().into());
        pyjson::to_compact(&Value::Object(document))
    }
}

/// A random (version 4) UUID, the default event id.
pub fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    fastrand::fill(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// The default event timestamp: UTC now, ISO 8601 without a zone, with microseconds.
pub fn utc_timestamp(now: chrono::DateTime<chrono::Utc>) -> String {
    now.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// PUTs `event` to the handle `url` with the generic HTTP retry rules.
pub fn send_event(http: &HttpClient, url: &str, event: &CommandEvent, policy: &Policy) -> Result<(), PutError> {
    tracing::debug!("Sending Command Event {} to {}", event.event_id, http::redact_url(url));
    presigned::put(http, url, &event.body(), policy, "Command Event")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn ids() -> CommandIds {
        CommandIds {
            dispatcher_id: "d".into(),
            command_name: "c".into(),
            listener_id: "l".into(),
            invocation_id: "i".into(),
        }
    }

    #[test]
    fn result_bodies_put_the_text_where_the_status_says() {
        let ok = CommandResult { ids: ids(), success: true, text: "out put".into() };
        assert_eq!(
            ok.body(),
            r#"{"Status": "SUCCESS", "DispatcherId": "d", "CommandName": "c", "ListenerId": "l", "InvocationId": "i", "Message": "", "Data": "out put"}"#
        );
        let failed = CommandResult { ids: ids(), success: false, text: "caf\u{e9}".into() };
        assert_eq!(
            failed.body(),
            r#"{"Status": "FAILURE", "DispatcherId": "d", "CommandName": "c", "ListenerId": "l", "InvocationId": "i", "Message": "caf\u00e9", "Data": ""}"#
        );
    }

    #[test]
    fn the_exit_code_takes_precedence_over_the_success_flag() {
        let cases = [
            (None, None, true),
            (None, Some("true"), true),
            (None, Some("false"), false),
            (Some(0), Some("false"), true),
            (Some(3), Some("true"), false),
            (Some(-1), None, false),
        ];
        for (code, flag, expected) in cases {
            assert_eq!(CommandResult::succeeded(code, flag), expected, "-e {code:?} -s {flag:?}");
        }
    }

    #[test]
    fn event_bodies_and_defaults() {
        let event = CommandEvent {
            ids: ids(),
            event_id: "e1".into(),
            timestamp: "2020-01-02T03:04:05".into(),
            message: "hello world".into(),
        };
        assert_eq!(
            event.body(),
            r#"{"EventId": "e1", "DispatcherId": "d", "CommandName": "c", "ListenerId": "l", "InvocationId": "i", "EventTimestamp": "2020-01-02T03:04:05", "Message": "hello world"}"#
        );
        let id = random_uuid();
        assert_eq!(id.len(), 36);
        assert_eq!(id.as_bytes()[14], b'4');
        assert!(matches!(id.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{id}");
        assert_ne!(id, random_uuid());
        let t = chrono::Utc.with_ymd_and_hms(2026, 11, 29, 18, 40, 17).unwrap();
        assert_eq!(utc_timestamp(t), "2026-11-29T18:40:17.000000");
        assert_eq!(utc_timestamp(t + chrono::TimeDelta::microseconds(441_914)), "2026-11-29T18:40:17.441914");
    }
}
