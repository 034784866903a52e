#!/usr/bin/env python3
"""Print a Markdown summary of the fixtures under models/ (sizes, versions, op counts).

  python3 models/scripts/summarize.py            # table of every fixture
  python3 models/scripts/summarize.py --ops bert # training-IR vs core-IR op counts of one fixture
Host-side helper: standard library only.
"""

import argparse
import json
import os

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fixtures():
    for root, dirs, files in os.walk(MODELS):
        rel = os.path.relpath(root, MODELS)
        if rel.split(os.sep)[0] in ("full", "scripts"):
            dirs[:] = []
            continue
        dirs.sort()
        if "meta.json" in files:
            with open(os.path.join(root, "meta.json")) as f:
                yield rel, root, json.load(f)


def size(root, meta):
    return sum(os.path.getsize(os.path.join(root, f)) for f in meta["files"] + ["meta.json"])


def short(op):
    return op.replace("torch.ops.", "").replace("aten.", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", help="fixture folder (e.g. bert or mlp/torch2.6) to list ops of")
    opts = ap.parse_args()
    if opts.ops:
        for rel, root, meta in fixtures():
            if rel == opts.ops:
                a, b = meta["ops"]["model.pt2"], meta["ops"]["model_core.pt2"]
                print(f"| op | model.pt2 ({sum(a.values())}) | model_core.pt2 ({sum(b.values())}) |")
                print("|---|---:|---:|")
                for op in sorted(set(a) | set(b)):
                    print(f"| `{short(op)}` | {a.get(op, '')} | {b.get(op, '')} |")
        return
    total = 0
    print("| fixture | torch | params | FLOPs | ops (train / core) | TorchScript | KiB |")
    print("|---|---|---:|---:|---:|---|---:|")
    for rel, root, meta in fixtures():
        n = size(root, meta)
        total += n
        ts = "yes" if meta["torchscript"].get("file") else "no"
        print(f"| {rel} | {meta['torch']} | {meta['parameters']:,} | {meta['flops'] or 0:,} | "
              f"{meta['op_totals']['model.pt2']} / {meta['op_totals']['model_core.pt2']} | {ts} | "
              f"{n / 1024:,.0f} |")
    print(f"\ntotal {total / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
