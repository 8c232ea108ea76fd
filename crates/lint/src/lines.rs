//! A text's lines by number, found by a binary search over where each line starts: each
//! finding looks its line up, and counting lines from the top for each one made
//! validate's work grow with the square of the findings.

/// `text` with the byte offset where each of its lines starts.
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect();
        Lines { text, starts }
    }

    /// Line `number` (1-based) without its line break (`\n` or `\r\n`); empty past the
    /// end, as an empty last line is.
    pub fn line(&self, number: usize) -> &'a str {
        let Some(&start) = number.checked_sub(1).and_then(|i| self.starts.get(i)) else { return "" };
        let end = self.starts.get(number).map_or(self.text.len(), |next| next - 1);
        let line = &self.text[start..end];
        line.strip_suffix('\r').unwrap_or(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_by_number_as_str_lines_gives_them() {
        for text in ["", "a", "a\n", "a\r\nb\n\nc", "\n\n", "x\ny\r\n"] {
            let lines = Lines::new(text);
            let expected: Vec<&str> = text.lines().collect();
            for (i, line) in expected.iter().enumerate() {
                assert_eq!(lines.line(i + 1), *line, "{text:?} line {}", i + 1);
            }
            assert_eq!(lines.line(expected.len() + 1), "");
            assert_eq!(lines.line(0), "");
        }
    }
}
