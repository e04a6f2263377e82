"""SIGTERM stops a run the way Ctrl-C does, in the CLI and in a SLURM job alike.

`kill`, `timeout` and SLURM's `scancel` (SIGTERM, then SIGKILL after the cluster's grace
period) take Ctrl-C's path: KeyboardInterrupt, so every `finally` runs, the run folder (or
the shard's state) is saved `interrupted`, and the same command resumes it."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator

_received: list[signal.Signals] = []  # the SIGTERM that came while a handler was installed
_deferring = [0]  # > 0 inside `deferred()` blocks


class SigtermAsCtrlC:
    """SIGTERM raises KeyboardInterrupt in the main thread. Repeats are ignored from then on,
    so that they do not break into the unwinding or the interpreter's exit; `signal` says
    which signal stopped the run (None until one did)."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None  # set by the first SIGTERM

    @contextlib.contextmanager
    def installed(self) -> Iterator["SigtermAsCtrlC"]:
        """The handler while the block runs (replacing any other, e.g. submitit's, which
        only logs `Bypassing signal SIGTERM`); the previous one after, unless a SIGTERM
        stopped the block (it may run in-process, in tests)."""
        if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
            yield self
            return
        previous = signal.signal(signal.SIGTERM, self.handle)
        _received.clear()
        try:
            yield self
        finally:
            _received.clear()
            if self.signal is None:
                signal.signal(signal.SIGTERM, previous)

    def handle(self, signum: int, frame: Any) -> None:
        self.signal = signal.Signals(signum)
        _received.append(self.signal)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if not _deferring[0]:
            raise KeyboardInterrupt


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A SIGTERM during the block does not break into it: the steps that save a stopped run
    (its counts, summary.json or its shard's state) finish first. The caller then stops
    (`received()` says whether a SIGTERM came)."""
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1


def received() -> signal.Signals | None:
    """The SIGTERM that came while `SigtermAsCtrlC` is installed, or None (none did, or Ctrl-C)."""
    return _received[0] if _received else None
