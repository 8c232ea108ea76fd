//! `cfn-bootstrap lifecycle complete` (issue 32, point 4): completes the Auto Scaling
//! lifecycle action that waits on this instance — the counterpart of `cfn-signal -e $?`
//! for a group with a launch hook, for user data that completes it after cfn-init
//! instead of through cfn-hup. The instance id comes from the instance metadata; the
//! group and hooks are found as cfn-hup finds them (`--group`, else the instance tag
//! `aws:autoscaling:groupName`, else DescribeAutoScalingInstances; `--hook`, else every
//! hook of the transition the instance waits in).

use crate::{logging, report};
use cfn_aws::Imds;
use cfn_aws::autoscaling::{self, AutoScaling, Completion};
use cfn_aws::credentials::{self, Signer};
use cfn_aws::http::HttpClient;
use cfn_hooks::lifecycle::discover;
use cfn_optparse::options;
use clap::{Arg, ArgGroup, ArgMatches, Command, value_parser};
use std::process::ExitCode;
use std::sync::Arc;
use tracing::Level;

pub fn command() -> Command {
    let credentials = options::api_args().into_iter().filter(|a| a.get_id() != "cfn_url" && a.get_id() != "region");
    Command::new("lifecycle")
        .about("Complete the Auto Scaling lifecycle action that waits on this instance")
        .long_about(
            "cfn-bootstrap lifecycle complete --result CONTINUE|ABANDON (or -e EXIT_CODE) completes the\n\
             Auto Scaling lifecycle action that waits on this instance, as cfn-hup's on.asg.launch and\n\
             on.asg.terminate hooks do (see docs/lifecycle.md).",
        )
        .subcommand_required(true)
        .subcommand(
            Command::new("complete")
                .about("Complete the lifecycle action waiting on this instance (CONTINUE or ABANDON)")
                .long_about(
                    "Complete the Auto Scaling lifecycle action that waits on this instance: CONTINUE or\n\
                     ABANDON, or from an exit code as cfn-signal -e takes it (0: CONTINUE, else ABANDON).\n\
                     The instance id comes from the instance metadata; the group from --group, else the\n\
                     instance tag aws:autoscaling:groupName, else DescribeAutoScalingInstances; the hooks\n\
                     from --hook, else every hook of the transition the instance waits in. A hook with no\n\
                     action waiting any more counts as completed.\n\n\
                     Exit status: 0 completed; 1 it could not be; 2 the command line is wrong.",
                )
                .arg(
                    Arg::new("result")
                        .long("result")
                        .value_name("RESULT")
                        .value_parser(["CONTINUE", "ABANDON"])
                        .ignore_case(true)
                        .help("CONTINUE or ABANDON"),
                )
                .arg(
                    Arg::new("exit_code")
                        .long("exit-code")
                        .short('e')
                        .value_name("EXIT_CODE")
                        .allow_negative_numbers(true)
                        .value_parser(value_parser!(i64))
                        .help("The result from an exit code: 0 is CONTINUE, anything else ABANDON"),
                )
                .group(ArgGroup::new("outcome").args(["result", "exit_code"]).required(true))
                .arg(Arg::new("hook").long("hook").value_name("LIFECYCLE_HOOK").help("The lifecycle hook to complete"))
                .arg(Arg::new("group").long("group").value_name("GROUP").help("The instance's Auto Scaling group"))
                .arg(
                    Arg::new("region")
                        .long("region")
                        .value_name("REGION")
                        .help("The group's region. Default: the instance's, else us-east-1"),
                )
                .args(credentials),
        )
}

pub fn run(matches: &ArgMatches) -> ExitCode {
    let Some(("complete", sub)) = matches.subcommand() else { return ExitCode::from(2) };
    logging::init("cfn-init.log", Level::DEBUG);
    let result = match (sub.get_one::<String>("result"), sub.get_one::<i64>("exit_code")) {
        (Some(result), _) => result.to_ascii_uppercase(),
        (None, Some(0)) => "CONTINUE".to_string(),
        (None, _) => "ABANDON".to_string(),
    };
    match complete(sub, &result) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => report::failure(format!("Error: {message}")),
    }
}

fn complete(sub: &ArgMatches, result: &str) -> Result<(), String> {
    let text = |id: &str| sub.try_get_one::<String>(id).ok().flatten().cloned();
    let api = options::api_options_from(text);
    let imds = Imds::from_env();
    let instance =
        imds.instance_id().ok_or("could not read the instance id from the instance metadata (not running on EC2?)")?;
    let region = text("region")
        .or_else(|| imds.get("/latest/meta-data/placement/region").ok().map(|r| r.trim().to_string()))
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| options::DEFAULT_REGION.to_string());
    let keys = match credentials::resolve(&api.credentials, &imds).map_err(|e| e.to_string())? {
        Signer::SigV4(keys) => keys,
        // The instance identity signs no Auto Scaling call: the instance profile's role does.
        Signer::InstanceIdentity => {
            let role = imds.instance_profile_role().map_err(|e| format!("no credentials for Auto Scaling: {e}"))?;
            imds.role_credentials(&role).map_err(|e| format!("no credentials for role {role}: {e}"))?
        }
    };
    let http = Arc::new(HttpClient::new(api.proxies.clone(), cfn_aws::api_user_agent()));
    let asg = AutoScaling::new(&region, &keys, http);
    let group = discover::group(text("group").as_deref(), &imds, &asg, &instance)?;
    tracing::info!("Instance {instance} is in group {} (from {})", group.name, group.from);
    let hooks = match text("hook") {
        Some(hook) => vec![hook],
        None => {
            let state = asg.describe_instance(&instance).map_err(|e| e.to_string())?.map(|i| i.lifecycle_state);
            let transition = match state.as_deref() {
                Some("Pending:Wait") => autoscaling::LAUNCHING,
                Some("Terminating:Wait") => autoscaling::TERMINATING,
                Some(other) => return Err(format!("instance {instance} is {other}: no lifecycle action waits on it")),
                None => return Err(format!("instance {instance} is in no Auto Scaling group")),
            };
            let found = discover::hooks(&asg, &group.name, transition, &[])?;
            if found.is_empty() {
                return Err(format!("group {} has no lifecycle hook for {transition}", group.name));
            }
            found.into_iter().map(|h| h.name).collect()
        }
    };
    for hook in hooks {
        match asg.complete(&group.name, &hook, &instance, result).map_err(|e| e.to_string())? {
            Completion::Completed => {
                tracing::info!("Completed lifecycle hook {hook} of group {} for {instance} with {result}", group.name)
            }
            Completion::NoActiveAction => {
                let message =
                    format!("No lifecycle action of hook {hook} waits on {instance} any more; nothing to complete");
                tracing::warn!("{message}");
                eprintln!("{message}");
            }
        }
    }
    Ok(())
}
