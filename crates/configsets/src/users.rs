//! The `users` section (INIT-USR-01, INIT-USR-02): users in name order. A missing user
//! is created with `/usr/sbin/useradd -M -r --shell /sbin/nologin [-d <home>] [-u
//! <uid>] [-G <gids>] <name>` (a system user without a home directory, by design). An
//! existing user must have the requested uid; its supplementary groups (`usermod -G`,
//! which replaces them) and home (`usermod -d`, not moved) change only when they differ.

use crate::document::Item;
use crate::model::kind;
use crate::tool::{self, refuse_option_like};
use cfn_host::users;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// What one entry asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserSpec {
    pub uid: Option<String>,
    pub groups: Vec<String>,
    pub home: Option<String>,
}

pub fn user_spec(config: &str, name: &str, value: &Value) -> Result<UserSpec, String> {
    let empty = Map::new();
    let attributes = match value {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => return Err(format!("config {config}, users {name}: must be an object, not {}", kind(other))),
    };
    let uid = crate::groups::id_text(config, "users", name, "uid", attributes.get("uid"))?;
    let groups = match attributes.get("groups") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|g| {
                g.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("config {config}, users {name}: a group must be a string, not {}", kind(g)))
            })
            .collect::<Result<_, _>>()?,
        Some(Value::String(s)) if s.is_empty() => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(other) => {
            return Err(format!("config {config}, users {name}: groups must be a list, not {}", kind(other)));
        }
    };
    let home = match attributes.get("homeDir") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(format!("config {config}, users {name}: homeDir must be a string, not {}", kind(other)));
        }
    };
    Ok(UserSpec { uid, groups, home })
}

pub fn useradd_argv(name: &str, home: Option<&str>, uid: Option<&str>, gids: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = ["/usr/sbin/useradd", "-M", "-r", "--shell", "/sbin/nologin"].map(String::from).into();
    if let Some(home) = home {
        argv.extend(["-d".to_string(), home.to_string()]);
    }
    if let Some(uid) = uid {
        argv.extend(["-u".to_string(), uid.to_string()]);
    }
    if !gids.is_empty() {
        argv.extend(["-G".to_string(), gids.join(",")]);
    }
    argv.push(name.to_string());
    argv
}

/// `usermod` arguments for what differs, or `None` when nothing does.
pub fn usermod_argv(name: &str, gids: Option<&[String]>, home: Option<&str>) -> Option<Vec<String>> {
    let mut argv = vec!["/usr/sbin/usermod".to_string()];
    if let Some(gids) = gids {
        argv.extend(["-G".to_string(), gids.join(",")]);
    }
    if let Some(home) = home {
        argv.extend(["-d".to_string(), home.to_string()]);
    }
    if argv.len() == 1 {
        return None;
    }
    argv.push(name.to_string());
    Some(argv)
}

/// Group names to gids, in order (`<g> is not a valid group name`).
fn gids(groups: &[String]) -> Result<Vec<String>, String> {
    groups
        .iter()
        .map(|g| users::group_id(g).map(|id| id.to_string()).ok_or_else(|| format!("{g} is not a valid group name")))
        .collect()
}

fn run(argv: Vec<String>, failure: String, label: &str) -> Result<(), String> {
    let result = tool::logged(&argv.join(" "), argv, &[])?;
    if !result.ok() {
        tracing::error!("{failure}");
        tracing::debug!("{label} output: {}", result.text);
        return Err(failure);
    }
    Ok(())
}

/// What a user entry needs: the `useradd` or `usermod` to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserAction {
    Add(Vec<String>),
    Modify(Vec<String>),
}

/// What `spec` needs done to user `name`, or `None` when the user is as asked. An
/// existing user with another uid than asked is an error.
pub fn action(name: &str, spec: &UserSpec) -> Result<Option<UserAction>, String> {
    let Some(current) = users::user(name) else {
        let gids = gids(&spec.groups)?;
        refuse_option_like("users", "user name", name)?;
        for value in spec.uid.iter().chain(spec.home.iter()) {
            refuse_option_like("users", "attribute", value)?;
        }
        return Ok(Some(UserAction::Add(useradd_argv(name, spec.home.as_deref(), spec.uid.as_deref(), &gids))));
    };
    if let Some(uid) = spec.uid.as_deref().filter(|u| *u != current.uid.to_string()) {
        return Err(format!("User {name} exists with uid {}, but uid {uid} was requested", current.uid));
    }
    if spec.home.is_none() && spec.groups.is_empty() {
        tracing::info!("No homedir or groups specified; not modifying {name}");
        return Ok(None);
    }
    let mut new_gids = None;
    if !spec.groups.is_empty() {
        let wanted = gids(&spec.groups)?;
        let members: BTreeSet<String> = users::member_gids(name).iter().map(u32::to_string).collect();
        if wanted.iter().cloned().collect::<BTreeSet<_>>() != members {
            new_gids = Some(wanted);
        } else {
            tracing::debug!("Groups have not changed for {name}");
        }
    }
    let mut new_home = None;
    if let Some(home) = &spec.home {
        if current.home.as_os_str() != home.as_str() {
            refuse_option_like("users", "homeDir", home)?;
            new_home = Some(home.as_str());
        } else {
            tracing::debug!("Homedir has not changed for {name}");
        }
    }
    let action = usermod_argv(name, new_gids.as_deref(), new_home).map(UserAction::Modify);
    if action.is_none() {
        tracing::debug!("User {name} does not need modification");
    }
    Ok(action)
}

/// Creates or modifies the users; returns the names created or modified. An entry's
/// error stops the section when its turn comes.
pub fn apply(entries: &[Item<UserSpec>]) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for entry in entries {
        let name = &entry.key;
        match action(name, entry.parsed()?)? {
            None => continue,
            Some(UserAction::Modify(argv)) => {
                run(argv, format!("Failed to modify user {name}"), "Usermod")?;
                tracing::info!("Modified user {name} successfully");
            }
            Some(UserAction::Add(argv)) => {
                run(argv, format!("Failed to add user {name}"), "Useradd")?;
                tracing::info!("Added user {name} successfully");
            }
        }
        changed.push(name.to_string());
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Sections;
    use serde_json::json;

    #[test]
    fn useradd_and_usermod_forms() {
        assert_eq!(
            useradd_argv("app", None, None, &[]),
            ["/usr/sbin/useradd", "-M", "-r", "--shell", "/sbin/nologin", "app"]
        );
        assert_eq!(
            useradd_argv("app", Some("/srv/app"), Some("990"), &["10".into(), "20".into()]),
            [
                "/usr/sbin/useradd",
                "-M",
                "-r",
                "--shell",
                "/sbin/nologin",
                "-d",
                "/srv/app",
                "-u",
                "990",
                "-G",
                "10,20",
                "app"
            ]
        );
        assert_eq!(usermod_argv("app", None, None), None);
        assert_eq!(
            usermod_argv("app", Some(&["10".into()]), Some("/h")).unwrap(),
            ["/usr/sbin/usermod", "-G", "10", "-d", "/h", "app"]
        );
    }

    #[test]
    fn specs_and_errors() {
        let s = user_spec("c", "u", &json!({"uid": 990, "groups": ["a", "b"], "homeDir": "/h"})).unwrap();
        assert_eq!(
            s,
            UserSpec { uid: Some("990".into()), groups: vec!["a".into(), "b".into()], home: Some("/h".into()) }
        );
        assert!(user_spec("c", "u", &json!({"groups": [1]})).is_err());
        assert_eq!(
            apply(&users(json!({"root": {"uid": "4242"}}))).unwrap_err(),
            "User root exists with uid 0, but uid 4242 was requested"
        );
        assert_eq!(apply(&users(json!({"root": {"uid": 0}}))).unwrap(), Vec::<String>::new());
        assert_eq!(
            apply(&users(json!({"root": {"groups": ["no-such-group-here"]}}))).unwrap_err(),
            "no-such-group-here is not a valid group name"
        );
        assert_eq!(
            apply(&users(json!({"root": {"homeDir": 1}}))).unwrap_err(),
            "config c, users root: homeDir must be a string, not a number"
        );
    }

    fn users(section: Value) -> Vec<Item<UserSpec>> {
        let config = json!({ "users": section });
        Sections::parse("c", "", config.as_object().unwrap()).users.entries().to_vec()
    }
}
