"""The GPU's ceilings, measured in the same run as the kernels they judge.

* ``copy_GBps``: a large device-to-device copy (``Tensor.copy_``), counting bytes read plus bytes
  written.
* ``matmul_<dtype>_TFLOPS``: torch's matmul (cuBLAS) at 8192³ on random data;
  fp8 through ``torch._scaled_mm`` where the GPU supports it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .timing import do_bench_ms, time_ms

COPY_ELEMENTS = 1 << 28  # 1 GiB of float32 each way: far larger than any L2
MATMUL_SIZE = 8192


def copy_GBps(n_elements: int = COPY_ELEMENTS) -> float:
    """Device-to-device copy bandwidth in GB/s (10⁹ bytes), bytes read + written."""
    nbytes = 2 * n_elements * 4

    def make_args():
        return torch.randn(n_elements, device="cuda"), torch.empty(n_elements, device="cuda")

    # Timed the do_bench way, not in a CUDA graph: captured in a graph, this copy measured 2.7 TB/s
    # on an H200 instead of 4.2 (a captured device-to-device memcpy becomes a graph memcpy node,
    # which need not run on the SMs). At 2 GiB per call the host time do_bench includes is negligible.
    ms = do_bench_ms(lambda src, dst: dst.copy_(src), make_args())
    return nbytes / ms * 1e-6


def matmul_TFLOPS(dtype: torch.dtype, size: int = MATMUL_SIZE) -> float:
    """torch.matmul throughput on ``size × size`` matrices in TFLOPS (2·M·N·K operations)."""
    fn, make_args = _matmul_call(dtype, size)
    ms = time_ms(fn, make_args, 3 * size * size * torch.empty((), dtype=dtype).element_size())
    return 2 * size**3 / ms * 1e-9


def _matmul_call(dtype: torch.dtype, size: int) -> tuple[Callable, Callable]:
    if dtype == torch.float8_e4m3fn:
        scale = torch.ones((), device="cuda")

        def make_args():
            a = torch.randn(size, size, device="cuda").to(dtype)
            b = torch.randn(size, size, device="cuda").to(dtype).t()  # column-major, as _scaled_mm needs
            return a, b

        return (lambda a, b: torch._scaled_mm(a, b, scale, scale, out_dtype=torch.bfloat16)), make_args

    def make_args():
        return torch.randn(size, size, device="cuda", dtype=dtype), torch.randn(size, size, device="cuda", dtype=dtype)

    return torch.matmul, make_args


def measure_ceilings(log: Callable[[str], None] = lambda _: None) -> dict[str, float]:
    """Measure every ceiling this GPU supports; fp8 is left out where ``_scaled_mm`` fails."""
    ceilings = {"copy_GBps": copy_GBps()}
    log(f"copy: {ceilings['copy_GBps']:.0f} GB/s")
    for name, dtype in [("fp16", torch.float16), ("bf16", torch.bfloat16), ("fp8", torch.float8_e4m3fn)]:
        try:
            ceilings[f"matmul_{name}_TFLOPS"] = matmul_TFLOPS(dtype)
        except RuntimeError as err:  # e.g. fp8 on a GPU older than Hopper or Ada
            log(f"matmul {name}: not measured ({err.__class__.__name__}: {str(err).splitlines()[0]})")
            continue
        log(f"matmul {name}: {ceilings[f'matmul_{name}_TFLOPS']:.0f} TFLOPS")
    return ceilings
