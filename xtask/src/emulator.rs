//! The local AWS emulator (tests/emulator): its Python environment and its process.

use crate::workspace;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The keys the black-box tests sign with (tests/common/mod.rs).
pub const TEST_CREDENTIALS: &str = "AKIDTESTKEY:test/secret/key";

pub fn test_arguments() -> Vec<String> {
    vec!["--validate-sigv4".into(), "--credentials".into(), TEST_CREDENTIALS.into()]
}

/// The emulator's Python as the tests take it: the one `CFN_TEST_PYTHON` names, else
/// [`ensure_venv`]'s.
pub fn python() -> Result<PathBuf> {
    match std::env::var_os("CFN_TEST_PYTHON") {
        Some(python) => Ok(PathBuf::from(python)),
        None => ensure_venv(),
    }
}

/// Creates `target/emulator-venv` with the pinned requirements when it is missing or
/// the requirements changed, and returns its Python.
pub fn ensure_venv() -> Result<PathBuf> {
    let requirements = workspace().join("tests/emulator/requirements.txt");
    venv("target/emulator-venv", &requirements, "the emulator's Python environment (about 30 s)")
}

/// Creates the virtual environment `dir` (relative to the workspace) with the pinned
/// `requirements` when it is missing or they changed, and returns its Python; `what` says
/// what it is for while it is installed.
pub fn venv(dir: &str, requirements: &Path, what: &str) -> Result<PathBuf> {
    let venv = workspace().join(dir);
    let python = venv.join("bin/python");
    let wanted = std::fs::read_to_string(requirements).with_context(|| format!("read {}", requirements.display()))?;
    let stamp = venv.join("requirements.installed");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    eprintln!("xtask: installing {what} in {}", venv.display());
    let system_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    run(Command::new(&system_python).args(["-m", "venv"]).arg(&venv))?;
    // --no-compile: pip would compile every module of moto (thousands, minutes of CPU on a
    // busy machine); Python compiles the few the emulator imports when it first starts.
    run(Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile", "-r"])
        .arg(requirements))?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("run {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// A running emulator on a free loopback port, stopped when dropped.
pub struct Emulator {
    pub url: String,
    child: Child,
}

impl Emulator {
    pub fn start(python: &PathBuf, arguments: &[String]) -> Result<Emulator> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log = crate::dist::target_dir().join("emulator.log");
        std::fs::create_dir_all(crate::dist::target_dir())?;
        let log_file = std::fs::File::create(&log)?;
        let child = Command::new(python)
            .arg(workspace().join("tests/emulator/moto_cfn_server.py"))
            .args(["--port", &port.to_string()])
            .args(arguments)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .context("start the emulator")?;
        let emulator = Emulator { url: format!("http://127.0.0.1:{port}"), child };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if ureq::get(&format!("{}/_emu/state", emulator.url)).call().is_ok() {
                return Ok(emulator);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("the emulator did not answer within 60 s; see {}", log.display())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
