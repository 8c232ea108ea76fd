//! Command lines parsed the way Python's `optparse` parses them, because user-data
//! scripts depend on its quirks (CLI-COMMON-02..04): `--opt value`, `--opt=value`,
//! `-ovalue`, unambiguous prefixes of long options, options and positionals
//! interleaved, `--` ending the options; errors print the usage, a blank line and
//! `<prog>: error: <message>` to stderr with exit status 2; `-h/--help` prints help
//! built by the same layout rules as optparse's `IndentedHelpFormatter`.
//!
//! clap cannot reproduce these error texts, prefix rules or the help layout, so the
//! tools describe their options in a table here and get typed values back.

pub mod options;
pub mod tables;

use cfn_python::repr::short_str_repr as py_repr;
use std::collections::HashMap;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `store_true`.
    Flag,
    /// A string value.
    Value,
    /// An integer, parsed like optparse (`0x`, `0b` and leading-`0` octal included).
    Int,
    /// One of a fixed set of strings.
    Choice(&'static [&'static str]),
}

#[derive(Debug, Clone)]
pub struct Opt {
    pub short: Option<char>,
    pub long: &'static str,
    pub dest: &'static str,
    pub kind: Kind,
    pub metavar: Option<&'static str>,
    pub help: &'static str,
}

impl Opt {
    pub const fn flag(short: Option<char>, long: &'static str, dest: &'static str, help: &'static str) -> Opt {
        Opt { short, long, dest, kind: Kind::Flag, metavar: None, help }
    }
    pub const fn value(
        short: Option<char>,
        long: &'static str,
        dest: &'static str,
        metavar: &'static str,
        help: &'static str,
    ) -> Opt {
        Opt { short, long, dest, kind: Kind::Value, metavar: Some(metavar), help }
    }
    pub const fn with_kind(mut self, kind: Kind) -> Opt {
        self.kind = kind;
        self
    }

    fn takes_value(&self) -> bool {
        self.kind != Kind::Flag
    }

    /// `-s STACK, --stack=STACK` as optparse shows it.
    fn strings(&self) -> String {
        let mut parts = Vec::new();
        if self.takes_value() {
            let metavar = self.metavar.map(str::to_string).unwrap_or_else(|| self.dest.to_uppercase());
            if let Some(c) = self.short {
                parts.push(format!("-{c} {metavar}"));
            }
            parts.push(format!("--{}={metavar}", self.long));
        } else {
            if let Some(c) = self.short {
                parts.push(format!("-{c}"));
            }
            parts.push(format!("--{}", self.long));
        }
        parts.join(", ")
    }
}

#[derive(Debug, Clone)]
pub struct Group {
    pub title: &'static str,
    pub description: Option<&'static str>,
    pub options: Vec<Opt>,
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Flag,
    Text(String),
    Int(i64),
}

#[derive(Debug, Default, Clone)]
pub struct Parsed {
    values: HashMap<&'static str, Value>,
    pub positionals: Vec<String>,
}

impl Parsed {
    /// The string value of an option, `None` when not given.
    pub fn text(&self, dest: &str) -> Option<String> {
        match self.values.get(dest) {
            Some(Value::Text(s)) => Some(s.clone()),
            _ => None,
        }
    }
    // Read by the tools with integer options (cfn-signal -e) as they are built.
    #[allow(dead_code)]
    pub fn int(&self, dest: &str) -> Option<i64> {
        match self.values.get(dest) {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        }
    }
    pub fn flag(&self, dest: &str) -> bool {
        matches!(self.values.get(dest), Some(Value::Flag))
    }
}

/// What to do after parsing.
#[derive(Debug)]
pub enum Outcome {
    Run(Parsed),
    /// Print to stdout and exit 0.
    Help(String),
    /// Print to stderr and exit 2.
    Error(String),
}

pub struct Parser {
    pub prog: String,
    /// Usage lines with `%prog`, as optparse takes them.
    pub usage: &'static str,
    pub options: Vec<Opt>,
    pub groups: Vec<Group>,
}

pub fn help_option() -> Opt {
    Opt::flag(Some('h'), "help", "help", "show this help message and exit")
}

impl Parser {
    fn all_options(&self) -> impl Iterator<Item = &Opt> {
        self.options.iter().chain(self.groups.iter().flat_map(|g| g.options.iter()))
    }

    pub fn usage_text(&self) -> String {
        format!("Usage: {}\n", self.usage.replace("%prog", &self.prog))
    }

    /// The full help text, as `--help` prints it.
    pub fn help_text(&self) -> String {
        let width = help_width();
        let mut main = vec![help_option()];
        main.extend(self.options.iter().cloned());
        let max_len = main
            .iter()
            .map(|o| o.strings().len() + 2)
            .chain(self.groups.iter().flat_map(|g| g.options.iter()).map(|o| o.strings().len() + 4))
            .max()
            .unwrap_or(0);
        let layout = Layout { width, help_position: (max_len + 2).min(24) };

        let mut out = self.usage_text();
        out.push('\n');
        out.push_str("Options:\n");
        let mut sections = vec![main.iter().map(|o| layout.option(o, 2)).collect::<String>()];
        for group in &self.groups {
            let mut text = format!("  {}:\n", group.title);
            let mut parts = Vec::new();
            if let Some(description) = group.description {
                parts.push(fill(description, width.saturating_sub(4).max(11), 4) + "\n");
            }
            if !group.options.is_empty() {
                parts.push(group.options.iter().map(|o| layout.option(o, 4)).collect());
            }
            text.push_str(&parts.join("\n"));
            sections.push(text);
        }
        out.push_str(&sections.join("\n"));
        out
    }

    fn error(&self, message: &str) -> Outcome {
        Outcome::Error(format!("{}\n{}: error: {message}\n", self.usage_text(), self.prog))
    }

    /// Parses `args` (without the program name).
    pub fn parse(&self, args: &[String]) -> Outcome {
        let mut parsed = Parsed::default();
        let mut rest: std::collections::VecDeque<String> = args.iter().cloned().collect();
        while let Some(arg) = rest.pop_front() {
            if arg == "--" {
                parsed.positionals.extend(rest.drain(..));
                break;
            }
            if let Some(body) = arg.strip_prefix("--") {
                let (name, explicit) = match body.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (body, None),
                };
                let option = match self.match_long(name) {
                    Ok(Some(o)) => o,
                    Ok(None) => return Outcome::Help(self.help_text()),
                    Err(message) => return self.error(&message),
                };
                let shown = format!("--{}", option.long);
                if option.takes_value() {
                    let value = match explicit.or_else(|| rest.pop_front()) {
                        Some(v) => v,
                        None => return self.error(&format!("{shown} option requires an argument")),
                    };
                    if let Err(message) = store(&mut parsed, option, &shown, value) {
                        return self.error(&message);
                    }
                } else if explicit.is_some() {
                    return self.error(&format!("{shown} option does not take a value"));
                } else {
                    parsed.values.insert(option.dest, Value::Flag);
                }
            } else if arg.len() > 1 && arg.starts_with('-') {
                let chars: Vec<char> = arg.chars().skip(1).collect();
                let mut i = 0;
                while i < chars.len() {
                    let shown = format!("-{}", chars[i]);
                    if chars[i] == 'h' {
                        return Outcome::Help(self.help_text());
                    }
                    let Some(option) = self.all_options().find(|o| o.short == Some(chars[i])) else {
                        return self.error(&format!("no such option: {shown}"));
                    };
                    i += 1;
                    if option.takes_value() {
                        let attached: String = chars[i..].iter().collect();
                        let value = if !attached.is_empty() {
                            attached
                        } else {
                            match rest.pop_front() {
                                Some(v) => v,
                                None => {
                                    return self.error(&format!("{shown} option requires an argument"));
                                }
                            }
                        };
                        if let Err(message) = store(&mut parsed, option, &shown, value) {
                            return self.error(&message);
                        }
                        break;
                    }
                    parsed.values.insert(option.dest, Value::Flag);
                }
            } else {
                parsed.positionals.push(arg);
            }
        }
        Outcome::Run(parsed)
    }

    /// The long option `name` stands for: exact, or the only one it is a prefix of.
    /// `Ok(None)` means `--help`.
    fn match_long(&self, name: &str) -> Result<Option<&Opt>, String> {
        let help = help_option();
        let mut longs: Vec<&str> = self.all_options().map(|o| o.long).chain(std::iter::once(help.long)).collect();
        longs.sort();
        longs.dedup();
        let chosen = if longs.contains(&name) {
            name.to_string()
        } else {
            let candidates: Vec<&&str> = longs.iter().filter(|l| l.starts_with(name)).collect();
            match candidates.as_slice() {
                [one] => one.to_string(),
                [] => return Err(format!("no such option: --{name}")),
                many => {
                    let list = many.iter().map(|l| format!("--{l}")).collect::<Vec<_>>().join(", ");
                    return Err(format!("ambiguous option: --{name} ({list}?)"));
                }
            }
        };
        if chosen == "help" {
            return Ok(None);
        }
        Ok(self.all_options().find(|o| o.long == chosen))
    }
}

fn store(parsed: &mut Parsed, option: &Opt, shown: &str, value: String) -> Result<(), String> {
    let stored = match option.kind {
        Kind::Int => Value::Int(
            parse_int(&value).ok_or_else(|| format!("option {shown}: invalid integer value: {}", py_repr(&value)))?,
        ),
        Kind::Choice(choices) => {
            if !choices.contains(&value.as_str()) {
                let list = choices.iter().map(|c| py_repr(c)).collect::<Vec<_>>().join(", ");
                return Err(format!("option {shown}: invalid choice: {} (choose from {list})", py_repr(&value)));
            }
            Value::Text(value)
        }
        _ => Value::Text(value),
    };
    parsed.values.insert(option.dest, stored);
    Ok(())
}

/// optparse's integer rules: `0x`/`0b` prefixes, a leading `0` means octal, surrounding
/// whitespace and a sign are allowed.
pub fn parse_int(text: &str) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    let (radix, body) = if lower.starts_with("0x") {
        (16, &text[2..])
    } else if lower.starts_with("0b") {
        (2, &text[2..])
    } else if text.starts_with('0') && text.len() > 1 {
        (8, &text[1..])
    } else {
        (10, text)
    };
    let body = body.trim();
    if body.is_empty() || body.starts_with("--") || body.starts_with("+-") {
        return None;
    }
    let (negative, digits) = match body.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, body.strip_prefix('+').unwrap_or(body)),
    };
    if digits.is_empty() || (radix != 10 && (body.starts_with('-') || body.starts_with('+'))) {
        return None;
    }
    let n = i64::from_str_radix(digits, radix).ok()?;
    Some(if negative { -n } else { n })
}

/// optparse reads `COLUMNS` for the help width (minus 2); 80 by default.
fn help_width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).unwrap_or(80).saturating_sub(2)
}

struct Layout {
    width: usize,
    help_position: usize,
}

impl Layout {
    fn option(&self, option: &Opt, indent: usize) -> String {
        let strings = option.strings();
        let opt_width = self.help_position.saturating_sub(indent + 2);
        let mut out = String::new();
        let indent_first = if strings.len() > opt_width {
            let _ = writeln!(out, "{:indent$}{strings}", "");
            self.help_position
        } else {
            let _ = write!(out, "{:indent$}{strings:<opt_width$}  ", "");
            0
        };
        let help_width = self.width.saturating_sub(self.help_position).max(11);
        let lines = wrap(option.help, help_width);
        match lines.split_first() {
            Some((first, others)) => {
                let _ = writeln!(out, "{:indent_first$}{first}", "");
                for line in others {
                    let _ = writeln!(out, "{:pos$}{line}", "", pos = self.help_position);
                }
            }
            None if !out.ends_with('\n') => out.push('\n'),
            None => {}
        }
        out
    }
}

/// `textwrap.fill` with an indent on every line.
fn fill(text: &str, width: usize, indent: usize) -> String {
    let pad = " ".repeat(indent);
    wrap(text, width.saturating_sub(indent).max(1))
        .iter()
        .map(|line| format!("{pad}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `textwrap.wrap`: words separated by whitespace, hyphenated words may break after a
/// hyphen, over-long words are cut to fit.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut chunks: Vec<String> = Vec::new();
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            chunks.push(" ".into());
        }
        chunks.extend(split_hyphenated(word));
    }
    chunks.reverse(); // a stack, next chunk last
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    while !chunks.is_empty() {
        if chunks.last().is_some_and(|c| c == " ") && !lines.is_empty() {
            chunks.pop();
        }
        let mut line = String::new();
        while let Some(chunk) = chunks.last() {
            if line.chars().count() + chunk.chars().count() > width {
                break;
            }
            line.push_str(chunk);
            chunks.pop();
        }
        if let Some(chunk) = chunks.last_mut()
            && chunk.chars().count() > width
        {
            let room = width - line.chars().count();
            let head: String = chunk.chars().take(room).collect();
            *chunk = chunk.chars().skip(room).collect();
            line.push_str(&head);
        }
        let line = line.trim_end().to_string();
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

/// Splits `word` after hyphens that join two words of letters, as textwrap does
/// (`us-east-1` → `us-`, `east-1`).
fn split_hyphenated(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    for i in 1..chars.len().saturating_sub(1) {
        if chars[i] != '-' || !chars[i - 1].is_alphabetic() {
            continue;
        }
        // Before: at least two word characters ending in a letter; after: word
        // characters containing a letter at the end of the run.
        let before_ok = i >= 2 && chars[i - 2].is_alphanumeric();
        let after: String = chars[i + 1..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
        let after_ok = after.chars().skip(1).any(|c| c.is_alphabetic() || c == '_');
        if before_ok && after_ok {
            pieces.push(chars[start..=i].iter().collect());
            start = i + 1;
        }
    }
    pieces.push(chars[start..].iter().collect());
    pieces
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;

    fn parser() -> Parser {
        Parser {
            prog: "tool".into(),
            usage: "%prog [options]",
            options: vec![
                Opt::value(Some('s'), "stack", "stack", "STACK", "A stack"),
                Opt::value(Some('r'), "resource", "resource", "ID", "A resource"),
                Opt::value(None, "region", "region", "REGION", "A region"),
                Opt::flag(Some('v'), "verbose", "verbose", "Verbose"),
                Opt::value(Some('e'), "exit-code", "exit_code", "N", "A code").with_kind(Kind::Int),
                Opt::value(Some('b'), "bool", "bool", "B", "A choice").with_kind(Kind::Choice(&["true", "false"])),
            ],
            groups: vec![Group {
                title: "Proxy",
                description: None,
                options: vec![Opt::value(None, "https-proxy", "https_proxy", "P", "proxy")],
            }],
        }
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    const USAGE: &str = "Usage: tool [options]\n\ntool: error: ";

    #[test]
    fn accepted_forms() {
        type Expect = (&'static str, &'static str);
        let cases: &[(&[&str], &[Expect], &[&str])] = &[
            (&["--stack", "S"], &[("stack", "S")], &[]),
            (&["--stack=S"], &[("stack", "S")], &[]),
            (&["--stack="], &[("stack", "")], &[]),
            (&["--stack=a=b"], &[("stack", "a=b")], &[]),
            (&["-sS"], &[("stack", "S")], &[]),
            (&["-s", "S"], &[("stack", "S")], &[]),
            (&["-s", "-v"], &[("stack", "-v")], &[]),
            (&["-vsS"], &[("stack", "S")], &[]),
            (&["--sta", "S", "--res", "R"], &[("stack", "S"), ("resource", "R")], &[]),
            (&["--https", "P"], &[("https_proxy", "P")], &[]),
            (&["a", "-s", "S", "b"], &[("stack", "S")], &["a", "b"]),
            (&["-s", "S", "--", "-r", "x"], &[("stack", "S")], &["-r", "x"]),
            (&["-"], &[], &["-"]),
            (&["-s", "1", "--stack", "2"], &[("stack", "2")], &[]),
            (&["-b", "false"], &[("bool", "false")], &[]),
        ];
        for (input, values, positionals) in cases {
            let Outcome::Run(parsed) = parser().parse(&args(input)) else { panic!("{input:?} did not parse") };
            for (dest, value) in *values {
                assert_eq!(parsed.text(dest).as_deref(), Some(*value), "{input:?}");
            }
            assert_eq!(parsed.positionals, args(positionals), "{input:?}");
        }
        let Outcome::Run(parsed) = parser().parse(&args(&["-v", "-e", "0x1f"])) else { panic!() };
        assert!(parsed.flag("verbose"));
        assert_eq!(parsed.int("exit_code"), Some(31));
    }

    #[test]
    fn errors_use_optparse_messages() {
        let cases: &[(&[&str], &str)] = &[
            (&["--bogus"], "no such option: --bogus"),
            (&["-Z"], "no such option: -Z"),
            (&["--re", "x"], "ambiguous option: --re (--region, --resource?)"),
            (&["--stack"], "--stack option requires an argument"),
            (&["--sta"], "--stack option requires an argument"),
            (&["-s"], "-s option requires an argument"),
            (&["--verbose=1"], "--verbose option does not take a value"),
            (&["-e", "abc"], "option -e: invalid integer value: 'abc'"),
            (&["--exit-code=1.5"], "option --exit-code: invalid integer value: '1.5'"),
            (&["-e", "08"], "option -e: invalid integer value: '08'"),
            (&["-b", "yes"], "option -b: invalid choice: 'yes' (choose from 'true', 'false')"),
            (&["--bool=True"], "option --bool: invalid choice: 'True' (choose from 'true', 'false')"),
            (&["-b", "it's"], "option -b: invalid choice: \"it's\" (choose from 'true', 'false')"),
        ];
        for (input, message) in cases {
            match parser().parse(&args(input)) {
                Outcome::Error(text) => {
                    assert_eq!(text, format!("{USAGE}{message}\n"), "{input:?}")
                }
                other => panic!("{input:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn help_wins_wherever_it_stands() {
        for input in [&["--help"][..], &["-h"], &["-s", "x", "--he"], &["-vh"]] {
            assert!(matches!(parser().parse(&args(input)), Outcome::Help(_)), "{input:?}");
        }
    }

    #[test]
    fn integers_parse_like_optparse() {
        let cases = [
            ("0", Some(0)),
            ("1", Some(1)),
            ("-1", Some(-1)),
            ("+7", Some(7)),
            (" 12 ", Some(12)),
            ("010", Some(8)),
            ("0x10", Some(16)),
            ("0X1f", Some(31)),
            ("0b101", Some(5)),
            ("08", None),
            ("abc", None),
            ("", None),
            ("1e3", None),
            ("--1", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_int(text), expected, "{text:?}");
        }
    }

    #[test]
    fn text_wraps_like_textwrap() {
        assert_eq!(
            wrap("The CloudFormation region. Default: us-east-1.", 20),
            ["The CloudFormation", "region. Default: us-", "east-1."]
        );
        assert_eq!(wrap("Default: us-east-1.", 13), ["Default: us-", "east-1."]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(split_hyphenated("us-east-1"), ["us-", "east-1"]);
        assert_eq!(split_hyphenated("x-y"), ["x-y"]);
        assert_eq!(split_hyphenated("non-SSL"), ["non-", "SSL"]);
    }
}
