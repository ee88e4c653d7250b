"""The roofline of a recorded run: every kernel's rate against its arithmetic intensity.

A kernel that performs ``F`` floating-point operations while moving ``B`` bytes has an
arithmetic intensity of ``F / B`` operations per byte. With a memory bandwidth ``W`` (bytes/s)
and a compute peak ``P`` (operations/s), it cannot run faster than ``min(P, W * F / B)``: the
roof. Both ceilings come from the same run as the records (``copy_GBps`` and torch's matmul).

Matmul and attention records carry their own operation counts (attention: its matmuls only).
The memory-bound kernels are recorded in GB/s; for them this module counts operations per
element of the ``M x N`` (or ``N``) input with the convention below, forward passes only: any
fair count gives an intensity far below one operation per byte, which is the point the
roofline makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .plotting import add_caption

#: Operations counted per input element of a forward pass. Vector add 1 (the add), softmax 5
#: (max, subtract, exp, sum, scale), layer norm 7 (mean, subtract, square, variance sum, scale by
#: 1/std, weight, bias), RMS norm 4 (square, sum, scale, weight). Transpose computes nothing and
#: has no place on a logarithmic intensity axis.
FLOPS_PER_ELEMENT: dict[str, int] = {"vector_add": 1, "softmax": 5, "layer_norm": 7, "rms_norm": 4}


@dataclass(frozen=True)
class Point:
    """One record placed on the roofline."""

    kernel: str
    dtype: str
    shape: dict[str, Any]
    intensity: float  # operations per byte
    tflops: float  # achieved, 10^12 operations per second
    roof: float  # the roof at this intensity, TFLOPS


def _elements(shape: dict[str, Any]) -> int:
    return shape["N"] * shape.get("M", 1)


def peak_tflops(doc: dict[str, Any]) -> float:
    """The highest 16-bit matmul rate of the run (the Tensor Cores' measured ceiling)."""
    rates = [doc["ceilings"][k] for k in ("matmul_fp16_TFLOPS", "matmul_bf16_TFLOPS") if k in doc["ceilings"]]
    if not rates:
        raise ValueError("the document has no 16-bit matmul ceiling")
    return max(rates)


def roof(doc: dict[str, Any], intensity: float, dtype: str | None = None) -> float:
    """The roof in TFLOPS at ``intensity`` operations per byte.

    The compute ceiling is the 16-bit one, or the run's float8 matmul ceiling for a float8
    ``dtype`` (the Tensor Cores run float8 at twice the 16-bit rate).
    """
    peak = peak_tflops(doc)
    if dtype and dtype.startswith("float8") and "matmul_fp8_TFLOPS" in doc["ceilings"]:
        peak = doc["ceilings"]["matmul_fp8_TFLOPS"]
    return min(peak, doc["ceilings"]["copy_GBps"] * intensity * 1e-3)


def ridge(doc: dict[str, Any]) -> float:
    """The intensity (operations per byte) where the bandwidth roof meets the compute roof."""
    return peak_tflops(doc) / (doc["ceilings"]["copy_GBps"] * 1e-3)


def points(doc: dict[str, Any], variant: str = "tritonperf") -> list[Point]:
    """Every forward record of ``variant`` that has a place on the roofline."""
    out = []
    for r in doc["records"]:
        if r["variant"] != variant or r["direction"] != "fwd":
            continue
        if r["TFLOPS"]:  # matmul and attention count their own operations
            flops = r["TFLOPS"] * r["ms"] * 1e9
            nbytes = (r["GBps"] or 0) * r["ms"] * 1e6
            tflops = r["TFLOPS"]
        elif r["kernel"] in FLOPS_PER_ELEMENT and r["GBps"]:
            flops = FLOPS_PER_ELEMENT[r["kernel"]] * _elements(r["shape"])
            nbytes = r["GBps"] * r["ms"] * 1e6
            tflops = flops / r["ms"] * 1e-9
        else:
            continue
        if nbytes <= 0:
            continue
        intensity = flops / nbytes
        out.append(Point(r["kernel"], r["dtype"], dict(r["shape"]), intensity, tflops, roof(doc, intensity, r["dtype"])))
    return out


def plot_roofline(doc: dict[str, Any], *, live: bool = False) -> Figure:
    """Log-log roofline of one results document, with every placeable forward record of ``tritonperf``."""
    pts = points(doc)
    fig, ax = plt.subplots(figsize=(8, 5), facecolor="white", layout="constrained")
    lo = min([p.intensity for p in pts] + [0.05]) / 2
    hi = max([p.intensity for p in pts] + [ridge(doc) * 8])
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [roof(doc, x) for x in xs], color="black", linewidth=1.5,
            label=f"roof: copy {doc['ceilings']['copy_GBps']:,.0f} GB/s, matmul {peak_tflops(doc):,.0f} TFLOPS")
    if any(p.dtype.startswith("float8") for p in pts) and "matmul_fp8_TFLOPS" in doc["ceilings"]:
        ax.plot(xs, [roof(doc, x, "float8") for x in xs], color="black", linewidth=1, linestyle="--",
                label=f"float8 roof: matmul {doc['ceilings']['matmul_fp8_TFLOPS']:,.0f} TFLOPS")
    ax.axvline(ridge(doc), color="gray", linestyle=":", linewidth=1, label=f"ridge point: {ridge(doc):,.0f} FLOP/byte")
    for kernel in sorted({p.kernel for p in pts}):
        mine = [p for p in pts if p.kernel == kernel]
        ax.scatter([p.intensity for p in mine], [p.tflops for p in mine], s=18, label=kernel, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("TFLOPS")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small", framealpha=0.9)
    ax.set_title(f"Roofline, {doc['provenance']['gpu']}: every forward pass of tritonperf")
    add_caption(fig, doc, live)
    return fig


def roofline_table(doc: dict[str, Any]) -> str:
    """Markdown: for each kernel and dtype, the range of intensities and of the share of the roof reached."""
    from .report import markdown_table

    def span(values: list[float], fmt: str) -> str:
        return f"{fmt.format(min(values))} – {fmt.format(max(values))}"

    pts = points(doc)
    rows = []
    for kernel, dtype in sorted({(p.kernel, p.dtype) for p in pts}):
        mine = [p for p in pts if (p.kernel, p.dtype) == (kernel, dtype)]
        rows.append([
            kernel, dtype, str(len(mine)), span([p.intensity for p in mine], "{:.3g}"),
            span([p.tflops for p in mine], "{:.3g}"), span([100 * p.tflops / p.roof for p in mine], "{:.0f}%"),
        ])
    header = ["kernel", "dtype", "records", "intensity (FLOP/byte)", "TFLOPS reached", "share of the roof"]
    return markdown_table(header, rows, right=(2,)) + "\n"
