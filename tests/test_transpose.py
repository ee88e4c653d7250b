"""transpose: every dtype bit for bit, odd and batched shapes, strided inputs, both kernels, the lesson's steps, bad input.

A transpose only moves data, so results must equal the reference exactly: they are compared
as integers of the element's width, which also checks NaN payloads and signed zeros.
"""

from __future__ import annotations

import importlib

import pytest
import torch
import triton
import triton.language as tl
from conftest import ON_GPU, gpu_only, within_arguments
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonperf import runtime
from tritonperf.bench.suites import transpose as suite
from tritonperf.kernels.transpose import (
    BITS_DTYPES,
    TILE_CONFIGS,
    UNALIGNED_TILE_CONFIGS,
    transpose,
    transpose_bytes,
    transpose_method,
    transpose_reference,
)
from tritonperf.ladders.transpose import transpose_coalesced_writes, transpose_row_per_program, transpose_tiles

# The module, not the function of the same name that tritonperf.kernels exports.
tp = importlib.import_module("tritonperf.kernels.transpose")

# Every dtype the kernel moves as 1-, 2-, 4- or 8-byte integers. bfloat16 needs no GPU gate here:
# the kernel never does bf16 arithmetic (the interpreter's known bf16 bug), it copies 16-bit words.
DTYPES = [
    torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int32,
    torch.int64, torch.bool, torch.complex64,
] + ([torch.float8_e4m3fn] if hasattr(torch, "float8_e4m3fn") else [])

FP32_TILE_M, FP32_TILE_N, _ = TILE_CONFIGS[4]


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(BITS_DTYPES[t.element_size()])


def assert_same_bits(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.shape == ref.shape, f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    assert out.dtype == ref.dtype and out.is_contiguous()
    diff = bits(out) != bits(ref)
    assert not diff.any(), f"{int(diff.sum())} element(s) differ (first at flat index {int(diff.flatten().nonzero()[0])})"


def random_input(shape, dtype, device) -> torch.Tensor:
    """Fresh random values of any dtype; integers stay clear of the poison value (the type's minimum)."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, device=device, dtype=torch.complex64 if dtype.is_complex else torch.float32).to(dtype)
    return torch.randint(-100, 100, shape, device=device).to(dtype)


def poisoned_output(shape, dtype, device) -> torch.Tensor:
    """An output no correct kernel leaves as is: NaN, the integer minimum, or a byte that is no valid bool."""
    if dtype == torch.bool:
        return torch.full(shape, 0x55, dtype=torch.int8, device=device).view(torch.bool)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.full(shape, torch.iinfo(dtype).min, dtype=dtype, device=device)


def check(x: torch.Tensor, **kwargs) -> torch.Tensor:
    out = poisoned_output((*x.shape[:-2], x.shape[-1], x.shape[-2]), x.dtype, x.device)
    with within_arguments():
        result = transpose(x, out, **kwargs)
    assert result is out
    assert_same_bits(out, transpose_reference(x))
    return out


# -- matrices ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [
    (1, 1),  # a single element: one program, almost every lane masked off
    (37, 53),  # primes: partial tiles on both sides, rows that are no multiple of 16 bytes
    (FP32_TILE_M + 1, 2 * FP32_TILE_N + 1),  # one element past whole tiles in both directions
])
def test_every_dtype_bit_for_bit(shape, dtype, device):
    check(random_input(shape, dtype, device))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [
    (1, 300),  # one row becomes one column; the tile shrinks to 16 rows
    (300, 1),  # one column becomes one row
    (FP32_TILE_M, FP32_TILE_N),  # exactly one tile: the unmasked path (for float32)
    (2 * FP32_TILE_M, 4 * FP32_TILE_N),  # whole tiles only, several programs, unmasked
    (1823, 781),  # odd and large: many tiles, ragged edges, group bands of unequal height
] + ([(16384, 16384), (8191, 4097), (12288, 5120)] if ON_GPU else []))  # the benchmark's shapes, on a GPU
def test_shapes(shape, dtype, device):
    check(random_input(shape, dtype, device))


def test_special_values_keep_their_bits(device):
    # NaN with a payload, both infinities, signed zeros and subnormals are copied, not converted.
    x = torch.tensor([[float("nan"), float("inf"), -float("inf")], [-0.0, 0.0, 1e-40]], device=device)
    x.view(torch.int32)[0, 0] = 0x7FC0_1234  # a NaN with a payload
    out = check(x)
    assert out.view(torch.int32)[0, 0].item() == 0x7FC0_1234
    assert out.view(torch.int32)[0, 1].item() == bits(torch.tensor(-0.0)).item()


def test_allocates_output_when_omitted(device):
    x = random_input((37, 53), torch.float16, device)
    out = transpose(x)
    assert out.shape == (53, 37) and out.dtype == x.dtype and out.device == x.device
    assert_same_bits(out, x.t().contiguous())


# -- batches -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [
    (3, 37, 53),  # a batch of odd matrices: batch folded into the flat grid
    (2, 3, 65, 40),  # two batch dimensions
    (4, 1, 1),  # a batch of single elements
    (5, FP32_TILE_M, FP32_TILE_N),  # a batch of whole tiles: unmasked
    (1, 37, 53),  # a batch of one
])
def test_batched(shape, device):
    check(random_input(shape, torch.float32, device))


# -- strided inputs ------------------------------------------------------------------------------
def _strided_inputs(device):
    base = random_input((90, 130), torch.float32, device)
    batch = random_input((4, 40, 100), torch.float32, device)
    return {
        "every-other-column": base[:, ::2],  # last stride 2: reads are no longer contiguous
        "every-third-row": base[::3],  # row stride 3N
        "transposed-view": base.t(),  # strides (1, N): transposing it back is a contiguous copy
        "offset-window": base[5:70, 3:101],  # storage offset and a row stride larger than the row
        "broadcast-row": base[:1].expand(50, 130),  # row stride 0
        "batch-slice": batch[:, :, 10:90],  # batch stride larger than one matrix
        "permuted-batch": random_input((3, 4, 20, 30), torch.float32, device).permute(1, 0, 2, 3),  # batch dims do not merge
        "transposed-batch": batch.transpose(-1, -2),  # each matrix column-major
    }


@pytest.mark.parametrize("name", list(_strided_inputs("cpu")))
def test_strided_inputs(name, device):
    x = _strided_inputs(device)[name]
    assert not x.is_contiguous()
    check(x)


def test_64_bit_offsets_path(device, monkeypatch):
    # Pretend 32-bit offsets overflow already, so the INT64 branch runs in the interpreter too.
    monkeypatch.setattr(tp, "_INT32_LIMIT", 100)
    check(random_input((3, 37, 53), torch.float32, device))
    check(random_input((90, 130), torch.int8, device)[:, ::2])


def test_rows_off_16_byte_multiples_take_their_own_tile(device, monkeypatch):
    chosen = []
    choose = tp._config
    monkeypatch.setattr(tp, "_config", lambda table, *args: chosen.append(table[4]) or choose(table, *args))
    check(random_input((256, 256), torch.float32, device))
    check(random_input((256, 260), torch.float32, device)[:, :255])  # input rows 1040 bytes apart, output rows of 1 KiB
    check(random_input((256, 257), torch.float32, device))  # input rows 1028 bytes apart
    check(random_input((257, 256), torch.float32, device))  # output rows of 1028 bytes
    check(random_input((256, 259), torch.float32, device)[:, :256])  # input rows 1036 bytes apart
    aligned, unaligned = TILE_CONFIGS[4], UNALIGNED_TILE_CONFIGS[4]
    assert chosen == [aligned, aligned, unaligned, unaligned, unaligned]


def test_small_matrices_take_narrower_default_tiles():
    # float16 4096 x 4096 in 128 x 128 tiles: 1024 tiles, fewer than 8 an SM on a GPU of 132 SMs.
    few = tp.MIN_TILES_PER_SM * 132
    assert tp._config(TILE_CONFIGS, 4096, 4096, 2, None, None, None, 1, few) == (128, 64, 4)
    assert tp._config(TILE_CONFIGS, 4096, 4096, 2, None, None, None, 2, few) == (128, 128, 8)  # a batch of two: 2048 tiles
    assert tp._config(TILE_CONFIGS, 8192, 8192, 2, None, None, None, 1, few) == (128, 128, 8)
    # A tile width or warp count the caller chose is kept.
    assert tp._config(TILE_CONFIGS, 4096, 4096, 2, None, 128, None, 1, few) == (128, 128, 8)
    assert tp._config(TILE_CONFIGS, 4096, 4096, 2, None, None, 8, 1, few) == (128, 128, 8)
    # Tiles of fewer than 8 warps are kept: the unaligned float16 entry, 256 x 32 in 4 warps.
    unaligned = TILE_CONFIGS | UNALIGNED_TILE_CONFIGS
    assert tp._config(unaligned, 2047, 2049, 2, None, None, None, 1, few) == UNALIGNED_TILE_CONFIGS[2]
    assert tp._config(unaligned, 2047, 2049, 4, None, None, None, 1, few) == (128, 32, 4)


@triton.jit
def _coordinates_kernel(out_ptr, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    b, pid_m, pid_n = tp.tile_coordinates(pid, tiles_m, tiles_n, GROUP_M)
    tl.store(out_ptr + 3 * pid, b)
    tl.store(out_ptr + 3 * pid + 1, pid_m)
    tl.store(out_ptr + 3 * pid + 2, pid_n)


@pytest.mark.parametrize("group_m", [0, 1, 2, 3, 8])
def test_program_order_visits_every_tile_once(group_m, device):
    # 2 matrices of 7 x 5 tiles: every (matrix, tile row, tile column) once, matrix by matrix.
    tiles_m, tiles_n, batch = 7, 5, 2
    out = torch.full((batch * tiles_m * tiles_n, 3), -1, dtype=torch.int32, device=device)
    _coordinates_kernel[(out.shape[0],)](out, tiles_m, tiles_n, GROUP_M=group_m)
    seen = [tuple(row) for row in out.cpu().tolist()]
    assert sorted(seen) == [(b, m, n) for b in range(batch) for m in range(tiles_m) for n in range(tiles_n)]
    assert [b for b, _, _ in seen] == sorted(b for b, _, _ in seen)
    first = seen[: tiles_m * tiles_n]
    if group_m == 0:  # down each tile column, one column after another
        assert first == [(0, m, n) for n in range(tiles_n) for m in range(tiles_m)]
    elif group_m == 1:  # row-major
        assert first == [(0, m, n) for m in range(tiles_m) for n in range(tiles_n)]
    else:  # the first band: group_m tile rows (all of them, if fewer), walked column by column
        rows = min(group_m, tiles_m)
        assert first[: rows * tiles_n] == [(0, m, n) for n in range(tiles_n) for m in range(rows)]


# -- tuning knobs --------------------------------------------------------------------------------
@pytest.mark.parametrize("block_m, block_n, group_m, num_warps", [
    (16, 64, 1, 2),  # row-major program order
    (64, 16, 3, 4),  # 3 tile rows per band: the last band is shorter
    (32, 32, 8, 4),  # bands taller than the matrix has tile rows
    (128, 128, 2, 8),  # one tile covers the matrix
    (16, 256, 5, 1),  # wide, flat tiles
])
def test_knobs(block_m, block_n, group_m, num_warps, device):
    # 130 x 70: no block size divides it.
    check(random_input((130, 70), torch.float32, device), block_m=block_m, block_n=block_n, group_m=group_m, num_warps=num_warps)


@pytest.mark.parametrize("method", ["tiles", "pairs", "tma", "realign"])
@pytest.mark.parametrize("programs_per_sm, num_stages", [(1, None), (2, 2), (1000, None)])
def test_persistent_grid(method, programs_per_sm, num_stages, device):
    # 3 matrices of 3 x 2 tiles = 18 tiles. In the interpreter a persistent grid assumes 4 SMs, so
    # 1 program per SM loops 4 or 5 times, 2 per SM 2 or 3 times, and 1000 per SM is capped at 18 programs.
    if method == "tma" and ON_GPU and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("tensor descriptors need compute capability 9.0 or newer")
    x = random_input((3, 160, 96), torch.float32, device)
    check(x, method=method, block_m=64, block_n=64, programs_per_sm=programs_per_sm, num_stages=num_stages)


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 3), m=st.integers(1, 150), n=st.integers(1, 150),
    block_m_log2=st.integers(4, 6), block_n_log2=st.integers(4, 6), group_m=st.integers(1, 9),
)
def test_property_any_shape_any_tile(batch, m, n, block_m_log2, block_n_log2, group_m):
    x = random_input((batch, m, n), torch.float32, runtime.default_device())
    check(x, method="tiles", block_m=1 << block_m_log2, block_n=1 << block_n_log2, group_m=group_m)


# -- the tensor-descriptor (TMA) kernel ----------------------------------------------------------
# Triton's interpreter runs tensor descriptors, so this kernel is checked on the CPU too.
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.int64], ids=str)
@pytest.mark.parametrize("shape", [
    (48, 96),  # 2-D descriptors, partial tiles clipped by the descriptor
    (3, 48, 96),  # 3-D descriptors: [matrix, row, column]
    (2, 2, 32, 64),  # two batch dimensions folded into one
])
def test_tensor_descriptor_kernel(shape, dtype, device):
    if ON_GPU and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("tensor descriptors need compute capability 9.0 or newer")
    check(random_input(shape, dtype, device), method="tma")


def test_tensor_descriptor_kernel_with_knobs(device):
    if ON_GPU and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("tensor descriptors need compute capability 9.0 or newer")
    check(random_input((2, 80, 144), torch.float32, device), method="tma", block_m=32, block_n=64, group_m=3, num_warps=2)
    check(random_input((80, 144), torch.float32, device)[:, 16:], method="tma")  # aligned row stride, offset start


@pytest.mark.parametrize("case, match", [
    ("odd-rows", "input row must start at a 16-byte multiple"),
    ("odd-columns", "output row must start at a 16-byte multiple"),
    ("strided-columns", "last dimension must be contiguous"),
    ("unaligned-start", "16-byte aligned addresses"),
])
def test_tensor_descriptor_kernel_refuses_what_it_cannot_do(case, match, device):
    x = {
        "odd-rows": lambda: random_input((48, 37), torch.float32, device),  # 37 * 4 bytes per input row
        "odd-columns": lambda: random_input((37, 48), torch.float32, device),  # 37 * 4 bytes per output row
        "strided-columns": lambda: random_input((48, 96), torch.float32, device)[:, ::2],
        "unaligned-start": lambda: random_input((48, 96), torch.float32, device)[:, 1:],
    }[case]()
    with pytest.raises(ValueError, match=match):
        transpose(x, method="tma")
    check(x)  # method="auto" still handles it, with the pointer kernel


def test_auto_method(device):
    x = random_input((48, 96), torch.float32, device)
    expected = "tma" if ON_GPU and torch.cuda.get_device_capability()[0] >= 9 and 4 in tp.AUTO_TMA_SIZES else "pairs"
    assert transpose_method(x) == expected
    assert transpose_method(x[:, :37]) == "tiles"  # rows of 37 * 4 bytes
    assert transpose_method(x[:47]) == "tiles"  # an odd number of rows
    assert transpose_method(x[:, 1:95]) == "tiles"  # starts half a pair in
    assert transpose_method(x[:, 2:96]) == expected  # starts a whole pair in
    assert transpose_method(random_input((48, 96), torch.float64, device)) == "tiles"
    assert transpose_method(random_input((48, 96), torch.int8, device)) == "tiles"
    check(x, method="tiles")
    check(x, method="auto")


# -- the pair kernel -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int16, torch.int32], ids=str)
@pytest.mark.parametrize("shape", [
    (2, 2),  # one 2 x 2 block: one pair of each row in, one of each row out
    (48, 96),  # partial tiles
    (2 * 128, 2 * 128),  # whole tiles of both element sizes: the unmasked path
    (130, 70),  # no tile divides it
    (3, 48, 96),  # a batch
    (2, 2, 32, 64),  # two batch dimensions folded into one
])
def test_pair_kernel(shape, dtype, device):
    x = random_input(shape, dtype, device)
    assert transpose_method(x) == "pairs"
    check(x, method="pairs")


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32], ids=str)
def test_pair_kernel_keeps_every_bit(dtype, device):
    # Random bit patterns and the extremes, sign bits included: the kernel splits words with arithmetic shifts.
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, (64, 96), dtype=torch.int64, device=device).to(dtype)
    x[0, :4] = torch.tensor([info.min, -1, info.max, 0], dtype=dtype)
    x[1, :4] = torch.tensor([-1, info.min, 0, info.max], dtype=dtype)
    check(x, method="pairs")
    check(x.view(torch.float16 if dtype == torch.int16 else torch.float32), method="pairs")  # NaNs with payloads


def test_pair_kernel_with_knobs_and_strides(device):
    x = random_input((130, 196), torch.float16, device)
    check(x[:, 2:194], method="pairs")  # rows padded in memory, a start a whole pair in
    check(x, method="pairs", block_m=2, block_n=2, num_warps=1)  # the smallest tile
    check(x, method="pairs", block_m=64, block_n=16, group_m=3, num_warps=2)
    batch = random_input((4, 70, 60), torch.float32, device)
    check(batch[::2], method="pairs")  # matrices apart in memory


@pytest.mark.parametrize("case, match", [
    ("odd-rows", "both dimensions must be even, got 47 x 96"),
    ("odd-columns", "both dimensions must be even, got 48 x 95"),
    ("strided-columns", "the input's last dimension must be contiguous"),
    ("half-pair-start", "input and output must start at 8-byte aligned addresses"),
    ("odd-row-stride", r"every input row must start at a whole pair of elements \(row stride 97\)"),
    ("odd-matrix-stride", r"every input matrix must start at a whole pair of elements \(matrix stride 4609\)"),
    ("8-byte", r"8-byte elements are not moved in pairs \(only 2- and 4-byte ones are\)"),
    ("1-byte", "1-byte elements are not moved in pairs"),
])
def test_pair_kernel_refuses_what_it_cannot_do(case, match, device):
    x = {
        "odd-rows": lambda: random_input((47, 96), torch.float32, device),
        "odd-columns": lambda: random_input((48, 95), torch.float32, device),
        "strided-columns": lambda: random_input((48, 192), torch.float32, device)[:, ::2],
        "half-pair-start": lambda: random_input((48, 98), torch.float32, device)[:, 1:97],
        "odd-row-stride": lambda: random_input((48, 97), torch.float32, device)[:, :96],
        "odd-matrix-stride": lambda: random_input((2 * 4609,), torch.float32, device).as_strided((2, 48, 96), (4609, 96, 1)),
        "8-byte": lambda: random_input((48, 96), torch.float64, device),
        "1-byte": lambda: random_input((48, 96), torch.int8, device),
    }[case]()
    with pytest.raises(ValueError, match=f"method='pairs' cannot be used here: {match}"):
        transpose(x, method="pairs")
    check(x)  # method="auto" still handles it, with the pointer kernel


# -- the access watch that check() runs under ---------------------------------------------------
@triton.jit
def _copy_one_too_many(x_ptr, y_ptr, n, EXTRA: tl.constexpr, BLOCK: tl.constexpr, MASKED: tl.constexpr = True):
    offsets = tl.arange(0, BLOCK)
    values = tl.load(x_ptr + offsets, mask=offsets < n + EXTRA) if MASKED else tl.load(x_ptr + offsets)
    tl.store(y_ptr + offsets, values, mask=offsets < n)


@pytest.mark.skipif(ON_GPU, reason="the watch works in the interpreter; on a GPU, memcheck does this")
def test_the_access_watch_fails_a_kernel_that_reads_past_its_tensors():
    x, y = torch.arange(5.0), torch.empty(5)
    with within_arguments():
        _copy_one_too_many[(1,)](x, y, 5, EXTRA=0, BLOCK=8)  # in bounds: passes
        with pytest.raises(Exception, match="a load of 1 4-byte element"):
            _copy_one_too_many[(1,)](x, y, 5, EXTRA=1, BLOCK=8)
        with pytest.raises(Exception, match="a load of 3 4-byte element"):  # unmasked loads are watched too
            _copy_one_too_many[(1,)](x, y, 5, EXTRA=0, BLOCK=8, MASKED=False)


# -- the realigning kernel -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [
    (1, 1),  # a single element: its vector holds the start and the end of y
    (7, 9),  # rows of y shorter than a vector of 1-, 2- and 4-byte elements
    (61, 37),  # rows at every offset from a vector boundary, on both sides
    (64, 64),  # rows at 16-byte multiples: no shift at all
    (130, 70),  # partial tiles
    (3, 33, 17),  # a batch: vectors across the end of one matrix and the start of the next
])
def test_realigning_kernel(shape, dtype, device):
    check(random_input(shape, dtype, device), method="realign")


def test_realigning_kernel_with_knobs_and_strides(device, monkeypatch):
    x = random_input((130, 200), torch.float16, device)
    check(x[:, :187], method="realign")  # rows padded in memory: the reads run past each row's end
    check(x[:, 8:197], method="realign")  # a start 16 bytes in
    check(x, method="realign", block_m=16, block_n=16, num_warps=1)  # the smallest tile: one useful vector a side
    check(x[:, :187], method="realign", block_m=32, block_n=64, group_m=3, num_warps=2)
    batch = random_input((5, 70, 61), torch.float32, device)
    check(batch[::2], method="realign")  # matrices apart in memory
    check(batch[:, :, :59], method="realign")
    monkeypatch.setattr(tp, "_INT32_LIMIT", 100)  # the 64-bit offsets branch, in the interpreter too
    check(batch, method="realign")
    check(random_input((37, 53), torch.int8, device), method="realign")


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 3), m=st.integers(1, 120), n=st.integers(1, 120), size_log2=st.integers(0, 3),
    block_m_extra=st.integers(0, 2), block_n_extra=st.integers(0, 2), group_m=st.integers(0, 9),
)
def test_property_realigning_kernel_any_shape_any_tile(batch, m, n, size_log2, block_m_extra, block_n_extra, group_m):
    dtype = BITS_DTYPES[1 << size_log2]
    vec = 16 >> size_log2
    x = random_input((batch, m, n), dtype, runtime.default_device())
    check(x, method="realign", block_m=2 * vec << block_m_extra, block_n=2 * vec << block_n_extra, group_m=group_m or None)


@pytest.mark.parametrize("case, match", [
    ("strided-columns", "the input's last dimension must be contiguous"),
    ("unaligned-input", "input and output must start at 16-byte aligned addresses"),
    ("unaligned-output", "input and output must start at 16-byte aligned addresses"),
])
def test_realigning_kernel_refuses_what_it_cannot_do(case, match, device):
    x = {
        "strided-columns": lambda: random_input((48, 192), torch.float32, device)[:, ::2],
        "unaligned-input": lambda: random_input((48, 98), torch.float32, device)[:, 1:97],
        "unaligned-output": lambda: random_input((48, 96), torch.float32, device),
    }[case]()
    out = None
    if case == "unaligned-output":
        out = torch.empty(96 * 48 + 1, dtype=x.dtype, device=device)[1:].view(96, 48)
    with pytest.raises(ValueError, match=f"method='realign' cannot be used here: {match}"):
        transpose(x, out, method="realign")
    check(x)  # method="auto" still handles it, with the pointer kernel


@pytest.mark.parametrize("dtype, block_m, block_n", [(torch.float32, 4, 64), (torch.float16, 64, 8), (torch.int8, 16, 16)])
def test_realigning_kernel_rejects_tiles_without_room_past_the_overlap(dtype, block_m, block_n, device):
    vec = 16 // torch.empty((), dtype=dtype).element_size()
    with pytest.raises(ValueError, match=f"block_m and block_n must be at least {2 * vec} for"):
        transpose(random_input((64, 64), dtype, device), method="realign", block_m=block_m, block_n=block_n)


# -- empty tensors -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (3, 0, 4), (0, 2, 3)])
def test_empty_tensors_return_empty(shape, device):
    x = torch.empty(shape, device=device)
    out = transpose(x)
    assert out.shape == (*shape[:-2], shape[-1], shape[-2]) and out.numel() == 0


# -- bad input -----------------------------------------------------------------------------------
def test_rejects_non_tensor():
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        transpose([[1.0, 2.0]])


@pytest.mark.parametrize("shape", [(), (7,)])
def test_rejects_rank_below_2(shape, device):
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        transpose(torch.zeros(shape, device=device))


def test_rejects_16_byte_elements(device):
    with pytest.raises(TypeError, match=r"complex128 \(16 bytes per element\); supported: any non-quantized dtype of 1, 2, 4 or 8"):
        transpose(torch.zeros(4, 4, dtype=torch.complex128, device=device))


def test_rejects_sparse(device):
    with pytest.raises(ValueError, match="dense"):
        transpose(torch.eye(4).to_sparse())


def test_rejects_bad_out(device):
    x = random_input((6, 4), torch.float32, device)
    with pytest.raises(ValueError, match=r"out must have shape \(4, 6\)"):
        transpose(x, torch.empty(6, 4, device=device))
    with pytest.raises(ValueError, match="dtypes differ"):
        transpose(x, torch.empty(4, 6, dtype=torch.float16, device=device))
    with pytest.raises(ValueError, match="out must be contiguous"):
        transpose(x, torch.empty(6, 4, device=device).t())
    with pytest.raises(TypeError, match="out must be a torch.Tensor"):
        transpose(x, [0.0] * 24)


def test_rejects_output_sharing_memory_with_input(device):
    buffer = random_input((2, 16, 16), torch.float32, device)
    with pytest.raises(ValueError, match="shares memory"):
        transpose(buffer[0], buffer[1])


def test_rejects_mixed_devices(device):
    with pytest.raises(ValueError, match="same device"):
        transpose(random_input((4, 4), torch.float32, device), torch.empty(4, 4, device="meta"))


def test_rejects_meta_tensors():
    with pytest.raises(ValueError, match="not supported"):
        transpose(torch.empty(4, 4, device="meta"))


def test_cpu_tensors_outside_interpreter_mode_get_a_clear_error(monkeypatch):
    monkeypatch.setattr(runtime, "MODE", "gpu")
    with pytest.raises(ValueError, match=r"got CPU tensors.*\.cuda\(\)"):
        transpose(torch.zeros(4, 4))


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "shared"}, "method must be one of auto, tiles, pairs, tma"),
    ({"block_m": 0}, "block_m must be a power of two"),
    ({"block_n": 48}, "block_n must be a power of two"),
    ({"block_m": 2048}, "between 1 and 1024"),
    ({"block_m": 1024, "block_n": 2048}, "block_n must be a power of two between 1 and 1024"),
    ({"block_m": 1024, "block_n": 1024, "method": "tiles"}, "block_m \\* block_n must be at most"),
    ({"num_warps": 3}, "num_warps must be a power of two"),
    ({"num_warps": 64}, "between 1 and 32"),
    ({"group_m": 0}, "group_m must be a positive integer"),
    ({"group_m": 1.5}, "group_m must be a positive integer"),
    ({"programs_per_sm": 0}, "programs_per_sm must be a positive integer"),
    ({"num_stages": -1}, "num_stages must be a positive integer"),
    ({"method": "tma", "block_m": 512}, "between 1 and 256"),
    ({"method": "pairs", "block_m": 1}, "block_m and block_n must be at least 2, got 1 and"),
])
def test_rejects_bad_knobs(kwargs, match, device):
    with pytest.raises(ValueError, match=match):
        transpose(random_input((64, 64), torch.float32, device), **kwargs)


def test_rejects_tensor_descriptor_tiles_under_16_bytes(device):
    with pytest.raises(ValueError, match="at least 16 bytes a side"):
        transpose(random_input((64, 64), torch.int8, device), method="tma", block_m=8)


# -- the lesson's steps --------------------------------------------------------------------------
STEPS = [transpose_row_per_program, transpose_coalesced_writes, transpose_tiles]


@pytest.mark.parametrize("step", STEPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [
    (1, 1),  # one element
    (37, 53),  # primes: ragged blocks and tiles
    (130, 70),  # several tiles per side for step 3's 32 x 32 tiles, none whole at the edges
])
def test_lesson_steps(step, shape, dtype, device):
    x = random_input(shape, dtype, device)
    out = poisoned_output((shape[1], shape[0]), dtype, device)
    assert step(x, out) is out
    assert_same_bits(out, transpose_reference(x))
    assert_same_bits(step(x), transpose_reference(x))


@pytest.mark.parametrize("step", STEPS, ids=lambda f: f.__name__)
def test_lesson_steps_small_blocks(step, device):
    # Blocks of 16: the loops of steps 1 and 2 take several trips, and step 3 has many tiles.
    kwargs = {transpose_row_per_program: {"block_n": 16}, transpose_coalesced_writes: {"block_m": 16}, transpose_tiles: {"block": 16}}
    x = random_input((45, 61), torch.float32, device)
    assert_same_bits(step(x, **kwargs[step]), transpose_reference(x))


@pytest.mark.parametrize("step", STEPS, ids=lambda f: f.__name__)
def test_lesson_steps_reject_what_they_do_not_handle(step, device):
    with pytest.raises(ValueError, match="2-D tensors"):
        step(random_input((2, 3, 4), torch.float32, device))
    with pytest.raises(ValueError, match="x must be contiguous"):
        step(random_input((8, 8), torch.float32, device).t())
    with pytest.raises(ValueError, match=r"out must have shape \(4, 8\)"):
        step(random_input((8, 4), torch.float32, device), torch.empty(8, 4, device=device))
    x = random_input((0, 4), torch.float32, device)
    assert step(x).shape == (4, 0)


# -- counts and the benchmark suite --------------------------------------------------------------
def test_bytes_count():
    assert transpose_bytes(1000, 30, torch.float32) == 240_000
    assert transpose_bytes(1000, 30, torch.float16, batch=3) == 360_000
    assert transpose_bytes(16384, 16384, torch.float32) == 2 * 2**30  # 1 GiB read, 1 GiB written


def test_bench_suite_is_well_formed():
    (spec,) = suite.specs()
    assert (spec.kernel, spec.direction, spec.metric, spec.x) == ("transpose", "fwd", "GBps", "N")
    assert all(set(s) == {"M", "N"} for s in [*spec.shapes, *spec.quick_shapes])
    assert {"tritonperf", "torch", "torch.compile"} <= set(spec.variants)
    steps = sorted(v for v in spec.variants if v.startswith("step-"))
    assert steps == ["step-1-row-per-program", "step-2-coalesced-writes", "step-3-tiles", "step-4-tuned", "step-5-tma",
                     "step-6-pairs", "step-7-realign"]
    assert spec.nbytes({"M": 4096, "N": 4096}, torch.float16) == 2 * 2 * 4096 * 4096


@pytest.mark.parametrize("quick", [False, True])
def test_bench_tma_pair_and_realign_steps_only_where_they_run(quick):
    # method="tma" refuses rows that are not 16-byte multiples and method="pairs" odd dimensions,
    # so the suite must not run them there; method="realign" is measured only where rows are not
    # 16-byte multiples, its reason to exist. Every other variant runs on every shape.
    (spec,) = suite.specs()
    cases = spec.cases(quick=quick)
    for dtype in spec.dtypes:
        size = torch.empty((), dtype=dtype).element_size()
        for shape in spec.quick_shapes if quick else spec.shapes:
            ran = {variant for d, s, variant in cases if d == dtype and s == shape}
            aligned = shape["M"] * size % 16 == 0 and shape["N"] * size % 16 == 0
            even = shape["M"] % 2 == 0 and shape["N"] % 2 == 0
            skipped = ({"step-5-tma"} if not aligned else {"step-7-realign"}) | ({"step-6-pairs"} if not even else set())
            assert ran == set(spec.variants) - skipped, (shape, dtype)
    # The suite's shapes include both kinds, so the test cannot pass vacuously.
    assert any(v == "step-5-tma" for _, _, v in cases) and any(v == "step-6-pairs" for _, _, v in cases)
    assert any(v == "step-7-realign" for _, _, v in cases)
    assert len(cases) < len(spec.dtypes) * len(spec.quick_shapes if quick else spec.shapes) * len(spec.variants)


def test_bench_torch_baselines_write_into_out(device):
    x = random_input((37, 53), torch.float32, device)
    out = poisoned_output((53, 37), torch.float32, device)
    suite.torch_transpose(x, out)
    assert_same_bits(out, x.t().contiguous())


# -- GPU only: sizes the interpreter cannot reach ------------------------------------------------
@gpu_only
@pytest.mark.large_memory
@pytest.mark.parametrize("method", ["tiles", "auto"])
def test_offsets_past_2_31_elements(method):
    # 3 x 32768 x 32768 int8 = 3.2 G elements: 32-bit offsets into the last matrix would wrap around.
    x = torch.zeros((3, 32768, 32768), dtype=torch.int8, device="cuda")
    x[2, -1, :5] = torch.tensor([1, 2, 3, 4, 5], dtype=torch.int8, device="cuda")
    x[2, 7, -1] = 9
    out = transpose(x, method=method)
    assert out[2, :5, -1].tolist() == [1, 2, 3, 4, 5]
    assert out[2, -1, 7].item() == 9
    assert int(out.sum(dtype=torch.int64)) == 24


@gpu_only
@pytest.mark.large_memory
def test_pair_offsets_past_2_31_pairs():
    # 5 x 32768 x 32768 float16 = 2.7 G pairs of 32 bits: 32-bit offsets into the last matrices would wrap around.
    x = torch.zeros((5, 32768, 32768), dtype=torch.int16, device="cuda")
    x[4, -2:, -2:] = torch.tensor([[1, 2], [3, 4]], dtype=torch.int16, device="cuda")
    x[4, 6, -1] = 9
    out = transpose(x.view(torch.float16), method="pairs").view(torch.int16)
    assert out[4, -2:, -2:].tolist() == [[1, 3], [2, 4]]
    assert out[4, -1, 6].item() == 9
    assert int(out.sum(dtype=torch.int64)) == 19


@gpu_only
@pytest.mark.parametrize("method", ["tiles", "auto"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8], ids=str)
def test_large_batches_on_gpu(method, dtype):
    check(random_input((8, 4096, 4096), dtype, "cuda"), method=method)
