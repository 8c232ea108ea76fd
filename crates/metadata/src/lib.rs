//! The metadata the tools work on: where it comes from (a stack resource through
//! CloudFormation, a local file or standard input) and dotted key paths into it
//! (`cfn-get-metadata -k`, cfn-hup hook paths), and the record of what cfn-init last
//! applied, which cfn-hup uses as a baseline.

pub mod applied;
pub mod keypath;
pub mod source;
