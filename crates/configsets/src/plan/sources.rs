//! Sources a build would fetch and extract: every one, on every run, as the build
//! counts every target as changed (INIT-SRC-07). Nothing is fetched here.

use super::Item;
use crate::document;

/// Returns the target directories (all of them).
pub(super) fn plan(entries: &[document::Item<String>], items: &mut Vec<Item>) -> Result<Vec<String>, String> {
    let mut targets = Vec::new();
    for entry in entries {
        let target = &entry.key;
        // A location may carry a password or a presigned signature (SEC-02).
        let shown = cfn_aws::http::redact_url(entry.parsed()?);
        items.push(Item::change("sources", format!("fetch {shown} and extract it into {target}")));
        targets.push(target.to_string());
    }
    Ok(targets)
}
