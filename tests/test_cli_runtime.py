"""The ``tritonperf`` command and mode detection."""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter

import pytest
import torch
from conftest import ON_GPU, gpu_only

from tritonperf import cli, runtime
from tritonperf.bench import records


def test_mode_matches_the_hardware():
    assert runtime.MODE == ("gpu" if ON_GPU else "interpreter")
    assert runtime.default_device() == torch.device("cuda" if ON_GPU else "cpu")
    assert runtime.pick(gpu="big", cpu="small") == ("big" if ON_GPU else "small")


def test_sm_count():
    # A CPU device, and every device in interpreter mode, gets the small stand-in that persistent
    # grids assume; a GPU gets its own count.
    assert runtime.sm_count(torch.device("cpu")) == runtime.INTERPRETER_SMS == 4
    if ON_GPU:
        props = torch.cuda.get_device_properties(0)
        assert runtime.sm_count(torch.device("cuda", 0)) == props.multi_processor_count > runtime.INTERPRETER_SMS
    else:
        assert runtime.sm_count(None) == runtime.INTERPRETER_SMS


def test_no_gpu_means_interpreter_in_a_fresh_process():
    code = "import os, tritonperf; print(tritonperf.runtime.MODE, os.environ.get('TRITON_INTERPRET'))"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["interpreter", "1"]


def test_info_prints_mode_and_versions(capsys):
    assert cli.main(["info", "--no-ceilings"]) == 0
    out = capsys.readouterr().out
    assert ("GPU mode" if ON_GPU else "interpreter mode") in out
    assert "triton" in out and "torch" in out


@pytest.mark.skipif(ON_GPU, reason="checks the message given when there is no GPU")
def test_bench_without_gpu_fails_clearly(capsys):
    assert cli.main(["bench", "vector_add"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_bench_rejects_unknown_kernel(capsys):
    assert cli.main(["bench", "vector_mul"]) == 2
    assert "unknown kernel(s) vector_mul; known: vector_add" in capsys.readouterr().err


def test_compare_two_files(sample_doc, tmp_path, capsys):
    old = records.save(sample_doc, tmp_path / "old.json")
    sample_doc["records"][0]["ms"] /= 2
    new = records.save(sample_doc, tmp_path / "new.json")
    assert cli.main(["compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "2.000×" in out and "vector_add" in out


def test_compare_summary_and_threshold(sample_doc, tmp_path, capsys):
    old = records.save(sample_doc, tmp_path / "old.json")
    sample_doc["records"][0]["ms"] /= 2  # 20 µs recorded, twice as fast now
    sample_doc["records"][3]["ms"] /= 1.01  # 200 µs recorded, 1% faster now
    new = records.save(sample_doc, tmp_path / "new.json")
    assert cli.main(["compare", str(old), str(new), "--summary"]) == 0
    out = capsys.readouterr().out
    assert "how far each kernel's records moved" in out and "2.000×" in out
    assert "recorded µs" not in out  # no table of every record
    assert cli.main(["compare", str(old), str(new), "--summary", "--min-us", "100"]) == 0
    out = capsys.readouterr().out
    assert "calls of 100 µs or more" in out and "1.010×" in out and "2.000×" not in out
    assert cli.main(["compare", str(old), str(new), "--min-us", "1e6"]) == 0
    assert "no record appears in both" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["-1", "inf", "nan", "fast"])
def test_compare_rejects_a_bad_threshold(sample_doc, tmp_path, capsys, value):
    old = records.save(sample_doc, tmp_path / "old.json")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", str(old), str(old), "--min-us", value])
    assert exit_info.value.code == 2
    assert "--min-us" in capsys.readouterr().err


def test_compare_rejects_an_invalid_file(sample_doc, tmp_path, capsys):
    sample_doc["ceilings"] = {}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(sample_doc))
    assert cli.main(["compare", str(bad), str(bad)]) == 2
    assert "field ceilings" in capsys.readouterr().err


def test_help_lists_every_subcommand():
    text = cli.help_text()
    for command in ("info", "bench", "compare", "targets"):
        assert f"$ tritonperf {command} --help" in text


@gpu_only
def test_bench_writes_a_valid_file(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert cli.main(["bench", "vector_add", "--quick", "--out", str(out)]) == 0
    doc = records.load(out)
    variants = {r["variant"] for r in doc["records"]}
    assert variants == {"tritonperf", "torch", "step-1-block-128"}
    assert doc["ceilings"]["copy_GBps"] > 100
    assert re.fullmatch(r"\d+\.\d+", doc["provenance"]["ptxas"])
    assert "% of ceiling" in capsys.readouterr().out


@gpu_only
def test_timing_sees_the_difference_between_one_and_two_copies():
    from tritonperf.bench.timing import interleave, prepare, time_ms

    n = 1 << 26

    def make_args():
        return torch.randn(n, device="cuda"), torch.empty(n, device="cuda")

    # Interleaved, so that other work on the GPU (pytest-xdist workers share it) lands on both
    # functions alike: timed one after the other under -n 8 on an H200, two copies once took 4.0
    # times as long as one.
    copies = [prepare(fn, make_args, 8 * n) for fn in (lambda a, b: b.copy_(a), lambda a, b: (b.copy_(a), b.copy_(a)))]
    once, twice = interleave(copies)
    assert 1.6 < twice / once < 2.4
    # Other work can only slow a copy down. A timer that did not wait for the GPU would see
    # launches only: 512 MiB in a few microseconds, far past any memory's bandwidth.
    alone = time_ms(lambda a, b: b.copy_(a), make_args, 8 * n)
    assert 8 * n / (alone * 1e-3) < 20e12
    # A tiny copy goes through the CUDA-graph path and must still take positive, small time.
    tiny = time_ms(lambda a, b: b.copy_(a), lambda: (torch.randn(1024, device="cuda"), torch.empty(1024, device="cuda")), 8192)
    assert 0 < tiny < alone


@pytest.mark.parametrize(
    "out, expected",
    [(None, "example-gpu.json"), ("runs/", "runs/example-gpu.json"), ("mine.json", "mine.json")],
)
def test_bench_output_path(out, expected, sample_doc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert str(cli._out_path(out, sample_doc)) == expected
    (tmp_path / "folder").mkdir()
    assert str(cli._out_path("folder", sample_doc)) == "folder/example-gpu.json"


def test_bench_logs_each_measurement_off_a_terminal(sample_doc, tmp_path, monkeypatch, capsys):
    # The measuring itself needs a GPU; here a stand-in run reports one record, as the real one
    # does, and checkpoints it: the partial file exists until the whole file is written.
    partial = tmp_path / "run.json.partial"

    def fake_run(kernels, *, command, quick, progress, log, failures, checkpoint):
        progress(1, 99, sample_doc["records"][0])
        checkpoint(sample_doc | {"records": sample_doc["records"][:1]})
        assert records.load(partial)["records"] == sample_doc["records"][:1]
        return sample_doc

    monkeypatch.setattr(runtime, "MODE", "gpu")
    monkeypatch.setattr(cli.runner, "run", fake_run)
    assert cli.main(["bench", "vector_add", "--jobs", "0", "--out", str(tmp_path / "run.json")]) == 0
    out = capsys.readouterr().out
    assert "vector_add fwd float32 N=1048576 tritonperf: 20.0 µs" in out
    assert records.load(tmp_path / "run.json") == sample_doc and not partial.exists()


def test_importing_triton_first_warns_without_gpu():
    code = "import triton, tritonperf"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and "import tritonperf first" in out.stderr


@pytest.mark.parametrize(
    "triton_version, numpy_version, conflict",
    [
        ("3.6.0", "2.4.6", True),  # the interpreter's int() of a one-element array: an error from NumPy 2.4 on
        ("3.6.0+git1a2b3c4", "2.4.0", True),  # local builds read by their release numbers
        ("3.6.0", "2.3.5", False),
        ("3.7.0", "2.4.6", False),
        ("3.9.0", "2.4.6", False),
    ],
)
def test_interpreter_conflict(triton_version, numpy_version, conflict):
    message = runtime.interpreter_conflict(triton_version, numpy_version)
    assert (message is not None) == conflict
    if conflict:
        assert f"triton {triton_version}" in message and "numpy<2.4" in message


def test_bench_keeps_going_past_a_failing_case(sample_doc, tmp_path, monkeypatch, capsys):
    # A case that raises is reported and left out; the file is still written, and the exit status says so.
    def fake_run(kernels, *, command, quick, progress, log, failures, checkpoint):
        failures.append("vector_add fwd float32 {'N': 4} tritonperf: RuntimeError: boom")
        return sample_doc

    monkeypatch.setattr(runtime, "MODE", "gpu")
    monkeypatch.setattr(cli.runner, "run", fake_run)
    assert cli.main(["bench", "vector_add", "--jobs", "0", "--out", str(tmp_path / "run.json")]) == 1
    err = capsys.readouterr().err
    assert "1 case(s) failed" in err and "RuntimeError: boom" in err
    assert records.load(tmp_path / "run.json") == sample_doc


def test_interleave_soaks_then_takes_turns():
    # Stand-in timers log what interleave asks of them: every one soaks, then each round times
    # every timer that has replays left in it, each block after a warm-up of its own unless one
    # replay is longer than the warm-up, in an order that varies between rounds and repeats
    # between runs; every timer gets exactly its replays, spread over the rounds.
    from tritonperf.bench.timing import interleave

    def run(seed):
        log = []

        class Timer:
            def __init__(self, name, replays, replay_ms=1.0):
                self.name, self.replays, self.replay_ms, self.samples = name, replays, replay_ms, []

            def soak(self, ms):
                log.append(("soak", self.name, ms))

            def time(self, replays):
                log.append((self.name, replays))
                self.samples += [float(len(log))] * replays

            def median_ms(self):
                return sum(self.samples) / len(self.samples)

        timers = [Timer("a", 10), Timer("b", 10), Timer("c", 5), Timer("long", 2, replay_ms=7.0)]
        medians = interleave(timers, rounds=4, soak_ms=400, warm_ms=7, seed=seed)
        return log, medians

    log, medians = run(seed=0)
    assert log[:4] == [("soak", name, 100) for name in ("a", "b", "c", "long")]
    timed = [(i, entry) for i, entry in enumerate(log) if entry[0] != "soak"]
    for i, (name, _) in timed[:]:
        warmed = log[i - 1] == ("soak", name, 7)
        assert warmed == (name != "long"), (name, log[i - 1])
    assert len(log) == 4 + len(timed) + sum(name != "long" for _, (name, _) in timed)
    replays = {name: [n for _, (who, n) in timed if who == name] for name in ("a", "b", "c", "long")}
    assert replays == {"a": [2, 3, 2, 3], "b": [2, 3, 2, 3], "c": [1, 1, 1, 2], "long": [1, 1]}
    rounds, order = [], []
    for _, (name, _) in timed:
        if name in order:
            rounds.append(tuple(order))
            order = []
        order.append(name)
    rounds.append(tuple(order))
    orders = [tuple(n for n in o if n != "long") for o in rounds]
    assert all(sorted(o) == ["a", "b", "c"] for o in orders) and len(set(orders)) > 1
    assert run(seed=0) == (log, medians) and len(medians) == 4
    assert interleave([]) == []


@pytest.mark.parametrize("n", range(1, 11))
def test_balanced_orders_let_every_function_follow_every_other_evenly(n):
    # Ten rounds of n functions, the last of them soaked just before: every round is a permutation,
    # none follows itself, and function by function the counts of its predecessors (the soaked one
    # included) differ by at most 1. A shuffle per round from one seed, as before, had the fourth of
    # five follow the third in five rounds of ten and the first in one.
    from tritonperf.bench.timing import balanced_orders

    orders = balanced_orders([list(range(n))] * 10, before=n - 1)
    assert len(orders) == 10 and all(sorted(order) == list(range(n)) for order in orders)
    sequence = [n - 1] + [i for order in orders for i in order]
    follows = Counter(itertools.pairwise(sequence))
    for b in range(n):
        counts = [follows[a, b] for a in range(n) if a != b]
        assert not counts or max(counts) - min(counts) <= 1, (b, counts)
        assert n == 1 or follows[b, b] == 0  # no function twice in a row, across rounds either
    assert balanced_orders([list(range(n))] * 10, before=n - 1) == orders  # repeatable


def test_balanced_orders_keep_each_rounds_members():
    # Functions with fewer replays than rounds sit some rounds out: each round orders its own.
    from tritonperf.bench.timing import balanced_orders

    rounds = [[0, 1, 2, 3] if r % 2 else [2, 3] for r in range(10)]
    orders = balanced_orders(rounds, before=3, seed=1)
    assert [sorted(order) for order in orders] == rounds
    assert balanced_orders([], before=0) == []


def test_measure_records_failures_and_goes_on(monkeypatch):
    from tritonperf.bench import runner
    from tritonperf.bench.specs import BenchSpec

    def fake_prepare(fn, make_args, nbytes):
        return fn()  # the "timer" is the call's result: a time, unless the call raises

    def fake_interleave(timers):
        return list(timers)

    def broken():
        raise RuntimeError("no kernel today")

    spec = BenchSpec(kernel="vector_add", direction="fwd", metric="GBps", x="N", shapes=[{"N": 8}], quick_shapes=[],
                     dtypes=[torch.float32], make_args=lambda shape, dtype: (),
                     variants={"tritonperf": lambda: 0.5, "torch": broken}, nbytes=lambda shape, dtype: 64)
    monkeypatch.setattr(runner, "prepare", fake_prepare)
    monkeypatch.setattr(runner, "interleave", fake_interleave)
    failures: list[str] = []
    recs = runner.measure(spec, failures=failures)
    assert [r["variant"] for r in recs] == ["tritonperf"] and recs[0]["ms"] == 0.5
    assert failures == ["vector_add fwd float32 {'N': 8} torch: RuntimeError: no kernel today"]
    with pytest.raises(RuntimeError, match="no kernel today"):
        runner.measure(spec)  # without a list, the first failure stops the run


def test_run_checkpoints_what_it_has_measured(monkeypatch):
    # A long run hands its records so far to the checkpoint as it goes (here after every
    # record), as valid documents of the same run, each longer than the last.
    from tritonperf.bench import records, runner
    from tritonperf.bench.specs import BenchSpec

    spec = BenchSpec(kernel="vector_add", direction="fwd", metric="GBps", x="N", shapes=[{"N": 8}, {"N": 16}],
                     quick_shapes=[], dtypes=[torch.float32], make_args=lambda shape, dtype: (),
                     variants={"tritonperf": lambda: 0.5, "torch": lambda: 0.25}, nbytes=lambda shape, dtype: 64)
    prov = {"gpu": "NVIDIA H200", "sms": 132, "triton": "3.6.0", "torch": "2.11.0", "cuda": "13.0",
            "date": "2026-01-01T00:00:00Z", "git_commit": "abc1234", "command": "tritonperf bench"}
    monkeypatch.setattr(runner.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(runner.records, "provenance", lambda command: prov)
    monkeypatch.setattr(runner, "specs_for", lambda kernel: [spec])
    monkeypatch.setattr(runner, "prepare", lambda fn, make_args, nbytes: fn())
    monkeypatch.setattr(runner, "interleave", lambda timers: list(timers))
    monkeypatch.setattr(runner.torch.cuda, "empty_cache", lambda: None)
    saved = []
    doc = runner.run(["vector_add"], command="tritonperf bench", ceilings={"copy_GBps": 4000.0},
                     checkpoint=lambda partial: saved.append(records.validate(partial, "partial")), checkpoint_s=0)
    assert [len(d["records"]) for d in saved] == [1, 2, 3, 4]
    assert saved[-1]["records"] == doc["records"] and all(d["provenance"] == prov for d in saved)


def _descriptor_cases(cuda: torch.device) -> dict:
    # Each entry: (call, arguments, reference). On Hopper each call takes its descriptor path: rows
    # of 65536 staged (at least as many rows as SMs), the TMA transpose, the warp-specialized attention.
    from tritonperf import kernels
    from tritonperf.testing import random_tensor

    rows, bf16, fp16 = runtime.sm_count(cuda) + 5, torch.bfloat16, torch.float16
    y = kernels.softmax_reference(random_tensor((rows, 65536), torch.float32, cuda))
    hopper = torch.cuda.get_device_capability(cuda) >= (9, 0)
    return {
        "softmax": (kernels.softmax, (random_tensor((rows, 65536), bf16, cuda),), kernels.softmax_reference),
        "softmax_backward": (kernels.softmax_backward, (y, random_tensor(y.shape, torch.float32, cuda)),
                             kernels.softmax_backward_reference),
        "rms_norm": (kernels.rms_norm, (random_tensor((rows, 65536), bf16, cuda), random_tensor((65536,), bf16, cuda)),
                     kernels.rms_norm_reference),
        "transpose": (functools.partial(kernels.transpose, method="tma" if hopper else "tiles"),
                      (random_tensor((1024, 512), fp16, cuda),), kernels.transpose_reference),
        "attention": (kernels.attention, tuple(random_tensor((1, 2, 1024, 128), fp16, cuda) for _ in range(3)),
                      kernels.attention_reference),
    }


@gpu_only
@pytest.mark.parametrize("entry", ["softmax", "softmax_backward", "rms_norm", "transpose", "attention"])
def test_descriptor_launches_on_a_thread_without_a_context(entry):
    # A new thread has no current CUDA context until it makes a CUDA call, and Triton fills a
    # host-side tensor descriptor before its launcher sets one; autograd runs a backward on such a
    # thread. Each call runs as a fresh thread's first CUDA work (runtime.bind_context).
    from tritonperf.testing import assert_close

    call, args, reference = _descriptor_cases(torch.device("cuda"))[entry]
    expected = reference(*(a.double() for a in args))
    # A first call here compiles and loads the kernels and leaves its memory in torch's cache: the
    # thread's call then allocates without asking CUDA for memory, a call that would bind a context.
    call(*args)
    torch.cuda.synchronize()
    result: dict[str, object] = {}

    def work():
        try:
            result["out"] = call(*args)
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 (handed back to the test's thread)
            result["error"] = exc

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    assert_close(result["out"], expected, args[0].dtype)


def _executable(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_use_torch_ptxas_points_triton_at_torchs_ptxas(tmp_path, monkeypatch):
    ptxas = _executable(tmp_path / "bin" / "ptxas")
    monkeypatch.setattr(runtime, "_torch_ptxas", lambda: ptxas)
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    assert runtime.use_torch_ptxas() == ptxas
    assert os.environ["TRITON_PTXAS_PATH"] == ptxas


def test_use_torch_ptxas_keeps_a_choice_already_made(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime, "_torch_ptxas", lambda: _executable(tmp_path / "torch" / "ptxas"))
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/cuda/bin/ptxas")
    assert runtime.use_torch_ptxas() == "/opt/cuda/bin/ptxas"
    assert os.environ["TRITON_PTXAS_PATH"] == "/opt/cuda/bin/ptxas"


@pytest.mark.parametrize("make", [None, "not executable"])
def test_use_torch_ptxas_leaves_triton_its_own_when_torch_has_none(make, tmp_path, monkeypatch):
    ptxas = tmp_path / "ptxas"
    if make:
        ptxas.write_text("")
        ptxas.chmod(0o644)
    monkeypatch.setattr(runtime, "_torch_ptxas", lambda: str(ptxas))
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    assert runtime.use_torch_ptxas() is None
    assert "TRITON_PTXAS_PATH" not in os.environ


def test_every_command_chooses_the_ptxas_before_it_runs(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(runtime, "use_torch_ptxas", lambda: calls.append("ptxas"))
    monkeypatch.setattr(cli, "cmd_info", lambda args: calls.append("command") or 0)
    cli.main(["info", "--no-ceilings"])
    assert calls == ["ptxas", "command"]
