//! The `cfn-bootstrap` command itself (CLI-COMMON-01), which clap parses: `--list`,
//! `--version`, `--help`, `help TOOL`, a subcommand per tool that hands every following
//! argument to the tool's optparse-exact parser untouched, `completions SHELL`, whose
//! scripts describe the tools' options from the tables their parsers use, and `man`,
//! whose pages are rendered from the same tables.

mod common;
use common::*;

fn bootstrap(sandbox: &Sandbox, args: &[&str]) -> Run {
    sandbox.cmd("cfn-bootstrap").args(args).run()
}

/// The long options a tool's `--help` lists (`--stack`, `--configsets`, …).
fn long_options(help: &str) -> Vec<String> {
    let mut options: Vec<String> = help
        .lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .flat_map(|line| line.split([' ', ',', '=']))
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .map(String::from)
        .collect();
    options.dedup();
    options
}

#[test]
fn version_and_list() {
    let sandbox = Sandbox::with_bootstrap();
    let version = format!("cfn-bootstrap {}\n", env!("CARGO_PKG_VERSION"));
    bootstrap(&sandbox, &["--version"]).code(0).stdout_is(&version).stderr_is("");
    bootstrap(&sandbox, &["-V"]).code(0).stdout_is(&version);
    bootstrap(&sandbox, &["--list"]).code(0).stdout_is(&format!("{}\n", TOOLS.join("\n"))).stderr_is("");
}

#[test]
fn help_lists_the_tools_their_short_names_and_the_subcommands() {
    let sandbox = Sandbox::with_bootstrap();
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let run = bootstrap(&sandbox, args);
        run.code(0).stderr_is("").stdout_has("Usage: cfn-bootstrap").stdout_has("--list").stdout_has("--version");
        for tool in TOOLS {
            let line = run.stdout.lines().find(|l| l.trim_start().starts_with(&format!("{tool} ")));
            let line = line.unwrap_or_else(|| panic!("no line for {tool}\n{run}"));
            assert!(line.contains(&format!("[alias: {}]", &tool[4..])), "{line:?}\n{run}");
        }
        run.stdout_has("  completions ").stdout_has("  help ");
    }
    // `help completions` is clap's help of the subcommand, with its usage.
    bootstrap(&sandbox, &["help", "completions"])
        .code(0)
        .stdout_has("Usage: cfn-bootstrap completions <SHELL> [COMMAND]")
        .stdout_has("bash, elvish, fish, powershell, zsh");
}

#[test]
fn a_tool_subcommand_is_the_tool_with_its_arguments_untouched() {
    let sandbox = Sandbox::with_bootstrap();
    for tool in TOOLS {
        let through_link = sandbox.cmd(tool).arg("--help").run();
        through_link.code(0);
        for name in [*tool, &tool[4..]] {
            bootstrap(&sandbox, &[name, "--help"]).code(0).stdout_is(&through_link.stdout).stderr_is("");
            bootstrap(&sandbox, &["help", name]).code(0).stdout_is(&through_link.stdout).stderr_is("");
        }
    }
    // Errors, option forms and `--` reach the tool's parser exactly as given: the same
    // output and exit code as through the link.
    let cases: &[(&str, &[&str])] = &[
        ("cfn-get-metadata", &["-s"]),
        ("cfn-get-metadata", &["-s", "x"]),
        ("cfn-get-metadata", &["--bogus", "--", "x"]),
        ("cfn-get-metadata", &["--list"]),
        ("cfn-init", &["-s", "x"]),
        ("cfn-init", &["--", "--help"]),
        ("cfn-init", &["--"]),
        ("cfn-init", &[]),
        ("cfn-hup", &["-V"]),
        ("cfn-hup", &["--version"]),
        ("cfn-signal", &["-s", "maybe"]),
        ("cfn-signal", &["-vh"]),
        ("cfn-elect-cmd-leader", &["--stack="]),
    ];
    for (tool, args) in cases {
        let through_link = sandbox.cmd(tool).args(*args).run();
        for name in [*tool, &tool[4..]] {
            let mut argv = vec![name];
            argv.extend(*args);
            let run = bootstrap(&sandbox, &argv);
            assert_eq!(
                (run.code, &run.stdout, &run.stderr),
                (through_link.code, &through_link.stdout, &through_link.stderr),
                "cfn-bootstrap {argv:?} differs from the link\n{run}\n{through_link}"
            );
        }
    }
    // `--` ended cfn-init's options: `--help` was a file name.
    sandbox.cmd("cfn-init").args(["--", "--help"]).run().code(1).stdout_is("").stderr_has("--help");
}

#[test]
fn usage_errors_are_claps_with_exit_2() {
    let sandbox = Sandbox::with_bootstrap();
    bootstrap(&sandbox, &["cfn-bogus"])
        .code(2)
        .stdout_is("")
        .stderr_has("error: unrecognized subcommand 'cfn-bogus'")
        .stderr_has("Usage: cfn-bootstrap");
    bootstrap(&sandbox, &["--bogus"]).code(2).stdout_is("").stderr_has("error: unexpected argument '--bogus'");
    bootstrap(&sandbox, &["--list", "init"]).code(2).stdout_is("").stderr_has("cannot be used with '--list'");
    bootstrap(&sandbox, &["help", "bogus"]).code(2).stdout_is("").stderr_has("invalid value 'bogus'");
    bootstrap(&sandbox, &["completions"]).code(2).stdout_is("").stderr_has("<SHELL>");
    bootstrap(&sandbox, &["completions", "tcsh"]).code(2).stdout_is("").stderr_has("invalid value 'tcsh'");
    bootstrap(&sandbox, &["completions", "bash", "cfn-bogus"]).code(2).stderr_has("invalid value 'cfn-bogus'");
    // Nothing to do: the help, on stderr.
    bootstrap(&sandbox, &[]).code(2).stdout_is("").stderr_has("Usage: cfn-bootstrap").stderr_has("cfn-init");
}

#[test]
fn completions_for_every_shell_cover_cfn_bootstrap_and_every_tool_option() {
    let sandbox = Sandbox::with_bootstrap();
    let helps: Vec<(&str, String)> =
        TOOLS.iter().map(|tool| (*tool, sandbox.cmd(tool).arg("--help").run().stdout.clone())).collect();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let all = bootstrap(&sandbox, &["completions", shell]);
        all.code(0).stderr_is("");
        for name in std::iter::once("cfn-bootstrap").chain(TOOLS.iter().copied()) {
            let one = bootstrap(&sandbox, &["completions", shell, name]);
            one.code(0).stderr_is("");
            assert!(
                all.stdout.contains(&one.stdout) || shell == "powershell",
                "{shell} {name}: not in the full script"
            );
            // Each script registers its own command and no other.
            for other in std::iter::once("cfn-bootstrap").chain(TOOLS.iter().copied()) {
                let registers = registers(shell, &one.stdout, other);
                assert_eq!(registers, other == name, "{shell} script for {name} registering {other}\n{}", one.stdout);
            }
        }
        for (tool, help) in &helps {
            let options = long_options(help);
            assert!(options.len() >= 3, "{tool}: {options:?}");
            let one = bootstrap(&sandbox, &["completions", shell, tool]);
            for option in &options {
                let bare = option.trim_start_matches('-');
                assert!(one.stdout.contains(bare), "{shell} completions of {tool} lack {option}\n{}", one.stdout);
                assert!(all.stdout.contains(bare), "{shell} completions lack {tool}'s {option}");
            }
            // The tools' subcommands of cfn-bootstrap complete the same options.
            let root = bootstrap(&sandbox, &["completions", shell, "cfn-bootstrap"]);
            for option in &options {
                assert!(root.stdout.contains(option.trim_start_matches('-')), "{shell}: cfn-bootstrap {tool} {option}");
            }
        }
        assert!(all.stdout.contains("configsets"), "{shell}");
        // `cfn-bootstrap doctor` and its options (issue 24).
        let root = bootstrap(&sandbox, &["completions", shell, "cfn-bootstrap"]);
        assert!(root.stdout.contains("doctor"), "{shell}: no doctor\n{}", root.stdout);
        for option in DOCTOR_OPTIONS {
            assert!(root.stdout.contains(option.trim_start_matches('-')), "{shell}: cfn-bootstrap doctor {option}");
        }
    }
}

/// The long options of `cfn-bootstrap doctor`.
const DOCTOR_OPTIONS: &[&str] = &[
    "--config",
    "--stack",
    "--resource",
    "--url",
    "--region",
    "--credential-file",
    "--role",
    "--access-key",
    "--secret-key",
    "--http-proxy",
    "--https-proxy",
    "--format",
];

/// Whether a completion script registers completions for `command`.
fn registers(shell: &str, script: &str, command: &str) -> bool {
    match shell {
        "bash" => script.contains(&format!(" -o default {command}\n")),
        "zsh" => script.contains(&format!("compdef _{command} {command}\n")),
        "fish" => script.contains(&format!("complete -c {command} ")),
        "elvish" => script.contains(&format!("arg-completer[{command}]")),
        _ => script.contains(&format!("-CommandName '{command}'")),
    }
}

#[test]
fn powershell_using_statements_stay_at_the_top() {
    let sandbox = Sandbox::with_bootstrap();
    let script = bootstrap(&sandbox, &["completions", "powershell"]).stdout.clone();
    let first_block = script.find("Register-ArgumentCompleter").unwrap();
    assert_eq!(script.matches("Register-ArgumentCompleter").count(), 1 + TOOLS.len());
    for (at, _) in script.match_indices("using namespace") {
        assert!(at < first_block, "a `using` after the first completer:\n{script}");
    }
    assert!(script[..first_block].contains("using namespace System.Management.Automation\n"));
}

/// Runs bash with the generated script sourced and prints what completing `words`
/// (the last one being completed) offers.
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        r#"source "$1"
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMPREPLY=()
fn=$(complete -p "${{COMP_WORDS[0]}}" | sed -E 's/.*-F ([^ ]+) .*/\1/')
"$fn" "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        words = quoted.join(" ")
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program, "bash"])
        .arg(script)
        .output()
        .expect("run bash");
    assert!(out.status.success(), "bash failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn bash_completes_the_tools_options_through_links_and_subcommands() {
    let sandbox = Sandbox::with_bootstrap();
    let script = sandbox.path("cfn-bootstrap.bash");
    std::fs::write(&script, &bootstrap(&sandbox, &["completions", "bash"]).stdout).unwrap();
    let syntax = std::process::Command::new("bash").arg("-n").arg(&script).output().unwrap();
    assert!(syntax.status.success(), "{}", String::from_utf8_lossy(&syntax.stderr));

    assert_eq!(bash_completes(&script, &["cfn-init", "--configs"]), ["--configsets"]);
    assert_eq!(bash_completes(&script, &["cfn-bootstrap", "cfn-init", "--configs"]), ["--configsets"]);
    assert_eq!(bash_completes(&script, &["cfn-bootstrap", "init", "--configs"]), ["--configsets"]);
    assert_eq!(bash_completes(&script, &["cfn-signal", "-s", ""]), ["true", "false"]);
    assert_eq!(bash_completes(&script, &["cfn-bootstrap", "signal", "--success", ""]), ["true", "false"]);
    assert_eq!(bash_completes(&script, &["cfn-hup", "--fore"]), ["--foreground"]);
    assert_eq!(bash_completes(&script, &["cfn-bootstrap", "get-meta"]), ["get-metadata"]);
    assert_eq!(bash_completes(&script, &["cfn-bootstrap", "completions", "fi"]), ["fish"]);
    let top = bash_completes(&script, &["cfn-bootstrap", ""]);
    for word in TOOLS.iter().copied().chain(["init", "--list", "--version", "completions", "help"]) {
        assert!(top.iter().any(|w| w == word), "{word} missing from {top:?}");
    }
    // Names and ids are not completed as file names; files and directories are.
    assert_eq!(bash_completes(&script, &["cfn-init", "--stack", ""]), Vec::<String>::new());
    std::fs::write(sandbox.path("credentials.txt"), "").unwrap();
    let file = sandbox.path("cred").display().to_string();
    assert_eq!(
        bash_completes(&script, &["cfn-init", "-f", &file]),
        [sandbox.path("credentials.txt").display().to_string()]
    );

    // The script for one name registers that name only.
    let single = sandbox.path("cfn-init.bash");
    std::fs::write(&single, &bootstrap(&sandbox, &["completions", "bash", "cfn-init"]).stdout).unwrap();
    assert_eq!(bash_completes(&single, &["cfn-init", "--reg"]), ["--region"]);
}

/// Every manual page: `cfn-bootstrap`, its own subcommands, then the tools.
fn pages() -> Vec<&'static str> {
    BOOTSTRAP_PAGES.iter().chain(TOOLS).copied().collect()
}

/// A page as `man` shows it (groff's text output, warnings on), with the lines joined
/// so that a hyphenated or wrapped phrase can still be found.
fn rendered(page: &std::path::Path) -> String {
    let out = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-rLL=200n", "-P-c", "-P-b", "-P-u"])
        .arg(page)
        .output()
        .expect("groff is installed");
    // Only warnings about our page count (troff names the file and line: `troff:PAGE:N:
    // warning: …`); whatever else this machine's groff says of itself is not ours.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let page_name = page.to_string_lossy();
    let about_the_page: Vec<&str> = stderr.lines().filter(|l| l.contains(page_name.as_ref())).collect();
    assert!(out.status.success() && about_the_page.is_empty(), "groff on {page_name}:\n{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn manual_pages_describe_every_option_of_every_tool_and_render_without_warnings() {
    let sandbox = Sandbox::with_bootstrap();
    let dir = sandbox.path("man1");
    let written = bootstrap(&sandbox, &["man", "--dir", dir.to_str().unwrap()]);
    written.code(0).stderr_is("");
    let listed: Vec<String> = written.stdout.lines().map(String::from).collect();
    let expected: Vec<String> = pages().iter().map(|p| dir.join(format!("{p}.1")).display().to_string()).collect();
    assert_eq!(listed, expected);
    let mut files: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    let mut names: Vec<String> = pages().iter().map(|p| format!("{p}.1")).collect();
    names.sort();
    assert_eq!(files, names);

    for tool in TOOLS {
        let page = dir.join(format!("{tool}.1"));
        // The page printed alone is the file written.
        let alone = bootstrap(&sandbox, &["man", tool]);
        alone.code(0).stderr_is("");
        assert_eq!(alone.stdout, std::fs::read_to_string(&page).unwrap(), "{tool}");
        let text = rendered(&page);
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO", "VERSION"] {
            assert!(text.lines().any(|l| l == section), "{tool}: no {section} section:\n{text}");
        }
        assert!(text.contains(&format!("{tool} - ")), "{tool}: no name line:\n{text}");
        assert!(text.contains(&format!("Usage: {tool} [options]")), "{tool}: no usage:\n{text}");
        let help = sandbox.cmd(tool).arg("--help").run();
        for option in long_options(&help.stdout) {
            assert!(text.contains(&option), "{tool}: {option} is in --help but not in the page:\n{text}");
        }
    }
    // The exit statuses a script tests for.
    let leader = rendered(&dir.join("cfn-elect-cmd-leader.1"));
    assert!(leader.contains("Another listener is the leader."), "{leader}");
    let init = rendered(&dir.join("cfn-init.1"));
    assert!(init.contains("/var/log/cfn-init-cmd.log"), "{init}");
    // cfn-bootstrap's page names every subcommand's page.
    let top = rendered(&dir.join("cfn-bootstrap.1"));
    for page in pages().iter().skip(1) {
        assert!(top.contains(&format!("{page}(1)")), "{page}(1) not referenced:\n{top}");
    }
    let completions = rendered(&dir.join("cfn-bootstrap-completions.1"));
    assert!(completions.contains("cfn-bootstrap completions"), "{completions}");
    // doctor's page: every option, and the exit statuses a script tests for.
    let doctor = bootstrap(&sandbox, &["man", "cfn-bootstrap-doctor"]);
    doctor.code(0).stderr_is("");
    assert_eq!(doctor.stdout, std::fs::read_to_string(dir.join("cfn-bootstrap-doctor.1")).unwrap());
    let doctor = rendered(&dir.join("cfn-bootstrap-doctor.1"));
    assert!(doctor.contains("cfn-bootstrap-doctor - Check everything the tools depend on"), "{doctor}");
    for option in DOCTOR_OPTIONS {
        assert!(doctor.contains(option), "doctor's page lacks {option}:\n{doctor}");
    }
    assert!(doctor.contains("0 all ok, 1 a check failed, 2 only warnings"), "{doctor}");
}

#[test]
fn man_without_a_name_prints_cfn_bootstrap_and_an_unknown_name_is_a_usage_error() {
    let sandbox = Sandbox::with_bootstrap();
    bootstrap(&sandbox, &["man"]).code(0).stderr_is("").stdout_has(".TH cfn-bootstrap 1 ");
    bootstrap(&sandbox, &["man", "cfn-nothing"]).code(2).stdout_is("").stderr_has(
        "cfn-bootstrap man: no manual page named cfn-nothing; the pages are: cfn-bootstrap, cfn-bootstrap-help,",
    );
    bootstrap(&sandbox, &["man", "cfn-init", "--dir", "x"]).code(2).stderr_has("cannot be used with");
    let blocked = sandbox.path("a-file");
    std::fs::write(&blocked, "").unwrap();
    bootstrap(&sandbox, &["man", "--dir", blocked.to_str().unwrap()])
        .code(1)
        .stdout_is("")
        .stderr_has(&format!("cfn-bootstrap man: could not write the pages into {}: File exists", blocked.display()));
}
