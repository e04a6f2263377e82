"""Math answer grading: find the final answer, compare it with the gold (docs/grading.md).

Where the answer is read:

1. Reasoning (`skyeval.reasoning.parse`: `<think>`, Sky-T1's thought/solution markers,
   a server's `reasoning_content`) is never graded: only the answer part is. A thought
   that never closes is no answer; so is an output cut off (`finish_reason: length`)
   without a closed thought, unless the caller opts in (`grade_truncated`).
2. Junk after the answer goes: a trailing repetition loop (no answer when nothing
   precedes it) and a new invented problem after an answer.
3. The last anchor by position wins: a `\\boxed{}`/`\\fbox{}` (an empty one, such as a
   restated instruction, is no answer), an "answer is x" / "answer: x" statement, and
   `#### x` where the env's gold uses it (GSM8K). When the gold is a list or set, the run
   of boxes ending the response is also tried as one answer.
4. Otherwise math-verify's own LaTeX and expression extraction over the last ``TAIL_CHARS``.

Comparison is by value (see ``_quick_verdict`` and ``_verify_any``); all math-verify work
runs under a hard time limit (see ``time_limit``).
"""

from __future__ import annotations

import re
import time
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

from skyeval.errors import require
from skyeval.scorers.time_limit import TimeLimitExceeded, call_with_time_limit

TAIL_CHARS = 8000  # unanchored answers sit at the end; bounds work on degenerate generations
BOX_SCAN_CHARS = 200_000  # boxes are looked for this far back (long, degenerate outputs)
MAX_ANSWER_CHARS = 1000  # longer "answers" are degenerate, not graded
UNCLOSED_REASONING = "unclosed reasoning: truncated thought"
TRUNCATED = "truncated output (finish_reason length) without a closed thought"
REPETITION = "repetition loop without an answer"
EMPTY_BOX = "empty \\boxed{}"
NO_ANSWER = "no answer found"
MATH_VERIFY_INSTALL = 'pip install "math-verify[antlr4_9_3]" (or reinstall skyeval)'

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*(\{)|\\boxed +([^\s$]+)")
_BRACE = re.compile(r"[{}]")
_GSM8K = re.compile(r"####\s*([^\n]+)")
_ANSWER_PHRASE = re.compile(r"\banswer\**\s*(?:is\b\s*:?|:)", re.IGNORECASE)
_NUMBER_THEN_WORD = re.compile(r"\\?\$?(-?\d[\d,]*(?:\.\d+)?)\s+(?!(?:and|or)\b)[A-Za-z]{2,}", re.ASCII)
_HOPE = re.compile(r"\s*I hope it is correct\.?\s*$", re.IGNORECASE)
_BRACKET_DELIMS = (("\\[", "\\]"), ("\\(", "\\)"))
_MATH_DELIMS = (("$$", "$$"), ("$", "$"), *_BRACKET_DELIMS)
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
_PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)", re.ASCII)
_DECIMAL_COMMA = re.compile(r"(-?)(\d+),(\d+)", re.ASCII)
_FRACTION = re.compile(r"(-?)(?:\\[dt]?frac\{(\d+)\}\{(\d+)\}|(\d+)/(\d+))", re.ASCII)
# What may sit between two boxes of one answer set: "$, $", " and ", "\] \[", "x = ".
_BOX_CONNECTOR = re.compile(
    r"(?:\s|[$,;.&]|\\[\[\]()]|\\q?quad|\\text\{\s*(?:and|or)\s*\}|\b(?:and|or)\b|\b[a-zA-Z](?:_\{?\d+\}?)?\s*=)*"
)
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_WORDS = re.compile(r"[a-z]+(?:[ '\-][a-z]+)*")


def require_math_verify() -> None:
    """Raise MissingDependencyError (with what to install) when math-verify or its LaTeX
    parser cannot be imported. Cheap: looks the modules up without importing them."""
    for module in ("math_verify", "latex2sympy2_extended", "antlr4"):
        require(module, MATH_VERIFY_INSTALL, "math grading")


def final_response(
    generation: str, *, reasoning: str | None = None, finish_reason: str | None = None, grade_truncated: bool = False
) -> tuple[str, str, str | None]:
    """(the answer part to grade, the reasoning state, None) or ("", state, reason) when
    there is none: an unclosed thought, or a cut-off output without a closed thought."""
    from skyeval.reasoning import NONE, UNCLOSED, parse

    parsed = parse(generation if isinstance(generation, str) else "", reasoning_content=reasoning)
    if parsed.state == UNCLOSED:
        return "", parsed.state, UNCLOSED_REASONING
    if finish_reason == "length" and parsed.state == NONE and not grade_truncated:
        return "", parsed.state, TRUNCATED
    return parsed.answer, parsed.state, None


def extract_math_answer(generation: str, *, timeout_s: float = 5.0, hash_answer: bool = False) -> str | None:
    """Return the final answer string of ``generation``, or None if none is found (or
    math-verify's extraction overran ``timeout_s``)."""
    text, _, error = final_response(generation)
    if error:
        return None
    try:
        found, _ = _find_answer(text, hash_answer=hash_answer, timeout_s=timeout_s)
    except TimeLimitExceeded:
        return None
    return found[0] if found else None


def score_math(
    generation: str,
    expected: str | int | float | list[str],
    *,
    timeout_s: float = 5.0,
    reasoning: str | None = None,
    finish_reason: str | None = None,
    grade_truncated: bool = False,
    hash_answer: bool = False,
) -> dict:
    """Grade ``generation`` against ``expected`` (one answer or a list of acceptable ones).

    ``reasoning``/``finish_reason`` are the sample's own fields (a server's reasoning, why
    generation stopped); ``hash_answer`` reads ``#### x`` (GSM8K). Never raises, never
    hangs. Returns ``{"score": 0.0|1.0, "extracted": str|None, "parse_failed": bool,
    "parse_error": str|None, "timed_out": bool, "reasoning_state": closed|unclosed|none}``;
    ``parse_failed`` means nothing was extracted and ``parse_error`` says why.
    """
    result = {"score": 0.0, "extracted": None, "parse_failed": True, "parse_error": NO_ANSWER, "timed_out": False,
              "reasoning_state": "none"}
    deadline = time.monotonic() + timeout_s
    try:
        text, state, error = final_response(
            generation, reasoning=reasoning, finish_reason=finish_reason, grade_truncated=grade_truncated
        )
        result["reasoning_state"] = state
        if error:
            result["parse_error"] = error
            return result
        found, error = _find_answer(text, hash_answer=hash_answer, timeout_s=timeout_s)
        if found is None:
            result["parse_error"] = error or NO_ANSWER
            return result
        answer, box_set = found
        result.update(extracted=answer, parse_failed=False, parse_error=None)
        golds = [g for g in map(_labelled, _as_list(expected)) if g[1]]
        candidates = [_labelled(answer)]
        if box_set and any(_is_answer_set(g) for _, g in golds):
            candidates.append(_labelled(", ".join(box_set)))
        candidates = [c for c in candidates if c[1] and len(c[1]) <= MAX_ANSWER_CHARS]
        if not golds or not candidates:
            return result
        verdict, pairs = _quick_verdict(golds, candidates)
        if verdict is None:
            remaining = max(deadline - time.monotonic(), 0.05)
            verdict = call_with_time_limit(_verify_any, tuple(pairs), timeout_s=remaining, warmup=_warm_math_verify)
        result["score"] = 1.0 if verdict else 0.0
    except TimeLimitExceeded:
        result["timed_out"] = True
    return result


def equivalent(a: str, b: str, *, timeout_s: float = 2.0) -> bool:
    """Whether two extracted answers are the same answer (the grader's equivalence, with
    ``b`` as the gold); False on a time-out. Majority vote clusters answers with it."""
    try:
        verdict, pairs = _quick_verdict([_labelled(b)], [_labelled(a)])
        if verdict is None:
            verdict = call_with_time_limit(_verify_any, tuple(pairs), timeout_s=timeout_s, warmup=_warm_math_verify)
        return bool(verdict)
    except TimeLimitExceeded:
        return False


def answer_key(answer: str) -> str:
    """A cheap canonical key of an extracted answer: answers with one key are equivalent."""
    label, text = _labelled(answer)
    number = _number(text)
    if number is not None:
        return f"{label or ''}#{number}"
    return f"{label or ''}{_text_key(text)}"


def normalize_answer(answer: str | int | float) -> str:
    """Canonical text of an answer: no math delimiters, thousands separators (``1,234``,
    ``10{,}000``, ``1\\,000``), currency signs, trailing period/percent, option label, unit
    or qualifier around a single value; Unicode math as LaTeX; integral floats as integers."""
    return _labelled(answer)[1]


def _labelled(answer: str | int | float) -> tuple[str | None, str]:
    """(option label such as "C" or None, the normalised answer without it)."""
    if isinstance(answer, float) and answer.is_integer():
        return None, str(int(answer))
    text = _unicode_math(str(answer)).strip()
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
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    elif _SPACE_THOUSANDS.fullmatch(text) or _PLAIN_SPACE_THOUSANDS.fullmatch(text):
        text = re.sub(r"[^\d.\-]", "", text)
    return label, text


_WRAPPER = r"\\(?:textbf|mathbf|text|mathrm)"
_WRAPPED_LABEL = re.compile(_WRAPPER + r"\{\s*(\([A-E]\))\s*\}")  # \textbf{(C) } -> (C)
_WRAPPED_ALL = re.compile("^" + _WRAPPER + r"\{([^{}]*)\}$")  # \textbf{(073)} -> (073)
_OPTION_LABEL = re.compile(r"^\(([A-E])\)(?:\s|~|\\q?quad|\\[ ,;:!])*(?=\S)")
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
    return (label.group(1), text[label.end() :].strip()) if label else (None, text)


_UNICODE = {
    "−": "-", "–": "-", "×": "\\times ", "·": "\\cdot ", "÷": "/", "√": "\\sqrt", "π": "\\pi ", "∞": "\\infty ",
    "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "²": "^2", "³": "^3", "°": "^\\circ", "\u2009": "\\,", "\u202f": "\\,",
    "½": "\\frac{1}{2}", "⅓": "\\frac{1}{3}", "⅔": "\\frac{2}{3}", "¼": "\\frac{1}{4}", "¾": "\\frac{3}{4}",
    "⅕": "\\frac{1}{5}", "⅙": "\\frac{1}{6}", "⅛": "\\frac{1}{8}", "⅜": "\\frac{3}{8}", "⅝": "\\frac{5}{8}", "⅞": "\\frac{7}{8}",
}
_UNICODE_CHARS = re.compile("|".join(map(re.escape, _UNICODE)))


def _unicode_math(text: str) -> str:
    """`½x + ¼y` -> `\\frac{1}{2}x + \\frac{1}{4}y`; `2×10³` -> `2\\times 10^3`."""
    return _UNICODE_CHARS.sub(lambda m: _UNICODE[m.group()], text) if not text.isascii() else text


_APPROX = re.compile(r"^(?:\\approx|\\sim|≈|approximately|about|around|roughly)\s*", re.IGNORECASE)
_QUALIFIER = re.compile(
    r"\s*(?:,|;|\\q?quad|\\text\{\s*[,;(]?\s*|\()\s*(?:\\text\{\s*)?"
    r"(?:where|since|because|for\s+(?:all|some|any|every)|when|if|given|assuming|provided|with|rounded|approx|"
    r"in\s+(?:total|all|simplest)|which|as\s+required|units?)\b.*$",
    re.IGNORECASE | re.DOTALL,
)


def _strip_qualifier(text: str) -> str:
    """`5, \\text{ where } x > 0` -> `5`; `12 (rounded)` -> `12`: side text after a value."""
    match = _QUALIFIER.search(text)
    if not match or match.start() == 0 or re.search(r"[,;]\s*-?\d", match.group()):
        return text  # "5 (when n is odd), 6 (when n is even)" is two answers
    return text[: match.start()].strip()


_NUMBER_RE = r"-?(?:\d+(?:\.\d*)?|\.\d+)"
_UNIT = re.compile(
    rf"^({_NUMBER_RE})\s*(?:"
    r"(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree)\s*(?:\\text\{\s*)?[CFK]?\}?"  # 250^\circ F
    r"|(?:\\[ ,;!]|~|\s)*(?:\\(?:text|mbox|mathrm|textrm)\{(?!\s*(?:hundred|thousand|[mbtr]illion|dozen))[^{}]*\}\s*)+"  # 12 \text{ cm}
    r"|\s+(?!(?:sin|cos|tan|log|ln|exp|and|or|pi|sqrt|mod|modulo|times|over|plus|minus|squared|cubed|"
    r"hundreds?|thousands?|millions?|billions?|trillions?|dozens?|tenths?|hundredths?|thousandths?)\b)[A-Za-z]{2,}(?:\s*(?:/|per)\s*[A-Za-z]+|\^\{?\d\}?)?\.?"  # 18 dollars
    r")$"
)


def _strip_unit(text: str) -> str:
    """A single value with a unit after it: `250°F`, `12 \\text{ cm}`, `18 dollars` -> the value."""
    match = _UNIT.match(text)
    return match.group(1) if match else text


def _as_list(expected: str | int | float | list[str]) -> list[str | int | float]:
    return list(expected) if isinstance(expected, (list, tuple)) else [expected]


# --- extraction ----------------------------------------------------------------------------


def last_boxed(text: str) -> str | None:
    """Content of the last balanced ``\\boxed{...}``/``\\fbox{...}`` (or ``\\boxed x``)."""
    boxes = _boxes(text)
    return boxes[-1][2] if boxes else None


def _boxes(text: str, keep_empty: bool = False) -> list[tuple[int, int, str]]:
    """Every box of ``text`` as (start, end, content), in order of their start; empty
    ones (content "") only with ``keep_empty``."""
    closing = _matching_braces(text)
    boxes = []
    for match in _BOXED.finditer(text):
        if match.group(2) is not None:
            boxes.append((match.start(), match.end(), match.group(2)))
        elif (start := match.start(1)) in closing:
            content = text[start + 1 : closing[start]].strip()
            if content or keep_empty:
                boxes.append((match.start(), closing[start] + 1, content))
    return boxes


def _matching_braces(text: str) -> dict[int, int]:
    """Map each balanced ``{`` position to its ``}`` position, in one pass."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for match in _BRACE.finditer(text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            pairs[stack.pop()] = match.start()
    return pairs


def _find_answer(text: str, *, hash_answer: bool, timeout_s: float) -> tuple[tuple[str, list[str]] | None, str | None]:
    """((answer, the boxes ending the response when there are several) or None, why not)."""
    text, loop = _cut_repetition(text)
    anchors, boxes = _anchors(text, hash_answer)
    if not anchors and loop:
        text = loop  # a model repeating its own final answer
        anchors, boxes = _anchors(text, hash_answer)
    if anchors:
        _, content, box = anchors[-1]
        if not content:
            return None, EMPTY_BOX
        run = _final_box_run(text, [b for b in boxes[: box + 1] if b[2]]) if box is not None else []
        return (content, run), None
    if loop is not None:
        return None, REPETITION
    if not text.strip():
        return None, None
    extracted = call_with_time_limit(_unanchored_answer, text[-TAIL_CHARS:], timeout_s=timeout_s, warmup=_warm_math_verify)
    return ((extracted, []) if extracted else None), None


def _anchors(text: str, hash_answer: bool) -> tuple[list[tuple[int, str, int | None]], list[tuple[int, int, str]]]:
    """(answer statements of ``text`` as (position, answer, index of the box or None) in
    text order, the boxes). A new problem the model invents after its first committed
    answer ends the text."""
    scan_from = max(len(text) - BOX_SCAN_CHARS, 0)
    tail = max(len(text) - TAIL_CHARS, 0)
    boxes = _boxes(text[scan_from:], keep_empty=True)
    found: list[tuple[int, str, int | None]] = [(scan_from + end, content, i) for i, (_, end, content) in enumerate(boxes)]
    found += [(m.end(), answer, None) for m in _ANSWER_PHRASE.finditer(text, tail) if (answer := _phrase_answer(text, m))]
    if hash_answer:
        found += [(m.end(), m.group(1).strip(), None) for m in _GSM8K.finditer(text, tail) if m.group(1).strip()]
    found.sort(key=lambda anchor: anchor[0])
    first = next((anchor[0] for anchor in found if anchor[1]), None)
    if first is not None and (invented := _NEW_PROBLEM.search(text, first)):
        found = [anchor for anchor in found if anchor[0] <= invented.start()]
    return found, boxes


def _final_box_run(text: str, boxes: list[tuple[int, int, str]]) -> list[str]:
    """Contents of the boxes that end the response joined only by connectors ("$, $",
    " and ", "x = "); empty unless there are several. A box, then prose ("Wait, no"),
    then another box is a correction, not a list."""
    run = [boxes[-1]]
    offset = max(len(text) - BOX_SCAN_CHARS, 0)
    for box in reversed(boxes[:-1]):
        between = text[offset + box[1] : offset + run[0][0]]
        if box[1] > run[0][0] or len(between) > 200 or not _BOX_CONNECTOR.fullmatch(between):
            break
        run.insert(0, box)
    return [content for _, _, content in run] if len(run) > 1 else []


_FILLER = re.compile(r"(?:(?:indeed|therefore|thus|then|clearly|simply|just|exactly|actually|definitely|now|finally)\b[\s,:]*)+", re.I)
# Words that make "the answer is ..." a remark, not an answer ("my answer is consistent").
_REMARK = re.compile(
    r"(?:consistent|correct|incorrect|right|wrong|not|that|this|the|a|an|to|in|being|likely|probably|as|same|valid|"
    r"verified|confirmed|given|below|above|unchanged|still|also|from|of|what|how|because|since|clear|obvious|"
    r"reasonable|plausible|wrong|off|close|different|too|very|quite|in)\b",
    re.I,
)
_STATED_VALUE = re.compile(r"^[A-Za-z][^=]*?\s(?:is|are|equals|was)\s+(?:equal\s+to\s+)?([^\s].*)$")
_CHECKING = re.compile(r"\b(?:check|checking|verify|verifying|confirm|confirming|test|testing|plug|plugging)\s+(?:\w+\s+)?$", re.I)
_NUMBER_WORDS = {
    w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_WORD_NUMBER_THEN_WORD = re.compile(rf"({'|'.join(_NUMBER_WORDS)})\b(?:\s+[A-Za-z]+)*", re.I)


def _phrase_answer(text: str, match: re.Match) -> str | None:
    """The answer an "answer is" / "answer:" statement gives, up to the sentence end; None
    when it is a remark ("the answer is consistent") or holds a box (the box is the anchor)."""
    if _CHECKING.search(text[max(match.start() - 40, 0) : match.start()]):
        return None  # "let us check our answer: ..." is a check, not an answer
    rest = text[match.end() : match.end() + 2000].lstrip(" *\t")
    line, _, more = rest.partition("\n")
    if not line.strip():  # "Answer:\n\n42"
        line = more.lstrip().split("\n", 1)[0]
    line = _FILLER.sub("", line.lstrip(" *:")).lstrip(" *")
    if "\\boxed" in line or "\\fbox" in line:
        return None
    for start, end in _MATH_DELIMS:
        if line.startswith(start):
            close = line.find(end, len(start))
            if close > 0:
                return line[len(start) : close].strip() or None
    sentence = re.split(r"\.(?:\s|$)|[!?](?:\s|$)", line, maxsplit=1)[0].strip(" *").strip()
    if (value := _STATED_VALUE.search(sentence)) and re.search(r"[\d$\\]", value.group(1)):
        sentence = value.group(1).strip()  # "Final Answer: The largest $n$ is 34" -> "34"
    if not sentence or _REMARK.match(sentence):
        return None
    if number := _NUMBER_THEN_WORD.match(sentence):  # "18 dollars" -> "18"
        return number.group(1)
    if word := _WORD_NUMBER_THEN_WORD.fullmatch(sentence):  # "five apples" -> "five"
        return word.group(1)
    if not re.search(r"[\d\\^=+/()]", sentence) and len(sentence.split()) > 4:
        return None  # prose, not an answer
    return sentence


# A new problem the model invents after its answer (base models continue the few-shot pattern).
_NEW_PROBLEM = re.compile(
    r"^[ \t>#*]*(?:Problem|Question|Exercise|Example)\s*(?:\d+|[A-Z])?\s*[:.]|^[ \t]*(?:Human|User|Q)\s*:|<\|im_start\|>|<\|user\|>",
    re.MULTILINE,
)
MIN_LOOP_REPEATS, MIN_LOOP_CHARS, LOOP_PROBE = 4, 200, 48


def _cut_repetition(text: str) -> tuple[str, str | None]:
    """(text before a trailing repetition loop, one copy of the repeated unit) or (text,
    None) when the text does not end in a loop of >= MIN_LOOP_REPEATS copies."""
    stripped = text.rstrip()
    n = len(stripped)
    if n < MIN_LOOP_CHARS:
        return text, None
    probe = stripped[-LOOP_PROBE:]
    previous = stripped.rfind(probe, 0, n - 1)
    if previous < 0:
        return text, None
    period = n - LOOP_PROBE - previous
    if period <= 0:
        return text, None
    start = n - period  # grow the periodic suffix backwards, a block at a time
    while start - period >= 0 and stripped[start - period : start] == stripped[start : start + period]:
        start -= period
    while start > 0 and stripped[start - 1] == stripped[start - 1 + period]:
        start -= 1
    if (n - start) < max(MIN_LOOP_CHARS, MIN_LOOP_REPEATS * period):
        return text, None
    return stripped[:start], stripped[start : start + period]


def _unanchored_answer(text: str) -> str | None:
    """math-verify's own extraction without anchors: the last LaTeX environment, fraction
    or stand-alone number/expression. Returns its (normalised) text. Runs under the limit."""
    from math_verify import parse

    parsed = parse(text, _unanchored_config(), parsing_timeout=None)
    strings = [item for item in parsed if isinstance(item, str) and item.strip()]
    return strings[-1].strip() if strings else None


@lru_cache(maxsize=1)
def _unanchored_config() -> tuple:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    return (LatexExtractionConfig(boxed_match_priority=-1), ExprExtractionConfig())


# --- comparison ----------------------------------------------------------------------------


Labelled = tuple[str | None, str]


def _quick_verdict(golds: list[Labelled], candidates: list[Labelled]) -> tuple[bool | None, list[tuple[str, str]]]:
    """(verdict, the (gold, candidate) pairs math-verify must still decide). Decides
    without math-verify where that is exact: identical text, option labels, text answers,
    plain numbers (with the tolerance of a decimal gold's stated precision) and simple
    fractions. The verdict is None when pairs remain."""
    pairs = []
    gold_labels = {label for label, _ in golds if label}
    # an answer naming another option than the gold's is wrong, whatever its value
    candidates = [(label, c) for label, c in candidates if not (label and gold_labels and label not in gold_labels)]
    for gold_label, gold in golds:
        gold_key, gold_number = _text_key(gold), _number(gold)
        for label, candidate in candidates:
            if gold_label and label and gold_label != label:
                continue  # (A) 18 is not (C) 18
            if candidate == gold:
                return True, []
            key = _text_key(candidate)
            if key == gold_key and key:
                return True, []
            if gold_key.isalpha() and len(gold_key) == 1 or _is_text(gold_key, gold) and _is_text(key, candidate):
                continue  # two different words: "odd" is not "dod"; "b" is not option "B"
            number = _number(candidate, decimal_comma=gold_number is not None)
            if gold_number is not None and number is not None:
                if _close(number, gold_number, gold):
                    return True, []
                continue  # two numbers: decided
            for gold_form, form in _sequence_forms(gold, candidate):
                pairs.append((gold_form, form))
    return (None, pairs) if pairs else (False, [])


def _sequence_forms(gold: str, candidate: str) -> list[tuple[str, str]]:
    """The pairs to verify: the answer as it is and, when the gold is a bare list ("1,4"),
    the candidate without the parentheses or brackets around it ("(1, 4)")."""
    forms = [(gold, candidate)]
    if _is_answer_set(gold) and gold[0] not in "([{\\" and len(candidate) > 2 and candidate[0] in "([" and candidate[-1] in ")]":
        forms.append((gold, candidate[1:-1]))
    return forms


_E_NOTATION = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:[eE]|\\times\s*10\s*\^|\\cdot\s*10\s*\^|\*\s*10\s*\^|\*\*)\s*\{?\s*([+-]?\d+)\s*\}?", re.ASCII)
_TEN_POWER = re.compile(r"10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?", re.ASCII)


def _number(text: str, *, decimal_comma: bool = False) -> Fraction | None:
    """The exact value of a plain number, a simple fraction ("-\\frac{3}{4}", "3/4"), e-notation
    ("2e-3", "2\\times10^{-3}") or a number word up to twenty; with ``decimal_comma`` also
    "0,111", "2,74", "1000,99" (never "1,234", a thousands separator, nor "1,5", a list)."""
    if fraction := _FRACTION.fullmatch(text):
        sign, numerator, denominator = fraction.group(1), fraction.group(2) or fraction.group(4), fraction.group(3) or fraction.group(5)
        if int(denominator) == 0:
            return None
        return Fraction(int(numerator), int(denominator)) * (-1 if sign else 1)
    if (word := _NUMBER_WORDS.get(text.lower())) is not None:
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


def _close(number: Fraction, gold_number: Fraction, gold: str) -> bool:
    """Equal, or within half a unit of the last digit a non-integer decimal gold states
    (at least 2 significant digits): gold 0.33 takes 1/3, gold 0.0000312 refuses 0.0000315."""
    if number == gold_number:
        return True
    tolerance = _stated_tolerance(gold, gold_number)
    return tolerance is not None and abs(number - gold_number) <= tolerance


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


def _text_key(answer: str) -> str:
    """Lower-case text without ``\\text{}``-like wrappers, spacing commands, a final period
    or spaces around ``=`` and ``,`` (a leading dot is kept: ``.35625`` is not ``35625``)."""
    for _ in range(2):  # \textbf{\text{x}}
        answer = _TEXT_WRAPPER.sub(r"\1", answer)
    answer = answer.replace("\\ ", " ").replace("~", " ").replace("\\,", " ").replace("\\;", " ")
    answer = re.sub(r"\s*([=,])\s*", r"\1", answer)
    key = " ".join(answer.split()).rstrip(" .").strip()
    return key if len(key) == 1 else key.lower()


def _is_text(key: str, raw: str) -> bool:
    """Words, not a product of variables: a word of 3+ letters, or text in ``\\text{}``."""
    key = key.lower()
    if not _WORDS.fullmatch(key):
        return False
    return any(len(word) >= 3 for word in re.split(r"[ '\-]", key)) or _TEXT_WRAPPER.search(raw) is not None


def _is_answer_set(gold: str) -> bool:
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


def _verify_any(pairs: tuple[tuple[str, str], ...]) -> bool:
    """True if a candidate equals its gold. No own timeouts: the caller bounds the time.
    A decimal gold is compared by value within its stated precision; expressions with
    variables that math-verify calls different are compared once more with hyperbolic and
    trigonometric functions rewritten as exponentials (``\\cosh(x)`` = ``(e^x+e^{-x})/2``)."""
    from math_verify import verify

    for gold_text, candidate in pairs:
        golds = _parse_boxed(gold_text)
        predictions = _parse_boxed(candidate)
        if not golds or not predictions:
            continue
        gold_number = _number(gold_text)
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
    return False


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
    """Two expressions in the same variables whose difference simplifies to 0 once
    rewritten in exponentials."""
    import sympy

    if not (isinstance(gold, sympy.Expr) and isinstance(prediction, sympy.Expr)):
        return False
    if not gold.free_symbols or gold.free_symbols != prediction.free_symbols:
        return False
    return sympy.simplify((gold - prediction).rewrite(sympy.exp)) == 0


def _warm_math_verify() -> None:
    """Import math-verify (sympy, antlr) and fill its regex and parser caches, so that the
    time limit covers grading only. Mutes its one-off "timeout is disabled" warnings:
    ``call_with_time_limit`` bounds the time instead."""
    import math_verify.grader
    import math_verify.parser

    math_verify.grader.TIMEOUT_WARNING_SHOWN = True
    math_verify.parser.TIMEOUT_WARNING_SHOWN = True
    _verify_any(((r"\frac{1}{2}", "0.5"),))
    _unanchored_answer("so $x = 1$")
