//! The INI dialect of `cfn-hup.conf` and the hook files (HUP-CONF-02).
//!
//! The reference read these files with Python 2's `SafeConfigParser`. [`lines`] reads
//! them here, and this module accepts the same files, with these rules decided explicitly:
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
//!   kept as it is instead of killing cfn-hup with an interpolation error (WEAK-ini);
//! * a value's expansion is bounded: at most [`VALUE_LIMIT`] bytes for one value and
//!   [`FILE_LIMIT`] for all the values read from one file, so that a few kilobytes of
//!   `%(name)s` references cannot make gigabytes (the reference has no such bound).
//!   Each expansion is one pass over the values it uses; all expansions together search
//!   at most [`SEARCH_LIMIT`] bytes and [`SEARCH_PER_BYTE_READ`] per byte of the files,
//!   so that one long value that many sections refer to cannot make reading take minutes;
//!   sections and keys are found through hash maps. Reading is linear in the files.
//!
//! Who does what: [`lines`] walks the lines with ConfigParser's rules (the only parse of a
//! file; why not rust-ini is said there); this module merges repeated sections and files,
//! folds key case, applies `[DEFAULT]` and `""`; [`interpolation`] expands `%%` and
//! `%(name)s`.

mod interpolation;
mod lines;

use lines::Line;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

pub use interpolation::{FILE_LIMIT, VALUE_LIMIT};

/// The most bytes of raw values the expansions of one set of files may search in all,
/// beside [`SEARCH_PER_BYTE_READ`] per byte of the files: one expansion is one pass, but a
/// long value whose references expand to nothing (`%(e)s%(e)s…`, 500 KB) referred to by
/// every one of a thousand hooks is searched a thousand times over, and took 13 s.
pub const SEARCH_LIMIT: usize = 4 * FILE_LIMIT;
/// See [`SEARCH_LIMIT`]: with it, the time all reads take is linear in the files' size.
/// Real files search a few times their size: each value is read once and refers to
/// small ones; the values of a file expand to at most [`FILE_LIMIT`] bytes anyway.
pub const SEARCH_PER_BYTE_READ: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IniError {
    #[error("File contains no section headers.\nfile: {file}, line: {line}\n{}", python_repr(.text))]
    MissingSectionHeader { file: String, line: usize, text: String },
    #[error("File contains parsing errors: {file}\n\t[line {line}]: {}", python_repr(.text))]
    Parse { file: String, line: usize, text: String },
    #[error("Bad value substitution: section [{section}], option {key}: {reason}")]
    Interpolation { section: String, key: String, reason: String },
    #[error(
        "Bad value substitution: section [{section}], option {key} in {file}: the value expands to more than {VALUE_LIMIT} bytes"
    )]
    ValueTooLarge { section: String, key: String, file: String },
    #[error(
        "Bad value substitution: section [{section}], option {key} in {file}: the values of {file} expand to more than {FILE_LIMIT} bytes in all"
    )]
    FileTooLarge { section: String, key: String, file: String },
    #[error(
        "Bad value substitution: section [{section}], option {key} in {file}: the values read so far made their references search more than {limit} bytes of text in all"
    )]
    TooMuchSearching { section: String, key: String, file: String, limit: usize },
}

/// A line's text as ConfigParser's messages quote it (Python's `repr` of a string).
fn python_repr(text: &str) -> String {
    let mut out = String::new();
    cfn_python::repr::write_str_repr(&mut out, text);
    out
}

#[derive(Debug, Clone, Default)]
struct Section {
    name: String,
    /// Where its header first appears: the index of the file, and the line.
    header: (usize, usize),
    /// Key (lower case) → raw value, the index of the file that set it and the line. Keys
    /// have no order that matters; a key set again is replaced where it is.
    entries: HashMap<String, (String, usize, usize)>,
}

impl Section {
    fn set(&mut self, key: String, value: String, file: usize, line: usize) {
        self.entries.insert(key, (value, file, line));
    }
    fn raw(&self, key: &str) -> Option<(&str, usize)> {
        self.entries.get(key).map(|(v, f, _)| (v.as_str(), *f))
    }
}

/// Where something was read: the file (as named to [`Ini::read_str`]) and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: usize,
}

/// Sections read from one or more files, in order of first appearance.
#[derive(Debug, Clone, Default)]
pub struct Ini {
    defaults: Section,
    sections: Vec<Section>,
    /// Section name → its index in `sections`: reading and looking up a section does not
    /// walk the others (a file of 1 MB of headers took minutes). std's maps hash with keys
    /// chosen at random, so names made to collide cannot slow them down.
    index: HashMap<String, usize>,
    /// The files read, in order (their names as given to [`Ini::read_str`]).
    files: Vec<String>,
    /// Bytes of expanded values handed out so far, per file (see [`FILE_LIMIT`]).
    expanded: RefCell<Vec<usize>>,
    /// Bytes of the files read, and of raw values searched by expansions so far (see
    /// [`SEARCH_LIMIT`]).
    read: usize,
    searched: std::cell::Cell<usize>,
}

const DEFAULT_SECTION: &str = "DEFAULT";

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
    /// A file with an error adds nothing: it is parsed whole before anything is merged.
    pub fn read_str(&mut self, text: &str, file: &str) -> Result<(), IniError> {
        let lines = lines::parse(text, file)?;
        let file_index = self.files.len();
        self.files.push(file.to_string());
        self.expanded.get_mut().push(0);
        self.read = self.read.saturating_add(text.len());
        let mut section = None;
        for line in lines {
            match line {
                Line::Header(name, line) => section = Some(self.section_index(&name, (file_index, line))),
                // `lines` refuses an entry before the first header.
                Line::Entry { key, value, line } => {
                    let Some(index) = section else { continue };
                    self.section_mut(index).set(key.to_lowercase(), empty_quotes(value), file_index, line);
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

    fn section_index(&mut self, name: &str, header: (usize, usize)) -> usize {
        if name == DEFAULT_SECTION {
            return usize::MAX;
        }
        if let Some(&index) = self.index.get(name) {
            return index;
        }
        self.sections.push(Section { name: name.to_string(), header, entries: HashMap::new() });
        self.index.insert(name.to_string(), self.sections.len() - 1);
        self.sections.len() - 1
    }

    fn section_mut(&mut self, index: usize) -> &mut Section {
        if index == usize::MAX { &mut self.defaults } else { &mut self.sections[index] }
    }

    /// Section names in order of first appearance, without `DEFAULT`.
    pub fn sections(&self) -> Vec<String> {
        self.sections.iter().map(|s| s.name.clone()).collect()
    }

    pub fn has_section(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    fn section(&self, name: &str) -> Option<&Section> {
        self.index.get(name).and_then(|&index| self.sections.get(index))
    }

    /// The raw value of `key` (lower case) in `section` or `[DEFAULT]`, and its file.
    fn raw(&self, section: &str, key: &str) -> Option<(&str, usize)> {
        self.section(section).and_then(|s| s.raw(key)).or_else(|| self.defaults.raw(key))
    }

    fn place(&self, (file, line): (usize, usize)) -> Place {
        Place { file: self.files.get(file).cloned().unwrap_or_default(), line }
    }

    /// Where the header of `section` first appears.
    pub fn section_place(&self, section: &str) -> Option<Place> {
        self.section(section).map(|s| self.place(s.header))
    }

    /// The keys of `section` itself (not `[DEFAULT]`'s), lower case, each with its raw
    /// value and where it was set, in the order of their lines: what a section holds, for
    /// saying why a hook was left out.
    pub fn entries(&self, section: &str) -> Vec<(String, String, Place)> {
        let Some(section) = self.section(section) else { return Vec::new() };
        let mut entries: Vec<(String, String, (usize, usize))> =
            section.entries.iter().map(|(k, (v, f, l))| (k.clone(), v.clone(), (*f, *l))).collect();
        entries.sort_by_key(|(_, _, at)| *at);
        entries.into_iter().map(|(k, v, at)| (k, v, self.place(at))).collect()
    }

    /// The file that set `key` in `section` (or `[DEFAULT]`), for errors about its value.
    pub fn file_of(&self, section: &str, key: &str) -> Option<String> {
        let (_, file) = self.raw(section, &key.to_lowercase())?;
        self.files.get(file).cloned()
    }

    /// The value of `key` in `section` (or `[DEFAULT]`), with `%%` and `%(name)s` expanded.
    /// `None` when the section or key is missing. Every value returned counts toward the
    /// [`FILE_LIMIT`] of the file that set it (cfn-hup reads each key once).
    pub fn get(&self, section: &str, key: &str) -> Result<Option<String>, IniError> {
        if !self.has_section(section) {
            return Ok(None);
        }
        let key = key.to_lowercase();
        let Some((raw, file)) = self.raw(section, &key) else {
            return Ok(None);
        };
        let file_name = || self.files.get(file).cloned().unwrap_or_default();
        let lookup = |name: &str| self.raw(section, name).map(|(value, _)| value);
        let (value, searched) = interpolation::expand(raw, &key, &lookup);
        let searched = self.searched.get().saturating_add(searched);
        self.searched.set(searched);
        let limit = SEARCH_LIMIT.saturating_add(self.read.saturating_mul(SEARCH_PER_BYTE_READ));
        if searched > limit {
            return Err(IniError::TooMuchSearching { section: section.to_string(), key, file: file_name(), limit });
        }
        let value = value.map_err(|e| match e {
            interpolation::Error::TooLarge => {
                IniError::ValueTooLarge { section: section.to_string(), key: key.clone(), file: file_name() }
            }
            interpolation::Error::Bad { key, reason } => {
                IniError::Interpolation { section: section.to_string(), key, reason }
            }
        })?;
        let mut expanded = self.expanded.borrow_mut();
        if let Some(total) = expanded.get_mut(file) {
            *total = total.saturating_add(value.len());
            if *total > FILE_LIMIT {
                return Err(IniError::FileTooLarge { section: section.to_string(), key, file: file_name() });
            }
        }
        Ok(Some(value))
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
            "File contains no section headers.\nfile: /etc/cfn/hooks.conf, line: 1\n'triggers=post.update\\n'"
        );
        let e = Ini::new().read_str("[a]\nx=1\njust words\n", "f").unwrap_err();
        assert_eq!(e, IniError::Parse { file: "f".into(), line: 3, text: "just words\n".into() });
        assert!(Ini::new().read_str("[a]\n=value\n", "f").is_err());
        assert!(Ini::new().read_str("[]\n", "f").is_err());
    }

    /// What the values written in one file expand to in all is bounded too, wherever
    /// their references lead; the error names the option, its section and its file.
    #[test]
    fn the_values_of_a_file_expand_to_at_most_the_file_limit() {
        let mut i = Ini::new();
        i.read_str(&format!("[DEFAULT]\nbig={}\n", "b".repeat(VALUE_LIMIT / 2)), "defaults.conf").unwrap();
        let sections = FILE_LIMIT / VALUE_LIMIT + 1;
        let text: String = (0..sections).map(|n| format!("[s{n}]\naction=%(big)s%(big)s\n")).collect();
        i.read_str(&text, "hooks.conf").unwrap();
        for n in 0..sections - 1 {
            assert_eq!(get(&i, &format!("s{n}"), "action").map(|v| v.len()), Some(VALUE_LIMIT));
        }
        let last = format!("s{}", sections - 1);
        assert_eq!(
            i.get(&last, "action"),
            Err(IniError::FileTooLarge { section: last.clone(), key: "action".into(), file: "hooks.conf".into() })
        );
        assert_eq!(
            IniError::FileTooLarge { section: last.clone(), key: "action".into(), file: "hooks.conf".into() }
                .to_string(),
            format!(
                "Bad value substitution: section [{last}], option action in hooks.conf: the values of hooks.conf expand to more than 1048576 bytes in all"
            )
        );
        // The bound is the file's where the option read was written.
        assert_eq!(get(&i, &last, "big").map(|v| v.len()), Some(VALUE_LIMIT / 2));
    }

    /// A long value whose references expand to nothing, referred to by every one of many
    /// sections, is searched again for each read: all the reads together search at most
    /// [`SEARCH_LIMIT`] and [`SEARCH_PER_BYTE_READ`] bytes per byte of the files, then
    /// fail naming the option.
    #[test]
    fn the_searching_of_all_reads_is_bounded_by_the_files_size() {
        let big = "%(e)s".repeat(100_000);
        let hooks: String = (0..2000).map(|n| format!("[h{n}]\naction=%(big)sx\n")).collect();
        let text = format!("[DEFAULT]\ne=\nbig={big}\n{hooks}");
        let mut i = Ini::new();
        i.read_str(&text, "hooks.conf").unwrap();
        let limit = SEARCH_LIMIT + SEARCH_PER_BYTE_READ * text.len();
        let mut read = 0;
        let error = loop {
            match i.get(&format!("h{read}"), "action") {
                Ok(value) => assert_eq!(value.as_deref(), Some("x")),
                Err(e) => break e,
            }
            read += 1;
        };
        // Each read searches the 500 KB value (400 KB of it twice): some 20 reads, not 2000.
        assert!((10..40).contains(&read), "{read}");
        assert_eq!(
            error,
            IniError::TooMuchSearching {
                section: format!("h{read}"),
                key: "action".into(),
                file: "hooks.conf".into(),
                limit
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "Bad value substitution: section [h{read}], option action in hooks.conf: the values read so far made their references search more than {limit} bytes of text in all"
            )
        );
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

    /// Where rust-ini's reading of the raw text differs from ConfigParser's (see `lines`),
    /// the file reads as the reference reads it. HUP-CONF-02.
    #[test]
    fn continuation_lines_as_configparser_reads_them() {
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
    /// when a key follows it (rust-ini reads both lines as one key). HUP-CONF-02/03.
    #[test]
    fn a_line_without_separator_is_an_error_even_before_a_key() {
        let e = Ini::new().read_str("[a]\nx=1\n# c\njust words\ny=2\n", "/etc/cfn/hooks.d/x.conf").unwrap_err();
        assert_eq!(e.to_string(), "File contains parsing errors: /etc/cfn/hooks.d/x.conf\n\t[line 4]: 'just words\\n'");
        let e = Ini::new().read_str("\n; c\nstack=x\n[main]\n", "f").unwrap_err();
        assert_eq!(e, IniError::MissingSectionHeader { file: "f".into(), line: 3, text: "stack=x\n".into() });
        let e = Ini::new().read_str("[a]\r\nx\r\n", "f").unwrap_err();
        assert_eq!(e, IniError::Parse { file: "f".into(), line: 2, text: "x\n".into() }, "no `\\r` in the text");
    }
}
