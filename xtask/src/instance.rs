//! A test instance: an overlay of a cached test root (xtask/src/testroot.rs,
//! xtask/src/systemd_root.rs) booted in private mount, PID and network namespaces,
//! with `chroot` into the overlay. Its init is either a shell that reaps orphans (the
//! Debian root, SysV scripts) or real systemd as PID 1 (the systemd root, with
//! `container=other`, as systemd runs in a container). Commands enter it with
//! `nsenter`. Shared by the scenario (xtask/src/scenario.rs) and tests/systemd.rs, which
//! include this file with `#[path]`.
//!
//! Teardown is by construction: every process of the instance lives in its PID
//! namespace, whose init is killed on drop (and, through `PR_SET_PDEATHSIG` and
//! `unshare --kill-child`, when the starting thread dies); the mounts live in the
//! instance's mount namespace.
#![allow(dead_code)]

use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What runs as PID 1 of the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// A shell that reaps orphans: services are SysV scripts started by hand.
    Shell,
    /// `/lib/systemd/systemd --system` (needs the systemd root).
    Systemd,
}

/// Where the overlay's layers live, and the files the instance leaves outside it.
pub struct Layers {
    /// The cached root, never modified.
    pub lower: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
    pub merged: PathBuf,
    /// The init's output (systemd's console).
    pub boot_log: PathBuf,
    /// Where `exec` collects a command's output.
    pub exec_out: PathBuf,
}

impl Layers {
    /// The layers in `dir/upper`, `dir/work`, `dir/merged`, created empty.
    pub fn under(lower: &Path, dir: &Path) -> Result<Layers> {
        let [upper, work, merged] = ["upper", "work", "merged"].map(|d| dir.join(d));
        for d in [&upper, &work, &merged] {
            std::fs::create_dir_all(d)?;
        }
        Ok(Layers {
            lower: lower.to_path_buf(),
            upper,
            work,
            merged,
            boot_log: dir.join("instance-boot.log"),
            exec_out: dir.join("exec.out"),
        })
    }

    /// Writes a file into the root before it boots (in the upper layer).
    pub fn put(&self, path: &str, content: &[u8], mode: u32) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let target = self.upper.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().context("an absolute path")?)?;
        std::fs::write(&target, content)?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
        Ok(())
    }

    /// A file the instance left in its root (from the upper layer; empty if none).
    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.upper.join(path.trim_start_matches('/'))).unwrap_or_default()
    }
}

pub struct Instance {
    unshare: Child,
    pub pid1: i32,
    exec_out: PathBuf,
}

impl Instance {
    /// Boots the instance; `binds` are host files bind-mounted over files of the root
    /// (which must exist: `Layers::put` an empty one). With systemd, returns once
    /// `systemctl is-system-running --wait` says the boot is over.
    pub fn boot(layers: &Layers, init: Init, binds: &[(&Path, &str)]) -> Result<Instance> {
        let outside = r#"
set -e
mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$UPPER,workdir=$WORK" "$MERGED"
mount -t proc proc "$MERGED/proc"
mount --bind /dev "$MERGED/dev"
mount -t tmpfs tmpfs "$MERGED/run"
while [ $# -gt 0 ]; do mount --bind "$1" "$MERGED$2"; shift 2; done
ip link set lo up
echo ready
exec </dev/null >&2
if [ "$INIT" = systemd ]; then
  mount -t sysfs sysfs "$MERGED/sys"
  exec chroot "$MERGED" /usr/bin/env -i container=other PATH="$CHROOT_PATH" LANG=C.UTF-8 TZ=UTC \
    /lib/systemd/systemd --system
fi
exec chroot "$MERGED" /usr/bin/env -i PATH="$CHROOT_PATH" HOME=/root LANG=C.UTF-8 TZ=UTC /bin/bash -c \
  'exec >/dev/null 2>&1; while :; do sleep 1 & wait $!; done'
"#;
        let mut cmd = Command::new("unshare");
        cmd.args(["--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--net"])
            .args(["sh", "-c", outside, "sh"])
            .args(binds.iter().flat_map(|(host, inside)| [host.as_os_str(), inside.as_ref()]))
            .env("LOWER", &layers.lower)
            .env("UPPER", &layers.upper)
            .env("WORK", &layers.work)
            .env("MERGED", &layers.merged)
            .env("CHROOT_PATH", PATH)
            .env("INIT", if init == Init::Systemd { "systemd" } else { "shell" })
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&layers.boot_log)?);
        die_with_parent(&mut cmd);
        let mut unshare = cmd.spawn().context("run unshare")?;
        let mut line = String::new();
        BufReader::new(unshare.stdout.take().expect("piped")).read_line(&mut line)?;
        let boot_log = || std::fs::read_to_string(&layers.boot_log).unwrap_or_default();
        if line.trim() != "ready" {
            let _ = unshare.kill();
            let _ = unshare.wait();
            bail!("the instance did not boot: {}", boot_log());
        }
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", unshare.id()))?;
        let Some(pid1) = children.split_whitespace().next().and_then(|p| p.parse().ok()) else {
            bail!("the instance's init is missing: {}", boot_log());
        };
        let instance = Instance { unshare, pid1, exec_out: layers.exec_out.clone() };
        if init == Init::Systemd {
            instance.wait_for_systemd().with_context(|| format!("systemd's console:\n{}", boot_log()))?;
        }
        Ok(instance)
    }

    /// Waits until systemd has finished booting: `running`, or `degraded` when a unit
    /// that needs more than a container offers (logind, say) failed.
    fn wait_for_systemd(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            // Until PID 1 is systemd, nsenter's root is not yet the chroot's (and the
            // systemctl there could answer for another manager).
            let comm = std::fs::read_to_string(format!("/proc/{}/comm", self.pid1)).unwrap_or_default();
            if comm.trim() == "systemd" {
                let (_, state) = self.exec("timeout 30 systemctl is-system-running --wait 2>&1")?;
                let state = state.trim().to_string();
                if state == "running" || state == "degraded" {
                    return Ok(());
                }
                if std::time::Instant::now() > deadline {
                    bail!("systemd did not finish booting: `systemctl is-system-running` says {state:?}");
                }
            }
            if std::time::Instant::now() > deadline {
                bail!("PID 1 of the instance is not systemd: {comm:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// Runs a bash script as root inside the instance (all its namespaces, its root, a
    /// clean environment); returns the exit code and the merged output. The output goes
    /// through a file, so daemons started by the script cannot hold a pipe open.
    pub fn exec(&self, script: &str) -> Result<(i32, String)> {
        let file = File::create(&self.exec_out)?;
        let status = Command::new("nsenter")
            .args(["--target", &self.pid1.to_string(), "--mount", "--pid", "--net", "--root", "--wd", "--"])
            .args(["/usr/bin/env", "-i", &format!("PATH={PATH}"), "HOME=/root", "LANG=C.UTF-8", "TZ=UTC"])
            .args(["/bin/bash", "-c", script])
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .status()
            .context("run nsenter")?;
        Ok((status.code().unwrap_or(-1), std::fs::read_to_string(&self.exec_out).unwrap_or_default()))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: plain kill(2); the init of a PID namespace takes everything in it along.
        unsafe { libc::kill(self.pid1, libc::SIGKILL) };
        let _ = self.unshare.kill();
        let _ = self.unshare.wait();
    }
}

/// Kills the process with SIGKILL when the thread that started it ends (the calling
/// thread, or the whole process when it dies).
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
