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
#                     (GNU time), the median of three runs, and that run's phases from `--json`
#                     (frontend, passes, codegen, write)
#   SHA-256 of the .pt2 alone s   the floor of any compile of that file on this machine: the
#                     artifact's root holds the SHA-256 of its source, so a compile reads and
#                     hashes the whole .pt2 at least once. Wall seconds of Python's
#                     hashlib.sha256 (OpenSSL, which uses the CPU's SHA extensions) over the .pt2,
#                     read unbuffered in 4 MiB chunks with readinto into one reused buffer, in the
#                     host's python3 on one core, after the compiles (so the file is in the page
#                     cache, as it is for them); the median of three runs. The digest is checked
#                     against the source SHA-256 in the artifact (`neuronc inspect --json`)
#   peak RSS GB       GNU time's maximum resident set size
#   weights GB        the artifact's constant bytes (bf16 after --auto-cast matmul) and the .pt2's
#                     size (fp32 weights)
#   torch.export s    torch.export.export(model, args, strict=False) of the zoo's model in the
#                     chroot: the first call for that model in the process (cold, as a user's
#                     script runs it) and two more (warm), each the median over three processes;
#                     export only, not save
#   compile / cold export   compile s over torch.export's cold time
#   SHA-256 / cold export   SHA-256 of the .pt2 alone s over torch.export's cold time
#   first compile through the cache s   the default path for a new model: `compile` through an
#                     empty --cache-dir (hashing the source beside the compile, then storing the
#                     artifact), and the seconds the cache added; cached recompile s: the next one,
#                     to a new output (a hard link to the entry), then one with --cache-copy (a
#                     copy), and `cp` of the artifact to a new file, the floor of such a copy
# Both sides run one after the other in this script, on the same machine (2 threads each).
#
# Decoders: DECODERS="CONFIG_DIR:TARGET:TP ..." (default models/llm_configs/llama2_7b:trn1:32)
# adds a row per config.json: its weights-free export (models/scripts/export_causal_lm.py
# --meta --max-seq 4096 --prefill-buckets 128 --on-device-sampling, the llm.md setup: one
# prefill and six decode programs), timed whole in the chroot (tracing, export and save of every
# program), beside `neuronc compile` of that directory for TARGET over TP cores (the median of
# three by wall time). Such an export holds no weights, so its artifact is timing-only; the
# memory bound is then the weights' size the model would have (config.json's parameter count in
# bf16) + 1 GB. DECODERS="" skips them.
# LAYERS="L ..." (default "8 16") adds, for each config, rows of the same config with
# num_hidden_layers set to each L (a copy of the directory with config.json rewritten by
# python3), exported and compiled the same way, so the rows show how the time grows with the
# model's size; LAYERS="" skips them. A row is named "CONFIG, L layers", the full config's with
# its own num_hidden_layers; rows are ordered by config, then layer count. s per added layer is
# the compile seconds each layer added over the config's previous row (constant when the time
# grows linearly), and the bf16 weights column counts the parameters of the layers the row has.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
NEURONC="${NEURONC:-$ROOT/build/tools/neuronc}"
OUT="${OUT:-$ROOT/bench/results/compile.md}"
MODELS="${MODELS:-resnet50 resnet101 bert_base bert_large}"
DECODERS="${DECODERS-models/llm_configs/llama2_7b:trn1:32}"
LAYERS="${LAYERS-8 16}"
SID_DIR="${NEURONC_SID_CHROOT:-/var/tmp/neuronc-sid}"
[[ -x "$NEURONC" ]] || { echo "compile.sh: build neuronc first ($NEURONC)" >&2; exit 2; }
[[ -x "$SID_DIR/usr/bin/python3" ]] || { echo "compile.sh: no export chroot at $SID_DIR" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "compile.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
python3 -c 'import hashlib' || { echo "compile.sh: the host's python3 has no hashlib" >&2; exit 2; }
for L in $LAYERS; do
  [[ "$L" =~ ^[1-9][0-9]*$ ]] || { echo "compile.sh: LAYERS holds layer counts ($L)" >&2; exit 2; }
done
tmp="$(mktemp -d)"
stage="$SID_DIR/tmp/neuronc_compile_bench"
trap 'rm -rf "$tmp" "$stage"' EXIT
# The floor of any compile of FILE: SHA-256 of the whole file, three times, on one core.
cat > "$tmp/sha256.py" <<'PY'
import hashlib, json, platform, ssl, sys, time
buf = bytearray(4 << 20)
view = memoryview(buf)
runs = []
for _ in range(3):
    t0 = time.perf_counter()
    h = hashlib.sha256()
    with open(sys.argv[1], "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    digest = h.hexdigest()
    runs.append(time.perf_counter() - t0)
print(json.dumps({"runs": runs, "sha256": digest, "python": platform.python_version(),
                  "openssl": ssl.OPENSSL_VERSION}))
PY
for m in $MODELS; do
  pt2="$ROOT/models/full/$m/model.pt2"
  [[ -f "$pt2" ]] || { echo "compile.sh: $pt2 missing (models/export_all.sh --full)" >&2; exit 2; }
  echo "[$m] neuronc compile, three times" >&2
  for k in 1 2 3; do
    /usr/bin/time -f '{"wall": %e, "max_rss_kb": %M}' -o "$tmp/$m.time$k.json" \
      "$NEURONC" compile "$pt2" -o "$tmp/$m.nca" --target trn1 --auto-cast matmul --no-cache \
      --json > "$tmp/$m.$k.json"
  done
  stat -c %s "$pt2" > "$tmp/$m.pt2size"
  echo "[$m] SHA-256 of the .pt2, three times" >&2
  python3 "$tmp/sha256.py" "$pt2" > "$tmp/$m.sha256.json"
  "$NEURONC" inspect "$tmp/$m.nca" --json > "$tmp/$m.inspect.json"
  echo "[$m] neuronc compile --threads 1" >&2
  "$NEURONC" compile "$pt2" -o "$tmp/$m.t1.nca" --target trn1 --auto-cast matmul --no-cache \
    --threads 1 --json > "$tmp/$m.t1.json"
  cmp -s "$tmp/$m.nca" "$tmp/$m.t1.nca" || { echo "compile.sh: $m differs with --threads 1" >&2; exit 1; }
  echo "[$m] neuronc compile through an empty cache, then again" >&2
  /usr/bin/time -f '{"wall": %e, "max_rss_kb": %M}' -o "$tmp/$m.miss.time.json" \
    "$NEURONC" compile "$pt2" -o "$tmp/$m.c1.nca" --target trn1 --auto-cast matmul \
    --cache-dir "$tmp/cache" --json > "$tmp/$m.miss.json"
  /usr/bin/time -f '{"wall": %e, "max_rss_kb": %M}' -o "$tmp/$m.hit.time.json" \
    "$NEURONC" compile "$pt2" -o "$tmp/$m.c2.nca" --target trn1 --auto-cast matmul \
    --cache-dir "$tmp/cache" --json > "$tmp/$m.hit.json"
  cmp -s "$tmp/$m.nca" "$tmp/$m.c2.nca" || { echo "compile.sh: $m's cached artifact differs" >&2; exit 1; }
  /usr/bin/time -f '{"wall": %e}' -o "$tmp/$m.hitcopy.time.json" \
    "$NEURONC" compile "$pt2" -o "$tmp/$m.c3.nca" --target trn1 --auto-cast matmul \
    --cache-dir "$tmp/cache" --cache-copy --json > "$tmp/$m.hitcopy.json"
  cmp -s "$tmp/$m.nca" "$tmp/$m.c3.nca" || { echo "compile.sh: $m's copied artifact differs" >&2; exit 1; }
  # What a cached recompile that copies cannot beat: copying the artifact to a new file.
  /usr/bin/time -f '{"wall": %e}' -o "$tmp/$m.cp.time.json" cp "$tmp/$m.nca" "$tmp/$m.cp.nca"
  rm -rf "$tmp/$m".*nca "$tmp/cache"
done
mkdir -p "$stage"
cp "$ROOT"/models/scripts/*.py "$stage/"
: > "$tmp/decoders.jsonl"
for spec in $DECODERS; do
  IFS=: read -r cfg t tp <<< "$spec"
  m="$(basename "$cfg")"
  full="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["num_hidden_layers"])' \
    "$ROOT/$cfg/config.json")"
  # The full config and each of LAYERS, by layer count ascending, once each.
  layers="$(for L in $LAYERS "$full"; do echo "$L"; done | sort -nu)"
  for L in $layers; do
    d="$m.$t.$tp.L$L"
    rm -rf "$stage/$d" "$stage/$d.out"
    cp -r "$ROOT/$cfg" "$stage/$d"
    if [[ "$L" != "$full" ]]; then
      python3 -c 'import json, sys
with open(sys.argv[1]) as f:
    c = json.load(f)
c["num_hidden_layers"] = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    json.dump(c, f)' "$stage/$d/config.json" "$L"
    fi
    echo "[$m, $L layers] export_causal_lm.py --meta" >&2
    t0=$(date +%s.%N)
    chroot "$SID_DIR" python3 "/tmp/neuronc_compile_bench/export_causal_lm.py" \
      "/tmp/neuronc_compile_bench/$d" "/tmp/neuronc_compile_bench/$d.out" --meta --max-seq 4096 \
      --prefill-buckets 128 --on-device-sampling > /dev/null
    t1=$(date +%s.%N)
    echo "[$m, $L layers] neuronc compile --tp $tp, three times" >&2
    for k in 1 2 3; do
      /usr/bin/time -f '{"wall": %e, "max_rss_kb": %M}' -o "$tmp/$d.dec.time$k.json" \
        "$NEURONC" compile "$stage/$d.out" -o "$tmp/$d.dec.nca" --target "$t" --tp "$tp" \
        --auto-cast matmul --no-cache --json > "$tmp/$d.dec$k.json"
    done
    python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "key": sys.argv[2], "target": sys.argv[3], "tp": int(sys.argv[4]), "export": float(sys.argv[6]) - float(sys.argv[5]), "config": json.load(open(sys.argv[7])), "full_layers": int(sys.argv[8])}))' \
      "$m, $L layers" "$d" "$t" "$tp" "$t0" "$t1" "$stage/$d/config.json" "$full" >> "$tmp/decoders.jsonl"
    rm -rf "$tmp/$d.dec.nca" "$stage/$d" "$stage/$d.out"
  done
done
echo "[pytorch] torch.export, three processes" >&2
for k in 1 2 3; do
chroot "$SID_DIR" python3 - $MODELS > "$tmp/export$k.json" <<'PY'
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
done
python3 - "$tmp" "$OUT" "$(git -C "$ROOT" rev-parse --short HEAD)" "$MODELS" <<'PY'
import datetime, json, statistics, sys
tmp, out, commit, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
exports = [json.load(open(f"{tmp}/export{k}.json")) for k in (1, 2, 3)]
ex = {"torch": exports[0]["torch"],
      "models": {m: {side: statistics.median(x["models"][m][side] for x in exports)
                     for side in ("cold", "warm")} for m in models}}
rows = []
sha_tool = None
def median_compile(time_file, json_file):
    """The median of the three compiles by wall time: its GNU time and its --json, each file name
    a format taking k (1, 2, 3)."""
    runs = sorted(((json.load(open(time_file.format(k=k))), k) for k in (1, 2, 3)),
                  key=lambda r: r[0]["wall"])
    t, k = runs[1]
    return t, json.load(open(json_file.format(k=k)))

for m in models:
    t, c = median_compile(f"{tmp}/{m}.time{{k}}.json", f"{tmp}/{m}.{{k}}.json")
    s = c["seconds"]
    pt2 = int(open(f"{tmp}/{m}.pt2size").read()) / 1e9
    w = c["constant_bytes"] / 1e9
    rss = t["max_rss_kb"] * 1024 / 1e9
    e = ex["models"][m]
    top = sorted(c.get("pass_seconds", {}).items(), key=lambda kv: -kv[1])[:2]
    passes = ", ".join(f"{k} {v:.2f}" for k, v in top)
    t1 = json.load(open(f"{tmp}/{m}.t1.json"))["seconds"]["codegen"]
    hit = json.load(open(f"{tmp}/{m}.hit.json"))
    assert hit["cache"]["state"] == "hit" and hit["cache"]["output"] == "linked", m
    hitcopy = json.load(open(f"{tmp}/{m}.hitcopy.json"))
    assert hitcopy["cache"]["state"] == "hit" and hitcopy["cache"]["output"] == "copied", m
    hitcopy_wall = json.load(open(f"{tmp}/{m}.hitcopy.time.json"))["wall"]
    hit_wall = json.load(open(f"{tmp}/{m}.hit.time.json"))["wall"]
    miss = json.load(open(f"{tmp}/{m}.miss.json"))
    assert miss["cache"]["state"] == "stored", m
    miss_wall = json.load(open(f"{tmp}/{m}.miss.time.json"))["wall"]
    cp_wall = json.load(open(f"{tmp}/{m}.cp.time.json"))["wall"]
    sha = json.load(open(f"{tmp}/{m}.sha256.json"))
    assert sha["sha256"] == json.load(open(f"{tmp}/{m}.inspect.json"))["source"]["sha256"], m
    sha_tool = f"Python {sha['python']}'s `hashlib.sha256` on {sha['openssl']}"
    floor = statistics.median(sha["runs"])
    rows.append(f"| {m} | {t['wall']:.2f} | {floor:.2f} | {s['frontend']:.2f} / {s['passes']:.2f} / "
                f"{s['codegen']:.2f} / {s['write']:.2f} | {passes} | {rss:.2f} | {w:.2f} / {pt2:.2f} | "
                f"{rss - pt2:+.2f} | {e['cold']:.2f} / {e['warm']:.2f} | "
                f"{t['wall'] / e['cold']:.1f}× | {floor / e['cold']:.2f}× | "
                f"{t1:.2f} → {s['codegen']:.2f} ({t1 / s['codegen']:.2f}×) | "
                f"{miss_wall:.2f} ({miss['cache']['seconds']:.2f}) | {hit_wall:.2f} | "
                f"{hitcopy_wall:.2f} | {cp_wall:.2f} |")
with open(out, "w") as o:
    o.write("# Compile time and memory beside torch.export\n\n")
    o.write(f"Measured {datetime.date.today()} at commit {commit} by `bench/compile.sh` on this "
            "2-core machine: `neuronc compile MODEL.pt2 --target trn1 --auto-cast matmul` of the "
            "full-size zoo's exports, the median of three by wall time (GNU time: wall seconds, "
            "maximum resident set), its phases from `--json` (`seconds`, and the two slowest "
            "passes from `pass_seconds`), beside "
            f"PyTorch {ex['torch']}'s `torch.export.export` of the same zoo model in the export "
            "chroot (2 threads), in three processes: the first call for the model in each "
            "(cold) and two more (warm), each the median over the processes. Export only: "
            "writing the .pt2 (`torch.export.save`) is not in it. Codegen "
            "1 → 2 threads: the codegen phase with `--threads 1` and with the default (both cores), "
            "the artifacts checked byte-identical. First compile through the cache: wall seconds "
            "of `compile` through an empty `--cache-dir` (the default path for a new model: the "
            "source is hashed beside the compile, and the artifact stored after it; in brackets "
            "the seconds the cache added; the compile's output becomes the entry's artifact, a "
            "hard link). Cached recompile: wall seconds of a second `compile` through that "
            "`--cache-dir` to a new output, which the hit links to the entry's artifact; then "
            "a third with `--cache-copy`, which copies it, and `cp` of the artifact to a new "
            "file, the floor of any copy (on this VM writing fresh pages costs from 0.2 to 2 s "
            "per GB from one minute to the next); each artifact checked identical. "
            "SHA-256 of the .pt2 alone: the artifact's root holds the SHA-256 of its source, so "
            "a compile cannot take less than hashing the whole .pt2 once on one core; it is the "
            f"floor of any compile of that file on this machine (wall seconds of {sha_tool} "
            "in the host's python3, which uses the CPU's SHA extensions, over the unbuffered "
            "file in 4 MiB `readinto` chunks into one reused buffer, after the compiles so the "
            "file is in the page cache as it is for them, the median of three; the digest is "
            "checked against the one in the artifact). The other columns use "
            "`--no-cache`. One run of this script, each step after the other; these machines are "
            "noisy, so read the ratios.\n\n")
    o.write("| model | compile s | SHA-256 of the .pt2 alone s | "
            "frontend / passes / codegen / write s | slowest passes s | "
            "peak RSS GB | weights GB (artifact bf16 / .pt2 fp32) | RSS − .pt2 GB | "
            "torch.export s (cold / warm) | compile / cold export | SHA-256 / cold export | "
            "codegen s, 1 → 2 threads | "
            "first compile through the cache s (cache s) | cached recompile s (linked) | "
            "with --cache-copy s | cp of the artifact s |\n")
    o.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    o.write("\n".join(rows) + "\n")
    decoders = [json.loads(l) for l in open(f"{tmp}/decoders.jsonl") if l.strip()]
    if decoders:
        counts = [d["config"]["num_hidden_layers"] - d["full_layers"] for d in decoders]
        other = "fewer" if max(counts) <= 0 else "fewer or more" if min(counts) < 0 else "more"
        sweep = (f"Rows of the same config with {other} layers (a copy of its config.json with "
                 "num_hidden_layers set to the row's count, exported and compiled the same way) "
                 "show how the time grows with the model's size. " if any(counts) else "")
        o.write("\n## 7B-class decoders (weights-free exports, timing-only artifacts)\n\n"
                "`export_causal_lm.py --meta --max-seq 4096 --prefill-buckets 128 "
                "--on-device-sampling` of the config (one prefill and six decode programs; timed "
                "whole in the chroot: tracing, torch.export and save of every program), beside "
                "`neuronc compile DIR --tp TP --auto-cast matmul --no-cache` of that directory (the "
                "median of three by wall time). "
                "The export holds no weights, so the artifact is timing-only and the compile never "
                "reads weight bytes: the memory bound is the bf16 size the model's weights would "
                "have (from config.json) + 1 GB, met trivially; time is the real comparison. "
                + sweep + "s per added layer: the compile seconds each layer added over the "
                "config's previous row (constant when time grows linearly); the bf16 weights "
                "are those of the row's layers.\n\n")
        o.write("| model | target, TP | compile s | s per added layer | "
                "frontend / passes / codegen / write s | peak RSS GB | "
                "bf16 weights it would have GB | export s (whole) | compile / export |\n")
        o.write("|---|---|---|---|---|---|---|---|---|\n")
        # In the order the script ran them: by config, then layer count.
        prev = {}
        for d in decoders:
            t, c = median_compile(f"{tmp}/{d['key']}.dec.time{{k}}.json",
                                  f"{tmp}/{d['key']}.dec{{k}}.json")
            s = c["seconds"]
            g = d["config"]
            h, i, L, v = g["hidden_size"], g["intermediate_size"], g["num_hidden_layers"], g["vocab_size"]
            kvh = g.get("num_key_value_heads", g["num_attention_heads"])
            hd = g.get("head_dim", h // g["num_attention_heads"])
            params = L * (2 * h * h + 2 * h * kvh * hd + 3 * h * i + 2 * h) + v * h * (1 if g.get("tie_word_embeddings") else 2) + h
            # Compile seconds each layer added over the previous row of the config.
            key = (d["name"].split(",")[0], d["target"], d["tp"])
            added = f"{(t['wall'] - prev[key][1]) / (L - prev[key][0]):.2f}" if key in prev else ""
            prev[key] = (L, t["wall"])
            o.write(f"| {d['name']} | {d['target']}, TP {d['tp']} | {t['wall']:.2f} | {added} | {s['frontend']:.2f} / {s['passes']:.2f} / {s['codegen']:.2f} / {s['write']:.2f} | "
                    f"{t['max_rss_kb'] * 1024 / 1e9:.2f} | {params * 2 / 1e9:.1f} | {d['export']:.2f} | "
                    f"{t['wall'] / d['export']:.1f}× |\n")
print("wrote", out)
PY
