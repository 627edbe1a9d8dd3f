# r36 call g1: is a launch slower with the runtime's kernels in their own module? The bundle's
# harness (431a6bc: a bench kernel's launch looks in the runtime's module first, fails, then
# finds it in the bench module), the same with VEBALLOC_PTX_FILE of the whole module (one
# module, one lookup), and the fix (veballoc-bench-fix: the module from the kernel's name), in
# turn, one thread and 2^20 threads. JITs side by side first (a fresh machine).
set -u
R=/tmp/r36-g1; mkdir -p $R
gunzip -f .devbin/*.ptx.gz .devbin/veballoc-bench-fix.gz 2>/dev/null; chmod +x .devbin/veballoc-bench-fix
B=.devbin/veballoc-bench; F=.devbin/veballoc-bench-fix
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/veballoc.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w2 > /dev/null 2>&1 &
wait; echo "jit done"
for r in 1 2 3; do
  timeout 60 $B single --allocators veballoc,floor --threads 1 --iters 9 --sizes 16,64 --out /tmp/e > $R/one-embedded-$r.txt 2>&1
  VEBALLOC_PTX_FILE=.devbin/veballoc.ptx timeout 60 $B single --allocators veballoc,floor --threads 1 --iters 9 --sizes 16,64 --out /tmp/f > $R/one-file-$r.txt 2>&1
  timeout 60 $F single --allocators veballoc,floor --threads 1 --iters 9 --sizes 16,64 --out /tmp/x > $R/one-fix-$r.txt 2>&1
  timeout 60 $B single --allocators veballoc,floor --sizes 16,4096 --out /tmp/e > $R/big-embedded-$r.txt 2>&1
  VEBALLOC_PTX_FILE=.devbin/veballoc.ptx timeout 60 $B single --allocators veballoc,floor --sizes 16,4096 --out /tmp/f > $R/big-file-$r.txt 2>&1
  timeout 60 $F single --allocators veballoc,floor --sizes 16,4096 --out /tmp/x > $R/big-fix-$r.txt 2>&1
done
for f in $R/*.txt; do echo "$(basename $f): $(grep -a '^ *\[single' $f | awk -F'|' '{printf "%s|%s ", $2, $3}')"; done
cd /tmp && tar czf $OUT/r36-g1.tgz r36-g1
