//! 10,000 cfn-hup services started together, as an Auto Scaling group starts them,
//! polling every 15 minutes (issue 13, "cfn-hup under faults"): in virtual time, with
//! the service's own scheduling code (HUP-RUN-03: the first pass at once, then a fixed
//! cadence; NET-03: the retries within a pass) against a CloudFormation modelled as a
//! token bucket. The simulation lives in xtask/src/fleet_sim.rs, shared with
//! `cargo xtask fleet`, which prints the same figures.

#[path = "../xtask/src/fleet_sim.rs"]
mod fleet_sim;

use fleet_sim::{Fleet, Second};
use std::time::Duration;

const INSTANCES: u32 = 10_000;
const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// Sums over `seconds[from..to]` (in seconds of the run).
fn total(seconds: &[Second], from: Duration, to: Duration) -> Second {
    fleet_sim::per_span(&seconds[from.as_secs() as usize..to.as_secs() as usize], to - from)[0]
}

/// Requests a second over `seconds[from..to]`.
fn rate(seconds: &[Second], from: Duration, to: Duration) -> f64 {
    f64::from(total(seconds, from, to).requests) / (to - from).as_secs_f64()
}

/// Instances booted within two minutes start their cadences at random phases, so once
/// each has made its first pass the fleet's DescribeStackResource calls are spread over
/// the interval: no 60 s carries more than 1.2× the mean (with a cadence started at the
/// first pass, the fleet polled in lockstep: 8× the mean), and the busiest second is
/// within a quarter of what independent random times give (no independent schedule can
/// do better: at 11 a second the busiest of 9,000 seconds is over twice the mean).
#[test]
fn a_fleet_started_together_spreads_its_polls_over_the_interval() {
    let fleet = Fleet::auto_scaling_group(INSTANCES, Duration::from_secs(3 * 3600), 1);
    let seconds = fleet_sim::simulate(&fleet);
    let spread = fleet_sim::spread(&seconds, fleet.first_interval_end(), fleet.seed);
    eprintln!("{spread:?}");
    assert!(spread.peak_minute <= 1.2, "{spread:?}");
    assert!(spread.peak_second <= 1.25 * spread.ideal_peak_second, "{spread:?}");
    // Every service polls once per interval, no more and no less.
    let cadence = fleet.mean_rate();
    assert!((spread.mean_per_second / cadence - 1.0).abs() < 0.01, "{spread:?}, cadence {cadence}");
    // The floor is what it is: binomial counts at this rate peak far above 1.2×.
    assert!(spread.ideal_peak_second > 1.8, "{spread:?}");
}

/// CloudFormation answers twice what the fleet needs on its cadence, far less than its
/// first passes (83 a second): throttled first passes retry within the pass (three
/// tries), then leave out a slot, and as the slots are at random phases the throttled
/// services come back spread out. Retries stop within a minute of the last boot and
/// never come back; the fleet then polls at its cadence. (With a cadence started at the
/// first pass, the fleet came back in lockstep and was throttled every interval.)
#[test]
fn throttled_first_passes_retry_less_and_less_and_the_fleet_recovers() {
    let fleet = Fleet::auto_scaling_group(INSTANCES, Duration::from_secs(3600), 2).throttled_start();
    let seconds = fleet_sim::simulate(&fleet);
    let per_minute: Vec<u32> = fleet_sim::per_span(&seconds, MINUTE).iter().map(|m| m.retries).collect();
    eprintln!("retries per minute: {per_minute:?}");
    let first = total(&seconds, Duration::ZERO, fleet.boot_spread);
    assert!(first.throttled * 2 > first.requests, "most first tries are throttled: {first:?}");
    // From the last boot on, fewer retries each minute, none after the third.
    let after_boot = &per_minute[fleet.boot_spread.as_secs() as usize / 60..];
    assert!(after_boot.windows(2).all(|w| w[1] <= w[0] && (w[1] < w[0] || w[1] == 0)), "{per_minute:?}");
    assert_eq!(after_boot[1..], vec![0; after_boot.len() - 1][..], "{per_minute:?}");
    let last = fleet_sim::last_throttled(&seconds).expect("throttled");
    assert!(last < fleet.boot_spread + MINUTE, "last Throttling at {last:?}");
    // Recovered: every service on its cadence from the second interval on.
    let end = fleet.duration;
    let polling = rate(&seconds, 2 * fleet.interval, end);
    assert!((polling / fleet.mean_rate() - 1.0).abs() < 0.02, "{polling} a second, cadence {}", fleet.mean_rate());
}

/// For an hour CloudFormation answers only half of what the fleet needs on its cadence.
/// Throttled passes leave out 1, 3, then 7 slots, so the fleet's retries fall interval by
/// interval (by more than 5× in the hour) while the limit's answers are used; once it
/// is lifted no request is throttled and within two intervals the fleet polls at its
/// cadence again.
#[test]
fn under_a_limit_below_its_needs_the_fleet_retries_less_each_interval_and_recovers_when_it_is_lifted() {
    let fleet = Fleet::auto_scaling_group(INSTANCES, Duration::from_secs(2 * 3600), 3).throttled_for(HOUR);
    let seconds = fleet_sim::simulate(&fleet);
    let per_interval: Vec<Second> = fleet_sim::per_span(&seconds, fleet.interval);
    eprintln!("per interval: {per_interval:?}");
    let limited = HOUR.as_secs() / fleet.interval.as_secs();
    let retries: Vec<u32> = per_interval[..limited as usize].iter().map(|i| i.retries).collect();
    assert!(retries.windows(2).all(|w| w[1] < w[0]), "{retries:?}");
    assert!(retries[retries.len() - 1] * 5 < retries[0], "{retries:?}");
    // The back-off does not leave the limit idle: from the second interval of the hour
    // on, over 90% of what it allowed was answered.
    let rest = total(&seconds, fleet.interval, HOUR);
    let answered = f64::from(rest.requests - rest.throttled);
    let allowed = fleet.limits[0].1.rate * (HOUR - fleet.interval).as_secs_f64();
    assert!(answered > 0.9 * allowed && answered <= allowed + fleet.limits[0].1.burst, "{rest:?}, {allowed}");
    let last = fleet_sim::last_throttled(&seconds).expect("throttled");
    assert!(last < HOUR, "last Throttling at {last:?}");
    let polling = rate(&seconds, HOUR + 2 * fleet.interval, fleet.duration);
    assert!((polling / fleet.mean_rate() - 1.0).abs() < 0.02, "{polling} a second, cadence {}", fleet.mean_rate());
}
