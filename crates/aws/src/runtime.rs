//! The one tokio runtime of the process, built on first use.
//!
//! cfn-init from a file never makes a network call, so it must never pay for a runtime:
//! nothing here runs until the first request (or cfn-hup's service loop) asks for it.
//! A current-thread runtime adds no worker threads; blocking callers on any thread
//! (cfn-init's sections, cfn-hup's passes on `spawn_blocking` threads) drive their own
//! request with [`block_on`].

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::runtime::{Builder, Runtime};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The process's runtime: current-thread, with I/O and timers.
pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| {
            // Only an exhausted process (no file descriptors for the I/O driver) gets here;
            // no request can be made without it.
            panic!("cannot start the I/O runtime: {e}")
        })
    })
}

/// Whether the runtime exists yet. A process that forks (cfn-hup's daemon) must do so
/// before: the child would inherit the I/O driver's descriptors and a blocking pool
/// whose threads did not survive the fork.
pub fn is_built() -> bool {
    RUNTIME.get().is_some()
}

/// Runs `future` to completion from synchronous code. Must not be called from inside
/// an async task of the runtime (use `tokio::task::spawn_blocking` there).
pub fn block_on<F: Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// Runs `future` like [`block_on`], giving up after `limit`; `None` when time ran out.
pub fn block_on_within<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    block_on(async { tokio::time::timeout(limit, future).await.ok() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_on_works_from_several_threads_and_inside_spawn_blocking() {
        let threads: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    block_on(async move {
                        tokio::task::yield_now().await;
                        i * 2
                    })
                })
            })
            .collect();
        let sum: i32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(sum, 12);
        let nested = block_on(async { tokio::task::spawn_blocking(|| block_on(async { 7 })).await.unwrap() });
        assert_eq!(nested, 7);
    }
}
