"""Readability over the whole sample (issue 33 item 5): rejection sampling, `curate.py sft`
and the pairs' chosen responses judge the reasoning too; a looping reasoning is rejected
with its reason recorded. Driven through the CLI with the reference backend, whose
generations replay a local MATH-500 copy's solutions (a think block in front of some)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from skyeval.curation.pairs import question_pairs
from skyeval.curation.readability import readability, sample_readability
from tests.conftest import REPO, read_jsonl, run_cli, run_folder

LOOP = "Let me think step by step. " * 20
FINE = ("First I read what is asked and name the unknowns. Then I set up the relation between them, "
        "solve it, and check the result against the conditions of the problem.")
RS_TARGET = "skyeval.curation.rejection.MathRejectionEnv"


def test_a_looping_reasoning_fails_the_sample_with_its_reason():
    answer = "So the answer is $\\boxed{4}$."
    assert readability(answer).score == 1.0  # the answer alone reads fine: what was judged before
    looping = sample_readability(answer, LOOP)
    assert looping.score == 0.0 and "reasoning_repetition" in looping.issues
    assert sample_readability(answer, FINE).score == 1.0  # a reasoning needs no final answer of its own


def test_rejection_sampling_and_sft_reject_a_looping_reasoning(tmp_path, data_dir):
    rows = [json.loads(line) for line in (data_dir / "math500" / "test.jsonl").read_text().splitlines()[:4]]
    for index, row in enumerate(rows):
        row["solution"] = f"<think>{LOOP if index < 2 else FINE}</think>{row['solution']}"
    (tmp_path / "copy" / "math500").mkdir(parents=True)
    (tmp_path / "copy" / "math500" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_cli("evaluate", "+experiment=numina_rejection_sampling", "env=math500", f"env._target_={RS_TARGET}",
            "env.limit=4", "sampling_params.n=1", f"data_dir={tmp_path / 'copy'}",
            f"logging.results_dir={tmp_path / 'out'}", cwd=tmp_path)
    folder = run_folder(tmp_path / "out", "rejection_sampling_math500_reference")
    scores = {s["id"]: s for s in read_jsonl(folder / "scores")}
    looping, fine = [rows[i]["unique_id"] for i in (0, 1)], [rows[i]["unique_id"] for i in (2, 3)]
    for pid in looping:
        assert scores[pid]["correctness"] == 1.0 and scores[pid]["keep"] is False
        assert "reasoning_repetition" in scores[pid]["readability_issues"] and scores[pid]["reasoning_readability"] == 0.0
    assert all(scores[pid]["keep"] is True for pid in fine)

    out = tmp_path / "sft.jsonl"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "curate.py"), "sft", str(folder), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    written = read_jsonl(out)
    assert sorted(r["id"] for r in written) == sorted(fine) and not any(LOOP in json.dumps(r) for r in written)
    summary = json.loads(out.with_name("sft.summary.json").read_text())
    assert summary["steps"][-1]["dropped_for"]["reasoning_repetition"] == 2


def test_a_pair_never_chooses_a_looping_reasoning():
    def sample(idx: int, text: str, reasoning: str | None, score: float, tokens: int) -> dict:
        return {"id": "p", "sample_idx": idx, "prompt": "Q?", "generation": text, "reasoning": reasoning,
                "score": score, "usage": {"completion_tokens": tokens}}

    short_loop = sample(0, "It is $\\boxed{4}$.", LOOP, 1.0, 10)  # the shortest correct: but it loops
    middle = sample(1, "Adding two and two gives $\\boxed{4}$.", FINE, 1.0, 20)
    longest = sample(2, "Adding two and two, then checking, gives $\\boxed{4}$.", FINE, 1.0, 30)
    wrong = sample(3, "$\\boxed{5}$", None, 0.0, 5)
    pairs = {p["kind"]: p for p in question_pairs([short_loop, middle, longest, wrong], silc=True)}
    sides = {kind: (p["metadata"]["chosen"]["sample_idx"], p["metadata"]["rejected"]["sample_idx"])
             for kind, p in pairs.items()}
    assert sides["shortest_longest"] == (1, 2)
    assert all(chosen != 0 for chosen, _ in sides.values())
