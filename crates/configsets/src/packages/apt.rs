//! apt (INIT-PKG-06, INIT-PKG-07): `apt-cache -q gencaches` (no `apt-get update`, as
//! in the reference), an installed check through `dpkg-query` that needs the **exact**
//! version (the reference matched a prefix, BUG-APTPREFIX), `apt-cache -q show` for
//! availability, then one `apt-get -q -y install` with `DEBIAN_FRONTEND=noninteractive`.

use super::{Package, check_package};
use crate::tool::{self, py_list, tool_error};

pub fn gencaches_argv() -> Vec<String> {
    argv(&["apt-cache", "-q", "gencaches"])
}

/// `name=version` per version, or `name` (INIT-PKG-06).
pub fn specs(package: &Package) -> Vec<String> {
    if package.versions.is_empty() {
        return vec![package.name.clone()];
    }
    package
        .versions
        .iter()
        .map(|v| if v.is_empty() { package.name.clone() } else { format!("{}={v}", package.name) })
        .collect()
}

pub fn installed_query_argv(name: &str) -> Vec<String> {
    argv(&["dpkg-query", "-f", "${Status}|${Package}=${Version}", "-W", name])
}

pub fn show_argv(spec: &str) -> Vec<String> {
    argv(&["apt-cache", "-q", "show", spec])
}

/// `apt-cache show` that builds its cache in memory only, for looking without writing
/// (`cfn-bootstrap plan` runs no `gencaches`).
pub fn show_uncached_argv(spec: &str) -> Vec<String> {
    argv(&["apt-cache", "-q", "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "show", spec])
}

/// The installed version in `dpkg-query`'s output, when the package is installed.
pub fn installed_version(query_output: &str) -> Option<&str> {
    let (status, installed) = query_output.trim().split_once('|')?;
    (status.rsplit(' ').next() == Some("installed")).then(|| installed.split_once('=').map_or("", |(_, v)| v))
}

pub fn install_argv(specs: &[String]) -> Vec<String> {
    let mut a = argv(&["apt-get", "-q", "-y", "install"]);
    a.extend(specs.iter().cloned());
    a
}

/// Whether `dpkg-query`'s output says `spec` is installed: the status ends in
/// `installed` and `name=version` equals the spec exactly, or, for a spec without a
/// version, names the package.
pub fn is_installed(query_output: &str, spec: &str) -> bool {
    let line = query_output.trim();
    let Some((status, installed)) = line.split_once('|') else { return false };
    if status.rsplit(' ').next() != Some("installed") {
        return false;
    }
    if spec.contains('=') { installed == spec } else { installed.split_once('=').is_some_and(|(name, _)| name == spec) }
}

/// `apt-cache show` of a version that does not exist exits 0 without printing a
/// record, so a record is required too (else a pinned version that is not there
/// fails later in `apt-get` with a less clear message).
pub fn is_available(show: &tool::Output) -> bool {
    show.ok() && show.text.lines().any(|l| l.starts_with("Package:"))
}

fn argv(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

fn run_query(argv: &[String]) -> Result<tool::Output, String> {
    tool::query_stdout(&argv.iter().map(String::as_str).collect::<Vec<_>>())
}

pub fn apply(packages: &[Package]) -> Result<Vec<String>, String> {
    if packages.is_empty() {
        tracing::debug!("No packages specified for APT");
        return Ok(Vec::new());
    }
    for package in packages {
        check_package("apt", package)?;
    }
    let cache = tool::query(&gencaches_argv().iter().map(String::as_str).collect::<Vec<_>>())?;
    if !cache.ok() {
        tracing::error!("APT gencache failed. Output: {}", cache.text);
        return Err(tool_error("Could not create apt cache", cache.code));
    }
    let mut to_install = Vec::new();
    let mut changed = Vec::new();
    for package in packages {
        let mut wanted = Vec::new();
        for spec in specs(package) {
            let installed = run_query(&installed_query_argv(&package.name))?;
            if installed.ok() && is_installed(&installed.text, &spec) {
                tracing::debug!("{spec} will not be installed as it is already present");
                continue;
            }
            if !is_available(&run_query(&show_argv(&spec))?) {
                tracing::error!("{spec} is not available to be installed");
                return Err(format!("APT does not have {spec} available for installation"));
            }
            wanted.push(spec);
        }
        if !wanted.is_empty() {
            to_install.extend(wanted);
            changed.push(package.name.clone());
        }
    }
    if to_install.is_empty() {
        tracing::info!("All APT packages were already installed");
        return Ok(Vec::new());
    }
    tracing::info!("Attempting to install {} via APT", py_list(&to_install));
    let argv = install_argv(&to_install);
    let title = argv.join(" ");
    let result = tool::logged(&title, argv, &[("DEBIAN_FRONTEND", "noninteractive")])?;
    if !result.ok() {
        tracing::error!("apt-get failed. Output: {}", result.text);
        return Err(tool_error("Could not successfully install APT packages", result.code));
    }
    tracing::info!("APT installed {}", py_list(&changed));
    tracing::debug!("APT output: {}", result.text);
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, versions: &[&str]) -> Package {
        Package::of(name, versions)
    }

    #[test]
    fn argv_forms() {
        assert_eq!(gencaches_argv(), ["apt-cache", "-q", "gencaches"]);
        assert_eq!(specs(&pkg("curl", &[])), ["curl"]);
        assert_eq!(specs(&pkg("curl", &["7.88"])), ["curl=7.88"]);
        assert_eq!(specs(&pkg("curl", &["1", ""])), ["curl=1", "curl"]);
        assert_eq!(installed_query_argv("curl"), ["dpkg-query", "-f", "${Status}|${Package}=${Version}", "-W", "curl"]);
        assert_eq!(show_argv("curl=1"), ["apt-cache", "-q", "show", "curl=1"]);
        assert_eq!(install_argv(&["a=1".into(), "b".into()]), ["apt-get", "-q", "-y", "install", "a=1", "b"]);
    }

    #[test]
    fn installed_check_is_exact() {
        let out = "install ok installed|foo=1.2.3-1";
        assert!(is_installed(out, "foo"));
        assert!(is_installed(out, "foo=1.2.3-1"));
        // The reference's prefix match accepted these (BUG-APTPREFIX).
        assert!(!is_installed(out, "foo=1.2"));
        assert!(!is_installed(out, "foo=1.2.3"));
        assert!(!is_installed(out, "fo"));
        assert!(!is_installed("deinstall ok config-files|foo=1.2.3-1", "foo"));
        assert!(!is_installed("unknown ok not-installed|foo=", "foo"));
        assert!(!is_installed("", "foo"));
        assert_eq!(installed_version(out), Some("1.2.3-1"));
        assert_eq!(installed_version("unknown ok not-installed|foo="), None);
    }
}
