//! The build: resolve configSets, then run each requested configSet's configs, each
//! config's sections in the reference's order (INIT-CS-06, INIT-CS-07), logging what the
//! reference logs to `cfn-init.log` and `cfn-init-cmd.log` (LOG-05, §8.3).

use crate::changes::ChangeRecord;
use crate::cmd_log::{banner, cmd_log};
use crate::configsets::ConfigSets;
use crate::document::{InitDocument, Section, Sections};
use crate::environment::Environment;
use crate::model::ModelError;
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
    env.fetch.start();
    let result = run(init, requested, env);
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

fn run(init: &Map<String, Value>, requested: &[String], env: &Environment<'_>) -> Result<(), BuildError> {
    // Parsed once; a section's errors wait for its turn.
    let document = InitDocument::from_init(init, None);
    let sets = checked_sets(&document)?;
    tracing::info!("Running configSets: {}", requested.join(", "));
    // A config the document does not have (the implicit `config` of an Init without
    // configSets) has nothing to do.
    let absent = Sections::absent();
    for set_name in requested {
        let configs = configs_of(&sets, set_name)?;
        tracing::info!("Running configSet {set_name}");
        cmd_log(&"*".repeat(60));
        cmd_log(&format!("ConfigSet {set_name}"));
        for config_name in configs {
            tracing::info!("Running config {config_name}");
            cmd_log(&"+".repeat(60));
            cmd_log(&format!("Config {config_name}"));
            let sections = match document.config(config_name).map(|c| &c.sections) {
                Some(Ok(sections)) => sections,
                // `checked_sets` has refused a config of the sets that is not an object.
                _ => &absent,
            };
            progress::config_started(set_name, config_name);
            let outcome = run_config(config_name, sections, env);
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

/// One config's sections in the reference's order; each section's errors surface when
/// its turn comes, after the earlier sections have taken effect.
fn run_config(name: &str, sections: &Sections, env: &Environment<'_>) -> Result<(), String> {
    let mut changes = ChangeRecord::default();
    if turn_of(name, "packages", &sections.packages) {
        changes.packages = packages::apply(sections.packages.checked_entries()?)?;
    }
    if turn_of(name, "groups", &sections.groups) {
        changes.groups = groups::apply(sections.groups.checked_entries()?)?;
    }
    if turn_of(name, "users", &sections.users) {
        changes.users = users::apply(sections.users.checked_entries()?)?;
    }
    if turn_of(name, "sources", &sections.sources) {
        changes.sources = sources::apply(sections.sources.checked_entries()?, env)?;
    }
    if turn_of(name, "files", &sections.files) {
        changes.files = files::apply(sections.files.checked_entries()?, env)?;
    }
    if turn_of(name, "commands", &sections.commands) {
        changes.commands = commands::apply(name, sections.commands.checked_entries()?)?;
    }
    tracing::trace!("changes of config {name}: {changes:?}");
    if turn_of(name, "services", &sections.services) {
        services::apply(sections.services.checked_entries()?, &changes)?;
    }
    Ok(())
}

/// Whether the section `section` of config `config` is there to run; its start is
/// reported either way, and an absent one logged as the reference logs it.
fn turn_of<T>(config: &str, section: &'static str, of: &Section<T>) -> bool {
    progress::section_started(config, section, of.present);
    if !of.present {
        tracing::debug!("No {section} specified");
    }
    of.present
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
