"""Aggregate metrics: pure functions over lists of per-sample score records."""

from __future__ import annotations

from collections import Counter, defaultdict
from math import comb
from typing import Any, Iterable

CORRECT = 1.0 - 1e-9  # a sample counts as correct for pass@k when its score reaches 1


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def ks_for(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself."""
    ks = [k for k in (2**i for i in range(n.bit_length())) if k <= n]
    return sorted(set(ks + [n]))


def group_by_problem(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[str(record["id"])].append(record)
    return dict(groups)


def majority_answer(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The record holding the most frequent extracted answer (ties: first seen)."""
    answers = [r.get("extracted") for r in records if r.get("extracted") is not None]
    if not answers:
        return None
    top = Counter(answers).most_common(1)[0][0]
    return next(r for r in records if r.get("extracted") == top)


def per_problem(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Best-of-N statistics of each problem: samples, correct, mean, max, majority vote."""
    rows = []
    for pid, group in group_by_problem(records).items():
        scores = [float(r["score"]) for r in group]
        majority = majority_answer(group)
        rows.append(
            {
                "id": pid,
                "samples": len(scores),
                "correct": sum(s >= CORRECT for s in scores),
                "mean_score": sum(scores) / len(scores),
                "max_score": max(scores),
                "majority_answer": majority.get("extracted") if majority else None,
                "majority_score": float(majority["score"]) if majority else 0.0,
            }
        )
    return rows


def summarize(records: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """Metrics of scored samples: accuracy, pass@k (n > 1), per-problem means, parse failures."""
    if not records:
        return {"accuracy": None, "pass@k": {}, "mean_score_per_problem": None, "parse_failure_rate": None}
    problems = per_problem(records)
    metrics: dict[str, Any] = {
        "accuracy": sum(float(r["score"]) for r in records) / len(records),
        "mean_score_per_problem": sum(p["mean_score"] for p in problems) / len(problems),
        "parse_failure_rate": sum(bool(r.get("parse_failed")) for r in records) / len(records),
        "pass@k": {},
    }
    for k in ks_for(n):
        eligible = [p for p in problems if p["samples"] >= k]
        if eligible:
            metrics["pass@k"][str(k)] = sum(pass_at_k(p["samples"], p["correct"], k) for p in eligible) / len(eligible)
    if n > 1:
        metrics["majority_vote_accuracy"] = sum(p["majority_score"] for p in problems) / len(problems)
        metrics["best_of_n_accuracy"] = sum(p["max_score"] for p in problems) / len(problems)
    return metrics
