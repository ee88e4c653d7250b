"""Benchmark of :func:`tritonperf.attention`, forward and backward.

Shapes keep the work per layer of a transformer fixed: ``B · N = 16384`` tokens and
``H · D = 2048`` channels (``D = 64`` with 32 heads, ``D = 128`` with 16), for sequence lengths
``N = 1024 … 16384`` (``B = 16384 / N``), causal and not. The rate counts the matmuls only
(:func:`tritonperf.attention_flops`: ``4·B·H·N²·D`` forward, half of it
causal, 2.5 × that backward).

Baselines: torch's ``scaled_dot_product_attention`` pinned to one backend each
(``torch.sdpa-flash``, ``torch.sdpa-efficient``, ``torch.sdpa-cudnn``, through
``torch.nn.attention.sdpa_kernel``) and FlexAttention compiled with ``torch.compile``
(``torch.flex``, with a causal block mask for causal attention). A backend that refuses a head
dim, dtype or GPU is left out of those cases (``applies`` asks it once, on a small problem).
The lesson's steps: ``step-1-naive`` (scores materialized: up to ``N = 4096``, where they take
4 GiB), ``step-2-one-config`` and ``step-3-tuned`` (pointer loads), ``step-4-tma`` (tensor
descriptors), and ``step-4-mask-every-block``, step 4 computing and masking the causal blocks it
would skip (causal shapes only). Step 5, the warp-specialized kernel, is what ``tritonperf`` runs
on Hopper (at ``D = 64`` from the lengths of ``WS_MIN_LENGTH``; step 4 elsewhere).

The backward specs time the backward pass alone. Ours is called with the output and
log-sum-exp of our forward; torch's variants differentiate a graph built beforehand, with
``torch.autograd.grad(o, (q, k, v), do, retain_graph=True)``, built on the stream that CUDA-graph
capture uses (see :func:`~tritonperf.bench.specs.graph_stream`) so that the backward is captured like any other call.
Step 1's graph keeps its ``N × N`` probabilities alive, so it has a spec of its own whose
arguments build that graph only.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ...kernels.attention import attention, attention_bwd, attention_bytes, attention_flops, attention_fwd
from ...ladders.attention import (
    attention_fused_one_config,
    attention_fused_tuned,
    attention_mask_every_block,
    attention_naive,
    attention_tma,
)
from ...testing import random_tensor
from ..specs import BenchSpec, Shape, compiled, graph_stream

TOKENS = 16384  # B · N
CHANNELS = 2048  # H · D
SEQ_LENS = [1024, 2048, 4096, 8192, 16384]
HEAD_DIMS = [64, 128]
NAIVE_MAX_N = 4096  # step 1's score matrices reach 4 GiB here (D = 64: 32 heads, 4 sequences, float16)
DTYPES = [torch.float16, torch.bfloat16]


def _shape(n: int, d: int, causal: bool) -> Shape:
    return {"B": TOKENS // n, "H": CHANNELS // d, "N": n, "D": d, "causal": causal}


SHAPES: list[Shape] = [_shape(n, d, causal) for d in HEAD_DIMS for causal in (False, True) for n in SEQ_LENS]
QUICK_SHAPES: list[Shape] = [_shape(n, 128, causal) for causal in (False, True) for n in (1024, 4096, 16384)]
SDPA_BACKENDS = {
    "torch.sdpa-flash": "FLASH_ATTENTION",
    "torch.sdpa-efficient": "EFFICIENT_ATTENTION",
    "torch.sdpa-cudnn": "CUDNN_ATTENTION",
}


# -- the torch baselines ---------------------------------------------------------------------------
def _backend(variant: str):
    from torch.nn.attention import SDPBackend

    return getattr(SDPBackend, SDPA_BACKENDS[variant])


def sdpa(variant: str) -> Callable[..., torch.Tensor]:
    """``F.scaled_dot_product_attention`` restricted to the backend of ``variant`` (e.g. ``"torch.sdpa-flash"``)."""

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        from torch.nn.attention import sdpa_kernel

        with sdpa_kernel(_backend(variant)):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return run


@functools.cache
def causal_block_mask(n: int):
    """FlexAttention's block mask for causal attention over ``n`` positions (built once per length)."""
    from torch.nn.attention.flex_attention import create_block_mask

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    return create_block_mask(causal, None, None, n, n, device="cuda")


def _flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask) -> torch.Tensor:
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(q, k, v, block_mask=block_mask)


# One compiled FlexAttention, shared by the forward and backward specs (torch.compile keeps a
# separate compilation for inputs that require gradients).
compiled_flex = compiled(_flex)


def torch_flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """FlexAttention compiled by ``torch.compile``; a causal block mask lets it skip the blocks above the diagonal."""
    return compiled_flex(q, k, v, causal_block_mask(q.shape[2]) if causal else None)


TORCH_VARIANTS: dict[str, Callable[..., torch.Tensor]] = {**{name: sdpa(name) for name in SDPA_BACKENDS}, "torch.flex": torch_flex}


@functools.cache
def sdpa_backend_runs(variant: str, head_dim: int, causal: bool, dtype: torch.dtype, direction: str) -> bool:
    """Whether an SDPA backend runs this head dim, causality and dtype on this GPU, asked once on a small problem.

    True without a GPU (nothing to ask; the specs are then only listed, not run).
    """
    if not torch.cuda.is_available():
        return True
    q = random_tensor((1, 2, 256, head_dim), dtype, "cuda").requires_grad_(direction == "bwd")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about every backend it rules out
            o = sdpa(variant)(q, q, q, causal)
            if direction == "bwd":
                o.sum().backward()
        torch.cuda.synchronize()
    except RuntimeError:
        return False
    return True


def _applies(direction: str) -> Callable[[str, Shape, torch.dtype], bool]:
    def applies(variant: str, shape: Shape, dtype: torch.dtype) -> bool:
        if variant == "step-1-naive":
            return shape["N"] <= NAIVE_MAX_N
        if variant == "step-4-mask-every-block":
            return shape["causal"]  # without causality there is nothing to skip
        if variant in SDPA_BACKENDS:
            return sdpa_backend_runs(variant, shape["D"], shape["causal"], dtype, direction)
        return True

    return applies


# -- arguments -----------------------------------------------------------------------------------
def _qkv(shape: Shape, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    size = (shape["B"], shape["H"], shape["N"], shape["D"])
    return tuple(random_tensor(size, dtype, "cuda") for _ in range(3))


def make_fwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(q, k, v, causal)``, fresh random values."""
    return (*_qkv(shape, dtype), shape["causal"])


@dataclass
class BwdCase:
    """One backward measurement's inputs.

    ``q``, ``k``, ``v``, ``causal``, ``do`` and our forward's ``o`` and ``lse`` feed our backward;
    ``leaves`` are ``q``, ``k``, ``v`` marked as requiring gradients, and ``outputs`` holds, per
    torch variant, the output of a graph built on them.
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    causal: bool
    do: torch.Tensor
    o: torch.Tensor | None = None
    lse: torch.Tensor | None = None
    leaves: tuple[torch.Tensor, ...] = ()
    outputs: dict[str, torch.Tensor] = field(default_factory=dict)


def _bwd_case(shape: Shape, dtype: torch.dtype, graphs: dict[str, Callable[..., torch.Tensor]], ours: bool) -> BwdCase:
    q, k, v = _qkv(shape, dtype)
    case = BwdCase(q, k, v, shape["causal"], random_tensor(q.shape, dtype, "cuda"))
    if ours:
        case.o, case.lse = attention_fwd(q, k, v, case.causal)
    case.leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
    stream = graph_stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for name, fn in graphs.items():
            # A backend that refuses this problem is left out of it by `applies`; its graph is not built.
            with contextlib.suppress(RuntimeError), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                case.outputs[name] = fn(*case.leaves, case.causal)
    torch.cuda.current_stream().wait_stream(stream)
    return case


def make_bwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(BwdCase,)`` with our forward's results and a graph for every torch baseline."""
    return (_bwd_case(shape, dtype, TORCH_VARIANTS, ours=True),)


def make_naive_bwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(BwdCase,)`` with step 1's graph only: it holds ``N × N`` probabilities per head."""
    return (_bwd_case(shape, dtype, {"step-1-naive": attention_naive}, ours=False),)


def torch_grad(name: str) -> Callable[[BwdCase], tuple[torch.Tensor, ...]]:
    """The backward of the graph prebuilt for variant ``name``: gradients of ``q``, ``k`` and ``v``."""

    def grad(c: BwdCase) -> tuple[torch.Tensor, ...]:
        return torch.autograd.grad(c.outputs[name], c.leaves, c.do, retain_graph=True)

    return grad


def _flops(direction: str) -> Callable[[Shape, torch.dtype], int]:
    return lambda shape, dtype: attention_flops(shape["B"], shape["H"], shape["N"], shape["D"], shape["causal"], direction)


def _nbytes(direction: str) -> Callable[[Shape, torch.dtype], int]:
    return lambda shape, dtype: attention_bytes(shape["B"], shape["H"], shape["N"], shape["D"], dtype, direction)


# -- specs -----------------------------------------------------------------------------------------
def specs() -> list[BenchSpec]:
    """Forward and backward against SDPA's backends and FlexAttention; the lesson's steps."""
    common = {"kernel": "attention", "metric": "TFLOPS", "x": "N", "dtypes": DTYPES}
    naive_shapes = [s for s in SHAPES if s["N"] <= NAIVE_MAX_N]
    naive_quick = [s for s in QUICK_SHAPES if s["N"] <= NAIVE_MAX_N]
    return [
        BenchSpec(
            direction="fwd",
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            make_args=make_fwd_args,
            variants={
                "tritonperf": lambda q, k, v, causal: attention(q, k, v, causal),
                **TORCH_VARIANTS,
                "step-1-naive": attention_naive,
                "step-2-one-config": attention_fused_one_config,
                "step-3-tuned": attention_fused_tuned,
                "step-4-tma": attention_tma,
                "step-4-mask-every-block": attention_mask_every_block,
            },
            applies=_applies("fwd"),
            nbytes=_nbytes("fwd"),
            flops=_flops("fwd"),
            **common,
        ),
        BenchSpec(
            direction="bwd",
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            make_args=make_bwd_args,
            variants={
                "tritonperf": lambda c: attention_bwd(c.do, c.q, c.k, c.v, c.o, c.lse, c.causal),
                **{name: torch_grad(name) for name in TORCH_VARIANTS},
            },
            applies=_applies("bwd"),
            nbytes=_nbytes("bwd"),
            flops=_flops("bwd"),
            **common,
        ),
        BenchSpec(
            direction="bwd",
            shapes=naive_shapes,
            quick_shapes=naive_quick,
            make_args=make_naive_bwd_args,
            variants={"step-1-naive": torch_grad("step-1-naive")},
            nbytes=_nbytes("bwd"),
            flops=_flops("bwd"),
            **common,
        ),
    ]
