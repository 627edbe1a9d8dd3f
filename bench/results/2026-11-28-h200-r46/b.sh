set -uo pipefail
# r46 call b: issue 9's mixed speed at 2^20 threads. Call a's trace: a packed row's one slot a
# multiprocessor installs 64 KiB blocks one after another (mixed <=32: 567 installs, 4.3 a
# slot, ~10 us each, 20% of warps waiting), where per-class slots install in parallel. Variants
# (PACKED_SLOTS_SHIFT): s1 = two packed slots a multiprocessor (warps split by their index in
# the block), s2 = four, s1e = s1 with packed rows installing when exhausted (not on demand).
# Mixed at 2^20 in turn, three rounds; singles head/s1/pre; frag (mixed <=64/512/4096); s1 trace.
R=/tmp/r46-b; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r46-b.tgz -C /tmp r46-b; }
V="head s1 s2 s1e"
for v in $V pre s1-trace; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2 3; do for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
done; for v in head s1 pre; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 45 $B single --allocators veballoc --sizes 16,64,256,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
done; echo "round $r $(date +%T)"; pack; done
VEBALLOC_PTX_FILE=.devbin/var/s1-trace.ptx timeout 60 $B mixed --allocators veballoc --sizes 32,64,256 --iters 2 --trace --out $R/tm > $R/trace-mixed-s1.txt 2>&1; echo "trace rc=$? $(date +%T)"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B frag --rounds 1 --sizes 16,24 --allocators veballoc --out $R/f-$v > $R/frag-$v.txt 2>&1; echo "frag $v rc=$? $(date +%T)"; done
pack; echo "done $(date +%T)"
