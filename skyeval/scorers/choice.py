"""Multiple-choice grading: read the chosen option letter from a generation.

Explicit statements win, and the last one counts: ``\\boxed{C}`` / ``\\boxed{\\text{C}}``,
"the answer is (C)", "Answer: C", "**Answer:** C", "(C) is correct". Only when there is
none, a final line holding nothing but the letter ("C", "(C)", "**C.**") is read. A bare
capital letter inside prose ("A good approach...", the pronoun "I") is never an answer.
Only the answer part is read (`skyeval.reasoning.parse`): a thought, closed or not, never
gives the letter, and an unclosed one gives none.
"""

from __future__ import annotations

import re
from functools import lru_cache

LETTERS = "ABCDEFGHIJ"
TAIL_CHARS = 8000  # the answer statement is at the end; bounds work on degenerate text
_ENGLISH_WORD = r"\s+(?!(?:because|since|as|and|or|is|which|with|but|for)\b)[a-z]"


def extract_choice(generation: str, num_options: int = 4) -> str | None:
    """Return the chosen letter among the first ``num_options`` of A-J, or None."""
    explicit, standalone = _patterns(num_options)
    tail = generation[-TAIL_CHARS:]
    last = None
    for last in explicit.finditer(tail):
        pass
    if last is not None:
        return next(group for group in last.groups() if group)
    lines = tail.rstrip().rsplit("\n", 1)
    match = standalone.fullmatch(lines[-1].strip())
    return match.group(1) if match else None


def score_choice(generation: str, expected: str, *, num_options: int = 4, reasoning: str | None = None) -> dict:
    """Returns ``{"score": 0.0|1.0, "extracted", "parse_failed", "timed_out": False,
    "reasoning_state"}``; ``reasoning`` is the sample's server-provided reasoning, if any."""
    from skyeval.reasoning import parse

    parsed = parse(generation, reasoning_content=reasoning)
    extracted = extract_choice(parsed.answer, num_options) if parsed.answer else None
    return {
        "score": 1.0 if extracted is not None and extracted == expected.strip().upper() else 0.0,
        "extracted": extracted,
        "parse_failed": extracted is None,
        "timed_out": False,
        "reasoning_state": parsed.state,
    }


# A multiple-select answer: the letters, set apart by nothing, commas, "and", 和 or 、,
# optionally each in parentheses or \text{}; in a box or after "answer is" / 答案是.
_SET_FILLER = re.compile(r"\\(?:text|textbf|mathrm)\b|[{}()$\s,;，；、和]|\band\b")
_SET_STATEMENT = re.compile(r"(?i:answer is|answer:)\s*|答案(?:是|为)[:：]?\s*")


def extract_choice_set(generation: str, num_options: int = 4) -> str | None:
    """The letters chosen in a multiple-select answer, sorted ("ACD"), or None: the last
    `\\boxed{}` holding nothing but option letters, else the last "answer is ..." /
    "答案是 ..." statement whose first word is made of them. A letter named twice is no answer."""
    from skyeval.scorers.math import last_boxed

    valid = LETTERS[:num_options]
    tail = generation[-TAIL_CHARS:]
    candidates = []
    boxed = last_boxed(tail)
    if boxed is not None:
        candidates.append(boxed)
    else:
        statements = list(_SET_STATEMENT.finditer(tail))
        if statements:
            candidates.append(re.split(r"[.。\n]", tail[statements[-1].end():], maxsplit=1)[0])
    for text in candidates:
        letters = _SET_FILLER.sub("", text)
        if letters and all(c in valid for c in letters) and len(set(letters)) == len(letters):
            return "".join(sorted(letters))
    return None


def score_choice_set(generation: str, expected: str, *, num_options: int = 4, reasoning: str | None = None) -> dict:
    """A multiple-select question: right only with exactly the gold's letters, in any order.
    The same fields as `score_choice`."""
    from skyeval.reasoning import parse

    parsed = parse(generation, reasoning_content=reasoning)
    extracted = extract_choice_set(parsed.answer, num_options) if parsed.answer else None
    gold = "".join(sorted(expected.strip().upper()))
    return {
        "score": 1.0 if extracted is not None and extracted == gold else 0.0,
        "extracted": extracted,
        "parse_failed": extracted is None,
        "timed_out": False,
        "reasoning_state": parsed.state,
    }


@lru_cache(maxsize=len(LETTERS))
def _patterns(num_options: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    if not 1 <= num_options <= len(LETTERS):
        raise ValueError(f"num_options must be 1..{len(LETTERS)}, got {num_options}")
    letter = f"([{LETTERS[:num_options]}])"
    # The letter, optionally in (), $, **, \text{} or \textbf{}; never followed by a word
    # character, nor, for a bare "A"/"I", by a word other than a connective ("A good", "I think").
    wrapped = rf"(?:\\text(?:bf)?\{{|\$|\*\*|\()*\s*{letter}(?![\w'’])(?!(?<=[AI]){_ENGLISH_WORD})"
    option = r"(?i:option|choice)"
    explicit = re.compile(
        "|".join(
            [
                rf"\\(?:boxed|fbox)\{{\s*{wrapped}",
                rf"(?i:answer|correct {option})(?:\*\*)?(?:\s*:|\s+(?i:is)\b\s*:?)(?:\*\*)?\s*(?:{option}\s*)?{wrapped}",
                rf"(?:{option}\s*\(?{letter}\)?|\({letter}\))\s+(?i:is)\s+(?:(?i:the)\s+)?(?i:correct|right|best)\b",
            ]
        )
    )
    standalone = re.compile(rf"[\s*(]*{letter}[\s*).]*")
    return explicit, standalone
