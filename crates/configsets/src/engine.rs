//! The build: resolve configSets, then run each requested configSet's configs, each
//! config's sections in the reference's order (INIT-CS-06, INIT-CS-07), logging what the
//! reference logs to `cfn-init.log` and `cfn-init-cmd.log` (LOG-05, §8.3).

use crate::changes::ChangeRecord;
use crate::cmd_log::{banner, cmd_log};
use crate::configsets::ConfigSets;
use crate::document::{InitDocument, Sections};
use crate::durable::BackgroundSync;
use crate::environment::Environment;
use crate::model::{self, ModelError};
use crate::progress;
use crate::{commands, files, groups, packages, services, sources, users};
use serde_json::{Map, Value};

/// A failed build. The binary prints `Error occurred during build: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BuildError {
    pub message: String,
    /// The config that failed, when one did (the log names it).
    pub config: Option<String>,
}

impl BuildError {
    pub fn new(message: impl Into<String>) -> BuildError {
        BuildError { message: message.into(), config: None }
    }
}

impl From<ModelError> for BuildError {
    fn from(e: ModelError) -> Self {
        BuildError::new(e.0)
    }
}

/// Runs the build for the `AWS::CloudFormation::Init` value `init`, running the
/// configSets named in `requested` in that order.
pub fn build(init: &Map<String, Value>, requested: &[String], env: &Environment<'_>) -> Result<(), BuildError> {
    tracing::info!("{}", banner("Starting build", '-'));
    tracing::debug!("Not setting a reboot trigger as scheduling support is not available");
    let mut sync = BackgroundSync::new();
    let result = run(init, requested, env, &mut sync);
    // The outcome is reported once the files written are on disk.
    sync.wait();
    match &result {
        Ok(()) => {
            tracing::info!("ConfigSets completed");
            tracing::debug!("Not clearing reboot trigger as scheduling support is not available");
            tracing::info!("{}", banner("Build complete", '-'));
        }
        Err(e) => {
            if let Some(config) = &e.config {
                tracing::error!("Error encountered during build of {config}: {}", e.message);
            }
            tracing::error!("{}", banner("BUILD FAILED!", '-'));
            tracing::error!("Unhandled exception during build: {}", e.message);
        }
    }
    result
}

fn run(
    init: &Map<String, Value>,
    requested: &[String],
    env: &Environment<'_>,
    sync: &mut BackgroundSync,
) -> Result<(), BuildError> {
    // Parsed once; a section's errors wait for its turn.
    let document = InitDocument::from_init(init, None);
    let sets = checked_sets(&document)?;
    tracing::info!("Running configSets: {}", requested.join(", "));
    let empty = Map::new();
    for set_name in requested {
        let configs = configs_of(&sets, set_name)?;
        tracing::info!("Running configSet {set_name}");
        cmd_log(&"*".repeat(60));
        cmd_log(&format!("ConfigSet {set_name}"));
        for config_name in configs {
            let config = init.get(config_name).and_then(Value::as_object).unwrap_or(&empty);
            tracing::info!("Running config {config_name}");
            cmd_log(&"+".repeat(60));
            cmd_log(&format!("Config {config_name}"));
            // Absent (the implicit `config` of an Init without configSets): nothing to do.
            let absent;
            let sections = match document.config(config_name).map(|c| &c.sections) {
                Some(Ok(sections)) => sections,
                _ => {
                    absent = Sections::parse(config_name, "", config);
                    &absent
                }
            };
            progress::config_started(set_name, config_name);
            let outcome = run_config(config_name, config, sections, env, sync);
            progress::config_ended(config_name, outcome.is_ok());
            outcome.map_err(|message| BuildError { message, config: Some(config_name.clone()) })?;
        }
    }
    Ok(())
}

/// The configSets, once every config they name is an object: the reference checks
/// this before anything runs.
pub(crate) fn checked_sets(document: &InitDocument) -> Result<ConfigSets, BuildError> {
    let sets = document.config_sets.clone()?;
    for name in sets.iter().flat_map(|(_, configs)| configs) {
        if let Some(Err(e)) = document.config(name).map(|c| &c.sections) {
            return Err(e.clone().into());
        }
    }
    Ok(sets)
}

/// The configs of the configSet `name`.
pub(crate) fn configs_of<'a>(sets: &'a [(String, Vec<String>)], name: &str) -> Result<&'a [String], BuildError> {
    sets.iter()
        .find(|(n, _)| n == name)
        .map(|(_, configs)| configs.as_slice())
        .ok_or_else(|| BuildError::new(format!("Error: no ConfigSet named {name} exists")))
}

fn run_config(
    name: &str,
    config: &Map<String, Value>,
    sections: &Sections,
    env: &Environment<'_>,
    sync: &mut BackgroundSync,
) -> Result<(), String> {
    let mut changes = ChangeRecord::default();
    let present = |section: &str| config.get(section).is_some_and(cfn_python::truth::is_truthy);
    progress::section_started(name, "packages", present("packages"));
    if present("packages") {
        changes.packages = packages::apply(name, &config["packages"])?;
    } else {
        tracing::debug!("No packages specified");
    }
    progress::section_started(name, "groups", present("groups"));
    if present("groups") {
        let entries = model::sorted_entries(name, "groups", config.get("groups")).map_err(|e| e.0)?;
        changes.groups = groups::apply(name, &entries)?;
    } else {
        tracing::debug!("No groups specified");
    }
    progress::section_started(name, "users", present("users"));
    if present("users") {
        let entries = model::sorted_entries(name, "users", config.get("users")).map_err(|e| e.0)?;
        changes.users = users::apply(name, &entries)?;
    } else {
        tracing::debug!("No users specified");
    }
    progress::section_started(name, "sources", present("sources"));
    if present("sources") {
        let entries = model::sorted_entries(name, "sources", config.get("sources")).map_err(|e| e.0)?;
        changes.sources = sources::apply(name, &entries, env)?;
    } else {
        tracing::debug!("No sources specified");
    }
    progress::section_started(name, "files", present("files"));
    if present("files") {
        let entries = sections.files.items.as_ref().map_err(|e| e.0.clone())?;
        changes.files = files::apply(entries, env, sync)?;
    } else {
        tracing::debug!("No files specified");
    }
    progress::section_started(name, "commands", present("commands"));
    if present("commands") {
        let entries = sections.commands.items.as_ref().map_err(|e| e.0.clone())?;
        changes.commands = commands::apply(name, entries)?;
    } else {
        tracing::debug!("No commands specified");
    }
    tracing::trace!("changes of config {name}: {changes:?}");
    progress::section_started(name, "services", present("services"));
    if present("services") {
        services::apply(name, &config["services"], &changes)?;
    } else {
        tracing::debug!("No services specified");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners_are_centred_like_python() {
        assert_eq!(banner("Starting build", '-'), "-----------------------Starting build-----------------------");
        assert_eq!(banner("BUILD FAILED!", '-'), "-----------------------BUILD FAILED!------------------------");
        assert_eq!(banner("Command Output", '-'), "-----------------------Command Output-----------------------");
        assert_eq!(banner("Build complete", '-'), "-----------------------Build complete-----------------------");
    }
}
