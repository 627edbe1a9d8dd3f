#!/usr/bin/env bash
set -euo pipefail
BIN=${VEBALLOC_LLVM_BIN:-$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin}
exports=(); inputs=(); out=""; cpu="sm_80"
while [ $# -gt 0 ]; do
  case "$1" in
    --export-symbol) exports+=("$2"); shift 2;;
    --target-cpu) cpu="$2"; shift 2;;
    --target) shift 2;;
    -o) out="$2"; shift 2;;
    -L) shift 2;;
    -O*|--debug) shift;;
    *) inputs+=("$1"); shift;;
  esac
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
bcs=()
for f in "${inputs[@]}"; do
  case "$f" in
    *.rlib|*.a) d="$work/$(basename "$f")"; mkdir -p "$d"; (cd "$d" && "$BIN/llvm-ar" x "$f");
       for o in "$d"/*; do if [ "$(head -c2 "$o")" = "BC" ]; then bcs+=("$o"); fi; done;;
    *) bcs+=("$f");;
  esac
done
"$BIN/llvm-link" --only-needed=false "${bcs[@]}" -o "$work/linked.bc" 2>/dev/null || "$BIN/llvm-link" "${bcs[@]}" -o "$work/linked.bc"
keep=$(IFS=,; echo "${exports[*]}")
"$BIN/opt" -passes="internalize,globaldce,default<O3>" -internalize-public-api-list="$keep" "$work/linked.bc" -o "$work/opt.bc"
"$BIN/llc" -mtriple=nvptx64-nvidia-cuda -mcpu="$cpu" -O3 "$work/opt.bc" -o "$out"
