//! Whole-process measurements: wall time around spawn..reap, CPU time from the child's
//! `wait4` rusage (which also counts the children it reaped, such as the shells running
//! cfn-init's commands), and peak resident memory.
//!
//! Peak memory: `ru_maxrss` of an exec'd child also holds the memory of the process
//! image it replaced, i.e. the spawner's (`posix_spawn` shares our address space until
//! the exec; `fork` copies it), which would put a floor of this xtask's own size under
//! every figure. So the child is traced (`PTRACE_TRACEME`, only the exec and exit events
//! stop it) and its `VmHWM` is read at the exit stop, when its final image's peak is
//! complete; `ru_maxrss` is kept in the report as `rusage_maxrss_kib`.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub wall_ms: f64,
    pub user_ms: f64,
    pub sys_ms: f64,
    /// VmHWM of the tool's process at exit (NaN when tracing was not possible).
    pub maxrss_kib: f64,
    /// `ru_maxrss` from wait4 (includes the spawner's image and reaped children).
    pub rusage_maxrss_kib: f64,
}

impl Sample {
    pub fn cpu_ms(&self) -> f64 {
        self.user_ms + self.sys_ms
    }
}

fn timeval_ms(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 * 1000.0 + tv.tv_usec as f64 / 1000.0
}

/// `VmHWM` of a live (or exit-stopped) process, in KiB.
pub fn vm_kib(pid: i32, key: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|l| l.strip_prefix(key)).and_then(|r| r.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(f64::NAN)
}

fn ptrace(request: libc::c_uint, pid: libc::pid_t, data: usize) -> libc::c_long {
    // SAFETY: requests used here take no pointers (data is an option mask or signal number).
    unsafe { libc::ptrace(request, pid, std::ptr::null_mut::<libc::c_void>(), data as *mut libc::c_void) }
}

/// Whether children are traced for their peak memory: not when `CFN_BENCH_NO_PTRACE=1`
/// (then the peak is `ru_maxrss`, spawner included).
fn tracing() -> bool {
    std::env::var_os("CFN_BENCH_NO_PTRACE").is_none_or(|v| v != "1")
}

/// Runs `cmd` to completion with stdin from /dev/null and stdout/stderr in
/// `<out>.stdout`/`<out>.stderr`; fails unless it exits 0.
pub fn run(cmd: &mut Command, out: &Path) -> Result<Sample> {
    run_exiting(cmd, out, &[0])
}

/// [`run`] of a command whose work ends in one of the exit codes `exits`.
pub fn run_exiting(cmd: &mut Command, out: &Path, exits: &[i32]) -> Result<Sample> {
    let stdout_path = out.with_extension("stdout");
    let stderr_path = out.with_extension("stderr");
    cmd.stdin(Stdio::null()).stdout(File::create(&stdout_path)?).stderr(File::create(&stderr_path)?);
    if tracing() {
        // SAFETY: only an async-signal-safe syscall between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if ptrace(libc::PTRACE_TRACEME, 0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let start = Instant::now();
    let child = cmd.spawn().with_context(|| format!("start {:?}", cmd.get_program()))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value to be overwritten by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let (mut traced, mut hwm) = (false, f64::NAN);
    loop {
        // SAFETY: pid is our own unreaped child; the pointers are valid for the call.
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::__WALL, &mut usage) };
        if reaped != pid {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            bail!("wait4: {err}");
        }
        if !libc::WIFSTOPPED(status) {
            break;
        }
        let (signal, event) = (libc::WSTOPSIG(status), (status >> 16) & 0xff);
        let mut deliver = 0;
        if signal == libc::SIGTRAP && !traced {
            // The stop after the first exec: from now on only events stop it.
            let options = libc::PTRACE_O_TRACEEXIT | libc::PTRACE_O_TRACEEXEC | libc::PTRACE_O_EXITKILL;
            ptrace(libc::PTRACE_SETOPTIONS, pid, options as usize);
            traced = true;
        } else if signal == libc::SIGTRAP && event == libc::PTRACE_EVENT_EXIT {
            hwm = vm_kib(pid, "VmHWM:");
        } else if !(signal == libc::SIGTRAP && event != 0) {
            deliver = signal as usize;
        }
        ptrace(libc::PTRACE_CONT, pid, deliver);
    }
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0;
    drop(child);
    if !(libc::WIFEXITED(status) && exits.contains(&libc::WEXITSTATUS(status))) {
        let how = if libc::WIFEXITED(status) {
            format!("exit code {}", libc::WEXITSTATUS(status))
        } else {
            format!("signal {}", libc::WTERMSIG(status))
        };
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
        bail!("{how}: {}", if tail.is_empty() { "(no stderr)".to_string() } else { tail.join(" | ") });
    }
    Ok(Sample {
        wall_ms,
        user_ms: timeval_ms(usage.ru_utime),
        sys_ms: timeval_ms(usage.ru_stime),
        maxrss_kib: if traced { hwm } else { usage.ru_maxrss as f64 },
        rusage_maxrss_kib: usage.ru_maxrss as f64,
    })
}

/// Median and spread of a set of values.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    pub fn of(values: &[f64]) -> Stats {
        let mut v: Vec<f64> = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        if v.is_empty() {
            return Stats { median: f64::NAN, p10: f64::NAN, p90: f64::NAN, min: f64::NAN, max: f64::NAN };
        }
        Stats {
            median: percentile(&v, 0.5),
            p10: percentile(&v, 0.1),
            p90: percentile(&v, 0.9),
            min: v[0],
            max: v[v.len() - 1],
        }
    }

    pub fn json(&self) -> Value {
        json!({"median": r3(self.median), "p10": r3(self.p10), "p90": r3(self.p90),
               "min": r3(self.min), "max": r3(self.max)})
    }
}

/// Linear interpolation between closest ranks, on sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Rounded to 3 decimals for the report (NaN becomes null).
pub fn r3(x: f64) -> Value {
    if x.is_finite() { json!((x * 1000.0).round() / 1000.0) } else { Value::Null }
}

/// The statistics of a set of samples, per measure.
pub struct Summary {
    pub runs: usize,
    pub wall: Stats,
    pub cpu: Stats,
    pub user: Stats,
    pub sys: Stats,
    pub rss_kib: Stats,
    pub rusage_rss_kib: Stats,
}

impl Summary {
    pub fn of(samples: &[Sample]) -> Summary {
        let pick = |f: fn(&Sample) -> f64| Stats::of(&samples.iter().map(f).collect::<Vec<_>>());
        Summary {
            runs: samples.len(),
            wall: pick(|s| s.wall_ms),
            cpu: pick(|s| s.cpu_ms()),
            user: pick(|s| s.user_ms),
            sys: pick(|s| s.sys_ms),
            rss_kib: pick(|s| s.maxrss_kib),
            rusage_rss_kib: pick(|s| s.rusage_maxrss_kib),
        }
    }

    pub fn json(&self, warmup: usize) -> Value {
        json!({
            "runs": self.runs,
            "warmup": warmup,
            "wall_ms": self.wall.json(),
            "cpu_ms": self.cpu.json(),
            "user_ms": self.user.json(),
            "sys_ms": self.sys.json(),
            "maxrss_kib": self.rss_kib.json(),
            "rusage_maxrss_kib": self.rusage_rss_kib.json(),
        })
    }
}

/// `syncfs` on the file system holding `dir`.
pub fn syncfs(dir: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let handle = File::open(dir).with_context(|| format!("open {}", dir.display()))?;
    // SAFETY: a valid open descriptor.
    if unsafe { libc::syncfs(handle.as_raw_fd()) } != 0 {
        bail!("syncfs {}: {}", dir.display(), std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let s = Stats::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 5.0));
        assert!((s.p10 - 1.4).abs() < 1e-9 && (s.p90 - 4.6).abs() < 1e-9);
    }
}
