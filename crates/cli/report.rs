//! How tools end: parse outcomes, error lines on stderr and exit codes (SPEC §2, §9.5).

use cfn_aws::CredentialError;
use cfn_optparse::{Outcome, Parsed, Parser};
use std::fmt::Display;
use std::process::ExitCode;
use tracing::Level;

/// Parses the command line; help goes to stdout (exit 0), errors to stderr (exit 2).
pub fn parse(parser: &Parser, args: &[String]) -> Result<Parsed, ExitCode> {
    match parser.parse(args) {
        Outcome::Run(parsed) => Ok(parsed),
        Outcome::Help(text) => {
            print!("{text}");
            Err(ExitCode::SUCCESS)
        }
        Outcome::Error(text) => {
            eprint!("{text}");
            Err(ExitCode::from(2))
        }
    }
}

/// The main log level: INFO, or DEBUG with `-v` (LOG-07).
pub fn level(verbose: bool) -> Level {
    if verbose { Level::DEBUG } else { Level::INFO }
}

/// A failure the tool reports with one message on stderr: exit 1. The message is
/// logged too, so the log tells the story on its own. A URL in it is shown redacted
/// (SEC-02), as in the log.
pub fn failure(message: impl Display) -> ExitCode {
    let message = cfn_aws::http::redact_urls_in(&message.to_string());
    tracing::error!("{message}");
    eprintln!("{message}");
    ExitCode::FAILURE
}

/// `Error: <message>` followed by the full help on stderr, exit 1 — how the reference
/// reports a missing or conflicting option.
pub fn usage_failure(parser: &Parser, message: &str) -> ExitCode {
    eprint!("Error: {message}\n{}", parser.help_text());
    ExitCode::FAILURE
}

/// Credential problems, worded as the reference words them (CRED-02, CRED-07).
pub fn credential_failure(error: &CredentialError) -> ExitCode {
    match error {
        CredentialError::File(reason) => failure(format!("Error retrieving credentials from file:\n\t{reason}")),
        other => failure(other),
    }
}
