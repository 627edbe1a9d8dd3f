set -uo pipefail
# r47 call f: e/'s nlast (group 1 booted last) met mixed ≤64's frag (1.32) and kept the speed,
# but single 48 B allocated 8-10% slower than head and new in every round. The install path of
# 48 B with the trace builds (head-trace, nlast-trace), and nl3 = BOOT_ORDER 0, 2, 3, 1, 4
# (group 4 last): frag with maps, speed in turn with head and nlast, two rounds.
R=/tmp/r47-f; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r47-f.tgz -C /tmp r47-f; }
for v in head nlast nl3 head-trace nlast-trace; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
wait; echo "jit done $(date +%T)"
for v in head-trace nlast-trace; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B single --allocators veballoc --sizes 48,64 --iters 3 --trace --out $R/t-$v > $R/trace-$v.txt 2>&1; echo "trace $v rc=$?"
done
VEBALLOC_PTX_FILE=.devbin/var/nl3.ptx timeout 100 $B frag --rounds 1 --iters 1 --sizes 16,32,48,64 --frag-map --allocators veballoc --out $R/frag-nl3 > $R/frag-nl3.txt 2>&1; echo "frag nl3 rc=$? $(date +%T)"
grep -a "x," $R/frag-nl3.txt | sed 's/.*\] \.\.\. *//' | awk -F'|' '{split($1,a," "); split($2,b,","); printf "nl3 %s:%s\n", a[1], b[1]}'
pack
V="head nlast nl3"
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,48,64,128 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,256,512 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
pack; echo "done $(date +%T)"
