"""report DIR...: scans run folders (a real `evaluate` run and written ones) into
index.html, summary.md, runs.csv and PNG plots."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyeval.errors import DataNotFoundError
from skyeval.report.build import build_report, main
from skyeval.report.plots import budget_points
from tests.conftest import run_cli
from tests.report.runfolders import FAILED, write_run

REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def interval(acc: float, problems: int, samples: int) -> dict:
    return {"value": acc, "se": 0.02, "ci95": [acc - 0.04, acc + 0.04], "n": samples // problems, "problems": problems}


def sweep(root: Path) -> None:
    """A temperature sweep of one model (n = 4, pass@k curves, intervals, a budget estimate)."""
    for t, right in ((0.0, 3), (0.7, 2), (1.0, 1)):
        outcomes = {(str(p), i): 1.0 if i < right else 0.0 for p in range(10) for i in range(4)}
        outcomes[("9", 3)] = FAILED
        acc = right / 4 - (1 if right > 3 else 0) / 40
        metrics = {"accuracy": acc, "pass@k": {"1": acc, "2": acc + 0.1, "4": acc + 0.2}, "truncated_rate": 0.05,
                   "intervals": {"accuracy": interval(acc, 10, 40), "pass@1": interval(acc, 10, 40)},
                   "interval_method": "bootstrap over problems", "budget_curve": {"estimate": "from one run", "points": [
                       {"max_tokens": 256, "accuracy": acc / 2}, {"max_tokens": 512, "accuracy": acc * 0.8},
                       {"max_tokens": 1024, "accuracy": acc}]}}
        write_run(root / f"gsm8k_t{t}", outcomes, model="qwen", temperature=t, n=4, metrics=metrics)


def test_report_of_a_sweep_and_a_real_run(tmp_path, data_dir):
    sweep(tmp_path / "sweep")
    run_cli("evaluate", "+env=gsm8k", "model_config=reference", "env.limit=40",
            f"logging.results_dir={tmp_path / 'real'}", cwd=tmp_path)
    old = tmp_path / "old" / "legacy_run"  # an older folder: no metrics beyond accuracy, no config
    old.mkdir(parents=True)
    (old / "summary.json").write_text(json.dumps({"env": "math500", "model": "legacy", "counts": {"samples": 5}}))

    assert main([str(tmp_path / "sweep"), str(tmp_path / "real"), str(tmp_path / "old"), "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert len(rows) == 5
    by_label = {r["label"]: r for r in rows}
    assert set(by_label) == {"qwen · gsm8k · T=0", "qwen · gsm8k · T=0.7", "qwen · gsm8k · T=1",
                             "reference · gsm8k", "legacy · math500"}
    assert float(by_label["reference · gsm8k"]["accuracy"]) == 1.0
    assert by_label["reference · gsm8k"]["samples"] == "40"
    assert by_label["qwen · gsm8k · T=0.7"]["accuracy_low"] == str(0.5 - 0.04)
    assert by_label["qwen · gsm8k · T=0.7"]["failed_rate"] == str(1 / 40)
    assert by_label["legacy · math500"]["accuracy"] == ""

    md = (out / "summary.md").read_text()
    assert "| model | gsm8k | math500 |" in md
    assert "| qwen · T=0.7 | 0.500 [0.460, 0.540] n=40/10 |  |" in md
    assert "| reference | 1.000 [0.912, 1.000] n=40/40 |  |" in md  # 40 of 40: never [1, 1]
    assert "| legacy |  | — |" in md  # missing numbers shown as —
    assert "interval method: Clopper-Pearson over problems, design-effect sample size (Korn-Graubard); " \
           "bootstrap over problems" in md  # each method the runs' summaries name

    expected_plots = ["pass_at_k_gsm8k.png", "accuracy_vs_temperature_gsm8k.png", "accuracy_vs_budget_gsm8k.png", "rates.png"]
    for name in expected_plots:
        assert (out / name).read_bytes()[:8] == PNG, name
        assert f"]({name})" in md
    assert not (out / "pass_at_k_math500.png").exists()  # nothing to draw for the legacy run
    page = (out / "index.html").read_text()
    assert all(f'src="{name}"' in page for name in expected_plots)
    assert 'href="viewer.html"' in page and (out / "viewer.html").exists()
    assert "0.750 [0.710, 0.790] n=40/10" in page


def test_module_command_and_errors(tmp_path):
    sweep(tmp_path / "sweep")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "skyeval.report.build", str(tmp_path / "sweep"), "--no-viewer"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sweep" / "report" / "index.html").exists()
    assert not (tmp_path / "sweep" / "report" / "viewer.html").exists()
    # running it again does not pick up its own report folder as a run
    assert main([str(tmp_path / "sweep"), "--no-viewer"]) == 0
    assert len(list(csv.DictReader((tmp_path / "sweep" / "report" / "runs.csv").open()))) == 3
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="no run folder"):
        build_report([tmp_path / "empty"])
    assert main([str(tmp_path / "nowhere")]) == 2


def test_budget_shapes():
    assert budget_points({"512": 0.5, "256": 0.25}) == [(256.0, 0.25), (512.0, 0.5)]
    assert budget_points({"rows": [{"max_tokens": 64, "accuracy": 0.1}, {"budget": 128, "accuracy": 0.2}]}) == [(64.0, 0.1), (128.0, 0.2)]
    assert budget_points({"1024": {"accuracy": 0.3, "n": 5}, "note": "estimate"}) == [(1024.0, 0.3)]
    assert budget_points(None) == []


def _runs_of_one_model(root: Path) -> None:
    """A 50-problem run, a 3-problem smoke test of the same model and settings, a twin of the
    smoke test in another folder, and an interrupted run of 300 problems that finished 4."""
    def run(name, problems, limit, right, **kw):
        outcomes = {(str(p), 0): 1.0 if p < right else 0.0 for p in range(problems)}
        acc = right / problems
        write_run(root / name, outcomes, model="qwen", config={"env": {"name": "gsm8k", "limit": limit},
                                                               **kw.pop("config", {})},
                  metrics={"accuracy": acc, "intervals": {"accuracy": interval(acc, problems, problems)}}, **kw)

    run("full", 50, 50, 40)
    run("smoke", 3, 3, 2)
    run("smoke_again", 3, 3, 3)
    run("stopped", 4, 300, 4, status="interrupted")
    (root / "full" / "audit").mkdir()  # what `audit run_dir=...` leaves: not a run
    (root / "full" / "audit" / "summary.json").write_text(json.dumps({"run_dir": "x", "env": "gsm8k", "generations": 3}))


def test_every_run_is_in_the_matrix_and_audit_folders_are_not_runs(tmp_path):
    """Issue 25 items 1, 3, 5: before, the matrix kept the last run of a cell (the 50-problem run
    was only in the Runs table), the audit/ folder was a run, an interrupted run had no marker."""
    _runs_of_one_model(tmp_path / "runs")
    out = tmp_path / "out"
    assert main([str(tmp_path / "runs"), "--out", str(out), "--no-viewer"]) == 0
    md = (out / "summary.md").read_text()
    assert md.startswith("# skyeval report: 4 runs")
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert sorted(Path(r["path"]).name for r in rows) == ["full", "smoke", "smoke_again", "stopped"]
    matrix = md.split("## Runs")[0]
    assert "| qwen · env.limit=50 | 0.800 [0.760, 0.840] n=50/50 |" in matrix
    # the two runs equal in every setting share a cell, both shown
    assert ("| qwen · env.limit=3 | 0.667 [0.627, 0.707] n=3/3 (smoke); "
            "1.000 [0.960, 1.040] n=3/3 (smoke_again) |") in matrix
    assert "| qwen · env.limit=300 | 1.000 [0.960, 1.040] n=4/4 ⚠ interrupted: 4 of 300 problems |" in matrix
    assert "⚠ interrupted: 4 of 300 problems" in md.split("## Runs")[1]  # and in its row of the Runs table


def test_plots_join_only_runs_that_differ_in_the_plotted_setting(tmp_path):
    """Issue 25 item 4: a T=0, 100-problem, 4096-token run and a T=0.6, 50-problem, 32768-token
    run were one line of accuracy vs temperature. Now only T-only differences form a line."""
    from skyeval.report.plots import _pyplot, _versus, figure, lines_versus
    from skyeval.report.runs import find_runs

    for name, t, limit, budget in (("a", 0.0, 100, 4096), ("b", 0.6, 50, 32768), ("c", 0.6, 100, 4096),
                                   ("d", 1.0, 100, 4096), ("e", 1.0, 50, 32768)):
        write_run(tmp_path / name, {(str(p), 0): 1.0 if p < 2 else 0.0 for p in range(4)}, model="m", temperature=t,
                  max_tokens=budget, config={"env": {"name": "gsm8k", "limit": limit}})
    runs = find_runs([tmp_path])
    group = [(r, r.path.name) for r in runs]
    lines = lines_versus(group, "temperature")
    assert {label: [r.path.name for r in members] for label, members in lines.items()} == {
        "m · max_tokens=4096 · env.limit=100": ["a", "c", "d"],
        "m · max_tokens=32768 · env.limit=50": ["b", "e"]}
    assert lines_versus(group, "max_tokens") == {}  # no two runs differ in the budget alone

    plt = _pyplot()
    fig = figure(plt, "accuracy vs temperature", _versus("temperature"), group)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= axes.x1  # the legend sits right of the axes: it covers no data
    plt.close(fig)
