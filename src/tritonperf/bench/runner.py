"""Running benchmark specs and turning them into a results document."""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from . import records
from .ceilings import measure_ceilings
from .specs import BenchSpec, specs_for
from .timing import interleave, prepare

# Called after each measurement with (done, total, record).
Progress = Callable[[int, int, dict[str, Any]], None]


def dtype_name(dtype: torch.dtype) -> str:
    """torch's dtype name without the ``torch.`` prefix."""
    return str(dtype).removeprefix("torch.")


# How often a long run writes what it has measured so far (see run's checkpoint).
CHECKPOINT_S = 30.0


def count_cases(specs: Iterable[BenchSpec], quick: bool = False) -> int:
    """How many measurements :func:`measure` will make for these specs."""
    return sum(len(s.cases(quick)) for s in specs)


def measure(
    spec: BenchSpec,
    *,
    quick: bool = False,
    progress: Progress | None = None,
    done: int = 0,
    total: int = 0,
    failures: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Time every variant of ``spec`` at every shape and dtype it applies to; return records.

    Each measurement draws its own fresh random inputs. The variants of one shape and dtype are
    timed together, interleaved (see :func:`~tritonperf.bench.timing.interleave`). Needs a CUDA
    GPU. A case that raises stops the run, unless ``failures`` is a list: then the case is left
    out of the records, a line naming it and the error is appended to the list, and the run goes on.
    """
    out = []
    for (dtype, _), cases in itertools.groupby(spec.cases(quick), key=lambda case: (case[0], repr(case[1]))):
        cases = list(cases)
        shape = cases[0][1]
        nbytes, flops = spec.nbytes(shape, dtype), spec.flops(shape, dtype)
        timers, variants = [], []
        for _, _, variant in cases:
            try:
                timers.append(prepare(spec.variants[variant], functools.partial(spec.make_args, shape, dtype), nbytes or 0))
            except Exception as err:
                if failures is None:
                    raise
                case = f"{spec.kernel} {spec.direction} {dtype_name(dtype)} {shape} {variant}"
                failures.append(f"{case}: {type(err).__name__}: {err}")
                torch.cuda.empty_cache()
                continue
            variants.append(variant)
        for variant, ms in zip(variants, interleave(timers), strict=True):
            rec = records.record(spec.kernel, variant, spec.direction, dtype_name(dtype), shape, ms, nbytes, flops)
            out.append(rec)
            done += 1
            if progress:
                progress(done, total, rec)
        del timers  # free the graphs and their inputs before the next shape
        torch.cuda.empty_cache()
    return out


def run(
    kernels: Iterable[str], *, command: str, quick: bool = False, progress: Progress | None = None,
    log: Callable[[str], None] = lambda _: None, ceilings: dict[str, float] | None = None,
    failures: list[str] | None = None, checkpoint: Callable[[dict[str, Any]], None] | None = None,
    checkpoint_s: float = CHECKPOINT_S,
) -> dict[str, Any]:
    """Measure the ceilings and every spec of ``kernels`` in one run; return a validated document.

    ``ceilings`` measured earlier in the same process may be passed in instead of measured again.
    ``failures``: as for :func:`measure`; each failure is also logged when it happens.
    ``checkpoint``, if given, is called with the document of the records so far at most every
    ``checkpoint_s`` seconds, so that a run cut short keeps what it measured.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("benchmarks need a CUDA GPU; none is visible to torch")
    specs = [spec for kernel in kernels for spec in specs_for(kernel)]
    prov = records.provenance(command)
    if ceilings is None:
        log(f"measuring ceilings on {prov['gpu']}")
        ceilings = measure_ceilings(log)
    total, recs = count_cases(specs, quick), []
    last_checkpoint = time.monotonic()

    def on_record(done: int, total: int, rec: dict[str, Any]) -> None:
        # Every record measure() makes passes through here, in order: this is where recs grows.
        nonlocal last_checkpoint
        recs.append(rec)
        if progress:
            progress(done, total, rec)
        if checkpoint and time.monotonic() - last_checkpoint >= checkpoint_s:
            checkpoint({"schema": records.SCHEMA_VERSION, "provenance": prov, "ceilings": ceilings,
                        "records": list(recs)})
            last_checkpoint = time.monotonic()

    for spec in specs:
        seen = len(failures) if failures is not None else 0
        measure(spec, quick=quick, progress=on_record, done=len(recs), total=total, failures=failures)
        for line in (failures or [])[seen:]:
            log(f"FAILED {line}")
    doc = {"schema": records.SCHEMA_VERSION, "provenance": prov, "ceilings": ceilings, "records": recs}
    return records.validate(doc, "new run")


@functools.cache
def _process_ceilings() -> dict[str, float]:
    """Ceilings measured once per process: the lessons of one documentation build share them."""
    return measure_ceilings()


def live_or_recorded(*kernels: str, quick: bool = True) -> list[tuple[dict[str, Any], bool]]:
    """Results to show for ``kernels``: measured now on a GPU, else every recorded file that has them all.

    Returns ``(document, live)`` pairs; empty when there is no GPU and no recorded file is found
    (for example, an example script downloaded on its own).
    """
    from .. import runtime

    if not kernels:
        raise ValueError("name at least one kernel")
    if runtime.MODE == "gpu":
        doc = run(kernels, command=f"live measurement of {', '.join(kernels)}", quick=quick, ceilings=_process_ceilings())
        return [(doc, True)]
    docs = []
    for path in records.find_results():
        doc = records.load(path)
        if set(kernels) <= {r["kernel"] for r in doc["records"]}:
            docs.append((doc, False))
    return docs
