#!/usr/bin/env python3
"""Record the reference cfn-init's observable behaviour for local-file configs.

See the "cfn-init local-file matrix" section of tests/golden/README.md.

    sudo python3 tests/golden/cfn-init/record.py [CASE ...]

Runs /tmp/ref/bin/cfn-init (aws-cfn-bootstrap 1.4-31 under CPython 2.7.18) as
root, each run inside a private mount namespace (`unshare -m`) where /var/log and
/var/lib are bind mounts of /tmp/cfninit-golden-sys/<case>/{log,lib} (the host's
/var/log and /var/lib are never touched).  Deletes and recreates
/tmp/cfninit-golden/<case> (the case's work directory) and its sys dir.
Only loopback traffic: the IMDS stand-in (imds_refuser.py, mode refuse) on
127.0.0.1:8119 is the HTTP(S) proxy; 127.0.0.1 itself bypasses the proxy.

Only observed outputs are written; no reference source code.
"""
import hashlib
import json
import os
import pwd
import grp
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.dirname(HERE)
REF = os.environ.get("REF", "/tmp/ref")
CFN_INIT = os.path.join(REF, "bin", "cfn-init")
ROOT = "/tmp/cfninit-golden"          # literal root; saved as {ROOT}
OUT = os.environ.get("OUT", HERE)
PROXY_PORT = 8119
UMASK = 0o022
CLOSED_PORT = 9                        # nothing listens on 127.0.0.1:9
LOGNAMES = ["cfn-init.log", "cfn-init-cmd.log", "cfn-wire.log"]
# Every cfn-init run gets a private mount namespace (unshare -m) in which /var/log and
# /var/lib are bind mounts of SYSROOT/<case>/{log,lib}: other processes on the machine
# that run the reference concurrently cannot mix their log lines or state into ours.
SYSROOT = "/tmp/cfninit-golden-sys"
INIT = "AWS::CloudFormation::Init"

# ----------------------------------------------------------------------------- cases
# name -> dict(meta=<obj> | raw=<str> | runs=[<obj>, ...], args=[...], setup=<sh>, umask=, desc=)
# "{W}" in metadata/args/setup = the case work dir ROOT/<case>; "{META}" in args = metadata file.
CASES = []


def case(name, meta=None, args=("-v", "{META}"), setup=None, runs=None, raw=None, umask=UMASK, desc=""):
    CASES.append(dict(name=name, meta=meta, args=list(args), setup=setup, runs=runs, raw=raw,
                      umask=umask, desc=desc))


def cmd(c, **kw):
    d = {"command": c}
    d.update(kw)
    return d


def app(tag):
    """a command appending <tag> to {W}/trace"""
    return {"command": "echo %s >> {W}/trace" % tag}


def cfg(tag):
    return {"commands": {"t": app(tag)}}


def init(d, **extra):
    m = {INIT: d}
    m.update(extra)
    return m


# ---- configSets ---------------------------------------------------------------
case("cs-no-configsets", init({"config": cfg("config"), "other": cfg("other")}),
     desc="no configSets: only `config` runs; other top-level configs ignored")
case("cs-no-configsets-c-default", init({"config": cfg("config")}), args=["-v", "-c", "default", "{META}"],
     desc="no configSets, -c default")
case("cs-no-configsets-c-other", init({"config": cfg("config"), "other": cfg("other")}),
     args=["-v", "-c", "other", "{META}"], desc="no configSets, -c other -> error")
case("cs-missing-config-key", init({"other": cfg("other")}),
     desc="no configSets and no `config` key -> empty config")
case("cs-c-empty-string", init({"config": cfg("config")}), args=["-v", "-c", "", "{META}"],
     desc="-c '' -> default")
case("cs-not-object", init({"configSets": ["c1"], "c1": cfg("c1")}), desc="configSets is a list -> error")
case("cs-not-object-string", init({"configSets": "c1", "c1": cfg("c1")}), desc="configSets is a string -> error")
case("cs-empty-object", init({"configSets": {}, "config": cfg("config")}), desc="configSets {} without -c")
case("cs-string-entry", init({"configSets": {"default": "c1"}, "c1": cfg("c1"), "config": cfg("config")}),
     desc='configSet value is a bare string; `config` not run')
case("cs-list", init({"configSets": {"default": ["c2", "c1"]}, "c1": cfg("c1"), "c2": cfg("c2")}),
     desc="list order kept")
case("cs-empty-list", init({"configSets": {"default": []}, "c1": cfg("c1")}), desc="default: [] runs nothing")
case("cs-nested-lists", init({"configSets": {"default": [["c1", ["c2", [[]]]], "c3"]},
                              "c1": cfg("c1"), "c2": cfg("c2"), "c3": cfg("c3")}),
     desc="nested lists are flattened")
case("cs-reference", init({"configSets": {"default": [{"ConfigSet": "s2"}, "c3", {"ConfigSet": "s2", "x": 1}],
                                          "s2": ["c1", "c2"]},
                           "c1": cfg("c1"), "c2": cfg("c2"), "c3": cfg("c3")}),
     desc='{"ConfigSet": ...} reference inlined (twice, second with an extra key)')
case("cs-reference-string-value", init({"configSets": {"default": {"ConfigSet": "s2"}, "s2": "c1"},
                                        "c1": cfg("c1")}),
     desc="configSet value is a bare reference object")
case("cs-reference-chain", init({"configSets": {"default": [{"ConfigSet": "s2"}, "c1"],
                                                "s2": [{"ConfigSet": "s3"}, "c2"], "s3": "c3"},
                                 "c1": cfg("c1"), "c2": cfg("c2"), "c3": cfg("c3")}),
     desc="references two levels deep")
case("cs-reference-undefined", init({"configSets": {"default": [{"ConfigSet": "zz"}]}, "c1": cfg("c1")}),
     desc="reference to undefined configset")
case("cs-object-without-configset", init({"configSets": {"default": [{"Foo": "c1"}]}, "c1": cfg("c1")}),
     desc="object entry without ConfigSet key")
case("cs-number-entry", init({"configSets": {"default": ["c1", 5]}, "c1": cfg("c1")}),
     desc="number entry in a configset")
case("cs-config-undefined", init({"configSets": {"default": ["c1", "nope"]}, "c1": cfg("c1")}),
     desc="config name not defined")
case("cs-cycle", init({"configSets": {"default": ["c1"], "a": [{"ConfigSet": "b"}], "b": [{"ConfigSet": "a"}]},
                       "c1": cfg("c1")}), desc="cycle a->b->a (default itself fine)")
case("cs-self-reference", init({"configSets": {"default": ["c1"], "a": ["c1", {"ConfigSet": "a"}]},
                                "c1": cfg("c1")}), desc="self-reference")
case("cs-no-roots", init({"configSets": {"a": [{"ConfigSet": "b"}], "b": [{"ConfigSet": "a"}]}, "c1": cfg("c1")}),
     args=["-v", "-c", "a", "{META}"], desc="no configset without references")
case("cs-unrequested-invalid", init({"configSets": {"default": ["c1"], "other": ["nope"]}, "c1": cfg("c1")}),
     desc="an unrequested configset referencing an undefined config")
case("cs-duplicates", init({"configSets": {"default": ["c1", "c1", {"ConfigSet": "s2"}], "s2": ["c1"]},
                            "c1": cfg("c1")}), desc="same config 3 times -> runs 3 times")
case("cs-no-default", init({"configSets": {"a": ["c1"]}, "c1": cfg("c1"), "config": cfg("config")}),
     desc="configSets without `default`, no -c")
case("cs-c-untrimmed", init({"configSets": {"a": ["c1"], "b": ["c2"]}, "c1": cfg("c1"), "c2": cfg("c2")}),
     args=["-v", "-c", "a, b", "{META}"], desc="-c 'a, b' (not trimmed)")
case("cs-c-empty-entry", init({"configSets": {"a": ["c1"], "b": ["c2"]}, "c1": cfg("c1"), "c2": cfg("c2")}),
     args=["-v", "-c", "a,,b", "{META}"], desc="-c 'a,,b'")
case("cs-c-trailing-comma", init({"configSets": {"a": ["c1"]}, "c1": cfg("c1")}),
     args=["-v", "-c", "a,", "{META}"], desc="-c 'a,'")
case("cs-c-multiple-order", init({"configSets": {"a": ["c1"], "b": ["c2"], "default": ["c3"]},
                                  "c1": cfg("c1"), "c2": cfg("c2"), "c3": cfg("c3")}),
     args=["-v", "-c", "b,a,b", "{META}"], desc="-c b,a,b: in order, repeated")
case("cs-c-repeated-option", init({"configSets": {"a": ["c1"], "b": ["c2"]}, "c1": cfg("c1"), "c2": cfg("c2")}),
     args=["-v", "-c", "a", "-c", "b", "{META}"], desc="-c a -c b (last wins?)")
case("cs-first-failure-stops", init({"configSets": {"a": ["c1", "c2", "c3"], "b": ["c4"]},
                                     "c1": cfg("c1"), "c2": {"commands": {"f": cmd("echo c2 >> {W}/trace; exit 7")}},
                                     "c3": cfg("c3"), "c4": cfg("c4")}),
     args=["-v", "-c", "a,b", "{META}"], desc="failure in c2 stops c3 and configset b")
case("cs-config-is-list", init({"config": [1]}), desc="config value is a list")
case("cs-config-is-string", init({"config": "x"}), desc="config value is a string")
case("cs-config-is-null", init({"config": None, "other": 1}), desc="config value is null")
case("cs-unknown-keys", init({"config": {"Files": {"{W}/nope": {"content": "x"}}, "foo": 1,
                                         "commands": {"a": app("config")}}, "bar": 2}),
     desc="unknown keys (incl. case-different `Files`) ignored")
case("cs-empty-init", init({}), desc="AWS::CloudFormation::Init is {} -> exit 0 message")
case("cs-missing-init", {"Other": {"x": 1}}, desc="no Init key -> exit 0 message")
case("cs-missing-init-c-other", {"Other": {"x": 1}}, args=["-v", "-c", "other", "{META}"],
     desc="no Init key with -c other")
case("cs-no-verbose", init({"config": {"files": {"{W}/f": {"content": "x\n"}}, "commands": {"a": app("a")}}}),
     args=["{META}"], desc="same kind of run without -v (INFO log only)")
case("cs-auth-present", init({"config": cfg("config")},
                             **{"AWS::CloudFormation::Authentication": {"a": {"type": "basic", "username": "u",
                                                                             "password": "secret"}}}),
     desc="Authentication block present but unused (state copies)")

# ---- files --------------------------------------------------------------------
case("f-string-content", init({"config": {"files": {"{W}/out/plain.txt": {"content": "line1\nline2\n",
                                                                         "mode": "000644"},
                                                    "{W}/nomode.txt": {"content": "no newline"}}}}),
     desc="string content, new parent dir, mode 000644, and a file without mode")
case("f-non-ascii", init({"config": {"files": {"{W}/u.txt": {"content": "caf\u00e9 \u20ac \U0001F600 \u00fc\n"}}}}),
     desc="non-ASCII content written as UTF-8")
case("f-json-object", init({"config": {"files": {"{W}/o.json": {"content": {
    "zeta": 1, "alpha": {"nested": [1, 2.5, "x\u00e9", None, True], "b": {}}, "mid": "\u20ac\n\"q\"",
    "a": [], "Z": False}}}}}),
     desc="object content serialised as compact JSON (key order = Py2 dict order)")
case("f-json-scalars", init({"config": {"files": {"{W}/list": {"content": [1, "two", {"k": "v"}]},
                                                  "{W}/int": {"content": 42},
                                                  "{W}/float": {"content": 3.25},
                                                  "{W}/true": {"content": True},
                                                  "{W}/bigint": {"content": 12345678901234567890}}}}),
     desc="list/number/bool content")
case("f-json-false", init({"config": {"files": {"{W}/false": {"content": False}}}}),
     desc="content false (falsy) -> no content")
case("f-json-empty-object", init({"config": {"files": {"{W}/e": {"content": {}}}}}),
     desc="content {} (falsy) -> no content")
case("f-empty-content", init({"config": {"files": {"{W}/empty": {"content": ""}}}}),
     desc='content "" -> error, partial file?')
case("f-base64", init({"config": {"files": {"{W}/b.bin": {"content": "AAEC/4CBaGVsbG8K", "encoding": "base64"}}}}),
     desc="valid base64 (binary)")
case("f-base64-whitespace", init({"config": {"files": {"{W}/b.txt": {"content": "  aGVs\nbG8g\r\n d29y bGQK \n",
                                                                     "encoding": "base64"}}}}),
     desc="base64 with surrounding/embedded whitespace and newlines")
case("f-base64-invalid", init({"config": {"files": {"{W}/bad.bin": {"content": "abc", "encoding": "base64"}}}}),
     desc="invalid base64 (bad padding) on a new file")
case("f-base64-invalid-chars", init({"config": {"files": {"{W}/bad2.bin": {"content": "!!!!aGVsbG8=",
                                                                           "encoding": "base64"}}}}),
     desc="base64 with non-alphabet characters")
case("f-encoding-other", init({"config": {"files": {"{W}/o.txt": {"content": "aGVsbG8=", "encoding": "hex"}}}}),
     desc="unknown encoding -> plain")
case("f-modes", init({"config": {"files": {"{W}/m644": {"content": "a", "mode": "000644"},
                                           "{W}/m755": {"content": "b", "mode": "000755"},
                                           "{W}/m100600": {"content": "c", "mode": "100600"},
                                           "{W}/m4755": {"content": "d", "mode": "4755"},
                                           "{W}/m0": {"content": "e", "mode": "0"},
                                           "{W}/m777": {"content": "f", "mode": "777"},
                                           "{W}/m2775": {"content": "g", "mode": "002775"},
                                           "{W}/m1777": {"content": "h", "mode": "041777"}}}}),
     desc="mode strings incl. setuid/setgid/sticky, file-type bits")
case("f-mode-numeric", init({"config": {"files": {"{W}/n": {"content": "a", "mode": 644}}}}),
     desc="numeric mode -> error")
case("f-mode-abc", init({"config": {"files": {"{W}/n": {"content": "a", "mode": "abc"}}}}),
     desc='mode "abc" -> error')
case("f-mode-8", init({"config": {"files": {"{W}/n": {"content": "a", "mode": "000648"}}}}),
     desc='mode "000648" (non-octal digit) -> error')
case("f-no-mode-umask000", init({"config": {"files": {"{W}/n": {"content": "a"}, "{W}/d/n2": {"content": "b"}}}}),
     umask=0, desc="no mode, process umask 000 (world-write removed?)")
case("f-no-mode-umask077", init({"config": {"files": {"{W}/n": {"content": "a"}}}}),
     umask=0o077, desc="no mode, process umask 077")
case("f-existing-no-mode", init({"config": {"files": {"{W}/keep": {"content": "new\n"},
                                                      "{W}/keepx": {"content": "new\n"}}}}),
     setup="printf 'old\\n' > {W}/keep; chmod 0600 {W}/keep; printf 'old\\n' > {W}/keepx; chmod 4750 {W}/keepx;"
           " chown nobody:nogroup {W}/keep",
     desc="existing 0600 (owned nobody) / 4750 files rewritten without mode/owner")
case("f-existing-with-mode", init({"config": {"files": {"{W}/x": {"content": "new\n", "mode": "000640"}}}}),
     setup="printf 'old\\n' > {W}/x; chmod 0755 {W}/x", desc="existing 0755 file rewritten with mode 000640")
case("f-owner-group", init({"config": {"files": {"{W}/o1": {"content": "a", "owner": "nobody", "group": "nogroup"},
                                                 "{W}/o2": {"content": "b", "owner": "root", "group": "root"},
                                                 "{W}/o3": {"content": "c", "owner": "nobody"},
                                                 "{W}/o4": {"content": "d", "group": "nogroup"}}}}),
     desc="owner/group names")
case("f-owner-unknown", init({"config": {"files": {"{W}/o": {"content": "a", "owner": "no-such-user"}}}}),
     desc="unknown owner -> error")
case("f-group-unknown", init({"config": {"files": {"{W}/o": {"content": "a", "group": "no-such-group"}}}}),
     desc="unknown group -> error")
case("f-owner-numeric", init({"config": {"files": {"{W}/o": {"content": "a", "owner": "65534"}}}}),
     desc="numeric owner -> error")
case("f-owner-unknown-existing", init({"config": {"files": {"{W}/o": {"content": "new\n", "owner": "no-such-user"}}}}),
     setup="printf 'old\\n' > {W}/o", desc="unknown owner on an existing file -> backup restored?")
case("f-relative-path", init({"config": {"files": {"rel/path": {"content": "a"}}}}),
     desc="relative path -> error")
case("f-parent-created", init({"config": {"files": {"{W}/a/b/c/f": {"content": "a", "mode": "000600"}}}}),
     desc="missing parent dirs created")
case("f-parent-is-file", init({"config": {"files": {"{W}/afile/x": {"content": "a"}}}}),
     setup="printf 'i am a file' > {W}/afile", desc="parent is a regular file -> error")
case("f-path-is-directory", init({"config": {"files": {"{W}/dir": {"content": "a\n"}}}}),
     setup="mkdir {W}/dir; echo inner > {W}/dir/inner", desc="path is an existing directory")
case("f-symlink-new", init({"config": {"files": {"{W}/link": {"content": "{W}/target", "mode": "120777"},
                                                 "{W}/rel": {"content": "target2", "mode": "120640"}}}}),
     setup="printf 't\\n' > {W}/target; chmod 0600 {W}/target; printf 't2\\n' > {W}/target2",
     desc="new symlinks (absolute, relative); mode chmods the target")
case("f-symlink-dangling", init({"config": {"files": {"{W}/dangling": {"content": "{W}/nowhere", "mode": "120644"}}}}),
     desc="new dangling symlink: chmod follows the link -> error; link left behind?")
case("f-symlink-existing-same", init({"config": {"files": {"{W}/link": {"content": "{W}/target", "mode": "120777"}}}}),
     setup="printf 't\\n' > {W}/target; ln -s {W}/target {W}/link", desc="existing correct link -> already exists")
case("f-symlink-existing-other", init({"config": {"files": {"{W}/link": {"content": "{W}/target", "mode": "120777"}}}}),
     setup="printf 't\\n' > {W}/target; printf 'o\\n' > {W}/other; ln -s {W}/other {W}/link",
     desc="existing link to another file -> replaced (.bak is a link)")
case("f-symlink-replaces-file", init({"config": {"files": {"{W}/link": {"content": "{W}/target", "mode": "120777"}}}}),
     setup="printf 't\\n' > {W}/target; printf 'regular\\n' > {W}/link; chmod 0640 {W}/link",
     desc="existing regular file replaced by a symlink")
case("f-symlink-same-file-hardlink", init({"config": {"files": {"{W}/link": {"content": "{W}/target", "mode": "120777"}}}}),
     setup="printf 't\\n' > {W}/target; ln {W}/target {W}/link",
     desc="existing hard link to the target counts as 'already exists'")
case("f-symlink-no-content", init({"config": {"files": {"{W}/link": {"mode": "120777"}}}}),
     desc="symlink without content -> error")
case("f-symlink-dangling-existing", init({"config": {"files": {"{W}/link": {"content": "{W}/nowhere", "mode": "120777"}}}}),
     setup="printf 'x\\n' > {W}/link", desc="path exists, link target does not -> samefile raises")
case("f-symlink-owner", init({"config": {"files": {"{W}/link": {"content": "{W}/target", "mode": "120777",
                                                                "owner": "nobody", "group": "nogroup"}}}}),
     setup="printf 't\\n' > {W}/target", desc="symlink with owner (lchown on the link)")
case("f-rewrite-identical", runs=[init({"config": {"files": {"{W}/same": {"content": "same\n"}}}})] * 3,
     desc="same content written 3 times (.bak/.bak2 behaviour when unchanged)")
case("f-rewrite-rotation", runs=[init({"config": {"files": {"{W}/rot": {"content": "v%d\n" % i}}}})
                                 for i in (1, 2, 3, 4)],
     desc="content v1..v4 in 4 runs (.bak/.bak2 rotation)")
case("f-rewrite-mixed", runs=[init({"config": {"files": {"{W}/mix": {"content": c}}}})
                              for c in ("A\n", "B\n", "B\n", "C\n")],
     desc="A, B, B, C: unchanged run between changes")
case("f-mustache", init({"config": {"files": {"{W}/t.txt": {
    "content": "a={{a}}\nb={{{b}}}\namp={{& b}}\nmissing=[{{nope}}]\nnum={{n}} bool={{t}}\n"
               "list={{#items}}<{{name}}>{{/items}}\ninv={{^none}}empty{{/none}}\nnested={{o.k}}\n"
               "comment=[{{! ignored }}]\n",
    "context": {"a": "& < > \" ' x", "b": "& < > \" '", "n": 5, "t": True,
                "items": [{"name": "i1"}, {"name": "i2"}], "none": [], "o": {"k": "dotted"}}}}}}),
     desc="Mustache template escaping and features")
case("f-mustache-empty-context", init({"config": {"files": {"{W}/t.txt": {"content": "x={{x}}{{{y}}}\n",
                                                                          "context": {}}}}}),
     desc="context {} still renders")
case("f-mustache-no-context", init({"config": {"files": {"{W}/t.txt": {"content": "x={{x}}\n"}}}}),
     desc="no context -> literal braces")
case("f-mustache-bad-template", init({"config": {"files": {"{W}/t.txt": {"content": "{{#a}}unclosed\n",
                                                                         "context": {"a": 1}}}}}),
     desc="unclosed section -> render error")
case("f-mustache-mismatched", init({"config": {"files": {"{W}/t.txt": {"content": "{{#a}}x{{/b}}\n",
                                                                      "context": {"a": 1}}}}}),
     desc="mismatched section tags -> render error")
case("f-mustache-json-content", init({"config": {"files": {"{W}/t.json": {"content": {"k": "{{v}}"},
                                                                          "context": {"v": "<&>"}}}}}),
     desc="object content with context")
case("f-no-content-no-source", init({"config": {"files": {"{W}/x": {"mode": "000644"}}}}),
     desc="neither content nor source -> error")
case("f-source-closed-port", init({"config": {"files": {"{W}/dl": {"source": "http://127.0.0.1:%d/x" % CLOSED_PORT}}}}),
     desc="source URL on a closed loopback port (retries)")
case("f-content-and-source", init({"config": {"files": {"{W}/cs": {"content": "inline\n",
                                                                   "source": "http://127.0.0.1:%d/x" % CLOSED_PORT}}}}),
     desc="content wins over source")
case("f-sorted-order", init({"config": {"files": {"{W}/z": {"content": "z"}, "{W}/B": {"content": "B"},
                                                  "{W}/a": {"content": "a"}, "{W}/10": {"content": "10"},
                                                  "{W}/9": {"content": "9"}}}}),
     desc="files processed in sorted path order")
case("f-second-file-fails", init({"config": {"files": {"{W}/1-ok": {"content": "ok\n"},
                                                       "{W}/2-bad": {"content": "x", "mode": 644},
                                                       "{W}/3-never": {"content": "never\n"}},
                                             "commands": {"a": app("cmd")}}}),
     desc="files: 2nd file fails (numeric mode) after write -> 1st kept, 2nd partial?, 3rd/commands not run")
case("f-fail-existing-restored", init({"config": {"files": {"{W}/e": {"content": "abc", "encoding": "base64"}}}}),
     setup="printf 'old\\n' > {W}/e; chmod 0640 {W}/e; printf 'older\\n' > {W}/e.bak",
     desc="failing write (bad base64) on an existing file with existing .bak -> restore")
case("f-base64-decodes-empty", init({"config": {"files": {"{W}/e": {"content": "!!", "encoding": "base64"}}}}),
     setup="printf 'old\\n' > {W}/e; chmod 0640 {W}/e; printf 'older\\n' > {W}/e.bak",
     desc="base64 content that decodes to nothing -> empty file (existing file + .bak)")
case("f-fail-mode-existing", init({"config": {"files": {"{W}/e": {"content": "new\n", "mode": 644}}}}),
     setup="printf 'old\\n' > {W}/e",
     desc="numeric mode on an existing file -> restored from .bak")

# ---- commands -----------------------------------------------------------------
case("c-string", init({"config": {"commands": {"a": cmd("echo hello; echo world")}}}), desc="shell string")
case("c-list", init({"config": {"commands": {"a": cmd(["printf", "%s\\n", "a b", "$HOME", "*"])}}}),
     desc="argv list, no shell")
case("c-list-fails", init({"config": {"commands": {"a": cmd(["sh", "-c", "echo \u00e9-free; exit 4", "x"])}}}),
     desc="failing list command: repr of the list in the ERROR line")
case("c-sorted-order", init({"config": {"commands": {"a": app("a"), "2_y": app("2_y"), "10_x": app("10_x"),
                                                     "B": app("B"), "_u": app("_u")}}}),
     desc="commands sorted by name (string order)")
case("c-env", init({"config": {"commands": {"a": cmd("env | sort", env={"FOO": "bar", "PATH": "/usr/bin:/bin"}),
                                            "b": cmd("echo PATH=$PATH; /usr/bin/env", env={"FOO": "bar"})}}}),
     desc="env replaces environment")
case("c-env-list", init({"config": {"commands": {"a": cmd(["env"], env={"FOO": "bar"})}}}),
     desc="list command with env lacking PATH")
case("c-env-notpath", init({"config": {"commands": {"a": cmd("printenv", env={})}}}),
     desc="env {} (empty) -> inherited?")
case("c-no-env", init({"config": {"commands": {"a": cmd("env | sort")}}}),
     desc="no env -> inherited environment of cfn-init")
case("c-cwd", init({"config": {"commands": {"a": cmd("pwd", cwd="~"), "b": cmd("pwd", cwd="{W}/sub"),
                                            "c": cmd("pwd"), "d": cmd(["pwd"], cwd="~/")}}}),
     setup="mkdir {W}/sub", desc="cwd ~, plain cwd, default cwd")
case("c-cwd-missing", init({"config": {"commands": {"a": cmd("pwd", cwd="{W}/nope")}}}),
     desc="cwd does not exist")
case("c-test", init({"config": {"commands": {"a": cmd("echo ran-a", test="echo testing-a; true"),
                                             "b": cmd("echo ran-b", test="echo testing-b; exit 3"),
                                             "c": cmd("echo ran-c", test=["test", "-d", "/"])}}}),
     desc="test passing (string/list) and failing")
case("c-ignore-truthy", init({"config": {"commands": {
    "1": cmd("exit 2", ignoreErrors=True), "2": cmd("exit 2", ignoreErrors="true"),
    "3": cmd("exit 2", ignoreErrors="yes"), "4": cmd("exit 2", ignoreErrors="1"),
    "5": cmd("exit 2", ignoreErrors=1), "6": cmd("exit 2", ignoreErrors=" TRUE "),
    "7": cmd("exit 2", ignoreErrors="y"), "8": cmd("echo done")}}}),
     desc="truthy ignoreErrors values")
for n, v in [("false", False), ("false-string", "false"), ("on", "on"), ("2", "2"), ("zero", 0), ("null", None)]:
    case("c-ignore-%s" % n, init({"config": {"commands": {"1": cmd("echo failing; exit 2", ignoreErrors=v),
                                                          "2": cmd("echo after")}}}),
         desc="ignoreErrors %s -> build fails" % json.dumps(v))
case("c-fail-no-ignore", init({"config": {"commands": {"1": cmd("echo one; exit 5"), "2": app("two")}},
                               "other": {}}),
     desc="failing command without ignoreErrors")
case("c-fail-signal", init({"config": {"commands": {"1": cmd("kill -TERM $$")}}}),
     desc="command killed by a signal")
case("c-stderr-merged", init({"config": {"commands": {"a": cmd("echo out1; echo err1 >&2; echo out2; echo err2 >&2")}}}),
     desc="stderr merged into stdout")
case("c-non-utf8", init({"config": {"commands": {"a": cmd("printf 'ok\\n\\377\\376\\n'"), "b": app("b")}}}),
     desc="non-UTF-8 output of a successful command")
case("c-non-utf8-test", init({"config": {"commands": {"a": cmd("echo a", test="printf '\\377'")}}}),
     desc="non-UTF-8 output of a test")
case("c-utf8-output", init({"config": {"commands": {"a": cmd("printf 'caf\\303\\251 \\342\\202\\254\\n'")}}}),
     desc="UTF-8 output")
case("c-multiline-no-newline", init({"config": {"commands": {"a": cmd("printf 'l1\\n\\nl3\\n  indented\\ttab\\nlast'")}}}),
     desc="multi-line output, blank line, no trailing newline")
case("c-no-output", init({"config": {"commands": {"a": cmd("true"), "b": cmd("exit 1", ignoreErrors=True)}}}),
     desc="empty output (success and failure)")
case("c-missing-command", init({"config": {"commands": {"a": app("a"), "b": {"cwd": "/"}}}}),
     desc="missing command attribute")
case("c-empty-command", init({"config": {"commands": {"a": cmd("")}}}), desc='command ""')
case("c-empty-list-command", init({"config": {"commands": {"a": cmd([])}}}), desc="command []")
case("c-nonexistent-program", init({"config": {"commands": {"a": cmd(["/nonexistent/prog"])}}}),
     desc="list command whose program does not exist")
case("c-wait", init({"config": {"commands": {"a": cmd("echo a", waitAfterCompletion="forever"),
                                             "b": cmd("echo b", waitAfterCompletion=5),
                                             "c": cmd("echo c", waitAfterCompletion="abc")}}}),
     desc="waitAfterCompletion ignored on Linux (even invalid values)")
case("c-runas-nobody", init({"config": {"commands": {"a": cmd("id -u", runas="nobody", ignoreErrors=True),
                                                     "b": cmd("echo hello world", runas="nobody")}}}),
     desc="runas nobody (shell /usr/sbin/nologin)")
case("c-runas-root-string", init({"config": {"commands": {"a": cmd("echo hello world", runas="root"),
                                                          "b": cmd("id -u", runas="root")}}}),
     desc="runas root, multi-word string (BUG-RUNAS)")
case("c-runas-root-list", init({"config": {"commands": {"a": cmd(["echo hello; echo world", "x"], runas="root")}}}),
     desc="runas root, list command")
case("c-runas-unknown", init({"config": {"commands": {"a": cmd("true", runas="no-such-user")}}}),
     desc="runas unknown user")
case("c-defaults", init({"config": {"commands": {"a": {"defaults": "echo '{\"command\": \"echo from-defaults; echo $X $Y\", \"env\": {\"X\": \"dx\", \"Y\": \"dy\"}}'",
                                                       "env": {"Y": "explicit"}}}}}),
     desc="undocumented `defaults` script")
case("c-defaults-fails", init({"config": {"commands": {"a": {"defaults": "echo nope >&2; exit 4", "command": "true"}}}}),
     desc="failing defaults script")
case("c-env-non-string", init({"config": {"commands": {"a": cmd("echo $N", env={"N": 5, "PATH": "/bin"})}}}),
     desc="env with a non-string value")

# ---- interplay ----------------------------------------------------------------
case("i-files-then-failing-command", init({"config": {"files": {"{W}/f1": {"content": "one\n"},
                                                                "{W}/f2": {"content": "two\n", "mode": "000600"}},
                                                      "commands": {"1": cmd("exit 1"), "2": app("two")}}}),
     desc="files written, then command fails: files stay")
case("i-two-configs-second-fails", init({"configSets": {"default": ["c1", "c2"]},
                                         "c1": {"files": {"{W}/c1": {"content": "c1\n"}}},
                                         "c2": {"files": {"{W}/c2-a": {"content": "a\n"},
                                                          "{W}/c2-b": {"content": "b\n", "owner": "no-such-user"}}}}),
     desc="second config fails in its 2nd file")
case("i-existing-rewritten-then-fail", init({"config": {"files": {"{W}/f": {"content": "new\n"}},
                                                        "commands": {"1": cmd("cat {W}/f; exit 1")}}}),
     setup="printf 'old\\n' > {W}/f", desc="rewritten file stays rewritten when a later command fails")
case("i-all-sections", init({"config": {"packages": {}, "groups": {}, "users": {}, "sources": {},
                                        "files": {"{W}/f": {"content": "x"}}, "commands": {"a": app("a")},
                                        "services": {}}}),
     desc="empty sections log `No <x> specified`")


# ----------------------------------------------------------------------------- harness
def sub(s, w, meta=None):
    s = s.replace("{W}", w)
    if meta:
        s = s.replace("{META}", meta)
    return s


def subobj(o, w):
    return json.loads(sub(json.dumps(o, ensure_ascii=False), w))


def rootify(b):
    return b.replace(ROOT.encode(), b"{ROOT}")


TIME_RE = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}")
PID_RE = re.compile(rb"^(\{TIME\} )P\d+ ", re.M)
SLEEP_RE = re.compile(rb"Sleeping for \d+(\.\d+)? seconds")
FRAME = re.compile(rb'^  File ".*", line \d+, in .*$')


def strip_tb(data):
    if b"Traceback (most recent call last):" not in data:
        return data
    out, skip = [], False
    for line in data.split(b"\n"):
        if skip and line.startswith(b"    "):
            skip = False
            continue
        skip = bool(FRAME.match(line))
        out.append(line)
    return b"\n".join(out)


def norm(data):
    data = TIME_RE.sub(b"{TIME}", data)
    data = PID_RE.sub(rb"\1P{PID} ", data)
    data = SLEEP_RE.sub(b"Sleeping for {SECS} seconds", data)
    return rootify(strip_tb(data))


def owner(st):
    try:
        u = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        u = str(st.st_uid)
    try:
        g = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        g = str(st.st_gid)
    return u, g


def describe(path):
    st = os.lstat(path)
    m = st.st_mode
    u, g = owner(st)
    mode = "%04o" % stat.S_IMODE(m)
    if stat.S_ISLNK(m):
        return "link", mode, u, g, st.st_size, "-> " + rootify(os.readlink(path).encode()).decode("utf-8", "replace")
    if stat.S_ISDIR(m):
        return "dir", mode, u, g, "-", ""
    if stat.S_ISREG(m):
        data = open(path, "rb").read()
        try:
            txt = data.decode("utf-8")
            if len(data) <= 4096:
                return "file", mode, u, g, st.st_size, json.dumps(rootify(data).decode("utf-8"), ensure_ascii=False)
        except UnicodeDecodeError:
            pass
        return "file", mode, u, g, st.st_size, "sha256:" + hashlib.sha256(data).hexdigest() + " hex:" + data[:64].hex()
    return "other", mode, u, g, st.st_size, ""


def fs_listing(top):
    lines = ["# path\ttype\tmode\towner\tgroup\tsize\tcontent (JSON string) | -> link target | sha256+hex"]
    if not os.path.lexists(top):
        lines.append("# (work dir absent)")
        return "\n".join(lines) + "\n"
    entries = []
    for dp, dns, fns in os.walk(top):
        for n in dns + fns:
            entries.append(os.path.join(dp, n))
    entries.append(top)
    for p in sorted(entries):
        rel = os.path.relpath(p, top)
        lines.append("\t".join(str(x) for x in (rel,) + describe(p)))
    return "\n".join(lines) + "\n"


def state_listing(sysdir):
    state = os.path.join(sysdir, "lib", "cfn-init")
    out = [b"## files under /var/lib/cfn-init (path\ttype\tmode\tsize)\n"]
    if not os.path.lexists(state):
        out.append(b"# (absent)\n")
        return b"".join(out)
    ents = [state]
    for dp, dns, fns in os.walk(state):
        ents += [os.path.join(dp, n) for n in dns + fns]
    for p in sorted(ents):
        t, mode, _, _, size, _ = describe(p)
        shown = "/var/lib/cfn-init" + p[len(state):]
        out.append(("%s\t%s\t%s\t%s\n" % (shown, t, mode, size)).encode())
    for rel in ("resume_db.json", "data/metadata.json"):
        p = os.path.join(state, rel)
        out.append(("## %s\n" % rel).encode())
        if os.path.exists(p):
            out.append(open(p, "rb").read())
            out.append(b"\n## end of %s (a newline was added after the content)\n" % rel.encode())
        else:
            out.append(b"# (absent)\n")
    return rootify(b"".join(out))


def ensure_proxy():
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", PROXY_PORT))
        s.close()
        return None
    except OSError:
        pass
    p = subprocess.Popen([sys.executable, os.path.join(GOLDEN, "imds_refuser.py"), str(PROXY_PORT),
                          "/tmp/cfninit-golden-imds.log", "refuse"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    return p


def wipe(sysdir):
    shutil.rmtree(sysdir, ignore_errors=True)
    for d in ("log", "lib"):
        os.makedirs(os.path.join(sysdir, d))
        os.chmod(os.path.join(sysdir, d), 0o755)


def run_once(c, w, meta_obj, meta_path, outdir, sysdir):
    os.makedirs(outdir, exist_ok=True)
    if c["raw"] is not None:
        data = sub(c["raw"], w).encode()
    else:
        data = json.dumps(subobj(meta_obj, w), indent=2, ensure_ascii=False).encode() + b"\n"
    open(meta_path, "wb").write(data)
    open(os.path.join(outdir, "metadata.json"), "wb").write(rootify(data))
    logdir = os.path.join(sysdir, "log")
    for n in os.listdir(logdir):
        os.remove(os.path.join(logdir, n))
    argv = [CFN_INIT] + [sub(a, w, meta_path) for a in c["args"]]
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "LANG": "C.UTF-8", "TZ": "UTC",
           "HTTP_PROXY": "http://127.0.0.1:%d" % PROXY_PORT, "HTTPS_PROXY": "http://127.0.0.1:%d" % PROXY_PORT,
           "NO_PROXY": "127.0.0.1,localhost"}
    old = os.umask(c["umask"])
    t0 = time.time()
    ns = ["unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
          'mount --bind "$1" /var/log && mount --bind "$2" /var/lib && shift 2 && exec "$@"', "sh",
          logdir, os.path.join(sysdir, "lib")]
    p = subprocess.run(ns + argv, env=env, cwd=w, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    secs = time.time() - t0
    os.umask(old)
    shown = ["cfn-init"] + argv[1:]
    open(os.path.join(outdir, "argv"), "wb").write(
        rootify(json.dumps(shown, ensure_ascii=False).encode()) + b"\n")
    open(os.path.join(outdir, "exit"), "w").write("%d\n" % p.returncode)
    open(os.path.join(outdir, "stdout"), "wb").write(norm(p.stdout))
    open(os.path.join(outdir, "stderr"), "wb").write(norm(p.stderr))
    for name in LOGNAMES[:2]:
        f = os.path.join(logdir, name)
        dst = os.path.join(outdir, name)
        if os.path.exists(f):
            open(dst, "wb").write(norm(open(f, "rb").read()))
        else:
            open(dst, "wb").write(b"")  # absent == empty; see logfiles.txt
    lf = []
    for n in sorted(os.listdir(logdir)):
        st = os.stat(os.path.join(logdir, n))
        lf.append("/var/log/%s %04o %d" % (n, stat.S_IMODE(st.st_mode), st.st_size))
    open(os.path.join(outdir, "logfiles.txt"), "w").write("".join(x + "\n" for x in lf))
    open(os.path.join(outdir, "fs.txt"), "w").write(fs_listing(w))
    open(os.path.join(outdir, "state.txt"), "wb").write(state_listing(sysdir))
    return p.returncode, secs, " ".join(shlex.quote(a) for a in shown)


def main():
    sel = set(sys.argv[1:])
    if os.geteuid() != 0:
        sys.exit("must run as root")
    proxy = ensure_proxy()
    os.makedirs(ROOT, exist_ok=True)
    rows = []
    try:
        for c in CASES:
            if sel and c["name"] not in sel:
                continue
            w = os.path.join(ROOT, c["name"])
            meta_path = os.path.join(ROOT, c["name"] + ".json")
            shutil.rmtree(w, ignore_errors=True)
            os.makedirs(w)
            os.chmod(w, 0o755)
            sysdir = os.path.join(SYSROOT, c["name"])
            wipe(sysdir)
            if c["setup"]:
                subprocess.run(["/bin/sh", "-ec", "umask 022; " + sub(c["setup"], w)], check=True)
            cdir = os.path.join(OUT, c["name"])
            shutil.rmtree(cdir, ignore_errors=True)
            if c["runs"]:
                codes, total = [], 0.0
                for i, m in enumerate(c["runs"], 1):
                    rc, secs, argv = run_once(c, w, m, meta_path, os.path.join(cdir, "run%d" % i), sysdir)
                    codes.append(str(rc))
                    total += secs
                rc_s, secs = ",".join(codes), total
            else:
                rc, secs, argv = run_once(c, w, c["meta"], meta_path, cdir, sysdir)
                rc_s = str(rc)
            if c["setup"]:
                open(os.path.join(cdir, "setup.sh"), "w").write(c["setup"].replace("{W}", "{ROOT}/" + c["name"]) + "\n")
            rows.append((c["name"], str(len(c["runs"]) if c["runs"] else 1), rootify(argv.encode()).decode(),
                         "%03o" % c["umask"], rc_s, "%.1f" % secs, c["desc"]))
            print("%-36s rc=%-8s %5.1fs" % (c["name"], rc_s, secs), flush=True)
    finally:
        if proxy:
            proxy.terminate()
    if not sel:
        with open(os.path.join(OUT, "cases.tsv"), "w") as f:
            f.write("case\truns\targv\tumask\texit\tseconds\tdescription\n")
            for r in rows:
                f.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main()
