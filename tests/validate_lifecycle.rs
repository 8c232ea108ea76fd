//! `cfn-bootstrap validate -t` on `on.asg.*` hooks written by Init (issue 32, point 7): the
//! group that launches the instance must have a lifecycle hook of the hook's transition
//! (E068), a pinned `lifecycle-hook=` must be one it defines (E069), an action's
//! `timeout=` should fit in the hook's global timeout (W063), and the instance role should
//! be allowed autoscaling:CompleteLifecycleAction (W064). Values the template cannot know
//! make no finding. The template is the one docs/lifecycle.md shows.

mod common;
use common::*;
use serde_json::Value;

/// The template of docs/lifecycle.md.
const TEMPLATE: &str = r#"Resources:
  InstanceRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement: [{Effect: Allow, Principal: {Service: ec2.amazonaws.com}, Action: sts:AssumeRole}]
      Policies:
        - PolicyName: lifecycle
          PolicyDocument:
            Statement:
              - Effect: Allow
                Action: [autoscaling:CompleteLifecycleAction, autoscaling:RecordLifecycleActionHeartbeat]
                Resource: !Sub arn:${AWS::Partition}:autoscaling:${AWS::Region}:${AWS::AccountId}:autoScalingGroup:*:autoScalingGroupName/${AWS::StackName}-web
              - Effect: Allow
                Action: [autoscaling:DescribeAutoScalingInstances, autoscaling:DescribeLifecycleHooks]
                Resource: "*"
  InstanceProfile:
    Type: AWS::IAM::InstanceProfile
    Properties: {Roles: [!Ref InstanceRole]}
  Group:
    Type: AWS::AutoScaling::AutoScalingGroup
    Properties:
      AutoScalingGroupName: !Sub ${AWS::StackName}-web
      MinSize: "2"
      MaxSize: "4"
      LaunchTemplate: {LaunchTemplateId: !Ref LaunchTemplate, Version: !GetAtt LaunchTemplate.LatestVersionNumber}
      VPCZoneIdentifier: [subnet-0123456789abcdef0]
  Drain:
    Type: AWS::AutoScaling::LifecycleHook
    Properties:
      AutoScalingGroupName: !Ref Group
      LifecycleTransition: autoscaling:EC2_INSTANCE_TERMINATING
      HeartbeatTimeout: 300      # cfn-hup sends a heartbeat about every 150 s while the drain runs
      DefaultResult: CONTINUE
  LaunchTemplate:
    Type: AWS::EC2::LaunchTemplate
    Metadata:
      AWS::CloudFormation::Init:
        config:
          files:
            /etc/cfn/cfn-hup.conf:
              content: !Sub "[main]\nstack=${AWS::StackId}\nregion=${AWS::Region}\n"
              mode: "000400"
            /etc/cfn/hooks.d/drain.conf:
              content: |
                [drain]
                triggers=on.asg.terminate
                action=/usr/local/bin/drain-node
                timeout=1200
              mode: "000400"
          services:
            systemd:
              cfn-hup: {enabled: true, ensureRunning: true}
    Properties:
      LaunchTemplateData:
        IamInstanceProfile: {Arn: !GetAtt InstanceProfile.Arn}
        MetadataOptions: {HttpTokens: required, InstanceMetadataTags: enabled}
        ImageId: ami-0123456789abcdef0
        UserData:
          Fn::Base64: !Sub |
            #!/bin/bash
            /opt/aws/bin/cfn-init -s ${AWS::StackId} -r LaunchTemplate --region ${AWS::Region}
"#;

/// The lifecycle findings of `validate -t` on `text`: (code, severity, line, message).
fn findings(text: &str) -> Vec<(String, String, u64, String)> {
    let sandbox = Sandbox::with_bootstrap();
    let file = sandbox.path("template.yaml");
    std::fs::write(&file, text).unwrap();
    let run = sandbox.cmd("cfn-bootstrap").arg("validate").arg("-t").arg(&file).arg("--format").arg("json").run();
    let json: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e})\n{run}"));
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| ["E068", "E069", "W063", "W064"].contains(&f["code"].as_str().unwrap_or_default()))
        .map(|f| {
            let text = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (text("code"), text("severity"), f["line"].as_u64().unwrap_or(0), text("message"))
        })
        .collect()
}

/// The template with `from` replaced by `to` (which must be there).
fn edited(from: &str, to: &str) -> String {
    assert!(TEMPLATE.contains(from), "{from:?} is not in the template");
    TEMPLATE.replacen(from, to, 1)
}

/// The line of the hook's `triggers=` in the template.
fn triggers_line(text: &str) -> u64 {
    text.lines().position(|l| l.contains("triggers=on.asg.")).unwrap() as u64 + 1
}

const DRAIN: &str = "  Drain:
    Type: AWS::AutoScaling::LifecycleHook
    Properties:
      AutoScalingGroupName: !Ref Group
";

#[test]
fn the_documented_template_has_no_lifecycle_finding() {
    assert_eq!(findings(TEMPLATE), []);
}

#[test]
fn a_group_without_a_terminate_hook_is_an_error_at_the_triggers_line() {
    let text = edited(
        "LifecycleTransition: autoscaling:EC2_INSTANCE_TERMINATING",
        "LifecycleTransition: autoscaling:EC2_INSTANCE_LAUNCHING",
    );
    let found = findings(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    let (code, severity, line, message) = &found[0];
    assert_eq!((code.as_str(), severity.as_str(), *line), ("E068", "error", triggers_line(&text)));
    assert!(
        message.contains(
            "group Group, which launches LaunchTemplate, has no lifecycle hook of autoscaling:EC2_INSTANCE_TERMINATING"
        ),
        "{message}"
    );
    // The same hook given in the group's LifecycleHookSpecificationList is found there.
    let listed = text.replace(
        "      VPCZoneIdentifier:",
        "      LifecycleHookSpecificationList:\n        - {LifecycleHookName: drain, LifecycleTransition: autoscaling:EC2_INSTANCE_TERMINATING}\n      VPCZoneIdentifier:",
    );
    assert_eq!(findings(&listed), []);
}

#[test]
fn what_the_template_cannot_know_makes_no_finding() {
    // The hook's group from a parameter: it may be this group.
    let text = edited(
        "LifecycleTransition: autoscaling:EC2_INSTANCE_TERMINATING",
        "LifecycleTransition: autoscaling:EC2_INSTANCE_LAUNCHING",
    )
    .replace(DRAIN, &DRAIN.replace("!Ref Group", "!Ref OtherGroup"))
    .replace("Resources:\n", "Parameters:\n  OtherGroup: {Type: String}\nResources:\n");
    assert_eq!(findings(&text), []);
    // A pinned name, and the hook's name generated by CloudFormation.
    let pinned = edited("timeout=1200\n", "timeout=1200\n                lifecycle-hook=drain\n");
    assert_eq!(findings(&pinned), []);
    // A managed policy of the account may allow it.
    let managed = edited(
        "      Policies:\n",
        "      ManagedPolicyArns: [arn:aws:iam::aws:policy/AutoScalingFullAccess]\n      Policies:\n",
    )
    .replace("autoscaling:CompleteLifecycleAction, ", "");
    assert_eq!(findings(&managed), []);
}

#[test]
fn a_pinned_hook_the_group_does_not_define_is_an_error() {
    let text = edited("timeout=1200\n", "timeout=1200\n                lifecycle-hook=drian\n")
        .replace(DRAIN, &format!("{DRAIN}      LifecycleHookName: drain\n"));
    let found = findings(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "E069");
    assert!(found[0].3.contains("lifecycle-hook=drian, but group Group defines no lifecycle hook drian"), "{found:?}");
    assert_eq!(findings(&text.replace("lifecycle-hook=drian", "lifecycle-hook=drain")), []);
}

#[test]
fn a_timeout_past_the_global_timeout_is_a_warning() {
    // HeartbeatTimeout 300: the global timeout is 30000 s.
    let found = findings(&edited("timeout=1200", "timeout=30001"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].1.as_str()), ("W063", "warning"));
    assert!(found[0].3.contains("(30000 s"), "{found:?}");
    assert_eq!(findings(&edited("timeout=1200", "timeout=30000")), []);
}

#[test]
fn an_instance_role_not_allowed_to_complete_is_a_warning() {
    let text = edited("autoscaling:CompleteLifecycleAction, ", "");
    let found = findings(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].1.as_str()), ("W064", "warning"));
    assert!(found[0].3.contains("the instance role InstanceRole"), "{found:?}");
    // Allowed by a wildcard, or by an AWS::IAM::Policy attached to the role.
    assert_eq!(findings(&edited("autoscaling:CompleteLifecycleAction, ", "autoscaling:Complete*, ")), []);
    let policy = text.replace(
        "  InstanceProfile:\n",
        "  Completion:\n    Type: AWS::IAM::Policy\n    Properties:\n      PolicyName: complete\n      Roles: [!Ref InstanceRole]\n      PolicyDocument:\n        Statement: [{Effect: Allow, Action: 'autoscaling:*', Resource: '*'}]\n  InstanceProfile:\n",
    );
    assert_eq!(findings(&policy), []);
}
