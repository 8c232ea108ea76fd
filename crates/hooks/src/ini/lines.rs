//! ConfigParser's line rules (HUP-CONF-02): which line is a header, an entry, a
//! continuation of the value before it, a comment, or an error — and with which number
//! and text the error names it.
//!
//! This is the only parse of a file. rust-ini was tried on the raw text and dropped: its
//! result cannot be corrected afterwards, because it has already lost what the rules need
//! (it returns no line numbers, and on the raw text it reads `just words` then `x=1` as
//! the one key `"just words\nx"`, ends a value at a comment line and reads the indented
//! line after it as part of a key, joins a line ending in `\` with the next one, drops an
//! empty first line of a multi-line value, trims section names, and fails on a lone `\r`).
//! Making it read a file exactly took a second walk of every line and a re-encoded text
//! for it to parse again, which the walk alone already gives.

use super::IniError;

/// What a significant line of a file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Line {
    /// `[name]`: the name as written between the brackets (not trimmed), and its line.
    Header(String, usize),
    /// `key = value`: key and value trimmed, the value's continuation lines joined to it
    /// with `\n` (each trimmed), and the line of the key.
    Entry { key: String, value: String, line: usize },
}

/// One line of the file as ConfigParser sees it: `\r` before the `\n` removed.
fn without_cr(raw: &str) -> &str {
    raw.strip_suffix('\r').unwrap_or(raw)
}

/// Walks `text` with ConfigParser's line rules; `file` names it in errors.
pub(super) fn parse(text: &str, file: &str) -> Result<Vec<Line>, IniError> {
    let mut out: Vec<Line> = Vec::new();
    // A header was seen; a key was seen since the last header (so an indented line continues it).
    let mut in_section = false;
    let mut in_value = false;
    for (index, raw) in text.split('\n').enumerate() {
        let line = without_cr(raw);
        let lineno = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if in_value && let Some(Line::Entry { value, .. }) = out.last_mut() {
                value.push('\n');
                value.push_str(trimmed);
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
            out.push(Line::Header(rest[..end].to_string(), lineno));
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
                let key = trimmed[..at].trim().to_string();
                let value = trimmed[at + 1..].trim().to_string();
                out.push(Line::Entry { key, value, line: lineno });
                in_value = true;
            }
            _ => return Err(IniError::Parse { file: file.to_string(), line: lineno, text: format!("{line}\n") }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_entries_and_continuations() {
        let lines = parse("; c\n[ a ]\r\n\nKey : v \\\n # c\n  more\n", "f").unwrap();
        assert_eq!(
            lines,
            [
                Line::Header(" a ".into(), 2),
                Line::Entry { key: "Key".into(), value: "v \\\n# c\nmore".into(), line: 4 }
            ]
        );
    }
}
