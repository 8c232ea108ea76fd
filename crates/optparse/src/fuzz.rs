//! Property-based fuzzing of the optparse layer (issue 13, "Fuzzing"; CLI-COMMON-02..04)
//! with every tool's real option table: any argv gives options, help, or optparse's
//! error (usage, a blank line, `<prog>: error: <message>`: exit status 2), never a panic;
//! a valid argv, in any of the forms optparse accepts, gives back what it says.
//!
//! Plain `cargo test` runs a bounded number of cases; `cargo xtask fuzz` many more
//! through `PROPTEST_CASES`. Failing inputs are kept under `proptest-regressions/`.

use super::*;
use proptest::prelude::*;
use proptest::sample::Index;

/// `ci_cases` cases per property, or `PROPTEST_CASES` when it is set.
fn config(ci_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = ci_cases;
    }
    config
}

/// A tool's name.
fn tool() -> impl Strategy<Value = &'static str> {
    prop::sample::select(crate::tables::TOOLS.iter().map(|t| t.name).collect::<Vec<_>>())
}

/// The option table of the tool `name`.
fn parser(name: &str) -> Parser {
    crate::tables::of(name).expect("a tool")
}

/// Arguments made of the tools' option names, prefixes of them, values and noise.
fn argument() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "-s", "-r", "-v", "-e", "-c", "-k", "-u", "-i", "-d", "-h", "-", "--", "--stack", "--sta", "--s", "--re",
            "--region", "--resource", "--url", "--exit-code", "--exit-code=0x1f", "--success=true", "--success",
            "-sfalse", "--verbose=1", "--configsets", "--config", "--no-daemon", "--http-proxy", "--https-proxy",
            "--credential-file",
            "--role", "--access-key", "--secret-key", "--=x", "--help", "-vv", "-e", "08", "0b", " 12 ", "-0x5", "--id",
        ]).prop_map(String::from),
        2 => "-{0,2}[a-z][a-z-]{0,10}(=[ -~]{0,6})?",
        2 => "[ -~]{0,10}",
        1 => "\\PC{0,8}",
    ]
}

/// An integer and a way optparse accepts to write it.
fn integer() -> impl Strategy<Value = (i64, String)> {
    (-1_000_000_000_000i64..1_000_000_000_000, 0..7u8).prop_map(|(n, style)| {
        let text = match style {
            1 if n >= 0 => format!("+{n}"),
            2 => format!(" {n}\t"),
            3 if n >= 0 => format!("0x{n:x}"),
            4 if n >= 0 => format!("0X{n:X}"),
            5 if n > 0 => format!("0{n:o}"),
            6 if n >= 0 => format!("0b{n:b}"),
            _ => n.to_string(),
        };
        (n, text)
    })
}

proptest! {
    #![proptest_config(config(1024))]

    /// Any argv: options, help or optparse's error text, never a panic.
    #[test]
    fn any_argv_gives_options_help_or_an_error(name in tool(), args in prop::collection::vec(argument(), 0..8)) {
        let parser = parser(name);
        match parser.parse(&args) {
            Outcome::Run(parsed) => {
                // Only arguments given come back as positionals.
                prop_assert!(parsed.positionals.iter().all(|p| args.contains(p)));
            }
            Outcome::Help(text) => prop_assert!(text.starts_with(&parser.usage_text())),
            Outcome::Error(text) => {
                let prefix = format!("{}\n{name}: error: ", parser.usage_text());
                prop_assert!(text.starts_with(&prefix), "{:?}", text);
                prop_assert!(text.ends_with('\n') && text.len() > prefix.len() + 1, "{:?}", text);
            }
        }
    }

    /// A valid argv, written with any of optparse's forms (`--long value`, `--long=value`,
    /// an unambiguous prefix, `-x value`, `-xvalue`, flags bundled, positionals anywhere,
    /// `--` before the rest), gives back every value, integer, choice, flag and positional.
    #[test]
    fn valid_argv_round_trips(
        name in tool(),
        // Which option, in which form, with which text, integer or choice.
        picks in prop::collection::vec((any::<Index>(), 0..4u8, "[ -~]{0,10}", integer(), any::<Index>()), 0..6),
        positionals in prop::collection::vec("[a-zA-Z0-9:/._][ -~]{0,10}", 0..3),
        dashed in prop::collection::vec("[ -~]{0,6}", 0..2),
    ) {
        let parser = parser(name);
        let options: Vec<&Opt> = parser.all_options().collect();
        let longs: Vec<&str> = options.iter().map(|o| o.long).chain(["help"]).collect();
        let mut args: Vec<String> = Vec::new();
        let mut expected: Vec<(&Opt, Value)> = Vec::new();
        for (which, form, text, (n, int_text), choice) in picks {
            let option = options[which.index(options.len())];
            if expected.iter().any(|(o, _)| o.dest == option.dest) {
                continue;
            }
            let (value, written) = match option.kind {
                Kind::Flag => (Value::Flag, String::new()),
                Kind::Value => (Value::Text(text.clone()), text),
                Kind::Int => (Value::Int(n), int_text),
                Kind::Choice(choices) => {
                    let c = choices[choice.index(choices.len())];
                    (Value::Text(c.into()), c.to_string())
                }
            };
            // The shortest prefix no other long option starts with, if there is one.
            let prefix = (1..=option.long.len())
                .map(|l| &option.long[..l])
                .find(|p| longs.iter().filter(|o| o.starts_with(p)).count() == 1 || *p == option.long)
                .unwrap_or(option.long);
            let long = if form % 2 == 0 { option.long } else { prefix };
            match (option.takes_value(), option.short, form) {
                (false, Some(c), 0 | 1) => args.push(format!("-{c}")),
                (false, _, _) => args.push(format!("--{long}")),
                (true, Some(c), 0) => args.extend([format!("-{c}"), written]),
                (true, Some(c), 1) if !written.is_empty() => args.push(format!("-{c}{written}")),
                (true, _, 2) => args.push(format!("--{long}={written}")),
                (true, _, _) => args.extend([format!("--{long}"), written]),
            }
            expected.push((option, value));
            if let Some(p) = positionals.get(expected.len() - 1) {
                args.push(p.clone());
            }
        }
        let mut want_positionals: Vec<String> = positionals.iter().take(expected.len()).cloned().collect();
        if !dashed.is_empty() {
            args.push("--".into());
            args.extend(dashed.iter().cloned());
            want_positionals.extend(dashed.iter().cloned());
        }
        let parsed = match parser.parse(&args) {
            Outcome::Run(parsed) => parsed,
            other => return Err(TestCaseError::fail(format!("{args:?} gave {other:?}"))),
        };
        for (option, value) in expected {
            match value {
                Value::Flag => prop_assert!(parsed.flag(option.dest), "{:?}: --{}", args, option.long),
                Value::Text(t) => prop_assert_eq!(parsed.text(option.dest), Some(t), "{:?}", args),
                Value::Int(n) => prop_assert_eq!(parsed.int(option.dest), Some(n), "{:?}", args),
            }
        }
        prop_assert_eq!(parsed.positionals, want_positionals, "{:?}", args);
    }
}
