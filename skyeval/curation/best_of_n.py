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
