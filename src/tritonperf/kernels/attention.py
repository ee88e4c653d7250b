"""Fused scaled-dot-product attention, forward and backward: the fused-attention lesson's kernels.

For one head, with queries ``Q``, keys ``K`` and values ``V`` of shape ``(N, D)``,
``O = softmax(Q Kᵀ · sm_scale) V``; causal attention lets query ``i`` see keys ``0 … i`` only.
Written out, that is two matmuls around a row softmax of an ``N × N`` score matrix: ``4·N²·D``
operations against ``4·N·D`` elements moved (``N / 2`` operations a byte in half precision), so a
kernel that never writes the scores to memory is compute-bound once ``N`` passes a few hundred,
and one that does is bound by moving ``N²`` scores.

The forward kernel (FlashAttention's scheme) gives each program a block of ``BLOCK_M`` query rows
of one head and streams the keys and values past it in blocks of ``BLOCK_N``. It keeps, per row,
the running maximum of the scores and the running sum of their exponentials (both float32), and an
output accumulator; when a new block raises a row's maximum, the sum and the accumulator are
rescaled once for the whole block (online softmax). Scores live only in registers. ``exp2`` is
used instead of ``exp`` (one instruction on the GPU instead of a multiply and one), with
``log2(e)`` folded into the score scale. The log-sum-exp of every row (float32, ``(B, H, N)``) is
written for the backward pass. For causal attention, blocks above the diagonal are never visited
and only the blocks on it are masked.

The backward pass recomputes the probabilities ``P = exp(S - lse)`` from ``Q``, ``K`` and the
saved log-sum-exp instead of storing them, in three kernels:

* :func:`attention_bwd_preprocess_kernel`: ``delta = rowsum(dO ∘ O)`` (float32), the term that
  the softmax's gradient subtracts from every row: ``dS = P ∘ (dP − delta)`` with ``dP = dO Vᵀ``;
* :func:`attention_bwd_dkdv_kernel`: each program owns a block of key/value rows and loops over
  the query blocks that see it, accumulating ``dV = Pᵀ dO`` and ``dK = dSᵀ Q · sm_scale``;
* :func:`attention_bwd_dq_kernel`: each program owns a block of query rows and loops over the
  key/value blocks, accumulating ``dQ = dS K · sm_scale``.

Splitting ``dQ`` off costs two extra matmuls (recomputing ``S`` and ``dP``) but needs no atomic
additions: every program writes only the rows it owns, so results do not depend on timing.

On Hopper at ``D`` = 64 and 128 the backward runs :func:`attention_bwd_ws_kernel` instead, one
Gluon kernel for all three gradients (FlashAttention-3's scheme): two consumer warpgroups each own
a share of a block of key rows, a loader warp streams the query blocks, and ``dQ`` is added into a
float32 buffer with the TMA's reduce-add, one tile's worth per program and query block. Five
matmuls per block instead of seven, at the price of determinism: the float32 additions arrive in
any order, so under ``torch.use_deterministic_algorithms(True)`` the two kernels above run instead.

On Hopper, the forward at ``D`` = 64 and 128 runs :func:`attention_fwd_ws_kernel` instead (at
``D = 64`` from the lengths in :data:`WS_MIN_LENGTH`), the same algorithm written in Gluon
(Triton's lower-level dialect): one warp only loads key and value blocks into a ring of
shared-memory buffers, and two warpgroups (three at ``D = 64``) compute, each overlapping the
scores of the next block on the Tensor Cores with the softmax of the current one, and taking
turns with the others to issue its matmuls.

Grouped-query attention: ``k`` and ``v`` may have fewer heads than ``q`` (``H_q = G · H_kv``),
query head ``h`` reading key/value head ``h // G``. Each dK/dV program then loops over the ``G``
query heads of its group, so it sums their contributions itself, again without atomics.

On Hopper every kernel but the preprocessing one moves its blocks through tensor descriptors (TMA)
instead of tensors of pointers, where that was measured faster and the layout allows it
(``method="auto"``; see :func:`attention_fwd`): the copy engine computes the addresses and fills
rows past ``N`` with zeros, and the registers that address tiles took go to data. In the dK/dV
kernel those zeros also make the sequence mask unnecessary: a query row past ``N`` reads ``q = 0``,
``dO = 0``, ``lse = delta = 0``, and its terms in ``dK`` and ``dV`` are exactly zero.

Launch configurations come from small hand-written tables (:data:`FWD_CONFIGS`,
:data:`FWD_TMA_CONFIGS`, :data:`FWD_WS_CONFIGS`, :data:`BWD_DKDV_CONFIGS`, :data:`BWD_DQ_CONFIGS`,
:data:`BWD_DKDV_TMA_CONFIGS`, :data:`BWD_DQ_TMA_CONFIGS`) keyed by head dim, causality and dtype;
the kernels are not autotuned. In interpreter mode every launch uses small blocks
(:data:`INTERPRETER_CONFIGS`), so that small test shapes still span several blocks; the
interpreter does not run Gluon kernels, so there the warp-specialized forward never runs.
"""

from __future__ import annotations

import collections
import heapq
import math
from dataclasses import dataclass
from typing import Literal, NamedTuple

import torch
import triton
import triton.language as tl
from triton._C.libtriton import ir as triton_ir
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._core import builtin as gluon_builtin
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.language.nvidia.hopper import tma as gl_tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
from triton.tools.tensor_descriptor import TensorDescriptor

from .. import runtime, validation

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
FP8 = torch.float8_e4m3fn
# The forward also takes float8 inputs (no backward: training in float8 needs scaling recipes
# this package does not have); its output is 16-bit, bfloat16 by default.
FWD_DTYPES = (*SUPPORTED_DTYPES, FP8)
FP8_OUT_DTYPES = (torch.bfloat16, torch.float16)
HEAD_DIMS = (16, 32, 64, 128, 256)
# Hopper's float8 MMA takes the reduced dimension in steps of 32: Q Kᵀ over D needs D >= 32.
FP8_MIN_HEAD_DIM = 32
Direction = Literal["fwd", "bwd"]
Kernel = Literal["fwd", "fwd_tma", "fwd_ws", "bwd_dkdv", "bwd_dkdv_tma", "bwd_dq", "bwd_dq_tma", "bwd_ws"]
Method = Literal["auto", "pointers", "tma", "warp_specialized"]
METHODS = ("auto", "pointers", "tma", "warp_specialized")
# float32: the warp-specialized backward's dQ buffer
_GLUON_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32}

LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
LN2 = 0.6931471805599453  # ln(2): turns a base-2 logarithm into a natural one


# -- reference -----------------------------------------------------------------------------------
def attention_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """What :func:`attention` computes, in float64 with plain torch: ``softmax(Q Kᵀ · sm_scale) V``.

    Materializes every ``N × N`` score matrix: meant for checking results at small sizes. Causal
    masking lets query ``i`` see keys ``0 … i``. ``k`` and ``v`` may have fewer heads than ``q``
    (grouped-query attention): each is repeated over its group of query heads. Differentiable, so
    ``torch.autograd.grad`` of it gives reference gradients. Returns float64.
    """
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    group = q.shape[1] // k.shape[1]
    k64 = k.double().repeat_interleave(group, dim=1)
    v64 = v.double().repeat_interleave(group, dim=1)
    scores = torch.matmul(q.double(), k64.transpose(-2, -1)) * scale
    if causal:
        n = q.shape[2]
        above = torch.ones((n, n), dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v64)


def attention_lse_reference(
    q: torch.Tensor, k: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """The natural log-sum-exp of every row of scaled scores, ``(B, H, N)`` in float64: what the forward saves."""
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    k64 = k.double().repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scores = torch.matmul(q.double(), k64.transpose(-2, -1)) * scale
    if causal:
        n = q.shape[2]
        scores = scores.masked_fill(torch.ones((n, n), dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.logsumexp(scores, dim=-1)


# -- program order -------------------------------------------------------------------------------
@triton.jit
def _causal_order(i, zh, n_i, n_zh, HEAD_GROUP: tl.constexpr):
    # Causal programs of one head differ in work by their block index i. The GPU starts programs in
    # the order of their linear index (axis 0 fastest), so (i, zh) is renumbered: heads in groups of
    # HEAD_GROUP, and within a group every head's rank-0 program (its longest) starts before any
    # head's rank-1 one. The last programs to start are then the shortest of the last group, and fill
    # the gaps left by the long ones; a group's heads share the cache while they run.
    # HEAD_GROUP = 1 is one head at a time. Returns (rank, zh): rank 0 is the longest.
    lin = zh * n_i + i
    first = lin // (HEAD_GROUP * n_i) * HEAD_GROUP  # the group's first head
    size = tl.minimum(HEAD_GROUP, n_zh - first)  # the last group may be smaller
    within = lin - first * n_i
    return within // size, first + within % size


# -- forward kernel ------------------------------------------------------------------------------
@triton.jit
def _hide_keys(s, rows, cols, N, CAUSAL_MASK: tl.constexpr, SEQ_MASK: tl.constexpr):
    # Scores s[i, j] of query rows[i] and key cols[j], with -inf where the key is hidden: right of the
    # query (CAUSAL_MASK) or past the end of the sequence (SEQ_MASK). With neither flag, s as it is.
    if CAUSAL_MASK or SEQ_MASK:
        keep = tl.full([s.shape[1]], 1, tl.int1)[None, :]
        if CAUSAL_MASK:
            keep = keep & (cols[None, :] <= rows[:, None])
        if SEQ_MASK:
            keep = keep & (cols < N)[None, :]
        s = tl.where(keep, s, float("-inf"))
    return s


@triton.jit
def _load_tile(src, z, h, start, N, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, TMA: tl.constexpr,
               SEQ_MASK: tl.constexpr):
    # The [BLOCK, HEAD_DIM] tile of head h of batch z from row `start`. With TMA, src is the tensor's
    # descriptor, which fills rows past N with zeros; without, src holds the tile's pointers, and rows
    # past N are masked only where the block can reach them (SEQ_MASK).
    if TMA:
        return src.load([z, h, start, 0]).reshape(BLOCK, HEAD_DIM)
    elif SEQ_MASK:
        return tl.load(src, mask=(start + tl.arange(0, BLOCK) < N)[:, None], other=0.0)
    else:
        return tl.load(src)


@triton.jit
def _fwd_blocks(acc, l_i, m_i, q, k_src, v_src, z, h_kv, rows, start, end, N, qk_scale,
                stride_kn, stride_kk, stride_vn, stride_vk,
                BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL_MASK: tl.constexpr, SEQ_MASK: tl.constexpr,
                TMA: tl.constexpr):
    # Key/value blocks [start, end) for one block of queries, folded into the running state
    # (acc, l_i, m_i). The masks are compile-time switches: most blocks need none, and leaving
    # the comparisons and selects out of them keeps the inner loop to two matmuls and the softmax.
    # CAUSAL_MASK hides keys to the right of each query (blocks on the diagonal); SEQ_MASK hides keys
    # past the end of the sequence (the last, partial block). With TMA, k_src and v_src are tensor
    # descriptors of the whole (B, H_kv, N, D) tensors, which fill rows past N with zeros; without, they
    # point at this head's keys and values.
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    if not TMA:  # from here on k_src and v_src point at the current block's tile
        k_src = k_src + (start + offs_n)[:, None] * stride_kn + offs_d[None, :] * stride_kk
        v_src = v_src + (start + offs_n)[:, None] * stride_vn + offs_d[None, :] * stride_vk
    for start_n in tl.range(start, end, BLOCK_N):
        cols = start_n + offs_n
        k = _load_tile(k_src, z, h_kv, start_n, N, BLOCK_N, HEAD_DIM, TMA, SEQ_MASK)
        # float32 scores, not yet scaled, hidden keys at -inf. max_num_imprecise_acc matters for float8 only: on
        # Hopper its MMA would otherwise keep partial sums in a narrower accumulator across the block.
        qk = _hide_keys(tl.dot(q, tl.trans(k), max_num_imprecise_acc=HEAD_DIM), rows, cols, N, CAUSAL_MASK, SEQ_MASK)
        # Every row has at least one visible key by now (key 0, or its own position on the diagonal),
        # so m_new is finite and no -inf - -inf appears. sm_scale > 0, so the scaled maximum is the
        # maximum of the scaled scores; the launcher enforces that.
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.exp2(qk * qk_scale - m_new[:, None])  # one fused multiply-add per score, then exp2
        alpha = tl.exp2(m_i - m_new)  # how much the old maximum overstated the new one: 0 on the first block
        l_i = l_i * alpha + tl.sum(p, 1)
        v = _load_tile(v_src, z, h_kv, start_n, N, BLOCK_N, HEAD_DIM, TMA, SEQ_MASK)
        # The accumulator is rescaled once per block, then the block's contribution added in the MMA.
        # P goes into the second matmul in the inputs' dtype, as the Tensor Cores need (for float8
        # inputs that rounds each probability to 3 mantissa bits; the sum l_i keeps them in float32).
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], max_num_imprecise_acc=BLOCK_N)
        m_i = m_new
        if not TMA:
            k_src += BLOCK_N * stride_kn
            v_src += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.jit
def attention_fwd_kernel(
    q_src, k_src, v_src, o_src, lse_ptr,
    stride_qz, stride_qh, stride_qm, stride_qk,
    stride_kz, stride_kh, stride_kn, stride_kk,
    stride_vz, stride_vh, stride_vn, stride_vk,
    stride_oz, stride_oh, stride_om, stride_ok,
    H, N, GROUP, qk_scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, IS_CAUSAL: tl.constexpr,
    TMA: tl.constexpr, SKIP_BLOCKS: tl.constexpr = True, HEAD_GROUP: tl.constexpr = 1,
):
    # Program (i, z * H + h) computes query rows [i * BLOCK_M, (i + 1) * BLOCK_M) of head h of batch z
    # (causal: renumbered by _causal_order).
    # q_src ... o_src are pointers, or with TMA host-built tensor descriptors of the whole 4-D tensors
    # (blocks of 1 x 1 x rows x HEAD_DIM; the copy engine then computes the addresses, clips at N, and
    # the registers that pointer tiles would take are free). Without TMA, the base offsets of a head
    # are 64-bit (B * H * N * D can pass 2**31); offsets within one head stay 32-bit, which the
    # launcher checks, so the per-element address arithmetic stays cheap.
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    if IS_CAUSAL:  # causal work grows with the block's row: the longest first
        rank, zh = _causal_order(start_m, zh, tl.num_programs(0), tl.num_programs(1), HEAD_GROUP)
        start_m = tl.num_programs(0) - 1 - rank
    z = zh // H
    h = zh % H
    h_kv = h // GROUP  # grouped-query attention: GROUP query heads share one key/value head
    m0 = start_m * BLOCK_M
    rows = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = rows < N
    if TMA:
        k_base = k_src
        v_base = v_src
        q = q_src.load([z, h, m0, 0]).reshape(BLOCK_M, HEAD_DIM)
    else:
        k_base = k_src + z.to(tl.int64) * stride_kz + h_kv.to(tl.int64) * stride_kh
        v_base = v_src + z.to(tl.int64) * stride_vz + h_kv.to(tl.int64) * stride_vh
        q_base = q_src + z.to(tl.int64) * stride_qz + h.to(tl.int64) * stride_qh
        q = tl.load(q_base + rows[:, None] * stride_qm + offs_d[None, :] * stride_qk, mask=row_ok[:, None], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running maximum of the scaled scores (base 2)
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(score - m_i)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)  # running sum of exp2(score - m_i) * v
    if IS_CAUSAL and not SKIP_BLOCKS:
        # Every key block, each one masked: the work of full attention, half of it thrown away by the
        # mask, as when the condition is tested per score instead of per block (the lesson's
        # comparison; never the default). Key 0 is in the first block and visible to every row.
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, z, h_kv, rows, 0, N, N, qk_scale,
                                    stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, True, True, TMA)
    elif IS_CAUSAL:
        # Blocks left of the diagonal are seen whole by every row: no mask. BLOCK_M is a multiple of
        # BLOCK_N, so they end exactly at m0. Then the diagonal band [m0, m0 + BLOCK_M), masked; the
        # blocks right of it are never loaded.
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, z, h_kv, rows, 0, m0, N, qk_scale,
                                    stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, False, False, TMA)
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, z, h_kv, rows, m0, tl.minimum(m0 + BLOCK_M, N), N,
                                    qk_scale, stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, True, True,
                                    TMA)
    else:
        # Whole blocks unmasked, then the partial last block (a loop of zero or one iteration).
        n_whole = N - N % BLOCK_N
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, z, h_kv, rows, 0, n_whole, N, qk_scale,
                                    stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, False, False, TMA)
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, z, h_kv, rows, n_whole, N, N, qk_scale,
                                    stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, False, True, TMA)

    # l_i >= 1 in every row (the maximum's own term is exp2(0)), so the division is safe.
    acc = acc / l_i[:, None]
    if TMA:
        o_src.store([z, h, m0, 0], acc.to(o_src.dtype).reshape(1, 1, BLOCK_M, HEAD_DIM))
    else:
        o_base = o_src + z.to(tl.int64) * stride_oz + h.to(tl.int64) * stride_oh
        o_ptrs = o_base + rows[:, None] * stride_om + offs_d[None, :] * stride_ok
        tl.store(o_ptrs, acc.to(o_src.dtype.element_ty), mask=row_ok[:, None])
    lse = (m_i + tl.log2(l_i)) * 0.6931471805599453  # natural log-sum-exp of the scaled scores (ln 2 = 0.693...)
    tl.store(lse_ptr + zh.to(tl.int64) * N + rows, lse, mask=row_ok)


# -- forward kernel, warp-specialized (Gluon, Hopper) ----------------------------------------------
# The same forward as attention_fwd_kernel, written in Gluon, Triton's lower-level dialect, where the
# program places work on its warps itself: shared-memory buffers, mbarriers, TMA copies and
# asynchronous warpgroup MMAs (wgmma) are explicit. A program of BLOCK_M query rows runs one warp that
# only issues TMA copies of K and V blocks into a ring of NUM_STAGES buffers, and BLOCK_M / 64
# consumer warpgroups (4 warps each) of 64 rows: two at D = 128, three at D = 64. All of them read
# every key/value block from the shared ring, so a block is loaded once for BLOCK_M rows.
#
# Within a consumer, the scores of block j+1 are computed on the Tensor Cores while the softmax of
# block j runs on the other units; then P_j V_j accumulates while the next softmax runs. Per step:
# issue S_{j+1} = Q K_{j+1}ᵀ and O += P_j V_j (both asynchronous), wait for S_{j+1} only, take its
# softmax, then wait for O. In attention_fwd_kernel every MMA's result is waited for before the
# next instruction that could overlap it.
#
# Between consumers, a "ping-pong": they take turns to issue their matmuls, in a ring of mbarriers
# (consumer c waits on turn[c], issues, then arrives on turn[c + 1]). The Tensor Cores then run one
# consumer's matmuls while the others compute their softmax, instead of all of them asking for the
# Tensor Cores at once and then all waiting on the exponentials.
#
# Constexpr arguments do not cross into the partitions (they arrive as tensors), so the partitions
# read block sizes from the shapes of the shared buffers they are given, and causality as a runtime 0/1.
# Gluon's TMA copies were renamed after triton 3.6 (async_copy_global_to_shared -> async_load, ...).
_tma_load = getattr(gl_tma, "async_load", None) or gl_tma.async_copy_global_to_shared
_tma_store = getattr(gl_tma, "async_store", None) or gl_tma.async_copy_shared_to_global
WS_ROWS = 64  # query rows per consumer warpgroup: one wgmma tile's height (4 warps x 16 rows)
_WS_ROWS = gl.constexpr(WS_ROWS)


@gluon.constexpr_function
def _wgmma_layout(width):
    # wgmma's register layout for one warpgroup's tile: 4 warps along the rows, instructions 16 rows
    # tall and `width` columns wide (16-bit inputs: 16 deep).
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, width, 16])


@gluon.constexpr_function
def _dq_columns(block_shape):
    # The columns of dQ in a block of the backward's float32 dQ buffer: [1, 1, ROWS, columns] in
    # rows, [1, 1, columns / 8, R, E] in column groups (see BWD_WS_DQ_GROUPED).
    return block_shape[2] * 8 if len(block_shape) == 5 else block_shape[3]


@gluon.jit
def _ws_fwd_tile(i, zh, n_i, n_zh, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, IS_CAUSAL: gl.constexpr,
                 HEAD_GROUP: gl.constexpr):
    # Tile (i, zh) of the (n_i, n_zh) grid of tiles, in the order programs start (i fastest): query
    # rows [m0, m0 + BLOCK_M) of flat head zh, against its first n_blocks key blocks. Causal, tiles
    # are renumbered by _causal_order, the longest first, and where BLOCK_M does not divide N the
    # whole consumer blocks that would lie past N lie before row 0 instead (m0 < 0 in the first
    # tile): their consumers then idle in the shortest tile of the head, not in its longest (see
    # _FWD_WS_TILES).
    if IS_CAUSAL:
        rank, zh = _causal_order(i, zh, n_i, n_zh, HEAD_GROUP)
        i = n_i - 1 - rank
    m0 = i * BLOCK_M
    n_blocks = gl.cdiv(N, BLOCK_N)
    if IS_CAUSAL:  # up to the block that holds the tile's last row
        m0 -= (n_i * BLOCK_M - N) // _WS_ROWS * _WS_ROWS
        n_blocks = gl.minimum(n_blocks, gl.cdiv(m0 + BLOCK_M, BLOCK_N))
    return zh, m0, n_blocks


# Entries a visit takes in a row of the persistent forward's schedule (see _fwd_schedule).
SCHED_ENTRY = 5
_SCHED_ENTRY = gl.constexpr(SCHED_ENTRY)


@gluon.jit
def _ws_sched_tile(sched, visit):
    # The visit-th entry of a program's row of the persistent schedule (see _fwd_schedule): a tile's
    # flat head and first row as _ws_fwd_tile gives them, the first and the number of its key blocks
    # that this visit reads, and its slot in the partial buffers (-1: the whole tile, no partials).
    entry = sched + 1 + _SCHED_ENTRY * visit
    return gl.load(entry), gl.load(entry + 1), gl.load(entry + 2), gl.load(entry + 3), gl.load(entry + 4)


@gluon.jit
def _ws_load(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty,
             pid, pid_zh, sched, n_i, n_zh, H, N, GROUP, CONSUMERS: gl.constexpr, IS_CAUSAL: gl.constexpr,
             HEAD_GROUP: gl.constexpr, PERSISTENT: gl.constexpr):
    # The loader warp: its program's tile, or when PERSISTENT the entries of its row of the schedule
    # (see _ws_sched_tile).
    ROWS: gl.constexpr = q_smem.shape[3]  # a consumer's
    BLOCK_N: gl.constexpr = k_smem.shape[3]
    if PERSISTENT:
        kv = 0  # key blocks loaded by earlier tiles: the ring's position
        for visit in range(gl.load(sched)):
            zh, m0, kb0, n_blocks, _ = _ws_sched_tile(sched, visit)
            _ws_load_tile(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty,
                          v_empty, zh, m0, kb0, n_blocks, kv, visit, H, GROUP, CONSUMERS)
            kv += n_blocks
    else:
        zh, m0, n_blocks = _ws_fwd_tile(pid, pid_zh, n_i, n_zh, N, CONSUMERS * ROWS, BLOCK_N, IS_CAUSAL, HEAD_GROUP)
        _ws_load_tile(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty,
                      v_empty, zh, m0, 0, n_blocks, 0, 0, H, GROUP, CONSUMERS)


@gluon.jit
def _ws_load_tile(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty,
                  zh, m0, kb0, n_blocks, kv, t, H, GROUP, CONSUMERS: gl.constexpr):
    # A tile (see _ws_fwd_tile), the program's t-th: every consumer's query block once, then key
    # blocks kb0 ... kb0 + n_blocks - 1 and their values into the ring, from its position kv on. Query
    # blocks alternate between two sets of buffers by tile, so that a tile's can load while the
    # consumers finish the tile before.
    ROWS: gl.constexpr = q_smem.shape[3]  # a consumer's
    BLOCK_N: gl.constexpr = k_smem.shape[3]
    NUM_STAGES: gl.constexpr = k_smem.shape[0]
    z = zh // H
    h = zh % H
    buf = t % 2
    mbarrier.wait(q_empty.index(buf), ((t // 2) & 1) ^ 1)
    for i in gl.static_range(CONSUMERS):
        mbarrier.expect(q_bars.index(buf * CONSUMERS + i), q_desc.block_type.nbytes)
        _tma_load(q_desc, [z, h, m0 + i * ROWS, 0], q_bars.index(buf * CONSUMERS + i),
                  q_smem.index(buf * CONSUMERS + i))
    # Keys run one block ahead of values: a consumer is done with K_j once it has S_j, and with V_j
    # only after P_j V_j, one step later. A slot is free when every consumer has arrived on its
    # "empty" barrier; the first pass over the ring waits on nothing (parity 1 of a fresh barrier).
    for j in range(n_blocks + 1):
        if j < n_blocks:
            slot = (kv + j) % NUM_STAGES
            mbarrier.wait(k_empty.index(slot), (((kv + j) // NUM_STAGES) & 1) ^ 1)
            mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
            _tma_load(k_desc, [z, h // GROUP, (kb0 + j) * BLOCK_N, 0], k_ready.index(slot), k_smem.index(slot))
        if j > 0:
            slot = (kv + j - 1) % NUM_STAGES
            mbarrier.wait(v_empty.index(slot), (((kv + j - 1) // NUM_STAGES) & 1) ^ 1)
            mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
            _tma_load(v_desc, [z, h // GROUP, (kb0 + j - 1) * BLOCK_N, 0], v_ready.index(slot), v_smem.index(slot))


@gluon.jit
def _ws_softmax(s, m_i, l_i, rows, start_n, N, qk_scale, causal, MASK: gl.constexpr):
    # One block's step of the online softmax, as in _fwd_blocks. MASK hides keys past N and, when
    # causal, right of each row; rows past N (zeros from the TMA) still see the first key of their
    # tile or piece (key 0 where causal), so no row is empty.
    if MASK:
        cols = start_n + gl.arange(0, s.shape[1], layout=gl.SliceLayout(0, s.type.layout))
        keep = (cols < N)[None, :] & ((cols[None, :] <= rows[:, None]) | (causal == 0))
        s = gl.where(keep, s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.sum(p, 1)
    return p, m_new, l_i, alpha


@gluon.jit
def _ws_turn(turn, me, step):
    # Wait until it is consumer `me`'s turn to issue its matmuls of the given step (every consumer
    # takes the same steps: one per key block its program loads, and one more). Consumer 0 opens step
    # 0 on a fresh barrier (parity 1 passes at once); every later turn is handed over by the
    # previous consumer in the ring.
    mbarrier.wait(turn.index(me), (step & 1) ^ (me == 0).to(gl.int32))


@gluon.jit
def _ws_pass(turn, me):
    mbarrier.arrive(turn.index((me + 1) % turn.shape[0]))


@gluon.jit
def _ws_consume(q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty, turn, o_desc, lse_ptr,
                part_o_ptr, part_lse_ptr, pid, pid_zh, sched, n_i, n_zh, H, N, qk_scale, causal, me,
                CONSUMERS: gl.constexpr, IS_CAUSAL: gl.constexpr, HEAD_GROUP: gl.constexpr, Q_REGS: gl.constexpr,
                PERSISTENT: gl.constexpr):
    # Consumer `me` of the program: its ROWS rows of the program's tile, or of the tiles of its row
    # of the schedule when PERSISTENT (see _ws_load).
    ROWS: gl.constexpr = q_smem.shape[3]
    BLOCK_N: gl.constexpr = k_smem.shape[3]
    if PERSISTENT:
        kv = 0  # key blocks of earlier tiles
        step = 0  # turns of earlier tiles: one per key block, and one more
        for visit in range(gl.load(sched)):
            zh, m0, kb0, n_loaded, slot = _ws_sched_tile(sched, visit)
            # The consumer's first row in the partial buffers; negative for a whole tile (slot -1).
            part = slot * (CONSUMERS * ROWS) + me * ROWS
            buf = visit % 2  # the tile's set of query buffers (see _ws_load_tile)
            _ws_consume_tile(q_smem.index(buf * CONSUMERS + me), k_smem, v_smem, q_bars.index(buf * CONSUMERS + me),
                             (visit // 2) & 1, k_ready, v_ready, k_empty, v_empty, turn, o_desc, lse_ptr, part_o_ptr,
                             part_lse_ptr, part, zh // H, zh % H, zh, m0 + me * ROWS, N, kb0, n_loaded, kv, step,
                             qk_scale, causal, me, Q_REGS)
            mbarrier.arrive(q_empty.index(buf))
            kv += n_loaded
            step += n_loaded + 1
    else:
        zh, m0, n_loaded = _ws_fwd_tile(pid, pid_zh, n_i, n_zh, N, CONSUMERS * ROWS, BLOCK_N, IS_CAUSAL, HEAD_GROUP)
        _ws_consume_tile(q_smem.index(me), k_smem, v_smem, q_bars.index(me), 0, k_ready, v_ready, k_empty, v_empty,
                         turn, o_desc, lse_ptr, part_o_ptr, part_lse_ptr, -1, zh // H, zh % H, zh, m0 + me * ROWS, N,
                         0, n_loaded, 0, 0, qk_scale, causal, me, Q_REGS)


@gluon.jit
def _ws_consume_tile(q_smem, k_smem, v_smem, q_bar, q_phase, k_ready, v_ready, k_empty, v_empty, turn, o_desc,
                     lse_ptr, part_o_ptr, part_lse_ptr, part, z, h, zh, m0, N, kb0, n_loaded, kv, step, qk_scale,
                     causal, me, Q_REGS: gl.constexpr):
    # One tile of a consumer warpgroup: rows [m0, m0 + ROWS) of head h of batch z, against the n_loaded
    # key blocks from block kb0 on that its program loads; causal (kb0 = 0), it reads only the blocks
    # up to its own last row. Block j of the tile is block kv + j of the ring, and its turn is step + j.
    # Where part >= 0 the blocks are a piece of the keys (see _fwd_schedule): the rows' output over
    # them and its log2-sum-exp go to rows part ... part + ROWS - 1 of the partial buffers, for
    # attention_fwd_combine_kernel to merge.
    ROWS: gl.constexpr = q_smem.shape[2]
    HEAD_DIM: gl.constexpr = q_smem.shape[3]
    BLOCK_N: gl.constexpr = k_smem.shape[3]
    NUM_STAGES: gl.constexpr = k_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    # P enters the second MMA from registers, in its operand layout.
    s_layout: gl.constexpr = _wgmma_layout(BLOCK_N)
    o_layout: gl.constexpr = _wgmma_layout(HEAD_DIM)
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)

    # BLOCK_N is a multiple of ROWS and m0 of ROWS, so the consumer's rows lie in one key block: causal,
    # its diagonal is its last block, and every block before it is left of all its rows (unmasked).
    n_blocks = n_loaded
    if causal != 0:
        n_blocks = gl.minimum(n_loaded, gl.cdiv(m0 + ROWS, BLOCK_N))
    rows = m0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
    q = q_smem.reshape([ROWS, HEAD_DIM])
    m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([ROWS], gl.float32, layout=gl.SliceLayout(1, s_layout))
    acc = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
    no_scores = gl.zeros([ROWS, BLOCK_N], gl.float32, layout=s_layout)  # use_acc=False ignores it

    mbarrier.wait(q_bar, q_phase)  # also where unused: the loader reuses the buffer after this load
    if (m0 >= N) | (m0 < 0):
        # Rows outside the sequence (past its end in the last tile, or before row 0 in the first
        # causal tile; see _ws_fwd_tile): nothing to compute. The program's blocks are released
        # unread and the turns taken empty, block 0's too.
        _ws_turn(turn, me, step)
        _ws_pass(turn, me)
        _ws_release(k_ready, v_ready, k_empty, v_empty, turn, me, kv, step, 0, n_loaded)
    else:
        # Block 0 alone: its scores, then its softmax. Masked whatever the block: where nothing is
        # hidden the mask changes nothing, and the block may be the last one.
        if Q_REGS:  # Q as the A operand of every S = Q Kᵀ from registers: read from shared memory once
            qa = q.load(gl.DotOperandLayout(operand_index=0, parent=s_layout, k_width=2))
        else:
            qa = q
        first = kv % NUM_STAGES
        mbarrier.wait(k_ready.index(first), (kv // NUM_STAGES) & 1)
        _ws_turn(turn, me, step)
        s = warpgroup_mma(qa, k_smem.index(first).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)), no_scores,
                          use_acc=False, is_async=True)
        _ws_pass(turn, me)
        s = warpgroup_mma_wait(0, deps=(s,))
        mbarrier.arrive(k_empty.index(first))
        p, m_i, l_i, alpha = _ws_softmax(s, m_i, l_i, rows, kb0 * BLOCK_N, N, qk_scale, causal, True)
        p = gl.convert_layout(p.to(dtype), p_layout)
        for j in range(1, n_blocks):
            slot = (kv + j) % NUM_STAGES
            prev = (kv + j - 1) % NUM_STAGES
            mbarrier.wait(k_ready.index(slot), ((kv + j) // NUM_STAGES) & 1)
            _ws_turn(turn, me, step + j)
            s = warpgroup_mma(qa, k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)), no_scores,
                              use_acc=False, is_async=True)
            mbarrier.wait(v_ready.index(prev), ((kv + j - 1) // NUM_STAGES) & 1)
            acc = acc * gl.convert_layout(alpha, o_rows)[:, None]
            acc = warpgroup_mma(p, v_smem.index(prev).reshape([BLOCK_N, HEAD_DIM]), acc, is_async=True)
            _ws_pass(turn, me)
            s = warpgroup_mma_wait(1, deps=(s,))  # MMAs finish in order: S_j is done, P_{j-1} V_{j-1} may not be
            mbarrier.arrive(k_empty.index(slot))
            if j == n_blocks - 1:  # the last block: partial, or on the causal diagonal
                p_next, m_i, l_i, alpha = _ws_softmax(s, m_i, l_i, rows, (kb0 + j) * BLOCK_N, N, qk_scale, causal,
                                                      True)
            else:
                p_next, m_i, l_i, alpha = _ws_softmax(s, m_i, l_i, rows, (kb0 + j) * BLOCK_N, N, qk_scale, causal,
                                                      False)
            # p's registers are the running MMA's operand: they stay untouched until it is waited for.
            acc, p = warpgroup_mma_wait(0, deps=(acc, p))
            mbarrier.arrive(v_empty.index(prev))
            p = gl.convert_layout(p_next.to(dtype), p_layout)
        last = (kv + n_blocks - 1) % NUM_STAGES
        mbarrier.wait(v_ready.index(last), ((kv + n_blocks - 1) // NUM_STAGES) & 1)
        _ws_turn(turn, me, step + n_blocks)
        acc = acc * gl.convert_layout(alpha, o_rows)[:, None]
        acc = warpgroup_mma(p, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), acc, is_async=True)
        _ws_pass(turn, me)
        acc, p = warpgroup_mma_wait(0, deps=(acc, p))
        mbarrier.arrive(v_empty.index(last))
        # The blocks the program loads for its later rows.
        _ws_release(k_ready, v_ready, k_empty, v_empty, turn, me, kv, step, n_blocks, n_loaded)

        # l_i >= 1 in every row, as in attention_fwd_kernel (a piece's first key is left of every row).
        # The output goes out through the query's buffer, no longer read; the TMA store drops rows past N.
        acc = acc / gl.convert_layout(l_i, o_rows)[:, None]
        if part < 0:
            gl.store(lse_ptr + zh.to(gl.int64) * N + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453, mask=rows < N)
            q.store(acc.to(dtype))
            fence_async_shared()
            _tma_store(o_desc, [z, h, m0, 0], q_smem)
            gl_tma.store_wait(0)
        else:
            part_rows = part + gl.arange(0, ROWS, layout=o_rows)
            cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, o_layout))
            gl.store(part_o_ptr + part_rows[:, None] * HEAD_DIM + cols[None, :], acc)
            gl.store(part_lse_ptr + part + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout)), m_i + gl.log2(l_i))


@gluon.jit
def _ws_release(k_ready, v_ready, k_empty, v_empty, turn, me, kv, step, first, n_loaded):
    # A consumer's blocks first ... n_loaded - 1 of its tile (ring blocks kv + j), released unread,
    # in order (a slot's "ready" first, so that an arrival counts for this block's use of the slot),
    # with their turns taken empty (block j's turn, after the tile's first, is step + j + 1).
    NUM_STAGES: gl.constexpr = k_ready.shape[0]
    for j in range(first, n_loaded):
        slot = (kv + j) % NUM_STAGES
        mbarrier.wait(k_ready.index(slot), ((kv + j) // NUM_STAGES) & 1)
        mbarrier.arrive(k_empty.index(slot))
        mbarrier.wait(v_ready.index(slot), ((kv + j) // NUM_STAGES) & 1)
        mbarrier.arrive(v_empty.index(slot))
        _ws_turn(turn, me, step + j + 1)
        _ws_pass(turn, me)


@gluon.jit
def attention_fwd_ws_kernel(
    q_desc, k_desc, v_desc, o_desc, lse_ptr, sched_ptr, SCHED_WIDTH, part_o_ptr, part_lse_ptr, ZH, H, N, GROUP,
    qk_scale,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, NUM_STAGES: gl.constexpr, IS_CAUSAL: gl.constexpr,
    CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr, HEAD_GROUP: gl.constexpr = 1, Q_REGS: gl.constexpr = False,
    PERSISTENT: gl.constexpr = False,
):
    # Tiles of query rows [i * BLOCK_M, (i + 1) * BLOCK_M) of flat head zh = z * H + h: the grid is
    # (cdiv(N, BLOCK_M), ZH), one tile per program numbered by _ws_fwd_tile, or when PERSISTENT
    # (P,), program p taking the tiles of row p of the schedule at sched_ptr (SCHED_WIDTH entries a
    # row, see _fwd_schedule). ROWS rows of a tile per consumer warpgroup. q_desc ... o_desc are
    # host-built descriptors of the whole 4-D tensors, in blocks of 1 x 1 x rows x D (ROWS rows for q
    # and o). The launch's 4 warps are the first consumer; the other consumers (4 warps each) and the
    # loader (1 warp) are extra warps, given CONSUMER_REGS and LOADER_REGS registers a thread.
    # Q_REGS: each consumer holds its Q in registers (see FWD_WS_Q_REGISTERS). part_o_ptr and
    # part_lse_ptr: the float32 partial buffers of the schedule's split tiles (see _ws_consume_tile).
    ROWS: gl.constexpr = q_desc.block_type.shape[2]
    CONSUMERS: gl.constexpr = BLOCK_M // ROWS
    pid = gl.program_id(0)
    pid_zh = gl.program_id(1)  # the grid is (n_i, ZH), or (P,) when PERSISTENT
    n_i = gl.cdiv(N, BLOCK_M)
    sched = sched_ptr + pid * SCHED_WIDTH  # PERSISTENT: this program's row of the schedule

    # Two sets of query buffers (the tile's and the next one's), each consumer's at buf * CONSUMERS + c.
    Q_SETS: gl.constexpr = 2 if PERSISTENT else 1
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [Q_SETS * CONSUMERS] + q_desc.block_type.shape, q_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [NUM_STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [NUM_STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_bars = gl.allocate_shared_memory(gl.int64, [Q_SETS * CONSUMERS, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(Q_SETS * CONSUMERS):
        mbarrier.init(q_bars.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(q_empty.index(i), count=CONSUMERS)  # every consumer has stored its output
    for i in gl.static_range(CONSUMERS):
        mbarrier.init(turn.index(i), count=1)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=CONSUMERS)  # one arrival per consumer
        mbarrier.init(v_empty.index(i), count=CONSUMERS)

    c0 = pid * 0  # the consumers' numbers c0, c0 + 1, ... as tensors
    causal = c0 + IS_CAUSAL
    # A launch turns an integer argument equal to 1 into a constant: as tensors either way.
    ZH = c0 + ZH
    H = c0 + H
    GROUP = c0 + GROUP
    # The partition list is built when the kernel is traced, from literal entries: one list per
    # number of consumers (CONSUMERS is 2 or 3: the table holds no other, and a test checks it).
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_ws_consume, (q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty, turn, o_desc,
                           lse_ptr, part_o_ptr, part_lse_ptr, pid, pid_zh, sched, n_i, ZH, H, N, qk_scale, causal,
                           c0, CONSUMERS, IS_CAUSAL, HEAD_GROUP, Q_REGS, PERSISTENT)),
            (_ws_consume, (q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty, turn, o_desc,
                           lse_ptr, part_o_ptr, part_lse_ptr, pid, pid_zh, sched, n_i, ZH, H, N, qk_scale, causal,
                           c0 + 1, CONSUMERS, IS_CAUSAL, HEAD_GROUP, Q_REGS, PERSISTENT)),
            (_ws_load, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty,
                        v_empty, pid, pid_zh, sched, n_i, ZH, H, N, GROUP, CONSUMERS, IS_CAUSAL, HEAD_GROUP, PERSISTENT)),
        ], [4, 1], [CONSUMER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([
            (_ws_consume, (q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty, turn, o_desc,
                           lse_ptr, part_o_ptr, part_lse_ptr, pid, pid_zh, sched, n_i, ZH, H, N, qk_scale, causal,
                           c0, CONSUMERS, IS_CAUSAL, HEAD_GROUP, Q_REGS, PERSISTENT)),
            (_ws_consume, (q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty, turn, o_desc,
                           lse_ptr, part_o_ptr, part_lse_ptr, pid, pid_zh, sched, n_i, ZH, H, N, qk_scale, causal,
                           c0 + 1, CONSUMERS, IS_CAUSAL, HEAD_GROUP, Q_REGS, PERSISTENT)),
            (_ws_consume, (q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty, v_empty, turn, o_desc,
                           lse_ptr, part_o_ptr, part_lse_ptr, pid, pid_zh, sched, n_i, ZH, H, N, qk_scale, causal,
                           c0 + 2, CONSUMERS, IS_CAUSAL, HEAD_GROUP, Q_REGS, PERSISTENT)),
            (_ws_load, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, q_empty, k_ready, v_ready, k_empty,
                        v_empty, pid, pid_zh, sched, n_i, ZH, H, N, GROUP, CONSUMERS, IS_CAUSAL, HEAD_GROUP, PERSISTENT)),
        ], [4, 4, 1], [CONSUMER_REGS, CONSUMER_REGS, LOADER_REGS])


@triton.jit
def attention_fwd_combine_kernel(
    part_o_ptr, part_lse_ptr, splits_ptr, o_ptr, lse_ptr, stride_oz, stride_oh, stride_om, stride_od, H, N,
    BLOCK_M: tl.constexpr, ROWS: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    # Rows [c * ROWS, (c + 1) * ROWS) of split tile t of the persistent forward, for program (t, c)
    # (row t of splits: flat head, first row, first slot and number of pieces; see _fwd_schedule).
    # Each piece left the tile's output over its own key blocks in float32 rows slot * BLOCK_M ...
    # of part_o, normalized, and their log2-sum-exp in part_lse. Weighted by each piece's share of
    # the whole sum, they make the tile's rows of o and lse.
    t = tl.program_id(0)
    zh = tl.load(splits_ptr + 4 * t).to(tl.int64)
    m0 = tl.load(splits_ptr + 4 * t + 1)
    first = tl.load(splits_ptr + 4 * t + 2)
    pieces = tl.load(splits_ptr + 4 * t + 3)
    r = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, HEAD_DIM)
    rows = m0 + r
    keep = rows < N  # rows past N may never have been computed: not read
    m_i = tl.full([ROWS], float("-inf"), tl.float32)
    l_i = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, HEAD_DIM], tl.float32)
    for i in range(pieces):
        slot_rows = (first + i) * BLOCK_M + r
        lse_i = tl.load(part_lse_ptr + slot_rows, mask=keep, other=0.0)
        o_i = tl.load(part_o_ptr + slot_rows[:, None] * HEAD_DIM + cols[None, :], mask=keep[:, None], other=0.0)
        m_new = tl.maximum(m_i, lse_i)
        alpha = tl.exp2(m_i - m_new)
        w = tl.exp2(lse_i - m_new)
        acc = acc * alpha[:, None] + o_i * w[:, None]
        l_i = l_i * alpha + w
        m_i = m_new
    o = o_ptr + zh // H * stride_oz + zh % H * stride_oh + rows[:, None] * stride_om + cols[None, :] * stride_od
    tl.store(o, (acc / l_i[:, None]).to(o_ptr.dtype.element_ty), mask=keep[:, None])
    tl.store(lse_ptr + zh * N + rows, (m_i + tl.log2(l_i)) * 0.6931471805599453, mask=keep)


# -- backward kernels ----------------------------------------------------------------------------
@triton.jit
def attention_bwd_preprocess_kernel(
    o_ptr, do_ptr, delta_ptr, lse_ptr, lse2_ptr,
    stride_oz, stride_oh, stride_om, stride_ok,
    stride_doz, stride_doh, stride_dom, stride_dok,
    H, N, N_OUT,
    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, LSE2: tl.constexpr = False,
):
    # delta = rowsum(dO * O), float32, one value per query row: the same for every key, so it is
    # computed once here instead of once per key block in the gradient kernels. It is written in
    # rows of N_OUT >= N entries per head, 0 past N. With LSE2, also lse2 = lse * log2(e) in the
    # same rows, +inf past N (the warp-specialized kernel's inputs: with them a query row past N
    # gets probability exp2(s - inf) = 0 exactly).
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = (zh // H).to(tl.int64)
    h = (zh % H).to(tl.int64)
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = (rows < N)[:, None]
    o = tl.load(o_ptr + z * stride_oz + h * stride_oh + rows[:, None] * stride_om + offs_d[None, :] * stride_ok,
                mask=row_ok, other=0.0)
    do = tl.load(do_ptr + z * stride_doz + h * stride_doh + rows[:, None] * stride_dom + offs_d[None, :] * stride_dok,
                 mask=row_ok, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)
    tl.store(delta_ptr + zh.to(tl.int64) * N_OUT + rows, delta, mask=rows < N_OUT)
    if LSE2:
        lse = tl.load(lse_ptr + zh.to(tl.int64) * N + rows, mask=rows < N, other=float("inf"))
        tl.store(lse2_ptr + zh.to(tl.int64) * N_OUT + rows, lse * 1.4426950408889634, mask=rows < N_OUT)


@triton.jit
def attention_dq_ungroup_kernel(
    dq32_ptr, dq_ptr,
    stride_dqz, stride_dqh, stride_dqm, stride_dqk,
    H, N, N_PAD,
    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    # The warp-specialized backward's float32 dQ buffer in column groups, (B * H, HEAD_DIM / 8, N_PAD,
    # 8), to dQ in its own dtype and strides: BLOCK_M rows of every group, side by side.
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = (zh // H).to(tl.int64)
    h = (zh % H).to(tl.int64)
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    groups = tl.arange(0, HEAD_DIM // 8)
    offs_e = tl.arange(0, 8)
    src = (dq32_ptr + zh.to(tl.int64) * HEAD_DIM * N_PAD + groups[:, None, None] * (N_PAD * 8)
           + rows[None, :, None] * 8 + offs_e[None, None, :])
    x = tl.load(src, mask=(rows < N)[None, :, None], other=0.0)
    x = tl.reshape(tl.permute(x, (1, 0, 2)), (BLOCK_M, HEAD_DIM))
    offs_d = tl.arange(0, HEAD_DIM)
    dst = dq_ptr + z * stride_dqz + h * stride_dqh + rows[:, None] * stride_dqm + offs_d[None, :] * stride_dqk
    tl.store(dst, x.to(dq_ptr.dtype.element_ty), mask=(rows < N)[:, None])


@triton.jit
def _dkdv_blocks(dk, dv, k, v, q_src, do_src, lse_row, delta_row, z, h, cols, start, end, N, qk_scale,
                 stride_qm, stride_qk, stride_dom, stride_dok,
                 BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL_MASK: tl.constexpr, SEQ_MASK: tl.constexpr,
                 TMA: tl.constexpr):
    # Query blocks [start, end) of query head h, seen by this program's key/value rows `cols`.
    # Everything is computed transposed (keys along rows): dK and dV accumulate along the key rows
    # this program owns. CAUSAL_MASK hides queries before each key; SEQ_MASK hides query rows past N.
    # With TMA, q_src and do_src are descriptors of the whole 4-D tensors (rows past N read as
    # zeros); without, they point at head h of batch z.
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    if not TMA:  # from here on q_src and do_src point at the current block's tile
        q_src = q_src + (start + offs_m)[:, None] * stride_qm + offs_d[None, :] * stride_qk
        do_src = do_src + (start + offs_m)[:, None] * stride_dom + offs_d[None, :] * stride_dok
    # The diagonal band is a block or two: not pipelined. That also keeps its masked loop from spilling
    # (sm_90, triton 3.6, descriptors, 64 x 128 blocks in 8 warps: 208 bytes spilled with 2 stages, 8 with one).
    for start_m in tl.range(start, end, BLOCK_M, num_stages=1 if CAUSAL_MASK else None):
        rows = start_m + offs_m
        q = _load_tile(q_src, z, h, start_m, N, BLOCK_M, HEAD_DIM, TMA, SEQ_MASK)
        do = _load_tile(do_src, z, h, start_m, N, BLOCK_M, HEAD_DIM, TMA, SEQ_MASK)
        if SEQ_MASK or TMA:
            lse = tl.load(lse_row + rows, mask=rows < N, other=0.0)
            delta = tl.load(delta_row + rows, mask=rows < N, other=0.0)
        else:
            lse = tl.load(lse_row + rows)
            delta = tl.load(delta_row + rows)
        # Pᵀ recomputed from the scores and the saved log-sum-exp (turned to base 2), never stored.
        # Hidden entries get exponent -inf, so exp2 gives 0 for them without ever overflowing.
        x_t = tl.dot(k, tl.trans(q)) * qk_scale - (lse * 1.4426950408889634)[None, :]
        if CAUSAL_MASK or SEQ_MASK:
            keep = tl.full([BLOCK_M], 1, tl.int1)[None, :]
            if CAUSAL_MASK:
                keep = keep & (rows[None, :] >= cols[:, None])
            if SEQ_MASK:
                keep = keep & (rows < N)[None, :]
            x_t = tl.where(keep, x_t, float("-inf"))
        p_t = tl.exp2(x_t)
        dv = tl.dot(p_t.to(do.dtype), do, dv)  # dV += Pᵀ dO
        dp_t = tl.dot(v, tl.trans(do))  # dPᵀ = V dOᵀ
        ds_t = p_t * (dp_t - delta[None, :])  # dSᵀ, without sm_scale (applied once, at the end)
        dk = tl.dot(ds_t.to(q.dtype), q, dk)  # dK += dSᵀ Q
        if not TMA:
            q_src += BLOCK_M * stride_qm
            do_src += BLOCK_M * stride_dom
    return dk, dv


@triton.jit
def attention_bwd_dkdv_kernel(
    q_src, k_src, v_src, do_src, lse_ptr, delta_ptr, dk_src, dv_src,
    stride_qz, stride_qh, stride_qm, stride_qk,
    stride_kz, stride_kh, stride_kn, stride_kk,
    stride_vz, stride_vh, stride_vn, stride_vk,
    stride_doz, stride_doh, stride_dom, stride_dok,
    stride_dkz, stride_dkh, stride_dkn, stride_dkk,
    stride_dvz, stride_dvh, stride_dvn, stride_dvk,
    H, N, GROUP, sm_scale, qk_scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, IS_CAUSAL: tl.constexpr,
    TMA: tl.constexpr = False, HEAD_GROUP: tl.constexpr = 1,
):
    # Program (j, z * H_kv + h_kv) owns key/value rows [j * BLOCK_N, (j + 1) * BLOCK_N) of key/value
    # head h_kv: it keeps their K and V in registers, dK and dV in float32 accumulators, and walks
    # the query blocks of the GROUP query heads that read this key/value head. Causal work shrinks
    # as j grows: the programs are renumbered by _causal_order, the longest first. With TMA, the
    # *_src arguments are tensor descriptors of the whole 4-D tensors, as in the forward kernel.
    start_n = tl.program_id(0)
    zh_kv = tl.program_id(1)
    if IS_CAUSAL:
        start_n, zh_kv = _causal_order(start_n, zh_kv, tl.num_programs(0), tl.num_programs(1), HEAD_GROUP)
    h_kvs = H // GROUP
    z = zh_kv // h_kvs
    h_kv = zh_kv % h_kvs
    n0 = start_n * BLOCK_N
    cols = n0 + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    col_ok = (cols < N)[:, None]
    if TMA:
        k = k_src.load([z, h_kv, n0, 0]).reshape(BLOCK_N, HEAD_DIM)
        v = v_src.load([z, h_kv, n0, 0]).reshape(BLOCK_N, HEAD_DIM)
    else:
        k = tl.load(k_src + z.to(tl.int64) * stride_kz + h_kv.to(tl.int64) * stride_kh + cols[:, None] * stride_kn
                    + offs_d[None, :] * stride_kk, mask=col_ok, other=0.0)
        v = tl.load(v_src + z.to(tl.int64) * stride_vz + h_kv.to(tl.int64) * stride_vh + cols[:, None] * stride_vn
                    + offs_d[None, :] * stride_vk, mask=col_ok, other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)

    m_whole = N - N % BLOCK_M  # query blocks before this need no sequence mask
    for g in range(0, GROUP):
        h = h_kv * GROUP + g
        if TMA:
            q_head = q_src
            do_head = do_src
        else:
            q_head = q_src + z.to(tl.int64) * stride_qz + h.to(tl.int64) * stride_qh
            do_head = do_src + z.to(tl.int64) * stride_doz + h.to(tl.int64) * stride_doh
        lse_row = lse_ptr + (z * H + h).to(tl.int64) * N
        delta_row = delta_ptr + (z * H + h).to(tl.int64) * N
        lo = 0
        if IS_CAUSAL:
            # Query blocks before n0 see none of these keys: skipped. The diagonal band
            # [n0, n0 + BLOCK_N) (whole query blocks: BLOCK_N is a multiple of BLOCK_M) is masked;
            # every query block below it sees all of these keys.
            dk, dv = _dkdv_blocks(dk, dv, k, v, q_head, do_head, lse_row, delta_row, z, h, cols, n0,
                                  tl.minimum(n0 + BLOCK_N, N), N, qk_scale, stride_qm, stride_qk, stride_dom, stride_dok,
                                  BLOCK_M, HEAD_DIM, True, not TMA, TMA)
            lo = n0 + BLOCK_N
        if TMA:
            # Query rows past N read as zeros (q, dO) and 0 (lse, delta): their terms in dK and dV are
            # exactly 0 without a mask, so one loop runs to the end.
            dk, dv = _dkdv_blocks(dk, dv, k, v, q_head, do_head, lse_row, delta_row, z, h, cols, lo, N, N, qk_scale,
                                  stride_qm, stride_qk, stride_dom, stride_dok, BLOCK_M, HEAD_DIM, False, False, TMA)
        else:
            dk, dv = _dkdv_blocks(dk, dv, k, v, q_head, do_head, lse_row, delta_row, z, h, cols, lo, m_whole, N,
                                  qk_scale, stride_qm, stride_qk, stride_dom, stride_dok, BLOCK_M, HEAD_DIM, False, False,
                                  TMA)
            dk, dv = _dkdv_blocks(dk, dv, k, v, q_head, do_head, lse_row, delta_row, z, h, cols,
                                  tl.maximum(lo, m_whole), N, N, qk_scale, stride_qm, stride_qk, stride_dom, stride_dok,
                                  BLOCK_M, HEAD_DIM, False, True, TMA)

    dk = dk * sm_scale  # S = sm_scale · Q Kᵀ: the scale's factor in dK, applied once
    if TMA:
        dk_src.store([z, h_kv, n0, 0], dk.to(dk_src.dtype).reshape(1, 1, BLOCK_N, HEAD_DIM))
        dv_src.store([z, h_kv, n0, 0], dv.to(dv_src.dtype).reshape(1, 1, BLOCK_N, HEAD_DIM))
    else:
        dk_ptrs = (dk_src + z.to(tl.int64) * stride_dkz + h_kv.to(tl.int64) * stride_dkh + cols[:, None] * stride_dkn
                   + offs_d[None, :] * stride_dkk)
        dv_ptrs = (dv_src + z.to(tl.int64) * stride_dvz + h_kv.to(tl.int64) * stride_dvh + cols[:, None] * stride_dvn
                   + offs_d[None, :] * stride_dvk)
        tl.store(dk_ptrs, dk.to(dk_src.dtype.element_ty), mask=col_ok)
        tl.store(dv_ptrs, dv.to(dv_src.dtype.element_ty), mask=col_ok)


@triton.jit
def _dq_blocks(dq, q, do, lse2, delta, k_src, v_src, z, h_kv, rows, start, end, N, qk_scale,
               stride_kn, stride_kk, stride_vn, stride_vk,
               BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL_MASK: tl.constexpr, SEQ_MASK: tl.constexpr,
               TMA: tl.constexpr):
    # Key/value blocks [start, end) for one block of query rows: dQ += dS K, masked by _hide_keys.
    # k_src and v_src as in _fwd_blocks.
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    if not TMA:  # from here on k_src and v_src point at the current block's tile
        k_src = k_src + (start + offs_n)[:, None] * stride_kn + offs_d[None, :] * stride_kk
        v_src = v_src + (start + offs_n)[:, None] * stride_vn + offs_d[None, :] * stride_vk
    for start_n in tl.range(start, end, BLOCK_N):
        cols = start_n + offs_n
        k = _load_tile(k_src, z, h_kv, start_n, N, BLOCK_N, HEAD_DIM, TMA, SEQ_MASK)
        v = _load_tile(v_src, z, h_kv, start_n, N, BLOCK_N, HEAD_DIM, TMA, SEQ_MASK)
        x = _hide_keys(tl.dot(q, tl.trans(k)) * qk_scale - lse2[:, None], rows, cols, N, CAUSAL_MASK, SEQ_MASK)
        p = tl.exp2(x)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
        if not TMA:
            k_src += BLOCK_N * stride_kn
            v_src += BLOCK_N * stride_vn
    return dq


@triton.jit
def attention_bwd_dq_kernel(
    q_src, k_src, v_src, do_src, lse_ptr, delta_ptr, dq_src,
    stride_qz, stride_qh, stride_qm, stride_qk,
    stride_kz, stride_kh, stride_kn, stride_kk,
    stride_vz, stride_vh, stride_vn, stride_vk,
    stride_doz, stride_doh, stride_dom, stride_dok,
    stride_dqz, stride_dqh, stride_dqm, stride_dqk,
    H, N, GROUP, sm_scale, qk_scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, IS_CAUSAL: tl.constexpr,
    TMA: tl.constexpr = False, HEAD_GROUP: tl.constexpr = 1,
):
    # Program (i, z * H + h) owns query rows [i * BLOCK_M, (i + 1) * BLOCK_M) of head h and walks
    # the key/value blocks as the forward kernel does, with the same causal skipping and order.
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    if IS_CAUSAL:
        rank, zh = _causal_order(start_m, zh, tl.num_programs(0), tl.num_programs(1), HEAD_GROUP)
        start_m = tl.num_programs(0) - 1 - rank
    z = zh // H
    h = zh % H
    h_kv = h // GROUP
    m0 = start_m * BLOCK_M
    rows = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = rows < N
    if TMA:
        q = q_src.load([z, h, m0, 0]).reshape(BLOCK_M, HEAD_DIM)
        do = do_src.load([z, h, m0, 0]).reshape(BLOCK_M, HEAD_DIM)
        k_base = k_src
        v_base = v_src
    else:
        q = tl.load(q_src + z.to(tl.int64) * stride_qz + h.to(tl.int64) * stride_qh + rows[:, None] * stride_qm
                    + offs_d[None, :] * stride_qk, mask=row_ok[:, None], other=0.0)
        do = tl.load(do_src + z.to(tl.int64) * stride_doz + h.to(tl.int64) * stride_doh + rows[:, None] * stride_dom
                     + offs_d[None, :] * stride_dok, mask=row_ok[:, None], other=0.0)
        k_base = k_src + z.to(tl.int64) * stride_kz + h_kv.to(tl.int64) * stride_kh
        v_base = v_src + z.to(tl.int64) * stride_vz + h_kv.to(tl.int64) * stride_vh
    lse2 = tl.load(lse_ptr + zh.to(tl.int64) * N + rows, mask=row_ok, other=0.0) * 1.4426950408889634
    delta = tl.load(delta_ptr + zh.to(tl.int64) * N + rows, mask=row_ok, other=0.0)

    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if IS_CAUSAL:
        dq = _dq_blocks(dq, q, do, lse2, delta, k_base, v_base, z, h_kv, rows, 0, m0, N, qk_scale,
                        stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, False, False, TMA)
        dq = _dq_blocks(dq, q, do, lse2, delta, k_base, v_base, z, h_kv, rows, m0, tl.minimum(m0 + BLOCK_M, N), N,
                        qk_scale, stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, True, True, TMA)
    else:
        n_whole = N - N % BLOCK_N
        dq = _dq_blocks(dq, q, do, lse2, delta, k_base, v_base, z, h_kv, rows, 0, n_whole, N, qk_scale,
                        stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, False, False, TMA)
        dq = _dq_blocks(dq, q, do, lse2, delta, k_base, v_base, z, h_kv, rows, n_whole, N, N, qk_scale,
                        stride_kn, stride_kk, stride_vn, stride_vk, BLOCK_N, HEAD_DIM, False, True, TMA)
    dq = dq * sm_scale
    if TMA:
        dq_src.store([z, h, m0, 0], dq.to(dq_src.dtype).reshape(1, 1, BLOCK_M, HEAD_DIM))
    else:
        dq_ptrs = (dq_src + z.to(tl.int64) * stride_dqz + h.to(tl.int64) * stride_dqh + rows[:, None] * stride_dqm
                   + offs_d[None, :] * stride_dqk)
        tl.store(dq_ptrs, dq.to(dq_src.dtype.element_ty), mask=row_ok[:, None])


# -- backward, warp-specialized (Hopper) ---------------------------------------------------------
# One kernel for all three gradients, FlashAttention-3's scheme: a program owns 2 x WS_ROWS key rows,
# one warpgroup ("consumer") per WS_ROWS of them keeping that share's dK and dV in registers, and one
# loader warp streams the query blocks (Q, dO, and their lse2 and delta rows) into a ring. dQ of a
# query block sums the contributions of every key block, so programs add theirs into a float32 buffer
# with the TMA's reduce-add. To halve that traffic, both consumers put their dS in shared memory and
# the block's dQ is computed once from both halves: by one consumer in turn, or (a dQ buffer whose
# blocks hold half of D's columns, see BWD_WS_SPLIT_DQ) by both at every block, each consumer its half
# of the columns. The dS buffers come in DS_STAGES pairs, used by consecutive blocks in turn (see
# BWD_WS_DS_STAGES).
#
# triton 3.6's Gluon has no name for the TMA reduce-add (later versions call it tma.async_atomic_add):
# the same operation through the builder.
try:
    _tma_reduce_add = gl_tma.async_atomic_add
except AttributeError:
    @gluon_builtin
    def _tma_reduce_add(tensor_desc, coord, src, _semantic=None):
        coord = _semantic._convert_to_ir_values(coord, require_i64=False)
        _semantic.builder.create_async_tma_reduce(triton_ir.DESCRIPTOR_REDUCE_KIND.ADD, tensor_desc.handle, coord,
                                                  src.handle)


@gluon.jit
def _ws_bwd_load(q_desc, k_desc, v_desc, do_desc, lse2_desc, delta_desc, q_smem, do_smem, k_smem, v_smem,
                 lse2_smem, delta_smem, q_ready, do_ready, empty, kv_bars, z, h_kv, H, N_PAD, GROUP, j_start, n_q, n0):
    # The loader warp: each consumer's K and V once, then (Q, lse2) and (dO, delta) of every query
    # block the program visits, query head by query head, into a ring of NUM_STAGES slots.
    ROWS: gl.constexpr = q_smem.shape[3]
    NUM_STAGES: gl.constexpr = q_smem.shape[0]
    for c in gl.static_range(2):
        mbarrier.expect(kv_bars.index(c), k_desc.block_type.nbytes + v_desc.block_type.nbytes)
        _tma_load(k_desc, [z, h_kv, n0 + c * ROWS, 0], kv_bars.index(c), k_smem.index(c))
        _tma_load(v_desc, [z, h_kv, n0 + c * ROWS, 0], kv_bars.index(c), v_smem.index(c))
    it = 0
    for g in range(GROUP):
        row0 = (z * H + h_kv * GROUP + g) * N_PAD  # the query head's first entry in lse2 and delta
        for j in range(j_start, n_q):
            slot = it % NUM_STAGES
            mbarrier.wait(empty.index(slot), ((it // NUM_STAGES) & 1) ^ 1)
            mbarrier.expect(q_ready.index(slot), q_desc.block_type.nbytes + lse2_desc.block_type.nbytes)
            _tma_load(q_desc, [z, h_kv * GROUP + g, j * ROWS, 0], q_ready.index(slot), q_smem.index(slot))
            _tma_load(lse2_desc, [row0 + j * ROWS], q_ready.index(slot), lse2_smem.index(slot))
            mbarrier.expect(do_ready.index(slot), do_desc.block_type.nbytes + delta_desc.block_type.nbytes)
            _tma_load(do_desc, [z, h_kv * GROUP + g, j * ROWS, 0], do_ready.index(slot), do_smem.index(slot))
            _tma_load(delta_desc, [row0 + j * ROWS], do_ready.index(slot), delta_smem.index(slot))
            it += 1


@gluon.jit
def _ws_bwd_consume(q_smem, do_smem, lse2_smem, delta_smem, k_c, v_c, k_0, k_1, ds_smem, dq_smem,
                    q_ready, do_ready, empty, kv_bars, ds_full, ds_free, dk_desc, dv_desc, dq_desc,
                    z, h_kv, GROUP, n0c, j_start, n_q, qk_scale, sm_scale, causal, c, KV_REGS: gl.constexpr):
    # Consumer c: key rows [n0c, n0c + ROWS) (its K_c, V_c), computed transposed (keys along the
    # tile rows) as in attention_bwd_dkdv_kernel. k_0, k_1: the columns of both consumers' K buffers
    # that this consumer's dQ reads (all of them, or its half when the dQ is split), with both
    # consumers' dS: ds_smem holds DS_STAGES pairs of dS buffers, block it using pair it % DS_STAGES
    # (consumer c's at 2 * pair + c).
    ROWS: gl.constexpr = q_smem.shape[3]
    HEAD_DIM: gl.constexpr = q_smem.shape[4]
    DQ_GROUPED: gl.constexpr = len(dq_smem.shape) == 5
    DQ_COLS: gl.constexpr = _dq_columns(dq_smem.shape)
    if DQ_GROUPED:  # blocks of [1, 1, groups, R, E]: R rows of E floats hold ROWS rows of 8 columns
        DQ_R: gl.constexpr = dq_smem.shape[3]
    NUM_STAGES: gl.constexpr = q_smem.shape[0]
    DS_STAGES: gl.constexpr = ds_smem.shape[0] // 2
    dtype: gl.constexpr = q_smem.dtype
    s_layout: gl.constexpr = _wgmma_layout(ROWS)
    o_layout: gl.constexpr = _wgmma_layout(HEAD_DIM)
    dq_layout: gl.constexpr = _wgmma_layout(DQ_COLS)
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    col_layout: gl.constexpr = gl.SliceLayout(0, s_layout)

    k = k_c.reshape([ROWS, HEAD_DIM])
    v = v_c.reshape([ROWS, HEAD_DIM])
    if DQ_GROUPED:
        dq_tile = dq_smem.reshape([DQ_COLS // 8, ROWS, 8])
    else:
        dq_tile = dq_smem.reshape([ROWS, DQ_COLS])
    cols = n0c + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))  # this consumer's keys
    offs_m = gl.arange(0, ROWS, layout=col_layout)
    dk = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
    dv = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
    no_scores = gl.zeros([ROWS, ROWS], gl.float32, layout=s_layout)  # use_acc=False ignores it
    no_dq = gl.zeros([ROWS, DQ_COLS], gl.float32, layout=dq_layout)
    mbarrier.wait(kv_bars.index(0), 0)
    mbarrier.wait(kv_bars.index(1), 0)
    # With KV_REGS, K (1) or K and V (2) enter Sᵀ = K Qᵀ and dPᵀ = V dOᵀ from registers, read from
    # shared memory once instead of at every query block; the buffers stay for the dQ and the output.
    st_a: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=s_layout, k_width=2)
    if KV_REGS >= 1:
        ka = k.load(st_a)
    else:
        ka = k
    if KV_REGS >= 2:
        va = v.load(st_a)
    else:
        va = v

    nj = n_q - j_start  # query blocks per query head
    for it in range(GROUP * nj):  # (query head, query block) pairs, in the loader's order
        g = it // nj
        j = j_start + it % nj
        slot = it % NUM_STAGES
        ph = (it // NUM_STAGES) & 1
        qs = q_smem.index(slot).reshape([ROWS, HEAD_DIM])
        dos = do_smem.index(slot).reshape([ROWS, HEAD_DIM])
        mbarrier.wait(q_ready.index(slot), ph)
        st = warpgroup_mma(ka, qs.permute((1, 0)), no_scores, use_acc=False, is_async=True)  # Sᵀ = K Qᵀ
        mbarrier.wait(do_ready.index(slot), ph)
        dpt = warpgroup_mma(va, dos.permute((1, 0)), no_scores, use_acc=False, is_async=True)  # dPᵀ = V dOᵀ
        st = warpgroup_mma_wait(1, deps=(st,))
        # Pᵀ from the scores and lse2 (+inf for query rows past N: exactly 0 there). Causal, the
        # program's first two query blocks hold its diagonal; later ones see all its keys.
        x = st * qk_scale - lse2_smem.index(slot).load(col_layout)[None, :]
        if (causal != 0) & (j < j_start + 2):
            x = gl.where((j * ROWS + offs_m)[None, :] >= cols[:, None], x, float("-inf"))
        pt = gl.exp2(x)
        p16 = gl.convert_layout(pt.to(dtype), a_layout)
        dv = warpgroup_mma(p16, dos, dv, is_async=True)  # dV += Pᵀ dO, while dSᵀ is computed
        dpt = warpgroup_mma_wait(1, deps=(dpt,))
        ds = (pt * (dpt - delta_smem.index(slot).load(col_layout)[None, :])).to(dtype)  # dSᵀ, without sm_scale
        pair = it % DS_STAGES
        use = (it // DS_STAGES) & 1
        mbarrier.wait(ds_free.index(pair), use ^ 1)  # the dQ of the pair's previous block has read it
        ds_smem.index(2 * pair + c).store(ds)
        fence_async_shared()
        mbarrier.arrive(ds_full.index(pair))
        dk = warpgroup_mma(gl.convert_layout(ds, a_layout), qs, dk, is_async=True)  # dK += dSᵀ Q
        dv, dk = warpgroup_mma_wait(0, deps=(dv, dk))
        mbarrier.arrive(empty.index(slot))
        # This block's dQ = dS K over both consumers' keys (its own columns of it: all, in its turn,
        # or its half at every block), added into the float32 buffer.
        if (it % 2 == c) | (DQ_COLS < HEAD_DIM):
            mbarrier.wait(ds_full.index(pair), use)
            dq = warpgroup_mma(ds_smem.index(2 * pair).permute((1, 0)), k_0, no_dq, use_acc=False, is_async=True)
            dq = warpgroup_mma(ds_smem.index(2 * pair + 1).permute((1, 0)), k_1, dq, is_async=True)
            dq = warpgroup_mma_wait(0, deps=(dq,))
            mbarrier.arrive(ds_free.index(pair))
            gl_tma.store_wait(0)  # this consumer's previous reduce-add has read dq_smem
            if DQ_GROUPED:
                dq_tile.store((dq * sm_scale).reshape([ROWS, DQ_COLS // 8, 8]).permute((1, 0, 2)))
                fence_async_shared()
                _tma_reduce_add(dq_desc, [z, h_kv * GROUP + g, c * DQ_COLS % HEAD_DIM // 8, j * DQ_R, 0], dq_smem)
            else:
                dq_tile.store(dq * sm_scale)
                fence_async_shared()
                _tma_reduce_add(dq_desc, [z, h_kv * GROUP + g, j * ROWS, c * DQ_COLS % HEAD_DIM], dq_smem)

    # dK and dV leave through this consumer's K and V buffers, no longer read (every MMA was waited
    # for, and the other consumer's last dQ read K before it arrived on ds_free); rows past N dropped.
    # The last DS_STAGES blocks' dQ are waited for, one per pair: the other consumer's turn was among them.
    last = GROUP * nj - 1
    for back in gl.static_range(DS_STAGES):
        if last >= back:
            mbarrier.wait(ds_free.index((last - back) % DS_STAGES), ((last - back) // DS_STAGES) & 1)
    gl_tma.store_wait(0)
    v.store(dv.to(dtype))
    k.store((dk * sm_scale).to(dtype))
    fence_async_shared()
    _tma_store(dv_desc, [z, h_kv, n0c, 0], v_c)
    _tma_store(dk_desc, [z, h_kv, n0c, 0], k_c)
    gl_tma.store_wait(0)


@gluon.jit
def attention_bwd_ws_kernel(
    q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc, lse2_desc, delta_desc, dq_desc,
    H, N, N_PAD, GROUP, sm_scale, qk_scale,
    NUM_STAGES: gl.constexpr, DS_STAGES: gl.constexpr, IS_CAUSAL: gl.constexpr, CONSUMER_REGS: gl.constexpr,
    LOADER_REGS: gl.constexpr, HEAD_GROUP: gl.constexpr = 1, KV_REGS: gl.constexpr = 0,
):
    # Program (i, z * H_kv + h_kv) (causal: renumbered by _causal_order, the longest first): key rows
    # [i * 2 * ROWS, (i + 1) * 2 * ROWS) of key/value head h_kv.
    # Descriptors of the whole 4-D tensors in blocks of 1 x 1 x ROWS x D (dq_desc: the float32 dQ
    # buffer, in rows or column groups, in blocks of D or D / 2 columns); lse2_desc and delta_desc:
    # the preprocessed (B * H * N_PAD,) rows in blocks of ROWS, N_PAD a multiple of ROWS (so a block
    # never crosses into the next head).
    # KV_REGS: each consumer holds its K (1) or its K and V (2) in registers (see BWD_WS_KV_REGISTERS).
    ROWS: gl.constexpr = q_desc.block_type.shape[2]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[3]
    DQ_COLS: gl.constexpr = _dq_columns(dq_desc.block_type.shape)
    DQ_WRITERS: gl.constexpr = HEAD_DIM // DQ_COLS  # consumers computing each block's dQ
    pid = gl.program_id(0)
    zh_kv = gl.program_id(1)
    if IS_CAUSAL:
        pid, zh_kv = _causal_order(pid, zh_kv, gl.num_programs(0), gl.num_programs(1), HEAD_GROUP)
    z = zh_kv // (H // GROUP)
    h_kv = zh_kv % (H // GROUP)
    n0 = pid * 2 * ROWS
    n_q = gl.cdiv(N, ROWS)
    j_start = n_q * 0
    if IS_CAUSAL:  # query blocks above the program's keys see none of them
        j_start = n0 // ROWS

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [NUM_STAGES] + q_desc.block_type.shape, q_desc.layout)
    do_smem = gl.allocate_shared_memory(do_desc.dtype, [NUM_STAGES] + do_desc.block_type.shape, do_desc.layout)
    lse2_smem = gl.allocate_shared_memory(gl.float32, [NUM_STAGES] + lse2_desc.block_type.shape, lse2_desc.layout)
    delta_smem = gl.allocate_shared_memory(gl.float32, [NUM_STAGES] + delta_desc.block_type.shape, delta_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [2] + k_desc.block_type.shape, k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [2] + v_desc.block_type.shape, v_desc.layout)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([ROWS, ROWS], q_desc.dtype)
    ds_smem = gl.allocate_shared_memory(q_desc.dtype, [2 * DS_STAGES, ROWS, ROWS], ds_layout)  # pairs by block
    dq_smem = gl.allocate_shared_memory(gl.float32, [2] + dq_desc.block_type.shape, dq_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    do_ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    kv_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    ds_full = gl.allocate_shared_memory(gl.int64, [DS_STAGES, 1], mbarrier.MBarrierLayout())
    ds_free = gl.allocate_shared_memory(gl.int64, [DS_STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(kv_bars.index(i), count=1)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(do_ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)  # one arrival per consumer
    for i in gl.static_range(DS_STAGES):
        mbarrier.init(ds_full.index(i), count=2)  # both consumers' dS are in shared memory
        mbarrier.init(ds_free.index(i), count=DQ_WRITERS)  # the consumers computing dQ have read them

    c0 = zh_kv * 0  # the consumers' numbers c0, c0 + 1 as tensors
    causal = c0 + IS_CAUSAL
    # A launch turns an integer argument equal to 1 into a constant: as tensors either way.
    H = c0 + H
    N_PAD = c0 + N_PAD
    GROUP = c0 + GROUP
    # The K columns each consumer's dQ reads from both buffers: all of them, or its half when split.
    k_0 = k_smem.index(0).reshape([ROWS, HEAD_DIM])
    k_1 = k_smem.index(1).reshape([ROWS, HEAD_DIM])
    second: gl.constexpr = DQ_COLS % HEAD_DIM  # the second consumer's first column
    k_0a = k_0.slice(0, DQ_COLS, dim=1)
    k_1a = k_1.slice(0, DQ_COLS, dim=1)
    k_0b = k_0.slice(second, DQ_COLS, dim=1)
    k_1b = k_1.slice(second, DQ_COLS, dim=1)
    gl.warp_specialize([
        (_ws_bwd_consume, (q_smem, do_smem, lse2_smem, delta_smem, k_smem.index(0), v_smem.index(0), k_0a, k_1a,
                           ds_smem, dq_smem.index(0),
                           q_ready, do_ready, empty, kv_bars, ds_full, ds_free, dk_desc, dv_desc, dq_desc,
                           z, h_kv, GROUP, n0, j_start, n_q, qk_scale, sm_scale, causal, c0, KV_REGS)),
        (_ws_bwd_consume, (q_smem, do_smem, lse2_smem, delta_smem, k_smem.index(1), v_smem.index(1), k_0b, k_1b,
                           ds_smem, dq_smem.index(1),
                           q_ready, do_ready, empty, kv_bars, ds_full, ds_free, dk_desc, dv_desc, dq_desc,
                           z, h_kv, GROUP, n0 + ROWS, j_start, n_q, qk_scale, sm_scale, causal, c0 + 1, KV_REGS)),
        (_ws_bwd_load, (q_desc, k_desc, v_desc, do_desc, lse2_desc, delta_desc, q_smem, do_smem, k_smem, v_smem,
                        lse2_smem, delta_smem, q_ready, do_ready, empty, kv_bars, z, h_kv, H, N_PAD, GROUP, j_start, n_q,
                        n0)),
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])


# -- configurations ------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionConfig:
    """How one attention kernel is launched.

    Attributes:
        block_m: query rows per block (per program for the forward and dQ kernels).
        block_n: key/value rows per block (per program for the dK/dV kernel). The block owned by a
            program is a multiple of the block it loops over, so that the causal diagonal band
            is made of whole blocks.
        num_warps: warps per program.
        num_stages: software-pipelining depth of the loop over blocks.
    """

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


# The pointer forward (_FWD_TILES) was picked by compiling for sm_90 (tritonperf.asm.compile_for_hopper,
# triton 3.9) and keeping entries that ptxas compiled without spills (no stack frame, no local loads
# or stores); the block shapes follow the usual FlashAttention choices, and where several fitted, the
# one with the fewest registers was taken. Pointer tiles run close to the 255-register limit: the
# forward at D = 128 with 128 x 128 blocks spills, with 128 x 64 blocks it does not (230 registers in
# 8 warps). Causal and non-causal attention, fp16 and bf16 share entries (the same loop body, the same
# element size); they are in the key so that an entry can differ once measurements say so.
_FWD_TILES = {
    16: AttentionConfig(128, 64, 4, 3),
    32: AttentionConfig(128, 64, 4, 3),
    64: AttentionConfig(128, 64, 8, 3),
    128: AttentionConfig(128, 64, 8, 3),
    256: AttentionConfig(64, 32, 4, 2),
}
# The forward with tensor descriptors (TMA), measured: the best of 8 shapes per head dim on an NVIDIA
# H200 (triton 3.6, float16, B·N = 16k tokens, H·D = 2048, N = 4096). D = 128: 498 TFLOPS against the
# pointer table's 460 (causal 429 against 408); D = 64: 420 against 404 (causal 373 against 369).
# Causal attention then moved to 64 x 64 blocks in 3 stages (H200, triton 3.6, 2026-11-22, one
# interleaved run per head dim, N = 1024 ... 8192, float16): D = 128 +5 to +7% at every length
# (N = 4096: 432 against 409); D = 64 +12% at N = 1024, +1 to +2% from 4096 on. A second run at
# N = 16384: D = 128 +2%, D = 64 -4%. Smaller blocks give the causal diagonal band less masked work.
# Across two full records (commits 7c4c780 and 63f9047), the ratio to cuDNN in the same run rose
# 7-9% for D = 64 at N = 1024 and 3-7% at 2048; elsewhere it moved between -3% and +5%.
# Other head dims were not measured with TMA and keep the pointer kernel.
_FWD_TMA_TILES = {
    (64, False): AttentionConfig(128, 128, 4, 3),
    (64, True): AttentionConfig(64, 64, 4, 3),
    (128, False): AttentionConfig(128, 64, 4, 2),
    (128, True): AttentionConfig(64, 64, 4, 3),
}
# The warp-specialized forward (Gluon): block_m is the program's query rows, WS_ROWS (64) per consumer
# warpgroup; num_warps is the launch's (the first consumer: the other consumers and the loader add 4
# warps each and 1 warp); num_stages is the depth of the key/value ring. block_n is a multiple of 64, so
# a consumer's rows fall in one key block (its causal diagonal). Measured on an NVIDIA H200 (triton 3.6,
# torch 2.11, float16, B·N = 16k tokens, H·D = 2048, one interleaved run with the TMA kernel and cuDNN).
# D = 128, two consumers (2026-11-23), TFLOPS ws / tma / cuDNN: N = 1024 465 / 414 / 549, 4096 577 /
# 458 / 580, 16384 607 / 484 / 578; causal 1024 318 / 323 / 406, 4096 499 / 408 / 484, 16384 603 / 446
# / 512. Two stages matched three (within 2%). With one "empty" barrier per slot for a key block and
# its value block together, a key block waited for its value block's matmul: at two stages that ran at
# 327-398 TFLOPS (an earlier run), at three within 2% of the split barriers.
# D = 64 (2026-11-23): two consumers without turns ran at 0.80-0.99 x cuDNN, below the TMA kernel up
# to N = 4096. Three consumers (192 rows) with turns and causal consumers skipping the blocks right of
# their rows, ws / tma / cuDNN: N = 4096 458 / 405 / 446, 8192 491 / 412 / 449, 16384 502 / 417 / 452;
# causal 4096 370 / 367 / 405, 8192 434 / 386 / 420, 16384 470 / 392 / 425. Over two runs, turns added 0
# to +9% to three consumers (causal 0 to +5%), the skipping 0 to +1.4%. At D = 128 turns moved the
# two consumers by -2% to +6% over two runs, with no trend; the kernel has one schedule for both.
# Where 192 does not divide N, the last tile of each head has consumers whose rows all lie past N;
# they skip it (H100 80GB HBM3, triton 3.6, torch 2.11, 2026-11-25, D = 64, one interleaved run,
# TFLOPS before / after / cuDNN): causal N = 4096 380 / 395 / 401, bfloat16 389 / 408 / 410, 8192
# 443 / 449 / 406, 16384 462 / 470 / 413; full 4096 447 / 452 / 439, 8192 482 / 475 / 439, 16384
# 491 / 484 / 444. Outputs and lse were bit-identical.
# Causal, those idle consumer blocks now sit before row 0 in the first tile of each head (the
# shortest) instead of past N in the last (the longest; see _ws_fwd_tile). At N = 4096 (21 tiles of
# 192 and 64 rows) two consumers idled through 32 key blocks, now through one. NVIDIA H200 (triton
# 3.6, torch 2.11, 2026-11-28, D = 64, three interleaved comparisons at N = 4096, one at 8192 and
# 16384, TFLOPS after / before / cuDNN): float16 403 / 394 / 399, 403 / 396 / 397, 398 / 393 / 395;
# bfloat16 412 / 404 / 407, 410 / 403 / 407, 408 / 398 / 401; 8192 450 / 452 / 406; 16384
# 472 / 470 / 408. Outputs and lse bit-identical to before.
_FWD_WS_TILES = {
    64: AttentionConfig(192, 128, 4, 2),
    128: AttentionConfig(128, 128, 4, 2),
}
# The shortest sequence at which "auto" takes the warp-specialized forward; 0 where none is given.
# At D = 64 short sequences run faster in the TMA kernel (same runs, H200, float16, ratio to cuDNN
# ws / tma): N = 1024 0.82 / 0.87, causal 1024 0.47 / 0.91, 2048 0.66 / 0.91, 4096 0.85 / 0.91 in one
# run and 0.91 / 0.91 in another; from 2048 (full) and 8192 (causal) the warp-specialized kernel leads.
# Once causal programs started in head groups (CAUSAL_HEAD_GROUP), the warp-specialized kernel led
# from 4096 (H200, triton 3.6, torch 2.11, 2026-11-24, causal, two interleaved runs, ratio to cuDNN
# tma / ws): float16 N = 2048 0.917 / 0.834 and 0.915 / 0.831, 4096 0.917 / 0.956 and 0.925 /
# 0.951, 8192 0.940 / 1.069 and 0.947 / 1.081; bfloat16 2048 0.922 / 0.840 and 0.917 / 0.829,
# 4096 0.929 / 0.958 and 0.935 / 0.959, 8192 0.947 / 1.074 and 0.944 / 1.076. The benchmark records
# agree (H200, commit 5bac040 against c6f9b1f, causal D = 64, N = 4096 forward, ratio to cuDNN):
# float16 0.901 to 0.955, bfloat16 0.893 to 0.946.
WS_MIN_LENGTH = {(64, False): 2048, (64, True): 4096}
WS_LOADER_REGISTERS = 24
# Heads per group in the order causal programs start (_causal_order). One head at a time (the
# order before), the last head's long programs ran on alone at the end; with every head in one
# group, a head's programs start a whole group apart and find its keys and values gone from L2.
# Measured on an NVIDIA H200 (triton 3.6,
# torch 2.11, 2026-11-24, float16, B·N = 16k tokens, H·D = 2048, causal, one interleaved run per
# shape, ratio to cuDNN, one head / 16 heads / all in one group): forward D = 64, N = 1024 0.86 /
# 0.88 / 0.69, 4096 0.87 / 0.95 / 0.86, 16384 1.07 / 1.11 / 1.09; D = 128, 1024 0.74 / 0.85 /
# 0.78, 4096 0.98 / 1.09 / 1.05, 16384 1.13 / 1.13 / 1.07; backward D = 64, 4096 0.97 / 1.04 /
# 0.90; D = 128, 2048 0.98 / 1.05 / 0.77, 4096 1.00 / 1.07 / 1.03. In a second run (groups of 1,
# 8, 16 and 32; float16, and bfloat16 at N = 2048 ... 8192) 8 and 16 were within 4% of each other
# with neither ahead throughout, 32 was up to 4% below 16, and one head was below 16 by 1-13% in
# every forward and backward but the D = 128, N = 16384 forward (+0.7%). Both runs timed cuDNN up to
# 12% below its benchmark records, and the gains came out smaller in the records (H200, commit 9770171
# against 5bac040, the only change between them for attention): causal backward D = 128 +1 to +6%
# (mean +4%), D = 64 -2 to +3%; causal forward -5 to +6% (mean +1%); the non-causal cells, whose
# kernels did not change, moved by -3 to +3% between the two records. On an NVIDIA H100 80GB HBM3
# (same day and versions, float16, N = 1024, 4096 and 16384, groups of 1 and 16 in one run) 16
# was ahead at every shape: forward +0.2 to +11%, backward +2 to +5%.
CAUSAL_HEAD_GROUP = 16
# The warp-specialized backward: query blocks of WS_ROWS rows, programs of two consumers' WS_ROWS
# key rows each (block_n), a ring of two query blocks; 4 warps per consumer.
_BWD_WS_TILES = {
    64: AttentionConfig(64, 128, 4, 2),
    128: AttentionConfig(64, 128, 4, 2),
}
# Pairs of dS buffers the warp-specialized backward alternates between by query block. With one pair,
# the consumer that is not computing a block's dQ must wait for the other's dQ matmuls before it
# writes its next dS; with two it need not. Two pairs take 16 KB more shared memory (225.6 KB of the
# 227 KB a program may have at D = 128) and left the compiler fewer registers to spill at D = 128
# (sm_90 stack frame with one pair and with two: triton 3.6 80 and 24-32 bytes, 3.8 80-104 and 32-40,
# 3.9 112-120 and 0).
# Measured on an NVIDIA H200 (triton 3.6, torch 2.11, 2026-11-23, float16, B·N = 16k tokens,
# H·D = 2048, N = 1024 ... 16384, one interleaved run with cuDNN): two pairs were faster at every
# shape, D = 128 by 2-5% (ratio to cuDNN 0.97-1.02 against 0.93-0.98), D = 64 by 1-7% (0.99-1.06
# against 0.97-1.05).
BWD_WS_DS_STAGES = 2
# (D, causal) at which each consumer of the warp-specialized backward computes half of dQ's columns at
# every query block, instead of the whole dQ at every other block: the two consumers then do the same
# work at every block, a consumer holds 32 registers a thread less for dQ, and the dQ buffers take
# 32 KB less shared memory (198 KB in all; with triton 3.6 the sm_90 stack frame at D = 128 causal
# goes from 32 bytes to none). Measured on an NVIDIA H200 (triton 3.6, torch 2.11, 2026-11-24,
# B·N = 16k tokens, H = 16, one interleaved run with cuDNN), TFLOPS split / whole / cuDNN: causal
# float16 N = 1024 307 / 295 / 305, 4096 434 / 422 / 434, 16384 494 / 493 / 503, bfloat16 4096
# 439 / 438 / 448; full float16 1024 397 / 403 / 400, 4096 472 / 484 / 492, 16384 506 / 511 / 519,
# bfloat16 4096 484 / 505 / 509. Full attention lost with the split and causal gained, with the dQ
# buffer in rows. With it in column groups (BWD_WS_DQ_GROUPED) causal gains no more: on an NVIDIA
# H100 (triton 3.6, torch 2.11, 2026-11-25, same shapes, one interleaved run with cuDNN a line),
# TFLOPS split in rows / whole in groups / cuDNN: causal float16 N = 1024 289 / 288 / 279, 2048
# 373 / 380 / 363, 4096 441 / 449 / 417, 8192 476 / 483 / 454, 16384 501 / 514 / 491; bfloat16 1024
# 293 / 292 / 284, 4096 448 / 461 / 430, 16384 519 / 526 / 512. Split in groups was slower again
# (float16 8192 464). So no pair splits.
BWD_WS_SPLIT_DQ: set[tuple[int, bool]] = set()
# The swizzle (bytes) of the warp-specialized backward's float32 dQ buffer in rows (where
# BWD_WS_DQ_GROUPED does not put it in column groups), by head dimension. A consumer stores dQ there
# from the wgmma accumulator, 8 bytes a thread; under the 128-byte swizzle rows r and r ^ 1 of a warp
# meet in the same banks. A narrower swizzle spares those conflicts but sends dQ out in more, smaller
# TMA reduces (one per 8 columns at 32 bytes). Measured on an NVIDIA H100 (triton 3.6, torch 2.11,
# 2026-11-25, float16, B·N = 16k tokens, H·D = 2048, one interleaved run with cuDNN), TFLOPS at
# swizzle 128 / 64 / 32 / cuDNN: D = 64 full N = 1024 341 / 338 / 347 / 329, 4096 420 / 417 / 431 /
# 404, 16384 457 / 437 / 458 / 431; causal 1024 248 / 247 / 249 / 231, 4096 368 / 367 / 376 / 347,
# 16384 419 / 412 / 430 / 399 (bfloat16 full 4096 425 / - / 437 / 421). At
# D = 128 the 32-byte swizzle lost at every probed length, full and causal (full N = 4096 480
# against 434, cuDNN 496), though Nsight Compute counted 8 M bank conflicts on shared stores where
# the 128-byte one has 42 M; the 64-byte one tied (full 4096 472 / 471).
BWD_WS_DQ_SWIZZLE = {64: 32, 128: 128}
# The layout of that dQ buffer, by (head dim, causal): rows (dQ's own shape, at the swizzle above)
# or column groups, (B, H, D / 8, N_pad, 8): the rows of each group of 8 columns contiguous. In groups,
# a warp's stores from the accumulator fill 256 contiguous bytes (no bank conflicts, no swizzle) and a
# tile leaves in one TMA reduce of 1 KB rows, where rows take one reduce per 128-byte swizzle span;
# attention_dq_ungroup_kernel then writes dQ from the groups (rows need a copy too, for the dtype).
# Measured on an NVIDIA H100 (triton 3.6, torch 2.11, 2026-11-25, float16, B·N = 16k tokens,
# H·D = 2048, one interleaved run with cuDNN a line), TFLOPS rows / groups / cuDNN: D = 64 full
# N = 1024 347 / 352 / 327, 4096 425 / 440 / 403, 16384 454 / 474 / 428; causal 1024 248 / 252 / 231,
# 4096 374 / 381 / 343, 16384 417 / 428 / 394; D = 128 full 1024 375 / 392 / 385, 4096 481 / 498 /
# 486, 16384 502 / 541 / 520 (bfloat16 4096 489 / 507 / 497). At D = 128 causal, with the dQ then
# split (BWD_WS_SPLIT_DQ), rows were ahead (1024 290 / 287 / 282, 4096 447 / 436 / 424, 16384
# 501 / 491 / 495); unsplit, the groups overtook them (see there).
BWD_WS_DQ_GROUPED = {(64, False), (64, True), (128, False), (128, True)}
# The A operand of a wgmma comes from shared memory or from registers. Where it stays the same
# across a consumer's loop (Q in the forward; K and V in the backward), holding it in registers
# takes it off the shared-memory reads of every block, at the price of the registers: a 64-row
# tile of D = 128 is 32 registers a thread (16-bit values, two to a register). By head dim: the
# forward's Q in registers or not; the backward's K and V, 0 (neither), 1 (K) or 2 (both).
# Measured on an NVIDIA H200 (triton 3.6, torch 2.11, 2026-11-24, B·N = 16k tokens, H·D = 2048,
# interleaved runs with cuDNN: a first one, float16, at N = 4096 and 16384, then one per dtype at
# N = 2048 ... 16384 for the two choices taken; ratio to cuDNN, off / on):
# - forward, D = 128, Q: non-causal faster at every shape, float16 N = 2048 0.936 / 0.951, 4096
#   0.990 / 1.000, 8192 1.002 / 1.026, 16384 1.020 / 1.039; bfloat16 0.934 / 0.949, 0.985 / 1.004,
#   1.002 / 1.014, 1.018 / 1.030. Causal within -1.2 to +1.3% (no trend). The consumer's stack frame
#   grows from none to 8 bytes (triton 3.6, non-causal; 3.9: 112, causal 8).
# - forward, D = 64 (first run), Q: three consumers at 160 registers spill (a 112-128 byte
#   frame) and ran at 0.57-0.62 (0.95-1.11 without). With two consumers (128 query rows) it fits,
#   but two consumers took 1-16% longer than three, with Q in registers or not.
# - backward, D = 64, K and V: faster at all 16 shapes (N = 2048 ... 16384, causal or not, both
#   dtypes), e.g. float16 N = 4096 1.013 / 1.044 (K alone 1.013), causal 1.046 / 1.068, 16384
#   1.055 / 1.072, causal 1.002 / 1.028; bfloat16 4096 1.014 / 1.062, causal 1.048 / 1.077. No frame.
# - backward, D = 128 (first run), K alone: a 136-168 byte frame with spills in the loop;
#   0.69-0.79 against 0.96-1.05 without.
FWD_WS_Q_REGISTERS = {64: False, 128: True}
BWD_WS_KV_REGISTERS = {64: 2, 128: 0}
# The longest sequence, by (D, causal), at which the warp-specialized forward runs persistent: one
# program per SM, each taking tile after tile from a schedule built on the host
# (_fwd_schedule), with two sets of query buffers so that a tile's Q loads while the
# consumers finish the tile before. Otherwise one program per tile, dispatched by the hardware as
# SMs free up. Measured on an NVIDIA H200 (triton 3.6, torch 2.11, 2026-11-25, float16, B·N = 16k
# tokens, H·D = 2048, one interleaved run with cuDNN per shape), TFLOPS one tile per program /
# persistent / cuDNN:
# - D = 128 full: N = 1024 458 / 529 / 524, 2048 527 / 571 / 554, 4096 561 / 589 / 564, 8192
#   588 / 600 / 577, 16384 600 / 611 / 589; bfloat16 4096 592 / 614 / 593.
# - D = 128 causal: 1024 328 / 380 / 385, 2048 432 / 460 / 442, 4096 503 / 496 / 467, 8192
#   573 / 527 / 494, 16384 580 / 535 / 501; bfloat16 4096 522 / 519 / 482.
# - D = 64 causal: 1024 209 / 235 / 336, 4096 381 / 370 / 397, 16384 457 / 413 / 420.
# - D = 64 full: 1024 340 / 337 / 413, 4096 448 / 403 / 437, 16384 483 / 428 / 441. Persistent, its
#   consumers spill (triton 3.6: a 160-byte stack frame, none with one tile per program).
# Causal tiles differ in length, and the schedule deals them by an estimate (key blocks plus
# TILE_OVERHEAD_BLOCKS); that the hardware's dispatch, which follows the real times, wins at long
# sequences for that reason is a guess, not measured.
FWD_WS_PERSISTENT = {(64, False): 0, (64, True): 1024, (128, False): math.inf, (128, True): 2048}
PERSISTENT_PROGRAMS = None  # at most this many persistent programs (tests: many tiles each)
# The shortest sequence, by (D, causal), at which the persistent forward splits the tiles left over
# after its last full round by key blocks (see _fwd_schedule); none where no length is given. With
# B·N = 16k tokens and H = 16 there are 2048 tiles of 128 rows, 15.5 rounds of 132 SMs: unsplit,
# the last 68 tiles run on 68 SMs while 64 idle. Quantified on an NVIDIA H100 80GB HBM3 (triton
# 3.6, torch 2.11, 2026-11-25, D = 128 full, float16, N = 4096, one interleaved run with cuDNN),
# TFLOPS ours / cuDNN: 66 heads (2112 tiles, 16 rounds) 620 / 599 against 64 heads (2048 tiles)
# 593 / 572: both lose about 4% to the half-empty last round. Split / whole / cuDNN (same GPU and
# day, B·N = 16k, H = 16, one interleaved run): float16 N = 1024 499 / 517 / 525, 2048 569 / 569 /
# 563, 4096 602 / 593 / 578, 8192 631 / 611 / 593, 16384 632 / 617 / 592; bfloat16 4096 622 / 612 /
# 598. On an NVIDIA H200 (same versions and day, same protocol): float16 N = 1024 501 / 515 / 521,
# 2048 562 / 561 / 555, 4096 596 / 588 / 575, 8192 609 / 596 / 579, 16384 620 / 616 / 583;
# bfloat16 4096 628 / 615 / 602. At N = 1024 a program's share of the last tiles is 5 key blocks,
# too few to pay for the pieces' extra query loads, their float32 outputs and the merging kernel.
FWD_WS_SPLIT_TAIL = {(128, False): 4096}
COMBINE_WARPS = 4  # attention_fwd_combine_kernel: 64 rows of up to 128 float32 values, 64 a thread


def ws_registers(consumers: int) -> dict[str, int]:
    """Registers a thread that setmaxnreg gives each partition of the warp-specialized forward.

    A multiprocessor has 64K registers, shared out by warpgroup: the loader's one warp holds a whole
    warpgroup's share (24 registers a thread, the least setmaxnreg allows), and the consumers split
    the rest, rounded down to a multiple of 8: 240 for two consumers, 160 for three.
    """
    consumer = (65536 - 128 * WS_LOADER_REGISTERS) // (128 * consumers) // 8 * 8
    return {"consumer": min(consumer, 256), "loader": WS_LOADER_REGISTERS}


# Backward, dK/dV: a program owns block_n key rows and loops over block_m query rows; dQ: a program
# owns block_m query rows and loops over block_n key rows. D = 64 and 128 measured on an NVIDIA H200
# (triton 3.6, float16, N = 4096, one table swapped at a time, 24 dK/dV and 8 dQ shapes): at D = 128
# the whole backward went from 241 to 342 TFLOPS with the dK/dV entry (it had 16-row query blocks, the
# only non-spilling choice with 128 key rows) and to 257 with the dQ entry alone; at D = 64, 303 to 340
# (causal 270 to 306) and 303 to 306. Other head dims: compiled without spills, not measured; at
# D = 256 only 32 key rows fit (too few for wgmma's 64-row tiles: these compile to mma.sync).
_DKDV_TILES = {
    16: AttentionConfig(32, 128, 8, 3),
    32: AttentionConfig(32, 128, 8, 3),
    64: AttentionConfig(64, 64, 4, 3),
    128: AttentionConfig(32, 64, 4, 3),
    256: AttentionConfig(16, 32, 8, 2),
}
_DQ_TILES = {
    16: AttentionConfig(128, 32, 8, 3),
    32: AttentionConfig(128, 32, 8, 3),
    64: AttentionConfig(64, 64, 4, 3),
    128: AttentionConfig(128, 64, 8, 3),
    256: AttentionConfig(64, 16, 4, 2),
}
# The backward kernels with tensor descriptors (TMA), measured on an NVIDIA H200 (triton 3.6, float16,
# B·N = 16k tokens, H·D = 2048, N = 4096; 6 dK/dV and 5 dQ shapes per case, then 5 more of each around
# the best). The copy engine frees the registers that pointer tiles took: compiled for sm_90 the
# pointer dK/dV kernel spills at every shape tried at D = 128 (456 bytes at its table's 32 x 64 entry),
# the TMA one at 64 x 64 in 4 warps does not. Whole backward, first sweep (one run per case): D = 128,
# 410 TFLOPS against the pointer kernels' 359 (causal 368 against 277); D = 64, 360 against 351 (causal
# 332 against 267). The second sweep moved D = 64 to 32 x 64 key blocks (+3%, causal +5%).
_DKDV_TMA_TILES = {
    64: AttentionConfig(32, 64, 4, 3),
    128: AttentionConfig(64, 64, 4, 2),
}
_DQ_TMA_TILES = {
    64: AttentionConfig(64, 64, 4, 2),
    128: AttentionConfig(128, 64, 8, 3),
}


def _keyed(
    tiles: dict[int, AttentionConfig], dtypes: tuple[torch.dtype, ...] = SUPPORTED_DTYPES
) -> dict[tuple[int, bool, torch.dtype], AttentionConfig]:
    """A table keyed by (head dim, causal, dtype) from one entry per head dim, shared by the rest of the key."""
    return {(d, causal, dtype): cfg for d, cfg in tiles.items() for causal in (True, False) for dtype in dtypes}


# float8 shares the 16-bit pointer tiles: its blocks hold half the bytes, so they fit where those do.
FWD_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = _keyed(_FWD_TILES) | _keyed(
    {d: cfg for d, cfg in _FWD_TILES.items() if d >= FP8_MIN_HEAD_DIM}, (FP8,))
FWD_TMA_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = {
    (d, causal, dtype): cfg for (d, causal), cfg in _FWD_TMA_TILES.items() for dtype in SUPPORTED_DTYPES
}
FWD_WS_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = _keyed(_FWD_WS_TILES)
BWD_DKDV_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = _keyed(_DKDV_TILES)
BWD_DQ_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = _keyed(_DQ_TILES)
BWD_DKDV_TMA_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = _keyed(_DKDV_TMA_TILES)
BWD_DQ_TMA_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = _keyed(_DQ_TMA_TILES)
BWD_WS_CONFIGS: dict[tuple[int, bool, torch.dtype], AttentionConfig] = _keyed(_BWD_WS_TILES)
# Interpreter mode: small blocks, so that the tests' sequences of 17 … 100 span several blocks and the
# causal diagonal band spans two of the inner blocks.
INTERPRETER_CONFIGS: dict[Kernel, AttentionConfig] = {
    "fwd": AttentionConfig(32, 16, 4, 1),
    "fwd_tma": AttentionConfig(32, 16, 4, 1),
    "bwd_dkdv": AttentionConfig(16, 32, 4, 1),
    "bwd_dkdv_tma": AttentionConfig(16, 32, 4, 1),
    "bwd_dq": AttentionConfig(32, 16, 4, 1),
    "bwd_dq_tma": AttentionConfig(32, 16, 4, 1),
}
_TABLES = {"fwd": FWD_CONFIGS, "fwd_tma": FWD_TMA_CONFIGS, "fwd_ws": FWD_WS_CONFIGS, "bwd_dkdv": BWD_DKDV_CONFIGS,
           "bwd_dkdv_tma": BWD_DKDV_TMA_CONFIGS, "bwd_dq": BWD_DQ_CONFIGS, "bwd_dq_tma": BWD_DQ_TMA_CONFIGS,
           "bwd_ws": BWD_WS_CONFIGS}
# delta's kernel streams O and dO once: blocks of this many elements of each, 8 warps (32 a thread).
PREPROCESS_ELEMENTS, PREPROCESS_WARPS = 8192, 8
# attention_dq_ungroup_kernel: rows a program, in 4 warps (64 rows of D = 128 are 64 values a thread).
UNGROUP_ROWS, UNGROUP_WARPS = 64, 4
_INT32_LIMIT = 2**31 - 1
_MAX_PROGRAMS_AXIS_1 = 65535  # CUDA's limit on the grid's second dimension


def attention_config(head_dim: int, causal: bool, dtype: torch.dtype, kernel: Kernel = "fwd") -> AttentionConfig:
    """The launch configuration of one attention kernel: ``"fwd"`` (the forward with pointer loads),
    ``"fwd_tma"`` (the forward with tensor descriptors), ``"fwd_ws"`` (the warp-specialized
    forward), ``"bwd_dkdv"``, ``"bwd_dq"`` (and their ``_tma`` variants), ``"bwd_ws"`` (the
    warp-specialized backward).

    From ``INTERPRETER_CONFIGS`` in interpreter mode (which cannot run the warp-specialized
    kernels: their entries are the GPU tables'), else from the table of that kernel.
    """
    if kernel not in _TABLES:
        raise ValueError(f"kernel must be one of {', '.join(_TABLES)}; got {kernel!r}")
    if runtime.is_interpreter() and kernel in INTERPRETER_CONFIGS:
        return INTERPRETER_CONFIGS[kernel]
    key = (head_dim, bool(causal), dtype)
    if key not in _TABLES[kernel]:
        raise ValueError(f"no {kernel} configuration for head_dim {head_dim}, causal={causal}, dtype {dtype}")
    return _TABLES[kernel][key]


# -- launchers -----------------------------------------------------------------------------------
def _check_4d(name: str, t: object, dtypes: tuple[torch.dtype, ...] = SUPPORTED_DTYPES) -> torch.Tensor:
    validation.check_tensor(name, t)
    if t.dim() != 4:
        raise ValueError(f"{name} must be 4-D (batch, heads, seq_len, head_dim), got shape {tuple(t.shape)}")
    if t.layout != torch.strided:
        raise ValueError(f"{name} must be a dense (strided) tensor, got layout {t.layout}")
    validation.check_dtype(name, t, dtypes)
    return t


def _check_qkv(
    q: object, k: object, v: object, causal: object, sm_scale: object, dtypes: tuple[torch.dtype, ...] = SUPPORTED_DTYPES
) -> tuple[torch.device, float]:
    """Validate the forward's inputs; return the device and the softmax scale to use."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_4d(name, t, dtypes)
    device = validation.check_device(q=q, k=k, v=v)
    validation.check_same("dtype", q=q, k=k, v=v)
    validation.check_same("shape", k=k, v=v)
    (b, h, n, d), (b_kv, h_kv, n_kv, d_kv) = q.shape, k.shape
    if b_kv != b:
        raise ValueError(f"batch sizes differ: q has {b}, k and v have {b_kv}")
    if n_kv != n:
        raise ValueError(f"sequence lengths differ: q has N = {n}, k and v have {n_kv}; "
                         "queries and keys of different lengths are not supported")
    if d_kv != d:
        raise ValueError(f"head dims differ: q has D = {d}, k and v have D = {d_kv}")
    if d not in HEAD_DIMS:
        raise ValueError(f"head_dim D = {d} is not supported; supported: {', '.join(map(str, HEAD_DIMS))}")
    if q.dtype == FP8 and d < FP8_MIN_HEAD_DIM:
        raise ValueError(f"float8 attention needs head_dim D >= {FP8_MIN_HEAD_DIM} (the float8 MMA's K step), got D = {d}")
    if (h_kv == 0 and h != 0) or (h_kv != 0 and h % h_kv != 0):
        raise ValueError(f"q's {h} heads are not a multiple of k and v's {h_kv} heads "
                         "(grouped-query attention needs H_q = G · H_kv)")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(d)
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, (int, float)) or not math.isfinite(sm_scale) or sm_scale <= 0:
        raise ValueError(f"sm_scale must be a finite number > 0, got {sm_scale!r}")
    if b * h > _MAX_PROGRAMS_AXIS_1:
        raise ValueError(f"at most {_MAX_PROGRAMS_AXIS_1} (batch × heads) pairs are supported, got {b} × {h} = {b * h}")
    return device, float(sm_scale)


def _check_head_offsets(**tensors: torch.Tensor) -> None:
    """Offsets within one head are 32-bit in the kernels: refuse layouts whose heads span more."""
    for name, t in tensors.items():
        n, d = t.shape[2], t.shape[3]
        if n and d and (n - 1) * abs(t.stride(2)) + (d - 1) * abs(t.stride(3)) > _INT32_LIMIT:
            raise ValueError(f"{name}'s heads span more than 2**31 elements (shape {tuple(t.shape)}, strides "
                             f"{tuple(t.stride())}); this is not supported")


def _strides(t: torch.Tensor) -> tuple[int, int, int, int]:
    return t.stride(0), t.stride(1), t.stride(2), t.stride(3)


def _check_knobs(**knobs: int | None) -> None:
    for name in ("block_m", "block_n"):
        value = knobs[name]
        if value is not None and (not isinstance(value, int) or value < 16 or value & (value - 1) or value > 256):
            raise ValueError(f"{name} must be a power of two between 16 and 256, got {value!r}")
    warps = knobs["num_warps"]
    if warps is not None and (not isinstance(warps, int) or warps < 1 or warps & (warps - 1) or warps > 16):
        raise ValueError(f"num_warps must be a power of two between 1 and 16, got {warps!r}")
    stages = knobs["num_stages"]
    if stages is not None and (isinstance(stages, bool) or not isinstance(stages, int) or stages < 1):
        raise ValueError(f"num_stages must be a positive integer, got {stages!r}")


def _tma_obstacle(**tensors: torch.Tensor) -> str | None:
    """Why tensor descriptors cannot describe these 4-D tensors (or this device), or None if they can."""
    first = next(iter(tensors.values()))
    if not runtime.is_interpreter() and torch.cuda.get_device_capability(first.device)[0] < 9:
        return "tensor descriptors need a Hopper (sm_90) or newer GPU"
    for name, t in tensors.items():
        if t.stride(3) != 1 and t.shape[3] > 1:
            return f"{name}'s head dim is not contiguous (strides {tuple(t.stride())})"
        if t.data_ptr() % 16:
            return f"{name} does not start at a 16-byte boundary"
        for dim in range(3):
            if t.shape[dim] > 1 and (t.stride(dim) <= 0 or t.stride(dim) * t.element_size() % 16):
                return (f"{name}'s stride {t.stride(dim)} along dimension {dim} is not a positive multiple of 16 bytes "
                        f"(strides {tuple(t.stride())})")
    return None


def _descriptor_strides(t: torch.Tensor) -> list[int]:
    # A dimension of size 1 is only ever read at index 0: any stride the descriptor accepts will do.
    unit = 16 // t.element_size()
    return [s if n > 1 else unit for n, s in zip(t.shape[:3], t.stride()[:3], strict=True)] + [1]


def _descriptor(t: torch.Tensor, rows: int):
    """A host-side tensor descriptor of the whole 4-D tensor ``t``, in blocks of ``1 x 1 x rows x D``."""
    runtime.bind_context(t.device)
    return TensorDescriptor(t, list(t.shape), _descriptor_strides(t), [1, 1, rows, t.shape[3]])


def _ws_descriptor(t: torch.Tensor, rows: int, cols: int | None = None, swizzle: int | None = None):
    """As :func:`_descriptor`, for the Gluon kernel: Gluon's descriptor also names the shared-memory
    layout of a block (the widest swizzle its rows allow, or ``swizzle`` bytes), which the kernel
    allocates its buffers with. Blocks are ``cols`` wide if given, else the whole of ``D``."""
    runtime.bind_context(t.device)
    block = [1, 1, rows, cols or t.shape[3]]
    layout = gl.NVMMASharedLayout.get_default_for(block, _GLUON_DTYPES[t.dtype])
    if swizzle is not None:
        layout = gl.NVMMASharedLayout(swizzle, layout.element_bitwidth, layout.rank)
    return GluonTensorDescriptor(t, list(t.shape), _descriptor_strides(t), block, layout)


def _ws_rows_descriptor(t: torch.Tensor):
    """A Gluon descriptor of the float32 rows ``t`` (the backward's padded lse2 or delta), flattened,
    in blocks of ``WS_ROWS``, unswizzled: the consumers read a block as one vector."""
    runtime.bind_context(t.device)
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=1)
    return GluonTensorDescriptor(t.reshape(-1), [t.numel()], [1], [WS_ROWS], layout)


def _resolve_method(method: str, measured: bool, **tensors: torch.Tensor) -> str:
    """``"tma"`` or ``"pointers"``: what ``method`` resolves to for these tensors. ``measured``:
    whether a TMA table entry exists for them (``"auto"`` takes TMA only then)."""
    if method == "pointers":
        return method
    obstacle = _tma_obstacle(**tensors)
    if method == "tma":
        if obstacle:
            raise ValueError(f"method='tma' cannot run: {obstacle}")
        return method
    return "tma" if measured and obstacle is None else "pointers"


def _gluon_obstacle(table: dict, q: torch.Tensor, causal: bool) -> str | None:
    """Why a warp-specialized kernel with configurations ``table`` cannot run for ``q``'s device,
    head dim and dtype, or None (the layouts of the tensors aside)."""
    if runtime.is_interpreter():
        return "Triton's interpreter does not run Gluon kernels"
    capability = torch.cuda.get_device_capability(q.device)
    if capability != (9, 0):
        return f"it is written for Hopper's warpgroup MMA (sm_90); this GPU is sm_{capability[0]}{capability[1]}"
    if (q.shape[3], causal, q.dtype) not in table:
        dims = sorted({d for d, _, _ in table})
        return f"it has configurations for float16 and bfloat16 at head dims {dims} only, not {q.dtype} at {q.shape[3]}"
    return None


def _ws_obstacle(q, k, v, o, causal: bool) -> str | None:
    """Why the warp-specialized forward cannot run on these tensors (or here), or None if it can."""
    return _gluon_obstacle(FWD_WS_CONFIGS, q, causal) or _tma_obstacle(q=q, k=k, v=v, o=o)


def _ws_bwd_obstacle(causal: bool, **tensors: torch.Tensor) -> str | None:
    """Why the warp-specialized backward cannot run on these tensors (or here), or None if it can."""
    q = tensors["q"]
    if obstacle := _gluon_obstacle(BWD_WS_CONFIGS, q, causal):
        return obstacle
    b, h, n, _ = q.shape
    if b * h * triton.cdiv(n, WS_ROWS) * WS_ROWS > _INT32_LIMIT:
        return f"its 32-bit row coordinates cannot address {b * h} heads of {n} rows"
    return _tma_obstacle(**tensors)


def _tma_or_pointers(method: str, causal: bool, **tensors: torch.Tensor) -> str:
    """``"tma"`` or ``"pointers"`` for the forward kernel with tl.dot (``method`` "auto", "tma" or "pointers")."""
    q = tensors["q"]
    return _resolve_method(method, (q.shape[3], causal, q.dtype) in FWD_TMA_CONFIGS, **tensors)


def _fwd_method(method: str, q, k, v, o, causal: bool, pinned: str | None = None) -> str:
    """``"warp_specialized"``, ``"tma"`` or ``"pointers"`` for the forward.

    ``"auto"`` takes the warp-specialized kernel where it has a measured entry, can run, and the
    sequence is at least :data:`WS_MIN_LENGTH` long; then as :func:`_resolve_method`. ``pinned``
    says what pins the launch (knobs, ``skip_masked_blocks``), which only the other two kernels take.
    """
    if method in ("auto", "warp_specialized"):
        obstacle = pinned or _ws_obstacle(q, k, v, o, causal)
        if method == "warp_specialized":
            if obstacle:
                raise ValueError(f"method='warp_specialized' cannot run: {obstacle}")
            return method
        if obstacle is None and q.shape[2] >= WS_MIN_LENGTH.get((q.shape[3], causal), 0):
            return "warp_specialized"
    return _tma_or_pointers(method, causal, q=q, k=k, v=v, o=o)


def _bwd_method(method: str, q, k, v, do, dq, dk, dv, causal: bool) -> str:
    """``"warp_specialized"``, ``"tma"`` or ``"pointers"`` for the backward.

    ``"auto"`` takes the warp-specialized kernel where it has an entry and can run, unless torch
    is set to deterministic algorithms (its ``dQ`` sums float32 contributions in whatever order
    they arrive); then as :func:`_resolve_method` for the two tl.dot kernels.
    """
    if method in ("auto", "warp_specialized"):
        obstacle = _ws_bwd_obstacle(causal, q=q, k=k, v=v, do=do, dk=dk, dv=dv)
        if method == "warp_specialized":
            if obstacle:
                raise ValueError(f"method='warp_specialized' cannot run: {obstacle}")
            return method
        if obstacle is None and not torch.are_deterministic_algorithms_enabled():
            return "warp_specialized"
    key = (q.shape[3], causal, q.dtype)
    measured = key in BWD_DKDV_TMA_CONFIGS and key in BWD_DQ_TMA_CONFIGS
    return _resolve_method(method, measured, q=q, k=k, v=v, do=do, dq=dq, dk=dk, dv=dv)


def _fwd_config(d: int, causal: bool, dtype: torch.dtype, knobs: dict, method: str = "pointers") -> AttentionConfig:
    base = attention_config(d, causal, dtype, "fwd_tma" if method == "tma" and (d, causal, dtype) in FWD_TMA_CONFIGS else "fwd")
    cfg = AttentionConfig(knobs.get("block_m") or base.block_m, knobs.get("block_n") or base.block_n,
                          knobs.get("num_warps") or base.num_warps, knobs.get("num_stages") or base.num_stages)
    if cfg.block_m % cfg.block_n:
        # The causal loops split at m0 = program * block_m, which must be a block boundary of the keys.
        raise ValueError(f"block_m ({cfg.block_m}) must be a multiple of block_n ({cfg.block_n})")
    return cfg


def _out_dtype(q: torch.Tensor, out_dtype: torch.dtype | None) -> torch.dtype:
    """The output dtype: ``q``'s for 16-bit inputs; ``out_dtype`` (bfloat16 by default) for float8 ones."""
    if q.dtype != FP8:
        if out_dtype not in (None, q.dtype):
            raise ValueError(f"out_dtype applies to float8 inputs only; {q.dtype} inputs give a {q.dtype} output")
        return q.dtype
    if out_dtype is None:
        return torch.bfloat16
    if out_dtype not in FP8_OUT_DTYPES:
        raise ValueError(f"out_dtype must be torch.bfloat16 or torch.float16 for float8 inputs, got {out_dtype!r}")
    return out_dtype


def _head_group(causal: bool) -> int:
    """Heads per group in the order causal programs start (see ``_causal_order``); 1 when all programs are alike."""
    return CAUSAL_HEAD_GROUP if causal else 1


def _causal_order_host(i: int, zh: int, n_i: int, n_zh: int, group: int) -> tuple[int, int]:
    """``_causal_order`` on the host: (rank, zh) of tile (i, zh)."""
    lin = zh * n_i + i
    first = lin // (group * n_i) * group
    size = min(group, n_zh - first)
    within = lin - first * n_i
    return within // size, first + within % size


# Work a tile costs besides its key blocks (the loads before its first block, the output store after
# its last), in key blocks: the persistent schedule's estimate.
TILE_OVERHEAD_BLOCKS = 2


class FwdSchedule(NamedTuple):
    """The persistent forward's schedule (see :func:`_fwd_schedule`)."""

    table: torch.Tensor  #: int32, a row per program: its number of visits, then SCHED_ENTRY values a visit
    width: int  #: the table's row width
    splits: torch.Tensor  #: int32, a row per split tile: flat head, first row, first slot, pieces
    slots: int  #: pieces that write to the partial buffers (BLOCK_M rows each)


def _visit_table(rows: list[list[int]]) -> torch.Tensor:
    """int32, a row per program: its number of visits, then its visits' values (``rows[p]``), zero-padded."""
    table = torch.zeros((len(rows), 1 + max(len(r) for r in rows)), dtype=torch.int32)
    for p, r in enumerate(rows):
        table[p, 0] = len(r) // SCHED_ENTRY
        table[p, 1:1 + len(r)] = torch.tensor(r, dtype=torch.int32)
    return table


def _fwd_schedule(n: int, n_zh: int, causal: bool, block_m: int, block_n: int, programs: int,
                  split_tail: bool = False) -> FwdSchedule:
    """The persistent forward's schedule: the tiles of ``n_zh`` heads of ``n`` rows, in the order
    ``_ws_fwd_tile`` numbers them (causal: the longest first), each dealt to the program with the
    least work so far (its key blocks plus :data:`TILE_OVERHEAD_BLOCKS` a tile).

    Without a mask every tile costs the same, so program ``p`` takes tiles ``p``, ``p + programs``,
    ... With ``split_tail``, the tiles left over after the last round that fills every program are
    split by key blocks instead: their blocks, in order, are shared out in equal runs, one run per
    program, so that no program ends a whole tile after the others. A run's piece of a tile that is
    not the whole tile writes its output to a slot of the partial buffers, and
    ``attention_fwd_combine_kernel`` merges the pieces of each split tile.

    Each visit is (flat head, first row, first key block, key blocks, slot), the slot -1 for a whole
    tile. Returns the tables on the host.
    """
    n_i = triton.cdiv(n, block_m)
    tiles = n_i * n_zh
    splits: list[list[int]] = []
    if not causal:
        blocks = triton.cdiv(n, block_n)
        whole = tiles - tiles % programs if split_tail else tiles
        # The rounds of whole tiles, built in one go: a long sequence has many tiles.
        per = triton.cdiv(whole, programs)
        tile = torch.arange(per * programs).reshape(per, programs).T
        taken = tile < whole
        entries = torch.stack((tile // n_i, tile % n_i * block_m, torch.zeros_like(tile),
                               torch.full_like(tile, blocks), torch.full_like(tile, -1)), -1)
        rounds = (entries * taken[..., None]).reshape(programs, -1)
        # The rest, by key blocks: program p takes blocks [p * run, (p + 1) * run) of the leftover tiles.
        units = (tiles - whole) * blocks
        run = triton.cdiv(units, programs)
        rest: list[list[int]] = [[] for _ in range(programs)]
        slots = 0
        for p in range(programs):
            u, end = p * run, min((p + 1) * run, units)
            while u < end:
                t, kb0 = whole + u // blocks, u % blocks
                count = min(blocks - kb0, end - u)
                zh, m0 = t // n_i, t % n_i * block_m
                if count == blocks:
                    rest[p] += [zh, m0, 0, blocks, -1]
                else:
                    if kb0 == 0:
                        splits.append([zh, m0, slots, 0])
                    splits[-1][3] += 1
                    rest[p] += [zh, m0, kb0, count, slots]
                    slots += 1
                u += count
        rest_table = _visit_table(rest)
        table = torch.cat((rest_table[:, :1] + taken.sum(1, keepdim=True).int(), rounds.int(), rest_table[:, 1:]), 1)
        return FwdSchedule(table, table.shape[1], torch.tensor(splits, dtype=torch.int32).reshape(-1, 4), slots)
    loads = [(0, p) for p in range(programs)]
    rows: list[list[int]] = [[] for _ in range(programs)]
    for tile in range(tiles):
        i, zh = tile % n_i, tile // n_i
        rank, zh = _causal_order_host(i, zh, n_i, n_zh, _head_group(True))
        i = n_i - 1 - rank
        blocks = min(triton.cdiv(n, block_n), triton.cdiv((i + 1) * block_m, block_n))
        load, p = heapq.heappop(loads)
        rows[p] += [zh, i * block_m, 0, blocks, -1]
        heapq.heappush(loads, (load + blocks + TILE_OVERHEAD_BLOCKS, p))
    table = _visit_table(rows)
    return FwdSchedule(table, table.shape[1], torch.zeros((0, 4), dtype=torch.int32), 0)


# Schedules copied to a device, by (device, _fwd_schedule's arguments), the most recently used last;
# at most SCHEDULE_CACHE_SIZE of them.
_SCHEDULES: collections.OrderedDict[tuple, FwdSchedule] = collections.OrderedDict()
SCHEDULE_CACHE_SIZE = 64
# Schedules a CUDA graph captured: its kernels read them at every replay, so they are never freed.
_CAPTURED_SCHEDULES: dict[tuple, FwdSchedule] = {}


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _device_schedule(device: torch.device, *args: int) -> FwdSchedule | None:
    """``_fwd_schedule(*args)`` on ``device``, copied there on first use and kept.

    ``None`` while a CUDA graph is being captured and the schedule is not on the device yet: a copy
    from pageable host memory cannot be captured, and the caller launches a program per tile instead.
    """
    key = (device, *args)
    capturing = _capturing(device)
    entry = _SCHEDULES.pop(key, None) or _CAPTURED_SCHEDULES.get(key)
    if entry is None:
        if capturing:
            return None
        host = _fwd_schedule(*args)
        entry = host._replace(table=host.table.to(device), splits=host.splits.to(device))
    _SCHEDULES[key] = entry
    if len(_SCHEDULES) > SCHEDULE_CACHE_SIZE:
        _SCHEDULES.popitem(last=False)
    if capturing:
        _CAPTURED_SCHEDULES[key] = entry
    return entry


def _forward(
    q, k, v, causal, sm_scale, out, knobs, out_dtype=None, method="auto", skip_masked_blocks=True
) -> tuple[torch.Tensor, torch.Tensor]:
    b, h, n, d = q.shape
    o = torch.empty(q.shape, dtype=_out_dtype(q, out_dtype), device=q.device) if out is None else out
    lse = torch.empty((b, h, n), dtype=torch.float32, device=q.device)
    if o.numel() == 0:
        return o, lse
    pinned = [name for name, value in knobs.items() if value is not None]
    reason = f"it takes no knobs ({', '.join(pinned)} given)" if pinned else None
    if not skip_masked_blocks:
        reason = "it always skips the causal blocks right of the diagonal (skip_masked_blocks=False given)"
    method = _fwd_method(method, q, k, v, o, causal, reason)
    if method == "warp_specialized":
        cfg = attention_config(d, causal, q.dtype, "fwd_ws")
        srcs = (_ws_descriptor(q, WS_ROWS), _ws_descriptor(k, cfg.block_n), _ws_descriptor(v, cfg.block_n),
                _ws_descriptor(o, WS_ROWS))
        regs = ws_registers(cfg.block_m // WS_ROWS)
        grid = (triton.cdiv(n, cfg.block_m), b * h)  # a program per tile
        schedule = None
        if n <= FWD_WS_PERSISTENT[(d, causal)]:
            n_tiles = grid[0] * grid[1]
            programs = min(n_tiles, runtime.sm_count(q.device), PERSISTENT_PROGRAMS or n_tiles)
            split_tail = n >= FWD_WS_SPLIT_TAIL.get((d, causal), math.inf)
            # None while a graph is being captured (see _device_schedule): a program per tile.
            schedule = _device_schedule(q.device, n, b * h, causal, cfg.block_m, cfg.block_n, programs, split_tail)
        sched, width, part_o, part_lse = lse, 0, lse, lse  # placeholders, not read without a schedule or splits
        if schedule is not None:
            sched, width, grid = schedule.table, schedule.width, (schedule.table.shape[0],)
            if schedule.slots:
                part_o = torch.empty((schedule.slots * cfg.block_m, d), dtype=torch.float32, device=q.device)
                part_lse = torch.empty((schedule.slots * cfg.block_m,), dtype=torch.float32, device=q.device)
        attention_fwd_ws_kernel[grid](
            *srcs, lse, sched, width, part_o, part_lse, b * h, h, n, h // k.shape[1], sm_scale * LOG2E,
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, NUM_STAGES=cfg.num_stages, IS_CAUSAL=causal,
            CONSUMER_REGS=regs["consumer"], LOADER_REGS=regs["loader"], HEAD_GROUP=_head_group(causal),
            Q_REGS=FWD_WS_Q_REGISTERS[d], PERSISTENT=schedule is not None, num_warps=cfg.num_warps,
        )
        if schedule is not None and schedule.slots:
            attention_fwd_combine_kernel[(schedule.splits.shape[0], cfg.block_m // WS_ROWS)](
                part_o, part_lse, schedule.splits, o, lse, *_strides(o), h, n,
                BLOCK_M=cfg.block_m, ROWS=WS_ROWS, HEAD_DIM=d, num_warps=COMBINE_WARPS,
            )
        return o, lse
    cfg = _fwd_config(d, causal, q.dtype, knobs, method)
    if method == "tma":
        srcs = (_descriptor(q, cfg.block_m), _descriptor(k, cfg.block_n), _descriptor(v, cfg.block_n),
                _descriptor(o, cfg.block_m))
    else:
        _check_head_offsets(q=q, k=k, v=v)
        srcs = (q, k, v, o)
    grid = (triton.cdiv(n, cfg.block_m), b * h)
    attention_fwd_kernel[grid](
        *srcs, lse, *_strides(q), *_strides(k), *_strides(v), *_strides(o),
        h, n, h // k.shape[1], sm_scale * LOG2E,
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, HEAD_DIM=d, IS_CAUSAL=causal, TMA=method == "tma",
        SKIP_BLOCKS=skip_masked_blocks, HEAD_GROUP=_head_group(causal), num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
    )
    return o, lse


def _backward(do, q, k, v, o, lse, causal, sm_scale, dq=None, dk=None, dv=None, method="auto"):
    b, h, n, d = q.shape
    h_kv = k.shape[1]
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device) if dq is None else dq
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device) if dk is None else dk
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device) if dv is None else dv
    if q.numel() == 0:
        return dq, dk, dv
    _check_head_offsets(q=q, k=k, v=v, o=o, do=do)
    group = h // h_kv
    method = _bwd_method(method, q, k, v, do, dq, dk, dv, causal)
    ws = method == "warp_specialized"
    # The warp-specialized kernel reads delta and lse2 in blocks of WS_ROWS rows: padded rows per head.
    n_out = triton.cdiv(n, WS_ROWS) * WS_ROWS if ws else n
    delta = torch.empty((b, h, n_out), dtype=torch.float32, device=q.device)
    lse2 = torch.empty_like(delta) if ws else delta
    block = 32 if runtime.is_interpreter() else PREPROCESS_ELEMENTS // d
    attention_bwd_preprocess_kernel[(triton.cdiv(n_out, block), b * h)](
        o, do, delta, lse, lse2, *_strides(o), *_strides(do), h, n, n_out, BLOCK_M=block, HEAD_DIM=d, LSE2=ws,
        num_warps=PREPROCESS_WARPS,
    )
    if ws:
        _backward_ws(q, k, v, do, lse2, delta, dq, dk, dv, causal, sm_scale)
        return dq, dk, dv
    common = (h, n, group, sm_scale, sm_scale * LOG2E)
    tma = method == "tma"
    kv = attention_config(d, causal, q.dtype, "bwd_dkdv_tma" if tma else "bwd_dkdv")
    qc = attention_config(d, causal, q.dtype, "bwd_dq_tma" if tma else "bwd_dq")
    if tma:
        # Each kernel reads its own blocks in rows of block_m (query side) or block_n (key side).
        kv_srcs = (_descriptor(q, kv.block_m), _descriptor(k, kv.block_n), _descriptor(v, kv.block_n),
                   _descriptor(do, kv.block_m), lse, delta, _descriptor(dk, kv.block_n), _descriptor(dv, kv.block_n))
        q_srcs = (_descriptor(q, qc.block_m), _descriptor(k, qc.block_n), _descriptor(v, qc.block_n),
                  _descriptor(do, qc.block_m), lse, delta, _descriptor(dq, qc.block_m))
    else:
        kv_srcs = (q, k, v, do, lse, delta, dk, dv)
        q_srcs = (q, k, v, do, lse, delta, dq)
    attention_bwd_dkdv_kernel[(triton.cdiv(n, kv.block_n), b * h_kv)](
        *kv_srcs, *_strides(q), *_strides(k), *_strides(v), *_strides(do), *_strides(dk), *_strides(dv), *common,
        BLOCK_M=kv.block_m, BLOCK_N=kv.block_n, HEAD_DIM=d, IS_CAUSAL=causal, TMA=tma,
        HEAD_GROUP=_head_group(causal), num_warps=kv.num_warps, num_stages=kv.num_stages,
    )
    attention_bwd_dq_kernel[(triton.cdiv(n, qc.block_m), b * h)](
        *q_srcs, *_strides(q), *_strides(k), *_strides(v), *_strides(do), *_strides(dq), *common,
        BLOCK_M=qc.block_m, BLOCK_N=qc.block_n, HEAD_DIM=d, IS_CAUSAL=causal, TMA=tma,
        HEAD_GROUP=_head_group(causal), num_warps=qc.num_warps, num_stages=qc.num_stages,
    )
    return dq, dk, dv


def _ws_dq_buffer(q: torch.Tensor, causal: bool):
    """The warp-specialized backward's float32 dQ buffer (zeros) and its descriptor: in rows or in
    column groups (:data:`BWD_WS_DQ_GROUPED`), in blocks of ``WS_ROWS`` rows and ``D`` columns (``D / 2``
    where the dQ is split, see :data:`BWD_WS_SPLIT_DQ`)."""
    b, h, n, d = q.shape
    dq_cols = d // 2 if (d, causal) in BWD_WS_SPLIT_DQ else d
    if (d, causal) in BWD_WS_DQ_GROUPED:
        # Blocks of WS_ROWS rows of a group as 2 rows of 256 floats (TMA moves a box row by row: wide
        # rows are fewer messages); rows padded to a multiple of WS_ROWS so no block spans two heads.
        n_pad = triton.cdiv(n, WS_ROWS) * WS_ROWS
        dq32 = torch.zeros((b, h, d // 8, n_pad, 8), dtype=torch.float32, device=q.device)
        view = dq32.view(b, h, d // 8, n_pad // 32, 256)
        runtime.bind_context(q.device)
        return dq32, GluonTensorDescriptor(view, list(view.shape), list(view.stride()),
                                           [1, 1, dq_cols // 8, WS_ROWS // 32, 256], gl.NVMMASharedLayout(0, 32, 5))
    dq32 = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    return dq32, _ws_descriptor(dq32, WS_ROWS, dq_cols, BWD_WS_DQ_SWIZZLE[d])


def _backward_ws(q, k, v, do, lse2, delta, dq, dk, dv, causal, sm_scale):
    """The warp-specialized backward's launch: ``lse2`` and ``delta`` as the preprocessing kernel
    writes them (rows padded to a multiple of ``WS_ROWS``); dQ goes through a float32 buffer."""
    b, h, n, d = q.shape
    h_kv = k.shape[1]
    cfg = attention_config(d, causal, q.dtype, "bwd_ws")
    dq32, dq_desc = _ws_dq_buffer(q, causal)
    regs = ws_registers(2)
    attention_bwd_ws_kernel[(triton.cdiv(n, cfg.block_n), b * h_kv)](
        _ws_descriptor(q, WS_ROWS), _ws_descriptor(k, WS_ROWS), _ws_descriptor(v, WS_ROWS), _ws_descriptor(do, WS_ROWS),
        _ws_descriptor(dk, WS_ROWS), _ws_descriptor(dv, WS_ROWS), _ws_rows_descriptor(lse2), _ws_rows_descriptor(delta),
        dq_desc,
        h, n, lse2.shape[2], h // h_kv, sm_scale, sm_scale * LOG2E,
        NUM_STAGES=cfg.num_stages, DS_STAGES=BWD_WS_DS_STAGES, IS_CAUSAL=causal, CONSUMER_REGS=regs["consumer"],
        LOADER_REGS=regs["loader"], HEAD_GROUP=_head_group(causal), KV_REGS=BWD_WS_KV_REGISTERS[d],
        num_warps=cfg.num_warps,
    )
    if dq32.dim() == 5:
        attention_dq_ungroup_kernel[(triton.cdiv(n, UNGROUP_ROWS), b * h)](
            dq32, dq, *_strides(dq), h, n, dq32.shape[3], BLOCK_M=UNGROUP_ROWS, HEAD_DIM=d, num_warps=UNGROUP_WARPS)
    else:
        dq.copy_(dq32)


def attention_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
    *,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    block_m: int | None = None,
    block_n: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    method: Method = "auto",
    skip_masked_blocks: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention forward pass, with the log-sum-exp the backward pass needs. No autograd.

    Args:
        q: queries ``(B, H, N, D)``, float16, bfloat16 or float8_e4m3fn, on a CUDA device (or
            the CPU in interpreter mode). ``D`` is 16, 32, 64, 128 or 256. Any strides: a
            ``(B, N, H, D)`` tensor transposed to ``(B, H, N, D)`` is read in place (fastest with
            ``D`` contiguous). Float8 inputs (forward only) are multiplied as they are: fold their
            dequantization scales into ``sm_scale`` (``q`` and ``k``'s) and into the output
            (``v``'s). The probabilities then enter the second matmul rounded to float8 too,
            which bounds the output's error by about ``2⁻⁴ · max|v|``.
        k, v: keys and values ``(B, H_kv, N, D)``, same dtype and device; ``H`` must be a multiple
            of ``H_kv`` (grouped-query attention; ``H_kv = H`` for ordinary multi-head attention).
        causal: query ``i`` sees keys ``0 … i`` only.
        sm_scale: the factor applied to ``Q Kᵀ`` before the softmax, ``> 0``; default ``1 / sqrt(D)``.
        out: optional contiguous tensor of ``q``'s shape and the output dtype to write into.
        out_dtype: for float8 inputs, the output's dtype: ``torch.bfloat16`` (default) or
            ``torch.float16``. Other inputs give an output of their own dtype.
        block_m, block_n, num_warps, num_stages: pin the forward kernel's launch instead of taking
            ``attention_config``'s (any one given replaces that value only). ``block_m`` must
            be a multiple of ``block_n``.
        method: which kernel runs, and how it reads and writes blocks. ``"tma"``: through tensor
            descriptors (Hopper's copy engine computes the addresses; needs a Hopper or newer GPU,
            ``D`` contiguous and the other strides multiples of 16 bytes). ``"pointers"``: through
            tensors of addresses, for any strides and GPU. ``"warp_specialized"``: the Gluon kernel
            whose warps split loading and computing, through tensor descriptors; Hopper (sm_90)
            only, 16-bit inputs with ``D`` = 64 or 128, no knobs. ``"auto"`` (default): the first of
            ``"warp_specialized"`` (from the lengths in ``WS_MIN_LENGTH``), ``"tma"`` (16-bit
            inputs, ``D`` = 64 or 128) that was measured faster and can run, else ``"pointers"``.
        skip_masked_blocks: causal attention skips the key blocks right of the diagonal (default).
            ``False`` visits every block and masks, which gives the same result for twice the work:
            the lesson measures what deciding per block instead of per score is worth (not with
            the warp-specialized kernel).

    Returns:
        ``(o, lse)``: ``o`` of ``q``'s shape (and dtype, for 16-bit inputs), and ``lse``, float32
        ``(B, H, N)``, the natural log-sum-exp of every row of scaled scores.

    Raises:
        TypeError: a non-tensor argument, an unsupported dtype, or a non-bool ``causal``.
        ValueError: a wrong rank, mismatched shapes, dtypes or devices, an unsupported head dim,
            heads that do not group, a bad ``sm_scale``, ``out``, ``out_dtype`` or knob.
    """
    _, sm_scale = _check_qkv(q, k, v, causal, sm_scale, FWD_DTYPES)
    knobs = dict(block_m=block_m, block_n=block_n, num_warps=num_warps, num_stages=num_stages)
    _check_knobs(**knobs)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")
    if not isinstance(skip_masked_blocks, bool):
        raise TypeError(f"skip_masked_blocks must be a bool, got {type(skip_masked_blocks).__name__}")
    dtype = _out_dtype(q, out_dtype)
    if out is not None:
        validation.check_tensor("out", out)
        validation.check_device(q=q, out=out)
        if out.dtype != dtype:
            raise ValueError(f"dtypes differ: out has {out.dtype}, the output is {dtype}")
        validation.check_same("shape", q=q, out=out)
        validation.check_contiguous(out=out)
    return _forward(q, k, v, causal, sm_scale, out, knobs, dtype, method, skip_masked_blocks)


def attention_bwd(
    do: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
    *,
    dq: torch.Tensor | None = None,
    dk: torch.Tensor | None = None,
    dv: torch.Tensor | None = None,
    method: Method = "auto",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The attention backward pass: ``(dq, dk, dv)`` from the output's gradient and the forward's results.

    Args:
        do: the gradient of the loss with respect to ``o``: ``q``'s shape and dtype, any strides
            (a broadcast gradient of stride 0 is read in place).
        q, k, v, causal, sm_scale: the forward's inputs, as for :func:`attention_fwd`.
        o, lse: the forward's output and log-sum-exp (:func:`attention_fwd`).
        dq, dk, dv: optional contiguous tensors of ``q``'s, ``k``'s and ``v``'s shape and dtype to
            write the gradients into.
        method: which kernels run. ``"tma"`` and ``"pointers"``: the dK/dV and dQ kernels with
            tl.dot, as for :func:`attention_fwd` (``"tma"`` also needs ``do``, ``dk`` and ``dv``
            laid out as described there). ``"warp_specialized"``: the one Gluon kernel for all
            three gradients, with the same needs as the warp-specialized forward; its ``dq`` sums
            float32 contributions in the order they arrive, so it can differ between runs in its
            last bits. ``"auto"`` (default): ``"warp_specialized"`` where it can run, unless
            ``torch.are_deterministic_algorithms_enabled()``; else as for :func:`attention_fwd`.

    Returns:
        ``(dq, dk, dv)`` in the shapes and dtype of ``q``, ``k`` and ``v``. With grouped-query
        attention, ``dk`` and ``dv`` sum the contributions of every query head of a group.

    Raises:
        TypeError: as :func:`attention_fwd`, and for ``lse`` not in float32.
        ValueError: as :func:`attention_fwd`, and for ``do``, ``o``, ``lse`` or an output of the
            wrong shape, dtype or device.
    """
    _, sm_scale = _check_qkv(q, k, v, causal, sm_scale)
    _check_4d("do", do)
    _check_4d("o", o)
    validation.check_device(q=q, do=do, o=o)
    validation.check_same("dtype", q=q, do=do, o=o)
    validation.check_same("shape", q=q, do=do, o=o)
    validation.check_tensor("lse", lse)
    validation.check_device(q=q, lse=lse)
    validation.check_dtype("lse", lse, (torch.float32,))
    if tuple(lse.shape) != tuple(q.shape[:3]):
        raise ValueError(f"lse must have shape (B, H, N) = {tuple(q.shape[:3])}, got {tuple(lse.shape)}")
    validation.check_contiguous(lse=lse)
    for name, out, like_name, like in (("dq", dq, "q", q), ("dk", dk, "k", k), ("dv", dv, "v", v)):
        if out is not None:
            validation.check_out(name, out, like_name, like)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")
    return _backward(do, q, k, v, o, lse, causal, sm_scale, dq, dk, dv, method)


# -- autograd ------------------------------------------------------------------------------------
class AttentionFunction(torch.autograd.Function):
    """Attention with the Triton forward and backward; saves ``q``, ``k``, ``v``, ``o`` and the log-sum-exp."""

    @staticmethod
    def forward(ctx, q, k, v, causal, sm_scale):
        o, lse = _forward(q, k, v, causal, sm_scale, None, {})
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        ctx.sm_scale = sm_scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _backward(do, q, k, v, o, lse, ctx.causal, ctx.sm_scale)
        return dq, dk, dv, None, None


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """Scaled-dot-product attention ``softmax(Q Kᵀ · sm_scale) V`` in fused kernels, differentiable.

    As ``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
    scale=sm_scale, enable_gqa=True)`` for inputs of equal sequence lengths. The ``N × N`` scores
    are never written to memory, forward or backward; the softmax runs in float32.

    Args:
        q: queries ``(B, H, N, D)``, float16 or bfloat16, on a CUDA device (or the CPU in
            interpreter mode); ``D`` is 16, 32, 64, 128 or 256; any strides. float8_e4m3fn inputs
            run the forward pass only, with a bfloat16 output (see :func:`attention_fwd`).
        k, v: keys and values ``(B, H_kv, N, D)``, ``H`` a multiple of ``H_kv`` (grouped-query
            attention; ``H_kv = H`` for ordinary multi-head attention); same dtype and device.
        causal: query ``i`` sees keys ``0 … i`` only (the diagonal aligned top-left, as torch's ``is_causal``).
        sm_scale: the factor applied to the scores, ``> 0``; default ``1 / sqrt(D)``.

    Returns:
        ``o``: a new contiguous tensor of ``q``'s shape and dtype (bfloat16 for float8 inputs).
        When any input requires a gradient, the backward pass runs :func:`attention_bwd`'s kernels.

    Raises:
        TypeError: a non-tensor argument, an unsupported dtype, or a non-bool ``causal``.
        ValueError: a wrong rank; mismatched batch sizes, sequence lengths, head dims, dtypes or
            devices; an unsupported head dim; query heads that are not a multiple of key/value
            heads; a bad ``sm_scale``; a CPU tensor outside interpreter mode; float8 inputs that
            require a gradient.
    """
    _, sm_scale = _check_qkv(q, k, v, causal, sm_scale, FWD_DTYPES)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        if q.dtype == FP8:
            raise ValueError("float8 attention has no backward pass: call it under torch.no_grad(), or detach the inputs")
        return AttentionFunction.apply(q, k, v, causal, sm_scale)
    return _forward(q, k, v, causal, sm_scale, None, {})[0]


# -- counts --------------------------------------------------------------------------------------
def attention_flops(B: int, H: int, N: int, D: int, causal: bool = False, direction: Direction = "fwd") -> int:
    """Floating-point operations of attention, by the usual convention.

    Forward: two matmuls of ``2·N²·D`` each per head (``Q Kᵀ`` and ``P V``), ``4·B·H·N²·D``; the
    softmax is not counted. Causal attention counts half of that (half the scores are needed).
    Backward: 2.5 × the forward, five matmuls (``S = Q Kᵀ`` recomputed, ``dV = Pᵀ dO``,
    ``dP = dO Vᵀ``, ``dK = dSᵀ Q``, ``dQ = dS K``); the extra recomputation a kernel makes (ours
    recomputes ``S`` and ``dP`` a second time for ``dQ``) is not counted.
    """
    if direction not in ("fwd", "bwd"):
        raise ValueError(f"direction must be 'fwd' or 'bwd', got {direction!r}")
    forward = 4 * B * H * N * N * D // (2 if causal else 1)
    return forward if direction == "fwd" else forward * 5 // 2


def attention_bytes(
    B: int, H: int, N: int, D: int, dtype: torch.dtype, direction: Direction = "fwd", *, kv_heads: int | None = None
) -> int:
    """Bytes a perfect kernel moves, each tensor read or written once.

    Forward: ``q``, ``k`` and ``v`` read, ``o`` written. Backward: ``q``, ``k``, ``v``, ``o`` and
    ``dO`` read, ``dq``, ``dk`` and ``dv`` written. ``k``, ``v`` and their gradients have
    ``kv_heads`` heads (default ``H``). The float32 per-row statistics (log-sum-exp, delta: 4 bytes
    a row against ``2·D`` for a row of ``q``) are not counted.
    """
    itemsize = torch.empty((), dtype=dtype).element_size()
    q_like = B * H * N * D * itemsize
    kv_like = B * (H if kv_heads is None else kv_heads) * N * D * itemsize
    if direction not in ("fwd", "bwd"):
        raise ValueError(f"direction must be 'fwd' or 'bwd', got {direction!r}")
    # Forward: q read, o written; k, v read. Backward: q, o, dO read, dq written; k, v read, dk, dv written.
    return (2 * q_like + 2 * kv_like) if direction == "fwd" else (4 * q_like + 4 * kv_like)


__all__ = [
    "AttentionConfig", "AttentionFunction", "attention", "attention_bwd", "attention_bytes", "attention_config",
    "attention_flops", "attention_fwd", "attention_lse_reference", "attention_reference",
]
