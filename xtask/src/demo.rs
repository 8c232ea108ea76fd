//! `cargo xtask demo`: the tools doing their job against the local AWS emulator, as an
//! ordinary user (no root): logs and links live under `demo/` in the checkout.

use crate::emulator::{self, Emulator};
use crate::{cargo, workspace};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::path::Path;
use std::process::{Command, ExitCode};

const ACCESS_KEY: &str = "AKIDDEMO";
const SECRET_KEY: &str = "demo/secret";
const STACK: &str = "demo-stack";

pub fn run() -> Result<ExitCode> {
    step("Building cfn-bootstrap");
    let status = cargo().current_dir(workspace()).args(["build", "--bin", "cfn-bootstrap"]).status()?;
    if !status.success() {
        bail!("the build failed");
    }
    let binary = workspace().join("target/debug/cfn-bootstrap");

    let demo = workspace().join("demo");
    let _ = std::fs::remove_dir_all(&demo);
    for dir in ["bin", "log", "lib"] {
        std::fs::create_dir_all(demo.join(dir))?;
    }
    for tool in ["cfn-init", "cfn-signal", "cfn-hup", "cfn-get-metadata"] {
        std::os::unix::fs::symlink(&binary, demo.join("bin").join(tool))?;
    }
    println!("    links to the one binary: {}/bin/cfn-*", demo.display());

    step("Starting the local AWS emulator (CloudFormation + instance metadata, SigV4 checked)");
    let python = emulator::ensure_venv()?;
    let emulator = Emulator::start(
        &python,
        &["--validate-sigv4".into(), "--credentials".into(), format!("{ACCESS_KEY}:{SECRET_KEY}")],
    )?;
    println!("    listening at {}", emulator.url);

    step(&format!("Creating stack {STACK} with an instance whose metadata holds AWS::CloudFormation::Init"));
    create_stack(&emulator.url, &demo)?;

    let tool = |name: &str| {
        let mut cmd = Command::new(demo.join("bin").join(name));
        cmd.env("CFN_BOOTSTRAP_LOG_DIR", demo.join("log"))
            .env("CFN_BOOTSTRAP_LIB_DIR", demo.join("lib"))
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1");
        cmd
    };
    let keys = ["--url", &emulator.url, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY];

    step("cfn-get-metadata with access keys: the whole metadata");
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "WebServer"]).args(keys))?;

    step("cfn-get-metadata -k: one value by its dotted path");
    show(
        tool("cfn-get-metadata")
            .args(["-s", STACK, "-r", "WebServer", "-k", "AWS::CloudFormation::Init.config.files"])
            .args(keys),
    )?;
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "WebServer", "-k", "App.listeners.0.port"]).args(keys))?;

    step("cfn-get-metadata with no credentials, as on an EC2 instance (signed with the instance identity)");
    show(tool("cfn-get-metadata").env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url).args([
        "-s",
        STACK,
        "-r",
        "WebServer",
        "-k",
        "App.greeting",
        "--url",
        &emulator.url,
    ]))?;

    step("cfn-init: the `demo` configSet writes a templated page and runs two commands (instance identity)");
    show(tool("cfn-init").env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &emulator.url).args([
        "-v",
        "-s",
        STACK,
        "-r",
        "WebServer",
        "-c",
        "demo",
        "--url",
        &emulator.url,
    ]))?;
    let page = demo.join("www/index.html");
    println!("    {}:", short_path(&page));
    for line in std::fs::read_to_string(&page).unwrap_or_default().lines() {
        println!("    | {line}");
    }
    println!("    {}:", short_path(&demo.join("log/cfn-init-cmd.log")));
    for line in std::fs::read_to_string(demo.join("log/cfn-init-cmd.log")).unwrap_or_default().lines() {
        println!("    | {line}");
    }

    step("Errors look like the reference's");
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "WebServer", "-k", "App.nope"]).args(keys))?;
    show(tool("cfn-get-metadata").args(["-s", STACK, "-r", "Nothing"]).args(keys))?;

    step("The log, in the reference's format");
    let log = demo.join("log/cfn-init.log");
    println!("    {}:", log.display());
    for line in std::fs::read_to_string(&log).unwrap_or_default().lines() {
        println!("    | {line}");
    }
    println!("\nDone. Links, logs and state are under {}; the emulator has stopped.", demo.display());
    drop(emulator);
    Ok(ExitCode::SUCCESS)
}

fn step(title: &str) {
    println!("\n==> {title}");
}

fn show(cmd: &mut Command) -> Result<()> {
    let shown: Vec<String> = std::iter::once(short_path(Path::new(cmd.get_program())))
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect();
    println!("$ {}", shown.join(" "));
    let out = cmd.output().with_context(|| format!("run {}", shown[0]))?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        println!("(stderr) {line}");
    }
    println!("(exit code {})", out.status.code().unwrap_or(-1));
    Ok(())
}

fn short_path(path: &Path) -> String {
    path.strip_prefix(workspace()).map(|p| p.display().to_string()).unwrap_or_else(|_| path.display().to_string())
}

fn create_stack(url: &str, demo: &Path) -> Result<()> {
    let www = demo.join("www").display().to_string();
    let template = json!({
        "Resources": {
            "WebServer": {
                "Type": "AWS::EC2::Instance",
                "Metadata": {
                    "AWS::CloudFormation::Init": {
                        "configSets": {"default": ["config"], "demo": ["site"]},
                        "site": {
                            "files": {
                                format!("{www}/index.html"): {
                                    "content": "<title>{{title}}</title><h1>{{title}}</h1>\n<p>Stack {{stack}}</p>\n",
                                    "context": {"title": "Hello World", "stack": {"Ref": "AWS::StackName"}},
                                    "mode": "000644"
                                }
                            },
                            "commands": {
                                "01_count": {"command": format!("wc -c {www}/index.html")},
                                "02_skip": {"command": "echo never", "test": format!("test ! -e {www}/index.html")}
                            }
                        },
                        "config": {
                            "packages": {"apt": {"nginx": []}},
                            "files": {"/var/www/html/index.html": {
                                "content": "<title>Hello World</title><h1>Hello World</h1>", "mode": "000644"}},
                            "services": {"sysvinit": {"nginx": {"enabled": "true", "ensureRunning": "true"}}}
                        }
                    },
                    "App": {
                        "greeting": {"Fn::Join": [" ", ["hello from", {"Ref": "AWS::StackName"}]]},
                        "listeners": [{"port": 80}, {"port": 443}]
                    }
                },
                "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}
            },
            "Nothing": {"Type": "AWS::CloudFormation::WaitConditionHandle"}
        }
    });
    let client =
        cfn_metadata::client_with_keys(url, "us-east-1", cfn_metadata::Credentials::new(ACCESS_KEY, SECRET_KEY, None));
    client.call("CreateStack", &[("StackName", STACK), ("TemplateBody", &template.to_string())], true)?;
    println!("    {STACK}: CREATE_COMPLETE");
    Ok(())
}
