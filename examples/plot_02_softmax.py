"""
Fused softmax: one pass over memory
===================================

The second lesson. Softmax turns each row of scores into probabilities; attention and every
classifier head compute it. It does a few operations per element, so, as for vector addition,
its speed is set by the bytes it moves. You will learn:

* how to count those bytes, and why an unfused softmax moves twice as many as it must;
* how **fusion** keeps a row in registers so that it crosses the memory bus once;
* how to size a program to its row: several short rows per program, more warps for long rows,
  and what happens when a row no longer fits in registers;
* the **online softmax**, which streams rows of any length with a running maximum and sum;
* how a row too long for registers but short enough for shared memory can still cross the memory
  bus once, copied there by Hopper's TMA (a Gluon kernel);
* the backward pass, its byte count and its check.

To run this script yourself you need torch, triton and the ``tritonperf`` package
(``pip install -e .`` from a clone of the guide's repository). On a CUDA GPU it runs at
full size; anywhere else Triton's interpreter runs the kernels on the CPU at small sizes.
"""

# %%
# Where the kernels run
# ---------------------
# Importing :mod:`tritonperf` picks the mode: a visible CUDA GPU, or Triton's interpreter.

import torch

from tritonperf import runtime
from tritonperf.bench import live_or_recorded, plot_results
from tritonperf.bench.plotting import caption
from tritonperf.bench.report import summarize
from tritonperf.kernels.softmax import (
    MAX_FUSED_N,
    softmax,
    softmax_backward,
    softmax_backward_reference,
    softmax_bytes,
    softmax_plan,
    softmax_reference,
)
from tritonperf.ladders.softmax import softmax_fused_row, softmax_unfused
from tritonperf.testing import assert_close, poisoned, random_tensor, relative_error

print(runtime.describe())
DEVICE = runtime.default_device()

# %%
# What the hardware allows
# ------------------------
# For a row ``x`` of ``N`` scores:
#
# .. code-block:: text
#
#    m   = max_k x_k
#    y_j = exp(x_j - m) / Σ_k exp(x_k - m)
#
# Subtracting the row maximum ``m`` does not change the result (it cancels between the
# numerator and the denominator) but keeps every exponential at most 1: without it,
# ``exp(12.0)`` already overflows float16, and ``exp(89.0)`` float32.
#
# A kernel must read ``x`` once and write ``y`` once: ``2 * M * N * itemsize`` bytes for ``M``
# rows, against a few operations per element. So the best possible time is that of a device copy
# of the same bytes. Written the way an eager framework runs it, one operation after another,
# softmax reads the input three times: once for the maximum, once for the sum of
# exponentials, once to normalize. Our first step does exactly that:

M, N = 4096, 4096
itemsize = torch.empty((), dtype=torch.float16).element_size()
minimal = softmax_bytes(M, N, torch.float16)
unfused = 3 * M * N * itemsize + M * N * itemsize + 5 * 4 * M  # x read 3 times, y written; per row, 2 floats written, 3 read
online = 3 * M * N * itemsize  # long rows: x read twice, y written (the second read often hits L2)
for name, moved in [("fused (minimum)", minimal), ("three passes (step 1)", unfused), ("online, if L2 misses", online)]:
    print(f"{name:24} {moved / 2**20:7,.0f} MiB = {moved / minimal:.2f} x the minimum")

results = live_or_recorded("softmax")
for doc, live in results:
    copy = doc["ceilings"]["copy_GBps"]
    print(f"{doc['provenance']['gpu']} ({'measured now' if live else 'recorded'}): copy ceiling {copy:,.0f} GB/s, "
          f"so {M} x {N} float16 takes at least {minimal / (copy * 1e9) * 1e6:,.0f} µs")
if not results:
    print("No GPU here and no recorded results found next to this script: the plots below are skipped.")

# %%
# Step 1: three kernels, three reads
# ----------------------------------
# The unfused version: one kernel finds each row's maximum, a second sums the exponentials,
# a third writes the result. Each is simple, one program per row walking it in blocks of 1024
# columns, and each reads the whole row from memory again; only two floats per row pass from one
# kernel to the next.
#
# .. literalinclude:: ../../src/tritonperf/ladders/softmax.py
#    :pyobject: row_max_kernel
#
# .. literalinclude:: ../../src/tritonperf/ladders/softmax.py
#    :pyobject: row_exp_sum_kernel
#
# .. literalinclude:: ../../src/tritonperf/ladders/softmax.py
#    :pyobject: normalize_kernel
#
# Every check in this lesson compares against :func:`~tritonperf.softmax_reference`
# computed in float64, on fresh random data whose shape is not a multiple of any block:

shape = runtime.pick(gpu=(4096, 5120 + 3), cpu=(37, 781))
x = random_tensor(shape, torch.float16, DEVICE)
reference = softmax_reference(x.double())
assert_close(softmax_unfused(x), reference, torch.float16)
print(f"step 1 on {shape[0]} x {shape[1]} float16: matches the float64 reference")

# %%
# Step 2: one kernel, the row in registers
# ----------------------------------------
# Fusing the three passes means loading a row once and keeping it on the chip while the maximum,
# the exponentials and the sum are computed. With one program per row and a block as wide as the
# row (the next power of two, the rest masked with ``-inf``, whose exponential is 0), the row lives
# in the registers of the program's threads:
#
# .. literalinclude:: ../../src/tritonperf/ladders/softmax.py
#    :pyobject: softmax_row_kernel
#
# The bytes moved drop to the minimum. The catch is the register file: 4 warps are 128 threads,
# so each thread holds ``N / 128`` values of the row, in float32. A thread can address at most
# 255 registers, and it needs some for addresses and temporaries too. Past that the compiler
# *spills* the row to local memory, which lives in the same DRAM the kernel was trying not to
# touch twice:

for n in (1024, 4096, 16384, 32768, 65536):
    per_thread = n // 128
    print(f"N = {n:6}: {per_thread:4} float32 values per thread" + ("  (more than 255 registers: spills)" if per_thread > 255 else ""))

assert_close(softmax_fused_row(x), reference, torch.float16)
print("step 2 matches the reference")

# %%
# The final kernel: sized to the row
# ----------------------------------
# :func:`tritonperf.softmax` keeps step 2's idea and fixes its sizing, chosen
# from the shape by :func:`~tritonperf.softmax_plan` with plain rules (no
# autotuning, so no tuning cost at run time):
#
# * **more warps for longer rows**: a warp for every 512 values of the row, so that each thread
#   holds 16 or a few more whatever ``N`` is (up to 32 warps, 1024 threads, for the longest rows
#   held in registers). The count is taken on the real row, rounded down: a row of 5120 columns
#   gets 8 warps, not the 16 of a block of 8192, and on an H200 that was 9% faster in float16
#   (triton 3.6, torch 2.11, 2026-11-22);
# * **a row in two blocks** when its length is not a power of two: Triton's blocks are powers of
#   two, and a row of 5120 in one block of 8192 leaves 3072 lanes masked, which move no bytes but
#   take every instruction and register the real ones do. The forward holds it as a block of
#   4096 and a tail of 1024 (``head_and_tail`` in ``_rows``), where the two are smaller than one block;
#   compiled for sm_90 (triton 3.6, float16), 40 registers a thread and 394 SASS lines instead of
#   48 and 482;
# * **several rows per program when rows are short**: a 256-column row is 512 bytes of float16,
#   too little for a program to keep the memory system busy, so short rows are packed into
#   2-D blocks of about ``FUSED_ELEMENTS`` elements, with a warp per row where each thread still
#   gets 8 values (one 16-byte load of float16), and loads marked ``evict_first`` (each byte is
#   read once, so it need not stay in L2);
# * rows of a program each are held as 1-D vectors, without the hint: in an H200 comparison the
#   2-D ``[1, BLOCK_N]`` form and the hint both made long rows slower; ``FUSED_ROWS`` packs two
#   rows of 513 to 1024 columns a program, which measured 1-4% faster than one (H200, triton
#   3.6, torch 2.11, 2026-11-22, as for the two items below);
# * **rows read again rather than held** where that measured faster (``RELOAD_BLOCKS``): a
#   float32 row of 2049 to 32768 columns is loaded once for the maximum, again for the sum and a
#   third time for the output. The first loads ask L2 to keep the row (``evict_last``), so the
#   later ones come from cache, and a thread holds the row only between two loads. On the H200
#   that gained 2-4% at 4096 to 16384 columns; 16-bit rows lost 4-13% the same way;
# * **the row's alignment told to the compiler**: Triton loads 16 bytes at a time only where it
#   can prove that whole 16-byte groups of the row are in or out of the mask. Its own
#   specialization of integer arguments notices multiples of 16 and nothing finer, so a row of
#   3000 float16 values, which starts on a 16-byte boundary, was read 2 bytes at a time: 2500
#   GB/s on the H200, against 3353 once the launcher passes the row's alignment (``ALIGN``, here
#   8) and the kernel rewrites ``n_cols`` and the strides in a form that shows it;
# * a launch loop that lets the same kernel run on a **persistent grid** (fewer programs than
#   row blocks, each looping). By default there is one program per block, and the kernel is
#   compiled without the loop (``ONE_BLOCK``), for packed rows as for single ones. The exception
#   is the forward of 16-bit rows of 32768 columns (``PREFETCH_BLOCKS``): there a row fills all
#   1024 threads' registers, so one program runs per SM and nothing overlaps its reductions with
#   loads. On a grid of one program per SM with ``num_stages=3``, Triton's software pipeliner
#   copies the next two rows into shared memory (``cp.async``, 128 KB) while the current one is
#   reduced. On an H200 that was 21% faster in float16 and 13% in bfloat16 (4096 rows, triton
#   3.6, torch 2.11, 2026-11-23, one interleaved run);
# * row offsets in 64-bit integers, so tensors of more than 2\ :sup:`31` elements work.
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: softmax_fwd_kernel
#
# The configurations it picks for 4096 rows of float16 on the device this page ran on. Without
# a GPU that is the interpreter's stand-in of four SMs, which takes no Hopper path: there the
# grids are small and rows of 65536 columns stream, where an H200 stages them (below). Rows of
# up to ``MAX_FUSED_N`` columns are held in registers: at that length each of 1024 threads holds
# 32 float32 values.

print(f"{runtime.sm_count(DEVICE)} SMs; MAX_FUSED_N = {MAX_FUSED_N}")
for n in (256, 1024, 4096, 5120, 16384, 32768, 65536, 1 << 20):
    plan = softmax_plan(4096, n, torch.float16, "fwd", DEVICE)
    block = f"{plan.block_n} + {plan.tail_n}" if plan.tail_n else f"{plan.block_n}"
    print(f"N = {n:7}: path {plan.path:6}  block {block:>11}  rows/program {plan.rows_per_program:2}  "
          f"warps {plan.num_warps:2}  stages {plan.num_stages}  programs {plan.grid}")

y = poisoned(shape, torch.float16, DEVICE)
softmax(x, y)
assert_close(y, reference, torch.float16)
torch_error = relative_error(torch.softmax(x, dim=-1), reference)
print(f"tritonperf.softmax: relative error {relative_error(y, reference):.2e}, torch's own in float16 {torch_error:.2e}")

# %%
# Rows longer than the registers: online softmax
# -----------------------------------------------
# Above those lengths (printed above) a row no longer fits in registers, and rows of
# a million scores exist (long-context attention, large vocabularies). Reading such a row three
# times, as step 1 does, would work but costs bytes. The **online** softmax needs only two passes:
# the first keeps a *running* maximum ``m`` and a running sum ``s`` of ``exp(x - m)``. When a
# new value raises the maximum from ``m`` to ``m'``, the sum so far is rescaled by
# ``exp(m - m')``, so it is always relative to the current maximum:
#
# .. code-block:: text
#
#    m' = max(m, x)
#    s' = s · exp(m - m') + exp(x - m')
#
# After one pass both are exact, and the second pass writes ``exp(x - m) / s``. The rule, in
# plain torch on a row cut into tiles:

row = random_tensor((10_000,), torch.float32, "cpu").double() * 3
m, s = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64)
for tile in row.split(1024):
    m_new = torch.maximum(m, tile.max())
    s = s * torch.exp(m - m_new) + torch.exp(tile - m_new).sum()
    m = m_new
print(f"running max {m.item():.6f}, running sum {s.item():.6f}")
print(f"direct  max {row.max().item():.6f}, direct  sum {torch.exp(row - row.max()).sum().item():.6f}")

# %%
# The kernel does the same per tile: the tile's maximum first (a reduction across the
# program's threads), then one exponential per element. Each lane keeps its own partial sum,
# added up across lanes once, at the end. The first version kept a maximum per lane instead,
# which needs no reduction in the loop but two exponentials per element (the new value's and the
# rescaling's); exponentials run on the SMs' special-function units, and at float16 rates that
# made it 11% slower (H200, 4096 rows of 65536, triton 3.6, torch 2.11, 2026-11-23). While only
# ``-inf`` has been seen the sum stays 0 rather than becoming the NaN of ``-inf - (-inf)``:
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: _online_stats
#
# The second pass walks the row from its last tile to its first. The first pass has just read
# the row, so part of it is still in L2; the tiles read last are the likeliest to be there:
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: _write_probs
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: softmax_fwd_online_kernel
#
# One program per row keeps the two passes of a row close in time. How much of the row is still
# in L2 depends on how many rows are in flight: with 4096 rows of 65536 float16 values, ncu
# counted 1.03 times the input read from memory with one program per SM and 1.51 times with two
# (same H200, versions and day). Two were still 20% faster in the forward (more loads in
# flight), so that is the default there
# (``ONLINE_PROGRAMS_PER_SM``); the backward, whose rows are twice the bytes, keeps one.
#
# A few long rows would leave most SMs idle. When there are fewer rows than SMs, rows are cut
# into chunks instead: a first kernel writes the (maximum, sum) pair of every chunk, and a second
# combines a row's pairs, by the same rule, before writing its chunk
# (``softmax_fwd_partial_kernel`` and ``softmax_fwd_split_kernel``):
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: _combine
#
# On Hopper, rows of 32769 to 65536 columns (a multiple of 256) take a third route. A 16-bit
# row of 65536 is 128 KB:
# too much for registers, but it fits in the 227 KB of shared memory a program may use. Plain
# Triton decides on its own what goes to shared memory, so this kernel is written in Gluon,
# Triton's lower-level dialect, where the program allocates it. The TMA copies each row into a
# ring of chunks (32 KB each, one barrier each); both passes read the chunks from there, and as
# soon as every warp has read a chunk in the second pass, the copy of the next row's chunk into
# it starts. Memory sees each row once, and the next row is on its way while this one is
# written. On an H200 (triton 3.6, torch 2.11, 2026-11-24, bfloat16, 4096 rows of 65536) it ran
# at 0.88 of the copy ceiling against the online path's 0.65 in the same run; on an H100, at 0.91
# against 0.71. Its chunk size mattered most: each chunk costs a barrier wait and a maximum across
# the program's warps, and chunks of 4096 elements ran at 0.66 on the H200 (the comment above
# ``STAGED_MAX_N`` in the source has the measurements).
#
# A float32 row of 65536 is 256 KB, more than shared memory holds. Seven of its eight chunks go
# there; the eighth is loaded straight into registers (16 values a thread), one row ahead, and
# kept there for both passes. Memory still sees the row once: on the H200, the same day, 0.91 of
# the ceiling against the online path's 0.73.
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: softmax_fwd_staged_kernel
#
# The ring's helpers are shared with the norms' staged forward. Handing a chunk over takes a
# barrier across the program's warps (all of them have read it) and a fence (their reads are
# ordered before the copy engine's write):
#
# .. literalinclude:: ../../src/tritonperf/kernels/_rows.py
#    :pyobject: release_chunk
#
# Would the same ring help shorter rows, which stay in registers one row a program? We tried
# it: a ring of 2 to 8 whole rows a program, copied that many rows ahead, with 1, 2 or 4
# programs an SM. It never won. On the H200 (same versions, 2026-11-24, float16) the best
# variant reached 0.79 of the ceiling at 4096 rows of 4096 against the fused kernel's 0.86, and
# 0.89 at 16384 rows of 4096 against 0.96; at 16384 columns the two tied (0.91 and 0.90). The
# depth of the ring hardly mattered, the number of programs an SM did: at 4096 columns one
# program an SM ran at 0.50-0.58 whether 2 rows were in flight or 8. What limits a short row is
# a program's own time on it (two reductions across its warps); the fused kernel hides that time
# by running up to eight programs an SM there (8 warps of 32 registers a thread each), not by
# loading ahead.
#
# The interpreter is slow, so on the CPU the thresholds are lowered to send short rows down the
# same two paths; on a GPU the rows are as long as the benchmark's:

small = dict(max_fused_n=512, tile_n=128)
for rows, cols in [runtime.pick(gpu=(256, 1 << 17), cpu=(9, 3000)), runtime.pick(gpu=(64, 1 << 20), cpu=(2, 3000))]:
    knobs = runtime.pick(gpu={}, cpu=small)
    plan = softmax_plan(rows, cols, torch.float16, "fwd", DEVICE, **knobs)
    long_x = random_tensor((rows, cols), torch.float16, DEVICE)
    long_y = poisoned((rows, cols), torch.float16, DEVICE)
    softmax(long_x, long_y, **knobs)
    assert_close(long_y, softmax_reference(long_x.double()), torch.float16)
    print(f"{rows} x {cols}: path {plan.path!r} ({plan.chunks} chunk(s) per row), matches the reference")

# %%
# Edge values behave as in torch: large magnitudes cannot overflow, and a row of only ``-inf``
# (a fully masked attention row) gives NaN, which is what ``torch.softmax`` returns:

edge = random_tensor((3, 300), torch.float32, DEVICE)
edge[0] += 1e4  # exp(1e4) is far beyond float32; exp(x - max) is not
edge[1] -= 1e4
edge[2] = float("-inf")
for path, knobs in [("fused", {}), ("online", dict(max_fused_n=64, tile_n=64, split=1))]:
    ours, theirs = softmax(edge, **knobs), torch.softmax(edge, dim=-1)
    same_nan = torch.equal(torch.isnan(ours), torch.isnan(theirs))
    print(f"{path:6}: rows of ±1e4 finite: {bool(torch.isfinite(ours[:2]).all())}, "
          f"NaN exactly where torch has NaN: {same_nan}, max difference elsewhere {(ours[:2] - theirs[:2]).abs().max().item():.1e}")

# %%
# The backward pass
# -----------------
# With ``y = softmax(x)`` and an incoming gradient ``dy``, the chain rule through
# ``∂y_i/∂x_j = y_i · (δ_ij - y_j)`` (``δ_ij`` is 1 when ``i = j``, else 0) gives:
#
# .. code-block:: text
#
#    dx_j = y_j · (dy_j - Σ_k y_k · dy_k)
#
# Only the output ``y`` is needed, not ``x``: the forward pass saves ``y``, and the backward pass
# is the same shape of kernel with a dot product instead of a maximum. It reads ``y`` and ``dy``
# and writes ``dx``, ``3 * M * N * itemsize`` bytes; long rows take the same online route, a
# first pass for the dot product and a second for ``dx``. Its warps follow their own rule from
# ``BWD_WIDE_ROW`` columns on: one warp per ``BWD_COLUMNS_PER_WARP`` columns, at most
# ``BWD_MAX_WARPS`` for the element size, fewer than the forward's rule gives for two tensors per row.
# 16-bit rows of 8193 to 16384 columns are read twice instead (``RELOAD_BLOCKS``), once for the dot
# product and once for ``dx``, in a warp per ``BWD_RELOAD_COLUMNS_PER_WARP`` columns.
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: softmax_bwd_kernel
#
# On Hopper, 16-bit rows of 32769 to 65536 columns are staged as in the forward, a row of ``y``
# and one of ``dy`` in the same ring (``softmax_bwd_staged_kernel``). At 65536 columns the pair is
# 256 KB: seven chunks go to shared memory and the last chunk of ``dy`` to registers. In one run
# on the H200 (triton 3.6, torch 2.11, 2026-11-24) that took the backward of 4096 rows of 65536
# from 0.75 of the ceiling (online) to 0.95 in both 16-bit dtypes.
#
# A float32 pair would leave too much for registers. There each row is shared out among a group
# of programs, as the layer-norm lesson's longest rows are: each program stages a 32 KB chunk of
# ``y`` and one of ``dy``, three rows ahead, and publishes its chunk's share of the dot product in
# one 8-byte word; each waits for the others' shares of a row only after its first pass over the
# next row (``softmax_bwd_staged_split_kernel``). The kernel it replaced staged ``y`` alone and
# read ``dy`` from memory twice, asking L2 to keep the row between the two reads. In one
# interleaved run on the H200 (triton 3.6, torch 2.11, 2026-12-01) the float32 backward of 4096
# rows of 65536 went from 0.80 of the ceiling to 0.97, of 4096 rows of 40960 from 0.87 to 0.98,
# and of 16384 rows of 65536 from 0.81 to 0.98.
#
# .. literalinclude:: ../../src/tritonperf/kernels/softmax.py
#    :pyobject: softmax_bwd_staged_split_kernel
#
# :func:`~tritonperf.softmax` is differentiable through a
# ``torch.autograd.Function``; the gradient is checked against float64 autograd:

xg = random_tensor(shape, torch.float16, DEVICE).requires_grad_()
dy = random_tensor(shape, torch.float16, DEVICE)
softmax(xg).backward(dy)
x64 = xg.detach().double().requires_grad_()
torch.softmax(x64, dim=-1).backward(dy.double())
assert_close(xg.grad, x64.grad, torch.float16)
y64 = softmax_reference(x64.detach())
direct = softmax_backward(y64.to(torch.float16), dy)
assert_close(direct, softmax_backward_reference(y64, dy.double()), torch.float16)
print(f"gradient through autograd: relative error {relative_error(xg.grad, x64.grad):.2e}")

# %%
# Measured against torch and the copy ceiling
# -------------------------------------------
# Five variants of the forward pass, timed in one run: ``tritonperf``; ``torch`` (eager
# ``torch.softmax``); ``torch.compile`` of the same call, compiled once per shape; and the two
# steps above. Bandwidth counts the minimal bytes for every variant, so a variant that moves
# more bytes shows as slower, which it is. The plots show the benchmark's 4096 rows; the long
# rows of the online path (256 rows of 2\ :sup:`17` and 64 rows of 2\ :sup:`20` columns) are in
# the table further down. The dashed line is the copy ceiling of the same run.


def rows_of(doc: dict, m_rows: int) -> dict:
    """The same results document, keeping only the records with ``m_rows`` rows."""
    return {**doc, "records": [r for r in doc["records"] if r["shape"].get("M") == m_rows]}


for doc, live in results:
    for dtype in ("float16", "bfloat16", "float32"):
        plot_results(rows_of(doc, 4096), "softmax", dtype, live=live,
                     title=f"softmax forward, {dtype}, 4096 rows, {doc['provenance']['gpu']}")

# %%
# The backward pass, each variant given the saved output ``y`` and the incoming gradient ``dy``,
# so that only the backward pass is timed; for eager torch that is the operator its autograd
# runs for softmax:

for doc, live in results:
    for dtype in ("float16", "float32"):
        plot_results(rows_of(doc, 4096), "softmax", dtype, live=live, direction="bwd",
                     title=f"softmax backward, {dtype}, 4096 rows, {doc['provenance']['gpu']}")

# %%
# What each step bought
# ---------------------
# Bandwidth of every variant in float16, as a share of the copy ceiling, and the final kernel
# against the best torch variant; the last two rows of each table are the long rows:

COLUMNS = {"step-1-unfused": "step 1", "step-2-fused-row": "step 2", "tritonperf": "final",
           "torch": "torch", "torch.compile": "compile"}
for doc, live in results:
    print(caption(doc, live))
    for direction in ("fwd", "bwd"):
        by_shape: dict[tuple[int, int], dict[str, dict]] = {}
        for r in summarize(doc):
            if r["kernel"] == "softmax" and r["direction"] == direction and r["dtype"] == "float16":
                by_shape.setdefault((r["shape"]["M"], r["shape"]["N"]), {})[r["variant"]] = r
        present = [v for v in COLUMNS if any(v in cell for cell in by_shape.values())]
        print(f"\n  {direction}, % of the copy ceiling" + " " * 6 + "".join(f"{COLUMNS[v]:>9}" for v in present) + "   final vs best torch")
        # The benchmark's 4096 rows first, by row length, then the long rows.
        for (m_rows, n_cols), cell in sorted(by_shape.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
            shares = "".join(f"{cell[v]['pct_of_ceiling']:8.1f}%" if v in cell else f"{'–':>9}" for v in present)
            ours = cell.get("tritonperf")
            versus = f"{ours['vs_best_torch']:.2f}x" if ours and ours["vs_best_torch"] else "–"
            print(f"  M={m_rows:5} N={n_cols:8}         {shares}   {versus:>8}")

# %%
# Step 1 moves twice the minimal bytes, so it can reach at best half the ceiling, and its three
# launches each pay their own start-up. Fusing (step 2) removes the extra traffic; with 4 warps
# per program, though, the shortest rows give each program too few bytes to keep memory busy,
# and from about 32768 columns on the row no longer fits in registers and spills. The final
# kernel's sizing addresses both ends: packed rows on the left of the plot, more warps and
# then, on the right, the staged path for rows of 65536 on Hopper (one read from memory) and the
# online path for longer ones, where part of the second read of each row comes from L2.
# torch's eager softmax is a single hand-written CUDA kernel, not three operations, and
# ``torch.compile`` generates a fused Triton kernel of its own: both are fused baselines.
#
# The ceiling is measured with a large copy, and a smaller call cannot reach it: some of its time
# is the start and the end of the launch, when not every SM has work. In one run on an H200
# (2026-11-24, triton 3.6.0, torch 2.11, 16-bit values), a device copy of the bytes of 4096 rows of
# 4096 columns reached 0.88 of the ceiling, and the final kernel 0.88 as well: at that size it
# has no more to gain. At 5120 columns the copy reached 0.90, but the kernel only 0.78 in float16
# and 0.69 in bfloat16, though the two compile to nearly the same machine code (it differs around
# the type conversions). Nsight Compute told the two apart: the bfloat16 kernel took 50 registers
# a thread and the float16 one 48. Registers are handed out 8 at a time, so 50 count as 56, and
# an SM held four programs of 8 warps instead of five (achieved occupancy 46% against 57%). The
# launcher now caps these programs at 48 registers (``FUSED_MAX_REGISTERS``, Triton's
# ``maxnreg``): in one run (same GPU, versions and day) the bfloat16 forward went from 0.68 to
# 0.75 of the ceiling at 5120 columns and from 0.84 to 0.89 at 7168, float16 did not move. The
# rest of the gap at 5120 columns was the padding: a row sat in a block of 8192 lanes, the 3072
# empty ones were computed too, and the same profile showed the issue slots 69% busy (float16).
# Held as two blocks (the bullet list above), in one interleaved run on the H200 (same versions
# and day), 4096 rows of 5120 went from 0.78 to 0.83 of the ceiling in float16 and from 0.77 to
# 0.83 in bfloat16, 16384 rows from 0.82 to 0.93 and from 0.86 to 0.95; 4096 rows of 10000 from
# 0.66 to 0.83. The backward, which reads two tensors a row, moved between -1.5% and +1.1% and
# keeps one block.
#
# Timed at five row counts, 2048 to 32768, a call's time is close to a straight line in the rows:
# a fixed cost per call plus a cost per row. In one interleaved run on the H200 (2026-11-29,
# triton 3.6.0, torch 2.11, the worst point 5% off its line) the float16 forward paid 1.7 µs a
# call at 4096 columns, 3.6 µs at 8192 and 5.9 µs at 16384, and streamed its rows at 4158, 4232
# and 4060 GB/s; torch's vector add, in the same run, 2.6 µs and 4384 GB/s. So the rows stream
# at 93-97% of the vector add's rate, and the longer rows pay more a call: at 16384 columns a
# program holds a whole row in 32 warps, an SM runs two of them, and the last of the 16 waves of
# rows keeps part of the GPU idle. At 4096 rows that fixed cost is 8-10% of the call, and
# the 4096-row targets leave little room for it.
#
# Takeaways
# ---------
# * Count bytes first: softmax's minimum is one read and one write; everything above that is
#   a cost the plot shows.
# * Fusion is keeping data on the chip between operations; registers are where a row lives
#   in a one-pass kernel, and their number bounds the row a program can hold.
# * Size the program to the work: pack short rows, add warps for long ones.
# * When the data does not fit, stream it: the online maximum-and-sum rule turns a
#   three-pass algorithm into two passes over tiles, for rows of any length.
# * Between the two, shared memory: a row that fits there can be read twice from the chip and
#   once from memory. Plain Triton chooses what goes to shared memory; Gluon lets the program
#   choose. A row too long for one program's shared memory can be shared out among several,
#   if what they trade is cheap: one 8-byte word a program, with no fence.
# * Subtract the maximum; check edge values (``-inf`` rows, large magnitudes) against torch.
# * Tell the compiler what it cannot see: a row length that is a multiple of 8 but not of 16
#   costs a quarter of the bandwidth until the kernel is told.
