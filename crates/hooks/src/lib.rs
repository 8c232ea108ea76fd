//! cfn-hup (SPEC §14): the configuration directory and its INI dialect, update hooks and
//! their paths, change detection against `metadata_db.json` (or, for a hook with no
//! state yet, against the metadata cfn-init last applied), running actions, the
//! command listener of command hooks (its messages and `commands_run.json`), and the
//! service: tasks on the process's one current-thread tokio runtime (passes on a
//! jittered schedule, the listener's rounds, SIGHUP reload, SIGTERM), pid file, daemon.
//!
//! Libraries never print: errors are typed and progress is reported as `tracing`
//! events, which the binary writes to `cfn-hup.log`.

pub mod activity;
pub mod backoff;
pub mod baseline;
pub mod command_message;
pub mod command_result;
pub mod commands_run;
pub mod config;
pub mod daemon;
pub mod detect;
pub mod ini;
pub mod lifecycle;
pub mod listener;
pub mod listener_task;
pub mod offload;
pub mod path;
pub mod readiness;
pub mod runner;
pub mod service;
pub mod service_loop;
pub mod shutdown;
pub mod signals;
pub mod state;

pub use config::{CommandHook, ConfigError, Hook, HupConfig, MainConfig};
pub use runner::{Health, PassOptions, PassReport, run_pass};
pub use state::{MetadataDb, StateValue};
