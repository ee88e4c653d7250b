"""
Matrix multiplication: tiles, program order and the Tensor Cores
================================================================

Every kernel before this one moved bytes; this one computes. A matrix product reuses each
input element many times, so it can leave the bandwidth slope of the roofline and run into the
Tensor Cores' ceiling instead. You will learn:

* why a matmul is compute-bound while softmax is not, from its arithmetic intensity;
* how one program per **output tile** turns the product into ``tl.dot`` calls on the
  Tensor Cores, with a float32 accumulator and masks for any M, N and K;
* what the **order of programs** changes: grouped order keeps the panels that running
  programs share in L2;
* what **autotuning** picks and what it costs on the first call;
* the **persistent** kernel with **tensor descriptors** (TMA) that the package runs on Hopper,
  and what **warp specialization** changes in it;
* **fused epilogues** (bias and activation applied before the tile is written) and **float8**
  inputs with per-tensor scales.

To run this script yourself you need torch, triton and the ``tritonperf`` package
(``pip install -e .`` from a clone of the guide's repository). On a CUDA GPU it runs at
full size and measures live; anywhere else Triton's interpreter runs the kernels on the CPU at
small sizes, and the plots come from recorded results.
"""

# %%
# Where the kernels run
# ---------------------

import inspect
import re

import matplotlib.pyplot as plt
import torch

import tritonperf  # before triton: it switches on the interpreter when there is no GPU

# isort: split
import triton
import triton.language as tl

from tritonperf import asm, runtime
from tritonperf.bench import find_results, find_tables, live_or_recorded, load, plot_results
from tritonperf.bench.roofline import plot_roofline, ridge
from tritonperf.kernels.matmul import (
    CONFIG_TILES,
    K_TILE_BYTES,
    WS_CONFIG_TILES,
    grouped_tile,
    matmul_kernel,
    matmul_tma_kernel,
)
from tritonperf.ladders.matmul import (
    STEP_TILE,
    matmul_grouped,
    matmul_persistent_tma,
    matmul_tiles,
    matmul_warp_specialized,
)
from tritonperf.testing import assert_close, random_tensor

print(runtime.describe())
DEVICE = runtime.default_device()
ON_GPU = runtime.MODE == "gpu"

# %%
# Compute-bound, at last
# ----------------------
# ``C = A @ B`` for ``A`` of ``M × K`` and ``B`` of ``K × N`` does ``2·M·N·K`` operations and, done
# perfectly, reads each input once and writes ``C`` once. The ratio grows with the size: every
# element of ``A`` is used ``N`` times. A size whose intensity passes the ridge point of a run
# (the intensity where the bandwidth roof meets the compute roof) is compute-bound there:

for size in (256, 1024, 4096, 8192):
    flops = tritonperf.matmul_flops(size, size, size)
    nbytes = tritonperf.matmul_bytes(size, size, size, torch.float16)
    print(f"{size:5d}^3 float16: {flops / nbytes:7.1f} FLOP per byte")
for path in find_results():
    doc = load(path)
    print(f"ridge point of the recorded run on {doc['provenance']['gpu']}: {ridge(doc):.0f} FLOP per byte")

# %%
# Step 1: one program per output tile
# -----------------------------------
# Each program owns a ``BLOCK_M × BLOCK_N`` tile of ``C``. It walks along ``K`` in steps of
# ``BLOCK_K``, loading a ``BLOCK_M × BLOCK_K`` tile of ``A`` and a ``BLOCK_K × BLOCK_N`` tile of
# ``B`` and accumulating their product with ``tl.dot``, which the compiler maps to the Tensor
# Cores (``wgmma`` on Hopper: see the chapter on reading compiled code). The accumulator stays
# float32 whatever the inputs; the epilogue (scales, bias, activation) runs on it in registers,
# and the tile is converted and stored once. Masks along ``M`` and ``N`` keep edge tiles inside
# the matrices; ``K`` is split into whole tiles, loaded without a mask so that the loads stay
# wide and pipelined, and one masked last tile. Strides make transposed operands free.

print(inspect.getsource(matmul_kernel.fn))

# %%
# The package's kernel checks against a float64 reference with dtype-aware tolerances, on
# shapes that no block size divides, a transposed operand, a batch, and a fused bias + GELU.
# Inputs are scaled by ``K ** -0.25`` so that the products stay near 1 whatever ``K``. On a GPU,
# float32 inputs go through the Tensor Cores as tf32, whose 10-bit mantissa is float16's: the
# float16 tolerances apply to them there.

M, N, K = (1000, 1823, 517) if ON_GPU else (100, 70, 90)


def operand(shape, dtype):
    return (random_tensor(shape, torch.float32, DEVICE) * K**-0.25).to(dtype)


for dtype in (torch.float16, torch.float32):
    tolerance = torch.float16 if ON_GPU else dtype
    a, b = operand((M, K), dtype), operand((K, N), dtype)
    expected = tritonperf.matmul_reference(a, b)
    assert_close(matmul_tiles(a, b), expected, tolerance)
    assert_close(tritonperf.matmul(a, b.t().contiguous().t()), expected, tolerance)  # column-major B, read in place
    bias = operand((N,), dtype)
    assert_close(tritonperf.matmul(a, b, bias, "gelu"), tritonperf.matmul_reference(a, b, bias, "gelu"), tolerance)
    batch_a = operand((3, M, K), dtype)
    assert_close(tritonperf.matmul(batch_a, b), tritonperf.matmul_reference(batch_a, b), tolerance)
    print(f"{str(dtype):14} {M} x {N} x {K}: plain, column-major B, bias + GELU and a batch of 3 match the reference")

# %%
# Step 2: the order of programs
# -----------------------------
# Programs do not all run at once: at any moment the GPU holds a few per SM. Numbered in
# row-major order, the programs in flight cover one row of tiles, so they share one panel of
# ``A`` but each needs its own panel of ``B``; on a wide matrix every tile row reads all of
# ``B`` from memory again. Grouped order walks down ``GROUP_M`` tile rows before moving one tile
# column right, so the same number of programs needs fewer panels, and those stay in L2 while
# they are reused. The kernel below runs the package's own ``grouped_tile`` to draw both orders
# for an 8 × 8 grid of tiles, and counts the panels the first 8 programs touch.


@triton.jit
def program_order_kernel(out_ptr, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = grouped_tile(pid, tiles_m, tiles_n, GROUP_M)
    tl.store(out_ptr + pid_m * tiles_n + pid_n, pid)


tiles = 8
fig, axes = plt.subplots(1, 2, figsize=(8, 4.2), facecolor="white", layout="constrained")
for ax, group_m in zip(axes, (1, 4), strict=True):
    order = torch.full((tiles, tiles), -1, dtype=torch.int32, device=DEVICE)
    program_order_kernel[(tiles * tiles,)](order, tiles, tiles, GROUP_M=group_m)
    order = order.cpu()
    first = order < tiles  # the first 8 programs: those in flight together on a small GPU
    panels = int(first.any(dim=1).sum()) + int(first.any(dim=0).sum())
    ax.imshow(order, cmap="viridis")
    for (i, j), pid in zip(torch.cartesian_prod(torch.arange(tiles), torch.arange(tiles)).tolist(), order.flatten().tolist(),
                           strict=True):
        ax.text(j, i, str(pid), ha="center", va="center", fontsize=7, color="white" if pid < 32 else "black",
                fontweight="bold" if pid < tiles else "normal")
    ax.set_title(f"GROUP_M = {group_m}: first {tiles} programs need {panels} panels")
    ax.set_xticks([])
    ax.set_yticks([])
    print(f"GROUP_M={group_m}: the first {tiles} programs read {panels} panels of A and B")

# %%
# Step 3: autotuning
# ------------------
# The best tile shape, number of warps and pipeline depth depend on the shape and the GPU. The
# package lets ``triton.autotune`` time a short list of candidates the first time it sees a
# shape bucket (M, N and K rounded up to powers of two, and the dtypes) and keeps the winner.
# Candidates whose pipeline does not fit in shared memory, or whose tiles are far larger than
# the problem, are pruned before any is timed. Each candidate is (BLOCK_M, BLOCK_N, stages,
# warps), with a K tile of a fixed number of bytes:

print(f"K tile: {K_TILE_BYTES} bytes per row (64 float16, 32 float32, 128 float8 elements)")
for config in CONFIG_TILES:
    print("  BLOCK_M={:<4} BLOCK_N={:<4} num_stages={} num_warps={}".format(*config))
print(f"steps 1 and 2 use one fixed configuration instead: {STEP_TILE}")

# %%
# The first call in a new bucket compiles and times every surviving candidate: seconds, not
# microseconds. ``TRITON_PRINT_AUTOTUNING=1`` prints each choice; ``TRITON_CACHE_DIR`` says where
# compiled kernels and, here, tuning results are kept, so that a new process can skip both.
# ``tools/record_first_call.py`` (``nox -s first_call`` on a GPU) measures the cost: the first call
# of two shapes in a fresh process with an empty cache, then again in a second process that keeps
# the cache, and a later call for comparison. The recorded tables, as written:

first_call_tables = find_tables("first_call")
for path in first_call_tables:
    print(path.read_text())
if not first_call_tables:
    print("No first-call recording found (docs/results/first_call/<gpu>.md).")

# %%
# The second shape reuses the kernels the first one compiled, so only its tuning is new. Kept,
# the cache turns seconds into the time it takes to load compiled code; a deployment that cannot
# keep ``TRITON_CACHE_DIR`` between processes pays the first column at every start.

# %%
# Step 4: a persistent kernel with tensor descriptors
# ---------------------------------------------------
# On Hopper the package runs a second kernel by default for all but small products (up to
# ``2048³``), where the pointer kernel measured faster (H200, triton 3.6, torch 2.11, 2026-11-22):
# one program per SM, each looping over output tiles in grouped order, with the tiles of ``A`` and
# ``B`` moved by the Tensor Memory Accelerator through descriptors built on the device
# (``tl.make_tensor_descriptor``). The descriptor needs each row to start at a 16-byte multiple;
# where it does not, the package falls back to the pointer kernel. The interpreter runs it too:

Mt, Nt, Kt = (1024, 1832, 520) if ON_GPU else (96, 64, 80)  # rows of 16-byte multiples in float16
a, b = operand((Mt, Kt), torch.float16), operand((Kt, Nt), torch.float16)
expected = tritonperf.matmul_reference(a, b)
assert_close(matmul_persistent_tma(a, b), expected, torch.float16)
assert_close(matmul_grouped(a, b), expected, torch.float16)
print(f"{Mt} x {Nt} x {Kt}: the persistent TMA kernel and the grouped pointer kernel match the reference")

# %%
# Beside step 4: warp specialization
# ----------------------------------
# In step 4 every warp of a program does everything in turn: it issues the copies of later K
# tiles, waits for the current ones, runs its share of the matmul. Software pipelining hides
# the copies' latency, but the same warps still spend issue slots and registers on both jobs.
# With ``warp_specialize=True`` on the tile loop (``tl.range(..., warp_specialize=...)``),
# Triton splits the loop's work among warp groups of four warps: on Hopper, one group only
# issues TMA copies and waits on nothing but free buffers, and two groups share the rows of
# the output tile and only compute. The copy group gives up registers that the compute groups
# take (PTX ``setmaxnreg``), so each compute group holds a 64- or 128-row half of a 128 × 256 or
# 256 × 128 float32 accumulator.
#
# This needs no change to the kernel's code beyond the flag. What it does change is visible in
# the compiled code, which Triton produces for ``sm_90`` without a GPU: the program of 4 warps
# asks for 384 threads. Below, step 4's largest tile (8 warps) and the first warp-specialized
# tile, compiled for a 4096³ float16 product:

signature = {name: "*fp16" for name in ("a_ptr", "b_ptr", "c_ptr", "bias_ptr")}
signature |= {"scale_a_ptr": "*fp32", "scale_b_ptr": "*fp32"}
signature |= {name: "i32" for name in ("M", "N", "K", "stride_ab", "stride_am", "stride_bb", "stride_bk",
                                        "stride_cb", "stride_cm", "M_BUCKET", "N_BUCKET", "K_BUCKET")}
# 2-D, row-major operands: a launch turns the batch size and the unit strides (all 1) into constants.
constants = dict(BATCH=1, stride_ak=1, stride_bn=1, BLOCK_K=K_TILE_BYTES // 2, GROUP_M=8, A_BATCHED=False,
                 B_BATCHED=False, C_BATCHED=False, A_TRANSPOSED=False, B_TRANSPOSED=False, HAS_BIAS=False,
                 HAS_SCALES=False, ACTIVATION="none", INPUT_PRECISION="tf32", FAST_ACCUM=False)
for label, (bm, bn, stages, warps), specialized in [("step 4", CONFIG_TILES[0], False),
                                                     ("warp-specialized", WS_CONFIG_TILES[0], True)]:
    compiled = asm.compile_for_hopper(
        matmul_tma_kernel, signature,
        constants | dict(BLOCK_M=bm, BLOCK_N=bn, WARP_SPECIALIZE=specialized),
        num_warps=warps, num_stages=stages, divisible_by_16=[*signature],
    )
    threads = re.search(r"\.(?:reqntid|maxntid) (\d+)", compiled.ptx).group(1)
    assert threads == ("384" if specialized else str(32 * warps)), threads  # what the text above says
    print(f"{label}: {bm} x {bn} tiles, num_warps={warps}: {threads} threads per program, "
          f"{asm.count(compiled.ptx, r'setmaxnreg')} setmaxnreg instructions")

# %%
# Warp specialization is no free gain: a long loop already keeps a deep software pipeline full,
# and step 4's largest tiles use 8 warps, which the specialized loop cannot. Where each tile's
# loop is short (``K = 1024`` below), the copy group can start the next tile's loads while the
# compute groups finish the last one's epilogue. ``tritonperf.matmul`` therefore lets the
# autotuner time plain and warp-specialized configs per shape bucket, except from 8192 in every
# dimension, where its pick ran slower than the plain kernel in every recorded run (the comment on
# ``PLAIN_ONLY_FROM`` in the source has the figures). The measurements below compare
# ``step-4-persistent-tma`` and ``step-4-warp-specialized`` where the recorded run has both.
# Triton does not compile the flag for every operand (batched outputs, float32, float8 with a
# row-major ``b``): there ``matmul`` runs the plain kernel, and ``warp_specialize=True`` is
# refused with the reason. Correctness is checked like any other step (the interpreter ignores the
# flag, so on the CPU this only checks the code path):

assert_close(matmul_warp_specialized(a, b), expected, torch.float16)
print(f"{Mt} x {Nt} x {Kt}: the warp-specialized kernel matches the reference")

# %%
# float8 with per-tensor scales
# -----------------------------
# float8 e4m3 halves the bytes of float16 and doubles the Tensor Cores' rate on Hopper. Values
# are stored with a per-tensor scale; the kernel multiplies the float32 accumulator by both
# scales in the epilogue and writes bfloat16 by default (float16 here, as the interpreter
# computes bfloat16 wrongly).

fp8 = torch.float8_e4m3fn
a8, b8 = operand((M, K), fp8), operand((K, N), fp8)
scale_a, scale_b = torch.tensor(0.5, device=DEVICE), torch.tensor(2.0, device=DEVICE)
got = tritonperf.matmul(a8, b8, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.float16)
want = tritonperf.matmul_reference(a8, b8, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.float16)
assert_close(got, want, torch.float16)  # float8 inputs are exact in float16, so its tolerances apply
print("float8 with scales matches the reference")

# %%
# On Hopper, the Tensor Cores' float8 instruction sums its products into an accumulator of
# its own that is less precise than float32. By default the kernel adds that accumulator's
# partial sums into a float32 one after every K tile, as ``torch._scaled_mm`` does by
# default. ``fast_accum=True`` (``use_fast_accum=True`` in torch) leaves the whole of K to the
# float8 accumulator: fewer instructions and half the accumulator registers, for a result
# that drifts further from the exact one as K grows. The kernel passes the choice to
# ``tl.dot`` as ``max_num_imprecise_acc``:
#
# .. literalinclude:: ../../src/tritonperf/kernels/matmul.py
#    :pyobject: mma
#
# The registers tell the cost of the default. Compiled for ``sm_90`` (step 4's largest tile,
# 8 warps, ``a`` row-major and ``b`` column-major as ``torch._scaled_mm`` takes them, bfloat16
# out), the kernel needs about a hundred more registers per thread with the float32 partial
# sums than without them: a second 128 × 256 accumulator spread over 256 threads is 128 more
# values each. Where that passes the limit of 255, the compiler spills to local memory.

# b column-major: its unit stride runs along K, and the stride along N is the one left to the launch.
fp8_signature = signature | {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*bf16"}
fp8_signature["stride_bn"] = fp8_signature.pop("stride_bk")
bm, bn, stages, warps = CONFIG_TILES[0]
fp8_constants = constants | dict(stride_bk=1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=K_TILE_BYTES, B_TRANSPOSED=True,
                                 HAS_SCALES=True, WARP_SPECIALIZE=False)
del fp8_constants["stride_bn"]
registers = {}
for fast_accum in (False, True):
    compiled = asm.compile_for_hopper(matmul_tma_kernel, fp8_signature, fp8_constants | dict(FAST_ACCUM=fast_accum),
                                      num_warps=warps, num_stages=stages, divisible_by_16=[*fp8_signature])
    if compiled.resources is None:
        print("no ptxas here: register counts skipped")
        break
    registers[fast_accum] = compiled.resources.registers
    print(f"fast_accum={fast_accum}: {compiled.resources.registers} registers per thread, "
          f"{compiled.resources.local_memory_bytes} bytes of local memory")
if len(registers) == 2:
    assert registers[False] - registers[True] >= 64, registers  # what the text above says

# %%
# The interpreter computes float8 products exactly either way, so here both match the
# reference; on a GPU the benchmark compares each mode with torch's same mode.

fast = tritonperf.matmul(a8, b8, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.float16, fast_accum=True)
assert_close(fast, want, torch.float16)
print("float8 with fast accumulation matches the reference")

# %%
# Measuring
# ---------
# Variants, all measured in one run: ``tritonperf`` (what ``matmul`` runs by default, autotuned);
# ``torch`` (``torch.matmul``, i.e. cuBLAS; ``torch._scaled_mm`` for float8); the steps above, and
# beside step 2 ``step-2-grouped-1-stage``, step 2 with ``num_stages=1``, which measures what
# software pipelining is worth; and the fused epilogue ``step-5-fused-gelu`` against
# ``torch-matmul-then-gelu``. In the 16-bit and float8 plots the dashed line is torch's own matmul
# at 8192³ in the same dtype, measured in the same run (float32 is recorded up to 4096³ only, and
# has no such line). First the square sizes, then the shapes of a transformer layer's projections.
# float32 runs on the Tensor Cores as tf32, against ``torch.matmul`` with TF32 allowed
# (``torch-tf32``); the variant ``step-3-autotuned-fp32-fma`` is step 3 with
# ``input_precision="ieee"``, full float32 on the ordinary FMA units: what the Tensor Cores are
# worth. On Hopper the tf32 variants first copy the row-major ``b`` with ``K`` contiguous, the
# only layout the tf32 instruction reads (the optimization chapter's section on Tensor Cores has
# the numbers); their times include the copy.


def square(shape):
    return shape["M"] == shape["N"] == shape["K"]


results = live_or_recorded("matmul")
if not results:
    print("No GPU here and no recorded matmul results found: the plots below are skipped.")
for doc, live in results:
    gpu = doc["provenance"]["gpu"]
    for dtype in ("float16", "bfloat16", "float32", "float8_e4m3fn"):
        if any(r["kernel"] == "matmul" and r["dtype"] == dtype for r in doc["records"]):
            plot_results(doc, "matmul", dtype, live=live, select=square, series=(),
                         title=f"matmul, {dtype}, square M = N = K, {gpu}")
    plot_results(doc, "matmul", "float16", live=live, select=lambda shape: not square(shape),
                 title=f"matmul, float16, transformer shapes (M × N × K), {gpu}")

# %%
# What each step bought, at 8192³, 2048³ and the short-K shape 8192 × 8192 × 1024 in float16,
# against the torch variant of the same run (above 1.00 means faster than it):

for doc, live in results:
    print(doc["provenance"]["gpu"], "(measured now)" if live else "(recorded)")
    for mnk in [(8192, 8192, 8192), (2048, 2048, 2048), (8192, 8192, 1024)]:
        case = [r for r in doc["records"] if r["kernel"] == "matmul" and r["dtype"] == "float16"
                and r["shape"] == dict(zip("MNK", mnk, strict=True))]
        torch_ms = next((r["ms"] for r in case if r["variant"] == "torch"), None)
        label = " x ".join(map(str, mnk))
        for r in sorted(case, key=lambda r: r["variant"]):
            versus = f"{torch_ms / r['ms']:.2f}x torch" if torch_ms else ""
            print(f"  {label:18} {r['variant']:24} {r['TFLOPS']:6.0f} TFLOPS  {versus}")

# %%
# float8 in its two modes, each against torch's same mode: ``tritonperf`` against ``torch``
# (``torch._scaled_mm``), and ``step-6-fast-accum`` (``fast_accum=True``) against
# ``torch-fast-accum`` (``use_fast_accum=True``):

for doc, live in results:
    print(doc["provenance"]["gpu"], "(measured now)" if live else "(recorded)")
    for n in (4096, 8192):
        case = {r["variant"]: r for r in doc["records"] if r["kernel"] == "matmul"
                and r["dtype"] == "float8_e4m3fn" and r["shape"] == {"M": n, "N": n, "K": n}}
        for ours, theirs in [("tritonperf", "torch"), ("step-6-fast-accum", "torch-fast-accum")]:
            if ours in case and theirs in case:
                print(f"  {n}^3 {ours:17} {case[ours]['TFLOPS']:6.0f} TFLOPS against {theirs:17} "
                      f"{case[theirs]['TFLOPS']:6.0f}: {case[theirs]['ms'] / case[ours]['ms']:.2f}x")
            else:
                print(f"  {n}^3 {ours} against {theirs}: not in this run")

# %%
# On the roofline
# ---------------
# The same run's records placed against its two ceilings: the memory-bound kernels of the
# other lessons on the bandwidth slope, the matrix products against the flat compute roof.

for doc, live in results:
    plot_roofline(doc, live=live)

# %%
# Takeaways
# ---------
# * Reuse is what makes a kernel compute-bound: a tile of ``C`` reads panels of ``A`` and ``B``
#   once from memory and uses each element ``BLOCK_N`` or ``BLOCK_M`` times from on-chip memory.
# * Accumulate in float32 and apply scales, bias and activation to the accumulator: the
#   epilogue costs no extra pass over ``C``. Its arithmetic is not free, though: nothing
#   overlaps it, so an expensive activation (the exact GELU) can cost what the saved pass
#   saves. Key the autotuner on the epilogue too.
# * Program order is a memory optimization: the programs that run together should share
#   panels.
# * Autotune over a short, pruned list keyed on shape buckets, and keep the cache between
#   processes.
# * On Hopper, a persistent grid with tensor descriptors is the kernel to start from; keep a
#   pointer kernel for operands the descriptors cannot describe.
# * Warp specialization is one flag on the loop, but not a gain everywhere, and Triton does not
#   compile it for every operand: measure it per shape, as the autotuner does, and check the
#   autotuner's pick in an interleaved run.
# * Compare like with like: float8 with fast accumulation against torch's fast accumulation,
#   and the default mode against torch's default.
# * Check the layout an instruction wants. Hopper's tf32 MMA reads ``K``-contiguous tiles only:
#   a row-major ``b`` more than halved the float32 rate, and one transpose of ``b`` first costs
#   far less (H200, triton 3.6, torch 2.11, 2026-11-29).
