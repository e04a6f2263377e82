"""`audit run_dir=...`: skyeval's grader and plain math-verify side by side on a run folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from skyeval.errors import ConfigError, DataNotFoundError
from skyeval.report.audit import main
from skyeval.results import RunFolder


def _run_folder(tmp_path: Path, data_dir: Path, records: list[dict]) -> Path:
    run_dir = tmp_path / "run"
    (run_dir / "generations").mkdir(parents=True)
    config = {"env": {"name": "math500", "limit": 3, "data_dir": None}, "data_dir": str(data_dir)}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    with RunFolder(run_dir).writer("generations") as writer:
        for record in records:
            writer.write(record)
    return run_dir


@pytest.fixture
def golds(data_dir: Path) -> list[tuple[str, str]]:
    path = data_dir / "math500" / "test.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found (set SKYEVAL_DATA_DIR)")
    rows = [json.loads(line) for line in path.read_text().splitlines()[:3]]
    return [(row["unique_id"], row["answer"]) for row in rows]


def test_audit_writes_every_disagreement_and_the_counts(tmp_path, data_dir, golds):
    (id0, gold0), (id1, gold1), (id2, _) = golds
    records = [
        # both right; the gold comes from the env rebuilt from config.yaml (no `expected`)
        {"id": id0, "sample_idx": 0, "generation": f"Thus the answer is $\\boxed{{{gold0}}}$."},
        # truncated reasoning: skyeval says no answer, math-verify reads the box in the thoughts
        {"id": id1, "sample_idx": 0, "generation": f"<think>\nMaybe \\boxed{{{gold1}}}? Let me check that"},
        # percent word: skyeval right, math-verify wrong
        {"id": id2, "sample_idx": 1, "generation": "The discount is 28 pct.", "expected": "28\\%"},
        {"id": id2, "sample_idx": 2, "generation": None},  # a failed generation: skipped
    ]
    run_dir = _run_folder(tmp_path, data_dir, records)
    assert main([f"run_dir={run_dir}"]) == 0
    summary = json.loads((run_dir / "audit" / "summary.json").read_text())
    assert summary["generations"] == 3 and summary["skipped"] == 1
    assert (summary["both_right"], summary["skyeval_only_right"], summary["math_verify_only_right"]) == (1, 1, 1)
    assert summary["skyeval_parse_errors"] == {"unclosed reasoning: truncated thought": 1}
    lines = (run_dir / "audit" / "disagreements.jsonl").read_text().splitlines()
    rows = {(row["id"], row["sample_idx"]): row for row in map(json.loads, lines)}
    assert set(rows) == {(id1, 0), (id2, 1)}
    assert rows[id1, 0]["gold"] == gold1 and rows[id1, 0]["skyeval"] == 0.0 and rows[id1, 0]["math_verify"] == 1.0
    assert rows[id1, 0]["extracted"] is None and rows[id1, 0]["parse_error"].startswith("unclosed reasoning")
    assert rows[id2, 1] | {"generation_tail": None} == {
        "id": id2, "sample_idx": 1, "gold": "28\\%", "extracted": "28", "math_verify_extracted": "28",
        "skyeval": 1.0, "math_verify": 0.0, "parse_error": None, "generation_tail": None,
        "reasoning_state": "none", "finish_reason": None,
    }


def test_audit_shows_the_reasoning_and_final_answer_rules_at_work(tmp_path, data_dir, golds):
    """Issue 24's rules on a run: a cut-off Sky-T1 thought, an output cut off by the token
    limit, an earlier answer overruled by the final one, a heading that is no answer."""
    (id0, gold0), (id1, gold1), (id2, gold2) = golds
    records = [
        {"id": id0, "sample_idx": 0, "generation": f"<|begin_of_thought|>\nSo it is $\\boxed{{{gold0}}}$, but wait"},
        {"id": id1, "sample_idx": 0, "generation": f"Each term gives $\\boxed{{{gold1}}}$ and then", "finish_reason": "length"},
        {"id": id2, "sample_idx": 0, "generation": "The answer is 12345. Checking once more, that was a slip.\n\n"
                                                     f"**Final answer:** ${gold2}$"},
        {"id": id2, "sample_idx": 1, "generation": f"#### Step 1: simplify\nSo the answer is ${gold2}$."},
    ]
    run_dir = _run_folder(tmp_path, data_dir, records)
    assert main([f"run_dir={run_dir}"]) == 0
    summary = json.loads((run_dir / "audit" / "summary.json").read_text())
    assert summary["skyeval_parse_errors"] == {
        "unclosed reasoning: truncated thought": 1,
        "truncated output (finish_reason length) without a closed thought": 1,
    }
    assert summary["reasoning_states"] == {"unclosed": 1, "none": 3}
    assert summary["both_right"] + summary["skyeval_only_right"] == 2  # the final answer, not the heading
    rows = [json.loads(line) for line in (run_dir / "audit" / "disagreements.jsonl").read_text().splitlines()]
    assert {(row["id"], row["parse_error"]) for row in rows if row["skyeval"] == 0.0} >= {
        (id0, "unclosed reasoning: truncated thought"),
        (id1, "truncated output (finish_reason length) without a closed thought"),
    }


def test_audit_out_option_and_module_entry_point(tmp_path, data_dir, golds):
    (id0, gold0), *_ = golds
    run_dir = _run_folder(tmp_path, data_dir, [{"id": id0, "sample_idx": 0, "generation": f"\\boxed{{{gold0}}}"}])
    out = tmp_path / "elsewhere" / "dis.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "skyeval.audit", f"run_dir={run_dir}", f"out={out}"],
        capture_output=True, text=True, check=True,
    )
    assert "agree" in proc.stdout and out.exists() and out.read_text() == ""
    assert json.loads((out.parent / "summary.json").read_text())["agree"] == 1


def test_audit_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="run_dir"):
        main([])
    with pytest.raises(ConfigError, match="unexpected argument"):
        main(["run_dir"])
    with pytest.raises(DataNotFoundError, match="not a run folder"):
        main([f"run_dir={tmp_path}"])
    proc = subprocess.run([sys.executable, "-m", "skyeval.audit", f"run_dir={tmp_path}"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("skyeval: error:")


def test_audit_grades_only_the_summarys_selection(tmp_path, data_dir, golds):
    """Issue 25 item 2: after a smaller re-run (problem id0 x n=1) the folder still holds an
    earlier run's generations; audit graded them all before."""
    (id0, gold0), (id1, gold1), _ = golds
    records = [{"id": id0, "sample_idx": 0, "generation": f"\\boxed{{{gold0}}}"},
               {"id": id0, "sample_idx": 1, "generation": "no answer"},  # index >= n: not selected
               {"id": id1, "sample_idx": 0, "generation": f"\\boxed{{{gold1}}}"}]  # another problem
    run_dir = _run_folder(tmp_path, data_dir, records)
    (run_dir / "summary.json").write_text(json.dumps({"env": "math500", "stage": "evaluate", "counts": {},
                                                      "config": {"sampling_params": {"n": 1}}}))
    (run_dir / "scores").mkdir()
    (run_dir / "scores" / "per_problem-part-00000.jsonl").write_text(json.dumps({"id": id0}) + "\n")
    assert main([f"run_dir={run_dir}"]) == 0
    summary = json.loads((run_dir / "audit" / "summary.json").read_text())
    assert (summary["generations"], summary["both_right"], summary["skipped"]) == (1, 1, 0)


def test_audit_counts_answer_sources_and_lists_the_fallbacks(tmp_path, data_dir, golds):
    """Issue 38: where each answer came from (box, "answer is" statement, the no-box
    fallback), the three-way verdicts, and every fallback extraction in fallbacks.jsonl."""
    (id0, gold0), (id1, gold1), (id2, _) = golds
    records = [
        {"id": id0, "sample_idx": 0, "generation": f"So $\\boxed{{{gold0}}}$."},
        {"id": id1, "sample_idx": 0, "generation": f"The answer is ${gold1}$."},
        {"id": id2, "sample_idx": 0, "generation": "Adding up, the zookeeper needs to order 1400 bananas.", "expected": "1400"},
        {"id": id2, "sample_idx": 1, "generation": "Adding up, we get $y = -2x$.", "expected": "-2"},
        {"id": id2, "sample_idx": 2, "generation": "I could not finish this one.", "expected": "3"},
    ]
    run_dir = _run_folder(tmp_path, data_dir, records)
    assert main([f"run_dir={run_dir}"]) == 0
    summary = json.loads((run_dir / "audit" / "summary.json").read_text())
    assert summary["answer_sources"] == {"box": 1, "statement": 1, "fallback": 2, "none": 1}
    assert summary["verdicts"] == {"equal": 3, "different": 1, "undecided": 1}
    fallbacks = [json.loads(line) for line in Path(summary["fallbacks_file"]).read_text().splitlines()]
    assert [(row["sample_idx"], row["extracted"], row["skyeval"]) for row in fallbacks] == [(0, "1400", 1.0), (1, "y = -2x", 0.0)]


def test_audit_lists_malformed_golds(tmp_path, data_dir, golds):
    """Issue 38 class 6: golds no grader can use (empty once normalised, or no mathematics
    math-verify can read) are listed by audit, not special-cased in the grader."""
    (id0, gold0), (id1, _), (id2, _) = golds
    records = [
        {"id": id0, "sample_idx": 0, "generation": f"So $\\boxed{{{gold0}}}$."},
        {"id": id1, "sample_idx": 0, "generation": "So $\\boxed{0.87}$.", "expected": "np.arcsin(10/13)"},
        {"id": id2, "sample_idx": 0, "generation": "She faces $\\boxed{\\text{east}}$.", "expected": "$$"},
    ]
    run_dir = _run_folder(tmp_path, data_dir, records)
    assert main([f"run_dir={run_dir}"]) == 0
    summary = json.loads((run_dir / "audit" / "summary.json").read_text())
    assert summary["malformed_golds"] == {
        id1: {"np.arcsin(10/13)": "math-verify reads no mathematics in it"}, id2: {"$$": "empty"},
    }
