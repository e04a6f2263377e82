"""Ctrl-C (and SIGTERM) while a run generates: stop sending, keep what is on its way.

The first signal sets `stopping`: the run sends no new request, and the answers already on
their way (requests the server is answering, an engine's running sequences) are received
and recorded for up to `grace_s` seconds; then the run ends as interrupted, the signal
handed to the handler it replaced (the CLI's: exit 130, or 143 for SIGTERM). A second
signal, or the end of the grace time, stops at once (KeyboardInterrupt), as before.

Signals reach the main thread only: elsewhere (a run in a thread) nothing is installed and
a signal stops the run at once.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from typing import Any, Iterator

log = logging.getLogger("skyeval")

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class GracefulStop:
    """`with stop.installed():` around a run's generation; `stopping` is set by the first signal."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.stopping = threading.Event()
        self.signum: int | None = None  # the first signal received
        self._previous: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._over = False  # the generation ended: a late grace timer does nothing
        self._timer: threading.Timer | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGINT and SIGTERM (those with a Python handler) in the block. When a
        signal stopped sending and the block then ended, the replaced handler gets it at
        the end (raising KeyboardInterrupt there)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        for signum in SIGNALS:
            handler = signal.getsignal(signum)
            if callable(handler):
                self._previous[signum] = signal.signal(signum, self._handle)
        stopped_at_once = False
        try:
            yield
        except KeyboardInterrupt:
            stopped_at_once = True
            raise
        finally:
            with self._lock:
                self._over = True
                if self._timer is not None:
                    self._timer.cancel()
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)
            if self.signum is not None and not stopped_at_once:
                self._previous[self.signum](self.signum, None)  # the run ends as interrupted, by that signal

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
            self.stopping.set()
            name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
            log.warning("stopping (%s): no new requests; recording the answers on their way (at most %g s; %s "
                        "again stops at once)", name, self.grace_s, name)
            self._timer = threading.Timer(self.grace_s, self._grace_over, args=(signum,))
            self._timer.daemon = True
            self._timer.start()
            return
        self._previous[signum](signum, frame)  # a second signal: at once

    def _grace_over(self, signum: int) -> None:
        with self._lock:
            if not self._over:
                log.warning("stopping: the answers still on their way are not waited for (a re-run sends them again)")
                signal.pthread_kill(threading.main_thread().ident, signum)
