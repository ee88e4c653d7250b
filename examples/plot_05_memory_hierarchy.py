"""
The memory hierarchy: where L2 ends and HBM begins
==================================================

Every kernel in this guide is judged against the bandwidth of the GPU's main memory (HBM).
That is the right yardstick for data that is read once. Data that is read again soon after can
come from the L2 cache instead, which is shared by all SMs and much faster. This example
measures both on the GPU it runs on. You will learn:

* how to measure a cache: read the same buffer many times in one launch and vary its size;
* why the loads ask for ``cache_modifier=".cg"`` (L2 only), and what goes wrong without it;
* how large the gap between L2 and HBM is, and where the cliff between them sits;
* what that means for fusion, for the order of programs, and for benchmarks.

To run this script yourself you need torch, triton and the ``tritonperf`` package
(``pip install -e .`` from a clone of the guide's repository). On a CUDA GPU it measures live;
anywhere else Triton's interpreter runs the kernel on the CPU at small sizes, and the plot
comes from recorded results.
"""

# %%
# Where the kernel runs
# ---------------------

import inspect

import matplotlib.pyplot as plt
import torch

from tritonperf import runtime
from tritonperf.bench import live_or_recorded
from tritonperf.bench.memory import hierarchy_levels, read_repeated, read_repeated_kernel, read_sum_reference, repeats_for
from tritonperf.bench.plotting import add_caption
from tritonperf.testing import random_tensor

print(runtime.describe())
DEVICE = runtime.default_device()

# %%
# The kernel
# ----------
# Each program owns one contiguous chunk of the buffer and sums it ``repeats`` times. The first
# pass brings the chunk in from HBM; every later pass finds it in L2 if the whole buffer fits
# there, and goes back to HBM if it does not. The time per byte therefore tells which level
# served the reads. Storing the sum is what keeps the compiler from deleting the loads.
#
# The loads carry ``cache_modifier=".cg"``: cache in L2, not in the SM's own L1. A program
# rereads *its own* chunk, so with the default policy a small buffer would be served by L1
# (each SM has its own) and the curve would show three levels mixed together.

print(inspect.getsource(read_repeated_kernel.fn))

# %%
# It reads what it should
# -----------------------
# The partial sums of all programs must add up to ``repeats`` times the buffer's sum, and a
# buffer of ones must give exactly ``repeats * N``: a skipped or doubled block would show.

n = 1_000_003 if runtime.MODE == "gpu" else 20_011
x = random_tensor((n,), torch.float32, DEVICE)
partial = read_repeated(x, 3)
torch.testing.assert_close(partial.double().sum(), read_sum_reference(x, 3), rtol=1e-5, atol=1e-3)
ones = torch.ones(n, device=DEVICE)
assert read_repeated(ones, 3).sum().item() == 3 * n
print(f"{partial.numel()} programs; sums match; a buffer of ones reads back exactly {3 * n:,}")

# %%
# Each measurement reads about 4 GiB in total (a small buffer many times, a large one a few
# times), so that every point is timed over the same amount of work:

for mib in (1, 32, 1024):
    print(f"{mib:5d} MiB buffer: read {repeats_for(mib << 20)} times per call")

# %%
# Bandwidth against working-set size
# ----------------------------------
# Measured in one run with the copy ceiling the other examples use. The copy counts bytes read
# plus bytes written; this kernel only reads, which HBM does a little faster.

results = live_or_recorded("memory_hierarchy")
if runtime.MODE == "gpu":
    print(f"L2 cache of this GPU, as the driver reports it: {torch.cuda.get_device_properties().L2_cache_size / 2**20:.0f} MiB")
if not results:
    print("No GPU here and no recorded results found next to this script: the plot below is skipped.")


for doc, live in results:
    lv = hierarchy_levels(doc)
    fig, ax = plt.subplots(figsize=(8, 4.8), facecolor="white", layout="constrained")
    ax.plot(*zip(*lv.points, strict=True), marker="o", linewidth=2, label="repeated reads, L2 only (.cg)")
    ax.axhline(doc["ceilings"]["copy_GBps"], color="black", linestyle="--", linewidth=1,
               label=f"copy ceiling = {doc['ceilings']['copy_GBps']:,.0f} GB/s (read + write)")
    ax.axvline(lv.first_slow, color="gray", linestyle=":", linewidth=1, label=f"first size past the cliff: {lv.first_slow:g} MiB")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("working set (MiB)")
    ax.set_ylabel("GB/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper right", fontsize="small", framealpha=0.9)
    ax.set_title(f"Read bandwidth against working-set size, {doc['provenance']['gpu']}")
    add_caption(fig, doc, live)

# %%
# The numbers
# -----------
# Read off the same results: the plateau of buffers that fit in L2, the rate of the largest
# buffers (HBM), and the size where the curve falls past halfway between the two.

for doc, live in results:
    lv = hierarchy_levels(doc)
    print(f"{doc['provenance']['gpu']} ({'measured now' if live else 'recorded'}):")
    print(f"  L2 plateau          {lv.l2:8,.0f} GB/s")
    print(f"  HBM (largest sizes) {lv.hbm:8,.0f} GB/s   -> L2 is {lv.l2 / lv.hbm:.1f}x faster")
    print(f"  cliff               between {lv.last_fast:g} and {lv.first_slow:g} MiB")
    print(f"  smallest buffer     {lv.points[0][1]:8,.0f} GB/s at {lv.points[0][0]:g} MiB")

# %%
# Reading the curve
# -----------------
# * **The plateau.** Up to a few tens of MiB the reads come from L2, far faster than HBM.
#   The 1 MiB buffer falls short of the plateau for another reason: spread over every SM, each
#   program's chunk is one 512-element block, and each pass waits for its loads before the
#   next pass starts. Too few bytes are in flight to hide L2's latency. Bandwidth needs a fast
#   level *and* enough loads in flight.
# * **The cliff.** Once the buffer no longer fits in L2, each pass evicts lines that the next
#   pass needs, and the rate falls to HBM's within one or two steps of the sweep. The cliff
#   need not sit exactly at the L2 size the driver reports (printed above when the example runs
#   on a GPU): the hardware decides which lines to keep, and a buffer that nearly fills the
#   cache already loses some of them.
# * **HBM.** For large buffers every pass streams from memory. Reads alone run a little faster
#   than the copy ceiling, which also pays for writes.
#
# What it means for kernels
# -------------------------
# * **Fusion pays twice.** An intermediate tensor written to memory and read back by the next
#   kernel costs HBM bandwidth if it is large. Keeping it in registers (as the fused softmax
#   and layer-norm kernels do) costs nothing.
# * **Program order matters for reuse.** A matmul reads each panel of ``A`` and ``B`` many
#   times. If programs that share panels run at the same time, the second read is an L2 hit at
#   the plateau's rate; that is what grouped ordering buys.
# * **Benchmarks must not time L2 by accident.** Timing the same small input in a loop measures
#   the plateau, not the kernel against HBM. ``tritonperf``'s timer rotates through enough
#   independent inputs that every call finds its data out of cache.
