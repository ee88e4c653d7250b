"""The fused-attention lesson's steps, from attention written in torch to the package's kernel.

Each step computes the forward pass ``softmax(Q Kᵀ · sm_scale) V`` and accepts what
:func:`tritonperf.attention_fwd` accepts (``(B, H, N, D)`` float16 or bfloat16
tensors, causal or not, grouped-query heads), raising the same errors. They return the output
only and have no backward pass; use :func:`tritonperf.attention` for real work.

* step 1, :func:`attention_naive`: what a torch user writes: the ``N × N`` score matrix of every
  head is materialized, masked, softmaxed and multiplied by ``V``, each operation a pass over
  memory. Its footprint grows with ``N²`` (:func:`naive_scores_bytes`): at 16 heads of
  ``N = 16384`` one score matrix in float16 is 8 GiB per sequence.
* step 2, :func:`attention_fused_one_config`: the fused online-softmax kernel, scores kept in
  registers, loading blocks through tensors of pointers, launched with one fixed configuration
  (64 × 64 blocks, 4 warps, 2 stages) whatever the head dim, causality or GPU.
* step 3, :func:`attention_fused_tuned`: the same kernel with the blocks, warps and stages of
  the configuration table (``tritonperf.kernels.attention.FWD_CONFIGS``), picked per head
  dim so that nothing spills.
* step 4, :func:`attention_tma`: blocks moved by tensor descriptors (TMA) instead of pointers,
  with their own measured table (``FWD_TMA_CONFIGS``) at head dims 64 and 128. This is what
  :func:`tritonperf.attention` runs off Hopper, and on Hopper at ``D = 64`` for sequences shorter
  than ``WS_MIN_LENGTH`` gives.
* beside step 4, :func:`attention_mask_every_block`: causal attention that visits every key
  block and masks the scores right of the diagonal, instead of skipping the blocks that hold
  only those: the same result for the work of full attention, which is what deciding per score
  rather than per block costs.
* step 5, :func:`attention_warp_specialized`: the same algorithm written in Gluon, with one warp
  loading blocks and two warpgroups computing (three at ``D = 64``), each overlapping the next
  block's scores with the current block's softmax, taking turns at the Tensor Cores. Hopper only,
  ``D`` = 64 and 128; what :func:`tritonperf.attention` runs there (at ``D = 64`` from the lengths
  of ``WS_MIN_LENGTH``).
"""

from __future__ import annotations

import torch

from ..kernels.attention import _check_qkv, _tma_or_pointers, attention_fwd

# Step 2's single launch configuration.
STEP2_CONFIG = dict(block_m=64, block_n=64, num_warps=4, num_stages=2)


def attention_naive(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """Step 1: attention in plain torch, the ``N × N`` scores materialized in memory.

    The scores are computed in the inputs' dtype, the softmax in float32 (as torch's own
    half-precision softmax accumulates), and the probabilities cast back for the second matmul.
    Grouped key/value heads are repeated to the query heads first.
    """
    _, sm_scale = _check_qkv(q, k, v, causal, sm_scale)
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = torch.matmul(q, k.transpose(-2, -1)) * sm_scale
    if causal:
        n = q.shape[2]
        scores = scores.masked_fill(torch.ones((n, n), dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.matmul(probs, v)


def naive_scores_bytes(B: int, H: int, N: int, dtype: torch.dtype = torch.float16) -> int:
    """Bytes of the score matrices step 1 materializes: ``B·H·N²`` elements of ``dtype``.

    Step 1 holds more than this at its peak (the float32 softmax is twice as large again), but
    this one tensor is what makes it impossible at long sequences.
    """
    return B * H * N * N * torch.empty((), dtype=dtype).element_size()


def attention_fused_one_config(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """Step 2: the fused online-softmax kernel with one fixed launch configuration for every problem."""
    return attention_fwd(q, k, v, causal, sm_scale, method="pointers", **STEP2_CONFIG)[0]


def attention_fused_tuned(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """Step 3: the fused kernel with pointer loads and the configuration table's blocks, warps and stages."""
    return attention_fwd(q, k, v, causal, sm_scale, method="pointers")[0]


def attention_tma(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """Step 4: blocks moved by tensor descriptors where measured faster and possible, else by pointers."""
    _check_qkv(q, k, v, causal, sm_scale)
    return attention_fwd(q, k, v, causal, sm_scale, method=_tma_or_pointers("auto", causal, q=q, k=k, v=v))[0]


def attention_mask_every_block(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """Beside step 4: causal blocks above the diagonal computed and masked instead of skipped."""
    return attention_fwd(q, k, v, causal, sm_scale, skip_masked_blocks=False)[0]


def attention_warp_specialized(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """Step 5: the warp-specialized Gluon kernel (Hopper, 16-bit inputs, ``D`` = 64 or 128; a ``ValueError`` elsewhere)."""
    return attention_fwd(q, k, v, causal, sm_scale, method="warp_specialized")[0]


STEPS = [attention_naive, attention_fused_one_config, attention_fused_tuned, attention_tma, attention_mask_every_block,
         attention_warp_specialized]
