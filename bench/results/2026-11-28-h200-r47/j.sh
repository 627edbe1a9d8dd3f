# r47 call j (a probe, nothing committed from it): NOTES r47's hypothesis for 48 B's cost (a
# take-back near a burst's end). nord = BOOT_ORDER 0, 3, 4, 2, 1 (groups 3 and 4 below group
# 2, group 1 last): 48 B's take-back of group 1's segment then comes at half of its second
# segment, and its last segment is a fresh one. frag one round and speed in turn with the
# committed tree (final, the bundle), one round.
R=/tmp/r47-j; source scripts/device-prelude.sh
cp .devbin/veballoc.ptx .devbin/var/final.ptx
warm nord
for v in final nord; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --iters 1 --sizes 16,32,48,64,128,4096 --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$?"
  grep -a "x," $R/frag-$v.txt | sed 's/.*\] \.\.\. *//' | awk -v v=$v -F'|' '{split($1,a," "); split($2,b,","); printf "%s %s:%s\n", v, a[1], b[1]}'
done
pack
for v in final nord final nord; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  r=$(ls $R | grep -c "^single-$v") ; r=$((r+1))
  timeout 30 $B single --allocators veballoc --sizes 16,32,48,64,128,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 30 $B mixed --allocators veballoc --sizes 64,256,512 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done
pack; echo "done $(date +%T)"
