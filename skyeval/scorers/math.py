"""Math answer grading: extract the final answer, compare it with math-verify.

Extraction order, over the last ``TAIL_CHARS`` of the generation only: the last
``\\boxed{}``/``\\fbox{}``; the last ``#### x`` (GSM8K); the last "final answer is x" /
"the answer is x" / "answer: x"; as a last resort the last bare number. Prediction and
gold are normalised the same way, then parsed and compared symbolically and numerically
by math-verify under a hard time limit (see ``time_limit``).
"""

from __future__ import annotations

import logging
import re

from skyeval.scorers.time_limit import TimeLimitExceeded, call_with_time_limit

logger = logging.getLogger(__name__)

TAIL_CHARS = 8000  # final answers sit at the end; bounds work on degenerate generations
MAX_ANSWER_CHARS = 1000  # longer "answers" are degenerate, not graded

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*(\{)|\\boxed +([^\s$]+)")
_GSM8K = re.compile(r"####\s*([^\n]+)")
_ANSWER_PHRASE = re.compile(r"\banswer\**\s*(?:is\b\s*:?|:)", re.IGNORECASE)
_NUMBER_THEN_WORD = re.compile(r"\\?\$?(-?\d[\d,]*(?:\.\d+)?)\s+(?!(?:and|or)\b)[A-Za-z]{2,}")
_HOPE = re.compile(r"\s*I hope it is correct\.?\s*$", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_BRACKET_DELIMS = (("\\[", "\\]"), ("\\(", "\\)"))
_MATH_DELIMS = (("$$", "$$"), ("$", "$"), *_BRACKET_DELIMS)
_DOLLAR = re.compile(r"(?<!\\)\$")
_THOUSANDS = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_LATEX_THOUSANDS = re.compile(r"(?<=\d)\{,\}(?=\d{3})")
_PERCENT = re.compile(r"\\?%$")


def extract_math_answer(generation: str) -> str | None:
    """Return the final answer string of ``generation``, or None if none is found."""
    tail = generation[-TAIL_CHARS:]
    for extract in (last_boxed, _last_gsm8k, _last_answer_phrase, _last_number):
        answer = extract(tail)
        if answer:
            return answer
    return None


def score_math(
    generation: str, expected: str | int | float | list[str], *, timeout_s: float = 5.0
) -> dict:
    """Grade ``generation`` against ``expected`` (one answer or a list of acceptable ones).

    Never raises, never hangs. Returns ``{"score": 0.0|1.0, "extracted": str|None,
    "parse_failed": bool, "timed_out": bool}``; ``parse_failed`` means nothing was extracted.
    """
    extracted = extract_math_answer(generation)
    result = {"score": 0.0, "extracted": extracted, "parse_failed": extracted is None, "timed_out": False}
    golds = [g for g in map(normalize_answer, _as_list(expected)) if g]
    if extracted is None or not golds or len(extracted) > MAX_ANSWER_CHARS:
        return result
    answer = normalize_answer(extracted)
    if answer and answer in golds:  # identical text: no need to parse (and no time-out risk)
        result["score"] = 1.0
        return result
    try:
        correct = call_with_time_limit(
            _verify_any, golds, answer, timeout_s=timeout_s, warmup=_warm_math_verify
        )
    except TimeLimitExceeded:
        result["timed_out"] = True
        return result
    except Exception:
        logger.exception("math grading failed for extracted answer %.200r", extracted)
        return result
    result["score"] = 1.0 if correct else 0.0
    return result


def normalize_answer(answer: str | int | float) -> str:
    """Canonical text of an answer: no math delimiters, thousands separators or trailing
    period/percent; integral floats as integers (27.0 -> "27")."""
    if isinstance(answer, float) and answer.is_integer():
        return str(int(answer))
    text = str(answer).strip()
    text = _HOPE.sub("", text).strip().rstrip(".").strip()
    text = _DOLLAR.sub("", text)  # "$69$, $84$" -> "69, 84"; keeps "\$18"
    for start, end in _BRACKET_DELIMS:
        if text.startswith(start) and text.endswith(end):
            text = text[len(start) : len(text) - len(end)].strip()
    text = _LATEX_THOUSANDS.sub("", text)
    text = _strip_option_label(text)
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    return _PERCENT.sub("", text).strip()


_WRAPPER = r"\\(?:textbf|mathbf|text|mathrm)"
_WRAPPED_LABEL = re.compile(_WRAPPER + r"\{\s*(\([A-E]\))\s*\}")  # \textbf{(C) } -> (C)
_WRAPPED_ALL = re.compile("^" + _WRAPPER + r"\{([^{}]*)\}$")  # \textbf{(073)} -> (073)
_OPTION_LABEL = re.compile(r"^\([A-E]\)(?:\s|~|\\q?quad|\\[ ,;:!])*(?=\S)")
_PAREN_NUMBER = re.compile(r"^\((\d+)\)$")


def _strip_option_label(text: str) -> str:
    """AoPS-style answers: `\\textbf{(C) }18` -> `18`, `\\textbf{(073)}` -> `073`."""
    text = _WRAPPED_LABEL.sub(r"\1 ", text)
    if wrapped := _WRAPPED_ALL.match(text):
        text = wrapped.group(1).strip()
    if number := _PAREN_NUMBER.match(text):
        return number.group(1)
    label = _OPTION_LABEL.match(text)
    return text[label.end() :].strip() if label else text


def _as_list(expected: str | int | float | list[str]) -> list[str | int | float]:
    return list(expected) if isinstance(expected, (list, tuple)) else [expected]


def last_boxed(text: str) -> str | None:
    """Content of the last balanced ``\\boxed{...}``/``\\fbox{...}`` (or ``\\boxed x``)."""
    closing = _matching_braces(text)
    for match in reversed(list(_BOXED.finditer(text))):
        if match.group(2) is not None:
            return match.group(2)
        start = match.start(1)
        if start in closing:
            content = text[start + 1 : closing[start]].strip()
            if content:
                return content
    return None


def _matching_braces(text: str) -> dict[int, int]:
    """Map each balanced ``{`` position to its ``}`` position, in one pass."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for i, char in enumerate(text):
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            pairs[stack.pop()] = i
    return pairs


def _last_gsm8k(text: str) -> str | None:
    matches = _GSM8K.findall(text)
    return matches[-1].strip() if matches else None


def _last_answer_phrase(text: str) -> str | None:
    """Text after the last "answer is" / "answer:" up to the sentence end."""
    match = None
    for match in _ANSWER_PHRASE.finditer(text):
        pass
    if match is None:
        return None
    rest = text[match.end() :].lstrip(" *\t").split("\n", 1)[0]
    for start, end in _MATH_DELIMS:
        if rest.startswith(start):
            close = rest.find(end, len(start))
            if close > 0:
                return rest[len(start) : close].strip()
    sentence = re.split(r"\.(?:\s|$)", rest, maxsplit=1)[0].strip(" *").strip()
    number = _NUMBER_THEN_WORD.match(sentence)  # "18 dollars" -> "18"
    return number.group(1) if number else sentence or None


def _last_number(text: str) -> str | None:
    numbers = _NUMBER.findall(text)
    return numbers[-1].rstrip(",") if numbers else None


def _warm_math_verify() -> None:
    """Import math-verify (sympy, antlr) and fill its regex and parser caches, so that the
    time limit covers grading only. Mutes its one-off "timeout is disabled" warnings:
    ``call_with_time_limit`` bounds the time instead."""
    import math_verify.grader
    import math_verify.parser

    math_verify.grader.TIMEOUT_WARNING_SHOWN = True
    math_verify.parser.TIMEOUT_WARNING_SHOWN = True
    _verify_any([r"\frac{1}{2}"], "0.5")


def _verify_any(golds: list[str], prediction: str) -> bool:
    """True if ``prediction`` equals any gold. No own timeouts: the caller bounds the time."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    config = [LatexExtractionConfig(), ExprExtractionConfig()]
    parsed = parse(f"\\boxed{{{prediction}}}", config, parsing_timeout=None)
    return any(
        verify(parse(f"\\boxed{{{gold}}}", config, parsing_timeout=None), parsed, timeout_seconds=None)
        for gold in golds
    )
