#!/usr/bin/env python3
"""Exports a causal language model for serving with neuronc (issue 17): prefill programs, one
per prompt-length bucket, and a decode program, over a static KV cache.

    export_causal_lm.py HF_DIR OUT_DIR [--max-seq N] [--prefill-buckets 32,64,128]
                        [--decode-buckets 128,256,...] [--batch B] [--meta] [--prompt-len P]
                        [--new-tokens T] [--on-device-sampling [--max-top-k K]]
                        [--random-weights]
    export_causal_lm.py --random FAMILY OUT_DIR [--heads H --kv-heads K] ...
                                                      (a small random model, for tests)

HF_DIR is a `save_pretrained` directory (with --meta or --random-weights, a directory holding
only config.json).
Runs with the user's PyTorch and transformers. OUT_DIR receives:

    manifest.json           family, sizes, buckets, cache layout, files, versions
    prefill_<S>/model.pt2   input_ids [B, S], cache_position [S] -> logits [B, S, vocab]
    decode/model.pt2        input_ids [B, 1], cache_position [1] -> logits [B, 1, vocab]
    decode_<C>/model.pt2    the same, attending over the cache's first C positions only (a
                            context-length bucket, for positions below C)
    reference/              prompt.npy [B, P] and tokens.npy [B, T]: transformers' greedy
                            generate() in fp32 (not with --meta); with --on-device-sampling
                            also sampled.npy, the tokens top-5 sampling at temperature 0.8
                            draws with `neuronc generate --seed 7`'s uniform draws

With --on-device-sampling each program ends in the sampler and returns next_tokens [B] instead
of logits: it takes sampling_params [B, 3] (top-k, temperature and a uniform draw per row) and,
for a prefill, last_token [1] (the last prompt position, whose hidden state alone reaches the LM
head). top-k 1 is greedy; --max-top-k (default 50) bounds top-k (1: greedy only, the cheapest).

Every program holds the KV cache as mutable buffers (transformers' StaticCache, one key and one
value buffer [B, kv_heads, max_seq, head_dim] per layer, written in place with index_copy_ at
cache_position), so prefill fills the cache and each decode step reads and extends it. A decode
step reads the whole cache unless it runs in a context-length bucket: decode_<C> writes its token
at cache_position (which must be below C) and attends over positions 0 .. C-1 only, so a step
early in a long cache reads a fraction of it (NxD Inference's token-generation buckets). The
bucket of --max-seq is `decode`. Each
program directory also holds input_<i>.npy and output_<i>.npy for `neuronc verify`: the
program run once from the empty cache, as its file describes it.

With --meta the weights are never materialised: the programs are traced from fake tensors and
carry no weights (a timing-only export, for estimates of full-size models). neuronc compiles
such programs to a timing-only artifact: `neuronc bench --generate` gives their TTFT and TPOT,
and nothing computes outputs from weights that are not there.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

FAMILIES = {
    # family: (config class, extra config for a small random model)
    "llama": ("LlamaConfig", {}),
    "mistral": ("MistralConfig", {"sliding_window": None}),
    "qwen2": ("Qwen2Config", {}),
    "gemma": ("GemmaConfig", {"head_dim": 8}),
    "phi3": ("Phi3Config", {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}),
    "gpt_neox": ("GPTNeoXConfig", {"num_key_value_heads": 4}),  # no GQA in GPT-NeoX
}

SMALL = {"vocab_size": 128, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256}


def fail(msg):
    print(f"export_causal_lm: error: {msg}", file=sys.stderr)
    sys.exit(2)


def random_model(cfg, seed):
    """The model of `cfg` in fp32 with seeded random weights. Variance-preserving: the
    library's small init makes every logit nearly equal, and greedy tokens of a near-flat
    distribution are decided by rounding noise."""
    import transformers
    torch.manual_seed(seed)
    m = transformers.AutoModelForCausalLM.from_config(cfg).float()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() >= 2:
                p.normal_(0, 1 / p.shape[-1] ** 0.5)
    return m.eval()


def load(a):
    import transformers
    if a.random:
        if a.random not in FAMILIES:
            fail(f"unknown family '{a.random}', expected one of {', '.join(sorted(FAMILIES))}")
        cls, extra = FAMILIES[a.random]
        config = dict(SMALL, **extra)
        if a.heads:  # more heads (head dim 8), for tensor-parallel tests over 8 cores
            config.update(num_attention_heads=a.heads, hidden_size=8 * a.heads,
                          intermediate_size=16 * a.heads)
            if "head_dim" in config:
                config["head_dim"] = 8
        if a.kv_heads:
            config["num_key_value_heads"] = a.kv_heads
        cfg = getattr(transformers, cls)(**config)
        return random_model(cfg, a.seed), a.random
    cfg_path = os.path.join(a.hf_dir, "config.json")
    if not os.path.exists(cfg_path):
        fail(f"{a.hf_dir}: expected a save_pretrained directory with config.json, found none")
    cfg = transformers.AutoConfig.from_pretrained(a.hf_dir)
    if cfg.model_type not in FAMILIES:
        fail(f"{a.hf_dir}: model_type '{cfg.model_type}' is not supported; expected one of "
             f"{', '.join(sorted(FAMILIES))}")
    dtype = getattr(torch, a.dtype)
    if a.meta:
        with torch.device("meta"):
            m = transformers.AutoModelForCausalLM.from_config(cfg)
    elif a.random_weights:
        return random_model(cfg, a.seed).to(dtype), cfg.model_type
    else:
        m = transformers.AutoModelForCausalLM.from_pretrained(a.hf_dir, torch_dtype=torch.float32)
    return m.to(dtype).eval(), cfg.model_type


def sample(logits, params, max_top_k):
    """The next token per row of `logits` [B, vocab], chosen on the device: among the
    min(top_k, max_top_k) largest logits (torch.topk's order), softmax at the row's temperature,
    and the first whose cumulative probability reaches the row's uniform draw u. params [B, 3] is
    (top_k, temperature, u); top_k 1 is greedy (the largest logit, at any temperature and u).
    Written with element-wise ops and reductions only (the cumulative sum as a masked sum, the
    pick as a one-hot sum), so that every step but the top-k itself lowers to device kernels
    that keep fp32 under --auto-cast matmul."""
    k_max = min(max_top_k, logits.shape[-1])
    vals, idx = torch.topk(logits, k_max, dim=-1)
    params = params.to(logits.device)  # the meta device in a weights-free export
    top_k, temperature, u = params[:, 0:1], params[:, 1:2], params[:, 2:3]
    rank = torch.arange(k_max, dtype=torch.float32, device=logits.device)
    z = torch.where(rank[None, :] < top_k, vals / temperature, torch.full_like(vals, -float("inf")))
    p = torch.softmax(z, dim=-1)
    upper = (rank[:, None] <= rank[None, :]).float()  # [i, j]: i <= j
    cumulative = (p[:, :, None] * upper[None]).sum(1)  # [B, K]: sum of p_i over i <= j
    choice = torch.minimum((cumulative < u).float().sum(-1, keepdim=True), top_k - 1)
    return (idx.float() * (rank[None, :] == choice).float()).sum(-1).long()


class Uniform:
    """The uniform draws `neuronc generate --seed S` feeds the sampler, one per row and call:
    splitmix64 (Steele, Lea and Flood), the top 24 bits as a float in [0, 1)."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = seed & self.MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        z ^= z >> 31
        return (z >> 40) / float(1 << 24)


def sampled_reference(m, a, prompt, buckets, contexts, top_k, temperature, seed):
    """The tokens `neuronc generate --top-k K --temperature T --seed S` must give: the exported
    programs run eagerly in PyTorch, over one KV cache, the way generate runs them (the prompt
    padded to the smallest prefill bucket, then each decode step in the smallest context-length
    bucket beyond its position), with the same uniform draws."""
    uniform = Uniform(seed)
    vocab = m.config.vocab_size
    p = prompt.shape[1]
    s = next(b for b in buckets if b >= p)
    programs = {c: wrapper(m, a.batch, a.max_seq, c, a.max_top_k) for c in contexts}
    prefill = wrapper(m, a.batch, a.max_seq, None, a.max_top_k)
    for w in programs.values():  # one cache: the prefill program's buffers
        for name, buf in prefill.named_buffers():
            if "cache" in name and buf.dim() == 4:
                setattr(w, name, buf)

    def params():
        return torch.tensor([[float(top_k), temperature, uniform.next()] for _ in range(a.batch)],
                            dtype=torch.float32)
    ids = torch.zeros(a.batch, s, dtype=torch.long)
    ids[:, :p] = prompt
    tokens = []
    with torch.no_grad():
        nxt = prefill(input_ids=ids, cache_position=torch.arange(s), sampling_params=params(),
                      last_token=torch.tensor([p - 1]))
        for i in range(a.new_tokens):
            assert bool(((nxt >= 0) & (nxt < vocab)).all())
            tokens.append(nxt)
            if i + 1 == a.new_tokens:
                break
            pos = p + i
            c = next(c for c in contexts if c > pos)
            nxt = programs[c](input_ids=nxt[:, None], cache_position=torch.tensor([pos]),
                              sampling_params=params())
    return torch.stack(tokens, dim=1)


def wrapper(m, batch, max_seq, context=None, max_top_k=0):
    from transformers import GenerationConfig
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    class WithCacheBuffers(TorchExportableModuleWithStaticCache):
        """transformers' wrapper registers the cache tensors as buffers, but its cache layers keep
        their own references to them; non-strict torch.export swaps the module's buffers for
        traced ones, so the layers' writes land in lifted constants and the exported program
        loses the cache update. Re-binding the layers to the module's buffers on every call makes
        the update a buffer mutation, which a runtime keeps as state across calls.

        A layer writes its keys and values at its own position counter (cumulative_length),
        which it advances by the tokens of each call. Bound to a copy of cache_position's first
        element instead of a buffer, the write lands at cache_position, as the attention mask
        assumes, and the cache is the programs' only state: a prompt padded to a prefill bucket
        stays exact (the pad positions are masked, and the decode steps overwrite them).

        With a `context` below max_seq (a context-length bucket) each layer still writes into
        its whole buffer, but hands attention only the first `context` positions, and the mask
        is that wide."""

        def forward(self, input_ids=None, cache_position=None, sampling_params=None,
                    last_token=None):
            for i, layer in enumerate(self.static_cache.layers):
                layer.keys = getattr(self, f"key_cache_{i}")
                layer.values = getattr(self, f"value_cache_{i}")
                layer.cumulative_length = cache_position[:1].clone().to(layer.keys.device)
                if context is not None and context < max_seq:
                    bucket(layer, context)
            hook = None
            if last_token is not None:
                # Prefill with on-device sampling: only the last prompt token's hidden state
                # reaches the LM head (a one-hot row times the hidden states, exact, where an
                # index would be a run-time gather; a matmul, so it runs on TensorE, and under
                # --auto-cast matmul it rounds the hidden state to bf16 as the LM head's own
                # cast does), so the logits are [B, 1, vocab].
                def select_last(module, args):
                    h = args[0]  # on the meta device in a weights-free export
                    onehot = torch.arange(h.shape[1], device=h.device) == last_token.to(h.device)
                    return (torch.matmul(onehot[None, None, :].to(h.dtype), h),)
                hook = m.get_output_embeddings().register_forward_pre_hook(select_last)
            try:
                logits = super().forward(input_ids=input_ids, cache_position=cache_position)
            finally:
                if hook is not None:
                    hook.remove()
            if sampling_params is None:
                return logits
            return sample(logits[:, -1, :].float(), sampling_params, max_top_k)

    def bucket(layer, c):
        update = type(layer).update

        def update_in_bucket(key_states, value_states, *args, **kwargs):
            keys, values = update(layer, key_states, value_states, *args, **kwargs)
            return keys[:, :, :c], values[:, :, :c]
        layer.update = update_in_bucket
        layer.get_mask_sizes = lambda query_length: (c, 0)

    device = next(m.parameters()).device  # "meta" for a weights-free export
    m.generation_config = GenerationConfig(
        use_cache=True, cache_implementation="static", max_length=max_seq,
        cache_config={"batch_size": batch, "max_cache_len": max_seq, "device": device})
    return WithCacheBuffers(m, batch_size=batch, max_cache_len=max_seq, device=device)


def program_inputs(batch, length, start, vocab, gen):
    ids = torch.randint(0, vocab, (batch, length), generator=gen)
    return ids, torch.arange(start, start + length)


def export_program(m, a, out, name, length, start, gen, context=None):
    """Exports one program (a fresh cache, so the file's buffers hold the empty cache) and, with
    weights, its verify sample: the program run once on that cache. With on-device sampling the
    sample draws top-k, temperature and u per row (top_k 1 for the first row: greedy), and a
    prefill's last prompt token inside the bucket."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    ids, pos = program_inputs(a.batch, length, start, m.config.vocab_size, gen)
    inputs = {"input_ids": ids, "cache_position": pos}
    vocab = m.config.vocab_size
    if a.on_device_sampling:
        k_max = min(a.max_top_k, vocab)
        top_k = torch.randint(min(2, k_max), k_max + 1, (a.batch,), generator=gen).float()
        top_k[0] = 1
        temperature = 0.5 + torch.rand(a.batch, generator=gen)
        u = torch.rand(a.batch, generator=gen)
        inputs["sampling_params"] = torch.stack([top_k, temperature, u], dim=1)
        if length > 1:
            inputs["last_token"] = torch.randint(0, length, (1,), generator=gen)
    w = wrapper(m, a.batch, a.max_seq, context, a.max_top_k)
    ep = torch.export.export(w, (), dict(inputs), strict=False)
    torch.export.save(ep, os.path.join(d, "model.pt2"))
    cache = [{"name": n, "shape": list(b.shape), "dtype": str(b.dtype).replace("torch.", "")}
             for n, b in w.named_buffers() if "cache" in n and b.dim() == 4]
    if not a.meta:
        with torch.no_grad():
            result = wrapper(m, a.batch, a.max_seq, context, a.max_top_k)(**inputs)
        for i, t in enumerate(inputs.values()):
            np.save(os.path.join(d, f"input_{i}.npy"), t.numpy())
        result = result if a.on_device_sampling else result.float()
        np.save(os.path.join(d, "output_0.npy"), np.ascontiguousarray(result.numpy()))
    shapes = {k: list(t.shape) for k, t in inputs.items()}
    result = ({"next_tokens": [a.batch]} if a.on_device_sampling
              else {"logits": [a.batch, length, vocab]})
    return dict({"name": name, "file": f"{name}/model.pt2", "tokens": length, "inputs": shapes},
                **result), cache


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hf_dir", nargs="?", help="a save_pretrained directory")
    ap.add_argument("out")
    ap.add_argument("--random", metavar="FAMILY", help="a small random model of FAMILY, for tests")
    ap.add_argument("--max-seq", type=int, default=128, help="the KV cache length")
    ap.add_argument("--prefill-buckets", default="32,64,128")
    ap.add_argument("--decode-buckets", default="",
                    help="context lengths of the decode programs (default: 128, 256, ... below "
                         "--max-seq, and --max-seq)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--on-device-sampling", action="store_true",
                    help="programs end in the sampler (top-k, temperature, a uniform draw per "
                         "row: input sampling_params [B, 3]) and return next_tokens [B]; a "
                         "prefill also takes last_token [1], its last prompt position")
    ap.add_argument("--max-top-k", type=int, default=50,
                    help="with --on-device-sampling: the largest top-k a request may ask for")
    ap.add_argument("--meta", action="store_true", help="no weights: a timing-only export")
    ap.add_argument("--random-weights", action="store_true",
                    help="HF_DIR's config (config.json alone will do) with seeded random "
                         "variance-preserving fp32 weights instead of its own: a full-size "
                         "architecture whose outputs are computed, for simulator benchmarks")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                    help="the dtype the model computes in (its weights, activations and KV "
                         "cache): bfloat16 as NxD Inference and vLLM-Neuron run a bf16 "
                         "checkpoint, float32 (default) for references and --auto-cast")
    ap.add_argument("--prompt-len", type=int, default=12, help="the reference prompt's length")
    ap.add_argument("--new-tokens", type=int, default=64, help="the reference's new tokens")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heads", type=int, default=0,
                    help="with --random: attention heads (hidden = 8 x heads)")
    ap.add_argument("--kv-heads", type=int, default=0, help="with --random: KV heads")
    a = ap.parse_args()
    if not a.random and not a.hf_dir:
        fail("expected HF_DIR or --random FAMILY")
    if a.random and a.meta:
        fail("--meta exports a real model's config without weights; --random makes weights")
    if a.random_weights and (a.meta or a.random or not a.hf_dir):
        fail("--random-weights gives HF_DIR's config random weights: expected HF_DIR, without "
             "--meta or --random")
    try:
        buckets = sorted({int(b) for b in a.prefill_buckets.split(",") if b})
    except ValueError:
        fail(f"--prefill-buckets '{a.prefill_buckets}': expected comma-separated integers")
    if not buckets or buckets[0] < 1 or buckets[-1] > a.max_seq:
        fail(f"--prefill-buckets {buckets}: each must be in [1, --max-seq {a.max_seq}]")
    if a.decode_buckets:
        try:
            contexts = sorted({int(b) for b in a.decode_buckets.split(",") if b})
        except ValueError:
            fail(f"--decode-buckets '{a.decode_buckets}': expected comma-separated integers")
    else:
        contexts = [c for c in (128 << i for i in range(24)) if c < a.max_seq]
    contexts = sorted(set(contexts) | {a.max_seq})
    if contexts[0] < 2 or contexts[-1] > a.max_seq:
        fail(f"--decode-buckets {contexts}: each must be in [2, --max-seq {a.max_seq}]")
    if a.max_top_k < 1:
        fail(f"--max-top-k {a.max_top_k}: expected at least 1")
    if a.batch < 1:
        fail(f"--batch {a.batch}: expected at least 1")
    torch.set_num_threads(2)
    m, family = load(a)
    if a.max_seq > getattr(m.config, "max_position_embeddings", a.max_seq):
        fail(f"--max-seq {a.max_seq} exceeds the model's max_position_embeddings "
             f"{m.config.max_position_embeddings}")
    os.makedirs(a.out, exist_ok=True)
    gen = torch.Generator().manual_seed(a.seed + 1)
    programs, cache = [], []
    for s in buckets:
        p, cache = export_program(m, a, a.out, f"prefill_{s}", s, 0, gen)
        programs.append(dict(p, kind="prefill"))
    for c in contexts:
        name = "decode" if c == a.max_seq else f"decode_{c}"
        p, _ = export_program(m, a, a.out, name, 1, min(buckets[0], c - 1), gen, c)
        programs.append(dict(p, kind="decode", context=c))
    manifest = {
        "format": "neuronc-causal-lm/1", "family": family, "model_type": m.config.model_type,
        "weights": not a.meta, "batch": a.batch, "max_seq": a.max_seq,
        "prefill_buckets": buckets, "decode_buckets": contexts,
        "sampling": ({"on_device": True, "max_top_k": min(a.max_top_k, m.config.vocab_size)}
                     if a.on_device_sampling else {"on_device": False}),
        "vocab_size": m.config.vocab_size,
        "layers": m.config.num_hidden_layers, "hidden_size": m.config.hidden_size,
        "attention_heads": m.config.num_attention_heads,
        "kv_heads": getattr(m.config, "num_key_value_heads", None) or m.config.num_attention_heads,
        "eos_token_id": m.config.eos_token_id, "kv_cache": cache, "programs": programs,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "source": ("random:" + family if a.random else
                   "random weights:" + os.path.abspath(a.hf_dir) if a.random_weights else
                   os.path.abspath(a.hf_dir))}
    if not a.meta:
        d = os.path.join(a.out, "reference")
        os.makedirs(d, exist_ok=True)
        prompt = torch.randint(0, m.config.vocab_size, (a.batch, a.prompt_len), generator=gen)
        with torch.no_grad():
            out = m.generate(prompt, max_new_tokens=a.new_tokens, do_sample=False,
                             min_new_tokens=a.new_tokens, pad_token_id=0)
        np.save(os.path.join(d, "prompt.npy"), prompt.numpy())
        np.save(os.path.join(d, "tokens.npy"), out[:, a.prompt_len:].numpy())
        manifest["reference"] = {"prompt": "reference/prompt.npy", "tokens": "reference/tokens.npy",
                                 "decoding": "greedy", "dtype": a.dtype}
        if a.on_device_sampling:
            top_k, temperature, seed = min(5, a.max_top_k), 0.8, 7
            sampled = sampled_reference(m, a, prompt, buckets, contexts, top_k, temperature, seed)
            np.save(os.path.join(d, "sampled.npy"), sampled.numpy())
            manifest["reference"]["sampled"] = {
                "tokens": "reference/sampled.npy", "top_k": top_k, "temperature": temperature,
                "seed": seed, "decoding": "the exported programs run eagerly in PyTorch with "
                                          "generate's uniform draws (splitmix64)"}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{a.out}: {family}, {len(programs)} programs "
          f"({', '.join(p['name'] for p in programs)}), KV cache {len(cache)} buffers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
