//! Property-based fuzzing of the INI reader of `cfn-hup.conf` and `hooks.d` (issue 13,
//! "Fuzzing"; HUP-CONF-02): any text reads or fails with an error naming the file, never a
//! panic; a well-formed file written from generated sections gives back its sections,
//! keys and values (multi-line values, `%%`, separators and `|`, `\` and `\r` included).
//! [`interpolation`]: `%(name)s` references expand within their bounds; [`command_message`]:
//! what arrives on the command listener's queue.
//!
//! Plain `cargo test` runs a bounded number of cases; `cargo xtask fuzz` many more
//! through `PROPTEST_CASES`. Failing inputs are kept under `proptest-regressions/`.

mod command_message;
mod interpolation;

use cfn_hooks::ini::{Ini, IniError};
use proptest::prelude::*;

/// `ci_cases` cases per property, or `PROPTEST_CASES` when it is set.
pub fn config(ci_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = ci_cases;
    }
    config
}

/// Lines that INI files are made of, odd ones included.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => "\\[[ -~]{0,8}\\][ -~]{0,4}",
        4 => "[ \t]{0,2}[a-zA-Z_%|\\\\]{0,6}[ \t]{0,2}[=:]{0,2}[ -~]{0,12}",
        1 => "[#;][ -~]{0,10}",
        1 => "[ \t]{1,3}[ -~]{0,10}",
        1 => "\\PC{0,12}",
        1 => prop::sample::select(vec![
            "", "\r", "%(a)s", "%(x)s%(x)s", "a=%(a)s", "[DEFAULT]", "[]", "\\", "=v", "rem x=1",
        ])
        .prop_map(String::from),
    ]
}

/// A key as cfn-hup files write them: no separator, nothing a line may start with to mean
/// something else, no white space at the ends.
fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_.|\\\\-]{0,8}"
}

/// One non-empty line of a value: printable text with `%`, `=`, `:`, `#`, `;`, `|`, `\`
/// and `\r` inside, no white space at the ends, not starting with a comment character.
fn text_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[^\\s#;\\[\\p{Cc}]",
        "[^\\s#;\\[\\p{Cc}][^\\n\\p{Cc}]{0,14}[^\\s\\p{Cc}]",
        "[a-z]{1,3}[\\r%|\\\\=:#;][a-z]{1,3}",
    ]
}

/// A value: a first line (maybe empty, never `""`, which stands for the empty string)
/// and continuation lines.
fn value() -> impl Strategy<Value = Vec<String>> {
    let first = prop_oneof![1 => Just(String::new()), 3 => text_line().prop_filter("`\"\"` is the empty string", |v| v != "\"\"")];
    (first, prop::collection::vec(text_line(), 0..3)).prop_map(|(first, rest)| [vec![first], rest].concat())
}

/// A section name: anything but `]` and line ends, not `DEFAULT`.
fn section_name() -> impl Strategy<Value = String> {
    "[^\\]\\s\\p{Cc}][^\\]\\n\\r\\p{Cc}]{0,10}".prop_filter("not DEFAULT", |n| n != "DEFAULT")
}

type Sections = Vec<(String, Vec<(String, Vec<String>)>)>;

/// The file text: `%` written `%%`, keys in any case, `=` or `:` with spaces around,
/// continuation lines indented; comments and blank lines between entries.
fn write(sections: &Sections, separators: &[(bool, usize)]) -> String {
    let mut text = String::from("# written by the fuzz test\n\n");
    let mut choice = separators.iter().cycle();
    for (name, entries) in sections {
        text.push_str(&format!("[{name}]\n"));
        for (key, lines) in entries {
            let &(colon, spaces) = choice.next().unwrap();
            let key = if spaces % 2 == 0 { key.to_uppercase() } else { key.clone() };
            let pad = " ".repeat(spaces);
            let escape = |l: &String| l.replace('%', "%%");
            text.push_str(&format!("{key}{pad}{}{pad}{}\n", if colon { ':' } else { '=' }, escape(&lines[0])));
            for line in &lines[1..] {
                text.push_str(&format!("{}{}\n", if spaces % 2 == 0 { "\t" } else { "    " }, escape(line)));
            }
            if spaces == 3 {
                text.push_str("; a comment\n\n");
            }
        }
    }
    text
}

/// The reader itself: any text, and well-formed files round trip.
mod ini {
    use super::*;

    proptest! {
        #![proptest_config(config(1024))]

        /// Any text reads or fails with ConfigParser's error naming the file; what reads can
        /// be queried for any name.
        #[test]
        fn any_text_reads_or_fails_naming_the_file(
            lines in prop::collection::vec(line(), 0..12),
            crlf in any::<bool>(),
            names in prop::collection::vec("[ -~]{0,6}", 0..4),
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            let mut ini = Ini::new();
            match ini.read_str(&text, "/etc/cfn/hooks.d/fuzz.conf") {
                Ok(()) => {
                    for section in ini.sections().iter().chain(&names) {
                        for name in &names {
                            match ini.get(section, name) {
                                Ok(_) => {}
                                Err(IniError::Interpolation { .. }) => {}
                                Err(e) => prop_assert!(false, "get gave {e}"),
                            }
                        }
                    }
                }
                Err(e) => prop_assert!(e.to_string().contains("/etc/cfn/hooks.d/fuzz.conf"), "{}", e),
            }
        }

        /// A well-formed file gives back its sections (first appearance order, repeated ones
        /// merged) and every key's last value, lines joined with `\n`, `%%` read as `%`.
        #[test]
        fn well_formed_files_round_trip(
            sections in prop::collection::vec((section_name(), prop::collection::vec((key(), value()), 0..5)), 1..5),
            separators in prop::collection::vec((any::<bool>(), 0usize..4), 1..8),
        ) {
            let text = write(&sections, &separators);
            let mut ini = Ini::new();
            ini.read_str(&text, "hooks.conf").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            let mut names: Vec<String> = Vec::new();
            for (name, _) in &sections {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
            prop_assert_eq!(ini.sections(), names, "{}", text);
            for (name, _) in &sections {
                // The last value of each key (keys are case-insensitive) across every
                // appearance of the section.
                let mut expected: Vec<(String, String)> = Vec::new();
                for (_, entries) in sections.iter().filter(|(n, _)| n == name) {
                    for (key, lines) in entries {
                        let key = key.to_lowercase();
                        expected.retain(|(k, _)| *k != key);
                        expected.push((key, lines.join("\n")));
                    }
                }
                for (key, value) in expected {
                    let got = ini.get(name, &key.to_uppercase()).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(got, Some(value), "[{}] {} in\n{}", name, key, text);
                }
            }
        }
    }
}
