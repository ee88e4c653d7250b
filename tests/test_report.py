"""Summaries and plots made from results documents."""

from __future__ import annotations

import statistics

import matplotlib.pyplot as plt
import pytest

from tritonperf.bench import plot_results, report


def test_summary_percent_of_ceiling_and_speedup(sample_doc):
    rows = {(r["variant"], r["shape"]["N"]): r for r in report.summarize(sample_doc)}
    fast = rows[("tritonperf", 1 << 24)]
    # 12 bytes per element over 0.2 ms, against a 1000 GB/s ceiling.
    assert fast["pct_of_ceiling"] == pytest.approx(100 * 12 * (1 << 24) / 0.2e-3 / 1e12)
    assert fast["vs_best_torch"] == pytest.approx(0.25 / 0.2)
    assert rows[("torch", 1 << 24)]["vs_best_torch"] == pytest.approx(1.0)
    assert rows[("step-1-block-128", 1 << 20)]["vs_best_torch"] == pytest.approx(0.025 / 0.04)


def test_probes_get_no_share_of_the_ceiling(sample_doc):
    # The memory-hierarchy probe only reads: against a copy ceiling it would show 200% of it.
    probe = {"kernel": "memory_hierarchy", "variant": "tritonperf", "direction": "fwd", "dtype": "float32",
             "shape": {"bytes": 1 << 30}, "ms": 0.5, "GBps": 2000.0, "TFLOPS": None}
    doc = {**sample_doc, "records": [*sample_doc["records"], probe]}
    rows = report.summarize(doc)
    assert [r["pct_of_ceiling"] for r in rows if r["kernel"] == "memory_hierarchy"] == [None]
    assert all(r["pct_of_ceiling"] is not None for r in rows if r["kernel"] != "memory_hierarchy")


def test_compare_pairs_matching_records(sample_doc):
    import copy

    new = copy.deepcopy(sample_doc)
    new["records"][0]["ms"] = 0.01
    del new["records"][1]
    rows = report.compare(new, sample_doc)
    assert len(rows) == len(sample_doc["records"]) - 1
    assert rows[0]["ratio"] == pytest.approx(2.0)


def test_drift_summarizes_each_kernel_by_how_far_its_rows_moved(sample_doc):
    import copy

    new = copy.deepcopy(sample_doc)
    # Speeds new/recorded of 1.10, 0.98, 1.00, 1.01, 1.00 and 0.95 for the six vector-add records.
    for r, speed in zip(new["records"], [1.10, 0.98, 1.00, 1.01, 1.00, 0.95], strict=True):
        r["ms"] /= speed
    rows = report.compare(new, sample_doc)
    rows.append({**rows[0], "kernel": "softmax", "ratio": 0.5})
    first, second = report.drift(rows)
    assert (first["kernel"], first["records"], second["kernel"], second["records"]) == ("vector_add", 6, "softmax", 1)
    changes = sorted([0.10, 0.02, 0.0, 0.01, 0.0, 0.05])
    assert first["median"] == pytest.approx(0.015)
    assert first["p90"] == pytest.approx(statistics.quantiles(changes, n=10, method="inclusive")[-1])
    assert 0.05 < first["p90"] < 0.10
    assert first["largest"]["ratio"] == pytest.approx(1.10)
    assert (second["median"], second["p90"], second["largest"]["ratio"]) == (0.5, 0.5, 0.5)
    assert report.drift([]) == []


def test_plot_has_every_variant_the_ceiling_and_a_caption(sample_doc):
    fig = plot_results(sample_doc, "vector_add", "float32", live=False)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels[0] == "tritonperf"
    assert set(labels[1:3]) == {"torch", "step-1-block-128"}
    assert labels[3].startswith("ceiling: copy_GBps")
    text = " ".join(t.get_text() for t in fig.texts)
    assert "Recorded" in text and "Example GPU" in text and "2026-01-02" in text and "abc1234" in text
    assert "03:04" not in text and "ptxas" not in text  # the day only; no ptxas where the file names none
    sample_doc["provenance"]["ptxas"] = "13.0"
    fig_live = plot_results(sample_doc, "vector_add", "float32", live=True)
    text = " ".join(t.get_text() for t in fig_live.texts)
    assert "Measured live" in text and "CUDA 13.0, ptxas 13.0; commit abc1234" in text
    plt.close("all")


def test_plot_without_records_says_so(sample_doc):
    with pytest.raises(ValueError, match="no fwd records of vector_add in float16"):
        plot_results(sample_doc, "vector_add", "float16", live=False)


def test_results_page(sample_doc, tmp_path):
    from tritonperf.bench import records

    path = records.save(sample_doc, tmp_path / "example-gpu.json")
    page = report.results_page([path], tmp_path / "img", "/img")
    assert "## Example GPU" in page and "copy_GBps" in page
    assert (tmp_path / "img" / "example-gpu-vector_add-fwd-float32-0.png").stat().st_size > 0
    assert "| N=16777216 | 1,007 | 101% | 1.25× | 805 | 503 |" in page  # ours first, then the others
    assert "No results have been recorded" in report.results_page([], tmp_path / "img", "/img")
    plt.close("all")


def test_across_gpus_compares_the_cases_every_file_holds(sample_doc, tmp_path):
    import copy

    from tritonperf.bench import records

    other = copy.deepcopy(sample_doc)
    other["provenance"]["gpu"] = "Other GPU"
    for r in other["records"]:
        if r["variant"] == "tritonperf":  # twice as slow as on the example GPU
            r["ms"] *= 2
            r["GBps"] /= 2
    # A case only one file holds, ours and torch's: left out.
    other["records"] += [{**r, "shape": {"N": 1 << 22}} for r in other["records"][:2]]
    # On the example GPU 629 and 1,007 GB/s of a 1,000 GB/s ceiling (median 82%), each 1.25x torch.
    row = "| vector_add | fwd | 2 | 82% | 1.25× | 41% | 0.62× |"
    assert row in report.across_gpus_table([sample_doc, other])
    paths = [records.save(sample_doc, tmp_path / "a.json"), records.save(other, tmp_path / "b.json")]
    page = report.results_page(paths, tmp_path / "img", "/img")
    assert page.startswith("## Across GPUs") and row in page and "Example GPU 1,000 GB/s; Other GPU 1,000 GB/s" in page
    assert page.index("## Across GPUs") < page.index("## Example GPU") < page.index("## Other GPU")
    assert "Across GPUs" not in report.results_page(paths[:1], tmp_path / "img", "/img")
    plt.close("all")


def test_one_point_per_line_becomes_grouped_bars(sample_doc):
    for r in sample_doc["records"]:
        r.update(kernel="transpose", shape={"M": r["shape"]["N"] // 2, "N": r["shape"]["N"]})
    fig = plot_results(sample_doc, "transpose", "float32", live=False)
    ax = fig.axes[0]
    assert len(ax.patches) == 6  # 3 variants × 2 shapes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["524288 × 1048576", "8388608 × 16777216"]
    plt.close("all")


def test_markdown_table_aligns_the_columns_asked_for():
    from tritonperf.bench.report import markdown_table

    table = markdown_table(["name", "rate"], [["a", "1"], ["b", "22"]], right=(1,))
    assert table.splitlines() == ["| name | rate |", "|---|---:|", "| a | 1 |", "| b | 22 |"]


def test_strategies_table_has_a_row_for_every_recorded_pair(sample_doc):
    # Each strategy names two variants of one case; a row appears when a run recorded both, with
    # the speedup as the ratio of their times.
    strategy, lesson, kernel, direction, dtype, shape, before, after = report.STRATEGIES[0]
    base = dict(kernel=kernel, direction=direction, dtype=dtype, shape=shape, GBps=1.0, TFLOPS=None)
    doc = dict(sample_doc, records=[dict(base, variant=before, ms=3.0), dict(base, variant=after, ms=1.5)])
    rows = [line for line in report.strategies_table(doc).splitlines() if line.startswith(f"| {strategy}")]
    assert len(rows) == 1 and rows[0].endswith("| 2.00x |")
    assert lesson in rows[0]
    doc["records"].pop()
    table = report.strategies_table(doc)
    assert not any(line.startswith(f"| {strategy}") for line in table.splitlines())
    # ... and it is named below the table instead, with the variant the run lacks.
    assert f"- {strategy} (`{before}` and `{after}`" in table.split("Not in this run")[1]


def test_every_strategy_names_what_a_suite_records():
    # The names in STRATEGIES must match the suites' variants, shapes and dtypes: a typo would
    # drop a row from the chapter's table silently.
    from tritonperf.bench.specs import specs_for

    for strategy, _, kernel, direction, dtype, shape, before, after in report.STRATEGIES:
        for variant in (before, after):  # a kernel may split its variants over several specs
            assert any(
                s.direction == direction and variant in s.variants and shape in list(s.shapes)
                and dtype in [str(d).removeprefix("torch.") for d in s.dtypes]
                for s in specs_for(kernel)
            ), (strategy, variant)


def test_plot_select_and_series(sample_doc):
    # select drops records by shape; series=() draws one line per variant whatever the other keys.
    for r in sample_doc["records"]:
        r["shape"] = {"M": r["shape"]["N"] // 4, "N": r["shape"]["N"]}
    fig = plot_results(sample_doc, "vector_add", "float32", live=False, series=())
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels[0] == "tritonperf" and set(labels[1:3]) == {"torch", "step-1-block-128"}
    small = min(r["shape"]["N"] for r in sample_doc["records"])
    fig = plot_results(sample_doc, "vector_add", "float32", live=False, select=lambda s: s["N"] == small)
    assert len(fig.axes[0].patches) == 3  # one shape left: grouped bars, one per variant
    with pytest.raises(ValueError, match="no fwd records"):
        plot_results(sample_doc, "vector_add", "float32", live=False, select=lambda s: False)
    plt.close("all")


def test_plot_groups_split_matmul_and_attention(sample_doc):
    assert report.plot_groups(sample_doc, "vector_add", "fwd", "float32") == [("", None, None)]
    base = dict(variant="tritonperf", direction="fwd", dtype="float16", ms=1.0, GBps=1.0, TFLOPS=1.0)
    sample_doc["records"] += [
        dict(base, kernel="matmul", shape={"M": 512, "N": 512, "K": 512}),
        dict(base, kernel="attention", shape={"B": 4, "H": 16, "N": 4096, "D": 128, "causal": True}),
        dict(base, kernel="attention", shape={"B": 8, "H": 32, "N": 2048, "D": 64, "causal": False}),
    ]
    # Only square matmul shapes recorded: no plot of transformer shapes.
    assert [label for label, *_ in report.plot_groups(sample_doc, "matmul", "fwd", "float16")] == ["square M = N = K"]
    groups = report.plot_groups(sample_doc, "attention", "fwd", "float16")
    assert [label for label, *_ in groups] == ["D = 64, full", "D = 128, causal"]
    assert groups[1][1]({"B": 4, "H": 16, "N": 4096, "D": 128, "causal": True})
    assert not groups[1][1]({"B": 4, "H": 16, "N": 4096, "D": 128, "causal": False})


def test_attention_tables_follow_their_plots_and_name_only_what_varies(sample_doc):
    # Attention gets a plot per head dim and causality, each followed by its own table, whose
    # shape column can leave out D and causal (the plot's title says them) and never wraps.
    recs = []
    for d in (64, 128):
        for causal in (False, True):
            for n in (1024, 4096):
                for variant, ms in (("tritonperf", 1.0), ("torch.sdpa-cudnn", 1.1)):
                    recs.append({"kernel": "attention", "variant": variant, "direction": "fwd", "dtype": "float16",
                                 "shape": {"B": 16384 // n, "H": 2048 // d, "N": n, "D": d, "causal": causal},
                                 "ms": ms * n / 1024, "GBps": None, "TFLOPS": 100.0 / ms})
    sample_doc["records"] = recs
    groups = report.plot_groups(sample_doc, "attention", "fwd", "float16")
    assert [label for label, _, _ in groups] == ["D = 64, full", "D = 64, causal", "D = 128, full", "D = 128, causal"]
    header, rows = report.pivot(sample_doc, "attention", "fwd", "float16", groups[3][1], omit=("D", "causal"))
    # Ours first (rate, share of the ceiling, speed over the best torch), then the other variants.
    assert header == ["shape (rates in TFLOPS)", "tritonperf", "tritonperf: % of ceiling", "tritonperf vs best torch",
                      "torch.sdpa-cudnn"]
    assert [row[0] for row in rows] == ["B=16\u00a0H=16\u00a0N=1024", "B=4\u00a0H=16\u00a0N=4096"]
    assert rows[0][1] == "100" and rows[0][3] == "1.10×" and rows[0][4] == "91"
    # Without a selection, every shape is a row, named in full.
    _, rows = report.pivot(sample_doc, "attention", "fwd", "float16")
    assert len(rows) == 8 and rows[0][0] == "B=16\u00a0H=32\u00a0N=1024\u00a0D=64\u00a0causal=False"


def test_size_plot_places_each_kernel_record_by_the_bytes_it_moves(sample_doc):
    from tritonperf.bench.plotting import bytes_moved, plot_sizes, size_reference, size_text

    # torch's vector add draws the line; 12 bytes per element in float32 (a, b read, out written).
    assert [round(n) for n, _ in size_reference(sample_doc)] == [12 << 20, 12 << 24]
    assert size_reference(sample_doc)[0][1] == pytest.approx(12 * (1 << 20) / 0.025 * 1e-6 / 1000.0)
    assert plot_sizes(sample_doc, live=False) is None  # no memory-bound kernel of ours in the run yet
    softmax = {"kernel": "softmax", "direction": "fwd", "dtype": "float16", "shape": {"M": 4096, "N": 256}, "TFLOPS": None}
    n_bytes = 2 * 4096 * 256 * 2  # x read, y written
    sample_doc["records"] += [dict(softmax, variant=v, ms=ms, GBps=n_bytes / ms * 1e-6)
                              for v, ms in (("tritonperf", 0.004), ("torch", 0.008))]
    assert bytes_moved(sample_doc["records"][-1]) == pytest.approx(n_bytes)
    fig = plot_sizes(sample_doc, live=False)
    ax = fig.axes[0]
    # One marker for our softmax (torch's softmax is not drawn), at its bytes and share of the ceiling.
    (offsets,) = [c.get_offsets() for c in ax.collections]
    assert offsets.tolist() == [[pytest.approx(n_bytes), pytest.approx(n_bytes / 0.004 * 1e-6 / 1000.0)]]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "torch a + b (vector add)", "softmax fwd", "copy ceiling = 1,000 GB/s"]
    assert "NVIDIA" not in fig.texts[0].get_text() and "Example GPU" in fig.texts[0].get_text()
    del sample_doc["ceilings"]["copy_GBps"]  # a run without a copy ceiling has no shares to plot
    assert size_reference(sample_doc) == [] and plot_sizes(sample_doc, live=False) is None
    assert (size_text(512), size_text(4 << 20), size_text(1.5 * 2**30), size_text(5 * 2**40)) == (
        "512 B", "4 MiB", "1.5 GiB", "5.12e+03 GiB")
    plt.close("all")


def test_size_paragraph_reads_its_figures_from_the_run(sample_doc):
    # The sample's torch vector add runs at 503 GB/s (12 MiB) and 805 GB/s (192 MiB) of a 1000 GB/s ceiling.
    text = report.sizes_text(sample_doc)
    assert "half the copy ceiling from 12 MiB a call, 90% at no size of this run" in text
    sample_doc["ceilings"]["copy_GBps"] = 850.0
    assert "90% from 192 MiB a call" in report.sizes_text(sample_doc)


def test_results_page_shows_the_size_plot_when_the_run_has_memory_bound_kernels(sample_doc, tmp_path):
    from tritonperf.bench import records

    page = report.results_page([records.save(sample_doc, tmp_path / "a.json")], tmp_path / "img", "/img")
    assert "sizes.png" not in page
    softmax = {"kernel": "softmax", "variant": "tritonperf", "direction": "bwd", "dtype": "float32",
               "shape": {"M": 4096, "N": 4096}, "ms": 0.05, "GBps": 3 * 4096 * 4096 * 4 / 0.05 * 1e-6, "TFLOPS": None}
    sample_doc["records"].append(softmax)
    page = report.results_page([records.save(sample_doc, tmp_path / "b.json")], tmp_path / "img", "/img")
    assert "![memory-bound kernels by bytes moved on Example GPU](/img/b-sizes.png)" in page
    assert (tmp_path / "img" / "b-sizes.png").stat().st_size > 0
    assert page.index("The package's targets") < page.index(report.sizes_text(sample_doc)) < page.index("### ")
    plt.close("all")
