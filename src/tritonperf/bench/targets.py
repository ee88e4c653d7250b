"""The performance targets the package sets itself, and how a results file measures up to them.

Each :class:`Target` is one condition on the package's own kernel (variant ``tritonperf``): a
share of the measured ceiling, or a speed against torch variants of the same run, at the shapes
it names. :func:`check` holds a results document against every target and reports, per target,
at how many shapes it is met and the worst shape. The results page and ``tritonperf targets``
show that table, so a target the kernels miss is shown missed.

A share of the copy ceiling is out of reach for a small call: launching it, filling the GPU and
draining it take a fixed time that a few MiB cannot hide. For the memory-bound kernels' ceiling
targets the table therefore also says, from the same run, which misses a plain streaming pass of
as many bytes misses too (torch's vector add, the line of the results page's size plot), and the
worst value among the shapes where such a pass meets the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .plotting import SIZE_KERNELS, SIZE_REFERENCE, bytes_moved, size_reference
from .report import _case, shape_text, summarize

Where = Callable[[str, dict[str, Any]], bool]


def _everywhere(dtype: str, shape: dict[str, Any]) -> bool:
    return True


def _is_torch(variant: str) -> bool:
    return variant.startswith("torch")


@dataclass(frozen=True)
class Target:
    """One condition on the package's records of a kernel and direction.

    Attributes:
        kernel, direction: the records it applies to.
        text: the condition, as a reader should see it.
        minimum: the least value that meets it.
        against: ``None`` to compare with the ceiling (``% of ceiling`` / 100); otherwise a test
            on variant names: the value is the fastest such variant's time over ours.
        where: which ``(dtype, shape)`` the condition applies to.
        ours: the variant held to it: the package's kernel, or a mode of it that has a torch
            counterpart of its own.
    """

    kernel: str
    direction: str
    text: str
    minimum: float
    against: Callable[[str], bool] | None = None
    where: Where = _everywhere
    ours: str = "tritonperf"


def _long_rows(dtype: str, shape: dict[str, Any]) -> bool:
    # The memory-bound targets hold for batches of at least 4096 rows of up to 65536 columns;
    # the long-row shapes (a few rows of 10^5 and more) show the online path, under no target.
    return shape["M"] >= 4096 and shape["N"] <= 65536


def _memory_bound(kernel: str, fwd_ceiling: float, bwd_ceiling: float) -> list[Target]:
    out = []
    for direction, ceiling in (("fwd", fwd_ceiling), ("bwd", bwd_ceiling)):
        out += [
            Target(kernel, direction, f"≥ {ceiling:.2f} × copy ceiling", ceiling, None, _long_rows),
            Target(kernel, direction, "≥ 1.0 × best torch", 1.0, _is_torch, _long_rows),
        ]
    return out


def _cube(*sizes: int) -> Where:
    def where(dtype: str, shape: dict[str, Any]) -> bool:
        return dtype in ("float16", "bfloat16") and shape["M"] == shape["N"] == shape["K"] in sizes

    return where


def _fp8_8192(dtype: str, shape: dict[str, Any]) -> bool:
    return dtype == "float8_e4m3fn" and shape["M"] == shape["N"] == shape["K"] == 8192


#: Every target, in the order of the kernels' chapters.
TARGETS: list[Target] = [
    Target("vector_add", "fwd", "≥ 0.95 × copy ceiling at ≥ 2²⁶ elements", 0.95, None, lambda dtype, s: s["N"] >= 2**26),
    Target("softmax", "fwd", "≥ 0.93 × copy ceiling, N ≤ 16384", 0.93, None, lambda dtype, s: _long_rows(dtype, s) and s["N"] <= 16384),
    Target("softmax", "fwd", "≥ 0.85 × copy ceiling, 16384 < N ≤ 65536", 0.85, None,
           lambda dtype, s: _long_rows(dtype, s) and s["N"] > 16384),
    Target("softmax", "fwd", "≥ 1.0 × best torch", 1.0, _is_torch, _long_rows),
    Target("softmax", "fwd", "≥ 2.0 × torch eager, float16, N = 4096", 2.0, lambda v: v == "torch",
           lambda dtype, s: _long_rows(dtype, s) and dtype == "float16" and s["N"] == 4096),
    Target("softmax", "bwd", "≥ 0.90 × copy ceiling", 0.90, None, _long_rows),
    Target("softmax", "bwd", "≥ 1.0 × best torch", 1.0, _is_torch, _long_rows),
    *_memory_bound("layer_norm", 0.90, 0.85),
    *_memory_bound("rms_norm", 0.90, 0.85),
    Target("transpose", "fwd", "≥ 0.92 × copy ceiling", 0.92),
    Target("transpose", "fwd", "≥ 1.0 × best torch", 1.0, _is_torch),
    Target("matmul", "fwd", "≥ 1.0 × torch (cuBLAS), float16 and bfloat16 at 4096³ and 8192³", 1.0, lambda v: v == "torch",
           _cube(4096, 8192)),
    Target("matmul", "fwd", "≥ 0.9 × torch (cuBLAS), float16 and bfloat16 at 2048³", 0.9, lambda v: v == "torch", _cube(2048)),
    Target("matmul", "fwd", "≥ 1.0 × torch._scaled_mm, float8_e4m3fn at 8192³", 1.0, lambda v: v == "torch", _fp8_8192),
    Target("matmul", "fwd", "fast accumulation: ≥ 1.0 × torch._scaled_mm with use_fast_accum, float8_e4m3fn at 8192³",
           1.0, lambda v: v == "torch-fast-accum", _fp8_8192, ours="step-6-fast-accum"),
    Target("attention", "fwd", "≥ 1.0 × the fastest SDPA backend or FlexAttention, N ≥ 4096", 1.0, _is_torch,
           lambda dtype, s: s["N"] >= 4096),
    Target("attention", "bwd", "≥ 1.0 × the fastest SDPA backend", 1.0, lambda v: v.startswith("torch.sdpa")),
]


def streaming_share(reference: list[tuple[float, float]], n_bytes: float) -> float:
    """The share of the copy ceiling that a plain streaming pass of ``n_bytes`` reached.

    ``reference`` holds ``(bytes moved, share of the ceiling)`` pairs sorted by bytes, as
    :func:`~tritonperf.bench.plotting.size_reference` returns them for torch's vector add. Between
    two of its sizes the share is interpolated linearly in log(bytes); below the smallest and above
    the largest it is that end's share.
    """
    if not reference:
        raise ValueError("no reference sizes: the run recorded no streaming pass to compare with")
    sizes, shares = zip(*reference, strict=True)
    return float(np.interp(math.log(n_bytes), [math.log(b) for b in sizes], shares))


#: The vector add's records that :func:`streaming_cost` fits: calls that move at least this many bytes.
STREAMING_FIT_BYTES = 32 << 20


def _line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Intercept and slope of the least-squares line through ``(xs, ys)`` (two or more distinct xs)."""
    slope, intercept = np.polyfit(xs, ys, 1)
    return float(intercept), float(slope)


def row_costs(doc: dict[str, Any], variant: str = "tritonperf") -> list[dict[str, Any]]:
    """Calls split into a fixed time and a time per row, where a case was recorded at several row counts.

    For each memory-bound kernel (:data:`~tritonperf.bench.plotting.SIZE_KERNELS`), direction,
    dtype and row length ``N`` that ``variant`` was recorded at with two or more row counts ``M``,
    a least-squares line ``time = fixed + per_row * M`` through those records, and one through
    their bytes. The fixed part is what a call costs whatever its rows: launching, filling the GPU
    and draining it, and any work done once a call (a second kernel, say). The per-row part is the
    rate the kernel approaches on many rows.

    Returns one dict per case, sorted by kernel, direction, dtype and ``N``: ``kernel``,
    ``direction``, ``dtype``, ``N``, ``rows`` (the row counts, ascending), ``us`` (each call's
    time in µs), ``shares`` (each call's share of the copy ceiling), ``fixed_us`` and
    ``row_share`` (a row's bytes over a row's time, as a share of the ceiling). Empty when the
    document has no copy ceiling.
    """
    ceiling = doc["ceilings"].get("copy_GBps")
    if not ceiling:
        return []
    cases: dict[tuple, list[dict[str, Any]]] = {}
    for r in summarize(doc):
        if r["kernel"] in SIZE_KERNELS and r["variant"] == variant and r["GBps"] and set(r["shape"]) == {"M", "N"}:
            cases.setdefault((r["kernel"], r["direction"], r["dtype"], r["shape"]["N"]), []).append(r)
    out = []
    for (kernel, direction, dtype, n), recs in sorted(cases.items()):
        recs.sort(key=lambda r: r["shape"]["M"])
        rows = [r["shape"]["M"] for r in recs]
        if len(set(rows)) < 2:
            continue
        fixed_ms, row_ms = _line(rows, [r["ms"] for r in recs])
        _, row_bytes = _line(rows, [bytes_moved(r) for r in recs])
        out.append({"kernel": kernel, "direction": direction, "dtype": dtype, "N": n, "rows": rows,
                    "us": [r["ms"] * 1e3 for r in recs], "shares": [r["GBps"] / ceiling for r in recs],
                    "fixed_us": fixed_ms * 1e3, "row_share": row_bytes / (row_ms * 1e6) / ceiling})
    return out


def streaming_cost(doc: dict[str, Any]) -> tuple[float, float] | None:
    """A plain streaming pass split as :func:`row_costs` splits a kernel's calls: ``(fixed µs, share)``.

    The least-squares line ``time = fixed + bytes / rate`` through torch's vector add records
    (:data:`~tritonperf.bench.plotting.SIZE_REFERENCE`) of at least ``STREAMING_FIT_BYTES``, with
    the rate as a share of the copy ceiling. None without a copy ceiling or two such sizes.
    """
    ceiling = doc["ceilings"].get("copy_GBps")
    kernel, variant = SIZE_REFERENCE
    recs = [r for r in summarize(doc) if (r["kernel"], r["variant"]) == (kernel, variant) and r["GBps"]
            and bytes_moved(r) >= STREAMING_FIT_BYTES]
    if not ceiling or len({bytes_moved(r) for r in recs}) < 2:
        return None
    fixed_ms, ms_per_byte = _line([bytes_moved(r) for r in recs], [r["ms"] for r in recs])
    return fixed_ms * 1e3, 1 / (ms_per_byte * 1e6) / ceiling


def check(doc: dict[str, Any], targets: list[Target] | None = None) -> list[dict[str, Any]]:
    """Hold ``doc`` against each target that has records in it.

    Returns one dict per such target: ``target``, ``shapes`` (how many it applies to), ``met``
    (how many meet it), ``worst`` (the lowest value) and ``worst_at`` (``"dtype shape"`` there).
    A shape where no compared variant was recorded is left out. For a ceiling target of a
    memory-bound kernel (:data:`~tritonperf.bench.plotting.SIZE_KERNELS`) in a run with vector-add
    records, also ``out_of_reach``: how many of the missed shapes a streaming pass of the same
    bytes misses too (:func:`streaming_share`); ``within_reach`` and ``met_within_reach``: at how
    many shapes such a pass meets the target, and at how many of those ours does; and
    ``worst_within_reach`` / ``worst_within_reach_at``: the lowest value among them (None where
    there are none). Elsewhere those five are None. ``misses`` lists every shape that misses the
    target, worst first, as dicts of ``value``, ``at`` and ``within_reach`` (whether a streaming
    pass of the same bytes meets the target; None where the target is not weighed that way).
    """
    rows = summarize(doc)
    reference = size_reference(doc)
    times: dict[tuple, list[tuple[str, float]]] = {}  # case -> (variant, ms) of every variant there
    for r in rows:
        times.setdefault(_case(r), []).append((r["variant"], r["ms"]))
    out = []
    for target in TARGETS if targets is None else targets:
        values = []  # (value, "dtype shape", the same-size pass's share or None)
        sized = target.against is None and target.kernel in SIZE_KERNELS and bool(reference)
        for r in rows:
            if (r["kernel"], r["direction"], r["variant"]) != (target.kernel, target.direction, target.ours):
                continue
            if not target.where(r["dtype"], r["shape"]):
                continue
            if target.against is None:
                if r["pct_of_ceiling"] is None:
                    continue
                value = r["pct_of_ceiling"] / 100
            else:
                theirs = [ms for variant, ms in times[_case(r)] if target.against(variant)]
                if not theirs:
                    continue
                value = min(theirs) / r["ms"]
            reach = streaming_share(reference, bytes_moved(r)) if sized else None
            values.append((value, f"{r['dtype']} {shape_text(r['shape'])}", reach))
        if not values:
            continue
        worst, worst_at, _ = min(values, key=lambda v: v[:2])
        misses = [{"value": v, "at": at, "within_reach": None if reach is None else reach >= target.minimum}
                  for v, at, reach in sorted(values, key=lambda v: v[:2]) if v < target.minimum]
        row = {"target": target, "shapes": len(values), "met": sum(v >= target.minimum for v, _, _ in values),
               "worst": worst, "worst_at": worst_at, "out_of_reach": None, "within_reach": None,
               "met_within_reach": None, "worst_within_reach": None, "worst_within_reach_at": None,
               "misses": misses}
        if sized:
            within = [(v, at) for v, at, reach in values if reach >= target.minimum]
            row["within_reach"] = len(within)
            row["met_within_reach"] = sum(v >= target.minimum for v, _ in within)
            row["out_of_reach"] = (row["shapes"] - row["met"]) - (row["within_reach"] - row["met_within_reach"])
            if within:
                row["worst_within_reach"], row["worst_within_reach_at"] = min(within)
        out.append(row)
    return out


#: Column names of :func:`table_rows`.
TABLE_HEADER = ["kernel", "dir", "target", "met at", "worst", "within reach"]


def table_rows(doc: dict[str, Any]) -> list[list[str]]:
    """Formatted rows of :func:`check`, in the order of :data:`TABLE_HEADER`: each worst value with
    its shape. The last column is empty for the targets that :func:`check` does not hold against a
    streaming pass."""
    out = []
    for c in check(doc):
        within = ""
        if c["within_reach"] is not None:
            within = f"{c['met_within_reach']} of {c['within_reach']}"
            if c["worst_within_reach"] is not None:
                within += f"; {c['worst_within_reach']:.2f}× {c['worst_within_reach_at']}"
        out.append([c["target"].kernel, c["target"].direction, c["target"].text, f"{c['met']} of {c['shapes']}",
                    f"{c['worst']:.2f}× {c['worst_at']}", within])
    return out


#: Column names of :func:`miss_rows`.
MISS_HEADER = ["kernel", "dir", "target", "value", "shape", "same-size pass"]


def miss_rows(doc: dict[str, Any]) -> list[list[str]]:
    """Every shape at which a target of :func:`check` is missed, target by target and worst first,
    in the order of :data:`MISS_HEADER`. The last column says whether a streaming pass of the same
    bytes meets the target there (``meets it``: the miss is our kernel's own) or not (``misses it
    too``); it is empty for the targets that :func:`check` does not weigh that way."""
    reach = {True: "meets it", False: "misses it too", None: ""}
    return [[c["target"].kernel, c["target"].direction, c["target"].text, f"{m['value']:.3f}×", m["at"],
             reach[m["within_reach"]]]
            for c in check(doc) for m in c["misses"]]
