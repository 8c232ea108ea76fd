//! Terminal controls in the data the tools print (issue 31, F9): a hostile text to plant
//! in a record, a hook file or a template, and the check that none of it reaches a
//! terminal.

/// What an attacker would write into a value: a screen clear, red text, a bell, a
/// backspace, a C1 CSI and a DEL (no `]`, so that it fits in an INI section name).
pub const HOSTILE: &str = "\x1b[2J\x1b[1;31m\x07\x08\u{9b}0m\x7f";

/// `HOSTILE` as the tools show it: each control escaped.
pub const HOSTILE_SHOWN: &str = "\\x1b[2J\\x1b[1;31m\\x07\\x08\\u{9b}0m\\x7f";

/// A cfn-hup activity record (`activity.json`) with `HOSTILE` in every text a reader of
/// it shows: the last pass, the last error, a hook run and a failing hook.
pub fn hostile_activity() -> serde_json::Value {
    let text = |what: &str| format!("{what}{HOSTILE}");
    serde_json::json!({
        "last_pass": {"time": text("2026-01-01T00:00:00.000Z"), "outcome": text("failed"), "actions_run": 1, "actions_failed": 1},
        "last_error": {"time": text("2026-01-01T00:00:00.000Z"), "message": text("boom")},
        "hook_runs": [{"hook": text("ran"), "started": text("t"), "exit_code": null, "error": text("error"), "seconds": 0.5}],
        "failing_hooks": [{
            "hook": text("hook"), "path": text("Resources.R"), "tries": 2, "since": text("since"),
            "last_try": text("last"), "last_error": text("error"), "passes_to_skip": 1, "next_try": text("next"),
            "value_sha256": text("sha"),
        }],
    })
}

/// No control a terminal acts on in `text`: no byte below 0x20 but newline and tab, no
/// DEL, no C1 control.
pub fn assert_no_terminal_controls(text: &str, what: &str) {
    for (at, c) in text.char_indices() {
        let control = (c < ' ' && c != '\n' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c);
        assert!(!control, "{what}: the control {c:?} at byte {at} reaches the terminal:\n{text}");
    }
}
