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
    assert "| reference | 1.000 [1.000, 1.000] n=40/40 |  |" in md
    assert "| legacy |  | — |" in md  # missing numbers shown as —
    assert "interval method: bootstrap over problems" in md

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
