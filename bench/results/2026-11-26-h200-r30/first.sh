set -uo pipefail
# r30 call G: a first run of two blocks per slot (uncommitted, on c0b2fed) against d77a1e8 (.devbin/base2):
# frag (round 0) of both, single and mixed at 2^20 threads and scaling, base and new in turn.
R=/tmp/r30-first; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for v in base new; do
  if [ $v = base ]; then b=.devbin/base2/veballoc-bench; p=.devbin/base2/veballoc.ptx; else b=.devbin/veballoc-bench; p=.devbin/veballoc.ptx; fi
  VEBALLOC_PTX_FILE=$PWD/$p timeout 90 $b frag --allocators veballoc --out $R/frag-$v > $R/frag-$v.txt 2>&1 || echo "exit $? $v frag"
  for cmd in single mixed; do VEBALLOC_PTX_FILE=$PWD/$p timeout 60 $b $cmd --allocators veballoc --iters 5 --out $R/ab-$v > $R/ab-$v-$cmd.txt 2>&1 || echo "exit $? $v $cmd"; done
  VEBALLOC_PTX_FILE=$PWD/$p timeout 120 $b scaling --allocators veballoc --iters 5 --out $R/sc-$v > $R/sc-$v.txt 2>&1 || echo "exit $? $v scaling"
done
paste <(grep -a '|' $R/frag-base.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | cut -c1-50) <(grep -a '|' $R/frag-new.txt | tr -d '\r' | sed 's/.*\.\.\. *//' | tail -21 | cut -d'|' -f2)
for f in $R/ab-*-*.txt $R/sc-*.txt; do
  grep -a '|' $f | grep -av 'size\|^GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' -v t=$(basename $f .txt) '{ printf "%-18s %-14s %s\n", $1, t, $2 }'
done | sort -s -k1,1V -k2,2n
timeout 120 .devbin/veballoc-bench util --allocators veballoc --out $R/util > $R/util.txt 2>&1; echo "util rc=$?"
grep -a -o '[0-9-]* |  *[0-9]*  *[0-9]* |  *[0-9]*  *[0-9.]*% |  *[0-9.]*%.*' $R/util.txt | tr -s ' '
for live in 0.5 0.7; do timeout 40 .devbin/veballoc-bench churn --churn-rounds 20 --churn-live $live --out $R/churn-$live > $R/churn-$live.txt 2>&1; echo "churn $live: $(grep -a 'null' $R/churn-$live.txt | tail -2 | head -1)"; done
tar czf $OUT/r30-first.tgz -C $R .
