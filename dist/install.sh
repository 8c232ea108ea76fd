#!/bin/sh
# Installs cfn-bootstrap on a host without a package manager: the static binary, the
# /opt/aws/bin/cfn-* links, manual pages, shell completions and the cfn-hup service for
# the init system found (systemd unit or SysV script). Idempotent; --uninstall removes
# exactly what it installed, as recorded in <root>/var/lib/cfn-bootstrap/install.manifest.
# POSIX sh.
set -eu

PROG=install.sh
HERE=$(cd "$(dirname "$0")" && pwd)
PREFIX=/opt/aws/bin
ROOT=
BINARY=
INIT=auto
ENABLE=no
UNINSTALL=no
FORCE=no
TOOLS="cfn-init cfn-signal cfn-hup cfn-get-metadata cfn-elect-cmd-leader cfn-send-cmd-result cfn-send-cmd-event"

usage() {
    cat <<EOF
Usage: $PROG [options]
       $PROG --uninstall [--root DIR]

Installs the cfn-bootstrap binary as PREFIX/cfn-bootstrap, the links PREFIX/cfn-init,
cfn-signal, cfn-hup, cfn-get-metadata, cfn-elect-cmd-leader, cfn-send-cmd-result and
cfn-send-cmd-event, their manual pages and shell completions under /usr/share, and the
cfn-hup service: a systemd unit in /etc/systemd/system when systemd runs or systemctl
exists, else the SysV script /etc/init.d/cfn-hup. Running it
again updates the installation; nothing is started unless --enable-cfn-hup is given.

Options:
  --binary FILE      the binary to install (default: bin/cfn-bootstrap beside this script)
  --prefix DIR       where the binary and links go (default: /opt/aws/bin)
  --root DIR         install into another root, like DESTDIR (default: /); with a root,
                     no service manager is called
  --init KIND        systemd, sysv or none (default: auto)
  --enable-cfn-hup   enable cfn-hup at boot and start it now (it needs /etc/cfn/cfn-hup.conf)
  --force            replace cfn-* files in PREFIX that this script did not install
                     (for example AWS's aws-cfn-bootstrap links)
  --uninstall        stop and remove everything a previous run installed
  -h, --help         this help
EOF
}

die() {
    echo "$PROG: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case "$1" in
    --binary) [ $# -ge 2 ] || die "--binary needs a file"; BINARY=$2; shift ;;
    --binary=*) BINARY=${1#*=} ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX=$2; shift ;;
    --prefix=*) PREFIX=${1#*=} ;;
    --root) [ $# -ge 2 ] || die "--root needs a directory"; ROOT=$2; shift ;;
    --root=*) ROOT=${1#*=} ;;
    --init) [ $# -ge 2 ] || die "--init needs systemd, sysv or none"; INIT=$2; shift ;;
    --init=*) INIT=${1#*=} ;;
    --enable-cfn-hup) ENABLE=yes ;;
    --force) FORCE=yes ;;
    --uninstall) UNINSTALL=yes ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
    esac
    shift
done

case "$PREFIX" in /*) ;; *) die "--prefix must be an absolute path" ;; esac
case "$INIT" in auto | systemd | sysv | none) ;; *) die "--init must be auto, systemd, sysv or none" ;; esac
if [ -n "$ROOT" ]; then
    [ -d "$ROOT" ] || die "--root $ROOT is not a directory"
    ROOT=$(cd "$ROOT" && pwd)
    [ "$ROOT" != / ] || ROOT=
fi
if [ -n "$ROOT" ] && [ "$ENABLE" = yes ]; then
    die "--enable-cfn-hup calls the service manager, which cannot work on another root; run the script inside it"
fi

STATE=$ROOT/var/lib/cfn-bootstrap
MANIFEST=$STATE/install.manifest
UNIT=/etc/systemd/system/cfn-hup.service
SYSV=/etc/init.d/cfn-hup

# The service manager runs only for the live system (no --root).
live() { [ -z "$ROOT" ]; }
have() { command -v "$1" >/dev/null 2>&1; }
systemd_running() { live && [ -d /run/systemd/system ]; }

# Manifest lines: "<kind> <path>" with kind f (file), l (link) or d (created directory);
# "s systemd" or "s sysv" names the service installed.
record() {
    grep -qxF "$1 $2" "$MANIFEST" 2>/dev/null || echo "$1 $2" >>"$MANIFEST"
}

# Creates a directory and its missing parents, recording those it created.
make_dir() {
    [ -d "$ROOT$1" ] && return 0
    parent=$(dirname "$1")
    [ "$parent" = "$1" ] || make_dir "$parent"
    mkdir "$ROOT$1"
    chmod 755 "$ROOT$1"
    record d "$1"
}

# True when a path is ours: listed in the manifest.
ours() { grep -qxF "f $1" "$MANIFEST" 2>/dev/null || grep -qxF "l $1" "$MANIFEST" 2>/dev/null; }

# Refuses to replace a file this script did not install, unless --force.
check_free() {
    if { [ -e "$ROOT$1" ] || [ -L "$ROOT$1" ]; } && ! ours "$1" && [ "$FORCE" != yes ]; then
        die "$ROOT$1 exists and was not installed by this script (use --force to replace it)"
    fi
}

# Installs a file atomically (temporary file beside it, then rename).
put_file() { # source destination mode
    check_free "$2"
    tmp="$ROOT$2.cfn-bootstrap-new"
    cp "$1" "$tmp"
    chmod "$3" "$tmp"
    mv -f "$tmp" "$ROOT$2"
    record f "$2"
}

# Writes a file from stdin atomically.
put_stdin() { # destination mode
    check_free "$1"
    tmp="$ROOT$1.cfn-bootstrap-new"
    cat >"$tmp"
    chmod "$2" "$tmp"
    mv -f "$tmp" "$ROOT$1"
    record f "$1"
}

put_link() { # target link
    check_free "$2"
    if [ "$(readlink "$ROOT$2" 2>/dev/null || true)" != "$1" ]; then
        rm -f "$ROOT$2"
        ln -s "$1" "$ROOT$2"
    fi
    record l "$2"
}

# The manual pages and shell completion scripts beside this script (share/ in the
# tarball) go under /usr/share; zsh's go to Debian's vendor-completions where it exists.
install_share() {
    for sub in man/man1 bash-completion/completions zsh/site-functions fish/vendor_completions.d; do
        [ -d "$HERE/share/$sub" ] || continue
        dest=/usr/share/$sub
        if [ "$sub" = zsh/site-functions ] && [ -d "$ROOT/usr/share/zsh/vendor-completions" ]; then
            dest=/usr/share/zsh/vendor-completions
        fi
        make_dir "$dest"
        for f in "$HERE/share/$sub"/*; do
            put_file "$f" "$dest/${f##*/}" 644
        done
    done
}

detect_init() {
    if [ "$INIT" != auto ]; then
        echo "$INIT"
    elif [ -d "$ROOT/run/systemd/system" ] || { live && have systemctl; } \
        || [ -x "$ROOT/bin/systemctl" ] || [ -x "$ROOT/usr/bin/systemctl" ]; then
        echo systemd
    elif [ -d "$ROOT/etc/init.d" ] || [ -d "$ROOT/etc/rc.d/init.d" ]; then
        echo sysv
    else
        echo none
    fi
}

# The service file shipped beside this script (the tarball, or the repository's dist/).
service_source() {
    for f in "$HERE/$1" "$HERE/../share/cfn-bootstrap/$1"; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    die "$1 is not beside $PROG (expected $HERE/$1)"
}

# Registers the SysV script: enabled ("enable"), or known but off ("disable"), so that
# `update-rc.d cfn-hup enable` (cfn-init's sysvinit services) has links to turn on later.
sysv_register() {
    if have update-rc.d; then
        if [ "$1" = enable ]; then
            update-rc.d cfn-hup defaults >/dev/null
        else
            update-rc.d cfn-hup defaults-disabled >/dev/null
        fi
    elif have chkconfig; then
        chkconfig --add cfn-hup
        [ "$1" = enable ] || chkconfig cfn-hup off
    else
        echo "$PROG: neither update-rc.d nor chkconfig found; link $SYSV into /etc/rc?.d yourself" >&2
    fi
}

sysv_unregister() {
    if have update-rc.d; then
        update-rc.d -f cfn-hup remove >/dev/null 2>&1 || true
    elif have chkconfig; then
        chkconfig --del cfn-hup >/dev/null 2>&1 || true
    fi
}

do_install() {
    if [ -z "$BINARY" ]; then
        BINARY=$HERE/bin/cfn-bootstrap
    fi
    [ -f "$BINARY" ] || die "no binary at $BINARY (use --binary FILE)"
    "$BINARY" --version >/dev/null 2>&1 || die "$BINARY does not run on this machine (wrong architecture?)"

    # The manifest's own directory: created first, recorded once the manifest exists.
    created=
    for dir in /var /var/lib /var/lib/cfn-bootstrap; do
        if [ ! -d "$ROOT$dir" ]; then
            mkdir "$ROOT$dir"
            chmod 755 "$ROOT$dir"
            created="$created $dir"
        fi
    done
    touch "$MANIFEST"
    for dir in $created; do record d "$dir"; done
    make_dir "$PREFIX"
    put_file "$BINARY" "$PREFIX/cfn-bootstrap" 755
    for tool in $TOOLS; do
        put_link cfn-bootstrap "$PREFIX/$tool"
    done
    install_share

    kind=$(detect_init)
    case "$kind" in
    systemd)
        make_dir /etc/systemd/system
        sed "s|/opt/aws/bin/cfn-hup|$PREFIX/cfn-hup|g" "$(service_source cfn-hup.service)" | put_stdin "$UNIT" 644
        record s systemd
        if systemd_running; then
            systemctl daemon-reload
        fi
        if [ "$ENABLE" = yes ]; then
            if systemd_running; then
                systemctl enable --now cfn-hup.service
            else
                systemctl enable cfn-hup.service
            fi
        fi
        ;;
    sysv)
        make_dir /etc/init.d
        sed "s|/opt/aws/bin/cfn-hup|$PREFIX/cfn-hup|g" "$(service_source init.d/cfn-hup)" | put_stdin "$SYSV" 755
        record s sysv
        if [ "$ENABLE" = no ]; then
            [ -n "$ROOT" ] || sysv_register disable
        else
            sysv_register enable
            if [ -f /etc/cfn/cfn-hup.conf ]; then
                "$SYSV" start
            else
                echo "cfn-hup is enabled; it starts at boot (or: $SYSV start) once /etc/cfn/cfn-hup.conf exists"
            fi
        fi
        ;;
    none)
        [ "$ENABLE" = no ] || die "no init system found to enable cfn-hup with (use --init)"
        ;;
    esac
    echo "cfn-bootstrap $("$BINARY" --version | sed 's/^cfn-bootstrap //') installed in $ROOT$PREFIX (cfn-hup service: $kind)"
}

do_uninstall() {
    [ -f "$MANIFEST" ] || { echo "cfn-bootstrap is not installed by $PROG here (no $MANIFEST)"; return 0; }
    # Stop and unregister the service first, while its files are still there.
    if grep -qx "s systemd" "$MANIFEST" && live && have systemctl && [ -f "$UNIT" ]; then
        if systemd_running; then
            systemctl disable --now cfn-hup.service >/dev/null 2>&1 || true
        else
            systemctl disable cfn-hup.service >/dev/null 2>&1 || true
        fi
    fi
    if grep -qx "s sysv" "$MANIFEST" && live && [ -x "$SYSV" ]; then
        "$SYSV" stop >/dev/null 2>&1 || true
        sysv_unregister
    fi
    # Files and links, the manifest, then the directories this script created (deepest
    # first, and only when empty).
    listed=$(cat "$MANIFEST")
    rm -f "$MANIFEST"
    echo "$listed" | while read -r kind path; do
        case "$kind" in f | l) rm -f "$ROOT$path" ;; esac
    done
    echo "$listed" | sed -n 's/^d //p' | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2- |
        while read -r dir; do
            rmdir "$ROOT$dir" 2>/dev/null || true
        done
    if echo "$listed" | grep -qx "s systemd" && systemd_running; then
        systemctl daemon-reload || true
    fi
    rmdir "$STATE" 2>/dev/null || true
    echo "cfn-bootstrap removed from ${ROOT:-/}"
}

if [ "$UNINSTALL" = yes ]; then
    do_uninstall
else
    do_install
fi
