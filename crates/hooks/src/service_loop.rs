//! cfn-hup's service (SPEC §14.6; HUP-RUN-01..07): `--no-daemon`'s single pass, and the
//! service as tasks on the process's one current-thread runtime — update passes on a
//! jittered fixed cadence, the command listener's rounds, SIGHUP reload and SIGTERM.
//!
//! The runtime's thread only waits: for the next pass's timer, for a signal, for a pass
//! or a round to end. Passes and rounds block (AWS calls, actions) and run on threads of
//! their own ([`crate::offload`]). Nothing wakes up while the service is idle.
//!
//! Every action of the service runs as a process group of its own, registered while it
//! runs; SIGTERM stops the running ones (SIGTERM to the group, SIGKILL after a grace
//! period) so that cfn-hup stops within seconds even during a long action.
//!
//! The daemon forks before anything here builds the runtime: [`prepare`] (credentials,
//! the listener id) and [`start`] run in the daemon, and report their errors to the
//! waiting launcher.

use crate::activity;
use crate::backoff::Backoff;
use crate::baseline::InitBaseline;
use crate::config::{self, ConfigError, HupConfig, MainConfig};
use crate::daemon::{self, DaemonError, PidFile, Schedule};
use crate::lifecycle::watcher::{Setup, WatcherTask};
use crate::listener::{self, Listener, ListenerError, ListenerOptions};
use crate::listener_task::ListenerTask;
use crate::offload;
use crate::readiness;
use crate::service::Service;
use crate::shutdown;
use crate::signals::{Request, Signals};
use crate::{Health, MetadataDb, PassOptions, PassReport, run_pass};
use cfn_aws::Imds;
use cfn_aws::credentials::CredentialError;
use cfn_aws::retry::Policy;
use cfn_host::process_groups::ProcessGroups;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long SIGTERM waits for the command listener to finish its round.
const LISTENER_GRACE: Duration = Duration::from_secs(1);
/// How long a running action has between SIGTERM and SIGKILL (issue 13, item 12):
/// time for a well-behaved action to clean up (a temporary file, a lock, a half-done
/// restart), while cfn-hup still stops within seconds — well before systemd's stop
/// timeout (90 s in `dist/cfn-hup.service`) or the SysV script's 60 s, and before the
/// 10 s that `docker stop` allows, so that cfn-hup's own kill and its log line come first.
const ACTION_GRACE: Duration = Duration::from_secs(5);
/// How long SIGKILL waits for the killed actions to be gone.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long SIGTERM waits for a stopped pass once its actions are gone (an AWS call or
/// saving the state); after that cfn-hup stops without it.
const PASS_WAIT: Duration = Duration::from_secs(2);
/// How often the stop looks whether the actions are gone (only while stopping).
const STOP_POLL: Duration = Duration::from_millis(20);

/// The running actions of the service's passes and command listener: process groups of
/// their own, so that SIGTERM reaches each action and what it started.
static ACTIONS: ProcessGroups = ProcessGroups::new();
/// HUP-RUN-07: "cfn-hup processing is alive." at most this often.
const ALIVE_EVERY: Duration = Duration::from_secs(300);
/// Longest interval honoured (a year); the shortest test interval is 50 ms.
const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);
const MIN_TEST_INTERVAL: Duration = Duration::from_millis(50);

/// Within a service pass: three tries (the next pass is a retry too), throttling
/// included — a throttled pass makes the schedule leave out polls instead; sleeps end
/// early on SIGTERM.
pub const SERVICE_RETRY: Policy = Policy { max_tries: 3, throttled_budget: Duration::ZERO, sleep: shutdown::sleep };
/// The listener's SQS retries in the service: SendMessage's 25 tries, with sleeps that
/// end early on SIGTERM.
const SERVICE_SQS_RETRY: Policy = Policy { sleep: shutdown::sleep, ..Policy::SQS_SEND };

/// What the command line and its environment decide beside the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The interval instead of the configuration's minutes (a test aid; kept within
    /// 50 ms and a year).
    pub interval_override: Option<Duration>,
    /// The listener's long poll, at most 20 s (shorter only as a test aid).
    pub receive_wait_seconds: u32,
    /// The bound on each attempt of the service's AWS calls instead of 60 s (a test aid,
    /// so that a time-compressed run meets timeouts too).
    pub attempt_timeout: Option<Duration>,
    /// The shortest interval between lifecycle heartbeats instead of 30 s (a test aid,
    /// so that a drain longer than a short heartbeat timeout is kept alive).
    pub heartbeat_floor: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            interval_override: None,
            receive_wait_seconds: listener::RECEIVE_WAIT_SECONDS,
            attempt_timeout: None,
            heartbeat_floor: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Credentials(#[from] CredentialError),
    #[error(transparent)]
    Listener(#[from] ListenerError),
    #[error(transparent)]
    Daemon(#[from] DaemonError),
}

/// The time between passes.
pub fn interval(config: &HupConfig, settings: &Settings) -> Result<Duration, ConfigError> {
    let minutes = config.main.interval_minutes()?;
    if let Some(seconds) = settings.interval_override {
        return Ok(seconds.clamp(MIN_TEST_INTERVAL, MAX_INTERVAL));
    }
    Ok(Duration::from_secs(minutes.saturating_mul(60)).min(MAX_INTERVAL))
}

/// The longest wait between two tries of an action that keeps failing (`max-backoff`).
pub fn max_backoff(config: &HupConfig) -> Result<Duration, ConfigError> {
    Ok(Duration::from_secs(config.main.max_backoff_minutes()?.saturating_mul(60)).min(MAX_INTERVAL))
}

/// A client of the service (the passes' or the listener's): the service's retries,
/// and the attempt timeout of the settings.
fn service_client(main: &MainConfig, imds: &Arc<Imds>, settings: &Settings) -> Result<Service, CredentialError> {
    let service = Service::new(main, imds.clone())?.with_retry(SERVICE_RETRY);
    Ok(match settings.attempt_timeout {
        Some(limit) => service.with_attempt_timeout(limit),
        None => service,
    })
}

/// The service's umask, checked before cfn-hup detaches (an invalid one stops it);
/// [`log_umask`] says which one is used.
pub fn umask(config: &HupConfig) -> Result<u32, ConfigError> {
    Ok(config.main.umask()?.unwrap_or(config::DEFAULT_UMASK))
}

/// The reference's line for the service's umask, logged once the client and the state
/// directory are made, where the reference logs it (SPEC §14.6: after the configuration).
fn log_umask(config: &HupConfig) {
    match config.main.umask() {
        Ok(Some(umask)) => tracing::info!("Setting umask value to: {umask:03o}"),
        Ok(None) => tracing::info!("No umask value specified in config file. Using the default one: 022"),
        Err(_) => {} // refused before cfn-hup detached (`umask`)
    }
}

/// The listener id (SPEC §14.7), settled before any pass; `None` without command hooks.
fn listener_id(main: &MainConfig, command_hooks: bool, imds: &Imds) -> Result<Option<String>, ListenerError> {
    if command_hooks { listener::listener_id(main, imds).map(Some) } else { Ok(None) }
}

fn listener_options(
    receive_wait_seconds: u32,
    sqs_retry: Policy,
    actions: Option<&'static ProcessGroups>,
) -> ListenerOptions {
    ListenerOptions {
        receive_wait_seconds: receive_wait_seconds.min(listener::RECEIVE_WAIT_SECONDS),
        sqs_retry,
        actions,
    }
}

/// `--no-daemon` (HUP-RUN-01): one pass with the reference's retries and error lines,
/// then one round of the command listener. `configured` is called once the client and
/// the state file are made, where the reference's configuration step ends.
pub fn once(
    config: &HupConfig,
    imds: Arc<Imds>,
    settings: &Settings,
    configured: impl FnOnce(),
) -> Result<(), ServiceError> {
    let listener_id = listener_id(&config.main, !config.command_hooks.is_empty(), &imds)?;
    if !config.lifecycle_hooks.is_empty() {
        tracing::info!("Lifecycle hooks run only in the service (daemon or --foreground); --no-daemon leaves them out");
    }
    let service = Service::new(&config.main, imds)?;
    create_state(config);
    configured();
    let client = service.client()?;
    let mut db = MetadataDb::load(&MetadataDb::default_path());
    let baseline = InitBaseline::new(&config.main.stack, &config.main.region);
    let report = run_pass(
        &config.main.stack,
        &config.hooks,
        &client,
        &mut db,
        &PassOptions { quiet_outages: false, stop: &|| false, baseline: Some(&baseline), actions: None, backoff: None },
    );
    if !config.hooks.is_empty() {
        activity::record(&activity::default_path(), &report);
    }
    if let Some(id) = listener_id {
        let options = listener_options(settings.receive_wait_seconds, Policy::SQS_SEND, None);
        let hooks = Arc::new(config.command_hooks.clone());
        Listener::new(&config.main, id, service, options).round(&|| hooks.clone())?;
    }
    Ok(())
}

/// The update hooks' state file, made empty before the first pass as the reference
/// does (STATE-04).
fn create_state(config: &HupConfig) {
    if !config.hooks.is_empty() {
        create_state_file();
    }
}

/// `data/` and an empty `metadata_db.json` (STATE-04). Also made when an update hook's
/// path is unsupported, before cfn-hup stops: the reference made them before its first
/// pass met the path (HUP-PATH-01). A failure is reported; the passes try again when
/// they store.
pub fn create_state_file() {
    if let Err(e) = MetadataDb::create(&MetadataDb::default_path()) {
        tracing::warn!("{e}");
    }
}

/// The service, ready to run: credentials resolved, the listener made (not started).
pub struct Prepared {
    config: HupConfig,
    every: Duration,
    max_backoff: Duration,
    service: Service,
    listener: Option<Listener>,
    imds: Arc<Imds>,
    settings: Settings,
}

/// Everything that can fail before the service runs and needs no runtime: the
/// interval, the listener id, credentials. `configured` as for [`once`].
pub fn prepare(
    config: HupConfig,
    imds: Arc<Imds>,
    settings: Settings,
    configured: impl FnOnce(),
) -> Result<Prepared, ServiceError> {
    let listener_id = listener_id(&config.main, !config.command_hooks.is_empty(), &imds)?;
    let every = interval(&config, &settings)?;
    let max_backoff = max_backoff(&config)?;
    config.main.lifecycle_interval()?;
    let service = service_client(&config.main, &imds, &settings)?;
    create_state(&config);
    log_umask(&config);
    configured();
    // The listener's own client: its rounds and the passes run side by side.
    let listener = match listener_id {
        None => None,
        Some(id) => {
            let service = service_client(&config.main, &imds, &settings)?;
            let options = listener_options(settings.receive_wait_seconds, SERVICE_SQS_RETRY, Some(&ACTIONS));
            Some(Listener::new(&config.main, id, service, options))
        }
    };
    Ok(Prepared { config, every, max_backoff, service, listener, imds, settings })
}

/// A service holding its pid file and its signals, ready to [`run`](Started::run).
pub struct Started {
    prepared: Prepared,
    pid_file: PidFile,
    signals: Signals,
}

/// Takes the pid file (HUP-RUN-02, STATE-06) and the signals. From here on SIGTERM no
/// longer kills the process outright: it stops the service, which removes the pid file.
pub fn start(prepared: Prepared, pid_path: &Path) -> Result<Started, ServiceError> {
    let pid_file = PidFile::acquire(pid_path)?;
    let signals = Signals::install()?;
    Ok(Started { prepared, pid_file, signals })
}

impl Started {
    /// Runs until SIGTERM or SIGINT. `on_reload` is told the `[main]` of each reloaded
    /// configuration (the caller's log level follows its `verbose`).
    pub fn run(self, on_reload: Box<dyn Fn(&MainConfig)>) {
        let Started { prepared, pid_file, signals } = self;
        let Prepared { config, every, max_backoff, service, listener, imds, settings } = prepared;
        // Taken after the reading: a file changed since is one this process has not read.
        activity::record_config_read(&activity::default_path(), chrono::Utc::now());
        let listener = listener.map(|l| ListenerTask::spawn(l, config.command_hooks.clone()));
        let service = Arc::new(service);
        let watcher =
            lifecycle_setup(&config, &service, &settings).map(|setup| WatcherTask::spawn(setup, imds.clone()));
        // The back-off a previous run left goes on (logged per hook): a restart does not
        // run every failing action at once.
        let mut backoff = Backoff::new(every, max_backoff);
        let recorded = activity::load(&activity::default_path()).map(|a| a.failing_hooks).unwrap_or_default();
        backoff.resume(recorded, chrono::Utc::now());
        let running = Running {
            config: Arc::new(config),
            every,
            service,
            listener,
            watcher,
            retiring: None,
            imds,
            settings,
            db: Arc::new(Mutex::new(MetadataDb::load(&MetadataDb::default_path()))),
            backoff: Arc::new(Mutex::new(backoff)),
            on_reload,
        };
        cfn_aws::runtime::block_on(running.serve(signals));
        drop(pid_file);
    }
}

/// A pass running on its thread, awaited.
type PendingPass = Pin<Box<dyn Future<Output = Result<PassReport, offload::OffloadError>> + Send>>;

/// Stops the running actions (issue 13, item 12): SIGTERM to each action's process
/// group, SIGKILL to those still running after [`ACTION_GRACE`]. From here on no action
/// starts. Each step is logged; an action that outlives even SIGKILL's wait (its output
/// held open by a process that left its group) is logged and left behind.
async fn stop_actions() {
    for action in ACTIONS.signal_all(rustix::process::Signal::TERM) {
        tracing::info!("Stopping: terminating the action for {} (pid {})", action.label, action.pid);
    }
    if actions_gone_within(ACTION_GRACE).await {
        return;
    }
    for action in ACTIONS.signal_all(rustix::process::Signal::KILL) {
        tracing::warn!(
            "Stopping: the action for {} (pid {}) is still running {} s after SIGTERM; killing it",
            action.label,
            action.pid,
            ACTION_GRACE.as_secs()
        );
    }
    if actions_gone_within(KILL_WAIT).await {
        return;
    }
    for action in ACTIONS.running() {
        tracing::warn!(
            "Stopping: the action for {} (pid {}) has not ended; cfn-hup stops without waiting for it",
            action.label,
            action.pid
        );
    }
}

/// Whether every action has ended within `limit` (looked at every [`STOP_POLL`]: only
/// while stopping, and for a few seconds at most).
async fn actions_gone_within(limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while !ACTIONS.is_empty() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(STOP_POLL).await;
    }
    true
}

/// The lifecycle watcher's setup for `config`; `None` without lifecycle hooks.
fn lifecycle_setup(config: &HupConfig, service: &Arc<Service>, settings: &Settings) -> Option<Setup> {
    if config.lifecycle_hooks.is_empty() {
        return None;
    }
    Some(Setup {
        hooks: config.lifecycle_hooks.clone(),
        service: service.clone(),
        region: config.main.region.clone(),
        // Checked when the configuration was loaded.
        every: config
            .main
            .lifecycle_interval()
            .unwrap_or(Duration::from_secs(config::DEFAULT_LIFECYCLE_INTERVAL_SECONDS)),
        heartbeat_floor: settings.heartbeat_floor,
    })
}

struct Running {
    config: Arc<HupConfig>,
    every: Duration,
    service: Arc<Service>,
    listener: Option<ListenerTask>,
    /// Polls the instance metadata for the lifecycle hooks, when there are any.
    watcher: Option<WatcherTask>,
    /// A listener told to stop when its command hooks went, possibly still in its last
    /// round: a listener for hooks that come back starts after it.
    retiring: Option<tokio::task::JoinHandle<()>>,
    imds: Arc<Imds>,
    settings: Settings,
    /// Shared with the pass that is running, if any.
    db: Arc<Mutex<MetadataDb>>,
    /// The failing actions' back-off, shared with the pass that is running, if any.
    backoff: Arc<Mutex<Backoff>>,
    on_reload: Box<dyn Fn(&MainConfig)>,
}

fn same_kind(a: &Health, b: &Health) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn log_health_change(now: &Health) {
    match now {
        Health::Ok => tracing::info!("CloudFormation answers again; polling as usual"),
        Health::Unavailable(why) => tracing::error!(
            "CloudFormation is not available: {why}; cfn-hup keeps polling and logs again when this changes"
        ),
        Health::Throttled(why) => {
            tracing::warn!("CloudFormation is throttling requests: {why}; polling less often until it stops")
        }
    }
}

/// One pass over the update hooks, on the thread it was given.
fn update_pass(config: &HupConfig, service: &Service, db: &mut MetadataDb, backoff: &Mutex<Backoff>) -> PassReport {
    let report = match service.client() {
        Ok(client) => run_pass(
            &config.main.stack,
            &config.hooks,
            &client,
            db,
            &PassOptions {
                quiet_outages: true,
                stop: &shutdown::requested,
                baseline: Some(&InitBaseline::new(&config.main.stack, &config.main.region)),
                actions: Some(&ACTIONS),
                backoff: Some(backoff),
            },
        ),
        Err(e) => PassReport {
            last_error: Some(e.to_string()),
            trouble: Some(Health::Unavailable(e.to_string())),
            ..Default::default()
        },
    };
    activity::record(&activity::default_path(), &report);
    report
}

/// What a reload prepared, applied only when all of it worked.
struct Reloaded {
    config: HupConfig,
    every: Duration,
    max_backoff: Duration,
    umask: u32,
    /// A new client when `[main]` changed.
    service: Option<Service>,
    /// A new listener when command hooks appeared or `[main]` changed.
    listener: Option<Listener>,
}

/// Reads the configuration directory again and makes what a changed one needs.
fn load_again(
    dir: &Path,
    current: &MainConfig,
    live_listener: bool,
    imds: &Arc<Imds>,
    settings: &Settings,
) -> Result<Reloaded, ServiceError> {
    let config = config::load(dir)?;
    let every = interval(&config, settings)?;
    let max_backoff = max_backoff(&config)?;
    config.main.lifecycle_interval()?;
    let umask = config.main.umask()?.unwrap_or(config::DEFAULT_UMASK);
    let service = if config.main == *current { None } else { Some(service_client(&config.main, imds, settings)?) };
    let listener = if config.command_hooks.is_empty() || (config.main == *current && live_listener) {
        None
    } else {
        let id = listener::listener_id(&config.main, imds)?;
        let service = service_client(&config.main, imds, settings)?;
        let options = listener_options(settings.receive_wait_seconds, SERVICE_SQS_RETRY, Some(&ACTIONS));
        Some(Listener::new(&config.main, id, service, options))
    };
    Ok(Reloaded { config, every, max_backoff, umask, service, listener })
}

impl Running {
    async fn serve(mut self, mut signals: Signals) {
        tracing::info!(
            "cfn-hup started (pid {}): {} hook(s) on stack {}, checked every {} seconds",
            std::process::id(),
            self.config.hooks.len(),
            self.config.main.stack,
            self.every.as_secs_f64()
        );
        // Configuration loaded, first pass due now: `systemctl start` may return.
        readiness::notify(readiness::READY);
        let mut health = Health::Ok;
        let mut last_alive: Option<Instant> = None;
        // A pass that SIGTERM interrupted, still ending.
        let mut stopping_pass = None;
        'passes: loop {
            let mut schedule = Schedule::new(self.every, Instant::now());
            loop {
                if last_alive.is_none_or(|t| t.elapsed() >= ALIVE_EVERY) {
                    tracing::info!("cfn-hup processing is alive.");
                    last_alive = Some(Instant::now());
                }
                let report = match self.pass(&mut signals).await {
                    Ok(report) => report,
                    Err(stopped) => {
                        stopping_pass = Some(stopped);
                        break 'passes;
                    }
                };
                let now_health = report.health();
                if !same_kind(&now_health, &health) {
                    log_health_change(&now_health);
                }
                let wait = schedule.next_wait(Instant::now(), matches!(now_health, Health::Throttled(_)));
                health = now_health;
                tracing::debug!("Next pass in {:.3} s", wait.as_secs_f64());
                let due = tokio::time::Instant::now() + wait;
                loop {
                    tokio::select! {
                        request = signals.next() => match request {
                            Request::Stop => break 'passes,
                            // A reloaded configuration gets a pass at once, and a new cadence.
                            Request::Reload => if self.reload().await { continue 'passes },
                        },
                        () = tokio::time::sleep_until(due) => break,
                    }
                }
            }
        }
        shutdown::request();
        readiness::notify(readiness::STOPPING);
        tracing::info!("Shutting down cfn-hup");
        stop_actions().await;
        // A drain under way is finished, and its lifecycle hooks completed, first.
        if let Some(watcher) = self.watcher.take() {
            watcher.stop().await;
        }
        if let Some(pass) = stopping_pass
            && tokio::time::timeout(PASS_WAIT, pass).await.is_err()
        {
            tracing::warn!("Stopping: the interrupted pass has not ended; cfn-hup stops without waiting for it");
        }
        if let Some(listener) = self.listener.take() {
            listener.stop(LISTENER_GRACE).await;
        }
    }

    /// A pass on a thread of its own. SIGTERM meanwhile stops it before its next hook
    /// (`Err`: the service stops, and the pass, still ending, is handed back; its
    /// running action is then stopped).
    async fn pass(&self, signals: &mut Signals) -> Result<PassReport, PendingPass> {
        if self.config.hooks.is_empty() {
            return Ok(PassReport::default());
        }
        let (config, service, db) = (self.config.clone(), self.service.clone(), self.db.clone());
        let backoff = self.backoff.clone();
        let work = offload::run("update-pass", move || {
            update_pass(&config, &service, &mut db.lock().unwrap_or_else(|e| e.into_inner()), &backoff)
        });
        let work = match work {
            Ok(work) => work,
            Err(e) => {
                tracing::error!("Could not run a pass: {e}; trying again at the next one");
                return Ok(PassReport::default());
            }
        };
        let mut work: PendingPass = Box::pin(work);
        let done = tokio::select! {
            done = &mut work => done,
            () = signals.stop() => {
                shutdown::request();
                tracing::info!("Stop requested: cfn-hup stops once the running pass ends");
                return Err(work);
            }
        };
        Ok(done.unwrap_or_else(|e| {
            tracing::error!("A pass failed: {e}");
            PassReport::default()
        }))
    }

    /// SIGHUP (HUP-RUN-06): read the configuration directory again; a configuration that
    /// does not load leaves the running one in place.
    async fn reload(&mut self) -> bool {
        let dir = self.config.dir.clone();
        tracing::info!("Received SIGHUP: reloading the configuration from {}", dir.display());
        readiness::notify(readiness::RELOADING);
        let reloaded = self.read_again(dir).await;
        readiness::notify(readiness::READY);
        reloaded
    }

    /// The reload's work: the new configuration in place, or the running one kept.
    async fn read_again(&mut self, dir: PathBuf) -> bool {
        let current = self.config.main.clone();
        let live_listener = self.listener.as_ref().is_some_and(|l| !l.is_finished());
        let (imds, settings) = (self.imds.clone(), self.settings.clone());
        let outcome = match offload::run("reload", move || load_again(&dir, &current, live_listener, &imds, &settings))
        {
            Ok(work) => work.await.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string())),
            Err(e) => Err(e.to_string()),
        };
        let reloaded = match outcome {
            Ok(reloaded) => reloaded,
            Err(e) => {
                tracing::error!("Could not reload the configuration: Error: {e}; keeping the previous one");
                return false;
            }
        };
        let Reloaded { config, every, max_backoff, umask, service, listener } = reloaded;
        activity::record_config_read(&activity::default_path(), chrono::Utc::now());
        self.backoff.lock().unwrap_or_else(|e| e.into_inner()).configure(every, max_backoff);
        if let Some(service) = service {
            self.service = Arc::new(service);
        }
        self.replace_listener(listener, &config);
        match (lifecycle_setup(&config, &self.service, &self.settings), self.watcher.take()) {
            (Some(setup), Some(watcher)) => {
                watcher.set(setup);
                self.watcher = Some(watcher);
            }
            (Some(setup), None) => self.watcher = Some(WatcherTask::spawn(setup, self.imds.clone())),
            (None, Some(watcher)) => watcher.stop().await,
            (None, None) => {}
        }
        daemon::set_umask(umask);
        (self.on_reload)(&config.main);
        tracing::info!("Configuration reloaded: {} hook(s) on stack {}", config.hooks.len(), config.main.stack);
        self.config = Arc::new(config);
        self.every = every;
        true
    }

    /// Hands the reloaded command hooks to the running listener, or replaces it (`new`
    /// listener), or stops it when no command hook is left. A replaced listener ends
    /// after its current round and its successor starts only then (one listener at a
    /// time); the service does not wait for it.
    fn replace_listener(&mut self, new: Option<Listener>, config: &HupConfig) {
        match (new, self.listener.take()) {
            (Some(listener), Some(old)) => {
                self.listener = Some(old.replace(listener, config.command_hooks.clone()));
            }
            (Some(listener), None) => {
                let previous = self.retiring.take();
                self.listener = Some(ListenerTask::spawn_after(listener, config.command_hooks.clone(), previous));
            }
            (None, Some(old)) if config.command_hooks.is_empty() => self.retiring = Some(old.abandon()),
            (None, Some(old)) => {
                old.set_hooks(config.command_hooks.clone());
                self.listener = Some(old);
            }
            (None, None) => {}
        }
    }
}
