"""Plots say what they show (issue 46): intervals named only where drawn, accuracy axes from
0, every run of the benchmark shown or named with the reason, no empty chart, and row labels
that name only the settings telling rows apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyeval.report.build import build_report
from skyeval.report.plots import _pass_at_k, _pyplot, _versus, figure, write_plots
from skyeval.report.runs import find_runs
from tests.report.runfolders import write_run


def budget_run(path: Path, budget: int, limit: int, right: int, curve: bool = False, intervals: bool = False) -> Path:
    """A fake model's run of 1000 problems, `right` of them right (about 0.057: a flat, low line)."""
    acc = right / 1000
    metrics = {"accuracy": acc, "pass@k": {"1": acc}, "truncated_rate": 0.0}
    if curve:
        metrics["budget_curve"] = {"points": [{"max_tokens": b, "accuracy": acc} for b in (256, 512, budget)]}
    if intervals:
        metrics["intervals"] = {"accuracy": {"value": acc, "se": 0.007, "ci95": [acc - 0.014, acc + 0.014], "n": 1,
                                             "problems": 1000}}
    return write_run(path, {(str(p), 0): 1.0 if p < right else 0.0 for p in range(1000)}, model="fake",
                     max_tokens=budget, metrics=metrics, config={"env": {"name": "gsm8k", "limit": limit}})


def drawn(plt, runs, setting: str = "max_tokens"):
    group = [(run, run.path.name) for run in runs]
    return figure(plt, "accuracy vs token budget", _versus(setting), group)


def legend(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_the_budget_plot_shows_both_runs_from_zero_and_names_no_interval_it_does_not_draw(tmp_path):
    """Two runs of one model at two budgets that also differ in env.limit (no line joins them),
    one with a budget curve, neither with an interval: the chart used to say "(95% interval)",
    zoom to 0.054-0.060 and leave out the run without a curve."""
    budget_run(tmp_path / "short", 1024, 1000, 54, curve=True)
    budget_run(tmp_path / "long", 4096, 999, 60)
    plt = _pyplot()
    fig = drawn(plt, find_runs([tmp_path]))
    ax = fig.axes[0]
    assert "interval" not in ax.get_ylabel()
    assert ax.get_ylim()[0] == 0.0 and ax.get_ylim()[1] >= 0.1
    assert legend(fig) == ["short (estimate from one run)", "long (single run)"]
    plt.close(fig)


def test_intervals_are_named_where_drawn_and_runs_without_the_setting_are_named_with_the_reason(tmp_path):
    budget_run(tmp_path / "a", 1024, 1000, 500, intervals=True)
    budget_run(tmp_path / "b", 4096, 1000, 600, intervals=True)
    write_run(tmp_path / "c", {("0", 0): 1.0}, model="fake", metrics={"pass@k": {"1": 1.0}})  # no accuracy
    plt = _pyplot()
    fig = drawn(plt, find_runs([tmp_path]))
    ax = fig.axes[0]
    assert ax.get_ylabel() == "accuracy (bars: 95% interval)"
    (bars,) = [c for c in ax.collections if type(c).__name__ == "LineCollection"]
    assert [round(float(y1 - y0), 3) for (_, y0), (_, y1) in bars.get_segments()] == [0.028, 0.028]
    assert legend(fig) == ["fake"]  # a and b differ in max_tokens alone: one line
    assert [t.get_text() for t in fig.texts] == ["not shown: c (no accuracy in its summary)"]
    plt.close(fig)


def test_pass_at_k_names_the_runs_of_one_sample_and_bands_only_when_it_has_them(tmp_path):
    write_run(tmp_path / "n4", {(str(p), i): float(i <= p % 4) for p in range(8) for i in range(4)}, model="m", n=4,
              metrics={"accuracy": 0.6, "pass@k": {"1": 0.6, "2": 0.8, "4": 1.0}})
    write_run(tmp_path / "n1", {(str(p), 0): 1.0 for p in range(8)}, model="m2", n=1)
    runs = find_runs([tmp_path])
    plots = write_plots(runs, [r.path.name for r in runs], tmp_path)
    assert plots.made["pass@k on gsm8k"] == "pass_at_k_gsm8k.png" and (tmp_path / "pass_at_k_gsm8k.png").exists()
    plt = _pyplot()
    fig = figure(plt, "pass@k", _pass_at_k, [(r, r.path.name) for r in runs])
    assert fig.axes[0].get_ylabel() == "pass@k" and fig.axes[0].get_ylim()[0] == 0.0  # no band, none named
    assert [t.get_text() for t in fig.texts] == ["not shown: n1 (n=1: pass@1 only)"]
    plt.close(fig)


def test_a_chart_with_nothing_to_show_is_not_written_and_summary_says_why(tmp_path):
    """No truncated or failed sample, n=1, one run: rates.png used to be an empty chart."""
    write_run(tmp_path / "runs" / "one", {(str(p), 0): 1.0 for p in range(5)}, model="m")
    out = build_report([tmp_path / "runs"], tmp_path / "report", viewer=False).parent
    assert not list(out.glob("*.png"))
    md = (out / "summary.md").read_text()
    assert "- truncated and failed samples per run: no run has truncated or failed samples" in md
    assert "- pass@k on gsm8k: no run has pass@k at two or more k" in md
    assert "no run has truncated or failed samples" in (out / "index.html").read_text()


def test_row_labels_name_only_the_settings_that_differ_between_runs_of_one_benchmark(tmp_path):
    """The issue's model x benchmark row: `fake · env.end_date=— · env.limit=— · env.start_date=—
    · grading.mode=off` (settings varying among another benchmark's runs, named on every row)."""
    root = tmp_path / "runs"
    for name, env, config in (
            ("aops_early", "liveaops", {"env": {"name": "liveaops", "start_date": "2024-01", "end_date": "2024-05"}}),
            ("aops_late", "liveaops", {"env": {"name": "liveaops", "start_date": "2024-06", "end_date": None}}),
            ("math_judged", "math500", {"env": {"name": "math500", "limit": None}, "grading": {"mode": "fallback"}}),
            ("math_small", "math500", {"env": {"name": "math500", "limit": 5}, "grading": {"mode": "off"}})):
        write_run(root / name, {(str(p), 0): 1.0 for p in range(5)}, env=env, model="fake", config=config)
    md = (build_report([root], tmp_path / "report", viewer=False).parent / "summary.md").read_text()
    matrix = md.split("## Runs")[0]
    rows = [line.split(" | ")[0].lstrip("| ") for line in matrix.splitlines() if line.startswith("| fake")]
    assert sorted(rows) == ["fake · env.end_date=2024-05 · env.start_date=2024-01",
                            "fake · env.end_date=— · env.start_date=2024-06",
                            "fake · env.limit=5 · grading.mode=off",
                            "fake · env.limit=— · grading.mode=fallback"]


def test_the_runs_table_names_each_runs_machine(tmp_path):
    """summary.json `machine` (skyeval.run.provenance) in the Runs table and runs.csv; — for an older run."""
    import csv
    import json

    from skyeval.run.provenance import parse_nvidia_smi

    gpu = write_run(tmp_path / "runs" / "gpu", {("0", 0): 1.0}, model="m")
    summary = json.loads((gpu / "summary.json").read_text())
    summary["machine"] = {"cpu": {"model": "AMD EPYC 7B13", "count": 128, "usable": 64}, "memory_gib": 503.7,
                          **parse_nvidia_smi((Path(__file__).parents[1] / "fixtures" / "nvidia_smi_q_x.xml").read_text()),
                          "torch": "2.6.0", "vllm": "0.8.4"}
    (gpu / "summary.json").write_text(json.dumps(summary))
    write_run(tmp_path / "runs" / "old", {("0", 0): 1.0}, model="m2")
    out = build_report([tmp_path / "runs"], tmp_path / "report", viewer=False).parent
    text = ("2× NVIDIA A100-SXM4-80GB (80 GB), driver 535.104.05, CUDA 12.2; 64 CPUs AMD EPYC 7B13, 503.7 GiB; "
            "vLLM 0.8.4, torch 2.6.0")
    runs = (out / "summary.md").read_text().split("## Runs")[1]
    assert runs.splitlines()[2].endswith("| machine |") and f"| {text} |" in runs and "| — |" in runs
    assert {row["label"]: row["machine"] for row in csv.DictReader((out / "runs.csv").open())} == {"m · gsm8k": text,
                                                                                                  "m2 · gsm8k": ""}
    assert text in (out / "index.html").read_text()
