"""Where a run's records go: part files, metrics, the progress line, and the keys written.

The keys reconcile this run's records with an earlier run's."""

from __future__ import annotations

import logging
import sys
import threading
import time
from array import array
from collections import Counter, deque
from pathlib import Path
from typing import Any, Callable

from skyeval.metrics import MetricsAccumulator
from skyeval.results import PartWriter, RunFolder, Shard, key_hash, key_of
from skyeval.run.records import shared_writer

log = logging.getLogger("skyeval")


class Progress:
    """Generated / scored / failed with rate and ETA: a live bar on a TTY, else a log line
    every `every_s` seconds. The rate is the recent one (the last `window_s` seconds), so
    the ETA follows a run that speeds up or slows down; `clock` is the time source.
    `start_ticker()` shows it every `every_s` seconds even while no result arrives (a
    cluster backend's results come a block at a time, after its replicas start)."""

    def __init__(self, stage: str, total: int | None = None, every_s: float = 10.0, window_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stage, self.total, self.every_s, self.window_s, self.clock = stage, total, every_s, window_s, clock
        self.counts = Counter()
        self.start = self._last = clock()
        self._recent: deque[tuple[float, int]] = deque([(self.start, 0)])  # (time, done), about once a second
        self.bar = None
        self._lock = threading.RLock()  # updates and the ticker
        self._stop: threading.Event | None = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=stage, unit="sample", dynamic_ncols=True)

    def update(self, **delta: int) -> None:
        with self._lock:
            self.counts.update(delta)
            done_key = "generated" if self.stage == "generate" else "scored"
            finished = delta.get(done_key, 0) + delta.get("failed", 0)
            if self.bar is not None:
                self.bar.update(finished)
                self.bar.set_postfix_str(self.line(), refresh=False)
            elif self.clock() - self._last >= self.every_s:
                self.show()

    def show(self) -> None:
        """The line now (the bar refreshed, on a TTY)."""
        with self._lock:
            self._last = self.clock()
            if self.bar is not None:
                self.bar.set_postfix_str(self.line(), refresh=True)
            else:
                log.info("progress: %s", self.line())

    def start_ticker(self) -> None:
        """Show the line every `every_s` seconds from a thread of its own, until `close`."""
        self._stop = stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self.every_s / 4):
                if self.clock() - self._last >= self.every_s:
                    self.show()

        threading.Thread(target=tick, name="skyeval-progress", daemon=True).start()

    @property
    def done(self) -> int:
        return self.counts["generated" if self.stage == "generate" else "scored"] + self.counts["failed"]

    def rate(self) -> float:
        """Samples finished per second over the last `window_s` seconds (since the start, early on)."""
        now, done = self.clock(), self.done
        if now - self._recent[-1][0] >= 1.0:
            self._recent.append((now, done))
        while len(self._recent) > 1 and now - self._recent[0][0] > self.window_s:
            self._recent.popleft()
        then, before = self._recent[0]
        return (done - before) / max(now - then, 1e-9)

    def line(self) -> str:
        c, done, rate = self.counts, self.done, self.rate()
        shown = f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"
        text = f"generated {c['generated']}, scored {c['scored']}, failed {c['failed']} | {shown}/s"
        if self.total and done and rate > 0:
            text += f", ETA {max(self.total - done, 0) / rate:.0f}s"
        if not c["generated"] and not done:
            text += f" | waiting for the first results ({self.clock() - self.start:.0f}s)"
        return text

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self.bar is not None:
            self.bar.close()


class Recorder:
    """The one place records are written and counted (thread-safe: the backend may pull
    requests, and scoring results arrive, on other threads). `write=False` counts a record
    a cluster worker wrote. `track_keys` keeps the written keys, as 8-byte hashes: only
    needed to reconcile with what an earlier run left. `count_generated_tokens` counts the
    token usage of generations (the `generate` stage: nothing is scored to count it)."""

    def __init__(self, folder: RunFolder, shard: Shard, metrics: MetricsAccumulator, progress: Progress,
                 shared: bool, track_keys: bool, summary_dir: Path | None = None,
                 count_generated_tokens: bool = False) -> None:
        self.lock = threading.RLock()
        writer = shared_writer if shared else RunFolder.writer  # shared: shards or cluster workers write too
        self.generations = writer(folder, "generations", shard.prefix)
        self.scores = writer(folder, "scores", shard.prefix)
        self.failures = writer(folder, "failures", shard.prefix)
        # per_problem first: readers tell per-problem rows from score records by that prefix; a smaller
        # selection's rows go beside its own summary (`summary_dir`), the folder's summary keeps its own
        self.per_problem = writer(folder, "scores", "per_problem-" + shard.prefix) if summary_dir is None \
            else PartWriter(summary_dir / "scores", "per_problem-part")
        self.metrics, self.progress = metrics, progress
        self.new_scored, self.new_failed, self.new_generated = array("Q"), array("Q"), array("Q")
        self.track_keys, self.count_generated_tokens = track_keys, count_generated_tokens
        self.failures_by_stage: Counter = Counter()

    def record(self, kind: str, record: dict[str, Any], write: bool = True) -> None:
        """A record of `kind` (generations, scores or failures)."""
        {"generations": self.generation, "scores": self.score, "failures": self.failure}[kind](record, write)

    def generation(self, record: dict[str, Any], write: bool = True) -> None:
        with self.lock:
            if write:
                self.generations.write(record)
            if self.track_keys:
                self.new_generated.append(key_hash(key_of(record)))
            if self.count_generated_tokens:
                self.metrics.add_usage(record)
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
