"""Record how much the usual timing mistakes change a measurement, for the chapter on measuring.

Run on a machine with a CUDA GPU (``nox -s measuring``)::

    python tools/record_measuring.py --out docs/results/measuring

It times :func:`tritonperf.softmax` on float16 inputs of three sizes in six ways, from the
naive to the careful, and writes ``<out>/<gpu-slug>.md``: a Markdown table that the chapter
includes as it is, headed by where, when and with what it was recorded. Each way is timed in
this one process, on the same inputs, one after the other.

It also times :func:`tritonperf.matmul` against ``torch.matmul`` (float16, 4096³) three ways: one
after the other in both orders, each after the GPU has idled a few seconds, and interleaved as
``tritonperf bench`` does. It writes that table to ``<order-out>/<gpu-slug>.md``.

The process points ``TRITON_CACHE_DIR`` at an empty folder before Triton is imported, so that
the first call of each size really compiles, as it would for a user with a cold cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Before Triton is imported: a cold compilation cache, so that "first call" means compiling.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tritonperf-measuring-")

import torch  # noqa: E402

import tritonperf  # noqa: E402  (first of ours: chooses GPU or interpreter before any kernel is defined)
from tritonperf.bench import records  # noqa: E402
from tritonperf.bench.timing import ROUNDS, SOAK_MS, do_bench_ms, interleave, prepare, time_ms  # noqa: E402
from tritonperf.kernels.matmul import matmul_bytes, matmul_flops  # noqa: E402
from tritonperf.kernels.softmax import softmax_bytes  # noqa: E402
from tritonperf.testing import random_tensor  # noqa: E402

# (rows, columns): far inside L2, about L2's size, far larger than L2 (on a 50 MiB L2).
SHAPES = [(1024, 1024), (4096, 4096), (16384, 16384)]
REPEATS = 50
# The order experiment: a compute-bound product, and how long the GPU idles before each timing.
ORDER_SIZE = 4096
PAUSE_S = 3.0

WAYS = [
    ("first call, host clock", "compilation included: what the first call of a new shape costs"),
    ("host clock, no synchronize", "measures the launch only: the kernel is still running when the clock stops"),
    ("host clock, synchronize", "kernel + launch overhead + synchronization, same input each call"),
    ("CUDA events, same input", "events around each call; the GPU waits for the host between them, and the input stays in L2"),
    ("do_bench (L2 flushed)", "device time from cold L2; host launch time counted when it exceeds the flush"),
    ("CUDA graph, rotated inputs", "what tritonperf reports: device time, cold inputs, no host overhead"),
]


def host_clock_ms(fn: Callable[[], object], synchronize: bool) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        if synchronize:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
        torch.cuda.synchronize()  # outside the clock: the next call starts on an idle GPU
    return statistics.median(times)


def events_ms(fn: Callable[[], object]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(REPEATS):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def measure(rows: int, cols: int) -> list[float]:
    """Milliseconds per call, one value per entry of WAYS, in that order."""
    x = random_tensor((rows, cols), torch.float16, "cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    tritonperf.softmax(x)
    torch.cuda.synchronize()
    first = (time.perf_counter() - start) * 1e3
    call = lambda: tritonperf.softmax(x)  # noqa: E731
    return [
        first,
        host_clock_ms(call, synchronize=False),
        host_clock_ms(call, synchronize=True),
        events_ms(call),
        do_bench_ms(tritonperf.softmax, (x,)),
        time_ms(tritonperf.softmax, lambda: (random_tensor((rows, cols), torch.float16, "cuda"),),
                softmax_bytes(rows, cols, torch.float16)),
    ]


def table(results: dict[tuple[int, int], list[float]]) -> str:
    shapes = list(results)
    head = "| how it was timed | " + " | ".join(f"{r} × {c}" for r, c in shapes) + " | what it measures |"
    rule = "| --- | " + " | ".join("---:" for _ in shapes) + " | --- |"
    lines = [head, rule]
    for i, (name, what) in enumerate(WAYS):
        cells = []
        for r, c in shapes:
            ms = results[r, c][i]
            gbps = softmax_bytes(r, c, torch.float16) / ms * 1e-6
            cells.append(f"{ms * 1e3:,.1f} µs ({gbps:,.0f} GB/s)")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {what} |")
    return "\n".join(lines) + "\n"


def order_effect() -> list[tuple[str, float, float]]:
    """``(how, tritonperf ms, torch ms)``: the same two products timed one after the other and interleaved."""
    n = ORDER_SIZE

    def make_args():
        return random_tensor((n, n), torch.float16, "cuda"), random_tensor((n, n), torch.float16, "cuda")

    nbytes = matmul_bytes(n, n, n, torch.float16)
    ours, theirs = prepare(tritonperf.matmul, make_args, nbytes), prepare(torch.matmul, make_args, nbytes)
    rows = []
    for how, first, second in [("one after the other, tritonperf first", ours, theirs),
                               ("one after the other, torch first", theirs, ours)]:
        for timer in (first, second):
            timer.samples.clear()
        time.sleep(PAUSE_S)  # an idle, cooling GPU, as after building the next shape's inputs
        first.time(first.replays)
        second.time(second.replays)
        rows.append((how, ours.median_ms(), theirs.median_ms()))
    for timer in (ours, theirs):
        timer.samples.clear()
    time.sleep(PAUSE_S)
    rows.append((f"interleaved, as `tritonperf bench` times ({SOAK_MS:.0f} ms soak, {ROUNDS} rounds)", *interleave([ours, theirs])))
    return rows


def order_table(rows: list[tuple[str, float, float]]) -> str:
    flops = matmul_flops(ORDER_SIZE, ORDER_SIZE, ORDER_SIZE)
    lines = ["| how the two were timed | tritonperf TFLOPS | torch TFLOPS | tritonperf / torch |", "| --- | ---: | ---: | ---: |"]
    for how, ours_ms, theirs_ms in rows:
        lines.append(f"| {how} | {flops / ours_ms * 1e-9:,.0f} | {flops / theirs_ms * 1e-9:,.0f} | {theirs_ms / ours_ms:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/measuring"), help="folder for <gpu-slug>.md")
    parser.add_argument("--order-out", type=Path, default=Path("docs/results/measuring_order"),
                        help="folder for the order experiment's <gpu-slug>.md")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("measuring needs a CUDA GPU; none is visible to torch")
    results = {}
    for rows, cols in SHAPES:
        print(f"softmax float16 {rows} x {cols} ...", flush=True)
        results[rows, cols] = measure(rows, cols)
    prov = records.provenance(" ".join(["python", "tools/record_measuring.py", *sys.argv[1:]]))
    description = "`tritonperf.softmax`, float16, rows × columns; GB/s count the bytes read and written once."
    path = records.save_markdown(prov, description, table(results), args.out)
    print(path.read_text())

    print(f"matmul float16 {ORDER_SIZE}^3, timed in three orders ...", flush=True)
    description = (
        f"`tritonperf.matmul` and `torch.matmul`, float16, {ORDER_SIZE} × {ORDER_SIZE} × {ORDER_SIZE}, the same "
        f"prepared graphs each time; the GPU idled {PAUSE_S:.0f} s before each of the three timings."
    )
    path = records.save_markdown(prov, description, order_table(order_effect()), args.order_out)
    print(path.read_text())


if __name__ == "__main__":
    main()
