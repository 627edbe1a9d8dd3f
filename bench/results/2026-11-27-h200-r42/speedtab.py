import csv,sys,glob,collections
d=sys.argv[1]; vs=sys.argv[2:]
def load(prefix, v):
    out=collections.defaultdict(list)
    for f in sorted(glob.glob(f"{d}/{prefix}-{v}-*/*.csv")):
        rows=[l for l in open(f) if not l.startswith('#')]
        for x in csv.DictReader(rows):
            if x['allocator']!='veballoc': continue
            out[(x['test'],x['size'],x['phase'])].append(float(x['median_ms']))
    return out
for prefix in ['s','m','t','u']:
    base=load(prefix,vs[0])
    keys=sorted(base, key=lambda k:(k[0],int(k[1]) if k[1].isdigit() else 0,k[2]))
    print(f"== {prefix}: {vs[0]} ms (min of rounds), others % vs {vs[0]}")
    data={v:load(prefix,v) for v in vs}
    print(f"{'test':8}{'size':>6} {'ph':6}" + "".join(f"{v:>14}" for v in vs))
    for k in keys:
        b=min(base[k])
        cells=[f"{b:.4f}" + f"({(max(base[k])/b-1)*100:+.0f})"]
        for v in vs[1:]:
            x=data[v].get(k)
            cells.append(f"{(min(x)/b-1)*100:+.0f}%/{(max(x)/b-1)*100:+.0f}%" if x else "-")
        print(f"{k[0]:8}{k[1]:>6} {k[2]:6}" + "".join(f"{c:>14}" for c in cells))
