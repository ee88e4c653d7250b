"""Record what the first call of the autotuned matmul costs, for the matmul lesson.

Run on a machine with a CUDA GPU (``nox -s first_call``)::

    python tools/record_first_call.py --out docs/results/first_call

It times :func:`tritonperf.matmul` on float16 ``4096³`` and ``8192 × 8192 × 1024`` products in
two fresh Python processes that share one new, empty ``TRITON_CACHE_DIR``. In the first, the
first call of each shape compiles and times every candidate configuration; in the second, the
first call finds the compiled kernels and the tuning results in the cache. Each process also
times a later call (the median of several, synchronized), and the import of
:mod:`tritonperf`. It writes ``<out>/<gpu-slug>.md``: a Markdown table headed by where, when and
with what it was recorded, which the lesson prints as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = [(4096, 4096, 4096), (8192, 8192, 1024)]
LATER_CALLS = 10


def child() -> None:
    """Measure in this process and print one JSON line: import time, then per shape first and later call."""
    start = time.perf_counter()
    import torch

    import tritonperf
    from tritonperf.testing import random_tensor

    result = {"import_s": time.perf_counter() - start, "shapes": []}
    for m, n, k in SHAPES:
        a, b = random_tensor((m, k), torch.float16, "cuda"), random_tensor((k, n), torch.float16, "cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        tritonperf.matmul(a, b)
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        later = []
        for _ in range(LATER_CALLS):
            start = time.perf_counter()
            tritonperf.matmul(a, b)
            torch.cuda.synchronize()
            later.append(time.perf_counter() - start)
        result["shapes"].append({"shape": [m, n, k], "first_s": first, "later_s": statistics.median(later)})
    print(json.dumps(result))


def run_child(cache: str) -> dict:
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    env.pop("TRITON_PRINT_AUTOTUNING", None)
    done = subprocess.run([sys.executable, __file__, "--child"], env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(cold: dict, warm: dict) -> str:
    lines = [
        "| shape (M × N × K) | first call, empty cache | first call, new process, cache kept | later calls |",
        "| --- | ---: | ---: | ---: |",
    ]
    for c, w in zip(cold["shapes"], warm["shapes"], strict=True):
        shape = " × ".join(map(str, c["shape"]))
        later = statistics.median([c["later_s"], w["later_s"]])
        lines.append(f"| {shape} | {c['first_s']:.2f} s | {w['first_s'] * 1e3:,.0f} ms | {later * 1e3:.2f} ms |")
    lines.append(f"| import of tritonperf (and torch) | {cold['import_s']:.2f} s | {warm['import_s']:.2f} s | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/first_call"), help="folder for <gpu-slug>.md")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    import torch

    from tritonperf.bench import records

    if not torch.cuda.is_available():
        parser.error("timing the first call needs a CUDA GPU; none is visible to torch")
    with tempfile.TemporaryDirectory(prefix="tritonperf-first-call-") as cache:
        print("first process, empty cache ...", flush=True)
        cold = run_child(cache)
        print("second process, same cache ...", flush=True)
        warm = run_child(cache)
    prov = records.provenance(" ".join(["python", "tools/record_first_call.py", *sys.argv[1:]]))
    description = (
        "`tritonperf.matmul`, float16, default method; wall-clock seconds of one call, synchronized; "
        f"later calls: median of {LATER_CALLS}."
    )
    path = records.save_markdown(prov, description, table(cold, warm), args.out)
    print(path.read_text())


if __name__ == "__main__":
    main()
