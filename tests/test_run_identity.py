"""A run folder is one config and one data set (issue 49 item 3): the data's content enters
the run's one fingerprint, computed once per run (issue 46), and sweep points never share a
folder (issue 49 item 7). Driven through the CLI on small copies of GSM8K."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, load_summary, read_jsonl, run_cli

COUNTING_CLI = """
import sys, threading
from skyeval.cli import main

calls = []

def count(frame, event, arg):
    code = frame.f_code
    if event == "call" and code.co_name == "fingerprint" and code.co_filename.endswith("fingerprints.py"):
        calls.append(1)

sys.setprofile(count)
threading.setprofile(count)
try:
    main(sys.argv[1:])
finally:
    sys.setprofile(None)
    print(f"FINGERPRINTS {len(calls)}", file=sys.stderr)
"""


def _copy(data_dir: Path, root: Path, rows: int = 4, gold: str | None = None) -> Path:
    """The first `rows` GSM8K problems under root/gsm8k/, every final answer `gold` when given."""
    (root / "gsm8k").mkdir(parents=True)
    lines = []
    for line in (data_dir / "gsm8k" / "test.jsonl").read_text().splitlines()[:rows]:
        row = json.loads(line)
        if gold is not None:
            row["answer"] = row["answer"].rpartition("####")[0] + f"#### {gold}"
        lines.append(json.dumps(row))
    (root / "gsm8k" / "test.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _evaluate(tmp_path: Path, data: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("evaluate", "+env=gsm8k", "env.limit=4", f"data_dir={data}", f"logging.results_dir={tmp_path / 'out'}",
                   *extra, cwd=tmp_path)


def test_two_copies_of_the_data_make_two_folders(tmp_path, data_dir):
    """Before: data_dir=A then data_dir=B (other golds) resumed one folder, re-scoring back and forth."""
    a, b = _copy(data_dir, tmp_path / "a"), _copy(data_dir, tmp_path / "b", gold="7")
    _evaluate(tmp_path, a)
    _evaluate(tmp_path, b)
    folders = sorted((tmp_path / "out").iterdir())
    assert len(folders) == 2 and all(re.fullmatch(r"gsm8k_reference_t0\.0_[0-9a-f]{8}", f.name) for f in folders)
    by_data = {json.loads((f / "run.json").read_text())["data"]["content"]: f for f in folders}
    assert len(by_data) == 2
    summaries = [load_summary(f) for f in folders]
    assert all(s["counts"]["scored"] == 4 and s["counts"]["resumed"] == 0 for s in summaries)
    golds = [{r["expected"] for r in read_jsonl(f / "scores")} for f in folders]
    assert {"7"} in golds and len(golds[0] | golds[1]) == 5  # each folder scored against its own copy

    # the same copy again resumes its own folder, nothing redone; a copy elsewhere of the same bytes too
    proc = _evaluate(tmp_path, a)
    again = [f for f in folders if load_summary(f)["counts"]["resumed"] == 4]
    assert len(again) == 1 and "resuming: 0 requests to send" in proc.stderr
    _copy(data_dir, tmp_path / "a2")
    _evaluate(tmp_path, tmp_path / "a2")
    assert sorted((tmp_path / "out").iterdir()) == folders


def test_the_fingerprint_is_computed_once_per_run(tmp_path, data_dir):
    """Issue 46: a walk of one run's config showed `fingerprint` computed five times."""
    proc = subprocess.run([sys.executable, "-c", COUNTING_CLI, "evaluate", "+env=gsm8k", "env.limit=2",
                           f"data_dir={_copy(data_dir, tmp_path / 'a')}", f"logging.results_dir={tmp_path / 'out'}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FINGERPRINTS 1" in proc.stderr, proc.stderr[-2000:]


def test_sweep_points_with_a_name_of_their_own_get_folders_of_their_own(tmp_path, data_dir):
    """Before: `logging.experiment_name=fixed` in a sweep over system prompts put both points in
    one folder (the second was refused as another config)."""
    run_cli("evaluate", "-m", "+env=gsm8k", "env.limit=2", f"data_dir={_copy(data_dir, tmp_path / 'a')}",
            "template.system_prompt_name=qwq,skythought", "logging.experiment_name=fixed",
            f"logging.results_dir={tmp_path / 'out'}", cwd=tmp_path)
    folders = sorted(p.name for p in (tmp_path / "out").iterdir() if (p / "summary.json").exists())
    assert len(folders) == 2 and all(re.fullmatch(r"fixed_[0-9a-f]{8}", name) for name in folders)
    # one run (no sweep) keeps the name as written
    run_cli("evaluate", "+env=gsm8k", "env.limit=2", f"data_dir={tmp_path / 'a'}", "logging.experiment_name=fixed",
            f"logging.results_dir={tmp_path / 'out'}", cwd=tmp_path)
    assert (tmp_path / "out" / "fixed" / "summary.json").exists()


def test_the_launchers_folder_is_the_one_the_run_writes(tmp_path, data_dir):
    """The SLURM launcher names each job's folder before submitting (`app.run_folder`): the
    same fingerprint, data identity included, as the run's own."""
    from skyeval.config.compose import compose
    from skyeval.run.app import execute, run_folder

    data = _copy(data_dir, tmp_path / "a")
    for name, sweep in (("gsm8k_{fingerprint}", False), ("fixed", True)):
        config = compose("+env=gsm8k", "env.limit=2", f"data_dir={data}")
        run_dir = tmp_path / "out" / name
        named = run_folder(config, run_dir, sweep=sweep).path
        assert re.fullmatch(r"(gsm8k|fixed)_[0-9a-f]{8}", named.name) and not named.exists()
        assert execute(config, run_dir, sweep=sweep)["run_dir"] == str(named)
