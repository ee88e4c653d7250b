"""Benchmarks of :func:`tritonperf.layer_norm` and :func:`tritonperf.rms_norm`, forward and backward.

Shapes: 4096 rows of N = 256 … 65536 columns, and the hidden sizes of large language models
(4096, 5120, 8192) with 16384 rows. Weights and biases are in the input's dtype.

The forward specs time one forward call of each variant; ours also writes the per-row statistics a
training step keeps. The backward specs time the backward pass alone: ours is called with the
statistics of its forward; torch's variants differentiate a prebuilt graph with
``torch.autograd.grad(y, inputs, dy, retain_graph=True)``, which times what a training step runs
(for ``torch.compile``, the compiled backward graph). Autograd launches each backward op on the
stream its forward op ran on, so the graphs are built on the stream that CUDA-graph capture uses
(see :func:`~tritonperf.bench.specs.graph_stream`): the small inputs' timing captures the backward like any other call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...kernels.norms import (
    layer_norm_bwd,
    layer_norm_bytes,
    layer_norm_fwd,
    rms_norm_bwd,
    rms_norm_bytes,
    rms_norm_fwd,
)
from ...ladders.norms import layer_norm_bwd_atomic, layer_norm_fwd_row, layer_norm_fwd_row_scaled_warps
from ...testing import random_tensor
from ..specs import BenchSpec, Shape, compiled, graph_stream

LAYER_NORM_EPS, RMS_NORM_EPS = 1e-5, 1e-6
ROWS = 4096
COLUMNS = [256, 1024, 4096, 8192, 16384, 65536]
LLM_SHAPES: list[Shape] = [{"M": 16384, "N": n} for n in (4096, 5120, 8192)]
SHAPES: list[Shape] = [{"M": ROWS, "N": n} for n in COLUMNS] + LLM_SHAPES
QUICK_SHAPES: list[Shape] = [{"M": ROWS, "N": n} for n in (1024, 4096, 16384, 65536)] + LLM_SHAPES[:1]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]


# -- the torch baselines ---------------------------------------------------------------------------
def torch_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes: ``F.layer_norm(x, (N,), weight, bias, eps)``."""
    return F.layer_norm(x, (x.shape[-1],), weight, bias, LAYER_NORM_EPS)


def torch_rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes: ``F.rms_norm(x, (N,), weight, eps)``."""
    return F.rms_norm(x, (x.shape[-1],), weight, RMS_NORM_EPS)


# One compiled function per norm, shared by the forward and backward specs (torch.compile keeps a
# separate compilation for inputs that require gradients).
compiled_layer_norm = compiled(torch_layer_norm)
compiled_rms_norm = compiled(torch_rms_norm)


# -- arguments -----------------------------------------------------------------------------------
def make_layer_norm_fwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(x, weight, bias)``, fresh random values."""
    M, N = shape["M"], shape["N"]
    return random_tensor((M, N), dtype, "cuda"), random_tensor((N,), dtype, "cuda"), random_tensor((N,), dtype, "cuda")


def make_rms_norm_fwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(x, weight)``, fresh random values."""
    M, N = shape["M"], shape["N"]
    return random_tensor((M, N), dtype, "cuda"), random_tensor((N,), dtype, "cuda")


@dataclass(frozen=True)
class BwdCase:
    """One backward measurement's inputs.

    ``x``, ``params`` (weight and, for layer norm, bias), ``dy`` and ``stats`` (mean and rstd, or
    rstd alone) feed our backward and the lesson's step; ``leaves`` are the same tensors marked as
    requiring gradients, and ``y_torch``, ``y_compiled`` the outputs of graphs built on them.
    """

    x: torch.Tensor
    params: tuple[torch.Tensor, ...]
    dy: torch.Tensor
    stats: tuple[torch.Tensor, ...]
    leaves: tuple[torch.Tensor, ...]
    y_torch: torch.Tensor
    y_compiled: torch.Tensor


def _bwd_case(shape: Shape, dtype: torch.dtype, torch_fn: Callable, compiled_fn: Callable, ours_fwd: Callable, n_params: int) -> tuple:
    M, N = shape["M"], shape["N"]
    x = random_tensor((M, N), dtype, "cuda")
    params = tuple(random_tensor((N,), dtype, "cuda") for _ in range(n_params))
    dy = random_tensor((M, N), dtype, "cuda")
    stats = ours_fwd(x, *params)[1:]
    leaves = tuple(t.detach().requires_grad_() for t in (x, *params))
    stream = graph_stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y_torch, y_compiled = torch_fn(*leaves), compiled_fn(*leaves)
    torch.cuda.current_stream().wait_stream(stream)
    return (BwdCase(x, params, dy, stats, leaves, y_torch, y_compiled),)


def make_layer_norm_bwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(BwdCase,)`` for layer norm: stats are ``(mean, rstd)`` from our forward."""
    fwd = functools.partial(layer_norm_fwd, eps=LAYER_NORM_EPS)
    return _bwd_case(shape, dtype, torch_layer_norm, compiled_layer_norm, fwd, 2)


def make_rms_norm_bwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(BwdCase,)`` for RMS norm: stats are ``(rstd,)`` from our forward."""
    fwd = functools.partial(rms_norm_fwd, eps=RMS_NORM_EPS)
    return _bwd_case(shape, dtype, torch_rms_norm, compiled_rms_norm, fwd, 1)


def torch_grad(y: torch.Tensor, c: BwdCase) -> tuple[torch.Tensor, ...]:
    """The backward of a prebuilt graph: gradients of ``x`` and the parameters."""
    return torch.autograd.grad(y, c.leaves, c.dy, retain_graph=True)


def _nbytes(count: Callable[..., int], direction: str) -> Callable[[Shape, torch.dtype], int]:
    return lambda shape, dtype: count(shape["M"], shape["N"], dtype, direction)


# -- specs -----------------------------------------------------------------------------------------
def specs() -> list[BenchSpec]:
    """Layer norm and RMS norm, forward and backward, against torch and torch.compile; the lesson's steps for layer norm."""
    common = {"metric": "GBps", "x": "N", "shapes": SHAPES, "quick_shapes": QUICK_SHAPES, "dtypes": DTYPES}
    return [
        BenchSpec(
            kernel="layer_norm",
            direction="fwd",
            make_args=make_layer_norm_fwd_args,
            variants={
                "tritonperf": lambda x, w, b: layer_norm_fwd(x, w, b, LAYER_NORM_EPS),
                "torch": torch_layer_norm,
                "torch.compile": compiled_layer_norm,
                "step-1-row-4-warps": lambda x, w, b: layer_norm_fwd_row(x, w, b, LAYER_NORM_EPS),
                "step-2-row-scaled-warps": lambda x, w, b: layer_norm_fwd_row_scaled_warps(x, w, b, LAYER_NORM_EPS),
            },
            # Step 1 at 65536 columns in 4 warps spills heavily and compiles for many seconds: left out.
            applies=lambda variant, shape, dtype: variant != "step-1-row-4-warps" or shape["N"] <= 16384,
            nbytes=_nbytes(layer_norm_bytes, "fwd"),
            **common,
        ),
        BenchSpec(
            kernel="layer_norm",
            direction="bwd",
            make_args=make_layer_norm_bwd_args,
            variants={
                "tritonperf": lambda c: layer_norm_bwd(c.dy, c.x, *c.params, *c.stats),
                "torch": lambda c: torch_grad(c.y_torch, c),
                "torch.compile": lambda c: torch_grad(c.y_compiled, c),
                "step-1-atomic-sums": lambda c: layer_norm_bwd_atomic(c.dy, c.x, c.params[0], *c.stats),
            },
            nbytes=_nbytes(layer_norm_bytes, "bwd"),
            **common,
        ),
        BenchSpec(
            kernel="rms_norm",
            direction="fwd",
            make_args=make_rms_norm_fwd_args,
            variants={
                "tritonperf": lambda x, w: rms_norm_fwd(x, w, RMS_NORM_EPS),
                "torch": torch_rms_norm,
                "torch.compile": compiled_rms_norm,
            },
            nbytes=_nbytes(rms_norm_bytes, "fwd"),
            **common,
        ),
        BenchSpec(
            kernel="rms_norm",
            direction="bwd",
            make_args=make_rms_norm_bwd_args,
            variants={
                "tritonperf": lambda c: rms_norm_bwd(c.dy, c.x, *c.params, *c.stats),
                "torch": lambda c: torch_grad(c.y_torch, c),
                "torch.compile": lambda c: torch_grad(c.y_compiled, c),
            },
            nbytes=_nbytes(rms_norm_bytes, "bwd"),
            **common,
        ),
    ]
