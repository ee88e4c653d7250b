"""Shared fixtures. Importing tritonperf first puts Triton in interpreter mode when there is no GPU."""

from __future__ import annotations

import copy
import zlib

import pytest
import torch

import tritonperf
from tritonperf import runtime

ON_GPU = runtime.MODE == "gpu"
gpu_only = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU; this run uses Triton's interpreter")


@pytest.fixture
def device() -> torch.device:
    return runtime.default_device()


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    # A different seed for every test, but reproducible from the test's name.
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


SAMPLE_DOC = {
    "schema": 1,
    "provenance": {
        "gpu": "Example GPU", "sms": 100, "triton": "3.6.0", "torch": "2.11.0", "cuda": "13.0",
        "date": "2026-01-02T03:04:05Z", "git_commit": "abc1234", "command": "tritonperf bench",
    },
    "ceilings": {"copy_GBps": 1000.0, "matmul_fp16_TFLOPS": 500.0},
    "records": [
        {"kernel": "vector_add", "variant": v, "direction": "fwd", "dtype": "float32", "shape": {"N": n},
         "ms": ms, "GBps": 12 * n / ms * 1e-6, "TFLOPS": None}
        for v, n, ms in [("tritonperf", 1 << 20, 0.02), ("torch", 1 << 20, 0.025), ("step-1-block-128", 1 << 20, 0.04),
                         ("tritonperf", 1 << 24, 0.2), ("torch", 1 << 24, 0.25), ("step-1-block-128", 1 << 24, 0.4)]
    ],
}


@pytest.fixture
def sample_doc() -> dict:
    """A valid results document with made-up numbers, for testing the tools that read them."""
    return copy.deepcopy(SAMPLE_DOC)


__all__ = ["ON_GPU", "gpu_only", "tritonperf"]
