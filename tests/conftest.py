"""Shared fixtures. Importing tritonperf first puts Triton in interpreter mode when there is no GPU."""

from __future__ import annotations

import contextlib
import copy
import os
import zlib

import filelock
import numpy as np
import pytest
import torch

import tritonperf
from tritonperf import runtime

ON_GPU = runtime.MODE == "gpu"
gpu_only = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU; this run uses Triton's interpreter")


def pytest_addoption(parser):
    parser.addoption(
        "--sm-count", type=int, metavar="N",
        help="run as if the GPU had N SMs: persistent kernels launch fewer programs, and the tests "
             "that size their rows by the SM count shrink with them (for slow tools such as "
             "compute-sanitizer's racecheck, whose time grows with the bytes a kernel stages)")


def pytest_configure(config):
    sms = config.getoption("--sm-count")
    if sms is not None:
        if not ON_GPU:
            raise pytest.UsageError(f"--sm-count is for GPU runs; the interpreter already runs as if on "
                                    f"{runtime.INTERPRETER_SMS} SMs")
        if sms < 1:
            raise pytest.UsageError(f"--sm-count must be at least 1, got {sms}")
        runtime.sm_count = lambda device=None: sms


@pytest.fixture
def device() -> torch.device:
    return runtime.default_device()


@contextlib.contextmanager
def within_arguments():
    """Fail when a kernel launched inside loads or stores a byte outside the tensors it was given.

    The interpreter's loads and stores are watched lane by lane: every lane its mask lets through
    must lie inside the storage of one of the launch's tensor arguments, as on a GPU an access past
    an allocation is an error even where it does not fault. On a GPU this checks nothing;
    compute-sanitizer's memcheck does it there.
    """
    if ON_GPU:
        yield
        return
    from triton.runtime import interpreter

    spans: list[tuple[int, int]] = []  # the storages of the launch being run

    def storages(value):
        if isinstance(value, (tuple, list)):
            return [span for item in value for span in storages(item)]
        base = getattr(value, "base", None)  # a tensor descriptor
        tensor = value if isinstance(value, torch.Tensor) else base if isinstance(base, torch.Tensor) else None
        if tensor is None:
            return []
        storage = tensor.untyped_storage()
        return [(storage.data_ptr(), storage.data_ptr() + storage.nbytes())]

    def check(ptrs, mask, what):
        size = np.dtype(interpreter._get_np_dtype(ptrs.get_element_ty())).itemsize
        address = np.asarray(ptrs.data, dtype=np.uint64).ravel()[np.asarray(mask.data, dtype=bool).ravel()]
        inside = np.zeros(address.shape, dtype=bool)
        for low, high in spans:
            inside |= (address >= low) & (address + size <= high)
        if not inside.all():
            outside = address[~inside]
            low, high = min(spans, key=lambda span: abs(int(outside[0]) - span[1]))
            raise AssertionError(f"a {what} of {outside.size} {size}-byte element(s) outside the kernel's tensors; the first "
                                 f"at byte {int(outside[0]) - low} of a {high - low}-byte storage")

    executor, builder = interpreter.GridExecutor, interpreter.InterpreterBuilder
    launch, masked_load, masked_store = executor.__call__, builder.create_masked_load, builder.create_masked_store

    def call(self, *args, **kwargs):
        spans[:] = storages(list(args) + list(kwargs.values()))
        return launch(self, *args, **kwargs)

    # The interpreter's unmasked loads and stores call these two with a mask of all lanes
    # (triton 3.6 and 3.9), so every access passes through them.
    def load(self, ptrs, mask, *args, **kwargs):
        check(ptrs, mask, "load")
        return masked_load(self, ptrs, mask, *args, **kwargs)

    def store(self, ptrs, value, mask, *args, **kwargs):
        check(ptrs, mask, "store")
        return masked_store(self, ptrs, value, mask, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(executor, "__call__", call)
        patch.setattr(builder, "create_masked_load", load)
        patch.setattr(builder, "create_masked_store", store)
        yield


# sm_86 and sm_89 GPUs (RTX 30x0 and 40x0, A10, L4, L40) let a program use 99 KB of shared memory.
SMALL_GPU_SHARED = 99 * 1024


class SharedMemoryWatch:
    """Every compile-only warmup given a ``NUM_STAGES``, by kernel, as ``(NUM_STAGES, shared bytes)``
    in order: :func:`tritonperf.kernels._rows.fit_stages`' tries, then the launchers' occupancy checks."""

    def __init__(self, limit: int):
        self.limit = limit
        self.compiled: dict[str, list[tuple[int, int]]] = {}

    def check(self, lowered: tuple[str, ...]) -> None:
        """The kernels named in ``lowered`` had to drop stages to fit, and every kernel's last try fits."""
        for name in lowered:
            assert name in self.compiled and self.compiled[name][0][1] > self.limit, (
                f"{name} did not need fewer stages to fit {self.limit} bytes: {self.compiled}")
        for name, tries in self.compiled.items():
            assert tries[-1][1] <= self.limit, f"{name} still asks for {tries[-1][1]} bytes: {tries}"


@pytest.fixture
def small_gpu_shared_memory(monkeypatch) -> SharedMemoryWatch:
    """Pretend the GPU gives a program SMALL_GPU_SHARED bytes, and record the compiles fit_stages asks for."""
    from triton.runtime.jit import JITFunction

    from tritonperf.kernels import _rows

    watch = SharedMemoryWatch(SMALL_GPU_SHARED)
    monkeypatch.setattr(runtime, "shared_memory_per_block", lambda device=None: watch.limit)
    monkeypatch.setattr(_rows, "_FITTED", {})
    warmup = JITFunction.warmup

    def spy(self, *args, **kwargs):
        kernel = warmup(self, *args, **kwargs)
        if "NUM_STAGES" in kwargs:
            watch.compiled.setdefault(self.__name__, []).append((kwargs["NUM_STAGES"], kernel.metadata.shared))
        return kernel

    monkeypatch.setattr(JITFunction, "warmup", spy)
    return watch


@pytest.fixture(autouse=True)
def _release_gpu_memory():
    # pytest-xdist's workers share one GPU: memory a finished test leaves in torch's cache would be
    # missing for a large test in another worker (8 workers on an H200 ran out of memory without this).
    yield
    if ON_GPU and torch.cuda.memory_reserved() > 2**30:
        torch.cuda.empty_cache()


@pytest.fixture(autouse=True)
def _large_memory_tests_take_turns(request, tmp_path_factory):
    # Tests marked large_memory hold tensors of 2**31 elements or more, gigabytes each. With four
    # pytest-xdist workers on one 80 GB H100, one of them ran out of memory while another worker
    # held 51 GB. A lock file in the directory that holds every worker's temporary directory makes
    # them run one at a time; other tests go on beside them.
    if not ON_GPU or request.node.get_closest_marker("large_memory") is None:
        yield
        return
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    with filelock.FileLock(shared / "large_memory.lock"):
        yield
        torch.cuda.empty_cache()  # before the next one starts


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


__all__ = ["ON_GPU", "gpu_only", "within_arguments", "tritonperf"]
