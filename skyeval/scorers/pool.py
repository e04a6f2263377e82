"""A persistent pool of scoring processes: `fn(item)` for many items, in parallel, each
item time-bounded, reused across calls (a trainer's steps, a server's requests).

The pool knows nothing of envs: it ships `fn` (picklable) to `workers` processes once
and sends them chunks of items. A worker answers item by item, so an item that runs past
`item_timeout_s` is known: its worker is killed and replaced, the item's result is an
`ItemFailure("timeout: ...")` and the rest of its chunk goes to the new worker. A worker
that dies (a crash in native code, the OOM killer) fails only the item it was on. `fn`
raising fails its item with the exception's one-line text. `map` is thread-safe: calls
from several threads share the workers.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 120.0  # a new worker's interpreter start and imports; not counted in the item bound


@dataclass(frozen=True)
class ItemFailure:
    """An item the pool could not score: `reason` is one line ("timeout: ...", "worker died ...")."""

    reason: str


class ScorerPool:
    """`fn` on `workers` processes (default: the cores this process may use).

    `map(items)` returns one result per item, in order: `fn`'s value or an `ItemFailure`.
    Items are sent in chunks of up to `chunk_size` (smaller when a call has few items, so
    every worker gets some). `close()` (or `with`) stops the workers; a closed pool refuses
    work."""

    def __init__(self, fn: Callable[[Any], Any], workers: int | None = None, *,
                 item_timeout_s: float = 60.0, chunk_size: int = 16) -> None:
        if not item_timeout_s > 0:
            raise ValueError(f"item_timeout_s must be > 0, got {item_timeout_s!r}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size!r}")
        self.fn, self.item_timeout_s, self.chunk_size = fn, float(item_timeout_s), int(chunk_size)
        self.workers = int(workers or len(os.sched_getaffinity(0)))
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        self.replaced = 0  # workers killed for a timeout or found dead, since the start
        self._chunks: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._slots = [_Slot(self, index) for index in range(self.workers)]
        for slot in self._slots:
            slot.thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def map(self, items: Sequence[Any]) -> list[Any]:
        """`fn(item)` of every item, in order; an item that timed out, crashed its worker or
        made `fn` raise is an `ItemFailure` with the reason."""
        items = list(items)
        if not items:
            return []
        job = _Job(len(items))
        size = max(1, min(self.chunk_size, -(-len(items) // self.workers)))
        with self._lock:
            if self._closed:
                raise RuntimeError("this ScorerPool is closed")
            for start in range(0, len(items), size):
                self._chunks.put((job, start, items[start:start + size]))
        job.done.wait()
        return job.results

    def close(self) -> None:
        """Finish the chunks already queued, then stop every worker. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._slots:
                self._chunks.put(None)
        for slot in self._slots:
            if slot.thread is not threading.current_thread():
                slot.thread.join()

    def __enter__(self) -> "ScorerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Job:
    """One `map` call: its results, filled by chunk, and an event set when all are in."""

    def __init__(self, size: int) -> None:
        self.results: list[Any] = [None] * size
        self.pending = size
        self.lock = threading.Lock()
        self.done = threading.Event()

    def finish(self, start: int, results: list[Any]) -> None:
        with self.lock:
            self.results[start:start + len(results)] = results
            self.pending -= len(results)
            if self.pending == 0:
                self.done.set()


class _Slot:
    """One worker process and the thread (in this process) that feeds it chunks and
    replaces it when it overruns or dies."""

    def __init__(self, pool: ScorerPool, index: int) -> None:
        self.pool, self.index = pool, index
        self.process: Any = None
        self.conn: Any = None
        self.thread = threading.Thread(target=self._serve, name=f"scorer-pool-{index}", daemon=True)

    def _serve(self) -> None:
        try:
            self._ensure_worker()  # start now, in parallel with the other slots
        except RuntimeError as err:
            log.warning("scoring worker %d: %s (retried with the first chunk)", self.index, err)
        try:
            while True:
                task = self.pool._chunks.get()
                if task is None:
                    return
                job, start, items = task
                try:
                    job.finish(start, self._run(items))
                except BaseException as err:  # noqa: BLE001 - never leave a caller waiting
                    job.finish(start, [ItemFailure(f"scoring pool error: {type(err).__name__}: {err}")] * len(items))
        finally:
            self._stop()

    def _run(self, items: list[Any]) -> list[Any]:
        """Results of one chunk; a worker that overruns or dies is replaced and the chunk's
        remaining items go to its successor."""
        results: list[Any] = []
        while len(results) < len(items):
            rest = items[len(results):]
            self._ensure_worker()
            self.conn.send(rest)
            for _ in rest:
                result, lost = self._next_result()
                results.append(result)
                if lost:
                    self._replace()
                    break
        return results

    def _next_result(self) -> tuple[Any, bool]:
        """The worker's next answer, and whether the worker is lost (it overran or died)."""
        bound = self.pool.item_timeout_s
        if not self.conn.poll(bound):
            return ItemFailure(f"timeout: scoring took longer than {bound:g} s (worker replaced)"), True
        try:
            status, value = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(1.0)
            return ItemFailure(f"worker died while scoring (exit code {self.process.exitcode})"), True
        return (value if status == "ok" else ItemFailure(value)), False

    def _ensure_worker(self) -> None:
        if self.process is not None and self.process.is_alive():
            return
        if self.process is not None:
            self._replace()
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(target=_worker, args=(child, self.pool.fn, list(sys.path)),
                                  name=f"skyeval-scorer-{self.index}", daemon=True)
        process.start()
        child.close()
        if not parent.poll(STARTUP_TIMEOUT_S):
            process.kill()
            process.join()
            raise RuntimeError(f"a scoring worker did not start within {STARTUP_TIMEOUT_S:g} s")
        try:
            parent.recv()  # "ready"
        except EOFError:
            process.join(1.0)
            raise RuntimeError(f"a scoring worker failed to start (exit code {process.exitcode}): "
                               "is the scoring function picklable and importable?") from None
        self.process, self.conn = process, parent

    def _replace(self) -> None:
        """Kill the current worker (it overran or is dead); the next chunk starts another."""
        process, self.process = self.process, None
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if process is not None:
            process.kill()
            process.join()
            self.pool.replaced += 1
            log.warning("scoring worker %d replaced (pid %s)", self.index, process.pid)

    def _stop(self) -> None:
        process, conn = self.process, self.conn
        self.process = self.conn = None
        if conn is not None:
            try:
                conn.send(None)
            except OSError:
                pass
            conn.close()
        if process is not None:
            process.join(5.0)
            if process.is_alive():
                process.kill()
                process.join()


def _worker(conn: Any, fn: Callable[[Any], Any], path: list[str]) -> None:
    """A worker: score each chunk it is sent, answering item by item; exit on None or when
    the pool's end of the pipe closes (the parent died)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    sys.path[:] = path
    logging.getLogger("skyeval").setLevel(logging.WARNING)
    conn.send("ready")
    while True:
        try:
            chunk = conn.recv()
        except (EOFError, OSError):
            return
        if chunk is None:
            return
        for item in chunk:
            try:
                answer = ("ok", fn(item))
            except Exception as err:  # noqa: BLE001 - the item fails, the worker goes on
                answer = ("error", f"{type(err).__name__}: {err}".splitlines()[0][:500])
            conn.send(answer)
