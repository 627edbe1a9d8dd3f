set -uo pipefail
# r41 call a (probe): deferral of empty non-lead slots to their lead (slice::DEFER_LEAD_LOG2,
# DEFER_SHIFT; variants dLS: lead log2 L, budget slices_per_block >> S; d52 is the bundle's
# PTX) against HEAD's PTX (head.ptx, 615937b3). Frag one round of each (singles and the three
# mixed), then two rounds in turn of 2^20 single/mixed speed and small launches.
R=/tmp/r41-a; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
cp .devbin/veballoc.ptx .devbin/var/d52.ptx
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="head d52 d51 d72 d53 d71"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 --allocators veballoc --sizes 16,24,32,48,64,128,256,1024,4096 --out $R/f-$v > $R/frag-$v.txt 2>&1 || echo "exit $? frag $v"
done
echo "frag done $(date +%T)"; tar czf $OUT/r41-a.tgz -C $R .
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --sizes 64,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v $r"
  timeout 60 $B single --allocators veballoc --threads 1024,32768 --sizes 64,512 --out $R/t-$v-$r > $R/small-$v-$r.txt 2>&1 || echo "exit $? small $v $r"
done; echo "round $r $(date +%T)"; tar czf $OUT/r41-a.tgz -C $R .; done
unset VEBALLOC_PTX_FILE
echo "done $(date +%T)"
