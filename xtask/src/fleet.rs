//! `cargo xtask fleet [--agents N] [--hours H] [--throttled-minutes M] [--seed S]`: a fleet of cfn-hup services
//! started together, in virtual time, with the service's own scheduling code
//! (xtask/src/fleet_sim.rs, shared with tests/fleet.rs): how evenly its polls are spread
//! once every instance is on its cadence, and how its retries decay when CloudFormation
//! throttles it.

use anyhow::{Result, anyhow, bail};
use std::process::ExitCode;
use std::time::Duration;

#[path = "fleet_sim.rs"]
mod fleet_sim;

use fleet_sim::Fleet;

const USAGE: &str = "cargo xtask fleet [--agents N] [--hours H] [--throttled-minutes M] [--seed S]";

struct Options {
    /// How many instances, each with its cfn-hup.
    agents: u32,
    hours: f64,
    /// How long CloudFormation answers only half of what the fleet needs.
    throttled_minutes: u64,
    seed: u64,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options { agents: 10_000, hours: 3.0, throttled_minutes: 60, seed: 1 };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| anyhow!("{arg} needs a number"));
        match arg.as_str() {
            "--agents" => options.agents = value()?.parse().map_err(|_| anyhow!("--agents: not a number"))?,
            "--hours" => options.hours = value()?.parse().map_err(|_| anyhow!("--hours: not a number"))?,
            "--throttled-minutes" => {
                options.throttled_minutes =
                    value()?.parse().map_err(|_| anyhow!("--throttled-minutes: not a number"))?
            }
            "--seed" => options.seed = value()?.parse().map_err(|_| anyhow!("--seed: not a number"))?,
            other => bail!("unknown option {other} (usage: {USAGE})"),
        }
    }
    if !(1..=1_000_000).contains(&options.agents) {
        bail!("--agents must be between 1 and 1000000");
    }
    if !(options.hours.is_finite() && (1.0..=24.0 * 30.0).contains(&options.hours)) {
        bail!("--hours must be between 1 and 720");
    }
    if !(1..=720 * 60).contains(&options.throttled_minutes) {
        bail!("--throttled-minutes must be between 1 and 43200");
    }
    Ok(options)
}

pub fn run(args: &[String]) -> Result<ExitCode> {
    let options = parse(args)?;
    let duration = Duration::from_secs_f64(options.hours * 3600.0);
    let fleet = Fleet::auto_scaling_group(options.agents, duration, options.seed);
    println!(
        "Fleet: {} cfn-hup services, interval {} min, started within {} s, {} h in virtual time (seed {})",
        fleet.instances,
        fleet.interval.as_secs() / 60,
        fleet.boot_spread.as_secs(),
        options.hours,
        fleet.seed
    );
    spread(&fleet);
    throttling(&fleet, Duration::from_secs(options.throttled_minutes * 60));
    Ok(ExitCode::SUCCESS)
}

fn spread(fleet: &Fleet) {
    let from = fleet.first_interval_end();
    let started = std::time::Instant::now();
    let seconds = fleet_sim::simulate(fleet);
    let spread = fleet_sim::spread(&seconds, from, fleet.seed);
    println!(
        "\nDescribeStackResource after the first interval ({} s on; simulated in {:.1} s):",
        from.as_secs(),
        started.elapsed().as_secs_f64()
    );
    println!("  requests {}, {:.2} a second on average", spread.requests, spread.mean_per_second);
    println!("                            this fleet   independent random times (the floor)");
    println!("  busiest second / mean     {:>10.2}   {:>10.2}", spread.peak_second, spread.ideal_peak_second);
    println!("  busiest 60 s / mean       {:>10.2}   {:>10.2}", spread.peak_minute, spread.ideal_peak_minute);
}

fn throttling(fleet: &Fleet, limited: Duration) {
    let minute = Duration::from_secs(60);
    let throttled = fleet.throttled_start();
    let limit = throttled.limits[0].1;
    let seconds = fleet_sim::simulate(&throttled);
    println!(
        "\nThrottled start: CloudFormation answers {:.1} requests a second (bursts of {:.0}); the first passes come at {:.0} a second",
        limit.rate,
        limit.burst,
        f64::from(fleet.instances) / fleet.boot_spread.as_secs_f64()
    );
    table(&seconds, minute, 6);
    summary(fleet, &seconds);

    let throttled = fleet.throttled_for(limited);
    let seconds = fleet_sim::simulate(&throttled);
    println!(
        "\nThrottled for {} min: CloudFormation answers {:.1} requests a second (bursts of {:.0}), {:.1} after that",
        limited.as_secs() / 60,
        throttled.limits[0].1.rate,
        throttled.limits[0].1.burst,
        throttled.limits[1].1.rate,
    );
    // The limited time and eight intervals after it (the longest back-off).
    table(&seconds, fleet.interval, (limited.as_secs() / fleet.interval.as_secs()) as usize + 8);
    summary(fleet, &seconds);
}

/// What CloudFormation received in spans of `span`, the first `rows` of them.
fn table(seconds: &[fleet_sim::Second], span: Duration, rows: usize) {
    println!("  minutes      requests    retries  throttled");
    let minutes = span.as_secs() / 60;
    for (k, sum) in fleet_sim::per_span(seconds, span).iter().enumerate().take(rows) {
        let from = k as u64 * minutes;
        println!("  {:>4}-{:<4}  {:>10} {:>10} {:>10}", from, from + minutes, sum.requests, sum.retries, sum.throttled);
    }
}

fn summary(fleet: &Fleet, seconds: &[fleet_sim::Second]) {
    let Some(last) = fleet_sim::last_throttled(seconds) else {
        println!("  no Throttling answer");
        return;
    };
    let after = &seconds[last.as_secs() as usize + 1..];
    let (retries, requests) =
        after.iter().fold((0u64, 0u64), |(r, q), s| (r + u64::from(s.retries), q + u64::from(s.requests)));
    println!("  last Throttling answer in minute {}; {retries} retries after it", last.as_secs() / 60);
    // The fleet is back on its cadence when it polls at its mean rate again.
    let last_hour = &seconds[seconds.len().saturating_sub(3600)..];
    let rate = last_hour.iter().map(|s| f64::from(s.requests)).sum::<f64>() / last_hour.len() as f64;
    println!(
        "  polls a second in the last hour: {rate:.2} (the cadence: {:.2}); {requests} requests after the last Throttling",
        fleet.mean_rate()
    );
}
