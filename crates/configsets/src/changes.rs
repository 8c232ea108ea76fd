//! What one config changed (INIT-CS-08): `services` of the same config restart a
//! service when anything it names is in here (INIT-SVC-03).

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ChangeRecord {
    /// Package manager → names installed or changed.
    pub packages: BTreeMap<String, Vec<String>>,
    pub groups: Vec<String>,
    pub users: Vec<String>,
    /// Target directories of `sources`.
    pub sources: Vec<String>,
    /// Paths written by `files`.
    pub files: Vec<String>,
    /// Names of commands that ran.
    pub commands: Vec<String>,
}
