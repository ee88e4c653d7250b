"""Sphinx configuration for the Triton Performance Guide.

The build works without a GPU and without a network: importing tritonperf
selects Triton's interpreter when no GPU is visible (the gallery then runs at
small sizes and shows recorded results), and intersphinx reads inventories
made here from docs/_inventories (see ``_make_inventories``).
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

DOCS = Path(__file__).parent
sys.path.insert(0, str(DOCS.parent / "src"))

import tritonperf  # noqa: E402  (first: chooses GPU or interpreter before any kernel is defined)

tritonperf.runtime.use_torch_ptxas()  # before the first compilation: one ptxas for every kernel of the build
from tritonperf.asm import write_excerpts  # noqa: E402
from tritonperf.bench import find_results, find_tables, load  # noqa: E402
from tritonperf.bench.report import memory_levels_table, results_page, roofline_page, strategies_table  # noqa: E402
from tritonperf.cli import help_text  # noqa: E402

project = "Triton Performance Guide"
author = "the tritonperf authors"
copyright = "2026, the tritonperf authors"
release = tritonperf.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_inventories", "results/*.json", "results/**/*.md", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = "Triton Performance Guide"
html_theme_options = {"navigation_with_keys": True}
pygments_style = "sphinx"
pygments_dark_style = "monokai"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

GENERATED = DOCS / "_generated"
GENERATED.mkdir(exist_ok=True)


# -- intersphinx without a network -------------------------------------------------------------
# Build machines have no network, so the inventories are made here from short
# plain-text lists of the objects this site links to (Sphinx's inventory format,
# version 2, before compression). The links themselves point to the real sites.
def _make_inventories() -> dict[str, tuple[str, str]]:
    mapping = {}
    out = GENERATED / "inventories"
    out.mkdir(exist_ok=True)
    for source in sorted((DOCS / "_inventories").glob("*.txt")):
        lines = source.read_text().splitlines()
        header = dict(line[2:].split(": ", 1) for line in lines if line.startswith("# "))
        body = "\n".join(line for line in lines if line and not line.startswith("#")) + "\n"
        inv = out / f"{source.stem}.inv"
        inv.write_bytes(
            f"# Sphinx inventory version 2\n# Project: {header['Project']}\n# Version: \n"
            "# The remainder of this file is compressed using zlib.\n".encode()
            + zlib.compress(body.encode())
        )
        mapping[source.stem] = (header["Base"], str(inv))
    return mapping


intersphinx_mapping = _make_inventories()

# -- generated pages ---------------------------------------------------------------------------
(GENERATED / "results.md").write_text(
    results_page(find_results(DOCS), GENERATED / "results", "/_generated/results")
)
(GENERATED / "cli_help.txt").write_text(help_text())
(GENERATED / "roofline.md").write_text(roofline_page(find_results(DOCS), GENERATED / "roofline", "/_generated/roofline"))
(GENERATED / "strategies.md").write_text(
    "\n".join(strategies_table(load(path)) for path in find_results(DOCS)) or "No recorded results yet.\n"
)
# measuring.md's tables: every file recorded by tools/record_measuring.py (nox -s measuring).
for folder in ("measuring", "measuring_order"):
    (GENERATED / f"{folder}.md").write_text(
        "\n".join(path.read_text() for path in find_tables(folder, DOCS))
        or f"The table is written by `nox -s measuring` on a GPU (`docs/results/{folder}/<gpu>.md`); no run has been recorded yet.\n"
    )
(GENERATED / "memory_levels.md").write_text(memory_levels_table([load(path) for path in find_results(DOCS)]))
# compiled-code.md's excerpts: the package's kernels compiled for sm_90 (no GPU needed), before any lesson runs.
write_excerpts(GENERATED / "asm")

# -- the gallery -------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "write_computation_times": False,
    "remove_config_comments": True,
    # Always run: the plots depend on docs/results and on the machine, not only on the script.
    "run_stale_examples": True,
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "matplotlib_animations": False,
    "first_notebook_cell": (
        "# Needs torch, triton and tritonperf (pip install -e . from a clone of the guide's repository).\n"
        "# Without a CUDA GPU the kernels run through Triton's interpreter at small sizes."
    ),
}

nitpicky = True
# The generated results page starts at H2 because it is included under the page's own H1.
suppress_warnings = ["myst.header"]
nitpick_ignore = [("py:class", "tritonperf.runtime.T")]  # a TypeVar, not a documented class
