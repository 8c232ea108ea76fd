//! cfn-hup under faults (issue 13): the real service, in the foreground with a 1 s
//! interval, against the emulator answering DescribeStackResource with server errors
//! (500), throttling (400 Throttling, 503), timeouts (answers later than the attempt
//! timeout) and faults flapping on and off, while the stack's metadata is updated again
//! and again: in calm, and in the middle of each fault period.
//!
//! Checked from the hook's own record (its action appends the metadata it saw) and the
//! emulator's request journal (HUP-DET-01, HUP-DET-03, HUP-RUN-03, NET-03, NET-04):
//! - every metadata change runs its hook exactly once, and a hook whose path never
//!   changes never runs;
//! - no pass makes more attempts than the service's retry policy allows, a pass retries
//!   only after a failure and gives up only when its tries are spent, and the delays
//!   before the retries stay under the policy's ceilings and vary (jitter);
//! - the service's resident memory, sampled from /proc, stays flat.
//!
//! The normal suite runs one round of the fault periods (about 35 s);
//! `cargo xtask soak --minutes M` runs rounds for M minutes (`CFN_SOAK_SECONDS`) and
//! writes the figures to `CFN_SOAK_REPORT`. The service signs with the instance
//! identity, so everything runs in a private network namespace (IMDS at its real
//! address is the emulator's). Time is compressed: the interval is 1 s instead of
//! minutes, and each attempt times out after 1.5 s instead of 60 s (both test aids).

mod common;
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the soak runs, in seconds; without it, one round.
const SOAK_SECONDS: &str = "CFN_SOAK_SECONDS";
/// Where to write the figures as JSON (optional; the service's log goes beside them).
const SOAK_REPORT: &str = "CFN_SOAK_REPORT";

const STACK: &str = "soak";
const PORT: u16 = 5000;
const HOOK: &str = "soak-hook";
const HOOK_PATH: &str = "Resources.Instance.Metadata.soak";
const UNTOUCHED_PATH: &str = "Resources.Instance.Metadata.constant";

/// The attempt timeout of the service (the test aid), and how late a timeout fault answers.
const ATTEMPT_TIMEOUT: f64 = 1.5;
const LATE_ANSWER: f64 = 2.5;
/// The service's retry policy (`SERVICE_RETRY`, crates/hooks/src/service_loop.rs, after
/// NET-03): three tries per call within a pass; retry k waits random() × (2^k − 1) s.
const TRIES_PER_PASS: usize = 3;
const RETRY_CEILINGS: [f64; 2] = [1.0, 3.0];
/// What a retry's gap may have beyond its delay (and the timeout, after a timeout):
/// latency and the timer's precision.
const LATENCY_SLACK: f64 = 0.3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    ServerError,
    Throttling,
    Unavailable,
    Timeout,
}

impl Fault {
    const ALL: [Fault; 4] = [Fault::ServerError, Fault::Throttling, Fault::Unavailable, Fault::Timeout];

    fn name(self) -> &'static str {
        match self {
            Fault::ServerError => "500 InternalFailure",
            Fault::Throttling => "400 Throttling",
            Fault::Unavailable => "503 ServiceUnavailable",
            Fault::Timeout => "timeout",
        }
    }

    /// A rule for the stack's DescribeStackResource calls, active from `after` seconds
    /// from now for `lasting` seconds, answering a matching call with `probability`, for
    /// the first `count` such calls (-1: all).
    fn rule(self, after: f64, lasting: f64, probability: f64, count: i64) -> Value {
        let mut rule = json!({
            "action": "DescribeStackResource", "stack": STACK, "count": count,
            "after": after, "for": lasting, "probability": probability,
        });
        let answer = match self {
            Fault::ServerError => {
                json!({"status": 500, "code": "InternalFailure", "message": "soak: server error", "type": "Receiver"})
            }
            Fault::Throttling => json!({"status": 400, "code": "Throttling", "message": "Rate exceeded"}),
            Fault::Unavailable => {
                json!({"status": 503, "code": "ServiceUnavailable", "message": "soak: unavailable", "type": "Receiver"})
            }
            // The real answer, but only after the client has given up.
            Fault::Timeout => json!({"delay": LATE_ANSWER, "passthrough": true}),
        };
        rule.as_object_mut().unwrap().extend(answer.as_object().unwrap().clone());
        rule
    }
}

/// A stretch of the soak: fault rules over `length` seconds, and a metadata update in
/// its middle.
struct Period {
    name: &'static str,
    length: f64,
    /// (fault, from when (s into the period), for how long (s), probability, count): see
    /// [`Fault::rule`].
    faults: Vec<(Fault, f64, f64, f64, i64)>,
}

/// One round: calm, then each kind of fault, then faults flapping on and off. Rounds
/// differ in their lengths (1×, 1.5×, 2×) and in the order the flapping faults come in.
fn round(number: usize) -> Vec<Period> {
    let scale = 1.0 + 0.5 * (number % 3) as f64;
    let period = |name, length: f64, faults: &dyn Fn(f64) -> Vec<(Fault, f64, f64, f64, i64)>| Period {
        name,
        length: length * scale,
        faults: faults(length * scale),
    };
    vec![
        period("calm", 0.0, &|_| vec![]),
        period("server errors", 6.0, &|length| vec![(Fault::ServerError, 0.0, length, 1.0, -1)]),
        // Every call fails: the first with 503, the others throttled. A call is sure to
        // come in the period (the longest gap between two calls after a 500 is the 3 s
        // ceiling of the second retry); a 503 at random could miss it, as a share of the
        // calls once did.
        period("throttling", 4.0, &|length| {
            vec![(Fault::Unavailable, 0.0, length, 1.0, 1), (Fault::Throttling, 0.0, length, 1.0, -1)]
        }),
        period("timeouts", 5.0, &|length| vec![(Fault::Timeout, 0.0, length, 1.0, -1)]),
        // On for a second (most calls failing), off for a second, each time another kind.
        period("flapping", 6.0, &|length| {
            (0..)
                .map(|k| 2.0 * k as f64)
                .take_while(|at| at + 1.0 <= length)
                .enumerate()
                .map(|(k, at)| (Fault::ALL[(number + k) % Fault::ALL.len()], at, 1.0, 0.8, -1))
                .collect()
        }),
    ]
}

fn metadata(version: usize, period: &str) -> Value {
    json!({"soak": {"version": version, "period": period}, "constant": "never changes"})
}

/// The running service, killed if the test fails.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The service's resident memory (VmRSS, KiB), sampled every 250 ms by a thread.
struct RssSampler {
    samples: Arc<Mutex<Vec<u64>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    fn start(pid: u32) -> RssSampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (into, stopped) = (samples.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let rss = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
                into.lock().unwrap().extend(rss);
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        RssSampler { samples, stop, thread: Some(thread) }
    }

    fn finish(mut self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.samples.lock().unwrap().clone()
    }
}

/// The hook's runs, in the order they wrote their lines: when each ran (epoch seconds)
/// and the version of the metadata it saw.
fn hook_runs(record: &std::path::Path) -> Vec<(f64, u64)> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let parsed = line.split_once(' ').and_then(|(at, seen)| {
                let seen: Value = serde_json::from_str(seen).ok()?;
                Some((at.parse::<f64>().ok()?, seen["version"].as_u64()?))
            });
            parsed.unwrap_or_else(|| panic!("not a line of the hook's record: {line:?}"))
        })
        .collect()
}

fn epoch_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// When each pass started, in epoch seconds: the first of the service's "Describing
/// resource" lines (DEBUG, written before each attempt, as the reference does) after the
/// service's `Next pass in` line that ends the pass before. The log is written in UTC here
/// (TZ=UTC), to the millisecond, before the pass's first call leaves.
fn pass_starts(log: &str) -> Vec<f64> {
    let marker = format!("[DEBUG] Describing resource Instance in stack {STACK}");
    let mut in_pass = false;
    log.lines()
        .filter(|l| {
            if l.get(24..).is_some_and(|m| m.starts_with("[DEBUG] Next pass in ")) {
                in_pass = false;
            }
            let starts = !in_pass && l.get(24..) == Some(marker.as_str());
            in_pass |= starts;
            starts
        })
        .map(|l| {
            let at = chrono::NaiveDateTime::parse_from_str(&l[..23], "%Y-%m-%d %H:%M:%S,%3f")
                .unwrap_or_else(|e| panic!("log time in {l:?}: {e}"));
            at.and_utc().timestamp_millis() as f64 / 1000.0
        })
        .collect()
}

/// One DescribeStackResource the emulator received.
struct Attempt {
    time: f64,
    fault: Option<Fault>,
}

#[derive(Default)]
struct Spread {
    values: Vec<f64>,
}

impl Spread {
    fn summary(&self) -> Value {
        let mut v = self.values.clone();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v.get(((v.len() - 1) as f64 * q).round() as usize).copied().unwrap_or(f64::NAN);
        let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({"n": v.len(), "min": r3(at(0.0)), "median": r3(at(0.5)), "max": r3(at(1.0))})
    }
}

#[test]
fn under_faults_each_change_runs_its_hook_once_retries_are_bounded_and_jittered_and_memory_is_flat() {
    let soak = Duration::from_secs_f64(std::env::var(SOAK_SECONDS).ok().and_then(|s| s.parse().ok()).unwrap_or(0.0));
    let report = in_private_network(move || soak_for(soak));
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
    if let Some(path) = std::env::var_os(SOAK_REPORT) {
        std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap() + "\n").unwrap();
    }
}

fn soak_for(soak: Duration) -> Value {
    let started = Instant::now();
    let emulator =
        Emulator::start_at(&["--port", &PORT.to_string(), "--imds-host", "169.254.169.254", "--imds-port", "80"], PORT);
    emulator.create_stack(STACK, &instance_template(&metadata(0, "created")));
    let sandbox = Sandbox::new();
    let conf = sandbox.path("conf");
    std::fs::create_dir_all(conf.join("hooks.d")).unwrap();
    // No credentials: the instance identity signs, as on an instance.
    std::fs::write(conf.join("cfn-hup.conf"), format!("[main]\nstack={STACK}\nurl={}\n", emulator.url)).unwrap();
    let (record, untouched): (PathBuf, PathBuf) = (sandbox.path("record"), sandbox.path("untouched"));
    std::fs::write(
        conf.join("hooks.conf"),
        format!(
            "[{HOOK}]\ntriggers=post.update\npath={HOOK_PATH}\n\
             action=echo \"$(date +%s.%N) $CFN_NEW_METADATA\" >> {}\n\n\
             [untouched]\ntriggers=post.update,post.remove\npath={UNTOUCHED_PATH}\naction=echo \"$CFN_NEW_METADATA\" >> {}\n",
            record.display(),
            untouched.display()
        ),
    )
    .unwrap();

    let mut cmd = sandbox
        .cmd("cfn-hup")
        .args(["-c", conf.to_str().unwrap(), "-F", "-v"])
        .env_remove("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .env("CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS", "1")
        .env("CFN_BOOTSTRAP_HUP_ATTEMPT_TIMEOUT_SECONDS", ATTEMPT_TIMEOUT.to_string())
        .env("TZ", "UTC");
    cmd.cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut service = Service(cmd.cmd.spawn().expect("start cfn-hup -F"));
    let pid = service.0.id();
    let db = sandbox.path("lib/cfn-hup/data/metadata_db.json");
    wait_until(Duration::from_secs(20), "the first pass to record the baseline", || {
        std::fs::read_to_string(&db).is_ok_and(|text| text.contains(&format!("{HOOK}|{HOOK_PATH}")))
    });
    let rss = RssSampler::start(pid);

    // The rounds; each update waits for its hook before the next one.
    let mut faults: BTreeMap<u64, Fault> = BTreeMap::new();
    let mut pickup: BTreeMap<&str, Spread> = BTreeMap::new();
    let (mut version, mut rounds) = (0, 0);
    while rounds == 0 || started.elapsed() < soak {
        for period in round(rounds) {
            let rules: Vec<Value> = period.faults.iter().map(|(f, at, len, p, n)| f.rule(*at, *len, *p, *n)).collect();
            if !rules.is_empty() {
                let all = emulator.post_json("/_emu/faults", &json!(rules));
                // The rules just added are the last ones in the answer.
                let added = &all.as_array().unwrap()[all.as_array().unwrap().len() - rules.len()..];
                for (rule, (fault, ..)) in added.iter().zip(&period.faults) {
                    faults.insert(rule["id"].as_u64().unwrap(), *fault);
                }
            }
            let half = Duration::from_secs_f64(period.length / 2.0);
            std::thread::sleep(half);
            version += 1;
            emulator.update_stack(STACK, &instance_template(&metadata(version, period.name)));
            let updated = epoch_now();
            std::thread::sleep(half);
            let mut ran = None;
            wait_until(
                Duration::from_secs(40),
                &format!("the hook to see version {version} ({})", period.name),
                || {
                    ran = hook_runs(&record).iter().find(|(_, seen)| *seen == version as u64).map(|(at, _)| *at);
                    ran.is_some()
                },
            );
            pickup.entry(period.name).or_default().values.push(ran.unwrap() - updated);
        }
        rounds += 1;
    }
    // A few calm passes more: a change must not run its hook a second time.
    let passes_before = pass_starts(&sandbox.log("cfn-hup.log")).len();
    wait_until(Duration::from_secs(20), "three more passes", || {
        pass_starts(&sandbox.log("cfn-hup.log")).len() >= passes_before + 3
    });
    let rss = rss.finish();
    // SAFETY: signalling the service this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let status = service.0.wait().unwrap();
    let log = sandbox.log("cfn-hup.log");
    if let Some(report) = std::env::var_os(SOAK_REPORT) {
        // Kept beside the figures, whatever the checks below find.
        std::fs::write(std::path::Path::new(&report).with_file_name("cfn-hup.log"), &log).unwrap();
    }
    assert!(status.success(), "cfn-hup stopped with {status:?}\n{log}");
    assert!(!log.contains("panicked"), "{log}");

    // Every change ran the hook exactly once, in order; the other hook never ran.
    let versions: Vec<u64> = hook_runs(&record).iter().map(|(_, seen)| *seen).collect();
    assert_eq!(versions, (1..=version as u64).collect::<Vec<_>>(), "hook runs by version\n{log}");
    assert!(!untouched.exists(), "a hook whose path never changed ran: {}", read(&untouched));

    // The journal, split into passes by the log.
    let journal = emulator.get_json("/_emu/requests?kind=cloudformation&action=DescribeStackResource");
    let attempts: Vec<Attempt> = journal
        .as_array()
        .unwrap()
        .iter()
        .map(|r| Attempt { time: r["time"].as_f64().unwrap(), fault: r["fault"].as_u64().map(|id| faults[&id]) })
        .collect();
    let starts = pass_starts(&log);
    let mut passes: Vec<Vec<&Attempt>> = vec![Vec::new(); starts.len()];
    for attempt in &attempts {
        let pass = starts.partition_point(|start| *start <= attempt.time);
        assert!(pass > 0, "a call at {} before the first pass started at {:?}", attempt.time, starts.first());
        passes[pass - 1].push(attempt);
    }
    let mut delays = [Spread::default(), Spread::default()];
    for (n, pass) in passes.iter().enumerate() {
        let shown =
            || format!("pass {n} at {}: {:?}", starts[n], pass.iter().map(|a| (a.time, a.fault)).collect::<Vec<_>>());
        assert!(!pass.is_empty() && pass.len() <= TRIES_PER_PASS, "{}", shown());
        assert!(pass[..pass.len() - 1].iter().all(|a| a.fault.is_some()), "a retry after a success: {}", shown());
        if pass.last().unwrap().fault.is_some() {
            assert_eq!(pass.len(), TRIES_PER_PASS, "gave up before its tries were spent: {}", shown());
        }
        for (k, pair) in pass.windows(2).enumerate() {
            // A failed answer comes at once; a timed-out attempt ends after the timeout.
            let failed_after = if pair[0].fault == Some(Fault::Timeout) { ATTEMPT_TIMEOUT } else { 0.0 };
            let delay = pair[1].time - pair[0].time - failed_after;
            assert!(
                (-LATENCY_SLACK..=RETRY_CEILINGS[k] + LATENCY_SLACK).contains(&delay),
                "retry {} after a delay of {delay:.3} s: {}",
                k + 1,
                shown()
            );
            delays[k].values.push(delay.max(0.0));
        }
    }
    // Jitter: without it, the delays before the same try would all be equal (the
    // latency varies by milliseconds). With it, four delays before try 2, uniform on
    // [0, 1 s], span less than 50 ms with a chance of 5e-4 (before try 3, on [0, 3 s], less).
    assert!(delays[0].values.len() >= 4, "too few retries to judge the jitter: {:?}", delays[0].values);
    for (k, spread) in delays.iter().enumerate().filter(|(_, d)| d.values.len() >= 4) {
        let range = spread.values.iter().cloned().fold(f64::MIN, f64::max)
            - spread.values.iter().cloned().fold(f64::MAX, f64::min);
        assert!(range >= 0.05, "the delays before try {} do not vary: {:?}", k + 2, spread.values);
    }

    let mut injected: BTreeMap<&str, usize> = Fault::ALL.iter().map(|f| (f.name(), 0)).collect();
    for fault in attempts.iter().filter_map(|a| a.fault) {
        *injected.get_mut(fault.name()).unwrap() += 1;
    }
    assert!(injected.values().all(|n| *n > 0), "every kind of fault was met: {injected:?}");

    // Memory: after the first passes, flat (the second half's peak within 1 MiB of the first's).
    assert!(rss.len() >= 8, "too few memory samples: {rss:?}");
    let (first_half, second_half) = rss.split_at(rss.len() / 2);
    let peak = |s: &[u64]| s.iter().copied().max().unwrap();
    assert!(peak(second_half) <= peak(first_half) + 1024, "resident memory grows (KiB): {rss:?}");

    let imds = emulator.get_json("/_emu/requests?kind=imds").as_array().unwrap().len();
    json!({
        "soak_minutes": (started.elapsed().as_secs_f64() / 60.0 * 100.0).round() / 100.0,
        "rounds": rounds,
        "updates": version,
        "hook_runs": versions.len(),
        "untouched_hook_runs": 0,
        "passes": passes.len(),
        "describe_calls": attempts.len(),
        "retries": attempts.len() - passes.len(),
        "max_attempts_in_a_pass": passes.iter().map(Vec::len).max(),
        "faults_injected": attempts.iter().filter(|a| a.fault.is_some()).count(),
        "faults_by_kind": injected,
        "retry_delay_seconds": {"before_try_2": delays[0].summary(), "before_try_3": delays[1].summary()},
        "update_to_hook_run_seconds": pickup.iter().map(|(k, v)| (k.to_string(), v.summary())).collect::<BTreeMap<_, _>>(),
        "rss_kib": {"first": rss[0], "max": peak(&rss), "last": rss[rss.len() - 1], "samples": rss.len()},
        "imds_requests": imds,
    })
}
