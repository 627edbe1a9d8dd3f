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
"$BIN/llc" -mtriple=nvptx64-nvidia-cuda -mcpu="$cpu" -O3 "$work/opt.bc" -o "$work/out.ptx"
# Register caps: a kernel that called `veballoc_kernels::max_registers::<N>()` holds the
# comment `// veballoc.maxnreg N` in its body; its entry gets `.maxnreg N` (the lowest N if
# several), which takes the place of the module's JIT cap for that kernel. Two passes over
# the PTX: find the caps per entry, then write the directive before the entry's body.
awk '
  function entry_name(line) { sub(/^.*\.entry /, "", line); sub(/\(.*$/, "", line); return line }
  FNR == NR {
    if ($0 ~ /^(\.visible |\.weak )?\.entry /) name = entry_name($0)
    else if ($0 ~ /^}/) name = ""
    else if (name != "" && match($0, /veballoc\.maxnreg [0-9]+/)) {
      n = substr($0, RSTART, RLENGTH); sub(/^.* /, "", n); n += 0
      if (!(name in cap) || n < cap[name]) cap[name] = n
    }
    next
  }
  /^(\.visible |\.weak )?\.entry / { pending = entry_name($0) }
  /^{/ && pending != "" { if (pending in cap) print ".maxnreg " cap[pending]; pending = "" }
  { print }
' "$work/out.ptx" "$work/out.ptx" > "$out"
