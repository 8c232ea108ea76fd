//! ConfigParser's line rules, applied before rust-ini reads a file (HUP-CONF-02).
//!
//! rust-ini 0.21 (with the options of `super::PARSE_OPTION`) reads a grammar close to, but
//! not the same as, the one `cfn-hup` files are written in. Tried on the raw text, it:
//!
//! * accepts a line with no `=` or `:`: its text becomes the start of the next key
//!   (`just words` then `x=1` is the key `"just words\nx"`), and keys before any header go
//!   to a general section — ConfigParser rejects both, naming the line;
//! * ends a multi-line value at a comment line, then reads the indented line after it as a
//!   key (an indented comment line is read as a key too); keeps a blank line inside a value
//!   as an empty line; adds an empty line for every `\r\n` inside a multi-line value and
//!   fails on a lone `\r`;
//! * joins the next line after a `\` at the end of a line (even with escapes off);
//! * drops an empty first line of a multi-line value (`action=` then indented lines);
//! * trims section names, accepts `[]`, starts a key with the text after `]`, and reads any
//!   line starting with `[` as a header up to the next `]`, on whatever line it is.
//!
//! So the lines are walked here as ConfigParser walks them (the rules in `super`'s
//! documentation), its errors are reported with its line numbers and texts, and rust-ini
//! is handed a canonical text that it reads exactly: only `[name]`, `key=value` and
//! tab-indented continuation lines, no comments or blank lines. In that text every name,
//! key and first value line starts with [`MARK`] (a section name also ends with it), so
//! nothing rust-ini trims or reads specially is at either end, and `\` and `\r` are
//! escaped as `\\` and `\r`. rust-ini does the rest: splitting at the first `=`/`:`,
//! trimming, joining continuation lines with `\n`, and keeping every section and key it
//! saw, repeated ones included, in order. [`decode_name`], [`decode_key`] and
//! [`decode_value`] undo the marks and escapes.

use super::IniError;

/// Starts every name, key and value in the canonical text (and ends section names).
const MARK: char = '|';

/// The text handed to rust-ini, and where each of its lines came from.
#[derive(Debug)]
pub(super) struct Canonical {
    pub text: String,
    /// The 1-based number, in the file, of each canonical line.
    origin: Vec<usize>,
}

impl Canonical {
    /// The file's line number for a 1-based line of the canonical text (rust-ini's errors
    /// carry a line and a column of the canonical text; ConfigParser's messages name only
    /// the line; past the end means the last line).
    pub fn file_line(&self, canonical_line: usize) -> usize {
        let index = canonical_line.saturating_sub(1).min(self.origin.len().saturating_sub(1));
        self.origin.get(index).copied().unwrap_or(1)
    }

    fn push(&mut self, origin: usize, parts: &[&str]) {
        for part in parts {
            self.text.push_str(part);
        }
        self.text.push('\n');
        self.origin.push(origin);
    }
}

/// One line of the file as ConfigParser sees it: `\r` before the `\n` removed.
pub(super) fn file_line(text: &str, lineno: usize) -> &str {
    let raw = text.split('\n').nth(lineno.saturating_sub(1)).unwrap_or("");
    raw.strip_suffix('\r').unwrap_or(raw)
}

/// Walks `text` with ConfigParser's line rules; `file` names it in errors.
pub(super) fn canonical(text: &str, file: &str) -> Result<Canonical, IniError> {
    let mut out = Canonical { text: String::with_capacity(text.len() + 64), origin: Vec::new() };
    // A header was seen; a key was seen since the last header (so an indented line continues it).
    let mut in_section = false;
    let mut in_value = false;
    for (index, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let lineno = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if in_value {
                out.push(lineno, &["\t", &escape(trimmed)]);
                continue;
            }
            if trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
        }
        if let Some(rest) = trimmed.strip_prefix('[')
            && let Some(end) = rest.find(']')
            && end > 0
        {
            let mark = MARK.to_string();
            out.push(lineno, &["[", &mark, &escape(&rest[..end]), &mark, "]"]);
            in_section = true;
            in_value = false;
            continue;
        }
        if !in_section {
            return Err(IniError::MissingSectionHeader {
                file: file.to_string(),
                line: lineno,
                text: format!("{line}\n"),
            });
        }
        match trimmed.find(['=', ':']) {
            Some(at) if !trimmed[..at].trim().is_empty() => {
                let mark = MARK.to_string();
                let key = escape(trimmed[..at].trim());
                let value = escape(trimmed[at + 1..].trim());
                out.push(lineno, &[&mark, &key, "=", &mark, &value]);
                in_value = true;
            }
            _ => return Err(IniError::Parse { file: file.to_string(), line: lineno, text: format!("{line}\n") }),
        }
    }
    Ok(out)
}

/// `\` would join lines (at a line's end) or eat a `=` (at a key's end); `\r` would end a value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// A section name as rust-ini returns it from the canonical text.
pub(super) fn decode_name(name: &str) -> String {
    let name = name.strip_prefix(MARK).unwrap_or(name);
    unescape(name.strip_suffix(MARK).unwrap_or(name))
}

/// A key as rust-ini returns it from the canonical text (case kept).
pub(super) fn decode_key(key: &str) -> String {
    unescape(key.strip_prefix(MARK).unwrap_or(key))
}

/// A value as rust-ini returns it from the canonical text: its lines joined with `\n`.
pub(super) fn decode_value(value: &str) -> String {
    unescape(value.strip_prefix(MARK).unwrap_or(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip() {
        for text in ["", "a", "\\", "a\\", "\\\\r", "a\rb", "\\r\r", "C:\\new"] {
            assert_eq!(unescape(&escape(text)), text);
            assert!(!escape(text).contains('\r'));
        }
    }

    #[test]
    fn canonical_text_has_only_headers_entries_and_continuations() {
        let c = canonical("; c\n[ a ]\r\n\nKey : v \\\n # c\n  more\n", "f").unwrap();
        assert_eq!(c.text, "[| a |]\n|Key=|v \\\\\n\t# c\n\tmore\n");
        assert_eq!((c.file_line(1), c.file_line(2), c.file_line(4), c.file_line(99)), (2, 4, 6, 6));
    }
}
