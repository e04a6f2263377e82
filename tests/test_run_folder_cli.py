"""Run folders through the real CLI: one folder per sweep point, one writer per folder, a
SIGKILL between part rotations loses nothing, and errors say what they are."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REPO, load_summary, read_jsonl, run_cli

GSM8K = ("evaluate", "+env=gsm8k", "model_config=reference")


def folders(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir() and p.name != "sweeps")  # sweeps/: their records


def test_a_sweep_over_seeds_gives_each_point_its_own_folder(tmp_path, data_dir):
    results = tmp_path / "out"
    proc = run_cli(*GSM8K, "env.limit=3", f"logging.results_dir={results}", "-m", "sampling_params.seed=0,1", cwd=tmp_path)
    made = folders(results)
    assert len(made) == 2, proc.stdout
    assert all(p.name.startswith("gsm8k_reference_t0.0_") for p in made)
    assert {load_summary(p)["config"]["sampling_params"]["seed"] for p in made} == {0, 1}
    # the same command again finds its folders (resume), and a larger limit reuses them
    run_cli(*GSM8K, "env.limit=4", f"logging.results_dir={results}", "-m", "sampling_params.seed=0,1", cwd=tmp_path)
    assert folders(results) == made
    assert [load_summary(p)["counts"]["resumed"] for p in made] == [3, 3]


def test_max_tokens_is_written_and_fingerprinted_not_redacted(tmp_path, data_dir):
    results = tmp_path / "out"
    run_cli(*GSM8K, "env.limit=2", "sampling_params.max_tokens=77", f"logging.results_dir={results}", cwd=tmp_path)
    run_cli(*GSM8K, "env.limit=2", "sampling_params.max_tokens=78", f"logging.results_dir={results}", cwd=tmp_path)
    made = folders(results)
    assert len(made) == 2  # another max_tokens never resumes the old generations
    for folder, value in zip(made, sorted(load_summary(p)["config"]["sampling_params"]["max_tokens"] for p in made)):
        text = "".join((folder / f).read_text() for f in ("config.yaml", "run.json", "summary.json"))
        assert "REDACTED" not in text
    fingerprints = [json.loads((p / "run.json").read_text())["sampling"]["max_tokens"] for p in made]
    assert sorted(fingerprints) == [77, 78]


def test_a_second_writer_is_refused_naming_the_holder(tmp_path, data_dir):
    args = [*GSM8K, "sampling_params.n=16", f"logging.results_dir={tmp_path / 'out'}", "logging.experiment_name=run"]
    first = subprocess.Popen([sys.executable, "-m", "skyeval.cli", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    lock = tmp_path / "out" / "run" / ".lock-run"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (lock.exists() and lock.read_text()):
        time.sleep(0.05)
    second = run_cli(*args, cwd=tmp_path, check=False)
    first.wait(300)
    assert second.returncode == 2, second.stderr
    message = second.stderr.strip().splitlines()
    assert len(message) == 1 and f"pid {first.pid} on " in message[0] and "since" in message[0]
    assert first.returncode == 0 and load_summary(tmp_path / "out" / "run")["counts"]["scored"] == 1319 * 16


def test_the_lock_goes_when_a_run_ends_normally_by_error_or_by_sigterm(tmp_path, data_dir):
    """`.lock-run` named a dead pid in every finished folder."""
    run_cli(*GSM8K, "env.limit=2", f"logging.results_dir={tmp_path / 'done'}", "logging.experiment_name=run", cwd=tmp_path)
    assert not (tmp_path / "done" / "run" / ".lock-run").exists()
    args = [*GSM8K, "sampling_params.n=16", f"logging.results_dir={tmp_path / 'out'}", "logging.experiment_name=run"]
    proc = subprocess.Popen([sys.executable, "-m", "skyeval.cli", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    lock = tmp_path / "out" / "run" / ".lock-run"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((tmp_path / "out" / "run").glob("scores/part-*.jsonl")):
        time.sleep(0.05)
    assert lock.read_text().startswith(f"pid {proc.pid} on ")
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert load_summary(tmp_path / "out" / "run")["status"] == "interrupted" and not lock.exists()


def test_sigkill_between_part_rotations_loses_nothing(tmp_path, data_dir):
    args = [*GSM8K, "sampling_params.n=4", f"logging.results_dir={tmp_path / 'out'}", "logging.experiment_name=run"]
    env = {**os.environ, "SKYEVAL_PART_BYTES": "20000"}  # a new part every few dozen records
    proc = subprocess.Popen([sys.executable, "-m", "skyeval.cli", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_dir = tmp_path / "out" / "run"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list((run_dir / "scores").glob("part-*.jsonl"))) < 5:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    parts_before = len(list((run_dir / "generations").glob("part-*.jsonl")))
    assert parts_before >= 2
    assert (run_dir / ".lock-run").read_text().startswith(f"pid {proc.pid} on ")  # a dead holder's
    rerun = run_cli(*args, cwd=tmp_path, env={"SKYEVAL_PART_BYTES": "20000"})
    (taken,) = [line for line in rerun.stderr.splitlines() if "lock" in line]  # taken over with one line
    assert f"pid {proc.pid} on " in taken and taken.endswith("taken over") and not (run_dir / ".lock-run").exists()
    keys = Counter((r["id"], r["sample_idx"]) for r in read_jsonl(run_dir / "scores"))
    assert len(keys) == 1319 * 4 and set(keys.values()) == {1}  # every sample scored exactly once
    assert read_jsonl(run_dir / "failures") == []
    generated = Counter((r["id"], r["sample_idx"]) for r in read_jsonl(run_dir / "generations"))
    assert set(generated.values()) == {1}  # nothing generated twice
    summary = load_summary(run_dir)
    assert summary["counts"]["scored"] == 1319 * 4 and summary["metrics"]["accuracy"] == 1.0
    assert summary["counts"]["resumed"] > 0
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert len(manifest["parts"]["generations"]) >= parts_before


def test_a_model_without_a_backend_is_refused(tmp_path, data_dir):
    proc = run_cli(*GSM8K[:2], "model_config.model_source=Novasky/Sky-T1", f"logging.results_dir={tmp_path}",
                   cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "model_config=openai|vllm|ray" in proc.stderr
    assert "Traceback" not in proc.stderr and not any(tmp_path.glob("*/summary.json"))


def test_a_bug_exits_1_with_its_traceback_in_logs(tmp_path, data_dir):
    results = tmp_path / "out"
    config = tmp_path / "buggy.yaml"
    config.write_text("imports: [tests.fixtures.buggy_env_plugin]\nenv: {name: BUGGY}\n")
    proc = run_cli("evaluate", "--config", str(config), f"logging.results_dir={results}", "logging.experiment_name=run",
                   cwd=REPO, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "internal error: ZeroDivisionError" in proc.stderr and "logs.txt" in proc.stderr
    assert "Traceback" not in proc.stderr
    logs = (results / "run" / "logs.txt").read_text()
    assert "Traceback" in logs and "1 / 0" in logs
    assert not (results / "run" / ".lock-run").exists()


def test_an_empty_selection_is_refused_before_any_folder(tmp_path, data_dir):
    proc = run_cli(*GSM8K, "env.limit=0", f"logging.results_dir={tmp_path}", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "skyeval: error: env 'gsm8k' has no problems (env.limit=0): nothing to run"]
    assert not list(tmp_path.glob("gsm8k_*"))


@pytest.mark.parametrize("override", ["sampling_params.n=0", "sampling_params.n=-2", "env.limit=-3", "env.limit=ten",
                                      "sampling_params.temperature=-1"])
def test_nonsense_values_are_refused_up_front(tmp_path, data_dir, override):
    proc = run_cli(*GSM8K, override, f"logging.results_dir={tmp_path}", cwd=tmp_path, check=False)
    assert proc.returncode == 2, (override, proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not any(tmp_path.glob("*/generations/*.jsonl"))


def test_dry_run_prints_what_would_be_sent_and_calls_nothing(tmp_path, data_dir):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}  # no key, and no server at the URL
    proc = subprocess.run([sys.executable, "-m", "skyeval.cli", "evaluate", "+env=gsm8k", "env.limit=10",
                           "model_config=openai", "model_config.model_source=gpt-4o-mini",
                           "model_config.api_url=http://127.0.0.1:9/v1", "sampling_params.n=4",
                           "sampling_params.max_tokens=1000", "+model_config.price={input: 0.15, output: 0.6}",
                           "dry_run=true", f"logging.results_dir={tmp_path / 'out'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "to send: problems 10, samples 40" in proc.stdout and "completion tokens at most 40,000" in proc.stdout
    assert "first prompt:\n    [user] " in proc.stdout
    assert "worst-case cost $0.02" in proc.stdout  # 40,000 x $0.6/M = $0.024, plus the prompts
    assert re.search(r"sent at most \((chars/4|tiktoken \w+), an estimate\)\n", proc.stdout), proc.stdout
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.jsonl"))


def test_dry_run_counts_only_what_the_folder_does_not_hold(tmp_path, data_dir):
    """Issue 25 item 13: a dry run of a finished folder sends nothing; a larger selection
    sends only the new problems; the first prompt to send is shown."""
    results = tmp_path / "out"
    run_cli(*GSM8K, "env.limit=3", "sampling_params.n=2", f"logging.results_dir={results}", cwd=tmp_path)
    [folder] = folders(results)
    done = run_cli(*GSM8K, "env.limit=3", "sampling_params.n=2", "dry_run=true", f"logging.results_dir={results}",
                   cwd=tmp_path).stdout
    assert "to send: problems 0, samples 0;" in done and "completion tokens at most 0 " in done
    assert "first prompt" not in done
    more = run_cli(*GSM8K, "env.limit=5", "sampling_params.n=2", "dry_run=true", f"logging.results_dir={results}",
                   cwd=tmp_path).stdout
    assert "to send: problems 2, samples 4;" in more and f"{folder} has the rest" in more
    rows = [json.loads(line) for line in (data_dir / "gsm8k" / "test.jsonl").read_text().splitlines()[:5]]
    assert f"[user] {rows[3]['question'].splitlines()[0]}" in more  # the 4th problem is the first to send
    assert folders(results) == [folder] and load_summary(folder)["counts"]["samples"] == 6  # nothing written
    fresh = run_cli(*GSM8K, "env.limit=3", "sampling_params.n=2", "dry_run=true", "overwrite=true",
                    f"logging.results_dir={results}", cwd=tmp_path).stdout
    assert "to send: problems 3, samples 6\n" in fresh


def test_a_folder_written_before_a_knob_existed_is_found_and_resumed(tmp_path, data_dir):
    """Folders of an older skyeval lack keys that now hold their defaults (its env YAMLs
    listed fewer knobs): their fingerprint, and so their name's hash, differ. The same
    command still finds such a folder and resumes it, generating nothing again."""
    results = tmp_path / "out"
    run_cli(*GSM8K, "env.limit=3", f"logging.results_dir={results}", cwd=tmp_path)
    [folder] = folders(results)
    legacy = folder.with_name("gsm8k_reference_t0.0_0123abcd")
    folder.rename(legacy)
    fingerprint = json.loads((legacy / "run.json").read_text())
    for knob in ("question_field", "answer_field", "timeout_s", "meta_fields"):  # keys the old gsm8k.yaml had not
        del fingerprint["env"][knob]
    (legacy / "run.json").write_text(json.dumps(fingerprint))
    run_cli(*GSM8K, "env.limit=4", f"logging.results_dir={results}", cwd=tmp_path)
    assert folders(results) == [legacy]
    summary = load_summary(legacy)
    assert summary["counts"]["resumed"] == 3 and summary["counts"]["scored"] == 4
    assert json.loads((legacy / "run.json").read_text())["env"]["timeout_s"] == 5.0  # now in today's form
    other = fingerprint | {"sampling": {**fingerprint["sampling"], "temperature": 0.5}}
    (legacy / "run.json").write_text(json.dumps(other))  # another config: never resumed
    run_cli(*GSM8K, "env.limit=4", f"logging.results_dir={results}", cwd=tmp_path)
    assert len(folders(results)) == 2
