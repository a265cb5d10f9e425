#!/usr/bin/env python3
"""report_check.py - the checks tests/stats/stats_report.test makes on a report,
with nothing but the Python standard library.

  report_check.py png SHOT.png
      the screenshot is not blank: it decodes (zlib, PNG filters undone),
      and has many colours and enough non-white pixels; prints a summary.
  report_check.py dom DOM.html EXPECT.json
      the DOM Chromium serialized holds every thread of EXPECT (by tid and
      name), one timeline mark and one table row per growth record, every
      finding of EXPECT (by kind), the per-thread charts, and no element
      that a name could have injected.
  report_check.py selfcontained REPORT.html
      the file refers to nothing outside itself.

Exits 1 with one line saying what is wrong.
"""
import html.parser
import json
import re
import struct
import sys
import zlib


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def png_rows(path):
    d = open(path, "rb").read()
    if d[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos + 8 <= len(d):
        n, = struct.unpack(">I", d[pos:pos + 4])
        kind = d[pos + 4:pos + 8]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", d[pos + 8:pos + 21])
        elif kind == b"IDAT":
            idat += d[pos + 8:pos + 8 + n]
        pos += 12 + n
    if ihdr is None:
        fail(path + ": no IHDR")
    w, h, depth, ctype, _, _, lace = ihdr
    if depth != 8 or ctype not in (2, 6) or lace != 0:
        fail("%s: PNG of depth %d, colour type %d, interlace %d: not handled" % (path, depth, ctype, lace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        fail("%s: %d bytes of pixels for %dx%d" % (path, len(raw), w, h))
    prev = bytearray(stride)
    for y in range(h):
        at = y * (stride + 1)
        f, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + (left + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            fail("%s: row %d has filter %d" % (path, y, f))
        yield w, h, bpp, bytes(line)
        prev = line


def check_png(path):
    colours, dark, total = set(), 0, 0
    for w, h, bpp, line in png_rows(path):
        for i in range(0, len(line), bpp):
            px = line[i:i + 3]
            colours.add(px)
            total += 1
            if sum(px) < 600:  # clearly not the white background
                dark += 1
    share = dark / total if total else 0
    print("screenshot: %dx%d, %d colours, %.1f%% non-white" % (w, h, len(colours), 100 * share))
    if len(colours) < 50 or share < 0.01:
        fail("the screenshot looks blank: %d colours, %.2f%% non-white" % (len(colours), 100 * share))


class Dom(html.parser.HTMLParser):
    """Elements as (tag, attrs, text inside), texts joined."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.elements = [], []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "",
              "parent": self.stack[-1] if self.stack else None}
        self.elements.append(el)
        if tag not in ("meta", "br", "hr", "img", "input", "link", "line", "rect", "path",
                       "circle"):
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "text": "",
                              "parent": self.stack[-1] if self.stack else None})

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k]["tag"] == tag:
                del self.stack[k:]
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data


def classes(el):
    return el["attrs"].get("class", "").split()


def check_dom(path, expect_path):
    dom = Dom()
    dom.feed(open(path, encoding="utf-8").read())
    expect = json.load(open(expect_path))
    els = dom.elements
    rows = {}
    for el in els:
        if el["tag"] == "tr" and "thread" in classes(el):
            rows[el["attrs"].get("data-tid")] = el
    for t in expect["threads"]:
        row = rows.get(str(t["tid"]))
        if row is None:
            fail("no row for thread %d (%r)" % (t["tid"], t["name"]))
        cells = [el["text"] for el in els if el["parent"] is row and "name" in classes(el)]
        if cells != [t["name"]]:
            fail("thread %d: name cell %r, expected %r" % (t["tid"], cells, t["name"]))
    marks = [el for el in els if el["tag"] == "circle" and "mark" in classes(el)]
    growths = [el for el in els if el["tag"] == "tr" and "growth" in classes(el)]
    if len(marks) != expect["records"] or len(growths) != expect["records"]:
        fail("%d timeline marks and %d growth rows for %d records" %
             (len(marks), len(growths), expect["records"]))
    heads = [el["text"] for el in els if el["tag"] == "h3"]
    for h in expect["charts"]:
        if h not in heads:
            fail("no chart %r (h3: %r)" % (h, heads))
    legend = " | ".join(el["text"] for el in els if el["tag"] == "li")
    for t in expect["threads_charted"]:
        if "%d %s" % (t["tid"], t["name"]) not in legend:
            fail("thread %d %r is in no chart legend" % (t["tid"], t["name"]))
    if expect.get("others") and "the other threads, summed" not in legend:
        fail("no series for the threads a sample summed")
    audit = embedded_audit(els)
    if expect.get("no_audit"):
        if not any(el["attrs"].get("id") == "no-audit" for el in els):
            fail("the page does not say that no audit data was collected")
        if audit is not None:
            fail("audit data in a page without an audit")
    else:
        check_audit(els, audit, expect)
    findings = [el for el in els if "finding" in classes(el)]
    for tag in expect.get("forbidden_tags", []):
        if any(el["tag"] == tag for el in els):
            fail("a <%s> element is in the DOM: a name was not escaped" % tag)
    print("dom: %d threads, %d growth records, %d findings" %
          (len(expect["threads"]), len(marks), len(findings)))


def embedded_audit(els):
    """The audit's JSON document the page embeds, or None."""
    for el in els:
        if el["tag"] == "script" and el["attrs"].get("id") == "audit-json":
            if el["attrs"].get("type") != "application/json":
                fail("the audit's data block is not of type application/json")
            return json.loads(el["text"])
    return None


def check_audit(els, audit, expect):
    """Every finding and audit thread of the embedded audit is in the page,
    and the kinds expect names are among the findings."""
    if audit is None:
        fail("no audit data in the page")
    findings = [el for el in els if el["tag"] == "li" and "finding" in classes(el)]
    if len(findings) != len(audit["findings"]):
        fail("%d findings in the DOM, %d in the audit" % (len(findings), len(audit["findings"])))
    for f, el in zip(audit["findings"], findings):
        texts = [c["text"] for c in els if c["parent"] is el and "text" in classes(c)]
        if (el["attrs"].get("data-kind") != f["kind"] or texts != [f["text"]] or
                el["attrs"].get("data-bytes") != str(f["bytes"]) or
                el["attrs"].get("data-evidence") != f["evidence"]):
            fail("finding %r is not in the DOM as the audit has it: %r %r" % (f, el["attrs"], texts))
        if f["site"] and f["site"] not in el["text"]:
            fail("finding %r: its call site %r is not shown" % (f["kind"], f["site"]))
        if f["fix"] not in el["text"]:
            fail("finding %r: its fix is not shown" % f["kind"])
    kinds = [f["kind"] for f in audit["findings"]]
    for k in expect.get("finding_kinds", []):
        if k not in kinds:
            fail("no %s finding: %r" % (k, kinds))
    rows = {el["attrs"].get("data-tid"): el for el in els
            if el["tag"] == "tr" and "audit-thread" in classes(el)}
    for t in audit["threads"]:
        row = rows.get(str(t["tid"]))
        if row is None or t["name"] not in row["text"]:
            fail("audit thread %d %r is not in the DOM" % (t["tid"], t["name"]))
    for tier in expect.get("tiers_off", []):
        if audit["tiers"][tier]["on"]:
            fail("tier %s is on" % tier)
        cells = [el for el in els if el["tag"] == "tr" and "tier" in classes(el) and
                 el["attrs"].get("data-on") == "0" and tier in el["text"]]
        if not cells or audit["tiers"][tier]["reason"] not in cells[0]["text"]:
            fail("tier %s: off, but the page does not say why" % tier)
    print("audit: %d findings (%s), %d threads" % (len(kinds), ", ".join(kinds), len(audit["threads"])))


def check_selfcontained(path):
    text = open(path, encoding="utf-8").read()
    # the one script element allowed is the audit's data block (never run)
    text = re.sub(r'<script type="application/json" id="audit-json">[^<]*</script>', "", text)
    for pat in (r"https?:", r"<link\b", r"\bsrc\s*=", r"<script\b", r"\burl\(", r"@import",
                r"<iframe\b", r"<object\b", r"<embed\b", r"\bxlink:href", r"\bhref\s*=\s*[\"']?[a-z]+:"):
        m = re.search(pat, text, re.I)
        if m:
            fail("the report refers outside itself: %r at %d" % (m.group(0), m.start()))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "png":
        check_png(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "dom":
        check_dom(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "selfcontained":
        check_selfcontained(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


main()
