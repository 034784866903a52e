#!/usr/bin/env bash
# The example model server under load (issue 20): runs examples/server's load test in report mode
# on loopback for each model and writes bench/results/server.md: throughput, P50/P99 wall
# latency as the clients see it, the simulated device latency of the run that answered, errors,
# and the server's VmRSS after the warm-up and at the end.
#
#   bench/server.sh     # mlp (fixed batch: sequential), dynamic_batch (concat, and forced sequential)
#   BUILD=build-ci CLIENTS=64 REQUESTS=20000 bench/server.sh
#
# Needs a build with the server (BUILD, default build: neuronc, neuronc-server, server_load_test).
# Wall latency and throughput depend on the machine and its load; the device columns do not.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
OUT="${OUT:-$ROOT/bench/results/server.md}"
# MODEL[@sequential]: the suffix serves it with --batching sequential, for comparison.
MODELS="${MODELS:-mlp dynamic_batch dynamic_batch@sequential}"
CLIENTS="${CLIENTS:-64}"
REQUESTS="${REQUESTS:-20000}"
THREADS="${THREADS:-2}"
MAX_BATCH="${MAX_BATCH:-8}"
MAX_DELAY_MS="${MAX_DELAY_MS:-2}"
NEURONC="$BUILD/tools/neuronc"
SERVER="$BUILD/examples/server/neuronc-server"
LOAD="$BUILD/examples/server/server_load_test"
for b in "$NEURONC" "$SERVER" "$LOAD"; do
  [[ -x "$b" ]] || { echo "server.sh: build $(basename "$b") first ($b)" >&2; exit 2; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
rows=""
for spec in $MODELS; do
  m="${spec%@*}"
  batching=auto
  [[ "$spec" == *@sequential ]] && batching=sequential
  echo "[$spec] compile" >&2
  "$NEURONC" compile "$ROOT/models/$m/model.pt2" -o "$tmp/$m.nca" --target trn1 >/dev/null
  echo "[$spec] load" >&2
  start=$(date +%s.%N)
  rows+=$("$LOAD" --server "$SERVER" --model "$tmp/$m.nca" --name "$m" --clients "$CLIENTS" \
    --requests "$REQUESTS" --report --server-arg=--batching --server-arg="$batching" \
    --server-arg=--threads --server-arg="$THREADS" \
    --server-arg=--max-batch --server-arg="$MAX_BATCH" \
    --server-arg=--max-delay-ms --server-arg="$MAX_DELAY_MS")$'\n'
  echo "[$spec] $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" >&2
done

commit=$(git -C "$ROOT" rev-parse --short HEAD)
dirty=$(git -C "$ROOT" diff --quiet HEAD -- examples loader kernels device artifact_format || echo " (with uncommitted changes)")
{
  echo "# Model server under load"
  echo
  echo "Measured $(date +%F) at commit $commit$dirty by \`bench/server.sh\` on $(nproc) cores"
  echo "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')): \`neuronc-server\`"
  echo "with \`--threads $THREADS --max-batch $MAX_BATCH --max-delay-ms $MAX_DELAY_MS\`, driven by"
  echo "\`server_load_test\` over loopback from the same machine: $CLIENTS keep-alive clients,"
  echo "$REQUESTS predictions (the first 2,000 a warm-up, left out of the throughput), JSON and"
  echo "\`.npy\` in turn over six distinct inputs, every response compared bit for bit with a local"
  echo "Session's single run, malformed requests sent alongside. trn1 artifacts."
  echo
  echo "- throughput: predictions per second after the warm-up; P50/P99: wall time per request as"
  echo "  the client sees it (connection, queue, run, encoding), over all requests;"
  echo "- device µs / latency µs: \`RunStats::device_ns\` / \`latency_ns\` of the run that answered,"
  echo "  averaged over responses (in a concatenated batch that run is the batch's: its rows share it);"
  echo "- device µs / request: the server's summed device time of its runs over the predictions"
  echo "  answered (what batching saves); mean batch: requests per batch, from \`/v1/metrics\`;"
  echo "- errors: wrong or failed predictions; malformed: wrong answers / malformed requests sent;"
  echo "- RSS: the server's VmRSS (kB) after the warm-up and at the end."
  echo
  echo "models/mlp takes a fixed batch of 4 rows, so its requests run back to back; models/dynamic_batch"
  echo "has a symbolic batch dim in [1, 64] compiled into padded buckets, and the load test's requests"
  echo "have 1, 2 or 3 rows: concatenated up to 8 rows, the device time per request falls against the"
  echo "same model served with \`--batching sequential\` (last row), while the wall-clock columns are"
  echo "bound by HTTP and JSON on two cores shared by 64 client threads."
  echo
  echo "| model | batching | clients | requests | throughput req/s | P50 ms | P99 ms | device µs | latency µs | device µs / request | mean batch | errors | malformed wrong / sent | RSS warm kB | RSS end kB |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  printf "%s" "$rows"
} >"$OUT"
echo "wrote $OUT" >&2
