"""A sample knows what it was made from (issue 33 item 1): a resume reuses a generation only
for the same rendered prompt and a score only for the same gold, and an env without
problems is refused before any folder exists. Driven through the CLI on a copy of MATH-500."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import load_summary, read_jsonl, run_cli


def _copy(data_dir: Path, root: Path, rows: int = 5) -> Path:
    (root / "math500").mkdir(parents=True)
    lines = (data_dir / "math500" / "test.jsonl").read_text().splitlines()[:rows]
    (root / "math500" / "test.jsonl").write_text("\n".join(lines) + "\n")
    return root / "math500" / "test.jsonl"


def _edit(path: Path, **changes) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        for key, change in changes.items():
            row[key] = change(row[key])
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _evaluate(tmp_path: Path, copy: Path, check: bool = True):
    return run_cli("evaluate", "+env=math500", "env.limit=5", f"data_dir={copy}", "model_config=reference",
                   f"logging.results_dir={tmp_path / 'out'}", "logging.experiment_name=run", cwd=tmp_path, check=check)


def test_a_changed_gold_is_scored_again_not_reused(tmp_path, data_dir):
    path = _copy(data_dir, tmp_path / "copy")
    _evaluate(tmp_path, tmp_path / "copy")
    run = tmp_path / "out" / "run"
    assert load_summary(run)["metrics"]["accuracy"] == 1.0
    first = read_jsonl(run / "generations")
    assert all(len(g["prompt_hash"]) == 16 for g in first)
    assert all(len(s["gold_hash"]) == 16 for s in read_jsonl(run / "scores"))

    _edit(path, answer=lambda _: "999")  # same problems, same ids, every gold now 999
    proc = _evaluate(tmp_path, tmp_path / "copy")
    assert "5 samples: the gold answer changed since the earlier run; scored again" in proc.stderr
    summary = load_summary(run)
    assert summary["metrics"]["accuracy"] == 0.0 and summary["counts"]["scored"] == 5
    scores = read_jsonl(run / "scores")  # the stale scores are gone, not kept beside the new ones
    assert len(scores) == 5 and all(s["score"] == 0.0 for s in scores)
    assert read_jsonl(run / "generations") == first  # the prompts did not change: generations reused


def test_a_changed_problem_is_generated_again(tmp_path, data_dir):
    path = _copy(data_dir, tmp_path / "copy")
    _evaluate(tmp_path, tmp_path / "copy")
    _edit(path, problem=lambda text: "Changed: " + text, answer=lambda _: "999")
    proc = _evaluate(tmp_path, tmp_path / "copy")
    assert "5 samples: the problem changed since the earlier run; generated again" in proc.stderr
    run = tmp_path / "out" / "run"
    generations = read_jsonl(run / "generations")
    assert len(generations) == 5 and all("Changed: " in g["prompt"][-1]["content"] for g in generations)
    summary = load_summary(run)
    assert summary["counts"]["scored"] == 5 and summary["metrics"]["accuracy"] == 0.0  # 999 is no reference's answer

    proc = _evaluate(tmp_path, tmp_path / "copy")  # nothing changed now: all reused
    assert "changed since" not in proc.stderr and "resuming: 0 requests to send" in proc.stderr
    assert len(read_jsonl(run / "scores")) == 5


def test_an_env_without_problems_is_refused_before_any_folder(tmp_path, data_dir):
    path = _copy(data_dir, tmp_path / "copy")
    path.write_text("")
    proc = _evaluate(tmp_path, tmp_path / "copy", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "skyeval: error: env 'math500' has no problems (its data holds no problem its knobs keep): nothing to run"]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
