//! The systemd test root (tests/systemd.rs, tests/scenario.rs): the isolated Debian root
//! of xtask/src/testroot.rs plus `systemd-sysv` and `dbus`, so that real systemd can
//! boot as PID 1 of a private PID namespace (`/lib/systemd/systemd --system` in a chroot,
//! `container=other`). Kept apart from the Debian root rather than added to it: the
//! SysV tests keep a root without an init system, and the Debian root's cache stays
//! valid (no rebuild for everyone).
//!
//! Made by copying the Debian root (about 270 MB, a few seconds) and installing the two
//! packages from the Debian mirror through a source list used only for that install;
//! afterwards the root again knows only its local repository. Built once into
//! `target/testroot/bookworm-systemd` and reused; tests overlay it. Delete the
//! directory to rebuild it. `CFN_TESTROOT_MIRROR` picks another mirror.

use crate::testroot::{self, BuildLock, chroot};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Bump when the contents change, so old caches are rebuilt.
pub const MARKER: &str = ".cfn-testroot-systemd-v1";
const PACKAGES: &str = "systemd-sysv dbus";

pub fn path() -> PathBuf {
    testroot::path().with_file_name("bookworm-systemd")
}

/// The cached systemd root, built from `base` (the Debian root) first when missing.
pub fn ensure(base: &Path) -> Result<PathBuf> {
    let root = path();
    if root.join(MARKER).is_file() {
        return Ok(root);
    }
    let _lock = BuildLock::acquire(&root.with_extension("lock"))?;
    if root.join(MARKER).is_file() {
        return Ok(root);
    }
    let started = Instant::now();
    eprintln!("xtask: building the systemd test root in {} (once)", root.display());
    let building = root.with_extension("building");
    if building.exists() {
        std::fs::remove_dir_all(&building).context("remove a half-built root")?;
    }
    std::fs::create_dir_all(&building)?;
    let status =
        Command::new("cp").arg("-a").arg(format!("{}/.", base.display())).arg(&building).status().context("run cp")?;
    if !status.success() {
        bail!("could not copy {} to {}", base.display(), building.display());
    }
    let mirror = std::env::var("CFN_TESTROOT_MIRROR").unwrap_or_else(|_| "http://deb.debian.org/debian".into());
    std::fs::write(building.join("tmp/mirror.list"), format!("deb {mirror} bookworm main\n"))?;
    // The mirror's lists only for this install, then back to the local repository alone.
    chroot(
        &building,
        &format!(
            "set -e; mirror='-o Dir::Etc::SourceList=/tmp/mirror.list -o Dir::Etc::SourceParts=/dev/null'; \
             apt-get -q $mirror update >/dev/null; \
             apt-get -q -y $mirror install --no-install-recommends {PACKAGES} >/dev/null; \
             rm -rf /var/lib/apt/lists/* /tmp/mirror.list; apt-get -q update >/dev/null; apt-get clean"
        ),
    )?;
    std::fs::write(building.join(MARKER), format!("{PACKAGES}\n"))?;
    let old = root.with_extension(format!("old-{}", std::process::id()));
    if root.exists() {
        std::fs::rename(&root, &old).context("move the older root aside")?;
    }
    std::fs::rename(&building, &root)?;
    if old.exists() {
        std::fs::remove_dir_all(&old).context("remove the older root")?;
    }
    eprintln!("xtask: systemd test root built in {:.0} s", started.elapsed().as_secs_f64());
    Ok(root)
}
