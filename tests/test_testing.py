"""The checking helpers themselves: what ``assert_close`` lets through and what it stops."""

from __future__ import annotations

import pytest
import torch

from tritonperf.testing import TOLERANCES, assert_close, max_abs_error, relative_error


def _large_bfloat16_reference() -> torch.Tensor:
    # Values in [16, 32), where bfloat16's ulp is 0.125: rounding alone costs up to 0.0625.
    generator = torch.Generator().manual_seed(0)
    return 16 + 16 * torch.rand(4096, dtype=torch.float64, generator=generator)


def test_rounded_reference_passes_where_rounding_alone_exceeds_the_absolute_limit():
    ref = _large_bfloat16_reference()
    out = ref.to(torch.bfloat16)
    assert max_abs_error(out, ref) > TOLERANCES[torch.bfloat16].abs  # the table alone would fail it
    assert_close(out, ref)


def test_rounding_the_other_way_at_a_boundary_passes():
    # A float32 result just across a rounding boundary lands one ulp from the rounded reference.
    ref = _large_bfloat16_reference()
    ref[7] = 16.0625 - 1e-6  # just below the midpoint of 16 and 16.125: rounds to 16
    out = ref.to(torch.bfloat16)
    out[7] = 16.125
    assert_close(out, ref)


def test_several_ulps_off_at_large_values_fails():
    ref = _large_bfloat16_reference()
    out = ref.to(torch.bfloat16)
    out[7] += 0.5  # four ulps
    with pytest.raises(AssertionError, match="max abs error"):
        assert_close(out, ref)


def test_float16_subnormal_outputs_get_the_rounding_allowance():
    ref = torch.linspace(1e-7, 5e-6, 1000, dtype=torch.float64)
    out = ref.to(torch.float16)
    assert relative_error(out, ref) > TOLERANCES[torch.float16].rel
    assert_close(out, ref)
    with pytest.raises(AssertionError, match="relative error"):
        assert_close(torch.zeros_like(out), ref)


def test_a_reference_beyond_the_dtype_loosens_nothing():
    # 1e6 rounds to infinity in float16: that element must not turn either limit into infinity.
    ref = torch.tensor([1.0, 2.0, 1e6], dtype=torch.float64)
    out = torch.tensor([1.0, 2.0, 65504.0], dtype=torch.float16)
    with pytest.raises(AssertionError):
        assert_close(out, ref)


def test_integer_outputs_stay_exact_against_a_float_reference():
    ref = torch.tensor([0.5, 3.0], dtype=torch.float64)
    with pytest.raises(AssertionError):
        assert_close(torch.tensor([0, 3], dtype=torch.int32), ref)


def test_nan_and_shape_mismatch_fail():
    ref = torch.ones(8, dtype=torch.float64)
    out = torch.ones(8, dtype=torch.float32)
    out[3] = float("nan")
    with pytest.raises(AssertionError, match="NaN"):
        assert_close(out, ref)
    with pytest.raises(AssertionError, match="shape"):
        assert_close(torch.ones(9, dtype=torch.float32), ref)
