//! A fleet of cfn-hup services in virtual time (issue 13): instances started together,
//! as an Auto Scaling group starts them, each polling DescribeStackResource with the
//! service's own scheduling code — [`Schedule`] for the cadence and its
//! throttling back-off, [`Attempts`] under the service's retry policy for the tries
//! within a pass, [`Verdict::of_remote`] for what a `Throttling` answer is — against a
//! CloudFormation modelled as a token bucket that answers `Throttling` beyond its rate.
//! Shared by `cargo xtask fleet` and tests/fleet.rs (which includes this file with
//! `#[path]`).
//!
//! Virtual time: every instant is one base instant plus a duration, and the instances'
//! requests are handled in time order from one queue, so an instance needs no thread
//! and no sleep. The scheduling code draws its jitter from fastrand's generator of the
//! calling thread, which [`simulate`] seeds: a run is repeatable.
#![allow(dead_code)]

use cfn_aws::retry::{Attempts, Verdict};
use cfn_hooks::daemon::Schedule;
use cfn_hooks::service_loop::SERVICE_RETRY;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// What is simulated.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// How many instances, each with its cfn-hup.
    pub instances: u32,
    /// cfn-hup's `interval`.
    pub interval: Duration,
    /// The instances start at random within this time (each cfn-hup's first pass).
    pub boot_spread: Duration,
    /// How long the run lasts (whole seconds count).
    pub duration: Duration,
    /// CloudFormation's request limit from each time on (sorted by time); before the
    /// first one, and with none, it answers every request.
    pub limits: Vec<(Duration, Bucket)>,
    pub seed: u64,
}

impl Fleet {
    /// `instances` started within two minutes, polling every 15 minutes (the
    /// default interval).
    pub fn auto_scaling_group(instances: u32, duration: Duration, seed: u64) -> Fleet {
        Fleet {
            instances,
            interval: Duration::from_secs(15 * 60),
            boot_spread: Duration::from_secs(120),
            duration,
            limits: Vec::new(),
            seed,
        }
    }

    /// When every instance has made its first pass and is on its cadence.
    pub fn first_interval_end(&self) -> Duration {
        self.boot_spread + self.interval
    }

    /// The fleet's polls on its cadence: one DescribeStackResource per instance per
    /// interval, a second.
    pub fn mean_rate(&self) -> f64 {
        f64::from(self.instances) / self.interval.as_secs_f64()
    }

    /// A limit of `share` of the fleet's mean rate, in bursts of two seconds' worth.
    pub fn bucket(&self, share: f64) -> Bucket {
        let rate = share * self.mean_rate();
        Bucket { rate, burst: 2.0 * rate }
    }

    /// CloudFormation answers twice the fleet's mean rate: plenty for its cadence, far
    /// too little for the first passes of instances started together.
    pub fn throttled_start(&self) -> Fleet {
        Fleet { limits: vec![(Duration::ZERO, self.bucket(2.0))], ..self.clone() }
    }

    /// CloudFormation answers only half the fleet's mean rate for `limited` (a limit
    /// shared with other work, say), twice after that.
    pub fn throttled_for(&self, limited: Duration) -> Fleet {
        Fleet { limits: vec![(Duration::ZERO, self.bucket(0.5)), (limited, self.bucket(2.0))], ..self.clone() }
    }
}

/// A token bucket: `rate` requests a second on average, `burst` at once.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    pub rate: f64,
    pub burst: f64,
}

/// The limit's state during a run.
struct Limiter<'a> {
    base: Instant,
    /// The limits still to come, the one in force first.
    limits: &'a [(Duration, Bucket)],
    tokens: f64,
    at: Instant,
}

impl Limiter<'_> {
    fn new(limits: &[(Duration, Bucket)], base: Instant) -> Limiter<'_> {
        Limiter { base, limits, tokens: limits.first().map_or(0.0, |(_, bucket)| bucket.burst), at: base }
    }

    /// Whether a request at `now` (no earlier than the previous one) is answered
    /// (`false`: Throttling).
    fn take(&mut self, now: Instant) -> bool {
        // A limit that takes over starts full.
        while let [_, (from, next), ..] = self.limits
            && self.base + *from <= now
        {
            self.limits = &self.limits[1..];
            self.tokens = next.burst;
            self.at = self.base + *from;
        }
        let Some((from, bucket)) = self.limits.first() else { return true };
        if now < self.base + *from {
            return true;
        }
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * bucket.rate;
        self.tokens = (self.tokens + refill).min(bucket.burst);
        self.at = now;
        let answered = self.tokens >= 1.0;
        if answered {
            self.tokens -= 1.0;
        }
        answered
    }
}

/// What CloudFormation received in one second of the run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Second {
    /// DescribeStackResource requests, retries included.
    pub requests: u32,
    /// Requests that were not a pass's first try.
    pub retries: u32,
    /// Requests answered with `Throttling`.
    pub throttled: u32,
}

/// One simulated service: its cadence, and the tries of the pass it is in.
struct Instance {
    schedule: Option<Schedule>,
    pass: Option<Attempts>,
}

/// Runs the fleet; the result holds one [`Second`] per second of the run.
pub fn simulate(fleet: &Fleet) -> Vec<Second> {
    fastrand::seed(fleet.seed);
    let base = Instant::now();
    let mut seconds = vec![Second::default(); fleet.duration.as_secs() as usize];
    let end = base + Duration::from_secs(seconds.len() as u64);
    let mut limiter = Limiter::new(&fleet.limits, base);
    // Each instance's next request, earliest first (ties: the lower number).
    let mut queue: BinaryHeap<Reverse<(Instant, u32)>> =
        (0..fleet.instances).map(|id| Reverse((base + fleet.boot_spread.mul_f64(fastrand::f64()), id))).collect();
    let mut instances: Vec<Instance> = (0..fleet.instances).map(|_| Instance { schedule: None, pass: None }).collect();
    // A `Throttling` answer, as the service classifies it.
    let throttling = Verdict::of_remote(400, "Throttling", true);
    while let Some(Reverse((now, id))) = queue.pop() {
        if now >= end {
            break;
        }
        let instance = &mut instances[id as usize];
        // The first pass starts the cadence (as the service does after its first pass).
        let schedule = instance.schedule.get_or_insert_with(|| Schedule::new(fleet.interval, now));
        let pass = instance.pass.get_or_insert_with(|| Attempts::new(&SERVICE_RETRY, now));
        let second = &mut seconds[(now - base).as_secs() as usize];
        second.requests += 1;
        second.retries += u32::from(pass.failed() > 0);
        let answered = limiter.take(now);
        let next = if answered {
            instance.pass = None;
            now + schedule.next_wait(now, false)
        } else {
            second.throttled += 1;
            match pass.after_failure(throttling, now) {
                Some(delay) => now + delay,
                None => {
                    instance.pass = None;
                    now + schedule.next_wait(now, true)
                }
            }
        };
        queue.push(Reverse((next, id)));
    }
    seconds
}

/// How evenly the requests of `seconds[from..]` are spread.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    pub requests: u64,
    pub mean_per_second: f64,
    /// The busiest second over the mean.
    pub peak_second: f64,
    /// The busiest 60 s (a sliding window, by the second) over the mean of 60 s.
    pub peak_minute: f64,
    /// The same number of requests at independent uniformly random times over the same
    /// span (per-second counts binomial, nearly Poisson): its busiest second over the
    /// mean, averaged over a few draws — the floor of any schedule whose instances choose
    /// their times independently.
    pub ideal_peak_second: f64,
    /// …and its busiest 60 s over the mean.
    pub ideal_peak_minute: f64,
}

/// How many draws of independent random times [`Spread`]'s floor averages.
const IDEAL_DRAWS: u32 = 5;

pub fn spread(seconds: &[Second], from: Duration, seed: u64) -> Spread {
    let counts: Vec<u32> = seconds[from.as_secs() as usize..].iter().map(|s| s.requests).collect();
    let requests: u64 = counts.iter().map(|c| u64::from(*c)).sum();
    let mean = requests as f64 / counts.len() as f64;
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut ideal_second, mut ideal_minute) = (0.0, 0.0);
    for _ in 0..IDEAL_DRAWS {
        let mut ideal = vec![0u32; counts.len()];
        for _ in 0..requests {
            ideal[rng.usize(..counts.len())] += 1;
        }
        ideal_second += peak_over_mean(&ideal, 1, mean) / f64::from(IDEAL_DRAWS);
        ideal_minute += peak_over_mean(&ideal, 60, mean) / f64::from(IDEAL_DRAWS);
    }
    Spread {
        requests,
        mean_per_second: mean,
        peak_second: peak_over_mean(&counts, 1, mean),
        peak_minute: peak_over_mean(&counts, 60, mean),
        ideal_peak_second: ideal_second,
        ideal_peak_minute: ideal_minute,
    }
}

/// The largest sum of `window` consecutive counts over `window × mean`.
fn peak_over_mean(counts: &[u32], window: usize, mean: f64) -> f64 {
    let peak = counts.windows(window).map(|w| w.iter().sum::<u32>()).max().unwrap_or(0);
    f64::from(peak) / (window as f64 * mean)
}

/// Sums of `seconds` in consecutive spans of `span` (the last one may be shorter).
pub fn per_span(seconds: &[Second], span: Duration) -> Vec<Second> {
    seconds
        .chunks(span.as_secs().max(1) as usize)
        .map(|chunk| {
            chunk.iter().fold(Second::default(), |sum, s| Second {
                requests: sum.requests + s.requests,
                retries: sum.retries + s.retries,
                throttled: sum.throttled + s.throttled,
            })
        })
        .collect()
}

/// When the last `Throttling` answer was given (to the second), if any was.
pub fn last_throttled(seconds: &[Second]) -> Option<Duration> {
    seconds.iter().rposition(|s| s.throttled > 0).map(|at| Duration::from_secs(at as u64))
}
