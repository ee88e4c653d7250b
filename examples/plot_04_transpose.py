"""
Transpose: coalescing and tiles
===============================

A transpose computes nothing: every element is read once and written once, to another place.
That makes it the cleanest test of *how* a kernel touches memory. You will learn:

* what a **coalesced** access is, and why a kernel that walks rows (or columns) of a matrix can
  have it on one side of a transpose only;
* how a 2-D **tile** gives it on both sides, with ``tl.trans`` and no shared memory of your own:
  the compiler stages the tile through shared memory and swizzles its addresses;
* what the tile shape, ``num_warps`` and the **order of programs** change;
* how a **tensor descriptor** (the Tensor Memory Accelerator, TMA, on Hopper GPUs) moves whole
  tiles, what it asks of the data, and why it did not beat plain pointer tiles here;
* how 16- and 32-bit elements can travel **two to a word**, 2 × 2 blocks at a time, and what
  that bought.

To run this script yourself you need torch, triton and the ``tritonperf`` package
(``pip install -e .`` from a clone of the guide's repository). On a CUDA GPU it runs at
full size; anywhere else Triton's interpreter runs the kernels on the CPU at small sizes.
"""

# %%
# Where the kernels run
# ---------------------
# Importing :mod:`tritonperf` picks the mode: a visible CUDA GPU, or Triton's interpreter.


import matplotlib.pyplot as plt
import torch

from tritonperf import asm, runtime
from tritonperf.bench import live_or_recorded
from tritonperf.bench.plotting import add_caption, caption, ceiling_for
from tritonperf.bench.report import summarize
from tritonperf.bench.suites.transpose import SHAPES, pairs_fit, tma_fits
from tritonperf.kernels.transpose import (
    AUTO_TMA_SIZES,
    PAIR_CONFIGS,
    REALIGN_CONFIGS,
    TILE_CONFIGS,
    UNALIGNED_TILE_CONFIGS,
    transpose,
    transpose_bytes,
    transpose_method,
    transpose_reference,
)
from tritonperf.ladders.transpose import tiles_kernel, transpose_coalesced_writes, transpose_row_per_program, transpose_tiles
from tritonperf.testing import poisoned, random_tensor

print(runtime.describe())
DEVICE = runtime.default_device()

# %%
# What the hardware allows
# ------------------------
# Transposing an ``M × N`` matrix reads ``M·N`` elements and writes ``M·N``: for a
# 16384 × 16384 float32 matrix, 1 GiB each way. Nothing is computed, so the best a kernel can
# do is to move those bytes as fast as a plain device-to-device copy of the same size. The
# copy bandwidth below is measured in the same run as the kernels:

results = live_or_recorded("transpose")
M = N = 16384
moved = transpose_bytes(M, N, torch.float32)
for doc, live in results:
    copy = doc["ceilings"]["copy_GBps"]
    how = "measured now" if live else "recorded"
    print(f"{doc['provenance']['gpu']} ({how}): copy ceiling {copy:,.0f} GB/s, so a {M} x {N} float32 transpose "
          f"({moved / 2**30:.0f} GiB moved) takes at least {moved / (copy * 1e9) * 1e3:.2f} ms")
if not results:
    print("No GPU here and no recorded results found next to this script: the plots below are skipped.")

# %%
# Coalescing
# ----------
# The 32 threads of a warp execute a load or store together. The memory system serves them in
# 32-byte **sectors**: when the 32 threads touch 32 consecutive float32 values, those 128 bytes
# are 4 sectors, the fewest possible, and the access is called *coalesced*. When the threads'
# addresses are a whole row apart, each one needs a sector of its own, of which it uses 4 bytes.
# Counting sectors for one warp instruction:


def sectors(addresses: list[int]) -> int:
    """Distinct 32-byte sectors that one warp instruction touches."""
    return len({a // 32 for a in addresses})


lanes, row_bytes = range(32), 4096 * 4
print("32 lanes along a row:   ", sectors([4 * lane for lane in lanes]), "sectors for 128 useful bytes")
print("32 lanes down a column: ", sectors([row_bytes * lane for lane in lanes]), "sectors for 128 useful bytes")

# %%
# A transpose reads ``x`` along its rows and writes ``y = x.T`` along *its* rows, which are the
# columns of ``x``. A kernel whose programs each walk one row of ``x`` reads coalesced and
# writes strided; one that walks a column of ``x`` does the opposite. The caches soften the
# strided side (a sector fetched for one warp may still be in L2 when a neighbouring program
# needs the rest of it, and L2 merges partial writes), but they cannot make it free.
#
# Step 1: one program per input row
# ---------------------------------
# Program ``m`` reads row ``m`` of ``x`` in blocks of ``BLOCK_N`` and writes it into column
# ``m`` of ``y``. Reads are coalesced, writes are ``M`` elements apart.
#
# .. literalinclude:: ../../src/tritonperf/ladders/transpose.py
#    :pyobject: row_per_program_kernel
#
# Every step is checked the same way: an odd shape, fresh random values, an output filled with
# NaN beforehand so a forgotten element shows, and an exact comparison (a transpose must not
# change a single bit).

rows, cols = runtime.pick(gpu=(8191, 4097), cpu=(181, 97))


def check(step, dtype=torch.float32, shape=None, **kwargs):
    m, n = shape or (rows, cols)
    x = random_tensor((m, n), dtype, DEVICE)
    out = poisoned((n, m), dtype, DEVICE)
    step(x, out, **kwargs)
    assert torch.equal(out, transpose_reference(x)), f"{step.__name__} is wrong"
    knobs = "".join(f", {k}={v}" for k, v in kwargs.items())
    print(f"{step.__name__}{knobs}: {m} x {n} {str(dtype).removeprefix('torch.')} matches x.T exactly")


check(transpose_row_per_program)

# %%
# Step 2: coalesced writes
# ------------------------
# Swapping the roles: program ``n`` gathers column ``n`` of ``x`` and writes row ``n`` of
# ``y``. Now the writes are coalesced and the reads are ``N`` elements apart. Whichever side
# a program walks along, the other side is strided.
#
# .. literalinclude:: ../../src/tritonperf/ladders/transpose.py
#    :pyobject: coalesced_writes_kernel

check(transpose_coalesced_writes)

# %%
# Step 3: tiles
# -------------
# The way out is to give each program a square **tile**, ``BLOCK × BLOCK`` elements on a 2-D
# grid of programs. The program reads its tile along the rows of ``x`` (coalesced), transposes
# it with ``tl.trans``, and writes it along the rows of ``y`` (coalesced too). Each row of the
# tile is 32 consecutive elements in memory on both sides.
#
# .. literalinclude:: ../../src/tritonperf/ladders/transpose.py
#    :pyobject: tiles_kernel

check(transpose_tiles)

# %%
# What the compiler does with the tile
# ------------------------------------
# In CUDA C++ the classic tiled transpose declares a ``__shared__`` array, copies the tile into
# it, synchronizes, and reads it back transposed; the array is padded by one column
# (``tile[32][33]``) so that a warp reading a column of it hits 32 different memory banks.
# **None of that is written in Triton.** There is no shared-memory declaration in the
# language and no padding to add. ``tl.trans`` only changes the tensor's logical shape; the
# load wants the tile laid out along the rows of ``x``, the store wants it along the rows of
# ``y``, and the compiler inserts a *layout conversion* between the two. It stages the tile
# through shared memory for that conversion, places the barrier, and chooses the addresses:
# it permutes them (a *swizzle*, computed with XORs) so that the threads of a warp spread over
# the banks instead of piling onto one.
#
# You can see it in the compiled code of step 3's kernel with 64 × 64 float32 tiles. Triton
# compiles for a Hopper GPU (``sm_90``) even on a machine without one, so this works in both
# modes:

TILE = 64

reason = asm.cuda_compiler_missing()
if reason:
    print(f"could not compile for sm_90 here ({reason}); the facts below are skipped")
else:
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"}
    compiled = asm.compile_for_hopper(tiles_kernel, signature, {"BLOCK": TILE}, divisible_by_16=list(signature))
    print("register layouts in the kernel:")
    print(asm.grep(asm.clean(compiled.ttgir), r"^#blocked"), end="")
    print("the conversion:", asm.grep(asm.clean(compiled.ttgir), r"convert_layout", limit=1).strip())
    tile_bytes, shared = TILE * TILE * 4, compiled.shared_bytes
    verdict = "exactly the tile, no padding" if shared == tile_bytes else f"{shared - tile_bytes:+,} bytes beyond the tile"
    print(f"shared memory the compiler reserved: {shared:,} bytes for a {tile_bytes:,}-byte tile ({verdict})")
    ptx = compiled.ptx
    print(f"PTX: {asm.count(ptx, asm.SHARED_STORE)} shared stores and {asm.count(ptx, asm.SHARED_LOAD)} shared loads "
          f"per thread, {asm.count(ptx, asm.BARRIER)} barrier(s), {asm.count(ptx, asm.XOR)} XORs computing addresses, "
          f"{asm.count(ptx, asm.WIDE_GLOBAL_LOAD)} + {asm.count(ptx, asm.WIDE_GLOBAL_STORE)} 16-byte global loads + stores")

# %%
# In a ``#blocked`` layout, ``order`` names the dimension along which each thread's
# ``sizePerThread`` consecutive elements run. The conversion takes the transposed tile from
# the layout the load left it in (a thread's elements still consecutive along a row of ``x``)
# to the one the store wants (consecutive along a row of ``y``), which is what lets both sides
# use wide, coalesced accesses.
#
# Step 4: tuned tiles and program order
# -------------------------------------
# The package's pointer kernel keeps the tile and changes what step 3 left to chance:
#
# * **Tile shape and warps.** Step 3's 32 × 32 float32 tile is 4 KiB; each program has little
#   in flight before it waits for memory. The tuned tiles are several times larger and depend
#   on the element width (for 2- and 4-byte elements, the best of a sweep of tile shapes and
#   warps on an H200); every tile row is at least 128 contiguous bytes on both sides. Rows
#   that do not start at 16-byte multiples, like the odd shape of these checks, cannot be
#   read or written more than one element at a time. There float32 takes 32 KiB tiles, 64
#   columns wide, in 8 warps, and float16 256 × 32 tiles in 4 warps, a shape that stays fast
#   whichever ``ptxas`` assembles it (the comment in the table says why that matters). A matrix
#   too small to give every SM several tiles gets tiles half as wide, if they have 8 warps or more:
#
#   .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#      :start-at: # Element size in bytes
#      :end-at: MIN_TILES_PER_SM =
#
# * **Program order.** Programs are numbered on a 1-D grid and walk down one tile column after
#   another, so the programs resident at one moment write neighbouring pieces of the same rows of
#   ``y`` and read the same columns of ``x``. Against bands of 8 tile rows walked column by column
#   (the order of the matmul lesson) this was 1-3% faster on aligned shapes and 7-11% on the odd
#   ones, where a tile's row of ``y`` starts anywhere in a 32-byte sector and shares its first and
#   last sectors with the tiles next to it in the column (H200, triton 3.6, torch 2.11,
#   2026-11-23; the numbers are in the comments above). Step 3's 2-D grid runs in the same order
#   in practice: its first axis, the one the GPU hands out first, counts tile rows. ``group_m``
#   still selects bands; batches of matrices are numbered one after another on the same grid.
#
#   .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#      :pyobject: tile_coordinates
#
# * **No masks when the tiles fit**, and 32-bit offsets unless an offset can pass
#   2\ :sup:`31` − 1 (both decided by the launcher and passed as compile-time constants), and
#   any input strides, so a sliced or already transposed tensor needs no copy first:
#
#   .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#      :pyobject: move_tile
#
# * **What is the same for a whole tile is added once.** The way an address is written changes
#   the compiled code, and so does the ``ptxas`` that assembles it. With the batch offset in
#   ``y`` written as ``(b * N + cols) * M``, a product for every element, the float16 kernel for
#   odd rows (256 × 64 tiles, 8 warps, compiled for ``sm_90``) needs 142 registers a thread with
#   triton 3.9; written as ``b * N * M`` plus the rest, 37. With triton 3.6 and its own
#   ``ptxas`` (CUDA 12.8) the two forms need 169 and 145, with torch 2.11's ``ptxas`` (CUDA 13.0)
#   80 each. Above 128 registers a thread, one 8-warp program fills an SM's register file by
#   more than half, and only one fits. The timings are in the comment in ``move_tile`` above.
#
# * **A choice of grid.** By default each program moves one tile. With ``programs_per_sm``
#   the launcher starts a fixed number of programs per SM (a *persistent* grid), and each one
#   loops over every ``num_programs``-th tile. That saves starting and retiring programs; it is
#   a launcher knob rather than a rule, to be kept only where the measurements favour it:
#
#   .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#      :pyobject: transpose_kernel

for alignment, table in [("aligned rows", TILE_CONFIGS), ("other rows", UNALIGNED_TILE_CONFIGS)]:
    for size, (block_m, block_n, warps) in table.items():
        print(f"{alignment}, {size}-byte elements: {block_m} x {block_n} tile = {block_m * block_n * size // 1024} KiB, "
              f"{warps} warps; tile rows of {block_n * size} bytes read and {block_m * size} bytes written")
check(transpose, method="tiles")
check(transpose, method="tiles", block_m=32, block_n=128, group_m=4, num_warps=8)  # any knob is just as exact

# %%
# Step 5: tensor descriptors
# --------------------------
# On Hopper, the **Tensor Memory Accelerator** (TMA) copies a whole tile between global and
# shared memory. In Triton it is reached through a *tensor descriptor*: the launcher describes
# the matrix (base, shape, strides, tile shape) once with
# ``triton.tools.tensor_descriptor.TensorDescriptor``, and the kernel calls ``load`` and
# ``store`` on it with tile coordinates. The transposition in between is the same ``tl.trans``.
#
# .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#    :pyobject: move_tile_tma
#
# The kernel around it is the same one- or many-tiles-per-program choice as in step 4:
#
# .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#    :pyobject: transpose_tma_kernel
#
# There are good reasons to expect it to be faster:
#
# * **One instruction moves a tile.** The pointer kernel has every thread issue its own loads
#   and stores; here one thread starts the copy and the hardware does the rest.
# * **No address arithmetic.** No thread computes an offset: the hardware walks the shape and
#   strides it was given.
# * **Bounds in hardware.** Reads past the edge come back as zeros and writes past it are
#   dropped, so the kernel has no masks, on any shape.
#
# The hardware asks for 16-byte aligned rows in return: the matrix must start at a 16-byte
# aligned address and every row of the input and of the output must start at a multiple of
# 16 bytes. ``method="tma"`` refuses anything else with a ``ValueError``.
#
# It is as exact as every other step where it can run, and says why where it cannot (the odd
# shape used so far has rows of an odd number of floats):

try:
    check(transpose, shape=runtime.pick(gpu=(8192, 4096), cpu=(96, 160)), method="tma")
    check(transpose, method="tma")
except ValueError as err:
    print("ValueError:", err)

# %%
# Yet it did not win. On the H200 where the tiles were tuned, a sweep of tile shapes and warps
# for both kernels found the pointer tiles of step 4 ahead on every aligned shape, in float32
# and in float16. Look at where the tile goes. Step 4 loads it into registers, passes it through
# shared memory once for the change of layout, and stores it from registers. Step 5 passes
# through shared memory twice: the TMA load lands the tile in shared memory, the threads read it
# into registers to transpose it, and write it back to shared memory for the TMA store. A
# transpose does no arithmetic to hide that extra round trip behind. And the pointer kernel
# already runs close to the copy ceiling (see the tables below), so the address arithmetic the
# TMA saves had little to give back.
#
# So tensor descriptors stay opt-in. ``AUTO_TMA_SIZES``, the element sizes for which
# ``method="auto"`` would take the descriptor kernel, is empty, and the descriptor kernel runs
# only when asked for with ``method="tma"``.
#
# Step 6: two elements to a word
# ------------------------------
# Step 4 moves every element on its own through the change of layout. Two neighbours in a row of
# ``x`` could travel as one integer twice as wide instead: two float16 values as an ``int32``,
# two float32 values as an ``int64``. But the two elements of such a pair belong to two different
# rows of ``y``. Two rows of ``x`` at a time fix that. Rows ``2i`` and ``2i + 1`` at pair ``c``
# hold a 2 × 2 block: row ``2c`` of ``y`` wants its left column, and row ``2c + 1`` its right
# one, each as a pair. Trading the block's two off-diagonal elements between the two words, with
# shifts and masks in registers, turns its columns into rows. Each word is then a pair of ``y``,
# and the tile of words is transposed with ``tl.trans`` as before:
#
# .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#    :pyobject: move_pair_tile
#
# ``transpose_kernel`` runs it in place of ``move_tile`` when the launcher passes ``PAIR_BITS``,
# the width of one element. It needs both dimensions even, a contiguous last dimension, rows
# that start at whole pairs, and both tensors aligned to a pair; ``method="pairs"`` refuses
# anything else and says why, as on the odd shape of these checks. The words are only moved,
# never read as numbers, so every bit pattern survives, NaN payloads included:

for dtype in (torch.float32, torch.float16, torch.bfloat16):
    check(transpose, dtype=dtype, shape=runtime.pick(gpu=(8192, 4096), cpu=(96, 160)), method="pairs")
words = torch.randint(-(2**15), 2**15, runtime.pick(gpu=(4096, 2048), cpu=(64, 96)), device=DEVICE, dtype=torch.int32)
words = words.to(torch.int16)
assert torch.equal(transpose(words.view(torch.float16), method="pairs").view(torch.int16), words.T)
print(f"{words.shape[0]} x {words.shape[1]} random 16-bit patterns (sign bits and NaNs among them) come out bit for bit")
try:
    check(transpose, method="pairs")
except ValueError as err:
    print("ValueError:", err)
for size, (block_m, block_n, warps) in PAIR_CONFIGS.items():
    print(f"{size}-byte elements: tiles of {block_m} x {block_n} elements, {block_m} rows of {block_n // 2} pairs "
          f"of {8 * size}-bit elements, in {warps} warps")

# %%
# The gain is small. On an H200 (triton 3.6, torch 2.11, 2026-12-02), timed against step 4 in
# the same process, interleaved, twice: 1.3-2.1% in float16 from 4096² to 12288 × 5120, 0.2% at
# 16384², and under 1% in float32. In the recorded H100 results (same versions, 2026-12-07, one
# measurement per cell, not interleaved), step 6 is 0.4-3.7% ahead of step 4 in float16; in
# float32 it is between 0.6% behind and 0.2% ahead, within the run's noise. The tiles were
# chosen by a sweep on the H200:
#
# .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#    :start-at: # Element size in bytes -> (BLOCK_M, BLOCK_N, num_warps) of the pair kernel
#    :end-at: PAIR_CONFIGS:
#
# Why it gains is not what one would guess from the compiled code. The pair kernel has more
# shared-memory instructions than step 4, not fewer, and more barriers. In float16 it moves the
# same 32 KiB tile in 4 warps instead of 8, so each thread holds twice the data in more
# registers, and an SM holds fewer warps. Nsight Compute on the same H200 (8192 × 8192 float16,
# one launch each, the kernels as of 2026-12-02; the counts printed below are those of the code
# on this page) agreed: 104 registers a thread against 50, 23% achieved occupancy against 47%.
# Yet DRAM throughput was 79.8% of its peak against 75.9%, and the launch took 63.3 µs against
# 66.7 µs. We have not found out which difference pays. Occupancy is a means, not a goal: fewer
# warps, each with more loads in flight, kept memory busier here. Compiled for ``sm_90``, the two
# float16 kernels at the tiles ``auto`` picks:

if reason:
    print(f"could not compile for sm_90 here ({reason}); the counts below are skipped")
else:
    steps = {"tiles": "step 4", "pairs": "step 6"}
    for method, kernel in asm.transpose_compilations().items():
        ptx, tile = kernel.ptx, f"{kernel.constexprs['BLOCK_M']} x {kernel.constexprs['BLOCK_N']}"
        registers = f"{kernel.resources.registers} registers a thread, " if kernel.resources else ""
        print(f"{steps[method]} ({method}): {tile} float16 tile in {kernel.num_warps} warps: {registers}"
              f"{asm.count(ptx, asm.SHARED_STORE)} shared stores, {asm.count(ptx, asm.SHARED_LOAD)} shared loads, "
              f"{asm.count(ptx, asm.SHARED_MATRIX_LOAD)} ldmatrix, "
              f"{asm.count(ptx, asm.BARRIER)} barrier(s), {asm.count(ptx, asm.WIDE_GLOBAL_LOAD)} + "
              f"{asm.count(ptx, asm.WIDE_GLOBAL_STORE)} 16-byte global loads + stores per thread")

# %%
# Step 7: whole vectors on rows at any offset
# -------------------------------------------
# On the odd shape, 8191 × 4097, no row of ``x`` or of ``y`` starts at a 16-byte multiple, so step
# 4 loads and stores one element per instruction there: a 16-bit element moves 2 bytes at a time,
# where an aligned row moves 16. The bytes that memory serves are the same; the instructions and
# the requests to the L1 cache are eight times as many. In both GPUs' recorded runs, float16 at
# the odd shape is where ``tritonperf`` stays furthest from the copy ceiling.
#
# A row at any offset still lies inside whole 16-byte vectors, give or take one at each end. Step
# 7 reads, for every row of its tile, the ``BLOCK_N`` elements from the vector boundary at or
# before its first column, so every load is a whole aligned vector, and shifts each row left by
# its own offset from that boundary with ``tl.gather``: within a warp, the compiler turns that into
# shuffles between threads. The last ``VEC`` columns (one vector: 8 elements of 16 bits) may then
# hold garbage, so tiles overlap by one vector and each keeps ``BLOCK_N - VEC`` columns. The
# writes get the same treatment after ``tl.trans``: each row of ``y`` is written from the vector
# boundary at or before the tile's first column, with a second gather that shifts each row right.
# One vector per row of ``y`` is left: the one that holds the end of that row and the start of the
# next. The tiles of the first tile row write those element by element, a few bytes per row:
#
# .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#    :pyobject: move_realigned_tile
#
# The rows of ``x`` and ``y`` may start anywhere; the two tensors must start at 16-byte aligned
# addresses (as every tensor that PyTorch allocates does) and the last dimension of ``x`` must be
# contiguous. ``method="realign"`` asks for it:

for dtype in (torch.float32, torch.float16, torch.float64):
    check(transpose, dtype=dtype, shape=runtime.pick(gpu=(8191, 4097), cpu=(61, 37)), method="realign")
try:
    transpose(random_tensor((48, 98), torch.float32, DEVICE)[:, 1:97], method="realign")
except ValueError as err:
    print("ValueError:", err)
for size, (block_m, block_n, warps) in REALIGN_CONFIGS.items():
    vec = 16 // size
    print(f"{size}-byte elements: tiles of {block_m} x {block_n} read, {block_m - vec} x {block_n - vec} kept, "
          f"in {warps} warps")

# %%
# Its bars are ``step-7-realign``, measured only on the shapes whose rows are not 16-byte
# multiples. Before the bars, a timing made while writing it, on an H100 (triton 3.6, torch 2.11,
# 2026-12-08; two interleaved rounds on fresh inputs): in float16 at 8191 × 4097, step 7's best
# tile, 64 × 64 in 4 warps, moved 2046-2049 GB/s and step 4 2364-2374. At 12289 × 5121 it was
# 2134-2136 against 2422-2423. In float32 the two were within 1% of each other: 2714-2715
# against 2736-2737 at 8191 × 4097, for step 7's tile of 64 × 64 in 8 warps.
#
# So the 16-byte accesses did not pay for the shuffles. Removing step 4's narrow accesses this way
# costs more than it saves. The float16 tile above compiles to 128 shuffles a thread, four for
# each element it moves.
# ``method="auto"`` does not take step 7; it stays in the package for ``method="realign"``.
#
# %%
# What ``method="auto"`` runs
# ---------------------------
# Pairs where they can run, pointer tiles everywhere else (and tensor descriptors for the element
# sizes in ``AUTO_TMA_SIZES``, none at present). For the benchmark's shapes, what ``auto`` runs
# and whether steps 5 and 6 can run at all:

print("AUTO_TMA_SIZES =", set(AUTO_TMA_SIZES) or "{} (empty)")
for shape in SHAPES:
    m, n = shape["M"], shape["N"]
    for dtype in (torch.float32, torch.float16):
        size = torch.empty((), dtype=dtype).element_size()
        if tma_fits(shape, dtype) and size in AUTO_TMA_SIZES:
            auto = "tensor descriptors (step 5)"
        elif pairs_fit(shape, dtype) and size in PAIR_CONFIGS:
            auto = "pairs (step 6)"
        else:
            auto = "pointer tiles (step 4)"
        step5 = ("can run" if tma_fits(shape, dtype)
                 else f"cannot: rows of {n * size:,} and {m * size:,} bytes are not both 16-byte multiples")
        step6 = "can run" if pairs_fit(shape, dtype) else "cannot: odd dimensions"
        print(f"{m:>5} x {n:<5} {str(dtype).removeprefix('torch.'):8}: auto runs {auto}; step 5 {step5}; step 6 {step6}")
print("this machine, 48 x 96 float32, auto runs:", transpose_method(random_tensor((48, 96), torch.float32, DEVICE)))
print("this machine, 47 x 96 float32, auto runs:", transpose_method(random_tensor((47, 96), torch.float32, DEVICE)))

# %%
# The launcher validates its input, views any dtype as integers of the same width (the kernel
# only moves bits), folds batch dimensions into the grid, and picks the kernel and its tile:
#
# .. literalinclude:: ../../src/tritonperf/kernels/transpose.py
#    :pyobject: transpose
#
# Correct for every dtype and layout
# ----------------------------------
# Because the data is moved as 1-, 2-, 4- or 8-byte integers (or pairs of them in wider ones),
# every dtype comes out bit for bit, batches and strided inputs included. In parentheses, the
# kernel ``auto`` ran:

small = runtime.pick(gpu=(4099, 2053), cpu=(67, 45))
inputs = {
    "float32": random_tensor(small, torch.float32, DEVICE),
    "bfloat16": random_tensor(small, torch.bfloat16, DEVICE),
    "int64": random_tensor(small, torch.int64, DEVICE),
    "bool": random_tensor(small, torch.int32, DEVICE) > 0,
    "float8_e4m3fn": random_tensor(small, torch.float32, DEVICE).to(torch.float8_e4m3fn),
    "batch of 3, float16": random_tensor((3, *small), torch.float16, DEVICE),
    "even sides, float16": random_tensor((small[0] + 1, small[1] + 1), torch.float16, DEVICE),
    "every other column": random_tensor((small[0], 2 * small[1]), torch.float32, DEVICE)[:, ::2],
    "already transposed": random_tensor((small[1], small[0]), torch.float32, DEVICE).t(),
}
for name, x in inputs.items():
    out = transpose(x)
    ref = transpose_reference(x)
    same = torch.equal(out.view(torch.uint8), ref.view(torch.uint8))  # compare bytes: exact for every dtype
    print(f"{name:20} {tuple(x.shape)} -> {tuple(out.shape)} ({transpose_method(x)}): {'identical bytes' if same else 'DIFFERENT'}")
    assert same

# %%
# Bad input is stopped before launch with a message that says what is wrong:

try:
    transpose(inputs["float32"], torch.empty(small, device=DEVICE))
except ValueError as err:
    print("ValueError:", err)

# %%
# Measuring
# ---------
# Every variant writes into an output allocated beforehand, so nothing times an allocation:
# ``torch`` is ``out.copy_(x.T)`` in eager PyTorch, ``torch.compile`` is the same function
# compiled for each shape, the ``step-`` variants are the kernels above, and ``tritonperf`` is
# ``transpose`` with ``method="auto"``. ``step-5-tma`` is ``method="tma"``, measured only on
# shapes whose rows are 16-byte multiples, and ``step-6-pairs`` is ``method="pairs"``, measured
# only on shapes with even dimensions; elsewhere they have no bar. ``step-7-realign`` is
# ``method="realign"``, measured only where rows are not 16-byte multiples. Results recorded before
# step 6 or step 7 existed have no bars for them, and their ``tritonperf`` bars are step 4's. The bars show GB/s
# (bytes read plus bytes written, per second); the dashed line is the copy ceiling of the same run.

def variant_rank(variant: str) -> tuple[int, str]:
    """Lesson steps first, then the torch baselines, then the package's kernel."""
    return (0 if variant.startswith("step-") else 1 if variant.startswith("torch") else 2, variant)


def plot_bars(doc, dtype: str, live: bool):
    """GB/s of every variant at every shape of one document, as grouped bars (none where a variant was not measured)."""
    recs = [r for r in doc["records"] if r["kernel"] == "transpose" and r["dtype"] == dtype]
    shapes = sorted({(r["shape"]["M"], r["shape"]["N"]) for r in recs}, key=lambda s: (s[0] * s[1], s))
    variants = sorted({r["variant"] for r in recs}, key=variant_rank)
    rate = {(r["variant"], (r["shape"]["M"], r["shape"]["N"])): r["GBps"] for r in recs}
    fig, ax = plt.subplots(figsize=(10, 4.8), facecolor="white", layout="constrained")
    width = 0.84 / len(variants)
    for i, variant in enumerate(variants):
        measured = [(k, rate[variant, s]) for k, s in enumerate(shapes) if (variant, s) in rate]
        xs = [k + (i - (len(variants) - 1) / 2) * width for k, _ in measured]
        ours = variant == "tritonperf"
        ax.bar(xs, [gbps for _, gbps in measured], width, label=variant, color=f"C{i}", edgecolor="black" if ours else None)
    ceiling = ceiling_for(doc, "GBps", dtype)
    if ceiling:
        ax.axhline(ceiling[1], color="black", linestyle="--", linewidth=1, label=f"ceiling: {ceiling[0]} = {ceiling[1]:,.0f}")
    ax.set_xticks(range(len(shapes)), [f"{m} x {n}" for m, n in shapes])
    ax.set_xlabel("M x N")
    ax.set_ylabel("GB/s")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    ax.set_title(f"transpose, {dtype}, {doc['provenance']['gpu']}")
    add_caption(fig, doc, live)
    return fig


for doc, live in results:
    for dtype in ("float32", "float16"):
        plot_bars(doc, dtype, live)

# %%
# What each step bought
# ---------------------
# Per shape, as a share of the copy ceiling and against the best torch variant of the same run
# (above 1.00 means faster than it); a dash marks a variant not measured at that shape:

for doc, live in results:
    print(caption(doc, live))
    rows_of = {}
    for r in summarize(doc):
        if r["kernel"] == "transpose":
            rows_of[r["dtype"], r["shape"]["M"], r["shape"]["N"], r["variant"]] = r
    cases = sorted({key[:3] for key in rows_of}, key=lambda c: (c[0], c[1] * c[2], c[1]))
    variants = sorted({key[3] for key in rows_of}, key=variant_rank)
    for dtype, m, n in cases:
        for variant in variants:
            r = rows_of.get((dtype, m, n, variant))
            head = f"  {dtype:8} {m:>5} x {n:<5} {variant:24}"
            if r is None:
                print(f"{head} {'–':>7}")
                continue
            pct = f"{r['pct_of_ceiling']:5.1f}% of copy" if r["pct_of_ceiling"] is not None else "  –   of copy"
            vs = f"{r['vs_best_torch']:.2f}x best torch" if r["vs_best_torch"] is not None else "– best torch"
            print(f"{head} {r['GBps']:7,.0f} GB/s {pct}  {vs}")

# %%
# Step 5 against the kernel ``method="auto"`` runs, on every shape where both were measured
# (below 1.00 means the tensor descriptors were slower):

for doc, live in results:
    gbps = {(r["dtype"], r["shape"]["M"], r["shape"]["N"], r["variant"]): r["GBps"]
            for r in doc["records"] if r["kernel"] == "transpose"}
    pairs = sorted(((key[:3], gbps[key], gbps[(*key[:3], "tritonperf")]) for key in gbps
                    if key[3] == "step-5-tma" and (*key[:3], "tritonperf") in gbps),
                   key=lambda pair: (pair[0][0], pair[0][1] * pair[0][2], pair[0][1]))
    print(caption(doc, live))
    for (dtype, m, n), tma, auto in pairs:
        print(f"  {dtype:8} {m:>5} x {n:<5} step-5-tma / tritonperf = {tma / auto:.2f}")
    if pairs:
        wins = sum(tma > auto for _, tma, auto in pairs)
        print(f"  step 5 was faster at {wins} of {len(pairs)} shapes")
    else:
        print("  no shape with both step-5-tma and tritonperf in these results")

# %%
# Reading the numbers:
#
# * **Steps 1 and 2** pay for their strided side in sectors fetched or written for a few
#   useful bytes each; which of the two is worse depends on how much of that waste the L2
#   cache absorbs, and on the element size (a float16 uses half as much of each sector as a
#   float32).
# * **Step 3** makes both sides coalesced; what is left is the cost of small tiles and of the
#   masks on every access.
# * **Step 4** is the same idea with enough bytes per program, a program order that keeps
#   concurrent programs on neighbouring memory, and no masks where the tiles fit.
# * **Step 5** moves the same tiles with tensor descriptors, on aligned shapes only. On the
#   H200 we tuned on, its extra pass through shared memory cost more than the address
#   arithmetic it saves; the ratios above show how it fares in the results on this page.
# * **Step 6** moves 2 × 2 blocks as pairs of elements packed in wider integers, on shapes with
#   even dimensions: 1-2% in float16 and less in float32 in the H200 run quoted above, and
#   0.4-3.7% in float16 in the H100 record.
# * **Step 7** loads and stores whole 16-byte vectors on the odd shape, at the price of two
#   gathers (warp shuffles) per tile and tiles that overlap by one vector a side. In float16
#   the shuffles cost more than the narrow accesses they replace: 12-14% slower than step 4 on
#   an H100. In float32 the two run level.
# * **tritonperf** is the step-6 kernel where it can run and the step-4 kernel elsewhere (the
#   odd shape); with ``AUTO_TMA_SIZES`` empty, ``method="auto"`` never picks the descriptor
#   kernel. Its bars differ from those of the step it runs only by the noise of the measurement.
#
# Takeaways
# ---------
# * A warp's access is cheap when its threads touch consecutive addresses. A transpose cannot
#   have that on both sides while each program walks a row or a column.
# * A 2-D tile makes both sides coalesced. In Triton you write the load, ``tl.trans`` and the
#   store; the compiler stages the tile through shared memory, synchronizes, and swizzles the
#   addresses against bank conflicts. There is no shared memory or padding for you to write.
# * Give each program enough bytes (several KiB), order programs so that concurrent ones share
#   memory neighbourhoods, and drop masks when the shape allows it. Pick the tile shape and
#   warps by measuring on the GPU you target.
# * Tensor descriptors move a tile with one instruction and clip the edges in hardware, but
#   they need 16-byte aligned rows and, in a transpose, take the tile through shared memory
#   twice. On the GPU we measured they did not beat pointer tiles, so they stay opt-in: measure
#   a hardware feature before making it the default.
# * Narrow elements can travel in wider words: a transpose only moves bits, so two 16-bit values
#   can share a 32-bit word if the kernel trades halves between two rows first. It gained 1-2%
#   with fewer warps than step 4: judge a change by its time, not by its occupancy.
