//! The reference's booleans in metadata (INIT-BOOL-01): true is JSON `true`, the number
//! 1, or a string that, trimmed and lower-cased, is `true`, `yes`, `y` or `1`.
//! Everything else is false.

use crate::repr::PyNumber;
use serde_json::Value;

pub fn is_true(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() == Some(1.0),
        Value::String(s) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "y" | "1"),
        _ => false,
    }
}

/// Python's truthiness of the decoded JSON value: what the reference uses to decide
/// whether a key "is there" (`content`, the Init key, empty sections) and what a
/// pystache section tests. Numbers keep their JSON spelling: an integer is false only
/// when all its digits are zero, a float only when it is zero.
pub fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => match PyNumber::of(n) {
            PyNumber::Int(text) => text.bytes().any(|b| b.is_ascii_digit() && b != b'0'),
            PyNumber::Float(f) => f != 0.0,
        },
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn booleans_like_the_reference() {
        let truthy = [json!(true), json!(1), json!("true"), json!(" TRUE "), json!("Yes"), json!("y"), json!("1")];
        let falsy = [
            json!(false),
            json!(0),
            json!(2),
            json!("false"),
            json!("on"),
            json!("2"),
            json!(""),
            json!(null),
            json!([]),
            json!({}),
        ];
        for v in truthy {
            assert!(is_true(&v), "{v}");
        }
        for v in falsy {
            assert!(!is_true(&v), "{v}");
        }
    }

    #[test]
    fn python_truthiness() {
        for v in [json!(""), json!(0), json!(0.0), json!(false), json!(null), json!([]), json!({})] {
            assert!(!is_truthy(&v), "{v}");
        }
        for v in [json!("x"), json!(1), json!(-1), json!(true), json!([0]), json!({"a": null})] {
            assert!(is_truthy(&v), "{v}");
        }
    }
}
