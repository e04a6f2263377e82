"""Issue 33 item 7: the ETA follows the recent rate; serve-reward on a busy port is one
line before any banner; a metrics state of another version is refused with one line;
summary.json records the earlier samples outside a run's selection."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from skyeval.run.recorder import Progress
from tests.conftest import REPO, load_summary, run_cli, run_folder

GSM8K = ("evaluate", "+env=gsm8k", "model_config=reference")


def test_the_eta_comes_from_the_recent_rate():
    now = [0.0]
    progress = Progress("evaluate", total=300, every_s=1e9, window_s=5.0, clock=lambda: now[0])
    for _ in range(100):  # 1 sample/s for 100 s
        now[0] += 1.0
        progress.update(scored=1)
        progress.line()
    for _ in range(100):  # then 10 samples/s
        now[0] += 0.1
        progress.update(scored=1)
        progress.line()
    line = progress.line()  # 100 left at the recent 10/s: 10 s, not the 55 s of the average rate
    assert line.endswith("| 10/s, ETA 10s"), line
    slow = Progress("evaluate", total=1000, every_s=1e9, clock=lambda: now[0])
    now[0] += 4.0
    slow.update(scored=1)
    assert "| 0.25/s, ETA 3996s" in slow.line()  # a slow rate is shown as it is, not as 0/s


def test_the_ticker_shows_progress_while_no_result_arrives(caplog):
    """A cluster backend's results come a block at a time, after its replicas start: the
    line comes every `every_s` seconds meanwhile (a hang bound of 600 s, never a speed check)."""
    import threading
    import time

    progress = Progress("evaluate", total=10, every_s=0.05)
    seen = threading.Event()
    with caplog.at_level("INFO", logger="skyeval"):
        progress.start_ticker()
        deadline = time.monotonic() + 600
        while sum("waiting for the first results" in r.getMessage() for r in caplog.records) < 2:
            assert time.monotonic() < deadline, "no progress line while nothing arrived"
            seen.wait(0.05)
        progress.update(scored=1)
        progress.close()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("progress: ")]
    assert lines[0].startswith("progress: generated 0, scored 0, failed 0 | 0/s | waiting for the first results (")


def test_serve_reward_on_a_busy_port_is_one_line_before_any_banner():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "skyeval.cli", "serve-reward", "+env=math500", f"port={port}"],
                              cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
    assert proc.stderr.strip().splitlines() == [
        f"skyeval: error: serve-reward: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(is another server there? choose another with port=P)"]


def test_a_shard_state_of_another_version_is_refused_with_one_line(tmp_path, data_dir):
    for index in (0, 1):
        run_cli(*GSM8K, "env.limit=4", f"shard.index={index}", "shard.count=2", f"logging.results_dir={tmp_path}",
                cwd=tmp_path)
    folder = run_folder(tmp_path, "gsm8k_reference_t0.0")
    state_file = folder / "shards" / "shard-00001-of-00002.json"
    state = json.loads(state_file.read_text())
    state["metrics_state"]["version"] = 1  # as the previous release wrote it
    state_file.write_text(json.dumps(state))
    proc = run_cli("merge", f"run_dir={folder}", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "internal error" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "skyeval: error: shard 1 of 2: its metrics state is version 1, written by another skyeval release "
        "(this one reads version 2): run it again with this release"]


def test_summary_records_the_earlier_samples_outside_the_selection(tmp_path, data_dir):
    args = (*GSM8K, f"logging.results_dir={tmp_path}", "logging.experiment_name=run")
    run_cli(*args, "env.limit=4", "sampling_params.n=2", cwd=tmp_path)
    assert load_summary(tmp_path / "run")["records"]["outside_selection"] == 0
    run_cli(*args, "env.limit=3", "sampling_params.n=1", cwd=tmp_path)
    summary = load_summary(tmp_path / "run")
    assert summary["counts"]["samples"] == 3 and summary["records"]["outside_selection"] == 5  # 8 - 3
