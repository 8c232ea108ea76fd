//! SIGTERM/SIGINT (stop) and SIGHUP (reload) as streams of the runtime
//! (`tokio::signal::unix`): the service waits for them beside its timers, so nothing
//! polls while it is idle; a stop that arrives during a pass ends it before its next
//! hook, and the service stops the pass's running action.

use crate::daemon::DaemonError;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// What a signal asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Stop,
    Reload,
}

pub struct Signals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
}

impl Signals {
    /// Installs the handlers on the process's runtime (which this builds: call it after
    /// the fork). From here on, the signals no longer end the process by themselves.
    pub fn install() -> Result<Signals, DaemonError> {
        let _context = cfn_aws::runtime::runtime().enter();
        let stream =
            |kind| signal(kind).map_err(|source| DaemonError::System { what: "install signal handlers", source });
        Ok(Signals {
            terminate: stream(SignalKind::terminate())?,
            interrupt: stream(SignalKind::interrupt())?,
            hangup: stream(SignalKind::hangup())?,
        })
    }

    /// The next SIGTERM or SIGINT; a SIGHUP meanwhile stays pending.
    pub async fn stop(&mut self) {
        tokio::select! {
            Some(()) = self.terminate.recv() => {}
            Some(()) = self.interrupt.recv() => {}
            // Only if the runtime's signal driver were gone: then no signal comes.
            else => std::future::pending().await,
        }
    }

    /// The next signal; stopping wins over reloading when both are pending.
    pub async fn next(&mut self) -> Request {
        tokio::select! {
            biased;
            Some(()) = self.terminate.recv() => Request::Stop,
            Some(()) = self.interrupt.recv() => Request::Stop,
            Some(()) = self.hangup.recv() => Request::Reload,
            else => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_signal_is_kept_until_asked_for_and_reported_once() {
        let mut signals = Signals::install().unwrap();
        cfn_aws::runtime::block_on(async {
            let quiet = tokio::time::timeout(Duration::from_millis(50), signals.next()).await;
            assert!(quiet.is_err(), "no signal yet");
            // SIGHUP to ourselves, which the handler turns into a reload request.
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::HUP).unwrap();
            // Waiting for a stop leaves the reload pending.
            let stop = tokio::time::timeout(Duration::from_millis(50), signals.stop()).await;
            assert!(stop.is_err(), "SIGHUP is not a stop");
            let next = tokio::time::timeout(Duration::from_secs(5), signals.next()).await;
            assert_eq!(next.ok(), Some(Request::Reload));
            let again = tokio::time::timeout(Duration::from_millis(50), signals.next()).await;
            assert!(again.is_err(), "a reload is reported once");
        });
    }
}
