#!/bin/bash
# Runs inside: unshare -n -m
set -u
W=${W:-/tmp/hupref/w}; rm -rf $W; mkdir -p $W/etc/hooks.d $W/varlib $W/varlog $W/out
ip link set lo up
mount --bind $W/varlib /var/lib 2>/dev/null || { mkdir -p $W/varlib; }
mount --bind $W/varlog /var/log
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$REPO/target/emulator-venv/bin/python
$PY "$REPO/tests/emulator/moto_cfn_server.py" --port 5055 --validate-sigv4 --credentials AKIDTESTKEY:test/secret/key > $W/emu.log 2>&1 &
EMU=$!
until curl -sf http://127.0.0.1:5055/_emu/state >/dev/null; do sleep 0.1; done
cat > $W/mk.py <<'PYEOF'
import boto3, json, sys
cfn = boto3.client("cloudformation", endpoint_url="http://127.0.0.1:5055", region_name="us-east-1",
                   aws_access_key_id="AKIDTESTKEY", aws_secret_access_key="test/secret/key")
def tpl(md):
    return json.dumps({"Resources": {"Instance": {"Type": "AWS::EC2::Instance", "Metadata": md,
        "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}}}})
v1 = {"AWS::CloudFormation::Init": {"config": {"files": {"/tmp/a": {"content": "one"}}}}, "c": {"leaf": "x"}, "f": "", "n": 0}
v2 = {"AWS::CloudFormation::Init": {"config": {"files": {"/tmp/a": {"content": "two"}}}}, "a": {"b": "added"}, "f": "now", "n": 5}
if sys.argv[1] == "create":
    cfn.create_stack(StackName="hupref", TemplateBody=tpl(v1))
else:
    cfn.update_stack(StackName="hupref", TemplateBody=tpl(v2))
PYEOF
$PY $W/mk.py create
printf 'AWSAccessKeyId=AKIDTESTKEY\nAWSSecretKey=test/secret/key\n' > $W/creds; chmod 600 $W/creds
cat > $W/etc/cfn-hup.conf <<EOC
[main]
stack=hupref
credential-file=$W/creds
url=http://127.0.0.1:5055
EOC
A='env | grep ^CFN_ | sort > '$W'/out/$H.$(date +%%s%%N); echo output of $H'
cat > $W/etc/hooks.conf <<EOC
[init-update]
triggers=post.update
path=Resources.Instance.Metadata.AWS::CloudFormation::Init
action=H=init-update; $A

[nested-add]
triggers=post.add
path=Resources.Instance.Metadata.a.b
action=H=nested-add; $A

[nested-remove]
triggers=post.remove
path=Resources.Instance.Metadata.c
action=H=nested-remove; $A

[phys]
triggers=post.add,post.update
path=Resources.Instance.PhysicalResourceId
action=H=phys; $A

[last]
triggers=post.add,post.update
path=Resources.Instance
action=H=last; $A

[falsy]
triggers=post.add,post.update
path=Resources.Instance.Metadata.f
action=H=falsy; $A

[zero]
triggers=post.add,post.update,post.remove
path=Resources.Instance.Metadata.n
action=H=zero; $A

[failing]
triggers=post.add
path=Resources.Instance.Metadata.c.leaf
action=echo failing out; exit 3
EOC
cd /tmp
run() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TZ=UTC /tmp/ref/bin/cfn-hup -v -c $W/etc --no-daemon > $W/out/$1.stdout 2> $W/out/$1.stderr; echo $? > $W/out/$1.exit; cp /var/log/cfn-hup.log $W/out/$1.cfn-hup.log; : > /var/log/cfn-hup.log; cp /var/lib/cfn-hup/data/metadata_db.json $W/out/$1.metadata_db.json; ls -la /var/lib/cfn-hup/data > $W/out/$1.ls; }
run pass1
run pass2
$PY $W/mk.py update
sleep 1
run pass3
run pass4
kill $EMU
