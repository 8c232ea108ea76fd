//! What a build would change on this host, without changing anything (`cfn-bootstrap
//! plan`): the configSets are resolved as the build resolves them, and each config's
//! sections are looked at in the build's order, each through its own section's checks
//! (installed packages, existing groups and users, file contents, service states).
//!
//! Nothing is written: no file, package, user or state, and no log line (the sections'
//! tracing goes nowhere unless the caller installs a subscriber). What one section would
//! change feeds the next ones as it does in a build: a group created above may own a file
//! below, and the change record decides which services restart.
//!
//! What cannot be known without running it is said as such: a command's `test` runs only
//! when asked (`run_tests`), since tests can have side effects.

mod commands;
mod files;
mod groups;
mod packages;
mod services;
mod sources;
mod users;

use crate::changes::ChangeRecord;
use crate::document::{InitDocument, Sections};
use crate::engine::{self, BuildError};
use crate::environment::Environment;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt;

/// What the plan may do to find out.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Run commands' `test`s (and `defaults` scripts) to know whether they would run.
    pub run_tests: bool,
}

/// One thing a section would do, or a remark about what it would leave alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// `files`, `packages apt`, `services systemd`, …
    pub section: String,
    pub text: String,
    /// Shown under the item, indented: a file's unified diff.
    pub detail: Vec<String>,
    /// Whether it is a change (else a remark: an ignored manager, a command whose test fails).
    pub change: bool,
}

impl Item {
    fn change(section: impl Into<String>, text: impl Into<String>) -> Item {
        Item { section: section.into(), text: text.into(), detail: Vec::new(), change: true }
    }

    fn remark(section: impl Into<String>, text: impl Into<String>) -> Item {
        Item { section: section.into(), text: text.into(), detail: Vec::new(), change: false }
    }
}

/// The plan of one config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPlan {
    pub configset: String,
    pub config: String,
    pub items: Vec<Item>,
}

/// The plan of a build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub configs: Vec<ConfigPlan>,
    /// The error the build would stop with, after the configs above.
    pub stopped: Option<BuildError>,
}

impl Plan {
    /// How many changes the build would make.
    pub fn changes(&self) -> usize {
        self.configs.iter().flat_map(|c| &c.items).filter(|i| i.change).count()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for config in &self.configs {
            writeln!(f, "configSet {}, config {}:", config.configset, config.config)?;
            if config.items.is_empty() {
                writeln!(f, "  nothing to do")?;
            }
            for item in &config.items {
                let mark = if item.change { '~' } else { ' ' };
                // A URL in a command line may carry a password or a signature (SEC-02).
                writeln!(f, "{mark} {}: {}", item.section, cfn_aws::http::redact_urls_in(&item.text))?;
                for line in &item.detail {
                    writeln!(f, "      {line}")?;
                }
            }
        }
        match (&self.stopped, self.changes()) {
            (Some(e), _) => writeln!(f, "cfn-init would stop here: {}", cfn_aws::http::redact_urls_in(&e.message)),
            (None, 0) => writeln!(f, "Nothing would change."),
            (None, 1) => writeln!(f, "1 change."),
            (None, n) => writeln!(f, "{n} changes."),
        }
    }
}

/// What the plan has decided so far that later sections depend on: groups and users a
/// build would have created by then.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub groups: BTreeSet<String>,
    pub users: BTreeSet<String>,
}

/// The plan of running the configSets `requested` of `init` on this host.
pub fn plan(init: &Map<String, Value>, requested: &[String], env: &Environment<'_>, options: Options) -> Plan {
    let mut plan = Plan::default();
    if let Err(e) = fill(&mut plan, init, requested, env, options) {
        plan.stopped = Some(e);
    }
    plan
}

fn fill(
    plan: &mut Plan,
    init: &Map<String, Value>,
    requested: &[String],
    env: &Environment<'_>,
    options: Options,
) -> Result<(), BuildError> {
    let document = InitDocument::from_init(init, None);
    let sets = engine::checked_sets(&document)?;
    let mut pending = Pending::default();
    // As in the build: a config the document does not have has nothing to do.
    let absent = Sections::absent();
    for set in requested {
        for name in engine::configs_of(&sets, set)? {
            let sections = match document.config(name).map(|c| &c.sections) {
                Some(Ok(sections)) => sections,
                _ => &absent,
            };
            let mut items = Vec::new();
            let result = plan_config(name, sections, env, options, &mut pending, &mut items);
            plan.configs.push(ConfigPlan { configset: set.clone(), config: name.clone(), items });
            result.map_err(|message| BuildError { message, config: Some(name.clone()) })?;
        }
    }
    Ok(())
}

/// One config's sections in the build's order (`engine::run_config`), each stopping
/// the plan where the build would stop.
fn plan_config(
    name: &str,
    sections: &Sections,
    env: &Environment<'_>,
    options: Options,
    pending: &mut Pending,
    items: &mut Vec<Item>,
) -> Result<(), String> {
    let mut changes = ChangeRecord::default();
    if sections.packages.present {
        changes.packages = packages::plan(sections.packages.checked_entries()?, items)?;
    }
    if sections.groups.present {
        changes.groups = groups::plan(sections.groups.checked_entries()?, pending, items)?;
    }
    if sections.users.present {
        changes.users = users::plan(sections.users.checked_entries()?, pending, items)?;
    }
    if sections.sources.present {
        changes.sources = sources::plan(sections.sources.checked_entries()?, items)?;
    }
    if sections.files.present {
        changes.files = files::plan(sections.files.checked_entries()?, env, pending, items)?;
    }
    if sections.commands.present {
        changes.commands = commands::plan(name, sections.commands.checked_entries()?, options, pending, items)?;
    }
    if sections.services.present {
        services::plan(sections.services.checked_entries()?, &changes, items)?;
    }
    Ok(())
}
