//! Users a build would create or change (`users::action`).

use super::{Item, Pending};
use crate::document;
use crate::users::{UserAction, UserSpec, action};

/// Returns the users a build would create or change.
pub(super) fn plan(
    entries: &[document::Item<UserSpec>],
    pending: &mut Pending,
    items: &mut Vec<Item>,
) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for entry in entries {
        let name = &entry.key;
        let spec = entry.parsed()?;
        let new_groups: Vec<&String> = spec.groups.iter().filter(|g| pending.groups.contains(g.as_str())).collect();
        let text = if !new_groups.is_empty() {
            // Their gids exist only once the build has created them.
            let groups = new_groups.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(", ");
            let verb = if cfn_host::users::user(name).is_some() { "change" } else { "create" };
            format!("{verb} user {name}, in the groups created above ({groups})")
        } else {
            match action(name, spec)? {
                None => continue,
                Some(UserAction::Add(argv)) => format!("create user {name}: {}", argv.join(" ")),
                Some(UserAction::Modify(argv)) => format!("change user {name}: {}", argv.join(" ")),
            }
        };
        items.push(Item::change("users", text));
        pending.users.insert(name.to_string());
        changed.push(name.to_string());
    }
    Ok(changed)
}
