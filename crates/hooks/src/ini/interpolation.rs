//! `%%` and `%(name)s` in values (HUP-CONF-02), with the expansion bounded.
//!
//! Like ConfigParser, a reference is followed at most [`MAX_DEPTH`] levels deep. Unlike
//! it, the size is bounded too: depth alone lets 2 KB of `%(x)s%(x)s…` references multiply
//! the text at every level, ten times over, and took cfn-hup past 1 GB. So
//!
//! * a value, and every value it refers to, expands to at most [`VALUE_LIMIT`] bytes: the
//!   expansion stops as soon as its text passes the limit, before anything larger is made;
//! * the expansion of a name at a given depth is made once per [`expand`] and reused, so a
//!   reference repeated many times costs its copy, not its expansion again. Every text
//!   made is part of the text one level up (values are only concatenated), so the texts
//!   of one level add up to at most the text above them: one call holds less than
//!   `2 × (MAX_DEPTH + 1) × VALUE_LIMIT` bytes (1.4 MiB), whatever the file;
//! * all values read from one file expand to at most [`FILE_LIMIT`] bytes (counted by the
//!   caller, `super::Ini::get`).

use std::collections::HashMap;

/// ConfigParser's `MAX_INTERPOLATION_DEPTH`.
pub const MAX_DEPTH: usize = 10;
/// The most bytes one value may expand to. An `action` is a shell command and the
/// longest values in real hooks files are a few hundred bytes; 64 KiB is far above any
/// of them and still small next to the memory of the smallest instance.
pub const VALUE_LIMIT: usize = 64 * 1024;
/// The most bytes the values of one file may expand to in all: sixteen values at the
/// limit, or thousands of ordinary hooks, while cfn-hup stays within a few MiB.
pub const FILE_LIMIT: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The value, or one it refers to, is over [`VALUE_LIMIT`].
    TooLarge,
    /// ConfigParser's interpolation errors: `key` (lower case) is where it was met.
    Bad { key: String, reason: String },
}

/// Expands `raw`, the value of `key`; `lookup` gives the raw value of a lower-case name
/// (the same section, then `[DEFAULT]`). Also says how many bytes of raw values its
/// searches looked at: at most twice the length of each raw value expanded (the tests
/// hold it to that), counted by the caller toward `super::SEARCH_LIMIT`.
pub fn expand<'a>(raw: &str, key: &str, lookup: &dyn Fn(&str) -> Option<&'a str>) -> (Result<String, Error>, usize) {
    let mut expansion = Expansion { lookup, made: HashMap::new(), scanned: 0 };
    let result = expansion.expand(raw, key, 0);
    (result, expansion.scanned)
}

struct Expansion<'l, 'a> {
    lookup: &'l dyn Fn(&str) -> Option<&'a str>,
    /// The expansion of a name (lower case) at a depth: at a deeper level its own
    /// references may reach the depth limit, so the depth is part of the key and the
    /// result is exactly ConfigParser's.
    made: HashMap<(String, usize), String>,
    /// Bytes of raw values looked at by the searches for `%` and `)s`.
    scanned: usize,
}

impl Expansion<'_, '_> {
    /// One pass over `raw`: each byte is looked at by the search for `%` once and by the
    /// search for `)s` at most once. A search for `)s` that fails means there is none
    /// from there to the end, so every `%(` after it is plain text without searching
    /// again (searching again made a value full of `%(` quadratic: 1 MB took 26 s).
    fn expand(&mut self, raw: &str, key: &str, depth: usize) -> Result<String, Error> {
        let bad = |reason: String| Error::Bad { key: key.to_lowercase(), reason };
        if depth > MAX_DEPTH {
            return Err(bad(format!("more than {MAX_DEPTH} levels of %(name)s references")));
        }
        let mut out = String::with_capacity(raw.len().min(VALUE_LIMIT));
        let mut rest = raw;
        // Whether a `)s` may still follow: false once a search for it failed.
        let mut may_close = true;
        loop {
            let Some(at) = rest.find('%') else {
                self.scanned += rest.len();
                break;
            };
            self.scanned += at + 1;
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix('%') {
                out.push('%');
                rest = tail;
            } else if let Some(inner) = after.strip_prefix('(')
                && let Some(close) = self.close(inner, &mut may_close)
            {
                let name = inner[..close].to_lowercase();
                let made = (name, depth + 1);
                if let Some(text) = self.made.get(&made) {
                    out.push_str(text);
                } else {
                    let value = (self.lookup)(&made.0)
                        .ok_or_else(|| bad(format!("'%({})s' refers to no option '{}'", &inner[..close], made.0)))?;
                    let text = self.expand(value, &made.0, depth + 1)?;
                    out.push_str(&text);
                    self.made.insert(made, text);
                }
                rest = &inner[close + 2..];
            } else {
                out.push('%');
                rest = after;
            }
            if out.len() > VALUE_LIMIT {
                return Err(Error::TooLarge);
            }
        }
        out.push_str(rest);
        if out.len() > VALUE_LIMIT {
            return Err(Error::TooLarge);
        }
        Ok(out)
    }

    /// Where the `)s` ending a reference that starts at `inner` is, if any; `may_close`
    /// turns false once a search found none, and later searches are not made.
    fn close(&mut self, inner: &str, may_close: &mut bool) -> Option<usize> {
        if !*may_close {
            return None;
        }
        let close = inner.find(")s");
        self.scanned += close.map_or(inner.len(), |c| c + 2);
        *may_close = close.is_some();
        close
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_in(entries: &[(&str, String)], key: &str) -> Result<String, Error> {
        let lookup = |name: &str| entries.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str());
        expand(lookup(key).unwrap(), key, &lookup).0
    }

    /// The bomb of the issue: 2 KB of references, each level doubling, and many levels.
    #[test]
    fn a_reference_bomb_stops_at_the_value_limit() {
        let mut entries = vec![("x0", "y".repeat(64))];
        for level in 1..=MAX_DEPTH {
            entries.push((["x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10"][level - 1], String::new()));
            let below = format!("%(x{})s", level - 1);
            entries[level].1 = below.repeat(2048 / below.len());
        }
        assert_eq!(expand_in(&entries, "x10"), Err(Error::TooLarge));
        // Below the limit, the same shape expands fully, and once per name and depth.
        let entries = [("a", "%(b)s".repeat(100)), ("b", "%(c)s%(c)s".into()), ("c", "xy".into())];
        assert_eq!(expand_in(&entries, "a").unwrap(), "xy".repeat(200));
    }

    #[test]
    fn exactly_the_limit_is_allowed() {
        let entries = [("a", format!("%(b)s{}", "a".repeat(VALUE_LIMIT - 10))), ("b", "b".repeat(10))];
        assert_eq!(expand_in(&entries, "a").unwrap().len(), VALUE_LIMIT);
        let entries = [("a", format!("%(b)s{}", "a".repeat(VALUE_LIMIT - 9))), ("b", "b".repeat(10))];
        assert_eq!(expand_in(&entries, "a"), Err(Error::TooLarge));
    }

    /// Reusing an expansion does not change where the depth limit is met.
    #[test]
    fn the_depth_limit_is_configparsers() {
        let mut entries: Vec<(String, String)> =
            (0..MAX_DEPTH).map(|i| (format!("k{i}"), format!("%(k{})s", i + 1))).collect();
        entries.push((format!("k{MAX_DEPTH}"), "end".into()));
        let refs: Vec<(&str, String)> = entries.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        assert_eq!(expand_in(&refs, "k0").unwrap(), "end");
        let mut deeper = refs.clone();
        deeper.push(("top", "%(k0)s".into()));
        assert!(matches!(expand_in(&deeper, "top"), Err(Error::Bad { .. })));
        // k9 is made at depth 1 for the first reference, and needed again at depth 10
        // through k0 (where its own reference is one level too deep) or k1 (where it is not).
        deeper.push(("too_deep", "%(k9)s%(k0)s".into()));
        assert!(matches!(expand_in(&deeper, "too_deep"), Err(Error::Bad { .. })));
        deeper.push(("deep_enough", "%(k9)s%(k1)s".into()));
        assert_eq!(expand_in(&deeper, "deep_enough").unwrap(), "endend");
    }

    /// The expansion as it was before the one-pass search (each `%(` searched the rest of
    /// the value for `)s` again): the reference the property below compares with.
    fn old_expand<'a>(
        raw: &str,
        key: &str,
        depth: usize,
        lookup: &dyn Fn(&str) -> Option<&'a str>,
        made: &mut HashMap<(String, usize), String>,
    ) -> Result<String, Error> {
        let bad = |reason: String| Error::Bad { key: key.to_lowercase(), reason };
        if depth > MAX_DEPTH {
            return Err(bad(format!("more than {MAX_DEPTH} levels of %(name)s references")));
        }
        let mut out = String::new();
        let mut rest = raw;
        while let Some(at) = rest.find('%') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix('%') {
                out.push('%');
                rest = tail;
            } else if let Some(inner) = after.strip_prefix('(')
                && let Some(close) = inner.find(")s")
            {
                let name = inner[..close].to_lowercase();
                let key = (name, depth + 1);
                if !made.contains_key(&key) {
                    let value = lookup(&key.0)
                        .ok_or_else(|| bad(format!("'%({})s' refers to no option '{}'", &inner[..close], key.0)))?;
                    let text = old_expand(value, &key.0, depth + 1, lookup, made)?;
                    made.insert(key.clone(), text);
                }
                out.push_str(&made[&key]);
                rest = &inner[close + 2..];
            } else {
                out.push('%');
                rest = after;
            }
            if out.len() > VALUE_LIMIT {
                return Err(Error::TooLarge);
            }
        }
        out.push_str(rest);
        if out.len() > VALUE_LIMIT {
            return Err(Error::TooLarge);
        }
        Ok(out)
    }

    /// Soups of `%(`, `)s`, their halves, `%%`, names (some mis-cased, some missing) and text.
    fn soup(pieces: std::ops::Range<usize>) -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => Just("%("),
            3 => Just(")s"),
            1 => Just(")"),
            1 => Just("s"),
            1 => Just("%"),
            1 => Just("%%"),
            1 => Just("("),
            2 => prop::sample::select(vec!["a", "b", "C", "nope", "%(a)s", "%(B)s", "%(c)s", "%(x y)s"]),
            2 => prop::sample::select(vec!["x", " ", "echo ", "\n", "é", "\n  "]),
        ];
        prop::collection::vec(piece, pieces).prop_map(|pieces| pieces.concat())
    }

    use proptest::prelude::*;

    proptest! {
        /// Small soups, whose names refer to each other (and to themselves): the result,
        /// error included, is exactly the old implementation's, and the searches look at
        /// each raw value expanded at most twice over.
        #[test]
        fn a_soup_expands_as_before_in_one_pass(
            top in soup(0..40),
            a in soup(0..12),
            b in soup(0..12),
            c in soup(0..12),
        ) {
            let entries = [("top", top.clone()), ("a", a), ("b", b), ("c", c)];
            let lookup = |name: &str| entries.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str());
            let (got, scanned) = expand(&top, "top", &lookup);
            let expected = old_expand(&top, "top", 0, &lookup, &mut HashMap::new());
            prop_assert_eq!(&got, &expected, "{:?}", entries);
            // Each (name, depth) is expanded once: the top value, and each other value at
            // each depth below it.
            let others: usize = entries[1..].iter().map(|(_, v)| v.len()).sum();
            let bound = 2 * (top.len() + (MAX_DEPTH + 1) * (others + top.len()));
            prop_assert!(scanned <= bound, "{scanned} bytes looked at, bound {bound}: {:?}", entries);
        }

        /// Long soups (up to 200 KB): the bytes looked at are at most twice the value's
        /// length, whatever the mix of `%(` and `)s` — one pass, where the old search made
        /// a value full of `%(` without a later `)s` quadratic.
        #[test]
        fn a_long_soup_is_expanded_in_linear_steps(
            pieces in soup(0..200),
            times in 1usize..1000,
            tail in soup(0..20),
        ) {
            let raw = format!("{}{tail}", pieces.repeat(times));
            let lookup = |name: &str| matches!(name, "a" | "b" | "c").then_some("");
            let (_, scanned) = expand(&raw, "top", &lookup);
            prop_assert!(scanned <= 2 * raw.len(), "{scanned} bytes looked at for {} bytes", raw.len());
        }
    }

    /// The shape: 1 MB of `%(` without any `)s`. It is cut at the value limit
    /// either way; the searches looked at no more than twice its length.
    #[test]
    fn a_megabyte_of_unclosed_references_is_one_pass() {
        let raw = "%(x) ".repeat(200_000);
        let (result, scanned) = expand(&raw, "action", &|_| None);
        assert_eq!(result, Err(Error::TooLarge));
        assert!(scanned <= 2 * raw.len(), "{scanned}");
        // Within the limit: 16 K `%(` and then 32 K of `)`: the text comes out unchanged.
        let raw = format!("{}{}", "%(".repeat(16 * 1024), ")".repeat(32 * 1024));
        let (result, scanned) = expand(&raw, "action", &|_| None);
        assert_eq!(result.as_deref(), Ok(raw.as_str()));
        assert!(scanned <= 2 * raw.len(), "{scanned}");
    }
}
