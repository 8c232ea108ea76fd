#!/bin/sh
# Records the reference cfn-init (aws-cfn-bootstrap 1.4-31, Python 2.7, installed as in
# tests/golden/README.md) running packages/groups/users/services configs inside the
# isolated Debian root that `cargo xtask test` builds (target/testroot/bookworm).
# Each case runs in a fresh overlay of that root, in private mount/PID/network
# namespaces, with the reference's Python and sources bind-mounted at their usual
# paths. Run as root from the repository:  sh tests/golden/cfn-init-system/record.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOTFS=${ROOTFS:-$(cd "$HERE/../../.." && pwd)/target/testroot/bookworm}
PY=${PY27:-$HOME/.pyenv/versions/2.7.18}
[ -f "$ROOTFS/.cfn-testroot-v2" ] || { echo "no test root at $ROOTFS (run cargo xtask test once)"; exit 1; }
[ -x /tmp/ref/bin/cfn-init ] && [ -x "$PY/bin/python2.7" ] || { echo "reference not installed"; exit 1; }

# case name, then the script run inside the root (it may call `run <name>`).
record() {
  name=$1; script=$2
  out="$HERE/$name"; rm -rf "$out"; mkdir -p "$out"
  work=$(mktemp -d /tmp/cfn-record.XXXXXX); W=$work; export W
  mkdir -p "$work/upper/tmp/cases" "$work/work" "$work/merged" "$work/upper/tmp/ref" "$work/upper$PY"
  cp "$HERE/$name.in/"*.json "$work/upper/tmp/cases/"
  [ -d "$HERE/$name.in/files" ] && cp -a "$HERE/$name.in/files/." "$work/upper/"
  cat > "$work/upper/tmp/run.sh" <<'INNER'
run() {
  rc=0; /tmp/ref/bin/cfn-init -v "/tmp/cases/$1.json" > "/tmp/out/$1.stdout" 2> "/tmp/out/$1.stderr" || rc=$?
  echo "$rc" > "/tmp/out/$1.exit"
  mv /var/log/cfn-init.log "/tmp/out/$1.cfn-init.log" 2>/dev/null || true
  mv /var/log/cfn-init-cmd.log "/tmp/out/$1.cfn-init-cmd.log" 2>/dev/null || true
  rm -rf /var/lib/cfn-init
  echo "== after $1 (exit $rc)"
}
mkdir -p /tmp/out
INNER
  printf '%s\n' "$script" >> "$work/upper/tmp/run.sh"
  unshare --mount --propagation private --pid --fork --net sh -ec '
    mount -t overlay overlay -o "lowerdir=$ROOTFS,upperdir=$W/upper,workdir=$W/work" "$W/merged"
    mount -t proc proc "$W/merged/proc"; mount --bind /dev "$W/merged/dev"; mount -t tmpfs tmpfs "$W/merged/run"
    mount --bind /tmp/ref "$W/merged/tmp/ref"; mount --bind "$PY" "$W/merged$PY"
    exec chroot "$W/merged" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TZ=UTC /bin/sh -e /tmp/run.sh
  ' > "$out/checks.txt" 2>&1 || echo "case $name: script failed (see checks.txt)"
  cp "$work/upper/tmp/out/"* "$out/" 2>/dev/null || true
  rm -rf "$work"
  echo "recorded $name"
}
export ROOTFS PY
# CASES="yum" records only the cases named (all by default).
for case_dir in "$HERE"/*.in; do
  name=$(basename "$case_dir" .in)
  case " ${CASES:-$name} " in *" $name "*) ;; *) continue ;; esac
  record "$name" "$(cat "$case_dir/script.sh")"
done

# Tracebacks quote reference source lines; drop them as for the other golden data.
python3 "$HERE/../strip_traceback_source.py" "$HERE"
