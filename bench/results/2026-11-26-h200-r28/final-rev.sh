set -uo pipefail
# r28 last call, at the session's last revision (boot opt-in): every GPU test plain, frag,
# and single, mixed and scaling with Gallatin side by side. One tarball back.
R=/tmp/r28-final; mkdir -p $R/tests
GPU_TEST_TIMEOUT=260 scripts/device-run.sh $R/tests > $R/tests/plain.log 2>&1; echo "tests rc=$?"
grep -h 'test result' $R/tests/tests-*.txt
timeout 170 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
for cmd in single mixed scaling; do
  timeout 240 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers .devbin/peers --peers-list gallatin --out $R/bench > $R/$cmd.txt 2>&1 || echo "exit $? $cmd"
done
tar czf $OUT/r28-final.tgz -C $R .
