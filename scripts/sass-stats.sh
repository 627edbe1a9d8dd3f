#!/usr/bin/env bash
# SASS of veballoc's kernels without a GPU: ptxas (sm_90, at the benchmark's JIT register cap)
# and nvdisasm, then per kernel its instructions, local loads and stores (spills), moves of
# convergence-barrier state (BMOV), shared-memory atomics (ATOMS) and calls, and ptxas's own
# stack and spill report. ptxas 12.9 here gave the driver JIT's SASS address for address on the
# H200 and H100 (r46: compared with ncu's source page), so a codegen question can be read
# before a GPU call. The counts are the whole kernel's (its rare paths too); for the hot path,
# keep the listings (SASS_KEEP) and read them beside an ncu source page (scripts/ncu-stalls.py):
# r46 found 16 B's slowdown as 39 BMOV against 23 before the kernel's first returns.
#
# Usage: scripts/sass-stats.sh A.ptx [B.ptx ...]      (scripts/ptx-variant.sh makes them)
# Env:   PTXAS     (default .deps/cuda/bin/ptxas from scripts/setup.sh, else ptxas on PATH)
#        NVDISASM  (default .deps/nvdisasm/nvdisasm: fetched from PyPI's nvidia-cuda-nvdisasm
#                   wheel on first use, the one download this script makes)
#        SASS_KERNELS (default "vb_malloc vb_free"), SASS_MAXREG (default 128)
#        SASS_KEEP=DIR keeps each kernel's SASS listing there (NAME-KERNEL.sass)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,17p' "$0"; exit 2; }
DEPS=$PWD/.deps
NVDISASM_WHEEL_VERSION=13.5.37
ptxas=${PTXAS:-}
if [ -z "$ptxas" ]; then
  if [ -x "$DEPS/cuda/bin/ptxas" ]; then ptxas=$DEPS/cuda/bin/ptxas; else ptxas=$(command -v ptxas || true); fi
fi
[ -n "$ptxas" ] || { echo "sass-stats: no ptxas (run scripts/setup.sh, or set PTXAS)" >&2; exit 1; }
nvdisasm=${NVDISASM:-$DEPS/nvdisasm/nvdisasm}
if [ ! -x "$nvdisasm" ]; then
  mkdir -p "$DEPS/wheels" "$DEPS/nvdisasm"
  echo "sass-stats: downloading nvidia-cuda-nvdisasm==$NVDISASM_WHEEL_VERSION" >&2
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$DEPS/wheels" "nvidia-cuda-nvdisasm==$NVDISASM_WHEEL_VERSION" >&2
  python3 - "$DEPS/wheels" "$nvdisasm" <<'PY'
import glob, os, sys, zipfile
whl = sorted(glob.glob(os.path.join(sys.argv[1], "nvidia_cuda_nvdisasm-*.whl")))[-1]
with zipfile.ZipFile(whl) as z:
    member = next(m for m in z.namelist() if m.endswith("/bin/nvdisasm"))
    with open(sys.argv[2], "wb") as f:
        f.write(z.read(member))
os.chmod(sys.argv[2], 0o755)
PY
fi
kernels=${SASS_KERNELS:-vb_malloc vb_free}
maxreg=${SASS_MAXREG:-128}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-28s %-10s %7s %5s %5s %5s %5s %5s  %s\n' ptx kernel instrs STL LDL BMOV ATOMS CALL "ptxas: stack, spills"
for ptx in "$@"; do
  name=$(basename "$ptx" .ptx)
  "$ptxas" -arch=sm_90 -v --maxrregcount="$maxreg" "$ptx" -o "$work/$name.cubin" 2> "$work/$name.v"
  "$nvdisasm" -c "$work/$name.cubin" 2>/dev/null > "$work/$name.sass"
  for k in $kernels; do
    # The kernel's section runs from its .text label to the next section's.
    awk -v k="$k" '$0 ~ "\\.text\\."k":" {f=1; next} f && /\.text\./ {f=0} f' "$work/$name.sass" > "$work/$name-$k.sass"
    [ -n "${SASS_KEEP:-}" ] && mkdir -p "$SASS_KEEP" && cp "$work/$name-$k.sass" "$SASS_KEEP/"
    count() { grep -c -E "$1" "$work/$name-$k.sass" || true; }
    report=$(grep -A1 "Function properties for $k\$" "$work/$name.v" | tail -1 | sed 's/^ *//')
    printf '%-28s %-10s %7s %5s %5s %5s %5s %5s  %s\n' "$name" "$k" "$(count '/\*[0-9a-f]{4,}\*/ ')" \
      "$(count '\bSTL')" "$(count '\bLDL')" "$(count '\bBMOV')" "$(count '\bATOMS')" "$(count '\bCALL')" "$report"
  done
done
