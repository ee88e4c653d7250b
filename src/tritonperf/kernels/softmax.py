"""Softmax over the last dimension, forward and backward: the fused-softmax lesson's kernels.

For one row ``x`` of ``N`` values, ``y = exp(x - max(x)) / sum(exp(x - max(x)))``. Subtracting the
row's maximum changes nothing mathematically and keeps every ``exp`` at most 1, so large inputs
cannot overflow. The work per element is a handful of operations, so softmax is memory-bound: a
perfect kernel reads ``x`` once and writes ``y`` once, ``2 * M * N * itemsize`` bytes for ``M`` rows.

Four ways through a row, chosen by :func:`softmax_plan`:

* ``"fused"``: the whole row sits in registers, one pass over memory; several short rows share a program.
* ``"online"``: a row too long for registers is read twice by one program. The first pass keeps a
  running maximum and a running sum of exponentials (the sum rescaled whenever the maximum grows),
  the second writes the output; it finds part of the row still in L2.
* ``"split"``: the online method when there are fewer rows than SMs: each row is cut into chunks
  handled by separate programs, whose partial (maximum, sum) pairs are combined by the writers.
* ``"staged"`` (forward, Hopper): a row too long for registers, up to 65536 columns, is copied
  into shared memory by the TMA and read twice from there, so memory sees it once (a float32 row
  of 65536, 256 KB, keeps its last 32 KB in registers instead). A Gluon kernel: plain Triton gives
  no hold on shared memory.

The backward pass, ``dx = y * (dy - sum(y * dy))``, follows the same paths. It stages a 16-bit
row of y and one of dy together (256 KB at 65536 columns, the last 32 KB in registers); a float32
pair does not fit, so its rows are shared out in chunks among a group of programs, which trade
their shares of the row's sum through global memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

from .. import runtime, validation
from .._intmath import cdiv, floor_power_of_2, next_power_of_2
from ._rows import (
    STAGED_VIEW,
    aligned,
    allocate_ring,
    ask_for_shares,
    chunk_elements,
    chunk_layout,
    head_and_tail,
    launch,
    load_held,
    open_pair_ring,
    open_ring,
    pack_sums,
    read_chunk,
    release_chunk,
    row_align,
    rows_in_flight,
    split_program,
    stage_chunk,
    stageable,
    staged_descriptor,
    staged_shape,
    staging_split,
    unpublished_shares,
    wait_for_shares,
)

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
Direction = Literal["fwd", "bwd"]


# -- reference -----------------------------------------------------------------------------------
def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension in plain torch, in ``x``'s dtype (pass float64 for a reference).

    Written the unfused way: a max pass reads ``x``, the exponentials pass reads ``x`` and writes a
    temporary, the sum reads the temporary and the division reads it again and writes ``y``.
    """
    row_max = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - row_max)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_backward_reference(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """``dx = y * (dy - sum(y * dy))`` over the last dimension, from the softmax output ``y``."""
    return y * (dy - (y * dy).sum(dim=-1, keepdim=True))


# -- kernels: rows held in registers ---------------------------------------------------------------
# Every kernel takes ALIGN, a power of two that divides n_cols and the row strides, so that masked
# row loads can be vector loads (see _rows.py).
@triton.jit
def _normalizer(row_max, row_sum):
    # What the write pass subtracts and multiplies by: exp(x - shift) * inv. A row of only -inf has
    # max -inf and sum 0: it subtracts 0 instead (every exponential is then 0) and multiplies by NaN,
    # so it ends as NaN, as in torch, without computing -inf - (-inf) or 1 / 0 along the way.
    dead = row_max == -float("inf")
    shift = tl.where(dead, 0.0, row_max)
    inv = tl.where(dead, float("nan"), 1.0 / tl.where(dead, 1.0, row_sum))
    return shift, inv


@triton.jit
def _tail(n_cols, BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr):
    # The columns of a row's second block, BLOCK_N ... BLOCK_N + TAIL_N - 1, and which exist. Without
    # a tail (TAIL_N == 0) a one-column stand-in that the row functions never read.
    tail_cols = BLOCK_N + tl.arange(0, TAIL_N if TAIL_N > 0 else 1)
    return tail_cols, tail_cols < n_cols


@triton.jit
def _softmax_fwd_row(row, x_ptr, y_ptr, x_row_stride, y_row_stride, cols, col_mask, tail_cols, tail_mask,
                     RELOAD: tl.constexpr, TAIL: tl.constexpr):
    # One row held 1-D in registers, read once and written once. RELOAD reads it again, from cache,
    # after each reduction instead of holding it across them (see RELOAD_BLOCKS). TAIL holds the
    # columns past the first block in a second, shorter block (see _rows.head_and_tail).
    # Columns past the end read -inf, whose exponential is 0: they add nothing to the sum.
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    x_ptrs = x_row + cols
    if RELOAD:
        x = tl.load(x_ptrs, mask=col_mask, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
    else:
        x = tl.load(x_ptrs, mask=col_mask, other=-float("inf")).to(tl.float32)
    if TAIL:
        x_tail = tl.load(x_row + tail_cols, mask=tail_mask, other=-float("inf")).to(tl.float32)
        row_max = tl.maximum(tl.max(x, axis=0), tl.max(x_tail, axis=0))
    else:
        row_max = tl.max(x, axis=0)
    shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    if RELOAD:
        x = tl.load(x_ptrs, mask=col_mask, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
    e = tl.exp(x - shift)
    row_sum = tl.sum(e, axis=0)
    if TAIL:
        e_tail = tl.exp(x_tail - shift)
        row_sum += tl.sum(e_tail, axis=0)
    _, inv = _normalizer(row_max, row_sum)
    if RELOAD:
        x = tl.load(x_ptrs, mask=col_mask, other=-float("inf"), eviction_policy="evict_first").to(tl.float32)
        e = tl.exp(x - shift)
    tl.store(y_row + cols, (e * inv).to(y_ptr.dtype.element_ty), mask=col_mask)
    if TAIL:
        tl.store(y_row + tail_cols, (e_tail * inv).to(y_ptr.dtype.element_ty), mask=tail_mask)


@triton.jit
def _softmax_fwd_block(block, x_ptr, y_ptr, n_rows, x_row_stride, y_row_stride, cols, col_mask, ROWS: tl.constexpr):
    # A block of ROWS short rows, one per line of a 2-D tile.
    rows = block * ROWS + tl.arange(0, ROWS)
    # Rows past the end (last block only) re-read the final row, which always exists, and store nothing.
    src_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    x_ptrs = x_ptr + src_rows[:, None] * x_row_stride + cols[None, :]
    x = tl.load(x_ptrs, mask=col_mask[None, :], other=-float("inf"), eviction_policy="evict_first").to(tl.float32)
    row_max = tl.max(x, axis=1)
    shift = tl.where(row_max == -float("inf"), 0.0, row_max)
    e = tl.exp(x - shift[:, None])
    _, inv = _normalizer(row_max, tl.sum(e, axis=1))
    y = (e * inv[:, None]).to(y_ptr.dtype.element_ty)
    y_ptrs = y_ptr + rows.to(tl.int64)[:, None] * y_row_stride + cols[None, :]
    tl.store(y_ptrs, y, mask=(rows < n_rows)[:, None] & col_mask[None, :])


@triton.jit
def softmax_fwd_kernel(
    x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
    BLOCK_N: tl.constexpr, ROWS: tl.constexpr, NUM_STAGES: tl.constexpr, ONE_BLOCK: tl.constexpr,
    RELOAD: tl.constexpr = False,
    TAIL_N: tl.constexpr = 0,
    ALIGN: tl.constexpr = 1,
):
    # A program takes blocks of ROWS rows; each row is held whole, BLOCK_N >= n_cols columns wide,
    # or, one row a program in the forward, BLOCK_N + TAIL_N >= n_cols (see _rows.head_and_tail).
    # With fewer programs than blocks (a persistent grid) it strides over them; with one program per
    # block (ONE_BLOCK, the default grid) there is no loop at all. Long rows (ROWS == 1) are held 1-D
    # and read without an eviction hint. In an interleaved comparison on an H200 (triton 3.6, torch
    # 2.11, 2026-11-22, commit 8b92fe4, 4096 rows) that beat the 2-D [1, BLOCK_N] form with
    # evict_first by 6-10% in float16 from 5120 to 32768 columns, and lost 3% at 4096, where input
    # and output together are about L2's size.
    n_cols = aligned(n_cols, ALIGN)
    x_row_stride = aligned(x_row_stride, ALIGN)
    y_row_stride = aligned(y_row_stride, ALIGN)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    tail_cols, tail_mask = _tail(n_cols, BLOCK_N, TAIL_N)
    if ROWS == 1:
        if ONE_BLOCK:
            _softmax_fwd_row(tl.program_id(0).to(tl.int64), x_ptr, y_ptr, x_row_stride, y_row_stride, cols, col_mask,
                             tail_cols, tail_mask, RELOAD, TAIL_N > 0)
        else:
            for row in tl.range(tl.program_id(0).to(tl.int64), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
                _softmax_fwd_row(row, x_ptr, y_ptr, x_row_stride, y_row_stride, cols, col_mask, tail_cols, tail_mask,
                                 RELOAD, TAIL_N > 0)
    elif ONE_BLOCK:
        _softmax_fwd_block(tl.program_id(0), x_ptr, y_ptr, n_rows, x_row_stride, y_row_stride, cols, col_mask, ROWS)
    else:
        for block in tl.range(tl.program_id(0), tl.cdiv(n_rows, ROWS), tl.num_programs(0), num_stages=NUM_STAGES):
            _softmax_fwd_block(block, x_ptr, y_ptr, n_rows, x_row_stride, y_row_stride, cols, col_mask, ROWS)


@triton.jit
def _softmax_bwd_row(row, y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, cols, col_mask,
                     RELOAD: tl.constexpr):
    # One row of y and dy held 1-D, dx written once; RELOAD reads both again for dx, as in the forward.
    y_ptrs = y_ptr + row * y_row_stride + cols
    dy_ptrs = dy_ptr + row * dy_row_stride + cols
    if RELOAD:
        y = tl.load(y_ptrs, mask=col_mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        dy = tl.load(dy_ptrs, mask=col_mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    else:
        y = tl.load(y_ptrs, mask=col_mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptrs, mask=col_mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=0)
    if RELOAD:
        y = tl.load(y_ptrs, mask=col_mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        dy = tl.load(dy_ptrs, mask=col_mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    dx = y * (dy - dot)
    tl.store(dx_ptr + row * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=col_mask)


@triton.jit
def _softmax_bwd_block(block, y_ptr, dy_ptr, dx_ptr, n_rows, y_row_stride, dy_row_stride, dx_row_stride, cols, col_mask,
                       ROWS: tl.constexpr):
    # A block of ROWS short rows of y and dy, as in _softmax_fwd_block.
    rows = block * ROWS + tl.arange(0, ROWS)
    src_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    y = tl.load(y_ptr + src_rows[:, None] * y_row_stride + cols[None, :], mask=col_mask[None, :], other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    dy = tl.load(dy_ptr + src_rows[:, None] * dy_row_stride + cols[None, :], mask=col_mask[None, :], other=0.0,
                 eviction_policy="evict_first").to(tl.float32)
    dot = tl.sum(y * dy, axis=1)
    dx = (y * (dy - dot[:, None])).to(dx_ptr.dtype.element_ty)
    dx_ptrs = dx_ptr + rows.to(tl.int64)[:, None] * dx_row_stride + cols[None, :]
    tl.store(dx_ptrs, dx, mask=(rows < n_rows)[:, None] & col_mask[None, :])


@triton.jit
def softmax_bwd_kernel(
    y_ptr, dy_ptr, dx_ptr, n_rows, n_cols, y_row_stride, dy_row_stride, dx_row_stride,
    BLOCK_N: tl.constexpr, ROWS: tl.constexpr, NUM_STAGES: tl.constexpr, ONE_BLOCK: tl.constexpr,
    RELOAD: tl.constexpr = False,
    ALIGN: tl.constexpr = 1,
):
    # Same layout as the forward kernel: blocks of ROWS whole rows, y and dy read once, dx written once.
    n_cols = aligned(n_cols, ALIGN)
    y_row_stride = aligned(y_row_stride, ALIGN)
    dy_row_stride = aligned(dy_row_stride, ALIGN)
    dx_row_stride = aligned(dx_row_stride, ALIGN)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    if ROWS == 1:
        if ONE_BLOCK:
            _softmax_bwd_row(tl.program_id(0).to(tl.int64), y_ptr, dy_ptr, dx_ptr,
                             y_row_stride, dy_row_stride, dx_row_stride, cols, col_mask, RELOAD)
        else:
            for row in tl.range(tl.program_id(0).to(tl.int64), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
                _softmax_bwd_row(row, y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, cols, col_mask,
                                 RELOAD)
    elif ONE_BLOCK:
        _softmax_bwd_block(tl.program_id(0), y_ptr, dy_ptr, dx_ptr, n_rows, y_row_stride, dy_row_stride, dx_row_stride,
                           cols, col_mask, ROWS)
    else:
        for block in tl.range(tl.program_id(0), tl.cdiv(n_rows, ROWS), tl.num_programs(0), num_stages=NUM_STAGES):
            _softmax_bwd_block(block, y_ptr, dy_ptr, dx_ptr, n_rows, y_row_stride, dy_row_stride, dx_row_stride,
                               cols, col_mask, ROWS)


# -- kernels: rows streamed in tiles (online softmax) --------------------------------------------------
@triton.jit
def _combine(m, s):
    # Fold the split path's per-chunk pairs (m, s) -- a chunk's maximum and its sum of exp(x - m) --
    # into the row's pair. Each sum is rescaled to the common maximum by exp(m - max). A chunk that
    # saw only -inf has max -inf and sum 0 (not the NaN of -inf - -inf), so merging it is harmless.
    row_max = tl.max(m, axis=0)
    ref = tl.where(row_max == -float("inf"), 0.0, row_max)
    return row_max, tl.sum(s * tl.exp(m - ref), axis=0)


@triton.jit
def _online_stats(x_row, start, end, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    # Pass 1 over columns [start, end) of one row, a tile at a time: the running maximum m of the
    # tiles so far (one number) and, lane-wise, sums s of exp(x - m), rescaled by exp(m_old - m_new)
    # when a tile raises m. Taking each tile's maximum first costs a reduction across the program
    # per tile but leaves one exponential per element; a maximum per lane, needing no such
    # reduction, took two (the new value's and the rescaling's), and on an H200 (triton 3.6, torch
    # 2.11, 2026-11-23, 4096 rows of 65536 columns) ran 3% slower in float32 and 11% in float16.
    m = tl.full([], -float("inf"), tl.float32)
    s = tl.zeros([TILE_N], tl.float32)
    for t in tl.range(start, end, TILE_N, num_stages=NUM_STAGES):
        cols = t + tl.arange(0, TILE_N)
        x = tl.load(x_row + cols, mask=cols < end, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # while only -inf has been seen, s stays 0
        s = s * tl.exp(m - ref) + tl.exp(x - ref)
        m = m_new
    return m, tl.sum(s, axis=0)


@triton.jit
def _write_probs(x_row, y_row, start, end, row_max, row_sum, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    # Pass 2 over columns [start, end): y = exp(x - max) / sum. It walks the tiles last to first:
    # the tiles pass 1 read last are the likeliest to be still in L2.
    shift, inv = _normalizer(row_max, row_sum)
    n_tiles = tl.cdiv(end - start, TILE_N)
    for i in tl.range(0, n_tiles, num_stages=NUM_STAGES):
        cols = start + (n_tiles - 1 - i) * TILE_N + tl.arange(0, TILE_N)
        mask = cols < end
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"), eviction_policy="evict_first").to(tl.float32)
        tl.store(y_row + cols, (tl.exp(x - shift) * inv).to(y_row.dtype.element_ty), mask=mask)


@triton.jit
def softmax_fwd_online_kernel(
    x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    # One row at a time per program (a persistent grid when there are fewer programs than rows);
    # both passes over a row run back to back so that the second one finds it in L2.
    n_cols = aligned(n_cols, ALIGN)
    x_row_stride = aligned(x_row_stride, ALIGN)
    y_row_stride = aligned(y_row_stride, ALIGN)
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = tl.cast(r, tl.int64)  # int64: row * stride passes 2**31 in tensors of more than 2G elements
        x_row = x_ptr + row * x_row_stride
        y_row = y_ptr + row * y_row_stride
        row_max, row_sum = _online_stats(x_row, 0, n_cols, TILE_N, NUM_STAGES)
        _write_probs(x_row, y_row, 0, n_cols, row_max, row_sum, TILE_N, NUM_STAGES)


@triton.jit
def softmax_fwd_partial_kernel(
    x_ptr, max_ptr, sum_ptr, n_cols, x_row_stride, chunk_n, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    # Split path, step 1: program (row, chunk) writes the (max, sum) pair of its chunk of the row.
    n_cols = aligned(n_cols, ALIGN)
    x_row_stride = aligned(x_row_stride, ALIGN)
    row, chunk = tl.program_id(0), tl.program_id(1)
    start = chunk * chunk_n
    end = tl.minimum(start + chunk_n, n_cols)
    chunk_max, chunk_sum = _online_stats(x_ptr + row.to(tl.int64) * x_row_stride, start, end, TILE_N, NUM_STAGES)
    slot = row.to(tl.int64) * tl.num_programs(1) + chunk
    tl.store(max_ptr + slot, chunk_max)
    tl.store(sum_ptr + slot, chunk_sum)


@triton.jit
def softmax_fwd_split_kernel(
    x_ptr, y_ptr, max_ptr, sum_ptr, n_cols, x_row_stride, y_row_stride, chunk_n,
    CHUNKS: tl.constexpr, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    # Split path, step 2: combine the row's partial pairs (CHUNKS >= their number), then write one chunk.
    n_cols = aligned(n_cols, ALIGN)
    x_row_stride = aligned(x_row_stride, ALIGN)
    y_row_stride = aligned(y_row_stride, ALIGN)
    row, chunk = tl.program_id(0), tl.program_id(1)
    n_chunks = tl.num_programs(1)
    k = tl.arange(0, CHUNKS)
    slots = row.to(tl.int64) * n_chunks + k
    m = tl.load(max_ptr + slots, mask=k < n_chunks, other=-float("inf"))
    s = tl.load(sum_ptr + slots, mask=k < n_chunks, other=0.0)
    row_max, row_sum = _combine(m, s)
    start = chunk * chunk_n
    end = tl.minimum(start + chunk_n, n_cols)
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    y_row = y_ptr + row.to(tl.int64) * y_row_stride
    _write_probs(x_row, y_row, start, end, row_max, row_sum, TILE_N, NUM_STAGES)


@triton.jit
def _row_dot(y_row, dy_row, start, end, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    # Backward pass 1 over columns [start, end): sum(y * dy), accumulated lane-wise in float32.
    acc = tl.zeros([TILE_N], tl.float32)
    for t in tl.range(start, end, TILE_N, num_stages=NUM_STAGES):
        cols = t + tl.arange(0, TILE_N)
        mask = cols < end
        y = tl.load(y_row + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        dy = tl.load(dy_row + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        acc += y * dy
    return tl.sum(acc, axis=0)


@triton.jit
def _write_grads(y_row, dy_row, dx_row, start, end, dot, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    # Backward pass 2 over columns [start, end), last tile first (see _write_probs): dx = y * (dy - dot).
    n_tiles = tl.cdiv(end - start, TILE_N)
    for i in tl.range(0, n_tiles, num_stages=NUM_STAGES):
        cols = start + (n_tiles - 1 - i) * TILE_N + tl.arange(0, TILE_N)
        mask = cols < end
        y = tl.load(y_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        dy = tl.load(dy_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        tl.store(dx_row + cols, (y * (dy - dot)).to(dx_row.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_online_kernel(
    y_ptr, dy_ptr, dx_ptr, n_rows, n_cols, y_row_stride, dy_row_stride, dx_row_stride,
    TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    n_cols = aligned(n_cols, ALIGN)
    y_row_stride = aligned(y_row_stride, ALIGN)
    dy_row_stride = aligned(dy_row_stride, ALIGN)
    dx_row_stride = aligned(dx_row_stride, ALIGN)
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = tl.cast(r, tl.int64)
        y_row = y_ptr + row * y_row_stride
        dy_row = dy_ptr + row * dy_row_stride
        dx_row = dx_ptr + row * dx_row_stride
        dot = _row_dot(y_row, dy_row, 0, n_cols, TILE_N, NUM_STAGES)
        _write_grads(y_row, dy_row, dx_row, 0, n_cols, dot, TILE_N, NUM_STAGES)


@triton.jit
def softmax_bwd_partial_kernel(
    y_ptr, dy_ptr, dot_ptr, n_cols, y_row_stride, dy_row_stride, chunk_n, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    n_cols = aligned(n_cols, ALIGN)
    y_row_stride = aligned(y_row_stride, ALIGN)
    dy_row_stride = aligned(dy_row_stride, ALIGN)
    row, chunk = tl.program_id(0), tl.program_id(1)
    start = chunk * chunk_n
    end = tl.minimum(start + chunk_n, n_cols)
    dot = _row_dot(y_ptr + row.to(tl.int64) * y_row_stride, dy_ptr + row.to(tl.int64) * dy_row_stride,
                   start, end, TILE_N, NUM_STAGES)
    tl.store(dot_ptr + row.to(tl.int64) * tl.num_programs(1) + chunk, dot)


@triton.jit
def softmax_bwd_split_kernel(
    y_ptr, dy_ptr, dx_ptr, dot_ptr, n_cols, y_row_stride, dy_row_stride, dx_row_stride, chunk_n,
    CHUNKS: tl.constexpr, TILE_N: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    n_cols = aligned(n_cols, ALIGN)
    y_row_stride = aligned(y_row_stride, ALIGN)
    dy_row_stride = aligned(dy_row_stride, ALIGN)
    dx_row_stride = aligned(dx_row_stride, ALIGN)
    row, chunk = tl.program_id(0), tl.program_id(1)
    n_chunks = tl.num_programs(1)
    k = tl.arange(0, CHUNKS)
    dot = tl.sum(tl.load(dot_ptr + row.to(tl.int64) * n_chunks + k, mask=k < n_chunks, other=0.0), axis=0)
    start = chunk * chunk_n
    end = tl.minimum(start + chunk_n, n_cols)
    _write_grads(y_ptr + row.to(tl.int64) * y_row_stride, dy_ptr + row.to(tl.int64) * dy_row_stride,
                 dx_ptr + row.to(tl.int64) * dx_row_stride, start, end, dot, TILE_N, NUM_STAGES)


# -- kernel: rows staged in shared memory (Gluon) ----------------------------------------------------
_LOG2E = gl.constexpr(1.4426950408889634)


@gluon.jit
def _staged_stats(m, s, x):
    # One chunk of pass 1, as _online_stats: a running maximum m (one number), lane-wise sums s of exp(x - m).
    m_new = gl.maximum(m, gl.max(gl.max(x, axis=1), axis=0))
    ref = gl.where(m_new == float("-inf"), 0.0, m_new)  # while only -inf has been seen, s stays 0
    s = s * gl.exp2((m - ref) * _LOG2E) + gl.exp2((x - ref) * _LOG2E)
    return m_new, s


@gluon.jit
def softmax_fwd_staged_kernel(x_desc, x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, CHUNKS: gl.constexpr,
                              HELD: gl.constexpr, WARPS: gl.constexpr):
    # A persistent grid, one program per SM, rows pid, pid + programs, ... Each row is staged in
    # CHUNKS slots (see _rows.py), and with HELD its last chunk is held in registers: pass 1 reads
    # them for the maximum and the sum, pass 2 reads them again, writes y, loads the next row's held
    # chunk and hands each slot over to the next row's copy.
    CHUNK_R: gl.constexpr = x_desc.block_type.shape[1]
    W: gl.constexpr = x_desc.block_type.shape[2]
    layout: gl.constexpr = chunk_layout(WARPS, x_desc.dtype.primitive_bitwidth)
    pid = gl.program_id(0)
    step = gl.num_programs(0)
    # offs: columns within a chunk; past n_cols the copy filled zeros, read as -inf.
    buf, ready, offs, held_cols, held = open_ring(x_desc, x_ptr, pid, n_rows, n_cols, x_row_stride, CHUNKS, HELD,
                                                  layout, float("-inf"))
    phase = 0
    for row in range(pid, n_rows, step):
        m = gl.max(gl.full([CHUNK_R], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout)), axis=0)
        s = gl.zeros([CHUNK_R, W], gl.float32, layout)
        for c in gl.static_range(CHUNKS):
            mbarrier.wait(ready.index(c), phase)
            cols = c * CHUNK_R * W + offs
            m, s = _staged_stats(m, s, gl.where(cols < n_cols, read_chunk(buf, c, layout), float("-inf")))
        if HELD:
            m, s = _staged_stats(m, s, held)
        # As _normalizer: a row of only -inf ends as NaN, as in torch. x - shift is taken before
        # the scaling by log2(e): x * log2(e) - shift * log2(e) in one fused multiply-add loses the
        # low bits of large inputs (3e4 in float32: a relative error of 5e-4 in y).
        dead = m == float("-inf")
        shift = gl.where(dead, 0.0, m)
        inv = gl.where(dead, float("nan"), 1.0 / gl.where(dead, 1.0, gl.sum(gl.sum(s, axis=1), axis=0)))
        y_row = y_ptr + row.to(gl.int64) * y_row_stride
        if HELD:
            y = gl.exp2((held - shift) * _LOG2E) * inv
            gl.store(y_row + held_cols, y.to(y_ptr.dtype.element_ty), mask=held_cols < n_cols)
            held = load_held(x_ptr, row + step, n_rows, x_row_stride, held_cols, n_cols, float("-inf"))
        for c in gl.static_range(CHUNKS):
            cols = c * CHUNK_R * W + offs
            y = gl.exp2((read_chunk(buf, c, layout) - shift) * _LOG2E) * inv
            gl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cols < n_cols)
            release_chunk(x_desc, buf, ready, row + step, c, c, n_rows)
        phase ^= 1


@gluon.jit
def softmax_bwd_staged_kernel(y_desc, dy_desc, dy_ptr, dx_ptr, n_rows, n_cols, dy_row_stride, dx_row_stride,
                              CHUNKS: gl.constexpr, HELD: gl.constexpr, WARPS: gl.constexpr):
    # The backward's staged path: a persistent grid, one program per SM. A row of y and a row of dy
    # are CHUNKS chunks each: y's in slots 0 .. CHUNKS - 1, dy's after them, except with HELD the
    # last chunk of dy, held in registers. Pass 1 sums y * dy over the row; pass 2 writes
    # dx = y * (dy - sum), the held chunk first (so the next row's is loaded early), then hands
    # each slot over to the next row's copy.
    CHUNK_R: gl.constexpr = y_desc.block_type.shape[1]
    W: gl.constexpr = y_desc.block_type.shape[2]
    CHUNK: gl.constexpr = CHUNK_R * W
    DY_STAGED: gl.constexpr = CHUNKS - HELD
    layout: gl.constexpr = chunk_layout(WARPS, y_desc.dtype.primitive_bitwidth)
    pid = gl.program_id(0)
    step = gl.num_programs(0)
    buf, ready, offs = allocate_ring(y_desc, CHUNKS + DY_STAGED, layout)
    for c in gl.static_range(CHUNKS):
        stage_chunk(y_desc, buf, ready, pid, c, c, n_rows)
    for c in gl.static_range(DY_STAGED):
        stage_chunk(dy_desc, buf, ready, pid, c, CHUNKS + c, n_rows)
    held_cols = DY_STAGED * CHUNK + offs
    if HELD:
        held = load_held(dy_ptr, pid, n_rows, dy_row_stride, held_cols, n_cols, 0.0)
    phase = 0
    for row in range(pid, n_rows, step):
        # The copy filled the runs past n_cols with zeros in both tensors: they add nothing.
        acc = gl.zeros([CHUNK_R, W], gl.float32, layout)
        for c in gl.static_range(CHUNKS):
            mbarrier.wait(ready.index(c), phase)
            if c < DY_STAGED:
                mbarrier.wait(ready.index(CHUNKS + c), phase)
                acc += read_chunk(buf, c, layout) * read_chunk(buf, CHUNKS + c, layout)
            else:
                acc += read_chunk(buf, c, layout) * held
        dot = gl.sum(gl.sum(acc, axis=1), axis=0)
        dx_row = dx_ptr + row.to(gl.int64) * dx_row_stride
        if HELD:
            dx = read_chunk(buf, DY_STAGED, layout) * (held - dot)
            gl.store(dx_row + held_cols, dx.to(dx_ptr.dtype.element_ty), mask=held_cols < n_cols)
            held = load_held(dy_ptr, row + step, n_rows, dy_row_stride, held_cols, n_cols, 0.0)
            release_chunk(y_desc, buf, ready, row + step, DY_STAGED, DY_STAGED, n_rows)
        for c in gl.static_range(DY_STAGED):
            cols = c * CHUNK + offs
            dx = read_chunk(buf, c, layout) * (read_chunk(buf, CHUNKS + c, layout) - dot)
            gl.store(dx_row + cols, dx.to(dx_ptr.dtype.element_ty), mask=cols < n_cols)
            release_chunk(y_desc, buf, ready, row + step, c, c, n_rows)
            stage_chunk(dy_desc, buf, ready, row + step, c, CHUNKS + c, n_rows)  # read as long ago
        phase ^= 1


@gluon.jit
def softmax_bwd_staged_split_kernel(y_desc, dy_desc, dx_ptr, shares_ptr, n_rows, n_cols, dx_row_stride,
                                    RING: gl.constexpr, SPLIT: gl.constexpr, SHARES: gl.constexpr,
                                    WARPS: gl.constexpr):
    # The staged backward of rows whose y and dy do not fit in one program's shared memory
    # (float32): each row is SPLIT chunks, each taken by one of SPLIT programs of a persistent grid
    # (program pid takes chunk pid % SPLIT of rows pid // SPLIT, + groups, ..., groups = programs /
    # SPLIT). A program's i-th row sits in slots 2 (i % RING) (y) and 2 (i % RING) + 1 (dy), copied
    # there RING rows ahead. Pass 1 sums y * dy over the chunk and publishes the sum in one relaxed
    # 8-byte exchange (shares_ptr[row, part], -1 until then); step i then writes dx for row i - 1,
    # whose shares it asked for at the top of the step, so that the wait overlaps pass 1 of row i.
    # The launch is cooperative, so every program of a group runs at once and the wait ends.
    CHUNK: gl.constexpr = y_desc.block_type.shape[1] * y_desc.block_type.shape[2]
    layout: gl.constexpr = chunk_layout(WARPS, y_desc.dtype.primitive_bitwidth)
    part, first_row, step, parts = split_program(SPLIT, SHARES, WARPS)
    buf, ready, offs = open_pair_ring(y_desc, dy_desc, first_row, step, part, RING, n_rows, layout)
    cols = part * CHUNK + offs
    col_mask = cols < n_cols
    n_mine = gl.maximum(gl.cdiv(n_rows - first_row, step), 0)
    for i in range(n_mine + 1):
        row = first_row + i * step
        prev_shares, prev_ptrs = ask_for_shares(shares_ptr, gl.maximum(row - step, 0), parts, SPLIT)
        if i < n_mine:  # pass 1 of row i; the copy filled the runs past n_cols with zeros
            slot = 2 * (i % RING)
            phase = (i // RING) & 1
            mbarrier.wait(ready.index(slot), phase)
            mbarrier.wait(ready.index(slot + 1), phase)
            y_dy = read_chunk(buf, slot, layout) * read_chunk(buf, slot + 1, layout)
            dot = gl.sum(gl.sum(y_dy, axis=1), axis=0)
            gl.atomic_xchg(shares_ptr + row.to(gl.int64) * SPLIT + part, pack_sums(dot, 0.0), sem="relaxed",
                           scope="gpu")
        if i > 0:  # pass 2 of row i - 1, then its slots handed to the copies of row i - 1 + RING
            prev_slot = 2 * ((i - 1) % RING)
            prev_row = row - step
            dots, _ = wait_for_shares(prev_shares, prev_ptrs, parts, SPLIT)
            dot = gl.sum(dots, axis=0)
            dx = read_chunk(buf, prev_slot, layout) * (read_chunk(buf, prev_slot + 1, layout) - dot)
            gl.store(dx_ptr + prev_row.to(gl.int64) * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty),
                     mask=col_mask)
            release_chunk(y_desc, buf, ready, prev_row + RING * step, part, prev_slot, n_rows)
            stage_chunk(dy_desc, buf, ready, prev_row + RING * step, part, prev_slot + 1, n_rows)


# -- launcher ------------------------------------------------------------------------------------
# Defaults of the knobs every launcher takes as keyword arguments (see softmax_plan).
# Measured on an H200 (triton 3.6): at 32768 columns one row in 32 warps reads memory once and ran at
# 0.68–0.87 × the copy ceiling, against 0.51–0.70 × for the online path.
MAX_FUSED_N = 32768  # longest row held in registers; longer rows take the online path
# The forward of 16-bit rows of 65536 was held in registers too, in 32 warps that spilled a little.
# Once the online path took one exponential per element and two programs per SM, it won
# (interleaved H200 comparison, triton 3.6, torch 2.11, 2026-11-23, 4096 rows of 65536, GB/s):
# float16 2865 against 2256, bfloat16 2816 against 2664 (torch 2229 and 2193).
# 16-bit rows of this block width, in the forward, are pipelined: a persistent grid of one program
# per SM whose loop over rows loads the next PREFETCH_STAGES - 1 rows into shared memory (64 KB
# each) while it works on one. A program of 32 warps fills an SM's registers, so with one program
# per row no other program's loads overlap its reductions and its stores. Interleaved H200
# comparison (same day, 4096 rows of 32768): float16 3801 GB/s against 3140, bfloat16 3656 against
# 3234 (torch 2313 and 2215). With 2 stages 2694-2896 in float16; at 16384 columns the same
# persistent grid with 1 or 2 programs per SM lost 5-8% to one program per row.
PREFETCH_BLOCKS = {("fwd", 2): (32768,)}  # BLOCK_N values, by (direction, bytes per element)
PREFETCH_STAGES = 3
FUSED_ELEMENTS = 1024  # short rows are packed into one program until it holds this many elements
# Fused path: a warp for every 32 x ELEMENTS_PER_THREAD elements a program holds (the tensors it
# reads together), counted on the real columns, not the block's padding, and rounded down to a power
# of two; and at least a warp per packed row, as long as each thread keeps MIN_ELEMENTS_PER_THREAD
# of the row (one 16-byte load of 16-bit values). Below 256 columns that bound decides, not the row
# count; those lengths were not measured. In an interleaved H200 comparison against the previous
# rule (block columns, rounded up; triton 3.6, torch 2.11, 2026-11-22, 4096 rows, forward GB/s):
# float16 5120 columns 3310 against 3034 (8 warps, not 16), 6000 3579 against 3373, 3000 2538
# against 2461; 256 columns (4 rows, 4 warps, not 2) 1543 against 1339 in float16 and 2196 against
# 1890 in float32. float32 lost 2% at 3000 columns and 1% at 6000; other lengths within 1%, the
# backward's short rows 1-3% faster.
ELEMENTS_PER_THREAD = 16
MIN_ELEMENTS_PER_THREAD = 8
# The fused backward's long rows (BWD_WIDE_ROW columns and more) instead take one warp per
# BWD_COLUMNS_PER_WARP columns, rounded down to a power of two, at most BWD_MAX_WARPS. From an
# interleaved H200 comparison (triton 3.6, 2026-11-22, commit 8b92fe4, 4096 and 16384 rows): the
# rule above gave 32 warps from 8192 columns on, and at 5120 16-bit columns 0.79 of the copy
# ceiling against 0.93-0.94 with 8 warps; at 32768 16-bit columns 0.90 against 1.00 with 16.
BWD_WIDE_ROW = 4096
BWD_COLUMNS_PER_WARP = 512
# The cap is per element size: float32 rows of 32768 ran at 4207 GB/s in 8 warps against 3813 in 16
# (torch.compile 4252), float16 ones at 4212 in 16 against 3607 in 8 (one interleaved H200 run,
# triton 3.6, 2026-11-22, 4096 rows). A second run: float32 8192 and 16384 within 0.2% of 16 warps,
# 32768 4183 against 3563 (torch.compile 4246).
BWD_MAX_WARPS = {2: 16, 4: 8}  # by bytes per element
# At 4096 16-bit columns (8 warps, 61 registers a thread: four programs an SM) nothing tried
# moved the backward by more than 1% (interleaved, triton 3.6, torch 2.11, 2026-11-24, 4096 rows,
# fractions of the copy ceiling, float16 / bfloat16): on an H200 8 warps 0.940 / 0.945, 16 warps
# 0.949 / 0.948, 4 warps 0.939 / 0.935, capped at 48 or 40 registers 0.939-0.944; torch.compile's
# kernel 0.962 / 0.956. On an NVIDIA H100 80GB HBM3: 0.940 / 0.945, 16 warps 0.941 / 0.947,
# torch.compile 0.949 / 0.955.
# Fused rows of one to a program and of these block widths are read again from cache after each row
# reduction (RELOAD; the first read asks L2 to keep them) instead of held in registers across it: the
# forward reads x three times, the backward y and dy twice. Keyed by (direction, bytes per element).
# Interleaved H200 runs (triton 3.6, torch 2.11, 2026-11-22, 4096 rows, GB/s with RELOAD against
# without, torch.compile in parentheses):
# - forward, float32: 4096 columns 3962 against 3817 (3076), 8192 4084 against 3957, 16384 4172
#   against 4069, 32768 4128 against 4102; 3000 and 5120 within 0.6%. 16-bit rows lost 4-13%.
# - backward, 16-bit, block 16384: float16 16384 columns 4219 against 4093 (4248), bfloat16 4214
#   against 4061 (4194), float16 12000 columns 4211 against 3705 (3745). At block 4096 it gained 1%
#   at 4096 columns and lost 2% at 3000; at 8192 and 32768 columns it lost 2-7%; in float32 it
#   ranged from -3% to +1%.
RELOAD_BLOCKS = {("fwd", 4): (4096, 8192, 16384, 32768), ("bwd", 2): (16384,)}  # BLOCK_N values
# With RELOAD a thread holds the row only between two loads, so the backward takes more warps: one
# per this many columns, rounded down to a power of two, at most 32.
BWD_RELOAD_COLUMNS_PER_WARP = 256
# Rows per program where FUSED_ELEMENTS is not the best rule: at 513-1024 columns two rows a program
# beat one in the same run (GB/s, forward float32 3725 against 3690, float16 3062 against 2944;
# backward float32 3870 against 3771, float16 3280 against 3219). Twice FUSED_ELEMENTS at 256 and
# 512 columns lost up to 13% (forward float32 512: 2664 against 3060).
FUSED_ROWS = {1024: 2}  # BLOCK_N: rows per program
# Tried and not kept for the forward's rows of 4096-16384 16-bit columns, one interleaved H200 run
# (triton 3.6, torch 2.11, 2026-11-29, 4096 rows, speed against the default, float16 / bfloat16):
# two rows a program in twice the warps, 0.99 / 0.96 at 4096 columns, 0.87 at 8192, 0.77 at
# 16384; the row's maximum and sum in one exchange across warps (each thread's 8-element runs
# reduced to a (max, sum of exponentials) pair, the pairs merged in one tl.reduce: two barriers
# where the default has five, 32 registers a thread, but 58% more instructions), 0.97 / 0.91 at
# 4096, 0.93 / 0.91 at 8192, 0.96 / 0.94 at 16384, and 1.01 / 0.94 at 16384 rows of 4096.
# Nor, at 4096 rows of 4096 and 5120, 4 or 16 warps instead of 8, or a persistent grid of 4, 5, 6
# or 8 programs an SM: each lost 0.4-22% to the default (H200, triton 3.6, torch 2.11, 2026-12-07,
# two interleaved rounds, both 16-bit dtypes). The default ran at 0.819-0.844 of the copy ceiling
# at 4096 columns and 0.831-0.838 at 5120; a torch copy_ of the same bytes at 0.845-0.861 and
# 0.885-0.902, short of the 0.93 target itself.
MAX_ROWS_PER_PROGRAM = 64
# A cap on the registers a thread of the fused forward may take (Triton's maxnreg), by (direction,
# bytes per element, warps), for programs of one row. The compiler gave the bfloat16 forward of
# rows of 4097-8191 columns 50 registers a thread (float16: 48); registers are handed out by 8, so
# an SM then holds four programs of 8 warps instead of five (ncu, H200, 4096 x 5120: achieved
# occupancy 45.5% against 56.7%). Capped at 48, interleaved on an H200 (triton 3.6, torch 2.11,
# 2026-11-24, fractions of the copy ceiling, uncapped in parentheses): bfloat16 4096 x 4352 0.685
# (0.627), 5120 0.749 (0.677), 6144 0.837 (0.782), 7168 0.887 (0.844), 16384 x 5120 0.859 (0.777);
# float16 and rows of 4096 within 0.5%. On an NVIDIA H100 80GB HBM3 (same day): bfloat16 4096 x
# 5120 0.883 (0.843), 7168 0.910 (0.914); float16 unchanged. The cap helps only where it costs the
# compiler nothing: tighter caps on the norms' forwards, each worth a program more per SM, lost
# 3-25% (H200, same day; layer norm 4096 x 4096 at 32 registers, 0.70 against 0.81).
FUSED_MAX_REGISTERS = {("fwd", 2, 8): 48}
# The cap holds only for rows of up to this many elements a thread. Longer rows in the same warps (a
# num_warps the caller chose) spill under it: 16-bit rows of 16384 columns in 8 warps spilled 76-104
# registers a thread (Triton's n_spills) and ran at 0.26-0.32 of the copy ceiling (H100, triton 3.6,
# torch 2.11, 2026-12-07), and rows of 8192 in 8 warps, capped, within 1% of the default 16 warps.
CAPPED_MAX_ELEMENTS_PER_THREAD = 32
# The forward holds a fused row of one to a program whose length is not a power of two as two
# blocks (_rows.head_and_tail): the largest power of two that fits in the row, and the next power of
# two past the rest, where the two leave fewer masked lanes than one block would (5120 = 4096 + 1024,
# 6144 = 4096 + 2048, 3000 = 2048 + 1024; not 7168, whose rest needs a second 4096). Masked lanes
# cost no memory traffic but every instruction of the row, and registers: compiled for sm_90
# (triton 3.6, 8 warps, float16, 5120 columns, sizes and strides divisible by 16 as the benchmark's
# are) the forward took 40 registers a thread and 394 SASS lines against 48 and 482 in one block
# of 8192. Interleaved on an H200 (triton 3.6, torch 2.11,
# 2026-11-24, fractions of the copy ceiling, one block in parentheses): float16 4096 x 5120 0.833
# (0.783), bfloat16 0.828 (0.765); 16384 x 5120 0.925 (0.819) and 0.948 (0.856); 4096 x 6144 0.896
# (0.866) and 0.905 (0.845); 4096 x 4352 0.860 (0.715) and 0.821 (0.690); 4096 x 10000 0.829
# (0.658) and 0.822 (0.680); 4096 x 3000 0.806 (0.782) and 0.810 (0.755); 4096 x 12288 within 1%.
# Rows read again (RELOAD_BLOCKS, float32) keep one block: at 6144 columns the reload ran at 0.951,
# two blocks 0.929 (5120 and 3000 within 0.5%; at 10000, where one block is 16384, two blocks ran
# at 0.952 against 0.912). The backward gained nothing from it and keeps one block: 16-bit rows of
# 4096 x 5120 and 6144 +0.4 to +1.1%, float32 -0.5 to -0.8%, 16384 x 5120 within 0.4%, 4096 x
# 3000 -0.4 to -1.5%.
# Online path, from a sweep on an H200 (tiles of 4096 or 8192, 8 or 16 warps, 2 or 3 stages): 8192-wide
# tiles, 3 stages, 16 warps forward and 8 backward were best or within noise of it at every long shape.
ONLINE_TILE_N = 8192
ONLINE_NUM_WARPS = {"fwd": 16, "bwd": 8}
ONLINE_NUM_STAGES = 3
# Online path, programs per SM. The second pass finds a row in L2 only while few rows are in flight:
# at 4096 rows of 65536 float16 (ncu, H200) the forward read 1.03 x the input from memory with one
# program per SM and 1.51 x with two, yet two ran 20% faster (more loads in flight). The backward,
# whose rows are twice the bytes (y and dy), was 10% faster with one (float16, an interleaved
# comparison the same day; within 1% in float32).
ONLINE_PROGRAMS_PER_SM = {"fwd": 2, "bwd": 1}
# Staged path (Hopper): rows of MAX_FUSED_N < N <= STAGED_MAX_N columns, N a multiple of
# STAGED_VIEW, copied into shared memory in chunks of 32 KB (STAGED_CHUNK_ROWS runs of STAGED_VIEW
# 16-bit elements; half as many float32 runs), in programs of STAGED_WARPS warps. A TMA block is
# at most 256 elements a side, hence the runs. Interleaved runs (triton 3.6, torch 2.11, 2026-11-24,
# bfloat16, 4096 rows of 65536, fractions of the copy ceiling, online path in parentheses): on an
# NVIDIA H200, chunks of 64 runs in 16 warps 0.880 (0.653), 32 runs in 8 warps 0.812, 32 in 16
# 0.767, 16 in 8 0.664, 128 in 32 0.561; at 40960 columns 64 runs 0.751, 32 runs in 8 warps 0.793
# (0.631). Each chunk costs a barrier wait and a reduction across the program's warps: the bigger
# the chunk, the fewer. On an NVIDIA H100 80GB HBM3 (same day, both 16-bit dtypes, 4096 and 16384
# rows of 65536 and 4096 of 40960) these defaults ran at 0.91-0.96 (0.71-0.75).
# Float32 rows (H200, a later run the same day): 4096 x 40960 (five chunks) 0.91-0.92 (0.77);
# 4096 x 65536, seven chunks staged and the eighth held in registers, 0.905-0.914 (0.733-0.738).
# The 16-bit rows ran as before (bfloat16 4096 x 65536 0.877-0.883), though pass 2 now takes
# exp2((x - max) * log2(e)) rather than exp2(x * log2(e) - max * log2(e)), a subtraction more
# an element: in float32 the latter left relative errors of 5e-4 at inputs of 3e4.
# The backward stages a row of y and one of dy in the same 32 KB chunks (16-bit rows: a float32
# pair of rows of 32769 columns or more would leave three or more chunks for registers), the last
# chunk of dy held in registers from 49153 columns on. H200, same day, one interleaved run, y, dy
# read and dx written against the ceiling (online path in parentheses): bfloat16 4096 x 65536
# 0.954 (0.752), float16 0.956 (0.755); 4096 x 40960 0.931-0.932 (0.765-0.769); 16384 x 65536
# 0.975-0.978 (0.759-0.762). On an NVIDIA H100 80GB HBM3 (same day, 4096 x 65536): the forward in
# float32 0.928 (0.726), the backward in bfloat16 0.957 (0.735), float16 0.954 (0.734).
STAGED_MAX_N = 65536
STAGED_CHUNK_ROWS = 64
STAGED_WARPS = 16
# Where a row of y and one of dy do not fit (float32 rows of 32769 columns or more), each row is
# split: one 32 KB chunk of y and one of dy to a program, a group of programs to a row, which trade
# their shares of sum(y * dy) as the split norm backward does (softmax_bwd_staged_split_kernel), in
# this many warps, with up to this many rows in flight. It replaced a kernel that staged y alone
# and read dy twice, the second time mostly from L2, in 32 warps: on an H200 (triton 3.6, torch
# 2.11, 2026-11-24) it ran at 0.81-0.82 of the copy ceiling at 4096 x 65536, 0.85-0.86 at 4096 x
# 49152 and 0.88-0.89 at 4096 x 40960, interleaved runs against the online path (0.67, 0.70 and
# 0.72) and torch.compile (0.61, 0.58 and 0.59); 16 warps ran 0.03-0.05 slower. Against it, one
# interleaved run (H200, same versions, 2026-12-01, fractions of the copy ceiling, the kernel it
# replaced in parentheses): 4096 x 65536 0.969 (0.801), 4096 x 40960 0.976 (0.873), 16384 x 65536
# 0.976 (0.810). The chunks, programs and rows in flight are the split norm backward's in float32
# (see BWD_SPLIT in norms.py), untuned here.
STAGED_SPLIT_WARPS = 8
STAGED_SPLIT_RING = 3
# Shorter 16-bit rows stay fused. Staged as a ring of 2 to 8 whole rows a program, copied that many
# rows ahead, in 1, 2 or 4 programs an SM of 4, 8 or 16 warps, the best of those lost or tied
# (interleaved H200 run, triton 3.6, torch 2.11, 2026-11-24, fractions of the copy ceiling, fused
# in parentheses): float16 4096 x 4096 0.792 (0.856), 4096 x 8192 0.845 (0.919), 4096 x 16384
# 0.909 (0.903), 16384 x 4096 0.892 (0.960), 16384 x 5120 0.883 (0.967); bfloat16 alike. The
# depth of the ring hardly mattered and the programs an SM did: at 4096 columns one program an SM
# ran at 0.50-0.65 with 2 rows in flight or 8. A program's time on a row (its reductions across
# warps), not the loads in flight, is what more programs an SM hide; the fused kernel runs up to
# eight there (8 warps, 32 registers a thread compiled for sm_90).

Path = Literal["fused", "online", "split", "staged"]


@dataclass(frozen=True)
class SoftmaxPlan:
    """How a launch covers an ``M × N`` problem.

    Attributes:
        path: ``"fused"`` (rows in registers, one pass), ``"online"`` (two passes per row
            in one program), ``"split"`` (rows cut into ``chunks`` handled by separate programs)
            or ``"staged"`` (rows copied into shared memory, ``chunks`` copies a row and tensor).
        block_n: fused: columns held per row (a power of two ≥ N, or with ``tail_n`` the first
            block of the row); online and split: tile width;
            staged: elements per chunk.
        rows_per_program: fused: rows per block (several when rows are short); 1 otherwise.
        num_warps: warps per program.
        num_stages: software-pipelining depth of the kernels' loops.
        grid: programs along the rows (fewer than row blocks makes a persistent grid).
        chunks: split and staged: chunks per row (1 otherwise).
        chunk_n: split: columns per chunk, a multiple of ``block_n``; staged: elements per chunk
            (N otherwise).
        reload: fused, one row a program: read the row again from cache after each row reduction
            instead of holding it in registers (see ``RELOAD_BLOCKS``).
        tail_n: fused, one row a program: columns held in a second block after the first
            ``block_n`` (a power of two, 0 for none), when the two blocks together hold fewer
            padding columns than one block would (forward only; see
            :func:`~tritonperf.kernels._rows.head_and_tail`).
        held: staged: of the ``chunks`` (of dy in the backward), how
            many (the last) are held in registers instead of shared memory (see
            :func:`~tritonperf.kernels._rows.staging_split`); 0 otherwise.
        max_registers: fused: registers a thread may take at most (``FUSED_MAX_REGISTERS``), or
            None for the compiler's choice.
        programs_per_row: staged backward: with more than 1, the ``chunks`` of a row are shared
            out among that many programs, one chunk of ``y`` and one of ``dy`` each, and
            ``num_stages`` is how many rows each program has in flight (float32 rows, see
            ``STAGED_SPLIT_WARPS``).
    """

    path: Path
    block_n: int
    rows_per_program: int
    num_warps: int
    num_stages: int
    grid: int
    chunks: int = 1
    chunk_n: int = 0
    reload: bool = False
    held: int = 0
    max_registers: int | None = None
    tail_n: int = 0
    programs_per_row: int = 1


def _clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def _check_power_of_two(name: str, value: int | None, largest: int | None = None) -> None:
    if value is None:
        return
    if not isinstance(value, int) or value < 1 or value & (value - 1) or (largest and value > largest):
        limit = f" up to {largest}" if largest else ""
        raise ValueError(f"{name} must be a power of two{limit}, got {value!r}")


def _check_positive(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_knobs(max_fused_n, rows_per_program, num_warps, num_stages, programs_per_sm, tile_n, split) -> None:
    _check_positive("max_fused_n", max_fused_n)
    _check_power_of_two("rows_per_program", rows_per_program)
    _check_power_of_two("num_warps", num_warps, largest=32)
    _check_positive("num_stages", num_stages)
    _check_positive("programs_per_sm", programs_per_sm)
    _check_power_of_two("tile_n", tile_n)
    _check_positive("split", split)


def _shared_rows(device: torch.device, n_rows: int, n_cols: int, itemsize: int, chunk: int) -> tuple[int, int] | None:
    """``(programs a row, rows in flight)`` where the backward shares rows of ``y`` and ``dy`` out
    among programs, a chunk of ``chunk`` elements of each to a program, else None."""
    if not staged_shape(device, n_rows, n_cols, itemsize):
        return None
    per_row = cdiv(n_cols, chunk)
    ring = rows_in_flight(device, STAGED_SPLIT_RING, 2 * chunk * itemsize)
    # A row's pass 2 runs after the next row's pass 1: two rows at least.
    return (per_row, ring) if ring >= 2 and per_row <= runtime.sm_count(device) else None


def softmax_plan(
    n_rows: int,
    n_cols: int,
    dtype: torch.dtype,
    direction: Direction = "fwd",
    device: torch.device | str | None = None,
    *,
    max_fused_n: int | None = None,
    rows_per_program: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    programs_per_sm: int | None = None,
    tile_n: int | None = None,
    split: int | None = None,
) -> SoftmaxPlan:
    """Choose the path and launch configuration for ``n_rows`` rows of ``n_cols`` elements.

    Every keyword is a knob of :func:`softmax` and :func:`softmax_backward`; ``None`` picks a
    value from the shape with the plain rules below (no autotuning, so no tuning cost at run time).

    Args:
        n_rows, n_cols: the problem, rows × columns (both ≥ 1).
        dtype: element type of the tensors.
        direction: ``"fwd"`` (reads one tensor) or ``"bwd"`` (reads two).
        device: the device the launch runs on (its SM count sizes persistent grids).
        max_fused_n: longest row held in registers in one pass; longer rows go online (default:
            ``MAX_FUSED_N``).
        rows_per_program: fused path: rows per program, a power of two (default: enough rows
            for about ``FUSED_ELEMENTS`` elements per program, one row from that many columns up,
            except where ``FUSED_ROWS`` says otherwise).
        num_warps: warps per program, a power of two up to 32 (default: fused, a warp per
            ``32 * ELEMENTS_PER_THREAD`` elements held, input tensors together, rounded down, at
            least one per row while a thread keeps ``MIN_ELEMENTS_PER_THREAD`` of it, except for
            the backward's rows of ``BWD_WIDE_ROW`` columns and more, see
            ``BWD_COLUMNS_PER_WARP`` and, for rows read twice, ``BWD_RELOAD_COLUMNS_PER_WARP``;
            online, 16 forward and 8 backward).
        num_stages: pipelining depth of the loops (default: 1 fused, except ``PREFETCH_STAGES``
            for the row widths of ``PREFETCH_BLOCKS``; ``ONLINE_NUM_STAGES`` online; a default that
            would not fit in the GPU's shared memory is lowered until it does).
        programs_per_sm: a persistent grid of this many programs per SM (default: fused, one
            program per block of rows, except one per SM for ``PREFETCH_BLOCKS``; online,
            ``ONLINE_PROGRAMS_PER_SM``).
        tile_n: online path: tile width, a power of two (default: ``ONLINE_TILE_N``).
        split: online path: chunks per row (default: 1 when there are at least as many rows as
            SMs, otherwise enough chunks for about two programs per SM).

    Rows longer than ``MAX_FUSED_N``, up to ``STAGED_MAX_N`` columns and a multiple of
    ``STAGED_VIEW``, with at least as many rows as SMs, take the staged path on a Hopper GPU
    where their chunks fit (:func:`~tritonperf.kernels._rows.staging_split`; in the backward, a
    row of ``y`` and one of ``dy``, else a chunk of each to a program, ``programs_per_row``
    programs to a row) unless a knob is given: knobs describe the Triton kernels.
    """
    _check_knobs(max_fused_n, rows_per_program, num_warps, num_stages, programs_per_sm, tile_n, split)
    device = torch.device(device if device is not None else "cpu")
    sms = runtime.sm_count(device)
    n_tensors = 1 if direction == "fwd" else 2
    itemsize = torch.empty((), dtype=dtype).element_size()

    if n_cols <= (max_fused_n or MAX_FUSED_N):
        block_n = next_power_of_2(n_cols)
        rows = rows_per_program or FUSED_ROWS.get(block_n) or _clamp(FUSED_ELEMENTS // block_n, 1, MAX_ROWS_PER_PROGRAM)
        reload = rows == 1 and block_n in RELOAD_BLOCKS.get((direction, itemsize), ())
        prefetch = rows == 1 and block_n in PREFETCH_BLOCKS.get((direction, itemsize), ())
        if direction == "bwd" and reload:
            warps = num_warps or min(floor_power_of_2(n_cols // BWD_RELOAD_COLUMNS_PER_WARP), 32)
        elif direction == "bwd" and n_cols >= BWD_WIDE_ROW:
            warps = num_warps or min(floor_power_of_2(n_cols // BWD_COLUMNS_PER_WARP), BWD_MAX_WARPS[itemsize])
        else:
            held = rows * n_cols * n_tensors  # elements a program holds, without the padding to block_n
            per_row = min(rows, floor_power_of_2(rows * n_cols // (32 * MIN_ELEMENTS_PER_THREAD)))
            warps = num_warps or _clamp(max(floor_power_of_2(held // (32 * ELEMENTS_PER_THREAD)), per_row), 1, 32)
        n_blocks = cdiv(n_rows, rows)
        programs_per_sm = programs_per_sm or (1 if prefetch else None)
        grid = min(n_blocks, sms * programs_per_sm) if programs_per_sm else n_blocks
        stages = num_stages or (PREFETCH_STAGES if prefetch else 1)
        capped = rows == 1 and n_cols <= CAPPED_MAX_ELEMENTS_PER_THREAD * 32 * warps
        cap = FUSED_MAX_REGISTERS.get((direction, itemsize, warps)) if capped else None
        tails = direction == "fwd" and rows == 1 and not reload
        head, tail = head_and_tail(n_cols) if tails else (block_n, 0)
        return SoftmaxPlan("fused", head, rows, warps, stages, grid, 1, n_cols, reload, max_registers=cap,
                           tail_n=tail)

    pinned = any(k is not None for k in (max_fused_n, rows_per_program, num_warps, num_stages, programs_per_sm, tile_n, split))
    chunk = chunk_elements(STAGED_CHUNK_ROWS, itemsize)
    if not pinned and n_cols <= STAGED_MAX_N:
        staging = staging_split(device, n_rows, n_cols, itemsize, chunk, n_tensors)
        if staging:
            return SoftmaxPlan("staged", chunk, 1, STAGED_WARPS, 1, sms, cdiv(n_cols, chunk), chunk, held=staging[1])
        shared = _shared_rows(device, n_rows, n_cols, itemsize, chunk) if direction == "bwd" else None
        if shared:
            per_row, ring = shared
            return SoftmaxPlan("staged", chunk, 1, STAGED_SPLIT_WARPS, ring, sms // per_row * per_row, per_row, chunk,
                               programs_per_row=per_row)
    tile = tile_n or ONLINE_TILE_N
    warps = num_warps or ONLINE_NUM_WARPS[direction]
    stages = num_stages or ONLINE_NUM_STAGES
    n_tiles = cdiv(n_cols, tile)
    chunks = split or (1 if n_rows >= sms else cdiv(2 * sms, n_rows))
    chunks = min(chunks, n_tiles, 65535)  # grid axis 1 holds at most 65535 programs
    if chunks > 1:
        chunk_n = cdiv(n_tiles, chunks) * tile
        return SoftmaxPlan("split", tile, 1, warps, stages, n_rows, cdiv(n_cols, chunk_n), chunk_n)
    programs_per_sm = programs_per_sm or ONLINE_PROGRAMS_PER_SM[direction]
    return SoftmaxPlan("online", tile, 1, warps, stages, min(n_rows, sms * programs_per_sm), 1, n_cols)


def _as_rows(name: str, t: torch.Tensor) -> torch.Tensor:
    """``t`` as a 2-D ``(rows, N)`` view with unit column stride, or a ValueError saying why not."""
    n_cols = t.shape[-1]
    if n_cols > 1 and t.stride(-1) != 1:
        raise ValueError(f"{name}'s last dimension must be contiguous (stride 1), got stride {t.stride(-1)}; call .contiguous() first")
    try:
        return t.view(-1, n_cols)
    except RuntimeError:
        raise ValueError(
            f"{name}'s leading dimensions (strides {tuple(t.stride()[:-1])}) cannot be read as rows of one stride; "
            "call .contiguous() first"
        ) from None


def _has_rows(t: torch.Tensor) -> bool:
    """True when ``_as_rows`` accepts ``t``."""
    try:
        _as_rows("t", t)
    except ValueError:
        return False
    return True


def _check_input(name: str, t: object) -> torch.Tensor:
    validation.check_tensor(name, t)
    validation.check_dtype(name, t, SUPPORTED_DTYPES)
    if t.dim() == 0:
        raise ValueError(f"{name} must have at least one dimension (softmax runs over the last one), got a 0-d tensor")
    if t.shape[-1] >= 2**31:
        raise ValueError(f"rows longer than 2**31 - 1 elements are not supported, got {t.shape[-1]}")
    return t


def _check_out(name: str, out: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    """``out`` checked against the input it is written for, or a new contiguous tensor like it."""
    if out is None:
        return torch.empty(like.shape, dtype=like.dtype, device=like.device)
    return validation.check_out(name, out, "input", like)


def _forward(x: torch.Tensor, knobs: dict, out: torch.Tensor | None = None) -> torch.Tensor:
    y = _check_out("out", out, x)
    if x.numel() == 0:
        return y
    x2, y2 = _as_rows("x", x), y.view(-1, x.shape[-1])
    n_rows, n_cols = x2.shape
    plan = softmax_plan(n_rows, n_cols, x.dtype, "fwd", x.device, **knobs)
    if plan.path == "staged" and not stageable(x2):
        # The copy engine needs 16-byte aligned rows; any pinned knob takes the online path instead.
        plan = softmax_plan(n_rows, n_cols, x.dtype, "fwd", x.device, tile_n=ONLINE_TILE_N)
    strides = (x2.stride(0), y2.stride(0))
    # The plan's stage counts come from Hopper; on a GPU with less shared memory they are lowered.
    fit = knobs["num_stages"] is None
    consts = {"NUM_STAGES": plan.num_stages, "ALIGN": row_align(n_cols, *strides)}
    if plan.path == "fused":
        launch(softmax_fwd_kernel, (plan.grid,), (x2, y2, n_rows, n_cols, *strides),
               consts | {"BLOCK_N": plan.block_n, "ROWS": plan.rows_per_program, "RELOAD": plan.reload,
                         "TAIL_N": plan.tail_n, "ONE_BLOCK": plan.grid >= cdiv(n_rows, plan.rows_per_program)},
               plan.num_warps, fit=fit, max_registers=plan.max_registers)
    elif plan.path == "staged":
        desc = staged_descriptor(x2, plan.chunk_n // STAGED_VIEW)
        softmax_fwd_staged_kernel[(plan.grid,)](desc, x2, y2, n_rows, n_cols, *strides,
                                                CHUNKS=plan.chunks - plan.held, HELD=plan.held > 0,
                                                WARPS=plan.num_warps, num_warps=plan.num_warps)
    elif plan.path == "online":
        launch(softmax_fwd_online_kernel, (plan.grid,), (x2, y2, n_rows, n_cols, *strides),
               consts | {"TILE_N": plan.block_n}, plan.num_warps, fit=fit)
    else:
        maxes = torch.empty((n_rows, plan.chunks), dtype=torch.float32, device=x.device)
        sums = torch.empty_like(maxes)
        grid = (n_rows, plan.chunks)
        consts["TILE_N"] = plan.block_n
        launch(softmax_fwd_partial_kernel, grid, (x2, maxes, sums, n_cols, x2.stride(0), plan.chunk_n),
               consts, plan.num_warps, fit=fit)
        launch(softmax_fwd_split_kernel, grid, (x2, y2, maxes, sums, n_cols, *strides, plan.chunk_n),
               consts | {"CHUNKS": next_power_of_2(plan.chunks)}, plan.num_warps, fit=fit)
    return y


def softmax(
    x: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    max_fused_n: int | None = None,
    rows_per_program: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    programs_per_sm: int | None = None,
    tile_n: int | None = None,
    split: int | None = None,
) -> torch.Tensor:
    """Softmax over the last dimension of ``x``, differentiable.

    Rows are the product of the leading dimensions. Rows of up to ``max_fused_n`` elements (by
    default 32768) are held in registers and read once; longer rows, of any length, are streamed
    twice (online softmax), except rows of up to 65536 on a Hopper GPU, which are copied into
    shared memory and read from memory once (see :func:`softmax_plan`). A row of only
    ``-inf`` gives NaN, as in torch; large magnitudes cannot overflow. When ``x`` requires a
    gradient, the backward pass runs :func:`softmax_backward`'s kernels.

    Args:
        x: a tensor of rank ≥ 1, dtype float32, float16 or bfloat16, on a CUDA device (or the CPU
            in interpreter mode). The last dimension must have stride 1; the leading ones may be
            strided as long as they flatten to rows of one stride (e.g. ``big[:, :n]``).
        out: optional contiguous tensor of ``x``'s shape and dtype to write into; not allowed
            when ``x`` requires a gradient.
        max_fused_n, rows_per_program, num_warps, num_stages, programs_per_sm, tile_n, split:
            launch knobs, described in :func:`softmax_plan`; the defaults pick them from the shape.

    Returns:
        ``out``, or a new contiguous tensor of ``x``'s shape and dtype.

    Raises:
        TypeError: ``x`` or ``out`` is not a tensor, or ``x`` has an unsupported dtype.
        ValueError: a 0-d tensor, a last dimension with stride ≠ 1, leading dimensions that do
            not flatten to rows of one stride, a CPU tensor outside interpreter mode, a bad
            ``out`` or a bad knob.
    """
    _check_input("x", x)
    validation.check_device(x=x)
    knobs = dict(max_fused_n=max_fused_n, rows_per_program=rows_per_program, num_warps=num_warps,
                 num_stages=num_stages, programs_per_sm=programs_per_sm, tile_n=tile_n, split=split)
    _check_knobs(**knobs)
    if x.numel():
        _as_rows("x", x)
    if torch.is_grad_enabled() and x.requires_grad:
        if out is not None:
            raise ValueError("out= is not supported when x requires a gradient (autograd needs its own output)")
        return _SoftmaxFunction.apply(x, knobs)
    return _forward(x, knobs, out)


def softmax_backward(
    y: torch.Tensor,
    dy: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    max_fused_n: int | None = None,
    rows_per_program: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    programs_per_sm: int | None = None,
    tile_n: int | None = None,
    split: int | None = None,
) -> torch.Tensor:
    """The gradient of softmax over the last dimension: ``dx = y * (dy - sum(y * dy))``.

    Rows are read as :func:`softmax` reads them: held in registers up to ``max_fused_n``
    columns, streamed twice beyond, except rows of up to 65536 on a Hopper GPU: there ``y`` and
    ``dy`` are copied into shared memory and read from memory once, by one program a row
    (16-bit rows) or by a group of programs that share each row out in chunks (float32 rows).

    Args:
        y: the forward pass's output.
        dy: the gradient of the loss with respect to ``y``: same shape, dtype and device.
        out: optional contiguous tensor of ``y``'s shape and dtype to write ``dx`` into.
        max_fused_n, rows_per_program, num_warps, num_stages, programs_per_sm, tile_n, split:
            launch knobs, as for :func:`softmax`.

    Returns:
        ``dx``: ``out``, or a new contiguous tensor of ``y``'s shape and dtype.

    Raises:
        TypeError: a non-tensor argument or an unsupported dtype.
        ValueError: mismatched shapes, dtypes or devices, and the layout errors of :func:`softmax`.
    """
    _check_input("y", y)
    _check_input("dy", dy)
    validation.check_device(y=y, dy=dy)
    validation.check_same("dtype", y=y, dy=dy)
    validation.check_same("shape", y=y, dy=dy)
    knobs = dict(max_fused_n=max_fused_n, rows_per_program=rows_per_program, num_warps=num_warps,
                 num_stages=num_stages, programs_per_sm=programs_per_sm, tile_n=tile_n, split=split)
    _check_knobs(**knobs)
    dx = _check_out("out", out, y)
    if y.numel() == 0:
        return dx
    y2, dy2, dx2 = _as_rows("y", y), _as_rows("dy", dy), dx.view(-1, y.shape[-1])
    n_rows, n_cols = y2.shape
    plan = softmax_plan(n_rows, n_cols, y.dtype, "bwd", y.device, **knobs)
    if plan.path == "staged" and not (stageable(y2) and stageable(dy2)):
        # As in the forward: rows the copy engine cannot read take the online path.
        plan = softmax_plan(n_rows, n_cols, y.dtype, "bwd", y.device, tile_n=ONLINE_TILE_N)
    strides = (y2.stride(0), dy2.stride(0), dx2.stride(0))
    fit = knobs["num_stages"] is None
    consts = {"NUM_STAGES": plan.num_stages, "ALIGN": row_align(n_cols, *strides)}
    if plan.path == "fused":
        launch(softmax_bwd_kernel, (plan.grid,), (y2, dy2, dx2, n_rows, n_cols, *strides),
               consts | {"BLOCK_N": plan.block_n, "ROWS": plan.rows_per_program, "RELOAD": plan.reload,
                         "ONE_BLOCK": plan.grid >= cdiv(n_rows, plan.rows_per_program)},
               plan.num_warps, fit=fit, max_registers=plan.max_registers)
    elif plan.path == "staged" and plan.programs_per_row > 1:
        runs = plan.chunk_n // STAGED_VIEW
        shares = unpublished_shares(n_rows, plan.programs_per_row, y.device)
        softmax_bwd_staged_split_kernel[(plan.grid,)](
            staged_descriptor(y2, runs), staged_descriptor(dy2, runs), dx2, shares, n_rows, n_cols, dx2.stride(0),
            RING=plan.num_stages, SPLIT=plan.programs_per_row, SHARES=next_power_of_2(plan.programs_per_row),
            WARPS=plan.num_warps, num_warps=plan.num_warps, launch_cooperative_grid=True)
    elif plan.path == "staged":
        runs = plan.chunk_n // STAGED_VIEW
        softmax_bwd_staged_kernel[(plan.grid,)](
            staged_descriptor(y2, runs), staged_descriptor(dy2, runs), dy2, dx2, n_rows, n_cols, dy2.stride(0),
            dx2.stride(0), CHUNKS=plan.chunks, HELD=plan.held > 0, WARPS=plan.num_warps, num_warps=plan.num_warps)
    elif plan.path == "online":
        launch(softmax_bwd_online_kernel, (plan.grid,), (y2, dy2, dx2, n_rows, n_cols, *strides),
               consts | {"TILE_N": plan.block_n}, plan.num_warps, fit=fit)
    else:
        dots = torch.empty((n_rows, plan.chunks), dtype=torch.float32, device=y.device)
        grid = (n_rows, plan.chunks)
        consts["TILE_N"] = plan.block_n
        launch(softmax_bwd_partial_kernel, grid, (y2, dy2, dots, n_cols, y2.stride(0), dy2.stride(0), plan.chunk_n),
               consts, plan.num_warps, fit=fit)
        launch(softmax_bwd_split_kernel, grid, (y2, dy2, dx2, dots, n_cols, *strides, plan.chunk_n),
               consts | {"CHUNKS": next_power_of_2(plan.chunks)}, plan.num_warps, fit=fit)
    return dx


# -- autograd ------------------------------------------------------------------------------------
class _SoftmaxFunction(torch.autograd.Function):
    """Saves only the output ``y``: the backward pass needs nothing else."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, knobs: dict) -> torch.Tensor:
        y = _forward(x, knobs)
        ctx.save_for_backward(y)
        ctx.knobs = knobs
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, None]:
        (y,) = ctx.saved_tensors
        # Gradients arriving from e.g. ``.sum()`` are broadcast views (stride 0): give them real rows.
        if dy.numel() and not _has_rows(dy):
            dy = dy.contiguous()
        return softmax_backward(y, dy, **ctx.knobs), None


# -- counts --------------------------------------------------------------------------------------
def softmax_bytes(n_rows: int, n_cols: int, dtype: torch.dtype, direction: Direction = "fwd") -> int:
    """Bytes a perfect kernel moves: fwd reads ``x`` and writes ``y``; bwd reads ``y`` and ``dy`` and writes ``dx``."""
    if direction not in ("fwd", "bwd"):
        raise ValueError(f"direction must be 'fwd' or 'bwd', got {direction!r}")
    tensors = 2 if direction == "fwd" else 3
    return tensors * n_rows * n_cols * torch.empty((), dtype=dtype).element_size()
