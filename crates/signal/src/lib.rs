//! What `cfn-signal` does once its command line is read (SPEC §12): the status to send
//! (SIG-03), the default unique id (SIG-02), the WaitConditionHandle signal — URL
//! decoding and validation, the JSON body, the HTTP PUT with the generic retry rules
//! (SIG-05..07, SIG-09) — and SignalResource through the CloudFormation client
//! (SIG-08, API-02).
//!
//! Nothing here prints: errors are typed and the binary words them for the user.

mod wait_condition;

pub use cfn_host::fqdn;
pub use wait_condition::{InvalidHandleUrl, SignalError, WaitConditionSignal, handle_url, http_verdict, send};

use cfn_aws::{CloudFormation, Imds, cfn};
use std::fmt;

/// The two signals CloudFormation understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success,
    Failure,
}

impl Status {
    /// SIG-03: a non-zero `--exit-code` means FAILURE; otherwise `--success` decides,
    /// and anything but `true` is FAILURE. So `-e 0 -s false` signals FAILURE, as the
    /// reference does: an explicit `-s false` is never turned into a success.
    pub fn from_options(exit_code: Option<i64>, success: Option<&str>) -> Status {
        if exit_code.is_some_and(|code| code != 0) || success.is_some_and(|s| s != "true") {
            Status::Failure
        } else {
            Status::Success
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "SUCCESS",
            Status::Failure => "FAILURE",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// SIG-02: the instance id when IMDS answers, else the host's fully qualified name.
/// Off EC2 the IMDS client knows after one failed connection that there is no
/// service, so this costs milliseconds, not the reference's minutes.
pub fn default_unique_id(imds: &Imds) -> String {
    match imds.instance_id() {
        Some(id) => id,
        None => fqdn(),
    }
}

/// SIG-08: SignalResource for `logical_id` in `stack` (API-02). The client brings the
/// credentials, endpoint and retry rules every CloudFormation call uses.
pub fn signal_resource(
    client: &CloudFormation,
    stack: &str,
    logical_id: &str,
    unique_id: &str,
    status: Status,
) -> Result<(), cfn::Error> {
    client.signal_resource(stack, logical_id, unique_id, status.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_the_reference() {
        use Status::*;
        let cases = [
            (None, None, Success),
            (None, Some("true"), Success),
            (None, Some("false"), Failure),
            (Some(0), None, Success),
            (Some(0), Some("true"), Success),
            // The reference's behaviour, kept deliberately (see README).
            (Some(0), Some("false"), Failure),
            (Some(1), None, Failure),
            (Some(1), Some("true"), Failure),
            (Some(-1), Some("true"), Failure),
            (Some(255), Some("false"), Failure),
        ];
        for (exit_code, success, expected) in cases {
            assert_eq!(Status::from_options(exit_code, success), expected, "-e {exit_code:?} -s {success:?}");
        }
        assert_eq!(Success.to_string(), "SUCCESS");
        assert_eq!(Failure.as_str(), "FAILURE");
    }

    #[test]
    fn default_id_off_ec2_is_the_host_name() {
        let imds = Imds::new("http://127.0.0.1:1", false, cfn_aws::retry::Policy::IMDS);
        assert_eq!(default_unique_id(&imds), fqdn());
        let disabled = Imds::new("http://127.0.0.1:1", true, cfn_aws::retry::Policy::IMDS);
        assert_eq!(default_unique_id(&disabled), fqdn());
    }
}
