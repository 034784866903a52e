#!/usr/bin/env python3
"""The architecture sweep's coverage table (issue 16): compiles and verifies every model that
models/scripts/sweep.py exported, in both IRs, with --auto-cast none and matmul, on trn1.

    bench/coverage.py SWEEP_DIR [--neuronc build/tools/neuronc] [--out bench/results/coverage.md]

A model counts as passing in an IR when both cast modes match PyTorch (fp32 within
1e-4 + 1e-3·|ref|; bf16 cosine >= 0.999, neuronc verify's criteria). Families the sweep could
not export, or whose random reference is degenerate, are listed apart: they say nothing about
neuronc. Host-side, standard library only.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

NODE = re.compile(r"node '([^']*)' \(([^)]*)\)")


def verify(neuronc, model, cast):
    try:
        p = subprocess.run([neuronc, "verify", model, "--auto-cast", cast, "--json",
                            "--no-intermediates"], capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return {"result": "timeout"}
    if p.returncode in (0, 3) and p.stdout.strip().startswith("{"):
        j = json.loads(p.stdout)
        worst = min((o["cosine"] for o in j["outputs"]), default=1.0)
        return {"result": "match" if j["pass"] else "MISMATCH", "cosine": worst,
                "latency_us": j.get("simulated_latency_us")}
    err = (p.stderr.strip().splitlines() or ["?"])[-1]
    m = NODE.search(err)
    return {"result": "error", "op": m.group(2) if m else "", "error": err[:300]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--neuronc", default="build/tools/neuronc")
    ap.add_argument("--out", default="bench/results/coverage.md")
    a = ap.parse_args()
    rows, apart = [], []
    for name in sorted(os.listdir(a.sweep)):
        d = os.path.join(a.sweep, name)
        meta_path = os.path.join(d, "meta.json")
        if not os.path.exists(meta_path):
            continue
        meta = json.load(open(meta_path))
        if meta["status"] != "ok":
            apart.append((name, meta["kind"], meta["status"], meta.get("reason", "")))
            continue
        r = {"name": name, "kind": meta["kind"], "parameters": meta.get("parameters")}
        for ir in ("model.pt2", "model_core.pt2"):
            r[ir] = {cast: verify(a.neuronc, os.path.join(d, ir), cast) for cast in ("none", "matmul")}
        rows.append(r)
        print(name, {ir: {c: v["result"] for c, v in r[ir].items()} for ir in ("model.pt2", "model_core.pt2")},
              flush=True)

    def passed(r, ir):
        return all(v["result"] == "match" for v in r[ir].values())

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    n = len(rows)
    lines = [
        "# Architecture sweep: compile and match on models nobody hand-picked",
        "",
        f"Measured {datetime.date.today()} at commit {commit} by `bench/coverage.py` on the export of "
        "`models/scripts/sweep.py` (torch 2.14, transformers and torchvision families with small "
        "random configs; text models take input_ids 1×16, vision models 1×3×96² or their minimum "
        "size). trn1; a model passes an IR when `neuronc verify` matches PyTorch with "
        "`--auto-cast none` (1e-4 + 1e-3·|ref|) and with `--auto-cast matmul` (cosine ≥ 0.999).",
        "",
        f"- training IR (`model.pt2`): **{sum(passed(r, 'model.pt2') for r in rows)} / {n}** pass",
        f"- core ATen (`model_core.pt2`): **{sum(passed(r, 'model_core.pt2') for r in rows)} / {n}** pass",
        f"- not counted: {len(apart)} families the sweep could not export or whose reference is degenerate (listed below)",
        "",
        "| model | kind | params | training IR fp32 | training IR bf16 | core fp32 | core bf16 | failing op / error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells, why = [], ""
        for ir in ("model.pt2", "model_core.pt2"):
            for cast in ("none", "matmul"):
                v = r[ir][cast]
                if v["result"] in ("match", "MISMATCH"):
                    cells.append(f"{v['result']} ({v['cosine']:.5f})")
                else:
                    cells.append(v["result"])
                    why = why or (v.get("op") or v.get("error", ""))
        lines.append(f"| {r['name']} | {r['kind']} | {r['parameters']} | " + " | ".join(cells) +
                     f" | {why.replace('|', '/')} |")
    lines += ["", "## Not counted", "", "| model | kind | status | reason |", "|---|---|---|---|"]
    for name, kind, status, reason in apart:
        lines.append(f"| {name} | {kind} | {status} | {reason[:200].replace('|', '/')} |")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", a.out)


if __name__ == "__main__":
    sys.exit(main())
