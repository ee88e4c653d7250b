"""Timing kernels on a GPU: device events, warm-up excluded, medians, cold caches.

Two methods, both returning the median milliseconds of one call:

* inputs larger than the L2 cache: :func:`triton.testing.do_bench`, which
  flushes L2 before every timed call and times each call with CUDA events;
* inputs that fit in L2 (tiny launches): a CUDA graph that calls the function
  on a rotation of independent input sets, so that launch overhead is replayed
  rather than paid from Python and each call finds its inputs out of cache.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

import torch

Args = Sequence[object]

# Enough independent input sets to cover twice the L2 cache, within a graph of reasonable size.
MAX_ROTATION = 256
GRAPH_REPLAYS = 30


def l2_bytes() -> int:
    """L2 cache size of the current GPU in bytes."""
    return torch.cuda.get_device_properties().L2_cache_size


def _do_bench_ms(fn: Callable[..., object], args: Args) -> float:
    import triton.testing

    return triton.testing.do_bench(lambda: fn(*args), warmup=25, rep=200, return_mode="median")


def _graph_rotation_ms(fn: Callable[..., object], arg_sets: list[Args]) -> float:
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
        for args in arg_sets:
            fn(*args)
    graph.replay()  # the first replay uploads the graph: keep it out of the numbers
    torch.cuda.synchronize()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call = []
    for _ in range(GRAPH_REPLAYS):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) / len(arg_sets))
    return statistics.median(per_call)


def time_ms(fn: Callable[..., object], make_args: Callable[[], Args], bytes_per_call: int) -> float:
    """Median time of ``fn(*make_args())`` in milliseconds, on the current CUDA device.

    Args:
        fn: the function to time; it must only launch GPU work (no host sync).
        make_args: returns a fresh set of random arguments each time it is called.
        bytes_per_call: bytes one call reads and writes, to decide whether the
            inputs fit in L2 and how many input sets the rotation needs.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("timing needs a CUDA GPU; in interpreter mode there is nothing meaningful to time")
    cache = l2_bytes()
    if bytes_per_call >= 2 * cache:
        return _do_bench_ms(fn, make_args())
    sets = min(MAX_ROTATION, math.ceil(2 * cache / max(bytes_per_call, 1)))
    return _graph_rotation_ms(fn, [make_args() for _ in range(sets)])
