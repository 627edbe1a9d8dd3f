#!/usr/bin/env bash
# Installs what building and testing veballoc needs, from the package registries only:
#  - the pinned nightly (rust-toolchain.toml) with rust-src and llvm-tools (for the PTX build);
#  - CUDA's cuda.h (PyPI wheel nvidia-cuda-runtime-cu12) and, where no CUDA driver library is
#    installed, a stub libcuda.so (soname libcuda.so.1) generated from it, so that cust links;
#  - ptxas (PyPI wheel nvidia-cuda-nvcc-cu12), so that tests can check the PTX assembles.
# Idempotent: a second run does nothing. Everything lands in .deps/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS=$ROOT/.deps
CUDA_WHEEL_VERSION=12.9.79
NVCC_WHEEL_VERSION=12.9.86

channel=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
if ! rustup run "$channel" rustc --version >/dev/null 2>&1 \
   || [ ! -d "$(rustup run "$channel" rustc --print sysroot)/lib/rustlib/src/rust/library/core" ] \
   || [ ! -x "$(rustup run "$channel" rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin/llvm-link" ]; then
  echo "setup: installing Rust $channel with rust-src, llvm-tools, clippy, rustfmt"
  rustup toolchain install "$channel" --profile minimal --component rust-src,llvm-tools,clippy,rustfmt
fi

mkdir -p "$DEPS/wheels" "$DEPS/cuda/include" "$DEPS/cuda/lib64" "$DEPS/cuda/bin"

fetch_wheel() { # name version -> path of the wheel
  local name=$1 version=$2
  local found
  found=$(ls "$DEPS/wheels/${name//-/_}-$version-"*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$found" ]; then
    echo "setup: downloading $name==$version" >&2
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
      -d "$DEPS/wheels" "$name==$version" >&2
    found=$(ls "$DEPS/wheels/${name//-/_}-$version-"*.whl | head -n1)
  fi
  echo "$found"
}

unzip_member() { # wheel member-prefix destdir
  python3 - "$1" "$2" "$3" <<'PY'
import sys, zipfile, os
whl, prefix, dest = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    for m in z.namelist():
        if m.startswith(prefix) and not m.endswith('/'):
            out = os.path.join(dest, m[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(m) as src, open(out, 'wb') as dst:
                dst.write(src.read())
PY
}

if [ ! -f "$DEPS/cuda/include/cuda.h" ]; then
  whl=$(fetch_wheel nvidia-cuda-runtime-cu12 "$CUDA_WHEEL_VERSION")
  unzip_member "$whl" nvidia/cuda_runtime/include/ "$DEPS/cuda/include"
fi

if [ ! -x "$DEPS/cuda/bin/ptxas" ]; then
  whl=$(fetch_wheel nvidia-cuda-nvcc-cu12 "$NVCC_WHEEL_VERSION")
  python3 - "$whl" "$DEPS/cuda/bin/ptxas" <<'PY'
import sys, zipfile, os
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], 'wb') as f:
    f.write(z.read('nvidia/cuda_nvcc/bin/ptxas'))
os.chmod(sys.argv[2], 0o755)
PY
fi

# The stub driver: every cu* entry point of cuda.h (and of cust's bindings) returns
# CUDA_ERROR_NO_DEVICE, so that a binary linked against it starts and reports "no GPU".
# At run time a real driver (libcuda.so.1 on the library path) takes its place.
if [ ! -f "$DEPS/cuda/lib64/libcuda.so" ]; then
  echo "setup: generating the stub libcuda.so"
  cargo fetch --quiet
  syms=$(mktemp)
  gcc -E -P -x c "$DEPS/cuda/include/cuda.h" | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' (' > "$syms"
  raw=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path '*cust_raw-*/src/cuda.rs' 2>/dev/null | head -n1 || true)
  if [ -n "$raw" ]; then grep -oE 'pub fn cu[A-Za-z0-9_]+' "$raw" | sed 's/pub fn //' >> "$syms"; fi
  sort -u "$syms" | awk '{ printf "int %s(void) { return 100; }\n", $1 }' > "$DEPS/cuda/stub.c"
  gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$DEPS/cuda/lib64/libcuda.so" "$DEPS/cuda/stub.c"
  ln -sf libcuda.so "$DEPS/cuda/lib64/libcuda.so.1"
  rm -f "$syms"
fi
echo "setup: ok ($channel; CUDA header, stub driver and ptxas in .deps/cuda)"
