//! cfn-hup's lifecycle hooks (issue 32), ours only (the reference has none).
//!
//! - `6-lifecycle`: the idle daemon of workload 6 (`interval=1` minute, one `post.update`
//!   hook) without and then with a section for each of the five lifecycle triggers
//!   (`lifecycle-interval` at its default, 5 s: four metadata items polled every 5 s): CPU
//!   per idle minute and resident memory, the same window for both.
//! - `lifecycle-latency`: with `lifecycle-interval=1`, the time from a metadata item
//!   changing to the action starting (the action's first command writes the time):
//!   Spot interruption notices posted to the emulator (`POST /_emu/imds`) at random
//!   moments, one daemon for all; and Auto Scaling terminations (`POST
//!   /_emu/autoscaling/terminate`, which also costs cfn-hup `DescribeAutoScalingInstances`
//!   and `DescribeLifecycleHooks` before the action), a fresh daemon and state for each.
//!   Target: at most the interval + 100 ms.

use super::hup::{self, Daemon};
use super::measure::{Stats, r3};
use super::{Context, Implementation};
use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The lifecycle interval the latency runs use, seconds.
pub const INTERVAL_S: f64 = 1.0;
/// The instance the emulator's main IMDS serves (its default `--instance-id`).
const INSTANCE: &str = "i-0123456789abcdef0";

pub struct Settings {
    pub idle_window: Duration,
    pub spot_runs: usize,
    pub terminate_runs: usize,
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// A section per lifecycle trigger, each with a harmless action.
fn idle_hooks() -> String {
    ["on.asg.terminate", "on.asg.launch", "on.spot.interruption", "on.rebalance", "on.maintenance"]
        .iter()
        .map(|t| format!("[{}]\ntriggers={t}\naction=true\n\n", t.replace('.', "-")))
        .collect()
}

fn idle(ctx: &Context, imp: &Implementation, settings: &Settings) -> Result<Value> {
    let hup_settings = hup::Settings { polls: 0, idle_window: settings.idle_window, polls_for: None };
    let without = ctx.work.join("hup-lifecycle-without");
    hup::write_config(ctx, &without)?;
    let with = ctx.work.join("hup-lifecycle-with");
    hup::write_config(ctx, &with)?;
    std::fs::write(with.join("hooks.d/lifecycle.conf"), idle_hooks())?;
    let measure = |dir: &Path| {
        hup::idle_phase(ctx, imp, dir, &hup_settings).unwrap_or_else(|e| json!({"error": format!("{e:#}")}))
    };
    Ok(json!({
        "lifecycle_interval_s": 5,
        "without_lifecycle_hooks": measure(&without),
        "with_lifecycle_hooks": measure(&with),
    }))
}

fn get(ctx: &Context, path: &str) -> Result<Value> {
    let body = ureq::get(&format!("{}{path}", ctx.url)).call()?.body_mut().read_to_string()?;
    Ok(serde_json::from_str(&body)?)
}

fn post(ctx: &Context, path: &str, body: Value) -> Result<()> {
    ureq::post(&format!("{}{path}", ctx.url))
        .send(body.to_string().as_bytes())
        .with_context(|| format!("POST {path}"))?;
    Ok(())
}

/// Waits until the daemon has asked IMDS for `item` at least once more than `before`
/// times (its watcher runs), returning the count.
fn polled(ctx: &Context, daemon: &Daemon, item: &str, before: usize) -> Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let requests = get(ctx, "/_emu/requests?kind=imds")?;
        let n = requests
            .as_array()
            .map_or(0, |r| r.iter().filter(|e| e["path"].as_str().is_some_and(|p| p.ends_with(item))).count());
        if n > before {
            return Ok(n);
        }
        if !daemon.alive() || Instant::now() > deadline {
            bail!("cfn-hup did not poll {item} within 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The times the action wrote, one a line.
fn marks(path: &Path) -> Vec<f64> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn wait_marks(path: &Path, n: usize) -> Result<f64> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let m = marks(path);
        if m.len() >= n {
            return Ok(m[n - 1]);
        }
        if Instant::now() > deadline {
            bail!("the action did not run within 15 s (mark {n})");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A configuration directory with `lifecycle-interval=1` and one section for `trigger`
/// whose action appends the time to `marks`.
fn latency_config(ctx: &Context, dir: &Path, trigger: &str, marks: &Path) -> Result<()> {
    hup::write_config(ctx, dir)?;
    let conf = dir.join("cfn-hup.conf");
    let main = std::fs::read_to_string(&conf)?;
    std::fs::write(&conf, format!("{main}lifecycle-interval={INTERVAL_S}\n"))?;
    std::fs::write(
        dir.join("hooks.d/lifecycle.conf"),
        format!("[mark]\ntriggers={trigger}\naction=date +%s.%N >> {}\n", marks.display()),
    )?;
    Ok(())
}

/// Pauses of 0.3 to 1.3 s, so that changes land at every phase of the poll.
struct Pauses(u64);

impl Pauses {
    fn next(&mut self) -> Duration {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        Duration::from_millis(300 + (self.0 >> 33) % 1000)
    }
}

fn summary(latencies_ms: &[f64]) -> Value {
    let stats = Stats::of(latencies_ms);
    json!({
        "runs": latencies_ms.len(),
        "latency_ms": latencies_ms.iter().map(|l| r3(*l)).collect::<Vec<_>>(),
        "median_ms": r3(stats.median),
        "max_ms": r3(stats.max),
    })
}

fn spot(ctx: &Context, imp: &Implementation, runs: usize, pauses: &mut Pauses) -> Result<Value> {
    let dir = ctx.work.join("hup-lifecycle-spot");
    let marks_file = ctx.work.join("lifecycle-spot.marks");
    let _ = std::fs::remove_file(&marks_file);
    latency_config(ctx, &dir, "on.spot.interruption", &marks_file)?;
    post(ctx, "/_emu/imds", json!({"spot_instance_action": null}))?;
    ureq::delete(&format!("{}/_emu/requests", ctx.url)).call()?;
    let daemon = hup::start_with(ctx, imp, &dir, "lifecycle-spot", &[])?;
    polled(ctx, &daemon, "spot/instance-action", 0)?;
    let mut latencies = Vec::new();
    for i in 0..runs {
        std::thread::sleep(pauses.next());
        // Each notice differs (its time): a new notice runs the hook again.
        let notice = json!({"action": "terminate", "time": format!("2030-01-01T00:{:02}:{:02}Z", i / 60, i % 60)});
        let changed = now();
        post(ctx, "/_emu/imds", json!({"spot_instance_action": notice}))?;
        let started = wait_marks(&marks_file, i + 1)?;
        latencies.push((started - changed) * 1000.0);
    }
    daemon.stop();
    post(ctx, "/_emu/imds", json!({"spot_instance_action": null}))?;
    Ok(summary(&latencies))
}

/// Where the daemon keeps its lifecycle record.
fn lifecycle_record(ctx: &Context) -> PathBuf {
    let lib = if ctx.namespaced { PathBuf::from("/var/lib") } else { ctx.state.join("lib") };
    lib.join("cfn-hup/data/lifecycle.json")
}

fn terminate(ctx: &Context, imp: &Implementation, runs: usize, pauses: &mut Pauses) -> Result<Value> {
    let dir = ctx.work.join("hup-lifecycle-terminate");
    let marks_file = ctx.work.join("lifecycle-terminate.marks");
    let _ = std::fs::remove_file(&marks_file);
    latency_config(ctx, &dir, "on.asg.terminate", &marks_file)?;
    let mut latencies = Vec::new();
    for i in 0..runs {
        // A fresh group (the instance in service, no transition yet) and a fresh record.
        post(
            ctx,
            "/_emu/autoscaling/groups",
            json!({"name": "bench", "instances": [INSTANCE],
                   "hooks": [{"name": "drain", "transition": "terminating", "heartbeat_timeout": 300}]}),
        )?;
        let _ = std::fs::remove_file(lifecycle_record(ctx));
        ureq::delete(&format!("{}/_emu/requests", ctx.url)).call()?;
        let daemon = hup::start_with(
            ctx,
            imp,
            &dir,
            "lifecycle-terminate",
            &[("AWS_ENDPOINT_URL_AUTO_SCALING", ctx.url.as_str())],
        )?;
        polled(ctx, &daemon, "autoscaling/target-lifecycle-state", 0)?;
        std::thread::sleep(pauses.next());
        let changed = now();
        post(ctx, "/_emu/autoscaling/terminate", json!({"instance": INSTANCE}))?;
        let started = wait_marks(&marks_file, i + 1)?;
        latencies.push((started - changed) * 1000.0);
        // Let it complete the hook before it stops.
        let deadline = Instant::now() + Duration::from_secs(10);
        while get(ctx, "/_emu/autoscaling")?["completions"].as_array().map_or(0, Vec::len) == 0
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        daemon.stop();
    }
    ureq::delete(&format!("{}/_emu/autoscaling", ctx.url)).call()?;
    Ok(summary(&latencies))
}

pub fn latency(ctx: &Context, imp: &Implementation, settings: &Settings) -> Value {
    let mut pauses = Pauses(now().to_bits());
    let spot = spot(ctx, imp, settings.spot_runs, &mut pauses).unwrap_or_else(|e| json!({"error": format!("{e:#}")}));
    let terminate = terminate(ctx, imp, settings.terminate_runs, &mut pauses)
        .unwrap_or_else(|e| json!({"error": format!("{e:#}")}));
    json!({"lifecycle_interval_s": INTERVAL_S, "target_ms": INTERVAL_S * 1000.0 + 100.0, "spot": spot, "terminate": terminate})
}

pub fn idle_measure(ctx: &Context, imp: &Implementation, settings: &Settings) -> Value {
    idle(ctx, imp, settings).unwrap_or_else(|e| json!({"error": format!("{e:#}")}))
}
