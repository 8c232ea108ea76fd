//! rubygems (INIT-PKG-09): per gem and per version, an installed check and an install
//! with the modern flags of the 2.0 line: `gem list --installed '^name$' [--version
//! v]` replaces the deprecated `gem query -i -n`, and `gem install -b --no-document`
//! replaces `--no-ri --no-rdoc`, which RubyGems 3 rejects (BUG-GEMFLAGS).

use super::{Package, check_package};
use crate::tool::{self, tool_error};

/// The name as an anchored regular expression (gem names may hold `.`).
fn name_pattern(name: &str) -> String {
    let mut p = String::from("^");
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() && c != '_' && c != '-' {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('$');
    p
}

pub fn query_argv(name: &str, version: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> = ["gem", "list", "--installed", &name_pattern(name)].map(String::from).into();
    if let Some(v) = version {
        argv.extend(["--version".to_string(), v.to_string()]);
    }
    argv
}

pub fn install_argv(name: &str, version: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> = ["gem", "install", "-b", "--no-document", name].map(String::from).into();
    if let Some(v) = version {
        argv.extend(["-v".to_string(), format!("= {v}")]);
    }
    argv
}

fn install(name: &str, version: Option<&str>) -> Result<bool, String> {
    let shown = version.unwrap_or("None");
    tracing::debug!("Checking to see if {name}-{shown} is already installed");
    let query = query_argv(name, version);
    if tool::query(&query.iter().map(String::as_str).collect::<Vec<_>>())?.ok() {
        tracing::info!("{name}-{shown} is already installed, skipping.");
        return Ok(false);
    }
    tracing::info!("Installing {name} version {shown} via gem");
    let argv = install_argv(name, version);
    let result = tool::logged(&argv.join(" "), argv, &[])?;
    if !result.ok() {
        tracing::error!("Gem failed. Output: {}", result.text);
        return Err(tool_error(format!("Failed to install gem: {name}-{shown}"), result.code));
    }
    tracing::info!("Gem installed: {name}-{shown}");
    tracing::debug!("Gem output: {}", result.text);
    Ok(true)
}

pub fn apply(packages: &[Package]) -> Result<Vec<String>, String> {
    if packages.is_empty() {
        tracing::debug!("No gems specified");
        return Ok(Vec::new());
    }
    let mut changed = Vec::new();
    for package in packages {
        check_package("rubygems", package)?;
        let mut installed = false;
        if package.versions.is_empty() {
            installed = install(&package.name, None)?;
        } else {
            for version in &package.versions {
                installed |= install(&package.name, Some(version).filter(|v| !v.is_empty()).map(String::as_str))?;
            }
        }
        if installed {
            changed.push(package.name.clone());
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gem_argv_forms() {
        assert_eq!(query_argv("rails", None), ["gem", "list", "--installed", "^rails$"]);
        assert_eq!(
            query_argv("net.http", Some("1.0")),
            ["gem", "list", "--installed", "^net\\.http$", "--version", "1.0"]
        );
        assert_eq!(install_argv("rails", None), ["gem", "install", "-b", "--no-document", "rails"]);
        assert_eq!(
            install_argv("rails", Some("7.1.0")),
            ["gem", "install", "-b", "--no-document", "rails", "-v", "= 7.1.0"]
        );
    }
}
