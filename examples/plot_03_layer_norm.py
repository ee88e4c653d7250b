"""
Layer norm and RMS norm: forward and backward
=============================================

Normalization layers sit between almost every pair of layers of a transformer. Each one reduces
a row to a couple of statistics and rescales it: little arithmetic for a lot of bytes, so the
work is all in moving memory well. You will learn:

* how to map a row-wise reduction onto programs: one row per program, several short rows per
  program, and rows too long for registers streamed through tiles in two passes;
* why the number of warps has to grow with the row;
* how a backward pass that **sums over rows** (the gradients of ``weight`` and ``bias``) can
  avoid atomics: persistent programs that keep partial sums in registers, and a second small
  kernel that adds the partial sums up;
* how to compute a variance in one streaming pass without losing it to rounding.

To run this script yourself you need torch, triton and the ``tritonperf`` package
(``pip install -e .`` from a clone of the guide's repository). On a CUDA GPU it runs at
full size; anywhere else Triton's interpreter runs the kernels on the CPU at small sizes.
"""

# %%
# Where the kernels run
# ---------------------
# Importing :mod:`tritonperf` picks the mode: a visible CUDA GPU, or Triton's interpreter.

import torch

import tritonperf
from tritonperf import runtime
from tritonperf.bench import find_tables, live_or_recorded, plot_results
from tritonperf.bench.plotting import caption
from tritonperf.bench.report import summarize
from tritonperf.bench.targets import TARGETS, row_costs, streaming_cost
from tritonperf.kernels.norms import (
    BWD_CONFIGS,
    BWD_FLOAT32_CONFIGS,
    BWD_SPLIT,
    BWD_STAGED,
    BWD_WIDE,
    BWD_WIDE_N,
    FWD_CONFIGS,
    FWD_FLOAT32_CONFIGS,
    layer_norm_bwd,
    layer_norm_fwd,
    norm_config,
)
from tritonperf.ladders.norms import (
    STEP1_WARPS,
    layer_norm_bwd_atomic,
    layer_norm_fwd_row,
    layer_norm_fwd_row_scaled_warps,
    scaled_warps,
)
from tritonperf.testing import assert_close, poisoned, random_tensor, relative_error

print(runtime.describe())
DEVICE = runtime.default_device()

# %%
# What the hardware allows
# ------------------------
# For an input of ``M`` rows of ``N`` elements, layer norm computes, for each row:
#
# .. code-block:: text
#
#    μ   = (1/N) · Σ_j x_j
#    σ²  = (1/N) · Σ_j (x_j - μ)²
#    y_j = (x_j - μ) / √(σ² + ε) · w_j + b_j
#
# and RMS norm drops the mean and the bias:
#
# .. code-block:: text
#
#    y_j = x_j / √((1/N) · Σ_k x_k² + ε) · w_j
#
# The forward pass must read ``x`` and write ``y``; the backward pass must
# read ``x`` and ``dy`` and write ``dx`` (the weights and their gradients are ``N`` elements,
# next to nothing). A handful of floating-point operations per element against 4 to 6 bytes
# moved per element in half precision: both directions are bound by memory bandwidth, and the best
# possible time is that of a device copy of the same bytes. For one LLM-sized activation:

M, N = 16384, 4096
results = live_or_recorded("layer_norm", "rms_norm")
for direction in ("fwd", "bwd"):
    moved = tritonperf.layer_norm_bytes(M, N, torch.float16, direction)
    print(f"{direction}: {M} x {N} float16 moves {moved / 2**20:,.0f} MiB")
    for doc, live in results:
        copy = doc["ceilings"]["copy_GBps"]
        print(f"    {doc['provenance']['gpu']} ({'measured now' if live else 'recorded'}): copy ceiling "
              f"{copy:,.0f} GB/s, so at least {moved / (copy * 1e9) * 1e6:,.0f} µs")
if not results:
    print("No GPU here and no recorded results found next to this script: the plots below are skipped.")

# %%
# Step 1: one program per row
# ---------------------------
# The direct translation: program ``r`` loads row ``r`` whole into registers (``BLOCK_N`` is
# ``N`` rounded up to a power of two, with a mask for the rest), reduces it twice (mean, then
# variance of the centred values, both in float32), and writes the normalized row and its two
# statistics, which the backward pass will need. Four warps per program, whatever ``N``:
#
# .. literalinclude:: ../../src/tritonperf/ladders/norms.py
#    :pyobject: layer_norm_row_kernel
#
# Every version is checked against a float64 reference on an odd shape, with fresh random
# values and an output filled with NaN beforehand, so that an element the kernel forgets fails.

rows, cols = runtime.pick(gpu=(1823, 781), cpu=(67, 781))
x = random_tensor((rows, cols), torch.float16, DEVICE)
weight = 1 + 0.1 * random_tensor((cols,), torch.float32, DEVICE)
bias = 0.1 * random_tensor((cols,), torch.float32, DEVICE)
w16, b16 = weight.half(), bias.half()
reference = tritonperf.layer_norm_reference(x, w16, b16)

for step in (layer_norm_fwd_row, layer_norm_fwd_row_scaled_warps):
    y, mean, rstd = step(x, w16, b16)
    assert_close(y, reference, torch.float16)
    print(f"{step.__name__}: {rows} x {cols} float16 matches the float64 reference")

# %%
# Step 2: warps that grow with the row
# ------------------------------------
# With 4 warps, a program has 128 threads to share the row among. At ``N = 256`` that is two
# elements a thread; at ``N = 65536`` it is 512, far more than a thread has registers for, so
# the compiler spills them to local memory and the kernel reads and writes each one again.
# Step 2 runs the same kernel with ``BLOCK_N / 256`` warps (8 elements a thread, up to the
# limit of 32 warps):

print(f"{'N':>6} {'warps, step 1':>14} {'elements/thread':>16} {'warps, step 2':>14} {'elements/thread':>16}")
for n in (256, 1024, 4096, 16384, 65536):
    block = 1 << (n - 1).bit_length()  # BLOCK_N: n rounded up to a power of two
    print(f"{n:>6} {STEP1_WARPS:>14} {block // (32 * STEP1_WARPS):>16} {scaled_warps(block):>14} "
          f"{block // (32 * scaled_warps(block)):>16}")

# %%
# Short rows still fare badly with one row per program: a 256-element float16 row is 512 bytes,
# so a program (now one warp) has little in flight, and thousands of tiny programs each pay
# their own start-up and their own two cross-thread reductions.
#
# The final forward
# -----------------
# ``tritonperf``'s forward changes seven things:
#
# * **Several short rows per program.** The kernel works on ``[ROWS, BLOCK_N]`` tiles and
#   reduces along the rows of the tile. The table, by ``BLOCK_N``, was measured rather than
#   derived; its last column shows where the measurements settled: enough elements a thread for
#   16-byte loads, few enough not to spill. float32 rows have entries of their own at some
#   lengths (``FWD_FLOAT32_CONFIGS``, the last lines):

print("BLOCK_N up to  rows/tile  warps  elements/thread")
for block, rows_per_tile, warps in FWD_CONFIGS:
    print(f"{block:>13} {rows_per_tile:>10} {warps:>6} {block * rows_per_tile // (32 * warps):>16}")
for block, (rows_per_tile, warps) in FWD_FLOAT32_CONFIGS.items():
    print(f"{block:>13} {rows_per_tile:>10} {warps:>6} {block * rows_per_tile // (32 * warps):>16}  (float32)")

# %%
# * **One program per tile, and long rows as plain rows.** Every tile gets its own program, as
#   in step 1. A persistent grid, where each program walks tiles ``p, p + P, p + 2P, …``, is
#   still there for the ``programs`` knob, but measured slower for every row the registers hold,
#   and on the default grid the kernel is compiled without the loop. Where a tile is one row
#   (``ROWS = 1``, from ``BLOCK_N = 4096`` in the table), the kernel handles it as a 1-D row
#   without an eviction hint, because step 1 showed what that form is worth: on an H200 the
#   ``[1, BLOCK_N]`` tile, the hint and the loop each cost layer norm a few percent or more at
#   these lengths. float32 rows of 2049 to 16384 columns (and of 24577 to 32768), and RMS norm's
#   16-bit rows of 2049 to 8192, are the exception (``FWD_RELOAD``) where they stay in registers
#   at all (see the streamed rows below): they read the row again after each reduction instead
#   of holding it, which halves the registers a thread needs. The first reads ask L2 to
#   keep the row (``evict_last``), so the later ones come from cache. float32 rows take 16
#   warps, 32 from 8193 columns (layer norm at 4096 x 16384: 14% faster than holding the row in
#   8); 16-bit RMS rows a warp per 512 columns (``FWD_RELOAD_COLUMNS_PER_WARP``). Layer norm's
#   16-bit rows lost 1-20% that way and hold the row. These figures come from interleaved runs
#   on an H200 (triton 3.6, torch 2.11, 2026-11-22), as does the next one.
# * **The row's alignment told to the compiler**, as in the softmax lesson (``ALIGN``): without
#   it the H200 moved 1743 GB/s in the RMS norm forward of 16384 bfloat16 rows of 3000 columns,
#   with it 3934.
# * **Weight and bias loaded late.** They are read for each tile once the statistics are done,
#   as step 1 does, not once per program and kept: held across the loop they take registers for
#   all of it, and fewer programs fit on an SM. Every program reads the same ``N`` values, so
#   the extra reads come from cache.
# * **Long rows in two passes.** Above 16384 columns (32768 for float32, which reads its rows
#   again anyway) the table holds no rows, and the program streams each row through
#   8192-element tiles: a first pass gathers the statistics, a second pass re-reads the row, which
#   was just read and is mostly still in the L2 cache, and writes it. Rows the registers could
#   hold but that would leave a quarter or more of their power-of-two block masked (5120 columns
#   pad to 8192) are streamed too, through 2048- or 4096-element tiles (``FWD_STREAMED``), and
#   so are layer norm's 16-bit rows of 16384 columns, which fill their block: 1-6% faster than
#   held in every comparison of four interleaved runs on an H200 (triton 3.6, torch 2.11,
#   2026-11-23; ``FWD_STREAMED_FULL``).
# * **Tile loops of known length.** Each program takes one row, and the kernel is compiled for
#   the row's tile count (``TILES``, up to 16): both passes are unrolled, each thread sends
#   every tile's loads at once, and only the last tile is masked. ``torch.compile`` gets this
#   for free, because it compiles for one row length; with a loop of unknown length and a
#   persistent grid the same kernel ran at 0.75 of it (layer norm, float32, 16384 x 5120: 3149
#   against 4205 GB/s; H200, triton 3.6, torch 2.11, 2026-11-22). Unrolled, it ran at 0.98 of
#   it, and at 4096 x 65536 1.17 times as fast, in the recorded results of 2026-11-23 (made
#   before the change of shift described below).
# * **Long rows shared out among programs.** A program that walks rows of 65536 columns reads
#   the whole weight and bias again for every row, from L2: in float32, twice the bytes of the
#   row itself. Staged in shared memory one row to a program, float32 layer norm ran at 0.74 of
#   the copy ceiling at 4096 x 65536; passed the weight tensor as its bias too, so that the two
#   streams are one, at 0.87; without a bias at 0.90 (H200, triton 3.6, torch 2.11, 2026-11-24).
#   So on Hopper, rows of 32769 to 65536 columns are cut into chunks of 16384 columns, one for
#   each program of a group (``norm_fwd_split_kernel``, in Gluon). Each program keeps its
#   chunk's weights and biases in registers for the whole kernel, and the TMA copies its chunk
#   of each row into shared memory, several rows ahead. The statistics need the whole row, so
#   the programs of a group trade their sums through global memory, and each waits for the
#   others' before it writes ``y``. That trade was most of the cost. Done with two stores, then a
#   counter raised with release semantics, then a loop that waits on it, bfloat16 layer norm ran at
#   0.59 of the ceiling; the same kernel with its exchange cut down to the two stores and a relaxed
#   add to the counter, with no wait and no reads (wrong output, timing only), at 0.87. A release is
#   a fence: it waits until every earlier store of the program, all of ``y`` so far, has landed. The
#   kernel now packs its two sums for a row into one 8-byte word, publishes it with a relaxed atomic
#   exchange, and asks for the previous row's words before it starts on the current one; a word
#   still ``-1`` has not arrived. In float32 that is the fast path: 0.91-0.92 of the ceiling for
#   both norms in the recorded run behind the plots below, where the paths it replaced ran at
#   0.74-0.75 (layer norm, two passes over tiles) and 0.87-0.89 (RMS norm, whole rows staged by
#   one program) in earlier records and in the interleaved run of 2026-12-01. 16-bit rows gain
#   little or nothing. Two interleaved runs on the same GPU disagree on the order: on 2026-11-29
#   bfloat16 layer norm split ran at 0.81 against 0.76 for the tiles, RMS norm at 0.92 against
#   0.90 for one program a row; on 2026-12-01 at 0.75 against 0.75 and 0.885 against 0.90 (H200,
#   triton 3.6, torch 2.11, 4096 x 65536), which is where the record stands too. A 16-bit program
#   moves half the bytes per row that a float32 one does, so it waits on the exchange twice as
#   often per byte.
#
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: norm_fwd_kernel
#
# RMS norm is the same kernel compiled with ``RMS=True``: the constant removes the mean and the
# bias from the code, so each norm gets its own machine code with no run-time branch. The split
# forward of long rows, and the helpers that pack the sums, ask for them, wait for them and
# combine them:
#
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: norm_fwd_split_kernel
#
# .. literalinclude:: ../../src/tritonperf/kernels/_rows.py
#    :pyobject: pack_sums
#
# .. literalinclude:: ../../src/tritonperf/kernels/_rows.py
#    :pyobject: ask_for_shares
#
# .. literalinclude:: ../../src/tritonperf/kernels/_rows.py
#    :pyobject: wait_for_shares
#
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: _split_row_stats
#
# One pass for the variance
# -------------------------
# The tiled kernel's first pass must produce the mean and the variance from a single stream of
# tiles. The schoolbook formula ``σ² = mean(x²) - mean(x)²`` subtracts two large,
# nearly equal numbers when the mean is large against the spread, and float32 loses the
# variance in the rounding. Subtracting any constant ``s`` first gives the same variance in
# exact arithmetic, ``σ² = mean((x - s)²) - mean(x - s)²``, and with ``s``
# close to the mean there is nothing left to cancel. The kernel takes the mean of the row's
# first 32 values: one warp's worth, which the compiler sums with shuffles inside each warp. The
# mean of a whole first tile needed a barrier across the program's warps, and every warp waited
# there for that tile before it could ask for the next ones; removing it made the 16-bit rows
# the forward streams 1.5-10% faster and float32 ones about 1% (H200, triton 3.6, torch 2.11,
# 2026-11-23, two interleaved runs; the figures are in the comments above ``FWD_STREAMED`` in
# the package's source). On a row of 65536 values with mean 10000 and standard deviation 1, in
# float32:

row = 10000 + torch.randn(65536, dtype=torch.float64)
exact = row.var(unbiased=False).item()
r32 = row.float()
schoolbook = ((r32 * r32).mean() - r32.mean() ** 2).item()
shift = r32[:32].mean()
d = r32 - shift
shifted = ((d * d).mean() - d.mean() ** 2).item()
print(f"float64 variance {exact:.6f}; float32 schoolbook {schoolbook:.6f}; float32 shifted {shifted:.6f}")

# %%
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: norm_fwd_tiled_kernel
#
# The launcher validates everything before the launch, views any rank as ``(rows, N)`` (a row
# stride handles sliced inputs without a copy), and picks the kernel and its configuration
# with ``norm_config``:
#
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: layer_norm_fwd
#
# Checking the final forward: both norms, both paths (the tiled path forced here with a small
# ``block_n``), float32 parameters with a float16 input, a 3-D input, and a column slice.

out = poisoned((rows, cols), torch.float16, DEVICE)
layer_norm_fwd(x, w16, b16, out=out)
assert_close(out, reference, torch.float16)
y, *_ = layer_norm_fwd(x, w16, b16, block_n=256)
assert_close(y, reference, torch.float16)
y, *_ = layer_norm_fwd(x, weight, bias)
assert_close(y, tritonperf.layer_norm_reference(x, weight, bias), torch.float16)
x3 = random_tensor((3, 5, cols), torch.float32, DEVICE)
assert_close(tritonperf.layer_norm(x3, weight, bias), tritonperf.layer_norm_reference(x3, weight, bias))
wide = random_tensor((rows, 2 * cols), torch.float32, DEVICE)[:, :cols]
assert_close(tritonperf.rms_norm(wide, weight), tritonperf.rms_norm_reference(wide, weight))
assert_close(tritonperf.rms_norm(x, w16), tritonperf.rms_norm_reference(x, w16), torch.float16)
print("forward: layer norm and RMS norm match the float64 reference on every path")

# %%
# Bad input is stopped before launch with a message that says what is wrong:

try:
    tritonperf.layer_norm(x, w16[:-1], b16)
except ValueError as err:
    print("ValueError:", err)

# %%
# The backward pass
# -----------------
# With ``rstd = 1 / √(σ² + ε)``, ``xhat = (x - μ) · rstd`` and ``g = w · dy`` (products element
# by element), the gradients are:
#
# .. code-block:: text
#
#    dx = rstd · (g - xhat · mean(g · xhat) - mean(g))
#    dw = Σ_rows dy · xhat
#    db = Σ_rows dy
#
# where ``mean`` is taken over the row (RMS norm has no ``mean(g)`` term and no
# ``db``). ``dx`` is row-wise like the forward pass. ``dw`` and ``db`` are the opposite: column
# sums over *all* rows, so many programs must contribute to each element.
#
# Backward step 1: atomic additions
# ---------------------------------
# The simplest way: one program per row computes ``dx`` and adds its row of
# ``dy · xhat`` and of ``dy`` into two float32 vectors with ``tl.atomic_add``.
#
# .. literalinclude:: ../../src/tritonperf/ladders/norms.py
#    :pyobject: layer_norm_bwd_atomic_kernel
#
# It is correct, but all ``M`` programs add into the same ``2N`` addresses. Atomic additions are
# performed by the L2 cache, one at a time per address, so the ``M`` additions to each element
# form a queue: for 4096 rows, each of the ``2N`` sums takes 4096 additions in turn, and the
# programs' stores of ``dx`` wait behind them. (The official Triton tutorial replaces the atomics
# with a lock per group of rows; its programs then wait on the locks instead.)
#
# The final backward: partial sums, no waiting
# --------------------------------------------
# ``tritonperf`` launches a persistent grid of ``P`` programs, one per SM. Program ``p``
# owns a contiguous group of rows; it computes their ``dx`` and accumulates its share of
# ``dw`` and ``db`` in float32 **registers** across all of its rows, then writes it once, as row
# ``p`` of a ``[P, N]`` float32 buffer. No program ever waits for another. Each tile's column sums
# are taken before they are added, so the accumulators are one row long whatever the tile's
# height, and the loop over rows is pipelined three stages deep: while one tile is reduced, the
# loads of the next two are in flight.
#
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: norm_bwd_kernel
#
# A second, small kernel adds up the ``P`` partial rows, column block by column block, and
# writes ``dw`` and ``db`` in the weight's dtype:
#
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: sum_partials_kernel
#
# It is short, yet at 4096 x 1024 it took 2.2 of the 8 microseconds of an RMS norm backward (H200,
# triton 3.6, torch 2.11, 2026-11-24, bfloat16, torch profiler). It now takes narrow column
# blocks, from 256 down to 8 columns, until there are four programs per SM
# (``SUM_PROGRAMS_PER_SM``), and its loop is pipelined three stages deep: a call at 1024 columns,
# launch included, went from 4.0 to 2.8 microseconds in one interleaved run (H200, triton 3.6,
# torch 2.11, 2026-11-24).
#
# The partial rows cost ``P · N · 4`` bytes written and read again, a small fraction of the
# ``3 · M · N`` elements the pass must move. With the configuration of the device this page ran
# on (without a GPU, the interpreter's stand-in of four SMs: an H200's 132 SMs take more
# programs, and more partial rows):

for n in (1024, 4096, 8192):
    cfg = norm_config(M, n, "bwd", DEVICE)
    partial = 2 * 2 * cfg.programs * n * 4  # dw and db, written then read
    print(f"M={M}, N={n}: {cfg.programs} programs of {cfg.num_warps} warps, tiles of {cfg.rows} x {cfg.block_n}; "
          f"partial sums {partial / 2**20:.1f} MiB against {tritonperf.layer_norm_bytes(M, n, torch.float16, 'bwd') / 2**20:,.0f} MiB")

# %%
# The registers hold ``x``, ``dy``, the weight and both accumulators, so whole rows stay in
# registers comfortably up to 8192 columns (the backward's own table below). Rows of up to 16384
# columns are held too, one to a program (``BWD_WIDE``: 16 warps for 16-bit layer norm, 32
# and 8 for 16-bit and float32 RMS norm, which has no ``db`` to accumulate). They read each tile
# a second time, from cache, for ``dx`` rather than hold it across the row sums; they spill a
# little and still beat the path below, by 9-12% for 16-bit layer norm (H200, triton 3.6, torch
# 2.11, 2026-11-23, one interleaved run). 16-bit layer norm runs that loop in two stages: while
# one row is reduced, the next row's ``x`` and ``dy`` arrive in shared memory, which gained
# another 7-16% in two runs on the same GPU and day. float32 layer norm, whose rows are twice the bytes,
# gained 3% at most that way and takes the path below. Longer rows are cut into column tiles,
# and each program takes one column tile of a group of rows. ``dx`` needs two sums over the
# whole row, which no such program sees, so it takes two kernels. The first writes each
# tile's share of the two row sums (a few bytes per tile and row) and, since ``xhat`` only needs
# the forward's statistics, the partial rows of ``dw`` and ``db``. The second adds up the shares
# and writes ``dx``. Rows of 16384 columns and more cannot stay in L2 between the two, so ``x``
# and ``dy`` are read twice: five bytes moved for every three the pass must move, which caps this
# path near 3/5 of the copy ceiling.
#
# On Hopper, rows of about 8192 to 16384 columns take a third path (``BWD_STAGED``). The copy
# engine (TMA) brings a whole row of ``x`` and one of ``dy`` into shared memory, two rows ahead
# of the one being worked on (three for float32 rows of 8192, one for RMS norm's of 16384),
# and the program reads them from there twice: once for the row sums, once for ``dx``. Memory
# sees each row once, and the registers hold only the weight sums. Plain Triton decides by
# itself what goes to shared memory, so this kernel is written in Gluon, Triton's lower-level
# dialect, where the program allocates shared memory, starts the copies and waits on them:
#
# .. literalinclude:: ../../src/tritonperf/kernels/norms.py
#    :pyobject: norm_bwd_staged_kernel
#
# On an H200 (triton 3.6, torch 2.11, 2026-11-29, one interleaved run against the paths above),
# layer norm at 4096 x 16384 went from 2815 to 3197 GB/s in bfloat16 and from 2366 to 3528 in
# float32; RMS norm gained 6-8%. Shorter 16-bit rows lose (bfloat16 4096 x 8192: 2767 against
# 3423 in an earlier run): a single program per SM waits on each row's exchanges across warps,
# where the register path runs several programs that cover for one another. 16-bit layer norm
# still stops near 0.75 of the copy ceiling, and Nsight Compute shows the DRAM busy 59% of the
# time (RMS norm: 71%). In 8 warps its two accumulators alone take 128 registers a thread, yet
# freeing them did not help: with the ``db`` sums in shared memory instead, read and written
# back for every row, it ran 11-14% slower.
#
# Rows longer than a program's shared memory take the same kernel with ``SPLIT`` programs to a
# row (``BWD_SPLIT``): each program stages its own chunk of the row and takes its share of the
# two sums, and the programs of a row trade their shares as the split forward does, one 8-byte
# word each. A program waits for the other shares only after its first pass over the next row,
# so that the wait overlaps work. The launch is cooperative: CUDA starts it only if every
# program runs at once, or no program could wait for one that never starts. The exchange
# matters here as much as in the forward. With the release counter the backward ran at 0.72-0.80
# of the copy ceiling in layer norm and 0.77-0.83 in RMS norm at 4096 x 65536; with the packed
# words, at 0.88 (bfloat16), 0.90 (float16) and 0.96 (float32) in layer norm and 0.97 in RMS
# norm, against 0.58-0.60 for the tiled path (H200, triton 3.6, torch 2.11, 2026-12-01, one
# interleaved run of the three). Float32 layer norm splits its rows from 8193 columns on: at
# 4096 x 16384, two programs a row ran at 0.90 of the copy ceiling against 0.82 for one program
# a row, which has room for only one such row in flight. Everywhere else it was tried in the same
# run (2026-12-02), the split tied (float32 RMS norm at 16384) or lost, by up to 78% (rows of 5120
# in chunks of 1024).
#
# A row of 5120 columns sits in a tile of 8192 with 3072 lanes masked. Held as a tile of 4096 and
# one of 1024, as the softmax forward holds it (see its lesson), bfloat16 layer norm's backward
# lost its 208-byte register spill and still ran slower: 0.64 of the ceiling against 0.75 at
# 16384 x 5120 (H200, triton 3.6, torch 2.11, 2026-11-24, one interleaved run). It keeps one tile.
#
# float32 rows of 512 to 4096 columns take tiles of half as many rows (``BWD_FLOAT32_CONFIGS``,
# the last lines), so a tile holds as many bytes as the 16-bit one. In interleaved runs on an H200
# (triton 3.6, torch 2.11, 2026-11-28) that was 0-14% faster from 512 to 2048 columns and 2-6% at
# 4096, where two runs agreed.

print("BLOCK_N up to  rows/tile  warps  stages (float16)")
for block, rows_per_tile, warps in BWD_CONFIGS + ((BWD_WIDE_N, 1, BWD_WIDE[(False, 2)][0]),):
    stages = norm_config(M, block, "bwd", DEVICE, allow_staged=False).num_stages
    print(f"{block:>13} {rows_per_tile:>10} {warps:>6} {stages:>7}")
for block, (rows_per_tile, warps) in BWD_FLOAT32_CONFIGS.items():
    stages = norm_config(M, block, "bwd", DEVICE, itemsize=4).num_stages
    print(f"{block:>13} {rows_per_tile:>10} {warps:>6} {stages:>7}  (float32)")
print("\nstaged on Hopper: columns, warps, rows in flight")
for (rms, itemsize), (fewest, most, warps, ring) in BWD_STAGED.items():
    kind = "16-bit" if itemsize == 2 else "float32"
    print(f"{'RMS norm' if rms else 'layer norm':>10}, {kind} rows: {fewest}-{most}, {warps}, up to {ring}")
    longest, part, warps, ring = BWD_SPLIT[(rms, itemsize)]
    print(f"{'':>10}  longer, up to {longest}: chunks of {part} columns, {warps}, up to {ring}")

# %%
# Checking the gradients against float64 autograd through the reference: ``dx`` against the
# table's float16 limit; ``dw`` and ``db``, which sum ``M`` rows, as a relative error (their
# largest elements grow with ``M``).

dy = random_tensor((rows, cols), torch.float16, DEVICE)
leaves = [t.double().requires_grad_() for t in (x, w16, b16)]
ref_grads = torch.autograd.grad(tritonperf.layer_norm_reference(*leaves), leaves, dy.double())
_, mean, rstd = layer_norm_fwd(x, w16, b16)
tiled = {"block_n": 256}
for name, fn in [("step 1 (atomics)", lambda: layer_norm_bwd_atomic(dy, x, w16, mean, rstd)),
                 ("tritonperf", lambda: layer_norm_bwd(dy, x, w16, b16, mean, rstd)),
                 ("tritonperf, tiled path", lambda: layer_norm_bwd(dy, x, w16, b16, mean, rstd, **tiled))]:
    dx, dw, db = fn()
    assert_close(dx, ref_grads[0], torch.float16)
    errors = [relative_error(g, r) for g, r in zip((dw, db), ref_grads[1:], strict=True)]
    assert max(errors) < 2e-3
    print(f"{name}: dx matches; dweight, dbias relative errors {errors[0]:.1e}, {errors[1]:.1e}")

# %%
# Through autograd, both norms are one ``torch.autograd.Function`` each:

xg = x.float().requires_grad_()
wg = weight.clone().requires_grad_()
tritonperf.rms_norm(xg, wg).backward(dy.float())
leaves = [t.detach().double().requires_grad_() for t in (xg, wg)]
ref_grads = torch.autograd.grad(tritonperf.rms_norm_reference(*leaves), leaves, dy.double())
assert_close(xg.grad, ref_grads[0], torch.float32)
print(f"rms_norm through autograd: dx matches, dweight relative error {relative_error(wg.grad, ref_grads[1]):.1e}")

# %%
# Measuring
# ---------
# Variants, all measured in one run: ``tritonperf``; ``torch`` (``F.layer_norm``,
# ``F.rms_norm``); ``torch.compile`` of the same call, compiled once per shape; and the steps
# above. The backward is timed alone: ``tritonperf`` and step 1 are called with the forward's
# saved statistics, torch's variants differentiate a graph built beforehand. GB/s count the
# minimal bytes of each direction; the dashed line is the copy ceiling of the same run. Without
# a GPU, every recorded run is shown, each captioned with its date and commit: a run older than
# a change to the kernels shows them as they were then (the prose quotes the H200's).

for doc, live in results:
    gpu = doc["provenance"]["gpu"]
    for kernel, direction, dtype in [("layer_norm", "fwd", "float16"), ("layer_norm", "fwd", "float32"),
                                     ("layer_norm", "bwd", "float16"), ("layer_norm", "bwd", "bfloat16"),
                                     ("rms_norm", "fwd", "bfloat16"), ("rms_norm", "bwd", "bfloat16")]:
        plot_results(doc, kernel, dtype, live=live, direction=direction, title=f"{kernel} {direction}, {dtype}, {gpu}")

# %%
# What each step bought
# ---------------------
# In float16 at four sizes, as a share of the copy ceiling and against the fastest torch variant
# of the same run (above 1.00 means faster than it): every layer-norm variant, and ``tritonperf``'s
# RMS norm.

SHOWN = [(4096, 1024), (4096, 4096), (4096, 65536), (16384, 8192)]
for doc, live in results:
    print(caption(doc, live))
    rows_shown = [
        r for r in summarize(doc)
        if (r["kernel"] == "layer_norm" or (r["kernel"] == "rms_norm" and r["variant"] == "tritonperf"))
        and r["dtype"] == "float16" and (r["shape"]["M"], r["shape"]["N"]) in SHOWN
    ]
    rows_shown.sort(key=lambda r: (r["kernel"], r["direction"], SHOWN.index((r["shape"]["M"], r["shape"]["N"])), r["variant"]))
    for r in rows_shown:
        print(f"  {r['kernel']:10} {r['direction']} M={r['shape']['M']:<5} N={r['shape']['N']:<5} {r['variant']:24} "
              f"{r['GBps']:7,.0f} GB/s {r['pct_of_ceiling']:5.1f}% of copy  {r['vs_best_torch']:.2f}x best torch")

# %%
# Against ``torch.compile``
# -------------------------
# ``torch.compile`` turns the ``F.layer_norm`` call into one Triton kernel of its own. For rows of
# 4096 columns or more it has the shape of our tiled path: one row a program, a loop over
# column tiles that reads ``x`` for the statistics and asks L2 to keep it (``evict_last``), then
# a second loop that reads it again (``evict_first``) and writes ``y``. Inductor compiles it for
# the one row length it was given, so both loops have a known length, and its autotuner picks
# the tile width and the warps on the GPU it runs on, where our tables were tuned on an H200
# (with a few entries of the H100's own). ``tools/record_versus_compile.py`` (``nox -s versus_compile`` on a GPU) times, one case
# at a time in one interleaved run, our default configuration, a fixed list of other
# configurations and ``torch.compile``, and reads which kernel Inductor's autotuner kept. The
# recorded tables, as written:

versus_tables = find_tables("versus_compile")
for path in versus_tables:
    print(path.read_text())
if not versus_tables:
    print("No recording found (docs/results/versus_compile/<gpu>.md).")

# %%
# In the H100 table (2026-12-07, triton 3.6.0, torch 2.11), for the 36 cases of 4096 columns or
# more:
#
# * Where ``torch.compile`` is slow, we are well ahead. In the 8 cases where it stays at or below
#   0.88 of the copy ceiling (layer norm's 16-bit rows of 4096 and 5120 columns, RMS norm's 16-bit
#   4096 × 4096), our default is 1.03 to 1.32 times as fast.
# * Where it is fast, there is almost nothing left above it. In each of the 36 cases the fastest
#   configuration tried lands within half a percent of it or ahead (0.995 at worst), and where our
#   default trails it (12 cases, where it runs at 0.91 to 1.004 of the ceiling), it trails by 1.0%
#   at most (layer norm, float32, 16384 × 4096, 0.990).
#
# The configuration that wins is not the same on every GPU, and our tables were set on an H200.
# At float16 16384 × 8192 the H200 runs behind the table kept whole rows in 8 warps, because
# tiles of 2048 columns lost 12-13% there (see ``FWD_STREAMED`` in ``norms.py``); on this H100,
# tiles of 4096 columns in 16 warps were 1.9% faster than that in the table's first recording
# (2026-12-05). The H100 now takes its own configuration for the lengths where it was measured
# to gain (``FWD_BY_GPU``, keyed by the GPU's name). In that first recording our default trailed
# ``torch.compile`` in 22 of the 36 cases, by up to 2.3% (layer norm, float16, 4096 × 16384,
# 0.977; 0.999 now). Two cases pay for it. Bfloat16 4096 × 8192 runs 1.5% slower than with the
# row held, where float16 of the same shape gains; the choice goes by element size, which the two
# types share. Float32 rows of 4096 columns gained 1.1-1.5% at 4096 rows in the two runs before
# the change, and lose 0.5% at 16384 rows.
# Inductor avoids the question by timing its candidates on the GPU at hand.
#
# Rows of 1024 columns or fewer are short work for a program, and their timings scatter more:
# at float32 4096 × 1024 (layer norm) the fastest configuration is the default itself, timed a
# second time, and 1.4% faster than the first time. Read the "best" column as an upper bound on
# what a better table would buy, not as a promise.

# %%
# What 4096 rows cost
# -------------------
# The backward's share of the ceiling grows with the rows: 16384 rows come much closer to it
# than 4096 rows of the same length. The run recorded lengths of 4096 and 8192 columns at both
# row counts, so a line through the two times splits a call into a fixed cost, paid whatever
# the rows, and a cost per row (the results page does this for every such case). Then: how
# much fixed cost the backward's target would allow at 4096 rows, given that rate per row.

BWD_TARGET = next(t.minimum for t in TARGETS if (t.kernel, t.direction, t.against) == ("layer_norm", "bwd", None))
for doc, live in results:
    costs = [c for c in row_costs(doc) if (c["kernel"], c["direction"]) == ("layer_norm", "bwd")]
    print(caption(doc, live))
    if streaming := streaming_cost(doc):
        print(f"  torch's vector add: {streaming[0]:.1f} µs a call, then {streaming[1]:.0%} of the ceiling")
    if not costs:
        print("  no backward case at two row counts in this run")
    for c in costs:
        us, share = c["us"][0], c["shares"][0]
        allowed = us * share / BWD_TARGET - (us - c["fixed_us"])  # the call's time at the target, less its rows' time
        print(f"  {c['dtype']:8} N={c['N']:<5} {c['rows'][0]} rows {share:4.0%} of the ceiling, "
              f"{c['rows'][-1]} rows {c['shares'][-1]:4.0%}: fixed {c['fixed_us']:4.1f} µs, per row "
              f"{c['row_share']:4.0%}; {BWD_TARGET:.2f} at {c['rows'][0]} rows allows {allowed:4.1f} µs fixed")

# %%
# In the recorded H200 run (commit c361eee, triton 3.6.0, torch 2.11, 2026-12-02) the loop over
# rows runs at 93-97% of the ceiling, and the calls lose their share to a fixed 6-10 µs (13 µs
# for float32 rows of 8192); the vector add pays 2.8 µs. Five row counts from 2048 to 32768 in
# bfloat16 confirmed the line and took it apart (H200, triton 3.6, torch 2.11, 2026-11-29, one
# interleaved run; no point lay more than 6% off its line):
#
# * 4096 columns: 7.0 µs a call, of which the kernel that adds up the partial weight gradients
#   takes 2.1. Without weight gradients at all the call still pays 4.9 µs: launching, filling
#   and draining.
# * 8192 columns: 9.5 µs; the sum kernel 2.8, writing the partial rows 2.6 (the partial
#   buffers grow with ``N``: one float32 row per program, for each gradient).
# * 16384 columns, staged: 26.9 µs; the sum kernel 5.0, the staged kernel's weight sums 12.8,
#   9.1 without them.
#
# In that record, at 4096 × 4096 in 16-bit, the target leaves 2.4-2.5 µs of fixed cost: less
# than the vector add pays, and half what this backward pays with no weight gradient at all.
# At 8192 columns it leaves 5.9 µs against 8.6-9.7: there the weight-gradient sums are the
# part to win back. Fewer partial rows would not be enough. A timing experiment let only one
# program in 16 write its partial row (the gradients it gives are wrong): bfloat16 4096 × 8192
# rose from 0.811 to 0.846 of the ceiling, and to 0.893 with no weight gradients at all (H200,
# triton 3.6, torch 2.11, 2026-11-29, one interleaved run). Rows of 5120 columns are a different
# case: they lose their rate per row to the 3072 masked lanes of their 8192-wide tile.

# %%
# Reading the numbers:
#
# * **Step 1 → step 2**: more warps for long rows is what keeps step 1 from spilling registers
#   at 65536 columns (step 1 spills so much there that the benchmark leaves it out). Below
#   that, read the plots rather than the rule: in the recorded H200 run, step 1's four warps
#   are *faster* than step 2 for 16-bit rows of 4096 to 16384 columns. Warps are not the whole
#   story: the final forward holds rows of 4096 and 8192 columns 1-D, one per program, in 8
#   warps, and streams rows of 5120 and 16384 columns through tiles of 2048. In the recorded run
#   it is as fast as step 1 or faster at each of these lengths: level (within 1%) at 16384 rows
#   of 8192, 1.2 times as fast at 4096 rows of 16384.
# * **Step 2 → tritonperf (forward)**: grouping short rows into one tile matters below about
#   2048 columns, where one row is too little work for a program; the two-pass path carries the
#   speed to rows too long for registers, and on Hopper the split path to rows of 65536.
# * **Backward step 1 → tritonperf**: the atomics' queue is most of the difference. The
#   partial-sum scheme adds one small kernel and ``P · N`` float32 elements of traffic, and no
#   waiting; pipelining the loop over rows gives the rest. On Hopper, rows of about 8192 to
#   65536 columns are staged in shared memory and read from memory once. Elsewhere, and past
#   65536 columns, rows too long for the registers take the two-kernel path, which reads ``x``
#   and ``dy`` twice and stays near 3/5 of the ceiling.
#
# Takeaways
# ---------
# * A row-wise reduction is one row per program only when rows are long enough: group short rows
#   into 2-D tiles, and give long rows more warps, or tiles and two passes when they outgrow the
#   registers.
# * Keep statistics in float32 whatever the storage type, and shift before you square when the
#   variance comes from running sums.
# * A reduction across programs does not need atomics or locks: let each program own a partial
#   result for a contiguous share of the work, then reduce the partials in a second, small kernel.
