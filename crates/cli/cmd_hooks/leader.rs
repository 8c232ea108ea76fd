//! `cfn-elect-cmd-leader` (CMDT-01, API-05): asks CloudFormation which listener runs a
//! singleton command invocation. Exit 0 when it is `--listener-id`, 5 when another
//! listener leads, 1 on any error. Nothing on stdout.

use super::required;
use crate::{logging, report};
use cfn_aws::Imds;
use cfn_optparse::options;
pub use cfn_optparse::tables::elect_leader as parser;
use cfn_optparse::{Parsed, Parser};
use std::process::ExitCode;
use std::sync::Arc;

/// The exit status when another listener is the leader.
const NOT_LEADER: u8 = 5;

/// Stack, command, invocation and listener, in the reference's order of checking. Every
/// id is required, the listener id too although instance-identity signing leaves it out
/// of the request. (`--region` is not taken from the environment.)
fn election_ids(parser: &Parser, parsed: &Parsed) -> Result<(String, String, String, String), ExitCode> {
    Ok((
        required(parser, parsed, "stack_name", "STACK_NAME", "StackName")?,
        required(parser, parsed, "command_name", "CMD_NAME", "CommandName")?,
        required(parser, parsed, "invocation_id", "INVOCATION_ID", "InvocationId")?,
        required(parser, parsed, "listener_id", "LISTENER_ID", "ListenerId")?,
    ))
}

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let parser = parser(prog);
    let parsed = match report::parse(&parser, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let (stack, command, invocation, listener) = match election_ids(&parser, &parsed) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    logging::init("cfn-init.log", report::level(parsed.flag("verbose")));
    let client = match cfn_aws::cloudformation_client(&options::api_options(&parsed), Arc::new(Imds::from_env())) {
        Ok(client) => client,
        Err(e) => return report::credential_failure(&e),
    };
    match client.elect_command_leader(&stack, &command, &invocation, &listener) {
        Ok(leader) if leader == listener => {
            tracing::info!("Listener {listener} is the leader for command {command} ({invocation})");
            ExitCode::SUCCESS
        }
        Ok(leader) => {
            tracing::info!("Listener {leader} is the leader for command {command} ({invocation}), not {listener}");
            ExitCode::from(NOT_LEADER)
        }
        Err(e) => report::failure(e),
    }
}
