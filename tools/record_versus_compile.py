"""Record how the norm forwards' launch configurations compare with ``torch.compile``, for the layer-norm lesson.

Run on a machine with a CUDA GPU (``nox -s versus_compile``)::

    python tools/record_versus_compile.py --out docs/results/versus_compile

For each norm (layer norm, RMS norm), dtype and shape of the benchmark's forward sweep (rows of
up to 16384 columns; longer rows take the split path, far ahead of ``torch.compile``), it times
in one interleaved run: ``tritonperf`` with its default configuration, ``tritonperf`` with each
of a fixed list of other configurations (``block_n``, ``rows``, ``num_warps``), and
``torch.compile`` of ``F.layer_norm`` / ``F.rms_norm``. It also reads which kernel and
configuration Inductor's autotuner kept, and measures the copy ceiling in the same run. It writes
``<out>/<gpu-slug>.md``: a Markdown table headed by where, when and with what it was recorded,
which the lesson prints as it is.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

SHAPES = [(4096, 256), (4096, 1024), (4096, 4096), (4096, 8192), (4096, 16384), (16384, 4096), (16384, 5120), (16384, 8192)]
SHORT_ROWS = [(2, 1), (4, 1), (4, 2), (8, 2), (8, 4), (2, 2), (4, 4)]  # (rows, num_warps) for rows of up to 2048 columns
HELD_WARPS = (8, 16, 32)  # whole rows in registers
TILED = [(2048, 8), (2048, 16), (4096, 16), (4096, 32), (8192, 16), (8192, 32)]  # (block_n, num_warps), two passes


def candidates(n: int) -> list[dict[str, int]]:
    """The configurations timed besides the default for rows of ``n`` columns."""
    whole = 1 << (n - 1).bit_length()
    if n <= 2048:
        return [{"block_n": whole, "rows": r, "num_warps": w} for r, w in SHORT_ROWS]
    return [{"block_n": whole, "num_warps": w} for w in HELD_WARPS] + [
        {"block_n": b, "num_warps": w} for b, w in TILED if b < n
    ]


def _count(n, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def describe(config) -> str:
    """A configuration in a few words: ``1 row × 4096 columns, 16 warps, tiled``."""
    path = ", tiled" if config.tiled else (", read again" if config.reload else "")
    return f"{_count(config.rows, 'row')} × {config.block_n} columns, {_count(config.num_warps, 'warp')}{path}"


def inductor_kernels(seen: set[int]) -> str:
    """The Triton kernels Inductor tuned since ``seen`` was last updated, with the configuration its autotuner kept.

    Reads ``CachingAutotuner`` objects, an internal of ``torch._inductor``: one that does not hold
    exactly one tuned launcher is left out, and where none does the answer says so.
    """
    found = []
    for obj in gc.get_objects():
        if type(obj).__name__ != "CachingAutotuner" or id(obj) in seen:
            continue
        seen.add(id(obj))
        launchers = getattr(obj, "launchers", None) or []
        if len(launchers) != 1:
            continue
        config = launchers[0].config
        kwargs = dict(config.kwargs)
        block = kwargs.get("R0_BLOCK", kwargs.get("RBLOCK"))
        loop = f"a loop over tiles of {block} columns" if block else "the whole row at once"
        found.append(f"{_count(kwargs.get('XBLOCK', '?'), 'row')} a program, {loop}, {_count(config.num_warps, 'warp')}")
    return "; ".join(dict.fromkeys(found)) or "unknown"


def measure(log) -> tuple[dict, float, list[dict]]:
    """Time every case; return the provenance, the copy ceiling and one row per case."""
    import torch

    from tritonperf.bench import records, timing
    from tritonperf.bench.ceilings import copy_GBps
    from tritonperf.bench.suites.norms import compiled_layer_norm, compiled_rms_norm
    from tritonperf.kernels import norms
    from tritonperf.testing import random_tensor

    prov = records.provenance(" ".join(["python", "tools/record_versus_compile.py", *sys.argv[1:]]))
    ceiling = copy_GBps()
    log(f"copy ceiling {ceiling:,.0f} GB/s")
    seen: set[int] = set()
    inductor_kernels(seen)
    rows = []
    for rms in (False, True):
        name = "rms_norm" if rms else "layer_norm"
        ours = norms.rms_norm_fwd if rms else norms.layer_norm_fwd
        compiled = compiled_rms_norm if rms else compiled_layer_norm  # the benchmark's own
        for dtype in (torch.float16, torch.bfloat16, torch.float32):
            for m, n in SHAPES:
                start = time.perf_counter()

                def make(m=m, n=n, dtype=dtype, rms=rms):
                    params = [random_tensor((n,), dtype, "cuda") for _ in range(1 if rms else 2)]
                    return (random_tensor((m, n), dtype, "cuda"), *params)

                args = make()
                expected = ours(*args)[0].float()
                knobs = candidates(n)
                for knob in knobs:  # a configuration that computes something else must not be timed
                    torch.testing.assert_close(ours(*args, **knob)[0].float(), expected, rtol=2e-2, atol=2e-2)
                fns = [ours] + [lambda *a, f=ours, k=k: f(*a, **k) for k in knobs] + [compiled]
                nbytes = (norms.rms_norm_bytes if rms else norms.layer_norm_bytes)(m, n, dtype)
                timers = [timing.prepare(fn, make, nbytes) for fn in fns]
                kernels = inductor_kernels(seen)
                gbps = [nbytes / ms * 1e-6 for ms in timing.interleave(timers)]
                del timers
                configs = [norms.norm_config(m, n, "fwd", args[0].device, itemsize=dtype.itemsize, rms=rms, **k)
                           for k in [{}] + knobs]
                best = max(range(len(configs)), key=lambda i: gbps[i])
                row = {
                    "norm": name, "dtype": str(dtype).removeprefix("torch."), "M": m, "N": n,
                    "compiled": gbps[-1], "inductor": kernels, "default": gbps[0], "default_config": describe(configs[0]),
                    "best": gbps[best], "best_config": describe(configs[best]), "tried": len(configs),
                }
                rows.append(row)
                log(f"{name:10} {row['dtype']:8} {m:>5} x {n:<5} torch.compile {gbps[-1]:5,.0f} GB/s; "
                    f"default {gbps[0] / gbps[-1]:.3f}x, best of {len(configs)} {gbps[best] / gbps[-1]:.3f}x "
                    f"({row['best_config']}) [{time.perf_counter() - start:.0f} s]")
    return prov, ceiling, rows


def table(rows: list[dict], ceiling: float) -> str:
    """The Markdown table: one line per case."""
    lines = [
        "| norm | dtype | M × N | `torch.compile`, share of copy | Inductor's kernel | default / `torch.compile` "
        "| best of the configurations / `torch.compile` |",
        "| --- | --- | --- | ---: | --- | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['norm']} | {r['dtype']} | {r['M']} × {r['N']} | {r['compiled'] / ceiling:.3f} | {r['inductor']} "
            f"| {r['default'] / r['compiled']:.3f} ({r['default_config']}) "
            f"| {r['best'] / r['compiled']:.3f} ({r['best_config']}, of {r['tried']}) |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/results/versus_compile"), help="folder for <gpu-slug>.md")
    args = parser.parse_args()
    import torch

    from tritonperf import runtime
    from tritonperf.bench import records

    if not torch.cuda.is_available():
        parser.error("timing needs a CUDA GPU; none is visible to torch")
    # Inductor switches the process to torch's ptxas when it first compiles: ours would be
    # assembled by two releases, the first case's by Triton's own (see runtime.use_torch_ptxas).
    runtime.use_torch_ptxas()
    prov, ceiling, rows = measure(lambda line: print(line, flush=True))
    description = (
        f"Copy ceiling {ceiling:,.0f} GB/s. The norm forwards against "
        "`torch.compile` (`dynamic=False`), each case in one interleaved run (medians, fresh inputs, CUDA-graph "
        "replay): `tritonperf`'s default configuration, and the fastest of it and the other configurations tried "
        "(rows × columns a tile, warps). Configurations: rows of up to 2048 columns, "
        f"{', '.join(f'{r} rows in {w}' for r, w in SHORT_ROWS)} warps; longer rows, the whole row in "
        f"{', '.join(map(str, HELD_WARPS))} warps, tiles of {', '.join(f'{b} in {w}' for b, w in TILED)} warps "
        "(narrower than the row)."
    )
    path = records.save_markdown(prov, description, table(rows, ceiling), args.out)
    print(path.read_text())


if __name__ == "__main__":
    main()
