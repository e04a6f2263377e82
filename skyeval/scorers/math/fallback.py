"""The no-box fallback (rules `whole-output` and `fallback-whole-expression`, docs/grading.md):
with no box and no answer statement, the answer is the whole output when it is one expression
(`\\frac13`, `$\\sqrt3 $`, `.4`, `10\\%`, `x = 9 or x = 11`), else the whole final expression of
the response, or nothing. And what is no answer at all (rule `prose-is-no-answer`): words of a
heading or a sentence, an ordinal, a fragment with unbalanced braces.

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
from skyeval.scorers.math.numbers import spelled_length, spelled_number

_PARAGRAPH = re.compile(r"\n\s*\n")
_MATHLIKE = re.compile(r"[\d\\$]|\*\*")
# $$…$$, \[…\], \(…\), **…**, and $…$ on one line with no space inside its ends (not "$10 x 40 = $400")
_SEGMENT = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<![\\$])\$(?!\$)([^\s$](?:[^$\n]*?[^\s$\\])?)\$(?!\d)|\*\*(.+?)\*\*", re.DOTALL)
OPEN_END = re.compile(r"[=+\-*/×,]\s*$|(?<=\s)x\s*$")  # "$15*13=$": currency signs, not math
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])|\n")
_CLAUSE = re.compile(r";|,\s+(?:so|thus|hence|therefore|which|and so)\b", re.IGNORECASE)
_STATED = re.compile(r"(?:^|\s)(?:is|are|equals|was|be|=|≈|\\approx)\s+(.+)$", re.IGNORECASE)
# a number standing as a word: not glued to letters, other digits, operators, braces or a backslash
LONE_NUMBER = re.compile(r"(?<![\w.^_{}\\/*+\-])-?(?:\d+/\d+(?![\d.])|\d{1,3}(?:(?: |\\,)\d{3})+(?!\d)|\d+(?:,\d+)*)(?:\.\d+)?(?![\w^_{}\\/*+]|\.\d|\s*[+*/^=]|\s+-\s*\d)", re.ASCII)
_TRAILING_LATEX = re.compile(r"(?:^|\s)(-?\\[A-Za-z]+(?:\{[^{}]*\})+\S*)$")
# a closing remark after the answer: "This problem shows ...", "I hope it is correct."
_COMMENTARY = re.compile(r"(?:this|these|that|it|which|note|i hope|hope|the (?:problem|solution|answer|result))\b", re.I)
_PROSE = re.compile(r"[A-Za-z]{3,}")  # a word: "3 red and 12 blue marbles" is no expression
_RELATION = re.compile(r"(?<![<>!\\])=|\\approx")
_TRAILING_WORDS = re.compile(r"^(-?\d[\d,]*(?:\.\d+)?(?:\s*(?:x|\\times|×)\s*10\s*\^\s*\{?-?\d+\}?)?)\s+[A-Za-z][A-Za-z\s]*\.?$")


_ENVIRONMENT = re.compile(r"\\begin\{(\w+\*?)\}.*?\\end\{\1\}", re.DOTALL)


def final_expression(text: str, numbers_from_prose: bool = True) -> str | None:
    """The whole final expression of ``text`` (see the module docstring), or None; with
    ``numbers_from_prose`` off, only math written as math (no value read out of a sentence)."""
    text = _ENVIRONMENT.sub(lambda m: m.group().replace("\n", " "), unicode_math(text.rstrip()))  # a matrix over lines
    paragraphs = _PARAGRAPH.split(text)
    if numbers_from_prose and paragraphs and not _MATHLIKE.search(paragraphs[-1]):
        last = _STATED.search(_SENTENCE_END.split(paragraphs[-1].strip())[-1].strip().rstrip(".!"))
        if last and (words := _spelled_start(last.group(1).strip())):
            return words  # "... the answer is seventy six."
    statement = next((p for p in reversed(paragraphs) if _MATHLIKE.search(p)), None)
    if statement is None:
        return None
    matches = [(m.start(), m.end(), next(g for g in m.groups() if g is not None).strip())
               for m in _SEGMENT.finditer(statement)]
    matches = [(start, end, s) for start, end, s in matches
               if s and (_MATHLIKE.search(s) or re.search(r"[A-Za-z]", s)) and not OPEN_END.search(s) and not is_prose(s)]
    if matches:
        _, end, segment = matches[-1]
        after = _from_prose(statement[end:]) if numbers_from_prose else None  # "the magnitude of $z^2$ is 4"
        return after if after is not None else _with_alternatives(statement, matches)
    return _from_prose(statement) if numbers_from_prose else None


_CONNECTOR = re.compile(r"\s*(?:,\s*)?(?:\bor\b|\band\b)?\s*,?\s*")


def _with_alternatives(statement: str, matches: list[tuple[int, int, str]]) -> str:
    """The last segment, or with the segments joined to it by "or", "and" or commas: "$9$ or
    $11$" -> "9 or 11" (rule hedge reads it); else its last side (`x = 2 + 3 = 5` -> `5`)."""
    values = [_last_side(matches[-1][2])]
    for (_, end, segment), (start, _, _) in zip(reversed(matches[:-1]), reversed(matches[1:])):
        gap = statement[end:start]
        if not gap.strip() or not _CONNECTOR.fullmatch(gap):
            break
        word = "or" if re.search(r"\bor\b", gap) else "and" if re.search(r"\band\b", gap) else ","
        values = [segment, word, *values]
    return " ".join(values).replace(" , ", ", ")


def _from_prose(statement: str) -> str | None:
    """The answer of a final statement without math delimiters: the value after "is"/"="
    in its last clause, a trailing LaTeX command, or the last number standing as a word."""
    sentence = None
    for candidate in reversed([s.strip() for s in _SENTENCE_END.split(statement) if s.strip()]):
        if re.search(r"\d|\\", candidate):
            sentence = candidate
            break
        if (stated := _STATED.search(candidate.rstrip(".!"))) and (words := _spelled_start(stated.group(1).strip())):
            return words  # "... the answer is two hundred fifty dollars."
        if not _COMMENTARY.match(candidate):
            return None  # "It will take 2 months. The total cost is a lot.": the final sentence holds no value
    if sentence is None:
        return None
    clause = [c for c in _CLAUSE.split(sentence) if re.search(r"\d|\\", c)][-1].strip().rstrip(".!?").strip()
    if stated := _STATED.search(clause):
        value = stated.group(1).strip().rstrip(".").strip()
        if re.search(r"\d.*\b(?:or|and)\b.*\d", value) and not _PROSE.search(re.sub(r"\b(?:or|and)\b", "", value)):
            return value  # "3 and 7, or 37": alternatives, for rule hedge
        if (words := _spelled_start(value)) is not None:
            return words  # "seventy six", "two hundred fifty dollars" -> "two hundred fifty"
        if re.search(r"\d|\\", value):
            if words := _TRAILING_WORDS.match(value):  # "1400 bananas" -> "1400"
                return words.group(1)
            if not _PROSE.search(re.sub(r"\\[A-Za-z]+", "", value)):
                return value
    if latex := _TRAILING_LATEX.search(clause):  # "so we get \\frac{3}{4}"
        return latex.group(1)
    numbers = LONE_NUMBER.findall(clause)
    return numbers[-1] if numbers else None


def _spelled_start(value: str) -> str | None:
    """The number in words that `value` starts with, when only words follow it."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z\s,-]*", value):
        return None
    words = value.split()
    end = spelled_length(words)
    return " ".join(words[:end]) if end else None


def _last_side(expression: str) -> str:
    """`x = 2 + 3 = 5` -> `5`; one relation (`y = -2x`, `p(s) = s^2`) is kept whole: the
    comparison reads a name on the left."""
    parts = _RELATION.split(expression)
    return parts[-1].strip() if len(parts) > 2 and parts[-1].strip() else expression.strip()


# rule whole-output ----------------------------------------------------------------------------
_DELIMITED = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"), ("**", "**"))
_CLOSING = re.compile(r"(?:\s*(?:I hope it is correct|\\blacksquare|\\qed|\\square)\.?)+\s*$", re.IGNORECASE)
_COMMAND = re.compile(r"\\[A-Za-z]+\*?")
_TEXT_GROUP = re.compile(r"\\(?:text|textrm|textit|textbf|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
# a word: 3+ letters (two letters in maths are mostly a product, `at`, `xy`), or a short word of prose
_WORD = re.compile(r"[A-Za-z]{3,}|\b(?:is|of|be|we|so|it|by)\b")
MATH_WORDS = frozenset(  # functions, and the connectors of alternatives and ranges (rule hedge reads those)
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln sqrt exp lim max min gcd lcm det mod "
    "and either between from pi infty deg".split()
)
_ENVIRONMENT_NAME = re.compile(r"\\(?:begin|end)\s*\{\w+\*?\}")
_NUMBER_AND_UNIT = re.compile(r"^-?\.?\d[\d.,]*(?:\s*\\?%)?\s+[A-Za-z]+(?:\s+[A-Za-z]+)?\.?$")
_ORDINAL = re.compile(r"\d\s*(?:\^\s*\{?\s*(?:\\(?:mathrm|text|textrm)\s*\{\s*)?(?:th|st|nd|rd)\b|(?:th|st|nd|rd)\b)")


def whole_expression(text: str) -> str | None:
    """The whole output when it is one expression (with or without math delimiters, a trailing
    period or closing remark), else None: prose around it, several lines, or nothing mathematical."""
    text = text.strip()
    if len(text) > 600:
        return None  # no one expression is this long: cheap before any regular expression
    text = _CLOSING.sub("", unicode_math(text)).strip().rstrip(".").strip()
    text = re.sub(r"^#+\s*", "", text)  # a markdown heading's marks
    for start, end in _DELIMITED:
        if len(text) > len(start) + len(end) and text.startswith(start) and text.endswith(end):
            inner = text[len(start) : len(text) - len(end)]
            if start == "$" and "$" in inner.replace("\\$", ""):
                continue
            text = inner.strip().rstrip(".").strip()
            break
    if not text or len(text) > 500 or "$" in text.replace("\\$", ""):
        return None
    if "\n" in _ENVIRONMENT.sub("", text).strip():
        return None
    if not (re.search(r"[\d\\^_=]|^[A-Za-z]$|^\([A-Za-z]\)$", text) or spelled_number(text) is not None) or is_prose(text):
        return None
    return text


def is_prose(text: str) -> bool:
    """Words, not an answer: a heading or sentence ("Final Answer", "boxed as requested", "It
    will take 2 months"), an ordinal (`12^{\\mathrm{th}}\\text{ grade}`), or a fragment whose braces
    do not balance (`2}^\\infty \\frac{F_{n+1}}{F`). A number with a unit ("18 dollars") and text
    answers in `\\text{}` ("\\text{even}") are not prose."""
    if is_fragment(text) or _ORDINAL.search(text):
        return True
    if _NUMBER_AND_UNIT.match(text.strip()) or spelled_number(text.strip()) is not None:
        return False  # "18 dollars", "seventy six"
    bare = _TEXT_GROUP.sub(lambda m: " " if re.search(r"\d", text) else f" {m.group(1)} ", _ENVIRONMENT_NAME.sub(" ", text))
    words = [w for w in _WORD.findall(_COMMAND.sub(" ", bare)) if w.lower() not in MATH_WORDS and not w.isupper()]  # SRMC: a name
    if not words:
        return False
    if len(words) == 1 and re.fullmatch(r"\s*(?:\\text\w*\s*\{\s*)?[A-Za-z]+\s*\}?\s*", text):
        return text.strip().lower() in ("highlighted", "boxed", "above", "below")  # a one-word text answer
    return True


def is_fragment(text: str) -> bool:
    """Braces or brackets that do not balance, or a start no expression has (`}`, `^`, `_`)."""
    depth = 0
    for i, char in enumerate(text):
        if char in "{}" and i and text[i - 1] == "\\":
            continue
        depth += 1 if char == "{" else -1 if char == "}" else 0
        if depth < 0:
            return True
    return depth != 0 or text.lstrip()[:1] in ("}", "^", "_")
