"""compare: paired differences checked against hand-computed examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval.errors import ConfigError
from skyeval.report.compare import compare_runs, main
from tests.report.runfolders import FAILED, write_run

REPO = Path(__file__).resolve().parents[2]


def one_sample_pair(tmp_path: Path) -> tuple[Path, Path]:
    """10 problems, n = 1. A right on 0,1,2 and 9; B right on 0..8.
    Discordant: A-only {9}, B-only {3..8}: McNemar exact p = 2 * (C(7,0) + C(7,1)) / 2^7 = 0.125."""
    a = {(str(i), 0): 1.0 if i in (0, 1, 2, 9) else 0.0 for i in range(10)}
    a[("5", 0)] = FAILED  # a failed sample counts as wrong
    b = {(str(i), 0): 1.0 if i <= 8 else 0.0 for i in range(10)}
    return write_run(tmp_path / "a", a, model="old"), write_run(tmp_path / "b", b, model="new")


def test_one_sample_per_problem_uses_mcnemar(tmp_path):
    run_a, run_b = one_sample_pair(tmp_path)
    result = compare_runs(run_a, run_b, rounds=500, seed=3)
    acc = result["metrics"]["accuracy"]
    assert acc["a"] == pytest.approx(0.4) and acc["b"] == pytest.approx(0.9)
    assert acc["diff"] == pytest.approx(0.5)
    assert acc["discordant"] == {"a_only": 1, "b_only": 6}
    assert acc["p_value"] == pytest.approx(0.125)
    assert acc["test"] == "McNemar (exact binomial)"
    # one statistic: the Clopper-Pearson interval of 6/7 discordant for B, [0.421277, 0.996390] (scipy.stats.beta.ppf),
    # as B − A = 7/10 · (2π − 1); it holds 0, as p = 0.125 > 0.05 says
    assert (acc["low"], acc["high"]) == pytest.approx((0.7 * (2 * 0.4212768 - 1), 0.7 * (2 * 0.9963897 - 1)), abs=1e-6)
    assert result["metrics"]["pass@1"]["p_value"] == pytest.approx(0.125)
    assert result["metrics"]["pass@1"]["low"] == acc["low"]
    assert [p["id"] for p in result["won"]] == ["3", "4", "5", "6", "7", "8"]
    assert [p["id"] for p in result["lost"]] == ["9"]
    assert result["matched"] == {"samples": 10, "problems": 10, "a_only": 0, "b_only": 0, "failed": {"a": 1, "b": 0}}
    assert next(p for p in result["won"] if p["id"] == "5")["a_failed"] == 1
    assert compare_runs(run_a, run_b, rounds=500, seed=3) == result  # seeded: the same numbers again


def test_several_samples_bootstrap_and_pass_at_k(tmp_path):
    """3 problems, n = 4. A: 2/4, 0/4, 4/4; B: 4/4, 1/4, 4/4.
    accuracy 6/12 -> 9/12; pass@2 (1 - C(n-c,2)/C(n,2)): A (5/6 + 0 + 1)/3 = 11/18, B (1 + 1/2 + 1)/3 = 5/6;
    pass@4: A 2/3, B 1."""
    right_a = {"0": 2, "1": 0, "2": 4}
    right_b = {"0": 4, "1": 1, "2": 4}
    runs = [write_run(tmp_path / name, {(p, i): 1.0 if i < right[p] else 0.0 for p in right for i in range(4)}, n=4)
            for name, right in (("a", right_a), ("b", right_b))]
    result = compare_runs(*runs, rounds=1000, seed=0)
    m = result["metrics"]
    assert set(m) == {"accuracy", "pass@1", "pass@2", "pass@4"}
    assert (m["accuracy"]["a"], m["accuracy"]["b"], m["accuracy"]["diff"]) == pytest.approx((0.5, 0.75, 0.25))
    assert (m["pass@2"]["a"], m["pass@2"]["b"], m["pass@2"]["diff"]) == pytest.approx((11 / 18, 5 / 6, 2 / 9))
    assert (m["pass@4"]["a"], m["pass@4"]["b"], m["pass@4"]["diff"]) == pytest.approx((2 / 3, 1.0, 1 / 3))
    assert m["accuracy"]["test"] == "paired bootstrap over problems" and "discordant" not in m["accuracy"]
    # resampling 3 problems: the difference ranges over per-problem gains 0.5, 0.25, 0
    assert 0.0 <= m["accuracy"]["low"] <= 0.25 <= m["accuracy"]["high"] <= 0.5
    assert [(p["id"], p["a_correct"], p["b_correct"]) for p in result["won"]] == [("0", 2, 4), ("1", 0, 1)]
    assert result["lost"] == []


def test_identical_gain_on_every_problem_gives_a_point_interval(tmp_path):
    a = write_run(tmp_path / "a", {(str(p), i): 0.0 for p in range(5) for i in range(2)}, n=2)
    b = write_run(tmp_path / "b", {(str(p), i): 1.0 for p in range(5) for i in range(2)}, n=2)
    acc = compare_runs(a, b, rounds=200)["metrics"]["accuracy"]
    assert (acc["low"], acc["diff"], acc["high"]) == pytest.approx((1.0, 1.0, 1.0))
    assert acc["p_value"] == pytest.approx(2 / 201)  # no resample on the far side of 0


def test_only_shared_samples_are_paired(tmp_path):
    a = write_run(tmp_path / "a", {(str(p), 0): 1.0 for p in range(4)})
    b = write_run(tmp_path / "b", {(str(p), 0): 0.0 for p in range(2, 6)})
    result = compare_runs(a, b, rounds=100)
    assert result["matched"] == {"samples": 2, "problems": 2, "a_only": 2, "b_only": 2, "failed": {"a": 0, "b": 0}}
    assert result["metrics"]["accuracy"]["diff"] == pytest.approx(-1.0)
    assert [p["id"] for p in result["lost"]] == ["2", "3"]


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
    assert "McNemar (exact binomial), discordant: 1 A-only vs 6 B-only" in text
    assert "B won 6 problems" in text and "B lost 1 problems" in text and "9 (1→0/1)" in text
    assert "5 (0→1/1, A failed 1)" in text and "failed samples (counted as wrong): A 1, B 0" in text
    assert "bootstrap:" not in text  # no bootstrap was used
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
    result = compare_runs(a, b, rounds=200)
    acc = result["metrics"]["accuracy"]
    assert (acc["a"], acc["b"], acc["diff"]) == (1.0, 1.0, 0.0)
    assert result["matched"]["samples"] == 4 and result["matched"]["problems"] == 2
    assert set(result["metrics"]) == {"accuracy", "pass@1", "pass@2"}  # not pass@4: n=2
    assert result["won"] == [] and result["lost"] == []


def test_fractional_scores_use_one_bootstrap_for_interval_and_p(tmp_path):
    """Issue 25 item 6: n=1, fractional scores. Before: McNemar on score>=1 gave p 1.0 beside a
    bootstrap interval [0.30, 0.30]. Now both come from the bootstrap, and agree."""
    a = write_run(tmp_path / "a", {(str(p), 0): 0.2 for p in range(8)})
    b = write_run(tmp_path / "b", {(str(p), 0): 0.5 for p in range(8)})
    acc = compare_runs(a, b, rounds=300)["metrics"]["accuracy"]
    assert acc["test"] == "paired bootstrap over problems" and "discordant" not in acc
    assert (acc["low"], acc["diff"], acc["high"]) == pytest.approx((0.3, 0.3, 0.3))
    assert acc["p_value"] == pytest.approx(2 / 301)  # B ahead on every resample: p small, interval off 0
    # a real mixture: interval and p agree on whether 0 is plausible
    mixed_b = write_run(tmp_path / "c", {(str(p), 0): (0.5 if p % 2 else 0.0) for p in range(8)})
    acc = compare_runs(a, mixed_b, rounds=2000)["metrics"]["accuracy"]
    assert acc["low"] < 0 < acc["high"] and acc["p_value"] > 0.05


def test_mcnemar_is_exact_at_any_discordant_count():
    """Before: the chi-square approximation above 25 discordant pairs. 30 vs 10 of 100:
    exact two-sided p = 2 · P(Bin(40, 1/2) <= 10) = 0.0022214 (scipy.stats.binomtest agrees)."""
    from math import comb

    from skyeval.metrics.paired import mcnemar

    exact = 2 * sum(comb(40, i) for i in range(11)) / 2**40
    result = mcnemar(10, 30, 100)
    assert result["p_value"] == pytest.approx(exact, rel=1e-9) and exact == pytest.approx(0.00222143, abs=1e-8)
    assert result["diff"] == pytest.approx(0.2) and 0 < result["low"] < 0.2 < result["high"]
    assert mcnemar(0, 0, 50) == {"diff": 0.0, "se": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0}
    big = mcnemar(5000, 5000, 20000)  # large counts: no overflow, no approximation
    assert big["p_value"] == pytest.approx(1.0) and big["low"] < 0 < big["high"]


def test_problem_ids_in_natural_order(tmp_path):
    """"2" before "10" among problems of equal gain, and in the pairing order."""
    ids = ["10", "2", "1", "test/10", "test/9"]
    a = write_run(tmp_path / "a", {(p, 0): 0.0 for p in ids}, env="x")
    b = write_run(tmp_path / "b", {(p, 0): 1.0 for p in ids}, env="x")
    assert [p["id"] for p in compare_runs(a, b)["won"]] == ["1", "2", "10", "test/9", "test/10"]
