//! The `packages` section (INIT-PKG-01..13): managers in the reference's order (`msi`,
//! `dpkg`, `rpm`, `apt`, `yum`, then the others sorted case-insensitively), each
//! returning the names it installed or changed for the change record.
//!
//! Supported: `apt`, `yum`, `rpm`, `python` (pip3), `rubygems` (modern flags), the 2.0
//! line's `zypper`, and `dnf` (an addition of this port: the same algorithm as `yum`
//! run with `dnf`). `msi` is an error when non-empty (Windows only); any other name,
//! `dpkg` included, is skipped with the reference's warning.
//!
//! Every tool is run as argv, never through a shell, and names, versions and
//! locations that start with `-` are refused (SEC-ARGINJ). The argv of every command
//! is built by a pure function so the exact forms are unit-tested without the tools.

pub mod apt;
pub mod dnf;
pub mod python;
pub mod rpm;
pub mod rubygems;
pub mod yum;
pub mod zypper;

use crate::document::{Item, ManagerPackages};
use crate::model::kind;
use serde_json::Value;
use std::collections::BTreeMap;

/// One package: its name and the versions asked for (empty = any/latest). A string
/// version is a one-element list; list entries may be empty (= no version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub versions: Vec<String>,
}

impl Package {
    /// A package for the managers' tests.
    #[cfg(test)]
    pub(crate) fn of(name: &str, versions: &[&str]) -> Package {
        Package { name: name.into(), versions: versions.iter().map(|s| s.to_string()).collect() }
    }
}

/// The fixed part of the manager order (INIT-PKG-01).
const ORDER: [&str; 5] = ["msi", "dpkg", "rpm", "apt", "yum"];

/// Manager names in the order the reference runs them.
pub fn manager_order<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<&'a String> {
    let mut names: Vec<&String> = names.into_iter().collect();
    names.sort_by(|a, b| {
        let (ia, ib) = (ORDER.iter().position(|m| m == a), ORDER.iter().position(|m| m == b));
        match (ia, ib) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.to_lowercase().cmp(&b.to_lowercase()),
        }
    });
    names
}

/// The packages of one manager, in document order.
pub fn parse_packages(config: &str, manager: &str, value: &Value) -> Result<Vec<Package>, String> {
    let map = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Object(map) => map,
        other => return Err(format!("config {config}: packages {manager} must be an object, not {}", kind(other))),
    };
    let mut packages = Vec::new();
    for (name, spec) in map {
        let bad = |what: &Value| {
            format!("config {config}, packages {manager} {name}: a version must be a string, not {}", kind(what))
        };
        let versions = match spec {
            v if !cfn_python::truth::is_truthy(v) => Vec::new(),
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => {
                items.iter().map(|i| i.as_str().map(str::to_string).ok_or_else(|| bad(i))).collect::<Result<_, _>>()?
            }
            other => return Err(bad(other)),
        };
        packages.push(Package { name: name.clone(), versions });
    }
    Ok(packages)
}

/// Refuses a package whose name or a version would be read as an option.
pub fn check_package(manager: &str, package: &Package) -> Result<(), String> {
    crate::tool::refuse_option_like(manager, "package name", &package.name)?;
    for version in &package.versions {
        crate::tool::refuse_option_like(manager, "version", version)?;
    }
    Ok(())
}

/// Runs the `packages` section, its managers in the order the document gives them
/// (`manager_order`); returns manager → changed names. A manager's error stops the
/// section when its turn comes.
pub fn apply(managers: &[Item<ManagerPackages>]) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut changes = BTreeMap::new();
    for manager in managers {
        let name = manager.key.as_str();
        let changed = match (name, manager.parsed()?) {
            ("apt", ManagerPackages::Named(packages)) => apt::apply(packages)?,
            ("yum", ManagerPackages::Named(packages)) => yum::apply(&yum::YUM, packages)?,
            ("dnf", ManagerPackages::Named(packages)) => yum::apply(&dnf::DNF, packages)?,
            ("zypper", ManagerPackages::Named(packages)) => zypper::apply(packages)?,
            ("python", ManagerPackages::Named(packages)) => python::apply(packages)?,
            ("rubygems", ManagerPackages::Named(packages)) => rubygems::apply(packages)?,
            (_, ManagerPackages::Rpm(entries)) => rpm::apply(entries)?,
            (_, ManagerPackages::Msi { listed: true }) => {
                return Err("MSI support is only available under Windows".into());
            }
            (_, ManagerPackages::Msi { listed: false }) => {
                tracing::debug!("No MSIs specified");
                Vec::new()
            }
            // `Named` holds only the managers above; anything else is `Unsupported`.
            _ => {
                tracing::warn!("Unsupported package manager: {name}");
                continue;
            }
        };
        changes.insert(manager.key.clone(), changed);
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Sections;
    use serde_json::json;

    #[test]
    fn managers_run_in_the_reference_order() {
        let names: Vec<String> =
            ["rubygems", "yum", "Zypper", "apt", "python", "rpm", "msi", "dpkg", "dnf"].map(String::from).into();
        let order: Vec<&str> = manager_order(&names).into_iter().map(String::as_str).collect();
        assert_eq!(order, ["msi", "dpkg", "rpm", "apt", "yum", "dnf", "python", "rubygems", "Zypper"]);
    }

    #[test]
    fn version_forms() {
        let spec = json!({"a": "", "b": null, "c": [], "d": "1.2", "e": ["1", ""], "f": {}});
        let packages = parse_packages("c", "apt", &spec).unwrap();
        let versions: Vec<(&str, Vec<&str>)> =
            packages.iter().map(|p| (p.name.as_str(), p.versions.iter().map(String::as_str).collect())).collect();
        assert_eq!(
            versions,
            [("a", vec![]), ("b", vec![]), ("c", vec![]), ("d", vec!["1.2"]), ("e", vec!["1", ""]), ("f", vec![])]
        );
        assert!(parse_packages("c", "apt", &json!({"a": 1})).unwrap_err().contains("must be a string"));
        assert!(parse_packages("c", "apt", &json!({"a": [1]})).is_err());
        assert!(parse_packages("c", "apt", &json!(["a"])).is_err());
    }

    #[test]
    fn option_like_names_are_refused() {
        let p = Package { name: "-oAPT::x".into(), versions: vec![] };
        assert!(check_package("apt", &p).is_err());
        let p = Package { name: "curl".into(), versions: vec!["--reinstall".into()] };
        assert!(check_package("yum", &p).is_err());
        let p = Package { name: "curl".into(), versions: vec!["7.88.1-10".into()] };
        assert!(check_package("yum", &p).is_ok());
    }

    fn managers(section: Value) -> Vec<Item<ManagerPackages>> {
        let config = json!({ "packages": section });
        Sections::parse("c", "", config.as_object().unwrap()).packages.entries().to_vec()
    }

    #[test]
    fn unsupported_managers_warn_and_msi_fails() {
        assert_eq!(apply(&managers(json!({"dpkg": {"x": ""}, "chocolatey": {}}))).unwrap(), BTreeMap::new());
        assert_eq!(
            apply(&managers(json!({"msi": {"x": "http://e/x.msi"}}))).unwrap_err(),
            "MSI support is only available under Windows"
        );
        // A manager's own error, once its turn comes.
        assert_eq!(
            apply(&managers(json!({"apt": {"x": 1}, "msi": {}}))).unwrap_err(),
            "config c, packages apt x: a version must be a string, not a number"
        );
    }
}
