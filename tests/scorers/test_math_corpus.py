"""skyeval's math grader on the labelled corpus of model-style outputs (math_corpus.py),
side by side with plain math-verify (`verify(parse(\\boxed{gold}), parse(generation))`)."""

from __future__ import annotations

from collections import Counter

import pytest

from skyeval.scorers.math import score_math
from tests.scorers.math_corpus import CASES

CLASSES = sorted({case[0] for case in CASES})


def plain_math_verify(generation: str, gold: str) -> bool:
    from math_verify import parse, verify

    return bool(verify(parse(f"\\boxed{{{gold}}}"), parse(generation)))


def test_corpus_covers_every_class_with_right_and_wrong_answers():
    assert len(CASES) >= 150
    for name in CLASSES:
        verdicts = Counter(right for cls, _, _, right in CASES if cls == name)
        assert verdicts[True] >= 1 and verdicts[False] >= 4, (name, verdicts)
    assert sum(not right for *_, right in CASES) >= 0.4 * len(CASES)


@pytest.mark.parametrize(("cls", "generation", "gold", "right"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_grader_gives_the_human_verdict(cls, generation, gold, right):
    result = score_math(generation, gold, timeout_s=10.0)
    assert result["score"] == (1.0 if right else 0.0), result
    assert not result["timed_out"]


def test_agreement_with_plain_math_verify():
    """Prints the per-class table of docs/grading.md; skyeval must be right where plain
    math-verify is (no class where it loses)."""
    rows = Counter()
    for cls, generation, gold, right in CASES:
        ours = score_math(generation, gold, timeout_s=10.0)["score"] == 1.0
        theirs = plain_math_verify(generation, gold)
        rows[cls, "n"] += 1
        rows[cls, "ours"] += ours == right
        rows[cls, "theirs"] += theirs == right
        rows[cls, "their_fp"] += theirs and not right
        rows[cls, "their_fn"] += right and not theirs
        rows[cls, "agree"] += ours == theirs
    print(f"\n{'class':18} {'cases':>5} {'skyeval':>8} {'math-verify':>11} {'mv FP':>5} {'mv FN':>5} {'agree':>5}")
    for cls in CLASSES:
        print(f"{cls:18} {rows[cls, 'n']:5} {rows[cls, 'ours']:8} {rows[cls, 'theirs']:11} "
              f"{rows[cls, 'their_fp']:5} {rows[cls, 'their_fn']:5} {rows[cls, 'agree']:5}")
    total = {key: sum(rows[cls, key] for cls in CLASSES) for key in ("n", "ours", "theirs", "their_fp", "their_fn", "agree")}
    print(f"{'total':18} {total['n']:5} {total['ours']:8} {total['theirs']:11} {total['their_fp']:5} "
          f"{total['their_fn']:5} {total['agree']:5}")
    for cls in CLASSES:
        assert rows[cls, "ours"] >= rows[cls, "theirs"], cls
