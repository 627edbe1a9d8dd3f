# r39 call d (probe): is free's bimodal speed from 256 B up a property of where the heap lies?
# Twelve processes of single 512 and 4096 B at 2^20 threads, each printing its heaps' addresses
# (VEBALLOC_ADDRS, a temporary print), with the per-iteration samples in each json.
set -u
R=/tmp/r39-d; mkdir -p $R
gunzip -f .devbin/tests/*.gz .devbin/*.ptx.gz 2>/dev/null
B=.devbin/veballoc-bench
timeout 280 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1
echo "jit done $(date +%T)"
for i in $(seq 1 12); do
  VEBALLOC_ADDRS=1 timeout 60 $B single --allocators veballoc --sizes 512,4096 --out $R/p$i > $R/p$i.txt 2>&1
done
nvidia-smi -q | grep -i -A3 "clocks\b" | head -20 > $R/clocks.txt
tar czf $OUT/r39-d.tgz -C /tmp r39-d
