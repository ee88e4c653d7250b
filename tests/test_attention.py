"""attention: forward, log-sum-exp and gradients against float64, causal masks at odd lengths,
grouped-query heads, strided inputs, poisoned outputs, the lesson's steps, the benchmark suite,
and errors on bad input.

Results are compared with :func:`attention_reference` in float64 from the same inputs, by two
rules (DESIGN.md §3): the tolerance table, and "at most 2 × the error of torch in the same dtype"
(torch's ``scaled_dot_product_attention`` run on the same float16/bfloat16 inputs). Forward
outputs must meet both; gradients, whose largest elements grow with the sequence, one of them.

In interpreter mode the kernels run with small blocks (32 x 16 forward), so sequences of
17 … 100 span several blocks, ragged last blocks and a causal diagonal band two blocks wide.
"""

from __future__ import annotations

import collections
import importlib
import itertools
import math
import re

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from conftest import ON_GPU, gpu_only

from tritonperf import asm, runtime
from tritonperf.bench.records import SCHEMA
from tritonperf.bench.suites import attention as suite
from tritonperf.kernels.attention import (
    BWD_DKDV_CONFIGS,
    BWD_DKDV_TMA_CONFIGS,
    BWD_DQ_CONFIGS,
    BWD_DQ_TMA_CONFIGS,
    BWD_WS_CONFIGS,
    FP8,
    FP8_MIN_HEAD_DIM,
    FWD_CONFIGS,
    FWD_TMA_CONFIGS,
    FWD_WS_CONFIGS,
    HEAD_DIMS,
    INTERPRETER_CONFIGS,
    _causal_order,
    attention,
    attention_bwd,
    attention_bytes,
    attention_config,
    attention_flops,
    attention_fwd,
    attention_lse_reference,
    attention_reference,
)
from tritonperf.ladders.attention import STEPS, attention_warp_specialized, naive_scores_bytes
from tritonperf.testing import TOLERANCES, assert_close, max_abs_error, poisoned, random_tensor, relative_error

# The module, not the function of the same name.
attn = importlib.import_module("tritonperf.kernels.attention")

# The interpreter computes bfloat16 arithmetic wrongly (DESIGN.md §3): bf16 is checked on the GPU only.
DTYPES = [torch.float16] + ([torch.bfloat16] if ON_GPU else [])

# (B, H, H_kv, N, D).
SHAPES = [
    (1, 1, 1, 1, 64),  # one position: every softmax is exactly 1, and the gradients of q and k are 0
    (1, 2, 2, 17, 64),  # one query block, most of it masked; two key blocks, the second ragged
    (2, 1, 1, 63, 128),  # one row short of two query blocks
    (1, 2, 2, 100, 64),  # four query blocks, the last ragged; seven key blocks
] + (
    [
        (2, 4, 4, 1000, 64),
        (1, 8, 8, 1823, 128),  # odd and large: ragged blocks at the GPU's block sizes
        (4, 16, 16, 1024, 128),
    ]
    if ON_GPU
    else []
)


def qkv(B, H, H_kv, N, D, dtype, device):
    return random_tensor((B, H, N, D), dtype, device), *(random_tensor((B, H_kv, N, D), dtype, device) for _ in range(2))


def packed_qkv(device):
    """q, k, v viewed in place in a packed (B, N, 3, H, D) projection: an odd length, 4 query heads on 2 key/value heads."""
    packed = random_tensor((2, 77, 3, 4, 64), torch.float16, device)
    q, k, v = (packed[:, :, i].transpose(1, 2) for i in range(3))
    return q, k[:, :2], v[:, :2]


def reference_grads(q, k, v, do, causal):
    """dq, dk, dv of the float64 reference for the output gradient do."""
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    return torch.autograd.grad(attention_reference(*leaves, causal), leaves, do.double())


def torch_sdpa(q, k, v, causal, sm_scale=None):
    """torch's own attention in the inputs' dtype: the yardstick of the "2 × torch's error" rule."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale, enable_gqa=q.shape[1] != k.shape[1])


def assert_grad_close(out, ref, torch_out):
    """Within the tolerance table, or at most 2 × torch's own error in the same dtype (as in test_norms).

    Gradients are sums over the sequence: their largest elements grow with N, and their rounding
    to float16 alone can pass the table's absolute limit; DESIGN.md §3 then allows twice torch's error.
    """
    tol = TOLERANCES[out.dtype]
    assert out.shape == ref.shape and out.dtype == torch_out.dtype
    assert not torch.isnan(out).any(), "NaN in a gradient"
    rel, mx = relative_error(out, ref), max_abs_error(out, ref)
    if not ref.any():
        rel = 0.0  # an all-zero reference (dq and dk at N = 1) has no relative scale: the absolute limit decides
    rel_limit = max(tol.rel, 2 * relative_error(torch_out, ref))
    abs_limit = max(tol.abs, 2 * max_abs_error(torch_out, ref))
    assert rel <= rel_limit and mx <= abs_limit, (
        f"relative error {rel:.3e} (limit {rel_limit:.1e}), max abs error {mx:.3e} (limit {abs_limit:.1e})"
    )


def check_autograd(q, k, v, causal, sm_scale=None, do=None):
    """Forward and gradients through autograd against float64 and against torch in the same dtype."""
    do = random_tensor(q.shape, q.dtype, q.device) if do is None else do
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    o = attention(*leaves, causal, sm_scale)
    o.backward(do)
    ref_leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref = attention_reference(*ref_leaves, causal, sm_scale)
    ref_grads = torch.autograd.grad(ref, ref_leaves, do.double())
    torch_leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    torch_o = torch_sdpa(*torch_leaves, causal, sm_scale)
    torch_grads = torch.autograd.grad(torch_o, torch_leaves, do)

    # The output: within the table, and at most twice torch's relative error.
    assert_close(o, ref, q.dtype)
    assert relative_error(o, ref) <= 2 * relative_error(torch_o, ref) + 1e-7
    for ours, r, t in zip((x.grad for x in leaves), ref_grads, torch_grads, strict=True):
        assert_grad_close(ours, r, t)
    return o


# -- forward and backward --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward_and_gradients_match_reference(shape, causal, dtype, device):
    check_autograd(*qkv(*shape, dtype, device), causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [1, 17, 63, 100])
def test_launchers_overwrite_poisoned_outputs(n, causal, device):
    # Every element of o, dq, dk and dv is written, and the log-sum-exp is that of the scaled scores.
    dtype = torch.float16
    q, k, v = qkv(1, 2, 1, n, 32, dtype, device)
    out = poisoned(q.shape, dtype, device)
    o, lse = attention_fwd(q, k, v, causal, out=out)
    assert o is out and lse.shape == (1, 2, n) and lse.dtype == torch.float32
    assert_close(o, attention_reference(q, k, v, causal), dtype)
    assert_close(lse, attention_lse_reference(q, k, causal), torch.float32)
    do = random_tensor(q.shape, dtype, device)
    grads = [poisoned(t.shape, dtype, device) for t in (q, k, v)]
    dq, dk, dv = attention_bwd(do, q, k, v, o, lse, causal, dq=grads[0], dk=grads[1], dv=grads[2])
    assert dq is grads[0] and dk is grads[1] and dv is grads[2]
    for ours, ref in zip((dq, dk, dv), reference_grads(q, k, v, do, causal), strict=True):
        assert not torch.isnan(ours).any()
        assert_close(ours, ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("heads", [(4, 2), (3, 1)], ids=["4-over-2", "3-over-1"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_grouped_query_heads(causal, heads, dtype, device):
    # dk and dv sum the contributions of every query head of a group, inside one program.
    h, h_kv = heads
    check_autograd(*qkv(2, h, h_kv, 40, 32, dtype, device), causal)


@pytest.mark.parametrize("head_dim", [d for d in HEAD_DIMS if d not in (64, 128)])
def test_other_head_dims(head_dim, device):
    check_autograd(*qkv(1, 1, 1, 37, head_dim, torch.float16, device), True)


@pytest.mark.parametrize("sm_scale", [0.05, 1.0])
def test_sm_scale(sm_scale, device):
    q, k, v = qkv(1, 2, 2, 33, 64, torch.float16, device)
    check_autograd(q, k, v, False, sm_scale)
    # The default is 1 / sqrt(D).
    assert torch.equal(attention(q, k, v), attention(q, k, v, sm_scale=1 / math.sqrt(64)))


def test_strided_inputs_and_broadcast_gradient(device):
    # q, k and v sliced out of one packed (B, N, 3, H, D) projection and transposed to (B, H, N, D):
    # read in place through their strides. .sum() sends back a gradient of stride 0 everywhere.
    packed = random_tensor((2, 45, 3, 2, 32), torch.float16, device)
    q, k, v = (packed[:, :, i].transpose(1, 2) for i in range(3))
    assert not q.is_contiguous()
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    o = attention(*leaves, True)
    o.sum().backward()
    ref_leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref = attention_reference(*ref_leaves, True)
    ref.sum().backward()
    assert_close(o, ref, torch.float16)
    for ours, r in zip(leaves, ref_leaves, strict=True):
        assert ours.grad.is_contiguous()
        assert_close(ours.grad, r.grad, torch.float16)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("method", ["pointers", "tma"])
def test_forward_methods(device, method, causal):
    # Both ways of moving blocks: an odd length (TMA fills the rows past N with zeros and clips the
    # store), grouped-query heads, and q, k, v read in place from a packed (B, N, 3, H, D) projection.
    q, k, v = packed_qkv(device)
    out = poisoned(q.shape, torch.float16, device)
    o, lse = attention_fwd(q, k, v, causal, out=out, method=method)
    assert o is out
    assert_close(o, attention_reference(q, k, v, causal), torch.float16)
    assert_close(lse, attention_lse_reference(q, k, causal), torch.float32)


@pytest.mark.parametrize("method", ["pointers", "tma"])
def test_masking_every_block_gives_the_same_result(device, method):
    # skip_masked_blocks=False visits the causal blocks right of the diagonal and masks them whole:
    # rows must still see exactly keys 0 … i, at an odd length and with grouped heads.
    q, k, v = qkv(1, 4, 2, 77, 64, torch.float16, device)
    o, lse = attention_fwd(q, k, v, True, method=method, skip_masked_blocks=False)
    assert_close(o, attention_reference(q, k, v, True), torch.float16)
    assert_close(lse, attention_lse_reference(q, k, True), torch.float32)
    with pytest.raises(TypeError, match="skip_masked_blocks must be a bool, got int"):
        attention_fwd(q, k, v, True, skip_masked_blocks=0)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("method", ["pointers", "tma", "warp_specialized"])
def test_backward_methods(device, method, causal):
    # As test_forward_methods, for the gradients: q, k, v and dO read in place from packed projections
    # at an odd length with grouped heads, every element of the poisoned dq, dk and dv written.
    q, k, v = packed_qkv(device)
    do = random_tensor((2, 77, 2, 4, 64), torch.float16, device)[:, :, 1].transpose(1, 2)
    if method == "warp_specialized" and (reason := attn._ws_bwd_obstacle(causal, q=q, k=k, v=v, do=do, dk=k, dv=v)):
        pytest.skip(f"the warp-specialized backward cannot run here: {reason}")
    o, lse = attention_fwd(q, k, v, causal)
    grads = [poisoned(t.shape, torch.float16, device) for t in (q, k, v)]
    dq, dk, dv = attention_bwd(do, q, k, v, o, lse, causal, dq=grads[0], dk=grads[1], dv=grads[2], method=method)
    assert dq is grads[0] and dk is grads[1] and dv is grads[2]
    for ours, ref in zip((dq, dk, dv), reference_grads(q, k, v, do, causal), strict=True):
        assert_close(ours, ref, torch.float16)


def test_backward_method_choice(device):
    q, k, v = qkv(1, 2, 2, 40, 64, torch.float16, device)
    o, lse = attention_fwd(q, k, v)
    do, dq, dk, dv = (torch.empty_like(t) for t in (q, q, k, v))
    # "auto": the warp-specialized kernel where it can run (on Hopper), unless torch asks for
    # deterministic algorithms; else TMA where both gradient kernels have a measured entry and every
    # tensor allows it.
    ws_reason = attn._ws_bwd_obstacle(False, q=q, k=k, v=v, do=do, dk=dk, dv=dv)
    assert attn._bwd_method("auto", q, k, v, do, dq, dk, dv, False) == ("tma" if ws_reason else "warp_specialized")
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        assert attn._bwd_method("auto", q, k, v, do, dq, dk, dv, False) == "tma"
    finally:
        torch.use_deterministic_algorithms(deterministic)
    if ws_reason:
        with pytest.raises(ValueError, match="method='warp_specialized' cannot run: " + re.escape(ws_reason)):
            attention_bwd(do, q, k, v, o, lse, method="warp_specialized")
    narrow = [t[..., :32].contiguous() for t in (q, k, v, do, dq, dk, dv)]
    assert attn._bwd_method("auto", *narrow, True) == "pointers"
    # A gradient broadcast from a scalar (stride 0) has no descriptor: pointers, or an error that says why.
    broadcast = torch.ones((), dtype=q.dtype, device=device).expand(q.shape)
    assert attn._bwd_method("auto", q, k, v, broadcast, dq, dk, dv, False) == "pointers"
    with pytest.raises(ValueError, match=r"method='tma' cannot run: do's head dim is not contiguous \(strides \(0, 0, 0, 0\)\)"):
        attention_bwd(broadcast, q, k, v, o, lse, method="tma")
    with pytest.raises(ValueError, match="method must be one of 'auto', 'pointers', 'tma', 'warp_specialized'; got 'tiles'"):
        attention_bwd(broadcast, q, k, v, o, lse, method="tiles")


def test_forward_method_choice(device):
    q, k, v = qkv(1, 2, 2, 40, 64, torch.float16, device)
    o = torch.empty_like(q)
    # "auto" takes TMA where a measured configuration exists and the layout allows it.
    assert attn._fwd_method("auto", q, k, v, o, False) == "tma"
    assert attn._fwd_method("auto", *(t[..., :32].contiguous() for t in (q, k, v, o)), True) == "pointers"
    assert attn._fwd_method("auto", *(t.to(FP8) for t in (q, k, v)), o, False) == "pointers"
    # Layouts a tensor descriptor cannot describe: "auto" falls back to pointers, "tma" says why.
    d_strided = random_tensor((1, 2, 64, 40), torch.float16, device).transpose(-1, -2)
    row_68 = random_tensor((1, 2, 40, 68), torch.float16, device)[..., :64]
    for bad, reason in ((d_strided, r"q's head dim is not contiguous \(strides \(5120, 2560, 1, 40\)\)"),
                        (row_68, r"q's stride 68 along dimension 2 is not a positive multiple of 16 bytes")):
        assert attn._fwd_method("auto", bad, k, v, o, False) == "pointers"
        assert_close(attention_fwd(bad, k, v)[0], attention_reference(bad, k, v), torch.float16)
        with pytest.raises(ValueError, match="method='tma' cannot run: " + reason):
            attention_fwd(bad, k, v, method="tma")
    with pytest.raises(ValueError, match="method must be one of 'auto', 'pointers', 'tma', 'warp_specialized'; got 'tiles'"):
        attention_fwd(q, k, v, method="tiles")


def test_warp_specialized_method_choice(device):
    q, k, v = qkv(1, 2, 2, 40, 128, torch.float16, device)
    o = torch.empty_like(q)
    obstacle = attn._ws_obstacle(q, k, v, o, False)
    if runtime.is_interpreter():
        assert obstacle == "Triton's interpreter does not run Gluon kernels"
    if obstacle is not None:  # the interpreter, or a GPU other than Hopper: "auto" takes the tl.dot kernels
        assert attn._fwd_method("auto", q, k, v, o, False) in ("tma", "pointers")
        with pytest.raises(ValueError, match="method='warp_specialized' cannot run: " + re.escape(obstacle)):
            attention_fwd(q, k, v, method="warp_specialized")
    else:
        assert attn._fwd_method("auto", q, k, v, o, True) == "warp_specialized"
        # Pinned launches, other head dims and layouts without descriptors take the other kernels.
        assert attn._fwd_method("auto", q, k, v, o, True, "pinned") == "tma"
        q32, k32, v32 = (t[..., :32].contiguous() for t in (q, k, v))
        assert attn._fwd_method("auto", q32, k32, v32, torch.empty_like(q32), False) == "pointers"
        # At D = 64 short sequences keep the TMA kernel (WS_MIN_LENGTH).
        for causal in (False, True):
            shortest = attn.WS_MIN_LENGTH[(64, causal)]
            for n, expected in ((shortest - 1, "tma"), (shortest, "warp_specialized")):
                q64 = torch.empty((1, 1, n, 64), dtype=torch.float16, device=device)
                assert attn._fwd_method("auto", q64, q64, q64, q64, causal) == expected, (n, causal)
        d_strided = random_tensor((1, 2, 128, 40), torch.float16, device).transpose(-1, -2)
        assert attn._fwd_method("auto", d_strided, k, v, o, False) == "pointers"
        for kwargs, reason in (
            (dict(q=q32, k=k32, v=v32), r"it has configurations for float16 and bfloat16 at head dims \[64, 128\] only, "
                                        r"not torch.float16 at 32"),
            (dict(q=q, k=k, v=v, block_m=64, num_stages=2), r"it takes no knobs \(block_m, num_stages given\)"),
            (dict(q=q, k=k, v=v, causal=True, skip_masked_blocks=False),
             r"it always skips the causal blocks right of the diagonal \(skip_masked_blocks=False given\)"),
            (dict(q=d_strided, k=k, v=v), r"q's head dim is not contiguous"),
        ):
            with pytest.raises(ValueError, match="method='warp_specialized' cannot run: " + reason):
                attention_fwd(**kwargs, method="warp_specialized")


def test_large_scores_do_not_overflow(device):
    # Scores of ±(hundreds) would overflow exp in float32 without the running maximum.
    q, k, v = qkv(1, 1, 1, 50, 32, torch.float16, device)
    q = q * 8
    for causal in (False, True):
        o = attention(q, k, v, causal, sm_scale=1.0)
        assert_close(o, attention_reference(q, k, v, causal, 1.0), torch.float16)


def test_no_graph_without_requires_grad(device):
    q, k, v = qkv(1, 1, 1, 8, 16, torch.float16, device)
    assert attention(q, k, v).grad_fn is None
    with torch.no_grad():
        assert attention(q.requires_grad_(), k, v).grad_fn is None
    assert attention(q, k, v).grad_fn is not None


@pytest.mark.parametrize("shape", [(0, 2, 2, 8, 16), (2, 2, 2, 0, 16), (2, 0, 0, 8, 16)], ids=str)
def test_empty_inputs_give_empty_results(shape, device):
    q, k, v = (t.requires_grad_() for t in qkv(*shape, torch.float16, device))
    o = attention(q, k, v, True)
    assert o.shape == q.shape
    o.sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape
    _, lse = attention_fwd(q.detach(), k.detach(), v.detach())
    assert lse.shape == q.shape[:3]


# -- the lesson's steps ----------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("step", STEPS, ids=lambda f: f.__name__)
def test_lesson_steps(step, causal, device):
    # Step 5, the warp-specialized kernel, runs on Hopper only; it is checked at D = 128, the others at 64.
    q, k, v = qkv(1, 2, 1, 70, 128 if step is attention_warp_specialized else 64, torch.float16, device)
    if step is attention_warp_specialized and (reason := attn._ws_obstacle(q, k, v, q, causal)):
        with pytest.raises(ValueError, match="method='warp_specialized' cannot run: " + re.escape(reason)):
            step(q, k, v, causal)
        return
    o = step(q, k, v, causal)
    assert o.shape == q.shape and o.dtype == q.dtype
    assert_close(o, attention_reference(q, k, v, causal), torch.float16)


def test_lesson_steps_reject_what_attention_rejects(device):
    q, k, v = qkv(1, 1, 1, 8, 16, torch.float16, device)
    for step in STEPS:
        with pytest.raises(TypeError, match="supported: float16, bfloat16"):
            step(q.float(), k.float(), v.float())
        with pytest.raises(ValueError, match="must be 4-D"):
            step(q[0], k[0], v[0])


def test_naive_scores_bytes():
    assert naive_scores_bytes(4, 32, 4096) == 4 * 32 * 4096 * 4096 * 2 == 4 << 30
    assert naive_scores_bytes(1, 1, 10, torch.float32) == 400


@triton.jit
def _order_probe_kernel(rank_ptr, head_ptr, HEAD_GROUP: tl.constexpr):
    i = tl.program_id(0)
    zh = tl.program_id(1)
    start = zh * tl.num_programs(0) + i  # the place in the order programs start in
    rank, head = _causal_order(i, zh, tl.num_programs(0), tl.num_programs(1), HEAD_GROUP)
    tl.store(rank_ptr + start, rank)
    tl.store(head_ptr + start, head)


# 5 x 7 in groups of 3 ends with a group of one head; 3 x 2 in groups of 16 is one group of two.
@pytest.mark.parametrize("n_i, n_zh, group", [(5, 7, 1), (5, 7, 3), (4, 8, 4), (3, 2, 16)])
def test_causal_order_starts_each_groups_programs_rank_by_rank(n_i, n_zh, group, device):
    rank = torch.full((n_i * n_zh,), -1, dtype=torch.int32, device=device)
    head = torch.full_like(rank, -1)
    _order_probe_kernel[(n_i, n_zh)](rank, head, HEAD_GROUP=group)
    started = list(zip(head.tolist(), rank.tolist(), strict=True))
    assert sorted(started) == [(h, r) for h in range(n_zh) for r in range(n_i)]  # every program once
    for first in range(0, n_zh, group):
        heads = range(first, min(first + group, n_zh))
        assert started[first * n_i:(heads[-1] + 1) * n_i] == [(h, r) for r in range(n_i) for h in heads]
    # The persistent forward's schedule is built on the host with a copy of the order.
    host = [attn._causal_order_host(s % n_i, s // n_i, n_i, n_zh, group) for s in range(n_i * n_zh)]
    assert started == [(h, r) for r, h in host]


# The warp-specialized backward's dQ buffer in column groups: every row of every group lands in its
# place in dQ, in dQ's strides, and rows past N stay out.
@pytest.mark.parametrize("b, h, n, d", [(2, 3, 100, 64), (1, 2, 64, 128), (1, 1, 130, 128)], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "heads-inner"])
def test_dq_ungroup_kernel_puts_the_groups_side_by_side(b, h, n, d, layout, device):
    n_pad = triton.cdiv(n, attn.WS_ROWS) * attn.WS_ROWS  # as _ws_dq_buffer pads
    dq32 = torch.randn(b, h, d // 8, n_pad, 8, device=device)
    want = dq32[:, :, :, :n].permute(0, 1, 3, 2, 4).reshape(b, h, n, d).half()
    # dQ is the first n rows of a larger NaN buffer: the rows after them must stay NaN.
    if layout == "contiguous":
        room = torch.full((b, h, n + 64, d), float("nan"), dtype=torch.float16, device=device)
    else:
        room = torch.full((b, n + 64, h, d), float("nan"), dtype=torch.float16, device=device).transpose(1, 2)
    dq = room[:, :, :n]
    rows = attn.UNGROUP_ROWS
    attn.attention_dq_ungroup_kernel[(triton.cdiv(n, rows), b * h)](
        dq32, dq, *attn._strides(dq), h, n, n_pad, BLOCK_M=rows, HEAD_DIM=d, num_warps=attn.UNGROUP_WARPS)
    assert torch.equal(dq, want)
    assert room[:, :, n:].isnan().all()


# The persistent forward's split tiles: each piece of the keys leaves its rows' output over those keys,
# normalized, and their log2-sum-exp; merged, they are the output and log-sum-exp over all the keys.
# Rows past N (never computed: NaN here) and the tiles not listed stay untouched.
@pytest.mark.parametrize("n, d, cuts", [(50, 64, (0, 20, 21, 50)), (64, 128, (0, 32, 64)), (40, 64, (0, 40))], ids=str)
def test_fwd_combine_kernel_merges_the_pieces_of_split_tiles(n, d, cuts, device):
    block_m, h = 32, 2
    q, k, v = qkv(1, h, h, n, d, torch.float16, device)
    q = q * 3  # the pieces' largest scores then differ widely
    scores = (q.double() @ k.double().transpose(-1, -2)) * d**-0.5
    tiles = [(1, m0) for m0 in range(0, n, block_m)]  # head 1 split, head 0 not
    splits, part_o, part_lse = [], [], []
    for zh, m0 in tiles:
        splits.append([zh, m0, len(part_o), len(cuts) - 1])
        for a, b in itertools.pairwise(cuts):
            s = torch.full((block_m, b - a), float("nan"), dtype=torch.float64, device=device)
            s[:n - m0] = scores[0, zh, m0:m0 + block_m, a:b]
            part_o.append(torch.softmax(s, -1) @ v[0, zh, a:b].double())
            part_lse.append(torch.logsumexp(s, -1) / math.log(2))
    part_o, part_lse = torch.cat(part_o).float(), torch.cat(part_lse).float()
    splits = torch.tensor(splits, dtype=torch.int32, device=device)
    o = poisoned((1, n, h, d), torch.float16, device).transpose(1, 2)  # strided: heads inside rows
    lse = poisoned((1, h, n), torch.float32, device)
    rows = 16  # a program's rows of a tile
    attn.attention_fwd_combine_kernel[(len(tiles), block_m // rows)](
        part_o, part_lse, splits, o, lse, *attn._strides(o), h, n, BLOCK_M=block_m, ROWS=rows, HEAD_DIM=d,
        num_warps=4)
    assert o[:, 0].isnan().all() and lse[:, 0].isnan().all()
    assert_close(o[:, 1], attention_reference(q, k, v)[:, 1], torch.float16)
    assert_close(lse[:, 1], torch.logsumexp(scores, -1)[:, 1].float(), torch.float32)


@pytest.mark.parametrize("n, n_zh, causal, block_m, programs", [
    (1000, 3, False, 128, 4), (1000, 3, True, 128, 4), (4097, 5, True, 192, 7), (300, 2, True, 192, 1),
    (2048, 16, True, 128, 132), (128, 1, False, 128, 1), (4097, 130, False, 192, 132)])
def test_persistent_forward_schedule_deals_every_tile_once_to_the_least_loaded_program(n, n_zh, causal, block_m,
                                                                                      programs):
    block_n = 128
    table, width, splits, slots = attn._fwd_schedule(n, n_zh, causal, block_m, block_n, programs)
    assert table.dtype == torch.int32 and table.shape == (programs, width)
    assert splits.shape == (0, 4) and slots == 0  # nothing is split unless asked
    n_i = triton.cdiv(n, block_m)
    e = attn.SCHED_ENTRY
    visits = [[tuple(row[1 + e * t:1 + e * (t + 1)]) for t in range(row[0])] for row in table.tolist()]
    assert all(x == 0 for row in table.tolist() for x in row[1 + e * row[0]:])  # nothing after a row's visits
    assert all(kb0 == 0 and slot == -1 for tiles in visits for _, _, kb0, _, slot in tiles)  # whole tiles
    rows = [[(zh, m0, blocks) for zh, m0, _, blocks, _ in tiles] for tiles in visits]
    dealt = [tile for tiles in rows for tile in tiles]
    loads = [sum(blocks + attn.TILE_OVERHEAD_BLOCKS for _, _, blocks in tiles) for tiles in rows]
    # Every tile once, each with the key blocks it reads: all of them, or causal, up to its last row's.
    full = triton.cdiv(n, block_n)
    assert sorted(dealt) == sorted(
        (zh, i * block_m, min(full, triton.cdiv((i + 1) * block_m, block_n)) if causal else full)
        for zh in range(n_zh) for i in range(n_i))
    # Each tile went to a least-loaded program, so no program ends more than a tile's cost past another.
    assert max(loads) - min(loads) <= max(blocks for _, _, blocks in dealt) + attn.TILE_OVERHEAD_BLOCKS
    for p, tiles in enumerate(rows):
        if not causal:  # every tile costs the same: program p takes tiles p, p + programs, ...
            assert [zh * n_i + m0 // block_m for zh, m0, _ in tiles] == list(range(p, n_i * n_zh, programs))
        else:  # the longest tiles of a group of heads go first: a program's never grow within a group
            group = attn._head_group(True)
            for a, b in zip(tiles, tiles[1:], strict=False):
                assert a[0] // group != b[0] // group or a[2] >= b[2], (a, b)


@pytest.mark.parametrize("n, n_zh, block_m, programs", [
    (4096, 64, 128, 132), (1000, 8, 128, 3), (1000, 8, 128, 5), (4097, 7, 128, 132), (128, 2, 128, 2),
    (300, 4, 128, 7), (16384, 32, 128, 132)])
def test_persistent_forward_schedule_splits_the_last_tiles_by_key_blocks(n, n_zh, block_m, programs):
    # Rounds of whole tiles as without the split, then every key block of the tiles left over exactly
    # once, in runs of equal length; a tile's pieces in order, in consecutive slots, listed in splits.
    block_n = 128
    table, width, splits, slots = attn._fwd_schedule(n, n_zh, False, block_m, block_n, programs, split_tail=True)
    assert table.shape == (programs, width)
    n_i, blocks = triton.cdiv(n, block_m), triton.cdiv(n, block_n)
    tiles = n_i * n_zh
    rounds = tiles // programs
    e = attn.SCHED_ENTRY
    visits = [[tuple(row[1 + e * t:1 + e * (t + 1)]) for t in range(row[0])] for row in table.tolist()]
    assert all(x == 0 for row in table.tolist() for x in row[1 + e * row[0]:])
    pieces = {}  # (zh, m0) -> [(kb0, count, slot), ...] in the order the programs take them
    for p, program in enumerate(visits):
        assert [zh * n_i + m0 // block_m for zh, m0, *_ in program[:rounds]] == list(range(p, rounds * programs, programs))
        assert all(v[2:] == (0, blocks, -1) for v in program[:rounds])
        for zh, m0, kb0, count, slot in program[rounds:]:
            pieces.setdefault((zh, m0), []).append((kb0, count, slot))
    left = tiles - rounds * programs
    assert sorted(pieces) == sorted((t // n_i, t % n_i * block_m) for t in range(rounds * programs, tiles))
    run = triton.cdiv(left * blocks, programs)
    assert [sum(v[3] for v in program[rounds:]) for program in visits] == [
        min(run, max(0, left * blocks - p * run)) for p in range(programs)]
    listed = []
    for (zh, m0), parts in pieces.items():
        assert [kb0 for kb0, _, _ in parts] == list(itertools.accumulate([0] + [c for _, c, _ in parts[:-1]]))
        assert sum(count for _, count, _ in parts) == blocks
        if len(parts) == 1:
            assert parts[0][2] == -1  # a whole tile writes its own output
        else:
            first = parts[0][2]
            assert [slot for _, _, slot in parts] == list(range(first, first + len(parts)))
            listed.append((zh, m0, first, len(parts)))
    assert sorted(splits.tolist()) == sorted(list(s) for s in listed)
    assert slots == sum(count for *_, count in listed)


def test_persistent_forward_schedules_stay_on_the_device_while_a_graph_may_read_them(monkeypatch):
    # Copied to the device once and kept (at most SCHEDULE_CACHE_SIZE); while a CUDA graph is being
    # captured, a schedule not yet there is not built (None: a program per tile), and one that is
    # stays for good, since the graph's kernels read it at every replay.
    monkeypatch.setattr(attn, "_SCHEDULES", collections.OrderedDict())
    monkeypatch.setattr(attn, "_CAPTURED_SCHEDULES", {})
    capturing = False
    monkeypatch.setattr(attn, "_capturing", lambda device: capturing)
    cpu = torch.device("cpu")
    args = (1000, 3, False, 128, 128, 5, True)  # with split tiles: their table goes to the device too
    first = attn._device_schedule(cpu, *args)
    host = attn._fwd_schedule(*args)
    assert torch.equal(first.table, host.table) and torch.equal(first.splits, host.splits)
    assert (first.width, first.slots) == (host.width, host.slots)
    assert attn._device_schedule(cpu, *args) is first
    capturing = True
    assert attn._device_schedule(cpu, 999, *args[1:]) is None
    assert attn._device_schedule(cpu, *args) is first
    capturing = False
    for n in range(2000, 2000 + attn.SCHEDULE_CACHE_SIZE):
        attn._device_schedule(cpu, n, *args[1:])
    assert len(attn._SCHEDULES) == attn.SCHEDULE_CACHE_SIZE and (cpu, *args) not in attn._SCHEDULES
    assert attn._device_schedule(cpu, *args) is first  # the captured copy, not a new one
    assert (cpu, 2000, *args[1:]) not in attn._SCHEDULES  # the least recently used went


# -- configurations and compiled code --------------------------------------------------------------
def test_every_head_dim_causality_and_dtype_has_a_configuration():
    keys = {(d, c, dt) for d in HEAD_DIMS for c in (False, True) for dt in (torch.float16, torch.bfloat16)}
    for table in (BWD_DKDV_CONFIGS, BWD_DQ_CONFIGS):
        assert set(table) == keys
    # The backward takes TMA only where both of its kernels have a measured entry.
    assert set(BWD_DKDV_TMA_CONFIGS) == set(BWD_DQ_TMA_CONFIGS) <= keys
    # float8: forward only, and only where Q Kᵀ's reduced dimension fits its MMA.
    assert set(FWD_CONFIGS) == keys | {(d, c, FP8) for d in HEAD_DIMS if d >= FP8_MIN_HEAD_DIM for c in (False, True)}
    assert set(FWD_TMA_CONFIGS) <= keys
    # The block a program owns is a whole number of the blocks it loops over (the causal split needs it).
    for cfg in [*FWD_CONFIGS.values(), *FWD_TMA_CONFIGS.values(), *BWD_DQ_CONFIGS.values(),
                *BWD_DQ_TMA_CONFIGS.values(), *(INTERPRETER_CONFIGS[k] for k in ("fwd", "fwd_tma", "bwd_dq", "bwd_dq_tma"))]:
        assert cfg.block_m % cfg.block_n == 0
    for cfg in [*BWD_DKDV_CONFIGS.values(), *BWD_DKDV_TMA_CONFIGS.values(), INTERPRETER_CONFIGS["bwd_dkdv"],
                INTERPRETER_CONFIGS["bwd_dkdv_tma"]]:
        assert cfg.block_n % cfg.block_m == 0
    # The warp-specialized forward: consumer warpgroups of 64 rows (two or three a program), and key
    # blocks a whole number of those rows, so that a consumer's causal diagonal is one key block.
    assert set(FWD_WS_CONFIGS) <= keys
    for cfg in FWD_WS_CONFIGS.values():
        assert cfg.block_m // attn.WS_ROWS in (2, 3) and cfg.block_m % attn.WS_ROWS == 0
        assert cfg.block_n % attn.WS_ROWS == 0 and cfg.num_warps == 4
    assert attention_config(128, True, torch.float16, "fwd_ws") == FWD_WS_CONFIGS[(128, True, torch.float16)]
    assert set(attn.FWD_WS_PERSISTENT) == {(d, c) for d, c, _ in FWD_WS_CONFIGS}  # a choice for each
    # The warp-specialized backward: two consumers of WS_ROWS key rows, query blocks of WS_ROWS.
    assert set(BWD_WS_CONFIGS) <= keys
    for cfg in BWD_WS_CONFIGS.values():
        assert (cfg.block_m, cfg.block_n, cfg.num_warps) == (attn.WS_ROWS, 2 * attn.WS_ROWS, 4)
    if runtime.is_interpreter():
        assert attention_config(128, True, torch.float16, "bwd_dq") == INTERPRETER_CONFIGS["bwd_dq"]
    else:
        assert attention_config(128, True, torch.float16) == FWD_CONFIGS[(128, True, torch.float16)]
    with pytest.raises(ValueError, match="kernel must be one of fwd, fwd_tma, fwd_ws, bwd_dkdv, bwd_dkdv_tma, bwd_dq, bwd_dq_tma, bwd_ws"):
        attention_config(64, False, torch.float16, "bwd")


MISSING = asm.cuda_compiler_missing()


def wgmma_a_sources(ptx: str) -> dict[str, int]:
    """How many wgmma instructions of ``ptx`` take their A operand from registers, and how many from shared memory."""
    sources = {"registers": 0, "shared": 0}
    for instr in re.findall(r"wgmma\.mma_async[^;]*;", ptx):
        operands = instr.split(None, 1)[1]
        # {D registers}, then A: a brace group of registers, or one 64-bit shared-memory descriptor.
        a = operands[operands.index("}") + 1:].lstrip(" ,\t\n")
        sources["registers" if a.startswith("{") else "shared"] += 1
    return sources


@pytest.mark.skipif(MISSING is not None, reason=f"this Triton cannot compile for CUDA: {MISSING}")
@pytest.mark.parametrize("dtype, ptr, mma, tma, causal", [
    (torch.float16, "fp16", ".f16.f16", False, True), (torch.float16, "fp16", ".f16.f16", True, True),
    (torch.float16, "fp16", ".f16.f16", True, False), (FP8, "fp8e4nv", ".e4m3.e4m3", False, True)], ids=str)
def test_forward_compiles_to_wgmma_without_spills_for_hopper(dtype, ptr, mma, tma, causal):
    # The table's entry for D = 128 as a launch on contiguous tensors specializes it; the float8
    # forward writes bfloat16. With TMA, q ... o are tensor descriptors of 1 x 1 x rows x D blocks.
    cfg = (FWD_TMA_CONFIGS if tma else FWD_CONFIGS)[(128, causal, dtype)]
    out = "bf16" if dtype == FP8 else ptr
    if tma:
        rows = {"q": cfg.block_m, "k": cfg.block_n, "v": cfg.block_n, "o": cfg.block_m}
        sig = {f"{t}_src": f"tensordesc<{out if t == 'o' else ptr}[1,1,{rows[t]},128]>" for t in "qkvo"} | {"lse_ptr": "*fp32"}
    else:
        sig = {"q_src": f"*{ptr}", "k_src": f"*{ptr}", "v_src": f"*{ptr}", "o_src": f"*{out}", "lse_ptr": "*fp32"}
    consts = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "HEAD_DIM": 128, "IS_CAUSAL": causal, "GROUP": 1,
              "TMA": tma, "SKIP_BLOCKS": True, "HEAD_GROUP": attn._head_group(causal)}
    for t in "qkvo":
        for dim in ("z", "h", "n" if t in "kv" else "m"):
            sig[f"stride_{t}{dim}"] = "i32"
        consts[f"stride_{t}k"] = 1
    sig |= {"H": "i32", "N": "i32", "qk_scale": "fp32"}
    aligned = [name for name in sig if sig[name].startswith("*") or name.startswith("stride")]
    compiled = asm.compile_for_hopper(attn.attention_fwd_kernel, sig, consts, num_warps=cfg.num_warps,
                                      num_stages=cfg.num_stages, divisible_by_16=aligned)
    assert re.search(r"wgmma\.mma_async\S*" + re.escape(mma), compiled.ptx), "no Tensor Core MMA of the inputs' type"
    if compiled.resources is None:
        pytest.skip("this Triton carries no cuobjdump")
    # The pointer table was chosen by this rule: no spills. The TMA entries were chosen by measurement.
    # The causal one (64 x 64 blocks) fits anyway: 138 registers with triton 3.6 ... 3.9. The full one
    # (128 x 64) was the fastest shape measured although it runs at the register limit: 255 registers
    # and a stack frame of 88 bytes with triton 3.6, 96 with 3.8 and 64 with 3.9. The bound lets a
    # frame of that size stand and catches heavier spilling.
    spill_limit = 128 if tma and not causal else 0
    assert compiled.resources.local_bytes == 0 and compiled.resources.stack_bytes <= spill_limit, (
        f"the forward spills registers: {compiled.resources}"
    )



@pytest.mark.skipif(MISSING is not None, reason=f"this Triton cannot compile for CUDA: {MISSING}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("kernel", ["dkdv", "dq"])
def test_backward_with_descriptors_compiles_to_wgmma_without_spills_for_hopper(kernel, causal):
    # The descriptor tables' D = 128 entries, as a launch on contiguous float16 tensors with one
    # query head per key/value head specializes them. Through pointers, the dK/dV kernel spills at
    # these block shapes (the lesson prints both); through descriptors it must not.
    tables = {"dkdv": BWD_DKDV_TMA_CONFIGS, "dq": BWD_DQ_TMA_CONFIGS}
    cfg = tables[kernel][(128, causal, torch.float16)]
    rows = {"q": cfg.block_m, "do": cfg.block_m, "k": cfg.block_n, "v": cfg.block_n}
    rows |= {"dk": cfg.block_n, "dv": cfg.block_n} if kernel == "dkdv" else {"dq": cfg.block_m}
    sig = {f"{t}_src": f"tensordesc<fp16[1,1,{n},128]>" for t, n in rows.items()}
    sig |= {"lse_ptr": "*fp32", "delta_ptr": "*fp32"}
    consts = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "HEAD_DIM": 128, "IS_CAUSAL": causal, "GROUP": 1, "TMA": True,
              "HEAD_GROUP": attn._head_group(causal)}
    for t in rows:  # with descriptors the kernels read no strides: fixed, to leave them out of the signature
        consts |= {f"stride_{t}{dim}": 0 for dim in ("z", "h", "m" if t in ("q", "do", "dq") else "n", "k")}
    sig |= {"H": "i32", "N": "i32", "sm_scale": "fp32", "qk_scale": "fp32"}
    fn = attn.attention_bwd_dkdv_kernel if kernel == "dkdv" else attn.attention_bwd_dq_kernel
    compiled = asm.compile_for_hopper(fn, sig, consts, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    assert re.search(r"wgmma\.mma_async\S*\.f16\.f16", compiled.ptx), "no Tensor Core MMA of the inputs' type"
    if compiled.resources is None:
        pytest.skip("this Triton carries no cuobjdump")
    # The causal dK/dV kernel sits at the register limit: 255 registers, and with triton 3.8 a stack
    # frame of 8 bytes (none with 3.6 or 3.9). The bound lets that stand and catches real spilling,
    # such as the pointer kernel's hundreds of bytes.
    assert compiled.resources.local_bytes == 0 and compiled.resources.stack_bytes <= 16, (
        f"the {kernel} kernel spills registers: {compiled.resources}"
    )


def test_warp_specialized_registers_fill_the_register_file_by_warpgroup():
    for consumers, expected in ((2, 240), (3, 160)):
        regs = attn.ws_registers(consumers)
        assert regs == {"consumer": expected, "loader": 24}
        used = 128 * (consumers * regs["consumer"] + regs["loader"])
        assert used <= 65536 < used + 128 * consumers * 8  # 8 more a consumer would not fit


@pytest.mark.skipif(MISSING is not None, reason=f"this Triton cannot compile for CUDA: {MISSING}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("persistent", [False, True], ids=["tiles", "persistent"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_warp_specialized_forward_compiles_for_hopper(head_dim, causal, persistent):
    # The Gluon kernel as a launch on contiguous float16 tensors specializes it: the descriptors'
    # types (with their shared-memory layouts) come from descriptors of CPU tensors of that layout.
    from triton.runtime.jit import mangle_type

    cfg = FWD_WS_CONFIGS[(head_dim, causal, torch.float16)]
    t = torch.empty((2, 2, 256, head_dim), dtype=torch.float16)
    q_type, kv_type = (mangle_type(attn._ws_descriptor(t, rows)) for rows in (attn.WS_ROWS, cfg.block_n))
    sig = {"q_desc": q_type, "k_desc": kv_type, "v_desc": kv_type, "o_desc": q_type, "lse_ptr": "*fp32",
           "sched_ptr": "*i32", "SCHED_WIDTH": "i32", "part_o_ptr": "*fp32", "part_lse_ptr": "*fp32", "ZH": "i32",
           "H": "i32", "N": "i32", "GROUP": "i32", "qk_scale": "fp32"}
    regs = attn.ws_registers(cfg.block_m // attn.WS_ROWS)
    q_regs = attn.FWD_WS_Q_REGISTERS[head_dim]
    consts = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "NUM_STAGES": cfg.num_stages, "IS_CAUSAL": causal,
              "CONSUMER_REGS": regs["consumer"], "LOADER_REGS": regs["loader"], "HEAD_GROUP": attn._head_group(causal),
              "Q_REGS": q_regs, "PERSISTENT": persistent}
    compiled = asm.compile_for_hopper(attn.attention_fwd_ws_kernel, sig, consts, num_warps=cfg.num_warps)
    ptx = compiled.ptx
    assert re.search(r"wgmma\.mma_async\S*\.f16\.f16", ptx), "no Tensor Core MMA of the inputs' type"
    # P enters P V from registers always; Q enters Q Kᵀ from registers where the table says so.
    sources = wgmma_a_sources(ptx)
    assert sources["registers"] > 0 and (sources["shared"] == 0) == q_regs, sources
    # The overlap: a wait that leaves one MMA running (P V) while the softmax of the next scores runs.
    assert re.search(r"wgmma\.wait_group\.sync\.aligned\s+1;", ptx), "every MMA is waited for at once"
    # Each partition gets the registers asked for; the ring, the query blocks and barriers fit on an SM.
    for registers in regs.values():
        assert re.search(rf"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+{registers};", ptx), registers
    assert compiled.shared_bytes <= 227 * 1024
    if compiled.resources is None:
        pytest.skip("this Triton carries no cuobjdump")
    # Three consumers run at 160 registers: triton 3.6 fits them (no stack frame); triton 3.9 keeps a
    # frame of 184 bytes (full) or 24 (causal). Two consumers at 240 registers fit with every
    # version, but with Q's 32 registers a thread (D = 128) triton 3.6 keeps a frame of 8 bytes (full)
    # or none (causal), triton 3.9 104 (full) or 8 (causal). Persistent, the frames grow: triton 3.6
    # 136 and 0 bytes (D = 64, full and causal), 0 and 0 (D = 128); triton 3.9 384 and 200, 264 and
    # 16. The bounds let these stand and catch heavier spilling.
    if persistent:
        spill_limit = 384 if head_dim == 64 else 320
    else:
        spill_limit = 192 if cfg.block_m // attn.WS_ROWS == 3 else 128 if q_regs else 0
    assert compiled.resources.local_bytes == 0 and compiled.resources.stack_bytes <= spill_limit, (
        f"the warp-specialized forward spills registers: {compiled.resources}"
    )


@pytest.mark.skipif(MISSING is not None, reason=f"this Triton cannot compile for CUDA: {MISSING}")
@pytest.mark.parametrize("dq_layout", ["rows", "groups"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_warp_specialized_backward_compiles_for_hopper(head_dim, causal, dq_layout, monkeypatch):
    # As the forward's test: a launch on contiguous float16 tensors, with the float32 dQ buffer's
    # descriptor (in rows or column groups, blocks of half of D's columns where the dQ is split) and
    # the row descriptors of lse2 and delta as the launcher builds them.
    from triton.runtime.jit import mangle_type

    grouped = {(head_dim, causal)} if dq_layout == "groups" else set()
    monkeypatch.setattr(attn, "BWD_WS_DQ_GROUPED", grouped)

    cfg = BWD_WS_CONFIGS[(head_dim, causal, torch.float16)]
    assert (cfg.block_m, cfg.block_n) == (attn.WS_ROWS, 2 * attn.WS_ROWS)  # what the kernel assumes
    tile = mangle_type(attn._ws_descriptor(torch.empty((2, 2, 256, head_dim), dtype=torch.float16), attn.WS_ROWS))
    dq_type = mangle_type(attn._ws_dq_buffer(torch.empty((2, 2, 256, head_dim), dtype=torch.float16), causal)[1])
    row_type = mangle_type(attn._ws_rows_descriptor(torch.empty((2, 2, 256), dtype=torch.float32)))
    sig = {f"{t}_desc": tile for t in ("q", "k", "v", "do", "dk", "dv")}
    sig |= {"lse2_desc": row_type, "delta_desc": row_type, "dq_desc": dq_type, "H": "i32", "N": "i32", "N_PAD": "i32",
            "GROUP": "i32", "sm_scale": "fp32", "qk_scale": "fp32"}
    regs = attn.ws_registers(2)
    kv_regs = attn.BWD_WS_KV_REGISTERS[head_dim]
    consts = {"NUM_STAGES": cfg.num_stages, "DS_STAGES": attn.BWD_WS_DS_STAGES, "IS_CAUSAL": causal,
              "CONSUMER_REGS": regs["consumer"], "LOADER_REGS": regs["loader"], "HEAD_GROUP": attn._head_group(causal),
              "KV_REGS": kv_regs}
    compiled = asm.compile_for_hopper(attn.attention_bwd_ws_kernel, sig, consts, num_warps=cfg.num_warps)
    ptx = compiled.ptx
    if kv_regs:  # K (and V) in registers: Sᵀ = K Qᵀ (and dPᵀ = V dOᵀ) stop reading A from shared memory
        plain = asm.compile_for_hopper(attn.attention_bwd_ws_kernel, sig, consts | {"KV_REGS": 0}, num_warps=cfg.num_warps)
        on, off = wgmma_a_sources(ptx), wgmma_a_sources(plain.ptx)
        assert on["shared"] < off["shared"] and on["registers"] > off["registers"], (on, off)
    assert re.search(r"wgmma\.mma_async\S*\.f16\.f16", ptx), "no Tensor Core MMA of the inputs' type"
    # dQ leaves through the TMA's reduce-add (adding float32 in L2), not through per-thread atomics.
    assert re.search(r"cp\.reduce\.async\.bulk\.tensor\S*\.add", ptx), "no TMA reduce-add of dQ"
    assert not re.search(r"\b(atom|red)\.global", ptx), "per-thread atomics"
    for registers in regs.values():
        assert re.search(rf"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+{registers};", ptx), registers
    assert compiled.shared_bytes <= 227 * 1024
    if compiled.resources is None:
        pytest.skip("this Triton carries no cuobjdump")
    # At D = 128 a consumer holds dK and dV (128 registers a thread) next to the block's scores and,
    # in its turn, dQ (64 more): a stack frame of 24-48 bytes with triton 3.6 (full 32, causal 40 in
    # column groups and 48 in rows), 32 with 3.8, none with 3.9. The bound lets that stand and catches
    # heavier spilling. With the dQ split (BWD_WS_SPLIT_DQ), 32 registers for dQ: no frame with 3.6.
    spill_limit = 48 if head_dim == 128 else 0
    assert compiled.resources.local_bytes == 0 and compiled.resources.stack_bytes <= spill_limit, (
        f"the warp-specialized backward spills registers: {compiled.resources}"
    )


# -- counts and the benchmark suite ----------------------------------------------------------------
def test_counts():
    assert attention_flops(2, 16, 1024, 128) == 4 * 2 * 16 * 1024**2 * 128
    assert attention_flops(2, 16, 1024, 128, causal=True) == 2 * 2 * 16 * 1024**2 * 128
    assert attention_flops(2, 16, 1024, 128, False, "bwd") == 10 * 2 * 16 * 1024**2 * 128
    assert attention_flops(2, 16, 1024, 128, True, "bwd") == 5 * 2 * 16 * 1024**2 * 128
    tensor = 2 * 16 * 1024 * 128 * 2
    assert attention_bytes(2, 16, 1024, 128, torch.float16) == 4 * tensor
    assert attention_bytes(2, 16, 1024, 128, torch.bfloat16, "bwd") == 8 * tensor
    assert attention_bytes(2, 16, 1024, 128, torch.float16, kv_heads=4) == 2 * tensor + 2 * tensor // 4
    for count in (lambda d: attention_flops(1, 1, 1, 16, False, d), lambda d: attention_bytes(1, 1, 1, 16, torch.float16, d)):
        with pytest.raises(ValueError, match="direction must be 'fwd' or 'bwd'"):
            count("fwd+bwd")


def test_bench_suite_is_well_formed():
    record = SCHEMA["properties"]["records"]["items"]["properties"]
    specs = suite.specs()
    assert [s.direction for s in specs] == ["fwd", "bwd", "bwd"]
    for spec in specs:
        assert (spec.kernel, spec.metric, spec.x) == ("attention", "TFLOPS", "N")
        assert spec.dtypes == [torch.float16, torch.bfloat16]
        for shape in [*spec.shapes, *spec.quick_shapes]:
            assert set(shape) == {"B", "H", "N", "D", "causal"}
            assert shape["B"] * shape["N"] == 16384 and shape["H"] * shape["D"] == 2048
        assert all(re.fullmatch(record["variant"]["pattern"], v) for v in spec.variants)
        shape = {"B": 4, "H": 16, "N": 4096, "D": 128, "causal": True}
        assert spec.flops(shape, torch.float16) == attention_flops(4, 16, 4096, 128, True, spec.direction)
        # The naive step only up to N = 4096, where its score matrices already take 4 GiB.
        naive_ns = {s["N"] for _, s, variant in spec.cases() if variant == "step-1-naive"}
        assert naive_ns <= {1024, 2048, 4096}
    fwd, bwd, naive_bwd = specs
    assert sorted(s["N"] for s in fwd.shapes if s["D"] == 128 and not s["causal"]) == [1024, 2048, 4096, 8192, 16384]
    assert {(s["D"], s["causal"]) for s in fwd.shapes} == {(64, False), (64, True), (128, False), (128, True)}
    baselines = {"torch.sdpa-flash", "torch.sdpa-efficient", "torch.sdpa-cudnn", "torch.flex"}
    assert {"tritonperf", "step-1-naive"} | baselines <= set(fwd.variants)
    assert {"tritonperf"} | baselines == set(bwd.variants)
    assert set(naive_bwd.variants) == {"step-1-naive"} and max(s["N"] for s in naive_bwd.shapes) == 4096


@gpu_only
def test_bench_variants_run_and_agree():
    shape = {"B": 2, "H": 4, "N": 512, "D": 64, "causal": True}
    for spec in suite.specs():
        for dtype in spec.dtypes:
            args = spec.make_args(shape, dtype)
            for name, fn in spec.variants.items():
                if not spec.applies(name, shape, dtype):
                    continue
                got = fn(*args)
                if spec.direction == "fwd":
                    q, k, v, causal = args
                    ref = attention_reference(q, k, v, causal)
                    assert relative_error(got, ref) < 1e-2, (name, dtype)
                else:
                    (case,) = args
                    leaves = [t.detach().double().requires_grad_() for t in (case.q, case.k, case.v)]
                    ref = torch.autograd.grad(attention_reference(*leaves, case.causal), leaves, case.do.double())
                    for g, r in zip(got, ref, strict=True):
                        assert relative_error(g, r) < 2e-2, (name, dtype)


# -- bad input -------------------------------------------------------------------------------------
def _qkv16(device, n=8, d=16):
    return qkv(1, 2, 2, n, d, torch.float16, device)


def test_rejects_non_tensors(device):
    q, k, v = _qkv16(device)
    with pytest.raises(TypeError, match="q must be a torch.Tensor"):
        attention(q.tolist(), k, v)
    with pytest.raises(TypeError, match="v must be a torch.Tensor"):
        attention(q, k, None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32], ids=str)
def test_rejects_unsupported_dtypes(dtype, device):
    q, k, v = (t.to(dtype) for t in _qkv16(device))
    with pytest.raises(TypeError, match=r"q has dtype .*; supported: float16, bfloat16, float8_e4m3fn"):
        attention(q, k, v)
    with pytest.raises(TypeError, match=r"q has dtype .*; supported: float16, bfloat16, float8_e4m3fn"):
        attention_fwd(q, k, v)


def test_float8_is_forward_only(device):
    q, k, v = (t.to(FP8) for t in _qkv16(device, d=32))
    with pytest.raises(ValueError, match="float8 attention has no backward pass"):
        attention(q.requires_grad_(), k, v)
    o16 = torch.zeros(q.shape, dtype=torch.float16, device=device)
    with pytest.raises(TypeError, match=r"q has dtype .*; supported: float16, bfloat16$"):
        attention_bwd(o16, q.detach(), k, v, o16, torch.zeros(q.shape[:3], device=device))


def test_float8_output_dtype(device):
    q, k, v = (t.to(FP8) for t in _qkv16(device, n=40, d=32))
    o, lse = attention_fwd(q, k, v)
    assert o.dtype == torch.bfloat16 and o.shape == q.shape and lse.dtype == torch.float32
    out = poisoned(q.shape, torch.float16, device)
    o, _ = attention_fwd(q, k, v, out=out, out_dtype=torch.float16)
    assert o is out and torch.isfinite(o).all()
    assert attention(q, k, v).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="out_dtype must be torch.bfloat16 or torch.float16 for float8 inputs"):
        attention_fwd(q, k, v, out_dtype=torch.float32)
    with pytest.raises(ValueError, match="dtypes differ: out has torch.float16, the output is torch.bfloat16"):
        attention_fwd(q, k, v, out=out)
    with pytest.raises(ValueError, match="out_dtype applies to float8 inputs only"):
        attention_fwd(*_qkv16(device), out_dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"float8 attention needs head_dim D >= 32 \(the float8 MMA's K step\), got D = 16"):
        attention_fwd(*(t.to(FP8) for t in _qkv16(device)))


def test_rejects_mixed_dtypes(device):
    q, k, v = _qkv16(device)
    with pytest.raises(ValueError, match="dtypes differ: q: torch.float16, k: torch.bfloat16"):
        attention(q, k.bfloat16(), v.bfloat16())


@pytest.mark.parametrize("shapes, match", [
    (((2, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16)), r"q must be 4-D \(batch, heads, seq_len, head_dim\), got shape \(2, 8, 16\)"),
    (((1, 2, 8, 16), (1, 1, 2, 8, 16), (1, 2, 8, 16)), r"k must be 4-D"),
    (((1, 2, 8, 16), (1, 2, 8, 16), (1, 2, 9, 16)), r"shapes differ: k: \(1, 2, 8, 16\), v: \(1, 2, 9, 16\)"),
    (((1, 2, 8, 16), (2, 2, 8, 16), (2, 2, 8, 16)), "batch sizes differ: q has 1, k and v have 2"),
    (((1, 2, 8, 16), (1, 2, 9, 16), (1, 2, 9, 16)), "sequence lengths differ: q has N = 8, k and v have 9"),
    (((1, 2, 8, 16), (1, 2, 8, 32), (1, 2, 8, 32)), "head dims differ: q has D = 16, k and v have D = 32"),
    (((1, 3, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16)), r"q's 3 heads are not a multiple of k and v's 2 heads"),
    (((1, 2, 8, 16), (1, 4, 8, 16), (1, 4, 8, 16)), r"q's 2 heads are not a multiple of k and v's 4 heads"),
], ids=["q-rank", "k-rank", "k-v", "batch", "seq", "head-dim", "heads", "more-kv-heads"])
def test_rejects_mismatched_shapes(shapes, match, device):
    q, k, v = (random_tensor(s, torch.float16, device) for s in shapes)
    with pytest.raises(ValueError, match=match):
        attention(q, k, v)


@pytest.mark.parametrize("head_dim", [8, 48, 96, 512])
def test_rejects_unsupported_head_dims(head_dim, device):
    q, k, v = qkv(1, 1, 1, 4, head_dim, torch.float16, device)
    with pytest.raises(ValueError, match=f"head_dim D = {head_dim} is not supported; supported: 16, 32, 64, 128, 256"):
        attention(q, k, v)


@pytest.mark.parametrize("sm_scale", [0.0, -0.125, float("nan"), float("inf"), True, "0.1"])
def test_rejects_bad_sm_scale(sm_scale, device):
    with pytest.raises(ValueError, match="sm_scale must be a finite number > 0"):
        attention(*_qkv16(device), sm_scale=sm_scale)


def test_rejects_non_bool_causal(device):
    with pytest.raises(TypeError, match="causal must be a bool, got int"):
        attention(*_qkv16(device), 1)


def test_rejects_mixed_and_unsupported_devices(device):
    q, k, v = _qkv16(device)
    with pytest.raises(ValueError, match="same device"):
        attention(q, k, v.to("meta"))
    with pytest.raises(ValueError, match="tensors on meta are not supported"):
        attention(q.to("meta"), k.to("meta"), v.to("meta"))


def test_cpu_tensors_outside_interpreter_mode_get_a_clear_error(monkeypatch):
    monkeypatch.setattr(runtime, "MODE", "gpu")
    with pytest.raises(ValueError, match=r"got CPU tensors.*\.cuda\(\)"):
        attention(*_qkv16("cpu"))


def test_rejects_grids_the_gpu_cannot_launch(device):
    q = torch.empty((65536, 1, 1, 16), dtype=torch.float16, device=device)
    with pytest.raises(ValueError, match=r"at most 65535 \(batch × heads\) pairs are supported"):
        attention(q, q, q)


@pytest.mark.parametrize("knobs, match", [
    ({"block_m": 8}, "block_m must be a power of two between 16 and 256, got 8"),
    ({"block_n": 48}, "block_n must be a power of two between 16 and 256"),
    ({"num_warps": 3}, "num_warps must be a power of two between 1 and 16"),
    ({"num_stages": 0}, "num_stages must be a positive integer"),
    ({"block_m": 32, "block_n": 64}, r"block_m \(32\) must be a multiple of block_n \(64\)"),
])
def test_rejects_bad_knobs(knobs, match, device):
    with pytest.raises(ValueError, match=match):
        attention_fwd(*_qkv16(device, n=40), **knobs)


def test_rejects_bad_out(device):
    q, k, v = _qkv16(device)
    with pytest.raises(ValueError, match="shapes differ"):
        attention_fwd(q, k, v, out=torch.empty((1, 2, 9, 16), dtype=torch.float16, device=device))
    with pytest.raises(ValueError, match="dtypes differ"):
        attention_fwd(q, k, v, out=torch.empty(q.shape, device=device))
    with pytest.raises(ValueError, match="out must be contiguous"):
        attention_fwd(q, k, v, out=torch.empty((1, 2, 16, 8), dtype=torch.float16, device=device).transpose(2, 3))


def test_backward_rejects_mismatches(device):
    q, k, v = _qkv16(device)
    o, lse = attention_fwd(q, k, v)
    with pytest.raises(ValueError, match=r"shapes differ: q: \(1, 2, 8, 16\), do: \(1, 2, 7, 16\)"):
        attention_bwd(o[:, :, :7], q, k, v, o, lse)
    with pytest.raises(ValueError, match=r"lse must have shape \(B, H, N\) = \(1, 2, 8\), got \(2, 8\)"):
        attention_bwd(o, q, k, v, o, lse[0])
    with pytest.raises(TypeError, match="lse has dtype float16; supported: float32"):
        attention_bwd(o, q, k, v, o, lse.half())
    with pytest.raises(TypeError, match="do must be a torch.Tensor"):
        attention_bwd(None, q, k, v, o, lse)
    with pytest.raises(ValueError, match="shapes differ"):
        attention_bwd(o, q, k, v, o, lse, dk=torch.empty((1, 2, 8, 32), dtype=torch.float16, device=device))


# -- GPU only: sizes and dtypes the interpreter cannot run ----------------------------------------
@gpu_only
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_benchmark_like_shapes_on_gpu(head_dim, causal, dtype):
    # The benchmark's heads and head dims at N = 2048, two sequences (the float64 reference holds N² scores).
    check_autograd(*qkv(2, 2048 // head_dim, 2048 // head_dim, 2048, head_dim, dtype, "cuda"), causal)


def float8_error_bound(q8, k8, v8, causal):
    """Per element, how far the float8 forward may be from the float64 reference of the same inputs.

    The products of float8 values are exact; what the float8 path adds to the output's error is
    the rounding of each probability p to float8 before P·V, while the softmax's denominator l sums
    the unrounded p in float32. Round-to-nearest in e4m3 (3 mantissa bits) errs by at most
    2⁻⁴ · p for normal values and 2⁻¹⁰ for subnormal ones, so for output row i and column c:
    |Δo| ≤ (2⁻⁴ Σ_j p_ij |v_jc| + 2⁻¹⁰ Σ_{j visible} |v_jc|) / l_i. The 1.05 covers the float32
    arithmetic around it; 2⁻¹⁰ |o| the rounding of the 16-bit output.
    """
    q, k, v = (t.double() for t in (q8, k8, v8))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    n = q.shape[2]
    visible = torch.ones((n, n), dtype=torch.bool, device=q.device)
    if causal:
        visible = visible.tril()
    s = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(~visible, float("-inf"))
    p = torch.exp(s - s.amax(-1, keepdim=True))
    return 1.05 * (2**-4 * (p @ v.abs()) + 2**-10 * (visible.double() @ v.abs())) / p.sum(-1, keepdim=True)


@gpu_only
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", [(1, 2, 2, 100, 64), (2, 4, 2, 1000, 128), (1, 16, 16, 2048, 128)], ids=str)
def test_float8_forward_on_gpu(shape, causal):
    # GPU only: Triton's interpreter converts float32 to float8 wrongly (0.49 becomes 0.25), as it
    # does bfloat16, so only a GPU can check the float8 path's accuracy.
    q8, k8, v8 = (t.to(FP8) for t in qkv(*shape, torch.float32, "cuda"))
    out = poisoned(q8.shape, torch.bfloat16, "cuda")
    o, lse = attention_fwd(q8, k8, v8, causal, out=out)
    ref = attention_reference(q8, k8, v8, causal)
    error = (o.double() - ref).abs()
    limit = float8_error_bound(q8, k8, v8, causal) + 2**-8 * ref.abs()  # bfloat16 output: 8 mantissa bits
    assert (error <= limit).all(), f"largest error {error.max().item():.3e}, {(error / limit).max().item():.2f} x its bound"
    # The log-sum-exp moves by at most the largest error of a row's scores. Those are sums of D exact
    # products, but Hopper's float8 MMA does not add them in full float32: the bound assumes each of its
    # D / 32 steps rounds the running sum to 13 fractional bits of the sum of magnitudes (DeepSeek-V3's
    # report measured about 14 bits of accumulation precision for float8 on Hopper).
    magnitudes = (q8.double().abs() @ k8.double().abs().repeat_interleave(q8.shape[1] // k8.shape[1], 1).transpose(-1, -2))
    score_error = magnitudes.amax(-1) / math.sqrt(q8.shape[-1]) * (q8.shape[-1] // 32) * 2**-13
    lse_error = (lse.double() - attention_lse_reference(q8, k8, causal)).abs()
    worst = (lse_error / score_error).max().item()
    assert (lse_error <= score_error + 1e-5).all(), f"lse off by {lse_error.max().item():.3e}, {worst:.2f} x its bound"


@gpu_only
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", [(1, 2, 2, 1, 128), (2, 3, 3, 17, 128), (1, 2, 2, 128, 128), (2, 4, 2, 1000, 128),
                                   (1, 4, 4, 4097, 128), (1, 2, 2, 1, 64), (2, 3, 3, 200, 64), (2, 4, 2, 1000, 64),
                                   (1, 4, 4, 4097, 64)], ids=str)
@pytest.mark.parametrize("persistent", [False, True], ids=["tiles", "persistent"])
def test_warp_specialized_forward_on_gpu(shape, causal, dtype, persistent, monkeypatch):
    # One row, a block's worth, ragged blocks, grouped heads: every row written (poisoned output),
    # within the table and at most twice torch's error; the log-sum-exp too. Each shape runs with a
    # program per tile and persistent, with three programs so that each takes many tiles.
    monkeypatch.setitem(attn.FWD_WS_PERSISTENT, (shape[-1], causal), math.inf if persistent else 0)
    monkeypatch.setattr(attn, "PERSISTENT_PROGRAMS", 3)
    q, k, v = qkv(*shape, dtype, "cuda")
    if reason := attn._ws_obstacle(q, k, v, q, causal):
        pytest.skip(f"the warp-specialized forward cannot run here: {reason}")
    out = poisoned(q.shape, dtype, "cuda")
    o, lse = attention_fwd(q, k, v, causal, out=out, method="warp_specialized")
    assert o is out
    ref = attention_reference(q, k, v, causal)
    assert_close(o, ref, dtype)
    assert relative_error(o, ref) <= 2 * relative_error(torch_sdpa(q, k, v, causal), ref) + 1e-7
    assert_close(lse, attention_lse_reference(q, k, causal), torch.float32)


@gpu_only
@pytest.mark.parametrize("programs", [5, 7, None], ids=["5 programs", "7 programs", "a program per SM"])
@pytest.mark.parametrize("shape", [(2, 4, 2, 1000, 128), (1, 5, 5, 4097, 128), (2, 4, 2, 1000, 64),
                                   (1, 5, 5, 4097, 64)], ids=str)
def test_warp_specialized_forward_splits_the_last_tiles_on_gpu(shape, programs, monkeypatch):
    # Tiles left over after the last full round, split by key blocks among the programs and merged
    # by the combine kernel: every row written (poisoned output), as close to the reference as
    # without the split, and at most twice torch's error; the log-sum-exp too. Also at D = 64,
    # where the tables take neither the persistent grid nor the split.
    d = shape[-1]
    monkeypatch.setitem(attn.FWD_WS_PERSISTENT, (d, False), math.inf)
    monkeypatch.setattr(attn, "PERSISTENT_PROGRAMS", programs)
    q, k, v = qkv(*shape, torch.float16, "cuda")
    if reason := attn._ws_obstacle(q, k, v, q, False):
        pytest.skip(f"the warp-specialized forward cannot run here: {reason}")
    cfg = FWD_WS_CONFIGS[(d, False, torch.float16)]
    tiles = triton.cdiv(shape[3], cfg.block_m) * shape[0] * shape[1]
    used = min(tiles, runtime.sm_count(q.device), programs or tiles)
    results = {}
    for split in (True, False):
        monkeypatch.setattr(attn, "FWD_WS_SPLIT_TAIL", {(d, False): 0} if split else {})
        slots = attn._fwd_schedule(shape[3], shape[0] * shape[1], False, cfg.block_m, cfg.block_n, used, split).slots
        assert (slots > 0) == (split and tiles % used != 0)
        out = poisoned(q.shape, torch.float16, "cuda")
        results[split] = attention_fwd(q, k, v, out=out, method="warp_specialized")
        assert results[split][0] is out
    ref = attention_reference(q, k, v)
    (o, lse), (o_whole, _) = results[True], results[False]
    assert_close(o, ref, torch.float16)
    assert relative_error(o, ref) <= 2 * relative_error(torch_sdpa(q, k, v, False), ref) + 1e-7
    assert relative_error(o, ref) <= 1.1 * relative_error(o_whole, ref) + 1e-7
    assert_close(lse, attention_lse_reference(q, k, False), torch.float32)


@gpu_only
def test_warp_specialized_forward_in_cuda_graphs(monkeypatch):
    # Captured at a length run before (its schedule on the GPU: persistent, its last tiles split) and
    # at one not run before (a program per tile): each replay on new inputs matches an eager call on
    # them. The eager call at the second length runs persistent; it is shorter than the split's
    # threshold, so that it computes every tile as a program per tile does, bit for bit.
    monkeypatch.setattr(attn, "_SCHEDULES", collections.OrderedDict())
    monkeypatch.setattr(attn, "_CAPTURED_SCHEDULES", {})
    monkeypatch.setattr(attn, "PERSISTENT_PROGRAMS", 5)  # 32 tiles: the last two split
    monkeypatch.setitem(attn.FWD_WS_SPLIT_TAIL, (128, False), 1000)
    q, k, v = qkv(1, 4, 4, 1000, 128, torch.float16, "cuda")
    if reason := attn._ws_obstacle(q, k, v, q, False):
        pytest.skip(f"the warp-specialized forward cannot run here: {reason}")
    assert 1000 <= attn.FWD_WS_PERSISTENT[(128, False)]
    attention_fwd(q, k, v, method="warp_specialized")
    for n, persistent in ((1000, True), (999, False)):
        q, k, v = qkv(1, 4, 4, n, 128, torch.float16, "cuda")
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            o, lse = attention_fwd(q, k, v, method="warp_specialized")
        assert any(key[1] == n for key in attn._CAPTURED_SCHEDULES) == persistent
        for t in (q, k, v):
            t.copy_(random_tensor(t.shape, t.dtype, "cuda"))
        graph.replay()
        eager_o, eager_lse = attention_fwd(q, k, v, method="warp_specialized")
        assert torch.equal(o, eager_o) and torch.equal(lse, eager_lse)
        assert_close(o, attention_reference(q, k, v), torch.float16)


@gpu_only
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_warp_specialized_forward_reads_strided_inputs_on_gpu(head_dim, causal):
    # q, k, v read in place from a packed (B, N, 3, H, D) projection, 4 query heads on 2 key/value heads.
    packed = random_tensor((2, 300, 3, 4, head_dim), torch.float16, "cuda")
    q, k, v = (packed[:, :, i].transpose(1, 2) for i in range(3))
    k, v = k[:, :2], v[:, 2:]
    if reason := attn._ws_obstacle(q, k, v, q, causal):
        pytest.skip(f"the warp-specialized forward cannot run here: {reason}")
    o, lse = attention_fwd(q, k, v, causal, method="warp_specialized")
    assert_close(o, attention_reference(q, k, v, causal), torch.float16)
    assert_close(lse, attention_lse_reference(q, k, causal), torch.float32)


@gpu_only
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", [(1, 2, 2, 1, 128), (2, 3, 3, 17, 128), (1, 2, 2, 128, 128), (2, 4, 2, 1000, 128),
                                   (1, 4, 4, 4097, 128), (1, 2, 2, 1, 64), (2, 3, 3, 200, 64), (2, 4, 2, 1000, 64),
                                   (1, 8, 1, 300, 64), (1, 4, 4, 4097, 64)], ids=str)
def test_warp_specialized_backward_on_gpu(shape, causal, dtype):
    # One row, ragged blocks, an odd number of query blocks (the dQ turns end on either consumer),
    # grouped heads.
    check_ws_backward(shape, causal, dtype)


def check_ws_backward(shape, causal, dtype):
    # Every element of the poisoned gradients written, each within the table or twice torch's error.
    q, k, v = qkv(*shape, dtype, "cuda")
    do = random_tensor(q.shape, dtype, "cuda")
    if reason := attn._ws_bwd_obstacle(causal, q=q, k=k, v=v, do=do, dk=k, dv=v):
        pytest.skip(f"the warp-specialized backward cannot run here: {reason}")
    o, lse = attention_fwd(q, k, v, causal)
    grads = [poisoned(t.shape, dtype, "cuda") for t in (q, k, v)]
    dq, dk, dv = attention_bwd(do, q, k, v, o, lse, causal, dq=grads[0], dk=grads[1], dv=grads[2],
                               method="warp_specialized")
    assert dq is grads[0] and dk is grads[1] and dv is grads[2]
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    torch_grads = torch.autograd.grad(torch_sdpa(*leaves, causal), leaves, do)
    for ours, ref, theirs in zip((dq, dk, dv), reference_grads(q, k, v, do, causal), torch_grads, strict=True):
        assert_grad_close(ours, ref, theirs)


@gpu_only
@pytest.mark.parametrize("choice", ["BWD_WS_DQ_GROUPED", "BWD_WS_SPLIT_DQ"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_warp_specialized_backward_with_the_other_dq_choice_on_gpu(head_dim, causal, choice, monkeypatch):
    # The dQ buffer in the layout (rows or column groups), or split or whole, that the table does not
    # pick for this head dim and mask, on ragged blocks with grouped heads.
    monkeypatch.setattr(attn, choice, getattr(attn, choice) ^ {(head_dim, causal)})
    check_ws_backward((2, 4, 2, 1000, head_dim), causal, torch.float16)


@gpu_only
def test_grouped_query_heads_at_length_on_gpu():
    check_autograd(*qkv(1, 16, 4, 3000, 128, torch.bfloat16, "cuda"), True)


@gpu_only
@pytest.mark.large_memory
def test_offsets_past_2_31_elements():
    # 16512 heads of 1024 x 128: 2**31 + 2**24 elements in q, so a 32-bit offset to the last heads
    # would wrap around. One key/value head serves them all (grouped-query attention).
    B, H, N, D = 1, 2**14 + 128, 1024, 128
    q = torch.zeros((B, H, N, D), dtype=torch.float16, device="cuda")
    q[:, -1] = random_tensor((N, D), torch.float16, "cuda")
    k, v = (random_tensor((B, 1, N, D), torch.float16, "cuda") for _ in range(2))
    o = attention(q, k, v, True)
    assert_close(o[:, -1:], attention_reference(q[:, -1:], k, v, True), torch.float16)
