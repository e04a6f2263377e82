"""Ctrl-C while generated code is being scored (every program loops forever): the CLI stops
at once with the usual "interrupted" line, leaves no sandbox behind, loses nothing
finished, and the same command resumes without generating again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.backends.fault_server import FaultServer

REPO = Path(__file__).resolve().parents[2]
LOOPING = "```python\nwhile True:\n    pass\n```"


def test_ctrl_c_during_code_scoring_stops_cleanly_and_the_rerun_resumes(tmp_path, data_dir):
    private_tmp = tmp_path / "tmp"  # the sandboxes' work dirs land here: none may be left
    private_tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(private_tmp)}
    with FaultServer(answer_template=LOOPING) as server:
        cmd = [sys.executable, "-m", "skyeval.cli", "evaluate", "+env=humaneval", "env.limit=4", "model_config=openai",
               f"model_config.api_url={server.url}", "model_config.model_source=m", "model_config.api_key_env=null",
               f"logging.results_dir={tmp_path / 'out'}"]
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while not any(private_tmp.glob("skyeval-sandbox-*")) and time.monotonic() < deadline:
                time.sleep(0.05)  # a looping program is running
            assert any(private_tmp.glob("skyeval-sandbox-*")), "no program was ever scored"
            before = {p.name for p in private_tmp.glob("skyeval-sandbox-*")}
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the terminal's whole process group
            started_after: set[str] = set()
            deadline = time.monotonic() + 120  # a hang bound; it takes ~2 s (each program loops ~10 s)
            while proc.poll() is None and time.monotonic() < deadline:
                started_after |= {p.name for p in private_tmp.glob("skyeval-sandbox-*")} - before
                time.sleep(0.02)
            out = proc.communicate(timeout=60)[0]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == 130, out[-3000:]
        assert "interrupted: finished samples are saved; re-run the same command to resume" in out
        assert "Traceback" not in out
        assert started_after == set()  # scoring stopped at once: no program started after Ctrl-C
        assert list(private_tmp.iterdir()) == []  # every sandbox was stopped and cleaned up
        leftovers = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert leftovers == []  # no worker or program of that session is alive
        requests = server.stats()["requests"]

        again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.stats()["requests"] == requests  # resumed: nothing generated again
        (folder,) = (tmp_path / "out").iterdir()
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["counts"]["scored"] + summary["counts"]["failed"] == 4 and summary["counts"]["missing"] == 0
        assert summary["metrics"]["accuracy"] == 0.0  # a program that never ends passes nothing
