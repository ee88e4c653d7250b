"""Timing kernels on a GPU: device events, warm-up excluded, medians, cold caches, no host overhead.

Every measurement replays a CUDA graph that calls the function on a rotation of independent
input sets, and divides the replay's time (CUDA events) by the number of calls in it:

* a graph launch costs the host one call however many kernels it holds, so Python's launch
  overhead (validation, grid computation, Triton's launcher) is not counted, whatever the size;
* between two calls on the same input set, at least twice the L2 cache's worth of other data is
  touched, so every call finds its inputs out of cache, as a flushed cache would;
* the median over 30 replays is reported (fewer, down to 5, for calls so long that 30 replays
  would take more than a second: each replay already averages 10 or more calls); the calls
  before capture (compilation, autotuning) and the first replay are left out.

:func:`do_bench_ms` times the way :func:`triton.testing.do_bench` does (an L2 flush, then events
around each call), host time included; it is kept to show the difference (see the chapter on
measuring).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

import torch

Args = Sequence[object]

# Input sets per rotation at most (tiny inputs), and calls per graph at least (large inputs), so
# that the graph's own launch cost is spread over several calls.
MAX_ROTATION = 256
MIN_CALLS = 10
GRAPH_REPLAYS = 30
# Long calls (attention at 16k tokens: tens of ms) get fewer replays, so that one measurement
# takes about this long, but never fewer than MIN_REPLAYS.
REPLAYS_MS = 1000.0
MIN_REPLAYS = 5


def l2_bytes() -> int:
    """L2 cache size of the current GPU in bytes."""
    return torch.cuda.get_device_properties().L2_cache_size


def do_bench_ms(fn: Callable[..., object], args: Args) -> float:
    """Median of :func:`triton.testing.do_bench`: L2 flushed before each call, host launch time included."""
    import triton.testing

    return triton.testing.do_bench(lambda: fn(*args), warmup=25, rep=200, return_mode="median")


def _graph_rotation_ms(fn: Callable[..., object], arg_sets: list[Args], calls: int) -> float:
    # Warm up (compile, autotune, allocate) on a side stream, as graph capture requires.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for args in arg_sets[:2]:
            fn(*args)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(*arg_sets[i % len(arg_sets)])
    graph.replay()  # the first replay uploads the graph: keep it out of the numbers
    torch.cuda.synchronize()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()  # a second one, timed to size the run, also left out
    end.record()
    end.synchronize()
    replays = max(MIN_REPLAYS, min(GRAPH_REPLAYS, int(REPLAYS_MS / max(start.elapsed_time(end), 1e-3))))
    per_call = []
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) / calls)
    return statistics.median(per_call)


def rotation(bytes_per_call: int) -> tuple[int, int]:
    """``(input sets, calls per graph)`` for a call that reads and writes ``bytes_per_call``."""
    sets = min(MAX_ROTATION, 1 + math.ceil(2 * l2_bytes() / max(bytes_per_call, 1)))
    return sets, sets * math.ceil(MIN_CALLS / sets)


def time_ms(fn: Callable[..., object], make_args: Callable[[], Args], bytes_per_call: int) -> float:
    """Median time of ``fn(*make_args())`` in milliseconds, on the current CUDA device.

    Args:
        fn: the function to time; it must only launch GPU work (no host sync), as graph
            capture requires.
        make_args: returns a fresh set of random arguments each time it is called.
        bytes_per_call: bytes one call reads and writes, which sets how many input sets the
            rotation needs (see :func:`rotation`).
    """
    if not torch.cuda.is_available():
        raise RuntimeError("timing needs a CUDA GPU; in interpreter mode there is nothing meaningful to time")
    sets, calls = rotation(bytes_per_call)
    return _graph_rotation_ms(fn, [make_args() for _ in range(sets)], calls)
