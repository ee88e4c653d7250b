"""The fused-softmax lesson's deliberately simpler steps (``examples/plot_02_softmax.py``).

Two stages on the way to :func:`tritonperf.softmax`, kept so that the lesson can
show them and the benchmark can record what each step buys. They take contiguous 2-D tensors
only and have no backward pass; use :func:`tritonperf.softmax` for real work.

* step 1, :func:`softmax_unfused`: three kernels, as an eager framework runs ``max``, ``exp``-``sum``
  and the division: each one reads the whole input again, so ``x`` crosses the memory bus three times.
* step 2, :func:`softmax_fused_row`: one kernel, one program per row; the row is loaded once,
  kept in registers for all three steps, and the result written once. A fixed 4 warps per
  program, whatever the row length.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import validation

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
UNFUSED_BLOCK_N = 1024


# -- step 1: three kernels, three reads of x ------------------------------------------------------
@triton.jit
def row_max_kernel(x_ptr, max_ptr, n_cols, BLOCK_N: tl.constexpr):
    # Program r walks row r a block at a time and keeps the largest value seen.
    row = tl.program_id(0).to(tl.int64)
    best = tl.full([BLOCK_N], -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        best = tl.maximum(best, x.to(tl.float32))
    tl.store(max_ptr + row, tl.max(best, axis=0))


@triton.jit
def row_exp_sum_kernel(x_ptr, max_ptr, sum_ptr, n_cols, BLOCK_N: tl.constexpr):
    # Second visit to every row: the sum of exp(x - max), the max coming from the first kernel.
    row = tl.program_id(0).to(tl.int64)
    row_max = tl.load(max_ptr + row)
    acc = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        acc += tl.exp(x.to(tl.float32) - row_max)
    tl.store(sum_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def normalize_kernel(x_ptr, max_ptr, sum_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    # Third visit: recompute exp(x - max) and divide by the sum.
    row = tl.program_id(0).to(tl.int64)
    row_max = tl.load(max_ptr + row)
    row_sum = tl.load(sum_ptr + row)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
        y = tl.exp(x.to(tl.float32) - row_max) / row_sum
        tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _check(x: torch.Tensor) -> None:
    validation.check_tensor("x", x)
    validation.check_device(x=x)
    validation.check_dtype("x", x, SUPPORTED_DTYPES)
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (rows, columns), got shape {tuple(x.shape)}")
    validation.check_contiguous(x=x)


def softmax_unfused(x: torch.Tensor, *, block_n: int = UNFUSED_BLOCK_N) -> torch.Tensor:
    """Step 1: row softmax of a contiguous 2-D tensor by three kernels, each reading ``x`` again.

    Moves ``4 * M * N * itemsize`` bytes (``x`` read three times, ``y`` written once) plus two
    float32 values per row, against ``2 * M * N * itemsize`` for a fused kernel.
    """
    _check(x)
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    n_rows, n_cols = x.shape
    maxes = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    sums = torch.empty_like(maxes)
    row_max_kernel[(n_rows,)](x, maxes, n_cols, BLOCK_N=block_n, num_warps=4)
    row_exp_sum_kernel[(n_rows,)](x, maxes, sums, n_cols, BLOCK_N=block_n, num_warps=4)
    normalize_kernel[(n_rows,)](x, maxes, sums, y, n_cols, BLOCK_N=block_n, num_warps=4)
    return y


# -- step 2: one kernel, one row per program, the row in registers -----------------------------------
@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    # One program per row; BLOCK_N (a power of two >= n_cols) covers the whole row at once.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    # The row stays in registers from here on: max, exponentials, sum and division cost no memory traffic.
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax_fused_row(x: torch.Tensor) -> torch.Tensor:
    """Step 2: row softmax of a contiguous 2-D tensor in one kernel, one row per program, 4 warps.

    Moves the minimum, ``2 * M * N * itemsize`` bytes. Every row must fit in the registers
    of 4 warps: long rows spill to local memory and slow down sharply.
    """
    _check(x)
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    n_rows, n_cols = x.shape
    softmax_row_kernel[(n_rows,)](x, y, n_cols, BLOCK_N=triton.next_power_of_2(n_cols), num_warps=4)
    return y
