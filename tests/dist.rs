//! The shipped artifacts of `cargo xtask dist` (x86_64 only): the static binary in a
//! root without libc, the tarball's links, `dist/install.sh`, and the .deb and .rpm
//! installed and removed with the real dpkg and rpm inside the isolated Debian root.
//!
//! The artifacts come from `CFN_TEST_DIST` (`cargo xtask test` builds them before the
//! tests: a cached release build, seconds when nothing changed); without it the first
//! test runs `cargo xtask dist --skip-aarch64` with its own target directory
//! (`target/dist-test`, so it never waits for the outer cargo's lock).
//!
//! Tests that need root (chroot, namespaces) or the Debian root fail and say so without
//! them; `cargo xtask test` provides both.

mod common;

use common::TOOLS;
use common::debian_root::{Overlay, PATH, rootfs};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `target/dist` with the x86_64 artifacts.
fn dist() -> &'static Path {
    common::dist_dir()
}

fn artifact(name: &str) -> PathBuf {
    let path = dist().join(name);
    assert!(path.is_file(), "{} is missing from {}", name, dist().display());
    path
}

fn tarball() -> PathBuf {
    artifact(&format!("cfn-bootstrap-{VERSION}-x86_64-linux.tar.gz"))
}

fn deb() -> PathBuf {
    artifact(&format!("cfn-bootstrap_{VERSION}-1_amd64.deb"))
}

fn rpm() -> PathBuf {
    artifact(&format!("cfn-bootstrap-{VERSION}-1.x86_64.rpm"))
}

/// The tarball unpacked into a temporary directory; returns it and the top folder.
fn unpacked() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("tar").arg("-xzf").arg(tarball()).arg("-C").arg(dir.path()).status().unwrap();
    assert!(status.success(), "tar -xzf failed");
    let top = dir.path().join(format!("cfn-bootstrap-{VERSION}-x86_64-linux"));
    (dir, top)
}

/// `chroot`, found before the environment is cleared.
fn chroot() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/sbin")])
        .map(|d| d.join("chroot"))
        .find(|p| p.is_file())
        .expect("chroot is installed")
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

fn show(what: &str, output: &Output) -> String {
    format!("{what}: {}\n--- stdout\n{}--- stderr\n{}", output.status, String::from_utf8_lossy(&output.stdout), {
        String::from_utf8_lossy(&output.stderr)
    })
}

/// The manual pages every package installs (`cfn-bootstrap man --dir`).
const PAGES: &[&str] =
    &["cfn-bootstrap", "cfn-bootstrap-completions", "cfn-bootstrap-help", "cfn-bootstrap-man", "cfn-bootstrap-status"];

/// `cfn-bootstrap` and the tools: each has a page and a completion script per shell.
fn commands() -> impl Iterator<Item = &'static str> {
    std::iter::once("cfn-bootstrap").chain(TOOLS.iter().copied())
}

/// The files under `share/` (the tarball) or `usr/share/` (packages): `.1` pages (with
/// `page_suffix`, `.gz` in packages) and completion scripts, zsh's in `zsh_dir`.
fn share_files(page_suffix: &str, zsh_dir: &str) -> Vec<String> {
    let pages = PAGES.iter().copied().chain(TOOLS.iter().copied()).map(|p| format!("man/man1/{p}.1{page_suffix}"));
    let bash = commands().map(|c| format!("bash-completion/completions/{c}"));
    let zsh = commands().map(|c| format!("zsh/{zsh_dir}/_{c}"));
    let fish = commands().map(|c| format!("fish/vendor_completions.d/{c}.fish"));
    pages.chain(bash).chain(zsh).chain(fish).collect()
}

/// `share_files` with the directories that hold them, as `tree` lists them.
fn share_tree(prefix: &str, page_suffix: &str, zsh_dir: &str) -> Vec<String> {
    let dirs = ["man", "man/man1", "bash-completion", "bash-completion/completions", "zsh"]
        .into_iter()
        .map(String::from)
        .chain([format!("zsh/{zsh_dir}"), "fish".into(), "fish/vendor_completions.d".into()]);
    std::iter::once(prefix.trim_end_matches('/').to_string())
        .chain(dirs.chain(share_files(page_suffix, zsh_dir)).map(|p| format!("{prefix}{p}")))
        .collect()
}

/// Every regular file, link and directory under `root`, relative, sorted.
fn tree(root: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.strip_prefix(base).unwrap().display().to_string());
            if path.symlink_metadata().unwrap().is_dir() {
                walk(base, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn static_binary_runs_in_an_empty_root_without_libc() {
    assert!(is_root(), "chroot needs root");
    let (_unpacked, top) = unpacked();
    let root = tempfile::tempdir().unwrap();
    std::fs::copy(top.join("bin/cfn-bootstrap"), root.path().join("cfn-bootstrap")).unwrap();
    let metadata = serde_json::json!({ "AWS::CloudFormation::Init": { "config": { "files": {
        "/srv/hello.txt": { "content": "Hello from a root without libc\n", "mode": "000640" }
    } } } });
    std::fs::write(root.path().join("metadata.json"), metadata.to_string()).unwrap();
    assert_eq!(tree(root.path()), ["cfn-bootstrap", "metadata.json"]);
    let chroot_program = chroot();
    let chroot = |args: &[&str], env: &[(&str, &str)]| {
        Command::new(&chroot_program)
            .arg(root.path())
            .arg("/cfn-bootstrap")
            .args(args)
            .env_clear()
            .envs(env.iter().copied())
            .output()
            .expect("run chroot")
    };

    let help = chroot(&["cfn-init", "--help"], &[]);
    assert!(help.status.success(), "{}", show("cfn-init --help", &help));
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("Usage: cfn-init [options]\n"), "{}", text(&help));
    let version = chroot(&["--version"], &[]);
    assert_eq!(String::from_utf8_lossy(&version.stdout), format!("cfn-bootstrap {VERSION}\n"));

    // No /var/log: the reference's fallback to stderr, and the build still succeeds.
    let run = chroot(&["cfn-init", "-v", "/metadata.json"], &[]);
    assert!(run.status.success(), "{}", show("cfn-init", &run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.starts_with("Could not open /var/log/cfn-init.log for logging.  Using stderr instead.\n"),
        "{stderr}"
    );
    assert!(stderr.contains("[DEBUG] Writing content to /srv/hello.txt"), "{stderr}");
    assert!(stderr.contains("[INFO] -----------------------Build complete-----------------------"), "{stderr}");
    let written = root.path().join("srv/hello.txt");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "Hello from a root without libc\n");
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&written.metadata().unwrap().permissions()) & 0o777, 0o640);
    assert!(root.path().join("var/lib/cfn-init/data/metadata.json").is_file());

    // With the log directory moved inside the root, the log is a file again.
    std::fs::create_dir(root.path().join("logs")).unwrap();
    std::fs::remove_file(&written).unwrap();
    let run = chroot(&["cfn-init", "/metadata.json"], &[("CFN_BOOTSTRAP_LOG_DIR", "/logs")]);
    assert!(run.status.success(), "{}", show("cfn-init", &run));
    assert_eq!(text(&run), "");
    let log = std::fs::read_to_string(root.path().join("logs/cfn-init.log")).unwrap();
    assert!(log.contains("[INFO] ConfigSets completed"), "{log}");
    assert!(written.is_file());
}

#[test]
fn container_context_holds_only_the_binary_and_runs_as_the_image_would() {
    let context = dist().join("container");
    let recipe = std::fs::read_to_string(context.join("Containerfile")).unwrap();
    for line in ["FROM scratch", "COPY rootfs-${TARGETARCH}/ /", "ENTRYPOINT [\"/opt/aws/bin/cfn-bootstrap\"]"] {
        assert!(recipe.lines().any(|l| l == line), "{line:?} missing from the Containerfile:\n{recipe}");
    }
    let root = context.join("rootfs-amd64");
    let mut expected: Vec<String> = ["etc", "etc/cfn", "opt", "opt/aws", "opt/aws/bin", "opt/aws/bin/cfn-bootstrap"]
        .into_iter()
        .chain(["tmp", "var", "var/lib", "var/log"])
        .map(String::from)
        .chain(TOOLS.iter().map(|t| format!("opt/aws/bin/{t}")))
        .collect();
    expected.sort();
    assert_eq!(tree(&root), expected);
    assert!(is_root(), "chroot needs root");
    // What `docker run IMAGE cfn-init --help` runs: the entrypoint with PATH=/opt/aws/bin.
    let help = Command::new(chroot())
        .arg(&root)
        .args(["/opt/aws/bin/cfn-bootstrap", "cfn-init", "--help"])
        .env_clear()
        .env("PATH", "/opt/aws/bin")
        .output()
        .unwrap();
    assert!(help.status.success(), "{}", show("cfn-init --help in the image's root", &help));
    let link = Command::new(chroot()).arg(&root).arg("/opt/aws/bin/cfn-signal").arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&link.stdout).starts_with("Usage: cfn-signal "), "{}", text(&link));
}

#[test]
fn tarball_links_resolve_and_every_tool_runs_from_its_link() {
    let (_unpacked, top) = unpacked();
    let mut expected: Vec<String> = ["LICENSE", "README", "bin", "bin/cfn-bootstrap", "cfn-hup.service", "init.d"]
        .into_iter()
        .chain(["init.d/cfn-hup", "install.sh"])
        .map(String::from)
        .chain(TOOLS.iter().map(|t| format!("bin/{t}")))
        .chain(share_tree("share/", "", "site-functions"))
        .collect();
    expected.sort();
    assert_eq!(tree(&top), expected);
    // The pages and scripts are the binary's own (`cfn-bootstrap man`, `completions`).
    let page = Command::new(top.join("bin/cfn-bootstrap")).args(["man", "cfn-hup"]).output().unwrap();
    assert_eq!(std::fs::read(top.join("share/man/man1/cfn-hup.1")).unwrap(), page.stdout);
    let script = Command::new(top.join("bin/cfn-bootstrap")).args(["completions", "zsh", "cfn-init"]).output().unwrap();
    assert_eq!(std::fs::read(top.join("share/zsh/site-functions/_cfn-init")).unwrap(), script.stdout);
    let binary = top.join("bin/cfn-bootstrap");
    let version = Command::new(&binary).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&version.stdout), format!("cfn-bootstrap {VERSION}\n"));
    for tool in TOOLS {
        let link = top.join("bin").join(tool);
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("cfn-bootstrap"), "{tool} is not a relative link");
        assert!(link.is_file(), "{tool} does not resolve");
        let help = Command::new(&link).arg("--help").output().unwrap();
        assert!(help.status.success(), "{}", show(&format!("{tool} --help"), &help));
        assert!(String::from_utf8_lossy(&help.stdout).starts_with(&format!("Usage: {tool} ")), "{}", text(&help));
        // As in the reference, the tools themselves have no --version (optparse's error,
        // exit 2); `cfn-bootstrap --version` prints the version.
        let version = Command::new(&link).arg("--version").output().unwrap();
        assert_eq!(version.status.code(), Some(2), "{}", show(&format!("{tool} --version"), &version));
        assert!(text(&version).ends_with(&format!("{tool}: error: no such option: --version\n")), "{}", text(&version));
        // The multicall form through the link's own name works too.
        let list = Command::new(&binary).args([*tool, "--help"]).output().unwrap();
        assert!(list.status.success(), "{}", show(&format!("cfn-bootstrap {tool} --help"), &list));
    }
    assert!(std::fs::read_to_string(top.join("README")).unwrap().contains("install.sh"));
    assert!(std::fs::read_to_string(top.join("LICENSE")).unwrap().contains("Apache License"));
}

/// Runs the tarball's install.sh with `args`; asserts success.
fn install_sh(top: &Path, args: &[&str]) -> String {
    let output = Command::new("sh").arg(top.join("install.sh")).args(args).env("PATH", PATH).output().unwrap();
    assert!(output.status.success(), "{}", show(&format!("install.sh {args:?}"), &output));
    text(&output)
}

#[test]
fn install_sh_into_a_root_is_idempotent_and_uninstall_leaves_nothing() {
    let (_unpacked, top) = unpacked();
    let help = install_sh(&top, &["--help"]);
    assert!(help.contains("--uninstall") && help.contains("--enable-cfn-hup"), "{help}");

    for (init, service) in [("sysv", "etc/init.d/cfn-hup"), ("systemd", "etc/systemd/system/cfn-hup.service")] {
        let root = tempfile::tempdir().unwrap();
        let r = root.path().to_str().unwrap();
        // Something of the administrator's that must survive.
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::write(root.path().join("etc/hostname"), "host\n").unwrap();
        let before = tree(root.path());

        let out = install_sh(&top, &["--root", r, "--init", init]);
        assert!(out.contains(&format!("cfn-hup service: {init}")), "{out}");
        let installed = tree(root.path());
        for tool in TOOLS {
            let link = root.path().join("opt/aws/bin").join(tool);
            assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("cfn-bootstrap"));
            let help = Command::new(&link).arg("--help").output().unwrap();
            assert!(help.status.success(), "{}", show(tool, &help));
        }
        let service = std::fs::read_to_string(root.path().join(service)).unwrap();
        assert!(service.contains("/opt/aws/bin/cfn-hup"), "{service}");
        // Manual pages and completion scripts under /usr/share (zsh's in site-functions:
        // this root has no Debian vendor-completions directory).
        for file in share_files("", "site-functions") {
            let installed = root.path().join("usr/share").join(&file);
            assert_eq!(std::fs::read(&installed).ok(), std::fs::read(top.join("share").join(&file)).ok(), "{file}");
        }
        // Idempotent: a second run changes nothing.
        install_sh(&top, &["--root", r, "--init", init]);
        assert_eq!(tree(root.path()), installed);

        let out = install_sh(&top, &["--root", r, "--uninstall"]);
        assert!(out.contains("removed"), "{out}");
        assert_eq!(tree(root.path()), before, "--uninstall ({init}) left files behind or removed others");
        let again = install_sh(&top, &["--root", r, "--uninstall"]);
        assert!(again.contains("not installed"), "{again}");
    }

    // Another prefix is honoured in the service files; foreign files are not replaced.
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    install_sh(&top, &["--root", r, "--init", "systemd", "--prefix", "/usr/local/bin"]);
    let unit = std::fs::read_to_string(root.path().join("etc/systemd/system/cfn-hup.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/cfn-hup --foreground"), "{unit}");
    install_sh(&top, &["--root", r, "--uninstall"]);
    assert_eq!(tree(root.path()), Vec::<String>::new());
    std::fs::create_dir_all(root.path().join("opt/aws/bin")).unwrap();
    std::fs::write(root.path().join("opt/aws/bin/cfn-init"), "#!/usr/bin/python3\n").unwrap();
    let refused =
        Command::new("sh").arg(top.join("install.sh")).args(["--root", r, "--init", "none"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", show("install.sh over a foreign cfn-init", &refused));
    assert!(text(&refused).contains("was not installed by this script (use --force"), "{}", text(&refused));
    assert_eq!(std::fs::read_to_string(root.path().join("opt/aws/bin/cfn-init")).unwrap(), "#!/usr/bin/python3\n");
}

/// Runs `script` (sh -e, stderr merged) in an overlay of the Debian root, with `files`
/// (name → host path) copied to /tmp first.
fn in_debian_root(files: &[(&str, &Path)], script: &str) -> (i32, String) {
    let overlay = Overlay::new(rootfs());
    for (name, from) in files {
        overlay.copy_in(name, from);
    }
    let ran = overlay.run(script);
    (ran.code, ran.out)
}

/// Lists the root's files (not the virtual or scratch ones, nor package databases and
/// logs, which record the history) into `/tmp/<name>.tree`.
const SNAPSHOT: &str = r#"snapshot() {
    find / -xdev \( -path /proc -o -path /dev -o -path /run -o -path /tmp -o -path /var/log \
        -o -path /var/lib/dpkg -o -path /var/lib/rpm -o -path "$HOME/.rpmdb" -o -path /var/cache \) -prune -o -print | sort > "/tmp/$1.tree"
}
"#;

/// The checks made for every tool link of an installation in /opt/aws/bin.
fn links_work() -> String {
    format!(
        "for t in {}; do test \"$(readlink /opt/aws/bin/$t)\" = cfn-bootstrap; /opt/aws/bin/$t --help >/dev/null; done; echo links ok\n",
        TOOLS.join(" ")
    )
}

/// The checks made for the manual pages (compressed) and completion scripts a package
/// installs under /usr/share, zsh's in `zsh_dir`: each is there, each page is a page, and
/// bash completes a tool's option with the installed script.
fn share_works(zsh_dir: &str) -> String {
    let files: Vec<String> = share_files(".gz", zsh_dir).into_iter().map(|f| format!("/usr/share/{f}")).collect();
    format!(
        "for f in {files}; do test -s $f; done; echo completions ok\n\
         for p in /usr/share/man/man1/cfn-*.1.gz; do zcat $p | grep -qx '.SH NAME'; done; echo pages ok\n\
         cat > /tmp/complete.bash <<'EOF'\n\
         source /usr/share/bash-completion/completions/cfn-init\n\
         COMP_WORDS=(cfn-init --configs); COMP_CWORD=1\n\
         fn=$(complete -p cfn-init | sed -E 's/.*-F ([^ ]+) .*/\\1/')\n\
         \"$fn\" cfn-init --configs cfn-init\n\
         echo \"completes ${{COMPREPLY[*]}}\"\n\
         EOF\n\
         bash --norc /tmp/complete.bash\n",
        files = files.join(" ")
    )
}

fn no_links() -> String {
    format!(
        "for t in {}; do test ! -e /opt/aws/bin/$t && test ! -L /opt/aws/bin/$t; done; echo links gone\n",
        TOOLS.join(" ")
    )
}

#[test]
fn deb_installs_and_uninstalls_cleanly_in_the_debian_root() {
    let script = format!(
        "{SNAPSHOT}snapshot before\n\
         dpkg -i /tmp/cfn.deb\n\
         dpkg-query -W -f='${{Package}} ${{Version}} ${{Status}}\\n' cfn-bootstrap\n\
         {links}\
         /opt/aws/bin/cfn-bootstrap --version\n\
         test -f /lib/systemd/system/cfn-hup.service && echo unit ok\n\
         test -x /etc/init.d/cfn-hup && /etc/init.d/cfn-hup status || echo \"status $?\"\n\
         {share}\
         dpkg -i /tmp/cfn.deb >/dev/null && echo reinstalled\n\
         dpkg -r cfn-bootstrap\n\
         {gone}\
         test -f /etc/init.d/cfn-hup && echo conffile kept\n\
         dpkg -P cfn-bootstrap\n\
         dpkg-query -W cfn-bootstrap 2>/dev/null || echo not installed\n\
         snapshot after\n\
         diff /tmp/before.tree /tmp/after.tree && echo same files\n",
        links = links_work(),
        gone = no_links(),
        share = share_works("vendor-completions"),
    );
    let (code, out) = in_debian_root(&[("cfn.deb", &deb())], &script);
    assert_eq!(code, 0, "{out}");
    for line in [
        &format!("cfn-bootstrap {VERSION}-1 install ok installed"),
        "links ok",
        &format!("cfn-bootstrap {VERSION}"),
        "unit ok",
        "cfn-hup is stopped",
        "pages ok",
        "completions ok",
        "completes --configsets",
        "reinstalled",
        "links gone",
        "conffile kept",
        "not installed",
        "same files",
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in:\n{out}");
    }
}

#[test]
fn rpm_installs_and_erases_cleanly_with_the_real_rpm() {
    // Debian's rpm database knows no /bin/sh provider, hence --nodeps. The SysV script's
    // parents /etc/rc.d/init.d are created by rpm and stay (on the Red Hat family they
    // exist and belong to chkconfig/initscripts).
    let script = format!(
        "{SNAPSHOT}snapshot before\n\
         rpm -i --nodeps /tmp/cfn.rpm\n\
         rpm -q cfn-bootstrap\n\
         rpm -V --nodeps cfn-bootstrap && echo verified\n\
         {links}\
         test -f /usr/lib/systemd/system/cfn-hup.service && test -x /etc/rc.d/init.d/cfn-hup && echo services ok\n\
         {share}\
         rpm -e cfn-bootstrap\n\
         {gone}\
         rpm -q cfn-bootstrap || true\n\
         snapshot after\n\
         grep -vx -e /etc/rc.d -e /etc/rc.d/init.d /tmp/after.tree > /tmp/after-rc.tree\n\
         diff /tmp/before.tree /tmp/after-rc.tree && echo same files\n",
        links = links_work(),
        gone = no_links(),
        share = share_works("site-functions"),
    );
    let (code, out) = in_debian_root(&[("cfn.rpm", &rpm())], &script);
    assert_eq!(code, 0, "{out}");
    for line in [
        &format!("cfn-bootstrap-{VERSION}-1.x86_64"),
        "verified",
        "links ok",
        "services ok",
        "pages ok",
        "completions ok",
        "completes --configsets",
        "links gone",
        "package cfn-bootstrap is not installed",
        "same files",
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in:\n{out}");
    }
}

#[test]
fn install_sh_in_the_debian_root_enables_cfn_hup_and_uninstall_restores_the_root() {
    let (_unpacked, top) = unpacked();
    // systemd (systemctl is installed, systemd does not run: enabled offline), then SysV
    // with update-rc.d; both idempotent, both undone by --uninstall.
    let script = format!(
        "{SNAPSHOT}snapshot before\n\
         cd /tmp/cfn\n\
         ./install.sh --enable-cfn-hup\n\
         ./install.sh --enable-cfn-hup >/dev/null\n\
         {links}\
         systemctl is-enabled cfn-hup.service\n\
         ./install.sh --uninstall\n\
         {gone}\
         snapshot systemd\n\
         diff /tmp/before.tree /tmp/systemd.tree && echo systemd: same files\n\
         ./install.sh --init sysv --enable-cfn-hup\n\
         ./install.sh --init sysv --enable-cfn-hup >/dev/null\n\
         ls /etc/rc2.d | grep cfn-hup\n\
         /etc/init.d/cfn-hup status || true\n\
         ./install.sh --uninstall\n\
         ls /etc/rc2.d | grep cfn-hup || echo no rc links\n\
         snapshot sysv\n\
         diff /tmp/before.tree /tmp/sysv.tree && echo sysv: same files\n",
        links = links_work(),
        gone = no_links(),
    );
    let (code, out) = in_debian_root(&[("cfn", &top)], &script);
    assert_eq!(code, 0, "{out}");
    for line in [
        &format!("cfn-bootstrap {VERSION} installed in /opt/aws/bin (cfn-hup service: systemd)"),
        "links ok",
        "enabled",
        "cfn-bootstrap removed from /",
        "links gone",
        "systemd: same files",
        &format!("cfn-bootstrap {VERSION} installed in /opt/aws/bin (cfn-hup service: sysv)"),
        "S01cfn-hup",
        "cfn-hup is stopped",
        "no rc links",
        "sysv: same files",
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in:\n{out}");
    }
}
