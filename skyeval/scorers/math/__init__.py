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

Comparison is by value (``equivalence``); all math-verify work
runs under a hard time limit (see ``time_limit``).

The stages are modules: `extraction` (where the answer is: boxes, statements, the asked part,
invented parts, loops) with `fallback` (the no-box final expression); `normalization`
(units, labels, Unicode, qualifiers, thousands); `equivalence` (labels, text, lists and sets)
with `numbers` (values and precision) and `symbolic` (math-verify and the numeric identity);
`grade` puts them together.
"""

from skyeval.scorers.math.equivalence import gold_problem
from skyeval.scorers.math.extraction import (
    EMPTY_BOX,
    NO_ANSWER,
    REPETITION,
    TRUNCATED,
    UNCLOSED_REASONING,
    final_response,
    last_boxed,
)
from skyeval.scorers.math.grade import DIFFERENT, EQUAL, UNDECIDED, answer_key, equivalent, extract_math_answer, score_math
from skyeval.scorers.math.normalization import normalize_answer
from skyeval.scorers.math.symbolic import require_math_verify

__all__ = [
    "DIFFERENT", "EMPTY_BOX", "EQUAL", "NO_ANSWER", "UNDECIDED", "REPETITION", "TRUNCATED", "UNCLOSED_REASONING", "answer_key", "equivalent",
    "extract_math_answer", "final_response", "gold_problem", "last_boxed", "normalize_answer", "require_math_verify", "score_math",
]
