//! An Auto Scaling transition of this instance (issue 32, point 3): confirm that the
//! instance waits on a lifecycle hook (`Terminating:Wait`, `Pending:Wait`), find the
//! group and the hooks of the transition, run the `on.asg.*` actions with heartbeats,
//! then complete every hook once: CONTINUE when every action succeeded, else the
//! `on-failure` result (ABANDON when any failed section asks for it).
//!
//! Each step is recorded (`record`), so that cfn-hup killed at any point resumes: the
//! actions that finished are not run again, the completions not yet sent are sent, and
//! "no active lifecycle action" counts as a completion.

use super::notice::{self, GROUP_TAG};
use super::record::{self, Record, Transition};
use super::sections::{self, lock};
use super::{LifecycleHook, LifecycleResult, Trigger};
use cfn_aws::Imds;
use cfn_aws::autoscaling::{self, AutoScaling, Completion};
use chrono::{DateTime, SecondsFormat, Utc};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Heartbeats are sent at about half the hook's heartbeat timeout, and never more often
/// than this (unless a test shortens it: [`Drain::heartbeat_floor`]).
pub const HEARTBEAT_FLOOR: Duration = Duration::from_secs(30);
/// How often the instance's state is asked while it is still before the wait state.
const CONFIRM_TRIES: u32 = 5;
const CONFIRM_PAUSE: Duration = Duration::from_secs(2);

/// What the watcher should do next for this transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing is left to do for it.
    Done,
    /// Try again at the next poll (an AWS call failed, the instance is not waiting yet).
    Retry,
}

/// What a drain needs from the watcher.
pub struct Drain<'a> {
    pub imds: &'a Imds,
    /// An Auto Scaling client with current credentials.
    pub client: &'a (dyn Fn() -> Result<AutoScaling, String> + Sync),
    pub instance: &'a str,
    pub record: &'a Mutex<Record>,
    pub heartbeat_floor: Duration,
}

/// The group and the lifecycle hooks of a transition, and where they were found.
struct Found<'a> {
    group: &'a str,
    group_from: &'static str,
    hooks: &'a [autoscaling::LifecycleHook],
    /// The hooks are those `lifecycle-hook=` names.
    pinned: bool,
}

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl Drain<'_> {
    /// Handles the transition of `trigger` (an `on.asg.*` trigger) with `hooks` (the
    /// sections that have it).
    pub fn transition(&self, trigger: Trigger, hooks: &[&LifecycleHook]) -> Next {
        let key = record::transition_key(trigger, self.instance);
        if lock(self.record).transitions.get(&key).is_some_and(|t| t.handling.done) {
            return Next::Done;
        }
        let asg = match (self.client)() {
            Ok(asg) => asg,
            Err(e) => {
                tracing::error!("Cannot call Auto Scaling for {}: {e}; trying again at the next poll", trigger.name());
                return Next::Retry;
            }
        };
        let (waiting, transition) = match trigger {
            Trigger::AsgLaunch => ("Pending:Wait", autoscaling::LAUNCHING),
            _ => ("Terminating:Wait", autoscaling::TERMINATING),
        };
        let instance = match self.confirm(&asg, waiting) {
            Ok(Some(instance)) => instance,
            Ok(None) => return self.past_wait(&key, trigger),
            Err(()) => return Next::Retry,
        };
        let pinned_group = hooks.iter().find_map(|h| h.autoscaling_group.clone());
        let (group, group_from) = match pinned_group {
            Some(group) => (group, record::FROM_CONFIGURATION),
            None => match self.tagged_group() {
                Some(tagged) => (tagged, record::FROM_TAG),
                None => (instance.group, record::FROM_DESCRIBE),
            },
        };
        let pinned: Vec<String> = if hooks.iter().all(|h| h.lifecycle_hook.is_some()) {
            let mut names: Vec<String> = hooks.iter().filter_map(|h| h.lifecycle_hook.clone()).collect();
            names.dedup();
            names
        } else {
            Vec::new()
        };
        let asg_hooks = match super::discover::hooks(&asg, &group, transition, &pinned) {
            Ok(found) if found.is_empty() => {
                tracing::warn!("Group {group} has no lifecycle hook for {transition}; nothing to complete");
                Vec::new()
            }
            Ok(found) => found,
            Err(e) => {
                tracing::error!("{e}; trying again at the next poll");
                return Next::Retry;
            }
        };
        let found = Found { group: &group, group_from, hooks: &asg_hooks, pinned: !pinned.is_empty() };
        let deadline = self.begin(&key, trigger, &found);
        let names: Vec<String> = asg_hooks.iter().map(|h| h.name.clone()).collect();
        tracing::info!(
            "Instance {} is in {waiting} in group {group} (hooks {}); running the {} actions (deadline {})",
            self.instance,
            names.join(", "),
            trigger.name(),
            rfc3339(deadline)
        );
        let env = vec![
            ("CFN_LIFECYCLE_EVENT".to_string(), trigger.name().to_string()),
            ("CFN_INSTANCE_ID".to_string(), self.instance.to_string()),
            ("CFN_AUTOSCALING_GROUP".to_string(), group.clone()),
            ("CFN_LIFECYCLE_HOOK".to_string(), names.join(",")),
            ("CFN_LIFECYCLE_DEADLINE".to_string(), rfc3339(deadline)),
        ];
        let locate = sections::locator(|r: &mut Record| &mut r.transitions.entry(key.clone()).or_default().handling);
        // Never past the global timeout: by then Auto Scaling has gone on without us.
        let limit_for = |hook: &LifecycleHook| {
            let left = (deadline - Utc::now()).to_std().unwrap_or(Duration::ZERO);
            Some(hook.timeout.map_or(left, |t| t.min(left)))
        };
        let outcomes = std::thread::scope(|scope| {
            let (stop, stopped) = mpsc::channel::<()>();
            scope.spawn(|| self.heartbeats(&asg, &key, &group, &asg_hooks, deadline, stopped));
            let outcomes = sections::run(self.record, &locate, hooks, &env, &limit_for);
            drop(stop);
            outcomes
        });
        let failed: Vec<&LifecycleHook> =
            hooks.iter().zip(&outcomes).filter(|(_, (_, ran))| *ran != Ok(0)).map(|(hook, _)| *hook).collect();
        let result = if failed.is_empty() {
            LifecycleResult::Continue
        } else if failed.iter().any(|h| h.on_failure_for(trigger) == LifecycleResult::Abandon) {
            LifecycleResult::Abandon
        } else {
            LifecycleResult::Continue
        };
        self.complete(&asg, &key, &group, &names, result)
    }

    /// The instance's description once it is in `waiting`: `Ok(None)` when it is past
    /// that (or in no group), `Err` when it cannot be told yet.
    fn confirm(&self, asg: &AutoScaling, waiting: &str) -> Result<Option<autoscaling::Instance>, ()> {
        let before = |state: &str| matches!(state, "Pending" | "Terminating" | "Warmed:Pending" | "Warmed:Terminating");
        for attempt in 1..=CONFIRM_TRIES {
            match asg.describe_instance(self.instance) {
                Ok(Some(instance)) if instance.lifecycle_state == waiting => return Ok(Some(instance)),
                Ok(Some(instance)) if before(&instance.lifecycle_state) => {
                    tracing::debug!("Instance {} is {} (attempt {attempt})", self.instance, instance.lifecycle_state)
                }
                Ok(Some(instance)) => {
                    tracing::info!("Instance {} is {}, not {waiting}", self.instance, instance.lifecycle_state);
                    return Ok(None);
                }
                Ok(None) => {
                    tracing::info!("Instance {} is in no Auto Scaling group", self.instance);
                    return Ok(None);
                }
                Err(e) => tracing::error!("Could not describe instance {}: {e}", self.instance),
            }
            if attempt < CONFIRM_TRIES {
                std::thread::sleep(CONFIRM_PAUSE);
            }
        }
        tracing::warn!("Instance {} is not in {waiting} yet; looking again at the next poll", self.instance);
        Err(())
    }

    /// The group named by the instance tag, when instance tags are in the metadata.
    fn tagged_group(&self) -> Option<String> {
        let tag = self.imds.poll(GROUP_TAG, notice::BODY_LIMIT).ok().flatten()?;
        let tag = tag.trim();
        (!tag.is_empty() && tag.len() <= 255).then(|| tag.to_string())
    }

    /// The instance is past the wait state: whatever ran, nothing waits any more.
    fn past_wait(&self, key: &str, trigger: Trigger) -> Next {
        let mut guard = lock(self.record);
        let entry = guard.transitions.entry(key.to_string()).or_default();
        if entry.handling.first_seen.is_empty() {
            entry.handling.first_seen = crate::activity::now();
            entry.handling.trigger = trigger.name().to_string();
            entry.instance = self.instance.to_string();
        } else {
            tracing::info!("The {} transition of {} is over; nothing left to complete", trigger.name(), self.instance);
        }
        entry.handling.done = true;
        guard.save();
        Next::Done
    }

    /// Records the transition (once) and returns its deadline: the earliest global
    /// timeout of its hooks, counted from when it was first seen.
    fn begin(&self, key: &str, trigger: Trigger, found: &Found<'_>) -> DateTime<Utc> {
        let hooks = found.hooks;
        let mut guard = lock(self.record);
        let entry = guard
            .transitions
            .entry(key.to_string())
            .or_insert_with(|| Transition { instance: self.instance.to_string(), ..Default::default() });
        if entry.handling.first_seen.is_empty() {
            entry.handling.first_seen = crate::activity::now();
            entry.handling.trigger = trigger.name().to_string();
        }
        let first_seen = DateTime::parse_from_rfc3339(&entry.handling.first_seen)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(|_| Utc::now());
        let global = hooks.iter().map(|h| h.global_timeout).min().unwrap_or(autoscaling::default_global_timeout(3600));
        let deadline = first_seen + chrono::TimeDelta::seconds(i64::try_from(global).unwrap_or(172_800));
        entry.group = found.group.to_string();
        entry.group_from = Some(found.group_from.to_string());
        entry.hooks = hooks.iter().map(|h| h.name.clone()).collect();
        let hooks_from = if found.pinned { record::FROM_CONFIGURATION } else { record::FROM_DESCRIBE_HOOKS };
        entry.hooks_from = Some(hooks_from.to_string());
        entry.deadline = Some(rfc3339(deadline));
        guard.save();
        deadline
    }

    /// Heartbeats for every hook until `stopped` says the actions are over, at about
    /// half the shortest heartbeat timeout, never more often than the floor, never past
    /// the deadline.
    fn heartbeats(
        &self,
        asg: &AutoScaling,
        key: &str,
        group: &str,
        hooks: &[autoscaling::LifecycleHook],
        deadline: DateTime<Utc>,
        stopped: mpsc::Receiver<()>,
    ) {
        let Some(shortest) = hooks.iter().map(|h| h.heartbeat_timeout).min() else { return };
        let every = Duration::from_secs(shortest / 2).max(self.heartbeat_floor);
        // The first at once: the action has waited since the transition began (up to a
        // poll and its confirmation ago, or a restart ago), and a heartbeat restarts its
        // timeout from now.
        let mut next = Instant::now();
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            if stopped.recv_timeout(wait) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            if Utc::now() >= deadline {
                return;
            }
            for hook in hooks {
                match asg.heartbeat(group, &hook.name, self.instance) {
                    Ok(Completion::Completed) => {
                        tracing::info!("Heartbeat sent for lifecycle hook {}", hook.name);
                        let mut guard = lock(self.record);
                        if let Some(t) = guard.transitions.get_mut(key) {
                            t.heartbeats = t.heartbeats.saturating_add(1);
                        }
                        guard.save();
                    }
                    Ok(Completion::NoActiveAction) => {
                        tracing::warn!(
                            "Lifecycle hook {} no longer waits (timed out or completed elsewhere)",
                            hook.name
                        )
                    }
                    Err(e) => {
                        tracing::error!("Could not send a heartbeat for lifecycle hook {}: {e}", hook.name);
                        self.failed(key, format!("RecordLifecycleActionHeartbeat {}: {e}", hook.name));
                    }
                }
            }
            next += every;
        }
    }

    /// Records the failure of a call for `status` and `doctor`.
    fn failed(&self, key: &str, error: String) {
        let mut guard = lock(self.record);
        if let Some(t) = guard.transitions.get_mut(key) {
            t.last_error = Some(error);
        }
        guard.save();
    }

    /// Completes each hook not completed yet; done when all are.
    fn complete(&self, asg: &AutoScaling, key: &str, group: &str, names: &[String], result: LifecycleResult) -> Next {
        let mut all = true;
        for name in names {
            if lock(self.record).transitions.get(key).is_some_and(|t| t.completed.contains_key(name)) {
                continue;
            }
            match asg.complete(group, name, self.instance, result.as_str()) {
                Ok(how) => {
                    match how {
                        Completion::Completed => tracing::info!(
                            "Completed lifecycle hook {name} of group {group} for {} with {}",
                            self.instance,
                            result.as_str()
                        ),
                        Completion::NoActiveAction => tracing::warn!(
                            "Lifecycle hook {name} of group {group} has no action waiting for {} any more (timed out \
                             or completed elsewhere); counted as completed",
                            self.instance
                        ),
                    }
                    let mut guard = lock(self.record);
                    if let Some(t) = guard.transitions.get_mut(key) {
                        t.completed.insert(name.clone(), result.as_str().to_string());
                        t.last_error = None;
                    }
                    guard.save();
                }
                Err(e) => {
                    tracing::error!(
                        "Could not complete lifecycle hook {name} of group {group}: {e}; trying again at the next poll"
                    );
                    self.failed(key, format!("CompleteLifecycleAction {name}: {e}"));
                    all = false;
                }
            }
        }
        if !all {
            return Next::Retry;
        }
        let mut guard = lock(self.record);
        if let Some(t) = guard.transitions.get_mut(key) {
            t.handling.done = true;
        }
        guard.save();
        Next::Done
    }
}
