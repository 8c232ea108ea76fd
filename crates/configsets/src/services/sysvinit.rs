//! `sysvinit` services (INIT-SVC-01, INIT-SVC-02): enabled through `/sbin/chkconfig
//! <svc> on|off`, else `/usr/sbin/update-rc.d <svc> enable|disable`; run through
//! `/sbin/service <svc>`, else `/usr/sbin/service <svc>`, else `/etc/init.d/<svc>`
//! with `status`, `start`, `stop` and `restart`.

use super::{Controller, converge};
use crate::changes::ChangeRecord;
use crate::tool::{self, tool_error};
use std::path::Path;

/// The tool that enables services, if any (`/sbin/chkconfig` first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modifier {
    Chkconfig,
    UpdateRcD,
}

impl Modifier {
    pub fn detect() -> Option<Modifier> {
        if Path::new("/sbin/chkconfig").exists() {
            Some(Modifier::Chkconfig)
        } else if Path::new("/usr/sbin/update-rc.d").exists() {
            Some(Modifier::UpdateRcD)
        } else {
            None
        }
    }

    pub fn program(self) -> &'static str {
        match self {
            Modifier::Chkconfig => "/sbin/chkconfig",
            Modifier::UpdateRcD => "/usr/sbin/update-rc.d",
        }
    }

    pub fn argv(self, service: &str, enabled: bool) -> Vec<String> {
        let word = match (self, enabled) {
            (Modifier::Chkconfig, true) => "on",
            (Modifier::Chkconfig, false) => "off",
            (Modifier::UpdateRcD, true) => "enable",
            (Modifier::UpdateRcD, false) => "disable",
        };
        vec![self.program().to_string(), service.to_string(), word.to_string()]
    }
}

/// The service runner: `/sbin/service`, `/usr/sbin/service`, or none (run the init
/// script directly).
pub fn detect_runner() -> Option<&'static str> {
    ["/sbin/service", "/usr/sbin/service"].into_iter().find(|p| Path::new(p).exists())
}

pub fn runner_argv(runner: Option<&str>, service: &str, action: &str) -> Vec<String> {
    match runner {
        Some(r) => vec![r.to_string(), service.to_string(), action.to_string()],
        None => vec![format!("/etc/init.d/{service}"), action.to_string()],
    }
}

struct Tools {
    modifier: Option<Option<Modifier>>,
    runner: Option<Option<&'static str>>,
}

impl Tools {
    fn modifier(&mut self) -> Option<Modifier> {
        *self.modifier.get_or_insert_with(|| {
            let m = Modifier::detect();
            tracing::debug!("Using service modifier: {}", m.map(Modifier::program).unwrap_or("None"));
            m
        })
    }

    fn runner(&mut self) -> Option<&'static str> {
        *self.runner.get_or_insert_with(|| {
            let r = detect_runner();
            match r {
                Some(r) => tracing::debug!("Using service runner: {r}"),
                None => tracing::debug!("Running init scripts directly"),
            }
            r
        })
    }
}

fn set_enabled(tools: &mut Tools, service: &str, enabled: bool) -> Result<(), String> {
    let Some(modifier) = tools.modifier() else {
        tracing::error!("Could not enable {service}, as chkconfig and update-rc.d were not available");
        return Ok(());
    };
    let word = if enabled { "enabled" } else { "disabled" };
    tracing::debug!("Setting service {service} to {word}");
    let argv = modifier.argv(service, enabled);
    let result = tool::logged(&argv.join(" "), argv, &[])?;
    if !result.ok() {
        let tool_name = if modifier == Modifier::Chkconfig { "chkconfig" } else { "update-rc.d" };
        tracing::error!("{tool_name} failed with error {}. Output: {}", result.code, result.text);
        let verb = if enabled { "enable" } else { "disable" };
        return Err(tool_error(format!("Could not {verb} service {service}"), result.code));
    }
    tracing::info!("{word} service {service}");
    Ok(())
}

/// Runs `<runner> <svc> <action>`; `start` → `Started`, `Could not start …`.
fn control(tools: &mut Tools, service: &str, action: &str, done: &str) -> Result<(), String> {
    let argv = runner_argv(tools.runner(), service, action);
    let result = tool::logged(&argv.join(" "), argv, &[])?;
    if !result.ok() {
        tracing::error!("Could not {action} service {service}; return code was {}", result.code);
        tracing::debug!("Service output: {}", result.text);
        return Err(format!("Could not {action} {service}"));
    }
    tracing::info!("{done} {service} successfully");
    Ok(())
}

fn is_running(tools: &mut Tools, service: &str) -> Result<bool, String> {
    let argv = runner_argv(tools.runner(), service, "status");
    Ok(tool::query(&argv.iter().map(String::as_str).collect::<Vec<_>>())?.ok())
}

impl Controller for Tools {
    fn set_enabled(&mut self, service: &str, enabled: bool) -> Result<(), String> {
        set_enabled(self, service, enabled)
    }
    fn restart(&mut self, service: &str) -> Result<(), String> {
        control(self, service, "restart", "Restarted")
    }
    fn is_running(&mut self, service: &str) -> Result<bool, String> {
        is_running(self, service)
    }
    fn start(&mut self, service: &str) -> Result<(), String> {
        control(self, service, "start", "Started")
    }
    fn stop(&mut self, service: &str) -> Result<(), String> {
        control(self, service, "stop", "Stopped")
    }
}

/// Whether the service is running, asked as [`Controller::is_running`] asks.
pub(crate) fn is_running_now(service: &str) -> Result<bool, String> {
    is_running(&mut Tools { modifier: None, runner: None }, service)
}

/// Whether the service starts at boot: `chkconfig <svc>` says so, or (update-rc.d) a
/// start link in a multi-user runlevel's directory. `None` when neither tool is there
/// (the build then leaves the setting alone).
pub(crate) fn is_enabled(service: &str) -> Result<Option<bool>, String> {
    match Modifier::detect() {
        None => Ok(None),
        Some(Modifier::Chkconfig) => Ok(Some(tool::query(&["/sbin/chkconfig", service])?.ok())),
        Some(Modifier::UpdateRcD) => Ok(Some(["2", "3", "4", "5"].iter().any(|level| {
            std::fs::read_dir(format!("/etc/rc{level}.d")).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.starts_with('S') && name.get(3..) == Some(service)
                })
            })
        }))),
    }
}

pub fn apply(services: &[super::Service<'_>], changes: &ChangeRecord) -> Result<(), String> {
    if services.is_empty() {
        tracing::debug!("No System V init scripts specified");
        return Ok(());
    }
    let mut tools = Tools { modifier: None, runner: None };
    for (service, spec) in services {
        crate::tool::refuse_option_like("sysvinit", "service", service)?;
        if service.contains('/') {
            return Err(format!("Invalid service name {service}"));
        }
        converge(&mut tools, service, spec, changes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysvinit_argv_forms() {
        assert_eq!(Modifier::Chkconfig.argv("httpd", true), ["/sbin/chkconfig", "httpd", "on"]);
        assert_eq!(Modifier::Chkconfig.argv("httpd", false), ["/sbin/chkconfig", "httpd", "off"]);
        assert_eq!(Modifier::UpdateRcD.argv("nginx", true), ["/usr/sbin/update-rc.d", "nginx", "enable"]);
        assert_eq!(Modifier::UpdateRcD.argv("nginx", false), ["/usr/sbin/update-rc.d", "nginx", "disable"]);
        assert_eq!(runner_argv(Some("/sbin/service"), "nginx", "status"), ["/sbin/service", "nginx", "status"]);
        assert_eq!(runner_argv(None, "nginx", "restart"), ["/etc/init.d/nginx", "restart"]);
    }
}
