# Tables of the `packed` subcommand's veballoc rows (per-class malloc, routed by the probe's
# knobs) per variant: alloc / free (min of rounds, ms; others as % vs the first variant) and
# range / live (lowest-highest over rounds and iterations). Usage: python3 packtab.py DIR v1 v2...
import re, sys, glob
d, vs = sys.argv[1], sys.argv[2:]
rows = {}
for v in vs:
    for f in glob.glob(f"{d}/packed-{v}-*.txt"):
        for line in open(f, errors="replace").read().replace("\r", "\n").split("\n"):
            m = re.match(r"\s*(\d+)\s+(veballoc|veballoc-packed) \|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+) \|\s*([\d.]+)-\s*([\d.]+)x", line)
            if not m: continue
            mx, who = int(m[1]), m[2]
            a, fr, lo, hi = float(m[3]), float(m[6]), float(m[7]), float(m[8])
            r = rows.setdefault((v, who, mx), [9, 9, 9, 0])
            rows[(v, who, mx)] = [min(r[0], a), min(r[1], fr), min(r[2], lo), max(r[3], hi)]
maxima = sorted({k[2] for k in rows})
for who in ["veballoc", "veballoc-packed"]:
    print(f"== {who}: alloc ms / free ms (min of rounds; % vs {vs[0]}), range / live")
    print("max     " + "".join(f"{v:>30}" for v in vs))
    for mx in maxima:
        base = rows.get((vs[0], who, mx))
        if not base: continue
        cells = []
        for v in vs:
            r = rows.get((v, who, mx))
            if not r: cells.append(f"{'-':>30}"); continue
            if v == vs[0]:
                c = f"{r[0]:.4f}/{r[1]:.4f} {r[2]:.2f}-{r[3]:.2f}"
            else:
                c = f"{100*(r[0]/base[0]-1):+.0f}%/{100*(r[1]/base[1]-1):+.0f}% {r[2]:.2f}-{r[3]:.2f}"
            cells.append(f"{c:>30}")
        print(f"{mx:<8}" + "".join(cells))
