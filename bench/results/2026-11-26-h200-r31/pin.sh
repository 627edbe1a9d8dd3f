set -uo pipefail
# r31 call L (26a0173, final): fewer current slots per row (VEBALLOC_PIN_SHIFT 3 = default, 5,
# 6: 1/4 and 1/8 of the slots, 16 B rows 64 and 32 slots) -- does sharing slots between
# multiprocessors bring frag at 16-64 B under 1.3, and what does it cost? Exploratory.
R=/tmp/r31-pin; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $R/device.txt; date -u +%FT%TZ | tee -a $R/device.txt
for pin in 3 5 6; do
  VEBALLOC_PIN_SHIFT=$pin timeout 90 .devbin/veballoc-bench frag --sizes 16,24,32,48,64 --allocators veballoc --out $R/frag-$pin > $R/frag-$pin.txt 2>&1 || echo "exit $? frag $pin"
  echo "pin $pin frag: $(grep -a '|' $R/frag-$pin.txt | grep -a 'x,' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{printf "%s:%s ", $1, $2}' | tr -s ' ')"
  for cmd in single mixed; do VEBALLOC_PIN_SHIFT=$pin timeout 60 .devbin/veballoc-bench $cmd --sizes 16,32,64,256,4096 --allocators veballoc --iters 5 --out $R/$cmd-$pin > $R/$cmd-$pin.txt 2>&1 || echo "exit $? $cmd $pin"; done
  echo "pin $pin alloc/free: $(grep -a '|' $R/single-$pin.txt $R/mixed-$pin.txt | grep -av 'size\|GPU' | tr -d '\r' | sed 's/.*\.\.\. *//' | awk -F'|' '{printf "%s:%s ", $1, $2}' | tr -s ' ')"
done
tar czf $OUT/r31-pin.tgz -C $R .
