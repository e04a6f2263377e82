"""The symbolic check: math-verify's parse and verify of two answers, under the caller's
time limit, plus the numeric identity of two expressions (rule `symbolic-identity`)."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from skyeval.errors import require
from skyeval.scorers.math.numbers import EXACT, number_value, stated_tolerance

MATH_VERIFY_INSTALL = 'pip install "math-verify[antlr4_9_3]" (or reinstall skyeval)'


def require_math_verify() -> None:
    """Raise MissingDependencyError (with what to install) when math-verify or its LaTeX
    parser cannot be imported. Cheap: looks the modules up without importing them."""
    for module in ("math_verify", "latex2sympy2_extended", "antlr4"):
        require(module, MATH_VERIFY_INSTALL, "math grading")


@lru_cache(maxsize=8192)
def parse_boxed(answer: str) -> list:
    """math-verify's parse of ``\\boxed{answer}``, cached per process: n samples share a gold,
    and often an answer (verify does not modify what it is given)."""
    from math_verify import parse

    return parse(f"\\boxed{{{answer}}}", _boxed_config(), parsing_timeout=None)


@lru_cache(maxsize=1)
def _boxed_config() -> tuple:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    return (LatexExtractionConfig(), ExprExtractionConfig())


def verify_any(pairs: tuple[tuple[str, str], ...], rule: str = EXACT) -> tuple[bool | None, bool]:
    """(verdict, equal only by a tolerance): True if a candidate equals its gold, False if
    every pair was compared and none is equal, None (undecided) if none is equal and
    math-verify could not parse one side of a pair. No own timeouts: the caller bounds the time.

    Under the `exact` rule decimals are read as the exact values they write (`0.5` is
    `\\frac12`; `1.41421356` is no `\\sqrt2`, `0.333` no `\\frac13`). Under `approximate` a decimal
    gold is compared by value within its stated precision, and math-verify's own rounding of
    decimals applies. Expressions with variables that math-verify calls different are compared
    once more (rule `symbolic-identity`), never on a decimal the exact rule reads as written."""
    from math_verify import verify

    unparsed = False
    for gold_text, candidate in pairs:
        golds = parse_boxed(gold_text)
        predictions = parse_boxed(candidate)
        if not golds or not predictions:
            unparsed = True
            continue
        if all(isinstance(p, str) for p in golds) or all(isinstance(p, str) for p in predictions):
            unparsed = True  # math-verify read only the text of a side: a "different" would be unproved
        if rule == EXACT:
            if any(_exactly_equal(gold, prediction) for prediction in predictions for gold in _stated(golds, prediction)
                   if not _proved_different(gold, prediction)):
                return True, False
            continue
        gold_number = number_value(gold_text)
        tolerance = stated_tolerance(gold_text, gold_number) if gold_number is not None else None
        for prediction in predictions:
            if tolerance is not None:
                value = _numeric_value(prediction)
                if value is not None:
                    if abs(value - float(gold_number)) <= float(tolerance) * (1 + 1e-9):
                        return True, Fraction(repr(value)) != gold_number
                    continue
            candidates = [gold for gold in _stated(golds, prediction) if not _proved_different(gold, prediction)]
            if any(verify(gold, prediction, timeout_seconds=None) for gold in candidates):
                return True, not any(_exactly_equal(gold, prediction) for gold in candidates)
            if any(_same_function(gold, prediction) for gold in candidates):
                return True, False
    return (None if unparsed else False), False


def _stated(golds: list, prediction) -> list:
    """The parsed golds and, against an answer that is no equation, the value a gold computation
    states (`48+\\frac{42}{48}=48.875`: `48.875`; both sides numbers, no variable)."""
    import sympy

    if isinstance(prediction, sympy.core.relational.Relational):
        return golds
    return golds + [g.rhs for g in golds if isinstance(g, sympy.Eq) and _is_number(g.lhs) and _is_number(g.rhs)]


def _exactly_equal(gold, prediction) -> bool:
    """math-verify's equality with every decimal read as the exact rational it writes, and
    rule `symbolic-identity` when no decimal is involved."""
    from math_verify import verify

    exact_gold, exact_prediction = _rational(gold), _rational(prediction)
    decimals = exact_prediction is not prediction or exact_gold is not gold
    if decimals and _is_number(exact_gold) and _is_number(exact_prediction):
        try:  # two numbers: equal values, or not (a terminating decimal is never sqrt 2)
            return bool((exact_gold - exact_prediction).is_zero)
        except (TypeError, ValueError, AttributeError, ArithmeticError, RecursionError):
            return False
    if verify(exact_gold, exact_prediction, timeout_seconds=None):
        return True
    return not decimals and _same_function(gold, prediction)


def _rational(parsed):
    """`parsed` with each Float replaced by the exact rational of its decimal digits (the
    same object when it holds none, or is no sympy expression). A relation keeps its form:
    `48+\\frac{42}{48}=48.875` stays an equation (rebuilt, it would evaluate to `True`)."""
    import sympy

    if not isinstance(parsed, sympy.Basic):
        return parsed
    floats = parsed.atoms(sympy.Float)
    if not floats:
        return parsed
    exact = {f: sympy.Rational(str(f)) for f in floats}

    def rebuilt(expression):
        if isinstance(expression, sympy.core.relational.Relational):
            return expression.func(rebuilt(expression.lhs), rebuilt(expression.rhs), evaluate=False)
        if isinstance(expression, sympy.And):
            return sympy.And(*map(rebuilt, expression._unsorted_args), evaluate=False)
        return expression.xreplace(exact)

    return rebuilt(parsed)


def _is_number(parsed) -> bool:
    import sympy

    return isinstance(parsed, sympy.Expr) and bool(parsed.is_number)


def _numeric_value(parsed) -> float | None:
    """The value of a parsed answer that is a plain number (``x = 3.1`` counts), else None."""
    import sympy

    if isinstance(parsed, sympy.Eq):
        parsed = parsed.rhs
    if isinstance(parsed, sympy.Basic) and parsed.is_number:
        try:
            value = complex(parsed.evalf())
        except (TypeError, ValueError):
            return None
        return value.real if value.imag == 0 else None
    return None


def _proved_different(gold, prediction) -> bool:
    """Whether a cheap numeric check proves two parsed answers different, sparing math-verify's
    symbolic work (simplify, solve, integrate: seconds on long expressions): expressions in the
    same variables that disagree at a point where both are defined, under every renaming of a
    general solution's numbered constants; equations in 2+ variables whose sides' differences
    are not proportional; a constant gold against an answer whose value changes with its
    variables. Never for floor, absolute value and other piecewise functions, undefined
    functions, decimals in an expression (the approximate rule rounds them), or unevaluated sums,
    products and integrals (sympy evaluates `\\sum_{k=1}^{p-1} k^n` at a point by Euler-Maclaurin:
    a minute)."""
    import sympy

    try:
        if gold == prediction or any(isinstance(e, sympy.Basic) and e.has(*_unevaluated()) for e in (gold, prediction)):
            return False  # the same parse; or a sum, product or integral, slow to evaluate at a point
        if isinstance(gold, sympy.Eq) != isinstance(prediction, sympy.Eq):
            equation = gold if isinstance(gold, sympy.Eq) else prediction
            if _to_solve(equation):
                return True  # rule defining-equation: `x^2-2x+10=0` is an equation to solve, not the value 0
        elif isinstance(gold, sympy.Eq) and not (gold.free_symbols or prediction.free_symbols):
            if gold.rhs.is_number and prediction.rhs.is_number and gold.rhs != prediction.rhs:
                return True  # two statements of values: `|A| = -6` is not `|B| = -32`
        if isinstance(prediction, sympy.Eq) and not isinstance(gold, sympy.Eq) and isinstance(prediction.lhs, sympy.Symbol):
            prediction = prediction.rhs  # `L = ...` against a value: its right side
        equations = isinstance(gold, sympy.Eq) and isinstance(prediction, sympy.Eq)
        if equations:
            gold, prediction = gold.lhs - gold.rhs, prediction.lhs - prediction.rhs
        if not (isinstance(gold, sympy.Expr) and isinstance(prediction, sympy.Expr)):
            return False
        if any(e.has(*_piecewise()) or e.atoms(sympy.core.function.AppliedUndef) for e in (gold, prediction)):
            return False
        names = {x.name for x in gold.free_symbols}
        answer_names = {x.name for x in prediction.free_symbols}
        if not answer_names:
            return False
        if not names:  # a constant gold: an answer that varies with its variables is no constant
            return _varies(prediction, answer_names)
        if names != answer_names or (equations and len(names) < 2) or gold.has(sympy.Float) or prediction.has(sympy.Float):
            return False
        if equations:
            return _proportional(gold, prediction, names) is False
        by_name = {x.name: x for x in prediction.free_symbols}
        renamings = _renamings(names, answer_names) or [{}]
        return all(_agree_numerically(gold, prediction.xreplace({by_name[a]: by_name[g] for a, g in r.items()}),
                                      answer_names) is False for r in renamings)
    except (TypeError, ValueError, AttributeError, ArithmeticError, RecursionError):
        return False


def _names_a_value(lhs) -> bool:
    """The left side of a definition: a name (`x`, `a_1`, `\\mathbf{y}`, `AB`) or a function at its
    arguments (`f(t)`, `v(0)`), not an expression (`x^2 - 2x + 10`, `2x`, `x^2`)."""
    import sympy

    if isinstance(lhs, sympy.Symbol):
        return True
    if isinstance(lhs, sympy.Mul) and all(isinstance(f, sympy.Symbol) for f in lhs.args) and len(set(lhs.args)) == len(lhs.args):
        return True  # letters side by side: a segment, a product of matrices (`AB`, `PQ`), never an equation to solve
    return isinstance(lhs, sympy.core.function.AppliedUndef) and all(
        isinstance(a, sympy.Symbol) or a.is_number for a in lhs.args)


def _to_solve(equation) -> bool:
    """An equation to solve: a polynomial of degree 2 or more set to 0 (`x^2 - 2x + 10 = 0`), not
    a definition (`f(t) = ...`), the value of an expression asked for (`2x + 3 = 8`, `a + b = 0`)
    or a computation (`19x - 4x - 80 = 15x - 80`)."""
    import sympy

    if equation.rhs != 0 or _names_a_value(equation.lhs) or not equation.lhs.free_symbols:
        return False
    try:
        degree = sympy.Poly(equation.lhs, *sorted(equation.lhs.free_symbols, key=str)).total_degree()
    except sympy.PolynomialError:
        return False
    return degree >= 2 and not _identity_holds(equation)


def _identity_holds(equation) -> bool:
    """Whether both sides are equal wherever evaluated (a computation, `19x - 4x - 80 = 15x - 80`,
    `\\lim_{x \\to 0} x = 0`), not an equation to solve; False when it cannot be evaluated."""
    difference = (equation.lhs - equation.rhs).doit()
    names = {x.name for x in difference.free_symbols}
    values = [_value_at(difference, point) for point in _points(names, 4)] if names else [_value_at(difference, {})]
    return all(v is not None and abs(v) < 1e-9 for v in values)


def _varies(expression, names: set[str]) -> bool:
    """Whether `expression` takes two different values at the fixed pseudo-random points."""
    values = [v for v in (_value_at(expression, point) for point in _points(names, 4)) if v is not None]
    return len(values) >= 2 and any(abs(v - values[0]) > 1e-9 * max(1.0, abs(values[0])) for v in values)


def _points(names: set[str], count: int) -> list[dict]:
    import random

    import sympy

    rng = random.Random(38)
    return [{name: sympy.I if name == "i" else sympy.Float(rng.uniform(0.5, 3.5)) for name in sorted(names)}
            for _ in range(count)]


def _value_at(expression, point: dict) -> complex | None:
    try:
        value = complex(expression.xreplace({s: point[s.name] for s in expression.free_symbols}).evalf())
    except (TypeError, ValueError, ZeroDivisionError, KeyError):
        return None
    return value if _finite(value) else None


def _proportional(a, b, names: set[str], points: int = 4) -> bool | None:
    """Whether `a = k b` for one constant k at `points` fixed pseudo-random points (None when
    fewer than 2 points are defined and nonzero)."""
    import random

    import sympy

    rng = random.Random(38)
    ratios = []
    for _ in range(points):
        values = {name: sympy.Float(rng.uniform(0.5, 3.5)) for name in sorted(names)}
        try:
            x = complex(a.xreplace({s: values[s.name] for s in a.free_symbols}).evalf())
            y = complex(b.xreplace({s: values[s.name] for s in b.free_symbols}).evalf())
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if not all(map(_finite, (x, y))) or abs(y) < 1e-12:
            continue
        ratios.append(x / y)
    if len(ratios) < 2:
        return None
    return all(abs(r - ratios[0]) <= 1e-9 * max(1.0, abs(ratios[0])) for r in ratios)


def _same_function(gold, prediction) -> bool:
    """`_identity`, and False where sympy cannot take the pair at all (an equation whose
    side is a set: `x = \\{-2, 0\\}`): this rule only ever proves equality."""
    try:
        return _identity(gold, prediction)
    except (TypeError, ValueError, AttributeError, ArithmeticError, RecursionError):
        return False


def _identity(gold, prediction) -> bool:
    """Rule `symbolic-identity`: two expressions in the same variables whose difference
    simplifies to 0 once rewritten in exponentials, or that agree numerically at random
    points (complex constants: `\\frac{1-i}{4}e^{2it}` = `\\frac{e^{2it}}{2+2i}`). Arbitrary
    constants of a general solution may be named or ordered differently (`A e^t + B e^{-t}`
    = `C_1 e^t + C_2 e^{-t}`) when the expression also has a real variable (`t`)."""
    import sympy

    if isinstance(gold, sympy.Eq) and isinstance(prediction, sympy.Eq):  # the same equation, rearranged
        gold, prediction = gold.lhs - gold.rhs, prediction.lhs - prediction.rhs
    if not (isinstance(gold, sympy.Expr) and isinstance(prediction, sympy.Expr)):
        return False
    names = {x.name: x for x in gold.free_symbols}
    answer_names = {x.name: x for x in prediction.free_symbols}
    if not names or len(names.keys() | answer_names.keys()) > 8:
        return False
    piecewise = gold.has(*_piecewise()) or prediction.has(*_piecewise())  # floor(n/2), floor(sqrt(n-1)) agree often
    if names.keys() == answer_names.keys():
        if "i" in names and not piecewise:  # `i` read as a symbol: the imaginary unit
            return bool(_agree_numerically(gold, prediction, set(names)))
        numeric = None if piecewise else _agree_numerically(gold, prediction, set(names))
        if numeric:
            return True
        if numeric is None and gold.free_symbols == prediction.free_symbols:  # undefined at the points, or piecewise
            return sympy.simplify((gold - prediction).rewrite(sympy.exp)) == 0
        renamings = _renamings(set(names), set(answer_names))[1:]  # different as written: constants reordered?
    else:
        renamings = _renamings(set(names), set(answer_names))
    return not piecewise and any(
        _agree_numerically(gold, prediction.xreplace({answer_names[a]: names[g] for a, g in renaming.items()}), set(names))
        for renaming in renamings
    )


def _unevaluated() -> tuple:
    import sympy

    return (sympy.Sum, sympy.Product, sympy.Integral)


def _piecewise() -> tuple:
    import sympy

    return (sympy.floor, sympy.ceiling, sympy.frac, sympy.Abs, sympy.sign, sympy.Mod, sympy.Piecewise, sympy.Min, sympy.Max)


_NUMBERED_CONSTANT = re.compile(r"^[ack]_?\{?\d\}?$", re.IGNORECASE)  # c_1, C2, k_1, a_1 (math-verify lower-cases)
_CONSTANT_NAME = re.compile(r"^(?:[a-dk]|[a-dk]_?\{?\d\}?)$", re.IGNORECASE)


def _renamings(names: set[str], answer_names: set[str]) -> list[dict[str, str]]:
    """Renamings (answer name -> gold name) of the answer's arbitrary constants to try: with
    the same names, the identity first, then every order of the gold's numbered constants (c_1, c_2) when both use the
    same names, or every bijection of the answer's own constants (A, B) onto them."""
    import itertools

    identity = {n: n for n in answer_names}
    if names == answer_names:
        constants = sorted(n for n in names if _NUMBERED_CONSTANT.match(n))
        if len(constants) < 2 or len(constants) > 3 or not names - set(constants):
            return [identity]
        return [{**identity, **dict(zip(constants, order))} for order in itertools.permutations(constants)]
    gold_only, answer_only = sorted(names - answer_names), sorted(answer_names - names)
    shared = names & answer_names
    if len(gold_only) != len(answer_only) or len(gold_only) > 3 or not shared - {"i"}:
        return []
    if not all(_NUMBERED_CONSTANT.match(n) for n in gold_only) or not all(_CONSTANT_NAME.match(n) for n in answer_only):
        return []  # only a general solution's numbered constants (c_1, c_2) are arbitrary
    if all(_CONSTANT_NAME.match(n) for n in shared):
        return []  # no real variable: "a" and "b" are just two different letters
    return [{**{n: n for n in shared}, **dict(zip(answer_only, order))} for order in itertools.permutations(gold_only)]


def _agree_numerically(gold, prediction, symbols: set[str], points: int = 4) -> bool | None:
    """Equal (relative 1e-9) at ``points`` fixed pseudo-random points, False at the first
    point where they differ, None when fewer than 2 points are defined."""
    import random

    import sympy

    names = sorted(symbols)
    if {s.name for s in prediction.free_symbols} - set(names):
        return None
    rng = random.Random(38)
    defined = 0
    for _ in range(points):
        values = {name: sympy.I if name == "i" else sympy.Float(rng.uniform(0.5, 3.5)) for name in names}
        try:  # symbols are matched by name: the two sides' parses may differ in assumptions
            a = complex(gold.xreplace({s: values[s.name] for s in gold.free_symbols}).evalf())
            b = complex(prediction.xreplace({s: values[s.name] for s in prediction.free_symbols}).evalf())
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if not all(map(_finite, (a, b))):
            continue
        defined += 1
        if abs(a - b) > 1e-9 * max(1.0, abs(a)):
            return False
    return True if defined >= 2 else None


def _finite(value: complex) -> bool:
    import math

    return math.isfinite(value.real) and math.isfinite(value.imag)


def warm_math_verify() -> None:
    """Import math-verify (sympy, antlr) and fill its regex and parser caches, so that the
    time limit covers grading only. Mutes its one-off "timeout is disabled" warnings:
    ``call_with_time_limit`` bounds the time instead."""
    import math_verify.grader
    import math_verify.parser

    math_verify.grader.TIMEOUT_WARNING_SHOWN = True
    math_verify.parser.TIMEOUT_WARNING_SHOWN = True
    verify_any(((r"\frac{1}{2}", "0.5"),))
    verify_any(((r"\frac{1}{2}", "0.5"),), "approximate")
