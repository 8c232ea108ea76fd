//! The typed model of a config's `files` and `commands` sections, parsed from JSON once
//! by [`crate::document`]; an error is held until its section's turn comes (so earlier
//! sections take effect first, as in the reference). Errors name their place; where the
//! reference had a message of its own, that text is kept as it is, because scripts and
//! people search for it.

use cfn_python::truth as boolish;
use serde_json::{Map, Value};

/// An error in the metadata itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ModelError(pub String);

impl ModelError {
    /// `config <c>, <section> <item>: <message>` for errors the reference had no text for.
    pub fn at(config: &str, section: &str, item: &str, message: impl std::fmt::Display) -> ModelError {
        ModelError(format!("config {config}, {section} {item}: {message}"))
    }
}

pub use cfn_python::json::kind;

/// A section's entries, sorted by key as the reference processes them, or an error if
/// the section is not an object. An absent, null or empty section gives no entries.
pub fn sorted_entries<'a>(
    config: &str,
    section: &str,
    value: Option<&'a Value>,
) -> Result<Vec<(&'a String, &'a Value)>, ModelError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Ok(entries)
        }
        Some(other) => Err(ModelError(format!("config {config}: {section} must be an object, not {}", kind(other)))),
    }
}

fn attributes<'a>(
    config: &str,
    section: &str,
    name: &str,
    value: &'a Value,
) -> Result<&'a Map<String, Value>, ModelError> {
    value
        .as_object()
        .ok_or_else(|| ModelError::at(config, section, name, format!("must be an object, not {}", kind(value))))
}

fn optional_string(
    config: &str,
    section: &str,
    name: &str,
    attrs: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, ModelError> {
    match attrs.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => {
            Err(ModelError::at(config, section, name, format!("{key} must be a string, not {}", kind(other))))
        }
    }
}

/// What a file's content is made of.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    /// Any other JSON value, written as compact JSON (INIT-FILES-03).
    Json(Value),
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileSpec {
    pub path: String,
    /// Inline content; `None` when absent, or falsy while a `source` is given.
    pub content: Option<Content>,
    pub source: Option<String>,
    pub base64: bool,
    /// The full mode including file-type bits (`120777` is a symbolic link).
    pub mode: Option<u32>,
    /// The mode as the metadata wrote it, for the log.
    pub mode_text: Option<String>,
    pub owner: Option<String>,
    pub group: Option<String>,
    pub authentication: Option<String>,
    /// Present (even `{}`) means the content is a Mustache template (INIT-FILES-06).
    pub context: Option<Value>,
}

impl FileSpec {
    pub fn is_symlink(&self) -> bool {
        self.mode.is_some_and(|m| m & 0o170000 == 0o120000)
    }
}

/// Parses one `files` entry. Validity of the path and the presence of content are
/// checked when the file is written, with the reference's messages.
pub fn file_spec(config: &str, path: &str, value: &Value) -> Result<FileSpec, ModelError> {
    let section = "files";
    let attrs = attributes(config, section, path, value)?;
    let string = |key| optional_string(config, section, path, attrs, key);
    let source = string("source")?.filter(|s| !s.is_empty());
    let content = match attrs.get("content") {
        None | Some(Value::Null) => None,
        // The reference ignores falsy content when there is a source to use instead.
        Some(v) if !boolish::is_truthy(v) && source.is_some() => None,
        Some(Value::String(s)) => Some(Content::Text(s.clone())),
        Some(other) => Some(Content::Json(other.clone())),
    };
    let encoding = string("encoding")?;
    Ok(FileSpec {
        path: path.to_string(),
        content,
        source,
        base64: encoding.is_some_and(|e| e.eq_ignore_ascii_case("base64")),
        mode: match attrs.get("mode") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_mode(v).ok_or_else(|| {
                ModelError::at(config, section, path, "mode must be an octal string like \"000644\"")
            })?),
        },
        mode_text: attrs
            .get("mode")
            .filter(|m| !m.is_null())
            .map(|m| m.as_str().map(str::to_string).unwrap_or_else(|| m.to_string())),
        owner: string("owner")?,
        group: string("group")?,
        authentication: string("authentication")?,
        // `"context": null` is no context, as in the reference.
        context: attrs.get("context").filter(|c| !c.is_null()).cloned(),
    })
}

/// A mode as an octal string (`"000644"`), or — an addition — a JSON number whose
/// digits are read as octal (`644`), which templates often hold (INIT-FILES-14).
pub fn parse_mode(value: &Value) -> Option<u32> {
    let digits = match value {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) if n.is_u64() => n.to_string(),
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return None;
    }
    u32::from_str_radix(&digits, 8).ok().filter(|m| *m <= 0o177777)
}

pub use cfn_host::CommandLine;

fn parse_command_line(config: &str, name: &str, key: &str, value: &Value) -> Result<CommandLine, ModelError> {
    match value {
        Value::String(s) => Ok(CommandLine::Shell(s.clone())),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| {
                scalar_text(item).ok_or_else(|| {
                    ModelError::at(config, "commands", name, format!("{key} must be a string or a list of strings"))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(CommandLine::Argv),
        _ => Err(ModelError::at(
            config,
            "commands",
            name,
            format!("{key} must be a string or a non-empty list of strings"),
        )),
    }
}

/// Strings as they are; numbers and booleans as their JSON text (templates often turn
/// values into numbers); anything else is refused.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandSpec {
    pub name: String,
    pub command: CommandLine,
    /// Replaces the whole environment when given (INIT-CMD-03).
    pub env: Option<Vec<(String, String)>>,
    pub cwd: Option<String>,
    pub test: Option<CommandLine>,
    pub ignore_errors: bool,
    pub runas: Option<String>,
}

/// The attributes of one command, before `defaults` are merged in.
pub fn command_attributes<'a>(
    config: &str,
    name: &str,
    value: &'a Value,
) -> Result<&'a Map<String, Value>, ModelError> {
    attributes(config, "commands", name, value)
}

/// The end of the reference's message for a command without `command`.
const MISSING_COMMAND: &str = " does not specify the 'command' attribute, which is required";

/// Whether `error` is the one for a command without `command` (cfn-init logs a line of
/// its own first; validate gives it a code of its own).
pub fn is_missing_command(error: &ModelError) -> bool {
    error.0.ends_with(MISSING_COMMAND)
}

/// Parses one command's attributes (already merged with any `defaults`).
pub fn command_spec(config: &str, name: &str, attrs: &Map<String, Value>) -> Result<CommandSpec, ModelError> {
    let command = match attrs.get("command") {
        None | Some(Value::Null) => return Err(ModelError(format!("{name}{MISSING_COMMAND}"))),
        Some(v) => parse_command_line(config, name, "command", v)?,
    };
    let env = match attrs.get("env") {
        None | Some(Value::Null) => None,
        // An empty object counts as no `env` at all, as in the reference.
        Some(Value::Object(map)) if map.is_empty() => None,
        Some(Value::Object(map)) => Some(
            map.iter()
                .map(|(k, v)| {
                    scalar_text(v).map(|text| (k.clone(), text)).ok_or_else(|| {
                        ModelError::at(config, "commands", name, format!("env value of {k} must be a string"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => {
            return Err(ModelError::at(
                config,
                "commands",
                name,
                format!("env must be an object, not {}", kind(other)),
            ));
        }
    };
    let test = match attrs.get("test") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_command_line(config, name, "test", v)?),
    };
    Ok(CommandSpec {
        name: name.to_string(),
        command,
        env,
        cwd: optional_string(config, "commands", name, attrs, "cwd")?.filter(|c| !c.is_empty()),
        test,
        ignore_errors: attrs.get("ignoreErrors").is_some_and(boolish::is_true),
        runas: command_runas(config, name, attrs)?,
    })
}

/// A command's `runas` user name, if any (an empty name is none).
pub fn command_runas(config: &str, name: &str, attrs: &Map<String, Value>) -> Result<Option<String>, ModelError> {
    Ok(optional_string(config, "commands", name, attrs, "runas")?.filter(|r| !r.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes() {
        let cases = [
            (json!("000644"), Some(0o644)),
            (json!("644"), Some(0o644)),
            (json!("120777"), Some(0o120777)),
            (json!("4755"), Some(0o4755)),
            (json!(644), Some(0o644)),
            (json!(755), Some(0o755)),
            (json!("abc"), None),
            (json!("0998"), None),
            (json!(""), None),
            (json!(6.5), None),
            (json!(-1), None),
            (json!(true), None),
        ];
        for (value, expected) in cases {
            assert_eq!(parse_mode(&value), expected, "{value}");
        }
    }

    #[test]
    fn file_specs_keep_content_kinds() {
        let f = file_spec("c", "/a", &json!({"content": {"b": 1}, "mode": "000600", "owner": "root"})).unwrap();
        assert_eq!(f.content, Some(Content::Json(json!({"b": 1}))));
        assert_eq!(f.mode, Some(0o600));
        let f = file_spec("c", "/a", &json!({"content": "", "source": "http://x/y"})).unwrap();
        assert_eq!((f.content, f.source.as_deref()), (None, Some("http://x/y")));
        let f = file_spec("c", "/a", &json!({"content": "", "encoding": "BASE64", "context": {}})).unwrap();
        assert_eq!(f.content, Some(Content::Text(String::new())));
        assert!(f.base64 && f.context.is_some());
        assert!(file_spec("c", "/l", &json!({"mode": "120777", "content": "/t"})).unwrap().is_symlink());
    }

    #[test]
    fn errors_name_their_place() {
        let e = file_spec("webserver", "/etc/app.conf", &json!({"content": "x", "mode": "rw-r--r--"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config webserver, files /etc/app.conf: mode must be an octal string like \"000644\""
        );
        let e = file_spec("c", "/a", &json!(["x"])).unwrap_err();
        assert_eq!(e.to_string(), "config c, files /a: must be an object, not a list");
        let e = file_spec("c", "/a", &json!({"owner": 0})).unwrap_err();
        assert_eq!(e.to_string(), "config c, files /a: owner must be a string, not a number");
        let attrs = json!({"cwd": "/"});
        let e = command_spec("c", "01", attrs.as_object().unwrap()).unwrap_err();
        assert_eq!(e.to_string(), "01 does not specify the 'command' attribute, which is required");
        let attrs = json!({"command": "x", "env": {"A": ["no"]}});
        let e = command_spec("c", "01", attrs.as_object().unwrap()).unwrap_err();
        assert_eq!(e.to_string(), "config c, commands 01: env value of A must be a string");
        assert!(sorted_entries("c", "files", Some(&json!([1]))).is_err());
    }

    #[test]
    fn commands_parse_with_defaults_for_missing_keys() {
        let attrs =
            json!({"command": ["echo", 1, true], "env": {"A": "1", "N": 2}, "ignoreErrors": "yes", "test": "true"});
        let c = command_spec("c", "x", attrs.as_object().unwrap()).unwrap();
        assert_eq!(c.command, CommandLine::Argv(vec!["echo".into(), "1".into(), "true".into()]));
        assert_eq!(c.env, Some(vec![("A".into(), "1".into()), ("N".into(), "2".into())]));
        assert!(c.ignore_errors);
        assert_eq!(c.test, Some(CommandLine::Shell("true".into())));
        assert_eq!(CommandLine::Argv(vec!["a".into(), "it's".into()]).shown(), r#"['a', "it's"]"#);
    }
}
