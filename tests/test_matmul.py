"""matmul: odd shapes, every dtype and activation, strided and batched operands, both kernels, the lesson's steps, bad input.

Results are compared with a float64 reference (``matmul_reference(..., out_dtype=torch.float64)``).
Inputs are scaled by ``K ** -0.25`` each, so that every output element has a variance of about 1
whatever K is: the table's absolute limits then mean the same at K = 1 and at K = 4096.
"""

from __future__ import annotations

import importlib
import re

import pytest
import torch
import triton
import triton.language as tl
from conftest import ON_GPU, gpu_only
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonperf import runtime
from tritonperf.bench.records import SCHEMA
from tritonperf.bench.suites import matmul as suite
from tritonperf.kernels.matmul import (
    ACTIVATIONS,
    CONFIGS,
    INTERPRETER_TILE,
    gpu_configs,
    grouped_tile,
    k_major,
    matmul,
    matmul_bytes,
    matmul_flops,
    matmul_reference,
    prune_configs,
)
from tritonperf.ladders.matmul import STEPS, matmul_persistent_tma, matmul_warp_specialized
from tritonperf.testing import assert_close, poisoned, random_tensor

# The module, not the function of the same name.
mm = importlib.import_module("tritonperf.kernels.matmul")

FP8 = torch.float8_e4m3fn
# The interpreter computes bfloat16 arithmetic wrongly (DESIGN.md §3): bf16 is checked on the GPU only.
# It rounds float32 to bfloat16 wrongly too, so float8 results (bfloat16 by default) are written as
# float16 or float32 on the CPU.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
FP8_OUT = torch.bfloat16 if ON_GPU else torch.float16
TMA_OK = not ON_GPU or torch.cuda.get_device_capability()[0] >= 9
needs_tma = pytest.mark.skipif(not TMA_OK, reason="tensor descriptors need compute capability 9.0 or newer")

# (M, N, K). The interpreter runs tiles of 32 x 32 x 32: each size below is smaller than a tile,
# one past a tile, or ragged, in some dimension.
SHAPES = [
    (1, 1, 1),  # one element, one term
    (1, 100, 17),  # a row vector times a matrix: one tile row, mostly masked
    (100, 1, 17),  # a single output column
    (17, 17, 17),  # smaller than a tile everywhere
    (100, 17, 128),  # K a multiple of the K tile: no partial K tile
    (17, 128, 100),  # a partial last K tile
    (128, 128, 128),  # whole tiles only, several tile rows and columns
] + (
    [
        (1000, 1000, 1000),
        (1823, 781, 1000),  # odd and large: ragged edges in M and N, K not a multiple of 16
        (16, 4096, 4096),  # decode-like: one thin row of tiles
        (1823, 1823, 1823),
        (4096, 4096, 4096),
    ]
    if ON_GPU
    else []
)


def inputs(shape_a, shape_b, dtype, device):
    """Random operands whose product has entries of variance about 1."""
    scale = max(shape_a[-1], 1) ** -0.25
    a = (random_tensor(shape_a, torch.float32, device) * scale).to(dtype)
    b = (random_tensor(shape_b, torch.float32, device) * scale).to(dtype)
    return a, b


def scales(device, sa=0.5, sb=0.25):
    return torch.tensor(sa, device=device), torch.tensor(sb, device=device)


def tolerance_dtype(in_dtype: torch.dtype, out_dtype: torch.dtype) -> torch.dtype:
    """The TOLERANCES row a result is judged by: its own dtype's, except in two GPU cases.

    A GPU multiplies float32 as tf32, whose 10-bit mantissa is float16's, and Hopper adds float8
    products over a K tile in an accumulator narrower than float32: float16's limits apply.
    The interpreter multiplies both exactly in float32.
    """
    if ON_GPU and out_dtype == torch.float32 and in_dtype in (torch.float32, FP8):
        return torch.float16
    return out_dtype


# On a GPU, check() pins one launch configuration unless a test names its own: autotuning would
# compile and time every candidate for each new combination of shape bucket, dtype, bias and
# activation, minutes for this file. Autotuning has tests of its own below.
PINNED_ON_GPU = dict(block_m=64, block_n=64, num_warps=4, num_stages=3)
NOT_LAUNCH_KNOBS = {"fast_accum"}  # arguments to check() that leave the launch configuration to it


def check(a, b, bias=None, activation=None, out_dtype=None, scale_a=None, scale_b=None, **knobs):
    """Run matmul into a NaN-filled output and compare with the float64 reference; return the result."""
    if ON_GPU and not knobs.keys() - NOT_LAUNCH_KNOBS:
        knobs = PINNED_ON_GPU | knobs
    batch = max(a.shape[0] if a.dim() == 3 else 0, b.shape[0] if b.dim() == 3 else 0)
    shape = (a.shape[-2], b.shape[-1]) if a.dim() == b.dim() == 2 else (batch, a.shape[-2], b.shape[-1])
    dtype = out_dtype or (torch.bfloat16 if a.dtype == FP8 else a.dtype)
    out = poisoned(shape, dtype, a.device)
    c = matmul(a, b, bias, activation, out_dtype, scale_a=scale_a, scale_b=scale_b, out=out, **knobs)
    assert c is out
    ref = matmul_reference(a, b, bias, activation, torch.float64, scale_a=scale_a, scale_b=scale_b)
    assert_close(c, ref, tolerance_dtype(a.dtype, dtype))
    return c


# -- the product ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_reference(shape, dtype, device):
    M, N, K = shape
    check(*inputs((M, K), (K, N), dtype, device))


def test_allocates_output_of_the_input_dtype(device):
    a, b = inputs((20, 30), (30, 40), torch.float16, device)
    c = matmul(a, b)
    assert c.shape == (20, 40) and c.dtype == torch.float16 and c.is_contiguous() and c.device == a.device
    assert_close(c, matmul_reference(a, b, out_dtype=torch.float64), torch.float16)


@pytest.mark.parametrize("in_dtype, out_dtype", [(torch.float16, torch.float32), (torch.float32, torch.float16)], ids=str)
def test_out_dtype(in_dtype, out_dtype, device):
    c = check(*inputs((33, 40), (40, 50), in_dtype, device), out_dtype=out_dtype)
    assert c.dtype == out_dtype


# -- the epilogue --------------------------------------------------------------------------------
@pytest.mark.parametrize("bias_dtype", [None, "out", torch.float32], ids=str)
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bias_and_activations(dtype, activation, bias_dtype, device):
    # 37 x 50 outputs: a bias vector broadcast over 37 rows, ragged in both directions.
    a, b = inputs((37, 70), (70, 50), dtype, device)
    bias = None if bias_dtype is None else random_tensor((50,), dtype if bias_dtype == "out" else bias_dtype, device)
    c = check(a, b, bias, activation)
    if activation == "relu":
        assert (c >= 0).all() and (c == 0).any()


def test_bias_is_added_to_every_row(device):
    # With a zero product the output is the bias itself, row after row.
    a = torch.zeros((5, 16), device=device)
    b = random_tensor((16, 7), torch.float32, device)
    bias = random_tensor((7,), torch.float32, device)
    assert torch.equal(matmul(a, b, bias), bias.expand(5, 7))


def test_gelu_is_the_exact_erf_form(device):
    # At x = -1 the erf form gives -0.158655 and the tanh approximation -0.158808.
    a = torch.full((1, 16), -1 / 16, device=device)
    b = torch.ones((16, 16), device=device)
    c = matmul(a, b, activation="gelu")
    assert torch.allclose(c, torch.full_like(c, -0.15865525), atol=2e-6)


def test_gelu_is_within_1e_7_of_the_exact_form_over_its_whole_range(device):
    # c = a @ b with b's first row all ones and a's first column x: every output column is x
    # itself (x in steps of 1/64, exact in tf32), so the only error left is the GELU's.
    x = torch.arange(-640, 641, device=device, dtype=torch.float32) / 64
    a = torch.zeros((x.numel(), 16), device=device)
    a[:, 0] = x
    b = torch.zeros((16, 16), device=device)
    b[0] = 1.0
    c = matmul(a, b, activation="gelu")
    exact = torch.nn.functional.gelu(x.double())[:, None].expand(-1, 16)
    err = (c.double() - exact).abs()
    # The CDF's absolute error (below 1.5e-7 / 2) times |x| <= 10, plus float32 rounding of values up to 10.
    assert err.max().item() < 1.5e-6, err.max().item()
    # The far negative tail: GELU(-10) is about -7.6e-23; a 1 - erf form would give 0 or noise of 1e-7.
    assert (c[x < -5] < 0).all() and (c[x < -5] > -1e-5).all()


# -- float8 --------------------------------------------------------------------------------------
@pytest.mark.parametrize("fast_accum", [False, True])
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 100), (64, 48, 128)], ids=str)
def test_fp8_with_scales(shape, fast_accum, device):
    # The interpreter runs float8_e4m3fn dots exactly (both operands are widened to float16 first).
    M, N, K = shape
    a, b = inputs((M, K), (K, N), FP8, device)
    sa, sb = scales(device)
    check(a, b, scale_a=sa, scale_b=sb, out_dtype=FP8_OUT, fast_accum=fast_accum)
    check(a, b, random_tensor((N,), torch.float32, device), "silu", torch.float32, sa, sb, fast_accum=fast_accum)


@gpu_only
@pytest.mark.parametrize("fast_accum", [False, True])
@pytest.mark.parametrize("shape", [(1000, 1000, 1000), (4096, 4096, 4096), (1823, 781, 1024)], ids=str)
def test_fp8_defaults_to_bfloat16_and_agrees_with_scaled_mm(shape, fast_accum):
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("float8 needs compute capability 8.9 or newer")
    M, N, K = shape
    a, b = inputs((M, K), (N, K), FP8, "cuda")
    b = b.t()  # column-major, as torch._scaled_mm needs
    sa, sb = scales("cuda", 0.75, 1.5)
    # Autotuned, not pinned: the configs the benchmark times, warp-specialized ones included.
    c = check(a, b, scale_a=sa, scale_b=sb, fast_accum=fast_accum, method="auto")
    assert c.dtype == torch.bfloat16
    if M % 16 == 0 and N % 16 == 0 and K % 16 == 0:
        theirs = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
        assert_close(c, theirs.double(), torch.bfloat16)


# -- layouts -------------------------------------------------------------------------------------
LAYOUTS = {
    "a-transposed": lambda a, b: (a.t().contiguous().t(), b),
    "b-transposed": lambda a, b: (a, b.t().contiguous().t()),
    "both-transposed": lambda a, b: (a.t().contiguous().t(), b.t().contiguous().t()),
    "strided-slices": lambda a, b: (_embed(a, 2, 3), _embed(b, 3, 2)),
    "broadcast-rows": lambda a, b: (a, b[:1].expand_as(b)),  # stride 0 along K
}


def _embed(t, step_r, step_c):
    """``t``'s values in a view of a larger tensor, with steps between rows and between columns."""
    big = torch.zeros((t.shape[0] * step_r + 1, t.shape[1] * step_c + 1), dtype=t.dtype, device=t.device)
    view = big[1::step_r, 1::step_c]
    view.copy_(t)
    return view


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_operands_are_read_in_place(layout, dtype, device):
    a, b = LAYOUTS[layout](*inputs((45, 70), (70, 38), dtype, device))
    assert not (a.is_contiguous() and b.is_contiguous())
    check(a, b)


@pytest.mark.parametrize("case", ["3d-3d", "3d-2d", "2d-3d", "3d-batch-of-1", "transposed-batches"])
def test_batched(case, device):
    dtype = torch.float32
    a, b = {
        "3d-3d": lambda: inputs((3, 40, 50), (3, 50, 33), dtype, device),
        "3d-2d": lambda: inputs((4, 40, 50), (50, 33), dtype, device),  # b shared by every matrix
        "2d-3d": lambda: inputs((40, 50), (2, 50, 33), dtype, device),
        "3d-batch-of-1": lambda: inputs((1, 40, 50), (3, 50, 33), dtype, device),
        # Every dimension strided: the batch is the innermost dimension in memory.
        "transposed-batches": lambda: [t.transpose(0, 2).contiguous().transpose(0, 2)
                                       for t in inputs((3, 40, 50), (3, 50, 33), dtype, device)],
    }[case]()
    c = check(a, b, random_tensor((33,), dtype, device), "relu")
    assert c.dim() == 3


def test_a_batch_of_one_keeps_its_batch_dimension(device):
    a, b = inputs((1, 8, 16), (16, 8), torch.float32, device)
    assert check(a, b).shape == (1, 8, 8)


@pytest.mark.parametrize("shape_a, shape_b", [((0, 5), (5, 7)), ((5, 7), (7, 0)), ((0, 4, 5), (5, 6))], ids=str)
def test_empty_outputs(shape_a, shape_b, device):
    a, b = torch.empty(shape_a, device=device), torch.empty(shape_b, device=device)
    c = matmul(a, b)
    assert c.shape == torch.matmul(a, b).shape and c.numel() == 0


def test_empty_inner_dimension_leaves_the_epilogue(device):
    # K = 0: every product is an empty sum, so the output is activation(bias) on every row.
    a, b = torch.empty((4, 0), device=device), torch.empty((0, 6), device=device)
    bias = random_tensor((6,), torch.float32, device)
    out = poisoned((4, 6), torch.float32, device)
    matmul(a, b, bias, "relu", out=out)
    assert torch.equal(out, torch.relu(bias).expand(4, 6))


# -- knobs and the program order -----------------------------------------------------------------
@pytest.mark.parametrize("block_m, block_n, block_k, group_m, num_warps", [
    (16, 32, 16, 1, 1),  # row-major program order, small tiles, many K steps
    (64, 16, 32, 3, 4),  # 3 tile rows per group: the last group is shorter (2 tile rows of 5)
    (32, 32, 64, 8, 2),  # groups taller than the matrix has tile rows
    (128, 128, 32, 2, 8),  # one tile covers the whole output
])
def test_pinned_configurations(block_m, block_n, block_k, group_m, num_warps, device):
    # 130 x 70 x 90: no block size divides any dimension.
    a, b = inputs((130, 90), (90, 70), torch.float32, device)
    check(a, b, block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m, num_warps=num_warps)


@triton.jit
def _program_order_kernel(out_ptr, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = grouped_tile(pid, tiles_m, tiles_n, GROUP_M)
    tl.store(out_ptr + 2 * pid, pid_m)
    tl.store(out_ptr + 2 * pid + 1, pid_n)


def program_order(tiles_m, tiles_n, group_m, device):
    out = torch.full((tiles_m * tiles_n, 2), -1, dtype=torch.int32, device=device)
    _program_order_kernel[(tiles_m * tiles_n,)](out, tiles_m, tiles_n, GROUP_M=group_m)
    return [tuple(t) for t in out.tolist()]


def test_program_order(device):
    # Row-major: along each tile row in turn.
    assert program_order(2, 3, 1, device) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    # Groups of 2 tile rows, each walked column by column; the last group has one row.
    assert program_order(5, 3, 2, device) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
        (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2),
        (4, 0), (4, 1), (4, 2),
    ]
    # Any grid, any group: every tile exactly once.
    for tiles_m, tiles_n, group_m in [(7, 5, 3), (4, 9, 8), (1, 6, 4), (6, 1, 5)]:
        order = program_order(tiles_m, tiles_n, group_m, device)
        assert sorted(order) == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]


def test_64_bit_offsets(device, monkeypatch):
    # Offsets past 2**31 - 1 need int64 arithmetic in the kernel; pretend the limit is small, so
    # that the 64-bit path runs (and is checked) at a size the interpreter handles.
    monkeypatch.setattr(mm, "_INT32_LIMIT", 1000)
    check(*inputs((2, 50, 40), (40, 30), torch.float16, device), random_tensor((30,), torch.float16, device), "gelu")


@settings(max_examples=20, deadline=None)
@given(
    m=st.integers(1, 80), n=st.integers(1, 80), k=st.integers(1, 80), batch=st.integers(0, 2),
    transpose_a=st.booleans(), transpose_b=st.booleans(),
    block_log2=st.tuples(st.integers(4, 6), st.integers(4, 6), st.integers(4, 6)), group_m=st.integers(1, 5),
)
def test_property_any_shape_any_layout_any_tile(m, n, k, batch, transpose_a, transpose_b, block_log2, group_m):
    device = runtime.default_device()
    lead = (batch,) if batch else ()
    a, b = inputs((*lead, m, k), (*lead, k, n), torch.float32, device)
    if transpose_a:
        a = a.transpose(-1, -2).contiguous().transpose(-1, -2)
    if transpose_b:
        b = b.transpose(-1, -2).contiguous().transpose(-1, -2)
    bm, bn, bk = (1 << v for v in block_log2)
    check(a, b, block_m=bm, block_n=bn, block_k=bk, group_m=group_m)


# -- the persistent tensor-descriptor (TMA) kernel -----------------------------------------------
# Triton's interpreter runs tensor descriptors (and checks their alignment rules), so this kernel
# is checked on the CPU too. There the persistent grid assumes 4 SMs: with more tiles than that,
# every program loops over several tiles.
@needs_tma
@pytest.mark.parametrize("dtype", DTYPES + [FP8], ids=str)
@pytest.mark.parametrize("case", ["2d", "a-transposed", "b-transposed", "batched", "batched-b-shared", "epilogue"])
def test_tma_kernel(case, dtype, device):
    # Multiples of 16, so that rows of every operand, either way round, and of the output are 16-byte
    # multiples in every dtype; none a multiple of 32, the interpreter's tile: every edge is ragged.
    M, N, K = 48, 80, 112
    shapes = {"batched": ((3, M, K), (3, K, N)), "batched-b-shared": ((3, M, K), (K, N))}.get(case, ((M, K), (K, N)))
    a, b = inputs(*shapes, dtype, device)
    if case == "a-transposed":
        a = a.t().contiguous().t()
    if case == "b-transposed":
        b = b.t().contiguous().t()
    extra = {}
    if dtype == FP8:
        extra["scale_a"], extra["scale_b"] = scales(device)
    out_dtype = FP8_OUT if dtype == FP8 else None
    if case == "epilogue":
        extra.update(bias=random_tensor((N,), torch.float32, device), activation="gelu")
    check(a, b, out_dtype=out_dtype, method="tma", **extra)


@needs_tma
@pytest.mark.parametrize("warp_specialize", [True, False])
@pytest.mark.parametrize("case", ["2d", "a-transposed", "batched-a", "epilogue", "fp8"])
def test_warp_specialized_tma_kernel(case, warp_specialize, device):
    # Autotuned over the warp-specialized configs only, or over the plain ones only. On a GPU the
    # shape has ragged 128- and 256-wide tiles and several tiles per program (on the interpreter's
    # 4 "SMs", several 32-wide tiles per program).
    M, N, K = (1040, 1552, 592) if ON_GPU else (48, 80, 112)
    dtype = FP8 if case == "fp8" else torch.float16
    # batched-a: a batch of one, which takes the 3-D descriptor for A only.
    a, b = inputs(*((1, M, K), (K, N)) if case == "batched-a" else ((M, K), (K, N)), dtype, device)
    if case == "a-transposed":
        a = a.t().contiguous().t()
    extra = {}
    if case == "fp8":  # b column-major: the one float8 layout the warp-specialized loop compiles for
        b = b.t().contiguous().t()
        extra.update(zip(("scale_a", "scale_b"), scales(device), strict=True), out_dtype=FP8_OUT)
    if case == "epilogue":
        extra.update(bias=random_tensor((N,), torch.float32, device), activation="silu")
    check(a, b, method="tma", warp_specialize=warp_specialize, **extra)


@needs_tma
@pytest.mark.parametrize("case, match", [
    ("batched", "with a batched output"),
    ("float32", "for float32 inputs"),
    ("fp8-b-row-major", "for float8 only with a row-major and b column-major"),
])
def test_where_warp_specialization_does_not_compile(case, match, device):
    # Triton cannot compile the warp-specialized loop for these operands: warp_specialize=None
    # runs the plain kernel, and True is refused before launch.
    shapes = ((2, 48, 64), (64, 80)) if case == "batched" else ((48, 64), (64, 80))
    dtype = {"float32": torch.float32, "fp8-b-row-major": FP8}.get(case, torch.float16)
    a, b = inputs(*shapes, dtype, device)
    extra = {}
    if dtype == FP8:
        extra.update(zip(("scale_a", "scale_b"), scales(device), strict=True), out_dtype=FP8_OUT)
    check(a, b, method="tma", **extra)
    check(a, b, method="tma", warp_specialize=False, **extra)
    with pytest.raises(ValueError, match=f"warp_specialize=True is not available here: .*{match}"):
        matmul(a, b, method="tma", warp_specialize=True, **extra)


@gpu_only
@needs_tma
@pytest.mark.parametrize("tile", mm.WS_CONFIG_TILES, ids=str)
def test_warp_specialized_pinned_tiles(tile):
    # Each warp-specialized config the autotuner may pick, pinned, on ragged edges in M, N and K.
    bm, bn, stages, warps = tile
    a, b = inputs((1000, 584), (584, 1304), torch.bfloat16, "cuda")
    check(a, b, method="tma", warp_specialize=True, block_m=bm, block_n=bn, num_stages=stages, num_warps=warps)


@needs_tma
def test_tma_kernel_pinned_and_with_many_tiles(device):
    # 128 x 96 in 16 x 32 tiles: 24 tiles for 4 programs.
    a, b = inputs((2, 128, 64), (64, 96), torch.float16, device)
    check(a, b, method="tma", block_m=16, block_n=32, block_k=16, group_m=3, num_warps=2)


def _odd_output_rows(device):
    """Output rows of 37 * 4 bytes; ``b`` column-major, so that its own rows (columns) are aligned."""
    a, b_t = inputs((32, 32), (37, 32), torch.float32, device)
    return a, b_t.t()


@needs_tma
@pytest.mark.parametrize("case, match", [
    ("odd-rows", "rows .*must start at 16-byte multiples"),
    ("strided-both-ways", "stride 1 along one of its last two dimensions"),
    ("unaligned-start", "16-byte aligned address"),
    ("odd-output-rows", "every output row must start at a 16-byte multiple"),
    ("empty-k", "K is 0"),
])
def test_tma_kernel_refuses_what_it_cannot_do(case, match, device):
    f32, f16 = torch.float32, torch.float16
    a, b = {
        "odd-rows": lambda: inputs((32, 37), (37, 32), f32, device),  # rows of 37 * 4 bytes
        # 16-bit: on Hopper a float32 operand without K contiguous is copied K-major (k_major) first.
        "strided-both-ways": lambda: (inputs((64, 64), (32, 32), f16, device)[0][::2, ::2], inputs((32, 32), (32, 32), f16, device)[1]),
        "unaligned-start": lambda: (inputs((32, 33), (32, 32), f32, device)[0][:, 1:], inputs((32, 32), (32, 32), f32, device)[1]),
        "odd-output-rows": lambda: _odd_output_rows(device),
        "empty-k": lambda: (torch.empty((32, 0), device=device), torch.empty((0, 32), device=device)),
    }[case]()
    with pytest.raises(ValueError, match=f"method='tma' cannot be used here: .*{match}"):
        matmul(a, b, method="tma")
    check(a, b)  # the pointer kernel takes all of them


# -- the lesson's steps --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("step", STEPS, ids=lambda f: f.__name__)
def test_lesson_steps(step, dtype, device):
    if step in (matmul_persistent_tma, matmul_warp_specialized) and not TMA_OK:
        pytest.skip("tensor descriptors need compute capability 9.0 or newer")
    # 100 x 72 x 80: ragged 128-wide tiles; rows of 16-byte multiples, as step 4 needs.
    a, b = inputs((100, 80), (80, 72), dtype, device)
    if step is matmul_warp_specialized and dtype == torch.float32:
        with pytest.raises(ValueError, match="cannot compile it for float32 inputs"):
            step(a, b)
        return
    activation = "gelu" if step.__name__ == "matmul_fused_gelu" else None
    assert_close(step(a, b), matmul_reference(a, b, activation=activation, out_dtype=torch.float64),
                 tolerance_dtype(dtype, dtype))


# -- autotuning ----------------------------------------------------------------------------------
def test_interpreter_runs_one_small_config():
    if runtime.is_interpreter():
        assert len(CONFIGS) == 1 and CONFIGS[0].kwargs == INTERPRETER_TILE
        assert len(mm.WS_CONFIGS) == 1 and mm.WS_CONFIGS[0].kwargs == INTERPRETER_TILE | {"WARP_SPECIALIZE": True}
    else:
        assert [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) for c in CONFIGS] == [t[:2] for t in mm.CONFIG_TILES]
        assert all(c.kwargs["WARP_SPECIALIZE"] and c.num_warps == 4 for c in mm.WS_CONFIGS)
    assert not any("WARP_SPECIALIZE" in c.kwargs for c in CONFIGS)


def _prune(M, N, K, dtype, out_dtype=None, smem=232448, tma=False, monkeypatch=None):
    monkeypatch.setattr(mm.runtime, "shared_memory_per_block", lambda device: smem)
    args = {"a_ptr": torch.empty(0, dtype=dtype), "c_ptr": torch.empty(0, dtype=out_dtype or dtype), "M": M, "N": N, "K": K}
    return prune_configs(gpu_configs(), args, tma=tma, GROUP_M=8)


def _tiles(configs):
    return {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"]) for c in configs}


def test_prune_gives_k_tiles_of_128_bytes(monkeypatch):
    for dtype, block_k in [(torch.float16, 64), (torch.bfloat16, 64), (torch.float32, 32), (FP8, 128)]:
        kept = _prune(4096, 4096, 4096, dtype, monkeypatch=monkeypatch)
        assert {k for _, _, k in _tiles(kept)} == {block_k}
        assert len(kept) == len(mm.CONFIG_TILES)  # 227 KiB (an H100's) holds every pipeline
    # A K shorter than 128 bytes gets a shorter K tile, down to tl.dot's 16.
    assert {k for _, _, k in _tiles(_prune(4096, 4096, 40, torch.float16, monkeypatch=monkeypatch))} == {64}
    assert {k for _, _, k in _tiles(_prune(4096, 4096, 20, torch.float16, monkeypatch=monkeypatch))} == {32}
    assert {k for _, _, k in _tiles(_prune(4096, 4096, 3, torch.float16, monkeypatch=monkeypatch))} == {16}


def test_prune_drops_tiles_larger_than_the_problem(monkeypatch):
    assert _tiles(_prune(16, 4096, 4096, torch.float16, monkeypatch=monkeypatch)) == {(32, 64, 64)}
    assert {(m, n) for m, n, _ in _tiles(_prune(4096, 100, 4096, torch.float16, monkeypatch=monkeypatch))} == {
        (128, 64), (128, 128), (256, 128), (64, 128), (64, 64), (32, 64)}


def test_warp_specialized_configs_fit_an_h100s_shared_memory(monkeypatch):
    # 227 KiB: both 16-bit pipelines (3 stages) and their staged output tiles fit, and keep their flag.
    monkeypatch.setattr(mm.runtime, "shared_memory_per_block", lambda device: 232448)
    for dtype in (torch.float16, FP8):
        args = {"a_ptr": torch.empty(0, dtype=dtype), "c_ptr": torch.empty(0, dtype=torch.bfloat16),
                "M": 4096, "N": 4096, "K": 4096}
        kept = prune_configs(gpu_configs(warp_specialize=True), args, tma=True, GROUP_M=8)
        assert {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) for c in kept} == {t[:2] for t in mm.WS_CONFIG_TILES}
        assert all(c.kwargs["WARP_SPECIALIZE"] for c in kept)
        # A problem smaller than both tiles one way or the other still keeps one config.
        (small,) = prune_configs(gpu_configs(warp_specialize=True), args | {"M": 48, "N": 80, "K": 112}, tma=True)
        assert small.kwargs["WARP_SPECIALIZE"] and small.kwargs["BLOCK_M"] * small.kwargs["BLOCK_N"] == 128 * 256


def test_large_products_tune_plain_configs_only():
    assert mm._tma_tuning(None, 8192, 8192, 8192) is False
    assert mm._tma_tuning(None, 16384, 8192, 8192) is False
    assert mm._tma_tuning(None, 8192, 8192, 1024) is None  # a short K: both lists
    assert mm._tma_tuning(None, 4096, 8192, 8192) is None
    assert mm._tma_tuning(True, 8192, 8192, 8192) is True  # a choice given stands
    assert mm._tma_tuning(False, 1024, 1024, 1024) is False


@needs_tma
def test_launcher_takes_the_tuned_kernel_the_rule_names(monkeypatch, device):
    # A small threshold, so that a small product crosses it; each tuned kernel is wrapped to
    # record which one the launch indexes.
    taken = []

    class Recorder:
        def __init__(self, key, kernel):
            self.key, self.kernel = key, kernel

        def __getitem__(self, grid):
            taken.append(self.key)
            return self.kernel[grid]

    monkeypatch.setattr(mm, "matmul_tma_kernel_tuned", {k: Recorder(k, v) for k, v in mm.matmul_tma_kernel_tuned.items()})
    monkeypatch.setattr(mm, "PLAIN_ONLY_FROM", 64)
    a, b = inputs((64, 80), (80, 96), torch.float16, device)
    check(a, b, method="tma")
    a, b = inputs((64, 48), (48, 96), torch.float16, device)  # K below the threshold
    check(a, b, method="tma")
    check(a, b, method="tma", warp_specialize=True)
    assert taken == [False, None, True]


def test_prune_drops_pipelines_that_do_not_fit_in_shared_memory(monkeypatch):
    # The persistent kernel also stages its output tile: 128 x 256 float32 tiles need 128 KiB more.
    kept = _tiles(_prune(4096, 4096, 4096, torch.float32, tma=True, monkeypatch=monkeypatch))
    assert (128, 256, 32) not in kept and (256, 128, 32) not in kept and (128, 128, 32) in kept
    # 100 KiB (an RTX 4090's): the 3-stage 384-wide pipelines (144 KiB) go, the 64-wide ones stay.
    small = _tiles(_prune(4096, 4096, 4096, torch.float16, smem=101376, monkeypatch=monkeypatch))
    assert (128, 256, 64) not in small and (64, 64, 64) in small
    # Nothing fits: the smallest tile, with 2 stages.
    (last,) = _prune(4096, 4096, 4096, torch.float16, smem=1024, monkeypatch=monkeypatch)
    assert (last.kwargs["BLOCK_M"], last.kwargs["BLOCK_N"], last.num_stages) == (32, 64, 2)


@gpu_only
def test_autotuning_is_keyed_on_buckets():
    # M = 1000 and M = 1020 fall in the same bucket (1024): one tuning serves both.
    tuned = mm.matmul_kernel_tuned
    before = len(tuned.cache)
    for m in (1000, 1020):
        check(*inputs((m, 512), (512, 384), torch.float16, "cuda"))
    assert len(tuned.cache) <= before + 1


# -- counts and the benchmark suite --------------------------------------------------------------
def test_counts():
    assert matmul_flops(4096, 4096, 4096) == 2 * 4096**3
    assert matmul_flops(10, 20, 30, batch=3) == 2 * 10 * 20 * 30 * 3
    assert matmul_bytes(10, 20, 30, torch.float16) == (10 * 30 + 30 * 20 + 10 * 20) * 2
    assert matmul_bytes(10, 20, 30, torch.float32, batch=2) == 2 * (10 * 30 + 30 * 20 + 10 * 20) * 4
    # float8 inputs are 1 byte; the output defaults to bfloat16, 2 bytes.
    assert matmul_bytes(10, 20, 30, FP8) == 10 * 30 + 30 * 20 + 10 * 20 * 2
    assert matmul_bytes(10, 20, 30, torch.float16, out_dtype=torch.float32) == (10 * 30 + 30 * 20) * 2 + 10 * 20 * 4


def test_bench_suite_is_well_formed():
    record = SCHEMA["properties"]["records"]["items"]["properties"]
    specs = suite.specs()
    assert [s.dtypes for s in specs] == [[torch.float16, torch.bfloat16], [torch.float32], [FP8]]
    for spec in specs:
        assert (spec.kernel, spec.direction, spec.metric, spec.x) == ("matmul", "fwd", "TFLOPS", "N")
        assert all(set(s) == {"M", "N", "K"} for s in [*spec.shapes, *spec.quick_shapes])
        assert "tritonperf" in spec.variants and any(v.startswith("torch") for v in spec.variants)
        assert all(re.fullmatch(record["variant"]["pattern"], v) for v in spec.variants)
        assert spec.flops({"M": 4096, "N": 14336, "K": 4096}, spec.dtypes[0]) == 2 * 4096 * 14336 * 4096
    sizes = [s["N"] for s in specs[0].shapes if s["M"] == s["N"] == s["K"]]
    assert sizes == [256, 512, 1024, 2048, 4096, 8192]
    assert {(s["M"], s["N"], s["K"]) for s in specs[0].shapes} >= {(8192, 8192, 1024), (4096, 14336, 4096), (16384, 4096, 4096)}
    steps = sorted(v for v in specs[0].variants if v.startswith("step-"))
    assert steps == ["step-1-tiles", "step-2-grouped", "step-2-grouped-1-stage", "step-3-autotuned",
                     "step-4-persistent-tma", "step-4-warp-specialized", "step-5-fused-gelu"]
    assert "torch-matmul-then-gelu" in specs[0].variants


@gpu_only
def test_bench_variants_run_and_agree():
    shape = {"M": 512, "N": 384, "K": 256}
    for spec in suite.specs():
        for dtype in spec.dtypes:
            if dtype == FP8 and torch.cuda.get_device_capability() < (9, 0):
                continue
            args = spec.make_args(shape, dtype)
            plain = next(fn for name, fn in spec.variants.items() if name.startswith("torch"))(*args).double()
            for name, fn in spec.variants.items():
                if name in ("step-4-persistent-tma", "step-4-warp-specialized") and not TMA_OK:
                    continue
                expected = torch.nn.functional.gelu(plain) if "gelu" in name else plain
                # Unscaled standard-normal inputs: entries of size sqrt(K); compare relative errors only.
                got = fn(*args).double()
                assert (got - expected).norm() / expected.norm() < 1e-2, (name, dtype)


# -- bad input -----------------------------------------------------------------------------------
def _pair(device, dtype=torch.float32, m=4, k=8, n=6):
    return random_tensor((m, k), dtype, device), random_tensor((k, n), dtype, device)


def test_rejects_non_tensors(device):
    a, b = _pair(device)
    with pytest.raises(TypeError, match="a must be a torch.Tensor"):
        matmul([[1.0]], b)
    with pytest.raises(TypeError, match="b must be a torch.Tensor"):
        matmul(a, None)


@pytest.mark.parametrize("shape_a, shape_b, match", [
    ((8,), (8, 6), r"a must be 2-D \(M, K\) or 3-D \(batch, M, K\), got shape \(8,\)"),
    ((4, 8), (2, 2, 8, 6), r"b must be 2-D \(K, N\) or 3-D \(batch, K, N\), got shape \(2, 2, 8, 6\)"),
    ((4, 8), (7, 6), r"inner dimensions differ: a is \(4, 8\) with K = 8, b is \(7, 6\) with K = 7"),
    ((2, 4, 8), (3, 8, 6), "batch sizes differ: a has 2 matrices, b has 3"),
], ids=["rank-1", "rank-4", "inner", "batch"])
def test_rejects_bad_shapes(shape_a, shape_b, match, device):
    with pytest.raises(ValueError, match=match):
        matmul(torch.zeros(shape_a, device=device), torch.zeros(shape_b, device=device))


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.int8, torch.float8_e5m2, torch.complex64], ids=str)
def test_rejects_unsupported_dtypes(dtype, device):
    x = torch.zeros((4, 4), device=device).to(dtype)
    with pytest.raises(TypeError, match="a has dtype .*; supported: float32, float16, bfloat16, float8_e4m3fn"):
        matmul(x, x.clone())


def test_rejects_mixed_dtypes(device):
    a, b = _pair(device)
    with pytest.raises(ValueError, match="dtypes differ: a: torch.float32, b: torch.float16"):
        matmul(a, b.half())


@pytest.mark.parametrize("out_dtype", [torch.float64, torch.float8_e4m3fn, torch.int32, "float16"], ids=str)
def test_rejects_unsupported_out_dtypes(out_dtype, device):
    with pytest.raises(TypeError, match="out_dtype must be one of float32, float16, bfloat16"):
        matmul(*_pair(device), out_dtype=out_dtype)


@pytest.mark.parametrize("make_bias, error, match", [
    (lambda d: torch.zeros(7, device=d), ValueError, r"bias must have shape \(N,\) = \(6,\).*got \(7,\)"),
    (lambda d: torch.zeros((1, 6), device=d), ValueError, r"bias must have shape \(N,\) = \(6,\)"),
    (lambda d: torch.zeros(6, device=d, dtype=torch.float16), ValueError, "bias has dtype float16; it must have the output's dtype"),
    (lambda d: torch.zeros(6, device=d, dtype=torch.float64), ValueError, "bias has dtype float64"),
    (lambda d: torch.zeros(12, device=d)[::2], ValueError, "bias must be contiguous"),
    (lambda d: [0.0] * 6, TypeError, "bias must be a torch.Tensor"),
], ids=["long", "2-d", "half", "double", "strided", "list"])
def test_rejects_bad_bias(make_bias, error, match, device):
    with pytest.raises(error, match=match):
        matmul(*_pair(device), make_bias(device))


@pytest.mark.parametrize("activation", ["tanh", "GELU", "", 1])
def test_rejects_unknown_activation(activation, device):
    with pytest.raises(ValueError, match=r"activation must be one of None, 'relu', 'gelu', 'silu'; got"):
        matmul(*_pair(device), activation=activation)


def test_fp8_needs_both_scales(device):
    a, b = _pair(device, FP8)
    sa, sb = scales(device)
    for kwargs in ({}, {"scale_a": sa}, {"scale_b": sb}):
        with pytest.raises(ValueError, match="float8 inputs need per-tensor scales: pass scale_a and scale_b"):
            matmul(a, b, **kwargs)


def test_scales_are_refused_without_fp8(device):
    sa, sb = scales(device)
    with pytest.raises(ValueError, match="scale_a and scale_b apply to float8_e4m3fn inputs only; got float16"):
        matmul(*_pair(device, torch.float16), scale_a=sa, scale_b=sb)
    with pytest.raises(ValueError, match="apply to float8_e4m3fn inputs only"):
        matmul(*_pair(device), scale_b=sb)


def test_fast_accum_is_for_fp8_only(device):
    with pytest.raises(ValueError, match="fast_accum applies to float8_e4m3fn inputs only; got float16 inputs"):
        matmul(*_pair(device, torch.float16), fast_accum=True)
    a, b = _pair(device, FP8)
    sa, sb = scales(device)
    with pytest.raises(TypeError, match="fast_accum must be True or False, got 1"):
        matmul(a, b, scale_a=sa, scale_b=sb, out_dtype=FP8_OUT, fast_accum=1)


def test_rejects_bad_scales(device):
    a, b = _pair(device, FP8)
    sa, sb = scales(device)
    with pytest.raises(TypeError, match="scale_a has dtype float64; supported: float32"):
        matmul(a, b, scale_a=sa.double(), scale_b=sb)
    with pytest.raises(ValueError, match=r"scale_b must hold a single value \(a 0-d float32 tensor\), got shape \(2,\)"):
        matmul(a, b, scale_a=sa, scale_b=torch.ones(2, device=device))
    with pytest.raises(TypeError, match="scale_b must be a torch.Tensor"):
        matmul(a, b, scale_a=sa, scale_b=0.5)


def test_rejects_fp8_k_tiles_below_32(device):
    a, b = _pair(device, FP8)
    sa, sb = scales(device)
    with pytest.raises(ValueError, match="block_k must be at least 32 for float8 inputs, got 16"):
        matmul(a, b, scale_a=sa, scale_b=sb, block_k=16)


@gpu_only
def test_rejects_pinned_tiles_that_overflow_shared_memory(device):
    a, b = _pair(device)
    with pytest.raises(ValueError, match=r"tiles 256x256x128 with num_stages=4 need about .* bytes of shared memory"):
        matmul(a, b, block_m=256, block_n=256, block_k=128, num_stages=4)


def test_rejects_mixed_and_unsupported_devices(device):
    a, b = _pair(device)
    with pytest.raises(ValueError, match="same device"):
        matmul(a, b.to("meta"))
    with pytest.raises(ValueError, match="same device"):
        matmul(a, b, torch.zeros(6, device="meta"))
    with pytest.raises(ValueError, match="tensors on meta are not supported"):
        matmul(a.to("meta"), b.to("meta"))


def test_cpu_tensors_outside_interpreter_mode_get_a_clear_error(monkeypatch):
    monkeypatch.setattr(runtime, "MODE", "gpu")
    with pytest.raises(ValueError, match=r"got CPU tensors.*\.cuda\(\)"):
        matmul(*_pair("cpu"))


def test_rejects_bad_out(device):
    a, b = _pair(device)
    with pytest.raises(ValueError, match=r"out must have shape \(4, 6\), got \(6, 4\)"):
        matmul(a, b, out=torch.empty((6, 4), device=device))
    with pytest.raises(ValueError, match="out has dtype float16, but the result is float32"):
        matmul(a, b, out=torch.empty((4, 6), device=device, dtype=torch.float16))
    with pytest.raises(ValueError, match="out must be contiguous"):
        matmul(a, b, out=torch.empty((6, 4), device=device).t())
    with pytest.raises(ValueError, match="out shares memory with an input"):
        matmul(a, b, out=a.view(-1)[:24].view(4, 6))
    with pytest.raises(ValueError, match="same device"):
        matmul(a, b, out=torch.empty((4, 6), device="meta"))


def test_rejects_inputs_that_require_a_gradient(device):
    a, b = _pair(device)
    with pytest.raises(ValueError, match=r"no backward pass: call it under torch.no_grad\(\)"):
        matmul(a.requires_grad_(), b)
    with torch.no_grad():
        check(a, b)


@pytest.mark.parametrize("knobs, match", [
    ({"method": "cublas"}, "method must be one of auto, tiles, tma; got 'cublas'"),
    ({"block_m": 8}, "block_m must be a power of two between 16 and 512, got 8"),
    ({"block_n": 48}, "block_n must be a power of two between 16 and 512"),
    ({"block_k": 512, "method": "tma"}, "block_k must be a power of two between 16 and 256"),
    ({"num_warps": 3}, "num_warps must be a power of two between 1 and 32"),
    ({"group_m": 0}, "group_m must be a positive integer, got 0"),
    ({"num_stages": 1.5}, "num_stages must be a positive integer"),
    ({"warp_specialize": True}, r"warp_specialize applies to the TMA kernel only: pass method='tma'"),
    ({"warp_specialize": False, "method": "tiles"}, "warp_specialize applies to the TMA kernel only"),
    ({"warp_specialize": 1, "method": "tma"}, "warp_specialize must be None, True or False, got 1"),
])
def test_rejects_bad_knobs(knobs, match, device):
    with pytest.raises(ValueError, match=match):
        matmul(*_pair(device), **knobs)


def test_rejects_batches_the_grid_cannot_hold(device):
    a = torch.zeros((65536, 1, 1), device=device)
    with pytest.raises(ValueError, match="at most 65535 matrices per batch"):
        matmul(a, torch.zeros((1, 1), device=device))


# -- GPU only: sizes the interpreter cannot reach ------------------------------------------------
@gpu_only
@pytest.mark.parametrize("method", ["tiles", "tma"])
def test_large_batches_and_transposes_on_gpu(method):
    if method == "tma" and not TMA_OK:
        pytest.skip("tensor descriptors need compute capability 9.0 or newer")
    a, b = inputs((8, 1024, 2048), (2048, 1536), torch.float16, "cuda")
    check(a, b.t().contiguous().t(), random_tensor((1536,), torch.float16, "cuda"), "silu", method=method)


@gpu_only
@pytest.mark.large_memory
def test_offsets_past_2_31_elements():
    # Two matrices 2**31 elements apart in one 4 GiB buffer: 32-bit offsets to the second would wrap.
    big = torch.empty(2**31 + 64 * 64, dtype=torch.float16, device="cuda")
    a = big.as_strided((2, 64, 64), (2**31, 64, 1))
    a.copy_(inputs((2, 64, 64), (64, 64), torch.float16, "cuda")[0])
    b = inputs((64, 64), (64, 64), torch.float16, "cuda")[1]
    check(a, b)


def test_auto_method_keeps_small_products_and_full_float32_on_the_pointer_kernel(monkeypatch):
    # What method="auto" would pick on a Hopper GPU (simulated: only the choice runs, nothing launches).
    mm = importlib.import_module("tritonperf.kernels.matmul")  # the module, not the function

    monkeypatch.setattr(runtime, "MODE", "gpu")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))

    def choice(size, dtype, batch=1, input_precision="tf32"):
        a, b = torch.empty((size, size), dtype=dtype), torch.empty((size, size), dtype=dtype)
        out = torch.empty((size, size), dtype=torch.bfloat16 if dtype == FP8 else dtype)
        return mm._auto_method(a, b, out, batch, input_precision)

    assert choice(2048, torch.float16) == choice(1024, torch.bfloat16) == "tiles"
    assert choice(4096, torch.float16) == choice(4096, torch.bfloat16) == "tma"
    assert choice(1024, torch.float16, batch=8) == "tiles" and choice(1024, torch.float16, batch=9) == "tma"
    assert choice(256, FP8) == "tma"  # float8: the TMA kernel at every size
    assert choice(2048, torch.float32) == "tiles" and choice(4096, torch.float32) == "tma"  # tf32, as 16-bit
    assert choice(4096, torch.float32, input_precision="ieee") == "tiles"  # no Tensor Cores: no TMA kernel


@needs_tma
def test_tma_tuning_keys_on_the_operands_layouts(device):
    # A config tuned for a row-major b must not be reused for a column-major one of the same size.
    tuned = mm.matmul_tma_kernel_tuned[False]
    assert {"A_TRANSPOSED", "B_TRANSPOSED"} <= set(tuned.keys)
    if not ON_GPU:
        return  # the interpreter's one config is never timed, so nothing is cached to compare
    tuned.cache.clear()
    a, b = inputs((512, 256), (256, 384), torch.float16, device)
    matmul(a, b, method="tma", warp_specialize=False)
    matmul(a, b.mT.contiguous().mT, method="tma", warp_specialize=False)
    assert len(tuned.cache) == 2


@pytest.mark.parametrize("batched", [False, True], ids=["2d", "batched"])
def test_k_major_copies_only_operands_without_k_contiguous(device, batched):
    # tf32 on Hopper reads tiles with K contiguous: a row-major, b column-major. k_major copies
    # an operand into that layout only where it is not already, and keeps its values.
    lead = (3,) if batched else ()
    a, b = inputs((*lead, 40, 24), (*lead, 24, 56), torch.float32, device)
    a_cm = a.mT.contiguous().mT  # column-major a (M contiguous)
    b_cm = b.mT.contiguous().mT  # column-major b (K contiguous)
    a2, b2 = k_major(a_cm, b)
    assert a2.stride(-1) == 1 and b2.stride(-2) == 1
    assert torch.equal(a2, a) and torch.equal(b2, b)
    a3, b3 = k_major(a, b_cm)  # already K-major: the same tensors, not copies
    assert a3 is a and b3 is b_cm


def test_full_float32_precision(device):
    # input_precision="ieee": float32 products without tf32 rounding, so float32's own tolerance holds
    # on a GPU too (tf32 is held to float16's there).
    a, b = (random_tensor(shape, torch.float32, device) * 64**-0.25 for shape in ((70, 64), (64, 96)))
    expected = matmul_reference(a, b)
    for method in ("tiles", "tma") if TMA_OK else ("tiles",):
        assert_close(matmul(a, b, method=method, input_precision="ieee"), expected, torch.float32)
    with pytest.raises(ValueError, match="input_precision must be one of tf32, ieee; got 'tf32x3'"):
        matmul(a, b, input_precision="tf32x3")
    with pytest.raises(ValueError, match="input_precision applies to float32 inputs only; got float16 inputs"):
        matmul(a.half(), b.half(), input_precision="ieee")
