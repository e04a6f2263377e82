"""Best-of-N per question over a Ray Dataset: mean, max, majority vote and pass@k.

Same definitions as `skyeval.metrics` (which summary.json uses), so both agree on the
same samples: a sample is correct when its score reaches 1, the majority answer is the
most frequent non-null answer (ties: lowest sample index), pass@k is the unbiased
estimator and is null for a question with fewer than k samples.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Sequence

from skyeval.metrics import CORRECT, majority_answer, pass_at_k

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data


def best_of_n(
    ds: "ray.data.Dataset",
    *,
    score_col: str = "score",
    answer_col: str = "extracted",
    id_col: str = "id",
    order_col: str | None = "sample_idx",
    ks: Sequence[int] = (1,),
) -> "ray.data.Dataset":
    """One row per question: `id`, `samples`, `correct`, `mean_score`, `max_score`,
    `majority_answer`, `majority_score` and `pass@k` for each k in `ks`
    (`ds.groupby(id_col).map_groups(...)`; the other columns are ignored)."""
    columns = [id_col, score_col, answer_col] + ([order_col] if order_col else [])
    aggregate = partial(_aggregate_table, score_col=score_col, answer_col=answer_col, id_col=id_col,
                        order_col=order_col, ks=tuple(ks))
    return ds.select_columns(columns).groupby(id_col).map_groups(aggregate, batch_format="pyarrow")


def aggregate_question(
    samples: list[dict[str, Any]], *, score_col: str = "score", answer_col: str = "extracted",
    ks: Sequence[int] = (1,),
) -> dict[str, Any]:
    """Best-of-N statistics of one question's samples (in sample order)."""
    scores = [float(s[score_col]) for s in samples]
    correct = sum(s >= CORRECT for s in scores)
    majority = majority_answer([{"extracted": s[answer_col], "score": s[score_col]} for s in samples])
    row = {
        "samples": len(scores),
        "correct": correct,
        "mean_score": sum(scores) / len(scores),
        "max_score": max(scores),
        "majority_answer": majority["extracted"] if majority else None,
        "majority_score": float(majority["score"]) if majority else 0.0,
    }
    for k in ks:
        row[f"pass@{k}"] = pass_at_k(len(scores), correct, k) if k <= len(scores) else None
    return row


def _aggregate_table(table: "pa.Table", *, score_col: str, answer_col: str, id_col: str,
                     order_col: str | None, ks: tuple[int, ...]) -> "pa.Table":
    import pyarrow as pa

    samples = table.to_pylist()
    if order_col:
        samples.sort(key=lambda s: s[order_col])
    stats = aggregate_question(samples, score_col=score_col, answer_col=answer_col, ks=ks)
    return pa.Table.from_pylist([{id_col: samples[0][id_col], **stats}])


# ---- choosing the best sample of each question --------------------------------------------
BY = ("score", "reward", "judge")


def choose(samples: list[dict[str, Any]], values: list[float | None]) -> tuple[dict[str, Any], float | None]:
    """(the best sample, its value): the highest value (None: unscored, below any value);
    ties go to the shorter response, then the lower sample index."""
    from skyeval.curation.pairs import response_length

    ranked = sorted(zip(samples, values), key=lambda sv: (sv[1] is None, -(sv[1] or 0.0), response_length(sv[0]),
                                                         sv[0]["sample_idx"]))
    return ranked[0]


def reward_values(rows: list[dict[str, Any]], url: str, *, cache: Any = None, batch: int = 64,
                  timeout_s: float = 120.0, progress: str | None = None) -> tuple[list[float | None], dict[str, int]]:
    """The reward of each sample from a reward model over HTTP: an OpenRLHF-style
    `POST {url}` with `{"query": [prompt + response, ...], "prompts": [...], "labels": [gold
    text, ...]}` answering `{"rewards": [...]}` (`skyeval.cli serve-reward` is one). Rewards
    are cached in `cache` (a `JudgeCache` or its folder) by URL, query and label, so a
    re-run sends none it has. Returns (rewards in row order, {"requests", "cached"})."""
    import hashlib
    import json

    import httpx

    from skyeval.curation.exports import prompt_and_response
    from skyeval.curation.conversations import messages, part_text
    from skyeval.envs.local import progress_bar
    from skyeval.errors import InfrastructureError
    from skyeval.grading import JudgeCache
    from skyeval.grading.prompts import gold_text

    if cache is not None and not isinstance(cache, JudgeCache):
        cache = JudgeCache(cache)
    items = []
    for row in rows:
        prompt, response = prompt_and_response(row["prompt"], row)
        prompt_text = part_text(messages(prompt, "prompt"), "prompt") + "\n"
        label = gold_text(row.get("expected"))
        key = hashlib.sha256(json.dumps(["reward", url, prompt_text + response, label]).encode()).hexdigest()[:32]
        items.append((key, prompt_text, prompt_text + response, label))
    values: dict[str, float] = {}
    if cache is not None:
        values.update({key: cache.get(key)["reward"] for key, *_ in items if cache.get(key) is not None})
    counts = {"requests": 0, "cached": sum(key in values for key, *_ in items)}
    todo = list({key: item for key, *item in items if key not in values}.items())
    try:
        with httpx.Client(timeout=timeout_s) as client, progress_bar(progress, len(todo), unit="sample") as bar:
            for start in range(0, len(todo), batch):
                part = todo[start:start + batch]
                body = {"prompts": [p for _, (p, _, _) in part], "query": [q for _, (_, q, _) in part],
                        "labels": [label for _, (_, _, label) in part]}
                try:
                    response = client.post(url, json=body)
                    response.raise_for_status()
                    rewards = response.json()["rewards"]
                except (httpx.HTTPError, KeyError, ValueError) as err:
                    raise InfrastructureError(f"reward model at {url}: {type(err).__name__}: {err}") from None
                counts["requests"] += 1
                for (key, _), reward in zip(part, rewards):
                    values[key] = None if reward is None else float(reward)
                    if cache is not None:
                        cache.put({"key": key, "reward": values[key]})
                bar.update(len(part))
    finally:
        if cache is not None:
            cache.close()
    return [values.get(key) for key, *_ in items], counts


def judge_values(rows: list[dict[str, Any]], step: Any) -> list[float | None]:
    """The judge's score of each sample: a `skyeval.grading.GradingStep` in mode `always`
    (its judge cached) shown what it shows a run's judge; 1.0 where the judge finds the
    answer equivalent to the gold, 0.0 where different, None where it gave no verdict (an
    unparseable reply, a failed request, no answer to show)."""
    graded = step.decide([(row, row) for row in rows])
    return [g["score"] if g.get("graded_by") == "judge" else None for g in graded]
