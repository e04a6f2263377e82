"""Metrics: what a run's scores add up to, which ones a config asks for, and their intervals."""

from skyeval.metrics.accumulator import (
    CORRECT,
    AnswerVote,
    MetricsAccumulator,
    exact_pass_at_k,
    majority_answer,
    pass_at_k,
    per_problem,
    summarize,
)
from skyeval.metrics.specs import MetricSpec, ks_for, parse_metrics

__all__ = ["CORRECT", "AnswerVote", "MetricSpec", "MetricsAccumulator", "exact_pass_at_k", "ks_for", "majority_answer",
           "parse_metrics", "pass_at_k", "per_problem", "summarize"]
