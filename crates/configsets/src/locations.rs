//! Where each value of a JSON text is: a JSON pointer (RFC 6901) for every key and value,
//! mapped to its line and column, and the keys an object repeats. serde_json keeps only
//! the last of a repeated key, as CloudFormation does, so a duplicate silently loses
//! data; the span-aware parse sees both.

use jsonc_parser::ast::{ObjectPropName, Value as Node};
use jsonc_parser::common::Ranged;
use std::collections::HashMap;

/// A place in the text: 1-based line and column (in characters), and the byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

/// A key an object gives twice: where each occurrence's key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The pointer of the value kept (the last one, as serde_json and CloudFormation keep).
    pub pointer: String,
    pub first: Position,
    pub repeated: Position,
}

/// The positions of a JSON text's keys and values by JSON pointer.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    text: String,
    line_starts: Vec<usize>,
    /// pointer → (its key's start, its value's start); the root has no key.
    places: HashMap<String, (Option<usize>, usize)>,
    duplicates: Vec<Duplicate>,
}

/// One step of a JSON pointer, escaped (`~` → `~0`, `/` → `~1`).
pub fn pointer_step(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl SourceMap {
    /// Indexes `text`, which must already have parsed as strict JSON; `None` when the
    /// span-aware parser refuses it (then only pointers are known).
    pub fn index(text: &str) -> Option<SourceMap> {
        let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &Default::default()).ok()?;
        let mut map = SourceMap {
            text: text.to_string(),
            line_starts: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect(),
            ..SourceMap::default()
        };
        if let Some(root) = &parsed.value {
            map.walk(root, String::new(), None);
        }
        Some(map)
    }

    fn walk(&mut self, node: &Node<'_>, pointer: String, key: Option<usize>) {
        self.places.insert(pointer.clone(), (key, node.range().start));
        match node {
            Node::Object(object) => {
                let mut seen: HashMap<&str, usize> = HashMap::new();
                for property in &object.properties {
                    let name = match &property.name {
                        ObjectPropName::String(lit) => lit.value.as_ref(),
                        ObjectPropName::Word(lit) => lit.value,
                    };
                    let key_start = property.name.range().start;
                    let child = format!("{pointer}/{}", pointer_step(name));
                    if let Some(first) = seen.insert(name, key_start) {
                        self.duplicates.push(Duplicate {
                            pointer: child.clone(),
                            first: self.position(first),
                            repeated: self.position(key_start),
                        });
                    }
                    self.walk(&property.value, child, Some(key_start));
                }
            }
            Node::Array(array) => {
                for (i, element) in array.elements.iter().enumerate() {
                    self.walk(element, format!("{pointer}/{i}"), None);
                }
            }
            _ => {}
        }
    }

    /// The position of a byte offset.
    pub fn position(&self, offset: usize) -> Position {
        let line = self.line_starts.partition_point(|&start| start <= offset).max(1);
        let start = self.line_starts[line - 1];
        let column = self.text.get(start..offset).map_or(1, |s| s.chars().count() + 1);
        Position { line, column, offset }
    }

    /// Where the value at `pointer` starts, or, for an absent value, the nearest
    /// enclosing one that is there.
    pub fn value(&self, pointer: &str) -> Option<Position> {
        self.nearest(pointer).map(|(_, value)| self.position(value))
    }

    /// Where the key of the value at `pointer` starts (the value itself for array
    /// elements and the root).
    pub fn key(&self, pointer: &str) -> Option<Position> {
        self.nearest(pointer).map(|(key, value)| self.position(key.unwrap_or(value)))
    }

    fn nearest(&self, pointer: &str) -> Option<(Option<usize>, usize)> {
        let mut pointer = pointer;
        loop {
            if let Some(place) = self.places.get(pointer) {
                return Some(*place);
            }
            pointer = &pointer[..pointer.rfind('/')?];
        }
    }

    /// The text of a line (1-based), without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts.get(line.wrapping_sub(1)).copied().unwrap_or(self.text.len());
        let end = self.line_starts.get(line).map_or(self.text.len(), |&next| next - 1);
        self.text.get(start..end).unwrap_or("").trim_end_matches('\r')
    }

    pub fn duplicates(&self) -> &[Duplicate] {
        &self.duplicates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_map_to_lines_and_columns() {
        let text = "{\n  \"a/b\": {\"c\": [1, \"é\", 3]},\n  \"d~\": null\n}\n";
        let map = SourceMap::index(text).unwrap();
        let at = |p: Position| (p.line, p.column);
        assert_eq!(map.key("/a~1b").map(at), Some((2, 3)));
        assert_eq!(map.value("/a~1b").map(at), Some((2, 10)));
        assert_eq!(map.value("/a~1b/c/2").map(at), Some((2, 25)));
        assert_eq!(map.key("/d~0").map(at), Some((3, 3)));
        // Absent values are placed at what encloses them.
        assert_eq!(map.value("/a~1b/c/9/x").map(at), Some((2, 16)));
        assert_eq!(map.line_text(3), "  \"d~\": null");
        assert!(map.duplicates().is_empty());
    }

    #[test]
    fn duplicate_keys_are_found_with_both_places() {
        let map = SourceMap::index("{\"x\": {\"k\": 1,\n \"k\": 2}}").unwrap();
        let duplicate = &map.duplicates()[0];
        assert_eq!(duplicate.pointer, "/x/k");
        assert_eq!((duplicate.first.line, duplicate.first.column), (1, 8));
        assert_eq!((duplicate.repeated.line, duplicate.repeated.column), (2, 2));
    }
}
