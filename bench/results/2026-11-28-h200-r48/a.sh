# r48 call a: where 128 B..4 KiB single bursts spend their time (trace: installs, claim and
# wait time), and runs of more slices for the rows that share slots (RUN_SLICES 16384 /
# 32768 against 8192): frag one round and speed, two rounds in turn with the committed tree.
R=/tmp/r48-a; source scripts/device-prelude.sh
cp .devbin/veballoc.ptx .devbin/var/final.ptx
warm trace rs16k rs32k
VEBALLOC_PTX_FILE=.devbin/var/trace.ptx timeout 90 $B single --allocators veballoc --sizes 128,256,1024,4096 --iters 1 --trace --out $R/t-trace > $R/trace.txt 2>&1; echo "trace rc=$?"
pack
for v in final rs16k rs32k; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 90 $B frag --rounds 1 --iters 1 --sizes 128,200,256,512,1024,4096 --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$?"
  grep -a "x," $R/frag-$v.txt | sed 's/.*\] \.\.\. *//' | awk -v v=$v -F'|' '{split($1,a," "); split($2,b,","); printf "%s %s:%s\n", v, a[1], b[1]}'
done
pack
for r in 1 2; do for v in final rs16k rs32k; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 128,200,256,512,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 1024,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
pack; echo "done $(date +%T)"
