"""vector_add: correctness on odd sizes and every dtype, poisoned outputs, and errors on bad input."""

from __future__ import annotations

import pytest
import torch
from conftest import ON_GPU, gpu_only
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonperf import runtime, vector_add, vector_add_bytes, vector_add_reference
from tritonperf.kernels.vector_add import DEFAULT_BLOCK_SIZE
from tritonperf.testing import assert_close, poisoned, random_tensor

B = DEFAULT_BLOCK_SIZE
SIZES = [
    1,  # a single element: one program, all but one lane masked off
    7,  # smaller than any block
    B - 1,  # just under one block
    B,  # exactly one block, no masked lanes
    B + 1,  # one element into a second block
    1823 * 781,  # odd and large: many full blocks and a ragged last one
] + ([2**26 + 3, 10**8] if ON_GPU else [])  # full size on a GPU: ≥ 2²⁶ elements, the benchmark's range

# The interpreter computes bfloat16 arithmetic wrongly (DESIGN.md §3): bf16 is checked on the GPU only.
DTYPES = [torch.float32, torch.float16, torch.int32] + ([torch.bfloat16] if ON_GPU else [])


def _check(n_or_shape, dtype, device, **kwargs):
    shape = (n_or_shape,) if isinstance(n_or_shape, int) else n_or_shape
    x, y = random_tensor(shape, dtype, device), random_tensor(shape, dtype, device)
    out = poisoned(shape, dtype, device)
    result = vector_add(x, y, out, **kwargs)
    assert result is out
    # The sum of two values of a dtype, rounded once to it, is exactly what torch computes too.
    assert_close(out, vector_add_reference(x.double(), y.double()).to(dtype), dtype)
    assert torch.equal(out, vector_add_reference(x, y))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_matches_reference(n, dtype, device):
    _check(n, dtype, device)


@pytest.mark.parametrize("block_size, num_warps", [(1, 1), (128, 4), (1024, 4), (16384, 16)])
def test_block_sizes(block_size, num_warps, device):
    # 3 * block_size + 5 elements: several programs and a ragged tail whatever the block.
    _check(3 * block_size + 5, torch.float32, device, block_size=block_size, num_warps=num_warps)


def test_any_shape_is_added_elementwise(device):
    _check((37, 53, 3), torch.float32, device)


def test_allocates_output_when_omitted(device):
    x, y = random_tensor((1000,), torch.float16, device), random_tensor((1000,), torch.float16, device)
    out = vector_add(x, y)
    assert out.shape == x.shape and out.dtype == x.dtype and out.device == x.device
    assert torch.equal(out, x + y)


def test_empty_tensors_return_empty(device):
    x = torch.empty(0, device=device)
    out = vector_add(x, x.clone())
    assert out.numel() == 0 and out.shape == (0,)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=1, max_value=20_000), block_log2=st.integers(min_value=4, max_value=13))
def test_property_any_size_any_block(n, block_log2):
    _check(n, torch.float32, runtime.default_device(), block_size=1 << block_log2)


@gpu_only
@pytest.mark.large_memory
def test_offsets_past_2_31_elements():
    # 2**31 + 17 elements: a 32-bit offset would wrap around and write into the wrong place.
    n = 2**31 + 17
    x = torch.ones(n, dtype=torch.float16, device="cuda")
    y = torch.full((n,), 2.0, dtype=torch.float16, device="cuda")
    out = poisoned((n,), torch.float16, "cuda")
    vector_add(x, y, out)
    tail = slice(n - 4096, n)
    assert torch.all(out[tail] == 3.0) and not torch.isnan(out).any()
    x[-1], y[-1] = 0.5, 0.25
    vector_add(x, y, out)
    assert out[-1].item() == 0.75


# -- bad input -----------------------------------------------------------------------------------
def _pair(device, n=16, dtype=torch.float32):
    return random_tensor((n,), dtype, device), random_tensor((n,), dtype, device)


def test_rejects_non_tensor(device):
    x, _ = _pair(device)
    with pytest.raises(TypeError, match="y must be a torch.Tensor"):
        vector_add(x, [1.0] * 16)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.bool, torch.complex64], ids=str)
def test_rejects_unsupported_dtype(dtype, device):
    x = torch.zeros(16, dtype=dtype, device=device)
    with pytest.raises(TypeError, match="supported: float32, float16, bfloat16, int32"):
        vector_add(x, x.clone())


def test_rejects_mismatched_dtypes(device):
    x, _ = _pair(device)
    with pytest.raises(ValueError, match="dtypes differ"):
        vector_add(x, x.half())


def test_rejects_mismatched_shapes(device):
    x, _ = _pair(device, 16)
    y, _ = _pair(device, 17)
    with pytest.raises(ValueError, match=r"shapes differ: x: \(16,\), y: \(17,\)"):
        vector_add(x, y)


def test_rejects_bad_out(device):
    x, y = _pair(device)
    with pytest.raises(ValueError, match="shapes differ"):
        vector_add(x, y, torch.empty(15, device=device))
    with pytest.raises(ValueError, match="dtypes differ"):
        vector_add(x, y, torch.empty(16, dtype=torch.float16, device=device))
    with pytest.raises(ValueError, match="out must be contiguous"):
        vector_add(x, y, torch.empty(32, device=device)[::2])


def test_rejects_non_contiguous(device):
    x = random_tensor((32,), torch.float32, device)[::2]
    with pytest.raises(ValueError, match="x must be contiguous"):
        vector_add(x, x.contiguous())


def test_rejects_mixed_devices(device):
    x, _ = _pair(device)
    with pytest.raises(ValueError, match="same device"):
        vector_add(x, torch.empty(16, device="meta"))


def test_cpu_tensors_outside_interpreter_mode_get_a_clear_error(monkeypatch):
    # What a user meets on a GPU machine when they forget .cuda(): our message, not "0 active drivers".
    monkeypatch.setattr(runtime, "MODE", "gpu")
    x, y = _pair("cpu")
    with pytest.raises(ValueError, match=r"got CPU tensors.*\.cuda\(\).*TRITON_INTERPRET=1"):
        vector_add(x, y)


@pytest.mark.parametrize("block_size", [0, -4, 100])
def test_rejects_bad_block_size(block_size, device):
    x, y = _pair(device)
    with pytest.raises(ValueError, match="power of two"):
        vector_add(x, y, block_size=block_size)


def test_bytes_count():
    assert vector_add_bytes(1000, torch.float32) == 12_000
    assert vector_add_bytes(1000, torch.float16) == 6_000
