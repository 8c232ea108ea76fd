"""autoscaling.py - EC2 Auto Scaling lifecycle hooks for moto_cfn_server.py, plus the IMDS items
an instance reads about its own lifecycle (target lifecycle state, spot interruption, rebalance
recommendation, scheduled maintenance, instance tags).

What moto_cfn_server.py wires in:
  * query(params) answers the Auto Scaling Query API actions in ACTIONS (requests signed for
    the service "autoscaling"; other Auto Scaling actions stay with moto):
    DescribeAutoScalingInstances, DescribeLifecycleHooks, CompleteLifecycleAction and
    RecordLifecycleActionHeartbeat, with AWS's XML answers and errors.
  * control(method, path, body, imds) serves /_emu/autoscaling... (groups, launch,
    terminate, instance, target-state; GET the state; DELETE resets it).
  * imds_items(imds) gives the extra meta-data subtrees; imds_update(doc) checks and fills
    in the matching POST /_emu/imds keys.
  * STATE.clock.set_scale(n) is the "autoscaling_time_scale" setting: every timeout runs n
    times faster.

The state machine of an instance (one pending lifecycle action at a time, hooks in the
order the group lists them):
    launch:    Pending -> Pending:Wait (per launch hook) -> Pending:Proceed -> InService
               (no launch hooks: Pending -> InService); ABANDON -> termination below
    terminate: Terminating -> Terminating:Wait (per terminate hook) -> Terminating:Proceed
               -> Terminated (no hooks: Terminating -> Terminated); CONTINUE goes on to the
               next hook, ABANDON skips the remaining ones
An action whose heartbeat timeout (or global timeout) passes takes the hook's DefaultResult
(a completion with source "timeout"). Timeouts are driven by a timer thread and also on
every request.
"""
import datetime as dt
import json
import secrets
import threading
import time
import uuid
from xml.sax.saxutils import escape

from query_xml import xml_fields

NS = "http://autoscaling.amazonaws.com/doc/2011-01-01/"
LAUNCHING = "autoscaling:EC2_INSTANCE_LAUNCHING"
TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
ACTIONS = ("DescribeAutoScalingInstances", "DescribeLifecycleHooks", "CompleteLifecycleAction",
           "RecordLifecycleActionHeartbeat")
MAX_GLOBAL_TIMEOUT = 172800  # 48 hours, AWS's cap on a lifecycle action
TARGET_STATES = ("InService", "Terminated", "Detached", "Standby", "Warmed:Hibernated", "Warmed:Running",
                 "Warmed:Stopped", "Warmed:Terminated")


class AutoScalingError(Exception):
    def __init__(self, message, code="ValidationError", status=400, etype="Sender"):
        super().__init__(message)
        self.message, self.code, self.status, self.etype = message, code, status, etype


class ControlError(Exception):
    def __init__(self, message, status=400):
        super().__init__(message)
        self.message, self.status = message, status


class Clock:
    """The emulated clock of lifecycle timeouts: it runs `scale` times faster than the wall
    clock. A change of scale applies at once to every pending deadline."""

    def __init__(self):
        self.scale = 1.0
        self.wall0 = self.virtual0 = time.time()

    def now(self):
        return self.virtual0 + (time.time() - self.wall0) * self.scale

    def set_scale(self, scale):
        virtual = self.now()
        self.wall0, self.virtual0, self.scale = time.time(), virtual, float(scale)

    def wall(self, virtual):
        """The wall-clock epoch seconds at which the emulated clock reaches `virtual`."""
        return time.time() + (virtual - self.now()) / self.scale


class AutoScaling:
    def __init__(self):
        self.lock = threading.RLock()
        self.wake = threading.Condition(self.lock)
        self.clock = Clock()
        self.reset()

    def reset(self):
        with self.lock:
            self.groups = {}       # name -> group
            self.instances = {}    # id -> instance
            self.actions = {}      # instance id -> its pending lifecycle action
            self.completions, self.heartbeats, self.rejected = [], [], []
            self.wake.notify_all()

    # ---------------------------------------------------------------- state machine
    def _set_state(self, inst, state):
        inst["state"] = state
        inst["history"].append({"state": state, "time": time.time()})

    def _hooks(self, inst, transition):
        return [h for h in self.groups[inst["group"]]["hooks"] if h["transition"] == transition]

    def _run_hooks(self, inst, transition, index):
        """Starts the action of the transition's hook number `index`, or finishes the transition."""
        hooks = self._hooks(inst, transition)
        launching = transition == LAUNCHING
        if index >= len(hooks):
            waited = index > 0
            if launching:
                if waited:
                    self._set_state(inst, "Pending:Proceed")
                self._set_state(inst, "InService")
            else:
                if waited:
                    self._set_state(inst, "Terminating:Proceed")
                self._set_state(inst, "Terminated")
            return
        hook, now = hooks[index], self.clock.now()
        self.actions[inst["id"]] = {
            "instance": inst["id"], "group": inst["group"], "hook": hook["name"], "transition": transition,
            "index": index, "token": str(uuid.uuid4()), "started": time.time(),
            "heartbeat_timeout": hook["heartbeat_timeout"], "global_timeout": hook["global_timeout"],
            "default_result": hook["default_result"],
            "heartbeat_deadline": now + hook["heartbeat_timeout"], "global_deadline": now + hook["global_timeout"]}
        wait = "Pending:Wait" if launching else "Terminating:Wait"
        if inst["state"] != wait:
            self._set_state(inst, wait)
        self.wake.notify_all()

    def _begin_launch(self, inst):
        inst["target_state"] = "InService"  # the state it prepares to reach, as AWS writes it
        self._set_state(inst, "Pending")
        self._run_hooks(inst, LAUNCHING, 0)

    def _begin_termination(self, inst):
        self.actions.pop(inst["id"], None)
        inst["target_state"] = "Terminated"
        self._set_state(inst, "Terminating")
        self._run_hooks(inst, TERMINATING, 0)

    def _complete(self, action, result, source):
        self.actions.pop(action["instance"], None)
        self.completions.append({"instance": action["instance"], "group": action["group"], "hook": action["hook"],
                                 "transition": action["transition"], "token": action["token"], "result": result,
                                 "source": source, "time": time.time()})
        inst = self.instances[action["instance"]]
        if result == "CONTINUE":
            self._run_hooks(inst, action["transition"], action["index"] + 1)
        elif action["transition"] == LAUNCHING:
            self._begin_termination(inst)
        else:  # ABANDON while terminating: the remaining hooks are skipped
            self._run_hooks(inst, TERMINATING, len(self._hooks(inst, TERMINATING)))

    def advance(self):
        """Lets every action whose heartbeat or global timeout has passed take its default result."""
        with self.lock:
            while True:
                now = self.clock.now()
                due = [a for a in self.actions.values()
                       if now >= min(a["heartbeat_deadline"], a["global_deadline"])]
                if not due:
                    return
                for a in due:
                    if self.actions.get(a["instance"]) is a:
                        self._complete(a, a["default_result"], "timeout")

    def timer(self):
        """The background thread: sleeps until the next deadline (or a change), then advances."""
        with self.lock:
            while True:
                try:
                    self.advance()
                except Exception as e:  # never let the timer die
                    print(f"[autoscaling] timer: {e!r}", flush=True)
                delay = 1.0
                if self.actions:
                    nxt = min(min(a["heartbeat_deadline"], a["global_deadline"]) for a in self.actions.values())
                    delay = min(delay, max(0.0, (nxt - self.clock.now()) / self.clock.scale) + 0.001)
                self.wake.wait(delay)

    def set_time_scale(self, scale):
        with self.lock:
            self.advance()
            self.clock.set_scale(scale)
            self.wake.notify_all()

    # ---------------------------------------------------------------- control API
    def put_group(self, doc):
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"]:
            raise ControlError("a group needs a 'name' (string)")
        unknown = set(doc) - {"name", "hooks", "instances", "launch_configuration", "launch_template",
                              "availability_zone", "instance_type"}
        if unknown:
            raise ControlError(f"unknown group key(s): {sorted(unknown)}")
        hooks = [parse_hook(h) for h in doc.get("hooks") or []]
        if len({h["name"] for h in hooks}) != len(hooks):
            raise ControlError("hook names must be unique in a group")
        ids = doc.get("instances") or []
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise ControlError("'instances' must be a list of instance ids")
        lt = doc.get("launch_template")
        if lt is not None and not isinstance(lt, dict):
            raise ControlError("'launch_template' must be an object {id, name, version}")
        name = doc["name"]
        group = {"name": name, "hooks": hooks,
                 "launch_configuration": None if lt else str(doc.get("launch_configuration") or f"{name}-lc"),
                 "launch_template": None if not lt else {
                     "LaunchTemplateId": lt.get("id") or "lt-0123456789abcdef0",
                     "LaunchTemplateName": lt.get("name") or f"{name}-lt", "Version": str(lt.get("version") or "$Default")},
                 "availability_zone": doc.get("availability_zone"), "instance_type": doc.get("instance_type") or "t3.micro"}
        with self.lock:
            for iid in [i for i, inst in self.instances.items() if inst["group"] == name]:
                self.instances.pop(iid)
                self.actions.pop(iid, None)
            self.groups[name] = group
            for iid in ids:
                self.actions.pop(iid, None)
                self.instances[iid] = new_instance(iid, name, "InService")
            self.wake.notify_all()
            return self.group_json(group)

    def launch(self, doc):
        iid, name = str_field(doc, "instance"), doc.get("group")
        with self.lock:
            self.advance()
            inst = self.instances.get(iid)
            name = name or (inst and inst["group"])
            if name not in self.groups:
                raise ControlError(f"no group {name!r}", 404)
            if inst and inst["state"] != "Terminated":
                raise ControlError(f"instance {iid} is {inst['state']}, not launchable", 409)
            inst = self.instances[iid] = new_instance(iid, name, None)
            self._begin_launch(inst)
            return self.instance_json(inst)

    def terminate(self, doc):
        iid = str_field(doc, "instance")
        with self.lock:
            self.advance()
            inst = self.instances.get(iid)
            if inst is None:
                raise ControlError(f"no instance {iid}", 404)
            if inst["state"].startswith("Terminat"):
                raise ControlError(f"instance {iid} is already {inst['state']}", 409)
            self._begin_termination(inst)
            return self.instance_json(inst)

    def set_target_state(self, doc):
        iid, state = str_field(doc, "instance"), doc.get("state")
        if state is not None and state not in TARGET_STATES:
            raise ControlError(f"'state' must be null or one of {', '.join(TARGET_STATES)}")
        with self.lock:
            inst = self.instances.get(iid)
            if inst is None:
                raise ControlError(f"no instance {iid}", 404)
            inst["target_state"] = state
            return self.instance_json(inst)

    def snapshot(self):
        with self.lock:
            self.advance()
            actions = []
            for a in self.actions.values():
                out = {k: v for k, v in a.items() if k not in ("heartbeat_deadline", "global_deadline", "index")}
                out["heartbeat_deadline"] = self.clock.wall(a["heartbeat_deadline"])
                out["global_deadline"] = self.clock.wall(a["global_deadline"])
                actions.append(out)
            return {"time_scale": self.clock.scale,
                    "groups": {n: self.group_json(g) for n, g in self.groups.items()},
                    "instances": {i: self.instance_json(inst) for i, inst in self.instances.items()},
                    "actions": actions, "completions": list(self.completions),
                    "heartbeats": list(self.heartbeats), "rejected": list(self.rejected)}

    def group_json(self, g):
        return {**g, "hooks": [dict(h) for h in g["hooks"]],
                "instances": [i for i, inst in self.instances.items() if inst["group"] == g["name"]]}

    def instance_json(self, inst):
        a = self.actions.get(inst["id"])
        return {"group": inst["group"], "state": inst["state"], "target_state": inst["target_state"],
                "hook": a["hook"] if a else None, "token": a["token"] if a else None,
                "history": list(inst["history"])}

    def target_state(self, iid):
        with self.lock:
            self.advance()
            inst = self.instances.get(iid)
            return inst["target_state"] if inst else None

    def group_of(self, iid):
        with self.lock:
            inst = self.instances.get(iid)
            return inst["group"] if inst else None

    # ---------------------------------------------------------------- Query API
    def describe_instances(self, params, imds):
        ids = members(params, "InstanceIds")
        if len(ids) > 50:
            raise AutoScalingError("The number of instance ids that may be passed in is limited to 50")
        out = []
        for iid, inst in self.instances.items():
            if inst["state"] == "Terminated" or (ids and iid not in ids):
                continue
            g = self.groups[inst["group"]]
            d = {"InstanceId": iid, "InstanceType": g["instance_type"], "AutoScalingGroupName": g["name"],
                 "AvailabilityZone": g["availability_zone"] or imds.get("az") or "us-east-1a",
                 "LifecycleState": inst["state"], "HealthStatus": "HEALTHY"}
            if g["launch_template"]:
                d["LaunchTemplate"] = g["launch_template"]
            else:
                d["LaunchConfigurationName"] = g["launch_configuration"]
            d["ProtectedFromScaleIn"] = False
            out.append(d)
        return {"AutoScalingInstances": out}

    def describe_hooks(self, params, imds):
        name = required(params, "AutoScalingGroupName")
        group = self.groups.get(name)
        if group is None:
            raise AutoScalingError(f"Group {name} not found")
        names = members(params, "LifecycleHookNames")
        return {"LifecycleHooks": [
            {"LifecycleHookName": h["name"], "AutoScalingGroupName": name, "LifecycleTransition": h["transition"],
             "NotificationMetadata": h["notification_metadata"], "HeartbeatTimeout": h["heartbeat_timeout"],
             "GlobalTimeout": h["global_timeout"], "DefaultResult": h["default_result"]}
            for h in group["hooks"] if not names or h["name"] in names]}

    def _find_action(self, params):
        group = required(params, "AutoScalingGroupName")
        hook = required(params, "LifecycleHookName")
        iid, token = params.get("InstanceId"), params.get("LifecycleActionToken")
        if not iid and not token:
            raise AutoScalingError("Either InstanceId or LifecycleActionToken must be specified.")
        for a in self.actions.values():
            if a["group"] == group and a["hook"] == hook and (not iid or a["instance"] == iid) and \
                    (not token or a["token"] == token):
                return a
        if iid:
            raise AutoScalingError(f"No active Lifecycle Action found with instance ID {iid}")
        raise AutoScalingError(f"No active Lifecycle Action found with token {token}")

    def complete(self, params, imds):
        required(params, "AutoScalingGroupName")
        required(params, "LifecycleHookName")
        result = required(params, "LifecycleActionResult")
        if result not in ("CONTINUE", "ABANDON"):
            raise AutoScalingError(f"Invalid value for LifecycleActionResult: {result}. "
                                   f"Valid values are CONTINUE and ABANDON.")
        self._complete(self._find_action(params), result, "api")
        return None

    def heartbeat(self, params, imds):
        action = self._find_action(params)
        now = self.clock.now()
        action["heartbeat_deadline"] = min(now + action["heartbeat_timeout"], action["global_deadline"])
        self.heartbeats.append({"instance": action["instance"], "group": action["group"], "hook": action["hook"],
                                "token": action["token"], "time": time.time(),
                                "heartbeat_deadline": self.clock.wall(action["heartbeat_deadline"])})
        self.wake.notify_all()
        return None

    def query(self, params, imds):
        """(HTTP status, content type, XML body) for one of ACTIONS."""
        action = params.get("Action")
        handler = {"DescribeAutoScalingInstances": self.describe_instances,
                   "DescribeLifecycleHooks": self.describe_hooks,
                   "CompleteLifecycleAction": self.complete,
                   "RecordLifecycleActionHeartbeat": self.heartbeat}[action]
        with self.lock:
            self.advance()
            try:
                result = handler(params, imds)
            except AutoScalingError as e:
                self.rejected.append({"action": action, "reason": e.message, "code": e.code, "time": time.time(),
                                      "group": params.get("AutoScalingGroupName"),
                                      "hook": params.get("LifecycleHookName"),
                                      "instance": params.get("InstanceId"),
                                      "token": params.get("LifecycleActionToken")})
                return render_error(e)
        inner = xml_fields(result) if result else ""
        return 200, "text/xml", (f'<{action}Response xmlns="{NS}"><{action}Result>{inner}</{action}Result>'
                                 f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
                                 f"</{action}Response>")


STATE = AutoScaling()


def start_timer():
    threading.Thread(target=STATE.timer, daemon=True, name="autoscaling-timer").start()


# ---------------------------------------------------------------------------- helpers
def new_instance(iid, group, state):
    return {"id": iid, "group": group, "state": state, "target_state": None,
            "history": [{"state": state, "time": time.time()}] if state else []}


def str_field(doc, key):
    if not isinstance(doc, dict) or not isinstance(doc.get(key), str) or not doc[key]:
        raise ControlError(f"'{key}' (string) is required")
    return doc[key]


def parse_hook(h):
    if not isinstance(h, dict) or not isinstance(h.get("name"), str) or not h["name"]:
        raise ControlError("a hook needs a 'name' (string)")
    unknown = set(h) - {"name", "transition", "heartbeat_timeout", "global_timeout", "default_result",
                        "notification_metadata"}
    if unknown:
        raise ControlError(f"unknown hook key(s): {sorted(unknown)}")
    transition = {"launching": LAUNCHING, "terminating": TERMINATING}.get(h.get("transition"), h.get("transition"))
    if transition not in (LAUNCHING, TERMINATING):
        raise ControlError(f"hook {h['name']}: 'transition' must be launching, terminating, {LAUNCHING} or {TERMINATING}")
    heartbeat = h.get("heartbeat_timeout", 3600)
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, int) or heartbeat < 1:
        raise ControlError(f"hook {h['name']}: 'heartbeat_timeout' must be an integer >= 1 (seconds)")
    global_timeout = h.get("global_timeout")
    if global_timeout is None:
        global_timeout = min(MAX_GLOBAL_TIMEOUT, 100 * heartbeat)
    if isinstance(global_timeout, bool) or not isinstance(global_timeout, int) or global_timeout < 1:
        raise ControlError(f"hook {h['name']}: 'global_timeout' must be an integer >= 1 (seconds)")
    result = h.get("default_result", "ABANDON")
    if result not in ("CONTINUE", "ABANDON"):
        raise ControlError(f"hook {h['name']}: 'default_result' must be CONTINUE or ABANDON")
    metadata = h.get("notification_metadata")
    if metadata is not None and not isinstance(metadata, str):
        raise ControlError(f"hook {h['name']}: 'notification_metadata' must be a string")
    return {"name": h["name"], "transition": transition, "heartbeat_timeout": heartbeat,
            "global_timeout": global_timeout, "default_result": result, "notification_metadata": metadata}


def members(params, name):
    """The values of a Query list parameter (Name.member.1, Name.member.2, ...), in order."""
    out, n = [], 1
    while f"{name}.member.{n}" in params:
        out.append(params[f"{name}.member.{n}"])
        n += 1
    return out


def required(params, name):
    if not params.get(name):
        raise AutoScalingError(f"1 validation error detected: Value null at '{name[0].lower() + name[1:]}' "
                               f"failed to satisfy constraint: Member must not be null")
    return params[name]




def render_error(err):
    return err.status, "text/xml", (
        f'<ErrorResponse xmlns="{NS}"><Error><Type>{err.etype}</Type><Code>{escape(err.code)}</Code>'
        f"<Message>{escape(err.message)}</Message></Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>")


def query(params, imds):
    return STATE.query(params, imds)


# ---------------------------------------------------------------------------- control API
def control(method, path, body, imds):
    """(HTTP status, JSON-able answer) for /_emu/autoscaling[...]; `imds` is the IMDS settings
    (POST /_emu/autoscaling/instance sets its instance_id)."""
    route = path[len("/_emu/autoscaling"):].strip("/")
    try:
        if route == "" and method == "GET":
            return 200, STATE.snapshot()
        if route == "" and method == "DELETE":
            STATE.reset()
            return 200, STATE.snapshot()
        if method != "POST":
            return 405, {"error": f"{method} {path} is not supported"}
        try:
            doc = json.loads(body or b"{}")
        except ValueError:
            raise ControlError("the body must be JSON")
        if route == "groups":
            return 200, STATE.put_group(doc)
        if route == "launch":
            return 200, STATE.launch(doc)
        if route == "terminate":
            return 200, STATE.terminate(doc)
        if route == "target-state":
            return 200, STATE.set_target_state(doc)
        if route == "instance":
            imds["instance_id"] = str_field(doc, "instance")
            with STATE.lock:
                inst = STATE.instances.get(imds["instance_id"])
                return 200, {"instance": imds["instance_id"], **(STATE.instance_json(inst) if inst else {})}
        return 404, {"error": f"no route {path}"}
    except ControlError as e:
        return e.status, {"error": e.message}


# ---------------------------------------------------------------------------- IMDS
IMDS_KEYS = ("spot_instance_action", "rebalance_recommendation", "maintenance_events", "instance_tags")


def _imds_time(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def imds_update(doc):
    """Checks the lifecycle keys of a POST /_emu/imds object and fills in what AWS would:
    spot_instance_action {"action": "terminate", "time": now + 2 min}, rebalance_recommendation
    {"noticeTime": now}, and each maintenance event's Code/Description/EventId/NotBefore/NotAfter/
    State. A string is served verbatim; null removes the item (404)."""
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    out = dict(doc)
    spot = doc.get("spot_instance_action")
    if isinstance(spot, dict):
        out["spot_instance_action"] = {"action": "terminate", "time": _imds_time(now + dt.timedelta(minutes=2)), **spot}
    elif spot is not None and not isinstance(spot, str):
        raise ValueError("'spot_instance_action' must be an object, a string or null")
    rebalance = doc.get("rebalance_recommendation")
    if isinstance(rebalance, dict):
        out["rebalance_recommendation"] = {"noticeTime": _imds_time(now), **rebalance}
    elif rebalance is not None and not isinstance(rebalance, str):
        raise ValueError("'rebalance_recommendation' must be an object, a string or null")
    events = doc.get("maintenance_events")
    if isinstance(events, list):
        gmt = "%d %b %Y %H:%M:%S GMT"
        filled = []
        for e in events:
            if not isinstance(e, dict):
                raise ValueError("'maintenance_events' must be a list of objects")
            filled.append({"Code": "system-reboot", "Description": "scheduled reboot",
                           "EventId": "instance-event-" + secrets.token_hex(8) + "0",
                           "NotBefore": (now + dt.timedelta(days=1)).strftime(gmt),
                           "NotAfter": (now + dt.timedelta(days=1, minutes=15)).strftime(gmt),
                           "State": "active", **e})
        out["maintenance_events"] = filled
    elif events is not None and not isinstance(events, str):
        raise ValueError("'maintenance_events' must be a list, a string or null")
    tags = doc.get("instance_tags")
    if tags is not None and not (isinstance(tags, dict) and all(isinstance(v, str) for v in tags.values())):
        raise ValueError("'instance_tags' must be an object of strings, or null")
    return out


def _served(value):
    return value if isinstance(value, str) else json.dumps(value)


def imds_items(imds):
    """The extra meta-data subtrees ("autoscaling/", "spot/", "events/", "tags/") for the IMDS
    settings `imds`; an item that is not set is left out, so that IMDS answers 404 for it."""
    iid = imds.get("instance_id")
    items = {}
    state = STATE.target_state(iid)
    if state:
        items["autoscaling/"] = {"target-lifecycle-state": state}
    if imds.get("spot_instance_action") is not None:
        items["spot/"] = {"instance-action": _served(imds["spot_instance_action"])}
    events = {}
    if imds.get("rebalance_recommendation") is not None:
        events["recommendations/"] = {"rebalance": _served(imds["rebalance_recommendation"])}
    if imds.get("maintenance_events") is not None:
        events["maintenance/"] = {"scheduled": _served(imds["maintenance_events"])}
    if events:
        items["events/"] = events
    if imds.get("instance_tags") is not None:
        group = STATE.group_of(iid)
        tags = {"aws:autoscaling:groupName": group} if group else {}
        tags.update(imds["instance_tags"])
        items["tags/"] = {"instance/": tags}
    return items
