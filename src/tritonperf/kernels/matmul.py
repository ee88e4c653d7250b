"""Matrix multiplication with a fused epilogue: the matmul lesson's kernels.

``C = activation(scale_a * scale_b * (A @ B) + bias)`` for ``A`` of shape ``(M, K)`` and ``B`` of
shape ``(K, N)``, or batches of them. A matmul does ``2 * M * N * K`` floating-point operations on
``M * K + K * N`` inputs, so for all but thin shapes it is compute-bound: the goal is the Tensor
Cores' rate, judged against torch's own matmul (cuBLAS) in the same dtype.

Two kernels:

* :func:`matmul_kernel` (``method="tiles"``): one program per ``BLOCK_M x BLOCK_N``
  output tile, loading ``A`` and ``B`` through pointers with any strides, so transposed and sliced
  operands are read in place. Programs are numbered in groups of ``GROUP_M`` tile rows, so that the
  programs running at the same time share panels of ``A`` and ``B`` in L2.
* :func:`matmul_tma_kernel` (``method="tma"``): a persistent grid of one program per SM,
  each looping over tiles, with operands moved by the Tensor Memory Accelerator through tensor
  descriptors built on the device (``tl.make_tensor_descriptor``). Needs compute capability 9.0
  (Hopper) or newer and 16-byte aligned rows. ``method="auto"`` picks it wherever it can run,
  except for products up to ``2048³`` (:data:`AUTO_TILES_MAX_WORK`), where the pointer kernel
  measured faster on an H200, and float32 in full precision (``input_precision="ieee"``). With
  ``WARP_SPECIALIZE`` its tile loop is warp-specialized: Triton gives the TMA copies to one warp
  group and the matmuls to two others, each of which takes half of the tile's rows
  (``warp_specialize=True``; see :data:`WS_CONFIG_TILES`).

Both accumulate in float32 whatever the inputs (except float8 with ``fast_accum=True``, where
the Tensor Cores' own, less precise accumulator sums the whole of K: see :func:`mma`), and apply
the epilogue to the float32 tile before the one conversion to the output dtype: the scales, the
bias, the activation and the rounding cost no extra pass over ``C``.

Float32 operands multiplied as tf32 on Hopper are first copied with K contiguous where they are
not (``a`` row-major, ``b`` column-major; :func:`~tritonperf.kernels.matmul.k_major`): the tf32
MMA reads only that layout from shared memory, and a row-major ``b`` cost both kernels two thirds
of their speed.

Autotuning. The kernels are wrapped in ``triton.autotune`` over a short list of tile shapes
(:data:`CONFIGS`; the TMA kernel also tries :data:`WS_CONFIGS`), keyed on ``M``, ``N`` and ``K``
rounded up to powers of two and on the dtypes:
the first call in a new bucket times the configs that survive pruning (:func:`prune_configs`:
tiles whose pipeline does not fit in shared memory, or far larger than the problem, are dropped)
and every later call in that bucket reuses the winner. Set ``TRITON_PRINT_AUTOTUNING=1`` to print
each tuning's time and choice. Compiled kernels and tuning results are stored under
``TRITON_CACHE_DIR`` (default ``~/.triton/cache``), so a new process skips both; point it at a
persistent directory in containers. Passing any tile knob (``block_m``, ``block_n``, ``block_k``,
``num_warps``, ``num_stages``) skips autotuning altogether. In interpreter mode there is one
small config and nothing is timed.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from .. import runtime, validation
from .._intmath import cdiv, next_power_of_2
from .transpose import transpose

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn)
OUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
FP8 = torch.float8_e4m3fn
ACTIVATIONS = (None, "relu", "gelu", "silu")
METHODS = ("auto", "tiles", "tma")
INPUT_PRECISIONS = ("tf32", "ieee")  # float32 inputs: Tensor Cores (tf32) or full float32 FMA


def _default_out_dtype(dtype: torch.dtype) -> torch.dtype:
    # float8 outputs would lose almost everything the float32 accumulator kept.
    return torch.bfloat16 if dtype == FP8 else dtype


# -- reference -----------------------------------------------------------------------------------
def matmul_reference(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    out_dtype: torch.dtype | None = None,
    *,
    scale_a: torch.Tensor | None = None,
    scale_b: torch.Tensor | None = None,
) -> torch.Tensor:
    """What :func:`matmul` computes, in float64 with plain torch, then cast to the output dtype.

    ``activation(scale_a * scale_b * (a @ b) + bias)``; ``"gelu"`` is the exact, erf-based GELU
    (``torch.nn.functional.gelu`` with ``approximate="none"``). Pass ``out_dtype=torch.float64``
    to keep the unrounded result. Batches broadcast as in :func:`matmul`.
    """
    c = torch.matmul(a.double(), b.double())
    if scale_a is not None:
        c = c * scale_a.double()
    if scale_b is not None:
        c = c * scale_b.double()
    if bias is not None:
        c = c + bias.double()
    if activation == "relu":
        c = torch.relu(c)
    elif activation == "gelu":
        c = torch.nn.functional.gelu(c)
    elif activation == "silu":
        c = torch.nn.functional.silu(c)
    elif activation is not None:
        raise ValueError(f"unknown activation {activation!r}")
    return c.to(out_dtype or _default_out_dtype(a.dtype))


# -- kernels -------------------------------------------------------------------------------------
@triton.jit
def grouped_tile(tile_id, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """(tile row, tile column) of output tile number ``tile_id`` in grouped order.

    Row-major order (``GROUP_M = 1``) runs along a whole tile row: the programs in flight share
    one row panel of A, but each reads its own column panel of B, so on a wide matrix B is
    read from memory again for every tile row. Grouped order walks down ``GROUP_M`` tile rows
    before moving one tile column right: the programs in flight then need only a few panels
    of each operand, which stay in L2 while they are reused.
    """
    tiles_per_group = GROUP_M * tiles_n
    first_m = (tile_id // tiles_per_group) * GROUP_M
    rows_here = tl.minimum(tiles_m - first_m, GROUP_M)  # the bottom group may be shorter
    within = tile_id % tiles_per_group
    return first_m + within % rows_here, within // rows_here


@triton.jit
def normal_cdf(x):
    """Φ(x), the standard normal CDF, to within 1e-7: the exact GELU is ``x · Φ(x)``.

    ``tl.math.erf`` (libdevice's ``erff``, about 49 PTX instructions an element with its branches)
    made the GELU epilogue cost more than the unfused GELU kernel it replaces. This is formula
    7.1.26 of Abramowitz and Stegun (absolute error below 1.5e-7), branch-free: one reciprocal,
    one ``exp2`` and a handful of fused multiply-adds. It is evaluated on ``|x|``, where it gives
    the tail ``Φ(-|x|)`` directly; ``1 - tail`` is taken only on the side where the tail is small.
    """
    u = tl.abs(x) * 0.7071067811865476  # |x| / sqrt(2): Φ(-|x|) = erfc(u) / 2
    t = 1.0 / (1.0 + 0.3275911 * u)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    tail = 0.5 * poly * tl.exp2(u * u * -1.4426950408889634)  # exp(-u²) as exp2(-u² · log2(e))
    return tl.where(x >= 0, 1.0 - tail, tail)


@triton.jit
def epilogue(acc, cols, N, bias_ptr, scale_a_ptr, scale_b_ptr,
             HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr, ACTIVATION: tl.constexpr):
    """Scales, bias and activation applied to a float32 tile while it is still in registers."""
    if HAS_SCALES:
        acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
    if HAS_BIAS:
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
        acc = acc + bias.to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu":
        acc = acc * normal_cdf(acc)
    elif ACTIVATION == "silu":
        acc = acc * tl.sigmoid(acc)
    return acc


@triton.jit
def mma(a, b, acc, BLOCK_K: tl.constexpr, INPUT_PRECISION: tl.constexpr, FAST_ACCUM: tl.constexpr):
    # float32 inputs go through the Tensor Cores as tf32 (10-bit mantissa) unless INPUT_PRECISION is
    # "ieee" (full float32 on the ordinary FMA units). On Hopper the float8 MMA sums into an
    # accumulator of its own, less precise than float32: its partial sums are added into the float32
    # accumulator after every BLOCK_K, unless FAST_ACCUM leaves the whole of K to it (Triton's
    # default on sm_90; torch._scaled_mm's use_fast_accum=True).
    if FAST_ACCUM:
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    else:
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, max_num_imprecise_acc=BLOCK_K)
    return acc


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    M_BUCKET, N_BUCKET, K_BUCKET,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr, ACTIVATION: tl.constexpr, INT64: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, FAST_ACCUM: tl.constexpr = False,
):
    # M_BUCKET, N_BUCKET and K_BUCKET are unused here: they exist as the autotuner's key.
    # Program (t, z) computes output tile t of matrix z of the batch; a batch stride of 0
    # broadcasts one operand over the batch.
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    z = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    step_a = BLOCK_K * stride_ak  # how far the tiles move along K per iteration
    step_b = BLOCK_K * stride_bk
    if INT64:  # the launcher asks for 64-bit offsets only when one can pass 2**31 - 1
        z = z.to(tl.int64)
        rows = rows.to(tl.int64)
        cols = cols.to(tl.int64)
        ks = ks.to(tl.int64)
        step_a = tl.full((), BLOCK_K, tl.int64) * stride_ak
        step_b = tl.full((), BLOCK_K, tl.int64) * stride_bk
    a_ptrs = a_ptr + z * stride_ab + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + z * stride_bb + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    row_ok = rows[:, None] < M
    col_ok = cols[None, :] < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # Whole K tiles first, with no mask along K: the loads then stay vectorized (16 bytes a lane)
    # and pipelined whatever K is. The masks along M and N keep edge tiles inside the operands;
    # they are constant along K, so they do not stop the vectorization.
    k_whole = K - K % BLOCK_K
    for _ in tl.range(0, k_whole, BLOCK_K):
        a = tl.load(a_ptrs, mask=row_ok, other=0.0)
        b = tl.load(b_ptrs, mask=col_ok, other=0.0)
        acc = mma(a, b, acc, BLOCK_K, INPUT_PRECISION, FAST_ACCUM)
        a_ptrs += step_a
        b_ptrs += step_b
    if k_whole < K:  # a last, partial K tile; zeros past the end of K add nothing to the sums
        k_ok = ks < K - k_whole
        a = tl.load(a_ptrs, mask=row_ok & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok, other=0.0)
        acc = mma(a, b, acc, BLOCK_K, INPUT_PRECISION, FAST_ACCUM)

    acc = epilogue(acc, cols, N, bias_ptr, scale_a_ptr, scale_b_ptr, HAS_BIAS, HAS_SCALES, ACTIVATION)
    c_ptrs = c_ptr + z * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_ok & col_ok)


@triton.jit
def _descriptor(ptr, n_batch, n_rows, n_cols, stride_batch, stride_row,
                BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr, BATCHED: tl.constexpr):
    # Rows and columns are those of memory (the columns contiguous); a batched operand gets a
    # third, outer dimension so that a tile never reads across from one matrix into the next.
    if BATCHED:
        desc = tl.make_tensor_descriptor(ptr, [n_batch, n_rows, n_cols], [stride_batch, stride_row, 1],
                                         [1, BLOCK_ROWS, BLOCK_COLS])
    else:
        desc = tl.make_tensor_descriptor(ptr, [n_rows, n_cols], [stride_row, 1], [BLOCK_ROWS, BLOCK_COLS])
    return desc


@triton.jit
def _load_tile(desc, z, r0, c0, ROWS: tl.constexpr, COLS: tl.constexpr, BATCHED: tl.constexpr,
               TRANSPOSED: tl.constexpr):
    # The ROWS x COLS tile at (r0, c0) of the logical operand. A TRANSPOSED operand is stored the
    # other way round (column-major): the descriptor loads its tile as COLS x ROWS and tl.trans
    # turns it. For 16-bit types the Tensor Cores read a shared-memory tile either way round, so
    # that costs nothing; tf32 and float8 tiles must have K contiguous and are transposed on the way.
    if TRANSPOSED:
        if BATCHED:
            tile = desc.load([z, c0, r0]).reshape(COLS, ROWS)
        else:
            tile = desc.load([c0, r0])
        tile = tl.trans(tile)
    else:
        if BATCHED:
            tile = desc.load([z, r0, c0]).reshape(ROWS, COLS)
        else:
            tile = desc.load([r0, c0])
    return tile


@triton.jit
def matmul_tma_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr,
    M, N, K, BATCH,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm,
    M_BUCKET, N_BUCKET, K_BUCKET,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    A_BATCHED: tl.constexpr, B_BATCHED: tl.constexpr, C_BATCHED: tl.constexpr,
    A_TRANSPOSED: tl.constexpr, B_TRANSPOSED: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr, ACTIVATION: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    FAST_ACCUM: tl.constexpr = False, WARP_SPECIALIZE: tl.constexpr = False,
):
    # Descriptors are built once per program, and each program then walks tiles
    # num_programs apart: the grid is at most one program per SM, so descriptor set-up and
    # launch cost are paid once per SM, not once per tile. TMA clips tiles at every edge
    # (zeros in, nothing out), so no masks are needed. WARP_SPECIALIZE splits the loop's work
    # among warp groups (copies in one, matmuls and epilogue in the others) instead of having
    # every warp issue all of it in turn.
    if A_TRANSPOSED:
        a_desc = _descriptor(a_ptr, BATCH, K, M, stride_ab, stride_ak, BLOCK_K, BLOCK_M, A_BATCHED)
    else:
        a_desc = _descriptor(a_ptr, BATCH, M, K, stride_ab, stride_am, BLOCK_M, BLOCK_K, A_BATCHED)
    if B_TRANSPOSED:
        b_desc = _descriptor(b_ptr, BATCH, N, K, stride_bb, stride_bn, BLOCK_N, BLOCK_K, B_BATCHED)
    else:
        b_desc = _descriptor(b_ptr, BATCH, K, N, stride_bb, stride_bk, BLOCK_K, BLOCK_N, B_BATCHED)
    c_desc = _descriptor(c_ptr, BATCH, M, N, stride_cb, stride_cm, BLOCK_M, BLOCK_N, C_BATCHED)

    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_matrix = tiles_m * tiles_n
    for tile_id in tl.range(tl.program_id(0), BATCH * tiles_per_matrix, tl.num_programs(0),
                            warp_specialize=WARP_SPECIALIZE):
        z = tile_id // tiles_per_matrix
        pid_m, pid_n = grouped_tile(tile_id % tiles_per_matrix, tiles_m, tiles_n, GROUP_M)
        m0 = pid_m * BLOCK_M
        n0 = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in tl.range(0, K, BLOCK_K):
            a = _load_tile(a_desc, z, m0, k0, BLOCK_M, BLOCK_K, A_BATCHED, A_TRANSPOSED)
            b = _load_tile(b_desc, z, k0, n0, BLOCK_K, BLOCK_N, B_BATCHED, B_TRANSPOSED)
            acc = mma(a, b, acc, BLOCK_K, INPUT_PRECISION, FAST_ACCUM)
        cols = n0 + tl.arange(0, BLOCK_N)
        acc = epilogue(acc, cols, N, bias_ptr, scale_a_ptr, scale_b_ptr, HAS_BIAS, HAS_SCALES, ACTIVATION)
        c = acc.to(c_ptr.dtype.element_ty)
        if C_BATCHED:
            c_desc.store([z, m0, n0], c.reshape(1, BLOCK_M, BLOCK_N))
        else:
            c_desc.store([m0, n0], c)


# -- autotuning ----------------------------------------------------------------------------------
# (BLOCK_M, BLOCK_N, num_stages, num_warps). BLOCK_K is not listed: every config is given a K tile
# of 128 bytes per row (64 float16, 32 float32, 128 float8 elements), the width of shared memory's
# widest swizzle, so that one list serves every dtype and keeps the same shared-memory footprint,
# num_stages * (BLOCK_M + BLOCK_N) * 128 bytes. Large tiles for large problems, narrow ones for
# small M or N (decode-like shapes), where large tiles would leave most SMs idle.
CONFIG_TILES: list[tuple[int, int, int, int]] = [
    (128, 256, 3, 8),
    (128, 256, 4, 8),
    (256, 128, 3, 8),
    (128, 128, 4, 8),
    (128, 128, 4, 4),
    (128, 64, 4, 4),
    (64, 128, 4, 4),
    (64, 64, 5, 4),
    (32, 64, 5, 2),
]
# Warp-specialized configs of the TMA kernel, same fields. Compiled for sm_90 by triton 3.6,
# a 4-warp program becomes three warp groups: one issues the TMA copies, two share the tile's
# rows and its matmuls, and the kernel asks for 384 threads. With 8 warps the loop compiles
# unspecialized. These two tiles gave correct products at every benchmark shape and dtype on an
# H200; 128 x 128 tiles with 5 stages returned NaN there, so no such config is listed.
WS_CONFIG_TILES: list[tuple[int, int, int, int]] = [
    (128, 256, 3, 4),
    (256, 128, 3, 4),
]
K_TILE_BYTES = 128
# Interpreter mode: one config (CONFIGS), no timing. Small tiles so that the tests' small shapes still have
# ragged edges in M, N and K and several programs.
INTERPRETER_TILE = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
DEFAULT_GROUP_M = 8
# Knobs not given with a pinned config (any tile knob given) take these values.
PINNED_DEFAULTS = dict(block_m=128, block_n=128, num_warps=4, num_stages=4)

_MIN_BLOCK = 16  # tl.dot's smallest tile side
_MIN_BLOCK_K_FP8 = 32  # Hopper's float8 MMA takes K in steps of 32
_BARRIER_BYTES = 1024  # room for the pipeline's barriers (compiled for sm_90: 32 to 56 bytes) and alignment
_TMA_MAX_BOX = 256  # the hardware's limit on one dimension of a tensor-descriptor tile
# method="auto" runs 16-bit products of at most this many multiply-adds (M·N·K, batch included)
# with the pointer kernel: in the H200 run of commit 3515e24 the autotuned pointer kernel was faster
# than the persistent TMA kernel at every square size from 256³ to 2048³ (float16 2048³: 655 against
# 620 TFLOPS), and slower from 4096³ up and on every transformer shape. That run timed its variants
# in a fixed order, which favours some of them; in shuffled, interleaved rounds at commit bae6c39
# (float16 4096³, three repeats) the two were level: 635-648 against 638-649 TFLOPS. float8 always takes the TMA
# kernel, many times faster there. float32 (tf32) products follow the 16-bit rule once their
# operands are K-major (k_major). With b row-major, as the benchmark passes it, both kernels turned
# b's tiles on the way: the pointer kernel reached 106, 131 and 137 TFLOPS at 1024³, 2048³ and 4096³
# in the H200 run of commit 3515e24, the TMA kernel 69, 83 and 86. One interleaved run on an NVIDIA
# H200 (triton 3.6.0, torch 2.11, 2026-11-29), TFLOPS at 2048³ and 4096³: row-major b, pointer
# kernel 129 and 127, TMA kernel 82 and 80; b copied K-major by torch (b.mT.contiguous().mT) first,
# pointer 191 and 255, TMA 191 and 260; on a K-major b alone, pointer 280 and 285, TMA 289 and 322;
# torch (cuBLAS, tf32) 352 and 398.
AUTO_TILES_MAX_WORK = 2048**3
# With warp_specialize=None, products whose M, N and K are all at least this size tune the TMA
# kernel over its plain configs only. At 8192³ the plain kernel pinned (the benchmark's
# step-4-persistent-tma, the same kernel tuned over the plain configs alone) was faster than the
# default, tuned over both lists, in every recorded run and dtype, by 1-6% (triton 3.6.0, torch
# 2.11). TFLOPS plain / default, float16, bfloat16, float8: H200, commit 183fad9, 2026-11-29: 656 /
# 635, 693 / 653, 1019 / 972; H200, 4b37597, 2026-11-28: 648 / 640, 679 / 661, 1017 / 981; H100 80GB
# HBM3, 6823cdf, 2026-11-25: 649 / 630, 692 / 666, 1012 / 990. The default ran at 0.94-1.04 of the
# warp-specialized kernel pinned, so its autotuner, which times each config alone, most likely kept
# a warp-specialized config that the benchmark's interleaved rounds then timed slower. With a short
# K (8192 x 8192 x 1024) the default beat the plain kernel by 9-27% in the same runs, so the rule
# asks for every dimension. The first record with the rule (H200, commit 194bc97, 2026-11-29) has
# the default level with the plain kernel at 8192³: 653 / 654, 675 / 678, 1028 / 1037.
PLAIN_ONLY_FROM = 8192
_INT32_LIMIT = 2**31 - 1
_MAX_BATCH = 65535  # CUDA's limit on the grid's second dimension


def gpu_configs(warp_specialize: bool = False) -> list[triton.Config]:
    """The configs the autotuner starts from on a GPU, before :func:`prune_configs`.

    ``warp_specialize=True`` gives the TMA kernel's warp-specialized ones (:data:`WS_CONFIG_TILES`).
    They carry no ``BLOCK_K``: the pruning step, which the autotuner runs before timing, adds the
    one that suits the dtype.
    """
    tiles, extra = (WS_CONFIG_TILES, {"WARP_SPECIALIZE": True}) if warp_specialize else (CONFIG_TILES, {})
    return [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, **extra}, num_stages=stages, num_warps=warps)
        for bm, bn, stages, warps in tiles
    ]


if runtime.is_interpreter():
    CONFIGS: list[triton.Config] = [triton.Config(dict(INTERPRETER_TILE), num_warps=4, num_stages=1)]
    WS_CONFIGS: list[triton.Config] = [triton.Config(dict(INTERPRETER_TILE, WARP_SPECIALIZE=True), num_warps=4,
                                                     num_stages=1)]
else:
    CONFIGS = gpu_configs()
    WS_CONFIGS = gpu_configs(warp_specialize=True)


def _pipeline_bytes(block_m: int, block_n: int, block_k: int, stages: int, itemsize: int) -> int:
    """Shared memory held by a software pipeline of ``stages`` A and B tiles."""
    return stages * (block_m * block_k + block_k * block_n) * itemsize


def _tile_area(config: triton.Config) -> int:
    return config.kwargs["BLOCK_M"] * config.kwargs["BLOCK_N"]


def prune_configs(configs: list[triton.Config], named_args: dict, *, tma: bool = False, **kwargs) -> list[triton.Config]:
    """The autotuner's ``early_config_prune``: the configs worth timing for one problem.

    Gives each config a K tile of 128 bytes of the input dtype (no longer than the problem's K
    rounded up to a power of two), then drops configs whose pipeline does not fit in the GPU's
    shared memory (with ``tma=True`` the output tile is staged there too), and configs whose
    tiles are larger than the problem in M or N (rounded up to a power of two) when smaller ones
    exist: those would compute mostly padding. Returns at least one config.
    """
    a, c = named_args["a_ptr"], named_args["c_ptr"]
    M, N, K = named_args["M"], named_args["N"], named_args["K"]
    itemsize = a.element_size()
    smallest_k = _MIN_BLOCK_K_FP8 if itemsize == 1 else _MIN_BLOCK
    block_k = max(smallest_k, min(K_TILE_BYTES // itemsize, next_power_of_2(max(K, 1))))
    limit = runtime.shared_memory_per_block(a.device)

    def with_block_k(config: triton.Config, num_stages: int) -> triton.Config:
        return triton.Config({**config.kwargs, "BLOCK_K": block_k}, num_warps=config.num_warps, num_stages=num_stages)

    fitting = []
    for config in configs:
        bm, bn = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        need = _pipeline_bytes(bm, bn, block_k, config.num_stages, itemsize) + _BARRIER_BYTES
        if tma:
            need += bm * bn * c.element_size()
        if need <= limit:
            fitting.append(with_block_k(config, config.num_stages))
    if not fitting:  # only on GPUs with far less shared memory than Ampere's: the smallest tile, 2 stages
        return [with_block_k(min(configs, key=_tile_area), 2)]
    cap_m = max(min(cf.kwargs["BLOCK_M"] for cf in fitting), next_power_of_2(M))
    cap_n = max(min(cf.kwargs["BLOCK_N"] for cf in fitting), next_power_of_2(N))
    kept = [cf for cf in fitting if cf.kwargs["BLOCK_M"] <= cap_m and cf.kwargs["BLOCK_N"] <= cap_n]
    # A list whose tiles are all large one way or the other (the warp-specialized one) can lose
    # every config to the caps on a small problem: then the smallest tile.
    return kept or [min(fitting, key=_tile_area)]


def _tuned(kernel, configs: list[triton.Config], tma: bool):
    # The autotuner adds the dtypes of the tensor arguments; tf32 and full float32 tune apart,
    # and so do float8's two ways of accumulating. The epilogue is in the key too: a config
    # tuned for the plain product can spill registers once a GELU is added to it. The TMA
    # kernel's key has the operands' layouts (a transposed tile is turned on the way for tf32 and
    # float8); the pointer kernel sees them only as stride values, which would key every size apart.
    key = ["M_BUCKET", "N_BUCKET", "K_BUCKET", "INPUT_PRECISION", "FAST_ACCUM", "HAS_BIAS", "ACTIVATION"]
    if tma:
        key += ["A_TRANSPOSED", "B_TRANSPOSED"]
    return triton.autotune(
        configs=configs,
        key=key,
        prune_configs_by={"early_config_prune": functools.partial(prune_configs, tma=tma)},
        cache_results=True,  # tuning results are kept in TRITON_CACHE_DIR for later processes
    )(kernel)


matmul_kernel_tuned = _tuned(matmul_kernel, CONFIGS, tma=False)
# The TMA kernel tuned over every config, over plain ones only, and over warp-specialized ones
# only: by the ``warp_specialize`` argument of :func:`matmul` (None, False, True).
matmul_tma_kernel_tuned = {
    # (In interpreter mode, one config: the flag changes nothing there, and there is nothing to time.)
    None: _tuned(matmul_tma_kernel, CONFIGS if runtime.is_interpreter() else CONFIGS + WS_CONFIGS, tma=True),
    False: _tuned(matmul_tma_kernel, CONFIGS, tma=True),
    True: _tuned(matmul_tma_kernel, WS_CONFIGS, tma=True),
}


# -- launcher ------------------------------------------------------------------------------------
def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _bucket(n: int) -> int:
    return next_power_of_2(max(n, 1))


def _check_operand(name: str, t: object, dims: str) -> torch.Tensor:
    validation.check_tensor(name, t)
    if t.dim() not in (2, 3):
        raise ValueError(f"{name} must be 2-D {dims} or 3-D (batch, {dims[1:]}, got shape {tuple(t.shape)}")
    if t.layout != torch.strided:
        raise ValueError(f"{name} must be a dense (strided) tensor, got layout {t.layout}")
    validation.check_dtype(name, t, SUPPORTED_DTYPES)
    return t


def _batch_size(a: torch.Tensor, b: torch.Tensor) -> int | None:
    """The batch of the result: None for two matrices; a size-1 or 2-D operand is broadcast."""
    sizes = [t.shape[0] for t in (a, b) if t.dim() == 3]
    if not sizes:
        return None
    if len(sizes) == 2 and sizes[0] != sizes[1] and 1 not in sizes:
        raise ValueError(f"batch sizes differ: a has {sizes[0]} matrices, b has {sizes[1]} "
                         "(they must be equal, or one operand 2-D or of batch size 1)")
    return max(sizes)


def _strides(t: torch.Tensor) -> tuple[int, int, int]:
    """(batch, row, column) strides; batch stride 0 where ``t`` is broadcast over the batch."""
    if t.dim() == 2:
        return 0, t.stride(0), t.stride(1)
    return (t.stride(0) if t.shape[0] > 1 else 0), t.stride(1), t.stride(2)


def _check_scale(name: str, s: object) -> torch.Tensor:
    validation.check_tensor(name, s)
    validation.check_dtype(name, s, (torch.float32,))
    if s.numel() != 1 or s.dim() > 1:
        raise ValueError(f"{name} must hold a single value (a 0-d float32 tensor), got shape {tuple(s.shape)}")
    return s


def _check_pinned_tile(tile: dict, a: torch.Tensor, out: torch.Tensor, device: torch.device, *, tma: bool) -> None:
    """A pinned configuration must suit the dtype and fit in shared memory: say so before launch."""
    if a.dtype == FP8 and tile["BLOCK_K"] < _MIN_BLOCK_K_FP8:
        raise ValueError(f"block_k must be at least {_MIN_BLOCK_K_FP8} for float8 inputs, got {tile['BLOCK_K']}")
    if runtime.MODE != "gpu":
        return
    bm, bn, bk, stages = tile["BLOCK_M"], tile["BLOCK_N"], tile["BLOCK_K"], tile["num_stages"]
    need = _pipeline_bytes(bm, bn, bk, stages, a.element_size()) + (bm * bn * out.element_size() if tma else 0)
    limit = runtime.shared_memory_per_block(device)
    if need + _BARRIER_BYTES > limit:
        raise ValueError(
            f"tiles {bm}x{bn}x{bk} with num_stages={stages} need about {need:,} bytes of shared memory; "
            f"this GPU has {limit:,} per block: use smaller tiles or fewer stages"
        )


def _check_knobs(method, group_m, block_m, block_n, block_k, num_warps, num_stages, warp_specialize) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if not (warp_specialize is None or isinstance(warp_specialize, bool)):
        raise ValueError(f"warp_specialize must be None, True or False, got {warp_specialize!r}")
    if warp_specialize is not None and method != "tma":
        raise ValueError(f"warp_specialize applies to the TMA kernel only: pass method='tma' with it "
                         f"(got method={method!r})")
    largest = _TMA_MAX_BOX if method == "tma" else 512
    for name, value in {"block_m": block_m, "block_n": block_n, "block_k": block_k}.items():
        if value is not None and (not isinstance(value, int) or value < _MIN_BLOCK or value & (value - 1)
                                  or value > largest):
            raise ValueError(f"{name} must be a power of two between {_MIN_BLOCK} and {largest}, got {value!r}")
    if num_warps is not None and (not isinstance(num_warps, int) or num_warps < 1 or num_warps & (num_warps - 1)
                                  or num_warps > 32):
        raise ValueError(f"num_warps must be a power of two between 1 and 32, got {num_warps!r}")
    for name, value in {"group_m": group_m, "num_stages": num_stages}.items():
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _auto_method(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, batch: int, input_precision: str) -> str:
    """What ``method="auto"`` runs: ``"tma"`` on a GPU where it can, but not for small 16-bit or
    float32 products, nor for float32 in full precision (``"ieee"``)."""
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    if a.dtype in (torch.float16, torch.bfloat16, torch.float32) and batch * M * N * K <= AUTO_TILES_MAX_WORK:
        return "tiles"
    if a.dtype == torch.float32 and input_precision == "ieee":
        return "tiles"
    return "tma" if runtime.MODE == "gpu" and _tma_obstacle(a, b, out, K) is None else "tiles"


def _tf32_needs_k_major(device: torch.device) -> bool:
    """Whether float32 operands are copied K-major before a tf32 product (see :func:`k_major`)."""
    return runtime.MODE == "gpu" and torch.cuda.get_device_capability(device)[0] >= 9


def k_major(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a`` and ``b`` with K contiguous: ``a`` row-major and ``b`` column-major, copied (with
    :func:`tritonperf.transpose`) where they are not already.

    Hopper's tf32 MMA reads a shared-memory tile only with K contiguous; a row-major ``b`` is
    turned tile by tile on the way, and both kernels then run at a third of cuBLAS's rate.
    """
    if a.stride(-1) != 1:
        a = transpose(a.mT)
    if b.stride(-2) != 1:
        b = transpose(b).mT
    return a, b


def _tma_obstacle(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, K: int) -> str | None:
    """Why the tensor-descriptor kernel cannot run on these operands, or None when it can."""
    if runtime.MODE == "gpu" and torch.cuda.get_device_capability(a.device)[0] < 9:
        return "tensor descriptors (TMA) need a GPU of compute capability 9.0 (Hopper) or newer"
    if K == 0:
        return "K is 0, so there is nothing for a descriptor to load"
    for name, t in (("a", a), ("b", b)):
        size = t.element_size()
        if t.stride(-1) != 1 and t.stride(-2) != 1:
            return f"{name} must have stride 1 along one of its last two dimensions, got strides {tuple(t.stride())}"
        if t.data_ptr() % 16:
            return f"{name} must start at a 16-byte aligned address"
        # The stride between rows of memory (columns, for a column-major operand) and between matrices.
        outer = [t.stride(-2) if t.stride(-1) == 1 else t.stride(-1)]
        if t.dim() == 3 and t.shape[0] > 1:
            outer.append(t.stride(0))
        if any(s == 0 or s * size % 16 for s in outer):
            return (f"{name}'s rows (or columns, if column-major) and matrices must start at 16-byte multiples, "
                    f"got strides {tuple(t.stride())}")
    if out.data_ptr() % 16 or out.shape[-1] * out.element_size() % 16:
        return f"every output row must start at a 16-byte multiple (N = {out.shape[-1]} x {out.element_size()} bytes)"
    return None


def _warp_specialize_obstacle(a: torch.Tensor, b: torch.Tensor, batch: int) -> str | None:
    """Why the warp-specialized TMA kernel cannot be compiled for these operands, or None.

    Compiled for sm_90 by triton 3.6 (and 3.9), the warp-specialized loop fails to compile
    ("PassManager::run failed") with a batched (3-D) output descriptor, with float32 inputs on the
    Tensor Cores, and with float8 operands in any layout but ``a`` row-major and ``b``
    column-major. 16-bit inputs compile in every layout.
    """
    if batch > 1:
        return f"Triton cannot compile it with a batched output (a batch of {batch} products)"
    if a.dtype == torch.float32:
        return "Triton cannot compile it for float32 inputs"
    if a.dtype == FP8 and (a.stride(-1) != 1 or b.stride(-1) == 1):
        return "Triton compiles it for float8 only with a row-major and b column-major (K contiguous in both)"
    return None


def _tma_tuning(warp_specialize: bool | None, M: int, N: int, K: int) -> bool | None:
    """Which configs the TMA kernel's autotuner times: the key of ``matmul_tma_kernel_tuned``.

    ``warp_specialize`` as given, except that None becomes False (plain configs only) when M, N
    and K are all at least :data:`PLAIN_ONLY_FROM`.
    """
    if warp_specialize is None and min(M, N, K) >= PLAIN_ONLY_FROM:
        return False
    return warp_specialize


def _ensure_allocator() -> None:
    # tl.make_tensor_descriptor builds descriptors in global memory that the launch asks an
    # allocator for. Install one backed by torch's caching allocator, unless the caller set their own.
    try:
        from triton.runtime import _allocation

        if not isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
            return
    except (ImportError, AttributeError):  # a Triton that keeps it elsewhere: set ours
        pass
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def _max_offset(batch: int, rows: int, cols: int, strides: tuple[int, int, int]) -> int:
    """Largest element offset any lane can compute, tiles padded to the largest block included."""
    pad = lambda n: cdiv(n, 512) * 512  # noqa: E731
    sb, sr, sc = strides
    return (batch - 1) * sb + (pad(rows) - 1) * sr + (pad(cols) - 1) * sc


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    out_dtype: torch.dtype | None = None,
    *,
    scale_a: torch.Tensor | None = None,
    scale_b: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    method: str = "auto",
    group_m: int = DEFAULT_GROUP_M,
    block_m: int | None = None,
    block_n: int | None = None,
    block_k: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    warp_specialize: bool | None = None,
    input_precision: str = "tf32",
    fast_accum: bool = False,
) -> torch.Tensor:
    """``activation(scale_a * scale_b * (a @ b) + bias)`` in one kernel, accumulated in float32.

    Float32 inputs are multiplied on the Tensor Cores as tf32 (inputs rounded to a 10-bit
    mantissa, about 1e-3 relative error against a float64 reference), as
    ``torch.backends.cuda.matmul.allow_tf32 = True`` would have torch do; ``input_precision="ieee"``
    multiplies them in full float32 on the ordinary FMA units instead, without the Tensor Cores. Float8 inputs are
    ``torch.float8_e4m3fn`` with one scale per tensor; they are fastest with K contiguous in both
    operands (``a`` row-major, ``b`` column-major, as ``torch._scaled_mm`` requires): in other
    layouts the Tensor Cores' float8 instructions need the tiles transposed, and (compiled for
    sm_90 by triton 3.9) the transposed operand loses its software pipelining.

    Args:
        a: ``(M, K)`` or a batch ``(B, M, K)``; float32, float16, bfloat16 or float8_e4m3fn, on a
            CUDA device (or the CPU in interpreter mode). Any strides: a transposed or sliced
            view is read in place, except float32 multiplied as tf32 on compute capability 9.0
            or newer, where an operand whose K is not contiguous is first copied so that it is
            (:func:`~tritonperf.kernels.matmul.k_major`; a row-major ``b`` takes ``K · N`` floats
            more memory for the call).
        b: ``(K, N)`` or ``(B, K, N)``, same dtype and device. When both are 3-D their batch
            sizes must be equal or one of them 1; a 2-D operand, or a batch of one, is shared by
            every matrix of the other's batch (as in ``torch.matmul``).
        bias: optional ``(N,)`` contiguous vector added to every row, in the output dtype or float32.
        activation: None, ``"relu"``, ``"gelu"`` (the exact, erf-based GELU of
            ``torch.nn.functional.gelu``'s default, not the tanh approximation; evaluated to
            within 1e-7 by the kernel's branch-free ``normal_cdf``) or ``"silu"``, applied after the bias.
        out_dtype: float32, float16 or bfloat16; default the input dtype (bfloat16 for float8).
        scale_a, scale_b: required with float8 inputs and refused otherwise: 0-d float32
            tensors on the inputs' device that multiply the product (dequantization scales).
            They are read by the kernel, so no host synchronization happens.
        out: optional contiguous tensor of the result's shape and dtype to write into; it must
            not share memory with the inputs.
        method: ``"tiles"`` (the pointer kernel, any strides), ``"tma"`` (the persistent kernel
            with tensor descriptors: compute capability ≥ 9.0, ``a`` and ``b`` with stride 1 along
            one of their last two dimensions and 16-byte aligned rows, an output row of a
            16-byte multiple), or ``"auto"``: ``"tma"`` on a GPU where it can run, except for
            products of at most ``2048³`` multiply-adds and ``input_precision="ieee"``, else
            ``"tiles"``.
        group_m: tile rows walked together (1 is plain row-major program order).
        block_m, block_n, block_k, num_warps, num_stages: pin the launch configuration instead of
            autotuning. Any one given pins all of them; the others default to 128 × 128 tiles with
            a 128-byte K tile, 4 warps and 4 stages.
        warp_specialize: with ``method="tma"`` only. None (default): the autotuner chooses between
            plain and warp-specialized configs (a pinned launch is plain), except that products
            with M, N and K all at least 8192 (``PLAIN_ONLY_FROM``) take plain ones only; True or
            False: only those. Triton specializes the loop on Hopper only with ``num_warps=4``;
            with more it compiles the plain loop. Where Triton cannot compile it (batches of more
            than one product, float32, float8 unless ``b`` is column-major), None runs the plain
            kernel and True is refused.
        input_precision: ``"tf32"`` (default) or ``"ieee"``, for float32 inputs only.
        fast_accum: float8 inputs only. False (default): the partial sums of the Tensor Cores'
            float8 accumulator, which is less precise than float32, are added into a float32
            accumulator after every K tile, as ``torch._scaled_mm`` does by default. True: the
            float8 accumulator sums the whole of K, faster and less precise, as
            ``torch._scaled_mm(..., use_fast_accum=True)`` does.

    Returns:
        ``out``, or a new contiguous tensor of shape ``(M, N)``, or ``(B, M, N)`` when either
        input is 3-D.

    Raises:
        TypeError: a non-tensor argument, an unsupported input, output, bias or scale dtype, a
            ``fast_accum`` that is not a bool.
        ValueError: a wrong rank, mismatched inner dimensions, batch sizes, dtypes or devices, a
            bias of the wrong shape or dtype, an unknown activation, float8 without scales or
            scales without float8, float8 on a GPU older than compute capability 8.9, a bad
            ``out``, a bad knob, ``warp_specialize`` without ``method="tma"`` (or True where
            Triton cannot compile it), ``input_precision="ieee"`` for inputs other than float32,
            ``fast_accum=True`` for inputs other than float8, inputs that require a gradient
            (there is no backward pass), or ``method="tma"`` where tensor descriptors cannot be used.
    """
    _check_operand("a", a, "(M, K)")
    _check_operand("b", b, "(K, N)")
    validation.check_same("dtype", a=a, b=b)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)} with K = {a.shape[-1]}, "
                         f"b is {tuple(b.shape)} with K = {b.shape[-2]}")
    batch = _batch_size(a, b)
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]

    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of None, 'relu', 'gelu', 'silu'; got {activation!r}")
    if out_dtype is None:
        out_dtype = _default_out_dtype(a.dtype)
    elif out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype must be one of {', '.join(map(_dtype_name, OUT_DTYPES))}; got {out_dtype!r}")
    tensors = {"a": a, "b": b}
    if bias is not None:
        validation.check_tensor("bias", bias)
        if tuple(bias.shape) != (N,):
            raise ValueError(f"bias must have shape (N,) = ({N},), one value per output column; got {tuple(bias.shape)}")
        if bias.dtype not in (out_dtype, torch.float32):
            raise ValueError(f"bias has dtype {_dtype_name(bias.dtype)}; it must have the output's dtype "
                             f"({_dtype_name(out_dtype)}) or float32")
        validation.check_contiguous(bias=bias)
        tensors["bias"] = bias
    if a.dtype == FP8:
        if scale_a is None or scale_b is None:
            raise ValueError("float8 inputs need per-tensor scales: pass scale_a and scale_b (0-d float32 tensors; "
                             "torch.ones(()) for none)")
        tensors["scale_a"] = _check_scale("scale_a", scale_a)
        tensors["scale_b"] = _check_scale("scale_b", scale_b)
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"scale_a and scale_b apply to float8_e4m3fn inputs only; got {_dtype_name(a.dtype)} inputs")
    device = validation.check_device(**tensors)
    if a.dtype == FP8 and runtime.MODE == "gpu" and torch.cuda.get_device_capability(device) < (8, 9):
        major, minor = torch.cuda.get_device_capability(device)
        raise ValueError(f"float8 matmul needs a GPU of compute capability 8.9 or newer; this one is {major}.{minor}")
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors.values()):
        raise ValueError("matmul has no backward pass: call it under torch.no_grad(), or detach the inputs")
    _check_knobs(method, group_m, block_m, block_n, block_k, num_warps, num_stages, warp_specialize)
    if input_precision not in INPUT_PRECISIONS:
        raise ValueError(f"input_precision must be one of {', '.join(INPUT_PRECISIONS)}; got {input_precision!r}")
    if input_precision != "tf32" and a.dtype != torch.float32:
        raise ValueError(f"input_precision applies to float32 inputs only; got {_dtype_name(a.dtype)} inputs")
    if not isinstance(fast_accum, bool):
        raise TypeError(f"fast_accum must be True or False, got {fast_accum!r}")
    if fast_accum and a.dtype != FP8:
        raise ValueError(f"fast_accum applies to float8_e4m3fn inputs only; got {_dtype_name(a.dtype)} inputs")
    if batch is not None and batch > _MAX_BATCH:
        raise ValueError(f"at most {_MAX_BATCH} matrices per batch are supported, got {batch}")

    shape = (M, N) if batch is None else (batch, M, N)
    if out is None:
        out = torch.empty(shape, dtype=out_dtype, device=device)
    else:
        validation.check_tensor("out", out)
        validation.check_device(a=a, out=out)
        if out.dtype != out_dtype:
            raise ValueError(f"out has dtype {_dtype_name(out.dtype)}, but the result is {_dtype_name(out_dtype)}")
        if tuple(out.shape) != shape:
            raise ValueError(f"out must have shape {shape}, got {tuple(out.shape)}")
        validation.check_contiguous(out=out)
        storage = out.untyped_storage().data_ptr()
        if out.numel() and any(t.numel() and t.untyped_storage().data_ptr() == storage for t in (a, b)):
            raise ValueError("out shares memory with an input; write into a separate tensor")
    if out.numel() == 0:
        return out

    batch = batch or 1
    if a.dtype == torch.float32 and input_precision == "tf32" and _tf32_needs_k_major(device):
        a, b = k_major(a, b)
    if method == "auto":
        boxes_fit = all(v is None or v <= _TMA_MAX_BOX for v in (block_m, block_n, block_k))
        method = _auto_method(a, b, out, batch, input_precision) if boxes_fit else "tiles"
    pinned = any(v is not None for v in (block_m, block_n, block_k, num_warps, num_stages))
    tile = {}
    if pinned:
        tile = dict(
            BLOCK_M=block_m or PINNED_DEFAULTS["block_m"],
            BLOCK_N=block_n or PINNED_DEFAULTS["block_n"],
            BLOCK_K=block_k or max(_MIN_BLOCK, K_TILE_BYTES // a.element_size()),
            num_warps=num_warps or PINNED_DEFAULTS["num_warps"],
            num_stages=num_stages or PINNED_DEFAULTS["num_stages"],
        )
        _check_pinned_tile(tile, a, out, device, tma=method == "tma")
    common = dict(GROUP_M=group_m, HAS_BIAS=bias is not None, HAS_SCALES=a.dtype == FP8, INPUT_PRECISION=input_precision,
                  FAST_ACCUM=fast_accum, ACTIVATION=activation or "none")
    buckets = (_bucket(M), _bucket(N), _bucket(K))
    sa, sb = _strides(a), _strides(b)
    c3 = out.view(batch, M, N)

    if method == "tma":
        if reason := _tma_obstacle(a, b, out, K):
            raise ValueError(f"method='tma' cannot be used here: {reason}; use method='tiles' or 'auto'")
        if reason := _warp_specialize_obstacle(a, b, batch):
            if warp_specialize:
                raise ValueError(f"warp_specialize=True is not available here: {reason}; "
                                 "pass warp_specialize=None or False")
            warp_specialize = False
        if runtime.MODE == "gpu":
            _ensure_allocator()
        sms = runtime.sm_count(device)

        def grid(meta):  # a persistent grid: at most one program per SM
            return (min(sms, batch * cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"])),)

        if pinned:
            kernel, launch = matmul_tma_kernel[grid(tile)], tile | {"WARP_SPECIALIZE": bool(warp_specialize)}
        else:
            kernel, launch = matmul_tma_kernel_tuned[_tma_tuning(warp_specialize, M, N, K)][grid], {}
        kernel(
            a, b, c3, bias, scale_a, scale_b,
            M, N, K, batch, *sa, *sb, c3.stride(0), c3.stride(1), *buckets,
            A_BATCHED=sa[0] != 0, B_BATCHED=sb[0] != 0, C_BATCHED=batch > 1,
            A_TRANSPOSED=a.stride(-1) != 1, B_TRANSPOSED=b.stride(-1) != 1,
            **common, **launch,
        )
        return out

    sc = c3.stride()
    reach = max(_max_offset(batch, M, K, sa), _max_offset(batch, K, N, sb), _max_offset(batch, M, N, sc))

    def grid(meta):
        return (cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]), batch)

    kernel, launch = (matmul_kernel[grid(tile)], tile) if pinned else (matmul_kernel_tuned[grid], {})
    kernel(
        a, b, c3, bias, scale_a, scale_b,
        M, N, K, *sa, *sb, *sc, *buckets,
        INT64=reach > _INT32_LIMIT, **common, **launch,
    )
    return out


# -- counts --------------------------------------------------------------------------------------
def matmul_flops(M: int, N: int, K: int, batch: int = 1) -> int:
    """Floating-point operations of the product: one multiply and one add per term, ``2·M·N·K·batch``.

    The epilogue's few operations per output element are not counted.
    """
    return 2 * M * N * K * batch


def matmul_bytes(M: int, N: int, K: int, dtype: torch.dtype, batch: int = 1, out_dtype: torch.dtype | None = None) -> int:
    """Bytes a perfect kernel moves: ``A`` and ``B`` read once, ``C`` written once, for each matrix of the batch.

    ``out_dtype`` defaults to :func:`matmul`'s (the input dtype, bfloat16 for float8). A bias
    vector (``N`` elements) is not counted.
    """
    itemsize = torch.empty((), dtype=dtype).element_size()
    out_itemsize = torch.empty((), dtype=out_dtype or _default_out_dtype(dtype)).element_size()
    return batch * ((M * K + K * N) * itemsize + M * N * out_itemsize)


__all__ = ["gpu_configs", "k_major", "matmul", "matmul_bytes", "matmul_flops", "matmul_reference", "prune_configs"]
