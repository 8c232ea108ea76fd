//! Services a build would enable, disable, start, stop or restart, decided by the same
//! `converge` the build uses, with a controller that asks the service manager for the
//! current state and records the actions instead of taking them.

use super::Item;
use crate::changes::ChangeRecord;
use crate::document::{self, ServiceSpec};
use crate::services::{Controller, converge, restart_reasons, services, systemd, sysvinit};
use crate::tool::refuse_option_like;
use std::path::Path;

pub(super) fn plan(
    managers: &[document::Item<Vec<document::Item<ServiceSpec>>>],
    changes: &ChangeRecord,
    items: &mut Vec<Item>,
) -> Result<(), String> {
    for manager in managers {
        let name = manager.key.as_str();
        let section = format!("services {name}");
        let (is_running, is_enabled): (Query, EnabledQuery) = match name {
            "sysvinit" => (sysvinit::is_running_now, sysvinit::is_enabled),
            "systemd" => (systemd::is_active, systemd::is_enabled),
            "windows" => {
                if !services(manager)?.is_empty() {
                    return Err("Cannot modify windows services without pywin32".into());
                }
                continue;
            }
            _ => {
                items.push(Item::remark(&section, format!("unsupported service manager {name}, ignored")));
                continue;
            }
        };
        let listed = services(manager)?;
        if name == "systemd" && !listed.is_empty() && !Path::new(systemd::SYSTEMCTL).exists() {
            return Err("SystemD is not available on the instance".into());
        }
        for (service, spec) in listed {
            refuse_option_like(name, "service", service)?;
            if name == "sysvinit" && service.contains('/') {
                return Err(format!("Invalid service name {service}"));
            }
            let mut recorder = Recorder {
                section: &section,
                reasons: restart_reasons(&spec.depends_on, changes),
                is_running,
                is_enabled,
                items: &mut *items,
            };
            converge(&mut recorder, service, spec, changes)?;
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
