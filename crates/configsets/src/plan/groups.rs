//! Groups a build would create (`groups::apply`'s checks).

use super::{Item, Pending};
use crate::document;
use crate::groups::{groupadd_argv, needs_creating};
use crate::tool::refuse_option_like;

/// Returns the groups a build would create.
pub(super) fn plan(
    entries: &[document::Item<Option<String>>],
    pending: &mut Pending,
    items: &mut Vec<Item>,
) -> Result<Vec<String>, String> {
    let mut created = Vec::new();
    for entry in entries {
        let name = &entry.key;
        let gid = entry.parsed()?;
        if pending.groups.contains(name.as_str()) || !needs_creating(name, gid.as_deref())? {
            continue;
        }
        refuse_option_like("groups", "group name", name)?;
        if let Some(gid) = &gid {
            refuse_option_like("groups", "gid", gid)?;
        }
        let argv = groupadd_argv(name, gid.as_deref());
        items.push(Item::change("groups", format!("create group {name}: {}", argv.join(" "))));
        pending.groups.insert(name.to_string());
        created.push(name.to_string());
    }
    Ok(created)
}
