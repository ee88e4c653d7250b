"""Transpose of a matrix, or of the last two dimensions of a batch of matrices.

A transpose does no arithmetic: each element is read once and written once, to another
place. One side of that copy runs along rows of memory and the other across them, so the
kernel's speed depends only on how it arranges its accesses. The goal is to move
``2 * M * N * itemsize`` bytes as fast as a plain device copy.

The kernels move bits, not numbers: a tensor of any dtype is reinterpreted as integers of
the same width (``int8`` … ``int64``), so floats, integers, booleans and float8 values are
copied exactly, NaN payloads and signed zeros included. Where a matrix allows it, 2- and 4-byte
elements travel two at a time, each pair of neighbours in a row as one integer twice as wide
(:func:`move_pair_tile`).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .. import runtime, validation
from .._intmath import cdiv, next_power_of_2

# A dtype is moved as integers of the same width: element size in bytes -> integer dtype.
BITS_DTYPES: dict[int, torch.dtype] = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

METHODS = ("auto", "tiles", "pairs", "tma", "realign")


# -- reference -----------------------------------------------------------------------------------
def transpose_reference(x: torch.Tensor) -> torch.Tensor:
    """``x`` with its last two dimensions swapped, as a new contiguous tensor.

    Reads every element once and writes it once: ``2 * x.numel() * itemsize`` bytes.
    """
    return x.transpose(-1, -2).contiguous()


# -- kernels -------------------------------------------------------------------------------------
@triton.jit
def tile_coordinates(pid, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """Map a flat program id to (matrix of the batch, tile row, tile column).

    Programs are numbered matrix by matrix. With GROUP_M = 0 (the default) they walk down one
    tile column of the matrix after another: programs that run at the same time write
    neighbouring pieces of the same rows of y, and read the same columns of x. GROUP_M > 0 walks
    bands of GROUP_M tile rows column by column instead; GROUP_M = 1 is plain row-major order.
    """
    tiles = tiles_m * tiles_n
    b = pid // tiles
    t = pid - b * tiles
    if GROUP_M == 0:
        pid_m = t % tiles_m
        pid_n = t // tiles_m
    else:
        band = GROUP_M * tiles_n
        first_m = (t // band) * GROUP_M
        rows_in_band = tl.minimum(tiles_m - first_m, GROUP_M)  # the last band may be shorter
        pid_m = first_m + (t % band) % rows_in_band
        pid_n = (t % band) // rows_in_band
    return b, pid_m, pid_n


@triton.jit
def move_tile(
    x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, stride_xn, tiles_m, tiles_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, MASKED: tl.constexpr, INT64: tl.constexpr,
):
    """Move one BLOCK_M x BLOCK_N tile of x[b] into y[b] = x[b].T (y is contiguous)."""
    b, pid_m, pid_n = tile_coordinates(tile_id, tiles_m, tiles_n, GROUP_M)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # rows of x = columns of y
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # columns of x = rows of y
    if INT64:  # the launcher asks for 64-bit offsets only when an offset can pass 2**31 - 1
        b = b.to(tl.int64)
        rows = rows.to(tl.int64)
        cols = cols.to(tl.int64)
    src = x_ptr + b * stride_xb + rows[:, None] * stride_xm + cols[None, :] * stride_xn
    # The matrix's offset in y is added as one scalar, not as (b * N + cols) * M, a product for
    # every element. What that saves depends on the ptxas. For the float16 kernel for unaligned
    # rows (256 x 64 tiles, 8 warps, masked; sm_90), registers a thread, that form against this
    # one: triton 3.9 (its ptxas 13.4) 142 and 37; triton 3.6 with its own ptxas (12.8) 169 and
    # 145; with torch 2.11's ptxas (13.0) 80 and 80.
    # This form against the old, in one process, interleaved (torch 2.11): on an H200 (2026-12-06,
    # three rounds) +1.9 to +2.5% in float32 and +1.7 to +3.3% in float16 at 8191 x 4097 and
    # 12289 x 5121, the aligned shapes from -0.4 to +1.5%; on an H100 (2026-12-05, two rounds)
    # float32 +4.4% and +4.7% at the odd shapes, every other shape from -0.8 to +2.3%.
    dst = y_ptr + b * N * M + cols[:, None] * M + rows[None, :]
    # The tile is read along the rows of x and written along the rows of y. Each side is
    # coalesced in its own layout; tl.trans hands the compiler the change of layout, which it
    # performs through shared memory.
    if MASKED:
        tile = tl.load(src, mask=(rows[:, None] < M) & (cols[None, :] < N))
        tl.store(dst, tl.trans(tile), mask=(cols[:, None] < N) & (rows[None, :] < M))
    else:
        tile = tl.load(src)
        tl.store(dst, tl.trans(tile))


@triton.jit
def move_pair_tile(
    x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, tiles_m, tiles_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, MASKED: tl.constexpr, INT64: tl.constexpr,
    BITS: tl.constexpr,
):
    """Move one BLOCK_M x BLOCK_N tile of x[b] into y[b] = x[b].T, two elements to an integer.

    x_ptr and y_ptr point to integers of 2 * BITS bits, each holding two neighbouring elements
    of a row, the first in the low half: x[b] is M rows of N / 2 such pairs (strides counted in
    pairs, the last one 1) and y[b] is N rows of M / 2. Rows 2i and 2i + 1 of x, at pair c, hold
    a 2 x 2 block; its transpose is pair i of rows 2c and 2c + 1 of y.
    """
    b, pid_m, pid_n = tile_coordinates(tile_id, tiles_m, tiles_n, GROUP_M)
    HALF_M: tl.constexpr = BLOCK_M // 2
    HALF_N: tl.constexpr = BLOCK_N // 2
    i = pid_m * HALF_M + tl.arange(0, HALF_M)  # pairs of rows of x = pairs in a row of y
    c = pid_n * HALF_N + tl.arange(0, HALF_N)  # pairs in a row of x = pairs of rows of y
    if INT64:
        b = b.to(tl.int64)
        i = i.to(tl.int64)
        c = c.to(tl.int64)
    half_m = M // 2
    src = x_ptr + b * stride_xb + (2 * i)[:, None] * stride_xm + c[None, :]
    dst = y_ptr + b * N * half_m + 2 * c[:, None] * half_m + i[None, :]  # the batch offset as one scalar, as in move_tile
    if MASKED:
        load_mask = (i[:, None] < half_m) & (c[None, :] < N // 2)
        top = tl.load(src, mask=load_mask)
        bottom = tl.load(src + stride_xm, mask=load_mask)
    else:
        top = tl.load(src)
        bottom = tl.load(src + stride_xm)
    # Swap the block's two off-diagonal elements between the words: the columns of the block
    # become its rows. The shifts are arithmetic, hence the masks.
    low = (1 << BITS) - 1
    left = (top & low) | (bottom << BITS)  # x[2i, 2c] and x[2i + 1, 2c]: row 2c of y
    right = ((top >> BITS) & low) | ((bottom >> BITS) << BITS)  # x[2i, 2c + 1] and x[2i + 1, 2c + 1]
    if MASKED:
        store_mask = (c[:, None] < N // 2) & (i[None, :] < half_m)
        tl.store(dst, tl.trans(left), mask=store_mask)
        tl.store(dst + half_m, tl.trans(right), mask=store_mask)
    else:
        tl.store(dst, tl.trans(left))
        tl.store(dst + half_m, tl.trans(right))


@triton.jit
def move_any_tile(
    x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, stride_xn, tiles_m, tiles_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, MASKED: tl.constexpr, INT64: tl.constexpr,
    PAIR_BITS: tl.constexpr,
):
    """move_pair_tile for elements of PAIR_BITS bits moved in pairs, move_tile when PAIR_BITS is 0."""
    if PAIR_BITS > 0:
        move_pair_tile(x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, tiles_m, tiles_n,
                       BLOCK_M, BLOCK_N, GROUP_M, MASKED, INT64, PAIR_BITS)
    else:
        move_tile(x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, stride_xn, tiles_m, tiles_n,
                  BLOCK_M, BLOCK_N, GROUP_M, MASKED, INT64)


@triton.jit
def transpose_kernel(
    x_ptr, y_ptr, M, N, stride_xb, stride_xm, stride_xn, tiles_m, tiles_n, n_tiles,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, MASKED: tl.constexpr, INT64: tl.constexpr,
    PERSISTENT: tl.constexpr, PAIR_BITS: tl.constexpr = 0,
):
    if PERSISTENT:  # a fixed number of programs, each taking every num_programs-th tile
        for tile_id in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0)):
            move_any_tile(x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, stride_xn, tiles_m, tiles_n,
                          BLOCK_M, BLOCK_N, GROUP_M, MASKED, INT64, PAIR_BITS)
    else:  # one program per tile
        move_any_tile(x_ptr, y_ptr, tl.program_id(0), M, N, stride_xb, stride_xm, stride_xn, tiles_m, tiles_n,
                      BLOCK_M, BLOCK_N, GROUP_M, MASKED, INT64, PAIR_BITS)


@triton.jit
def move_realigned_tile(
    x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, x_whole, x_last, y_total, tiles_m, tiles_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr, GROUP_M: tl.constexpr, INT64: tl.constexpr,
):
    """Move one tile of x[b] into y[b] = x[b].T in whole 16-byte vectors (VEC elements), on rows at any offset.

    y is treated as one flat array of batch * N rows of M elements. Row g of it gets, from this
    tile, the BLOCK_M - VEC elements from the vector boundary at or before g * M + m0; the tile reads
    BLOCK_M rows of x from m0 - VEC, each from the vector boundary at or before its element n0, and
    shifts every row, read and written, by its own offset from that boundary with tl.gather (within
    a warp: shuffles). Tiles overlap by VEC rows and columns. Vectors that hold the end of one row
    of y and the start of the next are left out; the tiles with pid_m = 0 write them element by element.
    """
    b, pid_m, pid_n = tile_coordinates(tile_id, tiles_m, tiles_n, GROUP_M)
    i = tl.arange(0, BLOCK_M)
    j = tl.arange(0, BLOCK_N)
    if INT64:
        b = b.to(tl.int64)
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
    m0 = pid_m * (BLOCK_M - VEC)
    n0 = pid_n * (BLOCK_N - VEC)
    rows = m0 - VEC + i  # rows of x read: the columns of y written, and VEC before them
    start = b * stride_xb + rows * stride_xm + n0
    aligned_start = (start // VEC) * VEC
    src = aligned_start[:, None] + j[None, :]
    row_ok = ((rows >= 0) & (rows < M))[:, None]
    x_end = x_whole * VEC  # a multiple of VEC the compiler can see: the mask is whole vectors
    # A tile that reaches past x's last whole vector reads element by element: a whole vector
    # there would run past the tensor's end. Rows start in order, so its last row reaches furthest.
    last_row = tl.minimum(m0 - VEC + BLOCK_M, M) - 1
    if ((b * stride_xb + last_row * stride_xm + n0) // VEC) * VEC + BLOCK_N > x_end:
        tile = tl.load(x_ptr + src, mask=row_ok & (src <= x_last))
    else:
        tile = tl.load(x_ptr + src, mask=row_ok & (src < x_end))
    shift = tl.minimum(tl.maximum(j[None, :] + (start - aligned_start)[:, None], 0), BLOCK_N - 1)
    tile = tl.gather(tile, shift, axis=1)  # tile[r, j] = x[b, m0 - VEC + r, n0 + j]
    cols = n0 + j  # columns of x: rows of y
    g = b * N + cols  # rows of the flat y
    first = g * M  # flat offset of the start of row g
    out = ((first + m0) // VEC) * VEC
    lag = first + m0 - out  # 0 <= lag < VEC
    shift = tl.minimum(i[None, :] + VEC - lag[:, None], BLOCK_M - 1)
    out_tile = tl.gather(tl.trans(tile), shift, axis=1)  # out_tile[j, i] = x[b, m0 - lag + i, n0 + j]
    vector = out[:, None] + ((i // VEC) * VEC)[None, :]  # each element's vector: the mask keeps or drops whole ones
    keep = ((vector >= first[:, None]) & (vector + VEC <= first[:, None] + M) & (i < BLOCK_M - VEC)[None, :]
            & ((j < BLOCK_N - VEC) & (cols < N))[:, None])
    tl.store(y_ptr + out[:, None] + i[None, :], out_tile, mask=keep)
    if pid_m == 0:
        # The vector around the start of each row g (and, for cols == N, around the end of the
        # matrix), element by element: each element's own row and column of x.
        flat = ((first // VEC) * VEC)[:, None] + tl.arange(0, VEC)[None, :]
        g_of = flat // M
        b_of = g_of // N
        edge = ((j < BLOCK_N - VEC) & (cols <= N))[:, None] & (flat < y_total)
        values = tl.load(x_ptr + b_of * stride_xb + (flat - g_of * M) * stride_xm + (g_of - b_of * N), mask=edge)
        tl.store(y_ptr + flat, values, mask=edge)


@triton.jit
def transpose_realigned_kernel(
    x_ptr, y_ptr, M, N, stride_xb, stride_xm, x_whole, x_last, y_total, tiles_m, tiles_n, n_tiles,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr, GROUP_M: tl.constexpr, INT64: tl.constexpr,
    PERSISTENT: tl.constexpr,
):
    if PERSISTENT:
        for tile_id in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0)):
            move_realigned_tile(x_ptr, y_ptr, tile_id, M, N, stride_xb, stride_xm, x_whole, x_last, y_total, tiles_m,
                                tiles_n, BLOCK_M, BLOCK_N, VEC, GROUP_M, INT64)
    else:
        move_realigned_tile(x_ptr, y_ptr, tl.program_id(0), M, N, stride_xb, stride_xm, x_whole, x_last, y_total,
                            tiles_m, tiles_n, BLOCK_M, BLOCK_N, VEC, GROUP_M, INT64)


@triton.jit
def move_tile_tma(x_desc, y_desc, tile_id, tiles_m, tiles_n,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, BATCHED: tl.constexpr):
    """Move one tile with tensor descriptors: TMA copies it whole between global and shared memory."""
    b, pid_m, pid_n = tile_coordinates(tile_id, tiles_m, tiles_n, GROUP_M)
    m0 = pid_m * BLOCK_M
    n0 = pid_n * BLOCK_N
    if BATCHED:  # descriptors of rank 3: [matrix, row, column]
        tile = x_desc.load([b, m0, n0]).reshape(BLOCK_M, BLOCK_N)
        y_desc.store([b, n0, m0], tl.trans(tile).reshape(1, BLOCK_N, BLOCK_M))
    else:
        tile = x_desc.load([m0, n0])
        y_desc.store([n0, m0], tl.trans(tile))


@triton.jit
def transpose_tma_kernel(
    x_desc, y_desc, tiles_m, tiles_n, n_tiles,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, BATCHED: tl.constexpr, PERSISTENT: tl.constexpr,
):
    # The same tiles, moved by the Tensor Memory Accelerator: one instruction copies a whole
    # tile between global and shared memory, and the hardware clips tiles at the edges.
    if PERSISTENT:
        for tile_id in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0)):
            move_tile_tma(x_desc, y_desc, tile_id, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M, BATCHED)
    else:
        move_tile_tma(x_desc, y_desc, tl.program_id(0), tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M, BATCHED)


# -- launcher ------------------------------------------------------------------------------------
# Element size in bytes -> (BLOCK_M, BLOCK_N, num_warps). Measured on an H200 (triton 3.6), sweeping
# 32…128 a side, 4 or 8 warps: 64×64 with 8 warps for 4-byte and 128×128 with 8 warps for 2-byte
# elements were best on every aligned shape. 1- and 8-byte sizes keep about 16 KiB a tile (not swept).
# float32 4096 x 4096, where the default misses 0.92 of the copy ceiling, checked again against
# eight other tile shapes (32-128 a side, 2-8 warps), and all nine as persistent grids of 4 or 8
# programs an SM (H200, triton 3.6, torch 2.11, 2026-11-29, one interleaved run, fractions of the
# record's ceiling): a plain copy of the same bytes 0.939, the default (timed twice) 0.898 and
# 0.901, none of the others above 0.889.
# At 8192 x 8192 the default was best too (0.961, copy 0.990).
TILE_CONFIGS: dict[int, tuple[int, int, int]] = {1: (128, 128, 8), 2: (128, 128, 8), 4: (64, 64, 8), 8: (32, 64, 4)}
TMA_CONFIGS: dict[int, tuple[int, int, int]] = {1: (128, 128, 8), 2: (64, 128, 4), 4: (64, 64, 4), 8: (32, 64, 4)}
# The pointer kernel on rows that do not all start at 16-byte multiples (an input row stride or
# an output row of M elements that is not a multiple of 16 bytes): on that side no access can be
# wider than one element. Tiles of 32 KiB, 64 columns wide, in 8 warps won a sweep of 16-256 rows,
# 16-64 columns and 1-8 warps in bands of 8 tile rows, and a second one of its best shapes in
# column order (H200, triton 3.6, torch 2.11, 2026-11-23; two interleaved runs, GB/s, column
# order, torch.compile in parentheses): float16 256 x 64 at 8191 x 4097 2885 and 2864 (2723,
# 2764), at 12289 x 5121 2983 and 2969 (2712, 2661); float32 128 x 64 at 8191 x 4097 3516 and
# 3571 (2499, 2533), at 12289 x 5121 3615 and 3618 (2510, 2511). The previous entry,
# 128 x 32 in 2 warps with bands of 8 tile rows, moved 2445-2503 in float16 and 3123-3149 in
# float32. Other element sizes keep TILE_CONFIGS (not swept).
# The sweep's float16 winner, 256 x 64 in 8 warps, is fast only when torch's ptxas assembles it.
# Triton's own (CUDA 12.8) gives it 145 registers a thread, room for one program an SM; torch 2.11's
# (13.0), which TorchInductor puts in TRITON_PTXAS_PATH the first time it compiles in a process,
# gives it 80, three programs an SM (see move_tile). The sweep's processes timed torch.compile, and
# its numbers match the second. One process for each ptxas, on an H200 (triton 3.6, torch 2.11,
# 2026-12-06; two interleaved rounds each; GB/s, Triton's ptxas / torch's), float16 at 8191 x
# 4097: 256 x 64 in 8 warps 1989-1990 / 3003-3025, 256 x 32 in 4 warps 2976-2977 / 2958-2960,
# 128 x 64 in 4 warps 3001-3009 / 2911-2947, 128 x 32 in 4 warps 2949-2951 / 2912-2949, 128 x 64
# in 8 warps 2899-2913 / 2852-2890, torch.compile 2739-2747 / 2707-2789; at 12289 x 5121, in the
# same order, 2050-2056 / 3091-3110, 2988-2992 / 3031-3032, 3017-3020 / 2962-2970, 2996-3009 /
# 2973-2993, 2949-2954 / 2901-2932, torch.compile 2623-2628 / 2619-2832. 256 x 32 in 4 warps
# (136 registers with Triton's ptxas, 80 with torch's) comes within 3% of the best with either,
# where the old entry lost a third with Triton's: it is the entry now. H100s showed the same split
# (2026-12-05 and 06): the old entry at 1740-1764 at 8191 x 4097 in processes that compiled it
# before any torch.compile, 2316-2397 in full bench runs, and 256 x 32 in 4 warps at 2435-2465 in
# the former, and at 2370 in the full record of 2026-12-06 (torch's ptxas). In float32, 128 x 64
# in 8 warps has 98 registers with either ptxas and stays ahead: 3648-3652 / 3653-3659 at 8191 x
# 4097, against 3572-3582 / 3395-3404 for 256 x 32 in 4 warps.
UNALIGNED_TILE_CONFIGS: dict[int, tuple[int, int, int]] = {2: (256, 32, 4), 4: (128, 64, 8)}
# The order of programs (tile_coordinates' GROUP_M): 0 walks down whole tile columns. Against bands
# of 8 tile rows, the previous default, in the same runs (GB/s, default tiles): float32 16384 x
# 16384 4136 against 4001-4003, 8192 x 8192 4080 against 3975-3978, 4096 x 4096 3821-3826 against
# 3767-3779; float16 16384 x 16384 4109-4110 against 3989-3995, 8192 x 8192 3935-3937 against
# 3867-3873; at the odd shapes above, 256 x 32 tiles in 4 warps gained 7-9% in float32 and 10-11%
# in float16.
DEFAULT_GROUP_M = 0
# A matrix with fewer default tiles than MIN_TILES_PER_SM per SM takes tiles half as wide, in half
# the warps. Same runs: float16 4096 x 4096 has 1024 tiles of 128 x 128 (7.8 an SM on an H200),
# which moved 3196 and 3241 GB/s, against 3479 and 3449 for 128 x 64 tiles in 4 warps
# (torch.compile 3324, 3298). The larger shapes have 29 or more tiles an SM. Only programs of 8
# warps or more are halved: the unaligned float16 entry, 256 x 32 in 4 warps, halved to 256 x 16 in
# 2, lost 6-8% at 2047 x 2049, 2049 x 3071 and 4095 x 1025 and 1% at 1023 x 1025 (H100, triton
# 3.6, torch 2.11, 2026-12-07, one interleaved run, 0.562-0.588 of the copy ceiling against
# 0.612-0.632 unhalved). In float32 the unaligned 128 x 64 in 8 warps, halved, gained 9% at 1023
# x 1025 and lost 2.5% at 2049 x 3071 (same run).
MIN_TILES_PER_SM = 8
# Element size in bytes -> (BLOCK_M, BLOCK_N, num_warps) of the pair kernel (method="pairs", which
# "auto" takes wherever it can run: M and N even, rows starting at whole pairs). BLOCK_M and BLOCK_N
# count elements, not pairs. On an H200 (triton 3.6, torch 2.11, 2026-12-02; one process timing
# every shape twice, interleaved, on fresh inputs; fractions of the record's copy ceiling, the
# pointer kernel's default tiles in parentheses): float16 at 128 x 128 in 4 warps, 4096 x 4096
# 0.827 and 0.840 (0.803, 0.816), 8192 x 8192 0.930 and 0.930 (0.915, 0.910), 12288 x 5120 0.924
# and 0.918 (0.905, 0.912), 16384 x 16384 0.965 and 0.961 (0.964, 0.961); float32 at 64 x 64 in 8
# warps, 4096 x 4096 0.893 and 0.899 (0.876, 0.886), 8192 x 8192 0.957 and 0.960 (0.951, 0.956).
# torch's copy of the same bytes: 0.862-0.867, 0.953-0.969, 0.951-0.959; float32 0.917-0.918 and
# 0.980-0.985. The same run, and an earlier one that day: the pointer kernel's own tiles in 4 warps
# lost to its default (float16 128 x 128, 0.751-0.941), so the gain is the pairs'. In float16, pair
# tiles of 128 x 128 in 8 warps came within 1% of these; 128 x 64 and 64 x 64 in 4 warps, 128 x 128
# in 2, 64 x 128 in 4, 256 x 128 and 128 x 256 in 8 lost by 1-6%. In float32, 64 x 64 in 4 warps
# and five other shapes lost by 0.3-2%. MIN_TILES_PER_SM does not apply: the float16 tile halved
# to 128 x 64 lost 1.7-2.5% at 4096 x 4096. This kernel as shipped, against method="tiles" (same
# day, another process, two interleaved rounds): float16 +1.3 to +2.1% at 4096 x 4096, 8192 x 8192
# and 12288 x 5120, +0.2% at 16384 x 16384; float32 +0.0 to +0.9%.
PAIR_CONFIGS: dict[int, tuple[int, int, int]] = {2: (128, 128, 4), 4: (64, 64, 8)}
# Element size in bytes -> (BLOCK_M, BLOCK_N, num_warps) of the realigning kernel (method="realign"),
# whose tiles overlap by 16 bytes a side. It loses to method="tiles" in float16 and runs level with
# it in float32, so "auto" never takes it. On an H100 (triton 3.6, torch 2.11, 2026-12-08, commit
# 53691ac; one process, two interleaved rounds on fresh inputs, GB/s, method="tiles" in
# parentheses): float16 at 64 x 64 in 4 warps 2046-2049 at 8191 x 4097 (2364-2374), 2134-2136 at
# 12289 x 5121 (2422-2423), 1955 at 4095 x 4097 (2274-2278); its 16 KiB tiles did worse (128 x 64
# in 4 or 8 warps 1767-1786 at 8191 x 4097, 64 x 128 in 4 warps 1706-1707, 256 x 64 and 128 x 128
# in 8 warps 1427-1456). float32 at 64 x 64 in 8 warps 2714-2715 (2736-2737), 2741-2742
# (2756), 2656-2659 (2669-2672); 64 x 64 in 4 warps, 128 x 64 in 8, 64 x 32 and 128 x 32 in 4 came
# within 5% of it, 128 x 64 in 8 warps 0.5% ahead of "tiles" at 12289 x 5121 alone. The float16
# tile of 64 x 64 in 4 warps compiles (sm_90, ptxas 13.0) to 128 warp shuffles a thread for its
# two gathers, 32 elements a thread. Since those timings the tiles at x's end read element by
# element (no vector past the tensor's end); that took this tile from 64 to 72 registers a thread
# and has not been timed. 1- and 8-byte sizes keep 16 KiB tiles (not timed).
REALIGN_CONFIGS: dict[int, tuple[int, int, int]] = {1: (128, 128, 8), 2: (64, 64, 4), 4: (64, 64, 8), 8: (64, 32, 4)}
# Element sizes for which method="auto" takes the tensor-descriptor kernel wherever it can run
# (Hopper or newer, 16-byte aligned rows); the pointer kernel runs everywhere else.
# Empty: on an H200 (triton 3.6) the descriptor kernel was slower than the pointer kernel at
# every tile shape tried (at best 0.88 × the copy ceiling against 0.94 ×), so it is opt-in. In
# column order too (2026-11-23, GB/s): float32 16384 x 16384 4046-4050 against 4136, float16 1634
# at 4096 x 4096 against 3449-3479.
AUTO_TMA_SIZES: frozenset[int] = frozenset()

_INT32_LIMIT = 2**31 - 1
_MAX_PROGRAMS = 2**31 - 1  # CUDA's limit on the first grid dimension
_MAX_TILE_ELEMENTS = 1 << 16  # a tile lives in one program's registers; an SM has 64K 32-bit registers
_TMA_MAX_BOX = 256  # the hardware's limit on one dimension of a tensor-descriptor tile


def _bits_dtype(x: torch.Tensor) -> torch.dtype:
    size = x.element_size()
    if size not in BITS_DTYPES or x.is_quantized:
        raise TypeError(
            f"x has dtype {str(x.dtype).removeprefix('torch.')} ({size} bytes per element); "
            "supported: any non-quantized dtype of 1, 2, 4 or 8 bytes per element"
        )
    return BITS_DTYPES[size]


def _batched(x: torch.Tensor) -> torch.Tensor:
    """``x`` as one batch dimension and a matrix: a view when the batch dims collapse, else a copy."""
    batch = math.prod(x.shape[:-2])
    try:
        return x.view(batch, *x.shape[-2:])
    except RuntimeError:  # batch dimensions whose strides do not merge into one (e.g. permuted)
        return x.reshape(batch, *x.shape[-2:])


def _check_power_of_two(name: str, value: int | None, upper: int) -> None:
    if value is not None and (not isinstance(value, int) or value < 1 or value & (value - 1) or value > upper):
        raise ValueError(f"{name} must be a power of two between 1 and {upper}, got {value!r}")


def _realign_obstacle(xb: torch.Tensor, yb: torch.Tensor | None) -> str | None:
    """Why the realigning kernel cannot move ``xb`` into ``yb``, or None when it can.

    ``yb=None`` stands for an output the launcher allocates itself (always aligned). The
    tensor-descriptor kernel needs the same two things, and more (:func:`_tma_obstacle`).
    """
    if xb.stride(2) != 1:
        return "the input's last dimension must be contiguous (stride 1)"
    if xb.data_ptr() % 16 or (yb is not None and yb.data_ptr() % 16):
        return "input and output must start at 16-byte aligned addresses"
    return None


def _tma_obstacle(xb: torch.Tensor, yb: torch.Tensor | None) -> str | None:
    """Why the tensor-descriptor kernel cannot move ``xb`` into ``yb``, or None when it can.

    ``yb=None`` stands for an output the launcher allocates itself (always aligned).
    """
    if runtime.MODE == "gpu" and torch.cuda.get_device_capability(xb.device)[0] < 9:
        return "tensor descriptors (TMA) need a GPU of compute capability 9.0 (Hopper) or newer"
    size = xb.element_size()
    if (obstacle := _realign_obstacle(xb, yb)) is not None:  # a contiguous last dimension, aligned tensors
        return obstacle
    strides = [xb.stride(1)] + ([xb.stride(0)] if xb.shape[0] > 1 else [])
    if any(s == 0 or s * size % 16 for s in strides):
        return f"every input row must start at a 16-byte multiple (row stride {xb.stride(1)} x {size} bytes)"
    if xb.shape[1] * size % 16:
        return f"every output row must start at a 16-byte multiple (M = {xb.shape[1]} x {size} bytes)"
    return None


def _pairs_obstacle(xb: torch.Tensor, yb: torch.Tensor | None) -> str | None:
    """Why the pair kernel cannot move ``xb`` into ``yb``, or None when it can (``yb=None`` as in :func:`_tma_obstacle`)."""
    size = xb.element_size()
    if size not in PAIR_CONFIGS:
        return f"{size}-byte elements are not moved in pairs (only {'- and '.join(map(str, sorted(PAIR_CONFIGS)))}-byte ones are)"
    if xb.stride(2) != 1:
        return "the input's last dimension must be contiguous (stride 1)"
    M, N = xb.shape[1], xb.shape[2]
    if M % 2 or N % 2:
        return f"both dimensions must be even, got {M} x {N}"
    if xb.stride(1) % 2:
        return f"every input row must start at a whole pair of elements (row stride {xb.stride(1)})"
    if xb.stride(0) % 2:  # (checked for a batch of one too: viewing x as pairs needs it)
        return f"every input matrix must start at a whole pair of elements (matrix stride {xb.stride(0)})"
    if xb.data_ptr() % (2 * size) or (yb is not None and yb.data_ptr() % (2 * size)):
        return f"input and output must start at {2 * size}-byte aligned addresses"
    return None


def _rows_aligned(xb: torch.Tensor, yb: torch.Tensor) -> bool:
    """Whether every row of ``xb`` and of ``yb`` (both ``(batch, rows, cols)``) starts at a 16-byte multiple."""
    size = xb.element_size()
    # yb is contiguous: its matrices start at multiples of its row length, so its row stride covers them.
    starts = [xb.data_ptr(), yb.data_ptr(), xb.stride(1) * size, yb.stride(1) * size]
    if xb.shape[0] > 1:
        starts.append(xb.stride(0) * size)
    return all(start % 16 == 0 for start in starts)


def _resolve_method(method: str, xb: torch.Tensor, yb: torch.Tensor | None) -> str:
    obstacles = {"tma": _tma_obstacle, "pairs": _pairs_obstacle, "realign": _realign_obstacle}
    if method in obstacles:
        if (obstacle := obstacles[method](xb, yb)) is not None:
            raise ValueError(f"method={method!r} cannot be used here: {obstacle}; use method='tiles' or 'auto'")
        return method
    if method == "auto":
        if runtime.MODE == "gpu" and xb.element_size() in AUTO_TMA_SIZES and _tma_obstacle(xb, yb) is None:
            return "tma"
        return "pairs" if _pairs_obstacle(xb, yb) is None else "tiles"
    return method


def _config(
    table: dict[int, tuple[int, int, int]], M: int, N: int, size: int,
    block_m: int | None, block_n: int | None, num_warps: int | None, batch: int = 1, min_tiles: int = 0,
) -> tuple[int, int, int]:
    """``(BLOCK_M, BLOCK_N, num_warps)``: the table's entry for ``size``, where the caller gave no value.

    Small matrices get smaller tiles (at least 16 elements, i.e. 16 bytes, a side). With neither
    ``block_n`` nor ``num_warps`` given, a grid of fewer than ``min_tiles`` tiles (``batch``
    matrices) takes tiles half as wide, in half the warps, where the tile has 8 warps or more.
    """
    bm, bn, nw = table[size]
    bm = block_m or min(bm, max(16, next_power_of_2(M)))
    bn = block_n or min(bn, max(16, next_power_of_2(N)))
    nw = num_warps or max(1, min(nw, bm * bn // 512))
    if block_n is None and num_warps is None and bn > 16 and nw >= 8 and batch * cdiv(M, bm) * cdiv(N, bn) < min_tiles:
        bn, nw = bn // 2, nw // 2
    return bm, bn, nw


def transpose_method(x: torch.Tensor, out: torch.Tensor | None = None) -> str:
    """The kernel :func:`tritonperf.transpose` runs for ``x`` (and ``out``) with ``method="auto"``: ``"tma"``, ``"pairs"`` or ``"tiles"``.

    ``"tma"`` is chosen only for element sizes listed in ``AUTO_TMA_SIZES`` (none at present: the
    pointer kernel measured faster), on a GPU of compute capability 9.0 or newer, when the input's
    last dimension is contiguous and the rows of input and output start at 16-byte multiples.
    Otherwise ``"pairs"`` for 2- and 4-byte elements (``PAIR_CONFIGS``) when both matrix
    dimensions are even, the input's last dimension is contiguous, its rows start at whole pairs
    and both tensors at addresses aligned to a pair; ``"tiles"`` everywhere else.
    """
    validation.check_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must have at least 2 dimensions, got shape {tuple(x.shape)}")
    xb = _batched(x)
    return _resolve_method("auto", xb, None if out is None else out.view(xb.shape[0], x.shape[-1], x.shape[-2]))


def transpose(
    x: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    method: str = "auto",
    block_m: int | None = None,
    block_n: int | None = None,
    group_m: int | None = None,
    num_warps: int | None = None,
    programs_per_sm: int | None = None,
    num_stages: int | None = None,
) -> torch.Tensor:
    """Swap the last two dimensions of ``x`` into a new contiguous tensor.

    A matrix ``(M, N)`` becomes ``(N, M)``; a batch ``(..., M, N)`` becomes ``(..., N, M)``.
    The data is moved bit for bit, so every dtype of 1, 2, 4 or 8 bytes per element works
    (floats, integers, ``bool``, float8) and the result equals ``transpose_reference(x)`` exactly.

    Args:
        x: a tensor of rank ≥ 2 on CUDA (or on the CPU in interpreter mode). Any strides are
            accepted; batch dimensions whose strides cannot be merged are first copied.
        out: optional contiguous tensor of shape ``(..., N, M)`` and ``x``'s dtype to write into.
        method: ``"tiles"`` (the pointer kernel), ``"pairs"`` (the pointer kernel moving 2- or
            4-byte elements two at a time: even dimensions, contiguous last dimension, rows that
            start at whole pairs), ``"tma"`` (tensor descriptors: compute capability ≥ 9.0,
            contiguous last dimension, 16-byte aligned rows on both sides), ``"realign"`` (whole
            16-byte vectors on rows that start at any offset: contiguous last dimension, both
            tensors at 16-byte aligned addresses; opt-in: slower than ``"tiles"`` in float16), or ``"auto"``, which
            takes ``"tma"`` where it can run for the element sizes in ``AUTO_TMA_SIZES`` (none at
            present), else ``"pairs"`` where it can run, else ``"tiles"`` (see :func:`transpose_method`).
        block_m, block_n: tile shape (rows, columns of ``x``, in elements), powers of two, at
            least 2 for ``"pairs"`` and two 16-byte vectors for ``"realign"``; chosen from the
            method and the element size, and for ``"tiles"`` from whether every row starts at a
            16-byte multiple, when omitted.
            With both ``block_n`` and ``num_warps`` omitted, a matrix of few tiles (fewer than
            ``MIN_TILES_PER_SM`` per SM) takes the pointer kernel's tiles half as wide, in half the warps,
            where they have 8 warps or more.
        group_m: None (default) walks whole tile columns, top to bottom, one after another; a number
            walks bands of that many tile rows column by column (1: row-major order).
        num_warps: warps per program, a power of two; chosen from the tile size when omitted.
        programs_per_sm: None (default) launches one program per tile; a number launches that
            many programs per SM (a persistent grid), each looping over tiles.
        num_stages: Triton's software-pipelining depth for the persistent loop (compiler default when None).

    Returns:
        ``out``, holding ``x.transpose(-1, -2)``.

    Raises:
        TypeError: a non-tensor argument or an unsupported dtype.
        ValueError: rank below 2, a mismatched or non-contiguous ``out``, ``out`` sharing memory
            with ``x``, a CPU tensor outside interpreter mode, a bad knob, or ``method="tma"``,
            ``"pairs"`` or ``"realign"`` where that kernel cannot run (the message says why).
    """
    validation.check_tensor("x", x)
    if x.layout != torch.strided:
        raise ValueError(f"x must be a dense (strided) tensor, got layout {x.layout}")
    if x.dim() < 2:
        raise ValueError(f"x must have at least 2 dimensions, got shape {tuple(x.shape)}")
    bits = _bits_dtype(x)
    validation.check_device(x=x)
    M, N = x.shape[-2], x.shape[-1]
    out_shape = (*x.shape[:-2], N, M)
    if out is not None:
        validation.check_tensor("out", out)
        validation.check_device(x=x, out=out)
        validation.check_same("dtype", x=x, out=out)
        if tuple(out.shape) != out_shape:
            raise ValueError(f"out must have shape {out_shape} (x's last two dims swapped), got {tuple(out.shape)}")
        validation.check_contiguous(out=out)
        if out.numel() and out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
            raise ValueError("out shares memory with x; transposing in place is not supported")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    limit = _TMA_MAX_BOX if method == "tma" else 1024
    _check_power_of_two("block_m", block_m, limit)
    _check_power_of_two("block_n", block_n, limit)
    _check_power_of_two("num_warps", num_warps, 32)
    for name, value in {"group_m": group_m, "programs_per_sm": programs_per_sm, "num_stages": num_stages}.items():
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")

    if out is None:
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    xb = _batched(x).view(bits)
    batch = xb.shape[0]
    yb = out.view(batch, N, M).view(bits)
    method = _resolve_method(method, xb, yb)
    size = x.element_size()

    vec = 16 // size  # elements a 16-byte vector holds
    group = group_m or DEFAULT_GROUP_M
    if method == "realign":  # its tiles keep the table's size on small matrices: they overlap by a vector
        bm, bn, nw = REALIGN_CONFIGS[size]
        bm, bn, nw = block_m or bm, block_n or bn, num_warps or nw
    else:
        if method == "tma":
            table = TMA_CONFIGS
        elif method == "pairs":
            table = PAIR_CONFIGS
        else:
            table = TILE_CONFIGS if _rows_aligned(xb, yb) else TILE_CONFIGS | UNALIGNED_TILE_CONFIGS
        min_tiles = MIN_TILES_PER_SM * runtime.sm_count(x.device) if method == "tiles" else 0
        bm, bn, nw = _config(table, M, N, size, block_m, block_n, num_warps, batch, min_tiles)
    if bm * bn > _MAX_TILE_ELEMENTS:
        raise ValueError(f"block_m * block_n must be at most {_MAX_TILE_ELEMENTS}, got {bm} * {bn}")
    if method == "pairs" and min(bm, bn) < 2:
        raise ValueError(f"method='pairs' moves 2 x 2 blocks: block_m and block_n must be at least 2, got {bm} and {bn}")
    if method == "tma" and min(bm, bn) * size < 16:
        raise ValueError(f"tensor-descriptor tiles need at least 16 bytes a side; got {bm} x {bn} of {size}-byte elements")
    if method == "realign" and min(bm, bn) < 2 * vec:
        raise ValueError(f"method='realign' tiles overlap by 16 bytes a side: block_m and block_n must be at least "
                         f"{2 * vec} for {size}-byte elements, got {bm} and {bn}")
    if method == "realign":  # tiles step by BLOCK - vec; the last column of tiles also covers the vector at y's end
        tiles_m, tiles_n = cdiv(M + vec, bm - vec), cdiv(N + 1, bn - vec)
    else:
        tiles_m, tiles_n = cdiv(M, bm), cdiv(N, bn)
    n_tiles = batch * tiles_m * tiles_n
    if n_tiles > _MAX_PROGRAMS:
        raise ValueError(f"{n_tiles} tiles exceed the grid's limit of 2**31 - 1; use larger blocks")
    persistent = programs_per_sm is not None
    grid = (min(n_tiles, runtime.sm_count(x.device) * programs_per_sm) if persistent else n_tiles,)
    options = {"num_warps": nw} | ({"num_stages": num_stages} if num_stages else {})

    if method == "tma":
        from triton.tools.tensor_descriptor import TensorDescriptor

        runtime.bind_context(x.device)
        if batch > 1:
            x_desc = TensorDescriptor(xb, list(xb.shape), list(xb.stride()), [1, bm, bn])
            y_desc = TensorDescriptor(yb, list(yb.shape), list(yb.stride()), [1, bn, bm])
        else:
            x_desc = TensorDescriptor(xb[0], [M, N], [xb.stride(1), 1], [bm, bn])
            y_desc = TensorDescriptor(yb[0], [N, M], [M, 1], [bn, bm])
        transpose_tma_kernel[grid](
            x_desc, y_desc, tiles_m, tiles_n, n_tiles,
            BLOCK_M=bm, BLOCK_N=bn, GROUP_M=group, BATCHED=batch > 1, PERSISTENT=persistent, **options,
        )
        return out

    if method == "realign":
        sb, sm, _ = xb.stride()
        last = (batch - 1) * sb + (M - 1) * sm + N - 1  # offset of x's last element
        x_reach = (batch - 1) * sb + (tiles_m * bm) * sm + tiles_n * bn + vec
        y_reach = (batch * N + tiles_n * bn) * M + tiles_m * bm + vec
        transpose_realigned_kernel[grid](
            xb, yb, M, N, sb, sm, (last + 1) // vec, last, batch * N * M, tiles_m, tiles_n, n_tiles,
            BLOCK_M=bm, BLOCK_N=bn, VEC=vec, GROUP_M=group, INT64=max(x_reach, y_reach) > _INT32_LIMIT,
            PERSISTENT=persistent, **options,
        )
        return out

    # The pair kernel takes both tensors as integers twice as wide, and strides counted in them.
    pair_bits = 8 * size if method == "pairs" else 0
    width = 2 if pair_bits else 1
    if pair_bits:
        xb, yb = xb.view(BITS_DTYPES[2 * size]), yb.view(BITS_DTYPES[2 * size])
    sb, sm, sn = xb.stride()
    # Largest offset any lane computes, masked lanes of the edge tiles included.
    x_reach = (batch - 1) * sb + (tiles_m * bm - 1) * sm + (tiles_n * bn // width - 1) * sn
    y_reach = ((batch - 1) * N + tiles_n * bn) * (M // width) + tiles_m * bm // width
    transpose_kernel[grid](
        xb, yb, M, N, sb, sm, sn, tiles_m, tiles_n, n_tiles,
        BLOCK_M=bm, BLOCK_N=bn, GROUP_M=group, MASKED=bool(M % bm or N % bn),
        INT64=max(x_reach, y_reach) > _INT32_LIMIT, PERSISTENT=persistent, PAIR_BITS=pair_bits, **options,
    )
    return out


# -- counts --------------------------------------------------------------------------------------
def transpose_bytes(M: int, N: int, dtype: torch.dtype, batch: int = 1) -> int:
    """Bytes a perfect kernel moves: every element read once and written once."""
    return 2 * batch * M * N * torch.empty((), dtype=dtype).element_size()
