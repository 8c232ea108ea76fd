//! What one run of [`crate::Template::metadata_for_checks`] decided about unknowns, so
//! that the conditions it evaluates agree with one another as real values would.
//!
//! Each comparison an unknown leaves open is a question; the run takes the answers of its
//! branch (`forced`) and answers true to new ones. A parameter compared with a text or
//! with another parameter is reasoned about: parameters found equal form a group with one
//! value (if decided), the texts it was found different from, and the groups it was found
//! different from; a group's value must be admitted by every member's type and
//! AllowedValues. Other comparisons (of values made by functions over unknowns) are each
//! answered once per run, on their own.

use std::cell::RefCell;
use std::collections::HashMap;

/// The values an unknown parameter may have: any text, any number, or one of a list.
#[derive(Debug, Clone, Copy)]
pub struct Domain<'a> {
    pub number: bool,
    pub allowed: Option<&'a [String]>,
}

impl Domain<'_> {
    fn admits(&self, text: &str) -> bool {
        (!self.number || text.trim().parse::<f64>().is_ok_and(f64::is_finite))
            && self.allowed.is_none_or(|allowed| allowed.iter().any(|a| a == text))
    }
}

/// Parameters decided equal to one another.
#[derive(Debug, Default)]
struct Group {
    members: Vec<String>,
    value: Option<String>,
    excluded: Vec<String>,
}

#[derive(Debug, Default)]
struct Groups {
    list: Vec<Group>,
    of: HashMap<String, usize>,
    /// Pairs of groups decided different.
    apart: Vec<(usize, usize)>,
}

impl Groups {
    fn of(&mut self, name: &str) -> usize {
        if let Some(group) = self.of.get(name) {
            return *group;
        }
        self.list.push(Group { members: vec![name.to_string()], ..Group::default() });
        self.of.insert(name.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }

    fn apart(&self, a: usize, b: usize) -> bool {
        self.apart.iter().any(|&(x, y)| (x, y) == (a, b) || (x, y) == (b, a))
    }

    /// Whether group `g` may have the value `text`.
    fn admits<'d>(&self, g: usize, text: &str, domain: &dyn Fn(&str) -> Domain<'d>) -> bool {
        let group = &self.list[g];
        group.value.as_deref().is_none_or(|v| v == text)
            && !group.excluded.iter().any(|e| e == text)
            && group.members.iter().all(|m| domain(m).admits(text))
            && !self.apart.iter().any(|&(x, y)| {
                let other = if x == g {
                    y
                } else if y == g {
                    x
                } else {
                    return false;
                };
                self.list[other].value.as_deref() == Some(text)
            })
    }

    /// The values group `g` may have, when its members' AllowedValues limit them.
    fn candidates<'d>(&self, g: usize, domain: &dyn Fn(&str) -> Domain<'d>) -> Option<Vec<String>> {
        let allowed = self.list[g].members.iter().find_map(|m| domain(m).allowed)?;
        Some(allowed.iter().filter(|a| self.admits(g, a, domain)).cloned().collect())
    }

    fn merge(&mut self, into: usize, from: usize) {
        let moved = std::mem::take(&mut self.list[from]);
        for member in &moved.members {
            self.of.insert(member.clone(), into);
        }
        let group = &mut self.list[into];
        group.members.extend(moved.members);
        group.excluded.extend(moved.excluded);
        for pair in &mut self.apart {
            for end in [&mut pair.0, &mut pair.1] {
                if *end == from {
                    *end = into;
                }
            }
        }
    }
}

#[derive(Debug, Default)]
pub struct Decisions {
    /// The answers to the first questions (the branch this run walks); later ones are true.
    forced: Vec<bool>,
    /// Every answer given, in the order asked.
    pub taken: RefCell<Vec<bool>>,
    groups: RefCell<Groups>,
    /// Other comparisons, each answered once.
    answered: RefCell<HashMap<(String, String), bool>>,
}

impl Decisions {
    /// A run that replays the answers `forced`.
    pub fn replaying(forced: Vec<bool>) -> Decisions {
        Decisions { forced, ..Decisions::default() }
    }

    /// The answer to the next question.
    fn decide(&self) -> bool {
        let mut taken = self.taken.borrow_mut();
        let answer = self.forced.get(taken.len()).copied().unwrap_or(true);
        taken.push(answer);
        answer
    }

    /// Whether two values made over unknowns are equal (`a` and `b` as JSON text).
    pub fn answer(&self, a: String, b: String) -> bool {
        let key = if a <= b { (a, b) } else { (b, a) };
        if let Some(answer) = self.answered.borrow().get(&key) {
            return *answer;
        }
        let answer = self.decide();
        self.answered.borrow_mut().insert(key, answer);
        answer
    }

    /// Whether the unknown parameter `name` equals `text`.
    pub fn parameter_equals<'d>(&self, name: &str, text: &str, domain: &dyn Fn(&str) -> Domain<'d>) -> bool {
        let mut groups = self.groups.borrow_mut();
        let g = groups.of(name);
        if let Some(value) = &groups.list[g].value {
            return value == text;
        }
        if !groups.admits(g, text, domain) {
            return false;
        }
        // The only value left.
        let answer = groups.candidates(g, domain).is_some_and(|c| c.len() == 1) || self.decide();
        if answer {
            groups.list[g].value = Some(text.to_string());
        } else {
            groups.list[g].excluded.push(text.to_string());
        }
        answer
    }

    /// Whether the unknown parameters `p` and `q` are equal.
    pub fn parameters_equal<'d>(&self, p: &str, q: &str, domain: &dyn Fn(&str) -> Domain<'d>) -> bool {
        let (gp, gq, values) = {
            let mut groups = self.groups.borrow_mut();
            let (gp, gq) = (groups.of(p), groups.of(q));
            (gp, gq, (groups.list[gp].value.clone(), groups.list[gq].value.clone()))
        };
        match values {
            _ if gp == gq => return true,
            (Some(a), Some(b)) => return a == b,
            (Some(a), None) => return self.parameter_equals(q, &a, domain),
            (None, Some(b)) => return self.parameter_equals(p, &b, domain),
            (None, None) => {}
        }
        let mut groups = self.groups.borrow_mut();
        if groups.apart(gp, gq) {
            return false;
        }
        // A value both may have: one of the AllowedValues of either, when there are some;
        // otherwise any text (a number is a text too).
        let common = match (groups.candidates(gp, domain), groups.candidates(gq, domain)) {
            (Some(values), _) => values.iter().any(|v| groups.admits(gq, v, domain)),
            (None, Some(values)) => values.iter().any(|v| groups.admits(gp, v, domain)),
            (None, None) => true,
        };
        if !common {
            return false;
        }
        let answer = self.decide();
        if answer {
            groups.merge(gp, gq);
        } else {
            groups.apart.push((gp, gq));
        }
        answer
    }
}
