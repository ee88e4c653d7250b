"""layer_norm and rms_norm: forward and gradients against float64, both code paths, odd shapes,
poisoned outputs, launch knobs, the lesson's steps, and errors on bad input."""

from __future__ import annotations

import importlib
import re

import pytest
import torch
import torch.nn.functional as F
from conftest import ON_GPU, gpu_only
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonperf import runtime
from tritonperf.bench.records import SCHEMA
from tritonperf.kernels import _rows
from tritonperf.kernels._rows import STAGED_VIEW
from tritonperf.kernels.norms import (
    BWD_CONFIGS,
    BWD_FLOAT32_CONFIGS,
    BWD_NUM_STAGES,
    BWD_SHARED_BYTES,
    BWD_SPLIT,
    BWD_STAGED,
    BWD_TILED,
    BWD_WIDE,
    BWD_WIDE_N,
    FWD_BY_GPU,
    FWD_CONFIGS,
    FWD_FLOAT32_CONFIGS,
    FWD_MAX_UNROLLED_TILES,
    FWD_RELOAD,
    FWD_SPLIT,
    FWD_SPLIT_N,
    FWD_SPLIT_RING,
    FWD_STREAMED,
    FWD_STREAMED_FULL,
    FWD_TILED,
    layer_norm,
    layer_norm_bwd,
    layer_norm_bytes,
    layer_norm_fwd,
    layer_norm_reference,
    norm_config,
    rms_norm,
    rms_norm_bwd,
    rms_norm_bytes,
    rms_norm_fwd,
    rms_norm_reference,
)
from tritonperf.ladders.norms import layer_norm_bwd_atomic, layer_norm_fwd_row, layer_norm_fwd_row_scaled_warps
from tritonperf.testing import TOLERANCES, assert_close, max_abs_error, poisoned, random_tensor, relative_error

norms_module = importlib.import_module("tritonperf.kernels.norms")

# The interpreter computes bfloat16 arithmetic wrongly (DESIGN.md §3): bf16 is checked on the GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
NORMS = ["layer_norm", "rms_norm"]
SHAPES = [
    (1, 1),  # one row of one element: layer norm's variance is 0 and y is the bias
    (3, 7),  # fewer columns than any block: most lanes masked
    (5, 256),  # exactly one 256-column block, fewer rows than one tile holds
    (19, 257),  # one column past a block: BLOCK_N doubles, half the lanes masked
    (2, 3, 129),  # rank 3: the leading dimensions are merged into 6 rows
    (131, 1031),  # primes: a ragged last tile of rows, a ragged block of columns
    (67, 509),  # a 512-column block, an odd number of rows for its 2-row tiles
]
SHAPES += [(1823, 781), (1001, 1000), (4096, 5120), (4099, 8192), (1031, 16384), (4096, 65536), (257, 10000),
           (129, 30000)] if ON_GPU else [(263, 781)]
# On the GPU, the benchmark's sizes: the forward streams 5120 (and float32 RMS norm's 8192) through
# tiles, 16384 takes the tiled backward of layer norm (RMS norm holds it in registers), 65536 both
# tiled kernels. 10000 columns are streamed in 3-5 tiles, the last one partial; float32 holds 30000
# in registers, 16-bit types stream it.


def _params(norm, n, dtype, device, *, weight=True, bias=True):
    # Weights near 1 and small biases, as trained models have; random so that every column differs.
    w = (1 + 0.1 * random_tensor((n,), torch.float32, device)).to(dtype) if weight else None
    b = (0.1 * random_tensor((n,), torch.float32, device)).to(dtype) if bias and norm == "layer_norm" else None
    return (w, b) if norm == "layer_norm" else (w,)


def _ours(norm):
    return layer_norm if norm == "layer_norm" else rms_norm


def _reference(norm):
    return layer_norm_reference if norm == "layer_norm" else rms_norm_reference


def _torch(norm, x, *params):
    n = x.shape[-1]
    return F.layer_norm(x, (n,), *params, 1e-5) if norm == "layer_norm" else F.rms_norm(x, (n,), *params, 1e-6)


# A result element whose terms nearly cancel is as exact as its terms allow: this many float32
# units of the sum of their magnitudes (the kernels compute in float32; the reductions over a row
# add a few units each), plus the rounding to the output's dtype. The weight gradients sum over
# all the rows, with terms of random sign: their rounding grows about as the square root of the
# count, so one unit of the whole sum of magnitudes bounds it, while keeping a large-M test strict.
ROUNDING_ULPS = 16
SUM_ULPS = 1


def assert_grad_close(out, ref, torch_out, terms=None, ulps=ROUNDING_ULPS):
    """Within the tolerance table, or at most 2 × torch's own error in the same dtype, or within the rounding of its terms.

    Gradients are reductions: ``dweight`` and ``dbias`` sum every row, so their largest elements
    grow with the number of rows and their rounding to a half-precision dtype can pass the table's
    absolute limit. DESIGN.md §3 allows "at most 2 × the error of torch in the same dtype" there.

    ``terms`` (float64, ``out``'s shape) is, for each element, the size its float32 rounding error
    scales with (see :func:`_gradient_terms`). ``dx`` of one- and two-column rows is
    a difference of nearly equal terms, scaled by an ``rstd`` that reaches ``1/sqrt(eps)`` when the
    values of a row are close: its relative error is then set by float32 rounding of the terms,
    and torch's own error, the other yardstick, is as much a matter of luck. Such a result passes
    when every element is within ``ulps`` float32 units of its terms. An error of the kernel's own
    (a missing or wrong term) is of the size of the terms, far outside that.
    """
    tol = TOLERANCES[out.dtype]
    assert out.shape == ref.shape and out.dtype == torch_out.dtype
    assert not torch.isnan(out).any(), "NaN in a gradient"
    if terms is not None and _within_rounding(out, ref, terms, ulps):
        return
    rel, mx = relative_error(out, ref), max_abs_error(out, ref)
    rel_limit = max(tol.rel, 2 * relative_error(torch_out, ref))
    abs_limit = max(tol.abs, 2 * max_abs_error(torch_out, ref))
    if not ref.any():
        rel = 0.0  # an all-zero reference has no relative error: the absolute limit decides
    assert rel <= rel_limit and mx <= abs_limit, (
        f"relative error {rel:.3e} (limit {rel_limit:.1e}), max abs error {mx:.3e} (limit {abs_limit:.1e})"
    )


def _conditioning(norm, x):
    """Float64 ``(rstd, |x̂|, a, s)`` for the rows of ``x``: how exact a float32 result can be.

    ``x̂ = (x - mean)·rstd`` carries the rounding of ``x - mean``, which is relative to ``|x|`` and
    ``|mean|``, not to their difference: about ``a = (|x| + mean|x|)·rstd`` units of float32 in
    ``x̂``, and about its row mean ``s`` in ``rstd``. Rows whose values are close together (so that
    ``rstd`` is large, as in two-column rows) make ``a`` large; for ordinary rows it is a few units.
    """
    x = x.double()
    eps = 1e-5 if norm == "layer_norm" else 1e-6
    xc = x - x.mean(-1, keepdim=True) if norm == "layer_norm" else x
    rstd = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + eps)
    a = (x.abs() + x.abs().mean(-1, keepdim=True)) * rstd
    return rstd, (xc * rstd).abs(), a, a.mean(-1, keepdim=True)


def _within_rounding(out, ref, terms, ulps=ROUNDING_ULPS):
    """Every element within ``ulps`` float32 units of its ``terms``, plus the rounding to ``out``'s dtype."""
    err = (out.double() - ref.double()).abs()
    allowed = ulps * torch.finfo(torch.float32).eps * terms + torch.finfo(out.dtype).eps * ref.double().abs()
    return bool((err <= allowed).all())


def _gradient_terms(norm, x, w, dy):
    """Per element, the size that float32 rounding of each gradient scales with: ``[dx, dweight, dbias]``.

    With ``g = w·dy``, ``c1 = mean(g·x̂)`` and ``c2 = mean(g)`` over the row,
    ``dx = rstd·(g - x̂·c1 - c2)`` (no ``c2`` for RMS norm); ``dweight`` sums ``dy·x̂`` and ``dbias``
    sums ``dy`` over the rows. To the magnitudes of those terms come the errors of ``x̂`` and
    ``rstd`` themselves (see :func:`_conditioning`). All in float64, from the inputs.
    """
    n = x.shape[-1]
    rstd, xhat, a, s = _conditioning(norm, x)
    dy = dy.double()
    g = (dy * w.double()).abs() if w is not None else dy.abs()
    c1 = (g * xhat).mean(-1, keepdim=True)
    c2 = g.mean(-1, keepdim=True) if norm == "layer_norm" else 0.0
    dx = rstd * ((1 + s) * (g + xhat * c1 + c2) + a * c1 + xhat * (g * a).mean(-1, keepdim=True))
    return [dx, (dy.abs() * (xhat + a)).reshape(-1, n).sum(0), dy.abs().reshape(-1, n).sum(0)]


def _check_forward(norm, shape, dtype, device, **knobs):
    x = random_tensor(shape, dtype, device)
    _check_forward_of(norm, x, _params(norm, shape[-1], dtype, device), **knobs)


def _check_forward_of(norm, x, params, **knobs):
    shape, dtype, device = x.shape, x.dtype, x.device
    out = poisoned(shape, dtype, device)
    if norm == "layer_norm":
        y, mean, rstd = layer_norm_fwd(x, *params, out=out, **knobs)
        assert relative_error(mean, x.double().mean(-1).flatten()) <= 1e-5
    else:
        y, rstd = rms_norm_fwd(x, *params, out=out, **knobs)
    assert y is out
    # Within the tolerance table, or within the rounding that y = x̂·w + b allows (see _conditioning):
    # rows of close values make x̂ itself inexact in float32, in torch as in ours.
    ref = _reference(norm)(x, *params)
    rstd_ref, xhat, a, s = _conditioning(norm, x)
    w = params[0].double().abs() if params[0] is not None else 1.0
    b = params[1].double().abs() if norm == "layer_norm" and params[1] is not None else 0.0
    if not _within_rounding(y, ref, w * (xhat * (1 + s) + a) + b):
        assert_close(y, ref, dtype)
    rstd_limit = max(1e-5, ROUNDING_ULPS * torch.finfo(torch.float32).eps * (1 + s).max().item())
    assert relative_error(rstd, rstd_ref.flatten()) <= rstd_limit


def _check_gradients(norm, shape, dtype, device, *, weight=True, bias=True, **knobs):
    x = random_tensor(shape, dtype, device)
    params = _params(norm, shape[-1], dtype, device, weight=weight, bias=bias)
    _check_gradients_of(norm, x, params, random_tensor(shape, dtype, device), **knobs)


def _backward_of(norm, x, params, dy, **kwargs):
    # dx and the parameters' gradients from our launchers (kwargs: dx, knobs), the statistics from our forward.
    if norm == "layer_norm":
        _, mean, rstd = layer_norm_fwd(x, *params)
        return layer_norm_bwd(dy, x, *params, mean, rstd, **kwargs)
    _, rstd = rms_norm_fwd(x, *params)
    return rms_norm_bwd(dy, x, *params, rstd, **kwargs)


def _check_gradients_of(norm, x, params, dy, **knobs):
    shape, dtype, device = x.shape, x.dtype, x.device
    present = [p for p in params if p is not None]
    leaves = [t.detach().requires_grad_() for t in (x, *present)]
    ref_leaves = [t.detach().double().requires_grad_() for t in leaves]
    torch_leaves = [t.detach().requires_grad_() for t in leaves]

    def rebuild(ts):
        it = iter(ts[1:])
        return [next(it) if p is not None else None for p in params]

    if knobs:  # call the launchers directly, with the knobs
        dx_out = poisoned(shape, dtype, device)
        grads = _backward_of(norm, leaves[0].detach(), params, dy, dx=dx_out, **knobs)
        assert grads[0] is dx_out
        grads = [g for g in grads if g is not None]
    else:  # through autograd
        _ours(norm)(leaves[0], *rebuild(leaves)).backward(dy)
        grads = [t.grad for t in leaves]
    ref = torch.autograd.grad(_reference(norm)(ref_leaves[0], *rebuild(ref_leaves)), ref_leaves, dy.double())
    expected = torch.autograd.grad(_torch(norm, torch_leaves[0], *rebuild(torch_leaves)), torch_leaves, dy)
    assert len(grads) == len(ref)
    dx_terms, dw_terms, db_terms = _gradient_terms(norm, x, params[0], dy)
    terms = [dx_terms] + [t for p, t in zip(params, (dw_terms, db_terms)[:len(params)], strict=True) if p is not None]
    ulps = [ROUNDING_ULPS] + [SUM_ULPS] * (len(terms) - 1)
    for g, r, t, size, units in zip(grads, ref, expected, terms, ulps, strict=True):
        assert_grad_close(g, r, t, size, units)


# -- correctness -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("norm", NORMS)
def test_forward_matches_reference(norm, dtype, shape, device):
    _check_forward(norm, shape, dtype, device)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("norm", NORMS)
def test_gradients_match_reference(norm, dtype, shape, device):
    _check_gradients(norm, shape, dtype, device)


@pytest.mark.skipif(ON_GPU, reason="SHAPES holds this size on the GPU")
def test_1823_x_781_in_the_interpreter(device):
    # Odd and larger: about 450 row tiles (the backward's over a few persistent programs), a ragged last tile.
    _check_forward("layer_norm", (1823, 781), torch.float16, device)
    _check_gradients("layer_norm", (1823, 781), torch.float16, device)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(
    "shape, block_n",
    [
        ((9, 300), 64),  # 5 tiles a row, the last one ragged
        ((4, 1000), 256),  # 4 tiles, the last one 232 columns wide
        ((3, 512), 128),  # tiles that divide the row exactly
        ((3, 1100), 64),  # 18 tiles: more than FWD_MAX_UNROLLED_TILES, the forward loops over them
    ],
    ids=str,
)
def test_tiled_path(norm, shape, block_n, device):
    # Rows longer than block_n are streamed through tiles in two passes (the path of rows too long
    # for registers); a small block_n takes it at small sizes. The forward's passes are unrolled up
    # to FWD_MAX_UNROLLED_TILES tiles, a loop above.
    assert norm_config(*shape, "fwd", device, block_n=block_n).tiled
    assert (-(-shape[1] // block_n) > FWD_MAX_UNROLLED_TILES) == (shape[1] == 1100)
    _check_forward(norm, shape, torch.float32, device, block_n=block_n)
    _check_forward(norm, shape, torch.float16, device, block_n=block_n, programs=2)  # persistent
    _check_gradients(norm, shape, torch.float32, device, block_n=block_n)
    _check_gradients(norm, shape, torch.float16, device, block_n=block_n, programs=2)
    for rows in (1, 4):  # one row per step; more rows per step than some programs own
        _check_gradients(norm, shape, torch.float32, device, block_n=block_n, rows=rows, programs=2)


@pytest.mark.parametrize("block_n", [128, 32], ids=["unrolled", "loop"])
def test_tiled_forward_rows_with_a_large_mean(block_n, device):
    # The mean is 10^4 times the spread: the schoolbook variance, mean(x²) - mean(x)², loses it all
    # to cancellation in float32 (an rstd off by orders of magnitude). The tiled forward's sums,
    # shifted by the mean of the row's first values, must keep rstd as exact as float32 rounding of
    # values near 10^4 allows.
    x = random_tensor((8, 1000), torch.float32, device) + 1e4
    w, b = random_tensor((1000,), torch.float32, device), random_tensor((1000,), torch.float32, device)
    assert norm_config(8, 1000, "fwd", device, block_n=block_n).tiled
    y, mean, rstd = layer_norm_fwd(x, w, b, block_n=block_n)
    x64 = x.double()
    assert relative_error(mean, x64.mean(-1)) <= 1e-6
    assert relative_error(rstd, 1 / (x64.var(-1, unbiased=False) + 1e-5).sqrt()) <= 1e-3
    assert max_abs_error(y, layer_norm_reference(x64, w.double(), b.double())) <= 0.05


@pytest.mark.parametrize(
    "knobs",
    [
        {"programs": 1},  # one program does every row: one partial row
        {"programs": 7},  # rows shared unevenly, the last program's group is short
        {"programs": 10_000},  # more programs than row tiles: clamped
        {"rows": 1, "num_warps": 1},
        {"rows": 16, "num_warps": 8},  # more rows per tile than some programs own
        {"block_n": 512, "num_stages": 2},  # a wider block than the row needs; a pipelined row loop
        {"block_n": BWD_WIDE_N, "num_warps": 4},  # the backward's widest held rows read each tile twice
        {"block_n": FWD_RELOAD[(4, False)][0], "rows": 1},  # the float32 forward reads each row again
    ],
    ids=str,
)
@pytest.mark.parametrize("norm", NORMS)
def test_launch_knobs(norm, knobs, device):
    _check_forward(norm, (97, 300), torch.float32, device, **knobs)
    _check_gradients(norm, (97, 300), torch.float32, device, **knobs)


@gpu_only
def test_backward_fits_a_gpu_with_less_shared_memory(small_gpu_shared_memory):
    # The backward's stage counts were tuned on Hopper; with 99 KB a program (sm_86, sm_89) the
    # launch lowers them for 16-bit layer norm rows of BWD_WIDE_N held two deep (x and dy, 64 KB a
    # row) and float32 rows of 8192 three deep; the tiled path's two kernels fit as they are.
    cuda = torch.device("cuda")
    for norm, shape, dtype in (("layer_norm", (64, BWD_WIDE_N), torch.bfloat16), ("rms_norm", (64, 8192), torch.float32),
                               ("layer_norm", (64, 4 * BWD_WIDE_N), torch.float32)):
        _check_gradients(norm, shape, dtype, cuda)
    small_gpu_shared_memory.check(lowered=("norm_bwd_kernel",))


@pytest.mark.parametrize(
    "norm, weight, bias",
    [("layer_norm", False, False), ("layer_norm", True, False), ("layer_norm", False, True), ("rms_norm", False, False)],
    ids=["layer_norm-no-params", "layer_norm-no-bias", "layer_norm-no-weight", "rms_norm-no-weight"],
)
def test_optional_parameters(norm, weight, bias, device):
    _check_gradients(norm, (37, 100), torch.float32, device, weight=weight, bias=bias)
    _check_gradients(norm, (37, 100), torch.float32, device, weight=weight, bias=bias, block_n=32)


@pytest.mark.parametrize("norm", NORMS)
def test_float32_parameters_with_half_input(norm, device):
    # Mixed precision keeps parameters in float32: y and dx come out in x's dtype, the weight
    # gradients in float32.
    x = random_tensor((41, 200), torch.float16, device).requires_grad_()
    params = [p.requires_grad_() for p in _params(norm, 200, torch.float32, device)]
    y = _ours(norm)(x, *params)
    assert y.dtype == torch.float16
    assert_close(y, _reference(norm)(x, *params), torch.float16)
    y.backward(random_tensor(y.shape, torch.float16, device))
    assert x.grad.dtype == torch.float16 and all(p.grad.dtype == torch.float32 for p in params)


@pytest.mark.parametrize("norm", NORMS)
def test_non_contiguous_inputs_and_gradients(norm, device):
    # A column slice is read through its row stride; a transposed tensor is copied first. Summing
    # the output makes autograd pass an expanded dy, whose strides are all 0.
    wide = random_tensor((50, 130), torch.float32, device)
    aligned = random_tensor((50, 136), torch.float32, device)  # rows 136 apart, a multiple of 8: see row_align
    for x in (wide[:, 3:103], aligned[:, 8:108], random_tensor((100, 50), torch.float32, device).t()):
        params = _params(norm, 100, torch.float32, device)
        assert_close(_ours(norm)(x, *params), _reference(norm)(x, *params))
        leaf = x.detach().requires_grad_()
        _ours(norm)(leaf, *params).sum().backward()
        ref_leaf = x.detach().double().requires_grad_()
        _reference(norm)(ref_leaf, *params).sum().backward()
        assert_grad_close(leaf.grad, ref_leaf.grad, torch.autograd.grad(_torch(norm, leaf, *params).sum(), leaf)[0])


@pytest.mark.parametrize("norm", NORMS)
def test_only_some_gradients_requested(norm, device):
    # Parameters that do not require gradients get none; a weight alone gets the right one.
    x = random_tensor((20, 64), torch.float32, device).requires_grad_()
    params = _params(norm, 64, torch.float32, device)
    _ours(norm)(x, *params).sum().backward()
    assert x.grad is not None and all(p.grad is None for p in params)
    x = random_tensor((20, 64), torch.float32, device)
    w = params[0].clone().requires_grad_()
    dy = random_tensor(x.shape, torch.float32, device)
    _ours(norm)(x, w, *params[1:]).backward(dy)
    w64 = w.detach().double().requires_grad_()
    ref = torch.autograd.grad(_reference(norm)(x, w64, *params[1:]), w64, dy.double())[0]
    assert_grad_close(w.grad, ref, torch.autograd.grad(_torch(norm, x, w, *params[1:]), w, dy)[0])


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape", [(0, 16), (4, 0), (2, 0, 8)], ids=str)
def test_empty_tensors_return_empty(norm, shape, device):
    x = torch.empty(shape, device=device, requires_grad=True)
    params = [p.requires_grad_() for p in _params(norm, shape[-1], torch.float32, device)]
    y = _ours(norm)(x, *params)
    assert y.shape == x.shape
    y.sum().backward()
    assert x.grad.shape == x.shape
    for p in params:  # sums over no rows
        assert p.grad.shape == (shape[-1],) and torch.all(p.grad == 0)


def test_ladder_steps(device):
    x = random_tensor((67, 781), torch.float16, device)
    w, b = _params("layer_norm", 781, torch.float16, device)
    ref = layer_norm_reference(x, w, b)
    for step in (layer_norm_fwd_row, layer_norm_fwd_row_scaled_warps):
        y, mean, rstd = step(x, w, b)
        assert_close(y, ref, torch.float16)
    dy = random_tensor(x.shape, torch.float16, device)
    ours = layer_norm_bwd(dy, x, w, b, mean, rstd)
    for g, o in zip(layer_norm_bwd_atomic(dy, x, w, mean, rstd), ours, strict=True):
        assert g.dtype == o.dtype
        assert relative_error(g, o) < 1e-3


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("programs", [None, 3], ids=["program-per-row", "persistent"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("block_n", [None, 4096], ids=["block-512", "block-4096"])
def test_one_row_per_tile_forward(norm, programs, dtype, block_n, device):
    # rows=1, the default for rows of 8192 columns and more, takes the 1-D path: without a loop when
    # every row has its program, with one when fewer programs take turns (an odd length, 7 rows).
    # A block of 4096 reads the row again after each reduction (FWD_RELOAD) in float32, and for RMS
    # norm in float16.
    knobs = {"rows": 1} | ({"programs": programs} if programs else {}) | ({"block_n": block_n} if block_n else {})
    cfg = norm_config(7, 300, "fwd", device, itemsize=dtype.itemsize, rms=norm == "rms_norm", **knobs)
    assert (cfg.rows, cfg.programs, cfg.tiled) == (1, programs or 7, False)
    assert cfg.reload == (block_n is not None and (dtype == torch.float32 or norm == "rms_norm"))
    _check_forward(norm, (7, 300), dtype, device, **knobs)


@settings(max_examples=12, deadline=None)
@given(
    m=st.integers(1, 70),
    n=st.integers(1, 700),
    block_log2=st.integers(4, 10),
    programs=st.integers(1, 9),
    rms=st.booleans(),
)
def test_property_any_shape_any_block(m, n, block_log2, programs, rms):
    device = runtime.default_device()
    norm = "rms_norm" if rms else "layer_norm"
    # block_n >= n keeps rows in registers, block_n < n streams them through tiles.
    knobs = {"block_n": 1 << block_log2, "programs": programs}
    _check_forward(norm, (m, n), torch.float32, device, **knobs)
    _check_gradients(norm, (m, n), torch.float32, device, **knobs)


@gpu_only
@pytest.mark.large_memory
@pytest.mark.parametrize("norm", NORMS)
def test_offsets_past_2_31_elements(norm):
    # 32771 rows of 65536: 2**31 + 3 * 65536 elements, so row * stride passes 2**31 in the last rows.
    m, n = 2**31 // 65536 + 3, 65536
    x = torch.randn(m, n, dtype=torch.float16, device="cuda")
    params = _params(norm, n, torch.float16, "cuda")
    stats_fwd = layer_norm_fwd if norm == "layer_norm" else rms_norm_fwd
    y, *stats = stats_fwd(x, *params)
    tail = slice(m - 4, m)
    assert_close(y[tail], _reference(norm)(x[tail], *params), torch.float16)
    dy = torch.randn_like(x)
    del y
    if norm == "layer_norm":
        dx, *_ = layer_norm_bwd(dy, x, *params, *stats)
    else:
        dx, _ = rms_norm_bwd(dy, x, *params, *stats)
    leaves = [x[tail].double().requires_grad_()]
    ref = torch.autograd.grad(_reference(norm)(leaves[0], *params), leaves, dy[tail].double())[0]
    assert_close(dx[tail], ref, torch.float16)


@gpu_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("norm", NORMS)
def test_split_forward(norm, dtype, monkeypatch, request):
    # Rows of 32769-65536 columns on Hopper, each shared by a group of programs that trade their
    # sums (FWD_SPLIT): a last chunk of one run or of 53 runs in 64, whole chunks, rows padded in
    # memory, more rows than programs, a large mean, float32 parameters, none. Then a NaN in a
    # row, then small chunks (many programs a row) and the fewest rows in flight.
    cuda = torch.device("cuda")
    rms = norm == "rms_norm"
    rows = 2 * runtime.sm_count(cuda) + 3
    hopper = _rows.can_stage_rows(cuda, 1)
    chunk = FWD_SPLIT[dtype.itemsize][0]
    for cols, stride in ((129 * STAGED_VIEW, 129 * STAGED_VIEW + 64), (FWD_SPLIT_N[1], FWD_SPLIT_N[1]),
                         (245 * STAGED_VIEW, 245 * STAGED_VIEW + 64)):
        cfg = norm_config(rows, cols, "fwd", cuda, itemsize=dtype.itemsize, rms=rms)
        assert cfg.staged == hopper and (not hopper or (cfg.split, cfg.block_n) == (-(-cols // chunk), chunk))
        x = (10000 + random_tensor((rows, stride), torch.float32, cuda)).to(dtype)[:, :cols]
        for param_dtype in (dtype, torch.float32):
            _check_forward_of(norm, x, _params(norm, cols, param_dtype, cuda))
        _check_forward_of(norm, x, _params(norm, cols, dtype, cuda, weight=False, bias=False))
    # A NaN spoils its own row's sums and nothing else, and no program waits for it forever.
    x = random_tensor((rows, FWD_SPLIT_N[1]), dtype, cuda)
    x[5, 7] = float("nan")
    params = _params(norm, FWD_SPLIT_N[1], dtype, cuda)
    y = (layer_norm_fwd(x, *params) if norm == "layer_norm" else rms_norm_fwd(x, *params))[0]
    assert y[5].isnan().all() and not y[torch.arange(rows, device=cuda) != 5].isnan().any()
    for ring, part in ((2, 2048), (3, 1024)):
        monkeypatch.setattr(norms_module, "FWD_SPLIT", {key: (part, 4) for key in FWD_SPLIT})
        monkeypatch.setattr(norms_module, "FWD_SPLIT_RING", ring)
        norm_config.cache_clear()
        request.addfinalizer(norm_config.cache_clear)
        cols = 133 * STAGED_VIEW
        cfg = norm_config(rows, cols, "fwd", cuda, itemsize=dtype.itemsize, rms=rms)
        assert cfg.staged == hopper and (not hopper or (cfg.split, cfg.num_stages, cfg.programs % cfg.split) == (
            -(-cols // part), ring, 0))
        _check_forward_of(norm, random_tensor((rows, cols), dtype, cuda), _params(norm, cols, dtype, cuda))
    # Rows that do not start on 16 bytes take the tiled path; the answer is the same.
    x = random_tensor((rows, FWD_SPLIT_N[1] + 8), dtype, cuda)[:, 1:FWD_SPLIT_N[1] + 1]
    _check_forward_of(norm, x, _params(norm, FWD_SPLIT_N[1], dtype, cuda))


@gpu_only
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("norm", NORMS)
def test_staged_backward(norm, dtype, monkeypatch, request):
    # Rows of x and dy staged in shared memory on Hopper: whole (BWD_STAGED) in a chunk of a power
    # of two of runs and in one of 49 runs in 64 (the copy fills the rest with zeros); split over
    # programs (BWD_SPLIT) in whole chunks and with a last chunk of one run or 33. Rows padded in
    # memory, a large mean, several rows a program, with and without parameters, float32
    # parameters of 16-bit inputs (fewer rows in flight: they take more shared memory), one
    # gradient of two. Then a NaN in a split row. Then one, two and three rows in flight in 4 warps,
    # whole and split, each program's ring going round several times.
    cuda = torch.device("cuda")
    rms = norm == "rms_norm"
    rows = 3 * runtime.sm_count(cuda) + 5
    hopper = _rows.can_stage_rows(cuda, 1)
    part = BWD_SPLIT[(rms, dtype.itemsize)][1]
    for cols in (16384, 49 * STAGED_VIEW, 65536, 161 * STAGED_VIEW):
        cfg = norm_config(rows, cols, "bwd", cuda, itemsize=dtype.itemsize, rms=rms)
        whole = cols <= BWD_STAGED[(rms, dtype.itemsize)][1]
        assert cfg.staged == hopper and (not hopper or cfg.split == (1 if whole else -(-cols // part)))
        # bfloat16 steps by 8 at 1000: most rows would be one value
        shift = 100 if dtype == torch.bfloat16 else 1000
        x = (shift + random_tensor((rows, cols + 64), torch.float32, cuda)).to(dtype)[:, :cols]
        dy = random_tensor((rows, cols + 64), dtype, cuda)[:, :cols]
        params = _params(norm, cols, dtype, cuda)
        _check_gradients_of(norm, x, params, dy)
        _check_gradients_of(norm, x, _params(norm, cols, dtype, cuda, weight=False, bias=False), dy)
        if dtype != torch.float32:  # the same parameters in float32: the same sums, gradients in float32
            ours = _backward_of(norm, x, params, dy)
            wide = _backward_of(norm, x, [p.float() for p in params], dy)
            assert torch.equal(ours[0], wide[0])
            assert all(w.dtype == torch.float32 and torch.equal(w.to(dtype), g) for w, g in zip(wide[1:], ours[1:], strict=True))
        if norm == "layer_norm":
            _, mean, rstd = layer_norm_fwd(x, *params)
            dx, dw, db = layer_norm_bwd(dy, x, *params, mean, rstd, grad_weight=False)
            dx_all, _, db_all = layer_norm_bwd(dy, x, *params, mean, rstd)
            # dbias alone is summed in other tiles (sum_partials_kernel's grid): the same up to the
            # rounding of sums over the rows, measured against their norm (they grow with the rows,
            # so an absolute limit says nothing: in float32 they differed by 1.5e-5, 8e-8 relative)
            assert dw is None and torch.equal(dx, dx_all)
            assert relative_error(db.float(), db_all.float()) <= 2 * torch.finfo(dtype).eps
    # A NaN in a split row spoils that row's sums, so all its dx, and no other row's; no program
    # waits for it forever.
    x, dy = random_tensor((rows, 65536), dtype, cuda), random_tensor((rows, 65536), dtype, cuda)
    dy[5, 7] = float("nan")
    dx = _backward_of(norm, x, _params(norm, 65536, dtype, cuda), dy)[0]
    assert dx[5].isnan().all() and not dx[torch.arange(rows, device=cuda) != 5].isnan().any()
    monkeypatch.setattr(norms_module, "BWD_STAGED", {key: (256, 16384, 4, 3) for key in norms_module.BWD_STAGED})
    norm_config.cache_clear()
    request.addfinalizer(norm_config.cache_clear)
    for cols, ring in ((4096, 3), (16384, 2 if dtype.itemsize == 2 else 1), (10 * STAGED_VIEW, 3)):
        cfg = norm_config(rows, cols, "bwd", cuda, itemsize=dtype.itemsize, rms=rms)
        assert cfg.staged == hopper and (not hopper or (cfg.num_stages, cfg.num_warps) == (ring, 4))
        _check_gradients(norm, (rows, cols), dtype, cuda)
    monkeypatch.setattr(norms_module, "BWD_STAGED", {key: (256, 512, 4, 3) for key in norms_module.BWD_STAGED})
    for ring in (2, 3):
        monkeypatch.setattr(norms_module, "BWD_SPLIT", {key: (16384, 1024, 4, ring) for key in norms_module.BWD_SPLIT})
        norm_config.cache_clear()
        for cols, split in ((4096, 4), (21 * STAGED_VIEW, 6)):
            cfg = norm_config(rows, cols, "bwd", cuda, itemsize=dtype.itemsize, rms=rms)
            assert cfg.staged == hopper and (not hopper or (cfg.split, cfg.num_stages, cfg.programs % split) == (split, ring, 0))
            _check_gradients(norm, (rows, cols), dtype, cuda)
    # Rows that do not start on 16 bytes take the other paths; the answer is the same.
    x = random_tensor((rows, 4096 + 8), dtype, cuda)[:, 1:4097]
    _check_gradients_of(norm, x, _params(norm, 4096, dtype, cuda), random_tensor((rows, 4096), dtype, cuda))


# -- configuration ---------------------------------------------------------------------------------
def test_staged_backward_config(monkeypatch, request):
    assert not norm_config(4096, 16384, "bwd", "cpu", itemsize=2).staged  # the CPU: no shared memory
    # A stand-in for a Hopper GPU: 227 KB of shared memory a program.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes + 1024 <= 227 * 1024)
    norm_config.cache_clear()
    request.addfinalizer(norm_config.cache_clear)
    for (rms, itemsize), (fewest, most, warps, ring) in BWD_STAGED.items():
        for n in (fewest + -fewest % STAGED_VIEW, most):
            cfg = norm_config(4096, n, "bwd", "cpu", itemsize=itemsize, rms=rms)
            # a chunk of a power of two of runs; as many rows in flight as fit with float32 weights
            fits = max(r for r in range(1, ring + 1) if (2 * r * itemsize + 4) * cfg.block_n + 1024 <= 227 * 1024)
            assert cfg.staged and (cfg.block_n, cfg.num_warps, cfg.num_stages, cfg.programs, cfg.split) == (
                1 << (n - 1).bit_length(), warps, fits, 4, 1)  # a program per SM
        # Longer rows split into chunks of BWD_SPLIT's columns, a program each, as many programs as
        # SMs rounded down to a whole number of rows; at least two rows in flight.
        longest, part, split_warps, split_ring = BWD_SPLIT[(rms, itemsize)]
        for n in (most + STAGED_VIEW, longest):
            for weight_itemsize in (0, itemsize, 4):
                cfg = norm_config(4096, n, "bwd", "cpu", itemsize=itemsize, rms=rms, weight_itemsize=weight_itemsize)
                fits = max(r for r in range(split_ring + 1) if (2 * r * itemsize + weight_itemsize) * part + 1024 <= 227 * 1024)
                split = -(-n // part)
                assert cfg.staged == (fits >= 2 and split <= 4)  # no more programs to a row than SMs
                if cfg.staged:
                    assert (cfg.block_n, cfg.num_warps, cfg.num_stages, cfg.split, cfg.programs) == (
                        part, split_warps, fits, split, 4 // split * split)
        # Rows too short or too long, not a multiple of the runs, fewer rows than SMs, a knob, the
        # forward, or allow_staged=False keep their paths.
        for args, kwargs in [((4096, fewest - STAGED_VIEW), {}), ((4096, longest + STAGED_VIEW), {}), ((4096, most - 8), {}),
                             ((3, most), {}), ((4096, most), {"num_warps": 8}), ((4096, most), {"allow_staged": False})]:
            assert not norm_config(*args, "bwd", "cpu", itemsize=itemsize, rms=rms, **kwargs).staged
        assert not norm_config(4096, most, "fwd", "cpu", itemsize=itemsize, rms=False).staged
    assert norm_config(4096, 16384, "bwd", "cpu", itemsize=2).num_stages == 2
    assert norm_config(4096, 16384, "bwd", "cpu", itemsize=4, rms=True).num_stages == 1  # a whole float32 row
    halves = norm_config(4096, 16384, "bwd", "cpu", itemsize=4)
    assert (halves.num_stages, halves.split) == (3, 2)  # ... or two halves of one
    assert norm_config(4096, 8192, "bwd", "cpu", itemsize=4).num_stages == 3
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: False)  # nothing fits
    norm_config.cache_clear()
    assert not norm_config(4096, 16384, "bwd", "cpu", itemsize=2).staged


def test_split_forward_config(monkeypatch, request):
    n = FWD_SPLIT_N[1]
    assert not norm_config(4096, n, "fwd", "cpu", itemsize=2).staged  # the CPU: no shared memory
    # A stand-in for a Hopper GPU: shared memory for seven chunks of 32 KB.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes <= 7 * 32768)
    norm_config.cache_clear()  # configurations are cached: drop those made without the stand-in
    request.addfinalizer(norm_config.cache_clear)  # ... and those made with it
    for rms in (False, True):
        for itemsize in (2, 4):
            chunk, warps = FWD_SPLIT[itemsize]
            ring = min(FWD_SPLIT_RING, 7 * 32768 // (chunk * itemsize))
            split = -(-n // chunk)
            cfg = norm_config(4096, n, "fwd", "cpu", itemsize=itemsize, rms=rms)
            assert cfg.staged and (cfg.block_n, cfg.num_warps, cfg.num_stages, cfg.split, cfg.programs) == (
                chunk, warps, ring, split, 4 // split * split)  # a program per SM, whole groups
    # Rows of FWD_SPLIT_N[0] columns or fewer, too long or not a multiple of the runs, fewer rows
    # than SMs, any knob, and allow_staged=False keep their paths.
    for args, kwargs in [((4096, FWD_SPLIT_N[0]), {}), ((4096, n + STAGED_VIEW), {}), ((4096, n - 8), {}),
                         ((3, n), {}), ((4096, n), dict(num_warps=8)), ((4096, n), dict(allow_staged=False))]:
        assert not norm_config(*args, "fwd", "cpu", **({"itemsize": 2} | kwargs)).staged


@pytest.fixture
def h200_tables(monkeypatch, request):
    """norm_config with the tables alone, on whatever GPU the tests run (no FWD_BY_GPU entry)."""
    monkeypatch.setattr(norms_module, "FWD_BY_GPU", {})
    norm_config.cache_clear()  # configurations are cached: drop those made with an entry
    request.addfinalizer(norm_config.cache_clear)


def test_forward_config_by_gpu(monkeypatch, request, device):
    # On the GPU it names, FWD_BY_GPU streams the row lengths it lists through its tiles and warps;
    # other lengths, the other norm, the backward and other GPUs keep the tables' choices.
    name, entries = next(iter(FWD_BY_GPU.items()))
    listed = {(n, "fwd", itemsize, rms): tile for (itemsize, rms), lengths in entries.items() for n, tile in lengths.items()}

    def configs(gpu: str) -> dict:
        monkeypatch.setattr(runtime, "device_name", lambda device=None: gpu)
        norm_config.cache_clear()  # configurations are cached: drop those made for the other name
        return {(n, d, itemsize, rms): norm_config(4096, n, d, device, itemsize=itemsize, rms=rms)
                for itemsize in (2, 4) for rms in (False, True) for n in (4096, 5120, 8192, 12288, 16384) for d in ("fwd", "bwd")}

    request.addfinalizer(norm_config.cache_clear)
    tables, named = configs("another GPU"), configs(name)
    assert listed and set(listed) <= set(named)
    for key, cfg in named.items():
        if key in listed:
            block_n, warps = listed[key]
            assert cfg.tiled and (cfg.block_n, cfg.rows, cfg.num_warps, cfg.programs) == (block_n, 1, warps, 4096)
            assert cfg != tables[key]
        else:
            assert cfg == tables[key], key
    n, _, itemsize, rms = next(iter(listed))
    assert not norm_config(4096, n, "fwd", device, itemsize=itemsize, rms=rms, block_n=n).tiled  # a knob wins


def test_default_configs(device, h200_tables):
    # The forward as RMS norm: 16-bit layer norm streams rows of 16384 columns (test_streamed_forward_configs).
    for n, direction, table in [(n, "fwd", FWD_CONFIGS) for n in (1, 256, 4096, 16384)] + [(n, "bwd", BWD_CONFIGS) for n in (1, 300, 8192)]:
        cfg = norm_config(4096, n, direction, device, rms=direction == "fwd")
        assert not cfg.tiled and cfg.block_n >= n and cfg.block_n <= table[-1][0]
        assert 1 <= cfg.programs <= -(-4096 // cfg.rows)
    for n, direction in [(32768, "fwd"), (65536, "fwd"), (65536, "bwd")]:  # (Hopper stages the backward's)
        cfg = norm_config(4096, n, direction, device, allow_staged=False)
        assert cfg.tiled and cfg.block_n < n and cfg.rows == (FWD_TILED if direction == "fwd" else BWD_TILED)[1]
    assert norm_config(3, 100, "bwd", device).programs <= 3  # never more programs than rows
    # The backward holds rows of up to BWD_WIDE_N columns for the BWD_WIDE cases, one to a
    # program in the table's warps and stages, and reads each tile twice; float32 layer norm streams
    # them. (On Hopper, rows of 16384 are staged instead: test_staged_backward_config.)
    for n in (BWD_WIDE_N, 9000):
        for rms, itemsize in ((True, 2), (True, 4), (False, 2)):
            cfg = norm_config(4096, n, "bwd", device, itemsize=itemsize, rms=rms, allow_staged=False)
            assert not cfg.tiled and (cfg.block_n, cfg.rows) == (BWD_WIDE_N, 1) and cfg.reload
            assert (cfg.num_warps, cfg.num_stages) == BWD_WIDE[(rms, itemsize)]
        cfg = norm_config(4096, n, "bwd", device, itemsize=4, allow_staged=False)
        assert cfg.tiled and not cfg.reload
    assert norm_config(4096, 2 * BWD_WIDE_N, "bwd", device, rms=True, allow_staged=False).tiled
    assert norm_config(97, 300, "bwd", device, itemsize=4, block_n=BWD_WIDE_N).reload  # forced wide: read twice too
    for n, rms, direction in [(8192, True, "bwd"), (8192, False, "bwd"), (16384, True, "fwd"), (32768, True, "bwd")]:
        assert not norm_config(4096, n, direction, device, rms=rms).reload
    # The forward re-reads float32 rows of the FWD_RELOAD blocks only (5120 columns are streamed).
    for n in (3000, 8192, 16384, 32768):
        assert norm_config(4096, n, "fwd", device, itemsize=4).reload
        assert not norm_config(4096, n, "fwd", device, itemsize=2).reload
    for n in (1024, 5120, 32769, 65536):
        assert not norm_config(4096, n, "fwd", device, itemsize=4).reload
    # ... and 16-bit RMS norm rows too, with a warp per FWD_RELOAD_COLUMNS_PER_WARP columns.
    for n, warps in ((3000, 4), (4096, 8), (7000, 8), (8192, 16)):
        cfg = norm_config(4096, n, "fwd", device, itemsize=2, rms=True)
        assert cfg.reload and cfg.num_warps == warps
    assert norm_config(4096, 8192, "bwd", device, rms=True) == norm_config(4096, 8192, "bwd", device)
    # float32 rows have forward entries of their own; 16-bit rows of the same length take the table's
    # (rows too long for it are streamed).
    for block_n, (rows, warps) in FWD_FLOAT32_CONFIGS.items():
        f32, f16 = (norm_config(4096, block_n - 1, "fwd", device, itemsize=size) for size in (4, 2))
        assert (f32.block_n, f32.rows, f32.num_warps) == (block_n, rows, warps)
        if block_n <= FWD_CONFIGS[-1][0]:
            assert (f16.rows, f16.num_warps) == next((r, w) for b, r, w in FWD_CONFIGS if b >= block_n)
        else:
            assert f16.tiled
    # ... and backward entries, tiles of the same bytes as the 16-bit ones; other lengths share the table.
    for block_n, (rows, warps) in BWD_FLOAT32_CONFIGS.items():
        f32, f16 = (norm_config(4096, block_n - 1, "bwd", device, itemsize=size) for size in (4, 2))
        assert (f32.block_n, f32.rows, f32.num_warps) == (block_n, rows, warps)
        assert f16.block_n == block_n and f16.rows * 2 == f32.rows * 4
    for n in (256, 8192):
        f32, f16 = (norm_config(4096, n, "bwd", device, itemsize=size, allow_staged=False) for size in (4, 2))
        assert (f32.rows, f32.num_warps) == (f16.rows, f16.num_warps)


def test_backward_stages_fit_shared_memory(device):
    # Each stage past the first buffers a [rows, block_n] tile of x and of dy in shared memory.
    for itemsize, rows, stages in [(2, 1, BWD_NUM_STAGES), (4, 1, BWD_NUM_STAGES), (4, 2, 2), (4, 8, 1)]:
        cfg = norm_config(4096, 8192, "bwd", device, itemsize=itemsize, rows=rows)
        assert cfg.num_stages == stages
        assert (cfg.num_stages - 1) * 2 * rows * 8192 * itemsize <= BWD_SHARED_BYTES
    assert norm_config(4096, 8192, "bwd", device, itemsize=4, rows=8, num_stages=3).num_stages == 3  # the knob wins
    assert norm_config(4096, 8192, "fwd", device).num_stages == 1


def test_streamed_forward_configs(device, h200_tables):
    # Rows that would leave much of their register block masked stream through tiles (FWD_STREAMED),
    # their warps from the row's bytes; powers of two, short rows and explicit blocks stay held.
    def cfg(n, itemsize, rms, **knobs):
        return norm_config(4096, n, "fwd", device, itemsize=itemsize, rms=rms, **knobs)

    for (itemsize, rms), (max_fill, max_n, block_n) in FWD_STREAMED.items():
        streamed = [n for n in (3000, 4096, 5120, 6144, 8192, 10000, 12288, 15000, 16384) if cfg(n, itemsize, rms).tiled]
        expected = [n for n in (5120, 6144, 8192, 10000, 12288, 15000, 16384)
                    if n <= max_n and n <= max_fill * (1 << (n - 1).bit_length())
                    or n in FWD_STREAMED_FULL.get((itemsize, rms), ())]
        assert streamed == expected, (itemsize, rms)
        for n in streamed:
            c = cfg(n, itemsize, rms)
            assert c.block_n == block_n and 8 <= c.num_warps <= 16 and c.programs == 4096
            assert not cfg(n, itemsize, rms, block_n=16384).tiled  # an explicit block wins
    # 16-bit layer norm streams its rows of 16384 columns (FWD_STREAMED_FULL) in 16 warps, not
    # the 8192 or 15000 columns that fill their blocks as much or nearly.
    assert cfg(16384, 2, False).tiled and cfg(16384, 2, False).num_warps == 16
    assert not cfg(8192, 2, False).tiled and not cfg(15000, 2, False).tiled
    assert cfg(10000, 2, False).num_warps == 8 and cfg(10000, 4, False).num_warps == 16
    assert cfg(5120, 2, True).num_warps == 8 and cfg(5120, 4, True).num_warps == 16
    # Float32 rows of 24577-32768 columns are held (and read again); shorter and longer ones are not.
    assert cfg(32768, 4, False).block_n == 32768 and cfg(32768, 4, True).reload
    assert cfg(24576, 4, True).tiled and cfg(32769, 4, False).tiled and cfg(32768, 2, False).tiled


def test_forward_grid(device):
    # One program per tile by default, for rows held in registers and for streamed rows alike;
    # `programs` asks for a persistent grid. Rows split over programs (FWD_SPLIT, Hopper only: float32
    # rows of 65536 here) take a persistent grid of whole groups, one program per SM at most.
    for n, itemsize in [(256, 2), (5000, 2), (16384, 4), (16385, 2), (65536, 4), (300_000, 4)]:
        cfg = norm_config(4096, n, "fwd", device, itemsize=itemsize)
        if cfg.staged:
            assert (n, cfg.split) == (65536, -(-n // cfg.block_n)) and cfg.programs % cfg.split == 0
            assert runtime.sm_count(device) - cfg.split < cfg.programs <= runtime.sm_count(device)
        else:
            assert cfg.programs == -(-4096 // cfg.rows)
    assert norm_config(4096, 65536, "fwd", device).tiled
    assert norm_config(4096, 256, "fwd", device, itemsize=2, programs=3).programs == 3  # the knob wins
    assert norm_config(4096, 65536, "fwd", device, programs=3).programs == 3


# -- bad input -------------------------------------------------------------------------------------
def _x(device, shape=(4, 16), dtype=torch.float32):
    return random_tensor(shape, dtype, device)


@pytest.mark.parametrize("norm", NORMS)
def test_rejects_non_tensors(norm, device):
    x = _x(device)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        _ours(norm)([[1.0] * 16] * 4, *_params(norm, 16, torch.float32, device))
    with pytest.raises(TypeError, match="weight must be a torch.Tensor"):
        _ours(norm)(x, [1.0] * 16, *_params(norm, 16, torch.float32, device)[1:])


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.bool], ids=str)
@pytest.mark.parametrize("norm", NORMS)
def test_rejects_unsupported_dtype(norm, dtype, device):
    x = torch.zeros(4, 16, dtype=dtype, device=device)
    with pytest.raises(TypeError, match="x has dtype .*; supported: float32, float16, bfloat16"):
        _ours(norm)(x, *_params(norm, 16, torch.float32, device))


@pytest.mark.parametrize("norm", NORMS)
def test_rejects_parameter_dtype(norm, device):
    # Parameters in x's dtype or float32 only.
    x = _x(device, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="weight has dtype float16; supported: bfloat16, float32"):
        _ours(norm)(x, *_params(norm, 16, torch.float16, device))
    with pytest.raises(TypeError, match="weight has dtype float64"):
        _ours(norm)(_x(device), *_params(norm, 16, torch.float64, device))


def test_rejects_weight_and_bias_of_different_dtypes(device):
    x = _x(device, dtype=torch.float16)
    with pytest.raises(ValueError, match="dtypes differ: weight: torch.float16, bias: torch.float32"):
        layer_norm(x, torch.ones(16, dtype=torch.float16, device=device), torch.zeros(16, device=device))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("bad", [(15,), (17,), (1, 16), ()], ids=str)
def test_rejects_parameter_shape(norm, bad, device):
    params = [torch.ones(bad, device=device)] + list(_params(norm, 16, torch.float32, device)[1:])
    with pytest.raises(ValueError, match=re.escape("weight must have shape (16,), the last dimension of x")):
        _ours(norm)(_x(device), *params)


def test_rejects_bias_shape(device):
    with pytest.raises(ValueError, match=re.escape("bias must have shape (16,)")):
        layer_norm(_x(device), torch.ones(16, device=device), torch.zeros(8, device=device))


@pytest.mark.parametrize("norm", NORMS)
def test_rejects_0d_input(norm, device):
    with pytest.raises(ValueError, match="at least one dimension"):
        _ours(norm)(torch.tensor(1.0, device=device), None, *([None] if norm == "layer_norm" else []))


@pytest.mark.parametrize("norm", NORMS)
def test_rejects_mixed_devices(norm, device):
    with pytest.raises(ValueError, match="same device"):
        _ours(norm)(_x(device), torch.ones(16, device="meta"), *([None] if norm == "layer_norm" else []))


@pytest.mark.parametrize("norm", NORMS)
def test_cpu_tensors_outside_interpreter_mode_get_a_clear_error(norm, monkeypatch):
    monkeypatch.setattr(runtime, "MODE", "gpu")
    with pytest.raises(ValueError, match=r"got CPU tensors.*\.cuda\(\)"):
        _ours(norm)(_x("cpu"), *_params(norm, 16, torch.float32, "cpu"))


@pytest.mark.parametrize("eps", [-1e-5, float("nan"), float("inf"), "1e-5", None, True])
@pytest.mark.parametrize("norm", NORMS)
def test_rejects_bad_eps(norm, eps, device):
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        _ours(norm)(_x(device), *_params(norm, 16, torch.float32, device), eps)


@pytest.mark.parametrize(
    "knobs, message",
    [
        ({"block_n": 100}, "block_n must be a positive power of two"),
        ({"rows": 3}, "rows must be a positive power of two"),
        ({"num_warps": 64}, "num_warps must be at most 32"),
        ({"num_warps": 0}, "num_warps must be a positive power of two"),
        ({"programs": 0}, "programs must be a positive integer"),
        ({"num_stages": 0}, "num_stages must be a positive integer"),
    ],
    ids=str,
)
def test_rejects_bad_knobs(knobs, message, device):
    x = _x(device)
    w, b = _params("layer_norm", 16, torch.float32, device)
    with pytest.raises(ValueError, match=message):
        layer_norm_fwd(x, w, b, **knobs)
    _, mean, rstd = layer_norm_fwd(x, w, b)
    with pytest.raises(ValueError, match=message):
        layer_norm_bwd(x, x, w, b, mean, rstd, **knobs)


def test_rejects_bad_out(device):
    x = _x(device)
    w, b = _params("layer_norm", 16, torch.float32, device)
    with pytest.raises(ValueError, match="shapes differ"):
        layer_norm_fwd(x, w, b, out=torch.empty(4, 15, device=device))
    with pytest.raises(ValueError, match="dtypes differ"):
        rms_norm_fwd(x, w, out=torch.empty(4, 16, dtype=torch.float16, device=device))
    with pytest.raises(ValueError, match="out must be contiguous"):
        layer_norm_fwd(x, w, b, out=torch.empty(16, 4, device=device).t())


def test_backward_rejects_bad_arguments(device):
    x = _x(device)
    w, b = _params("layer_norm", 16, torch.float32, device)
    _, mean, rstd = layer_norm_fwd(x, w, b)
    with pytest.raises(ValueError, match="shapes differ"):
        layer_norm_bwd(x[:3], x, w, b, mean, rstd)
    with pytest.raises(ValueError, match="dtypes differ"):
        layer_norm_bwd(x.half(), x, w, b, mean, rstd)
    with pytest.raises(ValueError, match=re.escape("mean must be a float32 vector of one value per row, shape (4,)")):
        layer_norm_bwd(x, x, w, b, mean[:3], rstd)
    with pytest.raises(TypeError, match="rstd has dtype float64"):
        rms_norm_bwd(x, x, w, rstd.double())
    with pytest.raises(ValueError, match="dx must be contiguous"):
        rms_norm_bwd(x, x, w, rstd, dx=torch.empty(16, 4, device=device).t())


# -- counts --------------------------------------------------------------------------------------
def test_bytes_counts():
    # Forward: x read, y written, weight and bias read. Backward: x, dy read, dx written, weight
    # read, dweight and dbias written.
    assert layer_norm_bytes(1000, 100, torch.float16) == 2 * 1000 * 100 * 2 + 2 * 100 * 2
    assert layer_norm_bytes(1000, 100, torch.float16, "bwd") == 3 * 1000 * 100 * 2 + 3 * 100 * 2
    assert layer_norm_bytes(1000, 100, torch.bfloat16, "bwd", weight_dtype=torch.float32) == 3 * 1000 * 100 * 2 + 3 * 100 * 4
    assert rms_norm_bytes(1000, 100, torch.float32) == 2 * 1000 * 100 * 4 + 100 * 4
    assert rms_norm_bytes(1000, 100, torch.float32, "bwd") == 3 * 1000 * 100 * 4 + 2 * 100 * 4
    with pytest.raises(ValueError, match="direction"):
        layer_norm_bytes(1, 1, torch.float32, "fwd+bwd")


def test_bench_suite_specs():
    # The suite can be listed without a GPU; its names follow the records' rules.
    from tritonperf.bench.suites import norms as suite

    record = SCHEMA["properties"]["records"]["items"]["properties"]
    specs = suite.specs()
    assert {(s.kernel, s.direction) for s in specs} == {(k, d) for k in NORMS for d in ("fwd", "bwd")}
    for spec in specs:
        assert spec.metric == "GBps" and spec.x == "N"
        assert all(set(shape) == {"M", "N"} for shape in [*spec.shapes, *spec.quick_shapes])
        assert {"tritonperf", "torch", "torch.compile"} <= set(spec.variants)
        assert all(re.fullmatch(record["variant"]["pattern"], v) for v in spec.variants)
        assert spec.nbytes({"M": 4096, "N": 1024}, torch.float16) > 3 * 4096 * 1024 if spec.direction == "bwd" else True
    steps = {v for s in specs if s.kernel == "layer_norm" for v in s.variants if v.startswith("step-")}
    assert steps == {"step-1-row-4-warps", "step-2-row-scaled-warps", "step-1-atomic-sums"}


@gpu_only
def test_bench_variants_run_and_agree():
    # Every variant of the suite runs on its own arguments, and the backward variants agree with
    # each other; torch's backward is also timed once, which replays it inside a CUDA graph.
    from tritonperf.bench.suites import norms as suite
    from tritonperf.bench.timing import time_ms

    shape = {"M": 256, "N": 1024}
    for spec in suite.specs():
        args = spec.make_args(shape, torch.float16)
        outs = {name: fn(*args) for name, fn in spec.variants.items()}
        if spec.direction == "bwd":
            expected = outs["torch"]
            for name, grads in outs.items():
                for g, e in zip([g for g in grads if g is not None], expected, strict=True):
                    assert relative_error(g, e) < 2e-3, (spec.kernel, name)
            nbytes = spec.nbytes(shape, torch.float16)
            assert time_ms(spec.variants["torch"], lambda spec=spec: spec.make_args(shape, torch.float16), nbytes) > 0
