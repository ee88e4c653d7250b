"""What ``tritonperf bench`` measures: one :class:`BenchSpec` per kernel and direction.

Adding a kernel to the benchmarks means adding one module to :mod:`tritonperf.bench.suites`
with a function ``specs()`` that returns its specs, and naming it in :data:`SPECS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

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


#: Kernel name -> the module under :mod:`tritonperf.bench.suites` that holds its specs, as a
#: function ``specs() -> list[BenchSpec]`` (one spec per direction). Modules are imported on
#: demand, so importing this one neither compiles kernels nor touches the GPU.
SPECS: dict[str, str] = {
    "vector_add": "vector_add",
}


def specs_for(kernel: str) -> list[BenchSpec]:
    """The specs of one kernel; ValueError naming the known kernels otherwise."""
    if kernel not in SPECS:
        raise ValueError(f"unknown kernel {kernel!r}; known: {', '.join(SPECS)}")
    module = importlib.import_module(f"tritonperf.bench.suites.{SPECS[kernel]}")
    return [spec for spec in module.specs() if spec.kernel == kernel]
