# r48 call e (H100 if lent): the committed tree (67a59f66, the bundle: runs bounded per row,
# whole-segment installs from fresh segments, slots spread over their row's words) against
# head (56cc0f3f, the session's start), in turn, two rounds; the GPU suites; frag, churn
# 50/70%, util; the README's protocol with Gallatin side by side; scaling with Gallatin last.
R=/tmp/r48-e; source scripts/device-prelude.sh
(rm -rf .devbin/peers; PEERS_ONLY=peer_gallatin bash scripts/build-peers.sh > $R/build-peers.txt 2>&1; echo "peer build rc=$? $(date +%T)") &
cp .devbin/veballoc.ptx .devbin/var/final.ptx
warm head final
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 200 .devbin/tests/gpu --ignored --test-threads=1 --nocapture > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(date +%T)"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$? $(date +%T)"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 gpu_ > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$? $(date +%T)"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -20
pack
for r in 1 2; do for v in head final; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 45 $B single --allocators veballoc --sizes 16,32,48,64,128,256,512,1024,2048,4096 --out $R/s-$v-$r > $R/single-$v-$r.txt 2>&1 || echo "exit $? single $v"
  timeout 45 $B mixed --allocators veballoc --sizes 32,64,128,256,512,1024,2048,4096 --out $R/m-$v-$r > $R/mixed-$v-$r.txt 2>&1 || echo "exit $? mixed $v"
  timeout 45 $B single --allocators veballoc --threads 262144 --sizes 8192 --out $R/s8k-$v-$r > $R/s8k-$v-$r.txt 2>&1 || echo "exit $? s8k $v"
  unset VEBALLOC_PTX_FILE
done; echo "round $r $(date +%T)"; pack; done
timeout 120 $B frag --rounds 1 --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$? $(date +%T)"
for live in 0.5 0.7; do timeout 60 $B churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live rc=$?"; grep -a "churn:" $R/churn-$live.txt | tail -1; done
pack
wait
for cmd in single mixed; do
  timeout 150 $B $cmd --allocators veballoc --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"
  echo "$cmd with peers $(date +%T)"; pack
done
timeout 100 $B util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$? $(date +%T)"
pack
timeout 150 $B scaling --allocators veballoc --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$? $(date +%T)"
pack; echo "done $(date +%T)"
