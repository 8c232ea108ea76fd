//! The systemd test root (built and cached by `cargo xtask test`,
//! xtask/src/systemd_root.rs): the isolated Debian root plus `systemd-sysv` and `dbus`,
//! booted with systemd as PID 1 by xtask/src/instance.rs.

use std::path::PathBuf;

/// The cached systemd root. The tests need root and this root; they fail with that
/// explanation otherwise, never skip.
pub fn rootfs() -> PathBuf {
    // SAFETY: geteuid cannot fail.
    let is_root = unsafe { libc::geteuid() } == 0;
    assert!(is_root, "this test needs root (mount, PID and network namespaces, systemd as PID 1)");
    let root = std::env::var_os("CFN_TEST_SYSTEMD_ROOTFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::workspace().join("target/testroot/bookworm-systemd"));
    assert!(
        root.join(".cfn-testroot-systemd-v1").is_file(),
        "{} is not a usable systemd test root: run `cargo xtask test`, which builds it",
        root.display()
    );
    root
}
