"""Grading a math response: extract the committed answer, normalise both sides, compare
(docs/grading.md). The public functions of `skyeval.scorers.math` live here."""

from __future__ import annotations

import time
from dataclasses import replace

from skyeval.scorers.math.equivalence import quick_verdict
from skyeval.scorers.math.extraction import NO_ANSWER, Found, find_answer, final_response
from skyeval.scorers.math.hedges import alternatives, is_range, single_valued
from skyeval.scorers.math.normalization import Labelled, as_list, has_condition, labelled, strip_condition, text_key
from skyeval.scorers.math.numbers import APPROXIMATE, EXACT, NUMERIC_RULES, number_value, stated_precision
from skyeval.scorers.math.symbolic import verify_any, warm_math_verify
from skyeval.scorers.time_limit import TimeLimitExceeded, call_with_time_limit

MAX_ANSWER_CHARS = 1000  # longer "answers" are degenerate, not graded
EQUAL, DIFFERENT, UNDECIDED = "equal", "different", "undecided"  # the rules' verdict (docs/grading.md)


def extract_math_answer(generation: str, *, timeout_s: float = 5.0, hash_answer: bool = False) -> str | None:
    """Return the final answer string of ``generation``, or None if none is found.
    Extraction is regular expressions only; ``timeout_s`` is accepted for compatibility."""
    text, _, error = final_response(generation)
    if error:
        return None
    found, _ = find_answer(text, hash_answer=hash_answer)
    return found.answer if found else None


def score_math(
    generation: str,
    expected: str | int | float | list[str],
    *,
    timeout_s: float = 5.0,
    reasoning: str | None = None,
    finish_reason: str | None = None,
    grade_truncated: bool = False,
    hash_answer: bool = False,
    question: str | None = None,
    numeric_rule: str = EXACT,
) -> dict:
    """Grade ``generation`` against ``expected`` (one answer or a list of acceptable ones).

    ``reasoning``/``finish_reason`` are the sample's own fields (a server's reasoning, why
    generation stopped); ``hash_answer`` reads ``#### x`` (GSM8K); ``question``, when given,
    names the asked part of a multi-part problem ("Subproblem k") and a precision it states;
    ``numeric_rule`` is `exact` (values compare exactly) or `approximate` (at the stated
    precisions: benchmarks of rounded physical quantities). Never raises, never hangs.
    Returns ``{"score": 0.0|1.0, "extracted": str|None, "parse_failed": bool, "parse_error":
    str|None, "timed_out": bool, "reasoning_state": closed|unclosed|none, "verdict":
    equal|different|undecided, "answer_source": box|statement|fallback|None,
    "passed_by_tolerance": bool}``; ``parse_failed`` means nothing was extracted and
    ``parse_error`` says why. ``verdict`` is "equal" when the rules proved the answer equal
    (score 1.0), "different" when they proved it different, "undecided" when there is no answer
    or the rules could not decide (math-verify could not parse a side, or the time limit ran
    out): a model judge's cue. ``passed_by_tolerance``: right only by a tolerance (the
    approximate rule, or a precision the question states).
    """
    result = {"score": 0.0, "extracted": None, "parse_failed": True, "parse_error": NO_ANSWER, "timed_out": False,
              "reasoning_state": "none", "verdict": UNDECIDED, "answer_source": None, "passed_by_tolerance": False}
    if numeric_rule not in NUMERIC_RULES:
        raise ValueError(f"unknown numeric rule {numeric_rule!r}: one of {', '.join(NUMERIC_RULES)}")
    deadline = time.monotonic() + timeout_s
    try:
        text, state, error = final_response(
            generation, reasoning=reasoning, finish_reason=finish_reason, grade_truncated=grade_truncated
        )
        result["reasoning_state"] = state
        if error:
            result["parse_error"] = error
            return result
        found, error = find_answer(text, hash_answer=hash_answer, question=question)
        if found is None:
            result["parse_error"] = error or NO_ANSWER
            return result
        result.update(extracted=found.answer, parse_failed=False, parse_error=None, answer_source=found.source)
        if not found.box_run and not found.others and found.answer.strip() in _texts(expected):
            result.update(score=1.0, verdict=EQUAL)  # the gold's own text: nothing to normalise or prove
            return result
        golds = [g for g in map(labelled, as_list(expected)) if g[1]]
        if not golds:
            return result
        required = stated_precision(question)
        rule = APPROXIMATE if required else numeric_rule  # a question stating a precision is graded at it
        verdict: bool | None = False
        for way in _commitments(found, golds):
            way = [[c for c in group if c[1] and len(c[1]) <= MAX_ANSWER_CHARS] for group in way]
            if not all(way):
                verdict = None if verdict is False else verdict
                continue
            decided, tolerant = _all_meet(golds, way, required, rule, deadline)
            if decided:
                result["passed_by_tolerance"] = tolerant
                verdict = True
                break
            verdict = None if decided is None or verdict is None else False
        result["score"] = 1.0 if verdict else 0.0
        result["verdict"] = UNDECIDED if verdict is None else EQUAL if verdict else DIFFERENT
    except TimeLimitExceeded:
        result["timed_out"] = True
    return result


def _all_meet(golds: list[Labelled], groups: list[list[Labelled]], required, rule: str,
              deadline: float) -> tuple[bool | None, bool]:
    """(every group meets a gold, or None when one could not be decided; whether a tolerance
    was needed) (rule hedge: every answer the response commits to must be right)."""
    tolerant = False
    for group in groups:
        if group is _RANGE:
            return False, False
        decided, pairs, by_tolerance = quick_verdict(golds, group, required, rule)
        if decided is None:
            remaining = max(deadline - time.monotonic(), 0.05)
            decided, by_tolerance = call_with_time_limit(
                verify_any, tuple(pairs), rule, timeout_s=remaining, warmup=warm_math_verify)
        if not decided:
            return decided, False
        tolerant = tolerant or bool(by_tolerance)
    return True, tolerant


def _texts(expected) -> set[str]:
    return {g.strip() for g in as_list(expected) if isinstance(g, str) and g.strip()}


_RANGE: list = [(None, "a range")]  # a group that never meets a gold of one value


def _commitments(found: Found, golds: list[Labelled]) -> list[list[list[Labelled]]]:
    """The ways the response can be right: each a list of groups of candidates, every group of
    which must meet a gold (rule hedge). Against golds of one value: each box of a final run of
    boxes, each other answer the end commits to (a box before the final statement, a final line
    after the box) and each value of an answer that offers several (`x = 9 or x = 11`) is a
    group; a range is never right. Against a list or set gold: the answer (the final run of boxes
    read as one list, `\\boxed{1}, \\boxed{2}` for `1, 2`), or each box of the run on its own."""
    if not any(has_condition(g) for _, g in golds):  # rule conditions: dropped when the gold has none
        found = replace(found, answer=strip_condition(found.answer), box_run=tuple(map(strip_condition, found.box_run)),
                        others=tuple(map(strip_condition, found.others)))
    others = [[labelled(other)] for other in found.others]
    if not all(single_valued(g) for _, g in golds):
        answer = labelled(", ".join(found.box_run)) if found.box_run else labelled(found.answer)
        listed = (answer[0], ", ".join(alternatives(answer[1])))  # "2 or 3" as the list "2, 3"
        ways = [[[answer, listed] if listed != answer else [answer]] + others]
        if found.box_run:
            ways.append([[labelled(box)] for box in found.box_run] + others)
        return ways
    groups: list[list[Labelled]] = []
    for text in (found.box_run or (found.answer,)) + found.others:
        label, value = labelled(text)
        if len(text) > MAX_ANSWER_CHARS:
            groups.append([(label, value)])  # too long to be an answer: left out below
            continue
        if is_range(value) or is_range(text):  # "8–10": the dash is a range's before it is a minus
            return [[_RANGE]]
        groups += [[(label, alternative)] for alternative in alternatives(value)]
    return [groups]


def equivalent(a: str, b: str, *, timeout_s: float = 2.0, numeric_rule: str = EXACT) -> bool:
    """Whether two extracted answers are the same answer (the grader's equivalence, with
    ``b`` as the gold, under ``numeric_rule``); False on a time-out. Majority vote clusters
    answers with it."""
    try:
        verdict, pairs, _ = quick_verdict([labelled(b)], [labelled(a)], rule=numeric_rule)
        if verdict is None:
            verdict, _ = call_with_time_limit(verify_any, tuple(pairs), numeric_rule, timeout_s=timeout_s,
                                              warmup=warm_math_verify)
        return bool(verdict)
    except TimeLimitExceeded:
        return False


def answer_key(answer: str) -> str:
    """A cheap canonical key of an extracted answer: answers with one key are equivalent."""
    label, text = labelled(answer)
    number = number_value(text)
    if number is not None:
        return f"{label or ''}#{number}"
    return f"{label or ''}{text_key(text)}"

