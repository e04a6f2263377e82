"""Score code generations by running their tests in the sandbox.

Crashes, timeouts, compile errors and wrong output all fail. Generated code only ever
runs inside `run_program`; call-based, functional and assert tests run under a small
harness inside the sandboxed process, which reports each result as a JSON line tagged
with a per-run random marker that it reads from stdin before the program runs.
"""

from __future__ import annotations

import ast
import logging
import marshal
import math
import re
import secrets
from typing import Any

from skyeval.scorers.sandbox import RunResult, SandboxLimits, SandboxSetupError, run_program

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"```[ \t]*([^\s`]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_ALIASES = {
    "python": {"python", "py", "python3", "py3"},
    "cpp": {"cpp", "c++", "cc", "cxx"},
    "javascript": {"javascript", "js"},
}
_INT = re.compile(r"[+-]?\d+")
_SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
_HARNESS_MODES = ("call", "functional", "asserts")
_MODULES = ("string re datetime collections heapq bisect copy math random statistics itertools "
            "functools operator io sys json").split()
# What LeetCode-style solutions assume is imported (LiveCodeBench's header). Call tests get
# it; envs pass it as the "prelude" of leetcode functional tests.
LEETCODE_PRELUDE = "".join(f"from {m} import *\n" for m in (*_MODULES, "builtins", "typing")) + (
    f"import {', '.join(_MODULES)}\nsys.setrecursionlimit(50000)\n"
)

# Runs inside the sandbox (the system Python 3): reads the marker from stdin, loads
# spec.marshal, runs the program, then each test, reporting one tagged line (a Python
# literal) per test. It imports no json/re: those would add ~10 ms to every run.
HARNESS = r'''
import marshal, math, os, sys

def _same(got, want):
    if isinstance(got, bool) or isinstance(want, bool):
        return type(got) is type(want) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return got == want or math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(map(_same, got, want))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in got)
    return type(got) is type(want) and got == want

def _matches(got, want):
    import json
    try:
        got = json.loads(json.dumps(got))
    except (TypeError, ValueError):
        return False
    return _same(got, want) or (isinstance(want, list) and len(want) == 1 and _same(got, want[0]))

def _call(ns, spec, i):
    name = spec["fn_name"]
    cls = ns.get("Solution")
    fn = getattr(cls(), name) if isinstance(cls, type) and hasattr(cls, name) else ns[name]
    return _matches(fn(*spec["inputs"][i]), spec["outputs"][i])

def _functional(ns, spec, i):
    exec(compile(spec["test"], "test.py", "exec"), ns)
    ns["check"](eval(spec["entry_point"], ns))
    return True

def _asserts(ns, spec, i):
    exec(compile(spec["asserts"][i], "assert_%d.py" % i, "exec"), ns)
    return True

def _kind(exc):
    if isinstance(exc, AssertionError):
        return "wrong_answer"
    return "memory" if isinstance(exc, MemoryError) else "runtime_error"

def _main():
    marker = sys.stdin.readline().strip()
    out = os.fdopen(os.dup(1), "w")
    def report(**record):
        out.write("\n" + marker + repr(record) + "\n")
        out.flush()
    with open("spec.marshal", "rb") as f:
        spec = marshal.load(f)
    run = {"call": _call, "functional": _functional, "asserts": _asserts}[spec["type"]]
    try:
        code = compile(spec["source"], "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:
        report(compile_error=repr(exc))
        return
    ns = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        exec(spec["header"], ns)
        exec(code, ns)
    except BaseException as exc:
        kind = "memory" if isinstance(exc, MemoryError) else "runtime_error"
        report(load_error=kind, error=repr(exc)[:300])
        return
    for i in range(spec["total"]):
        try:
            ok, kind, error = run(ns, spec, i), None, None
        except BaseException as exc:
            ok, kind, error = False, _kind(exc), repr(exc)[:300]
        report(i=i, ok=bool(ok), kind=kind or (None if ok else "wrong_answer"), error=error)
        if not ok and spec["stop"]:
            break

_main()
sys.stdout.flush()
os._exit(0)
'''


def extract_code(generation: str, language: str = "python") -> str | None:
    """Return the last fenced block tagged `language` (else the last untagged one), or None."""
    aliases = _ALIASES.get(language.lower(), {language.lower()})
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(generation)]
    tagged = [body for tag, body in blocks if tag in aliases]
    untagged = [body for tag, body in blocks if not tag]
    for body in reversed(tagged or untagged):
        if body.strip():
            return body.strip("\n")
    return None


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.rstrip().split("\n")]
    return lines if lines != [""] else []


def _same_token(got: str, want: str) -> bool:
    if got == want:
        return True
    if _INT.fullmatch(got) and _INT.fullmatch(want):
        return False
    try:
        a, b = float(got), float(want)
    except ValueError:
        return False
    return math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def outputs_match(got: str, want: str) -> bool:
    """Compare program output line by line: trailing space ignored, floats within 1e-6."""
    got_lines, want_lines = _lines(got), _lines(want)
    if len(got_lines) != len(want_lines):
        return False
    for g, w in zip(got_lines, want_lines):
        g_tokens, w_tokens = g.split(), w.split()
        if len(g_tokens) != len(w_tokens) or not all(map(_same_token, g_tokens, w_tokens)):
            return False
    return True


def _text(value: str | list[str]) -> str:
    """Test inputs/outputs given as a list of lines become one string."""
    return "\n".join(value) if isinstance(value, list) else value


def _run_failure(run: RunResult) -> str:
    """failure_kind for a run that did not finish cleanly."""
    if run.status != "runtime_error":
        return run.status
    last = run.stderr.strip().rsplit("\n", 1)[-1]
    compile_failed = "Traceback (most recent call last)" not in run.stderr
    return "compile_error" if compile_failed and last.startswith(_SYNTAX_ERRORS) else "runtime_error"


def _score_stdin(code: str, tests: dict, limits: SandboxLimits, stop: bool) -> tuple[list[str | None], bool]:
    """Run the program once per input; return per-test failure kinds and whether any timed out."""
    kinds: list[str | None] = []
    timed_out = False
    for stdin, want in zip(tests["inputs"], tests["outputs"], strict=True):
        run = run_program(code, _text(stdin), limits=limits)
        timed_out |= run.status == "timeout"
        if run.status == "ok":
            kinds.append(None if outputs_match(run.stdout, _text(want)) else "wrong_answer")
        else:
            kinds.append(_run_failure(run))
        if kinds[-1] == "compile_error" or (kinds[-1] and stop):
            break
    return kinds, timed_out


def _harness_spec(code: str, tests: dict, stop: bool) -> dict[str, Any]:
    """What the in-sandbox harness reads from spec.marshal."""
    kind = tests["type"]
    spec: dict[str, Any] = {"type": kind, "stop": stop, "source": code, "header": ""}
    if kind == "call":
        spec.update(fn_name=tests["fn_name"], inputs=tests["inputs"], outputs=tests["outputs"])
        spec["header"] = LEETCODE_PRELUDE
        spec["total"] = len(tests["inputs"])
    elif kind == "functional":
        spec.update(test=tests["test"], entry_point=tests["entry_point"], total=1)
        spec["source"] = f"{tests.get('prelude') or ''}\n{code}"
    else:
        spec.update(asserts=tests["asserts"], total=len(tests["asserts"]))
        spec["source"] = f"{tests.get('setup') or ''}\n{code}"
    return spec


def _score_harness(
    code: str, tests: dict, limits: SandboxLimits, stop: bool
) -> tuple[list[str | None], int, bool]:
    """Run all tests in one sandboxed harness; return reported kinds, test count, timeout flag."""
    spec = _harness_spec(code, tests, stop)
    marker = f"@@skyeval-{secrets.token_hex(16)}@@"
    # marshal format 4 holds plain data the same way on every Python 3 since 3.4
    run = run_program(HARNESS, marker + "\n", limits=limits, files={"spec.marshal": marshal.dumps(spec, 4)})
    records = [ast.literal_eval(line.split(marker, 1)[1]) for line in run.stdout.splitlines() if marker in line]
    if errors := [r["error"] for r in records if r.get("error")]:
        logger.debug("first test error: %s", errors[0])
    if any("compile_error" in r for r in records):
        return ["compile_error"], spec["total"], False
    if any("load_error" in r for r in records):
        return [next(r["load_error"] for r in records if "load_error" in r)], spec["total"], False
    kinds = [r["kind"] for r in records if "i" in r]
    if len(kinds) < spec["total"] and (not kinds or kinds[-1] is None):
        kinds.append(_run_failure(run) if run.status != "ok" else "runtime_error")
    return kinds, spec["total"], run.status == "timeout"


def _with_starter(code: str, starter_code: str | None) -> str:
    """Prepend the starter when the code is a completion of it (defines none of its names)."""
    if not starter_code:
        return code
    names = re.findall(r"^(?:class|def)\s+(\w+)", starter_code, re.MULTILINE)
    if any(re.search(rf"^\s*(?:class|def)\s+{name}\b", code, re.MULTILINE) for name in names):
        return code
    return f"{starter_code.rstrip()}\n{code}"


def _result(code: str | None, kinds: list[str | None], total: int, timed_out: bool) -> dict:
    """The score_code dict from per-test failure kinds (None = passed)."""
    passed_count = sum(kind is None for kind in kinds)
    passed = total > 0 and passed_count == total
    fallback = "no_code" if code is None else "runtime_error"
    failure = None if passed else next((kind for kind in kinds if kind), fallback)
    return {
        "score": 1.0 if passed else 0.0,
        "passed": passed,
        "tests_passed": passed_count,
        "tests_total": total,
        "failure_kind": failure,
        "parse_failed": code is None,
        "extracted": code,
        "timed_out": timed_out,
    }


def score_code(generation: str, tests: dict, *, limits: SandboxLimits | None = None,
               stop_at_first_failure: bool = True, starter_code: str | None = None) -> dict:
    """Score a generation against `tests` (stdin/call/functional/asserts).

    Whatever the program does gives a verdict; only a sandbox that cannot be set up
    raises (`SandboxSetupError`), so the sample is a scoring failure, not a wrong answer.
    """
    code = extract_code(generation)
    try:
        if code is None:
            return _result(None, [], _count(tests), False)
        program = _with_starter(code, starter_code)
        limits = limits or SandboxLimits()
        if tests["type"] == "stdin":
            kinds, timed_out = _score_stdin(program, tests, limits, stop_at_first_failure)
            return _result(code, kinds, len(tests["inputs"]), timed_out)
        if tests["type"] not in _HARNESS_MODES:
            raise ValueError(f"unknown test type {tests['type']!r}")
        kinds, total, timed_out = _score_harness(program, tests, limits, stop_at_first_failure)
        return _result(code, kinds, total, timed_out)
    except SandboxSetupError:
        raise
    except Exception:
        logger.exception("code scoring failed; counted as a runtime error")
        return _result(code, ["runtime_error"], _count(tests), False)


def _count(tests: dict) -> int:
    """Number of tests in a tests dict, 0 when it is malformed."""
    try:
        return 1 if tests["type"] == "functional" else len(tests.get("asserts") or tests["inputs"])
    except (KeyError, TypeError, AttributeError):
        return 0
