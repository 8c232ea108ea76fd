//! Where the build is, as `tracing` events of their own target: a config starts, a
//! section starts, a config ends. Whoever keeps a record of the run (cfn-init's run
//! record: how long each config and section took, where a failure happened) listens
//! for them; the logs leave them out, so that they add no line to `cfn-init.log`.
//!
//! Events and not a parameter: the engine's signatures stay as they are, and a build
//! nobody records costs an event nobody keeps.

/// The target of the events.
pub const TARGET: &str = "cfn_progress";

/// The `kind` field of an event.
pub const CONFIG_STARTED: &str = "config_started";
pub const SECTION_STARTED: &str = "section_started";
pub const CONFIG_ENDED: &str = "config_ended";

/// Config `config` of configSet `set` starts.
pub(crate) fn config_started(set: &str, config: &str) {
    tracing::info!(target: TARGET, kind = CONFIG_STARTED, set, config);
}

/// Section `section` of `config` starts (the one before it has ended); `present` is
/// false when the config does not specify it, so that nothing runs.
pub(crate) fn section_started(config: &str, section: &'static str, present: bool) {
    tracing::info!(target: TARGET, kind = SECTION_STARTED, config, section, present);
}

/// `config` has ended: all its sections ran (`ok`), or the one last started failed.
pub(crate) fn config_ended(config: &str, ok: bool) {
    tracing::info!(target: TARGET, kind = CONFIG_ENDED, config, ok);
}
