//! The API and the hooks' paths against the stack as it is now: one DescribeStackResource
//! per resource (cached for the run: cfn-init's check asks for the same one), with the
//! credentials cfn-hup (its `[main]`) or cfn-init (the command line) would use, its
//! errors mapped to what to do; then each update hook's path in words — a resource
//! that is not in the stack, a key that does not exist, a stored value that already
//! equals the stack's.

use super::{Check, Context, Verdict, credentials, hup_config, setup};
use cfn_aws::cfn::Error;
use cfn_aws::http::HttpClient;
use cfn_aws::retry::Policy;
use cfn_aws::{CloudFormation, ProxyOptions, StackResourceDetail};
use cfn_hooks::config::MainConfig;
use cfn_hooks::detect;
use cfn_hooks::path::Target;
use cfn_hooks::{Hook, MetadataDb};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// One try: doctor reports what it finds; a retry would only stretch the run.
const ONE_TRY: Policy = Policy { max_tries: 1, throttled_budget: Duration::ZERO, sleep: std::thread::sleep };

/// Whose credentials and endpoint a call uses.
#[derive(Clone)]
pub enum Caller {
    /// cfn-hup's, from its `[main]`.
    Hup(Box<MainConfig>),
    /// cfn-init's: the command line, in `region`.
    CommandLine { region: String },
}

/// What DescribeStackResource said about one resource.
#[derive(Clone)]
pub enum Described {
    Found(Box<StackResourceDetail>),
    /// The stack exists and has no such resource.
    NoResource(String),
    /// No answer to judge the resource by: why, as a check's verdict, found and fix.
    Failed {
        verdict: Verdict,
        found: String,
        fix: String,
    },
}

/// The answers of this run, by stack, region and resource: at most one call each.
#[derive(Default)]
pub struct Cache(RefCell<HashMap<(String, String, String), Described>>);

/// The resource `logical_id` of `stack`, asked once per run.
pub fn describe(ctx: &Context, stack: &str, logical_id: &str, caller: &Caller) -> Described {
    let region = match caller {
        Caller::Hup(main) => main.region.clone(),
        Caller::CommandLine { region } => region.clone(),
    };
    let key = (stack.to_string(), region, logical_id.to_string());
    if let Some(known) = ctx.described.0.borrow().get(&key) {
        return known.clone();
    }
    let described = call(ctx, stack, logical_id, caller);
    ctx.described.0.borrow_mut().insert(key, described.clone());
    described
}

fn call(ctx: &Context, stack: &str, logical_id: &str, caller: &Caller) -> Described {
    let out_of_time = || Described::Failed {
        verdict: Verdict::Skipped,
        found: "not asked: the run's time bound was reached".into(),
        fix: String::new(),
    };
    if ctx.probe_timeout().is_none() {
        return out_of_time();
    }
    // The credentials as the credentials section resolved them (once, within the run's
    // bound), and the endpoint and proxies the caller would use.
    let (options, region, url, proxies) = match caller {
        Caller::Hup(main) => (
            setup::hup_credentials(main, &main.region),
            main.region.clone(),
            main.url.clone(),
            // cfn-hup's proxies come from the environment.
            ProxyOptions::default(),
        ),
        Caller::CommandLine { region } => {
            let mut options = ctx.api.credentials.clone();
            options.region = Some(region.clone());
            (options, region.clone(), ctx.api.url.clone(), ctx.api.proxies.clone())
        }
    };
    let signer = match credentials::attempt(ctx, &options).signer() {
        Ok(signer) => signer,
        Err(why) => {
            return Described::Failed {
                verdict: Verdict::Skipped,
                found: format!("not asked: {why}; see the credentials checks"),
                fix: String::new(),
            };
        }
    };
    let Some(limit) = ctx.probe_timeout() else {
        return out_of_time();
    };
    let http = HttpClient::new(proxies, cfn_aws::api_user_agent()).with_attempt_timeout(limit);
    let endpoint = cfn_aws::endpoint::cloudformation_url(&region, url.as_deref());
    let client = CloudFormation::new(endpoint, &region, signer, Arc::new(http), ctx.imds.clone()).with_retry(ONE_TRY);
    match client.describe_stack_resource(stack, logical_id) {
        Ok(detail) => Described::Found(Box::new(detail)),
        Err(e) => mapped(&e, stack, logical_id, client.endpoint()),
    }
}

/// An API error as what to do about it.
fn mapped(error: &Error, stack: &str, logical_id: &str, endpoint: &str) -> Described {
    let failed = |found: String, fix: &str| Described::Failed { verdict: Verdict::Failed, found, fix: fix.to_string() };
    let Error::Remote { status, code, message, .. } = error else {
        return match error {
            Error::Transport { .. } => {
                failed(error.to_string(), "see the network checks (proxy, DNS, connection, TLS)")
            }
            Error::Identity(_) => failed(error.to_string(), "see the credentials checks (instance metadata)"),
            _ => failed(error.to_string(), "run again; if it persists, report it with this line"),
        };
    };
    let said = format!("{code}: {message}");
    if *status == 407 {
        return failed(
            "the proxy asks for a user and password (407 Proxy Authentication Required): the call never reached CloudFormation".into(),
            "give the proxy's user and password in the proxy setting (http://user:password@host:port); see the network checks",
        );
    }
    match code.as_str() {
        "AccessDenied" | "AccessDeniedException" => failed(
            format!("{said} (the credentials may not call cloudformation:DescribeStackResource)"),
            &format!(
                "allow cloudformation:DescribeStackResource on stack {stack} to the role or user whose credentials are used"
            ),
        ),
        "ExpiredToken" | "ExpiredTokenException" | "RequestExpired" => failed(
            format!("{said} (the credentials have expired)"),
            "renew them: new keys or session token, or an instance profile whose credentials refresh",
        ),
        "InvalidClientTokenId" | "UnrecognizedClientException" | "InvalidAccessKeyId" => failed(
            format!("{said} (the access key is not known to AWS)"),
            "correct the access key (credential file, options or role); a deleted key must be replaced",
        ),
        "SignatureDoesNotMatch" => failed(
            format!("{said} (the secret key is wrong, or the clock is off)"),
            "check the secret key, and the clock (see the clock check: SigV4 allows 5 minutes)",
        ),
        "Throttling" | "ThrottlingException" => Described::Failed {
            verdict: Verdict::Warning,
            found: format!("{said} (throttled)"),
            fix: "wait a few minutes and run doctor again; every caller of the account shares its rate".into(),
        },
        _ if *status == 429 || *status == 503 => Described::Failed {
            verdict: Verdict::Warning,
            found: format!("{said} (the service is busy)"),
            fix: "wait a few minutes and run doctor again".into(),
        },
        "ValidationError" if message.contains(&format!("Resource {logical_id} does not exist")) => {
            Described::NoResource(said)
        }
        "ValidationError" if message.contains("does not exist") => failed(
            format!("{said} (at {})", cfn_aws::http::redact_url(endpoint)),
            "correct the stack name or the region (cfn-hup.conf, or --stack and --region)",
        ),
        _ => failed(said, "read the error above; run doctor again once it is corrected"),
    }
}

/// The check of one DescribeStackResource.
fn described_check(id: String, stack: &str, logical_id: &str, described: &Described) -> Check {
    match described {
        Described::Found(detail) => {
            let found = format!("{logical_id} in stack {stack}: {}, {}", detail.resource_type, detail.resource_status);
            match judged_status(&detail.resource_status, stack) {
                Some((verdict, why, fix)) => Check { id, verdict, found: format!("{found}: {why}"), fix: Some(fix) },
                None => Check::ok(id, found),
            }
        }
        Described::NoResource(said) => Check::failed(
            id,
            said.clone(),
            format!("correct the logical resource id, or add {logical_id} to the stack's template"),
        ),
        Described::Failed { verdict: Verdict::Skipped, found, .. } => Check::skipped(id, found.clone()),
        Described::Failed { verdict, found, fix } => {
            Check { id, verdict: *verdict, found: found.clone(), fix: Some(fix.clone()) }
        }
    }
}

/// What a resource's status means for cfn-hup and cfn-init (issue 30: a deleted stack
/// passed as ok): deleted or being deleted is a failure, a failed or rolled-back change a
/// warning; `None` when the status is a settled or ongoing change that is fine.
fn judged_status(status: &str, stack: &str) -> Option<(Verdict, String, String)> {
    if status.starts_with("DELETE_") {
        return Some((
            Verdict::Failed,
            "the resource is deleted or being deleted: its metadata will not change again".into(),
            format!(
                "if stack {stack} was replaced, set stack in cfn-hup.conf (or --stack) to the new one; otherwise stop cfn-hup on this instance"
            ),
        ));
    }
    if status.contains("ROLLBACK") || status.ends_with("_FAILED") {
        return Some((
            Verdict::Warning,
            "the last change to it failed or was rolled back: its metadata is the previous template's".into(),
            format!("read why in the stack's events: aws cloudformation describe-stack-events --stack-name {stack}"),
        ));
    }
    None
}

pub fn checks(ctx: &Context) -> Vec<Check> {
    let mut checks = Vec::new();
    let config = hup_config::config(ctx);
    if let Some(config) = &config {
        let caller = Caller::Hup(Box::new(config.main.clone()));
        let stack = &config.main.stack;
        let mut resources: Vec<&str> = config.hooks.iter().map(|h| h.path.logical_id.as_str()).collect();
        resources.dedup();
        resources.sort();
        resources.dedup();
        for logical_id in &resources {
            let described = describe(ctx, stack, logical_id, &caller);
            checks.push(described_check(format!("api.describe:{logical_id}"), stack, logical_id, &described));
        }
        let db = MetadataDb::load(&MetadataDb::default_path());
        for hook in &config.hooks {
            let described = describe(ctx, stack, &hook.path.logical_id, &caller);
            checks.push(hook_path(hook, stack, &described, &db));
        }
    }
    if let (Some(stack), Some(logical_id)) = (&ctx.stack, &ctx.resource) {
        let described = describe(ctx, stack, logical_id, &command_line(ctx, config.as_ref().map(|c| &c.main)));
        checks.push(described_check(format!("api.describe:{stack}/{logical_id}"), stack, logical_id, &described));
    }
    if checks.is_empty() {
        checks.push(Check::skipped(
            "api.describe",
            "no resource to check: no cfn-hup update hook, and no --stack with --resource",
        ));
    }
    checks
}

/// cfn-init's caller: the command line, in `--region`, else cfn-hup's region, else the
/// default.
pub fn command_line(ctx: &Context, hup: Option<&MainConfig>) -> Caller {
    let region = match hup {
        Some(main) if !ctx.region_given => main.region.clone(),
        _ => ctx.api.region.clone(),
    };
    Caller::CommandLine { region }
}

/// One update hook's path against the stack, and against the value cfn-hup stored.
fn hook_path(hook: &Hook, stack: &str, described: &Described, db: &MetadataDb) -> Check {
    let id = format!("hook.path:{}", hook.name);
    let path = &hook.path.text;
    let detail = match described {
        Described::Found(detail) => detail,
        Described::NoResource(_) => {
            return Check::failed(
                id,
                format!(
                    "the path names a resource that is not in the stack: {path} ({} is not in {stack})",
                    hook.path.logical_id
                ),
                format!("correct path in hook {} (a logical id is case-sensitive), or add the resource", hook.name),
            );
        }
        Described::Failed { found, .. } => {
            return Check::skipped(id, format!("the resource could not be read: {found}"));
        }
    };
    let value = detect::resolve(hook, detail, stack);
    if let (Target::Metadata(Some(sub)), None) = (&hook.path.target, &value) {
        let missing = match &detail.metadata {
            None => format!("{} has no metadata", hook.path.logical_id),
            Some(metadata) => format!("no key {}", missing_key(metadata, sub)),
        };
        return Check::failed(
            id,
            format!("the path ends in a key that does not exist: {path} ({missing})"),
            format!("correct path in hook {} to a key of the resource's metadata", hook.name),
        );
    }
    let stored = db.get(&MetadataDb::key(&hook.name, path));
    match stored {
        // Up to date is how a healthy host is (issue 30): information, not a warning.
        Some(stored) if Some(&stored) == value.as_ref() => Check::ok(
            id,
            format!(
                "{path}: up to date: the stored value equals the stack's; the hook runs when the stack's value changes"
            ),
        ),
        Some(_) => {
            Check::ok(id, format!("{path}: the stack's value differs from the one stored; the next pass acts on it"))
        }
        None => Check::ok(id, format!("{path} exists; cfn-hup has stored no value for it yet")),
    }
}

/// The first component of `sub` (a `cfn-get-metadata -k` path) that is not there.
fn missing_key(metadata: &serde_json::Value, sub: &str) -> String {
    let parts = cfn_metadata::keypath::split(sub);
    let escaped: Vec<String> = parts.iter().map(|p| p.replace('.', "\\.")).collect();
    (1..=parts.len())
        .find(|n| cfn_metadata::keypath::lookup(metadata, &escaped[..*n].join(".")).is_none())
        .map_or_else(|| sub.to_string(), |n| parts[n - 1].clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deleted_or_rolled_back_resource_is_judged() {
        for fine in ["CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_IN_PROGRESS", "IMPORT_COMPLETE"] {
            assert_eq!(judged_status(fine, "s"), None, "{fine}");
        }
        for gone in ["DELETE_COMPLETE", "DELETE_IN_PROGRESS", "DELETE_FAILED"] {
            assert_eq!(judged_status(gone, "s").unwrap().0, Verdict::Failed, "{gone}");
        }
        for rolled in ["UPDATE_FAILED", "CREATE_FAILED", "ROLLBACK_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"] {
            assert_eq!(judged_status(rolled, "s").unwrap().0, Verdict::Warning, "{rolled}");
        }
    }

    #[test]
    fn the_missing_key_is_the_first_component_not_found() {
        let metadata = json!({"a": {"b.c": {"d": 1}}, "list": [{"x": 1}]});
        assert_eq!(missing_key(&metadata, "a.b\\.c.e"), "e");
        assert_eq!(missing_key(&metadata, "z.y"), "z");
        assert_eq!(missing_key(&metadata, "list.1"), "1");
    }

    #[test]
    fn api_errors_say_what_to_do() {
        let remote = |code: &str, message: &str| Error::Remote {
            status: 400,
            code: code.into(),
            message: message.into(),
            sender_fault: true,
        };
        let judged = |e: Error| match mapped(&e, "s", "R", "http://x") {
            Described::Failed { verdict, found, fix } => (verdict, found, fix),
            Described::NoResource(said) => (Verdict::Ok, said, String::new()),
            Described::Found(_) => unreachable!(),
        };
        let (verdict, _, fix) = judged(remote("AccessDenied", "User x is not authorized"));
        assert_eq!(verdict, Verdict::Failed);
        assert!(fix.contains("cloudformation:DescribeStackResource"), "{fix}");
        assert!(judged(remote("SignatureDoesNotMatch", "no")).2.contains("clock"));
        assert_eq!(judged(remote("Throttling", "Rate exceeded")).0, Verdict::Warning);
        assert!(judged(remote("ExpiredToken", "expired")).1.contains("expired"));
        assert!(judged(remote("ValidationError", "Stack with id s does not exist")).2.contains("stack name"));
        let (verdict, said, _) = judged(remote("ValidationError", "Resource R does not exist for stack s"));
        assert_eq!((verdict, said.as_str()), (Verdict::Ok, "ValidationError: Resource R does not exist for stack s"));
    }
}
