"""Layer norm and RMS norm over the last dimension, forward and backward.

Both normalize each row of an ``(..., N)`` tensor on its own: layer norm subtracts the row mean
and divides by the row standard deviation, then scales by ``weight`` and shifts by ``bias``;
RMS norm divides by the root mean square and scales by ``weight``. A few operations per element
against 4 (forward) or 6 (backward) bytes moved per element in half precision: both directions are
memory bound, and the goal is to move the minimal bytes (see :func:`layer_norm_bytes`) as fast as a
device copy.

The forward pass keeps each row in registers when it fits (several short rows per program, one long
row per program with more warps) and streams rows of any length through two passes over tiles
otherwise; on Hopper, rows of 32769 to 65536 columns are copied into shared memory instead, each
shared out in chunks among a group of programs that trade their shares of the row's sums. It saves
``mean`` and ``rstd`` (float32, one per row) for the backward pass.

The backward pass runs a persistent grid: each program owns a contiguous group of rows, computes
their ``dx``, and adds ``dy * x̂`` (for ``dweight``) and ``dy`` (for ``dbias``) into float32
accumulators it keeps across its rows; it writes one partial row per program, and a small second
kernel sums the partial rows. No program ever waits for another. On Hopper, rows of about 8192 to
16384 columns are copied into shared memory instead, a few rows ahead, and read from there twice
(for the row sums, then for ``dx``); longer rows, up to 65536 columns, are shared out in chunks
among a group of programs that trade their shares of the row sums. Elsewhere, rows too long for
registers split into column tiles: a first kernel writes each tile's share of the two row sums
``dx`` needs (and the weight gradients' partial rows), a second reads the rows again and writes
``dx``.
"""

from __future__ import annotations

import functools
import math
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
    chunk_layout,
    compile_key,
    fit_stages,
    launch,
    open_pair_ring,
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
    thread_barrier,
    unpublished_shares,
    wait_for_shares,
)

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
Direction = Literal["fwd", "bwd"]


# -- references ----------------------------------------------------------------------------------
def layer_norm_reference(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float = 1e-5
) -> torch.Tensor:
    """Layer norm over the last dimension, computed in float64 (returned in float64).

    Reads ``M * N`` elements of ``x`` (``M`` = product of the leading dimensions) and ``N`` of
    ``weight`` and ``bias``; writes ``M * N``. Differentiable, so it also gives reference gradients.
    """
    x64 = x.double()
    mean = x64.mean(dim=-1, keepdim=True)
    centered = x64 - mean
    y = centered * torch.rsqrt((centered * centered).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y


def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor | None, eps: float = 1e-6) -> torch.Tensor:
    """RMS norm over the last dimension, computed in float64 (returned in float64).

    Reads ``M * N`` elements of ``x`` and ``N`` of ``weight``; writes ``M * N``. Differentiable.
    """
    x64 = x.double()
    y = x64 * torch.rsqrt((x64 * x64).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    return y


# -- kernels -------------------------------------------------------------------------------------
# One set of kernels serves both norms: RMS is a constexpr flag, so each norm compiles to its own
# code with no run-time branch. Rows are addressed through a row stride (the last dimension must be
# contiguous); row indices are int64, so M * N may pass 2**31 elements. ALIGN, a power of two
# that divides N and the row strides, lets masked row loads be vector loads (see _rows.py).


@triton.jit
def _add_pairs(a1, a2, b1, b2):
    # tl.reduce's combine function for two sums taken in one reduction (one exchange across warps).
    return a1 + b1, a2 + b2


@triton.jit
def _scale_shift(y, w_ptr, b_ptr, cols, col_mask, HAS_W: tl.constexpr, HAS_B: tl.constexpr):
    # y * w + b for normalized rows y (one row, or a tile of them: w and b broadcast over the rows).
    # w and b are loaded evict_last: see norm_fwd_kernel. col_mask None: no lane is masked, and the
    # loads take no `other` either.
    other = 0.0 if col_mask is not None else None
    if HAS_W:
        y = y * tl.load(w_ptr + cols, mask=col_mask, other=other, eviction_policy="evict_last").to(tl.float32)
    if HAS_B:
        y = y + tl.load(b_ptr + cols, mask=col_mask, other=other, eviction_policy="evict_last").to(tl.float32)
    return y


@triton.jit
def _norm_fwd_row(row, x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, stride_x, stride_y, eps, cols, col_mask,
                  RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, RELOAD: tl.constexpr):
    # One row held 1-D in registers: statistics, then the normalized row. RELOAD reads the row again,
    # from cache, after each reduction instead of holding it across them (see FWD_RELOAD).
    # Tried and not kept: layer norm's mean and variance from sums shifted by the row's first 32
    # values, both in one exchange across warps (and one read fewer with RELOAD), as the tiled
    # path takes them. One interleaved H200 run (triton 3.6, torch 2.11, 2026-11-29, speed against
    # this kernel): bfloat16 4096 x 4096 0.91, 4096 x 8192 0.93, float16 4096 x 8192 and 16384 x
    # 8192 0.95, float32 4096 x 4096 and 16384 x 4096 0.93, 4096 x 8192 1.00. It is also less
    # accurate in float32: with the first 32 values 50 above a row of mean 100 and spread 3, the
    # output was off by up to 4e-3 (this kernel: 6e-6; Triton's interpreter, rows of 8192).
    x_ptrs = x_ptr + row * stride_x + cols
    if RELOAD:
        x = tl.load(x_ptrs, mask=col_mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    else:
        x = tl.load(x_ptrs, mask=col_mask, other=0.0).to(tl.float32)
    if RMS:
        xc = x
    else:
        mean = tl.sum(x, axis=0) / N
        if RELOAD:
            x = tl.load(x_ptrs, mask=col_mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        xc = tl.where(col_mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / N + eps)
    if RELOAD:
        x = tl.load(x_ptrs, mask=col_mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        xc = x if RMS else tl.where(col_mask, x - mean, 0.0)
    y = xc * rstd
    y = _scale_shift(y, w_ptr, b_ptr, cols, col_mask, HAS_W, HAS_B)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=col_mask)
    if not RMS:
        tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def _norm_fwd_tile(tile, x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, M, N, stride_x, stride_y, eps, cols, col_mask,
                   RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, ROWS: tl.constexpr):
    # A [ROWS, BLOCK_N] tile of short rows, one row per line.
    rows = tile * ROWS + tl.arange(0, ROWS)
    row_mask = rows < M
    mask = row_mask[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    if RMS:
        xc = x
    else:
        mean = tl.sum(x, axis=1) / N
        # Lanes past the end of the row must not add (0 - mean)² to the variance.
        xc = tl.where(mask, x - mean[:, None], 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=1) / N + eps)
    y = xc * rstd[:, None]
    y = _scale_shift(y, w_ptr, b_ptr, cols, col_mask, HAS_W, HAS_B)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    if not RMS:
        tl.store(mean_ptr + rows, mean, mask=row_mask)
    tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@triton.jit
def norm_fwd_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr,
    M, N, stride_x, stride_y, eps,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, ONE_TILE: tl.constexpr,
    RELOAD: tl.constexpr = False,
    ALIGN: tl.constexpr = 1,
):
    # Rows that fit in registers: each step of the loop normalizes a [ROWS, BLOCK_N] tile, one row per
    # line of the tile. With fewer programs than tiles the grid is persistent: program p takes tiles
    # p, p + P, p + 2P, ... so that the programs running together read neighbouring memory.
    # Weight and bias are loaded per tile, once the statistics are done (every program reads the
    # same N values, so they come from cache): held across the loop, they would take registers
    # for the whole of it, and at 8192 columns that halves the programs an SM holds. They are
    # loaded evict_last, so that the stream of rows passing through L2 does not push them out: in
    # an H200 comparison (triton 3.6, 2026-11-22) of 24 forward cases (both norms, float32 and bfloat16, 4096 and 16384 rows
    # of 4096-16384 columns) that gained 1-5% at 4096 rows of 4096 and 8192 columns and stayed
    # within 2% at the others.
    # One row per tile (ROWS == 1, the long rows) is written 1-D, without an eviction hint: in an H200
    # comparison the 2-D [1, BLOCK_N] form and evict_first each cost 4-15% at 16-bit rows of 5120-16384.
    # ONE_TILE: the grid has a program per tile, so each runs its tile without a loop; around a single
    # row the loop cost layer norm (not RMS norm) a lot in that comparison: float16 4096 x 16384 ran at
    # 0.57 of the copy ceiling inside it, 0.88 without. Tiles of several rows lost less to it (H200,
    # 4096 rows, GB/s without the loop against with it): layer norm bfloat16 256 columns 1406 against
    # 1204, 2048 columns 3248 against 2939; float32 512 columns 2683 against 2523. One tile per
    # program was also faster than a persistent grid of as many programs as the GPU runs at once,
    # at every row length held in registers (H200: float32 4096 x 8192 0.85 -> 0.91 of the copy
    # ceiling, 16384 x 8192 0.86 -> 0.94), so it is the default; `programs` asks for the loop.
    N = aligned(N, ALIGN)
    stride_x = aligned(stride_x, ALIGN)
    stride_y = aligned(stride_y, ALIGN)
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < N
    if ROWS == 1:
        if ONE_TILE:  # the default grid: no loop at all
            _norm_fwd_row(pid.to(tl.int64), x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, stride_x, stride_y, eps,
                          cols, col_mask, RMS, HAS_W, HAS_B, RELOAD)
        else:
            for row in tl.range(pid.to(tl.int64), M, tl.num_programs(0), num_stages=NUM_STAGES):
                _norm_fwd_row(row, x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, stride_x, stride_y, eps,
                              cols, col_mask, RMS, HAS_W, HAS_B, RELOAD)
    elif ONE_TILE:
        _norm_fwd_tile(pid.to(tl.int64), x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, M, N, stride_x, stride_y, eps,
                       cols, col_mask, RMS, HAS_W, HAS_B, ROWS)
    else:
        for tile in tl.range(pid.to(tl.int64), tl.cdiv(M, ROWS), tl.num_programs(0), num_stages=NUM_STAGES):
            _norm_fwd_tile(tile, x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, M, N, stride_x, stride_y, eps,
                           cols, col_mask, RMS, HAS_W, HAS_B, ROWS)


@triton.jit
def _tile_sums(x_row, cols, N, shift, s1, s2, MASKED: tl.constexpr):
    # One tile's per-lane sums of d = x - shift and of d², added to s1 and s2.
    if MASKED:
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        d = tl.where(mask, x - shift, 0.0)
    else:
        x = tl.load(x_row + cols, eviction_policy="evict_last").to(tl.float32)
        d = x - shift
    return s1 + d, s2 + d * d


@triton.jit
def _tile_out(x_row, y_row, w_ptr, b_ptr, cols, N, mean, rstd, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
              MASKED: tl.constexpr):
    # One tile of y = (x - mean) * rstd * w + b. x comes from cache (the statistics pass read it)
    # for the last time; w and b, which every row reads, stay there.
    # Without a mask (every tile but the last) the loads need no `other` either.
    mask = cols < N if MASKED else None
    other = 0.0 if MASKED else None
    x = tl.load(x_row + cols, mask=mask, other=other, eviction_policy="evict_first")
    y = _scale_shift((x.to(tl.float32) - mean) * rstd, w_ptr, b_ptr, cols, mask, HAS_W, HAS_B)
    tl.store(y_row + cols, y.to(y_row.dtype.element_ty), mask=mask)


@triton.jit
def _norm_fwd_tiled_row(row, x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, stride_x, stride_y, eps,
                        RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK_N: tl.constexpr,
                        TILES: tl.constexpr):
    # One row in two passes over BLOCK_N-wide tiles. The first gathers the statistics; the second
    # re-reads the row (from L2: it was just read) and writes the output. TILES > 0 is the row's
    # tile count, known when the kernel is compiled: both passes are unrolled, so a program has
    # every tile's loads in flight at once, and only the last tile, the one that can be partial,
    # is masked. TILES == 0 loops over the tiles instead.
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK_N)
    # Per-lane sums of d = x - shift and of d², reduced across lanes once at the end. Layer norm
    # shifts by the mean of the row's first 32 values: any shift gives the same variance
    # E[d²] - E[d]², and one close to the mean keeps that difference free of cancellation. 32
    # values are one warp's worth, so the compiler sums them with shuffles inside each warp; a
    # whole tile's mean took a barrier, which held every warp's loads back until that tile had
    # arrived (see FWD_STREAMED for what that cost). The two sums are two reductions: taken in one,
    # as the backward takes its own, they ran within 1% of two at 4096 x 16384 and 16384 x 5120 in
    # 16-bit and at 4096 x 65536 in float32, and lost 5% at 4096 x 65536 in bfloat16 (H200, triton
    # 3.6, torch 2.11, 2026-11-29, one interleaved run).
    if RMS:
        shift = 0.0
    else:
        head = tl.arange(0, 32)
        shift = tl.sum(tl.load(x_row + head, mask=head < N, other=0.0).to(tl.float32), axis=0) / 32
    s1 = tl.zeros((BLOCK_N,), tl.float32)
    s2 = tl.zeros((BLOCK_N,), tl.float32)
    if TILES > 0:
        for t in tl.static_range(TILES):
            s1, s2 = _tile_sums(x_row, t * BLOCK_N + offs, N, shift, s1, s2, t == TILES - 1)
    else:
        for start in tl.range(0, N, BLOCK_N):
            s1, s2 = _tile_sums(x_row, start + offs, N, shift, s1, s2, True)
    if RMS:
        mean = 0.0
        var = tl.sum(s2, axis=0) / N  # the mean square
    else:
        mean_d = tl.sum(s1, axis=0) / N
        mean = shift + mean_d
        var = tl.maximum(tl.sum(s2, axis=0) / N - mean_d * mean_d, 0.0)
    rstd = tl.rsqrt(var + eps)
    if TILES > 0:
        for t in tl.static_range(TILES):
            _tile_out(x_row, y_row, w_ptr, b_ptr, t * BLOCK_N + offs, N, mean, rstd, HAS_W, HAS_B, t == TILES - 1)
    else:
        for start in tl.range(0, N, BLOCK_N):
            _tile_out(x_row, y_row, w_ptr, b_ptr, start + offs, N, mean, rstd, HAS_W, HAS_B, True)
    if not RMS:
        tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def norm_fwd_tiled_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr,
    M, N, stride_x, stride_y, eps,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK_N: tl.constexpr,
    TILES: tl.constexpr, ONE_TILE: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    # Rows streamed through tiles (see _norm_fwd_tiled_row), one row per program (ONE_TILE, the
    # default grid), or a persistent grid whose programs take rows p, p + P, p + 2P, ...
    N = aligned(N, ALIGN)
    stride_x = aligned(stride_x, ALIGN)
    stride_y = aligned(stride_y, ALIGN)
    pid = tl.program_id(0)
    if ONE_TILE:
        _norm_fwd_tiled_row(pid.to(tl.int64), x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, stride_x, stride_y,
                            eps, RMS, HAS_W, HAS_B, BLOCK_N, TILES)
    else:
        for row in tl.range(pid.to(tl.int64), M, tl.num_programs(0)):
            _norm_fwd_tiled_row(row, x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, stride_x, stride_y,
                                eps, RMS, HAS_W, HAS_B, BLOCK_N, TILES)


@gluon.jit
def _split_row_stats(shares, share_ptrs, parts, N, CHUNK: gl.constexpr, SPLIT: gl.constexpr, RMS: gl.constexpr):
    # A split row's mean and variance from its programs' shares. Each layer-norm share holds its
    # chunk's sum and the chunk's sum of squares about its own mean; combined as in Chan, Golub and
    # LeVeque's pairwise variance, they lose nothing to a mean large against the spread.
    s, q = wait_for_shares(shares, share_ptrs, parts, SPLIT)
    if RMS:
        mean = 0.0
        var = gl.sum(q, axis=0) / N
    else:
        n_part = gl.maximum(gl.minimum(N - parts * CHUNK, CHUNK), 0).to(gl.float32)
        mean = gl.sum(s, axis=0) / N
        d = s / gl.maximum(n_part, 1.0) - mean
        var = gl.sum(q + n_part * d * d, axis=0) / N
    return mean, var


@gluon.jit
def norm_fwd_split_kernel(
    x_desc, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, shares_ptr, M, N, stride_y, eps,
    RMS: gl.constexpr, HAS_W: gl.constexpr, HAS_B: gl.constexpr, RING: gl.constexpr, SPLIT: gl.constexpr,
    SHARES: gl.constexpr, WARPS: gl.constexpr,
):
    # Rows too long for one program, each shared by SPLIT programs of a persistent grid of one
    # program per SM: program pid takes chunk pid % SPLIT of rows pid // SPLIT, + groups, ...
    # (groups = programs / SPLIT). Its chunks are staged in a ring of RING slots of shared memory
    # (see _rows.py), copied RING rows ahead; its weights and biases stay in registers, since every
    # row needs the same ones. For each row the program publishes its chunk's two sums in one
    # relaxed 8-byte exchange (shares_ptr[row, part], -1 until then); step i then writes y for row
    # i - 1, whose shares it asked for at the top of the step, before its own sums. No fence and no
    # counter: the shares carry their own mark of arrival. The launch is cooperative, so every
    # program of a group runs at once and the wait ends.
    CHUNK: gl.constexpr = x_desc.block_type.shape[1] * x_desc.block_type.shape[2]
    layout: gl.constexpr = chunk_layout(WARPS, x_desc.dtype.primitive_bitwidth)
    part, first_row, step, parts = split_program(SPLIT, SHARES, WARPS)
    buf, ready, offs = allocate_ring(x_desc, RING, layout)
    for k in gl.static_range(RING):
        stage_chunk(x_desc, buf, ready, first_row + k * step, part, k, M)
    cols = part * CHUNK + offs
    col_mask = cols < N
    n_part = gl.minimum(N - part * CHUNK, CHUNK).to(gl.float32)
    if HAS_W:
        w = gl.load(w_ptr + cols, mask=col_mask, other=0.0)
    if HAS_B:
        b = gl.load(b_ptr + cols, mask=col_mask, other=0.0)
    n_rows = gl.maximum(gl.cdiv(M - first_row, step), 0)
    for i in range(n_rows + 1):
        row = first_row + i * step
        prev_shares, prev_ptrs = ask_for_shares(shares_ptr, gl.maximum(row - step, 0), parts, SPLIT)
        if i < n_rows:  # pass 1 of row i: its chunk's sums, published
            slot = i % RING
            mbarrier.wait(ready.index(slot), (i // RING) & 1)
            x = read_chunk(buf, slot, layout)
            if RMS:
                q = gl.sum(gl.sum(x * x, axis=1), axis=0)
                s = q
            else:
                s = gl.sum(gl.sum(x, axis=1), axis=0)
                d = gl.where(col_mask, x - s / n_part, 0.0)
                q = gl.sum(gl.sum(d * d, axis=1), axis=0)
            gl.atomic_xchg(shares_ptr + row.to(gl.int64) * SPLIT + part, pack_sums(s, q), sem="relaxed",
                           scope="gpu")
        if i > 0:  # pass 2 of row i - 1: y, then its slot handed to the copy of row i - 1 + RING
            prev_slot = (i - 1) % RING
            mean, var = _split_row_stats(prev_shares, prev_ptrs, parts, N, CHUNK, SPLIT, RMS)
            rstd = gl.rsqrt(var + eps)
            y = (read_chunk(buf, prev_slot, layout) - mean) * rstd
            if HAS_W:
                y = y * w.to(gl.float32)
            if HAS_B:
                y = y + b.to(gl.float32)
            prev_row = row - step
            gl.store(y_ptr + prev_row.to(gl.int64) * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=col_mask)
            if part == 0:
                if not RMS:
                    gl.store(mean_ptr + prev_row, mean)
                gl.store(rstd_ptr + prev_row, rstd)
            release_chunk(x_desc, buf, ready, prev_row + RING * step, part, prev_slot, M)


@triton.jit
def _load_x_dy(x_ptr, dy_ptr, rows, cols, stride_x, stride_dy, mask, EVICTION: tl.constexpr):
    # A [ROWS, BLOCK_N] tile of x and of dy in float32, 0 on masked lanes.
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0,
                eviction_policy=EVICTION).to(tl.float32)
    dy = tl.load(dy_ptr + rows[:, None] * stride_dy + cols[None, :], mask=mask, other=0.0,
                 eviction_policy=EVICTION).to(tl.float32)
    return x, dy


@triton.jit
def _add_partials(dw_acc, db_acc, dy, xhat, DW: tl.constexpr, DB: tl.constexpr):
    # A tile's column sums of dy · x̂ and dy added to the program's accumulators. dy is 0 on
    # masked lanes, so they add nothing. Summing the tile's rows at once keeps the accumulators
    # one row long: fewer registers a thread, more programs an SM.
    if DW:
        dw_acc += tl.sum(dy * xhat, axis=0)
    if DB:
        db_acc += tl.sum(dy, axis=0)
    return dw_acc, db_acc


@triton.jit
def _bwd_tile_terms(x, dy, w, mean_ptr, rstd_ptr, rows, row_mask, mask, RMS: tl.constexpr, HAS_W: tl.constexpr):
    # For a [ROWS, BLOCK_N] tile of x and dy in float32: the rows' rstd, x̂ (0 on masked lanes) and w·dy.
    rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
    if RMS:
        xhat = x * rstd[:, None]
    else:
        mean = tl.load(mean_ptr + rows, mask=row_mask, other=0.0)
        xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
    if HAS_W:
        wdy = dy * w[None, :]
    else:
        wdy = dy
    return rstd, xhat, wdy


@triton.jit
def _store_partials(dw_part_ptr, db_part_ptr, part_row, N, cols, col_mask, dw_acc, db_acc,
                    DW: tl.constexpr, DB: tl.constexpr):
    # A program's sums of dy · x̂ and dy, written as row part_row of the partial buffers.
    part = part_row.to(tl.int64) * N + cols
    if DW:
        tl.store(dw_part_ptr + part, dw_acc, mask=col_mask)
    if DB:
        tl.store(db_part_ptr + part, db_acc, mask=col_mask)


@triton.jit
def norm_bwd_kernel(
    x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_part_ptr, db_part_ptr,
    M, N, stride_x, stride_dy, stride_dx, rows_per_program,
    RMS: tl.constexpr, HAS_W: tl.constexpr, DW: tl.constexpr, DB: tl.constexpr,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr, RELOAD: tl.constexpr = False,
    ALIGN: tl.constexpr = 1,
):
    # Rows that fit in registers. Program p owns rows [p * rows_per_program, (p + 1) * rows_per_program),
    # walks them in [ROWS, BLOCK_N] tiles, writes dx, and keeps its share of dweight and dbias in
    # float32 registers until the end, when it writes them as row p of the partial buffers.
    # RELOAD reads each tile a second time for dx (from cache: the first read asks to keep it)
    # instead of holding x and dy across the row sums.
    N = aligned(N, ALIGN)
    stride_x = aligned(stride_x, ALIGN)
    stride_dy = aligned(stride_dy, ALIGN)
    stride_dx = aligned(stride_dx, ALIGN)
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < N
    if HAS_W:
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    else:
        w = None
    dw_acc = tl.zeros((BLOCK_N,), tl.float32)
    db_acc = tl.zeros((BLOCK_N,), tl.float32)
    row_start = pid.to(tl.int64) * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)
    for first_row in tl.range(row_start, row_end, ROWS, num_stages=NUM_STAGES):
        rows = first_row + tl.arange(0, ROWS)
        row_mask = rows < row_end
        mask = row_mask[:, None] & col_mask[None, :]
        if RELOAD:
            x, dy = _load_x_dy(x_ptr, dy_ptr, rows, cols, stride_x, stride_dy, mask, "evict_last")
        else:
            x, dy = _load_x_dy(x_ptr, dy_ptr, rows, cols, stride_x, stride_dy, mask, "evict_first")
        rstd, xhat, wdy = _bwd_tile_terms(x, dy, w, mean_ptr, rstd_ptr, rows, row_mask, mask, RMS, HAS_W)
        # dx = rstd * (w·dy - mean(w·dy · x̂) · x̂ - mean(w·dy)); RMS norm has no mean(w·dy) term.
        # Layer norm takes its two sums in one reduction: one exchange across the warps, not two.
        # Interleaved on an H200 (triton 3.6, torch 2.11, 2026-11-29, two runs, gradients
        # bit-identical), against two reductions: bfloat16 4096 x 16384 +3.3 and +3.8%, 4096 x 8192
        # +0.5 and +1.4%, 4096 x 4096 +1.3 and +0.7%; float16 16384 x 5120 +2.6 and +1.7%; float32
        # 4096 x 4096 +0.9 and +1.1%.
        if RMS:
            c1 = tl.sum(xhat * wdy, axis=1) / N
        else:
            s1, s2 = tl.reduce((xhat * wdy, wdy), 1, _add_pairs)
            c1 = s1 / N
            c2 = s2 / N
        if RELOAD:
            x, dy = _load_x_dy(x_ptr, dy_ptr, rows, cols, stride_x, stride_dy, mask, "evict_first")
            rstd, xhat, wdy = _bwd_tile_terms(x, dy, w, mean_ptr, rstd_ptr, rows, row_mask, mask, RMS, HAS_W)
        if RMS:
            dx = (wdy - xhat * c1[:, None]) * rstd[:, None]
        else:
            dx = (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
        tl.store(dx_ptr + rows[:, None] * stride_dx + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc, db_acc = _add_partials(dw_acc, db_acc, dy, xhat, DW, DB)
    _store_partials(dw_part_ptr, db_part_ptr, pid, N, cols, col_mask, dw_acc, db_acc, DW, DB)


@triton.jit
def norm_bwd_sums_kernel(
    x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, sums_ptr, dw_part_ptr, db_part_ptr,
    M, N, stride_x, stride_dy, rows_per_program,
    RMS: tl.constexpr, HAS_W: tl.constexpr, DW: tl.constexpr, DB: tl.constexpr,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    # Rows too long for registers, first of two passes. Program (c, r) takes column tile c of the
    # rows [r * rows_per_program, (r + 1) * rows_per_program). For each row it writes its tile's
    # share of the two row sums dx needs (sums[0 or 1, row, c]); over its rows it adds up dy * x̂
    # and dy per column and writes them as row r of the partial buffers. x̂ needs only the forward's
    # statistics, so nothing here waits for another program.
    N = aligned(N, ALIGN)
    stride_x = aligned(stride_x, ALIGN)
    stride_dy = aligned(stride_dy, ALIGN)
    pid_c = tl.program_id(0)
    pid_r = tl.program_id(1)
    n_tiles = tl.num_programs(0)
    cols = pid_c * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    if HAS_W:
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    else:
        w = None
    dw_acc = tl.zeros((BLOCK_N,), tl.float32)
    db_acc = tl.zeros((BLOCK_N,), tl.float32)
    row_start = pid_r.to(tl.int64) * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)
    for first_row in tl.range(row_start, row_end, ROWS, num_stages=NUM_STAGES):
        rows = first_row + tl.arange(0, ROWS)
        row_mask = rows < row_end
        mask = row_mask[:, None] & col_mask[None, :]
        x, dy = _load_x_dy(x_ptr, dy_ptr, rows, cols, stride_x, stride_dy, mask, "")
        _, xhat, wdy = _bwd_tile_terms(x, dy, w, mean_ptr, rstd_ptr, rows, row_mask, mask, RMS, HAS_W)
        tl.store(sums_ptr + rows * n_tiles + pid_c, tl.sum(xhat * wdy, axis=1), mask=row_mask)
        if not RMS:
            tl.store(sums_ptr + (M + rows) * n_tiles + pid_c, tl.sum(wdy, axis=1), mask=row_mask)
        dw_acc, db_acc = _add_partials(dw_acc, db_acc, dy, xhat, DW, DB)
    _store_partials(dw_part_ptr, db_part_ptr, pid_r, N, cols, col_mask, dw_acc, db_acc, DW, DB)


@triton.jit
def norm_bwd_dx_kernel(
    x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, sums_ptr,
    M, N, stride_x, stride_dy, stride_dx, rows_per_program,
    RMS: tl.constexpr, HAS_W: tl.constexpr,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr, TILES: tl.constexpr, NUM_STAGES: tl.constexpr,
    ALIGN: tl.constexpr = 1,
):
    # Second pass, over the same tiles as norm_bwd_sums_kernel: add up each row's shares of the two
    # sums (TILES: the number of column tiles rounded up to a power of two), then write dx.
    N = aligned(N, ALIGN)
    stride_x = aligned(stride_x, ALIGN)
    stride_dy = aligned(stride_dy, ALIGN)
    stride_dx = aligned(stride_dx, ALIGN)
    pid_c = tl.program_id(0)
    pid_r = tl.program_id(1)
    n_tiles = tl.num_programs(0)
    cols = pid_c * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    tiles = tl.arange(0, TILES)
    if HAS_W:
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    else:
        w = None
    row_start = pid_r.to(tl.int64) * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, M)
    for first_row in tl.range(row_start, row_end, ROWS, num_stages=NUM_STAGES):
        rows = first_row + tl.arange(0, ROWS)
        row_mask = rows < row_end
        mask = row_mask[:, None] & col_mask[None, :]
        share_mask = row_mask[:, None] & (tiles < n_tiles)[None, :]
        shares = rows[:, None] * n_tiles + tiles[None, :]
        c1 = tl.sum(tl.load(sums_ptr + shares, mask=share_mask, other=0.0), axis=1) / N
        x, dy = _load_x_dy(x_ptr, dy_ptr, rows, cols, stride_x, stride_dy, mask, "")
        rstd, xhat, wdy = _bwd_tile_terms(x, dy, w, mean_ptr, rstd_ptr, rows, row_mask, mask, RMS, HAS_W)
        if RMS:
            dx = (wdy - xhat * c1[:, None]) * rstd[:, None]
        else:
            c2 = tl.sum(tl.load(sums_ptr + M * n_tiles + shares, mask=share_mask, other=0.0), axis=1) / N
            dx = (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
        tl.store(dx_ptr + rows[:, None] * stride_dx + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)


@gluon.jit
def _staged_x_dy(buf, slot, w_smem, layout: gl.constexpr, HAS_W: gl.constexpr):
    # A staged row's x, dy and w·dy in float32, read from its slots in shared memory (x in `slot`,
    # dy in the next). Past N the copy left zeros in both.
    x = read_chunk(buf, slot, layout)
    dy = read_chunk(buf, slot + 1, layout)
    if HAS_W:
        wdy = dy * w_smem.load(layout).to(gl.float32)
    else:
        wdy = dy
    return x, dy, wdy


@gluon.jit
def _staged_row_sums(buf, slot, w_smem, mean, layout: gl.constexpr, RMS: gl.constexpr, HAS_W: gl.constexpr):
    # Pass 1 over a staged row (or part of one): the sums of (x - mean) w·dy and of w·dy, layer
    # norm's two in one reduction (one exchange across the warps).
    x, dy, wdy = _staged_x_dy(buf, slot, w_smem, layout, HAS_W)
    if RMS:
        s1 = gl.sum(gl.sum(x * wdy, axis=1), axis=0)
        s2 = 0.0
    else:
        s1, s2 = gl.reduce(((x - mean) * wdy, wdy), 1, _add_pairs)
        s1, s2 = gl.reduce((s1, s2), 0, _add_pairs)
    return s1, s2


@gluon.jit
def _gather_row_sums(shares, share_ptrs, parts, SPLIT: gl.constexpr):
    # A split row's two sums: its programs' shares added up, once all are published.
    s1, s2 = wait_for_shares(shares, share_ptrs, parts, SPLIT)
    return gl.sum(s1, axis=0), gl.sum(s2, axis=0)


@gluon.jit
def _staged_row_out(x_desc, dy_desc, buf, ready, slot, w_smem, dx_ptr, row, next_row, part, mean, rstd, s1, s2,
                    dw_acc, db_acc, cols, col_mask, M, N, stride_dx, layout: gl.constexpr,
                    HAS_W: gl.constexpr, DW: gl.constexpr, DB: gl.constexpr):
    # Pass 2: read the slots again, write dx, add the row's dy · x̂ and dy to the weight sums, and
    # hand the slots over to the copy of `next_row`.
    # dx = rstd (w·dy - x̂ mean(x̂ w·dy) - mean(w·dy)) with x̂ = (x - mean) rstd, taken as
    # rstd w·dy + a x̂ + b: two fused multiply-adds an element. x̂ itself is not one multiply-add,
    # x rstd - mean rstd: with a mean large against the spread, the rounding of mean rstd would
    # swamp it.
    a = -rstd * rstd * s1 / N
    b = -rstd * s2 / N
    x, dy, wdy = _staged_x_dy(buf, slot, w_smem, layout, HAS_W)
    xhat = (x - mean) * rstd
    dx = wdy * rstd + (xhat * a + b)
    gl.store(dx_ptr + row.to(gl.int64) * stride_dx + cols, dx.to(dx_ptr.dtype.element_ty), mask=col_mask)
    if DW:
        dw_acc += dy * xhat
    if DB:
        db_acc += dy
    release_chunk(x_desc, buf, ready, next_row, part, slot, M)
    stage_chunk(dy_desc, buf, ready, next_row, part, slot + 1, M)
    return dw_acc, db_acc


@gluon.jit
def norm_bwd_staged_kernel(
    x_desc, dy_desc, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_part_ptr, db_part_ptr, shares_ptr, M, N, stride_dx,
    RMS: gl.constexpr, HAS_W: gl.constexpr, DW: gl.constexpr, DB: gl.constexpr,
    RING: gl.constexpr, SPLIT: gl.constexpr, SHARES: gl.constexpr, WARPS: gl.constexpr,
):
    # Rows of x and dy staged in shared memory, a chunk of each a row (see _rows.py), RING rows at
    # a time, in a persistent grid of one program per SM. With SPLIT > 1 a row is SPLIT chunks,
    # each taken by one of SPLIT programs: program pid takes chunk pid % SPLIT of rows
    # pid // SPLIT, + groups, ... (groups = programs / SPLIT); otherwise rows pid, pid + programs, ...
    # The program's i-th row sits in slots 2 (i % RING) (x) and 2 (i % RING) + 1 (dy), copied there
    # RING rows ahead. Pass 1 takes the row sums; pass 2 reads the slots again, writes dx, adds the
    # row's dy · x̂ and dy to the dweight and dbias sums held in registers, and hands the slots over
    # to the copy of row i + RING. The weights sit in shared memory all along.
    # A split row's programs trade their shares of the sums as the split forward does (one relaxed
    # 8-byte exchange each, shares_ptr[row, part], -1 until published). The launch is cooperative,
    # so every program runs at once and the wait ends. Each program runs pass 2 of a row after pass
    # 1 of the next, having asked for the row's shares before that pass 1, so that the wait
    # overlaps the next row's work.
    CHUNK: gl.constexpr = x_desc.block_type.shape[1] * x_desc.block_type.shape[2]
    layout: gl.constexpr = chunk_layout(WARPS, x_desc.dtype.primitive_bitwidth)
    part, first_row, step, parts = split_program(SPLIT, SHARES, WARPS)
    buf, ready, offs = open_pair_ring(x_desc, dy_desc, first_row, step, part, RING, M, layout)
    cols = part * CHUNK + offs
    col_mask = cols < N
    if HAS_W:
        w_smem = gl.allocate_shared_memory(w_ptr.dtype.element_ty, offs.shape, gl.SwizzledSharedLayout(1, 1, 1, [1, 0]),
                                           gl.load(w_ptr + cols, mask=col_mask, other=0.0))
    else:
        w_smem = None
    dw_acc = gl.zeros(offs.shape, gl.float32, layout)
    db_acc = gl.zeros(offs.shape, gl.float32, layout)
    i = 0
    prev_row = first_row
    prev_slot = 0
    prev_mean = 0.0
    prev_rstd = 0.0
    for row in range(first_row, M, step):
        slot = 2 * (i % RING)
        phase = (i // RING) & 1
        if SPLIT > 1:
            prev_shares, prev_ptrs = ask_for_shares(shares_ptr, prev_row, parts, SPLIT)
        rstd = gl.load(rstd_ptr + row)
        if RMS:
            mean = 0.0
        else:
            mean = gl.load(mean_ptr + row)
        mbarrier.wait(ready.index(slot), phase)
        mbarrier.wait(ready.index(slot + 1), phase)
        s1, s2 = _staged_row_sums(buf, slot, w_smem, mean, layout, RMS, HAS_W)
        if SPLIT == 1:
            # Read the slots again rather than keep pass 1's values: without the barrier the
            # compiler merges the two reads, and the row stays in registers next to the weight sums.
            thread_barrier()
            dw_acc, db_acc = _staged_row_out(x_desc, dy_desc, buf, ready, slot, w_smem, dx_ptr, row, row + RING * step,
                                             part, mean, rstd, s1, s2, dw_acc, db_acc, cols, col_mask, M, N, stride_dx,
                                             layout, HAS_W, DW, DB)
        else:
            gl.atomic_xchg(shares_ptr + row.to(gl.int64) * SPLIT + part, pack_sums(s1, s2), sem="relaxed",
                           scope="gpu")
            if i > 0:
                s1, s2 = _gather_row_sums(prev_shares, prev_ptrs, parts, SPLIT)
                dw_acc, db_acc = _staged_row_out(x_desc, dy_desc, buf, ready, prev_slot, w_smem, dx_ptr, prev_row,
                                                 prev_row + RING * step, part, prev_mean, prev_rstd, s1, s2, dw_acc,
                                                 db_acc, cols, col_mask, M, N, stride_dx, layout, HAS_W, DW, DB)
            prev_row = row
            prev_slot = slot
            prev_mean = mean
            prev_rstd = rstd
        i += 1
    if SPLIT > 1:
        if i > 0:  # the last row's pass 2
            prev_shares, prev_ptrs = ask_for_shares(shares_ptr, prev_row, parts, SPLIT)
            s1, s2 = _gather_row_sums(prev_shares, prev_ptrs, parts, SPLIT)
            dw_acc, db_acc = _staged_row_out(x_desc, dy_desc, buf, ready, prev_slot, w_smem, dx_ptr, prev_row,
                                             prev_row + RING * step, part, prev_mean, prev_rstd, s1, s2, dw_acc,
                                             db_acc, cols, col_mask, M, N, stride_dx, layout, HAS_W, DW, DB)
    out = first_row.to(gl.int64) * N + cols
    if DW:
        gl.store(dw_part_ptr + out, dw_acc, mask=col_mask)
    if DB:
        gl.store(db_part_ptr + out, db_acc, mask=col_mask)


@triton.jit
def sum_partials_kernel(part_ptr, out_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr, ALIGN: tl.constexpr = 1):
    # Column sums of a float32 [S, P, N] buffer into an [S, N] output: axis 0 of the grid walks
    # column blocks, axis 1 picks which of the S sums (dweight, dbias).
    N = aligned(N, ALIGN)
    pid_c = tl.program_id(0)
    which = tl.program_id(1).to(tl.int64)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < N
    base = part_ptr + which * P * N
    acc = tl.zeros((BLOCK_P, BLOCK_C), tl.float32)
    for p0 in tl.range(0, P, BLOCK_P):
        rows = p0 + tl.arange(0, BLOCK_P)
        mask = (rows < P)[:, None] & col_mask[None, :]
        acc += tl.load(base + rows.to(tl.int64)[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + which * N + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=col_mask)


# -- configurations ------------------------------------------------------------------------------
# The forward's tables were tuned on an H200; the best configuration is not the same on every GPU.
# tools/record_versus_compile.py times them against other configurations and torch.compile: on an
# H100 (2026-12-05) the default trailed torch.compile by up to 2.3% where that runs at 0.91 of the
# copy ceiling or more, and the fastest configuration tried came within 0.4% of it or ahead.
# FWD_BY_GPU holds the H100's own choices where they differ.
# Rows held in registers: (largest BLOCK_N, rows per tile, num_warps); the first line whose BLOCK_N
# covers next_power_of_2(N) applies. Short rows are grouped several to a tile (2048-8192 elements);
# warps grow with the tile so each thread holds 16-32 elements, enough for
# 16-byte loads without spilling (compiled for sm_90, 32768 columns in 32 warps spill).
# The forward's 128, 512 and 2048 entries are estimates that keep about 16 elements a thread.
# The 8192 and 16384 forward entries (one row a program, the 1-D path; 4 and 8 warps at first) come from
# H200 comparisons (triton 3.6). Measured with this kernel at commit ec12c36, as fractions of the copy
# ceiling, against the recorded run of commit 3515e24 (8 and 16 warps, persistent, 2-D tiles):
# float16 16384 x 8192 0.955 (0.834), 4096 x 16384 0.881 (0.586), 16384 x 5120 0.792 (0.709);
# float32 16384 x 5120 0.953 (0.778). Two runs, so a few percent of each difference is spread.
# The 256, 1024 and 4096 entries were re-measured by an interleaved comparison on an H200 (commit
# 8b92fe4, layer norm, float16 and float32): at 4096 columns one row in 8 warps ran 0.91 / 0.94 of
# the ceiling with 16384 rows (2 rows in 4 warps: 0.88 / 0.91), but 0.76 against 0.79 in float16 with
# 4096 rows; 1024 columns in 4-row tiles of 2 warps 0.68 in float16 (0.61); 256 columns in 8-row
# tiles 0.32 / 0.45 (0.31 / 0.41).
# The 8192 entry went from 4 to 8 warps after an interleaved comparison on an H200 (commit
# c646b1b, triton 3.6, layer and RMS norm, bfloat16 and float32, rows of 5120 and 8192): in
# bfloat16, 8 warps moved 3441 against 3153 GB/s (layer norm, 16384 x 5120), 3794 against 3549
# (RMS norm, same shape) and 3609 against 3402 (layer norm, 4096 x 8192); at the other
# bfloat16 and float32 cases the two were within 2%.
# The 512 entry went from 8 rows in 4 warps to 2 rows in 1 warp after two interleaved H200 runs
# (triton 3.6, torch 2.11, 2026-11-22, 4096 x 512, both norms; float32 and bfloat16 in both runs,
# float16 in one): of the 6-11 shapes tried it was the best or within 2% of it in 9 of 10 cases
# (the other: float32 layer norm, 2848 against 2912 for 4 rows in 2 warps), and 5-16% faster than
# the old entry (layer norm bfloat16: 2047 and 2081 against 1781 and 1796 GB/s).
# At 4096 x 4096 in 16-bit layer norm, the 4096 entry still beat every other launch tried: 4 or 16
# warps, 2 rows in 16 warps, tiles of 2048 columns, a persistent grid of 4 or 6 programs an SM
# (H200, triton 3.6, torch 2.11, 2026-12-07, two interleaved rounds; 0.789-0.795 of the copy
# ceiling, the others 0.635-0.786). A torch copy_ of the same bytes ran at 0.858-0.863 there.
FWD_CONFIGS = (
    (128, 32, 4), (256, 8, 4), (512, 2, 1), (1024, 4, 2), (2048, 2, 8), (4096, 1, 8), (8192, 1, 8), (16384, 1, 8),
)
# float32 rows take their own entries here. Two interleaved H200 runs each (triton 3.6, torch 2.11,
# 2026-11-22, 4096 rows, GB/s against the table's entry, torch.compile in parentheses):
# - 256 columns, 2 rows in 1 warp: layer norm 2193 and 2115 against 1886 and 1926 (2101, 2253),
#   RMS norm 2276 and 2222 against 2114 and 2153 (2171, 2288);
# - 1024 columns, 4 rows in 4 warps: layer norm 3583 and 3423 against 3385 and 3323 (3180, 3057),
#   RMS norm 3647 and 3519 against 3456 and 3429 (3595, 3532).
# In bfloat16 the table's entry was best or within 2% at 256 columns; at 1024 columns in 16-bit
# types the best shape differed between the norms and between runs.
# block_n: (rows, num_warps)
FWD_FLOAT32_CONFIGS = {256: (2, 1), 1024: (4, 4), 4096: (1, 16), 8192: (1, 16), 16384: (1, 32), 32768: (1, 32)}
# float32 rows of 2049-8192 columns, one to a program in 16 warps, read the row once per reduction
# and once more for y, from cache after the first time (NormConfig.reload), rather than hold it in
# registers: that halves the registers a thread needs. Two interleaved H200 runs (triton 3.6, torch
# 2.11, 2026-11-22, GB/s against the 8-warp kernel that holds the row, torch.compile in
# parentheses): layer norm 16384 x 4096 4193 and 4169 against 4033 and 3999 (4208, 4191), 16384 x
# 8192 4227 and 4189 against 4100 and 4055 (4244, 4200); RMS norm 16384 x 4096 4214 and 4184
# against 4033 and 4010 (4225, 4198), 16384 x 8192 4152 and 4119 against 4061 and 4032 (4264,
# 4236). In the second run RMS norm also gained at 16384 x 5120 (4168 against 4013) and 4096 x 4096
# (+2%); layer norm lost 2% at 16384 x 5120 (3977 against 4074); 4096 x 8192 and layer norm 4096 x
# 4096 stayed within 0.5%. At 4096 x 16384 layer norm lost 3% that way; in bfloat16 layer norm
# lost 1-20%.
# float32 rows of 8193-16384 columns do the same in 32 warps. Two interleaved H200 runs (same
# versions and day, GB/s against the 8-warp kernel that holds the row, torch.compile in
# parentheses): layer norm 4096 x 16384 3992 and 3965 against 3503 and 3473 (3731, 3690), RMS norm
# 4115 and 4153 against 3961 and 3991 (4142, 4163). In the second run also 16384 x 16384 (layer
# norm 4169 against 3648, RMS norm 4263 against 4087), 4096 x 12288 (3894 against 3055; 4115
# against 3990) and 4096 x 10000 (3666 against 2678; 4048 against 3969). Read again in 16 warps,
# both lost 2-4% to holding the row; in 8, layer norm lost 2% and RMS norm gained 3%.
# RMS norm's 16-bit rows of 2049-8192 columns read the row again too, in a warp per 512 columns
# (FWD_RELOAD_COLUMNS_PER_WARP, rounded down: 8 warps at 4096-6144 columns, 16 at 8192). Two
# interleaved H200 runs (triton 3.6, torch 2.11, 2026-11-22, GB/s against holding the row,
# torch.compile in parentheses): 16384 x 5120 float16 4079 and 4104 against 3788 and 3850 (3832,
# 3855); 16384 x 8192 bfloat16 4212 and 4174 against 4050 and 4033 (4214, 4177); 16384 x 4096
# bfloat16 4058 and 4054 against 3955 and 3965; 4096 x 8192 float16 3851 and 3839 against 3780
# and 3769. 4096 x 4096 and 16384 x 6144 within 2%; 16384 x 3000 -2% in bfloat16, +4% in float16.
# At 8192 columns 8 warps lost 2-3% to 16; at 5120 columns 16 warps lost 9-12% to 8.
# (bytes per element, RMS): BLOCK_N
FWD_RELOAD = {(4, False): (4096, 8192, 16384, 32768), (4, True): (4096, 8192, 16384, 32768), (2, True): (4096, 8192)}
FWD_RELOAD_COLUMNS_PER_WARP = {2: 512}  # by bytes per element; float32 takes FWD_FLOAT32_CONFIGS
# The backward's table and BWD_TILED come from a sweep on an H200 (triton 3.6, commit a6e1388; layer
# norm float16, 4096 rows of 256 ... 65536 and 16384 rows of 5120; 1-64 rows, 4-16 warps, 1-3
# stages, checked in float32 and for RMS norm). Every entry holds 8192 elements a tile (at 256
# columns the sweep's best, 64 rows in 8 warps at one stage, was within 1% of the entry); 128, 512
# and 2048 follow that rule unmeasured. Fractions of the copy ceiling, best
# against the previous table's (all at one stage): 4096 x 4096 0.65 (0.49), 4096 x 8192 0.75
# (0.58), 16384 x 8192 0.90 (0.67), 4096 x 1024 0.27 (0.14).
BWD_CONFIGS = ((128, 64, 4), (256, 32, 4), (512, 16, 4), (1024, 8, 4), (2048, 4, 8), (4096, 2, 8), (8192, 1, 8))
# float32 rows of 512 to 4096 columns take tiles of half as many rows, in the same warps: the same
# bytes a tile as the 16-bit entries. Interleaved on an NVIDIA H200 (triton 3.6, torch 2.11,
# 2026-11-28, each variant's gradients checked against the default's), GB/s against the table's
# entry: layer norm 4096 x 4096 3609 and 3603 against 3433 and 3416, 16384 x 4096 3899 and 3943
# against 3755 and 3785, 4096 x 2048 3273 against 3255, 16384 x 2048 3803 against 3631, 4096 x
# 1024 2947 and 2875 against 2857 and 2872, 16384 x 1024 3702 against 3490, 4096 x 512 2339
# against 2171; RMS norm 4096 x 4096 3661 and 3663 against 3556 and 3456, 16384 x 4096 3881 and
# 3950 against 3805 and 3864, 4096 x 1024 3090 and 3129 against 2706 and 2754, 16384 x 1024 3722
# against 3547, 4096 x 2048 3348 against 3306, 16384 x 2048 3841 against 3694, 4096 x 512 2432
# against 2330. At 256 columns it was mixed (layer norm, 16 rows in 4 warps: 4096 rows +6%, 16384
# rows -2%) and is left out. The 16-bit entries held against the same changes (bfloat16): one row
# of 4096 in 8 warps lost 14-17% to two (4096 x 4096, both norms), two rows in 16 warps 1-2%; at
# 16384 x 5120, 16 warps lost 6% (layer norm) and 2% (RMS norm), 16 warps in two stages 40%, 4
# warps 68%; at 4096 x 8192, 16 warps 2%.
# block_n: (rows, num_warps)
BWD_FLOAT32_CONFIGS = {512: (8, 4), 1024: (4, 4), 2048: (2, 8), 4096: (1, 8)}
# Tried and not kept: a row that is not a power of two held as a tile and a tail tile
# (_rows.head_and_tail, as the softmax forward does). Compiled for sm_90 (triton 3.6, 8 warps,
# 5120 columns), layer norm's bfloat16 backward went from 255 registers and a 208-byte stack frame
# to 243 registers and none, yet in an interleaved H200 run (triton 3.6, torch 2.11, 2026-11-24,
# fractions of the copy ceiling, one tile in parentheses) layer norm bfloat16 lost: 16384 x 5120
# 0.642 (0.753), 4096 x 6144 0.621 (0.684). RMS norm bfloat16 0.784 (0.797) and 0.736 (0.731);
# float32 within +0.6%.
# Rows of 8193 to BWD_WIDE_N columns are held in registers too, one to a program, for the (RMS,
# bytes per element) cases of BWD_WIDE, in that many warps and pipeline stages; the others stream
# through BWD_TILED. These rows read each tile twice (NormConfig.reload): once for the row sums,
# again, from cache, for dx. The history, all on an H200 with triton 3.6 and torch 2.11, GB/s
# (torch.compile in parentheses):
# - RMS norm, which keeps no dbias sums, held the row in 32 warps first, without reading it again.
#   Compiled for sm_90 it spilled about 250 bytes a thread, and still beat the two-kernel path in
#   two interleaved runs (2026-11-22, 4096 x 16384): float16 2414 and 2402 against 2227 and 2226
#   (2297, 2300), bfloat16 2499 and 2440 against 2245 and 2228 (2239, 2217), float32 3041 and 3053
#   against 2383 twice (2464, 2465). With 2 or 3 stages it lost 9-24%.
# - Reading the tile again then gained (two runs, same day): bfloat16 4096 x 16384 3425 and 3491
#   against 2447 and 2492; float16 4096 x 16384 3511 against 2427, 16384 x 16384 3859 against
#   2585, 4096 x 12288 2984 against 2203; float32 within 2%. It still spills (208 bytes a thread
#   in float16, against 232). Layer norm's 8192 entry lost 14% that way (bfloat16, 16384 x 5120).
# - One interleaved run (2026-11-23, every variant checked against the default's gradients):
#   layer norm held in 32 warps ran at 0.80 of its two-kernel path (float16 4096 x 16384, 1740
#   against 2187), 0.87 reading again; in 16 warps, reading again, 16-bit rows gained 9-12%
#   (float16 4096 x 16384 2407 against 2187 (1880), bfloat16 2371 against 2171 (1880), float16
#   16384 x 16384 2652 against 2373 (2034), 4096 x 12288 2156 against 1925 (2215)). float32
#   layer norm gained 3% held without reading again (2443 against 2369) and lost 10% reading
#   again: it stays tiled. float32 RMS norm in 8 warps: 3571 against 3078 in 32 (16 warps 3047).
# - 16-bit layer norm then moved to two stages: the loop over a program's rows loads the next
#   row's x and dy into shared memory (64 KB) while the current one is reduced. Two interleaved
#   runs (2026-11-23, commit 1063313, each variant checked against the default's gradients), GB/s
#   at two stages in 16 warps against one: bfloat16 4096 x 16384 2773 and 2749 against 2485 and
#   2457; float16 4096 x 16384 2877 against 2488, bfloat16 16384 x 16384 3034 against 2701,
#   bfloat16 4096 x 12288 2270 against 2111. In 8 warps two stages were 0.5-2% behind 16; in 32,
#   14-22%. Three stages do not fit in shared memory. RMS norm lost 6-11% at two stages (16 or 32
#   warps against its 32 at one).
# - float32 layer norm held and read again stays behind its tiled path in 8, 16 and 32 warps too
#   (H200, triton 3.6, torch 2.11, 2026-11-29, one interleaved run, gradients checked against the
#   default's; fractions of the copy ceiling, tiled in parentheses): 4096 x 16384 0.532, 0.510,
#   0.552 (0.555); 4096 x 12288 0.477, 0.467, 0.494 (0.533); 16384 x 16384 0.556, 0.536, 0.585
#   (0.583). Its dbias sums are a second row of accumulators: compiled for sm_90 (triton 3.8), 8
#   warps leave a 400-byte stack frame where RMS norm's leave 128. bfloat16 4096 x 16384 at one
#   stage: 0.555, 0.579, 0.444 against 0.652 for the table's 16 warps in two stages.
BWD_WIDE_N = 16384
# (RMS, bytes per element): (num_warps, num_stages)
BWD_WIDE = {(True, 2): (32, 1), (True, 4): (8, 1), (False, 2): (16, 2)}
# The backward pipelines its loops over rows this deep (three stages won at nearly every shape of
# the sweep), as far as two buffers of x and dy per extra stage fit this much shared memory.
BWD_NUM_STAGES = 3
BWD_SHARED_BYTES = 192 * 1024
# On Hopper, with no knob given, the backward stages rows of x and dy in shared memory
# (norm_bwd_staged_kernel) for the (RMS, bytes per element) cases of BWD_STAGED: rows of fewest to
# most columns, a multiple of STAGED_VIEW, at least as many rows as SMs, in that many warps, up to
# that many rows in flight (fewer where shared memory cannot take them and float32 weights).
# Memory then sees each row once, and the registers hold only the weight sums. The table, as
# committed, against the paths the tables above choose (in parentheses), in GB/s, interleaved on
# an H200 (triton 3.6, torch 2.11, 2026-11-29, seven rounds): layer norm 4096 x 16384 bfloat16
# 3197 (2815), float16 3225 (2901), float32 3528 (2366); float16 16384 x 16384 3816 (3276);
# float32 4096 x 8192 3761 (3573), 16384 x 8192 4004 (3939); RMS norm 4096 x 16384 bfloat16
# 3762 (3488), float16 3739 (3519), float32 3800 (3555); float32 4096 x 8192 3686 (3667),
# 16384 x 8192 3980 (3937). How the entries were chosen (earlier runs the same day, gradients
# checked against the other path's):
# - 8 warps against 16: layer norm bfloat16 4096 x 16384 3202 against 2809; RMS norm bfloat16
#   3732 against 3704, float16 3580 against 3755 (and 3556 against 3617 in another run).
#   float32 layer norm 4096 x 8192: three rows in flight 3798, two 3701, one 3472 (3589).
#   Three 16-bit rows of 16384 in flight (which fit only beside 16-bit weights): 3125 against 3164.
# - Shorter 16-bit rows lose: layer norm bfloat16 4096 x 8192 2767 (3423), 16384 x 5120 2088
#   (3227), 4096 x 4096 1913 (3181). One program an SM spends a row's time on its exchanges
#   across warps and its barriers, and shorter rows have more of them a byte; the register path
#   runs several programs an SM.
# - Not kept: the weights in registers instead of shared memory, 5-24% slower; the weights in
#   shared memory as float32, 8-15% slower in 16-bit (twice the bytes read from shared memory a
#   row). The kernel's first form, which took x̂ in both passes and the two sums in two
#   reductions, ran float32 layer norm 4096 x 16384 at 2970 in 16 warps, 3310 in its present
#   form in the same warps. The dbias sums in shared memory (a third of the registers freed,
#   read and written back each row), layer norm in two rows of 16-bit weights, seven rounds:
#   bfloat16 4096 x 16384 2845 in 8 warps, 2789 in 16, against 3232 in registers in 8 (2744 in
#   16); float16 2915 and 2872 against 3260 (2936); bfloat16 16384 x 16384 3286 and 3183
#   against 3808 (3112).
# What still limits 16-bit layer norm (Nsight Compute, bfloat16 4096 x 16384, one launch): 255
# registers a thread in 8 warps (its dweight and dbias sums alone take 128), 12% occupancy,
# 0.55 warps issued per scheduler a cycle, DRAM throughput 59% of peak; RMS norm in 16 warps,
# 120 registers, 71%. Freeing registers did not help (the dbias sums in shared memory, above).
# The register path at 4096 x 4096 (bfloat16, layer norm; Nsight Compute, one launch, 2026-11-29):
# 128 programs of 8 warps, 174 registers a thread, so one program an SM (12.5% occupancy); 0.81
# eligible warps a scheduler a cycle, issue slots 48% busy, DRAM 59% of peak at the 1.48 GHz clock
# Nsight Compute sets. Fewer instructions did not help: x̂ without the mask's select (masked lanes
# have dy = 0, so they add nothing either way) and dx in two FMAs ran at 0.995-1.008 of the kernel
# in 16-bit and float32 at 4096 x 4096, 16384 x 5120, 4096 x 8192 and 16384 x 4096, +3% at
# 4096 x 1024 (H200, triton 3.6, torch 2.11, one interleaved run, 7 rounds). It waits on memory
# with too few warps to cover the latency, not on issue.
# Float32 layer norm splits rows longer than 8192 (BWD_SPLIT): at 4096 x 16384, in two chunks,
# 211.7 us (0.90 of the copy ceiling) against 232.6 us (0.82) for whole rows; 16 warps took
# 202.7 us (0.94). Split float32 RMS norm tied whole rows (211.1 against 211.7 us). Every other
# split tried, of 16-bit rows of 16384 and of rows of 4096, 5120 and 8192, ran at 0.22-0.99 of
# the path it would replace (H200, triton 3.6, torch 2.11, 2026-12-02, one interleaved run;
# chunks of 1024-8192 columns in 4-16 warps; gradients checked first). A second interleaved run
# later that day (same GPU and versions, fractions of the copy ceiling, 8 warps in parentheses)
# timed the float32 split in 16 warps at other lengths: layer norm 4096 x 12288 0.872 (0.902),
# 4096 x 16384 0.941 (0.906), 16384 x 16384 1.000 (0.974), 4096 x 32768 0.966 (0.959), 4096 x
# 65536 0.868 (0.965); RMS norm 4096 x 32768 0.947 (0.950), 4096 x 65536 0.925 (0.968). 16 warps
# win by 3-4% only where a row is two whole chunks, a shape that meets its bar in 8: the table
# keeps 8. RMS norm, whose rows up to 16384 are staged whole, split in 16 warps: 4096 x 12288
# 0.921 (whole rows 0.892), 4096 x 16384 0.900 (0.898).
# (RMS, bytes per element): (fewest columns, most columns, num_warps, rows in flight)
BWD_STAGED = {(False, 2): (8193, 16384, 8, 2), (True, 2): (8193, 16384, 16, 2),
              (False, 4): (8192, 8192, 8, 3), (True, 4): (8192, 16384, 8, 3)}
# Rows longer than BWD_STAGED's, up to BWD_SPLIT's most columns, are staged too, each split into
# chunks of that many columns, one per program (NormConfig.split): a group of programs shares each
# row, and they trade their shares of the row sums through global memory (norm_bwd_staged_kernel).
# Unlike the banded one-kernel attempt described below, the copies of later rows are in flight
# while a program waits, and the wait itself overlaps the next row's first pass. The programs
# trade their shares as the split forward does (see FWD_SPLIT): one 8-byte word each, published
# with a relaxed exchange. Against the release counter it replaced and the tiled path,
# interleaved on an H200 (triton 3.6, torch 2.11, 2026-12-01, 4096 x 65536, weights in x's
# dtype, GB/s, fraction of the copy ceiling; counter, tiled): layer norm bfloat16 3699, 0.88
# (3034, 2439), float16 3781, 0.90 (3128, 2458), float32 4060, 0.96 (3355, 2518); RMS norm
# bfloat16 4115, 0.97 (3264, 2489), float16 4116, 0.97 (3338, 2476), float32 4117, 0.97 (3507,
# 2537). The probes of the counter version (2026-11-29, gradients checked against the tiled
# path's; GB/s and fraction of the copy ceiling, the tiled path in parentheses): with each
# program's pass 2 of a row after its pass 1 of the next, in 8 warps, three rows in flight,
# layer norm bfloat16 3056, 0.72 (2406, 0.57), float16 3109, 0.73 (2423, 0.57), float32 in
# chunks of 8192 3351, 0.79 (2475, 0.58); RMS norm bfloat16 3295, 0.78 (2468, 0.58), float32
# 3568, 0.84 (2510, 0.59); RMS norm bfloat16 16384 x 65536 3351, 0.79 (2504, 0.59). 16 warps:
# layer norm bfloat16 3016, RMS norm 3118. Waiting for each row's sums before its pass 2, two
# rows in flight: layer norm bfloat16 2856-2869, RMS norm 3042-3043, float32 in chunks of 8192
# 2823-2857 and 2970; 16-bit rows in chunks of 8192, three rows in flight, 1676 and 1732. Two
# rows in flight, which is what 16-bit rows with float32 weights get (three do not fit), are
# untimed.
# (RMS, bytes per element): (most columns, columns a chunk, num_warps, rows in flight)
BWD_SPLIT = {(False, 2): (65536, 16384, 8, 3), (True, 2): (65536, 16384, 8, 3),
             (False, 4): (65536, 8192, 8, 3), (True, 4): (65536, 8192, 8, 3)}
# Longer rows, streamed through tiles: (BLOCK_N, rows per tile, num_warps). Backward sweep, same
# run: float16 4096 x 65536 0.57 of the ceiling (0.35 before the two-kernel split), 4096 x 16384 0.50
# (0.43); that split reads x and dy twice, which caps it near 3/5 of the ceiling.
FWD_TILED = (8192, 1, 16)
# How the tiled forward came to be fast. torch.compile's forward of rows of 4096-16384 columns is a
# looped reduction: x read evict_last for the statistics, then re-read evict_first from L2, one row
# a program, 2048-8192 columns a step, 16 warps (its autotuner's choices). Our tiled kernel, which
# then looped over rows in a persistent grid and over tiles in a loop of unknown length, ran at 0.75
# of it (layer norm float32 16384 x 5120, 3149 against 4205 GB/s, 2048 columns a tile, 16 warps).
# torch.compile's kernel knows the row length when it is compiled, so its tile loop has a known
# length, and the compiler unrolls it: each thread issues the loads of every tile at once. Ours now
# does the same with TILES, the tile count, as a constexpr (up to FWD_MAX_UNROLLED_TILES tiles a
# row; only the last tile is masked), and runs one row a program. H200, triton 3.6, torch 2.11,
# 2026-11-22, GB/s, layer norm float32 16384 x 5120 in one interleaved run: 2048 columns a tile in
# 16 warps 3873 unrolled, 3408 with the loop unrolled twice (loop_unroll_factor), 2526 pipelined
# (num_stages=2); in 8 warps 4167 unrolled; torch.compile 4224. At 4096 x 65536 (the default tiled
# path: 8192 columns a tile, 8 tiles) the old kernel ran at 2644 (torch.compile 2662) and, in a
# later run, the new one at 3116 (2656); in that run bfloat16 3158 (2416), RMS norm float32 3075
# (2726) and bfloat16 3429 (2866).
# The first pass shifts layer norm's values by the mean of the row's first 32 (see
# _norm_fwd_tiled_row). It used to take the mean of the first tile, a reduction across the
# program's warps: its barrier came before the other tiles' loads, so a program waited for one
# tile's round trip to memory before asking for the rest. Without it (H200, triton 3.6, torch
# 2.11, 2026-11-23, two interleaved runs, GB/s, the first tile's mean in parentheses, then
# torch.compile): bfloat16 4096 x 10000 3670 and 3457 (3507, 3272; 2906, 2481), 4096 x 12288
# 3710 and 3606 (3517, 3290; 3569, 2988), 4096 x 65536 3237 and 3192 (3149, 3146; 2410, 2417);
# float32 16384 x 5120 4149 and 4142 (4107, 4092; 4179, 4144), 4096 x 65536 3157 and 3159
# (3114, 3112; 2647, 2653). Streaming the 16-bit rows of 16384 columns, which are held, would
# gain about 4% with it (bfloat16, 2048 columns a tile in 16 warps: 3732 and 3703 against 3588
# and 3500 held; torch.compile 3803, 3764). It now does (FWD_STREAMED_FULL), after two more
# interleaved runs (H200, triton 3.6, torch 2.11, 2026-11-23, at commits 1063313 and b3f4a09) in
# which it gained at every row count tried, GB/s against held (torch.compile in parentheses):
# 4096 x 16384 bfloat16 3746 and 3739 against 3651 and 3649 (3814, 3814), float16 3847 and
# 3822 against 3779 and 3782 (3858, 3846); 8192 x 16384 bfloat16 3932 against 3797 (4027),
# float16 4002 against 3851 (3987); 16384 x 16384 bfloat16 4025 and 3977 against 3844 and 3832
# (4104, 4124), float16 4107 against 3942 (4149). 4096-column tiles and 8 warps were no better;
# rows of 8192 columns, streamed the same way, lost 12-13%.
# Rows of FWD_STREAMED_MIN_N < N <= max_n columns that would fill at most max_fill of their register
# block (a power of two) are streamed too, through BLOCK_N-wide tiles: (bytes per element, RMS):
# (max_fill, max_n, BLOCK_N). Their warps: the row's bytes over FWD_TILED_BYTES_PER_WARP[rms],
# rounded down to a power of two, 8 to 16. Held, such a row leaves a quarter or more of its lanes
# masked. From a sweep of block widths and warps (H200, same day, 4096 rows of 3000-65536 columns,
# both norms, float32 and bfloat16) and a check of the rule against holding the row in the same
# run, GB/s (torch.compile in parentheses): bfloat16 layer norm 4096 x 10000 3558 against 2678
# (2958), 4096 x 12288 3534 against 3164 (3610), 16384 x 5120 3536 against 3387 (2262); RMS norm
# 4096 x 10000 3911 against 3314 (3855), 4096 x 5120 3650 against 3498 (3399); float32 layer norm
# 16384 x 5120 4150 against 3993 (4229), 4096 x 10000 3757 against 3673 (3870); RMS norm 4096 x
# 8192 4082 against 3932 (4035), 16384 x 8192 4261 against 4149 (4268). Left held: 3000 columns
# (16-bit layer norm lost 11% streamed) and float32 rows of 6144 and 12288 columns (layer norm lost
# up to 4%), float32 RMS rows of 10000-16384 (lost 1-5%).
FWD_STREAMED_MIN_N = 4096
FWD_STREAMED = {(2, False): (0.75, 16384, 2048), (2, True): (0.75, 16384, 4096),
                (4, False): (0.625, 16384, 2048), (4, True): (1.0, 8192, 4096)}
# Row lengths streamed through FWD_STREAMED's tiles though they fill their register block:
# (bytes per element, RMS): lengths.
FWD_STREAMED_FULL = {(2, False): (16384,)}
FWD_TILED_BYTES_PER_WARP = {False: 2048, True: 1024}
# Forward rows streamed on one GPU where the tables above, set on an H200, hold or tile them
# otherwise. GPU name: {(bytes per element, RMS): {row length: (BLOCK_N, num_warps)}}. Only the
# lengths measured are listed; an entry covers float16 and bfloat16 alike. On an NVIDIA H100 80GB
# HBM3 (triton 3.6, torch 2.11, tools/record_versus_compile.py, one interleaved run a case, ratio
# to torch.compile): the run of 2026-12-05, the tables' choice in parentheses, then the run of
# 2026-12-07 at commit f271e38, with these entries in place:
# - layer norm, tiles of 4096 columns in 16 warps: float16 4096 x 16384 0.999 (0.977, 2048
#   columns in 16 warps), then 0.999; 16384 x 8192 1.009 (0.990, the row held in 8 warps), then
#   1.010; 4096 x 8192 1.006 (0.999), then 1.008; bfloat16 4096 x 16384 1.003 (0.981), then 1.009;
#   16384 x 8192 1.004 (0.988), then 0.999; float32 4096 x 8192 1.000 (0.982, the row held in 16
#   warps and read again), then 1.001; 16384 x 8192 0.999 (0.984), then 0.998. One loss: bfloat16
#   4096 x 8192, where the row held in 8 warps stays ahead (1.004 then, 1.008 against 0.993 now).
# - float32, tiles of 2048 columns: layer norm 16384 x 5120 in 16 warps 1.000 (0.981, 8 warps),
#   then 1.000; at 4096 x 4096 in 8 warps layer norm 0.998 (0.987, the row held in 16 warps and
#   read again), then 1.000, RMS norm 1.009 (0.995), then 1.005. With 16384 rows of 4096 columns
#   they lose 0.5% to the held row: layer norm 0.990 against 0.995, RMS norm 0.992 against 0.997.
# On that H100 two full records of the same code moved 0.5% or less from each other at nine
# memory-bound calls in ten. The benchmark's own run of the norms (tritonperf bench layer_norm
# rms_norm, commit 42c0b32, same day and versions; speed relative to the best torch variant
# against the full record of 789948c): layer norm float16 4096 x 16384 1.000 (0.978), 16384 x 8192
# 1.003 (0.990), 4096 x 8192 1.016 (1.004); bfloat16 4096 x 16384 1.004 (0.985), 16384 x 8192
# 0.998 (0.986), 4096 x 8192 1.004 (1.003); float32 4096 x 8192 0.997 (0.980), 16384 x 8192 1.000
# (0.986), 16384 x 5120 0.999 (0.983), 4096 x 4096 0.999 (0.993), 16384 x 4096 0.991 (0.995); RMS
# norm float32 4096 x 4096 1.010 (0.990), 16384 x 4096 0.995 (0.997).
# A second run of the memory-bound kernels on a fresh H100 (commit c4cad85, same day and versions)
# gave, in the same order: 1.001, 1.003, 1.015; 1.005, 1.000, 1.000; 0.997, 1.000, 1.001, 0.993,
# 0.992; RMS norm 1.005, 0.987. The cost at 16384 rows of 4096 float32 columns held in both runs.
FWD_BY_GPU = {
    "NVIDIA H100 80GB HBM3": {
        (2, False): {8192: (4096, 16), 16384: (4096, 16)},
        (4, False): {4096: (2048, 8), 5120: (2048, 16), 8192: (4096, 16)},
        (4, True): {4096: (2048, 8)},
    },
}
# The tiled forward unrolls its passes over rows of up to this many tiles (see _norm_fwd_tiled_row).
FWD_MAX_UNROLLED_TILES = 16
# Float32 rows of FWD_FLOAT32_LONG[0] < N <= FWD_FLOAT32_LONG[1] columns are held in registers in 32
# warps and read again after each reduction (FWD_FLOAT32_CONFIGS, FWD_RELOAD), past FWD_CONFIGS'
# last block. Same day, 4096 x 32768, GB/s against the tiled path (torch.compile in parentheses):
# RMS norm 4193 against 3425 (4189); layer norm 3239 against 3185 (3719), 3508 in 16 warps. In
# bfloat16 the tiled path was faster (layer norm 3562 against 3009 held).
FWD_FLOAT32_LONG = (24576, 32768)
# Rows of FWD_SPLIT_N[0] < N <= FWD_SPLIT_N[1] columns (N a multiple of STAGED_VIEW, at least as
# many rows as SMs, on Hopper, no knob given) are shared out among programs by
# norm_fwd_split_kernel, in chunks of FWD_SPLIT's columns, in its warps: (bytes per element of x):
# (columns a chunk, num_warps); up to FWD_SPLIT_RING rows in flight, as many as shared memory
# takes. Interleaved on an H200 (triton 3.6, torch 2.11, 2026-11-29, seven rounds, 4096 x 65536,
# fractions of the copy ceiling, the path it replaced in parentheses): layer norm bfloat16 0.809
# (tiled, 0.761), float16 0.810 (0.775), float32 0.906 (0.742); RMS norm bfloat16 0.919 (staged,
# 0.897), float32 0.910 (0.884). The recorded run of this kernel (H200, same versions and day,
# commit 3e0f82d) agrees in float32 (layer norm 0.92, RMS norm 0.92) but not in 16-bit: layer norm
# bfloat16 0.75, float16 0.76, RMS norm bfloat16 0.88, float16 0.89, where the record before it
# (commit 194bc97) had the replaced paths at 0.77, 0.77, 0.90 and 0.90. A second interleaved run
# (same GPU and versions, 2026-12-01, the replaced paths in parentheses) sides with the record:
# layer norm bfloat16 0.751 (tiled 0.751; the default before, 0.743), float16 0.760 (0.755,
# 0.746), float32 0.924 (0.740); RMS norm bfloat16 0.885 (staged 0.900), float16 0.890 (0.901),
# float32 0.917 (0.868). In 16-bit the split ties layer norm's tiled path, and loses 1-2% to the
# whole-row RMS norm kernel it replaced (removed; the tiled path left in its place ran at 0.80).
# A 16-bit program moves half the bytes a row that a float32 one does, so it pays for the
# exchange twice as often per byte. Other runs on the same GPU that day, also interleaved: layer
# norm bfloat16 in 16 warps 0.690-0.701, 4 rows in flight instead of 7 0.765 (0.752); each chunk's
# two sums in one reduction about a shift read from memory (x's first column of the chunk) 0.701,
# float16 0.713, float32 0.935 (0.927).
# How it got there (2026-11-29):
# - The first version published its shares as the backward then did (two stores, a release counter,
#   an acquire wait, then the loads): layer norm bfloat16 0.589, float32 0.812. Timing only, with
#   wrong results: without the wait 0.669; without reading the shares at all 0.806; without the
#   counter's release (a fence that waits for the program's earlier stores of y) either 0.866
#   (float32 in chunks of 8192: 0.897). The exchange was the cost, not the row's work.
# - Writing y two or three rows after a row's sums instead of one changed nothing: 0.59-0.60.
# - One 8-byte exchange per share, read ahead of use, took bfloat16 from 0.589 to 0.809.
# - Chunks of 8192 16-bit columns (eight programs a row) ran at 0.556, 4096 x 16384 in chunks of
#   8192 at 0.600 (held in registers: 0.873): the exchange costs about the same per row at any
#   chunk size, so the chunks are as large as the weights in registers allow. float32 in chunks
#   of 8192 in 8 warps: layer norm 0.868, RMS norm 0.916 (this table's: 0.906, 0.910).
#   16 warps lost 0.02 in bfloat16; the weights in shared memory instead of registers (with the
#   first exchange) changed nothing.
# Before it, RMS norm's rows of this length were staged whole by one program (weights read from
# L2 a chunk ahead of use: 0.88 to 0.92 of the ceiling, against 0.72 loaded where used), and
# layer norm, staged the same way, lost to its tiled path (float32 4096 x 65536 0.739 against
# 0.748): each row read the weights and the biases again from L2, as many bytes as x itself in
# float32 (0.872 with the bias the weight tensor itself, 0.895 without a bias). A tiled forward
# that took rows a group at a time, to load the weights and biases once for the group, lost at
# every setting tried (bfloat16 4096 x 65536: one row 0.773, two 0.743, four rows of 4096
# columns 0.600).
# Nor was a layer norm forward of whole rows staged in a ring, a few rows ahead, one program per
# SM, its weights and biases copied into shared memory once (or held in registers), which spared
# every row their reads from L2. Interleaved on an H200 (triton 3.6, torch 2.11, 2026-11-29,
# seven rounds, GB/s, the default path in parentheses): bfloat16 4096 x 16384, three rows in 16
# warps 3451, four 3429, three in 8 warps 3552, the parameters in registers 3303 (3733); float16
# 3375 and 3406 in 8 warps (3832); bfloat16 4096 x 8192 3251-3462 (3697); float32 4096 x 4096
# 3266-3385 (3754); bfloat16 16384 x 16384 3742 (4053).
FWD_SPLIT_N = (32768, 65536)
FWD_SPLIT = {2: (16384, 8), 4: (16384, 16)}
FWD_SPLIT_RING = 8
# The tiled backward's second read of x and dy was meant to come from L2 in a one-kernel version,
# tried and not kept: the same column tiles, the rows in bands of about 60 (two bands fit in half
# of L2); each program wrote its sums for band b, counted itself done on a counter of its band and
# row group, waited for its group's counter of band b - 1 to be full, and wrote dx for that band
# (a cooperative launch, so that every program runs at once). Interleaved H200 runs (triton 3.6,
# torch 2.11, 2026-11-24, layer norm bfloat16 4096 x 65536, fractions of the copy ceiling): two
# kernels 0.570-0.576; one kernel, 5 programs an SM, 0.506-0.532, and 0.523 with the wait left out
# (wrong gradients, timing only): the waits were not the cost. Under Nsight Compute it read 1.46 GB
# from memory (the two kernels 2.15 GB, one read 1.07 GB) and took 851 us against 325 + 403 us,
# its warps stalled on loads: a program's rows of a band are too few for its loads to overlap. With
# fewer programs an SM and longer pipelined loops: 0.10-0.44.
BWD_TILED = (2048, 1, 4)
# The backward that holds rows in registers runs this many programs per SM, each over a contiguous
# group of rows, whatever more the SM could hold: every program adds a row of partial weight sums
# for sum_partials_kernel to read. In an interleaved H200 run (triton 3.6, torch 2.11, 2026-11-23,
# both norms, three dtypes, the benchmark's register-path shapes), one program per SM against as
# many as fit at once (two for 16-bit rows of 1024 columns, one at every other shape but 256
# columns, whose 128 tiles are fewer than the SMs): 16-bit 4096 x 1024, layer norm bfloat16 2097
# against 1887 GB/s, float16 2061 against 1917; RMS norm 2282 against 2074, 2229 against 2072;
# in an earlier run 16384 x 1024 gained 4-5%. Everywhere else -1.7% to +1.1% (the same launch at
# 256 columns: run-to-run noise); two per SM lost up to 17% where one was already the default.
BWD_PROGRAMS_PER_SM = 1
# The tiled backward's grid is column tiles by row groups; it launches about this many times as many
# programs as the GPU runs at once.
TILED_BWD_WAVES = 2
# sum_partials_kernel's tile: BLOCK_P partial rows by at most SUM_BLOCK_C columns, fewer (down to
# SUM_MIN_BLOCK_C) until there are SUM_PROGRAMS_PER_SM programs per SM: the sum is short, and a few
# programs each walking hundreds of partial rows made it a sizeable share of the backward at 4096
# columns. Its loop is pipelined SUM_STAGES deep. At 4096 x 1024 the sum took 2.2 us of an 8 us
# RMS norm backward (H200, torch profiler, bfloat16). Interleaved on an H200 (triton 3.6, torch
# 2.11, 2026-11-24, 132 partial rows, one or two sums, per call with its launch): 1024 columns
# 3.97-4.10 us with the earlier 16 rows x 32 columns, 2 programs per SM, no pipelining; 2.74-2.93
# with 32 x 8 in 3 stages; 4096 columns 4.34-4.63 against 3.41-3.97 (32 x 8 or 16).
# Tried and not kept: launching the sum with programmatic dependent launch (launch_pdl; the kernel
# before it calls gdc_launch_dependents, the sum waits in gdc_wait), so that its launch overlaps
# that kernel. On an NVIDIA H100 80GB HBM3 (triton 3.6, torch 2.11, 2026-11-28, interleaved, us a
# call, without PDL in parentheses, then with no sum kernel at all, wrong dweight): with the
# trigger at the start of the register-path kernel, layer norm float16 4096 x 256 10.0 (10.4; 8.3),
# 4096 x 4096 42.2 (41.1; 39.4), 4096 x 16384 164.3 (161.1; 156.6), float32 16384 x 5120 371.1
# (366.5; 365.1), RMS norm float16 4096 x 256 7.8 (8.4; 6.5); with it after the row loop, every
# shape within 0.5 us of the launch without PDL. The sum costs 1.7-3 us of a call at every size.
# Nor was the sum inside the register-path kernel: each program wrote its partial row, waited at a
# grid-wide barrier (a cooperative launch; two counters in global memory, which the last program
# out set back to zero) and then summed its own share of the columns from L2. Interleaved on an
# H200 (triton 3.6, torch 2.11, 2026-11-29, seven rounds, us a call, this kernel in parentheses):
# layer norm bfloat16 4096 x 4096 33.2 (31.8), 4096 x 8192 59.5 (58.3), 16384 x 8192 209.9
# (206.2); float32 4096 x 4096 56.1 (56.1), 16384 x 5120 262.5 (260.3); RMS norm within 0.5 us
# either way at most shapes. A second run, which read all the partial rows of a program's columns
# at once, came out the same. The barrier waits for the slowest program just as the kernel boundary
# does, and one program an SM sums more slowly than this kernel's four.
# Fitted as a fixed time plus a time per row over 2048-32768 rows (H200, triton 3.6, torch 2.11,
# 2026-11-29, bfloat16 layer norm, us of fixed time: the whole call / without this kernel /
# without weight gradients): 4096 columns 7.0 / 4.9 / 4.9, 8192 columns 9.5 / 6.7 / 4.1, 16384
# columns (staged) 26.9 / 21.9 / 9.1, 65536 columns (split, 512-8192 rows) 28.6 / 23.7 / 13.6.
# In the staged kernel at 2048 x 16384 (same day, Nsight Compute), 17% of the warp stall samples
# fall on code that runs once a program: 7% before the loop (the weights' copy into shared memory
# waits for their loads), 10% after it (the partial rows' stores, 17 MB from 132 programs at
# once). Masking those stores off saved 4.3-4.6 us a call at 2048-8192 rows.
# Fewer partial rows would need programs that add theirs together on chip first: a thread-block
# cluster reducing through distributed shared memory. Triton 3.6 cannot compile that from Gluon
# (sm_90, two CTAs a cluster): a gl.sum over an axis split across the cluster's CTAs fails an
# assertion in the reduction's lowering, and a convert_layout that moves data between the CTAs
# fails in LLVM lowering (nvvm.mapa given a shared-memory pointer). Triton 3.9 compiles both to
# mapa and ld.shared::cluster; this project's reference is 3.6. What it could win at most was
# timed on the register path by letting only one program in k write its partial row (wrong
# dweight, timing only: as if clusters of k programs had added their rows together on chip for
# free). Interleaved on an H200 (triton 3.6, torch 2.11, 2026-11-29, seven rounds, fractions of
# the copy ceiling, k = 1 / 2 / 4 / 8 / 16, then without weight gradients): layer norm bfloat16
# 4096 x 8192 0.811 / 0.824 / 0.835 / 0.838 / 0.846, 0.893; float16 the same within 0.01; bfloat16
# 4096 x 4096 0.730 / 0.739 / 0.748 / 0.752 / 0.757, 0.783; RMS norm bfloat16 4096 x 4096 0.768 /
# 0.786 / 0.787 / 0.790 / 0.790, 0.842. Clusters of 16, more than the portable limit of 8, would
# still leave 16-bit layer norm at 4096 x 8192 short of 0.85.
# Nor did other launches of the register path help at 4096 rows (H200, triton 3.6, torch 2.11,
# 2026-12-07, two interleaved rounds, both norms and both 16-bit dtypes, 4096 and 8192 columns):
# 4 or 16 warps, two programs an SM, 2 or 4 rows a tile all lost, or came within 0.6% of the
# default. At 4096 columns 2 rows a tile is the default itself: timed a second time, it moved by
# up to 0.8%. Without weight gradients these backwards ran at 0.79-0.85 of the copy ceiling at
# 4096 columns and 0.87-0.90 at 8192 (with them 0.73-0.77 and 0.79-0.84); a torch add of the same
# bytes at 0.92-0.94 and 0.96-0.99.
SUM_BLOCK_P, SUM_BLOCK_C, SUM_WARPS, SUM_STAGES = 32, 256, 4, 3
SUM_MIN_BLOCK_C = 8
SUM_PROGRAMS_PER_SM = 4


@dataclass(frozen=True)
class NormConfig:
    """How a norm kernel is launched.

    Attributes:
        block_n: columns per tile, a power of two; ``block_n >= N`` keeps whole rows in registers,
            smaller values stream longer rows through tiles (the forward in two passes over each
            row; the backward in two kernels, over column tiles of groups of rows).
        rows: rows per tile.
        num_warps: warps per program.
        programs: programs launched (fewer than the tiles: a persistent grid, each handles several);
            for the tiled backward, the row groups each column tile is split into.
        num_stages: software-pipelining depth of the loops over rows (1: none; not the tiled forward).
            The backward's launch lowers a default that would not fit in the GPU's shared memory.
        tiled: True when rows are streamed through tiles rather than held in registers.
        reload: register path: read each tile again, from cache, after each row reduction
            instead of holding it in registers across them.
        staged: rows copied into shared memory, ``num_stages`` rows in flight, one program per
            SM. The forward (``FWD_SPLIT``): chunks of ``block_n`` columns of x, one per program
            (``split``). The backward (``BWD_STAGED``): rows of x and dy copied whole, ``block_n``
            elements each (chunks of rows with ``split``).
        split: staged: programs that share each row, a chunk of ``block_n`` columns each
            (``FWD_SPLIT``, ``BWD_SPLIT``); ``programs`` is a multiple of it.
    """

    block_n: int
    rows: int
    num_warps: int
    programs: int
    num_stages: int = 1
    tiled: bool = False
    reload: bool = False
    staged: bool = False
    split: int = 1


def _power_of_two(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value & (value - 1):
        raise ValueError(f"{name} must be a positive power of two, got {value!r}")


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _bwd_staging(device, M: int, N: int, itemsize: int, rms: bool, weight_itemsize: int) -> tuple[int, int, int, int] | None:
    """``(block_n, num_warps, rows in flight, split)`` where the backward stages rows (``BWD_STAGED``,
    ``BWD_SPLIT``), else None."""
    whole, split_rule = BWD_STAGED.get((rms, itemsize)), BWD_SPLIT.get((rms, itemsize))
    if whole is None or N < whole[0] or not staged_shape(device, M, N, itemsize):
        return None
    if N <= whole[1]:  # a chunk of a power of two of runs; the copy fills the runs past N with zeros
        block_n, split, (warps, ring) = next_power_of_2(N), 1, whole[2:]
    elif split_rule is not None and N <= split_rule[0] and cdiv(N, split_rule[1]) <= runtime.sm_count(device):
        block_n, warps, ring = split_rule[1:]
        split = cdiv(N, block_n)
    else:
        return None
    ring = rows_in_flight(device, ring, 2 * itemsize * block_n, weight_itemsize * block_n)  # x and dy; the weights
    # A split row's pass 2 runs after the next row's pass 1: two rows at least.
    return (block_n, warps, ring, split) if ring >= (1 if split == 1 else 2) else None


def _fwd_staging(device, M: int, N: int, itemsize: int) -> tuple[int, int, int, int] | None:
    """``(block_n, num_warps, rows in flight, split)`` where the forward splits rows over programs
    (``FWD_SPLIT``), else None."""
    rule = FWD_SPLIT.get(itemsize)
    if rule is None or not FWD_SPLIT_N[0] < N <= FWD_SPLIT_N[1] or not staged_shape(device, M, N, itemsize):
        return None
    block_n, warps = rule
    split = cdiv(N, block_n)
    ring = rows_in_flight(device, FWD_SPLIT_RING, block_n * itemsize)
    # A row's pass 2 runs after the next row's pass 1: two rows at least.
    return (block_n, warps, ring, split) if ring >= 2 and split <= runtime.sm_count(device) else None


def _fwd_streamed(device, N: int, itemsize: int, rms: bool) -> tuple[int, int] | None:
    """``(BLOCK_N, num_warps)`` for rows the forward streams though they fit in registers
    (``FWD_BY_GPU`` for this device's name first, then ``FWD_STREAMED``), else None."""
    by_gpu = FWD_BY_GPU.get(runtime.device_name(device), {}).get((itemsize, rms), {})
    if N in by_gpu:
        return by_gpu[N]
    rule = FWD_STREAMED.get((itemsize, rms))
    if rule is None:
        return None
    max_fill, max_n, block_n = rule
    full = N in FWD_STREAMED_FULL.get((itemsize, rms), ())
    if not full and (not FWD_STREAMED_MIN_N < N <= max_n or N > max_fill * next_power_of_2(N)):
        return None
    warps = floor_power_of_2(max(N * itemsize // FWD_TILED_BYTES_PER_WARP[rms], 1))
    return block_n, min(max(warps, 8), 16)


@functools.lru_cache(maxsize=4096)  # a pure function of its arguments, called on every launch
def norm_config(
    M: int,
    N: int,
    direction: Direction,
    device: torch.device | str,
    *,
    itemsize: int = 2,
    per_sm: int | None = None,
    block_n: int | None = None,
    rows: int | None = None,
    num_warps: int | None = None,
    programs: int | None = None,
    num_stages: int | None = None,
    rms: bool = False,
    allow_staged: bool = True,
    weight_itemsize: int = 4,
) -> NormConfig:
    """The launch configuration for ``M`` rows of ``N`` columns; explicit arguments override the defaults.

    Plain heuristics from the shape and the device (no autotuning, so no tuning runs and the same
    choice in interpreter mode): the tables ``FWD_CONFIGS`` and ``BWD_CONFIGS`` (then ``BWD_WIDE`` up
    to ``BWD_WIDE_N`` columns), with ``FWD_FLOAT32_CONFIGS`` and ``BWD_FLOAT32_CONFIGS`` first for
    float32, when rows fit in registers, ``FWD_TILED`` / ``BWD_TILED`` above. The forward also
    streams rows that would fill little of their register block (``FWD_STREAMED``;
    ``FWD_STREAMED_FULL`` names lengths streamed though they fill it, ``FWD_BY_GPU`` those streamed
    on one GPU, by its name) and holds float32 rows of ``FWD_FLOAT32_LONG`` columns. The forward
    launches one program per tile (a row, on the tiled path) unless ``programs`` asks for a
    persistent grid. The backward's grid is persistent: ``programs``
    defaults to ``BWD_PROGRAMS_PER_SM`` programs per SM, never more than there are tiles. The tiled
    backward's ``programs`` counts row groups per column tile, by default enough for
    ``TILED_BWD_WAVES`` full waves of ``per_sm`` programs per SM (the launcher measures it with
    :func:`programs_per_sm`; left at None, an estimate from ``num_warps``). ``itemsize`` is the
    bytes per element of ``x``. Rows one to a
    tile read each row again after each reduction (``reload``) in the forward for the
    ``FWD_RELOAD`` entries of ``(itemsize, rms)``, in the backward from ``BWD_WIDE_N`` columns.
    On a Hopper GPU, with no knob given, the forward stages rows of ``FWD_SPLIT_N`` columns in
    shared memory, split over several programs (``staged``, ``split``), and the backward those of
    ``BWD_STAGED`` (longer ones, up to ``BWD_SPLIT``, split too), unless ``allow_staged`` is False.
    ``weight_itemsize`` is the bytes per element of the weights (0: none), which the staged
    backward keeps in shared memory.
    """
    for name, value in (("block_n", block_n), ("rows", rows), ("num_warps", num_warps)):
        if value is not None:
            _power_of_two(name, value)
    for name, value in (("programs", programs), ("num_stages", num_stages)):
        if value is not None:
            _positive(name, value)
    if num_warps is not None and num_warps > 32:
        raise ValueError(f"num_warps must be at most 32, got {num_warps}")
    pinned = any(k is not None for k in (block_n, rows, num_warps, programs, num_stages))
    staging = None
    if allow_staged and not pinned:
        staging = (_fwd_staging(device, M, N, itemsize) if direction == "fwd"
                   else _bwd_staging(device, M, N, itemsize, rms, weight_itemsize))
    if staging:
        block_n, warps, ring, split = staging
        # `tiled` as the two paths always had it: the forward's split rows count as streamed ones;
        # the backward's launcher takes its staged branch before it reads the flag.
        return NormConfig(block_n, 1, warps, runtime.sm_count(device) // split * split, num_stages=ring,
                          tiled=direction == "fwd", staged=True, split=split)
    if direction == "fwd":
        table, tiled_default = FWD_CONFIGS, FWD_TILED
    else:
        table, tiled_default = BWD_CONFIGS, BWD_TILED
    wide_warps, wide_stages = BWD_WIDE.get((rms, itemsize), (None, 1)) if direction == "bwd" else (None, 1)
    longest_held = BWD_WIDE_N if wide_warps else table[-1][0]
    whole_row = next_power_of_2(max(N, 1))
    streamed = _fwd_streamed(device, N, itemsize, rms) if direction == "fwd" else None
    if block_n is None:
        long_float32 = direction == "fwd" and itemsize == 4 and FWD_FLOAT32_LONG[0] < N <= FWD_FLOAT32_LONG[1]
        block_n = whole_row if whole_row <= longest_held or long_float32 else tiled_default[0]
        if streamed is not None:
            block_n = streamed[0]
    sms = runtime.sm_count(device)
    if block_n >= N:  # whole rows in registers
        default_rows, default_warps = next(((r, w) for b, r, w in table if b >= block_n), (1, wide_warps or table[-1][2]))
        if itemsize == 4:
            float32_table = FWD_FLOAT32_CONFIGS if direction == "fwd" else BWD_FLOAT32_CONFIGS
            default_rows, default_warps = float32_table.get(block_n, (default_rows, default_warps))
        rows = rows or default_rows
        if direction == "bwd":
            reload = block_n >= BWD_WIDE_N
        else:
            reload = rows == 1 and block_n in FWD_RELOAD.get((itemsize, rms), ())
            if reload and itemsize in FWD_RELOAD_COLUMNS_PER_WARP:
                default_warps = min(floor_power_of_2(N // FWD_RELOAD_COLUMNS_PER_WARP[itemsize]), 32)
        num_warps = num_warps or default_warps
        tiles = cdiv(M, rows)
        if direction == "fwd":
            programs = programs or tiles  # one tile per program (see norm_fwd_kernel's ONE_TILE)
        programs = programs or sms * BWD_PROGRAMS_PER_SM
    else:  # long rows, two passes over tiles
        reload = False
        rows = rows or tiled_default[1]
        num_warps = num_warps or (streamed[1] if streamed is not None else tiled_default[2])
        if direction == "fwd" and rows != 1:
            raise ValueError(f"the tiled forward takes one row at a time (rows=1), got rows={rows}")
        tiles = cdiv(M, rows)
        if direction == "fwd":
            programs = programs or tiles  # one row per program, as on the register path
        else:  # row groups per column tile: enough for TILED_BWD_WAVES full waves
            resident = sms * (per_sm or max(1, 16 // num_warps))
            programs = programs or cdiv(TILED_BWD_WAVES * resident, cdiv(N, block_n))
    if num_stages is None and direction == "bwd":
        num_stages = wide_stages if block_n == BWD_WIDE_N and block_n >= N else None
        num_stages = num_stages or min(BWD_NUM_STAGES, 1 + BWD_SHARED_BYTES // (2 * rows * block_n * itemsize))
    return NormConfig(block_n, rows, num_warps, max(1, min(programs, tiles)), num_stages or 1, tiled=block_n < N,
                      reload=reload)


# -- launchers -----------------------------------------------------------------------------------
def _as_rows(t: torch.Tensor, n: int) -> torch.Tensor:
    """``t`` as an ``(M, n)`` matrix whose rows are contiguous: a view when strides allow, else a copy."""
    rows = t.reshape(-1, n)
    if rows.stride(1) != 1 and n > 1:
        rows = rows.contiguous()
    return rows


def _check_eps(eps: float) -> None:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")


def _check_inputs(x: torch.Tensor, params: dict[str, torch.Tensor | None], eps: float) -> None:
    """Validate ``x`` and its per-column parameters; raise before anything is launched."""
    validation.check_tensor("x", x)
    given = {name: validation.check_tensor(name, t) for name, t in params.items() if t is not None}
    validation.check_device(x=x, **given)
    validation.check_dtype("x", x, SUPPORTED_DTYPES)
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension (the one normalized), got a 0-d tensor")
    n = x.shape[-1]
    for name, t in given.items():
        if t.dim() != 1 or t.shape[0] != n:
            raise ValueError(f"{name} must have shape ({n},), the last dimension of x, got {tuple(t.shape)}")
        validation.check_dtype(name, t, dict.fromkeys((x.dtype, torch.float32)))
    if len(given) == 2:
        validation.check_same("dtype", **given)
    _check_eps(eps)


_PER_SM: dict[tuple, int] = {}


def programs_per_sm(kernel, args: tuple, consts: dict, num_warps: int, device: torch.device) -> int:
    """How many programs of ``kernel``, compiled for these arguments, one SM runs at once.

    A persistent grid must not launch more programs than the GPU runs at once: the extra ones
    would start only when others had finished their whole share, and the pass would take two
    rounds. The limits are the compiled kernel's registers and shared memory and the SM's
    threads; the answer is cached per kernel, constants, warps and dtypes. In interpreter mode,
    and should the compiler's report be unavailable, a plain estimate from ``num_warps``.
    """
    estimate = max(1, 16 // num_warps)
    if device.type != "cuda":
        return estimate
    key = compile_key(kernel, args, consts, num_warps, device)
    if key not in _PER_SM:
        try:
            compiled = kernel.warmup(*args, grid=(1,), **consts, num_warps=num_warps)
            getattr(compiled, "_init_handles", lambda: None)()  # loads the binary: sets n_regs
            n_regs, shared = compiled.n_regs, compiled.metadata.shared
        except (AttributeError, TypeError):  # a Triton without these entry points
            return estimate
        props = torch.cuda.get_device_properties(device)
        threads = 32 * num_warps
        limits = [props.max_threads_per_multi_processor // threads, 32]
        if n_regs:  # registers are allocated per warp, in units of 256
            per_warp = -(-n_regs * 32 // 256) * 256
            limits.append(getattr(props, "regs_per_multiprocessor", 65536) // (per_warp * num_warps))
        if shared:
            limits.append(props.shared_memory_per_multiprocessor // shared)
        _PER_SM[key] = max(1, min(limits))
    return _PER_SM[key]


def _norm_fwd(x, weight, bias, eps, out, rms, knobs):
    n = x.shape[-1]
    y = torch.empty_like(x, memory_format=torch.contiguous_format) if out is None else out
    m = math.prod(x.shape[:-1])
    mean = torch.empty(m, dtype=torch.float32, device=x.device)
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    if m == 0 or n == 0:
        mean.fill_(float("nan"))  # the statistics of empty rows are undefined, as in torch
        rstd.fill_(float("nan"))
        return y, mean, rstd
    cfg = norm_config(m, n, "fwd", x.device, itemsize=x.element_size(), rms=rms, **knobs)
    x2, y2 = _as_rows(x, n), y.view(-1, n)
    w = weight.contiguous() if weight is not None else x2
    b = bias.contiguous() if bias is not None else x2
    if cfg.staged and stageable(x2):
        shares = unpublished_shares(m, cfg.split, x.device)
        norm_fwd_split_kernel[(cfg.programs,)](
            staged_descriptor(x2, cfg.block_n // STAGED_VIEW), y2, w, b, mean, rstd, shares, m, n, y2.stride(0),
            float(eps), RMS=rms, HAS_W=weight is not None, HAS_B=bias is not None, RING=cfg.num_stages,
            SPLIT=cfg.split, SHARES=next_power_of_2(cfg.split), WARPS=cfg.num_warps, num_warps=cfg.num_warps,
            launch_cooperative_grid=True)
        return y, mean, rstd
    if cfg.staged:  # rows the copy engine cannot read (not on 16 bytes): the tiled path
        cfg = norm_config(m, n, "fwd", x.device, itemsize=x.element_size(), rms=rms, allow_staged=False)
    args = (x2, y2, w, b, mean, rstd, m, n, x2.stride(0), y2.stride(0), float(eps))
    consts = {"RMS": rms, "HAS_W": weight is not None, "HAS_B": bias is not None, "BLOCK_N": cfg.block_n,
              "ALIGN": row_align(n, x2.stride(0), y2.stride(0))}
    consts["ONE_TILE"] = cfg.programs >= cdiv(m, cfg.rows)
    if cfg.tiled:
        kernel = norm_fwd_tiled_kernel
        tiles = cdiv(n, cfg.block_n)
        consts["TILES"] = tiles if tiles <= FWD_MAX_UNROLLED_TILES else 0
    else:
        kernel = norm_fwd_kernel
        consts |= {"ROWS": cfg.rows, "NUM_STAGES": cfg.num_stages, "RELOAD": cfg.reload}
    kernel[(cfg.programs,)](*args, **consts, num_warps=cfg.num_warps)
    return y, mean, rstd


def _norm_bwd(dy, x, weight, bias, mean, rstd, dx, rms, grad_weight, grad_bias, knobs):
    n, m = x.shape[-1], math.prod(x.shape[:-1])
    dx = torch.empty_like(x, memory_format=torch.contiguous_format) if dx is None else dx
    sums = [t for t, wanted in ((weight, grad_weight), (bias, grad_bias)) if t is not None and wanted]
    # dweight and dbias share one [S, N] tensor, filled by one launch of sum_partials_kernel.
    grads = torch.empty((len(sums), n), dtype=sums[0].dtype if sums else x.dtype, device=x.device)
    dw = grads[0] if weight is not None and grad_weight else None
    db = grads[-1] if bias is not None and grad_bias else None
    if m == 0 or n == 0:
        grads.zero_()  # no rows: the weight gradients are sums of nothing
        return dx, dw, db
    sizes = {"itemsize": x.element_size(), "rms": rms}
    cfg = norm_config(m, n, "bwd", x.device, **sizes, **knobs, weight_itemsize=weight.element_size() if weight is not None else 0)
    x2, dy2, dx2 = _as_rows(x, n), _as_rows(dy, n), dx.view(-1, n)
    w = weight.contiguous() if weight is not None else x2
    stats = mean if mean is not None else rstd
    if cfg.staged and stageable(x2) and stageable(dy2):
        groups = cfg.programs // cfg.split
        partials = torch.empty((len(sums), groups, n), dtype=torch.float32, device=x.device)
        shares = unpublished_shares(m, cfg.split, x.device) if cfg.split > 1 else rstd  # not read unless split
        runs = cfg.block_n // STAGED_VIEW
        norm_bwd_staged_kernel[(cfg.programs,)](
            staged_descriptor(x2, runs), staged_descriptor(dy2, runs), dx2, w, stats, rstd,
            *_partial_rows(partials, dw, db), shares,
            m, n, dx2.stride(0), RMS=rms, HAS_W=weight is not None, DW=dw is not None, DB=db is not None,
            RING=cfg.num_stages, SPLIT=cfg.split, SHARES=next_power_of_2(cfg.split), WARPS=cfg.num_warps,
            num_warps=cfg.num_warps,
            launch_cooperative_grid=cfg.split > 1)
        _sum_partials(partials, grads)
        return dx, dw, db
    if cfg.staged:  # rows the copy engine cannot read (not on 16 bytes): the default of the other paths
        cfg = norm_config(m, n, "bwd", x.device, **sizes, allow_staged=False)
    consts = {"RMS": rms, "HAS_W": weight is not None, "DW": dw is not None, "DB": db is not None,
              "ROWS": cfg.rows, "BLOCK_N": cfg.block_n, "NUM_STAGES": cfg.num_stages,
              "ALIGN": row_align(n, x2.stride(0), dy2.stride(0), dx2.stride(0))}
    if not cfg.tiled:
        consts["RELOAD"] = cfg.reload
    n_tiles = cdiv(n, cfg.block_n)  # 1 on the register path
    row_sums = torch.empty((1 if rms else 2, m, n_tiles) if cfg.tiled else (1,), dtype=torch.float32, device=x.device)

    def arguments(programs: int, partials: torch.Tensor) -> tuple:
        rows_per_program = cdiv(cdiv(m, cfg.rows), programs) * cfg.rows
        dw_part, db_part = _partial_rows(partials, dw, db)
        if cfg.tiled:
            return (x2, dy2, w, stats, rstd, row_sums, dw_part, db_part, m, n, x2.stride(0), dy2.stride(0), rows_per_program)
        return (x2, dy2, dx2, w, stats, rstd, dw_part, db_part, m, n, x2.stride(0), dy2.stride(0), dx2.stride(0), rows_per_program)

    kernel = norm_bwd_sums_kernel if cfg.tiled else norm_bwd_kernel
    fit = knobs.get("num_stages") is None  # the tables' stage counts come from Hopper; lowered where they do not fit
    if fit:
        consts["NUM_STAGES"] = fit_stages(kernel, arguments(cfg.programs, rstd[None]), consts, cfg.num_warps, x.device)
    if cfg.tiled and knobs.get("programs") is None:  # as many programs as the GPU runs at once
        per_sm = programs_per_sm(kernel, arguments(cfg.programs, rstd[None]), consts, cfg.num_warps, x.device)
        cfg = norm_config(m, n, "bwd", x.device, per_sm=per_sm, **sizes, **(knobs | {"num_stages": consts["NUM_STAGES"]}))
    rows_per_program = cdiv(cdiv(m, cfg.rows), cfg.programs) * cfg.rows
    programs = cdiv(m, rows_per_program)  # every program launched owns at least one row
    partials = torch.empty((len(sums), programs, n), dtype=torch.float32, device=x.device)
    # The tiled path's grid: (column tiles, row groups); the register path's: (row groups,).
    grid = (n_tiles, programs) if cfg.tiled else (programs,)
    kernel[grid](*arguments(programs, partials), **consts, num_warps=cfg.num_warps)
    if cfg.tiled:
        launch(norm_bwd_dx_kernel, grid,
               (x2, dy2, dx2, w, stats, rstd, row_sums, m, n, x2.stride(0), dy2.stride(0), dx2.stride(0), rows_per_program),
               {"RMS": rms, "HAS_W": weight is not None, "ROWS": cfg.rows, "BLOCK_N": cfg.block_n,
                "TILES": next_power_of_2(n_tiles), "NUM_STAGES": cfg.num_stages, "ALIGN": consts["ALIGN"]},
               cfg.num_warps, fit=fit)
    _sum_partials(partials, grads)
    return dx, dw, db


def _partial_rows(partials: torch.Tensor, dw: torch.Tensor | None, db: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The dweight and dbias partial rows of ``partials``; ``partials`` itself (never written) for a gradient not wanted."""
    return (partials[0] if dw is not None else partials, partials[-1] if db is not None else partials)


def _sum_partials(partials: torch.Tensor, grads: torch.Tensor) -> None:
    """dweight and dbias (the rows of ``grads``, ``[S, n]``): the column sums of ``partials``, ``[S, programs, n]``."""
    sums, n = grads.shape
    programs = partials.shape[1]
    if sums:
        sms = runtime.sm_count(grads.device)
        block_c = max(SUM_MIN_BLOCK_C, min(SUM_BLOCK_C, next_power_of_2(cdiv(n * sums, SUM_PROGRAMS_PER_SM * sms))))
        grid = (cdiv(n, block_c), sums)
        sum_partials_kernel[grid](partials, grads, programs, n, BLOCK_P=SUM_BLOCK_P, BLOCK_C=block_c, ALIGN=row_align(n),
                                  num_warps=SUM_WARPS, num_stages=SUM_STAGES)


def _check_bwd(dy, x, params, mean, rstd, dx):
    _check_inputs(x, params, 0.0)
    validation.check_tensor("dy", dy)
    validation.check_device(x=x, dy=dy)
    validation.check_same("dtype", x=x, dy=dy)
    validation.check_same("shape", x=x, dy=dy)
    m = math.prod(x.shape[:-1])
    for name, t in (("mean", mean), ("rstd", rstd)):
        if t is None:
            continue
        validation.check_tensor(name, t)
        validation.check_device(x=x, **{name: t})
        validation.check_dtype(name, t, (torch.float32,))
        if t.dim() != 1 or t.shape[0] != m:
            raise ValueError(f"{name} must be a float32 vector of one value per row, shape ({m},), got {tuple(t.shape)}")
        validation.check_contiguous(**{name: t})
    if dx is not None:
        validation.check_out("dx", dx, "x", x)


def layer_norm_fwd(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float = 1e-5,
    *,
    out: torch.Tensor | None = None,
    block_n: int | None = None,
    rows: int | None = None,
    num_warps: int | None = None,
    programs: int | None = None,
    num_stages: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Layer norm forward over the last dimension, with the statistics the backward pass needs.

    Args:
        x: tensor of shape ``(..., N)``, float32, float16 or bfloat16, on a CUDA device (or the CPU
            in interpreter mode). Rows need a contiguous last dimension; other layouts are copied.
        weight, bias: ``(N,)`` tensors in ``x``'s dtype or float32 (both the same), or None.
        eps: added to the variance, ``>= 0``.
        out: optional contiguous tensor of ``x``'s shape and dtype to write into.
        block_n, rows, num_warps, programs, num_stages: launch knobs, see :class:`NormConfig`;
            left at None, :func:`norm_config` chooses them.

    Returns:
        ``(y, mean, rstd)``: ``y`` in ``x``'s shape and dtype; ``mean`` and ``rstd`` float32 of
        shape ``(M,)``, one per row, ``rstd = 1 / sqrt(var + eps)``.

    Raises:
        TypeError: a non-tensor argument or an unsupported dtype.
        ValueError: a 0-d ``x``, parameters of the wrong shape, mismatched devices, a CPU tensor
            outside interpreter mode, a bad ``eps``, ``out`` or knob.
    """
    _check_inputs(x, {"weight": weight, "bias": bias}, eps)
    if out is not None:
        validation.check_out("out", out, "x", x)
    knobs = {"block_n": block_n, "rows": rows, "num_warps": num_warps, "programs": programs, "num_stages": num_stages}
    return _norm_fwd(x, weight, bias, eps, out, False, knobs)


def layer_norm_bwd(
    dy: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    *,
    grad_weight: bool = True,
    grad_bias: bool = True,
    dx: torch.Tensor | None = None,
    block_n: int | None = None,
    rows: int | None = None,
    num_warps: int | None = None,
    programs: int | None = None,
    num_stages: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Layer norm backward: ``dx``, ``dweight`` and ``dbias`` from ``dy`` and the forward's statistics.

    Args:
        dy: gradient of the output, ``x``'s shape and dtype.
        x, weight, bias: the forward's inputs (``bias`` only decides whether and in which dtype
            ``dbias`` is returned).
        mean, rstd: the forward's statistics, float32 of shape ``(M,)``.
        grad_weight, grad_bias: whether to compute ``dweight`` and ``dbias`` (when the parameter exists).
        dx: optional contiguous tensor of ``x``'s shape and dtype to write ``dx`` into.
        block_n, rows, num_warps, programs, num_stages: launch knobs, see :class:`NormConfig`.

    Returns:
        ``(dx, dweight, dbias)``; ``dweight`` / ``dbias`` in the parameter's dtype, or None when
        the parameter is None or its gradient was not asked for.

    Raises:
        TypeError: as :func:`layer_norm_fwd`, and for ``mean`` or ``rstd`` not in float32.
        ValueError: as :func:`layer_norm_fwd`, and for ``dy``, ``mean``, ``rstd`` or ``dx`` of the
            wrong shape, dtype or device.
    """
    _check_bwd(dy, x, {"weight": weight, "bias": bias}, mean, rstd, dx)
    knobs = {"block_n": block_n, "rows": rows, "num_warps": num_warps, "programs": programs, "num_stages": num_stages}
    return _norm_bwd(dy, x, weight, bias, mean, rstd, dx, False, grad_weight, grad_bias, knobs)


def rms_norm_fwd(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    eps: float = 1e-6,
    *,
    out: torch.Tensor | None = None,
    block_n: int | None = None,
    rows: int | None = None,
    num_warps: int | None = None,
    programs: int | None = None,
    num_stages: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RMS norm forward over the last dimension: ``y = x / sqrt(mean(x²) + eps) * weight``.

    Arguments, knobs and errors as :func:`layer_norm_fwd`, without a bias.

    Returns:
        ``(y, rstd)``: ``y`` in ``x``'s shape and dtype, ``rstd`` float32 of shape ``(M,)``.
    """
    _check_inputs(x, {"weight": weight}, eps)
    if out is not None:
        validation.check_out("out", out, "x", x)
    knobs = {"block_n": block_n, "rows": rows, "num_warps": num_warps, "programs": programs, "num_stages": num_stages}
    y, _, rstd = _norm_fwd(x, weight, None, eps, out, True, knobs)
    return y, rstd


def rms_norm_bwd(
    dy: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor | None,
    rstd: torch.Tensor,
    *,
    grad_weight: bool = True,
    dx: torch.Tensor | None = None,
    block_n: int | None = None,
    rows: int | None = None,
    num_warps: int | None = None,
    programs: int | None = None,
    num_stages: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """RMS norm backward: ``dx`` and ``dweight`` from ``dy`` and the forward's ``rstd``.

    Arguments, knobs and errors as :func:`layer_norm_bwd`, without a bias or a mean.

    Returns:
        ``(dx, dweight)``; ``dweight`` is None when ``weight`` is None or ``grad_weight`` is False.
    """
    _check_bwd(dy, x, {"weight": weight}, None, rstd, dx)
    knobs = {"block_n": block_n, "rows": rows, "num_warps": num_warps, "programs": programs, "num_stages": num_stages}
    dx, dw, _ = _norm_bwd(dy, x, weight, None, None, rstd, dx, True, grad_weight, False, knobs)
    return dx, dw


# -- autograd --------------------------------------------------------------------------------------
class LayerNormFunction(torch.autograd.Function):
    """Layer norm with the Triton forward and backward; mean and rstd are saved, x̂ is recomputed."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, rstd = _norm_fwd(x, weight, bias, eps, None, False, {})
        ctx.save_for_backward(x, weight, bias, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, bias, mean, rstd = ctx.saved_tensors
        _, need_w, need_b, _ = ctx.needs_input_grad
        dx, dw, db = _norm_bwd(dy, x, weight, bias, mean, rstd, None, False, need_w, need_b, {})
        return dx if ctx.needs_input_grad[0] else None, dw, db, None


class RMSNormFunction(torch.autograd.Function):
    """RMS norm with the Triton forward and backward; rstd is saved."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        y, _, rstd = _norm_fwd(x, weight, None, eps, None, True, {})
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        dx, dw, _ = _norm_bwd(dy, x, weight, None, None, rstd, None, True, ctx.needs_input_grad[1], False, {})
        return dx if ctx.needs_input_grad[0] else None, dw, None


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float = 1e-5
) -> torch.Tensor:
    """Layer norm over the last dimension, differentiable in ``x``, ``weight`` and ``bias``.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, with the mean and the (biased) variance
    of each row, as ``torch.nn.functional.layer_norm`` with ``normalized_shape = (N,)``.

    Args:
        x: tensor of shape ``(..., N)`` (any rank >= 1; rows are the leading dimensions merged),
            float32, float16 or bfloat16, on a CUDA device (or the CPU in interpreter mode).
        weight, bias: ``(N,)`` tensors in ``x``'s dtype or in float32 (both the same), or None.
        eps: added to the variance, ``>= 0``.

    Returns:
        ``y``, of ``x``'s shape and dtype. Statistics are computed in float32 whatever the dtype.

    Raises:
        TypeError: a non-tensor argument or an unsupported dtype (of ``x``, or of a parameter
            that is neither ``x``'s dtype nor float32).
        ValueError: a 0-d ``x``, parameters of the wrong shape or different dtypes, mismatched
            devices, a CPU tensor outside interpreter mode, or a negative or non-finite ``eps``.
    """
    _check_inputs(x, {"weight": weight, "bias": bias}, eps)
    return LayerNormFunction.apply(x, weight, bias, eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float = 1e-6) -> torch.Tensor:
    """RMS norm over the last dimension, differentiable in ``x`` and ``weight``.

    ``y = x / sqrt(mean(x²) + eps) * weight``, as ``torch.nn.functional.rms_norm`` with
    ``normalized_shape = (N,)``. Arguments and errors as :func:`layer_norm`, without a bias.
    """
    _check_inputs(x, {"weight": weight}, eps)
    return RMSNormFunction.apply(x, weight, eps)


# -- counts --------------------------------------------------------------------------------------
def _norm_bytes(m: int, n: int, dtype: torch.dtype, direction: Direction, weight_dtype: torch.dtype | None, params: int) -> int:
    size = torch.empty((), dtype=dtype).element_size()
    wsize = torch.empty((), dtype=weight_dtype or dtype).element_size()
    if direction == "fwd":
        return 2 * m * n * size + params * n * wsize
    if direction == "bwd":
        return 3 * m * n * size + (1 + params) * n * wsize
    raise ValueError(f"direction must be 'fwd' or 'bwd', got {direction!r}")


def layer_norm_bytes(
    M: int, N: int, dtype: torch.dtype, direction: Direction = "fwd", *, weight_dtype: torch.dtype | None = None
) -> int:
    """Bytes a perfect layer norm moves for ``M`` rows of ``N`` elements.

    Forward: ``x`` read and ``y`` written, plus ``weight`` and ``bias`` read once. Backward: ``x``
    and ``dy`` read and ``dx`` written, plus ``weight`` read and ``dweight``, ``dbias`` written.
    The per-row statistics (8 bytes a row) and our kernels' partial sums are implementation
    choices, not part of the minimum, and are left out.
    """
    return _norm_bytes(M, N, dtype, direction, weight_dtype, 2)


def rms_norm_bytes(
    M: int, N: int, dtype: torch.dtype, direction: Direction = "fwd", *, weight_dtype: torch.dtype | None = None
) -> int:
    """Bytes a perfect RMS norm moves: as :func:`layer_norm_bytes`, with one parameter (``weight``)."""
    return _norm_bytes(M, N, dtype, direction, weight_dtype, 1)
