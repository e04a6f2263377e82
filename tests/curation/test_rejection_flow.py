"""Rejection sampling end to end on MATH-500 through the CLI (generate, then score, then
curate), and best-of-N / preference pairs / rewriting on the same run folder.

The reference backend replays gold solutions; to get a realistic mix, the saved
generations are edited between `generate` and `score` (as a sampled model would
differ): per problem, sample 0 is the gold solution, 1 the gold plus a closing check
(longer, correct), 2 a short wrong answer, 3 a correct answer buried in a repetition
loop (even problems) or the gold with a wrong final answer (odd problems).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval.curation import best_of_n, load_scored, preference_pairs, to_dataset
from skyeval.curation.pairs import SHORTEST_LONGEST, SILC, response_length
from tests.backends.fault_server import FaultServer
from tests.conftest import (
    REPO,
    load_summary,
    per_problem_rows,
    read_jsonl,
    run_cli,
    run_folder,
)

CURATE = str(REPO / "scripts" / "curate.py")
# The first 6 problems of MATH-500 (env.limit=6) and their gold answers: (3, pi/2), p - q,
# 14/3, 9, "Evelyn", 42.
MATH500_FIRST_6 = ["test/precalculus/807.json", "test/intermediate_algebra/1994.json", "test/algebra/2584.json",
                   "test/number_theory/572.json", "test/algebra/1349.json", "test/prealgebra/1622.json"]
WRONG = "12345"
RS_TARGET = "skyeval.curation.rejection.MathRejectionEnv"


def run_cli_script(*args: str) -> subprocess.CompletedProcess:
    """`python scripts/curate.py ARGS` in a subprocess."""
    proc = subprocess.run([sys.executable, CURATE, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def edited(generation: str, expected: str, problem: int, sample: int) -> str:
    if sample == 1:
        return generation + f"\n\nChecking the result once more confirms it: the answer is $\\boxed{{{expected}}}$."
    if sample == 2:
        return f"The answer is $\\boxed{{{WRONG}}}$."
    if sample == 3 and problem % 2 == 0:
        return "I will check this again. " * 120 + f"The final answer is $\\boxed{{{expected}}}$."
    if sample == 3:
        return generation + f"\n\nOn reflection, the final answer is $\\boxed{{{WRONG}}}$."
    return generation


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, data_dir) -> Path:
    """generate (CLI) -> edit generations -> score (CLI)."""
    cwd = tmp_path_factory.mktemp("rejection")
    run_cli("generate", "+experiment=numina_rejection_sampling", "env=math500", f"env._target_={RS_TARGET}",
            "env.limit=6", "sampling_params.n=4", "template.system_prompt_name=helpful", cwd=cwd)
    folder = run_folder(cwd / "outputs", "rejection_sampling_math500_reference")
    gens = read_jsonl(folder / "generations")
    expected = {json.loads(line)["unique_id"]: json.loads(line)["answer"]
                for line in (data_dir / "math500" / "test.jsonl").read_text().splitlines()}
    order = sorted({g["id"] for g in gens})
    for g in gens:
        g["generation"] = edited(g["generation"], expected[g["id"]], order.index(g["id"]), g["sample_idx"])
    for part in (folder / "generations").glob("*.jsonl"):  # the edited generations replace the saved ones
        part.unlink()
    (folder / "generations" / "part-00000.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    run_cli("score", f"run_dir={folder}", cwd=cwd)
    return folder


@pytest.fixture(scope="module")
def scores(run_dir) -> list[dict]:
    return load_scored(run_dir)  # score records joined with their texts from generations/


def test_generate_then_score_applies_both_scorers(run_dir, scores):
    summary = load_summary(run_dir)
    assert summary["stage"] == "score" and summary["counts"]["scored"] == 24 and summary["counts"]["failed"] == 0
    assert summary["config"]["env"]["_target_"] == RS_TARGET
    assert summary["config"]["sampling_params"]["temperature"] == 0.7
    assert summary["metrics"]["accuracy"] == pytest.approx(15 / 24)  # 3 correct of 4 on even, 2 on odd problems
    by_sample = {}
    for s in scores:
        assert s["score"] == s["correctness"] and 0 <= s["readability"] <= 1
        by_sample.setdefault(s["sample_idx"], []).append(s)
    assert all(s["keep"] and s["correctness"] == 1 for i in (0, 1) for s in by_sample[i])
    assert not any(s["keep"] or s["correctness"] for s in by_sample[2])
    loops = [s for s in by_sample[3] if s["correctness"] == 1]
    assert len(loops) == 3 and all(not s["keep"] and "repetition" in s["readability_issues"] for s in loops)


def test_curate_sft_keeps_passing_samples_with_their_metadata(run_dir, scores):
    proc = run_cli_script("sft", str(run_dir))
    assert "correct+readable: kept 12 of 24" in proc.stdout
    rows = read_jsonl(run_dir / "curated" / "sft.jsonl")
    kept = {(s["id"], s["sample_idx"]): s for s in scores if s["keep"]}
    assert {(r["id"], r["sample_idx"]) for r in rows} == set(kept)
    for row in rows:
        turns, sample = row["messages"], kept[(row["id"], row["sample_idx"])]
        assert [t["role"] for t in turns] == ["system", "user", "assistant"]
        assert turns[0]["content"] == "You are a helpful assistant."
        assert turns[1]["content"].startswith(sample["question"])
        assert turns[2]["content"] == sample["generation"]
        about = row["metadata"]
        assert (about["env"], about["id"], about["sample_idx"], about["model"]) == (
            "math500", sample["id"], sample["sample_idx"], "reference")
        assert (about["gold"], about["score"], about["verdict"]) == (sample["expected"], 1.0, sample["verdict"])
        assert about["sampling"] == {"n": 4, "temperature": 0.7, "top_p": 0.95, "max_tokens": 32768,
                                     "seed": sample["seed"]}
    summary = json.loads((run_dir / "curated" / "sft.summary.json").read_text())
    assert [(s["step"], s["rows_in"], s["rows_kept"]) for s in summary["steps"]] == [
        ("scored samples", 24, 24), ("correct+readable", 24, 12)]


def test_best_of_n_agrees_with_summary_metrics(run_dir, scores):
    per_question = {q["id"]: q for q in best_of_n(to_dataset(scores), ks=(1, 2, 4)).take_all()}
    metrics = load_summary(run_dir)["metrics"]
    for k in ("1", "2", "4"):
        mean = sum(q[f"pass@{k}"] for q in per_question.values()) / len(per_question)
        assert mean == pytest.approx(metrics["pass@k"][k])
    majority = sum(q["majority_score"] for q in per_question.values()) / len(per_question)
    assert majority == pytest.approx(metrics["majority_vote_accuracy"])
    for saved in per_problem_rows(run_dir):
        mine = per_question[saved["id"]]
        assert saved["failed"] == saved["missing"] == 0
        assert {k: mine[k] for k in saved if k in mine and k != "id"} == {k: saved[k] for k in saved if k in mine and k != "id"}
    assert metrics["majority_vote_accuracy"] == 1.0  # odd problems tie 2-2: the first seen (gold) answer wins


def test_preference_pairs_follow_the_length_rules(run_dir, scores):
    pairs = preference_pairs(to_dataset(load_scored(run_dir)), silc=True).take_all()
    by_id: dict[str, list[dict]] = {}
    for s in scores:
        by_id.setdefault(s["id"], []).append(s)
    assert sorted(p["kind"] for p in pairs) == sorted([SHORTEST_LONGEST, SILC] * 6)
    for pair in pairs:
        group = by_id[pair["id"]]
        correct = [response_length(s) for s in group if s["score"] == 1]
        wrong = [response_length(s) for s in group if s["score"] == 0]
        chosen, rejected = pair["metadata"]["chosen"], pair["metadata"]["rejected"]
        assert pair["chosen"][0]["role"] == "assistant" and pair["prompt"][-1]["role"] == "user"
        assert chosen["length"] < rejected["length"] if pair["kind"] == SHORTEST_LONGEST \
            else rejected["length"] < chosen["length"]
        if pair["kind"] == SHORTEST_LONGEST:
            assert chosen["score"] == rejected["score"] == 1
            assert (chosen["length"], rejected["length"]) == (min(correct), max(correct))
        else:
            assert (chosen["score"], rejected["score"]) == (1, 0)
            assert rejected["length"] == min(wrong)
            assert chosen["length"] == min(c for c in correct if c > min(wrong))
        assert len(pair["chosen"][0]["content"]) == chosen["length"]  # no usage: lengths in characters


def test_curate_rewrite_keeps_rewrites_that_still_score_correct(run_dir, scores):
    """The rewriter is a real OpenAI-compatible server on loopback that answers
    "The answer is \\boxed{N}" with N the last integer of the prompt (the original
    response is last in the prompt), so a rewrite stays correct only for some answers."""
    kept = [s for s in scores if s["keep"]]
    assert sorted((s["id"], s["sample_idx"]) for s in kept) == sorted((p, i) for p in MATH500_FIRST_6 for i in (0, 1))
    # Worked out from the data, not by a grader: sample 1 ends with its gold answer boxed,
    # so its rewrite is right only where that answer is an integer (572: 9, 1622: 42); a
    # sample 0 is the gold solution, whose last integer is never the answer (572 ends
    # "divisors of 196.", 1622 with drawing code; the other answers are not integers).
    expect_correct = {("test/number_theory/572.json", 1), ("test/prealgebra/1622.json", 1)}
    out = run_dir / "curated" / "rewritten.jsonl"
    with FaultServer() as server:
        proc = run_cli_script("rewrite", str(run_dir), "--out", str(out), "--model", "openai",
                              "--set", "model_source=rewriter", "--set", f"api_url={server.url}",
                              "--set", "api_key_env=null")
        requests = list(server.log)
    assert f"rewrite correct+readable: kept {len(expect_correct)} of 12" in proc.stdout
    rows = read_jsonl(out)
    assert {(r["id"], r["sample_idx"]) for r in rows} == expect_correct
    for row in rows:  # the samples had no reasoning: their answers were rewritten
        assert row["messages"][-1]["content"].startswith("The answer is \\boxed{") and row["metadata"]["score"] == 1
        assert row["metadata"]["rewrite"] == {"model": "rewriter", "what": "answer"}
    dropped = read_jsonl(out.with_name("rewritten.dropped.jsonl"))
    assert len(dropped) == 12 - len(expect_correct) and all(d["score"] == 0 for d in dropped)
    assert all(d["original_generation"] != d["generation"] for d in dropped)
    assert len(requests) == 12 and all("rewrite" in r["messages"][0]["content"] for r in requests)
