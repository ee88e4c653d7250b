"""The measuring toolkit: timing, ceilings, recorded results, plots and reports."""

from .plotting import plot_results
from .records import RecordsError, find_results, find_tables, load, save, validate
from .runner import live_or_recorded, run
from .specs import SPECS, BenchSpec, specs_for
from .timing import time_ms

__all__ = [
    "SPECS", "BenchSpec", "RecordsError", "find_results", "find_tables", "live_or_recorded", "load", "plot_results", "run",
    "save", "specs_for", "time_ms", "validate",
]
