//! cfn-hup's lifecycle hooks (issue 32): hooks triggered by what the instance metadata
//! says about the instance's own future — an Auto Scaling launch or termination waiting
//! on a lifecycle hook, a Spot interruption, a rebalance recommendation, a scheduled
//! maintenance event — detected by polling IMDS only (no queue to set up or clean up).
//!
//! * [`hook`]: the triggers and keys of such a hook in hooks.conf/hooks.d;
//! * [`notice`]: the IMDS items polled and what identifies one notice;
//! * [`record`]: the durable record of what ran and what was completed, so that a
//!   restart neither runs a finished action again nor misses a completion;
//! * [`action`] and [`sections`]: running a hook's action (killed at its `timeout=`)
//!   and a notice's or transition's sections, each recorded;
//! * [`discover`]: the group and the Auto Scaling lifecycle hooks of a transition;
//! * [`drain`]: running the actions of an Auto Scaling transition with heartbeats, then
//!   completing every lifecycle hook of it exactly once;
//! * [`watcher`]: the polling task of the service.

pub mod action;
pub mod discover;
pub mod drain;
pub mod hook;
pub mod notice;
pub mod record;
pub mod sections;
pub mod watcher;

pub use hook::{LifecycleHook, LifecycleResult, Trigger};
