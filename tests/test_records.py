"""The recorded-results format: valid documents pass, each kind of broken field is named."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tritonperf.bench import records

RESULTS = sorted((Path(__file__).parent.parent / "docs" / "results").glob("*.json"))


def test_sample_is_valid(sample_doc):
    assert records.validate(sample_doc) is sample_doc


def _set(doc, path, value):
    *parents, last = path
    for key in parents:
        doc = doc[key]
    if value is KeyError:
        del doc[last]
    else:
        doc[last] = value


@pytest.mark.parametrize(
    "path, value, field",
    [
        (("schema",), 2, "schema"),
        (("provenance", "gpu"), KeyError, "provenance"),
        (("provenance", "sms"), 0, "provenance.sms"),
        (("provenance", "date"), "22 Nov 2026", "provenance.date"),
        (("provenance", "ptxas"), "", "provenance.ptxas"),
        (("ceilings", "copy_GBps"), -5.0, "ceilings.copy_GBps"),
        (("ceilings", "copy_GBps"), KeyError, "ceilings"),
        (("ceilings", "bandwidth"), 10.0, "ceilings"),
        (("records", 0, "kernel"), "vector_mul", "records[0].kernel"),
        (("records", 1, "variant"), "Torch eager", "records[1].variant"),
        (("records", 2, "direction"), "forward", "records[2].direction"),
        (("records", 3, "dtype"), "torch.float32", "records[3].dtype"),
        (("records", 4, "ms"), 0, "records[4].ms"),
        (("records", 5, "GBps"), "fast", "records[5].GBps"),
        (("records", 0, "shape"), {"M": 4}, "records[0].shape"),
        (("records", 0, "extra"), 1, "records[0]"),
    ],
)
def test_broken_field_is_named(sample_doc, path, value, field):
    _set(sample_doc, path, value)
    with pytest.raises(records.RecordsError, match=rf"field {__import__('re').escape(field)}[:.\[]"):
        records.validate(sample_doc)


def test_shape_keys_follow_the_kernel(sample_doc):
    rec = sample_doc["records"][0]
    rec.update(kernel="matmul", shape={"M": 8, "N": 8, "K": 8})
    records.validate(sample_doc)
    rec["shape"] = {"M": 8, "N": 8}
    with pytest.raises(records.RecordsError, match=r"records\[0\]\.shape.*'K' is a required property"):
        records.validate(sample_doc)


def test_save_and_load_round_trip(sample_doc, tmp_path):
    path = records.save(sample_doc, tmp_path / "sub" / "gpu.json")
    assert records.load(path) == sample_doc


def test_save_refuses_an_invalid_document(sample_doc, tmp_path):
    sample_doc["records"][0]["ms"] = -1
    with pytest.raises(records.RecordsError):
        records.save(sample_doc, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_load_rejects_bad_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(records.RecordsError, match="not valid JSON"):
        records.load(path)


def test_load_names_a_missing_file(tmp_path):
    with pytest.raises(records.RecordsError, match="missing.json: cannot be read"):
        records.load(tmp_path / "missing.json")


def test_record_derives_rates():
    rec = records.record("vector_add", "tritonperf", "fwd", "float32", {"N": 1000}, 0.001, 12_000, None)
    assert rec["GBps"] == pytest.approx(12.0) and rec["TFLOPS"] is None
    rec = records.record("matmul", "torch", "fwd", "float16", {"M": 2, "N": 2, "K": 2}, 1.0, None, 2 * 10**9)
    assert rec["TFLOPS"] == pytest.approx(2.0) and rec["GBps"] is None


@pytest.mark.parametrize("name, slug", [("NVIDIA H200", "nvidia-h200"), ("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3")])
def test_slug(name, slug):
    assert records.slug(name) == slug


def _git(path, *args):
    done = subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_checkout_commit_names_the_commit_and_marks_changes(tmp_path):
    package = tmp_path / "src" / "tritonperf"
    package.mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "first")
    short = _git(tmp_path, "rev-parse", "--short", "HEAD")
    assert records.checkout_commit(package) == short
    (package / "new.py").write_text("")  # untracked files (caches, build outputs) do not count
    assert records.checkout_commit(package) == short
    (package / "a.py").write_text("A = 2\n")
    assert records.checkout_commit(package) == short + "-dirty"


def test_checkout_commit_is_unknown_outside_its_own_checkout(tmp_path):
    elsewhere = tmp_path / "venv" / "tritonperf"  # e.g. installed into an environment inside another repository
    elsewhere.mkdir(parents=True)
    assert records.checkout_commit(elsewhere) == "unknown"  # not a repository at all
    (tmp_path / "f").write_text("")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "first")
    assert records.checkout_commit(elsewhere) == "unknown"


def test_git_commit_prefers_the_environment(monkeypatch):
    monkeypatch.setenv("TRITONPERF_GIT_COMMIT", "abc1234")
    assert records.git_commit() == "abc1234"


def test_find_results_walks_up_to_docs_results(tmp_path, monkeypatch, sample_doc):
    monkeypatch.delenv("TRITONPERF_RESULTS", raising=False)
    records.save(sample_doc, tmp_path / "docs" / "results" / "x.json")
    (tmp_path / "examples").mkdir()
    assert records.find_results(tmp_path / "examples") == [tmp_path / "docs" / "results" / "x.json"]
    monkeypatch.setenv("TRITONPERF_RESULTS", str(tmp_path / "docs" / "results"))
    assert len(records.find_results("/")) == 1


def test_find_tables_reads_one_kind_from_the_results_folder(tmp_path, monkeypatch, sample_doc):
    monkeypatch.delenv("TRITONPERF_RESULTS", raising=False)
    prov = sample_doc["provenance"]
    written = records.save_markdown(prov, "Timed.", "| a |\n", tmp_path / "docs" / "results" / "first_call")
    records.save_markdown(prov, "Timed.", "| b |\n", tmp_path / "docs" / "results" / "measuring")
    assert records.find_tables("first_call", tmp_path) == [written]
    assert records.find_tables("versus_compile", tmp_path) == []
    assert records.find_tables("first_call", "/") == []


def test_recorded_tables_are_headed_and_named_by_their_gpu(tmp_path, sample_doc):
    prov = sample_doc["provenance"]
    assert records.provenance_text(prov) == (
        "Recorded on Example GPU (100 SMs), 2026-01-02T03:04:05Z; triton 3.6.0, torch 2.11.0, CUDA 13.0; commit abc1234"
    )
    assert records.provenance_text(prov | {"ptxas": "13.0"}) == (
        "Recorded on Example GPU (100 SMs), 2026-01-02T03:04:05Z; triton 3.6.0, torch 2.11.0, CUDA 13.0, ptxas 13.0; "
        "commit abc1234"
    )
    path = records.save_markdown(prov, "What was timed.", "| a |\n", tmp_path / "new" / "folder")
    assert path == tmp_path / "new" / "folder" / "example-gpu.md"
    assert path.read_text() == f"{records.provenance_text(prov)}. What was timed. Command: `tritonperf bench`.\n\n| a |\n"


def test_committed_results_exist_and_validate():
    assert RESULTS, "docs/results/ holds no recorded results: run `nox -s bench` on a GPU"
    for path in RESULTS:
        doc = records.load(path)
        assert path.stem == records.slug(doc["provenance"]["gpu"])
        assert json.loads(path.read_text()) == doc


def test_spec_for_names_a_missing_direction():
    from tritonperf.bench.specs import spec_for

    assert spec_for("softmax", "bwd").direction == "bwd"
    with pytest.raises(ValueError, match="'transpose' has no 'bwd' benchmark"):
        spec_for("transpose", "bwd")
