#!/usr/bin/env bash
# Full-size vision zoo on demand: compile, run on the device model, verify against PyTorch,
# bench, and write bench/results/vision_zoo.md (date, commit, one row per model).
#
#   bench/vision_zoo.sh                      # every model, trn1, --auto-cast matmul
#   bench/vision_zoo.sh --only resnet50      # a subset (comma-separated)
#   bench/vision_zoo.sh --target trn2
#   bench/vision_zoo.sh --torch-times        # (re)measure torch.export time and eager latency
#                                            # in the export chroot (root; see models/export_all.sh)
#   bench/vision_zoo.sh --torch-only         # only that
#
# Needs models/full/<name>/ (models/export_all.sh --full) and a built neuronc (NEURONC, default
# build/tools/neuronc). PyTorch-side times come from bench/results/vision_zoo_torch.json,
# which --torch-times writes (meta.json does not record them). Columns:
#   compile s        neuronc compile wall time (frontend + passes + codegen + write)
#   export s         torch.export.export wall time of the same model (strict=False)
#   latency          simulated device latency per inference, batch 1 (neuronc bench)
#   MFU              model FLOPs / (peak x latency), TRAINIUM.md §5.6
#   host sim s       wall time of one simulated inference on this machine (functional + timing)
#   eager ms         PyTorch eager fp32 on this machine (min of 10 runs, else median; default threads)
#   verify           neuronc verify vs PyTorch's output_0.npy: max abs error and cosine
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
NEURONC="${NEURONC:-$ROOT/build/tools/neuronc}"
MODELS="resnet18,resnet50,mobilenet_v2,mobilenet_v3_small,efficientnet_b0,convnext_tiny,vit_b_16"
TARGET=trn1
AUTOCAST=matmul
TORCH_TIMES=0
TORCH_ONLY=0
SID_DIR="${NEURONC_SID_CHROOT:-/var/tmp/neuronc-sid}"
OUT_MD="$ROOT/bench/results/vision_zoo.md"
TORCH_JSON="$ROOT/bench/results/vision_zoo_torch.json"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) MODELS="$2"; shift 2 ;;
    --target) TARGET="$2"; shift 2 ;;
    --auto-cast) AUTOCAST="$2"; shift 2 ;;
    --torch-times) TORCH_TIMES=1; shift ;;
    --torch-only) TORCH_TIMES=1; TORCH_ONLY=1; shift ;;
    --output) OUT_MD="$2"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "vision_zoo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$NEURONC" ]] || { echo "vision_zoo.sh: no neuronc at $NEURONC (set NEURONC)" >&2; exit 1; }
IFS=',' read -r -a LIST <<< "$MODELS"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

if [[ $TORCH_TIMES == 1 ]]; then
  [[ -x "$SID_DIR/usr/bin/python3" ]] || { echo "vision_zoo.sh: no chroot at $SID_DIR" >&2; exit 1; }
  mkdir -p "$SID_DIR/tmp/neuronc-zoo"
  cp "$HERE/vision_zoo_torch.py" "$SID_DIR/tmp/neuronc-zoo/"
  mounted=0
  if ! mountpoint -q "$SID_DIR/proc"; then mount -t proc proc "$SID_DIR/proc"; mounted=1; fi
  chroot "$SID_DIR" python3 /tmp/neuronc-zoo/vision_zoo_torch.py "${LIST[@]}" > "$TORCH_JSON"
  if [[ $mounted == 1 ]]; then umount "$SID_DIR/proc"; fi
  [[ $TORCH_ONLY == 1 ]] && exit 0
fi

for m in "${LIST[@]}"; do
  dir="$ROOT/models/full/$m"
  [[ -f "$dir/model.pt2" ]] || { echo "vision_zoo.sh: $dir/model.pt2 missing (models/export_all.sh --full)" >&2; exit 1; }
  for mode in none "$AUTOCAST"; do
    echo "== $m (auto-cast $mode)" >&2
    k="$m.$mode"
    t0=$(date +%s.%N)
    "$NEURONC" compile "$dir/model.pt2" -o "$WORK/$k.nca" --target "$TARGET" --auto-cast "$mode" \
      --json > "$WORK/$k.compile.json"
    t1=$(date +%s.%N)
    echo "{\"t0\": $t0, \"t1\": $t1}" > "$WORK/$k.compile_wall.json"
    # Exit code 3 = outputs differ beyond the tolerance: recorded in the table, not fatal.
    "$NEURONC" verify "$dir/model.pt2" --target "$TARGET" --auto-cast "$mode" --no-intermediates \
      --json > "$WORK/$k.verify.json" || true
    "$NEURONC" bench "$WORK/$k.nca" --iterations 1 --json > "$WORK/$k.bench.json"
    [[ "$mode" == "$AUTOCAST" ]] && break
  done
done

python3 - "$WORK" "$OUT_MD" "$TORCH_JSON" "$TARGET" "$AUTOCAST" "$ROOT" "${LIST[@]}" <<'PY'
import datetime, json, os, subprocess, sys
work, out_md, torch_json, target, autocast, root = sys.argv[1:7]
models = sys.argv[7:]
torch_t = json.load(open(torch_json)) if os.path.exists(torch_json) else {"models": {}}
commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "codegen", "passes",
                        "device", "loader", "frontend", "ir", "tools"], capture_output=True,
                       text=True).stdout.strip()
def load(k, what):
    with open(f"{work}/{k}.{what}.json") as fh:
        return json.load(fh)
rows = []
for m in models:
    meta = json.load(open(f"{root}/models/full/{m}/meta.json"))
    t = torch_t["models"].get(m, {})
    r = {"model": m, "gflops": meta["flops"] / 1e9, "export_s": t.get("export_seconds"),
         "eager_ms": t.get("eager_ms_min", t.get("eager_ms_median"))}
    for mode in ("none", autocast):
        k = f"{m}.{mode}"
        cw = load(k, "compile_wall")
        v, b, c = load(k, "verify"), load(k, "bench"), load(k, "compile")
        o = v["outputs"][0] if v.get("outputs") else {}
        r[mode] = {"compile_s": cw["t1"] - cw["t0"], "latency_ms": b["simulated_latency_us"]["p50"] / 1e3,
                   "mfu": b["mfu"], "host_sim_s": b["host_seconds_per_inference"], "pass": v.get("pass"),
                   "err": o.get("max_abs_error"), "cos": o.get("cosine"),
                   "outside": o.get("mismatches"), "count": o.get("numel"),
                   "host_nodes": len(c.get("host_nodes") or []), "instructions": b["instructions"]}
    rows.append(r)
def f(x, fmt):
    return "—" if x is None else format(x, fmt)
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
load = os.getloadavg()[0]
L = [f"# Full-size vision zoo on the device model",
     "",
     f"Measured {now} on commit `{commit}`{' (with uncommitted changes under the compiler)' if dirty else ''}, "
     f"target {target}, `--auto-cast {autocast}`, batch 1, 224×224, by `bench/vision_zoo.sh` "
     f"(one simulated inference per model; 2-core build machine shared with other builds, "
     f"load average {load:.1f} when the table was written: wall-clock columns are noisy).",
     "",
     f"fp32 = `--auto-cast none` (verified at atol 1e-4 + rtol 1e-3); bf16 = `--auto-cast {autocast}` "
     "(matmul and convolution operands in bf16, fp32 accumulation; the setting of AWS's published "
     "figures; verified as `neuronc verify` does under auto-cast: every element within 5e-2·max|ref| + "
     "5e-2·|ref| and cosine ≥ 0.999, docs/CLI.md; cosine and max abs error shown).",
     "",
     "| model | GFLOP | compile s | torch.export s | simulated latency fp32 ms | simulated latency bf16 ms | MFU bf16 | host sim s / inference (fp32, bf16) | PyTorch eager ms | verify fp32: max abs err | verify bf16: cosine (max abs err) | host ops |",
     "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    a, h = r["none"], r[autocast]
    v32 = f"{'pass' if a['pass'] else 'FAIL'} ({f(a['err'], '.2g')})"
    v16 = (f"{'pass' if h['pass'] else str(h['outside']) + '/' + str(h['count']) + ' outside'} "
           f"{f(h['cos'], '.6f')} ({f(h['err'], '.2g')})")
    L.append(f"| {r['model']} | {r['gflops']:.2f} | {h['compile_s']:.1f} | {f(r['export_s'], '.1f')} | "
             f"{a['latency_ms']:.3f} | {h['latency_ms']:.3f} | {100*h['mfu']:.1f} % | "
             f"{a['host_sim_s']:.1f}, {h['host_sim_s']:.1f} | {f(r['eager_ms'], '.0f')} | {v32} | {v16} | "
             f"{h['host_nodes']} |")
r50 = next((r for r in rows if r["model"] == "resnet50"), None)
if r50:
    r50 = dict(r50[autocast], fp32=r50["none"]["latency_ms"])
L += ["", "## ResNet-50, batch 1, beside the published figure", ""]
if r50:
    L += ["| | latency ms |", "|---|---|",
          f"| neuronc on the device model ({target}, one NeuronCore, auto-cast {autocast}) | {r50['latency_ms']:.3f} |",
          f"| neuronc on the device model ({target}, one NeuronCore, fp32) | {r50['fp32']:.3f} |",
          "| AWS Neuron SDK 2.21, inf2.xlarge, P50 (TRAINIUM.md §6.2) | 0.830 |",
          "", f"Ratio simulated / published: {r50['latency_ms'] / 0.830:.2f}×."]
L += ["", "Torch timings: " + (f"torch {torch_t.get('torch')}, torchvision {torch_t.get('torchvision')}, "
      "measured in the export chroot by `bench/vision_zoo.sh --torch-times` "
      "(`bench/results/vision_zoo_torch.json`); meta.json does not record export or eager times."
      if torch_t["models"] else "not measured (run with --torch-times as root).")]
open(out_md, "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
