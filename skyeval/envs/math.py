"""Math benchmarks with a final answer, scored with math-verify."""

from __future__ import annotations

import csv
import difflib
import re
from pathlib import Path
from typing import Any, Callable

from skyeval.envs.base import Env, check_positive
from skyeval.envs.data import resolve_data_dir
from skyeval.envs.dates import problem_date
from skyeval.errors import ConfigError
from skyeval.metrics import AnswerVote
from skyeval.scorers.math import last_boxed, require_math_verify
from skyeval.templates import BOXED_INSTRUCTION, Template

_DOLLAR = re.compile(r"(?<!\\)\$")


class MathEnv(Env):
    """A row with a question, a final answer and (optionally) a worked solution.

    The `*_field` knobs name the columns; `expected` is the answer as a string (or a list
    of acceptable answers); `meta_fields` are copied into the problem as they are.
    `grade_truncated`: grade a sample cut off by the token limit (`finish_reason: length`)
    without a closed thought; by default it is a parse failure (docs/grading.md).
    `numeric_rule`: `exact` (numbers compare by value: competition maths, word problems) or
    `approximate` (at the stated precisions: rounded physical quantities, e.g. Minerva);
    unset, the class's `default_numeric_rule`. docs/grading.md lists each benchmark's rule."""

    default_numeric_rule = "exact"

    default_template = Template(messages=[{"role": "user", "content": "{question}\n" + BOXED_INSTRUCTION}])

    def __init__(
        self,
        question_field: str = "problem",
        answer_field: str = "answer",
        solution_field: str | None = "solution",
        id_field: str | None = None,
        meta_fields: list[str] | None = None,
        timeout_s: float = 5.0,
        grade_truncated: bool = False,
        numeric_rule: str | None = None,
        **kwargs: Any,
    ) -> None:
        from skyeval.scorers.math.numbers import NUMERIC_RULES

        require_math_verify()  # a missing grader dependency fails at build, not as score 0
        super().__init__(**kwargs)
        self.numeric_rule = numeric_rule or self.default_numeric_rule
        try:
            check_knob("env.numeric_rule", self.numeric_rule, NUMERIC_RULES)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        self.question_field, self.answer_field = question_field, answer_field
        self.solution_field, self.id_field = solution_field, id_field
        self.meta_fields = list(meta_fields or [])
        self.timeout_s = check_positive("env.timeout_s", timeout_s)
        self.grade_truncated = bool(grade_truncated)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        return {
            "id": str(row[self.id_field]) if self.id_field else str(index),
            "question": row[self.question_field],
            "expected": self.expected_of(row),
            "solution": row.get(self.solution_field) if self.solution_field else None,
            **{field: row.get(field) for field in self.meta_fields},
        }

    def expected_of(self, row: dict[str, Any]) -> str | list[str] | None:
        return _answer_str(row[self.answer_field])

    def reference_generation(self, problem: dict[str, Any]) -> str:
        """The worked solution when it ends in `\\boxed{}`, else the bare answer boxed."""
        solution = problem.get("solution") or ""
        if "\\boxed" in solution:
            return solution
        expected = problem["expected"]
        answer = expected[0] if isinstance(expected, list) else expected
        return f"{solution}\n\nThe final answer is $\\boxed{{{answer}}}$.".lstrip()

    @property
    def vote(self) -> AnswerVote:
        """Majority vote over the grader's equivalence classes, under the env's numeric rule
        (docs/metrics.md)."""
        from functools import partial

        from skyeval.scorers.math import answer_key, equivalent

        return AnswerVote(key=answer_key, equivalent=partial(equivalent, numeric_rule=self.numeric_rule))

    def describe_scoring(self) -> dict[str, Any]:
        """summary.json `scoring.numeric_rule` (with `scoring.passed_by_tolerance` counted per sample)."""
        return {"numeric_rule": self.numeric_rule}

    scorer_name = "math"
    hash_answer = False  # whether `#### x` states the answer (GSM8K's format)

    def scoring_functions(self) -> dict[str, Any]:
        return {"math": MathScorer}


class MathScorer:
    """Correctness of a sample's final answer against `expected` (math-verify), within the
    env's `timeout_s`, from the sample's answer part (its `reasoning` and `finish_reason`
    fields are used): `{"score", "extracted", "parse_failed", "reasoning_state", ...}`."""

    def __init__(self, env: Env | None = None) -> None:
        self.timeout_s = getattr(env, "timeout_s", 5.0)
        self.grade_truncated = getattr(env, "grade_truncated", False)
        self.hash_answer = getattr(env, "hash_answer", False)
        self.numeric_rule = getattr(env, "numeric_rule", "exact")

    def __call__(self, item: dict[str, Any]) -> dict[str, Any]:
        from skyeval.scorers.math import score_math

        return score_math(
            item.get("generation") or "", item["expected"], timeout_s=self.timeout_s,
            reasoning=item.get("reasoning"), finish_reason=item.get("finish_reason"),
            grade_truncated=self.grade_truncated, hash_answer=self.hash_answer, question=item.get("question"),
            numeric_rule=self.numeric_rule,
        )


class GSM8KEnv(MathEnv):
    """GSM8K: the answer is the number after `#### `; the rationale has `<<a*b=c>>` notes."""

    hash_answer = True

    def __init__(self, question_field: str = "question", id_field: str | None = None, **kwargs: Any) -> None:
        super().__init__(question_field=question_field, id_field=id_field, **kwargs)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        rationale, _, answer = row["answer"].rpartition("####")
        return {
            "id": str(row.get("idx", index)),
            "question": row["question"],
            "expected": answer.strip().replace(",", ""),
            "solution": re.sub(r"<<[^>]*>>", "", rationale).strip(),
        }


class AIME25Env(MathEnv):
    """AIME 2025. Hub rows (`math-ai/aime25`: id, problem, answer), or locally MathArena's
    contest folders (`local_files` globs them): `problems/<n>.tex` + `answers.csv`, read
    into the same shape with ids like `2025_I_1`."""

    def load_rows(self) -> list[dict[str, Any]]:
        data_dir = resolve_data_dir(self.data_dir)
        if data_dir is None or not self.local_files:
            return super().load_rows()
        patterns = [self.local_files] if isinstance(self.local_files, str) else self.local_files
        folders = sorted(f for p in patterns for f in data_dir.glob(p) if (f / "answers.csv").exists())
        if not folders:
            raise FileNotFoundError(f"no MathArena contest folder (with answers.csv) matches {patterns} under {data_dir}")
        return [row for folder in folders for row in _matharena_rows(folder)]


def _matharena_rows(folder: Path) -> list[dict[str, Any]]:
    """`aime_2025_I/` -> [{"id": "2025_I_1", "problem": <1.tex>, "answer": "70"}, ...]."""
    contest = folder.name.removeprefix("aime_")
    with open(folder / "answers.csv", newline="", encoding="utf-8") as f:
        answers = sorted(csv.DictReader(f), key=lambda r: int(r["id"]))
    return [
        {
            "id": f"{contest}_{a['id']}",
            "problem": (folder / "problems" / f"{a['id']}.tex").read_text(encoding="utf-8").strip(),
            "answer": a["answer"].strip(),
        }
        for a in answers
    ]


class BoxedAnswerEnv(MathEnv):
    """Rows with a worked solution and no answer column: the expected answer is the last
    `\\boxed{}` of the solution (Minerva Math, NuminaMath). None when there is none."""

    def expected_of(self, row: dict[str, Any]) -> str | None:
        return last_boxed(row.get(self.solution_field or "") or "")


# OlympiadBench's published open-ended, text-only subsets (hub configs of
# Hothan/OlympiadBench) by friendly name. "easy" is the paper's easier level: Chinese
# college-entrance-exam (CEE, gaokao) maths; the COMP subsets are olympiad competitions.
OLYMPIADBENCH_SUBSETS = {
    "maths_en": "OE_TO_maths_en_COMP",
    "maths_zh": "OE_TO_maths_zh_COMP",
    "maths_zh_cee": "OE_TO_maths_zh_CEE",
    "physics_en": "OE_TO_physics_en_COMP",
    "physics_zh_cee": "OE_TO_physics_zh_CEE",
    "easy": "OE_TO_maths_zh_CEE",
}
# The one subset with a copy in the local mirror (SKYEVAL_DATA_DIR); the others load from
# the hub, or from olympiadbench/<hub config>.jsonl under the data dir if you place them there.
_OLYMPIADBENCH_LOCAL = {"OE_TO_maths_en_COMP": "olympiadbench/test.jsonl"}


class OlympiadBenchEnv(MathEnv):
    """OlympiadBench (open-ended, text-only): `context` is prepended to the question;
    `final_answer` (a list) loses its `$` delimiters; unit and answer type become meta.

    `subset`: a friendly name of `OLYMPIADBENCH_SUBSETS` (or the hub config it names);
    theorem-proving (TP_*) subsets have no final answer and multimodal (MM_*) ones need
    the images, so neither is offered.
    `score_format`: True (default) counts an answer only when the sample states it in
    `\\boxed{}`, the format OlympiadBench's prompt asks for; an answer found only by the
    lenient fallbacks ("the answer is x", the last number) scores 0 with
    `format_ok: false`. False grades whatever final answer can be extracted."""

    def __init__(self, subset: str = "maths_en", score_format: bool = True, id_field: str | None = "id",
                 hf_id: str | None = "Hothan/OlympiadBench", split: str = "train", **kwargs: Any) -> None:
        hub_names = {v: v for v in OLYMPIADBENCH_SUBSETS.values()}
        check_knob("olympiadbench subset", subset, (*OLYMPIADBENCH_SUBSETS, *hub_names))
        hub_name = OLYMPIADBENCH_SUBSETS.get(subset, subset)
        kwargs["hf_subset"] = hub_name
        kwargs["local_files"] = _OLYMPIADBENCH_LOCAL.get(hub_name, f"olympiadbench/{hub_name}.jsonl")
        if kwargs.get("numeric_rule") is None and "physics" in hub_name:
            kwargs["numeric_rule"] = "approximate"  # physics subsets grade rounded quantities
        super().__init__(id_field=id_field, hf_id=hf_id, split=split, **kwargs)
        self.subset, self.score_format = subset, bool(score_format)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        context = (row.get("context") or "").strip()
        return {
            "id": str(row[self.id_field]) if self.id_field else str(index),
            "question": f"{context}\n\n{row['question']}" if context else row["question"],
            "expected": [_DOLLAR.sub("", a).strip() for a in row["final_answer"]],
            "solution": (row.get("solution") or [None])[0],
            "unit": row.get("unit"),
            "answer_type": row.get("answer_type"),
            "is_multiple_answer": bool(row.get("is_multiple_answer")),
            "subfield": row.get("subfield"),
        }

    def scoring_functions(self) -> dict[str, Any]:
        return {"math": OlympiadBenchScorer}


class OlympiadBenchScorer(MathScorer):
    """`MathScorer`, plus `format_ok` (the answer is in `\\boxed{}`); with the env's
    `score_format` on, a sample whose answer is not boxed scores 0."""

    def __init__(self, env: OlympiadBenchEnv) -> None:
        super().__init__(env)
        self.score_format = env.score_format

    def __call__(self, item: dict[str, Any]) -> dict[str, Any]:
        from skyeval.scorers.math import final_response

        answer, _, _ = final_response(item.get("generation") or "", reasoning=item.get("reasoning"))
        result = {**super().__call__(item), "format_ok": last_boxed(answer) is not None}  # never a box in the thoughts
        if self.score_format and not result["format_ok"]:
            result["score"] = 0.0
        return result


NUMINA_SOURCES = (
    "aops_forum", "amc_aime", "cn_k12", "gsm8k", "math", "olympiads", "orca_math", "synthetic_amc", "synthetic_math",
)
_LEVEL = re.compile(r"Level\s*(\d+)")
_CHOICE_LABEL = re.compile(r"(?:\\(?:textbf|text|mathrm)\{\s*\(([A-E])\)\s*\}|\(([A-E])\))(?:\s|\\[ ,;:!]|~)*(.*)", re.S)


class NuminaEnv(BoxedAnswerEnv):
    """NuminaMath-CoT (training prompts): rows of one `source` (or "all") whose solution
    has a `\\boxed{}` answer.

    Difficulty: NuminaMath-CoT has no difficulty column. A row's difficulty is its
    `difficulty` column when present (a number, e.g. from an annotated export), else the N
    of a MATH-style `level` column ("Level 3"), else unknown. With `min_difficulty` or
    `max_difficulty` set, only rows of known difficulty in [min, max] are kept; rows of
    unknown difficulty are kept only under the default full range (both None).

    `expected` is a list: the boxed answer, and for AMC-style boxes such as
    `\\textbf{(B)}\\ 100` also the bare value ("100") and the letter ("B")."""

    def __init__(
        self,
        source: str = "all",
        min_difficulty: float | None = None,
        max_difficulty: float | None = None,
        meta_fields: list[str] | None = ("source",),
        **kwargs: Any,
    ) -> None:
        check_knob("numina source", source, ("all", *NUMINA_SOURCES))
        super().__init__(meta_fields=meta_fields, **kwargs)
        self.source, self.min_difficulty, self.max_difficulty = source, min_difficulty, max_difficulty

    def expected_of(self, row: dict[str, Any]) -> list[str] | None:
        boxed = super().expected_of(row)
        return None if boxed is None else answer_forms(boxed)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        return {**super().to_problem(row, index), "difficulty": difficulty_of(row)}

    def keep(self, problem: dict[str, Any]) -> bool:
        if problem["expected"] is None or self.source not in ("all", problem["source"]):
            return False
        if self.min_difficulty is None and self.max_difficulty is None:
            return True
        level = problem["difficulty"]
        return (
            level is not None
            and (self.min_difficulty is None or level >= self.min_difficulty)
            and (self.max_difficulty is None or level <= self.max_difficulty)
        )

    def load_problems(self, on_error: Callable[[int, Exception], None] | None = None) -> list[dict[str, Any]]:
        problems = super().load_problems(on_error)
        if not problems and (self.min_difficulty is not None or self.max_difficulty is not None):
            raise ValueError(
                "numina: no row in the difficulty range; NuminaMath-CoT has no difficulty column, so "
                "min_difficulty/max_difficulty need rows with a `difficulty` or MATH `level` column"
            )
        return problems


LIVEAOPS_ANSWERS = ("any", "first")
VALUE_TIMEOUT_S = 20.0  # per comparison in `value_classes`: generous, so a loaded machine gives the same classes
_LATEX_SPACING = re.compile(r"\s+|\\(?:(?:quad|qquad|left|right)(?![A-Za-z])|[,;:! ])|(?<=\\)[dt](?=frac)")  # meaningless in LaTeX


class LiveAoPSEnv(MathEnv):
    """LiveAoPSBench (SkyThought's `liveaops`): AoPS forum problems with the month they were
    posted (`date`, from `post_time {year, month}`), for contamination checks by date.

    Rows are v1.0's (`answers`: a list of answer strings from the thread) or SkyThought's
    later file's (`LiveAoPSBench-2024.jsonl`: one `answer`). `answers`: `any` (default)
    counts a sample right when it equals any listed answer; `first` only the first.
    docs/benchmarks.md gives the counts this rule was decided from; `audit` lists the
    rows whose answers disagree in value (`value_classes`)."""

    date_field = "date"
    default_template = Template(messages=[{"role": "user",
                                           "content": "Return your final response within \\boxed{{}}. {question}"}])

    def __init__(self, answers: str = "any", question_field: str = "question", solution_field: str | None = None,
                 **kwargs: Any) -> None:
        check_knob("liveaops answers", answers, LIVEAOPS_ANSWERS)
        super().__init__(question_field=question_field, solution_field=solution_field, **kwargs)
        self.answers = answers

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        listed = [_answer_str(a) for a in (row["answers"] if "answers" in row else [row["answer"]]) if a is not None]
        listed = [a for a in listed if a]
        return {
            "id": str(row[self.id_field]) if self.id_field else str(index),
            "question": row[self.question_field],
            "expected": (listed[:1] if self.answers == "first" else listed) or None,  # None: scored null, never 0
            "answers": listed,
            "solution": None,
            "date": problem_date(row.get("post_time")),
        }

    @staticmethod
    def value_classes(answers: list[str]) -> list[list[str]]:
        """The listed answers grouped by value: equal once LaTeX spacing is dropped, or the
        same by the grader's `equivalent` (either way round; a comparison that times out
        counts as different). One class when they are forms of one answer."""
        from skyeval.scorers.math import equivalent

        classes: list[list[str]] = []
        for answer in answers:
            for members in classes:
                if (_LATEX_SPACING.sub("", answer) == _LATEX_SPACING.sub("", members[0])
                        or equivalent(answer, members[0], timeout_s=VALUE_TIMEOUT_S)
                        or equivalent(members[0], answer, timeout_s=VALUE_TIMEOUT_S)):
                    members.append(answer)
                    break
            else:
                classes.append([answer])
        return classes


def check_knob(knob: str, value: Any, valid: tuple[str, ...]) -> None:
    """Raise a ValueError naming the closest and all valid values when `value` is not one."""
    if value not in valid:
        close = difflib.get_close_matches(str(value), valid, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown {knob} {value!r}.{hint} Valid: {', '.join(valid)}")


def answer_forms(boxed: str) -> list[str]:
    """`\\textbf{(B)}\\ 100` -> [it, "100", "B"]; any other answer -> [answer]."""
    match = _CHOICE_LABEL.fullmatch(boxed)
    if match is None:
        return [boxed]
    value = match.group(3).strip().rstrip(".").strip()
    return list(dict.fromkeys(form for form in (boxed, value, match.group(1) or match.group(2)) if form))


def difficulty_of(row: dict[str, Any]) -> float | None:
    """A row's `difficulty` column, else N of a `level` column "Level N", else None."""
    value = row.get("difficulty")
    if value not in (None, ""):
        return float(value)
    match = _LEVEL.search(str(row.get("level") or ""))
    return float(match.group(1)) if match else None


def _answer_str(value: Any) -> str:
    """Answers as strings; integral floats (AMC's 27.0) as integers."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()
