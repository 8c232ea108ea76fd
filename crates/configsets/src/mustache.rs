//! Mustache templates for `files` entries that carry a `context` (INIT-FILES-06).
//!
//! The reference hands the content to pystache (`Renderer().render(content, context)`).
//! This module reproduces what pystache does, observed in `tests/golden/mustache/`,
//! including the places where pystache departs from the Mustache spec:
//!
//! * Tags are recognised the way pystache's regular expression finds them: the first
//!   opening delimiter (from the left) for which a closing delimiter follows, with Python's
//!   backtracking preferences (`{{ }}` is a tag named `" "`, `{{}}` is plain text, a tag
//!   name may span lines, `{{{x}}` is the tag `{x`). Whitespace means Python's `\s`.
//! * A section, inverted section, comment, partial or set-delimiter tag that is alone on
//!   its line (nothing but spaces/tabs before it, the line break right after it) removes
//!   the whole line; trailing blanks after the tag keep the line.
//! * `{{x}}` escapes `& < > " '` like Python 3's `html.escape` (`'` → `&#x27;`; the
//!   Python 2 reference leaves `'` alone — see the golden README).
//! * Non-string values print as Python's `str()` of the decoded JSON: `True`, `False`,
//!   `None`, `1.0`, `1e+16`, `[1, 'a']`, `{'k': 'v'}`.
//! * Falsy values (for sections) are Python's: `false`, `null`, `0`, `0.0`, `""`, `[]`
//!   and `{}`. A non-empty list iterates; anything else truthy is pushed once.
//! * Names resolve against the context stack from the top; only objects have keys. In a
//!   dotted name only the first part searches the stack. `.` is the top of the stack.
//!   A missing name renders as the empty string and is falsy.
//! * Partials render as nothing (cfn-init has none), comments too.
//! * A section left open at the end of the template is not an error: pystache then keeps
//!   only the innermost open section's body (rendered in the enclosing context) and the
//!   text after it, dropping everything before. A closing tag that does not match the
//!   open section is an error, as is a set-delimiter tag that does not name two
//!   delimiters.
//!
//! Parsing is linear in the template length for a given pair of delimiters (each tag
//! search resumes where the previous one stopped); rendering is linear in the size of
//! the output. Rendered sections may nest at most [`MAX_DEPTH`] deep (pystache fails with
//! Python's recursion limit a little above 300) and the output is capped at
//! [`MAX_OUTPUT`] bytes, so no template can exhaust the stack or loop for ever.

use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// How deeply rendered sections (and inverted sections) may nest.
pub const MAX_DEPTH: usize = 256;

/// The largest rendered output accepted, in bytes.
pub const MAX_OUTPUT: usize = 256 * 1024 * 1024;

/// A 1-based line and column (in characters) in the template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a template could not be rendered. The text is one line; cfn-init prints it as
/// `Failed to render content as a Mustache template: <text>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MustacheError {
    #[error("closing tag {found} at {at} does not match the open section {expected} at {opened}")]
    MismatchedClose { found: String, at: Position, expected: String, opened: Position },
    #[error("closing tag {found} at {at} has no open section")]
    UnopenedClose { found: String, at: Position },
    #[error("set-delimiter tag {tag} at {at} does not name two delimiters separated by whitespace")]
    BadDelimiters { tag: String, at: Position },
    #[error("section at {at} is nested more than {max} levels deep")]
    TooDeep { at: Position, max: usize },
    #[error("rendered output exceeds {max} bytes")]
    TooLarge { max: usize },
}

/// Render `template` with `context` as the bottom of the context stack.
///
/// A JSON `null` context gives an empty stack (pystache skips `None`); note that cfn-init
/// itself does not render at all when `context` is `null`.
pub fn render(template: &str, context: &Value) -> Result<String, MustacheError> {
    let parsed = Parser::new(template).parse()?;
    let mut renderer = Renderer { template, nodes: &parsed.nodes, out: String::with_capacity(template.len()) };
    let mut stack: Vec<&Value> = Vec::new();
    if !context.is_null() {
        stack.push(context);
    }
    renderer.range(parsed.root, parsed.nodes.len(), &mut stack, 0)?;
    Ok(renderer.out)
}

// ------------------------------------------------------------------------------------
// Parsing

type Span = std::ops::Range<usize>;

#[derive(Debug)]
enum Node {
    Text(Span),
    Escaped(Span),
    Raw(Span),
    /// The body is the nodes from the next index up to `end`.
    Section {
        key: Span,
        inverted: bool,
        end: usize,
        at: usize,
    },
}

struct Parsed {
    nodes: Vec<Node>,
    /// Index of the first node to render (not 0 when a section was left open).
    root: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Escaped,
    Raw,
    Section,
    Inverted,
    Close,
    Comment,
    Partial,
    Delimiters,
}

struct Tag {
    kind: Kind,
    key: Span,
    /// Byte just after the closing delimiter.
    end: usize,
}

/// "Next occurrence at or after" caches: the template never changes, so what was learnt
/// about a pair of delimiters stays true; each search resumes where the last one stopped.
/// First occurrence of a fixed string at or after a position.
#[derive(Clone, Copy)]
struct NextFind {
    from: usize,
    found: Option<usize>,
}

impl Default for NextFind {
    fn default() -> Self {
        // Nothing known yet.
        NextFind { from: usize::MAX, found: None }
    }
}

impl NextFind {
    fn query(&mut self, t: &str, needle: &str, i: usize) -> Option<usize> {
        if i >= self.from && self.found.is_none_or(|f| i <= f) {
            return self.found;
        }
        self.from = i;
        self.found = t.get(i..).and_then(|rest| rest.find(needle)).map(|x| x + i);
        self.found
    }
}

#[derive(Default, Clone, Copy)]
struct NextGood {
    from: usize,
    pos: usize,
    hit: bool,
}

#[derive(Default, Clone, Copy)]
struct Cursors {
    close: NextFind,
    /// For `=` (set delimiters) and `}` (triple mustache).
    good: [NextGood; 2],
}

struct Parser<'t> {
    t: &'t str,
    open: String,
    close: String,
    cursors: Cursors,
    saved: HashMap<(String, String), Cursors>,
    newline: NextFind,
}

impl<'t> Parser<'t> {
    fn new(t: &'t str) -> Self {
        Parser {
            t,
            open: "{{".into(),
            close: "}}".into(),
            cursors: Cursors::default(),
            saved: HashMap::new(),
            newline: NextFind::default(),
        }
    }

    fn parse(mut self) -> Result<Parsed, MustacheError> {
        let t = self.t;
        let bytes = t.as_bytes();
        let n = t.len();
        let mut nodes = Vec::new();
        // Open sections: (node index, name, tag start, tag end).
        let mut open: Vec<(usize, Span, usize, usize)> = Vec::new();
        let mut start = 0;
        let mut search = 0;
        while let Some(found) = t[search..].find(self.open.as_str()) {
            let k = search + found;
            let Some(tag) = self.tag_at(k) else {
                search = k + char_len(t, k);
                continue;
            };
            // pystache's regex also takes the spaces and tabs in front of the tag.
            let mut lead = k;
            while lead > start && matches!(bytes[lead - 1], b' ' | b'\t') {
                lead -= 1;
            }
            let mut end = tag.end;
            let begins_line = lead == 0 || matches!(bytes[lead - 1], b'\r' | b'\n');
            let ends_line = end == n || matches!(bytes[end], b'\r' | b'\n');
            let interpolating = matches!(tag.kind, Kind::Escaped | Kind::Raw);
            let text_end = if begins_line && ends_line && !interpolating {
                if end < n && bytes[end] == b'\r' {
                    end += 1;
                }
                if end < n && bytes[end] == b'\n' {
                    end += 1;
                }
                lead
            } else {
                k
            };
            if start != text_end {
                nodes.push(Node::Text(start..text_end));
            }
            start = end;
            search = end;
            match tag.kind {
                Kind::Escaped => nodes.push(Node::Escaped(tag.key)),
                Kind::Raw => nodes.push(Node::Raw(tag.key)),
                Kind::Section | Kind::Inverted => {
                    open.push((nodes.len(), tag.key.clone(), k, tag.end));
                    nodes.push(Node::Section { key: tag.key, inverted: tag.kind == Kind::Inverted, end: 0, at: k });
                }
                Kind::Close => {
                    let found = sanitize(&t[k..tag.end]);
                    let Some((index, key, opened, opened_end)) = open.pop() else {
                        return Err(MustacheError::UnopenedClose { found, at: position(t, k) });
                    };
                    if t[key] != t[tag.key] {
                        return Err(MustacheError::MismatchedClose {
                            found,
                            at: position(t, k),
                            expected: sanitize(&t[opened..opened_end]),
                            opened: position(t, opened),
                        });
                    }
                    let body_end = nodes.len();
                    if let Some(Node::Section { end, .. }) = nodes.get_mut(index) {
                        *end = body_end;
                    }
                }
                Kind::Comment | Kind::Partial => {}
                Kind::Delimiters => {
                    let mut words = t[tag.key.clone()].split(is_py_space).filter(|w| !w.is_empty());
                    let (Some(o), Some(c)) = (words.next(), words.next()) else {
                        return Err(MustacheError::BadDelimiters { tag: sanitize(&t[k..tag.end]), at: position(t, k) });
                    };
                    let (o, c) = (o.to_string(), c.to_string());
                    let old = (std::mem::replace(&mut self.open, o), std::mem::replace(&mut self.close, c));
                    self.saved.insert(old, self.cursors);
                    self.cursors = self.saved.remove(&(self.open.clone(), self.close.clone())).unwrap_or_default();
                }
            }
        }
        if start != n {
            nodes.push(Node::Text(start..n));
        }
        // pystache returns whatever it was building when the template ran out: with a
        // section still open, that is the innermost open section's body.
        let root = open.last().map_or(0, |(index, ..)| index + 1);
        Ok(Parsed { nodes, root })
    }

    /// The tag whose opening delimiter starts at `k`, if pystache's pattern matches there.
    /// The alternatives are tried in the pattern's order: `=...=`, `{...}`, a sigil,
    /// then a plain name.
    fn tag_at(&mut self, k: usize) -> Option<Tag> {
        let t = self.t;
        let q = k + self.open.len();
        let r0 = ws_end(t, q);
        let first = t[r0..].chars().next();
        if first == Some('=') {
            if let Some((key, end)) = self.bracketed(r0, 0) {
                return Some(Tag { kind: Kind::Delimiters, key, end });
            }
        }
        if first == Some('{') {
            if let Some((key, end)) = self.bracketed(r0, 1) {
                return Some(Tag { kind: Kind::Raw, key, end });
            }
        }
        let sigil = match first {
            Some('!') => Some(Kind::Comment),
            Some('>') => Some(Kind::Partial),
            Some('&') => Some(Kind::Raw),
            Some('/') => Some(Kind::Close),
            Some('#') => Some(Kind::Section),
            Some('^') => Some(Kind::Inverted),
            _ => None,
        };
        if let Some(kind) = sigil {
            if let Some((key, end)) = self.plain(r0 + 1) {
                return Some(Tag { kind, key, end });
            }
        }
        let (key, end) = self.plain(q)?;
        Some(Tag { kind: Kind::Escaped, key, end })
    }

    /// `\s* (?P<key>[\s\S]+?) \s* CLOSE` from `r`: the name is the shortest run reaching
    /// the first closing delimiter, trailing whitespace left out; it may be a single
    /// whitespace character when the tag holds nothing else.
    fn plain(&mut self, r: usize) -> Option<(Span, usize)> {
        let t = self.t;
        let r2 = ws_end(t, r);
        if r2 < t.len() {
            let after = r2 + char_len(t, r2);
            if let Some(c) = self.next_close(after) {
                let e = ws_start(t, c, after);
                return Some((r2..e, c + self.close.len()));
            }
        }
        if r2 > r && t[r2..].starts_with(self.close.as_str()) {
            let p = prev_char(t, r2);
            return Some((p..r2, r2 + self.close.len()));
        }
        None
    }

    /// `OPENCHAR \s* (?P<name>.+?) \s* CLOSECHAR \s* CLOSE` with the open character at
    /// `r0`; `which` 0 is `=...=`, 1 is `{...}`. The name may not contain a line break.
    fn bracketed(&mut self, r0: usize, which: usize) -> Option<(Span, usize)> {
        let t = self.t;
        let p = r0 + 1;
        let d0 = ws_end(t, p);
        if d0 < t.len() {
            let after = d0 + char_len(t, d0);
            let limit = match self.newline.query(t, "\n", d0) {
                Some(x) => ws_end(t, x),
                None => t.len(),
            };
            if let Some(f) = self.next_good(which, after, limit) {
                let e = ws_start(t, f, after);
                return Some((d0..e, ws_end(t, f + 1) + self.close.len()));
            }
        }
        if d0 > p && self.good(which, d0) {
            // Backtracking: a single whitespace character (not a line break) as the name.
            let mut d = d0;
            while d > p {
                let prev = prev_char(t, d);
                if t.as_bytes()[prev] != b'\n' {
                    return Some((prev..d, ws_end(t, d0 + 1) + self.close.len()));
                }
                d = prev;
            }
        }
        None
    }

    /// First start of the closing delimiter at or after `i`.
    fn next_close(&mut self, i: usize) -> Option<usize> {
        self.cursors.close.query(self.t, &self.close, i)
    }

    /// Whether the byte at `f` is the closing character of a bracketed tag (`=` or `}`)
    /// followed by optional whitespace and the closing delimiter.
    fn good(&self, which: usize, f: usize) -> bool {
        let ch = [b'=', b'}'][which];
        self.t.as_bytes().get(f) == Some(&ch) && self.t[ws_end(self.t, f + 1)..].starts_with(self.close.as_str())
    }

    /// First `f` in `i..=limit` with `good(f)`.
    fn next_good(&mut self, which: usize, i: usize, limit: usize) -> Option<usize> {
        let ch = [b'=', b'}'][which];
        let mut cache = self.cursors.good[which];
        if !(cache.from <= i && i <= cache.pos) {
            cache = NextGood { from: i, pos: i, hit: false };
        }
        if !cache.hit {
            let bytes = self.t.as_bytes();
            let stop = limit.min(bytes.len().saturating_sub(1));
            let mut pos = cache.pos;
            while pos <= stop {
                match bytes[pos..=stop].iter().position(|&b| b == ch) {
                    Some(x) if self.good(which, pos + x) => {
                        pos += x;
                        cache.hit = true;
                        break;
                    }
                    Some(x) => pos += x + 1,
                    None => pos = stop + 1,
                }
            }
            cache.pos = pos.max(cache.pos);
        }
        self.cursors.good[which] = cache;
        (cache.hit && cache.pos <= limit).then_some(cache.pos)
    }
}

// ------------------------------------------------------------------------------------
// Rendering

struct Renderer<'t, 'n> {
    template: &'t str,
    nodes: &'n [Node],
    out: String,
}

impl Renderer<'_, '_> {
    fn range(&mut self, from: usize, to: usize, stack: &mut Vec<&Value>, depth: usize) -> Result<(), MustacheError> {
        let mut i = from;
        while i < to {
            match &self.nodes[i] {
                Node::Text(span) => {
                    let text = &self.template[span.clone()];
                    self.push(|out| out.push_str(text))?;
                    i += 1;
                }
                Node::Escaped(key) => {
                    if let Some(value) = lookup(stack, &self.template[key.clone()]) {
                        self.push(|out| write_str_value(out, value, true))?;
                    }
                    i += 1;
                }
                Node::Raw(key) => {
                    if let Some(value) = lookup(stack, &self.template[key.clone()]) {
                        self.push(|out| write_str_value(out, value, false))?;
                    }
                    i += 1;
                }
                Node::Section { key, inverted, end, at } => {
                    let (end, at) = (*end, *at);
                    let value = lookup(stack, &self.template[key.clone()]);
                    let truthy = value.is_some_and(is_truthy);
                    if truthy != *inverted {
                        if depth >= MAX_DEPTH {
                            return Err(MustacheError::TooDeep { at: position(self.template, at), max: MAX_DEPTH });
                        }
                        match value {
                            _ if *inverted => self.range(i + 1, end, stack, depth + 1)?,
                            Some(Value::Array(items)) => {
                                for item in items {
                                    stack.push(item);
                                    let result = self.range(i + 1, end, stack, depth + 1);
                                    stack.pop();
                                    result?;
                                }
                            }
                            Some(value) => {
                                stack.push(value);
                                let result = self.range(i + 1, end, stack, depth + 1);
                                stack.pop();
                                result?;
                            }
                            None => {}
                        }
                    }
                    i = end.max(i + 1);
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, write: impl FnOnce(&mut String)) -> Result<(), MustacheError> {
        write(&mut self.out);
        if self.out.len() > MAX_OUTPUT {
            return Err(MustacheError::TooLarge { max: MAX_OUTPUT });
        }
        Ok(())
    }
}

/// pystache's name resolution; `None` is "not found" (renders as `""`, falsy).
fn lookup<'v>(stack: &[&'v Value], name: &str) -> Option<&'v Value> {
    if name == "." {
        return stack.last().copied();
    }
    let mut parts = name.split('.');
    let first = parts.next().unwrap_or_default();
    let mut value = stack.iter().rev().find_map(|item| item.as_object().and_then(|map| map.get(first)))?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// Python truthiness of the decoded JSON value.
fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => match PyNumber::of(n) {
            PyNumber::Int(text) => text.bytes().any(|b| b.is_ascii_digit() && b != b'0'),
            PyNumber::Float(f) => f != 0.0,
        },
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

// ------------------------------------------------------------------------------------
// Python's str() / repr() of decoded JSON

enum PyNumber<'a> {
    Int(&'a str),
    Float(f64),
}

impl<'a> PyNumber<'a> {
    /// Python's json module makes a float of any number with a fraction or exponent.
    fn of(n: &'a serde_json::Number) -> PyNumber<'a> {
        let text = number_text(n);
        if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            PyNumber::Float(text.parse::<f64>().unwrap_or_else(|_| n.as_f64().unwrap_or(f64::NAN)))
        } else {
            PyNumber::Int(text)
        }
    }
}

/// The number's JSON text (serde_json's `arbitrary_precision` keeps the source spelling).
fn number_text(n: &serde_json::Number) -> &str {
    n.as_str()
}

/// `str(value)`: strings as they are, everything else as `repr`.
fn write_str_value(out: &mut String, value: &Value, escape: bool) {
    let mut text = String::new();
    let s = match value {
        Value::String(s) => s.as_str(),
        other => {
            write_repr(&mut text, other);
            text.as_str()
        }
    };
    if !escape {
        out.push_str(s);
        return;
    }
    let mut rest = s;
    while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..i]);
        out.push_str(match rest.as_bytes()[i] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#x27;",
        });
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// Python 3 `repr()` of the decoded JSON value, without recursion.
fn write_repr(out: &mut String, value: &Value) {
    enum Frame<'v> {
        List(std::slice::Iter<'v, Value>),
        Dict(serde_json::map::Iter<'v>),
    }
    let mut frames: Vec<(Frame, bool)> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            match value {
                Value::Null => out.push_str("None"),
                Value::Bool(true) => out.push_str("True"),
                Value::Bool(false) => out.push_str("False"),
                Value::Number(n) => write_number(out, n),
                Value::String(s) => write_py_str_repr(out, s),
                Value::Array(items) => {
                    out.push('[');
                    frames.push((Frame::List(items.iter()), true));
                }
                Value::Object(map) => {
                    out.push('{');
                    frames.push((Frame::Dict(map.iter()), true));
                }
            }
        }
        let Some((frame, first)) = frames.last_mut() else { return };
        let sep = if *first { "" } else { ", " };
        match frame {
            Frame::List(items) => match items.next() {
                Some(item) => {
                    out.push_str(sep);
                    next = Some(item);
                }
                None => {
                    out.push(']');
                    frames.pop();
                    continue;
                }
            },
            Frame::Dict(entries) => match entries.next() {
                Some((key, item)) => {
                    out.push_str(sep);
                    write_py_str_repr(out, key);
                    out.push_str(": ");
                    next = Some(item);
                }
                None => {
                    out.push('}');
                    frames.pop();
                    continue;
                }
            },
        }
        *first = false;
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    match PyNumber::of(n) {
        PyNumber::Int(text) => {
            if text.bytes().all(|b| b == b'-' || b == b'0') {
                out.push('0'); // -0 is the integer 0
            } else {
                out.push_str(text);
            }
        }
        PyNumber::Float(f) => write_py_float(out, f),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form below 1e-4 and from
/// 1e16 up (`1e-05`, `1e+16`), otherwise positional with at least one decimal (`1.0`).
fn write_py_float(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("nan");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f < 0.0 { "-inf" } else { "inf" });
        return;
    }
    if f == 0.0 {
        out.push_str(if f.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    out.push_str(sign);
    if !(-4..16).contains(&exp) {
        out.push_str(mantissa);
        out.push_str(&format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs()));
        return;
    }
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
        out.push_str(&digits);
    } else {
        let point = point as usize;
        if point >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
}

/// Python 3 `repr(str)`.
fn write_py_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_ascii() || is_py_printable(c) => out.push(c),
            c if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
}

fn is_py_printable(c: char) -> bool {
    let c = c as u32;
    NOT_PRINTABLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_err()
}

// ------------------------------------------------------------------------------------
// Text helpers

/// Python's `str.isspace()` (what `\s` and `str.split()` use).
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// End of the run of Python whitespace starting at `i`.
fn ws_end(t: &str, i: usize) -> usize {
    match t.get(i..) {
        Some(rest) => rest.find(|c: char| !is_py_space(c)).map_or(t.len(), |x| i + x),
        None => t.len(),
    }
}

/// Start of the run of Python whitespace ending at `j`, but not before `floor`.
fn ws_start(t: &str, j: usize, floor: usize) -> usize {
    let mut s = j;
    while s > floor {
        let p = prev_char(t, s);
        if p < floor || !t[p..s].chars().next().is_some_and(is_py_space) {
            break;
        }
        s = p;
    }
    s
}

fn char_len(t: &str, i: usize) -> usize {
    t[i..].chars().next().map_or(1, char::len_utf8)
}

fn prev_char(t: &str, i: usize) -> usize {
    t[..i].char_indices().next_back().map_or(0, |(p, _)| p)
}

fn position(t: &str, at: usize) -> Position {
    let before = &t[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |x| x + 1);
    Position { line, column: before[line_start..].chars().count() + 1 }
}

/// Tag text for a one-line message: control characters escaped, long tags shortened.
fn sanitize(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == 60 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Code points above U+007F that Python 3.11 (Unicode 14.0) does not consider printable
/// (`str.isprintable()`), as inclusive ranges; `repr()` escapes them.
#[rustfmt::skip]
const NOT_PRINTABLE: &[(u32, u32)] = &[
    (0x80, 0xA0), (0xAD, 0xAD), (0x378, 0x379), (0x380, 0x383), (0x38B, 0x38B), (0x38D, 0x38D),
    (0x3A2, 0x3A2), (0x530, 0x530), (0x557, 0x558), (0x58B, 0x58C), (0x590, 0x590), (0x5C8, 0x5CF),
    (0x5EB, 0x5EE), (0x5F5, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70E, 0x70F), (0x74B, 0x74C),
    (0x7B2, 0x7BF), (0x7FB, 0x7FC), (0x82E, 0x82F), (0x83F, 0x83F), (0x85C, 0x85D), (0x85F, 0x85F),
    (0x86B, 0x86F), (0x88F, 0x897), (0x8E2, 0x8E2), (0x984, 0x984), (0x98D, 0x98E), (0x991, 0x992),
    (0x9A9, 0x9A9), (0x9B1, 0x9B1), (0x9B3, 0x9B5), (0x9BA, 0x9BB), (0x9C5, 0x9C6), (0x9C9, 0x9CA),
    (0x9CF, 0x9D6), (0x9D8, 0x9DB), (0x9DE, 0x9DE), (0x9E4, 0x9E5), (0x9FF, 0xA00), (0xA04, 0xA04),
    (0xA0B, 0xA0E), (0xA11, 0xA12), (0xA29, 0xA29), (0xA31, 0xA31), (0xA34, 0xA34), (0xA37, 0xA37),
    (0xA3A, 0xA3B), (0xA3D, 0xA3D), (0xA43, 0xA46), (0xA49, 0xA4A), (0xA4E, 0xA50), (0xA52, 0xA58),
    (0xA5D, 0xA5D), (0xA5F, 0xA65), (0xA77, 0xA80), (0xA84, 0xA84), (0xA8E, 0xA8E), (0xA92, 0xA92),
    (0xAA9, 0xAA9), (0xAB1, 0xAB1), (0xAB4, 0xAB4), (0xABA, 0xABB), (0xAC6, 0xAC6), (0xACA, 0xACA),
    (0xACE, 0xACF), (0xAD1, 0xADF), (0xAE4, 0xAE5), (0xAF2, 0xAF8), (0xB00, 0xB00), (0xB04, 0xB04),
    (0xB0D, 0xB0E), (0xB11, 0xB12), (0xB29, 0xB29), (0xB31, 0xB31), (0xB34, 0xB34), (0xB3A, 0xB3B),
    (0xB45, 0xB46), (0xB49, 0xB4A), (0xB4E, 0xB54), (0xB58, 0xB5B), (0xB5E, 0xB5E), (0xB64, 0xB65),
    (0xB78, 0xB81), (0xB84, 0xB84), (0xB8B, 0xB8D), (0xB91, 0xB91), (0xB96, 0xB98), (0xB9B, 0xB9B),
    (0xB9D, 0xB9D), (0xBA0, 0xBA2), (0xBA5, 0xBA7), (0xBAB, 0xBAD), (0xBBA, 0xBBD), (0xBC3, 0xBC5),
    (0xBC9, 0xBC9), (0xBCE, 0xBCF), (0xBD1, 0xBD6), (0xBD8, 0xBE5), (0xBFB, 0xBFF), (0xC0D, 0xC0D),
    (0xC11, 0xC11), (0xC29, 0xC29), (0xC3A, 0xC3B), (0xC45, 0xC45), (0xC49, 0xC49), (0xC4E, 0xC54),
    (0xC57, 0xC57), (0xC5B, 0xC5C), (0xC5E, 0xC5F), (0xC64, 0xC65), (0xC70, 0xC76), (0xC8D, 0xC8D),
    (0xC91, 0xC91), (0xCA9, 0xCA9), (0xCB4, 0xCB4), (0xCBA, 0xCBB), (0xCC5, 0xCC5), (0xCC9, 0xCC9),
    (0xCCE, 0xCD4), (0xCD7, 0xCDC), (0xCDF, 0xCDF), (0xCE4, 0xCE5), (0xCF0, 0xCF0), (0xCF3, 0xCFF),
    (0xD0D, 0xD0D), (0xD11, 0xD11), (0xD45, 0xD45), (0xD49, 0xD49), (0xD50, 0xD53), (0xD64, 0xD65),
    (0xD80, 0xD80), (0xD84, 0xD84), (0xD97, 0xD99), (0xDB2, 0xDB2), (0xDBC, 0xDBC), (0xDBE, 0xDBF),
    (0xDC7, 0xDC9), (0xDCB, 0xDCE), (0xDD5, 0xDD5), (0xDD7, 0xDD7), (0xDE0, 0xDE5), (0xDF0, 0xDF1),
    (0xDF5, 0xE00), (0xE3B, 0xE3E), (0xE5C, 0xE80), (0xE83, 0xE83), (0xE85, 0xE85), (0xE8B, 0xE8B),
    (0xEA4, 0xEA4), (0xEA6, 0xEA6), (0xEBE, 0xEBF), (0xEC5, 0xEC5), (0xEC7, 0xEC7), (0xECE, 0xECF),
    (0xEDA, 0xEDB), (0xEE0, 0xEFF), (0xF48, 0xF48), (0xF6D, 0xF70), (0xF98, 0xF98), (0xFBD, 0xFBD),
    (0xFCD, 0xFCD), (0xFDB, 0xFFF), (0x10C6, 0x10C6), (0x10C8, 0x10CC), (0x10CE, 0x10CF), (0x1249, 0x1249),
    (0x124E, 0x124F), (0x1257, 0x1257), (0x1259, 0x1259), (0x125E, 0x125F), (0x1289, 0x1289), (0x128E, 0x128F),
    (0x12B1, 0x12B1), (0x12B6, 0x12B7), (0x12BF, 0x12BF), (0x12C1, 0x12C1), (0x12C6, 0x12C7), (0x12D7, 0x12D7),
    (0x1311, 0x1311), (0x1316, 0x1317), (0x135B, 0x135C), (0x137D, 0x137F), (0x139A, 0x139F), (0x13F6, 0x13F7),
    (0x13FE, 0x13FF), (0x1680, 0x1680), (0x169D, 0x169F), (0x16F9, 0x16FF), (0x1716, 0x171E), (0x1737, 0x173F),
    (0x1754, 0x175F), (0x176D, 0x176D), (0x1771, 0x1771), (0x1774, 0x177F), (0x17DE, 0x17DF), (0x17EA, 0x17EF),
    (0x17FA, 0x17FF), (0x180E, 0x180E), (0x181A, 0x181F), (0x1879, 0x187F), (0x18AB, 0x18AF), (0x18F6, 0x18FF),
    (0x191F, 0x191F), (0x192C, 0x192F), (0x193C, 0x193F), (0x1941, 0x1943), (0x196E, 0x196F), (0x1975, 0x197F),
    (0x19AC, 0x19AF), (0x19CA, 0x19CF), (0x19DB, 0x19DD), (0x1A1C, 0x1A1D), (0x1A5F, 0x1A5F), (0x1A7D, 0x1A7E),
    (0x1A8A, 0x1A8F), (0x1A9A, 0x1A9F), (0x1AAE, 0x1AAF), (0x1ACF, 0x1AFF), (0x1B4D, 0x1B4F), (0x1B7F, 0x1B7F),
    (0x1BF4, 0x1BFB), (0x1C38, 0x1C3A), (0x1C4A, 0x1C4C), (0x1C89, 0x1C8F), (0x1CBB, 0x1CBC), (0x1CC8, 0x1CCF),
    (0x1CFB, 0x1CFF), (0x1F16, 0x1F17), (0x1F1E, 0x1F1F), (0x1F46, 0x1F47), (0x1F4E, 0x1F4F), (0x1F58, 0x1F58),
    (0x1F5A, 0x1F5A), (0x1F5C, 0x1F5C), (0x1F5E, 0x1F5E), (0x1F7E, 0x1F7F), (0x1FB5, 0x1FB5), (0x1FC5, 0x1FC5),
    (0x1FD4, 0x1FD5), (0x1FDC, 0x1FDC), (0x1FF0, 0x1FF1), (0x1FF5, 0x1FF5), (0x1FFF, 0x200F), (0x2028, 0x202F),
    (0x205F, 0x206F), (0x2072, 0x2073), (0x208F, 0x208F), (0x209D, 0x209F), (0x20C1, 0x20CF), (0x20F1, 0x20FF),
    (0x218C, 0x218F), (0x2427, 0x243F), (0x244B, 0x245F), (0x2B74, 0x2B75), (0x2B96, 0x2B96), (0x2CF4, 0x2CF8),
    (0x2D26, 0x2D26), (0x2D28, 0x2D2C), (0x2D2E, 0x2D2F), (0x2D68, 0x2D6E), (0x2D71, 0x2D7E), (0x2D97, 0x2D9F),
    (0x2DA7, 0x2DA7), (0x2DAF, 0x2DAF), (0x2DB7, 0x2DB7), (0x2DBF, 0x2DBF), (0x2DC7, 0x2DC7), (0x2DCF, 0x2DCF),
    (0x2DD7, 0x2DD7), (0x2DDF, 0x2DDF), (0x2E5E, 0x2E7F), (0x2E9A, 0x2E9A), (0x2EF4, 0x2EFF), (0x2FD6, 0x2FEF),
    (0x2FFC, 0x3000), (0x3040, 0x3040), (0x3097, 0x3098), (0x3100, 0x3104), (0x3130, 0x3130), (0x318F, 0x318F),
    (0x31E4, 0x31EF), (0x321F, 0x321F), (0xA48D, 0xA48F), (0xA4C7, 0xA4CF), (0xA62C, 0xA63F), (0xA6F8, 0xA6FF),
    (0xA7CB, 0xA7CF), (0xA7D2, 0xA7D2), (0xA7D4, 0xA7D4), (0xA7DA, 0xA7F1), (0xA82D, 0xA82F), (0xA83A, 0xA83F),
    (0xA878, 0xA87F), (0xA8C6, 0xA8CD), (0xA8DA, 0xA8DF), (0xA954, 0xA95E), (0xA97D, 0xA97F), (0xA9CE, 0xA9CE),
    (0xA9DA, 0xA9DD), (0xA9FF, 0xA9FF), (0xAA37, 0xAA3F), (0xAA4E, 0xAA4F), (0xAA5A, 0xAA5B), (0xAAC3, 0xAADA),
    (0xAAF7, 0xAB00), (0xAB07, 0xAB08), (0xAB0F, 0xAB10), (0xAB17, 0xAB1F), (0xAB27, 0xAB27), (0xAB2F, 0xAB2F),
    (0xAB6C, 0xAB6F), (0xABEE, 0xABEF), (0xABFA, 0xABFF), (0xD7A4, 0xD7AF), (0xD7C7, 0xD7CA), (0xD7FC, 0xF8FF),
    (0xFA6E, 0xFA6F), (0xFADA, 0xFAFF), (0xFB07, 0xFB12), (0xFB18, 0xFB1C), (0xFB37, 0xFB37), (0xFB3D, 0xFB3D),
    (0xFB3F, 0xFB3F), (0xFB42, 0xFB42), (0xFB45, 0xFB45), (0xFBC3, 0xFBD2), (0xFD90, 0xFD91), (0xFDC8, 0xFDCE),
    (0xFDD0, 0xFDEF), (0xFE1A, 0xFE1F), (0xFE53, 0xFE53), (0xFE67, 0xFE67), (0xFE6C, 0xFE6F), (0xFE75, 0xFE75),
    (0xFEFD, 0xFF00), (0xFFBF, 0xFFC1), (0xFFC8, 0xFFC9), (0xFFD0, 0xFFD1), (0xFFD8, 0xFFD9), (0xFFDD, 0xFFDF),
    (0xFFE7, 0xFFE7), (0xFFEF, 0xFFFB), (0xFFFE, 0xFFFF), (0x1000C, 0x1000C), (0x10027, 0x10027), (0x1003B, 0x1003B),
    (0x1003E, 0x1003E), (0x1004E, 0x1004F), (0x1005E, 0x1007F), (0x100FB, 0x100FF), (0x10103, 0x10106), (0x10134, 0x10136),
    (0x1018F, 0x1018F), (0x1019D, 0x1019F), (0x101A1, 0x101CF), (0x101FE, 0x1027F), (0x1029D, 0x1029F), (0x102D1, 0x102DF),
    (0x102FC, 0x102FF), (0x10324, 0x1032C), (0x1034B, 0x1034F), (0x1037B, 0x1037F), (0x1039E, 0x1039E), (0x103C4, 0x103C7),
    (0x103D6, 0x103FF), (0x1049E, 0x1049F), (0x104AA, 0x104AF), (0x104D4, 0x104D7), (0x104FC, 0x104FF), (0x10528, 0x1052F),
    (0x10564, 0x1056E), (0x1057B, 0x1057B), (0x1058B, 0x1058B), (0x10593, 0x10593), (0x10596, 0x10596), (0x105A2, 0x105A2),
    (0x105B2, 0x105B2), (0x105BA, 0x105BA), (0x105BD, 0x105FF), (0x10737, 0x1073F), (0x10756, 0x1075F), (0x10768, 0x1077F),
    (0x10786, 0x10786), (0x107B1, 0x107B1), (0x107BB, 0x107FF), (0x10806, 0x10807), (0x10809, 0x10809), (0x10836, 0x10836),
    (0x10839, 0x1083B), (0x1083D, 0x1083E), (0x10856, 0x10856), (0x1089F, 0x108A6), (0x108B0, 0x108DF), (0x108F3, 0x108F3),
    (0x108F6, 0x108FA), (0x1091C, 0x1091E), (0x1093A, 0x1093E), (0x10940, 0x1097F), (0x109B8, 0x109BB), (0x109D0, 0x109D1),
    (0x10A04, 0x10A04), (0x10A07, 0x10A0B), (0x10A14, 0x10A14), (0x10A18, 0x10A18), (0x10A36, 0x10A37), (0x10A3B, 0x10A3E),
    (0x10A49, 0x10A4F), (0x10A59, 0x10A5F), (0x10AA0, 0x10ABF), (0x10AE7, 0x10AEA), (0x10AF7, 0x10AFF), (0x10B36, 0x10B38),
    (0x10B56, 0x10B57), (0x10B73, 0x10B77), (0x10B92, 0x10B98), (0x10B9D, 0x10BA8), (0x10BB0, 0x10BFF), (0x10C49, 0x10C7F),
    (0x10CB3, 0x10CBF), (0x10CF3, 0x10CF9), (0x10D28, 0x10D2F), (0x10D3A, 0x10E5F), (0x10E7F, 0x10E7F), (0x10EAA, 0x10EAA),
    (0x10EAE, 0x10EAF), (0x10EB2, 0x10EFF), (0x10F28, 0x10F2F), (0x10F5A, 0x10F6F), (0x10F8A, 0x10FAF), (0x10FCC, 0x10FDF),
    (0x10FF7, 0x10FFF), (0x1104E, 0x11051), (0x11076, 0x1107E), (0x110BD, 0x110BD), (0x110C3, 0x110CF), (0x110E9, 0x110EF),
    (0x110FA, 0x110FF), (0x11135, 0x11135), (0x11148, 0x1114F), (0x11177, 0x1117F), (0x111E0, 0x111E0), (0x111F5, 0x111FF),
    (0x11212, 0x11212), (0x1123F, 0x1127F), (0x11287, 0x11287), (0x11289, 0x11289), (0x1128E, 0x1128E), (0x1129E, 0x1129E),
    (0x112AA, 0x112AF), (0x112EB, 0x112EF), (0x112FA, 0x112FF), (0x11304, 0x11304), (0x1130D, 0x1130E), (0x11311, 0x11312),
    (0x11329, 0x11329), (0x11331, 0x11331), (0x11334, 0x11334), (0x1133A, 0x1133A), (0x11345, 0x11346), (0x11349, 0x1134A),
    (0x1134E, 0x1134F), (0x11351, 0x11356), (0x11358, 0x1135C), (0x11364, 0x11365), (0x1136D, 0x1136F), (0x11375, 0x113FF),
    (0x1145C, 0x1145C), (0x11462, 0x1147F), (0x114C8, 0x114CF), (0x114DA, 0x1157F), (0x115B6, 0x115B7), (0x115DE, 0x115FF),
    (0x11645, 0x1164F), (0x1165A, 0x1165F), (0x1166D, 0x1167F), (0x116BA, 0x116BF), (0x116CA, 0x116FF), (0x1171B, 0x1171C),
    (0x1172C, 0x1172F), (0x11747, 0x117FF), (0x1183C, 0x1189F), (0x118F3, 0x118FE), (0x11907, 0x11908), (0x1190A, 0x1190B),
    (0x11914, 0x11914), (0x11917, 0x11917), (0x11936, 0x11936), (0x11939, 0x1193A), (0x11947, 0x1194F), (0x1195A, 0x1199F),
    (0x119A8, 0x119A9), (0x119D8, 0x119D9), (0x119E5, 0x119FF), (0x11A48, 0x11A4F), (0x11AA3, 0x11AAF), (0x11AF9, 0x11BFF),
    (0x11C09, 0x11C09), (0x11C37, 0x11C37), (0x11C46, 0x11C4F), (0x11C6D, 0x11C6F), (0x11C90, 0x11C91), (0x11CA8, 0x11CA8),
    (0x11CB7, 0x11CFF), (0x11D07, 0x11D07), (0x11D0A, 0x11D0A), (0x11D37, 0x11D39), (0x11D3B, 0x11D3B), (0x11D3E, 0x11D3E),
    (0x11D48, 0x11D4F), (0x11D5A, 0x11D5F), (0x11D66, 0x11D66), (0x11D69, 0x11D69), (0x11D8F, 0x11D8F), (0x11D92, 0x11D92),
    (0x11D99, 0x11D9F), (0x11DAA, 0x11EDF), (0x11EF9, 0x11FAF), (0x11FB1, 0x11FBF), (0x11FF2, 0x11FFE), (0x1239A, 0x123FF),
    (0x1246F, 0x1246F), (0x12475, 0x1247F), (0x12544, 0x12F8F), (0x12FF3, 0x12FFF), (0x1342F, 0x143FF), (0x14647, 0x167FF),
    (0x16A39, 0x16A3F), (0x16A5F, 0x16A5F), (0x16A6A, 0x16A6D), (0x16ABF, 0x16ABF), (0x16ACA, 0x16ACF), (0x16AEE, 0x16AEF),
    (0x16AF6, 0x16AFF), (0x16B46, 0x16B4F), (0x16B5A, 0x16B5A), (0x16B62, 0x16B62), (0x16B78, 0x16B7C), (0x16B90, 0x16E3F),
    (0x16E9B, 0x16EFF), (0x16F4B, 0x16F4E), (0x16F88, 0x16F8E), (0x16FA0, 0x16FDF), (0x16FE5, 0x16FEF), (0x16FF2, 0x16FFF),
    (0x187F8, 0x187FF), (0x18CD6, 0x18CFF), (0x18D09, 0x1AFEF), (0x1AFF4, 0x1AFF4), (0x1AFFC, 0x1AFFC), (0x1AFFF, 0x1AFFF),
    (0x1B123, 0x1B14F), (0x1B153, 0x1B163), (0x1B168, 0x1B16F), (0x1B2FC, 0x1BBFF), (0x1BC6B, 0x1BC6F), (0x1BC7D, 0x1BC7F),
    (0x1BC89, 0x1BC8F), (0x1BC9A, 0x1BC9B), (0x1BCA0, 0x1CEFF), (0x1CF2E, 0x1CF2F), (0x1CF47, 0x1CF4F), (0x1CFC4, 0x1CFFF),
    (0x1D0F6, 0x1D0FF), (0x1D127, 0x1D128), (0x1D173, 0x1D17A), (0x1D1EB, 0x1D1FF), (0x1D246, 0x1D2DF), (0x1D2F4, 0x1D2FF),
    (0x1D357, 0x1D35F), (0x1D379, 0x1D3FF), (0x1D455, 0x1D455), (0x1D49D, 0x1D49D), (0x1D4A0, 0x1D4A1), (0x1D4A3, 0x1D4A4),
    (0x1D4A7, 0x1D4A8), (0x1D4AD, 0x1D4AD), (0x1D4BA, 0x1D4BA), (0x1D4BC, 0x1D4BC), (0x1D4C4, 0x1D4C4), (0x1D506, 0x1D506),
    (0x1D50B, 0x1D50C), (0x1D515, 0x1D515), (0x1D51D, 0x1D51D), (0x1D53A, 0x1D53A), (0x1D53F, 0x1D53F), (0x1D545, 0x1D545),
    (0x1D547, 0x1D549), (0x1D551, 0x1D551), (0x1D6A6, 0x1D6A7), (0x1D7CC, 0x1D7CD), (0x1DA8C, 0x1DA9A), (0x1DAA0, 0x1DAA0),
    (0x1DAB0, 0x1DEFF), (0x1DF1F, 0x1DFFF), (0x1E007, 0x1E007), (0x1E019, 0x1E01A), (0x1E022, 0x1E022), (0x1E025, 0x1E025),
    (0x1E02B, 0x1E0FF), (0x1E12D, 0x1E12F), (0x1E13E, 0x1E13F), (0x1E14A, 0x1E14D), (0x1E150, 0x1E28F), (0x1E2AF, 0x1E2BF),
    (0x1E2FA, 0x1E2FE), (0x1E300, 0x1E7DF), (0x1E7E7, 0x1E7E7), (0x1E7EC, 0x1E7EC), (0x1E7EF, 0x1E7EF), (0x1E7FF, 0x1E7FF),
    (0x1E8C5, 0x1E8C6), (0x1E8D7, 0x1E8FF), (0x1E94C, 0x1E94F), (0x1E95A, 0x1E95D), (0x1E960, 0x1EC70), (0x1ECB5, 0x1ED00),
    (0x1ED3E, 0x1EDFF), (0x1EE04, 0x1EE04), (0x1EE20, 0x1EE20), (0x1EE23, 0x1EE23), (0x1EE25, 0x1EE26), (0x1EE28, 0x1EE28),
    (0x1EE33, 0x1EE33), (0x1EE38, 0x1EE38), (0x1EE3A, 0x1EE3A), (0x1EE3C, 0x1EE41), (0x1EE43, 0x1EE46), (0x1EE48, 0x1EE48),
    (0x1EE4A, 0x1EE4A), (0x1EE4C, 0x1EE4C), (0x1EE50, 0x1EE50), (0x1EE53, 0x1EE53), (0x1EE55, 0x1EE56), (0x1EE58, 0x1EE58),
    (0x1EE5A, 0x1EE5A), (0x1EE5C, 0x1EE5C), (0x1EE5E, 0x1EE5E), (0x1EE60, 0x1EE60), (0x1EE63, 0x1EE63), (0x1EE65, 0x1EE66),
    (0x1EE6B, 0x1EE6B), (0x1EE73, 0x1EE73), (0x1EE78, 0x1EE78), (0x1EE7D, 0x1EE7D), (0x1EE7F, 0x1EE7F), (0x1EE8A, 0x1EE8A),
    (0x1EE9C, 0x1EEA0), (0x1EEA4, 0x1EEA4), (0x1EEAA, 0x1EEAA), (0x1EEBC, 0x1EEEF), (0x1EEF2, 0x1EFFF), (0x1F02C, 0x1F02F),
    (0x1F094, 0x1F09F), (0x1F0AF, 0x1F0B0), (0x1F0C0, 0x1F0C0), (0x1F0D0, 0x1F0D0), (0x1F0F6, 0x1F0FF), (0x1F1AE, 0x1F1E5),
    (0x1F203, 0x1F20F), (0x1F23C, 0x1F23F), (0x1F249, 0x1F24F), (0x1F252, 0x1F25F), (0x1F266, 0x1F2FF), (0x1F6D8, 0x1F6DC),
    (0x1F6ED, 0x1F6EF), (0x1F6FD, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D9, 0x1F7DF), (0x1F7EC, 0x1F7EF), (0x1F7F1, 0x1F7FF),
    (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8AF), (0x1F8B2, 0x1F8FF),
    (0x1FA54, 0x1FA5F), (0x1FA6E, 0x1FA6F), (0x1FA75, 0x1FA77), (0x1FA7D, 0x1FA7F), (0x1FA87, 0x1FA8F), (0x1FAAD, 0x1FAAF),
    (0x1FABB, 0x1FABF), (0x1FAC6, 0x1FACF), (0x1FADA, 0x1FADF), (0x1FAE8, 0x1FAEF), (0x1FAF7, 0x1FAFF), (0x1FB93, 0x1FB93),
    (0x1FBCB, 0x1FBEF), (0x1FBFA, 0x1FFFF), (0x2A6E0, 0x2A6FF), (0x2B739, 0x2B73F), (0x2B81E, 0x2B81F), (0x2CEA2, 0x2CEAF),
    (0x2EBE1, 0x2F7FF), (0x2FA1E, 0x2FFFF), (0x3134B, 0xE00FF), (0xE01F0, 0x10FFFF),
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(template: &str, context: &Value) -> String {
        render(template, context).unwrap_or_else(|e| panic!("{template:?}: {e}"))
    }

    fn number(text: &str) -> String {
        let value: Value = serde_json::from_str(&format!("{{\"n\": {text}}}")).unwrap();
        r("{{n}}", &value)
    }

    #[test]
    fn escapes_like_python3_html_escape() {
        let ctx = json!({"x": "& < > \" ' é"});
        assert_eq!(r("{{x}}", &ctx), "&amp; &lt; &gt; &quot; &#x27; é");
        assert_eq!(r("{{{x}}}|{{&x}}|{{& x }}", &ctx), "& < > \" ' é|& < > \" ' é|& < > \" ' é");
    }

    #[test]
    fn numbers_print_as_python_str_of_the_decoded_json() {
        let cases = [
            ("0", "0"),
            ("-0", "0"),
            ("42", "42"),
            ("-7", "-7"),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            ("1.0", "1.0"),
            ("2.50", "2.5"),
            ("-0.0", "-0.0"),
            ("0.1", "0.1"),
            ("100.0", "100.0"),
            ("1E5", "100000.0"),
            ("1e15", "1000000000000000.0"),
            ("1e16", "1e+16"),
            ("1e22", "1e+22"),
            ("0.0001", "0.0001"),
            ("0.000123", "0.000123"),
            ("1e-5", "1e-05"),
            ("2.5e-5", "2.5e-05"),
            ("12345678.9", "12345678.9"),
            ("123456789012.5", "123456789012.5"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("1e-400", "0.0"),
            ("1e400", "inf"),
            ("-1e400", "-inf"),
        ];
        for (text, want) in cases {
            assert_eq!(number(text), want, "{text}");
        }
        // Values built in code rather than parsed print the same way.
        assert_eq!(r("{{a}} {{b}} {{c}}", &json!({"a": 1.0, "b": 5, "c": -2.5e-7})), "1.0 5 -2.5e-07");
    }

    #[test]
    fn containers_print_as_python_repr() {
        let ctx = json!({"l": [1, "a", true, false, null, 1.5, {"k": "v", "z": []}], "o": {}});
        assert_eq!(r("{{{l}}}", &ctx), "[1, 'a', True, False, None, 1.5, {'k': 'v', 'z': []}]");
        assert_eq!(r("{{l}}", &json!({"l": ["it's"]})), "[&quot;it&#x27;s&quot;]");
        assert_eq!(r("{{{o}}}", &ctx), "{}");
        let strings = json!({"l": ["it's", "say \"hi\"", "both ' \"", "a\\b", "\t\n\r\u{1}\u{7f}", "é\u{a0}\u{2028}\u{1F600}\u{200b}\u{10FFFF}"]});
        assert_eq!(
            r("{{{l}}}", &strings),
            r#"["it's", 'say "hi"', 'both \' "', 'a\\b', '\t\n\r\x01\x7f', 'é\xa0\u2028😀\u200b\U0010ffff']"#
        );
        // Deep nesting is written without recursion.
        let mut deep = json!(1);
        for _ in 0..1_000 {
            deep = json!([deep]);
        }
        let text = r("{{{d}}}", &json!({"d": deep}));
        assert_eq!(text.len(), 2_001);
    }

    #[test]
    fn truthiness_is_pythons() {
        let ctx = json!({"z": 0, "zf": 0.0, "e": "", "el": [], "eo": {}, "n": null, "f": false,
                         "s0": "0", "one": 1, "neg": -0.5, "l": [0], "o": {"a": 0}});
        let falsy = ["z", "zf", "e", "el", "eo", "n", "f", "missing"];
        let truthy = ["s0", "one", "neg", "l", "o"];
        for name in falsy {
            assert_eq!(
                r(&format!("{{{{#{name}}}}}y{{{{/{name}}}}}{{{{^{name}}}}}n{{{{/{name}}}}}"), &ctx),
                "n",
                "{name}"
            );
        }
        for name in truthy {
            assert_eq!(
                r(&format!("{{{{#{name}}}}}y{{{{/{name}}}}}{{{{^{name}}}}}n{{{{/{name}}}}}"), &ctx),
                "y",
                "{name}"
            );
        }
    }

    #[test]
    fn names_resolve_through_the_stack() {
        let ctx = json!({"x": "root", "a": {"b": {"c": "deep"}, "y": "A"}, "l": [1, {"x": "item"}]});
        assert_eq!(r("{{a.b.c}}|{{a.x.c}}|{{a.b.c.d}}|{{nope}}", &ctx), "deep|||");
        assert_eq!(r("{{#a}}{{x}}/{{y}}{{/a}}", &ctx), "root/A");
        assert_eq!(r("{{#l}}{{x}},{{/l}}", &ctx), "root,item,");
        assert_eq!(r("{{#l}}({{.}}){{/l}}", &json!({"l": ["a", 1, null]})), "(a)(1)(None)");
        assert_eq!(r("[{{.}}]", &json!("top")), "[top]");
        // Only the first part of a dotted name searches the stack.
        assert_eq!(r("{{#a}}[{{b.x}}]{{/a}}", &json!({"a": {"b": {}}, "b": {"x": 1}})), "[]");
        // A null context is an empty stack (cfn-init does not render at all then).
        assert_eq!(r("[{{.}}{{x}}]", &Value::Null), "[]");
    }

    #[test]
    fn standalone_lines_disappear() {
        let ctx = json!({"l": ["a", "b"], "t": true});
        assert_eq!(r("x\n{{#l}}\n- {{.}}\n{{/l}}\ny\n", &ctx), "x\n- a\n- b\ny\n");
        assert_eq!(r("x\r\n  {{! c }}\r\ny", &ctx), "x\r\ny");
        assert_eq!(r("{{#t}} \nx\n{{/t}}", &ctx), " \nx\n");
        assert_eq!(r("  {{t}}\n", &ctx), "  True\n");
        assert_eq!(r("a\n  {{>partial}}\nb", &ctx), "a\nb");
    }

    #[test]
    fn delimiters_change() {
        let ctx = json!({"x": "<v>"});
        assert_eq!(r("{{=<% %>=}}<% x %> {{x}} <%={{ }}=%>{{x}}", &ctx), "&lt;v&gt; {{x}} &lt;v&gt;");
        assert_eq!(r("{{=[[ ]]=}}[[{x}]] [[&x]]", &ctx), "<v> <v>");
        let err = render("a\n {{=<%=}}", &ctx).unwrap_err();
        assert_eq!(
            err.to_string(),
            "set-delimiter tag {{=<%=}} at 2:2 does not name two delimiters separated by whitespace"
        );
    }

    #[test]
    fn odd_tags_follow_pystaches_pattern() {
        let ctx = json!({" ": "space", "#": "hash", "{x": "brace", "a b": "ab", "x": "X"});
        assert_eq!(r("a{{}}b", &ctx), "a{{}}b");
        assert_eq!(r("a{{ }}b", &ctx), "aspaceb");
        assert_eq!(r("[{{#}}]", &ctx), "[hash]");
        assert_eq!(r("[{{{x}}]", &ctx), "[brace]");
        assert_eq!(r("[{{a b}}]", &ctx), "[ab]");
        assert_eq!(r("[{{\nx\n}}]", &ctx), "[X]");
        assert_eq!(r("[{{\u{a0}x\u{a0}}}]", &ctx), "[X]");
        assert_eq!(r("a {{x b", &ctx), "a {{x b");
    }

    #[test]
    fn unclosed_section_keeps_only_its_body() {
        // pystache's parser returns the innermost open section's body.
        let ctx = json!({"x": false, "y": "Y"});
        assert_eq!(r("a{{#x}}b{{y}}c", &ctx), "bYc");
        assert_eq!(r("a{{#x}}b{{#z}}c{{/z}}d{{#w}}e", &ctx), "e");
    }

    #[test]
    fn errors_name_the_position() {
        let ctx = json!({"x": true});
        let err = render("a\n{{#x}}\nb {{/y}}", &ctx).unwrap_err();
        assert_eq!(err.to_string(), "closing tag {{/y}} at 3:3 does not match the open section {{#x}} at 2:1");
        let err = render("é{{/x}}", &ctx).unwrap_err();
        assert_eq!(err.to_string(), "closing tag {{/x}} at 1:2 has no open section");
        let err = render("{{/x\n\ty}}", &ctx).unwrap_err();
        assert_eq!(err.to_string(), "closing tag {{/x\\n\\ty}} at 1:1 has no open section");
    }

    #[test]
    fn nesting_depth_is_bounded() {
        let deep = |n: usize| format!("{}x{}", "{{#a}}".repeat(n), "{{/a}}".repeat(n));
        assert_eq!(r(&deep(MAX_DEPTH), &json!({"a": true})), "x");
        let err = render(&deep(MAX_DEPTH + 1), &json!({"a": true})).unwrap_err();
        assert_eq!(err, MustacheError::TooDeep { at: Position { line: 1, column: 6 * MAX_DEPTH + 1 }, max: MAX_DEPTH });
        // Not rendered, so not too deep; and a huge parse tree is no problem.
        assert_eq!(r(&format!("<{{{{#f}}}}{}{{{{/f}}}}>", deep(100_000)), &json!({"a": true})), "<>");
        // 100 000 unclosed sections: only the innermost (empty) body remains.
        assert_eq!(r(&"{{^n}}".repeat(100_000), &json!({})), "");
    }

    #[test]
    fn output_is_capped() {
        let ten: Vec<u8> = (0..10).collect();
        let ctx = json!({"l": ten, "s": "x".repeat(1 << 20)});
        let template = format!("{}{{{{{{s}}}}}}{}", "{{#l}}".repeat(8), "{{/l}}".repeat(8));
        assert_eq!(render(&template, &ctx).unwrap_err(), MustacheError::TooLarge { max: MAX_OUTPUT });
    }

    #[test]
    fn golden_cases_match_python3_pystache() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/mustache/cases.json");
        let text = std::fs::read_to_string(path).expect("golden cases");
        let cases: Vec<Value> = serde_json::from_str(&text).expect("golden JSON");
        assert!(cases.len() >= 40);
        let mut failures = Vec::new();
        for case in &cases {
            let name = case["name"].as_str().unwrap_or("?");
            let template = case["template"].as_str().expect("template");
            let got = render(template, &case["context"]);
            match (&case["py3_error"], &case["py3_pystache"], got) {
                (Value::String(_), _, Ok(out)) => failures.push(format!("{name}: expected an error, got {out:?}")),
                (Value::String(_), _, Err(_)) => {}
                (_, Value::String(want), Ok(out)) if *want == out => {}
                (_, want, got) => failures.push(format!("{name}: expected {want}, got {got:?}")),
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} golden cases differ:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }

    /// Deterministic pseudo-random templates: nothing may panic, whatever the input.
    #[test]
    fn random_templates_never_panic() {
        const FRAGMENTS: &[&str] = &[
            "{{",
            "}}",
            "{",
            "}",
            "{{{",
            "}}}",
            "#",
            "^",
            "/",
            "!",
            "&",
            ">",
            "=",
            " ",
            "\n",
            "\r\n",
            "\r",
            "\t",
            "a",
            "b",
            "l",
            "o",
            ".",
            "a.b",
            "<%",
            "%>",
            "|",
            "é",
            "\u{a0}",
            "\u{2028}",
            "\u{1c}",
            "😀",
            "{{#a}}",
            "{{/a}}",
            "{{^a}}",
            "{{#l}}",
            "{{/l}}",
            "{{x}}",
            "{{{x}}}",
            "{{&x}}",
            "{{.}}",
            "{{! c }}",
            "{{=<% %>=}}",
            "<%={{ }}=%>",
            "{{= | | =}}",
            "{{>p}}",
            "{{ }}",
            "{{#o}}",
            "{{/o}}",
            "{{o.k}}",
            "{{l}}",
            "<%x%>",
            "<%#a%>",
            "<%/a%>",
            "{{=",
            "=}}",
            "'",
            "\"",
            "<",
            "{{#.}}",
            "{{/.}}",
        ];
        let contexts = [
            json!({"a": true, "x": "X&'", "l": [1, "two", {"x": "lx"}, [3], null, false, 1.5], "o": {"k": "K"}}),
            json!({"a": [{"b": 1}, {"b": 2}], "x": 0, "l": [], "o": {}}),
            json!(["top", 1]),
            json!("str"),
            Value::Null,
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..4000 {
            let len = (next() % 40) as usize;
            let mut template = String::new();
            for _ in 0..len {
                if next() % 8 == 0 {
                    // an arbitrary character now and then
                    template.push(char::from_u32((next() % 0x3000) as u32).unwrap_or('?'));
                } else {
                    template.push_str(FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize]);
                }
            }
            let context = &contexts[(next() % contexts.len() as u64) as usize];
            if let Err(e) = render(&template, context) {
                assert!(!e.to_string().contains('\n'), "{e}");
            }
        }
    }
}
