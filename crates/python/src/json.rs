//! JSON text exactly as the Python 3 line of the reference writes it.
//!
//! `cfn-get-metadata` prints values with a 4-space indent (GETMD-03), `cfn-init` writes
//! non-string file content compactly with `", "` and `": "` separators (INIT-FILES-03)
//! and stores `metadata.json` pretty-printed (INIT-CLI-06). In every case non-ASCII
//! characters are written as `\uXXXX` escapes (surrogate pairs above the BMP) and keys
//! keep document order, which `serde_json`'s own printers do not do.

use serde_json::Value;
use std::fmt::Write;

/// A JSON value's type as people call it, for messages (`must be an object, not a list`).
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `json.dumps(value, indent=4)` in Python 3: one item per line, `": "` after keys,
/// empty containers as `{}` / `[]`.
pub fn to_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(0));
    out
}

/// `json.dumps(value)`: everything on one line with `", "` and `": "` separators.
pub fn to_compact(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None);
    out
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("    ");
    }
}

fn write_value(out: &mut String, value: &Value, indent: Option<usize>) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(out, i, indent);
                write_value(out, item, indent.map(|d| d + 1));
            }
            close(out, indent, ']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                separator(out, i, indent);
                write_string(out, key);
                out.push_str(": ");
                write_value(out, item, indent.map(|d| d + 1));
            }
            close(out, indent, '}');
        }
    }
}

fn separator(out: &mut String, index: usize, indent: Option<usize>) {
    match indent {
        Some(depth) => {
            if index > 0 {
                out.push(',');
            }
            newline(out, depth + 1);
        }
        None if index > 0 => out.push_str(", "),
        None => {}
    }
}

fn close(out: &mut String, indent: Option<usize>, bracket: char) {
    if let Some(depth) = indent {
        newline(out, depth);
    }
    out.push(bracket);
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    // Numbers keep their source text (serde_json's arbitrary_precision), so integers of
    // any size print exactly as Python prints them. Floats are re-printed the way
    // Python's repr() does: "1.0" stays "1.0", 1e100 becomes "1e+100".
    let text = n.to_string();
    let is_integer = text.bytes().enumerate().all(|(i, b)| b.is_ascii_digit() || (i == 0 && b == b'-'));
    match n.as_f64() {
        Some(f) if !is_integer && f.is_finite() => crate::repr::write_float(out, f),
        _ => out.push_str(&text),
    }
}

/// A JSON string with Python's `ensure_ascii=True` escaping.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pretty_matches_python3_indent_4() {
        let v: Value = serde_json::from_str(r#"{"b": [1, {"x": null}], "a": "é", "e": {}, "l": []}"#).unwrap();
        assert_eq!(
            to_pretty(&v),
            "{\n    \"b\": [\n        1,\n        {\n            \"x\": null\n        }\n    ],\n    \"a\": \"\\u00e9\",\n    \"e\": {},\n    \"l\": []\n}"
        );
    }

    #[test]
    fn compact_uses_python_separators_and_document_order() {
        let v: Value = serde_json::from_str(r#"{"z": 1, "a": [true, false, "x"]}"#).unwrap();
        assert_eq!(to_compact(&v), r#"{"z": 1, "a": [true, false, "x"]}"#);
    }

    #[test]
    fn escapes_like_ensure_ascii() {
        let cases = [
            ("plain", "\"plain\""),
            ("tab\there", "\"tab\\there\""),
            ("\u{1}", "\"\\u0001\""),
            ("\u{7f}", "\"\\u007f\""),
            ("€", "\"\\u20ac\""),
            ("😀", "\"\\ud83d\\ude00\""),
            ("q\"b\\", "\"q\\\"b\\\\\""),
            ("</", "\"</\""),
        ];
        for (input, expected) in cases {
            assert_eq!(to_compact(&json!(input)), expected, "input {input:?}");
        }
    }

    #[test]
    fn numbers_print_like_python() {
        let cases = [
            ("0", "0"),
            ("-12", "-12"),
            ("1.0", "1.0"),
            ("2.5", "2.5"),
            ("1e100", "1e+100"),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            ("1.50", "1.5"),
            ("1E5", "100000.0"),
            ("0.00001", "1e-05"),
            ("1e16", "1e+16"),
        ];
        for (input, expected) in cases {
            let v: Value = serde_json::from_str(input).unwrap();
            assert_eq!(to_compact(&v), expected, "input {input}");
        }
    }
}
