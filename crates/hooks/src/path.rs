//! Update-hook paths (HUP-PATH-01):
//! `Resources.<LogicalId>[.Metadata[.<sub.path>] | .PhysicalResourceId]`.
//!
//! The path is split at its first three dots; the fourth part, a metadata sub-path, is
//! read like `cfn-get-metadata -k` (dots, `\.` escapes). Invalid paths are fatal, with the
//! reference's messages.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The resource's metadata, or the value at a sub-path of it.
    Metadata(Option<String>),
    PhysicalResourceId,
    /// A two-part path: the resource's `LastUpdatedTimestamp`.
    LastUpdated,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookPath {
    /// The path as written (trimmed): part of the state key and of log lines.
    pub text: String,
    pub logical_id: String,
    pub target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error(
        "Unsupported path: paths must be in the form Resources.<LogicalResourceId>(.Metadata|PhysicalResourceId)(.<optional Metadata subkey>). Input: {0}"
    )]
    Form(String),
    #[error("Unsupported path: only changes to Resources are supported (path: {0})")]
    NotResources(String),
    #[error(
        "Unsupported path: only Metadata or PhysicalResourceId can be specified after LogicalResourceId (path: {0})"
    )]
    NotMetadata(String),
}

impl HookPath {
    pub fn parse(path: &str) -> Result<HookPath, PathError> {
        let text = path.trim().to_string();
        let parts: Vec<&str> = text.splitn(4, '.').collect();
        if parts.len() < 2 {
            return Err(PathError::Form(text));
        }
        if !parts[0].eq_ignore_ascii_case("resources") {
            return Err(PathError::NotResources(text));
        }
        let target = match parts.get(2) {
            None => Target::LastUpdated,
            Some(p) if p.eq_ignore_ascii_case("metadata") => Target::Metadata(parts.get(3).map(|s| s.to_string())),
            // As in the reference, anything after PhysicalResourceId is ignored.
            Some(p) if p.eq_ignore_ascii_case("physicalresourceid") => Target::PhysicalResourceId,
            Some(_) => return Err(PathError::NotMetadata(text)),
        };
        Ok(HookPath { logical_id: parts[1].to_string(), target, text })
    }

    /// The suffix of the `CFN_OLD_*`/`CFN_NEW_*` variables (HUP-ACT-01).
    pub fn env_key(&self) -> &'static str {
        match self.target {
            Target::Metadata(_) => "METADATA",
            Target::PhysicalResourceId => "PHYSICAL_RESOURCE_ID",
            Target::LastUpdated => "LAST_UPDATED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let p = HookPath::parse(" Resources.LaunchConfig.Metadata.AWS::CloudFormation::Init ").unwrap();
        assert_eq!(p.text, "Resources.LaunchConfig.Metadata.AWS::CloudFormation::Init");
        assert_eq!(p.logical_id, "LaunchConfig");
        assert_eq!(p.target, Target::Metadata(Some("AWS::CloudFormation::Init".into())));
        assert_eq!(p.env_key(), "METADATA");
        let p = HookPath::parse("resources.A.METADATA.x.y\\.z").unwrap();
        assert_eq!(p.target, Target::Metadata(Some("x.y\\.z".into())));
        assert_eq!(HookPath::parse("RESOURCES.A.Metadata").unwrap().target, Target::Metadata(None));
        let p = HookPath::parse("Resources.A.physicalresourceid.ignored.too").unwrap();
        assert_eq!((p.target.clone(), p.env_key()), (Target::PhysicalResourceId, "PHYSICAL_RESOURCE_ID"));
        let p = HookPath::parse("Resources.A").unwrap();
        assert_eq!((p.logical_id.as_str(), p.target.clone(), p.env_key()), ("A", Target::LastUpdated, "LAST_UPDATED"));
    }

    #[test]
    fn rejected_forms_use_the_reference_messages() {
        assert_eq!(
            HookPath::parse("Resources").unwrap_err().to_string(),
            "Unsupported path: paths must be in the form Resources.<LogicalResourceId>(.Metadata|PhysicalResourceId)(.<optional Metadata subkey>). Input: Resources"
        );
        assert_eq!(
            HookPath::parse("Outputs.X.Metadata").unwrap_err().to_string(),
            "Unsupported path: only changes to Resources are supported (path: Outputs.X.Metadata)"
        );
        assert_eq!(
            HookPath::parse("Resources.X.Properties.Y").unwrap_err().to_string(),
            "Unsupported path: only Metadata or PhysicalResourceId can be specified after LogicalResourceId (path: Resources.X.Properties.Y)"
        );
    }
}
