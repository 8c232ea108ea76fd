//! Dotted key paths into metadata: `cfn-get-metadata -k` (GETMD-02) and cfn-hup hook
//! paths (HUP-PATH-01) share this grammar. A backslash before a dot makes the dot part
//! of the key (`a\.b.c` = key `a.b`, then key `c`).

use serde_json::Value;

/// Splits a key path into its components, honouring `\.` escapes. A backslash that
/// does not precede a dot is kept as it is.
pub fn split(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                current.push('.');
                chars.next();
            }
            '.' => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    parts
}

/// Follows `path` into `root`. Unlike the reference (BUG-FALSY, GETMD-05), a value
/// that is present but falsy (`""`, `0`, `false`, `{}`, `[]`, `null`) is found, and a
/// non-negative integer component indexes into an array.
pub fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    split(path).iter().try_fold(root, |value, key| match value {
        Value::Object(map) => map.get(key.as_str()),
        Value::Array(items) => {
            let index = key.parse::<usize>().ok().filter(|_| key.bytes().all(|b| b.is_ascii_digit()))?;
            items.get(index)
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn split_honours_escaped_dots() {
        let cases: &[(&str, &[&str])] = &[
            ("a", &["a"]),
            ("a.b.c", &["a", "b", "c"]),
            (r"a\.b.c", &["a.b", "c"]),
            (r"AWS::CloudFormation::Init.config", &["AWS::CloudFormation::Init", "config"]),
            (r"a\b", &[r"a\b"]),
            ("a..b", &["a", "", "b"]),
            ("", &[""]),
        ];
        for (input, expected) in cases {
            assert_eq!(split(input), *expected, "path {input:?}");
        }
    }

    #[test]
    fn lookup_finds_nested_falsy_and_indexed_values() {
        let doc = json!({
            "a": {"b": {"c": "deep"}},
            "dot.ted": 1,
            "list": ["x", {"y": 2}],
            "empty": "", "zero": 0, "no": false, "obj": {}, "nul": null,
        });
        let cases = [
            ("a.b.c", Some(json!("deep"))),
            (r"dot\.ted", Some(json!(1))),
            ("list.0", Some(json!("x"))),
            ("list.1.y", Some(json!(2))),
            ("list.2", None),
            ("list.-1", None),
            ("list.+1", None),
            ("empty", Some(json!(""))),
            ("zero", Some(json!(0))),
            ("no", Some(json!(false))),
            ("obj", Some(json!({}))),
            ("nul", Some(json!(null))),
            ("missing", None),
            ("a.b.c.d", None),
            ("dot.ted", None),
        ];
        for (path, expected) in cases {
            assert_eq!(lookup(&doc, path).cloned(), expected, "path {path:?}");
        }
    }
}
