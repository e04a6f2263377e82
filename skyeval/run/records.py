"""The records of one sample, built alike on the driver and on a cluster's workers.

The driver is `skyeval.run.pipeline`; on a cluster `WorkerSink` lets the Ray backend
write and score where it generates.

A generation record is the result with its prompt and `prompt_hash`. A score record
leaves the texts out (they are in generations/ and the dataset, joined by key) and keeps
`prompt_hash` and `gold_hash` (what it was scored against): a resume reuses a record only
when these still match the problem. A failure record says where
the sample failed, why, and holds the input needed to retry it.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from skyeval.backends.base import GenerationResult
from skyeval.envs.base import Env, RowScorer
from skyeval.errors import RunFolderError
from skyeval.results import KINDS, PartWriter, RunFolder, content_hash

GENERATE_STAGES = ("load", "template", "generate")  # failures that leave no generation
_NOT_IN_SCORES = ("prompt", "solution", "tests_json", "problem", "generation", "reasoning", "score_error", "transcript")


def failure(problem_id: str, sample_idx: int, stage: str, error_type: str, message: str, **retry: Any) -> dict[str, Any]:
    """A failure record: where it failed, why, and the input needed to retry it."""
    return {"id": problem_id, "sample_idx": sample_idx, "stage": stage, "error_type": error_type,
            "message": message[:2000], **retry}


def generated(result: GenerationResult, prompt: Any) -> tuple[str, dict[str, Any]]:
    """("generations", record) for a generated sample, ("failures", record) for a failed one.
    A generation keeps its rendered prompt and that prompt's hash (`prompt_hash`)."""
    if result.ok:
        record = {k: v for k, v in result.to_dict().items() if k not in ("error", "error_type")}
        return "generations", {**record, "prompt": prompt, "prompt_hash": content_hash(prompt)}
    return "failures", failure(result.id, result.sample_idx, "generate", result.error_type or "Error",
                               result.error or "", prompt=prompt)


def scored(row: dict[str, Any], outcome: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """("scores", record) for a scored row (`RowScorer.outcome`), ("failures", record) when
    it could not be scored: `error_type` "infrastructure" when the scoring pool, not the
    sample, was at fault (`outcome["infrastructure"]`), so that a re-run scores it again."""
    if outcome.get("score_error"):
        error_type = "infrastructure" if outcome.get("infrastructure") else "ScorerError"
        return "failures", failure(row["id"], row["sample_idx"], "score", error_type, outcome["score_error"])
    keep = {k: v for k, v in row.items() if k not in _NOT_IN_SCORES}
    return "scores", {**keep, **{k: v for k, v in outcome.items() if k != "score_error"}}


def shared_writer(folder: RunFolder, kind: str, prefix: str) -> PartWriter:
    """A part writer for a folder other processes write at the same time (shards, cluster
    workers): they update its manifest.json in turn."""
    writer = folder.writer(kind, prefix)
    note = writer.on_close

    def in_turn(path: Any, records: int) -> None:
        with folder.waiting_lock("manifest"):
            note(path, records)

    writer.on_close = in_turn
    return writer


@dataclass
class WorkerSink:
    """What a cluster worker does with each result: write its generation, score it when
    `env` is set (`evaluate`), and write the score or failure, all to part files of its own
    (`<prefix>w<worker>-part-NNNNN.jsonl`) in the shared run folder. The driver gets
    back notes: the score and failure records without texts, and the keys generated."""

    folder: str
    prefix: str = ""
    env: Env | None = None

    def open(self, worker: str) -> "SampleWriter":
        """Start writing in this process; `worker` names it uniquely (node and pid)."""
        return SampleWriter(self, worker)


class SampleWriter:
    """A `WorkerSink` opened in one worker process."""

    def __init__(self, sink: WorkerSink, worker: str) -> None:
        folder = RunFolder(sink.folder)
        if not folder.run_file.exists():
            raise RunFolderError(f"run folder {folder.path} is not visible on {socket.gethostname()}: every "
                                 "Ray node must see logging.results_dir at the same path (a shared filesystem)")
        self.writers = {kind: shared_writer(folder, kind, f"{sink.prefix}w{worker}-") for kind in KINDS}
        self.scorer = RowScorer(sink.env) if sink.env is not None else None

    def write(self, result: GenerationResult, problem: dict[str, Any]) -> list[dict[str, Any]]:
        """Record one result; returns its notes for the driver."""
        return self.write_all([(result, problem)])

    def write_all(self, results: list[tuple[GenerationResult, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Record a block of results: every generation (or failure) is written first, then
        they are scored, so no received answer waits on the scoring of another. Returns
        their notes for the driver."""
        notes, to_score = [], []
        for result, problem in results:
            kind, record = generated(result, problem.get("prompt"))
            self.writers[kind].write(record)
            if kind == "failures":
                notes.append({"kind": kind, **{k: v for k, v in record.items() if k != "prompt"}})
                continue
            notes.append({"kind": kind, "id": result.id, "sample_idx": result.sample_idx, "usage": result.usage})
            if self.scorer is not None:
                to_score.append({**problem, **{k: v for k, v in record.items() if k != "prompt"}})
        for row in to_score:
            kind, record = scored(row, self.scorer.outcome(row))
            self.writers[kind].write(record)
            notes.append({"kind": kind, **record})
        return notes

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()

