"""softmax: forward and backward on every path (fused, online, split, staged), edge values, layouts, errors on bad input."""

from __future__ import annotations

import importlib

import pytest
import torch
from conftest import ON_GPU, gpu_only
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonperf import runtime
from tritonperf.kernels import _rows
from tritonperf.kernels.softmax import (
    BWD_MAX_WARPS,
    FUSED_ELEMENTS,
    MAX_FUSED_N,
    MIN_ELEMENTS_PER_THREAD,
    PREFETCH_STAGES,
    STAGED_CHUNK_ROWS,
    STAGED_MAX_N,
    STAGED_SPLIT_RING,
    STAGED_SPLIT_WARPS,
    STAGED_VIEW,
    STAGED_WARPS,
    softmax,
    softmax_backward,
    softmax_backward_reference,
    softmax_bytes,
    softmax_plan,
    softmax_reference,
)
from tritonperf.ladders.softmax import softmax_fused_row, softmax_unfused
from tritonperf.testing import TOLERANCES, assert_close, poisoned, random_tensor, relative_error

softmax_module = importlib.import_module("tritonperf.kernels.softmax")  # the module, not the function it exports

# The interpreter computes bfloat16 arithmetic wrongly (DESIGN.md §3): bf16 is checked on the GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])

SHAPES = [
    (1, 1),  # one element: the answer is exactly 1
    (3, 1),  # rows of one column: many rows packed into one program, all but one column masked
    (7,),  # rank 1: a single row, shorter than any block
    (5, 2048),  # exactly a power of two: no masked columns
    (5, 2049),  # one column past a power of two: a block of 2048 and a tail block of one column
    (3, 1280),  # a block of 1024 and a tail of 256, unmasked
    (3, 1500),  # a block of 1024 and a tail of 512, partly masked
    (13, 97),  # primes: the last block of packed rows hangs past the final row
    (2, 3, 5, 33),  # rank 4: the leading dimensions flatten into 30 rows
    (1823, 781),  # odd and large: many programs, ragged rows and columns
] + (
    [
        (4096, 5120),  # an LLM hidden size, the benchmark's rows: a block of 4096 and a tail of 1024
        (4097, MAX_FUSED_N),  # the longest row held in registers; 16-bit forward: prefetched rows, persistent grid
        (4097, MAX_FUSED_N + 1),  # the shortest row streamed by the online path
        (1000, 65536),  # online, whole tiles only; the forward's two programs per SM
        (300, 65536 + 5),  # online, more rows than SMs: one program per row, persistent grid
        (3, 2**20 + 7),  # online, fewer rows than SMs: rows split into chunks
    ]
    if ON_GPU
    else []
)

# Knobs that force each path at sizes the interpreter runs quickly.
PATHS = {
    "fused": {},
    "fused-persistent": dict(programs_per_sm=1, rows_per_program=2),  # 4 programs on the CPU: each loops over row blocks
    "fused-persistent-rows": dict(programs_per_sm=1, rows_per_program=1),  # ... over single rows (4099: with a tail block)
    "online": dict(max_fused_n=64, tile_n=64, split=1),
    "online-persistent": dict(max_fused_n=64, tile_n=32, programs_per_sm=1, split=1),
    "split": dict(max_fused_n=64, tile_n=32, split=3),
}
# (rows, columns) for the forced paths: several tiles, a ragged last tile, more rows than the CPU's 4 "SMs".
PATH_SHAPES = [(9, 1000), (2, 65), (5, 4099)]


def _ref(x: torch.Tensor) -> torch.Tensor:
    return softmax_reference(x.double())


def _torch_error(x: torch.Tensor) -> float:
    """How far torch's own softmax in ``x``'s dtype is from the float64 reference."""
    return relative_error(torch.softmax(x, dim=-1), _ref(x))


def _check_forward(x: torch.Tensor, **knobs) -> torch.Tensor:
    out = poisoned(x.shape, x.dtype, x.device)
    y = softmax(x, out, **knobs)
    assert y is out
    ref = _ref(x)
    assert_close(y, ref, x.dtype)
    if x.dtype != torch.float32:
        # Half-precision outputs: at most twice the error of torch in the same dtype. (In float32 the
        # GPU's fast exp makes ours a little less exact than torch's; the table's 1e-5 applies.)
        assert relative_error(y, ref) <= 2 * _torch_error(x) + 1e-7
    return y


def _check_backward(y: torch.Tensor, **knobs) -> None:
    dy = random_tensor(y.shape, y.dtype, y.device)
    out = poisoned(y.shape, y.dtype, y.device)
    dx = softmax_backward(y, dy, out, **knobs)
    assert dx is out
    assert_close(dx, softmax_backward_reference(y.double(), dy.double()), y.dtype)


# -- forward and backward --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward_matches_reference(shape, dtype, device):
    _check_forward(random_tensor(shape, dtype, device))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [s for s in SHAPES if s != (1823, 781)] + [(181, 781)], ids=str)
def test_backward_matches_reference(shape, dtype, device):
    # (181, 781) stands in for the odd large shape: the backward reads two tensors and costs twice as long.
    y = torch.softmax(random_tensor(shape, torch.float32, device), dim=-1).to(dtype)
    _check_backward(y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("shape", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("path", PATHS)
def test_every_path(path, shape, dtype, device):
    knobs = PATHS[path]
    assert softmax_plan(*shape, dtype, "fwd", device, **knobs).path == path.split("-")[0]
    y = _check_forward(random_tensor(shape, dtype, device), **knobs)
    _check_backward(y, **knobs)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("path", ["fused", "online", "split"])
def test_gradient_through_autograd(path, dtype, device):
    # 11 x 300: several tiles on the forced online paths, a ragged last block on the fused one.
    x = random_tensor((11, 300), dtype, device).requires_grad_()
    dy = random_tensor((11, 300), dtype, device)
    y = softmax(x, **PATHS[path])
    y.backward(dy)
    x64 = x.detach().double().requires_grad_()
    torch.softmax(x64, dim=-1).backward(dy.double())
    assert_close(x.grad, x64.grad, dtype)
    # Half precision: at most twice torch's own gradient error.
    if dtype != torch.float32:
        x_t = x.detach().clone().requires_grad_()
        torch.softmax(x_t, dim=-1).backward(dy)
        assert relative_error(x.grad, x64.grad) <= 2 * relative_error(x_t.grad, x64.grad) + 1e-7


def test_gradient_of_broadcast_and_transposed_upstream_gradients(device):
    x = random_tensor((6, 40), torch.float32, device).requires_grad_()
    # .sum() sends back a stride-0 view of ones; a softmax's gradient for any dy constant along a row is 0.
    softmax(x).sum().backward()
    assert x.grad.abs().max().item() <= 1e-6
    # A gradient whose last dimension is not contiguous (stride 6) is copied into rows first.
    x.grad = None
    w = random_tensor((40, 6), torch.float32, device).t()
    (softmax(x) * w).sum().backward()
    x64 = x.detach().double().requires_grad_()
    (torch.softmax(x64, dim=-1) * w.double()).sum().backward()
    assert_close(x.grad, x64.grad)


def test_no_graph_without_requires_grad(device):
    x = random_tensor((4, 10), torch.float32, device)
    assert softmax(x).grad_fn is None
    with torch.no_grad():
        assert softmax(x.requires_grad_()).grad_fn is None


@settings(max_examples=15, deadline=None)
@given(
    rows=st.integers(1, 24),
    cols=st.integers(1, 700),
    tile_log2=st.integers(4, 8),
    split=st.integers(1, 4),
    online=st.booleans(),
)
def test_property_any_shape_any_path(rows, cols, tile_log2, split, online):
    knobs = dict(max_fused_n=16, tile_n=1 << tile_log2, split=split) if online else {}
    device = runtime.default_device()
    y = _check_forward(random_tensor((rows, cols), torch.float32, device), **knobs)
    _check_backward(y, **knobs)


# -- edge values ----------------------------------------------------------------------------------
# Rows of only -inf give NaN, as torch does. No -inf - -inf is ever computed on the way: the interpreter's
# numpy would warn about it, and the warning would fail the test.
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("path", ["fused", "online", "split"])
def test_rows_of_minus_infinity_match_torch(path, dtype, device):
    x = random_tensor((6, 300), dtype, device)
    x[0] = float("-inf")  # all -inf: NaN, as in torch
    x[3] = float("-inf")
    x[1, :250] = float("-inf")  # -inf in the first tiles only: an online lane or chunk that sees only -inf
    x[2, ::2] = float("-inf")  # every other column: exact zeros there
    y = softmax(x, **PATHS[path])
    ref = torch.softmax(x.double(), dim=-1)
    assert torch.equal(torch.isnan(y), torch.isnan(ref))
    assert torch.isnan(y[[0, 3]]).all()
    finite = [1, 2, 4, 5]
    assert_close(y[finite], ref[finite], dtype)
    assert torch.all(y[1, :250] == 0) and torch.all(y[2, ::2] == 0)


@pytest.mark.parametrize("path", ["fused", "online", "split"])
def test_large_magnitudes_do_not_overflow(path, device):
    # float32 values of ±1e4: exp(1e4) overflows, exp(x - max) does not.
    for x in (random_tensor((5, 300), torch.float32, device) * 1e4,  # spread out: nearly one-hot rows
              random_tensor((5, 300), torch.float32, device) + torch.tensor([1e4, -1e4, 0, 1e4, -1e4], device=device)[:, None]):
        y = softmax(x, **PATHS[path])
        assert torch.isfinite(y).all()
        assert_close(y, _ref(x))
    # float16 at its largest finite values.
    h = random_tensor((5, 300), torch.float16, device)
    h[:, 7], h[:, 100], h[2] = 65504.0, -65504.0, 65504.0
    y = softmax(h, **PATHS[path])
    assert torch.isfinite(y).all()
    assert_close(y, _ref(h))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_read_twice(dtype, device):
    # RELOAD_BLOCKS: the float32 forward and the 16-bit backward of these widths read each row again.
    # Row 1 is all -inf (NaN out, as in torch); row 2 has large magnitudes.
    n = 3000 if dtype == torch.float32 else 9000
    direction = "fwd" if dtype == torch.float32 else "bwd"
    assert softmax_plan(3, n, dtype, direction, device).reload
    x = random_tensor((3, n), dtype, device)
    x[1] = -float("inf")
    x[2] *= 1000
    y = softmax(x)
    assert torch.isnan(y[1]).all()
    assert_close(y[[0, 2]], _ref(x[[0, 2]]))
    dy = random_tensor((3, n), dtype, device)
    dx = softmax_backward(y[[0, 2]], dy[[0, 2]])
    assert_close(dx, softmax_backward_reference(y[[0, 2]].double(), dy[[0, 2]].double()), dtype)


@gpu_only
def test_pipelines_fit_a_gpu_with_less_shared_memory(small_gpu_shared_memory):
    # The stage counts were tuned on Hopper; with 99 KB a program (sm_86, sm_89) the launches lower
    # them: the prefetched 16-bit rows of MAX_FUSED_N (64 KB each; only a persistent grid, with
    # more rows than SMs, loops over rows), and the online float32 backward (y and dy tiles) on
    # both its grids.
    cuda = torch.device("cuda")
    y = _check_forward(random_tensor((2 * runtime.sm_count(cuda) + 1, MAX_FUSED_N), torch.float16, cuda))
    _check_backward(y)
    for rows in (4, 256):  # fewer rows than SMs: rows split between programs
        _check_backward(_check_forward(random_tensor((rows, 2 * MAX_FUSED_N), torch.float32, cuda)))
    small_gpu_shared_memory.check(lowered=("softmax_fwd_kernel", "softmax_bwd_online_kernel", "softmax_bwd_partial_kernel"))


# -- layouts --------------------------------------------------------------------------------------
@pytest.mark.parametrize("cols, stride", [(300, 310), (200, 264)], ids=str)
@pytest.mark.parametrize("path", ["fused", "online", "split"])
def test_strided_rows(path, cols, stride, device):
    # The first `cols` columns of a 9 x `stride` tensor, read in place. 200 and 264 are multiples of
    # 8, not 16: the kernels are told so (row_align) and may load 8 elements at a time.
    base = random_tensor((9, stride), torch.float16, device)
    x = base[:, :cols]
    y = softmax(x, **PATHS[path])
    assert y.is_contiguous() and y.shape == x.shape
    assert_close(y, _ref(x))
    # The backward pass reads strided rows of y and dy too.
    y_strided = torch.zeros((9, cols + 8), dtype=torch.float16, device=device)[:, 8:]
    y_strided.copy_(y)
    dy = random_tensor((9, stride + 16), torch.float16, device)[:, 16:cols + 16]
    dx = softmax_backward(y_strided, dy, **PATHS[path])
    assert_close(dx, softmax_backward_reference(y.double(), dy.double()), torch.float16)


def test_strided_leading_dimensions_that_merge(device):
    # A slice of the last dimension of a 3-D tensor: the two leading dimensions still flatten to one row stride.
    x = random_tensor((2, 3, 50), torch.float32, device)[:, :, :41]
    assert_close(softmax(x), _ref(x))
    # A broadcast row (stride 0 between rows) is read once per row.
    row = random_tensor((41,), torch.float32, device)
    assert_close(softmax(row.expand(5, 41)), _ref(row.expand(5, 41)))


def test_rejects_leading_dimensions_that_do_not_merge(device):
    x = random_tensor((4, 10, 8), torch.float32, device)[:, :5, :]  # strides (80, 8, 1): no single row stride
    with pytest.raises(ValueError, match=r"cannot be read as rows of one stride.*\.contiguous\(\)"):
        softmax(x)


def test_rejects_non_contiguous_last_dimension(device):
    x = random_tensor((8, 6), torch.float32, device).t()
    with pytest.raises(ValueError, match=r"x's last dimension must be contiguous \(stride 1\), got stride 6"):
        softmax(x)
    y = torch.softmax(random_tensor((6, 8), torch.float32, device), dim=-1)
    with pytest.raises(ValueError, match="dy's last dimension must be contiguous"):
        softmax_backward(y, random_tensor((8, 6), torch.float32, device).t())


@pytest.mark.parametrize("shape", [(0,), (0, 5), (5, 0), (2, 0, 3)], ids=str)
def test_empty_tensors_return_empty(shape, device):
    x = torch.empty(shape, device=device)
    y = softmax(x)
    assert y.shape == x.shape and y.numel() == 0
    assert softmax_backward(y, y.clone()).shape == x.shape
    x.requires_grad_()
    softmax(x).sum().backward()
    assert x.grad.shape == x.shape


# -- the lesson's steps ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 1),  # one element
        (37, 781),  # odd: ragged last block
        (5, 2500),  # the unfused kernels loop over three blocks of 1024 columns, the last one ragged
    ],
    ids=str,
)
@pytest.mark.parametrize("step", [softmax_unfused, softmax_fused_row], ids=lambda f: f.__name__)
def test_lesson_steps_match_reference(step, shape, dtype, device):
    x = random_tensor(shape, dtype, device)
    assert_close(step(x), _ref(x), dtype)


@pytest.mark.parametrize("step", [softmax_unfused, softmax_fused_row], ids=lambda f: f.__name__)
def test_lesson_steps_reject_what_they_do_not_handle(step, device):
    with pytest.raises(ValueError, match="must be 2-D"):
        step(random_tensor((2, 3, 4), torch.float32, device))
    with pytest.raises(ValueError, match="x must be contiguous"):
        step(random_tensor((8, 6), torch.float32, device).t())
    with pytest.raises(TypeError, match="supported: float32, float16, bfloat16"):
        step(torch.zeros((2, 3), dtype=torch.float64, device=device))
    assert step(torch.empty((0, 3), device=device)).shape == (0, 3)


# -- plans ----------------------------------------------------------------------------------------
def test_plan_paths_and_packing():
    h = torch.float16
    short = softmax_plan(4096, 256, h)
    assert short.path == "fused" and short.block_n == 256 and short.rows_per_program > 1
    assert short.grid == 4096 // short.rows_per_program
    assert short.num_warps == short.rows_per_program  # at least a warp per packed row
    tiny = softmax_plan(4096, 16, h)  # ... but not so many that a thread holds less than a 16-byte load
    assert tiny.rows_per_program * tiny.block_n // (32 * tiny.num_warps) == MIN_ELEMENTS_PER_THREAD
    # Warps are counted on the real columns and rounded down: 5120 columns are held by 8 warps, as
    # 4096 are, not by the 16 of a full 8192; and in a block of 4096 and a tail of 1024, not in
    # one block of 8192 of which 3072 lanes would be masked.
    plan = softmax_plan(4096, 5120, h)
    assert (plan.block_n, plan.tail_n) == (4096, 1024)
    assert plan.num_warps == softmax_plan(4096, 4096, h).num_warps == 8
    for n, blocks in ((4096, (4096, 0)), (6144, (4096, 2048)), (3000, (2048, 1024)), (7168, (8192, 0))):
        plan = softmax_plan(4096, n, h)
        assert (plan.block_n, plan.tail_n) == blocks, n
        assert plan.block_n + plan.tail_n >= n
    # The backward, rows read twice and packed short rows keep one block.
    assert softmax_plan(4096, 5120, h, "bwd").block_n == 8192 and softmax_plan(4096, 5120, h, "bwd").tail_n == 0
    assert softmax_plan(4096, 5120, torch.float32).reload and softmax_plan(4096, 5120, torch.float32).tail_n == 0
    assert softmax_plan(4096, 300, h).tail_n == 0
    assert softmax_plan(4096, 8192, h).num_warps == 16
    f = torch.float32
    assert softmax_plan(4096, MAX_FUSED_N, f).path == "fused"
    assert softmax_plan(4096, MAX_FUSED_N + 1, f).path == "online"
    assert softmax_plan(4096, MAX_FUSED_N + 1, h, "bwd").path == "online"
    # The forward of 16-bit rows of the PREFETCH_BLOCKS widths: one program per SM (4 on the CPU),
    # each loading its next rows into shared memory while it works on one.
    for dtype in (h, torch.bfloat16):
        plan = softmax_plan(4096, MAX_FUSED_N, dtype)
        assert (plan.path, plan.grid, plan.num_stages, plan.num_warps) == ("fused", 4, PREFETCH_STAGES, 32)
    assert softmax_plan(4096, MAX_FUSED_N, f).num_stages == softmax_plan(4096, MAX_FUSED_N, h, "bwd").num_stages == 1
    assert softmax_plan(4096, MAX_FUSED_N // 2, h).grid == 4096
    knobs = softmax_plan(4096, MAX_FUSED_N, h, num_stages=2, programs_per_sm=2)
    assert (knobs.num_stages, knobs.grid) == (2, 8)
    # The backward's long rows: a warp per BWD_COLUMNS_PER_WARP columns, capped by element size.
    assert softmax_plan(4096, 5120, h, "bwd").num_warps == softmax_plan(4096, 5120, f, "bwd").num_warps == 8
    assert softmax_plan(4096, MAX_FUSED_N, h, "bwd").num_warps == BWD_MAX_WARPS[2] == 16
    assert softmax_plan(4096, MAX_FUSED_N, f, "bwd").num_warps == BWD_MAX_WARPS[4] == 8
    # Online: two programs per SM in the forward, one in the backward (ONLINE_PROGRAMS_PER_SM).
    assert softmax_plan(4096, 65536, h).grid == 8
    assert softmax_plan(4096, 65536, h, "bwd").grid == 4
    assert softmax_plan(4096, 65536, f, max_fused_n=65536).path == "fused"
    assert softmax_plan(4096, 65536, h, max_fused_n=MAX_FUSED_N).path == "online"
    # Fewer rows than SMs (4 on the CPU): rows are split into chunks that keep every SM busy.


def test_plan_caps_registers_where_measured():
    # 16-bit forward rows of one to a program in 8 warps (4096-8191 columns) are capped so that five
    # programs fit on an SM (FUSED_MAX_REGISTERS); nothing else is.
    for dtype in (torch.float16, torch.bfloat16):
        for n_cols in (4096, 5120, 8191):
            plan = softmax_plan(4096, n_cols, dtype)
            assert (plan.path, plan.rows_per_program, plan.num_warps, plan.max_registers) == ("fused", 1, 8, 48)
        for n_cols in (2560, 8192, 1000):  # 4 and 16 warps, short rows packed
            assert softmax_plan(4096, n_cols, dtype).max_registers is None
        assert softmax_plan(4096, 5120, dtype, "bwd").max_registers is None
    assert softmax_plan(4096, 5120, torch.float32).max_registers is None
    # Rows pinned to 8 warps keep the cap up to 32 elements a thread, and lose it past that, where it spills.
    assert softmax_plan(4096, 8192, torch.float16, num_warps=8).max_registers == 48
    assert softmax_plan(4096, 16384, torch.float16, num_warps=8).max_registers is None


def test_plan_stages_long_rows_where_it_can(monkeypatch):
    h, f = torch.float16, torch.float32
    assert softmax_plan(4096, STAGED_MAX_N, h).path == "online"  # the CPU: no shared memory to stage in
    # A stand-in for a Hopper GPU: shared memory for seven chunks of 32 KB.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes <= 7 * 32768)
    for dtype, held in ((h, 0), (torch.bfloat16, 0), (f, 1)):
        plan = softmax_plan(4096, STAGED_MAX_N, dtype)
        chunk = STAGED_CHUNK_ROWS * STAGED_VIEW * 2 // dtype.itemsize  # 32 KB
        assert (plan.path, plan.chunks, plan.held, plan.chunk_n, plan.num_warps, plan.grid) == (
            "staged", STAGED_MAX_N // chunk, held, chunk, STAGED_WARPS, 4)  # one program per SM (4 on the CPU)
    # The backward stages a row of y and one of dy: 16-bit rows of 65536 are 8 chunks, the last of
    # dy held in registers. A float32 pair would need more in registers: its rows are shared out
    # among programs (below), but not on 4 SMs, fewer than a row's 8 chunks.
    plan = softmax_plan(4096, STAGED_MAX_N, h, "bwd")
    assert (plan.path, plan.chunks, plan.held, plan.num_warps, plan.programs_per_row) == ("staged", 4, 1, STAGED_WARPS, 1)
    assert softmax_plan(4096, 40960, h, "bwd").held == 0  # 3 chunks each
    assert softmax_plan(4096, STAGED_MAX_N, f, "bwd").path == "online"
    assert softmax_plan(4096, STAGED_MAX_N, f, "bwd", num_warps=8).path == "online"  # a knob: the Triton kernels
    assert softmax_plan(4096, MAX_FUSED_N, h, "bwd").path == "fused"
    runs = MAX_FUSED_N // STAGED_VIEW + 1  # a last chunk of one run
    assert softmax_plan(4096, runs * STAGED_VIEW, h).chunks == -(-runs // STAGED_CHUNK_ROWS)
    assert softmax_plan(4096, runs * STAGED_VIEW, f).held == 0  # 5 chunks of float32: all in shared memory
    # With room for five chunks only, a float32 row of 65536 would hold three in registers: online.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes <= 5 * 32768)
    assert softmax_plan(4096, STAGED_MAX_N, f).path == "online"
    assert softmax_plan(4096, STAGED_MAX_N, f, "bwd").path == "online"
    assert softmax_plan(4096, STAGED_MAX_N, h).held == 0
    # Everything else keeps its path: rows too long or not a multiple of the runs, fewer rows than
    # SMs, and any knob.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: True)
    assert softmax_plan(4096, STAGED_MAX_N + STAGED_VIEW, h).path == "online"
    assert softmax_plan(4096, STAGED_MAX_N - 8, h).path == "online"
    assert softmax_plan(3, STAGED_MAX_N, h).path == "split"
    assert softmax_plan(4096, STAGED_MAX_N, h, num_warps=8).path == "online"
    assert softmax_plan(4096, MAX_FUSED_N, h).path == "fused"
    few = softmax_plan(2, 1 << 20, h)
    assert few.path == "split" and few.chunks * few.chunk_n >= 1 << 20 and few.chunk_n % few.block_n == 0
    assert softmax_plan(2, 1 << 20, h, split=1).path == "online"
    bwd = softmax_plan(4096, 4096, h, "bwd")
    assert bwd.num_warps >= softmax_plan(4096, 4096, h, "fwd").num_warps
    # Rows of the RELOAD_BLOCKS widths are read again from cache after each reduction; the
    # backward's then take a warp per BWD_RELOAD_COLUMNS_PER_WARP columns, up to 32.
    for n in (12288, 16384):
        plan = softmax_plan(4096, n, torch.bfloat16, "bwd")
        assert plan.reload and plan.num_warps == 32
    for n, dtype, direction in ((4096, h, "bwd"), (8192, h, "bwd"), (MAX_FUSED_N, h, "bwd"), (16384, f, "bwd"),
                                (4096, h, "fwd"), (1024, f, "fwd")):
        assert not softmax_plan(4096, n, dtype, direction).reload
    for n in (3000, 4096, 5120, MAX_FUSED_N):
        assert softmax_plan(4096, n, f).reload
    assert not softmax_plan(4096, 4096, f, rows_per_program=2).reload  # a packed block holds its rows
    # FUSED_ROWS overrides the packing rule: two rows of 513-1024 columns a program.
    assert softmax_plan(4096, 1000, h).rows_per_program == softmax_plan(4096, 1024, f, "bwd").rows_per_program == 2
    assert softmax_plan(4096, 512, h).rows_per_program == FUSED_ELEMENTS // 512
    # Float32 rows of the backward on 132 SMs: a chunk of y and one of dy to a program, as many
    # programs to a row as chunks, the grid a whole number of rows' groups, up to
    # STAGED_SPLIT_RING rows in flight where shared memory takes them, and no split below two.
    monkeypatch.setattr(runtime, "sm_count", lambda device: 132)
    for room, ring in ((7, STAGED_SPLIT_RING), (5, 2), (3, None)):
        monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes, room=room: row_bytes <= room * 32768)
        for cols, per_row in ((STAGED_MAX_N, 8), (40960, 5), ((MAX_FUSED_N // STAGED_VIEW + 1) * STAGED_VIEW, 5)):
            plan = softmax_plan(4096, cols, f, "bwd")
            if ring is None:
                assert plan.path == "online"
                continue
            assert (plan.path, plan.chunks, plan.programs_per_row, plan.chunk_n, plan.num_stages, plan.num_warps,
                    plan.held, plan.grid) == ("staged", per_row, per_row, 8192, ring, STAGED_SPLIT_WARPS, 0,
                                              132 // per_row * per_row)
    assert softmax_plan(131, STAGED_MAX_N, f, "bwd").path == "split"  # fewer rows than SMs


# -- bad input ------------------------------------------------------------------------------------
def test_rejects_non_tensor():
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        softmax([1.0, 2.0])


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.bool], ids=str)
def test_rejects_unsupported_dtype(dtype, device):
    with pytest.raises(TypeError, match="x has dtype .*; supported: float32, float16, bfloat16"):
        softmax(torch.zeros((2, 3), dtype=dtype, device=device))
    with pytest.raises(TypeError, match="y has dtype"):
        softmax_backward(torch.zeros((2, 3), dtype=dtype, device=device), torch.zeros((2, 3), device=device))


def test_rejects_zero_dimensional(device):
    with pytest.raises(ValueError, match="at least one dimension"):
        softmax(torch.tensor(1.0, device=device))


def test_rejects_rows_longer_than_int32():
    # A meta tensor has a shape but no memory: the length check comes before the device check.
    with pytest.raises(ValueError, match=r"rows longer than 2\*\*31 - 1"):
        softmax(torch.empty((2**31,), dtype=torch.float16, device="meta"))


def test_rejects_unsupported_device():
    with pytest.raises(ValueError, match="tensors on meta are not supported"):
        softmax(torch.empty((2, 3), device="meta"))


def test_cpu_tensors_outside_interpreter_mode_get_a_clear_error(monkeypatch):
    monkeypatch.setattr(runtime, "MODE", "gpu")
    with pytest.raises(ValueError, match=r"got CPU tensors.*\.cuda\(\)"):
        softmax(torch.zeros((2, 3)))


def test_backward_rejects_mismatches(device):
    y = random_tensor((4, 8), torch.float32, device)
    with pytest.raises(ValueError, match=r"shapes differ: y: \(4, 8\), dy: \(4, 9\)"):
        softmax_backward(y, random_tensor((4, 9), torch.float32, device))
    with pytest.raises(ValueError, match="dtypes differ"):
        softmax_backward(y, y.half())
    with pytest.raises(ValueError, match="same device"):
        softmax_backward(y, torch.empty((4, 8), device="meta"))
    with pytest.raises(TypeError, match="dy must be a torch.Tensor"):
        softmax_backward(y, None)


def test_rejects_bad_out(device):
    x = random_tensor((4, 8), torch.float32, device)
    with pytest.raises(ValueError, match="shapes differ"):
        softmax(x, torch.empty((4, 9), device=device))
    with pytest.raises(ValueError, match="dtypes differ"):
        softmax(x, torch.empty((4, 8), dtype=torch.float16, device=device))
    with pytest.raises(ValueError, match="out must be contiguous"):
        softmax(x, torch.empty((8, 4), device=device).t())
    with pytest.raises(ValueError, match="out= is not supported when x requires a gradient"):
        softmax(x.requires_grad_(), torch.empty((4, 8), device=device))
    with pytest.raises(ValueError, match="shapes differ"):
        softmax_backward(x.detach(), x.detach(), torch.empty((4, 9), device=device))


@pytest.mark.parametrize(
    "knob, value, message",
    [
        ("tile_n", 100, "tile_n must be a power of two"),
        ("num_warps", 64, "num_warps must be a power of two up to 32"),
        ("num_warps", 3, "num_warps must be a power of two"),
        ("rows_per_program", 0, "rows_per_program must be a power of two"),
        ("split", 0, "split must be a positive integer"),
        ("max_fused_n", -1, "max_fused_n must be a positive integer"),
        ("programs_per_sm", 1.5, "programs_per_sm must be a positive integer"),
        ("num_stages", 0, "num_stages must be a positive integer"),
    ],
)
def test_rejects_bad_knobs(knob, value, message, device):
    x = random_tensor((4, 8), torch.float32, device)
    with pytest.raises(ValueError, match=message):
        softmax(x, **{knob: value})
    with pytest.raises(ValueError, match=message):
        softmax_backward(x, x, **{knob: value})


def test_bytes_count():
    assert softmax_bytes(4096, 1024, torch.float16) == 2 * 4096 * 1024 * 2
    assert softmax_bytes(4096, 1024, torch.float32, "bwd") == 3 * 4096 * 1024 * 4
    with pytest.raises(ValueError, match="direction must be 'fwd' or 'bwd'"):
        softmax_bytes(1, 1, torch.float32, "fwd+bwd")


def test_tolerances_used_are_the_tables():
    # This family adds nothing to the table: outputs in [0, 1] fit the per-dtype limits as they are.
    assert {torch.float32, torch.float16, torch.bfloat16} <= set(TOLERANCES)


# -- GPU only: sizes the interpreter cannot reach -----------------------------------------------------
@gpu_only
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize(
    "shape", [(4096, n) for n in (256, 1024, 4096, 8192, 32768, 65536)] + [(256, 1 << 17), (64, 1 << 20)], ids=str)
def test_benchmark_shapes(shape, dtype):
    y = _check_forward(random_tensor(shape, dtype, "cuda"))
    _check_backward(y)


@gpu_only
@pytest.mark.large_memory
@pytest.mark.parametrize(
    "rows, cols",
    [
        (2**17 + 1, 2**14),  # fused path: 2**31 + 16384 elements
        (2**15 + 1, 2**16),  # staged path on Hopper, online elsewhere: 2**31 + 65536 elements
    ],
)
def test_offsets_past_2_31_elements(rows, cols):
    # A 32-bit row offset would wrap around in the last row.
    x = torch.zeros((rows, cols), dtype=torch.float16, device="cuda")
    x[-1, :4] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    y = softmax(x)
    assert not torch.isnan(y).any()
    assert_close(y[-2:], _ref(x[-2:]))
    assert_close(y[:2], _ref(x[:2]))
    dx = softmax_backward(y, x)
    assert_close(dx[-2:], softmax_backward_reference(y[-2:].double(), x[-2:].double()), torch.float16)


@gpu_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_staged_rows(dtype, monkeypatch):
    # Rows of 32769-65536 columns on Hopper: copied into shared memory in chunks; the last chunk of
    # a float32 row of more than 7 chunks (57345 columns on) held in registers. A full ring of
    # chunks, a ragged last chunk (129 and 253 runs of 256), rows padded in memory, more rows than
    # programs (each program reuses its slots), rows of -inf, and huge values.
    cuda = torch.device("cuda")
    hopper = _rows.can_stage_rows(cuda, STAGED_MAX_N * 2)
    rows = 2 * runtime.sm_count(cuda) + 3
    for cols, stride in ((STAGED_MAX_N, STAGED_MAX_N), (129 * STAGED_VIEW, 129 * STAGED_VIEW + 64), (40960, 41216),
                         (253 * STAGED_VIEW, 253 * STAGED_VIEW + 64)):
        x = random_tensor((rows, stride), dtype, cuda)[:, :cols]
        x[1] = float("-inf")
        x[2, 7:] = float("-inf")
        x[3, ::5] = 3e4
        x[4, -3:] = 3e4  # the largest values in the last chunk, held in registers for long float32 rows
        plan = softmax_plan(rows, cols, dtype, "fwd", cuda)
        assert plan.path == ("staged" if hopper else "online")
        assert plan.held == (1 if hopper and dtype == torch.float32 and cols > 7 * 8192 else 0)
        y = softmax(x)
        assert torch.isnan(y[1]).all() and not torch.isnan(y[[0, *range(2, rows)]]).any()
        ref = _ref(x)
        assert_close(y[[0, *range(2, rows)]], ref[[0, *range(2, rows)]], dtype)
        assert relative_error(y[2:], ref[2:]) <= 2 * _torch_error(x[2:]) + 1e-7
        # The backward of 16-bit rows stages y and dy, the last chunk of dy of rows of more than
        # 49152 columns (four chunks of each, eight in all) held in registers; float32 rows are
        # shared out among programs, a chunk of 8192 columns of y and of dy to each.
        bwd = softmax_plan(rows, cols, dtype, "bwd", cuda)
        assert bwd.path == ("staged" if hopper else "online")
        assert bwd.programs_per_row == (-(-cols // 8192) if hopper and dtype == torch.float32 else 1)
        assert bwd.held == (1 if hopper and dtype != torch.float32 and cols > 3 * 16384 else 0)
        y = ref[2:].to(dtype)
        dy = random_tensor((rows - 2, stride), dtype, cuda)[:, :cols]
        dx = poisoned(y.shape, dtype, cuda)
        softmax_backward(y, dy, dx)
        assert_close(dx, softmax_backward_reference(y.double(), dy.double()), dtype)
    # A NaN in a row shared out among programs spoils that row's sum, so all its dx, and no other
    # row's; no program waits for it forever. Then two rows in flight instead of three.
    y = softmax(random_tensor((rows, STAGED_MAX_N), dtype, cuda))
    dy = random_tensor(y.shape, dtype, cuda)
    dy[5, 7] = float("nan")
    dx = softmax_backward(y, dy)
    assert dx[5].isnan().all() and not dx[torch.arange(rows, device=cuda) != 5].isnan().any()
    monkeypatch.setattr(softmax_module, "STAGED_SPLIT_RING", 2)
    assert softmax_plan(rows, STAGED_MAX_N, dtype, "bwd", cuda).num_stages == (2 if hopper and dtype == torch.float32 else 1)
    dy[5, 7] = 0.0
    assert_close(softmax_backward(y, dy), softmax_backward_reference(y.double(), dy.double()), dtype)
    # Rows that do not start on 16 bytes take the online path; the answer is the same.
    x = random_tensor((rows, STAGED_MAX_N + 8), dtype, cuda)[:, 1:STAGED_MAX_N + 1]
    assert_close(softmax(x), _ref(x), dtype)
    # Autograd: the staged forward and backward.
    x = random_tensor((rows, STAGED_MAX_N), dtype, cuda).requires_grad_()
    dy = random_tensor(x.shape, dtype, cuda)
    softmax(x).backward(dy)
    y = _ref(x.detach())
    assert_close(x.grad, softmax_backward_reference(y, dy.double()), dtype)
