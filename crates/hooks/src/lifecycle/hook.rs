//! The lifecycle triggers of a hook section and the keys only they take (issue 32):
//! `timeout=` (seconds), `on-failure=continue|abandon` (Auto Scaling hooks; the default
//! is `abandon` for a launch, `continue` for a termination), `lifecycle-hook=` and
//! `autoscaling-group=` (names pinned instead of discovered). Such a hook needs no
//! `path=`. A bad value is a configuration error naming the file, section and key.

use crate::ini::Ini;
use std::time::Duration;

/// The longest `timeout=`: Auto Scaling's longest global timeout (48 hours); no
/// lifecycle action can wait longer for its completion.
pub const MAX_TIMEOUT_SECONDS: u64 = 172_800;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Trigger {
    AsgLaunch,
    AsgTerminate,
    SpotInterruption,
    Rebalance,
    Maintenance,
}

impl Trigger {
    pub const ALL: [Trigger; 5] = [
        Trigger::AsgLaunch,
        Trigger::AsgTerminate,
        Trigger::SpotInterruption,
        Trigger::Rebalance,
        Trigger::Maintenance,
    ];

    /// The trigger as hooks.conf names it (and `CFN_LIFECYCLE_EVENT` carries it).
    pub fn name(self) -> &'static str {
        match self {
            Trigger::AsgLaunch => "on.asg.launch",
            Trigger::AsgTerminate => "on.asg.terminate",
            Trigger::SpotInterruption => "on.spot.interruption",
            Trigger::Rebalance => "on.rebalance",
            Trigger::Maintenance => "on.maintenance",
        }
    }

    pub fn parse(text: &str) -> Option<Trigger> {
        Trigger::ALL.into_iter().find(|t| t.name() == text)
    }

    /// Whether an Auto Scaling lifecycle action waits on the hook (and is completed).
    pub fn is_asg(self) -> bool {
        matches!(self, Trigger::AsgLaunch | Trigger::AsgTerminate)
    }

    /// What a failed action answers when the hook sets no `on-failure`: a new instance
    /// that is not ready must not take traffic; an instance going away goes anyway, and
    /// CONTINUE lets the group's other terminate hooks run.
    pub fn default_on_failure(self) -> LifecycleResult {
        match self {
            Trigger::AsgLaunch => LifecycleResult::Abandon,
            _ => LifecycleResult::Continue,
        }
    }
}

/// A lifecycle action's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LifecycleResult {
    Continue,
    Abandon,
}

impl LifecycleResult {
    /// As the Auto Scaling API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            LifecycleResult::Continue => "CONTINUE",
            LifecycleResult::Abandon => "ABANDON",
        }
    }

    /// `continue`/`abandon` in any case.
    pub fn parse(text: &str) -> Option<LifecycleResult> {
        match text.trim().to_ascii_lowercase().as_str() {
            "continue" => Some(LifecycleResult::Continue),
            "abandon" => Some(LifecycleResult::Abandon),
            _ => None,
        }
    }
}

/// A hook section with lifecycle triggers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleHook {
    pub name: String,
    pub triggers: Vec<Trigger>,
    pub action: String,
    pub runas: Option<String>,
    /// The action is killed after this long and counts as failed.
    pub timeout: Option<Duration>,
    pub on_failure: Option<LifecycleResult>,
    /// Complete only this lifecycle hook instead of every one of the transition.
    pub lifecycle_hook: Option<String>,
    /// The group, instead of discovering it.
    pub autoscaling_group: Option<String>,
}

impl LifecycleHook {
    pub fn has_trigger(&self, trigger: Trigger) -> bool {
        self.triggers.contains(&trigger)
    }

    /// The result a failed action gives for `trigger`.
    pub fn on_failure_for(&self, trigger: Trigger) -> LifecycleResult {
        self.on_failure.unwrap_or_else(|| trigger.default_on_failure())
    }
}

/// A bad value of a lifecycle key, with where it was set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid {key} in {file}, section [{section}] ({reason}): {value}")]
pub struct KeyError {
    pub file: String,
    pub section: String,
    pub key: String,
    pub value: String,
    pub reason: String,
}

/// The lifecycle triggers of a `triggers=` list: `Ok(None)` when it names none (an
/// update or command hook), an error when it mixes them with other triggers (the other
/// kinds need a `path=` that a lifecycle hook does not have).
pub fn triggers_of(list: &[String]) -> Result<Option<Vec<Trigger>>, String> {
    let found: Vec<Trigger> = list.iter().filter_map(|t| Trigger::parse(t)).collect();
    if found.is_empty() {
        return Ok(None);
    }
    if let Some(other) = list.iter().find(|t| Trigger::parse(t).is_none()) {
        return Err(format!("{other} cannot be combined with lifecycle triggers"));
    }
    let mut unique = found;
    unique.sort();
    unique.dedup();
    Ok(Some(unique))
}

/// The lifecycle hook of section `name`, whose `triggers` are lifecycle ones; `action`
/// is its action. Keys that only lifecycle hooks take are checked here.
pub fn read(
    ini: &Ini,
    name: &str,
    triggers: Vec<Trigger>,
    action: String,
    runas: Option<String>,
) -> Result<LifecycleHook, crate::ConfigError> {
    let invalid = |key: &str, value: &str, reason: &str| KeyError {
        file: ini.file_of(name, key).unwrap_or_default(),
        section: name.to_string(),
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let asg = triggers.iter().any(|t| t.is_asg());
    let timeout = match ini.get(name, "timeout")? {
        None => None,
        Some(text) => match text.trim().parse::<u64>() {
            Ok(seconds) if (1..=MAX_TIMEOUT_SECONDS).contains(&seconds) => Some(Duration::from_secs(seconds)),
            _ => return Err(invalid("timeout", &text, "must be a whole number of seconds from 1 to 172800").into()),
        },
    };
    let on_failure = match ini.get(name, "on-failure")? {
        None => None,
        Some(text) if !asg => {
            return Err(invalid("on-failure", &text, "only on.asg.launch and on.asg.terminate hooks complete").into());
        }
        Some(text) => match LifecycleResult::parse(&text) {
            Some(result) => Some(result),
            None => return Err(invalid("on-failure", &text, "must be continue or abandon").into()),
        },
    };
    let name_key = |key: &str| -> Result<Option<String>, crate::ConfigError> {
        let Some(text) = ini.get(name, key)? else { return Ok(None) };
        let trimmed = text.trim();
        if !asg {
            return Err(invalid(key, &text, "only on.asg.launch and on.asg.terminate hooks have one").into());
        }
        // Auto Scaling names: 1–255 characters, no control characters.
        if trimmed.is_empty() || trimmed.len() > 255 || trimmed.chars().any(char::is_control) {
            return Err(invalid(key, &text, "must be a name of 1 to 255 characters").into());
        }
        Ok(Some(trimmed.to_string()))
    };
    Ok(LifecycleHook {
        lifecycle_hook: name_key("lifecycle-hook")?,
        autoscaling_group: name_key("autoscaling-group")?,
        name: name.to_string(),
        triggers,
        action,
        runas,
        timeout,
        on_failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_are_named_and_parsed_back() {
        for t in Trigger::ALL {
            assert_eq!(Trigger::parse(t.name()), Some(t));
        }
        assert_eq!(Trigger::parse("on.asg"), None);
        assert_eq!(Trigger::AsgLaunch.default_on_failure(), LifecycleResult::Abandon);
        assert_eq!(Trigger::AsgTerminate.default_on_failure(), LifecycleResult::Continue);
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(triggers_of(&list(&["post.update"])), Ok(None));
        assert_eq!(
            triggers_of(&list(&["on.rebalance", "on.spot.interruption", "on.rebalance"])),
            Ok(Some(vec![Trigger::SpotInterruption, Trigger::Rebalance]))
        );
        assert!(triggers_of(&list(&["on.asg.launch", "post.update"])).is_err());
        assert_eq!(LifecycleResult::parse(" ABANDON "), Some(LifecycleResult::Abandon));
        assert_eq!(LifecycleResult::parse("stop"), None);
    }
}

/// Whatever a hook file says for the lifecycle keys, reading it never panics, and a
/// value is either taken within its bounds or refused naming the file, section and key.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lifecycle_keys_are_taken_within_bounds_or_refused_by_name(
            key in prop::sample::select(vec!["timeout", "on-failure", "lifecycle-hook", "autoscaling-group"]),
            value in "[ -~]{0,40}",
            trigger in prop::sample::select(Trigger::ALL.to_vec()),
        ) {
            let mut ini = Ini::new();
            let text = format!("[h]\ntriggers={}\naction=x\n{key}={value}\n", trigger.name());
            prop_assume!(ini.read_str(&text, "hooks.conf").is_ok());
            match read(&ini, "h", vec![trigger], "x".into(), None) {
                Ok(hook) => {
                    prop_assert!(hook.timeout.is_none_or(|t| (1..=MAX_TIMEOUT_SECONDS).contains(&t.as_secs())));
                    for name in [&hook.lifecycle_hook, &hook.autoscaling_group].into_iter().flatten() {
                        prop_assert!(!name.is_empty() && name.len() <= 255 && !name.chars().any(char::is_control));
                    }
                    prop_assert!(trigger.is_asg() || (hook.on_failure.is_none() && hook.lifecycle_hook.is_none()));
                }
                Err(crate::ConfigError::LifecycleKey(e)) => {
                    prop_assert_eq!((e.file.as_str(), e.section.as_str(), e.key.as_str()), ("hooks.conf", "h", key));
                }
                Err(other) => prop_assert!(matches!(other, crate::ConfigError::Ini(_)), "{other}"),
            }
        }
    }
}
