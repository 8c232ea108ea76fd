//! cfn-init's `packages` section with the real package managers of Amazon Linux, RHEL
//! and SUSE, and with pip3 and gem (INIT-PKG-02, -03, -08, -09, -10, -11), inside the
//! isolated Debian root that `cargo xtask test` builds (v4 of
//! xtask/src/testroot.rs: Debian's dnf, zypper, pip3 and gem, each with a local source
//! holding versions 1.0 and 2.0 of a tiny package).
//!
//! Each test runs one manager through the same sequence in one overlay: a pinned
//! install, the same document again (nothing done), an upgrade, the unpinned package
//! (already installed), the first version again (a downgrade where the manager has
//! one), and a package nobody has (the reference's message and exit code 1). After
//! every run the manager itself is asked what is installed (`rpm -q`, `pip3 show`,
//! `gem list`); the test asserts on that and on the log lines. `yum` (a link to dnf,
//! as on Amazon Linux 2023) is compared with the reference's recorded run instead
//! (tests/golden/cfn-init-system/yum).

mod common;

use common::debian_root::{Overlay, cfn_init, golden, has, replay, rootfs_with_package_managers, same_run};
use serde_json::{Value, json};

/// The runs of every test, in order: name and the versions asked for the tiny package.
const RUNS: [(&str, &str); 5] =
    [("pinned", "1.0"), ("again", "1.0"), ("upgrade", "2.0"), ("latest", ""), ("downgrade", "1.0")];

/// An overlay holding one metadata file per run for `manager`, named after the run, and
/// `/tmp/unknown.json` asking for a package no source has.
fn overlay(manager: &str, package: &str) -> Overlay {
    let o = Overlay::new(rootfs_with_package_managers()).with_cfn_init();
    let config = |packages: Value| json!({"config": {"packages": {manager: packages}}});
    for (run, version) in RUNS {
        o.metadata(run, config(json!({ package: version })));
    }
    o.metadata("unknown", config(json!({"cfn-no-such-package": ""})));
    o
}

/// The script: before anything, each run followed by `ask` (the manager's own view),
/// then the unknown package.
fn script(setup: &str, ask: &str) -> String {
    let mut script = format!("{setup}\necho before; {ask}\n");
    for (run, _) in RUNS {
        script.push_str(&cfn_init(run));
        script.push_str(ask);
        script.push('\n');
    }
    script.push_str(&cfn_init("unknown"));
    script
}

/// The yum algorithm (INIT-PKG-02, -03) run with `manager` on the rpm-md repository,
/// the upgrade or downgrade decided by comparing versions (INIT-PKG-11).
fn yum_algorithm(manager: &str, label: &str) {
    let o = overlay(manager, "cfn-tiny-rpm");
    let ran = o.run(&script("", "rpm -q cfn-tiny-rpm || true"));
    let out = &ran.out;
    assert_eq!(ran.code, 0, "{out}");
    assert!(out.starts_with("before\npackage cfn-tiny-rpm is not installed\n"), "{out}");

    let pinned = o.read("/tmp/pinned.log");
    assert!(out.contains("pinned exit 0\ncfn-tiny-rpm-1.0-1.noarch\n"), "{out}\n{pinned}");
    assert!(has(&pinned, &format!("[INFO] {label} installed ['cfn-tiny-rpm']")), "{pinned}");

    let again = o.read("/tmp/again.log");
    assert!(out.contains("again exit 0\ncfn-tiny-rpm-1.0-1.noarch\n"), "{out}\n{again}");
    assert!(has(&again, "[DEBUG] cfn-tiny-rpm-1.0 will not be installed as it is already present"), "{again}");
    assert!(has(&again, &format!("[DEBUG] All {manager} packages were already installed")), "{again}");

    let upgrade = o.read("/tmp/upgrade.log");
    assert!(out.contains("upgrade exit 0\ncfn-tiny-rpm-2.0-1.noarch\n"), "{out}\n{upgrade}");
    assert!(
        has(&upgrade, "[DEBUG] Requested version 2.0 is greater than installed version 1.0-1, so we will upgrade"),
        "{upgrade}"
    );
    assert!(has(&upgrade, &format!("[INFO] {label} installed ['cfn-tiny-rpm']")), "{upgrade}");

    let latest = o.read("/tmp/latest.log");
    assert!(out.contains("latest exit 0\ncfn-tiny-rpm-2.0-1.noarch\n"), "{out}\n{latest}");
    assert!(has(&latest, "[DEBUG] cfn-tiny-rpm will not be installed as it is already present"), "{latest}");

    let downgrade = o.read("/tmp/downgrade.log");
    assert!(out.contains("downgrade exit 0\ncfn-tiny-rpm-1.0-1.noarch\n"), "{out}\n{downgrade}");
    assert!(has(&downgrade, "[DEBUG] Downgrading to cfn-tiny-rpm-1.0 from installed version 2.0-1"), "{downgrade}");

    let unknown = o.read("/tmp/unknown.log");
    let message = format!("{label} does not have cfn-no-such-package available for installation");
    assert!(out.contains(&format!("unknown exit 1\nError occurred during build: {message}\n")), "{out}\n{unknown}");
    assert!(has(&unknown, "[ERROR] cfn-no-such-package is not available to be installed"), "{unknown}");

    // What changed the system went to the command log; the second run changed nothing.
    let cmd = o.read("/tmp/cmd.log");
    assert!(cmd.contains(&format!("[INFO] {manager} install cfn-tiny-rpm-1.0\n")), "{cmd}");
    assert!(cmd.contains(&format!("[INFO] {manager} install cfn-tiny-rpm-2.0\n")), "{cmd}");
    assert!(cmd.contains(&format!("[INFO] {manager} downgrade cfn-tiny-rpm-1.0\n")), "{cmd}");
    assert_eq!(cmd.matches(&format!("[INFO] {manager} install ")).count(), 2, "{cmd}");
    assert_eq!(cmd.matches(&format!("[INFO] {manager} -y makecache")).count(), 6, "{cmd}");
}

/// Amazon Linux 2023's `yum` is a link to dnf: the `yum` manager drives it, compared
/// with the reference (1.4-31) recorded with the same link on the same repository
/// (tests/golden/cfn-init-system/yum): the same effects (`rpm -q` after each run), exit
/// codes, output and log lines, the downgrade and the unknown package included.
#[test]
fn yum_where_yum_is_dnf_matches_the_recorded_reference() {
    let (o, out) = replay(rootfs_with_package_managers(), "yum");
    assert_eq!(out, golden("yum", "checks.txt"));
    for run in ["pinned", "again", "upgrade", "latest", "downgrade", "unknown"] {
        same_run(&o, "yum", run);
    }
}

/// `dnf` by its own name (an addition of this port; the reference warns
/// `Unsupported package manager: dnf`).
#[test]
fn dnf_installs_pins_and_upgrades_from_an_rpm_repository() {
    yum_algorithm("dnf", "DNF");
}

/// zypper (INIT-PKG-10): `zypper search --match-exact` for the checks, `zypper install -y`.
#[test]
fn zypper_installs_pins_and_upgrades_from_an_rpm_repository() {
    let o = overlay("zypper", "cfn-tiny-rpm");
    let ran = o.run(&script("", "rpm -q cfn-tiny-rpm || true"));
    let out = &ran.out;
    assert_eq!(ran.code, 0, "{out}");
    assert!(out.starts_with("before\npackage cfn-tiny-rpm is not installed\n"), "{out}");
    let versions =
        [("pinned", "1.0-1"), ("again", "1.0-1"), ("upgrade", "2.0-1"), ("latest", "2.0-1"), ("downgrade", "1.0-1")];
    for (run, installed) in versions {
        let log = o.read(&format!("/tmp/{run}.log"));
        assert!(out.contains(&format!("{run} exit 0\ncfn-tiny-rpm-{installed}.noarch\n")), "{out}\n{log}");
    }
    for run in ["pinned", "upgrade", "downgrade"] {
        let log = o.read(&format!("/tmp/{run}.log"));
        assert!(has(&log, "[INFO] Zypper installed ['cfn-tiny-rpm']"), "{log}");
    }
    let again = o.read("/tmp/again.log");
    assert!(has(&again, "[DEBUG] cfn-tiny-rpm-1.0 will not be installed as it is already present"), "{again}");
    assert!(has(&again, "[DEBUG] All zypper packages were already installed"), "{again}");
    let latest = o.read("/tmp/latest.log");
    assert!(has(&latest, "[DEBUG] cfn-tiny-rpm will not be installed as it is already present"), "{latest}");
    let unknown = o.read("/tmp/unknown.log");
    let message = "Zypper does not have cfn-no-such-package available for installation";
    assert!(out.contains(&format!("unknown exit 1\nError occurred during build: {message}\n")), "{out}\n{unknown}");

    let cmd = o.read("/tmp/cmd.log");
    assert!(cmd.contains("[INFO] zypper install cfn-tiny-rpm-1.0\n"), "{cmd}");
    assert!(cmd.contains("[INFO] zypper install cfn-tiny-rpm-2.0\n"), "{cmd}");
    assert!(cmd.contains("[INFO] zypper downgrade cfn-tiny-rpm-1.0\n"), "{cmd}");
    assert_eq!(cmd.matches("[INFO] zypper ").count(), 3, "{cmd}");
}

/// python (INIT-PKG-08): `pip3 install name==version` from the local wheels; a package
/// `pip3 show` already reports at the asked version is left alone (WEAK-python fixed).
#[test]
fn pip3_installs_pins_and_upgrades_from_local_wheels() {
    let o = overlay("python", "cfn-tiny-py");
    // pip takes ==1.0.0 to be the installed 1.0, and so must the installed check.
    o.metadata("padded", json!({"config": {"packages": {"python": {"cfn-tiny-py": "1.0.0"}}}}));
    let ask = "pip3 show cfn-tiny-py 2>&1 | grep -E '^(Version|WARNING)'; \
               python3 -c 'import cfn_tiny_py; print(\"module\", cfn_tiny_py.VERSION)' 2>/dev/null || true";
    let ran = o.run(&format!("{}{}", script("", ask), cfn_init("padded")));
    let out = &ran.out;
    assert_eq!(ran.code, 0, "{out}");
    assert!(out.starts_with("before\nWARNING: Package(s) not found: cfn-tiny-py\n"), "{out}");
    let versions = [("pinned", "1.0"), ("again", "1.0"), ("upgrade", "2.0"), ("latest", "2.0"), ("downgrade", "1.0")];
    for (run, installed) in versions {
        let log = o.read(&format!("/tmp/{run}.log"));
        let expected = format!("{run} exit 0\nVersion: {installed}\nmodule {installed}\n");
        assert!(out.contains(&expected), "{out}\n{log}");
    }
    let pinned = o.read("/tmp/pinned.log");
    assert!(has(&pinned, "[INFO] Attempting to install ['cfn-tiny-py==1.0'] via pip3"), "{pinned}");
    let upgrade = o.read("/tmp/upgrade.log");
    assert!(has(&upgrade, "[INFO] pip3 installed ['cfn-tiny-py==2.0']"), "{upgrade}");
    assert!(out.contains("padded exit 0\n"), "{out}");
    for run in ["again", "latest", "padded"] {
        let log = o.read(&format!("/tmp/{run}.log"));
        assert!(has(&log, "[DEBUG] cfn-tiny-py will not be installed as it is already present"), "{log}");
        assert!(has(&log, "[INFO] All python packages were already installed"), "{log}");
    }
    let unknown = o.read("/tmp/unknown.log");
    let message = "Could not successfully install python packages (return code 1)";
    assert!(out.contains(&format!("unknown exit 1\nError occurred during build: {message}\n")), "{out}\n{unknown}");

    let cmd = o.read("/tmp/cmd.log");
    assert!(cmd.contains("[INFO] pip3 install cfn-tiny-py==1.0\n"), "{cmd}");
    assert!(cmd.contains("[INFO] pip3 install cfn-tiny-py==2.0\n"), "{cmd}");
    assert_eq!(cmd.matches("[INFO] pip3 install cfn-tiny-py==1.0\n").count(), 2, "{cmd}");
    assert!(cmd.contains("ERROR: No matching distribution found for cfn-no-such-package"), "{cmd}");
    assert_eq!(cmd.matches("[INFO] pip3 install ").count(), 4, "{cmd}");
}

/// rubygems (INIT-PKG-09): `gem list --installed` decides, `gem install -b --no-document`
/// installs from the local gem source; gem keeps both versions after an upgrade, and
/// `require` loads the newest.
#[test]
fn gem_installs_pins_and_upgrades_from_a_local_source() {
    let o = overlay("rubygems", "cfn-tiny-gem");
    let ask = "gem list cfn-tiny-gem | grep cfn-tiny-gem || echo no gem; \
               ruby -e 'require \"cfn_tiny_gem\"; puts \"module #{CFN_TINY_GEM_VERSION}\"' 2>/dev/null || true";
    let ran = o.run(&script("", ask));
    let out = &ran.out;
    assert_eq!(ran.code, 0, "{out}");
    assert!(out.starts_with("before\nno gem\n"), "{out}");
    for (run, listed, loaded) in [
        ("pinned", "1.0", "1.0"),
        ("again", "1.0", "1.0"),
        ("upgrade", "2.0, 1.0", "2.0"),
        ("latest", "2.0, 1.0", "2.0"),
        ("downgrade", "2.0, 1.0", "2.0"),
    ] {
        let log = o.read(&format!("/tmp/{run}.log"));
        let expected = format!("{run} exit 0\ncfn-tiny-gem ({listed})\nmodule {loaded}\n");
        assert!(out.contains(&expected), "{out}\n{log}");
    }
    let pinned = o.read("/tmp/pinned.log");
    assert!(has(&pinned, "[INFO] Gem installed: cfn-tiny-gem-1.0"), "{pinned}");
    // Both versions stay installed after the upgrade, so asking for 1.0 again does nothing.
    for run in ["again", "downgrade"] {
        let log = o.read(&format!("/tmp/{run}.log"));
        assert!(has(&log, "[INFO] cfn-tiny-gem-1.0 is already installed, skipping."), "{log}");
    }
    let upgrade = o.read("/tmp/upgrade.log");
    assert!(has(&upgrade, "[INFO] Gem installed: cfn-tiny-gem-2.0"), "{upgrade}");
    let latest = o.read("/tmp/latest.log");
    assert!(has(&latest, "[INFO] cfn-tiny-gem-None is already installed, skipping."), "{latest}");
    let unknown = o.read("/tmp/unknown.log");
    let message = "Failed to install gem: cfn-no-such-package-None (return code 2)";
    assert!(out.contains(&format!("unknown exit 1\nError occurred during build: {message}\n")), "{out}\n{unknown}");

    let cmd = o.read("/tmp/cmd.log");
    assert!(cmd.contains("[INFO] gem install -b --no-document cfn-tiny-gem -v = 1.0\n"), "{cmd}");
    assert!(cmd.contains("[INFO] gem install -b --no-document cfn-tiny-gem -v = 2.0\n"), "{cmd}");
    assert!(cmd.contains("Could not find a valid gem 'cfn-no-such-package' (>= 0) in any repository"), "{cmd}");
    assert_eq!(cmd.matches("[INFO] gem install ").count(), 3, "{cmd}");
}
