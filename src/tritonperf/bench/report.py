"""Summaries of results documents: % of ceiling, speedup over the best torch variant, comparisons."""

from __future__ import annotations

from typing import Any

from .plotting import ceiling_for


def _case(r: dict[str, Any]) -> tuple:
    return (r["kernel"], r["direction"], r["dtype"], tuple(sorted(r["shape"].items())))


def metric_of(r: dict[str, Any]) -> str:
    """``"TFLOPS"`` where the record counts operations, else ``"GBps"``."""
    return "TFLOPS" if r["TFLOPS"] is not None else "GBps"


def summarize(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per record with ``pct_of_ceiling`` and ``vs_best_torch`` (time of the best torch / own time)."""
    best_torch: dict[tuple, float] = {}
    for r in doc["records"]:
        if r["variant"].startswith("torch"):
            key = _case(r)
            best_torch[key] = min(best_torch.get(key, float("inf")), r["ms"])
    rows = []
    for r in doc["records"]:
        metric = metric_of(r)
        ceiling = ceiling_for(doc, metric, r["dtype"])
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
    """Formatted rows for a results table (header in :data:`TABLE_HEADER`)."""
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


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown pipe table (cells must not contain ``|``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
