"""One run split into shards (shard.index / shard.count) through the real CLI: shards share
a run folder, write only their own part files, and merge into the summary an unsharded run
of the same config writes; `merge` names the shards it is waiting for."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from skyeval.results import Shard, iter_records

REPO = Path(__file__).resolve().parents[1]
SHARDS = 4
ROWS = 48


@pytest.fixture
def wrong_data(tmp_path: Path) -> Path:
    """MATH-500's first rows with every third answer changed (the reference solution then
    scores 0) and one malformed row (a load failure), so the metrics are not all ones."""
    source = Path(os.environ.get("SKYEVAL_DATA_DIR", REPO.parent / "shared" / "data")) / "math500" / "test.jsonl"
    if not source.exists():
        pytest.skip(f"benchmark data not found at {source} (set SKYEVAL_DATA_DIR, see docs/testing.md)")
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()[:ROWS]]
    for i, row in enumerate(rows):
        if i % 3 == 0:
            row["answer"] = "12345"
    rows[7] = {"unexpected": "a row without a problem"}
    out = tmp_path / "data" / "math500"
    out.mkdir(parents=True)
    (out / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out.parent


def cli(*args: str, check: bool = True, **popen) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "skyeval.cli", *args], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=600)
    if check and done.returncode:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def run_args(results: Path, data: Path, *extra: str) -> list[str]:
    return ["evaluate", "+env=math500", "sampling_params.n=2", f"data_dir={data}", f"logging.results_dir={results}",
            "logging.experiment_name=run", *extra]


def shard(results: Path, data: Path, index: int, *extra: str, **kw) -> subprocess.CompletedProcess:
    return cli(*run_args(results, data, f"shard.count={SHARDS}", f"shard.index={index}", *extra), **kw)


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def sample_keys(folder: Path) -> Counter:
    return Counter((r["id"], r["sample_idx"]) for kind in ("scores", "failures") for r in iter_records(folder, kind))


def test_every_problem_belongs_to_exactly_one_shard_whatever_the_order():
    ids = [f"problem-{i}" for i in range(2000)]
    owners = [[s for s in range(SHARDS) if Shard(s, SHARDS).owns(pid)] for pid in ids]
    assert all(len(o) == 1 for o in owners)
    sizes = Counter(o[0] for o in owners)
    assert sorted(sizes) == list(range(SHARDS)) and min(sizes.values()) > 2000 / SHARDS / 2
    assert [Shard(1, SHARDS).owns(p) for p in reversed(ids)] == [Shard(1, SHARDS).owns(p) for p in ids][::-1]
    assert Shard().owns("anything") and not Shard().active
    with pytest.raises(ValueError, match="shard.index"):
        Shard(4, 4)


def test_four_shards_merge_into_the_summary_of_the_unsharded_run(tmp_path, wrong_data):
    whole, split = tmp_path / "whole" / "run", tmp_path / "split" / "run"
    cli(*run_args(whole.parent, wrong_data))
    for index in range(SHARDS):
        done = shard(split.parent, wrong_data, index)
        assert f"shard {index} of {SHARDS}" in done.stdout
        assert "resuming" not in done.stderr  # the folder exists, but nothing of this shard was there
        assert (split / "summary.json").exists() == (index == SHARDS - 1)  # the last shard merges

    one, merged = summary(whole), summary(split)
    assert merged["metrics"] == one["metrics"]
    assert one["metrics"]["accuracy"] not in (0.0, 1.0)
    assert {k: v for k, v in merged["counts"].items() if k != "resumed"} == \
        {k: v for k, v in one["counts"].items() if k != "resumed"}
    assert merged["counts"]["samples"] == ROWS * 2 and merged["counts"]["failed"] == 2
    assert merged["failures_by_stage"] == one["failures_by_stage"] == {"load": 2}
    assert merged["status"] == one["status"] == "complete_with_failures"
    assert set(one) - {"shards"} <= set(merged) and merged["shards"]["count"] == SHARDS
    assert sum(j["counts"]["samples"] for j in merged["shards"]["jobs"]) == ROWS * 2
    assert "shard" not in merged["config"] and "shard:" not in (split / "config.yaml").read_text()
    keys = sample_keys(split)
    assert keys == sample_keys(whole) and set(keys.values()) == {1} and len(keys) == ROWS * 2
    # each shard wrote only its own part files
    for kind in ("generations", "scores"):
        owners = {p.name.split("-part-")[0].removeprefix("per_problem-") for p in (split / kind).glob("*.jsonl")}
        assert owners == {f"shard-{i:05d}" for i in range(SHARDS)}
        for path in (split / kind).glob("shard-*.jsonl"):
            index = int(path.name.split("-")[1])
            assert all(Shard(index, SHARDS).owns(r["id"]) for r in map(json.loads, path.read_text().splitlines()))
    # re-scoring the merged folder (unsharded, from config.yaml) gives the same numbers
    cli("score", f"run_dir={split}")
    assert summary(split)["metrics"] == one["metrics"]
    assert not (split / "shards").exists()


def test_merge_names_missing_and_killed_shards_then_merges_idempotently(tmp_path, wrong_data):
    folder = tmp_path / "run"
    for index in (0, 1):
        shard(tmp_path, wrong_data, index)
    refused = cli("merge", f"run_dir={folder}", check=False)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "2 of 4 shards not finished: 2 (missing); 3 (missing)" in refused.stderr
    assert not (folder / "summary.json").exists()

    # shard 3 is SIGKILLed once it has started: merge reports it, a rerun resumes it
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = run_args(tmp_path, wrong_data, f"shard.count={SHARDS}", "shard.index=3", "sampling_params.n=64")
    proc = subprocess.Popen([sys.executable, "-m", "skyeval.cli", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    state = folder / "shards" / "shard-00003-of-00004.json"
    deadline = time.monotonic() + 120
    while not state.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    refused = cli("merge", f"run_dir={folder}", check=False)
    assert refused.returncode == 2
    assert "2 (missing); 3 (running or killed: started" in refused.stderr

    shard(tmp_path, wrong_data, 2)
    last = shard(tmp_path, wrong_data, 3)
    assert "complete_with_failures: math500" in last.stdout  # the last shard merged
    first = summary(folder)
    again = cli("merge", f"run_dir={folder}")
    assert "complete_with_failures: math500" in again.stdout
    second = summary(folder)
    for s in (first, second):
        s["shards"].pop("merged_at")
    assert first == second
    assert set(sample_keys(folder).values()) == {1} and len(sample_keys(folder)) == ROWS * 2


def test_a_shard_that_fails_is_named_with_its_error_and_resumes_once_fixed(tmp_path, wrong_data):
    """A job whose node cannot read the data stops after claiming its shard: its state says
    failed and why (not "running or killed"), and the same command, once the data is
    there, finishes it."""
    folder = tmp_path / "run"
    for index in (0, 1, 2):
        shard(tmp_path, wrong_data, index)
    data = wrong_data / "math500" / "test.jsonl"
    hidden = data.rename(data.with_suffix(".hidden"))
    failed = shard(tmp_path, wrong_data, 3, check=False)
    assert failed.returncode == 2 and "no file matches" in failed.stderr
    state = json.loads((folder / "shards" / "shard-00003-of-00004.json").read_text(encoding="utf-8"))
    assert state["status"] == "failed" and state["error"].startswith("DataNotFoundError: no file matches")
    refused = cli("merge", f"run_dir={folder}", check=False)
    assert refused.returncode == 2
    assert "1 of 4 shards not finished: 3 (failed: DataNotFoundError: no file matches" in refused.stderr

    hidden.rename(data)
    assert "complete_with_failures: math500" in shard(tmp_path, wrong_data, 3).stdout  # it merged
    assert set(sample_keys(folder).values()) == {1} and len(sample_keys(folder)) == ROWS * 2


def test_a_shard_of_another_config_is_refused_and_score_is_not_sharded(tmp_path, wrong_data):
    shard(tmp_path, wrong_data, 0)
    other = shard(tmp_path, wrong_data, 1, "sampling_params.temperature=0.5", check=False)
    assert other.returncode == 2 and "holds results of another config (differs in: sampling)" in other.stderr
    refused = cli("score", f"run_dir={tmp_path / 'run'}", "shard.count=4", check=False)
    assert refused.returncode == 2 and "re-scoring is not sharded" in refused.stderr
    not_sharded = cli("merge", f"run_dir={tmp_path / 'nothing'}", check=False)
    assert not_sharded.returncode == 2 and "not the run folder of a sharded run" in not_sharded.stderr
