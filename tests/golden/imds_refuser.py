#!/usr/bin/env python3
"""Tiny HTTP proxy stand-in used while recording the golden data.

The reference (aws-cfn-bootstrap 1.4-31) sends its IMDS requests through the
environment proxy (BUG-IMDSPROXY).  Pointing HTTP_PROXY at this server answers
every IMDS probe locally, so no packet leaves the machine:

  mode "refuse" (default): every request gets an immediate `403 Forbidden`,
      which the reference treats as a terminal error => "not EC2", without
      the 10-try back-off.
  mode "ec2": GET .../meta-data/instance-id answers 200 `i-0123456789abcdef0`
      (everything else 403), i.e. the host looks like an EC2 instance.

Every request line is appended to LOGFILE.

usage: imds_refuser.py PORT LOGFILE [refuse|ec2]
"""
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

MODE = sys.argv[3] if len(sys.argv) > 3 else "refuse"


class H(BaseHTTPRequestHandler):
    def _answer(self):
        with open(sys.argv[2], "a") as f:
            f.write("%s %s\n" % (self.command, self.path))
        if MODE == "ec2" and self.command == "GET" and self.path.endswith("/latest/meta-data/instance-id"):
            code, body = 200, b"i-0123456789abcdef0"
        else:
            code, body = 403, b"refused by golden-data IMDS stand-in\n"
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_HEAD = _answer

    def log_message(self, *a):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
