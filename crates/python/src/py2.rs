//! Python 2's `repr()` of what its `json.loads` returns, as the reference's cfn-hup logs
//! a command message (`Processing message: {u'…': …}`): strings are `unicode` (`u'…'`),
//! integers beyond 64 bits are `long` (`…L`), and a dict lists its keys in the order of
//! Python 2.7's hash table, which people's log parsers see. That order follows from the
//! string hash (hash randomisation off, Python 2's default) and the table's probing and
//! resizing (CPython 2.7 `Objects/dictobject.c`), keys inserted in document order.

use serde_json::{Map, Value};

/// Python 2.7's hash of a `unicode` string (UCS-4 build) with hash randomisation off.
fn unicode_hash(s: &str) -> i64 {
    let units: Vec<i64> = s.chars().map(|c| c as i64).collect();
    let Some(&first) = units.first() else { return 0 };
    let mut x: i64 = first << 7;
    for &unit in &units {
        x = x.wrapping_mul(1_000_003) ^ unit;
    }
    x ^= units.len() as i64;
    if x == -1 { -2 } else { x }
}

/// The first free slot of `table` on `hash`'s probe sequence.
fn free_slot(table: &[Option<usize>], hash: i64) -> usize {
    let mask = table.len() - 1;
    let mut i = (hash as u64 as usize) & mask;
    let mut perturb = hash as u64 as usize;
    while table[i & mask].is_some() {
        i = (i << 2).wrapping_add(i).wrapping_add(perturb).wrapping_add(1);
        perturb >>= 5;
    }
    i & mask
}

/// The order in which Python 2.7 iterates a dict whose (distinct) keys were inserted in
/// the order given: indices into `keys`.
pub fn dict_order(keys: &[&str]) -> Vec<usize> {
    let hashes: Vec<i64> = keys.iter().map(|k| unicode_hash(k)).collect();
    let mut table: Vec<Option<usize>> = vec![None; 8];
    let mut used = 0usize;
    for (n, &hash) in hashes.iter().enumerate() {
        let slot = free_slot(&table, hash);
        table[slot] = Some(n);
        used += 1;
        // No deletions, so fill == used.
        if used * 3 >= table.len() * 2 {
            let minused = if used > 50_000 { 2 * used } else { 4 * used };
            let mut size = 8;
            while size <= minused {
                size <<= 1;
            }
            let old = std::mem::replace(&mut table, vec![None; size]);
            for entry in old.into_iter().flatten() {
                let slot = free_slot(&table, hashes[entry]);
                table[slot] = Some(entry);
            }
        }
    }
    table.into_iter().flatten().collect()
}

/// Python 2's `repr()` of a `unicode` string: `u'…'` (or `u"…"` when it holds a `'`
/// and no `"`), non-ASCII and control characters as `\xNN`, `\uNNNN`, `\UNNNNNNNN`.
fn write_unicode_repr(out: &mut String, s: &str) {
    crate::repr::write_quoted(out, s, "u", |c| c.is_ascii());
}

fn write_dict(out: &mut String, map: &Map<String, Value>) {
    let entries: Vec<(&String, &Value)> = map.iter().collect();
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    out.push('{');
    for (n, index) in dict_order(&keys).into_iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        let (key, value) = entries[index];
        write_unicode_repr(out, key);
        out.push_str(": ");
        write_value(out, value);
    }
    out.push('}');
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match crate::repr::PyNumber::of(n) {
            crate::repr::PyNumber::Float(f) => crate::repr::write_float(out, f),
            crate::repr::PyNumber::Int(text) => match text.parse::<i64>() {
                Ok(int) => out.push_str(&int.to_string()),
                // Python 2's `long`.
                Err(_) => {
                    out.push_str(text);
                    out.push('L');
                }
            },
        },
        Value::String(s) => write_unicode_repr(out, s),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_dict(out, map),
    }
}

/// Python 2's `repr()` of the value its `json.loads` makes of this JSON (serde_json's
/// parser bounds the nesting depth, so the recursion is bounded).
pub fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Python 2.7's `repr()` of `unicode` strings (a wide build): only ASCII kept.
    #[test]
    fn unicode_strings_keep_only_ascii() {
        let cases = [
            ("caf\u{e9}", "u'caf\\xe9'"),
            ("\u{20ac}", "u'\\u20ac'"),
            ("\u{1f600}", "u'\\U0001f600'"),
            ("\x7f\x01\t", "u'\\x7f\\x01\\t'"),
            ("it's", "u\"it's\""),
            ("both ' and \"", "u'both \\' and \"'"),
        ];
        for (text, expected) in cases {
            let mut out = String::new();
            write_unicode_repr(&mut out, text);
            assert_eq!(out, expected, "{text:?}");
        }
    }

    /// Python 2.7.18: `repr(json.loads(...))` of command messages recorded in
    /// tests/golden/cmd-hooks (the order of their keys as the reference logged them).
    #[test]
    fn dict_keys_come_in_python_2_order() {
        let failure: Value = serde_json::from_str(
            r#"{"DispatcherId": "dispatcher-1", "CommandName": "fail", "InvocationId": "inv-failure", "Expiration": 4102444800000, "ResultQueue": "q"}"#,
        )
        .unwrap();
        assert_eq!(
            repr(&failure),
            "{u'Expiration': 4102444800000, u'ResultQueue': u'q', u'DispatcherId': u'dispatcher-1', u'CommandName': u'fail', u'InvocationId': u'inv-failure'}"
        );
        let success: Value = serde_json::from_str(
            r#"{"DispatcherId": "dispatcher-1", "CommandName": "succeed", "InvocationId": "inv-success", "Expiration": 4102444800000, "Data": "some data", "EventHandle": "e", "ResultQueue": "q"}"#,
        )
        .unwrap();
        assert_eq!(
            repr(&success),
            "{u'EventHandle': u'e', u'DispatcherId': u'dispatcher-1', u'CommandName': u'succeed', u'Expiration': 4102444800000, u'ResultQueue': u'q', u'Data': u'some data', u'InvocationId': u'inv-success'}"
        );
    }

    #[test]
    fn values_print_as_python_2_prints_them() {
        let value = json!({"a": [1, 1.5, true, null, "it's", "é\u{1F600}\n"]});
        assert_eq!(repr(&value), r#"{u'a': [1, 1.5, True, None, u"it's", u'\xe9\U0001f600\n']}"#);
        let big: Value = serde_json::from_str("123456789012345678901234567890").unwrap();
        assert_eq!(repr(&big), "123456789012345678901234567890L");
        assert_eq!(repr(&json!({})), "{}");
        assert_eq!(repr(&json!("")), "u''");
    }
}
