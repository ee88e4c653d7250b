"""Every Python code block in the chapters runs (shell blocks are shown, not run)."""

from __future__ import annotations

import re
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
def test_snippet_runs(code):
    exec(compile(code, "<docs snippet>", "exec"), {"__name__": "__docs__"})
