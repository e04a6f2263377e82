"""The pipeline with a backend that records on its workers (the Ray backend's
`generate_recorded`): the driver writes no sample records, only counts the notes, and a
worker lost mid-block stops the run so that the same command resumes it, every sample once.

The backend here opens the `WorkerSink` in-process, as one Ray writer does; the real
two-node cluster is in tests/test_ray_cluster.py (where which way a lost node goes depends
on timing: here the loss is placed exactly)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Iterator

import pytest

from skyeval.backends.base import GenerationRequest, GenerationResult, SamplingParams
from skyeval.errors import ClusterError, RunFolderError
from skyeval.results import RunFolder, Shard, key_of
from skyeval.run import pipeline
from skyeval.run.records import WorkerSink

from .test_pipeline import make_env


class RecordingBackend:
    """Generates the reference answer and hands each result to the sink where it was
    made, as `RayBackend.generate_recorded` does. With `lose_after`, the worker dies after
    writing that many results plus one, whose notes never reach the driver."""

    def __init__(self, lose_after: int | None = None) -> None:
        self.lose_after = lose_after

    def generate_recorded(self, requests: Iterable[GenerationRequest], sampling: SamplingParams,
                          sink: WorkerSink) -> Iterator[dict[str, Any]]:
        writer = sink.open("node1234-1")
        written = 0
        try:
            for request in requests:
                for idx in request.sample_indices:
                    notes = writer.write(GenerationResult(request.id, idx, generation=request.reference),
                                         request.problem)
                    written += 1
                    if self.lose_after is not None and written > self.lose_after:
                        raise ClusterError("a Ray node or worker was lost mid-run (in a test)")
                    yield from notes
        finally:
            writer.close()

    def generate(self, requests: Any, sampling: Any) -> Any:
        raise AssertionError("the pipeline must record on the workers")

    def describe(self) -> dict[str, Any]:
        return {"backend": "recording"}

    def close(self) -> None:
        pass


def _claimed(path) -> RunFolder:
    folder = RunFolder(path)
    folder.claim({})
    return folder


def test_the_workers_write_and_score_and_the_driver_only_counts(tmp_path):
    folder = _claimed(tmp_path / "run")
    outcome = pipeline.run(make_env(30, 2, RecordingBackend()), folder, "evaluate")
    assert (outcome.scored, outcome.failed, outcome.generated) == (60, 0, 60)
    assert outcome.metrics_summary["accuracy"] == 1.0
    for kind in ("generations", "scores"):
        names = {p.name for p in folder.parts(kind) if not p.name.startswith("per_problem")}
        assert names == {"wnode1234-1-part-00000.jsonl"}  # the worker's; none of the driver's
    assert {p.name for p in folder.parts("scores") if p.name.startswith("per_problem")} == {"per_problem-part-00000.jsonl"}
    score = next(folder.records("scores"))
    assert score["score"] == 1.0 and not {"generation", "prompt", "reasoning"} & set(score)
    generation = next(folder.records("generations"))
    assert generation["generation"].startswith("The answer is") and generation["prompt"]


def test_generate_writes_generations_only(tmp_path):
    folder = _claimed(tmp_path / "run")
    outcome = pipeline.run(make_env(10, 1, RecordingBackend()), folder, "generate")
    assert outcome.generated == 10 and not list(folder.records("scores"))


def test_a_writer_lost_mid_block_stops_the_run_and_the_same_command_resumes_it(tmp_path):
    folder = _claimed(tmp_path / "run")
    stopped = pipeline.run(make_env(20, 2, RecordingBackend(lose_after=7)), folder, "evaluate")
    assert stopped.interrupted and isinstance(stopped.lost, ClusterError)
    assert stopped.summary("evaluate")["status"] == "interrupted"
    assert "lost mid-run" in stopped.summary("evaluate")["stopped_by"]
    assert stopped.scored == 7  # the notes that reached the driver...
    assert sum(1 for _ in folder.records("scores")) == 8  # ...and one more the worker wrote

    resumed = pipeline.run(make_env(20, 2, RecordingBackend()), folder, "evaluate")
    assert not resumed.interrupted and (resumed.scored, resumed.failed, resumed.resumed) == (40, 0, 8)
    assert resumed.metrics_summary["accuracy"] == 1.0
    ended = Counter(key_of(r) for kind in ("scores", "failures") for r in folder.records(kind))
    assert len(ended) == 40 and set(ended.values()) == {1}
    assert set(Counter(key_of(r) for r in folder.records("generations")).values()) == {1}


def test_a_run_stopped_on_the_workers_counts_its_whole_selection(tmp_path):
    """A cluster backend reads a segment ahead, so when it stops (a lost writer, Ctrl-C) the
    driver has not read every problem: the summary still counts the whole selection, the
    samples never reached as missing. A shard counts its own problems."""
    for shard in (Shard(), Shard(1, 3)):
        folder = _claimed(tmp_path / f"run-{shard.index}")
        env = make_env(30, 2, RecordingBackend(lose_after=5))
        selected = sum(shard.owns(str(p["id"])) for p in env.iter_problems())
        counts = pipeline.run(env, folder, "evaluate", shard=shard).summary("evaluate")["counts"]
        assert counts["problems"] == selected and counts["samples"] == 2 * selected
        assert counts["scored"] == 5 and counts["missing"] == 2 * selected - 5


def test_a_folder_the_worker_cannot_see_is_one_clear_error(tmp_path):
    with pytest.raises(RunFolderError, match="shared filesystem"):
        WorkerSink(str(tmp_path / "elsewhere")).open("node1234-1")
