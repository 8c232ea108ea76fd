//! The back-off of an update hook whose action keeps failing for the same value (daemon
//! and foreground modes only; cfn-bootstrap's own, see README, Compatibility).
//!
//! The reference runs a failed action again at every pass, for ever (HUP-DET-03: the new
//! value is stored only once the action succeeds). cfn-bootstrap keeps that rule (the
//! value is still stored only after a success, so the action is still tried until it
//! succeeds or the value changes) but spaces the tries out: the first [`FREE_TRIES`]
//! failures in a row for one value are retried at the next pass, as in the reference;
//! after them, 2, 4, 8, … intervals separate two tries, at most `max-backoff` minutes
//! (`[main]` of `cfn-hup.conf`, default [`DEFAULT_MAX_BACKOFF_MINUTES`]). A new value
//! ends the back-off: its action runs at the first pass that sees it. A success, a value
//! that no longer needs the action, or a hook removed from the configuration ends it too.
//!
//! The schedule counts passes, not wall time, so that a throttled or slow pass does not
//! make a try come early. The state is kept in memory by the service and written with
//! each pass to `activity.json` ([`FailingHook`]); a restarted service reads it back and
//! keeps the back-off (the next try stays at the time it was due, see [`Backoff::resume`]).
//! `--no-daemon` neither reads nor changes it: each call runs the action, as the reference.
//! Command hooks (`on.command`) have no back-off: each message runs its action once.

use crate::activity::{self, FailingHook};
use crate::state::StateValue;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::time::Duration;

/// Failures in a row retried at the next pass before the back-off starts.
pub const FREE_TRIES: u32 = 3;
/// The longest wait between two tries when `cfn-hup.conf` sets no `max-backoff`.
pub const DEFAULT_MAX_BACKOFF_MINUTES: u64 = 60;

/// The passes left out after `tries` failures in a row for one value, when at most
/// `cap` intervals may separate two tries: none for the first [`FREE_TRIES`] − 1, then
/// 1, 3, 7, 15 … (the next try 2, 4, 8, 16 … intervals after the last), at most `cap` − 1.
pub fn passes_to_skip(tries: u32, cap: u32) -> u32 {
    if tries < FREE_TRIES {
        return 0;
    }
    let spacing = 1u64.checked_shl(tries - FREE_TRIES + 1).unwrap_or(u64::MAX);
    (spacing.min(u64::from(cap.max(1))) - 1) as u32
}

/// `max_backoff` in whole intervals (rounded down), at least one: with a `max-backoff`
/// of one interval or less, every pass tries again, as in the reference.
pub fn cap_in_intervals(max_backoff: Duration, every: Duration) -> u32 {
    if every.is_zero() {
        return 1;
    }
    (max_backoff.as_secs_f64() / every.as_secs_f64()).floor().clamp(1.0, f64::from(u32::MAX)) as u32
}

/// SHA-256 (hex) of a value as `metadata_db.json` would store it: what tells the same
/// value from a new one without keeping the value (metadata may hold secrets).
pub fn value_digest(value: Option<&StateValue>) -> String {
    let stored = value.map(StateValue::to_stored).unwrap_or(serde_json::Value::Null);
    Sha256::digest(stored.to_string().as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// `30 seconds`, `2 minutes`, `1 hour 4 minutes`: how far the next try is.
pub fn in_words(wait: Duration) -> String {
    let plural = |n: u64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let secs = wait.as_secs_f64();
    if secs < 1.0 {
        return format!("{secs:.1} seconds");
    }
    if secs < 60.0 {
        return plural(secs.round() as u64, "second");
    }
    let minutes = (secs / 60.0).round() as u64;
    match (minutes / 60, minutes % 60) {
        (0, m) => plural(m, "minute"),
        (h, 0) => plural(h, "hour"),
        (h, m) => format!("{} {}", plural(h, "hour"), plural(m, "minute")),
    }
}

/// What a failure did to the back-off of its hook.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub tries: u32,
    /// Zero while the next pass tries again.
    pub passes_to_skip: u32,
    /// The wait until the next try (`passes_to_skip + 1` intervals).
    pub wait: Duration,
    pub next_try: DateTime<Utc>,
}

/// The failing update hooks of a running service and how their tries are spaced.
#[derive(Debug, Clone)]
pub struct Backoff {
    every: Duration,
    /// At most this many intervals between two tries.
    cap: u32,
    hooks: Vec<FailingHook>,
}

impl Backoff {
    pub fn new(every: Duration, max_backoff: Duration) -> Backoff {
        Backoff { every, cap: cap_in_intervals(max_backoff, every), hooks: Vec::new() }
    }

    /// A new interval or `max-backoff` (a reloaded configuration): the next tries already
    /// scheduled stay as they are; the later ones follow the new values.
    pub fn configure(&mut self, every: Duration, max_backoff: Duration) {
        self.every = every;
        self.cap = cap_in_intervals(max_backoff, every);
    }

    /// The failing hooks a previous run of the service recorded, at its start (`now`, its
    /// first pass). The back-off goes on: a hook whose next try was due before `now` is
    /// tried at the first pass, one whose next try is later at the first pass at or after
    /// that time (never later than the passes it still had to leave out). Each is logged:
    /// a restart does not reset a back-off silently.
    pub fn resume(&mut self, recorded: Vec<FailingHook>, now: DateTime<Utc>) {
        for mut hook in recorded {
            let due = DateTime::parse_from_rfc3339(&hook.next_try).map(|t| t.with_timezone(&Utc)).unwrap_or(now);
            let ahead = (due - now).to_std().unwrap_or(Duration::ZERO);
            let passes = (ahead.as_secs_f64() / self.every.as_secs_f64().max(f64::EPSILON)).ceil();
            hook.passes_to_skip = hook.passes_to_skip.min(passes.clamp(0.0, f64::from(u32::MAX)) as u32);
            if hook.passes_to_skip == 0 {
                tracing::info!(
                    "Action for {} failed {} times in a row before cfn-hup started; it is tried again at the first pass",
                    hook.hook,
                    hook.tries
                );
            } else {
                tracing::info!(
                    "Action for {} failed {} times in a row before cfn-hup started; its back-off goes on: next try at {}, in {}",
                    hook.hook,
                    hook.tries,
                    local_time(due),
                    in_words(ahead)
                );
            }
            self.hooks.push(hook);
        }
    }

    /// The failing hooks, for `activity.json`.
    pub fn failing(&self) -> &[FailingHook] {
        &self.hooks
    }

    fn find(&mut self, key: &str) -> Option<usize> {
        self.hooks.iter().position(|h| activity::hook_key(h) == key)
    }

    /// Whether the action for `key`, due to run for the value whose digest is `digest`,
    /// is left out of this pass (counting the pass). A different value ends the
    /// back-off: it runs at once, with its own tries.
    pub fn holds(&mut self, key: &str, digest: &str) -> Option<&FailingHook> {
        let at = self.find(key)?;
        if self.hooks[at].value_sha256 != digest {
            let ended = self.hooks.remove(at);
            if ended.passes_to_skip > 0 {
                tracing::info!("The value of {} changed while its action was backing off; it runs at once", ended.path);
            }
            return None;
        }
        let hook = &mut self.hooks[at];
        if hook.passes_to_skip == 0 {
            return None;
        }
        hook.passes_to_skip -= 1;
        Some(hook)
    }

    /// Records a failed try of the action of `hook` at `path` (started at `started`) for
    /// the value whose digest is `digest`: one more try in a row for the same value, the
    /// first of a new series for another.
    pub fn failed(&mut self, (hook, path): (&str, &str), digest: &str, error: &str, started: DateTime<Utc>) -> Failure {
        let key = crate::MetadataDb::key(hook, path);
        let at = match self.find(&key) {
            Some(at) if self.hooks[at].value_sha256 == digest => at,
            found => {
                if let Some(at) = found {
                    self.hooks.remove(at);
                }
                self.hooks.push(FailingHook {
                    hook: hook.to_string(),
                    path: path.to_string(),
                    tries: 0,
                    since: activity::time(started),
                    last_try: String::new(),
                    last_error: String::new(),
                    passes_to_skip: 0,
                    next_try: String::new(),
                    value_sha256: digest.to_string(),
                });
                self.hooks.len() - 1
            }
        };
        let skip = {
            let entry = &mut self.hooks[at];
            entry.tries = entry.tries.saturating_add(1);
            passes_to_skip(entry.tries, self.cap)
        };
        let wait = self.every.saturating_mul(skip.saturating_add(1));
        let next_try = Utc::now() + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
        let entry = &mut self.hooks[at];
        entry.last_try = activity::time(started);
        entry.last_error = error.to_string();
        entry.passes_to_skip = skip;
        entry.next_try = activity::time(next_try);
        Failure { tries: entry.tries, passes_to_skip: skip, wait, next_try }
    }

    /// The action for `key` succeeded, or no longer needs to run: its back-off ends.
    pub fn clear(&mut self, key: &str) {
        if let Some(at) = self.find(key) {
            self.hooks.remove(at);
        }
    }

    /// Drops the hooks no longer configured (as their stored values are dropped).
    pub fn retain(&mut self, keep: &HashSet<String>) {
        self.hooks.retain(|h| keep.contains(&activity::hook_key(h)));
    }
}

/// A time as cfn-hup.log writes its own: local, `YYYY-MM-DD HH:MM:SS`.
pub fn local_time(time: DateTime<Utc>) -> String {
    time.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn three_tries_then_two_four_eight_intervals_up_to_the_cap() {
        let skipped: Vec<u32> = (1..=9).map(|tries| passes_to_skip(tries, 1000)).collect();
        assert_eq!(skipped, [0, 0, 1, 3, 7, 15, 31, 63, 127]);
        // Capped: 4 intervals (an hour at the default 15 minutes) between tries at most.
        let skipped: Vec<u32> = (1..=7).map(|tries| passes_to_skip(tries, 4)).collect();
        assert_eq!(skipped, [0, 0, 1, 3, 3, 3, 3]);
        // A cap of one interval (or none) is the reference: every pass.
        assert!((1..=70).all(|tries| passes_to_skip(tries, 1) == 0 && passes_to_skip(tries, 0) == 0));
        // No overflow however long it fails.
        assert_eq!(passes_to_skip(u32::MAX, u32::MAX), u32::MAX - 1);
        assert_eq!(passes_to_skip(66, 10), 9);
    }

    #[test]
    fn the_cap_in_whole_intervals() {
        let minutes = |m: u64| Duration::from_secs(m * 60);
        assert_eq!(cap_in_intervals(minutes(60), minutes(15)), 4);
        assert_eq!(cap_in_intervals(minutes(60), minutes(7)), 8);
        assert_eq!(cap_in_intervals(minutes(60), minutes(90)), 1);
        assert_eq!(cap_in_intervals(minutes(60), Duration::ZERO), 1);
        assert_eq!(cap_in_intervals(minutes(60), Duration::from_millis(200)), 18000);
    }

    /// Which of `passes` passes run the action of a hook that always fails for one value.
    fn runs(backoff: &mut Backoff, passes: u32, digest: &str) -> Vec<u32> {
        let mut ran = Vec::new();
        for pass in 1..=passes {
            if backoff.holds("h|Resources.A", digest).is_none() {
                ran.push(pass);
                backoff.failed(("h", "Resources.A"), digest, "exit 1", Utc::now());
            }
        }
        ran
    }

    #[test]
    fn a_pass_schedule_reset_by_a_new_value_and_ended_by_a_success() {
        let minute = Duration::from_secs(60);
        let mut backoff = Backoff::new(minute, minute * 60);
        assert_eq!(runs(&mut backoff, 20, "a"), [1, 2, 3, 5, 9, 17]);
        let hook = &backoff.failing()[0];
        assert_eq!((hook.tries, hook.passes_to_skip, hook.last_error.as_str()), (6, 12, "exit 1"));
        // 16 intervals once capped at an hour of one-minute intervals: the cap is 60.
        // A new value runs at once, and starts its own series.
        assert_eq!(runs(&mut backoff, 6, "b"), [1, 2, 3, 5]);
        assert_eq!(backoff.failing().len(), 1);
        assert_eq!(backoff.failing()[0].tries, 4);
        backoff.clear("h|Resources.A");
        assert!(backoff.failing().is_empty());
        // Capped at 4 intervals (an hour of 15-minute intervals).
        let mut backoff = Backoff::new(minute * 15, minute * 60);
        assert_eq!(runs(&mut backoff, 20, "a"), [1, 2, 3, 5, 9, 13, 17]);
        let failure = backoff.failed(("h", "Resources.A"), "a", "exit 1", Utc::now());
        assert_eq!((failure.passes_to_skip, failure.wait), (3, minute * 60));
        backoff.retain(&HashSet::new());
        assert!(backoff.failing().is_empty(), "a hook no longer configured");
    }

    #[test]
    fn a_restart_keeps_the_time_of_the_next_try() {
        let every = Duration::from_secs(60);
        let mut before = Backoff::new(every, every * 60);
        for _ in 0..5 {
            before.failed(("h", "Resources.A"), "a", "exit 1", Utc::now());
        }
        assert_eq!(before.failing()[0].passes_to_skip, 7);
        let recorded = before.failing().to_vec();
        // Restarted at once: the try is still (nearly) 8 minutes away; the passes before
        // it are the 7 it still had to leave out.
        let mut now = Backoff::new(every, every * 60);
        now.resume(recorded.clone(), Utc::now());
        assert_eq!(now.failing()[0].passes_to_skip, 7);
        assert_eq!(runs(&mut now, 9, "a"), [8]);
        // Restarted 5 minutes later: 3 left; an hour later: tried at the first pass.
        let mut later = Backoff::new(every, every * 60);
        later.resume(recorded.clone(), Utc::now() + chrono::Duration::minutes(5) + chrono::Duration::seconds(1));
        assert_eq!(later.failing()[0].passes_to_skip, 3);
        let mut much_later = Backoff::new(every, every * 60);
        much_later.resume(recorded, Utc::now() + chrono::Duration::hours(1));
        assert_eq!(much_later.failing()[0].passes_to_skip, 0);
        assert_eq!(much_later.failing()[0].tries, 5, "the tries are kept");
    }

    #[test]
    fn digests_tell_values_apart_and_words_say_how_far() {
        let a = value_digest(Some(&StateValue::Json(json!({"k": 1}))));
        assert_eq!(a, value_digest(Some(&StateValue::Json(json!({"k": 1})))));
        assert_ne!(a, value_digest(Some(&StateValue::Json(json!({"k": 2})))));
        assert_ne!(value_digest(None), value_digest(Some(&StateValue::Json(json!("")))));
        assert_eq!(a.len(), 64);
        assert_eq!(in_words(Duration::from_millis(400)), "0.4 seconds");
        assert_eq!(in_words(Duration::from_secs(1)), "1 second");
        assert_eq!(in_words(Duration::from_secs(30 * 60)), "30 minutes");
        assert_eq!(in_words(Duration::from_secs(60)), "1 minute");
        assert_eq!(in_words(Duration::from_secs(3600)), "1 hour");
        assert_eq!(in_words(Duration::from_secs(3600 + 240)), "1 hour 4 minutes");
    }
}
