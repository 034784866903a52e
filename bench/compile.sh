#!/usr/bin/env bash
# Compile time, peak host memory and the phase split of `neuronc compile` on the full-size zoo,
# beside torch.export's time to export the same model (issue 18): writes
# bench/results/compile.md.
#
#   sudo bench/compile.sh                   # resnet50 resnet101 bert_base bert_large
#   MODELS="bert_base" sudo bench/compile.sh
#
# Needs the full-size zoo (models/export_all.sh --full --no-intermediates), a release build
# (NEURONC, default build/tools/neuronc) and the export chroot (NEURONC_SID_CHROOT, default
# /var/tmp/neuronc-sid). Columns:
#   compile s         wall time of `neuronc compile MODEL.pt2 --target trn1 --auto-cast matmul`
#                     (GNU time), and its phases from `--json` (frontend, passes, codegen, write)
#   peak RSS GB       GNU time's maximum resident set size
#   weights GB        the artifact's constant bytes (bf16 after --auto-cast matmul) and the .pt2's
#                     size (fp32 weights)
#   torch.export s    torch.export.export(model, args, strict=False) of the zoo's model in the
#                     chroot: the first call for that model in the process (cold, as a user's
#                     script runs it) and the median of two more (warm); export only, not save
# Both sides run one after the other in this script, on the same machine (2 threads each).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
NEURONC="${NEURONC:-$ROOT/build/tools/neuronc}"
OUT="${OUT:-$ROOT/bench/results/compile.md}"
MODELS="${MODELS:-resnet50 resnet101 bert_base bert_large}"
SID_DIR="${NEURONC_SID_CHROOT:-/var/tmp/neuronc-sid}"
[[ -x "$NEURONC" ]] || { echo "compile.sh: build neuronc first ($NEURONC)" >&2; exit 2; }
[[ -x "$SID_DIR/usr/bin/python3" ]] || { echo "compile.sh: no export chroot at $SID_DIR" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "compile.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
tmp="$(mktemp -d)"
stage="$SID_DIR/tmp/neuronc_compile_bench"
trap 'rm -rf "$tmp" "$stage"' EXIT
for m in $MODELS; do
  pt2="$ROOT/models/full/$m/model.pt2"
  [[ -f "$pt2" ]] || { echo "compile.sh: $pt2 missing (models/export_all.sh --full)" >&2; exit 2; }
  echo "[$m] neuronc compile" >&2
  /usr/bin/time -f '{"wall": %e, "max_rss_kb": %M}' -o "$tmp/$m.time.json" \
    "$NEURONC" compile "$pt2" -o "$tmp/$m.nca" --target trn1 --auto-cast matmul --json > "$tmp/$m.json"
  stat -c %s "$pt2" > "$tmp/$m.pt2size"
  rm -f "$tmp/$m.nca"
done
echo "[pytorch] torch.export" >&2
mkdir -p "$stage"
cp "$ROOT"/models/scripts/*.py "$stage/"
chroot "$SID_DIR" python3 - $MODELS > "$tmp/export.json" <<'PY'
import json, statistics, sys, time
sys.path.insert(0, "/tmp/neuronc_compile_bench")
import torch
torch.set_num_threads(2)
import zoo
entries = {e.name: e for e in zoo.FULL}
out = {"torch": torch.__version__, "models": {}}
for name in sys.argv[1:]:
    fx = entries[name].build()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        torch.export.export(fx.model, fx.args, dynamic_shapes=fx.dynamic_shapes, strict=False)
        times.append(time.perf_counter() - t0)
    out["models"][name] = {"cold": times[0], "warm": statistics.median(times[1:])}
print(json.dumps(out))
PY
python3 - "$tmp" "$OUT" "$(git -C "$ROOT" rev-parse --short HEAD)" "$MODELS" <<'PY'
import datetime, json, sys
tmp, out, commit, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
ex = json.load(open(f"{tmp}/export.json"))
rows = []
for m in models:
    c = json.load(open(f"{tmp}/{m}.json"))
    t = json.load(open(f"{tmp}/{m}.time.json"))
    s = c["seconds"]
    pt2 = int(open(f"{tmp}/{m}.pt2size").read()) / 1e9
    w = c["constant_bytes"] / 1e9
    rss = t["max_rss_kb"] * 1024 / 1e9
    e = ex["models"][m]
    top = sorted(c.get("pass_seconds", {}).items(), key=lambda kv: -kv[1])[:2]
    passes = ", ".join(f"{k} {v:.2f}" for k, v in top)
    rows.append(f"| {m} | {t['wall']:.2f} | {s['frontend']:.2f} / {s['passes']:.2f} / "
                f"{s['codegen']:.2f} / {s['write']:.2f} | {passes} | {rss:.2f} | {w:.2f} / {pt2:.2f} | "
                f"{rss - pt2:+.2f} | {e['cold']:.2f} / {e['warm']:.2f} | "
                f"{t['wall'] / e['cold']:.1f}× |")
with open(out, "w") as o:
    o.write("# Compile time and memory beside torch.export\n\n")
    o.write(f"Measured {datetime.date.today()} at commit {commit} by `bench/compile.sh` on this "
            "2-core machine: `neuronc compile MODEL.pt2 --target trn1 --auto-cast matmul` of the "
            "full-size zoo's exports (GNU time: wall seconds, maximum resident set), its phases "
            "from `--json` (`seconds`, and the two slowest passes from `pass_seconds`), beside "
            f"PyTorch {ex['torch']}'s `torch.export.export` of the same zoo model in the export "
            "chroot (2 threads): the first call for the model (cold) and the median of two more "
            "(warm). Export only: writing the .pt2 (`torch.export.save`) is not in it. One run, "
            "one after the other; these machines are noisy, so read the ratios.\n\n")
    o.write("| model | compile s | frontend / passes / codegen / write s | slowest passes s | "
            "peak RSS GB | weights GB (artifact bf16 / .pt2 fp32) | RSS − .pt2 GB | "
            "torch.export s (cold / warm) | compile / cold export |\n")
    o.write("|---|---|---|---|---|---|---|---|---|\n")
    o.write("\n".join(rows) + "\n")
print("wrote", out)
PY
