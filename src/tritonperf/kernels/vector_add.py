"""Element-wise addition ``out = x + y``: the first lesson's kernel.

Vector addition does one floating-point operation per 3 memory accesses
(two loads, one store), so its speed is set by memory bandwidth alone: the
goal is to move ``3 * N * itemsize`` bytes as fast as a plain device copy.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import validation

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32)


# -- reference -----------------------------------------------------------------------------------
def vector_add_reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y`` in torch: reads ``2 * N`` elements, writes ``N``."""
    return x + y


# -- kernel --------------------------------------------------------------------------------------
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Each program handles one contiguous block of BLOCK_SIZE elements.
    pid = tl.program_id(axis=0)
    # int64 before the multiply: pid * BLOCK_SIZE passes 2**31 on tensors of > 2G elements.
    block_start = pid.to(tl.int64) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # The last block hangs over the end of the tensor unless N is a multiple of BLOCK_SIZE.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


# -- launcher ------------------------------------------------------------------------------------
DEFAULT_BLOCK_SIZE = 1024
DEFAULT_NUM_WARPS = 4


def vector_add(
    x: torch.Tensor,
    y: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    num_warps: int = DEFAULT_NUM_WARPS,
) -> torch.Tensor:
    """Add two tensors of the same shape and dtype element by element.

    Args:
        x, y: contiguous tensors of one shape, dtype (float32, float16, bfloat16
            or int32) and device: CUDA, or CPU in interpreter mode.
        out: optional contiguous tensor to write into; allocated when omitted.
        block_size: elements per program, a power of two.
        num_warps: warps per program.

    Returns:
        ``out``, holding ``x + y``.

    Raises:
        TypeError: a non-tensor argument or an unsupported dtype.
        ValueError: mismatched shapes, dtypes or devices, non-contiguous tensors,
            a CPU tensor outside interpreter mode, or a bad ``block_size``.
    """
    validation.check_tensor("x", x)
    validation.check_tensor("y", y)
    validation.check_device(x=x, y=y)
    validation.check_dtype("x", x, SUPPORTED_DTYPES)
    validation.check_same("dtype", x=x, y=y)
    validation.check_same("shape", x=x, y=y)
    validation.check_contiguous(x=x, y=y)
    if out is None:
        out = torch.empty_like(x)
    else:
        validation.check_out("out", out, "x", x)
    if block_size < 1 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a positive power of two, got {block_size}")

    n_elements = x.numel()
    if n_elements == 0:
        return out
    grid = (triton.cdiv(n_elements, block_size),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=block_size, num_warps=num_warps)
    return out


# -- counts --------------------------------------------------------------------------------------
def vector_add_bytes(n_elements: int, dtype: torch.dtype) -> int:
    """Bytes a perfect kernel moves: two inputs read once, the output written once."""
    return 3 * n_elements * torch.empty((), dtype=dtype).element_size()
