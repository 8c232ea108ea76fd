//! Services a build would enable, disable, start, stop or restart, decided by the same
//! `converge` the build uses, with a controller that asks the service manager for the
//! current state and records the actions instead of taking them.

use super::Item;
use crate::changes::ChangeRecord;
use crate::model::kind;
use crate::services::{Controller, converge, restart_reasons, services, systemd, sysvinit};
use crate::tool::refuse_option_like;
use serde_json::Value;
use std::path::Path;

pub(super) fn plan(config: &str, value: &Value, changes: &ChangeRecord, items: &mut Vec<Item>) -> Result<(), String> {
    let Value::Object(managers) = value else {
        return Err(format!("config {config}: services must be an object, not {}", kind(value)));
    };
    for (manager, services_value) in managers {
        let section = format!("services {manager}");
        let (is_running, is_enabled): (Query, EnabledQuery) = match manager.as_str() {
            "sysvinit" => (sysvinit::is_running_now, sysvinit::is_enabled),
            "systemd" => (systemd::is_active, systemd::is_enabled),
            "windows" => {
                if !services(config, manager, services_value)?.is_empty() {
                    return Err("Cannot modify windows services without pywin32".into());
                }
                continue;
            }
            _ => {
                items.push(Item::remark(&section, format!("unsupported service manager {manager}, ignored")));
                continue;
            }
        };
        let listed = services(config, manager, services_value)?;
        if manager == "systemd" && !listed.is_empty() && !Path::new(systemd::SYSTEMCTL).exists() {
            return Err("SystemD is not available on the instance".into());
        }
        for (service, properties) in listed {
            refuse_option_like(manager, "service", service)?;
            if manager == "sysvinit" && service.contains('/') {
                return Err(format!("Invalid service name {service}"));
            }
            let mut recorder = Recorder {
                section: &section,
                reasons: restart_reasons(properties, changes),
                is_running,
                is_enabled,
                items: &mut *items,
            };
            converge(&mut recorder, service, properties, changes)?;
        }
    }
    Ok(())
}

type Query = fn(&str) -> Result<bool, String>;
/// Whether a service is enabled; `None` when the manager cannot change it.
type EnabledQuery = fn(&str) -> Result<Option<bool>, String>;

/// Asks for the state; records what would change it.
struct Recorder<'a> {
    section: &'a str,
    /// Why the service would restart (the changes it depends on).
    reasons: Vec<String>,
    is_running: Query,
    is_enabled: EnabledQuery,
    items: &'a mut Vec<Item>,
}

impl Recorder<'_> {
    fn push(&mut self, text: String) {
        self.items.push(Item::change(self.section, text));
    }
}

impl Controller for Recorder<'_> {
    fn set_enabled(&mut self, service: &str, enabled: bool) -> Result<(), String> {
        let verb = if enabled { "enable" } else { "disable" };
        match (self.is_enabled)(service)? {
            Some(now) if now != enabled => self.push(format!("{verb} {service}")),
            Some(_) => {}
            None => self.items.push(Item::remark(
                self.section,
                format!("cannot {verb} {service}: neither chkconfig nor update-rc.d is available"),
            )),
        }
        Ok(())
    }
    fn restart(&mut self, service: &str) -> Result<(), String> {
        let text = format!("restart {service}, since these change: {}", self.reasons.join(", "));
        self.push(text);
        Ok(())
    }
    fn is_running(&mut self, service: &str) -> Result<bool, String> {
        (self.is_running)(service)
    }
    fn start(&mut self, service: &str) -> Result<(), String> {
        self.push(format!("start {service} (not running)"));
        Ok(())
    }
    fn stop(&mut self, service: &str) -> Result<(), String> {
        self.push(format!("stop {service} (running)"));
        Ok(())
    }
}
