//! CloudFormation templates, JSON or YAML with the short-form intrinsics, and a
//! resource's `Metadata` with its intrinsic functions resolved as a stack creation would
//! resolve them (`cfn-bootstrap render`, and `-t` of validate and plan).
//!
//! ```ignore
//! let template = Template::parse("site.yaml", &text)?;
//! let metadata = template.metadata("WebServer", &Inputs::default())?;
//! ```

mod cidr;
mod decisions;
mod error;
mod inputs;
mod limits;
mod location;
mod parameters;
mod resolve;
mod sub;
pub mod unknown;
pub mod user_data;
mod yaml;

pub use error::{Details, Error, ErrorKind, Missing};
pub use inputs::Inputs;
pub use limits::{BUDGET_MAX, BUDGET_MIN, BUDGET_PER_BYTE, MAX_DEPTH, MAX_RESOLVE_DEPTH};
pub use location::Position;
pub use resolve::{Checked, MAX_VARIANTS};

use location::Positions;
use serde_json::Value;

/// A parsed template: its value in the long form, and where each value is in the file.
#[derive(Debug, Clone)]
pub struct Template {
    name: String,
    /// The text's length in bytes, which the bounds on resolving are proportional to.
    length: usize,
    root: Value,
    /// Where each value is, and where the key naming it is (for a value in a mapping).
    pub(crate) positions: Positions,
}

impl Template {
    /// Parses `text`, named `name` in errors (a file's path): JSON when it starts with
    /// `{`, YAML otherwise, as CloudFormation tells them apart.
    ///
    /// The value is at most [`MAX_DEPTH`] levels deep either way (serde_json stops JSON
    /// at 128 levels, the YAML reader counts levels with aliases expanded): resolving,
    /// cloning, dropping and printing a value recurse, and this keeps their stack bounded.
    pub fn parse(name: &str, text: &str) -> Result<Template, Error> {
        let (root, positions) = if text.trim_start().starts_with('{') {
            let root: Value = serde_json::from_str(text).map_err(|e| {
                let position = Some(Position { line: e.line(), column: e.column() });
                if e.to_string().starts_with("recursion limit exceeded") {
                    return Error::new(ErrorKind::Limit, name, limits::too_deep("")).at(position);
                }
                Error::new(ErrorKind::Syntax, name, format!("not JSON: {e}")).at(position)
            })?;
            // JSON is YAML's flow style: the YAML reader finds the positions. A JSON text
            // it cannot read (a duplicated key, say) only goes without them.
            (root, yaml::load(text).map(|(_, positions)| positions).unwrap_or_default())
        } else {
            yaml::load(text).map_err(|e| {
                let (kind, message) = match e.over_limit {
                    true => (ErrorKind::Limit, e.message),
                    false => (ErrorKind::Syntax, format!("not YAML: {}", e.message)),
                };
                Error::new(kind, name, message).at(Some(e.position))
            })?
        };
        let template = Template { name: name.to_string(), length: text.len(), root, positions };
        template.check_shape()?;
        Ok(template)
    }

    fn check_shape(&self) -> Result<(), Error> {
        let error = |pointer: &str, message: &str| {
            Error::new(ErrorKind::Template, &self.name, message)
                .at(self.positions.nearest(pointer))
                .with_pointer(Some(pointer.to_string()).filter(|p| !p.is_empty()))
        };
        if !self.root.is_object() {
            return Err(error("", "a template is a JSON object or a YAML mapping"));
        }
        match self.root.get("Resources") {
            Some(Value::Object(resources)) if !resources.is_empty() => {}
            _ => return Err(error("", "Template format error: At least one Resources member must be defined.")),
        }
        for section in ["Parameters", "Mappings", "Conditions"] {
            if let Some(value) = self.root.get(section)
                && !value.is_object()
            {
                return Err(error(&format!("/{section}"), &format!("{section} must be an object")));
            }
        }
        for (name, resource) in self.resources() {
            if !resource.is_object() {
                return Err(error(&format!("/Resources/{name}"), "a resource must be an object"));
            }
        }
        Ok(())
    }

    /// The length in bytes of the text the template was parsed from.
    pub(crate) fn length(&self) -> usize {
        self.length
    }

    /// The name the template was parsed with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole template, intrinsics in their long form.
    pub fn value(&self) -> &Value {
        &self.root
    }

    /// The line and column of the value at `pointer` (or of the nearest value holding it).
    pub fn position(&self, pointer: &str) -> Option<Position> {
        self.positions.nearest(pointer)
    }

    /// The line and column of the key naming the value at `pointer`, when it is in a
    /// mapping (otherwise as [`Template::position`]).
    pub fn key_position(&self, pointer: &str) -> Option<Position> {
        self.positions.key(pointer).or_else(|| self.position(pointer))
    }

    fn resources(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.root.get("Resources").and_then(Value::as_object).into_iter().flatten()
    }

    /// The logical ids of the resources whose Metadata has `AWS::CloudFormation::Init`,
    /// in template order.
    pub fn resources_with_init(&self) -> Vec<&str> {
        self.resources()
            .filter(|(_, r)| r.pointer("/Metadata/AWS::CloudFormation::Init").is_some())
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The parameters declared `NoEcho`, in template order: values a stack hides from
    /// DescribeStacks (and Metadata does not, see [`parameters`]).
    pub fn no_echo_parameters(&self) -> Vec<&str> {
        let declared = self.root.get("Parameters").and_then(Value::as_object).into_iter().flatten();
        declared.filter(|(_, d)| parameters::is_no_echo(d)).map(|(name, _)| name.as_str()).collect()
    }

    /// The resource's Metadata with every intrinsic function resolved: what
    /// DescribeStackResource returns after a stack creation with `inputs`.
    pub fn metadata(&self, resource: &str, inputs: &Inputs) -> Result<Value, Error> {
        resolve::metadata(self, resource, inputs)
    }

    /// The resource's Metadata as `validate` checks it, without the values only a stack
    /// has: a parameter without a value (no `-p`, no Default), another resource's `Ref` or
    /// attribute, another stack's export are [`unknown`]s of their type, and functions over
    /// them give unknowns, as does a function this crate does not evaluate (Fn::Transform,
    /// a new one) and a NoEcho parameter. The resource is checked as when created, whatever
    /// its own Condition. Conditions that unknowns leave undecided are tried both ways:
    /// one resolved Metadata per combination (see [`Checked`]). What `inputs` gives is used.
    pub fn metadata_for_checks(&self, resource: &str, inputs: &Inputs) -> Result<Checked, Error> {
        resolve::metadata_for_checks(self, resource, inputs)
    }
}
