#!/usr/bin/env python3
"""Record golden Mustache renderings for cfn-init's `files` `context` feature.

Run with a Python 3 interpreter that has pystache installed (the "py3" column),
as root, with the reference aws-cfn-bootstrap 1.4-31 installed as described in
../README.md (the "py2" column is produced end to end by running the real
reference `cfn-init` on a metadata file, then reading the file it wrote).

    /tmp/py3pystache/bin/python tests/golden/mustache/record.py \
        --cfn-init /tmp/ref/bin/cfn-init --out tests/golden/mustache/cases.json

Each case is (name, template, context-as-JSON-text). The context text is fed
verbatim to both cfn-init (inside the metadata document) and to json.loads for
pystache, and is embedded verbatim in cases.json, so number spellings such as
1E5 or 1.0 reach the Rust test exactly as the reference saw them.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import pystache

DEEP = 1000

CASES = [
    # ---- escaping
    ("escape_html_chars", "[{{x}}]", r'''{"x": "& < > \" ' done"}'''),
    ("escape_apostrophe", "{{x}}", r'''{"x": "it's"}'''),
    ("escape_already_escaped", "{{x}}", r'''{"x": "&amp; &lt;"}'''),
    ("triple_mustache_raw", "[{{{x}}}]", r'''{"x": "& < > \" '"}'''),
    ("ampersand_raw", "[{{& x}}] [{{&x}}]", r'''{"x": "& < > \" '"}'''),
    ("tag_whitespace", "[{{ x }}] [{{{ x }}}] [{{&  x  }}]", r'''{"x": "<v>"}'''),
    ("value_not_rerendered", "{{x}} {{{x}}}", r'''{"x": "{{y}}", "y": "no"}'''),
    # ---- missing keys
    ("missing_key", "[{{nope}}][{{{nope}}}][{{&nope}}]", r'''{"x": 1}'''),
    # ---- dotted names
    ("dotted", "{{a.b.c}} {{{a.b.c}}}", r'''{"a": {"b": {"c": "<deep>"}}}'''),
    ("dotted_missing_parts", "[{{a.x.c}}][{{z.b}}][{{a.b.c.d}}]", r'''{"a": {"b": {"c": "deep"}}}'''),
    ("dotted_on_scalar_or_list", "[{{a.b}}] [{{a.length}}] [{{l.0}}]", r'''{"a": "str", "l": ["x", "y"]}'''),
    ("dotted_first_part_from_stack", "{{#a}}{{b.c}}{{/a}}", r'''{"a": {"x": 1}, "b": {"c": "outer"}}'''),
    ("dotted_no_fallback_after_first", "{{#a}}[{{b.c}}]{{/a}}", r'''{"a": {"b": {}}, "b": {"c": "outer"}}'''),
    ("dotted_section", "{{#a.b}}<{{c}}>{{/a.b}}", r'''{"a": {"b": {"c": 1}}}'''),
    # ---- implicit iterator
    ("implicit_iterator_list", "{{#l}}({{.}}){{/l}}", r'''{"l": ["a", "<b>", 1, 1.5, true, false, null, "", 0]}'''),
    ("implicit_iterator_top_object", "{{.}}", r'''{"k": "v"}'''),
    ("implicit_iterator_top_string", "[{{.}}]", r'''"hello <you>"'''),
    ("implicit_iterator_top_list", "{{#.}}<{{.}}>{{/.}}", r'''[1, "two", 3]'''),
    ("list_of_lists", "{{#l}}[{{#.}}{{.}},{{/.}}]{{/l}}", r'''{"l": [[1, 2], [], [3]]}'''),
    # ---- sections
    ("section_list_of_objects", "{{#items}}<{{name}}>{{/items}}", r'''{"items": [{"name": "a"}, {"name": "b"}, {}]}'''),
    ("section_object", "{{#o}}{{k}}/{{x}}{{/o}}", r'''{"o": {"k": "K"}, "x": "X"}'''),
    ("section_true_false", "[{{#t}}T{{/t}}][{{#f}}F{{/f}}]", r'''{"t": true, "f": false}'''),
    ("section_falsy_values", "[{{#el}}el{{/el}}][{{#es}}es{{/es}}][{{#z}}z{{/z}}][{{#zf}}zf{{/zf}}][{{#n}}n{{/n}}][{{#eo}}eo{{/eo}}][{{#m}}m{{/m}}]",
     r'''{"el": [], "es": "", "z": 0, "zf": 0.0, "n": null, "eo": {}}'''),
    ("section_truthy_scalars", "[{{#s}}<{{.}}>{{/s}}][{{#zs}}<{{.}}>{{/zs}}][{{#i}}<{{.}}>{{/i}}][{{#f}}<{{.}}>{{/f}}][{{#neg}}<{{.}}>{{/neg}}]",
     r'''{"s": "str", "zs": "0", "i": 5, "f": 0.5, "neg": -1}'''),
    ("section_list_with_falsy_items", "{{#l}}[{{.}}]{{/l}}", r'''{"l": [0, false, null, "", [], {}]}'''),
    ("section_scalar_item_falls_back", "{{#l}}{{x}}{{/l}}", r'''{"l": [1, 2], "x": "X"}'''),
    ("inverted_sections", "[{{^f}}f{{/f}}][{{^t}}t{{/t}}][{{^el}}el{{/el}}][{{^l}}l{{/l}}][{{^m}}m{{/m}}][{{^eo}}eo{{/eo}}][{{^z}}z{{/z}}][{{^s}}s{{/s}}][{{^n}}n{{/n}}]",
     r'''{"f": false, "t": true, "el": [], "l": [1], "eo": {}, "z": 0, "s": "x", "n": null}'''),
    ("nested_sections_stack", "{{#a}}{{#b}}{{x}}-{{y}}-{{z}};{{/b}}{{/a}}", r'''{"x": "root", "a": {"y": "A", "b": [{"z": 1}, {"z": 2, "x": "inner"}]}}'''),
    ("nested_same_name", "{{#a}}[{{#a}}{{b}}{{/a}}]{{/a}}", r'''{"a": {"a": {"b": "inner"}, "b": "outer"}}'''),
    ("empty_section_body", "a{{#t}}{{/t}}b{{^t}}{{/t}}c", r'''{"t": true}'''),
    # ---- comments
    ("comments", "a{{! a comment }}b{{!x}}c{{! line one\nline two }}d", r'''{}'''),
    # ---- standalone lines
    ("standalone_comment", "a\n  {{! c }}\nb\n", r'''{}'''),
    ("standalone_sections", "list:\n{{#l}}\n- {{.}}\n{{/l}}\nend\n", r'''{"l": ["a", "b"]}'''),
    ("standalone_indented_sections", "x\n  {{#t}}\n  in\n  {{/t}}\ny\n", r'''{"t": true}'''),
    ("standalone_crlf", "a\r\n{{#t}}\r\nx\r\n{{/t}}\r\nb", r'''{"t": true}'''),
    ("standalone_at_eof", "x\n{{! c }}", r'''{}'''),
    ("not_standalone_trailing_space", "{{#t}} \nx\n{{/t}}\t\n", r'''{"t": true}'''),
    ("not_standalone_text_before", "a {{#t}}\nx\n{{/t}}\n", r'''{"t": true}'''),
    ("interpolation_not_standalone", "  {{x}}\n\t{{{x}}}\n", r'''{"x": "v"}'''),
    # ---- delimiters
    ("set_delimiters", "{{=<% %>=}}<% x %> {{x}} <%={{ }}=%>{{x}}", r'''{"x": "<v>"}'''),
    ("set_delimiters_standalone", "a\n{{=| |=}}\n|x|\n|#t|\nin\n|/t|\n", r'''{"x": "X", "t": true}'''),
    ("set_delimiters_regex_chars", "{{=[[ ]]=}}[[x]] [[{x}]] [[&x]]", r'''{"x": "a&b"}'''),
    ("set_delimiters_one_token", "{{=<%=}}x", r'''{}'''),
    ("set_delimiters_blank", "{{= =}}x", r'''{}'''),
    # ---- scalar formatting
    ("numbers_int", "{{a}} {{b}} {{c}} {{d}}", r'''{"a": 42, "b": -7, "c": 12345678901234567890123, "d": -0}'''),
    ("numbers_float", "{{a}} {{b}} {{c}} {{d}} {{e}} {{f}} {{g}}", r'''{"a": 1.0, "b": 1.5, "c": 0.1, "d": -0.0, "e": 100.0, "f": 0.3333333333333333, "g": 2.50}'''),
    ("numbers_float_exponent", "{{a}} {{b}} {{c}} {{d}} {{e}} {{f}} {{g}}", r'''{"a": 1E5, "b": 1e16, "c": 1e15, "d": 1e-7, "e": 0.0001, "f": 2.5e-5, "g": 1.5e300}'''),
    ("numbers_float_precision", "{{a}} {{b}} {{c}}", r'''{"a": 123456789012.5, "b": 1.2345678901234567, "c": 1e400}'''),
    ("booleans_and_null", "[{{t}}] [{{f}}] [{{n}}] [{{{n}}}]", r'''{"t": true, "f": false, "n": null}'''),
    ("list_direct", "{{l}} | {{{l}}}", r'''{"l": [1, "a", true, null, 1.5, {"k": "v"}, []]}'''),
    ("object_direct", "{{o}} | {{{o}}} [{{e}}] [{{el}}]", r'''{"o": {"a": 1, "b": [2]}, "e": {}, "el": []}'''),
    ("list_of_strings_quotes", "{{{l}}}", r'''{"l": ["it's", "say \"hi\"", "both ' \"", "back\\slash", "tab\tnl\ncr\r"]}'''),
    ("list_of_strings_unicode", "{{{l}}}", r'''{"l": ["\u00e9\u65e5\u672c", "\u00a0nbsp", "\u2028ls", "\u007f\u0001", "\ud83d\ude00", "\u200b"]}'''),
    # ---- unicode
    ("unicode", "h\u00e9llo \u2603 {{x}} {{\u00fc}}", r'''{"x": "\u65e5\u672c<\u00e9>", "\u00fc": "umlaut key"}'''),
    ("unicode_whitespace_in_tag", "[{{\u00a0x\u00a0}}]", r'''{"x": "nbsp-trimmed", "\u00a0x\u00a0": "kept"}'''),
    ("key_with_space", "[{{a b}}]", r'''{"a b": "spaced"}'''),
    # ---- partials
    ("partials_missing", "a{{>p}}b{{> p }}c\n  {{>p}}\nd", r'''{}'''),
    # ---- odd tags
    ("empty_tag_literal", "a{{}}b", r'''{}'''),
    ("blank_tag", "a{{ }}b{{  }}c", r'''{" ": "space"}'''),
    ("sigil_only_tags", "[{{#}}][{{/}}][{{^}}][{{!}}]", r'''{"#": "hash"}'''),
    ("unbalanced_triple", "[{{{x}}] [{{x}}}]", r'''{"x": "X", "{x": "brace"}'''),
    ("newline_in_tag", "[{{a\nb}}] [{{\nx\n}}]", r'''{"x": "X"}'''),
    # ---- malformed templates
    ("unclosed_tag", "a {{x b", r'''{"x": 1}'''),
    ("unclosed_section", "a{{#x}}b{{y}}c", r'''{"x": true, "y": "Y"}'''),
    ("unclosed_nested_section", "a{{#x}}b{{#z}}c{{/z}}d{{#w}}e", r'''{"x": true, "z": true, "w": true}'''),
    ("mismatched_close", "a{{#x}}b{{/y}}c", r'''{"x": true}'''),
    ("close_without_open", "a\n b{{/x}}c", r'''{}'''),
    # ---- depth
    ("nested_100", "{{#a}}" * 100 + "x" + "{{/a}}" * 100, r'''{"a": true}'''),
    ("nested_%d" % DEEP, "{{#a}}" * DEEP + "x" + "{{/a}}" * DEEP, r'''{"a": true}'''),
    ("nested_%d_not_rendered" % DEEP, "<{{#f}}" + "{{#a}}" * DEEP + "x" + "{{/a}}" * DEEP + "{{/f}}>", r'''{"a": true, "f": false}'''),
]

WORK = "/tmp/mustache-golden"
PREFIX = "Failed to render content as a Mustache template: "


def run_reference(cfn_init, index, template, context_text):
    """Render through the real reference cfn-init; return (content, error)."""
    out = "%s/out/case%03d.txt" % (WORK, index)
    meta = ('{"AWS::CloudFormation::Init": {"config": {"files": {%s: {"content": %s, "context": %s}}}}}'
            % (json.dumps(out), json.dumps(template), context_text))
    path = "%s/case%03d.json" % (WORK, index)
    with open(path, "w") as f:
        f.write(meta)
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root", "LANG": "C.UTF-8", "TZ": "UTC",
        # no endpoint is needed; a closed port keeps any stray request local
        "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    proc = subprocess.run([cfn_init, path], env=env, cwd=WORK, capture_output=True)
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 0:
        with open(out, "rb") as f:
            return f.read().decode("utf-8"), None
    marker = "Error occurred during build: "
    for line in stderr.splitlines():
        if marker in line:
            return None, line.split(marker, 1)[1]
    raise SystemExit("case %d: cfn-init exit %d without a build error:\n%s" % (index, proc.returncode, stderr))


def run_py3(template, context_text):
    try:
        return pystache.render(template, json.loads(context_text)), None
    except Exception as e:  # noqa: BLE001 - record whatever pystache raises
        return None, "%s: %s" % (type(e).__name__, e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cfn-init", default="/tmp/ref/bin/cfn-init")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK + "/out")
    names = set()
    rows = []
    for i, (name, template, context_text) in enumerate(CASES):
        assert name not in names, name
        names.add(name)
        json.loads(context_text)  # must be valid JSON
        py2, py2_err = run_reference(args.cfn_init, i, template, context_text)
        py3, py3_err = run_py3(template, context_text)
        rows.append("  {%s}" % ",\n   ".join([
            '"name": %s' % json.dumps(name),
            '"template": %s' % json.dumps(template),
            '"context": %s' % context_text,
            '"py2_reference": %s' % json.dumps(py2),
            '"py2_error": %s' % json.dumps(py2_err),
            '"py3_pystache": %s' % json.dumps(py3),
            '"py3_error": %s' % json.dumps(py3_err),
        ]))
        print("%-34s py2=%-40.40r py3=%-40.40r" % (name, py2 if py2_err is None else "ERR " + py2_err,
                                                 py3 if py3_err is None else "ERR " + py3_err), file=sys.stderr)
    text = "[\n" + ",\n".join(rows) + "\n]\n"
    json.loads(text)
    with open(args.out, "w") as f:
        f.write(text)
    print("%d cases written to %s" % (len(rows), args.out), file=sys.stderr)


if __name__ == "__main__":
    main()
