//! The `services` section (INIT-SVC-01..07): `sysvinit` and the 2.0 line's `systemd`;
//! `windows` fails on Linux as in the reference; other managers warn. Each service may
//! be enabled/disabled, kept running or stopped, and is restarted — even when
//! `ensureRunning` is false (INIT-SVC-04) — when anything it lists under `files`,
//! `sources`, `groups`, `users`, `commands` or `packages` (per manager) is in the
//! change record of the same config (INIT-SVC-03).

pub mod systemd;
pub mod sysvinit;

use crate::changes::ChangeRecord;
use crate::document::{Item, ServiceSpec};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// What a service is restarted for (INIT-SVC-03): the names it lists under each
/// section of the same config, and under `packages` per manager.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependencies {
    pub files: Vec<String>,
    pub sources: Vec<String>,
    pub groups: Vec<String>,
    pub users: Vec<String>,
    pub commands: Vec<String>,
    /// Manager → package names.
    pub packages: BTreeMap<String, Vec<String>>,
}

/// A service's dependencies as its properties list them. Nothing here is an error: what
/// is neither a name nor a list of names lists nothing (the build never stopped on it).
pub fn dependencies(properties: &Map<String, Value>) -> Dependencies {
    let packages = match properties.get("packages") {
        Some(Value::Object(managers)) => managers.keys().map(|m| (m.clone(), listed(managers, m))).collect(),
        _ => BTreeMap::new(),
    };
    Dependencies {
        files: listed(properties, "files"),
        sources: listed(properties, "sources"),
        groups: listed(properties, "groups"),
        users: listed(properties, "users"),
        commands: listed(properties, "commands"),
        packages,
    }
}

/// The names listed under `key` (a list of strings; a single string is taken as one
/// name).
fn listed(properties: &Map<String, Value>, key: &str) -> Vec<String> {
    match properties.get(key) {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(String::from).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// The names listed that changed.
fn matching<'a>(wanted: &'a [String], changed: &[String]) -> impl Iterator<Item = &'a String> {
    wanted.iter().filter(|w| changed.contains(w))
}

/// Whether a change this service depends on happened in the same config.
pub fn restart_required(depends_on: &Dependencies, changes: &ChangeRecord) -> bool {
    !restart_reasons(depends_on, changes).is_empty()
}

/// The changes of the same config that this service depends on, as `files /etc/a.conf`
/// or `packages apt nginx`.
pub fn restart_reasons(depends_on: &Dependencies, changes: &ChangeRecord) -> Vec<String> {
    let lists = [
        ("files", &depends_on.files, &changes.files),
        ("sources", &depends_on.sources, &changes.sources),
        ("groups", &depends_on.groups, &changes.groups),
        ("users", &depends_on.users, &changes.users),
        ("commands", &depends_on.commands, &changes.commands),
    ];
    let mut reasons = Vec::new();
    for (key, wanted, changed) in lists {
        reasons.extend(matching(wanted, changed).map(|name| format!("{key} {name}")));
    }
    for (manager, changed) in &changes.packages {
        if let Some(wanted) = depends_on.packages.get(manager) {
            reasons.extend(matching(wanted, changed).map(|name| format!("packages {manager} {name}")));
        }
    }
    reasons
}

/// What a service manager does to one service; the decisions around it are shared.
pub(crate) trait Controller {
    fn set_enabled(&mut self, service: &str, enabled: bool) -> Result<(), String>;
    fn restart(&mut self, service: &str) -> Result<(), String>;
    fn is_running(&mut self, service: &str) -> Result<bool, String>;
    fn start(&mut self, service: &str) -> Result<(), String>;
    fn stop(&mut self, service: &str) -> Result<(), String>;
}

/// One service brought to what its properties ask: enabled or disabled, restarted when
/// something it depends on changed in this config — even when `ensureRunning` is false
/// (INIT-SVC-04) — else started or stopped to match `ensureRunning`.
pub(crate) fn converge(
    controller: &mut dyn Controller,
    service: &str,
    spec: &ServiceSpec,
    changes: &ChangeRecord,
) -> Result<(), String> {
    let force_restart = restart_required(&spec.depends_on, changes);
    match spec.enabled {
        Some(enabled) => controller.set_enabled(service, enabled)?,
        None => tracing::debug!("Not modifying enabled state of service {service}"),
    }
    if force_restart {
        tracing::debug!("Restarting {service} due to change detected in dependency");
        return controller.restart(service);
    }
    let Some(ensure) = spec.ensure_running else {
        tracing::debug!("Not modifying running state of service {service}");
        return Ok(());
    };
    let running = controller.is_running(service)?;
    if ensure && !running {
        tracing::debug!("Starting service {service} as it is not running");
        controller.start(service)
    } else if !ensure && running {
        tracing::debug!("Stopping service {service} as it is running");
        controller.stop(service)
    } else {
        tracing::debug!("No need to modify running state of service {service}");
        Ok(())
    }
}

/// One service: its name and what it asks for.
pub type Service<'a> = (&'a str, &'a ServiceSpec);

/// The services of one manager, in document order, once every one of them is an
/// object: a bad one refuses the manager before any of its services is touched.
pub(crate) fn services(manager: &Item<Vec<Item<ServiceSpec>>>) -> Result<Vec<Service<'_>>, String> {
    manager.parsed()?.iter().map(|service| Ok((service.key.as_str(), service.parsed()?))).collect()
}

/// Runs the `services` section: each manager in document order.
pub fn apply(managers: &[Item<Vec<Item<ServiceSpec>>>], changes: &ChangeRecord) -> Result<(), String> {
    for manager in managers {
        match manager.key.as_str() {
            "sysvinit" => sysvinit::apply(&services(manager)?, changes)?,
            "systemd" => systemd::apply(&services(manager)?, changes)?,
            "windows" => {
                if services(manager)?.is_empty() {
                    tracing::debug!("No Windows services specified");
                } else {
                    return Err("Cannot modify windows services without pywin32".into());
                }
            }
            // Skipped whatever it holds, as the reference skips it.
            other => tracing::warn!("Unsupported service manager: {other}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Sections;
    use serde_json::json;

    fn props(v: Value) -> Dependencies {
        dependencies(v.as_object().unwrap())
    }

    #[test]
    fn restart_triggers() {
        let mut changes = ChangeRecord {
            files: vec!["/etc/a.conf".into()],
            commands: vec!["migrate".into()],
            users: vec!["app".into()],
            ..Default::default()
        };
        changes.packages.insert("apt".into(), vec!["nginx".into()]);
        assert!(restart_required(&props(json!({"files": ["/etc/a.conf"]})), &changes));
        assert!(!restart_required(&props(json!({"files": ["/etc/b.conf"]})), &changes));
        assert!(restart_required(&props(json!({"commands": ["migrate"]})), &changes));
        assert!(restart_required(&props(json!({"users": ["app"]})), &changes));
        assert!(!restart_required(&props(json!({"groups": ["app"]})), &changes));
        assert!(restart_required(&props(json!({"packages": {"apt": ["nginx"]}})), &changes));
        // Per manager: the same name under another manager is no match.
        assert!(!restart_required(&props(json!({"packages": {"yum": ["nginx"]}})), &changes));
        assert!(!restart_required(&props(json!({"sources": ["/opt/x"]})), &changes));
        assert!(!restart_required(&props(json!({"enabled": true})), &changes));
        let both = props(json!({"files": ["/etc/a.conf", "/etc/b.conf"], "packages": {"apt": "nginx"}}));
        assert_eq!(restart_reasons(&both, &changes), ["files /etc/a.conf", "packages apt nginx"]);
    }

    fn managers(section: Value) -> Vec<Item<Vec<Item<ServiceSpec>>>> {
        let config = json!({ "services": section });
        Sections::parse("c", "", config.as_object().unwrap()).services.entries().to_vec()
    }

    #[test]
    fn unsupported_managers_warn_and_windows_fails() {
        let changes = ChangeRecord::default();
        assert!(apply(&managers(json!({"upstart": {"x": {}}})), &changes).is_ok());
        assert!(apply(&managers(json!({"upstart": [1]})), &changes).is_ok());
        assert!(apply(&managers(json!({"windows": {}})), &changes).is_ok());
        assert_eq!(
            apply(&managers(json!({"windows": {"w3svc": {}}})), &changes).unwrap_err(),
            "Cannot modify windows services without pywin32"
        );
        assert!(apply(&managers(json!({"sysvinit": {"x": 1}})), &changes).is_err());
        // A service that is not an object refuses its manager before any of its services
        // is looked at: `/bad`, first, would fail on its name.
        assert_eq!(
            apply(&managers(json!({"sysvinit": {"/bad": {}, "x": 1}})), &changes).unwrap_err(),
            "config c, services sysvinit x: must be an object, not a number"
        );
    }
}
