//! Which group the instance belongs to and which lifecycle hooks wait on it, for the
//! daemon and for `cfn-bootstrap lifecycle complete` alike: the group named in the
//! configuration (or on the command line), else the instance tag
//! `aws:autoscaling:groupName` when instance tags are in the metadata, else
//! DescribeAutoScalingInstances; the hooks named, else those of the transition that
//! DescribeLifecycleHooks lists.

use super::notice::{self, GROUP_TAG};
use cfn_aws::Imds;
use cfn_aws::autoscaling::{self, AutoScaling, LifecycleHook};

/// A group's name and where it came from (for the log and `status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub from: &'static str,
}

/// The group: `pinned`, else the instance tag, else DescribeAutoScalingInstances.
pub fn group(pinned: Option<&str>, imds: &Imds, asg: &AutoScaling, instance: &str) -> Result<Group, String> {
    if let Some(name) = pinned {
        return Ok(Group { name: name.to_string(), from: super::record::FROM_CONFIGURATION });
    }
    match imds.poll(GROUP_TAG, notice::BODY_LIMIT) {
        Ok(Some(tag)) if !tag.trim().is_empty() && tag.trim().len() <= 255 => {
            return Ok(Group { name: tag.trim().to_string(), from: super::record::FROM_TAG });
        }
        Ok(_) => {}
        Err(e) => tracing::debug!("No group name from the instance tags: {e}"),
    }
    match asg.describe_instance(instance) {
        Ok(Some(found)) => Ok(Group { name: found.group, from: super::record::FROM_DESCRIBE }),
        Ok(None) => Err(format!("instance {instance} is in no Auto Scaling group")),
        Err(e) => Err(format!("could not find the Auto Scaling group of {instance}: {e}")),
    }
}

/// The lifecycle hooks of `transition` (`autoscaling::LAUNCHING` or `TERMINATING`) to
/// complete: those `pinned`, else every one the group has for the transition.
pub fn hooks(
    asg: &AutoScaling,
    group: &str,
    transition: &str,
    pinned: &[String],
) -> Result<Vec<LifecycleHook>, String> {
    let listed = asg
        .lifecycle_hooks(group, pinned)
        .map_err(|e| format!("could not list the lifecycle hooks of group {group}: {e}"))?;
    let of_transition: Vec<LifecycleHook> = listed.into_iter().filter(|h| h.transition == transition).collect();
    if !pinned.is_empty() {
        // A pinned hook the group does not list is still completed (the call says
        // whether it exists), with AWS's default timeouts assumed.
        return Ok(pinned
            .iter()
            .map(|name| {
                of_transition.iter().find(|h| &h.name == name).cloned().unwrap_or_else(|| LifecycleHook {
                    name: name.clone(),
                    transition: transition.to_string(),
                    heartbeat_timeout: 3600,
                    global_timeout: autoscaling::default_global_timeout(3600),
                    default_result: "ABANDON".into(),
                })
            })
            .collect());
    }
    Ok(of_transition)
}
