set -uo pipefail
# r32 call A: the boot on by default with the take-back of booted segments (uncommitted on
# ce84ff9) -- frag with the boot, scaling with Gallatin (boot on) and without the boot, single
# and mixed A/B: base (2259ad0 = ce84ff9's kernels, .devbin/base), new with VEBALLOC_BOOT=0, new.
R=/tmp/r32-boot1; mkdir -p $R/tests
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
for t in gpu_host gpu_correctness; do timeout 60 .devbin/tests/$t --ignored --test-threads=1 > $R/tests/$t.txt 2>&1; echo "$t rc=$?"; done
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -8
s=$(date +%s); timeout 100 .devbin/veballoc-bench frag --allocators veballoc --out $R/frag > $R/frag.txt 2>&1; echo "frag rc=$? $(( $(date +%s) - s )) s"
grep -a '|' $R/frag.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -22
peers=$(scripts/peers-dir.sh)
s=$(date +%s); timeout 200 .devbin/veballoc-bench scaling --allocators veballoc,floor --iters 5 --peers $peers --peers-list gallatin --out $R/scaling > $R/scaling.txt 2>&1; echo "scaling rc=$? $(( $(date +%s) - s )) s"
for v in base off on; do
  b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; e=1
  [ $v = base ] && { b=.devbin/base/veballoc-bench; p=.devbin/base/veballoc.ptx; e=0; }
  [ $v = off ] && e=0
  for cmd in single mixed; do s=$(date +%s); VEBALLOC_BOOT=$e VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/$v > $R/$v-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; echo "$v $cmd $(( $(date +%s) - s )) s"; done
done
for f in $R/{base,off,on}-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-8s %-14s %s\n", $1, t, $2 }'
done | sort -s -k1,1V
s=$(date +%s); VEBALLOC_BOOT=0 timeout 120 .devbin/veballoc-bench scaling --allocators veballoc --iters 5 --out $R/scaling-off > $R/scaling-off.txt 2>&1; echo "scaling-off rc=$? $(( $(date +%s) - s )) s"
tar czf $OUT/r32-boot1.tgz -C $R .
