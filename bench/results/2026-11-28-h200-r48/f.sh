# r48 call f (H100): call e's frag gave 64 B a range / live of 1.50 (r47 i/: at most 1.27 for
# every single size). Three one-round frag runs each of head and final, in turn, at 32..256 B;
# then final's map at 64 B.
R=/tmp/r48-f; source scripts/device-prelude.sh
cp .devbin/veballoc.ptx .devbin/var/final.ptx
warm head final
for r in 1 2 3; do for v in head final; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --iters 1 --sizes 32,48,64,128,256 --allocators veballoc --out $R/frag-$v-$r > $R/frag-$v-$r.txt 2>&1; echo "frag $v $r rc=$?"
  grep -a "x," $R/frag-$v-$r.txt | sed 's/.*\] \.\.\. *//' | tr -d '\r' | awk -F'|' '{print $1 $2}' | tr -s ' ' | tr '\n' ';'; echo
done; done
pack
VEBALLOC_PTX_FILE=.devbin/var/final.ptx timeout 60 $B frag --rounds 1 --iters 1 --sizes 64 --frag-map --allocators veballoc --out $R/map-final > $R/map-final.txt 2>&1; echo "map rc=$?"
VEBALLOC_PTX_FILE=.devbin/var/head.ptx timeout 60 $B frag --rounds 1 --iters 1 --sizes 64 --frag-map --allocators veballoc --out $R/map-head > $R/map-head.txt 2>&1; echo "map rc=$?"
pack; echo "done $(date +%T)"
