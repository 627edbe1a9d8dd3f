set -uo pipefail
# r44 call e: the change as committed (mixed warps of sizes up to 512 B pack; call d's new2
# plus: warps with any larger request keep the class path). GPU tests (default PTX, then gpu
# again on the checks PTX); against head (e2bbd1ac) in turn, two rounds: packed, single,
# mixed at 4096 / 65536 threads; frag (one round, every size), churn 50/70%, util; then the
# README's protocol with Gallatin side by side (peer_gallatin rebuilt from .peers-src): single
# and mixed with the floors, frag with Gallatin's rounds.
R=/tmp/r44-e; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/veballoc.ptx | tee $R/ptx-md5.txt
(rm -rf .devbin/peers; PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "peer build rc=$? $(date +%T)") &
V="head final"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 120 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
VEBALLOC_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx timeout 200 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu-checks.txt 2>&1; echo "gpu on checks rc=$? $(date +%T)"
unset VEBALLOC_CHECKS_PTX_FILE
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -12
tar czf $OUT/r44-e.tgz -C /tmp r44-e
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 100 $B packed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --iters 5 --out $R/p-$v-$r > $R/packed-$v-$r.txt 2>&1 || echo "exit $? packed $v $r"
  timeout 60 $B single --allocators veballoc --sizes 16,32,64,128,256,512,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v $r"
  for t in 4096 65536; do timeout 60 $B mixed --allocators veballoc --threads $t --sizes 64,256,512,4096 --out $R/t$t-$v-$r > $R/mixed$t-$v-$r.txt 2>&1 || echo "exit $? m$t $v $r"; done
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; rm -rf $R/*/*.svg; tar czf $OUT/r44-e.tgz -C /tmp r44-e; done
timeout 120 $B frag --rounds 1 --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$? $(date +%T)"
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$? $(date +%T)"; done
timeout 150 $B util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$? $(date +%T)"
rm -rf $R/*/*.svg; tar czf $OUT/r44-e.tgz -C /tmp r44-e
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
  echo "$cmd with peers $(date +%T)"; rm -rf $R/*/*.svg; tar czf $OUT/r44-e.tgz -C /tmp r44-e
done
timeout 200 $B frag --rounds 1 --allocators veballoc --peers .devbin/peers --peers-list gallatin --out $R/frag-peers > $R/frag-peers.txt 2>&1; echo "frag peers rc=$? $(date +%T)"
rm -rf $R/*/*.svg; tar czf $OUT/r44-e.tgz -C /tmp r44-e
echo "done $(date +%T)"
