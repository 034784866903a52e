#!/usr/bin/env bash
# BERT-base (seq 128, batch 1, --auto-cast matmul, trn1): neuronc beside PyTorch and beside the
# published trn1 figure. Writes bench/results/bert_base.md. Needs root (chroot) and:
#   - models/full/bert_base (models/export_all.sh --full --only bert_base);
#   - the sid chroot with PyTorch (default /var/tmp/neuronc-sid; models/export_all.sh makes it);
#   - a release build: cmake --preset release && cmake --build --preset release --target neuronc
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NEURONC="${NEURONC:-$ROOT/build/tools/neuronc}"
SID="${NEURONC_SID_CHROOT:-/var/tmp/neuronc-sid}"
MODEL="$ROOT/models/full/bert_base"
OUT="$ROOT/bench/results/bert_base.md"
THREADS="${THREADS:-1}"
[[ -x "$NEURONC" ]] || { echo "run.sh: build neuronc first ($NEURONC)" >&2; exit 2; }
[[ -f "$MODEL/model.pt2" ]] || { echo "run.sh: $MODEL missing: models/export_all.sh --full --only bert_base" >&2; exit 2; }
[[ -x "$SID/usr/bin/python3" ]] || { echo "run.sh: no PyTorch chroot at $SID" >&2; exit 2; }

work="/tmp/neuronc-bench-$$"
mkdir -p "$SID$work"
cp "$ROOT/models/scripts/zoo.py" "$HERE/torch_timing.py" "$SID$work/"
mountpoint -q "$SID/proc" || mount -t proc proc "$SID/proc"
torch_json="$(chroot "$SID" env -i PATH=/usr/bin:/bin HOME=/root OMP_NUM_THREADS="$THREADS" \
  python3 "$work/torch_timing.py" "$work" "$THREADS")"
rm -rf "${SID:?}$work"

tmp="$(mktemp -d)"
t0=$(date +%s.%N)
"$NEURONC" compile "$MODEL/model.pt2" -o "$tmp/bert.nca" --target trn1 --auto-cast matmul --json > "$tmp/compile.json"
t1=$(date +%s.%N)
"$NEURONC" run "$tmp/bert.nca" --input "$MODEL/input_0.npy" --input "$MODEL/input_1.npy" \
  --output-dir "$tmp/out" --json > "$tmp/run.json"
# MFU from the device model (bench knows the target's peak; no hardware number lives here).
"$NEURONC" bench "$tmp/bert.nca" --iterations 1 --json > "$tmp/bench.json"
python3 - "$tmp/compile.json" "$tmp/run.json" "$MODEL/meta.json" "$t0" "$t1" "$OUT" \
  "$(git -C "$ROOT" rev-parse --short HEAD)" "$torch_json" "$tmp/bench.json" <<'PY'
import datetime, json, sys
comp, run, meta = (json.load(open(p)) for p in sys.argv[1:4])
t0, t1, out, commit, torch_t = float(sys.argv[4]), float(sys.argv[5]), sys.argv[6], sys.argv[7], json.loads(sys.argv[8])
bench = json.load(open(sys.argv[9]))
compile_s = t1 - t0
lat_ms = run["simulated_latency_us"] / 1e3
flops = meta["flops"]
mfu = bench["mfu"]  # model FLOPs / (simulated latency x the target's peak), from the device model
published_ms = 0.943  # trn1.2xlarge bert-base-uncased BS 1 P50 (TRAINIUM.md §6.2, SDK 2.26)
published_mfu = mfu * lat_ms / published_ms  # same FLOPs and peak, the published latency
host_ms = run["host_wall_ms"]
rows = [
    ("compile time (neuronc, wall)", f"{compile_s:.2f} s", f"torch.export {torch_t['export_seconds']:.2f} s",
     f"{compile_s / torch_t['export_seconds']:.2f}x"),
    ("simulated latency, trn1, 1 NeuronCore", f"{lat_ms:.3f} ms", f"published {published_ms} ms P50",
     f"{lat_ms / published_ms:.2f}x"),
    ("MFU (model FLOPs / (latency x trn1 bf16 peak))", f"{100 * mfu:.1f} %", f"published run {100 * published_mfu:.1f} %",
     f"{mfu / published_mfu:.2f}x"),
    ("host time of one simulated inference", f"{host_ms:.0f} ms",
     f"PyTorch eager CPU {torch_t['eager_ms_p50']:.1f} ms ({torch_t['threads']} thread)",
     f"{host_ms / torch_t['eager_ms_p50']:.1f}x"),
]
util = run["engine_utilization"]
with open(out, "w") as f:
    f.write(f"# BERT-base on trn1 (seq 128, batch 1, --auto-cast matmul)\n\n")
    f.write(f"Measured {datetime.date.today()} at commit {commit} on a 2-core Debian 12 machine shared with "
            f"other builds (wall times are noisy; ratios are from one run). PyTorch {torch_t['torch']}. "
            f"Model FLOPs {flops / 1e9:.2f} G (meta.json). Regenerate: `bench/bert_base/run.sh`.\n\n")
    f.write("| quantity | neuronc | reference | ratio |\n|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |\n")
    f.write("\nEngine utilisation: " + ", ".join(f"{k} {100 * v:.1f} %" for k, v in util.items()) +
            f"; {run['instructions']} instructions; {run['dma_bytes'] / 1e6:.0f} MB moved by DMA.\n")
print(open(out).read())
PY
rm -rf "$tmp"
