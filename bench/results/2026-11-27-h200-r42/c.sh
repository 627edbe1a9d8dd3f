set -uo pipefail
# r42 call c (probe): chunked slots with a spare chunk per slot (taken after each install,
# swapped in by the next one), eight chunk sources a class (CHUNK_SOURCE_LOG2=3) installing
# at once (CHUNK_ON_DEMAND=0), 16..64 B in 64 KiB blocks. Variants: base (no chunks), h3
# (8 chunks a block; whole blocks for slots whose chunks last under 10 us), p3 (chunks
# always), p3n (p3 without the spare), p2 (p3 with 4 chunks a block), h2 (h3 with 4 sources),
# h3r (h3, runs of one block). Frag two rounds (maps in the first), then two rounds in turn
# of 2^20 single / mixed speed and mixed at 2^12 / 2^16.
R=/tmp/r42-c; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="base h3 p3 p3n p2 h2 h3r"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done; wait
echo "jit done $(date +%T)"
for r in 1 2; do for v in $V; do
  M=""; [ $r = 1 ] && M="--frag-map"
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 $M --allocators veballoc --sizes 16,24,32,48,64,100,128,256,1024,4096 --out $R/f-$v-$r > $R/frag-$v-$r.txt 2>&1 || echo "exit $? frag $v"
done; done
echo "frag done $(date +%T)"; tar czf $OUT/r42-c.tgz -C $R .
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --sizes 64,128,256,512,2048,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 4096 --sizes 64,512,4096 --out $R/t-$v-$r > $R/mixed4k-$v-$r.txt 2>&1 || echo "exit $? m4k $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
done; echo "round $r $(date +%T)"; tar czf $OUT/r42-c.tgz -C $R .; done
unset VEBALLOC_PTX_FILE
echo "done $(date +%T)"
