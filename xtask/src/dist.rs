//! `cargo xtask dist [--skip-aarch64]`: the release artifacts in `target/dist/`.
//!
//! - static (musl) binaries for x86_64 and aarch64 (cross-compiled with Debian's
//!   `gcc-aarch64-linux-gnu` for ring's C code and as the linker), checked to be
//!   static ELF files of the right machine and smoke-run (`--version`, `--list`;
//!   the aarch64 one under `qemu-aarch64-static` when installed);
//! - per architecture `cfn-bootstrap-<ver>-<arch>-linux.tar.gz` (`bin/cfn-bootstrap`,
//!   the seven relative links, `install.sh`, `cfn-hup.service`, `init.d/cfn-hup`,
//!   `share/` with the manual pages and completion scripts, README and LICENSE), a
//!   `.deb` (dpkg-deb) and an `.rpm` (rpmbuild from dist/rpm/cfn-bootstrap.spec; the
//!   tree is staged here, nothing compiles inside), both with the pages and scripts
//!   under /usr/share;
//! - `container/`: a `FROM scratch` Containerfile and one root per architecture;
//! - `SHA256SUMS` over all of them.
//!
//! Every package installs the same layout: `/opt/aws/bin/cfn-bootstrap` with relative
//! links `/opt/aws/bin/cfn-* -> cfn-bootstrap`. Archives are reproducible: owners are
//! root, times are the last commit's (`SOURCE_DATE_EPOCH`), entries sorted.

use crate::{cargo, workspace};
use anyhow::{Context, Result, bail};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

pub const TOOLS: [&str; 7] = [
    "cfn-init",
    "cfn-signal",
    "cfn-hup",
    "cfn-get-metadata",
    "cfn-elect-cmd-leader",
    "cfn-send-cmd-result",
    "cfn-send-cmd-event",
];
const VERSION: &str = env!("CARGO_PKG_VERSION");
const MAINTAINER: &str = "cfn-bootstrap maintainers <cfn-bootstrap@users.noreply.github.com>";
const SUMMARY: &str = "CloudFormation helper scripts (cfn-init, cfn-signal, cfn-hup, ...) as one static binary";

/// One target architecture and its names in each packaging world.
#[derive(Clone, Copy)]
pub struct Arch {
    pub name: &'static str,
    pub triple: &'static str,
    deb: &'static str,
    oci: &'static str,
    elf_machine: u16,
    /// Runs the binary on this machine (`None`: natively).
    runner: Option<&'static str>,
}

pub const X86_64: Arch = Arch {
    name: "x86_64",
    triple: "x86_64-unknown-linux-musl",
    deb: "amd64",
    oci: "amd64",
    elf_machine: 62,
    runner: None,
};
pub const AARCH64: Arch = Arch {
    name: "aarch64",
    triple: "aarch64-unknown-linux-musl",
    deb: "arm64",
    oci: "arm64",
    elf_machine: 183,
    runner: Some("qemu-aarch64-static"),
};

/// Cargo's target directory (`CARGO_TARGET_DIR` or `target/`): the tests build their
/// own copy in another one, so that they never wait for the outer cargo's lock.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace().join("target"))
}

pub fn dist_dir() -> PathBuf {
    target_dir().join("dist")
}

pub fn run(args: &[String]) -> Result<ExitCode> {
    let mut archs = vec![X86_64, AARCH64];
    for arg in args {
        match arg.as_str() {
            "--skip-aarch64" => archs.retain(|a| a.name != "aarch64"),
            _ => bail!("usage: cargo xtask dist [--skip-aarch64]"),
        }
    }
    let started = std::time::Instant::now();
    let out = build(&archs, &dist_dir())?;
    print_table(&out)?;
    eprintln!("xtask: dist done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// What `cargo xtask test` runs before the tests: the artifacts of both architectures in
/// `target/test-dist` (so `target/dist` of a full `cargo xtask dist` stays), from the
/// cached release builds: seconds when nothing changed, a few minutes after a change.
/// The aarch64 ones are for the arm64 image (tests/container.rs) and the arm64 pass.
pub fn for_tests() -> Result<PathBuf> {
    build(&[X86_64, AARCH64], &target_dir().join("test-dist"))
}

/// Builds everything for `archs` into `out` (emptied first).
pub fn build(archs: &[Arch], out: &Path) -> Result<PathBuf> {
    ensure_tools(archs)?;
    let out = out.to_path_buf();
    if out.exists() {
        std::fs::remove_dir_all(&out).context("clear target/dist")?;
    }
    let stage = out.with_extension("stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage)?;
    }
    std::fs::create_dir_all(&out)?;
    std::fs::create_dir_all(&stage)?;
    let epoch = source_date_epoch();

    let container = out.join("container");
    std::fs::create_dir_all(&container)?;
    std::fs::copy(workspace().join("dist/container/Containerfile"), container.join("Containerfile"))?;
    let share = stage.join("share");
    for arch in archs {
        let binary = compile(arch)?;
        check_binary(arch, &binary)?;
        if !share.exists() {
            // The same for every architecture: made once, by a binary that runs here.
            let native = if arch.runner.is_none() { binary.clone() } else { compile(&X86_64)? };
            share_tree(&native, &share)?;
        }
        tarball(arch, &binary, &share, &stage, &out, epoch)?;
        deb(arch, &binary, &share, &stage, &out, epoch, &["-Zxz"])?;
        rpm(arch, &binary, &share, &stage, &out, epoch)?;
        container_root(arch, &binary, &container)?;
    }
    checksums(&out)?;
    std::fs::remove_dir_all(&stage)?;
    Ok(out)
}

/// The .deb of `binary`, a build of cfn-bootstrap for this machine (the demo's debug
/// one: no release build), in `out` (emptied first); its path.
pub fn deb_of(binary: &Path, out: &Path) -> Result<PathBuf> {
    install_missing(&[("dpkg-deb", "dpkg"), ("gzip", "gzip")])?;
    let arch = if cfg!(target_arch = "aarch64") { AARCH64 } else { X86_64 };
    if out.exists() {
        std::fs::remove_dir_all(out)?;
    }
    let stage = out.join("stage");
    let share = stage.join("share");
    share_tree(binary, &share)?;
    // Without its debug information (two fifths of the size); as it is when there is
    // no `strip`. Fast compression: xz takes a minute on a busy machine.
    let stripped = stage.join("cfn-bootstrap");
    copy(binary, &stripped, 0o755)?;
    let _ = Command::new("strip").arg("--strip-debug").arg(&stripped).status();
    deb(&arch, &stripped, &share, &stage, out, source_date_epoch(), &["-Zgzip", "-z1"])?;
    std::fs::remove_dir_all(&stage)?;
    Ok(out.join(format!("cfn-bootstrap_{VERSION}-1_{}.deb", arch.deb)))
}

/// Installs what the build needs: rustup targets and Debian packages (as root).
fn ensure_tools(archs: &[Arch]) -> Result<()> {
    let mut packages = vec![("dpkg-deb", "dpkg"), ("rpmbuild", "rpm"), ("sha256sum", "coreutils"), ("gzip", "gzip")];
    for arch in archs {
        if arch.name == "x86_64" {
            packages.push(("musl-gcc", "musl-tools"));
        } else {
            packages.push(("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"));
            packages.push(("qemu-aarch64-static", "qemu-user-static"));
        }
    }
    install_missing(&packages)?;
    let installed = Command::new("rustup").args(["target", "list", "--installed"]).output();
    let installed = match installed {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        // No rustup (a distribution's Rust): the build below says what is missing.
        _ => return Ok(()),
    };
    for arch in archs {
        if !installed.lines().any(|l| l.trim() == arch.triple) {
            eprintln!("xtask: rustup target add {}", arch.triple);
            let status = Command::new("rustup").args(["target", "add", arch.triple]).status()?;
            if !status.success() {
                bail!("rustup target add {} failed", arch.triple);
            }
        }
    }
    Ok(())
}

/// Installs the Debian packages that provide missing programs.
pub fn install_missing(programs: &[(&str, &str)]) -> Result<()> {
    let on_path = |p: &str| ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].iter().any(|d| Path::new(d).join(p).is_file());
    let mut missing: Vec<&str> = programs.iter().filter(|(p, _)| !on_path(p)).map(|(_, pkg)| *pkg).collect();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    let update = Command::new("apt-get").args(["-q", "update"]).stdout(Stdio::null()).status();
    if !update.map(|s| s.success()).unwrap_or(false) {
        bail!("`{}` are missing and apt-get update failed (install them, as root)", missing.join(" "));
    }
    // Another apt (unattended upgrades, another build) may hold dpkg's lock for a while.
    let status = Command::new("apt-get")
        .args(["-q", "-y", "-o", "DPkg::Lock::Timeout=300", "install"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("could not install {}", missing.join(" "));
    }
    Ok(())
}

/// The static release binary for one architecture (cargo's cache in target/<triple>).
fn compile(arch: &Arch) -> Result<PathBuf> {
    eprintln!("xtask: building the static {} binary", arch.name);
    let mut cmd = cargo();
    cmd.current_dir(workspace())
        .args(["build", "--release", "--locked", "--target", arch.triple])
        .args(["--bin", "cfn-bootstrap"]);
    let env = arch.triple.replace('-', "_");
    match arch.name {
        "x86_64" => {
            cmd.env(format!("CC_{env}"), "musl-gcc");
        }
        _ => {
            let gcc = "aarch64-linux-gnu-gcc";
            cmd.env(format!("CC_{env}"), gcc)
                .env(format!("AR_{env}"), "aarch64-linux-gnu-ar")
                .env(format!("CARGO_TARGET_{}_LINKER", env.to_uppercase()), gcc);
        }
    }
    let status = cmd.status().context("run cargo build")?;
    if !status.success() {
        bail!("the {} release build failed", arch.name);
    }
    Ok(target_dir().join(arch.triple).join("release/cfn-bootstrap"))
}

/// Checks the ELF header (machine, no program interpreter = static) and smoke-runs it.
fn check_binary(arch: &Arch, binary: &Path) -> Result<()> {
    let elf = std::fs::read(binary).with_context(|| format!("read {}", binary.display()))?;
    let (machine, interp) =
        elf_facts(&elf).with_context(|| format!("{} is not a 64-bit ELF file", binary.display()))?;
    if machine != arch.elf_machine {
        bail!("{} is for ELF machine {machine}, expected {}", binary.display(), arch.elf_machine);
    }
    if interp {
        bail!("{} is dynamically linked (it has a PT_INTERP header)", binary.display());
    }
    let mut cmd = match arch.runner {
        None => Command::new(binary),
        Some(runner) => {
            if which(runner).is_none() {
                eprintln!("xtask: {runner} is not installed, so the {} binary is not smoke-run", arch.name);
                return Ok(());
            }
            let mut cmd = Command::new(runner);
            cmd.arg(binary);
            cmd
        }
    };
    let version = cmd.arg("--version").output().context("run the binary")?;
    let expected = format!("cfn-bootstrap {VERSION}\n");
    if String::from_utf8_lossy(&version.stdout) != expected {
        bail!("{} --version printed {:?}", binary.display(), String::from_utf8_lossy(&version.stdout));
    }
    let mut cmd = match arch.runner {
        None => Command::new(binary),
        Some(runner) => {
            let mut cmd = Command::new(runner);
            cmd.arg(binary);
            cmd
        }
    };
    let list = cmd.arg("--list").output()?;
    if String::from_utf8_lossy(&list.stdout).lines().collect::<Vec<_>>() != TOOLS {
        bail!("{} --list printed {:?}", binary.display(), String::from_utf8_lossy(&list.stdout));
    }
    eprintln!(
        "xtask: {} binary: static, {} bytes, --version and --list ok{}",
        arch.name,
        elf.len(),
        arch.runner.map(|r| format!(" (under {r})")).unwrap_or_default()
    );
    Ok(())
}

/// `(e_machine, has PT_INTERP)` of a little-endian ELF64 file.
pub fn elf_facts(elf: &[u8]) -> Option<(u16, bool)> {
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?));
    let machine = u16_at(18)?;
    let phoff = usize::try_from(u64_at(32)?).ok()?;
    let (phentsize, phnum) = (usize::from(u16_at(54)?), usize::from(u16_at(56)?));
    let interp = (0..phnum).map(|i| u32_at(phoff + i * phentsize)).collect::<Option<Vec<_>>>()?.contains(&3);
    Some((machine, interp))
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}

/// The last commit's time, for reproducible archives (or `SOURCE_DATE_EPOCH`).
fn source_date_epoch() -> u64 {
    if let Some(epoch) = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|e| e.parse().ok()) {
        return epoch;
    }
    Command::new("git")
        .args(["log", "-1", "--format=%ct"])
        .current_dir(workspace())
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(0)
}

fn put(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes).with_context(|| format!("write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

fn copy(from: &Path, to: &Path, mode: u32) -> Result<()> {
    put(to, &std::fs::read(from).with_context(|| format!("read {}", from.display()))?, mode)
}

/// Where each shell looks for completion scripts under `/usr/share`, and the file name
/// it expects for a command. zsh's directory differs between families (Debian's
/// vendor-completions, site-functions elsewhere): packages pick theirs.
/// A shell, its directory under `/usr/share`, and its file name for a command.
type CompletionDir = (&'static str, &'static str, fn(&str) -> String);

const COMPLETIONS: [CompletionDir; 3] = [
    ("bash", "bash-completion/completions", |name| name.to_string()),
    ("zsh", "zsh/site-functions", |name| format!("_{name}")),
    ("fish", "fish/vendor_completions.d", |name| format!("{name}.fish")),
];

/// `share/`: the manual pages (`man/man1/NAME.1`) and the completion scripts of
/// `cfn-bootstrap` and each tool, as the binary prints them (`cfn-bootstrap man`,
/// `cfn-bootstrap completions SHELL NAME`), laid out as under `/usr/share`.
fn share_tree(binary: &Path, share: &Path) -> Result<()> {
    let man1 = share.join("man/man1");
    let pages = Command::new(binary).args(["man", "--dir"]).arg(&man1).output().context("run cfn-bootstrap man")?;
    if !pages.status.success() || std::fs::read_dir(&man1)?.count() == 0 {
        bail!("cfn-bootstrap man --dir wrote no pages: {}", String::from_utf8_lossy(&pages.stderr));
    }
    for (shell, dir, file_name) in COMPLETIONS {
        for name in std::iter::once("cfn-bootstrap").chain(TOOLS) {
            let script = Command::new(binary).args(["completions", shell, name]).output()?;
            if !script.status.success() || script.stdout.is_empty() {
                bail!("cfn-bootstrap completions {shell} {name} failed: {}", String::from_utf8_lossy(&script.stderr));
            }
            put(&share.join(dir).join(file_name(name)), &script.stdout, 0o644)?;
        }
    }
    Ok(())
}

/// Copies `share/` under `usr` for a package: manual pages compressed (`gzip -9n`, as
/// both Debian and the Red Hat family ship them), zsh's scripts into `zsh_dir`.
fn package_share(share: &Path, usr_share: &Path, zsh_dir: &str) -> Result<()> {
    let man1 = usr_share.join("man/man1");
    std::fs::create_dir_all(&man1)?;
    for entry in std::fs::read_dir(share.join("man/man1"))? {
        let page = entry?.path();
        let name = page.file_name().context("a page has a name")?.to_string_lossy().into_owned();
        let compressed = Command::new("gzip").args(["-9nc"]).arg(&page).output().context("run gzip")?;
        if !compressed.status.success() {
            bail!("gzip {} failed", page.display());
        }
        put(&man1.join(format!("{name}.gz")), &compressed.stdout, 0o644)?;
    }
    for (shell, dir, _) in COMPLETIONS {
        let to = if shell == "zsh" { zsh_dir } else { dir };
        for entry in std::fs::read_dir(share.join(dir))? {
            let script = entry?.path();
            copy(&script, &usr_share.join(to).join(script.file_name().context("a script has a name")?), 0o644)?;
        }
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        let target = to.join(path.file_name().context("an entry has a name")?);
        if path.is_dir() {
            copy_tree(&path, &target)?;
        } else {
            copy(&path, &target, 0o644)?;
        }
    }
    Ok(())
}

/// `dir/cfn-bootstrap` and the seven relative links beside it.
fn binary_and_links(binary: &Path, dir: &Path) -> Result<()> {
    copy(binary, &dir.join("cfn-bootstrap"), 0o755)?;
    for tool in TOOLS {
        symlink("cfn-bootstrap", dir.join(tool))?;
    }
    Ok(())
}

fn license() -> Vec<u8> {
    // Debian's copy of the licence text (base-files); a pointer when it is absent.
    std::fs::read("/usr/share/common-licenses/Apache-2.0").unwrap_or_else(|_| {
        b"cfn-bootstrap is licensed under the Apache License, Version 2.0:\nhttps://www.apache.org/licenses/LICENSE-2.0\n"
            .to_vec()
    })
}

fn readme(arch: &Arch) -> String {
    format!(
        "cfn-bootstrap {VERSION} for {arch} Linux (static, no dependencies)\n\n\
         {SUMMARY}.\n\n\
         bin/cfn-bootstrap       the binary; bin/cfn-* are links to it, one per tool\n\
         install.sh              installs it into /opt/aws/bin with the cfn-* links and the\n\
         \x20                       cfn-hup service (systemd or SysV); --uninstall, --help\n\
         cfn-hup.service         systemd unit for cfn-hup\n\
         init.d/cfn-hup          SysV init script for cfn-hup\n\n\
         Install:   sudo ./install.sh            (add --enable-cfn-hup to enable and start cfn-hup)\n\
         Remove:    sudo ./install.sh --uninstall\n\n\
         Licence: Apache-2.0 (LICENSE).\n",
        arch = arch.name
    )
}

/// Runs a command and fails with its stderr when it fails.
fn run_cmd(cmd: &mut Command, what: &str) -> Result<()> {
    let output = cmd.output().with_context(|| format!("run {what}"))?;
    if !output.status.success() {
        bail!("{what} failed:\n{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

fn tarball(arch: &Arch, binary: &Path, share: &Path, stage: &Path, out: &Path, epoch: u64) -> Result<()> {
    let name = format!("cfn-bootstrap-{VERSION}-{}-linux", arch.name);
    let top = stage.join(&name);
    let dist = workspace().join("dist");
    binary_and_links(binary, &top.join("bin"))?;
    copy_tree(share, &top.join("share"))?;
    copy(&dist.join("install.sh"), &top.join("install.sh"), 0o755)?;
    copy(&dist.join("cfn-hup.service"), &top.join("cfn-hup.service"), 0o644)?;
    copy(&dist.join("init.d/cfn-hup"), &top.join("init.d/cfn-hup"), 0o755)?;
    put(&top.join("README"), readme(arch).as_bytes(), 0o644)?;
    put(&top.join("LICENSE"), &license(), 0o644)?;
    let file = out.join(format!("{name}.tar.gz"));
    let script = r#"set -e; tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" --format=gnu -C "$STAGE" -cf - "$NAME" | gzip -9n > "$OUT""#;
    run_cmd(
        Command::new("sh")
            .args(["-c", script])
            .env("EPOCH", epoch.to_string())
            .env("STAGE", stage)
            .env("NAME", &name)
            .env("OUT", &file),
        "tar",
    )
}

/// Where a package family puts what differs between them.
struct PackageDirs {
    unit: &'static str,
    init: &'static str,
    zsh_completions: &'static str,
}

/// Stages the files shared by the .deb and the .rpm under `root`.
fn package_tree(binary: &Path, share: &Path, root: &Path, dirs: &PackageDirs, doc: &str) -> Result<()> {
    let dist = workspace().join("dist");
    let (unit_dir, init_dir) = (dirs.unit, dirs.init);
    binary_and_links(binary, &root.join("opt/aws/bin"))?;
    package_share(share, &root.join("usr/share"), dirs.zsh_completions)?;
    copy(&dist.join("cfn-hup.service"), &root.join(unit_dir).join("cfn-hup.service"), 0o644)?;
    copy(&dist.join("init.d/cfn-hup"), &root.join(init_dir).join("cfn-hup"), 0o755)?;
    std::fs::create_dir_all(root.join(doc))?;
    Ok(())
}

/// `compression`: dpkg-deb's options (xz for releases; the demo's, fast gzip).
fn deb(
    arch: &Arch,
    binary: &Path,
    share: &Path,
    stage: &Path,
    out: &Path,
    epoch: u64,
    compression: &[&str],
) -> Result<()> {
    let root = stage.join(format!("deb-{}", arch.deb));
    let dirs =
        PackageDirs { unit: "lib/systemd/system", init: "etc/init.d", zsh_completions: "zsh/vendor-completions" };
    package_tree(binary, share, &root, &dirs, "usr/share/doc/cfn-bootstrap")?;
    put(
        &root.join("usr/share/doc/cfn-bootstrap/copyright"),
        b"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
          Upstream-Name: cfn-bootstrap\n\n\
          Files: *\nCopyright: the cfn-bootstrap authors\nLicense: Apache-2.0\n\
          \x20On Debian systems, the full text of the Apache License, Version 2.0 can be\n\
          \x20found in the file `/usr/share/common-licenses/Apache-2.0'.\n",
        0o644,
    )?;
    let installed_kib = dir_size(&root)?.div_ceil(1024);
    let control = format!(
        "Package: cfn-bootstrap\n\
         Version: {VERSION}-1\n\
         Architecture: {deb}\n\
         Maintainer: {MAINTAINER}\n\
         Installed-Size: {installed_kib}\n\
         Section: admin\n\
         Priority: optional\n\
         Provides: aws-cfn-bootstrap\n\
         Conflicts: aws-cfn-bootstrap\n\
         Replaces: aws-cfn-bootstrap\n\
         Description: {SUMMARY}\n\
         \x20AWS CloudFormation's helper scripts cfn-init, cfn-signal, cfn-hup,\n\
         \x20cfn-get-metadata, cfn-elect-cmd-leader, cfn-send-cmd-result and\n\
         \x20cfn-send-cmd-event, rebuilt in Rust as one static binary\n\
         \x20(/opt/aws/bin/cfn-bootstrap) with the usual /opt/aws/bin/cfn-* links.\n\
         \x20Includes the cfn-hup systemd unit and SysV init script; cfn-hup is not\n\
         \x20enabled by the package.\n",
        deb = arch.deb
    );
    let debian = root.join("DEBIAN");
    put(&debian.join("control"), control.as_bytes(), 0o644)?;
    put(&debian.join("conffiles"), b"/etc/init.d/cfn-hup\n", 0o644)?;
    for script in ["postinst", "prerm", "postrm"] {
        copy(&workspace().join("dist/deb").join(script), &debian.join(script), 0o755)?;
    }
    let file = out.join(format!("cfn-bootstrap_{VERSION}-1_{}.deb", arch.deb));
    run_cmd(
        Command::new("dpkg-deb")
            .arg("--root-owner-group")
            .args(compression)
            .arg("--build")
            .arg(&root)
            .arg(&file)
            .env("SOURCE_DATE_EPOCH", epoch.to_string()),
        "dpkg-deb --build",
    )
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.path().symlink_metadata()?;
        total += if meta.is_dir() { dir_size(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}

fn rpm(arch: &Arch, binary: &Path, share: &Path, stage: &Path, out: &Path, epoch: u64) -> Result<()> {
    let tree = stage.join(format!("rpm-{}", arch.name));
    let dirs =
        PackageDirs { unit: "usr/lib/systemd/system", init: "etc/rc.d/init.d", zsh_completions: "zsh/site-functions" };
    package_tree(binary, share, &tree, &dirs, "usr/share/doc/cfn-bootstrap")?;
    put(&tree.join("usr/share/doc/cfn-bootstrap/README"), readme(arch).as_bytes(), 0o644)?;
    put(&tree.join("usr/share/doc/cfn-bootstrap/LICENSE"), &license(), 0o644)?;
    let template = std::fs::read_to_string(workspace().join("dist/rpm/cfn-bootstrap.spec"))?;
    let top = stage.join(format!("rpmbuild-{}", arch.name));
    let spec = top.join("cfn-bootstrap.spec");
    put(&spec, template.replace("@VERSION@", VERSION).as_bytes(), 0o644)?;
    run_cmd(
        Command::new("rpmbuild")
            .args(["-bb", "--quiet", "--target", &format!("{}-linux", arch.name)])
            .arg("--define")
            .arg(format!("_topdir {}", top.display()))
            .arg("--define")
            .arg(format!("cfn_stage {}", tree.display()))
            .arg("--define")
            .arg("_rpmdir %{_topdir}/RPMS")
            .arg("--define")
            .arg("use_source_date_epoch_as_buildtime 1")
            .arg("--define")
            .arg("clamp_mtime_to_source_date_epoch 1")
            .arg(&spec)
            .env("SOURCE_DATE_EPOCH", epoch.to_string()),
        "rpmbuild",
    )?;
    let name = format!("cfn-bootstrap-{VERSION}-1.{}.rpm", arch.name);
    std::fs::copy(top.join("RPMS").join(arch.name).join(&name), out.join(&name))
        .with_context(|| format!("rpmbuild did not write {name}"))?;
    Ok(())
}

/// `container/rootfs-<oci arch>/`: the image's whole file system.
fn container_root(arch: &Arch, binary: &Path, container: &Path) -> Result<()> {
    let root = container.join(format!("rootfs-{}", arch.oci));
    binary_and_links(binary, &root.join("opt/aws/bin"))?;
    for (dir, mode) in [("tmp", 0o1777), ("var/log", 0o755), ("var/lib", 0o755), ("etc/cfn", 0o755)] {
        std::fs::create_dir_all(root.join(dir))?;
        std::fs::set_permissions(root.join(dir), std::fs::Permissions::from_mode(mode))?;
    }
    // The layout the Containerfile relies on: every link resolves to the binary.
    for tool in TOOLS {
        let link = root.join("opt/aws/bin").join(tool);
        if std::fs::read_link(&link)? != Path::new("cfn-bootstrap") || !link.is_file() {
            bail!("{} does not resolve to cfn-bootstrap", link.display());
        }
    }
    Ok(())
}

/// `SHA256SUMS`: the tarballs, packages and every regular file of the container context.
fn checksums(out: &Path) -> Result<()> {
    let mut files = Vec::new();
    collect_files(out, out, &mut files)?;
    files.sort();
    let sums = Command::new("sha256sum").args(&files).current_dir(out).output().context("run sha256sum")?;
    if !sums.status.success() {
        bail!("sha256sum failed");
    }
    std::fs::write(out.join("SHA256SUMS"), sums.stdout)?;
    Ok(())
}

fn collect_files(base: &Path, dir: &Path, files: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let meta = path.symlink_metadata()?;
        if meta.is_dir() {
            collect_files(base, &path, files)?;
        } else if meta.is_file() {
            files.push(path.strip_prefix(base)?.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

fn print_table(out: &Path) -> Result<()> {
    let mut rows = Vec::new();
    for entry in std::fs::read_dir(out)? {
        let path = entry?.path();
        if path.is_file() && path.file_name().is_some_and(|n| n != "SHA256SUMS") {
            rows.push((path.file_name().unwrap().to_string_lossy().into_owned(), path.metadata()?.len()));
        }
    }
    for binary in [X86_64, AARCH64] {
        let path = out.join(format!("container/rootfs-{}/opt/aws/bin/cfn-bootstrap", binary.oci));
        if let Ok(meta) = path.metadata() {
            rows.push((format!("cfn-bootstrap binary, {} (static)", binary.name), meta.len()));
        }
    }
    rows.sort();
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(8).max(8);
    println!("\n{:width$}  {:>10}  {:>8}", "artifact", "bytes", "size");
    for (name, len) in &rows {
        println!("{name:width$}  {len:>10}  {:>6.2} MB", *len as f64 / 1_000_000.0);
    }
    println!("\nin {} (checksums: SHA256SUMS; container context: container/)", out.display());
    Ok(())
}
