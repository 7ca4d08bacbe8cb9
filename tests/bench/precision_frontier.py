#!/usr/bin/env python3
"""Draws precision_table.sh's CSV as an SVG: bits per weight (x) against the reference's
dev-text PPL (y), one colour per rounding, the auto rows of one rounding joined as its
frontier, and f32, f32 + 3% and f32 + 8% as horizontal lines (issue targets). Each
rounding is named with the published method it corresponds to.

  tests/bench/precision_frontier.py build/bench-results/precision_table-<time>.csv OUT.svg
"""
import csv
import sys

ROUNDINGS = {  # row suffix -> (label, colour)
    "": ("nearest (llama.cpp's quantize without --imatrix)", "#1f77b4"),
    "weighted": ("weighted (llama.cpp's --imatrix importance)", "#ff7f0e"),
    "gptq": ("gptq (GPTQ, Frantar et al. 2022)", "#2ca02c"),
}
W, H, L, R, T, B = 760, 480, 70, 20, 30, 150


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: precision_frontier.py TABLE.csv OUT.svg")
    rows = []
    with open(sys.argv[1], newline="") as f:
        for r in csv.DictReader(f):
            try:
                rows.append((r["row"], float(r["bpw"]), float(r["ref_ppl"])))
            except (KeyError, ValueError):
                continue
    if not rows:
        sys.exit(f"{sys.argv[1]}: no row with bpw and ref_ppl")
    f32 = next((p for n, _, p in rows if n == "f32"), None)
    pts = [(n, b, p) for n, b, p in rows if n != "f32"]
    xs = [b for _, b, _ in pts] or [4, 8]
    ys = [p for _, _, p in pts] + ([f32, f32 * 1.08] if f32 else [])
    x0, x1 = min(xs) - 0.3, max(xs) + 0.3
    y0, y1 = min(ys) * 0.98, min(max(ys), (f32 or min(ys)) * 1.6) * 1.02
    sx = lambda b: L + (b - x0) / (x1 - x0) * (W - L - R)
    sy = lambda p: T + (y1 - min(p, y1)) / (y1 - y0) * (H - T - B)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18" font-size="13">stories260K: weight bits per weight vs '
           'dev-text PPL (reference executor)</text>']
    # axes and ticks
    out.append(f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>')
    out.append(f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>')
    step = 0.5 if x1 - x0 < 4 else 1.0
    b = (int(x0 / step) + 1) * step
    while b <= x1:
        out.append(f'<text x="{sx(b):.1f}" y="{H - B + 15}" text-anchor="middle">{b:g}</text>')
        b += step
    for i in range(6):
        p = y0 + (y1 - y0) * i / 5
        out.append(f'<text x="{L - 5}" y="{sy(p) + 4:.1f}" text-anchor="end">{p:.2f}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - B + 32}" text-anchor="middle">bits per '
               'weight as stored (all weights)</text>')
    if f32:
        for k, label in ((1.0, "f32"), (1.03, "f32 + 3%"), (1.08, "f32 + 8%")):
            y = sy(f32 * k)
            out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#888" '
                       'stroke-dasharray="4 3"/>')
            out.append(f'<text x="{W - R - 4}" y="{y - 3:.1f}" text-anchor="end" '
                       f'fill="#555">{label} {f32 * k:.3f}</text>')
    # frontier lines: the auto rows of each rounding, by bits per weight
    for suffix, (_, colour) in ROUNDINGS.items():
        auto = sorted((b, p) for n, b, p in pts
                      if n.startswith("auto-") and (n.split("@") + [""])[1] == suffix)
        if len(auto) > 1:
            d = " ".join(f"{sx(b):.1f},{sy(p):.1f}" for b, p in auto)
            out.append(f'<polyline points="{d}" fill="none" stroke="{colour}"/>')
    for n, b, p in pts:
        colour = ROUNDINGS.get((n.split("@") + [""])[1], ("", "black"))[1]
        out.append(f'<circle cx="{sx(b):.1f}" cy="{sy(p):.1f}" r="4" fill="{colour}"/>')
        out.append(f'<text x="{sx(b) + 6:.1f}" y="{sy(p) - 5:.1f}" fill="#333">'
                   f'{n.split("@")[0]} {p:.3f}</text>')
    for i, (label, colour) in enumerate(v for v in ROUNDINGS.values()):
        y = H - B + 55 + 18 * i
        out.append(f'<circle cx="{L + 6}" cy="{y - 4}" r="4" fill="{colour}"/>')
        out.append(f'<text x="{L + 16}" y="{y}">{label}; line: auto under budgets</text>')
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
