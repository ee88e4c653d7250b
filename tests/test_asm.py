"""Compiled code of the package's kernels for sm_90: the facts the chapter "Reading compiled code" relies on.

Compiling needs no GPU, only Triton's CUDA backend and its ``ptxas``; these tests run in both
modes and are skipped, with the reason, only where the installed Triton cannot compile for CUDA.
"""

from __future__ import annotations

import importlib
import re

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.jit import mangle_type

import tritonperf  # noqa: F401  (first: chooses GPU or interpreter before any kernel is defined)
from tritonperf import asm, runtime
from tritonperf.kernels import _rows
from tritonperf.kernels._rows import KNOWN_ALIGN, row_align

norms = importlib.import_module("tritonperf.kernels.norms")
softmax = importlib.import_module("tritonperf.kernels.softmax")
transpose = importlib.import_module("tritonperf.kernels.transpose")
vector_add = importlib.import_module("tritonperf.kernels.vector_add")

MISSING = asm.cuda_compiler_missing()
needs_cuda_compiler = pytest.mark.skipif(MISSING is not None, reason=f"this Triton cannot compile for CUDA: {MISSING}")

ADD_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"}
SOFTMAX_FWD_SIGNATURE = {"x_ptr": "*fp16", "y_ptr": "*fp16", "n_rows": "i32", "n_cols": "i32", "x_row_stride": "i32",
                         "y_row_stride": "i32"}
LAYOUT = re.compile(r"#(ttg|triton_gpu)\.blocked<")


@needs_cuda_compiler
def test_ptxas_for_names_the_release_triton_runs():
    path, release = asm.ptxas_for(90)
    assert asm.ptxas_for_hopper() == (path, release)
    assert re.fullmatch(r"\d+\.\d+", release)


def compile_add(**kwargs) -> asm.CompiledText:
    return asm.compile_for_hopper(vector_add.add_kernel, ADD_SIGNATURE, {"BLOCK_SIZE": 1024}, num_warps=4, **kwargs)


@pytest.fixture(scope="module")
def add_aligned() -> asm.CompiledText:
    # n_elements a multiple of 16, as a launch with such a size specializes it.
    return compile_add(divisible_by_16=list(ADD_SIGNATURE))


@pytest.fixture(scope="module")
def softmax_fused() -> asm.CompiledText:
    # The fused path for 4096 float16 columns; the kernel calls tl.cdiv, tl.max and a @triton.jit helper.
    plan = softmax.softmax_plan(4096, 4096, torch.float16)
    assert plan.path == "fused"
    sig = SOFTMAX_FWD_SIGNATURE
    consts = {"BLOCK_N": plan.block_n, "ROWS": plan.rows_per_program, "NUM_STAGES": plan.num_stages, "ONE_BLOCK": True}
    return asm.compile_for_hopper(softmax.softmax_fwd_kernel, sig, consts, num_warps=plan.num_warps,
                                  num_stages=plan.num_stages, divisible_by_16=list(sig))


@pytest.fixture(scope="module")
def transpose_tiles() -> asm.CompiledText:
    block_m, block_n, warps = transpose.TILE_CONFIGS[4]
    sig = {"x_ptr": "*i32", "y_ptr": "*i32", "M": "i32", "N": "i32", "stride_xb": "i32", "stride_xm": "i32",
           "tiles_m": "i32", "tiles_n": "i32", "n_tiles": "i32"}
    consts = {"stride_xn": 1, "BLOCK_M": block_m, "BLOCK_N": block_n, "GROUP_M": 8, "MASKED": False, "INT64": False,
              "PERSISTENT": False}
    return asm.compile_for_hopper(transpose.transpose_kernel, sig, consts, num_warps=warps, divisible_by_16=list(sig))


# -- compiled code ----------------------------------------------------------------------------------
@needs_cuda_compiler
def test_vector_add_fp32_loads_and_stores_16_bytes_at_a_time(add_aligned):
    ptx = add_aligned.ptx
    assert re.search(r"ld\.global(\.[\w:]+)*\.v4\.(b32|f32|u32)", ptx), "no 128-bit global load in the PTX"
    # 1024 elements over 128 threads: 8 float32 per thread and tensor, i.e. two 16-byte vectors each.
    assert asm.count(ptx, asm.GLOBAL_LOAD) == asm.count(ptx, asm.WIDE_GLOBAL_LOAD) == 4
    assert asm.count(ptx, asm.GLOBAL_STORE) == asm.count(ptx, asm.WIDE_GLOBAL_STORE) == 2
    assert asm.count(ptx, asm.PREDICATED + r"ld\.global") == 4, "the mask should predicate every load"
    assert add_aligned.shared_bytes == 0
    assert add_aligned.target == "cuda:90" and add_aligned.num_warps == 4


@needs_cuda_compiler
def test_vector_add_any_n_is_not_vectorized():
    # Without n_elements % 16 == 0 a 4-element group may straddle the end: one predicate per element.
    ptx = compile_add().ptx
    assert asm.count(ptx, asm.WIDE_GLOBAL_LOAD) == 0
    assert asm.count(ptx, asm.GLOBAL_LOAD) == 16


@needs_cuda_compiler
def test_softmax_prefetch_plan_stages_whole_rows_in_shared_memory():
    # 16-bit forward rows of 32768: a persistent loop whose next rows are copied into shared
    # memory (cp.async) while one is reduced. NUM_STAGES - 1 rows of 64 KB are in flight, which
    # must fit in the 227 KB a Hopper program may have, and the row in registers must not spill.
    plan = softmax.softmax_plan(4096, 32768, torch.float16)
    sig = SOFTMAX_FWD_SIGNATURE
    consts = {"BLOCK_N": plan.block_n, "ROWS": 1, "NUM_STAGES": plan.num_stages, "ONE_BLOCK": False, "ALIGN": 16}
    c = asm.compile_for_hopper(softmax.softmax_fwd_kernel, sig, consts, num_warps=plan.num_warps,
                               num_stages=plan.num_stages, divisible_by_16=list(sig))
    row_bytes = plan.block_n * 2  # float16
    assert (plan.num_stages - 1) * row_bytes <= c.shared_bytes <= 227 * 1024
    assert asm.count(c.ptx, asm.ASYNC_COPY) > 0
    if c.resources is not None:
        assert c.resources.local_memory_bytes == 0


@needs_cuda_compiler
@pytest.mark.parametrize("kernel, dtype", [("softmax", torch.bfloat16), ("softmax", torch.float32),
                                           ("softmax_bwd", torch.bfloat16)], ids=str)
def test_staged_kernels_fit_and_move_16_bytes_at_a_time(monkeypatch, request, kernel, dtype):
    # The softmax's staged kernels of 4096 rows of 65536 as a Hopper GPU plans them (the stand-in
    # allows the 227 KB a program may have): the staged chunks fit in shared memory, a float32 row
    # (and the 16-bit backward's pair of rows) holds its eighth chunk in registers, each staged
    # chunk is copied by the TMA at two places (the ring's first row, then a row ahead), and
    # every global load (held chunks) and store of the output moves 16 bytes a thread.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes + 1024 <= 227 * 1024)
    ty = {torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    common = {"x_ptr": "*" + ty, "y_ptr": "*" + ty}
    if kernel == "softmax":
        plan = softmax.softmax_plan(4096, 65536, dtype)
        chunk, held, warps = plan.chunk_n, plan.held, plan.num_warps
        fn, sig = softmax.softmax_fwd_staged_kernel, {**common, "n_rows": "i32", "n_cols": "i32",
                                                       "x_row_stride": "i32", "y_row_stride": "i32"}
        consts = {}
    else:
        plan = softmax.softmax_plan(4096, 65536, dtype, "bwd")
        chunk, held, warps = plan.chunk_n, plan.held, plan.num_warps
        fn, sig = softmax.softmax_bwd_staged_kernel, {"dy_ptr": "*" + ty, "dx_ptr": "*" + ty, "n_rows": "i32",
                                                       "n_cols": "i32", "dy_row_stride": "i32", "dx_row_stride": "i32"}
        consts = {}
    tensors = 2 if kernel == "softmax_bwd" else 1
    assert held == (1 if dtype == torch.float32 or tensors == 2 else 0) and chunk * dtype.itemsize == 32768
    staged = tensors * 65536 // chunk - held
    desc = mangle_type(_rows.staged_descriptor(torch.empty(8, 65536, dtype=dtype), chunk // _rows.STAGED_VIEW))
    descs = {"y_desc": desc, "dy_desc": desc} if tensors == 2 else {"x_desc": desc}
    chunks = 65536 // chunk if tensors == 2 else staged  # the backward's CHUNKS counts a row of one tensor
    c = asm.compile_for_hopper(fn, {**descs, **sig}, {**consts, "CHUNKS": chunks, "HELD": held > 0, "WARPS": warps},
                               num_warps=warps, divisible_by_16=[k for k in sig if k != "eps"])
    assert staged * chunk * dtype.itemsize <= c.shared_bytes <= 227 * 1024
    assert asm.count(c.ptx, r"\bcp\.async\.bulk\.tensor") == 2 * staged
    assert asm.count(c.ptx, asm.WIDE_GLOBAL_LOAD) == asm.count(c.ptx, asm.GLOBAL_LOAD)
    assert asm.count(c.ptx, asm.GLOBAL_LOAD) > 0 or (kernel == "softmax" and not held)
    # the output's stores, 16 bytes each
    assert asm.count(c.ptx, asm.GLOBAL_STORE) == asm.count(c.ptx, asm.WIDE_GLOBAL_STORE) > 0


@needs_cuda_compiler
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_split_norm_forward_fits_and_trades_sums_without_a_fence(monkeypatch, request, rms, dtype):
    # The split forward of 4096 rows of 65536 as a Hopper GPU plans it (the stand-in allows the
    # 227 KB a program may have): its ring fits in shared memory, each slot is copied into by the
    # TMA at two places (the ring's first rows, then RING rows ahead), the weights, biases and y
    # move 16 bytes a thread, and a row's sums go out in one relaxed 8-byte exchange and come back
    # in 16-byte volatile loads. No fence: a release would wait for the program's stores of y.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes + 1024 <= 227 * 1024)
    norms.norm_config.cache_clear()  # configurations are cached: none made with the stand-in may stay
    request.addfinalizer(norms.norm_config.cache_clear)
    cfg = norms.norm_config(4096, 65536, "fwd", "cpu", itemsize=dtype.itemsize, rms=rms)
    assert cfg.staged and cfg.split == 4
    ty = {torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    desc = mangle_type(_rows.staged_descriptor(torch.empty(8, 65536, dtype=dtype), cfg.block_n // _rows.STAGED_VIEW))
    sig = {"x_desc": desc, "y_ptr": "*" + ty, "w_ptr": "*" + ty, "b_ptr": "*" + ty, "mean_ptr": "*fp32",
           "rstd_ptr": "*fp32", "shares_ptr": "*i64", "M": "i32", "N": "i32", "stride_y": "i32", "eps": "fp32"}
    consts = {"RMS": rms, "HAS_W": True, "HAS_B": not rms, "RING": cfg.num_stages, "SPLIT": cfg.split, "SHARES": 4,
              "WARPS": cfg.num_warps}
    c = asm.compile_for_hopper(norms.norm_fwd_split_kernel, sig, consts, num_warps=cfg.num_warps,
                               divisible_by_16=[k for k in sig if k != "eps"])
    assert cfg.num_stages * cfg.block_n * dtype.itemsize <= c.shared_bytes <= 227 * 1024
    assert asm.count(c.ptx, r"\bcp\.async\.bulk\.tensor") == cfg.num_stages + 1
    assert asm.count(c.ptx, asm.GLOBAL_LOAD) == asm.count(c.ptx, asm.WIDE_GLOBAL_LOAD) > 0
    # The shares, four int64 a row: two 16-byte loads, ahead of use, and again while one is missing.
    _trades_sums_without_a_fence(c, share_loads=2 * 2)
    # y's stores, 16 bytes each; the row's mean (layer norm) and rstd are the narrow ones.
    narrow = asm.count(c.ptx, asm.GLOBAL_STORE) - asm.count(c.ptx, asm.WIDE_GLOBAL_STORE)
    assert asm.count(c.ptx, asm.WIDE_GLOBAL_STORE) > 0 and narrow == (1 if rms else 2)


@needs_cuda_compiler
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_split_norm_backward_trades_sums_without_a_fence(monkeypatch, request, rms, dtype):
    # The split backward of 4096 rows of 65536 as a Hopper GPU with 132 SMs plans it: its ring of x
    # and dy fits in shared memory beside the weights, and the programs trade a row's two sums as
    # the split forward does, one relaxed 8-byte exchange out, 16-byte volatile loads back (ahead
    # of the row's pass 2 and while a share is missing, in the loop and for the last row), no fence.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes + 1024 <= 227 * 1024)
    monkeypatch.setattr(runtime, "sm_count", lambda device: 132)
    norms.norm_config.cache_clear()
    request.addfinalizer(norms.norm_config.cache_clear)
    cfg = norms.norm_config(4096, 65536, "bwd", "cpu", itemsize=dtype.itemsize, rms=rms, weight_itemsize=dtype.itemsize)
    assert cfg.staged and cfg.split == 65536 // cfg.block_n > 1
    ty = {torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    desc = mangle_type(_rows.staged_descriptor(torch.empty(8, 65536, dtype=dtype), cfg.block_n // _rows.STAGED_VIEW))
    sig = {"x_desc": desc, "dy_desc": desc, "dx_ptr": "*" + ty, "w_ptr": "*" + ty, "mean_ptr": "*fp32",
           "rstd_ptr": "*fp32", "dw_part_ptr": "*fp32", "db_part_ptr": "*fp32", "shares_ptr": "*i64", "M": "i32",
           "N": "i32", "stride_dx": "i32"}
    consts = {"RMS": rms, "HAS_W": True, "DW": True, "DB": not rms, "RING": cfg.num_stages, "SPLIT": cfg.split,
              "SHARES": cfg.split, "WARPS": cfg.num_warps}
    c = asm.compile_for_hopper(norms.norm_bwd_staged_kernel, sig, consts, num_warps=cfg.num_warps, divisible_by_16=list(sig))
    assert cfg.num_stages * 2 * cfg.block_n * dtype.itemsize <= c.shared_bytes <= 227 * 1024
    _trades_sums_without_a_fence(c, share_loads=4 * cfg.split * 8 // 16)


@needs_cuda_compiler
def test_split_softmax_backward_trades_sums_without_a_fence(monkeypatch):
    # The float32 softmax backward of 4096 rows of 65536 as a Hopper GPU with 132 SMs plans it: a
    # chunk of y and one of dy to a program, eight programs a row, which trade the row's sum as the
    # split norms do; the ring fits, and dx moves 16 bytes a thread.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes + 1024 <= 227 * 1024)
    monkeypatch.setattr(runtime, "sm_count", lambda device: 132)
    plan = softmax.softmax_plan(4096, 65536, torch.float32, "bwd")
    assert plan.path == "staged" and plan.programs_per_row == 8
    desc = mangle_type(_rows.staged_descriptor(torch.empty(8, 65536), plan.chunk_n // _rows.STAGED_VIEW))
    sig = {"y_desc": desc, "dy_desc": desc, "dx_ptr": "*fp32", "shares_ptr": "*i64", "n_rows": "i32", "n_cols": "i32",
           "dx_row_stride": "i32"}
    consts = {"RING": plan.num_stages, "SPLIT": 8, "SHARES": 8, "WARPS": plan.num_warps}
    c = asm.compile_for_hopper(softmax.softmax_bwd_staged_split_kernel, sig, consts, num_warps=plan.num_warps,
                               divisible_by_16=list(sig))
    assert plan.num_stages * 2 * plan.chunk_n * 4 <= c.shared_bytes <= 227 * 1024
    assert asm.count(c.ptx, asm.GLOBAL_STORE) == asm.count(c.ptx, asm.WIDE_GLOBAL_STORE) > 0
    # eight int64 shares: four 16-byte loads, ahead of use and while one is missing
    _trades_sums_without_a_fence(c, share_loads=2 * 4)


def _trades_sums_without_a_fence(c, share_loads: int) -> None:
    # A split kernel's exchange: share_loads 16-byte volatile loads of the shares and nothing
    # narrower, one relaxed 8-byte exchange out, no other atomic and no fence (a release would
    # wait for the program's earlier stores of its output); no spill.
    assert asm.count(c.ptx, r"\bld\.volatile\.global\.") == asm.count(c.ptx, r"\bld\.volatile\.global\.v2\.b64") == share_loads
    assert asm.count(c.ptx, r"\batom\.global\.gpu\.relaxed\.exch\.b64") == 1
    assert asm.count(c.ptx, r"\b(membar|fence\.(sc|acq_rel))\b") == 0 and asm.count(c.ptx, r"\batom\.") == 1
    if c.resources is not None:
        assert c.resources.local_bytes == 0


@needs_cuda_compiler
def test_softmax_online_pass_takes_one_exponential_per_element():
    # The online forward takes each tile's maximum before its exponentials, so pass 1 costs one
    # exponential per element (plus the rescaling, one per tile) and pass 2 one more. The earlier
    # running maximum per lane compiled to 64 a thread here (two per element in pass 1, one per
    # lane to fold the lanes' sums, one in pass 2) where this compiles to 33.
    plan = softmax.softmax_plan(4096, 65536, torch.float16)
    assert plan.path == "online"
    sig = SOFTMAX_FWD_SIGNATURE
    consts = {"TILE_N": plan.block_n, "NUM_STAGES": plan.num_stages, "ALIGN": 16}
    ptx = asm.compile_for_hopper(softmax.softmax_fwd_online_kernel, sig, consts, num_warps=plan.num_warps,
                                 num_stages=plan.num_stages, divisible_by_16=list(sig)).ptx
    per_thread = plan.block_n // (32 * plan.num_warps)
    assert 2 * per_thread <= asm.count(ptx, r"\bex2\.approx") <= 2 * per_thread + 2


@needs_cuda_compiler
@pytest.mark.parametrize("align", [1, 8])
def test_softmax_rows_aligned_to_8_take_vector_loads_once_the_kernel_is_told(align):
    # 3000 float16 columns: the length and the row strides are multiples of 8, not of 16, so a
    # launch specializes none of them. Told ALIGN = 8 (what the launcher passes), the kernel loads
    # 16 bytes at a time; without it, 2 bytes.
    assert row_align(3000, 3000, 3000, 3000) == 8
    plan = softmax.softmax_plan(4096, 3000, torch.float16, "bwd")
    sig = {"y_ptr": "*fp16", "dy_ptr": "*fp16", "dx_ptr": "*fp16", "n_rows": "i32", "n_cols": "i32",
           "y_row_stride": "i32", "dy_row_stride": "i32", "dx_row_stride": "i32"}
    consts = {"BLOCK_N": plan.block_n, "ROWS": plan.rows_per_program, "NUM_STAGES": plan.num_stages, "ONE_BLOCK": True,
              "RELOAD": plan.reload, "ALIGN": align}
    ptx = asm.compile_for_hopper(softmax.softmax_bwd_kernel, sig, consts, num_warps=plan.num_warps).ptx
    if align == 1:
        assert asm.count(ptx, asm.WIDE_GLOBAL_LOAD) == 0
    else:
        assert asm.count(ptx, asm.WIDE_GLOBAL_LOAD) == asm.count(ptx, asm.GLOBAL_LOAD) > 0


@needs_cuda_compiler
@pytest.mark.parametrize("tiles", [3, 0], ids=["unrolled", "loop"])
def test_tiled_norm_forward_issues_every_tile_load_when_unrolled(tiles):
    # Layer norm's tiled forward for float32 rows of 5120 columns: 2048-column tiles in 8 warps, two
    # 16-byte vectors a thread and tile. Unrolled (TILES=3) the PTX holds each of the three tiles'
    # loads (x for the sums; x, w and b for y) and one 4-byte load a thread of the 32 values the
    # shift comes from; only the last tile's and that one are predicated. Every tile's loads for
    # the sums come before the first barrier: nothing waits for the shift. Looped (TILES=0) the
    # body is there once, every load masked.
    cfg = norms.norm_config(16384, 5120, "fwd", "cpu", itemsize=4)
    assert cfg.tiled and (cfg.block_n, cfg.num_warps) == (2048, 8)
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "mean_ptr": "*fp32",
           "rstd_ptr": "*fp32", "M": "i32", "N": "i32", "stride_x": "i32", "stride_y": "i32", "eps": "fp32"}
    consts = {"RMS": False, "HAS_W": True, "HAS_B": True, "BLOCK_N": cfg.block_n, "TILES": tiles, "ONE_TILE": True}
    ptx = asm.compile_for_hopper(norms.norm_fwd_tiled_kernel, sig, consts, num_warps=cfg.num_warps,
                                 divisible_by_16=[k for k in sig if k != "eps"]).ptx
    vectors = cfg.block_n // (32 * cfg.num_warps * 4)  # 16-byte vectors a thread, per tile and tensor
    assert asm.count(ptx, asm.WIDE_GLOBAL_LOAD) == vectors * 4 * (tiles or 1)
    assert asm.count(ptx, asm.GLOBAL_LOAD) == vectors * 4 * (tiles or 1) + 1
    assert asm.count(ptx, asm.PREDICATED + r"ld\.global") == vectors * 4 + 1  # one tile's four and the shift's
    if tiles:
        assert asm.count(ptx[: ptx.index("bar.sync")], asm.WIDE_GLOBAL_LOAD) == vectors * tiles


def test_row_align():
    assert row_align(4096, 4096) == row_align(0) == KNOWN_ALIGN  # Triton sees multiples of 16 itself
    assert row_align(3000, 3008) == 8
    assert row_align(300, 310) == 2
    assert row_align(4097) == row_align(4096, 1) == 1


@needs_cuda_compiler
def test_ttgir_has_layouts(add_aligned, softmax_fused, transpose_tiles):
    for compiled in (add_aligned, softmax_fused, transpose_tiles):
        assert LAYOUT.search(compiled.ttgir), f"no blocked layout in {compiled.name}'s TTGIR"
        assert not LAYOUT.search(compiled.ttir), "TTIR has no layouts yet"


@needs_cuda_compiler
def test_softmax_reduces_in_warps_then_across_them(softmax_fused):
    assert softmax_fused.ttgir.count('"tt.reduce"') == 2  # the row maximum and the sum of exponentials
    assert asm.count(softmax_fused.ptx, asm.SHUFFLE) > 0
    assert 0 < softmax_fused.shared_bytes < 1024  # a scratch slot per warp, not a row
    assert asm.count(softmax_fused.ptx, asm.WIDE_GLOBAL_LOAD) > 0


@needs_cuda_compiler
def test_transpose_converts_its_layout_through_shared_memory(transpose_tiles):
    c = transpose_tiles
    assert re.search(r"(ttg|triton_gpu)\.convert_layout", c.ttgir)
    # Exactly one tile, no padding: the addresses are swizzled (XORs) instead.
    assert c.shared_bytes == c.constexprs["BLOCK_M"] * c.constexprs["BLOCK_N"] * 4
    for pattern in (asm.SHARED_STORE, asm.BARRIER, asm.SHARED_LOAD, asm.WIDE_GLOBAL_LOAD, asm.WIDE_GLOBAL_STORE, asm.XOR):
        assert asm.count(c.ptx, pattern) > 0, pattern


@needs_cuda_compiler
def test_transpose_pairs_take_more_shared_memory_work_and_registers():
    # What the transpose lesson says of step 6 against step 4, for float16 at the tiles auto picks.
    compiled = asm.transpose_compilations()
    assert transpose.TILE_CONFIGS[2][:2] == transpose.PAIR_CONFIGS[2][:2]  # the same tile ...
    assert transpose.PAIR_CONFIGS[2][2] * 2 == transpose.TILE_CONFIGS[2][2]  # ... in half the warps

    def shared_instructions(c):
        return sum(asm.count(c.ptx, p) for p in (asm.SHARED_STORE, asm.SHARED_LOAD, asm.SHARED_MATRIX_LOAD))

    tiles, pairs = compiled["tiles"], compiled["pairs"]
    assert shared_instructions(pairs) > shared_instructions(tiles) > 0
    assert asm.count(pairs.ptx, asm.BARRIER) > asm.count(tiles.ptx, asm.BARRIER) >= 1
    assert asm.count(pairs.ptx, asm.WIDE_GLOBAL_LOAD) == 2 * asm.count(tiles.ptx, asm.WIDE_GLOBAL_LOAD) > 0
    if tiles.resources is not None:
        assert pairs.resources.registers > tiles.resources.registers


@needs_cuda_compiler
def test_sass_and_resources(add_aligned, transpose_tiles):
    if add_aligned.sass is None:
        pytest.skip("this Triton carries neither nvdisasm nor cuobjdump")
    assert "LDG.E.128" in add_aligned.sass
    if add_aligned.resources is None:
        pytest.skip("this Triton carries no cuobjdump")
    for c in (add_aligned, transpose_tiles):
        assert 0 < c.resources.registers <= 255
        assert c.resources.local_memory_bytes == 0, f"{c.name} spills"


@pytest.fixture(scope="module")
def matmuls() -> dict[str, asm.CompiledText]:
    return asm._matmul_compilations()


@needs_cuda_compiler
def test_matmul_loops_keep_one_group_of_products_in_flight(matmuls):
    # What the chapter reads from the loop over K: the Tensor Core shape, how the tiles arrive,
    # and that each step waits only for the step before's products, never for its own.
    tma, tiles = (asm.loop_around(asm.clean(matmuls[name].ptx), asm.MMA) for name in ("matmul", "matmul_tiles"))
    for loop in (tma, tiles):
        assert asm.count(loop, r"\bwgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16\b") == 4  # 64 of K
        assert re.findall(asm.MMA_WAIT, loop) == ["1"]
    assert asm.count(tma, asm.TMA_LOAD) == 2 and asm.count(tma, r"\bmbarrier\.try_wait") == 1
    assert asm.count(tma, asm.ASYNC_COPY) == 0
    assert asm.count(tiles, asm.ASYNC_COPY) == 8 and asm.count(tiles, asm.TMA_LOAD) == 0  # 16 bytes a copy
    stages = 4 * (128 + 128) * 64 * 2
    assert matmuls["matmul_tiles"].shared_bytes == stages
    assert 0 < matmuls["matmul"].shared_bytes - stages - 128 * 128 * 2 <= 1024  # the output tile, and barriers
    if matmuls["matmul"].resources is not None:
        assert matmuls["matmul"].resources.registers < matmuls["matmul_tiles"].resources.registers
        for c in matmuls.values():
            assert c.resources.local_memory_bytes == 0, f"{c.name} spills"


@needs_cuda_compiler
def test_write_excerpts(tmp_path):
    paths = asm.write_excerpts(tmp_path)
    assert sorted(p.name for p in paths) == sorted(f"{name}.txt" for name in asm.EXCERPTS)
    for path in paths:
        text = path.read_text()
        assert text.strip() and "not available" not in text, path.name
        assert "loc(" not in text and ".file" not in text, f"{path.name} shows debug locations"


@triton.jit
def _library_user(out_ptr, n):
    # Calls two of triton.language's own @jit functions, as the package's reductions do.
    i = tl.arange(0, 16)
    tl.store(out_ptr + i, tl.cdiv(i, 2) + tl.max(i, axis=0), mask=i < n)


@needs_cuda_compiler
@pytest.mark.skipif(not runtime.is_interpreter(), reason="interpreter and compiler in one process: interpreter mode only")
def test_interpreter_and_compiler_take_turns(monkeypatch):
    out = torch.zeros(16, dtype=torch.int32)
    _library_user[(1,)](out, 10)  # may leave triton.language modified: compile_for_hopper then uses a fresh process
    assert out[:10].tolist() == [(i + 1) // 2 + 15 for i in range(10)]
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")  # compile for real, not from Triton's cache
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32", "x_row_stride": "i32", "y_row_stride": "i32"}
    again = asm.compile_for_hopper(softmax.softmax_fwd_kernel, sig, {"BLOCK_N": 128, "ROWS": 8, "NUM_STAGES": 1, "ONE_BLOCK": True},
                                   num_warps=2, num_stages=1)
    assert again.ttgir.count('"tt.reduce"') == 2
    x, y = torch.randn(1000), torch.randn(1000)
    assert torch.equal(tritonperf.vector_add(x, y), x + y)  # and the interpreter still runs


# -- arguments --------------------------------------------------------------------------------------
@needs_cuda_compiler
def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_elements"):
        asm.compile_for_hopper(vector_add.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                               {"BLOCK_SIZE": 1024})
    with pytest.raises(ValueError, match="no parameter"):
        asm.compile_for_hopper(vector_add.add_kernel, {**ADD_SIGNATURE, "z_ptr": "*fp32"}, {"BLOCK_SIZE": 1024})
    with pytest.raises(ValueError, match="divisible_by_16"):
        compile_add(divisible_by_16=["BLOCK_SIZE"])
    with pytest.raises(TypeError, match="triton.jit"):
        asm.compile_for_hopper(42, {}, {})


# -- reading text -----------------------------------------------------------------------------------
TEXT = "a\nb 1\nc\nd\ne 2\nf\n"


def test_grep():
    assert asm.grep(TEXT, r"\d") == "b 1\ne 2\n"
    assert asm.grep(TEXT, r"\d", context=1) == "a\nb 1\nc\nd\ne 2\nf\n"
    assert asm.grep(TEXT, r"\d", limit=1) == "b 1\n"
    assert asm.grep("a\nb 1\nc\nd\ne\nf 2\n", r"\d", context=0) == "b 1\nf 2\n"
    assert asm.grep("1\na\nb\nc\n2\n", r"\d", context=1) == "1\na\n...\nc\n2\n"
    assert asm.grep(TEXT, "zzz") == ""


def test_between_and_count():
    assert asm.between(TEXT, "^b", "^d") == "b 1\nc\nd\n"
    assert asm.between(TEXT, "^[be]", "^[cf]") == "b 1\nc\n...\ne 2\nf\n"
    assert asm.count(TEXT, r"\d") == 2


def test_loop_around():
    ptx = ("\tmov.u32 \t%r1, 0;\n$L__BB0_1:\n\tadd.s32 \t%r1, %r1, 1;\n$L__BB0_2:\n\tmul.f32 \t%r2, %r2, %r3;\n"
           "\t@%p1 bra \t$L__BB0_2;\n\t@%p2 bra.uni \t$L__BB0_1;\n\tret;\n")
    inner = "$L__BB0_2:\n\tmul.f32 \t%r2, %r2, %r3;\n\t@%p1 bra \t$L__BB0_2;\n"
    assert asm.loop_around(ptx, r"mul\.f32") == inner
    assert asm.loop_around(ptx, r"add\.s32") == "\n".join(ptx.splitlines()[1:7]) + "\n"  # the outer loop
    assert asm.loop_around(ptx, r"mov\.u32") == ""  # before any loop
    assert asm.loop_around(ptx, r"ret") == ""  # after the loops
    assert asm.loop_around(ptx, r"fma") == ""


def test_clean_drops_debug_information():
    ttgir = '#loc = loc("k.py":1:1)\n  %0 = tt.get_program_id x : i32 loc(#loc1)\n#loc1 = loc("pid"(#loc))\n'
    assert asm.clean(ttgir) == "  %0 = tt.get_program_id x : i32\n"
    ptx = ('$L__func_begin0:\n\t.loc\t1 27 0\n$L__BB0_1:\n\tadd.f32 \t%r1, %r2, %r3;\n\n\t// begin inline asm\n'
           '\tbra.uni \t$L__BB0_1;\n$L__tmp1:\n}\n\t.file\t1 "k.py"\n\t.section\t.debug_abbrev\n')
    assert asm.clean(ptx) == "$L__BB0_1:\n\tadd.f32 \t%r1, %r2, %r3;\n\tbra.uni \t$L__BB0_1;\n}\n"
