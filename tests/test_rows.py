"""fit_stages: the row kernels' pipelines on GPUs with less shared memory than the Hopper they were
tuned on (the kernels themselves under a smaller limit: test_softmax.py, test_norms.py);
staging_split: which rows the staged kernels take, and where their chunks go."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tritonperf.kernels import _rows


class FakeKernel:
    """Stands in for a compiled Triton kernel whose shared memory grows by ``per_stage`` a stage."""

    def __init__(self, per_stage: int):
        self.per_stage = per_stage
        self.compiled: list[int] = []

    def warmup(self, *args, grid, NUM_STAGES, num_warps, **consts):
        self.compiled.append(NUM_STAGES)
        return SimpleNamespace(metadata=SimpleNamespace(shared=NUM_STAGES * self.per_stage))


@pytest.fixture
def fresh_cache(monkeypatch):
    monkeypatch.setattr(_rows, "_FITTED", {})


def test_fit_stages_lowers_until_the_kernel_fits(fresh_cache):
    cuda = torch.device("cuda", 0)  # only named: nothing runs on it
    args = (torch.empty(4), 4)
    kernel = FakeKernel(per_stage=40_000)
    assert _rows.fit_stages(kernel, args, {"NUM_STAGES": 4, "BLOCK_N": 64}, 8, cuda, limit=100_000) == 2
    assert kernel.compiled == [4, 3, 2]
    # Cached: the same question compiles nothing more; another constant is another question.
    assert _rows.fit_stages(kernel, args, {"NUM_STAGES": 4, "BLOCK_N": 64}, 8, cuda, limit=100_000) == 2
    assert kernel.compiled == [4, 3, 2]
    assert _rows.fit_stages(kernel, args, {"NUM_STAGES": 4, "BLOCK_N": 128}, 8, cuda, limit=200_000) == 4
    assert kernel.compiled == [4, 3, 2, 4]


def test_fit_stages_stops_at_one_stage(fresh_cache):
    cuda = torch.device("cuda", 0)
    kernel = FakeKernel(per_stage=300_000)  # too big at any depth: Triton reports it at launch
    assert _rows.fit_stages(kernel, (torch.empty(4),), {"NUM_STAGES": 3}, 4, cuda, limit=100_000) == 1
    assert kernel.compiled == [3, 2, 1]


def test_fit_stages_leaves_unpipelined_and_interpreter_launches_alone(fresh_cache):
    kernel = FakeKernel(per_stage=300_000)
    assert _rows.fit_stages(kernel, (torch.empty(4),), {"NUM_STAGES": 1}, 4, torch.device("cuda", 0), limit=1) == 1
    assert _rows.fit_stages(kernel, (torch.empty(4),), {"NUM_STAGES": 3}, 4, torch.device("cpu"), limit=1) == 3
    assert kernel.compiled == []


def test_staging_split(monkeypatch):
    chunk_bytes = 32768
    assert _rows.staging_split("cpu", 4096, 65536, 2, chunk_bytes // 2) is None  # the CPU: no shared memory
    # A stand-in for a Hopper GPU with shared memory for seven chunks; the CPU counts 4 SMs.
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes <= 7 * chunk_bytes)
    assert _rows.staging_split("cpu", 4096, 65536, 2, chunk_bytes // 2) == (4, 0)
    assert _rows.staging_split("cpu", 4096, 65536, 4, chunk_bytes // 4) == (7, 1)  # the last chunk in registers
    assert _rows.staging_split("cpu", 4096, 40960, 4, chunk_bytes // 4) == (5, 0)
    assert _rows.staging_split("cpu", 4, 256, 4, chunk_bytes // 4) == (1, 0)
    # Rows that need two chunks in registers, bytes other than 2 and 4, runs cut short, fewer rows than SMs.
    for n_rows, n_cols, itemsize in ((4096, 9 * 8192, 4), (4096, 4096, 1), (4096, 4096, 8), (4096, 65536 - 8, 2),
                                     (3, 65536, 2)):
        assert _rows.staging_split("cpu", n_rows, n_cols, itemsize, chunk_bytes // itemsize) is None


def test_rows_in_flight(monkeypatch):
    assert _rows.rows_in_flight("cpu", 3, 1024) == 0  # the CPU: no shared memory
    monkeypatch.setattr(_rows, "can_stage_rows", lambda device, row_bytes: row_bytes <= 200 * 1024)
    assert _rows.rows_in_flight("cpu", 3, 64 * 1024) == 3  # as many as asked for where they fit
    assert _rows.rows_in_flight("cpu", 8, 64 * 1024) == 3  # otherwise as many as fit
    assert _rows.rows_in_flight("cpu", 3, 64 * 1024, 32 * 1024) == 2  # beside the kernel's own bytes
    assert _rows.rows_in_flight("cpu", 3, 256 * 1024) == 0


def test_chunk_elements_hold_the_same_bytes_whatever_the_dtype():
    for itemsize in (2, 4):
        assert _rows.chunk_elements(64, itemsize) * itemsize == 64 * _rows.STAGED_VIEW * 2 == 32 * 1024


@pytest.mark.parametrize(
    "n_cols, blocks",
    [
        (1, (1, 0)),
        (4096, (4096, 0)),  # a power of two: one block, no tail
        (4097, (4096, 1)),
        (5120, (4096, 1024)),  # the tail covers the rest exactly
        (3000, (2048, 1024)),  # 952 of the tail's 1024 lanes hold the row
        (7168, (8192, 0)),  # 4096 + 4096 would hold no fewer lanes than one block of 8192
        (6143, (4096, 2048)),
    ],
)
def test_head_and_tail(n_cols, blocks):
    head, tail = _rows.head_and_tail(n_cols)
    assert (head, tail) == blocks
    assert head + tail >= n_cols and head & (head - 1) == 0 and tail & (tail - 1) == 0
