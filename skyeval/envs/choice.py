"""Multiple-choice benchmarks: lettered options, a gold letter, scored by `score_choice`."""

from __future__ import annotations

import random
from typing import Any, Sequence

from skyeval.envs.base import Env
from skyeval.envs.math import check_knob
from skyeval.scorers.choice import LETTERS
from skyeval.templates import Template

CHOICE_INSTRUCTION = (
    "Please reason step by step, and put the letter of your final answer within \\boxed{}."
)


class ChoiceEnv(Env):
    """A question with options (A)..(J). Problems carry `question` (stem and lettered
    options), `choices`, `expected` (the gold letter) and `num_options`."""

    default_template = Template(
        messages=[{"role": "user", "content": "Answer the following multiple choice question.\n\n{question}\n\n" + CHOICE_INSTRUCTION}]
    )

    def reference_generation(self, problem: dict[str, Any]) -> str:
        """A short explanation naming a wrong option and the right one, then the boxed letter."""
        gold = LETTERS.index(problem["expected"])
        other = (gold + 1) % problem["num_options"]
        choices = problem["choices"]
        return (
            f"Let me check the options. Option ({LETTERS[other]}), \"{choices[other]}\", does not fit the question; "
            f"option ({LETTERS[gold]}), \"{choices[gold]}\", does.\n\nThe answer is \\boxed{{{LETTERS[gold]}}}."
        )

    def gold_problem(self, key: str, value: Any, item: dict[str, Any]) -> str | None:
        """The gold is one option letter, within the problem's options."""
        count = item.get("num_options") if isinstance(item.get("num_options"), int) else len(LETTERS)
        valid = tuple(LETTERS[:count])
        return None if isinstance(value, str) and value in valid else f"one option letter ({valid[0]}-{valid[-1]})"

    scorer_name = "choice"

    def scoring_functions(self) -> dict[str, Any]:
        return {"choice": ChoiceScorer}


class ChoiceScorer:
    """Whether a sample's final letter is the gold one: `{"score", "extracted", ...}`."""

    def __init__(self, env: Env | None = None) -> None:
        pass

    def __call__(self, item: dict[str, Any]) -> dict[str, Any]:
        from skyeval.scorers.choice import score_choice

        num_options = item.get("num_options") or len(LETTERS)
        return score_choice(item.get("generation") or "", item["expected"], num_options=num_options,
                            reasoning=item.get("reasoning"))


def choice_problem(problem_id: str, stem: str, options: Sequence[str], answer_index: int | None,
                   answer: Any = None, **meta: Any) -> dict[str, Any]:
    """The problem dict of a multiple-choice row (options are stripped, then lettered). A
    gold outside the options (`answer_index` None or out of range; `answer` as the row
    gives it) leaves `expected` None and says why in `bad_gold`: the run names it and
    leaves the problem out."""
    options = [str(o).strip() for o in options]
    if not 2 <= len(options) <= len(LETTERS):
        raise ValueError(f"problem {problem_id}: {len(options)} options (2 to {len(LETTERS)} needed)")
    valid = answer_index is not None and 0 <= answer_index < len(options)
    lettered = "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))
    problem = {
        "id": problem_id,
        "question": f"{stem.strip()}\n\n{lettered}",
        "choices": options,
        "expected": LETTERS[answer_index] if valid else None,
        "num_options": len(options),
        **meta,
    }
    if not valid:
        shown = answer if answer is not None else answer_index
        problem["bad_gold"] = f"the gold {shown!r} is not one of its {len(options)} options (A-{LETTERS[len(options) - 1]})"
    return problem


def _validated(knob: str, values: str | Sequence[str] | None, valid: tuple[str, ...]) -> list[str] | None:
    """A list-valued enum knob (None = all); unknown values raise, listing the valid ones."""
    if values is None:
        return None
    values = [values] if isinstance(values, str) else list(values)
    for value in values:
        check_knob(knob, value, valid)
    return values


class GPQADiamondEnv(ChoiceEnv):
    """GPQA-Diamond. The four answers are shuffled per question with a seed derived from
    its `Record ID` and the `seed` knob: the order is reproducible and does not depend on
    run order, `limit` or `n`. The gold letter is wherever `Correct Answer` lands."""

    def __init__(self, seed: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed = seed

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        record_id = row["Record ID"].strip()
        answers = [row["Correct Answer"], *(row[f"Incorrect Answer {i}"] for i in (1, 2, 3))]
        order = list(range(len(answers)))
        random.Random(f"{record_id}:{self.seed}").shuffle(order)
        return choice_problem(
            record_id,
            row["Question"],
            [answers[i] for i in order],
            order.index(0),
            domain=row["High-level domain"].strip(),
            subdomain=row["Subdomain"].strip(),
        )


MMLU_SUBJECTS = (
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge", "college_biology",
    "college_chemistry", "college_computer_science", "college_mathematics", "college_medicine", "college_physics",
    "computer_security", "conceptual_physics", "econometrics", "electrical_engineering", "elementary_mathematics",
    "formal_logic", "global_facts", "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_european_history", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_mathematics", "high_school_microeconomics", "high_school_physics",
    "high_school_psychology", "high_school_statistics", "high_school_us_history", "high_school_world_history",
    "human_aging", "human_sexuality", "international_law", "jurisprudence", "logical_fallacies", "machine_learning",
    "management", "marketing", "medical_genetics", "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition",
    "philosophy", "prehistory", "professional_accounting", "professional_law", "professional_medicine",
    "professional_psychology", "public_relations", "security_studies", "sociology", "us_foreign_policy", "virology",
    "world_religions",
)


class MMLUEnv(ChoiceEnv):
    """MMLU, 57 subjects. Hub rows (question, subject, choices, answer index) or the local
    per-subject CSVs (question, choice0..3, answer index; subject from the file name).
    `subjects` restricts to some subjects (None = all)."""

    def __init__(self, subjects: str | list[str] | None = None, **kwargs: Any) -> None:
        self.subjects = _validated("mmlu subject", subjects, MMLU_SUBJECTS)
        super().__init__(**kwargs)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        subject = row.get("subject") or row["_file"].removesuffix("_test")
        options = row["choices"] if "choices" in row else [row[f"choice{i}"] for i in range(4)]
        return choice_problem(f"{subject}-{index}", row["question"], options, int(row["answer"]), answer=row["answer"],
                              subject=subject)

    def keep(self, problem: dict[str, Any]) -> bool:
        return self.subjects is None or problem["subject"] in self.subjects


MMLU_PRO_CATEGORIES = (
    "biology", "business", "chemistry", "computer science", "economics", "engineering", "health", "history", "law",
    "math", "other", "philosophy", "physics", "psychology",
)


class MMLUProEnv(ChoiceEnv):
    """MMLU-Pro: 3-10 options; the gold is the `answer` letter (in one row of the test set
    `answer_index` disagrees with it; the letter is the right one). `categories` restricts
    to some of its 14 categories (None = all)."""

    def __init__(self, categories: str | list[str] | None = None, **kwargs: Any) -> None:
        self.categories = _validated("mmlu_pro category", categories, MMLU_PRO_CATEGORIES)
        super().__init__(**kwargs)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        return choice_problem(
            str(row["question_id"]),
            row["question"],
            row["options"],
            LETTERS.index(row["answer"].strip()) if row["answer"].strip() in LETTERS else None,
            answer=row["answer"],
            category=row["category"],
            src=row.get("src"),
        )

    def keep(self, problem: dict[str, Any]) -> bool:
        return self.categories is None or problem["category"] in self.categories


class ARCEnv(ChoiceEnv):
    """ARC (AI2 Reasoning Challenge), HF layout: choices {text[], label[]} and `answerKey`.
    Labels are re-lettered A.. in order, so the numeric "1".."4" rows of the hub work too."""

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        labels = [str(label).strip() for label in row["choices"]["label"]]
        key = str(row["answerKey"]).strip()
        return choice_problem(row["id"], row["question"], row["choices"]["text"],
                              labels.index(key) if key in labels else None, answer=key)
