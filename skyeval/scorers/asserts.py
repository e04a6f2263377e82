"""Assert-style tests as (arguments, expected, comparison) triples, read with `ast`.

HumanEval/LeetCode `check(candidate)` bodies and MBPP `assert f(x) == y` lines become
`CallTest`s: the sandbox only calls the function with the arguments, the scorer compares
the value it returns. A statement that is not one of the shapes below stays in the
`residual` test code, which runs on the trusted side (`skyeval.scorers.trusted_check`).

Shapes (C = a call of the function under test with literal arguments, E = a literal):
`C == E` (either side), `C is True|False|None`, `C`, `not C`, `abs(C - E) < tol` (or
`<=`, either order inside), `math.isclose(C, E, rel_tol=.., abs_tol=..)`,
`set|sorted|tuple|list(C) == E` (E itself may be wrapped alike), and loops
`for x in <literal>:` whose body is such asserts (unrolled). `assert True` is dropped.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from skyeval.scorers.compare import Tolerance

_MAX_ITEMS = 1 << 20  # a literal built by `*` or range() larger than this is not converted
_BUILDERS = {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "sorted": sorted,
             "float": float, "int": int, "str": str, "range": range, "dict": dict, "bool": bool}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b}
# never the function under test in an MBPP assert (they wrap it); any other name may be,
# builtins included (MBPP task 448 defines its own `sum`)
NOT_TARGETS = frozenset({"set", "sorted", "tuple", "list", "abs", "isclose", "len", "round", "str", "int", "float"})


@dataclass(frozen=True)
class CallTest:
    """One converted test: call `function` (None: the entry point) with `args`/`kwargs`,
    then `comparison` of the returned value with `expected` (see `passes`)."""

    function: str | None
    args: tuple
    kwargs: dict = field(default_factory=dict)
    expected: Any = None
    comparison: str = "eq"  # eq | is | truthy | falsy | abs_lt | abs_le | isclose | set | sorted | tuple | list
    tolerance: tuple[float, ...] = ()  # abs_*: (bound,); isclose: (rel_tol, abs_tol)
    # The test's own source text of the arguments, an expression giving (args, kwargs), and
    # the (name, expression) bindings it reads, in the test's order: the sandbox builds the
    # arguments from these as the test would (a set literal iterates as the test's own does).
    # Empty source: the arguments are sent as values (call tests, whose arguments are JSON).
    source: str = ""
    bindings: tuple[tuple[str, str], ...] = ()
    # None: the arguments are built before any program code runs. Else they are built in the
    # program's namespace after the program, once this test code ran there (MBPP's arguments
    # name the program's own classes, `Pair(5, 24)`, or what its `test_setup_code` bound).
    setup: str | None = None


@dataclass(frozen=True)
class Converted:
    """A test file split into isolated `calls` and the `residual` code (None when nothing is left)."""

    calls: tuple[CallTest, ...]
    residual: str | None


class _Unconvertible(Exception):
    pass


class _Sources:
    """The source text behind the names a test binds to literals: each binding gets a fresh
    name (`_a0`, `_a1` ...) whose expression refers to earlier ones, so the sandbox can
    rebuild exactly the arguments a call reads, sharing objects as the test shares them."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # the test's name -> its current binding
        self.bindings: dict[str, tuple[str, frozenset[str]]] = {}  # binding -> (expression, bindings it reads)
        self._ids = itertools.count()

    def text(self, node: ast.AST) -> tuple[str, frozenset[str]]:
        """`node`'s source with the test's names renamed to their bindings, and those bindings
        (transitively)."""
        used: set[str] = set()
        aliases, bindings = self.aliases, self.bindings

        class Rename(ast.NodeTransformer):
            def visit_Name(self, name: ast.Name) -> ast.AST:
                if name.id in aliases:
                    used.add(aliases[name.id])
                    used.update(bindings[aliases[name.id]][1])
                    return ast.Name(id=aliases[name.id], ctx=name.ctx)
                return name

        return ast.unparse(Rename().visit(copy.deepcopy(node))), frozenset(used)

    def bind(self, name: str | None, expression: str, reads: frozenset[str]) -> str:
        """A new binding of `expression` (to `name`, when the test names it)."""
        alias = f"_a{next(self._ids)}"
        self.bindings[alias] = (expression, reads)
        if name is not None:
            self.aliases[name] = alias
        return alias

    def forget(self, name: str) -> None:
        self.aliases.pop(name, None)

    def lines(self, reads: frozenset[str]) -> tuple[tuple[str, str], ...]:
        return tuple((alias, self.bindings[alias][0]) for alias in sorted(reads, key=lambda a: int(a[2:])))


_WRAPPERS = ("set", "sorted", "tuple", "list")


class _Late:
    """An argument's value that only exists once the program ran (built from its source there)."""

    def __repr__(self) -> str:
        return "<built after the program>"


LATE = _Late()
_MAX_UNROLL = 1000


def literal(node: ast.AST, names: dict[str, Any] | None = None) -> Any:
    """Value of a literal expression (constants, containers, arithmetic, names in `names`,
    and a few pure builtins such as set()/range()); `_Unconvertible` otherwise."""
    names = names or {}
    try:
        value = _literal(node, names)
    except _Unconvertible:
        raise
    except Exception as err:  # an expression the test itself would fail on
        raise _Unconvertible(repr(err)) from None
    if isinstance(value, range):
        raise _Unconvertible("a bare range")
    return value


def _literal(node: ast.AST, names: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise _Unconvertible("starred element")
        items = [_literal(e, names) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _Unconvertible("** in a dict")
        return {_literal(k, names): _literal(v, names) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        value = _literal(node.operand, names)
        return {ast.USub: lambda v: -v, ast.UAdd: lambda v: +v, ast.Not: lambda v: not v}[type(node.op)](value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _literal(node.left, names), _literal(node.right, names)
        if isinstance(node.op, ast.Pow) and isinstance(right, int) and abs(right) > 4096:
            raise _Unconvertible("large power")
        if isinstance(node.op, ast.Mult) and any(isinstance(v, (str, list, tuple)) for v in (left, right)):
            count = right if isinstance(right, int) else left
            if isinstance(count, int) and count > _MAX_ITEMS:
                raise _Unconvertible("large repetition")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BUILDERS
            and node.func.id not in names and not node.keywords):
        args = [_literal(a, names) for a in node.args]
        if node.func.id == "range" and len(range(*args)) > _MAX_ITEMS:
            raise _Unconvertible("large range")
        return _BUILDERS[node.func.id](*args)
    raise _Unconvertible(f"not a literal: {type(node).__name__}")


@dataclass(frozen=True)
class Shape:
    """An assert in one of the shapes above: `comparison` of the value of `call` (the function
    under test) with `expected` (None for truthy/falsy). `expected_first`: the test writes the
    expected side first (`E == C`), so it is evaluated first. `tolerance`: the bound of
    `abs(C - E) < bound`, or the keyword nodes of `math.isclose` by name."""

    comparison: str
    call: ast.Call
    expected: ast.AST | None = None
    expected_first: bool = False
    tolerance: tuple[tuple[str, ast.AST], ...] = ()


def match(expr: ast.AST, is_target: Callable[[ast.AST], bool]) -> Shape | None:
    """The shape of an assert's expression, `is_target` telling calls of the function under
    test; None when it is none of the shapes."""
    if is_target(expr):
        return Shape("truthy", expr)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not) and is_target(expr.operand):
        return Shape("falsy", expr.operand)
    if isinstance(expr, ast.Call) and _is_isclose(expr.func) and len(expr.args) == 2:
        sides = [is_target(a) for a in expr.args]
        options = tuple((k.arg, k.value) for k in expr.keywords)
        if sides.count(True) == 1 and {name for name, _ in options} <= {"rel_tol", "abs_tol"}:
            first = not sides[0]
            call, other = (expr.args[1], expr.args[0]) if first else (expr.args[0], expr.args[1])
            return Shape("isclose", call, other, first, options)
        return None
    if not (isinstance(expr, ast.Compare) and len(expr.ops) == 1):
        return None
    left, op, right = expr.left, expr.ops[0], expr.comparators[0]
    if isinstance(op, ast.Eq):
        for side, other, first in ((left, right, False), (right, left, True)):
            found = _wrapped(side, is_target)
            if found:
                return Shape(found[0], found[1], other, first)
    if isinstance(op, ast.Is) and is_target(left) and isinstance(right, ast.Constant) \
            and type(right.value) in (bool, type(None)):
        return Shape("is", left, right)
    if isinstance(op, (ast.Lt, ast.LtE)) and isinstance(left, ast.Call) and isinstance(left.func, ast.Name) \
            and left.func.id == "abs" and len(left.args) == 1 and not left.keywords \
            and isinstance(left.args[0], ast.BinOp) and isinstance(left.args[0].op, ast.Sub):
        diff = left.args[0]
        kind = "abs_lt" if isinstance(op, ast.Lt) else "abs_le"
        for side, other, first in ((diff.left, diff.right, False), (diff.right, diff.left, True)):
            if is_target(side):
                return Shape(kind, side, other, first, (("bound", right),))
    return None


def _wrapped(node: ast.AST, is_target: Callable[[ast.AST], bool]) -> tuple[str, ast.Call] | None:
    """("eq"|"set"|"sorted"|"tuple"|"list", the call) for C, set(C), sorted(C) ..."""
    if is_target(node):
        return "eq", node
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS
            and len(node.args) == 1 and not node.keywords and is_target(node.args[0])):
        return node.func.id, node.args[0]
    return None


def tolerance_of(comparison: str, values: dict[str, Any]) -> tuple[float, ...]:
    """A CallTest's `tolerance` from the values of a shape's tolerance nodes."""
    if comparison == "isclose":
        return float(values.get("rel_tol", 1e-9)), float(values.get("abs_tol", 0.0))
    return (float(values["bound"]),) if "bound" in values else ()


class _Reader:
    """Reads assert statements; `candidate` names the function under test (None: any
    call of a name other than the wrappers (set, sorted, abs ...), as in MBPP's
    `assert remove_Occ("hello", "l") == "heo"`). With `late`, an argument that is not a
    literal is built in the program's namespace after the program (MBPP's arguments name
    what the program defines, `Pair(5, 24)`, or what `test_setup_code` bound, `root`); the
    expected value must still be a literal."""

    def __init__(self, candidate: str | None, names: dict[str, Any], sources: _Sources | None = None,
                 late: bool = False) -> None:
        self.candidate, self.names, self.sources, self.late = candidate, names, sources or _Sources(), late

    def _is_target(self, node: ast.AST) -> bool:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return False
        name = node.func.id
        if self.candidate is not None:
            return name == self.candidate
        return name not in NOT_TARGETS and name not in self.names

    def _argument(self, node: ast.AST) -> Any:
        try:
            return literal(node, self.names)
        except _Unconvertible:
            if not self.late:
                raise
            return LATE

    def _call(self, node: ast.Call) -> tuple[str | None, tuple, dict, str, tuple[tuple[str, str], ...]]:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _Unconvertible("*args or **kwargs")
        args = tuple(self._argument(a) for a in node.args)
        kwargs = {k.arg: self._argument(k.value) for k in node.keywords}
        texts = [self.sources.text(a) for a in node.args]
        named = [(k.arg, self.sources.text(k.value)) for k in node.keywords]
        source = ("(" + "".join(f"{text}, " for text, _ in texts) + "), {"
                  + ", ".join(f"{key!r}: {text}" for key, (text, _) in named) + "}")
        reads = frozenset().union(*(r for _, r in texts), *(r for _, (_, r) in named))
        return (None if self.candidate else node.func.id), args, kwargs, source, self.sources.lines(reads)

    def read(self, stmt: ast.stmt) -> CallTest:
        if not isinstance(stmt, ast.Assert):
            raise _Unconvertible("not an assert")
        shape = match(stmt.test, self._is_target)
        if shape is None:
            raise _Unconvertible("unsupported assert shape")
        if shape.comparison == "is":
            expected = shape.expected.value
        else:
            expected = None if shape.expected is None else literal(shape.expected, self.names)
        tolerance = tolerance_of(shape.comparison, {k: literal(v, self.names) for k, v in shape.tolerance})
        function, args, kwargs, source, bindings = self._call(shape.call)
        return CallTest(function, args, kwargs, expected, shape.comparison, tolerance, source, bindings)


def _is_isclose(func: ast.AST) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "isclose" and isinstance(func.value, ast.Name)
            and func.value.id == "math") or (isinstance(func, ast.Name) and func.id == "isclose")


def _uses(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


@functools.lru_cache(maxsize=2048)
def convert_check(test: str) -> Converted:
    """Split a `def check(candidate): ...` test file (HumanEval, LeetCode)."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return Converted((), test)
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1 or len(checks[0].args.args) != 1:
        return Converted((), test)
    check = checks[0]
    candidate = check.args.args[0].arg
    names: dict[str, Any] = {}
    sources = _Sources()
    for node in tree.body:  # module-level literal constants the asserts may use
        _remember(node, names, sources)
    reader = _Reader(candidate, names, sources)
    calls, kept = [], []
    for stmt in check.body:
        if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant) and stmt.test.value:
            continue  # `assert True`: tests nothing
        try:
            calls.extend(_unrolled(reader, stmt) if isinstance(stmt, ast.For) else [reader.read(stmt)])
            continue
        except _Unconvertible:
            pass
        _remember(stmt, names, sources)
        kept.append(stmt)
    if not any(_uses(stmt, candidate) or any(isinstance(n, ast.Assert) for n in ast.walk(stmt)) for stmt in kept):
        return Converted(tuple(calls), None)
    check.body = kept
    return Converted(tuple(calls), ast.unparse(tree))


def _unrolled(reader: _Reader, loop: ast.For) -> list[CallTest]:
    """`for x in <literal>: assert ...` as one test per item (its body only asserts)."""
    if not isinstance(loop.target, ast.Name) or loop.orelse:
        raise _Unconvertible("loop shape")
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
        it = ast.Call(func=ast.Name(id="list", ctx=ast.Load()), args=[it], keywords=[])
    items = literal(it, reader.names)
    if not isinstance(items, (list, tuple, str)) or len(items) > _MAX_UNROLL:
        raise _Unconvertible("loop items")
    sources = reader.sources
    name, saved, saved_alias = loop.target.id, reader.names.get(loop.target.id, _MISSING), sources.aliases.get(loop.target.id)
    whole = sources.bind(None, *sources.text(it))  # each item is an element of it, as in the loop
    try:
        tests = []
        for i, item in enumerate(items):
            reader.names[name] = item
            sources.bind(name, f"{whole}[{i}]", frozenset({whole, *sources.bindings[whole][1]}))
            tests.extend(reader.read(stmt) for stmt in loop.body)
        return tests
    finally:
        if saved is _MISSING:
            reader.names.pop(name, None)
        else:
            reader.names[name] = saved
        sources.forget(name)
        if saved_alias is not None:
            sources.aliases[name] = saved_alias


_MISSING = object()


def _remember(node: ast.stmt, names: dict[str, Any], sources: _Sources) -> None:
    """Track `name = literal` assignments, with their source (others make the name unknown)."""
    value = None
    if isinstance(node, ast.Assign):
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        try:
            value = literal(node.value, names) if len(targets) == len(node.targets) == 1 else None
        except _Unconvertible:
            value = None
        text = sources.text(node.value) if value is not None else None
    for target in ast.walk(node):
        if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
            names.pop(target.id, None)
            sources.forget(target.id)
    if value is not None:
        names[targets[0]] = value
        sources.bind(targets[0], *text)


@functools.lru_cache(maxsize=8192)
def convert_assert(test: str) -> CallTest | None:
    """One MBPP-style assert line (`assert f(x) == y`), after any setup statements (MBPP's
    `test_setup_code`, run after the program: its names may be arguments); None when it is
    not one of the shapes."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return None
    if not tree.body:
        return None
    *setup, last = tree.body
    try:
        call = _Reader(None, {}, late=True).read(last)
    except _Unconvertible:
        return None
    if LATE in call.args or LATE in call.kwargs.values():
        return dataclasses.replace(call, setup=ast.unparse(setup) if setup else "")
    return call


def passes(test: CallTest, got: Any, tol: Tolerance | None = None) -> bool:
    """Whether value `got` (plain data from the sandbox) passes `test`, judged here."""
    from skyeval.scorers.compare import DEFAULT_TOLERANCE, same, spread

    tol = tol or DEFAULT_TOLERANCE
    how, want = test.comparison, test.expected
    try:
        if how == "eq":
            return same(got, want, tol)
        if how == "is":
            return type(got) is type(want) and got == want
        if how in ("truthy", "falsy"):
            return bool(got) is (how == "truthy")
        if how in ("abs_lt", "abs_le", "isclose"):
            if type(got) not in (int, float) or type(want) not in (int, float):
                return False
            if how == "isclose":
                return math.isclose(got, want, rel_tol=test.tolerance[0], abs_tol=test.tolerance[1])
            gap = abs(got - want)
            return gap < test.tolerance[0] if how == "abs_lt" else gap <= test.tolerance[0]
        if how == "set":
            return isinstance(got, (list, tuple, set, frozenset, str, dict)) and set(spread(list(got))) == want
        if how in ("sorted", "tuple", "list"):
            return isinstance(got, (list, tuple, set, frozenset, str, dict)) and same(_BUILDERS[how](got), want, tol)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return False
    raise ValueError(f"unknown comparison {how!r}")
