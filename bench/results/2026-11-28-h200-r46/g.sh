set -uo pipefail
# r46 call g: single 16 B allocated 10-14% slower at 46c1a9b0 than at 96d39af9 (a/, b/), whose
# PTX differed only in malloc_slice_in's loop exit (the lane on its last round now leaves
# before the match). On today's tree (cv): vF = the loop as at 96d39af9 (the defect back; a
# reference only), vE = a lane on its last round matches under a key no class has, then
# leaves (the match stays at the loop's end, as in 96d39af9). In turn, four rounds, 2^20.
R=/tmp/r46-g; mkdir -p $R
gunzip -f .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r46-g.tgz -C /tmp r46-g; }
V="cv vF vE"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
wait; echo "jit done $(date +%T)"
for r in 1 2 3 4; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,64,256 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,256,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
echo "done $(date +%T)"
