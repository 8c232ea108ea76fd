//! The credentials section: which source the tools would sign with, in their order
//! (`cfn_aws::credentials::choose`, the real chain with its real reads), whether it
//! yields credentials, and for the instance identity and roles whether the instance
//! metadata service answers and gives an IMDSv2 token.
//!
//! Nothing secret is shown: a source, and at most the first four characters of an
//! access key id. IMDS answers are shown only when they have the shape of what they
//! name (an instance id, a role name).

use super::probe::{self, Answer, Failure, Link, Target};
use super::setup::Setup;
use super::{Check, Context};
use cfn_aws::Imds;
use cfn_aws::credentials::{self, CredentialError, CredentialFileError, CredentialOptions, Signer, Source};
use cfn_aws::imds::ImdsError;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The precedence the tools follow, as the checks name it: cfn-init's options, or
/// cfn-hup's configuration (where `role` comes first), then the environment's sources.
fn order(setup: &Setup) -> &'static str {
    match setup.hup {
        Some(_) => {
            "role and credential-file in cfn-hup.conf, AWS_PROFILE, web identity, the container endpoint, \
                    then the instance identity"
        }
        None => {
            "--credential-file, --role, --access-key/--secret-key, AWS_PROFILE, web identity, the container \
                 endpoint, then the instance identity"
        }
    }
}

/// The credentials of one set of options, resolved once per run (the API section signs
/// with what this section found: a second resolution would wait on a hanging source
/// again, with no bound of the run's).
pub struct Attempt {
    /// How long resolving was given.
    limit: Duration,
    /// `None` when it did not end within `limit`, or no time was left to start it.
    outcome: Option<Result<(Resolved, Signer), Unresolved>>,
}

impl Attempt {
    /// What to sign with, or why there is nothing (words after "not asked: ").
    pub fn signer(&self) -> Result<Signer, String> {
        match &self.outcome {
            Some(Ok((_, signer))) => Ok(signer.clone()),
            Some(Err(Unresolved::Chain(e @ CredentialError::WouldRunProcess { .. }))) => Err(e.to_string()),
            Some(Err(Unresolved::Chain(e))) => Err(format!("no credentials ({e})")),
            Some(Err(Unresolved::Identity(e))) => {
                Err(format!("no credentials (the instance identity document cannot be read: {e})"))
            }
            None if self.limit.is_zero() => Err("doctor's run bound was reached".into()),
            None => Err(format!("resolving credentials did not end within {}", probe::seconds(self.limit))),
        }
    }
}

/// The attempts of this run, by the options resolved.
#[derive(Default)]
pub struct Attempts(RefCell<Vec<(String, Arc<Attempt>)>>);

/// The credentials `options` give, resolved at most once per run and within the run's
/// bound. Resolving may call IMDS (its own 1 s connect and 3 s request timeouts), STS or
/// a container endpoint: it runs on a thread of its own, and is given up after its bound
/// (the thread is left to end with the process). A profile's `credential_process` is
/// never run (`refuse_processes`): that is reported instead.
pub fn attempt(ctx: &Context, options: &CredentialOptions) -> Arc<Attempt> {
    let key = attempt_key(options);
    if let Some((_, known)) = ctx.attempts.0.borrow().iter().find(|(k, _)| *k == key) {
        return known.clone();
    }
    let limit = ctx
        .probe_timeout()
        .map(|t| (t * 2).min(ctx.deadline.saturating_duration_since(Instant::now())))
        .unwrap_or_default();
    let outcome = (!limit.is_zero()).then(|| {
        let (send, receive) = std::sync::mpsc::channel();
        let mut options = options.clone();
        options.refuse_processes = true;
        let imds = ctx.imds.clone();
        std::thread::spawn(move || {
            let _ = send.send(resolve(&options, &imds));
        });
        receive.recv_timeout(limit).ok()
    });
    let attempt = Arc::new(Attempt { limit, outcome: outcome.flatten() });
    ctx.attempts.0.borrow_mut().push((key, attempt.clone()));
    attempt
}

/// What makes two sets of options resolve alike (kept in memory only).
fn attempt_key(options: &CredentialOptions) -> String {
    format!(
        "{:?}",
        (
            &options.credential_file,
            &options.role,
            &options.access_key,
            &options.secret_key,
            &options.region,
            &options.proxies.http_proxy,
            &options.proxies.https_proxy,
        )
    )
}

pub fn checks(ctx: &Context) -> Vec<Check> {
    let setup = Setup::of(ctx);
    let attempt = attempt(ctx, &setup.credentials);
    if attempt.limit.is_zero() {
        return vec![Check::skipped("credentials.source", "not checked: doctor's run bound was reached")];
    }
    let mut checks = Vec::new();
    let uses_imds = match &attempt.outcome {
        None => {
            checks.push(Check::failed(
                "credentials.source",
                format!("resolving credentials did not end within {}", probe::seconds(attempt.limit)),
                "see the checks below; a source the environment names (STS, the container endpoint) must answer \
                 within seconds",
            ));
            // A role or the instance identity hangs on IMDS; keys and files do not.
            setup.credentials.credential_file.is_none() && setup.credentials.access_key.is_none()
        }
        Some(Err(Unresolved::Chain(e @ CredentialError::WouldRunProcess { .. }))) => {
            // Doctor runs no program: what it would run is said, not run.
            checks.push(Check::skipped("credentials.source", format!("not checked: {e}")));
            false
        }
        Some(Ok((resolved, _))) => {
            checks.push(Check::ok("credentials.source", describe(&setup, resolved)));
            // A role is read from IMDS unless a credential file comes first.
            let role = setup.credentials.role.is_some() && setup.credentials.credential_file.is_none();
            matches!(resolved, Resolved::InstanceIdentity) || role
        }
        Some(Err(Unresolved::Chain(e))) => {
            checks.push(failure(&setup, e));
            matches!(e, CredentialError::NoCredentials | CredentialError::Role { .. })
        }
        Some(Err(Unresolved::Identity(e))) => {
            checks.push(Check::failed(
                "credentials.source",
                format!("the instance identity would sign, but its document cannot be read: {e}"),
                "see credentials.imds",
            ));
            true
        }
    };
    if uses_imds {
        checks.extend(imds_checks(ctx, &ctx.imds, setup.credentials.role.as_deref()));
    } else {
        let why = "not used: the credentials come from elsewhere";
        checks.push(Check::skipped("credentials.imds", why));
        checks.push(Check::skipped("credentials.imdsv2", why));
    }
    checks
}

/// What the chain gave, without the secret.
enum Resolved {
    /// Keys from `source`; `key` is the start of the access key id.
    Keys {
        source: Origin,
        key: String,
    },
    InstanceIdentity,
}

enum Origin {
    Given,
    Environment(String),
}

/// Why the chain gave nothing to sign with.
enum Unresolved {
    Chain(CredentialError),
    /// The instance identity was chosen, but its document could not be read.
    Identity(ImdsError),
}

fn resolve(options: &CredentialOptions, imds: &Imds) -> Result<(Resolved, Signer), Unresolved> {
    let source = credentials::choose(options, imds).map_err(Unresolved::Chain)?;
    let origin = match &source {
        Source::Provided(provided) => Origin::Environment(provided.source().to_string()),
        Source::Fixed(_) => Origin::Given,
    };
    let signer = source.signer().map_err(Unresolved::Chain)?;
    match &signer {
        Signer::SigV4(keys) => {
            Ok((Resolved::Keys { source: origin, key: keys.access_key.chars().take(4).collect() }, signer))
        }
        Signer::InstanceIdentity => {
            // What signing needs: the identity document and its signature (kept by the
            // run's one IMDS client for the API section's requests).
            imds.identity_authorization().map_err(Unresolved::Identity)?;
            Ok((Resolved::InstanceIdentity, signer))
        }
    }
}

fn describe(setup: &Setup, resolved: &Resolved) -> String {
    let options = &setup.credentials;
    match resolved {
        Resolved::InstanceIdentity => {
            "the instance identity (no access key is configured): requests are signed with the instance's \
             identity document, which IMDS gave"
                .into()
        }
        Resolved::Keys { source, key } => {
            let from = match source {
                Origin::Environment(name) => name.clone(),
                Origin::Given => match (&options.credential_file, &options.role) {
                    (Some(file), _) => {
                        format!("the credential file {} ({})", file.display(), setup.origin("credential-file"))
                    }
                    (None, Some(role)) => {
                        format!("role {role} ({}), from the instance metadata service", setup.origin("role"))
                    }
                    _ if options.access_key.is_some() => "--access-key/--secret-key".into(),
                    _ => "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (CFN_BOOTSTRAP_ENV_CREDENTIALS is set)".into(),
                },
            };
            let key = if key.is_empty() { String::new() } else { format!(" {key}…") };
            format!("keys{key} from {from}")
        }
    }
}

fn failure(setup: &Setup, e: &CredentialError) -> Check {
    let id = "credentials.source";
    let fix = match e {
        CredentialError::NoCredentials => {
            let (file, role) = match setup.hup {
                Some(_) => ("credential-file=FILE", "role=ROLE in cfn-hup.conf"),
                None => ("--credential-file FILE", "--role ROLE"),
            };
            return Check::failed(
                id,
                format!(
                    "no credential source: none is configured ({}), and the instance metadata service does not \
                     answer (not on EC2?)",
                    order(setup)
                ),
                format!(
                    "give {file} (mode 0600) or {role} (an instance profile's role), or AWS_PROFILE, or run on an EC2 instance"
                ),
            );
        }
        CredentialError::File(CredentialFileError::TooOpen) => match &setup.credentials.credential_file {
            Some(file) => format!("chmod 600 {}", file.display()),
            None => "chmod 600 the credential file".into(),
        },
        CredentialError::File(CredentialFileError::MissingKeys) => {
            "write the lines AWSAccessKeyId=… and AWSSecretKey=… in the credential file".into()
        }
        CredentialError::File(_) => "create the credential file, or correct its path".into(),
        CredentialError::Role { role, .. } => format!(
            "check that {role} is the role of the instance profile (aws ec2 describe-iam-instance-profile-associations) \
             and that IMDS answers (below)"
        ),
        CredentialError::Provider { .. } => {
            "check the variables that name this source (AWS_PROFILE, AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, \
             AWS_CONTAINER_CREDENTIALS_*)"
                .into()
        }
        CredentialError::WouldRunProcess { .. } => {
            "doctor runs no program: check the credential_process yourself".into()
        }
    };
    Check::failed(id, e.to_string(), fix)
}

/// What one IMDS request gave.
type Outcome = Result<Answer, Failure>;

/// IMDS reachable, the IMDSv2 token, and the role when one is named. Never through a
/// proxy: IMDS is link-local, as the tools' IMDS client treats it.
fn imds_checks(ctx: &Context, imds: &Imds, role: Option<&str>) -> Vec<Check> {
    let endpoint = cfn_aws::http::redact_url(imds.endpoint());
    if imds.is_disabled() {
        let why = "not checked: AWS_EC2_METADATA_DISABLED turns the instance metadata service off";
        return vec![Check::skipped("credentials.imds", why), Check::skipped("credentials.imdsv2", why)];
    }
    let target = match Target::of_url(imds.endpoint()) {
        Ok(target) => target,
        Err(e) => {
            return vec![Check::failed(
                "credentials.imds",
                format!("AWS_EC2_METADATA_SERVICE_ENDPOINT is not usable: {e}"),
                "set it to a URL like http://169.254.169.254, or unset it",
            )];
        }
    };
    let token_request =
        "PUT /latest/api/token HTTP/1.1\r\nX-aws-ec2-metadata-token-ttl-seconds: 60\r\nContent-Length: 0\r\n";
    let Some(token_outcome) = request(ctx, &target, token_request) else {
        return vec![Check::skipped("credentials.imds", "not checked: doctor's run bound was reached")];
    };
    let token = match &token_outcome {
        // The token goes back in a header: anything but visible ASCII is not a token.
        Ok(answer) if answer.status == 200 => Some(String::from_utf8_lossy(&answer.body).trim().to_string())
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic())),
        _ => None,
    };
    let header = token.as_ref().map(|t| format!("X-aws-ec2-metadata-token: {t}\r\n")).unwrap_or_default();
    let get = |path: &str| request(ctx, &target, &format!("GET {path} HTTP/1.1\r\n{header}"));
    let instance = get("/latest/meta-data/instance-id");

    let mut checks = Vec::new();
    let instance_id = match &instance {
        Some(Ok(answer)) if answer.status == 200 => {
            let id = String::from_utf8_lossy(&answer.body).trim().to_string();
            let id = is_instance_id(&id).then_some(id);
            let shown = id.as_deref().map(|i| format!(" (instance {i})")).unwrap_or_default();
            checks.push(Check::ok(
                "credentials.imds",
                format!("the instance metadata service answers at {endpoint}{shown}"),
            ));
            id
        }
        Some(Ok(answer)) if answer.status == 401 && token.is_none() => {
            checks.push(Check::failed(
                "credentials.imds",
                format!("the instance metadata service at {endpoint} requires an IMDSv2 token, and none was obtained"),
                "see credentials.imdsv2",
            ));
            None
        }
        Some(Ok(answer)) => {
            checks.push(Check::failed(
                "credentials.imds",
                format!(
                    "the instance metadata service at {endpoint} answered HTTP {} for the instance id",
                    answer.status
                ),
                "check for a proxy or firewall between this host and 169.254.169.254",
            ));
            None
        }
        Some(Err(failure)) => {
            let fix = if failure.timed_out {
                "check the instance's metadata options (aws ec2 describe-instances: MetadataOptions) and any firewall \
                 on 169.254.169.254"
            } else {
                "on EC2 check that the metadata service is enabled (http-endpoint) and not blocked; off EC2 configure \
                 credentials instead (see credentials.source)"
            };
            checks.push(Check::failed(
                "credentials.imds",
                format!("the instance metadata service at {endpoint} does not answer: {}", failure.message),
                fix,
            ));
            None
        }
        None => {
            checks.push(Check::skipped("credentials.imds", "not checked: doctor's run bound was reached"));
            None
        }
    };
    let answered = matches!(instance, Some(Ok(_)));
    checks.push(token_check(&token_outcome, answered, instance_id.as_deref()));
    if let (Some(role), true) = (role, answered) {
        checks.push(role_check(role, get("/latest/meta-data/iam/security-credentials/")));
    }
    checks
}

/// The IMDSv2 token's check. A token request that times out while plain requests are
/// answered is the hop limit: the answer to the PUT is sent with an IP TTL of the
/// instance's `http-put-response-hop-limit`, 1 by default on older set-ups, and a
/// container's network namespace is one hop further.
fn token_check(outcome: &Outcome, instance_answered: bool, instance_id: Option<&str>) -> Check {
    let id = "credentials.imdsv2";
    let hop_fix = format!(
        "raise the hop limit: aws ec2 modify-instance-metadata-options --instance-id {} --http-put-response-hop-limit 2",
        instance_id.unwrap_or("ID")
    );
    match outcome {
        Ok(answer) if answer.status == 200 => Check::ok(id, "an IMDSv2 session token was obtained"),
        Ok(answer) => Check::warning(
            id,
            format!("the IMDSv2 token request was refused (HTTP {}); the tools fall back to IMDSv1", answer.status),
            "allow IMDSv2 on the instance, and check that no proxy or firewall answers for 169.254.169.254",
        ),
        Err(failure) if failure.timed_out && instance_answered => Check::warning(
            id,
            format!(
                "the IMDSv2 token request (PUT /latest/api/token) {} while a plain GET was answered: the instance's \
                 metadata hop limit is probably 1 (typical inside a container); each tool waits for it, then uses IMDSv1",
                failure.message.trim_start_matches("the token request ")
            ),
            hop_fix,
        ),
        Err(failure) if failure.timed_out => Check::failed(
            id,
            format!(
                "the IMDSv2 token request (PUT /latest/api/token) {}: if this runs in a container, the instance's \
                 metadata hop limit is probably 1",
                failure.message.trim_start_matches("the token request ")
            ),
            hop_fix,
        ),
        Err(_) => Check::skipped(id, "not checked: the instance metadata service does not answer (credentials.imds)"),
    }
}

fn role_check(role: &str, listing: Option<Outcome>) -> Check {
    let id = "credentials.role";
    match listing {
        Some(Ok(answer)) if answer.status == 200 => {
            let text = String::from_utf8_lossy(&answer.body).into_owned();
            let roles: Vec<&str> = text.lines().map(str::trim).filter(|r| is_role_name(r)).collect();
            if roles.contains(&role) {
                Check::ok(id, format!("{role} is the instance profile's role"))
            } else if roles.is_empty() {
                Check::failed(
                    id,
                    "the instance has no instance profile role",
                    "attach an instance profile with the role",
                )
            } else {
                Check::failed(
                    id,
                    format!("{role} is not the instance profile's role ({})", roles.join(", ")),
                    format!("set the role to {}", roles[0]),
                )
            }
        }
        Some(Ok(answer)) if answer.status == 404 => {
            Check::failed(id, "the instance has no instance profile role", "attach an instance profile with the role")
        }
        Some(Ok(answer)) => {
            Check::failed(id, format!("IMDS answered HTTP {} for the roles", answer.status), "see credentials.imds")
        }
        Some(Err(failure)) => {
            Check::failed(id, format!("the roles could not be read: {}", failure.message), "see credentials.imds")
        }
        None => Check::skipped(id, "not checked: doctor's run bound was reached"),
    }
}

/// One request to IMDS: `head` is the request line and its own headers. `None` when the
/// run's bound left no time.
fn request(ctx: &Context, target: &Target, head: &str) -> Option<Outcome> {
    let limit = ctx.probe_timeout()?;
    let deadline = Instant::now() + limit;
    let what = if head.starts_with("PUT") { "the token request" } else { "the request" };
    Some((|| {
        let addresses = probe::resolve(&target.host, target.port, limit)?;
        let mut link = Link::plain(probe::connect(&addresses, deadline, limit)?)?;
        let request = format!("{head}Host: {}\r\nConnection: close\r\n\r\n", target.authority());
        probe::exchange(&mut link, request.as_bytes(), deadline, limit, what)
    })())
}

/// `i-` and 8 or 17 hex digits: the only instance id shown.
fn is_instance_id(text: &str) -> bool {
    text.strip_prefix("i-")
        .is_some_and(|hex| (8..=17).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// IAM's role name characters, at most 64.
fn is_role_name(text: &str) -> bool {
    (1..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_imds_answers_are_shown() {
        assert!(is_instance_id("i-0123456789abcdef0"));
        assert!(is_instance_id("i-01234567"));
        assert!(!is_instance_id("i-0123\x1b[31m"));
        assert!(!is_instance_id("AKIDSECRET"));
        assert!(is_role_name("my-role_1.a@b"));
        assert!(!is_role_name("role with space"));
        assert!(!is_role_name(&"r".repeat(65)));
    }

    #[test]
    fn a_token_timeout_while_gets_work_names_the_hop_limit() {
        let timed_out = Err(Failure { message: "the token request timed out after 3 s".into(), timed_out: true });
        let check = token_check(&timed_out, true, Some("i-0123456789abcdef0"));
        assert_eq!(check.verdict, super::super::Verdict::Warning);
        assert!(check.found.contains("timed out after 3 s while a plain GET was answered"), "{}", check.found);
        assert!(check.found.contains("hop limit is probably 1"), "{}", check.found);
        assert_eq!(
            check.fix.as_deref(),
            Some(
                "raise the hop limit: aws ec2 modify-instance-metadata-options --instance-id i-0123456789abcdef0 \
                 --http-put-response-hop-limit 2"
            )
        );
        assert_eq!(token_check(&timed_out, false, None).verdict, super::super::Verdict::Failed);
    }
}
