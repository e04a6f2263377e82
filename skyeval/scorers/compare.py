"""The one comparison rule of code grading, applied by the trusted scorer only.

Values produced in the sandbox arrive as tagged JSON (`decode`) and are compared with the
expected values by type (`same`): ints, strings and bools exactly (a bool equals the int
of its value, as in the benchmarks' own `==`), floats within a tolerance only when the
expected value is a float, containers element by element and never across kinds (`5` is
not `[5]`). Call tests, converted asserts and stdout tokens all use it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tolerance:
    """How close a produced number must be to an expected float: |a-b| <= max(rel*max(|a|,|b|), abs)."""

    rel: float = 1e-6
    abs: float = 1e-6


DEFAULT_TOLERANCE = Tolerance()
EXACT = Tolerance(0.0, 0.0)  # floats as Python's `==` compares them (NaN still equals NaN)


class Unrepresentable(ValueError):
    """The sandbox's reply is not plain data in the tagged format."""


_MAX_SAME_HASH = 64  # more keys of one hash than this is a reply built to make hashing quadratic


def spread(items: list) -> list:
    """`items`, refused (`Unrepresentable`) when many share one hash: ints k*(2**61-1) all
    hash alike, and a set of them would take quadratic time to build here."""
    from collections import Counter

    counts = Counter(hash(item) for item in items)
    if counts and max(counts.values()) > _MAX_SAME_HASH:
        raise Unrepresentable("many values with one hash")
    return items


def _pairs(body: list) -> dict:
    spread([key for key, _ in body])
    return {key: value for key, value in body}


# Tagged containers: JSON arrays are lists; every JSON object is one of these tags.
_TAGS = {"t": tuple, "s": lambda body: set(spread(body)), "f": lambda body: frozenset(spread(body)),
         "d": _pairs, "b": bytes.fromhex, "c": lambda body: complex(*body), "x": lambda body: int(body, 16)}


def _tagged(obj: dict) -> Any:
    if len(obj) != 1:
        raise Unrepresentable(f"not a tagged value: {sorted(obj)[:3]}")
    ((tag, body),) = obj.items()
    if tag not in _TAGS:
        raise Unrepresentable(f"unknown tag {tag!r}")
    try:
        return _TAGS[tag](body)
    except (TypeError, ValueError) as err:
        raise Unrepresentable(f"bad {tag!r} value: {err}") from None


def decode(text: str) -> Any:
    """A produced value from the sandbox's tagged JSON; `Unrepresentable` if it is not one."""
    try:
        return json.loads(text, object_hook=_tagged)
    except Unrepresentable:
        raise
    except (ValueError, RecursionError, TypeError) as err:
        raise Unrepresentable(str(err)[:200]) from None


def close(got: float, want: float, tol: Tolerance = DEFAULT_TOLERANCE) -> bool:
    """Floats within `tol` (NaN equals NaN; infinities only themselves)."""
    if got == want or (math.isnan(got) and math.isnan(want)):
        return True
    return math.isfinite(got) and math.isfinite(want) and math.isclose(got, want, rel_tol=tol.rel, abs_tol=tol.abs)


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def same(got: Any, want: Any, tol: Tolerance = DEFAULT_TOLERANCE) -> bool:
    """Whether produced plain data `got` matches expected `want` (the module docstring's rule)."""
    kind = type(want)
    if kind is bool or type(got) is bool:  # True == 1, as the benchmarks' own `==` (MBPP 414's reference)
        return type(got) in (bool, int) and kind in (bool, int) and got == want
    if kind is float:
        try:
            return _number(got) and close(float(got), want, tol)
        except OverflowError:
            return False
    if kind is int:
        return _number(got) and got == want  # 2.0 is 2 exactly; no tolerance for ints
    if kind in (list, tuple):
        return type(got) is kind and len(got) == len(want) and all(same(g, w, tol) for g, w in zip(got, want))
    if kind is dict:
        return (type(got) is dict and got.keys() == want.keys()
                and all(same(got[key], value, tol) for key, value in want.items()))
    if kind in (set, frozenset):
        return type(got) in (set, frozenset) and got == want
    return type(got) is kind and got == want


def as_json(value: Any) -> Any:
    """`value` as JSON would hold it (tuples become lists): call tests' expected values come
    from JSON, which has no tuples (APPS's and LiveCodeBench's checkers do the same)."""
    if type(value) in (list, tuple):
        return [as_json(v) for v in value]
    if type(value) is dict:
        return {k: as_json(v) for k, v in value.items()}
    return value


def same_token(got: str, want: str, tol: Tolerance | None = DEFAULT_TOLERANCE) -> bool:
    """One whitespace-separated stdout token, read as the value it spells and compared by
    `same` (int tokens as written: "07" is not "7"); `tol=None` compares float tokens as
    exact decimals ("1.50" is "1.5")."""
    if got == want:
        return True
    produced, expected = _token_number(got), _token_number(want)
    if produced is None or expected is None or (type(produced) is int and type(expected) is int):
        return False
    if not (math.isfinite(produced) and math.isfinite(expected)):
        return False  # "inf", "nan" only as written ("1e400" is not "inf")
    if tol is None:
        from decimal import Decimal

        return Decimal(got) == Decimal(want)
    return same(produced, expected, tol)


def _token_number(token: str) -> int | float | None:
    try:
        return int(token)
    except ValueError:
        pass
    try:
        value = float(token)
    except ValueError:
        return None
    return value if any(c in token for c in ".eEnN") else None


def outputs_match(got: str, want: str, tol: Tolerance | None = DEFAULT_TOLERANCE) -> bool:
    """Program output against the expected output, line by line and token by token
    (trailing whitespace and trailing blank lines ignored), each token by `same_token`."""
    got_lines, want_lines = _lines(got), _lines(want)
    if len(got_lines) != len(want_lines):
        return False
    for g, w in zip(got_lines, want_lines):
        g_tokens, w_tokens = g.split(), w.split()
        if len(g_tokens) != len(w_tokens) or not all(same_token(a, b, tol) for a, b in zip(g_tokens, w_tokens)):
            return False
    return True


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.rstrip().split("\n")]
    return lines if lines != [""] else []
