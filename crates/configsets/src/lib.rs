//! AWS::CloudFormation::Init: the typed model parsed once from the metadata, configSet
//! resolution, and the engine that applies each config's sections in the reference's
//! order (SPEC §10).
//!
//! Libraries never print: the engine logs through `tracing` (the main log, and the
//! command log under the target `cfn_cmd`) and returns a `BuildError` whose text the
//! binary prints as `Error occurred during build: <text>`.

pub mod changes;
pub mod cmd_log;
pub mod commands;
pub mod configsets;
pub mod document;
pub mod durable;
pub mod engine;
pub mod environment;
pub mod files;
pub mod groups;
pub mod locations;
pub mod model;
pub mod mustache;
pub mod packages;
pub mod parent_dir;
pub mod plan;
pub mod progress;
pub mod run_record;
pub mod services;
pub mod sources;
pub mod tool;
pub mod users;

pub use engine::{BuildError, build};
pub use environment::{Environment, Fetch, Fetched};
