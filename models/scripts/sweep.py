"""The architecture sweep (issue 16): many model families nobody here hand-picked, each with a
small random config, exported in both IRs with PyTorch's outputs beside them.

    python3 sweep.py OUT_DIR [--only a,b] [--list] [--f64-only]

For each family it writes OUT_DIR/<name>/{model.pt2, model_core.pt2, input_<i>.npy,
output_<i>.npy, ref64/, meta.json}. ref64/ holds the outputs of the model run in float64, the
fp32 criterion's reference; --f64-only adds it (and the bf16 input-rounding figure) to models
already exported, after checking that the rebuilt model gives the saved fp32 outputs. meta.json says what happened: `status` is `ok`, or
`not_exportable` / `degenerate` with the reason (those are PyTorch's or the reference's
limits, not neuronc's, and the coverage table lists them apart).

References are checked for signal: every float output must have a spread (std > 1e-6) and must
change when the input is redrawn (relative change > 1e-3); zero-initialised heads and vanishing
random CNNs would otherwise give references any compiler "matches". Weights get a
variance-preserving re-initialisation where a family leaves them zero or at identity.

meta.json also records how close bf16 can get at all: `pytorch_bf16_cosine` (PyTorch's own
CPU bf16 autocast against fp32) and `bf16_input_rounding_cosine` (fp32 throughout, only the
inputs rounded to bf16). A random deep CNN with measured batch-norm statistics amplifies a
2^-9 input perturbation past cosine 0.999 by itself.

Runs in the export chroot (torch 2.14, transformers, torchvision); one thread, fixed seeds.
"""

import argparse
import json
import os
import sys
import time
import zlib

import numpy as np
import torch
from torch import nn

torch.set_num_threads(1)

SMALL = {
    # widths
    "hidden_size": 32, "d_model": 32, "n_embd": 32, "dim": 32, "embed_dim": 32, "n_embed": 32,
    "word_embed_proj_dim": 32, "embedding_size": 32,
    # depth
    "num_hidden_layers": 2, "n_layer": 2, "num_layers": 2, "n_layers": 2, "encoder_layers": 2,
    "decoder_layers": 2, "num_decoder_layers": 2,
    # heads
    "num_attention_heads": 4, "n_head": 4, "n_heads": 4, "num_heads": 4,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 8, "d_kv": 8, "kv_channels": 8,
    # feed-forward
    "intermediate_size": 64, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "ffn_dim": 64,
    "n_inner": 64, "d_ff": 64, "hidden_dim": 64,
    # tables
    "vocab_size": 128, "max_position_embeddings": 64, "n_positions": 64, "max_seq_len": 64,
    "type_vocab_size": 2, "relative_attention_num_buckets": 8,
    "use_cache": False,
}

# transformers families that take input_ids (AutoModel's base model). Kept short of the MoE
# and multimodal families, whose configs do not shrink generically.
TEXT = [
    "albert", "bart", "bert", "bert-generation", "big_bird", "biogpt", "blenderbot",
    "blenderbot-small", "bloom", "camembert", "codegen", "cohere", "convbert", "ctrl",
    "data2vec-text", "deberta", "deberta-v2", "distilbert", "electra", "ernie", "esm", "falcon",
    "flaubert", "fnet", "funnel", "gemma", "gemma2", "glm", "gpt2", "gpt_bigcode", "gpt_neo",
    "gpt_neox", "gptj", "granite", "helium", "ibert", "led", "llama", "longformer", "m2m_100",
    "marian", "mbart", "megatron-bert", "mistral", "mobilebert", "mpnet", "mpt", "mt5", "mvp",
    "nemotron", "olmo", "olmo2", "opt", "pegasus", "persimmon", "phi", "phi3",
    "plbart", "prophetnet", "qwen2", "qwen3", "rembert", "roberta", "roberta-prelayernorm",
    "roc_bert", "roformer", "stablelm", "starcoder2", "squeezebert", "t5", "umt5", "xglm",
    "xlm", "xlm-roberta", "xlm-roberta-xl", "xlnet", "yoso",
    # more decoders, mixture-of-experts and state-space families
    "openai-gpt", "gemma3_text", "smollm3", "ministral", "exaone4", "arcee", "mixtral",
    "qwen2_moe", "qwen3_moe", "olmoe", "dbrx", "mamba", "mamba2", "falcon_mamba", "rwkv",
    "recurrent_gemma", "jamba",
]

VISION = [
    "alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "efficientnet_v2_s",
    "googlenet", "inception_v3", "maxvit_t", "mnasnet0_5", "mobilenet_v2", "mobilenet_v3_small",
    "regnet_x_400mf", "regnet_y_400mf", "resnet18", "resnext50_32x4d", "shufflenet_v2_x0_5",
    "squeezenet1_0", "swin_t", "swin_v2_t", "vgg11", "vit_b_32", "wide_resnet50_2",
    # segmentation (torchvision.models.segmentation; the dict's tensors are the outputs)
    "deeplabv3_mobilenet_v3_large", "deeplabv3_resnet50", "fcn_resnet50",
    "lraspp_mobilenet_v3_large",
    # video (torchvision.models.video; clips of 8 frames)
    "mc3_18", "r2plus1d_18", "r3d_18", "s3d", "mvit_v2_s", "swin3d_t",
]

SEGMENTATION = {"deeplabv3_mobilenet_v3_large", "deeplabv3_resnet50", "fcn_resnet50",
                "lraspp_mobilenet_v3_large"}
VIDEO = {"mc3_18", "r2plus1d_18", "r3d_18", "s3d", "mvit_v2_s", "swin3d_t"}


def shrink(cfg):
    for k, v in SMALL.items():
        # head_dim is often None (derived from the width): set it anyway, consistently.
        if hasattr(cfg, k) and (getattr(cfg, k) is not None or k == "head_dim") and \
                not isinstance(getattr(cfg, k), (list, dict)):
            try:
                setattr(cfg, k, v)
            except Exception:
                pass
    # Ids that index the shrunk tables; rotary widths that fit the shrunk heads.
    for k in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        if isinstance(getattr(cfg, k, None), int) and getattr(cfg, k) >= SMALL["vocab_size"]:
            setattr(cfg, k, 1)
    if getattr(cfg, "rotary_dim", None):
        cfg.rotary_dim = 4
    for k in ("num_local_experts", "num_experts", "n_routed_experts"):
        if isinstance(getattr(cfg, k, None), int):
            setattr(cfg, k, 4)
    for k in ("num_experts_per_tok", "moe_topk", "top_k"):
        if isinstance(getattr(cfg, k, None), int):
            setattr(cfg, k, 2)
    for k in ("moe_intermediate_size", "shared_expert_intermediate_size"):
        if isinstance(getattr(cfg, k, None), int):
            setattr(cfg, k, 32)
    for k in ("attention_types",):  # gpt_neo: one entry per layer
        if hasattr(cfg, k):
            cfg.attention_types = [[["global", "local"], 1]]
            cfg.attention_layers = ["global", "local"]
    cfg._attn_implementation = "sdpa" if getattr(cfg, "_supports_sdpa", True) else "eager"
    return cfg


class TextWrap(nn.Module):
    """input_ids -> the last hidden state; encoder-decoders that do not derive their decoder
    input from input_ids (shift_tokens_right) get input_ids as decoder ids too."""

    def __init__(self, m, decoder_ids):
        super().__init__()
        self.m = m
        self.decoder_ids = decoder_ids

    def forward(self, input_ids):
        kw = {"decoder_input_ids": input_ids} if self.decoder_ids else {}
        out = self.m(input_ids=input_ids, **kw)
        return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


def build_text(name, seed):
    from transformers import AutoConfig, AutoModel
    torch.manual_seed(seed)
    cfg = shrink(AutoConfig.for_model(name))
    try:
        m = AutoModel.from_config(cfg).eval()
    except ValueError as e:  # no SDPA path in this family: its eager attention
        if "attention implementation" not in str(e):
            raise
        cfg._attn_implementation = "eager"
        torch.manual_seed(seed)
        m = AutoModel.from_config(cfg).eval()
    reinit(m, seed)
    probe = torch.zeros(1, 16, dtype=torch.int64)
    decoder_ids = False
    if getattr(cfg, "is_encoder_decoder", False):
        try:
            with torch.no_grad():
                TextWrap(m, False)(probe)
        except ValueError:
            decoder_ids = True
    m = TextWrap(m, decoder_ids).eval()
    ids = torch.randint(0, min(cfg.vocab_size, 128), (1, 16), generator=gen(seed + 1))
    return m, (ids,), lambda s: (torch.randint(0, min(cfg.vocab_size, 128), (1, 16), generator=gen(s)),)


def build_vision(name, seed):
    import torchvision
    torch.manual_seed(seed)
    kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    if name in SEGMENTATION:
        m = getattr(torchvision.models.segmentation, name)(weights=None,
                                                           weights_backbone=None).eval()
    elif name in VIDEO:
        m = getattr(torchvision.models.video, name)(weights=None).eval()
    else:
        m = getattr(torchvision.models, name)(weights=None, **kw).eval()
    size = 299 if name == "inception_v3" else (224 if name.startswith(("vit", "swin", "maxvit")) else 96)
    shape = (1, 3, size, size)
    if name in VIDEO:  # [batch, channels, frames, height, width]
        shape = (1, 3, 16, 224, 224) if name in ("mvit_v2_s", "s3d") else \
                (1, 3, 8, 112, 112) if name != "swin3d_t" else (1, 3, 8, 64, 64)
    x = torch.randn(*shape, generator=gen(seed + 1))
    sys.path.insert(0, os.path.dirname(__file__))
    from zoo import _meaningful_init
    _meaningful_init(m, seed, x)
    return m, (x,), lambda s: (torch.randn(*shape, generator=gen(s)),)


def gen(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def reinit(m, seed):
    """Zero weights (heads, some projections) get std 1/sqrt(fan_in): a zero layer makes every
    later output independent of the input."""
    g = gen(seed + 7)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.is_floating_point() and p.dim() >= 2 and not p.detach().any():
                p.copy_(torch.randn(p.shape, generator=g) / p[0].numel() ** 0.5)


def flat(out):
    import torch.utils._pytree as pytree
    return [t.detach() for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


def signal(m, args, redraw, seed):
    with torch.no_grad():
        a = flat(m(*args))
        b = flat(m(*redraw(seed + 99)))
    for i, (x, y) in enumerate(zip(a, b)):
        if not x.is_floating_point():
            continue
        std = x.double().std().item() if x.numel() > 1 else 1.0
        change = ((x - y).double().norm() / max(x.double().norm().item(), 1e-30)).item()
        if not (std > 1e-6 and change > 1e-3):
            return f"output {i}: std {std:.3g}, relative change on a redrawn input {change:.3g}"
    return None


def input_rounding_cosine(m, args, outs):
    """The cosine to `outs` of the fp32 model run on its float inputs rounded to bf16, the
    rest in fp32. A bf16 program rounds at least its inputs, so where this is below 0.999 the
    model itself is too sensitive for the bf16 criterion, whatever computes it."""
    if not any(a.is_floating_point() for a in args):
        return None
    with torch.no_grad():
        rounded = flat(m(*[a.bfloat16().float() if a.is_floating_point() else a for a in args]))
    cos = [float(torch.nn.functional.cosine_similarity(a.double().flatten(), b.double().flatten(),
                                                       dim=0))
           for a, b in zip(outs, rounded) if a.is_floating_point()]
    return min(cos) if cos else None


def write_f64_reference(m, args, d):
    """ref64/: the model run by PyTorch in float64 (a copy, its float inputs widened), the
    outputs rounded to float32 once at the end. The fp32 criterion (1e-4 + 1e-3·|ref|) is held
    against it: PyTorch's own fp32 run differs from the exact function by about 1e-4 on a
    ResNet-50 segmentation head, so near-zero outputs failed against it on rounding alone."""
    import copy
    m64 = copy.deepcopy(m).double()
    wide = [a.double() if a.is_floating_point() else a for a in args]
    with torch.no_grad():
        outs = flat(m64(*wide))
    ref = os.path.join(d, "ref64")
    os.makedirs(ref, exist_ok=True)
    for i, a in enumerate(args):
        np.save(os.path.join(ref, f"input_{i}.npy"), a.numpy())
    for i, o in enumerate(outs):
        np.save(os.path.join(ref, f"output_{i}.npy"),
                o.float().numpy() if o.is_floating_point() else o.numpy())


def export_one(name, kind, out_dir, seed):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    meta = {"name": name, "kind": kind, "torch": torch.__version__, "seed": seed}
    t0 = time.time()
    try:
        m, args, redraw = (build_text if kind == "text" else build_vision)(name, seed)
    except Exception as e:
        meta.update(status="not_exportable", reason=f"build: {type(e).__name__}: {e}"[:400])
        return meta
    problem = None
    try:
        problem = signal(m, args, redraw, seed)
    except Exception as e:
        meta.update(status="not_exportable", reason=f"eager: {type(e).__name__}: {e}"[:400])
        return meta
    if problem:
        meta.update(status="degenerate", reason=problem)
        return meta
    try:
        ep = torch.export.export(m, args, strict=False)
        torch.export.save(ep, os.path.join(d, "model.pt2"))
        core = ep.run_decompositions()
        torch.export.save(core, os.path.join(d, "model_core.pt2"))
    except Exception as e:
        meta.update(status="not_exportable", reason=f"torch.export: {type(e).__name__}: {e}"[:400])
        return meta
    with torch.no_grad():
        outs = flat(m(*args))
        # The error bf16 itself brings (PyTorch's CPU autocast against fp32): a random deep
        # network can amplify it past any fixed cosine criterion.
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                half = flat(m(*args))
            cos = [float(torch.nn.functional.cosine_similarity(
                       a.double().flatten(), b.double().flatten(), dim=0))
                   for a, b in zip(outs, half) if a.is_floating_point()]
            meta["pytorch_bf16_cosine"] = min(cos) if cos else None
            meta["bf16_input_rounding_cosine"] = input_rounding_cosine(m, args, outs)
        except Exception as e:
            meta["pytorch_bf16_cosine"] = None
            meta["pytorch_bf16_error"] = f"{type(e).__name__}: {e}"[:200]
    for i, a in enumerate(args):
        np.save(os.path.join(d, f"input_{i}.npy"), a.numpy())
    for i, o in enumerate(outs):
        np.save(os.path.join(d, f"output_{i}.npy"), o.float().numpy() if o.is_floating_point() else o.numpy())
    try:
        write_f64_reference(m, args, d)
        meta["f64_reference"] = True
    except Exception as e:  # a model that will not run in float64 keeps the fp32 reference
        meta["f64_reference"] = False
        meta["f64_error"] = f"{type(e).__name__}: {e}"[:200]
    meta.update(status="ok", outputs=len(outs), seconds=round(time.time() - t0, 2),
                parameters=sum(p.numel() for p in m.parameters()))
    return meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--f64-only", action="store_true",
                    help="only add ref64/ (the float64 reference) to models already exported")
    a = ap.parse_args()
    entries = [(n, "text") for n in TEXT] + [(n, "vision") for n in VISION]
    if a.only:
        keep = set(a.only.split(","))
        entries = [e for e in entries if e[0] in keep]
    if a.list:
        print("\n".join(n for n, _ in entries))
        return
    if a.f64_only:
        for name, kind in entries:
            d = os.path.join(a.out, name)
            meta_path = os.path.join(d, "meta.json")
            if not os.path.exists(meta_path) or json.load(open(meta_path))["status"] != "ok":
                continue
            meta = json.load(open(meta_path))
            m, args, _ = (build_text if kind == "text" else build_vision)(name, meta["seed"])
            # The rebuilt model must be the exported one: same inputs, same fp32 outputs.
            with torch.no_grad():
                outs = flat(m(*args))
            saved = [np.load(os.path.join(d, f"output_{i}.npy")) for i in range(len(outs))]
            if not all(np.array_equal(np.load(os.path.join(d, f"input_{i}.npy")), x.numpy())
                       for i, x in enumerate(args)) or \
                    not all(np.allclose(o.float().numpy(), s_, rtol=1e-5, atol=1e-6)
                            for o, s_ in zip(outs, saved) if o.is_floating_point()):
                print(f"{name}: the rebuilt model differs from the export; no ref64", flush=True)
                continue
            write_f64_reference(m, args, d)
            meta["f64_reference"] = True
            meta["bf16_input_rounding_cosine"] = input_rounding_cosine(m, args, outs)
            json.dump(meta, open(meta_path, "w"), indent=1)
            print(f"{name}: ref64 written", flush=True)
        return
    for name, kind in entries:
        meta = export_one(name, kind, a.out, 5000 + zlib.crc32(name.encode()) % 10000)
        os.makedirs(os.path.join(a.out, name), exist_ok=True)
        with open(os.path.join(a.out, name, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(f"{name}: {meta['status']} {meta.get('reason', '')[:160]}", flush=True)


if __name__ == "__main__":
    main()
