"""The matmul lesson's steps: one kernel, launched a little better at each step.

Unlike the other lessons, the steps here do not need kernels of their own: each one runs a
kernel of ``tritonperf.kernels.matmul`` with different launch options, so that the lesson can
show exactly what one option buys and the benchmark can record it. Every step accepts what
:func:`tritonperf.matmul` accepts (any strides, batches, every dtype) and raises
the same errors, except the warp-specialized step 4, which Triton compiles for single 16-bit products (and float8
with ``b`` column-major) only.

* step 1, :func:`matmul_tiles`: one program per 128 × 128 output tile, programs numbered in
  row-major order (``GROUP_M = 1``), one fixed launch configuration.
* step 2, :func:`matmul_grouped`: the same tiles and configuration, programs numbered in groups
  of 8 tile rows (``GROUP_M = 8``), so that the programs running together reuse each other's
  panels of A and B from L2 instead of reading them from memory again.
* beside step 2, :func:`matmul_grouped_one_stage`: step 2 with ``num_stages=1``, so that the
  loads of the next K tile are no longer issued while the Tensor Cores work on the current one:
  what software pipelining is worth, measured.
* step 3, :func:`matmul_autotuned`: the pointer kernel with the configuration the autotuner
  chooses for each shape and dtype (``method="tiles"``).
* step 4, :func:`matmul_persistent_tma`: one program per SM looping over tiles, with operands
  moved by the Tensor Memory Accelerator (``method="tma"``; compute capability 9.0 or newer),
  every warp issuing copies and matmuls in turn (``warp_specialize=False``).
* beside step 4, :func:`matmul_warp_specialized`: step 4's kernel with its loop split among
  warp groups, one issuing the copies and two doing the matmuls (``warp_specialize=True``),
  autotuned over its own configs. :func:`tritonperf.matmul` runs the TMA kernel by default
  wherever it can, above ``2048³`` in 16-bit types, and lets the autotuner choose between the
  plain and the warp-specialized loop.
* step 5, :func:`matmul_fused_gelu`: the GELU applied to each tile before it is written, against
  torch's matmul followed by a separate GELU, which writes C, reads it back and writes it again.
"""

from __future__ import annotations

import torch

from ..kernels.matmul import DEFAULT_GROUP_M, matmul

# The fixed launch of steps 1 and 2: 128 × 128 tiles, K tiles of 128 bytes, 4 warps, 4 stages.
STEP_TILE = dict(block_m=128, block_n=128, num_warps=4, num_stages=4)


def matmul_tiles(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Step 1: ``a @ b`` with one program per output tile, in row-major program order, fixed tiles."""
    return matmul(a, b, group_m=1, **STEP_TILE)


def matmul_grouped(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Step 2: step 1's tiles and launch, programs in groups of ``GROUP_M = 8`` tile rows for L2 reuse."""
    return matmul(a, b, group_m=DEFAULT_GROUP_M, **STEP_TILE)


def matmul_grouped_one_stage(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Step 2 without software pipelining (``num_stages=1``): each K tile is loaded, then multiplied."""
    return matmul(a, b, group_m=DEFAULT_GROUP_M, **(STEP_TILE | {"num_stages": 1}))


def matmul_autotuned(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Step 3: grouped order with the tile shape, warps and stages the autotuner picks per shape."""
    return matmul(a, b, method="tiles")


def matmul_persistent_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Step 4: a persistent grid with tensor descriptors (TMA), autotuned; needs compute capability 9.0."""
    return matmul(a, b, method="tma", warp_specialize=False)


def matmul_warp_specialized(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Beside step 4: step 4 with copy and compute warp groups (warp specialization), autotuned over its own configs."""
    return matmul(a, b, method="tma", warp_specialize=True)


def matmul_fused_gelu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Step 5: ``gelu(a @ b)`` (exact, erf-based GELU) with the activation fused into the kernel's epilogue."""
    return matmul(a, b, activation="gelu")


STEPS = [matmul_tiles, matmul_grouped, matmul_grouped_one_stage, matmul_autotuned, matmul_persistent_tma,
         matmul_warp_specialized, matmul_fused_gelu]
