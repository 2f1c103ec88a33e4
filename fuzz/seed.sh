#!/usr/bin/env bash
# Builds the seed corpus of every fuzz target under fuzz/corpus/<target>/ from the project's lit
# tests and examples and from the PyTorch-made corpus in ../shared (run from anywhere; needs a
# release build of dialect-opt for the program-archive seeds).
set -euo pipefail
fuzz="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$fuzz")"
shared="$root/../shared"
corpus="$fuzz/corpus"
[ -d "$shared/fixtures" ] || { echo "seed.sh: $shared/fixtures is absent" >&2; exit 1; }
mkdir -p "$corpus"/{ir_text,schema,pt2_archive,pt2_model_json,fx_text,torchscript_text,program_archive,safetensors,filecheck,unpickle,torchscript_source}

n=0
for f in $(find "$root/lit" "$root/examples" -name '*.ir' -not -path '*/filecheck/*'); do
  n=$((n + 1)); cp "$f" "$corpus/ir_text/$n.ir"
done

# One schema a file; the registry has a few thousand.
grep -v '^#' "$shared/fixtures/aten_schemas.txt" | sed 's/^core //; s/^ *//' | split -l 1 -a 4 - "$corpus/schema/s"

n=0
for f in $(find "$shared/fixtures/export" "$shared/fixtures/bench" "$root/examples" "$root/tests/data" -name '*.pt2' -size -300k); do
  n=$((n + 1)); cp "$f" "$corpus/pt2_archive/$n.pt2"
  unzip -p "$f" '*/models/model.json' > "$corpus/pt2_model_json/$n.json" 2>/dev/null || rm -f "$corpus/pt2_model_json/$n.json"
done

n=0
for f in $(find "$shared/fixtures" -name '*.fx.txt'); do n=$((n + 1)); cp "$f" "$corpus/fx_text/$n.fx.txt"; done
n=0
for f in $(find "$shared/fixtures" -name '*.graph.txt'); do n=$((n + 1)); cp "$f" "$corpus/torchscript_text/$n.graph.txt"; done
n=0
for f in $(find "$shared/fixtures/export" "$shared/fixtures/torchscript" "$root/examples" -name '*.safetensors' -size -100k); do
  n=$((n + 1)); cp "$f" "$corpus/safetensors/$n.safetensors"
done

# The pickles of the TorchScript archives: module state, constants, debug tables, traced inputs.
n=0
for f in $(find "$shared/fixtures/torchscript_pt" -name '*.pt'); do
  for e in $(unzip -Z1 "$f" | grep -E '\.pkl$|\.debug_pkl$'); do
    n=$((n + 1)); unzip -p "$f" "$e" > "$corpus/unpickle/$n.pkl"
  done
done

opt="$root/target/release/dialect-opt"
n=0
for f in $(find "$shared/fixtures/export" -name 'model.pt2'); do
  n=$((n + 1)); "$opt" "$f" --emit-archive "$corpus/program_archive/$n.dar" -o /dev/null
done

# FileCheck: each recorded case's check file and input, joined by the NUL the target splits at.
n=0
for d in "$root"/crates/filecheck/tests/data/recorded/*/; do
  [ -f "$d/check.txt" ] && [ -f "$d/input.txt" ] || continue
  n=$((n + 1)); { cat "$d/check.txt"; printf '\0'; cat "$d/input.txt"; } > "$corpus/filecheck/$n.txt"
done

for t in "$corpus"/*/; do echo "$(basename "$t"): $(ls "$t" | wc -l) seeds"; done

# TorchScript sources: every `code/` file of the archive fixtures, and each with its first class
# renamed `M` so that it is the root module of the archive the oracle builds.
n=0
for f in $(find "$shared/fixtures/torchscript_pt" -name model.pt); do
  for e in $(unzip -Z1 "$f" | grep '/code/.*\.py$'); do
    n=$((n + 1))
    unzip -p "$f" "$e" > "$corpus/torchscript_source/$n.py"
    sed '0,/^class [A-Za-z_0-9]*(/s//class M(/' "$corpus/torchscript_source/$n.py" > "$corpus/torchscript_source/$n.m.py"
  done
done
