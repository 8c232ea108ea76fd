//! Sources a build would fetch and extract: every one, on every run, as the build
//! counts every target as changed (INIT-SRC-07). Nothing is fetched here.

use super::Item;
use crate::model::{self, ModelError};
use serde_json::Value;

/// Returns the target directories (all of them).
pub(super) fn plan(config: &str, entries: &[(&String, &Value)], items: &mut Vec<Item>) -> Result<Vec<String>, String> {
    let mut targets = Vec::new();
    for (target, value) in entries {
        let Value::String(location) = value else {
            let message = format!("must be a string, not {}", model::kind(value));
            return Err(ModelError::at(config, "sources", target, message).0);
        };
        // A location may carry a password or a presigned signature (SEC-02).
        let shown = cfn_aws::http::redact_url(location);
        items.push(Item::change("sources", format!("fetch {shown} and extract it into {target}")));
        targets.push(target.to_string());
    }
    Ok(targets)
}
