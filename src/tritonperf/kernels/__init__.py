"""The package's kernels, one module per family."""

from .vector_add import vector_add, vector_add_bytes, vector_add_reference

__all__ = ["vector_add", "vector_add_bytes", "vector_add_reference"]
