//! Where a value is in a template: its JSON pointer, and its line and column in the file.

use std::collections::HashMap;
use std::fmt;

/// A line and a column, both from 1.
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

/// The position of each value, by JSON pointer (RFC 6901).
pub type Positions = HashMap<String, Position>;

/// `parent`'s child named `key`, with `~` and `/` escaped as RFC 6901 says.
pub fn child_pointer(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The position of `pointer`, or of the nearest value that holds it.
pub fn nearest(positions: &Positions, pointer: &str) -> Option<Position> {
    let mut pointer = pointer;
    loop {
        if let Some(position) = positions.get(pointer) {
            return Some(*position);
        }
        pointer = &pointer[..pointer.rfind('/')?];
    }
}
