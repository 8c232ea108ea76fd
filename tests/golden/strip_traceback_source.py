#!/usr/bin/env python3
"""Remove source-code lines from Python tracebacks in recorded golden files.

A CPython 2 traceback frame is two lines:
    '  File "<path>", line <n>, in <func>'
    '    <source line>'
Only the second line (reference source code) is dropped; everything else is
kept byte-for-byte.  usage: strip_traceback_source.py DIR
"""
import os
import re
import sys

FRAME = re.compile(rb'^  File ".*", line \d+, in .*$')

for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        path = os.path.join(root, name)
        data = open(path, "rb").read()
        if b"Traceback (most recent call last):" not in data:
            continue
        lines = data.split(b"\n")
        out, skip = [], False
        for line in lines:
            if skip and line.startswith(b"    "):
                skip = False
                continue
            skip = bool(FRAME.match(line))
            out.append(line)
        new = b"\n".join(out)
        if new != data:
            open(path, "wb").write(new)
