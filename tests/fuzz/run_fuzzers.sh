#!/bin/bash
# Runs the libFuzzer targets, one after another, each for SECONDS of wall time with its seed
# corpus, and prints one summary line per target (seconds, CPU seconds, executions, coverage,
# findings) for docs/FUZZING.md.
#
#   tests/fuzz/run_fuzzers.sh TARGET|all SECONDS
#
# TARGET is one of: zip graph_json pickle load_program cache_entry artifact (or the executable's
# name).
# Builds the `fuzz` preset (clang, ASan+UBSan, libFuzzer) in build-fuzz/ if needed. Seeds are
# read from tests/corpus/ and never written: the growing corpus lives in
# build-fuzz/fuzz-work/corpus/TARGET and crashes, timeouts and OOMs land in
# build-fuzz/fuzz-work/findings/TARGET/. A finding becomes a regression input by committing it
# to tests/corpus/fuzz/TARGET/ (replayed by later runs) and to the module's malformed corpus.
#
# Fork mode with one worker (-fork=1) keeps one process busy and goes on after a finding, so
# one crash does not end the run; set FUZZ_EXTRA_ARGS to pass more libFuzzer flags.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

if [ $# -ne 2 ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 TARGET|all SECONDS   (TARGET: zip graph_json pickle load_program cache_entry artifact)" >&2
  exit 2
fi
which=$1
seconds=$2
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
work=$build/fuzz-work
corpus=$root/tests/corpus

# name -> executable and seed directories (regression inputs in tests/corpus/fuzz/NAME too).
exe_of() {
  case $1 in
    zip) echo fuzz_zip_reader ;;
    graph_json) echo fuzz_graph_json ;;
    pickle) echo fuzz_pickle_reader ;;
    load_program) echo fuzz_load_program ;;
    cache_entry) echo fuzz_cache_entry ;;
    artifact) echo artifact_fuzz ;;
    *) return 1 ;;
  esac
}
seeds_of() {
  case $1 in
    zip) echo "$corpus/frontend/seeds/zip $corpus/frontend/malformed $work/model_seeds" ;;
    graph_json) echo "$corpus/frontend/seeds/json" ;;
    pickle) echo "$corpus/frontend/seeds/pickle" ;;
    load_program) echo "$corpus/frontend/seeds/zip $corpus/frontend/malformed $work/model_seeds" ;;
    cache_entry) echo "$corpus/compiler/cache_entry" ;;
    artifact) echo "$corpus/artifact" ;;
  esac
}

all_names="zip graph_json pickle load_program cache_entry artifact"
if [ "$which" = all ]; then
  names=$all_names
else
  names=""
  for n in $all_names; do
    if [ "$which" = "$n" ] || [ "$which" = "$(exe_of "$n")" ]; then names=$n; fi
  done
  if [ -z "$names" ]; then
    echo "$0: unknown target '$which' (expected one of: $all_names, all)" >&2
    exit 2
  fi
fi

# Build what is missing (only the fuzz executables, not the whole test suite).
exes=""
for n in $names; do exes="$exes $(exe_of "$n")"; done
if [ ! -f "$build/build.ninja" ]; then
  cmake --preset fuzz -B "$build" -DNEURONC_WITH_TORCH=OFF
fi
# shellcheck disable=SC2086
cmake --build "$build" --target $exes

# Small committed models (< 64 KiB) seed the archive fuzzers with real, complete programs.
mkdir -p "$work/model_seeds"
for f in "$root"/models/*/model.pt2 "$root"/models/*/model_core.pt2; do
  [ -f "$f" ] || continue
  if [ "$(stat -c %s "$f")" -lt 65536 ]; then
    cp -u "$f" "$work/model_seeds/$(basename "$(dirname "$f")")_$(basename "$f")"
  fi
done

status=0
printf '%-14s %8s %8s %12s %8s %8s %s\n' target seconds cpu_s executions cov ft findings
for n in $names; do
  exe=$build/tests/fuzz/$(exe_of "$n")
  mkdir -p "$work/corpus/$n" "$work/findings/$n" "$work/logs"
  dirs="$work/corpus/$n $(seeds_of "$n")"
  [ -d "$corpus/fuzz/$n" ] && dirs="$dirs $corpus/fuzz/$n"
  log=$work/logs/$n.log
  before=$(find "$work/findings/$n" -type f | wc -l)
  start=$(date +%s)
  # -timeout: a single input taking longer is a hang finding. RSS limit is libFuzzer's default.
  # shellcheck disable=SC2086
  /usr/bin/time -f 'cpu_seconds %U %S' -o "$work/logs/$n.time" \
    "$exe" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$seconds" -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$work/findings/$n/" ${FUZZ_EXTRA_ARGS:-} $dirs >"$log" 2>&1 || status=1
  wall=$(($(date +%s) - start))
  cpu=$(awk '/cpu_seconds/ {printf "%d", $2 + $3}' "$work/logs/$n.time")
  # Fork mode reports "#EXECS: cov: C ft: F corp: ..." lines; the last one is the total.
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true)
  if [ -z "$last" ]; then last=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -1 || true); fi
  execs=$(printf '%s' "$last" | sed -E 's/^#([0-9]+).*/\1/')
  cov=$(printf '%s' "$last" | sed -E 's/.*cov: ([0-9]+).*/\1/')
  ft=$(printf '%s' "$last" | sed -E 's/.*ft: ([0-9]+).*/\1/')
  found=$(($(find "$work/findings/$n" -type f | wc -l) - before))
  printf '%-14s %8s %8s %12s %8s %8s %s\n' "$n" "$wall" "${cpu:-?}" "${execs:-?}" "${cov:-?}" \
    "${ft:-?}" "$found"
  if [ "$found" -gt 0 ]; then
    status=1
    find "$work/findings/$n" -type f | sed 's/^/  /'
  fi
done
exit $status
