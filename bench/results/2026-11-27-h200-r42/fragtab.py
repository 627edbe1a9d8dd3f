import re,sys,glob,os
d=sys.argv[1]
print("variant r  " + " ".join(f"{s:>6}" for s in "16 24 32 48 64 100 128 256 1024 4096 m64 m512 m4096".split()))
for v in sys.argv[2:]:
    for f in sorted(glob.glob(f"{d}/frag-{v}-*.txt")):
        r=f.rsplit('-',1)[1][:-4]
        vals=re.findall(r"(\S+)\s+\d+ \|\s+([\d.]+)x", open(f).read())
        print(f"{v:7} {r}  " + " ".join(f"{float(x):6.3f}" for _,x in vals))
