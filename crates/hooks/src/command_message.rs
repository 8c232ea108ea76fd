//! The messages of cfn-hup's command listener (HUP-CMD-02, HUP-CMD-03): the command that
//! arrives on the listener's queue, and the result sent back to the command's result
//! queue.
//!
//! A queue message's body is an SNS-style envelope whose `Message` field is a JSON
//! *string* holding the command: `DispatcherId`, `CommandName`, `InvocationId`,
//! `Expiration` (epoch milliseconds), `ResultQueue`, and optionally `Data` and
//! `EventHandle`.

use cfn_aws::http;
use serde_json::{Map, Value};

/// The most characters of output a result carries (SPEC §14.7).
pub const RESULT_LIMIT: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("the message body is not JSON: {0}")]
    NotJson(String),
    #[error("the message body has no Message string")]
    NoMessage,
    #[error("the command in Message is not a JSON object: {0}")]
    CommandNotJson(String),
    #[error("the command has no {0}")]
    Missing(&'static str),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub dispatcher_id: String,
    pub command_name: String,
    pub invocation_id: String,
    /// Epoch milliseconds after which the command must not run.
    pub expiration_ms: i64,
    pub result_queue: String,
    pub data: Option<String>,
    pub event_handle: Option<String>,
    /// The command document as the reference's log shows it: Python 2's `repr()` of
    /// its `json.loads` (cfn_python::py2), with the URLs in it redacted (LOG-08).
    pub repr: String,
}

/// The document with every string redacted as a URL, whole (a password may hold white
/// space, where the redaction of free text would end the URL), and as free text.
fn redacted(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(http::redact_urls_in(&http::redact_url(s))),
        Value::Array(items) => Value::Array(items.iter().map(redacted).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), redacted(v))).collect()),
        other => other.clone(),
    }
}

impl Command {
    /// Reads a queue message's body.
    pub fn from_body(body: &str) -> Result<Command, MessageError> {
        let envelope: Value = serde_json::from_str(body).map_err(|e| MessageError::NotJson(e.to_string()))?;
        let inner = envelope.get("Message").and_then(Value::as_str).ok_or(MessageError::NoMessage)?;
        let command: Value = serde_json::from_str(inner).map_err(|e| MessageError::CommandNotJson(e.to_string()))?;
        let command =
            command.as_object().ok_or_else(|| MessageError::CommandNotJson(inner.chars().take(100).collect()))?;
        let text = |name: &'static str| -> Option<String> {
            match command.get(name)? {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            }
        };
        let required = |name: &'static str| text(name).ok_or(MessageError::Missing(name));
        let expiration_ms = command
            .get("Expiration")
            .and_then(|v| v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())))
            .ok_or(MessageError::Missing("Expiration"))? as i64;
        Ok(Command {
            dispatcher_id: required("DispatcherId")?,
            command_name: required("CommandName")?,
            invocation_id: required("InvocationId")?,
            expiration_ms,
            result_queue: required("ResultQueue")?,
            data: text("Data"),
            event_handle: text("EventHandle"),
            repr: cfn_python::py2::repr(&redacted(&Value::Object(command.clone()))),
        })
    }

    /// `DispatcherId|CommandName|InvocationId`, the key of `commands_run.json`.
    pub fn id(&self) -> String {
        format!("{}|{}|{}", self.dispatcher_id, self.command_name, self.invocation_id)
    }

    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expiration_ms < now_ms
    }

    /// The expiry as the reference logs it: whole seconds, ISO 8601 without a zone.
    pub fn expiration_text(&self) -> String {
        match chrono::DateTime::from_timestamp(self.expiration_ms.div_euclid(1000), 0) {
            Some(at) => at.format("%Y-%m-%dT%H:%M:%S").to_string(),
            None => format!("{} ms", self.expiration_ms),
        }
    }
}

/// The result of running a command's action: `{Status, DispatcherId, ListenerId,
/// CommandName, InvocationId}` plus `Data` (stdout, on success) or `Message` (stderr, on
/// failure), both right-trimmed. A failure message over 1024 characters keeps its first
/// and last 500; success data over 1024 characters turns the result into a failure that
/// quotes the first 100.
pub fn result_body(command: &Command, listener_id: &str, exit_code: i32, stdout: &str, stderr: &str) -> String {
    let (status, field, text) = if exit_code != 0 {
        ("FAILURE", "Message", shorten(stderr.trim_end()))
    } else {
        let data = stdout.trim_end();
        if data.chars().count() > RESULT_LIMIT {
            let start: String = data.chars().take(100).collect();
            ("FAILURE", "Message", format!("Result data was longer than {RESULT_LIMIT} bytes. Started with: {start}"))
        } else {
            ("SUCCESS", "Data", data.to_string())
        }
    };
    document(command, listener_id, status, field, text)
}

/// The result of an action that could not be started: a failure whose message says why.
pub fn failure_body(command: &Command, listener_id: &str, reason: &str) -> String {
    document(command, listener_id, "FAILURE", "Message", shorten(reason))
}

fn document(command: &Command, listener_id: &str, status: &str, field: &str, text: String) -> String {
    // The keys in the order the reference's json.dumps wrote them (tests/golden/cmd-hooks).
    let mut document = Map::new();
    document.insert("Status".into(), status.into());
    document.insert("DispatcherId".into(), command.dispatcher_id.clone().into());
    document.insert("ListenerId".into(), listener_id.into());
    document.insert("CommandName".into(), command.command_name.clone().into());
    document.insert("InvocationId".into(), command.invocation_id.clone().into());
    document.insert(field.into(), text.into());
    cfn_python::json::to_compact(&Value::Object(document))
}

/// First 500 + `...` + last 500 characters of a text over the limit.
fn shorten(text: &str) -> String {
    let count = text.chars().count();
    if count <= RESULT_LIMIT {
        return text.to_string();
    }
    let head: String = text.chars().take(500).collect();
    let tail: String = text.chars().skip(count - 500).collect();
    format!("{head}...{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(command: &Value) -> String {
        json!({"Type": "Notification", "MessageId": "m", "Message": command.to_string()}).to_string()
    }

    fn sample() -> Value {
        json!({"DispatcherId": "d", "CommandName": "deploy", "InvocationId": "i", "Expiration": 1_800_000_000_000i64,
               "ResultQueue": "http://q", "Data": "payload", "EventHandle": "http://e"})
    }

    #[test]
    fn parses_the_envelope_and_the_command() {
        let c = Command::from_body(&envelope(&sample())).unwrap();
        assert_eq!(c.id(), "d|deploy|i");
        assert_eq!(
            (c.expiration_ms, c.data.as_deref(), c.event_handle.as_deref()),
            (1_800_000_000_000, Some("payload"), Some("http://e"))
        );
        assert!(!c.is_expired(1_799_999_999_999) && c.is_expired(1_800_000_000_001));
        let mut minimal = sample();
        minimal.as_object_mut().unwrap().retain(|k, _| !matches!(k.as_str(), "Data" | "EventHandle"));
        minimal["Expiration"] = json!("1800000000000");
        let c = Command::from_body(&envelope(&minimal)).unwrap();
        assert_eq!((c.data, c.event_handle, c.expiration_ms), (None, None, 1_800_000_000_000));
    }

    #[test]
    fn malformed_messages_say_what_is_wrong() {
        assert!(matches!(Command::from_body("nope"), Err(MessageError::NotJson(_))));
        assert_eq!(Command::from_body(r#"{"Message": {"a": 1}}"#), Err(MessageError::NoMessage));
        assert!(matches!(Command::from_body(r#"{"Message": "{x"}"#), Err(MessageError::CommandNotJson(_))));
        for field in ["DispatcherId", "CommandName", "InvocationId", "Expiration", "ResultQueue"] {
            let mut c = sample();
            c.as_object_mut().unwrap().remove(field);
            assert_eq!(
                Command::from_body(&envelope(&c)).unwrap_err().to_string(),
                format!("the command has no {field}")
            );
        }
    }

    #[test]
    fn results_follow_the_1024_character_rules() {
        let c = Command::from_body(&envelope(&sample())).unwrap();
        assert_eq!(
            result_body(&c, "l", 0, "out put \n\n", "ignored"),
            r#"{"Status": "SUCCESS", "DispatcherId": "d", "ListenerId": "l", "CommandName": "deploy", "InvocationId": "i", "Data": "out put"}"#
        );
        assert_eq!(
            result_body(&c, "l", 2, "ignored", "  bad\n"),
            r#"{"Status": "FAILURE", "DispatcherId": "d", "ListenerId": "l", "CommandName": "deploy", "InvocationId": "i", "Message": "  bad"}"#
        );
        let parse = |b: String| serde_json::from_str::<Value>(&b).unwrap();
        // Exactly 1024 characters pass unchanged (multi-byte characters count once).
        let full = "é".repeat(1024);
        assert_eq!(parse(result_body(&c, "l", 0, &full, ""))["Data"], json!(full));
        assert_eq!(parse(result_body(&c, "l", 1, "", &full))["Message"], json!(full));
        let long = format!("{}{}", "a".repeat(600), "b".repeat(600));
        let r = parse(result_body(&c, "l", 0, &long, ""));
        assert_eq!(r["Status"], "FAILURE");
        assert_eq!(
            r["Message"],
            json!(format!("Result data was longer than 1024 bytes. Started with: {}", "a".repeat(100)))
        );
        assert!(r.get("Data").is_none());
        let r = parse(result_body(&c, "l", 1, "", &long));
        assert_eq!(r["Message"], json!(format!("{}...{}", "a".repeat(500), "b".repeat(500))));
    }

    #[test]
    fn an_action_that_could_not_start_is_a_failure_saying_why() {
        let c = Command::from_body(&envelope(&sample())).unwrap();
        assert_eq!(
            failure_body(&c, "l", "Action for h cannot run: user x does not exist"),
            r#"{"Status": "FAILURE", "DispatcherId": "d", "ListenerId": "l", "CommandName": "deploy", "InvocationId": "i", "Message": "Action for h cannot run: user x does not exist"}"#
        );
    }

    #[test]
    fn results_from_kept_output_equal_those_from_the_whole_output() {
        // cfn-hup keeps only the head and tail of an action's output (KEEP bytes each);
        // the result needs no more than 500 characters at either end of the trimmed text.
        use cfn_host::output::{KEEP, KeptOutput};
        let c = Command::from_body(&envelope(&sample())).unwrap();
        let whole_and_kept = |text: &str| (text.trim_end().to_string(), KeptOutput::from_bytes(text.as_bytes()));
        let cases = [
            // Far longer than what is kept, ending in a newline.
            format!("start {} end\n", "é".repeat(5 * KEEP)),
            // A short result followed by more blank space than is kept.
            format!("ok{}", " \n".repeat(3 * KEEP)),
        ];
        for text in &cases {
            let (whole, kept) = whole_and_kept(text);
            assert!(kept.left_out() > 0);
            for code in [0, 1] {
                assert_eq!(
                    result_body(&c, "l", code, &kept.text_trim_end(), &kept.text_trim_end()),
                    result_body(&c, "l", code, &whole, &whole),
                    "exit code {code}"
                );
            }
        }
    }
}
