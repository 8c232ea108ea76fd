//! An access key pair: what every SigV4 signature is made with, whichever source
//! (options, a file, IMDS, the SDK's providers) it came from.

use std::fmt;

/// An access key pair, with the session token that role credentials carry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
    pub session_token: Option<String>,
}

impl Credentials {
    pub fn new(access_key: &str, secret_key: &str, session_token: Option<String>) -> Self {
        Credentials { access_key: access_key.to_string(), secret_key: secret_key.to_string(), session_token }
    }
}

// Secrets must never reach a log line, not even through `{:?}` (SEC-02).
impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field("session_token", &self.session_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}
