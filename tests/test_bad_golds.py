"""Golds checked per benchmark when the data is read (issue 49 item 2): a gold that cannot
grade its samples is named in one console line, counted in summary.json
(`records.bad_golds`) and left out of the headline; `strict=true` refuses the run instead.
Verdicts are counted by kind."""

from __future__ import annotations

import json
from pathlib import Path

from skyeval.envs.registry import SkyEnvBuilder
from tests.conftest import load_summary, run_cli, run_folder


def _gsm8k_copy(data_dir: Path, root: Path) -> Path:
    """5 GSM8K problems: #1 without its '#### N' line, #3 with a gold math-verify cannot read."""
    rows = [json.loads(line) for line in (data_dir / "gsm8k" / "test.jsonl").read_text().splitlines()[:5]]
    rows[1]["answer"] = rows[1]["answer"].rpartition("####")[0]
    rows[3]["answer"] = rows[3]["answer"].rpartition("####")[0] + "#### \\frac{1}{"
    (root / "gsm8k").mkdir(parents=True)
    (root / "gsm8k" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_bad_golds_are_named_counted_and_left_out_of_the_headline(tmp_path, data_dir):
    """Before: the reference scored 1.0 on the row without '####' (its whole solution was the
    gold), the unreadable gold scored 0 in silence, and summary.json counted no verdicts."""
    data = _gsm8k_copy(data_dir, tmp_path / "data")
    proc = run_cli("evaluate", "+env=gsm8k", f"data_dir={data}", f"logging.results_dir={tmp_path / 'out'}", cwd=tmp_path)
    named = [line for line in proc.stderr.splitlines() if "bad gold" in line]
    assert len(named) == 2, proc.stderr[-3000:]
    assert "problem 1 of gsm8k: bad gold (its answer has no final '#### N' line)" in named[0]
    assert "problem 3 of gsm8k: bad gold (gold '\\\\frac{1}{': math-verify reads no mathematics in it)" in named[1]
    summary = load_summary(run_folder(tmp_path / "out", "gsm8k_reference_t0.0"))
    assert summary["records"]["bad_golds"] == 2 and set(summary["records"]["bad_gold_examples"]) == {"1", "3"}
    assert summary["counts"]["problems"] == 3 and summary["counts"]["samples"] == 3
    assert summary["metrics"]["accuracy"] == 1.0 and summary["metrics"]["intervals"]["accuracy"]["problems"] == 3
    assert summary["scoring"]["verdicts"] == {"equal": 3, "different": 0, "undecided": 0}
    assert "2 problems left out: their gold cannot grade" in proc.stdout


def test_strict_refuses_before_any_folder(tmp_path, data_dir):
    data = _gsm8k_copy(data_dir, tmp_path / "data")
    proc = run_cli("evaluate", "+env=gsm8k", f"data_dir={data}", "strict=true", f"logging.results_dir={tmp_path / 'out'}",
                   cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "skyeval: error: strict=true: 2 problems of gsm8k have a gold that cannot grade their samples "
        "(problem 1: its answer has no final '#### N' line; problem 3: gold '\\\\frac{1}{'")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _bad_golds(env) -> dict[str, str]:
    found: dict[str, str] = {}
    kept = [p["id"] for p in env.iter_problems(on_bad_gold=lambda p, why: found.setdefault(str(p["id"]), why))]
    return {"kept": kept, **found}


def test_a_choice_gold_outside_the_options_is_named(tmp_path, data_dir):
    rows = [json.loads(line) for line in
            (data_dir / "arc_challenge" / "test_full1172_with_model_response.jsonl").read_text().splitlines()[:3]]
    rows[2]["answerKey"] = "F"  # four options: A-D
    (tmp_path / "arc_challenge").mkdir()
    (tmp_path / "arc_challenge" / "test_full1172_with_model_response.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    found = _bad_golds(SkyEnvBuilder.build("arc_c", {"data_dir": str(tmp_path)}))
    bad_id = str(rows[2]["id"])
    assert found["kept"] == [rows[0]["id"], rows[1]["id"]]
    assert found[bad_id] == f"the gold 'F' is not one of its {len(rows[2]['choices']['label'])} options (A-D)"


def test_a_code_spec_without_tests_is_named(tmp_path, data_dir):
    rows = [json.loads(line) for line in (data_dir / "mbpp" / "mbpp.jsonl").read_text().splitlines()[10:13]]
    rows[1]["test_list"] = []
    (tmp_path / "mbpp").mkdir()
    (tmp_path / "mbpp" / "mbpp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = _bad_golds(SkyEnvBuilder.build("mbpp", {"data_dir": str(tmp_path)}))  # task ids 11-13: the test split
    assert len(found["kept"]) == 2 and "asserts" in found[str(rows[1]["task_id"])]


def test_a_judge_reads_what_the_rules_cannot(data_dir):
    """A gold math-verify reads no mathematics in is left out when the rules grade alone, kept
    when a judge grades (`grading.mode=fallback`: the judge sees it as text)."""
    env = SkyEnvBuilder.build("minervamath")
    problem = next(p for p in env.iter_problems() if p["expected"] == "np.arcsin(10/13)")
    assert "math-verify reads no mathematics in it" in env.bad_gold(problem)
    assert env.bad_gold(problem, judged=True) is None
    assert env.bad_gold({**problem, "expected": "10"}) is None
