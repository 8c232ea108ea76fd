//! The lifecycle part of `status` (issue 32): the lifecycle hooks of cfn-hup's
//! configuration (read by cfn-hup's own reader), and from cfn-hup's record
//! (`lifecycle.json`, read as a regular file of bounded size) the group and Auto Scaling
//! hook names it found and where from, and the last event with its result. Nothing is
//! asked of AWS or of the instance metadata.

use cfn_hooks::lifecycle::record::{self, Last, Record, Transition};
use cfn_hooks::lifecycle::{LifecycleHook, Trigger};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// What `status` shows of the lifecycle hooks; `None` when none is configured and
/// cfn-hup recorded none.
pub struct Lifecycle {
    pub hooks: Vec<LifecycleHook>,
    pub record: Option<Record>,
    /// Why the record could not be read.
    pub record_error: Option<String>,
}

impl Lifecycle {
    /// The hooks of the hook files in `conf_dir`, and the record at `record_path`.
    pub fn read(conf_dir: &Path, record_path: &Path) -> Option<Lifecycle> {
        let hooks = cfn_hooks::config::load_hooks(conf_dir).map(|h| h.lifecycle).unwrap_or_default();
        let (record, record_error) = match Record::read(record_path) {
            Ok(record) => (record, None),
            Err(e) => (None, Some(e)),
        };
        let recorded = record.as_ref().is_some_and(|r| !r.transitions.is_empty() || !r.notices.is_empty());
        (!hooks.is_empty() || recorded || record_error.is_some()).then_some(Lifecycle { hooks, record, record_error })
    }

    /// The newest transition that found its group.
    fn found(&self) -> Option<&Transition> {
        let record = self.record.as_ref()?;
        record
            .transitions
            .values()
            .filter(|t| !t.group.is_empty())
            .max_by(|a, b| a.handling.first_seen.cmp(&b.handling.first_seen))
    }

    fn last(&self) -> Option<Last<'_>> {
        self.record.as_ref()?.last()
    }

    pub fn to_json(&self) -> Value {
        let hooks: Vec<Value> = self
            .hooks
            .iter()
            .map(|h| {
                json!({
                    "section": h.name,
                    "triggers": h.triggers.iter().map(|t| t.name()).collect::<Vec<_>>(),
                    "action": h.action,
                    "runas": h.runas,
                    "timeout": h.timeout.map(|t| t.as_secs()),
                    "on_failure": on_failure(h),
                    "lifecycle_hook": h.lifecycle_hook,
                    "autoscaling_group": h.autoscaling_group,
                })
            })
            .collect();
        let found = self.found().map(|t| {
            json!({
                "group": t.group,
                "group_from": t.group_from,
                "lifecycle_hooks": t.hooks,
                "lifecycle_hooks_from": t.hooks_from,
            })
        });
        let last = self.last().map(|last| match last {
            Last::Transition(t) => json!({"kind": "transition", "transition": t, "result": result(t)}),
            Last::Notice(n) => json!({"kind": "notice", "notice": n}),
        });
        json!({
            "hooks": hooks,
            "found": found,
            "last": last,
            "record_error": self.record_error,
        })
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "lifecycle hooks: {} configured", self.hooks.len());
        for h in &self.hooks {
            let triggers: Vec<&str> = h.triggers.iter().map(|t| t.name()).collect();
            let mut keys = vec![format!("action {}", h.action)];
            if let Some(user) = &h.runas {
                keys.push(format!("runas {user}"));
            }
            keys.push(match h.timeout {
                Some(t) => format!("timeout {} s", t.as_secs()),
                None => "no timeout".to_string(),
            });
            if let Some(result) = on_failure(h) {
                keys.push(format!("on-failure {result}"));
            }
            if let Some(name) = &h.lifecycle_hook {
                keys.push(format!("lifecycle-hook {name} (pinned)"));
            }
            if let Some(name) = &h.autoscaling_group {
                keys.push(format!("autoscaling-group {name} (pinned)"));
            }
            let _ = writeln!(out, "  [{}] {}: {}", h.name, triggers.join(","), keys.join(", "));
        }
        if let Some(error) = &self.record_error {
            let _ = writeln!(out, "lifecycle: {error}");
        }
        if let Some(t) = self.found() {
            let from = |from: &Option<String>| from.as_deref().map(|f| format!(" (from {f})")).unwrap_or_default();
            let hooks = if t.hooks.is_empty() { "none".to_string() } else { t.hooks.join(", ") };
            let _ = writeln!(
                out,
                "lifecycle: group {}{}; lifecycle hooks {hooks}{}",
                t.group,
                from(&t.group_from),
                from(&t.hooks_from)
            );
        }
        match self.last() {
            None if self.record_error.is_none() => {
                let _ = writeln!(out, "lifecycle: no event handled yet");
            }
            None => {}
            Some(last) => {
                let handling = last.handling();
                let state = if handling.done { "done" } else { "under way" };
                let of = match last {
                    Last::Transition(t) => format!(" of {}", t.instance),
                    Last::Notice(_) => String::new(),
                };
                let _ = writeln!(
                    out,
                    "lifecycle: last event {}{of}, seen {}: {state}",
                    handling.trigger, handling.first_seen
                );
                for (section, run) in &handling.actions {
                    let how = match (run.finished.as_deref(), run.code) {
                        (Some(_), Some(-1)) => "could not run (or was killed at its time limit)".to_string(),
                        (Some(at), Some(code)) => format!("exit {code} at {at}"),
                        _ => format!("running since {}", run.started),
                    };
                    let _ = writeln!(out, "  action [{section}]: {how}");
                }
                if let Last::Transition(t) = last {
                    let _ = writeln!(out, "  heartbeats: {}", t.heartbeats);
                    if let Some(deadline) = &t.deadline {
                        let _ = writeln!(out, "  deadline: {deadline}");
                    }
                    if let Some(error) = &t.last_error {
                        let _ = writeln!(out, "  last failed call: {error}");
                    }
                    for hook in &t.hooks {
                        let completed = t.completed.get(hook).map_or("not completed yet", String::as_str);
                        let _ = writeln!(out, "  lifecycle hook {hook}: {completed}");
                    }
                    if t.hooks.is_empty() && handling.done {
                        let _ = writeln!(
                            out,
                            "  nothing to complete (the instance was past the wait state, or the group has no hook of the transition)"
                        );
                    }
                }
            }
        }
        out
    }
}

/// The result a failed action sends, for a hook with Auto Scaling triggers.
fn on_failure(hook: &LifecycleHook) -> Option<String> {
    let asg: Vec<Trigger> = hook.triggers.iter().copied().filter(|t| t.is_asg()).collect();
    let word = |t: Trigger| hook.on_failure_for(t).as_str().to_ascii_lowercase();
    match asg.as_slice() {
        [] => None,
        [one] => Some(word(*one)),
        // Both, with no on-failure=: each has its default.
        _ if hook.on_failure.is_none() => {
            Some(asg.iter().map(|t| format!("{} ({})", word(*t), t.name())).collect::<Vec<_>>().join(", "))
        }
        [first, ..] => Some(word(*first)),
    }
}

/// The results sent, by hook, with `null` for one not sent yet.
fn result(t: &Transition) -> Value {
    t.hooks.iter().map(|h| (h.clone(), t.completed.get(h).map_or(Value::Null, |r| json!(r)))).collect()
}

/// `<lib>/cfn-hup/data/lifecycle.json`.
pub fn record_path() -> std::path::PathBuf {
    record::default_path()
}
