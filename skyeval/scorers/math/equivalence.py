"""Equivalence of two normalised answers: option labels, text, numbers and precision, lists
and sets, then the symbolic check through math-verify under the caller's time limit."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

from skyeval.errors import require
from skyeval.scorers.math.normalization import NUMBER_WORDS, Labelled, is_text, labelled, text_key

MATH_VERIFY_INSTALL = 'pip install "math-verify[antlr4_9_3]" (or reinstall skyeval)'
_PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)", re.ASCII)
_DECIMAL_COMMA = re.compile(r"(-?)(\d+),(\d+)", re.ASCII)
_FRACTION = re.compile(r"(-?)(?:\\[dt]?frac\{(\d+)\}\{(\d+)\}|(\d+)/(\d+))", re.ASCII)


def require_math_verify() -> None:
    """Raise MissingDependencyError (with what to install) when math-verify or its LaTeX
    parser cannot be imported. Cheap: looks the modules up without importing them."""
    for module in ("math_verify", "latex2sympy2_extended", "antlr4"):
        require(module, MATH_VERIFY_INSTALL, "math grading")


def quick_verdict(
    golds: list[Labelled], candidates: list[Labelled], required: Precision | None = None
) -> tuple[bool | None, list[tuple[str, str]]]:
    """(verdict, the (gold, candidate) pairs math-verify must still decide). Decides
    without math-verify where that is exact: identical text, option labels, text answers,
    plain numbers (with the tolerance of a decimal gold's stated precision, or the precision
    the question asks for: ``required``) and simple fractions. The verdict is None when
    pairs remain."""
    pairs = []
    gold_labels = {label for label, _ in golds if label}
    # an answer naming another option than the gold's is wrong, whatever its value
    candidates = [(label, c) for label, c in candidates if not (label and gold_labels and label not in gold_labels)]
    for gold_label, gold in golds:
        gold_key, gold_number = text_key(gold), number_value(gold)
        for label, candidate in candidates:
            if gold_label and label and gold_label != label:
                continue  # (A) 18 is not (C) 18
            if candidate == gold:
                return True, []
            key = text_key(candidate)
            if key == gold_key and key:
                return True, []
            if gold_key.isalpha() and len(gold_key) == 1 or is_text(gold_key, gold) and is_text(key, candidate):
                continue  # two different words: "odd" is not "dod"; "b" is not option "B"
            number = number_value(candidate, decimal_comma=gold_number is not None)
            if gold_number is not None and number is not None:
                if required is not None and _meets(required, gold, gold_number) is True:
                    if _meets(required, candidate, number) is True and _rounded(number, required) == _rounded(gold_number, required):
                        return True, []
                    continue  # rule stated-precision: the question asks for a precision the answer must meet
                if _close(number, gold_number, gold, candidate):
                    return True, []
                continue  # two numbers: decided
            for gold_form, form in _sequence_forms(gold, candidate):
                pairs.append((gold_form, form))
    return (None, pairs) if pairs else (False, [])


_LABELLED_ITEM = re.compile(r"(?:(?<=^)|(?<=,)|(?<=\\quad))\s*(?:\\q?quad\s*)?[A-Za-z](?:_\{?\w+\}?)?\s*=\s*")


def _sequence_forms(gold: str, candidate: str) -> list[tuple[str, str]]:
    """The pairs to verify: the answer as it is and, when the gold is a bare list ("1,4"),
    the candidate without the parentheses or brackets around it ("(1, 4)")."""
    forms = [(gold, candidate)]
    if is_answer_set(gold) and _LABELLED_ITEM.match(candidate):  # "a = -2, b = -2" for "-2,-2"
        forms.append((gold, _LABELLED_ITEM.sub("", candidate)))
    if is_answer_set(gold) and gold[0] not in "([{\\" and len(candidate) > 2 and candidate[0] in "([" and candidate[-1] in ")]":
        forms.append((gold, candidate[1:-1]))
    return forms


_E_NOTATION = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:[eE]|\\times\s*10\s*\^|\\cdot\s*10\s*\^|\*\s*10\s*\^|\s*x\s*10\s*\^|\*\*)\s*\{?\s*([+-]?\d+)\s*\}?", re.ASCII)
_TEN_POWER = re.compile(r"10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?", re.ASCII)


def number_value(text: str, *, decimal_comma: bool = False) -> Fraction | None:
    """The exact value of a plain number, a simple fraction ("-\\frac{3}{4}", "3/4"), e-notation
    ("2e-3", "2\\times10^{-3}") or a number word up to twenty; with ``decimal_comma`` also
    "0,111", "2,74", "1000,99" (never "1,234", a thousands separator, nor "1,5", a list)."""
    if fraction := _FRACTION.fullmatch(text):
        sign, numerator, denominator = fraction.group(1), fraction.group(2) or fraction.group(4), fraction.group(3) or fraction.group(5)
        if int(denominator) == 0:
            return None
        return Fraction(int(numerator), int(denominator)) * (-1 if sign else 1)
    if (word := NUMBER_WORDS.get(text.lower())) is not None:
        return Fraction(word)
    if scientific := _E_NOTATION.fullmatch(text):
        return Fraction(Decimal(scientific.group(1))) * Fraction(10) ** int(scientific.group(2))
    if power := _TEN_POWER.fullmatch(text):
        return Fraction(10) ** int(power.group(1))
    if not _PLAIN_NUMBER.fullmatch(text):
        match = _DECIMAL_COMMA.fullmatch(text) if decimal_comma else None
        if not match or not _unambiguous_decimal_comma(match.group(2), match.group(3)):
            return None
        text = f"{match.group(1)}{match.group(2)}.{match.group(3)}"
    try:
        return Fraction(Decimal(text))
    except (InvalidOperation, ValueError):
        return None


def _unambiguous_decimal_comma(whole: str, fraction: str) -> bool:
    """"0,5", "2,74", "1000,99" read as decimals; "1,234" is thousands, "1,5" a list."""
    if whole == "0":
        return True
    return len(fraction) >= 2 and not (len(whole) <= 3 and len(fraction) == 3)


Precision = tuple[str, int]  # ("significant", 3) | ("decimals", 2) | ("mantissa decimals", 2)
_WORD_COUNTS = {"one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_STATED_PRECISION = re.compile(
    r"(?P<mantissa>\$?n\$?\s+is\s+to\s+)?(?P<count>\d|one|single|two|three|four|five|six)\s+"
    r"(?P<kind>significant\s+(?:figure|digit)|decimal\s+place)s?", re.IGNORECASE)


def stated_precision(question: str | None) -> Precision | None:
    """The precision the asked part of ``question`` requires ("to three significant figures",
    "to 2 decimal places", "as $n \\times 10^x$ where $n$ is to 2 decimal places"), or None."""
    if not question:
        return None
    asked = question[question.rfind("Subproblem") :] if "Subproblem" in question else question[-600:]
    found = list(_STATED_PRECISION.finditer(asked))
    if not found:
        return None
    match = found[-1]
    count = _WORD_COUNTS.get(match.group("count").lower()) or int(match.group("count"))
    if match.group("kind").lower().startswith("significant"):
        return "significant", count
    return ("mantissa decimals" if match.group("mantissa") else "decimals"), count


def _meets(required: Precision, text: str, value: Fraction) -> bool | None:
    """Whether the literal ``text`` states at least the ``required`` precision; None when it
    is no decimal literal (an exact fraction meets any precision)."""
    precision = _precision(text)
    if precision is None:
        return True if _FRACTION.fullmatch(text) else None
    unit, digits, _ = precision
    kind, count = required
    if kind == "significant":
        return digits >= count
    if kind == "decimals":
        return unit <= Fraction(10) ** -count
    return digits >= count + 1  # n.dd x 10^x: the mantissa's decimals


def _rounded(value: Fraction, required: Precision) -> Decimal:
    """``value`` rounded half-up to the ``required`` precision."""
    from decimal import ROUND_HALF_UP, localcontext

    kind, count = required
    with localcontext() as context:
        context.prec = 60
        number = Decimal(value.numerator) / Decimal(value.denominator)
        if number == 0:
            return number
        if kind == "decimals":
            return number.quantize(Decimal(1).scaleb(-count), rounding=ROUND_HALF_UP)
        digits = count if kind == "significant" else count + 1
        exponent = number.adjusted() - digits + 1
        return number.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP)


def _close(number: Fraction, gold_number: Fraction, gold: str, candidate: str = "") -> bool:
    """Rule `precision`: equal, or equal at the coarser of the two stated precisions.

    - A decimal gold (`20.39`, `2.7778e-6`) takes an answer within half a unit of its last
      digit, judged at 2 significant digits at least (`20.385`, `\\frac13` for `0.33`).
    - A less precise decimal answer with 3+ significant digits is right when the gold lies
      within half a unit of the answer's last digit (`2.78e-6` for `2.7778e-6`).
    - An integer gold is exact against an integer answer; against a decimal answer its
      trailing zeros are not significant (`6626.1` for `6630`, at 2 significant digits).
    - An exact gold (a fraction, `\\pi`) is never met by a rounded decimal (`85.71` ≠ `600/7`).
    """
    if number == gold_number:
        return True
    gold_precision = _precision(gold)
    if gold_precision is None:
        return False
    gold_unit, gold_digits, gold_integer = gold_precision
    answer_precision = _precision(candidate)
    if gold_integer and (answer_precision is None or answer_precision[2] or gold_unit == 1):
        return False  # 4100 is exact against 4098, 7 against 7.0001
    difference = abs(number - gold_number)
    unit = gold_unit / 10 ** max(2 - gold_digits, 0)
    if difference * 2 <= unit:
        return True
    if answer_precision is None:
        return False
    answer_unit, answer_digits, _ = answer_precision
    return answer_digits >= 3 and answer_unit > gold_unit and difference * 2 <= answer_unit


def _precision(text: str) -> tuple[Fraction, int, bool] | None:
    """(the unit of the last stated digit, the significant digits, whether it is a plain
    integer) of a decimal or scientific literal; None for anything else (fractions, words).
    An integer's trailing zeros are not counted as significant."""
    scientific = _E_NOTATION.fullmatch(text)
    mantissa, exponent = (scientific.group(1), int(scientific.group(2))) if scientific else (text, 0)
    if not _PLAIN_NUMBER.fullmatch(mantissa):
        return None
    mantissa = mantissa.lstrip("-")
    if "." in mantissa:
        decimals = len(mantissa.split(".")[1])
        digits = mantissa.replace(".", "").lstrip("0")
    else:
        digits = mantissa.strip("0")
        decimals = -(len(mantissa) - len(mantissa.rstrip("0"))) if digits else 0
    return Fraction(10) ** (exponent - decimals), max(len(digits), 1), "." not in mantissa and not scientific


def _stated_tolerance(gold: str, gold_number: Fraction) -> Fraction | None:
    """Half a unit of the gold's last stated digit, for a non-integer decimal gold; else None."""
    scientific = _E_NOTATION.fullmatch(gold)
    mantissa, exponent = (scientific.group(1), int(scientific.group(2))) if scientific else (gold, 0)
    if gold_number.denominator == 1 or not _PLAIN_NUMBER.fullmatch(mantissa) or "." not in mantissa:
        return None
    decimals = len(mantissa.split(".")[1])
    digits = mantissa.lstrip("-").replace(".", "").lstrip("0")
    if len(digits) < 2:  # fewer than 2 significant digits stated: use 2
        decimals += 2 - len(digits)
    return Fraction(1, 2) * Fraction(10) ** (exponent - decimals)


def is_answer_set(gold: str) -> bool:
    """A list or set answer: "\\{1, 2\\}", "(1, 2), (2, 1)", "2 and 3" (not "(1, 2)" or "[0, 1)")."""
    if gold.startswith("\\{") or re.search(r"\band\b", gold):
        return True
    depth = 0
    for char in gold:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            return True
    return False


@lru_cache(maxsize=8192)
def _parse_boxed(answer: str) -> list:
    """math-verify's parse of ``\\boxed{answer}``, cached per process: n samples share a gold,
    and often an answer (verify does not modify what it is given)."""
    from math_verify import parse

    return parse(f"\\boxed{{{answer}}}", _boxed_config(), parsing_timeout=None)


@lru_cache(maxsize=1)
def _boxed_config() -> tuple:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    return (LatexExtractionConfig(), ExprExtractionConfig())


def verify_any(pairs: tuple[tuple[str, str], ...]) -> bool | None:
    """True if a candidate equals its gold, False if every pair was compared and none is
    equal, None (undecided) if none is equal and math-verify could not parse one side of a
    pair. No own timeouts: the caller bounds the time.
    A decimal gold is compared by value within its stated precision; expressions with
    variables that math-verify calls different are compared once more with hyperbolic and
    trigonometric functions rewritten as exponentials (``\\cosh(x)`` = ``(e^x+e^{-x})/2``)."""
    from math_verify import verify

    unparsed = False
    for gold_text, candidate in pairs:
        golds = _parse_boxed(gold_text)
        predictions = _parse_boxed(candidate)
        if not golds or not predictions:
            unparsed = True
            continue
        if all(isinstance(p, str) for p in golds) or all(isinstance(p, str) for p in predictions):
            unparsed = True  # math-verify read only the text of a side: a "different" would be unproved
        gold_number = number_value(gold_text)
        tolerance = _stated_tolerance(gold_text, gold_number) if gold_number is not None else None
        for prediction in predictions:
            if tolerance is not None:
                value = _numeric_value(prediction)
                if value is not None:
                    if abs(value - float(gold_number)) <= float(tolerance) * (1 + 1e-9):
                        return True
                    continue
            if any(verify(gold, prediction, timeout_seconds=None) for gold in golds):
                return True
            if any(_same_function(gold, prediction) for gold in golds):
                return True
    return None if unparsed else False


def gold_problem(gold: str | int | float) -> str | None:
    """Why a gold cannot be graded against, or None: it is empty once normalised (a
    `\\text{east}` stripped to nothing), or math-verify reads no mathematics in it
    (`np.arcsin(10/13)`, a pmatrix that lost its `\\\\`) although it is no plain word.
    Golds are data: `skyeval audit` lists these instead of the grader special-casing them."""
    _, text = labelled(gold)
    if not text:
        return "empty"
    if is_text(text_key(text), text) or number_value(text) is not None:
        return None
    parsed = _parse_boxed(text)
    if not parsed or all(isinstance(p, str) for p in parsed):
        return "math-verify reads no mathematics in it"
    return None


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


def _same_function(gold, prediction) -> bool:
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
