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
#   eager ms         PyTorch eager fp32 on this machine (median, default threads)
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
  echo "== $m" >&2
  t0=$(date +%s.%N)
  "$NEURONC" compile "$dir/model.pt2" -o "$WORK/$m.nca" --target "$TARGET" --auto-cast "$AUTOCAST" \
    --json > "$WORK/$m.compile.json"
  t1=$(date +%s.%N)
  echo "{\"t0\": $t0, \"t1\": $t1}" > "$WORK/$m.compile_wall.json"
  set +e
  "$NEURONC" verify "$dir/model.pt2" --target "$TARGET" --auto-cast "$AUTOCAST" --json \
    > "$WORK/$m.verify.json"
  echo "{\"rc\": $?}" > "$WORK/$m.verify_rc.json"
  set -e
  "$NEURONC" bench "$WORK/$m.nca" --iterations 1 --json > "$WORK/$m.bench.json"
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
rows = []
for m in models:
    c = json.load(open(f"{work}/{m}.compile.json"))
    cwj = json.load(open(f"{work}/{m}.compile_wall.json"))
    cw = cwj["t1"] - cwj["t0"]
    v = json.load(open(f"{work}/{m}.verify.json"))
    b = json.load(open(f"{work}/{m}.bench.json"))
    meta = json.load(open(f"{root}/models/full/{m}/meta.json"))
    t = torch_t["models"].get(m, {})
    o = v["outputs"][0] if v.get("outputs") else {}
    rows.append({
        "model": m, "gflops": meta["flops"] / 1e9, "compile_s": cw,
        "export_s": t.get("export_seconds"), "latency_ms": b["simulated_latency_us"]["p50"] / 1e3,
        "host_ms": b["simulated_latency_us"]["host_ops"] / 1e3,
        "mfu": b["mfu"], "host_sim_s": b["host_seconds_per_inference"],
        "eager_ms": t.get("eager_ms_median"), "pass": v.get("pass"),
        "err": o.get("max_abs_error"), "cos": o.get("cosine"),
        "host_nodes": len(c.get("host_nodes") or []), "instructions": b["instructions"],
    })
def f(x, fmt):
    return "—" if x is None else format(x, fmt)
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
L = [f"# Full-size vision zoo on the device model",
     "",
     f"Measured {now} on commit `{commit}`{' (with uncommitted changes under the compiler)' if dirty else ''}, "
     f"target {target}, `--auto-cast {autocast}`, batch 1, 224×224, by `bench/vision_zoo.sh` "
     f"(one simulated inference per model; 2-core build machine).",
     "",
     "| model | GFLOP | compile s | torch.export s | simulated latency ms | MFU | host ops ms | host sim s / inference | PyTorch eager ms | verify (max abs err, cosine) | instructions |",
     "|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    ok = "pass" if r["pass"] else "FAIL"
    L.append(f"| {r['model']} | {r['gflops']:.2f} | {r['compile_s']:.1f} | {f(r['export_s'], '.1f')} | "
             f"{r['latency_ms']:.3f} | {100*r['mfu']:.1f} % | {r['host_ms']:.3f} | {r['host_sim_s']:.1f} | "
             f"{f(r['eager_ms'], '.1f')} | {ok} ({f(r['err'], '.2g')}, {f(r['cos'], '.6f')}) | {r['instructions']} |")
r50 = next((r for r in rows if r["model"] == "resnet50"), None)
L += ["", "## ResNet-50, batch 1, beside the published figure", ""]
if r50:
    L += ["| | latency ms |", "|---|---|",
          f"| neuronc on the device model ({target}, one NeuronCore, auto-cast {autocast}) | {r50['latency_ms']:.3f} |",
          "| AWS Neuron SDK 2.21, inf2.xlarge, P50 (TRAINIUM.md §6.2) | 0.830 |",
          "", f"Ratio simulated / published: {r50['latency_ms'] / 0.830:.2f}×."]
L += ["", "Torch timings: " + (f"torch {torch_t.get('torch')}, torchvision {torch_t.get('torchvision')}, "
      "measured in the export chroot by `bench/vision_zoo.sh --torch-times` "
      "(`bench/results/vision_zoo_torch.json`); meta.json does not record export or eager times."
      if torch_t["models"] else "not measured (run with --torch-times as root).")]
open(out_md, "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
