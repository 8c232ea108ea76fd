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

    /// `parent`'s child named `segment`, when the template has it.
    pub fn child_of(&self, parent: Node, segment: &str) -> Option<Node> {
        self.children.get(&(parent, segment.to_string())).copied()
    }

    /// Where the value of `node` is.
    pub fn value_of(&self, node: Node) -> Option<Position> {
        self.values[node]
    }

    /// The node at `pointer`, when the template has it, and where the value at `pointer`
    /// is, or the nearest value that holds it (as [`Positions::nearest`]).
    pub fn place(&self, pointer: &str) -> (Option<Node>, Option<Position>) {
        (self.find(pointer), self.nearest(pointer))
    }

    /// Where the value at `pointer` is, or the nearest value that holds it.
    pub fn nearest(&self, pointer: &str) -> Option<Position> {
        let root = self.values[Self::ROOT];
        self.path(pointer).fold(root, |found, node| self.values[node].or(found))
    }
}

/// Where an expression is: a chain of keys and indices from the template's root, made
/// into a JSON pointer only when an error names it (a pointer built for every value as
/// the resolver descends would cost its depth times its keys' length, again and again).
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    parent: Option<&'a At<'a>>,
    segment: Segment<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Segment<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    /// The template's root, the pointer "".
    pub const ROOT: At<'static> = At { parent: None, segment: Segment::Root };

    /// The value under `key` of the mapping here.
    pub fn key(&'a self, key: &'a str) -> At<'a> {
        At { parent: Some(self), segment: Segment::Key(key) }
    }

    /// The item `index` of the list here.
    pub fn index(&'a self, index: usize) -> At<'a> {
        At { parent: Some(self), segment: Segment::Index(index) }
    }

    /// The JSON pointer (RFC 6901).
    pub fn pointer(&self) -> String {
        let mut segments = Vec::new();
        let mut at = Some(self);
        while let Some(here) = at {
            match here.segment {
                Segment::Root => {}
                Segment::Key(key) => segments.push(key.replace('~', "~0").replace('/', "~1")),
                Segment::Index(index) => segments.push(index.to_string()),
            }
            at = here.parent;
        }
        segments.iter().rev().map(|segment| format!("/{segment}")).collect()
    }
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

    #[test]
    fn a_place_is_made_into_a_json_pointer() {
        let files = At::ROOT.key("files");
        let file = files.key("/etc/a~b");
        assert_eq!(file.index(3).pointer(), "/files/~1etc~1a~0b/3");
        assert_eq!(At::ROOT.pointer(), "");
    }
}
