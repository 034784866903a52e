#!/usr/bin/env python3
"""Exports a causal language model for serving with neuronc (issue 17): prefill programs, one
per prompt-length bucket, and a decode program, over a static KV cache.

    export_causal_lm.py HF_DIR OUT_DIR [--max-seq N] [--prefill-buckets 32,64,128]
                        [--decode-buckets 128,256,...] [--batch B] [--meta] [--prompt-len P]
                        [--new-tokens T]
    export_causal_lm.py --random FAMILY OUT_DIR [--heads H --kv-heads K] ...
                                                      (a small random model, for tests)

HF_DIR is a `save_pretrained` directory (with --meta, a directory holding only config.json).
Runs with the user's PyTorch and transformers. OUT_DIR receives:

    manifest.json           family, sizes, buckets, cache layout, files, versions
    prefill_<S>/model.pt2   input_ids [B, S], cache_position [S] -> logits [B, S, vocab]
    decode/model.pt2        input_ids [B, 1], cache_position [1] -> logits [B, 1, vocab]
    decode_<C>/model.pt2    the same, attending over the cache's first C positions only (a
                            context-length bucket, for positions below C)
    reference/              prompt.npy [B, P] and tokens.npy [B, T]: transformers' greedy
                            generate() in fp32 (not with --meta)

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
        torch.manual_seed(a.seed)
        m = transformers.AutoModelForCausalLM.from_config(cfg)
        # Variance-preserving weights: the library's small init makes every logit nearly equal,
        # and greedy tokens of a near-flat distribution are decided by rounding noise.
        with torch.no_grad():
            for name, p in m.named_parameters():
                if p.dim() >= 2:
                    p.normal_(0, 1 / p.shape[-1] ** 0.5)
        return m.eval(), a.random
    cfg_path = os.path.join(a.hf_dir, "config.json")
    if not os.path.exists(cfg_path):
        fail(f"{a.hf_dir}: expected a save_pretrained directory with config.json, found none")
    cfg = transformers.AutoConfig.from_pretrained(a.hf_dir)
    if cfg.model_type not in FAMILIES:
        fail(f"{a.hf_dir}: model_type '{cfg.model_type}' is not supported; expected one of "
             f"{', '.join(sorted(FAMILIES))}")
    if a.meta:
        with torch.device("meta"):
            m = transformers.AutoModelForCausalLM.from_config(cfg)
    else:
        m = transformers.AutoModelForCausalLM.from_pretrained(a.hf_dir, torch_dtype=torch.float32)
    return m.eval(), cfg.model_type


def wrapper(m, batch, max_seq, context=None):
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

        def forward(self, input_ids=None, cache_position=None):
            for i, layer in enumerate(self.static_cache.layers):
                layer.keys = getattr(self, f"key_cache_{i}")
                layer.values = getattr(self, f"value_cache_{i}")
                layer.cumulative_length = cache_position[:1].clone().to(layer.keys.device)
                if context is not None and context < max_seq:
                    bucket(layer, context)
            return super().forward(input_ids=input_ids, cache_position=cache_position)

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
    weights, its verify sample: the program run once on that cache."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    ids, pos = program_inputs(a.batch, length, start, m.config.vocab_size, gen)
    w = wrapper(m, a.batch, a.max_seq, context)
    ep = torch.export.export(w, (), {"input_ids": ids, "cache_position": pos}, strict=False)
    torch.export.save(ep, os.path.join(d, "model.pt2"))
    cache = [{"name": n, "shape": list(b.shape), "dtype": str(b.dtype).replace("torch.", "")}
             for n, b in w.named_buffers() if "cache" in n and b.dim() == 4]
    if not a.meta:
        with torch.no_grad():
            logits = wrapper(m, a.batch, a.max_seq, context)(input_ids=ids, cache_position=pos)
        np.save(os.path.join(d, "input_0.npy"), ids.numpy())
        np.save(os.path.join(d, "input_1.npy"), pos.numpy())
        np.save(os.path.join(d, "output_0.npy"), np.ascontiguousarray(logits.float().numpy()))
    return {"name": name, "file": f"{name}/model.pt2", "tokens": length,
            "inputs": {"input_ids": [a.batch, length], "cache_position": [length]},
            "logits": [a.batch, length, m.config.vocab_size]}, cache


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
    ap.add_argument("--meta", action="store_true", help="no weights: a timing-only export")
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
        "prefill_buckets": buckets, "decode_buckets": contexts, "vocab_size": m.config.vocab_size,
        "layers": m.config.num_hidden_layers, "hidden_size": m.config.hidden_size,
        "attention_heads": m.config.num_attention_heads,
        "kv_heads": getattr(m.config, "num_key_value_heads", None) or m.config.num_attention_heads,
        "eos_token_id": m.config.eos_token_id, "kv_cache": cache, "programs": programs,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "source": "random:" + family if a.random else os.path.abspath(a.hf_dir)}
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
                                 "decoding": "greedy", "dtype": "float32"}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{a.out}: {family}, {len(programs)} programs "
          f"({', '.join(p['name'] for p in programs)}), KV cache {len(cache)} buffers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
