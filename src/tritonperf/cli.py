"""The ``tritonperf`` command: ``info``, ``bench`` and ``compare``."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import runtime
from .bench import precompile, records, report, runner, targets
from .bench.specs import SPECS

# Worker processes that compile a run's kernels before it measures them. Each holds a CUDA
# context and a few GB of host memory, hence the cap.
DEFAULT_JOBS = min(8, os.cpu_count() or 1)

# Off a terminal rich assumes 80 columns, too narrow for the results tables.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)


def _need_gpu(what: str) -> bool:
    if runtime.MODE == "gpu":
        return True
    err_console.print(
        f"[red]error:[/red] {what} needs a CUDA GPU, and this process runs in interpreter mode "
        "(no GPU visible to torch, or TRITON_INTERPRET=1 is set)."
    )
    return False


def cmd_info(args: argparse.Namespace) -> int:
    console.print(runtime.describe())
    table = Table(show_header=False, box=None)
    for key, value in runtime.versions().items():
        table.add_row(key, str(value))
    console.print(table)
    if runtime.MODE != "gpu" or args.no_ceilings:
        console.print("ceilings: not measured" + (" (no GPU)" if runtime.MODE != "gpu" else ""))
        return 0
    from .bench.ceilings import measure_ceilings

    with console.status("measuring ceilings (copy bandwidth, torch matmul at 8192³)…"):
        ceilings = measure_ceilings(console.log)
    for key, value in ceilings.items():
        console.print(f"{key}: {value:,.1f}")
    return 0


def _rate(row: dict) -> str:
    return f"{row['rate']:,.0f}" if row["rate"] else "–"


def _print_summary(doc: dict) -> None:
    table = Table(title=f"{doc['provenance']['gpu']} — {len(doc['records'])} records")
    for name in report.TABLE_HEADER:
        table.add_column(name, justify="right" if name not in {"kernel", "dir", "dtype", "shape", "variant"} else "left")
    for row in report.table_rows(doc):
        table.add_row(*row)
    console.print(table)


def cmd_bench(args: argparse.Namespace) -> int:
    kernels = args.kernels or list(SPECS)
    unknown = [k for k in kernels if k not in SPECS]
    if unknown:
        err_console.print(f"[red]error:[/red] unknown kernel(s) {', '.join(unknown)}; known: {', '.join(SPECS)}")
        return 2
    if not _need_gpu("tritonperf bench"):
        return 2
    console.print(runtime.describe())
    total = runner.count_cases([s for k in kernels for s in runner.specs_for(k)], args.quick)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    if args.jobs:
        _precompile(kernels, args, columns)
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("ceilings", total=total)

        def on_record(done: int, _total: int, rec: dict) -> None:
            desc = f"{rec['kernel']} {rec['direction']} {rec['dtype']} {report.shape_text(rec['shape'])} {rec['variant']}"
            progress.update(task, completed=done, description=desc)
            if not console.is_terminal:  # a log file gets no live bar: one line per measurement instead
                rate = f"{rec['TFLOPS']:,.0f} TFLOPS" if rec["TFLOPS"] else f"{rec['GBps']:,.0f} GB/s"
                progress.console.log(f"[{done}/{total}] {desc}: {rec['ms'] * 1e3:,.1f} µs, {rate}")

        command = "tritonperf " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        failures: list[str] = []  # a failing case must not throw away the rest of a long run

        def checkpoint(partial: dict) -> None:  # nor must a run that is cut short
            path = _partial_path(_out_path(args.out, partial))
            written = records.save(partial, path.with_name(path.name + ".tmp"))
            written.replace(path)  # in one step: a run killed mid-write leaves the last whole file

        doc = runner.run(kernels, command=command, quick=args.quick, progress=on_record, log=progress.console.log,
                         failures=failures, checkpoint=checkpoint)
    out = _out_path(args.out, doc)
    records.save(doc, out)
    _partial_path(out).unlink(missing_ok=True)
    _print_summary(doc)
    if target_rows := targets.table_rows(doc):
        _print_targets(doc, target_rows)
    console.print(f"wrote {out}")
    if failures:
        err_console.print(f"[red]error:[/red] {len(failures)} case(s) failed and are missing from {out}:")
        for line in failures:
            err_console.print(f"  {line}")
        return 1
    return 0


def _precompile(kernels: list[str], args: argparse.Namespace, columns: list) -> None:
    """Fill the compile caches in ``args.jobs`` worker processes before measuring (see bench.precompile)."""
    start = time.monotonic()
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(f"compiling in {args.jobs} processes", total=None)

        def on_job(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        errors = precompile.precompile(kernels, jobs=args.jobs, quick=args.quick, progress=on_job)
    console.log(f"compiled in {time.monotonic() - start:,.0f} s with {args.jobs} processes"
                + (f"; {len(errors)} case(s) raised, the measuring run will meet them again" if errors else ""))


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if jobs < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {jobs}")
    return jobs


def _min_us(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _partial_path(out: Path) -> Path:
    """Where a run writes its records so far: ``<out>.partial``, removed once ``out`` is written."""
    return out.with_name(out.name + ".partial")


def _out_path(out: str | None, doc: dict) -> Path:
    """``--out`` as given, ``<dir>/<gpu>.json`` for a folder (ending in / or existing), else ``<gpu>.json`` here."""
    name = records.slug(doc["provenance"]["gpu"]) + ".json"
    if out is None:
        return Path(name)
    if out.endswith(("/", "\\")) or Path(out).is_dir():
        return Path(out) / name
    return Path(out)


def _print_targets(doc: dict, rows: list[list[str]], title: str = "targets",
                   header: list[str] = targets.TABLE_HEADER) -> None:
    table = Table(title=f"{title} — {doc['provenance']['gpu']}, {doc['provenance']['date']}")
    for name in header:
        table.add_column(name, justify="right" if name in ("met at", "value") else "left")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def cmd_targets(args: argparse.Namespace) -> int:
    try:
        doc = records.load(args.recorded)
    except records.RecordsError as err:
        err_console.print(f"[red]error:[/red] {err}")
        return 2
    rows = targets.table_rows(doc)
    if not rows:
        console.print("no record in this file is held to a target")
        return 0
    _print_targets(doc, rows)
    if args.misses:
        if misses := targets.miss_rows(doc):
            _print_targets(doc, misses, "misses", targets.MISS_HEADER)
        else:
            console.print("every target is met at every shape")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    try:
        old = records.load(args.recorded)
        if args.new:
            new = records.load(args.new)
        else:
            if not _need_gpu("tritonperf compare with one file (it measures a new run)"):
                return 2
            kernels = sorted({r["kernel"] for r in old["records"]} & set(SPECS))
            with console.status(f"measuring {', '.join(kernels)}…"):
                new = runner.run(kernels, command="tritonperf compare " + args.recorded)
    except records.RecordsError as err:
        err_console.print(f"[red]error:[/red] {err}")
        return 2
    min_ms = args.min_us / 1e3
    threshold = f" (calls of {args.min_us:g} µs or more in the recorded run)" if min_ms else ""
    rows = [r for r in report.compare(new, old) if r["ms_old"] >= min_ms]
    title = (f"new: {new['provenance']['gpu']} ({new['provenance']['date']})  vs  "
             f"recorded: {old['provenance']['gpu']} ({old['provenance']['date']})")
    if not rows:
        console.print(f"{title}: no record appears in both (same kernel, variant, dtype, direction and shape){threshold}")
        return 0
    if not args.summary:
        table = Table(title=title)
        for name in ["kernel", "dir", "dtype", "shape", "variant", "recorded µs", "new µs", "speed new/recorded"]:
            table.add_column(name)
        for r in rows:
            table.add_row(r["kernel"], r["direction"], r["dtype"], report.shape_text(r["shape"]), r["variant"],
                          f"{r['ms_old'] * 1e3:,.1f}", f"{r['ms'] * 1e3:,.1f}", f"{r['ratio']:.3f}×")
        console.print(table)
    drift = Table(title=f"how far each kernel's records moved{threshold}" + (f" — {title}" if args.summary else ""))
    for name, justify in [("kernel", "left"), ("records", "right"), ("median change", "right"),
                          ("9 in 10 within", "right"), ("farthest, speed new/recorded", "right"), ("at", "left")]:
        drift.add_column(name, justify=justify)
    for d in report.drift(rows):
        r = d["largest"]
        drift.add_row(d["kernel"], str(d["records"]), f"{d['median']:.2%}", f"{d['p90']:.2%}", f"{r['ratio']:.3f}×",
                      f"{r['direction']} {r['dtype']} {report.shape_text(r['shape'])} {r['variant']}")
    console.print(drift)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tritonperf`` command."""
    return _parsers()[0]


def help_text() -> str:
    """``tritonperf --help`` and each subcommand's ``--help``, as the command prints them."""
    parser, commands = _parsers()
    blocks = [f"$ tritonperf --help\n{parser.format_help()}"]
    blocks += [f"$ tritonperf {name} --help\n{sub.format_help()}" for name, sub in commands.items()]
    return "\n".join(blocks)


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(prog="tritonperf", description="Fast Triton kernels, measured.")
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="mode, GPU, versions and measured ceilings")
    info.add_argument("--no-ceilings", action="store_true", help="skip measuring the ceilings on a GPU")
    info.set_defaults(func=cmd_info)

    bench = sub.add_parser("bench", help="benchmark kernels on this GPU and write a results file")
    bench.add_argument("kernels", nargs="*", metavar="KERNEL", help=f"kernels to run (default: all of {', '.join(SPECS)})")
    bench.add_argument("--out", metavar="FILE", help="results file, or a folder to write <gpu>.json into (default: ./<gpu>.json)")
    bench.add_argument("--quick", action="store_true", help="a short sweep of sizes")
    bench.add_argument("--jobs", type=_jobs, default=DEFAULT_JOBS, metavar="N",
                       help="compile every case first, in N worker processes; 0 compiles while measuring "
                            "(default: one per CPU core, at most 8)")
    bench.set_defaults(func=cmd_bench)

    compare = sub.add_parser("compare", help="hold a run against recorded results")
    compare.add_argument("recorded", metavar="FILE", help="recorded results file")
    compare.add_argument("new", nargs="?", metavar="FILE", help="a second results file (default: measure a new run now)")
    compare.add_argument("--min-us", type=_min_us, default=0.0, metavar="US",
                         help="only calls that took at least US microseconds in the recorded run (default: all)")
    compare.add_argument("--summary", action="store_true",
                         help="only how far each kernel's records moved, not every record")
    compare.set_defaults(func=cmd_compare)

    check = sub.add_parser("targets", help="hold a results file against the package's performance targets")
    check.add_argument("recorded", metavar="FILE", help="results file")
    check.add_argument("--misses", action="store_true", help="also list every shape at which a target is missed")
    check.set_defaults(func=cmd_targets)
    return parser, dict(sub.choices)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tritonperf`` command."""
    args = build_parser().parse_args(argv)
    runtime.use_torch_ptxas()  # before anything compiles: one ptxas for the whole run
    return args.func(args)
