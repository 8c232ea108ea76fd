//! The INI dialect of `cfn-hup.conf` and the hook files (HUP-CONF-02).
//!
//! The reference read these files with Python 2's `SafeConfigParser`. This reader
//! accepts the same files, with these rules decided explicitly:
//!
//! * `[section]` headers; section names are case-sensitive, `[DEFAULT]` supplies values
//!   to every section; a section or key seen again (in the same or a later file) merges,
//!   the last value winning;
//! * `key = value` or `key: value` (split at the first `=` or `:`); keys are
//!   case-insensitive; values are trimmed; a value of exactly `""` is the empty string;
//! * a line starting with whitespace continues the previous value (joined with `\n`);
//! * blank lines and lines starting with `#` or `;` are comments. There are **no inline
//!   comments**: `action=echo a ; echo b` keeps the whole command, as Python 3 (the 2.0
//!   line) reads it, where Python 2 silently cut the command at ` ;` (WEAK-ini);
//! * `%%` is a literal `%` and `%(name)s` is replaced by the value of `name` from the same
//!   section or `[DEFAULT]`, as in the reference; unlike the reference, any other `%` is
//!   kept as it is instead of killing cfn-hup with an interpolation error (WEAK-ini).

use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IniError {
    #[error("File contains no section headers.\nfile: {file}, line: {line}\n{text:?}")]
    MissingSectionHeader { file: String, line: usize, text: String },
    #[error("File contains parsing errors: {file}\n\t[line {line}]: {text:?}")]
    Parse { file: String, line: usize, text: String },
    #[error("Bad value substitution: section [{section}], option {key}: {reason}")]
    Interpolation { section: String, key: String, reason: String },
}

#[derive(Debug, Clone, Default)]
struct Section {
    name: String,
    entries: Vec<(String, String)>,
}

impl Section {
    fn set(&mut self, key: String, value: String) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }
    fn raw(&self, key: &str) -> Option<&str> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Sections read from one or more files, in order of first appearance.
#[derive(Debug, Clone, Default)]
pub struct Ini {
    defaults: Section,
    sections: Vec<Section>,
}

const DEFAULT_SECTION: &str = "DEFAULT";
const MAX_INTERPOLATION_DEPTH: usize = 10;

impl Ini {
    pub fn new() -> Ini {
        Ini::default()
    }

    /// Reads one more file's text into the same set of sections; `file` names it in errors.
    pub fn read_str(&mut self, text: &str, file: &str) -> Result<(), IniError> {
        // (index into sections or usize::MAX for DEFAULT, key) of the value a continuation extends
        let mut current: Option<usize> = None;
        let mut last_key: Option<String> = None;
        for (index, raw) in text.split('\n').enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let lineno = index + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if line.starts_with(char::is_whitespace) {
                if let (Some(section), Some(key)) = (current, &last_key) {
                    let target = self.section_mut(section);
                    if let Some(entry) = target.entries.iter_mut().find(|(k, _)| k == key) {
                        entry.1.push('\n');
                        entry.1.push_str(trimmed);
                    }
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
                let name = &rest[..end];
                current = Some(self.section_index(name));
                last_key = None;
                continue;
            }
            let Some(section) = current else {
                return Err(IniError::MissingSectionHeader {
                    file: file.to_string(),
                    line: lineno,
                    text: format!("{line}\n"),
                });
            };
            let split = trimmed.find(['=', ':']);
            match split {
                Some(at) if at > 0 && !trimmed[..at].trim().is_empty() => {
                    let key = trimmed[..at].trim().to_lowercase();
                    let mut value = trimmed[at + 1..].trim().to_string();
                    if value == "\"\"" {
                        value.clear();
                    }
                    self.section_mut(section).set(key.clone(), value);
                    last_key = Some(key);
                }
                _ => {
                    return Err(IniError::Parse { file: file.to_string(), line: lineno, text: format!("{line}\n") });
                }
            }
        }
        Ok(())
    }

    /// Reads a file (bytes that are not UTF-8 are replaced).
    pub fn read_file(&mut self, path: &Path) -> std::io::Result<Result<(), IniError>> {
        let bytes = std::fs::read(path)?;
        Ok(self.read_str(&String::from_utf8_lossy(&bytes), &path.display().to_string()))
    }

    fn section_index(&mut self, name: &str) -> usize {
        if name == DEFAULT_SECTION {
            return usize::MAX;
        }
        match self.sections.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.sections.push(Section { name: name.to_string(), entries: Vec::new() });
                self.sections.len() - 1
            }
        }
    }

    fn section_mut(&mut self, index: usize) -> &mut Section {
        if index == usize::MAX { &mut self.defaults } else { &mut self.sections[index] }
    }

    /// Section names in order of first appearance, without `DEFAULT`.
    pub fn sections(&self) -> Vec<String> {
        self.sections.iter().map(|s| s.name.clone()).collect()
    }

    pub fn has_section(&self, name: &str) -> bool {
        self.sections.iter().any(|s| s.name == name)
    }

    fn raw(&self, section: &str, key: &str) -> Option<&str> {
        let key = key.to_lowercase();
        self.sections.iter().find(|s| s.name == section).and_then(|s| s.raw(&key)).or_else(|| self.defaults.raw(&key))
    }

    /// The value of `key` in `section` (or `[DEFAULT]`), with `%%` and `%(name)s` expanded.
    /// `None` when the section or key is missing.
    pub fn get(&self, section: &str, key: &str) -> Result<Option<String>, IniError> {
        if !self.has_section(section) {
            return Ok(None);
        }
        match self.raw(section, key) {
            None => Ok(None),
            Some(raw) => self.interpolate(section, key, raw, 0).map(Some),
        }
    }

    fn interpolate(&self, section: &str, key: &str, raw: &str, depth: usize) -> Result<String, IniError> {
        let error =
            |reason: String| IniError::Interpolation { section: section.to_string(), key: key.to_lowercase(), reason };
        if depth > MAX_INTERPOLATION_DEPTH {
            return Err(error(format!("more than {MAX_INTERPOLATION_DEPTH} levels of %(name)s references")));
        }
        let mut out = String::with_capacity(raw.len());
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
                let name = &inner[..close];
                let value = self
                    .raw(section, name)
                    .ok_or_else(|| error(format!("'%({name})s' refers to no option {:?}", name.to_lowercase())))?;
                out.push_str(&self.interpolate(section, name, value, depth + 1)?);
                rest = &inner[close + 2..];
            } else {
                out.push('%');
                rest = after;
            }
        }
        out.push_str(rest);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ini(text: &str) -> Ini {
        let mut ini = Ini::new();
        ini.read_str(text, "t.conf").unwrap();
        ini
    }

    fn get(ini: &Ini, s: &str, k: &str) -> Option<String> {
        ini.get(s, k).unwrap()
    }

    #[test]
    fn keys_are_case_insensitive_values_trimmed_both_separators() {
        let i = ini("[main]\nStack = my-stack  \nREGION: eu-west-1\nurl=http://h:1/x=y\nempty=\nquoted=\"\"\n");
        assert_eq!(get(&i, "main", "stack").as_deref(), Some("my-stack"));
        assert_eq!(get(&i, "main", "Region").as_deref(), Some("eu-west-1"));
        assert_eq!(get(&i, "main", "url").as_deref(), Some("http://h:1/x=y"));
        assert_eq!(get(&i, "main", "empty").as_deref(), Some(""));
        assert_eq!(get(&i, "main", "quoted").as_deref(), Some(""));
        assert_eq!(get(&i, "Main", "stack"), None, "section names are case-sensitive");
        assert_eq!(get(&i, "main", "missing"), None);
    }

    #[test]
    fn comments_continuations_and_no_inline_comments() {
        let text = "# top\n; also\n[h]\n  # indented comment before any key\naction=echo a ; echo b # not a comment\n  echo c\n\n\tdone\npath = x\r\n";
        let i = ini(text);
        assert_eq!(get(&i, "h", "action").as_deref(), Some("echo a ; echo b # not a comment\necho c\ndone"));
        assert_eq!(get(&i, "h", "path").as_deref(), Some("x"));
    }

    #[test]
    fn percent_rules() {
        let i = ini("[DEFAULT]\nbase=/opt\n[h]\na=date +%%s\nb=%(base)s/bin\nc=100% sure %d\nd=%(nope)s\ne=%(e)s\n");
        assert_eq!(get(&i, "h", "a").as_deref(), Some("date +%s"));
        assert_eq!(get(&i, "h", "b").as_deref(), Some("/opt/bin"));
        assert_eq!(get(&i, "h", "c").as_deref(), Some("100% sure %d"));
        assert!(matches!(i.get("h", "d"), Err(IniError::Interpolation { .. })));
        assert!(matches!(i.get("h", "e"), Err(IniError::Interpolation { .. })), "self reference terminates");
        assert_eq!(get(&i, "h", "base").as_deref(), Some("/opt"), "DEFAULT applies to every section");
        assert_eq!(i.sections(), ["h"]);
    }

    #[test]
    fn later_files_and_repeated_sections_merge() {
        let mut i = Ini::new();
        i.read_str("[a]\nx=1\ny=1\n[b]\nx=b\n[a]\ny=2\n", "one").unwrap();
        i.read_str("[c]\nx=c\n[a]\nx=3\n", "two").unwrap();
        assert_eq!(i.sections(), ["a", "b", "c"]);
        assert_eq!(get(&i, "a", "x").as_deref(), Some("3"));
        assert_eq!(get(&i, "a", "y").as_deref(), Some("2"));
    }

    #[test]
    fn errors_name_file_and_line() {
        let mut i = Ini::new();
        let e = i.read_str("triggers=post.update\n", "/etc/cfn/hooks.conf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "File contains no section headers.\nfile: /etc/cfn/hooks.conf, line: 1\n\"triggers=post.update\\n\""
        );
        let e = Ini::new().read_str("[a]\nx=1\njust words\n", "f").unwrap_err();
        assert_eq!(e, IniError::Parse { file: "f".into(), line: 3, text: "just words\n".into() });
        assert!(Ini::new().read_str("[a]\n=value\n", "f").is_err());
        assert!(Ini::new().read_str("[]\n", "f").is_err());
    }
}
