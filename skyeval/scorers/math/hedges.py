"""Rule `hedge` (docs/grading.md): an answer that commits to several values is right only when
every value is; a range of values never meets a gold that is one value.

`alternatives(answer)` splits an answer into the values it offers ("x = 9 or x = 11", "either 9
or 11", "9, 10 or 11", `\\{9, 11\\}`, `9 \\pm 1`); `is_range(answer)` says it gives a range or
an interval ("between 8 and 10", "8 to 10", `[8, 10]`, `8 \\le x \\le 10`); `single_valued(gold)`
says the gold is one value (these rules apply only then: a gold with several values is met by
the same values, in any order, through the comparison itself).
"""

from __future__ import annotations

import re

_OR = re.compile(r"\s*(?:,\s*)?(?:\\q?quad\s*)*(?:\\text\{\s*(?:or|and)\s*\}|\\(?:text|mathrm)\{\s*or\s*\}|\bor\b|\bor\s+else\b)(?:\s*\\q?quad)*\s*")
_EITHER = re.compile(r"^\s*(?:\\text\{\s*)?either\b\s*\}?\s*", re.IGNORECASE)
_AND = re.compile(r"\s*(?:,\s*)?(?:\\text\{\s*and\s*\}|\band\b)\s*")
_PM = re.compile(r"\\pm|\\mp|±|∓|\+/-")
_BETWEEN = re.compile(r"\bbetween\b.+\band\b", re.IGNORECASE)
_TO = re.compile(r"^\s*-?\d[\d.,]*\s*(?:\\text\{\s*to\s*\}|\bto\b|\.\.\.?|\\ldots|\\dots|–|—|--(?=\d)|-(?=\s*-\s*\d))\s*-?\d[\d.,]*\s*$")
_INEQUALITY = r"(?:<|>|\\(?:le|ge|leq|geq|lt|gt|leqslant|geqslant)(?![A-Za-z])|≤|≥)"
_CHAIN = re.compile(_INEQUALITY + ".+?" + _INEQUALITY)
_HALF_LINE = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*" + _INEQUALITY + "|" + _INEQUALITY + r"\s*[A-Za-z](?:_\{?\w+\}?)?\s*$")
_RELATION = re.compile(r"(?<![<>!\\])=|" + _INEQUALITY + r"|\\(?:neq?|in|subseteq|subset|notin)(?![A-Za-z])|≠")
_NAME_EQUALS = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?(?:\([^()]*\))?\s*=\s*")


def _top_level_split(text: str, separator: str = ",") -> list[str]:
    """`text` split at the separators outside brackets and braces."""
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and text[i + 1 : i + 2] in ("{", "}"):
            depth += 1 if text[i + 1] == "{" else -1
            i += 2
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _strip_set(text: str) -> str:
    """`\\{1, 2\\}` -> `1, 2` (a set written with braces)."""
    text = text.strip()
    for start, end in (("\\{", "\\}"), ("\\left\\{", "\\right\\}")):
        if text.startswith(start) and text.endswith(end):
            return text[len(start) : len(text) - len(end)]
    return text


def alternatives(answer: str) -> list[str]:
    """The values `answer` offers: one item for a single value, several for a hedge."""
    from skyeval.scorers.math.numbers import number_value

    if number_value(answer, decimal_comma=True) is not None:
        return [answer]  # "0,5" is one number
    text = _EITHER.sub("", _strip_set(answer))
    items = [p for part in _OR.split(text) for p in _top_level_split(part)]
    items = [q for part in items for q in _AND.split(part)]
    items = [i.strip().rstrip(".").strip() for i in items if i and i.strip(" .")]
    if len(items) == 1 and _PM.search(items[0]):
        return [_PM.sub("+", items[0]), _PM.sub("-", items[0])]
    return items or [answer]


def is_range(answer: str) -> bool:
    """A range or an interval of values: "between 8 and 10", "8 to 10", `[8, 10]`, `(8, 10)`,
    `8 \\le x \\le 10`, `x > 3`."""
    text = answer.strip()
    if _BETWEEN.search(text) or _TO.match(text) or _CHAIN.search(text) or _HALF_LINE.search(text):
        return True
    return len(text) > 2 and text[0] in "([" and text[-1] in ")]" and len(_top_level_split(text[1:-1])) == 2


def single_valued(gold: str) -> bool:
    """The gold is one value: a number or an expression (optionally named, `x = 5`), not a list,
    set, tuple, interval, relation or `\\pm` form."""
    text = _NAME_EQUALS.sub("", gold.strip(), count=1)
    if _PM.search(text) or _RELATION.search(text) or re.search(r"\b(?:or|and)\b", text):
        return False
    if text.startswith(("\\{", "\\left\\{")) or len(_top_level_split(text)) > 1:
        return False
    return not (len(text) > 2 and text[0] in "([" and text[-1] in ")]" and len(_top_level_split(text[1:-1])) > 1)
