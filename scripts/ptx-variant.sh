#!/usr/bin/env bash
# Builds veballoc's PTX with extra kernel features (for example `trace`, or `checks`) into a
# file, for A/B runs and profiles on the GPU machine through VEBALLOC_PTX_FILE (the whole
# module: the runtime's kernels and the tests' and benchmarks', feature bench-kernels).
# Usage: scripts/ptx-variant.sh FEATURES OUT.ptx   (FEATURES comma-separated, may be "")
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
features=${1?features (comma-separated, may be empty)}
out=${2:?output .ptx}
sysroot=$(rustc --print sysroot)
llvm_bin="$sysroot/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
cpu=$(sed -n 's/^pub const PTX_TARGET_CPU: &str = "\(.*\)";/\1/p' ptx-build/src/lib.rs)
target_dir="$PWD/target/ptx-variant-${features//,/-}"
(
  cd kernels
  CARGO_ENCODED_RUSTFLAGS=$(printf '%s\x1f%s' "-Ctarget-cpu=$cpu" "-Clinker=$PWD/../ptx-build/nvptx-link.sh") \
  VEBALLOC_LLVM_BIN="$llvm_bin" VEBALLOC_PTX_CPU="$cpu" CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo rustc --release --lib --crate-type cdylib -Zbuild-std=core \
      --target nvptx64-nvidia-cuda --target-dir "$target_dir" --features "panic-handler,bench-kernels${features:+,$features}"
)
cp "$target_dir/nvptx64-nvidia-cuda/release/veballoc_kernels.ptx" "$out"
echo "ptx-variant: $out (features: ${features:-none})"
