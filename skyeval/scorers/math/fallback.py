"""The no-box fallback (rule `fallback-whole-expression`, docs/grading.md): with no box and no
answer statement, the answer is the whole final expression of the response, or nothing.

The final statement is the last paragraph holding math or a digit. Its answer is, in order:
the last math in it (`$…$`, `$$…$$`, `\\(…\\)`, `\\[…\\]`, or markdown bold `**…**`), with a chain
`a = b = c` read as its last side; else, in its last sentence's last clause, the value after
"is"/"are"/"equals"/"="; else the last number standing as a word there ("needs to order 1400
bananas"). Never a number cut out of an expression: `1 - \\frac{1}{e}`, `10\\sqrt{3}`, `7π` and
`y = -2x` are taken whole.
"""

from __future__ import annotations

import re

from skyeval.scorers.math.normalization import unicode_math

_PARAGRAPH = re.compile(r"\n\s*\n")
_MATHLIKE = re.compile(r"[\d\\$]|\*\*")
# $$…$$, \[…\], \(…\), **…**, and $…$ on one line with no space inside its ends (not "$10 x 40 = $400")
_SEGMENT = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<![\\$])\$(?!\$)([^\s$](?:[^$\n]*?[^\s$\\])?)\$(?!\d)|\*\*(.+?)\*\*", re.DOTALL)
_OPEN_END = re.compile(r"[=+\-*/×,]\s*$|(?<=\s)x\s*$")  # "$15*13=$": currency signs, not math
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])|\n")
_CLAUSE = re.compile(r";|,\s+(?:so|thus|hence|therefore|which|and so)\b", re.IGNORECASE)
_STATED = re.compile(r"(?:^|\s)(?:is|are|equals|was|be|=|≈|\\approx)\s+(.+)$", re.IGNORECASE)
# a number standing as a word: not glued to letters, other digits, operators, braces or a backslash
_LONE_NUMBER = re.compile(r"(?<![\w.^_{}\\/*+\-])-?(?:\d+/\d+(?![\d.])|\d{1,3}(?:(?: |\\,)\d{3})+(?!\d)|\d+(?:,\d+)*)(?:\.\d+)?(?![\w^_{}\\/*+]|\.\d|\s*[+*/^=]|\s+-\s*\d)", re.ASCII)
_TRAILING_LATEX = re.compile(r"(?:^|\s)(-?\\[A-Za-z]+(?:\{[^{}]*\})+\S*)$")
# a closing remark after the answer: "This problem shows ...", "I hope it is correct."
_COMMENTARY = re.compile(r"(?:this|these|that|it|which|note|i hope|hope|the (?:problem|solution|answer|result))\b", re.I)
_PROSE = re.compile(r"[A-Za-z]{3,}")  # a word: "3 red and 12 blue marbles" is no expression
_RELATION = re.compile(r"(?<![<>!\\])=|\\approx")
_TRAILING_WORDS = re.compile(r"^(-?\d[\d,]*(?:\.\d+)?(?:\s*(?:x|\\times|×)\s*10\s*\^\s*\{?-?\d+\}?)?)\s+[A-Za-z][A-Za-z\s]*\.?$")


def final_expression(text: str) -> str | None:
    """The whole final expression of ``text`` (see the module docstring), or None."""
    text = unicode_math(text.rstrip())
    statement = next((p for p in reversed(_PARAGRAPH.split(text)) if _MATHLIKE.search(p)), None)
    if statement is None:
        return None
    matches = [(m.end(), next(g for g in m.groups() if g is not None).strip()) for m in _SEGMENT.finditer(statement)]
    matches = [(end, s) for end, s in matches if s and (_MATHLIKE.search(s) or re.search(r"[A-Za-z]", s)) and not _OPEN_END.search(s)]
    if matches:
        end, segment = matches[-1]
        after = _from_prose(statement[end:])  # "the magnitude of $z^2$ is 4"
        return after if after is not None else _last_side(segment)
    return _from_prose(statement)


def _from_prose(statement: str) -> str | None:
    """The answer of a final statement without math delimiters: the value after "is"/"="
    in its last clause, a trailing LaTeX command, or the last number standing as a word."""
    sentence = None
    for candidate in reversed([s.strip() for s in _SENTENCE_END.split(statement) if s.strip()]):
        if re.search(r"\d|\\", candidate):
            sentence = candidate
            break
        if not _COMMENTARY.match(candidate):
            return None  # "It will take 2 months. The total cost is a lot.": the final sentence holds no value
    if sentence is None:
        return None
    clause = [c for c in _CLAUSE.split(sentence) if re.search(r"\d|\\", c)][-1].strip().rstrip(".!?").strip()
    if stated := _STATED.search(clause):
        value = stated.group(1).strip().rstrip(".").strip()
        if re.search(r"\d|\\", value):
            if words := _TRAILING_WORDS.match(value):  # "1400 bananas" -> "1400"
                return words.group(1)
            if not _PROSE.search(re.sub(r"\\[A-Za-z]+", "", value)):
                return value
    if latex := _TRAILING_LATEX.search(clause):  # "so we get \\frac{3}{4}"
        return latex.group(1)
    numbers = _LONE_NUMBER.findall(clause)
    return numbers[-1] if numbers else None


def _last_side(expression: str) -> str:
    """`x = 2 + 3 = 5` -> `5`; one relation (`y = -2x`, `p(s) = s^2`) is kept whole: the
    comparison reads a name on the left."""
    parts = _RELATION.split(expression)
    return parts[-1].strip() if len(parts) > 2 and parts[-1].strip() else expression.strip()
