//! `cfn-send-cmd-result` (CMDT-02, API-06): returns a command's result to its
//! dispatcher as an SQS message on the result queue, signed with the listener's
//! temporary keys. Silent on success; `Error: Could not send command result: …` and
//! exit 1 when the message could not be sent after the SQS retries (25 tries).

use super::{command_ids, option_or_env, required};
use crate::{logging, report};
use cfn_aws::Credentials;
use cfn_aws::http::HttpClient;
use cfn_aws::sqs::Sqs;
use cfn_hooks::command_result::CommandResult;
use cfn_optparse::options;
pub use cfn_optparse::tables::send_result as parser;
use std::process::ExitCode;
use tracing::Level;

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let parser = parser(prog);
    let parsed = match report::parse(&parser, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let ids = match command_ids(&parser, &parsed) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    let queue_url = match required(&parser, &parsed, "queue_url", "RESULT_QUEUE", "QueueUrl") {
        Ok(url) => url,
        Err(code) => return code,
    };
    let keys = (
        option_or_env(&parsed, "access_key", "RESULT_ACCESS_KEY"),
        option_or_env(&parsed, "secret_key", "RESULT_SECRET_KEY"),
        option_or_env(&parsed, "security_token", "RESULT_SESSION_TOKEN"),
    );
    let (Some(access_key), Some(secret_key), Some(token)) = keys else {
        return report::usage_failure(&parser, "You must specify a token and an access key/secret key pair");
    };
    // LOG-07: always DEBUG, like cfn-signal. The keys are never logged.
    logging::init("cfn-init.log", Level::DEBUG);
    let result = CommandResult {
        success: CommandResult::succeeded(parsed.int("exit_code"), parsed.text("success").as_deref()),
        text: parsed.positionals.join(" "),
        ids,
    };
    tracing::info!(
        "Sending {} result of command {} (invocation {}) from listener {}",
        if result.success { "SUCCESS" } else { "FAILURE" },
        result.ids.command_name,
        result.ids.invocation_id,
        result.ids.listener_id
    );
    // NET-02: --http-proxy/--https-proxy over the environment's proxies.
    let http = HttpClient::new(options::api_options(&parsed).proxies, cfn_aws::api_user_agent());
    let sqs = Sqs::new(Credentials::new(&access_key, &secret_key, Some(token)), http);
    match sqs.send_message(&queue_url, &result.body()) {
        Ok(message_id) => {
            tracing::info!("Command result sent as message {message_id}");
            ExitCode::SUCCESS
        }
        Err(e) => report::failure(format!("Error: Could not send command result: {e}")),
    }
}
