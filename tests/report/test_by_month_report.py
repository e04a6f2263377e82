"""`report` and `compare` on dated benchmarks: accuracy_by_month.png (one line per run with
its interval band, the training cutoff marked) and accuracy before/after `--cutoff`."""

import json
import struct

import pytest

from skyeval.metrics import MetricsAccumulator
from skyeval.report.build import build_report
from skyeval.report.compare import compare_runs, format_text
from skyeval.report.plots import _pyplot, by_month_figure
from skyeval.report.runs import RunInfo
from tests.conftest import run_cli, run_folder
from tests.report.runfolders import write_run

MONTHS = ["2024-05", "2024-06", "2024-07", "2024-08"]


def dated_run(path, model, right_by_month):
    """A run of 10 problems per month; `right_by_month[i]` of month i's are right. Its
    summary's metrics come from a real MetricsAccumulator."""
    outcomes, acc = {}, MetricsAccumulator(1)
    for month, right in zip(MONTHS, right_by_month):
        for k in range(10):
            pid = f"{month}/{k}"
            outcomes[(pid, 0)] = 1.0 if k < right else 0.0
            acc.note_date(pid, month)
            acc.add_score({"id": pid, "sample_idx": 0, "score": outcomes[(pid, 0)]})
    return write_run(path, {(f"p/{i}", 0): s for i, ((_, _), s) in enumerate(sorted(outcomes.items()))},
                     env="liveaops", model=model, metrics=acc.summary(),
                     config={"env": {"name": "liveaops", "start_date": "2024-05", "end_date": None}})


@pytest.fixture
def runs(tmp_path):
    return [dated_run(tmp_path / "runs" / "a", "model-a", [8, 8, 3, 2]),
            dated_run(tmp_path / "runs" / "b", "model-b", [5, 5, 5, 5])]


def test_the_figure_has_one_line_and_band_per_run_and_the_cutoff(runs):
    infos = [RunInfo.load(p) for p in runs]
    plt = _pyplot()
    fig = by_month_figure(plt, infos, ["model-a", "model-b"], cutoff="2024-06")
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    assert set(lines) == {"model-a", "model-b", "training cutoff 2024-06"}
    assert list(lines["model-a"].get_ydata()) == [0.8, 0.8, 0.3, 0.2]
    assert list(lines["model-b"].get_xdata()) == [0, 1, 2, 3] and list(lines["model-b"].get_ydata()) == [0.5] * 4
    assert list(lines["training cutoff 2024-06"].get_xdata()) == [1.5, 1.5]  # between June and July
    assert [t.get_text() for t in ax.get_xticklabels()] == MONTHS
    bands = [c for c in ax.collections if type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection")]
    assert len(bands) == 2
    low, high = json.loads((runs[0] / "summary.json").read_text())["metrics"]["by_month"]["2024-05"]["ci95"]
    may = [y for x, y in bands[0].get_paths()[0].vertices if x == 0]  # the band's edges above May
    assert min(may) == pytest.approx(low) and max(may) == pytest.approx(high) and low < 0.8 < high
    plt.close(fig)
    assert by_month_figure(plt, [RunInfo(path=runs[0], env="gsm8k", model="m", metrics={"accuracy": 1.0})], ["m"]) is None


def test_report_with_a_cutoff_draws_the_png_and_tests_before_against_after(runs, tmp_path):
    index = build_report([tmp_path / "runs"], tmp_path / "report", viewer=False, cutoff="2024-06")
    png = index.parent / "accuracy_by_month.png"
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    assert width > 400 and height > 250
    md = (index.parent / "summary.md").read_text()
    assert "## Before and after the training cutoff 2024-06" in md and "![accuracy by month" in md
    # model-a: 16/20 before, 5/20 after: diff -0.55, interval [-0.767, -0.212], p = 0.0009
    row = next(line for line in md.splitlines() if line.startswith("| model-a") and "2024-05 .. 2024-06" in line)
    assert "0.800 (20)" in row and "0.250 (20)" in row and "-0.550" in row and "<0.001" in row
    assert "liveaops (dates 2024-05 ..)" in md
    html = index.read_text()
    assert "Before and after the training cutoff 2024-06" in html and "accuracy_by_month.png" in html


def test_compare_with_a_cutoff_reports_each_runs_split(runs):
    result = compare_runs(runs[0], runs[1], cutoff="2024-06")
    a, b = result["cutoff"]["a"], result["cutoff"]["b"]
    assert (a["before"]["accuracy"], a["after"]["accuracy"]) == (pytest.approx(0.8), pytest.approx(0.25))
    # MOVER of the Clopper-Pearson intervals of 16/20 and 5/20
    assert a["diff"] == pytest.approx(-0.55) and (a["low"], a["high"]) == pytest.approx((-0.766939, -0.212229), abs=1e-6)
    assert a["p_value"] < 0.001
    assert b["diff"] == pytest.approx(0.0) and b["p_value"] == pytest.approx(1.0) and b["low"] < -0.3
    text = format_text(result)
    assert "training cutoff 2024-06" in text and "MOVER of Clopper-Pearson intervals (Newcombe), unpaired" in text


def test_report_cutoff_on_undated_runs_and_bad_cutoffs_are_errors(tmp_path):
    write_run(tmp_path / "runs" / "g", {("g/1", 0): 1.0})
    for argv, message in ((["--cutoff", "2024-06"], "--cutoff needs runs of a dated benchmark"),
                          (["--cutoff", "2024-13"], "--cutoff must be a month, YYYY-MM")):
        proc = run_cli("report", str(tmp_path / "runs"), "--no-viewer", *argv, cwd=tmp_path, check=False)
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_real_liveaops_window_run_reports_by_month(tmp_path, data_dir):
    if not (data_dir / "liveaops" / "LiveAoPSBench_v1.0.jsonl").exists():
        pytest.skip("liveaops data not found")
    run_cli("evaluate", "+env=liveaops", "model_config=reference", "env.start_date=2024-11", cwd=tmp_path)
    folder = run_folder(tmp_path / "outputs", "liveaops_reference_t0.0")
    summary = json.loads((folder / "summary.json").read_text())
    # 266 problems in the window; 5 have golds in which math-verify reads no mathematics ("f(x) = x for all x"):
    # with the rules alone they are named and left out (records.bad_golds), never graded by their text alone
    assert summary["records"]["bad_golds"] == 5
    assert summary["counts"]["samples"] == 261 and summary["metrics"]["accuracy"] == 1.0
    # 261 of 261 right: the interval is Clopper-Pearson's [0.025 ** (1/261), 1], never the point [1, 1]
    assert summary["metrics"]["by_month"] == {"2024-11": {"accuracy": 1.0, "n": 261, "se": 0.0,
                                                          "ci95": [pytest.approx(0.025 ** (1 / 261)), 1.0]}}
    assert summary["date_window"]["start_date"] == "2024-11" and summary["config"]["env"]["start_date"] == "2024-11"
    rows = [json.loads(line) for p in sorted((folder / "scores").glob("per_problem*.jsonl"))
            for line in p.read_text().splitlines()]
    assert len(rows) == 261 and {r["date"] for r in rows} == {"2024-11"}
    run_cli("report", str(tmp_path / "outputs"), "--no-viewer", cwd=tmp_path)
    assert (tmp_path / "outputs" / "report" / "accuracy_by_month.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
