"""Helpers for checking kernels: one tolerance table, references, poisoned outputs, random inputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    """Largest accepted ``‖out − ref‖ / ‖ref‖`` and largest accepted max abs error."""

    rel: float
    abs: float


# One table for the whole project (DESIGN.md §3). Limits are for results compared
# against a float64 reference; kernels that only move data must match exactly.
TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float64: Tolerance(rel=1e-12, abs=1e-12),
    torch.float32: Tolerance(rel=1e-5, abs=1e-5),
    torch.float16: Tolerance(rel=2e-3, abs=1e-2),
    torch.bfloat16: Tolerance(rel=1e-2, abs=6e-2),
    torch.int32: Tolerance(rel=0.0, abs=0.0),
}


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``‖out − ref‖ / ‖ref‖`` in float64 (0 when both are zero; inf when only ``ref`` is)."""
    out64, ref64 = out.double(), ref.double()
    diff = torch.linalg.vector_norm(out64 - ref64).item()
    scale = torch.linalg.vector_norm(ref64).item()
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / scale


def max_abs_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Largest element-wise ``|out − ref|`` in float64 (0 for empty tensors)."""
    if out.numel() == 0:
        return 0.0
    return (out.double() - ref.double()).abs().max().item()


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype | None = None) -> None:
    """Fail unless ``out`` matches ``ref`` within the tolerance of ``dtype`` (default: ``out.dtype``).

    Shapes must match and NaN never passes, not even where ``ref`` is NaN too:
    references are computed on finite inputs, so a NaN means an unwritten or broken element.
    A floating-point ``out`` is never held closer to ``ref`` than twice what rounding ``ref`` to
    ``out``'s dtype costs, in either measure.
    """
    tol = TOLERANCES[dtype or out.dtype]
    assert out.shape == ref.shape, f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.is_floating_point():
        nan = torch.isnan(out)
        assert not nan.any(), f"{int(nan.sum())} NaN element(s) in the output (first at flat index {int(nan.flatten().nonzero()[0])})"
    rel, mx = relative_error(out, ref), max_abs_error(out, ref)
    if torch.linalg.vector_norm(ref.double()) == 0:
        rel = 0.0  # an all-zero reference has no relative scale: the absolute limit decides
    # No result is closer than the reference rounded to the output's dtype. Where that rounding alone
    # passes a limit of the table, allow twice it instead: the relative limit for float16 outputs in
    # the subnormal range, say, the absolute one for bfloat16 outputs of 16 or more (half an ulp
    # there is 0.0625). Elements that round to infinity loosen neither limit.
    rel_limit, abs_limit = tol.rel, tol.abs
    if out.is_floating_point() and ref.dtype != out.dtype:
        rounded = ref.to(out.dtype)
        finite = torch.isfinite(rounded)
        rel_limit = max(rel_limit, 2 * relative_error(rounded[finite], ref[finite]))
        abs_limit = max(abs_limit, 2 * max_abs_error(rounded[finite], ref[finite]))
    assert rel <= rel_limit and mx <= abs_limit, (
        f"relative error {rel:.3e} (limit {rel_limit:.1e}), max abs error {mx:.3e} (limit {abs_limit:.1e})"
    )


def poisoned(shape: Sequence[int], dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """An output buffer filled with NaN (or the smallest integer), so an element a kernel skips fails the check."""
    if dtype.is_floating_point:
        return torch.full(tuple(shape), float("nan"), dtype=dtype, device=device)
    return torch.full(tuple(shape), torch.iinfo(dtype).min, dtype=dtype, device=device)


def random_tensor(
    shape: Sequence[int], dtype: torch.dtype, device: torch.device | str, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Fresh standard-normal values (random integers in [-1000, 1000) for integer dtypes); never zeros."""
    if dtype.is_floating_point:
        return torch.randn(tuple(shape), device=device, generator=generator).to(dtype)
    return torch.randint(-1000, 1000, tuple(shape), device=device, dtype=dtype, generator=generator)
