#!/usr/bin/env python3
"""Check a self-contained HTML page in a real browser (Debian's headless chromium).

usage: check_html.py PAGE.html [options]
  --size WxH                 the window (default 1600x1200); screenshots are of this viewport
  --fragment NAME            load PAGE.html#NAME (a page's second view, where it has one)
  --text STRING              the page's DOM, after its scripts ran, holds STRING (repeatable)
  --in SELECTOR STRING       the first element SELECTOR matches holds STRING in its text (repeatable)
  --absent SELECTOR          no element matches SELECTOR (repeatable): text that must not have
                             become markup, a script's mark that must not have been set
  --no-overlap SELECTOR      the bounding boxes of every element SELECTOR matches (at least two)
                             overlap nowhere (repeatable): labels that do not run into each other
  --pixel SELECTOR #RRGGBB   the pixel at the centre of the first element SELECTOR matches has
                             this colour, within --tolerance per channel (repeatable)
  --tolerance N              per channel, 0-255 (default 12: anti-aliasing, colour management)
  --max-bytes N              the file is at most N bytes
  --screenshot FILE          keep the screenshot (PNG) there
  --dom FILE                 keep the DOM chromium dumped there

$CHROMIUM, when set, names the browser to run (set to "" it stands for none).

Exit 0 when every check passed, 1 when one failed (each failure said on stderr), 77 (the
meson/automake "skipped" code) when no chromium is installed, saying so.

What it does: first a static check that the page is self-contained (no <script src>, no
stylesheet <link>, no @import, no url() or src/href to another host, no @font-face): it must
load with no network. Then a copy of the page with one more script at its end, which records
the bounding box and text of each SELECTOR in a hidden <pre>, is loaded by
`chromium --headless --dump-dom` (the DOM after the load event: the page's own scripts have run)
and shot with `--screenshot` at the same window size and a device scale factor of 1; the PNG is
decoded here (zlib; no imaging library needed) and each --pixel sampled at its element's centre.
chromium runs as it would for a user, with --no-sandbox only because CI runs as root.

Reusable by any test that writes a page: `python3 tests/browser/check_html.py out.html --text X`
(tests/cli/fleet_html.sh for sdcscan fleet --html).
"""
import argparse
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
PROBE_ID = "__check_html_probe"


def find_chromium():
    # $CHROMIUM names the browser (set but not executable: none, as on a machine without one)
    if "CHROMIUM" in os.environ:
        path = os.environ["CHROMIUM"]
        return path if path and os.access(path, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def self_contained(text):
    """What in the page would need the network or another file, as a list of findings."""
    bad = []
    patterns = [
        (r"<script\b[^>]*\bsrc\s*=", "a <script src>"),
        (r"<link\b[^>]*\brel\s*=\s*[\"']?stylesheet", "a stylesheet <link>"),
        (r"<link\b[^>]*\bhref\s*=\s*[\"']?(https?:)?//", "a <link> to another host"),
        (r"@import\b", "an @import"),
        (r"@font-face\b", "an @font-face"),
        (r"url\(\s*[\"']?(https?:)?//", "a url() to another host"),
        (r"\b(src|href|action)\s*=\s*[\"']?(https?:)?//", "a src/href to another host"),
        (r"<iframe\b", "an <iframe>"),
    ]
    for pattern, what in patterns:
        m = re.search(pattern, text, re.I)
        if m:
            bad.append("%s: ...%s..." % (what, text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")))
    return bad


def probe_script(selectors, every=()):
    return """<script>
(function () {
  var sels = %s, every = %s, out = {};
  for (var i = 0; i < every.length; i++) {
    var all = document.querySelectorAll(every[i]), boxes = [];
    for (var k = 0; k < all.length; k++) {
      var b = all[k].getBoundingClientRect();
      boxes.push([b.left, b.top, b.width, b.height, (all[k].textContent || "").slice(0, 200)]);
    }
    out["every:" + every[i]] = boxes;
  }
  for (var i = 0; i < sels.length; i++) {
    var e = document.querySelector(sels[i]);
    if (!e) { out[sels[i]] = null; continue; }
    var r = e.getBoundingClientRect();
    out[sels[i]] = [r.left, r.top, r.width, r.height, (e.textContent || "").slice(0, 4000)];
  }
  var p = document.createElement("pre");
  p.id = "%s";
  p.style.display = "none";
  p.textContent = JSON.stringify(out);
  document.body.appendChild(p);
})();
</script>""" % (json.dumps(selectors), json.dumps(list(every)), PROBE_ID)


def run_chromium(chromium, args, timeout=120):
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--disable-background-networking", "--disable-extensions",
            "--force-device-scale-factor=1", "--hide-scrollbars", "--mute-audio"]
    env = dict(os.environ)
    env.setdefault("HOME", tempfile.gettempdir())
    return subprocess.run(base + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env)


def png_pixels(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit RGB or RGBA PNG (PNG spec, 2nd ed.)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("PNG depth %d colour type %d interlace %d: not read here" % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, rows, bpp


def main():
    ap = argparse.ArgumentParser(description="check a self-contained HTML page in headless chromium")
    ap.add_argument("page")
    ap.add_argument("--size", default="1600x1200")
    ap.add_argument("--fragment")
    ap.add_argument("--text", action="append", default=[])
    ap.add_argument("--in", dest="inside", nargs=2, action="append", default=[], metavar=("SELECTOR", "STRING"))
    ap.add_argument("--absent", action="append", default=[], metavar="SELECTOR")
    ap.add_argument("--no-overlap", action="append", default=[], metavar="SELECTOR")
    ap.add_argument("--pixel", nargs=2, action="append", default=[], metavar=("SELECTOR", "#RRGGBB"))
    ap.add_argument("--tolerance", type=int, default=12)
    ap.add_argument("--max-bytes", type=int)
    ap.add_argument("--screenshot")
    ap.add_argument("--dom")
    a = ap.parse_args()
    failures = []
    text = open(a.page, encoding="utf-8").read()
    size = os.path.getsize(a.page)
    if a.max_bytes is not None and size > a.max_bytes:
        failures.append("%s: %d bytes, more than %d" % (a.page, size, a.max_bytes))
    failures += ["not self-contained: " + b for b in self_contained(text)]
    chromium = find_chromium()
    if not chromium:
        print("SKIP: no chromium on PATH (apt-get install chromium): %s was not loaded in a browser" % a.page)
        for f in failures:
            print("FAIL (static): " + f, file=sys.stderr)
        return 1 if failures else SKIP
    w, h = (int(x) for x in a.size.lower().split("x"))
    inside = [tuple(x) for x in a.inside]
    pixels = [tuple(x) for x in a.pixel]
    for sel, want in pixels:
        if not re.fullmatch(r"#[0-9a-fA-F]{6}", want):
            raise SystemExit("--pixel %s %s: a colour is #RRGGBB" % (sel, want))
    selectors = sorted(set([k for k, _ in inside] + [k for k, _ in pixels] + a.absent))
    tmp = tempfile.mkdtemp(prefix="check_html.")
    try:
        copy = os.path.join(tmp, "page.html")
        end = text.lower().rfind("</body>")
        probed = (text[:end] + probe_script(selectors, a.no_overlap) + text[end:]) if end >= 0 \
            else text + probe_script(selectors, a.no_overlap)
        open(copy, "w", encoding="utf-8").write(probed)
        url = "file://" + copy + ("#" + a.fragment if a.fragment else "")
        r = run_chromium(chromium, ["--window-size=%d,%d" % (w, h), "--dump-dom", url])
        dom = r.stdout.decode("utf-8", "replace")
        if a.dom:
            open(a.dom, "w", encoding="utf-8").write(dom)
        if r.returncode != 0 or "<html" not in dom:
            failures.append("chromium --dump-dom: exit %d: %s" % (r.returncode, r.stderr.decode("utf-8", "replace")[-2000:]))
            raise StopIteration
        m = re.search(r'<pre id="%s"[^>]*>(.*?)</pre>' % PROBE_ID, dom, re.S)
        boxes = json.loads(html.unescape(m.group(1))) if m else {}
        if not m:
            failures.append("the probe script did not run: the page's scripts failed or never finished?")
        plain = html.unescape(dom)
        for t in a.text:
            if t not in plain:
                failures.append("the DOM lacks %r" % t)
        for sel in a.absent:
            if m and boxes.get(sel) is not None:
                failures.append("an element matches %s: %r" % (sel, boxes[sel][4][:200]))
        for sel in a.no_overlap:
            got = boxes.get("every:" + sel) or []
            if len(got) < 2:
                failures.append("--no-overlap %s: %d element(s) match, not two or more" % (sel, len(got)))
            over = [(x, y) for i, x in enumerate(got) for y in got[i + 1:]
                    if x[0] < y[0] + y[2] and y[0] < x[0] + x[2] and x[1] < y[1] + y[3] and y[1] < x[1] + x[3]]
            for x, y in over[:10]:
                failures.append("%s: %r at (%.0f, %.0f) %.0fx%.0f overlaps %r at (%.0f, %.0f) %.0fx%.0f" %
                                (sel, x[4], x[0], x[1], x[2], x[3], y[4], y[0], y[1], y[2], y[3]))
            if len(got) >= 2 and not over:
                print("%s: %d boxes, none overlapping another" % (sel, len(got)))
        for sel, want in inside:
            box = boxes.get(sel)
            if box is None:
                failures.append("no element matches %s" % sel)
            elif want not in box[4]:
                failures.append("%s holds %r, not %r" % (sel, box[4][:200], want))
        if pixels:
            shot = a.screenshot or os.path.join(tmp, "shot.png")
            r = run_chromium(chromium, ["--window-size=%d,%d" % (w, h), "--screenshot=" + shot, url])
            if r.returncode != 0 or not os.path.exists(shot):
                failures.append("chromium --screenshot: exit %d: %s" % (r.returncode, r.stderr.decode("utf-8", "replace")[-2000:]))
                raise StopIteration
            pw, ph, rows, bpp = png_pixels(shot)
            for sel, want in pixels:
                box = boxes.get(sel)
                if box is None:
                    failures.append("no element matches %s (for its pixel)" % sel)
                    continue
                x, y = int(box[0] + box[2] / 2), int(box[1] + box[3] / 2)
                if not (0 <= x < pw and 0 <= y < ph):
                    failures.append("%s: its centre (%d, %d) is outside the %dx%d screenshot" % (sel, x, y, pw, ph))
                    continue
                got = tuple(rows[y][x * bpp:x * bpp + 3])
                exp = tuple(int(want.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4))
                if max(abs(g - e) for g, e in zip(got, exp)) > a.tolerance:
                    failures.append("%s: pixel (%d, %d) is #%02x%02x%02x, not %s" % (sel, x, y, *got, want))
                else:
                    print("pixel %s at (%d, %d): #%02x%02x%02x as expected" % (sel, x, y, *got))
    except StopIteration:
        pass
    except subprocess.TimeoutExpired as e:
        failures.append("chromium did not finish in %d s" % e.timeout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    if not failures:
        print("%s: %d bytes, self-contained, %d text and %d pixel checks passed in chromium" %
              (a.page, size, len(a.text) + len(inside) + len(a.absent), len(pixels)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
