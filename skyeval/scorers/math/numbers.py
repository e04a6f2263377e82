"""Numbers: the exact value of a numeric answer (plain, fraction, scientific, decimal comma,
number words), the numeric rules (`exact` or `approximate`, an env's `numeric_rule`) and the
precision rules (docs/grading.md, `precision` and `stated-precision`)."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

from skyeval.scorers.math.normalization import NUMBER_WORDS

NUMERIC_RULES = ("exact", "approximate")  # an env's `numeric_rule` (docs/grading.md)
EXACT, APPROXIMATE = NUMERIC_RULES

_PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)", re.ASCII)
_DECIMAL_COMMA = re.compile(r"(-?)(\d+),(\d+)", re.ASCII)
_FRACTION = re.compile(r"(-?)(?:\\[dt]?frac\{(\d+)\}\{(\d+)\}|(\d+)/(\d+))", re.ASCII)
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
    if text[:1].isalpha() and (spelled := spelled_number(text)) is not None:
        return spelled
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


_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_SPELLED_WORD = re.compile(r"[a-z]+")


def spelled_length(words: list[str]) -> int:
    """How many of `words` make the number in words they start with, when only words that
    are no number follow ("seventy six dollars": 2); 0 when there is none, or when another
    number follows ("one chance in six", "two and three": prose, not an answer)."""
    for end in range(len(words), 0, -1):
        if words[end - 1].lower().strip(",") in ("and", "or", "to"):
            continue  # "two and" is no number
        if spelled_number(" ".join(words[:end]).rstrip(",")) is not None:
            rest = (w.strip(",.;:!?").lower() for w in words[end:])
            return 0 if any(w and spelled_number(w) is not None for w in rest) else end
    return 0


def spelled_number(text: str) -> Fraction | None:
    """A number written in English words, the whole of `text`: "seventy six", "two hundred and
    eighty", "one hundred thirty thousand", "two hundred twenty-four point eight seven",
    "minus three"; None for anything else."""
    words = text.lower().replace("-", " ").replace(",", " ").split()
    if not words or not all(_SPELLED_WORD.fullmatch(w) for w in words):
        return None
    sign = -1 if words[0] in ("minus", "negative") else 1
    words = words[1:] if sign < 0 else words
    if "point" in words:
        whole, decimals = words[: words.index("point")], words[words.index("point") + 1 :]
        digits = [NUMBER_WORDS.get(w) for w in decimals]
        if not decimals or any(d is None or d > 9 for d in digits):
            return None
        integer = _spelled_integer(whole) if whole else 0
        return None if integer is None else sign * (integer + Fraction(int("".join(map(str, digits))), 10 ** len(digits)))
    integer = _spelled_integer(words)
    return None if integer is None else Fraction(sign * integer)


def _spelled_integer(words: list[str]) -> int | None:
    total = current = 0
    seen = False
    for word in words:
        if word == "and" and seen:
            continue
        if (small := NUMBER_WORDS.get(word)) is not None:
            if current % 10 or (current % 100 and small >= 10):
                return None  # "five six", "twenty twelve": no number
            current += small
        elif word in _TENS:
            if current % 100:
                return None
            current += _TENS[word]
        elif word == "hundred" and 0 < current < 100:
            current *= 100
        elif word in _SCALES and current:
            total, current = total + current * _SCALES[word], 0
        else:
            return None
        seen = True
    return total + current if seen else None


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
# rule `stated-precision`: "to the nearest tenth", "rounded to the nearest whole number"
_NEAREST = re.compile(r"\bto\s+the\s+nearest\s+(?P<unit>tenth|hundredth|thousandth|ten-thousandth|whole\s+number|integer)", re.IGNORECASE)
_NEAREST_DECIMALS = {"tenth": 1, "hundredth": 2, "thousandth": 3, "ten-thousandth": 4, "whole number": 0, "integer": 0}


@lru_cache(maxsize=1024)
def stated_precision(question: str | None) -> Precision | None:
    """The precision the asked part of ``question`` requires ("to three significant figures",
    "to 2 decimal places", "as $n \\times 10^x$ where $n$ is to 2 decimal places", "to the
    nearest tenth", "to the nearest whole number"), or None."""
    if not question or ("significant" not in question and "decimal place" not in question and "nearest" not in question):
        return None  # most questions: no regular expression to run
    asked = question[question.rfind("Subproblem") :] if "Subproblem" in question else question[-600:]
    found = list(_STATED_PRECISION.finditer(asked))
    if not found:
        nearest = list(_NEAREST.finditer(asked))
        if nearest:
            return "decimals", _NEAREST_DECIMALS[" ".join(nearest[-1].group("unit").lower().split())]
        return None
    match = found[-1]
    count = _WORD_COUNTS.get(match.group("count").lower()) or int(match.group("count"))
    if match.group("kind").lower().startswith("significant"):
        return "significant", count
    scientific = match.group("mantissa") or re.search(r"\\times\s*10\^|n \\times 10", asked)
    return ("mantissa decimals" if scientific else "decimals"), count


def meets(required: Precision, text: str, value: Fraction) -> bool | None:
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


def rounded(value: Fraction, required: Precision) -> Decimal:
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


def numbers_equal(number: Fraction, gold_number: Fraction, gold: str, candidate: str, rule: str) -> tuple[bool, bool]:
    """(equal, equal only by the tolerance) of two numbers under the numeric `rule`: `exact`
    compares values (`18.00` = `18`, `0.5` = `\\frac12`, never `2219.6` = `2220`); `approximate`
    also takes the stated precisions (`close`)."""
    if number == gold_number:
        return True, False
    if rule == APPROXIMATE and close(number, gold_number, gold, candidate):
        return True, True
    return False, False


def close(number: Fraction, gold_number: Fraction, gold: str, candidate: str = "") -> bool:
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


def stated_tolerance(gold: str, gold_number: Fraction) -> Fraction | None:
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
