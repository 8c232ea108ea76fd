//! Running the hook sections of one notice or transition in configuration order, each
//! recorded in `lifecycle.json` before it starts (with its process group once it runs)
//! and when it ends: a section that finished is not run again, one cut short by a
//! killed cfn-hup is run again after its orphaned process group is ended.

use super::LifecycleHook;
use super::action::{self, Ran};
use super::record::{ActionRun, Handling, Record};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

pub fn lock(record: &Mutex<Record>) -> MutexGuard<'_, Record> {
    record.lock().unwrap_or_else(|e| e.into_inner())
}

fn now() -> String {
    crate::activity::time(chrono::Utc::now())
}

/// `locate` as a closure over any borrow of the record (closures do not infer that by
/// themselves).
pub fn locator<F: Fn(&mut Record) -> &mut Handling + Sync>(locate: F) -> F {
    locate
}

/// How each section ended, in order.
pub type Outcomes = Vec<(String, Ran)>;

/// Runs `hooks` (those not finished before) with `env`, each killed after `limit_for`
/// it; `locate` finds the notice's or transition's entry in the record.
pub fn run(
    record: &Mutex<Record>,
    locate: &(dyn Fn(&mut Record) -> &mut Handling + Sync),
    hooks: &[&LifecycleHook],
    env: &[(String, String)],
    limit_for: &dyn Fn(&LifecycleHook) -> Option<Duration>,
) -> Outcomes {
    let mut outcomes = Vec::new();
    for hook in hooks {
        let previous = locate(&mut lock(record)).actions.get(&hook.name).cloned();
        if let Some(ActionRun { finished: Some(_), code, .. }) = &previous {
            let code = code.unwrap_or(-1);
            tracing::info!("The action for {} finished before (exit {code}); not running it again", hook.name);
            outcomes.push((hook.name.clone(), if code == -1 { Err("could not run".into()) } else { Ok(code) }));
            continue;
        }
        if let Some(ActionRun { pid: Some(pid), start_ticks: Some(ticks), .. }) = previous {
            action::end_orphan(pid, ticks);
        }
        {
            let mut guard = lock(record);
            locate(&mut guard).actions.insert(hook.name.clone(), ActionRun { started: now(), ..Default::default() });
            guard.save();
        }
        tracing::info!("Running action for {}", hook.name);
        let started = |pid: u32| {
            let mut guard = lock(record);
            if let Some(run) = locate(&mut guard).actions.get_mut(&hook.name) {
                run.pid = Some(pid);
                run.start_ticks = action::start_ticks(pid);
            }
            guard.save();
        };
        let ran = action::run(hook, env, limit_for(hook), started);
        match &ran {
            Ok(0) => tracing::info!("Action for {} succeeded", hook.name),
            Ok(code) => tracing::error!("Action for {} exited with {code}", hook.name),
            Err(why) => tracing::error!("Action for {} {why}", hook.name),
        }
        {
            let mut guard = lock(record);
            if let Some(run) = locate(&mut guard).actions.get_mut(&hook.name) {
                run.finished = Some(now());
                run.code = Some(*ran.as_ref().unwrap_or(&-1));
                run.pid = None;
                run.start_ticks = None;
            }
            guard.save();
        }
        outcomes.push((hook.name.clone(), ran));
    }
    outcomes
}
