//! What can be wrong with a template, or with the values given for it.

use crate::location::Position;
use std::fmt;

/// Which kind of failure: a caller may answer a missing value with a hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is neither JSON nor YAML.
    Syntax,
    /// The template is not a CloudFormation template, or uses a function wrongly.
    Template,
    /// A value the template needs was not given: a parameter without a default, an
    /// attribute (`Ref` to a resource, `Fn::GetAtt`) or an export (`Fn::ImportValue`).
    Missing(Missing),
    /// A given value does not fit: an unknown parameter, a value not allowed.
    Input,
    /// The template is over a bound that keeps its reading and resolving within bounded
    /// time, memory and stack: how deep values nest, what YAML anchors and aliases copy.
    Limit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    Parameter(String),
    /// `Resource` (its `Ref`) or `Resource.Attribute`.
    Attribute(String),
    Export(String),
}

/// An error, with where it is (boxed: it carries its whole location, and a `Result`
/// holding it stays small). Its details are read through `Deref`: `error.message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<Details>);

/// What went wrong and where: the file, the resource, the JSON pointer of the
/// expression, its line and column when known, and the expression itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Details {
    pub kind: ErrorKind,
    pub file: String,
    pub position: Option<Position>,
    pub resource: Option<String>,
    pub pointer: Option<String>,
    /// The expression, as compact JSON in its long form.
    pub expression: Option<String>,
    pub message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, file: &str, message: impl Into<String>) -> Error {
        Error(Box::new(Details {
            kind,
            file: file.to_string(),
            position: None,
            resource: None,
            pointer: None,
            expression: None,
            message: message.into(),
        }))
    }

    pub(crate) fn at(mut self, position: Option<Position>) -> Error {
        self.0.position = position;
        self
    }

    pub(crate) fn in_resource(mut self, resource: &str) -> Error {
        self.0.resource = Some(resource.to_string());
        self
    }

    pub(crate) fn with_pointer(mut self, pointer: Option<String>) -> Error {
        self.0.pointer = pointer;
        self
    }

    pub(crate) fn with_expression(mut self, expression: Option<String>) -> Error {
        self.0.expression = expression;
        self
    }
}

impl std::ops::Deref for Error {
    type Target = Details;

    fn deref(&self) -> &Details {
        &self.0
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(position) = self.position {
            write!(f, ":{position}")?;
        }
        write!(f, ": ")?;
        match (&self.resource, &self.pointer) {
            (Some(resource), Some(pointer)) => write!(f, "{resource} ({pointer}): ")?,
            (Some(resource), None) => write!(f, "{resource}: ")?,
            (None, Some(pointer)) => write!(f, "{pointer}: ")?,
            (None, None) => {}
        }
        write!(f, "{}", self.message)?;
        if let Some(expression) = &self.expression {
            write!(f, " in {expression}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
