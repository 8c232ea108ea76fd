//! The install: each tool name, as `PATH` finds it and in the install directory
//! (`/opt/aws/bin`), runs this binary — a leftover Python `cfn-init` earlier on `PATH` is
//! the classic trap — and the version.

use super::{Check, Context};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub fn checks(_: &Context) -> Vec<Check> {
    let mut checks = vec![Check::ok("install.version", format!("cfn-bootstrap {}", cfn_aws::VERSION))];
    let Ok(me) = std::fs::canonicalize("/proc/self/exe").or_else(|_| std::env::current_exe()) else {
        checks.push(Check::skipped("install.tools", "the path of this binary is unknown (/proc is not mounted)"));
        return checks;
    };
    let bin = cfn_host::paths::bin_dir();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let (found, missing): (Vec<&cfn_optparse::tables::Table>, Vec<&cfn_optparse::tables::Table>) =
        cfn_optparse::tables::TOOLS.iter().partition(|tool| find_on_path(tool.name, &path).is_some());
    for tool in found {
        checks.push(on_path(tool.name, &path, &me, &bin));
    }
    // The tools PATH does not find: one line for all of them (issue 30), not one each.
    match missing.as_slice() {
        [] => {}
        [one] => checks.push(on_path(one.name, &path, &me, &bin)),
        many => {
            let names: Vec<&str> = many.iter().map(|t| t.name).collect();
            let links: Vec<String> =
                names.iter().map(|name| format!("ln -s {} /usr/local/bin/{name}", me.display())).collect();
            checks.push(Check::warning(
                "install.path",
                format!("{} are not on PATH", names.join(", ")),
                format!("add {} to PATH, or: {}", bin.display(), links.join(" && ")),
            ));
        }
    }
    if !bin.is_dir() {
        let links: Vec<String> = cfn_optparse::tables::TOOLS
            .iter()
            .map(|t| format!("ln -s {} {}", me.display(), bin.join(t.name).display()))
            .collect();
        checks.push(Check::warning(
            "install.links",
            format!("{} does not exist: no tool is installed there", bin.display()),
            format!("mkdir -p {} && {}", bin.display(), links.join(" && ")),
        ));
        return checks;
    }
    let (present, absent): (Vec<&cfn_optparse::tables::Table>, Vec<&cfn_optparse::tables::Table>) =
        cfn_optparse::tables::TOOLS.iter().partition(|tool| std::fs::symlink_metadata(bin.join(tool.name)).is_ok());
    for tool in present {
        checks.push(in_bin_dir(tool.name, &me, &bin));
    }
    match absent.as_slice() {
        [] => {}
        [one] => checks.push(in_bin_dir(one.name, &me, &bin)),
        many => {
            let links: Vec<String> =
                many.iter().map(|t| format!("ln -s {} {}", me.display(), bin.join(t.name).display())).collect();
            let names: Vec<&str> = many.iter().map(|t| t.name).collect();
            checks.push(Check::warning(
                "install.link",
                format!("{} are not in {}", names.join(", "), bin.display()),
                links.join(" && "),
            ));
        }
    }
    checks
}

/// The first executable `name` in the directories of `path`, as a shell finds it.
pub fn find_on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|file| std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

fn on_path(name: &str, path: &std::ffi::OsStr, me: &Path, bin: &Path) -> Check {
    let id = format!("install.path:{name}");
    match find_on_path(name, path) {
        None => Check::warning(
            id,
            format!("{name} is not on PATH"),
            format!("add {} to PATH, or: ln -s {} /usr/local/bin/{name}", bin.display(), me.display()),
        ),
        Some(found) if runs_me(&found, me) => Check::ok(id, format!("{name} on PATH is {}", found.display())),
        Some(found) => Check::failed(
            id,
            format!("PATH finds {} first: {}, not this binary ({})", found.display(), what_is(&found), me.display()),
            format!(
                "remove or rename {}, or put {} before {} on PATH",
                found.display(),
                bin.display(),
                found.parent().unwrap_or(Path::new("/")).display()
            ),
        ),
    }
}

fn in_bin_dir(name: &str, me: &Path, bin: &Path) -> Check {
    let id = format!("install.link:{name}");
    let link = bin.join(name);
    if std::fs::symlink_metadata(&link).is_err() {
        return Check::warning(
            id,
            format!("{} does not exist", link.display()),
            format!("ln -s {} {}", me.display(), link.display()),
        );
    }
    if runs_me(&link, me) {
        Check::ok(id, format!("{} runs this binary", link.display()))
    } else {
        Check::failed(
            id,
            format!("{} is {}, not this binary ({})", link.display(), what_is(&link), me.display()),
            format!("ln -sf {} {}", me.display(), link.display()),
        )
    }
}

fn runs_me(file: &Path, me: &Path) -> bool {
    std::fs::canonicalize(file).is_ok_and(|real| real == me)
}

/// What a file is, in words: a script with its interpreter line, another program, a
/// dangling link.
fn what_is(file: &Path) -> String {
    let Ok(real) = std::fs::canonicalize(file) else {
        return "a link to nothing".to_string();
    };
    if !std::fs::metadata(&real).is_ok_and(|m| m.is_file()) {
        return format!("not a regular file ({})", real.display());
    }
    // Only a regular file is opened: a FIFO would block the run.
    let mut head = [0u8; 128];
    let read = std::fs::File::open(&real).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let head = &head[..read];
    let target = if real == file { String::new() } else { format!(" ({})", real.display()) };
    if let Some(script) = head.strip_prefix(b"#!") {
        let line = script.split(|b| *b == b'\n').next().unwrap_or_default();
        let line: String = String::from_utf8_lossy(line).chars().filter(|c| !c.is_control()).take(80).collect();
        format!("a '#!{}' script{target}", line.trim())
    } else if head.starts_with(b"\x7fELF") {
        format!("another program{target}")
    } else {
        format!("a file that is not this binary{target}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_named_by_its_interpreter_line() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("cfn-init");
        std::fs::write(&script, "#!/usr/bin/python -u\nprint('x')\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(what_is(&script), "a '#!/usr/bin/python -u' script");
        assert_eq!(find_on_path("cfn-init", dir.path().as_os_str()), Some(script.clone()));
        let check = on_path("cfn-init", dir.path().as_os_str(), Path::new("/nowhere/cfn-bootstrap"), dir.path());
        assert_eq!(check.verdict, super::super::Verdict::Failed);
        assert!(check.found.contains("a '#!/usr/bin/python -u' script"), "{}", check.found);
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(find_on_path("cfn-init", dir.path().as_os_str()), None, "not executable");
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::RUSR, 0).unwrap();
        assert_eq!(what_is(&fifo), format!("not a regular file ({})", fifo.display()), "never opened");
    }
}
