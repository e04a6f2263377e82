"""The streaming pipeline in-process: scoring overlaps generation behind a bounded queue,
the driver holds O(window) records, and a resume scores what a crash left unscored."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from skyeval.backends.base import GenerationRequest, GenerationResult, SamplingParams
from skyeval.envs.base import Env
from skyeval.results import RunFolder
from skyeval.run import pipeline, recorder
from skyeval.scorers.pool import QUEUE_PER_WORKER


class Tracked(dict):
    """A problem dict that counts how many instances are alive."""

    live = 0
    peak = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        Tracked.live += 1
        Tracked.peak = max(Tracked.peak, Tracked.live)

    def __del__(self) -> None:
        Tracked.live -= 1


class SyntheticEnv(Env):
    """`count` problems whose answer is their index; the score waits for `gate` to exist."""

    name = "synthetic"

    def __init__(self, count: int, gate: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.count, self.gate = count, gate

    def load_rows(self) -> Iterator[dict[str, Any]]:
        for i in range(self.count):
            yield {"i": i}

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        return Tracked(id=f"p{row['i']}", question=f"q{row['i']}", expected=str(row["i"]))

    def reference_generation(self, problem: dict[str, Any]) -> str:
        return f"The answer is {problem['expected']}"

    def score_item(self, item: dict[str, Any]) -> dict[str, Any]:
        while self.gate and not Path(self.gate).exists():
            time.sleep(0.01)
        ok = item["generation"].endswith(" " + str(item["expected"]))
        return {"score": float(ok), "extracted": item["generation"].rsplit(" ", 1)[-1], "parse_failed": False}


class WindowBackend:
    """Pulls at most `window` requests ahead of the results it has yielded (like the HTTP backend)."""

    def __init__(self, window: int = 8, fail: set | None = None) -> None:
        self.window, self.fail, self.pulled = window, fail or set(), 0

    def generate(self, requests: Iterable[GenerationRequest], sampling: SamplingParams) -> Iterator[GenerationResult]:
        pending: list[GenerationRequest] = []
        source = iter(requests)
        while True:
            while len(pending) < self.window and (request := next(source, None)) is not None:
                self.pulled += 1
                pending.append(request)
            if not pending:
                return
            request = pending.pop(0)
            for idx in request.sample_indices:
                if (request.id, idx) in self.fail:
                    yield GenerationResult(request.id, idx, error="boom", error_type="ServerError")
                else:
                    yield GenerationResult(request.id, idx, generation=request.reference, finish_reason="stop")

    def describe(self) -> dict[str, Any]:
        return {"backend": "window"}

    def close(self) -> None:
        pass


def make_env(count: int, n: int, backend: WindowBackend, gate: str | None = None) -> SyntheticEnv:
    env = SyntheticEnv(count, gate=gate)
    env.sampling = SamplingParams(n=n)
    env.backend = backend
    return env


def lines(folder: RunFolder, kind: str) -> int:
    return sum(1 for _ in folder.records(kind))


def test_scoring_overlaps_generation_and_a_slow_scorer_only_stalls_it_once_the_queue_is_full(tmp_path):
    gate = tmp_path / "open"
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    env = make_env(400, 1, WindowBackend(), gate=str(gate))
    pool = pipeline.scoring_pool(env, 1)
    done: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: done.update(outcome=pipeline.run(env, folder, "evaluate", pool=pool)))
    thread.start()
    try:
        assert pool.held_back.wait(300)  # the queue is full: generation waits for room
        generated = lines(folder, "generations")
        assert lines(folder, "scores") == 0  # the scorer is still blocked...
        # ...with the queue's items in flight, and the one being submitted written already
        assert pool.queue_size <= generated <= pool.queue_size + 1 < 400
    finally:
        gate.touch()
        thread.join(300)
        pool.close()
    outcome = done["outcome"]
    assert outcome.scored == 400 and outcome.failed == 0
    assert outcome.metrics_summary["accuracy"] == 1.0


def test_driver_holds_a_window_of_problems_not_the_run(tmp_path):
    Tracked.live = Tracked.peak = 0
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    backend = WindowBackend(window=8)
    env = make_env(3000, 2, backend)
    held = []
    original = recorder.Recorder.score

    def spy(self, record, write=True):
        original(self, record, write)
        held.append(self.metrics.held)

    recorder.Recorder.score = spy
    try:
        outcome = pipeline.run(env, folder, "evaluate", score_workers=2)
    finally:
        recorder.Recorder.score = original
    assert outcome.scored == 6000
    # problems alive at once: the backend's window plus the scoring queue's, never the 3000
    queue_problems = QUEUE_PER_WORKER * 2 // 2
    assert Tracked.peak <= backend.window + queue_problems + 4
    assert max(held) <= 2 * (queue_problems + backend.window)  # the accumulator's open samples


def test_resume_scores_what_a_crash_left_unscored_and_drops_superseded_failures(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    # an earlier run: 3 problems x 2 samples generated, one scored, one failed generating
    with folder.writer("generations") as gen:
        for pid in ("p0", "p1", "p2"):
            for i in range(2):
                if (pid, i) != ("p2", 1):
                    gen.write({"id": pid, "sample_idx": i, "generation": f"The answer is {pid[1]}", "finish_reason": "stop"})
    with folder.writer("scores") as scores:
        scores.write({"id": "p0", "sample_idx": 0, "score": 1.0, "extracted": "0", "parse_failed": False})
    with folder.writer("failures") as failures:
        failures.write({"id": "p2", "sample_idx": 1, "stage": "generate", "error_type": "ServerError", "message": "x"})
        failures.write({"id": "p9", "sample_idx": 0, "stage": "generate", "error_type": "ServerError", "message": "x"})
    backend = WindowBackend()
    env = make_env(3, 2, backend)
    outcome = pipeline.run(env, folder, "evaluate", retry_failures=True)
    assert backend.pulled == 1  # only p2's failed sample was generated again
    assert outcome.scored == 6 and outcome.failed == 0 and outcome.resumed == 5  # generated before
    keys = sorted((r["id"], r["sample_idx"]) for r in folder.records("scores"))
    assert keys == [(p, i) for p in ("p0", "p1", "p2") for i in range(2)]
    # the retried failure is gone; p9 (outside this run) stays on disk but is not counted
    assert [(r["id"], r["sample_idx"]) for r in folder.records("failures")] == [("p9", 0)]


def test_failures_count_as_wrong_and_only_this_runs_samples_count(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    fail = {("p0", 1), ("p1", 3)}
    outcome = pipeline.run(make_env(4, 4, WindowBackend(fail=fail)), folder, "evaluate")
    summary = outcome.summary("evaluate")
    assert summary["counts"] == {"problems": 4, "samples": 16, "generated": 14, "scored": 14, "failed": 2,
                                 "missing": 0, "resumed": 0}
    assert summary["metrics"]["accuracy"] == 14 / 16
    assert summary["metrics"]["accuracy_scored_only"] == 1.0
    # the same folder at n=2: p1#3 is outside it and not counted; p0#1 still is
    again = pipeline.run(make_env(4, 2, WindowBackend()), folder, "evaluate").summary("evaluate")
    assert again["counts"]["failed"] == 1 and again["counts"]["samples"] == 8
    assert again["metrics"]["accuracy"] == 7 / 8


def test_score_stage_replaces_scores_and_needs_no_backend(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    pipeline.run(make_env(5, 2, WindowBackend()), folder, "generate")
    assert lines(folder, "scores") == 0 and lines(folder, "generations") == 10
    env = make_env(5, 2, backend=None)
    for _ in range(2):  # re-scoring twice never duplicates a score
        outcome = pipeline.run(env, folder, "score")
        assert outcome.scored == 10 and lines(folder, "scores") == 10
    per_problem = [json.loads(line) for p in folder.dir("scores").glob("*per_problem*") for line in p.open()]
    assert sorted(r["id"] for r in per_problem) == [f"p{i}" for i in range(5)]


class UnloadableEnv(SyntheticEnv):
    """Its scoring workers cannot start while `broken` exists: unpickling it there fails."""

    def __init__(self, count: int, broken: str, **kwargs: Any) -> None:
        super().__init__(count, **kwargs)
        self.broken = broken

    def __setstate__(self, state: dict[str, Any]) -> None:
        if Path(state["broken"]).exists():
            raise RuntimeError("scoring worker cannot load its env")
        self.__dict__.update(state)


def test_samples_the_pool_could_not_score_fail_as_infrastructure_and_the_rerun_scores_them(tmp_path):
    broken = tmp_path / "broken"
    broken.touch()
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    env = UnloadableEnv(3, str(broken))
    env.sampling, env.backend = SamplingParams(n=2), WindowBackend()
    outcome = pipeline.run(env, folder, "evaluate", score_workers=2)
    assert outcome.scored == 0 and outcome.failed == 6  # never a score of 0
    failures = list(folder.records("failures"))
    assert {(r["stage"], r["error_type"]) for r in failures} == {("score", "infrastructure")}
    assert "cannot load its env" in failures[0]["message"]
    broken.unlink()
    backend = WindowBackend()
    env = UnloadableEnv(3, str(broken))
    env.sampling, env.backend = SamplingParams(n=2), backend
    again = pipeline.run(env, folder, "evaluate", score_workers=2)
    assert backend.pulled == 0  # re-scored, not re-generated
    assert again.scored == 6 and again.failed == 0 and again.metrics_summary["accuracy"] == 1.0
    assert list(folder.records("failures")) == []
