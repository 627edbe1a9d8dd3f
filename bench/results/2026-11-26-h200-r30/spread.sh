set -uo pipefail
# r30 call M: installers spread over the lowest words of a segment (groups of 64 and 128 KiB
# blocks; uncommitted, on 5d361a9) against b169177 (.devbin/base5): single and mixed at 2^20
# threads, scaling, frag round 0, base and new in turn, two rounds for single/mixed.
R=/tmp/r30-spread; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
for round in 1 2; do for v in base new; do
  if [ $v = base ]; then b=.devbin/base5/veballoc-bench; p=.devbin/base5/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v-$round > $R/ab-$v-$round-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
done; done
for v in base new; do
  if [ $v = base ]; then b=.devbin/base5/veballoc-bench; p=.devbin/base5/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  VEBALLOC_PTX_FILE=$PWD/$p timeout 120 $b scaling --sizes 16,64 --allocators veballoc --iters 5 --out $R/sc-$v > $R/sc-$v.txt 2>&1 || echo "exit $? $v scaling"
  VEBALLOC_PTX_FILE=$PWD/$p timeout 90 $b frag --sizes 16,24,32,48,64 --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1 || echo "exit $? $v frag"
done
paste <(grep -a '|' $R/frag-base.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -8 | cut -c1-50) <(grep -a '|' $R/frag-new.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -8 | cut -d'|' -f2)
for f in $R/ab-*-*.txt $R/sc-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-18s %-16s %s\n", $1, t, $2 }'
done | sort -s -k1,1V -k2,2n
tar czf $OUT/r30-spread.tgz -C $R .
