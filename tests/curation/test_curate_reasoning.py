"""`curate.py sft` and `pairs` keep the reasoning of a run's samples (a hand-made run
folder: part files as the recorder writes them, with the reasoning split off)."""

from __future__ import annotations

import json

import pytest

from tests.curation.conftest import curate_main


@pytest.fixture
def run_dir(tmp_path):
    prompt = [{"role": "user", "content": "What is 1+1?"}]
    samples = [(0, "Add them. Then check twice, carefully.", "\\boxed{2}", 1.0),
               (1, "Add.", "\\boxed{2}", 1.0), (2, "Guess.", "\\boxed{3}", 0.0)]
    for kind in ("generations", "scores"):
        (tmp_path / kind).mkdir()
    with (tmp_path / "generations" / "part-00000.jsonl").open("w") as gens, \
            (tmp_path / "scores" / "part-00000.jsonl").open("w") as scores:
        for idx, reasoning, answer, score in samples:
            gens.write(json.dumps({"id": "q1", "sample_idx": idx, "prompt": prompt, "generation": answer,
                                   "reasoning": reasoning}) + "\n")
            scores.write(json.dumps({"id": "q1", "sample_idx": idx, "score": score, "keep": score == 1.0,
                                     "usage": {"completion_tokens": len(reasoning) + len(answer)}}) + "\n")
    return tmp_path


def read(path):
    return [json.loads(line) for line in path.open()]


def test_sft_keeps_the_reasoning_by_default(run_dir):
    main = curate_main()
    main(["sft", str(run_dir)])
    rows = read(run_dir / "curated" / "sft.jsonl")
    assert [r["messages"][-1]["content"] for r in rows] == [
        "<think>\nAdd them. Then check twice, carefully.\n</think>\n\n\\boxed{2}", "<think>\nAdd.\n</think>\n\n\\boxed{2}"]
    (run_dir / "removed.jsonl").write_text(json.dumps({"id": "q1", "sample_idx": 1, "contamination": []}) + "\n")
    summary = main(["sft", str(run_dir), "--reasoning", "drop", "--out", str(run_dir / "drop.jsonl"),
                    "--exclude", str(run_dir / "removed.jsonl"), "--format", "sharegpt"])
    assert [r["conversations"][-1]["value"] for r in read(run_dir / "drop.jsonl")] == ["\\boxed{2}"]
    assert summary["steps"][1] == {"step": "excluded (removed.jsonl)", "rows_in": 3, "rows_kept": 2}


def test_pairs_keep_the_reasoning_in_sky_t1_markers(run_dir):
    curate_main()(["pairs", str(run_dir), "--silc", "--reasoning", "sky_t1"])
    pairs = {p["kind"]: p for p in read(run_dir / "curated" / "pairs.jsonl")}
    chosen = pairs["shortest_longest"]["chosen"][0]["content"]
    assert chosen.startswith("<|begin_of_thought|>\n\nAdd.\n\n<|end_of_thought|>") and "\\boxed{2}" in chosen
    assert "Guess." in pairs["short_incorrect_long_correct"]["rejected"][0]["content"]


def test_bad_think_tags_are_refused(run_dir, capsys):
    with pytest.raises(SystemExit) as stop:
        curate_main()(["sft", str(run_dir), "--think-tags", "<think>"])
    assert stop.value.code == 2 and "think_tags" in capsys.readouterr().err
