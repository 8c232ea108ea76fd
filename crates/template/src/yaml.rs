//! CloudFormation's YAML: a template read into the same JSON value its JSON twin gives,
//! with the short-form tags turned into the long form (`!Ref X` → `{"Ref": "X"}`,
//! `!GetAtt A.B` → `{"Fn::GetAtt": ["A", "B"]}`, `!Sub …` → `{"Fn::Sub": …}`), and the
//! line and column where each value starts, by JSON pointer.
//!
//! Plain scalars are typed as YAML 1.1 types them (CloudFormation documents YAML 1.1):
//! `true`/`yes`/`on` are booleans, `0644` is octal, `1.5` a float, `~` null; a quoted or
//! tagged scalar stays a string.

use crate::limits::{Budget, MAX_DEPTH, too_deep};
use crate::location::{Node, Position, Positions};
use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::collections::HashMap;

/// A YAML text that is not a template's YAML, or is over one of the bounds
/// ([`MAX_DEPTH`], what anchors and aliases may copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub position: Position,
    pub message: String,
    /// Over a bound, rather than not YAML.
    pub over_limit: bool,
}

/// The short-form tags CloudFormation defines, and the key of their long form.
const FUNCTIONS: &[(&str, &str)] = &[
    ("Ref", "Ref"),
    ("Condition", "Condition"),
    ("Sub", "Fn::Sub"),
    ("GetAtt", "Fn::GetAtt"),
    ("Join", "Fn::Join"),
    ("Select", "Fn::Select"),
    ("Split", "Fn::Split"),
    ("If", "Fn::If"),
    ("Equals", "Fn::Equals"),
    ("And", "Fn::And"),
    ("Or", "Fn::Or"),
    ("Not", "Fn::Not"),
    ("FindInMap", "Fn::FindInMap"),
    ("Base64", "Fn::Base64"),
    ("GetAZs", "Fn::GetAZs"),
    ("ImportValue", "Fn::ImportValue"),
    ("Cidr", "Fn::Cidr"),
    ("Transform", "Fn::Transform"),
    ("ToJsonString", "Fn::ToJsonString"),
    ("Length", "Fn::Length"),
];

/// A node being built: a sequence or a mapping, with what it becomes when it ends.
enum Open {
    Sequence { items: Vec<Value>, node: NodeStart },
    Mapping { entries: Map<String, Value>, key: Option<String>, node: NodeStart },
}

impl Open {
    fn node(&mut self) -> &mut NodeStart {
        match self {
            Open::Sequence { node, .. } | Open::Mapping { node, .. } => node,
        }
    }
}

/// Where a node starts, under which pointer, and the function its tag names; and the
/// size and height of what it holds so far.
struct NodeStart {
    /// The node's place in the positions' tree, and its children's (a tagged node's
    /// value sits under its function's key: `!Sub [a, b]` at P is `{"Fn::Sub": [a, b]}`,
    /// its `a` at P/Fn::Sub/0).
    place: Node,
    children: Node,
    function: Option<Cow<'static, str>>,
    anchor: usize,
    position: Position,
    /// The JSON levels around the node's children (its own and its parents').
    level: usize,
    /// The node's size so far: 1, plus its keys' and children's sizes.
    size: usize,
    /// The greatest height of its children.
    height: usize,
}

/// An anchored value, with its size and height, for the aliases to it.
struct Anchored {
    value: Value,
    size: usize,
    height: usize,
}

/// Reads the first YAML document of `text`.
pub fn load(text: &str) -> Result<(Value, Positions), LoadError> {
    let mut builder = Builder {
        open: Vec::new(),
        anchors: HashMap::new(),
        positions: Positions::default(),
        copies: Budget::new(text.len()),
    };
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            let position = Position { line: e.marker().line(), column: e.marker().col() + 1 };
            // The scanner's own bound, 255 flow levels, may come before ours: it reads ahead.
            match e.info() {
                "recursion limit exceeded" => LoadError { position, message: too_deep(""), over_limit: true },
                info => LoadError { position, message: info.to_string(), over_limit: false },
            }
        })?;
        if let Some(done) = builder.event(event, span)? {
            return Ok((done, builder.positions));
        }
    }
    let position = Position { line: 1, column: 1 };
    Err(LoadError { position, message: "the document is empty".into(), over_limit: false })
}

struct Builder {
    open: Vec<Open>,
    anchors: HashMap<usize, Anchored>,
    /// Where each value is, and the key naming it.
    positions: Positions,
    /// What anchors and aliases copied so far, in [`crate::limits::size`] units.
    copies: Budget,
}

impl Builder {
    /// Takes one event; gives the document's value once its root is complete.
    fn event(&mut self, event: Event, span: Span) -> Result<Option<Value>, LoadError> {
        let position = Position { line: span.start.line(), column: span.start.col() + 1 };
        let at = |message: String| LoadError { position, message, over_limit: false };
        let over = |message: String| LoadError { position, message, over_limit: true };
        let is_sequence = matches!(event, Event::SequenceStart(..));
        let level = self.open.last_mut().map_or(0, |open| open.node().level);
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                if let Some(Open::Mapping { key: key @ None, entries, node }) = self.open.last_mut() {
                    if entries.contains_key(text.as_ref()) {
                        return Err(at(format!("the key {text:?} appears twice in one mapping")));
                    }
                    node.size += text.len() + 1;
                    *key = Some(text.into_owned());
                    let place = self.next_place();
                    self.positions.set_key(place, position);
                    return Ok(None);
                }
                let place = self.next_place();
                let value = match tag.as_deref() {
                    Some(tag) => tagged_scalar(tag, &text).map_err(at)?,
                    None if style == ScalarStyle::Plain => plain_scalar(&text),
                    None => Value::String(text.into_owned()),
                };
                let (size, height) = measure_scalar(&value);
                if level + height > MAX_DEPTH {
                    return Err(over(too_deep("")));
                }
                self.positions.set_value(place, position);
                // A tagged scalar (`!Ref Name`) is a function: its argument starts here too.
                if let Value::Object(m) = &value
                    && let Some(key) = m.keys().next()
                {
                    let argument = self.positions.child(place, key);
                    self.positions.set_value(argument, position);
                }
                self.finish(value, anchor, size, height).map_err(over)
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                if let Some(Open::Mapping { key: None, .. }) = self.open.last() {
                    return Err(at("a mapping key must be a string, not a sequence or a mapping".into()));
                }
                let function = match tag.as_deref() {
                    Some(tag) => Some(function_of(tag).map_err(at)?),
                    None => None,
                };
                // The collection is a level, and a tag's `{"Fn::…": …}` around it another.
                let own = 1 + usize::from(function.is_some());
                if level + own > MAX_DEPTH {
                    return Err(over(too_deep("")));
                }
                let place = self.next_place();
                let children = match &function {
                    Some(function) => self.positions.child(place, function),
                    None => place,
                };
                let size = own + function.as_ref().map_or(0, |f| f.len() + 1);
                let node =
                    NodeStart { place, children, function, anchor, position, level: level + own, size, height: 0 };
                self.open.push(if is_sequence {
                    Open::Sequence { items: Vec::new(), node }
                } else {
                    Open::Mapping { entries: Map::new(), key: None, node }
                });
                Ok(None)
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, node) = match self.open.pop() {
                    Some(Open::Sequence { items, node }) => (Value::Array(items), node),
                    Some(Open::Mapping { entries, node, .. }) => (Value::Object(entries), node),
                    None => return Err(at("unbalanced end of a collection".into())),
                };
                self.positions.set_value(node.place, node.position);
                self.positions.set_value(node.children, node.position);
                let height = node.height + 1 + usize::from(node.function.is_some());
                let value = match &node.function {
                    Some(function) => long_form(function, value),
                    None => value,
                };
                let position = node.position;
                self.finish(value, node.anchor, node.size, height).map_err(|message| LoadError {
                    position,
                    message,
                    over_limit: true,
                })
            }
            Event::Alias(id) => {
                let Some(anchored) = self.anchors.get(&id) else {
                    return Err(at("an alias to an unknown anchor".into()));
                };
                let (size, height) = (anchored.size, anchored.height);
                // Checked before the copy is made: the bounds hold for what is built.
                if level + height > MAX_DEPTH {
                    return Err(over(too_deep(" with this alias expanded")));
                }
                self.copy(size).map_err(over)?;
                let value = self.anchors[&id].value.clone();
                if let Some(Open::Mapping { key: key @ None, node, .. }) = self.open.last_mut() {
                    let Value::String(text) = value else {
                        return Err(at("a mapping key must be a string".into()));
                    };
                    node.size += text.len() + 1;
                    *key = Some(text);
                    return Ok(None);
                }
                let place = self.next_place();
                self.positions.set_value(place, position);
                self.finish(value, 0, size, height).map_err(over)
            }
            Event::StreamEnd => Err(at("the document is empty".into())),
            Event::Nothing | Event::StreamStart | Event::DocumentStart(_) | Event::DocumentEnd => Ok(None),
        }
    }

    /// Counts a copy of `size` made for an anchor or an alias, within the limit.
    fn copy(&mut self, size: usize) -> Result<(), String> {
        self.copies.charge(size, "anchors and aliases copy")
    }

    /// The place of the node that starts now: its parent's children's, and its key or
    /// index.
    fn next_place(&mut self) -> Node {
        let (parent, segment) = match self.open.last() {
            None => return Positions::ROOT,
            Some(Open::Sequence { items, node }) => (node.children, items.len().to_string()),
            Some(Open::Mapping { key, node, .. }) => (node.children, key.clone().unwrap_or_default()),
        };
        self.positions.child(parent, &segment)
    }

    /// Puts a complete value of `size` and `height` into its parent, or gives it back
    /// as the document's root; keeps a copy when it is anchored.
    fn finish(&mut self, value: Value, anchor: usize, size: usize, height: usize) -> Result<Option<Value>, String> {
        if anchor != 0 {
            self.copy(size)?;
            self.anchors.insert(anchor, Anchored { value: value.clone(), size, height });
        }
        let Some(parent) = self.open.last_mut() else { return Ok(Some(value)) };
        let node = parent.node();
        node.size = node.size.saturating_add(size);
        node.height = node.height.max(height);
        match parent {
            Open::Sequence { items, .. } => items.push(value),
            Open::Mapping { entries, key, .. } => {
                if let Some(key) = key.take() {
                    entries.insert(key, value);
                }
            }
        }
        Ok(None)
    }
}

/// The size and height of a value a scalar makes: a string, a number, or a short form's
/// `{"Fn::…": argument}` whose argument is a string or `!GetAtt`'s pair of strings.
fn measure_scalar(value: &Value) -> (usize, usize) {
    match value {
        Value::String(text) => (1 + text.len(), 0),
        Value::Object(map) => map.iter().fold((1, 1), |(size, height), (key, argument)| match argument {
            Value::Array(items) => {
                let strings: usize = items.iter().map(|item| 1 + item.as_str().map_or(0, str::len)).sum();
                (size + key.len() + 1 + 1 + strings, height.max(2))
            }
            other => (size + key.len() + 1 + 1 + other.as_str().map_or(0, str::len), height),
        }),
        _ => (1, 0),
    }
}

/// The function a `!Name` tag stands for: the long form of CloudFormation's short forms,
/// and `Fn::Name` for any other name (the Rules functions `!Contains`, `!EachMemberIn`,
/// `!RefAll`, `!ValueOf`…, and whatever AWS adds next). An unknown function is then the
/// resolver's business (an unknown value to the checks), not a reason to refuse the file.
fn function_of(tag: &Tag) -> Result<Cow<'static, str>, String> {
    if tag.handle == "!" {
        if let Some((_, long)) = FUNCTIONS.iter().find(|(short, _)| *short == tag.suffix) {
            return Ok(Cow::Borrowed(long));
        }
        if !tag.suffix.is_empty() && tag.suffix.chars().all(|c| c.is_ascii_alphanumeric() || c == ':') {
            return Ok(Cow::Owned(format!("Fn::{}", tag.suffix)));
        }
    }
    Err(format!(
        "unknown tag {}{}: CloudFormation's tags are {} (and !Name for any other function Fn::Name)",
        tag.handle,
        tag.suffix,
        tag_list()
    ))
}

fn tag_list() -> String {
    FUNCTIONS.iter().map(|(short, _)| format!("!{short}")).collect::<Vec<_>>().join(", ")
}

fn long_form(function: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(function.to_string(), value);
    Value::Object(map)
}

/// A scalar with a tag: a core type (`!!str 0644`) or a function (`!Ref Name`).
fn tagged_scalar(tag: &Tag, text: &str) -> Result<Value, String> {
    if tag.is_yaml_core_schema() || tag.handle == "!!" {
        return match tag.suffix.as_str() {
            "str" => Ok(Value::String(text.to_string())),
            "int" | "float" | "bool" | "null" => match plain_scalar(text) {
                Value::String(_) => Err(format!("{text:?} is not a {}", tag.suffix)),
                value => Ok(value),
            },
            other => Err(format!("the tag !!{other} is not supported in a template")),
        };
    }
    let function = function_of(tag)?;
    let argument = match function.as_ref() {
        // `!GetAtt Resource.Attribute`: the attribute may itself hold dots.
        "Fn::GetAtt" => match text.split_once('.') {
            Some((resource, attribute)) => {
                Value::Array(vec![Value::String(resource.into()), Value::String(attribute.into())])
            }
            None => return Err(format!("!GetAtt {text}: expected Resource.Attribute")),
        },
        _ => Value::String(text.to_string()),
    };
    Ok(long_form(&function, argument))
}

/// A plain scalar typed as YAML 1.1 (PyYAML's resolver) types it.
fn plain_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => return Value::Bool(true),
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => return Value::Bool(false),
        _ => {}
    }
    integer(text).or_else(|| float(text)).map(Value::Number).unwrap_or_else(|| Value::String(text.to_string()))
}

fn integer(text: &str) -> Option<Number> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(hex) = body.strip_prefix("0x") {
        (16, hex)
    } else if let Some(binary) = body.strip_prefix("0b") {
        (2, binary)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) || (radix == 10 && body.starts_with('_')) {
        return None;
    }
    let magnitude = i128::from_str_radix(&digits, radix).ok()?;
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value).map(Number::from).ok().or_else(|| u64::try_from(value).map(Number::from).ok())
}

/// `[-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?` with at least one digit; the
/// infinities and NaN stay strings, as JSON has no text for them.
fn float(text: &str) -> Option<Number> {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (whole, fraction) = mantissa.split_once('.')?;
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !digits(whole) || !digits(fraction) || whole.starts_with('_') {
        return None;
    }
    if !(whole.chars().any(|c| c.is_ascii_digit()) || fraction.chars().any(|c| c.is_ascii_digit())) {
        return None;
    }
    if let Some(exponent) = exponent {
        let unsigned = exponent.strip_prefix(['-', '+'])?;
        if unsigned.is_empty() || !unsigned.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
    }
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    // As JSON would write it (`1.` → `1.0`, `.5` → `0.5`); otherwise the text itself.
    serde_json::from_str::<Number>(&clean).ok().or_else(|| clean.parse::<f64>().ok().and_then(Number::from_f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(text: &str) -> Value {
        load(text).unwrap_or_else(|e| panic!("{text}: {e:?}")).0
    }

    #[test]
    fn short_forms_become_the_long_forms() {
        let v = yaml(
            "a: !Ref Name\nb: !GetAtt Db.Endpoint.Address\nc: !Sub 'x-${AWS::Region}'\n\
             d: !Join ['', [a, !Ref B]]\ne: !If [Cond, !GetAZs '', !Ref 'AWS::NoValue']\nf: !Condition C\n\
             g: !Select [0, !Split [',', 'a,b']]\nh: !Base64 {'Fn::Sub': x}\n",
        );
        assert_eq!(
            v,
            json!({
                "a": {"Ref": "Name"},
                "b": {"Fn::GetAtt": ["Db", "Endpoint.Address"]},
                "c": {"Fn::Sub": "x-${AWS::Region}"},
                "d": {"Fn::Join": ["", ["a", {"Ref": "B"}]]},
                "e": {"Fn::If": ["Cond", {"Fn::GetAZs": ""}, {"Ref": "AWS::NoValue"}]},
                "f": {"Condition": "C"},
                "g": {"Fn::Select": [0, {"Fn::Split": [",", "a,b"]}]},
                "h": {"Fn::Base64": {"Fn::Sub": "x"}}
            })
        );
    }

    #[test]
    fn plain_scalars_are_typed_as_yaml_1_1_and_quoted_ones_stay_strings() {
        let v = yaml(
            "a: 1\nb: '1'\nc: true\nd: yes\ne: 0644\nf: 1.5\ng: ~\nh: 2010-09-09\ni: 0x1F\nj: .inf\nk: !!str 12\nl:\n",
        );
        assert_eq!(
            v,
            json!({"a": 1, "b": "1", "c": true, "d": true, "e": 420, "f": 1.5, "g": null,
                   "h": "2010-09-09", "i": 31, "j": ".inf", "k": "12", "l": null})
        );
    }

    #[test]
    fn positions_are_recorded_by_pointer_also_inside_short_forms() {
        let (_, positions) =
            load("Resources:\n  A:\n    Metadata:\n      x: !Sub\n        - '${y}'\n        - y: !Ref P\n").unwrap();
        let at = |line, column| Some(Position { line, column });
        assert_eq!(positions.value("/Resources/A/Metadata/x"), at(4, 10));
        assert_eq!(positions.value("/Resources/A/Metadata/x/Fn::Sub/1/y"), at(6, 14));
        assert_eq!(positions.value("/Resources/A/Metadata/x/Fn::Sub/1/y/Ref"), at(6, 14));
    }

    #[test]
    fn keys_with_slashes_are_escaped_in_pointers() {
        let (_, positions) = load("files:\n  /etc/a~b: 1\n").unwrap();
        assert_eq!(positions.value("/files/~1etc~1a~0b"), Some(Position { line: 2, column: 13 }));
        assert_eq!(positions.key("/files/~1etc~1a~0b"), Some(Position { line: 2, column: 3 }));
    }

    #[test]
    fn anchors_and_aliases_copy_the_value() {
        assert_eq!(yaml("a: &x {k: 1}\nb: *x\n"), json!({"a": {"k": 1}, "b": {"k": 1}}));
    }

    #[test]
    fn other_short_forms_are_the_functions_they_name() {
        // The Rules functions (issue 30: Quick Starts' `Rules` stopped validation).
        assert_eq!(
            yaml("a: !Contains [[x], !Ref P]\nb: !EachMemberIn [!ValueOfAll [T, Tag], [a]]\nc: !RefAll T\n"),
            json!({
                "a": {"Fn::Contains": [["x"], {"Ref": "P"}]},
                "b": {"Fn::EachMemberIn": [{"Fn::ValueOfAll": ["T", "Tag"]}, ["a"]]},
                "c": {"Fn::RefAll": "T"}
            })
        );
    }

    #[test]
    fn bad_input_is_an_error_with_its_position() {
        let e = load("a: !<tag:example.com,2000:x> x\n").unwrap_err();
        assert_eq!(e.position, Position { line: 1, column: 4 });
        assert!(e.message.contains("unknown tag"), "{}", e.message);
        assert!(load("a: !Ref-x y\n").unwrap_err().message.contains("unknown tag !Ref-x"));
        let e = load("a: 1\na: 2\n").unwrap_err();
        assert!(e.message.contains("appears twice"), "{}", e.message);
        assert_eq!(load("a: [1,\n").unwrap_err().position.line, 2);
        assert!(load("").is_err());
        assert!(load("? [a]\n: 1\n").is_err());
        assert!(load("a: !GetAtt NoDot\n").unwrap_err().message.contains("Resource.Attribute"));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(load(&deep).unwrap_err().message.contains("nested more than 128 deep"));
    }
}
