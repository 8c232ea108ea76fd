//! The bounds that keep reading and resolving a template within time, memory and stack
//! in proportion to its size, whoever wrote it.

use std::cell::Cell;

/// How deep a value may nest, counting every level of the JSON value it becomes (a
/// short-form tag is a level of its own: `!Ref X` is `{"Ref": "X"}`), aliases expanded.
/// Everything that walks a template's values recurses (the resolver, `Clone`, `Drop`,
/// serialising), so this bounds their stack; serde_json stops JSON at 128 too.
pub const MAX_DEPTH: usize = 128;

/// How deep the resolver's own recursion may go: a value's levels, and the conditions an
/// `Fn::If` evaluates, each of which may hold its own levels and name another condition.
pub const MAX_RESOLVE_DEPTH: usize = 2 * MAX_DEPTH;

/// What anchors and aliases may copy while a template is read, and what resolving one
/// resource's Metadata may make, in size units (see [`size`]): this many per byte of the
/// template, at least [`BUDGET_MIN`], at most [`BUDGET_MAX`]. Real templates stay far
/// below; a few hundred bytes of anchors that alias each other ten times, or of
/// `Fn::Base64` or `Fn::Sub` nested in each other, would otherwise make gigabytes.
pub const BUDGET_PER_BYTE: usize = 16;
pub const BUDGET_MIN: usize = 1 << 20;
pub const BUDGET_MAX: usize = 4 << 20;

/// The message for [`MAX_DEPTH`]; `how` says what made the value this deep.
pub fn too_deep(how: &str) -> String {
    format!("values are nested more than {MAX_DEPTH} deep{how} (each collection and short-form tag is a level)")
}

/// The steps flattening the user data and cfn-hup files of one template may take (see
/// [`crate::user_data::Reader`]): this many per byte of the template, at least
/// [`WORK_MIN`], at most [`WORK_MAX`]. A step is a value visited, a byte of template text
/// read or a byte written. AWS's sample templates take 700 to 1,600 steps (a few per
/// byte of the text they write, a fifth of a step per template byte); the floor leaves
/// room for a few texts of [`crate::user_data::MAX_TEXT`] from a small template.
/// `Fn::Sub` variables used many times, nested, and texts that repeat what a variable
/// made would otherwise take time exponential in the template's size.
pub const WORK_PER_BYTE: usize = 32;
pub const WORK_MIN: usize = 4 << 20;
pub const WORK_MAX: usize = 64 << 20;

/// What a [`Budget`] counts and how large it is for a template of some length: `per_byte`
/// units per byte, at least `min`, at most `max`.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub per_byte: usize,
    pub min: usize,
    pub max: usize,
    /// What one unit is, as a message names it.
    pub units: &'static str,
}

/// What anchors and aliases copy and what resolving makes.
pub const SIZE: Rule =
    Rule { per_byte: BUDGET_PER_BYTE, min: BUDGET_MIN, max: BUDGET_MAX, units: "values and characters" };

/// What flattening user data takes.
pub const WORK: Rule = Rule { per_byte: WORK_PER_BYTE, min: WORK_MIN, max: WORK_MAX, units: "steps" };

/// A count of units used, against the limit for a template of some length.
#[derive(Debug)]
pub struct Budget {
    used: Cell<usize>,
    limit: usize,
    template_length: usize,
    rule: Rule,
}

impl Budget {
    /// The budget of [`SIZE`] units.
    pub fn new(template_length: usize) -> Budget {
        Budget::of(SIZE, template_length)
    }

    pub fn of(rule: Rule, template_length: usize) -> Budget {
        let limit = template_length.saturating_mul(rule.per_byte).clamp(rule.min, rule.max);
        Budget { used: Cell::new(0), limit, template_length, rule }
    }

    /// Whether `units` more fit; an error saying what used them (`what`) and the limit
    /// when they do not.
    pub fn fits(&self, units: usize, what: &str) -> Result<(), String> {
        if self.used.get().saturating_add(units) > self.limit {
            let Rule { per_byte, min, max, units } = self.rule;
            return Err(format!(
                "{what} more than {} {units} (the limit for a {}-byte template: \
                 {per_byte} per byte, at least {min}, at most {max})",
                self.limit, self.template_length
            ));
        }
        Ok(())
    }

    /// Counts `units` used, within the limit.
    pub fn charge(&self, units: usize, what: &str) -> Result<(), String> {
        self.fits(units, what)?;
        self.used.set(self.used.get() + units);
        Ok(())
    }

    /// The units used so far.
    pub fn used(&self) -> usize {
        self.used.get()
    }
}

/// A value's size: 1 for the value, plus the length of each string and key, plus 1 for
/// each key; about the bytes of its JSON text, and in proportion to its memory. Walked
/// with a stack of its own, not by recursion.
pub fn size(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    let mut total = 0usize;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        total = total.saturating_add(1);
        match value {
            Value::String(text) => total = total.saturating_add(text.len()),
            Value::Array(items) => pending.extend(items),
            Value::Object(entries) => {
                for (key, item) in entries {
                    total = total.saturating_add(key.len() + 1);
                    pending.push(item);
                }
            }
            _ => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_count_values_keys_and_characters() {
        assert_eq!(size(&json!(null)), 1);
        assert_eq!(size(&json!("abc")), 4);
        assert_eq!(size(&json!({"Ref": "X"})), 1 + 4 + 2);
        assert_eq!(size(&json!([1, [2, "xy"]])), 1 + 1 + 1 + 1 + 3);
    }

    #[test]
    fn the_budget_is_proportional_to_the_template_within_a_floor_and_a_cap() {
        assert_eq!(Budget::new(10).limit, BUDGET_MIN);
        assert_eq!(Budget::new(100_000).limit, 1_600_000);
        assert_eq!(Budget::new(usize::MAX).limit, BUDGET_MAX);
        assert_eq!(Budget::of(WORK, 956).limit, WORK_MIN);
        assert_eq!(Budget::of(WORK, 1 << 20).limit, 32 << 20);
        assert_eq!(Budget::of(WORK, usize::MAX).limit, WORK_MAX);
        let budget = Budget::new(0);
        assert!(budget.charge(BUDGET_MIN, "x").is_ok());
        let message = budget.charge(1, "resolving makes").unwrap_err();
        assert_eq!(
            message,
            "resolving makes more than 1048576 values and characters (the limit for a 0-byte template: \
             16 per byte, at least 1048576, at most 4194304)"
        );
    }
}
