"""Ray's own log lines, into a run's log file instead of the console.

Ray writes to the console from two places: its Python loggers (`ray`, `ray.data`, the
`ray.llm.*` loggers it creates as it goes: token authentication, "Progress bars disabled",
...) and its C++ core, which prints its errors straight to this process's stderr
(`[2026-01-31 12:00:00,000 E 123 123] core_worker.cc:2465: Actor ... max_restarts > 0`;
they are in Ray's session logs too).

`send_ray_logs_to(handler)` (a run's logs.txt handler, `skyeval.run.logs.setup_logging`)
takes Ray's console handlers off its loggers and gives them `handler`; `ensure_ray` calls
`route_ray_logs()` again after importing and starting Ray, which adds handlers of its own.
The C++ lines are caught by a relay on stderr (file descriptor 2), installed once per
process when Ray starts with a handler set: it passes every other byte through to the
console unchanged, at once, and logs Ray's lines on the `ray.core` logger. On a terminal the
relay is a pseudo-terminal, so stderr still reports a terminal (progress bars stay).
`send_ray_logs_to(None)` gives Ray its handlers back.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import select
import sys
import threading
from dataclasses import dataclass, field

# Ray's C++ log line: "[2026-01-31 12:00:00,000 E 123 456] file.cc:10: message" (on a terminal,
# in colour: ANSI codes around it)
ANSI = re.compile(rb"\x1b\[[0-9;]*m")
NATIVE_LINE = re.compile(rb"(?:\x1b\[[0-9;]*m)*\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ([TDIWEC]) \d+ \d+\] ")
NATIVE_LEVELS = {b"T": logging.DEBUG, b"D": logging.DEBUG, b"I": logging.INFO, b"W": logging.WARNING,
                 b"E": logging.ERROR, b"C": logging.CRITICAL}
NATIVE_LOGGER = "ray.core"


class _Forward(logging.Handler):
    """Hands records to `target` as they are: `ray.init(logging_format=...)` re-formats the
    `ray` logger's handlers, and a run's handler keeps its own format."""

    def __init__(self, target: logging.Handler) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        self.target.handle(record)


@dataclass
class _Route:
    handler: _Forward | None = None
    displaced: list[tuple[logging.Logger, logging.Handler]] = field(default_factory=list)
    propagate: dict[str, bool] = field(default_factory=dict)  # ray.* loggers' own setting, to give back


_route = _Route()


def send_ray_logs_to(handler: logging.Handler | None) -> None:
    """Ray's log lines to `handler` only (None: Ray's own console handlers again)."""
    if _route.handler is not None:
        logging.getLogger("ray").removeHandler(_route.handler)
    _route.handler = None if handler is None else _Forward(handler)
    if handler is None:
        for logger, displaced in _route.displaced:
            logger.addHandler(displaced)
        for name, propagate in _route.propagate.items():
            logging.getLogger(name).propagate = propagate
        _route.displaced.clear()
        _route.propagate.clear()
        return
    route_ray_logs()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():  # Ray started before the handler (a backend built first)
        catch_native_lines()


def route_ray_logs() -> None:
    """Apply the route to Ray's loggers as they are now (a no-op without a handler): the
    `ray` logger writes to the handler alone; its children lose their console handlers
    (Ray's own files stay) and pass records up to it."""
    handler = _route.handler
    if handler is None:
        return
    root = logging.getLogger("ray")
    for name, logger in [("ray", root), *sorted(logging.Logger.manager.loggerDict.items())]:
        if not isinstance(logger, logging.Logger) or not (name == "ray" or name.startswith("ray.")):
            continue
        for console in [h for h in logger.handlers if h is not handler and _to_console(h)]:
            logger.removeHandler(console)
            _route.displaced.append((logger, console))
        if logger is not root and not logger.propagate:
            _route.propagate.setdefault(name, False)
            logger.propagate = True
    if handler not in root.handlers:
        root.addHandler(handler)
    root.propagate = False
    # `ray.llm.*` loggers set up a console handler when made, unless `ray.llm` has a handler
    llm = logging.getLogger("ray.llm")
    if not llm.handlers:
        llm.addHandler(logging.NullHandler())


def _to_console(handler: logging.Handler) -> bool:
    return isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)


def catch_native_lines() -> None:
    """Start the stderr relay (once per process), if Ray's lines have somewhere to go."""
    if _route.handler is not None and _relay is None:
        _start_relay()


# ---- the stderr relay ----------------------------------------------------------------------------
_relay: "_Relay | None" = None


@dataclass
class _Relay:
    console: int  # the real stderr, duplicated
    source: int  # what fd 2 now writes into
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


def _start_relay() -> None:
    global _relay
    sys.stderr.flush()
    console = os.dup(2)
    if os.isatty(2):  # a pseudo-terminal: stderr still is a terminal, of the same size
        import fcntl
        import pty
        import termios

        source, sink = pty.openpty()
        attrs = termios.tcgetattr(sink)
        attrs[1] &= ~termios.OPOST  # bytes out as written (no "\n" -> "\r\n")
        termios.tcsetattr(sink, termios.TCSANOW, attrs)
        try:
            fcntl.ioctl(sink, termios.TIOCSWINSZ, fcntl.ioctl(console, termios.TIOCGWINSZ, b"\0" * 8))
        except OSError:
            pass
    else:
        source, sink = os.pipe()
    os.dup2(sink, 2)
    os.close(sink)
    _relay = _Relay(console, source)
    _relay.thread = threading.Thread(target=_pump, args=(_relay,), name="skyeval-stderr-relay", daemon=True)
    _relay.thread.start()
    atexit.register(_stop_relay)


def _pump(relay: _Relay) -> None:
    """Pass bytes on to the console as they come; hold back only what may be the start
    of a Ray line (a line starting with "[", or a colour code) until its end, then log it
    if it is one."""
    pending = b""
    while True:
        ready, _, _ = select.select([relay.source], [], [], 0.2)
        if not ready:
            if relay.stop.is_set():
                break
            continue
        try:
            chunk = os.read(relay.source, 65536)
        except OSError:  # a pseudo-terminal whose other side is closed
            chunk = b""
        if not chunk:
            break
        pending = _pass_on(relay.console, pending + chunk)
    if pending:
        _pass_on(relay.console, pending + b"\n")


def _pass_on(console: int, data: bytes) -> bytes:
    """Write `data` to the console but for Ray's lines (logged) and a held-back line start;
    returns what is held back."""
    out = bytearray()
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        if data[start:start + 1] not in (b"[", b"\x1b"):  # not a Ray line: up to its end, or all that came
            stop = len(data) if end < 0 else end + 1
            out += data[start:stop]
            start = stop
            continue
        if end < 0:
            if len(data) - start < 4096:
                break  # wait for the rest of this line
            end = len(data) - 1
        line = data[start:end + 1]
        found = NATIVE_LINE.match(line)
        if found:
            logging.getLogger(NATIVE_LOGGER).log(NATIVE_LEVELS[found[1]], "%s",
                                                 ANSI.sub(b"", line).decode("utf-8", "replace").rstrip())
        else:
            out += line
        start = end + 1
    if out:
        try:
            os.write(console, bytes(out))
        except OSError:
            pass
    return data[start:]


def _stop_relay() -> None:
    """At exit: stderr back to the console, and what is still in the relay passed on."""
    relay = _relay
    if relay is None:
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.dup2(relay.console, 2)  # new writes go straight to the console
    relay.stop.set()
    if relay.thread is not None:
        relay.thread.join(timeout=5)
