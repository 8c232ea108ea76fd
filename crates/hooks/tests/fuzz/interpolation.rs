//! `%(name)s` expansion is bounded (issue 22, point 6; HUP-CONF-02): whatever the
//! references, a value read is at most `VALUE_LIMIT` bytes and the values of one file at
//! most `FILE_LIMIT` in all, or the read fails with an error naming the option and the
//! file; references that double at every level expand exactly while within the bound.

use crate::config;
use cfn_hooks::ini::{FILE_LIMIT, Ini, IniError, VALUE_LIMIT};
use proptest::prelude::*;

const FILE: &str = "/etc/cfn/hooks.d/bomb.conf";

/// A value: text, `%%`, and references to any of the `keys` names (itself, missing and
/// mis-cased names included), many times over.
fn value(keys: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => (0..keys + 1, any::<bool>()).prop_map(|(k, upper)| {
            let name = format!("k{k}");
            format!("%({})s", if upper { name.to_uppercase() } else { name })
        }),
        2 => "[a-z ]{0,40}",
        1 => Just("%%".to_string()),
        1 => Just("%(".to_string()),
    ];
    (prop::collection::vec((piece, 1usize..60), 0..6))
        .prop_map(|pieces| pieces.into_iter().map(|(p, times)| p.repeat(times)).collect())
}

proptest! {
    #![proptest_config(config(256))]

    /// Any web of references reads within the bounds, or fails naming what it must.
    #[test]
    fn any_references_expand_within_the_bounds(
        keys in 1usize..8,
        values in prop::collection::vec(value(8), 8),
        defaults in 0usize..4,
        sections in 1usize..4,
    ) {
        let mut text = String::from("[DEFAULT]\n");
        for (k, value) in values.iter().enumerate().take(defaults) {
            text.push_str(&format!("k{k} = {value}\n"));
        }
        for s in 0..sections {
            text.push_str(&format!("[s{s}]\n"));
            for (k, value) in values.iter().enumerate().take(keys).skip(defaults) {
                text.push_str(&format!("k{k} = {value}\n"));
            }
        }
        let mut ini = Ini::new();
        ini.read_str(&text, FILE).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let mut total = 0;
        for s in 0..sections {
            for k in 0..keys {
                match ini.get(&format!("s{s}"), &format!("K{k}")) {
                    Ok(Some(value)) => {
                        prop_assert!(value.len() <= VALUE_LIMIT, "{} bytes", value.len());
                        total += value.len();
                        prop_assert!(total <= FILE_LIMIT, "{total} bytes in all");
                    }
                    Ok(None) => prop_assert!(k >= keys, "k{k} of s{s} is missing"),
                    Err(IniError::Interpolation { section, .. }) => prop_assert_eq!(section, format!("s{s}")),
                    Err(e @ (IniError::ValueTooLarge { .. } | IniError::FileTooLarge { .. })) => {
                        let shown = e.to_string();
                        prop_assert!(shown.contains(&format!("option k{k} in {FILE}")), "{}", shown);
                    }
                    Err(e) => prop_assert!(false, "{e}"),
                }
            }
        }
    }

    /// `levels` levels, each repeating the one below `times` times, on a leaf of `leaf`
    /// bytes: the value is exactly the leaf repeated `times^levels` times while that
    /// stays within the bound, and an error naming the option past it.
    #[test]
    fn doubling_references_expand_exactly_or_stop_at_the_bound(
        leaf in "[a-z]{1,64}",
        times in 1usize..40,
        levels in 1usize..10,
    ) {
        let mut text = format!("[DEFAULT]\nx0 = {leaf}\n");
        for level in 1..=levels {
            text.push_str(&format!("x{level} = {}\n", format!("%(x{})s", level - 1).repeat(times)));
        }
        text.push_str(&format!("[bomb]\naction = %(x{levels})s\n"));
        let mut ini = Ini::new();
        ini.read_str(&text, FILE).unwrap();
        let expected = (times as u128).pow(levels as u32) * leaf.len() as u128;
        match ini.get("bomb", "action") {
            Ok(Some(value)) => {
                prop_assert_eq!(value.len() as u128, expected);
                prop_assert_eq!(value, leaf.repeat(expected as usize / leaf.len()));
            }
            Err(IniError::ValueTooLarge { section, key, file }) => {
                prop_assert!(expected > VALUE_LIMIT as u128, "{expected} bytes refused");
                prop_assert_eq!((section.as_str(), key.as_str(), file.as_str()), ("bomb", "action", FILE));
            }
            other => prop_assert!(false, "{other:?}"),
        }
    }
}
