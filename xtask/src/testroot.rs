//! The isolated Debian root the system tests of cfn-init run in (tests/init_system.rs):
//! a debootstrap'd bookworm `minbase` with systemd, sysvinit-utils (`service`),
//! init-system-helpers (`update-rc.d`) and passwd, plus a local apt repository at
//! `/srv/cfn-repo` (a `file:` source, trusted) holding a real small Debian package
//! (`hello`, downloaded once) and two versions of a tiny package built here
//! (`cfn-tiny` 1.0-1 and 2.0-1). The root's apt lists only know that repository, so
//! tests install packages offline and can pin versions. Debian's `rpm` is included too,
//! with a tiny RPM built by its `rpmbuild` at `/srv/cfn-rpms`, so the `rpm` manager is
//! exercised with the real tool. Since v3 the repository also holds `nginx` and the
//! packages it needs beyond the base system (about 3 MB, fetched with
//! `apt-get install --download-only`), for the end-to-end scenario (tests/scenario.rs).
//! Since v4 it holds dnf, zypper, pip3 and gem with local sources (package_managers.rs).
//!
//! Built once into `target/testroot/bookworm` (about 1.5 minutes before v4, which adds
//! 65 to 95 s and 176 MB, 450 MB in all; needs the Debian mirror) and reused; tests
//! overlay it, so it is never modified. Delete the directory to rebuild it.
//! `CFN_TESTROOT_MIRROR` picks another mirror.
//!
//! `cargo xtask demo` needs only what the scenario needs: it uses this root when it is
//! there, else builds a smaller one once (`ensure_for_demo`, `target/testroot/bookworm-demo`:
//! the same steps with fewer packages).

mod package_managers;

use crate::dist::install_missing;
use crate::workspace;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Bump when the contents change, so old caches are rebuilt. A root also carries the
/// markers of the earlier versions it contains (tests check the one they need).
const MARKER: &str = ".cfn-testroot-v4";
const OLDER_MARKERS: &[&str] = &[".cfn-testroot-v2", ".cfn-testroot-v3"];
const SUITE: &str = "bookworm";
const INCLUDE: &str = "systemd,init-system-helpers,sysvinit-utils,passwd,rpm";
const REAL_PACKAGE: &str = "hello";
/// Downloaded with its dependencies for the scenario's `packages: apt: nginx`.
const WEB_PACKAGE: &str = "nginx";
/// The demo's root: `service` and `update-rc.d` for the scenario's SysV services.
const DEMO_MARKER: &str = ".cfn-demoroot-v1";
const DEMO_INCLUDE: &str = "init-system-helpers,sysvinit-utils";

pub fn path() -> PathBuf {
    workspace().join("target/testroot").join(SUITE)
}

/// The cached root, built first when missing. `None` when not running as root (the
/// system tests then say they were skipped).
pub fn ensure() -> Result<Option<PathBuf>> {
    let root = path();
    if root.join(MARKER).is_file() {
        return Ok(Some(root));
    }
    if !running_as_root()? {
        eprintln!("xtask: not root, so the isolated Debian root is not built (system tests will skip)");
        return Ok(None);
    }
    let contents = format!("{SUITE} {INCLUDE} {REAL_PACKAGE} {WEB_PACKAGE} cfn-tiny {}\n", package_managers::PACKAGES);
    let markers: Vec<&str> = OLDER_MARKERS.iter().chain([&MARKER]).copied().collect();
    build(&root, "isolated Debian root", INCLUDE, &markers, &contents, |building, repo| {
        for version in ["1.0-1", "2.0-1"] {
            tiny_deb(building, repo, version)?;
        }
        download_web_package(building)?;
        // The real package comes from the mirror through the root's own apt.
        chroot(building, &format!("cd /srv/cfn-repo && apt-get -q download {REAL_PACKAGE}"))?;
        // A tiny RPM built with Debian's rpmbuild, for the `rpm` manager (installed with
        // the real rpm into the root's own rpm database).
        chroot(building, &format!("set -e\n{}", tiny_rpm("1.0")))?;
        package_managers::add(building)
    })?;
    Ok(Some(root))
}

/// The demo's root (`cargo xtask demo`, part 2): what the end-to-end scenario needs and
/// nothing more. The test root when it is there (it holds the same since v3); else
/// `target/testroot/bookworm-demo`, built once: a debootstrap'd bookworm `minbase` with
/// `service` and `update-rc.d`, and the local repository holding nginx and what it
/// needs (about a minute and 200 MB instead of the test root's several minutes).
pub fn ensure_for_demo() -> Result<PathBuf> {
    let tests = path();
    if tests.join(".cfn-testroot-v3").is_file() {
        return Ok(tests);
    }
    let root = tests.with_file_name(format!("{SUITE}-demo"));
    if root.join(DEMO_MARKER).is_file() {
        return Ok(root);
    }
    if !running_as_root()? {
        bail!("building the demo's Debian root needs root");
    }
    let contents = format!("{SUITE} {DEMO_INCLUDE} {WEB_PACKAGE}\n");
    build(&root, "demo's Debian root", DEMO_INCLUDE, &[DEMO_MARKER], &contents, |building, _| {
        download_web_package(building)
    })?;
    Ok(root)
}

pub fn running_as_root() -> Result<bool> {
    // /proc/self belongs to the effective user.
    Ok(std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self")?) == 0)
}

/// Builds `root` once (several `cargo xtask` may start together): debootstrap with
/// `include`, then `fill(root being built, its /srv/cfn-repo)` while the root's apt
/// still knows the mirror, then the local repository's index; from then on the root's
/// apt knows only that repository. `markers` get `contents`; the root is renamed into
/// place only when complete.
fn build(
    root: &Path,
    what: &str,
    include: &str,
    markers: &[&str],
    contents: &str,
    fill: impl FnOnce(&Path, &Path) -> Result<()>,
) -> Result<()> {
    std::fs::create_dir_all(root.parent().expect("under target/testroot"))?;
    let _lock = BuildLock::acquire(&root.with_extension("lock"))?;
    if markers.iter().all(|m| root.join(m).is_file()) {
        return Ok(());
    }
    let started = Instant::now();
    eprintln!("xtask: building the {what} in {} (once)", root.display());
    install_missing(&[("debootstrap", "debootstrap"), ("dpkg-scanpackages", "dpkg-dev"), ("dpkg-deb", "dpkg")])?;
    let building = root.with_extension("building");
    if building.exists() {
        std::fs::remove_dir_all(&building).context("remove a half-built root")?;
    }
    let mirror = std::env::var("CFN_TESTROOT_MIRROR").unwrap_or_else(|_| "http://deb.debian.org/debian".into());
    let log = root.with_extension("debootstrap.log");
    let log_file = std::fs::File::create(&log)?;
    let status = Command::new("debootstrap")
        .args(["--variant=minbase", &format!("--include={include}"), SUITE])
        .arg(&building)
        .arg(&mirror)
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .status()
        .context("run debootstrap")?;
    if !status.success() {
        bail!("debootstrap failed; see {}", log.display());
    }
    eprintln!("xtask: debootstrap done after {:.0} s", started.elapsed().as_secs_f64());

    let repo = building.join("srv/cfn-repo");
    std::fs::create_dir_all(&repo)?;
    fill(&building, &repo)?;
    let packages = Command::new("dpkg-scanpackages")
        .args(["--multiversion", ".", "/dev/null"])
        .current_dir(&repo)
        .stderr(std::process::Stdio::null())
        .output()
        .context("run dpkg-scanpackages")?;
    if !packages.status.success() {
        bail!("dpkg-scanpackages failed");
    }
    std::fs::write(repo.join("Packages"), &packages.stdout)?;
    // From now on the root only knows the local repository.
    std::fs::write(building.join("etc/apt/sources.list"), "deb [trusted=yes] file:/srv/cfn-repo ./\n")?;
    let _ = std::fs::remove_dir_all(building.join("etc/apt/sources.list.d"));
    std::fs::create_dir_all(building.join("etc/apt/sources.list.d"))?;
    chroot(&building, "rm -rf /var/lib/apt/lists/* && apt-get -q update >/dev/null && apt-get clean")?;
    for marker in markers {
        std::fs::write(building.join(marker), contents)?;
    }
    // An older root is moved aside first (rename cannot replace a directory), then removed.
    let old = root.with_extension(format!("old-{}", std::process::id()));
    if root.exists() {
        std::fs::rename(root, &old).context("move the older root aside")?;
    }
    std::fs::rename(&building, root)?;
    if old.exists() {
        std::fs::remove_dir_all(&old).context("remove the older root")?;
    }
    eprintln!("xtask: {what} built in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The web server and what it needs beyond the base system, as apt would install it,
/// into the local repository (for the scenario's `packages: apt: nginx`).
fn download_web_package(building: &Path) -> Result<()> {
    chroot(
        building,
        &format!(
            "apt-get -q update >/dev/null && apt-get clean \
             && apt-get -q -y install --download-only {WEB_PACKAGE} >/dev/null \
             && mv /var/cache/apt/archives/*.deb /srv/cfn-repo/"
        ),
    )
}

/// The shell commands that build `/srv/cfn-rpms/cfn-tiny-rpm-<version>-1.noarch.rpm`
/// inside the root (1.0 here, 2.0 beside it for the package managers).
pub fn tiny_rpm(version: &str) -> String {
    format!(
        r#"mkdir -p /tmp/rpmb/SPECS /srv/cfn-rpms
cat > /tmp/rpmb/SPECS/cfn-tiny-rpm.spec <<'SPEC'
Name: cfn-tiny-rpm
Version: {version}
Release: 1
Summary: tiny package for the cfn-bootstrap system tests
License: Apache-2.0
BuildArch: noarch
%description
tiny package for the cfn-bootstrap system tests
%install
mkdir -p %{{buildroot}}/usr/share/cfn-tiny-rpm
echo {version}-1 > %{{buildroot}}/usr/share/cfn-tiny-rpm/VERSION
%files
/usr/share/cfn-tiny-rpm/VERSION
SPEC
rpmbuild --quiet -bb --define '_topdir /tmp/rpmb' /tmp/rpmb/SPECS/cfn-tiny-rpm.spec
cp /tmp/rpmb/RPMS/noarch/cfn-tiny-rpm-{version}-1.noarch.rpm /srv/cfn-rpms/
rm -rf /tmp/rpmb
"#
    )
}

/// Builds `cfn-tiny_<version>_all.deb` into `repo`: one file naming its version.
fn tiny_deb(scratch_parent: &Path, repo: &Path, version: &str) -> Result<()> {
    let dir = scratch_parent.join(format!("tmp/cfn-tiny-{version}"));
    std::fs::create_dir_all(dir.join("DEBIAN"))?;
    std::fs::create_dir_all(dir.join("usr/share/cfn-tiny"))?;
    std::fs::write(
        dir.join("DEBIAN/control"),
        format!(
            "Package: cfn-tiny\nVersion: {version}\nArchitecture: all\nMaintainer: cfn-bootstrap tests <tests@localhost>\n\
             Section: misc\nPriority: optional\nDescription: tiny package for the cfn-bootstrap system tests\n"
        ),
    )?;
    std::fs::write(dir.join("usr/share/cfn-tiny/VERSION"), format!("{version}\n"))?;
    let status = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&dir)
        .arg(repo.join(format!("cfn-tiny_{version}_all.deb")))
        .stdout(std::process::Stdio::null())
        .status()
        .context("run dpkg-deb")?;
    if !status.success() {
        bail!("dpkg-deb failed for cfn-tiny {version}");
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// Runs a shell command inside the root being built (with /proc, in a private mount
/// namespace so nothing stays mounted).
pub fn chroot(root: &Path, script: &str) -> Result<()> {
    let status = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount -t proc proc "$ROOT/proc" && exec chroot "$ROOT" /bin/sh -c "$SCRIPT""#)
        .env("ROOT", root)
        .env("SCRIPT", script)
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .context("run unshare/chroot")?;
    if !status.success() {
        bail!("in the test root: `{script}` failed");
    }
    Ok(())
}

/// An exclusive `flock` on a file next to the root, released when dropped.
pub struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    pub fn acquire(path: &Path) -> Result<BuildLock> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!("lock {}: {}", path.display(), std::io::Error::last_os_error());
        }
        Ok(BuildLock { _file: file })
    }
}
