#!/usr/bin/env python3
"""moto_cfn_server.py - moto server plus the CloudFormation and IMDS pieces that the
AWS CloudFormation helper scripts (cfn-init, cfn-signal, cfn-hup, cfn-get-metadata) need.

Usage (needs `pip install 'moto[server]'`, tested with moto 5.2.5 / Python 3.11):

    python3 moto_cfn_server.py --port 5000 [--region us-east-1] [--validate-sigv4]
        [--credentials AKID:SECRET[:SESSIONTOKEN]]... [--imds-v2-required]
        [--imds-host 169.254.169.254 --imds-port 80] [--public-url http://host:port]
        [--instance-id i-...] [--user-data-file FILE] [--accept-all-signals]

    CloudFormation endpoint : http://127.0.0.1:PORT/          (Query API, GET or POST)
    S3 / EC2 / IAM / ...    : http://127.0.0.1:PORT/          (plain moto, path-style S3)
    IMDS (v1 + v2)          : http://127.0.0.1:PORT/latest/... (and on --imds-host/--imds-port)
    SQS (query protocol)    : http://127.0.0.1:PORT/<account>/<queue>  (plain moto, SigV4 "sqs")
    Wait-condition handles  : http://127.0.0.1:PORT/_waitcondition/...  (PUT, presigned-style)
    Command event handles   : http://127.0.0.1:PORT/_events/<anything>  (PUT, recorded)
    Test introspection      : GET /_emu/ident (the --ident token), GET /_emu/signals, GET /_emu/state, POST /_emu/imds (JSON body
                              overrides IMDS fields), GET /_emu/requests (request journal),
                              GET|POST|DELETE /_emu/faults[?id=N] (fault injection), GET /_emu/events
                              (command event PUTs), GET /_emu/leaders (command leaders),
                              GET /_emu/listeners (registered command listeners),
                              GET|POST /_emu/settings (date_offset_seconds: shifts the Date header;
                              autoscaling_time_scale: lifecycle timeouts run N times faster),
                              GET|DELETE /_emu/autoscaling, POST /_emu/autoscaling/{groups,launch,
                              terminate,instance,target-state} (lifecycle hooks, see autoscaling.py),
                              POST /_emu/reset (forget signals/tokens/journal/faults/events/leaders,
                              settings back to their defaults)

What it adds on top of stock moto (everything else is passed to moto unchanged):
  * DescribeStackResource returns Metadata (template Metadata with Ref/Fn::* resolved by
    moto's own resolver), a real ResourceStatus and LastUpdatedTimestamp; works for every
    resource type in the template (also ones moto cannot model), XML or ContentType=JSON
    (the format aws-cfn-bootstrap uses: GET, ContentType=JSON, epoch timestamps).
  * DescribeStackResources re-implemented the same way (no crash on unmodelled resources).
  * (moto itself already answers the other actions in JSON when ContentType=JSON is given.)
  * Unsigned and CFN_V1 (instance-identity) signed CloudFormation requests are routed to
    CloudFormation (stock moto routes them to S3).
  * UpdateStack: Metadata-only changes no longer make the resource vanish (moto bug: EC2
    instances have no update handler, so the resource became None); metadata changes bump
    LastUpdatedTimestamp and add UPDATE_* resource events; "No updates are to be performed."
    and "is in X state and can not be updated" are enforced like real CloudFormation.
  * SignalResource + CreationPolicy (ResourceSignal Count/Timeout): the stack stays
    CREATE_IN_PROGRESS until Count SUCCESS signals (distinct UniqueId) arrive; a FAILURE
    signal or the timeout fails the resource and rolls the stack back (ROLLBACK_COMPLETE,
    or CREATE_FAILED with DisableRollback/OnFailure=DO_NOTHING). Stack events carry
    "Received SUCCESS signal with UniqueId ...". Signals to stacks that do not wait get
    the real ValidationError "... is in CREATE_COMPLETE state and cannot be signaled"
    (or are accepted with --accept-all-signals). All signals are journaled (/_emu/signals).
  * AWS::CloudFormation::WaitConditionHandle: Ref gives an HMAC-"presigned" URL on this
    server that accepts PUT with the cfn-signal JSON body ({"Status","Reason","UniqueId",
    "Data"}); tampered/expired URLs get 403. AWS::CloudFormation::WaitCondition (Handle,
    Count, Timeout, or CreationPolicy) blocks the stack like above; Fn::GetAtt Data works.
  * IMDS: v1 and v2 (PUT /latest/api/token with TTL header, 401 on bad token, optional
    --imds-v2-required), meta-data tree with listings, placement/region, iam/info,
    iam/security-credentials/<role> (Code/Type/LastUpdated/Expiration), dynamic
    instance-identity document/signature/pkcs7, user-data.
  * ElectCommandLeader (internal CloudFormation action of the command feature, unknown to
    botocore and moto): the first listener to ask for a (stack, CommandName, InvocationId)
    becomes its leader; every caller gets {"ListenerId": <leader>} back (XML or
    ContentType=JSON). CFN_V1 callers send no ListenerId: their instance id is used. An unknown
    stack is the ValidationError "Stack with id X does not exist". Leaders: GET /_emu/leaders.
  * RegisterListener (internal, cfn-hup command hooks): creates - or finds - a moto SQS queue
    for (stack, ListenerId) in the caller's region and answers {"QueueUrl": ...} (the URL on
    this server, http://HOST:PORT/<account>/<queue>). GetListenerCredentials: fresh
    temporary keys {"AccessKeyId" "ASIALISTENER...", "SecretAccessKey", "SessionToken",
    "Expiration": epoch seconds, one hour ahead}; the keys are added to the keys SigV4
    validation accepts (with their session token), so the listener can sign its SQS calls
    with them. Both take the instance id as ListenerId for CFN_V1 callers; an unknown stack
    is the ValidationError "Stack with id X does not exist". Listeners: GET /_emu/listeners.
  * SQS is stock moto, routed by the SigV4 scope "sqs", in both protocols: the AWS JSON 1.0
    protocol of the AWS SDKs (POST /, `X-Amz-Target: AmazonSQS.<Action>`, the queue as
    `QueueUrl` in the JSON body, errors with `x-amzn-query-error`) and the query protocol
    (XML answers, namespace 2012-11-05). moto reads query-protocol parameters only from a
    POST form, so a GET with the parameters in the query string (ReceiveMessage/DeleteMessage
    as the reference sends them) is handed to moto as the equivalent POST after its
    signature has been checked. The queue path answers with or without a trailing slash
    (the reference sends `/<account>/<queue>/`), as real SQS does. JSON-protocol requests are journaled with their action (from
    the target header), "json" (the body) and "queue" (the path of QueueUrl); path fault
    rules match them by that queue path.
  * Command event handles: PUT /_events/<anything> is recorded (path, query, Content-Type,
    User-Agent, body; GET /_emu/events) and answered 200 - the target of cfn-send-cmd-event.
    It is journaled (kind "event") and path fault rules apply to it.
  * Optional SigV4 validation (--validate-sigv4): header and query (presigned) SigV4 is
    recomputed for every request with an Authorization header or X-Amz-Signature; unknown
    keys -> 403 InvalidClientTokenId, bad signature -> 403 SignatureDoesNotMatch, unsigned
    CloudFormation calls -> 403 MissingAuthenticationToken. Known keys: --credentials
    (default testing:testing) plus the IMDS role credentials (with their session token) and
    the keys moto's STS issued (AssumeRole, AssumeRoleWithWebIdentity; with their token).
    CFN_V1 (instance identity) auth is accepted (its signature is not checked).
  * Test hooks: every request (CloudFormation, IMDS on both listeners, wait-condition PUTs,
    command event PUTs, other moto services) is journaled with its method, path, parameters, a few headers, the
    time and the answer's status (GET /_emu/requests). POST /_emu/faults queues fault rules:
    the next `count` matching CloudFormation requests (by Action/StackName) or requests under
    a path prefix (e.g. /latest/ for IMDS) get the given error (rendered like real
    CloudFormation errors, or a verbatim body), optionally after a delay; a rule may be
    limited to a time window ("after" seconds from now, "for" seconds) and may answer a
    matching request only with a given "probability" (flapping services, soak tests). A path
    rule with a "delay" longer than the client's timeout makes a request time out, e.g. the
    IMDSv2 token PUT while GETs are answered (what a metadata hop limit of 1 does in a container).
  * Auto Scaling lifecycle hooks (autoscaling.py), routed by the SigV4 scope "autoscaling":
    DescribeAutoScalingInstances, DescribeLifecycleHooks, CompleteLifecycleAction and
    RecordLifecycleActionHeartbeat over groups, hooks and instances set up through
    /_emu/autoscaling, with the real Pending:Wait / Terminating:Wait state machine, heartbeat
    and global timeouts taking the hook's DefaultResult; other Auto Scaling actions are moto's.
    IMDS serves autoscaling/target-lifecycle-state, and - when set through POST /_emu/imds -
    spot/instance-action, events/recommendations/rebalance, events/maintenance/scheduled and
    tags/instance/... Fault rules with "service": "autoscaling" answer Auto Scaling calls
    (Throttling by default); any rule may answer "body_size" bytes of junk or "hang" until it
    is deleted (DELETE /_emu/faults?id=N) or for a number of seconds.
  * Settings (POST /_emu/settings, a JSON object; GET shows them; reset by /_emu/reset):
    "date_offset_seconds" shifts the Date header of every answer on the main port (and
    --tls-port) by that many seconds, as if the service's clock were that far ahead (negative:
    behind) - for clock-skew checks.
"""
import argparse
import base64
import copy
import datetime as dt
import hashlib
import hmac
import http
import io
import json
import os
import random
import re
import secrets
import sys
import threading
import time
import uuid
from urllib.parse import parse_qsl, quote, urlparse
from xml.sax.saxutils import escape

from werkzeug.serving import make_server, run_simple

import autoscaling
from query_xml import iso, xml_fields

import moto.cloudformation.parsing as cfn_parsing
from moto.cloudformation.models import Event, cloudformation_backends
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.common_models import CloudFormationModel
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

CFN_NS = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
LOCK = threading.RLock()
CONFIG = {}  # filled by main()
STATE = {"stacks": {}, "signals": [], "tokens": {}, "journal": [], "faults": [], "leaders": {}, "events": [],
         "listeners": {}, "listener_keys": {}}
SEQ = {"request": 0, "fault": 0}  # journal / fault-rule ids (never reset)


def utcnow():
    return dt.datetime.now(dt.timezone.utc)




def epoch(t):
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def account_id():
    return os.environ.get("MOTO_ACCOUNT_ID", DEFAULT_ACCOUNT_ID)


def parse_iso_duration(s, default):
    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?", str(s or "").strip())
    if not s or not m:
        return default
    d, h, mi, se = (int(x or 0) for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + se


# ---------------------------------------------------------------------------
# moto patches: WaitConditionHandle / WaitCondition models, metadata-only updates
# ---------------------------------------------------------------------------
def handle_url(stack_id, logical_id):
    stack_uuid = stack_id.rsplit("/", 1)[-1]
    expires = int(time.time()) + 24 * 3600
    sig = hmac.new(CONFIG["secret"], f"{stack_uuid}/{logical_id}/{expires}".encode(), hashlib.sha256).hexdigest()
    return f"{CONFIG['public_url']}/_waitcondition/{stack_uuid}/{quote(logical_id)}?Expires={expires}&Signature={sig}"


class WaitConditionHandle(CloudFormationModel):
    __module__ = "moto.cloudformation.emulator"  # moto's model registry keys on moto.<service>

    def __init__(self, stack_id, logical_id):
        self.stack_id, self.logical_id = stack_id, logical_id
        self.url = handle_url(stack_id, logical_id)

    @staticmethod
    def cloudformation_name_type():
        return ""

    @staticmethod
    def cloudformation_type():
        return "AWS::CloudFormation::WaitConditionHandle"

    @classmethod
    def has_cfn_attr(cls, attr):
        return False

    @classmethod
    def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        return cls(kwargs["StackId"], kwargs["LogicalId"])

    @property
    def physical_resource_id(self):
        return self.url

    def is_created(self):
        return True


class WaitCondition(CloudFormationModel):
    __module__ = "moto.cloudformation.emulator"

    def __init__(self, stack_id, logical_id):
        self.stack_id, self.logical_id = stack_id, logical_id

    @staticmethod
    def cloudformation_name_type():
        return ""

    @staticmethod
    def cloudformation_type():
        return "AWS::CloudFormation::WaitCondition"

    @classmethod
    def has_cfn_attr(cls, attr):
        return attr == "Data"

    def get_cfn_attribute(self, attribute_name):
        if attribute_name != "Data":
            raise NotImplementedError(attribute_name)
        with LOCK:
            st = STATE["stacks"].get(self.stack_id, {})
            p = st.get("pending", {}).get(self.logical_id, {})
            return json.dumps({u: s.get("Data") for u, s in p.get("signals", {}).items()
                               if s["Status"] == "SUCCESS"}, separators=(",", ":"))

    @classmethod
    def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        return cls(kwargs["StackId"], kwargs["LogicalId"])

    @property
    def physical_resource_id(self):
        return f"{self.stack_id}/{self.logical_id}"

    def is_created(self):
        return True


def install_moto_patches():
    for t in ("AWS::CloudFormation::WaitCondition", "AWS::CloudFormation::WaitConditionHandle"):
        if t in cfn_parsing.NULL_MODELS:
            cfn_parsing.NULL_MODELS.remove(t)
    for f in (cfn_parsing.get_model_list, cfn_parsing.get_model_map, cfn_parsing.get_name_type_map):
        f.cache_clear()

    orig_update = cfn_parsing.parse_and_update_resource

    def parse_and_update_resource(logical_id, resource_json, resources_map, account_id, region_name):
        new = orig_update(logical_id, resource_json, resources_map, account_id, region_name)
        if new is None:  # resource type without an update handler (e.g. EC2 instance): keep it
            return resources_map._parsed_resources.get(logical_id)
        return new

    cfn_parsing.parse_and_update_resource = parse_and_update_resource

    orig_diff = cfn_parsing.ResourceMap.build_resource_diff

    def build_resource_diff(self, other_template, parameters=None):
        diff = orig_diff(self, other_template, parameters)
        old, new = self._resource_json_map, other_template["Resources"]

        def strip(r):
            return {k: v for k, v in r.items() if k != "Metadata"}

        # real CloudFormation never touches a resource whose Metadata alone changed
        diff["Modify"] = [n for n in diff["Modify"]
                          if n not in old or old[n] == new[n] or strip(old[n]) != strip(new[n])]
        return diff

    cfn_parsing.ResourceMap.build_resource_diff = build_resource_diff


# ---------------------------------------------------------------------------
# helpers on moto stacks
# ---------------------------------------------------------------------------
class CfnError(Exception):
    def __init__(self, message, code="ValidationError", status=400, etype="Sender"):
        super().__init__(message)
        self.message, self.code, self.status, self.etype = message, code, status, etype


def backend(region):
    return cloudformation_backends[account_id()][region]


def find_stack(region, name_or_id, msg=None):
    try:
        return backend(region).get_stack(name_or_id)
    except Exception:
        raise CfnError(msg or f"Stack '{name_or_id}' does not exist")


def find_stack_by_uuid(stack_uuid):
    for acct, regions in list(cloudformation_backends.items()):
        for region, be in list(regions.items()):
            for s in list(be.stacks.values()) + list(be.deleted_stacks.values()):
                if s.stack_id.endswith("/" + stack_uuid):
                    return s
    return None


def resource_json(stack, logical):
    return stack.template_dict.get("Resources", {}).get(logical)


def resource_exists(stack, logical):
    rj = resource_json(stack, logical)
    if rj is None:
        return False
    cond = rj.get("Condition")
    if cond:
        try:
            return bool(stack.resource_map.lazy_condition_map[cond])
        except Exception:
            return True
    return True


def physical_id(stack, logical):
    res = stack.resource_map._parsed_resources.get(logical)
    pid = getattr(res, "physical_resource_id", None)
    if pid:
        return pid
    h = hashlib.sha1(f"{stack.stack_id}/{logical}".encode()).hexdigest()[:12].upper()
    return f"{stack.name}-{logical}-{h}"


def resolved_metadata(stack, logical):
    md = (resource_json(stack, logical) or {}).get("Metadata")
    if md is None:
        return None
    try:
        md = cfn_parsing.clean_json(copy.deepcopy(md), stack.resource_map)
    except Exception as e:  # unresolvable intrinsic: return it verbatim
        print(f"[moto_cfn_server] metadata resolution failed for {logical}: {e!r}", file=sys.stderr)
    return json.dumps(md, separators=(",", ":"))


def stack_state(stack):
    st = STATE["stacks"].get(stack.stack_id)
    if st is None:
        st = STATE["stacks"][stack.stack_id] = {
            "resources": {}, "pending": {}, "on_failure": "ROLLBACK", "snap": {}, "region": stack.region_name}
        for logical in stack.template_dict.get("Resources", {}):
            st["resources"][logical] = {"status": "CREATE_COMPLETE", "reason": None, "updated": stack.creation_time}
            st["snap"][logical] = copy.deepcopy(resource_json(stack, logical))
    return st


def res_status(stack, logical):
    r = stack_state(stack)["resources"].get(logical)
    if r is None:
        r = stack_state(stack)["resources"][logical] = {"status": "CREATE_COMPLETE", "reason": None,
                                                         "updated": stack.creation_time}
    return r


def add_event(stack, logical, status, reason=None):
    rj = resource_json(stack, logical) or {}
    ev = Event(stack_id=stack.stack_id, stack_name=stack.name, logical_resource_id=logical,
               physical_resource_id=physical_id(stack, logical), resource_type=rj.get("Type", ""),
               resource_status=status, resource_status_reason=reason, resource_properties=None)
    stack.events.append(ev)


def set_res(stack, logical, status, reason=None, event=True):
    r = res_status(stack, logical)
    r.update(status=status, reason=reason, updated=utcnow())
    if event:
        add_event(stack, logical, status, reason)


def after_create(stack, params):
    st = stack_state(stack)
    if params.get("DisableRollback", "").lower() == "true":
        st["on_failure"] = "DO_NOTHING"
    if params.get("OnFailure"):
        st["on_failure"] = params["OnFailure"]
    now = time.time()
    for logical, rj in stack.template_dict.get("Resources", {}).items():
        if not resource_exists(stack, logical):
            continue
        cp = (rj.get("CreationPolicy") or {}).get("ResourceSignal")
        if cp is not None:
            st["pending"][logical] = {"kind": "signal", "count": int(cp.get("Count", 1)),
                                      "deadline": now + parse_iso_duration(cp.get("Timeout"), 300),
                                      "signals": {}, "done": False}
        elif rj.get("Type") == "AWS::CloudFormation::WaitCondition":
            props = rj.get("Properties") or {}
            h = props.get("Handle")
            hl = h.get("Ref") if isinstance(h, dict) else None
            if hl is None and isinstance(h, str):  # literal URL: find the handle it belongs to
                for other, orj in stack.template_dict["Resources"].items():
                    if orj.get("Type") == "AWS::CloudFormation::WaitConditionHandle" and \
                            physical_id(stack, other).split("?")[0] == h.split("?")[0]:
                        hl = other
            st["pending"][logical] = {"kind": "wait", "handle": hl, "count": int(props.get("Count", 1)),
                                      "deadline": now + int(props.get("Timeout", 43200)),
                                      "signals": {}, "done": False}
    # moto created everything synchronously and marked the stack complete: take that event
    # off, add per-resource events, and put it back only if nothing waits for signals
    done_ev = None
    if stack.events and stack.events[-1].resource_status == "CREATE_COMPLETE" and \
            stack.events[-1].logical_resource_id == stack.name:
        done_ev = stack.events.pop()
    for logical in stack.template_dict.get("Resources", {}):
        if not resource_exists(stack, logical):
            continue
        if logical in st["pending"]:
            set_res(stack, logical, "CREATE_IN_PROGRESS", "Resource creation Initiated")
        else:
            add_event(stack, logical, "CREATE_IN_PROGRESS")
            add_event(stack, logical, "CREATE_COMPLETE")
    if st["pending"]:
        stack.status = "CREATE_IN_PROGRESS"
    elif done_ev is not None:
        stack.events.append(done_ev)


def fail_stack(stack, failed_logical):
    st = stack_state(stack)
    for p in st["pending"].values():
        p["done"] = True
    reason = f"The following resource(s) failed to create: [{failed_logical}]. "
    mode = st["on_failure"]
    if mode == "DO_NOTHING":
        stack.status = "CREATE_FAILED"
        stack._add_stack_event("CREATE_FAILED", reason)
        return
    stack._add_stack_event("ROLLBACK_IN_PROGRESS", reason + "Rollback requested by user.")
    for logical in stack.template_dict.get("Resources", {}):
        if res_status(stack, logical)["status"] != "DELETE_COMPLETE":
            set_res(stack, logical, "DELETE_COMPLETE")
    stack.status = "ROLLBACK_COMPLETE"
    stack._add_stack_event("ROLLBACK_COMPLETE")
    if mode == "DELETE":
        try:
            backend(stack.region_name).delete_stack(stack.stack_id)
        except Exception as e:
            print(f"[moto_cfn_server] delete after failure: {e!r}", file=sys.stderr)


def evaluate(stack, logical):
    st = stack_state(stack)
    p = st["pending"][logical]
    if p["done"]:
        return
    sigs = p["signals"].values()
    failed = [s for s in sigs if s["Status"] == "FAILURE"]
    if failed:
        s = failed[-1]
        if p["kind"] == "wait":
            reason = f"WaitCondition received failed message: '{s.get('Reason', '')}' for uniqueId: {s['UniqueId']}"
        else:
            reason = f"Received FAILURE signal with UniqueId {s['UniqueId']}"
        p["done"] = True
        set_res(stack, logical, "CREATE_FAILED", reason)
        fail_stack(stack, logical)
        return
    ok = sum(1 for s in sigs if s["Status"] == "SUCCESS")
    if ok >= p["count"]:
        p["done"] = True
        set_res(stack, logical, "CREATE_COMPLETE")
        if all(q["done"] for q in st["pending"].values()) and stack.status == "CREATE_IN_PROGRESS":
            stack.output_map = stack._create_output_map()  # re-resolve outputs (WaitCondition Data)
            stack.mark_creation_complete()


def tick():
    now = time.time()
    with LOCK:
        for stack_id, st in list(STATE["stacks"].items()):
            for logical, p in list(st["pending"].items()):
                if p["done"] or now < p["deadline"]:
                    continue
                stack = find_stack_by_uuid(stack_id.rsplit("/", 1)[-1])
                if stack is None or stack.status != "CREATE_IN_PROGRESS":
                    p["done"] = True
                    continue
                ok = sum(1 for s in p["signals"].values() if s["Status"] == "SUCCESS")
                if p["kind"] == "wait":
                    reason = f"WaitCondition timed out. Received {ok} conditions when expecting {p['count']}"
                else:
                    reason = f"Failed to receive {p['count']} resource signal(s) within the specified duration"
                p["done"] = True
                set_res(stack, logical, "CREATE_FAILED", reason)
                fail_stack(stack, logical)


def ticker():
    while True:
        time.sleep(0.5)
        try:
            tick()
        except Exception as e:  # never let the ticker die
            print(f"[moto_cfn_server] tick: {e!r}", file=sys.stderr)


def record_signal(stack, logical, sig):
    st = stack_state(stack)
    p = st["pending"].get(logical)
    if p and not p["done"]:
        p["signals"][sig["UniqueId"]] = sig
        if p["kind"] == "signal" or sig["Status"] == "SUCCESS":
            add_event(stack, logical, "CREATE_IN_PROGRESS",
                      f"Received {sig['Status']} signal with UniqueId {sig['UniqueId']}")
        evaluate(stack, logical)
        return True
    return False


# ---------------------------------------------------------------------------
# serialisation
# ---------------------------------------------------------------------------


def json_default(o):
    if isinstance(o, dt.datetime):
        return epoch(o)
    if isinstance(o, bytes):
        return o.decode()
    return str(o)


def render(action, result, as_json):
    rid = str(uuid.uuid4())
    if as_json:
        body = {f"{action}Response": {"ResponseMetadata": {"RequestId": rid}}}
        if result is not None:
            body[f"{action}Response"][f"{action}Result"] = result
        return 200, "application/json", json.dumps(body, default=json_default)
    inner = f"<{action}Result>{xml_fields(result)}</{action}Result>" if result is not None else ""
    return 200, "text/xml", (f'<{action}Response xmlns="{CFN_NS}">{inner}'
                             f"<ResponseMetadata><RequestId>{rid}</RequestId></ResponseMetadata></{action}Response>")


def render_error(err, as_json, ns=CFN_NS):
    rid = str(uuid.uuid4())
    if as_json:
        return err.status, "application/json", json.dumps(
            {"Error": {"Code": err.code, "Message": err.message, "Type": err.etype}, "RequestId": rid})
    return err.status, "text/xml", (
        f'<ErrorResponse xmlns="{ns}"><Error><Type>{err.etype}</Type><Code>{escape(err.code)}</Code>'
        f"<Message>{escape(err.message)}</Message></Error><RequestId>{rid}</RequestId></ErrorResponse>")


# ---------------------------------------------------------------------------
# CloudFormation actions implemented here
# ---------------------------------------------------------------------------
def detail(stack, logical):
    r = res_status(stack, logical)
    rj = resource_json(stack, logical)
    return {"StackName": stack.name, "StackId": stack.stack_id, "LogicalResourceId": logical,
            "PhysicalResourceId": physical_id(stack, logical), "ResourceType": rj.get("Type"),
            "LastUpdatedTimestamp": r["updated"], "ResourceStatus": r["status"],
            "ResourceStatusReason": r["reason"], "Description": rj.get("Description"),
            "Metadata": resolved_metadata(stack, logical),
            "DriftInformation": {"StackResourceDriftStatus": "NOT_CHECKED"}}


def need(params, *names):
    for n in names:
        if not params.get(n):
            raise CfnError(f"1 validation error detected: Value null at '{n[0].lower() + n[1:]}' "
                           f"failed to satisfy constraint: Member must not be null")


def act_describe_stack_resource(region, params):
    need(params, "StackName", "LogicalResourceId")
    stack = find_stack(region, params["StackName"])
    logical = params["LogicalResourceId"]
    if not resource_exists(stack, logical):
        raise CfnError(f"Resource {logical} does not exist for stack {params['StackName']}")
    return {"StackResourceDetail": detail(stack, logical)}


def act_describe_stack_resources(region, params):
    name = params.get("StackName")
    if not name and params.get("PhysicalResourceId"):
        for s in list(backend(region).stacks.values()):
            for logical in s.template_dict.get("Resources", {}):
                if resource_exists(s, logical) and physical_id(s, logical) == params["PhysicalResourceId"]:
                    name = s.stack_id
    if not name:
        raise CfnError("Either StackName or PhysicalResourceId must be specified")
    stack = find_stack(region, name)
    out = []
    for logical in stack.template_dict.get("Resources", {}):
        if not resource_exists(stack, logical):
            continue
        if params.get("LogicalResourceId") and params["LogicalResourceId"] != logical:
            continue
        d = detail(stack, logical)
        out.append({"StackName": d["StackName"], "StackId": d["StackId"], "LogicalResourceId": logical,
                    "PhysicalResourceId": d["PhysicalResourceId"], "ResourceType": d["ResourceType"],
                    "Timestamp": d["LastUpdatedTimestamp"], "ResourceStatus": d["ResourceStatus"],
                    "ResourceStatusReason": d["ResourceStatusReason"], "Description": d["Description"],
                    "DriftInformation": d["DriftInformation"]})
    return {"StackResources": out}


def act_signal_resource(region, params):
    need(params, "StackName", "LogicalResourceId", "UniqueId", "Status")
    status = params["Status"]
    if status not in ("SUCCESS", "FAILURE"):
        raise CfnError(f"1 validation error detected: Value '{status}' at 'status' failed to satisfy "
                       f"constraint: Member must satisfy enum value set: [SUCCESS, FAILURE]")
    stack = find_stack(region, params["StackName"], f"Stack with id {params['StackName']} does not exist")
    logical = params["LogicalResourceId"]
    sig = {"via": "SignalResource", "StackId": stack.stack_id, "StackName": stack.name,
           "LogicalResourceId": logical, "UniqueId": params["UniqueId"], "Status": status,
           "Time": iso(utcnow())}
    if not resource_exists(stack, logical):
        sig["accepted"] = False
        STATE["signals"].append(sig)
        raise CfnError(f"Resource {logical} does not exist for stack {stack.name}")
    p = stack_state(stack)["pending"].get(logical)
    accepted = bool(p and p["kind"] == "signal" and not p["done"] and stack.status == "CREATE_IN_PROGRESS"
                    and record_signal(stack, logical, sig))
    sig["accepted"] = accepted or CONFIG["accept_all_signals"]
    STATE["signals"].append(sig)
    if not accepted and not CONFIG["accept_all_signals"]:
        if stack.status != "CREATE_IN_PROGRESS":
            raise CfnError(f"Stack {stack.stack_id} is in {stack.status} state and cannot be signaled")
        raise CfnError(f"Resource {logical} is in {res_status(stack, logical)['status']} state "
                       f"and cannot be signaled")
    return None


def act_elect_command_leader(region, params):
    """ElectCommandLeader (undocumented; used by cfn-hup command hooks and cfn-elect-cmd-leader):
    the first listener to ask for a (stack, command, invocation) becomes its leader, and every
    caller gets that leader's ListenerId back."""
    need(params, "StackName", "CommandName", "InvocationId", "ListenerId")
    stack = find_stack(region, params["StackName"], f"Stack with id {params['StackName']} does not exist")
    key = (stack.stack_id, params["CommandName"], params["InvocationId"])
    leader = STATE["leaders"].setdefault(key, params["ListenerId"])
    return {"ListenerId": leader}


def listener_queue_name(stack, listener):
    """SQS queue names allow 80 characters of [A-Za-z0-9_-]: a readable prefix plus a hash
    that keeps (stack, listener) pairs apart."""
    digest = hashlib.sha256(f"{stack.stack_id}|{listener}".encode()).hexdigest()[:16]
    readable = re.sub(r"[^A-Za-z0-9_-]", "-", f"{stack.name}-{listener}")[:50]
    return f"cfn-listener-{readable}-{digest}"


def act_register_listener(region, params):
    """RegisterListener (undocumented; cfn-hup command hooks): the listener's own queue."""
    need(params, "StackName", "ListenerId")
    stack = find_stack(region, params["StackName"], f"Stack with id {params['StackName']} does not exist")
    from moto.sqs.models import sqs_backends
    name = listener_queue_name(stack, params["ListenerId"])
    queues = sqs_backends[account_id()][region]
    if name not in queues.queues:
        queues.create_queue(name)
    url = f"{CONFIG['public_url']}/{account_id()}/{name}"
    STATE["listeners"][(stack.stack_id, params["ListenerId"])] = url
    return {"QueueUrl": url}


def act_get_listener_credentials(region, params):
    """GetListenerCredentials (undocumented): temporary keys for the listener's SQS calls,
    accepted by SigV4 validation from now on."""
    need(params, "StackName", "ListenerId")
    find_stack(region, params["StackName"], f"Stack with id {params['StackName']} does not exist")
    akid = "ASIALISTENER" + secrets.token_hex(4).upper()
    secret, token = secrets.token_urlsafe(30), "ListenerSessionToken//" + secrets.token_urlsafe(40)
    STATE["listener_keys"][akid] = (secret, token)
    refresh_keys()
    return {"Credentials": {"AccessKeyId": akid, "SecretAccessKey": secret, "SessionToken": token,
                            "Expiration": int(time.time()) + 3600}}


def cfn_v1_document(auth):
    """The instance identity document of a `CFN_V1 <base64 document>:<signature>` header, or {}."""
    try:
        return json.loads(base64.b64decode(auth.split()[1].split(":")[0]))
    except Exception:
        return {}


def pre_update(region, params):
    stack = find_stack(region, params.get("StackName", ""), f"Stack [{params.get('StackName')}] does not exist")
    if stack.status.endswith("_IN_PROGRESS"):
        raise CfnError(f"Stack:{stack.stack_id} is in {stack.status} state and can not be updated.")
    body = params.get("TemplateBody")
    has_params = any(k.startswith("Parameters.member") for k in params)
    if body and not has_params and params.get("UsePreviousTemplate") != "true":
        try:
            if stack.parse_template(body) == stack.parse_template(stack.template):
                raise CfnError("No updates are to be performed.")
        except CfnError:
            raise
        except Exception:
            pass
    return stack


def after_update(stack):
    st = stack_state(stack)
    for logical in stack.template_dict.get("Resources", {}):
        new = copy.deepcopy(resource_json(stack, logical))
        old = st["snap"].get(logical)
        if old is None:
            set_res(stack, logical, "CREATE_COMPLETE", event=False)
            add_event(stack, logical, "CREATE_IN_PROGRESS")
            add_event(stack, logical, "CREATE_COMPLETE")
        elif old != new:
            add_event(stack, logical, "UPDATE_IN_PROGRESS")
            set_res(stack, logical, "UPDATE_COMPLETE")
        st["snap"][logical] = new
    for logical in list(st["snap"]):
        if logical not in stack.template_dict.get("Resources", {}):
            st["snap"].pop(logical)
            st["resources"].pop(logical, None)


# ---------------------------------------------------------------------------
# SigV4 verification
# ---------------------------------------------------------------------------
def _sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _canonical_query(pairs):
    enc = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in enc)


def _header_value(environ, name):
    if name == "host":
        return environ.get("HTTP_HOST", "")
    if name == "content-type":
        return environ.get("CONTENT_TYPE", "")
    if name == "content-length":
        return environ.get("CONTENT_LENGTH", "")
    return environ.get("HTTP_" + name.upper().replace("-", "_"), "")


def sts_issued_key(akid):
    """(secret, session token) of keys moto's STS issued (AssumeRole, AssumeRoleWithWebIdentity), or None:
    a client that got its keys from the emulator's STS may sign with them, as with AWS."""
    from moto.sts.models import sts_backends
    for account in list(sts_backends.values()):
        for backend in list(account.values()):
            for role in list(backend.assumed_roles):
                if role.access_key_id == akid:
                    return role.secret_access_key, role.session_token
    return None


def verify_sigv4(environ, body):
    """Returns None when OK, else a CfnError to send back."""
    raw_uri = environ.get("REQUEST_URI") or environ.get("RAW_URI") or environ.get("PATH_INFO", "/")
    raw_path, _, raw_query = raw_uri.partition("?")
    qpairs = parse_qsl(raw_query, keep_blank_values=True)
    qd = dict(qpairs)
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if "X-Amz-Signature" in qd:
        cred, signed, given = qd.get("X-Amz-Credential", ""), qd.get("X-Amz-SignedHeaders", ""), qd["X-Amz-Signature"]
        amzdate = qd.get("X-Amz-Date", "")
        qpairs = [(k, v) for k, v in qpairs if k != "X-Amz-Signature"]
        token = qd.get("X-Amz-Security-Token")
        expires = int(qd.get("X-Amz-Expires", "0") or 0)
    else:
        m = re.match(r"AWS4-HMAC-SHA256\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)", auth)
        if not m:
            return CfnError("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature'",
                            "IncompleteSignature", 400)
        cred, signed, given = m.groups()
        amzdate = environ.get("HTTP_X_AMZ_DATE", "")
        token = environ.get("HTTP_X_AMZ_SECURITY_TOKEN")
        expires = None
    parts = cred.split("/")
    if len(parts) != 5:
        return CfnError("Credential should be scoped to a valid region.", "IncompleteSignature", 400)
    akid, date, region, service, _ = parts
    keys = CONFIG["keys"]
    issued = keys.get(akid) or sts_issued_key(akid)
    if not issued:
        return CfnError("The security token included in the request is invalid.", "InvalidClientTokenId", 403)
    secret, want_token = issued
    if want_token and token != want_token:
        return CfnError("The security token included in the request is invalid.", "InvalidClientTokenId", 403)
    try:
        t = dt.datetime.strptime(amzdate, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return CfnError("Missing or malformed X-Amz-Date", "IncompleteSignature", 400)
    skew = abs((utcnow() - t).total_seconds())
    if expires is not None:
        if (utcnow() - t).total_seconds() > expires:
            return CfnError("Request has expired", "AccessDenied", 403)
    elif skew > 900:
        return CfnError(f"Signature expired: {amzdate} is now earlier/later than allowed (15 min skew)",
                        "SignatureDoesNotMatch", 403)
    names = signed.split(";")
    canon_headers = "".join(f"{n}:{' '.join(_header_value(environ, n).strip().split())}\n" for n in names)
    if service == "s3":
        canon_uri = raw_path or "/"
    else:
        segs = []
        for seg in (raw_path or "/").split("/"):
            if seg == "..":
                segs and segs.pop()
            elif seg not in (".",):
                segs.append(seg)
        canon_uri = quote("/".join(segs) or "/", safe="/~")  # non-S3: normalised, encoded twice
    if environ.get("HTTP_X_AMZ_CONTENT_SHA256"):
        payload = environ["HTTP_X_AMZ_CONTENT_SHA256"]
    elif expires is not None and service == "s3":
        payload = "UNSIGNED-PAYLOAD"
    else:
        payload = hashlib.sha256(body).hexdigest()
    creq = "\n".join([environ.get("REQUEST_METHOD", "GET"), canon_uri, _canonical_query(qpairs),
                      canon_headers, signed, payload])
    scope = f"{date}/{region}/{service}/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(creq.encode()).hexdigest()])
    k = _sign(("AWS4" + secret).encode(), date)
    k = _sign(_sign(_sign(k, region), service), "aws4_request")
    calc = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(calc, given):
        return CfnError("The request signature we calculated does not match the signature you provided. "
                        "Check your AWS Secret Access Key and signing method. Consult the service "
                        "documentation for details.", "SignatureDoesNotMatch", 403)
    return None


# ---------------------------------------------------------------------------
# IMDS
# ---------------------------------------------------------------------------
def imds_tree(instance_id=None):
    """The IMDS tree of the instance IMDS serves, or of `instance_id` (an --imds-instance listener)."""
    c = CONFIG["imds"] if instance_id is None else {**CONFIG["imds"], "instance_id": instance_id}
    now = utcnow()
    creds = {"Code": "Success", "LastUpdated": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "Type": "AWS-HMAC",
             "AccessKeyId": c["access_key"], "SecretAccessKey": c["secret_key"], "Token": c["token"],
             "Expiration": (now + dt.timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    md = {
        "ami-id": c["ami_id"], "ami-launch-index": "0", "ami-manifest-path": "(unknown)",
        "block-device-mapping/": {"ami": "/dev/xvda", "root": "/dev/xvda"},
        "hostname": c["hostname"], "instance-action": "none", "instance-id": c["instance_id"],
        "instance-life-cycle": "on-demand", "instance-type": c["instance_type"],
        "local-hostname": c["hostname"], "local-ipv4": c["local_ipv4"], "mac": c["mac"],
        "placement/": {"availability-zone": c["az"], "availability-zone-id": c["az_id"],
                       "region": c["region"]},
        "public-hostname": c["public_hostname"], "public-ipv4": c["public_ipv4"],
        "reservation-id": c["reservation_id"], "security-groups": "default",
        "services/": {"domain": "amazonaws.com", "partition": "aws"},
    }
    if c["role"]:
        md["iam/"] = {"info": json.dumps({"Code": "Success", "LastUpdated": creds["LastUpdated"],
                                          "InstanceProfileArn": f"arn:aws:iam::{c['account_id']}:instance-profile/{c['role']}",
                                          "InstanceProfileId": "AIPAEMULATORPROFILE01"}, indent=2),
                      "security-credentials/": {c["role"]: json.dumps(creds, indent=2)}}
    doc = {"accountId": c["account_id"], "architecture": "x86_64", "availabilityZone": c["az"],
           "billingProducts": None, "devpayProductCodes": None, "marketplaceProductCodes": None,
           "imageId": c["ami_id"], "instanceId": c["instance_id"], "instanceType": c["instance_type"],
           "kernelId": None, "pendingTime": c["pending_time"], "privateIp": c["local_ipv4"],
           "ramdiskId": None, "region": c["region"], "version": "2017-09-30"}
    fake_sig = base64.b64encode(hashlib.sha256(json.dumps(doc).encode()).digest() * 4).decode()
    tree = {"meta-data/": md,
            "dynamic/": {"instance-identity/": {"document": json.dumps(doc, indent=2), "signature": fake_sig,
                                                 "pkcs7": fake_sig, "rsa2048": fake_sig}}}
    md.update(autoscaling.imds_items(c))  # autoscaling/, spot/, events/, tags/ when set
    if c.get("user_data") is not None:
        tree["user-data"] = c["user_data"]
    return tree


def imds_app(environ, start_response):
    method = environ.get("REQUEST_METHOD", "GET")
    path = environ.get("PATH_INFO", "/")

    def reply(code, body, ctype="text/plain", extra=()):
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                  405: "Method Not Allowed"}.get(code, "")
        data = body.encode() if isinstance(body, str) else body
        start_response(f"{code} {reason}", [("Content-Type", ctype), ("Content-Length", str(len(data))),
                                            ("Server", "EC2ws")] + list(extra))
        return [data]

    with LOCK:
        now = time.time()
        for t, exp in list(STATE["tokens"].items()):
            if exp < now:
                STATE["tokens"].pop(t)
        if path == "/latest/api/token":
            if method != "PUT":
                return reply(405, "")
            if environ.get("HTTP_X_FORWARDED_FOR"):
                return reply(403, "")
            try:
                ttl = int(environ.get("HTTP_X_AWS_EC2_METADATA_TOKEN_TTL_SECONDS", ""))
            except ValueError:
                return reply(400, "")
            if not 1 <= ttl <= 21600:
                return reply(400, "")
            tok = base64.b64encode(secrets.token_bytes(42)).decode()
            STATE["tokens"][tok] = now + ttl
            return reply(200, tok, extra=[("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", str(ttl))])
        tok = environ.get("HTTP_X_AWS_EC2_METADATA_TOKEN")
        if tok is not None and tok not in STATE["tokens"]:
            return reply(401, "")
        if tok is None and CONFIG["imds"]["v2_required"]:
            return reply(401, "")
        if method not in ("GET", "HEAD"):
            return reply(405, "")
        node = {"latest/": imds_tree(environ.get("emu.instance_id"))}
        parts = [p for p in path.split("/") if p]
        for i, p in enumerate(parts):
            if not isinstance(node, dict):
                return reply(404, "")
            if p + "/" in node:
                node = node[p + "/"]
            elif p in node:
                node = node[p]
            else:
                return reply(404, "")
        if isinstance(node, dict):
            return reply(200, "\n".join(sorted(node)))
        return reply(200, node, "application/json" if node.startswith("{") else "text/plain")


# ---------------------------------------------------------------------------
# wait condition handle PUT
# ---------------------------------------------------------------------------
def s3_error(code, message):
    return (403, "application/xml",
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{escape(message)}'
            f"</Message><RequestId>{uuid.uuid4().hex[:16].upper()}</RequestId></Error>")


def waitcondition_put(environ, body):
    path = environ.get("PATH_INFO", "")
    q = dict(parse_qsl(environ.get("QUERY_STRING", "")))
    m = re.fullmatch(r"/_waitcondition/([^/]+)/([^/]+)", path)
    if not m:
        return s3_error("AccessDenied", "Access Denied")
    stack_uuid, logical = m.groups()
    expires = q.get("Expires", "0")
    want = hmac.new(CONFIG["secret"], f"{stack_uuid}/{logical}/{expires}".encode(), hashlib.sha256).hexdigest()
    if environ.get("REQUEST_METHOD") != "PUT" or not hmac.compare_digest(want, q.get("Signature", "")):
        return s3_error("SignatureDoesNotMatch", "The request signature we calculated does not match the "
                                                 "signature you provided. Check your key and signing method.")
    if int(expires) < time.time():
        return s3_error("AccessDenied", "Request has expired")
    with LOCK:
        stack = find_stack_by_uuid(stack_uuid)
        sig = {"via": "WaitConditionHandle", "Handle": logical, "Time": iso(utcnow()),
               "StackId": stack.stack_id if stack else None, "raw": body.decode("utf-8", "replace")}
        try:
            data = json.loads(body or b"{}")
            sig.update(Status=data.get("Status"), UniqueId=str(data.get("UniqueId")),
                       Reason=data.get("Reason"), Data=data.get("Data"))
        except ValueError:
            sig.update(Status=None, error="body is not JSON")
        sig["accepted"] = False
        if stack and sig.get("Status") in ("SUCCESS", "FAILURE"):
            st = stack_state(stack)
            for wl, p in st["pending"].items():
                if p["kind"] == "wait" and p["handle"] == logical and stack.status == "CREATE_IN_PROGRESS":
                    sig["accepted"] = record_signal(stack, wl, dict(sig)) or sig["accepted"]
        STATE["signals"].append(sig)
    return 200, "application/xml", ""


# ---------------------------------------------------------------------------
# test hooks: request journal and fault injection
# ---------------------------------------------------------------------------
FAULT_KEYS = {"path", "service", "action", "stack", "method", "status", "code", "message", "type", "body",
              "body_size", "content_type", "count", "delay", "hang", "passthrough", "after", "for", "probability"}
FAULT_SERVICES = ("cloudformation", "autoscaling")  # the services of rules without a path
HOLDS = {}  # id of a rule with "hang" -> threading.Event set when the rule is deleted


def event_put(environ, body):
    """PUT /_events/<anything>: a command event handle (cfn-send-cmd-event). Records the
    request (GET /_emu/events) and answers 200; other methods get 405."""
    if environ.get("REQUEST_METHOD") != "PUT":
        return 405, "text/plain", "only PUT"
    STATE["events"].append({
        "time": time.time(), "path": environ.get("PATH_INFO", "/"), "query": environ.get("QUERY_STRING", ""),
        "content_type": environ.get("CONTENT_TYPE"), "user_agent": environ.get("HTTP_USER_AGENT"),
        "body": body.decode("utf-8", "replace")})
    return 200, "text/plain", ""


def http_reason(code):
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return ""


def journal(entry):
    """Appends a request to the journal; returns it so that its status can be filled in later."""
    with LOCK:
        SEQ["request"] += 1
        entry = {"seq": SEQ["request"], "time": time.time(), **entry, "status": None, "fault": None}
        STATE["journal"].append(entry)
    return entry


def sqs_json_request(environ, body):
    """The JSON document of an SQS request in the AWS JSON 1.0 protocol (what the AWS SDKs
    send: POST /, `X-Amz-Target: AmazonSQS.<Action>`), or None for any other request."""
    if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("AmazonSQS."):
        return None
    try:
        doc = json.loads(body or b"{}")
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def journal_http(environ, listener, kind, query, form, sqs_json=None):
    auth = environ.get("HTTP_AUTHORIZATION", "").split()
    target = environ.get("HTTP_X_AMZ_TARGET")
    action = {**query, **form}.get("Action")
    queue = None
    if sqs_json is not None:
        # JSON-protocol SQS: the action is in the target header, the queue in the body.
        action = target.split(".", 1)[1]
        queue = urlparse(str(sqs_json.get("QueueUrl", ""))).path or None
    signer = re.search(r"Credential=([^/,\s]+)/", environ.get("HTTP_AUTHORIZATION", "")) or \
        re.match(r"([^/]+)/", {**query, **form}.get("X-Amz-Credential", ""))
    return journal({
        "listener": listener, "kind": kind, "method": environ.get("REQUEST_METHOD", "GET"),
        "path": environ.get("PATH_INFO", "/"), "action": action, "target": target, "json": sqs_json,
        "queue": queue,
        "query": query, "form": form, "auth_scheme": auth[0] if auth else None,
        "user_agent": environ.get("HTTP_USER_AGENT"), "accept": environ.get("HTTP_ACCEPT"),
        "content_type": environ.get("CONTENT_TYPE") or None, "host": environ.get("HTTP_HOST"),
        "security_token": "HTTP_X_AMZ_SECURITY_TOKEN" in environ, "amz_date": "HTTP_X_AMZ_DATE" in environ,
        "access_key": signer.group(1) if signer else None,
        # CFN_V1: the instance id of the identity document the header carries
        "identity_instance": cfn_v1_document(" ".join(auth)).get("instanceId") if auth[:1] == ["CFN_V1"] else None})


def journal_imds(environ, listener):
    return journal({
        "listener": listener, "kind": "imds", "method": environ.get("REQUEST_METHOD", "GET"),
        "path": environ.get("PATH_INFO", "/"), "token": "HTTP_X_AWS_EC2_METADATA_TOKEN" in environ,
        "token_ttl": environ.get("HTTP_X_AWS_EC2_METADATA_TOKEN_TTL_SECONDS"),
        "user_agent": environ.get("HTTP_USER_AGENT")})


def tracked(entry, start_response):
    """start_response that records the answer's status in the journal entry."""
    def sr(status, headers, *exc_info):
        entry["status"] = int(status.split()[0])
        return start_response(status, headers, *exc_info)
    return sr


def fault_rule(r):
    """Validates one POST /_emu/faults rule and fills in the defaults."""
    if not isinstance(r, dict):
        raise ValueError("a fault rule must be a JSON object")
    unknown = set(r) - FAULT_KEYS
    if unknown:
        raise ValueError(f"unknown fault rule key(s): {sorted(unknown)}")
    if r.get("path") is not None and (r.get("action") is not None or r.get("stack") is not None
                                      or r.get("service") is not None):
        raise ValueError("a fault rule has either 'path' or 'service'/'action'/'stack', not both")
    if r.get("service") is not None and r["service"] not in FAULT_SERVICES:
        raise ValueError(f"'service' must be one of {list(FAULT_SERVICES)}")
    if r.get("service") == "autoscaling" and r.get("stack") is not None:
        raise ValueError("'stack' matches CloudFormation requests only")
    if r.get("path") is not None and not str(r["path"]).startswith("/"):
        raise ValueError("'path' must start with /")
    is_path = r.get("path") is not None
    rule = {"id": None, "path": None, "service": None if is_path else "cloudformation", "action": None,
            "stack": None, "method": None,
            "status": 500 if is_path else 400, "code": None if is_path else "Throttling",
            "message": None if is_path else "Rate exceeded", "type": None if is_path else "Sender",
            "body": "" if is_path else None, "body_size": None, "content_type": None, "count": 1, "delay": 0,
            "hang": False, "passthrough": False, "after": 0, "for": None, "probability": 1}
    rule.update({k: v for k, v in r.items() if v is not None})
    number = (int, float)
    for k, t in (("status", int), ("count", int), ("delay", number), ("passthrough", bool), ("after", number),
                 ("for", number), ("probability", number)):
        if rule[k] is None and k == "for":
            continue
        if not isinstance(rule[k], t) or (t is not bool and isinstance(rule[k], bool)):
            raise ValueError(f"'{k}' has the wrong type")
    for k in ("path", "action", "stack", "method", "code", "message", "type", "body", "content_type"):
        if rule[k] is not None and not isinstance(rule[k], str):
            raise ValueError(f"'{k}' must be a string")
    if rule["body_size"] is not None and (not isinstance(rule["body_size"], int) or isinstance(rule["body_size"], bool)
                                          or rule["body_size"] < 0):
        raise ValueError("'body_size' must be an integer >= 0")
    if not (rule["hang"] is True or rule["hang"] is False or (
            isinstance(rule["hang"], (int, float)) and not isinstance(rule["hang"], bool) and rule["hang"] > 0)):
        raise ValueError("'hang' must be true, false or a number of seconds > 0")
    if rule["count"] == 0 or rule["delay"] < 0 or not 100 <= rule["status"] <= 599:
        raise ValueError("'count' must not be 0, 'delay' must be >= 0, 'status' must be 100..599")
    if rule["after"] < 0 or (rule["for"] is not None and rule["for"] <= 0) or not 0 < rule["probability"] <= 1:
        raise ValueError("'after' must be >= 0, 'for' > 0, 'probability' in (0, 1]")
    if rule["method"]:
        rule["method"] = rule["method"].upper()
    # The time window in epoch seconds (as the journal's "time"), counted from now.
    now = time.time()
    rule["active_from"] = now + rule["after"]
    rule["active_until"] = None if rule["for"] is None else rule["active_from"] + rule["for"]
    SEQ["fault"] += 1
    rule["id"] = SEQ["fault"]
    if rule["hang"] is not False:
        HOLDS[rule["id"]] = threading.Event()
    return rule


def delete_faults(rule_id=None):
    """Deletes one rule (by id) or all of them, and lets go of the requests they hold ("hang")."""
    for i in [i for i in HOLDS if rule_id is None or i == rule_id]:
        HOLDS.pop(i).set()
    STATE["faults"][:] = [r for r in STATE["faults"] if rule_id is not None and r["id"] != rule_id]


def hold(rule):
    """Waits out a rule's "delay", then its "hang": until the rule is deleted (true) or for at
    most that many seconds. Other requests go on meanwhile."""
    time.sleep(rule["delay"])
    held = HOLDS.get(rule["id"]) if rule["hang"] is not False else None
    if held is not None:
        held.wait(None if rule["hang"] is True else rule["hang"])


def stack_matches(want, given):
    if want is None:
        return True
    given = given or ""
    # StackName may be the name or the stack id (arn:aws:cloudformation:REGION:ACCT:stack/NAME/UUID)
    return want == given or (given.startswith("arn:") and want in given.split(":", 5)[-1].split("/")[1:])


def drop_ended_faults():
    """Drops the rules whose time window has ended (used up, like a count that reached 0);
    returns the time it went by."""
    now = time.time()
    STATE["faults"][:] = [r for r in STATE["faults"] if r["active_until"] is None or now < r["active_until"]]
    return now


def take_fault(entry, method, path=None, params=None, service="cloudformation"):
    """Consumes and returns the first rule matching this request (path rules when `path` is
    given, else the `service` rules - CloudFormation or Auto Scaling - for `params`), or None."""
    with LOCK:
        now = drop_ended_faults()
        for r in STATE["faults"]:
            if now < r["active_from"] or (r["method"] and r["method"] != method):
                continue
            if path is not None:
                if r["path"] is None or not path.startswith(r["path"]):
                    continue
            elif r["path"] is not None or r["service"] != service or \
                    (r["action"] and r["action"] != params.get("Action")) or \
                    not stack_matches(r["stack"], params.get("StackName")):
                continue
            # A request the rule lets pass by chance goes on to the later rules.
            if r["probability"] < 1 and random.random() >= r["probability"]:
                continue
            if r["count"] > 0:
                r["count"] -= 1
                if r["count"] == 0:
                    STATE["faults"].remove(r)
            entry["fault"] = r["id"]
            return dict(r)
    return None


def junk(size):
    """`size` bytes that are neither JSON nor XML."""
    line = b"#junk-" + b"0123456789abcdefghijklmnopqrstuvwxyz" * 2 + b"\n"
    return (line * (size // len(line) + 1))[:size]


def fault_response(rule, as_json=False):
    """(status, content type, body) for a service fault rule (path rules: the verbatim body;
    "body_size": that many bytes of junk)."""
    if rule["body_size"] is not None:
        return rule["status"], rule["content_type"] or "text/plain", junk(rule["body_size"])
    if rule["body"] is not None:
        return rule["status"], rule["content_type"] or "text/plain", rule["body"]
    ns = autoscaling.NS if rule["service"] == "autoscaling" else CFN_NS
    code, ctype, body = render_error(CfnError(rule["message"] or "", rule["code"] or "", rule["status"],
                                              rule["type"] or ""), as_json, ns)
    return code, rule["content_type"] or ctype, body


def send_fault(start_response, rule, as_json=False, server=None):
    status, ctype, body = fault_response(rule, as_json)
    data = body.encode() if isinstance(body, str) else body
    headers = [("Content-Type", ctype), ("Content-Length", str(len(data)))]
    headers += [("Server", server)] if server else [("x-amzn-RequestId", str(uuid.uuid4()))]
    start_response(f"{status} {http_reason(status)}", headers)
    return [data]


def imds_front(environ, start_response, listener):
    """IMDS with journaling and path fault rules (both listeners)."""
    entry = journal_imds(environ, listener)
    start_response = tracked(entry, start_response)
    rule = take_fault(entry, environ.get("REQUEST_METHOD", "GET"), path=environ.get("PATH_INFO", "/"))
    if rule:
        hold(rule)
        if not rule["passthrough"]:
            return send_fault(start_response, rule, server="EC2ws")
    return imds_app(environ, start_response)


def imds_listener(environ, start_response):
    return imds_front(environ, start_response, "imds")


def instance_imds_listener(instance_id):
    """An --imds-instance listener: IMDS as the instance `instance_id` sees it (its identity,
    its Auto Scaling target state); the other items are shared."""
    def app(environ, start_response):
        environ["emu.instance_id"] = instance_id
        return imds_front(environ, start_response, "imds:" + instance_id)
    return app


# ---------------------------------------------------------------------------
# the WSGI front
# ---------------------------------------------------------------------------
# CloudFormation actions botocore does not model (internal to the command feature).
EXTRA_CFN_ACTIONS = ("ElectCommandLeader", "RegisterListener", "GetListenerCredentials")


def sqs_query_as_form(environ):
    """moto reads SQS query-protocol parameters only from a form body: a GET with the
    parameters in the query string (how cfn-hup's ReceiveMessage/DeleteMessage are sent)
    is handed to moto as the equivalent POST. Called after signature validation."""
    data = environ.get("QUERY_STRING", "").encode()
    environ.update({"REQUEST_METHOD": "POST", "QUERY_STRING": "", "wsgi.input": io.BytesIO(data),
                    "CONTENT_LENGTH": str(len(data)), "CONTENT_TYPE": "application/x-www-form-urlencoded"})
    for k in ("REQUEST_URI", "RAW_URI"):
        if k in environ:
            environ[k] = environ[k].split("?", 1)[0]


def sqs_queue_path_without_slash(environ):
    """SQS answers a queue URL with a trailing slash (`/<account>/<queue>/`, where the
    reference sends its calls) as the queue itself; moto routes only the bare path. Called
    after signature validation, which covers the path as sent."""
    path = environ.get("PATH_INFO", "")
    if re.fullmatch(r"/\d+/[^/]+/", path):
        environ["PATH_INFO"] = path.rstrip("/")
        for k in ("REQUEST_URI", "RAW_URI"):
            if k in environ:
                uri, sep, rest = environ[k].partition("?")
                environ[k] = uri.rstrip("/") + sep + rest


class CfnEmulator:
    def __init__(self):
        self.moto = DomainDispatcherApplication(create_backend_app)
        import botocore.session
        self.cfn_ops = set(botocore.session.get_session().get_service_model("cloudformation").operation_names)
        self.cfn_ops |= set(EXTRA_CFN_ACTIONS)

    @staticmethod
    def _respond(start_response, code, ctype, body, extra=()):
        data = body.encode() if isinstance(body, str) else body
        start_response(f"{code} {http_reason(code)}",
                       [("Content-Type", ctype), ("Content-Length", str(len(data))),
                        ("x-amzn-RequestId", str(uuid.uuid4()))] + list(extra))
        return [data]

    def _call_moto(self, environ, body):
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        captured = {}

        def sr(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers

        chunks = self.moto(environ, sr)
        data = b"".join(chunks)
        if hasattr(chunks, "close"):
            chunks.close()
        return captured["status"], captured["headers"], data

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)

        if path.startswith("/latest/"):
            return imds_front(environ, start_response, "main")
        if path.startswith("/_emu/"):
            return self._emu(environ, start_response, path, method, body)

        query = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        form = {}
        ctype = environ.get("CONTENT_TYPE", "")
        if body and (ctype.startswith("application/x-www-form-urlencoded") or (not ctype and method == "POST")):
            try:
                form = dict(parse_qsl(body.decode(), keep_blank_values=True))
            except UnicodeDecodeError:
                pass
        params = {**query, **form}
        auth = environ.get("HTTP_AUTHORIZATION", "")
        scope = re.search(r"Credential=[^/]+/\d+/([^/]+)/([^/]+)/aws4_request", auth) or \
            re.search(r"^[^/]+/\d+/([^/]+)/([^/]+)/aws4_request$", params.get("X-Amz-Credential", ""))
        signed = bool(scope) or "X-Amz-Signature" in params
        is_cfn = path in ("", "/") and params.get("Action") in self.cfn_ops and (
            (scope and scope.group(2) == "cloudformation") or auth.startswith("CFN_V1") or not signed)
        is_autoscaling = path in ("", "/") and bool(scope) and scope.group(2) == "autoscaling"

        entry = None
        if not path.startswith("/moto-api"):
            kind = ("cloudformation" if is_cfn else "autoscaling" if is_autoscaling
                    else "waitcondition" if path.startswith("/_waitcondition/")
                    else "event" if path.startswith("/_events/") else "other")
            sqs_json = sqs_json_request(environ, body)
            entry = journal_http(environ, "main", kind, query, form, sqs_json)
            start_response = tracked(entry, start_response)
            # Path rules meant for a queue match a JSON-protocol request by its QueueUrl.
            rule = take_fault(entry, method, path=entry["queue"] or path)
            if rule:
                hold(rule)
                if not rule["passthrough"]:
                    return send_fault(start_response, rule)
        if path.startswith("/_waitcondition/"):
            return self._respond(start_response, *waitcondition_put(environ, body))
        if path.startswith("/_events/"):
            with LOCK:
                return self._respond(start_response, *event_put(environ, body))

        if CONFIG["validate"] and not path.startswith("/moto-api"):
            err = None
            if signed:
                err = verify_sigv4(environ, body)
            elif is_cfn and not auth.startswith("CFN_V1"):
                err = CfnError("Request is missing Authentication Token", "MissingAuthenticationToken", 403)
            if err:
                if (scope and scope.group(2) == "s3") or "X-Amz-Credential" in params and "/s3/" in params["X-Amz-Credential"]:
                    code, ctype, xml = s3_error(err.code, err.message)
                    return self._respond(start_response, err.status, ctype, xml)
                return self._respond(start_response, *render_error(
                    err, params.get("ContentType") == "JSON", autoscaling.NS if is_autoscaling else CFN_NS))

        if is_autoscaling:
            return self._autoscaling(environ, start_response, entry, params)
        if not is_cfn:
            if scope and scope.group(2) == "sqs":
                sqs_queue_path_without_slash(environ)
                if method == "GET" and "Action" in query:
                    sqs_query_as_form(environ)
            return self.moto(environ, start_response)
        rule = take_fault(entry, method, params=params)
        if rule:
            hold(rule)
            if not rule["passthrough"]:
                return send_fault(start_response, rule, params.get("ContentType", "").upper() == "JSON")
        return self._cfn(environ, start_response, params, body, auth, scope)

    def _autoscaling(self, environ, start_response, entry, params):
        """Auto Scaling Query API: the lifecycle actions of autoscaling.py, the rest to moto;
        "service": "autoscaling" fault rules apply to all of them."""
        rule = take_fault(entry, environ.get("REQUEST_METHOD", "GET"), params=params, service="autoscaling")
        if rule:
            hold(rule)
            if not rule["passthrough"]:
                return send_fault(start_response, rule)
        if params.get("Action") not in autoscaling.ACTIONS:
            return self.moto(environ, start_response)
        with LOCK:
            imds = dict(CONFIG["imds"])
        return self._respond(start_response, *autoscaling.query(params, imds))

    def _cfn(self, environ, start_response, params, body, auth, scope):
        action = params["Action"]
        as_json = params.get("ContentType", "").upper() == "JSON"
        region = CONFIG["region"]
        if scope:
            region = scope.group(1)
        elif auth.startswith("CFN_V1"):
            region = cfn_v1_document(auth).get("region", region)
        else:
            hm = re.search(r"cloudformation\.([a-z0-9-]+)\.amazonaws", environ.get("HTTP_HOST", ""))
            region = hm.group(1) if hm else region
        own = {"DescribeStackResource": act_describe_stack_resource,
               "DescribeStackResources": act_describe_stack_resources,
               "SignalResource": act_signal_resource,
               "ElectCommandLeader": act_elect_command_leader,
               "RegisterListener": act_register_listener,
               "GetListenerCredentials": act_get_listener_credentials}
        if action in EXTRA_CFN_ACTIONS and not params.get("ListenerId") and auth.startswith("CFN_V1"):
            # instance-identity callers leave ListenerId out: it is their instance id
            params = {**params, "ListenerId": cfn_v1_document(auth).get("instanceId", "")}
        try:
            with LOCK:
                if action in own:
                    return self._respond(start_response, *render(action, own[action](region, params), as_json))
                if action == "UpdateStack":
                    pre_update(region, params)
                # forward to moto's CloudFormation backend
                fwd = dict(environ)
                if not scope:  # unsigned / CFN_V1: give moto a scope so that it routes to CloudFormation
                    fwd["HTTP_AUTHORIZATION"] = (f"AWS4-HMAC-SHA256 Credential=AKIAEMULATOR/20260101/{region}/"
                                                 f"cloudformation/aws4_request, SignedHeaders=host, Signature=0")
                status, headers, data = self._call_moto(fwd, body)
                code = int(status.split()[0])
                if code == 200 and action == "CreateStack":
                    m = re.search(rb"<StackId>([^<]+)</StackId>", data) or re.search(rb'"StackId": ?"([^"]+)"', data)
                    if m:
                        after_create(backend(region).get_stack(m.group(1).decode()), params)
                elif code == 200 and action == "UpdateStack":
                    after_update(backend(region).get_stack(params["StackName"]))
                # (moto's serializer already honours ContentType=JSON for the actions it implements)
                start_response(status, headers)
                return [data]
        except CfnError as e:
            return self._respond(start_response, *render_error(e, as_json))
        except Exception as e:  # never return an HTML 500 to a client
            import traceback
            traceback.print_exc()
            return self._respond(start_response, *render_error(
                CfnError(f"{type(e).__name__}: {e}", "InternalFailure", 500, "Receiver"), as_json))

    def _emu(self, environ, start_response, path, method, body):
        with LOCK:
            if path == "/_emu/signals":
                out = STATE["signals"]
            elif path == "/_emu/events":
                out = STATE["events"]
            elif path == "/_emu/leaders":
                out = [{"StackId": k[0], "CommandName": k[1], "InvocationId": k[2], "ListenerId": v}
                       for k, v in STATE["leaders"].items()]
            elif path == "/_emu/listeners":
                out = [{"StackId": k[0], "ListenerId": k[1], "QueueUrl": v} for k, v in STATE["listeners"].items()]
            elif path == "/_emu/ident":
                out = {"ident": CONFIG["ident"]}
            elif path == "/_emu/state":
                out = {sid: {"pending": {k: {kk: vv for kk, vv in p.items()} for k, p in st["pending"].items()},
                             "resources": st["resources"], "on_failure": st["on_failure"]}
                       for sid, st in STATE["stacks"].items()}
                for sid in out:
                    s = find_stack_by_uuid(sid.rsplit("/", 1)[-1])
                    out[sid]["StackStatus"] = s.status if s else None
            elif path == "/_emu/imds" and method == "POST":
                try:
                    given = json.loads(body or b"{}")
                    if not isinstance(given, dict):
                        raise ValueError("the IMDS settings must be a JSON object")
                    CONFIG["imds"].update(autoscaling.imds_update(given))
                except ValueError as e:
                    return self._respond(start_response, 400, "application/json", json.dumps({"error": str(e)}))
                refresh_keys()
                out = CONFIG["imds"]
            elif path == "/_emu/autoscaling" or path.startswith("/_emu/autoscaling/"):
                status, out = autoscaling.control(method, path, body, CONFIG["imds"])
                return self._respond(start_response, status, "application/json", json.dumps(out, default=json_default))
            elif path == "/_emu/requests" and method == "GET":
                q = dict(parse_qsl(environ.get("QUERY_STRING", "")))
                since = int(q["since"]) if q.get("since", "").isdigit() else 0
                out = [e for e in STATE["journal"]
                       if all(str(e.get(k)) == q[k] for k in ("kind", "action", "listener", "method") if k in q)
                       and e["seq"] > since]
            elif path == "/_emu/requests" and method == "DELETE":
                STATE["journal"].clear()
                out = []
            elif path == "/_emu/faults" and method == "POST":
                try:
                    rules = json.loads(body or b"[]")
                    rules = [fault_rule(r) for r in (rules if isinstance(rules, list) else [rules])]
                except ValueError as e:
                    return self._respond(start_response, 400, "application/json", json.dumps({"error": str(e)}))
                STATE["faults"].extend(rules)
                drop_ended_faults()
                out = STATE["faults"]
            elif path == "/_emu/faults" and method in ("GET", "DELETE"):
                if method == "DELETE":
                    rule_id = dict(parse_qsl(environ.get("QUERY_STRING", ""))).get("id")
                    if rule_id is not None and not (rule_id.isdigit() and 1 <= int(rule_id) <= SEQ["fault"]):
                        return self._respond(start_response, 404, "application/json",
                                             json.dumps({"error": f"no fault rule {rule_id}"}))
                    delete_faults(None if rule_id is None else int(rule_id))
                drop_ended_faults()
                out = STATE["faults"]
            elif path == "/_emu/settings" and method in ("GET", "POST"):
                if method == "POST":
                    try:
                        update_settings(body)
                    except ValueError as e:
                        return self._respond(start_response, 400, "application/json", json.dumps({"error": str(e)}))
                out = SETTINGS
            elif path == "/_emu/reset" and method == "POST":
                SETTINGS.clear()
                SETTINGS.update(SETTINGS_DEFAULTS)
                autoscaling.STATE.set_time_scale(SETTINGS["autoscaling_time_scale"])
                STATE["signals"].clear()
                STATE["tokens"].clear()
                STATE["journal"].clear()
                delete_faults()
                STATE["events"].clear()
                STATE["leaders"].clear()
                out = {"reset": True}
            else:
                return self._respond(start_response, 404, "application/json", '{"error":"not found"}')
            return self._respond(start_response, 200, "application/json", json.dumps(out, default=json_default))


SETTINGS_DEFAULTS = {"date_offset_seconds": 0, "autoscaling_time_scale": 1}
SETTINGS = dict(SETTINGS_DEFAULTS)


def update_settings(body):
    """Validates a POST /_emu/settings object and applies it whole (or nothing)."""
    given = json.loads(body or b"{}")
    if not isinstance(given, dict):
        raise ValueError("settings must be a JSON object")
    for key, value in given.items():
        if key not in SETTINGS_DEFAULTS:
            raise ValueError(f"unknown setting {key!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{key!r} must be a number")
        if key == "autoscaling_time_scale" and value <= 0:
            raise ValueError(f"{key!r} must be > 0")
    SETTINGS.update(given)
    autoscaling.STATE.set_time_scale(SETTINGS["autoscaling_time_scale"])


class EmulatorRequestHandler(MotoRequestHandler):
    """moto's handler, with the Date header shifted by the date_offset_seconds setting."""

    def date_time_string(self, timestamp=None):
        return super().date_time_string((time.time() if timestamp is None else timestamp)
                                        + SETTINGS["date_offset_seconds"])


def refresh_keys():
    keys = dict(CONFIG["static_keys"])
    keys.update(STATE["listener_keys"])
    c = CONFIG["imds"]
    if c.get("role"):
        keys[c["access_key"]] = (c["secret_key"], c["token"])
    CONFIG["keys"] = keys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-H", "--host", default="127.0.0.1")
    ap.add_argument("-p", "--port", type=int, default=5000)
    ap.add_argument("--public-url", help="base URL put into wait-condition handle URLs "
                                         "(default http://HOST:PORT)")
    ap.add_argument("--region", default="us-east-1", help="default region (unsigned/CFN_V1 requests, IMDS)")
    ap.add_argument("--validate-sigv4", action="store_true")
    ap.add_argument("--credentials", action="append", default=[],
                    help="AKID:SECRET[:TOKEN] accepted when validating (default testing:testing)")
    ap.add_argument("--accept-all-signals", action="store_true",
                    help="SignalResource never fails for resources/stacks that are not waiting")
    ap.add_argument("--imds-v2-required", action="store_true")
    ap.add_argument("--tls-port", type=int, help="also serve everything over HTTPS on this port (needs --tls-cert/--tls-key)")
    ap.add_argument("--tls-cert", help="PEM certificate for --tls-port")
    ap.add_argument("--tls-key", help="PEM private key for --tls-port")
    ap.add_argument("--imds-host", help="extra listener for IMDS only, e.g. 169.254.169.254")
    ap.add_argument("--imds-port", type=int, default=80)
    ap.add_argument("--instance-id", default="i-0123456789abcdef0")
    ap.add_argument("--imds-instance", action="append", default=[], metavar="PORT=INSTANCE_ID",
                    help="an extra IMDS listener on --host:PORT serving as INSTANCE_ID (several instances "
                         "against one Auto Scaling state); repeatable")
    ap.add_argument("--role", default="emulator-role", help="IMDS IAM role name ('' for none)")
    ap.add_argument("--user-data-file")
    ap.add_argument("--ident", default="", help="a token GET /_emu/ident answers, so that whoever started this "
                    "server can tell it from another one that holds the port")
    a = ap.parse_args(argv)

    os.environ.setdefault("MOTO_PORT", str(a.port))
    static = {}
    for c in a.credentials or ["testing:testing"]:
        parts = c.split(":", 2)
        static[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else None)
    CONFIG.update(
        public_url=(a.public_url or f"http://{a.host}:{a.port}").rstrip("/"), region=a.region,
        validate=a.validate_sigv4, accept_all_signals=a.accept_all_signals, secret=secrets.token_bytes(32),
        static_keys=static, ident=a.ident,
        imds={"instance_id": a.instance_id, "ami_id": "ami-0abcdef1234567890", "instance_type": "t3.micro",
              "region": a.region, "az": a.region + "a", "az_id": "use1-az1",
              "hostname": "ip-10-0-0-10.ec2.internal", "public_hostname": "ec2-198-51-100-1.compute-1.amazonaws.com",
              "local_ipv4": "10.0.0.10", "public_ipv4": "198.51.100.1", "mac": "0e:00:00:00:00:01",
              "reservation_id": "r-0123456789abcdef0", "account_id": account_id(), "role": a.role,
              "access_key": "ASIAEMULATORROLEKEY1", "secret_key": "emulator/role/secret/key/0000000000000",
              "token": "EmulatorSessionToken//" + "A" * 40, "v2_required": a.imds_v2_required,
              "pending_time": utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
              "user_data": open(a.user_data_file).read() if a.user_data_file else None,
              **{k: None for k in autoscaling.IMDS_KEYS}})
    refresh_keys()
    install_moto_patches()
    app = CfnEmulator()
    threading.Thread(target=ticker, daemon=True).start()
    autoscaling.start_timer()
    if a.imds_host:
        srv = make_server(a.imds_host, a.imds_port, imds_listener, threaded=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    for spec in a.imds_instance:
        port, _, iid = spec.partition("=")
        if not port.isdigit() or not iid:
            ap.error(f"--imds-instance wants PORT=INSTANCE_ID, not {spec!r}")
        srv = make_server(a.host, int(port), instance_imds_listener(iid), threaded=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(f"moto_cfn_server listening on http://{a.host}:{a.port} (sigv4 validation: {a.validate_sigv4})",
          flush=True)
    if a.tls_port:
        tls = make_server(a.host, a.tls_port, app, threaded=True, request_handler=EmulatorRequestHandler,
                          ssl_context=(a.tls_cert, a.tls_key))
        threading.Thread(target=tls.serve_forever, daemon=True).start()
    run_simple(a.host, a.port, app, threaded=True, request_handler=EmulatorRequestHandler)


if __name__ == "__main__":
    main()
