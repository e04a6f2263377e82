"""Ray's own lines (its Python loggers and its C++ core's errors on stderr) go to a run's
logs.txt, not the console; everything else on stderr still reaches the console.

A driver in a subprocess (a fresh process: Ray is started there, with a run's logging set
up) makes Ray say what it says in a real `model_config=ray` run: an actor created with
arguments in the object store and `max_restarts > 0` (core_worker.cc's error line, as Ray
Data's map workers do) and a Ray Data pipeline without progress bars ("Progress bars
disabled"). The console must show the driver's own stderr lines, the run's log lines, and
none of Ray's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

DRIVER = textwrap.dedent("""
    import logging, sys
    from pathlib import Path
    import numpy as np
    from skyeval.run.logs import setup_logging
    from skyeval.backends.ray_session import ensure_ray

    setup_logging(Path(sys.argv[1]))
    ensure_ray("local")
    import ray
    import ray.data

    @ray.remote(max_restarts=1, num_cpus=0)
    class Holder:
        def __init__(self, values):
            self.size = len(values)

        def size_of(self):
            return self.size

    holder = Holder.remote(np.zeros(1_000_000))  # > 100 KB: the argument goes to the object store
    assert ray.get(holder.size_of.remote()) == 1_000_000
    assert len(ray.data.range(8, override_num_blocks=2).map(lambda r: r).take_all()) == 8
    print("partial line from the driver, ", end="", file=sys.stderr, flush=True)
    print("[its end] and a line of its own", file=sys.stderr, flush=True)
    logging.getLogger("skyeval").warning("the run's own warning")
""")

RAY_CONSOLE_LINE = re.compile(r"^(\[\d{4}-\d\d-\d\d [\d:,]+ [TDIWEC] \d+ \d+\]|\S+ \S+\t[A-Z]+ \S+\.py:\d+ -- )", re.M)


@pytest.mark.slow
def test_rays_lines_go_to_the_log_file_and_the_rest_to_the_console(tmp_path):
    logs = tmp_path / "logs.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(logs)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    console = proc.stdout + proc.stderr
    assert not RAY_CONSOLE_LINE.search(console), console
    assert "core_worker.cc" not in console and "Progress bars disabled" not in console
    assert "partial line from the driver, [its end] and a line of its own\n" in proc.stderr  # passed through whole
    assert "the run's own warning" in proc.stderr  # skyeval's console log is untouched
    text = logs.read_text()
    assert re.search(r"ERROR ray\.core: \[[^\]]+ E \d+ \d+\] core_worker\.cc:\d+: Actor with class name: 'Holder'", text)
    assert re.search(r"WARNING ray\.data\S*: Progress bars disabled", text)
    assert "ray: started a private local Ray" in text and "the run's own warning" in text


def test_the_relay_passes_everything_but_rays_lines_on_at_once(tmp_path):
    """The relay's filter alone (no Ray): Ray's lines, plain or in colour as on a terminal,
    are logged; everything else reaches the console as it came, a progress bar's "\\r"
    updates included; only a line that may be Ray's waits for its end."""
    import logging

    from skyeval.backends.ray_logs import NATIVE_LOGGER, _pass_on

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger(NATIVE_LOGGER).addHandler(handler)
    console = tmp_path / "console"
    try:
        with console.open("wb") as fh:
            held = _pass_on(fh.fileno(), b"evaluate:  10%|#  \r evaluate:  20%|##  \r")
            assert held == b""
            held = _pass_on(fh.fileno(), b"[2026-11-28 06:43:34,009 E 22850 22851] core_worker.cc:2465: Actor with")
            assert held.startswith(b"[2026")  # may be Ray's: held until its end
            held = _pass_on(fh.fileno(), held + b" class name: 'A'\n\x1b[0m[user] not Ray's\n\x1b[33m[2026-11-28 "
                                                 b"06:43:35,000 W 1 2] raylet_client.cc:10: slow\x1b[0m\n[par")
            assert held == b"[par"
            _pass_on(fh.fileno(), held + b"tial]\n")
    finally:
        logging.getLogger(NATIVE_LOGGER).removeHandler(handler)
    assert console.read_bytes() == b"evaluate:  10%|#  \r evaluate:  20%|##  \r\x1b[0m[user] not Ray's\n[partial]\n"
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("ERROR", "[2026-11-28 06:43:34,009 E 22850 22851] core_worker.cc:2465: Actor with class name: 'A'"),
        ("WARNING", "[2026-11-28 06:43:35,000 W 1 2] raylet_client.cc:10: slow")]
