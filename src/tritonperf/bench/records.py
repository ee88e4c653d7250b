"""Recorded results: the ``docs/results/<gpu>.json`` format, read, written and validated.

One file holds one run on one GPU: its provenance, the ceilings measured in
that run, and one record per (kernel, variant, direction, dtype, shape).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import torch

from .. import runtime

SCHEMA_VERSION = 1

# Shape keys each kernel's records must carry (DESIGN.md §1).
SHAPE_KEYS: dict[str, tuple[str, ...]] = {
    "vector_add": ("N",),
    "softmax": ("M", "N"),
    "layer_norm": ("M", "N"),
    "rms_norm": ("M", "N"),
    "transpose": ("M", "N"),
    "matmul": ("M", "N", "K"),
    "attention": ("B", "H", "N", "D", "causal"),
    "memory_hierarchy": ("bytes",),
}

_number = {"type": "number", "exclusiveMinimum": 0}
_rate = {"type": ["number", "null"], "exclusiveMinimum": 0}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema", "provenance", "ceilings", "records"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "provenance": {
            "type": "object",
            "required": ["gpu", "sms", "triton", "torch", "cuda", "date", "git_commit", "command"],
            "properties": {
                "gpu": {"type": "string", "minLength": 1},
                "sms": {"type": "integer", "minimum": 1},
                "triton": {"type": "string", "minLength": 1},
                "torch": {"type": "string", "minLength": 1},
                "cuda": {"type": "string", "minLength": 1},
                "ptxas": {"type": "string", "minLength": 1},  # CUDA release; files recorded before 2026-12-06 lack it
                "date": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"},
                "git_commit": {"type": "string", "minLength": 1},
                "command": {"type": "string", "minLength": 1},
            },
        },
        "ceilings": {
            "type": "object",
            "required": ["copy_GBps"],
            "propertyNames": {"pattern": r"^(copy_GBps|matmul_[a-z0-9]+_TFLOPS)$"},
            "additionalProperties": _number,
        },
        "records": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kernel", "variant", "direction", "dtype", "shape", "ms", "GBps", "TFLOPS"],
                "additionalProperties": False,
                "properties": {
                    "kernel": {"enum": sorted(SHAPE_KEYS)},
                    "variant": {"type": "string", "pattern": r"^(tritonperf|torch([.-][a-z0-9_.-]+)?|step-\d+-[a-z0-9-]+)$"},
                    "direction": {"enum": ["fwd", "bwd", "fwd+bwd"]},
                    "dtype": {"enum": ["float32", "float16", "bfloat16", "float8_e4m3fn", "int32"]},
                    "shape": {
                        "type": "object",
                        "additionalProperties": {"type": ["integer", "boolean"]},
                    },
                    "ms": _number,
                    "GBps": _rate,
                    "TFLOPS": _rate,
                },
                "allOf": [
                    {
                        "if": {"properties": {"kernel": {"const": kernel}}},
                        "then": {
                            "properties": {
                                "shape": {
                                    "required": list(keys),
                                    "propertyNames": {"enum": list(keys)},
                                }
                            }
                        },
                    }
                    for kernel, keys in SHAPE_KEYS.items()
                ],
            },
        },
    },
}


class RecordsError(ValueError):
    """A results document that does not follow the format; the message names the wrong field."""


def validate(doc: Any, source: str = "results") -> dict[str, Any]:
    """Return ``doc`` if it follows the format, else raise :class:`RecordsError` naming the field."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "(top level)"
        raise RecordsError(f"{source}: field {field.lstrip('.')}: {error.message}")
    return doc


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a results file."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise RecordsError(f"{path}: not valid JSON: {err}") from None
    except OSError as err:
        raise RecordsError(f"{path}: cannot be read: {err.strerror or err}") from None
    return validate(doc, str(path))


def save(doc: dict[str, Any], path: str | os.PathLike) -> Path:
    """Validate and write a results file (creating its folder)."""
    validate(doc, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def slug(gpu_name: str) -> str:
    """File-name form of a GPU name: ``"NVIDIA H200"`` -> ``"nvidia-h200"``."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def git_commit() -> str:
    """Commit of this package's checkout: ``TRITONPERF_GIT_COMMIT`` if set, else :func:`checkout_commit`."""
    if os.environ.get("TRITONPERF_GIT_COMMIT"):
        return os.environ["TRITONPERF_GIT_COMMIT"]
    return checkout_commit(Path(__file__).resolve().parents[1])


def checkout_commit(package_dir: Path) -> str:
    """Short commit of the git checkout that holds ``package_dir`` as its ``src/tritonperf``.

    ``"-dirty"`` is appended when tracked files differ from that commit, so that a record made
    from uncommitted code does not name a commit it was not made from. ``"unknown"`` when the
    package is not in such a checkout (an installed wheel, or a virtual environment inside some
    other repository) or git cannot be run.
    """

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(package_dir), *args], capture_output=True, text=True, check=True, timeout=10
        )
        return done.stdout.strip()

    try:
        top = Path(git("rev-parse", "--show-toplevel"))
        if (top / "src" / "tritonperf").resolve() != package_dir.resolve():
            return "unknown"
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("-dirty" if changed else "") if commit else "unknown"


def _ptxas_release() -> str:
    """CUDA release of the ``ptxas`` Triton would run now for this process's GPU."""
    from ..asm import ptxas_for  # imports triton's compiler: only when a run is recorded

    major, minor = torch.cuda.get_device_capability()
    found = ptxas_for(10 * major + minor)
    return found[1] if found else "unknown"


def provenance(command: str) -> dict[str, Any]:
    """Where and when a run happens: GPU, versions, UTC date, commit and command."""
    info = runtime.versions()
    if info["gpu"] is None:
        raise RuntimeError("provenance describes a GPU run; no CUDA GPU is visible")
    return {
        "gpu": info["gpu"],
        "sms": info["sms"],
        "triton": info["triton"],
        "torch": info["torch"],
        "cuda": info["cuda"] or "unknown",
        "ptxas": _ptxas_release(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": git_commit(),
        "command": command,
    }


def provenance_text(prov: dict[str, Any], how: str = "Recorded", day_only: bool = False) -> str:
    """One line naming where, when and with what a run was made: recorded tables' headers, plot captions.

    ``how`` opens the line ("Recorded", "Measured live"); ``day_only`` shortens the date to its day.
    """
    date = prov["date"][:10] if day_only else prov["date"]
    return (
        f"{how} on {prov['gpu']} ({prov['sms']} SMs), {date}; triton {prov['triton']}, torch {prov['torch']}, "
        f"CUDA {prov['cuda']}" + (f", ptxas {prov['ptxas']}" if "ptxas" in prov else "") + f"; commit {prov['git_commit']}"
    )


def save_markdown(prov: dict[str, Any], description: str, table: str, folder: str | os.PathLike) -> Path:
    """Write a recorded Markdown table to ``<folder>/<gpu-slug>.md`` (creating the folder); return its path.

    The file opens with one paragraph: where, when and with what it was recorded
    (:func:`provenance_text`), ``description`` (what was measured, how), and the command.
    """
    path = Path(folder) / f"{slug(prov['gpu'])}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{provenance_text(prov)}. {description} Command: `{prov['command']}`.\n\n{table}")
    return path


def record(
    kernel: str, variant: str, direction: str, dtype: str, shape: dict[str, Any], ms: float,
    nbytes: int | None, flops: int | None,
) -> dict[str, Any]:
    """One record; GB/s and TFLOPS derived from the time and the counts (None where not counted)."""
    return {
        "kernel": kernel,
        "variant": variant,
        "direction": direction,
        "dtype": dtype,
        "shape": dict(shape),
        "ms": ms,
        "GBps": nbytes / ms * 1e-6 if nbytes else None,
        "TFLOPS": flops / ms * 1e-9 if flops else None,
    }


def _results_folder(start: str | os.PathLike | None) -> Path | None:
    """``$TRITONPERF_RESULTS``, else the nearest ``docs/results`` above ``start`` (the working directory), else None."""
    if os.environ.get("TRITONPERF_RESULTS"):
        return Path(os.environ["TRITONPERF_RESULTS"])
    here = Path(start or Path.cwd()).resolve()
    return next((f / "docs" / "results" for f in [here, *here.parents] if (f / "docs" / "results").is_dir()), None)


def find_results(start: str | os.PathLike | None = None) -> list[Path]:
    """Recorded result files: ``$TRITONPERF_RESULTS`` or the nearest ``docs/results`` above ``start``."""
    folder = _results_folder(start)
    return sorted(folder.glob("*.json")) if folder else []


def find_tables(kind: str, start: str | os.PathLike | None = None) -> list[Path]:
    """Recorded Markdown tables of one kind (``<kind>/<gpu-slug>.md``, see :func:`save_markdown`) in that same folder."""
    folder = _results_folder(start)
    return sorted((folder / kind).glob("*.md")) if folder else []
