//! cfn-init: its last run from its record (as `cfn-bootstrap status` reads it), the
//! modes of its state directory, and whether the metadata it stored is the stack's
//! current metadata (the same DescribeStackResource as the api checks: asked once).

use super::api::{self, Described};
use super::{Check, Context, hup_config};
use cfn_configsets::run_record::{self, State};
use cfn_metadata::applied;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub fn checks(ctx: &Context) -> Vec<Check> {
    let mut checks = vec![last_run()];
    let state = cfn_host::paths::lib_dir().join("cfn-init");
    if !state.is_dir() {
        checks
            .push(Check::skipped("init.state", format!("{} does not exist: cfn-init never ran here", state.display())));
    } else {
        checks.extend(modes(&state));
    }
    checks.push(metadata(ctx, &state.join("data")));
    checks
}

fn last_run() -> Check {
    let id = "init.last_run";
    let dir = run_record::runs_dir();
    let history = match run_record::history(&dir) {
        Ok(history) => history,
        Err(e) => {
            return Check::failed(
                id,
                format!("cannot read {}: {}", dir.display(), cfn_python::strerror(&e)),
                format!("make {} a directory readable by root", dir.display()),
            );
        }
    };
    let Some(last) = history.first() else {
        return Check::skipped(id, format!("cfn-init has no run recorded in {}", dir.display()));
    };
    let configsets = last.configsets.join(", ");
    let fix = "cfn-bootstrap status --long";
    match State::of(Some(last)) {
        State::Failed => {
            let error = super::service::one_line(last.failure.as_ref().map_or("no error recorded", |f| &f.error), 300);
            Check::failed(
                id,
                format!("cfn-init's last run ({}, configSets {configsets}) failed: {error}", last.started),
                fix,
            )
        }
        State::Interrupted => Check::failed(
            id,
            format!(
                "cfn-init's last run ({}, pid {}) ended without an outcome (killed, or the host went down)",
                last.started, last.pid
            ),
            fix,
        ),
        state => {
            Check::ok(id, format!("cfn-init's last run ({}, configSets {configsets}): {}", last.started, state.name()))
        }
    }
}

/// The state directory and what cfn-init keeps in it: nothing may be writable by others,
/// and the stored metadata (which may hold secrets) must not be readable by them (an
/// entry counts only when others can reach it: cfn-init's 0700 directory closes it all).
fn modes(state: &Path) -> Vec<Check> {
    let mut open = Vec::new();
    let mut readable = Vec::new();
    let mut seen = 0;
    walk(state, 0, true, &mut |path, mode, reachable| {
        seen += 1;
        if mode & 0o002 != 0 {
            open.push(path.to_path_buf());
        } else if reachable && mode & 0o044 != 0 && path.starts_with(state.join("data")) {
            readable.push(path.to_path_buf());
        }
    });
    let shown =
        |paths: &[std::path::PathBuf]| paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
    if !open.is_empty() {
        return vec![Check::failed(
            "init.state",
            format!("writable by anyone: {}", shown(&open)),
            format!("chmod o-w {}", shown(&open)),
        )];
    }
    if !readable.is_empty() {
        return vec![Check::warning(
            "init.state",
            format!("readable by others (the metadata may hold secrets): {}", shown(&readable)),
            format!("chmod go-rwx {}", state.display()),
        )];
    }
    vec![Check::ok("init.state", format!("{}: {seen} entries, none open to others", state.display()))]
}

/// Calls `each` with every entry under `dir` (itself included), its permission bits and
/// whether others can reach it (every directory above lets them through); links are not
/// followed.
fn walk(dir: &Path, depth: usize, reachable: bool, each: &mut dyn FnMut(&Path, u32, bool)) {
    let Ok(meta) = std::fs::symlink_metadata(dir) else { return };
    if meta.file_type().is_symlink() {
        return;
    }
    let mode = meta.mode() & 0o7777;
    each(dir, mode, reachable);
    if meta.is_dir() && depth < 4 {
        let mut entries: Vec<_> = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
        entries.sort();
        for entry in entries {
            walk(&entry, depth + 1, reachable && mode & 0o011 != 0, each);
        }
    }
}

/// `metadata.json` against the stack's metadata now.
fn metadata(ctx: &Context, data: &Path) -> Check {
    let id = "init.metadata";
    let hup = hup_config::config(ctx).map(|c| c.main);
    let stored = applied::read(data);
    let (stack, logical_id, caller) = match (&ctx.stack, &ctx.resource, &stored) {
        (Some(stack), Some(logical_id), _) => (stack.clone(), logical_id.clone(), api::command_line(ctx, hup.as_ref())),
        (_, _, Ok(applied)) => {
            let origin = &applied.origin;
            let caller = match &hup {
                Some(main) if origin.is(&main.stack, &main.region, &origin.logical_id) => {
                    api::Caller::Hup(Box::new(main.clone()))
                }
                _ => api::Caller::CommandLine { region: origin.region.clone() },
            };
            (origin.stack.clone(), origin.logical_id.clone(), caller)
        }
        (_, _, Err(e)) => return Check::skipped(id, format!("no resource to compare with: {e}")),
    };
    let stored_metadata = match (&stored, std::fs::read(data.join(applied::METADATA_FILE))) {
        (Ok(applied), _) => applied.metadata.clone(),
        (Err(_), Ok(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(e) => {
                return Check::failed(
                    id,
                    format!("{} is not JSON: {e}", data.join(applied::METADATA_FILE).display()),
                    "run cfn-init again to store it anew",
                );
            }
        },
        (Err(e), Err(_)) => return Check::skipped(id, format!("nothing to compare: {e}")),
    };
    match api::describe(ctx, &stack, &logical_id, &caller) {
        Described::Found(detail) if detail.metadata.as_ref() == Some(&stored_metadata) => {
            Check::ok(id, format!("metadata.json is the current metadata of {logical_id} in {stack}"))
        }
        Described::Found(_) => Check::warning(
            id,
            format!(
                "metadata.json differs from the current metadata of {logical_id} in {stack}: cfn-init has not run since it changed"
            ),
            "run cfn-init again (or check that a cfn-hup hook on its metadata runs it)",
        ),
        Described::NoResource(said) => Check::failed(id, said, "correct --stack/--resource"),
        Described::Failed { found, .. } => {
            Check::skipped(id, format!("the stack's metadata could not be read: {found}"))
        }
    }
}
