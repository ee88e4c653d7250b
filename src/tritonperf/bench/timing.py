"""Timing kernels on a GPU: device events, warm-up excluded, medians, cold caches, no host overhead.

Every measurement replays a CUDA graph that calls the function on a rotation of independent
input sets, and divides the replay's time (CUDA events) by the number of calls in it:

* a graph launch costs the host one call however many kernels it holds, so Python's launch
  overhead (validation, grid computation, Triton's launcher) is not counted, whatever the size;
* between two calls on the same input set, at least twice the L2 cache's worth of other data is
  touched, so every call finds its inputs out of cache, as a flushed cache would;
* the median over 30 replays is reported (fewer, down to 5, for calls so long that 30 replays
  would take more than half a second: each replay already averages 10 or more calls); the calls
  before capture (compilation, autotuning) and the first replay are left out;
* the variants compared at one shape are timed together, in interleaved rounds after an untimed
  soak, ordered so that each variant follows each other about equally often, each block of timed
  replays after a short untimed warm-up of its own unless its replays are longer than that warm-up
  (:func:`interleave`). Under a compute-bound load a GPU runs faster while it is cool, or just
  after a light kernel, than after a second of heavy work; timed one after the other, whichever
  variant came first, or always came after a light one, would gain from that.

:func:`do_bench_ms` times the way :func:`triton.testing.do_bench` does (an L2 flush, then events
around each call), host time included; it is kept to show the difference (see the chapter on
measuring).
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
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
REPLAYS_MS = 500.0
MIN_REPLAYS = 5
# Measurements of one shape are interleaved in this many rounds, after SOAK_MS of untimed work;
# each timed block follows WARM_MS of untimed replays of the same function, unless one replay
# lasts that long already (see interleave).
ROUNDS = 10
SOAK_MS = 200.0
WARM_MS = 10.0
# Schedules that balanced_orders builds before keeping the most even one.
ORDER_TRIES = 100


def l2_bytes() -> int:
    """L2 cache size of the current GPU in bytes."""
    return torch.cuda.get_device_properties().L2_cache_size


def do_bench_ms(fn: Callable[..., object], args: Args) -> float:
    """Median of :func:`triton.testing.do_bench`: L2 flushed before each call, host launch time included."""
    import triton.testing

    return triton.testing.do_bench(lambda: fn(*args), warmup=25, rep=200, return_mode="median")


class GraphTimer:
    """One function captured in a CUDA graph over a rotation of input sets, ready to be replayed and timed.

    Building it warms the function up (compilation, autotuning, allocation), captures the graph,
    replays it once to upload it and once more to size the run; none of that is kept.
    """

    def __init__(self, fn: Callable[..., object], arg_sets: list[Sequence[object]], calls: int):
        # Warm up on a side stream, as graph capture requires.
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for args in arg_sets[:2]:
                fn(*args)
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()

        self.calls = calls
        self.arg_sets = arg_sets  # the graph reads these: keep them alive as long as it is
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for i in range(calls):
                fn(*arg_sets[i % len(arg_sets)])
        self.graph.replay()  # the first replay uploads the graph
        torch.cuda.synchronize()
        #: Milliseconds one replay took when the graph was built (it sizes the run and the soaks).
        self.replay_ms = max(self._replay_ms(), 1e-3)
        #: How many timed replays the measurement should have (fewer for long calls, see ``REPLAYS_MS``).
        self.replays = max(MIN_REPLAYS, min(GRAPH_REPLAYS, int(REPLAYS_MS / self.replay_ms)))
        #: Milliseconds per call, one entry per timed replay so far.
        self.samples: list[float] = []

    def _replay_ms(self) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self.graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def soak(self, ms: float) -> None:
        """Replay, untimed, for about ``ms`` milliseconds."""
        for _ in range(max(1, math.ceil(ms / self.replay_ms))):
            self.graph.replay()
        torch.cuda.synchronize()

    def time(self, replays: int) -> None:
        """Time ``replays`` more replays and add their per-call times to :attr:`samples`."""
        for _ in range(replays):
            self.samples.append(self._replay_ms() / self.calls)

    def median_ms(self) -> float:
        """Median time per call over every timed replay."""
        return statistics.median(self.samples)


def balanced_orders(rounds: Sequence[Sequence[int]], before: int, seed: int = 0, tries: int = ORDER_TRIES) -> list[list[int]]:
    """An order for each round such that every function follows every other about equally often.

    ``rounds[r]`` lists the functions (by index) timed in round ``r``; ``before`` is the one that
    runs just before the first round. Each try builds the rounds one by one, taking next the
    function that has followed the last one least often so far, never the last one itself where
    another is left (ties drawn at random, from ``seed``). Of ``tries`` schedules, the one with the
    most even counts of predecessors is kept: the smallest largest gap, function by function,
    between its most and least frequent predecessor, then the smallest sum of those gaps. With as
    many rounds as functions or more, the largest gap is at most 1 (tested up to 10 functions in 10
    rounds).
    """
    rng = random.Random(seed)
    functions = sorted({i for members in rounds for i in members})
    best: tuple[tuple[int, int], list[list[int]]] | None = None
    for _ in range(tries):
        follows: Counter[tuple[int, int]] = Counter()
        last, orders = before, []
        for members in rounds:
            todo, order = rng.sample(list(members), len(members)), []
            while todo:
                pick = min(todo, key=lambda i: (i == last, follows[last, i]))
                todo.remove(pick)
                order.append(pick)
                follows[last, pick] += 1
                last = pick
            orders.append(order)
        gaps = [max(counts) - min(counts) for b in functions if (counts := [follows[a, b] for a in functions if a != b])]
        cost = (max(gaps, default=0), sum(gaps))
        if best is None or cost < best[0]:
            best = (cost, orders)
    return best[1] if best else [[] for _ in rounds]


def interleave(
    timers: Sequence[GraphTimer], rounds: int = ROUNDS, soak_ms: float = SOAK_MS, warm_ms: float = WARM_MS, seed: int = 0,
) -> list[float]:
    """Time several prepared functions against each other; return each one's median ms per call.

    The GPU is first kept busy for ``soak_ms`` with all of them, untimed. The timed replays are
    then split into ``rounds`` rounds, each timing the functions in an order from
    :func:`balanced_orders` (from ``seed``, so runs repeat), each one after replaying untimed for
    ``warm_ms`` (with the exceptions below). A GPU's clock follows its recent load: it boosts while
    the chip is cool or after a light kernel, and slows as a compute-bound one heats it. Timed one
    after the other, whichever function ran first would gain from that, and so would one that
    mostly came right after a light one; here every function meets the same mix of states.

    Each function gets exactly its ``replays``, spread evenly over the rounds (one with fewer
    replays than rounds sits some rounds out). A function whose one replay lasts ``warm_ms`` or
    more gets no warm-up: the start of such a replay, where the previous function's state
    lingers, is a small part of it. (On an H200, attention's variants, whose replays mostly last
    10 ms or more, measured within 2% of a run with warm-ups, variant by variant, in the median.)
    """
    def share(timer: GraphTimer, r: int) -> int:
        return timer.replays * (r + 1) // rounds - timer.replays * r // rounds

    # The orders first: the GPU should not idle between the soak and the first timed block.
    members = [[i for i, timer in enumerate(timers) if share(timer, r)] for r in range(rounds)]
    orders = balanced_orders(members, before=len(timers) - 1, seed=seed)
    for timer in timers:
        timer.soak(soak_ms / len(timers))  # (no timers: nothing to do, and an empty list back)
    for r, order in enumerate(orders):
        for i in order:
            timer = timers[i]
            if timer.replay_ms < warm_ms:
                timer.soak(warm_ms)
            timer.time(share(timer, r))
    return [timer.median_ms() for timer in timers]


def rotation(bytes_per_call: int) -> tuple[int, int]:
    """``(input sets, calls per graph)`` for a call that reads and writes ``bytes_per_call``."""
    sets = min(MAX_ROTATION, 1 + math.ceil(2 * l2_bytes() / max(bytes_per_call, 1)))
    return sets, sets * math.ceil(MIN_CALLS / sets)


def prepare(fn: Callable[..., object], make_args: Callable[[], Args], bytes_per_call: int) -> GraphTimer:
    """A :class:`GraphTimer` for ``fn`` over fresh input sets from ``make_args``, sized by ``bytes_per_call``."""
    if not torch.cuda.is_available():
        raise RuntimeError("timing needs a CUDA GPU; in interpreter mode there is nothing meaningful to time")
    sets, calls = rotation(bytes_per_call)
    return GraphTimer(fn, [make_args() for _ in range(sets)], calls)


def time_ms(fn: Callable[..., object], make_args: Callable[[], Args], bytes_per_call: int) -> float:
    """Median time of ``fn(*make_args())`` in milliseconds, on the current CUDA device.

    Args:
        fn: the function to time; it must only launch GPU work (no host sync), as graph
            capture requires.
        make_args: returns a fresh set of random arguments each time it is called.
        bytes_per_call: bytes one call reads and writes, which sets how many input sets the
            rotation needs (see :func:`rotation`).
    """
    return interleave([prepare(fn, make_args, bytes_per_call)])[0]
