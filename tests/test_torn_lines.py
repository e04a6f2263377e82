"""Torn lines are counted and healed (issue 33 item 3): a run warns about each record file
with unreadable lines (naming the file, the line numbers and what it does), records the
total in summary.json, does the affected samples again and drops the torn lines; report,
compare and curation warn too. Driven through the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import REPO, load_summary, read_jsonl, run_cli

GSM8K = ("evaluate", "+env=gsm8k", "env.limit=4", "model_config=reference")


def _tear(path: Path, number: int, keep: int | None) -> dict:
    """Cut line `number` (1-based) after `keep` characters (None: replace it by garbage); returns its record."""
    lines = path.read_text().splitlines(keepends=True)
    record = json.loads(lines[number - 1])
    lines[number - 1] = (lines[number - 1][:keep] + "\n") if keep is not None else "\x00\x00garbage\n"
    path.write_text("".join(lines))
    return record


def test_a_torn_generation_and_a_corrupt_score_are_warned_counted_and_redone(tmp_path, data_dir):
    args = (*GSM8K, f"logging.results_dir={tmp_path}", "logging.experiment_name=run")
    run_cli(*args, cwd=tmp_path)
    run = tmp_path / "run"
    torn = _tear(run / "generations" / "part-00000.jsonl", 2, keep=60)  # a crash mid-write: the score survived
    corrupt = _tear(run / "scores" / "part-00000.jsonl", 3, keep=None)
    assert len(read_jsonl(run / "generations")) == 3 and len(read_jsonl(run / "scores")) == 3

    proc = run_cli(*args, cwd=tmp_path)
    assert "generations/part-00000.jsonl: 1 unreadable line (2); its sample is generated again" in proc.stderr
    assert "scores/part-00000.jsonl: 1 unreadable line (3); its sample is scored again" in proc.stderr
    summary = load_summary(run)
    assert summary["records"]["unreadable_lines"] == 2
    assert summary["counts"]["scored"] == 4 and summary["metrics"]["accuracy"] == 1.0
    generations = {(g["id"], g["sample_idx"]): g for g in read_jsonl(run / "generations")}
    scores = {(s["id"], s["sample_idx"]) for s in read_jsonl(run / "scores")}
    assert (torn["id"], torn["sample_idx"]) in generations and generations[(torn["id"], 0)]["generation"]
    assert (corrupt["id"], corrupt["sample_idx"]) in scores and len(scores) == 4 and len(generations) == 4

    proc = run_cli(*args, cwd=tmp_path)  # healed: the torn lines are gone
    assert "unreadable" not in proc.stderr and load_summary(run)["records"]["unreadable_lines"] == 0


def test_report_compare_and_curation_warn_about_unreadable_lines(tmp_path, data_dir):
    run_cli(*GSM8K, f"logging.results_dir={tmp_path}", "logging.experiment_name=run", cwd=tmp_path)
    run = tmp_path / "run"
    _tear(run / "generations" / "part-00000.jsonl", 2, keep=40)
    warning = "generations/part-00000.jsonl: 1 unreadable line (2); skipped"
    assert warning in run_cli("report", str(run), "--out", str(tmp_path / "report"), cwd=tmp_path).stderr
    _tear(run / "scores" / "part-00000.jsonl", 1, keep=None)
    assert "scores/part-00000.jsonl: 1 unreadable line (1); skipped" in run_cli("compare", str(run), str(run),
                                                                                cwd=tmp_path).stderr
    import subprocess

    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "curate.py"), "sft", str(run), "--out",
                           str(tmp_path / "sft.jsonl")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert warning in proc.stderr
