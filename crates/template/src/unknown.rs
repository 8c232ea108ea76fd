//! Values a linter does not have: a parameter without a value, another resource's
//! attribute, another stack's export. [`Template::metadata_for_checks`] resolves them to
//! *unknowns* inside the resolved value, so that checks can tell what they cannot decide.
//!
//! An unknown is written in a string as `\u{E000}NAME\u{E001}` (Unicode private-use
//! characters, which no template means as text): a parameter `Dir` is `"\u{E000}Dir\u{E001}"`,
//! and `Fn::Sub "/var/www/${Dir}/x"` keeps it in place, a partly known path. An unknown list
//! (a list parameter, `Fn::Split` of an unknown) is a list of one item whose name ends in
//! `[]`: a list of any length, which `Fn::Select` and `Fn::Join` take as unknown.
//!
//! [`Template::metadata_for_checks`]: crate::Template::metadata_for_checks

use serde_json::Value;

/// Opens an unknown's name in a string.
pub const OPEN: char = '\u{E000}';
/// Closes it.
pub const CLOSE: char = '\u{E001}';

/// The unknown named `name`, as text.
pub fn marker(name: &str) -> String {
    format!("{OPEN}{}{CLOSE}", name.replace([OPEN, CLOSE], ""))
}

/// An unknown list named `name`.
pub fn list(name: &str) -> Value {
    Value::Array(vec![Value::String(marker(&format!("{name}[]")))])
}

/// Whether `value` is an unknown list (see [`list`]).
pub fn is_list(value: &Value) -> bool {
    match value.as_array().map(Vec::as_slice) {
        Some([Value::String(item)]) => {
            item.starts_with(OPEN) && item.ends_with("[]\u{E001}") && item.matches(OPEN).count() == 1
        }
        _ => false,
    }
}

/// Whether `text` holds an unknown.
pub fn in_text(text: &str) -> bool {
    text.contains(OPEN)
}

/// Whether `value` (any string or key in it) holds an unknown.
pub fn in_value(value: &Value) -> bool {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) if in_text(text) => return true,
            Value::Array(items) => pending.extend(items),
            Value::Object(entries) => {
                if entries.keys().any(|k| in_text(k)) {
                    return true;
                }
                pending.extend(entries.values());
            }
            _ => {}
        }
    }
    false
}

/// The text before the first unknown: what is known of how `text` starts.
pub fn known_prefix(text: &str) -> &str {
    text.split(OPEN).next().unwrap_or("")
}

/// The text after the last unknown: what is known of how `text` ends.
pub fn known_suffix(text: &str) -> &str {
    match text.rfind(CLOSE) {
        Some(i) => &text[i + CLOSE.len_utf8()..],
        None => text,
    }
}

/// The names of the unknowns in `value`, each once, in order.
pub fn names(value: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending = vec![value];
    let mut add = |text: &str| {
        for piece in text.split(OPEN).skip(1) {
            let name = piece.split(CLOSE).next().unwrap_or(piece).to_string();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    };
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => add(text),
            Value::Array(items) => pending.extend(items.iter().rev()),
            Value::Object(entries) => {
                for key in entries.keys() {
                    add(key);
                }
                pending.extend(entries.values().rev());
            }
            _ => {}
        }
    }
    out
}

/// `text` with each unknown written as `${NAME}`, as people read it.
pub fn display(text: &str) -> String {
    text.replace(OPEN, "${").replace(CLOSE, "}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markers_lists_prefixes_and_names() {
        let path = format!("/var/www/{}/x", marker("Dir"));
        assert!(in_text(&path) && !in_text("/var/www"));
        assert_eq!(known_prefix(&path), "/var/www/");
        assert_eq!(known_suffix(&path), "/x");
        assert_eq!(known_suffix("plain"), "plain");
        assert_eq!(display(&path), "/var/www/${Dir}/x");
        assert!(is_list(&list("Subnets")) && !is_list(&json!([marker("A")])) && !is_list(&json!(["a"])));
        let value = json!({"a": [path, marker("B")], "c": list("L")});
        assert!(in_value(&value) && !in_value(&json!({"a": ["b"]})));
        assert_eq!(names(&value), ["Dir", "B", "L[]"]);
        assert_eq!(marker("a\u{E001}b"), marker("ab"));
    }
}
