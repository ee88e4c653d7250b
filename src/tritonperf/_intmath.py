"""Integer helpers for the launchers' host code.

``triton.cdiv`` and ``triton.next_power_of_2`` are constexpr functions in recent Triton: called from
Python, each call goes through Triton's argument unwrapping and costs microseconds (about 4.6 µs
measured with triton 3.9 on a CPU core), several times per launch. These are the same
functions in plain Python, for code outside kernels; kernels keep ``tl.cdiv``.
"""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers, as ``triton.cdiv``."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two ``>= n`` (0 for 0), as ``triton.next_power_of_2``."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def floor_power_of_2(n: int) -> int:
    """The largest power of two ``<= n``; 1 for ``n < 1``."""
    return 1 << (max(n, 1).bit_length() - 1)
