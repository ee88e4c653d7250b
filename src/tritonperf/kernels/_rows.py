"""What the row-wise kernels (softmax, layer and RMS norm) tell the compiler about their rows.

Triton vectorizes a masked load of a row, 16 bytes at a time, only when it can prove that the row
length and the row stride keep each 16-byte group of lanes whole. It learns that from its own
specialization of integer arguments, which notes divisibility by 16 and nothing finer: a row of
3000 16-bit elements (a multiple of 8, so every row starts 16-byte aligned) is read two bytes at a
time, and ran at about 0.6 of torch.compile's speed (H200, triton 3.6). ``tl.multiple_of`` does not
reach scalar arguments, so the launcher measures the alignment, passes it as a constexpr, and the
kernel rewrites each value in a form whose divisibility the compiler can see.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

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
