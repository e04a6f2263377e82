"""Equivalence of two normalised answers: option labels, text, numbers (`numbers.py`), lists
and sets, then the symbolic check (`symbolic.py`); and which golds no grader can use."""

from __future__ import annotations

import re

from skyeval.scorers.math.normalization import Labelled, is_text, labelled, text_key
from skyeval.scorers.math.numbers import EXACT, Precision, meets, number_value, numbers_equal, rounded
from skyeval.scorers.math.symbolic import parse_boxed


def quick_verdict(
    golds: list[Labelled], candidates: list[Labelled], required: Precision | None = None, rule: str = EXACT
) -> tuple[bool | None, list[tuple[str, str]], bool]:
    """(verdict, the (gold, candidate) pairs math-verify must still decide, whether the
    equality needed a tolerance). Decides without math-verify where that is exact: identical
    text, option labels, text answers, plain numbers (by value under the `exact` rule; with
    the tolerance of the stated precisions under `approximate`; at the precision the question
    asks for, ``required``, under either) and simple fractions. The verdict is None when pairs
    remain."""
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
                return True, [], False
            key = text_key(candidate)
            if key == gold_key and key:
                return True, [], False
            if gold_key.isalpha() and len(gold_key) == 1 or is_text(gold_key, gold) and is_text(key, candidate):
                continue  # two different words: "odd" is not "dod"; "b" is not option "B"
            number = number_value(candidate, decimal_comma=gold_number is not None)
            if gold_number is not None and number is not None:
                if required is not None and _applies(required, gold, gold_number):
                    if meets(required, candidate, number) is True and rounded(number, required) == rounded(gold_number, required):
                        return True, [], number != gold_number
                    continue  # rule stated-precision: the question asks for a precision the answer must meet
                equal, tolerant = numbers_equal(number, gold_number, gold, candidate, rule)
                if equal:
                    return True, [], tolerant
                continue  # two numbers: decided
            for gold_form, form in _sequence_forms(gold, candidate):
                pairs.append((gold_form, form))
    return (None, pairs, False) if pairs else (False, [], False)


_LABELLED_ITEM = re.compile(r"(?:(?<=^)|(?<=,)|(?<=\\quad))\s*(?:\\q?quad\s*)?[A-Za-z](?:_\{?\w+\}?)?\s*=\s*")


def _applies(required: Precision, gold: str, gold_number) -> bool:
    """Whether the stated precision can judge this gold: the gold meets it, and rounding to
    it keeps a significant digit ("three decimal places" of `1.325e-27` means its mantissa's)."""
    return meets(required, gold, gold_number) is True and rounded(gold_number, required) != 0


# rule `defining-equation`: a name, maybe a function's, then "=": `f(t) = ...`, `v(t)=...`, `y = ...`
_DEFINED = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?(?:\^\{?-1\}?)?(?:\s*\([^()=]*\))?\s*=\s*(?P<rhs>[^=<>]+)$", re.DOTALL)


def _sequence_forms(gold: str, candidate: str) -> list[tuple[str, str]]:
    """The pairs to verify: the answer as it is; a defining equation by its right side when the
    other side is an expression (`f(t) = \\sqrt2\\cos t` for `\\sqrt2\\cos t`, and the other way
    round); and, when the gold is a bare list ("1,4"), the candidate without the parentheses or
    brackets around it ("(1, 4)")."""
    forms = [(gold, candidate)]
    if "=" not in gold and (defined := _DEFINED.match(candidate)):
        forms.append((gold, defined.group("rhs").strip()))
    elif "=" not in candidate and (defined := _DEFINED.match(gold)):
        forms.append((defined.group("rhs").strip(), candidate))
    if is_answer_set(gold) and _LABELLED_ITEM.match(candidate):  # "a = -2, b = -2" for "-2,-2"
        forms.append((gold, _LABELLED_ITEM.sub("", candidate)))
    if is_answer_set(gold) and gold[0] not in "([{\\" and len(candidate) > 2 and candidate[0] in "([" and candidate[-1] in ")]":
        forms.append((gold, candidate[1:-1]))
    return forms


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
    parsed = parse_boxed(text)
    if not parsed or all(isinstance(p, str) for p in parsed):
        return "math-verify reads no mathematics in it"
    return None
