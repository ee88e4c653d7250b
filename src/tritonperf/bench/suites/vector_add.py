"""Benchmark of :func:`tritonperf.vector_add`: sizes 2¹² … 2²⁸, float32 and float16."""

from __future__ import annotations

import torch

from ...kernels.vector_add import vector_add, vector_add_bytes
from ...testing import random_tensor
from ..specs import BenchSpec, Shape


def make_args(shape: Shape, dtype: torch.dtype) -> tuple:
    n = shape["N"]
    return random_tensor((n,), dtype, "cuda"), random_tensor((n,), dtype, "cuda"), torch.empty(n, dtype=dtype, device="cuda")


def specs() -> list[BenchSpec]:
    """The forward pass against ``torch.add`` and the lesson's small-block starting point."""
    return [
        BenchSpec(
            kernel="vector_add",
            direction="fwd",
            metric="GBps",
            x="N",
            shapes=[{"N": 1 << k} for k in range(12, 29, 2)],
            quick_shapes=[{"N": 1 << k} for k in range(16, 29, 4)],
            dtypes=[torch.float32, torch.float16],
            make_args=make_args,
            variants={
                "tritonperf": lambda x, y, out: vector_add(x, y, out),
                "torch": lambda x, y, out: torch.add(x, y, out=out),
                # The first lesson's starting point: small blocks, one element per thread.
                "step-1-block-128": lambda x, y, out: vector_add(x, y, out, block_size=128, num_warps=4),
            },
            nbytes=lambda shape, dtype: vector_add_bytes(shape["N"], dtype),
        )
    ]
