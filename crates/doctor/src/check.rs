//! One line of doctor's checklist: what was checked, the verdict, what was found and,
//! for anything not ok, what to do.

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    /// Not checked: `found` says why (nothing configured to check, an earlier check failed).
    Skipped,
    Warning,
    Failed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Skipped => "skipped",
            Verdict::Warning => "warning",
            Verdict::Failed => "failed",
        }
    }
}

/// A check's outcome. `id` is stable (scripts match on it): `area.what`, lower case,
/// with the subject after a colon when a check repeats (`hook.path:restart-app`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub id: String,
    pub verdict: Verdict,
    /// One line: what was found.
    pub found: String,
    /// One line: what to do (none when ok).
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(id: impl Into<String>, found: impl Into<String>) -> Check {
        Check { id: id.into(), verdict: Verdict::Ok, found: found.into(), fix: None }
    }

    pub fn skipped(id: impl Into<String>, why: impl Into<String>) -> Check {
        Check { id: id.into(), verdict: Verdict::Skipped, found: why.into(), fix: None }
    }

    pub fn warning(id: impl Into<String>, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { id: id.into(), verdict: Verdict::Warning, found: found.into(), fix: Some(fix.into()) }
    }

    pub fn failed(id: impl Into<String>, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { id: id.into(), verdict: Verdict::Failed, found: found.into(), fix: Some(fix.into()) }
    }

    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "verdict": self.verdict.as_str(), "found": self.found, "fix": self.fix})
    }
}

/// Exit 1 when any check failed, 2 when the worst is a warning, 0 otherwise (skipped
/// checks are not judged).
pub fn exit_code(checks: &[Check]) -> u8 {
    match checks.iter().map(|c| c.verdict).max() {
        Some(Verdict::Failed) => 1,
        Some(Verdict::Warning) => 2,
        _ => 0,
    }
}

/// The text checklist: a line per check, the fix indented under it, and a count.
pub fn as_text(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for check in checks {
        out.push_str(&format!("{:<7} {:<width$}  {}\n", check.verdict.as_str(), check.id, check.found));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("{:<7} {:<width$}  fix: {fix}\n", "", ""));
        }
    }
    let count = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count();
    out.push_str(&format!(
        "{} ok, {} warning(s), {} failed, {} skipped\n",
        count(Verdict::Ok),
        count(Verdict::Warning),
        count(Verdict::Failed),
        count(Verdict::Skipped)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_code_is_the_worst_verdict() {
        let ok = Check::ok("a", "fine");
        let skipped = Check::skipped("b", "nothing to check");
        let warning = Check::warning("c", "odd", "look");
        let failed = Check::failed("d", "broken", "mend");
        assert_eq!(exit_code(&[ok.clone(), skipped.clone()]), 0);
        assert_eq!(exit_code(&[ok.clone(), warning.clone()]), 2);
        assert_eq!(exit_code(&[warning, failed, ok]), 1);
        assert_eq!(exit_code(&[]), 0);
    }

    #[test]
    fn the_text_puts_the_fix_under_its_check() {
        let text = as_text(&[Check::ok("install.version", "0.1.0"), Check::failed("clock", "10 min off", "sync")]);
        assert_eq!(
            text,
            "ok      install.version  0.1.0\nfailed  clock            10 min off\n                         fix: sync\n\
             1 ok, 0 warning(s), 1 failed, 0 skipped\n"
        );
    }
}
