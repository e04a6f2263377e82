"""scripts/rejection_sampling_example.py runs offline on MATH-500 and writes SFT rows."""

import runpy

from tests.conftest import REPO, read_jsonl


def test_rejection_sampling_example(tmp_path, data_dir, ray_session):
    example = runpy.run_path(str(REPO / "scripts" / "rejection_sampling_example.py"))
    out = tmp_path / "sft.jsonl"
    assert example["main"](limit=3, n=2, out=out) == 6  # gold solutions: correct and readable
    rows = read_jsonl(out)
    assert sorted(r["sample_idx"] for r in rows) == [0, 0, 0, 1, 1, 1]
    assert all([m["role"] for m in r["messages"]] == ["user", "assistant"] for r in rows)
    assert all(r["metadata"]["score"] == 1.0 and r["metadata"]["gold"] for r in rows)
