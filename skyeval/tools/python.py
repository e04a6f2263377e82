"""The python tool: find the program a reply ends with, run it in the sandbox, and write
what it printed as the block the model reads next.

A call runs on a sandbox worker (`calls_pool`: the package's one pool of worker
processes, `skyeval.scorers.pool.ScorerPool`), each in a fresh `skyeval.scorers.sandbox`
run: its own temp dir (a private /tmp), uid, network namespace and limits, so programs
never see each other's files, the network, or the caller's environment. Its output is
cut to `output_chars` and escaped (`escape`) before it enters the transcript.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from skyeval.tools.config import ToolsConfig

OK, ERROR, TIMEOUT = "ok", "error", "timeout"  # a call's status in the transcript
PACKAGES = ("sympy", "numpy", "scipy")  # what TIR programs commonly import
_BACKTICKS = re.compile(r"`{3,}")
_CUT = "\n[... {} characters cut ...]\n"

# main.py of a call: the earlier calls (stateful), their output discarded, then the new
# one; each compiled under its own name, its lines in linecache so a traceback shows them.
_RUNNER = """\
import io as _skyeval_io, linecache as _skyeval_lines, sys as _skyeval_sys
for _skyeval_n, _skyeval_src in enumerate({calls!r}, 1):
    _skyeval_name = "<call %d>" % _skyeval_n
    _skyeval_lines.cache[_skyeval_name] = (len(_skyeval_src), None, _skyeval_src.splitlines(True), _skyeval_name)
    if _skyeval_n == {count}:
        try:
            exec(compile(_skyeval_src, _skyeval_name, "exec"), globals())
        except SystemExit:
            raise
        except BaseException:  # printed from linecache: the interpreter's own printer reads files
            import traceback as _skyeval_traceback
            _skyeval_traceback.print_exc()
            _skyeval_sys.exit(1)
        break
    _skyeval_streams = _skyeval_sys.stdout, _skyeval_sys.stderr
    _skyeval_sys.stdout = _skyeval_sys.stderr = _skyeval_io.StringIO()
    try:
        exec(compile(_skyeval_src, _skyeval_name, "exec"), globals())
    except BaseException:
        pass
    finally:
        _skyeval_sys.stdout, _skyeval_sys.stderr = _skyeval_streams
"""

def program_of(reply: str, tools: ToolsConfig) -> str | None:
    """The program a model's reply ends with: the body of its last `code_fence` block when
    the reply (trailing whitespace aside) ends with that block's closing fence, else None."""
    text = reply.rstrip()
    fence, close = tools.code_fence, tools.close_fence
    if not text.endswith(close):
        return None
    start = text.rfind(fence, 0, len(text) - len(close))
    while start > 0 and text[start - 1] != "\n":  # a fence opens a line
        start = text.rfind(fence, 0, start)
    if start < 0:
        return None
    body = text[start + len(fence):len(text) - len(close)]
    if not body.startswith("\n"):  # "```python3", "```pythonic ..."
        return None
    body = body[1:]
    if any(line.strip() == close for line in body.splitlines()):  # that block closed earlier
        return None
    return body


@dataclass(frozen=True)
class Call:
    """One call as a sandbox worker receives it: the program, the sample's earlier
    programs that succeeded (run first, silently; empty unless `stateful`), and the
    settings it runs and is shown with."""

    code: str
    earlier: tuple[str, ...]
    timeout_s: float
    wall_multiple: float
    memory_mb: int
    output_chars: int
    markers: tuple[str, ...]  # besides runs of backticks, strings escaped in the output

    @classmethod
    def of(cls, code: str, earlier: Sequence[str], tools: ToolsConfig, markers: Sequence[str]) -> "Call":
        return cls(code, tuple(earlier) if tools.stateful else (), tools.timeout_s, tools.wall_multiple,
                   tools.memory_mb, tools.output_chars, tuple(markers))


@dataclass(frozen=True)
class Outcome:
    """What a call gave the model: `output` (cut and escaped) and its status."""

    status: str
    output: str


def run_call(call: Call) -> Outcome:
    """Run one call in a fresh sandbox (on a sandbox worker) and write its output block's
    text: what it printed; after an error, that and the traceback's last lines; after a
    time limit, that and a line saying which limit."""
    from skyeval.scorers.sandbox import SandboxLimits, run_program

    limits = SandboxLimits(timeout_s=call.timeout_s * call.wall_multiple, cpu_s=call.timeout_s,
                           memory_mb=call.memory_mb, max_output_bytes=max(1 << 16, 16 * call.output_chars))
    calls = [*call.earlier, call.code]
    result = run_program(_RUNNER.format(calls=calls, count=len(calls)), limits=limits)
    printed = result.stdout
    if result.status == "timeout":
        status = TIMEOUT
        if result.timeout == "cpu":
            tail = f"TimeoutError: the program used more than {call.timeout_s:g} s of CPU time"
        else:
            tail = f"TimeoutError: the program ran longer than {limits.timeout_s:g} s"
    elif result.status == "output_limit":
        status, tail = ERROR, f"OutputError: the program printed more than {limits.max_output_bytes} bytes"
    elif result.status == "ok":
        status, tail = OK, ""
    else:
        status, tail = ERROR, last_lines(result.stderr) or f"exit status {result.returncode}"
    printed = printed.rstrip("\n")
    if tail:  # the ending line(s) come first; what was printed before them gets the room left
        tail = cut(tail, call.output_chars)
        printed = cut(printed, call.output_chars - len(tail) - 1)
        text = f"{printed}\n{tail}" if printed else tail
    else:
        text = cut(printed, call.output_chars)
    return Outcome(status, escape(text, call.markers))


def last_lines(stderr: str) -> str:
    """The end of a traceback a model needs: the innermost frame of its own code (the
    `<call N>` files; the runner's frames and library internals left out) and the
    exception. Whatever else stderr holds (no traceback): its last lines."""
    lines = stderr.rstrip("\n").splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith('  File "')]
    if not frames:
        return "\n".join(lines[-5:])
    end = frames[-1] + 1
    while end < len(lines) and lines[end].startswith("    "):  # the source line and its carets
        end += 1
    own = [i for i in frames if lines[i].startswith('  File "<call ')]
    frame = []
    if own:
        stop = own[-1] + 1
        while stop < len(lines) and lines[stop].startswith("    "):
            stop += 1
        frame = lines[own[-1]:stop]
    return "\n".join(frame + lines[end:])


def cut(text: str, limit: int) -> str:
    """`text`, or its first and last parts around a marker saying how much was cut (about
    `limit` characters in all; only the marker when `limit` leaves no room)."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(_CUT.format(len(text))), 0)
    head, tail = keep - keep // 2, keep // 2
    return (text[:head] + _CUT.format(len(text) - head - tail) + text[len(text) - tail:]).strip("\n")


def escape(text: str, markers: Sequence[str] = ()) -> str:
    """Tool output that cannot forge the transcript: every backtick of a run of three or
    more gets a backslash (no fence survives, the output fence and stop marker included),
    and each of `markers` (think tags, stop strings) gets one after its first character."""
    text = _BACKTICKS.sub(lambda m: "\\`" * len(m.group()), text)
    for marker in sorted({m for m in markers if len(m) > 1}, key=len, reverse=True):
        while marker in text:
            text = text.replace(marker, marker[0] + "\\" + marker[1:])
    return text


def output_block(output: str, tools: ToolsConfig) -> str:
    """The block appended after a reply (Qwen2.5-Math's and ToRA's layout)."""
    return f"\n{tools.output_fence}\n{output}\n{tools.close_fence}\n"


def sandbox_packages() -> dict[str, bool]:
    """Which of `PACKAGES` the sandbox's interpreter can import (one sandbox run)."""
    from skyeval.scorers.sandbox import run_program

    probe = f"import importlib.util, json\nprint(json.dumps({{n: bool(importlib.util.find_spec(n)) for n in {PACKAGES!r}}}))"
    result = run_program(probe)
    return json.loads(result.stdout) if result.status == "ok" else {}


def calls_pool(tools: ToolsConfig, queue_size: int) -> Any:
    """The sandbox workers that run calls: `tools.workers` processes (the cores when
    unset), taking calls one by one (a slow program holds up no other call queued), each
    call bounded by its own sandbox limits (a stuck worker is replaced)."""
    from skyeval.scorers.pool import ScorerPool

    backstop = tools.timeout_s * tools.wall_multiple + 60.0
    return ScorerPool(run_call, tools.workers, item_timeout_s=backstop, chunk_size=1, queue_size=queue_size)
