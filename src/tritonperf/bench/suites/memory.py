"""The memory-hierarchy sweep: read bandwidth of float32 buffers from 1 MiB to 2 GiB.

Powers of two, with extra points between 16 and 128 MiB, where the L2 cache of a Hopper GPU
runs out (the driver reports its size as ``L2_cache_size``). Each call reads about 4 GiB (see :mod:`tritonperf.bench.memory`); the timer
flushes L2 before every call, so each call's first pass over the buffer comes from HBM.
"""

from __future__ import annotations

import torch

from ...testing import random_tensor
from ..memory import read_bytes, read_repeated, repeats_for
from ..specs import BenchSpec, Shape

MIB = 1 << 20
SIZES_MIB = sorted({1 << k for k in range(0, 12)} | {24, 40, 48, 56, 64, 80, 96})
SHAPES: list[Shape] = [{"bytes": s * MIB} for s in SIZES_MIB]
QUICK_SHAPES: list[Shape] = [{"bytes": s * MIB} for s in (1, 4, 16, 32, 48, 64, 128, 1024)]


def make_args(shape: Shape, dtype: torch.dtype) -> tuple:
    return (random_tensor((shape["bytes"] // 4,), dtype, "cuda"), repeats_for(shape["bytes"]))


def specs() -> list[BenchSpec]:
    """One variant: the repeated-read kernel."""
    return [
        BenchSpec(
            kernel="memory_hierarchy",
            direction="fwd",
            metric="GBps",
            x="bytes",
            shapes=SHAPES,
            quick_shapes=QUICK_SHAPES,
            dtypes=[torch.float32],
            make_args=make_args,
            variants={"tritonperf": lambda x, repeats: read_repeated(x, repeats)},
            nbytes=lambda shape, dtype: read_bytes(shape["bytes"]),
        )
    ]
