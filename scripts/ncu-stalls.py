#!/usr/bin/env python3
"""Warp-stall summary of an ncu source page, made on the GPU machine with
`ncu --import R.ncu-rep --page source --csv --print-source sass > R.csv` (gzipped or not):
samples by stall reason, executed instructions by kind (spills, branches, atomics), how many
128-byte code lines and contiguous runs the executed code spans (instruction-cache misses),
then the N instructions with the most samples.
Usage: scripts/ncu-stalls.py R.csv[.gz] [N]"""
import csv
import gzip
import re
import sys

path = sys.argv[1]
top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 25
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    rows = list(csv.reader(f))
hdr = rows[1]
ix = {h: i for i, h in enumerate(hdr)}
data = [r for r in rows[2:] if len(r) >= len(hdr)]
SAMPLES, EXECUTED = "Warp Stall Sampling (All Samples)", "Instructions Executed"
stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]


def num(r, col):
    v = r[ix[col]]
    return int(v) if v.isdigit() else 0


total = {s: sum(num(r, s) for r in data) for s in stalls}
print(path, "samples", sum(num(r, SAMPLES) for r in data), "warp instructions", sum(num(r, EXECUTED) for r in data))
print("by reason:", sorted(((v, k) for k, v in total.items() if v), reverse=True))
ran = [r for r in data if num(r, EXECUTED) > 0]
kinds = {}
for r in ran:
    words = r[1].strip().split()
    op = words[1] if re.match(r"@!?U?P", words[0]) and len(words) > 1 else words[0]
    base = op.split(".")[0]
    kinds[base] = kinds.get(base, 0) + num(r, EXECUTED)
print("executed by kind:", sorted(kinds.items(), key=lambda x: -x[1])[:24])
addrs = sorted(int(r[0], 16) for r in ran)
runs = 1 + sum(1 for a, b in zip(addrs, addrs[1:]) if b - a > 128)
print(f"distinct instructions {len(ran)}, 128-byte code lines {len(set(a // 128 for a in addrs))}, contiguous runs {runs}")
for r in sorted(data, key=lambda r: -num(r, SAMPLES))[:top_n]:
    why = sorted(((num(r, s), s) for s in stalls if num(r, s) > 0), reverse=True)[:2]
    print(r[0][-6:], num(r, SAMPLES), r[1].strip()[:60], why)
