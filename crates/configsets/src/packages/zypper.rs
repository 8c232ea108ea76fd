//! zypper (INIT-PKG-10, the 2.0 line's manager): the yum version handling (a list
//! means its highest version, spec `name-version`), `zypper search --match-exact` for
//! the installed and available checks, `zypper install -y` for upgrades and
//! `zypper install -y --oldpackage --force-resolution` for downgrades. No cache
//! refresh, as in 2.0.

use super::rpm::{compare_versions, installed_version};
use super::yum::spec;
use super::{Package, check_package};
use crate::tool::{self, py_list, tool_error};
use std::cmp::Ordering;

fn argv(rest: &[&str]) -> Vec<String> {
    std::iter::once("zypper").chain(rest.iter().copied()).map(String::from).collect()
}

pub fn installed_argv(spec: &str) -> Vec<String> {
    argv(&["search", "--match-exact", "--installed-only", spec])
}

pub fn available_argv(spec: &str) -> Vec<String> {
    argv(&["search", "--match-exact", "--not-installed-only", spec])
}

pub fn install_argv(specs: &[String]) -> Vec<String> {
    let mut a = argv(&["install", "-y"]);
    a.extend(specs.iter().cloned());
    a
}

pub fn downgrade_argv(specs: &[String]) -> Vec<String> {
    let mut a = argv(&["install", "-y", "--oldpackage", "--force-resolution"]);
    a.extend(specs.iter().cloned());
    a
}

fn ok(argv: &[String]) -> Result<bool, String> {
    Ok(tool::query(&argv.iter().map(String::as_str).collect::<Vec<_>>())?.ok())
}

pub fn apply(packages: &[Package]) -> Result<Vec<String>, String> {
    if packages.is_empty() {
        tracing::debug!("No packages specified for zypper");
        return Ok(Vec::new());
    }
    for package in packages {
        check_package("zypper", package)?;
    }
    let (mut upgrade, mut downgrade, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    for package in packages {
        let (version, spec) = spec(package);
        if ok(&installed_argv(&spec))? {
            tracing::debug!("{spec} will not be installed as it is already present");
            continue;
        }
        if !ok(&available_argv(&spec))? {
            tracing::error!("{spec} is not available to be installed");
            return Err(format!("Zypper does not have {spec} available for installation"));
        }
        match &version {
            Some(requested)
                if compare_versions(Some(requested), installed_version(&package.name)?.as_deref())
                    != Ordering::Greater =>
            {
                downgrade.push(spec)
            }
            _ => upgrade.push(spec),
        }
        changed.push(package.name.clone());
    }
    if changed.is_empty() {
        tracing::debug!("All zypper packages were already installed");
        return Ok(Vec::new());
    }
    if !upgrade.is_empty() {
        let result = tool::logged(&format!("zypper install {}", upgrade.join(" ")), install_argv(&upgrade), &[])?;
        if !result.ok() {
            tracing::error!("Zypper failed. Output: {}", result.text);
            return Err(tool_error("Could not successfully install/update zypper packages", result.code));
        }
    }
    if !downgrade.is_empty() {
        let result =
            tool::logged(&format!("zypper downgrade {}", downgrade.join(" ")), downgrade_argv(&downgrade), &[])?;
        if !result.ok() {
            tracing::error!("Zypper failed. Output: {}", result.text);
            return Err(tool_error("Could not successfully downgrade zypper packages", result.code));
        }
    }
    tracing::info!("Zypper installed {}", py_list(&changed));
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zypper_argv_forms() {
        assert_eq!(installed_argv("vim-9.0"), ["zypper", "search", "--match-exact", "--installed-only", "vim-9.0"]);
        assert_eq!(available_argv("vim"), ["zypper", "search", "--match-exact", "--not-installed-only", "vim"]);
        assert_eq!(install_argv(&["vim".into(), "git-2.4".into()]), ["zypper", "install", "-y", "vim", "git-2.4"]);
        assert_eq!(
            downgrade_argv(&["vim-8".into()]),
            ["zypper", "install", "-y", "--oldpackage", "--force-resolution", "vim-8"]
        );
        let p = Package { name: "vim".into(), versions: vec!["8.2".into(), "9.0".into()] };
        assert_eq!(spec(&p).1, "vim-9.0");
    }
}
