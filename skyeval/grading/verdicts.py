"""Verdicts: the rules' three-way one, the judge's reply, and what the judge is shown."""

from __future__ import annotations

import re
from typing import Any

EQUAL, DIFFERENT, UNDECIDED = "equal", "different", "undecided"  # the rules' verdicts
EQUIVALENT = "equivalent"  # the judge's verdicts: EQUIVALENT or DIFFERENT
_VERDICT_LINE = re.compile(r"^[\W_]*verdict[\W_]*:[\W_]*(equivalent|different)[\W_]*$", re.IGNORECASE)


def rule_verdict(result: dict[str, Any]) -> str:
    """The rules' verdict on a scored sample: `equal`, `different` or `undecided`.

    The math grader's own `verdict` when it gives one; otherwise derived from its other
    fields: no answer extracted (`parse_failed`) or a comparison that overran its time
    limit (`timed_out`) is undecided, score 1 is equal, anything else different."""
    verdict = result.get("verdict")
    if verdict in (EQUAL, DIFFERENT, UNDECIDED):
        return verdict
    if result.get("parse_failed") or result.get("timed_out"):
        return UNDECIDED
    return EQUAL if float(result.get("score") or 0.0) >= 1.0 else DIFFERENT


def parse_verdict(reply: str | None) -> str | None:
    """`equivalent` or `different` from the reply's last non-empty line (`Verdict: x`,
    markdown emphasis allowed); None when that line says anything else."""
    lines = [line.strip() for line in (reply or "").splitlines() if line.strip()]
    match = _VERDICT_LINE.match(lines[-1]) if lines else None
    return match[1].lower() if match else None


def judged_text(row: dict[str, Any], result: dict[str, Any], final_chars: int,
                grade_truncated: bool = False) -> tuple[str | None, str | None]:
    """(what the judge is shown, where it comes from): the extracted answer
    (`extracted`), else the last `final_chars` characters of the answer after any
    reasoning (`final_text`); (None, None) when there is no answer to show: an unclosed
    thought, or a cut-off output without a closed thought (unless `grade_truncated`)."""
    from skyeval.reasoning import NONE, UNCLOSED, parse

    extracted = result.get("extracted")
    if isinstance(extracted, str) and extracted.strip():
        return extracted, "extracted"
    generation = row.get("generation")
    parsed = parse(generation if isinstance(generation, str) else "", reasoning_content=row.get("reasoning"))
    if parsed.state == UNCLOSED or (row.get("finish_reason") == "length" and parsed.state == NONE
                                    and not grade_truncated):
        return None, None
    answer = parsed.answer.strip()
    return (answer[-final_chars:], "final_text") if answer else (None, None)
