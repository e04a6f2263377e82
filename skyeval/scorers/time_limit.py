"""Hard wall-clock limit for one function call, from any thread.

In the main thread a ``SIGALRM`` interval timer interrupts the call in-process. Other
threads cannot receive signals, so there the call runs in a reused worker process
(``skyeval.scorers.workers``: it never imports the caller's main module); a worker that
overruns is killed and replaced at once.
"""

from __future__ import annotations

import atexit
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from skyeval.scorers.workers import Worker

T = TypeVar("T")

STARTUP_TIMEOUT_S = 120.0  # a new worker's interpreter start + warmup; not counted in the limit
MAX_IDLE_WORKERS = 16
_WARMED_HERE: set[Callable[[], None]] = set()  # warmups already run in this process

__all__ = ["TimeLimitExceeded", "WorkerDied", "call_with_time_limit"]


class TimeLimitExceeded(BaseException):
    """The call ran past its limit. A BaseException so that library code catching
    ``Exception`` (math-verify, sympy) cannot swallow it."""


def call_with_time_limit(
    fn: Callable[..., T],
    *args: Any,
    timeout_s: float,
    warmup: Callable[[], None] | None = None,
) -> T:
    """Return ``fn(*args)`` or raise TimeLimitExceeded once ``timeout_s`` seconds of wall
    time have passed. ``warmup`` (e.g. heavy imports) runs once per process, outside the limit.
    Off the main thread ``fn``, ``args``, ``warmup`` and the result must be picklable;
    exceptions raised by ``fn`` are re-raised here."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if _can_use_alarm():
        if warmup is not None and warmup not in _WARMED_HERE:
            warmup()
            _WARMED_HERE.add(warmup)
        return _call_with_alarm(fn, args, timeout_s)
    return _POOL.call(fn, args, timeout_s, warmup)


def _can_use_alarm() -> bool:
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # nobody else's alarm armed
    )


def _raise_time_limit(signum: int, frame: object) -> None:
    raise TimeLimitExceeded


def _call_with_alarm(fn: Callable[..., T], args: tuple, timeout_s: float) -> T:
    previous = signal.signal(signal.SIGALRM, _raise_time_limit)
    try:
        # The interval re-fires in case something swallows the first interrupt.
        signal.setitimer(signal.ITIMER_REAL, timeout_s, 0.05)
        try:
            return fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def _serve(conn: Any) -> None:
    """Worker loop: receive (fn, args), send back (ok, result or exception)."""
    while True:
        try:
            fn, args = conn.recv()
        except EOFError:
            return
        try:
            reply = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the caller
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # unpicklable result or exception
            conn.send((False, RuntimeError(f"worker could not send its reply: {exc!r}")))


def _no_op() -> None:
    return None


def _unwrap(reply: tuple[bool, Any]) -> Any:
    ok, value = reply
    if not ok:
        raise value
    return value


class WorkerDied(RuntimeError):
    """The worker process exited before replying (crash, OOM kill)."""


class _Worker:
    def __init__(self, warmup: Callable[[], None] | None) -> None:
        self.process = Worker(_serve, name="skyeval-time-limit")
        self.conn = self.process.conn
        self.warmed: set[Callable[[], None]] = set()
        self._starting: Callable[[], None] | None = warmup or _no_op
        self.conn.send((self._starting, ()))  # the worker imports in the background

    def warm(self, warmup: Callable[[], None] | None) -> None:
        """Wait for start-up, then run ``warmup`` once per worker; both outside the limit."""
        if self._starting is not None:
            starting, self._starting = self._starting, None
            self.process.started(STARTUP_TIMEOUT_S)
            _unwrap(self.reply(STARTUP_TIMEOUT_S))
            self.warmed.add(starting)
        if warmup is not None and warmup not in self.warmed:
            self.conn.send((warmup, ()))
            _unwrap(self.reply(STARTUP_TIMEOUT_S))
            self.warmed.add(warmup)

    def reply(self, timeout_s: float) -> tuple[bool, Any]:
        """Wait for the next (ok, value) reply; TimeLimitExceeded after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.conn.poll(max(0.0, min(0.5, deadline - time.monotonic()))):
            if not self.process.is_alive():
                raise WorkerDied(f"time-limit worker exited with code {self.process.exitcode}")
            if time.monotonic() >= deadline:
                raise TimeLimitExceeded
        return self.conn.recv()

    def kill(self) -> None:
        self.process.kill()


class _WorkerPool:
    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def call(
        self, fn: Callable[..., T], args: tuple, timeout_s: float, warmup: Callable[[], None] | None
    ) -> T:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        worker = worker or _Worker(warmup)
        try:
            worker.warm(warmup)
            worker.conn.send((fn, args))
            reply = worker.reply(timeout_s)
        except (TimeLimitExceeded, WorkerDied, OSError, EOFError):
            worker.kill()  # overran, died or lost its pipe: replace it now, warming in the background
            self._release(_Worker(warmup))
            raise
        except BaseException:  # failed warmup, unpicklable call, interrupt: state unknown
            worker.kill()
            raise
        self._release(worker)
        return _unwrap(reply)

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE_WORKERS:
                self._idle.append(worker)
                return
        worker.kill()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_POOL = _WorkerPool()
atexit.register(_POOL.close)
