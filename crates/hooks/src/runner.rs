//! One processing pass over the update hooks (SPEC §14.5; HUP-DET-02, HUP-DET-03,
//! HUP-ACT-01, HUP-ACT-02), and, in the service, the back-off of actions that keep
//! failing ([`crate::backoff`]).

use crate::activity::{self, FailingHook, HookRun};
use crate::backoff::{self, Backoff};
use crate::baseline::InitBaseline;
use crate::config::Hook;
use crate::detect::{self, Decision};
use crate::state::{MetadataDb, StateValue};
use cfn_aws::cfn::Error as ApiError;
use cfn_aws::retry::Verdict;
use cfn_aws::{CloudFormation, StackResourceDetail};
use cfn_host::CommandLine;
use cfn_host::process::{self, Environment, InGroup, Invocation};
use cfn_host::process_groups::ProcessGroups;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// Where resource descriptions come from (CloudFormation, or a fake in unit tests).
pub trait Describe {
    fn describe(&self, stack: &str, logical_id: &str) -> Result<StackResourceDetail, ApiError>;
}

impl Describe for CloudFormation {
    fn describe(&self, stack: &str, logical_id: &str) -> Result<StackResourceDetail, ApiError> {
        self.describe_stack_resource(stack, logical_id)
    }
}

/// How the service looked during a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Ok,
    /// Unreachable, or answering with server errors: `<reason>`.
    Unavailable(String),
    /// Throttling (or 503 / key propagation) after the retries: `<reason>`.
    Throttled(String),
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct PassReport {
    pub actions_run: usize,
    pub actions_failed: usize,
    /// The actions run, in order.
    pub hook_runs: Vec<HookRun>,
    /// The last error of the pass (a hook's resource not described, an action failed).
    pub last_error: Option<String>,
    /// The worst thing the service did (`None` when every call succeeded or no call was needed).
    pub trouble: Option<Health>,
    /// The failing hooks after the pass, when it kept a back-off (`None`: `--no-daemon`).
    pub failing_hooks: Option<Vec<FailingHook>>,
}

impl PassReport {
    pub fn health(&self) -> Health {
        self.trouble.clone().unwrap_or(Health::Ok)
    }
}

pub struct PassOptions<'a> {
    /// Daemon mode: service outages are reported by the caller once per change of state,
    /// so each hook's failure is only a DEBUG line.
    pub quiet_outages: bool,
    /// Checked between hooks: a pending shutdown stops the pass early.
    pub stop: &'a dyn Fn() -> bool,
    /// The metadata cfn-init last applied: the baseline of a hook with no stored state.
    pub baseline: Option<&'a InitBaseline>,
    /// The service's running actions: each action runs as a process group of its own,
    /// registered here under its hook's name so that SIGTERM can stop it (`None`:
    /// `--no-daemon`, where an action stays in cfn-hup's group and terminal).
    pub actions: Option<&'a ProcessGroups>,
    /// The service's back-off of actions that keep failing for one value (`None`:
    /// `--no-daemon`, where each call runs a due action, as the reference does).
    pub backoff: Option<&'a Mutex<Backoff>>,
}

fn lock(backoff: &Mutex<Backoff>) -> MutexGuard<'_, Backoff> {
    backoff.lock().unwrap_or_else(|e| e.into_inner())
}

fn classify(error: &ApiError) -> Option<Health> {
    match error.verdict() {
        Verdict::Throttled => Some(Health::Throttled(error.to_string())),
        Verdict::Retriable => Some(Health::Unavailable(error.to_string())),
        Verdict::Terminal => match error {
            ApiError::Transport { .. } => Some(Health::Unavailable(error.to_string())),
            _ => None,
        },
    }
}

/// Runs every hook once. One DescribeStackResource per resource per pass; resources in
/// an `*_IN_PROGRESS` state are left for the next pass; state is stored only when nothing
/// needed to run or the action succeeded. A hook with no stored state is compared with
/// the metadata cfn-init last applied, when that came from the resource it watches.
/// With a back-off, an action that failed [`backoff::FREE_TRIES`] times in a row for
/// the value it would run for again is left out of the passes its schedule says.
pub fn run_pass(
    stack: &str,
    hooks: &[Hook],
    api: &dyn Describe,
    db: &mut MetadataDb,
    options: &PassOptions<'_>,
) -> PassReport {
    let mut report = PassReport::default();
    prune(db, hooks, options.backoff);
    let mut cache: HashMap<&str, Result<StackResourceDetail, ApiError>> = HashMap::new();
    for hook in hooks {
        if (options.stop)() {
            break;
        }
        let id = hook.path.logical_id.as_str();
        let described = cache.entry(id).or_insert_with(|| api.describe(stack, id));
        let detail = match described {
            Ok(detail) => detail,
            Err(error) => {
                report.last_error = Some(format!("Exception caught while running hook {}: {error}", hook.name));
                let trouble = classify(error);
                if trouble.is_some() && options.quiet_outages {
                    tracing::debug!("Exception caught while running hook {}: {error}", hook.name);
                } else {
                    tracing::error!("Exception caught while running hook {}: {error}", hook.name);
                }
                if let Some(trouble) = trouble
                    && !matches!(report.trouble, Some(Health::Throttled(_)))
                {
                    report.trouble = Some(trouble);
                }
                continue;
            }
        };
        if detail.resource_status.ends_with("_IN_PROGRESS") {
            tracing::debug!(
                "Resource {id} is {}; hook {} will be checked on the next pass",
                detail.resource_status,
                hook.name
            );
            continue;
        }
        let key = MetadataDb::key(&hook.name, &hook.path.text);
        let new = detect::resolve(hook, detail, stack);
        let mut old = db.get(&key);
        let mut decision = if db.was_interrupted(&key) {
            detect::decide_after_interruption(hook, old.as_ref(), new.as_ref())
        } else {
            detect::decide(hook, old.as_ref(), new.as_ref())
        };
        // No stored state and nothing to run by the reference's first-run rules (a
        // post.add still fires as it always did): compare with what cfn-init applied.
        if old.is_none()
            && decision == Decision::NoChange
            && let Some(applied) = options.baseline.and_then(|b| b.value(hook))
        {
            tracing::info!(
                "No previous state for {}; using the metadata cfn-init last applied as the baseline",
                hook.name
            );
            decision = detect::decide(hook, Some(&applied), new.as_ref());
            old = Some(applied);
        }
        let Some(reason) = decision.reason(hook) else {
            tracing::debug!("No change in path {} for hook {}", hook.path.text, hook.name);
            store(db, &key, new.as_ref());
            end_action(db, &key);
            if let Some(backoff) = options.backoff {
                lock(backoff).clear(&key);
            }
            continue;
        };
        let digest = backoff::value_digest(new.as_ref());
        if let Some(waiting) = options.backoff.and_then(|b| lock(b).holds(&key, &digest).cloned()) {
            tracing::debug!(
                "Action for {} failed {} times in a row for this value; backing off until {} ({} more pass(es) left out)",
                hook.name,
                waiting.tries,
                waiting.next_try,
                waiting.passes_to_skip
            );
            continue;
        }
        tracing::info!("{reason}");
        report.actions_run += 1;
        // Recorded before the action starts, so that one cut short is run again.
        if let Err(e) = db.action_started(&key) {
            tracing::error!("Could not record that the action for {} starts: {e}", hook.name);
        }
        let (started, clock) = (Utc::now(), Instant::now());
        let retry_words = |error: &str| next_try(options, hook, &digest, error, started);
        let ran = run_action(hook, old.as_ref(), new.as_ref(), options.actions, retry_words);
        report.hook_runs.push(HookRun::new(&hook.name, activity::time(started), clock.elapsed(), &ran));
        if ran == Ok(0) {
            store(db, &key, new.as_ref());
            end_action(db, &key);
            if let Some(backoff) = options.backoff {
                lock(backoff).clear(&key);
            }
        } else {
            report.actions_failed += 1;
            report.last_error = Some(match ran {
                Ok(code) => format!("Action for {} exited with {code}", hook.name),
                Err(why) => format!("Action for {} {why}", hook.name),
            });
            // An action the stop ended was cut short: it stays recorded as started. One
            // that failed on its own has ended; it runs again only while the value still
            // differs from the one stored (the reference's retry).
            if !(options.stop)() {
                end_action(db, &key);
            }
        }
        debug_assert!(decision != Decision::NoChange);
    }
    report.failing_hooks = options.backoff.map(|b| lock(b).failing().to_vec());
    report
}

/// What the log says of the next try after the action of `hook` failed (`error`), and
/// the back-off's record of the failure. An action that a stop of the service cut short
/// did not fail on its own: it is no try.
fn next_try(options: &PassOptions<'_>, hook: &Hook, digest: &str, error: &str, started: DateTime<Utc>) -> String {
    const REFERENCE: &str = "will retry on next iteration";
    let Some(backoff) = options.backoff.filter(|_| !(options.stop)()) else {
        return REFERENCE.to_string();
    };
    let failure = lock(backoff).failed((&hook.name, &hook.path.text), digest, error, started);
    if failure.tries < backoff::FREE_TRIES {
        return REFERENCE.to_string();
    }
    format!(
        "failed {} times in a row; next try at {}, in {}",
        failure.tries,
        backoff::local_time(failure.next_try),
        backoff::in_words(failure.wait)
    )
}

/// Drops the state of hooks that are no longer configured (issue 13, item 14), so that
/// `metadata_db.json` does not grow with every hook ever removed or moved to another path.
fn prune(db: &mut MetadataDb, hooks: &[Hook], backoff: Option<&Mutex<Backoff>>) {
    let keep = hooks.iter().map(|h| MetadataDb::key(&h.name, &h.path.text)).collect();
    if let Some(backoff) = backoff {
        lock(backoff).retain(&keep);
    }
    match db.retain_keys(&keep) {
        Ok(dropped) if !dropped.is_empty() => {
            tracing::info!("Dropped the state of hooks no longer configured: {}", dropped.join(", "))
        }
        Ok(_) => {}
        Err(e) => tracing::error!("Could not drop the state of hooks no longer configured: {e}"),
    }
}

fn end_action(db: &mut MetadataDb, key: &str) {
    if let Err(e) = db.action_ended(key) {
        tracing::error!("Could not record that the action for {key} ended: {e}");
    }
}

fn store(db: &mut MetadataDb, key: &str, value: Option<&StateValue>) {
    if let Err(e) = db.set(key, value) {
        tracing::error!("Could not save the state of {key}: {e}");
    }
}

/// Runs the action through `/bin/sh -c`, as `runas` when given (switching uid, gid,
/// groups and HOME directly instead of through `su`). Its exit code, or why it could
/// not run (`cannot run: …`, `could not be started: …`). A failure is logged with the
/// words `next_try` gives for it (`exit 3`, or why it could not run).
fn run_action(
    hook: &Hook,
    old: Option<&StateValue>,
    new: Option<&StateValue>,
    actions: Option<&ProcessGroups>,
    next_try: impl FnOnce(&str) -> String,
) -> Result<i32, String> {
    tracing::info!("Running action for {}", hook.name);
    let user = match &hook.runas {
        None => None,
        Some(name) => match cfn_host::users::user(name) {
            Some(user) => Some(user),
            None => {
                let why = format!("cannot run: user {name} does not exist");
                tracing::error!("Action for {} {why}; {}", hook.name, next_try(&why));
                return Err(why);
            }
        },
    };
    // Update hooks and command hooks alike: cfn-hup's own environment, with each added
    // variable replacing its namesake.
    let env = detect::action_env(hook, old, new);
    let command = CommandLine::Shell(hook.action.clone());
    let invocation =
        Invocation { command: &command, env: Environment::Override(&env), cwd: None, runas: user.as_ref() };
    let ran = match actions {
        Some(groups) => process::run_in_group(&invocation, InGroup { groups, label: &hook.name }, |_| {}),
        None => process::run(&invocation, |_| {}),
    };
    // The reference's words for an action that printed nothing.
    let output = |text: String| if text.is_empty() { "<None>".to_string() } else { text };
    match ran {
        Ok(finished) if finished.code == 0 => {
            tracing::debug!("Action for {} output: {}", hook.name, output(finished.text()));
            Ok(0)
        }
        Ok(finished) => {
            let when = next_try(&format!("exit {}", finished.code));
            tracing::warn!("Action for {} exited with {}; {when}", hook.name, finished.code);
            tracing::debug!("Action for {} output: {}", hook.name, output(finished.text()));
            Ok(finished.code)
        }
        Err(e) => {
            let why = format!("could not be started: {e}");
            tracing::error!("Action for {} {why}; {}", hook.name, next_try(&why));
            Err(why)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::HookPath;
    use chrono::{DateTime, Utc};
    use serde_json::{Value, json};
    use std::cell::RefCell;

    struct Fake {
        metadata: RefCell<Value>,
        status: RefCell<String>,
        calls: RefCell<Vec<String>>,
        fail: RefCell<Option<ApiError>>,
    }

    impl Describe for Fake {
        fn describe(&self, _stack: &str, id: &str) -> Result<StackResourceDetail, ApiError> {
            self.calls.borrow_mut().push(id.to_string());
            if let Some(e) = self.fail.borrow().clone() {
                return Err(e);
            }
            Ok(StackResourceDetail {
                logical_resource_id: id.into(),
                physical_resource_id: Some(format!("phys-{id}")),
                resource_type: "T".into(),
                resource_status: self.status.borrow().clone(),
                last_updated: DateTime::<Utc>::from_timestamp(1, 0).unwrap(),
                metadata: Some(self.metadata.borrow().clone()),
                stack_id: None,
                stack_name: None,
            })
        }
    }

    fn hook(name: &str, triggers: &str, path: &str, action: &str) -> Hook {
        Hook {
            name: name.into(),
            triggers: triggers.split(',').map(String::from).collect(),
            path: HookPath::parse(path).unwrap(),
            action: action.into(),
            runas: None,
        }
    }

    #[test]
    fn one_call_per_resource_in_progress_skipped_failures_retried() {
        let dir = tempfile::tempdir().unwrap();
        let marks = dir.path().join("marks");
        let fake = Fake {
            metadata: RefCell::new(json!({"a": 1})),
            status: RefCell::new("CREATE_IN_PROGRESS".into()),
            calls: RefCell::new(vec![]),
            fail: RefCell::new(None),
        };
        let gate = dir.path().join("gate");
        let hooks = [
            hook("add", "post.add", "Resources.A.Metadata.a", &format!("echo add >> {}", marks.display())),
            hook("upd", "post.update", "Resources.A.Metadata", &format!("echo upd >> {}", marks.display())),
            hook(
                "flaky",
                "post.add",
                "Resources.B.Metadata",
                &format!("test -e {} && echo flaky >> {}", gate.display(), marks.display()),
            ),
        ];
        let mut db = MetadataDb::load(&dir.path().join("db.json"));
        let options =
            PassOptions { quiet_outages: false, stop: &|| false, baseline: None, actions: None, backoff: None };
        let marks_text = || std::fs::read_to_string(&marks).unwrap_or_default();

        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, fake.calls.borrow().len()), (0, 2), "in progress: nothing runs");
        fake.status.replace("CREATE_COMPLETE".into());
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, r.actions_failed), (2, 1));
        assert_eq!(marks_text(), "add\n");
        assert_eq!(fake.calls.borrow().len(), 4, "one DescribeStackResource per resource per pass");
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, r.actions_failed), (1, 1), "the failed action is retried");
        std::fs::write(&gate, "").unwrap();
        fake.metadata.replace(json!({"a": 2}));
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, r.actions_failed), (2, 0));
        assert_eq!(marks_text(), "add\nupd\nflaky\n");
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!(r.actions_run, 0);

        fake.fail.replace(Some(ApiError::Remote {
            status: 400,
            code: "Throttling".into(),
            message: "Rate exceeded".into(),
            sender_fault: true,
        }));
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert!(matches!(r.health(), Health::Throttled(_)), "{r:?}");
        let stop_now =
            PassOptions { quiet_outages: true, stop: &|| true, baseline: None, actions: None, backoff: None };
        let before = fake.calls.borrow().len();
        run_pass("s", &hooks, &fake, &mut db, &stop_now);
        assert_eq!(fake.calls.borrow().len(), before, "a pending shutdown stops the pass");
    }

    /// Issue 13, item 16: with no stored state, a post.update hook compares with the
    /// metadata cfn-init last applied for its resource, so an update that landed before
    /// the first completed pass fires once; post.add keeps its first-run rule.
    #[test]
    fn a_hook_without_state_starts_from_what_cfn_init_applied() {
        use cfn_metadata::applied::{self, Origin};
        let dir = tempfile::tempdir().unwrap();
        let marks = dir.path().join("marks");
        let data = dir.path().join("init");
        std::fs::create_dir(&data).unwrap();
        let text = cfn_python::json::to_pretty(&json!({"v": 1, "gone": "x"}));
        std::fs::write(data.join(applied::METADATA_FILE), &text).unwrap();
        let origin = Origin { stack: "s".into(), region: "r".into(), logical_id: "A".into() };
        applied::record(&data, Some(&origin), &text).unwrap();
        let fake = Fake {
            metadata: RefCell::new(json!({"v": 2})),
            status: RefCell::new("UPDATE_COMPLETE".into()),
            calls: RefCell::new(vec![]),
            fail: RefCell::new(None),
        };
        let record = |tag: &str| format!("echo {tag} $CFN_OLD_METADATA $CFN_NEW_METADATA >> {}", marks.display());
        let hooks = [
            hook("upd", "post.update", "Resources.A.Metadata.v", &record("upd")),
            hook("add", "post.add,post.update", "Resources.A.Metadata.v", &record("add")),
            hook("rm", "post.remove", "Resources.A.Metadata.gone", &record("rm")),
            hook("other", "post.update", "Resources.B.Metadata.v", &record("other")),
        ];
        let mut db = MetadataDb::load(&dir.path().join("db.json"));
        let run = |db: &mut MetadataDb| {
            let baseline = InitBaseline::in_dir(data.clone(), "s", "r");
            let options = PassOptions {
                quiet_outages: false,
                stop: &|| false,
                baseline: Some(&baseline),
                actions: None,
                backoff: None,
            };
            run_pass("s", &hooks, &fake, db, &options)
        };
        let r = run(&mut db);
        assert_eq!((r.actions_run, r.actions_failed), (3, 0));
        let text = std::fs::read_to_string(&marks).unwrap();
        assert_eq!(text, "upd 1 2\nadd 2\nrm x\n", "B is not the resource cfn-init read: no baseline");
        let r = run(&mut db);
        assert_eq!(r.actions_run, 0, "once");
        assert_eq!(db.get("other|Resources.B.Metadata.v"), Some(StateValue::Json(json!(2))));
    }

    /// The service's back-off within passes: an action failing for one value runs at
    /// passes 1, 2, 3, 5, 9 and 17 of 20; a new value runs at once; a success ends the
    /// back-off; without a back-off (`--no-daemon`) the report has no failing hooks.
    #[test]
    fn the_back_off_leaves_out_passes_and_a_new_value_or_a_success_ends_it() {
        let dir = tempfile::tempdir().unwrap();
        let (marks, gate) = (dir.path().join("marks"), dir.path().join("gate"));
        let fake = Fake {
            metadata: RefCell::new(json!({"v": "A"})),
            status: RefCell::new("UPDATE_COMPLETE".into()),
            calls: RefCell::new(vec![]),
            fail: RefCell::new(None),
        };
        let action = format!("echo \"$CFN_NEW_METADATA\" >> {}; test -e {}", marks.display(), gate.display());
        let hooks = [hook("h", "post.add,post.update", "Resources.A.Metadata.v", &action)];
        let mut db = MetadataDb::load(&dir.path().join("db.json"));
        let minute = std::time::Duration::from_secs(60);
        let backoff = Mutex::new(Backoff::new(minute, minute * 60));
        let options = PassOptions {
            quiet_outages: false,
            stop: &|| false,
            baseline: None,
            actions: None,
            backoff: Some(&backoff),
        };
        let mut ran = Vec::new();
        let mut last = PassReport::default();
        for pass in 1..=20 {
            last = run_pass("s", &hooks, &fake, &mut db, &options);
            if last.actions_run == 1 {
                ran.push(pass);
            }
        }
        assert_eq!(ran, [1, 2, 3, 5, 9, 17]);
        let failing = last.failing_hooks.expect("the service's pass reports its failing hooks");
        assert_eq!((failing[0].hook.as_str(), failing[0].tries, failing[0].last_error.as_str()), ("h", 6, "exit 1"));

        fake.metadata.replace(json!({"v": "B"}));
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, r.failing_hooks.unwrap()[0].tries), (1, 1), "a new value runs at once");
        std::fs::write(&gate, "").unwrap();
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, r.actions_failed, r.failing_hooks), (1, 0, Some(vec![])));
        assert_eq!(db.get("h|Resources.A.Metadata.v"), Some(StateValue::Json(json!("B"))));
        assert_eq!(std::fs::read_to_string(&marks).unwrap().lines().count(), 8);

        let once = PassOptions { quiet_outages: false, stop: &|| false, baseline: None, actions: None, backoff: None };
        assert_eq!(run_pass("s", &hooks, &fake, &mut db, &once).failing_hooks, None);
    }

    /// An action cut short (cfn-hup killed or stopped while it ran) runs again at the
    /// next pass, even when the value went back to the one stored meanwhile; one that
    /// failed on its own does not, and a completed one leaves no record.
    #[test]
    fn an_action_cut_short_runs_again_even_when_the_value_went_back() {
        let dir = tempfile::tempdir().unwrap();
        let marks = dir.path().join("marks");
        let gate = dir.path().join("gate");
        let fake = Fake {
            metadata: RefCell::new(json!({"v": "A"})),
            status: RefCell::new("UPDATE_COMPLETE".into()),
            calls: RefCell::new(vec![]),
            fail: RefCell::new(None),
        };
        let action = format!("test -e {} && echo \"$CFN_NEW_METADATA\" >> {}", gate.display(), marks.display());
        let hooks = [hook("h", "post.update", "Resources.A.Metadata.v", &action)];
        let key = MetadataDb::key("h", "Resources.A.Metadata.v");
        let db_path = dir.path().join("data/metadata_db.json");
        let started = dir.path().join("data").join(crate::state::STARTED_FILE);
        let options =
            PassOptions { quiet_outages: false, stop: &|| false, baseline: None, actions: None, backoff: None };
        let marks_text = || std::fs::read_to_string(&marks).unwrap_or_default();
        let mut db = MetadataDb::load(&db_path);
        db.set(&key, Some(&StateValue::Json(json!("A")))).unwrap();

        // The action for B started, then cfn-hup died (the record says so), and the value
        // went back to A: the state still says A, yet the action runs again, for A.
        db.action_started(&key).unwrap();
        let mut db = MetadataDb::load(&db_path);
        assert!(db.was_interrupted(&key));
        std::fs::write(&gate, "").unwrap();
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, r.actions_failed), (1, 0));
        assert_eq!(marks_text(), "A\n");
        assert_eq!(std::fs::read_to_string(&started).unwrap(), "[]");
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!(r.actions_run, 0, "ended: not again");

        // Stopped while it runs (the action fails as the stop begins: the pass asks once
        // before the hook, once after its action): it stays recorded.
        std::fs::remove_file(&gate).unwrap();
        fake.metadata.replace(json!({"v": "B"}));
        let asked = std::cell::Cell::new(0);
        let stop_during_action = || {
            asked.set(asked.get() + 1);
            asked.get() > 1
        };
        let stopping = PassOptions {
            quiet_outages: false,
            stop: &stop_during_action,
            baseline: None,
            actions: None,
            backoff: None,
        };
        let r = run_pass("s", &hooks, &fake, &mut db, &stopping);
        assert_eq!((r.actions_run, r.actions_failed), (1, 1));
        assert!(MetadataDb::load(&db_path).was_interrupted(&key));
        // Failing on its own (no stop): the record goes; the value B still differs from
        // the stored A, so the reference's retry runs it on the next pass anyway.
        let r = run_pass("s", &hooks, &fake, &mut db, &options);
        assert_eq!((r.actions_run, r.actions_failed), (1, 1));
        assert!(!MetadataDb::load(&db_path).was_interrupted(&key));
    }
}
