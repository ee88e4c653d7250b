"""The package's performance targets, held against results files."""

from __future__ import annotations

import pytest

from tritonperf import cli
from tritonperf.bench import records, report, targets


def _softmax(M: int, N: int, variant: str, ms: float, dtype: str = "float16") -> dict:
    nbytes = 2 * M * N * 2
    return {"kernel": "softmax", "variant": variant, "direction": "fwd", "dtype": dtype, "shape": {"M": M, "N": N},
            "ms": ms, "GBps": nbytes / (ms * 1e-3) / 1e9, "TFLOPS": None}


@pytest.fixture
def softmax_doc(sample_doc):
    # Copy ceiling 1000 GB/s. At N = 4096 ours moves 64 MiB in 0.0707 ms (0.95 of the ceiling)
    # and beats torch 3×; at N = 256 it reaches 0.40 of it and is a little slower than
    # torch.compile; the long rows (M = 64) are under no target, and at N = 1024 no torch
    # variant was recorded.
    sample_doc["records"] = [
        _softmax(4096, 4096, "tritonperf", 0.0707), _softmax(4096, 4096, "torch", 0.212),
        _softmax(4096, 4096, "torch.compile", 0.08),
        _softmax(4096, 256, "tritonperf", 0.0105), _softmax(4096, 256, "torch.compile", 0.0100),
        _softmax(4096, 1024, "tritonperf", 0.02),
        _softmax(64, 1 << 20, "tritonperf", 1.0), _softmax(64, 1 << 20, "torch", 0.1),
    ]
    return sample_doc


def _by_text(doc: dict) -> dict[str, dict]:
    return {c["target"].text: c for c in targets.check(doc)}


def test_each_target_counts_its_shapes_and_names_the_worst(softmax_doc):
    checked = _by_text(softmax_doc)
    assert {t.kernel for t in (c["target"] for c in checked.values())} == {"softmax"}
    ceiling = checked["≥ 0.93 × copy ceiling, N ≤ 16384"]
    assert (ceiling["shapes"], ceiling["met"]) == (3, 1)
    assert ceiling["worst"] == pytest.approx(0.3995, abs=1e-3) and ceiling["worst_at"] == "float16 M=4096 N=256"
    torch_best = checked["≥ 1.0 × best torch"]
    assert (torch_best["shapes"], torch_best["met"]) == (2, 1)  # no torch variant at N = 1024
    assert torch_best["worst"] == pytest.approx(0.0100 / 0.0105)
    eager = checked["≥ 2.0 × torch eager, float16, N = 4096"]
    assert (eager["shapes"], eager["met"]) == (1, 1) and eager["worst"] == pytest.approx(3.0, rel=1e-3)
    # The long rows reach no target's shapes, and the long-row ceiling target has no shape here.
    assert "≥ 0.85 × copy ceiling, 16384 < N ≤ 65536" not in checked


def test_a_mode_of_ours_is_held_against_its_torch_counterpart(sample_doc):
    def rec(variant, ms):
        shape = {"M": 8192, "N": 8192, "K": 8192}
        return {"kernel": "matmul", "variant": variant, "direction": "fwd", "dtype": "float8_e4m3fn", "shape": shape,
                "ms": ms, "GBps": None, "TFLOPS": 2 * 8192**3 / (ms * 1e-3) / 1e12}

    sample_doc["records"] = [rec("tritonperf", 1.3), rec("torch", 1.0), rec("step-6-fast-accum", 0.99),
                             rec("torch-fast-accum", 1.0)]
    checked = _by_text(sample_doc)
    assert checked["≥ 1.0 × torch._scaled_mm, float8_e4m3fn at 8192³"]["met"] == 0
    fast = next(c for text, c in checked.items() if text.startswith("fast accumulation"))
    assert fast["met"] == 1 and fast["worst"] == pytest.approx(1 / 0.99)


def test_every_target_names_a_kernel_the_benchmarks_record():
    from tritonperf.bench.specs import SPECS

    assert {t.kernel for t in targets.TARGETS} <= set(SPECS)
    assert all(t.direction in ("fwd", "bwd") and t.minimum > 0 for t in targets.TARGETS)


def test_the_results_page_and_the_command_show_the_targets(softmax_doc, tmp_path, capsys):
    path = records.save(softmax_doc, tmp_path / "example-gpu.json")
    page = report.results_page([path], tmp_path / "img", "/img")
    # No vector add in this run: the column that weighs the misses against it stays empty.
    assert "| softmax | fwd | ≥ 0.93 × copy ceiling, N ≤ 16384 | 1\u00a0of\u00a03 | 0.40× float16 M=4096 N=256 |  |" in page
    assert cli.main(["targets", str(path)]) == 0
    out = capsys.readouterr().out
    assert "≥ 2.0 × torch eager" in out and "1 of 3" in out
    # A file no target applies to says so; a missing file is a clear error.
    plain = records.save(softmax_doc | {"records": softmax_doc["records"][-2:]}, tmp_path / "long-rows.json")
    assert cli.main(["targets", str(plain)]) == 0
    assert "no record in this file is held to a target" in capsys.readouterr().out
    assert cli.main(["targets", str(tmp_path / "missing.json")]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_the_misses_are_listed_worst_first(softmax_doc, tmp_path, capsys):
    checked = _by_text(softmax_doc)
    ceiling = checked["≥ 0.93 × copy ceiling, N ≤ 16384"]
    # N = 1024 moves 16 MiB in 0.02 ms: 0.84 of the ceiling; N = 256 0.40; N = 4096 (0.95) meets it.
    assert [m["at"] for m in ceiling["misses"]] == ["float16 M=4096 N=256", "float16 M=4096 N=1024"]
    assert [m["value"] for m in ceiling["misses"]] == pytest.approx([0.3995, 0.8389], abs=1e-3)
    assert all(m["within_reach"] is None for m in ceiling["misses"])  # no vector add in this run
    assert len(ceiling["misses"]) == ceiling["shapes"] - ceiling["met"]
    assert checked["≥ 2.0 × torch eager, float16, N = 4096"]["misses"] == []
    rows = targets.miss_rows(softmax_doc)
    assert [r[3:5] for r in rows] == [["0.399×", "float16 M=4096 N=256"], ["0.839×", "float16 M=4096 N=1024"],
                                      ["0.952×", "float16 M=4096 N=256"]]
    path = records.save(softmax_doc, tmp_path / "example-gpu.json")
    assert cli.main(["targets", "--misses", str(path)]) == 0
    out = capsys.readouterr().out
    assert "misses — Example GPU" in out and "0.839×" in out
    assert cli.main(["targets", str(path)]) == 0
    assert "0.839×" not in capsys.readouterr().out  # only asked for
    met = records.save(softmax_doc | {"records": softmax_doc["records"][:3]}, tmp_path / "met.json")
    assert cli.main(["targets", "--misses", str(met)]) == 0
    assert "every target is met at every shape" in capsys.readouterr().out


def _vector_add(n: int, share: float) -> dict:
    # torch's a + b on float32: 12 bytes an element, at `share` of the sample's 1000 GB/s ceiling.
    ms = 12 * n * 1e-6 / (share * 1000.0)
    return {"kernel": "vector_add", "variant": "torch", "direction": "fwd", "dtype": "float32", "shape": {"N": n},
            "ms": ms, "GBps": 12 * n / ms * 1e-6, "TFLOPS": None}


def test_streaming_share_follows_the_vector_add_line_in_log_bytes():
    line = [(12 << 20, 0.5), (192 << 20, 0.8), (768 << 20, 0.96)]
    assert targets.streaming_share(line, 1 << 20) == 0.5  # below the smallest size: its share
    assert targets.streaming_share(line, 4 << 30) == 0.96  # above the largest: its share
    assert targets.streaming_share(line, 48 << 20) == pytest.approx(0.65)  # halfway in log(bytes)
    assert targets.streaming_share(line, 192 << 20) == pytest.approx(0.8)
    assert targets.streaming_share(line, 384 << 20) == pytest.approx(0.88)
    with pytest.raises(ValueError, match="no reference sizes"):
        targets.streaming_share([], 1 << 20)


def test_ceiling_targets_separate_the_misses_a_same_size_pass_misses_too(sample_doc):
    # The vector add line: 0.50 at 12 MiB, 0.81 at 192 MiB (the sample's), 0.97 at 768 MiB.
    sample_doc["records"].append(_vector_add(1 << 26, 0.97))
    sample_doc["records"] += [
        _softmax(4096, 256, "tritonperf", 4 * 2**20 / (0.40 * 1e9)),  # 4 MiB: a miss, out of reach
        _softmax(4096, 4096, "tritonperf", 64 * 2**20 / (0.95 * 1e9)),  # 64 MiB: met, though out of reach
        _softmax(16384, 16384, "tritonperf", 2**30 / (0.90 * 1e9)),  # 1 GiB: within reach, and missed
        _softmax(16384, 16384, "torch", 2**30 / (0.45 * 1e9)),
    ]
    checked = _by_text(sample_doc)
    ceiling = checked["≥ 0.93 × copy ceiling, N ≤ 16384"]
    assert (ceiling["shapes"], ceiling["met"], ceiling["out_of_reach"]) == (3, 1, 1)
    assert (ceiling["within_reach"], ceiling["met_within_reach"]) == (1, 0)
    assert ceiling["worst_within_reach"] == pytest.approx(0.90)
    assert ceiling["worst_within_reach_at"] == "float16 M=16384 N=16384"
    # A target against torch is not weighed against a streaming pass.
    torch_best = checked["≥ 1.0 × best torch"]
    assert torch_best["out_of_reach"] is None and torch_best["within_reach"] is None
    row = next(r for r in targets.table_rows(sample_doc) if r[2] == ceiling["target"].text)
    assert row[3:] == ["1 of 3", "0.40× float16 M=4096 N=256", "0 of 1; 0.90× float16 M=16384 N=16384"]
    # Without vector add records in the run there is no line, and the last column stays empty.
    sample_doc["records"] = [r for r in sample_doc["records"] if r["kernel"] != "vector_add"]
    ceiling = _by_text(sample_doc)["≥ 0.93 × copy ceiling, N ≤ 16384"]
    assert ceiling["out_of_reach"] is None and ceiling["worst_within_reach"] is None
    row = next(r for r in targets.table_rows(sample_doc) if r[2] == ceiling["target"].text)
    assert row[5:] == [""]


def _norm_bwd(M: int, N: int, fixed_us: float, share: float) -> dict:
    # Layer norm's backward on float16 (x and dy read, dx written: 6 bytes an element) taking
    # fixed_us a call plus its bytes at `share` of the sample's 1000 GB/s ceiling.
    nbytes = 6 * M * N
    ms = fixed_us * 1e-3 + nbytes / (share * 1e9)
    return {"kernel": "layer_norm", "variant": "tritonperf", "direction": "bwd", "dtype": "float16",
            "shape": {"M": M, "N": N}, "ms": ms, "GBps": nbytes / (ms * 1e-3) / 1e9, "TFLOPS": None}


def test_row_costs_split_calls_into_a_fixed_time_and_a_rate_per_row(sample_doc):
    sample_doc["records"] += [_norm_bwd(4096, 4096, 7.0, 0.95), _norm_bwd(16384, 4096, 7.0, 0.95),
                              _norm_bwd(65536, 4096, 7.0, 0.95), _norm_bwd(4096, 8192, 20.0, 0.90),
                              _norm_bwd(16384, 8192, 20.0, 0.90),
                              _norm_bwd(4096, 16384, 5.0, 0.9)]  # one row count only: no line
    costs = targets.row_costs(sample_doc)
    assert [(c["kernel"], c["direction"], c["dtype"], c["N"]) for c in costs] == [
        ("layer_norm", "bwd", "float16", 4096), ("layer_norm", "bwd", "float16", 8192)]
    first, second = costs
    assert first["rows"] == [4096, 16384, 65536]
    assert first["fixed_us"] == pytest.approx(7.0) and first["row_share"] == pytest.approx(0.95)
    assert second["fixed_us"] == pytest.approx(20.0) and second["row_share"] == pytest.approx(0.90)
    # The fixed cost is what keeps the 4096-row call below the rate per row.
    assert second["shares"][0] == pytest.approx(6 * 4096 * 8192 / (20e-6 + 6 * 4096 * 8192 / 0.9e12) / 1e12)
    assert second["shares"][0] < second["shares"][1] < second["row_share"]
    assert second["us"][0] == pytest.approx(second["rows"][0] * 6 * 8192 / 0.9e6 + 20.0)
    # Another variant, or a run without a copy ceiling, gives no line.
    assert targets.row_costs(sample_doc, "torch.compile") == []
    assert targets.row_costs(sample_doc | {"ceilings": {}}) == []


def test_streaming_cost_fits_the_vector_add_calls_of_32_mib_and_more(sample_doc):
    # The sample's vector add moves 12 MiB and 192 MiB a call: one size at or above 32 MiB, no line.
    assert targets.streaming_cost(sample_doc) is None

    def add(n: int) -> dict:
        ms = 2e-3 + 12 * n / 0.98e9  # 2 µs a call, then 0.98 of the 1000 GB/s ceiling
        return {"kernel": "vector_add", "variant": "torch", "direction": "fwd", "dtype": "float32", "shape": {"N": n},
                "ms": ms, "GBps": 12 * n / ms * 1e-6, "TFLOPS": None}

    sample_doc["records"] = [add(1 << 20), add(1 << 24), add(1 << 26)]
    fixed_us, share = targets.streaming_cost(sample_doc)
    assert fixed_us == pytest.approx(2.0) and share == pytest.approx(0.98)


def test_the_results_page_splits_calls_recorded_at_two_row_counts(sample_doc, tmp_path):
    sample_doc["records"] += [_norm_bwd(4096, 4096, 7.0, 0.95), _norm_bwd(16384, 4096, 7.0, 0.95)]
    page = report.results_page([records.save(sample_doc, tmp_path / "example-gpu.json")], tmp_path / "img", "/img")
    assert "| layer_norm | bwd | float16 | 4096 | 4096 / 16384 |" in page
    assert page.count("fixed µs") == 1 and "| 7.0 | 95% |" in page
    # Without a case at two row counts the paragraph and its table are left out.
    sample_doc["records"] = sample_doc["records"][:-1]
    page = report.results_page([records.save(sample_doc, tmp_path / "example-gpu.json")], tmp_path / "img", "/img")
    assert "fixed µs" not in page
