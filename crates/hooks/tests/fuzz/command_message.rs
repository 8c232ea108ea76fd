//! What arrives on the command listener's queue (issue 22; HUP-CMD-02, HUP-CMD-03): any
//! bytes and any JSON are read without a panic, either as a command or as an error that
//! says what is wrong; a command read gives back the fields it was sent, and the result
//! made for it is JSON within the 1024-character rules.

use crate::config;
use cfn_hooks::command_message::{Command, MessageError, RESULT_LIMIT, failure_body, result_body};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,20}".prop_map(Value::from),
        "[0-9eE+.-]{1,25}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[A-Za-z]{0,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const FIELDS: &[&str] =
    &["DispatcherId", "CommandName", "InvocationId", "Expiration", "ResultQueue", "Data", "EventHandle"];

/// A command object: each known field absent, a string, or any JSON; other keys too.
fn command_object() -> impl Strategy<Value = Map<String, Value>> {
    let field = prop_oneof![
        1 => Just(None),
        3 => "\\PC{0,30}".prop_map(|s| Some(Value::from(s))),
        1 => any_json().prop_map(Some),
    ];
    (prop::collection::vec(field, FIELDS.len()), prop::collection::btree_map("[A-Za-z]{1,8}", any_json(), 0..3))
        .prop_map(|(fields, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            for (name, value) in FIELDS.iter().zip(fields) {
                if let Some(value) = value {
                    object.insert(name.to_string(), value);
                }
            }
            object
        })
}

/// Reading gives a command or an error whose message is not empty, never a panic; what
/// is read can be shown and answered.
fn read(body: &str) -> Result<Option<Command>, TestCaseError> {
    match Command::from_body(body) {
        Ok(command) => {
            let _ =
                (command.id(), command.expiration_text(), command.is_expired(i64::MAX), command.is_expired(i64::MIN));
            for body in [
                result_body(&command, "l", 0, "out", ""),
                result_body(&command, "l", 1, "", "err"),
                failure_body(&command, "l", "could not start"),
            ] {
                let parsed: Value =
                    serde_json::from_str(&body).map_err(|e| TestCaseError::fail(format!("{e}: {body}")))?;
                prop_assert_eq!(&parsed["InvocationId"], &json!(command.invocation_id));
            }
            Ok(Some(command))
        }
        Err(e) => {
            prop_assert!(!e.to_string().is_empty());
            Ok(None)
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Any bytes (as the UTF-8 text SQS delivers) are read or refused.
    #[test]
    fn any_bytes_are_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        read(&String::from_utf8_lossy(&bytes))?;
    }

    /// Any JSON body, and any JSON inside `Message`, is read or refused.
    #[test]
    fn any_json_is_read_or_refused(outer in any_json(), inner in any_json()) {
        read(&outer.to_string())?;
        read(&json!({"Type": "Notification", "Message": inner.to_string()}).to_string())?;
    }

    /// A command with every required field a string and a numeric `Expiration` is read
    /// with exactly what was sent; one missing a required field is refused naming it.
    #[test]
    fn commands_give_back_their_fields(object in command_object()) {
        let body = json!({"Type": "Notification", "Message": Value::Object(object.clone()).to_string()}).to_string();
        let text = |name: &str| object.get(name).and_then(Value::as_str).map(str::to_string);
        let missing: Vec<&str> = ["DispatcherId", "CommandName", "InvocationId", "Expiration", "ResultQueue"]
            .into_iter()
            .filter(|name| object.get(*name).is_none_or(Value::is_null))
            .collect();
        match read(&body)? {
            Some(command) => {
                prop_assert!(missing.is_empty(), "read without {}", missing.join(", "));
                for (name, got) in [
                    ("DispatcherId", &command.dispatcher_id),
                    ("CommandName", &command.command_name),
                    ("InvocationId", &command.invocation_id),
                    ("ResultQueue", &command.result_queue),
                ] {
                    if let Some(sent) = text(name) {
                        prop_assert_eq!(got, &sent);
                    }
                }
                if let Some(data) = text("Data") {
                    prop_assert_eq!(command.data.as_deref(), Some(data.as_str()));
                }
                let long = "x".repeat(3 * RESULT_LIMIT);
                let result: Value = serde_json::from_str(&failure_body(&command, "l", &long)).unwrap();
                prop_assert_eq!(result["Message"].as_str().unwrap().chars().count(), 1003);
            }
            None => {
                // A missing field is named; so is an `Expiration` that is no number.
                match Command::from_body(&body).unwrap_err() {
                    MessageError::Missing(name) => {
                        prop_assert!(missing.contains(&name) || name == "Expiration", "{} of {:?}", name, missing)
                    }
                    other => prop_assert!(false, "{other}"),
                }
            }
        }
    }
}
