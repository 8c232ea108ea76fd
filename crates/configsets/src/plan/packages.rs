//! Packages a build would install, upgrade or downgrade: the managers are asked what is
//! installed with their read-only queries (`dpkg-query`, `apt-cache show` without writing
//! its cache, `rpm -q`, `pip3 show`); no cache is rebuilt and nothing is installed.

use super::Item;
use crate::document::{self, ManagerPackages};
use crate::packages::rpm::{compare_versions, installed_version};
use crate::packages::{Package, apt, check_package, python, yum};
use crate::tool;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Returns manager → the names a build would install or change (its change record).
pub(super) fn plan(
    managers: &[document::Item<ManagerPackages>],
    items: &mut Vec<Item>,
) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut changes = BTreeMap::new();
    for manager in managers {
        let name = manager.key.as_str();
        let section = format!("packages {name}");
        let changed = match (name, manager.parsed()?) {
            ("apt", ManagerPackages::Named(packages)) => plan_apt(packages, &section, items)?,
            ("yum" | "dnf", ManagerPackages::Named(packages)) => plan_rpm_based(name, packages, &section, items)?,
            ("python", ManagerPackages::Named(packages)) => plan_python(packages, &section, items)?,
            // Their installed checks need the package's location or the manager's
            // cache; the plan does not fetch or refresh either.
            ("zypper" | "rubygems", ManagerPackages::Named(packages)) => {
                not_checked(name, packages.iter().map(|p| &p.name), &section, items)
            }
            (_, ManagerPackages::Rpm(entries)) => not_checked(name, entries.iter().map(|e| &e.label), &section, items),
            (_, ManagerPackages::Msi { listed: true }) => {
                return Err("MSI support is only available under Windows".into());
            }
            (_, ManagerPackages::Msi { listed: false }) => Vec::new(),
            // `Named` holds only the managers above; anything else is `Unsupported`.
            _ => {
                items.push(Item::remark(&section, format!("unsupported package manager {name}, ignored")));
                continue;
            }
        };
        changes.insert(manager.key.clone(), changed);
    }
    Ok(changes)
}

/// Every name listed, as a possible install.
fn not_checked<'a>(
    manager: &str,
    names: impl Iterator<Item = &'a String>,
    section: &str,
    items: &mut Vec<Item>,
) -> Vec<String> {
    names
        .map(|name| {
            items.push(Item::change(section, format!("install {name} if {manager} lacks it (not checked)")));
            name.clone()
        })
        .collect()
}

fn query(argv: &[String]) -> Result<tool::Output, String> {
    tool::query_stdout(&argv.iter().map(String::as_str).collect::<Vec<_>>())
}

/// apt's checks (`apt::apply`): the exact installed version, then availability.
fn plan_apt(packages: &[Package], section: &str, items: &mut Vec<Item>) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for package in packages {
        check_package("apt", package)?;
        let mut wanted = false;
        for spec in apt::specs(package) {
            let installed = query(&apt::installed_query_argv(&package.name))?;
            if installed.ok() && apt::is_installed(&installed.text, &spec) {
                continue;
            }
            if !apt::is_available(&query(&apt::show_uncached_argv(&spec))?) {
                return Err(format!("APT does not have {spec} available for installation"));
            }
            let text = match installed.ok().then(|| apt::installed_version(&installed.text)).flatten() {
                Some(version) => format!("install {spec} (installed: {version})"),
                None => format!("install {spec} (not installed)"),
            };
            items.push(Item::change(section, text));
            wanted = true;
        }
        if wanted {
            changed.push(package.name.clone());
        }
    }
    Ok(changed)
}

/// yum's and dnf's decision (`yum::apply`), with the installed version from `rpm -q`
/// (their own `list installed` may write their cache and log).
fn plan_rpm_based(
    manager: &str,
    packages: &[Package],
    section: &str,
    items: &mut Vec<Item>,
) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for package in packages {
        check_package(manager, package)?;
        let (version, spec) = yum::spec(package);
        let installed = installed_version(&package.name)?;
        let text = match (&version, &installed) {
            (None, Some(_)) => continue,
            (None, None) => format!("install {spec} (not installed)"),
            (Some(wanted), Some(have)) if have == wanted || have.starts_with(&format!("{wanted}-")) => continue,
            (Some(wanted), have) => {
                let verb = match compare_versions(Some(wanted), have.as_deref()) {
                    Ordering::Greater => "upgrade to",
                    _ => "downgrade to",
                };
                format!("{verb} {spec} (installed: {})", have.as_deref().unwrap_or("none"))
            }
        };
        items.push(Item::change(section, text));
        changed.push(package.name.clone());
    }
    Ok(changed)
}

/// pip3's check (`python::apply`): every version asked for is the installed one.
fn plan_python(packages: &[Package], section: &str, items: &mut Vec<Item>) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for package in packages {
        check_package("python", package)?;
        if python::satisfied(package)? {
            continue;
        }
        let specs = python::specs(package);
        items.push(Item::change(section, format!("install {}", specs.join(" "))));
        changed.push(package.name.clone());
    }
    Ok(changed)
}
