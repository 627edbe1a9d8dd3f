set -uo pipefail
R=/tmp/res; mkdir -p $R
cp /dev/null $R/x 2>/dev/null
scripts/device-ab.sh $R pending 3 .devbin/ab/old.ptx .devbin/veballoc.ptx 2>&1 | tail -60
tar czf $OUT/pending.tgz -C $R pending
