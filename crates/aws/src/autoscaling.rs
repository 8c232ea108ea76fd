//! Auto Scaling through the AWS SDK (`aws-sdk-autoscaling`): the four calls of
//! cfn-hup's lifecycle hooks and of `cfn-bootstrap lifecycle complete` —
//! DescribeAutoScalingInstances (the group and the lifecycle state of an instance),
//! DescribeLifecycleHooks (the hooks of a group), CompleteLifecycleAction and
//! RecordLifecycleActionHeartbeat, both by instance id (no token: the instance metadata
//! never carries one).
//!
//! **Where requests go.** To `$AWS_ENDPOINT_URL_AUTO_SCALING`, else `$AWS_ENDPOINT_URL`
//! (the AWS SDKs' standard overrides), else the region's endpoint
//! (`https://autoscaling.<region>.<partition suffix>`). Signed with SigV4 for the service
//! `autoscaling`: the instance identity that CloudFormation accepts is no Auto Scaling
//! credential.
//!
//! The client is built like the CloudFormation and SQS ones: our HTTP stack
//! (`sdk_http`), explicit region, endpoint and keys, no SDK retries or timeouts (each
//! call is retried by `retry::run`, throttling with back-off within the policy's
//! budget), nothing read from profiles or the environment but the endpoint variables.

pub use crate::api_error::Error;
use crate::api_error::{self, Faults};
use crate::credentials::Credentials;
use crate::endpoint::{self, FixedEndpoint};
use crate::http::{self, HttpClient};
use crate::retry::{self, Policy};
use crate::runtime;
use aws_sdk_autoscaling::config::retry::{ReconnectMode, RetryConfig};
use aws_sdk_autoscaling::config::timeout::TimeoutConfig;
use aws_sdk_autoscaling::config::{BehaviorVersion, IdentityCache, Region, StalledStreamProtectionConfig};
use aws_sdk_autoscaling::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use std::sync::Arc;
use std::time::Duration;

/// The AWS SDKs' variables that move the Auto Scaling endpoint, the specific one first.
pub const ENDPOINT_VARIABLES: [&str; 2] = ["AWS_ENDPOINT_URL_AUTO_SCALING", "AWS_ENDPOINT_URL"];

/// Five tries; throttling keeps being retried (with the jittered back-off) for up to
/// five minutes: a lifecycle action waits for its completion for at least the hook's
/// heartbeat timeout (30 s or more), and a completion lost to throttling would leave
/// the group waiting out its whole timeout.
pub const POLICY: Policy =
    Policy { max_tries: 5, throttled_budget: Duration::from_secs(300), sleep: std::thread::sleep };

/// The error text of CompleteLifecycleAction and RecordLifecycleActionHeartbeat when the
/// instance has no pending action for the hook (already completed, timed out, or never
/// started): the action is over, which is what a completion wants.
const NO_ACTIVE_ACTION: &str = "No active Lifecycle Action found";

/// An instance as DescribeAutoScalingInstances describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    pub group: String,
    /// `Pending:Wait`, `InService`, `Terminating:Wait`, …
    pub lifecycle_state: String,
}

/// The transitions a lifecycle hook belongs to.
pub const LAUNCHING: &str = "autoscaling:EC2_INSTANCE_LAUNCHING";
pub const TERMINATING: &str = "autoscaling:EC2_INSTANCE_TERMINATING";

/// A lifecycle hook of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleHook {
    pub name: String,
    /// [`LAUNCHING`] or [`TERMINATING`].
    pub transition: String,
    /// Seconds (30–7200; AWS's default 3600).
    pub heartbeat_timeout: u64,
    /// Seconds; AWS's default is min(172800, 100 × HeartbeatTimeout).
    pub global_timeout: u64,
    pub default_result: String,
}

/// What a completion achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    Completed,
    /// Nothing was pending any more (completed before, or timed out): done all the same.
    NoActiveAction,
}

/// The default global timeout of a hook that states none.
pub fn default_global_timeout(heartbeat_timeout: u64) -> u64 {
    (100 * heartbeat_timeout).min(172_800)
}

/// The endpoint: the first variable of [`ENDPOINT_VARIABLES`] that is set and not
/// empty (as `lookup` reads them), else the region's.
pub fn endpoint_url(region: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    ENDPOINT_VARIABLES
        .iter()
        .filter_map(|name| lookup(name))
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
        .map(|v| v.trim_end_matches('/').to_string())
        .unwrap_or_else(|| format!("https://autoscaling.{region}.{}", endpoint::dns_suffix(region)))
}

pub struct AutoScaling {
    endpoint: String,
    client: aws_sdk_autoscaling::Client,
    retry: Policy,
}

impl AutoScaling {
    /// A client for `region` signing with `credentials` (a snapshot: a long-running
    /// caller makes a new client when its keys are refreshed).
    pub fn new(region: &str, credentials: &Credentials, http: Arc<HttpClient>) -> AutoScaling {
        let endpoint = endpoint_url(region, &|name| std::env::var(name).ok());
        tracing::debug!("Auto Scaling client initialized with endpoint {}", http::redact_url(&endpoint));
        let mut config = aws_sdk_autoscaling::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(region.to_string()))
            .http_client(crate::sdk_http::client(http))
            .credentials_provider(aws_sdk_autoscaling::config::Credentials::new(
                &credentials.access_key,
                &credentials.secret_key,
                credentials.session_token.clone(),
                None,
                "cfn-bootstrap",
            ))
            .identity_cache(IdentityCache::no_cache())
            // One attempt per call (`retry::run` decides), and no reconnection the SDK
            // could not perform on our HTTP stack anyway.
            .retry_config(RetryConfig::disabled().with_reconnect_mode(ReconnectMode::ReuseAllConnections))
            .timeout_config(TimeoutConfig::disabled())
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
            .interceptor(crate::cfn::OurUserAgent);
        config.set_endpoint_resolver(Some(FixedEndpoint::shared(&endpoint)));
        AutoScaling { client: aws_sdk_autoscaling::Client::from_conf(config.build()), endpoint, retry: POLICY }
    }

    pub fn with_retry(mut self, retry: Policy) -> AutoScaling {
        self.retry = retry;
        self
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// DescribeAutoScalingInstances for one instance: `None` when no group has it.
    pub fn describe_instance(&self, instance_id: &str) -> Result<Option<Instance>, Error> {
        let action = "DescribeAutoScalingInstances";
        let output =
            self.call(action, || self.client.describe_auto_scaling_instances().instance_ids(instance_id).send())?;
        let Some(found) = output.auto_scaling_instances().iter().find(|i| i.instance_id() == Some(instance_id)) else {
            return Ok(None);
        };
        let field = |value: Option<&str>, name: &str| {
            value.map(str::to_string).ok_or_else(|| Error::Malformed {
                action: action.into(),
                reason: format!("the instance has no {name}"),
            })
        };
        Ok(Some(Instance {
            group: field(found.auto_scaling_group_name(), "AutoScalingGroupName")?,
            lifecycle_state: field(found.lifecycle_state(), "LifecycleState")?,
        }))
    }

    /// DescribeLifecycleHooks: the hooks of `group` (only those named, when `names` is
    /// not empty).
    pub fn lifecycle_hooks(&self, group: &str, names: &[String]) -> Result<Vec<LifecycleHook>, Error> {
        let action = "DescribeLifecycleHooks";
        let output = self.call(action, || {
            self.client
                .describe_lifecycle_hooks()
                .auto_scaling_group_name(group)
                .set_lifecycle_hook_names((!names.is_empty()).then(|| names.to_vec()))
                .send()
        })?;
        let hooks = output.lifecycle_hooks().iter().filter_map(|hook| {
            let heartbeat_timeout = hook.heartbeat_timeout().and_then(|t| u64::try_from(t).ok()).unwrap_or(3600);
            Some(LifecycleHook {
                name: hook.lifecycle_hook_name()?.to_string(),
                transition: hook.lifecycle_transition()?.to_string(),
                heartbeat_timeout,
                global_timeout: hook
                    .global_timeout()
                    .and_then(|t| u64::try_from(t).ok())
                    .unwrap_or_else(|| default_global_timeout(heartbeat_timeout)),
                default_result: hook.default_result().unwrap_or("ABANDON").to_string(),
            })
        });
        Ok(hooks.collect())
    }

    /// CompleteLifecycleAction by instance id; `result` is `CONTINUE` or `ABANDON`.
    pub fn complete(&self, group: &str, hook: &str, instance_id: &str, result: &str) -> Result<Completion, Error> {
        let sent = self.call("CompleteLifecycleAction", || {
            self.client
                .complete_lifecycle_action()
                .auto_scaling_group_name(group)
                .lifecycle_hook_name(hook)
                .instance_id(instance_id)
                .lifecycle_action_result(result)
                .send()
        });
        over(sent)
    }

    /// RecordLifecycleActionHeartbeat by instance id: restarts the hook's heartbeat timeout.
    pub fn heartbeat(&self, group: &str, hook: &str, instance_id: &str) -> Result<Completion, Error> {
        let sent = self.call("RecordLifecycleActionHeartbeat", || {
            self.client
                .record_lifecycle_action_heartbeat()
                .auto_scaling_group_name(group)
                .lifecycle_hook_name(hook)
                .instance_id(instance_id)
                .send()
        });
        over(sent)
    }

    fn call<T, E, F>(&self, action: &str, send: impl Fn() -> F) -> Result<T, Error>
    where
        F: std::future::Future<Output = Result<T, SdkError<E, HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let endpoint = http::redact_url(&self.endpoint);
        retry::run(
            &self.retry,
            action,
            || {
                tracing::debug!("Auto Scaling {action}");
                runtime::block_on(send()).map_err(|e| api_error::from_sdk(action, &endpoint, Faults::InBody, e))
            },
            Error::verdict,
        )
    }
}

/// A completion or heartbeat's answer: "no active lifecycle action" means the action is over.
fn over<T>(sent: Result<T, Error>) -> Result<Completion, Error> {
    match sent {
        Ok(_) => Ok(Completion::Completed),
        Err(e) if is_no_active_action(&e) => Ok(Completion::NoActiveAction),
        Err(e) => Err(e),
    }
}

/// Whether `error` says that no lifecycle action is pending for the instance.
pub fn is_no_active_action(error: &Error) -> bool {
    matches!(error, Error::Remote { message, .. } if message.contains(NO_ACTIVE_ACTION))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_sdk_variables_then_the_region() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(endpoint_url("eu-west-1", &env(&[])), "https://autoscaling.eu-west-1.amazonaws.com");
        assert_eq!(endpoint_url("cn-north-1", &env(&[])), "https://autoscaling.cn-north-1.amazonaws.com.cn");
        assert_eq!(endpoint_url("us-east-1", &env(&[("AWS_ENDPOINT_URL", "http://h:1/")])), "http://h:1");
        assert_eq!(
            endpoint_url(
                "us-east-1",
                &env(&[("AWS_ENDPOINT_URL", "http://all:1"), ("AWS_ENDPOINT_URL_AUTO_SCALING", "http://asg:2")])
            ),
            "http://asg:2"
        );
        // An empty specific variable does not hide the general one.
        assert_eq!(
            endpoint_url(
                "us-east-1",
                &env(&[("AWS_ENDPOINT_URL_AUTO_SCALING", " "), ("AWS_ENDPOINT_URL", "http://all:1")])
            ),
            "http://all:1"
        );
    }

    #[test]
    fn no_active_action_is_recognised_and_the_global_timeout_defaults() {
        let remote = |message: &str| Error::Remote {
            status: 400,
            code: "ValidationError".into(),
            message: message.into(),
            sender_fault: true,
        };
        assert!(is_no_active_action(&remote("No active Lifecycle Action found with instance ID i-1")));
        assert!(!is_no_active_action(&remote("Group web not found")));
        assert_eq!(
            over::<()>(Err(remote("No active Lifecycle Action found with token t"))).unwrap(),
            Completion::NoActiveAction
        );
        assert_eq!((default_global_timeout(30), default_global_timeout(3600)), (3000, 172_800));
    }
}
