"""Prose that quotes "the H200 record" names the record on main, not one it replaced.

Chapters, lessons and comments quote numbers from the committed records in ``docs/results``,
with the record's date and often its commit. When a new run replaces a record, every sentence
that quotes the old one must be read again against the new numbers. This test finds those
sentences: a mention of the current record of a GPU ("the H200 record", "the recorded H100
run") whose date or commit is not that record's. A record named by its commit ("the H200
record of commit 183fad9") is a past run, quoted as such, and is left alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SOURCES = sorted([*ROOT.glob("docs/*.md"), *ROOT.glob("examples/*.py"), *ROOT.glob("src/tritonperf/**/*.py")])
MENTION = re.compile(
    r"\b(?:(?:the|recorded)\s+(H100|H200)\s+(?:record|run|results)\b(?!\s+of\s+commit)"
    r"|that\s+record\s+\((?:NVIDIA\s+)?(H100|H200))",
    re.I,
)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
COMMIT = re.compile(r"\bcommit ([0-9a-f]{7,40})\b")
SENTENCE_END = re.compile(r"\.\s|\n\s*\n")


def flatten(text: str) -> str:
    """The text with the comment markers that start continued lines folded away, so a comment's sentences read as prose."""
    return re.sub(r"\n[ \t]*#[ \t]?", " ", text)


def current_records() -> dict[str, dict]:
    """Provenance of each committed record, keyed by the GPU family it names (H100, H200)."""
    found = {}
    for path in sorted((ROOT / "docs" / "results").glob("*.json")):
        provenance = json.loads(path.read_text())["provenance"]
        for family in ("H100", "H200"):
            if family in provenance["gpu"]:
                found[family] = provenance | {"file": path.name}
    return found


def stale_citations(text: str, records: dict[str, dict]) -> list[str]:
    """Each sentence of ``text`` that cites the current record of a GPU with another date or commit."""
    text = flatten(text)
    problems = []
    for mention in MENTION.finditer(text):
        record = records.get((mention.group(1) or mention.group(2)).upper())
        if record is None:
            continue
        end = SENTENCE_END.search(text, mention.end())
        sentence = text[mention.start():end.start() if end else len(text)]
        day, commit = record["date"][:10], record["git_commit"]
        dates, commits = DATE.findall(sentence), COMMIT.findall(sentence)
        wrong = [d for d in dates[:1] if d != day] + [c for c in commits[:1] if not commit.startswith(c)]
        if wrong:
            problems.append(f"{sentence[:100]!r} cites {', '.join(wrong)}; {record['file']} is {day}, commit {commit}")
    return problems


SAMPLE_RECORDS = {"H200": {"date": "2026-12-07T01:00:00Z", "git_commit": "abc1234", "file": "nvidia-h200.json"}}


@pytest.mark.parametrize(
    "text, stale",
    [
        ("In the H200 record (commit abc1234, triton 3.6, 2026-12-07) it ran at 0.95.", False),
        ("In the H200 record (commit c361eee, triton 3.6, 2026-12-02) it ran at 0.95.", True),
        ("In the recorded H200 run (2026-12-02) it ran at 0.95.", True),
        ("# In the recorded H200 run (triton 3.6,\n# 2026-12-02) it ran at 0.95.", True),
        ("The H200 record of commit 183fad9 (same versions, 2026-11-29) had it at 134.", False),
        ("In the H200\nrecord (commit c361eee) it ran at 0.95.", True),
        ("It ran at 35 us. In that record (NVIDIA H200, triton 3.6, 2026-12-02) more.", True),
        ("In the recorded H200 run it ran at 0.95. On 2026-12-02 we tried more.", False),
        ("The H100 record (2026-12-02) is another GPU's, with no record here to compare.", False),
    ],
)
def test_stale_citations_are_found(text, stale):
    assert bool(stale_citations(text, SAMPLE_RECORDS)) == stale


@pytest.fixture(scope="module")
def records_on_main() -> dict[str, dict]:
    records = current_records()  # read once: the files are large and the same for every source
    assert records, "no committed records found in docs/results"
    return records


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_prose_cites_the_records_on_main(path, records_on_main):
    problems = stale_citations(path.read_text(), records_on_main)
    assert not problems, "recheck these sentences against the new record:\n" + "\n".join(problems)
