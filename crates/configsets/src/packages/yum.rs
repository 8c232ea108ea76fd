//! yum (INIT-PKG-02, INIT-PKG-03), and dnf with the same algorithm: clean the
//! metadata and make the cache (2.0 behaviour), then per package the spec
//! (`name-version`, the highest of a list by RPM comparison), an exact installed check,
//! an availability check, and upgrade or downgrade by comparing with the installed
//! version.

use super::rpm::{compare_versions, installed_version, max_version};
use super::{Package, check_package};
use crate::tool::{self, py_list, tool_error};
use std::cmp::Ordering;

/// The program and the words its messages use.
pub struct Manager {
    pub program: &'static str,
    /// `Yum` in `Yum does not have … available`, `Yum installed […]`.
    pub label: &'static str,
    /// `yum` in `Could not create yum cache`, `… install/update yum packages`.
    pub lower: &'static str,
}

pub const YUM: Manager = Manager { program: "yum", label: "Yum", lower: "yum" };

fn argv(m: &Manager, rest: &[&str]) -> Vec<String> {
    std::iter::once(m.program).chain(rest.iter().copied()).map(String::from).collect()
}

pub fn clean_argv(m: &Manager) -> Vec<String> {
    argv(m, &["clean", "metadata"])
}

pub fn makecache_argv(m: &Manager) -> Vec<String> {
    argv(m, &["-y", "makecache"])
}

pub fn installed_argv(m: &Manager, spec: &str) -> Vec<String> {
    argv(m, &["-C", "-y", "list", "installed", spec])
}

pub fn available_argv(m: &Manager, spec: &str) -> Vec<String> {
    argv(m, &["-C", "-y", "--showduplicates", "list", "available", spec])
}

pub fn install_argv(m: &Manager, specs: &[String]) -> Vec<String> {
    let mut a = argv(m, &["-y", "install"]);
    a.extend(specs.iter().cloned());
    a
}

pub fn downgrade_argv(m: &Manager, specs: &[String]) -> Vec<String> {
    let mut a = argv(m, &["-y", "downgrade"]);
    a.extend(specs.iter().cloned());
    a
}

/// The version to ask for (a list means its highest entry) and the spec.
pub fn spec(package: &Package) -> (Option<String>, String) {
    let version = max_version(&package.versions);
    let spec = match &version {
        Some(v) => format!("{}-{v}", package.name),
        None => package.name.clone(),
    };
    (version, spec)
}

fn ok(argv: &[String]) -> Result<bool, String> {
    Ok(tool::query(&argv.iter().map(String::as_str).collect::<Vec<_>>())?.ok())
}

pub fn apply(m: &Manager, packages: &[Package]) -> Result<Vec<String>, String> {
    if packages.is_empty() {
        tracing::debug!("No packages specified for {}", m.lower);
        return Ok(Vec::new());
    }
    for package in packages {
        check_package(m.lower, package)?;
    }
    let clean = clean_argv(m);
    let cleaned = tool::logged(&clean.join(" "), clean, &[])?;
    if !cleaned.ok() {
        tracing::warn!("{} clean failed. Output: {}", m.label, cleaned.text);
    }
    let cache = tool::logged(&makecache_argv(m).join(" "), makecache_argv(m), &[])?;
    if !cache.ok() {
        tracing::error!("{} makecache failed. Output: {}", m.label, cache.text);
        return Err(tool_error(format!("Could not create {} cache", m.lower), cache.code));
    }
    let (mut upgrade, mut downgrade, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    for package in packages {
        let (version, spec) = spec(package);
        if ok(&installed_argv(m, &spec))? {
            tracing::debug!("{spec} will not be installed as it is already present");
            continue;
        }
        if !ok(&available_argv(m, &spec))? {
            tracing::error!("{spec} is not available to be installed");
            return Err(format!("{} does not have {spec} available for installation", m.label));
        }
        match &version {
            None => upgrade.push(spec),
            Some(requested) => {
                let installed = installed_version(&package.name)?;
                // Not installed reads as an empty version in the reference's log lines.
                let shown = installed.as_deref().unwrap_or("");
                if compare_versions(Some(requested), installed.as_deref()) == Ordering::Greater {
                    tracing::debug!(
                        "Requested version {requested} is greater than installed version {shown}, so we will upgrade"
                    );
                    upgrade.push(spec);
                } else {
                    tracing::debug!(
                        "Requested version {requested} is NOT greater than installed version {shown}, so we will NOT upgrade"
                    );
                    tracing::debug!("Downgrading to {spec} from installed version {shown}");
                    downgrade.push(spec);
                }
            }
        }
        changed.push(package.name.clone());
    }
    if changed.is_empty() {
        tracing::debug!("All {} packages were already installed", m.lower);
        return Ok(Vec::new());
    }
    if !upgrade.is_empty() {
        tracing::debug!("Installing/updating {} via {}", py_list(&upgrade), m.lower);
        let title = format!("{} install {}", m.program, upgrade.join(" "));
        let result = tool::logged(&title, install_argv(m, &upgrade), &[])?;
        if !result.ok() {
            tracing::error!("{} failed. Output: {}", m.label, result.text);
            return Err(tool_error(format!("Could not successfully install/update {} packages", m.lower), result.code));
        }
    }
    if !downgrade.is_empty() {
        tracing::debug!("Downgrading {} via {}", py_list(&downgrade), m.lower);
        let title = format!("{} downgrade {}", m.program, downgrade.join(" "));
        let result = tool::logged(&title, downgrade_argv(m, &downgrade), &[])?;
        if !result.ok() {
            tracing::error!("{} failed. Output: {}", m.label, result.text);
            return Err(tool_error(format!("Could not successfully downgrade {} packages", m.lower), result.code));
        }
    }
    tracing::info!("{} installed {}", m.label, py_list(&changed));
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, versions: &[&str]) -> Package {
        Package::of(name, versions)
    }

    #[test]
    fn yum_argv_forms() {
        let m = &YUM;
        assert_eq!(clean_argv(m), ["yum", "clean", "metadata"]);
        assert_eq!(makecache_argv(m), ["yum", "-y", "makecache"]);
        assert_eq!(spec(&pkg("httpd", &[])), (None, "httpd".to_string()));
        assert_eq!(spec(&pkg("httpd", &["2.4.6"])), (Some("2.4.6".into()), "httpd-2.4.6".to_string()));
        assert_eq!(spec(&pkg("httpd", &["2.4.6-1", "2.4.10-1", "2.4.9"])).1, "httpd-2.4.10-1");
        assert_eq!(spec(&pkg("httpd", &[""])).1, "httpd");
        // An epoch is passed literally, as in the reference.
        assert_eq!(spec(&pkg("httpd", &["1:2.4"])).1, "httpd-1:2.4");
        assert_eq!(installed_argv(m, "httpd-2.4.6"), ["yum", "-C", "-y", "list", "installed", "httpd-2.4.6"]);
        assert_eq!(available_argv(m, "httpd"), ["yum", "-C", "-y", "--showduplicates", "list", "available", "httpd"]);
        assert_eq!(install_argv(m, &["a".into(), "b-1".into()]), ["yum", "-y", "install", "a", "b-1"]);
        assert_eq!(downgrade_argv(m, &["b-0.9".into()]), ["yum", "-y", "downgrade", "b-0.9"]);
    }

    #[test]
    fn dnf_argv_forms() {
        let m = &super::super::dnf::DNF;
        assert_eq!(clean_argv(m), ["dnf", "clean", "metadata"]);
        assert_eq!(makecache_argv(m), ["dnf", "-y", "makecache"]);
        assert_eq!(installed_argv(m, "nginx"), ["dnf", "-C", "-y", "list", "installed", "nginx"]);
        assert_eq!(
            available_argv(m, "nginx-1.24.0"),
            ["dnf", "-C", "-y", "--showduplicates", "list", "available", "nginx-1.24.0"]
        );
        assert_eq!(install_argv(m, &["nginx".into()]), ["dnf", "-y", "install", "nginx"]);
        assert_eq!(downgrade_argv(m, &["nginx-1.20".into()]), ["dnf", "-y", "downgrade", "nginx-1.20"]);
    }
}
