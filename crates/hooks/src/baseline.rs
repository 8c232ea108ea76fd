//! A first baseline from cfn-init (issue 13, item 16). A hook with no stored state would
//! take whatever the resource holds at its first completed pass as its baseline, so an
//! update that lands before that pass — typically while the first passes skip a
//! resource still waiting for its signal (HUP-DET-02) — never fires. The metadata
//! cfn-init last ran with is what the instance was built from: compared against it, such
//! an update fires once.
//!
//! `metadata.json` itself does not say which resource it came from; cfn-init's record
//! beside it does (`cfn_metadata::applied`). The copy is used only when that record
//! names this stack (by name or ARN), this region and the hook's logical id: a copy
//! without a matching record is not guessed at, and the hook starts as before.

use crate::config::Hook;
use crate::detect;
use crate::path::Target;
use crate::state::StateValue;
use cfn_metadata::applied::{self, Applied, AppliedError};
use std::cell::OnceCell;
use std::path::PathBuf;

/// cfn-init's copy, read at most once per pass and only when a hook needs it.
pub struct InitBaseline {
    data: PathBuf,
    stack: String,
    region: String,
    loaded: OnceCell<Option<Applied>>,
}

impl InitBaseline {
    /// cfn-init's copy in `<lib>/cfn-init/data`, for hooks on `stack` in `region`.
    pub fn new(stack: &str, region: &str) -> InitBaseline {
        InitBaseline::in_dir(cfn_host::paths::lib_dir().join("cfn-init/data"), stack, region)
    }

    pub fn in_dir(data: PathBuf, stack: &str, region: &str) -> InitBaseline {
        InitBaseline { data, stack: stack.to_string(), region: region.to_string(), loaded: OnceCell::new() }
    }

    fn applied(&self) -> Option<&Applied> {
        self.loaded
            .get_or_init(|| match applied::read(&self.data) {
                Ok(applied) => Some(applied),
                Err(AppliedError::Missing(_)) => None,
                Err(e) => {
                    tracing::debug!("No baseline from cfn-init: {e}");
                    None
                }
            })
            .as_ref()
    }

    /// The value at `hook`'s path in the metadata cfn-init last applied, when the path is
    /// in the metadata of the resource cfn-init read it from. `None` when there is no
    /// such copy, when it belongs to another resource, or when it has nothing there.
    pub fn value(&self, hook: &Hook) -> Option<StateValue> {
        let Target::Metadata(sub) = &hook.path.target else {
            return None;
        };
        let applied = self.applied()?;
        if !applied.origin.is(&self.stack, &self.region, &hook.path.logical_id) {
            tracing::debug!(
                "cfn-init last read the metadata of {} in {}; hook {} watches {}",
                applied.origin.logical_id,
                applied.origin.stack,
                hook.name,
                hook.path.logical_id
            );
            return None;
        }
        detect::metadata_value(&applied.metadata, sub.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::HookPath;
    use applied::Origin;
    use serde_json::json;

    fn hook(path: &str) -> Hook {
        Hook {
            name: "h".into(),
            triggers: vec!["post.update".into()],
            path: HookPath::parse(path).unwrap(),
            action: "true".into(),
            runas: None,
        }
    }

    #[test]
    fn only_the_resource_cfn_init_read_and_only_its_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_path_buf();
        let absent = InitBaseline::in_dir(data.clone(), "s", "us-east-1");
        assert_eq!(absent.value(&hook("Resources.A.Metadata")), None, "no metadata.json");

        let text = cfn_python::json::to_pretty(&json!({"x": {"y": 1}}));
        std::fs::write(data.join(applied::METADATA_FILE), &text).unwrap();
        let origin = Origin { stack: "s".into(), region: "us-east-1".into(), logical_id: "A".into() };
        applied::record(&data, Some(&origin), &text).unwrap();
        let base = InitBaseline::in_dir(data.clone(), "s", "us-east-1");
        assert_eq!(base.value(&hook("Resources.A.Metadata")), Some(StateValue::Json(json!({"x": {"y": 1}}))));
        assert_eq!(base.value(&hook("Resources.A.Metadata.x.y")), Some(StateValue::Json(json!(1))));
        assert_eq!(base.value(&hook("Resources.A.Metadata.x.z")), None);
        assert_eq!(base.value(&hook("Resources.B.Metadata")), None, "another resource");
        assert_eq!(base.value(&hook("Resources.A.PhysicalResourceId")), None, "not in the metadata");
        assert_eq!(base.value(&hook("Resources.A")), None, "not in the metadata");
        let other_stack = InitBaseline::in_dir(data.clone(), "t", "us-east-1");
        assert_eq!(other_stack.value(&hook("Resources.A.Metadata")), None);
        let other_region = InitBaseline::in_dir(data.clone(), "s", "eu-west-1");
        assert_eq!(other_region.value(&hook("Resources.A.Metadata")), None);

        // Read once per pass: a copy replaced during the pass is seen by the next one.
        std::fs::remove_file(data.join(applied::METADATA_FILE)).unwrap();
        assert!(base.value(&hook("Resources.A.Metadata")).is_some());
        assert_eq!(InitBaseline::in_dir(data, "s", "us-east-1").value(&hook("Resources.A.Metadata")), None);
    }
}
