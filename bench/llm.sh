#!/usr/bin/env bash
# LLM serving on the device model (issue 17): compiles each models/llm export directory (its
# prefill and decode programs as one artifact) for trn1 / trn2 / trn3, generates with it
# (`neuronc generate`: the reference prompt, transformers' greedy tokens compared) and benches
# generation (`neuronc bench --generate`), then writes bench/results/llm.md.
#
# These are the tiny random models the tests use (hidden 32, 2 layers): their figures show
# what the serving path measures and where its time goes, not a full-size model's latency.
#
# Full-size rows: FULLSIZE="DIR ..." names weights-free exports (export_causal_lm.py --meta of
# a config.json, e.g. models/llm_configs/*), compiled to timing-only artifacts with
# --auto-cast matmul for FULLSIZE_TARGETS (default trn1) on one NeuronCore (no tensor
# parallelism yet) and benched with --prompt-len 128 --new-tokens 64; each row shows the decode
# step beside the one-core weight-streaming floor (weight bytes / the core's DMA rate).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
NEURONC="${NEURONC:-$ROOT/build/tools/neuronc}"
OUT="${OUT:-$ROOT/bench/results/llm.md}"
TARGETS="${TARGETS:-trn1 trn2 trn3}"
ITERATIONS="${ITERATIONS:-5}"
[[ -x "$NEURONC" ]] || { echo "llm.sh: build neuronc first ($NEURONC)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
FULLSIZE="${FULLSIZE:-}"
FULLSIZE_TARGETS="${FULLSIZE_TARGETS:-trn1}"
for dir in $FULLSIZE; do
  m="$(basename "$dir")"
  for t in $FULLSIZE_TARGETS; do
    echo "[$m, weights-free] $t" >&2
    "$NEURONC" compile "$dir" -o "$tmp/full.$m.$t.nca" --target "$t" --auto-cast matmul \
      --json > "$tmp/full.$m.$t.compile.json"
    "$NEURONC" inspect "$tmp/full.$m.$t.nca" --json > "$tmp/full.$m.$t.inspect.json"
    "$NEURONC" bench "$tmp/full.$m.$t.nca" --generate --prompt-len 128 --new-tokens 64 \
      --iterations 1 --json > "$tmp/full.$m.$t.bench.json"
    cp "$dir/manifest.json" "$tmp/full.$m.manifest.json"
  done
done
for dir in "$ROOT"/models/llm/*/; do
  m="$(basename "$dir")"
  for t in $TARGETS; do
    echo "[$m] $t" >&2
    "$NEURONC" compile "$dir" -o "$tmp/$m.$t.nca" --target "$t" > /dev/null
    "$NEURONC" generate "$tmp/$m.$t.nca" --input-ids "$dir/reference/prompt.npy" \
      --max-new-tokens 64 -o "$tmp/$m.$t.tokens.npy" --json > "$tmp/$m.$t.generate.json"
    "$NEURONC" bench "$tmp/$m.$t.nca" --generate --prompt-len 12 --new-tokens 64 \
      --iterations "$ITERATIONS" --json > "$tmp/$m.$t.bench.json"
  done
done
commit="$(git -C "$ROOT" rev-parse --short HEAD)"
python3 - "$tmp" "$OUT" "$commit" "$ROOT" "$ITERATIONS" $TARGETS <<'EOF'
import datetime, glob, json, os, struct, sys

tmp, out, commit, root, iterations = sys.argv[1:6]
targets = sys.argv[6:]

full = []
for path in sorted(glob.glob(os.path.join(tmp, "full.*.bench.json"))):
    _, m, t, _, _ = os.path.basename(path).split(".")
    b = json.load(open(path))
    i = json.load(open(os.path.join(tmp, f"full.{m}.{t}.inspect.json")))
    c = json.load(open(os.path.join(tmp, f"full.{m}.{t}.compile.json")))
    man = json.load(open(os.path.join(tmp, f"full.{m}.manifest.json")))
    weights = i["absent_constant_bytes"]
    full.append((m, t, man, weights, b, c, i))

def tokens(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<H", raw[8:10])[0]
    data = raw[10 + n:]
    return list(struct.unpack("<%dq" % (len(data) // 8), data))

rows = []
for m in sorted(os.listdir(os.path.join(root, "models", "llm"))):
    ref = tokens(os.path.join(root, "models", "llm", m, "reference", "tokens.npy"))
    for t in targets:
        g = json.load(open(os.path.join(tmp, f"{m}.{t}.generate.json")))
        b = json.load(open(os.path.join(tmp, f"{m}.{t}.bench.json")))
        got = g["tokens"][0]
        same = sum(1 for a, c in zip(got, ref) if a == c)
        steps = [s for s in g["steps"] if s["kind"] == "decode"]
        host = sum(s["host_ops_us"] for s in steps) / max(len(steps), 1)
        device = sum(s["device_us"] for s in steps) / max(len(steps), 1)
        tps = b["output_tokens_per_s"]
        cost = b["cost_per_million_output_tokens_usd"]
        per_instance = ("%.0f (%s)" % (tps["per_instance"], tps["instance"])
                        if tps["per_instance"] is not None else "— (no instance for %s)" % t)
        rows.append("| %s | %s | %d / %d | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s |" % (
            m, t, same, len(ref), b["ttft_us"]["p50"], b["tpot_us"]["p50"], b["tpot_us"]["p99"],
            device, host, per_instance, ("%.4f" % cost) if cost is not None else "— (no price)"))
def full_section():
    if not full:
        return ""
    lines = ["## Full-size models, weights-free, one NeuronCore", "",
             "Timing-only artifacts of `export_causal_lm.py --meta` exports (`--max-seq 1024 "
             "--prefill-buckets 128`), `--auto-cast matmul`, on one NeuronCore: tensor "
             "parallelism is not there yet, so these are not comparable with AWS's TP 32 figures "
             "(TRAINIUM.md §6.2). TTFT is the 128-token prefill; TPOT a decode step (the same at "
             "every position: attention reads the whole cache). The floor is the weight bytes "
             "over the core's DMA ceiling (its engines at the DMABW rate), which a decode step "
             "cannot beat on one core; host ops (the int64 input conversions) are not run in a "
             "timing-only bench.", "",
             "| model | target | weights GB | compile s | TTFT P50 ms | TPOT P50 ms | one-core "
             "weight-streaming floor ms | TPOT / floor | decode engine utilisation (tensor / "
             "vector / scalar) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for m, t, man, weights, b, c, i in full:
        floor = weights / b["peaks"]["dma_bytes_per_s"] * 1e3
        u = b["decode_engine_utilization"]
        tpot = b["tpot_us"]["p50"] / 1e3
        lines.append("| %s (%s, %d layers, hidden %d) | %s | %.2f | %.0f | %.2f | %.2f | %.2f | "
                     "%.1fx | %.0f / %.0f / %.0f %% |" % (
                         m, man["family"], man["layers"], man["hidden_size"], t, weights / 1e9,
                         sum(c["seconds"].values()), b["ttft_us"]["p50"] / 1e3, tpot, floor,
                         tpot / floor, 100 * u["tensor"], 100 * u["vector"], 100 * u["scalar"]))
    return "\n".join(lines) + "\n\n## Tiny random models\n\n"

date = datetime.date.today().isoformat()
with open(out, "w") as f:
    f.write(f"""# LLM serving on the device model

Measured {date} at commit {commit} by `bench/llm.sh`: each `models/llm` export (a small random
model of its family: hidden 32, 2 layers, vocab 128, an 80-position fp32 KV cache) compiled as
one artifact with its `prefill_16` and `decode` entries, then
- `neuronc generate` on the reference prompt (12 tokens): how many of transformers' 64 greedy
  tokens it reproduces;
- `neuronc bench --generate --prompt-len 12 --new-tokens 64 --iterations {iterations}`: TTFT (the
  prefill entry over the prompt padded to 16) and TPOT (every decode step), P50 / P99; the
  simulated device time and the host-op time of a decode step (from generate's steps); output
  tokens/s per instance (trn1.2xlarge, trn2.48xlarge, trn3 default) and cost per million output
  tokens at the price table's on-demand price (flagged unverified there).

Host ops are measured on this 2-core machine and noisy; device time is the deterministic model.
A step is one device call: the KV cache update is an indirect scatter on the device, in place.
Its DMAs (index, rows, scatter) sit between the K/V projections and attention, and at this size
fixed DMA costs, not arithmetic, are a tiny model's TTFT and TPOT.


{full_section()}| model | target | greedy tokens matched | TTFT P50 us | TPOT P50 us | TPOT P99 us | decode device us | decode host ops us | output tokens/s per instance | $ per M output tokens |
|---|---|---|---|---|---|---|---|---|---|
""")
    f.write("\n".join(rows) + "\n")
EOF
echo "llm.sh: wrote $OUT" >&2
