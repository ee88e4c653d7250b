"""Every Python code block in the chapters runs (shell blocks are shown, not run)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).parent.parent / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SNIPPETS = [
    pytest.param(code, id=f"{page.name}:{n}")
    for page in sorted(DOCS.glob("*.md"))
    for n, code in enumerate(BLOCK.findall(page.read_text()), 1)
]


def test_there_are_snippets():
    assert SNIPPETS


@pytest.mark.parametrize("code", SNIPPETS)
def test_snippet_runs(code, tmp_path):
    # From a file, not exec: on a GPU, @triton.jit reads the kernel's source from its file.
    path = tmp_path / "snippet.py"
    path.write_text(code)
    runpy.run_path(str(path), run_name="__docs__")
