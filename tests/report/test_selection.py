"""The one rule for what a folder's views read: exactly the summary's selection (its problems,
sample indices below its n), whatever else an earlier, larger run left in the folder."""

from __future__ import annotations

import json
from pathlib import Path

from skyeval.curation.runs import load_scored
from skyeval.report.build import build_report
from skyeval.report.compare import compare_runs
from skyeval.results import Selection
from skyeval.run import trackers
from tests.conftest import run_cli, run_folder
from tests.report.runfolders import FAILED, write_run


def rerun_folder(tmp_path: Path) -> Path:
    """6 problems x n=4 in the folder (all wrong but problem 0, sample 2 failed), then a
    re-run selecting problems 0 and 1 x n=2 (its summary: accuracy 1.0 over 4 samples)."""
    outcomes = {(str(p), i): 1.0 if p < 2 and i < 2 else 0.0 for p in range(6) for i in range(4)}
    outcomes[("0", 2)] = FAILED
    outcomes[("3", 0)] = FAILED
    return write_run(tmp_path / "run", outcomes, n=2, selected={"0", "1"})


def test_selection_of_a_folder(tmp_path):
    run = rerun_folder(tmp_path)
    assert Selection.of(run) == Selection(n=2, ids=frozenset({"0", "1"}))
    assert Selection.of(tmp_path / "nothing_here") == Selection()  # no summary: everything the folder holds
    generate = json.loads((run / "summary.json").read_text()) | {"stage": "generate"}
    assert Selection.of(run, generate) == Selection(n=2)  # no per-problem rows for a generate run
    assert [r["sample_idx"] for r in Selection(n=2).records(run, "failures")] == [0]  # ("3", 0); not ("0", 2)


def test_viewer_trackers_curation_and_report_read_the_selection(tmp_path):
    """Before: each read every record of the folder (24 samples, 2 failed)."""
    run = rerun_folder(tmp_path)
    rows = list(trackers.sample_rows(run))
    assert sorted((r[0], r[1], r[2]) for r in rows) == [("0", 0, "correct"), ("0", 1, "correct"),
                                                        ("1", 0, "correct"), ("1", 1, "correct")]
    assert sorted((r["id"], r["sample_idx"]) for r in load_scored(run)) == [("0", 0), ("0", 1), ("1", 0), ("1", 1)]
    index = build_report([run], tmp_path / "out")
    data = (index.parent / "data" / "index.js").read_text()
    entry = json.loads(data.split("=", 1)[1].rstrip().rstrip(";"))["runs"][0]
    assert (entry["samples"], entry["correct"], entry["wrong"], entry["failed"]) == (4, 4, 0, 0)
    listed = (index.parent / "data" / "r0" / "list-0.js").read_text()
    assert '"2",0' not in listed and '"0",2' not in listed


def test_a_smaller_rerun_never_rewrites_the_larger_summary(tmp_path, data_dir):
    """Issue 49 item 3: 6 problems x n=2, then the same config with env.limit=2 n=1. Before,
    the smaller run rewrote summary.json (and `report` then showed n=2/2). Now its summary goes
    to selections/limit-2.n-1/, the folder's stays the larger one's, and each view shows the
    selection it is given: compare pairs 2 samples of the smaller, report shows 12/6 of the larger."""
    out = tmp_path / "runs"
    run_cli("evaluate", "+env=gsm8k", "model_config=reference", "env.limit=6", "sampling_params.n=2",
            f"logging.results_dir={out}", cwd=tmp_path)
    folder = run_folder(out, "gsm8k_reference_t0.0")
    larger = json.loads((folder / "summary.json").read_text())
    proc = run_cli("evaluate", "+env=gsm8k", "model_config=reference", "env.limit=2", "sampling_params.n=1",
                   f"logging.results_dir={out}", cwd=tmp_path)
    console = proc.stdout + proc.stderr
    assert "this run selects 2 problems x n=1; the folder also holds 10 earlier samples outside" in console
    smaller = folder / "selections" / "limit-2.n-1"
    assert f"summary of this selection: {smaller / 'summary.json'}" in proc.stdout
    assert json.loads((folder / "summary.json").read_text()) == larger  # untouched
    assert Selection.of(folder) == Selection(n=2, ids=frozenset(str(i) for i in range(6)))
    assert Selection.of(smaller) == Selection(n=1, ids=frozenset({"0", "1"}))
    summary = json.loads((smaller / "summary.json").read_text())
    assert summary["counts"]["problems"] == 2 and summary["selection"] == {
        "limit": 2, "n": 1, "summary": "selections/limit-2.n-1/summary.json"}
    assert "limit: 6" in (folder / "config.yaml").read_text()  # `score run_dir=` re-scores the larger selection

    fresh = tmp_path / "fresh"
    run_cli("evaluate", "+env=gsm8k", "model_config=reference", "env.limit=2", f"logging.results_dir={fresh}",
            cwd=tmp_path)
    result = compare_runs(smaller, run_folder(fresh, "gsm8k_reference_t0.0"))
    assert result["matched"]["samples"] == 2 and result["matched"]["problems"] == 2
    assert set(result["metrics"]) == {"accuracy", "pass@1"}
    assert compare_runs(folder, run_folder(fresh, "gsm8k_reference_t0.0"))["matched"]["samples"] == 2  # 2 of 12 shared
    assert len(list(trackers.sample_rows(smaller))) == 2 and len(list(trackers.sample_rows(folder))) == 12
    md = (build_report([out], tmp_path / "report", viewer=False).parent / "summary.md").read_text()
    assert "n=12/6" in md and "n=2/2" not in md  # the folder's own summary: the larger selection
    md = (build_report([smaller], tmp_path / "report2").parent / "summary.md").read_text()
    assert "n=2/2" in md  # the selection asked for
    # the larger selection again: everything in the folder is counted, and no such line
    proc = run_cli("evaluate", "+env=gsm8k", "model_config=reference", "env.limit=6", "sampling_params.n=2",
                   f"logging.results_dir={out}", cwd=tmp_path)
    assert "outside that selection" not in proc.stdout + proc.stderr
    assert Selection.of(folder) == Selection(n=2, ids=frozenset(str(i) for i in range(6)))
