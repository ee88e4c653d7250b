"""The package's kernels, one module per family."""

from .attention import attention, attention_bwd, attention_bytes, attention_flops, attention_fwd, attention_reference
from .matmul import matmul, matmul_bytes, matmul_flops, matmul_reference
from .norms import layer_norm, layer_norm_bytes, layer_norm_reference, rms_norm, rms_norm_bytes, rms_norm_reference
from .softmax import (
    SoftmaxPlan,
    softmax,
    softmax_backward,
    softmax_backward_reference,
    softmax_bytes,
    softmax_plan,
    softmax_reference,
)
from .transpose import transpose, transpose_bytes, transpose_method, transpose_reference
from .vector_add import vector_add, vector_add_bytes, vector_add_reference

__all__ = [
    "attention", "attention_bwd", "attention_bytes", "attention_flops", "attention_fwd", "attention_reference",
    "matmul", "matmul_bytes", "matmul_flops", "matmul_reference",
    "layer_norm", "layer_norm_bytes", "layer_norm_reference", "rms_norm", "rms_norm_bytes", "rms_norm_reference",
    "SoftmaxPlan", "softmax", "softmax_backward", "softmax_backward_reference", "softmax_bytes", "softmax_plan",
    "softmax_reference",
    "transpose", "transpose_bytes", "transpose_method", "transpose_reference",
    "vector_add", "vector_add_bytes", "vector_add_reference",
]
