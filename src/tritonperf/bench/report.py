"""Summaries of results documents: % of ceiling, speedup over the best torch variant, comparisons."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from typing import Any

from .plotting import UNITS, ceiling_for, variant_order
from .specs import SPECS

# Records that measure the GPU rather than a kernel. The memory-hierarchy probe only reads, so a
# share of the copy ceiling (a read and a write per byte) would misstate it.
PROBES = frozenset({"memory_hierarchy"})


def _case(r: dict[str, Any]) -> tuple:
    return (r["kernel"], r["direction"], r["dtype"], tuple(sorted(r["shape"].items())))


def metric_of(r: dict[str, Any]) -> str:
    """``"TFLOPS"`` where the record counts operations, else ``"GBps"``."""
    return "TFLOPS" if r["TFLOPS"] is not None else "GBps"


def summarize(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per record with ``pct_of_ceiling`` and ``vs_best_torch`` (time of the best torch / own time).

    ``pct_of_ceiling`` is None for the probes (``PROBES``) and where the document has no ceiling.
    """
    best_torch: dict[tuple, float] = {}
    for r in doc["records"]:
        if r["variant"].startswith("torch"):
            key = _case(r)
            best_torch[key] = min(best_torch.get(key, float("inf")), r["ms"])
    rows = []
    for r in doc["records"]:
        metric = metric_of(r)
        ceiling = None if r["kernel"] in PROBES else ceiling_for(doc, metric, r["dtype"])
        rate = r[metric]
        torch_ms = best_torch.get(_case(r))
        rows.append({
            **r,
            "metric": metric,
            "rate": rate,
            "pct_of_ceiling": 100 * rate / ceiling[1] if ceiling and rate else None,
            "vs_best_torch": torch_ms / r["ms"] if torch_ms else None,
        })
    return rows


def shape_text(shape: dict[str, Any]) -> str:
    """``{"M": 4, "N": 8}`` -> ``"M=4 N=8"``."""
    return " ".join(f"{k}={v}" for k, v in shape.items())


def table_rows(doc: dict[str, Any]) -> list[list[str]]:
    """Formatted rows for a results table, in the order of :data:`TABLE_HEADER`."""
    out = []
    for r in summarize(doc):
        unit = "TFLOPS" if r["metric"] == "TFLOPS" else "GB/s"
        out.append([
            r["kernel"], r["direction"], r["dtype"], shape_text(r["shape"]), r["variant"],
            f"{r['ms'] * 1e3:,.1f}", f"{r['rate']:,.0f} {unit}" if r["rate"] else "–",
            f"{r['pct_of_ceiling']:.0f}%" if r["pct_of_ceiling"] is not None else "–",
            f"{r['vs_best_torch']:.2f}×" if r["vs_best_torch"] is not None else "–",
        ])
    return out


#: Column names of :func:`table_rows`.
TABLE_HEADER = ["kernel", "dir", "dtype", "shape", "variant", "time (µs)", "rate", "% of ceiling", "vs best torch"]


def compare(new: dict[str, Any], old: dict[str, Any]) -> list[dict[str, Any]]:
    """Records present in both documents, with ``ratio`` = old time / new time (> 1: new is faster)."""
    old_by_key = {(_case(r), r["variant"]): r for r in old["records"]}
    rows = []
    for r in new["records"]:
        o = old_by_key.get((_case(r), r["variant"]))
        if o:
            rows.append({**r, "ms_old": o["ms"], "ratio": o["ms"] / r["ms"]})
    return rows


def drift(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """How far the rows of :func:`compare` moved, kernel by kernel.

    The change of a row is ``|ratio - 1|``. Each entry has ``kernel``, ``records``, ``median`` and
    ``p90`` of the changes (nine rows in ten moved by ``p90`` or less) and ``largest``, the row that
    moved most; kernels appear in the order of their first row. Short calls drift more than long
    ones: filter ``rows`` by ``ms_old`` to keep them apart.
    """
    by_kernel: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_kernel.setdefault(r["kernel"], []).append(r)
    out = []
    for kernel, group in by_kernel.items():
        changes = [abs(r["ratio"] - 1) for r in group]  # median and quantiles sort for themselves
        p90 = statistics.quantiles(changes, n=10, method="inclusive")[-1] if len(changes) > 1 else changes[0]
        out.append({"kernel": kernel, "records": len(group), "median": statistics.median(changes), "p90": p90,
                    "largest": max(group, key=lambda r: abs(r["ratio"] - 1))})
    return out


def markdown_table(header: list[str], rows: list[list[str]], right: Iterable[int] = ()) -> str:
    """A Markdown pipe table (cells must not contain ``|``); columns numbered in ``right`` align right."""
    right = set(right)
    lines = ["| " + " | ".join(header) + " |", "|" + "".join("---:|" if i in right else "---|" for i in range(len(header)))]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def across_gpus_table(docs: list[dict[str, Any]]) -> str:
    """Markdown: the package's kernels on each GPU, side by side, over the cases every document holds.

    One row per kernel and direction; for each GPU, the median share of its own ceiling and the
    median speed over the best torch variant, of the ``tritonperf`` records. Cases missing from
    any document are left out, so that every column summarizes the same shapes and dtypes.
    """
    # Kernels compared with torch only: the memory-hierarchy probe measures the GPU, not a kernel.
    rows_by_doc = [[r for r in summarize(doc) if r["variant"] == "tritonperf" and r["vs_best_torch"] is not None]
                   for doc in docs]
    common = set.intersection(*({_case(r) for r in rows} for rows in rows_by_doc))
    header = ["kernel", "dir", "cases"]
    for doc in docs:
        header += [f"{doc['provenance']['gpu']}: % of ceiling", f"{doc['provenance']['gpu']}: vs best torch"]
    table = []
    order = list(SPECS)  # the kernels in the benchmark's order, each forward before its backward

    def position(kernel_direction: tuple[str, str]) -> tuple:
        kernel, direction = kernel_direction
        return (order.index(kernel) if kernel in order else len(order), kernel, direction != "fwd")

    for kernel, direction in sorted({c[:2] for c in common}, key=position):
        cases = {c for c in common if c[:2] == (kernel, direction)}
        row = [kernel, direction, str(len(cases))]
        for rows in rows_by_doc:
            chosen = [r for r in rows if _case(r) in cases]
            row += [_median_text([r["pct_of_ceiling"] for r in chosen], "{:.0f}%"),
                    _median_text([r["vs_best_torch"] for r in chosen], "{:.2f}×")]
        table.append(row)
    return markdown_table(header, table, right=range(2, len(header)))


def _median_text(values: list, fmt: str) -> str:
    present = [v for v in values if v is not None]
    return fmt.format(statistics.median(present)) if present else "–"


def results_page(paths: list, image_dir, image_url: str) -> str:
    """Markdown for the site's results page: per GPU file, provenance, ceilings, plots and a table.

    Plots are written to ``image_dir`` and linked as ``image_url/<name>.png``.
    """
    from pathlib import Path

    import matplotlib.pyplot as plt

    from . import records, targets
    from .plotting import caption, plot_results, plot_sizes

    image_dir = Path(image_dir)
    image_dir.mkdir(parents=True, exist_ok=True)
    if not paths:
        return "No results have been recorded yet. Run `nox -s bench` on a GPU to make the first file.\n"
    parts = []
    docs = {path: records.load(path) for path in sorted(paths)}
    if len(docs) > 1:
        ceilings = "; ".join(f"{doc['provenance']['gpu']} {doc['ceilings']['copy_GBps']:,.0f} GB/s"
                             for doc in docs.values() if doc["ceilings"].get("copy_GBps"))
        parts.append("## Across GPUs\n\nThe package's kernels on each GPU recorded here, as medians over the cases "
                     "(kernel, direction, dtype and shape) that every file holds. Each share is of the GPU's own "
                     "ceiling, measured in its run, over the cases that have one (float32 matmuls have none); "
                     f"the copy ceilings: {ceilings}.\n\n"
                     + across_gpus_table(list(docs.values())) + "\n")
    for path, doc in docs.items():
        p = doc["provenance"]
        slug = Path(path).stem
        parts.append(f"## {p['gpu']}\n\n{caption(doc, live=False)}. Command: `{p['command']}`; file `{Path(path).name}`.\n")
        ceil_rows = [[k, f"{v:,.1f}"] for k, v in doc["ceilings"].items()]
        parts.append("Ceilings measured in the same run:\n\n" + markdown_table(["ceiling", "value"], ceil_rows) + "\n")
        # "9 of 18" on one line: the target's text and the shapes are what should wrap.
        target_rows = [[*row[:3], row[3].replace(" ", "\u00a0"), row[4], row[5].replace(" of ", "\u00a0of\u00a0", 1)]
                       for row in targets.table_rows(doc)]
        if target_rows:
            parts.append("The package's targets, held against this run (the worst value is a share of the ceiling, "
                         "or a speed over the torch variants named):\n\n"
                         + markdown_table(targets.TABLE_HEADER, target_rows, right=(3,)) + "\n")
        fig = plot_sizes(doc, live=False)
        if fig is not None:
            fig.savefig(image_dir / f"{slug}-sizes.png", dpi=110)
            plt.close(fig)
            parts.append(sizes_text(doc) + f"\n\n![memory-bound kernels by bytes moved on {p['gpu']}]({image_url}/{slug}-sizes.png)\n")
        if costs := row_costs_text(doc):
            parts.append(costs)
        cases = sorted({(r["kernel"], r["direction"], r["dtype"]) for r in doc["records"]})
        for kernel, direction, dtype in cases:
            parts.append(f"### {kernel} {direction}, {dtype}\n")
            # Each plot is followed by the table of its own shapes: one table for every shape of a
            # case would be too wide to read, and its shapes would wrap.
            for i, (label, select, series) in enumerate(plot_groups(doc, kernel, direction, dtype)):
                name = f"{slug}-{kernel}-{direction}-{dtype}-{i}".replace("+", "-")
                title = f"{kernel} {direction}, {dtype}" + (f", {label}" if label else "")
                fig = plot_results(doc, kernel, dtype, live=False, direction=direction, title=title, select=select,
                                   series=series)
                fig.savefig(image_dir / f"{name}.png", dpi=110)
                plt.close(fig)
                parts.append(f"![{title} on {p['gpu']}]({image_url}/{name}.png)\n")
                # The plot's title names attention's head dim and causality: its table need not.
                omit = ("D", "causal") if kernel == "attention" else ()
                header, rows = pivot(doc, kernel, direction, dtype, select, omit)
                parts.append(markdown_table(header, rows, right=range(1, len(header))) + "\n")
    return "\n".join(parts)


def sizes_text(doc: dict[str, Any]) -> str:
    """The paragraph over the results page's size plot, its figures read from ``doc``."""
    from .plotting import size_reference, size_text

    reference = size_reference(doc)

    def reached(share: float) -> str:
        sizes = [n for n, s in reference if s >= share]
        return f"from {size_text(sizes[0])} a call" if sizes else "at no size of this run"

    return (
        "Where the memory-bound kernels stand against the bytes one call moves, every shape and dtype of the run. "
        "The line is torch's vector add, a plain pass over its inputs: it reaches half the copy ceiling "
        f"{reached(0.5)}, 90% {reached(0.9)}. A call that moves a few MiB lasts a few microseconds, and the "
        "time to launch it, fill the GPU and drain it is a large part of that: a marker near the line is as fast "
        "as any pass over that many bytes; one well below it loses time of its own."
    )


def row_costs_text(doc: dict[str, Any]) -> str:
    """The results page's split of our memory-bound calls into a fixed cost and a cost per row
    (:func:`~tritonperf.bench.targets.row_costs`), with its paragraph; empty when no case of the
    run was recorded at two row counts."""
    from .plotting import size_text
    from .targets import STREAMING_FIT_BYTES, row_costs, streaming_cost

    costs = row_costs(doc)
    if not costs:
        return ""
    header = ["kernel", "dir", "dtype", "N", "rows", "µs a call", "% of ceiling", "fixed µs", "per row: % of ceiling"]
    rows = [[c["kernel"], c["direction"], c["dtype"], str(c["N"]), " / ".join(map(str, c["rows"])),
             " / ".join(f"{us:.1f}" for us in c["us"]), " / ".join(f"{s:.0%}" for s in c["shares"]),
             f"{c['fixed_us']:.1f}", f"{c['row_share']:.0%}"] for c in costs]
    streaming = streaming_cost(doc)
    reference = (f" Torch's vector add, fitted the same way over its calls of {size_text(STREAMING_FIT_BYTES)} and "
                 f"more, costs {streaming[0]:.1f} µs a call and then moves its bytes at {streaming[1]:.0%} of the "
                 "ceiling." if streaming else "")
    return (
        "Where the run holds a case at two row counts or more, a line through its times splits each call into "
        "a fixed cost, paid whatever the rows, and a cost per row. The fixed part is launching, filling the GPU "
        "and draining it, and any work done once a call, such as the backward's second kernel that adds up "
        "the weight gradients; the per-row part is the rate the kernel approaches on many rows, as a share "
        "of the copy ceiling. A kernel with a high per-row share and a low share at few rows loses to its fixed "
        "cost, not to its loop." + reference + "\n\n"
        + markdown_table(header, rows, right=range(3, len(header))) + "\n"
    )


def plot_groups(doc: dict[str, Any], kernel: str, direction: str, dtype: str) -> list[tuple[str, Any, Any]]:
    """``(label, select, series)`` for each plot of one case, as ``plot_results`` takes them.

    One plot for most kernels. The matmul's square sizes and its transformer shapes get one each;
    attention one per head dim and causality, with ``B`` and ``H`` (which change with ``N``) left
    out of the lines' labels.
    """
    def square(shape: dict[str, Any]) -> bool:
        return shape["M"] == shape["N"] == shape["K"]

    shapes = [r["shape"] for r in doc["records"] if (r["kernel"], r["direction"], r["dtype"]) == (kernel, direction, dtype)]
    if kernel == "matmul":
        groups = [("square M = N = K", square, ()), ("transformer shapes", lambda shape: not square(shape), None)]
        return [g for g in groups if any(g[1](shape) for shape in shapes)]
    if kernel == "attention":
        cases = sorted({(shape["D"], shape["causal"]) for shape in shapes})
        return [(f"D = {d}, {'causal' if causal else 'full'}",
                 lambda shape, d=d, causal=causal: (shape["D"], shape["causal"]) == (d, causal), ()) for d, causal in cases]
    return [("", None, None)]


def pivot(
    doc: dict[str, Any], kernel: str, direction: str, dtype: str, select: Callable[[dict[str, Any]], bool] | None = None,
    omit: Iterable[str] = (),
) -> tuple[list[str], list[list[str]]]:
    """One row per shape: our rate, as % of ceiling and against the best torch, then one rate column
    per other variant.

    ``select``, if given, keeps the shapes it returns True for; the shape column leaves out the
    keys in ``omit``. A shape's text does not wrap. Our columns come first so that a table wider
    than the page, scrolled sideways, still shows them beside the shape.
    """
    rows = [r for r in summarize(doc) if (r["kernel"], r["direction"], r["dtype"]) == (kernel, direction, dtype)
            and (select is None or select(r["shape"]))]
    variants = sorted({r["variant"] for r in rows} - {"tritonperf"}, key=variant_order)
    unit = "TFLOPS" if rows and rows[0]["metric"] == "TFLOPS" else "GB/s"
    by_shape: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        text = shape_text({k: v for k, v in r["shape"].items() if k not in omit}).replace(" ", "\u00a0")  # no-break spaces
        by_shape.setdefault(text, {})[r["variant"]] = r

    def rate(cells: dict[str, dict[str, Any]], variant: str) -> str:
        return f"{cells[variant]['rate']:,.0f}" if variant in cells and cells[variant]["rate"] else "–"

    table = []
    for shape, cells in by_shape.items():
        ours = cells.get("tritonperf")
        table.append([
            shape,
            rate(cells, "tritonperf"),
            f"{ours['pct_of_ceiling']:.0f}%" if ours and ours["pct_of_ceiling"] is not None else "–",
            f"{ours['vs_best_torch']:.2f}×" if ours and ours["vs_best_torch"] is not None else "–",
            *(rate(cells, v) for v in variants),
        ])
    # The unit is said once, in the first column's header, to keep the variants' columns narrow.
    header = [f"shape (rates in {unit})", "tritonperf", "tritonperf: % of ceiling", "tritonperf vs best torch", *variants]
    return header, table


def memory_levels_table(docs: list[dict[str, Any]]) -> str:
    """A Markdown table of each document's memory-hierarchy sweep: L2 plateau, HBM, cliff, copy ceiling."""
    from .memory import hierarchy_levels

    rows = []
    for doc in docs:
        try:
            lv = hierarchy_levels(doc)
        except ValueError:
            continue
        p = doc["provenance"]
        rows.append([
            p["gpu"], f"{lv.l2:,.0f} GB/s", f"{lv.hbm:,.0f} GB/s", f"{lv.l2 / lv.hbm:.1f}x",
            f"{lv.last_fast:g} and {lv.first_slow:g} MiB", f"{doc['ceilings']['copy_GBps']:,.0f} GB/s",
            f"{p['date'][:10]}, triton {p['triton']}, torch {p['torch']}, commit {p['git_commit']}",
        ])
    if not rows:
        return "No recorded memory-hierarchy sweep yet: run `tritonperf bench memory_hierarchy` on a GPU.\n"
    header = ["GPU", "L2 plateau (reads)", "HBM (reads)", "L2 / HBM", "cliff between", "copy ceiling (read + write)", "recorded"]
    return markdown_table(header, rows, right=(1, 2, 3, 5)) + "\n"


def roofline_page(paths: list, image_dir, image_url: str) -> str:
    """Markdown for the roofline chapter: per results file, the plot, the ridge point and a table.

    Plots are written to ``image_dir`` and linked as ``image_url/<name>.png``.
    """
    from pathlib import Path

    import matplotlib.pyplot as plt

    from . import records
    from .plotting import caption
    from .roofline import peak_tflops, plot_roofline, ridge, roofline_table

    image_dir = Path(image_dir)
    image_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    for path in sorted(paths):
        doc = records.load(path)
        try:
            peak = peak_tflops(doc)
        except ValueError:
            continue
        p, slug = doc["provenance"], Path(path).stem
        fig = plot_roofline(doc)
        fig.savefig(image_dir / f"{slug}.png", dpi=110)
        plt.close(fig)
        parts.append(
            f"### {p['gpu']}\n\n![roofline of {p['gpu']}]({image_url}/{slug}.png)\n\n{caption(doc, live=False)}.\n\n"
            f"Copy ceiling {doc['ceilings']['copy_GBps']:,.0f} GB/s, 16-bit matmul ceiling {peak:,.0f} TFLOPS: "
            f"the ridge point is at **{ridge(doc):,.0f} FLOP per byte**.\n\n" + roofline_table(doc)
        )
    return "\n".join(parts) or "No recorded run with a matmul ceiling yet: run `nox -s bench` on a GPU.\n"


#: The attention shape of the strategies table, 16k tokens of 16 heads of 128, not causal.
ATTENTION_CASE = {"B": 4, "H": 16, "N": 4096, "D": 128, "causal": False}
#: The optimization chapter's before/after pairs, each a tuple of strategy, lesson page, kernel,
#: direction, dtype, shape, variant before and variant after. Both variants come from one run.
STRATEGIES: list[tuple[str, str, str, str, str, dict[str, int | bool], str, str]] = [
    ("fusion: one kernel instead of three", "plot_02_softmax", "softmax", "fwd", "float16", {"M": 4096, "N": 4096},
     "step-1-unfused", "step-2-fused-row"),
    ("coalescing: 2-D tiles instead of rows", "plot_04_transpose", "transpose", "fwd", "float32", {"M": 8192, "N": 8192},
     "step-1-row-per-program", "step-3-tiles"),
    ("coalescing the writes only", "plot_04_transpose", "transpose", "fwd", "float32", {"M": 8192, "N": 8192},
     "step-1-row-per-program", "step-2-coalesced-writes"),
    ("tile shape and num_warps tuned", "plot_04_transpose", "transpose", "fwd", "float16", {"M": 8192, "N": 8192},
     "step-3-tiles", "step-4-tuned"),
    ("TMA (tensor descriptors) instead of pointer tiles", "plot_04_transpose", "transpose", "fwd", "float16",
     {"M": 8192, "N": 8192}, "step-4-tuned", "step-5-tma"),
    ("two 16-bit elements to a 32-bit word", "plot_04_transpose", "transpose", "fwd", "float16",
     {"M": 8192, "N": 8192}, "step-4-tuned", "step-6-pairs"),
    ("wide blocks: vectorized loads", "plot_01_vector_add", "vector_add", "fwd", "float16", {"N": 1 << 26},
     "step-1-block-128", "tritonperf"),
    ("num_warps scaled with the row", "plot_03_layer_norm", "layer_norm", "fwd", "float16", {"M": 4096, "N": 4096},
     "step-1-row-4-warps", "step-2-row-scaled-warps"),
    ("num_warps scaled with the row", "plot_03_layer_norm", "layer_norm", "fwd", "float16", {"M": 4096, "N": 16384},
     "step-1-row-4-warps", "step-2-row-scaled-warps"),
    ("partial sums instead of atomics", "plot_03_layer_norm", "layer_norm", "bwd", "float16", {"M": 4096, "N": 4096},
     "step-1-atomic-sums", "tritonperf"),
    ("Tensor Cores: tf32 instead of float32 FMA", "plot_06_matmul", "matmul", "fwd", "float32",
     {"M": 4096, "N": 4096, "K": 4096}, "step-3-autotuned-fp32-fma", "step-3-autotuned"),
    ("grouped program order (L2 reuse)", "plot_06_matmul", "matmul", "fwd", "float16", {"M": 8192, "N": 8192, "K": 8192},
     "step-1-tiles", "step-2-grouped"),
    ("software pipelining: 4 stages instead of 1", "plot_06_matmul", "matmul", "fwd", "float16",
     {"M": 8192, "N": 8192, "K": 8192}, "step-2-grouped-1-stage", "step-2-grouped"),
    ("autotuned tiles, warps and stages", "plot_06_matmul", "matmul", "fwd", "float16", {"M": 8192, "N": 8192, "K": 8192},
     "step-2-grouped", "step-3-autotuned"),
    ("persistent grid with TMA", "plot_06_matmul", "matmul", "fwd", "float16", {"M": 8192, "N": 8192, "K": 8192},
     "step-3-autotuned", "step-4-persistent-tma"),
    ("warp specialization: copy and compute warp groups", "plot_06_matmul", "matmul", "fwd", "float16",
     {"M": 8192, "N": 8192, "K": 1024}, "step-4-persistent-tma", "step-4-warp-specialized"),
    ("warp specialization: copy and compute warp groups", "plot_06_matmul", "matmul", "fwd", "float16",
     {"M": 8192, "N": 8192, "K": 8192}, "step-4-persistent-tma", "step-4-warp-specialized"),
    ("float8 fast accumulation: no float32 partial sums", "plot_06_matmul", "matmul", "fwd", "float8_e4m3fn",
     {"M": 8192, "N": 8192, "K": 8192}, "tritonperf", "step-6-fast-accum"),
    ("fused epilogue (GELU)", "plot_06_matmul", "matmul", "fwd", "float16", {"M": 4096, "N": 4096, "K": 4096},
     "torch-matmul-then-gelu", "step-5-fused-gelu"),
    ("fusion with an online softmax: no N × N scores in memory", "plot_07_attention", "attention", "fwd", "float16",
     ATTENTION_CASE, "step-1-naive", "step-2-one-config"),
    ("blocks, warps and stages per head dim", "plot_07_attention", "attention", "fwd", "float16", ATTENTION_CASE,
     "step-2-one-config", "step-3-tuned"),
    ("TMA (tensor descriptors) instead of pointer tiles", "plot_07_attention", "attention", "fwd", "float16",
     ATTENTION_CASE, "step-3-tuned", "tritonperf"),
    ("divergence: skip masked blocks instead of masking every score", "plot_07_attention", "attention", "fwd",
     "float16", ATTENTION_CASE | {"causal": True}, "step-4-mask-every-block", "tritonperf"),
    ("recomputation: probabilities rebuilt from the log-sum-exp", "plot_07_attention", "attention", "bwd", "float16",
     ATTENTION_CASE, "step-1-naive", "tritonperf"),
]


def strategies_table(doc: dict[str, Any]) -> str:
    """Markdown: each strategy's measured before/after (rate and speedup) from one results document."""
    by_key = {(r["kernel"], r["direction"], r["dtype"], tuple(sorted(r["shape"].items())), r["variant"]): r for r in doc["records"]}
    rows, missing = [], []
    for strategy, lesson, kernel, direction, dtype, shape, before, after in STRATEGIES:
        key = (kernel, direction, dtype, tuple(sorted(shape.items())))
        rb, ra = by_key.get((*key, before)), by_key.get((*key, after))
        if rb is None or ra is None:
            missing.append(f"{strategy} (`{before}` and `{after}`, {kernel} {direction} {dtype} {shape_text(shape)})")
            continue
        metric = metric_of(rb)
        unit = UNITS[metric]
        rows.append([
            strategy, f"{{doc}}`{lesson} </auto_examples/{lesson}>`", f"{kernel} {direction} {dtype} {shape_text(shape)}",
            f"`{before}` {rb[metric]:,.0f} {unit}", f"`{after}` {ra[metric]:,.0f} {unit}", f"{rb['ms'] / ra['ms']:.2f}x",
        ])
    p = doc["provenance"]
    table = markdown_table(["strategy", "lesson", "case", "before", "after", "speedup"], rows, right=(5,))
    text = f"Recorded on {p['gpu']}, {p['date'][:10]}; triton {p['triton']}, torch {p['torch']}; commit {p['git_commit']}.\n\n{table}\n"
    if missing:
        text += "\nNot in this run (it measured neither or only one of the two variants):\n\n"
        text += "".join(f"- {line}\n" for line in missing)
    return text
