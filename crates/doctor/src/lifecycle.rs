//! The lifecycle section (issue 32), present when cfn-hup has lifecycle hooks: the
//! instance metadata items cfn-hup polls for them (404 is "no notice"), the group and
//! its Auto Scaling lifecycle hooks as cfn-hup would find them (its own readers, with
//! the credentials it would use: its configured keys, else the instance profile's role;
//! one try, each call within the probe's bound), a pinned `lifecycle-hook=` the group
//! does not have, a trigger with no lifecycle hook of its transition on the group, and
//! the last event cfn-hup recorded (`lifecycle.json`) with its result. Nothing is
//! completed and no heartbeat is sent: doctor stays read-only.

use super::{Check, Context, credentials, setup};
use cfn_aws::autoscaling::{self, AutoScaling, LifecycleHook as AsgHook};
use cfn_aws::credentials::Signer;
use cfn_aws::http::HttpClient;
use cfn_aws::retry::Policy;
use cfn_hooks::config::{self, MainConfig};
use cfn_hooks::ini::Ini;
use cfn_hooks::lifecycle::notice::{self, BODY_LIMIT};
use cfn_hooks::lifecycle::record::{self, Last, Record};
use cfn_hooks::lifecycle::{LifecycleHook, Trigger, discover};
use std::sync::Arc;
use std::time::Duration;

/// One try: doctor reports what it finds.
const ONE_TRY: Policy = Policy { max_tries: 1, throttled_budget: Duration::ZERO, sleep: std::thread::sleep };

/// The items cfn-hup polls, with the triggers that need each.
const ITEMS: [(&str, &[Trigger]); 4] = [
    (notice::TARGET_LIFECYCLE_STATE, &[Trigger::AsgLaunch, Trigger::AsgTerminate]),
    (notice::SPOT_INSTANCE_ACTION, &[Trigger::SpotInterruption]),
    (notice::REBALANCE, &[Trigger::Rebalance]),
    (notice::MAINTENANCE, &[Trigger::Maintenance]),
];

pub fn checks(ctx: &Context) -> Vec<Check> {
    let Ok(main) = config::load_main(&ctx.conf_dir) else { return Vec::new() };
    let Ok(hooks) = config::load_hooks(&ctx.conf_dir) else { return Vec::new() };
    let hooks = hooks.lifecycle;
    if hooks.is_empty() {
        return Vec::new();
    }
    let wanted = |t: Trigger| hooks.iter().any(|h| h.has_trigger(t));
    let mut checks = Vec::new();
    for (path, triggers) in ITEMS {
        checks.push(item(ctx, path, triggers, &wanted));
    }
    if wanted(Trigger::AsgLaunch) || wanted(Trigger::AsgTerminate) {
        checks.extend(auto_scaling(ctx, &main, &hooks));
    }
    checks.extend(recorded(&record::default_path()));
    checks
}

/// The short name of an item (`autoscaling/target-lifecycle-state`).
fn short(path: &str) -> &str {
    path.strip_prefix("/latest/meta-data/").unwrap_or(path)
}

fn item(ctx: &Context, path: &str, triggers: &[Trigger], wanted: &dyn Fn(Trigger) -> bool) -> Check {
    let id = format!("lifecycle.imds:{}", short(path));
    let names: Vec<&str> = triggers.iter().map(|t| t.name()).collect();
    if !triggers.iter().any(|t| wanted(*t)) {
        return Check::skipped(id, format!("not polled: no hook has {}", names.join(" or ")));
    }
    if ctx.probe_timeout().is_none() {
        return Check::skipped(id, "not asked: the run's time bound was reached");
    }
    match ctx.imds.poll(path, BODY_LIMIT) {
        Ok(None) => Check::ok(id, "answers 404: no notice"),
        Ok(Some(text)) if path == notice::TARGET_LIFECYCLE_STATE => match notice::target_state(&text) {
            Ok(state) => Check::ok(id, format!("answers {state}")),
            Err(why) => Check::warning(id, why, "nothing to do on this host if it passes; cfn-hup goes on polling"),
        },
        Ok(Some(text)) => {
            let line: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
            Check::ok(id, format!("a notice: {line}"))
        }
        Err(e) => Check::failed(
            id,
            format!("{e}: cfn-hup cannot see {} while this lasts", names.join(" or ")),
            "see the credentials checks for the instance metadata (IMDSv2 hop limit, a proxy, a firewall)",
        ),
    }
}

/// An Auto Scaling client with the credentials cfn-hup would use.
fn client(ctx: &Context, main: &MainConfig, region: &str) -> Result<AutoScaling, String> {
    let options = setup::hup_credentials(main, region);
    let keys = match credentials::attempt(ctx, &options).signer()? {
        Signer::SigV4(keys) => keys,
        Signer::InstanceIdentity => {
            ctx.probe_timeout().ok_or("doctor's run bound was reached")?;
            let role = ctx
                .imds
                .instance_profile_role()
                .map_err(|e| format!("no keys for Auto Scaling: no instance profile role ({e})"))?;
            ctx.imds.role_credentials(&role).map_err(|e| format!("no keys for role {role}: {e}"))?
        }
    };
    let limit = ctx.probe_timeout().ok_or("doctor's run bound was reached")?;
    let http = HttpClient::new(cfn_aws::ProxyOptions::default(), cfn_aws::api_user_agent()).with_attempt_timeout(limit);
    Ok(AutoScaling::new(region, &keys, Arc::new(http)).with_retry(ONE_TRY))
}

/// An Auto Scaling error as a failed check naming the IAM action to allow.
fn api_failure(id: String, call: &str, error: &str) -> Check {
    if error.contains("AccessDenied") || error.contains("not authorized") {
        return Check::failed(
            id,
            error.to_string(),
            format!(
                "allow autoscaling:{call} to the role cfn-hup signs with (cfn-hup also needs \
                 autoscaling:CompleteLifecycleAction and autoscaling:RecordLifecycleActionHeartbeat)"
            ),
        );
    }
    Check::failed(id, error.to_string(), "read the error above; see the credentials and network checks")
}

fn auto_scaling(ctx: &Context, main: &MainConfig, hooks: &[LifecycleHook]) -> Vec<Check> {
    let skipped = |why: String| vec![Check::skipped("lifecycle.group", why)];
    if ctx.probe_timeout().is_none() {
        return skipped("not asked: the run's time bound was reached".into());
    }
    let Some(instance) = ctx.imds.instance_id() else {
        return skipped("not asked: no instance id in the instance metadata (not on EC2?)".into());
    };
    let region = ctx
        .imds
        .poll("/latest/meta-data/placement/region", 64)
        .ok()
        .flatten()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| main.region.clone());
    let asg = match client(ctx, main, &region) {
        Ok(asg) => asg,
        Err(why) => return skipped(format!("not asked: {why}; see the credentials checks")),
    };
    let pinned = hooks.iter().find_map(|h| h.autoscaling_group.as_deref());
    let group = match discover::group(pinned, &ctx.imds, &asg, &instance) {
        Ok(group) => group,
        Err(e) if e.contains("is in no Auto Scaling group") => {
            return vec![Check::warning(
                "lifecycle.group",
                format!("{e}: the on.asg.* hooks never run here"),
                "launch the instance from the Auto Scaling group, or remove the on.asg.* triggers",
            )];
        }
        Err(e) => return vec![api_failure("lifecycle.group".into(), "DescribeAutoScalingInstances", &e)],
    };
    let mut checks = vec![Check::ok(
        "lifecycle.group",
        format!("instance {instance} is in group {} (from {})", group.name, group.from),
    )];
    if ctx.probe_timeout().is_none() {
        checks.push(Check::skipped("lifecycle.hooks", "not asked: the run's time bound was reached"));
        return checks;
    }
    let listed = match asg.lifecycle_hooks(&group.name, &[]) {
        Ok(listed) => listed,
        Err(e) => {
            checks.push(api_failure("lifecycle.hooks".into(), "DescribeLifecycleHooks", &e.to_string()));
            return checks;
        }
    };
    for trigger in [Trigger::AsgLaunch, Trigger::AsgTerminate] {
        let sections: Vec<&LifecycleHook> = hooks.iter().filter(|h| h.has_trigger(trigger)).collect();
        if sections.is_empty() {
            continue;
        }
        checks.extend(transition(ctx, trigger, &group.name, &sections, &listed));
    }
    checks
}

/// The group's lifecycle hooks of `trigger`'s transition against the sections that have it.
fn transition(
    ctx: &Context,
    trigger: Trigger,
    group: &str,
    sections: &[&LifecycleHook],
    listed: &[AsgHook],
) -> Vec<Check> {
    let transition = if trigger == Trigger::AsgLaunch { autoscaling::LAUNCHING } else { autoscaling::TERMINATING };
    let of: Vec<&AsgHook> = listed.iter().filter(|h| h.transition == transition).collect();
    let names: Vec<&str> = of.iter().map(|h| h.name.as_str()).collect();
    let id = format!("lifecycle.hooks:{}", trigger.name());
    let section_names: Vec<String> = sections.iter().map(|h| format!("[{}]", h.name)).collect();
    let mut checks = Vec::new();
    if of.is_empty() {
        let all: Vec<String> = listed.iter().map(|h| format!("{} ({})", h.name, h.transition)).collect();
        let has = if all.is_empty() { "none".to_string() } else { all.join(", ") };
        checks.push(Check::warning(
            id,
            format!(
                "group {group} has no lifecycle hook of {transition} (it has: {has}): {} run(s) but nothing waits \
                 for {}",
                section_names.join(", "),
                if trigger == Trigger::AsgLaunch { "the instance to be ready" } else { "the drain to end" }
            ),
            format!("add an AWS::AutoScaling::LifecycleHook with LifecycleTransition {transition} to group {group}"),
        ));
    } else {
        let shown: Vec<String> = of
            .iter()
            .map(|h| {
                format!(
                    "{} (heartbeat timeout {} s, global {} s, default {})",
                    h.name, h.heartbeat_timeout, h.global_timeout, h.default_result
                )
            })
            .collect();
        checks.push(Check::ok(id, format!("group {group}: {}; for {}", shown.join(", "), section_names.join(", "))));
    }
    for section in sections {
        let Some(pinned) = &section.lifecycle_hook else { continue };
        if names.contains(&pinned.as_str()) {
            continue;
        }
        let file = file_of(ctx, &section.name, "lifecycle-hook").unwrap_or_else(|| "the hook files".into());
        let has = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        checks.push(Check::failed(
            format!("lifecycle.pinned:{}", section.name),
            format!(
                "lifecycle-hook={pinned} in {file}, section [{}]: group {group} has no such hook of {transition} \
                 (it has: {has}); the completion will fail and the group waits out its timeout",
                section.name
            ),
            format!(
                "correct lifecycle-hook in section [{}] of {file}, or remove it to complete every hook",
                section.name
            ),
        ));
    }
    checks
}

/// The hook file that sets `key` in `section` (the last one read, as cfn-hup reads them).
fn file_of(ctx: &Context, section: &str, key: &str) -> Option<String> {
    config::hook_files(&ctx.conf_dir).into_iter().rev().find_map(|file| {
        let mut ini = Ini::new();
        ini.read_file(&file).ok()?.ok()?;
        ini.get(section, key).ok().flatten().map(|_| file.display().to_string())
    })
}

/// The last event cfn-hup recorded and its result.
fn recorded(path: &std::path::Path) -> Vec<Check> {
    let id = "lifecycle.last";
    let record = match Record::read(path) {
        Ok(Some(record)) => record,
        Ok(None) => return vec![Check::ok(id, "no event handled yet")],
        Err(e) => {
            return vec![Check::warning(
                id,
                format!("{e}: cfn-hup starts from nothing (an action may run again)"),
                format!("remove {} if it is not cfn-hup's", path.display()),
            )];
        }
    };
    let Some(last) = record.last() else { return vec![Check::ok(id, "no event handled yet")] };
    let handling = last.handling();
    let failed: Vec<String> = handling
        .actions
        .iter()
        .filter(|(_, run)| run.finished.is_some() && run.code != Some(0))
        .map(|(section, run)| format!("[{section}] exit {}", run.code.unwrap_or(-1)))
        .collect();
    let mut found = format!(
        "{} seen {}: {}",
        handling.trigger,
        handling.first_seen,
        if handling.done { "done" } else { "under way" }
    );
    let mut checks = Vec::new();
    if let Last::Transition(t) = last {
        let completed: Vec<String> = t.completed.iter().map(|(h, r)| format!("{h} {r}")).collect();
        found.push_str(&format!(
            "; group {}; {} heartbeat(s); completed: {}",
            if t.group.is_empty() { "-" } else { &t.group },
            t.heartbeats,
            if completed.is_empty() { "none".to_string() } else { completed.join(", ") }
        ));
        if let Some(error) = &t.last_error {
            let call = error.split(' ').next().unwrap_or_default();
            checks.push(api_failure("lifecycle.last_call".into(), call, &format!("last failed call: {error}")));
        }
    }
    // What happened is history, not something to fix here: said, not judged.
    if !failed.is_empty() {
        found.push_str(&format!("; failed action(s): {} (see cfn-hup.log)", failed.join(", ")));
    }
    checks.insert(0, Check::ok(id, found));
    checks
}
