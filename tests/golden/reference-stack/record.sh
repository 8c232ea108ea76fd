#!/bin/bash
# Records what the reference (aws-cfn-bootstrap 1.4-31, installed as in ../README.md at
# /tmp/ref) logs and leaves in /var/lib when it reads a stack from the project's emulator,
# and when it fails early. Run as root inside a private network and mount namespace:
#   unshare -n -m bash tests/golden/reference-stack/record.sh
# Output in $W/out (default /tmp/refstack/w/out); see README.md beside this script.
set -u
W=${W:-/tmp/refstack/w}; rm -rf $W; mkdir -p $W/etc $W/varlib $W/varlog $W/out $W/files
ip link set lo up
mount --bind $W/varlib /var/lib
mount --bind $W/varlog /var/log
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
PY=$REPO/target/emulator-venv/bin/python
$PY "$REPO/tests/emulator/moto_cfn_server.py" --port 5055 --validate-sigv4 --credentials AKIDTESTKEY:test/secret/key > $W/emu.log 2>&1 &
EMU=$!
until curl -sf http://127.0.0.1:5055/_emu/state >/dev/null; do sleep 0.1; done
cat > $W/mk.py <<PYEOF
import boto3, json
cfn = boto3.client("cloudformation", endpoint_url="http://127.0.0.1:5055", region_name="us-east-1",
                   aws_access_key_id="AKIDTESTKEY", aws_secret_access_key="test/secret/key")
md = {"AWS::CloudFormation::Init": {"config": {"files": {"$W/files/f.txt": {"content": "from the stack\n"}}}}, "k": "v"}
cfn.create_stack(StackName="refstack", TemplateBody=json.dumps({"Resources": {"Instance": {
    "Type": "AWS::EC2::Instance", "Metadata": md, "Properties": {"ImageId": "ami-12345678", "InstanceType": "t3.micro"}}}}))
PYEOF
$PY $W/mk.py
printf 'AWSAccessKeyId=AKIDTESTKEY\nAWSSecretKey=test/secret/key\n' > $W/creds; chmod 600 $W/creds
printf '[main]\nstack=refstack\ncredential-file=%s/creds\nurl=http://127.0.0.1:5055\n' $W > $W/etc/cfn-hup.conf
printf '[missing]\ntriggers=post.add\npath=Resources.Missing.Metadata\naction=echo ran\n' > $W/etc/hooks.conf
cd /tmp
# rec CASE TOOL ARGS...: a clean /var/log and /var/lib, then the tool; logs and the state left behind.
rec() {
  local case=$1; shift
  rm -rf /var/log/* /var/lib/*
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TZ=UTC "/tmp/ref/bin/$@" \
    > $W/out/$case.stdout 2> $W/out/$case.stderr < /dev/null
  echo $? > $W/out/$case.exit
  for f in cfn-init.log cfn-init-cmd.log cfn-hup.log; do
    [ -s /var/log/$f ] && cp /var/log/$f $W/out/$case.$f
  done
  (cd /var/lib && find . -mindepth 1 | sort | while read -r p; do stat -c '%n %F %a %s' "$p"; done) > $W/out/$case.var-lib
}
URL=http://127.0.0.1:5055
rec get-metadata-verbose cfn-get-metadata -v -s refstack -r Instance -u $URL -f $W/creds
rec init-verbose cfn-init -v -s refstack -r Instance -u $URL -f $W/creds
rec init-missing-file cfn-init -v /nonexistent/metadata.json
rec init-credential-error cfn-init -s refstack -r Instance -u $URL -f /nonexistent/creds
rec hup-failing-pass cfn-hup -c $W/etc --no-daemon
kill $EMU
# No reference source in the repository: the code lines of tracebacks go.
python3 "$REPO/tests/golden/strip_traceback_source.py" $W/out
# Paths of this machine out of the recorded text.
sed -i "s|$W|{W}|g" $W/out/*
