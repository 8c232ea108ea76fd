//! The command listener as a task of the service (SPEC §14.6 step 7): rounds back to
//! back, each on a thread of its own (its AWS calls and actions block), so that a 20 s
//! long poll or a running command never delays the update hooks. The service can
//! replace the command hooks (SIGHUP reload) and stop the task; a stop gives the current
//! round a moment to end (its running action is stopped by the service, which runs
//! every action as a process group it can signal).

use crate::config::CommandHook;
use crate::listener::{self, Listener, Round};
use crate::offload;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub struct ListenerTask {
    stop: watch::Sender<bool>,
    hooks: watch::Sender<Arc<Vec<CommandHook>>>,
    task: JoinHandle<()>,
}

impl ListenerTask {
    /// Starts the rounds on the process's runtime.
    pub fn spawn(listener: Listener, hooks: Vec<CommandHook>) -> ListenerTask {
        ListenerTask::spawn_after(listener, hooks, None)
    }

    /// Replaces this listener by `listener` (a reload changed `[main]`). This one is told
    /// to stop and ends after its current round; the new one starts its rounds only
    /// then, with `commands_run.json` as this one left it (issue 13, item 14): two
    /// listeners never run side by side, so they never write the file over each other
    /// or run one command twice. The service is not held up meanwhile.
    pub fn replace(self, listener: Listener, hooks: Vec<CommandHook>) -> ListenerTask {
        self.stop.send_replace(true);
        ListenerTask::spawn_after(listener, hooks, Some(self.task))
    }

    /// Starts the rounds once `previous` (a listener told to stop) has ended.
    pub fn spawn_after(listener: Listener, hooks: Vec<CommandHook>, previous: Option<JoinHandle<()>>) -> ListenerTask {
        let (stop, stopped) = watch::channel(false);
        let (hooks, current) = watch::channel(Arc::new(hooks));
        let task = cfn_aws::runtime::runtime().spawn(async move {
            if let Some(previous) = previous {
                tracing::debug!("Waiting for the previous command listener to end its round");
                let _ = previous.await;
                let mut listener = listener;
                listener.reload_commands_run();
                rounds(listener, current, stopped).await
            } else {
                rounds(listener, current, stopped).await
            }
        });
        ListenerTask { stop, hooks, task }
    }

    /// The command hooks of a reloaded configuration, used for the next message (even
    /// one that the current long poll returns).
    pub fn set_hooks(&self, hooks: Vec<CommandHook>) {
        self.hooks.send_replace(Arc::new(hooks));
    }

    /// Whether the rounds have ended by themselves (a terminal registration failure; a
    /// replacing listener counts as running while it waits for the one it replaces).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Lets the current round end without waiting for it (no command hook is left). The
    /// task is handed back so that a later listener can start after it.
    pub fn abandon(self) -> JoinHandle<()> {
        self.stop.send_replace(true);
        self.task
    }

    /// Stops the rounds and waits up to `grace` for the current one. A round still
    /// inside a long poll or an action is left to end with the process.
    pub async fn stop(self, grace: Duration) {
        self.stop.send_replace(true);
        if tokio::time::timeout(grace, self.task).await.is_err() {
            tracing::debug!("The command listener is still busy; not waiting for it");
        }
    }
}

async fn rounds(listener: Listener, hooks: watch::Receiver<Arc<Vec<CommandHook>>>, mut stop: watch::Receiver<bool>) {
    tracing::info!("Command listener {} started", listener.listener_id());
    // Shared with the round's thread, so that a round that cannot get a thread keeps it.
    let listener = Arc::new(Mutex::new(listener));
    let mut no_thread = false;
    while !*stop.borrow() {
        let (shared, hooks) = (listener.clone(), hooks.clone());
        let round = offload::run("command-listener", move || {
            shared.lock().unwrap_or_else(|e| e.into_inner()).round(&|| hooks.borrow().clone())
        });
        let pause = match round {
            Ok(round) => {
                no_thread = false;
                match round.await {
                    Ok(Ok(Round::Backoff(pause))) => pause,
                    Ok(Ok(Round::Idle | Round::Handled)) => Duration::ZERO,
                    Ok(Err(e)) => {
                        tracing::error!("{e}; the command listener stops (update hooks keep running)");
                        break;
                    }
                    Err(e) => {
                        tracing::error!("A round of the command listener failed: {e}");
                        listener::BACKOFF
                    }
                }
            }
            Err(e) => {
                // Logged once per stretch: the daemon and its update hooks keep running.
                if no_thread {
                    tracing::debug!("The command listener still cannot run: {e}");
                } else {
                    tracing::error!("The command listener cannot run: {e}; trying again every 20 s");
                }
                no_thread = true;
                listener::BACKOFF
            }
        };
        if !pause.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.wait_for(|stopped| *stopped) => {}
            }
        }
    }
    tracing::debug!("Command listener stopped");
}
