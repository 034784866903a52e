#!/usr/bin/env bash
# Host time per simulated inference beside PyTorch eager on the same CPU and the same inputs
# (issue 19): writes bench/results/simulator.md.
#
#   sudo bench/simulator.sh                 # resnet50 resnet101 bert_base bert_large, and the
#                                           # LLM decode step llama32_1b_4layers_decode
#   MODELS="resnet50" sudo bench/simulator.sh
#
# The decode step is one token through Llama-3.2-1B cut to 4 layers (models/llm_configs), with
# seeded random weights, over a 256-position KV cache: the decode program of
#   python3 models/scripts/export_causal_lm.py models/llm_configs/llama32_1b_4layers OUT \
#       --random-weights --max-seq 256 --prefill-buckets 32 --decode-buckets 256
# (run in the export chroot; move OUT/decode to models/full/llama32_1b_4layers_decode).
#
# Needs the full-size zoo (models/export_all.sh --full --no-intermediates), a release build
# (NEURONC, default build/tools/neuronc) and, for the PyTorch column, the export chroot
# (NEURONC_SID_CHROOT, default /var/tmp/neuronc-sid, with libopenblas0-pthread). Columns:
#   functional s    neuronc bench: median wall time of one Session::run (data and timing) of
#                   7 runs after 2 warm-ups, as the PyTorch columns are measured
#   timing-only s   neuronc bench --timing-only: the timing simulation alone, median of 25
#                   after 2 warm-ups (the first makes the programs' timing tables)
#   eager s         PyTorch eager of the exported program (ExportedProgram.module()) on the
#                   model's saved inputs: 2 threads, flush-denormal on, OpenBLAS; median of 7
#                   runs after 2 warm-ups, fp32
#   ONNX Runtime s  the same program exported to ONNX (PyTorch's TorchScript-based exporter;
#                   the torch.export-based one needs onnxscript, which Debian does not package)
#                   and run by ONNX Runtime's CPU provider, 2 intra-op threads, fp32, median of
#                   7 after 2 warm-ups; its outputs are checked against eager's (needs
#                   python3-onnxruntime and python3-onnx in the chroot; the column is empty
#                   without them)
# Both sides run one after the other in this script, on the same machine, so their ratio is
# what to read (these machines are noisy).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
NEURONC="${NEURONC:-$ROOT/build/tools/neuronc}"
OUT="${OUT:-$ROOT/bench/results/simulator.md}"
MODELS="${MODELS:-resnet50 resnet101 bert_base bert_large llama32_1b_4layers_decode}"
SID_DIR="${NEURONC_SID_CHROOT:-/var/tmp/neuronc-sid}"
[[ -x "$NEURONC" ]] || { echo "simulator.sh: build neuronc first ($NEURONC)" >&2; exit 2; }
[[ -x "$SID_DIR/usr/bin/python3" ]] || { echo "simulator.sh: no export chroot at $SID_DIR" >&2; exit 2; }
tmp="$(mktemp -d)"
stage="$SID_DIR/tmp/neuronc_simulator_bench"
trap 'rm -rf "$tmp" "$stage"' EXIT
mkdir -p "$stage"
for m in $MODELS; do
  dir="$ROOT/models/full/$m"
  [[ -f "$dir/model.pt2" ]] || { echo "simulator.sh: $dir/model.pt2 missing (models/export_all.sh --full)" >&2; exit 2; }
  echo "[$m] compile" >&2
  "$NEURONC" compile "$dir/model.pt2" -o "$tmp/$m.nca" --target trn1 --auto-cast matmul > /dev/null
  echo "[$m] functional and timing-only" >&2
  "$NEURONC" bench "$tmp/$m.nca" --warmup 2 --iterations 7 --json > "$tmp/$m.functional.json"
  "$NEURONC" bench "$tmp/$m.nca" --warmup 2 --iterations 25 --timing-only --json > "$tmp/$m.timing.json"
  rm -f "$tmp/$m.nca"
  mkdir -p "$stage/$m"
  cp "$dir/model.pt2" "$dir"/input_*.npy "$stage/$m/"
done
echo "[pytorch] eager" >&2
chroot "$SID_DIR" python3 - $MODELS > "$tmp/eager.json" <<'PY'
import glob, json, statistics, sys, time
import numpy as np
import torch
torch.set_num_threads(2)
torch.set_flush_denormal(True)
import os
out = {"torch": torch.__version__,
       "blas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3"), "models": {}}
for name in sys.argv[1:]:
    d = f"/tmp/neuronc_simulator_bench/{name}"
    ep = torch.export.load(f"{d}/model.pt2")
    m = ep.module()
    for p in m.parameters():
        p.requires_grad_(False)  # the TorchScript-based ONNX exporter refuses graph outputs that need grad
    args = [torch.from_numpy(np.load(p)) for p in sorted(glob.glob(f"{d}/input_*.npy"))]
    # Positionally, or by name: a program traced with keyword arguments (export_causal_lm.py's)
    # takes only those.
    names = list(ep.graph_signature.user_inputs)
    spec = ep.call_spec.in_spec  # (args, kwargs)
    by_name = bool((spec.child(1) if hasattr(spec, "child") else spec.children_specs[1]).context)

    def call(*a):
        return m(**dict(zip(names, a))) if by_name else m(*a)

    with torch.no_grad():
        for _ in range(2):
            call(*args)
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            call(*args)
            times.append(time.perf_counter() - t0)
    out["models"][name] = statistics.median(times)
    try:
        import onnxruntime as ort
    except ImportError:
        continue
    out["onnxruntime"] = ort.__version__

    class Unlifted(torch.nn.Module):
        # The TorchScript-based exporter switches the module to eval mode, which an exported
        # program's module refuses; it has no training behaviour to switch.
        def __init__(self, m):
            super().__init__()
            self.m = m

        def train(self, mode=True):
            return self

        def forward(self, *a):
            return call(*a)

    onnx_path = f"{d}/model.onnx"
    with torch.no_grad():
        torch.onnx.export(Unlifted(m), tuple(args), onnx_path, dynamo=False)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    feed = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    for _ in range(2):
        got = sess.run(None, feed)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        got = sess.run(None, feed)
        times.append(time.perf_counter() - t0)
    with torch.no_grad():
        ref = call(*args)
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    diff = float(np.abs(got[0] - ref.numpy()).max())
    scale = float(np.abs(ref.numpy()).max())
    assert diff <= 1e-3 * max(scale, 1.0), f"{name}: ONNX Runtime differs from eager by {diff}"
    out.setdefault("ort", {})[name] = statistics.median(times)
print(json.dumps(out))
PY
python3 - "$tmp" "$OUT" "$(git -C "$ROOT" rev-parse --short HEAD)" "$MODELS" <<'PY'
import datetime, json, sys
tmp, out, commit, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
# The last line: ONNX's schema registration may print to stdout before it.
eager = json.loads(open(f"{tmp}/eager.json").read().strip().splitlines()[-1])
rows = []
for m in models:
    f = json.load(open(f"{tmp}/{m}.functional.json"))
    t = json.load(open(f"{tmp}/{m}.timing.json"))
    fs, ts, es = f["host_seconds_per_inference_median"], t["host_seconds_per_inference"], eager["models"][m]
    # The device time is deterministic; the functional figure is a mean over 7 runs (rounding).
    fd, td = f["simulated_latency_us"]["device"], t["simulated_latency_us"]["device"]
    assert abs(fd - td) <= 1e-9 * abs(td), (m, fd, td)
    os_ = eager.get("ort", {}).get(m)
    ort_cells = f"{os_:.3f} | {fs / os_:.1f}× |" if os_ else " | |"
    rows.append(f"| {m} | {f['simulated_latency_us']['device'] / 1e3:.3f} | {fs:.3f} | {ts:.4f} | "
                f"{fs / ts:.0f}× | {es:.3f} | {fs / es:.1f}× | {ort_cells}")
with open(out, "w") as o:
    o.write("# Host time per simulated inference beside PyTorch eager\n\n")
    o.write(f"Measured {datetime.date.today()} at commit {commit} by `bench/simulator.sh` on this "
            "2-core machine: trn1, batch 1, `--auto-cast matmul`, the full-size zoo's random-weight "
            "exports and their saved inputs. functional = `neuronc bench` (median of 7 `Session::run`s "
            "after 2 warm-ups, data and timing; oneTBB on both cores); timing-only = `neuronc bench --timing-only` "
            "(median of 25 after 2 warm-ups, one thread; the same device time, checked equal; no data "
            "computed); eager = PyTorch "
            f"{eager['torch']} running the exported program in fp32, 2 threads, flush-denormal, "
            f"BLAS {eager['blas']}, median of 7 after 2 warm-ups, in the export chroot, one after "
            "the other. ONNX Runtime "
            f"{eager.get('onnxruntime', '(not installed)')}: the same program exported with PyTorch's "
            "TorchScript-based ONNX exporter, CPU provider, 2 intra-op threads, fp32, median of 7 "
            "after 2 warm-ups, its output checked against eager's.\n\n")
    o.write("| model | simulated device ms | functional host s | timing-only host s | functional / timing-only | PyTorch eager s | functional / eager | ONNX Runtime s | functional / ONNX Runtime |\n")
    o.write("|---|---|---|---|---|---|---|---|---|\n")
    o.write("\n".join(rows) + "\n")
print("wrote", out)
PY
