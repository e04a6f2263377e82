"""Math benchmarks with a final answer, scored with math-verify."""

from __future__ import annotations

import re
from typing import Any

from skyeval.envs.base import Env
from skyeval.templates import BOXED_INSTRUCTION, Template


class MathEnv(Env):
    """A row with a question, a final answer and (optionally) a worked solution.

    The `*_field` knobs name the columns; `expected` is the answer as a string (or a list
    of acceptable answers)."""

    default_template = Template(messages=[{"role": "user", "content": "{question}\n" + BOXED_INSTRUCTION}])

    def __init__(
        self,
        question_field: str = "problem",
        answer_field: str = "answer",
        solution_field: str | None = "solution",
        id_field: str | None = None,
        timeout_s: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.question_field, self.answer_field = question_field, answer_field
        self.solution_field, self.id_field = solution_field, id_field
        self.timeout_s = timeout_s

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        return {
            "id": str(row[self.id_field]) if self.id_field else str(index),
            "question": row[self.question_field],
            "expected": self.expected_of(row),
            "solution": row.get(self.solution_field) if self.solution_field else None,
        }

    def expected_of(self, row: dict[str, Any]) -> str:
        return _answer_str(row[self.answer_field])

    def reference_generation(self, problem: dict[str, Any]) -> str:
        """The worked solution when it ends in `\\boxed{}`, else the bare answer boxed."""
        solution = problem.get("solution") or ""
        if "\\boxed" in solution:
            return solution
        expected = problem["expected"]
        answer = expected[0] if isinstance(expected, list) else expected
        return f"{solution}\n\nThe final answer is $\\boxed{{{answer}}}$.".lstrip()

    def score_item(self, item: dict[str, Any]) -> dict[str, Any]:
        from skyeval.scorers.math import score_math

        return score_math(item.get("generation") or "", item["expected"], timeout_s=self.timeout_s)


class GSM8KEnv(MathEnv):
    """GSM8K: the answer is the number after `#### `; the rationale has `<<a*b=c>>` notes."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("question_field", "question")
        kwargs.setdefault("id_field", None)
        super().__init__(**kwargs)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        rationale, _, answer = row["answer"].rpartition("####")
        return {
            "id": str(row.get("idx", index)),
            "question": row["question"],
            "expected": answer.strip().replace(",", ""),
            "solution": re.sub(r"<<[^>]*>>", "", rationale).strip(),
        }


def _answer_str(value: Any) -> str:
    """Answers as strings; integral floats (AMC's 27.0) as integers."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()
