//! Text from outside the program (a template, `activity.json`, a hook file, a run
//! record) made safe to print on a terminal: a control character in it could move the
//! cursor, rewrite lines already shown, retitle the window or switch the terminal's
//! character set. Every control but newline and tab (C0 below 0x20, DEL, and the C1
//! controls U+0080..U+009F, which some terminals obey as ESC sequences) is shown escaped,
//! `\x1b` or `\u{9b}`; everything else passes unchanged.
//!
//! The text outputs of `validate`, `status` and `doctor` go through [`shown`] on their way
//! out; the program's own words hold no control besides newline and tab, so sanitising the
//! whole output changes only what came from data. JSON and SARIF are left to their
//! encoder: it escapes the controls below 0x20, and a tool reading them wants the data
//! as it is.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Whether `c` is a control a terminal may act on (newline and tab are kept: they lay
/// the text out).
fn is_unsafe(c: char) -> bool {
    (c < ' ' && c != '\n' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c)
}

/// `text` with each unsafe control escaped; borrowed when there is none.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !is_unsafe(c) => out.push(c),
            c if c < '\u{80}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Writes `text` to `out` as [`shown`] makes it.
pub fn write(out: &mut impl Write, text: &str) -> io::Result<()> {
    out.write_all(shown(text).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn controls_are_escaped_and_layout_kept() {
        assert_eq!(shown("a\x1b[2Jb\r\n\tc\x7f\u{9b}31m\u{85}"), "a\\x1b[2Jb\\x0d\n\tc\\x7f\\u{9b}31m\\u{85}");
        assert!(matches!(shown("plain text, é ü 日本\n\tok"), Cow::Borrowed(_)));
        // Just past the C1 range: a printable character.
        assert_eq!(shown("\u{a0}x"), "\u{a0}x");
    }

    /// Strings biased towards controls, escapes and multi-byte characters.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            any::<char>().prop_map(String::from),
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('?').to_string()),
            (0x7fu32..0xa0).prop_map(|c| char::from_u32(c).unwrap_or('?').to_string()),
            Just("\x1b]0;title\x07".to_string()),
            Just("\\x1b".to_string()),
            "[ -~]{0,8}",
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        /// Whatever the input, no byte a terminal acts on comes out: none below 0x20 but
        /// newline and tab, no DEL, no C1 control; and the input's other characters are
        /// all there in order.
        #[test]
        fn nothing_a_terminal_acts_on_comes_out(text in hostile()) {
            let out = shown(&text);
            for b in out.bytes() {
                prop_assert!(b >= 0x20 || b == b'\n' || b == b'\t', "byte {b:#x} in {out:?}");
                prop_assert!(b != 0x7f, "DEL in {out:?}");
            }
            prop_assert!(!out.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)), "C1 in {out:?}");
            let mut rest = out.chars();
            for c in text.chars().filter(|c| !is_unsafe(*c)) {
                prop_assert!(rest.any(|o| o == c), "{c:?} lost from {out:?}");
            }
        }

        /// Any bytes, read as a terminal-bound text would be (lossily), come out safe.
        #[test]
        fn any_bytes_come_out_safe(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = String::from_utf8_lossy(&bytes);
            for b in shown(&text).bytes() {
                prop_assert!((b >= 0x20 && b != 0x7f) || b == b'\n' || b == b'\t', "byte {b:#x}");
            }
            let c1 = shown(&text).chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c));
            prop_assert!(!c1, "a C1 control in {:?}", shown(&text));
        }

        /// Printable ASCII, newline and tab pass unchanged.
        #[test]
        fn printable_ascii_passes_unchanged(text in "[ -~\n\t]{0,200}") {
            prop_assert_eq!(shown(&text), Cow::Borrowed(text.as_str()));
        }
    }
}
