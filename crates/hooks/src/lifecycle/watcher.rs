//! The lifecycle watcher: a task of the service, present only when a lifecycle hook is
//! configured, that polls the instance metadata items its hooks need every
//! `lifecycle-interval` seconds and hands what it finds to [`super::drain`] (Auto
//! Scaling transitions) or runs the hooks of a new notice (Spot, rebalance,
//! maintenance). Each round runs on a thread of its own; the runtime's thread only
//! waits for it and for the next poll's timer.
//!
//! Anything an item answers is tolerated: a 404 is "nothing", an error, a timeout, a
//! body that is too large or not what AWS writes is logged (the first time, then once
//! every [`COMPLAIN_EVERY`] while it lasts, and when it ends) and the polls go on.
//!
//! On SIGTERM the watcher is told to stop and ends after its current round: a drain
//! under way finishes, and its lifecycle hooks are completed, before cfn-hup exits.

use super::drain::{Drain, HEARTBEAT_FLOOR, Next};
use super::notice::{self, Notice};
use super::record::Record;
use super::sections::{self, lock};
use super::{LifecycleHook, Trigger};
use crate::offload;
use crate::service::Service;
use cfn_aws::Imds;
use cfn_aws::autoscaling::AutoScaling;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The longest pause before a transition whose AWS calls failed is looked at again.
pub const RETRY_AT_MOST: Duration = Duration::from_secs(60);

/// How often a lasting failure of one item is logged again.
pub const COMPLAIN_EVERY: Duration = Duration::from_secs(300);

/// What a round works with; replaced as a whole on reload.
#[derive(Clone)]
pub struct Setup {
    pub hooks: Vec<LifecycleHook>,
    pub service: Arc<Service>,
    /// `[main] region`, used when the metadata does not say the instance's region.
    pub region: String,
    pub every: Duration,
    /// The shortest interval between heartbeats (30 s but in tests).
    pub heartbeat_floor: Option<Duration>,
}

pub struct WatcherTask {
    stop: watch::Sender<bool>,
    setup: watch::Sender<Setup>,
    task: JoinHandle<()>,
}

impl WatcherTask {
    /// Starts the polls on the process's runtime.
    pub fn spawn(setup: Setup, imds: Arc<Imds>) -> WatcherTask {
        let (stop, stopped) = watch::channel(false);
        let (setup, current) = watch::channel(setup);
        let record = Arc::new(Mutex::new(Record::load(&super::record::default_path())));
        let watcher = Arc::new(Watcher { imds, record, state: Mutex::new(State::default()) });
        let task = cfn_aws::runtime::runtime().spawn(rounds(watcher, current, stopped));
        WatcherTask { stop, setup, task }
    }

    /// The hooks and client of a reloaded configuration, used from the next round on.
    pub fn set(&self, setup: Setup) {
        self.setup.send_replace(setup);
    }

    /// Stops the polls once the current round (a drain, say) has ended.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        if !self.task.is_finished() {
            tracing::info!("Stopping: waiting for the lifecycle hooks' current round to end");
        }
        let _ = self.task.await;
    }
}

async fn rounds(watcher: Arc<Watcher>, setup: watch::Receiver<Setup>, mut stop: watch::Receiver<bool>) {
    tracing::info!("Lifecycle watcher started");
    while !*stop.borrow() {
        let current = setup.borrow().clone();
        let every = current.every;
        let shared = watcher.clone();
        match offload::run("lifecycle-watcher", move || shared.round(&current)) {
            Ok(round) => {
                if let Err(e) = round.await {
                    tracing::error!("A round of the lifecycle watcher failed: {e}");
                }
            }
            Err(e) => tracing::error!("The lifecycle watcher cannot run a round: {e}; trying again"),
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|stopped| *stopped) => {}
        }
    }
    tracing::debug!("Lifecycle watcher stopped");
}

#[derive(Default)]
struct State {
    instance: Option<String>,
    /// Items failing now, by item and reason: when that failure was last logged.
    failing: HashMap<(&'static str, String), Instant>,
    /// Transitions left for good this run (done, or not this instance's).
    finished: Vec<Trigger>,
    /// Transitions to look at again only after a pause (an AWS call failed): when, and
    /// how many tries in a row failed.
    paused: HashMap<Trigger, (Instant, u32)>,
    region: Option<String>,
}

struct Watcher {
    imds: Arc<Imds>,
    record: Arc<Mutex<Record>>,
    state: Mutex<State>,
}

impl Watcher {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Polls `path`: its text, or `None` for 404 (then the item is fine) or a failure
    /// (logged, rate-limited). A caller that reads the text says [`Self::fine`] or
    /// [`Self::complain`] of it.
    fn poll(&self, path: &'static str) -> Option<String> {
        match self.imds.poll(path, notice::BODY_LIMIT) {
            Ok(None) => {
                self.fine(path);
                None
            }
            Ok(Some(text)) => Some(text),
            Err(e) => {
                self.complain(path, &e.to_string());
                None
            }
        }
    }

    /// `path` answered with something usable: a failure logged before is over.
    fn fine(&self, path: &'static str) {
        let mut state = self.state();
        let before = state.failing.len();
        state.failing.retain(|(p, _), _| *p != path);
        if state.failing.len() != before {
            tracing::info!("Lifecycle watcher: the instance metadata answers {path} again");
        }
    }

    /// Logs a failure of `path` the first time, then once every [`COMPLAIN_EVERY`] for
    /// as long as it fails for the same reason (a storm of 5xx is one line).
    fn complain(&self, path: &'static str, why: &str) {
        let mut state = self.state();
        let key = (path, why.to_string());
        let due = state.failing.get(&key).is_none_or(|last| last.elapsed() >= COMPLAIN_EVERY);
        if due {
            // Bounded: one entry per reason, and reasons are few (the errors' texts).
            if state.failing.len() >= 64 {
                state.failing.clear();
            }
            state.failing.insert(key, Instant::now());
            tracing::error!("Lifecycle watcher: {why}; polling goes on");
        } else {
            tracing::debug!("Lifecycle watcher: {why}");
        }
    }

    fn instance(&self) -> Option<String> {
        if let Some(id) = self.state().instance.clone() {
            return Some(id);
        }
        let id = self.poll("/latest/meta-data/instance-id")?.trim().to_string();
        let valid = id.starts_with("i-") && id.len() <= 32 && id[2..].bytes().all(|b| b.is_ascii_alphanumeric());
        if !valid {
            self.complain("/latest/meta-data/instance-id", "the instance id in the metadata is not an instance id");
            return None;
        }
        self.state().instance = Some(id.clone());
        Some(id)
    }

    /// The instance's region (from the metadata once), else the configuration's.
    fn region(&self, configured: &str) -> String {
        if let Some(region) = self.state().region.clone() {
            return region;
        }
        let found = self.poll("/latest/meta-data/placement/region").map(|r| r.trim().to_string());
        let region = found
            .filter(|r| !r.is_empty() && r.len() <= 32 && r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
            .unwrap_or_else(|| configured.to_string());
        self.state().region = Some(region.clone());
        region
    }

    fn round(&self, setup: &Setup) {
        let wanted = |t: Trigger| setup.hooks.iter().any(|h| h.has_trigger(t));
        let Some(instance) = self.instance() else { return };
        if wanted(Trigger::AsgLaunch) || wanted(Trigger::AsgTerminate) {
            self.auto_scaling(setup, &instance);
        }
        if wanted(Trigger::SpotInterruption)
            && let Some(body) = self.poll(notice::SPOT_INSTANCE_ACTION)
        {
            self.notices(setup, &instance, notice::SPOT_INSTANCE_ACTION, notice::spot(&body).map(|n| vec![n]));
        }
        if wanted(Trigger::Rebalance)
            && let Some(body) = self.poll(notice::REBALANCE)
        {
            self.notices(setup, &instance, notice::REBALANCE, notice::rebalance(&body).map(|n| vec![n]));
        }
        if wanted(Trigger::Maintenance)
            && let Some(body) = self.poll(notice::MAINTENANCE)
        {
            self.notices(setup, &instance, notice::MAINTENANCE, notice::maintenance(&body));
        }
    }

    fn auto_scaling(&self, setup: &Setup, instance: &str) {
        let Some(body) = self.poll(notice::TARGET_LIFECYCLE_STATE) else { return };
        let state = match notice::target_state(&body) {
            Ok(state) => state,
            Err(why) => return self.complain(notice::TARGET_LIFECYCLE_STATE, &why),
        };
        self.fine(notice::TARGET_LIFECYCLE_STATE);
        let trigger = match state.as_str() {
            "Terminated" => Trigger::AsgTerminate,
            // AWS writes the state being transitioned to: InService from the start of a launch.
            "InService" => Trigger::AsgLaunch,
            _ => return,
        };
        let hooks: Vec<&LifecycleHook> = setup.hooks.iter().filter(|h| h.has_trigger(trigger)).collect();
        if hooks.is_empty() || self.state().finished.contains(&trigger) {
            return;
        }
        if self.state().paused.get(&trigger).is_some_and(|(until, _)| Instant::now() < *until) {
            return;
        }
        let region = self.region(&setup.region);
        let service = setup.service.clone();
        let client = move || -> Result<AutoScaling, String> { service.autoscaling(&region).map_err(|e| e.to_string()) };
        let drain = Drain {
            imds: &self.imds,
            client: &client,
            instance,
            record: &self.record,
            heartbeat_floor: setup.heartbeat_floor.unwrap_or(HEARTBEAT_FLOOR),
        };
        let next = drain.transition(trigger, &hooks);
        let mut state = self.state();
        match next {
            Next::Done => {
                state.finished.push(trigger);
                state.paused.remove(&trigger);
            }
            Next::Retry => {
                // A failing call (no permission, an outage) is tried again at once the
                // first time, then at most every minute: the log gets a line a minute,
                // and a transition that can still be completed soon is not missed.
                let failed = state.paused.get(&trigger).map_or(0, |(_, n)| *n) + 1;
                let pause = (setup.every * 2u32.saturating_pow(failed.saturating_sub(1).min(16))).min(RETRY_AT_MOST);
                state.paused.insert(trigger, (Instant::now() + pause, failed));
            }
        }
    }

    /// Runs the hooks of each notice not handled before.
    fn notices(&self, setup: &Setup, instance: &str, path: &'static str, found: Result<Vec<Notice>, String>) {
        let notices = match found {
            Ok(notices) => notices,
            Err(why) => return self.complain(path, &why),
        };
        self.fine(path);
        for notice in notices {
            if lock(&self.record).notices.get(&notice.id).is_some_and(|h| h.done) {
                continue;
            }
            let hooks: Vec<&LifecycleHook> = setup.hooks.iter().filter(|h| h.has_trigger(notice.trigger)).collect();
            tracing::info!("New {} notice {}: running its hooks", notice.trigger.name(), &notice.id[..12]);
            {
                let mut guard = lock(&self.record);
                let entry = guard.notices.entry(notice.id.clone()).or_default();
                if entry.first_seen.is_empty() {
                    entry.first_seen = crate::activity::now();
                    entry.trigger = notice.trigger.name().to_string();
                }
                guard.save();
            }
            let mut env = vec![
                ("CFN_LIFECYCLE_EVENT".to_string(), notice.trigger.name().to_string()),
                ("CFN_INSTANCE_ID".to_string(), instance.to_string()),
                ("CFN_EVENT".to_string(), notice.json.clone()),
            ];
            if let Some(time) = &notice.time {
                env.push(("CFN_EVENT_TIME".to_string(), time.clone()));
            }
            if let Some(deadline) = &notice.deadline {
                env.push(("CFN_LIFECYCLE_DEADLINE".to_string(), deadline.clone()));
            }
            let id = notice.id.clone();
            let locate = sections::locator(move |r: &mut Record| r.notices.entry(id.clone()).or_default());
            sections::run(&self.record, &locate, &hooks, &env, &|hook: &LifecycleHook| hook.timeout);
            let mut guard = lock(&self.record);
            if let Some(entry) = guard.notices.get_mut(&notice.id) {
                entry.done = true;
            }
            guard.save();
        }
    }
}
