"""Compiling a run's kernels before it measures them, in parallel worker processes.

On a machine with cold caches, much of ``tritonperf bench`` is compiling: a Triton
binary for each block size a shape picks, every candidate of an autotuner, and torch.compile's
baselines. The measuring process compiles one kernel at a time, on one core. Here, before it
starts, worker processes call every case once, each worker one variant in one dtype at a time,
so that Triton's and TorchInductor's on-disk caches already hold the binaries when the
measuring process asks for them.

Nothing a worker times is kept. The workers share the GPU, so their autotuning timings are
noise: a worker writes no tuning result to disk (neither Triton's ``cache_results`` nor
TorchInductor's autotune cache), and the measuring process tunes again, on an idle GPU, from
cached binaries. Precompiling changes how long a run takes, not what it measures.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import NamedTuple

import torch

from .. import runtime
from .runner import dtype_name
from .specs import spec_for, specs_for


class Job(NamedTuple):
    """One worker task: one variant of one spec, in one dtype, at every shape of the sweep."""

    kernel: str
    direction: str
    variant: str
    dtype: str


def plan(kernels: Iterable[str], quick: bool = False) -> list[tuple[Job, int]]:
    """The jobs that cover every case of ``kernels``, each with its number of cases, in run order."""
    counts: dict[Job, int] = {}
    for kernel in kernels:
        for spec in specs_for(kernel):
            for dtype, _, variant in spec.cases(quick):
                job = Job(kernel, spec.direction, variant, dtype_name(dtype))
                counts[job] = counts.get(job, 0) + 1
    return list(counts.items())


def compile_job(job: Job, quick: bool = False) -> list[str]:
    """Call ``job``'s variant once at each of its shapes; return a line per case that raised."""
    spec = spec_for(job.kernel, job.direction)
    dtype = getattr(torch, job.dtype)
    errors = []
    for case_dtype, shape, variant in spec.cases(quick):
        if case_dtype != dtype or variant != job.variant:
            continue
        try:
            spec.variants[variant](*spec.make_args(shape, dtype))
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        except Exception as err:
            errors.append(f"{job.kernel} {job.direction} {job.dtype} {shape} {variant}: {type(err).__name__}: {err}")
    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # the GPU is shared with the other workers
    return errors


def _bench_without_disk_cache(self, tuning_key, configs, bench_fn) -> bool:
    # Replaces triton's Autotuner.check_disk_cache in a worker: tune (which compiles every
    # candidate), but neither read nor write a tuning result on disk.
    bench_fn()
    return False


def _init_worker() -> None:
    """Set a worker process up: compile as usual, keep no tuning result (see the module's docstring)."""
    import torch._inductor.config as inductor_config
    from triton.runtime.autotuner import Autotuner

    runtime.use_torch_ptxas()  # the ptxas the measuring process uses, so that its binaries are the ones cached
    inductor_config.autotune_local_cache = False  # not part of TorchInductor's cache key
    inductor_config.compile_threads = 1  # the workers already use the cores, one each
    Autotuner.check_disk_cache = _bench_without_disk_cache


# Called after each finished job with (cases done, cases in all).
Progress = Callable[[int, int], None]


def precompile(kernels: Iterable[str], *, jobs: int, quick: bool = False, progress: Progress | None = None) -> list[str]:
    """Compile every case of ``kernels`` in ``jobs`` worker processes; return the cases that raised.

    A case that raises here is only reported: the measuring run meets it again and decides. If a
    worker process dies, the jobs left are given up, for the measuring run to compile.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    work = plan(kernels, quick)
    total, done, errors = sum(n for _, n in work), 0, []
    # "spawn": a CUDA context does not survive a fork.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_init_worker) as pool:
        # The jobs with the most shapes first, so that none of them starts last and runs alone.
        futures = {pool.submit(compile_job, job, quick): (job, n) for job, n in sorted(work, key=lambda w: -w[1])}
        for future in as_completed(futures):
            job, n = futures[future]
            try:
                errors += future.result()
            except Exception as err:  # the worker died (BrokenProcessPool), or could not import
                errors.append(f"{job.kernel} {job.direction} {job.dtype} {job.variant}: {type(err).__name__}: {err}")
            done += n
            if progress:
                progress(done, total)
    return errors

