//! The INI dialect of `cfn-hup.conf` and the hook files (HUP-CONF-02).
//!
//! The reference read these files with Python 2's `SafeConfigParser`. rust-ini reads them
//! here, and this module accepts the same files, with these rules decided explicitly:
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
//!
//! Who does what: [`lines`] walks the lines with ConfigParser's rules (comments, which
//! line continues a value, which line is an error and its message) where rust-ini's own
//! grammar differs (listed there), and hands rust-ini a canonical text; rust-ini finds the
//! sections, splits and trims keys and values and joins continuation lines. On top of
//! what it returns, this module merges repeated sections and files, folds key case, applies
//! `[DEFAULT]` and `""`, and interpolates — none of which rust-ini does.

mod lines;

use std::path::Path;

/// Quotes and `\` escapes are not ConfigParser's (`a="x"` keeps its quotes, `C:\new` its
/// backslash); indented continuation lines are.
const PARSE_OPTION: ini::ParseOption = ini::ParseOption {
    enabled_quote: false,
    enabled_escape: false,
    enabled_indented_mutiline_value: true,
    enabled_preserve_key_leading_whitespace: false,
};

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

/// ConfigParser's `""` rule, tested on the value's first line (continuation lines are
/// joined after it): `""` alone is the empty string.
fn empty_quotes(mut value: String) -> String {
    if value == "\"\"" || value.starts_with("\"\"\n") {
        value.replace_range(..2, "");
    }
    value
}

impl Ini {
    pub fn new() -> Ini {
        Ini::default()
    }

    /// Reads one more file's text into the same set of sections; `file` names it in errors.
    /// A file with an error adds nothing (rust-ini reads all of it before anything is merged).
    pub fn read_str(&mut self, text: &str, file: &str) -> Result<(), IniError> {
        let canonical = lines::canonical(text, file)?;
        // The canonical text is built to be read without error; should rust-ini still fail,
        // its line (of the canonical text) is mapped back to the file's line.
        let parsed = ini::Ini::load_from_str_opt(&canonical.text, PARSE_OPTION).map_err(|e| {
            let line = canonical.file_line(e.line);
            IniError::Parse { file: file.to_string(), line, text: format!("{}\n", lines::file_line(text, line)) }
        })?;
        // One entry per header, in file order, repeated names included; the general section
        // (keys before any header) is always empty: `lines` refuses such keys first.
        for (name, properties) in parsed.iter() {
            let Some(name) = name else { continue };
            let section = self.section_index(&lines::decode_name(name));
            for (key, value) in properties.iter() {
                let key = lines::decode_key(key).to_lowercase();
                self.section_mut(section).set(key, empty_quotes(lines::decode_value(value)));
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

    /// A file that does not parse adds nothing to what earlier files gave (the caller
    /// reports the error and drops the whole set). HUP-CONF-03.
    #[test]
    fn a_file_with_an_error_adds_nothing() {
        let mut i = Ini::new();
        i.read_str("[a]\nx=1\n", "one").unwrap();
        assert!(i.read_str("[a]\nx=2\n[b]\ny=1\nbroken\n", "two").is_err());
        assert_eq!(i.sections(), ["a"]);
        assert_eq!(get(&i, "a", "x").as_deref(), Some("1"));
    }

    /// Where rust-ini's own reading of the raw text differs from ConfigParser's (see
    /// `lines`), the file still reads as the reference reads it. HUP-CONF-02.
    #[test]
    fn continuation_lines_survive_what_rust_ini_alone_reads_differently() {
        // a comment line or a blank line inside a value does not end it; CRLF adds no line
        let i = ini("[h]\r\naction=a\r\n# note\r\n  b\r\n; note\r\n\r\n  c\r\nnext=x\r\n");
        assert_eq!(get(&i, "h", "action").as_deref(), Some("a\nb\nc"));
        assert_eq!(get(&i, "h", "next").as_deref(), Some("x"));
        // an empty first line is kept (joined with `\n`), as ConfigParser joins it
        let i = ini("[h]\naction=\n  echo a\n  echo b\nq=\"\"\n  more\n");
        assert_eq!(get(&i, "h", "action").as_deref(), Some("\necho a\necho b"));
        assert_eq!(get(&i, "h", "q").as_deref(), Some("\nmore"), "`\"\"` is tested on the first line");
        // `\` at the end of a line does not join the next one; it stays for the shell
        let i = ini("[h]\naction=cfn-init -v \\\n    --stack s \\\nk=v \\\n");
        assert_eq!(get(&i, "h", "action").as_deref(), Some("cfn-init -v \\\n--stack s \\"));
        assert_eq!(get(&i, "h", "k").as_deref(), Some("v \\"));
    }

    /// Quotes, backslashes and `\r` are plain characters, as in ConfigParser. HUP-CONF-02.
    #[test]
    fn quotes_backslashes_and_carriage_returns_are_kept() {
        let i = ini("[h]\na='x' \"y\"\nb=C:\\new\\tab\nc\\=v\nd=one\rtwo\n");
        assert_eq!(get(&i, "h", "a").as_deref(), Some("'x' \"y\""));
        assert_eq!(get(&i, "h", "b").as_deref(), Some("C:\\new\\tab"));
        assert_eq!(get(&i, "h", "c\\").as_deref(), Some("v"), "a key may end with `\\`");
        assert_eq!(get(&i, "h", "d").as_deref(), Some("one\rtwo"));
    }

    /// Headers and keys as ConfigParser reads them. HUP-CONF-02.
    #[test]
    fn headers_and_keys_as_configparser_reads_them() {
        let i = ini("[ spaced ]\nx=1\n[a]junk after the bracket\n  [c]\n[b=1\n  [not a header]\n[d]]\nz=3\n");
        assert_eq!(i.sections(), [" spaced ", "a", "c", "d"], "names are not trimmed; text after `]` is ignored");
        assert_eq!(get(&i, " spaced ", "x").as_deref(), Some("1"));
        assert_eq!(get(&i, "spaced", "x"), None);
        assert_eq!(get(&i, "c", "[b").as_deref(), Some("1\n[not a header]"), "a line that is no header is a key");
        assert_eq!(get(&i, "d", "z").as_deref(), Some("3"));
    }

    /// A line that is neither header, key nor continuation is an error at that line, even
    /// when a key follows it (rust-ini alone reads both lines as one key). HUP-CONF-02/03.
    #[test]
    fn a_line_without_separator_is_an_error_even_before_a_key() {
        let e = Ini::new().read_str("[a]\nx=1\n# c\njust words\ny=2\n", "/etc/cfn/hooks.d/x.conf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "File contains parsing errors: /etc/cfn/hooks.d/x.conf\n\t[line 4]: \"just words\\n\""
        );
        let e = Ini::new().read_str("\n; c\nstack=x\n[main]\n", "f").unwrap_err();
        assert_eq!(e, IniError::MissingSectionHeader { file: "f".into(), line: 3, text: "stack=x\n".into() });
        let e = Ini::new().read_str("[a]\r\nx\r\n", "f").unwrap_err();
        assert_eq!(e, IniError::Parse { file: "f".into(), line: 2, text: "x\n".into() }, "no `\\r` in the text");
    }
}
