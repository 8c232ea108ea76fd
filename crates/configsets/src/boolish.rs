//! The reference's booleans in metadata (INIT-BOOL-01): true is JSON `true`, the number
//! 1, or a string that, trimmed and lower-cased, is `true`, `yes`, `y` or `1`.
//! Everything else is false.

use serde_json::Value;

pub fn is_true(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() == Some(1.0),
        Value::String(s) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "y" | "1"),
        _ => false,
    }
}

/// Python's truthiness of a JSON value, which the reference uses to decide whether a
/// key "is there" (`content`, the Init key, empty sections).
pub fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
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
