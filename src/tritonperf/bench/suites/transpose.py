"""Benchmark of :func:`tritonperf.transpose`: square matrices 4096² … 16384² and two odd shapes, float32 and float16.

Every variant writes into a preallocated output, so no variant pays for an allocation.
"""

from __future__ import annotations

import torch

from ...kernels.transpose import transpose, transpose_bytes
from ...ladders.transpose import transpose_coalesced_writes, transpose_row_per_program, transpose_tiles
from ...testing import random_tensor
from ..specs import BenchSpec, Shape, compiled

SHAPES: list[Shape] = [
    {"M": 4096, "N": 4096},
    {"M": 8192, "N": 8192},
    {"M": 16384, "N": 16384},  # 1 GiB in float32
    {"M": 8191, "N": 4097},  # odd: rows are not 16-byte multiples, edge tiles are partial
    {"M": 12288, "N": 5120},  # not square
]
QUICK_SHAPES: list[Shape] = [{"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}, {"M": 8191, "N": 4097}]


def make_args(shape: Shape, dtype: torch.dtype) -> tuple:
    M, N = shape["M"], shape["N"]
    return random_tensor((M, N), dtype, "cuda"), torch.empty((N, M), dtype=dtype, device="cuda")


def torch_transpose(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes, into a preallocated output: ``out.copy_(x.transpose(-1, -2))``."""
    return out.copy_(x.transpose(-1, -2))


def tma_fits(shape: Shape, dtype: torch.dtype) -> bool:
    """Tensor descriptors need every row of input and output to start at a 16-byte multiple."""
    size = torch.empty((), dtype=dtype).element_size()
    return shape["M"] * size % 16 == 0 and shape["N"] * size % 16 == 0


def pairs_fit(shape: Shape, dtype: torch.dtype) -> bool:
    """The pair kernel moves 2 x 2 blocks: both dimensions must be even."""
    return shape["M"] % 2 == 0 and shape["N"] % 2 == 0


def applies(variant: str, shape: Shape, dtype: torch.dtype) -> bool:
    """Steps 5 and 6 run only where their kernels can, step 7 only where rows are not 16-byte multiples; the rest everywhere."""
    if variant == "step-5-tma":
        return tma_fits(shape, dtype)
    if variant == "step-6-pairs":
        return pairs_fit(shape, dtype)
    if variant == "step-7-realign":
        return not tma_fits(shape, dtype)
    return True


def specs() -> list[BenchSpec]:
    """The forward pass against torch, torch.compile and the lesson's steps."""
    return [
        BenchSpec(
            kernel="transpose",
            direction="fwd",
            metric="GBps",
            x="N",
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            dtypes=[torch.float32, torch.float16],
            make_args=make_args,
            variants={
                "tritonperf": lambda x, out: transpose(x, out),
                "torch": torch_transpose,
                "torch.compile": compiled(torch_transpose),
                "step-1-row-per-program": lambda x, out: transpose_row_per_program(x, out),
                "step-2-coalesced-writes": lambda x, out: transpose_coalesced_writes(x, out),
                "step-3-tiles": lambda x, out: transpose_tiles(x, out),
                "step-4-tuned": lambda x, out: transpose(x, out, method="tiles"),
                "step-5-tma": lambda x, out: transpose(x, out, method="tma"),
                "step-6-pairs": lambda x, out: transpose(x, out, method="pairs"),
                "step-7-realign": lambda x, out: transpose(x, out, method="realign"),
            },
            applies=applies,
            nbytes=lambda shape, dtype: transpose_bytes(shape["M"], shape["N"], dtype),
        )
    ]
