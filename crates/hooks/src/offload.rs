//! Blocking work awaited from the service's tasks. The AWS calls of a pass or of a
//! listener round, and the actions they run, block; they run on a thread of their own
//! while the runtime's one thread keeps serving signals and timers. Once the AWS layer
//! is async, a pass and a round become futures and this module goes.
//!
//! Not `tokio::task::spawn_blocking`: it panics when the system refuses a thread and
//! none is idle (the release build aborts on panic); here that is an error the service
//! logs, and it keeps running.

use std::future::Future;
use tokio::sync::oneshot;

#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    #[error("no thread could be started: {0}")]
    Spawn(std::io::Error),
    /// The work panicked (only possible in builds that unwind).
    #[error("the work ended without a result")]
    Lost,
}

/// Starts `work` on a new thread named `name` (inside the runtime's context, as
/// `spawn_blocking` would) and returns a future of its result.
pub fn run<T, F>(name: &str, work: F) -> Result<impl Future<Output = Result<T, OffloadError>>, OffloadError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (done, result) = oneshot::channel();
    let runtime = cfn_aws::runtime::runtime().handle().clone();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let _context = runtime.enter();
            let _ = done.send(work());
        })
        .map_err(OffloadError::Spawn)?;
    Ok(async move { result.await.map_err(|_| OffloadError::Lost) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_another_thread_and_its_result_is_awaited() {
        let caller = std::thread::current().id();
        let (value, thread) = cfn_aws::runtime::block_on(async {
            run("test-work", move || (6 * 7, std::thread::current().id())).unwrap().await.unwrap()
        });
        assert_eq!(value, 42);
        assert_ne!(thread, caller);
    }
}
