//! `systemd` services (INIT-SVC-05, the 2.0 line's manager): needs
//! `/usr/bin/systemctl`; `systemctl enable|disable <svc>`, `systemctl is-active <svc>`
//! for the running check, `systemctl start|stop <svc>`, and a forced restart as
//! `systemctl daemon-reload` then `systemctl reload-or-restart <svc>`. Every systemctl
//! call goes to the command log.

use super::restart_required;
use crate::boolish::is_true;
use crate::changes::ChangeRecord;
use crate::tool::{self, tool_error};
use std::path::Path;

pub const SYSTEMCTL: &str = "/usr/bin/systemctl";

pub fn argv(action: &str, service: Option<&str>) -> Vec<String> {
    let mut a = vec![SYSTEMCTL.to_string(), action.to_string()];
    a.extend(service.map(str::to_string));
    a
}

fn systemctl(action: &str, service: Option<&str>) -> Result<tool::Output, String> {
    let a = argv(action, service);
    tool::logged(&a.join(" "), a, &[])
}

fn fail(message: String, out: &tool::Output) -> String {
    tracing::error!("{message}. Output: {}", out.text);
    tool_error(message, out.code)
}

pub fn apply(services: &[super::Service<'_>], changes: &ChangeRecord) -> Result<(), String> {
    if services.is_empty() {
        tracing::debug!("No systemd services specified");
        return Ok(());
    }
    if !Path::new(SYSTEMCTL).exists() {
        return Err("SystemD is not available on the instance".into());
    }
    for (service, properties) in services {
        tool::refuse_option_like("systemd", "service", service)?;
        let force_restart = restart_required(properties, changes);
        match properties.get("enabled") {
            Some(v) => {
                let enabled = is_true(v);
                let (verb, word) = if enabled { ("enable", "enabled") } else { ("disable", "disabled") };
                tracing::debug!("Setting service {service} to {word}");
                let out = systemctl(verb, Some(service))?;
                if !out.ok() {
                    return Err(fail(format!("Could not {verb} service {service}"), &out));
                }
                tracing::info!("{word} service {service}");
            }
            None => tracing::debug!("Not modifying enabled state of service {service}"),
        }
        if force_restart {
            tracing::debug!("Restarting {service} due to change detected in dependency");
            let out = systemctl("daemon-reload", None)?;
            if !out.ok() {
                // [sic] the 2.0 line's spelling.
                return Err(fail(format!("Could not relaod configuration for {service}"), &out));
            }
            let out = systemctl("reload-or-restart", Some(service))?;
            if !out.ok() {
                return Err(fail(format!("Could not reload or restart service {service}"), &out));
            }
            tracing::info!("Restarted {service} successfully");
        } else if let Some(v) = properties.get("ensureRunning") {
            let ensure = is_true(v);
            let running = systemctl("is-active", Some(service))?.ok();
            if ensure && !running {
                tracing::debug!("Starting service {service} as it is not running");
                let out = systemctl("start", Some(service))?;
                if !out.ok() {
                    return Err(fail(format!("Could not start service {service}"), &out));
                }
                tracing::info!("Started {service} successfully");
            } else if !ensure && running {
                tracing::debug!("Stopping service {service} as it is running");
                let out = systemctl("stop", Some(service))?;
                if !out.ok() {
                    return Err(fail(format!("Could not stop service {service}"), &out));
                }
                tracing::info!("Stopped {service} successfully");
            } else {
                tracing::debug!("No need to modify running state of service {service}");
            }
        } else {
            tracing::debug!("Not modifying running state of service {service}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemctl_argv_forms() {
        assert_eq!(argv("enable", Some("nginx")), ["/usr/bin/systemctl", "enable", "nginx"]);
        assert_eq!(argv("is-active", Some("nginx")), ["/usr/bin/systemctl", "is-active", "nginx"]);
        assert_eq!(argv("daemon-reload", None), ["/usr/bin/systemctl", "daemon-reload"]);
        assert_eq!(argv("reload-or-restart", Some("nginx")), ["/usr/bin/systemctl", "reload-or-restart", "nginx"]);
    }
}
