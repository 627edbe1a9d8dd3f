set -uo pipefail
# r47 call e: d/ (nt2: take-backs two ahead) still formatted past free booted segments (mixed
# ≤64 2.40). nlast = new with group 1 booted last (BOOT_ORDER 0, 2, 3, 4, 1: the 16-byte band
# and 32 B grow into fresh segments right after it). frag with maps (one round) for head, new,
# nlast; speed in turn, three rounds.
R=/tmp/r47-e; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r47-e.tgz -C /tmp r47-e; }
V="head new nlast"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 --iters 1 --sizes 16,32,48,64,128,4096 --frag-map --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$? $(date +%T)"
done
for v in $V; do grep -a "x," $R/frag-$v.txt | sed 's/.*\] \.\.\. *//' | awk -v v=$v -F'|' '{split($1,a," "); split($2,b,","); printf "%s %s:%s\n", v, a[1], b[1]}'; done
pack
for r in 1 2 3; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,48,64,128,256,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
pack; echo "done $(date +%T)"
