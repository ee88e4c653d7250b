"""The memory-hierarchy sweep's read kernel: it reads every element ``repeats`` times, through L2 only."""

from __future__ import annotations

import pytest
import torch

import tritonperf  # noqa: F401  (first: chooses GPU or interpreter before any kernel is defined)
from tritonperf import asm, runtime
from tritonperf.bench import memory
from tritonperf.bench.suites import memory as suite
from tritonperf.testing import random_tensor

DEVICE = runtime.default_device()

MISSING = asm.cuda_compiler_missing()


@pytest.mark.parametrize("n", [1, 511, 512, 4097, 100_003])
@pytest.mark.parametrize("repeats", [1, 3])
@pytest.mark.parametrize("programs", [None, 1, 7])
def test_partial_sums_add_up_to_repeats_times_the_sum(n, repeats, programs):
    x = random_tensor((n,), torch.float32, DEVICE)
    partial = memory.read_repeated(x, repeats, programs=programs)
    if programs is not None:
        assert 1 <= partial.numel() <= programs
    torch.testing.assert_close(partial.double().sum(), memory.read_sum_reference(x, repeats), rtol=1e-5, atol=1e-3)


def test_every_element_is_read_once_per_pass():
    # A sum can hide a skipped element whose value is small; ones cannot: the total is the count.
    x = torch.ones(70_001, device=DEVICE)
    assert memory.read_repeated(x, 5, programs=9).sum().item() == 5 * 70_001


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"x": torch.ones(8, dtype=torch.float16)}, TypeError, "float32"),
        ({"x": torch.ones(0)}, ValueError, "empty"),
        ({"x": torch.ones(8, 2).t()}, ValueError, "contiguous"),
        ({"repeats": 0}, ValueError, "repeats"),
        ({"programs": 0}, ValueError, "programs"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"x": torch.ones(8), "repeats": 1} | kwargs
    args["x"] = args["x"].to(DEVICE)
    with pytest.raises(error, match=match):
        memory.read_repeated(args.pop("x"), args.pop("repeats"), **args)


def test_sweep_reads_about_the_same_bytes_at_every_size():
    for shape in suite.SHAPES:
        total = memory.read_bytes(shape["bytes"])
        assert memory.BYTES_PER_CALL // 2 < total <= max(memory.BYTES_PER_CALL, shape["bytes"])
    sizes = [s["bytes"] for s in suite.SHAPES]
    assert sizes == sorted(sizes) and min(sizes) <= 8 << 20 and max(sizes) >= 1 << 30


@pytest.mark.skipif(MISSING is not None, reason=f"this Triton cannot compile for CUDA: {MISSING}")
def test_loads_bypass_l1():
    signature = {"x_ptr": "*fp32", "partial_ptr": "*fp32", "n_elements": "i32", "chunk": "i32", "repeats": "i32"}
    compiled = asm.compile_for_hopper(memory.read_repeated_kernel, signature, {"BLOCK": 2048}, num_warps=8, divisible_by_16=list(signature))
    loads = [line for line in compiled.ptx.splitlines() if "ld.global" in line]
    assert loads and all(".cg" in line for line in loads), loads
    assert any(".v4" in line for line in loads)


def _sweep_doc(sample_doc, rates_by_mib):
    sample_doc["records"] = [
        {"kernel": "memory_hierarchy", "variant": "tritonperf", "direction": "fwd", "dtype": "float32",
         "shape": {"bytes": mib << 20}, "ms": 1.0, "GBps": rate, "TFLOPS": None}
        for mib, rate in rates_by_mib.items()
    ]
    return sample_doc


def test_hierarchy_levels_reads_plateau_cliff_and_hbm(sample_doc):
    # A slow smallest buffer (too little in flight), a plateau, a cliff between 32 and 64 MiB, HBM.
    doc = _sweep_doc(sample_doc, {1: 3000, 4: 7900, 16: 8000, 32: 8100, 64: 4600, 256: 4500, 1024: 4400, 2048: 4500})
    lv = memory.hierarchy_levels(doc)
    assert (lv.l2, lv.hbm, lv.last_fast, lv.first_slow) == (8000, 4500, 32, 64)
    assert lv.points[0] == (1, 3000)


def test_hierarchy_levels_needs_a_sweep(sample_doc):
    with pytest.raises(ValueError, match="no memory_hierarchy sweep"):
        memory.hierarchy_levels(sample_doc)


def test_memory_levels_table(sample_doc):
    from tritonperf.bench.report import memory_levels_table

    assert "No recorded memory-hierarchy sweep" in memory_levels_table([sample_doc])
    doc = _sweep_doc(sample_doc, {1: 3000, 4: 7900, 16: 8000, 32: 8100, 64: 4600, 256: 4500, 1024: 4400, 2048: 4500})
    table = memory_levels_table([doc])
    assert "| Example GPU | 8,000 GB/s | 4,500 GB/s | 1.8x | 32 and 64 MiB | 1,000 GB/s |" in table
