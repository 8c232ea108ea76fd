#!/usr/bin/env python3
"""Self-check of the emulator's Auto Scaling lifecycle hooks, IMDS lifecycle items and fault
rules (body_size, hang, DELETE by id, "service": "autoscaling").

    target/emulator-venv/bin/python tests/emulator/selfcheck_autoscaling.py

Starts its own emulator on a free loopback port, with the command line the Rust tests use,
drives it with boto3 (signed requests, SigV4 validation on) and plain HTTP, and exits 0 only
when every check passes. Waits are polls with a deadline, never fixed sleeps.
"""
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials
import botocore.exceptions

HERE = os.path.dirname(os.path.abspath(__file__))
ACCESS_KEY, SECRET_KEY = "AKIDTESTKEY", "test/secret/key"  # the keys of tests/common/mod.rs
NS = "http://autoscaling.amazonaws.com/doc/2011-01-01/"
LAUNCHING, TERMINATING = "autoscaling:EC2_INSTANCE_LAUNCHING", "autoscaling:EC2_INSTANCE_TERMINATING"

RESULTS = {"passed": 0, "failed": []}


def check(cond, what):
    if cond:
        RESULTS["passed"] += 1
    else:
        RESULTS["failed"].append(what)
        print(f"FAIL: {what}", flush=True)
    return cond


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Emulator:
    """The emulator, started like tests/common/mod.rs does, ready once /_emu/ident answers
    with our token (another process may win the port: then start again elsewhere)."""

    def __init__(self):
        for attempt in range(5):
            self.port, ident = free_port(), "selfcheck-" + secrets.token_hex(6)
            self.log = tempfile.NamedTemporaryFile(prefix="emulator-", suffix=".log", delete=False)
            self.proc = subprocess.Popen(
                [sys.executable, os.path.join(HERE, "moto_cfn_server.py"), "--validate-sigv4", "--credentials",
                 f"{ACCESS_KEY}:{SECRET_KEY}", "--ident", ident, "--port", str(self.port)],
                stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
            self.url = f"http://127.0.0.1:{self.port}"
            deadline = time.time() + 60
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    if self.get("/_emu/ident")[1].get("ident") == ident:
                        return
                except OSError:
                    pass
                time.sleep(0.05)
            self.stop()
            if attempt < 4:
                os.unlink(self.log.name)
        raise SystemExit(f"the emulator did not start; see {self.log.name}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def http(self, method, path, body=None, headers=None, timeout=10):
        """(status, body bytes) of a plain HTTP request; HTTP errors are answers too."""
        data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def json(self, method, path, body=None):
        status, data = self.http(method, path, body)
        return status, json.loads(data) if data else None

    def get(self, path):
        return self.json("GET", path)

    def post(self, path, body):
        return self.json("POST", path, body)

    def state(self):
        return self.get("/_emu/autoscaling")[1]


def wait_for(what, cond, timeout=30.0):
    # A deadline for a failure only: a loaded 2-core machine can answer slowly.
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    return check(False, f"{what} (within {timeout} s)")


def client_error(call, **kwargs):
    """(code, message, HTTP status) of a call that must fail, or None when it succeeded."""
    try:
        call(**kwargs)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["Error"]["Message"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None


def signed_query(emu, params, secret=SECRET_KEY):
    """(status, text) of an Auto Scaling Query request signed with botocore's SigV4 signer."""
    body = "&".join(f"{k}={v}" for k, v in {"Version": "2011-01-01", **params}.items())
    req = botocore.awsrequest.AWSRequest("POST", emu.url + "/", data=body,
                                         headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(ACCESS_KEY, secret), "autoscaling",
                            "us-east-1").add_auth(req)
    status, data = emu.http("POST", "/", req.body, dict(req.headers))
    return status, data.decode()


def imds(emu, item, token=None):
    headers = {"X-aws-ec2-metadata-token": token} if token else {}
    status, data = emu.http("GET", "/latest/meta-data/" + item, headers=headers)
    return status, data.decode("utf-8", "replace")


def imds_token(emu):
    return emu.http("PUT", "/latest/api/token", headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})[1].decode()


def instance(emu, iid):
    return emu.state()["instances"].get(iid, {})


def states(emu, iid):
    return [h["state"] for h in instance(emu, iid).get("history", [])]


def action_of(emu, iid):
    return next((a for a in emu.state()["actions"] if a["instance"] == iid), None)


# --------------------------------------------------------------------------- the checks
def check_query_api(emu, asg):
    status, group = emu.post("/_emu/autoscaling/groups", {
        "name": "web", "instances": ["i-0000000000000000a"],
        "hooks": [{"name": "launch-1", "transition": "launching", "heartbeat_timeout": 300, "default_result": "CONTINUE"},
                  {"name": "launch-2", "transition": LAUNCHING, "heartbeat_timeout": 3600},
                  {"name": "term-1", "transition": "terminating", "heartbeat_timeout": 7200},
                  {"name": "term-2", "transition": TERMINATING}]})
    check(status == 200 and group["hooks"][0]["transition"] == LAUNCHING, "POST /_emu/autoscaling/groups")
    check(emu.post("/_emu/autoscaling/groups", {"name": "bad", "hooks": [{"name": "h", "transition": "x"}]})[0] == 400,
          "a hook with an unknown transition is refused")

    hooks = asg.describe_lifecycle_hooks(AutoScalingGroupName="web")["LifecycleHooks"]
    check([h["LifecycleHookName"] for h in hooks] == ["launch-1", "launch-2", "term-1", "term-2"], "DescribeLifecycleHooks lists the hooks")
    check(hooks[0]["GlobalTimeout"] == 30000 and hooks[1]["GlobalTimeout"] == 172800 and hooks[2]["GlobalTimeout"] == 172800,
          "GlobalTimeout is min(172800, 100 * HeartbeatTimeout)")
    check(hooks[3]["HeartbeatTimeout"] == 3600 and hooks[3]["DefaultResult"] == "ABANDON", "hook defaults: 3600 s, ABANDON")
    check(hooks[2]["LifecycleTransition"] == TERMINATING and hooks[2]["AutoScalingGroupName"] == "web", "hook transition and group")
    one = asg.describe_lifecycle_hooks(AutoScalingGroupName="web", LifecycleHookNames=["term-1"])["LifecycleHooks"]
    check([h["LifecycleHookName"] for h in one] == ["term-1"], "DescribeLifecycleHooks filters by LifecycleHookNames")
    check(client_error(asg.describe_lifecycle_hooks, AutoScalingGroupName="nope") == ("ValidationError", "Group nope not found", 400),
          "DescribeLifecycleHooks of an unknown group is a ValidationError")

    got = asg.describe_auto_scaling_instances(InstanceIds=["i-0000000000000000a", "i-0000000000000dead"])["AutoScalingInstances"]
    check(len(got) == 1 and got[0]["InstanceId"] == "i-0000000000000000a" and got[0]["LifecycleState"] == "InService"
          and got[0]["AutoScalingGroupName"] == "web" and got[0]["LaunchConfigurationName"] == "web-lc"
          and got[0]["HealthStatus"] == "HEALTHY" and got[0]["ProtectedFromScaleIn"] is False
          and got[0]["AvailabilityZone"] == "us-east-1a", "DescribeAutoScalingInstances of a member (unknown ids left out)")

    emu.post("/_emu/autoscaling/groups", {"name": "lt", "instances": ["i-00000000000000011"],
                                          "launch_template": {"id": "lt-0abc", "name": "tmpl", "version": "3"}})
    got = asg.describe_auto_scaling_instances(InstanceIds=["i-00000000000000011"])["AutoScalingInstances"][0]
    check(got.get("LaunchTemplate") == {"LaunchTemplateId": "lt-0abc", "LaunchTemplateName": "tmpl", "Version": "3"}
          and "LaunchConfigurationName" not in got, "DescribeAutoScalingInstances with a launch template")

    status, text = signed_query(emu, {"Action": "DescribeAutoScalingInstances", "InstanceIds.member.1": "i-0000000000000000a"})
    check(status == 200 and text.startswith(f'<DescribeAutoScalingInstancesResponse xmlns="{NS}"><DescribeAutoScalingInstancesResult>'
                                            "<AutoScalingInstances><member><InstanceId>i-0000000000000000a</InstanceId>")
          and "<LifecycleState>InService</LifecycleState>" in text and "<RequestId>" in text,
          "the raw XML has AWS's element names and namespace")
    status, text = signed_query(emu, {"Action": "DescribeLifecycleHooks", "AutoScalingGroupName": "web"}, secret="wrong")
    check(status == 403 and "<Code>SignatureDoesNotMatch</Code>" in text and NS in text, "a bad signature is refused (403)")
    status, text = signed_query(emu, {"Action": "DescribeLifecycleHooks", "AutoScalingGroupName": "nope"})
    check(status == 400 and f'<ErrorResponse xmlns="{NS}"><Error><Type>Sender</Type><Code>ValidationError</Code>' in text,
          "errors are Query ErrorResponse documents")
    journal = emu.get("/_emu/requests?kind=autoscaling")[1]
    check(journal and journal[-1]["action"] == "DescribeLifecycleHooks", "Auto Scaling calls are journaled as kind autoscaling")


def check_launch_and_terminate(emu, asg):
    a, b = "i-0000000000000000a", "i-0000000000000000b"
    emu.post("/_emu/autoscaling/instance", {"instance": b})
    check(imds(emu, "autoscaling/target-lifecycle-state")[0] == 404, "target-lifecycle-state is 404 before any transition")
    check(imds(emu, "instance-id")[1] == b, "POST /_emu/autoscaling/instance sets the IMDS instance id")

    status, inst = emu.post("/_emu/autoscaling/launch", {"instance": b, "group": "web"})
    check(status == 200 and inst["state"] == "Pending:Wait" and inst["hook"] == "launch-1", "launch waits on the first launch hook")
    check(imds(emu, "autoscaling/target-lifecycle-state") == (200, "InService"), "target-lifecycle-state InService while launching")
    check(emu.post("/_emu/autoscaling/launch", {"instance": b, "group": "web"})[0] == 409, "launching a live instance is refused")
    check(emu.post("/_emu/autoscaling/launch", {"instance": "i-1", "group": "nope"})[0] == 404, "launching into an unknown group is refused")
    got = asg.describe_auto_scaling_instances(InstanceIds=[b])["AutoScalingInstances"]
    check(got and got[0]["LifecycleState"] == "Pending:Wait", "DescribeAutoScalingInstances shows Pending:Wait")

    err = client_error(asg.complete_lifecycle_action, AutoScalingGroupName="web", LifecycleHookName="launch-2",
                       LifecycleActionResult="CONTINUE", InstanceId=b)
    check(err == ("ValidationError", f"No active Lifecycle Action found with instance ID {b}", 400),
          "completing a hook that is not pending yet: AWS's error")
    asg.complete_lifecycle_action(AutoScalingGroupName="web", LifecycleHookName="launch-1",
                                  LifecycleActionResult="CONTINUE", InstanceId=b)
    act = action_of(emu, b)
    check(act and act["hook"] == "launch-2" and instance(emu, b)["state"] == "Pending:Wait", "CONTINUE moves to the next launch hook")
    asg.complete_lifecycle_action(AutoScalingGroupName="web", LifecycleHookName="launch-2",
                                  LifecycleActionResult="CONTINUE", LifecycleActionToken=act["token"])
    check(states(emu, b) == ["Pending", "Pending:Wait", "Pending:Proceed", "InService"],
          "Pending -> Pending:Wait -> Pending:Proceed -> InService (completed by token)")
    err = client_error(asg.complete_lifecycle_action, AutoScalingGroupName="web", LifecycleHookName="launch-2",
                       LifecycleActionResult="CONTINUE", LifecycleActionToken=act["token"])
    check(err and err[1] == f"No active Lifecycle Action found with token {act['token']}", "a used token: AWS's error")
    err = client_error(asg.record_lifecycle_action_heartbeat, AutoScalingGroupName="web", LifecycleHookName="launch-1",
                       InstanceId=b)
    check(err == ("ValidationError", f"No active Lifecycle Action found with instance ID {b}", 400),
          "a heartbeat with no pending action: AWS's error")
    err = client_error(asg.complete_lifecycle_action, AutoScalingGroupName="web", LifecycleHookName="launch-1",
                       LifecycleActionResult="MAYBE", InstanceId=b)
    check(err and err[0] == "ValidationError" and "MAYBE" in err[1], "an unknown LifecycleActionResult is a ValidationError")
    st = emu.state()
    check([(c["hook"], c["result"], c["source"]) for c in st["completions"] if c["instance"] == b]
          == [("launch-1", "CONTINUE", "api"), ("launch-2", "CONTINUE", "api")], "completions are recorded (source api)")
    check(len([r for r in st["rejected"] if "No active Lifecycle Action" in r["reason"]]) == 3
          and st["rejected"][-1]["action"] == "CompleteLifecycleAction", "rejected calls are recorded")

    status, inst = emu.post("/_emu/autoscaling/terminate", {"instance": b})
    check(status == 200 and inst["state"] == "Terminating:Wait" and inst["hook"] == "term-1", "terminate waits on the first terminate hook")
    check(imds(emu, "autoscaling/target-lifecycle-state")[1] == "Terminated", "target-lifecycle-state Terminated once termination starts")
    asg.complete_lifecycle_action(AutoScalingGroupName="web", LifecycleHookName="term-1",
                                  LifecycleActionResult="ABANDON", InstanceId=b)
    check(states(emu, b)[3:] == ["InService", "Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminated"],
          "ABANDON while terminating: Terminating:Proceed -> Terminated")
    check(not [c for c in emu.state()["completions"] if c["instance"] == b and c["hook"] == "term-2"],
          "ABANDON skips the remaining terminate hooks")
    check(asg.describe_auto_scaling_instances(InstanceIds=[b])["AutoScalingInstances"] == [],
          "a terminated instance is no longer described")
    check(emu.post("/_emu/autoscaling/terminate", {"instance": b})[0] == 409, "terminating a terminated instance is refused")

    c = "i-0000000000000000c"
    emu.post("/_emu/autoscaling/launch", {"instance": c, "group": "web"})
    asg.complete_lifecycle_action(AutoScalingGroupName="web", LifecycleHookName="launch-1",
                                  LifecycleActionResult="ABANDON", InstanceId=c)
    inst = instance(emu, c)
    check(inst["state"] == "Terminating:Wait" and inst["hook"] == "term-1" and inst["target_state"] == "Terminated",
          "ABANDON on launch terminates (through the terminate hooks)")
    for hook in ("term-1", "term-2"):
        asg.complete_lifecycle_action(AutoScalingGroupName="web", LifecycleHookName=hook,
                                      LifecycleActionResult="CONTINUE", InstanceId=c)
    check(states(emu, c) == ["Pending", "Pending:Wait", "Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminated"],
          "CONTINUE goes through every terminate hook to Terminated")

    status, inst = emu.post("/_emu/autoscaling/terminate", {"instance": a})
    check(inst["state"] == "Terminating:Wait", "terminating an initial member")
    status, inst = emu.post("/_emu/autoscaling/target-state", {"instance": a, "state": "Standby"})
    check(status == 200 and inst["target_state"] == "Standby", "POST /_emu/autoscaling/target-state")
    emu.post("/_emu/autoscaling/instance", {"instance": a})
    check(imds(emu, "autoscaling/target-lifecycle-state")[1] == "Standby", "IMDS follows the chosen instance")


def check_timeouts(emu, asg):
    check(emu.post("/_emu/settings", {"autoscaling_time_scale": 0})[0] == 400, "a time scale of 0 is refused")
    check(emu.post("/_emu/settings", {"autoscaling_time_scale": 100})[1]["autoscaling_time_scale"] == 100, "time scale 100")
    emu.post("/_emu/autoscaling/groups", {"name": "t", "hooks": [
        {"name": "up", "transition": "launching", "heartbeat_timeout": 30, "default_result": "CONTINUE"},
        {"name": "down", "transition": "terminating", "heartbeat_timeout": 30, "default_result": "ABANDON"}]})
    d = "i-0000000000000000d"
    emu.post("/_emu/autoscaling/launch", {"instance": d, "group": "t"})
    wait_for("a launch action times out into its default CONTINUE", lambda: instance(emu, d)["state"] == "InService")
    comp = [x for x in emu.state()["completions"] if x["instance"] == d]
    check([(x["hook"], x["result"], x["source"]) for x in comp] == [("up", "CONTINUE", "timeout")], "timeout completion recorded")
    check(comp[0]["time"] - instance(emu, d)["history"][0]["time"] >= 0.29, "30 s at scale 100 takes at least 0.3 s")

    emu.post("/_emu/autoscaling/groups", {"name": "u", "hooks": [
        {"name": "up", "transition": "launching", "heartbeat_timeout": 30, "default_result": "ABANDON"}]})
    e = "i-0000000000000000e"
    emu.post("/_emu/autoscaling/launch", {"instance": e, "group": "u"})
    wait_for("a launch action times out into its default ABANDON", lambda: instance(emu, e)["state"] == "Terminated")

    # heartbeats extend the heartbeat timeout (20 s at scale 5: 4 s), never past the global
    # timeout (60 s: 12 s); only lower bounds on times, which load cannot break
    emu.post("/_emu/settings", {"autoscaling_time_scale": 5})
    emu.post("/_emu/autoscaling/groups", {"name": "h", "hooks": [
        {"name": "up", "transition": "launching", "heartbeat_timeout": 20, "global_timeout": 60, "default_result": "CONTINUE"}]})
    check(asg.describe_lifecycle_hooks(AutoScalingGroupName="h")["LifecycleHooks"][0]["GlobalTimeout"] == 60,
          "a group may set a hook's global timeout")
    f = "i-0000000000000000f"
    emu.post("/_emu/autoscaling/launch", {"instance": f, "group": "h"})
    start = time.time()
    while time.time() - start < 6:
        asg.record_lifecycle_action_heartbeat(AutoScalingGroupName="h", LifecycleHookName="up", InstanceId=f)
        time.sleep(0.1)
    check(instance(emu, f)["state"] == "Pending:Wait", "heartbeats keep the action pending past its heartbeat timeout")
    act = action_of(emu, f)
    check(act and act["heartbeat_deadline"] <= act["global_deadline"] + 1e-6, "the heartbeat deadline never passes the global one")
    hb = [x for x in emu.state()["heartbeats"] if x["instance"] == f]
    check(len(hb) >= 5, "heartbeats are recorded")
    while instance(emu, f)["state"] == "Pending:Wait" and time.time() - start < 60:
        asg.record_lifecycle_action_heartbeat(AutoScalingGroupName="h", LifecycleHookName="up", InstanceId=f)
        time.sleep(0.1)
    took = time.time() - start
    check(instance(emu, f)["state"] == "InService" and took >= 11.9,
          f"the global timeout (60 s at scale 5: 12 s) ends the action despite heartbeats (took {took:.2f} s)")

    g = "i-00000000000000010"
    emu.post("/_emu/autoscaling/launch", {"instance": g, "group": "h"})
    wait_for("without heartbeats the action times out after its heartbeat timeout",
             lambda: instance(emu, g)["state"] == "InService")
    emu.post("/_emu/settings", {"autoscaling_time_scale": 1})


def check_throttling(emu):
    asg = boto3.client("autoscaling", endpoint_url=emu.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                       aws_secret_access_key=SECRET_KEY, config=botocore.config.Config(retries={"total_max_attempts": 1}))
    status, rules = emu.post("/_emu/faults", {"service": "autoscaling", "count": 2})
    check(status == 200 and rules[-1]["service"] == "autoscaling" and rules[-1]["code"] == "Throttling", "an autoscaling fault rule")
    for n in (1, 2):
        err = client_error(asg.describe_lifecycle_hooks, AutoScalingGroupName="web")
        check(err == ("Throttling", "Rate exceeded", 400), f"throttled Auto Scaling call {n}")
    check(client_error(asg.describe_lifecycle_hooks, AutoScalingGroupName="web") is None, "the third call is answered")
    emu.post("/_emu/faults", {"service": "autoscaling", "count": 1})
    status, text = signed_query(emu, {"Action": "DescribeAutoScalingInstances"})
    check(status == 400 and f'<ErrorResponse xmlns="{NS}">' in text and "<Code>Throttling</Code>" in text,
          "a throttled call is an Auto Scaling ErrorResponse")
    emu.post("/_emu/faults", {"action": "DescribeStackResource", "count": 1})
    check(client_error(asg.describe_lifecycle_hooks, AutoScalingGroupName="web") is None,
          "CloudFormation rules do not match Auto Scaling calls")
    emu.http("DELETE", "/_emu/faults")
    emu.post("/_emu/faults", {"service": "cloudformation", "action": "DescribeStacks", "count": 1})
    cfn = boto3.client("cloudformation", endpoint_url=emu.url, region_name="us-east-1", aws_access_key_id=ACCESS_KEY,
                       aws_secret_access_key=SECRET_KEY, config=botocore.config.Config(retries={"total_max_attempts": 1}))
    check(client_error(cfn.describe_stacks) == ("Throttling", "Rate exceeded", 400), "CloudFormation rules still apply")
    groups = asg.describe_auto_scaling_groups()["AutoScalingGroups"]
    check(isinstance(groups, list), "other Auto Scaling actions are answered by moto")
    check(emu.post("/_emu/faults", {"service": "autoscaling", "stack": "x"})[0] == 400, "'stack' is refused for autoscaling rules")
    check(emu.post("/_emu/faults", {"service": "s3"})[0] == 400, "an unknown service is refused")


def check_imds_items(emu):
    emu.post("/_emu/autoscaling/instance", {"instance": "i-0000000000000000d"})  # a member of group "t"
    for item in ("spot/instance-action", "events/recommendations/rebalance", "events/maintenance/scheduled",
                 "tags/instance", "tags/instance/aws:autoscaling:groupName"):
        check(imds(emu, item)[0] == 404, f"{item} is 404 when unset")
    status, conf = emu.post("/_emu/imds", {
        "spot_instance_action": {"action": "terminate"}, "rebalance_recommendation": {},
        "maintenance_events": [{"Code": "system-reboot", "EventId": "instance-event-0123456789abcdef0"}],
        "instance_tags": {"Name": "web-1"}})
    check(status == 200 and conf["spot_instance_action"]["time"].endswith("Z"), "POST /_emu/imds fills in the spot time")
    check(emu.post("/_emu/imds", {"instance_tags": ["x"]})[0] == 400, "wrong IMDS item types are refused")
    token = imds_token(emu)
    for tok, how in ((None, "v1"), (token, "v2")):
        status, text = imds(emu, "spot/instance-action", tok)
        doc = json.loads(text) if status == 200 else {}
        check(doc.get("action") == "terminate" and len(doc.get("time", "")) == 20, f"spot/instance-action ({how})")
        status, text = imds(emu, "events/recommendations/rebalance", tok)
        check(status == 200 and json.loads(text)["noticeTime"].endswith("Z"), f"events/recommendations/rebalance ({how})")
        status, text = imds(emu, "events/maintenance/scheduled", tok)
        ev = json.loads(text) if status == 200 else [{}]
        check(ev[0].get("EventId") == "instance-event-0123456789abcdef0" and ev[0].get("State") == "active"
              and ev[0].get("NotBefore", "").endswith("GMT"), f"events/maintenance/scheduled ({how})")
        status, text = imds(emu, "tags/instance", tok)
        check(status == 200 and text.split("\n") == ["Name", "aws:autoscaling:groupName"], f"tags/instance listing ({how})")
        check(imds(emu, "tags/instance/aws:autoscaling:groupName", tok) == (200, "t"), f"tags/instance/aws:autoscaling:groupName ({how})")
        check(imds(emu, "autoscaling/target-lifecycle-state", tok) == (200, "InService"), f"target-lifecycle-state ({how})")
    check(imds(emu, "spot/instance-action", "not-a-token")[0] == 401, "a bad IMDSv2 token is refused (401)")
    check("spot/" in imds(emu, "")[1].split("\n"), "the meta-data listing shows the set items")
    emu.post("/_emu/imds", {"maintenance_events": [], "instance_tags": None, "spot_instance_action": None})
    check(imds(emu, "events/maintenance/scheduled") == (200, "[]"), "no scheduled events set: []")
    check(imds(emu, "tags/instance")[0] == 404 and imds(emu, "spot/instance-action")[0] == 404, "null removes an item")


def check_faults(emu):
    status, rules = emu.post("/_emu/faults", {"path": "/latest/meta-data/events/recommendations/rebalance",
                                              "status": 200, "body_size": 5000, "count": -1})
    rid = rules[-1]["id"]
    status, data = emu.http("GET", "/latest/meta-data/events/recommendations/rebalance")
    check(status == 200 and len(data) == 5000 and not data.startswith(b"{"), "body_size answers that many bytes of junk")
    check(imds(emu, "instance-id")[0] == 200, "a per-item rule leaves the other items alone")
    status, rules = emu.json("DELETE", f"/_emu/faults?id={rid}")
    check(status == 200 and not [r for r in rules if r["id"] == rid], "DELETE /_emu/faults?id=N removes that rule")
    check(emu.json("DELETE", "/_emu/faults?id=99999")[0] == 404, "DELETE of an unknown id is 404")

    rid = emu.post("/_emu/faults", {"path": "/latest/meta-data/instance-id", "hang": True, "passthrough": True,
                                    "count": -1})[1][-1]["id"]
    t0 = time.time()
    try:
        emu.http("GET", "/latest/meta-data/instance-id", timeout=0.3)
        check(False, "a hanging rule holds the request")
    except OSError:
        check(time.time() - t0 < 20, "a hanging rule holds the request (client timeout)")
    answer = {}
    held = threading.Thread(target=lambda: answer.update(r=emu.http("GET", "/latest/meta-data/instance-id")))
    held.start()
    wait_for("the held request is journaled",
             lambda: [e for e in emu.get("/_emu/requests?kind=imds")[1] if e["fault"] == rid and e["status"] is None])
    check(not answer, "the request is still held")
    emu.json("DELETE", f"/_emu/faults?id={rid}")
    held.join(5)
    check(answer.get("r", (0,))[0] == 200, "deleting the rule lets the held request go on (passthrough)")

    emu.post("/_emu/faults", {"path": "/latest/meta-data/ami-id", "hang": 0.4, "status": 503})
    t0 = time.time()
    status, _ = emu.http("GET", "/latest/meta-data/ami-id")
    took = time.time() - t0
    check(status == 503 and 0.35 <= took < 30, f"hang N holds the request N seconds, then answers ({took:.2f} s)")
    emu.post("/_emu/faults", {"path": "/latest/meta-data/hostname", "hang": True, "status": 502})
    answer.clear()
    held = threading.Thread(target=lambda: answer.update(r=emu.http("GET", "/latest/meta-data/hostname")))
    held.start()
    wait_for("the second held request is journaled",
             lambda: [e for e in emu.get("/_emu/requests?kind=imds")[1] if e["path"].endswith("/hostname") and e["status"] is None])
    emu.json("DELETE", "/_emu/faults")
    held.join(5)
    check(answer.get("r", (0,))[0] == 502, "DELETE /_emu/faults lets held requests go (a used-up rule still holds until then)")
    check(emu.post("/_emu/faults", {"path": "/x", "hang": -1})[0] == 400, "a negative hang is refused")
    check(emu.post("/_emu/faults", {"path": "/x", "body_size": "big"})[0] == 400, "a non-integer body_size is refused")


def check_reset(emu):
    status, st = emu.json("DELETE", "/_emu/autoscaling")
    check(status == 200 and st["instances"] == {} and st["groups"] == {} and st["completions"] == [], "DELETE /_emu/autoscaling resets")
    check(emu.post("/_emu/autoscaling/nope", {})[0] == 404, "an unknown control route is 404")


def main():
    t0 = time.time()
    emu = Emulator()
    try:
        asg = boto3.client("autoscaling", endpoint_url=emu.url, region_name="us-east-1",
                           aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
        for part in (check_query_api, check_launch_and_terminate, check_timeouts):
            part(emu, asg)
        check_throttling(emu)
        check_imds_items(emu)
        check_faults(emu)
        check_reset(emu)
    finally:
        emu.stop()
    took = time.time() - t0
    total = RESULTS["passed"] + len(RESULTS["failed"])
    print(f"selfcheck_autoscaling: {RESULTS['passed']}/{total} checks passed in {took:.1f} s")
    if RESULTS["failed"]:
        print(f"emulator log: {emu.log.name}")
    else:
        os.unlink(emu.log.name)
    sys.exit(0 if not RESULTS["failed"] else 1)


if __name__ == "__main__":
    main()
