//! What a build needs from the outside world, given by the binary: where downloads
//! come from (the sections that fetch read it; the engine only passes it on).

use std::fs::File;

/// Where downloads come from: `files` `source` URLs (and later `sources` archives),
/// with the AWS::CloudFormation::Authentication rules applied by the implementation.
pub trait Fetch {
    /// Writes the body of `url` into `dest` (from its start). `authentication` names
    /// the block a file asked for. The error is the reason only.
    fn fetch(&self, url: &str, authentication: Option<&str>, dest: &mut File) -> Result<Fetched, String>;

    /// Called once the build has logged its first lines (`Starting build`, the reboot
    /// trigger): where the reference reads AWS::CloudFormation::Authentication, so a
    /// fetcher that reads it here logs its warnings in the reference's place (§8.3).
    fn start(&self) {}
}

/// What a download went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Credentials went with one of its requests: an authentication block, named by the
    /// file or chosen by default (`uris`, `buckets`), static keys or a role's.
    pub with_credentials: bool,
}

/// What the build needs from the outside world.
pub struct Environment<'a> {
    pub fetch: &'a dyn Fetch,
}
