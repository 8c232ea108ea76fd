//! The reference's retry policy (NET-03, NET-05): attempt `i` (0-based) waits
//! `random() × min(20, 2^i − 1)` seconds first, so five tries sleep at most 0, 1, 3, 7
//! and 15 s. Errors are terminal, retriable, or "throttled" — a class the reference
//! retries forever; here it keeps retrying only until a long but finite budget is spent.

use std::time::{Duration, Instant};

/// How an error should be treated by the retry loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Give up at once (a `Sender` fault, a 4xx on a download).
    Terminal,
    /// Try again while attempts remain.
    Retriable,
    /// Throttling, 503 and credential propagation delays: keep trying past the
    /// attempt limit until the budget is spent.
    Throttled,
}

impl Verdict {
    /// An AWS query-API error answer, as the reference classified it for CloudFormation
    /// and SQS alike (NET-03): 503 and the throttling and key propagation codes are
    /// throttling (and 429, throttling by definition), `Sender` faults are final,
    /// everything else is retried. Unlike the reference, any other 4xx is final whatever
    /// its body says (408, a timeout, excepted): a proxy or load balancer refusing the
    /// call with a body of its own will refuse it again, and five tries only add 11 s
    /// before the same error.
    pub fn of_remote(status: u16, code: &str, sender_fault: bool) -> Verdict {
        if matches!(status, 429 | 503) || matches!(code, "Throttling" | "InvalidAccessKeyId" | "InvalidClientTokenId") {
            Verdict::Throttled
        } else if sender_fault || ((400..500).contains(&status) && status != 408) {
            Verdict::Terminal
        } else {
            Verdict::Retriable
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub max_tries: u32,
    /// How long the throttled class may keep a call going, counted from its first attempt.
    pub throttled_budget: Duration,
    pub sleep: fn(Duration),
}

impl Policy {
    /// CloudFormation calls, downloads and signals: 5 tries.
    pub const API: Policy =
        Policy { max_tries: 5, throttled_budget: Duration::from_secs(600), sleep: std::thread::sleep };
    /// SQS SendMessage: 25 tries (SPEC §5.4), the longest schedule of all (about seven
    /// minutes of back-off at most).
    pub const SQS_SEND: Policy =
        Policy { max_tries: 25, throttled_budget: Duration::from_secs(600), sleep: std::thread::sleep };
    /// Instance metadata: 10 tries, used only once the service has answered at all.
    pub const IMDS: Policy = Policy { max_tries: 10, throttled_budget: Duration::ZERO, sleep: std::thread::sleep };
}

/// The jittered delay before attempt `attempt` (0-based).
pub fn delay_before(attempt: u32) -> Duration {
    let ceiling = if attempt >= 5 { 20.0 } else { ((1u64 << attempt) - 1) as f64 };
    Duration::from_secs_f64(fastrand::f64() * ceiling.min(20.0))
}

/// The decisions of [`run`] without its clock and its sleeps: whether a failed attempt
/// is tried again, and after how long. Kept apart so that a caller with a clock of its
/// own (the fleet simulation, in virtual time) makes exactly the decisions `run` makes.
#[derive(Debug, Clone)]
pub struct Attempts {
    started: Instant,
    throttled_budget: Duration,
    allowed: u32,
    failed: u32,
}

impl Attempts {
    /// A call under `policy` whose first attempt starts at `started`.
    pub fn new(policy: &Policy, started: Instant) -> Attempts {
        Attempts { started, throttled_budget: policy.throttled_budget, allowed: policy.max_tries.max(1), failed: 0 }
    }

    /// How many attempts have failed so far.
    pub fn failed(&self) -> u32 {
        self.failed
    }

    /// After an attempt that failed at `now` with `verdict`: the jittered delay before
    /// the next attempt, or `None` when the call gives up.
    pub fn after_failure(&mut self, verdict: Verdict, now: Instant) -> Option<Duration> {
        self.failed += 1;
        match verdict {
            Verdict::Terminal => return None,
            Verdict::Throttled if now.saturating_duration_since(self.started) < self.throttled_budget => {
                self.allowed = self.allowed.max(self.failed + 1)
            }
            _ => {}
        }
        (self.failed < self.allowed).then(|| delay_before(self.failed))
    }
}

/// An attempt's error, as the log shows it.
pub trait AttemptError: std::fmt::Display {
    /// Whether the reference would have logged the attempt as `ConnectionError` (the
    /// Python exception of a refused, reset or unresolvable connection). Our line then
    /// starts with that word, so that what greps the reference's line finds ours.
    fn is_connection_failure(&self) -> bool;
}

/// Runs `attempt` until it succeeds, fails terminally or the policy gives up; the last
/// error is returned. `describe` names the operation in the log.
pub fn run<T, E: AttemptError>(
    policy: &Policy,
    describe: &str,
    mut attempt: impl FnMut() -> Result<T, E>,
    classify: impl Fn(&E) -> Verdict,
) -> Result<T, E> {
    let mut attempts = Attempts::new(policy, Instant::now());
    loop {
        let error = match attempt() {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        // Every failed attempt is logged at ERROR, as the reference does, starting with
        // what the reference's line says (the exception's name for a lost connection, its
        // text otherwise: `HTTP Error 404 : `), so that what greps its lines finds ours.
        let attempt = attempts.failed() + 1;
        if error.is_connection_failure() {
            tracing::error!("ConnectionError: {describe} failed (attempt {attempt}): {error}");
        } else {
            tracing::error!("{error}: {describe} failed (attempt {attempt})");
        }
        let Some(delay) = attempts.after_failure(classify(&error), Instant::now()) else {
            return Err(error);
        };
        tracing::debug!("Sleeping for {:.6} seconds before retrying", delay.as_secs_f64());
        (policy.sleep)(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn no_sleep(_: Duration) {}

    fn policy(max_tries: u32, throttled_budget: Duration) -> Policy {
        Policy { max_tries, throttled_budget, sleep: no_sleep }
    }

    fn count_attempts(policy: &Policy, verdicts: &[Verdict], succeed_at: Option<usize>) -> (usize, bool) {
        let calls = Cell::new(0usize);
        let result = run(
            policy,
            "test",
            || {
                let n = calls.get();
                calls.set(n + 1);
                if Some(n) == succeed_at { Ok(()) } else { Err(verdicts[n.min(verdicts.len() - 1)]) }
            },
            |v: &Verdict| *v,
        );
        (calls.get(), result.is_ok())
    }

    impl AttemptError for Verdict {
        fn is_connection_failure(&self) -> bool {
            false
        }
    }

    impl std::fmt::Display for Verdict {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }

    #[test]
    fn classification_decides_the_number_of_attempts() {
        use Verdict::*;
        let five = policy(5, Duration::ZERO);
        assert_eq!(count_attempts(&five, &[Terminal], None), (1, false));
        assert_eq!(count_attempts(&five, &[Retriable], None), (5, false));
        assert_eq!(count_attempts(&five, &[Retriable], Some(2)), (3, true));
        assert_eq!(count_attempts(&five, &[Retriable, Terminal], None), (2, false));
        // With no budget left, throttling is bounded like any retriable error.
        assert_eq!(count_attempts(&five, &[Throttled], None), (5, false));
        // With budget, throttling goes past the five tries.
        let patient = policy(5, Duration::from_secs(3600));
        assert_eq!(count_attempts(&patient, &[Throttled], Some(12)), (13, true));
    }

    #[test]
    fn the_throttled_budget_is_counted_on_the_callers_clock() {
        let start = Instant::now();
        let mut attempts = Attempts::new(&policy(2, Duration::from_secs(60)), start);
        let at = |s: u64| start + Duration::from_secs(s);
        // Within the budget, throttling is tried again past the two tries…
        for s in [1, 10, 59] {
            let delay = attempts.after_failure(Verdict::Throttled, at(s)).expect("retried");
            assert!(delay <= Duration::from_secs(20), "{delay:?}");
        }
        // …and once it is spent (virtual time, not the wall clock), the call gives up.
        assert_eq!(attempts.after_failure(Verdict::Throttled, at(61)), None);
        assert_eq!(attempts.failed(), 4);
        let mut attempts = Attempts::new(&policy(5, Duration::from_secs(60)), start);
        assert_eq!(attempts.after_failure(Verdict::Terminal, at(0)), None);
    }

    #[test]
    fn delays_follow_the_jittered_exponential_schedule() {
        let ceilings = [0.0, 1.0, 3.0, 7.0, 15.0, 20.0, 20.0];
        for (attempt, ceiling) in ceilings.iter().enumerate() {
            for _ in 0..200 {
                let d = delay_before(attempt as u32).as_secs_f64();
                assert!(d >= 0.0 && d <= *ceiling, "attempt {attempt}: {d} > {ceiling}");
            }
        }
    }
}
