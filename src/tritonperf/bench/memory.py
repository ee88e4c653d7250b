"""Read bandwidth against working-set size: where the L2 cache ends and HBM begins.

One kernel reads the same buffer ``repeats`` times in a single launch. Each program owns a
contiguous chunk and reads it again and again; loads use the ``.cg`` cache modifier (cache in L2,
not in L1), so once the first pass has brought the buffer in, every later pass is served by L2 if
the buffer fits there and by HBM if it does not. Bytes counted are ``repeats * buffer size``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from .. import runtime, validation
from .._intmath import cdiv

#: Bytes one timed call reads, about 4 GiB whatever the buffer's size. At the sizes that fit in
#: L2 the first, cold pass over the buffer is then at most a few percent of the bytes.
BYTES_PER_CALL = 1 << 32


# -- reference -----------------------------------------------------------------------------------
def read_sum_reference(x: torch.Tensor, repeats: int) -> torch.Tensor:
    """What the kernel's partial sums add up to: ``repeats * x.sum()``, in float64."""
    return repeats * x.double().sum()


# -- kernel --------------------------------------------------------------------------------------
@triton.jit
def read_repeated_kernel(x_ptr, partial_ptr, n_elements, chunk, repeats, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    start = pid.to(tl.int64) * chunk
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(repeats):
        for offset in range(0, chunk, BLOCK):
            offsets = start + offset + tl.arange(0, BLOCK)
            # .cg: keep the data in L2 only. With the default policy a program rereading its own
            # chunk would hit in its SM's L1 for small buffers, and the sweep would show L1, not L2.
            acc += tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0, cache_modifier=".cg")
    # Storing the sum keeps the compiler from dropping the loads.
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))


# -- launcher ------------------------------------------------------------------------------------
MAX_BLOCK = 8192  # 32 floats per thread at 8 warps: eight 16-byte loads in flight per thread
MIN_BLOCK = 512
NUM_WARPS = 8
PROGRAMS_PER_SM = 4


def read_repeated(x: torch.Tensor, repeats: int, *, programs: int | None = None) -> torch.Tensor:
    """Read the float32 tensor ``x`` ``repeats`` times in one launch; return the partial sums.

    Args:
        x: a contiguous float32 tensor (the working set).
        repeats: how many times every element is read, at least 1.
        programs: at most this many programs share the work; by default four per SM on a GPU.

    Returns:
        One float32 partial sum per program; together they add up to ``repeats * x.sum()``.

    Raises:
        TypeError: ``x`` is not a float32 tensor.
        ValueError: ``x`` is empty or not contiguous, ``repeats`` or ``programs`` is below 1.
    """
    validation.check_tensor("x", x)
    validation.check_device(x=x)
    validation.check_dtype("x", x, (torch.float32,))
    validation.check_contiguous(x=x)
    if x.numel() == 0:
        raise ValueError("x is empty: there is nothing to read")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if programs is None and runtime.MODE == "interpreter":
        programs = 4
    elif programs is None:
        programs = PROGRAMS_PER_SM * torch.cuda.get_device_properties(x.device).multi_processor_count
    if programs < 1:
        raise ValueError(f"programs must be at least 1, got {programs}")

    n_elements = x.numel()
    # Large blocks keep many loads in flight per SM (what bandwidth needs); small buffers get smaller
    # blocks so that the work still spreads over about half the programs asked for, or more.
    block = MAX_BLOCK
    while block > MIN_BLOCK and n_elements < block * programs // 2:
        block //= 2
    # Whole blocks per program, so that no program's chunk starts inside another's last block.
    chunk = cdiv(cdiv(n_elements, programs), block) * block
    programs = cdiv(n_elements, chunk)
    partial = torch.empty(programs, dtype=torch.float32, device=x.device)
    read_repeated_kernel[(programs,)](x, partial, n_elements, chunk, repeats, BLOCK=block, num_warps=NUM_WARPS)
    return partial


# -- counts --------------------------------------------------------------------------------------
def repeats_for(nbytes: int) -> int:
    """How many passes over a buffer of ``nbytes`` make one call read about :data:`BYTES_PER_CALL`."""
    return max(1, BYTES_PER_CALL // nbytes)


def read_bytes(nbytes: int) -> int:
    """Bytes one call of :func:`read_repeated` reads from a buffer of ``nbytes``."""
    return repeats_for(nbytes) * nbytes


# -- reading a sweep -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Levels:
    """What a recorded sweep says about the memory hierarchy (rates in GB/s, sizes in MiB)."""

    points: list[tuple[float, float]]  # (working set, rate), smallest first
    l2: float  # median rate of the buffers before the cliff that reach the plateau
    hbm: float  # median rate of the three largest buffers
    last_fast: float  # the largest working set before the cliff
    first_slow: float  # the smallest working set past it


def hierarchy_levels(doc: dict[str, Any]) -> Levels:
    """Read the L2 plateau, the HBM rate and the cliff between them off a results document.

    The cliff is the first size, past the smallest, whose rate falls below halfway between the
    fastest point and the HBM rate. Raises ValueError when the document holds no sweep.
    """
    points = sorted((r["shape"]["bytes"] / 2**20, r["GBps"]) for r in doc["records"] if r["kernel"] == "memory_hierarchy")
    if len(points) < 4:
        raise ValueError("the document holds no memory_hierarchy sweep (at least 4 sizes)")
    hbm = statistics.median(rate for _, rate in points[-3:])
    middle = (max(rate for _, rate in points) + hbm) / 2
    first_slow = next((size for size, rate in points[1:] if rate < middle), points[-1][0])
    l2 = statistics.median(rate for size, rate in points if size < first_slow and rate >= middle)
    last_fast = max(size for size, _ in points if size < first_slow)
    return Levels(points, l2, hbm, last_fast, first_slow)
