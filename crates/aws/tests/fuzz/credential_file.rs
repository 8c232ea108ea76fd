//! The credential file (CRED-02): any bytes read into keys or into one of the
//! reference's refusals, never a panic; a well-formed file gives its keys (the last of
//! each, lines trimmed, other lines ignored); group or other access is refused.

use crate::config;
use cfn_aws::credentials::{CredentialFileError, read_credential_file};
use proptest::prelude::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// Lines of a credential file, odd ones included.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => "[ \t]{0,2}(AWSAccessKeyId|AWSSecretKey|awsaccesskeyid|AWSSecretKey )=[ -~]{0,12}[ \t]{0,2}"
            .prop_map(String::into_bytes),
        2 => "[ -~]{0,20}".prop_map(String::into_bytes),
        1 => "\\PC{0,12}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..16),
    ]
}

fn write(dir: &std::path::Path, text: &[u8], mode: u32) -> std::path::PathBuf {
    let path = dir.join("credentials");
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    path
}

proptest! {
    #![proptest_config(config(512))]

    /// Any bytes give keys or the reference's message, never a panic.
    #[test]
    fn any_bytes_give_keys_or_a_refusal(lines in prop::collection::vec(line(), 0..8), crlf in any::<bool>()) {
        let text = lines.join(if crlf { &b"\r\n"[..] } else { &b"\n"[..] });
        let dir = tempfile::tempdir().unwrap();
        match read_credential_file(&write(dir.path(), &text, 0o600)) {
            Ok(keys) => {
                prop_assert!(keys.session_token.is_none());
                let text = String::from_utf8_lossy(&text);
                let access = format!("AWSAccessKeyId={}", keys.access_key);
                let secret = format!("AWSSecretKey={}", keys.secret_key);
                prop_assert!(text.contains(&access), "{:?} not in {:?}", access, text);
                prop_assert!(text.contains(&secret), "{:?} not in {:?}", secret, text);
            }
            Err(CredentialFileError::MissingKeys) => {}
            Err(e) => prop_assert!(false, "unexpected refusal: {e}"),
        }
    }

    /// A well-formed file gives the last value of each key, whatever else it holds.
    #[test]
    fn well_formed_files_give_their_keys(
        keys in prop::collection::vec(("[A-Z0-9]{16,20}", "[A-Za-z0-9/+=]{1,40}"), 1..4),
        noise in prop::collection::vec("[#;a-z][ -~]{0,20}", 0..4),
        indent in "[ \t]{0,3}",
        crlf in any::<bool>(),
    ) {
        let mut lines = noise.clone();
        for (access, secret) in &keys {
            lines.push(format!("{indent}AWSAccessKeyId={access}{indent}"));
            lines.extend(noise.iter().take(1).cloned());
            lines.push(format!("{indent}AWSSecretKey={secret}"));
        }
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), text.as_bytes(), 0o600);
        let got = read_credential_file(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (access, secret) = keys.last().unwrap();
        prop_assert_eq!(&got.access_key, access);
        prop_assert_eq!(&got.secret_key, secret);
    }

    /// A file group or other can read, write or execute is refused, keys or not.
    #[test]
    fn open_files_are_refused(mode in 0o400u32..0o1000) {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), b"AWSAccessKeyId=AK\nAWSSecretKey=SK\n", mode);
        let result = read_credential_file(&path);
        if mode & 0o077 != 0 {
            prop_assert!(matches!(result, Err(CredentialFileError::TooOpen)), "{:o}: {:?}", mode, result);
        } else {
            prop_assert!(result.is_ok(), "{:o}: {:?}", mode, result.err());
        }
    }
}
