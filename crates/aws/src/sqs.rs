//! SQS through the AWS SDK (`aws-sdk-sqs`, API-06): the `SendMessage` that
//! cfn-send-cmd-result and cfn-hup use to return a command's result (CMDT-02, HUP-CMD-03),
//! and the `ReceiveMessage` (long poll) and `DeleteMessage` of cfn-hup's command listener
//! (HUP-CMD-01), signed with SigV4 for service `sqs` (CRED-04) and retried by the
//! reference's rules for SQS errors (NET-03).
//!
//! **Where requests go.** To the SQS endpoint of the signing region
//! (`https://sqs.<region>.<partition suffix>`, EP-06), or to `$AWS_ENDPOINT_URL_SQS`,
//! the AWS SDKs' standard override. A queue URL is only the `QueueUrl` parameter: it
//! never chooses the host that receives a signed request, so a command message naming
//! some other host as its result queue cannot make cfn-hup send the listener's
//! credentials there (the service answers for a queue that is not its own).
//!
//! The signing region is the one set with [`Sqs::with_region`] (cfn-hup's `[main]
//! region`), else it comes from the queue URL (`sqs.<region>.amazonaws.com`,
//! `<region>.queue.amazonaws.com`, `queue.amazonaws.com` = us-east-1). The reference
//! always signed for us-east-1 (BUG-SQSREGION), which fails for queues elsewhere; only
//! a URL that names no region (a private endpoint, a test server) still gets us-east-1.
//!
//! The SDK client is built from explicit configuration only: our HTTP stack
//! (`sdk_http`: proxies, the lazily loaded trust store, no redirects), static keys, no
//! SDK retries (the reference's policy in `retry` decides), nothing read from profiles.

pub use crate::api_error::Error;
use crate::api_error::{self, Faults};
use crate::credentials::Credentials;
use crate::endpoint::{self, FixedEndpoint};
use crate::http::{self, HttpClient};
use crate::retry::{self, Policy};
use crate::runtime;
use aws_sdk_sqs::config::retry::RetryConfig;
use aws_sdk_sqs::config::{BehaviorVersion, IdentityCache, Region, StalledStreamProtectionConfig};
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::MessageSystemAttributeName;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use std::sync::Arc;

/// The region signed for when the queue URL names none (the reference's only region).
pub const FALLBACK_REGION: &str = "us-east-1";
/// The AWS SDKs' standard variable that moves the SQS endpoint (tests, private endpoints).
pub const ENDPOINT_VARIABLE: &str = "AWS_ENDPOINT_URL_SQS";

/// The region a queue URL belongs to, when its host names one.
pub fn queue_region(queue_url: &str) -> Option<String> {
    let host = http::split_url(queue_url).ok()?.host.to_ascii_lowercase();
    let labels: Vec<&str> = host.split('.').collect();
    if host == "queue.amazonaws.com" {
        return Some("us-east-1".into());
    }
    let after_sqs = labels.iter().position(|l| *l == "sqs").and_then(|i| labels.get(i + 1));
    let before_queue = labels.iter().position(|l| *l == "queue").filter(|i| *i > 0).map(|i| labels[i - 1]);
    after_sqs.copied().or(before_queue).filter(|l| is_region(l)).map(str::to_string)
}

/// `us-east-1`, `ap-southeast-2`, `us-gov-west-1`, `cn-north-1`: letters, dashes, a number.
fn is_region(label: &str) -> bool {
    let mut parts = label.split('-');
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    first.len() == 2
        && first.bytes().all(|b| b.is_ascii_lowercase())
        && rest.len() >= 2
        && rest.last().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && rest[..rest.len() - 1].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
}

/// The endpoint requests for `region` go to: `configured` (the value of
/// `$AWS_ENDPOINT_URL_SQS`) when set, else the region's SQS endpoint in its partition.
pub fn endpoint_url(region: &str, configured: Option<&str>) -> String {
    match configured.map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => endpoint::sqs_url(region),
    }
}

/// The host (and port) a URL names, for comparing a queue URL with the endpoint.
fn netloc(url: &str) -> Option<String> {
    http::split_url(url).ok().map(|p| p.netloc.to_ascii_lowercase())
}

/// A message taken from a queue by ReceiveMessage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub message_id: String,
    pub receipt_handle: String,
    pub body: String,
}

/// An SQS client for one set of keys (a listener's temporary credentials).
pub struct Sqs {
    credentials: Credentials,
    http: Arc<HttpClient>,
    retry: Policy,
    region: Option<String>,
    /// `$AWS_ENDPOINT_URL_SQS` when the client was made.
    configured_endpoint: Option<String>,
}

impl Sqs {
    /// `http` may be shared (cfn-hup's listener makes a client per set of credentials).
    pub fn new(credentials: Credentials, http: impl Into<Arc<HttpClient>>) -> Self {
        let configured_endpoint = std::env::var(ENDPOINT_VARIABLE).ok();
        Sqs { credentials, http: http.into(), retry: Policy::SQS_SEND, region: None, configured_endpoint }
    }

    pub fn with_retry(mut self, retry: Policy) -> Self {
        self.retry = retry;
        self
    }

    /// Sends to `url` instead of the region's endpoint (cfn-hup's `sqs_url`).
    pub fn with_endpoint(mut self, url: Option<&str>) -> Self {
        if let Some(url) = url.filter(|u| !u.trim().is_empty()) {
            self.configured_endpoint = Some(url.to_string());
        }
        self
    }

    /// Signs for (and calls the endpoint of) `region` whatever the queue URL says
    /// (cfn-hup uses its `[main] region`).
    pub fn with_region(mut self, region: &str) -> Self {
        self.region = Some(region.to_string());
        self
    }

    /// ReceiveMessage: waits up to `wait_seconds` for at most one message (SPEC §7.2).
    /// One attempt: the caller's next round is the retry.
    pub fn receive_message(&self, queue_url: &str, wait_seconds: u32) -> Result<Option<Message>, Error> {
        let action = "ReceiveMessage";
        let target = self.target(queue_url);
        let call = target
            .client
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(1)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(i32::try_from(wait_seconds).unwrap_or(i32::MAX));
        let answer = runtime::block_on(call.send()).map_err(|e| target.error(action, e))?;
        let Some(message) = answer.messages().first() else {
            return Ok(None);
        };
        let field = |name: &str, value: Option<&str>| {
            value
                .map(str::to_string)
                .ok_or_else(|| Error::Malformed { action: action.into(), reason: format!("the message has no {name}") })
        };
        Ok(Some(Message {
            message_id: field("MessageId", message.message_id())?,
            receipt_handle: field("ReceiptHandle", message.receipt_handle())?,
            body: field("Body", message.body())?,
        }))
    }

    /// DeleteMessage: removes a received message for good.
    pub fn delete_message(&self, queue_url: &str, receipt_handle: &str) -> Result<(), Error> {
        let action = "DeleteMessage";
        let target = self.target(queue_url);
        let attempt = || {
            let call = target.client.delete_message().queue_url(queue_url).receipt_handle(receipt_handle);
            runtime::block_on(call.send()).map(drop).map_err(|e| target.error(action, e))
        };
        retry::run(&self.retry, action, attempt, Error::verdict)
    }

    /// SendMessage: puts `body` on the queue; returns the new message's id.
    pub fn send_message(&self, queue_url: &str, body: &str) -> Result<String, Error> {
        let action = "SendMessage";
        let target = self.target(queue_url);
        let attempt = || {
            let call = target.client.send_message().queue_url(queue_url).message_body(body);
            runtime::block_on(call.send()).map_err(|e| target.error(action, e))
        };
        let answer = retry::run(&self.retry, action, attempt, Error::verdict)?;
        answer
            .message_id()
            .map(str::to_string)
            .ok_or_else(|| Error::Malformed { action: action.into(), reason: "no MessageId in the answer".into() })
    }

    /// The client for the calls on one queue: the region, the endpoint, the SDK client.
    fn target(&self, queue_url: &str) -> Target {
        let region =
            self.region.clone().or_else(|| queue_region(queue_url)).unwrap_or_else(|| FALLBACK_REGION.to_string());
        let endpoint = endpoint_url(&region, self.configured_endpoint.as_deref());
        if netloc(queue_url) != netloc(&endpoint) {
            // A command message may name any URL as its result queue: the URL stays a
            // parameter, the request goes where the region says, and the log says so.
            tracing::info!("Queue {} is not on {endpoint}: sending to {endpoint}", http::redact_url(queue_url));
        }
        tracing::debug!("SQS calls for {} go to {endpoint} (signed for {region})", http::redact_url(queue_url));
        let keys = &self.credentials;
        let mut config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(region))
            .http_client(crate::sdk_http::client(self.http.clone()))
            .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                &keys.access_key,
                &keys.secret_key,
                keys.session_token.clone(),
                None,
                "cfn-bootstrap",
            ))
            .identity_cache(IdentityCache::no_cache())
            .retry_config(RetryConfig::disabled())
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
        config.set_endpoint_resolver(Some(FixedEndpoint::shared(&endpoint)));
        Target { client: aws_sdk_sqs::Client::from_conf(config.build()), endpoint }
    }
}

struct Target {
    client: aws_sdk_sqs::Client,
    endpoint: String,
}

impl Target {
    /// The SDK's error as ours (`x-amzn-query-error` carries the query-protocol code and
    /// fault SQS has always answered with).
    fn error<E>(&self, action: &str, error: SdkError<E, HttpResponse>) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        api_error::from_sdk(action, &http::redact_url(&self.endpoint), Faults::InHeader, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_come_from_the_queue_url() {
        let cases = [
            ("https://sqs.eu-west-1.amazonaws.com/123/q", Some("eu-west-1")),
            ("https://eu-west-1.queue.amazonaws.com/123/q", Some("eu-west-1")),
            ("https://queue.amazonaws.com/123/q", Some("us-east-1")),
            ("https://sqs.cn-north-1.amazonaws.com.cn/123/q", Some("cn-north-1")),
            ("https://sqs.us-gov-west-1.amazonaws.com/123/q", Some("us-gov-west-1")),
            ("https://SQS.AP-SOUTHEAST-2.amazonaws.com/1/q", Some("ap-southeast-2")),
            ("https://vpce-1a2b.sqs.us-west-2.vpce.amazonaws.com/1/q", Some("us-west-2")),
            ("http://127.0.0.1:5000/123456789012/q", None),
            ("https://sqs.amazonaws.com/1/q", None),
            ("not a url", None),
        ];
        for (url, region) in cases {
            assert_eq!(queue_region(url).as_deref(), region, "{url}");
        }
    }

    #[test]
    fn the_endpoint_comes_from_the_region_and_its_partition() {
        let cases = [
            ("us-east-1", "https://sqs.us-east-1.amazonaws.com"),
            ("eu-west-1", "https://sqs.eu-west-1.amazonaws.com"),
            ("cn-north-1", "https://sqs.cn-north-1.amazonaws.com.cn"),
            ("us-gov-west-1", "https://sqs.us-gov-west-1.amazonaws.com"),
            ("us-iso-east-1", "https://sqs.us-iso-east-1.c2s.ic.gov"),
            ("us-isob-east-1", "https://sqs.us-isob-east-1.sc2s.sgov.gov"),
            ("eusc-de-east-1", "https://sqs.eusc-de-east-1.amazonaws.eu"),
        ];
        for (region, url) in cases {
            assert_eq!(endpoint_url(region, None), url, "{region}");
        }
        // Only the standard variable moves it; an empty value does not count.
        assert_eq!(endpoint_url("eu-west-1", Some("http://127.0.0.1:5000/")), "http://127.0.0.1:5000");
        assert_eq!(endpoint_url("eu-west-1", Some(" ")), "https://sqs.eu-west-1.amazonaws.com");
    }

    #[test]
    fn a_queue_url_never_chooses_the_endpoint() {
        // Whatever host a result queue names, the client calls the region's endpoint.
        let client = || {
            let mut sqs = Sqs::new(Credentials::new("AK", "SK", None), HttpClient::new(Default::default(), "t"));
            sqs.configured_endpoint = None;
            sqs
        };
        let sqs = client().with_region("eu-west-1");
        for queue in ["http://127.0.0.1:9/1/q", "https://evil.example/sqs.us-east-1.amazonaws.com/1/q"] {
            assert_eq!(sqs.target(queue).endpoint, "https://sqs.eu-west-1.amazonaws.com", "{queue}");
        }
        let sqs = client();
        // A host that only pretends to be SQS still names a region, not a host.
        let target = sqs.target("https://sqs.us-west-2.evil.example/1/q");
        assert_eq!(target.endpoint, "https://sqs.us-west-2.amazonaws.com");
        assert_eq!(sqs.target("http://127.0.0.1:9/1/q").endpoint, "https://sqs.us-east-1.amazonaws.com");
    }
}
