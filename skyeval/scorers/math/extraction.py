"""Extraction: where the committed answer of a response is (docs/grading.md, "Where the answer
is read"): reasoning apart, repetition loops and invented problems cut, the last box or
answer statement, and the final expression as the fallback (`fallback.py`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from skyeval.scorers.math.fallback import LONE_NUMBER, OPEN_END, final_expression, is_fragment, is_prose, whole_expression
from skyeval.scorers.math.normalization import MATH_DELIMS, labelled
from skyeval.scorers.math.numbers import spelled_length, spelled_number

TAIL_CHARS = 8000  # statements and the fallback are read at the end; bounds work on degenerate generations
BOX_SCAN_CHARS = 200_000  # boxes are looked for this far back (long, degenerate outputs)
UNCLOSED_REASONING = "unclosed reasoning: truncated thought"
TRUNCATED = "truncated output (finish_reason length) without a closed thought"
REPETITION = "repetition loop without an answer"
EMPTY_BOX = "empty \\boxed{}"
NO_ANSWER = "no answer found"

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*(\{)|\\boxed +([-\d.\\][^\s$]*)")  # "\\boxed 5", never "\\boxed command"
_BRACE = re.compile(r"[{}]")
_GSM8K = re.compile(r"####\s*([^\n]+)")
_ANSWER_PHRASE = re.compile(r"\banswer\**\s*(?:is\b\s*:?|:)", re.IGNORECASE)
_NUMBER_THEN_WORD = re.compile(r"\\?\$?(-?\d[\d,]*(?:\.\d+)?)\s+(?!(?:and|or)\b)[A-Za-z]{2,}", re.ASCII)
# What may sit between two boxes of one answer set: "$, $", " and ", "\] \[", "x = ".
_BOX_CONNECTOR = re.compile(
    r"(?:\s|[$,;.&]|\\[\[\]()]|\\q?quad|\\text\{\s*(?:and|or)\s*\}|\b(?:and|or)\b|\b[a-zA-Z](?:_\{?\d+\}?)?\s*=)*"
)


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


def last_boxed(text: str) -> str | None:
    """Content of the last balanced ``\\boxed{...}``/``\\fbox{...}`` (or ``\\boxed x``)."""
    boxes = _boxes(text)
    return boxes[-1][2] if boxes else None


def _boxes(text: str, keep_empty: bool = False) -> list[tuple[int, int, str]]:
    """Every box of ``text`` as (start, end, content), in order of their start; empty
    ones (content "") only with ``keep_empty``."""
    first = min((i for i in (text.find("\\boxed"), text.find("\\fbox")) if i >= 0), default=-1)
    if first < 0:
        return []
    closing = _matching_braces(text, first)  # braces before the first box match nothing inside one
    boxes = []
    for match in _BOXED.finditer(text, first):
        if match.group(2) is not None:
            if not is_fragment(match.group(2)):  # "\\boxed 2}^\\infty ...": a cut, not an answer
                boxes.append((match.start(), match.end(), match.group(2)))
        elif (start := match.start(1)) in closing:
            content = text[start + 1 : closing[start]].strip()
            if content or keep_empty:
                boxes.append((match.start(), closing[start] + 1, content))
    return boxes


def _matching_braces(text: str, start: int = 0) -> dict[int, int]:
    """Map each balanced ``{`` position (from ``start`` on) to its ``}`` position, in one pass."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for match in _BRACE.finditer(text, start):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            pairs[stack.pop()] = match.start()
    return pairs


@dataclass(frozen=True)
class Found:
    """A committed answer: its text, the boxes ending the response when there are several
    (an answer set split over boxes, or boxes offered as alternatives), where it came from
    (``SOURCES``), and the other answers the response's end commits to (rule `hedge`: a box
    before the final statement, a final line after the box), each of which must be right too."""

    answer: str
    box_run: tuple[str, ...] = ()
    source: str = "box"
    others: tuple[str, ...] = ()


SOURCES = ("box", "statement", "fallback")  # a box; "answer is"/"####"; the final expression


def find_answer(text: str, *, hash_answer: bool, question: str | None = None) -> tuple[Found | None, str | None]:
    """(the committed answer or None, why there is none). ``question`` (optional) names the
    asked part of a multi-part problem (Minerva's "Subproblem k")."""
    text = asked_part(text, question)
    text, loop = _cut_repetition(text)
    anchors, boxes = _anchors(text, hash_answer)
    if not anchors and loop:
        text = loop  # a model repeating its own final answer
        anchors, boxes = _anchors(text, hash_answer)
    empty_tail = len(anchors) - next((i + 1 for i in range(len(anchors) - 1, -1, -1) if anchors[i][1]), 0)
    if empty_tail >= 2 and empty_tail < len(anchors):
        anchors = anchors[:-empty_tail]  # rule empty-box-loop: "the answer is 7. \boxed{}\boxed{}..."
    if anchors:
        end, content, box, start = anchors[-1]
        if not content:
            return None, EMPTY_BOX
        if box is None:
            before = [b for b in anchors[:-1] if b[2] is not None and b[1] and b[0] <= start]
            others = (before[-1][1],) if before and _committed_together(text[before[-1][0] : start]) else ()
            return Found(content, source="statement", others=others), None
        run = _final_box_run(text, [b for b in boxes[: box + 1] if b[2]])
        line = _final_line(text[end:])
        return Found(content, tuple(run), "box", (line,) if line else ()), None
    if loop is not None:
        return None, REPETITION
    if not text.strip():
        return None, None
    # rule whole-output first; after a statement of words ("The answer is (d) none of the above"),
    # never a number picked from the prose around it
    spoken = any(_phrase_answer(text, m) for m in _ANSWER_PHRASE.finditer(text, max(len(text) - TAIL_CHARS, 0)))
    extracted = whole_expression(text) or final_expression(text[-TAIL_CHARS:], numbers_from_prose=not spoken)
    return (Found(extracted, source="fallback") if extracted else None), None


# Between two answers: words that take the earlier one back, and words that offer the later one as
# an alternative (rule hedge).
_CORRECTION = re.compile(
    r"\b(?:wait|actually|mistake|error|erred|wrong|incorrect|correct(?:ion|ed|ing)?|re-?check\w*|re-?evaluat\w*|"
    r"re-?calculat\w*|re-?comput\w*|recount\w*|let me|let's|however|but|oops|hmm|revis\w*|instead|should be|"
    r"fix\w*|reconsider\w*|double-check\w*|verify\w*|check\w*|no\b)", re.IGNORECASE)
_ALTERNATIVE = re.compile(
    r"\b(?:or|alternatively|alternative(?:ly)?|either|another\s+(?:possible\s+)?(?:answer|solution|value|option)|"
    r"(?:could|might|may)\s+(?:also\s+)?be|possibly)\b", re.I)
_NEAR = 600  # a box this far before the final statement is committed with it


def _committed_together(between: str) -> bool:
    """Whether the text between an earlier answer and the final one leaves both standing."""
    return len(between) <= _NEAR and not _CORRECTION.search(between)


_STRUCTURE = re.compile(r"\\(?:begin|end)\s*\{[^}]*\}|\\\\|\\[\[\]()]|\$|\\q?quad|\\(?:blacksquare|qed|square|hline)\b|[&.,;:]")


def _final_line(after: str) -> str | None:
    """A final line after the last box that states a value of its own (rule hedge: "\\boxed{9}\\n\\n11")."""
    if "\n" not in after:
        return None
    own_line, rest = after.split("\n", 1)
    if re.search(r"[\dA-Za-z]", _STRUCTURE.sub(" ", own_line)):
        return None  # the box's sentence goes on ("= \\boxed{4}. Note that ..."): no final line of its own
    rest = _STRUCTURE.sub(" ", rest).strip()
    if not re.search(r"\d|\\(?!text|mathrm)[A-Za-z]", rest) or re.search(r"(?<![\\A-Za-z])[A-Za-z]{2,}", rest):
        return None  # no value, or words ("~MC413551", a signature): no answer of its own
    return whole_expression(rest)


_EMPTY_BOXES = re.compile(r"\$?\\(?:boxed|fbox)\s*\{\s*\}\$?")
_SUBPROBLEM = re.compile(r"^[ \t>#*]*Sub-?problem\s*(\d+)\b", re.MULTILINE | re.IGNORECASE)
_ASKED = re.compile(r"Sub-?problem\s*(\d+)", re.IGNORECASE)


def asked_part(text: str, question: str | None) -> str:
    """Rule `asked-part`: the part of ``text`` that answers the question's last "Subproblem k"
    (Minerva gives subproblems 0..k-1 with their answers and asks for k). A model that
    restates earlier subproblems or invents later ones under their own headings is graded
    on its section "Subproblem k", or, without one, on the text before the first heading
    of a later subproblem. Text without headings is returned as it is."""
    asked = _ASKED.findall(question) if question and "ubproblem" in question else []
    heads = list(_SUBPROBLEM.finditer(text)) if asked else []
    if not heads:
        return text
    k = int(asked[-1])
    for i, head in enumerate(heads):
        if int(head.group(1)) == k:
            return text[head.start() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
    later = next((head for head in heads if int(head.group(1)) > k), None)
    return text[: later.start()] if later is not None and text[: later.start()].strip() else text


Anchor = tuple[int, str, "int | None", int]  # (end, answer, index of the box or None, start)


def _anchors(text: str, hash_answer: bool) -> tuple[list[Anchor], list[tuple[int, int, str]]]:
    """(answer statements of ``text`` as (end, answer, index of the box or None, start) in
    text order, the boxes). A new problem the model invents after its first committed
    answer ends the text. A fragment with unbalanced braces, or a statement of words (rule
    prose-is-no-answer), is no answer: the search goes on to the one before."""
    scan_from = max(len(text) - BOX_SCAN_CHARS, 0)
    tail = max(len(text) - TAIL_CHARS, 0)
    boxes = _boxes(text[scan_from:], keep_empty=True)
    found: list[Anchor] = [(scan_from + end, content, i, scan_from + start) for i, (start, end, content) in enumerate(boxes)]
    found += [(m.end(), answer, None, m.start()) for m in _ANSWER_PHRASE.finditer(text, tail)
              if (answer := _phrase_answer(text, m)) and _not_prose(answer)]
    if hash_answer:
        found += [(m.end(), m.group(1).strip(), None, m.start()) for m in _GSM8K.finditer(text, tail) if m.group(1).strip()]
    found.sort(key=lambda anchor: anchor[0])
    first = next((anchor[0] for anchor in found if anchor[1]), None)
    if first is not None and (invented := _NEW_PROBLEM.search(text, first)):
        found = [anchor for anchor in found if anchor[0] <= invented.start()]
    return found, boxes


def _not_prose(answer: str) -> bool:
    """An answer statement's value is an answer: not words, not a fragment or an expression
    left open (`28 - 15 =`), its side text (a unit, "(no aliasing occurs)") aside."""
    return not is_fragment(answer) and not OPEN_END.search(answer) and not is_prose(labelled(answer)[1] or answer)


def _final_box_run(text: str, boxes: list[tuple[int, int, str]]) -> list[str]:
    """Contents of the boxes that end the response joined only by connectors ("$, $",
    " and ", "x = ") or offered as alternatives ("Alternatively, ..."); empty unless there are
    several. A box, then prose ("Wait, no"), then another box is a correction, not a list."""
    run = [boxes[-1]]
    offset = max(len(text) - BOX_SCAN_CHARS, 0)
    for box in reversed(boxes[:-1]):
        between = text[offset + box[1] : offset + run[0][0]]
        if box[1] > run[0][0] or len(between) > 200:
            break
        if not _BOX_CONNECTOR.fullmatch(between) and (not _ALTERNATIVE.search(between) or _CORRECTION.search(between)):
            break
        run.insert(0, box)
    return [content for _, _, content in run] if len(run) > 1 else []


_FILLER = re.compile(r"(?:(?:indeed|therefore|thus|then|clearly|simply|just|exactly|actually|definitely|now|finally)\b[\s,:]*)+", re.I)
# Words that make "the answer is ..." a remark, not an answer ("my answer is consistent").
_REMARK = re.compile(
    r"(?:consistent|correct|incorrect|right|wrong|not|that|this|the|a|an|to|in|being|likely|probably|as|same|valid|"
    r"verified|confirmed|given|below|above|unchanged|still|also|from|of|what|how|because|since|clear|obvious|"
    r"reasonable|plausible|wrong|off|close|different|too|very|quite|in|"
    r"boxed|highlighted|shown|bolded|displayed|presented|provided|written|indicated|listed|stated|following|as follows)\b",
    re.I,
)
_STATED_VALUE = re.compile(r"^[A-Za-z][^=]*?\s(?:is|are|equals|was)\s+(?:equal\s+to\s+)?([^\s].*)$")
_CHECKING = re.compile(r"\b(?:check|checking|verify|verifying|confirm|confirming|test|testing|plug|plugging)\s+(?:\w+\s+)?$", re.I)
def _spelled_prefix(sentence: str) -> str | None:
    """The longest start of `sentence` that is a number in words, when only words follow it."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z\s,-]*", sentence):
        return None
    words = sentence.split()
    for end in range(len(words), 0, -1):  # the longest number in words it starts with
        if words[end - 1].lower() not in ("and", "or", "to") and spelled_number(" ".join(words[:end]).rstrip(",")) is not None:
            if words[end:] and words[end].lower() in ("or", "and", "to"):
                return sentence  # "nine or eleven": alternatives, for rule hedge
            break
    end = spelled_length(words)
    return " ".join(words[:end]).rstrip(",") if end else None


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
    line = _EMPTY_BOXES.sub("", line)
    if "\\boxed" in line or "\\fbox" in line:
        return None
    for start, end in MATH_DELIMS:
        if line.startswith(start):
            close = line.find(end, len(start))
            if close > 0 and not OPEN_END.search(line[len(start) : close]):  # "$2200 - $1980 = $220": currency
                return _with_alternatives(line, start, end, line[len(start) : close].strip()) or None
    sentence = re.split(r"\.(?:\s|$)|[!?](?:\s|$)", line, maxsplit=1)[0].strip(" *").strip()
    if (value := _STATED_VALUE.search(sentence)) and re.search(r"[\d$\\]", value.group(1)):
        sentence = value.group(1).strip()  # "Final Answer: The largest $n$ is 34" -> "34"
    if re.fullmatch(r"\(?[A-E]\)?", sentence):
        return sentence  # an option letter, not the article "A"
    if not sentence or _REMARK.match(sentence):
        return None
    if number := _NUMBER_THEN_WORD.match(sentence):  # "18 dollars" -> "18"
        return number.group(1)
    if spelled := _spelled_prefix(sentence):  # "five apples" -> "five", "seventy six dollars" -> "seventy six"
        return spelled
    if not re.search(r"[\d\\^=+/()]", sentence) and len(sentence.split()) > 4:
        return None  # prose, not an answer
    if "\\" not in sentence and is_prose(sentence) and len(numbers := LONE_NUMBER.findall(sentence)) == 1:
        return numbers[0]  # "Bob will need to spend $14.00 to buy them" -> "14.00"; never a number of a formula
    return sentence


_CONNECTOR = re.compile(r"\s*(?:,\s*)?(?:or|and|or else)\s*|\s*,\s*", re.IGNORECASE)


def _with_alternatives(line: str, start: str, end: str, first: str) -> str:
    """`first`, or with the alternatives the sentence goes on to offer (rule hedge):
    "$x = 9$ or $x = 11$." -> "x = 9 or x = 11"; "$5$ because $2 + 3 = 5$" -> "5"."""
    values, position = [first], line.find(end, len(start)) + len(end)
    while True:
        following = line.find(start, position)
        if following < 0 or not _CONNECTOR.fullmatch(line[position:following]):
            break
        close = line.find(end, following + len(start))
        if close < 0:
            break
        connector = "or" if re.search(r"\bor\b", line[position:following]) else "and" if "and" in line[position:following] else ","
        values += [connector, line[following + len(start) : close].strip()]
        position = close + len(end)
    return " ".join(values).replace(" , ", ", ")


# A new problem the model invents after its answer (base models continue the few-shot pattern).
_NEW_PROBLEM = re.compile(
    r"^[ \t>#*]*(?:Problem|Question|Exercise|Example)\s*(?:\d+|[A-Z])?\s*[:.]|^[ \t]*(?:Human|User|Q)\s*:|<\|im_start\|>|<\|user\|>"
    r"|^[ \t>#*]*(?:Part|Sub-?problem)\s*(?:\d+|\([a-z0-9]\))\s*\**\s*(?:[:.]|$)",  # not "Part I." of a proof
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
