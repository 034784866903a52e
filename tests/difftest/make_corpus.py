"""The differential-testing corpus written by PyTorch (docs/DIFFTEST.md, issue 16).

    python3 make_corpus.py OUT_DIR [--from SEED] [--count N]

Each seed draws a random program of 4-10 operators as a torch.nn.Module — element-wise math
with broadcasting, reductions, norms, linear/matmul/attention, convolution and pooling, views,
data movement, and in-place writes through views (slices, selects, transposes, narrows) that
later operators read back through the base — and writes OUT_DIR/case_<seed>/:

    model.pt2        torch.export.export (training IR, in-place ops and views as written)
    model_core.pt2   the same after run_decompositions() (core ATen, functionalized)
    input_<i>.npy    the inputs
    output_<i>.npy   PyTorch's outputs (fp32, eager)
    recipe.txt       the program as Python statements, to read or reproduce a failure

The C++ generator's graphs run through neuronc's own pass pipeline on both sides of the
comparison; these are imported from PyTorch's files and compared with PyTorch's numbers, so a
bug in the frontend, functionalization or decomposition shows up here.

References are checked for signal: every output must have a spread and must change when the
inputs are redrawn; a program that fails either is redrawn with the next sub-seed.

Runs in the export chroot (torch 2.x); one thread, fixed seeds, float64-free.
"""

import argparse
import os
import random
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

torch.set_num_threads(1)

SIZES = [1, 2, 3, 5, 7, 8, 12, 16, 17, 31, 33]


class Program(nn.Module):
    """Runs `steps`, a list of (text, fn) where fn(env) appends to env; returns env[i] for i in
    `outs`. Weights are parameters named w<k>."""

    def __init__(self, steps, weights, outs):
        super().__init__()
        self.steps = steps
        self.outs = outs
        for k, w in enumerate(weights):
            self.register_parameter(f"w{k}", nn.Parameter(w, requires_grad=False))

    def forward(self, *inputs):
        env = list(inputs)
        for _, fn in self.steps:
            fn(self, env)
        return tuple(env[i] for i in self.outs)


class Builder:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.g = torch.Generator().manual_seed(seed)
        self.steps, self.weights, self.lines = [], [], []
        self.shapes, self.kinds = [], []  # per env value: shape, "f" (float) or "i" (index)

    def weight(self, shape, fan_in=None, positive=False):
        fan_in = fan_in or (shape[-1] if shape else 1)
        w = torch.randn(*shape, generator=self.g) / max(fan_in, 1) ** 0.5
        if positive:
            w = w.abs() + 0.5
        self.weights.append(w)
        return len(self.weights) - 1

    def emit(self, text, fn, sample_env):
        """Adds a step; runs it on the sample env to learn the new value's shape."""
        self.steps.append((text, fn))
        self.lines.append(text)
        before = len(sample_env)
        fn(self.module_view, sample_env)
        for v in sample_env[before:]:
            self.shapes.append(tuple(v.shape))
            self.kinds.append("f" if v.is_floating_point() else "i")

    def floats(self, min_rank=1):
        return [i for i, k in enumerate(self.kinds)
                if k == "f" and len(self.shapes[i]) >= min_rank]


class _Weights:
    """Attribute access to the builder's weights while the program is drawn."""

    def __init__(self, b):
        self.b = b

    def __getattr__(self, name):
        return self.b.weights[int(name[1:])]


def draw(seed):
    b = Builder(seed)
    b.module_view = _Weights(b)
    r = b.r
    rank = r.choice([2, 3, 3, 4])
    shape = [r.choice(SIZES) for _ in range(rank)]
    if rank == 4:
        shape[0] = 1
    inputs = [torch.randn(*shape, generator=b.g)]
    if r.random() < 0.4:
        other = list(shape)
        other[-1] = r.choice(SIZES)
        inputs.append(torch.randn(*other, generator=b.g))
    env = list(inputs)
    for x in inputs:
        b.shapes.append(tuple(x.shape))
        b.kinds.append("f")
    n_ops = r.randint(4, 10)
    tries = 0
    while len(b.steps) < n_ops and tries < 200:
        tries += 1
        op = r.choice(OPS)
        try:
            text_fn = op(b, r)
        except Skip:
            continue
        if text_fn is None:
            continue
        text, fn = text_fn
        trial = list(env)
        try:
            with torch.no_grad():
                fn(b.module_view, trial)
        except Exception:
            continue
        if any(not torch.isfinite(v).all() for v in trial[len(env):] if v.is_floating_point()):
            continue
        b.emit(text, fn, env)
    floats = [i for i in b.floats(0) if i >= len(inputs)]
    if not floats:
        return None
    outs = sorted(set([floats[-1]] + r.sample(floats, min(len(floats), r.randint(0, 2)))))
    return b, inputs, outs


class Skip(Exception):
    pass


def pick(b, r, min_rank=1):
    """Mostly one of the three newest values, so programs chain instead of fanning out."""
    c = b.floats(min_rank)
    if not c:
        raise Skip
    return r.choice(c[-3:]) if r.random() < 0.75 else r.choice(c)


# Each op draws its operands and attributes and returns (python text, fn(m, env)).

def op_unary(b, r):
    i = pick(b, r, 0)
    name, f = r.choice([("relu", torch.relu), ("gelu", F.gelu), ("tanh", torch.tanh),
                        ("sigmoid", torch.sigmoid), ("silu", F.silu),
                        ("exp", lambda x: torch.exp(x.clamp(-5, 5))),
                        ("abs", torch.abs), ("neg", torch.neg),
                        ("rsqrt", lambda x: torch.rsqrt(x.abs() + 0.5)),
                        ("log", lambda x: torch.log(x.abs() + 0.5))])
    return f"v = {name}(v{i})", lambda m, e: e.append(f(e[i]))


def op_binary(b, r):
    i = pick(b, r, 0)
    s = b.shapes[i]
    name, f = r.choice([("add", torch.add), ("sub", torch.sub), ("mul", torch.mul),
                        ("div", lambda x, y: x / (y.abs() + 0.5)),
                        ("maximum", torch.maximum), ("minimum", torch.minimum)])
    same = [j for j in b.floats(0) if b.shapes[j] == s and j != i]
    if same and r.random() < 0.5:
        j = r.choice(same)
        return f"v = {name}(v{i}, v{j})", lambda m, e: e.append(f(e[i], e[j]))
    # A broadcasting weight: some dims 1, some leading dims dropped.
    ws = [d if r.random() < 0.6 else 1 for d in s]
    ws = ws[r.randint(0, len(ws)):] if ws and r.random() < 0.3 else ws
    k = b.weight(ws or [1], fan_in=1)
    return f"v = {name}(v{i}, w{k})", lambda m, e: e.append(f(e[i], getattr(m, f"w{k}")))


def op_scalar(b, r):
    i = pick(b, r, 0)
    c = round(r.uniform(-2, 2), 3)
    name, f = r.choice([("add", lambda x: x + c), ("mul", lambda x: x * c),
                        ("rsub", lambda x: c - x), ("clamp", lambda x: x.clamp(-abs(c), abs(c) + 0.1)),
                        ("pow2", lambda x: x.pow(2))])
    return f"v = {name}(v{i}, {c})", lambda m, e: e.append(f(e[i]))


def op_where(b, r):
    i = pick(b, r, 0)
    c = round(r.uniform(-0.5, 0.5), 3)
    if r.random() < 0.5:
        return (f"v = where(v{i} > {c}, v{i}, 0.5 * v{i})",
                lambda m, e: e.append(torch.where(e[i] > c, e[i], 0.5 * e[i])))
    return (f"v = v{i}.masked_fill(v{i} < {c}, -1.5)",
            lambda m, e: e.append(e[i].masked_fill(e[i] < c, -1.5)))


def op_reduce(b, r):
    i = pick(b, r, 2)
    rank = len(b.shapes[i])
    d = r.randrange(rank) - rank * (r.random() < 0.5)
    keep = r.random() < 0.5
    name, f = r.choice([("sum", lambda x: x.sum(d, keepdim=keep)),
                        ("mean", lambda x: x.mean(d, keepdim=keep)),
                        ("amax", lambda x: x.amax(d, keepdim=keep)),
                        ("max.dim", lambda x: x.max(d, keepdim=keep).values),
                        ("var", lambda x: x.var(d, keepdim=keep) if x.shape[d] > 1 else x.sum(d, keepdim=keep)),
                        ("cumsum", lambda x: x.cumsum(d)),
                        ("softmax", lambda x: x.softmax(d)),
                        ("log_softmax", lambda x: x.log_softmax(d))])
    return f"v = {name}(v{i}, dim={d}, keepdim={keep})", lambda m, e: e.append(f(e[i]))


def op_norm(b, r):
    i = pick(b, r, 2)
    n = b.shapes[i][-1]
    if r.random() < 0.6:
        w, bb = b.weight([n], positive=True), b.weight([n], fan_in=1)
        return (f"v = layer_norm(v{i}, [{n}], w{w}, w{bb})",
                lambda m, e: e.append(F.layer_norm(e[i], [n], getattr(m, f"w{w}"), getattr(m, f"w{bb}"))))
    s = b.shapes[i]
    if len(s) < 3 or s[1] % 1:
        raise Skip
    c = s[1]
    groups = r.choice([g for g in (1, 2, 3, 4) if c % g == 0])
    return (f"v = group_norm(v{i}, {groups})", lambda m, e: e.append(F.group_norm(e[i], groups)))


def op_linear(b, r):
    i = pick(b, r, 1)
    k = b.shapes[i][-1]
    n = r.choice(SIZES)
    w = b.weight([n, k])
    bias = b.weight([n], fan_in=1) if r.random() < 0.6 else None
    if bias is None:
        return f"v = linear(v{i}, w{w})", lambda m, e: e.append(F.linear(e[i], getattr(m, f"w{w}")))
    return (f"v = linear(v{i}, w{w}, w{bias})",
            lambda m, e: e.append(F.linear(e[i], getattr(m, f"w{w}"), getattr(m, f"w{bias}"))))


def op_matmul(b, r):
    i = pick(b, r, 2)
    s = b.shapes[i]
    cand = [j for j in b.floats(2) if b.shapes[j][:-2] == s[:-2] and b.shapes[j][-1] == s[-1]]
    if not cand:
        raise Skip
    j = r.choice(cand)
    scale = 1 / max(s[-1], 1) ** 0.5
    return (f"v = v{i} @ v{j}.transpose(-1, -2) * {scale:.4g}",
            lambda m, e: e.append(e[i] @ e[j].transpose(-1, -2) * scale))


def op_attention(b, r):
    i = pick(b, r, 3)
    causal = r.random() < 0.5
    return (f"v = sdpa(v{i}, v{i}, v{i}, is_causal={causal})",
            lambda m, e: e.append(F.scaled_dot_product_attention(e[i], e[i], e[i], is_causal=causal)))


def op_conv(b, r):
    i = pick(b, r, 3)
    s = b.shapes[i]
    if len(s) == 3:
        cin, cout = s[1], r.choice([2, 3, 5, 8])
        kk = r.choice([1, 3])
        stride, pad = r.choice([1, 2]), r.choice([0, 1])
        if s[2] + 2 * pad < kk:
            raise Skip
        w = b.weight([cout, cin, kk], fan_in=cin * kk)
        return (f"v = conv1d(v{i}, w{w}, stride={stride}, padding={pad})",
                lambda m, e: e.append(F.conv1d(e[i], getattr(m, f"w{w}"), stride=stride, padding=pad)))
    if len(s) != 4:
        raise Skip
    cin = s[1]
    groups = cin if r.random() < 0.3 else 1
    cout = cin if groups > 1 else r.choice([2, 3, 5, 8])
    kk = r.choice([1, 3])
    stride, pad, dil = r.choice([1, 2]), r.choice([0, 1]), r.choice([1, 1, 2])
    if min(s[2], s[3]) + 2 * pad < dil * (kk - 1) + 1:
        raise Skip
    w = b.weight([cout, cin // groups, kk, kk], fan_in=cin // groups * kk * kk)
    return (f"v = conv2d(v{i}, w{w}, stride={stride}, padding={pad}, dilation={dil}, groups={groups})",
            lambda m, e: e.append(F.conv2d(e[i], getattr(m, f"w{w}"), stride=stride, padding=pad,
                                           dilation=dil, groups=groups)))


def op_pool(b, r):
    i = pick(b, r, 4)
    s = b.shapes[i]
    k = r.choice([2, 3])
    if min(s[2], s[3]) < k:
        raise Skip
    if r.random() < 0.5:
        return (f"v = max_pool2d(v{i}, {k})", lambda m, e: e.append(F.max_pool2d(e[i], k)))
    return (f"v = avg_pool2d(v{i}, {k}, stride=1)",
            lambda m, e: e.append(F.avg_pool2d(e[i], k, stride=1)))


def op_view(b, r):
    i = pick(b, r, 1)
    s = b.shapes[i]
    rank = len(s)
    c = r.randrange(6)
    if c == 0:
        p = list(range(rank))
        r.shuffle(p)
        return f"v = v{i}.permute({p})", lambda m, e: e.append(e[i].permute(*p))
    if c == 1 and rank >= 2:
        return f"v = v{i}.transpose(0, -1)", lambda m, e: e.append(e[i].transpose(0, -1))
    if c == 2:
        d = r.randrange(rank)
        st = r.randrange(s[d])
        step = r.choice([1, 1, 2])
        return (f"v = v{i}.narrow/slice(dim={d}, {st}::{step})",
                lambda m, e: e.append(e[i][(slice(None),) * d + (slice(st, None, step),)]))
    if c == 3:
        flat = 1
        for x in s:
            flat *= x
        return f"v = v{i}.reshape(-1, {s[-1]})", lambda m, e: e.append(e[i].reshape(-1, s[-1]))
    if c == 4:
        d = r.randrange(rank + 1)
        return f"v = v{i}.unsqueeze({d})", lambda m, e: e.append(e[i].unsqueeze(d))
    d = r.randrange(rank)
    idx = r.randrange(s[d])
    if rank < 2:
        raise Skip
    return f"v = v{i}.select({d}, {idx})", lambda m, e: e.append(e[i].select(d, idx))


def op_movement(b, r):
    i = pick(b, r, 1)
    s = b.shapes[i]
    rank = len(s)
    d = r.randrange(rank)
    c = r.randrange(6)
    if c == 0:
        return f"v = cat([v{i}, v{i} * 2], {d})", lambda m, e: e.append(torch.cat([e[i], e[i] * 2], d))
    if c == 1:
        return f"v = v{i}.flip({d})", lambda m, e: e.append(e[i].flip(d))
    if c == 2:
        sh = r.randint(1, 3)
        return f"v = v{i}.roll({sh}, {d})", lambda m, e: e.append(e[i].roll(sh, d))
    if c == 3:
        reps = [1] * rank
        reps[d] = 2
        return f"v = v{i}.repeat({reps})", lambda m, e: e.append(e[i].repeat(*reps))
    if c == 4:
        pads = [r.randint(0, 2), r.randint(0, 2)]
        return f"v = pad(v{i}, {pads})", lambda m, e: e.append(F.pad(e[i], pads))
    if s[d] < 2:
        raise Skip
    return (f"v = v{i}.chunk(2, {d})[-1]", lambda m, e: e.append(e[i].chunk(2, d)[-1]))


def op_inplace(b, r):
    """A write through a view of a fresh copy; the copy (the base) is the new value, so later
    readers see the write only if the view's mutation is carried back."""
    i = pick(b, r, 2)
    s = b.shapes[i]
    rank = len(s)
    d = r.randrange(rank)
    st = r.randrange(s[d])
    c = r.randrange(5)
    sl = (slice(None),) * d + (slice(st, None),)
    if c == 0:
        k = b.weight([1], fan_in=1)

        def f(m, e):
            base = e[i].clone()
            base[sl].add_(getattr(m, f"w{k}"))
            e.append(base)
        return f"v = v{i}.clone(); v[dim {d}: {st}:].add_(w{k})", f
    if c == 1:
        def f(m, e):
            base = e[i].clone()
            base.select(d, st).fill_(0.25)
            e.append(base)
        return f"v = v{i}.clone(); v.select({d}, {st}).fill_(0.25)", f
    if c == 2:
        def f(m, e):
            base = e[i] * 1.0
            view = base[sl]
            view.masked_fill_(view > 0.3, -0.75)
            e.append(base)
        return f"v = v{i} * 1; v[dim {d}: {st}:].masked_fill_(> 0.3, -0.75)", f
    if c == 3:
        def f(m, e):
            base = e[i].clone()
            base.transpose(0, -1)[0].mul_(3.0)
            e.append(base)
        return f"v = v{i}.clone(); v.transpose(0, -1)[0].mul_(3)", f

    def f(m, e):
        base = e[i].clone()
        base.narrow(d, st, 1).copy_(e[i].narrow(d, 0, 1) * -1)
        e.append(base)
    return f"v = v{i}.clone(); v.narrow({d}, {st}, 1).copy_(-v{i}.narrow({d}, 0, 1))", f


def op_cast(b, r):
    i = pick(b, r, 0)
    return (f"v = v{i}.to(bfloat16).to(float32)",
            lambda m, e: e.append(e[i].to(torch.bfloat16).to(torch.float32)))


OPS = ([op_unary] * 4 + [op_binary] * 4 + [op_scalar] * 2 + [op_where] * 2 + [op_reduce] * 3 +
       [op_norm] * 2 + [op_linear] * 3 + [op_matmul] + [op_attention] + [op_conv] * 2 +
       [op_pool] + [op_view] * 4 + [op_movement] * 3 + [op_inplace] * 4)


def signal(m, inputs, seed):
    g = torch.Generator().manual_seed(seed + 99)
    with torch.no_grad():
        a = m(*inputs)
        b = m(*[torch.randn(x.shape, generator=g) for x in inputs])
    for x, y in zip(a, b):
        std = x.double().std().item() if x.numel() > 1 else 1.0
        change = ((x - y).double().norm() / max(x.double().norm().item(), 1e-30)).item()
        if not (std > 1e-6 and change > 1e-3):
            return False
    return True


def make_case(seed, out_dir):
    for sub in range(20):
        drawn = draw(seed * 100 + sub)
        if drawn is None:
            continue
        b, inputs, outs = drawn
        m = Program(b.steps, b.weights, outs).eval()
        if not signal(m, inputs, seed):
            continue
        d = os.path.join(out_dir, f"case_{seed}")
        os.makedirs(d, exist_ok=True)
        ep = torch.export.export(m, tuple(inputs), strict=False)
        torch.export.save(ep, os.path.join(d, "model.pt2"))
        torch.export.save(ep.run_decompositions(), os.path.join(d, "model_core.pt2"))
        with torch.no_grad():
            ys = m(*inputs)
        for k, x in enumerate(inputs):
            np.save(os.path.join(d, f"input_{k}.npy"), np.ascontiguousarray(x.numpy()))
        for k, y in enumerate(ys):
            np.save(os.path.join(d, f"output_{k}.npy"), np.ascontiguousarray(y.float().numpy()))
        with open(os.path.join(d, "recipe.txt"), "w") as f:
            f.write(f"# seed {seed} (draw {seed * 100 + sub}), torch {torch.__version__}\n")
            f.write("".join(f"# v{k} = input {k}: {tuple(x.shape)}\n" for k, x in enumerate(inputs)))
            for line in b.lines:
                f.write(line + "\n")
            f.write(f"return {', '.join(f'v{i}' for i in outs)}\n")
        return d
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--from", dest="start", type=int, default=1)
    ap.add_argument("--count", type=int, default=32)
    a = ap.parse_args()
    made = 0
    for seed in range(a.start, a.start + a.count):
        d = make_case(seed, a.out)
        print(f"seed {seed}: {d or 'no non-degenerate program in 20 draws'}", flush=True)
        made += d is not None
    print(f"{made} cases")
    return 0 if made == a.count else 1


if __name__ == "__main__":
    sys.exit(main())
