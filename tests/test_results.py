import json

import pytest

from skyeval.config import REDACTED, redact, safe_name
from skyeval.results import ConfigMismatchError, RunFolder, append_jsonl, read_jsonl, replace_jsonl, write_rows


def test_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "g.jsonl"
    append_jsonl(path, [{"id": "a", "sample_idx": 0}])
    with path.open("a") as fh:
        fh.write('{"id": "b", "sampl')  # a crash mid-write
    assert read_jsonl(path) == [{"id": "a", "sample_idx": 0}]


def test_claim_resumes_same_config_and_refuses_another(tmp_path):
    folder = RunFolder(tmp_path / "run")
    assert folder.claim({"model": "a"}) is False
    assert folder.claim({"model": "a"}) is True
    with pytest.raises(ConfigMismatchError, match="model"):
        folder.claim({"model": "b"})
    append_jsonl(folder.generations, [{"id": "x", "sample_idx": 0}])
    assert folder.claim({"model": "b"}, overwrite=True) is False
    assert read_jsonl(folder.generations) == []


def test_write_rows_formats(tmp_path):
    rows = [{"id": "a", "score": 1.0}, {"id": "b", "score": 0.0}]
    assert read_jsonl(write_rows(rows, tmp_path / "r.jsonl")) == rows
    assert json.loads(write_rows(rows, tmp_path / "r.json", "json").read_text()) == rows
    import pyarrow.parquet as pq

    assert pq.read_table(write_rows(rows, tmp_path / "r.parquet", "parquet")).to_pylist() == rows
    with pytest.raises(ValueError):
        write_rows(rows, tmp_path / "r.csv", "csv")


def test_replace_is_atomic_and_complete(tmp_path):
    path = tmp_path / "s.jsonl"
    replace_jsonl(path, [{"a": 1}])
    replace_jsonl(path, [{"a": 2}])
    assert read_jsonl(path) == [{"a": 2}]


def test_redact_keys_and_env_values(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-1234567890")
    obj = {"api_key": "x", "nested": {"token": "t"}, "cmd": "run with sk-test-1234567890", "api_key_env": "OPENAI_API_KEY"}
    out = redact(obj)
    assert out["api_key"] == REDACTED and out["nested"]["token"] == REDACTED
    assert "sk-test" not in json.dumps(out)


def test_safe_name():
    assert safe_name("math500_Qwen/Qwen2.5-7B_t0.6") == "math500_Qwen_Qwen2.5-7B_t0.6"
