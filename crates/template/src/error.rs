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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    Parameter(String),
    /// `Resource` (its `Ref`) or `Resource.Attribute`.
    Attribute(String),
    Export(String),
}

/// An error, with where it is: the file, the resource, the JSON pointer of the
/// expression, its line and column when known, and the expression itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
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
        Error {
            kind,
            file: file.to_string(),
            position: None,
            resource: None,
            pointer: None,
            expression: None,
            message: message.into(),
        }
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
