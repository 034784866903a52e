#!/usr/bin/env bash
# Shape buckets (issue 16): what one artifact for every shape costs against an artifact per
# shape. Compiles models/bert_dynamic (batch [1, 16] x seq [8, 128]) once into its default
# buckets and once per listed shape on its own, benches each shape both ways on trn1
# (`neuronc bench --dim`), and writes bench/results/buckets.md: compile time and artifact size,
# and per shape the bucket that ran and the simulated device time padded against exact.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
NEURONC="${NEURONC:-$ROOT/build/tools/neuronc}"
OUT="${OUT:-$ROOT/bench/results/buckets.md}"
MODEL="${MODEL:-$ROOT/models/bert_dynamic/model.pt2}"
SHAPES="${SHAPES:-1x8 2x16 3x40 4x64 5x100 9x65 16x128}"
[[ -x "$NEURONC" ]] || { echo "buckets.sh: build neuronc first ($NEURONC)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
field() { python3 -c "import json,sys; j=json.load(open('$1')); print($2)"; }

"$NEURONC" compile "$MODEL" -o "$tmp/buckets.nca" --json >"$tmp/compile.json"
entries=$(field "$tmp/compile.json" "len(j['buckets']) and __import__('math').prod(len(b['values']) for b in j['buckets'])")
bucket_s=$(field "$tmp/compile.json" "round(sum(j['seconds'].values()), 2)")
bucket_mb=$(field "$tmp/compile.json" "round(j['artifact_bytes'] / 1e6, 2)")
padding=$(field "$tmp/compile.json" "', '.join(b['symbol'] + ': ' + b['padding'] + ' ' + str(b['values']) for b in j['buckets'])")
rows=""
for shape in $SHAPES; do
  b="${shape%x*}" s="${shape#*x}"
  echo "[$shape]" >&2
  "$NEURONC" bench "$tmp/buckets.nca" --dim s43="$b" --dim s53="$s" -n 3 --json >"$tmp/b.json"
  "$NEURONC" compile "$MODEL" --dim s43="$b" --dim s53="$s" -o "$tmp/exact.nca" --json >"$tmp/e.json"
  "$NEURONC" bench "$tmp/exact.nca" -n 3 --json >"$tmp/x.json"
  entry=$(field "$tmp/b.json" "j['entry']")
  padded=$(field "$tmp/b.json" "round(j['simulated_latency_us']['device'], 1)")
  exact=$(field "$tmp/x.json" "round(j['simulated_latency_us']['device'], 1)")
  ratio=$(python3 -c "print(f'{$padded / $exact:.2f}')")
  exact_s=$(field "$tmp/e.json" "round(sum(j['seconds'].values()), 2)")
  exact_mb=$(field "$tmp/e.json" "round(j['artifact_bytes'] / 1e6, 2)")
  rows+="| $b × $s | \`$entry\` | $padded | $exact | ${ratio}× | $exact_s | $exact_mb |"$'\n'
done

{
  echo "# Shape buckets: one artifact for every shape against one artifact per shape"
  echo
  echo "Measured $(date -u +%Y-%m-%d) at commit $(git -C "$ROOT" rev-parse --short HEAD) by \`bench/buckets.sh\`:"
  echo "\`models/bert_dynamic\` (transformers BertModel, 2 layers, hidden 64, batch [1, 16] x seq [8, 128]),"
  echo "trn1, \`--auto-cast none\`, simulated device time of \`neuronc bench\` (deterministic; the"
  echo "host ops' measured wall time, a few µs of noise on this machine, is left out). The bucketed artifact: $entries entries ($padding), compiled in"
  echo "$bucket_s s, $bucket_mb MB. Padded: the shape run in the bucket \`Session::run\` picks; exact: the"
  echo "same shape compiled on its own (\`--dim\`). The padding costs what the bucket's extra rows"
  echo "cost; a finer \`--buckets\` grid trades entries (compile time, artifact size) for less of it."
  echo
  echo "| shape (batch × seq) | bucket run | padded device µs | exact device µs | padded / exact | exact compile s | exact artifact MB |"
  echo "|---|---|---|---|---|---|---|"
  printf "%s" "$rows"
} >"$OUT"
echo "wrote $OUT" >&2
