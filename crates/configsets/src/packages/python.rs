//! python (INIT-PKG-08): `pip3 install <specs…>` (the 2.0 line's tool; 1.4 ran
//! easy_install). Specs are `name`, `name==version`, or the version itself when it
//! is an `http(s)://` URL; a list gives several specs.
//!
//! The reference installed every listed package on every run and reported them all
//! as changed, so services that named them always restarted (WEAK-python). Here a
//! package whose specs are all satisfied according to `pip3 show` (any version for
//! `name`, the same version for `name==version`) is left alone and not reported;
//! URL specs are always installed. "The same" follows pip's `==` where it is simple
//! (PEP 440: case, a leading `v`, zeros padding the release: `1.0.0` is `1.0`); other
//! spellings are compared as written, so at worst pip is run and finds nothing to do.

use super::{Package, check_package};
use crate::tool::{self, py_list, tool_error};

/// The pip spec for one version entry.
pub fn pkg_spec(name: &str, version: &str) -> String {
    if version.is_empty() {
        return name.to_string();
    }
    let lower = version.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return version.to_string();
    }
    format!("{name}=={version}")
}

pub fn specs(package: &Package) -> Vec<String> {
    if package.versions.is_empty() {
        return vec![package.name.clone()];
    }
    package.versions.iter().map(|v| pkg_spec(&package.name, v)).collect()
}

pub fn show_argv(name: &str) -> Vec<String> {
    ["pip3", "show", name].map(String::from).into()
}

pub fn install_argv(specs: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = ["pip3", "install"].map(String::from).into();
    argv.extend(specs.iter().cloned());
    argv
}

/// The `Version:` line of `pip3 show` output.
pub fn shown_version(output: &str) -> Option<&str> {
    output.lines().find_map(|l| l.strip_prefix("Version:")).map(str::trim)
}

/// Whether every spec of `package` is met by the installed version.
pub(crate) fn satisfied(package: &Package) -> Result<bool, String> {
    let specs = specs(package);
    if specs.iter().any(|s| s.contains("://")) {
        return Ok(false);
    }
    let out = tool::query_stdout(&["pip3", "show", &package.name])?;
    let Some(installed) = out.ok().then(|| shown_version(&out.text)).flatten() else { return Ok(false) };
    Ok(package.versions.iter().all(|v| v.is_empty() || same_version(v, installed)))
}

/// Whether pip's `==` takes `asked` to be `installed` (see the module comment).
pub fn same_version(asked: &str, installed: &str) -> bool {
    release_and_rest(asked) == release_and_rest(installed)
}

/// The release numbers without trailing zeros, and the rest of the version lowercased.
fn release_and_rest(version: &str) -> (Vec<u64>, String) {
    let lower = version.trim().to_ascii_lowercase();
    let version = lower.strip_prefix('v').unwrap_or(&lower);
    let mut release = Vec::new();
    let mut rest = version;
    loop {
        let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let Ok(number) = rest[..end].parse::<u64>() else { break };
        release.push(number);
        rest = &rest[end..];
        match rest.strip_prefix('.') {
            Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => rest = after,
            _ => break,
        }
    }
    while release.last() == Some(&0) {
        release.pop();
    }
    (release, rest.to_string())
}

pub fn apply(packages: &[Package]) -> Result<Vec<String>, String> {
    if packages.is_empty() {
        tracing::debug!("No packages specified for python");
        return Ok(Vec::new());
    }
    let (mut to_install, mut changed) = (Vec::new(), Vec::new());
    for package in packages {
        check_package("python", package)?;
        if satisfied(package)? {
            tracing::debug!("{} will not be installed as it is already present", package.name);
            continue;
        }
        to_install.extend(specs(package));
        changed.push(package.name.clone());
    }
    if to_install.is_empty() {
        tracing::info!("All python packages were already installed");
        return Ok(Vec::new());
    }
    tracing::info!("Attempting to install {} via pip3", py_list(&to_install));
    let argv = install_argv(&to_install);
    let result = tool::logged(&argv.join(" "), argv, &[])?;
    if !result.ok() {
        tracing::error!("pip3 failed. Output: {}", result.text);
        return Err(tool_error("Could not successfully install python packages", result.code));
    }
    tracing::info!("pip3 installed {}", py_list(&to_install));
    tracing::debug!("pip3 output: {}", result.text);
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_spec_forms() {
        let p = |v: &[&str]| Package { name: "boto3".into(), versions: v.iter().map(|s| s.to_string()).collect() };
        assert_eq!(specs(&p(&[])), ["boto3"]);
        assert_eq!(specs(&p(&["1.34.0"])), ["boto3==1.34.0"]);
        assert_eq!(specs(&p(&["1.0", ""])), ["boto3==1.0", "boto3"]);
        assert_eq!(specs(&p(&["HTTPS://example.com/boto3.tar.gz"])), ["HTTPS://example.com/boto3.tar.gz"]);
        assert_eq!(install_argv(&["a==1".into(), "b".into()]), ["pip3", "install", "a==1", "b"]);
        assert_eq!(show_argv("a"), ["pip3", "show", "a"]);
        assert_eq!(shown_version("Name: a\nVersion: 1.2.3\nSummary: x\n"), Some("1.2.3"));
        assert_eq!(shown_version("WARNING: Package(s) not found: a\n"), None);
    }

    #[test]
    fn versions_are_the_same_as_pip_takes_them() {
        for (asked, installed) in [("1.0", "1.0"), ("1.0.0", "1.0"), ("1", "1.0"), ("V1.0", "1.0"), ("01.2", "1.2")] {
            assert!(same_version(asked, installed), "{asked} {installed}");
        }
        assert!(same_version("2.0.0RC1", "2.0rc1"));
        for (asked, installed) in [("1.0", "1.0.1"), ("1.1", "1.10"), ("1.0rc1", "1.0"), ("1.0.*", "1.0"), ("", "1.0")]
        {
            assert!(!same_version(asked, installed), "{asked} {installed}");
        }
        // A spelling left as written: pip would take it as 1.0.post1, so pip is asked.
        assert!(!same_version("1.0-1", "1.0.post1"));
    }
}
