#!/usr/bin/env bash
# Builds the peer-allocator benchmark binaries (Gallatin, CUDA device malloc, Ouroboros) from
# the driver peerbench.cu and the third-party sources in .peers-src/ (git-ignored: never
# committed; .peers-src/PROVENANCE.md says where each file comes from and under which license).
#
# Runs from the repository root, on the GPU machine (carry .peers-src) or on a developer's
# machine with an nvcc (no GPU needed to build):
#   scripts/build-peers.sh                      # nvcc from PATH, else /usr/local/cuda/bin/nvcc
#   NVCC=/path/to/nvcc scripts/build-peers.sh   # a given nvcc
# Other settings (environment): PEERS_SRC (.peers-src), PEERS_OUT (.devbin/peers),
# PEERS_ARCH (sm_90), PEERBENCH (the driver; default PEERS_SRC/peerbench.cu, else
# ../shared/peers/peerbench.cu), PEERS_ONLY (space-separated names to build, e.g. "peer_gallatin").
#
# Output: PEERS_OUT/bin/{peer_gallatin,peer_cuda,peer_ouro_p_s,peer_ouro_c_s} and one compile
# log per binary in PEERS_OUT/logs/. The patches in PEERS_SRC/patches/*.patch (if any) are
# applied, in name order, to a staged copy of the sources (PEERS_OUT/src), never to
# PEERS_SRC itself. A failing compile prints its errors and the build goes on with the next
# binary. Exit status: 1 if peer_gallatin did not build (or the setup failed), 0 otherwise
# (the summary names every binary that did not build).
set -uo pipefail

src=${PEERS_SRC:-.peers-src}
out=${PEERS_OUT:-.devbin/peers}
arch=${PEERS_ARCH:-sm_90}
only=${PEERS_ONLY:-}

die() {
  echo "build-peers: $*" >&2
  exit 1
}

[ -d "$src" ] || die "no $src: it holds the third-party sources (see $src/PROVENANCE.md on a machine that has it)"

if [ -n "${NVCC:-}" ]; then
  nvcc=$NVCC
elif command -v nvcc >/dev/null 2>&1; then
  nvcc=$(command -v nvcc)
elif [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=/usr/local/cuda/bin/nvcc
else
  die "no nvcc: set NVCC=/path/to/nvcc"
fi
[ -x "$nvcc" ] || die "NVCC=$nvcc is not an executable"

driver=${PEERBENCH:-}
if [ -z "$driver" ]; then
  for cand in "$src/peerbench.cu" ../shared/peers/peerbench.cu; do
    if [ -f "$cand" ]; then
      driver=$cand
      break
    fi
  done
fi
[ -n "$driver" ] && [ -f "$driver" ] || die "no peerbench.cu (set PEERBENCH=path)"

# Stage a copy of the sources and apply the patches to it.
stage="$out/src"
rm -rf "$stage"
mkdir -p "$stage" "$out/bin" "$out/logs" || die "cannot create $out"
for d in survey gallatin ouroboros; do
  [ -d "$src/$d" ] && cp -R "$src/$d" "$stage/"
done
cp "$driver" "$stage/peerbench.cu" || die "cannot copy $driver"
for p in "$src"/patches/*.patch; do
  [ -f "$p" ] || continue
  echo "== applying $(basename "$p")"
  patch -p1 -d "$stage" --forward --batch < "$p" || die "patch $(basename "$p") does not apply"
done
for l in "$src"/LICENSE*; do
  [ -f "$l" ] && cp "$l" "$out/"
done

echo "== nvcc: $nvcc"
"$nvcc" --version | tail -2
echo "== driver: $driver ($(sha256sum "$driver" | cut -c1-16))"

common=(-O3 -std=c++17 -arch="$arch" -cudart static -I"$stage/survey/include" -I"$stage/survey/frameworks")
# An nvcc unpacked from the PyPI wheels (nvidia-cuda-nvcc, -crt, -nvvm, -runtime, -cccl) keeps its
# libraries in lib/, while its nvcc.profile only searches lib64/: point the linker at lib/ then.
nvcc_root=$(cd "$(dirname "$nvcc")/.." && pwd)
if [ ! -e "$nvcc_root/lib64" ] && [ -f "$nvcc_root/lib/libcudart_static.a" ]; then
  common+=(-L"$nvcc_root/lib")
fi
# The flags of each binary, as documented at the top of peerbench.cu.
declare -A defs=(
  [peer_gallatin]="-DTEST_GAL"
  [peer_cuda]="-DTEST_CUDA"
  [peer_ouro_p_s]="-DTEST_OUROBOROS -DTEST_PAGES"
  [peer_ouro_c_s]="-DTEST_OUROBOROS -DTEST_CHUNKS"
)
# Include paths (and, for Ouroboros, the two front-end flags of the survey's BaseCMake.cmake
# that its headers need: a constexpr __device__ call from host code, device lambdas).
ouro_flags="-I$stage/survey/frameworks/ouroboros/repository/include --expt-relaxed-constexpr --expt-extended-lambda"
declare -A incs=(
  [peer_gallatin]="-I$stage/gallatin/include"
  [peer_cuda]=""
  [peer_ouro_p_s]="$ouro_flags"
  [peer_ouro_c_s]="$ouro_flags"
)
order=(peer_gallatin peer_cuda peer_ouro_p_s peer_ouro_c_s)

built=()
failed=()
for name in "${order[@]}"; do
  if [ -n "$only" ] && [[ " $only " != *" $name "* ]]; then
    continue
  fi
  log="$out/logs/$name.log"
  # shellcheck disable=SC2206 # the flags are words
  cmd=("$nvcc" "${common[@]}" ${defs[$name]} ${incs[$name]} "$stage/peerbench.cu" -o "$out/bin/$name")
  echo "== $name: ${cmd[*]}"
  rm -f "$out/bin/$name"
  start=$(date +%s)
  "${cmd[@]}" > "$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  warnings=$(grep -c 'warning' "$log")
  if [ "$rc" = 0 ] && [ -x "$out/bin/$name" ]; then
    echo "   built in ${secs}s ($warnings warning lines, see $log)"
    built+=("$name")
  else
    echo "   FAILED (nvcc exit $rc after ${secs}s); errors:"
    grep -E -A3 'error|Error|undefined reference' "$log" | head -60 | sed 's/^/   | /'
    echo "   (full log: $log)"
    failed+=("$name")
  fi
done

echo "== built: ${built[*]:-none}"
echo "== failed: ${failed[*]:-none}"
for f in "${failed[@]}"; do
  [ "$f" = peer_gallatin ] && exit 1
done
exit 0
