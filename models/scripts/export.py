#!/usr/bin/env python3
"""Export neuronc fixtures with the torch that runs this script.

Per model, into OUT/<name>/:
  model.pt2          torch.export.export(...) + torch.export.save (training IR)
  model_core.pt2     the same program after run_decompositions() (core ATen)
  model.pt           torch.jit.trace + save, when tracing works (meta.json says why not otherwise)
  input_<i>.npy      example inputs, in forward-argument order
  output_<i>.npy     eager fp32 outputs, flattened (pytree) in the exported program's user-output order
  intermediates.npz  output of every call_function node of model.pt2's graph, keyed by node name
  meta.json          versions, files, ops with counts, parameters, FLOPs, signature, seeds, checks

Usage: export.py --out DIR [--set small|key|full] [--only a,b] [--no-intermediates]
"""

import argparse
import collections
import copy
import hashlib
import io
import json
import os
import platform
import sys
import time
import traceback
import warnings
import zipfile

import numpy as np
import torch
from torch.utils import _pytree as pytree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402

FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def clone_tree(x):
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, x)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    # numpy has no bfloat16: bf16 tensors are written widened to float32 (exact); meta.json keeps
    # their dtype. neuronc converts a float32 .npy given for a bf16 input back (round to nearest
    # even, exact for these).
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.detach().cpu().contiguous().numpy()


def dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


def write_npz(path, arrays):
    """np.savez equivalent with fixed timestamps, so the bytes are reproducible."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def dumps_compact(obj, level=0):
    """JSON with one key per line, but scalar lists and small flat objects on a single line."""
    pad, pad1 = " " * level, " " * (level + 1)
    scalar = (str, int, float, bool, type(None))
    if isinstance(obj, list):
        if all(isinstance(v, scalar) for v in obj):
            return json.dumps(obj)
        return "[\n" + ",\n".join(pad1 + dumps_compact(v, level + 1) for v in obj) + "\n" + pad + "]"
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        flat = json.dumps(obj)
        if len(flat) <= 100 and all(isinstance(v, scalar) or (isinstance(v, list) and
                                    all(isinstance(x, scalar) for x in v)) for v in obj.values()):
            return flat
        return "{\n" + ",\n".join(pad1 + json.dumps(str(k)) + ": " + dumps_compact(v, level + 1)
                                   for k, v in obj.items()) + "\n" + pad + "}"
    return json.dumps(obj)


def max_abs_diff(a_list, b_list):
    if len(a_list) != len(b_list):
        return f"output count differs: {len(a_list)} vs {len(b_list)}"
    worst = 0.0
    for a, b in zip(a_list, b_list):
        if tuple(a.shape) != tuple(b.shape):
            return f"shape differs: {tuple(a.shape)} vs {tuple(b.shape)}"
        if a.numel():
            worst = max(worst, (a.detach().double() - b.detach().double()).abs().max().item())
    return worst


def serialized_program_json(path):
    """The ExportedProgram JSON exactly as stored (PT2 archive or legacy zip)."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        for n in names:
            if n == "serialized_exported_program.json":
                return "legacy-zip", json.loads(zf.read(n))
        for n in names:
            parts = n.split("/")
            if len(parts) == 3 and parts[1] == "models" and parts[2].endswith(".json"):
                return "pt2-archive", json.loads(zf.read(n))
    raise RuntimeError(f"{path}: no ExportedProgram JSON found in {names[:10]}")


def graph_ops(program):
    """Op counts from the serialized graph (what the C++ frontend sees), including nested graphs."""
    counts = collections.Counter()

    def walk_graph(g):
        for node in g.get("nodes", []):
            counts[node["target"]] += 1
            for inp in node.get("inputs", []):
                walk_arg(inp.get("arg"))

    def walk_arg(arg):
        if isinstance(arg, dict):
            for k, v in arg.items():
                if k == "as_graph" and isinstance(v, dict) and "graph" in v:
                    walk_graph(v["graph"])
                else:
                    walk_arg(v)
        elif isinstance(arg, list):
            for v in arg:
                walk_arg(v)

    walk_graph(program["graph_module"]["graph"])
    return dict(sorted(counts.items()))


def schema_info(program):
    sv = program.get("schema_version")
    if isinstance(sv, dict):
        sv = f"{sv.get('major')}.{sv.get('minor')}"
    return {"schema_version": sv, "dialect": program.get("dialect"),
            "verifiers": program.get("verifiers"), "torch_version": program.get("torch_version")}


def lifted_inputs(ep, args):
    """Flat inputs for ep.graph_module in input_specs order (params, buffers, constants, user)."""
    from torch.export.graph_signature import InputKind
    flat_user = iter(pytree.tree_flatten(args)[0])
    flat = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            flat.append(next(flat_user))
        elif spec.kind == InputKind.PARAMETER:
            flat.append(ep.state_dict[spec.target])
        elif spec.kind == InputKind.BUFFER:
            if spec.persistent:
                flat.append(ep.state_dict[spec.target])
            else:
                flat.append(ep.constants[spec.target])
        elif spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ):
            flat.append(ep.constants[spec.target])
        else:
            raise RuntimeError(f"unsupported input kind {spec.kind}")
    return [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in flat]


class Capture(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}
        self.skipped = []

    def run_node(self, n):
        result = super().run_node(n)
        if n.op == "call_function":
            if isinstance(result, torch.Tensor):
                self.values[n.name] = result.detach().clone()
            else:
                self.skipped.append(n.name)
        return result


def nested_graph_nodes(gm):
    """Nodes inside higher-order-op subgraphs (e.g. wrap_with_set_grad_enabled): their values are
    not captured one by one, only the HOP's outputs (through its getitem nodes)."""
    nested = {}
    for name, mod in gm.named_modules():
        if name and isinstance(mod, torch.fx.GraphModule):
            nested[name] = [n.name for n in mod.graph.nodes if n.op == "call_function"]
    return nested


def mutated_buffers(before_model, after_model, copied, core_ep):
    """Buffers that one eager call changed, with their values afterwards (small ones inline).

    The training IR (model.pt2) updates buffers in place (add_, batch_norm with training=True) and
    lists no BUFFER_MUTATION outputs; the core IR (model_core.pt2) returns the new values as
    BUFFER_MUTATION outputs, named here as core_output."""
    if not copied:
        return []
    core_out = {s.target: s.arg.name for s in core_ep.graph_signature.output_specs
                if s.kind.name == "BUFFER_MUTATION"}
    before = dict(before_model.named_buffers())
    result = []
    for name, after in after_model.named_buffers():
        old = before.get(name)
        if old is None or torch.equal(old, after):
            continue
        entry = {"target": name, "dtype": dtype_name(after), "shape": list(after.shape),
                 "core_output": core_out.get(name)}
        if after.numel() <= 1024:
            entry["after"] = to_numpy(after).tolist()
        result.append(entry)
    return result


def signature_entries(ep):
    inputs = [{"kind": s.kind.name, "name": s.arg.name if hasattr(s.arg, "name") else str(s.arg),
               "target": s.target,
               **({"persistent": s.persistent} if s.kind.name == "BUFFER" else {})}
              for s in ep.graph_signature.input_specs]
    outputs = [{"kind": s.kind.name, "name": s.arg.name if hasattr(s.arg, "name") else str(s.arg),
                "target": s.target} for s in ep.graph_signature.output_specs]
    return inputs, outputs


def placeholder_shapes(ep):
    shapes = {}
    for node in ep.graph.nodes:
        if node.op == "placeholder" and "val" in node.meta and isinstance(node.meta["val"], torch.Tensor):
            shapes[node.name] = [d if isinstance(d, int) else str(d) for d in node.meta["val"].shape]
    return shapes


def range_constraints(ep):
    out = {}
    for sym, vr in ep.range_constraints.items():
        def conv(v):
            try:
                return int(v)
            except Exception:
                return str(v)
        out[str(sym)] = [conv(vr.lower), conv(vr.upper)]
    return out


def flop_count(model, args):
    try:
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as fc:
            model(*args)
        per_op = {str(k): int(v) for k, v in fc.get_flop_counts().get("Global", {}).items()}
        return int(fc.get_total_flops()), per_op
    except Exception as e:  # pragma: no cover
        return None, {"error": repr(e)}


def export_one(entry, out_dir, with_intermediates=True, log=print):
    t0 = time.time()
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        p = os.path.join(out_dir, f)
        if os.path.isfile(p):
            os.remove(p)
    fx = entry.build()
    model, args = fx.model, fx.args
    # Each use gets a fresh copy of the initial module (buffers may mutate). The full-size zoo is
    # eval-only and too big to copy five times, so it shares one instance.
    fresh = (lambda m: m) if entry.full else copy.deepcopy
    pristine = fresh(model)
    notes = []
    files = []

    # Eager reference outputs from a fresh copy.
    eager_model = fresh(pristine)
    eager_out = eager_model(*clone_tree(args))
    eager_flat = [t.detach() for t in pytree.tree_flatten(eager_out)[0]]

    # A reference only tests a compiler when its outputs carry signal: not all (nearly) zero,
    # and different for a different input. Float inputs are perturbed, integer ones (token ids)
    # rolled by one position.
    def perturbed(t):
        if not isinstance(t, torch.Tensor):
            return t
        if t.is_floating_point():
            g = torch.Generator().manual_seed(12345)
            return t + 0.5 * torch.randn(t.shape, generator=g, dtype=t.dtype) * (t.std() if t.numel() > 1 else 1)
        if t.dtype in (torch.int32, torch.int64) and t.dim() and t.shape[-1] > 1 and t.unique().numel() > 1:
            return t.roll(1, dims=-1)
        return t.clone()
    with torch.no_grad():
        other_flat = [t.detach() for t in pytree.tree_flatten(
            fresh(pristine)(*pytree.tree_map(perturbed, clone_tree(args))))[0]]
    signal = {}
    for i, (a, b) in enumerate(zip(eager_flat, other_flat)):
        if not (isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel()):
            continue
        scale = a.double().abs().max().item()
        change = (a.double() - b.double()).abs().max().item() / scale if scale > 0 else 0.0
        signal[f"output_{i}"] = {"max_abs": scale, "std": a.double().std().item() if a.numel() > 1 else 0.0,
                                 "relative_change_on_other_input": change}
        if entry.full and (scale < 1e-6 or change < 1e-3):
            raise RuntimeError(f"{entry.name}: output_{i} is degenerate (max |x| {scale:.3g}, relative change "
                               f"{change:.3g} on another input); the reference would not test anything")

    # PyTorch's own bf16 error: the same model under CPU autocast to bf16 (matmul, conv and
    # attention in bf16, as neuronc's --auto-cast matmul), against the fp32 outputs. A compiler's
    # bf16 result can only be expected as close to fp32 as PyTorch's own bf16 run is.
    bf16_autocast = {}
    if entry.full:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            bf_flat = [t.detach() for t in pytree.tree_flatten(fresh(pristine)(*clone_tree(args)))[0]]
        for i, (a, b) in enumerate(zip(eager_flat, bf_flat)):
            if isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel():
                a64, b64 = a.double().flatten(), b.double().flatten()
                cos = (a64 @ b64 / (a64.norm() * b64.norm())).item() if a64.norm() > 0 and b64.norm() > 0 else 1.0
                bf16_autocast[f"output_{i}"] = {"cosine": cos, "max_abs_error": (a64 - b64).abs().max().item()}

    # torch.export (training IR).
    ep = torch.export.export(fresh(pristine), clone_tree(args),
                             dynamic_shapes=fx.dynamic_shapes, strict=False)
    torch.export.save(ep, os.path.join(out_dir, "model.pt2"))
    files.append("model.pt2")

    core = ep.run_decompositions()
    torch.export.save(core, os.path.join(out_dir, "model_core.pt2"))
    files.append("model_core.pt2")

    # Checks: the saved programs reload and match eager.
    checks = {"output signal": signal}
    if bf16_autocast:
        checks["pytorch bf16 autocast vs fp32"] = bf16_autocast
    for label, fname in (("model.pt2", "model.pt2"), ("model_core.pt2", "model_core.pt2")):
        try:
            loaded = torch.export.load(os.path.join(out_dir, fname))
            got = pytree.tree_flatten(loaded.module()(*clone_tree(args)))[0]
            checks[f"{label} reloaded vs eager max_abs_diff"] = max_abs_diff(got, eager_flat)
        except Exception as e:
            checks[f"{label} reloaded vs eager"] = f"failed: {type(e).__name__}: {e}"[:500]

    # Intermediates of the training-IR graph, by node name.
    cap = Capture(ep.graph_module)
    graph_out = cap.run(*lifted_inputs(ep, clone_tree(args)))
    n_user = len(ep.graph_signature.user_outputs)
    interp_user = list(graph_out)[len(graph_out) - n_user:]
    checks["interpreter user outputs vs eager max_abs_diff"] = max_abs_diff(
        [t for t in interp_user if isinstance(t, torch.Tensor)], eager_flat)
    inter_meta = {"file": None}
    if with_intermediates:
        arrays = {k: to_numpy(v) for k, v in cap.values.items()}
        nbytes = sum(a.nbytes for a in arrays.values())
        write_npz(os.path.join(out_dir, "intermediates.npz"), arrays)
        files.append("intermediates.npz")
        inter_meta = {
            "file": "intermediates.npz", "graph": "model.pt2", "count": len(arrays),
            "bytes": int(nbytes),
            "dtypes": dict(collections.Counter(str(a.dtype) for a in arrays.values())),
            "non_tensor_nodes_skipped": cap.skipped,
            "nested_graphs_not_captured": nested_graph_nodes(ep.graph_module),
            "note": "one entry per call_function node of model.pt2's graph whose value is a tensor,"
                    " keyed by node name (= the name of its output in the serialized graph);"
                    " tuple-valued nodes are covered by their getitem nodes",
        }

    # TorchScript.
    ts_meta = {"file": None}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(fresh(pristine), clone_tree(args),
                                     check_trace=False, strict=False)
        traced.save(os.path.join(out_dir, "model.pt"))
        files.append("model.pt")
        ts_ops = collections.Counter(n.kind() for n in traced.inlined_graph.nodes())
        reloaded = torch.jit.load(os.path.join(out_dir, "model.pt"))
        got = pytree.tree_flatten(reloaded(*clone_tree(args)))[0]
        ts_meta = {"file": "model.pt", "method": "torch.jit.trace(strict=False)",
                   "ops": dict(sorted(ts_ops.items())),
                   "reloaded_vs_eager_max_abs_diff": max_abs_diff(got, eager_flat)}
    except Exception as e:
        # A trace that saved but does not run again is no fixture either.
        if "model.pt" in files:
            files.remove("model.pt")
            os.remove(os.path.join(out_dir, "model.pt"))
        ts_meta = {"file": None, "method": "torch.jit.trace(strict=False)",
                   "error": f"{type(e).__name__}: {e}"[-1000:]}
        notes.append("torch.jit.trace failed; no model.pt (see torchscript.error)")

    # Inputs / outputs.
    in_names = list(ep.graph_signature.user_inputs)
    flat_args = pytree.tree_flatten(args)[0]
    ph_shapes = placeholder_shapes(ep)
    inputs = []
    for i, (name, t) in enumerate(zip(in_names, flat_args)):
        fname = f"input_{i}.npy"
        np.save(os.path.join(out_dir, fname), to_numpy(t))
        files.append(fname)
        inputs.append({"index": i, "name": name, "file": fname, "dtype": dtype_name(t),
                       "shape": list(t.shape), "exported_shape": ph_shapes.get(name)})
    out_names = list(ep.graph_signature.user_outputs)
    outputs = []
    for i, t in enumerate(eager_flat):
        fname = f"output_{i}.npy"
        np.save(os.path.join(out_dir, fname), to_numpy(t))
        files.append(fname)
        outputs.append({"index": i, "name": out_names[i] if i < len(out_names) else None,
                        "file": fname, "dtype": dtype_name(t), "shape": list(t.shape)})

    # References at other shapes of a dynamic program (Fixture.more_args).
    more_shapes = []
    for k, more in enumerate(fx.more_args, 1):
        sub = f"shape_{k}"
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
        with torch.no_grad():
            got = [t.detach() for t in pytree.tree_flatten(fresh(pristine)(*clone_tree(more)))[0]]
        for kind, tensors in (("input", pytree.tree_flatten(more)[0]), ("output", got)):
            for i, t in enumerate(tensors):
                fname = f"{sub}/{kind}_{i}.npy"
                np.save(os.path.join(out_dir, fname), to_numpy(t))
                files.append(fname)
        more_shapes.append({"dir": sub, "inputs": [list(t.shape) for t in pytree.tree_flatten(more)[0]]})

    mutated = mutated_buffers(pristine, eager_model, fresh is copy.deepcopy, core)

    sig_in, sig_out = signature_entries(ep)
    core_sig_in, core_sig_out = signature_entries(core)
    fmt, prog = serialized_program_json(os.path.join(out_dir, "model.pt2"))
    core_fmt, core_prog = serialized_program_json(os.path.join(out_dir, "model_core.pt2"))
    flops, flops_per_op = flop_count(fresh(pristine), clone_tree(args))

    # SHA-256 of every state-dict tensor's contiguous little-endian bytes, so readers can check
    # the weights they map bit for bit.
    weights = {}
    for fqn, t in pristine.state_dict().items():
        c = t.detach().contiguous().cpu()
        raw = c.reshape(-1).view(torch.uint8).numpy().tobytes() if c.numel() else b""
        weights[fqn] = {"dtype": str(c.dtype).replace("torch.", ""), "shape": list(c.shape),
                        "sha256": hashlib.sha256(raw).hexdigest()}
    n_params = sum(p.numel() for p in pristine.parameters())
    n_buffers = sum(b.numel() for b in pristine.buffers())
    ops = graph_ops(prog)
    core_ops = graph_ops(core_prog)

    meta = {
        "name": entry.name,
        "description": fx.description,
        "exercises": fx.exercises,
        "torch": torch.__version__,
        "versions": {
            "torch": torch.__version__, "python": platform.python_version(),
            "numpy": np.__version__,
            **{m: __import__(m).__version__ for m in entry.requires},
        },
        "files": sorted(files),
        "more_shapes": more_shapes,
        "container": {"model.pt2": fmt, "model_core.pt2": core_fmt},
        "serialized": {"model.pt2": schema_info(prog), "model_core.pt2": schema_info(core_prog)},
        "seeds": {"model": fx.model_seed, "inputs": fx.input_seed},
        "config": fx.config,
        "parameters": int(n_params),
        "buffer_elements": int(n_buffers),
        "weights": weights,
        "flops": flops,
        "flops_note": "torch.utils.flop_counter.FlopCounterMode on the eager forward: 2 FLOPs per"
                      " multiply-add, counts matmul/conv/SDPA-family ops only",
        "flops_per_op": flops_per_op,
        "inputs": inputs,
        "outputs": outputs,
        "mutated_buffers": mutated,
        "dynamic_dims": fx.dynamic_dims or {},
        "range_constraints": range_constraints(ep),
        "signature": {"model.pt2": {"inputs": sig_in, "outputs": sig_out},
                      "model_core.pt2": {"inputs": core_sig_in, "outputs": core_sig_out}},
        "ops": {"model.pt2": ops, "model_core.pt2": core_ops},
        "op_totals": {"model.pt2": sum(ops.values()), "model_core.pt2": sum(core_ops.values())},
        "torchscript": ts_meta,
        "intermediates": inter_meta,
        "checks": checks,
        "notes": notes,
        "export": {"call": "torch.export.export(model, args, dynamic_shapes=..., strict=False)",
                   "core": "ep.run_decompositions() (default core ATen table)",
                   "eager": "fresh deep copy of the initial module, fp32, grad mode on,"
                            " torch.set_num_threads(1)"},
    }
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        f.write(dumps_compact(meta) + "\n")
    log(f"{entry.name}: ok in {time.time() - t0:.1f}s, params {n_params}, "
        f"ops {meta['op_totals']}, ts={'yes' if ts_meta.get('file') else 'no'}, checks {checks}")
    return meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=["small", "key", "full"], default="small")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-intermediates", action="store_true")
    opts = ap.parse_args()

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    entries = {"small": zoo.SMALL, "key": [e for e in zoo.SMALL if e.key], "full": zoo.FULL}[opts.set]
    if opts.only:
        wanted = set(opts.only.split(","))
        entries = [e for e in entries if e.name in wanted]
    failed = []
    if len(entries) > 1:
        # One process per fixture: TorchScript class mangling (___torch_mangle_N) and FX's
        # <eval_with_key>.N are process-wide counters, so a fixture's bytes would otherwise depend
        # on which fixtures were exported before it.
        import subprocess
        for entry in entries:
            cmd = [sys.executable, os.path.abspath(__file__), "--out", opts.out, "--set", opts.set,
                   "--only", entry.name] + (["--no-intermediates"] if opts.no_intermediates else [])
            if subprocess.call(cmd) != 0:
                failed.append(entry.name)
        if failed:
            print(f"failed: {failed}", flush=True)
            sys.exit(1)
        return
    for entry in entries:
        missing = []
        for mod in entry.requires:
            try:
                __import__(mod)
            except ImportError:
                missing.append(mod)
        if missing:
            print(f"{entry.name}: SKIPPED, missing python modules {missing}", flush=True)
            failed.append(entry.name)
            continue
        try:
            export_one(entry, os.path.join(opts.out, entry.name),
                       with_intermediates=not opts.no_intermediates,
                       log=lambda s: print(s, flush=True))
        except Exception:
            traceback.print_exc()
            print(f"{entry.name}: FAILED", flush=True)
            failed.append(entry.name)
    if failed:
        print(f"failed: {failed}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
