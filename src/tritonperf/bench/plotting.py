"""One plotting helper for every example and the results page."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .records import provenance_text
from .specs import spec_for

UNITS = {"GBps": "GB/s", "TFLOPS": "TFLOPS"}


def caption(doc: dict[str, Any], live: bool) -> str:
    """Where, when and with what a document's numbers were measured."""
    how = "Measured live" if live else "Recorded by `tritonperf bench`"
    return provenance_text(doc["provenance"], how, day_only=True)


def add_caption(fig: Figure, doc: dict[str, Any], live: bool) -> None:
    """Write :func:`caption` in small print along the bottom of ``fig`` and keep the axes clear of it."""
    fig.text(0.01, 0.005, caption(doc, live), fontsize=7, color="#444444", ha="left", va="bottom", wrap=True)
    fig.get_layout_engine().set(rect=(0, 0.06, 1, 0.94))  # room for two lines of caption


def ceiling_for(doc: dict[str, Any], metric: str, dtype: str) -> tuple[str, float] | None:
    """The ceiling a metric is judged against: copy bandwidth, or torch's matmul rate in ``dtype``."""
    short = {"float16": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8"}.get(dtype)
    key = "copy_GBps" if metric == "GBps" else f"matmul_{short}_TFLOPS"
    value = doc["ceilings"].get(key)
    return (key, value) if value else None


def variant_order(variant: str) -> tuple:
    """Sort key: ours first, then the torch baselines, then the teaching steps."""
    return (not variant.startswith("tritonperf"), not variant.startswith("torch"), variant)


def plot_results(
    doc: dict[str, Any],
    kernel: str,
    dtype: str,
    *,
    live: bool,
    direction: str = "fwd",
    title: str | None = None,
    select: Callable[[dict[str, Any]], bool] | None = None,
    series: Sequence[str] | None = None,
) -> Figure:
    """Rate of every variant of ``kernel`` in one document, with the measured ceiling.

    Rate against the spec's x key (one line per variant and value of the ``series`` shape keys)
    when that gives lines of several points; otherwise grouped bars, one group per shape. The
    caption under the plot says where and when the numbers were measured, and whether they were
    measured live or read from recorded results.

    Args:
        select: keeps only the records whose shape it accepts, e.g. ``lambda s: s["D"] == 128``.
        series: the shape keys whose values split the lines (default: every key but the x key).
            Keys that change together with x, like the batch of an attention run whose tokens
            are fixed, belong out of it.
    """
    spec = spec_for(kernel, direction)
    metric, x = spec.metric, spec.x
    rows = [
        r for r in doc["records"]
        if r["kernel"] == kernel and r["dtype"] == dtype and r["direction"] == direction and (select is None or select(r["shape"]))
    ]
    if not rows:
        raise ValueError(f"no {direction} records of {kernel} in {dtype}")
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        rest = ", ".join(f"{k}={v}" for k, v in r["shape"].items() if k != x and (series is None or k in series))
        label = f"{r['variant']} ({rest})" if rest else r["variant"]
        lines[label].append((r["shape"][x], r[metric]))

    # A white face keeps the figure readable on the site's dark theme too.
    fig, ax = plt.subplots(figsize=(8, 4.8), facecolor="white", layout="constrained")
    if all(len(points) == 1 for points in lines.values()):
        _bars(ax, rows, metric)
    else:
        for label, points in sorted(lines.items(), key=lambda kv: variant_order(kv[0])):
            xs, ys = zip(*sorted(points), strict=True)
            ours = label.startswith("tritonperf")
            # Ours on top and thicker: it often overlaps the best baseline.
            ax.plot(xs, ys, marker="o", linewidth=2.4 if ours else 1.4, zorder=3 if ours else 2, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(x)
    ceiling = ceiling_for(doc, metric, dtype)
    if ceiling:
        name, value = ceiling
        ax.axhline(value, color="black", linestyle="--", linewidth=1, label=f"ceiling: {name} = {value:,.0f}")
    ax.set_ylabel(UNITS[metric])
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small", framealpha=0.9)
    ax.set_title(title or f"{kernel} {direction}, {dtype}")
    add_caption(fig, doc, live)
    return fig


def _bars(ax, rows: list[dict[str, Any]], metric: str) -> None:
    shapes = list(dict.fromkeys(" × ".join(str(v) for v in r["shape"].values()) for r in rows))
    variants = sorted({r["variant"] for r in rows}, key=variant_order)
    width = 0.8 / len(variants)
    for i, variant in enumerate(variants):
        rates = {" × ".join(str(v) for v in r["shape"].values()): r[metric] for r in rows if r["variant"] == variant}
        xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(shapes))]
        ax.bar(xs, [rates.get(s, 0) for s in shapes], width, label=variant, zorder=3)
    ax.set_xticks(range(len(shapes)), shapes)
    ax.set_xlabel(" × ".join(rows[0]["shape"]))


#: The memory-bound kernels that :func:`plot_sizes` places against the bytes they move.
SIZE_KERNELS = ("softmax", "layer_norm", "rms_norm", "transpose")
#: The streaming pass that draws :func:`plot_sizes`' reference line: torch's ``a + b``.
SIZE_REFERENCE = ("vector_add", "torch")


def bytes_moved(record: dict[str, Any]) -> float:
    """Bytes one call of a record moves (its byte count, recovered from its rate and time)."""
    return record["GBps"] * record["ms"] * 1e6


def size_reference(doc: dict[str, Any]) -> list[tuple[float, float]]:
    """``(bytes moved, share of the copy ceiling)`` of torch's vector add in ``doc``, by size.

    Empty when the document has no copy ceiling or no such records.
    """
    ceiling = doc["ceilings"].get("copy_GBps")
    kernel, variant = SIZE_REFERENCE
    if not ceiling:
        return []
    return sorted((bytes_moved(r), r["GBps"] / ceiling) for r in doc["records"]
                  if r["kernel"] == kernel and r["variant"] == variant)


def size_text(n_bytes: float) -> str:
    """A byte count in the largest binary unit that keeps it at least 1: ``"4 MiB"``, ``"1.5 GiB"``."""
    units = ("B", "KiB", "MiB", "GiB")
    i = 0
    while n_bytes >= 1024 and i < len(units) - 1:
        n_bytes /= 1024
        i += 1
    return f"{n_bytes:.3g} {units[i]}"


def plot_sizes(doc: dict[str, Any], *, live: bool) -> Figure | None:
    """Share of the copy ceiling against the bytes a call moves, for the memory-bound kernels.

    One marker per record of our kernels (:data:`SIZE_KERNELS`; forward filled, backward open),
    every shape and dtype, and a line through torch's vector add (:data:`SIZE_REFERENCE`), a
    plain streaming pass: a kernel near that line runs as fast as any pass over its bytes does;
    one far below it loses time of its own. None when ``doc`` has no copy ceiling, no vector add
    records or no records of those kernels.
    """
    reference = size_reference(doc)
    if not reference:
        return None
    ceiling = doc["ceilings"]["copy_GBps"]
    points: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in doc["records"]:
        if r["kernel"] in SIZE_KERNELS and r["variant"] == "tritonperf" and r["GBps"]:
            points[(r["kernel"], r["direction"])].append((bytes_moved(r), r["GBps"] / ceiling))
    if not points:
        return None

    fig, ax = plt.subplots(figsize=(8, 4.8), facecolor="white", layout="constrained")
    xs, ys = zip(*reference, strict=True)
    ax.plot(xs, ys, color="black", linewidth=1.4, marker=".", label="torch a + b (vector add)", zorder=2)
    colors = dict(zip(SIZE_KERNELS, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for (kernel, direction), kernel_points in sorted(points.items()):
        xs, ys = zip(*kernel_points, strict=True)
        filled = direction == "fwd"
        ax.scatter(xs, ys, s=28, label=f"{kernel} {direction}", zorder=3, edgecolors=colors[kernel],
                   facecolors=colors[kernel] if filled else "none", marker="o" if filled else "s")
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label=f"copy ceiling = {ceiling:,.0f} GB/s")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(lambda value, _: size_text(value))
    ax.set_xlabel("bytes one call moves")
    ax.set_ylabel("share of the copy ceiling")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    # Small calls sit low on the left, so the upper left corner stays free for the legend.
    ax.legend(loc="upper left", fontsize="small", framealpha=0.9)
    ax.set_title("memory-bound kernels against the bytes they move (tritonperf, every dtype)")
    add_caption(fig, doc, live)
    return fig
