"""A sample interrupted mid-loop is redone whole by the next run of the same command; the
samples that finished are never sent again."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from skyeval import SkyEnvBuilder
from skyeval.config.compose import compose
from skyeval.run.app import execute
from tests.backends.fault_server import FaultServer
from tests.conftest import read_jsonl
from tests.tools.code_model import CodeModel, conversation

HANG_S = 300


def test_a_sample_interrupted_mid_loop_is_redone_whole(tmp_path, data_dir):
    problems = list(SkyEnvBuilder.build("gsm8k", {"limit": 3}).iter_problems())
    answers = {p["question"]: p["expected"] for p in problems}
    slow = problems[0]["question"]
    sleeping = CodeModel(answers, programs={slow: "import time\ntime.sleep(300)"})

    def sent(question: str, server: FaultServer) -> list[dict]:
        return [e for e in server.log if question in conversation(e)]

    with FaultServer(responder=sleeping) as server:
        config = compose("+env=gsm8k", "env.limit=3", "tools=python", "tools.timeout_s=300", "model_config=openai",
                         "model_config.model_source=coder", f"model_config.api_url={server.url}",
                         "model_config.api_key_env=null")
        # Ctrl-C while the slow program runs, once the other samples have had their answers
        interrupt_when(lambda: sent(slow, server) and all(len(sent(p["question"], server)) == 2 for p in problems[1:]))
        with pytest.raises(KeyboardInterrupt):
            execute(config, tmp_path / "run")
        saved = {g["id"] for g in read_jsonl(tmp_path / "run" / "generations")}
        assert problems[0]["id"] not in saved  # nothing of the interrupted sample was kept
        before = len(server.log)
        server.configure(responder=CodeModel(answers))
        summary = execute(config, tmp_path / "run")
        again = server.log[before:]
    assert summary["metrics"]["accuracy"] == 1.0 and summary["counts"]["resumed"] == len(saved)
    firsts = [e for e in again if "```output" not in conversation(e)]
    assert sorted(conversation(e) for e in firsts) == sorted(
        conversation(e) for e in server.log[:before] if "```output" not in conversation(e)
        and not any(p["id"] in saved and p["question"] in conversation(e) for p in problems))
    assert len(sent(slow, server)) == 3  # its first turn twice (redone whole), then its answer
    record = next(g for g in read_jsonl(tmp_path / "run" / "generations") if g["id"] == problems[0]["id"])
    assert [t["role"] for t in record["transcript"]] == ["assistant", "tool", "assistant"]


def interrupt_when(condition) -> None:
    """Ctrl-C (a real SIGINT to this process) once `condition()` holds (or after HANG_S)."""
    def watch() -> None:
        deadline = time.monotonic() + HANG_S
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=watch, daemon=True).start()
