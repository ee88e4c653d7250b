"""tritonperf: fast Triton kernels, and the tools that measure them.

Importing the package decides where kernels run (see :mod:`tritonperf.runtime`):
on a CUDA GPU when one is visible, otherwise through Triton's interpreter on the CPU.
"""

from . import runtime  # first: it sets TRITON_INTERPRET before any kernel is defined
from .kernels import (
    SoftmaxPlan,
    attention,
    attention_bwd,
    attention_bytes,
    attention_flops,
    attention_fwd,
    attention_reference,
    layer_norm,
    layer_norm_bytes,
    layer_norm_reference,
    matmul,
    matmul_bytes,
    matmul_flops,
    matmul_reference,
    rms_norm,
    rms_norm_bytes,
    rms_norm_reference,
    softmax,
    softmax_backward,
    softmax_backward_reference,
    softmax_bytes,
    softmax_plan,
    softmax_reference,
    transpose,
    transpose_bytes,
    transpose_method,
    transpose_reference,
    vector_add,
    vector_add_bytes,
    vector_add_reference,
)

__version__ = "0.1.0"

__all__ = [
    "runtime", "__version__",
    "attention", "attention_bwd", "attention_bytes", "attention_flops", "attention_fwd", "attention_reference",
    "matmul", "matmul_bytes", "matmul_flops", "matmul_reference",
    "layer_norm", "layer_norm_bytes", "layer_norm_reference", "rms_norm", "rms_norm_bytes", "rms_norm_reference",
    "SoftmaxPlan", "softmax", "softmax_backward", "softmax_backward_reference", "softmax_bytes", "softmax_plan",
    "softmax_reference",
    "transpose", "transpose_bytes", "transpose_method", "transpose_reference",
    "vector_add", "vector_add_bytes", "vector_add_reference",
]
