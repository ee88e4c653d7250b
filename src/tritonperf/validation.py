"""Input checks shared by every launcher: they raise before anything is launched."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from . import runtime


def check_tensor(name: str, t: object) -> torch.Tensor:
    """Raise TypeError unless ``t`` is a tensor."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    return t


def check_device(**tensors: torch.Tensor) -> torch.device:
    """All tensors on one device, and one the current mode can run on.

    On a GPU, kernels need CUDA tensors; a CPU tensor is only accepted in
    interpreter mode. This replaces Triton's own, less helpful message
    ("0 active drivers") with one that says what to do.
    """
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"all tensors must be on the same device, got {listing}")
    device = next(iter(devices.values()))
    if device.type == "cpu" and not runtime.is_interpreter():
        raise ValueError(
            "got CPU tensors, but Triton kernels run on the GPU: move them with .cuda(), "
            "or set TRITON_INTERPRET=1 before importing tritonperf to run on the CPU"
        )
    if device.type not in {"cpu", "cuda"}:
        raise ValueError(f"tensors on {device} are not supported; use CUDA tensors")
    return device


def check_dtype(name: str, t: torch.Tensor, allowed: Iterable[torch.dtype]) -> None:
    """Raise TypeError when ``t.dtype`` is not in ``allowed``."""
    allowed = tuple(allowed)
    if t.dtype not in allowed:
        names = ", ".join(str(d).removeprefix("torch.") for d in allowed)
        raise TypeError(f"{name} has dtype {str(t.dtype).removeprefix('torch.')}; supported: {names}")


def check_same(attr: str, **tensors: torch.Tensor) -> None:
    """Raise ValueError unless every tensor has the same ``shape`` or ``dtype``."""
    values = {name: getattr(t, attr) for name, t in tensors.items()}
    if len(set(values.values())) > 1:
        listing = ", ".join(f"{n}: {tuple(v) if attr == 'shape' else v}" for n, v in values.items())
        raise ValueError(f"{attr}s differ: {listing}")


def check_out(name: str, out: object, like_name: str, like: torch.Tensor) -> torch.Tensor:
    """An output buffer given by the caller: a contiguous tensor of ``like``'s shape, dtype and device."""
    check_tensor(name, out)
    check_device(**{like_name: like, name: out})
    check_same("dtype", **{like_name: like, name: out})
    check_same("shape", **{like_name: like, name: out})
    check_contiguous(**{name: out})
    return out


def check_contiguous(**tensors: torch.Tensor) -> None:
    """Raise ValueError for a non-contiguous tensor where a kernel needs flat memory."""
    for name, t in tensors.items():
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous; call .contiguous() first")
