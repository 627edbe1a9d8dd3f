#!/usr/bin/env bash
# A/B of per-kernel register caps (.maxnreg) on vb_free / vb_malloc; one device call.
set -uo pipefail
R=$OUT/ab; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
for v in base f24m40 f32m48 f40m56 f24m32; do
  ptxas -arch=sm_90 -v .devbin/ab/$v.ptx -o /tmp/$v.cubin 2>&1 | grep -A3 "entry function 'vb_free'\|entry function 'vb_malloc'" | grep -o "entry function '[a-z_]*'\|Used [0-9]* registers\|[0-9]* bytes spill stores" | paste -sd' ' | sed "s/^/$v: /" | tee -a $R/ptxas.txt
done
peers=(--peers .devbin/peers --peers-list gallatin)
for round in 1 2; do
  for v in base f24m40 f32m48 f40m56 f24m32; do
    extra=(); [ $round = 1 ] && [ $v = base ] && extra=("${peers[@]}")
    for cmd in single mixed; do
      echo "== round $round $v $cmd"
      VEBALLOC_PTX_FILE=.devbin/ab/$v.ptx timeout 240 .devbin/veballoc-bench $cmd --iters 5 "${extra[@]}" --out $R/r$round-$v > $R/r$round-$v-$cmd.txt 2>&1
      echo "rc=$?"; grep -E '^\s*(size|[0-9]+|mixed|≤)' $R/r$round-$v-$cmd.txt | head -14
    done
  done
done
echo "== scaling base with gallatin"; VEBALLOC_PTX_FILE=.devbin/ab/base.ptx timeout 200 .devbin/veballoc-bench scaling --iters 3 "${peers[@]}" --out $R/scaling-base > $R/scaling-base.txt 2>&1; echo rc=$?
echo "== scaling f32m48"; VEBALLOC_PTX_FILE=.devbin/ab/f32m48.ptx timeout 150 .devbin/veballoc-bench scaling --iters 3 --out $R/scaling-f32m48 > $R/scaling-f32m48.txt 2>&1; echo rc=$?
tar czf $OUT/ab.tgz -C $OUT ab
