"""The Qwen2.5-Math evaluation suite: the sets its harness (QwenLM/Qwen2.5-Math,
`evaluation/`) evaluates on, read with its conventions (docs/benchmarks.md).

Which field is the question and how the gold is read follow the harness's `data_loader.py`
and `parser.py`; the default prompt is its `qwen25-math-cot` chat prompt (the system
prompt "Please reason step by step, and put your final answer within \\boxed{}." and the
question as the user turn), with the few-shot demonstrations its `sh/eval.sh` adds: five
for the English multiple-choice sets (aqua, sat_math, mmlu_stem), and for the Chinese
sets (`--adapt_few_shot`) five on the problems whose gold is an option letter.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from skyeval.envs.choice import ChoiceEnv
from skyeval.envs.math import MathEnv, MathScorer, _answer_str
from skyeval.scorers.choice import LETTERS
from skyeval.templates import Template

# The harness's `qwen25-math-cot` prompt: the boxed instruction is the system prompt,
# the (demonstrations and) question the user turn.
HARNESS_TEMPLATE = Template(messages=[{"role": "user", "content": "{fewshot}{question}"}], system_prompt_name="qwen_math")
_YES_NO = {"true": " (True or False)", "false": " (True or False)", "yes": " (Yes or No)", "no": " (Yes or No)"}
_UNIT = re.compile(r"\(.*?\)")  # asdiv golds carry their unit in parentheses: "9 (apples)"
_OPTION_MARK = re.compile(r"(?<![A-Za-z\\])([A-E])\s*[.．、]")  # "A. x", "B．y" in a question's inline options


@lru_cache(maxsize=None)
def harness_demos() -> dict[str, list[list[str]]]:
    """The harness's few-shot demonstrations (`evaluation/examples.py`), by set name."""
    text = resources.files("skyeval.envs").joinpath("qwen_math_demos.json").read_text(encoding="utf-8")
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


def fewshot_prefix(demos: str | None) -> str:
    """The demonstrations as the harness puts them before a question in one user turn
    (`qwen25-math-cot`: question, newline, answer; blank lines between), or ""."""
    if not demos:
        return ""
    return "\n\n".join(f"{q}\n{a}" for q, a in harness_demos()[demos]) + "\n\n"


def with_yes_no(question: str, gold: str | None) -> str:
    """The harness marks questions whose gold is true/false or yes/no ("Yes." too)."""
    word = re.sub(r"\\text\{(.*?)\}", r"\1", str(gold)).replace("$", "").strip().rstrip(".").strip().lower()
    return question.strip() + _YES_NO.get(word, "")


class HarnessPrompt:
    """The harness's prompt: `{fewshot}` is filled with the set's demonstrations (`demos`,
    a key of `harness_demos`) where its eval script uses them: on every problem, or with
    `demos_on_letters` only on those whose gold is one option letter. The `fewshot` knob
    (True) turns them off."""

    demos: str | None = None
    demos_on_letters = False
    fewshot: bool = True

    def apply_prompt_template_on_item(self, item: dict[str, Any]) -> dict[str, Any]:
        used = self.fewshot and (not self.demos_on_letters or _is_letter(item.get("expected")))
        filled = {**item, "fewshot": fewshot_prefix(self.demos if used else None)}
        return {**item, "prompt": self.template.render(filled, self.model_source)}


def _is_letter(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 1 and value in "ABCDE"


def _index(row: dict[str, Any], index: int) -> str:
    return str(row.get("idx", index))


class QwenMathEnv(HarnessPrompt, MathEnv):
    """A set of the suite with a final answer (math scorer). `question_field`,
    `answer_field`, `solution_field` name the columns; `dollar_answers` drops `$` from the
    gold as the harness does for gaokao2023en, college_math and gaokao_math_cloze."""

    default_template = HARNESS_TEMPLATE

    def __init__(self, question_field: str = "question", solution_field: str | None = None,
                 dollar_answers: bool = False, fewshot: bool = True, **kwargs: Any) -> None:
        super().__init__(question_field=question_field, solution_field=solution_field, **kwargs)
        self.dollar_answers, self.fewshot = bool(dollar_answers), bool(fewshot)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        expected = self.expected_of(row)
        return {
            "id": str(row[self.id_field]) if self.id_field and self.id_field in row else _index(row, index),
            "question": with_yes_no(self.question_of(row), expected),
            "expected": expected,
            "solution": (row.get(self.solution_field) or None) if self.solution_field else None,
            **{field: row.get(field) for field in self.meta_fields},
        }

    def question_of(self, row: dict[str, Any]) -> str:
        return str(row[self.question_field])

    def reference_generation(self, problem: dict[str, Any]) -> str | None:
        """MathEnv's; None (a `NoReference` failure) for a problem without a gold."""
        return None if problem["expected"] is None else super().reference_generation(problem)

    def expected_of(self, row: dict[str, Any]) -> str | None:
        """The gold as a string; None (scored null, in failures/, never 0) when the row has none."""
        answer = _answer_str(row[self.answer_field]) if row.get(self.answer_field) is not None else ""
        answer = answer.replace("$", "").strip() if self.dollar_answers else answer
        return answer or None


class SVAMPEnv(QwenMathEnv):
    """SVAMP: the question is `Body` (with a full stop added when it has none) and
    `Question`; the gold is `Answer` (a float: 145.0 -> "145"); `Equation` is the solution."""

    def __init__(self, answer_field: str = "Answer", solution_field: str | None = "Equation", **kwargs: Any) -> None:
        super().__init__(answer_field=answer_field, solution_field=solution_field, **kwargs)

    def question_of(self, row: dict[str, Any]) -> str:
        body = row["Body"].strip()
        return f"{body if body.endswith('.') else body + '.'} {row['Question'].strip()}"


class ASDivEnv(QwenMathEnv):
    """ASDiv: the question is `body` and `question`; the gold is `answer` without its unit
    in parentheses ("9 (apples)" -> "9"); `formula` is the solution. Rows with several
    answers (`;`) are left out, as the harness does for the hub split."""

    def __init__(self, solution_field: str | None = "formula", **kwargs: Any) -> None:
        super().__init__(solution_field=solution_field, **kwargs)

    def question_of(self, row: dict[str, Any]) -> str:
        return f"{row['body'].strip()} {row['question'].strip()}"

    def expected_of(self, row: dict[str, Any]) -> str | None:
        return _UNIT.sub("", str(row["answer"])).strip() or None

    def keep(self, problem: dict[str, Any]) -> bool:
        return ";" not in (problem["expected"] or "")


class GaokaoEnv(QwenMathEnv):
    """Chinese exam sets whose golds are of three kinds (gaokao2024_I/II/mix,
    cn_middle_school): one option letter (`answer_type: choice`), several letters of a
    multiple-select question (`choices`, e.g. "ACD": right only with exactly those letters,
    in any order), or a value (`value`, the math scorer). `choice_field` names the column
    holding the letter when there is one (the harness uses it when it is not empty)."""

    demos, demos_on_letters = "gaokao", True

    def __init__(self, choice_field: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.choice_field = choice_field

    def expected_of(self, row: dict[str, Any]) -> str | None:
        return self._letters(row) or super().expected_of(row)

    def _letters(self, row: dict[str, Any]) -> str:
        """The gold's option letters: the choice column's, else an `answer` of letters on a
        row whose `type` says it is a single or multiple choice question; "" for a value."""
        if self.choice_field:
            return str(row.get(self.choice_field) or "").strip()
        answer = str(row.get(self.answer_field) or "").strip()
        return answer if row.get("type") in ("single", "multi") and re.fullmatch(r"[A-E]+", answer) else ""

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        problem = super().to_problem(row, index)
        expected, question = problem["expected"] or "", problem["question"]
        letters = self._letters(row)
        kind = "value" if not letters else ("choice" if len(letters) == 1 else "choices")
        marks = [LETTERS.index(m) for m in _OPTION_MARK.findall(question)]
        gold = [LETTERS.index(c) for c in expected] if kind != "value" else []
        return {**problem, "answer_type": kind, "num_options": max([3, *marks, *gold]) + 1}

    def reference_generation(self, problem: dict[str, Any]) -> str | None:
        if problem["answer_type"] == "value":
            return super().reference_generation(problem)
        return letters_reference(problem)

    def scoring_functions(self) -> dict[str, Any]:
        return {"math": GaokaoScorer}


class GaokaoScorer(MathScorer):
    """`answer_type` choice or choices: `score_letters`; value: the math scorer."""

    def __call__(self, item: dict[str, Any]) -> dict[str, Any]:
        if item.get("answer_type") in ("choice", "choices"):
            return score_letters(item)
        return super().__call__(item)


def score_letters(item: dict[str, Any]) -> dict[str, Any]:
    """A sample against a gold of one option letter (`score_choice`) or several, from a
    multiple-select question (`score_choice_set`: exactly those letters, any order)."""
    from skyeval.scorers.choice import score_choice, score_choice_set

    expected, options = item["expected"], item.get("num_options") or 4
    score = score_choice if len(expected) == 1 else score_choice_set
    return score(item.get("generation") or "", expected, num_options=options, reasoning=item.get("reasoning"))


def letters_reference(problem: dict[str, Any]) -> str:
    """The reference generation of a gold made of option letters."""
    return f"逐一检验各选项后可知答案。\n\n答案是 \\boxed{{{problem['expected']}}}."


class QwenChoiceEnv(HarnessPrompt, ChoiceEnv):
    """A multiple-choice set of the suite, its options written into the question as the
    harness writes them (`Answer Choices: (A) ... (B) ...`); `choices` lists them."""

    default_template = HARNESS_TEMPLATE

    def __init__(self, fewshot: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fewshot = bool(fewshot)


def lettered_problem(pid: str, question: str, options: list[str], gold: str, **meta: Any) -> dict[str, Any]:
    """A multiple-choice problem whose question already shows its options."""
    gold = gold.strip().upper()
    if not 2 <= len(options) <= len(LETTERS) or not gold or any(c not in LETTERS[: len(options)] for c in gold):
        raise ValueError(f"problem {pid}: {len(options)} options with gold {gold!r}")
    return {"id": pid, "question": question.strip(), "choices": [str(o).strip() for o in options], "expected": gold,
            "num_options": len(options), **meta}


MMLU_STEM_SUBJECTS = (
    "abstract_algebra", "astronomy", "college_biology", "college_chemistry", "college_computer_science",
    "college_mathematics", "college_physics", "computer_security", "conceptual_physics", "electrical_engineering",
    "elementary_mathematics", "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_mathematics", "high_school_physics", "high_school_statistics", "machine_learning",
)


class MMLUStemEnv(QwenChoiceEnv):
    """MMLU's 18 STEM subjects (the harness's `mmlu_stem`): `choices` (4), `answer` an
    index; the subject is `type` (hub rows: `subject`)."""

    demos = "mmlu_stem"

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        options = [str(o).strip() for o in row["choices"]]
        shown = " ".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))
        subject = row.get("type") or row.get("subject")
        return lettered_problem(_index(row, index), f"{row['question'].strip()}\nAnswer Choices: {shown}", options,
                                LETTERS[int(row["answer"])], subject=subject)

    def keep(self, problem: dict[str, Any]) -> bool:
        return problem["subject"] in MMLU_STEM_SUBJECTS


class SATMathEnv(QwenChoiceEnv):
    """SAT Math: `options` is one string "A) ... B) ... C) ... D) ..."; the gold is `Answer`.
    The harness uses the mmlu_stem demonstrations."""

    demos = "mmlu_stem"

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        raw = row["options"].strip()
        shown = "(" + raw
        for letter in "BCD":
            shown = shown.replace(f" {letter}) ", f" ({letter}) ")
        options = [o.strip() for o in re.split(r"(?:^|\s)[A-D][).]\s", raw) if o.strip()]
        return lettered_problem(str(row.get("id", index)), f"{row['question'].strip()}\nAnswer Choices: {shown}",
                                options, row["Answer"])


class AQuAEnv(QwenChoiceEnv):
    """AQuA-RAT: `options` are five strings "A)...".."E)..."; the gold is `correct`. The
    question shows them as the harness does: every "(" and ")" of the joined options gets
    a space outside it (also those inside an option: "5 (√3 + 1)")."""

    demos = "aqua"

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        joined = "(" + "(".join(row["options"])
        shown = joined.replace("(", " (").replace(")", ") ").strip()
        options = [re.sub(r"^[A-E]\)", "", o).strip() for o in row["options"]]
        return lettered_problem(_index(row, index), f"{row['question'].strip()}\nAnswer Choices: {shown}", options,
                                row["correct"], solution=row.get("rationale"))


class GaokaoMathQAEnv(QwenChoiceEnv):
    """GAOKAO-Bench maths multiple choice (Chinese): `options` {A..D}; the gold is `label`.
    The question ends "选项: (A) ... (B) ..." as in the harness."""

    demos, demos_on_letters = "gaokao", True

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        options = row["options"]
        shown = " ".join(f"({key}) {value}" for key, value in options.items())
        return lettered_problem(_index(row, index), f"{row['question'].strip()}\n选项: {shown}",
                                list(options.values()), row["label"].replace(" ", ""),
                                source=(row.get("other") or {}).get("source"))

    def reference_generation(self, problem: dict[str, Any]) -> str:
        return super().reference_generation(problem) if len(problem["expected"]) == 1 else letters_reference(problem)

    def gold_problem(self, key: str, value: Any, item: dict[str, Any]) -> str | None:
        """One option letter, or several (a multiple-select question), within A-D."""
        ok = isinstance(value, str) and bool(value) and all(c in LETTERS[: item.get("num_options") or 4] for c in value)
        return None if ok else "option letters (A-D), one or several"

    def scoring_functions(self) -> dict[str, Any]:
        return {"choice": score_letters}
