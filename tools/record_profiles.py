"""Record what three profilers print for kernels of ours, for the chapter on profiling.

Run on a machine with a CUDA GPU (``nox -s profiles``)::

    python tools/record_profiles.py --out docs/results/profiles

It writes one text file per tool and workload under ``<out>/<gpu-slug>/``, each starting with
where, when and with what it was recorded: the PyTorch profiler's table, proton's call tree and
Nsight Compute's report (``ncu``) for one launch of each chosen kernel. Tools that are missing or
fail leave a file that says so instead of the output, so a partial run is never mistaken for a
complete one.

Proton and ncu each run the workload in a child process of this script. For ncu that is how it
works; for proton it is required: CUPTI takes one subscriber per process, and after the PyTorch
profiler has run here, ``proton.start`` in the same process fails in ``cuptiSubscribe``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import tritonperf  # noqa: F401  (first: chooses GPU or interpreter before any kernel is defined)
from tritonperf.bench import records

M, N = 4096, 4096

# Kernels that ncu profiles: (file stem, workload, kernel-name regex, why it is interesting).
NCU_TARGETS = [
    ("ncu_softmax", "softmax", "softmax_fwd", "the fused softmax forward: memory-bound, near the copy ceiling"),
    ("ncu_transpose_rows", "transpose-rows", "row_per_program", "the transpose lesson's step 1: strided writes"),
    ("ncu_transpose_tiles", "transpose-tiles", "^transpose_kernel$", "the tuned transpose: 2-D tiles through shared memory"),
]
NCU_SECTIONS = ["SpeedOfLight", "MemoryWorkloadAnalysis", "LaunchStats", "Occupancy"]


def workload(name: str) -> None:
    """Run one workload a few times: what each profiler observes."""
    from tritonperf import layer_norm, softmax, transpose
    from tritonperf.ladders.transpose import transpose_row_per_program

    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w, b = torch.randn(N, device="cuda", dtype=torch.float16), torch.randn(N, device="cuda", dtype=torch.float16)
    out = torch.empty(N, M, device="cuda", dtype=torch.float16)
    steps = {
        "softmax": lambda: softmax(x),
        "transpose-rows": lambda: transpose_row_per_program(x, out),
        "transpose-tiles": lambda: transpose(x, out, method="tiles"),
        # A small "model step": ours and torch's versions of the same two operations.
        "step": lambda: (softmax(layer_norm(x, w, b)), torch.softmax(torch.nn.functional.layer_norm(x, (N,), w, b), -1)),
    }
    for _ in range(3):
        steps[name]()
    torch.cuda.synchronize()


def header(command: str) -> str:
    prov = records.provenance(command)
    return f"# {records.provenance_text(prov)}\n# command: {command}\n\n"


def torch_profiler_table() -> str:
    from torch.profiler import ProfilerActivity, profile

    workload("step")  # compile and warm up outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        workload("step")
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=48)


def proton_session(session: Path) -> None:
    """Child process: run the step under a proton session; proton writes ``<session>.hatchet``."""
    import triton.profiler as proton

    workload("step")  # compile and warm up outside the session
    proton.start(str(session), hook="triton")  # hook="triton": one node per Triton launch, named after the kernel
    with proton.scope("step"):
        workload("step")
    proton.finalize()


def proton_tree(tmp: Path) -> str:
    if importlib.util.find_spec("hatchet") is None:
        raise RuntimeError("proton-viewer needs the hatchet package: pip install llnl-hatchet")
    session = tmp / "step"
    # A process of its own: this one's CUPTI subscriber belongs to the PyTorch profiler.
    run([sys.executable, __file__, "--proton", str(session)])
    hatchet = session.with_suffix(".hatchet")
    if not hatchet.is_file():
        raise RuntimeError(f"the proton child finished but wrote no {hatchet.name}; found: {sorted(p.name for p in tmp.iterdir())}")
    viewer = [sys.executable, "-m", "triton.profiler.viewer", "-m", "time/us", str(hatchet)]
    return run(viewer)


def run(cmd: list[str]) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"{cmd[0]} exited with {result.returncode}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result.stdout


def ncu_report(workload_name: str, kernel_regex: str) -> str:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise RuntimeError("ncu (Nsight Compute) is not on PATH")
    sections = [arg for s in NCU_SECTIONS for arg in ("--section", s)]
    # Skip the first launch (it includes compilation on a cold cache); profile the second.
    cmd = [ncu, *sections, "-k", f"regex:{kernel_regex}", "--launch-skip", "1", "--launch-count", "1",
           sys.executable, __file__, "--workload", workload_name]
    return run(cmd)


def write(path: Path, command: str, make) -> None:
    try:
        body = make()
    except Exception as err:  # recorded as such: the chapter must not show a half run as real output
        body = f"NOT RECORDED: {type(err).__name__}: {err}\n"
    path.write_text(header(command) + body)
    print(f"wrote {path} ({len(body.splitlines())} lines)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/profiles"), help="folder for <gpu-slug>/*.txt")
    parser.add_argument("--workload", help=argparse.SUPPRESS)  # used by ncu's child process
    parser.add_argument("--proton", type=Path, help=argparse.SUPPRESS)  # used by proton's child process
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("profiling needs a CUDA GPU; none is visible to torch")
    if args.workload:
        workload(args.workload)
        return
    if args.proton:
        proton_session(args.proton)
        return
    folder = args.out / records.slug(torch.cuda.get_device_name())
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        write(folder / "torch_profiler.txt", "torch.profiler.profile(...).key_averages().table(...)", torch_profiler_table)
        write(folder / "proton.txt", "proton.start(..., hook='triton') in a child process; proton-viewer -m time/us",
              lambda: proton_tree(Path(tmp)))
    for stem, name, regex, why in NCU_TARGETS:
        command = f"ncu {' '.join('--section ' + s for s in NCU_SECTIONS)} -k regex:{regex} --launch-skip 1 --launch-count 1  # {why}"
        write(folder / f"{stem}.txt", command, lambda name=name, regex=regex: ncu_report(name, regex))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
