"""Score code generations by running them in the sandbox; only this process grades.

Expected values never enter the sandboxed process. Stdin tests: the program gets the
input, its stdout is compared here. Call tests, and assert tests converted to calls
(`skyeval.scorers.asserts`): the in-sandbox harness gets the program and the arguments
only, calls the function and writes each returned value as tagged plain data, which is
decoded and compared here (`skyeval.scorers.compare`). Assert statements that cannot be
converted run next to the program, as the benchmark's own harness would run them; the
result then says `grading: in_process`. See docs/sandbox.md.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import logging
import marshal
import re
import secrets
from collections import Counter

from skyeval.scorers import trusted_check
from skyeval.scorers.asserts import NOT_TARGETS, CallTest, convert_assert, convert_check, match, passes
from skyeval.scorers.compare import DEFAULT_TOLERANCE, EXACT, Tolerance, Unrepresentable, as_json, decode, outputs_match
from skyeval.scorers.sandbox import RunResult, SandboxLimits, SandboxSetupError, run_program

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"```[ \t]*([^\s`]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_ALIASES = {
    "python": {"python", "py", "python3", "py3"},
    "cpp": {"cpp", "c++", "cc", "cxx"},
    "javascript": {"javascript", "js"},
}
_SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
FLOAT_RULES = ("exact", "tolerant")
_HARNESS_MODES = ("call", "functional", "asserts")
_MODULES = ("string re datetime collections heapq bisect copy math random statistics itertools "
            "functools operator io sys json").split()
# What LeetCode-style solutions assume is imported (LiveCodeBench's header). Call tests get
# it; envs pass it as the "prelude" of leetcode functional tests.
LEETCODE_PRELUDE = "".join(f"from {m} import *\n" for m in (*_MODULES, "builtins", "typing")) + (
    f"import {', '.join(_MODULES)}\nsys.setrecursionlimit(50000)\n"
)

# Runs inside the sandbox (the system Python 3): reads the marker from stdin, loads
# spec.marshal (program, calls as (how, name, args, kwargs, then, source, setup), the
# bindings the sources read, any in-process check), builds the arguments a call gives as
# source text (the test's own literals, so a set iterates as the test's would) before any
# program code runs (or, for a call with `setup`, in the program's namespace after the
# program and that setup code), runs the program, makes each call and writes one tagged
# line per result: "i\tv\t<value as tagged JSON>", "i\te\t<error>", or for in-process code
# "j\tr\t" / "j\tf\t<error>". `then` is what the assert itself did to the value in this
# process: bool() it (`assert C`, `not C`) or iterate it (`set(C)`, `sorted(C)` ... of a
# generator). Values are encoded by base-class methods (a subclass's overrides never run;
# other types are refused). It imports no json/re: those would add ~10 ms to every run.
HARNESS = r'''
import marshal, os, sys
from _json import encode_basestring_ascii as _quote

_BIG = 10 ** 4000

def _items(parts, depth):
    return ",".join([_enc(v, depth + 1) for v in parts])

def _enc(x, depth=0):
    if depth > 100:
        raise ValueError("value nested too deeply")
    t = type(x)
    if x is None:
        return "null"
    if t is bool:
        return "true" if x else "false"
    if issubclass(t, int):
        v = int.__index__(x)
        return int.__repr__(v) if -_BIG < v < _BIG else '{"x":"%s"}' % int.__format__(v, "x")
    if issubclass(t, float):
        v = float.__float__(x)
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "Infinity" if v > 0 else "-Infinity"
        return float.__repr__(v)
    if issubclass(t, str):
        return _quote(str.__str__(x))
    if issubclass(t, list):
        return "[" + _items(list.__iter__(x), depth) + "]"
    if issubclass(t, tuple):
        return '{"t":[' + _items(tuple.__iter__(x), depth) + "]}"
    if issubclass(t, frozenset):
        return '{"f":[' + _items(frozenset.__iter__(x), depth) + "]}"
    if issubclass(t, set):
        return '{"s":[' + _items(set.__iter__(x), depth) + "]}"
    if issubclass(t, dict):
        pairs = ["[" + _enc(k, depth + 1) + "," + _enc(v, depth + 1) + "]" for k, v in dict.items(x)]
        return '{"d":[' + ",".join(pairs) + "]}"
    if issubclass(t, bytes):
        return '{"b":"%s"}' % bytes.hex(x)
    raise TypeError("not plain data: a %s" % type.__repr__(t))

def _error(exc):
    try:
        kind = "memory" if isinstance(exc, MemoryError) else "runtime_error"
        return _quote(kind + ":" + BaseException.__repr__(exc)[:300])
    except BaseException:
        return _quote("runtime_error:?")

def _resolve(ns, how, name):
    if how == "eval":
        return eval(name, ns)
    cls = ns.get("Solution")
    if how == "method" and isinstance(cls, type) and hasattr(cls, name):
        return getattr(cls(), name)
    return ns[name]

def _arguments(spec):
    """Each call's (args, kwargs), the error building them raised, or None for a call whose
    arguments are built after the program (its test setup code needs the program's names);
    and the scope of the bindings."""
    scope = {"__builtins__": __builtins__}
    try:
        exec(spec["bindings"], scope)
        failed = None
    except BaseException as exc:
        failed = exc
    built = []
    for how, name, args, kwargs, then, source, setup in spec["calls"]:
        if source is None:
            built.append((args, kwargs))
            continue
        if setup is not None:
            built.append(None)
            continue
        try:
            if failed is not None:
                raise failed
            built.append(eval(source, scope))
        except BaseException as exc:
            built.append(exc)
    return built, scope

def _late(ns, scope, done, setup, source):
    """Arguments built in the program's namespace after its test setup code ran there (once)."""
    if setup not in done:
        done[setup] = None
        try:
            exec(setup, ns)
        except BaseException as exc:
            done[setup] = exc
    if done[setup] is not None:
        raise done[setup]
    return eval(source, ns, scope)

''' + trusted_check.OPENING + r'''
def _main():
    spec, report = _open()
    built, scope = _arguments(spec)
    try:
        code = compile(spec["source"], "solution.py", "exec")
    except (SyntaxError, ValueError) as exc:
        report("0\tc\t" + _quote(repr(exc)[:300]))
        return
    ns = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        exec(spec["header"], ns)
        exec(code, ns)
    except BaseException as exc:
        report("0\tl\t" + _error(exc))
        return
    found, done = {}, {}
    for i, (how, name, _, _, then, source, setup) in enumerate(spec["calls"]):
        try:
            if isinstance(built[i], BaseException):
                raise built[i]
            args, kwargs = built[i] if built[i] is not None else _late(ns, scope, done, setup, source)
            if (how, name) not in found:
                found[how, name] = _resolve(ns, how, name)
            value = found[how, name](*args, **kwargs)
            if then == "bool":
                value = bool(value)
            elif then == "list" and type(value) not in (list, tuple, set, frozenset, dict, str):
                value = list(value)
        except BaseException as exc:
            report("%d\te\t%s" % (i, _error(exc)))
            continue
        try:
            text = _enc(value)
        except BaseException:
            report("%d\te\t%s" % (i, _quote("wrong_answer:not plain data")))
        else:
            report("%d\tv\t%s" % (i, text))
    for j, test in enumerate(spec["residual"]):
        try:
            exec(compile(test, "test_%d.py" % j, "exec"), ns)
        except BaseException as exc:
            wrong = isinstance(exc, AssertionError)
            report("%d\tf\t%s" % (j, _quote("wrong_answer:") if wrong else _error(exc)))
        else:
            report("%d\tr\t" % j)

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


def _text(value: str | list[str]) -> str:
    """Test inputs/outputs given as a list of lines become one string."""
    return "\n".join(value) if isinstance(value, list) else value


def _own_tolerance(tests: dict) -> Tolerance | None:
    """How the benchmark's own checker compares floats: `float_tolerance` [rel, abs] (APPS's
    np.allclose), null for stdout floats as exact decimals (LiveCodeBench), else `==`."""
    if "float_tolerance" not in tests:
        return EXACT
    given = tests["float_tolerance"]
    return None if given is None else Tolerance(*given)


class Verdicts:
    """Judges values under a float rule (docs/sandbox.md): `exact` compares as the
    benchmark's own checker does; `tolerant` also accepts floats within `DEFAULT_TOLERANCE`,
    and notes whether any test passed only so (`by_tolerance`)."""

    def __init__(self, tests: dict, float_rule: str) -> None:
        self.own, self.tolerant, self.by_tolerance = _own_tolerance(tests), float_rule == "tolerant", False

    def judge(self, check) -> bool:
        """`check(tolerance)` under the benchmark's own comparison, then (tolerant) the default's."""
        if check(self.own):
            return True
        if self.tolerant and check(DEFAULT_TOLERANCE):
            self.by_tolerance = True
            return True
        return False


def _run_failure(run: RunResult) -> str:
    """failure_kind for a run that did not finish cleanly."""
    if run.status != "runtime_error":
        return run.status
    last = run.stderr.strip().rsplit("\n", 1)[-1]
    compile_failed = "Traceback (most recent call last)" not in run.stderr
    return "compile_error" if compile_failed and last.startswith(_SYNTAX_ERRORS) else "runtime_error"


def _score_stdin(code: str, tests: dict, limits: SandboxLimits, stop: bool,
                 verdicts: Verdicts) -> tuple[list[str | None], str | None]:
    """Run the program once per input; return per-test failure kinds and which limit ended
    the first run that timed out ("cpu" | "wall", None: none did)."""
    kinds: list[str | None] = []
    timeout = None
    for stdin, want in zip(tests["inputs"], tests["outputs"], strict=True):
        run = run_program(code, _text(stdin), limits=limits)
        timeout = timeout or run.timeout
        if run.status == "ok":
            matched = verdicts.judge(lambda tol: outputs_match(run.stdout, _text(want), tol))
            kinds.append(None if matched else "wrong_answer")
        else:
            kinds.append(_run_failure(run))
        if kinds[-1] == "compile_error" or (kinds[-1] and stop):
            break
    return kinds, timeout


class HarnessPlan:
    """What one sandboxed harness run does for a tests dict: the program, the calls it
    makes (with how to find the function), and how the tests that are not literal calls
    are judged: on the trusted side (`recording`, skyeval.scorers.trusted_check) or, when
    that cannot be done, as `residual` test code run next to the program (in_process)."""

    def __init__(self, program: str, tests: dict, float_rule: str = "tolerant") -> None:
        kind = tests["type"]
        self.header, self.source, self.residual, self.recording = "", program, [], None
        self.trusted = False  # some of the test's code ran on the trusted side
        self.json_view = self.unwrap = False
        if kind == "call":
            self.header, self.how, self.json_view = LEETCODE_PRELUDE, "method", True
            self.unwrap = bool(tests.get("accept_unwrapped"))
            self.calls = [CallTest(tests["fn_name"], tuple(args), {}, want)
                          for args, want in zip(tests["inputs"], tests["outputs"], strict=True)]
        elif kind == "functional":
            converted = convert_check(tests["test"])
            self.how, self.calls = "eval", [_bound(c, tests["entry_point"]) for c in converted.calls]
            self.source = f"{tests.get('prelude') or ''}\n{program}"
            if converted.residual is not None:
                self._trusted((f"{converted.residual}\ncheck({trusted_check.CANDIDATE})\n",),
                              _check_parameter(converted.residual), tests["entry_point"], tests,
                              [f"{converted.residual}\ncheck({tests['entry_point']})\n"])
        else:
            self.how, self.calls = "eval", []
            self.source = f"{tests.get('setup') or ''}\n{program}"
            left = []
            for test in tests["asserts"]:
                call = convert_assert(test)
                (self.calls if call else left).append(call or test)
            if left:
                target = _function_under_test(self.calls, left)
                self._trusted(tuple(left), target, target, tests, left)
        self.verdicts = Verdicts(tests, float_rule)

    def _trusted(self, chunks: tuple[str, ...], target: str | None, function: str, tests: dict,
                 residual: list[str]) -> None:
        """Judge `chunks` of test code on the trusted side; else run `residual` in-process."""
        try:
            if target is None:
                raise trusted_check.Unrecordable("no function under test found in the test")
            recording = trusted_check.record(chunks, target, function=function, header=self.source_header(tests),
                                             reference=tests.get("reference"))
        except trusted_check.Unrecordable as why:
            trusted_check.warn_once(str(why))
            self.residual = residual
            return
        self.calls = [*self.calls, *recording.calls]
        self.recording = recording if recording.replay else None
        self.trusted = True

    @staticmethod
    def source_header(tests: dict) -> str:
        """What the test's code runs after on the trusted side, before the reference solution."""
        return tests.get("prelude") or tests.get("setup") or ""

    @property
    def total(self) -> int:
        judged = sum(c.comparison != "replay" for c in self.calls)
        return judged + (self.recording.chunks if self.recording else 0) + len(self.residual)

    @property
    def grading(self) -> str:
        return "in_process" if self.residual else "isolated"

    def spec(self) -> bytes:
        """spec.marshal: the program and the arguments, never an expected value. Arguments
        read from a test's source go as that source (built in the sandbox, as the test
        builds them: a rebuilt set could iterate in another order); call tests' as values."""
        calls = [(self.how, c.function, () if c.source else c.args, {} if c.source else c.kwargs,
                  _THEN.get(c.comparison), c.source or None, c.setup) for c in self.calls]
        bindings = dict(b for c in self.calls for b in c.bindings)
        lines = "".join(f"{name} = {text}\n" for name, text in sorted(bindings.items(), key=lambda b: int(b[0][2:])))
        spec = {"source": self.source, "header": self.header, "calls": calls, "bindings": lines,
                "residual": self.residual}
        return marshal.dumps(spec, 4)  # format 4 holds plain data alike on every Python 3 since 3.4

    def judge(self, call: CallTest, value_text: str) -> str | None:
        """Failure kind of one returned value (None: passed)."""
        try:
            got = decode(value_text)
        except Unrepresentable as err:
            logger.debug("unrepresentable value: %s", err)
            return "wrong_answer"
        if self.json_view:
            got = as_json(got)
        unwrapped = self.unwrap and type(call.expected) is list and len(call.expected) == 1
        ok = self.verdicts.judge(lambda tol: passes(call, got, tol) or (
            unwrapped and passes(dataclasses.replace(call, expected=call.expected[0]), got, tol)))
        return None if ok else "wrong_answer"


_THEN = {"truthy": "bool", "falsy": "bool", "set": "list", "sorted": "list", "tuple": "list", "list": "list"}


def _bound(call: CallTest, entry_point: str) -> CallTest:
    return dataclasses.replace(call, function=entry_point)


def _check_parameter(test: str) -> str | None:
    """The name `def check(candidate)` gives the function under test."""
    for node in ast.parse(test).body:
        if isinstance(node, ast.FunctionDef) and node.name == "check" and node.args.args:
            return node.args.args[0].arg
    return None


def _function_under_test(calls: list[CallTest], asserts: list[str]) -> str | None:
    """The function an MBPP-style problem's asserts call: the converted calls' one, else
    the one a known assert shape calls."""
    names = Counter(c.function for c in calls if c.function)
    called: Counter = Counter()  # else: the names the asserts call that are not builtins
    for test in asserts:
        try:
            tree = ast.parse(test)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                shape = match(node.test, lambda n: isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                              and n.func.id not in NOT_TARGETS)
                if shape is not None:
                    names[shape.call.func.id] += 1
                called.update(n.func.id for n in ast.walk(node) if isinstance(n, ast.Call)
                              and isinstance(n.func, ast.Name) and not hasattr(builtins, n.func.id))
    found = names or called
    return found.most_common(1)[0][0] if found else None


def _reported(stdout: str, marker: str) -> dict[tuple[str, int], tuple[str, str]]:
    """The harness's lines: (call|residual, index) -> (status letter, payload); first one wins."""
    found: dict[tuple[str, int], tuple[str, str]] = {}
    for line in stdout.splitlines():
        if not line.startswith(marker):
            continue
        parts = line[len(marker):].split("\t", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        index, status, payload = int(parts[0]), parts[1], parts[2]
        group = "residual" if status in ("r", "f") else "load" if status in ("c", "l") else "call"
        found.setdefault((group, index), (status, payload))
    return found


def _error_kind(payload: str) -> str:
    """"memory"/"runtime_error"/"wrong_answer" from a reported error (a JSON string "kind:repr")."""
    import json

    try:
        text = json.loads(payload)
    except ValueError:
        return "runtime_error"
    kind = text.split(":", 1)[0] if isinstance(text, str) else ""
    return kind if kind in ("memory", "runtime_error", "wrong_answer") else "runtime_error"


def _score_harness(plan: HarnessPlan, limits: SandboxLimits) -> tuple[list[str | None], int, str | None, str]:
    """Run all calls (and any in-process check) in one sandboxed harness, then any trusted
    replay; return per-test failure kinds (None = passed), the test count, the limit that
    ended it ("cpu" | "wall" | None) and how the tests were graded."""
    marker = f"@@skyeval-{secrets.token_hex(16)}@@"
    run = run_program(HARNESS, marker + "\n", limits=limits, files={"spec.marshal": plan.spec()})
    found = _reported(run.stdout, marker)
    if ("load", 0) in found:
        status, payload = found["load", 0]
        return ["compile_error" if status == "c" else _error_kind(payload)], plan.total, None, plan.grading
    unfinished = _run_failure(run) if run.status != "ok" else "runtime_error"
    kinds: list[str | None] = []
    values: list[tuple[str, object]] = []  # the returned values the trusted replay judges
    for i, call in enumerate(plan.calls):
        status, payload = found.get(("call", i), ("", ""))
        if call.comparison == "replay":
            values.append(_value(payload) if status == "v" else
                          (_error_kind(payload) if status == "e" else unfinished, None))
            continue
        kinds.append(plan.judge(call, payload) if status == "v" else _error_kind(payload) if status == "e"
                     else unfinished)
    if plan.recording is not None:
        kinds.extend(_replayed(plan.recording, values, limits))
    for j in range(len(plan.residual)):
        status, payload = found.get(("residual", j), ("", ""))
        kinds.append(None if status == "r" else _error_kind(payload) if status == "f" else unfinished)
    return kinds, plan.total, run.timeout, plan.grading


def _value(payload: str) -> tuple[str, object]:
    try:
        return "v", decode(payload)
    except Unrepresentable:
        return "wrong_answer", None


def _replayed(recording: trusted_check.Recording, values: list[tuple[str, object]],
              limits: SandboxLimits) -> list[str | None]:
    """Per part of the check run again with the program's values: None (passed), the kind
    of the program's own failure in one of that part's calls, or wrong_answer."""
    verdicts = trusted_check.replay(recording, values, limits)
    starts = recording.replay["starts"]
    return [next((kind for kind, _ in values[starts[c]:starts[c + 1]] if kind != "v"), verdict)
            if verdict else None for c, verdict in enumerate(verdicts)]


def _with_starter(code: str, starter_code: str | None) -> str:
    """Prepend the starter when the code is a completion of it (defines none of its names)."""
    if not starter_code:
        return code
    names = re.findall(r"^(?:class|def)\s+(\w+)", starter_code, re.MULTILINE)
    if any(re.search(rf"^\s*(?:class|def)\s+{name}\b", code, re.MULTILINE) for name in names):
        return code
    return f"{starter_code.rstrip()}\n{code}"


def _result(code: str | None, kinds: list[str | None], total: int, timeout: str | None, grading: str,
            by_tolerance: bool = False) -> dict:
    """The score_code dict from per-test failure kinds (None = passed)."""
    passed_count = sum(kind is None for kind in kinds)
    passed = total > 0 and passed_count == total and len(kinds) == total
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
        "timed_out": timeout is not None,
        "timeout": timeout,  # which limit ended a timed-out run: "cpu" or "wall"
        "grading": grading,
        "passed_by_tolerance": passed and by_tolerance,
    }


def grading_of(tests: dict) -> str:
    """How `tests` are graded: "isolated" (expected values stay here) or "in_process"
    (some assert could not be converted and runs next to the program)."""
    try:
        return HarnessPlan("", tests).grading if tests["type"] in _HARNESS_MODES else "isolated"
    except (KeyError, TypeError, ValueError, AttributeError):
        return "isolated"


def score_code(generation: str, tests: dict, *, limits: SandboxLimits | None = None,
               stop_at_first_failure: bool = True, starter_code: str | None = None,
               float_rule: str = "tolerant") -> dict:
    """Score a generation against `tests` (stdin/call/functional/asserts).

    Whatever the program does gives a verdict; only a sandbox that cannot be set up
    raises (`SandboxSetupError`), so the sample is a scoring failure, not a wrong answer.
    `stop_at_first_failure` skips the remaining stdin runs of a failed sample (the other
    kinds run all their tests in one sandbox run anyway). `float_rule` is `exact` (floats
    as the benchmark's own checker compares them) or `tolerant` (also within
    `DEFAULT_TOLERANCE`; `passed_by_tolerance` says a pass needed it).
    """
    if float_rule not in FLOAT_RULES:
        raise ValueError(f"unknown float rule {float_rule!r}: one of {', '.join(FLOAT_RULES)}")
    code = extract_code(generation)
    grading = grading_of(tests) if isinstance(tests, dict) else "isolated"
    try:
        if code is None:
            return _result(None, [], _count(tests), None, grading)
        program = _with_starter(code, starter_code)
        limits = limits or SandboxLimits()
        if tests["type"] == "stdin":
            verdicts = Verdicts(tests, float_rule)
            kinds, timeout = _score_stdin(program, tests, limits, stop_at_first_failure, verdicts)
            return _result(code, kinds, len(tests["inputs"]), timeout, grading, verdicts.by_tolerance)
        if tests["type"] not in _HARNESS_MODES:
            raise ValueError(f"unknown test type {tests['type']!r}")
        plan = HarnessPlan(program, tests, float_rule)
        kinds, total, timeout, grading = _score_harness(plan, limits)
        return _result(code, kinds, total, timeout, grading, plan.verdicts.by_tolerance)
    except SandboxSetupError:
        raise
    except Exception:
        logger.exception("code scoring failed; counted as a runtime error")
        return _result(code, ["runtime_error"], _count(tests), None, grading)


def _count(tests: dict) -> int:
    """Number of tests in a tests dict, 0 when it is malformed."""
    try:
        if tests["type"] in _HARNESS_MODES:
            return HarnessPlan("", tests).total
        return len(tests["inputs"])
    except (KeyError, TypeError, AttributeError, ValueError):
        return 0
