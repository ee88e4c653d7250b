"""Where kernels run: on a CUDA GPU, or on the CPU through Triton's interpreter.

The mode is decided once, when :mod:`tritonperf` is imported:

* ``TRITON_INTERPRET=1`` already set: interpreter, whatever hardware is present;
* a CUDA GPU visible to torch: ``"gpu"``;
* otherwise: ``"interpreter"``, and ``TRITON_INTERPRET=1`` is set so that every
  ``@triton.jit`` function defined from now on (ours and a reader's) runs on the CPU.

Triton reads ``TRITON_INTERPRET`` when a function is decorated, including the functions of
its own library (``tl.sum``, ``tl.max``, ``tl.cdiv``, …), which are decorated when ``triton`` is
first imported. So import :mod:`tritonperf` before ``triton``: a kernel that calls those
functions fails in the interpreter ("Cannot call @triton.jit'd outside of the scope of a kernel")
when ``triton`` was imported first. The import warns when that order is wrong.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import sys
import threading
import warnings
from importlib import metadata
from typing import Literal, TypeVar

import torch

Mode = Literal["gpu", "interpreter"]
T = TypeVar("T")


def _interpret_requested() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in {"1", "true", "on", "yes"}


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: ``"3.6.0+git1a2b"`` -> ``(3, 6, 0)``."""
    match = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def interpreter_conflict(triton_version: str, numpy_version: str) -> str | None:
    """Why this Triton's interpreter cannot run with this NumPy, or None when it can.

    Triton 3.6's interpreter reads a scalar tensor as a Python integer with ``int()`` on a
    one-element array, which NumPy 2.4 turned into an error: every kernel whose loop bounds or
    offsets are scalar arguments then fails with "only 0-dimensional arrays can be converted to
    Python scalars". Later Triton releases take the element out first.
    """
    if _release(triton_version) < (3, 7) and _release(numpy_version) >= (2, 4):
        return (
            f"triton {triton_version}'s interpreter does not work with numpy {numpy_version}: kernels fail with "
            "'only 0-dimensional arrays can be converted to Python scalars'; install numpy<2.4 or a newer triton"
        )
    return None


def _warn_on_interpreter_conflict() -> None:
    # Versions from the installed metadata: importing triton here would decorate its library
    # before TRITON_INTERPRET is set (see the module docstring).
    try:
        problem = interpreter_conflict(metadata.version("triton"), metadata.version("numpy"))
    except metadata.PackageNotFoundError:
        return
    if problem:
        warnings.warn(problem, RuntimeWarning, stacklevel=4)


def _detect_mode() -> Mode:
    mode = _choose_mode()
    if mode == "interpreter":
        _warn_on_interpreter_conflict()
    return mode


def _choose_mode() -> Mode:
    if _interpret_requested():
        return "interpreter"
    if torch.cuda.is_available():
        return "gpu"
    if "triton" in sys.modules:
        warnings.warn(
            "no CUDA GPU: tritonperf switches Triton to its interpreter, but triton was imported before tritonperf, "
            "so kernels that call triton.language functions such as tl.sum will fail; import tritonperf first, "
            "or set TRITON_INTERPRET=1 before starting Python",
            RuntimeWarning,
            stacklevel=4,
        )
    os.environ["TRITON_INTERPRET"] = "1"
    return "interpreter"


MODE: Mode = _detect_mode()


def is_interpreter() -> bool:
    """True when kernels run through Triton's interpreter on the CPU."""
    return MODE == "interpreter"


def has_gpu() -> bool:
    """True when a CUDA GPU is visible to torch (whatever the mode)."""
    return torch.cuda.is_available()


# Interpreter mode has no GPU to ask: a few "SMs" are enough to exercise persistent grids.
INTERPRETER_SMS = 4


@functools.cache  # asked on every launch of a persistent kernel, and fixed per device
def sm_count(device: torch.device | str | None = None) -> int:
    """The streaming multiprocessors of a CUDA device (the current one by default), or
    ``INTERPRETER_SMS`` (4) in interpreter mode and for a CPU device."""
    if MODE != "gpu" or (device is not None and torch.device(device).type != "cuda"):
        return INTERPRETER_SMS
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.cache  # fixed per device
def device_name(device: torch.device | str | None = None) -> str | None:
    """The name of a CUDA device (the current one by default), as ``torch.cuda.get_device_name``
    gives it; None in interpreter mode and for a CPU device."""
    if MODE != "gpu" or (device is not None and torch.device(device).type != "cuda"):
        return None
    return torch.cuda.get_device_name(device)


@functools.cache  # fixed per device
def shared_memory_per_block(device: torch.device | str | None = None) -> int:
    """The most shared memory, in bytes, one program may use on a CUDA device (the current one by
    default): the opt-in limit, above the 48 KB a launch gets without asking. About 227 KB on Hopper,
    163 KB on an A100, 99 KB on sm_86 and sm_89 GPUs."""
    props = torch.cuda.get_device_properties(device)
    return getattr(props, "shared_memory_per_block_optin", props.shared_memory_per_block)


_bound = threading.local()  # per thread: the devices whose context bind_context made current


def bind_context(device: torch.device) -> None:
    """Make the primary CUDA context of ``device`` current on this thread, once per thread and device.

    Triton fills a host-side tensor descriptor (the TMA's copy instructions) when it launches the
    kernel, before its launcher makes sure a context is current. A thread that has made no CUDA
    call yet has none (autograd runs a backward on such a thread), and the launch fails with
    "invalid device context". ``torch.cuda.set_device`` binds the context even when the device is
    already the current one; the guard around it leaves the caller's current device as it was.
    Nothing happens for a CPU device or in interpreter mode.
    """
    if MODE != "gpu" or device.type != "cuda":
        return
    index = device.index if device.index is not None else torch.cuda.current_device()
    done = _bound.__dict__.setdefault("devices", set())
    if index not in done:
        with torch.cuda.device(index):
            torch.cuda.set_device(index)
        done.add(index)


def default_device() -> torch.device:
    """The device tensors should be created on in the current mode."""
    return torch.device("cuda") if MODE == "gpu" else torch.device("cpu")


def pick(gpu: T, cpu: T) -> T:
    """Choose a value by mode: full size on a GPU, small size in the interpreter."""
    return gpu if MODE == "gpu" else cpu


def gpu_name() -> str | None:
    """The CUDA device name, or None without a GPU."""
    return torch.cuda.get_device_name() if has_gpu() else None


def versions() -> dict[str, str | int | None]:
    """Software and hardware this process runs with."""
    import triton

    info: dict[str, str | int | None] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "gpu": gpu_name(),
        "sms": None,
    }
    if has_gpu():
        info["sms"] = torch.cuda.get_device_properties().multi_processor_count
    return info


def _torch_ptxas() -> str:
    """Where a CUDA build of torch keeps its own ``ptxas``."""
    return os.path.join(os.path.dirname(torch.__file__), "bin", "ptxas")


def use_torch_ptxas() -> str | None:
    """Make every Triton compilation of this process use the ``ptxas`` that torch.compile uses.

    Triton assembles PTX into machine code with the ``ptxas`` it ships (CUDA 12.8 for sm_90 in
    triton 3.6), unless ``TRITON_PTXAS_PATH`` names another. The first time TorchInductor compiles
    anything in a process, it sets that variable to the ``ptxas`` of torch's CUDA build, so every
    Triton kernel compiled later in the process, ours included, is assembled by another release
    than the ones before. The two can allocate registers very differently: the float16 transpose
    kernel for unaligned rows takes 145 registers a thread with triton 3.6's ``ptxas`` and 80 with
    torch 2.11's (CUDA 13.0). Triton also keys its compile cache by the release it found first
    in the process, so binaries of the other release can land under that key.

    Called first thing, before anything is compiled, this sets the variable to torch's ``ptxas``
    where torch has one, so that one process (a benchmark run, a documentation build) assembles
    all its kernels, and torch.compile's, with one release. A value already set is kept.

    Returns:
        The ``ptxas`` the process now uses, or None when Triton's own stays in use (torch has none).
    """
    chosen = os.environ.get("TRITON_PTXAS_PATH")
    if chosen:
        return chosen
    ptxas = _torch_ptxas()
    if os.path.isfile(ptxas) and os.access(ptxas, os.X_OK):
        os.environ["TRITON_PTXAS_PATH"] = ptxas
        return ptxas
    return None


def describe() -> str:
    """One line that says where kernels run, for examples and the CLI to print."""
    info = versions()
    if MODE == "gpu":
        where = f"GPU mode: kernels run on {info['gpu']} ({info['sms']} SMs)"
    else:
        where = "interpreter mode: no CUDA GPU in use, kernels run on the CPU through TRITON_INTERPRET=1 at small sizes"
    return f"{where}; triton {info['triton']}, torch {info['torch']}"
