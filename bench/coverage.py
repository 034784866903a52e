#!/usr/bin/env python3
"""The architecture sweep's coverage table (issue 16): compiles and verifies every model that
models/scripts/sweep.py exported, in both IRs, with --auto-cast none and matmul, on trn1.

    bench/coverage.py SWEEP_DIR [--neuronc build/tools/neuronc] [--out bench/results/coverage.md]
                      [--commit SHA] [--only NAME,...]

Every verify result is also written beside the table (coverage.json); with --only, just those
models are verified again and the others keep their results from that file.

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
import tempfile

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


def analyze_agrees(neuronc, model, cast, v):
    """Whether `neuronc analyze` (exit 0: every operator supported) predicted the compile's
    outcome; the compile is run on its own only when verify failed, to tell a compile error
    from a run error."""
    try:
        a = subprocess.run([neuronc, "analyze", model, "--auto-cast", cast, "--json"],
                           capture_output=True, text=True, timeout=900)
        if v["result"] in ("match", "MISMATCH"):
            compiled = True
        else:
            with tempfile.TemporaryDirectory() as tmp:
                c = subprocess.run([neuronc, "compile", model, "--auto-cast", cast, "-o",
                                    os.path.join(tmp, "a.nca")],
                                   capture_output=True, text=True, timeout=900)
            compiled = c.returncode == 0
    except subprocess.TimeoutExpired:
        return None
    return (a.returncode == 0) == compiled


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--neuronc", default="build/tools/neuronc")
    ap.add_argument("--out", default="bench/results/coverage.md")
    ap.add_argument("--commit", help="the commit the neuronc binary was built at (default: HEAD)")
    ap.add_argument("--only", default="",
                    help="verify only these models (comma-separated); the others keep their "
                         "results from the rows file")
    a = ap.parse_args()
    rows_path = os.path.splitext(a.out)[0] + ".json"  # every verify result, for --only
    previous = {}
    if a.only and os.path.exists(rows_path):
        previous = {r["name"]: r for r in json.load(open(rows_path))["rows"]}
    only = set(filter(None, a.only.split(",")))
    commit = a.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
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
        r = {"name": name, "kind": meta["kind"], "parameters": meta.get("parameters"),
             "torch_bf16": meta.get("pytorch_bf16_cosine")}
        if only and name not in only and name in previous:
            rows.append(dict(previous[name], torch_bf16=r["torch_bf16"]))
            continue
        for ir in ("model.pt2", "model_core.pt2"):
            r[ir] = {cast: verify(a.neuronc, os.path.join(d, ir), cast) for cast in ("none", "matmul")}
            for cast, v in r[ir].items():
                v["analyze_agrees"] = analyze_agrees(a.neuronc, os.path.join(d, ir), cast, v)
        r["commit"] = commit
        rows.append(r)
        print(name, {ir: {c: v["result"] for c, v in r[ir].items()} for ir in ("model.pt2", "model_core.pt2")},
              flush=True)

    def passed(r, ir):
        return all(v["result"] == "match" for v in r[ir].values())

    def as_close_as_torch(r, ir):
        # fp32 matches, and the bf16 run is at least as close to fp32 PyTorch as PyTorch's own
        # bf16 autocast is (a random deep network amplifies bf16 rounding past any fixed bar).
        v, b = r[ir]["none"], r[ir]["matmul"]
        if v["result"] != "match" or b["result"] not in ("match", "MISMATCH"):
            return False
        return b["result"] == "match" or (r["torch_bf16"] is not None and
                                          b["cosine"] >= r["torch_bf16"])

    n = len(rows)
    checked = [(r["name"], ir, c) for r in rows for ir in ("model.pt2", "model_core.pt2")
               for c, v in r[ir].items() if v.get("analyze_agrees") is not None]
    disagree = [(r["name"], ir, c) for r in rows for ir in ("model.pt2", "model_core.pt2")
                for c, v in r[ir].items() if v.get("analyze_agrees") is False]
    by_commit = {}
    for r in rows:
        by_commit[r.get("commit", commit)] = by_commit.get(r.get("commit", commit), 0) + 1
    measured_at = "commit " + ", ".join(f"{c} ({k} models)" if len(by_commit) > 1 else c
                                        for c, k in sorted(by_commit.items()))
    lines = [
        "# Architecture sweep: compile and match on models nobody hand-picked",
        "",
        f"Measured {datetime.date.today()} at {measured_at} by `bench/coverage.py` on the export of "
        "`models/scripts/sweep.py` (torch 2.14, transformers and torchvision families with small "
        "random configs; text models take input_ids 1×16, vision models 1×3×96² or their minimum "
        "size). trn1; a model passes an IR when `neuronc verify` matches PyTorch with "
        "`--auto-cast none` (1e-4 + 1e-3·|ref|) and with `--auto-cast matmul` (cosine ≥ 0.999).",
        "",
        f"- training IR (`model.pt2`): **{sum(passed(r, 'model.pt2') for r in rows)} / {n}** pass",
        f"- core ATen (`model_core.pt2`): **{sum(passed(r, 'model_core.pt2') for r in rows)} / {n}** pass",
        f"- counting a bf16 run that is at least as close to fp32 as PyTorch's own bf16 autocast "
        f"(`torch.autocast('cpu', bfloat16)` on the same weights and input) as a pass: training IR "
        f"**{sum(as_close_as_torch(r, 'model.pt2') for r in rows)} / {n}**, core ATen "
        f"**{sum(as_close_as_torch(r, 'model_core.pt2') for r in rows)} / {n}**",
        f"- `neuronc analyze` agrees with `neuronc compile` (supported exactly when it compiles) on "
        f"**{len(checked) - len(disagree)} / {len(checked)}** (model, IR, auto-cast) runs"
        + (": " + ", ".join(f"{m} {ir} {c}" for m, ir, c in disagree) + " disagree" if disagree else ""),
        f"- not counted: {len(apart)} families the sweep could not export or whose reference is degenerate (listed below)",
        "",
        "| model | kind | params | training IR fp32 | training IR bf16 | core fp32 | core bf16 | "
        "PyTorch bf16 cosine | failing op / error |",
        "|---|---|---|---|---|---|---|---|---|",
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
        tb = f"{r['torch_bf16']:.5f}" if r["torch_bf16"] is not None else "—"
        lines.append(f"| {r['name']} | {r['kind']} | {r['parameters']} | " + " | ".join(cells) +
                     f" | {tb} | {why.replace('|', '/')} |")
    lines += ["", "## Not counted", "", "| model | kind | status | reason |", "|---|---|---|---|"]
    for name, kind, status, reason in apart:
        reason = " ".join(reason.split())[:200].replace("|", "/")
        lines.append(f"| {name} | {kind} | {status} | {reason} |")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(rows_path, "w") as f:
        json.dump({"commit": commit, "rows": rows}, f, indent=1)
    print("wrote", a.out)


if __name__ == "__main__":
    sys.exit(main())
