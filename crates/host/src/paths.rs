//! System locations of the reference (logs in `/var/log`, state in `/var/lib`, settings in
//! `/etc/cfn`, the pid file in `/var/run`). Each can be moved with an environment variable
//! so that tests and the demo run without root; production never sets them.

use std::path::PathBuf;

fn dir(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable).filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(default))
}

/// `/var/log`, or `CFN_BOOTSTRAP_LOG_DIR`.
pub fn log_dir() -> PathBuf {
    dir("CFN_BOOTSTRAP_LOG_DIR", "/var/log")
}

/// `/var/lib`, or `CFN_BOOTSTRAP_LIB_DIR` (holds `cfn-init/` and `cfn-hup/`).
pub fn lib_dir() -> PathBuf {
    dir("CFN_BOOTSTRAP_LIB_DIR", "/var/lib")
}

/// `/etc/cfn`, or `CFN_BOOTSTRAP_ETC_DIR` (CA and endpoint overrides, cfn-hup's default
/// configuration directory).
pub fn etc_dir() -> PathBuf {
    dir("CFN_BOOTSTRAP_ETC_DIR", "/etc/cfn")
}

/// `/var/run`, or `CFN_BOOTSTRAP_RUN_DIR` (the cfn-hup pid file).
pub fn run_dir() -> PathBuf {
    dir("CFN_BOOTSTRAP_RUN_DIR", "/var/run")
}

/// `/opt/aws/bin`, or `CFN_BOOTSTRAP_BIN_DIR`: where the packages put the binary and the
/// `cfn-*` links (`cfn-bootstrap doctor` checks them).
pub fn bin_dir() -> PathBuf {
    dir("CFN_BOOTSTRAP_BIN_DIR", "/opt/aws/bin")
}
