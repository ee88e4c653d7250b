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

Rows too long for registers but short enough for shared memory can be *staged* on Hopper: the
TMA copies a row into a ring of shared-memory chunks, the program reads it from there as often as
it needs, and the copy of its next row into a chunk starts as soon as every warp has read that
chunk for the last time. Where shared memory cannot take a whole row (a float32 row of 65536, or
the backward's 16-bit rows of y and dy together), the last chunk is *held*: loaded straight into
registers, ahead of time, and kept there for both passes. Or the row is *split*: each of a group
of programs stages its own chunk of it, and the programs trade their shares of the row's sums
through global memory (``pack_sums``, ``ask_for_shares``, ``wait_for_shares``).
Memory then sees each row once. Those kernels are written in Gluon (plain Triton decides by itself
what goes to shared memory); the helpers below are what they share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier
from triton.experimental.gluon.language.nvidia.hopper import tma as gl_tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor

from .. import runtime
from .._intmath import cdiv, floor_power_of_2, next_power_of_2

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


def head_and_tail(n_cols: int) -> tuple[int, int]:
    """A row of ``n_cols`` held as two power-of-two blocks: the largest that fits in the row and
    the smallest that covers the rest, when the two leave fewer masked lanes than one block of
    ``next_power_of_2(n_cols)`` (5120 -> (4096, 1024)); otherwise ``(next_power_of_2(n_cols), 0)``.
    A masked lane moves no bytes but costs the instructions and registers of a real one.
    """
    head = floor_power_of_2(n_cols)
    tail = next_power_of_2(n_cols - head) if n_cols > head else 0
    if tail and head + tail < next_power_of_2(n_cols):
        return head, tail
    return next_power_of_2(n_cols), 0


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


def launch(kernel, grid: tuple[int, ...], args: Sequence, consts: dict, num_warps: int, *, fit: bool = True,
           max_registers: int | None = None) -> None:
    """``kernel[grid](*args, **consts, num_warps=num_warps)``, with ``NUM_STAGES`` lowered by
    :func:`fit_stages` first when ``fit`` (pass False when the caller chose the stage count: then a
    count that does not fit is Triton's error to report), and with at most ``max_registers``
    registers a thread when given (Triton's ``maxnreg``)."""
    if fit:
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        consts = {**consts, "NUM_STAGES": fit_stages(kernel, args, consts, num_warps, device)}
    options = {"maxnreg": max_registers} if max_registers else {}
    kernel[grid](*args, **consts, num_warps=num_warps, **options)


# -- rows staged in shared memory (Gluon, Hopper) ------------------------------------------------------
#: A staged row is seen as runs of this many elements: a TMA block is at most 256 elements a side.
STAGED_VIEW = 256
_tma_load = getattr(gl_tma, "async_load", None) or gl_tma.async_copy_global_to_shared
thread_barrier = getattr(gl, "thread_barrier", None) or gl.barrier  # named barrier from triton 3.8 on


def chunk_elements(runs: int, itemsize: int) -> int:
    """Elements of a staged chunk of ``runs`` runs of ``STAGED_VIEW`` 16-bit values: the same bytes
    (``runs * STAGED_VIEW * 2``, 32 KB at 64 runs) whatever the element size."""
    return runs * STAGED_VIEW * 2 // itemsize


def can_stage_rows(device: torch.device | str | None, row_bytes: int) -> bool:
    """Whether a staged kernel can run on ``device`` with ``row_bytes`` bytes of chunks a row: a
    Hopper GPU (sm_90; the kernels' TMA copies and barriers are Hopper's), not interpreter mode,
    and chunks (and their barriers) that fit in the shared memory a program may use."""
    device = torch.device(device if device is not None else "cpu")
    if device.type != "cuda" or runtime.is_interpreter():
        return False
    return (torch.cuda.get_device_capability(device) == (9, 0)
            and row_bytes + 1024 <= runtime.shared_memory_per_block(device))


#: Chunks of a staged row that a program may hold in registers when shared memory cannot take
#: them all: the row's last ones, read with plain loads (see :func:`load_held`).
MAX_HELD_CHUNKS = 1


def staged_shape(device: torch.device | str | None, n_rows: int, n_cols: int, itemsize: int) -> bool:
    """Whether a staged kernel's grid takes ``n_rows`` rows of ``n_cols`` elements of ``itemsize``
    bytes: 16- or 32-bit rows of a whole number of ``STAGED_VIEW`` runs, at least as many rows as
    SMs (the grid is one program per SM, or one group of programs)."""
    device = torch.device(device if device is not None else "cpu")
    return itemsize in (2, 4) and n_cols % STAGED_VIEW == 0 and n_rows >= runtime.sm_count(device)


def staging_split(device: torch.device | str | None, n_rows: int, n_cols: int, itemsize: int,
                  chunk: int, tensors: int = 1) -> tuple[int, int] | None:
    """How a staged kernel holds ``n_rows`` rows of ``n_cols`` elements of ``itemsize`` bytes,
    in chunks of ``chunk`` elements, of each of ``tensors`` tensors read together: ``(chunks in
    shared memory, chunks held in registers)``, counted over the tensors, or None where it cannot
    take them. It takes rows that :func:`staged_shape` accepts, whose chunks :func:`can_stage_rows`
    accepts on ``device``, all but at most ``MAX_HELD_CHUNKS`` of them."""
    if not staged_shape(device, n_rows, n_cols, itemsize):
        return None
    chunks = tensors * cdiv(n_cols, chunk)
    for held in range(min(MAX_HELD_CHUNKS, chunks - 1) + 1):
        if can_stage_rows(device, (chunks - held) * chunk * itemsize):
            return chunks - held, held
    return None


def rows_in_flight(device, most: int, row_bytes: int, fixed_bytes: int = 0) -> int:
    """How many rows of ``row_bytes`` each, up to ``most``, a staged kernel can hold in shared memory
    on ``device`` beside ``fixed_bytes`` of its own (0: not one)."""
    ring = most
    while ring and not can_stage_rows(device, ring * row_bytes + fixed_bytes):
        ring -= 1
    return ring


def stageable(rows: torch.Tensor) -> bool:
    """Whether the TMA can copy the 16- or 32-bit ``(M, N)`` matrix ``rows`` (unit column stride)
    in runs of ``STAGED_VIEW``: N a multiple of the run, rows and base on 16 bytes."""
    return (rows.element_size() in (2, 4) and rows.shape[1] % STAGED_VIEW == 0
            and rows.stride(0) * rows.element_size() % 16 == 0 and rows.data_ptr() % 16 == 0)


def staged_descriptor(rows: torch.Tensor, chunk_runs: int) -> GluonTensorDescriptor:
    """A TMA descriptor of ``rows`` (see :func:`stageable`) as ``(M, N / STAGED_VIEW, STAGED_VIEW)``
    runs, in blocks of one row's ``chunk_runs`` runs, unswizzled in shared memory (threads read a
    chunk along its runs, 16 bytes each, which touches every bank once)."""
    runtime.bind_context(rows.device)
    m, n = rows.shape
    runs = rows.as_strided((m, n // STAGED_VIEW, STAGED_VIEW), (rows.stride(0), STAGED_VIEW, 1))
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8 * rows.element_size(), rank=3)
    return GluonTensorDescriptor(runs, list(runs.shape), list(runs.stride()), [1, chunk_runs, STAGED_VIEW], layout)


@gluon.constexpr_function
def chunk_layout(warps, bits):
    # How a staged kernel's threads hold a chunk [runs, STAGED_VIEW] of `bits`-bit elements: 16
    # consecutive bytes a thread, a warp along a run, the warps down the runs.
    return gl.BlockedLayout([1, 128 // bits], [1, 32], [warps, 1], [1, 0])


@gluon.jit
def stage_chunk(x_desc, buf, ready, row, c, slot, n_rows):
    # Start the copy of chunk c of row `row` (none past the last row) into slot `slot`.
    CHUNK_R: gl.constexpr = x_desc.block_type.shape[1]
    mbarrier.expect(ready.index(slot), x_desc.block_type.nbytes, pred=row < n_rows)
    _tma_load(x_desc, [row, c * CHUNK_R, 0], ready.index(slot), buf.index(slot), pred=row < n_rows)


@gluon.jit
def allocate_ring(x_desc, SLOTS: gl.constexpr, layout: gl.constexpr):
    # The ring of a staged kernel: SLOTS slots of one chunk each and their barriers, and each
    # element's column within a chunk, in `layout`.
    CHUNK_R: gl.constexpr = x_desc.block_type.shape[1]
    W: gl.constexpr = x_desc.block_type.shape[2]
    buf = gl.allocate_shared_memory(x_desc.dtype, [SLOTS, 1, CHUNK_R, W], x_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    for c in gl.static_range(SLOTS):
        mbarrier.init(ready.index(c), count=1)
    fence_async_shared()
    offs = (gl.arange(0, CHUNK_R, layout=gl.SliceLayout(1, layout))[:, None] * W
            + gl.arange(0, W, layout=gl.SliceLayout(0, layout))[None, :])
    return buf, ready, offs


@gluon.jit
def open_ring(x_desc, x_ptr, row, n_rows, n_cols, x_row_stride, CHUNKS: gl.constexpr, HELD: gl.constexpr,
              layout: gl.constexpr, other: gl.constexpr):
    # The start of a staged kernel of one tensor: its ring (chunk c in slot c) with the copy of
    # the program's first row, `row`, started; each element's column within a chunk; the columns
    # of the chunk after the staged ones; and, with HELD, that chunk of `row` (see load_held; zeros,
    # never read, without HELD).
    buf, ready, offs = allocate_ring(x_desc, CHUNKS, layout)
    for c in gl.static_range(CHUNKS):
        stage_chunk(x_desc, buf, ready, row, c, c, n_rows)
    held_cols = CHUNKS * x_desc.block_type.shape[1] * x_desc.block_type.shape[2] + offs
    if HELD:
        held = load_held(x_ptr, row, n_rows, x_row_stride, held_cols, n_cols, other)
    else:
        held = gl.zeros(offs.shape, gl.float32, layout)
    return buf, ready, offs, held_cols, held


@gluon.jit
def open_pair_ring(a_desc, b_desc, first_row, step, c, RING: gl.constexpr, n_rows, layout: gl.constexpr):
    # The start of a staged kernel that reads two tensors a row (chunk c of each): a ring of RING
    # rows, a row's chunk of a in slot 2 k and of b in slot 2 k + 1, with the copies of the
    # program's first RING rows (first_row, first_row + step, ...) started.
    buf, ready, offs = allocate_ring(a_desc, 2 * RING, layout)
    for k in gl.static_range(RING):
        stage_chunk(a_desc, buf, ready, first_row + k * step, c, 2 * k, n_rows)
        stage_chunk(b_desc, buf, ready, first_row + k * step, c, 2 * k + 1, n_rows)
    return buf, ready, offs


@gluon.jit
def read_chunk(buf, c, layout):
    # Slot c as a [runs, STAGED_VIEW] float32 tensor in `layout`.
    return buf.index(c).reshape([buf.shape[2], buf.shape[3]]).load(layout).to(gl.float32)


@gluon.jit
def release_chunk(x_desc, buf, ready, row, c, slot, n_rows):
    # Every warp has read slot `slot` for the last time: start copying chunk c of `row` into it.
    # (After the barrier and the fence, further slots read as long ago may go to stage_chunk.)
    thread_barrier()
    fence_async_shared()  # the warps' reads come before the copy engine's write
    stage_chunk(x_desc, buf, ready, row, c, slot, n_rows)


@gluon.jit
def load_held(x_ptr, row, n_rows, x_row_stride, cols, n_cols, other: gl.constexpr):
    # A held chunk: columns `cols` of row `row` (nothing past the last row) read straight into
    # registers as float32, `other` past n_cols. Issued a row ahead, it is waited for only where
    # the next row first uses it.
    mask = (cols < n_cols) & (row < n_rows)
    x = gl.load(x_ptr + row.to(gl.int64) * x_row_stride + cols, mask=mask, other=other, eviction_policy="evict_first")
    return x.to(gl.float32)


def unpublished_shares(n_rows: int, split: int, device: torch.device) -> torch.Tensor:
    """The table through which a split kernel's programs trade their row sums: one int64 share for
    each of the ``split`` programs of each row, -1 (all bits set, never written by ``pack_sums``)
    until published."""
    return torch.full((n_rows, split), -1, dtype=torch.int64, device=device)


@gluon.jit
def split_program(SPLIT: gl.constexpr, SHARES: gl.constexpr, WARPS: gl.constexpr):
    # A program of a persistent grid whose rows are each shared by SPLIT programs: the chunk it
    # takes (part = pid % SPLIT), its first row and the step between its rows (pid // SPLIT, +
    # groups, ..., groups = programs / SPLIT), and the lanes of a row's shares. Every thread holds
    # all SHARES lanes (a power of two, at least SPLIT), so their sums need no exchange across
    # threads.
    share_layout: gl.constexpr = gl.BlockedLayout([SHARES], [32], [WARPS], [0])
    pid = gl.program_id(0)
    return pid % SPLIT, pid // SPLIT, gl.num_programs(0) // SPLIT, gl.arange(0, SHARES, layout=share_layout)


@gluon.jit
def pack_sums(s, q):
    # A program's two sums for a row as one int64, s in the low half, so that one 8-byte exchange
    # publishes both. A NaN is written as the canonical one: its bits are never those of -1, the
    # mark of a share not yet published.
    s = gl.where(s == s, s, float("nan"))
    q = gl.where(q == q, q, float("nan"))
    low = s.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF
    return low | (q.to(gl.int32, bitcast=True).to(gl.int64) << 32)


@gluon.jit
def ask_for_shares(shares_ptr, row, parts, SPLIT: gl.constexpr):
    # A split row's shares (shares_ptr[row, :SPLIT], 0 past them in `parts`) loaded ahead of use,
    # and where they are, for wait_for_shares to read again.
    share_ptrs = shares_ptr + row.to(gl.int64) * SPLIT + parts
    return gl.load(share_ptrs, mask=parts < SPLIT, other=0, volatile=True), share_ptrs


@gluon.jit
def wait_for_shares(shares, share_ptrs, parts, SPLIT: gl.constexpr):
    # A split row's shares, one a program, loaded by the caller ahead of use (0 past the SPLIT real
    # ones): until every one is published (none is -1 any more), read them again. Returns the two
    # sums of each share.
    missing = gl.max((shares == -1).to(gl.int32), axis=0)
    while missing > 0:
        shares = gl.load(share_ptrs, mask=parts < SPLIT, other=0, volatile=True)
        missing = gl.max((shares == -1).to(gl.int32), axis=0)
    s = (shares & 0xFFFFFFFF).to(gl.int32).to(gl.float32, bitcast=True)
    q = (shares >> 32).to(gl.int32).to(gl.float32, bitcast=True)
    return s, q
