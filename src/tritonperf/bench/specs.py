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
        applies: whether a variant runs at ``(variant, shape, dtype)``; a variant that cannot
            handle some shapes (e.g. needs aligned rows) is left out there, not recorded as failing.
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
    applies: Callable[[str, Shape, torch.dtype], bool] = lambda variant, shape, dtype: True

    def cases(self, quick: bool = False) -> list[tuple[torch.dtype, Shape, str]]:
        """Every (dtype, shape, variant) to measure, in order."""
        return [
            (dtype, shape, variant)
            for dtype in self.dtypes
            for shape in (self.quick_shapes if quick else self.shapes)
            for variant in self.variants
            if self.applies(variant, shape, dtype)
        ]


#: Kernel name -> the module under :mod:`tritonperf.bench.suites` that holds its specs, as a
#: function ``specs() -> list[BenchSpec]`` (one spec per direction). Modules are imported on
#: demand, so importing this one neither compiles kernels nor touches the GPU.
SPECS: dict[str, str] = {
    "vector_add": "vector_add",
    "layer_norm": "norms",
    "rms_norm": "norms",
    "softmax": "softmax",
    "transpose": "transpose",
    "memory_hierarchy": "memory",
    "matmul": "matmul",
    "attention": "attention",
}


def compiled(fn: Callable[..., object]) -> Callable[..., object]:
    """``torch.compile(fn, dynamic=False)``, built on first call, allowed to recompile for every shape of a sweep.

    Compilation happens during the timer's warm-up, so it never enters a measurement.
    """
    compiled_fn = None

    def call(*args):
        nonlocal compiled_fn
        if compiled_fn is None:
            import torch._dynamo

            config = torch._dynamo.config
            for name in ("recompile_limit", "accumulated_recompile_limit", "cache_size_limit", "accumulated_cache_size_limit"):
                if hasattr(config, name):
                    setattr(config, name, max(getattr(config, name), 1024))
            compiled_fn = torch.compile(fn, dynamic=False)
        return compiled_fn(*args)

    return call


def graph_stream() -> torch.cuda.Stream:
    """The stream ``torch.cuda.graph`` captures on when it is given none (timing.py gives none).

    Autograd runs each backward op on the stream its forward op ran on. A graph built on the
    default stream would therefore launch its backward there, which a capture on another stream
    forbids; built on the capture stream, its backward is captured like any other work.
    """
    graph = torch.cuda.graph
    if graph.default_capture_stream is None:
        graph.default_capture_stream = torch.cuda.Stream()
    return graph.default_capture_stream


def specs_for(kernel: str) -> list[BenchSpec]:
    """The specs of one kernel; ValueError naming the known kernels otherwise."""
    if kernel not in SPECS:
        raise ValueError(f"unknown kernel {kernel!r}; known: {', '.join(SPECS)}")
    module = importlib.import_module(f"tritonperf.bench.suites.{SPECS[kernel]}")
    return [spec for spec in module.specs() if spec.kernel == kernel]


def spec_for(kernel: str, direction: str) -> BenchSpec:
    """The spec of one kernel in one direction; ValueError when there is none."""
    for spec in specs_for(kernel):
        if spec.direction == direction:
            return spec
    raise ValueError(f"kernel {kernel!r} has no {direction!r} benchmark")
