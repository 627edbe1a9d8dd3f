# r48 call h (H100): ta = TAKE_BACK_AHEAD (a take-back also takes the unused booted segments
# of other groups right after it, at once), prev = 67a59f66 (the committed kernels, call e).
# frag one round, five rounds in turn at 24..128 B; speed in turn, two rounds.
R=/tmp/r48-h; source scripts/device-prelude.sh
warm prev ta
for r in 1 2 3 4 5; do for v in prev ta; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --iters 1 --sizes 24,48,64,100,128 --allocators veballoc --out $R/frag-$v-$r > $R/frag-$v-$r.txt 2>&1; echo "frag $v $r rc=$?"
  grep -a "x," $R/frag-$v-$r.txt | sed 's/.*\] \.\.\. *//' | tr -d '\r' | awk -F'|' '{print $1 $2}' | tr -s ' ' | tr '\n' ';'; echo
done; done
pack
for r in 1 2; do for v in prev ta; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,24,32,48,64,100,128,256,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
pack; echo "done $(date +%T)"
