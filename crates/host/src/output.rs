//! A command's output as it streams in: split into lines looking at each byte once,
//! and kept only as a bounded head and tail for the messages written after the command
//! ends. A command may print gigabytes (or one line without end); none of that is held
//! beyond the line being read.

use std::collections::VecDeque;

/// How many bytes of the start and of the end of an output are kept.
pub const KEEP: usize = 64 * 1024;

/// The first and last [`KEEP`] bytes of an output and how long it was in all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeptOutput {
    head: Vec<u8>,
    /// The last bytes after the head (at most [`KEEP`]).
    tail: VecDeque<u8>,
    total: u64,
    /// The length of the output without its trailing whitespace.
    content_end: u64,
}

/// The whitespace Rust's `trim_end` removes that fits in one byte.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

impl KeptOutput {
    pub fn new() -> KeptOutput {
        KeptOutput::default()
    }

    /// An output that was kept whole (tests and callers that build one).
    pub fn from_bytes(bytes: &[u8]) -> KeptOutput {
        let mut kept = KeptOutput::new();
        kept.push(bytes);
        kept
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        if let Some(last) = bytes.iter().rposition(|b| !is_space(*b)) {
            self.content_end = self.total + last as u64 + 1;
        }
        self.total += bytes.len() as u64;
        let room = KEEP - self.head.len();
        if room > 0 {
            let taken = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..taken]);
            bytes = &bytes[taken..];
        }
        if bytes.len() >= KEEP {
            self.tail.clear();
            bytes = &bytes[bytes.len() - KEEP..];
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(KEEP);
            self.tail.drain(..overflow);
        }
        self.tail.extend(bytes);
    }

    /// How many bytes the command printed.
    pub fn total_len(&self) -> u64 {
        self.total
    }

    /// How many bytes between the head and the tail were not kept.
    pub fn left_out(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The whole output, when nothing was left out.
    pub fn whole(&self) -> Option<Vec<u8>> {
        (self.left_out() == 0).then(|| self.head.iter().chain(self.tail.iter()).copied().collect())
    }

    /// The output as text: bytes that are not UTF-8 are replaced, never an error (the
    /// reference failed the build on them, BUG-UTF8); when bytes were left out, a line
    /// between head and tail says how many.
    pub fn text(&self) -> String {
        let (front, back) = self.tail.as_slices();
        let left_out = self.left_out();
        if left_out == 0 {
            // Head and tail are contiguous: decoded as one, so a character that spans
            // them stays whole.
            return String::from_utf8_lossy(&[self.head.as_slice(), front, back].concat()).into_owned();
        }
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        text.push_str(&format!("\n[... {left_out} bytes of output left out ...]\n"));
        // The cut may fall inside a character: that one is replaced.
        text.push_str(&String::from_utf8_lossy(&[front, back].concat()));
        text
    }

    /// The text without trailing whitespace. When the output ends in whitespace that
    /// reaches back into the head, only the head is needed and the result is exact
    /// however much was printed; otherwise it is [`text`](Self::text), trimmed.
    pub fn text_trim_end(&self) -> String {
        if self.left_out() > 0 && self.content_end <= self.head.len() as u64 {
            let content = &self.head[..self.content_end as usize];
            return String::from_utf8_lossy(content).trim_end().to_string();
        }
        self.text().trim_end().to_string()
    }
}

/// Splits a stream into lines (without their line end), each byte looked at once: a
/// line cut between two reads is carried over, and only the newly read bytes are
/// searched for its end.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
    /// Bytes searched for a line end so far (each byte once; see the tests).
    scanned: u64,
}

impl LineSplitter {
    pub fn new() -> LineSplitter {
        LineSplitter::default()
    }

    /// Hands each line that `chunk` completes to `on_line`.
    pub fn feed(&mut self, mut chunk: &[u8], on_line: &mut impl FnMut(&[u8])) {
        self.scanned += chunk.len() as u64;
        while let Some(pos) = chunk.iter().position(|b| *b == b'\n') {
            if self.partial.is_empty() {
                on_line(&chunk[..pos]);
            } else {
                self.partial.extend_from_slice(&chunk[..pos]);
                on_line(&self.partial);
                self.partial.clear();
                // A very long line's buffer is not kept for the short ones after it.
                self.partial.shrink_to(8192);
            }
            chunk = &chunk[pos + 1..];
        }
        self.partial.extend_from_slice(chunk);
    }

    /// Hands over the last line when the stream did not end with a line end.
    pub fn finish(mut self, on_line: &mut impl FnMut(&[u8])) {
        if !self.partial.is_empty() {
            on_line(&self.partial);
            self.partial.clear();
        }
    }

    #[cfg(test)]
    fn scanned(&self) -> u64 {
        self.scanned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> (Vec<Vec<u8>>, u64) {
        let mut lines = Vec::new();
        let mut splitter = LineSplitter::new();
        let mut on_line = |l: &[u8]| lines.push(l.to_vec());
        for chunk in chunks {
            splitter.feed(chunk, &mut on_line);
        }
        let scanned = splitter.scanned();
        splitter.finish(&mut on_line);
        (lines, scanned)
    }

    #[test]
    fn lines_across_chunks() {
        let (lines, _) = split(&[b"a\nb", b"c", b"\n\nd"]);
        assert_eq!(lines, [b"a".to_vec(), b"bc".to_vec(), b"".to_vec(), b"d".to_vec()]);
        let (lines, _) = split(&[b"x\n"]);
        assert_eq!(lines, [b"x".to_vec()]);
        assert!(split(&[]).0.is_empty());
    }

    #[test]
    fn a_line_without_end_is_scanned_once() {
        // 6400 reads of 8 KiB without a newline: the old splitter searched the whole
        // carried-over line again after each read (some 170 GB for these 50 MB).
        let chunk = vec![b'x'; 8192];
        let mut splitter = LineSplitter::new();
        let mut count = 0;
        for _ in 0..6400 {
            splitter.feed(&chunk, &mut |_| count += 1);
        }
        assert_eq!(splitter.scanned(), 6400 * 8192);
        let mut len = 0;
        splitter.finish(&mut |l| {
            count += 1;
            len = l.len();
        });
        assert_eq!((count, len), (1, 6400 * 8192));
    }

    #[test]
    fn short_output_is_kept_whole() {
        let mut kept = KeptOutput::new();
        kept.push(b"caf\xc3");
        kept.push(b"\xa9 \xff\n");
        assert_eq!(kept.whole().unwrap(), b"caf\xc3\xa9 \xff\n");
        assert_eq!(kept.text(), "café \u{fffd}\n");
        assert_eq!(kept.text_trim_end(), "café \u{fffd}");
        assert_eq!((kept.total_len(), kept.left_out()), (8, 0));
        // Longer than the head but not than head and tail: still whole, decoded as one
        // even where a character spans the two.
        let mut text = "a".repeat(KEEP - 1);
        text.push('é');
        text.push_str("end");
        let kept = KeptOutput::from_bytes(text.as_bytes());
        assert_eq!(kept.whole().unwrap(), text.as_bytes());
        assert_eq!(kept.text(), text);
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let mut kept = KeptOutput::new();
        kept.push(b"start ");
        // In pieces of every size, smaller and larger than what is kept.
        for size in [1, 100, KEEP - 1, KEEP, KEEP + 1, 3 * KEEP] {
            kept.push(&vec![b'm'; size]);
        }
        kept.push(b" end");
        let total = 6 + (1 + 100 + KEEP - 1 + KEEP + KEEP + 1 + 3 * KEEP) as u64 + 4;
        assert_eq!(kept.total_len(), total);
        assert_eq!(kept.left_out(), total - 2 * KEEP as u64);
        assert!(kept.whole().is_none());
        let text = kept.text();
        let marker = format!("\n[... {} bytes of output left out ...]\n", total - 2 * KEEP as u64);
        assert_eq!(text.len(), 2 * KEEP + marker.len());
        assert!(text.starts_with("start mmm"));
        assert!(text.ends_with("mmm end"));
        assert_eq!(&text[KEEP..KEEP + marker.len()], marker);
    }

    #[test]
    fn trailing_whitespace_is_trimmed_even_when_left_out() {
        // `ok` then more blanks than are kept: the trimmed text is `ok`, as if whole.
        let mut kept = KeptOutput::from_bytes(b"ok");
        for _ in 0..10 {
            kept.push(&vec![b' '; KEEP]);
            kept.push(b"\n\t\r");
        }
        assert!(kept.left_out() > 0);
        assert_eq!(kept.text_trim_end(), "ok");
        // Content in the tail keeps the tail.
        kept.push(b"last");
        assert!(kept.text_trim_end().ends_with("  \n\t\rlast"));
        assert!(kept.text_trim_end().starts_with("ok  "));
    }
}
