//! The intrinsic functions, resolved as a stack creation resolves them in Metadata.
//!
//! A value resolves to `None` when it is `AWS::NoValue` (directly, or as the branch an
//! `Fn::If` takes): the key or list item holding it is left out.

use crate::decisions::{Decisions, Domain};
use crate::error::{Error, ErrorKind, Missing};
use crate::limits::{Budget, MAX_RESOLVE_DEPTH, size};
use crate::location::At;
use crate::parameters::{self, Parameter, scalar_text};
use crate::sub::{self, Part};
use crate::{Inputs, Template, cidr, unknown};
use base64::Engine;
use cfn_python::json::kind;
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};

/// Why an expression cannot be resolved, and the pointer of that expression.
struct Fail {
    pointer: String,
    kind: ErrorKind,
    message: String,
}

type Resolved<T> = Result<T, Fail>;

/// How many conditions may wait on one another (a chain A → B → C …).
const MAX_CONDITION_DEPTH: usize = 64;

fn fail<T>(at: &At<'_>, message: impl Into<String>) -> Resolved<T> {
    Err(Fail { pointer: at.pointer(), kind: ErrorKind::Template, message: message.into() })
}

/// Over one of the bounds on resolving: how deep it recurses, how much it makes.
fn over_limit<T>(at: &At<'_>, message: String) -> Resolved<T> {
    Err(Fail { pointer: at.pointer(), kind: ErrorKind::Limit, message })
}

fn missing<T>(at: &At<'_>, what: Missing, message: String) -> Resolved<T> {
    Err(Fail { pointer: at.pointer(), kind: ErrorKind::Missing(what), message })
}

pub fn metadata(template: &Template, resource: &str, inputs: &Inputs) -> Result<Value, Error> {
    Ok(run(template, resource, inputs, None)?.0)
}

/// The most combinations of undecidable conditions [`metadata_for_checks`] resolves a
/// resource's Metadata for. Each is a whole resolution, within the bounds of one; real
/// templates decide a few conditions from parameters (2 to 8 combinations).
pub const MAX_VARIANTS: usize = 32;

/// A resource's Metadata resolved for checking, without the values only a stack has: see
/// [`crate::Template::metadata_for_checks`].
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The Metadata for each combination of the conditions that unknowns leave undecided
    /// (one when none are), each as a stack could resolve it.
    pub variants: Vec<Value>,
    /// False when there were more than [`MAX_VARIANTS`] combinations: only the first
    /// were resolved.
    pub complete: bool,
}

/// Conditions over unknowns are "both branches": the Metadata is resolved once per
/// combination of the answers they need, walking the tree of those answers depth first
/// (each run replays the answers of its branch, answers true to every new question, and
/// each true answer is then tried false in a run of its own). This is simpler than values
/// that hold either branch (every function and every check would have to take them), and
/// each run is an ordinary resolution, bounded as one; [`MAX_VARIANTS`] bounds the runs.
pub fn metadata_for_checks(template: &Template, resource: &str, inputs: &Inputs) -> Result<Checked, Error> {
    let mut checked = Checked { variants: Vec::new(), complete: true };
    let mut branches: Vec<Vec<bool>> = vec![Vec::new()];
    let mut runs = 0;
    while let Some(forced) = branches.pop() {
        if runs == MAX_VARIANTS {
            checked.complete = false;
            break;
        }
        runs += 1;
        let depth = forced.len();
        let checking = Decisions::replaying(forced);
        let (value, checking) = run(template, resource, inputs, Some(checking))?;
        let taken = checking.map(|c| c.taken.into_inner()).unwrap_or_default();
        for i in (depth..taken.len()).rev() {
            let mut branch = taken[..i].to_vec();
            branch.push(false);
            branches.push(branch);
        }
        checked.variants.push(value);
    }
    Ok(checked)
}

/// Resolves a resource's Metadata once. Gives back what the run decided.
fn run(
    template: &Template,
    resource: &str,
    inputs: &Inputs,
    checking: Option<Decisions>,
) -> Result<(Value, Option<Decisions>), Error> {
    let error_here =
        |kind: ErrorKind, message: String| Error::new(kind, template.name(), message).in_resource(resource);
    let Some(definition) = template.value().get("Resources").and_then(|r| r.get(resource)) else {
        let known: Vec<&str> =
            template.value()["Resources"].as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
        let message = format!("no resource named {resource} in the template (its resources: {})", known.join(", "));
        return Err(error_here(ErrorKind::Input, message));
    };
    let resolver = Resolver {
        template,
        inputs,
        parameters: parameters::resolve(template, inputs, checking.is_some()).map_err(|e| e.in_resource(resource))?,
        conditions: RefCell::default(),
        made: Budget::new(template.length()),
        depth: Cell::new(0),
        checking,
    };
    let resources = At::ROOT.key("Resources");
    let at = resources.key(resource);
    let result = (|| {
        if let Some(condition) = definition.get("Condition") {
            let Value::String(name) = condition else { return fail(&at.key("Condition"), "not a name") };
            if resolver.checking.is_some() {
                // A check is of the resource as it is when created: its condition may be
                // false for the defaults and true for the parameters a stack is given
                // (issue 30: a conditional launch configuration hid real findings).
                if resolver.template.value().get("Conditions").and_then(|c| c.get(name)).is_none() {
                    return fail(&at.key("Condition"), format!("there is no condition named {name}"));
                }
            } else if !resolver.condition(name, &at.key("Condition"))? {
                return fail(&at, format!("the resource is not created: its condition {name} is false"));
            }
        }
        let Some(metadata) = definition.get("Metadata") else {
            return fail(&at, "the resource has no Metadata");
        };
        match resolver.resolve(metadata, &at.key("Metadata"))? {
            Some(value) => Ok(value),
            None => fail(&at.key("Metadata"), "the Metadata is AWS::NoValue"),
        }
    })();
    let value = result.map_err(|f| {
        Error::new(f.kind, template.name(), f.message)
            .at(template.positions.nearest(&f.pointer))
            .in_resource(resource)
            .with_expression(enclosing_function(template.value(), &f.pointer).map(Value::to_string))
            .with_pointer(Some(f.pointer))
    })?;
    Ok((value, resolver.checking))
}

/// The function at `pointer`, or the nearest one holding it (a wrong argument's).
fn enclosing_function<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut pointer = pointer;
    loop {
        if let Some(value) = root.pointer(pointer).filter(|v| function_of(v).is_some()) {
            return Some(value);
        }
        pointer = &pointer[..pointer.rfind('/')?];
    }
}

/// A function's text result.
fn text(text: String) -> Option<Value> {
    Some(Value::String(text))
}

/// `{"Ref": …}` or `{"Fn::Name": …}`: the function's name and its argument.
fn function_of(value: &Value) -> Option<(&str, &Value)> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    let (name, argument) = object.iter().next()?;
    (name == "Ref" || name.starts_with("Fn::")).then_some((name.as_str(), argument))
}

struct Resolver<'a> {
    template: &'a Template,
    inputs: &'a Inputs,
    parameters: BTreeMap<String, Parameter>,
    /// Conditions evaluated so far; `None` while one is being evaluated (a cycle).
    conditions: RefCell<HashMap<String, Option<bool>>>,
    /// What resolving made so far: functions make values (`Fn::Base64`, `Fn::Sub`,
    /// `Fn::FindInMap`, …) that may be larger than their expressions, and nested in one
    /// another they would grow exponentially.
    made: Budget,
    /// How deep `resolve` and `evaluate` recurse now (see [`MAX_RESOLVE_DEPTH`]).
    depth: Cell<usize>,
    /// When checking: values not given are unknowns, and the answers of this run.
    checking: Option<Decisions>,
}

/// One level of the resolver's recursion, given back when dropped.
struct Level<'a>(&'a Cell<usize>);

impl Drop for Level<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

impl Resolver<'_> {
    /// One level deeper in `resolve` or `evaluate`, within [`MAX_RESOLVE_DEPTH`].
    fn descend(&self, at: &At<'_>) -> Resolved<Level<'_>> {
        let depth = self.depth.get();
        if depth >= MAX_RESOLVE_DEPTH {
            let message = format!(
                "expressions, with the conditions they evaluate, are nested more than {MAX_RESOLVE_DEPTH} deep"
            );
            return over_limit(at, message);
        }
        self.depth.set(depth + 1);
        Ok(Level(&self.depth))
    }

    /// Counts `units` made for the expression at `at`, within the limit.
    fn charge(&self, units: usize, at: &At<'_>) -> Resolved<()> {
        self.made.charge(units, "resolving makes").or_else(|message| over_limit(at, message))
    }

    fn resolve(&self, value: &Value, at: &At<'_>) -> Resolved<Option<Value>> {
        let _level = self.descend(at)?;
        if let Some((name, argument)) = function_of(value) {
            let result = self.function(name, argument, at, &at.key(name))?;
            // What a function makes is counted; Fn::If gives a branch resolved (and
            // counted) already.
            if name != "Fn::If"
                && let Some(value) = &result
            {
                self.charge(size(value), at)?;
            }
            return Ok(result);
        }
        Ok(Some(match value {
            Value::Object(entries) => {
                self.charge(1, at)?;
                let mut out = Map::new();
                for (key, item) in entries {
                    if let Some(item) = self.resolve(item, &at.key(key))? {
                        self.charge(key.len() + 1, at)?;
                        out.insert(key.clone(), item);
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                self.charge(1, at)?;
                Value::Array(self.items(items, at)?)
            }
            other => {
                self.charge(size(other), at)?;
                other.clone()
            }
        }))
    }

    /// A list's items resolved, the `AWS::NoValue` ones left out.
    fn items(&self, items: &[Value], at: &At<'_>) -> Resolved<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.extend(self.resolve(item, &at.index(i))?);
        }
        Ok(out)
    }

    /// A value that must be there (not `AWS::NoValue`).
    fn value(&self, value: &Value, at: &At<'_>) -> Resolved<Value> {
        match self.resolve(value, at)? {
            Some(value) => Ok(value),
            None => fail(at, "AWS::NoValue where a value is needed"),
        }
    }

    fn string(&self, value: &Value, at: &At<'_>, what: &str) -> Resolved<String> {
        match self.value(value, at)? {
            Value::String(s) => Ok(s),
            other => fail(at, format!("{what} must be a string, not {}", kind(&other))),
        }
    }

    fn list(&self, value: &Value, at: &At<'_>, what: &str) -> Resolved<Vec<Value>> {
        match self.value(value, at)? {
            Value::Array(items) => Ok(items),
            // An unknown where a list is needed (a mapping's value found by an unknown key)
            // may be a list: taken as an unknown list.
            Value::String(text) if unknown::in_text(&text) => Ok(vec![Value::String(text)]),
            other => fail(at, format!("{what} must be a list, not {}", kind(&other))),
        }
    }

    /// The items of a function's argument list, which must have `count` of them.
    fn arguments<'v, const N: usize>(
        &self,
        argument: &'v Value,
        args: &At<'_>,
        name: &str,
    ) -> Resolved<[&'v Value; N]> {
        match argument.as_array().map(Vec::as_slice).and_then(|items| <&[Value; N]>::try_from(items).ok()) {
            Some(items) => Ok(items.each_ref()),
            None => fail(args, format!("{name} takes a list of {N} arguments")),
        }
    }

    /// An intrinsic function: each has a method of its own, so that the frame this
    /// recursion stacks per level stays small (a debug build gives every local of one
    /// function its own slot).
    fn function(&self, name: &str, argument: &Value, at: &At<'_>, args: &At<'_>) -> Resolved<Option<Value>> {
        match name {
            "Ref" => match argument {
                Value::String(target) => self.reference(target, at),
                _ => fail(args, "Ref takes the name of a parameter, a pseudo parameter or a resource"),
            },
            "Fn::Sub" => self.sub(argument, at, args).map(text),
            "Fn::Join" => self.join(argument, args).map(text),
            "Fn::Select" => self.select(argument, at, args).map(Some),
            "Fn::Split" => self.split(argument, args).map(Some),
            "Fn::If" => self.if_(argument, args),
            "Fn::FindInMap" => self.find_in_map(argument, at, args).map(Some),
            "Fn::Base64" => {
                let text = self.string(argument, args, "Fn::Base64's argument")?;
                if unknown::in_text(&text) {
                    return Ok(Some(Value::String(unknown::marker(name))));
                }
                Ok(Some(Value::String(base64::engine::general_purpose::STANDARD.encode(text))))
            }
            "Fn::GetAZs" => {
                let region = self.string(argument, args, "Fn::GetAZs's argument")?;
                if unknown::in_text(&region) {
                    return Ok(Some(unknown::list(name)));
                }
                let region = if region.is_empty() { self.inputs.region.as_str() } else { region.as_str() };
                let zones = self.inputs.availability_zones(region);
                Ok(Some(Value::Array(zones.into_iter().map(Value::String).collect())))
            }
            "Fn::ImportValue" => {
                let export = self.string(argument, args, "the export's name")?;
                match self.inputs.exports.get(&export) {
                    Some(value) => Ok(text(value.clone())),
                    None if self.checking.is_some() => Ok(text(unknown::marker(&export))),
                    None => {
                        missing(at, Missing::Export(export.clone()), format!("no value given for the export {export}"))
                    }
                }
            }
            "Fn::GetAtt" => self.get_att(argument, at, args).map(text),
            "Fn::Cidr" => self.cidr(argument, at, args).map(Some),
            "Fn::Equals" | "Fn::And" | "Fn::Or" | "Fn::Not" => {
                fail(at, format!("{name} is a condition function: it belongs in Conditions or in Fn::If's condition"))
            }
            // A function this resolver does not evaluate (Fn::Transform's AWS::Include, the
            // language extensions, whatever AWS adds): a value a check cannot know.
            _ if self.checking.is_some() => Ok(text(unknown::marker(name))),
            _ => fail(at, format!("{name} is not supported")),
        }
    }

    fn sub(&self, argument: &Value, at: &At<'_>, args: &At<'_>) -> Resolved<String> {
        let (text, variables) = match argument {
            Value::String(text) => (text, None),
            Value::Array(items) => match items.as_slice() {
                [Value::String(text), Value::Object(variables)] => (text, Some(variables)),
                _ => return fail(args, "Fn::Sub takes a string, or a string and an object of variables"),
            },
            _ => return fail(args, "Fn::Sub takes a string, or a string and an object of variables"),
        };
        let mut values = HashMap::new();
        let variables_at = args.index(1);
        for (key, value) in variables.into_iter().flatten() {
            let pointer = variables_at.key(key);
            let value = match self.value(value, &pointer)? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                other => return fail(&pointer, format!("the variable {key} is {}", kind(&other))),
            };
            values.insert(key.as_str(), value);
        }
        let mut out = String::new();
        for part in sub::parts(text) {
            let piece = match part {
                Part::Text(text) => text,
                Part::Variable(variable) => match values.get(variable) {
                    Some(value) => value,
                    None => &self.sub_variable(variable, at)?,
                },
            };
            // A variable may be used again and again: its copies are counted before
            // they are made.
            self.made.fits(out.len() + piece.len(), "resolving makes").or_else(|m| over_limit(at, m))?;
            out.push_str(piece);
        }
        Ok(out)
    }

    fn join(&self, argument: &Value, args: &At<'_>) -> Resolved<String> {
        let [delimiter, items] = self.arguments(argument, args, "Fn::Join")?;
        let Value::String(delimiter) = delimiter else {
            return fail(&args.index(0), "the delimiter must be a string");
        };
        let items = self.list(items, &args.index(1), "Fn::Join's second argument")?;
        let mut texts = Vec::with_capacity(items.len());
        for item in &items {
            match item {
                Value::String(s) => texts.push(s.as_str()),
                other => return fail(&args.index(1), format!("Fn::Join joins strings, not {}", kind(other))),
            }
        }
        Ok(texts.join(delimiter))
    }

    fn select(&self, argument: &Value, at: &At<'_>, args: &At<'_>) -> Resolved<Value> {
        let [index, items] = self.arguments(argument, args, "Fn::Select")?;
        let index = self.value(index, &args.index(0))?;
        if self.checking.is_some() {
            let list = self.value(items, &args.index(1))?;
            let unknown_list = unknown::is_list(&list) || list.as_str().is_some_and(unknown::in_text);
            if unknown_list || index.as_str().is_some_and(unknown::in_text) {
                return Ok(Value::String(match list {
                    // An item of an unknown list: named as the list is.
                    Value::Array(mut items) if unknown_list => items.swap_remove(0).as_str().unwrap_or("").to_string(),
                    _ => unknown::marker("Fn::Select"),
                }));
            }
        }
        let index = match index {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse::<u64>().ok(),
            _ => None,
        };
        let Some(index) = index else { return fail(&args.index(0), "the index must be a whole number") };
        let mut items = self.list(items, &args.index(1), "Fn::Select's second argument")?;
        match usize::try_from(index).ok().filter(|i| *i < items.len()) {
            Some(i) => Ok(items.swap_remove(i)),
            None => fail(at, format!("index {index} is out of the list's {} items", items.len())),
        }
    }

    fn split(&self, argument: &Value, args: &At<'_>) -> Resolved<Value> {
        let [delimiter, source] = self.arguments(argument, args, "Fn::Split")?;
        let Value::String(delimiter) = delimiter else {
            return fail(&args.index(0), "the delimiter must be a string");
        };
        if delimiter.is_empty() {
            return fail(&args.index(0), "the delimiter must not be empty");
        }
        let source = self.string(source, &args.index(1), "the string to split")?;
        if unknown::in_text(&source) {
            return Ok(unknown::list("Fn::Split"));
        }
        Ok(Value::Array(source.split(delimiter.as_str()).map(|s| Value::String(s.into())).collect()))
    }

    fn if_(&self, argument: &Value, args: &At<'_>) -> Resolved<Option<Value>> {
        let [condition, when_true, when_false] = self.arguments(argument, args, "Fn::If")?;
        let Value::String(condition) = condition else { return fail(&args.index(0), "the condition must be a name") };
        if self.condition(condition, &args.index(0))? {
            self.resolve(when_true, &args.index(1))
        } else {
            self.resolve(when_false, &args.index(2))
        }
    }

    fn find_in_map(&self, argument: &Value, at: &At<'_>, args: &At<'_>) -> Resolved<Value> {
        let [map, top, second] = self.arguments(argument, args, "Fn::FindInMap")?;
        let map = self.string(map, &args.index(0), "the map's name")?;
        let top = self.string(top, &args.index(1), "the top-level key")?;
        let second = self.string(second, &args.index(2), "the second-level key")?;
        if [&map, &top, &second].iter().any(|key| unknown::in_text(key)) {
            return self.find_in_map_unknown(&map, &top, &second, at);
        }
        let Some(entries) = self.template.value().get("Mappings").and_then(|m| m.get(&map)) else {
            return fail(at, format!("there is no mapping named {map}"));
        };
        let Some(entry) = entries.get(&top) else {
            return fail(at, format!("the mapping {map} has no key {top}"));
        };
        match entry.get(&second) {
            Some(value) => Ok(value.clone()),
            None => fail(at, format!("the mapping {map} has no key {second} under {top}")),
        }
    }

    /// Fn::FindInMap with a key unknown: the one value every key it may be gives, or an
    /// unknown (a list when they are all lists).
    fn find_in_map_unknown(&self, map: &str, top: &str, second: &str, at: &At<'_>) -> Resolved<Value> {
        let matching = |value: &Value, key: &str| -> Vec<Value> {
            let entries = value.as_object().into_iter().flatten();
            entries.filter(|(k, _)| unknown::in_text(key) || k.as_str() == key).map(|(_, v)| v.clone()).collect()
        };
        let maps = matching(self.template.value().get("Mappings").unwrap_or(&Value::Null), map);
        let tops: Vec<Value> = maps.iter().flat_map(|m| matching(m, top)).collect();
        let candidates: Vec<Value> = tops.iter().flat_map(|t| matching(t, second)).collect();
        match candidates.first() {
            None => {
                fail(at, format!("no mapping has a value for [{}]", unknown::display(&[map, top, second].join(", "))))
            }
            Some(first) if candidates.iter().all(|c| c == first) => Ok(first.clone()),
            Some(_) if candidates.iter().all(Value::is_array) => Ok(unknown::list("Fn::FindInMap")),
            Some(_) => Ok(Value::String(unknown::marker("Fn::FindInMap"))),
        }
    }

    fn get_att(&self, argument: &Value, at: &At<'_>, args: &At<'_>) -> Resolved<String> {
        let (resource, attribute) = match argument {
            // The long form's string, as the short form writes it.
            Value::String(text) => match text.split_once('.') {
                Some((resource, attribute)) => (resource.to_string(), attribute.to_string()),
                None => return fail(args, "Fn::GetAtt takes [Resource, Attribute]"),
            },
            Value::Array(items) if items.len() == 2 => {
                let Value::String(resource) = &items[0] else {
                    return fail(&args.index(0), "the resource must be a logical id");
                };
                (resource.clone(), self.string(&items[1], &args.index(1), "the attribute's name")?)
            }
            _ => return fail(args, "Fn::GetAtt takes [Resource, Attribute]"),
        };
        self.attribute(&resource, &attribute, at)
    }

    fn cidr(&self, argument: &Value, at: &At<'_>, args: &At<'_>) -> Resolved<Value> {
        let [block, count, bits] = self.arguments(argument, args, "Fn::Cidr")?;
        if self.checking.is_some() {
            let values = [self.value(block, &args.index(0))?, self.value(count, &args.index(1))?];
            if values.iter().chain([&self.value(bits, &args.index(2))?]).any(unknown::in_value) {
                return Ok(unknown::list("Fn::Cidr"));
            }
        }
        let block = self.string(block, &args.index(0), "the address block")?;
        let count = self.whole_number(count, &args.index(1))?;
        let bits = self.whole_number(bits, &args.index(2))?;
        match cidr::subnets(&block, count, bits) {
            Ok(subnets) => Ok(Value::Array(subnets.into_iter().map(Value::String).collect())),
            Err(message) => fail(at, message),
        }
    }

    fn whole_number(&self, value: &Value, at: &At<'_>) -> Resolved<u64> {
        let number = match self.value(value, at)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        };
        number.map_or_else(|| fail(at, "must be a whole number"), Ok)
    }

    /// `Ref`: a pseudo parameter, a parameter, or a resource's given value.
    fn reference(&self, target: &str, at: &At<'_>) -> Resolved<Option<Value>> {
        let inputs = self.inputs;
        let text = |s: &str| Ok(Some(Value::String(s.to_string())));
        match target {
            "AWS::Region" => return text(&inputs.region),
            "AWS::StackName" => return text(&inputs.stack_name),
            "AWS::StackId" => return text(&inputs.stack_id()),
            "AWS::AccountId" => return text(&inputs.account_id),
            "AWS::Partition" => return text(inputs.partition()),
            "AWS::URLSuffix" => return text(inputs.url_suffix()),
            "AWS::NotificationARNs" => return Ok(Some(Value::Array(Vec::new()))),
            "AWS::NoValue" => return Ok(None),
            _ => {}
        }
        match self.parameters.get(target) {
            Some(Parameter::Value(value)) => return Ok(Some(value.clone())),
            Some(Parameter::StoredInSsm(name)) => {
                return fail(at, format!("{target} is the Systems Manager parameter {name}, which is not read here"));
            }
            Some(Parameter::Unknown { list: true, .. }) => return Ok(Some(unknown::list(target))),
            Some(Parameter::Unknown { list: false, .. }) => return text(&unknown::marker(target)),
            None => {}
        }
        if self.is_resource(target) {
            return match self.inputs.attributes.get(target) {
                Some(value) => text(value),
                None if self.checking.is_some() => text(&unknown::marker(target)),
                None => missing(
                    at,
                    Missing::Attribute(target.to_string()),
                    format!("no value given for the resource {target} (its Ref)"),
                ),
            };
        }
        fail(at, format!("{target} is not a parameter, a pseudo parameter or a resource of the template"))
    }

    fn is_resource(&self, name: &str) -> bool {
        self.template.value()["Resources"].get(name).is_some()
    }

    fn attribute(&self, resource: &str, attribute: &str, at: &At<'_>) -> Resolved<String> {
        if !self.is_resource(resource) {
            return fail(at, format!("Fn::GetAtt refers to {resource}, which is not a resource of the template"));
        }
        let name = format!("{resource}.{attribute}");
        match self.inputs.attributes.get(&name) {
            Some(value) => Ok(value.clone()),
            None if self.checking.is_some() => Ok(unknown::marker(&name)),
            None => missing(at, Missing::Attribute(name.clone()), format!("no value given for the attribute {name}")),
        }
    }

    /// `${Name}` in `Fn::Sub`: `Ref` of a name, `Fn::GetAtt` of `Resource.Attribute`.
    fn sub_variable(&self, variable: &str, at: &At<'_>) -> Resolved<String> {
        if let Some((resource, attribute)) = variable.split_once('.')
            && self.is_resource(resource)
        {
            return self.attribute(resource, attribute, at);
        }
        match self.reference(variable, at)? {
            Some(Value::String(s)) => Ok(s),
            Some(other) => fail(at, format!("${{{variable}}} is {}, which Fn::Sub cannot insert", kind(&other))),
            None => fail(at, format!("${{{variable}}} is AWS::NoValue, which Fn::Sub cannot insert")),
        }
    }

    /// A named condition of the template's Conditions, evaluated once.
    fn condition(&self, name: &str, at: &At<'_>) -> Resolved<bool> {
        {
            let conditions = self.conditions.borrow();
            match conditions.get(name) {
                Some(Some(value)) => return Ok(*value),
                Some(None) => return fail(at, format!("the condition {name} depends on itself")),
                None => {}
            }
            // Each condition being evaluated is a level of recursion: bound it.
            if conditions.values().filter(|v| v.is_none()).count() >= MAX_CONDITION_DEPTH {
                return fail(at, format!("conditions refer to conditions more than {MAX_CONDITION_DEPTH} deep"));
            }
        }
        let Some(definition) = self.template.value().get("Conditions").and_then(|c| c.get(name)) else {
            return fail(at, format!("there is no condition named {name}"));
        };
        let conditions = At::ROOT.key("Conditions");
        self.conditions.borrow_mut().insert(name.to_string(), None);
        let value = self.evaluate(definition, &conditions.key(name))?;
        self.conditions.borrow_mut().insert(name.to_string(), Some(value));
        Ok(value)
    }

    /// A condition function: Fn::Equals, Fn::And, Fn::Or, Fn::Not, Condition.
    fn evaluate(&self, value: &Value, at: &At<'_>) -> Resolved<bool> {
        let _level = self.descend(at)?;
        let Some((name, argument)) = value.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next()) else {
            return fail(at, "a condition is one of Fn::Equals, Fn::And, Fn::Or, Fn::Not or Condition");
        };
        let args = at.key(name);
        match name.as_str() {
            "Condition" => match argument {
                Value::String(other) => self.condition(other, &args),
                _ => fail(&args, "Condition takes a condition's name"),
            },
            "Fn::Equals" => {
                let [a, b] = self.arguments(argument, &args, name)?;
                let (a, b) = (comparable(&self.value(a, &args.index(0))?), comparable(&self.value(b, &args.index(1))?));
                match &self.checking {
                    Some(checking) if unknown::in_value(&a) || unknown::in_value(&b) => {
                        Ok(self.undecided_equals(checking, a, b))
                    }
                    _ => Ok(a == b),
                }
            }
            "Fn::Not" => {
                let [condition] = self.arguments(argument, &args, name)?;
                Ok(!self.evaluate(condition, &args.index(0))?)
            }
            "Fn::And" | "Fn::Or" => {
                let Some(conditions) = argument.as_array().filter(|c| (2..=10).contains(&c.len())) else {
                    return fail(&args, format!("{name} takes a list of 2 to 10 conditions"));
                };
                // All are evaluated (no short cut), so an error in any one is reported.
                let mut values = Vec::with_capacity(conditions.len());
                for (i, condition) in conditions.iter().enumerate() {
                    values.push(self.evaluate(condition, &args.index(i))?);
                }
                Ok(if name == "Fn::And" { values.iter().all(|v| *v) } else { values.iter().any(|v| *v) })
            }
            _ => fail(at, format!("{name} is not a condition function")),
        }
    }
}

impl Resolver<'_> {
    /// Fn::Equals over unknowns, when checking: false when what is known of the two
    /// differs, otherwise a question of this run (see [`metadata_for_checks`] and
    /// [`Decisions`]).
    fn undecided_equals(&self, decisions: &Decisions, a: Value, b: Value) -> bool {
        // The same unknowns in the same places are equal, when each names one value (a
        // parameter, an attribute, a list parameter's whole list), not any result of a
        // function or any item of a list.
        let one_value = |n: &String| !n.starts_with("Fn::") && !n.ends_with("[]");
        if a == b && (unknown::is_list(&a) || unknown::names(&a).iter().all(one_value)) {
            return true;
        }
        let domain = |name: &str| self.domain(name).unwrap_or(Domain { number: false, allowed: None });
        fn whole<'v>(resolver: &Resolver<'_>, value: &'v Value) -> Option<&'v str> {
            value.as_str().and_then(|text| resolver.whole_parameter(text))
        }
        match (whole(self, &a), whole(self, &b)) {
            (Some(p), Some(q)) => return decisions.parameters_equal(p, q, &domain),
            (Some(p), None) | (None, Some(p)) => {
                let other = if whole(self, &a).is_some() { &b } else { &a };
                if let Value::String(text) = other
                    && !unknown::in_text(text)
                {
                    return decisions.parameter_equals(p, text, &domain);
                }
            }
            (None, None) => {}
        }
        for (x, y) in [(&a, &b), (&b, &a)] {
            // A list never equals a text (unless the text is a function's unknown result,
            // which may be a list).
            if let (Value::Array(_), Value::String(y)) = (x, y)
                && unknown::names(&Value::String(y.clone())).iter().all(|n| !n.starts_with("Fn::"))
            {
                return false;
            }
        }
        if let (Value::String(x), Value::String(y)) = (&a, &b) {
            let (px, py) = (unknown::known_prefix(x), unknown::known_prefix(y));
            let (sx, sy) = (unknown::known_suffix(x), unknown::known_suffix(y));
            if !(px.starts_with(py) || py.starts_with(px)) || !(sx.ends_with(sy) || sy.ends_with(sx)) {
                return false;
            }
        }
        decisions.answer(a.to_string(), b.to_string())
    }

    /// The unknown scalar parameter `text` is the whole of.
    fn whole_parameter<'t>(&self, text: &'t str) -> Option<&'t str> {
        let name = text.strip_prefix(unknown::OPEN)?.strip_suffix(unknown::CLOSE)?;
        self.domain(name).map(|_| name)
    }

    /// The values the unknown scalar parameter `name` may have.
    fn domain(&self, name: &str) -> Option<Domain<'_>> {
        match self.parameters.get(name) {
            Some(Parameter::Unknown { list: false, number, allowed }) => {
                Some(Domain { number: *number, allowed: allowed.as_deref() })
            }
            _ => None,
        }
    }
}

/// Fn::Equals compares values as text: `"1"` equals `1`, `"true"` equals `true`.
fn comparable(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        other => scalar_text(other).map_or_else(|| other.clone(), Value::String),
    }
}
