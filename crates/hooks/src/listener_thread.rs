//! The command listener as part of the service (SPEC §14.6 step 7): rounds back to back
//! on a thread of its own, so that a 20 s long poll or a running command never delays
//! the update hooks. The service can replace the command hooks (SIGHUP reload) and stop
//! the thread; SIGTERM stops it too.

use crate::config::CommandHook;
use crate::listener::{Listener, Round};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Control {
    stop: AtomicBool,
    hooks: Mutex<Arc<Vec<CommandHook>>>,
}

pub struct ListenerThread {
    control: Arc<Control>,
    done: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl ListenerThread {
    /// Starts the rounds. `terminating` is the service's SIGTERM flag. `None` (logged)
    /// when no thread can be had: the update hooks keep running without the listener.
    pub fn spawn(mut listener: Listener, hooks: Vec<CommandHook>, terminating: fn() -> bool) -> Option<ListenerThread> {
        let control = Arc::new(Control { stop: AtomicBool::new(false), hooks: Mutex::new(Arc::new(hooks)) });
        let (tell_done, done) = mpsc::channel();
        let shared = control.clone();
        let stopping = move || shared.stop.load(Ordering::SeqCst) || terminating();
        let shared = control.clone();
        let thread = std::thread::Builder::new().name("command-listener".into()).spawn(move || {
            tracing::info!("Command listener {} started", listener.listener_id());
            while !stopping() {
                let hooks = shared.hooks.lock().unwrap_or_else(|e| e.into_inner()).clone();
                match listener.round(&hooks) {
                    Ok(Round::Backoff(pause)) => sleep_unless(pause, &stopping),
                    Ok(Round::Idle | Round::Handled) => {}
                    Err(e) => {
                        tracing::error!("{e}; the command listener stops (update hooks keep running)");
                        break;
                    }
                }
            }
            tracing::debug!("Command listener stopped");
            let _ = tell_done.send(());
        });
        match thread {
            Ok(thread) => Some(ListenerThread { control, done, thread: Some(thread) }),
            Err(e) => {
                tracing::error!("Could not start the command listener: {e}; command hooks will not run");
                None
            }
        }
    }

    /// The command hooks of a reloaded configuration, used from the next round on.
    pub fn set_hooks(&self, hooks: Vec<CommandHook>) {
        *self.control.hooks.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(hooks);
    }

    /// Asks the thread to stop and waits up to `grace` for it. A thread still inside a
    /// long poll or an action is left to end with the process (a running action is not
    /// killed, as in the reference).
    pub fn stop(mut self, grace: Duration) {
        self.control.stop.store(true, Ordering::SeqCst);
        match self.done.recv_timeout(grace) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                if let Some(thread) = self.thread.take() {
                    let _ = thread.join();
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                tracing::debug!("The command listener is still busy; not waiting for it");
            }
        }
    }
}

fn sleep_unless(pause: Duration, stopping: &dyn Fn() -> bool) {
    let deadline = Instant::now() + pause;
    while !stopping() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}
