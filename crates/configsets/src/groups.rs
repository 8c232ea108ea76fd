//! The `groups` section (INIT-GRP-01): groups in name order; an existing group with a
//! different gid than requested is an error; a missing one is created as a system
//! group with `/usr/sbin/groupadd -r [-g <gid>] <name>`.

use crate::document::Item;
use crate::model::kind;
use crate::tool::{self, refuse_option_like};
use cfn_host::users;
use serde_json::Value;

/// A gid or uid as the reference stringified it (`str(value)`); absent, null and empty
/// mean none.
pub fn id_text(
    config: &str,
    section: &str,
    name: &str,
    key: &str,
    value: Option<&Value>,
) -> Result<Option<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => {
            Err(format!("config {config}, {section} {name}: {key} must be a string or a number, not {}", kind(other)))
        }
    }
}

/// The gid a `groups` entry asks for, if any (the entry may be null).
pub fn gid(config: &str, name: &str, attributes: &Value) -> Result<Option<String>, String> {
    let attributes = match attributes {
        Value::Object(map) => Some(map),
        Value::Null => None,
        other => return Err(format!("config {config}, groups {name}: must be an object, not {}", kind(other))),
    };
    id_text(config, "groups", name, "gid", attributes.and_then(|a| a.get("gid")))
}

pub fn groupadd_argv(name: &str, gid: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> = ["/usr/sbin/groupadd", "-r"].map(String::from).into();
    if let Some(gid) = gid {
        argv.extend(["-g".to_string(), gid.to_string()]);
    }
    argv.push(name.to_string());
    argv
}

/// Whether the group must be created: it does not exist. One that exists with another
/// gid than `gid` is an error.
pub fn needs_creating(name: &str, gid: Option<&str>) -> Result<bool, String> {
    let Some(current) = users::group_id(name) else { return Ok(true) };
    if let Some(gid) = gid.filter(|g| *g != current.to_string()) {
        return Err(format!("Group {name} exists with gid {current}, but gid {gid} was requested"));
    }
    tracing::debug!("Group {name} already exists");
    Ok(false)
}

/// Creates the missing groups; returns the names created. An entry's error stops the
/// section when its turn comes.
pub fn apply(entries: &[Item<Option<String>>]) -> Result<Vec<String>, String> {
    let mut created = Vec::new();
    for entry in entries {
        let name = &entry.key;
        let gid = entry.parsed()?;
        if !needs_creating(name, gid.as_deref())? {
            continue;
        }
        refuse_option_like("groups", "group name", name)?;
        if let Some(gid) = &gid {
            refuse_option_like("groups", "gid", gid)?;
        }
        let argv = groupadd_argv(name, gid.as_deref());
        let result = tool::logged(&argv.join(" "), argv, &[])?;
        if !result.ok() {
            tracing::error!("Failed to create group {name}");
            tracing::debug!("Groupadd output: {}", result.text);
            return Err(format!("Failed to create group {name}"));
        }
        tracing::info!("Created group {name} successfully");
        created.push(name.to_string());
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Sections;
    use serde_json::json;

    #[test]
    fn groupadd_forms() {
        assert_eq!(groupadd_argv("web", None), ["/usr/sbin/groupadd", "-r", "web"]);
        assert_eq!(groupadd_argv("web", Some("45")), ["/usr/sbin/groupadd", "-r", "-g", "45", "web"]);
        assert_eq!(id_text("c", "groups", "g", "gid", Some(&json!(45))).unwrap(), Some("45".into()));
        assert_eq!(id_text("c", "groups", "g", "gid", Some(&json!("45"))).unwrap(), Some("45".into()));
        assert_eq!(id_text("c", "groups", "g", "gid", Some(&json!(""))).unwrap(), None);
        assert!(id_text("c", "groups", "g", "gid", Some(&json!([1]))).is_err());
    }

    fn groups(section: Value) -> Vec<Item<Option<String>>> {
        let config = json!({ "groups": section });
        Sections::parse("c", "", config.as_object().unwrap()).groups.entries().to_vec()
    }

    #[test]
    fn existing_group_with_another_gid_fails() {
        assert_eq!(
            apply(&groups(json!({"root": {"gid": "4242"}}))).unwrap_err(),
            "Group root exists with gid 0, but gid 4242 was requested"
        );
        assert_eq!(apply(&groups(json!({"root": {"gid": 0}}))).unwrap(), Vec::<String>::new());
        assert_eq!(
            apply(&groups(json!({"root": {"gid": [1]}}))).unwrap_err(),
            "config c, groups root: gid must be a string or a number, not a list"
        );
    }
}
