"""Aggregate metrics as a streaming, mergeable accumulator (DESIGN.md, house style 10).

`MetricsAccumulator` takes score and failure records one at a time. A problem's samples
are held only until its n outcomes are in; then the problem is folded into running sums
and dropped, so memory is O(problems in flight), never O(samples). Sums are exact
(ints, Fractions, token histograms), so accumulators of shards merge into exactly the
numbers one accumulator would give. docs/metrics.md defines every number reported.

The one rule for failures: a failed or missing sample enters the headline numbers as a
scored sample with score 0 and no answer would; the `*_scored_only` numbers leave it out.
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any, Callable, Iterable, Iterator

from skyeval.errors import ConfigError, SkyevalError
from skyeval.metrics.intervals import (
    INTERVAL_METHOD,
    Exact,
    Moments,
    decode,
    encode,
    exact,
    interval,
)
from skyeval.metrics import turns
from skyeval.metrics.specs import MetricSpec, as_specs, parse_metrics

CORRECT = 1.0 - 1e-9  # a sample counts as correct for pass@k when its score reaches 1
STATE_VERSION = 2  # of `state()`: a state of another version is refused (MetricsStateError)


class MetricsStateError(SkyevalError, ValueError):
    """A metrics state this release cannot read (another `version`)."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    return float(exact_pass_at_k(n, c, k))


def exact_pass_at_k(n: int, c: int, k: int) -> Exact:
    """`pass_at_k` as an exact rational."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1
    return exact(1 - Fraction(comb(n - c, k), comb(n, k))) if c else 0


@dataclass(frozen=True)
class AnswerVote:
    """How a majority vote groups answers: `key` maps an extracted answer to a canonical
    key (answers with one key are one class), `equivalent(answer, other)` then merges
    classes whose representatives the grader calls equal. At most `max_classes` classes
    (the largest, then first seen) are compared pairwise, so a vote costs at most
    max_classes * (max_classes - 1) / 2 `equivalent` calls."""

    key: Callable[[str], str]
    equivalent: Callable[[str, str], bool]
    max_classes: int = 8


def majority_answer(records: list[dict[str, Any]], vote: AnswerVote | None = None) -> dict[str, Any] | None:
    """The first record of the largest class of extracted answers (ties: the class whose
    first answer comes first). Without `vote` the classes are identical strings."""
    answered = [r for r in records if r.get("extracted") is not None]
    if not answered:
        return None
    key = vote.key if vote else str
    classes: dict[str, list[int]] = {}  # positions in `answered`; dicts keep first-seen order
    for i, record in enumerate(answered):
        classes.setdefault(key(record["extracted"]), []).append(i)
    groups = list(classes.values())
    if vote and len(groups) > 1:
        groups = _merge_equivalent(groups, [r["extracted"] for r in answered], vote)
    best = max(groups, key=lambda g: (len(g), -g[0]))
    return answered[best[0]]


def _merge_equivalent(groups: list[list[int]], answers: list[str], vote: AnswerVote) -> list[list[int]]:
    """Merge classes whose first answers are equivalent, comparing only the `max_classes`
    largest (ties: first seen); every class keeps its positions sorted."""
    ranked = sorted(groups, key=lambda g: (-len(g), g[0]))
    merged: list[list[int]] = []
    for group in ranked[: vote.max_classes]:
        for target in merged:
            if vote.equivalent(answers[group[0]], answers[target[0]]):
                target[:] = sorted(target + group)
                break
        else:
            merged.append(list(group))
    return merged + ranked[vote.max_classes :]


@dataclass
class Histogram:
    """Exact distribution of integer token counts (one key per distinct count, so at most
    max_tokens + 1 keys for completion tokens)."""

    counts: Counter = field(default_factory=Counter)

    def summary(self) -> dict[str, Any] | None:
        samples = sum(self.counts.values())
        if not samples:
            return None
        total = sum(v * c for v, c in self.counts.items())
        return {"samples": samples, "total": total, "mean": total / samples,
                "p50": self.percentile(0.5), "p95": self.percentile(0.95), "max": max(self.counts)}

    def percentile(self, q: float) -> int:
        """Nearest rank: the smallest value with at least ceil(q * samples) samples at or below it."""
        rank, seen = math.ceil(q * sum(self.counts.values())), 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if seen >= rank:
                return value
        raise AssertionError("unreachable")


class MetricsAccumulator:
    """Streaming, mergeable metrics of one run with `n` requested samples per problem.

    `max_tokens` enables the budget curve; `extra_scores` names numeric score columns
    reported under `scorers`; `metrics` is the user's selection (see `parse_metrics`),
    else pass@k at `ks` (default `ks_for(n)`). With `per_problem=False` no per-problem
    rows are kept for `drain_problems` (for consumers that only want the summary).
    `vote` groups equivalent answers for the majority vote (the env's `vote`, e.g. math's
    equivalence); without it identical strings vote together. It is not part of `state()`.
    `unit_metrics` ({name: score column}) adds metrics over units smaller than a sample
    (IFEval's instructions): a column counts the units a sample passed, `note_units` says
    how many units each sample of a problem has, and the metric is passed / requested units
    (a failed or missing sample passes none of its units).
    """

    def __init__(self, n: int, *, ks: list[int] | None = None, max_tokens: int | None = None,
                 extra_scores: Iterable[str] = (), metrics: list[MetricSpec | dict] | None = None,
                 per_problem: bool = True, vote: AnswerVote | None = None,
                 unit_metrics: dict[str, str] | None = None) -> None:
        if n < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        specs = as_specs(metrics)
        self.n, self.ks, self.max_tokens = n, list(ks) if ks else None, max_tokens
        self.extra_scores, self.per_problem, self.vote = list(extra_scores), per_problem, vote
        self.unit_metrics = dict(unit_metrics or {})
        self.metrics = None if specs is None else [s.asdict() for s in specs]  # as asked (plain data: state())
        self.specs = parse_metrics(specs, n, self.ks)
        self.budgets = sorted({b for b in (max_tokens // 8, max_tokens // 4, max_tokens // 2, max_tokens) if b >= 1}) \
            if max_tokens else []
        self._open: dict[str, dict[int, tuple[float | None, Any]]] = {}  # id -> sample_idx -> (score, answer)
        self._rows: list[dict[str, Any]] = []  # per-problem rows not yet drained
        # per problem (folded when complete)
        self.problems = self.scored = self.failed = self.missing = 0
        self.score_total: Exact = 0
        self.headline: dict[str, Moments] = {name: Moments() for name in self._headline_names()}
        self.scored_only: dict[str, Moments] = {name: Moments() for name in self._scored_only_names()}
        # per sample (folded on arrival)
        self.parse_failed = self.finish_known = self.truncated = self.finished = self.without_tokens = 0
        self.finished_score: Exact = 0
        self.completion, self.reasoning = Histogram(), Histogram()
        self.prompt_tokens = self.prompt_samples = self.estimated_samples = 0
        self.budget_score: dict[int, Exact] = {b: 0 for b in self.budgets}
        self.budget_finished: dict[int, int] = {b: 0 for b in self.budgets}
        self.extra_total: dict[str, Exact] = {name: 0 for name in self.extra_scores}
        self.extra_samples: dict[str, int] = {name: 0 for name in self.extra_scores}
        self.grading: Counter = Counter()  # code scorers' `grading` (isolated | in_process) per sample
        self.passed_by_tolerance = 0  # samples that passed only by a tolerance (code: floats; math: approximate rule)
        self.tolerance_known = 0  # samples whose scorer says whether a tolerance passed them
        self.graded_by: Counter = Counter()  # `graded_by` (rules | judge) per sample, when a grading mode is on
        self.verdicts: Counter = Counter()  # the rules' `verdict` (equal | different | undecided) per sample (math)
        self.turns: Counter = Counter()  # samples of a turn loop (tools, budget forcing): `skyeval.metrics.turns`
        # dated benchmarks: each problem's date (`note_date`) until it is folded, then its
        # accuracy into its month's sums
        self.dates: dict[str, str] = {}
        self.by_month: dict[str, Moments] = {}
        # unit metrics: each problem's units (`note_units`) until it is folded; units passed,
        # units of scored samples, units requested
        self.units: dict[str, dict[str, int]] = {}
        self.unit_sums: dict[str, list] = {name: [0, 0, 0] for name in self.unit_metrics}

    # -- names of per-problem values ---------------------------------------------------------
    def _headline_names(self) -> list[str]:
        majority = ["majority_vote_accuracy", "best_of_n_accuracy"] if self.n > 1 else []
        return ["accuracy", *(s.name(self.n) for s in self.specs), *majority]

    def _scored_only_names(self) -> list[str]:
        majority = ["majority_vote_accuracy", "best_of_n_accuracy"] if self.n > 1 else []
        return [*(s.name(self.n) for s in self.specs if s.type == "pass"), *majority]

    def samples_per_problem(self, name: str) -> int:
        """Independent samples one problem's value of headline `name` can stand for (its
        interval's bound on the effective sample size): n for accuracy, M for avg@M, M // k
        for pass@k of M samples; 1 for a value decided once per problem (majority, best-of-n, maj@k)."""
        if name == "accuracy":
            return self.n
        spec = next((s for s in self.specs if s.name(self.n) == name), None)
        if spec is None or spec.type == "maj":
            return 1
        return spec.n_samples if spec.type == "avg" else spec.n_samples // spec.k

    @property
    def held(self) -> int:
        """Samples held in memory (those of problems whose n outcomes are not all in)."""
        return sum(len(s) for s in self._open.values())

    # -- input -------------------------------------------------------------------------------
    def add_score(self, record: dict[str, Any]) -> None:
        """A scored sample: `id`, `sample_idx`, `score` (0..1), `extracted`, `parse_failed`,
        optionally `finish_reason`, `usage` and the `extra_scores` columns."""
        if not self._in_run(record):
            return
        score = float(record["score"])
        if not 0 <= score <= 1:
            raise ValueError(f"score of {record['id']}#{record['sample_idx']} is {score}, not in [0, 1]")
        units = self.units.get(str(record["id"]))
        for name, column in self.unit_metrics.items():
            if units is not None and name in units:
                self.unit_sums[name][0] += exact(float(record.get(column) or 0))
                self.unit_sums[name][1] += units[name]
        self._add(str(record["id"]), int(record["sample_idx"]), (score, record.get("extracted")))  # may fold it
        self.parse_failed += bool(record.get("parse_failed"))
        if record.get("grading") is not None:
            self.grading[str(record["grading"])] += 1
        self.passed_by_tolerance += bool(record.get("passed_by_tolerance"))
        self.tolerance_known += "passed_by_tolerance" in record
        if record.get("graded_by") is not None:
            self.graded_by[str(record["graded_by"])] += 1
        verdict = record.get("rule_verdict", record.get("verdict"))
        if verdict is not None:
            self.verdicts[str(verdict)] += 1
        self.turns.update(turns.counts(record))
        self._add_generation_stats(record, score)
        for name in self.extra_scores:
            value = record.get(name)
            if value is not None:
                self.extra_total[name] += exact(float(value))
                self.extra_samples[name] += 1

    def note_units(self, pid: str, units: dict[str, int]) -> None:
        """How many units of each unit metric a sample of this problem has (IFEval: 1 prompt,
        its instructions), before its samples come in."""
        if self.unit_metrics and units:
            self.units[str(pid)] = {name: int(units[name]) for name in self.unit_metrics if name in units}

    def note_date(self, pid: str, date: str | None) -> None:
        """The date (`YYYY-MM` or `YYYY-MM-DD`) of a problem whose samples are to come (or
        are open): its per-problem row carries it and its accuracy counts in `by_month`."""
        if date is not None:
            self.dates[str(pid)] = str(date)

    def add_failure(self, record: dict[str, Any]) -> None:
        """A failed sample (load, template, generate or score stage): `id`, `sample_idx`."""
        if self._in_run(record):
            self._add(str(record["id"]), int(record["sample_idx"]), (None, None))

    def _in_run(self, record: dict[str, Any]) -> bool:
        """Samples beyond the requested n (left over from a run with a larger n) are not counted."""
        return 0 <= int(record["sample_idx"]) < self.n

    def _add_generation_stats(self, record: dict[str, Any], score: float) -> None:
        reason = record.get("finish_reason")
        usage = record.get("usage") or {}
        completion = usage.get("completion_tokens")
        if reason is not None:
            self.finish_known += 1
            self.truncated += reason == "length" or record.get("reasoning_state") == "unclosed"
            if reason == "stop":
                self.finished += 1
                self.finished_score += exact(score)
        if completion is None or reason is None:
            self.without_tokens += 1
        if completion is not None and reason == "stop":
            for b in self.budgets:
                if int(completion) <= b:
                    self.budget_score[b] += exact(score)
                    self.budget_finished[b] += 1
        self._add_tokens(usage)

    def add_usage(self, record: dict[str, Any]) -> None:
        """The token counts (`usage`) of a sample generated but not scored here (the
        `generate` stage): `tokens_summary` counts them, nothing else does."""
        if self._in_run(record):
            self._add_tokens(record.get("usage") or {})

    def _add_tokens(self, usage: dict[str, Any]) -> None:
        if usage.get("completion_tokens") is not None:
            self.completion.counts[int(usage["completion_tokens"])] += 1
        if usage.get("reasoning_tokens") is not None:
            self.reasoning.counts[int(usage["reasoning_tokens"])] += 1
        if usage.get("prompt_tokens") is not None:
            self.prompt_tokens += int(usage["prompt_tokens"])
            self.prompt_samples += 1
        self.estimated_samples += bool(usage.get("estimated"))

    def _add(self, pid: str, idx: int, outcome: tuple[float | None, Any]) -> None:
        samples = self._open.setdefault(pid, {})
        if idx in samples:
            raise ValueError(f"sample {pid}#{idx} was added twice")
        samples[idx] = outcome
        if len(samples) == self.n:
            self._fold(pid, self._open.pop(pid))

    # -- folding a problem -------------------------------------------------------------------
    def _fold(self, pid: str, samples: dict[int, tuple[float | None, Any]]) -> None:
        """Fold one problem's outcomes into the running sums; missing samples count as failed."""
        n = self.n
        ordered = [(i, *samples[i]) for i in sorted(samples)]
        scored = [(i, s, a) for i, s, a in ordered if s is not None]
        correct = [i for i, s, _ in scored if s >= CORRECT]
        total = sum(exact(s) for _, s, _ in scored)
        self.problems += 1
        self.scored += len(scored)
        self.failed += len(samples) - len(scored)
        self.missing += n - len(samples)
        self.score_total += total
        self.headline["accuracy"].add(exact(Fraction(total, n)))
        for spec in self.specs:
            name = spec.name(n)
            self.headline[name].add(self._spec_value(spec, scored, correct))
            if spec.type == "pass":
                available = sum(i < spec.n_samples for i, _, _ in scored)
                if available >= spec.k:
                    hits = sum(i < spec.n_samples for i in correct)
                    self.scored_only[name].add(exact_pass_at_k(available, hits, spec.k))
        majority = _majority(scored, self.vote)
        if n > 1:
            best = max((s for _, s, _ in scored), default=0.0)
            self.headline["majority_vote_accuracy"].add(exact(majority[1]))
            self.headline["best_of_n_accuracy"].add(exact(best))
            if scored:
                self.scored_only["majority_vote_accuracy"].add(exact(majority[1]))
                self.scored_only["best_of_n_accuracy"].add(exact(best))
        units = self.units.pop(pid, None)
        for name, count in (units or {}).items():
            self.unit_sums[name][2] += count * n
        date = self.dates.pop(pid, None)
        if date is not None:
            self.by_month.setdefault(date[:7], Moments()).add(exact(Fraction(total, n)))
        if self.per_problem:
            self._rows.append({
                "id": pid, "samples": len(scored), "correct": len(correct),
                "mean_score": float(Fraction(total, len(scored))) if scored else None,
                "max_score": max(s for _, s, _ in scored) if scored else None,
                "majority_answer": majority[0], "majority_score": majority[1],
                "failed": len(samples) - len(scored), "missing": n - len(samples),
                **({"date": date} if date is not None else {}),
            })

    def _spec_value(self, spec: MetricSpec, scored: list, correct: list[int]) -> Exact:
        first = [(i, s, a) for i, s, a in scored if i < spec.n_samples]
        if spec.type == "pass":
            return exact_pass_at_k(spec.n_samples, sum(i < spec.n_samples for i in correct), spec.k)
        if spec.type == "maj":
            return exact(_majority(first, self.vote)[1])
        return exact(Fraction(sum(exact(s) for _, s, _ in first), spec.n_samples))

    # -- merging and state -------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        return {"n": self.n, "ks": self.ks, "max_tokens": self.max_tokens,
                "extra_scores": self.extra_scores, "metrics": self.metrics,
                **({"unit_metrics": self.unit_metrics} if self.unit_metrics else {})}

    def merge(self, other: MetricsAccumulator) -> None:
        """Add `other`'s samples (e.g. another shard's); both must be set up alike."""
        if other._config() != self._config():
            raise ValueError(f"cannot merge metrics of different setups: {self._config()} vs {other._config()}")
        for name in ("problems", "scored", "failed", "missing", "score_total", "parse_failed", "finish_known",
                     "truncated", "finished", "without_tokens", "finished_score", "prompt_tokens", "prompt_samples", "estimated_samples"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.headline, other.headline), (self.scored_only, other.scored_only)):
            for name, moments in theirs.items():
                mine[name].merge(moments)
        self.completion.counts.update(other.completion.counts)
        self.reasoning.counts.update(other.reasoning.counts)
        self.grading.update(other.grading)
        self.passed_by_tolerance += other.passed_by_tolerance
        self.tolerance_known += other.tolerance_known
        self.graded_by.update(other.graded_by)
        self.verdicts.update(other.verdicts)
        self.turns.update(other.turns)
        for mine, theirs in ((self.budget_score, other.budget_score), (self.budget_finished, other.budget_finished),
                             (self.extra_total, other.extra_total), (self.extra_samples, other.extra_samples)):
            for key, value in theirs.items():
                mine[key] += value
        if self.per_problem:
            self._rows.extend(other._rows)
        for month, moments in other.by_month.items():
            self.by_month.setdefault(month, Moments()).merge(moments)
        self.dates.update(other.dates)
        for name, sums in other.unit_sums.items():
            self.unit_sums[name] = [a + b for a, b in zip(self.unit_sums[name], sums)]
        self.units.update(other.units)
        for pid, samples in other._open.items():
            for idx, outcome in samples.items():
                self._add(pid, idx, outcome)

    def state(self) -> dict[str, Any]:
        """Everything needed to resume or merge, as plain JSON (exact numbers as ints or "p/q")."""
        return {
            "version": STATE_VERSION, "config": self._config(),
            "counts": [self.problems, self.scored, self.failed, self.missing, self.parse_failed, self.finish_known,
                       self.truncated, self.finished, self.without_tokens, self.prompt_tokens, self.prompt_samples,
                       self.estimated_samples],
            "score_total": encode(self.score_total), "finished_score": encode(self.finished_score),
            "headline": {k: m.to_state() for k, m in self.headline.items()},
            "scored_only": {k: m.to_state() for k, m in self.scored_only.items()},
            "completion_tokens": {str(k): v for k, v in self.completion.counts.items()},
            "reasoning_tokens": {str(k): v for k, v in self.reasoning.counts.items()},
            "budget": [[b, encode(self.budget_score[b]), self.budget_finished[b]] for b in self.budgets],
            "extra": {k: [encode(self.extra_total[k]), self.extra_samples[k]] for k in self.extra_scores},
            "open": {pid: [[i, s, a] for i, (s, a) in sorted(samples.items())] for pid, samples in self._open.items()},
            "rows": self._rows,
            "grading": dict(self.grading),
            "passed_by_tolerance": self.passed_by_tolerance,
            "tolerance_known": self.tolerance_known,
            "graded_by": dict(self.graded_by),
            "verdicts": dict(self.verdicts),
            "turns": dict(self.turns),
            "by_month": {month: m.to_state() for month, m in sorted(self.by_month.items())},
            "dates": dict(self.dates),
            **({"units": dict(self.units), "unit_sums": {k: [encode(v[0]), v[1], v[2]] for k, v in self.unit_sums.items()}}
               if self.unit_metrics else {}),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> MetricsAccumulator:
        if state.get("version") != STATE_VERSION:
            raise MetricsStateError(f"its metrics state is version {state.get('version')!r}, written by another "
                                    f"skyeval release (this one reads version {STATE_VERSION}): run it again "
                                    "with this release")
        acc = cls(**state["config"])
        (acc.problems, acc.scored, acc.failed, acc.missing, acc.parse_failed, acc.finish_known, acc.truncated,
         acc.finished, acc.without_tokens, acc.prompt_tokens, acc.prompt_samples, acc.estimated_samples) = state["counts"]
        acc.score_total, acc.finished_score = decode(state["score_total"]), decode(state["finished_score"])
        acc.headline = {k: Moments.from_state(v) for k, v in state["headline"].items()}
        acc.scored_only = {k: Moments.from_state(v) for k, v in state["scored_only"].items()}
        acc.completion.counts = Counter({int(k): v for k, v in state["completion_tokens"].items()})
        acc.reasoning.counts = Counter({int(k): v for k, v in state["reasoning_tokens"].items()})
        for b, score, finished in state["budget"]:
            acc.budget_score[b], acc.budget_finished[b] = decode(score), finished
        for k, (total, samples) in state["extra"].items():
            acc.extra_total[k], acc.extra_samples[k] = decode(total), samples
        acc._open = {pid: {i: (s, a) for i, s, a in samples} for pid, samples in state["open"].items()}
        acc._rows = list(state["rows"])
        acc.grading = Counter(state.get("grading") or {})
        acc.passed_by_tolerance = state.get("passed_by_tolerance", 0)
        acc.tolerance_known = state.get("tolerance_known", 0)
        acc.graded_by = Counter(state.get("graded_by") or {})
        acc.verdicts = Counter(state.get("verdicts") or {})
        acc.turns = Counter(state.get("turns") or {})
        acc.by_month = {month: Moments.from_state(m) for month, m in (state.get("by_month") or {}).items()}
        acc.dates = dict(state.get("dates") or {})
        acc.units = dict(state.get("units") or {})
        for name, (passed, scored_units, requested) in (state.get("unit_sums") or {}).items():
            acc.unit_sums[name] = [decode(passed), scored_units, requested]
        return acc

    def grading_summary(self) -> dict[str, Any]:
        """summary.json `scoring.grading`: the share of scored samples graded each way
        (code envs: `isolated` or `in_process`, docs/sandbox.md), and `scoring.passed_by_tolerance`:
        how many passed only by a tolerance (code: the float rule; math: the approximate numeric
        rule or a precision the question states); `scoring.verdicts`: scored samples by the
        rules' verdict (math envs: `equal`, `different`, `undecided`). {} when no sample says any."""
        total = sum(self.grading.values())
        summary: dict[str, Any] = {}
        if total:
            summary["grading"] = {**{k: v / total for k, v in sorted(self.grading.items())}, "samples": total}
        if total or self.tolerance_known:
            summary["passed_by_tolerance"] = self.passed_by_tolerance
        if self.verdicts:
            summary["verdicts"] = {kind: self.verdicts.get(kind, 0) for kind in ("equal", "different", "undecided")}
            summary["verdicts"].update({k: v for k, v in self.verdicts.items() if k not in summary["verdicts"]})
        return summary

    def tools_summary(self) -> dict[str, Any]:
        """summary.json `tools` counts over the scored samples (`skyeval.metrics.turns`)."""
        return turns.summary(self.turns)

    # -- output ------------------------------------------------------------------------------
    def drain_problems(self, *, final: bool = False) -> Iterator[dict[str, Any]]:
        """Per-problem rows of problems completed since the last call. `final=True` first folds
        the problems still open (their missing samples count as failed): call it once, at the end."""
        if final:
            for pid in list(self._open):
                self._fold(pid, self._open.pop(pid))
        rows, self._rows = self._rows, []
        yield from rows

    def counts(self) -> dict[str, int]:
        """problems, samples (= problems x n), scored, failed and missing (never reported) samples."""
        done = self._closed()
        return {"problems": done.problems, "samples": done.problems * self.n, "scored": done.scored,
                "failed": done.failed, "missing": done.missing}

    def _closed(self) -> MetricsAccumulator:
        """Self, or a copy with the open problems folded (so that `summary` can be called any time)."""
        if not self._open:
            return self
        done = copy.copy(self)
        done.per_problem, done._rows = False, []
        done.headline = copy.deepcopy(self.headline)
        done.scored_only = copy.deepcopy(self.scored_only)
        done.by_month, done.dates = copy.deepcopy(self.by_month), dict(self.dates)
        done.units, done.unit_sums = dict(self.units), copy.deepcopy(self.unit_sums)
        done._open = {}
        for pid, samples in self._open.items():
            done._fold(pid, samples)
        return done

    def tokens_summary(self) -> dict[str, Any] | None:
        """`metrics.tokens` of summary.json: completion, reasoning and prompt token totals and
        distributions (None when no sample reported any)."""
        tokens = {"completion": self.completion.summary(), "reasoning": self.reasoning.summary(),
                  "prompt": {"samples": self.prompt_samples, "total": self.prompt_tokens} if self.prompt_samples
                  else None}
        if not any(tokens.values()):
            return None
        out = {k: v for k, v in tokens.items() if v is not None}
        if self.estimated_samples:  # shares of a total reported for several samples (docs/metrics.md)
            out["estimated_samples"] = self.estimated_samples
        return out

    def summary_for(self, stage: str) -> dict[str, Any]:
        """The `metrics` of summary.json after `stage`: `summary()`, or after `generate`
        (nothing scored) only the token totals."""
        if stage != "generate":
            return self.summary()
        tokens = self.tokens_summary()
        return {"tokens": tokens} if tokens else {}

    def summary(self) -> dict[str, Any]:
        """The `metrics` section of summary.json (docs/metrics.md defines each number)."""
        done = self._closed()
        requested = done.problems * self.n
        out: dict[str, Any] = {"accuracy": done.headline["accuracy"].mean()}
        for kind in ("pass", "maj", "avg"):
            specs = [s for s in self.specs if s.type == kind]
            if specs or kind == "pass":
                out[{"pass": "pass@k", "maj": "maj@k", "avg": "avg@n"}[kind]] = {
                    s.key(self.n): done.headline[s.name(self.n)].mean() for s in specs}
        if self.n > 1:
            out["majority_vote_accuracy"] = done.headline["majority_vote_accuracy"].mean()
            out["best_of_n_accuracy"] = done.headline["best_of_n_accuracy"].mean()
        out["accuracy_scored_only"] = _ratio(done.score_total, done.scored)
        passes = [s for s in self.specs if s.type == "pass"]
        out["pass@k_scored_only"] = {s.key(self.n): done.scored_only[s.name(self.n)].mean() for s in passes}
        out["pass@k_scored_only_problems"] = {s.key(self.n): done.scored_only[s.name(self.n)].count for s in passes}
        if self.n > 1:
            for name in ("majority_vote_accuracy", "best_of_n_accuracy"):
                out[f"{name}_scored_only"] = done.scored_only[name].mean()
            out["scored_only_problems"] = done.scored_only["majority_vote_accuracy"].count
        out["accuracy_finished_only"] = _ratio(done.finished_score, done.finished)
        out["parse_failure_rate"] = _ratio(done.parse_failed, done.scored)
        out["truncated_rate"] = _ratio(done.truncated, done.finish_known)
        out["interval_method"] = INTERVAL_METHOD
        out["intervals"] = {}
        samples = {s.name(self.n): s.k if s.type == "maj" else s.n_samples for s in self.specs}  # each over its own n
        for name, moments in done.headline.items():
            found = interval(moments, self.samples_per_problem(name))
            if found is not None:
                out["intervals"][name] = {"value": found.value, "se": found.se, "ci95": [found.low, found.high],
                                          "n": samples.get(name, self.n), "problems": found.problems,
                                          "effective_samples": round(found.effective, 2)}
        tokens = done.tokens_summary()
        if tokens:
            out["tokens"] = tokens
        if self.budgets and done.scored and not done.without_tokens:
            out["budget_curve"] = {
                "estimate": f"from one run at max_tokens={self.max_tokens}: at budget b a sample counts as correct "
                            "only if it finished (finish_reason 'stop') within b completion tokens and was correct",
                "points": [{"max_tokens": b, "accuracy": _ratio(done.budget_score[b], requested),
                            "finished_rate": _ratio(done.budget_finished[b], requested)} for b in self.budgets],
            }
        if done.by_month:
            out["by_month"] = months_summary(done.by_month, self.n)
        for name, (passed, scored_units, requested) in done.unit_sums.items():
            out[name] = _ratio(passed, requested)
        if done.unit_sums:
            out["unit_metrics_scored_only"] = {name: _ratio(sums[0], sums[1]) for name, sums in done.unit_sums.items()}
        if self.extra_scores:
            out["scorers"] = {name: {"mean": _ratio(done.extra_total[name], requested),
                                     "mean_scored_only": _ratio(done.extra_total[name], done.extra_samples[name])}
                              for name in self.extra_scores}
        return out


def months_summary(by_month: dict[str, Moments], samples: int) -> dict[str, dict[str, Any]]:
    """summary.json `metrics.by_month`: per month (`YYYY-MM`, in order) the headline
    accuracy over its problems (of `samples` samples each), their number `n`, its interval
    `ci95` and `se` (absent for a month of one problem)."""
    out: dict[str, dict[str, Any]] = {}
    for month, moments in sorted(by_month.items()):
        found = interval(moments, samples)
        out[month] = {"accuracy": moments.mean(), "n": moments.count,
                      **({"se": found.se} if found.se is not None else {}), "ci95": [found.low, found.high]}
    return out


def _majority(scored: list[tuple[int, float, Any]], vote: AnswerVote | None) -> tuple[Any, float]:
    """(answer, score) of the majority vote over samples in index order; no answer scores 0."""
    winner = majority_answer([{"extracted": a, "score": s} for _, s, a in scored], vote)
    return (winner["extracted"], winner["score"]) if winner else (None, 0.0)


def _ratio(numerator: Exact, denominator: int) -> float | None:
    return float(Fraction(numerator) / denominator) if denominator else None


def summarize(scores: Iterable[dict[str, Any]], n: int, failures: Iterable[dict[str, Any]] = (),
              **options: Any) -> dict[str, Any]:
    """The `metrics` section for records held in lists (a notebook, a test): see MetricsAccumulator."""
    acc = MetricsAccumulator(n, per_problem=False, **options)
    for record in scores:
        acc.add_score(record)
    for record in failures:
        acc.add_failure(record)
    return acc.summary()


def per_problem(scores: Iterable[dict[str, Any]], n: int | None = None,
                failures: Iterable[dict[str, Any]] = (), vote: AnswerVote | None = None) -> list[dict[str, Any]]:
    """Per-problem rows for records held in lists; `n` defaults to the largest sample_idx + 1."""
    scores, failures = list(scores), list(failures)
    acc = MetricsAccumulator(n or 1 + max((r["sample_idx"] for r in scores + failures), default=0), vote=vote)
    for record in scores:
        acc.add_score(record)
    for record in failures:
        acc.add_failure(record)
    return list(acc.drain_problems(final=True))
