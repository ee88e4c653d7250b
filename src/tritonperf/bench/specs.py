"""What ``tritonperf bench`` measures: one :class:`BenchSpec` per kernel and direction.

Adding a kernel to the benchmarks means adding one function here that builds
its spec, and listing it in :data:`SPECS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from ..testing import random_tensor

Shape = dict[str, Any]


@dataclass(frozen=True)
class BenchSpec:
    """How to benchmark one kernel in one direction.

    Attributes:
        kernel: the records' ``kernel`` field.
        direction: ``"fwd"``, ``"bwd"`` or ``"fwd+bwd"``.
        metric: ``"GBps"`` for memory-bound kernels, ``"TFLOPS"`` for compute-bound ones.
        x: the shape key plotted on the x axis.
        shapes: the full sweep, run by ``tritonperf bench``.
        quick_shapes: a short sweep for live documentation builds and ``--quick``.
        dtypes: dtypes to measure.
        make_args: fresh random arguments ``(shape, dtype) -> tuple`` on the GPU.
        variants: ``name -> fn(*args)``; names follow the records' ``variant`` rules.
        nbytes: bytes a perfect kernel moves for ``(shape, dtype)``, or None.
        flops: floating-point operations for ``(shape, dtype)``, or None.
    """

    kernel: str
    direction: Literal["fwd", "bwd", "fwd+bwd"]
    metric: Literal["GBps", "TFLOPS"]
    x: str
    shapes: Sequence[Shape]
    quick_shapes: Sequence[Shape]
    dtypes: Sequence[torch.dtype]
    make_args: Callable[[Shape, torch.dtype], tuple]
    variants: dict[str, Callable[..., object]] = field(default_factory=dict)
    nbytes: Callable[[Shape, torch.dtype], int | None] = lambda shape, dtype: None
    flops: Callable[[Shape, torch.dtype], int | None] = lambda shape, dtype: None


def vector_add_spec() -> BenchSpec:
    from ..kernels.vector_add import vector_add, vector_add_bytes

    def make_args(shape: Shape, dtype: torch.dtype) -> tuple:
        n = shape["N"]
        return random_tensor((n,), dtype, "cuda"), random_tensor((n,), dtype, "cuda"), torch.empty(n, dtype=dtype, device="cuda")

    return BenchSpec(
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


#: Kernel name -> builders of its specs (one per direction). Specs are built on demand,
#: so importing this module neither compiles kernels nor touches the GPU.
SPECS: dict[str, list[Callable[[], BenchSpec]]] = {
    "vector_add": [vector_add_spec],
}


def specs_for(kernel: str) -> list[BenchSpec]:
    """The specs of one kernel; ValueError naming the known kernels otherwise."""
    if kernel not in SPECS:
        raise ValueError(f"unknown kernel {kernel!r}; known: {', '.join(SPECS)}")
    return [build() for build in SPECS[kernel]]
