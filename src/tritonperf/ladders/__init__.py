"""The gallery lessons' teaching steps: deliberately simpler kernels, one module per family.

Each lesson walks from a naive kernel to the package's fast one. The intermediate steps live
here so that the lesson can show them and the benchmark can record what each step buys.
Use the kernels of :mod:`tritonperf` for real work.
"""
