"""Fault tolerance end to end: kill -9, Ctrl-C, permanent server failures, resume, retry.

The CLI runs in a subprocess against the fault-injecting loopback server
(tests/backends/fault_server.py), whose request log shows what was asked and when.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, load_summary, read_jsonl, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path):
    """Start the fault server as a subprocess; yields (url, log path, admin post)."""
    servers = []

    def start(*args: str) -> tuple[str, Path]:
        log = tmp_path / f"requests{len(servers)}.jsonl"
        proc = subprocess.Popen([sys.executable, str(REPO / "tests/backends/fault_server.py"), "--port", "0",
                                 "--log", str(log), *args], stdout=subprocess.PIPE, text=True)
        servers.append(proc)
        line = proc.stdout.readline()
        assert line.startswith("READY"), line
        return line.split()[1], log

    yield start
    for proc in servers:
        proc.terminate()
        proc.wait(10)


def cli_args(url: str, results: Path, limit: int, *extra: str) -> list[str]:
    return ["evaluate", "+env=gsm8k", f"env.limit={limit}", "model_config=openai", "model_config.model_source=tiny",
            f"model_config.api_url={url}", "model_config.api_key_env=null", "model_config.max_retries=1",
            "scaling.concurrency=4", f"logging.results_dir={results}", "logging.experiment_name=run", *extra]


def start_cli(args: list[str], cwd: Path) -> subprocess.Popen:
    """The CLI as a foreground command: Ctrl-C (SIGINT) is not ignored, even when the tests
    run in the background (`cmd &` in a script ignores SIGINT, and children inherit that)."""
    return subprocess.Popen([sys.executable, "-m", "skyeval.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_lines(path: Path, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(read_jsonl(path)) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {count} lines")


def scores_by_key(run_dir: Path) -> dict[tuple, tuple]:
    texts = {(r["id"], r["sample_idx"]): r["generation"] for r in read_jsonl(run_dir / "generations")}
    return {(r["id"], r["sample_idx"]): (texts[(r["id"], r["sample_idx"])], r["score"]) for r in read_jsonl(run_dir / "scores")}


def test_sigkill_mid_generation_then_resume_equals_uninterrupted_run(tmp_path, server, data_dir):
    url, log = server("--latency", "0.25")
    killed = tmp_path / "killed"
    proc = start_cli(cli_args(url, killed, 40), tmp_path)
    generations = killed / "run" / "generations"
    wait_for_lines(generations, 10)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    done_before = {r["prompt"][-1]["content"] for r in read_jsonl(generations)}
    kill_time = time.time()
    assert 10 <= len(done_before) < 40

    run_cli(*cli_args(url, killed, 40), cwd=tmp_path)
    summary = load_summary(killed / "run")
    assert summary["counts"]["scored"] == 40 and summary["counts"]["resumed"] >= 10
    assert len(read_jsonl(generations)) == 40  # nothing duplicated

    requested_after = [json.loads(line) for line in log.read_text().splitlines()]
    repeats = [e for e in requested_after if e["t"] > kill_time and e["messages"][-1]["content"] in done_before]
    assert repeats == [], "a finished sample was requested again after the crash"

    fresh = tmp_path / "fresh"
    run_cli(*cli_args(url, fresh, 40), cwd=tmp_path)
    assert scores_by_key(killed / "run") == scores_by_key(fresh / "run")


def test_permanent_failures_are_recorded_then_retried_when_healed(tmp_path, server, data_dir):
    url, log = server("--fail-fraction", "0.2", "--fail-status", "500")
    results = tmp_path / "out"
    run_cli(*cli_args(url, results, 50), cwd=tmp_path)
    run_dir = results / "run"
    summary = load_summary(run_dir)
    failures = read_jsonl(run_dir / "failures")
    scored = read_jsonl(run_dir / "scores")
    never_answered = {e["prompt_key"] for e in map(json.loads, log.read_text().splitlines())} - {
        e["prompt_key"] for e in map(json.loads, log.read_text().splitlines()) if e.get("fault") is None}
    assert len(failures) == len(never_answered) > 0
    assert summary["status"] == "complete_with_failures"
    assert summary["counts"]["scored"] + summary["counts"]["failed"] == summary["counts"]["samples"] == 50
    assert {(f["id"], f["sample_idx"]) for f in failures}.isdisjoint({(s["id"], s["sample_idx"]) for s in scored})
    assert all(f["stage"] == "generate" and f["error_type"] and f["prompt"] for f in failures)

    import urllib.request

    urllib.request.urlopen(urllib.request.Request(url.rsplit("/v1", 1)[0] + "/admin/heal", data=b"{}", method="POST"))
    requests_before = len(log.read_text().splitlines())
    run_cli(*cli_args(url, results, 50, "retry_failures=true"), cwd=tmp_path)
    summary = load_summary(run_dir)
    assert summary["status"] == "complete" and summary["counts"]["scored"] == 50
    assert read_jsonl(run_dir / "failures") == []
    assert len(log.read_text().splitlines()) - requests_before == len(failures)  # only the failed ones


def test_ctrl_c_leaves_a_resumable_folder_and_a_readable_message(tmp_path, server, data_dir):
    url, _ = server("--latency", "0.25")
    results = tmp_path / "out"
    proc = start_cli(cli_args(url, results, 40), tmp_path)
    wait_for_lines(results / "run" / "generations", 5)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=600)  # a hang bound (a loaded box is slow to unwind)
    assert proc.returncode == 130
    assert "re-run the same command to resume" in stderr and "Traceback" not in stderr
    assert load_summary(results / "run")["status"] == "interrupted"
    assert not (results / "run" / ".lock-run").exists()  # removed on Ctrl-C too
    run_cli(*cli_args(url, results, 40), cwd=tmp_path)
    assert load_summary(results / "run")["counts"]["scored"] == 40


def test_changed_config_never_reuses_generations(tmp_path, server, data_dir):
    url, _ = server()
    results = tmp_path / "out"
    run_cli(*cli_args(url, results, 3), cwd=tmp_path)
    proc = run_cli(*cli_args(url, results, 3, "sampling_params.temperature=0.9"), cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "another config" in proc.stderr and "sampling" in proc.stderr
    assert load_summary(results / "run")["counts"]["scored"] == 3  # the earlier run is untouched


def test_missing_api_key_is_a_clear_error(tmp_path, data_dir):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "skyeval.cli", "evaluate", "+env=gsm8k", "model_config=openai",
                           "model_config.model_source=gpt-4o-mini"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "OPENAI_API_KEY" in proc.stderr and "Traceback" not in proc.stderr


def test_unreachable_endpoint_is_a_clear_error_before_any_work(tmp_path, data_dir):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run_cli(*cli_args(f"http://127.0.0.1:{port}/v1", tmp_path / "out", 3), cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "cannot reach" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "run" / "generations").exists()


def test_score_rescores_without_a_model_key_or_server(tmp_path, server, data_dir):
    url, _ = server()
    results = tmp_path / "out"
    run_cli(*cli_args(url, results, 4, "model_config.api_key_env=OPENAI_API_KEY"), cwd=tmp_path,
            env={"OPENAI_API_KEY": "sk-test-only-for-this-run"})
    before = scores_by_key(results / "run")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}  # and the server is gone
    subprocess.run(["pkill", "-f", "fault_server.py --port 0 --log " + str(tmp_path)], check=False)
    proc = subprocess.run([sys.executable, "-m", "skyeval.cli", "score", f"run_dir={results / 'run'}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert scores_by_key(results / "run") == before
    summary = load_summary(results / "run")
    assert summary["stage"] == "score" and summary["counts"]["scored"] == 4
    assert "sk-test-only" not in "".join(p.read_text() for p in (results / "run").rglob("*") if p.is_file())


def test_failures_outside_the_current_n_are_not_counted(tmp_path, server, data_dir):
    url, _ = server("--fail-fraction", "1.0")
    results = tmp_path / "out"
    run_cli(*cli_args(url, results, 2, "sampling_params.n=2", "sampling_params.temperature=0.5"), cwd=tmp_path,
            check=False)
    again = run_cli(*cli_args(url, results, 2, "sampling_params.n=1", "sampling_params.temperature=0.5"), cwd=tmp_path,
                    check=False)
    summary = load_summary(results / "run")
    assert summary["counts"]["samples"] == 2 and summary["counts"]["failed"] == 2, again.stderr
    assert summary["metrics"]["accuracy"] == 0.0
