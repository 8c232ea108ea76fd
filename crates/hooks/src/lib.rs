//! cfn-hup (SPEC §14): the configuration directory and its INI dialect, update hooks and
//! their paths, change detection against `metadata_db.json`, running actions, the
//! command listener of command hooks (its messages and `commands_run.json`), and the
//! pieces of a well-behaved service (pid file, daemon, signals, schedule).
//!
//! Libraries never print: errors are typed and progress is reported as `tracing`
//! events, which the binary writes to `cfn-hup.log`.

pub mod command_message;
pub mod commands_run;
pub mod config;
pub mod daemon;
pub mod detect;
pub mod ini;
pub mod listener;
pub mod listener_thread;
pub mod path;
pub mod runner;
pub mod service;
pub mod state;

pub use config::{CommandHook, ConfigError, Hook, HupConfig, MainConfig};
pub use runner::{Health, PassOptions, PassReport, run_pass};
pub use state::{MetadataDb, StateValue};
