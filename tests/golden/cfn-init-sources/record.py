#!/usr/bin/env python3
"""Record the reference cfn-init's behaviour for `sources` (see README.md beside this file).

    sudo python3 tests/golden/cfn-init-sources/record.py [CASE ...]
    python3 tests/golden/cfn-init-sources/record.py --make NAME PATH   # one archive
    python3 tests/golden/cfn-init-sources/record.py --serve            # the server alone

Reuses the machinery of ../cfn-init/record.py (private mount namespace per run, the
same environment and normalisation, the same per-case files) with its own cases, its
own roots (/tmp/cfnsrc-golden, saved as {ROOT}) and one extra server: a small HTTP
server on 127.0.0.1:8137 that is both

* the HTTP proxy of every run (HTTP_PROXY/HTTPS_PROXY): requests for
  http://github.com/<owner>/<repo>/(tarball|zipball)/<ref> are answered with an archive
  made here (so the reference's GitHub stripping can be observed without the network),
  every other proxied request (IMDS) gets 403, like imds_refuser.py in `refuse` mode;
* an origin server for http://127.0.0.1:8137/<name> (NO_PROXY covers 127.0.0.1),
  serving the archives made here, 404 for anything else.

Only observed outputs are written; no reference source code.
"""
import http.server
import importlib.util
import io
import os
import re
import socketserver
import sys
import tarfile
import threading
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("cfninit_record", os.path.join(HERE, "..", "cfn-init", "record.py"))
rec = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rec)

PORT = 8137
rec.ROOT = "/tmp/cfnsrc-golden"
rec.SYSROOT = "/tmp/cfnsrc-golden-sys"
rec.OUT = os.environ.get("OUT", HERE)
rec.PROXY_PORT = PORT
rec.CASES = []
# The reference logs the random temporary directory of its GitHub stripping.
_norm = rec.norm
rec.norm = lambda data: re.sub(rb"/tmp/tmp\w+", b"{TMPDIR}", _norm(data))
INIT = rec.INIT
MTIME = 1600000000


def tar_bytes(members, compression=""):
    """members: (name, kind, data_or_link, mode) with kind file|dir|sym|hard."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:" + compression, format=tarfile.GNU_FORMAT) as tf:
        for name, kind, data, mode in members:
            ti = tarfile.TarInfo(name)
            ti.mode = mode
            ti.mtime = MTIME
            ti.uid = ti.gid = 4242
            ti.uname = ti.gname = "archiveowner"
            if kind == "file":
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            else:
                ti.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}[kind]
                ti.linkname = data or ""
                tf.addfile(ti)
    return buf.getvalue()


def zip_bytes(members):
    """members: (name, data or None for a directory, unix mode or None for 'made on Windows')."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in members:
            zi = zipfile.ZipInfo(name, date_time=(2020, 9, 13, 12, 26, 40))
            if mode is None:
                zi.create_system = 0
                zi.external_attr = 0x10 if data is None else 0
            else:
                zi.create_system = 3
                zi.external_attr = (mode | (0o040000 if data is None else 0o100000)) << 16 | (0x10 if data is None else 0)
            zf.writestr(zi, b"" if data is None else data)
    return buf.getvalue()


APP = [
    ("app", "dir", None, 0o750),
    ("app/run.sh", "file", b"#!/bin/sh\necho hi\n", 0o755),
    ("app/conf", "dir", None, 0o755),
    ("app/conf/settings.ini", "file", b"a=1\n", 0o640),
    ("app/current", "sym", "conf", 0o777),
    ("app/run-again.sh", "hard", "app/run.sh", 0o755),
    ("app/suid", "file", b"x", 0o4755),
]
GITHUB_ONE = [
    ("owner-repo-abc123", "dir", None, 0o775),
    ("owner-repo-abc123/README", "file", b"readme\n", 0o644),
    ("owner-repo-abc123/src", "dir", None, 0o755),
    ("owner-repo-abc123/src/main.c", "file", b"int main(){}\n", 0o644),
]
GITHUB_TWO = [("a/x", "file", b"1\n", 0o644), ("b/y", "file", b"2\n", 0o644)]

ARCHIVES = {
    "app.tar": lambda: tar_bytes(APP),
    "app.tgz": lambda: tar_bytes(APP, "gz"),
    "app.tbz": lambda: tar_bytes(APP, "bz2"),
    "app-gz-named.zip": lambda: tar_bytes(APP, "gz"),
    "mixed.zip": lambda: zip_bytes([
        ("unix/", None, 0o750),
        ("unix/tool", b"tool\n", 0o755),
        ("win/", None, None),
        ("win/readme.txt", b"from windows\n", None),
    ]),
    "traversal.tar": lambda: tar_bytes([("good.txt", "file", b"ok\n", 0o644),
                                        ("../escaped.txt", "file", b"evil\n", 0o644)]),
    "prefix.tar": lambda: tar_bytes([("good.txt", "file", b"ok\n", 0o644),
                                     ("../dest2/x.txt", "file", b"evil\n", 0o644)]),
    "absolute.tar": lambda: tar_bytes([("/tmp/cfnsrc-golden/absolute-escaped.txt", "file", b"evil\n", 0o644)]),
    "symlink-escape.tar": lambda: tar_bytes([("l", "sym", "../outside", 0o777),
                                             ("l/through.txt", "file", b"evil\n", 0o644)]),
    "zip-traversal.zip": lambda: zip_bytes([("good.txt", b"ok\n", 0o644), ("../zip-escaped.txt", b"evil\n", 0o644)]),
    "not-an-archive.txt": lambda: b"just text\n",
    "one-top.tgz": lambda: tar_bytes(GITHUB_ONE, "gz"),
    "two-tops.tgz": lambda: tar_bytes(GITHUB_TWO, "gz"),
    "one-top.zip": lambda: zip_bytes([("owner-repo-abc123/", None, 0o755),
                                      ("owner-repo-abc123/a.txt", b"a\n", 0o644)]),
}
GITHUB = {"one": "one-top.tgz", "two": "two-tops.tgz", "zip": "one-top.zip"}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        p = self.path
        if p.startswith("http://github.com/"):
            parts = p.split("/")  # ["http:", "", "github.com", owner, repo, kind, ref]
            name = GITHUB.get(parts[3]) if len(parts) >= 7 and parts[5] in ("tarball", "zipball") else None
            return self.send(200, ARCHIVES[name]()) if name else self.send(404)
        if p.startswith("/") and p[1:] in ARCHIVES:
            return self.send(200, ARCHIVES[p[1:]]())
        return self.send(403 if not p.startswith("/") else 404)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def case(name, sources, desc, setup=None):
    rec.case(name, meta={INIT: {"config": {"sources": sources}}}, setup=setup, desc=desc)


def local(name):
    return 'python3 "$SOURCES_RECORD" --make %s {W}/%s' % (name, name)


case("s-tar", {"{W}/dest": "{W}/app.tar"}, "plain tar: modes, symlink, hard link, setuid, archive owner 4242",
     local("app.tar"))
case("s-targz", {"{W}/dest": "{W}/app.tgz"}, "tar.gz, into an existing dir with a file to keep and one to overwrite",
     local("app.tgz") + "; mkdir -p {W}/dest/app; echo keep > {W}/dest/keep.txt; echo old > {W}/dest/app/run.sh")
case("s-tarbz2", {"{W}/dest": "{W}/app.tbz"}, "tar.bz2", local("app.tbz"))
case("s-gz-named-zip", {"{W}/dest": "{W}/app-gz-named.zip"}, "a tar.gz called .zip: detection by content",
     local("app-gz-named.zip"))
case("s-zip", {"{W}/dest": "{W}/mixed.zip"}, "zip with Unix modes and entries made on Windows (no mode)",
     local("mixed.zip"))
case("s-relative-target", {"dest": "{W}/app.tgz"}, "relative target: relative to the cwd (the work dir)",
     local("app.tgz"))
case("s-traversal", {"{W}/dest": "{W}/traversal.tar"}, "../ member refused, nothing written", local("traversal.tar"))
case("s-traversal-prefix", {"{W}/dest": "{W}/prefix.tar"}, "BUG-TRAVERSAL: ../dest2/x accepted for target dest",
     local("prefix.tar"))
case("s-absolute", {"{W}/dest": "{W}/absolute.tar"}, "absolute member name", local("absolute.tar"))
case("s-symlink-escape", {"{W}/dest": "{W}/symlink-escape.tar"},
     "BUG-SYMLINK: symlink to ../outside then a file through it", local("symlink-escape.tar") + "; mkdir {W}/outside")
case("s-zip-traversal", {"{W}/dest": "{W}/zip-traversal.zip"}, "zip member ../x", local("zip-traversal.zip"))
case("s-missing", {"{W}/dest": "{W}/nope.tgz"}, "local file missing")
case("s-directory-location", {"{W}/dest": "{W}"}, "location is a directory")
case("s-unsupported", {"{W}/dest": "{W}/not-an-archive.txt"}, "not an archive", local("not-an-archive.txt"))
case("s-remote", {"{W}/dest": "http://127.0.0.1:%d/app.tgz" % PORT}, "download over http")
case("s-remote-404", {"{W}/dest": "http://127.0.0.1:%d/missing.tgz" % PORT}, "download answered 404")
case("s-github-tarball", {"{W}/dest": "http://github.com/one/repo/tarball/main"},
     "GitHub magic (through the proxy): one top directory stripped")
case("s-github-zipball", {"{W}/dest": "http://github.com/zip/repo/zipball/main"},
     "GitHub magic on a zipball")
case("s-github-two-tops", {"{W}/dest": "http://github.com/two/repo/tarball/main"},
     "GitHub magic not possible: two top-level entries")
case("s-two-targets", {"{W}/b": "{W}/app.tgz", "{W}/a": "{W}/app.tgz"}, "sorted order of targets", local("app.tgz"))


def serve():
    """The server alone, on a free loopback port, for replaying the cases with another
    cfn-init (tests/init_sources_reference.rs): prints the port, serves until stdin ends."""
    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--make":
        open(sys.argv[3], "wb").write(ARCHIVES[sys.argv[2]]())
        return
    if sys.argv[1:] == ["--serve"]:
        return serve()
    os.environ["SOURCES_RECORD"] = os.path.abspath(__file__)
    server = Server(("127.0.0.1", PORT), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rec.main()
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
