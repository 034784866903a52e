#!/usr/bin/env python3
"""Write an evaluation set for `neuronc verify --dataset` and `neuronc compare --dataset`: a user's
model run by PyTorch on a folder of inputs, one subdirectory per input set.

    make_dataset.py MODEL INPUTS OUT [--batch B] [--limit N]

MODEL   the program neuronc compiles: a .pt2 (torch.export.save) or a TorchScript .pt
INPUTS  either subdirectories, each one input set holding input_<i>.npy in forward-argument
        order (the layout of a models/<name>/ fixture), or, for a model with one input, .npy
        files, each one set (with --batch B: B files stacked along a new leading dim per set, a
        remainder that does not fill a batch is left out and said so)
OUT     receives OUT/<k>/input_<i>.npy (the inputs as given; a float32 array for a bf16 or f16
        input is cast for PyTorch and written as given, as neuronc converts it too) and
        OUT/<k>/output_<i>.npy (PyTorch's eager outputs, flattened (pytree) in the program's
        user-output order, bf16 widened to float32 as export.py writes them); <k> is the input
        set's subdirectory name, or its position among the files. Sets are read in natural
        order (set2 before set10), as neuronc runs them.

Each set runs on a fresh copy of the module (a program that rewrites its buffers starts every
set from the exported state, as neuronc's Session is reset per set). Runs with the user's
PyTorch and numpy (inside the export chroot of models/export_all.sh, for instance); CI does not
run it.
"""

import argparse
import copy
import os
import re
import shutil
import sys

import numpy as np
import torch
from torch.utils import _pytree as pytree


def natural_key(name):
    """Digit runs compare as numbers, the rest as text: neuronc's order of the sets."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name) if p]


def load_model(path):
    """The callable module and the dtypes of its user inputs (None where unknown)."""
    if path.endswith(".pt2"):
        ep = torch.export.load(path)
        user = set(ep.graph_signature.user_inputs)
        dtypes = [n.meta["val"].dtype if "val" in n.meta and hasattr(n.meta["val"], "dtype") else None
                  for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]
        return ep.module(), dtypes
    module = torch.jit.load(path)
    module.eval()
    return module, None


def to_tensor(array, dtype):
    t = torch.from_numpy(np.ascontiguousarray(array))
    if dtype is not None and t.dtype != dtype and t.is_floating_point() and dtype.is_floating_point:
        t = t.to(dtype)  # numpy has no bfloat16: a float32 file stands for a bf16 input
    return t


def to_numpy(t):
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.detach().cpu().contiguous().numpy()


def input_sets(inputs, batch):
    """[(name, [input file paths or arrays])] in natural order."""
    entries = sorted(os.listdir(inputs), key=natural_key)
    subdirs = [e for e in entries if os.path.isdir(os.path.join(inputs, e))]
    if subdirs:
        sets = []
        for d in subdirs:
            files = []
            while os.path.exists(os.path.join(inputs, d, f"input_{len(files)}.npy")):
                files.append(os.path.join(inputs, d, f"input_{len(files)}.npy"))
            if not files:
                sys.exit(f"make_dataset.py: {os.path.join(inputs, d, 'input_0.npy')} is missing: "
                         "every input set holds input_<i>.npy")
            sets.append((d, files))
        return sets
    files = [os.path.join(inputs, e) for e in entries if e.endswith(".npy")]
    if not files:
        sys.exit(f"make_dataset.py: {inputs} holds neither subdirectories nor .npy files")
    if batch <= 1:
        return [(str(k), [f]) for k, f in enumerate(files)]
    whole = len(files) // batch * batch
    if whole < len(files):
        print(f"make_dataset.py: {len(files) - whole} files after the last whole batch of {batch} "
              "are left out", file=sys.stderr)
    return [(str(k), [np.stack([np.load(f) for f in files[k * batch:(k + 1) * batch]])])
            for k in range(whole // batch)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=1,
                    help="stack this many single-input .npy files into one set")
    ap.add_argument("--limit", type=int, default=0, help="write the first N sets only")
    opts = ap.parse_args()
    module, dtypes = load_model(opts.model)
    sets = input_sets(opts.inputs, opts.batch)
    if opts.limit > 0:
        sets = sets[:opts.limit]
    os.makedirs(opts.out, exist_ok=True)
    for name, items in sets:
        arrays = [np.load(i) if isinstance(i, str) else i for i in items]
        if dtypes is not None and len(arrays) != len(dtypes):
            sys.exit(f"make_dataset.py: set {name} has {len(arrays)} inputs, the model takes "
                     f"{len(dtypes)}")
        args = [to_tensor(a, dtypes[i] if dtypes else None) for i, a in enumerate(arrays)]
        with torch.no_grad():
            out = copy.deepcopy(module)(*args)
        set_dir = os.path.join(opts.out, name)
        os.makedirs(set_dir, exist_ok=True)
        for i, item in enumerate(items):
            dest = os.path.join(set_dir, f"input_{i}.npy")
            if isinstance(item, str):
                shutil.copyfile(item, dest)
            else:
                np.save(dest, item)
        for i, t in enumerate(pytree.tree_flatten(out)[0]):
            np.save(os.path.join(set_dir, f"output_{i}.npy"), to_numpy(t))
    print(f"make_dataset.py: {len(sets)} sets in {opts.out}: neuronc verify {opts.model} "
          f"--dataset {opts.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
