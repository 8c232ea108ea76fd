//! Workload 6: the cfn-hup daemon (SPEC §14). It is started the way an init script
//! starts it (`cfn-hup -c DIR`: it detaches and writes its pid file); its CPU time and
//! resident memory are read from /proc while the emulator's request journal tells when
//! each poll (a DescribeStackResource) has been answered.
//!
//! Two phases per implementation:
//! - idle: `interval=1` (minute) in cfn-hup.conf; after the first poll, the CPU used during
//!   an idle window, scaled to a minute, and the resident memory;
//! - polls: `CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS=1` (a test-only override): CPU per poll over
//!   N polls and the resident memory after the first and the last poll. An implementation
//!   that ignores the override is reported as such.

use super::measure::{Stats, r3, vm_kib};
use super::{Context, Implementation};
use anyhow::{Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Settings {
    pub polls: usize,
    pub idle_window: Duration,
    /// When set, the polls phase runs this long instead of for `polls` polls (the
    /// "flat over an hour" check).
    pub polls_for: Option<Duration>,
}

/// Writes the configuration directory (cfn-hup.conf + hooks.d) and the credential file.
pub fn write_config(ctx: &Context, dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("hooks.d"))?;
    let credentials = dir.join("credentials");
    std::fs::write(
        &credentials,
        format!("AWSAccessKeyId={}\nAWSSecretKey={}\n", super::ACCESS_KEY, super::SECRET_KEY),
    )?;
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600))?;
    std::fs::write(
        dir.join("cfn-hup.conf"),
        format!(
            "[main]\nstack={}\nregion=us-east-1\nurl={}\ncredential-file={}\ninterval=1\n",
            super::STACK,
            ctx.url,
            credentials.display()
        ),
    )?;
    std::fs::write(
        dir.join("hooks.d/bench.conf"),
        format!(
            "[bench-hook]\ntriggers=post.update\npath=Resources.{}.Metadata.AWS::CloudFormation::Init\naction=true\n",
            super::RESOURCE
        ),
    )?;
    Ok(())
}

/// Whether `--no-daemon` (one pass) works, with its whole-process cost.
pub fn probe(ctx: &Context, imp: &Implementation, dir: &Path) -> Result<super::measure::Sample, String> {
    let mut cmd = ctx.command(imp, "cfn-hup");
    cmd.args(["-c", &dir.display().to_string(), "--no-daemon"]);
    let out = ctx.out_path("6-probe", imp);
    let sample = super::measure::run(&mut cmd, &out).map_err(|e| format!("cfn-hup --no-daemon failed ({e})"))?;
    let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    if stderr.contains("not implemented") {
        return Err(stderr.lines().next().unwrap_or("not implemented").trim().to_string());
    }
    Ok(sample)
}

pub(super) struct Daemon {
    pid: i32,
    pid_file: PathBuf,
}

impl Daemon {
    pub(super) fn alive(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => !matches!(stat_fields(&stat).first().map(String::as_str), Some("Z") | Some("X")),
            Err(_) => false,
        }
    }

    /// (CPU ms of the whole process, VmRSS KiB, VmHWM KiB). CPU comes from the process's
    /// CPU-time clock (nanoseconds, dead threads included); /proc's ticks as a fallback.
    fn usage(&self) -> Result<(f64, f64, f64)> {
        let cpu = process_cpu_ms(self.pid).unwrap_or_else(|| {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
            let fields = stat_fields(&stat);
            // After the command name: utime and stime are the 12th and 13th fields.
            let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(f64::NAN);
            // SAFETY: sysconf has no preconditions.
            (ticks(11) + ticks(12)) * 1000.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
        });
        if !self.alive() {
            bail!("the daemon (pid {}) exited", self.pid);
        }
        Ok((cpu, vm_kib(self.pid, "VmRSS:"), vm_kib(self.pid, "VmHWM:")))
    }

    pub(super) fn stop(&self) {
        // SAFETY: signalling a pid we read from the daemon's pid file, checked alive.
        if self.alive() {
            unsafe { libc::kill(self.pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if self.alive() {
            // SAFETY: as above.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

fn process_cpu_ms(pid: i32) -> Option<f64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: valid pointers; the kernel checks the pid.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_getcpuclockid(pid, &mut clock) } != 0 || unsafe { libc::clock_gettime(clock, &mut ts) } != 0
    {
        return None;
    }
    Some(ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6)
}

/// The fields of /proc/PID/stat after the parenthesised command name.
fn stat_fields(stat: &str) -> Vec<String> {
    let rest = stat.rfind(')').map_or(stat, |i| &stat[i + 1..]);
    rest.split_whitespace().map(String::from).collect()
}

fn start(ctx: &Context, imp: &Implementation, dir: &Path, short_interval: bool) -> Result<Daemon> {
    let env: &[(&str, &str)] = if short_interval { &[("CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS", "1")] } else { &[] };
    start_with(ctx, imp, dir, if short_interval { "6-daemon-polls" } else { "6-daemon-idle" }, env)
}

/// Starts the daemon with `env` added to the benchmark's environment; its launcher's
/// output goes to `out_id`.
pub(super) fn start_with(
    ctx: &Context,
    imp: &Implementation,
    dir: &Path,
    out_id: &str,
    env: &[(&str, &str)],
) -> Result<Daemon> {
    let pid_file = ctx.run_dir(imp).join("cfn-hup.pid");
    if let Ok(old) = std::fs::read_to_string(&pid_file) {
        bail!("a cfn-hup pid file already exists at {} (pid {})", pid_file.display(), old.trim());
    }
    let mut cmd = ctx.command(imp, "cfn-hup");
    cmd.args(["-c", &dir.display().to_string()]);
    cmd.envs(env.iter().copied());
    let out = ctx.out_path(out_id, imp);
    let launcher = super::measure::run(&mut cmd, &out);
    if let Err(e) = launcher {
        bail!("starting the daemon failed: {e}");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse::<i32>().ok()) {
            return Ok(Daemon { pid, pid_file });
        }
        if Instant::now() > deadline {
            bail!("no pid file at {} within 20 s after starting the daemon", pid_file.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Counts the answered DescribeStackResource requests in the emulator's journal. It
/// reads only the entries after the last one counted, so an hour of polls costs the
/// emulator no more per check than the first minute.
struct PollCounter {
    since: u64,
    answered: usize,
}

impl PollCounter {
    /// Clears the journal and starts counting from zero.
    fn start(ctx: &Context) -> Result<PollCounter> {
        ureq::delete(&format!("{}/_emu/requests", ctx.url)).call()?;
        Ok(PollCounter { since: 0, answered: 0 })
    }

    fn answered(&mut self, ctx: &Context) -> Result<usize> {
        let body = ureq::get(&format!("{}/_emu/requests?action=DescribeStackResource&since={}", ctx.url, self.since))
            .call()?
            .body_mut()
            .read_to_string()?;
        let entries: Vec<Value> = serde_json::from_str(&body)?;
        // Entries are in order; one still waiting for its answer is read again next time.
        for entry in &entries {
            if entry["status"].is_null() {
                break;
            }
            self.answered += 1;
            self.since = entry["seq"].as_u64().unwrap_or(self.since);
        }
        Ok(self.answered)
    }
}

/// Waits until more than `seen` polls have been answered (or the deadline passes), then
/// lets the daemon finish processing the answer.
fn wait_poll(
    ctx: &Context,
    counter: &mut PollCounter,
    daemon: &Daemon,
    seen: usize,
    deadline: Instant,
) -> Result<Option<usize>> {
    while Instant::now() < deadline {
        if !daemon.alive() {
            bail!("the daemon (pid {}) exited", daemon.pid);
        }
        let n = counter.answered(ctx)?;
        if n > seen {
            std::thread::sleep(Duration::from_millis(150));
            return Ok(Some(n));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(None)
}

pub(super) fn idle_phase(ctx: &Context, imp: &Implementation, dir: &Path, settings: &Settings) -> Result<Value> {
    let mut counter = PollCounter::start(ctx)?;
    let daemon = start(ctx, imp, dir, false)?;
    let Some(_) = wait_poll(ctx, &mut counter, &daemon, 0, Instant::now() + Duration::from_secs(30))? else {
        bail!("no first poll within 30 s");
    };
    let (cpu0, rss0, _) = daemon.usage()?;
    let start = Instant::now();
    std::thread::sleep(settings.idle_window);
    let (cpu1, rss1, hwm) = daemon.usage()?;
    let window = start.elapsed().as_secs_f64();
    let polls = counter.answered(ctx)?;
    daemon.stop();
    let per_minute = (cpu1 - cpu0) * 60.0 / window;
    Ok(json!({
        "window_s": r3(window),
        "polls_in_window": polls.saturating_sub(1),
        "cpu_ms_after_first_poll": r3(cpu0),
        "cpu_ms_per_idle_minute": r3(per_minute),
        "rss_kib_after_first_poll": r3(rss0),
        "rss_kib": r3(rss1),
        "hwm_kib": r3(hwm),
    }))
}

fn polls_phase(ctx: &Context, imp: &Implementation, dir: &Path, settings: &Settings) -> Result<Value> {
    let mut counter = PollCounter::start(ctx)?;
    let daemon = start(ctx, imp, dir, true)?;
    let Some(mut seen) = wait_poll(ctx, &mut counter, &daemon, 0, Instant::now() + Duration::from_secs(30))? else {
        bail!("no first poll within 30 s");
    };
    let started = Instant::now();
    let (cpu_first, rss_first, _) = daemon.usage()?;
    let (mut cpu_prev, mut per_poll, mut rss, mut hwm) = (cpu_first, Vec::new(), vec![rss_first], f64::NAN);
    // (minutes since the first poll, RSS KiB), one sample per minute.
    let mut by_minute = vec![(0u64, rss_first)];
    let first_seen = seen;
    let mut note = None;
    let more = |seen: usize| match settings.polls_for {
        Some(duration) => started.elapsed() < duration,
        None => seen - first_seen < settings.polls,
    };
    while more(seen) {
        match wait_poll(ctx, &mut counter, &daemon, seen, Instant::now() + Duration::from_secs(5))? {
            Some(n) => {
                let (cpu, now, h) = daemon.usage()?;
                per_poll.push((cpu - cpu_prev) / (n - seen) as f64);
                rss.push(now);
                let minute = started.elapsed().as_secs() / 60;
                if by_minute.last().is_some_and(|(m, _)| *m < minute) {
                    by_minute.push((minute, now));
                }
                (cpu_prev, hwm, seen) = (cpu, h, n);
            }
            None => {
                note = Some("no poll within 5 s: CFN_BOOTSTRAP_HUP_INTERVAL_SECONDS is not honoured".to_string());
                break;
            }
        }
    }
    daemon.stop();
    let polls = seen - first_seen;
    Ok(json!({
        "polls": polls,
        "seconds": r3(started.elapsed().as_secs_f64()),
        "note": note,
        "cpu_ms_per_poll": if polls > 0 { r3((cpu_prev - cpu_first) / polls as f64) } else { Value::Null },
        "cpu_ms_per_poll_spread": if polls > 0 { Stats::of(&per_poll).json() } else { Value::Null },
        "rss_kib_after_first_poll": r3(rss_first),
        "rss_kib_after_middle_poll": r3(rss[rss.len() / 2]),
        "rss_kib_after_last_poll": r3(rss[rss.len() - 1]),
        "rss_kib_after_each_poll": rss.iter().map(|k| r3(*k)).collect::<Vec<_>>(),
        "rss_kib_by_minute": by_minute.iter().map(|(m, k)| json!([m, r3(*k)])).collect::<Vec<_>>(),
        "rss_kib_max": r3(rss.iter().copied().fold(f64::NAN, f64::max)),
        "hwm_kib": r3(hwm),
    }))
}

/// Both phases for one implementation, or the reason it could not run.
pub fn measure(ctx: &Context, imp: &Implementation, settings: &Settings) -> Value {
    let dir = ctx.work.join(format!("hup-{}", imp.label));
    if let Err(e) = write_config(ctx, &dir) {
        return json!({"available": false, "reason": format!("could not write the configuration: {e:#}")});
    }
    let one_pass = match probe(ctx, imp, &dir) {
        Ok(sample) => sample,
        Err(reason) => return json!({"available": false, "reason": reason}),
    };
    let idle = idle_phase(ctx, imp, &dir, settings).unwrap_or_else(|e| json!({"error": format!("{e:#}")}));
    let polls = polls_phase(ctx, imp, &dir, settings).unwrap_or_else(|e| json!({"error": format!("{e:#}")}));
    json!({
        "available": true,
        "no_daemon_one_pass": {"wall_ms": r3(one_pass.wall_ms), "cpu_ms": r3(one_pass.cpu_ms()),
                               "maxrss_kib": r3(one_pass.maxrss_kib)},
        "idle": idle,
        "polls": polls,
    })
}
