#!/usr/bin/env bash
# On the GPU machine: GPU tests, the whole harness, the criterion GPU benches; everything is
# packed into OUT/NAME.tgz (one file, whatever the tool's file limits).
# Usage: scripts/device-full.sh OUT NAME [harness args, default: all --iters 5]
# With the peers' binaries in .devbin/peers/bin (scripts/device-bundle.sh copies them), the
# harness runs them too (--peers .devbin/peers) unless the arguments name --peers.
set -uo pipefail
out=$1; name=$2; shift 2
[ $# -gt 0 ] || set -- all --iters 5
if [ -d .devbin/peers/bin ] && ! printf '%s\n' "$@" | grep -qE '^--peers(=|$)'; then
  set -- "$@" --peers .devbin/peers
fi
dir=$out/$name
scripts/device-run.sh "$dir" "$@"
echo "== criterion (host paths, GPU benches included)"
CRITERION_HOME=$dir/criterion timeout 200 .devbin/criterion-host --bench --warm-up-time 1 --measurement-time 3 2>&1 \
  | grep -vE "^\s*$" | tee "$dir/criterion.txt" | grep -E "time:|^[a-z_0-9/]+" | head -30
tar czf "$out/$name.tgz" -C "$out" "$name"
