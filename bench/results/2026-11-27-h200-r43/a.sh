set -u
# r43 call a (c4612837 + block-source-probe.diff, knob off in the bundle's PTX): gpu_host
# (the binding-drop test never run on a GPU), then r42's next.sh (claim_lost trace, the block
# source probe: frag and speed of base-p / src-p / src256-p).
R=/tmp/r43-a; mkdir -p $R/tests
gunzip -f .devbin/tests/*.gz .devbin/*.gz .devbin/var/*.gz 2>/dev/null
B=.devbin/veballoc-bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/w > /dev/null 2>&1 &
VEBALLOC_PTX_FILE=.devbin/veballoc-checks.ptx timeout 200 $B single --allocators veballoc --sizes 16 --threads 32 --iters 1 --out /tmp/wc > /dev/null 2>&1 &
wait
export VEBALLOC_CHECKS_PTX_FILE=$PWD/.devbin/veballoc-checks.ptx
timeout 150 .devbin/tests/gpu_host --ignored --test-threads=1 > $R/tests/gpu_host.txt 2>&1; echo "gpu_host rc=$?"
grep -ah 'test result\|FAILED\|panicked' $R/tests/*.txt | tail -5
unset VEBALLOC_CHECKS_PTX_FILE
tar czf $OUT/r43-a.tgz -C /tmp r43-a
export OUT_SAVE=$OUT
bash bench/results/2026-11-27-h200-r43/next.sh
