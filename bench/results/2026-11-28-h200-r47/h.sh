set -uo pipefail
# r47 call h: the committed tree (the bundle: the 16-byte packed band in 128 KiB blocks of its
# own geometry, group 1 booted last). The GPU suites; speed in turn against head (b8802c73)
# and pcf (this tree with MIXED_PACKED_MAX_BYTES = 0: every warp on the class path), two
# rounds; frag, churn 50/70%; the README's protocol with Gallatin side by side; util last.
R=/tmp/r47-h; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
chmod +x .devbin/veballoc-bench .devbin/tests/*
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
md5sum .devbin/var/*.ptx .devbin/*.ptx | tee $R/ptx-md5.txt
pack() { rm -rf $R/*/*.svg $R/*/*.json; tar czf $OUT/r47-h.tgz -C /tmp r47-h; }
(rm -rf .devbin/peers; PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "peer build rc=$? $(date +%T)") &
cp .devbin/veballoc.ptx .devbin/var/final.ptx
V="head final pcf"
for v in $V; do VEBALLOC_PTX_FILE=.devbin/var/$v.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w-$v > $R/jit-$v.txt 2>&1 & done
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > $R/jit-checks.txt 2>&1 &
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wb > $R/jit-bundle.txt 2>&1 &
wait; echo "jit done $(date +%T)"
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 gpu_ > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$? $(date +%T)"
grep -ah 'test result\|FAILED\|panicked\|usable errors' $R/tests/*.txt | tail -20
pack
for r in 1 2; do for v in $V; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,48,64,128,256,1024,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,1024,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
timeout 120 $B frag --rounds 1 --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$? $(date +%T)"
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; grep -a "churn:" $R/churn-$live.txt | tail -1; done
pack
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
  echo "$cmd with peers $(date +%T)"; pack
done
timeout 100 $B util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$? $(date +%T)"
pack; echo "done $(date +%T)"
