"""IFEval (Zhou et al. 2023): 541 prompts with verifiable instructions ("answer in fewer
than 300 words", "no commas", "wrap it in JSON" ...), graded by rule, not against a gold.

The model's user turn is the data's `prompt`, unchanged (the problem's `question`). A
problem carries `instruction_id_list` and `kwargs` (one dict per instruction), so
`env.score_item({**problem, "generation": response})` grades a response. `score` is
prompt-level strict accuracy; summary.json also has prompt-level loose and
instruction-level strict and loose accuracy (`skyeval.scorers.ifeval`).
"""

from __future__ import annotations

from typing import Any

from skyeval.envs.base import Env
from skyeval.templates import Template

# summary.json names (lm-evaluation-harness's) -> the score column counting what passed
IFEVAL_METRICS = {
    "prompt_level_strict_acc": "score",
    "prompt_level_loose_acc": "prompt_level_loose",
    "inst_level_strict_acc": "followed_strict",
    "inst_level_loose_acc": "followed_loose",
}


class IFEvalEnv(Env):
    """IFEval. Rows: `key`, `prompt`, `instruction_id_list`, `kwargs` (google/IFEval on the
    hub, or `ifeval/input_data.jsonl`). There are no reference answers: with
    `model_config=reference` every sample is a `NoReference` failure."""

    name = "ifeval"
    required_keys = ("instruction_id_list", "kwargs")
    default_template = Template(messages=[{"role": "user", "content": "{question}"}])
    scorer_name = "ifeval"

    def __init__(self, hf_id: str | None = "google/IFEval", split: str = "train", **kwargs: Any) -> None:
        super().__init__(hf_id=hf_id, split=split, **kwargs)

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        return {
            "id": str(row.get("key", index)),
            "question": row["prompt"],
            "instruction_id_list": list(row["instruction_id_list"]),
            "kwargs": [{k: v for k, v in (kw or {}).items() if v is not None} for kw in row["kwargs"]],
        }

    def reference_generation(self, problem: dict[str, Any]) -> str | None:
        """None: IFEval has no reference responses (its self-check is tests/envs/test_ifeval.py)."""
        return None

    def gold_problem(self, key: str, value: Any, item: dict[str, Any]) -> str | None:
        """The instructions must be known ids, each with the arguments its checker needs."""
        from skyeval.scorers.ifeval import instruction_arguments

        ids, kwargs = item.get("instruction_id_list"), item.get("kwargs")
        if not isinstance(ids, list) or not ids or not isinstance(kwargs, list) or len(kwargs) != len(ids):
            return "a non-empty instruction_id_list and one kwargs dict per instruction"
        try:
            for instruction_id, given in zip(ids, kwargs):
                instruction_arguments(instruction_id, given)
        except ValueError as err:
            return f"known instructions with their arguments ({err})"
        return None

    def scoring_functions(self) -> dict[str, Any]:
        return {"ifeval": IFEvalScorer}

    def unit_metrics(self) -> dict[str, str]:
        return dict(IFEVAL_METRICS)

    def units(self, problem: dict[str, Any]) -> dict[str, int]:
        count = len(problem.get("instruction_id_list") or [])
        return {"prompt_level_strict_acc": 1, "prompt_level_loose_acc": 1,
                "inst_level_strict_acc": count, "inst_level_loose_acc": count}


class IFEvalScorer:
    """A response against its problem's instructions (`score_ifeval`)."""

    def __init__(self, env: Env | None = None) -> None:
        pass

    def __call__(self, item: dict[str, Any]) -> dict[str, Any]:
        from skyeval.scorers.ifeval import score_ifeval

        return score_ifeval(item.get("generation") or "", item["instruction_id_list"], item["kwargs"],
                            reasoning=item.get("reasoning"))
