"""Grading a math response: extract the committed answer, normalise both sides, compare
(docs/grading.md). The public functions of `skyeval.scorers.math` live here."""

from __future__ import annotations

import time

from skyeval.scorers.math.equivalence import is_answer_set, quick_verdict
from skyeval.scorers.math.extraction import NO_ANSWER, find_answer, final_response
from skyeval.scorers.math.normalization import as_list, labelled, text_key
from skyeval.scorers.math.numbers import number_value, stated_precision
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
) -> dict:
    """Grade ``generation`` against ``expected`` (one answer or a list of acceptable ones).

    ``reasoning``/``finish_reason`` are the sample's own fields (a server's reasoning, why
    generation stopped); ``hash_answer`` reads ``#### x`` (GSM8K); ``question``, when given,
    names the asked part of a multi-part problem ("Subproblem k"). Never raises, never
    hangs. Returns ``{"score": 0.0|1.0, "extracted": str|None, "parse_failed": bool,
    "parse_error": str|None, "timed_out": bool, "reasoning_state": closed|unclosed|none,
    "verdict": equal|different|undecided, "answer_source": box|statement|fallback|None}``;
    ``parse_failed`` means nothing was extracted and ``parse_error`` says why. ``verdict``
    is "equal" when the rules proved the answer equal (score 1.0), "different" when they
    proved it different, "undecided" when there is no answer or the rules could not decide
    (math-verify could not parse a side, or the time limit ran out): a model judge's cue.
    """
    result = {"score": 0.0, "extracted": None, "parse_failed": True, "parse_error": NO_ANSWER, "timed_out": False,
              "reasoning_state": "none", "verdict": UNDECIDED, "answer_source": None}
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
        golds = [g for g in map(labelled, as_list(expected)) if g[1]]
        candidates = [labelled(found.answer)]
        hedge = len(set(found.box_run)) > 1 and not any(is_answer_set(g) for _, g in golds)
        if found.box_run and not hedge and any(is_answer_set(g) for _, g in golds):
            candidates.append(labelled(", ".join(found.box_run)))
        groups = [[labelled(box)] for box in found.box_run] if hedge else [candidates]
        groups = [[c for c in group if c[1] and len(c[1]) <= MAX_ANSWER_CHARS] for group in groups]
        if not golds or not all(groups):
            return result
        required = stated_precision(question)
        verdict: bool | None = True
        for group in groups:  # rule hedge: "\\boxed{2} or \\boxed{3}" is right only if every box is
            decided, pairs = quick_verdict(golds, group, required)
            if decided is None:
                remaining = max(deadline - time.monotonic(), 0.05)
                decided = call_with_time_limit(verify_any, tuple(pairs), timeout_s=remaining, warmup=warm_math_verify)
            if not decided:
                verdict = decided
                break
        result["score"] = 1.0 if verdict else 0.0
        result["verdict"] = UNDECIDED if verdict is None else EQUAL if verdict else DIFFERENT
    except TimeLimitExceeded:
        result["timed_out"] = True
    return result


def equivalent(a: str, b: str, *, timeout_s: float = 2.0) -> bool:
    """Whether two extracted answers are the same answer (the grader's equivalence, with
    ``b`` as the gold); False on a time-out. Majority vote clusters answers with it."""
    try:
        verdict, pairs = quick_verdict([labelled(b)], [labelled(a)])
        if verdict is None:
            verdict = call_with_time_limit(verify_any, tuple(pairs), timeout_s=timeout_s, warmup=warm_math_verify)
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

