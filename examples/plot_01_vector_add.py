"""
Vector addition: programs, blocks and masks
===========================================

The first lesson. You will learn:

* how a Triton kernel divides a tensor among **programs**, each owning one **block** of elements;
* why the last block needs a **mask**;
* how to time a kernel correctly and hold its bandwidth against the GPU's **copy ceiling**.

To run this script yourself you need torch, triton and the ``tritonperf`` package
(``pip install -e .`` from a clone of the guide's repository). On a CUDA GPU it runs at
full size; anywhere else Triton's interpreter runs the kernels on the CPU at small sizes.
"""

# %%
# Where the kernels run
# ---------------------
# Importing :mod:`tritonperf` picks the mode: a visible CUDA GPU, or Triton's interpreter
# (it sets ``TRITON_INTERPRET=1`` before any kernel below is defined).

import torch

import tritonperf  # before triton: it switches on the interpreter when there is no GPU

# isort: split
import triton
import triton.language as tl

from tritonperf import runtime
from tritonperf.bench import live_or_recorded, plot_results
from tritonperf.bench.plotting import caption
from tritonperf.bench.report import summarize
from tritonperf.testing import assert_close, poisoned, random_tensor

print(runtime.describe())
DEVICE = runtime.default_device()

# %%
# What the hardware allows
# ------------------------
# Adding two vectors of ``N`` elements reads ``2N`` and writes ``N`` of them: 12 bytes per
# float32 element for a single addition. No GPU can feed its arithmetic units at that rate,
# so the kernel's speed is the rate at which memory delivers bytes, and the best it can do is
# to match a plain device-to-device copy of the same number of bytes.
#
# The results below carry the copy bandwidth measured in the same run as the kernels. The
# smallest possible time for the largest size follows from it:

results = live_or_recorded("vector_add")
N = 1 << 26
for doc, live in results:
    copy = doc["ceilings"]["copy_GBps"]
    floor_us = tritonperf.vector_add_bytes(N, torch.float32) / (copy * 1e9) * 1e6
    how = "measured now" if live else "recorded"
    print(f"{doc['provenance']['gpu']} ({how}): copy ceiling {copy:,.0f} GB/s, so N = 2**26 float32 "
          f"elements ({tritonperf.vector_add_bytes(N, torch.float32) / 1e6:,.0f} MB moved) take at least {floor_us:,.0f} µs")
if not results:
    print("No GPU here and no recorded results found next to this script: the plots below are skipped.")

# %%
# Programs and blocks
# -------------------
# A Triton kernel is written for one **program**. The launch grid says how many programs
# run; each one asks :func:`triton.language.program_id` which one it is and works on its
# own block of ``BLOCK_SIZE`` consecutive elements. Inside a program, ``tl.arange`` makes a
# whole block of offsets at once: the kernel is written over blocks, not over threads, and
# the compiler decides how the program's warps share the block.
#
# This small kernel writes, for every element, the number of the program that owns it. With
# 10 elements and blocks of 4, three programs are needed, and the last one owns only 2 elements:


@triton.jit
def owner_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.full((BLOCK_SIZE,), pid, tl.int32), mask=mask)


n, block = 10, 4
owners = torch.full((n,), -1, dtype=torch.int32, device=DEVICE)
owner_kernel[(triton.cdiv(n, block),)](owners, n, BLOCK_SIZE=block)
print("program of each element:", owners.tolist())

# %%
# The mask
# --------
# The third program computes offsets 8, 9, 10 and 11, but the tensor ends at 9. The mask
# ``offsets < n_elements`` switches off the lanes past the end: a masked load reads nothing
# (it returns ``other``, or an undefined value) and a masked store writes nothing. Without
# it, the last program would read and write past the end of the tensor. The mask of each
# program:

for pid in range(triton.cdiv(n, block)):
    offsets = pid * block + torch.arange(block)
    print(f"program {pid}: offsets {offsets.tolist()}, mask {(offsets < n).int().tolist()}")

# %%
# The kernel
# ----------
# ``tritonperf`` holds the final version. It is the pattern above with two loads and a store;
# the offsets are computed in 64-bit integers so that tensors of more than 2\ :sup:`31`
# elements are addressed correctly.
#
# .. literalinclude:: ../../src/tritonperf/kernels/vector_add.py
#    :pyobject: add_kernel
#
# The launcher checks its inputs before anything reaches the GPU, allocates the output and
# sizes the grid so that every element has a program:
#
# .. literalinclude:: ../../src/tritonperf/kernels/vector_add.py
#    :pyobject: vector_add
#
# Correct first
# -------------
# The check uses a size that is not a multiple of any block, fresh random inputs, and an
# output filled with NaN beforehand, so that an element the kernel forgets to write fails.

size = runtime.pick(gpu=98_432_007, cpu=1823 * 781)
for dtype in (torch.float32, torch.float16):
    x, y = random_tensor((size,), dtype, DEVICE), random_tensor((size,), dtype, DEVICE)
    out = poisoned((size,), dtype, DEVICE)
    tritonperf.vector_add(x, y, out)
    assert_close(out, (x.double() + y.double()).to(dtype))
    print(f"{dtype}: {size:,} elements match the float64 reference rounded to {dtype}")

# %%
# Bad input is stopped before launch with a message that says what is wrong:

try:
    tritonperf.vector_add(x, y[:-1])
except ValueError as err:
    print("ValueError:", err)

# %%
# Measuring bandwidth
# -------------------
# A kernel launch returns before the GPU has finished, so a host clock read right after it
# measures the launch, not the kernel. ``tritonperf`` times with CUDA events, keeps warm-up and
# compilation out, draws fresh random inputs for each measurement and reports the median. Each
# measurement replays a CUDA graph of several calls over a rotation of independent input sets:
# the graph keeps Python's launch overhead out of the numbers, and the rotation makes every call
# find its inputs out of the L2 cache, as a flushed cache would.
#
# Three variants are measured in one run: ``tritonperf`` (1024 elements and 4 warps per
# program), ``torch`` (``torch.add`` with ``out=``), and ``step-1-block-128``, the same
# kernel with only 128 elements per program, a common first choice. The dashed line is the
# copy ceiling of the same run.

for doc, live in results:
    for dtype in ("float32", "float16"):
        plot_results(doc, "vector_add", dtype, live=live, title=f"vector_add, {dtype}, {doc['provenance']['gpu']}")

# %%
# What each step bought
# ---------------------
# At the sizes the guide's bar is set at (2\ :sup:`26` elements and more), as a share of the
# copy ceiling and against ``torch.add``:

for doc, live in results:
    print(caption(doc, live))
    for row in summarize(doc):
        if row["kernel"] == "vector_add" and row["shape"]["N"] >= 1 << 26:
            print(f"  {row['dtype']:8} N=2**{row['shape']['N'].bit_length() - 1}  {row['variant']:17} "
                  f"{row['GBps']:7,.0f} GB/s  {row['pct_of_ceiling']:5.1f}% of copy  {row['vs_best_torch']:.2f}x torch")

# %%
# Small blocks cost bandwidth: with 128 elements per program, each thread of the 4 warps
# holds a single element, so every program issues narrow loads and has few bytes in flight
# before it must wait for memory, and there are many more programs to schedule. With 1024
# elements each thread loads 8 neighbouring values, which the compiler turns into wide
# vector loads; the kernel then keeps pace with a device copy. The effect is largest for
# float16, where 128 elements per program are only 256 bytes.
#
# Takeaways
# ---------
# * A program owns a block; the grid has ``cdiv(N, BLOCK_SIZE)`` programs; the mask covers
#   the ragged end.
# * A memory-bound kernel is judged by bytes moved per second against a copy of the same
#   bytes, measured in the same run, not against a datasheet.
# * Time with events, exclude warm-up, flush or rotate caches, take medians.
# * Give each thread enough consecutive bytes to load: block size matters more than any
#   other choice here.
