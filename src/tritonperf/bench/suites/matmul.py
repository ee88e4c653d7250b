"""Benchmark of :func:`tritonperf.matmul`: square matrices 256³ … 8192³ and LLM shapes.

The LLM shapes are the projections of a transformer layer at a large batch of tokens:
8192 × 8192 × 1024, 4096 × 14336 × 4096 (an MLP's up-projection) and 16384 × 4096 × 4096.
Every variant allocates its output, as ``torch.matmul`` does, and the rate counts the
``2·M·N·K`` operations of the product only.

* float16 and bfloat16: ours (autotuned) against ``torch.matmul`` (cuBLAS), the lesson's steps
  (with step 2 also run without software pipelining, ``step-2-grouped-1-stage``), and the fused
  epilogue: ``gelu(a @ b)`` in one kernel (``step-5-fused-gelu``) against
  ``torch.matmul`` followed by ``torch.nn.functional.gelu`` (``torch-matmul-then-gelu``).
  ``tritonperf`` runs the persistent TMA kernel where it can above 2048³, plain or
  warp-specialized as its autotuner finds faster, plain only from 8192 in every dimension
  (``step-4-persistent-tma`` and ``step-4-warp-specialized`` pin each choice at every size).
* float32, square sizes to 4096³: ours (tf32 on the Tensor Cores, as by default) against
  ``torch.matmul`` with TF32 allowed (``torch-tf32``), and the autotuned pointer kernel with tf32
  (``step-3-autotuned``) and with full float32 on the FMA units (``step-3-autotuned-fp32-fma``):
  what the Tensor Cores are worth. On Hopper the tf32 variants first copy the row-major ``b``
  K-major (``k_major``), which the tf32 MMA needs; that copy is in their times.
* float8_e4m3fn with per-tensor scales and bfloat16 output: ours against ``torch._scaled_mm``,
  which needs ``b`` column-major, so ``b`` is given that way to every variant (ours reads it
  through its strides), and the pointer kernel, the plain and the warp-specialized TMA kernel.
  Each side also runs with fast accumulation (``step-6-fast-accum``: ``tritonperf`` with
  ``fast_accum=True``; ``torch-fast-accum``: ``use_fast_accum=True``), which leaves the whole of
  K to the Tensor Cores' float8 accumulator: compare those two with each other.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...kernels.matmul import matmul, matmul_bytes, matmul_flops
from ...ladders.matmul import (
    matmul_autotuned,
    matmul_fused_gelu,
    matmul_grouped,
    matmul_grouped_one_stage,
    matmul_persistent_tma,
    matmul_tiles,
    matmul_warp_specialized,
)
from ...testing import random_tensor
from ..specs import BenchSpec, Shape

SQUARE_SIZES = [256, 512, 1024, 2048, 4096, 8192]
LLM_SHAPES: list[Shape] = [
    {"M": 8192, "N": 8192, "K": 1024},
    {"M": 4096, "N": 14336, "K": 4096},
    {"M": 16384, "N": 4096, "K": 4096},
]
SHAPES: list[Shape] = [{"M": s, "N": s, "K": s} for s in SQUARE_SIZES] + LLM_SHAPES
QUICK_SHAPES: list[Shape] = [{"M": s, "N": s, "K": s} for s in (1024, 4096)] + LLM_SHAPES[:1]
# float32 without the Tensor Cores runs at a few percent of their rate: square sizes up to 4096³.
FP32_SHAPES: list[Shape] = [{"M": s, "N": s, "K": s} for s in (1024, 2048, 4096)]


def make_args(shape: Shape, dtype: torch.dtype) -> tuple:
    return (random_tensor((shape["M"], shape["K"]), dtype, "cuda"), random_tensor((shape["K"], shape["N"]), dtype, "cuda"))


def make_fp8_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(a, b, scale_a, scale_b)``: ``a`` row-major, ``b`` column-major (as ``torch._scaled_mm`` requires)."""
    a = random_tensor((shape["M"], shape["K"]), dtype, "cuda")
    b = random_tensor((shape["N"], shape["K"]), dtype, "cuda").t()
    scale = torch.ones((), device="cuda")
    return a, b, scale, scale.clone()


def torch_matmul_then_gelu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes without fusion: the product, then an exact GELU over it."""
    return F.gelu(torch.matmul(a, b))


def torch_matmul_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch.matmul`` with TF32 allowed for float32 inputs, as ours multiplies them by default."""
    backend = torch.backends.cuda.matmul
    previous = backend.fp32_precision
    backend.fp32_precision = "tf32"
    try:
        return torch.matmul(a, b)
    finally:
        backend.fp32_precision = previous


def torch_scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                    fast_accum: bool = False) -> torch.Tensor:
    """torch's float8 matmul, with the same scales and the same bfloat16 output as ours."""
    return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)


def _flops(shape: Shape, dtype: torch.dtype) -> int:
    return matmul_flops(shape["M"], shape["N"], shape["K"])


def _nbytes(shape: Shape, dtype: torch.dtype) -> int:
    return matmul_bytes(shape["M"], shape["N"], shape["K"], dtype)


def specs() -> list[BenchSpec]:
    """float16 and bfloat16 against torch and the lesson's steps; float32 with and without the Tensor
    Cores; float8 against ``torch._scaled_mm``."""
    # What the three specs share: the kernel, the metric, the x axis and the counts.
    common = dict(kernel="matmul", direction="fwd", metric="TFLOPS", x="N", nbytes=_nbytes, flops=_flops)
    return [
        BenchSpec(
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            dtypes=[torch.float16, torch.bfloat16],
            make_args=make_args,
            variants={
                "tritonperf": lambda a, b: matmul(a, b),
                "torch": torch.matmul,
                "step-1-tiles": matmul_tiles,
                "step-2-grouped": matmul_grouped,
                "step-2-grouped-1-stage": matmul_grouped_one_stage,
                "step-3-autotuned": matmul_autotuned,
                "step-4-persistent-tma": matmul_persistent_tma,
                "step-4-warp-specialized": matmul_warp_specialized,
                "step-5-fused-gelu": matmul_fused_gelu,
                "torch-matmul-then-gelu": torch_matmul_then_gelu,
            },
            **common,
        ),
        BenchSpec(
            shapes=FP32_SHAPES,
            quick_shapes=FP32_SHAPES[:1],
            dtypes=[torch.float32],
            make_args=make_args,
            variants={
                "tritonperf": lambda a, b: matmul(a, b),
                "torch-tf32": torch_matmul_tf32,
                "step-3-autotuned": matmul_autotuned,
                "step-3-autotuned-fp32-fma": lambda a, b: matmul(a, b, method="tiles", input_precision="ieee"),
            },
            **common,
        ),
        BenchSpec(
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            dtypes=[torch.float8_e4m3fn],
            make_args=make_fp8_args,
            variants={
                "tritonperf": lambda a, b, sa, sb: matmul(a, b, scale_a=sa, scale_b=sb),
                "torch": torch_scaled_mm,
                "torch-fast-accum": lambda a, b, sa, sb: torch_scaled_mm(a, b, sa, sb, fast_accum=True),
                "step-3-autotuned": lambda a, b, sa, sb: matmul(a, b, scale_a=sa, scale_b=sb, method="tiles"),
                "step-4-persistent-tma": lambda a, b, sa, sb: matmul(a, b, scale_a=sa, scale_b=sb, method="tma",
                                                                     warp_specialize=False),
                "step-4-warp-specialized": lambda a, b, sa, sb: matmul(a, b, scale_a=sa, scale_b=sb, method="tma",
                                                                       warp_specialize=True),
                "step-6-fast-accum": lambda a, b, sa, sb: matmul(a, b, scale_a=sa, scale_b=sb, fast_accum=True),
            },
            **common,
        ),
    ]
