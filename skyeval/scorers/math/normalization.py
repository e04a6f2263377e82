"""Normalization of an answer before comparison: math delimiters, Unicode math, thousands
separators, option labels, units, qualifiers, percent and currency (docs/grading.md)."""

from __future__ import annotations

import re
from functools import lru_cache

_HOPE = re.compile(r"\s*I hope it is correct\.?\s*$", re.IGNORECASE)
_BRACKET_DELIMS = (("\\[", "\\]"), ("\\(", "\\)"))
MATH_DELIMS = (("$$", "$$"), ("$", "$"), *_BRACKET_DELIMS)
_DOLLAR = re.compile(r"(?<!\\)\$")
_CURRENCY = re.compile(r"^(?:\\\$|[€£¥])\s*|\s*(?:\\\$|[€£¥])$")
_THOUSANDS = re.compile(r"-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?", re.ASCII)
# LaTeX spacing joins thousands ("1\\,000"); a plain space only "1 000"/"12 500"/"1 234 567",
# never "100 200" (a list).
_SPACE_THOUSANDS = re.compile(r"-?[1-9]\d{0,2}(?:(?:\\[ ,;]|~)\d{3})+(?:\.\d+)?", re.ASCII)
_PLAIN_SPACE_THOUSANDS = re.compile(r"-?(?:[1-9]\d?(?: \d{3})+|[1-9]\d{2}(?: \d{3}){2,})(?:\.\d+)?", re.ASCII)
_LATEX_THOUSANDS = re.compile(r"(?<=\d)\{,\}(?=\d{3})")
_PERCENT = re.compile(
    r"\s*(?:\\?%|\\text\{\s*\\?%\s*\}|(?:\\text\{\s*)?(?<![A-Za-z])(?:percent|per\s?cent|pct)\.?\}?)$", re.IGNORECASE
)
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_WORDS = re.compile(r"[a-z]+(?:[ '\-][a-z]+)*")
NUMBER_WORDS = {
    w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}

Labelled = tuple[str | None, str]


def normalize_answer(answer: str | int | float) -> str:
    """Canonical text of an answer: no math delimiters, thousands separators (``1,234``,
    ``10{,}000``, ``1\\,000``), currency signs, trailing period/percent, option label, unit
    or qualifier around a single value; Unicode math as LaTeX; integral floats as integers."""
    return labelled(answer)[1]


@lru_cache(maxsize=16384)
def labelled(answer: str | int | float) -> tuple[str | None, str]:
    """(option label such as "C" or None, the normalised answer without it). Cached: n samples
    share a gold, and often an answer."""
    if isinstance(answer, float) and answer.is_integer():
        return None, str(int(answer))
    text = unicode_math(str(answer)).strip()
    text = _HOPE.sub("", text).strip().rstrip(".").strip()
    text = _DOLLAR.sub("", text).strip()  # "$69$, $84$" -> "69, 84"; "\$18" is a currency sign
    for start, end in _BRACKET_DELIMS:
        if text.startswith(start) and text.endswith(end):
            text = text[len(start) : len(text) - len(end)].strip()
    text = _LATEX_THOUSANDS.sub("", text)
    label, text = _strip_option_label(text)
    text = _APPROX.sub("", text).strip()
    text = _strip_qualifier(text)
    text = _PERCENT.sub("", text).strip()
    text = _CURRENCY.sub("", text).strip()
    text = _strip_unit(text)
    text = _canonical_latex(text)
    if computed := _COMPUTED.match(text):  # rule computed-value: "11.08+14.33+9.31=34.72" -> "34.72"
        text = computed.group(1).strip()
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    elif _SPACE_THOUSANDS.fullmatch(text) or _PLAIN_SPACE_THOUSANDS.fullmatch(text):
        text = re.sub(r"[^\d.\-]", "", text)
    return label, text


# an arithmetic of plain numbers, then "=" and its value: the value is the answer
_COMPUTED = re.compile(r"^(?=[^=]*\d)(?:[\d.,\s+\-*/×()^]|(?<=\s)x(?=\s)|\\(?:times|cdot|div)(?![A-Za-z]))+=\s*(-?\d[\d,]*(?:\.\d+)?)$")
_ONE_CHAR_GROUP = re.compile(r"([_^])\{\s*(\w)\s*\}")
_UPRIGHT_CONSTANT = re.compile(r"\\(?:mathrm|text|operatorname)\s*\{\s*([ei])\s*\}")
_BOLD = re.compile(r"^\*\*(.+)\*\*$")
# a function written without its backslash, before a number or a parenthesis: `ln2`, `log(3)`, `sqrt(57)`
_PLAIN_FUNCTION = re.compile(r"(?<![\\A-Za-z])(ln|log|exp|sin|cos|tan)(?=\s*[\d(])")
_PLAIN_SQRT = re.compile(r"(?<![\\A-Za-z])sqrt\s*(?:\(([^()]*)\)|(\d+))")


def _canonical_latex(text: str) -> str:
    """Rule `latex-forms`: `E_{1}` -> `E_1`, `x^{2}` -> `x^2`, `\\mathrm{e}` -> `e` (Euler's
    number), `\\tfrac`/`\\dfrac` -> `\\frac`, `\\left(`/`\\right)` -> `(`/`)`, `**194**` -> `194`,
    a function without its backslash (`ln2`, `sqrt(57)`) -> `\\ln 2`, `\\sqrt{57}`."""
    if bold := _BOLD.match(text):
        text = bold.group(1).strip()
    text = _PLAIN_FUNCTION.sub(r"\\\1 ", text)
    text = _PLAIN_SQRT.sub(lambda m: "\\sqrt{" + (m.group(1) if m.group(1) is not None else m.group(2)) + "}", text)
    text = _ONE_CHAR_GROUP.sub(r"\1\2", text)
    text = _UPRIGHT_CONSTANT.sub(r"\1", text)
    text = re.sub(r"\\[dt]frac", r"\\frac", text)
    return re.sub(r"\\(?:left|right)\s*(?=[()\[\]|.]|\\[{}])", "", text)


_WRAPPER = r"\\(?:textbf|mathbf|text|mathrm)"
_WRAPPED_LABEL = re.compile(_WRAPPER + r"\{\s*(\([A-E]\))\s*\}")  # \textbf{(C) } -> (C)
_WRAPPED_ALL = re.compile("^" + _WRAPPER + r"\{([^{}]*)\}$")  # \textbf{(073)} -> (073)
_OPTION_LABEL = re.compile(r"^(?:\(([A-E])\)|([A-E])\s*[:)])(?:\s|~|\\q?quad|\\[ ,;:!])*(?=\S)")  # (C) 18, C: 18, C) 18
_PAREN_NUMBER = re.compile(r"^\((\d+)\)$")
_LONE_LABEL = re.compile(r"^\(([A-E])\)$")


def _strip_option_label(text: str) -> tuple[str | None, str]:
    """AoPS-style answers: `\\textbf{(C) }18` -> ("C", `18`), `\\textbf{(073)}` -> (None, `073`)."""
    text = _WRAPPED_LABEL.sub(r"\1 ", text).strip()
    if wrapped := _WRAPPED_ALL.match(text):
        text = wrapped.group(1).strip()
    if number := _PAREN_NUMBER.match(text):
        return None, number.group(1)
    if letter := _LONE_LABEL.match(text):  # "\\textbf{(C)}" alone is the letter
        return None, letter.group(1)
    label = _OPTION_LABEL.match(text)
    return (label.group(1) or label.group(2), text[label.end() :].strip()) if label else (None, text)


_UNICODE = {
    "−": "-", "–": "-", "×": "\\times ", "·": "\\cdot ", "÷": "/", "√": "\\sqrt", "π": "\\pi ", "∞": "\\infty ",
    "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "²": "^2", "³": "^3", "°": "^\\circ", "\u2009": "\\,", "\u202f": "\\,",
    "½": "\\frac{1}{2}", "⅓": "\\frac{1}{3}", "⅔": "\\frac{2}{3}", "¼": "\\frac{1}{4}", "¾": "\\frac{3}{4}",
    "⅕": "\\frac{1}{5}", "⅙": "\\frac{1}{6}", "⅛": "\\frac{1}{8}", "⅜": "\\frac{3}{8}", "⅝": "\\frac{5}{8}", "⅞": "\\frac{7}{8}",
}
_UNICODE_CHARS = re.compile("|".join(map(re.escape, _UNICODE)))


def unicode_math(text: str) -> str:
    """`½x + ¼y` -> `\\frac{1}{2}x + \\frac{1}{4}y`; `2×10³` -> `2\\times 10^3`."""
    return _UNICODE_CHARS.sub(lambda m: _UNICODE[m.group()], text) if not text.isascii() else text


_APPROX = re.compile(r"^(?:\\approx|\\sim|≈|approximately|about|around|roughly)\s*", re.IGNORECASE)
_QUALIFIER = re.compile(
    r"\s*(?:,|;|\\q?quad|\\text\{\s*[,;(]?\s*|\()\s*(?:\\text\{\s*)?"
    r"(?:where|since|because|for\s+(?:all|some|any|every)|when|if|given|assuming|provided|with|rounded|approx|"
    r"in\s+(?:total|all|simplest)|which|as\s+required|units?)\b.*$",
    re.IGNORECASE | re.DOTALL,
)


_EXPLANATION = re.compile(r"\s+\((?=[^()]*[A-Za-z]{3,})[^()\d\\=<>]*\)$")  # "False (no aliasing occurs)"


def _strip_qualifier(text: str) -> str:
    """`5, \\text{ where } x > 0` -> `5`; `12 (rounded)` -> `12`; `False (no aliasing occurs)`
    -> `False`: side text after a value."""
    if text.endswith(")") and (explanation := _EXPLANATION.search(text)) and explanation.start() > 0:
        text = text[: explanation.start()].strip()
    match = _QUALIFIER.search(text)
    if not match or match.start() == 0 or re.search(r"[,;]\s*-?\d", match.group()):
        return text  # "5 (when n is odd), 6 (when n is even)" is two answers
    return text[: match.start()].strip()


_NUMBER_RE = r"-?(?:\d+(?:\.\d*)?|\.\d+)"
# a number in scientific notation: "4 \times 10^{33}", "4.569 x 10^-24", "2e-3"
_SCIENTIFIC_RE = r"(?:\s*(?:\\times|\\cdot|x|\*)\s*10\s*\^\s*(?:\{\s*[+-]?\d+\s*\}|[+-]?\d+)|[eE][+-]?\d+)?"
_UNIT_POWER = r"(?:\s*\^\s*(?:\{\s*-?\d+\s*\}|-?\d))?"
_UNIT = re.compile(
    rf"^({_NUMBER_RE}{_SCIENTIFIC_RE})\s*(?:"
    r"(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree)\s*(?:\\text\{\s*)?[CFK]?\}?"  # 250^\circ F
    r"|(?:\\[ ,;!]|~|\s)*(?:\\(?:text|mbox|mathrm|textrm)\s*\{(?!\s*(?:hundred|thousand|[mbtr]illion|dozen))[^{}]*\}"
    + _UNIT_POWER + r"(?:\s|\\[ ,;!]|~|\\cdot|/)*)+"  # 12 \text{ cm}, 4e33 \, \text{erg s}^{-1}
    r"|\s+(?!(?:sin|cos|tan|log|ln|exp|and|or|pi|sqrt|mod|modulo|times|over|plus|minus|squared|cubed|"
    r"hundreds?|thousands?|millions?|billions?|trillions?|dozens?|tenths?|hundredths?|thousandths?)\b)[A-Za-z]{2,}(?:\s*(?:/|per)\s*[A-Za-z]+|\^\{?\d\}?)?\.?"  # 18 dollars
    r")$"
)


def _strip_unit(text: str) -> str:
    """Rule `units`: a single value with a unit after it: `250°F`, `12 \\text{ cm}`, `18 dollars`,
    `4 \\times 10^{33} \\, \\text{erg s}^{-1}`, `4.569 x 10^-24 meters` -> the value."""
    match = _UNIT.match(text)
    return match.group(1).strip() if match else text


# rule `conditions`: a condition on a variable after the answer ("\\text{ for } t > 0", ", x \\neq 0")
_CONDITION = re.compile(
    r"\s*(?:,|;|\\q?quad|\\[,;:!]|\\text\s*\{\s*(?:for|if|when|where)\s*\}|\b(?:for|if|when|where)\b)\s*"
    r"(?:\\q?quad\s*|\\text\s*\{\s*(?:for|if|when|where)\s*\}\s*)*\(?\s*[A-Za-z](?:_\{?\w+\}?)?\s*"
    r"(?:>|<|\\geq?|\\leq?|\\neq?|\\in\b|≥|≤|≠)[^=]*?\)?\s*$"
)


def strip_condition(text: str) -> str:
    """`x(t) = 1 - e^{-t} \\text{ for } t > 0` -> `x(t) = 1 - e^{-t}` (the condition goes)."""
    match = _CONDITION.search(text) if len(text) <= 1000 else None
    return text[: match.start()].strip() if match and match.start() > 0 else text


def has_condition(text: str) -> bool:
    return strip_condition(text) != text


def as_list(expected: str | int | float | list[str]) -> list[str | int | float]:
    return list(expected) if isinstance(expected, (list, tuple)) else [expected]


def text_key(answer: str) -> str:
    """Lower-case text without ``\\text{}``-like wrappers, spacing commands, a final period
    or spaces around ``=`` and ``,`` (a leading dot is kept: ``.35625`` is not ``35625``)."""
    for _ in range(2):  # \textbf{\text{x}}
        answer = _TEXT_WRAPPER.sub(r"\1", answer)
    answer = answer.replace("\\ ", " ").replace("~", " ").replace("\\,", " ").replace("\\;", " ")
    answer = re.sub(r"\s*([=,])\s*", r"\1", answer)
    key = " ".join(answer.split()).rstrip(" .").strip()
    return key if len(key) == 1 else key.lower()


def is_text(key: str, raw: str) -> bool:
    """Words, not a product of variables: a word of 3+ letters, or text in ``\\text{}``."""
    key = key.lower()
    if not _WORDS.fullmatch(key):
        return False
    return any(len(word) >= 3 for word in re.split(r"[ '\-]", key)) or _TEXT_WRAPPER.search(raw) is not None

