set -u
# Prepared in r42 for the next session (not run): the claim path's measurement and the block
# source probe. Before the call, here: `git apply bench/results/2026-11-27-h200-r42/block-source-probe.diff`,
# `scripts/device-bundle.sh` (the probe adds three slot rows: the host's layout must match),
# then trace PTX builds `scripts/ptx-variant.sh trace .devbin/var/<v>.ptx` for base (no knob)
# and src (VEBALLOC_BLOCK_SOURCE=1), and plain builds base / src / src256
# (VEBALLOC_BLOCK_SOURCE=1 VEBALLOC_BLOCK_SOURCE_KIB=256) as <v>-p.ptx. The trace counters
# say how many claims lose their leaf word's race (`claim_lost`, per `installs`) with and
# without the source; then frag and speed as r42's calls.
R=/tmp/r43-a/next; mkdir -p $R
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
V="base src"; P="base-p src-p src256-p"
for v in $V $P; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > /dev/null 2>&1 & done
wait; echo "jit done $(date +%T)"
for v in $V; do
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B mixed --allocators veballoc --sizes 64,512 --iters 2 --trace --out $R/tm-$v > $R/trace-mixed-$v.txt 2>&1; echo "trace mixed $v rc=$?"
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 60 $B single --allocators veballoc --sizes 16,64 --iters 2 --trace --out $R/ts-$v > $R/trace-single-$v.txt 2>&1; echo "trace single $v rc=$?"
done
tar czf $OUT/r43-a.tgz -C /tmp r43-a
for r in 1 2; do for v in $P; do
  M=""; [ $r = 1 ] && M="--frag-map"
  VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 100 $B frag --rounds 1 $M --allocators veballoc --sizes 16,24,32,48,64,100,128,256,1024,4096 --out $R/f-$v-$r > $R/frag-$v-$r.txt 2>&1 || echo "exit $? frag $v"
done; done
for r in 1 2; do for v in $P; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B single --allocators veballoc --sizes 16,24,32,48,64,128,256,512,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  timeout 60 $B mixed --allocators veballoc --sizes 64,128,256,512,2048,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v $r"
  timeout 60 $B mixed --allocators veballoc --threads 65536 --sizes 64,512,4096 --out $R/u-$v-$r > $R/mixed64k-$v-$r.txt 2>&1 || echo "exit $? m64k $v $r"
done; echo "round $r $(date +%T)"; tar czf $OUT/r43-a.tgz -C /tmp r43-a; done
unset VEBALLOC_PTX_FILE
echo "done $(date +%T)"
