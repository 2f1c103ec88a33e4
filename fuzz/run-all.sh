#!/usr/bin/env bash
# Runs every fuzz target (or those named) for FUZZ_SECONDS each (default 600) on the corpus
# seed.sh built, one after another, and prints a line a target: its time, executions, edges
# covered and what it found. Logs go to fuzz/logs/<target>.log, findings to
# fuzz/artifacts/<target>/. Works on the stable toolchain without a sanitizer; set
# FUZZ_SANITIZER=address (with RUSTC_BOOTSTRAP=1) for AddressSanitizer.
set -uo pipefail
fuzz="$(cd "$(dirname "$0")" && pwd)"
cd "$fuzz"
seconds="${FUZZ_SECONDS:-600}"
sanitizer="${FUZZ_SANITIZER:-none}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ir_text schema pt2_archive pt2_model_json fx_text torchscript_text program_archive safetensors filecheck unpickle torchscript_source)
mkdir -p logs
cargo fuzz build --sanitizer "$sanitizer" >/dev/null 2>&1 || { echo "run-all.sh: the fuzz build failed" >&2; exit 1; }
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  cargo fuzz run --sanitizer "$sanitizer" "$t" "corpus/$t" -- \
    -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
    >"logs/$t.log" 2>&1
  status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "logs/$t.log" | tail -1 | grep -o '[0-9]*')
  found=$(ls "artifacts/$t" | wc -l)
  echo "$t: ${seconds} s, ${execs:-?} executions, ${cov:-?} edges, exit $status, $found findings"
done
