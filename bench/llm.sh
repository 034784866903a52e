#!/usr/bin/env bash
# LLM serving on the device model (issue 17): compiles each models/llm export directory (its
# prefill and decode programs as one artifact) for trn1 / trn2 / trn3, generates with it
# (`neuronc generate`: the reference prompt, transformers' greedy tokens compared) and benches
# generation (`neuronc bench --generate`), then writes bench/results/llm.md.
#
# These are the tiny random models the tests use (hidden 32, 2 layers): their figures show
# what the serving path measures and where its time goes, not a full-size model's latency.
# Full-size rows (Llama-2-7B and Llama-3-8B at TP 32 beside AWS's published TTFT / TPOT) need
# a timing-only compile of a weights-free export and tensor parallelism, which neuronc does
# not have yet.
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
import datetime, json, os, struct, sys

tmp, out, commit, root, iterations = sys.argv[1:6]
targets = sys.argv[6:]

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
Today each step's KV cache update (`index_copy`) runs as a host op, which splits the program's
device work into three device calls, each with its own fixed costs: a 16-token prefill takes
barely longer than a 1-token decode step, so fixed costs, not arithmetic, are a tiny model's
TTFT and TPOT. These are not full-size figures: Llama-2-7B / Llama-3-8B at TP 32 beside AWS's
published TTFT and TPOT need a timing-only compile and tensor parallelism (issue 17).

| model | target | greedy tokens matched | TTFT P50 us | TPOT P50 us | TPOT P99 us | decode device us | decode host ops us | output tokens/s per instance | $ per M output tokens |
|---|---|---|---|---|---|---|---|---|---|
""")
    f.write("\n".join(rows) + "\n")
EOF
echo "llm.sh: wrote $OUT" >&2
