"""Model definitions for the neuronc model zoo.

Every builder returns a `Fixture`: an eval-ready nn.Module with random weights drawn from a fixed
seed, example inputs drawn from a second fixed seed, and optional `dynamic_shapes` for
torch.export. Nothing is downloaded: transformers/torchvision models are built from configs in
code. Runs unchanged on torch 2.6 (Debian 13) and torch 2.14 (Debian unstable).
"""

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch import nn


@dataclasses.dataclass
class Fixture:
    model: nn.Module
    args: Tuple[Any, ...]
    description: str
    exercises: List[str]
    dynamic_shapes: Any = None
    dynamic_dims: Optional[Dict[str, Any]] = None  # human-readable summary for meta.json
    config: Optional[Dict[str, Any]] = None
    model_seed: int = 0
    input_seed: int = 0
    # Further inputs at other shapes in the dynamic range: shape_<k>/input_<i>.npy and the eager
    # outputs on them, shape_<k>/output_<i>.npy (k from 1).
    more_args: List[Tuple[Any, ...]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Entry:
    name: str
    build: Callable[[], Fixture]
    requires: Tuple[str, ...] = ()  # python modules besides torch
    key: bool = False  # also exported with torch 2.6
    full: bool = False  # part of the full-size on-demand zoo, not committed


def _gen(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def _randn(seed: int, *shape) -> torch.Tensor:
    return torch.randn(*shape, generator=_gen(seed), dtype=torch.float32)


def _randint(seed: int, high: int, *shape) -> torch.Tensor:
    return torch.randint(0, high, shape, generator=_gen(seed), dtype=torch.int64)


# --------------------------------------------------------------------------- small fixtures


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = nn.functional.gelu(self.fc2(x))
        return self.fc3(x)


def build_mlp() -> Fixture:
    torch.manual_seed(1001)
    m = MLP().eval()
    return Fixture(m, (_randn(2001, 4, 16),),
                   "3-layer MLP 16-32-32-8 with ReLU and GELU, batch 4",
                   ["linear (2-D input)", "relu", "gelu"], model_seed=1001, input_seed=2001)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool2 = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        x = self.pool1(torch.relu(self.bn1(self.conv1(x))))
        x = self.pool2(torch.relu(self.bn2(self.conv2(x))))
        x = self.gap(x)
        return self.fc(torch.flatten(x, 1))


def build_cnn() -> Fixture:
    torch.manual_seed(1002)
    m = SmallCNN()
    # Non-trivial running statistics so eval-mode batch norm is not an identity.
    g = _gen(1102)
    for bn in (m.bn1, m.bn2):
        bn.running_mean.copy_(torch.randn(bn.num_features, generator=g) * 0.1)
        bn.running_var.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
        bn.weight.data.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
        bn.bias.data.copy_(torch.randn(bn.num_features, generator=g) * 0.1)
    m.eval()
    return Fixture(m, (_randn(2002, 2, 3, 32, 32),),
                   "conv3x3(+bias) -> BN(eval) -> relu -> maxpool2 -> conv3x3(no bias) -> BN(eval)"
                   " -> relu -> avgpool2 -> adaptive avgpool(2x2) -> flatten -> linear; NCHW 2x3x32x32",
                   ["conv2d with/without bias", "batch_norm eval (BN folding)", "relu", "max_pool2d",
                    "avg_pool2d", "adaptive_avg_pool2d to 2x2", "flatten", "linear"],
                   model_seed=1002, input_seed=2002)


def build_transformer_encoder() -> Fixture:
    torch.manual_seed(1003)
    m = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1,
                                   activation="gelu", batch_first=True).eval()
    return Fixture(m, (_randn(2003, 2, 10, 64),),
                   "nn.TransformerEncoderLayer d_model 64, 4 heads, ffn 128, GELU, post-norm,"
                   " batch_first, eval (dropout 0.1 present but inactive); input 2x10x64",
                   ["multi-head self-attention (nn.MultiheadAttention -> SDPA)", "layer_norm",
                    "dropout in eval", "gelu", "residual add", "linear on 3-D input"],
                   config={"d_model": 64, "nhead": 4, "dim_feedforward": 128, "activation": "gelu",
                           "norm_first": False, "batch_first": True},
                   model_seed=1003, input_seed=2003)


class BertWrap(nn.Module):
    """Positional inputs and a tuple output, so export and jit.trace see the same signature."""

    def __init__(self, model):
        super().__init__()
        self.bert = model

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
        return out.last_hidden_state, out.pooler_output


class CausalLMWrap(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.lm = model

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False, return_dict=True).logits


def _set_attn(cfg, impl):
    # transformers >= 4.36 reads `_attn_implementation`; set both spellings.
    try:
        cfg._attn_implementation = impl
    except Exception:
        pass
    return cfg


def build_bert() -> Fixture:
    from transformers import BertConfig, BertModel
    cfg = dict(vocab_size=128, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=256, max_position_embeddings=32, type_vocab_size=2,
               hidden_act="gelu", use_cache=False)
    config = _set_attn(BertConfig(**cfg), "sdpa")
    torch.manual_seed(1004)
    m = BertWrap(BertModel(config)).eval()
    ids = _randint(2004, 128, 2, 10)
    mask = torch.ones(2, 10, dtype=torch.int64)
    mask[1, 6:] = 0  # second sequence is padded
    cfg["attn_implementation"] = "sdpa"
    return Fixture(m, (ids, mask),
                   "transformers BertModel, 2 layers, hidden 128, 4 heads, ffn 256, vocab 128;"
                   " input_ids + attention_mask (int64, batch 2, seq 10, row 1 padded from 6 on)",
                   ["embedding (word/position/token-type)", "layer_norm", "padding mask"
                    " (int64 mask -> float additive mask)", "scaled_dot_product_attention",
                    "gelu", "pooler (select [CLS], linear, tanh)", "int64 inputs"],
                   config=cfg, model_seed=1004, input_seed=2004)


def build_gpt2() -> Fixture:
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = dict(vocab_size=256, n_positions=32, n_embd=64, n_layer=2, n_head=4, n_inner=128,
               activation_function="gelu_new", use_cache=False, tie_word_embeddings=True,
               bos_token_id=255, eos_token_id=255)
    config = _set_attn(GPT2Config(**cfg), "eager")
    torch.manual_seed(1005)
    m = CausalLMWrap(GPT2LMHeadModel(config)).eval()
    cfg["attn_implementation"] = "eager"
    return Fixture(m, (_randint(2005, 256, 2, 8),),
                   "transformers GPT2LMHeadModel, 2 layers, n_embd 64, 4 heads, ffn 128, vocab 256,"
                   " tied lm_head, eager (explicit matmul/softmax) attention; input_ids 2x8 -> logits",
                   ["Conv1D (addmm with [in,out] weight)", "explicit causal-masked attention"
                    " (matmul, softmax, where/masked_fill)", "gelu_new (tanh approximation)",
                    "pre-norm layer_norm", "tied embedding / lm_head weight"],
                   config=cfg, model_seed=1005, input_seed=2005)


def build_llama() -> Fixture:
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = dict(vocab_size=128, hidden_size=256, intermediate_size=128, num_hidden_layers=2,
               num_attention_heads=8, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
               rms_norm_eps=1e-5, rope_theta=10000.0, hidden_act="silu", use_cache=False,
               tie_word_embeddings=True, attention_bias=False, mlp_bias=False)
    config = _set_attn(LlamaConfig(**cfg), "sdpa")
    torch.manual_seed(1006)
    m = CausalLMWrap(LlamaForCausalLM(config)).eval()
    cfg["attn_implementation"] = "sdpa"
    return Fixture(m, (_randint(2006, 128, 1, 8),),
                   "transformers LlamaForCausalLM, 2 layers, hidden 256, 8 query heads / 2 KV heads"
                   " (GQA 4:1), head_dim 16 (explicit, so q/o project 256<->128: keeps the file small), SwiGLU"
                   " ffn 128, RMSNorm, RoPE (theta 1e4),"
                   " vocab 128, tied lm_head; input_ids 1x8 -> logits",
                   ["RMSNorm (pow/mean/rsqrt/mul)", "rotary embedding (rotate_half: slice/neg/cat)",
                    "grouped-query attention (repeat_kv expand/reshape)", "causal SDPA",
                    "SwiGLU (silu * mul)", "linear without bias", "tied embedding / lm_head"],
                   config=cfg, model_seed=1006, input_seed=2006)


def build_vit() -> Fixture:
    from torchvision.models.vision_transformer import VisionTransformer
    cfg = dict(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64,
               mlp_dim=128, num_classes=10)
    torch.manual_seed(1007)
    m = VisionTransformer(**cfg).eval()
    x = _randn(2007, 1, 3, 64, 64)
    _meaningful_init(m, 1007, x)  # the head is zero-initialised: every logit would be 0
    return Fixture(m, (x,),
                   "torchvision VisionTransformer, image 64, patch 16 (16 patches + class token),"
                   " 2 layers, hidden 64, 4 heads, mlp 128, 10 classes; input 1x3x64x64",
                   ["patchify conv (stride 16)", "reshape/permute to tokens", "class token cat",
                    "learned position embedding add", "nn.MultiheadAttention -> SDPA",
                    "pre-norm layer_norm", "gelu", "select class token"],
                   config=cfg, model_seed=1007, input_seed=2007)


class DynamicBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 48)
        self.norm = nn.LayerNorm(48)
        self.fc2 = nn.Linear(48, 10)

    def forward(self, x):
        b = x.shape[0]
        h = x.reshape(b, -1)  # (B, 4, 8) -> (B, 32) with a symbolic B
        h = torch.relu(self.norm(self.fc1(h)))
        return torch.softmax(self.fc2(h), dim=-1)


def build_dynamic_batch() -> Fixture:
    torch.manual_seed(1008)
    m = DynamicBatch().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    return Fixture(m, (_randn(2008, 3, 4, 8),),
                   "reshape(B,-1) -> linear -> layer_norm -> relu -> linear -> softmax with a symbolic"
                   " batch dimension (torch.export.Dim('batch', min=1, max=64)); example batch 3",
                   ["symbolic dims and range_constraints", "sym_size / reshape with a symbol",
                    "layer_norm", "softmax"],
                   dynamic_shapes={"x": {0: batch}}, dynamic_dims={"x": {"0": "batch [1, 64]"}},
                   model_seed=1008, input_seed=2008)


class Buffers(nn.Module):
    """In-place updates of persistent buffers, a train-mode BatchNorm and a non-persistent buffer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))
        self.register_buffer("running_sum", torch.zeros(8))
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8), persistent=False)

    def forward(self, x):
        self.calls.add_(1)
        self.running_sum.add_(x.sum(0))
        h = self.bn(self.fc(x))  # train mode: batch stats; running_mean/var/num_batches_tracked updated
        return h * self.scale + self.running_sum


def build_buffers() -> Fixture:
    torch.manual_seed(1009)
    m = Buffers().train()
    return Fixture(m, (_randn(2009, 4, 8),),
                   "linear -> BatchNorm1d in TRAIN mode (updates running_mean/var/num_batches_tracked)"
                   " plus explicit in-place buffer updates (calls.add_(1), running_sum.add_(x.sum(0)))"
                   " and a non-persistent buffer 'scale'. output_0 is one call from the initial"
                   " buffers; meta.json mutated_buffers holds every buffer's value after that call."
                   " model.pt2 mutates in place (add_, batch_norm training=True) with no"
                   " BUFFER_MUTATION outputs; model_core.pt2 returns the new values as"
                   " BUFFER_MUTATION outputs",
                   ["buffer inputs", "buffer_mutation outputs", "add_ on buffers (training IR)",
                    "_native_batch_norm_legit_functional (core IR)", "int64 scalar buffer",
                    "non-persistent buffer (constants, not state_dict)"],
                   model_seed=1009, input_seed=2009)


class Fallback(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 32)
        self.fc2 = nn.Linear(17, 8)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        spec = torch.fft.rfft(h, dim=-1).abs()  # 32 -> 17 complex bins -> magnitude
        return self.fc2(spec)


def build_fallback() -> Fixture:
    torch.manual_seed(1010)
    m = Fallback().eval()
    return Fixture(m, (_randn(2010, 4, 32),),
                   "linear -> relu -> torch.fft.rfft -> abs -> linear: an op the device does not"
                   " implement sits between two device partitions (host fallback)",
                   ["fft_rfft (training IR) / _fft_r2c (core IR)", "complex64 intermediate",
                    "abs of complex", "device | host | device partitioning"],
                   model_seed=1010, input_seed=2010)


# A team's own fused kernel, registered the way torch.library asks (an eager implementation and a
# fake for tracing): torch.export keeps it as one `torch.ops.demo_kernels.fused_scale_gelu` call,
# which analyze must flag as a custom kernel that will not port.
@torch.library.custom_op("demo_kernels::fused_scale_gelu", mutates_args=())
def fused_scale_gelu(x: torch.Tensor, scale: float) -> torch.Tensor:
    return nn.functional.gelu(x * scale)


@fused_scale_gelu.register_fake
def _(x, scale):
    return torch.empty_like(x)


class CustomOp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        h = fused_scale_gelu(self.fc1(x), 0.5)
        return self.fc2(h)


def build_custom_op() -> Fixture:
    torch.manual_seed(1014)
    m = CustomOp().eval()
    return Fixture(m, (_randn(2014, 4, 16),),
                   "linear -> a custom torch.library kernel (demo_kernels::fused_scale_gelu) ->"
                   " linear: the kernel inventory of `neuronc analyze`",
                   ["torch.library.custom_op", "custom kernel inventory"],
                   model_seed=1014, input_seed=2014)


class VisionExtras(nn.Module):
    """The vision ops real models carry besides plain conv/BN/pool: every padding mode, weight
    norm (over output and input channels), group norm, squeeze-and-excitation, a residual
    block and a channel concatenation."""

    def __init__(self):
        super().__init__()
        wn = nn.utils.parametrizations.weight_norm
        self.stem = wn(nn.Conv2d(3, 16, 3))
        self.gn = nn.GroupNorm(4, 16)
        self.se_reduce = nn.Conv2d(16, 4, 1)
        self.se_expand = nn.Conv2d(4, 16, 1)
        self.res_conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.res_bn = nn.BatchNorm2d(16)
        self.branch = nn.Conv2d(16, 8, 1)
        self.pool = nn.MaxPool2d(3, stride=1, padding=1)
        self.head = wn(nn.Conv2d(24, 16, 3), dim=1)  # norm over the other dims of each input channel
        self.fc = wn(nn.Linear(16, 10), dim=0)

    def forward(self, x):
        x = nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")
        x = nn.functional.silu(self.gn(self.stem(x)))
        s = x.mean((2, 3), keepdim=True)
        x = x * torch.sigmoid(self.se_expand(torch.relu(self.se_reduce(s))))
        x = torch.relu(self.res_bn(self.res_conv(x)) + x)
        x = torch.cat([self.branch(x), self.pool(x)], dim=1)
        x = nn.functional.pad(x, (1, 2, 0, 1), value=0.5)
        x = nn.functional.pad(x, (1, 0, 0, 2), mode="replicate")
        x = self.head(x)
        x = nn.functional.pad(x, (1, 1, 1, 1), mode="circular")
        x = nn.functional.pad(x, (-1, 0, 0, -1))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def build_vision_extras() -> Fixture:
    torch.manual_seed(1011)
    m = VisionExtras()
    g = _gen(1111)
    m.res_bn.running_mean.copy_(torch.randn(16, generator=g) * 0.1)
    m.res_bn.running_var.copy_(torch.rand(16, generator=g) + 0.5)
    m.eval()
    return Fixture(m, (_randn(2011, 2, 3, 20, 24),),
                   "reflect pad -> weight-normed conv3x3 -> group norm(4) -> silu -> squeeze-excite"
                   " -> residual conv+BN+add+relu -> cat(conv1x1, maxpool3x3 s1) -> constant pad 0.5"
                   " -> replicate pad -> weight-norm(dim=1) conv3x3 -> circular pad -> negative pad"
                   " (crop) -> global avg pool -> weight-normed linear; NCHW 2x3x20x24",
                   ["pad reflect/replicate/circular/constant/negative (training IR: aten.pad;"
                    " core IR: index/clamp/slice_scatter/constant_pad_nd)",
                    "_weight_norm over dim 0 and dim 1", "group_norm", "silu",
                    "squeeze-excite (mean keepdim, sigmoid, broadcast mul)", "residual add",
                    "cat along channels", "max_pool2d stride 1 padding 1"],
                   model_seed=1011, input_seed=2011)


class OpsCoverage(nn.Module):
    """Operators real models carry that neuronc runs as compositions (repeat, roll, einsum,
    vector norms, upsampling), on the host (flip, fmod, remainder) or with indices known only
    at run time (gather of cumsum positions, index by argmax)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, ids):
        h = self.fc(x)  # [2, 4, 6, 8]
        F = nn.functional
        pos = (torch.cumsum(ids, dim=1) % 8)[:, None, None, :].expand(2, 4, 6, 8)
        best = h.sum(-1).argmax(-1)  # [2, 4], data-dependent
        return (h.repeat(1, 2, 1, 3),
                torch.min(h, h.flip(-1)) + torch.max(h, 0.5 * h),
                torch.roll(h, shifts=(1, -2), dims=(1, 3)) + torch.roll(h, 5),
                # On x, not h: a remainder is discontinuous, so under --auto-cast a bf16-rounded
                # h would flip some elements by the whole divisor (and PyTorch's bf16 too).
                torch.fmod(x, 0.7) + torch.remainder(x, 0.3) + torch.fmod(x, x.flip(1) + 3.0),
                torch.linalg.vector_norm(h, dim=-1, keepdim=True) + h.norm(p=1, dim=1, keepdim=True),
                torch.einsum("bchw,bcdw->bhd", h, h),
                torch.einsum("bchw->bwc", h),
                F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False),
                F.interpolate(h, size=(7, 11), mode="bilinear", align_corners=True),
                F.interpolate(h, scale_factor=2, mode="nearest"),
                F.interpolate(h, size=(9, 13), mode="nearest"),
                torch.gather(h, 3, pos),
                h[torch.arange(2)[:, None], torch.arange(4)[None, :], best])


def build_ops_coverage() -> Fixture:
    torch.manual_seed(1016)
    m = OpsCoverage().eval()
    return Fixture(m, (_randn(2016, 2, 4, 6, 8), _randint(3016, 2, 2, 8)),
                   "linear, then repeat, min/max of two tensors, flip, roll (per dim and"
                   " flattened), fmod and remainder, vector norms, einsum (contraction and"
                   " permute-sum), bilinear upsampling (scale and align_corners size), nearest"
                   " upsampling (integer and fractional), a gather of cumsum positions and an"
                   " index by argmax; x 2x4x6x8, ids 2x8 of 0/1",
                   ["repeat", "min.other / max.other", "flip (host)", "roll",
                    "fmod / remainder (host)", "linalg_vector_norm", "einsum",
                    "upsample_bilinear2d.vec", "upsample_nearest2d.vec",
                    "gather / index.Tensor with run-time indices (host)"],
                   model_seed=1016, input_seed=2016)


def build_mlp_bf16() -> Fixture:
    torch.manual_seed(1015)
    m = MLP().to(torch.bfloat16).eval()
    return Fixture(m, (_randn(2015, 4, 16).to(torch.bfloat16),),
                   "the mlp fixture's layers in bfloat16 (weights, input and output): a program"
                   " that asks for a bf16 input; input_0.npy / output_0.npy hold the bf16 values"
                   " widened to float32 (numpy has no bfloat16)",
                   ["bf16 program inputs and outputs", "bf16 weights"],
                   model_seed=1015, input_seed=2015)


def build_bert_dynamic() -> Fixture:
    from transformers import BertConfig, BertModel
    cfg = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=128, max_position_embeddings=128, use_cache=False)
    config = _set_attn(BertConfig(**cfg), "sdpa")
    torch.manual_seed(1014)
    m = BertWrap(BertModel(config)).eval()

    def inputs(seed, b, s, pad):
        mask = torch.ones(b, s, dtype=torch.int64)
        mask[-1, s - pad:] = 0
        return (_randint(seed, config.vocab_size, b, s), mask)

    batch = torch.export.Dim("batch", min=1, max=16)
    seq = torch.export.Dim("seq", min=8, max=128)
    return Fixture(m, inputs(2014, 2, 16, 4),
                   "transformers BertModel (2 layers, hidden 64, 4 heads, SDPA) exported with a"
                   " dynamic batch [1, 16] and sequence [8, 128]; example 2x16, more references"
                   " at 1x8 (the minimum) and 3x40",
                   ["two symbolic dims and their product (batch x seq after a flatten; core IR"
                    " Mul(Symbol, Symbol))", "slice and arange with a symbolic bound",
                    "padding mask"],
                   dynamic_shapes={"input_ids": {0: batch, 1: seq},
                                   "attention_mask": {0: batch, 1: seq}},
                   dynamic_dims={"input_ids": {"0": "batch [1, 16]", "1": "seq [8, 128]"},
                                 "attention_mask": {"0": "batch [1, 16]", "1": "seq [8, 128]"}},
                   config=config.to_dict(), model_seed=1014, input_seed=2014,
                   more_args=[inputs(3014, 1, 8, 0), inputs(4014, 3, 40, 9)])


class Aliasing(nn.Module):
    """Writes through views, as eager PyTorch runs them: every later reader of the base (and of
    views taken before the write) sees the new values. BART's shift_tokens_right (new_zeros,
    copy_ into a slice, fill_ of a column, masked_fill_), add_/mul_/sub_/fill_/copy_/
    masked_fill_ through slice, select, transpose and view chains, a clone that must not see its
    copy's writes, and a buffer written through a slice."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.fc = nn.Linear(8, 8)
        self.register_buffer("cache", torch.zeros(2, 6, 8))

    def forward(self, ids, x):
        s = ids.new_zeros(ids.shape)  # BART's shift_tokens_right
        s[:, 1:] = ids[:, :-1].clone()
        s[:, 0] = 2
        s.masked_fill_(s == 5, 1)
        e = self.emb(s)
        a = self.fc(x)
        h = a.clone()
        h[:, :3] += e[:, :3]  # add_ through a slice
        h[0].mul_(2.0)  # mul_ through a select
        col = h[:, 1]  # a view taken before the writes below, read after them
        h[:, :, 4:6].fill_(0.5)  # fill_ through a slice of the last dim
        h[1:, 2:4][:, :, 0].copy_(x[1:, 2:4, 7])  # copy_ through slice -> slice -> select
        t = h.transpose(1, 2)
        t[:, 0].sub_(1.0)  # sub_ through transpose -> select
        v = h.view(h.shape[0], -1)
        v[:, :5].masked_fill_(v[:, :5] > 1.0, -1.0)  # masked_fill_ through view -> slice
        self.cache[:, 1:3] = h[:, :2]  # a buffer written through a slice (a KV-cache update)
        return s, h, col * 1.0, a, self.cache * 1.0


def build_aliasing() -> Fixture:
    torch.manual_seed(1012)
    m = Aliasing().eval()
    return Fixture(m, (_randint(2012, 16, 2, 6), _randn(3012, 2, 6, 8)),
                   "in-place writes through views: shift_tokens_right, add_/mul_/sub_/fill_/copy_/"
                   "masked_fill_ through slice, select, transpose and view chains, a clone whose"
                   " source must keep its values, a buffer written through a slice",
                   ["copy_/fill_/masked_fill_ of a view (training IR)",
                    "slice_scatter / select as where (core IR)", "views read after a write",
                    "buffer mutation through a view"],
                   model_seed=1012, input_seed=2012)


class BartWrap(nn.Module):
    """Encoder-decoder with the decoder input built by shift_tokens_right (no decoder ids)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids):
        out = self.m(input_ids=input_ids)
        return out.last_hidden_state, out.encoder_last_hidden_state


def build_bart() -> Fixture:
    from transformers import BartConfig, BartModel
    config = _set_attn(BartConfig(vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2,
                                  encoder_attention_heads=4, decoder_attention_heads=4,
                                  encoder_ffn_dim=64, decoder_ffn_dim=64,
                                  max_position_embeddings=64, use_cache=False), "sdpa")
    torch.manual_seed(1013)
    m = BartWrap(BartModel(config)).eval()
    return Fixture(m, (_randint(2013, config.vocab_size, 2, 12),),
                   "BART encoder-decoder (2+2 layers, d_model 32), random weights; the decoder input"
                   " is shift_tokens_right(input_ids), built by writes through views",
                   ["shift_tokens_right (copy_/fill_/masked_fill_ through views)",
                    "encoder-decoder cross attention"],
                   config=config.to_dict(), model_seed=1013, input_seed=2013)


# Size-reading programs: one dynamic dim n in [2, 40] whose size is used as a VALUE (not only as a
# shape), so a bucketed compile that zero-pads n up to the next bucket must still read the real n.
# Example n = 6, more references (shape_1..4/) at n = 3, 5, 13, 27: none a bucket (a power of two or
# an end of the range).
SIZE_READS_N = (6, 3, 5, 13, 27)


class SizeReadsSymSize(nn.Module):
    def forward(self, x):  # [n, 8]
        return x * x.size(0)


class SizeReadsSymNumel(nn.Module):
    def forward(self, x):  # [n, 4]
        return x * x.numel()


class SizeReadsSymStride(nn.Module):
    def forward(self, x):  # [4, n, 4]: stride(0) == 4n (a [4, n] x's stride(0) == n is exported as sym_size)
        return x * x.stride(0)


class SizeReadsSymStorageOffset(nn.Module):
    def forward(self, x):  # [4, n]: a [3n] view at storage offset n
        y = x.reshape(-1)[x.size(1):]
        return y * y.storage_offset()


class SizeReadsMaskedMean(nn.Module):
    def forward(self, x, mask):  # [n, 8] f32, [n, 8] int64 0/1
        return (x * mask).sum(0) / mask.sum(0), x.sum(0) / x.size(0)


class SizeReadsViewSize(nn.Module):
    def forward(self, x):  # [n, 4, 2]: a shape use only (the control)
        return x.view(x.size(0), -1) * 2 + 1


class SizeReadsArangePositions(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(16, 8)
        self.pos = nn.Embedding(40, 8)

    def forward(self, ids):  # [1, n] int64
        return (self.tok(ids) + self.pos(torch.arange(ids.size(1))),
                torch.arange(ids.size(1)).float() / ids.size(1))


class SizeReadsSoftmaxScaled(nn.Module):
    # math.sqrt(x.size(0)) specialises n in non-strict export (refused: "Constraints violated");
    # `** 0.5` and torch.sym_sqrt (what strict export makes of math.sqrt) keep it symbolic.
    def forward(self, x):  # [n, 8]
        return (torch.softmax(x / x.size(0), dim=-1),
                torch.softmax(x * (1.0 / x.size(0) ** 0.5), dim=-1),
                torch.softmax(x * (1.0 / torch.sym_sqrt(x.size(0))), dim=-1))


class SizeReadsReductionDivisor(nn.Module):
    def forward(self, x):  # [n, 8]
        return (x.sum(0) / x.shape[0], x.mean(0), x.var(0, unbiased=False),
                (x - x.mean(0)).pow(2).sum(0) / (x.size(0) - 1))


def _mask(seed: int, n: int) -> torch.Tensor:
    m = _randint(seed, 2, n, 8)
    m[torch.arange(8) % n, torch.arange(8)] = 1  # at least one 1 per column
    return m


def _size_reads(seed: int, cls, inputs: Callable[[int, int], Tuple[torch.Tensor, ...]],
                dims: Dict[str, int], description: str, exercises: List[str]) -> Callable[[], Fixture]:
    def build() -> Fixture:
        torch.manual_seed(seed)
        m = cls().eval()
        n = torch.export.Dim("n", min=2, max=40)
        example, *more = [inputs(seed + 1000 * (k + 1), size) for k, size in enumerate(SIZE_READS_N)]
        return Fixture(m, example, description + "; n in [2, 40], example n 6, more references at"
                       " n 3, 5, 13, 27 (shape_1..4/)", exercises,
                       dynamic_shapes={a: {d: n} for a, d in dims.items()},
                       dynamic_dims={a: {str(d): "n [2, 40]"} for a, d in dims.items()},
                       model_seed=seed, input_seed=seed + 1000, more_args=more)
    return build


SIZE_READS: List[Entry] = [Entry("size_reads_" + name, _size_reads(seed, *rest)) for name, seed, *rest in [
    ("sym_size", 1020, SizeReadsSymSize, lambda s, n: (_randn(s, n, 8),), {"x": 0},
     "x * x.size(0), x [n, 8]", ["sym_size as a multiplier"]),
    ("sym_numel", 1021, SizeReadsSymNumel, lambda s, n: (_randn(s, n, 4),), {"x": 0},
     "x * x.numel(), x [n, 4]", ["numel (4n) as a multiplier"]),
    ("sym_stride", 1022, SizeReadsSymStride, lambda s, n: (_randn(s, 4, n, 4),), {"x": 1},
     "x * x.stride(0), x [4, n, 4] (stride(0) == 4n)", ["stride as a multiplier"]),
    ("sym_storage_offset", 1023, SizeReadsSymStorageOffset, lambda s, n: (_randn(s, 4, n),), {"x": 1},
     "y = x.reshape(-1)[x.size(1):]; y * y.storage_offset(), x [4, n] (offset n)",
     ["storage offset of a view as a multiplier", "slice with a symbolic start"]),
    ("masked_mean", 1024, SizeReadsMaskedMean, lambda s, n: (_randn(s, n, 8), _mask(s + 500, n)),
     {"x": 0, "mask": 0},
     "(x * mask).sum(0) / mask.sum(0) and x.sum(0) / x.size(0); x [n, 8], mask [n, 8] int64 0/1",
     ["masked mean (pad-invariant)", "sum / sym_size (not pad-invariant)"]),
    ("view_size", 1025, SizeReadsViewSize, lambda s, n: (_randn(s, n, 4, 2),), {"x": 0},
     "x.view(x.size(0), -1) * 2 + 1, x [n, 4, 2]: a shape use only, the control",
     ["view with a symbolic size"]),
    ("arange_positions", 1026, SizeReadsArangePositions, lambda s, n: (_randint(s, 16, 1, n),), {"ids": 1},
     "tok(ids) + pos(arange(n)) (Embedding 16x8 and 40x8) and arange(n).float() / n; ids [1, n] int64",
     ["arange with a symbolic end", "embedding", "arange / sym_size"]),
    ("softmax_scaled", 1027, SizeReadsSoftmaxScaled, lambda s, n: (_randn(s, n, 8),), {"x": 0},
     "softmax(x / n), softmax(x * (1 / n ** 0.5)) and softmax(x * (1 / torch.sym_sqrt(n))), x [n, 8]",
     ["tensor / sym_size", "SymFloat: sym_float, pow, truediv, _sym_sqrt", "softmax"]),
    ("reduction_divisor", 1028, SizeReadsReductionDivisor, lambda s, n: (_randn(s, n, 8),), {"x": 0},
     "x.sum(0) / x.shape[0], x.mean(0), x.var(0, unbiased=False),"
     " (x - x.mean(0)).pow(2).sum(0) / (n - 1); x [n, 8]",
     ["mean / var over the dynamic dim", "sum / (sym_size - 1)"]),
]]


SMALL: List[Entry] = [
    Entry("mlp", build_mlp, key=True),
    Entry("cnn", build_cnn, key=True),
    Entry("transformer_encoder", build_transformer_encoder, key=True),
    Entry("bert", build_bert, requires=("transformers",)),
    Entry("gpt2", build_gpt2, requires=("transformers",)),
    Entry("llama", build_llama, requires=("transformers",)),
    Entry("vit", build_vit, requires=("torchvision",)),
    Entry("dynamic_batch", build_dynamic_batch, key=True),
    Entry("buffers", build_buffers, key=True),
    Entry("fallback", build_fallback, key=True),
    Entry("vision_extras", build_vision_extras),
    Entry("aliasing", build_aliasing),
    Entry("bart", build_bart, requires=("transformers",)),
    Entry("bert_dynamic", build_bert_dynamic, requires=("transformers",)),
    Entry("mlp_bf16", build_mlp_bf16),
    Entry("ops_coverage", build_ops_coverage),
    Entry("custom_op", build_custom_op),
    *SIZE_READS,
]


# --------------------------------------------------------------------------- full-size zoo


# Where a residual branch ends in a BatchNorm, its weight is scaled by this (see _meaningful_init).
RESIDUAL_BRANCH_SCALE = 0.2


def _residual_branch_norms(m: nn.Module) -> List[nn.Module]:
    """The BatchNorm that ends each residual branch of `m`: for every add of two tensors where
    an operand comes from a BatchNorm (through dropout, stochastic depth or identity modules),
    the one on the longer path back to the add's nearest common ancestor, i.e. the branch and
    not a projection shortcut. Empty when torch.fx cannot trace `m`."""
    import operator
    import torch.fx
    try:
        gm = torch.fx.symbolic_trace(m)
    except Exception:  # data-dependent control flow: no residual rescale for this model
        return []
    mods = dict(gm.named_modules())
    passthrough = (nn.Dropout, nn.Identity)
    try:
        from torchvision.ops import StochasticDepth
        passthrough += (StochasticDepth,)
    except ImportError:
        pass

    def source(node):  # the node a tensor comes from, through modules that only drop or pass it
        while node.op == "call_module" and isinstance(mods.get(node.target), passthrough):
            node = node.args[0]
        return node

    def is_bn(node):
        return node.op == "call_module" and isinstance(mods.get(node.target), nn.modules.batchnorm._BatchNorm)

    def distances(node):  # every ancestor of `node` -> its distance back along the arguments
        d, front = {node: 0}, [node]
        while front:
            nxt = []
            for n in front:
                for a in n.all_input_nodes:
                    if a not in d:
                        d[a] = d[n] + 1
                        nxt.append(a)
            front = nxt
        return d

    found = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in (operator.add, operator.iadd, torch.add) \
                or len(node.args) != 2 or not all(isinstance(a, torch.fx.Node) for a in node.args):
            continue
        a, b = (source(x) for x in node.args)
        if not (is_bn(a) or is_bn(b)):
            continue
        da, db = distances(a), distances(b)
        common = [n for n in da if n in db]
        if not common:
            continue
        ancestor = min(common, key=lambda n: da[n] + db[n])
        branch = a if da[ancestor] >= db[ancestor] else b
        if is_bn(branch):
            found.append(mods[branch.target])
    return found


def _meaningful_init(m: nn.Module, seed: int, example: torch.Tensor) -> None:
    """Makes a randomly initialised model a meaningful reference. torchvision zero-initialises
    some parameters (ViT's classification head, so every logit is 0 and any compiler "matches"),
    and a BatchNorm's default statistics (mean 0, var 1, weight 1, bias 0) are an identity that
    hides a wrong fold, while in a deep ResNet they let activations grow to ~1e7.
    - Zero parameters get variance-preserving random values: std 1/sqrt(fan_in) for weights,
      0.02 for the rest.
    - BatchNorms get a random affine (weight U[0.5, 1.5], bias N(0, 0.1)), then statistics
      measured on a batch of random inputs like `example` (one train-mode pass), each
      perturbed by up to 10 %: random, and each layer's output stays near unit variance.
    - The BatchNorm ending each residual branch gets its weight scaled by RESIDUAL_BRANCH_SCALE
      (U[0.1, 0.3]). A random deep BN-ReLU network is chaotic: in ResNet-50 at 224² bf16
      autocast's error is half the output's change between two inputs, and PyTorch's own bf16
      misses cosine 0.999 (0.994), so no bf16 compiler could be checked against it. Small
      branch-end weights are what trained ResNets start from (Goyal et al. 2017 and
      torchvision's zero_init_residual set them to 0); with them the bf16 error drops 5-12x
      while the change between inputs stays (ResNet-50: error / change 0.49 -> 0.05)."""
    g = torch.Generator().manual_seed(seed)
    bns = [mod for mod in m.modules()
           if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.running_mean is not None]
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.is_floating_point() and p.numel() and not p.detach().any():
                if p.dim() >= 2 and name.endswith("weight"):
                    fan_in = p[0].numel()
                    p.copy_(torch.randn(p.shape, generator=g) / fan_in ** 0.5)
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        for bn in bns:
            if bn.affine:
                bn.weight.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
                bn.bias.copy_(torch.randn(bn.num_features, generator=g) * 0.1)
        for bn in _residual_branch_norms(m) if bns else []:
            if bn.affine:
                bn.weight.mul_(RESIDUAL_BRANCH_SCALE)
        if bns:
            momenta = [bn.momentum for bn in bns]
            for bn in bns:
                bn.reset_running_stats()
                bn.momentum = None  # cumulative: one pass sets the batch statistics
            m.train()
            m(torch.randn((4,) + tuple(example.shape[1:]), generator=g, dtype=example.dtype))
            m.eval()
            for bn, mom in zip(bns, momenta):
                bn.momentum = mom
                n = bn.num_features
                bn.running_mean.add_(torch.randn(n, generator=g) * 0.1 * bn.running_var.sqrt())
                bn.running_var.mul_(torch.rand(n, generator=g) * 0.2 + 0.9)


def _tv(name: str, seed: int, image: int = 224) -> Callable[[], Fixture]:
    def build() -> Fixture:
        import torchvision
        torch.manual_seed(seed)
        m = getattr(torchvision.models, name)(weights=None).eval()
        x = _randn(seed + 1000, 1, 3, image, image)
        _meaningful_init(m, seed, x)
        return Fixture(m, (x,),
                       f"torchvision {name}, random weights, input 1x3x{image}x{image}",
                       ["full-size vision model"], model_seed=seed, input_seed=seed + 1000)
    return build


def _bert(seed: int, batch: int, description: str, tags: List[str], **widths) -> Fixture:
    from transformers import BertConfig, BertModel
    config = _set_attn(BertConfig(use_cache=False, **widths), "sdpa")
    torch.manual_seed(seed)
    m = BertWrap(BertModel(config)).eval()
    ids = _randint(seed + 1000, config.vocab_size, batch, 128)
    return Fixture(m, (ids, torch.ones(batch, 128, dtype=torch.int64)), description, tags,
                   config=config.to_dict(), model_seed=seed, input_seed=seed + 1000)


def build_bert_base() -> Fixture:
    return _bert(3101, 1, "bert-base-uncased architecture (12 layers, hidden 768), random weights, seq 128",
                 ["full-size encoder"])


def build_bert_large() -> Fixture:
    return _bert(3104, 1, "bert-large-uncased architecture (24 layers, hidden 1024), random weights, seq 128",
                 ["full-size encoder"], hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                 intermediate_size=4096)


def build_bert_base_b16() -> Fixture:
    return _bert(3105, 16, "bert-base-uncased architecture, random weights, batch 16, seq 128",
                 ["full-size encoder, batch 16"])


class EncoderWrap(nn.Module):
    """BertWrap for an encoder without a pooler (DistilBertModel, ElectraModel): the last hidden
    state only."""

    def __init__(self, model):
        super().__init__()
        self.encoder = model

    def forward(self, input_ids, attention_mask):
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).last_hidden_state


def _encoder(seed: int, config, model_cls, wrap, description: str, tags: List[str],
             min_id: int = 0) -> Fixture:
    """A transformers encoder at batch 1, seq 128, as _bert: HF's own random init from `seed`,
    token ids in [min_id, vocab) and an all-ones attention mask."""
    config = _set_attn(config, "sdpa")
    torch.manual_seed(seed)
    m = wrap(model_cls(config)).eval()
    ids = min_id + _randint(seed + 1000, config.vocab_size - min_id, 1, 128)
    return Fixture(m, (ids, torch.ones(1, 128, dtype=torch.int64)), description, tags,
                   config=config.to_dict(), model_seed=seed, input_seed=seed + 1000)


def build_distilbert_base() -> Fixture:
    from transformers import DistilBertConfig, DistilBertModel
    config = DistilBertConfig(vocab_size=30522, max_position_embeddings=512, n_layers=6, n_heads=12,
                              dim=768, hidden_dim=3072, activation="gelu")
    return _encoder(3106, config, DistilBertModel, EncoderWrap,
                    "distilbert-base-uncased architecture (6 layers, dim 768), random weights, seq 128",
                    ["full-size encoder"])


def _roberta(seed: int, description: str, **widths) -> Fixture:
    from transformers import RobertaConfig, RobertaModel
    config = RobertaConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                           pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5,
                           use_cache=False, **widths)
    # RoBERTa numbers positions from padding_idx + 1 over the ids that are not padding_idx (1):
    # ids >= 3 keep clear of <s>/<pad>/</s>, so every position is a real one (2..129).
    return _encoder(seed, config, RobertaModel, BertWrap, description, ["full-size encoder"], min_id=3)


def build_roberta_base() -> Fixture:
    return _roberta(3107, "roberta-base architecture (12 layers, hidden 768), random weights, seq 128")


def build_roberta_large() -> Fixture:
    return _roberta(3109, "roberta-large architecture (24 layers, hidden 1024), random weights, seq 128",
                    hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)


def build_electra_base() -> Fixture:
    from transformers import ElectraConfig, ElectraModel
    config = ElectraConfig(vocab_size=30522, embedding_size=768, hidden_size=768, num_hidden_layers=12,
                           num_attention_heads=12, intermediate_size=3072, max_position_embeddings=512,
                           type_vocab_size=2, use_cache=False)
    return _encoder(3108, config, ElectraModel, EncoderWrap,
                    "electra-base-discriminator architecture (12 layers, hidden 768), random weights, seq 128",
                    ["full-size encoder"])


def build_gpt2_124m() -> Fixture:
    from transformers import GPT2Config, GPT2LMHeadModel
    config = _set_attn(GPT2Config(use_cache=False), "sdpa")
    torch.manual_seed(3102)
    m = CausalLMWrap(GPT2LMHeadModel(config)).eval()
    return Fixture(m, (_randint(4102, config.vocab_size, 1, 128),),
                   "gpt2 (124M) architecture, random weights, seq 128", ["full-size decoder"],
                   config=config.to_dict(), model_seed=3102, input_seed=4102)


def build_llama_1b_2l() -> Fixture:
    from transformers import LlamaConfig, LlamaForCausalLM
    # Llama-3.2-1B widths with 2 layers.
    config = _set_attn(LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                                   num_hidden_layers=2, num_attention_heads=32, num_key_value_heads=8,
                                   max_position_embeddings=2048, rms_norm_eps=1e-5,
                                   rope_theta=500000.0, use_cache=False, tie_word_embeddings=True),
                       "sdpa")
    torch.manual_seed(3103)
    m = CausalLMWrap(LlamaForCausalLM(config)).eval()
    return Fixture(m, (_randint(4103, config.vocab_size, 1, 128),),
                   "Llama architecture at 1B width (hidden 2048, 32/8 heads, ffn 8192, vocab 128256),"
                   " 2 layers, random weights, seq 128", ["full-size decoder, GQA"],
                   config=config.to_dict(), model_seed=3103, input_seed=4103)


FULL: List[Entry] = [
    Entry("resnet18", _tv("resnet18", 3001), requires=("torchvision",), full=True),
    Entry("resnet50", _tv("resnet50", 3002), requires=("torchvision",), full=True),
    Entry("resnet101", _tv("resnet101", 3008), requires=("torchvision",), full=True),
    # The two other ResNets of AWS's inf2 vision table (issue 54's end-to-end anchors).
    Entry("resnet34", _tv("resnet34", 3101), requires=("torchvision",), full=True),
    Entry("resnet152", _tv("resnet152", 3102), requires=("torchvision",), full=True),
    Entry("mobilenet_v2", _tv("mobilenet_v2", 3003), requires=("torchvision",), full=True),
    Entry("mobilenet_v3_small", _tv("mobilenet_v3_small", 3004), requires=("torchvision",), full=True),
    Entry("efficientnet_b0", _tv("efficientnet_b0", 3005), requires=("torchvision",), full=True),
    Entry("convnext_tiny", _tv("convnext_tiny", 3006), requires=("torchvision",), full=True),
    Entry("vit_b_16", _tv("vit_b_16", 3007), requires=("torchvision",), full=True),
    Entry("bert_base", build_bert_base, requires=("transformers",), full=True),
    Entry("bert_large", build_bert_large, requires=("transformers",), full=True),
    Entry("bert_base_b16", build_bert_base_b16, requires=("transformers",), full=True),
    Entry("distilbert_base", build_distilbert_base, requires=("transformers",), full=True),
    Entry("roberta_base", build_roberta_base, requires=("transformers",), full=True),
    Entry("roberta_large", build_roberta_large, requires=("transformers",), full=True),
    Entry("electra_base", build_electra_base, requires=("transformers",), full=True),
    Entry("gpt2_124m", build_gpt2_124m, requires=("transformers",), full=True),
    Entry("llama_1b_2layers", build_llama_1b_2l, requires=("transformers",), full=True),
]
