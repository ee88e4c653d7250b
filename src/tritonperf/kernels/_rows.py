"""What the row-wise kernels (softmax, layer and RMS norm) tell the compiler about their rows, and
how deep a pipeline their loops may ask for on the GPU at hand.

Triton vectorizes a masked load of a row, 16 bytes at a time, only when it can prove that the row
length and the row stride keep each 16-byte group of lanes whole. It learns that from its own
specialization of integer arguments, which notes divisibility by 16 and nothing finer: a row of
3000 16-bit elements (a multiple of 8, so every row starts 16-byte aligned) is read two bytes at a
time, and ran at about 0.6 of torch.compile's speed (H200, triton 3.6). ``tl.multiple_of`` does not
reach scalar arguments, so the launcher measures the alignment, passes it as a constexpr, and the
kernel rewrites each value in a form whose divisibility the compiler can see.

The kernels' loops over rows and tiles are software-pipelined (``NUM_STAGES``): the next rows are
loaded into shared memory while the current ones are worked on. The stage counts in their tables
were measured on Hopper, where a program may use 227 KB; a GPU with less shared memory would
refuse some of them at launch (``OutOfResources``), so :func:`launch` first lowers the count to one
whose compiled kernel fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from .. import runtime

#: Divisibility Triton already detects by itself (``aligned`` repeats the number: a kernel reads
#: only constexpr globals).
KNOWN_ALIGN = 16


def row_align(*values: int) -> int:
    """The largest power of two, at most ``KNOWN_ALIGN``, that divides every one of ``values``."""
    common = 0
    for value in values:
        common = math.gcd(common, value)
    if common == 0:  # only zeros (a row stride of 0): anything divides them
        return KNOWN_ALIGN
    return min(common & -common, KNOWN_ALIGN)


@triton.jit
def aligned(value, ALIGN: tl.constexpr):
    """``value``, a multiple of ``ALIGN`` (the launcher checked), written as one the compiler can see."""
    if ALIGN > 1 and ALIGN < 16:
        value = value // ALIGN * ALIGN
    return value


_FITTED: dict[tuple, int] = {}


def compile_key(kernel, args: Sequence, consts: dict, num_warps: int, device: torch.device) -> tuple:
    """What a compile-time answer about ``kernel`` depends on: the kernel, its constants, its warps,
    the dtypes of its tensor arguments and the device. Keys the caches of :func:`fit_stages` and
    :func:`tritonperf.kernels.norms.programs_per_sm`."""
    dtypes = tuple(str(a.dtype) for a in args if isinstance(a, torch.Tensor))
    return (id(kernel), tuple(sorted(consts.items())), num_warps, dtypes, device.index)


def fit_stages(kernel, args: Sequence, consts: dict, num_warps: int, device: torch.device, limit: int | None = None) -> int:
    """The deepest pipeline, at most ``consts["NUM_STAGES"]``, at which ``kernel`` fits in shared memory.

    Compiles ``kernel`` for ``args`` and ``consts`` (without launching it) at one stage fewer at a
    time until its shared memory is at most ``limit`` (by default the device's
    :func:`~tritonperf.runtime.shared_memory_per_block`); never below one stage, whose failure, if
    any, Triton reports at launch. Cached per kernel, constants, warps, argument dtypes, device
    and limit. Off the GPU (the interpreter has no shared memory) the count is returned as it is.
    """
    stages = consts["NUM_STAGES"]
    if stages <= 1 or device.type != "cuda":
        return stages
    key = (*compile_key(kernel, args, consts, num_warps, device), limit)
    if key not in _FITTED:
        most = limit or runtime.shared_memory_per_block(device)
        while True:
            compiled = kernel.warmup(*args, grid=(1,), **{**consts, "NUM_STAGES": stages}, num_warps=num_warps)
            if stages == 1 or compiled.metadata.shared <= most:
                break
            stages -= 1
        _FITTED[key] = stages
    return _FITTED[key]


def launch(kernel, grid: tuple[int, ...], args: Sequence, consts: dict, num_warps: int, *, fit: bool = True) -> None:
    """``kernel[grid](*args, **consts, num_warps=num_warps)``, with ``NUM_STAGES`` lowered by
    :func:`fit_stages` first when ``fit`` (pass False when the caller chose the stage count: then a
    count that does not fit is Triton's error to report)."""
    if fit:
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        consts = {**consts, "NUM_STAGES": fit_stages(kernel, args, consts, num_warps, device)}
    kernel[grid](*args, **consts, num_warps=num_warps)
