"""The layer-norm lesson's deliberately simpler steps (``examples/plot_03_layer_norm.py``).

Stages on the way to :func:`tritonperf.layer_norm`, kept so that the lesson can show them and the
benchmark can record what each step buys. They take contiguous 2-D tensors with a weight and a
bias in ``x``'s dtype, and check little; use :func:`tritonperf.layer_norm` for real work.

* forward step 1, :func:`layer_norm_fwd_row`: one program per row, the whole row in registers,
  a fixed 4 warps whatever the row length;
* forward step 2, :func:`layer_norm_fwd_row_scaled_warps`: the same kernel with warps that grow
  with the row, so that each thread holds about 8 elements (more past 8192 columns, as a program
  has at most 32 warps);
* backward step 1, :func:`layer_norm_bwd_atomic`: one program per row, which adds its row's share
  of ``dweight`` and ``dbias`` into two float32 vectors with atomic additions. Every program
  targets the same ``2 * N`` addresses, so the additions queue up behind one another.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import validation

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
STEP1_WARPS = 4


def _check(x: torch.Tensor, *others: torch.Tensor) -> None:
    validation.check_tensor("x", x)
    validation.check_device(x=x, **{f"arg{i}": t for i, t in enumerate(others)})
    validation.check_dtype("x", x, SUPPORTED_DTYPES)
    if x.dim() != 2:
        raise ValueError(f"the lesson's steps take 2-D tensors, got shape {tuple(x.shape)}")
    validation.check_contiguous(x=x, **{f"arg{i}": t for i, t in enumerate(others)})


def scaled_warps(block_n: int) -> int:
    """Warps for one row of ``block_n`` elements: ``block_n / 256`` (8 elements a thread), within 1 … 32."""
    return max(1, min(32, block_n // 256))


# -- forward steps 1 and 2: one program per row ---------------------------------------------------
@triton.jit
def layer_norm_row_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK_N: tl.constexpr):
    # Program r normalizes row r, held whole in registers: BLOCK_N >= N.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * N + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


def layer_norm_fwd_row(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5, *, num_warps: int = STEP1_WARPS
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Step 1: one program per row with ``num_warps`` warps (4 unless told); returns ``(y, mean, rstd)``."""
    _check(x, weight, bias)
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, dtype=torch.float32, device=x.device)
    rstd = torch.empty(M, dtype=torch.float32, device=x.device)
    if x.numel():
        layer_norm_row_kernel[(M,)](
            x, y, weight, bias, mean, rstd, N, eps, BLOCK_N=triton.next_power_of_2(N), num_warps=num_warps
        )
    return y, mean, rstd


def layer_norm_fwd_row_scaled_warps(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Step 2: step 1's kernel with :func:`scaled_warps` warps per program."""
    return layer_norm_fwd_row(x, weight, bias, eps, num_warps=scaled_warps(triton.next_power_of_2(x.shape[-1])))


# -- backward step 1: atomics ----------------------------------------------------------------------
@triton.jit
def layer_norm_bwd_atomic_kernel(
    x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, N, BLOCK_N: tl.constexpr
):
    # Program r computes dx for row r, then adds the row's terms of dweight and dbias into the
    # shared float32 sums. All M programs add into the same 2 * N addresses.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * N + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.atomic_add(dw_ptr + cols, dy * xhat, mask=mask, sem="relaxed")
    tl.atomic_add(db_ptr + cols, dy, mask=mask, sem="relaxed")


def layer_norm_bwd_atomic(
    dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Backward step 1: one program per row, ``dweight`` and ``dbias`` summed with atomic additions.

    Returns ``(dx, dweight, dbias)``, the weight gradients in ``weight``'s dtype.
    """
    _check(x, dy, weight, mean, rstd)
    M, N = x.shape
    dx = torch.empty_like(x)
    sums = torch.zeros((2, N), dtype=torch.float32, device=x.device)
    if x.numel():
        block_n = triton.next_power_of_2(N)
        layer_norm_bwd_atomic_kernel[(M,)](
            x, dy, dx, weight, mean, rstd, sums[0], sums[1], N, BLOCK_N=block_n, num_warps=scaled_warps(block_n)
        )
    grads = sums.to(weight.dtype)
    return dx, grads[0], grads[1]
