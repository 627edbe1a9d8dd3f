set -uo pipefail
# r47 call c: b/'s maps: the 16-byte band's group (g1, 128 blocks a segment) took its booted
# neighbours back at half out, after its next format had gone past every booted segment.
# nt = new with group 1 taking the next booted segment back at its first claim in a segment
# (TAKE_BACK_AT_ONCE_GROUP). frag with maps (one round) for head, new, nt; speed in turn, three
# rounds; then gpu and gpu_correctness on nt (VEBALLOC_PTX_FILE).
R=/tmp/r47-c; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r47-c.tgz -C /tmp r47-c; }
V="head new nt"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 --iters 1 --sizes 16,32,64 --frag-map --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$? $(date +%T)"
done
for v in $V; do grep -a "x," $R/frag-$v.txt | sed 's/.*\] \.\.\. *//' | awk -v v=$v -F'|' '{split($1,a," "); split($2,b,","); printf "%s %s:%s\n", v, a[1], b[1]}'; done
pack
for r in 1 2 3; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,64,256 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx VEBALLOC_PTX_FILE=$PWD/.devbin/var/nt.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
timeout 60 .devbin/tests/gpu_correctness --ignored --test-threads=1 > $R/tests/gpu_correctness.txt 2>&1; echo "gpu_correctness rc=$? $(date +%T)"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -8
pack; echo "done $(date +%T)"
