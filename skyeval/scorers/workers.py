"""Worker processes that never run the caller's main module.

`multiprocessing`'s spawn re-imports the parent's `__main__` in every child: a script
without an `if __name__ == "__main__":` guard runs again (or dies), and stdin or a notebook
cell cannot be re-imported at all. A `Worker` is instead a fresh `python -c` bootstrap (a
subprocess of `sys.executable`) that gets the parent's `sys.path`, then its pickled target
and arguments over a `multiprocessing` Connection, and runs `target(conn, *args)`. The
payload is pickled with cloudpickle: what a module defines by name goes by reference (the
worker imports it); what the caller's main script, stdin or notebook defines (functions,
classes such as a custom env, and the globals they use) and lambdas go by value, so the
worker never needs `__main__`. What cannot be pickled at all is a TypeError in the parent
naming it.

A worker ignores Ctrl-C (SIGINT: the parent's to handle), turns SIGTERM into a clean exit
(`SystemExit`, so `finally` blocks run and a sandbox it started is killed), and exits when
its parent dies. Every pool of the package (`ScorerPool`, `time_limit`, curation's
`streams.map_chunks`) starts its workers here.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from typing import Any, Callable

from skyeval.errors import InfrastructureError

STARTUP_TIMEOUT_S = 120.0  # interpreter start and the target's imports, on a loaded machine

# Stdlib only until the parent's sys.path is in place.
_BOOTSTRAP = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "try:\n"
    "    sys.path[:] = conn.recv()\n"
    "except (EOFError, OSError):\n"
    "    sys.exit(0)  # the parent is gone before the worker started\n"
    "from skyeval.scorers.workers import _run\n"
    "_run(conn, int(sys.argv[2]))\n"
)


class Worker:
    """`target(conn, *args)` in a fresh interpreter; `conn` is this side's Connection.

    `started(timeout_s)` waits until the worker has unpickled its target (imports done)
    and raises InfrastructureError when it could not start."""

    def __init__(self, target: Callable[..., Any], *args: Any, name: str = "skyeval-worker") -> None:
        payload = dumps((target, args), what=name)
        ours, theirs = socket.socketpair()
        self.name = name
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(theirs.fileno()), str(os.getpid())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, close_fds=True)
        except OSError as err:
            ours.close()
            raise InfrastructureError(f"{name}: could not start a worker process: {err}") from None
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self._started = False
        try:
            self.conn.send(list(sys.path))
            self.conn.send_bytes(payload)
        except OSError:
            pass  # it died at once: `started` says why

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def exitcode(self) -> int | None:
        return self.process.poll()

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def started(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Wait for the worker's "started"; InfrastructureError if it failed or took too long."""
        if self._started:
            return
        deadline = time.monotonic() + timeout_s
        while not self.conn.poll(0.2):
            if not self.is_alive():
                self.kill()
                raise InfrastructureError(f"{self.name}: a worker process exited at start-up (exit code {self.exitcode})")
            if time.monotonic() > deadline:
                self.kill()
                raise InfrastructureError(f"{self.name}: a worker process did not start within {timeout_s:g} s")
        try:
            status, detail = self.conn.recv()
        except (EOFError, OSError):
            status, detail = "failed", f"exit code {self.process.wait()}"
        if status != "started":
            self.kill()
            raise InfrastructureError(f"{self.name}: a worker process could not start: {detail}")
        self._started = True

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the process to exit; whether it did."""
        try:
            self.process.wait(timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False

    def terminate(self, grace_s: float = 2.0) -> None:
        """SIGTERM (a clean exit: its `finally` blocks run), then SIGKILL after `grace_s`."""
        if self.is_alive():
            self.process.terminate()
            if not self.join(grace_s):
                self.process.kill()
                self.process.wait()
        self.conn.close()

    def kill(self) -> None:
        if self.is_alive():
            self.process.kill()
        self.process.wait()
        self.conn.close()


def dumps(obj: Any, what: str = "worker") -> bytes:
    """`obj` pickled for a worker (cloudpickle: `__main__` by value, modules by reference);
    a TypeError naming `what`, the object that fails and why, when it cannot be pickled."""
    try:
        return _pickled(obj)
    except Exception as err:  # noqa: BLE001 - pickling raises TypeError, PicklingError, AttributeError, ...
        raise TypeError(f"{what}: cannot send {_name(_culprit(obj))} to a worker process: {err} (a function or "
                        "class of a script or notebook is sent with the globals it uses; locks, threads, open "
                        "files and connections cannot be sent)") from None


def _pickled(obj: Any) -> bytes:
    import cloudpickle

    return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _culprit(obj: Any) -> Any:
    """The first part of a tuple (a payload `(target, args)`, nested) that does not pickle."""
    if isinstance(obj, tuple):
        for part in obj:
            try:
                _pickled(part)
            except Exception:  # noqa: BLE001 - this part is the one
                return _culprit(part)
    return obj


def _name(obj: Any) -> str:
    if hasattr(obj, "__qualname__"):
        return f"{obj.__module__}.{obj.__qualname__}"
    return f"a {type(obj).__module__}.{type(obj).__qualname__} object"


def _run(conn: Connection, parent: int) -> None:
    """The worker side: signals, the parent watch, the target."""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_cleanly)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    gone = (EOFError, BrokenPipeError, ConnectionResetError)  # the parent closed its end
    try:
        target, args = pickle.loads(conn.recv_bytes())
    except gone:
        sys.exit(0)
    except BaseException as err:  # noqa: BLE001 - told to the parent, then exit
        try:
            conn.send(("failed", f"{type(err).__name__}: {err}".splitlines()[0][:500]))
        except gone:
            pass
        sys.exit(3)
    try:
        conn.send(("started", None))
        target(conn, *args)
    except gone:
        pass  # nothing left to do
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # exiting now: a late SIGTERM has nothing to stop


def _exit_cleanly(signum: int, frame: Any) -> None:
    """SIGTERM: exit through Python's clean-up, once (a second SIGTERM while exiting, or one
    during the interpreter's teardown, would print an "Exception ignored" traceback)."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(0)


def _watch_parent(parent: int) -> None:
    """A worker outlives a SIGKILLed parent otherwise (blocked in an item, not in recv)."""
    import signal

    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)
