//! cfn-hup's command listener (SPEC §14.7; HUP-CMD-01..04): registers with
//! CloudFormation, which answers with an SQS queue for this listener, fetches listener
//! credentials and keeps them fresh, long-polls the queue, and runs the command hook
//! named by each command before sending the action's result to the command's result
//! queue.
//!
//! One round ([`Listener::round`]) is one receive; `--no-daemon` does one round, the
//! service runs rounds back to back in a task of their own, so update hooks are never
//! delayed by a long poll or a running command. Messages are handled one at a time (the reference started a thread per message; one worker keeps memory
//! flat and makes "already being processed" impossible rather than checked).
//!
//! The listener credentials are secrets: they reach the action's environment but never
//! the log (WEAK-secrets, which the reference had).

use crate::activity::{self, HookRun};
use crate::command_message::{self, Command};
use crate::commands_run::CommandsRun;
use crate::config::{CommandHook, MainConfig};
use crate::service::Service;
use cfn_aws::cfn::{Error as ApiError, ListenerCredentials};
use cfn_aws::credentials::SdkSource;
use cfn_aws::http::{self, HttpClient};
use cfn_aws::retry::Policy;
use cfn_aws::sqs::{self, Sqs};
use cfn_aws::{Imds, ProxyOptions};
use cfn_host::CommandLine;
use cfn_host::process::{self, Environment, InGroup, Invocation};
use cfn_host::process_groups::ProcessGroups;
use chrono::Utc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// ReceiveMessage's long poll (SPEC §7.2).
pub const RECEIVE_WAIT_SECONDS: u32 = 20;
/// The pause after a round that could not receive (and for expired credentials).
pub const BACKOFF: Duration = Duration::from_secs(20);
const NON_EXISTENT_QUEUE: &str = "AWS.SimpleQueueService.NonExistentQueue";
/// Environment variables whose values must not be logged.
const SECRET_VARIABLES: &[&str] = &["RESULT_SECRET_KEY", "RESULT_SESSION_TOKEN"];
/// Environment variables holding URLs, logged redacted.
const URL_VARIABLES: &[&str] = &["RESULT_QUEUE", "EVENT_HANDLE"];

#[derive(Debug, thiserror::Error)]
pub enum ListenerError {
    #[error("Could not retrieve instance id")]
    NoInstanceId,
    /// RegisterListener answered ValidationError: nothing the next round could change.
    #[error("Terminal failure registering listener: {0}")]
    Registration(ApiError),
}

/// The listener id (SPEC §14.7): the EC2 instance id; off EC2 with credentials (`role`,
/// `credential-file`, or a source the environment names: a profile, web identity, a
/// container endpoint) the host's fully qualified name; off EC2 with instance identity
/// signing there is no identity at all.
pub fn listener_id(main: &MainConfig, imds: &Imds) -> Result<String, ListenerError> {
    if let Some(id) = imds.instance_id() {
        return Ok(id);
    }
    let from_env = || SdkSource::from_env(&|name| std::env::var(name).ok()).is_some();
    if main.role.is_some() || main.credential_file.is_some() || from_env() {
        return Ok(cfn_host::fqdn());
    }
    Err(ListenerError::NoInstanceId)
}

/// When to fetch listener credentials again, given how long the current ones remain
/// valid: with more than 30 minutes left, after half of it (at most 2 hours); otherwise
/// within the next minute.
pub fn refresh_delay(remaining: Duration) -> Duration {
    if remaining > Duration::from_secs(30 * 60) {
        (remaining / 2).min(Duration::from_secs(2 * 3600))
    } else {
        Duration::from_secs_f64(fastrand::f64() * 60.0)
    }
}

/// What a round did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Round {
    /// The long poll ended without a message.
    Idle,
    /// A message was handled (run, skipped or left in the queue).
    Handled,
    /// Nothing could be received; wait this long before the next round.
    Backoff(Duration),
}

pub struct ListenerOptions {
    pub receive_wait_seconds: u32,
    /// Retries of SendMessage/DeleteMessage (the daemon's sleeps end early on SIGTERM).
    pub sqs_retry: Policy,
    /// The service's running actions (see [`crate::PassOptions::actions`]).
    pub actions: Option<&'static ProcessGroups>,
}

impl Default for ListenerOptions {
    fn default() -> Self {
        ListenerOptions { receive_wait_seconds: RECEIVE_WAIT_SECONDS, sqs_retry: Policy::SQS_SEND, actions: None }
    }
}

pub struct Listener {
    stack: String,
    region: String,
    sqs_url: Option<String>,
    listener_id: String,
    service: Service,
    http: Arc<HttpClient>,
    options: ListenerOptions,
    queue_url: Option<String>,
    expired: bool,
    credentials: Option<ListenerCredentials>,
    next_refresh: Instant,
    commands_run: CommandsRun,
}

impl Listener {
    pub fn new(main: &MainConfig, listener_id: String, service: Service, options: ListenerOptions) -> Listener {
        let configured = main.sqs_url.clone().or_else(|| std::env::var(sqs::ENDPOINT_VARIABLE).ok());
        tracing::debug!(
            "SQS client initialized with endpoint {}",
            sqs::endpoint_url(&main.region, configured.as_deref())
        );
        // The reference makes a second CloudFormation client for the listener, and says
        // when messages are handled one at a time (its wording for `multi-threaded=false`;
        // ours always handles them so).
        cfn_aws::log_client_endpoint(&main.region, main.url.as_deref());
        if !main.multi_threaded {
            tracing::debug!("Enabled single threading mode.");
        }
        create_data_dir(&CommandsRun::default_path());
        Listener {
            stack: main.stack.clone(),
            region: main.region.clone(),
            sqs_url: main.sqs_url.clone(),
            listener_id,
            service,
            http: Arc::new(HttpClient::new(ProxyOptions::default(), cfn_aws::api_user_agent())),
            options,
            queue_url: None,
            expired: false,
            credentials: None,
            next_refresh: Instant::now(),
            commands_run: CommandsRun::load(&CommandsRun::default_path()),
        }
    }

    pub fn listener_id(&self) -> &str {
        &self.listener_id
    }

    /// Reads `commands_run.json` again: a listener that takes over from another one
    /// starts from what the other recorded until it stopped.
    pub fn reload_commands_run(&mut self) {
        self.commands_run = CommandsRun::load(&CommandsRun::default_path());
    }

    /// Register if needed, refresh credentials when due, receive at most one message and
    /// handle it with the command hooks `hooks` gives at that moment (a reload during a
    /// long poll applies to the message it returns). Only a terminal registration
    /// failure is an error.
    pub fn round(&mut self, hooks: &dyn Fn() -> Arc<Vec<CommandHook>>) -> Result<Round, ListenerError> {
        let client = match self.service.client() {
            Ok(client) => client,
            Err(e) => {
                tracing::error!("Could not reach CloudFormation for the command listener: {e}");
                return Ok(Round::Backoff(BACKOFF));
            }
        };
        if self.queue_url.is_none() || self.expired {
            match client.register_listener(&self.stack, &self.listener_id) {
                Ok(url) => {
                    self.queue_url = Some(url);
                    if self.expired {
                        // A new registration needs credentials of its own.
                        self.credentials = None;
                        self.expired = false;
                    }
                }
                Err(e @ ApiError::Remote { .. }) if is_code(&e, "ValidationError") => {
                    return Err(ListenerError::Registration(e));
                }
                Err(e) => {
                    tracing::error!("Could not register listener {}: {e}", self.listener_id);
                    return Ok(Round::Backoff(BACKOFF));
                }
            }
        }
        let Some(queue_url) = self.queue_url.clone() else {
            return Ok(Round::Backoff(BACKOFF));
        };
        if self.credentials.is_none() || Instant::now() >= self.next_refresh {
            tracing::info!("Refreshing listener credentials");
            match client.get_listener_credentials(&self.stack, &self.listener_id) {
                Ok(fresh) => {
                    let remaining = (fresh.expiration - Utc::now()).to_std().unwrap_or_default();
                    let delay = refresh_delay(remaining);
                    self.next_refresh = Instant::now() + delay;
                    tracing::info!("Scheduling next credential refresh in {} seconds", delay.as_secs_f64());
                    self.credentials = Some(fresh);
                }
                Err(e) if is_code(&e, "ListenerExpired") => {
                    tracing::warn!("Listener {} has expired; registering again: {e}", self.listener_id);
                    self.expired = true;
                    return Ok(Round::Backoff(Duration::ZERO));
                }
                Err(e) => {
                    tracing::error!("Could not get credentials for listener {}: {e}", self.listener_id);
                    let Some(current) = &self.credentials else {
                        return Ok(Round::Backoff(BACKOFF));
                    };
                    // Keep the current keys while they last; try again by the same rule.
                    let remaining = (current.expiration - Utc::now()).to_std().unwrap_or_default();
                    self.next_refresh = Instant::now() + refresh_delay(remaining);
                }
            }
        }
        let Some(credentials) = self.credentials.clone() else {
            return Ok(Round::Backoff(BACKOFF));
        };
        if credentials.expiration <= Utc::now() {
            tracing::error!("Expired credentials found; skipping process");
            return Ok(Round::Backoff(BACKOFF));
        }
        let sqs = Sqs::new(credentials.credentials.clone(), self.http.clone())
            .with_region(&self.region)
            .with_endpoint(self.sqs_url.as_deref())
            .with_retry(self.options.sqs_retry);
        let shown_queue = http::redact_url(&queue_url);
        tracing::debug!("Receiving messages for queue {shown_queue}");
        let message = match sqs.receive_message(&queue_url, self.options.receive_wait_seconds) {
            Ok(Some(message)) => message,
            Ok(None) => return Ok(Round::Idle),
            Err(e) if is_sqs_code(&e, NON_EXISTENT_QUEUE) => {
                tracing::warn!("The listener's queue {shown_queue} no longer exists; registering again");
                self.queue_url = None;
                return Ok(Round::Backoff(Duration::ZERO));
            }
            Err(e) => {
                tracing::error!("Could not receive commands from {shown_queue}: {e}");
                return Ok(Round::Backoff(BACKOFF));
            }
        };
        let context = Context { client: &client, sqs: &sqs, queue_url: &queue_url, credentials: &credentials };
        self.handle(&context, &hooks(), &message);
        Ok(Round::Handled)
    }

    fn handle(&mut self, cx: &Context<'_>, hooks: &[CommandHook], message: &sqs::Message) {
        let command = match Command::from_body(&message.body) {
            Ok(command) => command,
            Err(e) => {
                tracing::error!("Received invalid message: {e}");
                tracing::info!(
                    "Invalid message, deleting: Message[MessageId:{}, ReceiptHandle:{}, Body:{}]",
                    message.message_id,
                    message.receipt_handle,
                    http::redact_urls_in(&message.body)
                );
                cx.delete(message);
                return;
            }
        };
        let id = command.id();
        if self.commands_run.contains(&id) {
            tracing::info!("Already ran {id}, deleting");
            cx.delete(message);
            return;
        }
        // The reference's two lines: its Python 2 repr of the command, URLs redacted.
        tracing::debug!("Processing message: {}", command.repr);
        tracing::debug!("Command message: {}", command.repr);
        if command.is_expired(Utc::now().timestamp_millis()) {
            // "for stack" names the dispatcher, as the reference's line does.
            tracing::info!(
                "Invocation {} of command {} for stack {} expired at {}; skipping",
                command.invocation_id,
                command.command_name,
                command.dispatcher_id,
                command.expiration_text()
            );
            cx.delete(message);
            return;
        }
        tracing::info!("Received command {} (invocation id: {})", command.command_name, command.invocation_id);
        let Some(hook) = hooks.iter().find(|h| h.command == command.command_name) else {
            tracing::debug!("No hook for command {}; {id} counts as completed", command.command_name);
            self.complete(cx, &id, message);
            return;
        };
        if hook.singleton {
            tracing::info!("Hook {} is configured to run as a singleton", hook.name);
            match cx.client.elect_command_leader(
                &self.stack,
                &command.command_name,
                &command.invocation_id,
                &self.listener_id,
            ) {
                Ok(leader) if leader != self.listener_id => {
                    tracing::info!("This listener is not the leader; {leader} is the leader.");
                    self.complete(cx, &id, message);
                    return;
                }
                Ok(_) => tracing::info!("This listener is the leader.  Continuing with action"),
                Err(e) => {
                    tracing::error!("Could not elect a leader for {id}: {e}; the message stays in the queue");
                    return;
                }
            }
        }
        let (started, clock) = (activity::now(), Instant::now());
        let ran = self.run_action(hook, &command, cx.credentials);
        let outcome = ran.as_ref().map(|(code, _, _)| *code).map_err(Clone::clone);
        activity::record_hook_run(
            &activity::default_path(),
            HookRun::new(&hook.name, started, clock.elapsed(), &outcome),
        );
        // An action that cannot start (a missing `runas` user, a NUL in `Data`) would not
        // start the next time either: it is a failed run, not a message to receive again
        // until it expires.
        let body = match &ran {
            Ok((code, stdout, stderr)) => {
                if hook.send_result {
                    log_outcome(&hook.name, *code, stdout);
                } else if *code != 0 {
                    // The reference says nothing here; a failure nobody is told about belongs in the log.
                    tracing::warn!("Action for {} exited with {code}", hook.name);
                }
                command_message::result_body(&command, &self.listener_id, *code, stdout, stderr)
            }
            Err(reason) => {
                if hook.send_result {
                    tracing::warn!("Action for {} could not be started, returning FAILURE", hook.name);
                }
                command_message::failure_body(&command, &self.listener_id, reason)
            }
        };
        if hook.send_result {
            let queue = http::redact_url(&command.result_queue);
            tracing::debug!("Sending {} to queue {queue}", http::redact_urls_in(&body));
            if let Err(e) = cx.sqs.send_message(&command.result_queue, &body) {
                tracing::error!("Could not send the result of {id} to {queue}: {e}; the message stays in the queue");
                return;
            }
        }
        self.complete(cx, &id, message);
    }

    /// Records the command as run and deletes its message.
    fn complete(&mut self, cx: &Context<'_>, id: &str, message: &sqs::Message) {
        if let Err(e) = self.commands_run.record(id, Utc::now()) {
            tracing::error!("Could not record command {id} in {}: {e}", CommandsRun::default_path().display());
        }
        cx.delete(message);
    }

    /// The action with the command's environment, stdout and stderr kept apart; when it
    /// could not be started, why (logged here, and the result's message).
    fn run_action(
        &self,
        hook: &CommandHook,
        command: &Command,
        credentials: &ListenerCredentials,
    ) -> Result<(i32, String, String), String> {
        let not_started = |reason: String| {
            tracing::error!("{reason}");
            Err(reason)
        };
        let user = match &hook.runas {
            None => None,
            Some(name) => match cfn_host::users::user(name) {
                Some(user) => Some(user),
                None => return not_started(format!("Action for {} cannot run: user {name} does not exist", hook.name)),
            },
        };
        let added = command_env(command, &self.stack, &self.listener_id, credentials);
        tracing::info!("Running action for {}", hook.name);
        tracing::debug!("Action environment: {}", shown_env(&added));
        let line = CommandLine::Shell(hook.action.clone());
        let invocation =
            Invocation { command: &line, env: Environment::Override(&added), cwd: None, runas: user.as_ref() };
        let ran = match self.options.actions {
            Some(groups) => process::run_captured_in_group(&invocation, InGroup { groups, label: &hook.name }),
            None => process::run_captured(&invocation),
        };
        match ran {
            Ok(done) => {
                let (stdout, stderr) = (done.stdout.text(), done.stderr.text());
                // What an action prints may hold a URL with a password or a signature.
                tracing::debug!(
                    "Action for {} output: {}",
                    hook.name,
                    if stdout.is_empty() { "<None>".into() } else { http::redact_urls_in(&stdout) }
                );
                if !stderr.is_empty() {
                    tracing::debug!("Action for {} stderr: {}", hook.name, http::redact_urls_in(&stderr));
                }
                // The result needs at most the first 500 and last 500 characters of
                // the right-trimmed text (HUP-CMD-03), which the kept head and tail hold.
                Ok((done.code, done.stdout.text_trim_end(), done.stderr.text_trim_end()))
            }
            Err(e) => not_started(format!("Action for {} could not be started: {e}", hook.name)),
        }
    }
}

/// The clients of one round.
struct Context<'a> {
    client: &'a cfn_aws::CloudFormation,
    sqs: &'a Sqs,
    queue_url: &'a str,
    credentials: &'a ListenerCredentials,
}

impl Context<'_> {
    fn delete(&self, message: &sqs::Message) {
        let queue = http::redact_url(self.queue_url);
        tracing::debug!("Deleting {} from queue {queue}", message.receipt_handle);
        if let Err(e) = self.sqs.delete_message(self.queue_url, &message.receipt_handle) {
            tracing::error!("Could not delete message {} from {queue}: {e}", message.message_id);
        }
    }
}

/// The directory of `commands_run.json`, made (0700) when the listener starts, as the
/// reference made it, so that its mode never depends on who writes there first.
fn create_data_dir(file: &std::path::Path) {
    use std::os::unix::fs::DirBuilderExt;
    let Some(dir) = file.parent().filter(|d| !d.is_dir()) else {
        return;
    };
    tracing::debug!("Creating {}", dir.display());
    if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        tracing::warn!("Could not create {}: {e}", dir.display());
    }
}

/// The line that says how a command that sends its result ended (the reference's words).
fn log_outcome(hook: &str, code: i32, stdout: &str) {
    if code != 0 {
        tracing::warn!("Action for {hook} exited with {code}, returning FAILURE");
    } else if stdout.chars().count() > command_message::RESULT_LIMIT {
        tracing::error!(
            "stdout for {hook} was greater than {} in length, which is not allowed",
            command_message::RESULT_LIMIT
        );
    } else {
        tracing::info!("Action for {hook} succeeded, returning SUCCESS");
    }
}

/// The variables a command's action gets on top of cfn-hup's environment.
pub fn command_env(
    command: &Command,
    stack: &str,
    listener_id: &str,
    credentials: &ListenerCredentials,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if let Some(data) = &command.data {
        env.push(("CMD_DATA".to_string(), data.clone()));
    }
    env.push(("INVOCATION_ID".into(), command.invocation_id.clone()));
    env.push(("DISPATCHER_ID".into(), command.dispatcher_id.clone()));
    env.push(("CMD_NAME".into(), command.command_name.clone()));
    env.push(("STACK_NAME".into(), stack.to_string()));
    env.push(("LISTENER_ID".into(), listener_id.to_string()));
    env.push(("RESULT_QUEUE".into(), command.result_queue.clone()));
    if let Some(handle) = &command.event_handle {
        env.push(("EVENT_HANDLE".into(), handle.clone()));
    }
    let keys = &credentials.credentials;
    env.push(("RESULT_ACCESS_KEY".into(), keys.access_key.clone()));
    env.push(("RESULT_SECRET_KEY".into(), keys.secret_key.clone()));
    env.push(("RESULT_SESSION_TOKEN".into(), keys.session_token.clone().unwrap_or_default()));
    env
}

/// The command variables for the log, as a JSON object: secrets masked, and the URLs
/// (result queue, event handle) redacted here, whole, since a password may hold white
/// space where the log's free-text redaction would end the URL.
pub fn shown_env(env: &[(String, String)]) -> String {
    let shown: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .map(|(k, v)| {
            let value = if SECRET_VARIABLES.contains(&k.as_str()) {
                "<redacted>".to_string()
            } else if URL_VARIABLES.contains(&k.as_str()) {
                http::redact_url(v)
            } else {
                v.clone()
            };
            (k.clone(), value.into())
        })
        .collect();
    cfn_python::json::to_compact(&serde_json::Value::Object(shown))
}

fn is_code(error: &ApiError, wanted: &str) -> bool {
    matches!(error, ApiError::Remote { code, .. } if code == wanted)
}

fn is_sqs_code(error: &sqs::Error, wanted: &str) -> bool {
    matches!(error, sqs::Error::Remote { code, .. } if code == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfn_aws::Credentials;

    #[test]
    fn refresh_schedule() {
        let hour = Duration::from_secs(3600);
        assert_eq!(refresh_delay(hour), Duration::from_secs(1800));
        assert_eq!(refresh_delay(6 * hour), 2 * hour, "at most two hours");
        assert_eq!(refresh_delay(Duration::from_secs(31 * 60)), Duration::from_secs(31 * 30));
        for remaining in [Duration::from_secs(30 * 60), Duration::from_secs(5), Duration::ZERO] {
            for _ in 0..50 {
                assert!(refresh_delay(remaining) <= Duration::from_secs(60), "{remaining:?}");
            }
        }
    }

    #[test]
    fn the_environment_carries_the_command_and_the_log_masks_secrets() {
        let command = Command {
            dispatcher_id: "d".into(),
            command_name: "c".into(),
            invocation_id: "i".into(),
            expiration_ms: 0,
            result_queue: "http://q".into(),
            data: Some("x y".into()),
            event_handle: Some("https://e/h?X-Amz-Signature=s1gvalue&a=b".into()),
            repr: String::new(),
        };
        let credentials = ListenerCredentials {
            credentials: Credentials::new("AK", "s3cr3tvalue", Some("t0kenvalue".into())),
            expiration: Utc::now(),
        };
        let env = command_env(&command, "st", "l-1", &credentials);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "CMD_DATA",
                "INVOCATION_ID",
                "DISPATCHER_ID",
                "CMD_NAME",
                "STACK_NAME",
                "LISTENER_ID",
                "RESULT_QUEUE",
                "EVENT_HANDLE",
                "RESULT_ACCESS_KEY",
                "RESULT_SECRET_KEY",
                "RESULT_SESSION_TOKEN"
            ]
        );
        assert!(env.contains(&("RESULT_SECRET_KEY".into(), "s3cr3tvalue".into())));
        let shown = shown_env(&env);
        assert!(
            !shown.contains("s3cr3tvalue") && !shown.contains("t0kenvalue") && !shown.contains("s1gvalue"),
            "{shown}"
        );
        assert!(
            shown.contains(r#""RESULT_SECRET_KEY": "<redacted>""#) && shown.contains(r#""CMD_DATA": "x y""#),
            "{shown}"
        );
        let mut bare = command.clone();
        (bare.data, bare.event_handle) = (None, None);
        let names: Vec<String> = command_env(&bare, "st", "l", &credentials).into_iter().map(|(k, _)| k).collect();
        assert!(!names.contains(&"CMD_DATA".to_string()) && !names.contains(&"EVENT_HANDLE".to_string()));
    }
}
