//! One processing pass over the update hooks (SPEC §14.5; HUP-DET-02, HUP-DET-03,
//! HUP-ACT-01, HUP-ACT-02).

use crate::config::Hook;
use crate::detect::{self, Decision};
use crate::state::{MetadataDb, StateValue};
use cfn_aws::cfn::Error as ApiError;
use cfn_aws::retry::Verdict;
use cfn_aws::{CloudFormation, StackResourceDetail};
use cfn_host::CommandLine;
use cfn_host::process::{self, Invocation};
use std::collections::HashMap;

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

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassReport {
    pub actions_run: usize,
    pub actions_failed: usize,
    /// The worst thing the service did (`None` when every call succeeded or no call was needed).
    pub trouble: Option<Health>,
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
/// needed to run or the action succeeded.
pub fn run_pass(
    stack: &str,
    hooks: &[Hook],
    api: &dyn Describe,
    db: &mut MetadataDb,
    options: &PassOptions<'_>,
) -> PassReport {
    let mut report = PassReport::default();
    let mut cache: HashMap<&str, Result<StackResourceDetail, ApiError>> = HashMap::new();
    for hook in hooks {
        if (options.stop)() {
            break;
        }
        let id = hook.path.logical_id.as_str();
        let described = cache.entry(id).or_insert_with(|| {
            tracing::debug!("Describing resource {id} in stack {stack}");
            api.describe(stack, id)
        });
        let detail = match described {
            Ok(detail) => detail,
            Err(error) => {
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
        let old = db.get(&key);
        let decision = detect::decide(hook, old.as_ref(), new.as_ref());
        let Some(reason) = decision.reason(hook) else {
            tracing::debug!("No change in path {} for hook {}", hook.path.text, hook.name);
            store(db, &key, new.as_ref());
            continue;
        };
        tracing::info!("{reason}");
        report.actions_run += 1;
        if run_action(hook, old.as_ref(), new.as_ref()) {
            store(db, &key, new.as_ref());
        } else {
            report.actions_failed += 1;
        }
        debug_assert!(decision != Decision::NoChange);
    }
    report
}

fn store(db: &mut MetadataDb, key: &str, value: Option<&StateValue>) {
    if let Err(e) = db.set(key, value) {
        tracing::error!("Could not save the state of {key}: {e}");
    }
}

/// Runs the action through `/bin/sh -c`, as `runas` when given (switching uid, gid,
/// groups and HOME directly instead of through `su`). True when it exited 0.
fn run_action(hook: &Hook, old: Option<&StateValue>, new: Option<&StateValue>) -> bool {
    tracing::info!("Running action for {}", hook.name);
    let user = match &hook.runas {
        None => None,
        Some(name) => match cfn_host::users::user(name) {
            Some(user) => Some(user),
            None => {
                tracing::error!(
                    "Action for {} cannot run: user {name} does not exist; will retry on next iteration",
                    hook.name
                );
                return false;
            }
        },
    };
    let env = action_environment(detect::action_env(hook, old, new));
    let command = CommandLine::Shell(hook.action.clone());
    let invocation = Invocation { command: &command, env: Some(&env), cwd: None, runas: user.as_ref() };
    match process::run(&invocation, |_| {}) {
        Ok(finished) if finished.code == 0 => {
            tracing::debug!("Action for {} output: {}", hook.name, finished.text());
            true
        }
        Ok(finished) => {
            tracing::warn!("Action for {} exited with {}; will retry on next iteration", hook.name, finished.code);
            tracing::debug!("Action for {} output: {}", hook.name, finished.text());
            false
        }
        Err(e) => {
            tracing::error!("Action for {} could not be started: {e}; will retry on next iteration", hook.name);
            false
        }
    }
}

/// An action's environment: cfn-hup's own, with each variable of `added` replacing its
/// namesake (update hooks and command hooks alike).
pub(crate) fn action_environment(added: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    for (k, v) in added {
        env.retain(|(name, _)| *name != k);
        env.push((k, v));
    }
    env
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
        let options = PassOptions { quiet_outages: false, stop: &|| false };
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
        let stop_now = PassOptions { quiet_outages: true, stop: &|| true };
        let before = fake.calls.borrow().len();
        run_pass("s", &hooks, &fake, &mut db, &stop_now);
        assert_eq!(fake.calls.borrow().len(), before, "a pending shutdown stops the pass");
    }
}
