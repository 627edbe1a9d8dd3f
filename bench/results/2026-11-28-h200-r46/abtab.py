import re,glob,statistics as st,sys
d={}
os_dir=sys.argv[1]; A=sys.argv[2]; Bv=sys.argv[3]
for f in glob.glob(os_dir+'/*-*-[0-9].txt'):
    m=re.match(r'.*/(single|mixed)-(.*)-(\d)\.txt',f)
    if not m: continue
    kind,v,r=m.groups()
    for line in open(f):
        mm=re.match(r'\s+(≤?\d+) \|\s+([\d.]+)\s+([\d.]+)',line)
        if mm: d.setdefault((kind,mm.group(1),v),[]).append((float(mm.group(2)),float(mm.group(3))))
keys=sorted(set((k,s) for k,s,v in d),key=lambda x:(x[0],int(x[1].strip('≤'))))
for k,s in keys:
    a=d.get((k,s,A)); b=d.get((k,s,Bv))
    if not a or not b: continue
    an=st.median(x[0] for x in a); bn=st.median(x[0] for x in b); af=st.median(x[1] for x in a); bf=st.median(x[1] for x in b)
    print(f"{k} {s}: alloc {A} {an:.4f} {Bv} {bn:.4f} ({an/bn-1:+.1%}) [{' '.join('%.4f'%x[0] for x in a)} | {' '.join('%.4f'%x[0] for x in b)}]  free {af:.4f} {bf:.4f} ({af/bf-1:+.1%})")
