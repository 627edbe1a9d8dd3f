# r39 call i (4341be38): the harness paths the final review changed: frag with Gallatin's
# rounds (nulls kept with the ratio), the collections test (its own module, timed_in); and
# gpu_host (Gpu::zeroed's new bound).
set -u
R=/tmp/r39-i; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
timeout 120 $B frag --rounds 1 --sizes 64,4096 --allocators veballoc --peers .devbin/peers --peers-list gallatin --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$?"
timeout 200 $B collections --out $R/coll > $R/collections.txt 2>&1; echo "collections rc=$?"
timeout 100 .devbin/tests/gpu_host --ignored --test-threads=1 > $R/gpu_host.txt 2>&1; echo "gpu_host rc=$?"
grep -a "test result" $R/gpu_host.txt
tr '\r' '\n' < $R/frag.txt | grep -E "^\s*(mixed)?(≤)?[0-9]* *[0-9]+ +[0-9]+ \|" | head -8
tail -6 $R/collections.txt
tar czf $OUT/r39-i.tgz -C /tmp r39-i
