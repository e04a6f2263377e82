"""read -> template -> generate -> score -> metrics -> run folder, as one bounded stream.

Problems are read lazily and handed to the backend as a generator; each result is written
to a part file as it completes and, for `evaluate`, scored on a pool of worker processes
while generation goes on (`skyeval.scorers.pool.ScorerPool`: a bounded queue, so a slow
scorer holds generation back only once the queue is full). A sample the pool could not
score (its workers could not start) fails with `error_type: infrastructure`, and the next
run of the same command scores it again. A cluster backend (ray: `generate_recorded`)
writes and scores on its workers instead (`skyeval.run.records.WorkerSink`), and the driver
counts the notes they send back. Metrics accumulate incrementally. Memory is O(in-flight
window), never O(samples): resume looks up 8-byte key hashes, not records.

Every sample (problem id x sample index) ends in exactly one of scores/ or failures/.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from skyeval.backends.base import GenerationRequest, GenerationResult
from skyeval.config.schema import STAGES
from skyeval.envs.base import Env, RowScorer
from skyeval.errors import ClusterError
from skyeval.grading import GradingConfig
from skyeval.metrics import MetricsAccumulator
from skyeval.results import KeySet, PartWriter, RunFolder, Shard, content_hash, key_hash, key_of
from skyeval.run.judging import RunJudging
from skyeval.run.logs import plural
from skyeval.run.recorder import Progress, Recorder
from skyeval.run.records import WorkerSink, failure, generated, scored
from skyeval.run.resume import EarlierRecords, account, replace_scores
from skyeval.run.signals import deferred
from skyeval.run.stopping import GracefulStop
from skyeval.scorers.pool import ItemFailure, ScorerPool

log = logging.getLogger("skyeval")

ITEM_TIMEOUT_S = 600.0  # a backstop per sample: scorers bound their own work (code tests, math-verify)
STOP_GRACE_S = 3.0  # after Ctrl-C: how long the answers already on their way are waited for and recorded
BAD_GOLDS_SHOWN = 20  # bad golds named one line each on the console (and in summary.json); the rest counted


def scoring_pool(env: Env, workers: int | None = None) -> ScorerPool:
    """A run's scoring pool: `RowScorer.outcome` of each row, on worker processes."""
    return ScorerPool(RowScorer(env).outcome, workers, item_timeout_s=ITEM_TIMEOUT_S)


@dataclass
class RunOutcome:
    """What a run produced, for summary.json."""

    metrics: MetricsAccumulator
    problems: int = 0
    samples: int = 0
    generated: int = 0
    scored: int = 0
    failed: int = 0
    resumed: int = 0
    unreadable_lines: int = 0  # torn lines found in the folder's record files (their samples redone)
    outside: int = 0  # earlier samples in the folder outside this run's selection: kept, not counted
    bad_golds: dict[str, str] = field(default_factory=dict)  # problems left out: their gold cannot grade (id -> why)
    failures_by_stage: Counter = field(default_factory=Counter)
    interrupted: bool = False
    lost: ClusterError | None = None  # the run stopped because the cluster lost a node or worker
    metrics_summary: dict[str, Any] = field(default_factory=dict)
    selection_counted: bool = True  # every problem of the selection is in `problems` (False: an interrupted count)
    grading: dict[str, Any] | None = None  # summary.json `grading` when a grading mode is on

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
            "records": {"unreadable_lines": self.unreadable_lines, "outside_selection": self.outside,
                        **({} if self.selection_counted else {"selection_counted": False}),
                        "bad_golds": len(self.bad_golds),
                        **({"bad_gold_examples": dict(list(self.bad_golds.items())[:BAD_GOLDS_SHOWN])}
                           if self.bad_golds else {})},
            "failures_by_stage": dict(self.failures_by_stage),
            "metrics": self.metrics_summary,
        }


def run(env: Env, folder: RunFolder, stage: str, *, retry_failures: bool = False, shard: Shard | None = None,
        metrics: MetricsAccumulator | None = None, score_workers: int | None = None,
        grading: GradingConfig | None = None, pool: ScorerPool | None = None,
        summary_dir: Path | None = None) -> RunOutcome:
    """Run `evaluate` or `generate` (or `score`: re-score saved generations) into `folder`,
    resuming whatever earlier runs of the same config left there. Scoring runs on `pool`
    when given (left open), else on a `scoring_pool(env, score_workers)` of its own.
    `grading` (a mode other than off) adds the judge step after scoring (`skyeval.run.judging`).
    `summary_dir`: where a smaller selection's per-problem rows go (`selections/<name>/`)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    return _Pipeline(env, folder, stage, retry_failures, shard or Shard(), metrics, score_workers, grading,
                     pool, summary_dir).run()


class RequestStream:
    """The requests a backend pulls. `ready()` (`skyeval.backends.base.ready_now`) is false
    while the scoring queue is full: the next request would wait for room, so an engine
    (vLLM) steps the requests it runs, and their answers are recorded, instead of waiting
    to top up."""

    def __init__(self, requests: Iterator[GenerationRequest], pool: ScorerPool | None) -> None:
        self.requests, self.pool = requests, pool

    def __iter__(self) -> RequestStream:
        return self

    def __next__(self) -> GenerationRequest:
        return next(self.requests)

    def ready(self) -> bool:
        return self.pool is None or self.pool.has_room()


class _Pipeline:
    """One run's state, and its steps: read the problems into requests, generate (here or
    on the cluster's workers), score, score what earlier runs generated, reconcile."""

    def __init__(self, env: Env, folder: RunFolder, stage: str, retry_failures: bool, shard: Shard,
                 metrics: MetricsAccumulator | None, score_workers: int | None,
                 grading: GradingConfig | None, pool: ScorerPool | None, summary_dir: Path | None) -> None:
        self.env, self.folder, self.stage, self.shard = env, folder, stage, shard
        self.retry_failures, self.score_workers, self.n = retry_failures, score_workers, env.sampling.n
        self.earlier = EarlierRecords(folder, stage)
        # rewritten from this run's tallies: a shard's own rows, or every row for a whole-folder run
        self.old_per_problem = list((summary_dir / "scores" if summary_dir else folder.dir("scores")).glob(
            f"per_problem-{shard.prefix}part-*.jsonl" if shard.active else "per_problem-*.jsonl"))
        self.staging = folder.path / "scores.rescoring"  # the `score` stage's new scores, swapped in at the end
        shutil.rmtree(self.staging, ignore_errors=True)
        self.progress = Progress(stage, total=env.limit * self.n // shard.count if env.limit is not None else None)
        self.outcome = RunOutcome(metrics=metrics or MetricsAccumulator(self.n, max_tokens=env.sampling.max_tokens,
                                                                         vote=getattr(env, "vote", None),
                                                                         unit_metrics=env.unit_metrics()))
        # a cluster backend (ray) writes and scores on its workers; the driver counts their notes
        self.on_workers = stage != "score" and hasattr(env.backend, "generate_recorded")
        self.recorder = Recorder(folder, shard, self.outcome.metrics, self.progress,
                                 shared=shard.active or self.on_workers, track_keys=not self.earlier.empty,
                                 summary_dir=summary_dir, count_generated_tokens=stage == "generate")
        self.summary_dir = summary_dir
        if stage == "score":
            self.recorder.scores = PartWriter(self.staging, shard.prefix + "part")
        self.members = array("Q")  # hashes of this run's problem ids, to count earlier records
        self.in_flight: dict[str, list] = {}  # id -> [templated problem, samples still to come]
        self.rescore: dict[str, dict[str, Any]] = {}  # problems whose saved generations still need scoring
        # earlier records made from another prompt or gold: dropped once replaced (8-byte key hashes)
        self.stale_generated, self.stale_scored = array("Q"), array("Q")
        self.changed: Counter = Counter()  # samples whose problem changed since the earlier run, by what
        judged = grading is not None and grading.active and stage != "generate"
        self.judged = judged or stage == "generate"  # what a judge may grade is not a bad gold (generate: no grader yet)
        self.grading = grading if judged else None
        # what a score depends on beyond the rules: a score graded otherwise is graded again
        self.grading_hash = self.grading.scores_hash() if self.grading is not None else None
        self.judging = RunJudging(grading, folder, self.record_score, prefix=shard.prefix,
                                  grade_truncated=getattr(env, "grade_truncated", False)) if judged else None
        self.own_pool = pool is None
        self.pool = pool
        if pool is None and stage != "generate" and not self.on_workers:
            self.pool = scoring_pool(env, score_workers)
        self.unscorable = 0  # samples the pool could not score (infrastructure)
        self.last_failure: tuple[str, str | None, str | None] | None = None  # the last one printed
        self.stop = GracefulStop(STOP_GRACE_S)  # Ctrl-C while generating: stop sending, record what is on its way
        # how far the pass over the problems got (problems, bad rows, bad golds, in data order): an
        # interrupted run counts the rest (`count_rest`); `walk_closed` ends the pass
        self.walked, self.walk_closed, self.walk_done = 0, False, False

    def run(self) -> RunOutcome:
        try:
            self.earlier.warn_unreadable(self.folder.path, self.stage)
            self.outcome.unreadable_lines = self.earlier.unreadable_lines
            if not self.earlier.empty and self.stage != "score":
                self.announce_resume()
            if self.stage == "score":
                for _ in self.requests():  # nothing to generate: this walks the problems
                    pass
            elif self.on_workers:
                self.generate_on_workers()
            else:
                self.generate_here()
            if self.rescore and self.stage != "generate":
                self.score_saved()
        except KeyboardInterrupt:
            self.outcome.interrupted = True
            log.warning("interrupted: finished samples are saved; re-run the same command to resume")
        except ClusterError as err:
            self.outcome.interrupted, self.outcome.lost = True, err
            log.error("%s", err)
        finally:
            self.stop_scoring()
            if self.judging is not None:
                self.judging.close(cancel=self.outcome.interrupted)
            self.progress.close()
        with deferred():  # a SIGTERM from here on waits until the run is saved (skyeval.run.signals)
            return self.finish()

    # ---- read and template ------------------------------------------------------------------
    def problems(self, on_bad_gold: Any = None) -> Iterator[dict[str, Any]]:
        """The env's problems this run selects, those of golds that cannot grade left out
        (told to `on_bad_gold`)."""
        return self.env.iter_problems(on_error=self.bad_row if on_bad_gold else lambda index, err: None,
                                      on_bad_gold=on_bad_gold or (lambda problem, why: None), judged=self.judged)

    def bad_gold(self, problem: dict[str, Any], why: str) -> None:
        """A problem whose gold cannot grade its samples: named, counted (summary.json
        `records.bad_golds`), and left out of the run and its headline."""
        pid = str(problem["id"])
        if not self._walked() or not self.shard.owns(pid):
            return
        self._note_bad_gold(pid, why)

    def _note_bad_gold(self, pid: str, why: str) -> None:
        self.outcome.bad_golds[pid] = why
        if len(self.outcome.bad_golds) <= BAD_GOLDS_SHOWN:
            log.warning("problem %s of %s: bad gold (%s): left out of the run (records.bad_golds)", pid,
                        self.env.name, why)

    def _walked(self) -> bool:
        """One more step of the pass over the problems; False once it is closed (stopped)."""
        with self.recorder.lock:
            if self.walk_closed:
                return False
            self.walked += 1
            return True

    def requests(self) -> Iterator[GenerationRequest]:
        """Pulled lazily by the backend: one request per problem with samples to generate.
        It waits while the scoring queue is full (back-pressure stops *sending*; answers
        received are recorded at once), and ends once the run is stopping (Ctrl-C)."""
        for problem in self.problems(self.bad_gold):
            if self.stop.stopping.is_set() or not self._walked():
                return
            pid = str(problem["id"])
            if not self.shard.owns(pid):
                continue
            self._count_problem(pid)
            templated, made, error = self._templated(problem)
            if self.stage != "generate":  # the problem's date, for its per-problem row and by_month
                with self.recorder.lock:
                    self.outcome.metrics.note_date(pid, self.env.date_of(problem))
                    self.outcome.metrics.note_units(pid, self.env.units(problem))
            wanted = self._wanted(pid, templated or problem, made)
            if not wanted:
                continue
            try:
                if error is not None:
                    raise error
                request = self.env.request_for(templated, wanted)
            except Exception as err:  # noqa: BLE001 - one bad record never aborts the run
                for i in wanted:
                    self.recorder.failure(failure(pid, i, "template", type(err).__name__, str(err)))
                continue
            if self.pool is not None:
                self.pool.wait_for_room(self.stop.stopping)
                if self.stop.stopping.is_set():
                    return
            if self.on_workers:
                request.problem = templated
            else:
                with self.recorder.lock:
                    self.in_flight[pid] = [templated, len(wanted)]
            yield request
        self.walk_done = True

    def _templated(self, problem: dict[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, ...] | None,
                                                            Exception | None]:
        """The problem with its prompt, `gold_hash` and (with a judge that can change scores)
        `grading_hash`, and (prompt hash, gold hash, grading hash): what its records are made
        from. A template that fails gives the error instead."""
        try:
            templated = self.env.apply_prompt_template_on_item(problem)
        except Exception as err:  # noqa: BLE001 - a template failure of this problem
            return None, None, err
        templated["gold_hash"] = self.env.gold_hash(problem)
        if self.grading_hash is not None:
            templated["grading_hash"] = self.grading_hash
        return templated, (content_hash(templated.get("prompt")), templated["gold_hash"], self.grading_hash), None

    def announce_resume(self) -> None:
        """Say how much of a resumed folder is left to send (one pass over the problems)."""
        requests = samples = problems = 0
        for problem in self.problems():
            pid = str(problem["id"])
            if not self.shard.owns(pid):
                continue
            made = self._templated(problem)[1]
            todo = sum(not self.earlier.done((pid, i), self.stage, self.retry_failures, made)
                       and not self._reusable((pid, i), made) for i in range(self.n))
            problems, samples, requests = problems + 1, samples + todo, requests + bool(todo)
        if samples == problems * self.n:  # the folder holds none of this run's work (another shard's only)
            return
        log.info("resuming: %s to send (%d of %s); the folder holds the rest", plural(requests, "request"), samples,
                 plural(problems * self.n, "sample"))

    def _reusable(self, key: tuple[str, int], made: tuple[str, ...] | None) -> bool:
        """Whether an earlier generation of the sample can be (re)scored instead of generated
        again: made from this prompt (the `score` stage scores whatever is saved)."""
        if key not in self.earlier.generated:
            return False
        return self.stage == "score" or made is None or self.earlier.generated_same(key, made[0])

    def _wanted(self, pid: str, problem: dict[str, Any], made: tuple[str, ...] | None) -> list[int]:
        """The sample indices of a problem to generate; those an earlier run generated from
        the same prompt but did not score (or scored against another gold) are queued for
        scoring (`self.rescore`). Earlier records of another prompt or gold are stale."""
        if self.earlier.empty:
            return list(range(self.n)) if self.stage != "score" else []
        wanted = []
        for i in range(self.n):
            key = (pid, i)
            reusable = self._reusable(key, made)
            done = self.earlier.done(key, self.stage, self.retry_failures, made)
            if key in self.earlier.generated and not reusable:
                self.changed["prompt"] += 1
                self.stale_generated.append(key_hash(key))
            elif self.stage == "score" and made is not None and key in self.earlier.generated \
                    and not self.earlier.generated_same(key, made[0]):
                self.changed["prompt_scored"] += 1
            if not done and key in self.earlier.scored:
                self.stale_scored.append(key_hash(key))
                if reusable:  # scored again: against another gold, or graded another way
                    regraded = made is not None and self.earlier.scored_for_problem(key, *made[:2])
                    self.changed["grading" if regraded else "gold"] += 1
            self.outcome.generated += reusable
            self.outcome.resumed += reusable or done  # an earlier run's work, not repeated
            if done:
                continue
            if reusable:
                self.rescore[pid] = problem
            elif self.stage != "score":
                wanted.append(i)
        return wanted

    def _count_problem(self, pid: str) -> None:
        with self.recorder.lock:
            self.outcome.problems += 1
            if not self.earlier.empty:  # only earlier records need counting by membership
                self.members.append(key_hash((pid, -1)))

    def bad_row(self, index: int, err: Exception) -> None:
        """A row the env can't read: every sample of it fails at the `load` stage."""
        pid = f"row-{index}"
        if not self._walked() or not self.shard.owns(pid):
            return
        log.warning("row %d of %s is malformed: %s: %s", index, self.env.name, type(err).__name__, err)
        self._count_problem(pid)
        for i in range(self.n):
            if not self.earlier.done((pid, i), self.stage, self.retry_failures):
                self.recorder.failure(failure(pid, i, "load", type(err).__name__, str(err), row_index=index))

    # ---- generate and score -----------------------------------------------------------------
    def generate_here(self) -> None:
        """The backend generates in this process; results are written and scored here."""
        use_state_dir = getattr(self.env.backend, "use_state_dir", None)
        if use_state_dir is not None:  # openai_batch: its batch ids and files, one folder per shard
            use_state_dir(self.folder.path / "batches" / (self.shard.name if self.shard.active else "run"))
        stop = contextlib.nullcontext() if getattr(self.env.backend, "stops_at_once", False) else self.stop.installed()
        try:
            with stop:
                for result in self.env.backend.generate(RequestStream(self.requests(), self.pool), self.env.sampling):
                    self.on_result(result)
        finally:
            self.env.backend.close()
        self._check_stopped()

    def _check_stopped(self) -> None:
        """A run that stopped sending (a signal whose old handler did not stop it) is interrupted."""
        if self.stop.stopping.is_set():
            raise KeyboardInterrupt

    def on_result(self, result: GenerationResult) -> None:
        entry = self.in_flight.get(result.id)
        kind, record = generated(result, entry[0].get("prompt") if entry else None)
        self.recorder.record(kind, record)
        if result.ok:
            self.outcome.generated += 1
            if self.pool is not None and entry is not None:
                self.pool.submit({**entry[0], **{k: v for k, v in record.items() if k != "prompt"}}, self.on_scored)
        else:
            self.warn_failed(result.id, result.error_type, result.error)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                with self.recorder.lock:
                    self.in_flight.pop(result.id, None)

    def warn_failed(self, pid: str, error_type: str | None, error: str | None) -> None:
        """One console line per failed request: the samples of a request fail together (n
        choices of one HTTP call), so a repeat of the last failure is not printed again."""
        if (pid, error_type, error) != self.last_failure:
            self.last_failure = (pid, error_type, error)
            log.warning("problem %s failed: %s", pid, error if error and error.startswith(f"{error_type}:")
                        else f"{error_type}: {error}")

    def generate_on_workers(self) -> None:
        """The cluster's workers generate, write and score; the driver counts their notes."""
        sink = WorkerSink(str(self.folder.path), self.shard.prefix, self.env if self.stage == "evaluate" else None)
        self.progress.start_ticker()  # results come a block at a time: a line every few seconds meanwhile
        try:
            with self.stop.installed():
                for note in self.env.backend.generate_recorded(self.requests(), self.env.sampling, sink):
                    kind = note.pop("kind")
                    self.recorder.record(kind, note, write=False)
                    self.outcome.generated += kind == "generations"
                    if kind == "failures" and note["stage"] == "generate":
                        self.warn_failed(note["id"], note["error_type"], note["message"])
        finally:
            self.env.backend.close()
        self._check_stopped()

    def on_scored(self, row: dict[str, Any], result: Any) -> None:
        """A pool's answer for one row: its score (through the judge step, when on) or failure record."""
        if isinstance(result, ItemFailure):
            self.unscorable += result.infrastructure
            self.record_score(row, {"score": None, "score_error": result.reason, "infrastructure": result.infrastructure})
        elif self.judging is not None:
            self.judging.submit(row, result)
        else:
            self.record_score(row, result)

    def record_score(self, row: dict[str, Any], result: dict[str, Any]) -> None:
        self.recorder.record(*scored(row, result))

    def stop_scoring(self) -> None:
        """Wait for the queued samples (or, interrupted, drop them: a re-run scores them)."""
        try:
            if self.pool is not None and not self.outcome.interrupted:
                self.pool.drain()
        except KeyboardInterrupt:
            self.outcome.interrupted = True
            log.warning("interrupted: finished samples are saved; re-run the same command to resume")
        finally:
            if self.pool is not None and (self.own_pool or self.outcome.interrupted):
                self.pool.close(cancel=self.outcome.interrupted)

    def score_saved(self) -> None:
        """Score saved generations that have no score yet (a crash between generating and
        scoring, or the `score` stage), streaming them from the earlier part files. Holds the
        problems concerned: all of them for the `score` stage."""
        log.info("scoring saved generations of %s", plural(len(self.rescore), "problem"))
        self.pool = self.pool or scoring_pool(self.env, self.score_workers)
        for record in self.earlier.generations():
            key = key_of(record)
            problem = self.rescore.get(key[0])
            if problem is None or key[1] >= self.n:
                continue
            made = (content_hash(problem.get("prompt")), problem.get("gold_hash"), problem.get("grading_hash"))
            if self.stage != "score" and record.get("prompt_hash") not in (None, made[0]):
                continue  # an older generation of another prompt, kept beside the one to score
            if not self.earlier.done(key, self.stage, self.retry_failures, made):
                self.pool.submit({**problem, **record}, self.on_scored)

    # ---- reconcile ----------------------------------------------------------------------------
    def count_rest(self) -> None:
        """An interrupted run's summary counts the whole selection it was asked to run:
        the problems its pass did not reach are read (not templated or sent) and counted,
        their samples missing. A second Ctrl-C stops the count (the summary says so)."""
        with self.recorder.lock:
            self.walk_closed, walked = True, self.walked
        if self.walk_done:
            return

        def row(index: int, err: Exception) -> None:
            if self.shard.owns(f"row-{index}"):
                self._count_problem(f"row-{index}")

        def gold(problem: dict[str, Any], why: str) -> None:
            if self.shard.owns(str(problem["id"])):
                self._note_bad_gold(str(problem["id"]), why)

        counted = self.outcome.problems
        try:
            for problem in self.env.iter_problems(on_error=row, on_bad_gold=gold, judged=self.judged, skip=walked):
                if self.shard.owns(str(problem["id"])):
                    self._count_problem(str(problem["id"]))
        except KeyboardInterrupt:
            self.outcome.selection_counted = False
            log.warning("interrupted again: the problems not started are counted only in part")
        if self.outcome.problems > counted:
            log.info("%d problems of the selection were not started: their samples are missing",
                     self.outcome.problems - counted)

    def finish(self) -> RunOutcome:
        """Swap in re-scored records, count earlier runs' records, close the part files."""
        outcome = self.outcome
        if outcome.interrupted:
            self.count_rest()
        if self.stage == "score" and not outcome.interrupted:
            replace_scores(self.folder, self.staging)
        outside = account(self.earlier, self.recorder, KeySet(hashes=self.members), self.n, self.stage, self.shard,
                          KeySet(hashes=self.stale_scored), KeySet(hashes=self.stale_generated))
        outcome.outside = outside
        self._say_changed()
        outcome.failures_by_stage = self.recorder.failures_by_stage
        outcome.failed = sum(self.recorder.failures_by_stage.values())
        outcome.scored = self.progress.counts["scored"]
        if outcome.interrupted:  # the problems not reached count too: their samples are missing
            outcome.problems = max(outcome.problems, self.selection_size())
        outcome.samples = outcome.problems * self.n
        outcome.metrics_summary = outcome.metrics.summary_for(self.stage)
        if self.judging is not None:
            outcome.grading = self.judging.summary(outcome.metrics.graded_by)
        self.recorder.close()
        for path in self.old_per_problem:
            path.unlink(missing_ok=True)
        log.info("%s %s of %s in %.1fs: %d scored, %d failed", self.stage, plural(outcome.samples, "sample"),
                 plural(outcome.problems, "problem"), time.monotonic() - self.progress.start, outcome.scored,
                 outcome.failed)
        if self.unscorable:
            log.error("%s could not be scored (scoring workers could not run): they are in failures/ "
                      "with error_type infrastructure; re-run the same command to score them",
                      plural(self.unscorable, "sample"))
        if len(outcome.bad_golds) > BAD_GOLDS_SHOWN:
            log.warning("%d more problems of bad golds left out (%d in all: summary.json records.bad_golds)",
                        len(outcome.bad_golds) - BAD_GOLDS_SHOWN, len(outcome.bad_golds))
        if outside:  # a smaller re-run: say what its summary (and every view of it) counts
            where = (f"{self.summary_dir.relative_to(self.folder.path)}/summary.json, this run's summary: the "
                     "folder's summary.json keeps the larger selection's") if self.summary_dir else "summary.json"
            log.info("this run selects %s x n=%d; the folder also holds %s outside that selection: kept, not "
                     "counted in %s; report, compare and the viewer read a summary's selection",
                     plural(outcome.problems, "problem"), self.n, plural(outside, "earlier sample"), where)
        if outcome.problems == 0:
            log.warning("env %s has no problems%s: nothing to do", self.env.name,
                        f" (env.limit={self.env.limit})" if self.env.limit is not None else "")
        return outcome

    def selection_size(self) -> int:
        """The problems this run selects (this shard's, malformed rows included), read again
        from the data without templating: an interrupted run stopped reading before the end
        (a cluster backend reads a segment ahead). A second Ctrl-C keeps what was counted."""
        bad: list[int] = []
        count = 0
        try:
            for problem in self.env.iter_problems(on_error=lambda index, err: bad.append(index)):
                count += self.shard.owns(str(problem["id"]))
        except KeyboardInterrupt:
            log.warning("counting the selection was interrupted: summary.json counts %d problems", count)
        return count + sum(self.shard.owns(f"row-{index}") for index in bad)

    def _say_changed(self) -> None:
        """One console line per kind of change since the earlier run: its samples were not reused."""
        said = {"prompt": "the problem changed since the earlier run; generated again",
                "gold": "the gold answer changed since the earlier run; scored again",
                "grading": f"graded another way before; graded again with grading.mode="
                           f"{self.grading.describe() if self.grading else 'off'}, generating nothing",
                "prompt_scored": "the problem changed since they were generated; scored as they are "
                                 "(run evaluate to generate them again)"}
        for what, count in self.changed.items():
            if count:
                log.warning("%s: %s", plural(count, "sample"), said[what])
