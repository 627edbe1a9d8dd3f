# r39 call e: the review's fixes. The new GPU tests first against the code before the fixes
# (gpu_malloc_block... on HEAD's PTX through VEBALLOC_PTX_FILE; the global-binding and
# zero-sized-read tests in a gpu_host binary built from HEAD's host), then every GPU test and
# the collections example (bind_global's new signature) on the fixed build.
set -u
R=/tmp/r39-e; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz .devbin/var/*.gz .devbin/*.gz 2>/dev/null
chmod +x .devbin/var/gpu_host_head .devbin/collections-example
T=.devbin/tests
VEBALLOC_PTX_FILE=.devbin/var/head.ptx timeout 200 $T/gpu_correctness --ignored --test-threads=1 gpu_malloc_block_keeps > $R/tests/before-malloc-block.txt 2>&1; echo "before malloc_block rc=$?"
timeout 100 .devbin/var/gpu_host_head --ignored --test-threads=1 gpu_a_dropped gpu_reading_zero > $R/tests/before-host.txt 2>&1; echo "before host rc=$?"
grep -ah 'test \|panicked\|misaligned' $R/tests/before-*.txt | head -12
timeout 250 $T/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$?"
for t in gpu_correctness gpu_host; do timeout 150 $T/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 $T/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
timeout 120 .devbin/collections-example > $R/collections.txt 2>&1; echo "collections rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/gpu*.txt | tail -14
tail -5 $R/collections.txt
tar czf $OUT/r39-e.tgz -C /tmp r39-e
