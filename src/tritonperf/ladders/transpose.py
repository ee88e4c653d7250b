"""The transpose lesson's deliberately simpler steps (``examples/plot_04_transpose.py``).

Three kernels that each fix one thing the previous one did badly, kept so the lesson can
show them and the benchmark can record them. They take contiguous 2-D tensors only; use
:func:`tritonperf.transpose` for real work. The lesson's fourth step and its final kernel
are :func:`tritonperf.transpose` itself (``method="tiles"`` and ``method="auto"``).

* step 1, :func:`transpose_row_per_program`: one program per input row; reads are coalesced,
  writes are strided.
* step 2, :func:`transpose_coalesced_writes`: one program per output row; writes are
  coalesced, reads are strided.
* step 3, :func:`transpose_tiles`: square tiles on a 2-D grid; both sides coalesced.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import validation


# -- step 1: one program per input row -----------------------------------------------------------
@triton.jit
def row_per_program_kernel(x_ptr, y_ptr, M, N, BLOCK_N: tl.constexpr):
    # Program m copies row m of x into column m of y.
    m = tl.program_id(0).to(tl.int64)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        # Neighbouring lanes read neighbouring addresses: coalesced.
        row = tl.load(x_ptr + m * N + cols, mask=mask)
        # Neighbouring lanes write M elements apart: each lane touches its own memory segment.
        tl.store(y_ptr + cols.to(tl.int64) * M + m, row, mask=mask)


# -- step 2: one program per output row ----------------------------------------------------------
@triton.jit
def coalesced_writes_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr):
    # Program n gathers column n of x and writes it as row n of y.
    n = tl.program_id(0).to(tl.int64)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = rows < M
        # Now the reads are N elements apart ...
        col = tl.load(x_ptr + rows.to(tl.int64) * N + n, mask=mask)
        # ... and the writes are contiguous.
        tl.store(y_ptr + n * M + rows, col, mask=mask)


# -- step 3: square tiles on a 2-D grid ----------------------------------------------------------
@triton.jit
def tiles_kernel(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    # Program (i, j) moves the BLOCK x BLOCK tile at tile row i, tile column j.
    rows = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    cols = (tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    # Read the tile along the rows of x: coalesced.
    tile = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N))
    # Write its transpose along the rows of y: coalesced too. The compiler moves the
    # tile between the two layouts through shared memory.
    tl.store(y_ptr + cols[:, None] * M + rows[None, :], tl.trans(tile), mask=(cols[:, None] < N) & (rows[None, :] < M))


# -- launchers -----------------------------------------------------------------------------------
_MAX_GRID_Y = 65535  # CUDA's limit on the second grid dimension


def _prepare(x: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """Validate a 2-D contiguous ``x`` and return ``out`` (allocated when None) of shape (N, M)."""
    validation.check_tensor("x", x)
    if x.dim() != 2:
        raise ValueError(f"the lesson's steps take 2-D tensors, got shape {tuple(x.shape)}; use tritonperf.transpose")
    validation.check_device(x=x)
    validation.check_contiguous(x=x)
    shape = (x.shape[1], x.shape[0])
    if out is None:
        return torch.empty(shape, dtype=x.dtype, device=x.device)
    validation.check_tensor("out", out)
    validation.check_device(x=x, out=out)
    validation.check_same("dtype", x=x, out=out)
    if tuple(out.shape) != shape:
        raise ValueError(f"out must have shape {shape}, got {tuple(out.shape)}")
    validation.check_contiguous(out=out)
    return out


def transpose_row_per_program(
    x: torch.Tensor, out: torch.Tensor | None = None, *, block_n: int = 1024, num_warps: int = 4
) -> torch.Tensor:
    """Step 1: one program per row of ``x`` (M programs), ``block_n`` columns at a time."""
    out = _prepare(x, out)
    M, N = x.shape
    if x.numel():
        row_per_program_kernel[(M,)](x, out, M, N, BLOCK_N=block_n, num_warps=num_warps)
    return out


def transpose_coalesced_writes(
    x: torch.Tensor, out: torch.Tensor | None = None, *, block_m: int = 1024, num_warps: int = 4
) -> torch.Tensor:
    """Step 2: one program per row of the output (N programs), ``block_m`` elements at a time."""
    out = _prepare(x, out)
    M, N = x.shape
    if x.numel():
        coalesced_writes_kernel[(N,)](x, out, M, N, BLOCK_M=block_m, num_warps=num_warps)
    return out


def transpose_tiles(x: torch.Tensor, out: torch.Tensor | None = None, *, block: int = 32, num_warps: int = 4) -> torch.Tensor:
    """Step 3: one program per ``block`` x ``block`` tile, on a 2-D grid of tiles."""
    out = _prepare(x, out)
    M, N = x.shape
    grid = (triton.cdiv(M, block), triton.cdiv(N, block))
    if grid[1] > _MAX_GRID_Y:
        raise ValueError(f"{grid[1]} tile columns exceed the grid's second dimension ({_MAX_GRID_Y}); use a larger block")
    if x.numel():
        tiles_kernel[grid](x, out, M, N, BLOCK=block, num_warps=num_warps)
    return out
