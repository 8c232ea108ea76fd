"""Records what the reference cfn-hup (aws-cfn-bootstrap 1.4-31) does with command hooks
(SPEC §14.7): one `cfn-hup -v --no-daemon` run per case in cases.json, each receiving one
command message from its listener queue on the project's emulator.

Run as root, inside a private network and mount namespace, with the emulator's venv:

    unshare -n -m target/emulator-venv/bin/python tests/golden/cmd-hooks/record.py

Needs the reference installed as in ../README.md at $REF (default /tmp/ref). Writes
reference/<case>/... beside this script (or under $OUT); see README.md here. In the
namespace, 169.254.169.254 is a loopback address where the emulator answers IMDS, so the
listener id is the emulator's instance id; /var/log and /var/lib are private bind mounts.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import boto3

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
REF = os.environ.get("REF", "/tmp/ref")
OUT = os.environ.get("OUT", os.path.join(HERE, "reference"))
W = os.environ.get("W", "/tmp/cmdhooks-ref")
PORT = 5055
URL = f"http://127.0.0.1:{PORT}"
KEYS = ("AKIDTESTKEY", "test/secret/key")
STACK = "cmdref"
RESULTS = "cmdref-results"


def sh(*args):
    subprocess.run(args, check=True)


def setup_namespace():
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "addr", "add", "169.254.169.254/32", "dev", "lo")
    for d in ("varlib", "varlog"):
        os.makedirs(f"{W}/{d}")
    sh("mount", "--bind", f"{W}/varlib", "/var/lib")
    sh("mount", "--bind", f"{W}/varlog", "/var/log")


def start_emulator():
    log = open(f"{W}/emulator.log", "w")
    emulator = subprocess.Popen(
        [sys.executable, f"{REPO}/tests/emulator/moto_cfn_server.py", "--port", str(PORT), "--imds-host",
         "169.254.169.254", "--imds-port", "80", "--validate-sigv4", "--credentials", ":".join(KEYS)],
        stdout=log, stderr=log)
    for _ in range(300):
        if emulator.poll() is not None:
            break
        try:
            subprocess.run(["curl", "-sf", f"{URL}/_emu/state"], check=True, stdout=subprocess.DEVNULL)
            return emulator
        except subprocess.CalledProcessError:
            time.sleep(0.1)
    sys.exit("the emulator did not start")


def client(service):
    return boto3.client(service, endpoint_url=URL, region_name="us-east-1", aws_access_key_id=KEYS[0],
                        aws_secret_access_key=KEYS[1])


def write_config(sqs):
    """cfn-hup.conf and hooks.conf (the committed one, {W} filled in), the credential file."""
    os.makedirs(f"{W}/etc")
    with open(f"{W}/creds", "w") as f:
        f.write(f"AWSAccessKeyId={KEYS[0]}\nAWSSecretKey={KEYS[1]}\n")
    os.chmod(f"{W}/creds", 0o600)
    with open(f"{HERE}/cfn-hup.conf") as f:
        conf = f.read().replace("{W}", W).replace("{URL}", URL)
    with open(f"{W}/etc/cfn-hup.conf", "w") as f:
        f.write(conf)
    with open(f"{HERE}/hooks.conf") as f:
        hooks = f.read().replace("{W}", W)
    with open(f"{W}/etc/hooks.conf", "w") as f:
        f.write(hooks)


def listener_queue():
    (listener,) = emulator_json("/_emu/listeners")
    return listener["QueueUrl"]


def drain(sqs, queue):
    """The bodies of the messages on a queue, deleted as they are read."""
    bodies = []
    while True:
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not got:
            return bodies
        for m in got:
            bodies.append(m["Body"])
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])


def queue_counts(sqs, queue):
    a = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
    return f"visible {a['ApproximateNumberOfMessages']} in-flight {a['ApproximateNumberOfMessagesNotVisible']}\n"


def emulator_json(path):
    return json.loads(subprocess.run(["curl", "-sf", f"{URL}{path}"], check=True, capture_output=True).stdout)


def journal_since(seq):
    return emulator_json(f"/_emu/requests?since={seq}")


def run_reference(case, out):
    """One `cfn-hup -v --no-daemon` with an empty /var/log; what it printed and left."""
    for f in os.listdir("/var/log"):
        os.remove(f"/var/log/{f}")
    env = {"PATH": f"/usr/sbin:/usr/bin:/sbin:/bin:{REF}/bin", "HOME": W, "LANG": "C.UTF-8", "TZ": "UTC"}
    started = time.time()
    done = subprocess.run([f"{REF}/bin/cfn-hup", "-v", "-c", f"{W}/etc", "--no-daemon"], env=env, cwd=W,
                          stdin=subprocess.DEVNULL, capture_output=True)
    print(f"{case}: exit {done.returncode} in {time.time() - started:.1f} s")
    for name, data in (("stdout", done.stdout), ("stderr", done.stderr), ("exit", f"{done.returncode}\n".encode())):
        with open(f"{out}/{name}", "wb") as f:
            f.write(data)
    shutil.copy("/var/log/cfn-hup.log", f"{out}/cfn-hup.log")
    run = "/var/lib/cfn-hup/data/commands_run.json"
    if os.path.exists(run):
        shutil.copy(run, f"{out}/commands_run.json")


def envelope(message):
    return json.dumps({"Type": "Notification", "MessageId": "00000000-0000-0000-0000-000000000001",
                       "TopicArn": "arn:aws:sns:us-east-1:123456789012:commands", "Message": message})


def main():
    shutil.rmtree(W, ignore_errors=True)
    os.makedirs(W)
    setup_namespace()
    emulator = start_emulator()
    try:
        record()
    finally:
        emulator.kill()
    normalise()


def record():
    with open(f"{HERE}/cases.json") as f:
        cases = json.load(f)
    client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps({"Resources": {"Instance": {
        "Type": "AWS::EC2::Instance", "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}}}}))
    sqs = client("sqs")
    results = sqs.create_queue(QueueName=RESULTS)["QueueUrl"]
    write_config(sqs)
    shutil.rmtree(OUT, ignore_errors=True)
    queue = None
    for case in cases:
        out = f"{OUT}/{case['name']}"
        os.makedirs(out)
        if os.path.exists(f"{W}/action.env"):
            os.remove(f"{W}/action.env")
        if case.get("other_leader"):
            # Another listener asks first, so it leads this invocation.
            sh(f"{REF}/bin/cfn-elect-cmd-leader", "-s", STACK, "-c", case["command"]["CommandName"], "-i",
               case["command"]["InvocationId"], "-l", case["other_leader"], "-u", URL, "--access-key", KEYS[0],
               "--secret-key", KEYS[1])
        if queue is not None:
            if "raw_body" in case:
                body = case["raw_body"]
            else:
                command = dict(case["command"])
                command["ResultQueue"] = results
                body = envelope(json.dumps(command))
            sqs.send_message(QueueUrl=queue, MessageBody=body)
        seq = journal_since(0)[-1]["seq"]
        events_before = len(emulator_json("/_emu/events"))
        run_reference(case["name"], out)
        if queue is None:
            queue = listener_queue()
        with open(f"{out}/requests", "w") as f:
            # What the reference asked (the harness's own SQS calls are boto3's).
            for r in journal_since(seq):
                if not (r.get("user_agent") or "").startswith("Boto3"):
                    f.write(f"{r['method']} {r['path']} {r.get('action') or ''} {r['status']}\n")
        with open(f"{out}/events", "w") as f:
            # The command events PUT to the emulator's event handles during the run.
            for e in emulator_json("/_emu/events")[events_before:]:
                f.write(json.dumps({k: e[k] for k in ("path", "query", "content_type", "body")}) + "\n")
        with open(f"{out}/results", "w") as f:
            for body in drain(sqs, results):
                f.write(body + "\n")
        with open(f"{out}/queue", "w") as f:
            f.write(queue_counts(sqs, queue))
        if os.path.exists(f"{W}/action.env"):
            shutil.move(f"{W}/action.env", f"{out}/action.env")


def normalise():
    """Times, the random parts of what the emulator hands out and this machine's paths
    become placeholders (README.md lists them)."""
    rules = [
        (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"), "{TIME}"),
        (re.compile(r"cfn-listener-cmdref-i-0123456789abcdef0-[0-9a-f]{16}"), "{LISTENER_QUEUE}"),
        (re.compile(r"ASIALISTENER[0-9A-F]{8}"), "{ACCESS_KEY}"),
        (re.compile(r"ListenerSessionToken//[A-Za-z0-9_-]+"), "{SESSION_TOKEN}"),
        (re.compile(r"(RESULT_SECRET_KEY=)[A-Za-z0-9_-]+"), r"\1{SECRET_KEY}"),
        (re.compile(r"('RESULT_SECRET_KEY': u')[A-Za-z0-9_-]+"), r"\1{SECRET_KEY}"),
        (re.compile(r"'(ApproximateFirstReceiveTimestamp|SentTimestamp)': '\d+'"), r"'\1': '{EPOCH_MS}'"),
        (re.compile(r"(refresh in )[0-9.]+( seconds)"), r"\1{SECONDS}\2"),
        (re.compile(r"\d{4}-\d\d-\d\dT00:00:00"), "{DAY}"),
        (re.compile(r"(ReceiptHandle:|Deleting )[A-Za-z0-9+/=_-]{20,}"), r"\1{RECEIPT_HANDLE}"),
        (re.compile(r"MessageId:[0-9a-f-]{36}"), "MessageId:{MESSAGE_ID}"),
        (re.compile(re.escape(W)), "{W}"),
        (re.compile(re.escape(REF)), "{REF}"),
        (re.compile(r'"/[^"]*(?=/lib/python2\.7/)'), '"{PYTHON27}'),
    ]
    for root, _, files in os.walk(OUT):
        for name in files:
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            for pattern, replacement in rules:
                text = pattern.sub(replacement, text)
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
    subprocess.run([sys.executable, f"{REPO}/tests/golden/strip_traceback_source.py", OUT], check=True)


if __name__ == "__main__":
    main()
