"""Benchmark of :func:`tritonperf.softmax`: 4096 rows of N = 256 … 65536 columns, and long rows.

The long-row shapes (2¹⁷ and 2²⁰ columns) take the online path. Every variant allocates its
output, as ``torch.softmax`` does. The backward specs time the backward pass alone, from the
saved output ``y`` and the incoming gradient ``dy``: for eager torch that is the operator its
autograd runs for softmax (``aten._softmax_backward_data``), called directly. Calling it directly
rather than through ``torch.autograd.grad`` on a prebuilt graph keeps the call capturable in the
CUDA graphs that time small inputs: autograd would run it on the stream of the forward pass.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...kernels.softmax import softmax, softmax_backward, softmax_bytes
from ...ladders.softmax import softmax_fused_row, softmax_unfused
from ...testing import random_tensor
from ..specs import BenchSpec, Shape, compiled

ROWS = 4096
COLUMNS = [256, 1024, 4096, 5120, 8192, 16384, 32768, 65536]
# Rows longer than the registers hold; at most 256 MiB per float32 tensor.
LONG_ROWS: list[Shape] = [{"M": 256, "N": 1 << 17}, {"M": 64, "N": 1 << 20}]
SHAPES: list[Shape] = [{"M": ROWS, "N": n} for n in COLUMNS] + LONG_ROWS
# Step 2 holds a whole row in 4 warps. Past 32768 columns that spills so much that compiling it takes
# seconds to minutes (over 8 minutes for 2**20 columns, compiled for sm_90 with triton 3.9), so the
# benchmark leaves those shapes out; the lesson's point, that it spills, shows from 32768 on.
STEP_2_MAX_N = 32768
QUICK_SHAPES: list[Shape] = [{"M": ROWS, "N": n} for n in (1024, 4096, 16384, 65536)] + [LONG_ROWS[1]]


def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes: ``torch.softmax(x, dim=-1)``."""
    return torch.softmax(x, dim=-1)


def torch_softmax_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """The backward operator torch's autograd runs for softmax: ``dx = y * (dy - sum(y * dy))``."""
    return torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype)


def make_fwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    return (random_tensor((shape["M"], shape["N"]), dtype, "cuda"),)


def make_bwd_args(shape: Shape, dtype: torch.dtype) -> tuple:
    """``(y, dy)``: the softmax of fresh random scores, and a fresh random incoming gradient."""
    y = torch_softmax(random_tensor((shape["M"], shape["N"]), dtype, "cuda"))
    return y, random_tensor((shape["M"], shape["N"]), dtype, "cuda")


def _nbytes(direction: str) -> Callable[[Shape, torch.dtype], int]:
    return lambda shape, dtype: softmax_bytes(shape["M"], shape["N"], dtype, direction)


def specs() -> list[BenchSpec]:
    """Forward against torch, torch.compile and the lesson's two steps; backward against torch and torch.compile."""
    return [
        BenchSpec(
            kernel="softmax",
            direction="fwd",
            metric="GBps",
            x="N",
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            dtypes=[torch.float16, torch.bfloat16, torch.float32],
            make_args=make_fwd_args,
            variants={
                "tritonperf": lambda x: softmax(x),
                "torch": torch_softmax,
                "torch.compile": compiled(torch_softmax),
                "step-1-unfused": lambda x: softmax_unfused(x),
                "step-2-fused-row": lambda x: softmax_fused_row(x),
            },
            applies=lambda variant, shape, dtype: variant != "step-2-fused-row" or shape["N"] <= STEP_2_MAX_N,
            nbytes=_nbytes("fwd"),
        ),
        BenchSpec(
            kernel="softmax",
            direction="bwd",
            metric="GBps",
            x="N",
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            dtypes=[torch.float16, torch.float32],
            make_args=make_bwd_args,
            variants={
                "tritonperf": lambda y, dy: softmax_backward(y, dy),
                "torch": torch_softmax_backward,
                "torch.compile": compiled(torch_softmax_backward),
            },
            nbytes=_nbytes("bwd"),
        ),
    ]
