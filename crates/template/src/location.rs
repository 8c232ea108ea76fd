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

/// A value's place in [`Positions`]' tree.
pub type Node = usize;

/// Where each value is, and where the key naming it is, by JSON pointer (RFC 6901). Kept
/// as a tree of the pointers' segments, each node holding only its own: a map by whole
/// pointer would hold each ancestor's keys again in every descendant's entry, which
/// long keys nested deep make quadratic in the template's size.
#[derive(Debug, Clone)]
pub struct Positions {
    /// (parent, segment: a key or an index, unescaped) → child. Node 0 is the root, "".
    children: HashMap<(Node, String), Node>,
    values: Vec<Option<Position>>,
    keys: Vec<Option<Position>>,
}

impl Default for Positions {
    fn default() -> Positions {
        Positions { children: HashMap::new(), values: vec![None], keys: vec![None] }
    }
}

impl Positions {
    /// The root's node: the pointer "".
    pub const ROOT: Node = 0;

    /// `parent`'s child named `segment` (a key, or an index as text), made when new.
    pub fn child(&mut self, parent: Node, segment: &str) -> Node {
        let next = self.values.len();
        let node = *self.children.entry((parent, segment.to_string())).or_insert(next);
        if node == next {
            self.values.push(None);
            self.keys.push(None);
        }
        node
    }

    pub fn set_value(&mut self, node: Node, position: Position) {
        self.values[node] = Some(position);
    }

    pub fn set_key(&mut self, node: Node, position: Position) {
        self.keys[node] = Some(position);
    }

    /// The nodes along `pointer`, from the root's first child, as far as they exist.
    fn path<'a>(&'a self, pointer: &'a str) -> impl Iterator<Item = Node> + 'a {
        let segments = pointer.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~"));
        segments.scan(Self::ROOT, |node, segment| {
            *node = *self.children.get(&(*node, segment))?;
            Some(*node)
        })
    }

    /// The node at `pointer` exactly.
    fn find(&self, pointer: &str) -> Option<Node> {
        let wanted = pointer.split('/').count() - 1;
        let (count, last) = self.path(pointer).fold((0, Self::ROOT), |(count, _), node| (count + 1, node));
        (count == wanted).then_some(last)
    }

    /// Where the value at `pointer` is.
    #[cfg(test)]
    pub fn value(&self, pointer: &str) -> Option<Position> {
        self.find(pointer).and_then(|node| self.values[node])
    }

    /// Where the key naming the value at `pointer` is.
    pub fn key(&self, pointer: &str) -> Option<Position> {
        self.find(pointer).and_then(|node| self.keys[node])
    }

    /// Where the value at `pointer` is, or the nearest value that holds it.
    pub fn nearest(&self, pointer: &str) -> Option<Position> {
        let root = self.values[Self::ROOT];
        self.path(pointer).fold(root, |found, node| self.values[node].or(found))
    }
}

/// `parent`'s child named `key`, with `~` and `/` escaped as RFC 6901 says.
pub fn child_pointer(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_found_by_pointer_exactly_or_nearest() {
        let at = |line| Position { line, column: 1 };
        let mut positions = Positions::default();
        positions.set_value(Positions::ROOT, at(1));
        let files = positions.child(Positions::ROOT, "files");
        positions.set_value(files, at(2));
        let file = positions.child(files, "/etc/a~b");
        positions.set_value(file, at(3));
        positions.set_key(file, at(4));
        assert_eq!(positions.child(files, "/etc/a~b"), file);
        assert_eq!(positions.value("/files/~1etc~1a~0b"), Some(at(3)));
        assert_eq!(positions.key("/files/~1etc~1a~0b"), Some(at(4)));
        assert_eq!(positions.value("/files/~1etc~1a~0b/mode"), None);
        assert_eq!(positions.nearest("/files/~1etc~1a~0b/mode/x"), Some(at(3)));
        assert_eq!(positions.nearest("/other"), Some(at(1)));
        assert_eq!(positions.value(""), Some(at(1)));
        assert_eq!(positions.key("/files"), None);
    }
}
