"""compare: paired differences checked against hand-computed examples."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval.errors import ConfigError
from skyeval.report.compare import compare_runs, format_text, main
from tests.report.runfolders import FAILED, describe_problems, write_run

REPO = Path(__file__).resolve().parents[2]


def one_sample_pair(tmp_path: Path) -> tuple[Path, Path]:
    """10 problems, n = 1. A right on 0,1,2 and 9; B right on 0..8.
    Discordant: A-only {9}, B-only {3..8}: McNemar exact p = 2 * (C(7,0) + C(7,1)) / 2^7 = 0.125."""
    a = {(str(i), 0): 1.0 if i in (0, 1, 2, 9) else 0.0 for i in range(10)}
    a[("5", 0)] = FAILED  # a failed sample counts as wrong
    b = {(str(i), 0): 1.0 if i <= 8 else 0.0 for i in range(10)}
    return write_run(tmp_path / "a", a, model="old"), write_run(tmp_path / "b", b, model="new")


def mover(a, b, r):
    """The MOVER interval of b − a by hand from (value, low, high) of each side."""
    (va, la, ha), (vb, lb, hb) = a, b
    return (vb - va - math.sqrt((vb - lb) ** 2 + (ha - va) ** 2 - 2 * r * (vb - lb) * (ha - va)),
            vb - va + math.sqrt((hb - vb) ** 2 + (va - la) ** 2 - 2 * r * (hb - vb) * (va - la)))


def cp(x, n):
    from scipy.stats import beta

    return (x / n, beta.ppf(0.025, x, n - x + 1) if x else 0.0, beta.ppf(0.975, x + 1, n - x) if x < n else 1.0)


def test_one_sample_per_problem_uses_mcnemar(tmp_path):
    run_a, run_b = one_sample_pair(tmp_path)
    result = compare_runs(run_a, run_b)
    acc = result["metrics"]["accuracy"]
    assert acc["a"] == pytest.approx(0.4) and acc["b"] == pytest.approx(0.9)
    assert acc["diff"] == pytest.approx(0.5)
    assert acc["discordant"] == {"a_only": 1, "b_only": 6}
    assert acc["p_value"] == pytest.approx(0.125)
    assert acc["test"].startswith("McNemar (exact binomial); interval MOVER")
    # the interval: each run's Clopper-Pearson interval (4/10, 9/10) joined by MOVER with the
    # correlation of the two runs' outcomes (phi of the 2x2 table: 3 both right, 1 A only, 6 B only, 0 neither)
    phi = (3 * 0 - 1 * 6) / math.sqrt(4 * 6 * 9 * 1)
    assert (acc["low"], acc["high"]) == pytest.approx(mover(cp(4, 10), cp(9, 10), phi), abs=1e-9)
    assert acc["low"] < 0 < acc["high"]  # as p = 0.125 > 0.05 says
    assert result["metrics"]["pass@1"]["p_value"] == pytest.approx(0.125)
    assert result["metrics"]["pass@1"]["low"] == acc["low"]
    assert [p["id"] for p in result["won"]] == ["3", "4", "5", "6", "7", "8"]
    assert [p["id"] for p in result["lost"]] == ["9"]
    assert result["matched"] == {"samples": 10, "problems": 10, "a_only": 0, "b_only": 0, "failed": {"a": 1, "b": 0},
                                 "differing_problems": []}
    assert next(p for p in result["won"] if p["id"] == "5")["a_failed"] == 1
    assert compare_runs(run_a, run_b) == result


def test_several_samples_and_pass_at_k(tmp_path):
    """3 problems, n = 4. A: 2/4, 0/4, 4/4; B: 4/4, 1/4, 4/4.
    accuracy 6/12 -> 9/12; pass@2 (1 - C(n-c,2)/C(n,2)): A (5/6 + 0 + 1)/3 = 11/18, B (1 + 1/2 + 1)/3 = 5/6;
    pass@4: A 2/3, B 1."""
    right_a = {"0": 2, "1": 0, "2": 4}
    right_b = {"0": 4, "1": 1, "2": 4}
    runs = [write_run(tmp_path / name, {(p, i): 1.0 if i < right[p] else 0.0 for p in right for i in range(4)}, n=4)
            for name, right in (("a", right_a), ("b", right_b))]
    result = compare_runs(*runs)
    m = result["metrics"]
    assert set(m) == {"accuracy", "pass@1", "pass@2", "pass@4"}
    assert (m["accuracy"]["a"], m["accuracy"]["b"], m["accuracy"]["diff"]) == pytest.approx((0.5, 0.75, 0.25))
    assert (m["pass@2"]["a"], m["pass@2"]["b"], m["pass@2"]["diff"]) == pytest.approx((11 / 18, 5 / 6, 2 / 9))
    assert (m["pass@4"]["a"], m["pass@4"]["b"], m["pass@4"]["diff"]) == pytest.approx((2 / 3, 1.0, 1 / 3))
    assert m["accuracy"]["test"].startswith("paired MOVER") and "discordant" not in m["accuracy"]
    # three problems say little: the interval holds 0 and p agrees
    assert m["accuracy"]["low"] < 0 < m["accuracy"]["high"] and m["accuracy"]["p_value"] > 0.05
    assert [(p["id"], p["a_correct"], p["b_correct"]) for p in result["won"]] == [("0", 2, 4), ("1", 0, 1)]
    assert result["lost"] == []


def test_no_zero_width_interval_when_runs_agree(tmp_path):
    """Before: [0, 0] from two runs right on all 10 problems (and [1, 1] for B right on all, A on none)."""
    a = write_run(tmp_path / "a", {(str(p), 0): 1.0 for p in range(10)})
    b = write_run(tmp_path / "b", {(str(p), 0): 1.0 for p in range(10)})
    acc = compare_runs(a, b)["metrics"]["accuracy"]
    assert acc["diff"] == 0 and acc["p_value"] == 1.0
    assert (acc["low"], acc["high"]) == pytest.approx((-0.308497, 0.308497), abs=1e-6)  # 1 - 0.025 ** (1/10)
    a = write_run(tmp_path / "c", {(str(p), i): 0.0 for p in range(5) for i in range(2)}, n=2)
    b = write_run(tmp_path / "d", {(str(p), i): 1.0 for p in range(5) for i in range(2)}, n=2)
    acc = compare_runs(a, b)["metrics"]["accuracy"]
    assert acc["diff"] == 1.0 and acc["low"] < 0.6 and acc["high"] == 1.0 and acc["p_value"] < 0.05


def test_only_shared_samples_are_paired(tmp_path):
    a = write_run(tmp_path / "a", {(str(p), 0): 1.0 for p in range(4)})
    b = write_run(tmp_path / "b", {(str(p), 0): 0.0 for p in range(2, 6)})
    result = compare_runs(a, b)
    assert result["matched"] == {"samples": 2, "problems": 2, "a_only": 2, "b_only": 2, "failed": {"a": 0, "b": 0},
                                 "differing_problems": []}
    assert result["metrics"]["accuracy"]["diff"] == pytest.approx(-1.0)
    assert [p["id"] for p in result["lost"]] == ["2", "3"]


def test_problems_with_another_gold_or_text_are_not_paired(tmp_path, capsys, caplog):
    """Issue 49 item 4: runs graded against different golds were paired silently."""
    a = describe_problems(write_run(tmp_path / "a", {(str(p), 0): 1.0 for p in range(6)}))
    b = describe_problems(write_run(tmp_path / "b", {(str(p), 0): 1.0 for p in range(6)}),
                          {"1": "gold_hash", "4": "question"})
    result = compare_runs(a, b)
    assert result["matched"]["problems"] == 4 and result["matched"]["differing_problems"] == ["1", "4"]
    assert "2 problems differ in gold or problem text (1, 4): left out of the pairing" in caplog.text
    assert "left out: 2 problems whose gold or problem text differ between the runs (1, 4)" in format_text(result)
    with pytest.raises(ConfigError, match="2 problems differ in gold or problem text.*--strict"):
        compare_runs(a, b, strict=True)
    assert main([str(a), str(b), "--strict"]) == 2
    assert "not comparable (--strict)" in capsys.readouterr().err


def test_different_envs_are_refused(tmp_path, capsys):
    a = write_run(tmp_path / "a", {("0", 0): 1.0}, env="gsm8k")
    b = write_run(tmp_path / "b", {("0", 0): 1.0}, env="math500")
    with pytest.raises(ConfigError, match="different benchmarks.*'gsm8k'.*'math500'"):
        compare_runs(a, b)
    assert main([str(a), str(b)]) == 2
    assert "skyeval: error: cannot compare runs of different benchmarks" in capsys.readouterr().err
    assert main([str(a), str(tmp_path / "missing")]) == 2
    assert "is not a run folder" in capsys.readouterr().err


def test_module_command_prints_text_and_json(tmp_path):
    run_a, run_b = one_sample_pair(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    text = subprocess.run([sys.executable, "-m", "skyeval.report.compare", str(run_a), str(run_b)],
                          capture_output=True, text=True, env=env, check=True).stdout
    assert "accuracy     0.400   0.900   +0.500" in text
    assert "McNemar (exact binomial); interval MOVER from each side's interval (Newcombe), discordant: 1 A-only vs 6 B-only" in text
    assert "B won 6 problems" in text and "B lost 1 problems" in text and "9 (1→0/1)" in text
    assert "5 (0→1/1, A failed 1)" in text and "failed samples (counted as wrong): A 1, B 0" in text
    data = json.loads(subprocess.run([sys.executable, "-m", "skyeval.report.compare", str(run_a), str(run_b), "--json"],
                                     capture_output=True, text=True, env=env, check=True).stdout)
    assert data["metrics"]["accuracy"]["p_value"] == pytest.approx(0.125)
    assert data["env"] == "gsm8k" and data["a"]["model"] == "old"


def test_views_read_the_summarys_selection_not_the_whole_folder(tmp_path):
    """Issue 25 item 2: 50-ish problems × n=4 left in the folder, then a re-run selecting 2
    problems × n=2 (its summary: A=1.000, B=1.000). compare pairs only those 4 samples."""
    a_all = {(str(p), i): 1.0 if (p < 2 and i < 2) else 0.0 for p in range(6) for i in range(4)}
    b_all = {(str(p), i): 1.0 for p in range(6) for i in range(4)}
    a = write_run(tmp_path / "a", a_all, n=2, selected={"0", "1"})
    b = write_run(tmp_path / "b", b_all, n=2, selected={"0", "1"})
    result = compare_runs(a, b)
    acc = result["metrics"]["accuracy"]
    assert (acc["a"], acc["b"], acc["diff"]) == (1.0, 1.0, 0.0)
    assert result["matched"]["samples"] == 4 and result["matched"]["problems"] == 2
    assert set(result["metrics"]) == {"accuracy", "pass@1", "pass@2"}  # not pass@4: n=2
    assert result["won"] == [] and result["lost"] == []


def test_fractional_scores_use_the_interval_for_p(tmp_path):
    """Issue 25 item 6: n=1, fractional scores are not McNemar's: interval and p come from
    one MOVER interval, and agree."""
    a = write_run(tmp_path / "a", {(str(p), 0): 0.2 for p in range(8)})
    b = write_run(tmp_path / "b", {(str(p), 0): 0.5 for p in range(8)})
    acc = compare_runs(a, b)["metrics"]["accuracy"]
    assert acc["test"].startswith("paired MOVER") and "discordant" not in acc
    assert acc["diff"] == pytest.approx(0.3) and acc["low"] < 0 < acc["high"] and acc["p_value"] > 0.05
    many_a = write_run(tmp_path / "c", {(str(p), 0): 0.2 for p in range(200)})
    many_b = write_run(tmp_path / "d", {(str(p), 0): 0.5 for p in range(200)})
    acc = compare_runs(many_a, many_b)["metrics"]["accuracy"]
    assert 0 < acc["low"] < 0.3 < acc["high"] and acc["p_value"] < 0.05


def test_mcnemar_is_exact_at_any_discordant_count():
    """Before: the chi-square approximation above 25 discordant pairs. 30 vs 10 of 100:
    exact two-sided p = 2 · P(Bin(40, 1/2) <= 10) = 0.0022214 (scipy.stats.binomtest agrees)."""
    from math import comb

    from skyeval.metrics.paired import mcnemar_p

    exact = 2 * sum(comb(40, i) for i in range(11)) / 2**40
    assert mcnemar_p(10, 30) == pytest.approx(exact, rel=1e-9) and exact == pytest.approx(0.00222143, abs=1e-8)
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(5000, 5000) == pytest.approx(1.0)  # large counts: no overflow, no approximation
