#!/usr/bin/env bash
# Opens an `earthverse report` page in headless Chromium (Debian package
# `chromium`), fails on any console message or failed load, takes a
# full-page screenshot, and checks that every plot is drawn: the DOM holds
# each figure's SVG with its data marks, and the screenshot has coloured
# (non-background) pixels inside each plot's box (Figs. 8-10 too when the
# report was made with --families).
#
#   scripts/report-screenshot.sh [REPORT.html] [SCREENSHOT.png]
#
# Without REPORT.html it builds one from the recorded runs of the dev slice
# ($EARTHVERSE_DATA, default ../shared/earthverse-dev/data).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
report="${1:-}"
shot="${2:-$work/report.png}"
if [ -z "$report" ]; then
  data="${EARTHVERSE_DATA:-$(pwd)/../shared/earthverse-dev/data}"
  report="$work/report.html"
  cargo run -q -p earthverse-cli -- report --from-recorded "$data/exploration/trajectories" \
    --title "EarthVerse dev slice: recorded runs" --html "$report"
fi
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --hide-scrollbars --user-data-dir="$work/profile")

# 1. A copy with a probe script records each plot's box and the page height
#    as attributes (layout is unchanged), read back from the dumped DOM.
python3 - "$report" "$work/probe.html" <<'PY'
import sys
html = open(sys.argv[1], encoding="utf-8").read()
probe = """<script>
for (const f of document.querySelectorAll('section[id] figure svg')) {
  const r = f.getBoundingClientRect();
  f.setAttribute('data-box', [r.left, r.top + scrollY, r.width, r.height].map(Math.round).join(','));
}
document.body.setAttribute('data-height', document.documentElement.scrollHeight);
</script></body>"""
open(sys.argv[2], "w", encoding="utf-8").write(html.replace("</body>", probe))
PY
"${chrome[@]}" --window-size=1280,1000 --dump-dom "file://$work/probe.html" >"$work/dom.html" 2>/dev/null

# 2. The report itself: console messages and failed loads are logged on stderr.
height=$(python3 -c "import re,sys; print(min(16000, int(re.search(r'data-height=\"(\d+)\"', open(sys.argv[1]).read()).group(1))))" "$work/dom.html")
"${chrome[@]}" --enable-logging=stderr --v=0 --window-size=1280,"$height" \
  --screenshot="$shot" "file://$(realpath "$report")" 2>"$work/chrome.log" >/dev/null
if grep -E "CONSOLE|Uncaught|Failed to load|ERR_FILE_NOT_FOUND|net::ERR" "$work/chrome.log"; then
  echo "report-screenshot: the page logged errors (above)" >&2
  exit 1
fi

# 3. Marks in the DOM and coloured pixels in each plot's box.
python3 - "$work/dom.html" "$shot" <<'PY'
import re, struct, sys, zlib

dom = open(sys.argv[1], encoding="utf-8").read()

def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and ctype in (2, 6), (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line)); prev = line
    return w, h, bpp, rows

w, h, bpp, rows = read_png(sys.argv[2])
expected = {"landscape": "circle", "capabilities": "rect", "forest": "circle", "distribution": "circle"}
# Figs. 8-10 (run-level failure families) when the report was made with --families.
for section, mark in {"fig8": "rect", "fig9": "rect", "fig10": "circle"}.items():
    if re.search(r'<section id="%s">((?!</section>).)*<svg' % section, dom, re.S):
        expected[section] = mark
failed = False
for section, mark in expected.items():
    m = re.search(r'<section id="%s">.*?<svg(.*?)</svg>' % section, dom, re.S)
    if not m:
        print(f"{section}: no SVG in the DOM"); failed = True; continue
    svg = m.group(1)
    marks = len(re.findall(r"<%s\b" % mark, svg))
    box = re.search(r'data-box="(\d+),(\d+),(\d+),(\d+)"', svg)
    x0, y0, bw, bh = map(int, box.groups())
    coloured = 0
    for y in range(y0, min(h, y0 + bh)):
        line = rows[y]
        for x in range(x0, min(w, x0 + bw), 2):
            r, g, b = line[x * bpp:x * bpp + 3]
            if max(r, g, b) - min(r, g, b) > 40:
                coloured += 1
    # every data mark must put ink on the page: at least 30 coloured pixels a mark (capped at 100)
    ok = marks > 0 and coloured >= min(100, 30 * marks)
    failed |= not ok
    print(f"{section:13s} <{mark}> marks in DOM: {marks:5d}; coloured pixels in its box "
          f"({bw}x{bh} at {x0},{y0}): {coloured:6d}  {'ok' if ok else 'FAIL'}")
print(f"screenshot {w}x{h}: {sys.argv[2]}")
print(f"plots checked: {len(expected)}")
sys.exit(1 if failed else 0)
PY
echo "report-screenshot: ok (no console errors; every plot drawn)"
