set -uo pipefail
# r32 call O (the binaries of d020e6a, the code of the session's last commit; every heap booted): the mid sizes with Gallatin
# side by side (2^18 x 8 KiB, 2^16 x 40000 B; as r31 review.sh), and 2^18 x 8 KiB with the boot
# off for comparison.
R=/tmp/r32-mid; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
peers=$(scripts/peers-dir.sh)
for pt in 8192:262144 40000:65536; do
  timeout 90 .devbin/veballoc-bench single --sizes ${pt%:*} --threads ${pt#*:} --allocators veballoc --iters 5 --peers $peers --peers-list gallatin --out $R/mid > $R/mid-${pt/:/-}.txt 2>&1 || echo "exit $? $pt"
  grep -a '|' $R/mid-${pt/:/-}.txt | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//'
done
VEBALLOC_BOOT=0 timeout 60 .devbin/veballoc-bench single --sizes 8192 --threads 262144 --allocators veballoc --iters 5 --out $R/mid-boot0 > $R/mid-boot0.txt 2>&1 || echo "exit $? boot0"
grep -a '|' $R/mid-boot0.txt | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//'
tar czf $OUT/r32-mid.tgz -C $R .
