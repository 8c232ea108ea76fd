//! SIGTERM as blocking code sees it (HUP-RUN-04). The service's signal task raises the
//! flag; a pass checks it between hooks and the retry sleeps of a pass or of a listener
//! round end at once instead of running their course. Waiting is on a condition
//! variable: nothing wakes up until the flag is raised or the sleep is over.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A flag that can be raised once and waited for.
pub struct Flag {
    raised: Mutex<bool>,
    changed: Condvar,
}

impl Flag {
    pub const fn new() -> Flag {
        Flag { raised: Mutex::new(false), changed: Condvar::new() }
    }

    pub fn raise(&self) {
        *self.raised.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.changed.notify_all();
    }

    pub fn is_raised(&self) -> bool {
        *self.raised.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps like `std::thread::sleep`, but returns as soon as the flag is raised.
    pub fn sleep(&self, duration: Duration) {
        let deadline = Instant::now() + duration;
        let mut raised = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        while !*raised {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            raised = self.changed.wait_timeout(raised, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

impl Default for Flag {
    fn default() -> Self {
        Flag::new()
    }
}

/// The process's shutdown flag: a signal is process-wide.
static SHUTDOWN: Flag = Flag::new();

/// Asks every pass and listener round to stop at the next opportunity.
pub fn request() {
    SHUTDOWN.raise();
}

pub fn requested() -> bool {
    SHUTDOWN.is_raised()
}

/// A retry sleep that ends early on SIGTERM (a `fn` so that it fits a retry policy).
pub fn sleep(duration: Duration) {
    SHUTDOWN.sleep(duration);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_sleep_runs_its_course_or_ends_when_the_flag_is_raised() {
        let flag = Arc::new(Flag::new());
        let started = Instant::now();
        flag.sleep(Duration::from_millis(50));
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(!flag.is_raised());

        let sleeper = {
            let flag = flag.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                flag.sleep(Duration::from_secs(30));
                started.elapsed()
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        flag.raise();
        let slept = sleeper.join().unwrap();
        assert!(slept < Duration::from_secs(5), "{slept:?}");
        assert!(flag.is_raised());
        let started = Instant::now();
        flag.sleep(Duration::from_secs(30));
        assert!(started.elapsed() < Duration::from_secs(1), "a raised flag does not sleep at all");
    }
}
