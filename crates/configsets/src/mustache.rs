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
//! search resumes where the previous one stopped). Rendered sections may nest at most
//! [`MAX_DEPTH`] deep (pystache fails with Python's recursion limit a little above 300),
//! the output is capped at [`MAX_OUTPUT`] bytes and the work at [`MAX_STEPS`] steps, so
//! no template can exhaust the stack or memory or loop for ever (pystache renders nested
//! loops until it is killed).

use cfn_python::repr::write_repr;
use cfn_python::truth::is_truthy;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// How deeply rendered sections (and inverted sections) may nest.
pub const MAX_DEPTH: usize = 256;

/// The largest rendered output accepted, in bytes.
pub const MAX_OUTPUT: usize = 256 * 1024 * 1024;

/// The most rendering steps accepted. A step is a unit of work: every section pass (each
/// item of a list a section iterates over, and the template itself), every text run or
/// tag rendered, and every stack item and name part looked at to resolve a name.
///
/// Nested sections multiply: twenty sections over a ten-item list are 10^20 passes with
/// no output for [`MAX_OUTPUT`] to stop. Real templates are far from the limit: metadata
/// is at most a few hundred KiB, so a template looping over its largest list with a few
/// dozen tags per item takes a few million steps. Fifty million steps take well under a
/// second in a release build (about a second unoptimised), so a runaway template fails
/// quickly instead of hanging cfn-init.
pub const MAX_STEPS: u64 = 50_000_000;

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
    #[error("rendering needs more than {max} steps (section passes, text runs, tags and name look-ups)")]
    TooManySteps { max: u64 },
}

impl MustacheError {
    /// Whether rendering was stopped by one of the bounds ([`MAX_DEPTH`], [`MAX_OUTPUT`],
    /// [`MAX_STEPS`]) rather than by an error in the template's text.
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            MustacheError::TooDeep { .. } | MustacheError::TooLarge { .. } | MustacheError::TooManySteps { .. }
        )
    }
}

/// Render `template` with `context` as the bottom of the context stack.
///
/// A JSON `null` context gives an empty stack (pystache skips `None`); note that cfn-init
/// itself does not render at all when `context` is `null`.
pub fn render(template: &str, context: &Value) -> Result<String, MustacheError> {
    render_within(template, context, MAX_STEPS)
}

/// [`render`] with a budget of `max_steps` instead of [`MAX_STEPS`] (tests use small ones).
fn render_within(template: &str, context: &Value, max_steps: u64) -> Result<String, MustacheError> {
    let parsed = Parser::new(template).parse()?;
    let mut renderer =
        Renderer { template, nodes: &parsed.nodes, out: String::with_capacity(template.len()), steps: 0, max_steps };
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
        if first == Some('=')
            && let Some((key, end)) = self.bracketed(r0, 0)
        {
            return Some(Tag { kind: Kind::Delimiters, key, end });
        }
        if first == Some('{')
            && let Some((key, end)) = self.bracketed(r0, 1)
        {
            return Some(Tag { kind: Kind::Raw, key, end });
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
        if let Some(kind) = sigil
            && let Some((key, end)) = self.plain(r0 + 1)
        {
            return Some(Tag { kind, key, end });
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
    /// Rendering steps taken so far, against `max_steps` ([`MAX_STEPS`]).
    steps: u64,
    max_steps: u64,
}

impl Renderer<'_, '_> {
    fn range(&mut self, from: usize, to: usize, stack: &mut Vec<&Value>, depth: usize) -> Result<(), MustacheError> {
        // A pass over an empty body costs a step too: it is what nested loops multiply.
        self.step()?;
        let mut i = from;
        while i < to {
            self.step()?;
            match &self.nodes[i] {
                Node::Text(span) => {
                    let text = &self.template[span.clone()];
                    self.push(|out| out.push_str(text))?;
                    i += 1;
                }
                Node::Escaped(key) => {
                    if let Some(value) = self.lookup(stack, key)? {
                        self.push(|out| write_str_value(out, value, true))?;
                    }
                    i += 1;
                }
                Node::Raw(key) => {
                    if let Some(value) = self.lookup(stack, key)? {
                        self.push(|out| write_str_value(out, value, false))?;
                    }
                    i += 1;
                }
                Node::Section { key, inverted, end, at } => {
                    let (end, at) = (*end, *at);
                    let value = self.lookup(stack, key)?;
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

    fn step(&mut self) -> Result<(), MustacheError> {
        self.charge(1)
    }

    /// [`lookup`], its cost counted as steps.
    fn lookup<'v>(&mut self, stack: &[&'v Value], key: &Span) -> Result<Option<&'v Value>, MustacheError> {
        let mut cost = 0;
        let value = lookup(stack, &self.template[key.clone()], &mut cost);
        self.charge(cost)?;
        Ok(value)
    }

    fn charge(&mut self, steps: u64) -> Result<(), MustacheError> {
        self.steps = self.steps.saturating_add(steps);
        if self.steps > self.max_steps {
            return Err(MustacheError::TooManySteps { max: self.max_steps });
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

/// pystache's name resolution; `None` is "not found" (renders as `""`, falsy). `cost`
/// grows by the stack items and name parts looked at, which is the work done.
fn lookup<'v>(stack: &[&'v Value], name: &str, cost: &mut u64) -> Option<&'v Value> {
    *cost += 1;
    if name == "." {
        return stack.last().copied();
    }
    let mut parts = name.split('.');
    let first = parts.next().unwrap_or_default();
    let mut value = stack.iter().rev().find_map(|item| {
        *cost += 1;
        item.as_object().and_then(|map| map.get(first))
    })?;
    for part in parts {
        *cost += 1;
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

// ------------------------------------------------------------------------------------
// Python's str() / repr() of decoded JSON

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

#[cfg(test)]
mod fuzz;

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
    fn nested_loops_are_bounded() {
        let ten: Vec<u8> = (0..10).collect();
        let started = std::time::Instant::now();
        // Twenty sections over ten items: 10^20 passes, no output. It stops at the budget.
        let template = format!("{}{}", "{{#l}}".repeat(20), "{{/l}}".repeat(20));
        let err = render(&template, &json!({ "l": ten })).unwrap_err();
        assert_eq!(err, MustacheError::TooManySteps { max: MAX_STEPS });
        assert_eq!(
            err.to_string(),
            format!("rendering needs more than {MAX_STEPS} steps (section passes, text runs, tags and name look-ups)")
        );
        // Ten million missing names under 254 sections, each searching the whole stack:
        // under the budget by tags alone, but the search is counted, so this stops as early.
        let template = format!(
            "{}{}{}{}{}",
            "{{#t}}".repeat(250),
            "{{#l}}".repeat(4),
            "{{nope}}".repeat(1000),
            "{{/l}}".repeat(4),
            "{{/t}}".repeat(250)
        );
        let err = render(&template, &json!({ "l": ten, "t": true })).unwrap_err();
        assert_eq!(err, MustacheError::TooManySteps { max: MAX_STEPS });
        let elapsed = started.elapsed();
        assert!(elapsed < std::time::Duration::from_secs(20), "{elapsed:?}");
    }

    #[test]
    fn large_real_templates_stay_within_the_budget() {
        // 100 000 items with ten tags each, three sections deep: a few million steps.
        let items: Vec<Value> = (0..100_000).map(|i| json!({"name": format!("n{i}"), "port": i})).collect();
        let context = json!({"cfg": {"hosts": items, "domain": "example.com"}});
        let body = "{{name}}.{{domain}}:{{port}} {{#port}}on{{/port}}{{^port}}off{{/port}} {{cfg.domain}} {{{name}}} {{& name}} {{missing}}\n";
        let template = format!("{{{{#cfg}}}}{{{{#hosts}}}}{body}{{{{/hosts}}}}{{{{/cfg}}}}");
        let out = r(&template, &context);
        assert_eq!(out.lines().count(), 100_000);
        assert!(out.starts_with("n0.example.com:0 off example.com n0 n0 \n"), "{}", &out[..80]);
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
}
