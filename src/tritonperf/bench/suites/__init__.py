"""One module per kernel family, each with a function ``specs()`` returning its :class:`~tritonperf.bench.specs.BenchSpec` list."""
