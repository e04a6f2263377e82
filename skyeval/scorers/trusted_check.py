"""A benchmark's own check code, run on the trusted side (docs/sandbox.md).

Some checks cannot be read as literal (arguments, expected) triples: they draw random
inputs (HumanEval 32, 38, 50, 53), compute the expected value with a helper or a
comprehension (HumanEval 33, 151), or with the interpreter itself (MBPP sanitized
`tuple_size`: `sys.getsizeof(...)`). That code comes with the data, so it is trusted; it
runs in a sandboxed process of its own (random seeded), with the reference solution where
the test calls the benchmark's helpers, and never next to the program:

- `record` runs the check once per problem. Where every use of the function under test is
  an assert of a known shape (`asserts.match`), each such assert is rewritten to record the
  call's arguments and the expected value the test computes: (arguments, expected) pairs,
  judged here by the one comparison rule like any converted assert.
- Otherwise (HumanEval 32 asserts a property of the returned value: `poly(xs, x) ~ 0`), the
  check runs with the reference solution to record each call's arguments; the program's
  returned values (plain data) are then fed to a second run of the check, `replay`, which
  says whether each part of it passed. A replay whose calls differ from the recording fails.

The program's process receives only the arguments, as values; it never sees the check.
"""

from __future__ import annotations

import ast
import functools
import logging
import marshal
import secrets
from dataclasses import dataclass

from skyeval.scorers.asserts import CallTest, match, tolerance_of
from skyeval.scorers.sandbox import SandboxLimits, run_program

logger = logging.getLogger(__name__)

# The check is trusted but still runs sandboxed, with limits of its own.
LIMITS = SandboxLimits(timeout_s=60.0, cpu_s=20.0)
CANDIDATE, PAIR, ARGS = "_skyeval_candidate", "_skyeval_pair", "_skyeval_args"

# How both sandboxed harnesses (this one and skyeval.scorers.code's) start: the marker from
# stdin, a reporter writing marked lines to a private duplicate of stdout, and the spec,
# deleted before any other code runs.
OPENING = r'''
def _open():
    marker = sys.stdin.readline().strip()
    out = os.fdopen(os.dup(1), "w")
    def report(line):
        out.write("\n" + marker + line + "\n")
        out.flush()
    with open("spec.marshal", "rb") as f:
        spec = marshal.load(f)
    os.remove("spec.marshal")
    return spec, report
'''

# Runs in the sandbox: loads spec.marshal (header, reference, the check's chunks, the
# function under test, and for a replay the recorded arguments and the program's values),
# seeds `random`, runs each chunk and reports on a private duplicate of stdout:
# record: "ok\t<hex of marshal((calls, pairs, starts))>" or "fail\t<chunk>\t<error>";
# replay: one "c\tok" or "c\tfail\t<error>" per chunk. Arguments are snapshotted with
# marshal at each call (plain data only).
HARNESS = r'''
import marshal, os, random, sys

class _Stop(BaseException):
    pass
''' + OPENING + r'''
def _main():
    spec, report = _open()
    values, recorded, starts = spec["values"], spec["args"], spec["starts"]
    replaying = values is not None
    calls, pairs, begun = [], [], []
    pos = [0, None]  # next call index, end of the current chunk's calls (replay)
    ns = {"__name__": "__main__", "__builtins__": __builtins__}

    def snapshot(args, kwargs):
        try:
            return marshal.dumps((args, kwargs), 4)
        except ValueError:
            raise _Stop("an argument is not plain data") from None

    def step(args, kwargs):
        i, text = pos[0], snapshot(args, kwargs)
        pos[0] += 1
        if replaying:
            if i >= pos[1] or recorded[i] != text:
                raise _Stop("the check made other calls than it did with the reference solution")
        else:
            calls.append(text)
        return i

    def candidate(*args, **kwargs):
        i = step(args, kwargs)
        if replaying:
            status, value = values[i]
            if status != "v":
                raise RuntimeError("the program failed this call")
            return value
        try:
            function = eval(spec["target"], ns)
        except Exception:
            raise _Stop("no reference solution to run the check with") from None
        return function(*args, **kwargs)

    def pair(comparison, expected_first, a, b, tolerance):
        (args, kwargs), expected = (b, a) if expected_first else (a, b)
        i = step(args, kwargs)
        try:
            marshal.dumps(expected, 4)
        except ValueError:
            raise _Stop("an expected value is not plain data") from None
        pairs.append((i, comparison, expected, tolerance))

    ns.update({"''' + CANDIDATE + '''": candidate, "''' + PAIR + '''": pair,
               "''' + ARGS + '''": lambda *args, **kwargs: (args, kwargs)})
    random.seed(0)
    try:
        exec(spec["header"], ns)
        exec(spec["reference"], ns)
    except BaseException as exc:
        report("fail\t-1\t" + repr(exc)[:300])
        return
    for c, chunk in enumerate(spec["chunks"]):
        if replaying:
            pos[0], pos[1] = starts[c], starts[c + 1]
        else:
            begun.append(len(calls))
        try:
            exec(compile(chunk, "check_%d.py" % c, "exec"), ns)
            if replaying and pos[0] != pos[1]:
                raise _Stop("the check made fewer calls than it did with the reference solution")
        except BaseException as exc:
            if not replaying:
                report("fail\t%d\t%s" % (c, repr(exc)[:300]))
                return
            report("%d\tfail\t%s" % (c, repr(exc)[:300]))
        else:
            if replaying:
                report("%d\tok" % c)
    if not replaying:
        report("ok\t" + marshal.dumps((calls, pairs, begun + [len(calls)]), 4).hex())

_main()
sys.stdout.flush()
os._exit(0)
'''


class Unrecordable(Exception):
    """The check cannot run on the trusted side; its asserts run next to the program."""


@dataclass(frozen=True)
class Recording:
    """What the program's process is asked for, and how it is judged: `calls` in the order
    the check makes them (pairs carry their expected value and comparison; a call whose
    value only the check's own code judges has comparison "replay"), and for a replay, the
    spec of the trusted run and where each chunk's calls start."""

    calls: tuple[CallTest, ...]
    replay: dict | None = None  # the trusted run's spec, without the program's values
    chunks: int = 0  # parts judged by the replay (one test each)


def _is_call_of(name: str):
    return lambda node: isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


class _Pairs(ast.NodeTransformer):
    """Rewrites each assert of a known shape on `target` into a pair record:
    `_skyeval_pair(comparison, expected_first, args, expected, {tolerance})`, keeping the
    test's order of evaluation."""

    def __init__(self, target: str) -> None:
        self.target, self.is_target, self.consumed = target, _is_call_of(target), 0

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        shape = match(node.test, self.is_target)
        if shape is None or any(_mentions(part, self.target) for part in (*shape.call.args, shape.expected,
                                                                          *(k.value for k in shape.call.keywords),
                                                                          *(v for _, v in shape.tolerance))):
            return node
        self.consumed += 1
        args = ast.Call(func=ast.Name(ARGS, ast.Load()), args=shape.call.args, keywords=shape.call.keywords)
        expected = shape.expected if shape.comparison != "is" else shape.expected
        expected = expected if expected is not None else ast.Constant(None)
        sides = [expected, args] if shape.expected_first else [args, expected]
        tolerance = ast.Dict(keys=[ast.Constant(k) for k, _ in shape.tolerance], values=[v for _, v in shape.tolerance])
        call = ast.Call(func=ast.Name(PAIR, ast.Load()), keywords=[],
                        args=[ast.Constant(shape.comparison), ast.Constant(shape.expected_first), *sides, tolerance])
        return ast.copy_location(ast.Expr(call), node)


def _mentions(node: ast.AST | None, name: str) -> bool:
    return node is not None and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _uses(tree: ast.AST, name: str) -> int:
    return sum(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(tree))


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(self.new, node.ctx), node) if node.id == self.old else node


def instrument(chunks: tuple[str, ...], target: str) -> tuple[tuple[str, ...], bool]:
    """The chunks as the trusted run executes them, and whether every use of `target` (the
    function under test's name in the test) is a pair; else each use calls the recorder."""
    trees = [ast.parse(chunk) for chunk in chunks]
    rewriters = [_Pairs(target) for _ in trees]
    rewritten = [r.visit(t) for r, t in zip(rewriters, [ast.parse(chunk) for chunk in chunks])]
    if all(_uses(r, target) == 0 for r in rewritten):
        return tuple(ast.unparse(ast.fix_missing_locations(r)) for r in rewritten), True
    return tuple(ast.unparse(_Rename(target, CANDIDATE).visit(t)) for t in trees), False


def _run(spec: dict, limits: SandboxLimits = LIMITS) -> tuple[str, list[tuple[str, ...]]]:
    """Run the trusted harness on `spec`; its report lines, split on tabs."""
    marker = f"@@skyeval-check-{secrets.token_hex(8)}@@"
    run = run_program(HARNESS, marker + "\n", limits=limits, files={"spec.marshal": marshal.dumps(spec, 4)})
    lines = [line[len(marker):].split("\t") for line in run.stdout.splitlines() if line.startswith(marker)]
    return run.status, lines


@functools.lru_cache(maxsize=512)
def _record(chunks: tuple[str, ...], target: str, function: str, header: str, reference: str) -> Recording | str:
    try:
        code, pairs_only = instrument(chunks, target)
    except SyntaxError as err:
        return f"the check does not parse: {err}"
    spec = {"header": header, "reference": reference, "chunks": list(code), "target": function,
            "values": None, "args": None, "starts": None}
    status, lines = _run(spec)
    if not lines:
        return f"the check ended without a report ({status})"
    if lines[-1][0] != "ok" or len(lines[-1]) != 2:
        return f"the check fails with the reference solution ({' '.join(lines[-1][1:])[:200]})"
    try:
        calls, pairs, starts = marshal.loads(bytes.fromhex(lines[-1][1]))
        arguments = [marshal.loads(call) for call in calls]
    except (ValueError, EOFError, TypeError) as err:
        return f"unreadable recording: {err}"
    if pairs_only:
        tests = tuple(CallTest(function, tuple(arguments[i][0]), dict(arguments[i][1]), expected, comparison,
                               tolerance_of(comparison, tolerance)) for i, comparison, expected, tolerance in pairs)
        return Recording(tests)
    tests = tuple(CallTest(function, tuple(args), dict(kwargs), comparison="replay") for args, kwargs in arguments)
    return Recording(tests, {**spec, "chunks": list(code), "args": calls, "starts": starts}, len(chunks))


def record(chunks: tuple[str, ...], target: str, *, function: str | None = None, header: str = "",
           reference: str | None = None) -> Recording:
    """Run the check `chunks` (test code in which `target` names the function under test) on
    the trusted side; `function` is how the reference solution's one is found (default:
    `target`). Cached per process. `Unrecordable` says why it could not be done."""
    found = _record(tuple(chunks), target, function or target, header, reference or "")
    if isinstance(found, str):
        raise Unrecordable(f"the check of {function or target}: {found}")
    return found


@functools.lru_cache(maxsize=512)
def warn_once(why: str) -> None:
    logger.warning("a check runs next to the program (grading: in_process): %s", why)


def replay(recording: Recording, values: list[tuple[str, object]], limits: SandboxLimits) -> list[str | None]:
    """Each chunk's verdict (None: passed; else why it failed) when the check runs again, under
    the sample's `limits`, with the program's returned `values` (one ("v", value) or
    (kind, None) per recorded call)."""
    spec = {**recording.replay, "values": [(status, value if status == "v" else None) for status, value in values]}
    status, lines = _run(spec, limits)
    verdicts: list[str | None] = ["wrong_answer"] * recording.chunks
    for line in lines:
        if len(line) >= 2 and line[0].isdigit() and int(line[0]) < recording.chunks:
            verdicts[int(line[0])] = None if line[1] == "ok" else "wrong_answer"
    return verdicts
