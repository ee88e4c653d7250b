"""Compiling a run's cases in worker processes before it measures them (``tritonperf bench --jobs``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import ON_GPU, gpu_only

from tritonperf import cli, runtime
from tritonperf.bench import precompile, runner
from tritonperf.bench.specs import SPECS, BenchSpec, specs_for


@pytest.mark.parametrize("quick", [False, True])
def test_plan_covers_every_case_once(quick):
    work = precompile.plan(SPECS, quick)
    jobs = [job for job, _ in work]
    assert len(set(jobs)) == len(jobs)
    assert sum(n for _, n in work) == runner.count_cases([s for k in SPECS for s in specs_for(k)], quick)
    # One job is one variant in one dtype: attention's forward has a job per variant and dtype.
    attention_fwd = [job for job in jobs if job.kernel == "attention" and job.direction == "fwd"]
    assert {(job.variant, job.dtype) for job in attention_fwd} >= {("tritonperf", "float16"), ("tritonperf", "bfloat16")}


def test_compile_job_calls_its_variant_at_each_shape_and_reports_what_raised(monkeypatch):
    calls = []

    def ours(n):
        calls.append(("ours", n))
        if n == 16:
            raise ValueError("no 16 today")

    spec = BenchSpec(kernel="vector_add", direction="fwd", metric="GBps", x="N", shapes=[{"N": 8}, {"N": 16}],
                     quick_shapes=[{"N": 8}], dtypes=[torch.float32, torch.float16],
                     make_args=lambda shape, dtype: (shape["N"],),
                     variants={"tritonperf": ours, "torch": lambda n: calls.append(("torch", n))})
    monkeypatch.setattr("tritonperf.bench.specs.specs_for", lambda kernel: [spec])  # spec_for reads it
    errors = precompile.compile_job(precompile.Job("vector_add", "fwd", "tritonperf", "float16"))
    assert calls == [("ours", 8), ("ours", 16)]  # its own variant and dtype only
    assert errors == ["vector_add fwd float16 {'N': 16} tritonperf: ValueError: no 16 today"]
    calls.clear()
    assert precompile.compile_job(precompile.Job("vector_add", "fwd", "torch", "float32"), quick=True) == []
    assert calls == [("torch", 8)]


def test_precompile_runs_every_case_in_worker_processes():
    seen = []
    errors = precompile.precompile(["vector_add"], jobs=2, quick=True, progress=lambda done, total: seen.append((done, total)))
    total = runner.count_cases(specs_for("vector_add"), quick=True)
    assert seen[-1] == (total, total) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    if ON_GPU:
        assert errors == []
    else:  # the benchmark inputs live on a GPU: without one, every case raises, and each is named
        assert len(errors) == total and all(e.startswith("vector_add fwd ") for e in errors)
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        precompile.precompile(["vector_add"], jobs=0)


@gpu_only
def test_a_worker_compiles_the_autotuner_candidates_but_writes_no_tuning_result(tmp_path):
    # In a fresh process with its own Triton cache: an autotuner that caches its results on disk
    # writes them there, unless the process was set up as a precompile worker.
    source = tmp_path / "tuned.py"
    source.write_text(textwrap.dedent("""
        import sys
        from pathlib import Path
        import tritonperf
        import torch, triton, triton.language as tl
        from tritonperf.bench import precompile

        if sys.argv[1] == "worker":
            precompile._init_worker()

        @triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"],
                         cache_results=True)
        @triton.jit
        def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

        x = torch.ones(1000, device="cuda")
        y = torch.zeros_like(x)
        double_kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, 1000)
        assert bool((y == 2).all())
        cache = Path(sys.argv[2])
        print(len(list(cache.rglob("*.autotune.json"))), len(list(cache.rglob("*.cubin"))))
    """))
    counts = {}
    for role in ("worker", "measuring"):
        cache = tmp_path / role
        env = os.environ | {"TRITON_CACHE_DIR": str(cache)}
        out = subprocess.run([sys.executable, str(source), role, str(cache)], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        counts[role] = [int(n) for n in out.stdout.split()]
    assert counts["worker"] == [0, 2]  # both candidates compiled, no tuning result kept
    assert counts["measuring"] == [1, 2]


def test_bench_precompiles_unless_told_not_to(sample_doc, tmp_path, monkeypatch, capsys):
    asked = []

    def fake_precompile(kernels, *, jobs, quick, progress):
        asked.append((list(kernels), jobs, quick))
        progress(3, 3)
        return ["vector_add fwd float32 {'N': 4} torch: RuntimeError: boom"]

    monkeypatch.setattr(runtime, "MODE", "gpu")
    monkeypatch.setattr(cli.runner, "run", lambda kernels, **kwargs: sample_doc)
    monkeypatch.setattr(cli.precompile, "precompile", fake_precompile)
    out = str(tmp_path / "run.json")
    assert cli.main(["bench", "vector_add", "--quick", "--jobs", "3", "--out", out]) == 0
    assert cli.main(["bench", "vector_add", "--jobs", "0", "--out", out]) == 0
    assert cli.main(["bench", "vector_add", "--out", out]) == 0
    assert asked == [(["vector_add"], 3, True), (["vector_add"], cli.DEFAULT_JOBS, False)]
    assert "1 case(s) raised" in capsys.readouterr().out


@pytest.mark.parametrize("jobs", ["-1", "two"])
def test_bench_rejects_a_bad_jobs_count(jobs, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "vector_add", "--jobs", jobs])
    assert exit_.value.code == 2 and "argument --jobs" in capsys.readouterr().err
