# r48 call i (H100): the review's open risk: on heaps below about 8 GiB the rows of 1 MiB blocks
# have one slot, and 144 B-2 KiB now take runs of up to a whole segment. util and churn
# (50% / 70% live) on a 1 GiB heap, head (56cc0f3f) against prev (67a59f66's kernels).
R=/tmp/r48-i; source scripts/device-prelude.sh
warm head prev
for v in head prev; do
  export VEBALLOC_PTX_FILE=.devbin/var/$v.ptx
  timeout 60 $B util --heap-gib 1 --allocators veballoc --out $R/util-$v > $R/util-$v.txt 2>&1; echo "util $v rc=$?"
  for live in 0.5 0.7; do
    timeout 60 $B churn --heap-gib 1 --churn-rounds 20 --churn-live $live --out $R/churn-$v-$live > $R/churn-$v-$live.txt 2>&1; echo "churn $v $live rc=$?"
    grep -a "churn:" $R/churn-$v-$live.txt | tail -1
  done
  unset VEBALLOC_PTX_FILE
  pack
done
echo "done $(date +%T)"
