set -uo pipefail
# r30 call L (b169177: + the recycle's acquire load, + free's FROM_WORD): every GPU test,
# Gallatin side by side (single, mixed, floors), ce85276 (.devbin/base4) against b169177 in
# turn (single, mixed, two rounds), vb_free under ncu at 512 B and 4 KiB (3 launches each).
R=/tmp/r30-last; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
s=$(date +%s); timeout 170 .devbin/tests/gpu --ignored --test-threads=1 > $R/tests/gpu.txt 2>&1; echo "gpu rc=$? $(( $(date +%s) - s )) s"
for t in gpu_correctness gpu_host; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
timeout 60 .devbin/tests/gpu_multi --ignored --test-threads=1 --skip two_gpus > $R/tests/gpu_multi.txt 2>&1; echo "gpu_multi rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt
for v in base new; do
  if [ $v = base ]; then b=.devbin/base4/veballoc-bench; p=.devbin/base4/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for s in 512 4096; do
    VEBALLOC_PTX_FILE=$PWD/$p timeout 120 ncu --kernel-name vb_free --launch-skip 1 --launch-count 3 --section SpeedOfLight $b single --sizes $s --iters 3 --allocators veballoc --out /tmp/n$v$s > $R/ncu-$v-$s.txt 2>&1
    echo "ncu $v $s: $(grep -E '^\s+Duration' $R/ncu-$v-$s.txt | awk '{print $3}' | tr '\n' ' ')"
  done
done
peers=$(scripts/peers-dir.sh)
for cmd in single mixed; do timeout 90 .devbin/veballoc-bench $cmd --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/peers > $R/peers-$cmd.txt 2>&1 || echo "exit $? $cmd"; done
for round in 1 2; do for v in base new; do
  if [ $v = base ]; then b=.devbin/base4/veballoc-bench; p=.devbin/base4/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v-$round > $R/ab-$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
done; done
for f in $R/peers-*.txt $R/ab-*-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-16s %s | %s\n", $1, t, $2, $NF }'
done | sort -s -k1,1V
tar czf $OUT/r30-last.tgz -C $R .
