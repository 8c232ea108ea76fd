#!/bin/bash
# Re-record the golden outputs of the reference aws-cfn-bootstrap 1.4-31.
# See tests/golden/README.md.  Must run as root (the reference writes
# /var/log/cfn-*.log, /var/lib/cfn-init, /var/lib/cfn-hup).
#
#   REF=/tmp/ref  OUT=<dir>  bash tests/golden/record-reference.sh
#
# WARNING: deletes /var/log/cfn-*.log*, /var/lib/cfn-init and /var/lib/cfn-hup
# before every case.  Never talks to anything but 127.0.0.1.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REF=${REF:-/tmp/ref}
OUT=${OUT:-$HERE/reference-1.4-31}
WORK=$REF/work
BIN=$REF/bin
REFUSE_PORT=8119     # IMDS stand-in: 403 for everything  ("not EC2")
EC2_PORT=8120        # IMDS stand-in: instance-id answers ("EC2")

# ---------------------------------------------------------------- fixtures
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$WORK" || exit 1
printf '{"a": ' > bad.json
printf '[1]\n' > list.json
printf '{"Foo": {"bar": 1}}\n' > noinit.json
cat > ok.json <<'J'
{
  "AWS::CloudFormation::Init": {
    "config": {
      "files": {
        "/tmp/ref/scratch/out/f.txt": { "content": "hello file\n" }
      },
      "commands": {
        "01echo": { "command": "echo hello from command", "test": "true" }
      }
    }
  }
}
J
cat > fail.json <<'J'
{
  "AWS::CloudFormation::Init": {
    "config": {
      "commands": {
        "01fail": { "command": "echo about to fail; exit 3" }
      }
    }
  }
}
J
printf 'AWSAccessKeyId=a\nAWSSecretKey=b\n' > creds-0644; chmod 644 creds-0644
printf 'AWSAccessKeyId=a\n' > creds-0600-missing; chmod 600 creds-0600-missing
printf 'AWSAccessKeyId=a\nAWSSecretKey=b\n' > creds-0600-ok; chmod 600 creds-0600-ok
mkdir hup-empty hup-nostack hup-nohooks
printf '[main]\nregion=us-east-1\n' > hup-nostack/cfn-hup.conf
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\n' > hup-nohooks/cfn-hup.conf
for d in hup-noaction hup-unparsable hup-badumask hup-badcreds hup-nocreds hup-deadurl hup-badverbose; do mkdir $d; done
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file=%s/creds-0600-ok\n' "$WORK" > hup-noaction/cfn-hup.conf
printf '[h1]\ntriggers=post.update\npath=Resources.R.Metadata\n' > hup-noaction/hooks.conf
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file=%s/creds-0600-ok\n' "$WORK" > hup-unparsable/cfn-hup.conf
printf 'triggers=post.update\n' > hup-unparsable/hooks.conf
HOOK='[h1]\ntriggers=post.update\npath=Resources.R.Metadata\naction=echo changed\n'
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file=%s/creds-0600-ok\numask=999\n' "$WORK" > hup-badumask/cfn-hup.conf
printf "$HOOK" > hup-badumask/hooks.conf
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file=%s/nonexistent-creds\n' "$WORK" > hup-badcreds/cfn-hup.conf
printf "$HOOK" > hup-badcreds/hooks.conf
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\n' > hup-nocreds/cfn-hup.conf
printf "$HOOK" > hup-nocreds/hooks.conf
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file=%s/creds-0600-ok\n' "$WORK" > hup-deadurl/cfn-hup.conf
printf "$HOOK" > hup-deadurl/hooks.conf
printf '[main]\nstack=s\nurl=http://127.0.0.1:9\ncredential-file=%s/creds-0600-ok\nverbose=maybe\n' "$WORK" > hup-badverbose/cfn-hup.conf
printf "$HOOK" > hup-badverbose/hooks.conf

# ---------------------------------------------------------------- IMDS stand-ins
started=()
for spec in "$REFUSE_PORT refuse" "$EC2_PORT ec2"; do
  set -- $spec
  if ! curl -s -o /dev/null -x "http://127.0.0.1:$1" http://169.254.169.254/ 2>/dev/null; then
    python3 "$HERE/imds_refuser.py" "$1" "$REF/imds-$2.log" "$2" >/dev/null 2>&1 &
    started+=($!)
  fi
done
trap '[ ${#started[@]} -gt 0 ] && kill "${started[@]}" 2>/dev/null' EXIT
sleep 1

# ---------------------------------------------------------------- harness
mkdir -p "$OUT"
TSV=$OUT/cases.tsv
printf 'tool\tcase\targv\tenv_notes\texit\tseconds\n' > "$TSV"
BASEENV=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TZ=UTC)

# rec TOOL CASE IMDSMODE STDIN_FILE [VAR=val ...] -- ARGS...
#   IMDSMODE: refuse | ec2 | closed (proxy = closed port 127.0.0.1:9) ; STDIN_FILE: - for /dev/null
rec() {
  local tool=$1 case=$2 mode=$3 stdin=$4; shift 4
  local extra=()
  while [ "$1" != "--" ]; do extra+=("$1"); shift; done; shift
  local port=$REFUSE_PORT; [ "$mode" = ec2 ] && port=$EC2_PORT; [ "$mode" = closed ] && port=9
  local d=$OUT/$tool; mkdir -p "$d"
  rm -rf /var/log/cfn-*.log* /var/lib/cfn-init /var/lib/cfn-hup /var/run/cfn-hup.pid "$WORK/out"
  local in=/dev/null; [ "$stdin" != - ] && in=$stdin
  local t0=$(date +%s.%N)
  env -i "${BASEENV[@]}" HTTP_PROXY=http://127.0.0.1:$port HTTPS_PROXY=http://127.0.0.1:$port NO_PROXY=127.0.0.1,localhost "${extra[@]}" \
      "$BIN/$tool" "$@" <"$in" >"$d/$case.stdout" 2>"$d/$case.stderr"
  local rc=$?
  local t1=$(date +%s.%N)
  echo "$rc" > "$d/$case.exit"
  local secs=$(python3 -c "print('%.1f' % ($t1 - $t0))")
  # logs written by the case
  : > "$d/$case.logfiles"
  for f in /var/log/cfn-init.log /var/log/cfn-hup.log /var/log/cfn-init-cmd.log /var/log/cfn-wire.log; do
    if [ -e "$f" ]; then
      stat -c '%n %a %s' "$f" >> "$d/$case.logfiles"
      [ -s "$f" ] && cp "$f" "$d/$case.$(basename "$f")"
    fi
  done
  [ -s "$d/$case.logfiles" ] || rm -f "$d/$case.logfiles"
  local argv; argv=$(printf '%q ' "$tool" "$@"); argv=${argv% }
  [ "$stdin" != - ] && argv="$argv < $(basename "$stdin")"
  local notes="imds=$mode"; [ ${#extra[@]} -gt 0 ] && notes="$notes ${extra[*]}"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$case" "$argv" "$notes" "$rc" "$secs" >> "$TSV"
  echo "$tool $case rc=$rc ${secs}s"
}

ALL="cfn-init cfn-signal cfn-hup cfn-get-metadata cfn-elect-cmd-leader cfn-send-cmd-result cfn-send-cmd-event"

# ---- help / generic parse errors for every tool
for t in $ALL; do
  rec $t help refuse - -- --help
  rec $t help-short refuse - -- -h
  rec $t bogus-option refuse - -- --bogus
  rec $t bogus-short-option refuse - -- -Z
  rec $t version-option refuse - -- --version
done
for t in cfn-signal; do
  rec $t ec2-help ec2 - -- --help
  rec $t ec2-bogus-option ec2 - -- --bogus
done

# ---- missing option values
rec cfn-init            missing-value-long  refuse - -- --stack
rec cfn-init            missing-value-short refuse - -- -s
rec cfn-signal          missing-value-long  refuse - -- --stack
rec cfn-signal          missing-value-short refuse - -- -r
rec cfn-get-metadata    missing-value-long  refuse - -- --stack
rec cfn-get-metadata    missing-value-short refuse - -- -s
rec cfn-hup             missing-value-long  refuse - -- --config
rec cfn-hup             missing-value-short refuse - -- -c
rec cfn-elect-cmd-leader missing-value-long refuse - -- --stack
rec cfn-elect-cmd-leader missing-value-short refuse - -- -s
rec cfn-send-cmd-result missing-value-long  refuse - -- --queue-url
rec cfn-send-cmd-result missing-value-short refuse - -- -q
rec cfn-send-cmd-event  missing-value-long  refuse - -- --event-handle
rec cfn-send-cmd-event  missing-value-short refuse - -- -e

# ---- value given to a flag that takes none
rec cfn-init            flag-with-value refuse - -- --verbose=1
rec cfn-hup             flag-with-value refuse - -- --no-daemon=yes

# ---- ambiguous prefixes (cfn-hup has none: --config --help --no-daemon --verbose)
rec cfn-signal          ambiguous-prefix  refuse - -- --re x
rec cfn-signal          ambiguous-prefix2 refuse - -- --h
rec cfn-init            ambiguous-prefix  refuse - -- --re x
rec cfn-init            ambiguous-prefix2 refuse - -- --c x
rec cfn-get-metadata    ambiguous-prefix  refuse - -- --re x
rec cfn-elect-cmd-leader ambiguous-prefix refuse - -- --c x
rec cfn-send-cmd-result ambiguous-prefix  refuse - -- --s x
rec cfn-send-cmd-event  ambiguous-prefix  refuse - -- --event x
rec cfn-hup             unique-prefix-no-daemon refuse - -- --n -c "$WORK/hup-empty"

# ---- typed options
rec cfn-signal          invalid-integer refuse - -- -e abc
rec cfn-signal          invalid-choice  refuse - -- -s yes
rec cfn-signal          invalid-choice-long refuse - -- --success=True
rec cfn-send-cmd-result invalid-integer refuse - -- -e abc
rec cfn-send-cmd-result invalid-choice  refuse - -- -s yes

# ---- cfn-get-metadata validation
rec cfn-get-metadata no-args     refuse - --
rec cfn-get-metadata stack-only  refuse - -- -s x
rec cfn-get-metadata resource-only refuse - -- -r x
rec cfn-get-metadata no-credentials-not-ec2 refuse - -- -s s -r r -u http://127.0.0.1:9
rec cfn-get-metadata credfile-nonexistent refuse - -- -s s -r r -u http://127.0.0.1:9 -f "$WORK/nonexistent-creds"
rec cfn-get-metadata credfile-mode-0644   refuse - -- -s s -r r -u http://127.0.0.1:9 -f "$WORK/creds-0644"
rec cfn-get-metadata credfile-missing-key refuse - -- -s s -r r -u http://127.0.0.1:9 -f "$WORK/creds-0600-missing"
rec cfn-get-metadata credfile-is-directory refuse - -- -s s -r r -u http://127.0.0.1:9 -f "$WORK/hup-empty"
rec cfn-get-metadata dead-endpoint refuse - -- -s s -r r -u http://127.0.0.1:9 --access-key a --secret-key b
rec cfn-get-metadata dead-endpoint-credfile refuse - -- -s s -r r -u http://127.0.0.1:9 -f "$WORK/creds-0600-ok"

# ---- cfn-init validation and local sources
rec cfn-init no-source        refuse - --
rec cfn-init stack-only       refuse - -- -s x
rec cfn-init resource-only    refuse - -- -r x
rec cfn-init file-and-stack   refuse - -- "$WORK/noinit.json" -s x
rec cfn-init two-files        refuse - -- "$WORK/noinit.json" "$WORK/ok.json"
rec cfn-init file-nonexistent refuse - -- "$WORK/nonexistent.json"
rec cfn-init file-malformed-json refuse - -- "$WORK/bad.json"
rec cfn-init file-json-list   refuse - -- "$WORK/list.json"
rec cfn-init file-no-init-key refuse - -- "$WORK/noinit.json"
rec cfn-init stdin-malformed-json refuse "$WORK/bad.json" -- -
rec cfn-init stdin-no-init-key refuse "$WORK/noinit.json" -- -
rec cfn-init file-ok          refuse - -- "$WORK/ok.json"
rec cfn-init file-ok-verbose  refuse - -- -v "$WORK/ok.json"
rec cfn-init file-command-fails refuse - -- "$WORK/fail.json"
rec cfn-init file-missing-configset refuse - -- -c nope "$WORK/ok.json"
rec cfn-init dead-endpoint    refuse - -- -s s -r r -u http://127.0.0.1:9 --access-key a --secret-key b

# ---- cfn-signal validation
rec cfn-signal no-url-no-resource refuse - --
rec cfn-signal url-and-resource   refuse - -- --resource r http://127.0.0.1:9/x
rec cfn-signal resource-without-stack refuse - -- --resource r
rec cfn-signal invalid-wch-url    refuse - -- notaurl
rec cfn-signal invalid-wch-url-base64-nonurl refuse - -- Zm9vYmFy
rec cfn-signal stack-only         refuse - -- --stack s
rec cfn-signal ec2-no-url-no-resource ec2 - --
rec cfn-signal ec2-invalid-wch-url ec2 - -- notaurl
rec cfn-signal wch-dead-endpoint  refuse - -- -i myid http://127.0.0.1:9/wch
rec cfn-signal resource-dead-endpoint refuse - -- --stack s --resource r --url http://127.0.0.1:9 --access-key a --secret-key b

# ---- cfn-elect-cmd-leader / cfn-send-cmd-result / cfn-send-cmd-event
rec cfn-elect-cmd-leader no-args refuse - --
rec cfn-elect-cmd-leader only-stack refuse - -- -s s
rec cfn-elect-cmd-leader missing-listener refuse - -- -s s -c c -i i
rec cfn-elect-cmd-leader env-ids-dead-endpoint refuse - STACK_NAME=s CMD_NAME=c INVOCATION_ID=i LISTENER_ID=l -- -u http://127.0.0.1:9 --access-key a --secret-key b
rec cfn-send-cmd-result no-args refuse - --
rec cfn-send-cmd-result ids-no-creds refuse - -- -d d -c c -i i -l l -q http://127.0.0.1:9/q
rec cfn-send-cmd-result ids-missing-token refuse - -- -d d -c c -i i -l l -q http://127.0.0.1:9/q --access-key a --secret-key b
rec cfn-send-cmd-event no-args refuse - --
rec cfn-send-cmd-event handle-not-base64 refuse - -- --event-handle notaurl
rec cfn-send-cmd-event handle-base64-nonurl refuse - -- --event-handle Zm9vYmFy
rec cfn-send-cmd-event handle-ok-no-ids refuse - -- --event-handle http://127.0.0.1:9/e
rec cfn-send-cmd-event dead-endpoint refuse - -- --event-handle http://127.0.0.1:9/e -d d -c c -i i -l l -e ev1 -t 2020-01-02T03:04:05 hello world

# ---- cfn-hup configuration errors
rec cfn-hup config-nonexistent-no-daemon refuse - -- -c /nonexistent --no-daemon
rec cfn-hup config-nonexistent-daemon refuse - -- -c /nonexistent
rec cfn-hup config-no-conf-file refuse - -- -c "$WORK/hup-empty" --no-daemon
rec cfn-hup config-no-stack refuse - -- -c "$WORK/hup-nostack" --no-daemon
rec cfn-hup config-no-hooks refuse - -- -c "$WORK/hup-nohooks" --no-daemon
if [ ! -e /etc/cfn ]; then
  rec cfn-hup default-config-dir refuse - -- --no-daemon
fi
for c in noaction unparsable badumask badcreds nocreds badverbose deadurl; do
  rec cfn-hup config-$c refuse - -- -c "$WORK/hup-$c" --no-daemon
done
rec cfn-hup config-deadurl-verbose refuse - -- -v -c "$WORK/hup-deadurl" --no-daemon

# ---- slow: what an unreachable IMDS costs (about 1 minute); RECORD_SLOW=0 skips it
if [ "${RECORD_SLOW:-1}" = 1 ]; then
  rec cfn-signal imds-closed-proxy-help closed - -- --help
fi

# ---- strip the reference's source-code lines out of Python tracebacks
# (frame lines `  File "...", line N, in F` are kept; the quoted code line
# under each frame is removed so that no reference source lands in the repo)
python3 "$HERE/strip_traceback_source.py" "$OUT"

# ---- a sample of /var/log/cfn-init.log for format checks
mkdir -p "$OUT/logs"
cat "$OUT/cfn-init/file-ok-verbose.cfn-init.log" "$OUT/cfn-init/file-command-fails.cfn-init.log" \
    "$OUT/cfn-signal/wch-dead-endpoint.cfn-init.log" > "$OUT/logs/cfn-init.log.sample"
cp "$OUT/cfn-init/file-command-fails.cfn-init-cmd.log" "$OUT/logs/cfn-init-cmd.log.sample"
cat "$OUT"/cfn-hup/config-deadurl-verbose.cfn-hup.log > "$OUT/logs/cfn-hup.log.sample"
echo done
