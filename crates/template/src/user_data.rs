//! The text a template gives an instance without resolving it: the user data of
//! `AWS::EC2::Instance`, `AWS::EC2::LaunchTemplate` and
//! `AWS::AutoScaling::LaunchConfiguration`, and the content of Init's files, with
//! `Fn::Sub` and `Fn::Join` flattened into one text.
//!
//! Nothing is resolved: a value only a stack knows stays a placeholder that can be told
//! from text, `${Name}` for `Ref` and the variables of `Fn::Sub` (`{"Ref": "AWS::Region"}`
//! and `${AWS::Region}` both give `${AWS::Region}`), `${Resource.Attribute}` for
//! `Fn::GetAtt`, `${Fn::If}` and the like for the other functions. Each piece of text
//! keeps the template line it came from, so that a finding about a script line can point
//! at the line of the template that wrote it: line N of a YAML block scalar (`|`) is
//! template line start + 1 + N, a `Fn::Join` item is at its own position, a JSON string
//! is on the line of its opening quote.

use crate::limits::{Budget, MAX_DEPTH, WORK};
use crate::location::{Node, Position};
use crate::{Error, ErrorKind, Template};
use base64::Engine;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::ops::Range;

/// The most bytes one flattened text may hold: `Fn::Sub` variables repeat their value,
/// and nested, repeat it again; real user data is a few kilobytes (EC2 takes 16 KiB).
pub const MAX_TEXT: usize = 1 << 20;

/// A flattened text and where each piece of it is in the template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text {
    pub text: String,
    pieces: Vec<Piece>,
    /// The byte offset of each newline of `text`, so that a line is found by a binary
    /// search, not by counting (one count per finding made validate quadratic).
    newlines: Vec<usize>,
    /// Cut at [`MAX_TEXT`].
    pub truncated: bool,
}

/// A piece of text starting at byte `start` of the flattened text, from template line
/// `line`; in a block scalar each newline is one more template line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    start: usize,
    line: usize,
    block: bool,
}

impl Text {
    /// The template line of byte `offset` of the text.
    pub fn line_of(&self, offset: usize) -> Option<usize> {
        let index = self.pieces.partition_point(|p| p.start <= offset).checked_sub(1)?;
        let piece = self.pieces[index];
        let end = offset.min(self.text.len());
        let newlines_before = |at: usize| self.newlines.partition_point(|&n| n < at);
        Some(match piece.block {
            true => piece.line + newlines_before(end).saturating_sub(newlines_before(piece.start)),
            false => piece.line,
        })
    }

    fn push(&mut self, text: &str, line: Option<usize>, block: bool) {
        if text.is_empty() || self.truncated {
            return;
        }
        let room = MAX_TEXT.saturating_sub(self.text.len());
        let text = match text.len() > room {
            true => {
                self.truncated = true;
                let mut cut = room;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                &text[..cut]
            }
            false => text,
        };
        if let Some(line) = line {
            self.pieces.push(Piece { start: self.text.len(), line, block });
        }
        let start = self.text.len();
        self.newlines.extend(text.match_indices('\n').map(|(at, _)| start + at));
        self.text.push_str(text);
    }
}

/// The user data of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserData {
    pub resource: String,
    /// The JSON pointer of the UserData value.
    pub pointer: String,
    pub script: Text,
}

/// Where each resource type keeps its user data.
const USER_DATA: &[(&str, &str)] = &[
    ("AWS::EC2::Instance", "/Properties/UserData"),
    ("AWS::EC2::LaunchTemplate", "/Properties/LaunchTemplateData/UserData"),
    ("AWS::AutoScaling::LaunchConfiguration", "/Properties/UserData"),
];

/// What flattening a template's texts says when it is over its work bound.
const OVER_WORK: &str = "flattening the user data and cfn-hup files of the template takes";

/// Flattens the texts of one template: its user data, and any value given to
/// [`Reader::flatten`]. All of them share one work budget ([`WORK`]: steps in proportion
/// to the template's size), so that no template, however its `Fn::Sub` variables nest
/// and repeat, keeps `validate -t` busy for longer than its size allows.
pub struct Reader<'a> {
    template: &'a Template,
    lines: Lines<'a>,
    work: Budget,
}

impl<'a> Reader<'a> {
    /// A reader of `template`; `source` is the text it was parsed from.
    pub fn new(template: &'a Template, source: &'a str) -> Reader<'a> {
        Reader { template, lines: Lines::new(source), work: Budget::of(WORK, template.length()) }
    }

    /// The steps taken so far, in the units of [`WORK`].
    pub fn work(&self) -> usize {
        self.work.used()
    }

    /// The user data of every instance, launch template and launch configuration, in
    /// template order; an error (of kind [`ErrorKind::Limit`]) naming the resource whose
    /// user data took the template over its work bound.
    pub fn scripts(&mut self) -> Result<Vec<UserData>, Error> {
        let template = self.template;
        let Some(resources) = template.value().get("Resources").and_then(Value::as_object) else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        for (name, resource) in resources {
            let kind = resource.get("Type").and_then(Value::as_str).unwrap_or("");
            let Some((_, within)) = USER_DATA.iter().find(|(t, _)| *t == kind) else { continue };
            let Some(value) = resource.pointer(within) else { continue };
            let pointer = format!("/Resources/{}{within}", escape(name));
            let script = match value.as_object().and_then(|m| m.get("Fn::Base64")) {
                Some(inner) => self.flatten(name, inner, &format!("{pointer}/Fn::Base64"))?,
                // Already encoded: its text, when it is base64 of UTF-8.
                None => {
                    let decoded = value.as_str().and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
                    let Some(text) = decoded.and_then(|bytes| String::from_utf8(bytes).ok()) else { continue };
                    self.charge(text.len(), name, &pointer)?;
                    let mut script = Text::default();
                    script.push(&text, template.position(&pointer).map(|p| p.line), false);
                    script
                }
            };
            found.push(UserData { resource: name.clone(), pointer, script });
        }
        Ok(found)
    }

    /// `value` (a string, `Fn::Sub`, `Fn::Join`, …) at `pointer`, in `resource`,
    /// flattened into one text; an error when it takes the template over its work bound.
    pub fn flatten(&mut self, resource: &str, value: &Value, pointer: &str) -> Result<Text, Error> {
        // Finding the place costs the pointer's length, which the caller also paid to make it.
        self.charge(pointer.len(), resource, pointer)?;
        let (node, position) = self.template.positions.place(pointer);
        let mut flattener = Flattener {
            template: self.template,
            lines: &mut self.lines,
            work: &self.work,
            out: Text::default(),
            made: HashMap::new(),
            over: None,
        };
        flattener.value(value, Place { node, position }, 0);
        match flattener.over {
            Some(message) => Err(self.over(message, resource, pointer)),
            None => Ok(flattener.out),
        }
    }

    fn charge(&self, steps: usize, resource: &str, pointer: &str) -> Result<(), Error> {
        self.work.charge(steps, OVER_WORK).map_err(|message| self.over(message, resource, pointer))
    }

    fn over(&self, message: String, resource: &str, pointer: &str) -> Error {
        Error::new(ErrorKind::Limit, self.template.name(), message)
            .at(self.template.position(pointer))
            .in_resource(resource)
            .with_pointer(Some(pointer.to_string()))
    }
}

/// A JSON pointer segment (RFC 6901).
pub fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// The template's text by line (as [`str::lines`] splits it), read at a line and column
/// without copying or counting from the line's start: a compact JSON template is one
/// line holding every value.
struct Lines<'a> {
    lines: Vec<&'a str>,
    /// For each line read, the byte offset of every [`STRIDE`]th character, so that a
    /// column (in characters) is a byte offset in a few steps; none for an ASCII line.
    strides: HashMap<usize, Option<Vec<usize>>>,
    /// Whether a line ends with a block scalar's indicator, by line read.
    indicators: HashMap<usize, bool>,
}

/// How many characters apart [`Lines::strides`] keeps byte offsets.
const STRIDE: usize = 64;

impl<'a> Lines<'a> {
    fn new(source: &'a str) -> Lines<'a> {
        Lines { lines: source.lines().collect(), strides: HashMap::new(), indicators: HashMap::new() }
    }

    /// Line `line` (from 1); "" past the end.
    fn line(&self, line: usize) -> &'a str {
        self.lines.get(line.wrapping_sub(1)).copied().unwrap_or("")
    }

    /// The text of line `line` from column `column` (in characters, from 1) to its end,
    /// and the steps finding it took.
    fn rest(&mut self, line: usize, column: usize) -> (&'a str, usize) {
        let text = self.line(line);
        let skip = column.saturating_sub(1);
        let mut steps = 1;
        let strides = self.strides.entry(line).or_insert_with(|| {
            steps += text.len();
            (!text.is_ascii()).then(|| text.char_indices().step_by(STRIDE).map(|(at, _)| at).collect())
        });
        let Some(strides) = strides else { return (text.get(skip..).unwrap_or(""), steps) };
        let Some(&from) = strides.get(skip / STRIDE) else { return ("", steps) };
        let at = text[from..].char_indices().nth(skip % STRIDE).map_or(text.len(), |(at, _)| from + at);
        (&text[at..], steps + skip % STRIDE)
    }

    /// Whether line `line` ends with a block scalar's indicator (`|`, `>`, with a
    /// chomping or indentation indicator, before a comment), and the steps telling took.
    fn indicates_block(&mut self, line: usize) -> (bool, usize) {
        if let Some(&known) = self.indicators.get(&line) {
            return (known, 1);
        }
        let text = self.line(line);
        let indicator = text.split(" #").next().unwrap_or("").trim_end();
        let indicator = indicator.trim_end_matches(|c: char| c.is_ascii_digit() || c == '+' || c == '-');
        let known = indicator.ends_with('|') || indicator.ends_with('>');
        self.indicators.insert(line, known);
        (known, text.len() + 1)
    }
}

/// Where a value is: its node in the template's positions, when it has one, and the
/// position of the value or of the nearest value holding it.
#[derive(Debug, Clone, Copy)]
struct Place {
    node: Option<Node>,
    position: Option<Position>,
}

/// Where a variable's value was first written in the text: its bytes and its pieces.
#[derive(Debug, Clone)]
struct Made {
    bytes: Range<usize>,
    pieces: Range<usize>,
}

struct Flattener<'r, 'a> {
    template: &'a Template,
    lines: &'r mut Lines<'a>,
    work: &'r Budget,
    out: Text,
    /// What each `Fn::Sub` variable's value made, by the value's address: each use after
    /// the first copies it rather than flattening the value again (nested, variables used
    /// n times each would otherwise flatten the innermost n^depth times).
    made: HashMap<*const Value, Made>,
    /// Over the work bound: the message; nothing more is done.
    over: Option<String>,
}

impl Flattener<'_, '_> {
    /// Counts `steps`; false once over the work bound.
    fn charge(&mut self, steps: usize) -> bool {
        if self.over.is_none()
            && let Err(message) = self.work.charge(steps, OVER_WORK)
        {
            self.over = Some(message);
        }
        self.over.is_none()
    }

    /// Whether nothing more is written: the text is cut, or the work bound reached.
    fn done(&self) -> bool {
        self.out.truncated || self.over.is_some()
    }

    /// Writes `text`, each byte a step.
    fn push(&mut self, text: &str, line: Option<usize>, block: bool) {
        if !self.out.truncated && self.charge(text.len()) {
            self.out.push(text, line, block);
        }
    }

    /// The place of `place`'s child `segment` (a key, or an index as text).
    fn child(&mut self, place: Place, segment: &str) -> Place {
        self.charge(segment.len());
        let positions = &self.template.positions;
        let node = place.node.and_then(|node| positions.child_of(node, segment));
        Place { node, position: node.and_then(|node| positions.value_of(node)).or(place.position) }
    }

    /// The template line the string `text` at `place` starts on, and whether it is a
    /// YAML block scalar, whose lines are template lines. The YAML reader places a block
    /// scalar at its first non-blank character (at its tag, when it has one): the
    /// indicator `|` or `>` ends the line before its first line.
    fn start(&mut self, place: Place, text: &str) -> (Option<usize>, bool) {
        let Some(position) = place.position else { return (None, false) };
        let (rest, steps) = self.lines.rest(position.line, position.column);
        self.charge(steps);
        if let Some(tagged) = rest.strip_prefix('!') {
            let tag = tagged.find(char::is_whitespace).unwrap_or(tagged.len());
            let after = tagged[tag..].trim_start();
            self.charge(tagged.len() - after.len());
            return match after.starts_with('|') || after.starts_with('>') {
                true => (Some(position.line + 1), true),
                false => (Some(position.line), false),
            };
        }
        if rest.starts_with('"') || rest.starts_with('\'') {
            return (Some(position.line), false);
        }
        let blank = text.bytes().take_while(|&b| b == b'\n').count();
        self.charge(blank);
        let first = position.line.saturating_sub(blank);
        let block = first > 1 && {
            let (block, steps) = self.lines.indicates_block(first - 1);
            self.charge(steps);
            block
        };
        match block {
            true => (Some(first), true),
            false => (Some(position.line), false),
        }
    }

    fn placeholder(&mut self, name: &str, place: Place) {
        let line = place.position.map(|p| p.line);
        self.push(&format!("${{{name}}}"), line, false);
    }

    /// Each value visited is a step.
    fn value(&mut self, value: &Value, place: Place, depth: usize) {
        if depth > MAX_DEPTH || self.done() || !self.charge(1) {
            return;
        }
        match value {
            Value::String(text) => {
                let (line, block) = self.start(place, text);
                self.push(text, line, block);
            }
            Value::Number(n) => self.push(&n.to_string(), place.position.map(|p| p.line), false),
            Value::Bool(b) => self.push(&b.to_string(), place.position.map(|p| p.line), false),
            Value::Object(map) if map.len() == 1 => {
                let Some((key, argument)) = map.iter().next() else { return };
                let at = self.child(place, key);
                match (key.as_str(), argument) {
                    ("Ref", Value::String(name)) => self.placeholder(name, place),
                    ("Fn::GetAtt", Value::Array(parts)) => {
                        let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                        self.placeholder(&parts.join("."), place)
                    }
                    ("Fn::GetAtt", Value::String(name)) => self.placeholder(name, place),
                    ("Fn::Sub", Value::String(text)) => self.sub(text, at, None, depth),
                    ("Fn::Sub", Value::Array(items)) if items.len() == 2 => match (&items[0], &items[1]) {
                        (Value::String(text), Value::Object(variables)) => {
                            let (text_at, variables_at) = (self.child(at, "0"), self.child(at, "1"));
                            self.sub(text, text_at, Some((variables, variables_at)), depth)
                        }
                        _ => self.placeholder(key, place),
                    },
                    ("Fn::Join", Value::Array(items)) if items.len() == 2 => match (&items[0], &items[1]) {
                        (Value::String(delimiter), Value::Array(parts)) => self.join(delimiter, parts, at, depth),
                        _ => self.placeholder(key, place),
                    },
                    _ => self.placeholder(key, place),
                }
            }
            _ => self.placeholder("?", place),
        }
    }

    /// `Fn::Join`'s parts at `at`, the delimiter between them (placed once, written
    /// between each two).
    fn join(&mut self, delimiter: &str, parts: &[Value], at: Place, depth: usize) {
        let line = match parts.len() > 1 {
            true => {
                let delimiter_at = self.child(at, "0");
                self.start(delimiter_at, delimiter).0
            }
            false => None,
        };
        let parts_at = self.child(at, "1");
        for (i, part) in parts.iter().enumerate() {
            if self.done() {
                return;
            }
            if i > 0 {
                self.push(delimiter, line, false);
            }
            let part_at = self.child(parts_at, &i.to_string());
            self.value(part, part_at, depth + 1);
        }
    }

    /// `Fn::Sub`'s string at `place`: its text, its variables given a value by
    /// `variables` (a literal, or flattened in turn) or left as `${Name}`.
    fn sub(&mut self, text: &str, place: Place, variables: Option<(&Map<String, Value>, Place)>, depth: usize) {
        // Reading the string is a step a byte.
        if !self.charge(text.len()) {
            return;
        }
        let (start, block) = self.start(place, text);
        let mut newlines = 0;
        for part in crate::sub::parts(text) {
            if self.done() {
                return;
            }
            match part {
                crate::sub::Part::Text(text) => {
                    self.push(text, start.map(|line| line + if block { newlines } else { 0 }), block);
                    newlines += text.matches('\n').count();
                }
                crate::sub::Part::Variable(name) => match variables.and_then(|(map, at)| Some((map.get(name)?, at))) {
                    Some((value, at)) => self.variable(name, value, at, depth + 1),
                    None => {
                        let line = start.map(|line| line + if block { newlines } else { 0 });
                        self.push(&format!("${{{name}}}"), line, false);
                    }
                },
            }
        }
    }

    /// The value of the variable `name` of the map at `variables`: flattened the first
    /// time, copied from what that made each time after.
    fn variable(&mut self, name: &str, value: &Value, variables: Place, depth: usize) {
        if let Some(made) = self.made.get(&(value as *const Value)).cloned() {
            self.copy(made);
            return;
        }
        let (bytes, pieces) = (self.out.text.len(), self.out.pieces.len());
        let at = self.child(variables, name);
        self.value(value, at, depth);
        if !self.done() {
            let made = Made { bytes: bytes..self.out.text.len(), pieces: pieces..self.out.pieces.len() };
            self.made.insert(value as *const Value, made);
        }
    }

    /// Writes again what a variable's value made, piece by piece, as flattening it again
    /// would: each piece's bytes with its line, the bytes before the first piece with none.
    fn copy(&mut self, made: Made) {
        if self.done() || !self.charge(1 + made.pieces.len()) {
            return;
        }
        let start_of = |out: &Text, piece: usize| match made.pieces.contains(&piece) {
            true => out.pieces[piece].start,
            false => made.bytes.end,
        };
        let before = made.bytes.start..start_of(&self.out, made.pieces.start);
        let text = self.out.text[before].to_string();
        self.push(&text, None, false);
        for piece in made.pieces.clone() {
            if self.out.truncated {
                return;
            }
            let Piece { start, line, block } = self.out.pieces[piece];
            let text = self.out.text[start..start_of(&self.out, piece + 1)].to_string();
            self.push(&text, Some(line), block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::WORK_MIN;

    fn scripts(template: &Template, source: &str) -> Vec<UserData> {
        Reader::new(template, source).scripts().unwrap()
    }

    fn first(source: &str) -> Text {
        let template = Template::parse("t", source).unwrap();
        scripts(&template, source).remove(0).script
    }

    /// The template line of the first occurrence of `needle` in the flattened text.
    fn line(text: &Text, needle: &str) -> usize {
        text.line_of(text.text.find(needle).unwrap()).unwrap()
    }

    #[test]
    fn a_block_scalar_sub_keeps_each_line_and_its_template_line() {
        let source = "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData: !Base64\n        Fn::Sub: |\n          #!/bin/bash\n          cfn-init -s ${AWS::StackName} -r I\n          cfn-signal -e $? --region ${AWS::Region}\n";
        let text = first(source);
        assert_eq!(
            text.text,
            "#!/bin/bash\ncfn-init -s ${AWS::StackName} -r I\ncfn-signal -e $? --region ${AWS::Region}\n"
        );
        assert_eq!(line(&text, "#!/bin/bash"), 7);
        assert_eq!(line(&text, "-r I"), 8);
        assert_eq!(line(&text, "--region"), 9);
    }

    #[test]
    fn the_short_form_sub_block_is_read_too() {
        let source = "Resources:\n  I:\n    Type: AWS::AutoScaling::LaunchConfiguration\n    Properties:\n      UserData:\n        Fn::Base64: !Sub |\n          a\n          b ${X}\n";
        let text = first(source);
        assert_eq!(text.text, "a\nb ${X}\n");
        assert_eq!(line(&text, "b "), 8);
        assert_eq!(line(&text, "${X}"), 8);
    }

    #[test]
    fn join_items_are_at_their_own_lines_and_refs_are_placeholders() {
        let source = "Resources:\n  I:\n    Type: AWS::EC2::LaunchTemplate\n    Properties:\n      LaunchTemplateData:\n        UserData: !Base64\n          Fn::Join:\n            - ''\n            - - \"cfn-init -s \"\n              - !Ref AWS::StackName\n              - \" -r I --region \"\n              - Ref: AWS::Region\n              - !GetAtt [Db, Endpoint.Address]\n              - !Sub ' ${Handle} ${!Literal}'\n";
        let text = first(source);
        assert_eq!(
            text.text,
            "cfn-init -s ${AWS::StackName} -r I --region ${AWS::Region}${Db.Endpoint.Address} ${Handle} ${Literal}"
        );
        assert_eq!(line(&text, "cfn-init"), 9);
        assert_eq!(line(&text, "${AWS::StackName}"), 10);
        assert_eq!(line(&text, "-r I"), 11);
        assert_eq!(line(&text, "${AWS::Region}"), 12);
        assert_eq!(line(&text, "${Handle}"), 14);
    }

    #[test]
    fn json_strings_are_on_the_line_of_their_quote_and_sub_variables_are_given_values() {
        let source = "{\"Resources\": {\"I\": {\"Type\": \"AWS::EC2::Instance\", \"Properties\": {\n\"UserData\": {\"Fn::Base64\": {\"Fn::Sub\": [\n\"a\\nb ${Set} ${Other}\\n\",\n{\"Set\": \"full\", \"Other\": {\"Fn::Join\": [\",\", [\"x\", {\"Ref\": \"P\"}]]}}]}}}}}}";
        let text = first(source);
        assert_eq!(text.text, "a\nb full x,${P}\n");
        assert_eq!(line(&text, "b "), 3);
        assert_eq!(line(&text, "full"), 4);
    }

    #[test]
    fn other_functions_are_placeholders_and_encoded_user_data_is_decoded() {
        let source = "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData: !Base64\n        Fn::If: [C, a, b]\n  J:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData: IyEvYmluL3NoCmNmbi1pbml0\n  K:\n    Type: AWS::S3::Bucket\n";
        let template = Template::parse("t", source).unwrap();
        let found = scripts(&template, source);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].script.text, "${Fn::If}");
        assert_eq!(found[1].script.text, "#!/bin/sh\ncfn-init");
        assert_eq!(found[1].pointer, "/Resources/J/Properties/UserData");
        assert_eq!(found[1].script.line_of(11), Some(10));
    }

    /// A user-data value: strings, Refs, GetAtts and other functions, in Subs and Joins.
    fn user_data_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        use serde_json::json;
        let leaf = prop_oneof![
            "[a-z \\n$#{}!'\"|-]{0,12}".prop_map(Value::from),
            "(AWS::Region|X|Y)".prop_map(|name| json!({"Ref": name})),
            Just(json!({"Fn::GetAtt": ["A", "B"]})),
            Just(json!({"Fn::If": ["C", "a", "b"]})),
            any::<i32>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                ("[a-z ]{0,3}", prop::collection::vec(inner.clone(), 0..6))
                    .prop_map(|(delimiter, items)| json!({"Fn::Join": [delimiter, items]})),
                "[a-z$\\n {}!]{0,20}".prop_map(|text| json!({"Fn::Sub": text})),
                ("[a-z${}X\\n]{0,20}", inner.clone()).prop_map(|(text, x)| json!({"Fn::Sub": [text, {"X": x}]})),
                prop::collection::vec(inner, 0..3).prop_map(Value::from),
            ]
        })
    }

    proptest::proptest! {
        /// Never a panic, and every piece on a line of the template, written compact or
        /// one value a line.
        #[test]
        fn flattening_never_panics_and_stays_in_the_template(value in user_data_value(), pretty: bool) {
            let template = serde_json::json!({"Resources": {"I": {"Type": "AWS::EC2::Instance", "Properties": {"UserData": {"Fn::Base64": value}}}}});
            let source = match pretty {
                true => serde_json::to_string_pretty(&template).unwrap(),
                false => serde_json::to_string(&template).unwrap(),
            };
            let parsed = Template::parse("t", &source).unwrap();
            let lines = source.lines().count();
            for script in scripts(&parsed, &source) {
                proptest::prop_assert!(script.script.text.len() <= MAX_TEXT);
                for offset in 0..script.script.text.len() {
                    if let Some(line) = script.script.line_of(offset) {
                        proptest::prop_assert!((1..=lines).contains(&line), "line {line} of {lines}");
                    }
                }
            }
        }
    }

    #[test]
    fn repeated_variables_are_cut_at_the_bound() {
        // Each level repeats the one below 16 times: 16^6 copies of "x" if nothing stopped it.
        let mut variables = String::from("{\"V0\": \"xxxxxxxxxxxxxxxx\"}");
        for level in 1..6 {
            let below = format!("${{V{}}}", level - 1).repeat(16);
            variables = format!("{{\"V{level}\": {{\"Fn::Sub\": [\"{below}\", {variables}]}}}}");
        }
        let source = format!(
            "{{\"Resources\": {{\"I\": {{\"Type\": \"AWS::EC2::Instance\", \"Properties\": {{\"UserData\": {{\"Fn::Base64\": {{\"Fn::Sub\": [\"${{V5}}\", {variables}]}}}}}}}}}}}}"
        );
        let text = first(&source);
        assert!(text.truncated);
        assert_eq!(text.text.len(), MAX_TEXT);
    }

    /// A JSON template whose user data is `levels` of `Fn::Sub`, each using the variable
    /// of the next `uses` times, the last one's value `leaf`.
    fn nested_subs(levels: usize, uses: usize, leaf: &str) -> String {
        let mut value = serde_json::json!(leaf);
        for level in 0..levels {
            let name = format!("V{level}");
            value = serde_json::json!({"Fn::Sub": [format!("${{{name}}}").repeat(uses), {name: value}]});
        }
        let template = serde_json::json!({"Resources": {"I": {"Type": "AWS::EC2::Instance", "Properties": {"UserData": {"Fn::Base64": value}}}}});
        template.to_string()
    }

    #[test]
    fn variables_used_many_times_nested_are_flattened_once() {
        // Issue 31 F1: 8 levels of 16 uses each, ending in "": 16^8 expansions of nothing,
        // which no size bound stopped, took hours.
        let source = nested_subs(8, 16, "");
        let template = Template::parse("t", &source).unwrap();
        let mut reader = Reader::new(&template, &source);
        let found = reader.scripts().unwrap();
        assert_eq!((found[0].script.text.as_str(), found[0].script.truncated), ("", false));
        assert!(reader.work() <= 4 * source.len(), "{} steps for {} bytes", reader.work(), source.len());
    }

    #[test]
    fn a_copied_variable_keeps_its_template_lines() {
        let source = "Resources:\n  I:\n    Type: AWS::EC2::Instance\n    Properties:\n      UserData: !Base64\n        Fn::Sub:\n          - |\n            a ${X}\n            b ${X} ${X}\n          - X: !Sub\n              - |\n                one ${Y}\n                two\n              - Y: !Join [',', [p, !Ref Q]]\n";
        let text = first(source);
        assert_eq!(text.text, "a one p,${Q}\ntwo\n\nb one p,${Q}\ntwo\n one p,${Q}\ntwo\n\n");
        let lines: Vec<Option<usize>> = (0..text.text.len()).map(|at| text.line_of(at)).collect();
        let at = |needle: &str, n: usize| text.text.match_indices(needle).nth(n).unwrap().0;
        for n in 0..3 {
            assert_eq!(lines[at("one", n)], Some(12), "copy {n}");
            assert_eq!(lines[at("p,", n)], Some(14), "copy {n}");
            assert_eq!(lines[at("${Q}", n)], Some(14), "copy {n}");
            assert_eq!(lines[at("two", n)], Some(13), "copy {n}");
        }
        assert_eq!(lines[at("a ", 0)], Some(8));
        assert_eq!(lines[at("b ", 0)], Some(9));
    }

    #[test]
    fn the_work_bound_holds_for_all_the_texts_of_a_template() {
        // Each user data makes 1 MiB from a few hundred bytes: 8 of them are more than
        // the bound for this template allows.
        let one: serde_json::Value = serde_json::from_str(&nested_subs(5, 16, "xxxxxxxxxxxxxxxx")).unwrap();
        let user_data = &one["Resources"]["I"];
        let resources: serde_json::Map<String, Value> = (0..8).map(|n| (format!("I{n}"), user_data.clone())).collect();
        let source = serde_json::json!({ "Resources": resources }).to_string();
        let template = Template::parse("t.json", &source).unwrap();
        let mut reader = Reader::new(&template, &source);
        let error = reader.scripts().unwrap_err();
        assert_eq!(error.kind, ErrorKind::Limit);
        assert_eq!(error.resource.as_deref(), Some("I3"));
        assert_eq!(error.pointer.as_deref(), Some("/Resources/I3/Properties/UserData/Fn::Base64"));
        assert_eq!(
            error.message,
            format!(
                "flattening the user data and cfn-hup files of the template takes more than 4194304 steps (the \
                 limit for a {}-byte template: 32 per byte, at least 4194304, at most 67108864)",
                source.len()
            )
        );
        assert!(reader.work() <= WORK_MIN);
        // Each text alone is within it.
        let mut reader = Reader::new(&template, &source);
        let text = reader.flatten("I7", &resources["I7"]["Properties"]["UserData"]["Fn::Base64"], "/Resources/I7");
        assert_eq!(text.map(|t| t.text.len()), Ok(MAX_TEXT));
    }

    /// `value` flattened the simplest way: text only, every use of a variable flattened
    /// again.
    fn expanded(value: &Value) -> String {
        let sub = |text: &str, variables: Option<&serde_json::Map<String, Value>>| {
            crate::sub::parts(text)
                .into_iter()
                .map(|part| match part {
                    crate::sub::Part::Text(text) => text.to_string(),
                    crate::sub::Part::Variable(name) => match variables.and_then(|v| v.get(name)) {
                        Some(value) => expanded(value),
                        None => format!("${{{name}}}"),
                    },
                })
                .collect::<String>()
        };
        match value {
            Value::String(text) => text.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Object(map) if map.len() == 1 => {
                let (key, argument) = map.iter().next().unwrap();
                match (key.as_str(), argument) {
                    ("Ref", Value::String(name)) => format!("${{{name}}}"),
                    ("Fn::Sub", Value::String(text)) => sub(text, None),
                    ("Fn::Sub", Value::Array(items))
                        if items.len() == 2 && items[0].is_string() && items[1].is_object() =>
                    {
                        sub(items[0].as_str().unwrap(), items[1].as_object())
                    }
                    ("Fn::Join", Value::Array(items))
                        if items.len() == 2 && items[0].is_string() && items[1].is_array() =>
                    {
                        let parts: Vec<String> = items[1].as_array().unwrap().iter().map(expanded).collect();
                        parts.join(items[0].as_str().unwrap())
                    }
                    _ => format!("${{{key}}}"),
                }
            }
            _ => "${?}".to_string(),
        }
    }

    /// User data whose `Fn::Sub` variables are used several times each, nested, with
    /// `Fn::Join` and `Fn::If` among them.
    fn repeating_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        use serde_json::json;
        let leaf = prop_oneof![
            1 => "[a-z \\n]{0,4}".prop_map(Value::from),
            3 => Just(json!("")),
            1 => Just(json!({"Ref": "AWS::Region"})),
            1 => Just(json!({"Fn::If": ["C", "a", {"Fn::Sub": "${X}"}]})),
        ];
        leaf.prop_recursive(5, 64, 4, |inner| {
            prop_oneof![
                1 => ("[a-z ]{0,2}", prop::collection::vec(inner.clone(), 0..5))
                    .prop_map(|(delimiter, items)| json!({"Fn::Join": [delimiter, items]})),
                3 => ("[a-z\\n]{0,2}", 1..17usize, 0..3usize, inner.clone(), inner.clone()).prop_map(
                    |(between, uses, others, x, y)| {
                        let text = format!("${{X}}{between}").repeat(uses) + &"${Y}${Z}".repeat(others);
                        json!({"Fn::Sub": [text, {"X": x, "Y": y}]})
                    }
                ),
                1 => inner.clone().prop_map(|x| json!({"Fn::If": ["C", x.clone(), x]})),
            ]
        })
    }

    proptest::proptest! {
        /// Flattening takes steps in proportion to the template and the text it writes
        /// (at most [`MAX_TEXT`]), whatever repeats; and writes the text each variable
        /// flattened at each use would give.
        #[test]
        fn flattening_work_is_linear_in_the_template(value in repeating_value(), pretty: bool) {
            let template = serde_json::json!({"Resources": {"I": {"Type": "AWS::EC2::Instance", "Properties": {"UserData": {"Fn::Base64": value.clone()}}}}});
            let source = match pretty {
                true => serde_json::to_string_pretty(&template).unwrap(),
                false => serde_json::to_string(&template).unwrap(),
            };
            let parsed = Template::parse("t", &source).unwrap();
            let mut reader = Reader::new(&parsed, &source);
            let script = reader.scripts().unwrap().remove(0).script;
            proptest::prop_assert!(script.text.len() <= MAX_TEXT);
            let bound = 8 * source.len() + 2 * script.text.len() + 64;
            proptest::prop_assert!(reader.work() <= bound, "{} steps, bound {bound}", reader.work());
            let whole = expanded(&value);
            if whole.len() <= MAX_TEXT {
                proptest::prop_assert_eq!(script.text, whole);
            }
        }
    }
}
