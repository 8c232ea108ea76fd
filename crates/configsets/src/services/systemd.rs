//! `systemd` services (INIT-SVC-05, the 2.0 line's manager): needs
//! `/usr/bin/systemctl`; `systemctl enable|disable <svc>`, `systemctl is-active <svc>`
//! for the running check, `systemctl start|stop <svc>`, and a forced restart as
//! `systemctl daemon-reload` then `systemctl reload-or-restart <svc>`. Every systemctl
//! call goes to the command log.

use super::{Controller, converge};
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

/// systemctl as the 2.0 line calls it.
struct Systemctl;

impl Systemctl {
    /// `systemctl <action> <service>`, failing with `message` and logging `done`.
    fn run(&self, action: &str, service: &str, message: String, done: &str) -> Result<(), String> {
        let out = systemctl(action, Some(service))?;
        if !out.ok() {
            return Err(fail(message, &out));
        }
        tracing::info!("{done}");
        Ok(())
    }
}

impl Controller for Systemctl {
    fn set_enabled(&mut self, service: &str, enabled: bool) -> Result<(), String> {
        let (verb, word) = if enabled { ("enable", "enabled") } else { ("disable", "disabled") };
        tracing::debug!("Setting service {service} to {word}");
        self.run(verb, service, format!("Could not {verb} service {service}"), &format!("{word} service {service}"))
    }
    fn restart(&mut self, service: &str) -> Result<(), String> {
        let out = systemctl("daemon-reload", None)?;
        if !out.ok() {
            // [sic] the 2.0 line's spelling.
            return Err(fail(format!("Could not relaod configuration for {service}"), &out));
        }
        let message = format!("Could not reload or restart service {service}");
        self.run("reload-or-restart", service, message, &format!("Restarted {service} successfully"))
    }
    fn is_running(&mut self, service: &str) -> Result<bool, String> {
        Ok(systemctl("is-active", Some(service))?.ok())
    }
    fn start(&mut self, service: &str) -> Result<(), String> {
        self.run(
            "start",
            service,
            format!("Could not start service {service}"),
            &format!("Started {service} successfully"),
        )
    }
    fn stop(&mut self, service: &str) -> Result<(), String> {
        self.run(
            "stop",
            service,
            format!("Could not stop service {service}"),
            &format!("Stopped {service} successfully"),
        )
    }
}

/// Whether the service is running or enabled, asked without a line in the command log.
pub(crate) fn is_active(service: &str) -> Result<bool, String> {
    ask("is-active", service)
}

pub(crate) fn is_enabled(service: &str) -> Result<Option<bool>, String> {
    ask("is-enabled", service).map(Some)
}

fn ask(action: &str, service: &str) -> Result<bool, String> {
    let a = argv(action, Some(service));
    Ok(tool::query(&a.iter().map(String::as_str).collect::<Vec<_>>())?.ok())
}

pub fn apply(services: &[super::Service<'_>], changes: &ChangeRecord) -> Result<(), String> {
    if services.is_empty() {
        tracing::debug!("No systemd services specified");
        return Ok(());
    }
    if !Path::new(SYSTEMCTL).exists() {
        return Err("SystemD is not available on the instance".into());
    }
    for (service, spec) in services {
        tool::refuse_option_like("systemd", "service", service)?;
        converge(&mut Systemctl, service, spec, changes)?;
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
