"""The one pool of scoring processes: `fn(item)` for many items, in parallel, each item
time-bounded, reused across calls (a trainer's steps, a server's requests, a run's stream).

The pool knows nothing of envs: it ships `fn` (any picklable function: one of a module by
reference, one of a script or notebook by value) to `workers` processes once
(`skyeval.scorers.workers`: they never run the caller's main module). Items wait in one queue; each worker's feeder thread takes its share (a few at a
time while the queue is long, one at a time near its end, so slow items spread over every
worker) and the worker answers item by item. Two kinds of failure:

- the item's own: `fn` raised, the item ran past `item_timeout_s` (its worker is killed and
  replaced), or its worker died on it twice running: an `ItemFailure` with the reason;
- infrastructure: workers cannot start, or the pool was closed under the item: an
  `ItemFailure` with `infrastructure=True`, which `map` raises as `InfrastructureError`. A
  worker that dies once is replaced and the item tried again on the new one.

`map(items)` waits for a batch (thread-safe: calls from several threads share the
workers). `submit(item, on_done)` streams (the run pipeline): it blocks while `queue_size`
items are waiting or being scored, with the `held_back` event set meanwhile; `drain()`
waits for what was submitted; `close(cancel=True)` drops what is queued and stops the
workers at once.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from skyeval.errors import InfrastructureError
from skyeval.scorers.workers import STARTUP_TIMEOUT_S, Worker

log = logging.getLogger(__name__)

QUEUE_PER_WORKER = 64  # `submit`'s bound: items waiting or being scored, per worker


@dataclass(frozen=True)
class ItemFailure:
    """An item the pool could not score: `reason` is one line ("timeout: ...", "worker died ...");
    `infrastructure` when the pool, not the item, is at fault."""

    reason: str
    infrastructure: bool = False


class ScorerPool:
    """`fn` on `workers` processes (default: the cores this process may use).

    `map(items)` returns one result per item, in order: `fn`'s value or an `ItemFailure`;
    it raises InfrastructureError when the pool could not score an item. A worker takes
    at most `chunk_size` queued items at once (1: one by one, so a slow item holds up no
    other). `close()` (or
    `with`) stops the workers; a closed pool refuses work."""

    def __init__(self, fn: Callable[[Any], Any], workers: int | None = None, *,
                 item_timeout_s: float = 60.0, chunk_size: int = 16, queue_size: int | None = None) -> None:
        from skyeval.scorers.workers import dumps

        if not item_timeout_s > 0:
            raise ValueError(f"item_timeout_s must be > 0, got {item_timeout_s!r}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size!r}")
        self.workers = int(workers or len(os.sched_getaffinity(0)))
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        dumps(fn, what="ScorerPool")  # what cannot be pickled: a clear error now, not per worker
        self.fn, self.item_timeout_s, self.chunk_size = fn, float(item_timeout_s), int(chunk_size)
        self.queue_size = int(queue_size or QUEUE_PER_WORKER * self.workers)
        self.replaced = 0  # workers killed for a timeout or found dead, since the start
        self.broken: str | None = None  # why workers cannot start: every item fails at once
        self.held_back = threading.Event()  # set while `submit` waits for room
        self._tasks: queue.Queue = queue.Queue()
        self._room = threading.Semaphore(self.queue_size)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._submitted = 0  # items of `submit` not answered yet
        self._closed = self._cancelled = False
        self._slots = [_Slot(self, index) for index in range(self.workers)]
        for slot in self._slots:
            slot.thread.start()

    @property
    def closed(self) -> bool:
        return self._closed or self.broken is not None

    def map(self, items: Sequence[Any]) -> list[Any]:
        """`fn(item)` of every item, in order; an item that timed out, crashed its worker
        twice or made `fn` raise is an `ItemFailure` with the reason. InfrastructureError
        when workers could not score it."""
        items = list(items)
        if not items:
            return []
        job = _Job(len(items))
        with self._lock:
            self._check_open()
            for index, item in enumerate(items):
                self._tasks.put((job, index, item))
        job.done.wait()
        broken = next((r for r in job.results if isinstance(r, ItemFailure) and r.infrastructure), None)
        if broken is not None:
            raise InfrastructureError(broken.reason)
        return job.results

    def submit(self, item: Any, on_done: Callable[[Any, Any], None]) -> None:
        """Queue `item`; `on_done(item, result)` is called from a pool thread (result:
        `fn`'s value or an `ItemFailure`). Blocks while `queue_size` items are in flight."""
        if not self._room.acquire(blocking=False):
            self.held_back.set()
            self._room.acquire()
            self.held_back.clear()
        with self._lock:
            if self._closed:
                self._room.release()
                self._check_open()
            self._submitted += 1
            self._tasks.put((_Callback(self, on_done), 0, item))

    def drain(self) -> None:
        """Wait until every submitted item has been answered."""
        with self._idle:
            while self._submitted and not self._cancelled:
                self._idle.wait(1.0)

    def close(self, cancel: bool = False) -> None:
        """Stop every worker: after the items already queued, or at once with `cancel`
        (queued items are dropped, items being scored abandoned: their callbacks never
        run). Safe to call twice."""
        dropped: list = []
        with self._lock:
            if self._closed and not cancel:
                return
            self._closed = True
            if cancel:
                self._cancelled = True
                dropped = self._drop_queued()
                self._idle.notify_all()
            for _ in self._slots:
                self._tasks.put(None)
        if cancel:
            for slot in self._slots:
                slot.abandon()
            for job, index, item in dropped:
                job.finish(index, ItemFailure("scoring cancelled: the pool was closed", infrastructure=True), item)
        for slot in self._slots:
            if slot.thread is not threading.current_thread():
                slot.thread.join()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this ScorerPool is closed")

    def _drop_queued(self) -> list[tuple[Any, int, Any]]:
        dropped = []
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                return dropped
            if task is not None:
                dropped.append(task)

    def _answered(self) -> None:
        self._room.release()
        with self._idle:
            self._submitted -= 1
            if not self._submitted:
                self._idle.notify_all()

    def __enter__(self) -> "ScorerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Job:
    """One `map` call: its results, and an event set when all are in."""

    def __init__(self, size: int) -> None:
        self.results: list[Any] = [None] * size
        self.pending = size
        self.lock = threading.Lock()
        self.done = threading.Event()

    def finish(self, index: int, result: Any, item: Any) -> None:
        with self.lock:
            self.results[index] = result
            self.pending -= 1
            if self.pending == 0:
                self.done.set()


class _Callback:
    """One `submit`ted item's `on_done`."""

    def __init__(self, pool: ScorerPool, on_done: Callable[[Any, Any], None]) -> None:
        self.pool, self.on_done = pool, on_done

    def finish(self, index: int, result: Any, item: Any) -> None:
        try:
            if not self.pool._cancelled:
                self.on_done(item, result)
        except Exception:  # noqa: BLE001 - a feeder thread must go on
            log.exception("scoring callback failed")
        finally:
            self.pool._answered()


class _Slot:
    """One worker process and the thread (in this process) that feeds it items and
    replaces it when it overruns or dies."""

    def __init__(self, pool: ScorerPool, index: int) -> None:
        self.pool, self.index = pool, index
        self.worker: Worker | None = None
        self.thread = threading.Thread(target=self._serve, name=f"scorer-pool-{index}", daemon=True)

    def _serve(self) -> None:
        try:
            try:
                self._ensure_worker()  # start now, in parallel with the other slots
            except InfrastructureError as err:
                self._broke(err)
            while True:
                tasks = self._take()
                if tasks is None:
                    return
                try:
                    results = self._run([item for _, _, item in tasks])
                except InfrastructureError as err:
                    self._broke(err)
                    results = [ItemFailure(str(err), infrastructure=True)] * len(tasks)
                except BaseException as err:  # noqa: BLE001 - never leave a caller waiting
                    if self.pool._cancelled:
                        results = [ItemFailure("scoring cancelled: the pool was closed", infrastructure=True)] * len(tasks)
                    else:
                        results = [ItemFailure(f"scoring pool error: {type(err).__name__}: {err}",
                                               infrastructure=True)] * len(tasks)
                for (job, index, item), result in zip(tasks, results):
                    job.finish(index, result, item)
        finally:
            self._stop()

    def _take(self) -> list[tuple[Any, int, Any]] | None:
        """The next items: a few while the queue is long, one near its end; None to stop."""
        first = self.pool._tasks.get()
        if first is None:
            return None
        tasks = [first]
        share = min(self.pool.chunk_size - 1, self.pool._tasks.qsize() // (2 * self.pool.workers))
        while len(tasks) < 1 + share:  # at most chunk_size: 1 takes items one by one
            try:
                task = self.pool._tasks.get_nowait()
            except queue.Empty:
                break
            if task is None:
                self.pool._tasks.put(None)  # another slot's stop: leave it
                break
            tasks.append(task)
        return tasks

    def _broke(self, err: InfrastructureError) -> None:
        if self.pool.broken is None and not self.pool._cancelled:
            self.pool.broken = str(err)
            log.error("scoring workers cannot start: %s", err)

    def _run(self, items: list[Any]) -> list[Any]:
        """Results of some items; a worker that overruns or dies is replaced and the
        remaining items go to its successor (the item it died on, once more)."""
        results: list[Any] = []
        died_on: int | None = None
        lost_sends = 0
        while len(results) < len(items):
            if self.pool.broken is not None:
                raise InfrastructureError(self.pool.broken)
            rest = items[len(results):]
            self._ensure_worker()
            try:
                self.worker.conn.send(rest)
            except OSError as err:  # it died between items
                lost_sends += 1
                self._replace()
                if lost_sends > 2:
                    raise InfrastructureError(f"scoring workers keep dying before taking an item: {err}") from None
                continue
            for _ in rest:
                result, lost = self._next_result()
                if lost == "died" and died_on != len(results):
                    died_on = len(results)  # tried again on a new worker: a worker may die for other reasons
                    self._replace()
                    break
                results.append(result)
                if lost:
                    self._replace()
                    break
        return results

    def _next_result(self) -> tuple[Any, str | None]:
        """The worker's next answer, and whether the worker was lost ("timeout", "died")."""
        bound = self.pool.item_timeout_s
        worker = self.worker
        if not worker.conn.poll(bound):
            return ItemFailure(f"timeout: scoring took longer than {bound:g} s (worker replaced)"), "timeout"
        try:
            status, value = worker.conn.recv()
        except (EOFError, OSError):
            worker.join(1.0)
            return ItemFailure(f"worker died twice while scoring this item (exit code {worker.exitcode})"), "died"
        if status == "ok":
            return value, None
        return ItemFailure(value, infrastructure=status == "infrastructure"), None

    def _ensure_worker(self) -> None:
        if self.worker is not None and self.worker.is_alive():
            return
        if self.worker is not None:
            self._replace()
        if self.pool._cancelled:
            raise InfrastructureError("scoring cancelled: the pool was closed")
        worker = Worker(_serve, self.pool.fn, name=f"skyeval-scorer-{self.index}")
        worker.started(STARTUP_TIMEOUT_S)
        self.worker = worker

    def _replace(self) -> None:
        """Kill the current worker (it overran or is dead); the next item starts another."""
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.terminate(grace_s=2.0)  # SIGTERM first: a sandbox it runs is cleaned up
            self.pool.replaced += 1
            log.warning("scoring worker %d replaced (pid %s)", self.index, worker.pid)

    def abandon(self) -> None:
        """Cancelled: stop the worker now, whatever it is scoring."""
        worker = self.worker
        if worker is not None:
            worker.process.terminate()

    def _stop(self) -> None:
        worker, self.worker = self.worker, None
        if worker is None:
            return
        try:
            worker.conn.send(None)
        except OSError:
            pass
        if not worker.join(5.0):
            worker.terminate()
        worker.conn.close()


def _serve(conn: Any, fn: Callable[[Any], Any]) -> None:
    """A worker: score each list of items it is sent, answering item by item; exit on None
    or when the pool's end closes."""
    logging.getLogger("skyeval").setLevel(logging.WARNING)
    while True:
        items = conn.recv()
        if items is None:
            return
        for item in items:
            try:
                answer = ("ok", fn(item))
            except InfrastructureError as err:  # e.g. its time-limit worker could not start
                answer = ("infrastructure", str(err).splitlines()[0][:500])
            except Exception as err:  # noqa: BLE001 - the item fails, the worker goes on
                answer = ("error", f"{type(err).__name__}: {err}".splitlines()[0][:500])
            conn.send(answer)

