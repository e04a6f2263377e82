"""read -> template -> generate -> score -> metrics -> run folder, as one bounded stream.

Problems are read lazily and handed to the backend as a generator; each result is written
to a part file as it completes and, for `evaluate`, scored on a pool of worker processes
while generation goes on (a bounded queue: a slow scorer holds generation back only once
the queue is full). A cluster backend (ray: `generate_recorded`) writes and scores on its
workers instead (`skyeval.records.WorkerSink`), and the driver counts the notes they send
back. Metrics accumulate incrementally. Memory is O(in-flight window), never O(samples):
resume looks up 8-byte key hashes, not records.

Every sample (problem id x sample index) ends in exactly one of scores/ or failures/.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
import time
from array import array
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from skyeval.backends.base import GenerationRequest, GenerationResult
from skyeval.envs.base import Env, RowScorer
from skyeval.errors import ClusterError
from skyeval.metrics import MetricsAccumulator
from skyeval.records import GENERATE_STAGES, WorkerSink, failure, generated, scored, shared_writer
from skyeval.results import KeySet, PartWriter, RunFolder, key_hash, key_of, read_jsonl, write_rows

log = logging.getLogger("skyeval")

STAGES = ("evaluate", "generate", "score")
SCORE_BATCH = 32  # samples per task sent to a scoring worker


@dataclass
class Shard:
    """This process handles the problems whose id hashes to `index` modulo `count`."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        from skyeval.errors import ConfigError

        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(f"shard.index must be in [0, shard.count), got index={self.index} count={self.count}")

    @property
    def active(self) -> bool:
        return self.count > 1

    def owns(self, problem_id: str) -> bool:
        return not self.active or key_hash((problem_id, -1)) % self.count == self.index

    @property
    def prefix(self) -> str:
        """Part files of this shard start with it: each shard writes only its own."""
        return f"shard-{self.index:05d}-" if self.active else ""

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}-of-{self.count:05d}"


@dataclass
class Outcome:
    """What a run produced, for summary.json."""

    metrics: MetricsAccumulator
    problems: int = 0
    samples: int = 0
    generated: int = 0
    scored: int = 0
    failed: int = 0
    resumed: int = 0
    failures_by_stage: Counter = field(default_factory=Counter)
    interrupted: bool = False
    lost: ClusterError | None = None  # the run stopped because the cluster lost a node or worker
    metrics_summary: dict[str, Any] = field(default_factory=dict)

    def summary(self, stage: str) -> dict[str, Any]:
        """Counts, status and metrics (accounting: samples == scored + failed + missing)."""
        missing = self.samples - self.failed - (self.scored if stage != "generate" else self.generated)
        status = "interrupted" if self.interrupted else ("complete_with_failures" if self.failed else "complete")
        return {
            "status": status,
            **({"stopped_by": str(self.lost)} if self.lost else {}),
            "counts": {"problems": self.problems, "samples": self.samples, "generated": self.generated,
                       "scored": self.scored, "failed": self.failed, "missing": max(missing, 0),
                       "resumed": self.resumed},
            "failures_by_stage": dict(self.failures_by_stage),
            "metrics": self.metrics_summary,
        }


class _Earlier:
    """Keys of what earlier runs left in the folder (hashes only), and the files they are in."""

    def __init__(self, folder: RunFolder, stage: str) -> None:
        self.parts = {kind: folder.parts(kind) for kind in ("generations", "scores", "failures")}
        rescore = stage == "score"
        self.generated = KeySet(key_of(r) for r in folder.records("generations"))
        self.scored = KeySet(() if rescore else (key_of(r) for r in folder.records("scores")))
        fails = [(key_of(r), r.get("stage") in GENERATE_STAGES) for r in folder.records("failures")
                 if not (rescore and r.get("stage") == "score")]
        self.failed_generating = KeySet(k for k, gen in fails if gen)
        self.failed_scoring = KeySet(k for k, gen in fails if not gen)

    @property
    def empty(self) -> bool:
        return not (len(self.generated) or len(self.scored) or len(self.failed_generating) or len(self.failed_scoring))


class _Recorder:
    """The one place records are written and counted (thread-safe: the backend may pull
    requests, and scoring results arrive, on other threads). `write=False` counts a record
    a cluster worker wrote."""

    def __init__(self, folder: RunFolder, shard: Shard, metrics: MetricsAccumulator, progress: "Progress",
                 shared: bool) -> None:
        self.lock = threading.RLock()
        writer = shared_writer if shared else RunFolder.writer  # shared: shards or cluster workers write too
        self.generations = writer(folder, "generations", shard.prefix)
        self.scores = writer(folder, "scores", shard.prefix)
        self.failures = writer(folder, "failures", shard.prefix)
        # per_problem first: readers tell per-problem rows from score records by that prefix
        self.per_problem = writer(folder, "scores", "per_problem-" + shard.prefix)
        self.metrics, self.progress = metrics, progress
        # keys written by this run, as 8-byte hashes: only needed to reconcile with earlier runs' records
        self.new_scored, self.new_failed, self.new_generated = array("Q"), array("Q"), array("Q")
        self.track_keys = True
        self.failures_by_stage: Counter = Counter()

    def generation(self, record: dict[str, Any], write: bool = True) -> None:
        with self.lock:
            if write:
                self.generations.write(record)
            if self.track_keys:
                self.new_generated.append(key_hash(key_of(record)))
            self.progress.update(generated=1)

    def score(self, record: dict[str, Any], write: bool = True) -> None:
        with self.lock:
            if write:
                self.scores.write(record)
            if self.track_keys:
                self.new_scored.append(key_hash(key_of(record)))
            self.metrics.add_score(record)
            self._drain()
            self.progress.update(scored=1)

    def failure(self, record: dict[str, Any], write: bool = True) -> None:
        with self.lock:
            if write:
                self.failures.write(record)
            if self.track_keys:
                self.new_failed.append(key_hash(key_of(record)))
            self.count_failure(record)

    def count_failure(self, record: dict[str, Any]) -> None:
        with self.lock:
            self.metrics.add_failure(record)
            self.failures_by_stage[record["stage"]] += 1
            self._drain()
            self.progress.update(failed=1)

    def _drain(self) -> None:
        for row in self.metrics.drain_problems():
            self.per_problem.write(row)

    def close(self) -> None:
        """Per-problem rows of the problems still open (missing samples) too, then close the parts."""
        with self.lock:
            for row in self.metrics.drain_problems(final=True):
                self.per_problem.write(row)
            for writer in (self.generations, self.scores, self.failures, self.per_problem):
                writer.close()


class ScorePool:
    """`env.score_item` on worker processes (one per core), fed in batches from a bounded
    queue: `submit` blocks only when `max_batches` batches are in flight."""

    def __init__(self, env: Env, on_done: Any, workers: int | None = None) -> None:
        import multiprocessing

        self.workers = workers or max(1, len(os.sched_getaffinity(0)))
        self.on_done = on_done
        self._slots = threading.BoundedSemaphore(2 * self.workers)
        self._pending: list[Future] = []
        self._batch: list[dict[str, Any]] = []
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_init_worker, initargs=(env, sys.path, os.getpid()))

    def submit(self, row: dict[str, Any]) -> None:
        self._batch.append(row)
        if len(self._batch) >= SCORE_BATCH:
            self.flush()

    def flush(self) -> None:
        if not self._batch:
            return
        batch, self._batch = self._batch, []
        self._slots.acquire()
        future = self._pool.submit(_score_batch, batch)
        future.add_done_callback(lambda f, rows=batch: self._done(f, rows))
        self._pending = [f for f in self._pending if not f.done()] + [future]

    def _done(self, future: Future, rows: list[dict[str, Any]]) -> None:
        if future.cancelled():  # interrupted: these samples are scored on resume
            self._slots.release()
            return
        try:
            results = future.result()
        except Exception as err:  # noqa: BLE001 - a worker died: its samples fail, the run goes on
            results = [{"score": None, "score_error": f"{type(err).__name__}: scoring worker died: {err}"}] * len(rows)
        finally:
            self._slots.release()
        for row, result in zip(rows, results):
            self.on_done(row, result)

    def close(self, cancel: bool = False) -> None:
        if not cancel:
            self.flush()
            for future in list(self._pending):
                future.exception()  # wait; errors were turned into failures by _done
        self._pool.shutdown(wait=True, cancel_futures=cancel)


_WORKER_ENV: Env | None = None


def _init_worker(env: Env, path: list[str], driver: int) -> None:
    global _WORKER_ENV
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    threading.Thread(target=_exit_with, args=(driver,), daemon=True).start()
    sys.path[:] = path
    _WORKER_ENV = env
    logging.getLogger("skyeval").setLevel(logging.WARNING)


def _exit_with(driver: int) -> None:
    """A worker outlives a SIGKILLed driver otherwise (it holds its own queue's write end)."""
    while os.getppid() == driver:
        time.sleep(1.0)
    os._exit(1)


def _score_batch(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Score rows in a worker; an unscorable row or a scorer that raises marks its sample
    (a score-stage failure), never the batch."""
    scorer = RowScorer(_WORKER_ENV)
    return [scorer.outcome(row) for row in rows]


class Progress:
    """Generated / scored / failed with rate and ETA: a live bar on a TTY, else a log line
    every `every_s` seconds."""

    def __init__(self, stage: str, total: int | None = None, every_s: float = 10.0) -> None:
        self.stage, self.total, self.every_s = stage, total, every_s
        self.counts = Counter()
        self.start = self._last = time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=stage, unit="sample", dynamic_ncols=True)

    def update(self, **delta: int) -> None:
        self.counts.update(delta)
        done_key = "generated" if self.stage == "generate" else "scored"
        finished = delta.get(done_key, 0) + delta.get("failed", 0)
        if self.bar is not None:
            self.bar.update(finished)
            self.bar.set_postfix_str(self.line(), refresh=False)
        elif time.monotonic() - self._last >= self.every_s:
            self._last = time.monotonic()
            log.info("progress: %s", self.line())

    def line(self) -> str:
        c, elapsed = self.counts, max(time.monotonic() - self.start, 1e-9)
        done = c["generated" if self.stage == "generate" else "scored"] + c["failed"]
        text = f"generated {c['generated']}, scored {c['scored']}, failed {c['failed']} | {done / elapsed:.0f}/s"
        if self.total and done:
            text += f", ETA {max(self.total - done, 0) * elapsed / done:.0f}s"
        return text

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(env: Env, folder: RunFolder, stage: str, *, retry_failures: bool = False, shard: Shard | None = None,
        metrics: MetricsAccumulator | None = None, score_workers: int | None = None) -> Outcome:
    """Run `evaluate` or `generate` (or `score`: re-score saved generations) into `folder`,
    resuming whatever earlier runs of the same config left there."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    shard = shard or Shard()
    n = env.sampling.n
    earlier = _Earlier(folder, stage)
    # rewritten from this run's tallies: a shard's own rows, or every row for a whole-folder run
    old_per_problem = list(folder.dir("scores").glob(f"per_problem-{shard.prefix}part-*.jsonl" if shard.active
                                                      else "per_problem-*.jsonl"))
    staging = folder.path / "scores.rescoring"  # the `score` stage's new scores, swapped in at the end
    shutil.rmtree(staging, ignore_errors=True)
    progress = Progress(stage, total=env.limit * n // shard.count if env.limit is not None else None)
    outcome = Outcome(metrics=metrics or MetricsAccumulator(n, max_tokens=env.sampling.max_tokens))
    # a cluster backend (ray) writes and scores on its workers; the driver counts their notes
    on_workers = stage != "score" and hasattr(env.backend, "generate_recorded")
    recorder = _Recorder(folder, shard, outcome.metrics, progress, shared=shard.active or on_workers)
    recorder.track_keys = not earlier.empty
    if stage == "score":
        recorder.scores = PartWriter(staging, shard.prefix + "part")
    members = array("Q")  # hashes of this run's problem ids, to count earlier records
    in_flight: dict[str, list] = {}  # id -> [templated problem, samples still to come]
    rescore: dict[str, dict[str, Any]] = {}  # problems whose saved generations still need scoring

    def record(kind: str, record: dict[str, Any], write: bool = True) -> None:
        getattr(recorder, {"generations": "generation", "scores": "score", "failures": "failure"}[kind])(record, write)

    def score_pool() -> ScorePool:
        return ScorePool(env, lambda row, result: record(*scored(row, result)), score_workers)

    pool = score_pool() if stage != "generate" and not on_workers else None

    def bad_row(index: int, err: Exception) -> None:
        pid = f"row-{index}"
        if not shard.owns(pid):
            return
        log.warning("row %d of %s is malformed: %s: %s", index, env.name, type(err).__name__, err)
        with recorder.lock:
            outcome.problems += 1
            if not earlier.empty:
                members.append(key_hash((pid, -1)))
        for i in range(n):
            if not _done(earlier, (pid, i), stage, retry_failures):
                recorder.failure(failure(pid, i, "load", type(err).__name__, str(err), row_index=index))

    def requests() -> Iterator[GenerationRequest]:
        """Pulled lazily by the backend: one request per problem with samples to generate."""
        for problem in env.iter_problems(on_error=bad_row):
            pid = str(problem["id"])
            if not shard.owns(pid):
                continue
            with recorder.lock:
                outcome.problems += 1
                if not earlier.empty:  # only earlier records need counting by membership
                    members.append(key_hash((pid, -1)))
            wanted = [] if not earlier.empty else (list(range(n)) if stage != "score" else [])
            for i in range(n) if not earlier.empty else ():
                key = (pid, i)
                generated_before, done = key in earlier.generated, _done(earlier, key, stage, retry_failures)
                outcome.generated += generated_before
                outcome.resumed += generated_before or done  # an earlier run's work, not repeated
                if done:
                    continue
                if generated_before:
                    rescore[pid] = problem
                elif stage != "score":
                    wanted.append(i)
            if not wanted:
                continue
            try:
                templated = env.apply_prompt_template_on_item(problem)
                request = env.request_for(templated, wanted)
            except Exception as err:  # noqa: BLE001 - one bad record never aborts the run
                for i in wanted:
                    recorder.failure(failure(pid, i, "template", type(err).__name__, str(err)))
                continue
            if on_workers:
                request.problem = templated
            else:
                with recorder.lock:
                    in_flight[pid] = [templated, len(wanted)]
            yield request

    def on_result(result: GenerationResult) -> None:
        entry = in_flight.get(result.id)
        kind, rec = generated(result, entry[0].get("prompt") if entry else None)
        record(kind, rec)
        if result.ok:
            outcome.generated += 1
            if pool is not None and entry is not None:
                pool.submit({**entry[0], **{k: v for k, v in rec.items() if k != "prompt"}})
        else:
            log.warning("sample %s#%d failed: %s: %s", result.id, result.sample_idx, result.error_type, result.error)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                with recorder.lock:
                    in_flight.pop(result.id, None)

    try:
        if stage == "score":
            for _ in requests():  # nothing to generate: this walks the problems
                pass
        elif on_workers:
            sink = WorkerSink(str(folder.path), shard.prefix, env if stage == "evaluate" else None)
            try:
                for note in env.backend.generate_recorded(requests(), env.sampling, sink):
                    kind = note.pop("kind")
                    record(kind, note, write=False)
                    outcome.generated += kind == "generations"
                    if kind == "failures" and note["stage"] == "generate":
                        log.warning("sample %s#%d failed: %s: %s", note["id"], note["sample_idx"],
                                    note["error_type"], note["message"])
            finally:
                env.backend.close()
        else:
            try:
                for result in env.backend.generate(requests(), env.sampling):
                    on_result(result)
            finally:
                env.backend.close()
        if rescore and stage != "generate":
            pool = pool or score_pool()
            _rescore(earlier, rescore, n, stage, retry_failures, pool)
    except KeyboardInterrupt:
        outcome.interrupted = True
        log.warning("interrupted: finished samples are saved; re-run the same command to resume")
    except ClusterError as err:
        outcome.interrupted, outcome.lost = True, err
        log.error("%s", err)
    finally:
        if pool is not None:
            pool.close(cancel=outcome.interrupted)
        progress.close()

    if stage == "score" and not outcome.interrupted:
        _replace_scores(folder, staging)
    _account(earlier, recorder, outcome, KeySet(hashes=members), n, stage, shard)
    outcome.metrics_summary = outcome.metrics.summary() if stage != "generate" else {}
    recorder.close()
    for path in old_per_problem:
        path.unlink(missing_ok=True)
    log.info("%s %d samples of %d problems in %.1fs: %d scored, %d failed", stage,
             outcome.samples, outcome.problems, time.monotonic() - progress.start, outcome.scored, outcome.failed)
    if outcome.problems == 0:
        log.warning("env %s has no problems%s: nothing to do", env.name,
                    f" (env.limit={env.limit})" if env.limit is not None else "")
    return outcome


def _done(earlier: _Earlier, key: tuple[str, int], stage: str, retry_failures: bool) -> bool:
    """Whether an earlier run finished this sample for `stage` (its records are counted later)."""
    if stage == "evaluate" and key in earlier.scored:
        return True
    if stage == "generate" and key in earlier.generated:
        return True
    if retry_failures:
        return False
    if key in earlier.failed_scoring and stage != "generate":
        return True
    return key in earlier.failed_generating and key not in earlier.generated


def _rescore(earlier: _Earlier, problems: dict[str, dict], n: int, stage: str, retry_failures: bool,
             pool: ScorePool) -> None:
    """Score saved generations that have no score yet (a crash between generating and
    scoring, or the `score` stage), streaming them from the earlier part files. Holds the
    problems concerned: all of them for the `score` stage."""
    log.info("scoring saved generations of %d problems", len(problems))
    for record in _records(earlier.parts["generations"]):
        key = key_of(record)
        problem = problems.get(key[0])
        if problem is not None and key[1] < n and not _done(earlier, key, stage, retry_failures):
            pool.submit({**problem, **record})


def _account(earlier: _Earlier, recorder: _Recorder, outcome: Outcome, members: KeySet, n: int, stage: str,
             shard: Shard) -> None:
    """Count what earlier runs left for this run's samples, and drop failure records that a
    later success (or a newer failure of the same sample) superseded. A shard rewrites only
    its own part files: the other shards may be writing theirs right now."""
    fresh = earlier.empty  # nothing earlier to count or supersede: skip the look-up sets
    new_scored = KeySet(hashes=() if fresh else recorder.new_scored)  # 8 bytes a key, sorted
    new_failed = KeySet(hashes=() if fresh else recorder.new_failed)
    new_generated = KeySet(hashes=() if fresh else recorder.new_generated)

    def ours(key: tuple[str, int]) -> bool:
        return key[1] < n and (key[0], -1) in members

    def superseded(record: dict[str, Any]) -> bool:
        key = key_of(record)
        if key in new_failed or key in new_scored or key in earlier.scored:
            return True
        if record.get("stage") in GENERATE_STAGES:
            return key in earlier.generated or key in new_generated
        return stage == "score"  # a re-score replaces every earlier score failure

    if stage == "evaluate":
        for record in _records(earlier.parts["scores"]):
            if ours(key_of(record)):
                with recorder.lock:
                    recorder.metrics.add_score(record)
                    recorder.progress.counts["scored"] += 1
    for path in earlier.parts["failures"]:
        dropped = False
        for record in read_jsonl(path):
            if superseded(record):
                dropped = True
                continue
            if ours(key_of(record)):
                recorder.count_failure(record)
        if dropped and path.name.startswith(shard.prefix):
            write_rows((r for r in read_jsonl(path) if not superseded(r)), path)
    outcome.failures_by_stage = recorder.failures_by_stage
    outcome.failed = sum(recorder.failures_by_stage.values())
    outcome.scored = recorder.progress.counts["scored"]
    outcome.samples = outcome.problems * n


def _replace_scores(folder: RunFolder, staging: Path) -> None:
    """The `score` stage's new scores replace the old ones."""
    for path in folder.parts("scores"):
        if "per_problem" not in path.name:
            path.unlink()
    for path in staging.glob("*.jsonl"):
        os.replace(path, folder.dir("scores") / path.name)
    shutil.rmtree(staging, ignore_errors=True)


def _records(paths: list[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        if "per_problem" not in path.name:
            yield from read_jsonl(path)
