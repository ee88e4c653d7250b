"""The roofline: intensities, roofs and the ridge point computed from a results document."""

from __future__ import annotations

import pytest

from tritonperf.bench import roofline
from tritonperf.bench.report import roofline_page


def test_vector_add_on_the_roofline(sample_doc):
    # SAMPLE_DOC: copy 1000 GB/s, fp16 matmul 500 TFLOPS; float32 vector add moves 12 bytes per element.
    assert roofline.ridge(sample_doc) == pytest.approx(500)
    pts = roofline.points(sample_doc)
    assert [p.kernel for p in pts] == ["vector_add", "vector_add"]  # ours only, not torch or the step
    for p in pts:
        assert p.intensity == pytest.approx(1 / 12)
        assert p.roof == pytest.approx(1000 * 1e-3 / 12)  # on the bandwidth slope
        assert p.tflops == pytest.approx(p.shape["N"] / (0.02 if p.shape["N"] == 1 << 20 else 0.2) * 1e-9)
        # On the slope, the share of the roof is the share of the copy ceiling.
        record = next(r for r in sample_doc["records"] if r["variant"] == "tritonperf" and r["shape"] == p.shape)
        assert p.tflops / p.roof == pytest.approx(record["GBps"] / 1000)


def test_roof_is_flat_past_the_ridge(sample_doc):
    assert roofline.roof(sample_doc, 10_000) == 500
    assert roofline.roof(sample_doc, 100) == pytest.approx(100)


def test_matmul_records_carry_their_own_counts(sample_doc):
    sample_doc["records"].append({"kernel": "matmul", "variant": "tritonperf", "direction": "fwd", "dtype": "float16",
                                  "shape": {"M": 1024, "N": 1024, "K": 1024}, "ms": 0.01,
                                  "GBps": 6 * 2**20 / 0.01 * 1e-6, "TFLOPS": 2 * 2**30 / 0.01 * 1e-9})
    p = next(p for p in roofline.points(sample_doc) if p.kernel == "matmul")
    assert p.intensity == pytest.approx(2 * 2**30 / (6 * 2**20))


def test_attention_records_carry_their_own_counts(sample_doc):
    # 4·B·H·N²·D operations over q, k, v and o read or written once: B=1, H=1, N=1024, D=64 in float16.
    flops, nbytes = 4 * 1024**2 * 64, 4 * 1024 * 64 * 2
    sample_doc["records"].append({"kernel": "attention", "variant": "tritonperf", "direction": "fwd", "dtype": "float16",
                                  "shape": {"B": 1, "H": 1, "N": 1024, "D": 64, "causal": False}, "ms": 0.01,
                                  "GBps": nbytes / 0.01 * 1e-6, "TFLOPS": flops / 0.01 * 1e-9})
    p = next(p for p in roofline.points(sample_doc) if p.kernel == "attention")
    assert p.intensity == pytest.approx(flops / nbytes)
    assert p.roof == pytest.approx(min(500, 1000 * flops / nbytes * 1e-3))


def test_no_matmul_ceiling(sample_doc, tmp_path):
    del sample_doc["ceilings"]["matmul_fp16_TFLOPS"]
    with pytest.raises(ValueError, match="no 16-bit matmul ceiling"):
        roofline.ridge(sample_doc)


def test_roofline_page(sample_doc, tmp_path):
    import json

    path = tmp_path / "example-gpu.json"
    path.write_text(json.dumps(sample_doc))
    page = roofline_page([path], tmp_path / "img", "/img")
    assert "ridge point is at **500 FLOP per byte**" in page
    assert "| vector_add | float32 | 2 |" in page
    assert (tmp_path / "img" / "example-gpu.png").stat().st_size > 0
    assert "No recorded run" in roofline_page([], tmp_path / "img", "/img")


def test_strategies_table_pairs_records_of_one_run(sample_doc):
    from tritonperf.bench.report import strategies_table

    base = {**sample_doc["records"][0], "dtype": "float16", "shape": {"N": 1 << 26}}
    sample_doc["records"] += [{**base, "variant": "step-1-block-128", "ms": 0.4}, {**base, "variant": "tritonperf", "ms": 0.1}]
    table = strategies_table(sample_doc)
    assert "wide blocks: vectorized loads" in table and "| 4.00x |" in table
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert not any("softmax" in line for line in rows)  # strategies without both records get no row, no invented one


def test_float8_points_use_the_float8_ceiling(sample_doc):
    sample_doc["ceilings"]["matmul_fp8_TFLOPS"] = 1000.0
    assert roofline.roof(sample_doc, 1e6, "float8_e4m3fn") == 1000.0
    assert roofline.roof(sample_doc, 1e6, "float16") == 500.0  # the 16-bit ceiling of SAMPLE_DOC
    del sample_doc["ceilings"]["matmul_fp8_TFLOPS"]
    assert roofline.roof(sample_doc, 1e6, "float8_e4m3fn") == 500.0
