"""Every paid answer reaches the disk before anything waits on it (issue 49 item 6).

A fast OpenAI-compatible server on 127.0.0.1 and a slow scorer: back-pressure from scoring
stops *sending* requests, never *recording* the answers received. After SIGINT the run
exits 130 within 5 s with every answered request's generation on disk, and the re-run
sends none of them again. Math (a scorer that sleeps) and code (programs that sleep)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skyeval.results import RunFolder
from skyeval.run.records import SampleWriter, WorkerSink
from skyeval.scorers.pool import QUEUE_PER_WORKER
from tests.backends.fault_server import FaultServer
from tests.conftest import REPO, load_summary, read_jsonl, run_cli

SLOW_GSM8K = "env._target_=tests.fixtures.slow_env_plugin.SlowGSM8KEnv"
SLEEPING_PROGRAM = "```python\nimport time\ntime.sleep(3)\n```"


def _args(server: FaultServer, out: Path, *extra: str) -> list[str]:
    return ["model_config=openai", "model_config.model_source=fake", f"model_config.api_url={server.url}",
            "model_config.api_key_env=null", "scaling.concurrency=8", f"logging.results_dir={out}", *extra]


def _start(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """The CLI in its own session with Ctrl-C's default action (a background job ignores it)."""
    return subprocess.Popen([sys.executable, "-m", "skyeval.cli", *args], cwd=cwd,
                            env={**os.environ, "PYTHONPATH": str(REPO), **env},
                            stdout=open(cwd / "stdout", "w"), stderr=open(cwd / "stderr", "w"),
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _answered(server: FaultServer) -> int:
    stats = server.stats()
    return stats["requests"] - stats["in_flight"]


def _stop_when_sending_stalls(proc: subprocess.Popen, server: FaultServer, cwd: Path, least: int) -> float:
    """Wait until at least `least` requests were answered and none came for 2 s (back-pressure
    holds the run), then SIGINT it; returns the seconds it took to exit."""
    deadline = time.monotonic() + 300  # a hang bound: a few seconds when quiet
    last, since = -1, time.monotonic()
    while True:
        assert proc.poll() is None, (cwd / "stderr").read_text()[-3000:]
        assert time.monotonic() < deadline, "the server's request count never settled"
        count = server.stats()["requests"]
        if count != last:
            last, since = count, time.monotonic()
        elif count >= least and time.monotonic() - since > 2.0:
            break
        time.sleep(0.05)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return time.monotonic() - sent


def _check_stopped(proc: subprocess.Popen, took: float, server: FaultServer, folder: Path, cwd: Path) -> set[str]:
    err = (cwd / "stderr").read_text()
    assert proc.returncode == 130, err[-3000:]
    assert took < 5.0, f"exited {took:.1f} s after SIGINT"
    answered = _answered(server)
    generations = read_jsonl(folder / "generations")
    assert len(generations) == answered, err[-3000:]  # before: answers waiting behind the scoring queue were lost
    assert len({(g["id"], g["sample_idx"]) for g in generations}) == answered
    summary = load_summary(folder)
    assert summary["status"] == "interrupted" and summary["counts"]["generated"] == answered
    return {entry["prompt_key"] for entry in server.log}


def test_math_answers_are_recorded_while_scoring_lags(tmp_path, data_dir):
    # more problems than back-pressure lets through: the scoring queue (per core) and 2 x concurrency in flight
    limit = QUEUE_PER_WORKER * len(os.sched_getaffinity(0)) + 2 * 8 + 60
    with FaultServer() as server:
        out = tmp_path / "out"
        command = ["evaluate", "+env=gsm8k", SLOW_GSM8K, f"env.limit={limit}", *_args(server, out)]
        proc = _start(command, tmp_path, {"SKYEVAL_TEST_SCORE_DELAY_S": "1.0"})
        took = _stop_when_sending_stalls(proc, server, tmp_path, least=100)
        folder = next(out.iterdir())
        first = _check_stopped(proc, took, server, folder, tmp_path)
        assert len(first) < limit  # back-pressure held the sending: the run stopped mid-way
        assert load_summary(folder)["counts"]["problems"] == limit  # the whole selection, started or not

        run_cli(*command, cwd=tmp_path, env={"PYTHONPATH": str(REPO)})  # the same command, with a fast scorer
        keys = [entry["prompt_key"] for entry in server.log]
        assert len(keys) == len(set(keys)) == limit  # nothing answered was asked again
        summary = load_summary(folder)
        assert summary["status"] == "complete" and summary["counts"]["scored"] == limit


def test_code_answers_are_recorded_while_sandboxes_run(tmp_path, data_dir):
    """The issue's run: HumanEval against a fast server, every program sleeping 3 s."""
    with FaultServer(answer_template=SLEEPING_PROGRAM) as server:
        out = tmp_path / "out"
        proc = _start(["evaluate", "+env=humaneval", *_args(server, out)], tmp_path, {})
        took = _stop_when_sending_stalls(proc, server, tmp_path, least=100)
        folder = next(out.iterdir())
        _check_stopped(proc, took, server, folder, tmp_path)
        # the re-run (generation only here: scoring 164 sleeping programs takes minutes) sends only the rest
        run_cli("generate", "+env=humaneval", *_args(server, out), cwd=tmp_path)
        keys = [entry["prompt_key"] for entry in server.log]
        assert len(keys) == len(set(keys)) == 164


def test_cluster_workers_write_a_block_before_scoring_it(tmp_path, data_dir):
    """Ray's writers: a block's answers all reach the disk before the first of them is scored."""
    from skyeval.backends.base import GenerationResult
    from skyeval.envs.registry import SkyEnvBuilder

    folder = RunFolder(tmp_path / "run")
    folder.claim({"test": 1})
    env = SkyEnvBuilder.build("gsm8k", {"limit": 3})
    seen: list[int] = []

    class Watching:  # a scorer that looks at the disk when it is called
        def outcome(self, row):
            seen.append(len(read_jsonl(folder.dir("generations"))))
            return {"score": 1.0, "extracted": "1"}

    writer = SampleWriter(WorkerSink(str(folder.path), env=env), "w1")
    writer.scorer = Watching()
    problems = [{**p, "prompt": p["question"]} for p in env.iter_problems()]
    results = [(GenerationResult(p["id"], 0, generation="\\boxed{1}", finish_reason="stop"), p) for p in problems]
    notes = writer.write_all(results)
    assert seen == [3, 3, 3]  # before: 1, 2, 3 (each answer waited for the scoring of the one before)
    assert [n["kind"] for n in notes] == ["generations"] * 3 + ["scores"] * 3
    writer.close()


class StepBackend:
    """Like vLLM's offline engine (`VLLMBackend.generate`), in this process: it takes requests
    up to a window, reading a source that is not `ready_now` only when nothing runs, and each
    step finishes a batch of them at once (`taken` and `produced` count samples)."""

    def __init__(self, window: int = 16, step: int = 8) -> None:
        self.window, self.step, self.taken, self.produced = window, step, 0, 0

    def generate(self, requests, sampling):
        from skyeval.backends.base import GenerationResult, ready_now

        source, pending = iter(requests), []
        while True:
            while len(pending) < self.window and (not pending or ready_now(source)) \
                    and (request := next(source, None)) is not None:
                pending.append(request)
                self.taken += len(request.sample_indices)
            if not pending:
                return
            batch, pending = pending[:self.step], pending[self.step:]
            outputs = [GenerationResult(r.id, i, generation=r.reference, finish_reason="stop")
                       for r in batch for i in r.sample_indices]
            self.produced += len(outputs)
            yield from outputs

    def describe(self):
        return {"backend": "step"}

    def close(self):
        pass


def test_an_engines_step_is_recorded_whole_while_scoring_lags(tmp_path):
    """The in-process backends (vLLM, reference): when scoring lags, the run stops taking new
    requests (the request stream is not `ready`), the engine finishes what it runs, and every
    answer a step made is on disk. Before: the run blocked on the scoring
    queue in the middle of a step, its other answers waiting in memory."""
    import threading

    from skyeval.run import pipeline
    from tests.test_pipeline import make_env

    gate = tmp_path / "open"
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    backend = StepBackend()
    env = make_env(400, 1, backend, gate=str(gate))
    pool = pipeline.scoring_pool(env, 1)
    done: dict = {}
    thread = threading.Thread(target=lambda: done.update(outcome=pipeline.run(env, folder, "evaluate", pool=pool)))
    thread.start()
    try:
        assert pool.held_back.wait(300)  # the scoring queue is full: the run waits before taking a request
        assert len(read_jsonl(folder.dir("generations"))) == backend.produced < 400
        # the engine ran what it had taken to the end: no request waits in it for the scoring queue
        assert backend.taken == backend.produced
    finally:
        gate.touch()
        thread.join(300)
        pool.close()
    assert done["outcome"].scored == 400


@pytest.fixture(autouse=True)
def _quiet_scoring_env(monkeypatch):
    monkeypatch.delenv("SKYEVAL_TEST_SCORE_DELAY_S", raising=False)
